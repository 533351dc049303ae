"""lax ops' conversions and argument forms as JAX 0.10.2's lax tests exercise
them (issue 29): bitcasts that change the width, ``mul(out_dtype=)`` with
broadcasting under jit, host conversion of Python ints, and the exception
classes of bad ``split`` sizes and convolution paddings. Each program runs on
JAX (the oracle) and on refimpl, on both backends, eagerly and under jit."""

from __future__ import annotations

import itertools

import jax
import ml_dtypes
import numpy as np
import pytest

import refimpl as ri
from refimpl import lax


def _outcome(fn):
    """("ok", array) or ("raise", exception class)."""
    try:
        return "ok", np.asarray(fn())
    except Exception as e:  # noqa: BLE001 - the outcome is what is compared
        return "raise", type(e)


def _assert_same(want_fn, got_fn):
    want, got = _outcome(want_fn), _outcome(got_fn)
    assert got[0] == want[0], (got, want)
    if want[0] == "raise":
        assert got[1] is want[1], (got, want)
        return
    assert got[1].dtype == want[1].dtype and got[1].shape == want[1].shape, (got, want)
    np.testing.assert_array_equal(got[1], want[1])


# --- bitcast_convert_type across widths ------------------------------------------------------

_WIDTHS = [np.uint8, np.int8, np.int16, np.uint16, np.float16, ml_dtypes.bfloat16, np.int32,
           np.uint32, np.float32]  # fmt: skip


def _bitcast_operand(from_dtype, to_dtype):
    shape = (2, 3)
    ratio = np.dtype(to_dtype).itemsize // np.dtype(from_dtype).itemsize
    if ratio > 1:
        shape = (*shape, ratio)
    # bytes that are finite numbers in every float type (no NaN payloads to compare)
    return np.arange(int(np.prod(shape)), dtype=np.uint8).reshape(shape).astype(from_dtype)


@pytest.mark.parametrize(
    "from_dtype,to_dtype",
    [p for p in itertools.product(_WIDTHS, repeat=2) if np.dtype(p[0]) != np.dtype(p[1])],
    ids=lambda d: np.dtype(d).name,
)
def test_bitcast_changes_width_as_jax(backend, from_dtype, to_dtype):
    x = _bitcast_operand(from_dtype, to_dtype)
    want = jax.lax.bitcast_convert_type(x, to_dtype)
    for fn in (lax.bitcast_convert_type, ri.jit(lax.bitcast_convert_type, static_argnums=1)):
        got = fn(x, to_dtype)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.weak_type is False
        np.testing.assert_array_equal(
            np.asarray(got).view(np.uint8), np.asarray(want).view(np.uint8)
        )


@pytest.mark.parametrize(
    "x,to_dtype",
    [
        (np.ones((2, 3), np.uint8), np.uint32),  # last dim is not the width ratio
        (np.uint8(3), np.uint16),  # rank 0 cannot widen
        (np.ones(3, np.bool_), np.int8),
        (np.ones(3, np.int8), np.bool_),
        (np.ones(2, np.complex64), np.uint32),
        (np.ones((2, 2), np.float32), np.complex64),
        (np.ones(2, np.bool_), np.bool_),  # the same dtype is fine
        (np.ones(2, np.complex64), np.complex64),
    ],
    ids=["ratio", "rank0", "from_bool", "to_bool", "from_complex", "to_complex", "bool", "c64"],
)
def test_bitcast_errors_as_jax(backend, x, to_dtype):
    _assert_same(
        lambda: jax.lax.bitcast_convert_type(x, to_dtype),
        lambda: lax.bitcast_convert_type(x, to_dtype),
    )
    _assert_same(
        lambda: jax.jit(lambda v: jax.lax.bitcast_convert_type(v, to_dtype))(x),
        lambda: ri.jit(lambda v: lax.bitcast_convert_type(v, to_dtype))(x),
    )


def test_bitcast_under_grad_and_vmap(backend):
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2)

    def f(lib):
        return lambda v: lib.bitcast_convert_type(v, np.float16).astype(np.float32).sum() + v.sum()

    np.testing.assert_array_equal(
        np.asarray(ri.grad(f(lax))(x)), np.asarray(jax.grad(f(jax.lax))(x))
    )
    want = jax.vmap(lambda v: jax.lax.bitcast_convert_type(v, np.uint8))(x)
    got = ri.vmap(lambda v: lax.bitcast_convert_type(v, np.uint8))(x)
    assert got.shape == want.shape
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


