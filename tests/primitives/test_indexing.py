"""The indexing primitives against jax.lax (the oracle).

dynamic_slice / dynamic_update_slice are compared with jax.lax's functions of
the same name, including negative and out-of-range start indices, given
statically (Python ints) and at run time (traced int scalars). The one-axis
gather / scatter primitives are compared with jax.lax.gather / scatter built
with the equivalent dimension numbers.
"""

from __future__ import annotations

import functools
import re

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import lax
from refimpl.backends.ref.arrays import RefArray
from refimpl.primitives import indexing

jax.config.update("jax_platforms", "cpu")

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = [
    np.dtype(d) for d in (np.bool_, np.int8, np.int32, np.uint8, np.float16, BF16, np.float32)
] + [np.dtype(np.complex64)]
DTYPE_IDS = [d.name for d in DTYPES]
INDEX_DTYPES = [np.dtype(np.int32), np.dtype(np.int8), np.dtype(np.uint8)]
HYPOTHESIS = settings(max_examples=50, deadline=None)

try:  # private, test-only: builds weakly typed JAX arrays
    from jax._src.lax.lax import _convert_element_type as _jax_convert
except ImportError:  # pragma: no cover
    _jax_convert = None


# --- helpers ------------------------------------------------------------------------


def random_array(rng: np.random.Generator, shape, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)
    if np.issubdtype(dtype, np.complexfloating):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return (rng.standard_normal(shape) * 10).astype(dtype)


def small_values(rng: np.random.Generator, shape, dtype) -> np.ndarray:
    """Small integers in ``dtype``: sums of a few of them are exact in every dtype."""
    values = rng.integers(-4, 5, size=shape)
    if np.dtype(dtype) == np.uint8:
        values = np.abs(values)
    return values.astype(dtype)


def as_bits(x) -> np.ndarray:
    """Unsigned ints with the same bits (NaN payloads and -0.0 compare exactly)."""
    x = np.ascontiguousarray(np.atleast_1d(np.asarray(x)))
    if x.dtype == np.bool_:
        return x
    if x.dtype.kind == "c":
        x = x.view(np.dtype(f"f{x.dtype.itemsize // 2}"))
    return x.view(np.dtype(f"u{x.dtype.itemsize}"))


def assert_same(actual, expected) -> None:
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    np.testing.assert_array_equal(as_bits(actual), as_bits(expected))


