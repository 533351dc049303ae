"""jax.numpy functions as JAX's tests/lax_numpy_test.py exercises them: unwrap's
integer dtype, polyfit's full/cov results and lstsq's residuals, polyder's
float result, compress's bound checks, permute_dims and Array.transpose's
argument forms, the error classes of hypot and pad, and pad's weak type.
Compared with JAX 0.10.2 on both backends."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl.numpy as rnp
from refimpl import errors as ri_errors
from refimpl import jit as ri_jit
from tests.helpers.parity import assert_same_as_jax

_RNG = np.random.RandomState(7)


_same = functools.partial(assert_same_as_jax, rtol=1e-5, atol=1e-6)


# --- unwrap ----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.float32])
@pytest.mark.parametrize("period", [2, 4, 2 * np.pi])
@pytest.mark.parametrize("discont", [None, np.pi])
def test_unwrap_keeps_the_joined_dtype(backend, dtype, period, discont):
    x = _RNG.randint(-5, 5, (3, 6)).astype(dtype)
    kwargs = dict(axis=1, period=period, discont=discont)
    _same(rnp.unwrap(x, **kwargs), jnp.unwrap(x, **kwargs))


def test_unwrap_empty_axis_and_rank_zero(backend):
    x = np.zeros((2, 0), np.int32)
    _same(rnp.unwrap(x, axis=1), jnp.unwrap(x, axis=1))
    with pytest.raises(IndexError):
        jnp.unwrap(np.float32(1.0))
    with pytest.raises(IndexError):
        rnp.unwrap(np.float32(1.0))


# --- polyfit and lstsq -----------------------------------------------------------------------

_X = np.linspace(0.0, 1.0, 7).astype(np.float32)
_Y = (_X**2 - 0.5 * _X + 1).astype(np.float32)


@pytest.mark.parametrize("deg", [1, 2])
@pytest.mark.parametrize("cov", [True, "unscaled"])
@pytest.mark.parametrize("two_rhs", [False, True])
def test_polyfit_covariance(backend, deg, cov, two_rhs):
    y = np.stack([_Y, _Y + _X], axis=1) if two_rhs else _Y
    w = np.abs(_X) + 1
    got = rnp.polyfit(_X, y, deg, w=w, cov=cov)
    _same(got, jnp.polyfit(_X, y, deg, w=w, cov=cov), rtol=2e-3, atol=1e-5)


@pytest.mark.parametrize("deg", [1, 3])
def test_polyfit_full(backend, deg):
    got = rnp.polyfit(_X, _Y, deg, full=True)
    want = jnp.polyfit(_X, _Y, deg, full=True)
    # the residual of an exact fit is rounding noise: compared loosely
    _same(got[0], want[0], rtol=2e-3, atol=1e-4)
    _same(got[1], want[1], rtol=1.0, atol=1e-3)
    _same(got[2:], want[2:], rtol=1e-4)


def test_polyfit_argument_checks():
    for args in [(_X[:, None], _Y, 1), (_X, _Y[:3], 1), (np.zeros(0), np.zeros(0), 1)]:
        with pytest.raises(TypeError):
            jnp.polyfit(*args)
        with pytest.raises(TypeError, match="polyfit"):
            rnp.polyfit(*args)
    with pytest.raises(ValueError):
        jnp.polyfit(_X[:2], _Y[:2], 2, cov=True)
    with pytest.raises(ValueError, match="polyfit"):
        rnp.polyfit(_X[:2], _Y[:2], 2, cov=True)


@pytest.mark.parametrize(
    "shape, rhs, rank_deficient",
    [((6, 3), (6,), False), ((6, 3), (6, 2), True), ((3, 6), (3,), False)],
)
@pytest.mark.parametrize("rcond", [None, -1])
def test_lstsq_residuals_always_computed(backend, shape, rhs, rank_deficient, rcond):
    a = _RNG.uniform(-1, 1, shape).astype(np.float32)
    if rank_deficient:
        a[:, 2] = a[:, 1]
    b = _RNG.uniform(-1, 1, rhs).astype(np.float32)
    got = rnp.linalg.lstsq(a, b, rcond=rcond)
    want = jnp.linalg.lstsq(a, b, rcond=rcond)
    _same(got, want, rtol=1e-3, atol=1e-5)


# --- polyder, compress, permute_dims, transpose ----------------------------------------------


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.float32])
@pytest.mark.parametrize("m", [0, 1, 3])
def test_polyder_is_inexact(backend, dtype, m):
    p = np.array([3, -1, 2, 5, 1], dtype)
    _same(rnp.polyder(p, m), jnp.polyder(p, m))


def test_polyder_negative_order():
    with pytest.raises(ValueError):
        jnp.polyder(np.ones(3), -1)
    with pytest.raises(ValueError, match="polyder"):
        rnp.polyder(np.ones(3), -1)


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_compress_condition_past_the_axis(backend, axis):
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    condition = np.array([1, 0, 0, 0, 0, 0, 0, 1])
    with pytest.raises(ValueError):
        jnp.compress(condition, x, axis=axis)
    with pytest.raises(ValueError, match="out of bounds"):
        rnp.compress(condition, x, axis=axis)
    # false entries past the axis are allowed
    condition = np.array([1, 0, 0, 0, 0, 0, 0])
    _same(rnp.compress(condition, x, axis=axis), jnp.compress(condition, x, axis=axis))


def test_compress_size_larger_than_the_axis(backend):
    condition, x = np.array([True, False, True]), np.arange(3.0, dtype=np.float32)
    with pytest.raises(ValueError):
        jnp.extract(condition, x, size=4)
    with pytest.raises(ValueError, match="size"):
        rnp.extract(condition, x, size=4)
    _same(rnp.extract(condition, x, size=3), jnp.extract(condition, x, size=3))


def test_permute_dims_takes_a_permutation_only(backend):
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    with pytest.raises(TypeError):
        jnp.permute_dims(x, (-1, -2))
    with pytest.raises(TypeError):
        rnp.permute_dims(x, (-1, -2))
    _same(rnp.permute_dims(x, (1, 0)), jnp.permute_dims(x, (1, 0)))


def test_transpose_method_with_one_numpy_integer(backend):
    x = np.arange(3.0, dtype=np.float32)
    _same(rnp.asarray(x).transpose(np.int64(0)), jnp.asarray(x).transpose(np.int64(0)))
    _same(rnp.asarray(x).transpose(np.int64(-1)), jnp.asarray(x).transpose(np.int64(-1)))


# --- error classes and weak types ------------------------------------------------------------


def test_hypot_of_complex_is_a_value_error():
    z = np.ones(3, np.complex64)
    with pytest.raises(ValueError):
        jnp.hypot(z, z)
    with pytest.raises(ValueError, match="complex"):
        rnp.hypot(z, z)


@pytest.mark.parametrize("mode", [1, None, "foo"])
def test_pad_unknown_mode_is_not_implemented(mode):
    with pytest.raises(NotImplementedError):
        jnp.pad(jnp.arange(3), 1, mode)
    with pytest.raises(NotImplementedError, match="Unimplemented padding mode"):
        rnp.pad(rnp.arange(3), 1, mode)


@pytest.mark.parametrize("end_values", [0, (1.5, -2.0)])
def test_pad_linear_ramp_keeps_the_weak_type(backend, end_values):
    got = rnp.pad(rnp.asarray(1.0)[None], 2, mode="linear_ramp", end_values=end_values)
    want = jnp.pad(jnp.asarray(1.0)[None], 2, mode="linear_ramp", end_values=end_values)
    _same(got, want)


# --- convolve's preferred_element_type, repeat of a scalar -----------------------------------


@pytest.mark.parametrize("op", ["convolve", "correlate"])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.float16])
def test_convolve_with_preferred_type_keeps_integers(backend, op, mode, dtype):
    a = _RNG.randint(-5, 5, 6).astype(dtype)
    v = _RNG.randint(-5, 5, 3).astype(dtype)
    for x, y in [(a, v), (v, a)]:
        got = getattr(rnp, op)(x, y, mode=mode, preferred_element_type=dtype)
        _same(got, getattr(jnp, op)(x, y, mode=mode, preferred_element_type=dtype), rtol=1e-2)


@pytest.mark.parametrize("axis", [0, -1, 2, None])
@pytest.mark.parametrize("repeats", [0, 2])
def test_repeat_of_a_scalar_whatever_the_axis(backend, axis, repeats):
    x = np.float32(1.5)
    _same(rnp.repeat(x, repeats, axis=axis), jnp.repeat(x, repeats, axis=axis))
    got = rnp.repeat(x, repeats, axis=axis, total_repeat_length=3)
    _same(got, jnp.repeat(x, repeats, axis=axis, total_repeat_length=3))


# --- insert at traced positions --------------------------------------------------------------


@pytest.mark.parametrize("axis", [None, 0, -1])
@pytest.mark.parametrize("index", [np.int32(0), np.int32(-1), np.int32(4), np.array([2, 0])])
def test_insert_at_traced_positions_under_jit(backend, axis, index):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)

    def run(np_, jit):
        return jit(lambda a, i: np_.insert(a, i, np.float32(-7), axis=axis))(x, index)

    _same(run(rnp, ri_jit), run(jnp, jax.jit))


@pytest.mark.parametrize("axis", [None, 0, -1])
@pytest.mark.parametrize("index", [np.array([0, 2]), np.array([-1]), np.array([[1, 0]])])
def test_delete_traced_unique_indices_under_jit(backend, axis, index):
    x = np.arange(12, dtype=np.int32).reshape(3, 4)

    def run(np_, jit):
        return jit(lambda a, i: np_.delete(a, i, axis=axis, assume_unique_indices=True))(x, index)

    _same(run(rnp, ri_jit), run(jnp, jax.jit))


@pytest.mark.parametrize(
    "obj, values, axis",
    [
        (np.array(1), np.array([1, 2, 3]), 1),
        (np.array([1]), np.array([7, 8]), 1),
        (10, np.array(5), None),
        (-10, np.array(5), None),
        (np.array([1, 9]), np.array([5, 6]), None),
    ],
)
def test_insert_positions_as_jnp(backend, obj, values, axis):
    x = np.arange(6, dtype=np.int32).reshape(3, 2)
    _same(rnp.insert(x, obj, values, axis), jnp.insert(x, obj, values, axis))


def test_insert_refuses_lists():
    x = np.arange(4, dtype=np.int32)
    for obj, values in [([1, 2], np.array([5, 6])), (1, [5, 6])]:
        with pytest.raises(TypeError):
            jnp.insert(x, obj, values)
        with pytest.raises(TypeError, match="insert"):
            rnp.insert(x, obj, values)


# --- unique along an axis whose slices are empty -----------------------------------------------


@pytest.mark.parametrize("shape, axis", [((0, 4), 1), ((3, 0), 0), ((2, 0, 3), 2), ((0, 4), 0)])
@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.bool_])
def test_unique_empty_slices_are_one_group(backend, shape, axis, dtype):
    x = np.zeros(shape, dtype)
    flags = dict(return_index=True, return_inverse=True, return_counts=True)

    _same(rnp.unique(x, axis=axis), jnp.unique(x, axis=axis))
    _same(rnp.unique(x, axis=axis, **flags), jnp.unique(x, axis=axis, **flags))
    # under jit the length is still data-dependent without size=, in JAX too
    with pytest.raises(jax.errors.ConcretizationTypeError):
        jax.jit(lambda a: jnp.unique(a, axis=axis))(x)
    with pytest.raises(ri_errors.ConcretizationTypeError):
        ri_jit(lambda a: rnp.unique(a, axis=axis))(x)


# --- choose: the result of an array built from the choices --------------------------------------


@pytest.mark.parametrize(
    "choices",
    [[1.0, 2.0], [1, 2], [np.float32(1.5), 2.0], [jnp.array(1.0), 2], [np.ones(2, np.int8), 3]],
)
@pytest.mark.parametrize("mode", ["raise", "clip", "wrap"])
def test_choose_result_is_strongly_typed(backend, choices, mode):
    index = np.array([0, 1], np.int32)
    # the jnp scalar as the same weak scalar made by refimpl
    r_choices = [rnp.array(1.0) if isinstance(c, jax.Array) else c for c in choices]
    _same(rnp.choose(index, r_choices, mode=mode), jnp.choose(index, choices, mode=mode))
    if mode != "raise":
        got = ri_jit(lambda i: rnp.choose(i, r_choices, mode=mode))(index)
        _same(got, jax.jit(lambda i: jnp.choose(i, choices, mode=mode))(index))


def test_choose_refuses_a_float_index_with_jax_class():
    with pytest.raises(ValueError):
        jnp.choose(np.array([0.0, 1.0]), [1.0, 2.0])
    with pytest.raises(ValueError, match="choose"):
        rnp.choose(np.array([0.0, 1.0]), [1.0, 2.0])


# --- unique(size=...) of an input without elements ------------------------------------------------


@pytest.mark.parametrize(
    "shape, axis", [((0,), None), ((0, 4), 0), ((0, 4), 1), ((3, 0), 1), ((2, 0, 3), 2)]
)
@pytest.mark.parametrize("kwargs", [dict(size=0), dict(size=3, fill_value=1), dict(size=2)])
@pytest.mark.parametrize(
    "flags", [{}, dict(return_index=True, return_inverse=True, return_counts=True)]
)
def test_unique_size_of_no_elements_as_jax(backend, shape, axis, kwargs, flags):
    x = np.zeros(shape, np.float32)

    def call(np_, a):
        return np_.unique(a, axis=axis, **kwargs, **flags)

    empty_axis = shape[0 if axis is None else axis] == 0
    if empty_axis and kwargs.get("size") and "fill_value" not in kwargs:
        # size= and no fill_value for an empty axis: ValueError in JAX 0.10.2
        with pytest.raises(ValueError):
            call(jnp, x)
        with pytest.raises(ValueError, match="fill_value"):
            call(rnp, x)
        return
    _same(call(rnp, x), call(jnp, x))
    _same(ri_jit(lambda a: call(rnp, a))(x), jax.jit(lambda a: call(jnp, a))(x))
