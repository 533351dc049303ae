"""Elementwise operators as JAX's tests/lax_numpy_operators_test.py pins them
down (issue 29): order comparisons of complex numbers, lcm's wrapping, the
inverse hyperbolic functions of bfloat16. Compared with JAX 0.10.2 on both
backends."""

from __future__ import annotations

import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from tests.helpers.parity import assert_same_as_jax

_Z = np.array([1 + 2j, 1 + 0j, 2 + 0j, -1 - 1j, 3j, np.nan + 1j, 1 + 0j], np.complex64)
_W = np.array([1 + 1j, 2 + 0j, 1 + 5j, -1 - 1j, 0j, 1 + 0j, 1 + np.nan * 1j], np.complex64)


@pytest.mark.parametrize("name", ["less", "less_equal", "greater", "greater_equal"])
def test_complex_order_comparisons(backend, name):
    # real parts first, imaginary parts where the real parts are equal
    want = getattr(jnp, name)(_Z, _W)
    got = getattr(rnp, name)(_Z, _W)
    assert got.dtype == want.dtype == np.bool_
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    got_jit = ri.jit(getattr(rnp, name))(_Z, _W)
    np.testing.assert_array_equal(np.asarray(got_jit), np.asarray(want))


@pytest.mark.parametrize("other", [np.array([1, 2, 0, -1, 0, 1, 1], np.int8), np.float32(1.0), 2])
def test_complex_comparisons_with_promotion_and_operators(backend, other):
    for name, op in [("greater", "__gt__"), ("less_equal", "__le__")]:
        want = getattr(jnp, name)(_Z, other)
        np.testing.assert_array_equal(np.asarray(getattr(rnp, name)(_Z, other)), np.asarray(want))
        got_op = getattr(rnp.asarray(_Z), op)(other)
        np.testing.assert_array_equal(
            np.asarray(got_op), np.asarray(getattr(jnp.asarray(_Z), op)(other))
        )


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.uint8, np.uint16, np.uint32])
def test_lcm_wraps_as_jax(backend, dtype, rng):
    signed = np.issubdtype(dtype, np.signedinteger)
    x = rng.integers(-120 if signed else 0, 120, 64).astype(dtype)
    y = rng.integers(-120 if signed else 0, 120, 64).astype(dtype)
    x[:3], y[:3] = np.array([60, 0, 100]).astype(dtype), np.array([7, 5, 3]).astype(dtype)
    want = jnp.lcm(x, y)
    got = rnp.lcm(x, y)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("name", ["arcsinh", "asinh", "arccosh", "acosh"])
def test_inverse_hyperbolic_of_bfloat16(backend, name):
    x = np.array([1.0, 1.5, 3.0, 1e30], ml_dtypes.bfloat16)
    want = getattr(jnp, name)(x)
    got = getattr(rnp, name)(x)
    assert got.dtype == want.dtype == ml_dtypes.bfloat16
    np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32), rtol=1e-2)


# --- setxor1d with NaN (lax_numpy_test's set functions) -----------------------------------

_N = np.nan


@pytest.mark.parametrize(
    "a, b",
    [
        ([1.0, _N, _N, 2.0], [_N, 3.0, 1.0]),
        ([1.0, _N, 2.0], [3.0, 1.0]),
        ([1.0, 2.0], [3.0, _N]),
        ([_N], [_N]),
        ([-5.0, -1.0], [-1.0, _N]),
        ([1.0, 2.0], [3.0, 1.0]),
    ],
)
@pytest.mark.parametrize("kwargs", [{}, {"size": 5}, {"size": 2}, {"size": 5, "fill_value": -1.0}])
def test_setxor1d_keeps_each_arrays_nan(backend, a, b, kwargs):
    # NaN is in neither set's other: each array holding NaN gives one NaN
    a, b = np.array(a, np.float32), np.array(b, np.float32)
    want = np.asarray(jnp.setxor1d(a, b, **kwargs))
    got = np.asarray(rnp.setxor1d(a, b, **kwargs))
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    if "size" in kwargs:
        jitted = ri.jit(lambda x, y: rnp.setxor1d(x, y, **kwargs))(a, b)
        np.testing.assert_array_equal(np.asarray(jitted), want)


