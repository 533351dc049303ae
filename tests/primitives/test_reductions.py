"""Reductions, argmax/argmin, cumulative ops and sort against JAX's lax (the oracle).

Every op runs eagerly and under ``ri.jit`` (which must agree bit for bit), and
its traced program passes ``ri.check_program``. Integer and bool results are
compared exactly; float results with a tolerance that grows with the number of
terms combined (XLA adds in another order, and for float16/bfloat16 it
accumulates in the narrow type where refimpl uses float32).
"""

from __future__ import annotations

import jax
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import refimpl as ri
from refimpl import dtypes, lax
from refimpl.primitives.reductions import cummin_p


class _Opaque:
    """An arbitrary non-array object whose repr (the test id) is the same in every process."""

    def __repr__(self) -> str:
        return "<opaque object>"


jax.config.update("jax_platforms", "cpu")

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32, C64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.complex64)
I8, I32, U8, BOOL = np.dtype(np.int8), np.dtype(np.int32), np.dtype(np.uint8), np.dtype(bool)
FLOATS = [F16, BF16, F32]
INTS = [I8, I32, U8]
EPS = {F16: 2.0**-10, BF16: 2.0**-7, F32: 2.0**-23, C64: 2.0**-23}

# (shape, axes): rank 0, zero-size dims, no axes, all axes, unsorted axes
SHAPE_AXES = [
    ((), ()),
    ((5,), (0,)),
    ((0,), (0,)),
    ((3, 4), ()),
    ((3, 4), (1,)),
    ((3, 4), (0, 1)),
    ((2, 0, 3), (1,)),
    ((2, 0, 3), (0, 2)),
    ((2, 3, 4), (2, 0)),
]

BAD_OPERANDS = [(1, 2), "abc", None, _Opaque()]


def random_array(rng, shape, dtype, low=-100, high=100):
    dtype = np.dtype(dtype)
    if dtype == BOOL:
        return rng.random(shape) < 0.5
    if dtypes.is_integer(dtype):
        info = np.iinfo(dtype)
        values = rng.integers(max(info.min, low), min(info.max, high), size=shape, endpoint=True)
        return values.astype(dtype)
    if dtypes.is_complex(dtype):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return (rng.standard_normal(shape) * 3).astype(dtype)


def bits(x):
    x = np.atleast_1d(np.asarray(x))
    return x.view(np.dtype(f"u{x.dtype.itemsize}")) if x.dtype.itemsize <= 8 else x.view(np.uint8)


def run_both(fn, *args):
    """``fn`` eagerly and under jit: the same bits; its program type-checks."""
    eager = fn(*args)
    jitted = ri.jit(fn)(*args)
    eager_leaves, jitted_leaves = ri.tree_leaves(eager), ri.tree_leaves(jitted)
    assert len(eager_leaves) == len(jitted_leaves)
    for e, j in zip(eager_leaves, jitted_leaves, strict=True):
        assert isinstance(e, ri.Array)
        np.testing.assert_array_equal(bits(e), bits(j))
    ri.check_program(ri.make_program(fn)(*args))
    return ri.tree_map(np.asarray, eager)


def assert_close(actual, expected, operand_dtype, terms=1, context=""):
    """Exact for ints/bools; for floats ``terms`` roundings of ``operand_dtype``."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, (context, actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (context, actual.shape, expected.shape)
    if not dtypes.is_inexact(expected.dtype):
        np.testing.assert_array_equal(actual, expected, err_msg=context)
        return
    wide = np.complex128 if dtypes.is_complex(expected.dtype) else np.float64
    actual, expected = actual.astype(wide), expected.astype(wide)
    finite = np.isfinite(expected)
    scale = np.max(np.abs(expected[finite]), initial=1.0)
    eps = EPS[np.dtype(operand_dtype)]
    atol = 2 * eps * scale * max(terms, 1)
    np.testing.assert_allclose(
        actual, expected, rtol=4 * eps, atol=atol, equal_nan=True, err_msg=context
    )


def jax_eval(fn, *args):
    return np.asarray(jax.jit(fn)(*args))


def jax_many(fns, argss):
    """``[fns[i](*argss[i]) ...]`` computed by JAX in ONE compiled call: a compile
    per case would dominate this file's run time."""
    # NumPy inputs go straight to the jitted function: jnp.asarray would compile
    # a small program per shape
    inputs = [tuple(args) for args in argss]
    outs = jax.jit(lambda ins: [fn(*args) for fn, args in zip(fns, ins, strict=True)])(inputs)
    return ri.tree_map(np.asarray, outs)


