"""The structural primitives against NumPy and jax.lax (the oracles).

Each op runs eagerly (a refimpl Array comes back), under ``ri.jit``, and its
traced Program passes ``ri.check_program``. Structural ops are exact, so the
results are compared bit for bit.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import refimpl as ri
from refimpl import lax
from refimpl.backends.ref.arrays import RefArray
from refimpl.primitives import structural

jax.config.update("jax_platforms", "cpu")

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = [
    np.dtype(d) for d in (np.bool_, np.int8, np.int32, np.uint8, np.float16, BF16, np.float32)
] + [np.dtype(np.complex64)]
DTYPE_IDS = [d.name for d in DTYPES]
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


def as_bits(x) -> np.ndarray:
    """Unsigned ints with the same bits (NaN payloads and -0.0 compare exactly)."""
    x = np.ascontiguousarray(np.atleast_1d(np.asarray(x)))
    if x.dtype == np.bool_:
        return x
    if x.dtype.kind == "c":
        x = x.view(np.dtype(f"f{x.dtype.itemsize // 2}"))
    return x.view(np.dtype(f"u{x.dtype.itemsize}"))


def assert_same(actual, expected) -> None:
    """Same dtype, shape and bits."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    np.testing.assert_array_equal(as_bits(actual), as_bits(expected))


def run_all_ways(fn, *args):
    """``fn(*args)`` eagerly and under jit (same bits); its Program type-checks.
    Returns the eager result as a NumPy array."""
    eager = fn(*args)
    assert isinstance(eager, ri.Array), type(eager)
    jitted = ri.jit(fn)(*args)
    assert isinstance(jitted, ri.Array), type(jitted)
    assert_same(jitted, eager)
    assert jitted.weak_type == eager.weak_type
    program = ri.make_program(fn)(*args)
    ri.check_program(program)
    for eqn in program.eqns:  # params are plain and hashable, so Programs compare well
        hash(tuple(sorted(eqn.params.items())))
    return np.asarray(eager)


def weak(array: np.ndarray) -> RefArray:
    return RefArray(np.asarray(array), weak_type=True)


def jax_weak(array: np.ndarray):
    return _jax_convert(jnp.asarray(array), array.dtype, weak_type=True)


def bad_operands():
    return [(1, 2), "abc", None, object()]


# --- squeeze and expand_dims ----------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize(
    "shape, dims",
    [((1,), (0,)), ((1, 3, 1), (0, 2)), ((2, 1, 0), (-2,)), ((1, 1), ()), ((), ())],
)
def test_squeeze(rng, dtype, shape, dims):
    x = random_array(rng, shape, dtype)
    result = run_all_ways(lambda a: lax.squeeze(a, dims), x)
    assert_same(result, np.squeeze(x, axis=dims))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize(
    "shape, dims", [((), (0,)), ((2, 3), (0, 3)), ((2, 0), (-1,)), ((3,), (0, -1, 1))]
)
def test_expand_dims(rng, dtype, shape, dims):
    x = random_array(rng, shape, dtype)
    result = run_all_ways(lambda a: lax.expand_dims(a, dims), x)
    assert_same(result, np.expand_dims(x, dims))
    assert result.shape == jax.lax.expand_dims(jnp.zeros(shape), dims).shape


@HYPOTHESIS
@given(st.lists(st.integers(0, 3), max_size=4), st.data())
def test_squeeze_expand_dims_random(shape, data):
    x = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    ones = [d for d, size in enumerate(shape) if size == 1]
    dims = data.draw(st.lists(st.sampled_from(ones), unique=True) if ones else st.just([]))
    assert_same(lax.squeeze(x, dims), np.squeeze(x, axis=tuple(dims)))
    new = data.draw(st.lists(st.integers(-len(shape) - 3, len(shape) + 2), max_size=2))
    try:
        expected = np.expand_dims(x, tuple(new))
    except ValueError:  # out of range or repeated (np.exceptions.AxisError is one)
        with pytest.raises(ValueError, match="expand_dims: dimensions"):
            lax.expand_dims(x, new)
    else:
        assert_same(lax.expand_dims(x, new), expected)


# --- transpose ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize(
    "shape, perm", [((), ()), ((4,), (0,)), ((2, 3), (1, 0)), ((2, 0, 3), (2, 0, 1))]
)
def test_transpose(rng, dtype, shape, perm):
    x = random_array(rng, shape, dtype)
    assert_same(run_all_ways(lambda a: lax.transpose(a, perm), x), np.transpose(x, perm))