def assert_same_values(actual, expected) -> None:
    """Same dtype and shape; NaNs in the same places (any payload)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if actual.dtype in (BF16, np.dtype(np.float16)):
        actual, expected = actual.astype(np.float32), expected.astype(np.float32)
    np.testing.assert_array_equal(actual, expected)


def run_all_ways(fn, *args):
    """``fn(*args)`` eagerly and under jit (same values); its Program type-checks."""
    eager = fn(*args)
    assert isinstance(eager, ri.Array), type(eager)
    jitted = ri.jit(fn)(*args)
    assert_same_values(jitted, eager)
    assert jitted.weak_type == eager.weak_type
    program = ri.make_program(fn)(*args)
    ri.check_program(program)
    for eqn in program.eqns:
        hash(tuple(sorted(eqn.params.items())))
    return np.asarray(eager)


def weak(array) -> RefArray:
    return RefArray(np.asarray(array), weak_type=True)


def jax_weak(array):
    array = np.asarray(array)
    return _jax_convert(jnp.asarray(array), array.dtype, weak_type=True)


def scalar(value, dtype=np.int32) -> np.ndarray:
    """A 0-d NumPy array: an array operand, so it is traced under jit."""
    return np.asarray(value, dtype)


# --- dynamic_slice --------------------------------------------------------------------------

DS_CASES = [
    ((), (), ()),
    ((5,), (1,), (2,)),
    ((5,), (4,), (3,)),  # clamped back to 2
    ((5,), (-2,), (2,)),  # wraps to 3
    ((5,), (-9,), (2,)),  # wraps to -4, clamped to 0
    ((5,), (100,), (0,)),
    ((3, 4), (2, -1), (2, 2)),
    ((3, 0), (1, 5), (1, 0)),
]


@functools.cache
def jax_slice_positions(shape, starts, sizes) -> np.ndarray:
    """Which flat operand positions jax.lax.dynamic_slice picks (one JAX call
    per case, reused for every dtype)."""
    positions = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    return np.asarray(jax.lax.dynamic_slice(positions, starts, sizes))


@functools.cache
def jax_update_positions(shape, update_shape, starts) -> np.ndarray:
    """For each output element of jax.lax.dynamic_update_slice: the flat operand
    position ``p >= 0`` it keeps, or ``-1 - k`` for flat update position ``k``."""
    positions = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    marks = -1 - np.arange(int(np.prod(update_shape)), dtype=np.int32).reshape(update_shape)
    return np.asarray(jax.lax.dynamic_update_slice(positions, marks, starts))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape, starts, sizes", DS_CASES)
def test_dynamic_slice_static_starts(rng, dtype, shape, starts, sizes):
    x = random_array(rng, shape, dtype)
    result = run_all_ways(lambda a: lax.dynamic_slice(a, starts, sizes), x)
    assert_same(result, x.reshape(-1)[jax_slice_positions(shape, starts, sizes)])


@pytest.mark.parametrize("index_dtype", [np.int32, np.int8, np.uint8], ids=str)
@pytest.mark.parametrize("shape, starts, sizes", DS_CASES)
def test_dynamic_slice_traced_starts(rng, index_dtype, shape, starts, sizes):
    if np.dtype(index_dtype) == np.uint8 and any(s < 0 for s in starts):
        starts = tuple(abs(s) for s in starts)
    x = random_array(rng, shape, np.float32)
    start_args = [scalar(s, index_dtype) for s in starts]
    result = run_all_ways(lambda a, *s: lax.dynamic_slice(a, s, sizes), x, *start_args)
    assert_same(result, jax.lax.dynamic_slice(x, [jnp.asarray(s) for s in start_args], sizes))


@st.composite
def dynamic_slice_cases(draw):
    shape = draw(st.lists(st.integers(0, 5), max_size=3))
    sizes = [draw(st.integers(0, n)) for n in shape]
    starts = [draw(st.integers(-8, 8)) for _ in shape]
    traced = draw(st.booleans())
    return shape, starts, sizes, traced


def spec_starts(starts, shape, sizes):
    """XLA's rule as written in its spec: wrap negative starts once (what the
    jax.lax wrapper adds), then clamp into ``[0, size - slice_size]``."""
    wrapped = [s + n if s < 0 else s for s, n in zip(starts, shape, strict=True)]
    return [min(max(s, 0), n - k) for s, n, k in zip(wrapped, shape, sizes, strict=True)]


def spec_window(starts, sizes):
    return tuple(slice(s, s + k) for s, k in zip(starts, sizes, strict=True))


@HYPOTHESIS
@given(dynamic_slice_cases())
def test_dynamic_slice_random(case):
    shape, starts, sizes, traced = case
    x = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    expected = x[spec_window(spec_starts(starts, shape, sizes), sizes)]
    if traced:
        starts = [scalar(s) for s in starts]
        result = ri.jit(lambda a, *s: lax.dynamic_slice(a, s, sizes))(x, *starts)
    else:
        result = lax.dynamic_slice(x, starts, sizes)
    assert_same(result, expected)


def test_dynamic_slice_start_indices_as_an_array(rng):
    x = random_array(rng, (4, 5), np.float32)
    starts = np.array([3, -2], np.int32)
    expected = jax.lax.dynamic_slice(x, starts, (2, 2))
    assert_same(lax.dynamic_slice(x, starts, (2, 2)), expected)  # NumPy: static
    assert_same(lax.dynamic_slice(x, RefArray(starts), (2, 2)), expected)  # unstacked
    assert_same(ri.jit(lambda a, s: lax.dynamic_slice(a, s, (2, 2)))(x, starts), expected)


def test_dynamic_slice_allow_negative_indices_false(rng):
    x = random_array(rng, (6,), np.float32)
    jitted = ri.jit(lambda a, i: lax.dynamic_slice(a, (i,), (2,), allow_negative_indices=False))
    expected = jax.lax.dynamic_slice(x, (jnp.int32(-2),), (2,), allow_negative_indices=False)
    assert_same(jitted(x, scalar(-2)), expected)  # clamped to 0, not wrapped
    with pytest.raises(ValueError, match="dynamic_slice: start index -2 is negative"):
        lax.dynamic_slice(x, (-2,), (2,), allow_negative_indices=False)


def test_dynamic_slice_program():
    x = np.zeros((3, 4), np.float32)
    program = ri.make_program(lambda a, i: lax.dynamic_slice(a, (i, -1), (2, 2)))(x, scalar(0))
    text = str(program)
    # the traced index is wrapped by equations, the static one now; the primitive clamps
    assert [e.primitive.name for e in program.eqns] == ["lt", "add", "select_n", "dynamic_slice"]
    assert "dynamic_slice[slice_sizes=(2, 2)] a e 3:i32[]" in text
    unsigned = ri.make_program(lambda a, i: lax.dynamic_slice(a, (i, i), (2, 2)))(
        x, scalar(0, np.uint8)
    )
    assert [e.primitive.name for e in unsigned.eqns] == ["dynamic_slice"]


def test_dynamic_slice_huge_python_int_start(rng):
    x = random_array(rng, (5,), np.float32)
    assert_same(lax.dynamic_slice(x, (2**40,), (2,)), x[3:])
    assert_same(lax.dynamic_slice(x, (-(2**40),), (2,)), x[:2])


def test_dynamic_slice_numpy_int_keeps_its_dtype():
    program = ri.make_program(lambda a: lax.dynamic_slice(a, (np.int8(-1),), (2,)))(
        np.zeros(5, np.float32)
    )
    assert "4:i8[]" in str(program)


# --- dynamic_update_slice ---------------------------------------------------------------

DUS_CASES = [
    ((), (), ()),
    ((5,), (2,), (1,)),
    ((5,), (2,), (4,)),  # clamped to 3
    ((5,), (2,), (-1,)),  # wraps to 4, clamped to 3
    ((5,), (0,), (-100,)),
    ((5,), (5,), (3,)),
    ((3, 4), (2, 3), (-1, 3)),
    ((3, 4), (0, 2), (1, 1)),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape, update_shape, starts", DUS_CASES)
def test_dynamic_update_slice_static_starts(rng, dtype, shape, update_shape, starts):
    x = random_array(rng, shape, dtype)
    u = random_array(rng, update_shape, dtype)
    result = run_all_ways(lambda a, b: lax.dynamic_update_slice(a, b, starts), x, u)
    source = jax_update_positions(shape, update_shape, starts)
    from_update = u.reshape(-1)[np.maximum(-1 - source, 0)] if u.size else x.reshape(-1)[source]
    assert_same(result, np.where(source >= 0, x.reshape(-1)[np.maximum(source, 0)], from_update))


@pytest.mark.parametrize("index_dtype", [np.int32, np.int8, np.uint8], ids=str)
@pytest.mark.parametrize("shape, update_shape, starts", DUS_CASES)
def test_dynamic_update_slice_traced_starts(rng, index_dtype, shape, update_shape, starts):
    if np.dtype(index_dtype) == np.uint8:
        starts = tuple(min(abs(s), 255) for s in starts)
    x = random_array(rng, shape, np.int32)
    u = random_array(rng, update_shape, np.int32)
    start_args = [scalar(s, index_dtype) for s in starts]
    fn = lambda a, b, *s: lax.dynamic_update_slice(a, b, s)  # noqa: E731
    result = run_all_ways(fn, x, u, *start_args)
    expected = jax.lax.dynamic_update_slice(x, u, [jnp.asarray(s) for s in start_args])
    assert_same(result, expected)


@st.composite
def dynamic_update_cases(draw):
    shape = draw(st.lists(st.integers(0, 5), max_size=3))
    update_shape = [draw(st.integers(0, n)) for n in shape]
    starts = [draw(st.integers(-8, 8)) for _ in shape]
    return shape, update_shape, starts, draw(st.booleans())


@HYPOTHESIS
@given(dynamic_update_cases())
def test_dynamic_update_slice_random(case):
    shape, update_shape, starts, traced = case
    x = np.zeros(shape, np.int32)
    u = np.arange(1, int(np.prod(update_shape)) + 1, dtype=np.int32).reshape(update_shape)
    expected = x.copy()
    expected[spec_window(spec_starts(starts, shape, update_shape), update_shape)] = u
    if traced:
        starts = [scalar(s) for s in starts]
        result = ri.jit(lambda a, b, *s: lax.dynamic_update_slice(a, b, s))(x, u, *starts)
    else:
        result = lax.dynamic_update_slice(x, u, starts)
    assert_same(result, expected)


def test_dynamic_update_slice_does_not_change_its_input(rng):
    x = random_array(rng, (4,), np.float32)
    before = x.copy()
    ri_x = RefArray(x)
    lax.dynamic_update_slice(ri_x, np.zeros(2, np.float32), (1,))
    assert_same(ri_x, before)


# --- the *_in_dim helpers -------------------------------------------------------------------


def test_in_dim_helpers_against_jax(rng):
    x = random_array(rng, (3, 5), np.float32)
    row = random_array(rng, (3,), np.float32)
    pairs = [
        (lax.dynamic_slice_in_dim(x, -2, 2, axis=1), jax.lax.dynamic_slice_in_dim(x, -2, 2, 1)),
        (lax.dynamic_index_in_dim(x, 1), jax.lax.dynamic_index_in_dim(x, 1)),
        (
            lax.dynamic_index_in_dim(x, scalar(4), axis=1, keepdims=False),
            jax.lax.dynamic_index_in_dim(x, 4, axis=1, keepdims=False),
        ),
        (
            lax.dynamic_update_slice_in_dim(x, x[:, :2], 4, axis=1),
            jax.lax.dynamic_update_slice_in_dim(x, x[:, :2], 4, axis=1),
        ),
        (
            lax.dynamic_update_index_in_dim(x, row, scalar(-1), axis=1),
            jax.lax.dynamic_update_index_in_dim(x, row, -1, axis=1),
        ),
    ]
    for ours, theirs in pairs:
        assert_same(ours, theirs)


# --- weak types ---------------------------------------------------------------------------


@pytest.mark.skipif(_jax_convert is None, reason="needs jax's private weak-type helper")
@pytest.mark.parametrize("operand_weak", [False, True])
@pytest.mark.parametrize("update_weak", [False, True])
@pytest.mark.parametrize("index_weak", [False, True])
def test_weak_types_match_jax(operand_weak, update_weak, index_weak):
    x, u, i = np.ones((4,), np.float32), np.ones((2,), np.float32), np.asarray(1, np.int32)

    def pick(value, is_weak, maker):
        return maker(value) if is_weak else value

    ri_args = (pick(x, operand_weak, weak), pick(u, update_weak, weak), pick(i, index_weak, weak))
    jax_args = tuple(
        pick(v, w, jax_weak) if w else jnp.asarray(v)
        for v, w in zip((x, u, i), (operand_weak, update_weak, index_weak), strict=True)
    )

    def uses(lax_module):
        def fn(a, b, j):
            return (
                lax_module.dynamic_slice(a, (j,), (2,)),
                lax_module.dynamic_update_slice(a, b, (j,)),
                lax_module.dynamic_update_slice(a, b, (1,)),
            )

        return fn

    ours = ri.jit(uses(lax))(*ri_args)
    theirs = jax.jit(uses(jax.lax))(*jax_args)
    assert [o.weak_type for o in ours] == [t.weak_type for t in theirs]


@pytest.mark.skipif(_jax_convert is None, reason="needs jax's private weak-type helper")
@pytest.mark.parametrize("operand_weak", [False, True])
@pytest.mark.parametrize("update_weak", [False, True])
def test_gather_scatter_weak_types_match_jax(operand_weak, update_weak):
    x, u, idx = np.ones((4,), np.float32), np.ones((2,), np.float32), np.array([0, 2], np.int32)
    rx = weak(x) if operand_weak else x
    ru = weak(u) if update_weak else u
    jx = jax_weak(x) if operand_weak else jnp.asarray(x)
    ju = jax_weak(u) if update_weak else jnp.asarray(u)
    assert lax.gather_along_axis(rx, idx).weak_type == jax_gather(jx, idx, 0, "clip").weak_type
    assert (
        lax.scatter_along_axis(rx, idx, ru).weak_type
        == jax_scatter(jax.lax.scatter, jx, idx, ju, 0, "drop").weak_type
    )
    assert (
        lax.scatter_add_along_axis(rx, idx, ru).weak_type
        == jax_scatter(jax.lax.scatter_add, jx, idx, ju, 0, "drop").weak_type
    )


# --- gather along one axis --------------------------------------------------------------

JAX_MODES = {
    "clip": jax.lax.GatherScatterMode.CLIP,
    "fill": jax.lax.GatherScatterMode.FILL_OR_DROP,
    "drop": jax.lax.GatherScatterMode.FILL_OR_DROP,
}


def _window_dims(operand_ndim: int, index_ndim: int, axis: int) -> tuple[int, ...]:
    """Where the operand's other dims land in the np.take layout of the result."""
    return tuple(range(axis)) + tuple(range(axis + index_ndim, operand_ndim - 1 + index_ndim))


