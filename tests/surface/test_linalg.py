"""dot_general and conv_general_dilated against JAX's lax (the oracle) and NumPy.

Every op runs eagerly and under ``ri.jit`` (bit-identical), and its traced
program passes ``ri.check_program``. Integer and bool results are compared
exactly; float results within a tolerance of a few roundings per product
summed (XLA/BLAS sum in other orders; for float16/bfloat16 XLA may accumulate
differently from refimpl's float32 accumulator).
"""

from __future__ import annotations

import itertools

import jax
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import refimpl as ri
from refimpl import dtypes, lax
from refimpl.primitives.linalg import ConvDimensionNumbers

jax.config.update("jax_platforms", "cpu")

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32, C64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.complex64)
I8, I16, I32 = np.dtype(np.int8), np.dtype(np.int16), np.dtype(np.int32)
U8, U32, BOOL = np.dtype(np.uint8), np.dtype(np.uint32), np.dtype(bool)
ALL_DTYPES = [I8, I32, U8, BOOL, F16, BF16, F32, C64]
EPS = {F16: 2.0**-10, BF16: 2.0**-7, F32: 2.0**-23, C64: 2.0**-23}
BAD_OPERANDS = [(1, 2), "abc", None, object()]


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
    return rng.standard_normal(shape).astype(dtype)


def bits(x):
    x = np.atleast_1d(np.asarray(x))
    return x.view(np.dtype(f"u{x.dtype.itemsize}")) if x.dtype.itemsize <= 8 else x.view(np.uint8)


def run_both(fn, *args):
    """``fn`` eagerly and under jit: the same bits; its program type-checks."""
    eager = fn(*args)
    assert isinstance(eager, ri.Array)
    np.testing.assert_array_equal(bits(eager), bits(ri.jit(fn)(*args)))
    ri.check_program(ri.make_program(fn)(*args))
    return np.asarray(eager)


def jax_many(fns, argss):
    """``[fns[i](*argss[i]) ...]`` computed by JAX in ONE compiled call (a compile
    per case would dominate the run time). NumPy inputs go in directly."""
    outs = jax.jit(lambda ins: [fn(*args) for fn, args in zip(fns, ins, strict=True)])(
        [tuple(args) for args in argss]
    )
    return [np.asarray(o) for o in outs]