@HYPOTHESIS
@given(st.lists(st.integers(0, 3), max_size=5), st.randoms())
def test_transpose_random(shape, random):
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    perm = list(range(len(shape)))
    random.shuffle(perm)
    assert_same(lax.transpose(x, perm), np.transpose(x, perm))


# --- rev --------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize(
    "shape, dims", [((), ()), ((5,), (0,)), ((2, 3), (1,)), ((2, 3), (0, 1)), ((2, 0), (1,))]
)
def test_rev(rng, dtype, shape, dims):
    x = random_array(rng, shape, dtype)
    assert_same(run_all_ways(lambda a: lax.rev(a, dims), x), np.flip(x, dims))


@HYPOTHESIS
@given(st.lists(st.integers(0, 4), max_size=4), st.data())
def test_rev_random(shape, data):
    x = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    dims = data.draw(
        st.lists(st.integers(0, len(shape) - 1), unique=True) if shape else st.just([])
    )
    assert_same(lax.rev(x, dims), np.flip(x, tuple(dims)))


# --- slice ------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize(
    "shape, start, limit, strides",
    [
        ((), (), (), None),
        ((6,), (1,), (5,), None),
        ((6,), (1,), (6,), (2,)),
        ((4, 5), (0, 1), (4, 5), (3, 2)),
        ((4, 5), (2, 5), (2, 5), None),
        ((0, 3), (0, 1), (0, 3), (1, 1)),
    ],
)
def test_slice(rng, dtype, shape, start, limit, strides):
    x = random_array(rng, shape, dtype)
    steps = strides or (1,) * len(shape)
    expected = x[tuple(slice(*d) for d in zip(start, limit, steps, strict=True))]
    result = run_all_ways(lambda a: lax.slice(a, start, limit, strides), x)
    assert_same(result, expected)


@st.composite
def slice_cases(draw):
    shape = draw(st.lists(st.integers(0, 6), max_size=4))
    start, limit, stride = [], [], []
    for size in shape:
        lo = draw(st.integers(0, size))
        start.append(lo)
        limit.append(draw(st.integers(lo, size)))
        stride.append(draw(st.integers(1, 4)))
    return shape, start, limit, stride


@HYPOTHESIS
@given(slice_cases())
def test_slice_random(case):
    shape, start, limit, stride = case
    x = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    expected = x[tuple(slice(*d) for d in zip(start, limit, stride, strict=True))]
    assert_same(lax.slice(x, start, limit, stride), expected)


def test_slice_in_dim_and_index_in_dim(rng):
    x = random_array(rng, (4, 5), np.float32)
    assert_same(lax.slice_in_dim(x, 1, None, 2, axis=1), x[:, 1::2])
    assert_same(lax.slice_in_dim(x, -3, -1, axis=0), x[-3:-1])
    assert_same(lax.index_in_dim(x, -1, axis=1), x[:, -1:])
    assert_same(lax.index_in_dim(x, 2, keepdims=False), x[2])
    with pytest.raises(IndexError, match="index_in_dim"):
        lax.index_in_dim(x, 4)


# --- pad --------------------------------------------------------------------------------


def np_pad_nonnegative(x, value, config):
    """The oracle for lo, hi >= 0: interior padding by scattering into a grid,
    then np.pad for the edges."""
    interior_shape = [max(n + (n - 1) * i, 0) for n, (_, _, i) in zip(x.shape, config, strict=True)]
    grid = np.full(interior_shape, value, dtype=x.dtype)
    grid[tuple(slice(None, None, i + 1) for _, _, i in config)] = x
    edges = [(lo, hi) for lo, hi, _ in config]
    if not edges:
        return grid
    return np.pad(grid, edges, mode="constant", constant_values=value)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize(
    "shape, config",
    [
        ((), ()),
        ((3,), ((1, 2, 0),)),
        ((3,), ((0, 0, 2),)),
        ((2, 3), ((1, 0, 1), (2, 1, 3))),
        ((0, 2), ((1, 1, 2), (0, 1, 0))),
    ],
)
def test_pad_nonnegative(rng, dtype, shape, config):
    x = random_array(rng, shape, dtype)
    value = random_array(rng, (), dtype)
    result = run_all_ways(lambda a, v: lax.pad(a, v, config), x, value)
    assert_same(result, np_pad_nonnegative(x, value, config))