def jax_gather(x, indices, axis, mode, fill_value=None):
    """np.take-layout gather through jax.lax.gather (no index wrapping)."""
    indices = jnp.asarray(indices)
    dnums = jax.lax.GatherDimensionNumbers(
        offset_dims=_window_dims(np.ndim(x), indices.ndim, axis),
        collapsed_slice_dims=(axis,),
        start_index_map=(axis,),
    )
    sizes = list(np.shape(x))
    sizes[axis] = 1
    return jax.lax.gather(
        x, indices[..., None], dnums, tuple(sizes), mode=JAX_MODES[mode], fill_value=fill_value
    )


def jax_scatter(scatter_fn, x, indices, updates, axis, mode):
    indices = jnp.asarray(indices)
    dnums = jax.lax.ScatterDimensionNumbers(
        update_window_dims=_window_dims(np.ndim(x), indices.ndim, axis),
        inserted_window_dims=(axis,),
        scatter_dims_to_operand_dims=(axis,),
    )
    return scatter_fn(x, indices[..., None], updates, dnums, mode=JAX_MODES[mode])


GATHER_SHAPES = [
    ((5,), (3,), 0),
    ((5,), (), 0),
    ((5,), (0,), 0),
    ((2, 6), (2, 3), 1),
    ((4, 3, 2), (5,), 1),
    ((4, 0, 2), (3,), 0),
]