# --- reduce_sum / prod / max / min / and / or -------------------------------------------

REDUCE_DTYPES = {
    "reduce_sum": INTS + FLOATS + [C64],
    "reduce_prod": INTS + FLOATS + [C64],
    "reduce_max": [BOOL] + INTS + FLOATS,
    "reduce_min": [BOOL] + INTS + FLOATS,
    "reduce_and": [BOOL] + INTS,
    "reduce_or": [BOOL] + INTS,
}


@pytest.mark.parametrize("name", list(REDUCE_DTYPES))
def test_reduction_matches_jax(name, rng):
    cases, inputs = [], []
    for dtype in REDUCE_DTYPES[name]:
        for shape, axes in SHAPE_AXES:
            cases.append((dtype, shape, axes))
            if name == "reduce_prod" and dtypes.is_inexact(dtype):
                inputs.append(rng.uniform(0.5, 1.5, shape).astype(dtype))  # stays in range
            else:
                inputs.append(random_array(rng, shape, dtype))
    expected = jax_many(
        [lambda a, axes=axes: getattr(jax.lax, name)(a, axes) for _, _, axes in cases],
        [(x,) for x in inputs],
    )
    for (dtype, shape, axes), x, exp in zip(cases, inputs, expected, strict=True):
        out = run_both(lambda a, axes=axes: getattr(lax, name)(a, axes), x)
        terms = int(np.prod([shape[a] for a in axes]))
        assert_close(out, exp, dtype, terms, context=f"{name} {dtype} {shape} {axes}")


def test_zero_size_reductions_give_the_identity():
    cases = []
    for dtype in [BOOL, I8, U8, I32, F16, BF16, F32, C64]:
        identities = {
            "reduce_max": dtypes.min_value(dtype),
            "reduce_min": dtypes.max_value(dtype),
        }
        if dtype != BOOL:
            identities.update(reduce_sum=0, reduce_prod=1)
        if dtype == BOOL or dtypes.is_integer(dtype):
            identities.update(reduce_and=np.invert(dtype.type(0)), reduce_or=0)
        cases += [(dtype, name, identity) for name, identity in identities.items()]
    expected = jax_many(
        [lambda a, name=name: getattr(jax.lax, name)(a, (1,)) for _, name, _ in cases],
        [(np.zeros((2, 0), dtype),) for dtype, _, _ in cases],
    )
    for (dtype, name, identity), exp in zip(cases, expected, strict=True):
        out = np.asarray(getattr(lax, name)(np.zeros((2, 0), dtype), (1,)))
        np.testing.assert_array_equal(out, np.full((2,), identity, dtype), err_msg=name)
        np.testing.assert_array_equal(out, exp, err_msg=name)


def test_integer_sum_and_product_wrap_around():
    x = np.array([100, 100, 100], np.int8)
    np.testing.assert_array_equal(np.asarray(lax.reduce_sum(x, (0,))), np.int8(44))
    np.testing.assert_array_equal(np.asarray(lax.reduce_prod(x, (0,))), np.int8(64))
    u = np.array([200, 100], np.uint8)
    np.testing.assert_array_equal(np.asarray(lax.reduce_sum(u, (0,))), np.uint8(44))