NEGATIVE_PADS = [
    ((5,), ((-2, 0, 0),)),
    ((5,), ((0, -5, 0),)),
    ((3,), ((-1, -1, 2),)),
    ((2, 3), ((-1, -1, 2), (-1, 2, 1))),
    ((4, 2), ((-3, 1, 1), (1, -2, 3))),
    ((0,), ((-1, 2, 3),)),
    ((1,), ((1, 1, 3),)),
]


@pytest.mark.parametrize("dtype", [np.int32, np.float32, BF16, np.bool_], ids=str)
@pytest.mark.parametrize("shape, config", NEGATIVE_PADS)
def test_pad_negative_and_interior_against_jax(rng, dtype, shape, config):
    x = random_array(rng, shape, dtype)
    value = random_array(rng, (), dtype)
    result = run_all_ways(lambda a, v: lax.pad(a, v, config), x, value)
    assert_same(result, jax.lax.pad(x, value, config))


def test_pad_by_hand():
    """Interior padding happens first, then negative edges crop it (XLA's order)."""
    x = np.array([1, 2, 3], np.int32)
    # interior 1 gives 1 0 2 0 3; lo=-2 drops "1 0", hi=1 appends one 0
    assert_same(lax.pad(x, np.int32(0), [(-2, 1, 1)]), np.array([2, 0, 3, 0], np.int32))
    assert_same(lax.pad(x, np.int32(9), [(-4, -1, 1)]), np.empty(0, np.int32))


@st.composite
def pad_cases(draw):
    shape = draw(st.lists(st.integers(0, 4), max_size=3))
    config = []
    for size in shape:
        interior = draw(st.integers(0, 2))
        full = size + max(size - 1, 0) * interior
        lo = draw(st.integers(-full, 3))
        hi = draw(st.integers(-(full + lo) if full + lo > 0 else 0, 3))
        config.append((lo, hi, interior))
    return shape, config


@HYPOTHESIS
@given(pad_cases())
def test_pad_random_against_jax(case):
    shape, config = case
    x = np.arange(1, int(np.prod(shape)) + 1, dtype=np.float32).reshape(shape)
    assert_same(lax.pad(x, np.float32(-1), config), jax.lax.pad(x, np.float32(-1), config))


def test_pad_python_scalar_padding_value():
    x = np.ones((2,), np.float32)
    assert_same(lax.pad(x, 0, [(1, 0, 0)]), np.array([0, 1, 1], np.float32))
    i8 = np.ones((2,), np.int8)
    assert_same(lax.pad(i8, 7, [(0, 1, 0)]), np.array([1, 1, 7], np.int8))
    with pytest.raises(TypeError, match="pad.*same dtype"):
        lax.pad(i8, 0.5, [(0, 1, 0)])


# --- concatenate --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize(
    "shapes, dim",
    [([(3,)], 0), ([(2,), (0,), (3,)], 0), ([(2, 3), (2, 1)], 1), ([(1, 2), (3, 2)], 0)],
)
def test_concatenate(rng, dtype, shapes, dim):
    xs = [random_array(rng, s, dtype) for s in shapes]
    result = run_all_ways(lambda *a: lax.concatenate(a, dim), *xs)
    assert_same(result, np.concatenate(xs, axis=dim))


@HYPOTHESIS
@given(st.lists(st.integers(0, 3), min_size=1, max_size=3), st.data())
def test_concatenate_random(shape, data):
    dim = data.draw(st.integers(0, len(shape) - 1))
    sizes = data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=4))
    xs = []
    for n, size in enumerate(sizes):
        piece_shape = list(shape)
        piece_shape[dim] = size
        xs.append(np.full(piece_shape, n, np.int8))
    assert_same(lax.concatenate(xs, dim), np.concatenate(xs, axis=dim))


# --- iota ---------------------------------------------------------------------------------

IOTA_DTYPES = [d for d in DTYPES if d != np.bool_]


@pytest.mark.parametrize("dtype", IOTA_DTYPES, ids=[d.name for d in IOTA_DTYPES])
@pytest.mark.parametrize("size", [0, 1, 7])
def test_iota(dtype, size):
    result = run_all_ways(lambda: lax.iota(dtype, size))
    assert_same(result, np.arange(size).astype(dtype))
    assert not lax.iota(dtype, size).weak_type