def np_scatter(x, indices, updates, axis, mode, add=False):
    """The NumPy oracle for the scatters: fancy assignment (the last duplicate
    wins) or ``np.add.at``, after dropping or clamping out-of-range indices."""
    out = x.copy()
    size = x.shape[axis]
    indices = np.asarray(indices).astype(np.int64)
    if mode == "clip":
        indices, keep = np.clip(indices, 0, size - 1), np.ones(indices.shape, bool)
    else:
        keep = (indices >= 0) & (indices < size)
    lead = (slice(None),) * axis
    if add:
        np.add.at(out, lead + (indices[keep],), updates[lead + (keep,)])
    else:
        out[lead + (indices[keep],)] = updates[lead + (keep,)]
    return out


def random_indices(rng, size, index_shape, margin=3):
    return rng.integers(-margin, size + margin, size=index_shape).astype(np.int32)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape, index_shape, axis", GATHER_SHAPES)
def test_gather_clip(rng, dtype, shape, index_shape, axis):
    x = random_array(rng, shape, dtype)
    indices = random_indices(rng, shape[axis], index_shape)
    result = run_all_ways(lambda a, i: lax.gather_along_axis(a, i, axis), x, indices)
    assert_same(result, np.take(x, indices, axis=axis, mode="clip"))