def assert_close(actual, expected, operand_dtype, terms, magnitude, context=""):
    """Exact for ints/bools; floats within ``terms`` roundings of ``magnitude``
    (the largest possible |product|) in ``operand_dtype``."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, (context, actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (context, actual.shape, expected.shape)
    if not dtypes.is_inexact(expected.dtype):
        np.testing.assert_array_equal(actual, expected, err_msg=context)
        return
    wide = np.complex128 if dtypes.is_complex(expected.dtype) else np.float64
    eps = EPS[np.dtype(operand_dtype)] if np.dtype(operand_dtype) in EPS else EPS[F32]
    eps = max(eps, EPS.get(expected.dtype, 0.0))
    atol = 4 * eps * magnitude * max(terms, 1)
    np.testing.assert_allclose(
        actual.astype(wide), expected.astype(wide), rtol=4 * eps, atol=atol, err_msg=context
    )


def magnitude(*arrays):
    return float(np.prod([np.max(np.abs(a.astype(np.complex128)), initial=1.0) for a in arrays]))


# --- dot_general -------------------------------------------------------------------------

# (lhs shape, rhs shape, ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch)))
DOT_CASES = [
    ((3,), (3,), (((0,), (0,)), ((), ()))),  # inner product
    ((2, 3), (3, 4), (((1,), (0,)), ((), ()))),  # matmul
    ((2, 3), (4, 3), (((1,), (1,)), ((), ()))),  # a @ b.T
    ((5, 2, 3), (5, 3, 4), (((2,), (1,)), ((0,), (0,)))),  # batched matmul
    ((2, 5, 3), (3, 4, 5), (((2,), (0,)), ((1,), (2,)))),  # batch dims not leading
    ((2, 3), (4,), (((), ()), ((), ()))),  # outer product
    ((), (), (((), ()), ((), ()))),  # scalars
    ((2, 3, 4), (4, 3, 2), (((1, 2), (1, 0)), ((), ()))),  # two contracting dims
    ((2, 0), (0, 3), (((1,), (0,)), ((), ()))),  # empty contraction: zeros
    ((0, 3), (3, 2), (((1,), (0,)), ((), ()))),  # empty free dim
    ((3, 2, 4), (3, 4, 0), (((2,), (1,)), ((0,), (0,)))),
]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_dot_general_matches_jax(dtype, rng):
    inputs = [
        (random_array(rng, ls, dtype), random_array(rng, rs, dtype)) for ls, rs, _ in DOT_CASES
    ]
    expected = jax_many(
        [lambda a, b, d=dims: jax.lax.dot_general(a, b, d) for _, _, dims in DOT_CASES], inputs
    )
    for (lhs_shape, _, dims), (a, b), exp in zip(DOT_CASES, inputs, expected, strict=True):
        out = run_both(lambda x, y, d=dims: lax.dot_general(x, y, d), a, b)
        terms = int(np.prod([lhs_shape[i] for i in dims[0][0]]))
        assert_close(out, exp, dtype, terms, magnitude(a, b), context=f"{dtype} {dims}")


def test_dot_general_definition_against_numpy(rng):
    a, b = random_array(rng, (4, 2, 3), F32), random_array(rng, (3, 4, 5), F32)
    out = np.asarray(lax.dot_general(a, b, (((2,), (0,)), ((0,), (1,)))))
    np.testing.assert_allclose(out, np.einsum("bij,jbk->bik", a, b), rtol=1e-5, atol=1e-5)


# (lhs dtype, rhs dtype, preferred_element_type): mixed operands take the
# higher-precision type; preferred types widen (or, for floats, narrow) the result
MIXED_CASES = [
    (I8, U8, None),
    (F32, I32, None),
    (BOOL, F32, None),
    (BOOL, I8, None),
    (F16, BF16, None),
    (F16, I8, None),
    (F32, C64, None),
    (U32, I8, None),
    (I8, I8, I16),
    (I8, I8, I32),
    (I8, I8, F32),
    (I8, I8, U8),
    (U8, U8, I32),
    (BOOL, BOOL, I32),
    (BOOL, BOOL, F16),
    (F32, F32, I32),
    (F32, F32, F16),
    (F32, F32, BF16),
    (C64, C64, F32),
    (F16, F16, F32),
    (BF16, BF16, F32),
]


def test_dot_general_mixed_dtypes_and_preferred_element_type_match_jax(rng):
    # small integer values: every sum is exact in every dtype involved
    inputs = [
        (random_array(rng, (2, 4), ld, -3, 3), random_array(rng, (4, 3), rd, -3, 3))
        for ld, rd, _ in MIXED_CASES
    ]
    inputs = [(a.round() if a.dtype.kind in "fc" else a, b) for a, b in inputs]
    inputs = [(a, b.round() if b.dtype.kind in "fc" else b) for a, b in inputs]
    dims = (((1,), (0,)), ((), ()))
    expected = jax_many(
        [
            lambda a, b, p=p: jax.lax.dot_general(a, b, dims, preferred_element_type=p)
            for _, _, p in MIXED_CASES
        ],
        inputs,
    )
    for (ld, rd, p), (a, b), exp in zip(MIXED_CASES, inputs, expected, strict=True):
        out = run_both(
            lambda x, y, p=p: lax.dot_general(x, y, dims, preferred_element_type=p), a, b
        )
        assert out.dtype == exp.dtype, (ld, rd, p, out.dtype, exp.dtype)
        np.testing.assert_array_equal(out, exp, err_msg=f"{ld} {rd} {p}")


def test_dot_general_result_conversions():
    dims = (((0,), (0,)), ((), ()))
    ones = np.ones(3, np.float32)
    # float32 sum 1.6, then truncated to int32 (not 0 + 0 + 0 from converting inputs)
    x = np.array([0.5, 0.5, 0.6], np.float32)
    assert int(np.asarray(lax.dot_general(x, ones, dims, preferred_element_type=np.int32))) == 1
    # int8 products widened before summing
    y = np.full(3, 100, np.int8)
    assert int(np.asarray(lax.dot_general(y, y, dims, preferred_element_type=np.int16))) == 30000
    assert int(np.asarray(lax.dot_general(y, y, dims))) == 48  # 30000 wrapped to int8
    # bool: or of ands
    t, f = np.array([True, False, True]), np.array([False, True, False])
    assert bool(np.asarray(lax.dot_general(t, t, dims))) is True
    assert bool(np.asarray(lax.dot_general(t, f, dims))) is False
    # float16 accumulates in float32 (a float16 running sum would stall at 2048)
    h = np.ones(3000, np.float16)
    assert float(np.asarray(lax.dot_general(h, h, dims))) == 3000.0


@pytest.mark.parametrize("lhs_weak,rhs_weak", list(itertools.product([False, True], repeat=2)))
@pytest.mark.parametrize("preferred", [None, F32])
def test_dot_general_weak_type_matches_jax(lhs_weak, rhs_weak, preferred):
    dims = (((0,), (0,)), ((), ()))

    def fn(module, a, b):
        return module.dot_general(a, b, dims, preferred_element_type=preferred)

    ours = ri.eval_shape(
        lambda a, b: fn(lax, a, b),
        ri.ShapeDtypeStruct((3,), F32, lhs_weak),
        ri.ShapeDtypeStruct((3,), F32, rhs_weak),
    )
    theirs = jax.eval_shape(
        lambda a, b: fn(jax.lax, a, b),
        jax.ShapeDtypeStruct((3,), F32, weak_type=lhs_weak),
        jax.ShapeDtypeStruct((3,), F32, weak_type=rhs_weak),
    )
    assert (ours.dtype, ours.weak_type) == (theirs.dtype, theirs.weak_type)


def test_dot_general_program_params():
    a, b = np.zeros((2, 3), np.float32), np.zeros((3, 4), np.float32)
    program = ri.make_program(lambda x, y: lax.dot_general(x, y, ([[1], [0]], [[], []])))(a, b)
    assert program.eqns[0].params == {
        "dimension_numbers": (((1,), (0,)), ((), ())),
        "precision": None,
        "preferred_element_type": None,
    }
    program = ri.make_program(
        lambda x, y: lax.dot_general(x, y, (((1,), (0,)), ((), ())), precision="highest")
    )(a, b)
    # JAX 0.10.2's canonical pair of Precision members (jtu.assert_dot_precision compares them)
    highest = lax.Precision.HIGHEST
    assert program.eqns[0].params["precision"] == (highest, highest)


def test_dot_general_errors():
    a, b = np.zeros((2, 3), np.float32), np.zeros((4, 3), np.float32)
    for bad in BAD_OPERANDS:
        with pytest.raises(TypeError, match=r"dot_general.*position 0"):
            lax.dot_general(bad, b, (((1,), (1,)), ((), ())))
        with pytest.raises(TypeError, match=r"dot_general.*position 1"):
            lax.dot_general(a, bad, (((1,), (1,)), ((), ())))
    with pytest.raises(
        TypeError,
        match=r"dot_general requires contracting dimensions to have the same shape, got \(3,\) "
        r"and \(4,\)\. \(lhs shape \(2, 3\), rhs shape \(4, 3\)\)",
    ):
        lax.dot_general(a, b, (((1,), (0,)), ((), ())))
    with pytest.raises(
        TypeError,
        match=r"dot_general requires lhs batch dimensions and rhs batch dimensions to have the same"
        r" shape, got \(2,\) and \(4,\)\. \(lhs shape \(2, 3\), rhs shape \(4, 3\)\)",
    ):
        lax.dot_general(a, b, (((1,), (1,)), ((0,), (0,))))
    with pytest.raises(TypeError, match=r"dot_general: lhs dimension numbers must be in \[0, 2\)"):
        lax.dot_general(a, b, (((2,), (1,)), ((), ())))
    with pytest.raises(TypeError, match=r"dot_general: rhs dimension numbers must be in \[0, 2\)"):
        lax.dot_general(a, b, (((1,), (-1,)), ((), ())))
    with pytest.raises(
        TypeError, match=r"dot_general: lhs_contracting dimensions \(1, 1\) are not"
    ):
        lax.dot_general(a, a, (((1, 1), (1, 1)), ((), ())))
    with pytest.raises(TypeError, match=r"dot_general: lhs_batch \(1,\) and lhs_contracting"):
        lax.dot_general(a, a, (((1,), (1,)), ((1,), (0,))))
    with pytest.raises(TypeError, match=r"lhs_contracting \(1,\) and rhs_contracting \(\) differ"):
        lax.dot_general(a, b, (((1,), ()), ((), ())))
    with pytest.raises(TypeError, match=r"dot_general: dimension_numbers must be"):
        lax.dot_general(a, b, ((1,), (1,)))
    with pytest.raises(TypeError, match=r"dot_general: lhs_contracting must be a sequence of ints"):
        lax.dot_general(a, b, ((("1",), (1,)), ((), ())))
    i32 = np.zeros((2, 3), np.int32)
    with pytest.raises(
        TypeError,
        match=r"dot_general: preferred_element_type int8 must not be "
        r"narrower than the operands' type int32",
    ):
        lax.dot_general(i32, i32, (((1,), (1,)), ((), ())), preferred_element_type=np.int8)
    with pytest.raises(TypeError, match=r"dot_general: preferred_element_type 'nope'"):
        lax.dot_general(a, b, (((1,), (1,)), ((), ())), preferred_element_type="nope")
    with pytest.raises(ValueError, match=r"dot_general: precision must be"):
        lax.dot_general(a, b, (((1,), (1,)), ((), ())), precision="fastest-ish")


@st.composite
def dot_problems(draw):
    """Random shapes and dimension numbers, with the einsum spec that computes them."""
    kinds = draw(st.lists(st.sampled_from("bclr"), max_size=5))  # batch/contract/lhs/rhs free
    sizes = [draw(st.integers(0, 3)) for _ in kinds]
    letters = "abcdefgh"
    lhs_dims = [i for i, k in enumerate(kinds) if k in "bcl"]
    rhs_dims = [i for i, k in enumerate(kinds) if k in "bcr"]
    lhs_order = draw(st.permutations(lhs_dims))
    rhs_order = draw(st.permutations(rhs_dims))
    lhs_shape = tuple(sizes[i] for i in lhs_order)
    rhs_shape = tuple(sizes[i] for i in rhs_order)
    batch = [i for i, k in enumerate(kinds) if k == "b"]
    contract = [i for i, k in enumerate(kinds) if k == "c"]
    dims = (
        (tuple(lhs_order.index(i) for i in contract), tuple(rhs_order.index(i) for i in contract)),
        (tuple(lhs_order.index(i) for i in batch), tuple(rhs_order.index(i) for i in batch)),
    )
    out = (
        batch
        + [i for i in lhs_order if kinds[i] == "l"]
        + [i for i in rhs_order if kinds[i] == "r"]
    )
    spec = (
        "".join(letters[i] for i in lhs_order)
        + ","
        + "".join(letters[i] for i in rhs_order)
        + "->"
        + "".join(letters[i] for i in out)
    )
    return lhs_shape, rhs_shape, dims, spec


@settings(max_examples=40, deadline=None)
@given(problem=dot_problems(), dtype=st.sampled_from([I32, F32]))
def test_dot_general_random_dimension_numbers_against_einsum(problem, dtype):
    lhs_shape, rhs_shape, dims, spec = problem
    rng = np.random.default_rng(0)
    a, b = random_array(rng, lhs_shape, dtype, -5, 5), random_array(rng, rhs_shape, dtype, -5, 5)
    out = np.asarray(lax.dot_general(a, b, dims))
    expected = np.einsum(spec, a.astype(np.float64), b.astype(np.float64))
    assert out.shape == expected.shape
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-4)


# --- conv_general_dilated --------------------------------------------------------------

# (lhs shape, rhs shape, keyword arguments besides window_strides and padding)
CONV_CASES = [
    ((2, 3, 7), (4, 3, 3), dict(window_strides=(1,), padding="VALID")),
    ((2, 3, 7), (4, 3, 3), dict(window_strides=(2,), padding="SAME")),
    ((1, 2, 8), (3, 2, 2), dict(window_strides=(2,), padding="SAME_LOWER", rhs_dilation=(2,))),
    ((2, 3, 6, 5), (4, 3, 3, 2), dict(window_strides=(2, 1), padding=((1, 2), (0, 1)))),
    ((2, 3, 6, 5), (4, 3, 3, 2), dict(window_strides=(1, 1), padding=((-1, 2), (1, -1)))),
    (
        (1, 2, 4, 5),
        (3, 2, 3, 2),
        dict(
            window_strides=(1, 2),
            padding=((2, 1), (0, 0)),
            lhs_dilation=(2, 1),
            rhs_dilation=(1, 2),
        ),
    ),  # fmt: skip
    (
        (2, 5, 6, 3),
        (3, 2, 3, 4),
        dict(window_strides=(2, 2), padding="SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")),
    ),
    (
        (2, 4, 5, 5),
        (6, 2, 3, 3),
        dict(window_strides=(1, 1), padding="SAME", feature_group_count=2),
    ),
    (
        (1, 3, 5, 5),
        (3, 1, 2, 2),
        dict(window_strides=(1, 1), padding="VALID", feature_group_count=3),
    ),
    ((4, 3, 5, 5), (4, 3, 2, 2), dict(window_strides=(1, 1), padding="VALID", batch_group_count=2)),
    (
        (1, 4, 5, 3, 2),
        (2, 3, 2, 2, 3),
        dict(
            window_strides=(1, 2, 1), padding="SAME", dimension_numbers=("NDHWC", "DHWIO", "NDHWC")
        ),
    ),  # fmt: skip
    (
        (2, 3, 4, 5, 2),
        (2, 4, 3, 2, 2),
        dict(
            window_strides=(1, 2, 1), padding="SAME", dimension_numbers=("NWCDH", "WIOHD", "DNWCH")
        ),
    ),  # fmt: skip
    ((0, 3, 5), (2, 3, 2), dict(window_strides=(1,), padding="VALID")),  # empty batch
    ((1, 1, 2), (1, 1, 3), dict(window_strides=(1,), padding="VALID")),  # no output positions
    ((2, 0, 5), (3, 0, 2), dict(window_strides=(1,), padding=((1, 0),))),  # no features
    ((2, 3), (4, 3), dict(window_strides=(), padding=())),  # no spatial dims
]
CONV_DTYPES = [F32, I8, I32, U8, BOOL, F16, BF16, C64]
# float32 runs every case; the other dtypes a representative few (XLA takes
# seconds to compile many convolutions in complex64 or bfloat16)
FEW_CONV_CASES = [CONV_CASES[i] for i in (1, 4, 5, 7, 12)]


def _conv_terms(lhs_shape, rhs_shape, kwargs):
    dims = lax.conv_dimension_numbers(lhs_shape, rhs_shape, kwargs.get("dimension_numbers"))
    return int(np.prod([rhs_shape[d] for d in dims.rhs_spec[1:]]))


@pytest.mark.parametrize("dtype", CONV_DTYPES, ids=str)
def test_conv_general_dilated_matches_jax(dtype, rng):
    cases = CONV_CASES if dtype == F32 else FEW_CONV_CASES
    inputs = [
        (random_array(rng, ls, dtype, -5, 5), random_array(rng, rs, dtype, -5, 5))
        for ls, rs, _ in cases
    ]
    expected = jax_many(
        [lambda a, b, kw=kw: jax.lax.conv_general_dilated(a, b, **kw) for *_, kw in cases],
        inputs,
    )
    for (ls, rs, kw), (a, b), exp in zip(cases, inputs, expected, strict=True):
        out = run_both(lambda x, y, kw=kw: lax.conv_general_dilated(x, y, **kw), a, b)
        terms = _conv_terms(ls, rs, kw)
        assert_close(out, exp, dtype, terms, magnitude(a, b), context=f"{dtype} {ls} {rs} {kw}")


PREFERRED_CASES = [(I8, I32), (I8, F32), (U8, I16), (BOOL, I32), (F16, F32), (BF16, F32)]


def test_conv_preferred_element_type_matches_jax(rng):
    lhs_shape, rhs_shape, _ = CONV_CASES[3]
    inputs = [
        (random_array(rng, lhs_shape, d, -100, 100), random_array(rng, rhs_shape, d, -100, 100))
        for d, _ in PREFERRED_CASES
    ]
    kw = dict(window_strides=(1, 1), padding="SAME")
    expected = jax_many(
        [
            lambda a, b, p=p: jax.lax.conv_general_dilated(a, b, preferred_element_type=p, **kw)
            for _, p in PREFERRED_CASES
        ],
        inputs,
    )
    for (d, p), (a, b), exp in zip(PREFERRED_CASES, inputs, expected, strict=True):
        out = run_both(
            lambda x, y, p=p: lax.conv_general_dilated(x, y, preferred_element_type=p, **kw), a, b
        )
        assert_close(out, exp, d, 18, magnitude(a, b), context=f"{d} -> {p}")


def reference_conv_by_loops(lhs, rhs, strides, padding, lhs_dilation, rhs_dilation, groups):
    """An independent oracle for NCHW/OIHW: for each output element, sum over the
    kernel taps whose position, mapped back through padding and lhs dilation,
    lands on a real input element."""
    n, c, h, w = lhs.shape
    o, i, kh, kw = rhs.shape
    out_h = [
        max(0, ((size - 1) * ld + 1 + lo + hi - ((k - 1) * rd + 1)) // s + 1)
        for size, k, s, (lo, hi), ld, rd in zip(
            (h, w), (kh, kw), strides, padding, lhs_dilation, rhs_dilation, strict=True
        )
    ]
    out = np.zeros((n, o, *out_h))
    group_out = o // groups
    for b, f, y, x in itertools.product(range(n), range(o), range(out_h[0]), range(out_h[1])):
        g = f // group_out
        for ci, ky, kx in itertools.product(range(i), range(kh), range(kw)):
            py = y * strides[0] + ky * rhs_dilation[0] - padding[0][0]
            px = x * strides[1] + kx * rhs_dilation[1] - padding[1][0]
            if py % lhs_dilation[0] or px % lhs_dilation[1]:
                continue
            sy, sx = py // lhs_dilation[0], px // lhs_dilation[1]
            if 0 <= sy < h and 0 <= sx < w:
                out[b, f, y, x] += lhs[b, g * i + ci, sy, sx] * rhs[f, ci, ky, kx]
    return out


@settings(max_examples=40, deadline=None)
@given(
    size=st.tuples(st.integers(1, 5), st.integers(1, 5)),
    kernel=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    strides=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    pads=st.lists(st.integers(-1, 2), min_size=4, max_size=4),
    lhs_dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    rhs_dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    groups=st.sampled_from([1, 2]),
)
def test_conv_random_configurations_against_loops(
    size, kernel, strides, pads, lhs_dilation, rhs_dilation, groups
):
    padding = ((pads[0], pads[1]), (pads[2], pads[3]))
    dilated = [(s - 1) * d + 1 for s, d in zip(size, lhs_dilation, strict=True)]
    if any(d + lo + hi < 0 for d, (lo, hi) in zip(dilated, padding, strict=True)):
        return  # negative padding larger than the input is an error (tested elsewhere)
    rng = np.random.default_rng(0)
    lhs = random_array(rng, (2, 2 * groups, *size), F32)
    rhs = random_array(rng, (2 * groups, 2, *kernel), F32)
    out = np.asarray(
        lax.conv_general_dilated(
            lhs, rhs, strides, padding, lhs_dilation, rhs_dilation, feature_group_count=groups
        )
    )
    expected = reference_conv_by_loops(
        lhs, rhs, strides, padding, lhs_dilation, rhs_dilation, groups
    )
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_conv_padding_strings_resolve_like_jax():
    assert lax.padtype_to_pads((7, 6), (3, 2), (2, 1), "SAME") == ((1, 1), (0, 1))
    assert lax.padtype_to_pads((7, 6), (3, 2), (2, 1), "same_lower") == ((1, 1), (1, 0))
    assert lax.padtype_to_pads((7, 6), (3, 2), (2, 1), "VALID") == ((0, 0), (0, 0))
    lhs, rhs = np.zeros((1, 1, 7, 6), np.float32), np.zeros((1, 1, 3, 2), np.float32)
    program = ri.make_program(lambda a, b: lax.conv_general_dilated(a, b, (2, 1), "SAME"))(lhs, rhs)
    assert program.eqns[0].params["padding"] == ((1, 1), (0, 1))


def test_conv_dimension_numbers_resolve_like_jax():
    ours = lax.conv_dimension_numbers((1, 5, 5, 3), (3, 3, 3, 8), ("NHWC", "HWIO", "NHWC"))
    theirs = jax.lax.conv_dimension_numbers((1, 5, 5, 3), (3, 3, 3, 8), ("NHWC", "HWIO", "NHWC"))
    assert ours == ConvDimensionNumbers(*theirs) == ((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    odd = ("NWCDH", "WIOHD", "DNWCH")
    assert lax.conv_dimension_numbers((1,) * 5, (1,) * 5, odd) == tuple(
        jax.lax.conv_dimension_numbers((1,) * 5, (1,) * 5, odd)
    )
    default = lax.conv_dimension_numbers((1, 2, 3), (1, 2, 3), None)
    assert default == ((0, 1, 2), (0, 1, 2), (0, 1, 2))


def test_conv_weak_type_and_program():
    spec = ri.ShapeDtypeStruct((1, 1, 4), F32, weak_type=True)
    strong = ri.ShapeDtypeStruct((1, 1, 2), F32)
    assert ri.eval_shape(
        lambda a, b: lax.conv_general_dilated(a, b, (1,), "VALID"), spec, spec
    ).weak_type
    assert not ri.eval_shape(
        lambda a, b: lax.conv_general_dilated(a, b, (1,), "VALID"), spec, strong
    ).weak_type
    program = ri.make_program(
        lambda a, b: lax.conv_general_dilated(
            a, b, (1,), [(1, 0)], dimension_numbers=("NWC", "WIO", "NWC")
        )
    )(np.zeros((1, 4, 1), np.float32), np.zeros((2, 1, 1), np.float32))
    params = program.eqns[0].params
    assert params["dimension_numbers"] == ((0, 2, 1), (2, 1, 0), (0, 2, 1))
    assert params["padding"] == ((1, 0),)
    assert params["lhs_dilation"] == (1,) and params["rhs_dilation"] == (1,)
    assert params["feature_group_count"] == 1 and params["batch_group_count"] == 1


def test_conv_errors():
    lhs, rhs = np.zeros((2, 4, 5), np.float32), np.zeros((6, 2, 3), np.float32)
    conv = lax.conv_general_dilated
    for bad in BAD_OPERANDS:
        with pytest.raises(TypeError, match=r"conv_general_dilated.*position 0"):
            conv(bad, rhs, (1,), "VALID")
        with pytest.raises(TypeError, match=r"conv_general_dilated.*position 1"):
            conv(lhs, bad, (1,), "VALID")
    with pytest.raises(
        TypeError,
        match=r"conv_general_dilated requires arguments to have the "
        r"same dtypes, got float32, float16",
    ):
        conv(lhs, rhs.astype(np.float16), (1,), "VALID", feature_group_count=2)
    with pytest.raises(
        ValueError,
        match=r"lhs feature dimension 4 must equal rhs input feature "
        r"dimension 2 times feature_group_count 1 \(lhs shape \(2, 4, 5\), "
        r"rhs shape \(6, 2, 3\)\)",
    ):
        conv(lhs, rhs, (1,), "VALID")
    with pytest.raises(
        ValueError,
        match=r"rhs output feature dimension 5 must be a multiple of "
        r"feature_group_count 2",
    ):
        conv(lhs, np.zeros((5, 2, 3), np.float32), (1,), "VALID", feature_group_count=2)
    with pytest.raises(  # ranks that differ: TypeError, as JAX 0.10.2
        TypeError,
        match=r"lhs and rhs must have the same rank >= 2, got shapes "
        r"\(2, 4, 5\) and \(6, 2\)",
    ):
        conv(lhs, np.zeros((6, 2), np.float32), (1,), "VALID")
    with pytest.raises(
        ValueError,
        match=r"window and window_strides must have the same number of dimensions, but got 1 and 2",
    ):
        conv(lhs, rhs, (1, 1), ((0, 0),), feature_group_count=2)
    with pytest.raises(ValueError, match=r"window_strides \(0,\) must be positive"):
        conv(lhs, rhs, (0,), ((0, 0),), feature_group_count=2)
    with pytest.raises(ValueError, match=r"padding \(-6, 0\) of spatial dim 0 removes more"):
        conv(lhs, rhs, (1,), ((-6, 0),), feature_group_count=2)
    with pytest.raises(TypeError, match=r"padding \(\(0, 0\), \(0, 0\)\) must have one pair"):
        conv(lhs, rhs, (1,), ((0, 0), (0, 0)), feature_group_count=2)
    with pytest.raises(RuntimeError, match=r"unknown padding 'bogus'"):
        conv(lhs, rhs, (1,), "bogus", feature_group_count=2)
    with pytest.raises(ValueError, match=r"string padding 'SAME' is not supported with lhs_dil"):
        conv(lhs, rhs, (1,), "SAME", lhs_dilation=(2,), feature_group_count=2)
    with pytest.raises(TypeError, match=r"layouts 'NCW', 'OIX', 'NCW' do not name the same"):
        conv(lhs, rhs, (1,), "VALID", dimension_numbers=("NCW", "OIX", "NCW"))
    with pytest.raises(TypeError, match=r"layout 'NCWH' does not have one letter per dim"):
        conv(lhs, rhs, (1,), "VALID", dimension_numbers=("NCWH", "OIW", "NCW"))
    with pytest.raises(ValueError, match=r"cannot both be > 1"):
        conv(lhs, rhs, (1,), "VALID", feature_group_count=2, batch_group_count=2)
    with pytest.raises(ValueError, match=r"the kernel's spatial dim 0 is empty"):
        conv(lhs, np.zeros((6, 2, 0), np.float32), (1,), "VALID", feature_group_count=2)
    f32 = dict(feature_group_count=2)
    with pytest.raises(TypeError, match=r"preferred_element_type float16 must not be narrower"):
        conv(lhs, rhs, (1,), "VALID", preferred_element_type=np.float16, **f32)
    with pytest.raises(TypeError, match=r"preferred_element_type int32 is incompatible"):
        conv(lhs, rhs, (1,), "VALID", preferred_element_type=np.int32, **f32)
    i8 = np.zeros((2, 4, 5), np.int8), np.zeros((6, 2, 3), np.int8)
    with pytest.raises(TypeError, match=r"preferred_element_type uint16 must be signed"):
        conv(*i8, (1,), "VALID", preferred_element_type=np.uint16, **f32)


@pytest.mark.parametrize(
    "padding, lhs_dilation, rhs_dilation, strides",
    [
        (((0, 0), (-1, 1)), (1, 1), (1, 1), (1, 1)),
        (((-2, 1), (1, -1)), (2, 1), (1, 1), (1, 2)),
        (((-1, -1), (-2, 3)), (1, 3), (2, 1), (2, 1)),
    ],
)
def test_conv_negative_padding_crops_as_the_spec_on_both_backends(
    padding, lhs_dilation, rhs_dilation, strides
):
    # The spec: dilate the lhs, pad it (a negative amount crops), convolve.
    # The oracle is JAX's explicit lax.pad + a convolution without padding;
    # XLA CPU's convolution with a negative low padding itself computes
    # something else (refimpl's pjrt lowering pads explicitly for that reason).
    rng = np.random.default_rng(1)
    lhs = rng.normal(size=(2, 3, 5, 4)).astype(np.float32)
    rhs = rng.normal(size=(4, 3, 2, 3)).astype(np.float32)
    dn = ((0, 1, 2, 3), (0, 1, 2, 3), (0, 1, 2, 3))
    spatial = [(lo, hi, d - 1) for (lo, hi), d in zip(padding, lhs_dilation, strict=True)]
    padded = jax.lax.pad(lhs, np.float32(0), [(0, 0, 0), (0, 0, 0), *spatial])
    want = jax.lax.conv_general_dilated(
        padded,
        rhs,
        strides,
        ((0, 0), (0, 0)),
        rhs_dilation=rhs_dilation,
        dimension_numbers=jax.lax.ConvDimensionNumbers(*dn),
        precision="highest",
    )

    def f(a, b):
        return lax.conv_general_dilated(
            a, b, strides, padding, lhs_dilation, rhs_dilation, dimension_numbers=dn
        )

    for got in (f(lhs, rhs), ri.jit(f, backend="pjrt")(lhs, rhs)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)