@pytest.mark.parametrize("dtype", IOTA_DTYPES, ids=[d.name for d in IOTA_DTYPES])
@pytest.mark.parametrize("shape, dimension", [((2, 3), 0), ((2, 3), 1), ((4, 0, 2), 2)])
def test_broadcasted_iota(dtype, shape, dimension):
    result = run_all_ways(lambda: lax.broadcasted_iota(dtype, shape, dimension))
    assert_same(result, jax.lax.broadcasted_iota(dtype, shape, dimension))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.float16, BF16], ids=str)
def test_iota_wraps_and_rounds_like_jax(dtype):
    """Integers wrap around; float16/bfloat16 round to nearest even."""
    assert_same(lax.iota(dtype, 2100), jax.lax.iota(dtype, 2100))


def test_iota_program_params():
    program = ri.make_program(lambda: lax.broadcasted_iota(np.float32, [2, 3], 1))()
    (eqn,) = program.eqns
    assert eqn.primitive.name == "iota"
    assert eqn.params == {"dtype": np.dtype(np.float32), "shape": (2, 3), "dimension": 1}
    assert "iota[dimension=1, dtype=f32, shape=(2, 3)]" in str(program)


def test_iota_canonicalizes_dtype():
    assert lax.iota(np.int64, 3).dtype == np.int32  # x64 off


# --- types, programs and params ----------------------------------------------------------

KEEPS_OPERAND_TYPE = [
    ("squeeze", lambda a: lax.squeeze(lax.expand_dims(a, (0,)), (0,))),
    ("expand_dims", lambda a: lax.expand_dims(a, (1,))),
    ("transpose", lambda a: lax.transpose(a, (1, 0))),
    ("rev", lambda a: lax.rev(a, (0,))),
    ("slice", lambda a: lax.slice(a, (0, 1), (2, 3))),
    ("reshape", lambda a: lax.reshape(a, (3, 2))),
    ("broadcast_in_dim", lambda a: lax.broadcast_in_dim(a, (4, 2, 3), (1, 2))),
]


@pytest.mark.parametrize("name, fn", KEEPS_OPERAND_TYPE, ids=[n for n, _ in KEEPS_OPERAND_TYPE])
@pytest.mark.parametrize("weak_input", [False, True])
def test_keeps_dtype_and_weak_type(rng, name, fn, weak_input):
    x = random_array(rng, (2, 3), np.float32)
    arg = weak(x) if weak_input else x
    assert fn(arg).weak_type == weak_input
    assert fn(arg).dtype == np.float32
    assert ri.jit(fn)(arg).weak_type == weak_input
    assert ri.eval_shape(fn, arg).weak_type == weak_input


@pytest.mark.skipif(_jax_convert is None, reason="needs jax's private weak-type helper")
@pytest.mark.parametrize("operand_weak", [False, True])
@pytest.mark.parametrize("other_weak", [False, True])
def test_pad_and_concatenate_weak_types_match_jax(operand_weak, other_weak):
    x, v = np.ones((2, 3), np.float32), np.float32(0)
    rx = weak(x) if operand_weak else x
    jx = jax_weak(x) if operand_weak else jnp.asarray(x)
    rv = weak(np.asarray(v)) if other_weak else v
    jv = jax_weak(np.asarray(v)) if other_weak else jnp.asarray(v)
    config = [(1, 0, 0), (0, 1, 1)]
    assert lax.pad(rx, rv, config).weak_type == jax.lax.pad(jx, jv, config).weak_type
    ry = weak(x) if other_weak else x
    jy = jax_weak(x) if other_weak else jnp.asarray(x)
    assert lax.concatenate([rx, ry], 0).weak_type == jax.lax.concatenate([jx, jy], 0).weak_type


def test_python_scalar_operand_is_weak():
    assert lax.expand_dims(2.0, (0,)).weak_type
    assert lax.transpose(2.0, ()).weak_type
    assert lax.pad(2.0, 0.0, ()).weak_type


def test_params_are_plain_tuples():
    def fn(a):
        a = lax.transpose(a, np.array([1, 0]))
        a = lax.slice(a, [np.int64(0), 0], [3, 2], [1, np.int32(1)])
        a = lax.pad(a, 0.0, [[1, 0, 0], np.array([0, 1, 1])])
        return lax.rev(a, [0])

    program = ri.make_program(fn)(np.ones((2, 3), np.float32))
    ri.check_program(program)
    for eqn in program.eqns:
        for value in eqn.params.values():
            flat = [value] if not isinstance(value, tuple) else list(value)
            for item in flat:
                items = item if isinstance(item, tuple) else (item,)
                assert all(type(i) is int for i in items if i is not None), eqn
    text = str(program)
    assert "transpose[permutation=(1, 0)]" in text
    assert "pad[padding_config=((1, 0, 0), (0, 1, 1))]" in text
    assert "slice[limit_indices=(3, 2), start_indices=(0, 0), strides=(1, 1)]" in text