@pytest.mark.parametrize("mode", ["clip", "fill"])
@pytest.mark.parametrize("shape, index_shape, axis", GATHER_SHAPES)
def test_gather_against_jax(rng, mode, shape, index_shape, axis):
    x = random_array(rng, shape, np.float32)
    indices = random_indices(rng, shape[axis], index_shape)
    result = run_all_ways(lambda a, i: lax.gather_along_axis(a, i, axis, mode=mode), x, indices)
    assert_same_values(result, jax_gather(x, indices, axis, mode))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_gather_fill_values_against_jax(rng, dtype):
    """The default fill (NaN, int min, uint max, True) and a given one."""
    x = random_array(rng, (4,), dtype)
    indices = np.array([-1, 0, 4, 3], np.int32)
    result = run_all_ways(lambda a, i: lax.gather_along_axis(a, i, mode="fill"), x, indices)
    assert_same_values(result, jax_gather(x, indices, 0, "fill"))
    fill = True if dtype == np.bool_ else 3
    result = lax.gather_along_axis(x, indices, mode="fill", fill_value=fill)
    assert_same_values(result, jax_gather(x, indices, 0, "fill", fill_value=fill))


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES, ids=str)
@pytest.mark.parametrize("mode", ["clip", "fill"])
def test_gather_index_dtypes(rng, index_dtype, mode):
    x = random_array(rng, (3, 7), np.float32)
    indices = np.array([[0, 6, 7, 200], [255, 1, 2, 3]]).astype(index_dtype)
    result = run_all_ways(lambda a, i: lax.gather_along_axis(a, i, 1, mode=mode), x, indices)
    assert_same_values(result, jax_gather(x, indices, 1, mode))


def test_gather_python_int_index_drops_the_axis(rng):
    x = random_array(rng, (3, 4), np.int32)
    assert_same(lax.gather_along_axis(x, 2, axis=-1), x[:, 2])