@pytest.mark.parametrize("dtype", [F16, BF16], ids=str)
def test_low_precision_sums_accumulate_in_float32(dtype):
    # a naive running sum in bfloat16 stalls at 256 (256 + 1 rounds to 256)
    x = np.ones(4096, dtype)
    assert float(np.asarray(lax.reduce_sum(x, (0,)))) == 4096.0
    assert float(np.asarray(lax.cumsum(x))[-1]) == 4096.0
    assert float(jax_eval(lambda a: jax.lax.reduce_sum(a, (0,)), x)) == 4096.0
    # the definition: the float32 sum rounded once
    y = np.random.default_rng(1).uniform(0, 1, 1000).astype(dtype)
    expected = np.sum(y.astype(np.float32)).astype(dtype)
    np.testing.assert_array_equal(bits(lax.reduce_sum(y, (0,))), bits(expected))


def test_max_and_min_propagate_nan():
    x = np.array([[1.0, np.nan, 3.0], [-np.inf, 2.0, 0.0]], np.float32)
    for name in ("reduce_max", "reduce_min"):
        out = np.asarray(getattr(lax, name)(x, (1,)))
        expected = jax_eval(lambda a, name=name: getattr(jax.lax, name)(a, (1,)), x)
        np.testing.assert_array_equal(out, expected)
        assert np.isnan(out[0]) and not np.isnan(out[1])


def test_complex_max_and_min_are_lexicographic():
    x = np.array([2 + 0j, 1 + 5j, 2 - 1j, -3 + 9j], np.complex64)
    for name in ("reduce_max", "reduce_min"):
        out = run_both(lambda a, name=name: getattr(lax, name)(a, (0,)), x)
        np.testing.assert_array_equal(
            out, jax_eval(lambda a, name=name: getattr(jax.lax, name)(a, (0,)), x)
        )


WEAK_TYPE_CASES = [
    (name, dtype)
    for name, accepted in REDUCE_DTYPES.items()
    for dtype in (I32, F32, BOOL)
    if dtype in accepted
]


@pytest.mark.parametrize("name,dtype", WEAK_TYPE_CASES, ids=str)
def test_reduction_weak_type_matches_jax(name, dtype):
    weak = dtype != BOOL  # JAX has no weakly typed bool arrays

    def fn(x, module):
        return getattr(module, name)(x, (0,))

    ours = ri.eval_shape(lambda x: fn(x, lax), ri.ShapeDtypeStruct((3,), dtype, weak_type=weak))
    theirs = jax.eval_shape(
        lambda x: fn(x, jax.lax), jax.ShapeDtypeStruct((3,), dtype, weak_type=weak)
    )
    assert (ours.shape, ours.dtype, ours.weak_type) == (
        theirs.shape,
        theirs.dtype,
        theirs.weak_type,
    )


def test_python_scalar_operand_is_weak():
    out = lax.reduce_sum(2.5, ())
    assert out.weak_type and out.dtype == F32 and float(np.asarray(out)) == 2.5


@pytest.mark.parametrize("bad", BAD_OPERANDS, ids=repr)
def test_reduction_rejects_non_arrays(bad):
    with pytest.raises(TypeError, match=r"reduce_sum.*position 0"):
        lax.reduce_sum(bad, ())


def test_reduction_axes_errors():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(ValueError, match=r"reduce_max.*out-of-bounds axis 2.*\(2, 3\)"):
        lax.reduce_max(x, (2,))
    with pytest.raises(ValueError, match=r"reduce_max.*negative"):
        lax.reduce_max(x, (-1,))
    with pytest.raises(ValueError, match=r"reduce_sum: duplicate value in 'axes'"):
        lax.reduce_sum(x, (0, 0))
    with pytest.raises(TypeError, match=r"reduce_sum: axes must be a sequence of ints"):
        lax.reduce_sum(x, 0)
    with pytest.raises(TypeError, match=r"reduce_sum: axes must be a sequence of ints"):
        lax.reduce_sum(x, (0.0,))


def test_reduction_dtype_errors():
    with pytest.raises(TypeError, match=r"reduce_sum does not accept dtype bool"):
        lax.reduce_sum(np.zeros(3, bool), (0,))
    with pytest.raises(TypeError, match=r"reduce_and does not accept dtype float32"):
        lax.reduce_and(np.zeros(3, np.float32), (0,))
    with pytest.raises(TypeError, match=r"reduce_or does not accept dtype complex64"):
        lax.reduce_or(np.zeros(3, np.complex64), (0,))