def test_jit_cache_hit_for_same_params(rng):
    calls = []

    def fn(a):
        calls.append(1)
        return lax.concatenate([lax.rev(a, (0,)), a], 0)

    jitted = ri.jit(fn)
    x = random_array(rng, (2, 3), np.int32)
    jitted(x)
    jitted(x + 1)
    assert len(calls) == 1


# --- errors -------------------------------------------------------------------------------

OPERAND_CALLS = {
    "squeeze": lambda a: lax.squeeze(a, ()),
    "expand_dims": lambda a: lax.expand_dims(a, (0,)),
    "transpose": lambda a: lax.transpose(a, ()),
    "rev": lambda a: lax.rev(a, ()),
    "slice": lambda a: lax.slice(a, (), ()),
    "pad": lambda a: lax.pad(a, np.float32(0), ()),
    "concatenate": lambda a: lax.concatenate([a], 0),
    "reshape": lambda a: lax.reshape(a, ()),
    "broadcast_in_dim": lambda a: lax.broadcast_in_dim(a, (), ()),
}


@pytest.mark.parametrize("name", OPERAND_CALLS)
@pytest.mark.parametrize("bad", bad_operands(), ids=["tuple", "str", "None", "object"])
def test_bad_operand_type(name, bad):
    with pytest.raises(TypeError, match=rf"{name}: argument at position 0 "):
        OPERAND_CALLS[name](bad)
    with pytest.raises(TypeError, match=rf"{name}: argument at position 0 "):
        ri.jit(lambda: OPERAND_CALLS[name](bad))()


@pytest.mark.parametrize("bad", bad_operands(), ids=["tuple", "str", "None", "object"])
def test_bad_operand_in_later_position(bad):
    x = np.zeros((2,), np.float32)
    with pytest.raises(TypeError, match=r"pad: argument at position 1 "):
        lax.pad(x, bad, [(0, 0, 0)])
    with pytest.raises(TypeError, match=r"concatenate: argument at position 2 "):
        lax.concatenate([x, x, bad], 0)


SHAPE_ERRORS = [
    ("concatenate", lambda: lax.concatenate([np.zeros((2, 3)), np.zeros((2, 2))], 0),
     TypeError, [r"\(2, 3\)", r"\(2, 2\)"]),
    ("concatenate", lambda: lax.concatenate([np.zeros((2, 3)), np.zeros((3,))], 0),
     TypeError, [r"\(2, 3\)", r"\(3,\)"]),
    ("pad", lambda: lax.pad(np.zeros((2, 3), np.float32), np.zeros(2, np.float32),
                            [(0, 0, 0)] * 2), ValueError, [r"\(2,\)", r"\(2, 3\)"]),
    ("squeeze", lambda: lax.squeeze(np.zeros((2, 3)), (0,)), ValueError, [r"\(2, 3\)"]),
    ("transpose", lambda: lax.transpose(np.zeros((2, 3)), (0,)), TypeError, [r"\(2, 3\)"]),
    ("slice", lambda: lax.slice(np.zeros((2, 3)), (0, 0), (3, 3)), TypeError, [r"\(2, 3\)"]),
]  # fmt: skip


@pytest.mark.parametrize("name, call, error, shapes", SHAPE_ERRORS)
def test_shape_errors_name_primitive_and_shapes(name, call, error, shapes):
    with pytest.raises(error) as info:
        call()
    assert str(info.value).startswith(name)
    for shape in shapes:
        assert re.search(shape, str(info.value)), str(info.value)