@st.composite
def one_axis_cases(draw):
    """(shape, axis, indices) with indices of rank 0-2, some out of range."""
    shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
    axis = draw(st.integers(0, len(shape) - 1))
    index_shape = draw(st.lists(st.integers(0, 3), max_size=2))
    count = int(np.prod(index_shape))
    flat = draw(st.lists(st.integers(-6, 6), min_size=count, max_size=count))
    return tuple(shape), axis, np.array(flat, np.int32).reshape(index_shape)


@HYPOTHESIS
@given(one_axis_cases())
def test_gather_random(case):
    shape, axis, indices = case
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    result = lax.gather_along_axis(x, indices, axis)
    assert_same(result, np.take(x, indices, axis=axis, mode="clip"))
    filled = lax.gather_along_axis(x, indices, axis, mode="fill", fill_value=-1.0)
    in_range = (indices >= 0) & (indices < shape[axis])
    keep = in_range.reshape((1,) * axis + indices.shape + (1,) * (len(shape) - axis - 1))
    assert_same(filled, np.where(keep, np.asarray(result), np.float32(-1)))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape, index_shape, axis", GATHER_SHAPES)
def test_scatter(rng, dtype, shape, index_shape, axis):
    x = random_array(rng, shape, dtype)
    indices = random_indices(rng, shape[axis], index_shape)
    updates = random_array(rng, shape[:axis] + index_shape + shape[axis + 1 :], dtype)
    fn = lambda a, i, u: lax.scatter_along_axis(a, i, u, axis)  # noqa: E731
    result = run_all_ways(fn, x, indices, updates)
    assert_same(result, np_scatter(x, indices, updates, axis, "drop"))


@pytest.mark.parametrize("dtype", DTYPES[1:], ids=DTYPE_IDS[1:])
@pytest.mark.parametrize("mode", ["drop", "clip"])
@pytest.mark.parametrize("shape, index_shape, axis", GATHER_SHAPES)
def test_scatter_add(rng, dtype, mode, shape, index_shape, axis):
    x = small_values(rng, shape, dtype)
    indices = random_indices(rng, shape[axis], index_shape, margin=2)
    updates = small_values(rng, shape[:axis] + index_shape + shape[axis + 1 :], dtype)
    fn = lambda a, i, u: lax.scatter_add_along_axis(a, i, u, axis, mode=mode)  # noqa: E731
    result = run_all_ways(fn, x, indices, updates)
    assert_same(result, np_scatter(x, indices, updates, axis, mode, add=True))


@pytest.mark.parametrize("shape, index_shape, axis", GATHER_SHAPES)
def test_scatter_against_jax(rng, shape, index_shape, axis):
    """JAX leaves the winner among repeated indices unspecified: unique ones here."""
    x = random_array(rng, shape, np.float32)
    count = int(np.prod(index_shape))
    out_of_range = [-1, shape[axis], -7, shape[axis] + 9]
    flat = np.concatenate([rng.permutation(shape[axis]), out_of_range])[:count]
    indices = rng.permutation(flat).reshape(index_shape).astype(np.int32)
    updates = random_array(rng, shape[:axis] + index_shape + shape[axis + 1 :], np.float32)
    result = lax.scatter_along_axis(x, indices, updates, axis)
    assert_same(result, jax_scatter(jax.lax.scatter, x, indices, updates, axis, "drop"))


@pytest.mark.parametrize("mode", ["drop", "clip"])
@pytest.mark.parametrize("shape, index_shape, axis", GATHER_SHAPES)
def test_scatter_add_against_jax(rng, mode, shape, index_shape, axis):
    x = random_array(rng, shape, np.int32)
    indices = random_indices(rng, shape[axis], index_shape, margin=2)
    updates = random_array(rng, shape[:axis] + index_shape + shape[axis + 1 :], np.int32)
    result = lax.scatter_add_along_axis(x, indices, updates, axis, mode=mode)
    assert_same(result, jax_scatter(jax.lax.scatter_add, x, indices, updates, axis, mode))


def test_scatter_add_wraps_integers():
    x, indices, updates = np.array([120, 0], np.int8), np.array([0, 0]), np.array([5, 5], np.int8)
    result = lax.scatter_add_along_axis(x, indices, updates)
    assert_same(result, jax_scatter(jax.lax.scatter_add, x, indices, updates, 0, "drop"))


def test_scatter_repeated_indices_last_wins():
    x = np.zeros(4, np.int32)
    result = lax.scatter_along_axis(x, np.array([[1, 3], [1, 9]]), np.array([[5, 6], [7, 8]]))
    assert_same(result, np.array([0, 7, 0, 6], np.int32))