def test_reduction_program_records_axes():
    program = ri.make_program(lambda x: lax.reduce_sum(x, [1]))(np.zeros((2, 3), np.float32))
    (eqn,) = program.eqns
    assert eqn.primitive.name == "reduce_sum" and eqn.params == {"axes": (1,)}
    assert "reduce_sum[axes=(1,)]" in str(program)


@settings(max_examples=40, deadline=None)
@given(
    shape=st.lists(st.integers(0, 4), min_size=0, max_size=3),
    data=st.data(),
    name=st.sampled_from(["reduce_sum", "reduce_max", "reduce_min", "reduce_and"]),
)
def test_reductions_random_shapes_against_numpy(shape, data, name):
    axes = tuple(data.draw(st.permutations(range(len(shape))))[: data.draw(st.integers(0, 3))])
    dtype = I32 if name == "reduce_and" else F32
    x = random_array(np.random.default_rng(len(shape)), tuple(shape), dtype)
    out = np.asarray(getattr(lax, name)(x, axes))
    numpy_fn = {
        "reduce_sum": lambda: np.sum(x, axis=axes, dtype=dtype),
        "reduce_max": lambda: np.max(x, axis=axes, initial=-np.inf).astype(dtype),
        "reduce_min": lambda: np.min(x, axis=axes, initial=np.inf).astype(dtype),
        "reduce_and": lambda: np.bitwise_and.reduce(x, axis=axes, initial=np.int32(-1)),
    }[name]
    expected = np.asarray(numpy_fn())
    assert_close(out, expected, dtype, terms=max(1, int(np.prod([shape[a] for a in axes]))))


# --- argmax / argmin -----------------------------------------------------------------


def with_specials(rng, x):
    """Sprinkle NaNs, infinities, signed zeros and ties into a float array."""
    x = x.copy()
    flat = x.reshape(-1)
    specials = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, 1.0], np.float32)
    picks = rng.random(flat.shape) < 0.3
    flat[picks] = specials[rng.integers(0, len(specials), picks.sum())].astype(x.dtype)
    return x


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_argmin_match_jax(name, rng):
    shapes = [((1,), 0, I32), ((7,), 0, U8), ((4, 5), 0, I32), ((4, 5), 1, I8), ((3, 0, 6), 2, I32)]
    cases, inputs = [], []
    for dtype in [BOOL, I8, U8, I32, F16, BF16, F32]:
        for shape, axis, index in shapes:
            cases.append((dtype, axis, index))
            x = random_array(rng, shape, dtype, low=-3, high=3)  # small ints: many ties
            inputs.append(with_specials(rng, x) if dtypes.is_floating(dtype) else x)
    expected = jax_many(
        [lambda a, ax=axis, i=index: getattr(jax.lax, name)(a, ax, i) for _, axis, index in cases],
        [(x,) for x in inputs],
    )
    for (dtype, axis, index), x, exp in zip(cases, inputs, expected, strict=True):
        out = run_both(lambda a, ax=axis, i=index: getattr(lax, name)(a, ax, i), x)
        assert out.dtype == exp.dtype
        np.testing.assert_array_equal(out, exp, err_msg=f"{dtype} {x.shape} axis {axis}")


def test_argmax_first_nan_and_first_tie_win():
    x = np.array([1.0, np.nan, 3.0, np.nan, 3.0], np.float32)
    assert int(np.asarray(lax.argmax(x, 0))) == 1
    assert int(np.asarray(lax.argmin(x, 0))) == 1
    y = np.array([1.0, 5.0, -0.0, 5.0, 0.0], np.float32)
    assert int(np.asarray(lax.argmax(y, 0))) == 1
    assert int(np.asarray(lax.argmin(y[2:], 0))) == 0