# --- mul's out_dtype with operands that broadcast, under jit --------------------------------


@pytest.mark.parametrize(
    "dtype,out_dtype",
    [
        (np.float16, np.float32),
        (np.int8, np.int32),
        (np.int8, np.float32),
        (ml_dtypes.bfloat16, np.float32),
        (np.int16, np.float16),
    ],  # fmt: skip
    ids=str,
)
def test_mul_out_dtype_broadcasting_under_jit(backend, dtype, out_dtype):
    x = (np.arange(12).reshape(3, 4) % 5 - 2).astype(dtype)
    y = (np.arange(4).reshape(1, 4) - 1).astype(dtype)
    want = jax.jit(lambda a, b: jax.lax.mul(a, b, out_dtype=out_dtype))(x, y)
    got = ri.jit(lambda a, b: lax.mul(a, b, out_dtype=out_dtype))(x, y)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


# --- convert_element_type of a Python scalar ---------------------------------------------------


@pytest.mark.parametrize(
    "value,dtype",
    [
        (2**32, "int32"),
        (2**32 + 5, "int32"),
        (2**63, "int32"),
        (-(2**40) - 3, "uint8"),
        (2**64, "int32"),
        (2**40, "float32"),
        (3, int),
        (True, float),
    ],  # fmt: skip
    ids=str,
)
def test_convert_python_scalar_as_jax(backend, value, dtype):
    _assert_same(
        lambda: jax.lax.convert_element_type(value, dtype),
        lambda: lax.convert_element_type(value, dtype),
    )
    want = jax.lax.convert_element_type(value, dtype) if value != 2**64 else None
    if want is not None:
        assert lax.convert_element_type(value, dtype).weak_type == want.aval.weak_type


def test_convert_needs_a_dtype(backend):
    for x in (2.5, np.ones(3, np.float32)):
        _assert_same(
            lambda x=x: jax.lax.convert_element_type(x, None),
            lambda x=x: lax.convert_element_type(x, None),
        )


# --- argument errors: the exception classes -----------------------------------------------------

_X = np.ones((1, 3, 6, 6), np.float32)
_K = np.ones((2, 3, 2, 2), np.float32)


@pytest.mark.parametrize(
    "padding",
    [(3, 3), 3, [(1, 2, 3), (1, 1)], [(1.5, 1), (1, 1)], "FOO", [(1, 1)], "same"],
    ids=str,
)
def test_conv_padding_errors_as_jax(backend, padding):
    _assert_same(
        lambda: jax.lax.conv_general_dilated(_X, _K, (1, 1), padding),
        lambda: lax.conv_general_dilated(_X, _K, (1, 1), padding),
    )
    _assert_same(
        lambda: jax.lax.conv_general_dilated_patches(_X, (2, 2), (1, 1), padding),
        lambda: lax.conv_general_dilated_patches(_X, (2, 2), (1, 1), padding),
    )


def test_padtype_to_pads_unknown_name():
    _assert_same(
        lambda: jax.lax.padtype_to_pads((5, 6), (2, 3), (1, 2), "FOO"),
        lambda: lax.padtype_to_pads((5, 6), (2, 3), (1, 2), "FOO"),
    )


@pytest.mark.parametrize(
    "sizes,axis", [([-1], 0), ([6], 0), ((), 1), ([2, -1, 4], 0), ([2, 3], -1)], ids=str
)
def test_split_errors_as_jax(backend, sizes, axis):
    x = np.arange(5.0)
    _assert_same(lambda: jax.lax.split(x, sizes, axis=axis), lambda: lax.split(x, sizes, axis=axis))


def test_tile_reps_of_another_length_is_a_type_error(backend):
    x = np.ones((2, 3), np.float32)
    _assert_same(lambda: jax.lax.tile(x, (2,)), lambda: lax.tile(x, (2,)))


@pytest.mark.parametrize("padding", ["SAME", "SAME_LOWER", "VALID"])
def test_padtype_to_pads_gives_python_ints(padding):
    shapes = [np.array(v, np.int64) for v in ((10, 9), (5, 3), (2, 2))]
    want = jax.lax.padtype_to_pads(*shapes, padding)
    got = lax.padtype_to_pads(*shapes, padding)
    assert [list(p) for p in got] == [list(p) for p in want]
    assert all(type(v) is int for pair in got for v in pair)