def test_scatter_clip_mode(rng):
    x = np.zeros((2, 5), np.float32)
    indices = np.array([-4, 2, 11], np.int32)  # -> 0, 2, 4
    updates = np.arange(6, dtype=np.float32).reshape(2, 3)
    result = run_all_ways(
        lambda a, i, u: lax.scatter_along_axis(a, i, u, 1, mode="clip"), x, indices, updates
    )
    assert_same(result, jax_scatter(jax.lax.scatter, x, indices, updates, 1, "clip"))


@HYPOTHESIS
@given(one_axis_cases(), st.sampled_from(["drop", "clip"]))
def test_scatters_random(case, mode):
    shape, axis, indices = case
    x = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    updates_shape = shape[:axis] + indices.shape + shape[axis + 1 :]
    updates = np.arange(1, int(np.prod(updates_shape)) + 1, dtype=np.int32).reshape(updates_shape)
    added = lax.scatter_add_along_axis(x, indices, updates, axis, mode=mode)
    assert_same(added, np_scatter(x, indices, updates, axis, mode, add=True))
    written = lax.scatter_along_axis(x, indices, updates, axis, mode=mode)
    assert_same(written, np_scatter(x, indices, updates, axis, mode))


def test_gather_scatter_program():
    x, i = np.zeros((2, 3), np.float32), np.array([0, 2], np.int32)
    program = ri.make_program(
        lambda a, j: lax.scatter_add_along_axis(a, j, lax.gather_along_axis(a, j, 1), 1)
    )(x, i)
    ri.check_program(program)
    text = str(program)
    assert "gather_along_axis[axis=1, fill_value=None, mode='clip']" in text
    assert "scatter_add[axis=1, mode='drop']" in text


# --- errors -----------------------------------------------------------------------------

BAD = [(1, 2), "abc", None, object()]
BAD_IDS = ["tuple", "str", "None", "object"]


@pytest.mark.parametrize("bad", BAD, ids=BAD_IDS)
def test_bad_operand_types_name_primitive_and_position(bad):
    x, i = np.zeros((3,), np.float32), np.array([0], np.int32)
    cases = [
        (lambda: lax.dynamic_slice(bad, (0,), (1,)), "dynamic_slice", "0"),
        (lambda: lax.dynamic_update_slice(bad, x, (0,)), "dynamic_update_slice", "0"),
        (lambda: lax.dynamic_update_slice(x, bad, (0,)), "dynamic_update_slice", "1"),
        (lambda: lax.gather_along_axis(bad, i), "gather_along_axis", "0"),
        (lambda: lax.gather_along_axis(x, bad), "gather_along_axis", "1"),
        (lambda: lax.scatter_along_axis(x, bad, x), "scatter", "1"),
        (lambda: lax.scatter_add_along_axis(x, i, bad), "scatter_add", "2"),
    ]
    for call, name, position in cases:
        with pytest.raises(TypeError, match=rf"^{name}: argument at position {position} "):
            call()
    with pytest.raises(TypeError, match=r"^dynamic_slice: argument at position start_indices\[0\]"):
        lax.dynamic_slice(x, (bad,) if bad is not None else ("s",), (1,))


SHAPE_ERRORS = [
    (lambda: lax.dynamic_update_slice(np.zeros((2, 3)), np.zeros((3, 1)), (0, 0)),
     TypeError, "dynamic_update_slice", [r"\(3, 1\)", r"\(2, 3\)"]),
    (lambda: lax.dynamic_update_slice(np.zeros((2, 3)), np.zeros((3,)), (0, 0)),
     TypeError, "dynamic_update_slice", [r"\(3,\)", r"\(2, 3\)"]),
    (lambda: lax.dynamic_slice(np.zeros((2, 3)), (0, 0), (3, 1)),
     TypeError, "dynamic_slice", [r"\(3, 1\)", r"\(2, 3\)"]),
    (lambda: lax.scatter_along_axis(np.zeros((2, 3)), np.zeros(4, np.int32), np.zeros((2, 3))),
     TypeError, "scatter", [r"\(2, 3\)", r"\(4, 3\)", r"\(4,\)"]),
    (lambda: lax.gather_along_axis(np.zeros((2, 0)), np.zeros(1, np.int32), 1),
     TypeError, "gather", [r"\(2, 0\)"]),
]  # fmt: skip


@pytest.mark.parametrize("call, error, name, shapes", SHAPE_ERRORS)
def test_shape_errors_name_primitive_and_shapes(call, error, name, shapes):
    with pytest.raises(error) as info:
        call()
    message = str(info.value)
    assert message.startswith(name + ":"), message
    for shape in shapes:
        assert re.search(shape, message), message