# --- operators with Python containers (testOperatorOverloadErrors) ------------------------

_OPERATORS = [
    "__add__", "__sub__", "__mul__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__",
    "__ge__", "__pow__", "__mod__", "__floordiv__", "__truediv__", "__lshift__", "__rshift__",
    "__radd__", "__rsub__", "__rmul__", "__rpow__", "__rmod__", "__rfloordiv__",
    "__rtruediv__", "__rlshift__", "__rrshift__",
]  # fmt: skip


@pytest.mark.parametrize("container", [dict, list, tuple, set])
@pytest.mark.parametrize("name", _OPERATORS)
def test_operator_with_a_container_as_jax(name, container):
    # == and != refuse all four, + and * lists and tuples (concatenation,
    # repetition); the rest return NotImplemented for Python to decide
    data = [(1, 2), (2, 3)]

    def outcome(module):
        try:
            return getattr(module.array(data), name)(container(data))
        except TypeError as e:
            return type(e)

    want, got = outcome(jnp), outcome(rnp)
    assert got is want or (want is NotImplemented and got is NotImplemented)


def test_operator_named_tuple_subclass_still_defers():
    from typing import NamedTuple

    class Wrapped(NamedTuple):
        value: object

        def __radd__(self, other):
            return "deferred"

        def __eq__(self, other):
            return "deferred"

    assert rnp.ones(2) + Wrapped(1) == "deferred"
    assert (rnp.ones(2) == Wrapped(1)) == "deferred"


# --- float_power keeps the promoted dtype ---------------------------------------------------


@pytest.mark.parametrize(
    "x",
    [np.float16([2, 3]), np.array([1.5, 2], ml_dtypes.bfloat16), np.float32(2), np.int8(2), 2.5],
)
@pytest.mark.parametrize("y", [3, 1.5, np.float16(0.5), np.int32(2)])
def test_float_power_does_not_widen(backend, x, y):
    # JAX's float_power is pow of the inexact promotion (NumPy's widens to float64)
    want, got = jnp.float_power(x, y), rnp.float_power(x, y)
    assert got.dtype == want.dtype and got.aval.weak_type == want.aval.weak_type
    np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32), rtol=1e-3)


@pytest.mark.parametrize("name", ["signbit", "unwrap"])
def test_complex_input_refused_with_jax_class(name):
    z = np.array([1 + 1j, -2j], np.complex64)
    with pytest.raises(ValueError):
        getattr(jnp, name)(z)
    with pytest.raises(ValueError, match=name):
        getattr(rnp, name)(z)


@pytest.mark.parametrize("name", ["gcd", "lcm"])
@pytest.mark.parametrize(
    "x, y",
    [
        (np.array([True, False, True]), 6),  # promoted to int32 first, then checked
        (6, 4),  # Python ints: a weak result
        (0, 0),
        (np.array([4, 6, -9], np.int8), np.array([4, 6, 9], np.uint8)),
        (np.array([True, False]), np.array([True, True])),  # bool after promotion: refused
        (np.float32(2), 3),
    ],
)
def test_gcd_lcm_promote_then_check(backend, name, x, y):
    def outcome(module):
        try:
            return getattr(module, name)(x, y)
        except ValueError:
            return ValueError

    want, got = outcome(jnp), outcome(rnp)
    if want is ValueError:
        assert got is ValueError
        return
    assert got.dtype == want.dtype and got.aval.weak_type == want.aval.weak_type
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("kwargs", [{"to_begin": [1]}, {"to_end": [1, 2]}])
def test_ediff1d_refuses_lists_as_jax(kwargs):
    with pytest.raises(TypeError):
        jnp.ediff1d(jnp.ones(3), **kwargs)
    with pytest.raises(TypeError, match="ediff1d"):
        rnp.ediff1d(rnp.ones(3), **kwargs)
    arrays = {k: np.asarray(v, np.float32) for k, v in kwargs.items()}
    np.testing.assert_array_equal(
        np.asarray(rnp.ediff1d(rnp.arange(4.0), **arrays)),
        np.asarray(jnp.ediff1d(jnp.arange(4.0), **arrays)),
    )