def test_argmax_result_is_strong_int32_by_default():
    out = ri.eval_shape(lambda x: lax.argmax(x, 0), ri.ShapeDtypeStruct((3,), F32, weak_type=True))
    assert out.dtype == I32 and not out.weak_type
    program = ri.make_program(lambda x: lax.argmin(x, 1, np.int8))(np.zeros((2, 3), np.float32))
    assert program.eqns[0].params == {"axes": (1,), "index_dtype": np.dtype(np.int8)}


def test_argmax_errors():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(
        ValueError, match=r"argmax: argmin and argmax require non-empty reduced dimension"
    ):
        lax.argmax(np.zeros((0, 3), np.float32), 0)
    with pytest.raises(ValueError, match=r"argmin: Invalid axis 2 for operand shape \(2, 3\)"):
        lax.argmin(x, 2)
    with pytest.raises(ValueError, match=r"argmax: Invalid axis -1 for operand shape \(2, 3\)"):
        lax.argmax(x, -1)
    with pytest.raises(ValueError, match=r"argmax: Invalid axis 0 for operand shape \(\)"):
        lax.argmax(np.float32(1), 0)
    with pytest.raises(TypeError, match=r"argmax does not accept dtype complex64"):
        lax.argmax(np.zeros(3, np.complex64), 0)
    with pytest.raises(TypeError, match=r"argmax: index_dtype must be an integer type"):
        lax.argmax(x, 0, np.float32)
    with pytest.raises(TypeError, match=r"argmin: axis must be an int"):
        lax.argmin(x, "0")
    for bad in BAD_OPERANDS:
        with pytest.raises(TypeError, match=r"argmax.*position 0"):
            lax.argmax(bad, 0)


# --- cumsum / cumprod / cummax / cummin --------------------------------------------

CUMULATIVE = ["cumsum", "cumprod", "cummax", "cummin"]


@pytest.mark.parametrize("name", CUMULATIVE)
def test_cumulative_matches_jax(name, rng):
    shapes = [((6,), 0, False), ((0,), 0, True), ((3, 4), 0, True), ((3, 4), 1, False)]
    shapes += [((2, 5, 3), 1, True), ((2, 0, 3), 2, False)]
    # complex cummax/cummin: see test_complex_cummax
    all_dtypes = INTS + FLOATS + ([C64] if name in ("cumsum", "cumprod") else [])
    cases, inputs = [], []
    for dtype in all_dtypes:
        for shape, axis, reverse in shapes:
            cases.append((dtype, shape, axis, reverse))
            if name == "cumprod" and dtypes.is_inexact(dtype):
                inputs.append(rng.uniform(0.5, 1.5, shape).astype(dtype))
            else:
                inputs.append(random_array(rng, shape, dtype))
    expected = jax_many(
        [lambda a, ax=axis, r=rev: getattr(jax.lax, name)(a, ax, r) for *_, axis, rev in cases],
        [(x,) for x in inputs],
    )
    for (dtype, shape, axis, reverse), x, exp in zip(cases, inputs, expected, strict=True):
        out = run_both(lambda a, ax=axis, r=reverse: getattr(lax, name)(a, ax, r), x)
        context = f"{name} {dtype} {shape} axis={axis} reverse={reverse}"
        assert_close(out, exp, dtype, terms=shape[axis], context=context)


def test_cumulative_definition_against_numpy(rng):
    x = random_array(rng, (3, 5), I32)
    np.testing.assert_array_equal(np.asarray(lax.cumsum(x, 1)), np.cumsum(x, 1, dtype=I32))
    np.testing.assert_array_equal(
        np.asarray(lax.cumsum(x, 0, reverse=True)), np.flip(np.cumsum(np.flip(x, 0), 0), 0)
    )
    np.testing.assert_array_equal(np.asarray(lax.cummax(x, 1)), np.maximum.accumulate(x, 1))
    np.testing.assert_array_equal(np.asarray(lax.cummin(x, 0)), np.minimum.accumulate(x, 0))


