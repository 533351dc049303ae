"""int4/uint4 against JAX 0.10.2 on both backends: creation, casts both ways,
the arithmetic JAX allows on 4-bit integers (wrapping modulo 16), the
operations it refuses, promotion, jit, vmap, bitcasts and the host copy."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import refimpl as ri
import refimpl.lax as rlax
import refimpl.numpy as rnp
from refimpl import dtypes_api

I4 = [1, -2, 7, -8]
U4 = [1, 2, 15, 0]

# Each program takes (numpy module, lax module, transformation module) and runs
# as written on refimpl and on JAX.
PROGRAMS = {
    "create": lambda np_, lax, t: np_.array(I4, np_.int4),
    "create_wraps": lambda np_, lax, t: np_.array([20, -9, 16], np_.int4),
    "create_u_wraps": lambda np_, lax, t: np_.array([-1, 17], np_.uint4),
    "scalar": lambda np_, lax, t: np_.uint4(3),
    "zeros": lambda np_, lax, t: np_.zeros(3, np_.int4),
    "arange": lambda np_, lax, t: np_.arange(5, dtype=np_.uint4),
    "to_int32": lambda np_, lax, t: np_.array(I4, np_.int4).astype(np_.int32),
    "to_float32": lambda np_, lax, t: lax.convert_element_type(
        np_.array(U4, np_.uint4), np_.float32
    ),
    "float_saturates": lambda np_, lax, t: np_.array([1.7, -2.5, 9.0, -9.0, np.nan]).astype(
        np_.int4
    ),
    "int32_wraps": lambda np_, lax, t: np_.array([8, 9, -9, 100, 16]).astype(np_.int4),
    "int4_to_uint4": lambda np_, lax, t: np_.array(I4, np_.int4).astype(np_.uint4),
    "uint4_to_int4": lambda np_, lax, t: np_.array(U4, np_.uint4).astype(np_.int4),
    "add_wraps": lambda np_, lax, t: np_.array(I4, np_.int4) + np_.array(I4, np_.int4),
    "add_weak_int": lambda np_, lax, t: np_.array(I4, np_.int4) + 20,
    "add_bool": lambda np_, lax, t: np_.array(I4, np_.int4) + np_.ones(4, bool),
    "mul": lambda np_, lax, t: np_.array(I4, np_.int4) * np_.array(I4, np_.int4),
    "sub_uint4": lambda np_, lax, t: np_.array(U4, np_.uint4) - 3,
    "neg": lambda np_, lax, t: -np_.array(I4, np_.int4),
    "floordiv": lambda np_, lax, t: np_.array(I4, np_.int4) // 3,
    "rem": lambda np_, lax, t: lax.rem(np_.array(I4, np_.int4), np_.array(3, np_.int4)),
    "div": lambda np_, lax, t: lax.div(np_.array(I4, np_.int4), np_.array(3, np_.int4)),
    "max": lambda np_, lax, t: np_.maximum(np_.array(I4, np_.int4), 0),
    "less": lambda np_, lax, t: np_.array(I4, np_.int4) < 1,
    "sign": lambda np_, lax, t: lax.sign(np_.array(I4, np_.int4)),
    "not": lambda np_, lax, t: lax.bitwise_not(np_.array(I4, np_.int4)),
    "shift_left": lambda np_, lax, t: lax.shift_left(
        np_.array(I4, np_.int4), np_.array([1, 1, 4, 7], np_.int4)
    ),
    "shift_right_logical": lambda np_, lax, t: lax.shift_right_logical(
        np_.array(I4, np_.int4), np_.array([1, 2, 3, -1], np_.int4)
    ),
    "shift_right_arithmetic_uint4": lambda np_, lax, t: lax.shift_right_arithmetic(
        np_.array(U4, np_.uint4), np_.array([0, 1, 2, 9], np_.uint4)
    ),
    "right_shift_uint4": lambda np_, lax, t: np_.right_shift(np_.array(U4, np_.uint4), 1),
    "clz_uint4": lambda np_, lax, t: lax.clz(np_.array(U4, np_.uint4)),
    "reduce_max": lambda np_, lax, t: np_.array(I4, np_.int4).max(),
    "argmax": lambda np_, lax, t: np_.argmax(np_.array(I4, np_.int4)),
    "cumsum": lambda np_, lax, t: np_.cumsum(np_.array(I4, np_.int4)),
    "sum_with_dtype": lambda np_, lax, t: np_.sum(np_.array(I4, np_.int4), dtype=np_.int32),
    "dot": lambda np_, lax, t: np_.dot(np_.array(I4, np_.int4), np_.array(I4, np_.int4)),
    "sort": lambda np_, lax, t: np_.sort(np_.array(I4, np_.int4)),
    "where": lambda np_, lax, t: np_.where(np_.array(I4, np_.int4) > 0, np_.array(I4, np_.int4), 0),
    "scatter_add": lambda np_, lax, t: np_.array(I4, np_.int4).at[1].add(3),
    "jit": lambda np_, lax, t: t.jit(lambda a, s: a * 2 + s)(np_.array(I4, np_.int4), 3),
    "vmap": lambda np_, lax, t: t.vmap(lambda a: a + 1)(np_.array(U4, np_.uint4)),
    "fori_loop": lambda np_, lax, t: lax.fori_loop(
        0, 3, lambda i, a: a + 1, np_.array(I4, np_.int4)
    ),
    "bitcast_int8_to_int4": lambda np_, lax, t: lax.bitcast_convert_type(
        np_.array([0x12, -1], np_.int8), np_.int4
    ),
    "bitcast_int4_to_int8": lambda np_, lax, t: lax.bitcast_convert_type(
        np_.array([[1, 2], [3, -4]], np_.int4), np_.int8
    ),
    "bitcast_int16_to_uint4": lambda np_, lax, t: lax.bitcast_convert_type(
        np_.array([0x1234], np_.int16), np_.uint4
    ),
    "bitcast_int4_to_uint4": lambda np_, lax, t: lax.bitcast_convert_type(
        np_.array(I4, np_.int4), np_.uint4
    ),
    "view_int8": lambda np_, lax, t: np_.array([1, 2, 3, 4], np_.int4).view(np_.int8),
    "from_numpy": lambda np_, lax, t: np_.asarray(np.array([1, -8, 7], ml_dtypes.int4)),
    # what JAX 0.10.2 refuses
    "abs_refused": lambda np_, lax, t: lax.abs(np_.array(I4, np_.int4)),
    "reduce_or_refused": lambda np_, lax, t: lax.reduce_or(np_.array(U4, np_.uint4), (0,)),
    "sum_refused": lambda np_, lax, t: np_.sum(np_.array(I4, np_.int4)),
    "add_float_refused": lambda np_, lax, t: np_.array(I4, np_.int4) + 1.5,
    "add_int8_refused": lambda np_, lax, t: np_.array(I4, np_.int4) + np_.ones(4, np_.int8),
    "mix_refused": lambda np_, lax, t: np_.array(I4, np_.int4) + np_.array(U4, np_.uint4),
    "power_array_exponent_refused": lambda np_, lax, t: np_.power(
        np_.array(I4, np_.int4), np_.array(I4, np_.int4)
    ),
    # Python floats into integer dtypes are checked as NumPy checks them
    "float_leaves_in_range": lambda np_, lax, t: np_.array([[2.5, -1.5], [7.0, -8.0]], np_.int4),
    "float_leaf_out_of_int4": lambda np_, lax, t: np_.array([1.0, 7.9], np_.int4),
    "float_scalar_out_of_int4": lambda np_, lax, t: np_.asarray(-8.5, np_.int4),
    "float_leaf_out_of_int8": lambda np_, lax, t: np_.array([300.0], np_.int8),
    "float_leaf_negative_uint8": lambda np_, lax, t: np_.array((-1.5,), np_.uint8),
    "float_leaf_nan_int8": lambda np_, lax, t: np_.asarray(float("nan"), np_.int8),
    # int4 indices: a negative one plus the axis size, both in int4 (wrapping), once
    "index_int4_array": lambda np_, lax, t: np_.arange(10)[np_.array([1, -2, 7, -8], np_.int4)],
    "index_int4_jit": lambda np_, lax, t: t.jit(lambda i: np_.arange(10)[i])(
        np_.array([1, -2, 7, -8], np_.int4)
    ),
    "index_uint4_array": lambda np_, lax, t: np_.arange(10)[np_.array([1, 15], np_.uint4)],
    "take_int4": lambda np_, lax, t: np_.take(np_.arange(10), np_.array([1, -2], np_.int4)),
    "at_add_int4_jit": lambda np_, lax, t: t.jit(lambda i: np_.arange(10).at[i].add(5))(
        np_.array([-1, -8], np_.int4)
    ),
    "int4_scalar_is_no_index": lambda np_, lax, t: [0, 1, 2][np_.array(1, np_.int4)],
    "pow_operator": lambda np_, lax, t: np_.array(I4, np_.int4) ** 2,
    "power_static_exponent": lambda np_, lax, t: np_.power(np_.array(I4, np_.int4), 3),
}


def _run(program, on_jax):
    try:
        if on_jax:
            return program(jnp, jax.lax, jax)
        return program(rnp, rlax, ri)
    except Exception as error:  # noqa: BLE001 - the exception type is compared
        return error


def _exact(x):
    a = np.asarray(x)
    return a.astype(np.int64) if a.dtype.kind in "iuV" and a.dtype != bool else a


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_int4_program_matches_jax(backend, name):
    want = _run(PROGRAMS[name], on_jax=True)
    got = _run(PROGRAMS[name], on_jax=False)
    if isinstance(want, Exception):
        assert isinstance(got, Exception), (name, got)
        # JAX's TypePromotionError is a ValueError; refimpl raises its own subclass
        assert isinstance(got, type(want)) or (
            isinstance(want, ValueError) and isinstance(got, ValueError)
        ), (name, got, want)
        return
    assert not isinstance(got, Exception), (name, got)
    assert got.shape == want.shape
    assert got.dtype == want.dtype
    assert got.weak_type == want.weak_type
    np.testing.assert_array_equal(_exact(got), _exact(want))


def test_promotion_refusal_is_type_promotion_error():
    with pytest.raises(dtypes_api.TypePromotionError, match="int4"):
        rnp.promote_types(rnp.int4, rnp.int8)
    assert issubclass(dtypes_api.TypePromotionError, ValueError)


@pytest.mark.parametrize("other", ["bool", "int4", "uint4", "int8", "uint8", "int32", "float32"])
@pytest.mark.parametrize("narrow", ["int4", "uint4"])
def test_promote_types_matches_jax(narrow, other):
    def outcome(fn):
        try:
            return np.dtype(fn(narrow, other))
        except ValueError:
            return "refused"

    assert outcome(rnp.promote_types) == outcome(jnp.promote_types)


def test_names_and_limits_match_jax():
    for name in ("int4", "uint4"):
        assert np.dtype(getattr(rnp, name)) == np.dtype(getattr(jnp, name))
        r, j = rnp.iinfo(getattr(rnp, name)), jnp.iinfo(getattr(jnp, name))
        assert (r.min, r.max, r.bits) == (j.min, j.max, j.bits)
        assert dtypes_api.itemsize_bits(name) == jax.dtypes.itemsize_bits(name)
        raw = np.dtype(name).type  # ml_dtypes' scalar type
        for kind in (np.integer, np.signedinteger, np.unsignedinteger, np.number, np.floating):
            assert rnp.issubdtype(name, kind) == jnp.issubdtype(name, kind)
            assert rnp.issubdtype(raw, kind) == jnp.issubdtype(raw, kind)
            assert dtypes_api.issubdtype(name, kind) == jax.dtypes.issubdtype(name, kind)
        for a, b in [(raw, name), (name, raw), (getattr(rnp, name), raw), (raw, np.int8)]:
            want = jnp.issubdtype(getattr(jnp, name) if a is not raw and a != name else a, b)
            assert rnp.issubdtype(a, b) == want, (a, b)


def test_scalar_types_compare_as_jax():
    # != used to fail with a TypeError (the class's own __eq__ was called)
    for r, j, other in [(rnp.int4, jnp.int4, jnp.uint4), (rnp.int8, jnp.int8, np.int8)]:
        assert (r != getattr(rnp, other.__name__)) == (j != other)
        assert (r != np.dtype(r)) == (j != np.dtype(j))


def test_host_copy_and_printing(backend):
    x = rnp.array(I4, rnp.int4)
    host = np.asarray(x)
    assert host.dtype == np.dtype(ml_dtypes.int4)
    np.testing.assert_array_equal(host.astype(np.int8), np.array(I4, np.int8))
    assert repr(x) == repr(jnp.array(I4, jnp.int4))
    assert str(rnp.array(U4, rnp.uint4)) == str(jnp.array(U4, jnp.uint4))
    assert x.tolist() == I4