@pytest.mark.parametrize(
    "x", [np.float32(1.7), np.float32(-2.5), np.array([2.5, -1.5], np.float16), np.int8(7)]
)
def test_builtin_round_without_ndigits_is_an_integer(backend, x):
    # round(x) of a float is an int in Python; JAX's Array.__round__ gives the default int
    want, got = round(jnp.asarray(x)), round(rnp.asarray(x))
    assert got.dtype == want.dtype and got.aval.weak_type == want.aval.weak_type
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    with_digits = round(rnp.asarray(x), 1)
    assert with_digits.dtype == round(jnp.asarray(x), 1).dtype


# --- weak types of constants: JAX's lax._const is weak only for a weak scalar ---------------


@pytest.mark.parametrize("name", ["logical_and", "logical_or", "logical_xor"])
@pytest.mark.parametrize(
    "x, y",
    [
        (np.array([[1, 0, 3], [0, 2, 0]], np.int8), 2.0),  # a weak float array: strong bool
        (2.5, np.array([0, 7, 1], np.uint32)),
        (np.array([0, 3], np.int8), 0j),
        (np.int8(1), 2.0),  # a weak scalar: weak bool
        (np.array([True, False]), 1.5),
        (0.0, 2.0),
    ],
)
def test_logical_ops_of_weak_floats(backend, name, x, y):
    want = getattr(jnp, name)(x, y)
    for fn in (getattr(rnp, name), ri.jit(getattr(rnp, name))):
        assert_same_as_jax(fn(x, y), want, rtol=0)


@pytest.mark.parametrize(
    "x1, x2",
    [
        (1.5, np.array([0.5, 2, 3, 4], np.int8)),  # weak x1 and weak x2: weak
        (0.0, 0.5),
        (-2.0, np.float16(0.5)),
        (np.float32(1), 0.5),
        (np.array([np.nan, -1, 0, 2], np.float32), 0.5),
        (np.array([-1, 0, 2], np.int8), 0.25),
    ],
)
def test_heaviside_weak_type(backend, x1, x2):
    want = jnp.heaviside(x1, x2)
    for fn in (rnp.heaviside, ri.jit(rnp.heaviside)):
        assert_same_as_jax(fn(x1, x2), want, rtol=0)


@pytest.mark.parametrize(
    "a, b", [((0,), (0,)), ((0,), (3,)), ((2, 0), (3, 1)), ((), (0,)), ((3, 0), (0, 2))]
)
def test_kron_of_empty_arrays(backend, a, b):
    x = np.arange(np.prod(a), dtype=np.float32).reshape(a)
    y = np.arange(np.prod(b), dtype=np.float32).reshape(b)
    want = jnp.kron(x, y)
    got = rnp.kron(x, y)
    assert got.shape == want.shape and got.dtype == want.dtype


@pytest.mark.parametrize(
    "x",
    [1.5, 0.0, -0.0, 3, np.float32(0), np.array([0, 1e-45, -3, np.inf], np.float32),
     np.array([0, -1], np.float16), np.array([0, 1, -2], ml_dtypes.bfloat16)],
)  # fmt: skip
def test_spacing_of_a_python_float_is_strong(backend, x):
    # finfo's smallest subnormal is a NumPy scalar in JAX's formula: the result is strong
    want = jnp.spacing(x)
    for fn in (rnp.spacing, ri.jit(rnp.spacing)):
        assert_same_as_jax(fn(x), want, rtol=0)


@pytest.mark.parametrize("name", ["hypot", "fmod"])
@pytest.mark.parametrize(
    "x1, x2",
    [
        (3, 2),  # two Python scalars: weak (JAX's lax._ones keeps the weak type)
        (3.0, 4),
        (7, 0),
        (np.inf, 1.0),
        (np.array([3, 0, -2], np.int8), 2.0),
        (np.array([0.0, np.inf, 3], np.float32), 0.0),
        (np.float16(3), np.float16(0)),
        (np.array([5, 0], np.int8), np.array([0, 2], np.int8)),
    ],
)
def test_hypot_fmod_of_python_scalars_are_weak(backend, name, x1, x2):
    want = getattr(jnp, name)(x1, x2)
    for fn in (getattr(rnp, name), ri.jit(getattr(rnp, name))):
        assert_same_as_jax(fn(x1, x2), want, rtol=0)