def test_cumulative_nan_propagates_and_ints_wrap():
    x = np.array([1.0, np.nan, 3.0], np.float32)
    for name in ("cummax", "cummin", "cumsum"):
        out = np.asarray(getattr(lax, name)(x))
        np.testing.assert_array_equal(out, jax_eval(getattr(jax.lax, name), x))
        assert np.isnan(out[1:]).all()
    y = np.array([100, 100, 100], np.int8)
    np.testing.assert_array_equal(np.asarray(lax.cumprod(y)), np.array([100, 16, 64], np.int8))


def test_complex_cummax():
    x = np.array([2 + 0j, 1 + 5j, 2 - 1j, 3 + 0j, 3 + 1j], np.complex64)
    for name in ("cummax", "cummin"):
        out = run_both(getattr(lax, name), x)
        np.testing.assert_array_equal(out, jax_eval(getattr(jax.lax, name), x))


@pytest.mark.parametrize("name", CUMULATIVE)
def test_cumulative_keeps_weak_type(name):
    spec = ri.ShapeDtypeStruct((3,), F32, weak_type=True)
    out = ri.eval_shape(getattr(lax, name), spec)
    assert out.weak_type and out.dtype == F32 and out.shape == (3,)


def test_cumulative_errors():
    with pytest.raises(TypeError, match=r"cumsum does not accept dtype bool"):
        lax.cumsum(np.zeros(3, bool))
    with pytest.raises(ValueError, match=r"cummax: axis 0 is out of bounds.*\(\)"):
        lax.cummax(np.float32(1))
    with pytest.raises(ValueError, match=r"cumprod: axis -1 is out of bounds"):
        lax.cumprod(np.zeros(3, np.float32), -1)
    with pytest.raises(TypeError, match=r"cummin: reverse must be a bool"):
        cummin_p.bind(np.zeros(3, np.float32), axis=0, reverse="yes")
    for bad in BAD_OPERANDS:
        with pytest.raises(TypeError, match=r"cumsum.*position 0"):
            lax.cumsum(bad)


def test_cumulative_params_in_program():
    program = ri.make_program(lambda x: lax.cumsum(x, 1, True))(np.zeros((2, 3), np.float32))
    assert program.eqns[0].params == {"axis": 1, "reverse": True}


# --- sort ------------------------------------------------------------------------------

SPECIAL_FLOATS = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.5]


def special_array(rng, shape, dtype):
    values = np.array(SPECIAL_FLOATS, np.float64)
    picked = values[rng.integers(0, len(values), shape)]
    if dtypes.is_complex(dtype):
        result = np.empty(shape, dtype)
        result.real = picked
        result.imag = values[rng.integers(0, len(values), shape)]
        return result
    return picked.astype(dtype)


def jax_sort(*operands, dimension=-1, num_keys=1):
    outs = jax.jit(lambda *xs: jax.lax.sort(xs, dimension=dimension, num_keys=num_keys))(*operands)
    return [np.asarray(o) for o in outs]


def test_sort_matches_jax_bit_for_bit(rng):
    """JAX's order: -0.0 == 0.0 (stable), NaNs of any sign last, complex by
    (real, imag); the sorted values keep their exact bits."""
    shapes = [((9,), -1), ((0,), 0), ((4, 6), 0), ((4, 6), 1), ((2, 5, 3), -2)]
    cases, inputs = [], []
    for dtype in [BOOL, I8, U8, I32, F16, BF16, F32, C64]:
        for shape, dimension in shapes:
            cases.append((dtype, dimension))
            if dtypes.is_inexact(dtype):
                inputs.append(special_array(rng, shape, dtype))
            else:
                inputs.append(random_array(rng, shape, dtype, low=-5, high=5))
    expected = jax_many(
        [lambda a, d=dimension: jax.lax.sort(a, dimension=d) for _, dimension in cases],
        [(x,) for x in inputs],
    )
    for (dtype, dimension), x, exp in zip(cases, inputs, expected, strict=True):
        out = run_both(lambda a, d=dimension: lax.sort(a, dimension=d), x)
        assert out.dtype == exp.dtype
        np.testing.assert_array_equal(bits(out), bits(exp), err_msg=f"{dtype} {x.shape}")