PARAM_ERRORS = [
    (lambda x: lax.transpose(x, (0, 0)), TypeError, "transpose: permutation"),
    (lambda x: lax.transpose(x, (-1, 0)), TypeError, "transpose: permutation"),
    (lambda x: lax.transpose(x, (0, 1, 2)), TypeError, "transpose: permutation"),
    (lambda x: lax.transpose(x, "ab"), TypeError, "transpose: permutation must be a sequence"),
    (lambda x: lax.rev(x, (2,)), TypeError, "rev: dimensions"),
    (lambda x: lax.rev(x, (0, 0)), TypeError, "rev: dimensions must be unique"),
    (lambda x: lax.rev(x, (-1,)), TypeError, "rev: dimensions"),
    (lambda x: lax.squeeze(x, (5,)), ValueError, "squeeze: dimensions: axis 5 is out of bounds"),
    (lambda x: lax.squeeze(x, (0, -2)), ValueError, "squeeze: dimensions are not unique"),
    (lambda x: lax.expand_dims(x, (0, 0)), ValueError, "expand_dims: dimensions are not unique"),
    (lambda x: lax.expand_dims(x, (4,)), ValueError, "expand_dims: dimensions: axis 4 is out"),
    (lambda x: lax.slice(x, (0,), (1, 1)), TypeError, "slice: start_indices"),
    (lambda x: lax.slice(x, (0, 0), (1, 1), (1,)), TypeError, "slice: strides"),
    (lambda x: lax.slice(x, (1, 0), (0, 1)), TypeError, "slice: start_indices"),
    (lambda x: lax.slice(x, (-1, 0), (1, 1)), TypeError, "slice: start_indices"),
    (lambda x: lax.slice(x, (0, 0), (1, 1), (0, 1)), ValueError, "slice: strides must be pos"),
    (lambda x: lax.slice(x, (0.5, 0), (1, 1)), TypeError, "slice: start_indices must be a seq"),
    (lambda x: lax.pad(x, np.float32(0), [(0, 0, 0)]), ValueError, "pad: padding_config"),
    (lambda x: lax.pad(x, np.float32(0), [(0, 0)] * 2), ValueError, "pad: padding_config"),
    (lambda x: lax.pad(x, np.float32(0), [(0, 0, -1)] * 2), ValueError, "pad: interior"),
    (lambda x: lax.pad(x, np.float32(0), [(-2, -1, 0)] * 2), ValueError, "for padding_config"),
    (lambda x: lax.pad(x, np.int32(0), [(0, 0, 0)] * 2), TypeError, "pad: operand and padd"),
    (lambda x: lax.concatenate([x, x.astype(np.int32)], 0), TypeError, "concatenate: operands"),
    (lambda x: lax.concatenate([x, x], 2), TypeError, "concatenate: dimension 2 out of range"),
    (lambda x: lax.concatenate([x, x], -1), TypeError, "concatenate: dimension -1 out of range"),
    (lambda x: lax.concatenate([], 0), ValueError, "concatenate: requires at least one"),
    (lambda x: lax.concatenate(x, 0), TypeError, "concatenate: operands must be a sequence"),
    (lambda x: lax.concatenate([x, x], 0.0), TypeError, "concatenate: dimension must be an int"),
    (lambda x: lax.iota(np.bool_, 3), TypeError, "iota: dtype must be an integer, floating"),
    (lambda x: lax.iota(np.int32, -1), TypeError, "iota: negative dimension"),
    (lambda x: lax.iota(np.int32, 2.0), TypeError, "iota: size must be an int"),
    (lambda x: lax.iota("not a dtype", 2), TypeError, "not a dtype"),
    (lambda x: lax.broadcasted_iota(np.int32, (2, 3), 2), ValueError, "iota: dimension 2"),
    (lambda x: lax.broadcasted_iota(np.int32, (2, 3), -1), ValueError, "iota: dimension -1"),
]


@pytest.mark.parametrize("call, error, message", PARAM_ERRORS)
def test_param_errors(call, error, message):
    x = np.zeros((1, 3), np.float32)
    with pytest.raises(error, match=message.replace("(", r"\(")):
        call(x)
    with pytest.raises(error, match=message.replace("(", r"\(")):
        ri.jit(call)(x)


def test_bad_params_in_a_program_fail_check_program():
    """abstract_eval re-checks params, so a hand-edited equation is caught."""
    program = ri.make_program(lambda a: lax.transpose(a, (1, 0)))(np.zeros((2, 3)))
    program.eqns[0].params["permutation"] = (0, 0)
    with pytest.raises(TypeError, match="transpose: permutation"):
        ri.check_program(program)


def test_primitive_names():
    names = {
        p.name
        for p in (
            structural.squeeze_p,
            structural.transpose_p,
            structural.rev_p,
            structural.slice_p,
            structural.pad_p,
            structural.concatenate_p,
            structural.iota_p,
        )
    }
    assert names == {"squeeze", "transpose", "rev", "slice", "pad", "concatenate", "iota"}