X = np.zeros((3, 4), np.float32)
I32 = np.array([0, 1], np.int32)
PARAM_ERRORS = [
    (lambda: lax.dynamic_slice(X, (0,), (1, 1)), ValueError, "dynamic_slice: got 1 start ind"),
    (lambda: lax.dynamic_slice(X, (0, 0), (1,)), TypeError, "dynamic_slice: slice_sizes"),
    (lambda: lax.dynamic_slice(X, (0, 0), (1, -1)), TypeError, "dynamic_slice: slice_sizes"),
    (lambda: lax.dynamic_slice(X, (0.5, 0), (1, 1)), TypeError, "dynamic_slice: start indices"),
    (lambda: lax.dynamic_slice(X, (True, 0), (1, 1)), TypeError, "dynamic_slice: start indices"),
    (lambda: lax.dynamic_slice(X, (I32, 0), (1, 1)), TypeError, "dynamic_slice: start index 0 "),
    (lambda: lax.dynamic_slice(X, (np.int8(0), 0), (1, 1)), TypeError, "same type, got int8"),
    (lambda: lax.dynamic_slice(X, np.zeros((2, 1), np.int32), (1, 1)), ValueError, "1-D"),
    (lambda: lax.dynamic_update_slice(X, X.astype(np.int32), (0, 0)), TypeError, "same dtype"),
    (lambda: lax.dynamic_update_slice(X, X, (0,)), ValueError, "dynamic_update_slice: got 1"),
    (lambda: lax.gather_along_axis(X, I32, 2), ValueError, "gather_along_axis: axis 2 is out"),
    (lambda: lax.gather_along_axis(X, I32.astype(np.float32)), TypeError, "gather: indices mu"),
    (lambda: lax.gather_along_axis(X, I32, mode="wrap"), ValueError, "gather_along_axis: mode"),
    (lambda: lax.gather_along_axis(X, I32, fill_value=1.0), ValueError, "gather: fill_value is"),
    (lambda: lax.gather_along_axis(X, I32, mode="fill", fill_value="x"), TypeError, "fill_val"),
    (lambda: lax.scatter_along_axis(X, I32, X[:2], mode="fill"), ValueError, "scatter_along_a"),
    (lambda: lax.scatter_along_axis(X, I32, X[:2].astype(np.float16)), TypeError, "same dtype"),
    (lambda: lax.scatter_add_along_axis(X > 0, I32, X[:2] > 0), TypeError, "scatter_add: does"),
    (lambda: lax.scatter_along_axis(np.float32(1), I32, X), ValueError, "scatter: axis 0 out"),
]


@pytest.mark.parametrize("call, error, message", PARAM_ERRORS)
def test_param_errors(call, error, message):
    with pytest.raises(error, match=re.escape(message)):
        call()


def test_bad_start_index_under_jit_names_the_primitive():
    fn = ri.jit(lambda a, i: lax.dynamic_slice(a, (i, 0), (1, 1)))
    with pytest.raises(TypeError, match="dynamic_slice: start indices must be integers"):
        fn(X, np.float32(1))
    with pytest.raises(TypeError, match=r"dynamic_slice: start index 0 must be a scalar"):
        fn(X, I32)


def test_check_program_rechecks_params():
    program = ri.make_program(lambda a, i: lax.gather_along_axis(a, i, 1))(X, I32)
    program.eqns[0].params["mode"] = "wrap"
    with pytest.raises(ValueError, match="gather: mode"):
        ri.check_program(program)


def test_primitive_names():
    prims = [
        indexing.dynamic_slice_p,
        indexing.dynamic_update_slice_p,
        indexing.gather_along_axis_p,
        indexing.scatter_p,
        indexing.scatter_add_p,
    ]
    assert [p.name for p in prims] == [
        "dynamic_slice",
        "dynamic_update_slice",
        "gather_along_axis",  # not "gather": that names lax.gather's general_gather
        "scatter",
        "scatter_add",
    ]


def test_grad_of_set_into_a_constant_array_matches_jax():
    # the scatter's operand is a constant (not a tracer) in the transpose
    idx = np.array([1, 3])
    t = np.array([1.5, -2.0], np.float32)

    def loss(lib, np_):
        return lambda v: (np_.zeros(4, np.float32).at[idx].set(v * 2.0) ** 2).sum()

    got = ri.grad(loss(ri, rnp))(t)
    want = jax.grad(loss(jax, jnp))(t)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