def test_concrete_int_arrays_as_static_int_sequences(backend):
    x = np.arange(42, dtype=np.int32).reshape(6, 7)
    want = jax.lax.transpose(x, jax.numpy.array([1, 0]))
    got = lax.transpose(x, ri.numpy.array([1, 0]))
    assert got.shape == want.shape
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    want = jax.lax.dynamic_slice(x, [2, 3], jax.numpy.array([2, 2]))
    got = lax.dynamic_slice(x, [2, 3], ri.numpy.array([2, 2]))
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    # traced, the permutation is not static: a TypeError in both (each library's own
    # concretization error class)
    with pytest.raises(TypeError):
        jax.jit(lambda p: jax.lax.transpose(x, p))(np.array([1, 0]))
    with pytest.raises(TypeError):
        ri.jit(lambda p: lax.transpose(x, p))(np.array([1, 0]))


def test_top_k_refuses_a_dimension_beyond_int32():
    spec = jax.ShapeDtypeStruct((2**31 + 1,), np.dtype(ml_dtypes.bfloat16))
    _assert_same(
        lambda: jax.eval_shape(lambda x: jax.lax.top_k(x, 100), spec),
        lambda: ri.eval_shape(lambda x: lax.top_k(x, 100), spec),
    )


@pytest.mark.parametrize("mode", [None, "fill", "clip"])
def test_gather_no_indices_slice_larger_than_empty_operand(backend, mode):
    # JAX allows slice sizes beyond an empty operand when there are no indices
    x, idx = np.zeros((0,), np.float32), np.zeros((0, 1), np.int32)

    def f(lib):
        dn = lib.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,),
                                        start_index_map=(0,))  # fmt: skip
        return lambda a, i: lib.gather(a, i, dn, (1,), mode=mode)

    want = jax.jit(f(jax.lax))(x, idx)
    for got in (f(lax)(x, idx), ri.jit(f(lax))(x, idx)):
        assert got.shape == want.shape and got.dtype == want.dtype


def test_conv_ranks_differ_with_dimension_numbers_given(backend):
    lhs, rhs = np.ones((1, 1, 1)), np.ones((1, 1, 1, 1))

    def conv(lib):
        dn = lib.ConvDimensionNumbers(lhs_spec=(0, 1, 2), rhs_spec=(0, 1, 2), out_spec=(0, 1, 2))
        return lambda: lib.conv_general_dilated(lhs, rhs, (1,), ((0, 0),), (1,), (1,), dn)

    _assert_same(conv(jax.lax), conv(lax))  # ValueError here; TypeError without them
    _assert_same(
        lambda: jax.lax.conv_general_dilated(lhs, rhs, (1,), ((0, 0),)),
        lambda: lax.conv_general_dilated(lhs, rhs, (1,), ((0, 0),)),
    )


def test_non_scalar_init_classes(backend):
    x, init = np.ones((4, 4), np.int32), np.zeros((1,), np.int32)
    _assert_same(
        lambda: jax.lax.reduce_window(x, init, jax.lax.max, (2, 2), (2, 2), "VALID"),
        lambda: lax.reduce_window(x, init, lax.max, (2, 2), (2, 2), "VALID"),
    )
    _assert_same(
        lambda: jax.lax.reduce(x, init, jax.lax.max, (0,)),
        lambda: lax.reduce(x, init, lax.max, (0,)),
    )


@pytest.mark.parametrize("shape", [(), (2,), (2, 3)], ids=str)
def test_shape_as_value(backend, shape):
    want = jax.lax.shape_as_value(shape)
    for got in (lax.shape_as_value(shape), ri.jit(lambda: lax.shape_as_value(shape))()):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("shape", [(0,), (3, 0)], ids=str)
def test_reverse_mode_of_sorting_an_empty_array(backend, shape):
    x = np.zeros(shape, np.float32)
    want = jax.vjp(jax.lax.sort, x)[1](x)[0]
    for got in (ri.vjp(lax.sort, x)[1](x)[0], ri.jit(ri.grad(lambda v: lax.sort(v).sum()))(x)):
        assert got.shape == want.shape and got.dtype == want.dtype