def test_sort_order_of_special_values():
    x = np.array([np.nan, 1, -0.0, 0.0, -np.inf, -np.nan, np.inf, -0.0], np.float32)
    out = np.asarray(lax.sort(x))
    np.testing.assert_array_equal(out[:6], [-np.inf, 0, 0, 0, 1, np.inf])
    np.testing.assert_array_equal(np.signbit(out[1:4]), [True, False, True])  # stable
    assert np.isnan(out[6:]).all()


@pytest.mark.parametrize("num_keys", [1, 2])
def test_multi_operand_sort_matches_jax(num_keys, rng):
    keys = random_array(rng, (3, 8), I32, low=0, high=2)  # many equal keys
    second = special_array(rng, (3, 8), F32)
    values = random_array(rng, (3, 8), U8)
    outs = run_both(
        lambda a, b, c: lax.sort((a, b, c), dimension=1, num_keys=num_keys), keys, second, values
    )
    assert isinstance(outs, tuple) and len(outs) == 3
    expected = jax_sort(keys, second, values, dimension=1, num_keys=num_keys)
    for out, exp in zip(outs, expected, strict=True):
        np.testing.assert_array_equal(bits(out), bits(exp))


def test_sort_key_val():
    keys = np.array([3, 1, 2, 1], np.int32)
    values = np.array([10.0, 20.0, 30.0, 40.0], np.float32)
    sorted_keys, sorted_values = lax.sort_key_val(keys, values)
    np.testing.assert_array_equal(np.asarray(sorted_keys), [1, 1, 2, 3])
    np.testing.assert_array_equal(np.asarray(sorted_values), [20.0, 40.0, 30.0, 10.0])


def test_sort_program_and_weak_type():
    program = ri.make_program(lambda x: lax.sort(x, dimension=-1))(np.zeros((2, 3), np.float32))
    assert program.eqns[0].params == {"dimension": 1, "is_stable": True, "num_keys": 1}
    out = ri.eval_shape(lax.sort, ri.ShapeDtypeStruct((3,), F32, weak_type=True))
    assert out.weak_type


def test_sort_errors():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(
        TypeError, match=r"sort: operands must all have the same shape.*\(2, 3\).*\(3,\)"
    ):
        lax.sort((x, np.zeros(3, np.float32)))
    with pytest.raises(ValueError, match=r"sort: num_keys must be between 1 and .* \(2\), got 3"):
        lax.sort((x, x), num_keys=3)
    with pytest.raises(ValueError, match=r"sort: num_keys must be between 1 and .*got 0"):
        lax.sort(x, num_keys=0)
    with pytest.raises(ValueError, match=r"sort: dimension 2 is out of bounds.*\(2, 3\)"):
        lax.sort(x, dimension=2)
    with pytest.raises(ValueError, match=r"sort: operands must have rank >= 1"):
        lax.sort(np.float32(1.0))
    with pytest.raises(TypeError, match=r"sort: dimension must be an int"):
        lax.sort(x, dimension="last")
    with pytest.raises(TypeError, match=r"sort: requires at least one operand"):
        lax.sort(())
    for bad in BAD_OPERANDS:
        with pytest.raises(TypeError, match=r"sort.*position 1"):
            lax.sort((x, bad))


def _python_sort_key(value: float) -> tuple[bool, float]:
    """JAX's float order as a Python sort key: NaNs last, -0.0 == 0.0."""
    return (value != value, 0.0 if value != value or value == 0 else value)


@settings(max_examples=40, deadline=None)
@given(
    values=st.lists(st.sampled_from(SPECIAL_FLOATS), min_size=0, max_size=12),
    dtype=st.sampled_from([F16, BF16, F32]),
)
def test_sort_random_special_values_against_python_sorted(values, dtype):
    """An independent oracle: Python's (stable) ``sorted`` with JAX's order as key."""
    x = np.array(values, np.float64).astype(dtype)
    order = sorted(range(len(values)), key=lambda i: _python_sort_key(float(x[i])))
    expected = x[np.array(order, dtype=np.int64)]
    np.testing.assert_array_equal(bits(lax.sort(x)), bits(expected))
