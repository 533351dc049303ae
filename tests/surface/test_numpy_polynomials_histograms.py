"""The last ``jax.numpy`` functions (polynomials, histograms, vectorize...)
against ``jax.numpy`` on random inputs, on the reference backend (eager) and
under ``ri.jit(..., backend="pjrt")``; NumPy is the oracle where JAX has no
such option (``gradient(edge_order=2)``) or leaves the order open (``roots``).
"""

from __future__ import annotations

import io

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from tests.helpers.pjrt_helpers import skip_without_pjrt
from tests.surface.test_numpy_surface import (
    BF16,
    BOOL,
    C64,
    F16,
    F32,
    I8,
    I32,
    U8,
    U32,
    rand,
    run_case,
)

jax.config.update("jax_platforms", "cpu")

I16, U16 = np.dtype(np.int16), np.dtype(np.uint16)
CASES: list = []


def case(name, fn, *arrays, tol=None, backends=("ref", "pjrt")):
    CASES.append(pytest.param(fn, arrays, tol, backends, id=f"{name}-{len(CASES)}"))


# --- mask_indices ----------------------------------------------------------------------
# (Variants share a case, a tuple of results: one pjrt compile each.)
case(
    "mask_indices",
    lambda m: [
        (m.mask_indices(4, m.triu, k, size=12), m.mask_indices(3, m.tril, k, size=9))
        for k in (-1, 0, 2)
    ],
)
case("mask_indices-eager", lambda m: m.mask_indices(5, m.triu, 1), backends=("ref",))
case("mask_indices-empty", lambda m: m.mask_indices(0, m.triu, 0, size=0))

# --- histograms --------------------------------------------------------------------------
POINTS = rand((40, 3), seed=4)
POINTS_INT = rand((30, 2), I32, low=-3, high=4, seed=5)
WEIGHTS = rand((40,), low=0, high=2, seed=6)
EDGES = np.array([-5.0, -1.0, 0.0, 0.5, 5.0], np.float32)
case("histogramdd-int-bins", lambda m, s: m.histogramdd(s, bins=4), POINTS)
case("histogramdd-per-dim", lambda m, s: m.histogramdd(s, bins=[2, 3, 4]), POINTS)
case("histogramdd-edges", lambda m, s, e: m.histogramdd(s, bins=[e, 3, e]), POINTS, EDGES)
case(
    "histogramdd-range-weights-density",
    lambda m, s, w: m.histogramdd(
        s, bins=3, range=[(-2, 2), None, (0, 4)], weights=w, density=True
    ),
    POINTS,
    WEIGHTS,
    tol=1e-4,
)
case("histogramdd-int-sample", lambda m, s: m.histogramdd(s, bins=3), POINTS_INT)
case(
    "histogramdd-empty", lambda m, s: m.histogramdd(s, bins=2, range=[(0, 1), (0, 1)]),
    np.zeros((0, 2), np.float32),
)  # fmt: skip
case("histogramdd-array-of-counts", lambda m, s: m.histogramdd(s, bins=np.array([2, 3, 4])), POINTS)
case(
    "histogram2d-array-pair", lambda m, s: m.histogram2d(s[:, 0], s[:, 1], np.array([2, 5])), POINTS
)
case("histogram2d-int", lambda m, s: m.histogram2d(s[:, 0], s[:, 1], bins=5), POINTS)
case("histogram2d-pair", lambda m, s: m.histogram2d(s[:, 0], s[:, 2], bins=[3, 2]), POINTS)
case("histogram2d-edges", lambda m, s, e: m.histogram2d(s[:, 1], s[:, 2], bins=e), POINTS, EDGES)
case(
    "histogram2d-weights-density",
    lambda m, s, w: m.histogram2d(s[:, 0], s[:, 1], bins=4, weights=w, density=True),
    POINTS,
    WEIGHTS,
    tol=1e-4,
)
case(
    "histogram2d-int-range",
    lambda m, s: m.histogram2d(s[:, 0], s[:, 1], bins=3, range=[(-3, 3), (-2, 4)]),
    POINTS_INT,
)

# --- polynomials -------------------------------------------------------------------------
for n_u, n_v in ((5, 2), (4, 4), (2, 3), (6, 1)):
    case(
        f"polydiv-{n_u}-{n_v}",
        lambda m, u, v: m.polydiv(u, v),
        rand((n_u,), seed=n_u),
        rand((n_v,), low=1, high=3, seed=n_v + 10),
        tol=1e-4,
    )
case(
    "polydiv-int",
    lambda m, u, v: m.polydiv(u, v),
    rand((5,), I32, seed=1),
    np.array([2, 1], np.int32),
)
case(
    "polydiv-trim",
    lambda m, u, v: m.polydiv(u, v, trim_leading_zeros=True),
    np.array([2.0, 5.0, 7.0, 9.0], np.float32),
    np.array([2.0, 1.0], np.float32),
    backends=("ref",),
)
case("poly-1d", lambda m, z: m.poly(z), rand((4,), seed=3), tol=1e-4)
case("poly-int", lambda m, z: m.poly(z), rand((3,), I32, seed=3))
case("poly-complex", lambda m, z: m.poly(z), rand((3,), C64, seed=3), tol=1e-4)
case("poly-scalar", lambda m, z: m.poly(z), np.float32(2.5))
case("poly-empty", lambda m, z: m.poly(z), np.zeros((0,), np.float32))
case("poly-matrix", lambda m, a: m.poly(a), rand((3, 3), low=-2, high=2, seed=8), tol=1e-4)
case("poly-matrix-1", lambda m, a: m.poly(a), rand((1, 1), seed=8), tol=1e-4)

# --- Bessel and windows ---------------------------------------------------------------------
WIDE = np.concatenate([rand((20,), low=-30, high=30, seed=1), [0.0, -0.0, 8.0, -8.0, 1e-3]])
for dtype, tol in ((F32, 2e-6), (F16, 1e-3), (BF16, 1e-2)):
    case(f"i0-{dtype.name}", lambda m, x: m.i0(x), WIDE.astype(dtype), tol=tol)
case("i0-int", lambda m, x: m.i0(x), rand((2, 3), I32, low=-9, high=9), tol=2e-6)
case("i0-rank0", lambda m, x: m.i0(x), np.float32(3.5), tol=2e-6)
case("i0-empty", lambda m, x: m.i0(x), np.zeros((0, 2), np.float32))
case("kaiser", lambda m: [m.kaiser(M, 4.5) for M in (0, 1, 2, 7, 12)], tol=2e-6)
case("kaiser-beta0", lambda m: m.kaiser(5, 0.0))
case("kaiser-traced-beta", lambda m, b: m.kaiser(6, b), np.float32(2.0), tol=2e-6)

# --- floating point and bits ------------------------------------------------------------
SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, 3.5, -1e-30, 1e30, np.inf, -np.inf, np.nan, 1e-45])
for dtype in (F32, F16, BF16):
    with np.errstate(over="ignore"):  # 1e30 is inf in float16, on purpose
        special = SPECIAL.astype(dtype)
    case(
        f"spacing-{dtype.name}",
        lambda m, x, y: (m.spacing(x), m.spacing(y)),
        special,
        rand((3, 4), dtype),
        tol=0,
    )
case("spacing-int", lambda m, x: m.spacing(x), rand((5,), I32), tol=0)
case("spacing-rank0", lambda m, x: m.spacing(x), np.float32(-2.0), tol=0)
COUNTED = [rand((3, 5), BOOL)]
for dtype in (I8, I16, I32, U8, U16, U32):
    info = np.iinfo(dtype)
    values = np.random.default_rng(3).integers(info.min, info.max, (3, 5), endpoint=True)
    values = values.astype(dtype)
    values.flat[:2] = [info.min, info.max]
    COUNTED.append(values)
case("bitwise_count", lambda m, *xs: [m.bitwise_count(x) for x in xs], *COUNTED)
case("bitwise_count-int64", lambda m, x: m.bitwise_count(x), np.array([-(2**31), 7]))
case("bitwise_count-rank0", lambda m, x: m.bitwise_count(x), np.int32(-1))
case("bitwise_count-empty", lambda m, x: m.bitwise_count(x), np.zeros((0,), np.uint8))

BITS = rand((3, 11), I32, low=-1, high=2, seed=2)
BYTES = rand((2, 3), U8, low=0, high=255, seed=1)
for order in ("big", "little"):
    case(
        f"packbits-{order}",
        lambda m, x, o=order: [m.packbits(x, axis=a, bitorder=o) for a in (None, 0, 1, -1)],
        BITS,
    )
    case(
        f"unpackbits-{order}",
        lambda m, x, o=order: [m.unpackbits(x, axis=a, bitorder=o) for a in (None, 0, 1, -1)],
        BYTES,
    )
case("packbits-bool", lambda m, x: m.packbits(x), rand((17,), BOOL))
case("packbits-empty", lambda m, x: m.packbits(x, axis=0), np.zeros((0, 3), np.uint8))
case("packbits-rank0", lambda m, x: m.packbits(x), np.int32(3))
case(
    "unpackbits-count",
    lambda m, x: [m.unpackbits(x, axis=1, count=c) for c in (0, 3, 8, 13, 30, -2)],
    rand((2, 2), U8, low=0, high=255),
)
case("bits-roundtrip", lambda m, x: m.unpackbits(m.packbits(x, axis=1), axis=1, count=11), BITS)

# --- gradient -----------------------------------------------------------------------------
GRID = rand((4, 6), seed=9)
COORDS_0 = np.array([0.0, 0.5, 1.7, 2.0], np.float32)
COORDS_1 = np.cumsum(rand((6,), low=0.2, high=1.5, seed=3)).astype(np.float32)
case("gradient-array", lambda m, f, x: m.gradient(f, x, axis=1), GRID, COORDS_1, tol=1e-4)
case(
    "gradient-arrays",
    lambda m, f, x0, x1: m.gradient(f, x0, x1),
    GRID,
    COORDS_0,
    COORDS_1,
    tol=1e-4,
)
case("gradient-mixed", lambda m, f, x1: m.gradient(f, 2.0, x1), GRID, COORDS_1, tol=1e-4)
case("gradient-int", lambda m, f, x: m.gradient(f, x), rand((5,), I32), COORDS_1[:5], tol=1e-4)
case("gradient-no-axes", lambda m, f: m.gradient(f, axis=()), GRID)
case("gradient-f16", lambda m, f: m.gradient(f, 0.5), rand((2, 5), F16), tol=1e-2)

# --- trim_zeros (eager only) ------------------------------------------------------------------
TRIM = np.array([0, 0, 3, 0, 1, 2, 0], np.int32)
TRIM2 = np.zeros((4, 5), np.float32)
TRIM2[1:3, 2] = 1.0
TRIM2[2, 3] = -2.0
for trim in ("fb", "f", "b", "x"):
    case(f"trim_zeros-{trim}", lambda m, x, t=trim: m.trim_zeros(x, t), TRIM, backends=("ref",))
for axis in (None, 0, 1, (0, 1)):
    case(
        f"trim_zeros-2d-{axis}",
        lambda m, x, a=axis: m.trim_zeros(x, axis=a),
        TRIM2,
        backends=("ref",),
    )
case("trim_zeros-all-zero", lambda m, x: m.trim_zeros(x), np.zeros(4), backends=("ref",))

# --- vectorize with a signature ------------------------------------------------------------


def _matvec(a, b):
    return a @ b


def _stats(x):
    return x.mean(), x - x.mean()


case(
    "vectorize-matvec",
    lambda m, a, b: m.vectorize(_matvec, signature="(m,n),(n)->(m)")(a, b),
    rand((2, 3, 4)),
    rand((5, 1, 1, 4), seed=2),
    tol=1e-4,
)
case(
    "vectorize-two-outputs",
    lambda m, x: m.vectorize(_stats, signature="(n)->(),(n)")(x),
    rand((3, 2, 5)),
)
case(
    "vectorize-scalar-core",
    lambda m, x, y: m.vectorize(lambda a, b: a * b + 1, signature="(),()->()")(x, y),
    rand((2, 3)),
    rand((3,), seed=1),
)
case(
    "vectorize-excluded",
    lambda m, x: m.vectorize(
        lambda v, p, *, scale: (v**p) * scale, excluded={1, "scale"}, signature="(n)->(n)"
    )(x, 2, scale=3.0),
    rand((2, 4)),
)
case(
    "vectorize-reduce",
    lambda m, x: m.vectorize(lambda v: m.sum(v * v), signature="(k)->()")(x),
    rand((4, 3)),
    tol=1e-5,
)
case(
    "vectorize-no-signature-kwargs",
    lambda m, x: m.vectorize(lambda v, *, c: v + c, excluded={"c"})(x, c=2.0),
    rand((2, 3)),
)

# --- ufunc objects (frompyfunc) -------------------------------------------------------------


def _affine(m):
    return m.frompyfunc(lambda a, b: a * b + 1, 2, 1, identity=0)


def _smaller(m):
    return m.frompyfunc(lambda a, b: m.minimum(a, b), 2, 1)


UF = (rand((3, 4)) * 0.5).astype(np.float32)
UI = np.array([1, 3, 3, 0], np.int32)
case("ufunc-call", lambda m, x: _affine(m)(x, x[0]), UF)
case("ufunc-two-outputs", lambda m, x: m.frompyfunc(lambda a: (a + 1, a * 2), 1, 2)(x), UF)
case(
    "ufunc-reduce",
    lambda m, x: (
        _affine(m).reduce(x),
        _affine(m).reduce(x, axis=1, keepdims=True),
        _affine(m).reduce(x, axis=None),
        _smaller(m).reduce(x, axis=1),
        _affine(m).reduce(x, initial=2.0),
        _affine(m).reduce(x, where=x > 0, axis=1),
    ),
    UF,
    tol=1e-4,
)
case("ufunc-reduce-empty", lambda m, x: _affine(m).reduce(x[:0], axis=0), UF)
case("ufunc-reduce-int", lambda m, x: _affine(m).reduce(x), rand((3, 2), I32, low=-2, high=3))
case(
    "ufunc-accumulate",
    lambda m, x: (_affine(m).accumulate(x), _affine(m).accumulate(x, axis=1)),
    UF,
    tol=1e-4,
)
case("ufunc-reduceat", lambda m, x, i: _affine(m).reduceat(x, i[:3], axis=1), UF, UI, tol=1e-4)
case("ufunc-outer", lambda m, x: _affine(m).outer(x[0], x[:, 1]), UF)
case(
    "ufunc-at",
    lambda m, x, i: (
        _affine(m).at(x[0], i, 2.0, inplace=False),
        _affine(m).at(x, (i[:2], i[2:]), x[0, :2], inplace=False),
        _affine(m).at(x[0], 1, 3.0, inplace=False),
    ),
    UF,
    UI,
    tol=1e-4,
)

# --- creation from buffers ---------------------------------------------------------------
case("frombuffer", lambda m: m.frombuffer(np.arange(5, dtype=np.int16).tobytes(), np.int16))
case("fromstring", lambda m: m.fromstring("1 2 3.5", dtype=np.float32, sep=" "))


@pytest.mark.parametrize("fn, arrays, tol, backends", CASES)
def test_against_jax(fn, arrays, tol, backends):
    run_case(fn, arrays, tol, backends)


# --- roots: the same multiset of roots (JAX's order is LAPACK's) -------------------------------


def _assert_same_roots(ours, expected, tol):
    ours, expected = np.asarray(ours), np.asarray(expected)
    assert ours.shape == expected.shape and ours.dtype == expected.dtype
    nan_ours, nan_expected = np.isnan(ours), np.isnan(expected)
    np.testing.assert_array_equal(nan_ours, nan_expected)
    left = list(expected[~nan_expected])
    for r in ours[~nan_ours]:
        distance = [abs(r - e) for e in left]
        k = int(np.argmin(distance))
        assert distance[k] <= tol * max(1.0, abs(left[k])), (ours, expected)
        left.pop(k)


ROOTS = [
    np.array([1.0, -6.0, 11.0, -6.0], np.float32),
    np.array([2.0, 0.0, 1.0], np.float32),  # complex pair
    rand((7,), seed=11),
    rand((5,), I32, low=1, high=5, seed=2),
    rand((4,), C64, seed=5),
    np.array([0.0, 0.0, 1.0, -3.0, 2.0], np.float32),  # leading zeros
    np.array([1.0, -3.0, 2.0, 0.0], np.float32),  # a zero root
    np.array([3.0], np.float32),
    np.array([], np.float32),
]


@pytest.mark.parametrize("k", range(len(ROOTS)))
def test_roots_against_jax(k):
    p = ROOTS[k]
    expected = jnp.roots(jnp.asarray(p))
    _assert_same_roots(rnp.roots(p), expected, 1e-4)
    expected = jnp.roots(jnp.asarray(p), strip_zeros=False)
    _assert_same_roots(rnp.roots(p, strip_zeros=False), expected, 1e-4)
    skip_without_pjrt()
    jitted = ri.jit(lambda q: rnp.roots(q, strip_zeros=False), backend="pjrt")
    _assert_same_roots(jitted(p), expected, 1e-4)


def test_roots_needs_concrete_p_to_strip():
    with pytest.raises(ri.ConcretizationTypeError, match="roots: p .*strip_zeros=False"):
        ri.jit(rnp.roots)(np.array([1.0, 2.0]))


# --- gradient(edge_order=2): NumPy is the oracle (JAX raises NotImplementedError) -------------


@pytest.mark.parametrize("spacing", ["none", "scalar", "array"])
def test_gradient_edge_order_2_against_numpy(spacing):
    f = rand((5, 6), seed=2).astype(np.float64)
    args = {"none": (), "scalar": (0.5,), "array": (COORDS_1.astype(np.float64),)}[spacing]
    axis = 1
    expected = np.gradient(f, *args, axis=axis, edge_order=2)
    ours = rnp.gradient(f.astype(np.float32), *args, axis=axis, edge_order=2)
    np.testing.assert_allclose(np.asarray(ours), expected, rtol=1e-4, atol=1e-4)
    skip_without_pjrt()
    jitted = ri.jit(lambda x: rnp.gradient(x, *args, axis=axis, edge_order=2), backend="pjrt")
    np.testing.assert_allclose(np.asarray(jitted(f.astype(np.float32))), expected, 1e-4, 1e-4)


# --- einsum_path ---------------------------------------------------------------------------------

PATHS = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk,kl->il", [(2, 50), (50, 3), (3, 40)]),
    ("ij,jk,kl,lm->im", [(2, 6), (6, 7), (7, 3), (3, 5)]),
    ("ii,ij,jk", [(3, 3), (3, 4), (4, 2)]),
    ("...ij,...jk,k->...i", [(2, 3, 4), (1, 4, 5), (5,)]),
    ("a,b,c", [(2,), (3,), (4,)]),
]


@pytest.mark.parametrize("subscripts, shapes", PATHS)
def test_einsum_path(subscripts, shapes):
    operands = [rand(shape, seed=k) for k, shape in enumerate(shapes)]
    path, text = rnp.einsum_path(subscripts, *operands)
    jax_path, _ = jnp.einsum_path(subscripts, *operands, optimize="greedy")
    if len(operands) == 2:
        assert path == jax_path == [(0, 1)]
    assert isinstance(text, str) and subscripts in text
    # Contracting n operands pairwise takes n - 1 steps down to one operand.
    assert len(path) == len(operands) - 1 and all(len(step) == 2 for step in path)
    expected = jnp.einsum(subscripts, *operands)
    # Either path gives the same einsum, in jax and in refimpl, on both backends.
    for given in (path, jax_path):
        np.testing.assert_allclose(
            np.asarray(jnp.einsum(subscripts, *operands, optimize=given)), expected, 1e-4, 1e-4
        )
        run_case(lambda m, *ops, g=given: m.einsum(subscripts, *ops, optimize=g), operands, 1e-4)
    assert rnp.einsum_path(subscripts, *operands, optimize=jax_path)[0] == list(jax_path)


def test_einsum_path_errors():
    with pytest.raises(ValueError, match="einsum: invalid contraction path step"):
        rnp.einsum("ij,jk->ik", np.ones((2, 2)), np.ones((2, 2)), optimize=[(0, 2)])
    with pytest.raises(ValueError, match="einsum_path: size of label 'j'"):
        rnp.einsum_path("ij,jk", np.ones((2, 3)), np.ones((2, 2)))


# --- transformations ------------------------------------------------------------------------


def test_i0_derivative_against_jax():
    x = np.array([0.0, 0.5, -2.0, 9.0, -12.0], np.float32)
    expected = jax.vmap(jax.grad(jnp.i0))(x)
    np.testing.assert_allclose(np.asarray(ri.vmap(ri.grad(rnp.i0))(x)), expected, 1e-5, 1e-6)
    assert np.asarray(ri.grad(rnp.i0)(np.float32(0.0))) == 0.0
    kaiser = ri.grad(lambda b: rnp.kaiser(7, b).sum())(np.float32(3.0))
    np.testing.assert_allclose(
        np.asarray(kaiser), jax.grad(lambda b: jnp.kaiser(7, b).sum())(3.0), 1e-5
    )


@pytest.mark.slow  # ~7 s: JAX compiles vmap(grad(poly)) and grad(polydiv)
def test_poly_polydiv_under_grad_and_vmap():
    z = rand((3, 4), seed=5)
    expected = jax.vmap(jax.grad(lambda r: jnp.poly(r).sum()))(jnp.asarray(z))
    ours = ri.vmap(ri.grad(lambda r: rnp.poly(r).sum()))(z)
    np.testing.assert_allclose(np.asarray(ours), expected, 1e-4, 1e-4)
    u, v = rand((5,), seed=1), rand((2,), low=1, high=2, seed=2)

    def div(m, a, b):
        q, r = m.polydiv(a, b)
        return (q * q).sum() + r.sum()

    expected = jax.grad(lambda a, b: div(jnp, a, b), argnums=(0, 1))(u, v)
    ours = ri.grad(lambda a, b: div(rnp, a, b), argnums=(0, 1))(u, v)
    for o, e in zip(ours, expected, strict=True):
        np.testing.assert_allclose(np.asarray(o), e, 1e-4, 1e-4)


@pytest.mark.slow
def test_histogram_packbits_under_grad_and_vmap():
    def weighted(m, w):
        return (m.histogramdd(POINTS, bins=3, weights=w)[0] ** 2).sum()

    expected = jax.grad(lambda w: weighted(jnp, w))(WEIGHTS)
    np.testing.assert_allclose(np.asarray(ri.grad(lambda w: weighted(rnp, w))(WEIGHTS)), expected)
    bits = rand((4, 3, 9), I32, low=0, high=2, seed=3)
    expected = jax.vmap(lambda b: jnp.packbits(b, axis=1))(bits)
    np.testing.assert_array_equal(
        np.asarray(ri.vmap(lambda b: rnp.packbits(b, axis=1))(bits)), expected
    )


def test_eager_pjrt_arrays():
    """Eager calls on device arrays (the fast path jits them; trim_zeros and
    roots fall back to the normal path because they need values)."""
    skip_without_pjrt()
    x = ri.device_put(TRIM, ri.devices("pjrt")[0])
    np.testing.assert_array_equal(np.asarray(rnp.trim_zeros(x)), np.asarray(jnp.trim_zeros(TRIM)))
    np.testing.assert_array_equal(
        np.asarray(rnp.bitwise_count(x)), np.asarray(jnp.bitwise_count(TRIM))
    )


# --- errors and the remaining names -------------------------------------------------------------


def test_trim_zeros_needs_concrete_input():
    with pytest.raises(ri.ConcretizationTypeError, match="trim_zeros: filt"):
        ri.jit(rnp.trim_zeros)(TRIM)


def test_errors_name_the_function_and_argument():
    with pytest.raises(ValueError, match="histogramdd: sample must be 2-d"):
        rnp.histogramdd(np.ones(3))
    with pytest.raises(ValueError, match="histogramdd: weights must have one weight"):
        rnp.histogramdd(np.ones((3, 2)), weights=np.ones(2))
    with pytest.raises(ValueError, match="histogramdd: bins must give one entry"):
        rnp.histogramdd(np.ones((3, 2)), bins=[2, 3, 4])
    with pytest.raises(ValueError, match="histogramdd: range must be 2 pairs"):
        rnp.histogramdd(np.ones((3, 2)), range=[(0, 1)])
    with pytest.raises(ValueError, match="polydiv: the coefficients must be a 1-d"):
        rnp.polydiv(np.ones((2, 2)), np.ones(2))
    with pytest.raises(ValueError, match="poly: input must be 1-d"):
        rnp.poly(np.ones((2, 3)))
    with pytest.raises(ValueError, match="i0: unsupported input type complex64"):
        rnp.i0(np.ones(2, np.complex64))
    with pytest.raises(ValueError, match="spacing: complex"):
        rnp.spacing(np.ones(2, np.complex64))
    with pytest.raises(TypeError, match="bitwise_count: integer or boolean"):
        rnp.bitwise_count(np.ones(2, np.float32))
    with pytest.raises(TypeError, match="packbits: integer or boolean"):
        rnp.packbits(np.ones(2, np.float32))
    with pytest.raises(ValueError, match="packbits: bitorder"):
        rnp.packbits(np.ones(2, np.int32), bitorder="middle")
    with pytest.raises(TypeError, match="unpackbits: uint8 input required"):
        rnp.unpackbits(np.ones(2, np.int32))
    with pytest.raises(ValueError, match="gradient: edge_order must be 1 or 2"):
        rnp.gradient(np.ones(4), edge_order=3)
    with pytest.raises(ValueError, match="gradient: each differentiated axis needs at least 3"):
        rnp.gradient(np.ones(2), edge_order=2)
    with pytest.raises(ValueError, match="gradient: a spacing array must be 1-d"):
        rnp.gradient(np.ones(4), np.ones(3))
    with pytest.raises(TypeError, match="gradient: 2 spacings for 1 axes"):
        rnp.gradient(np.ones(4), 1.0, 2.0)
    with pytest.raises(ValueError, match="vectorize: not a valid gufunc signature"):
        rnp.vectorize(_matvec, signature="(m,n)->m")
    with pytest.raises(ValueError, match="vectorize: inconsistent size for core dim 'n'"):
        rnp.vectorize(_matvec, signature="(m,n),(n)->(m)")(np.ones((2, 3)), np.ones(4))
    with pytest.raises(TypeError, match="vectorize: the signature has 1 outputs"):
        rnp.vectorize(_stats, signature="(n)->()")(np.ones(3))
    with pytest.raises(ValueError, match="vectorize: output 0 has shape"):
        rnp.vectorize(lambda v: v, signature="(n)->()")(np.ones(3))
    with pytest.raises(NotImplementedError, match="fromfile: not supported"):
        rnp.fromfile("x")
    with pytest.raises(NotImplementedError, match="fromiter: not supported"):
        rnp.fromiter(iter([1.0]), np.float32)
    unary = rnp.frompyfunc(lambda a: a + 1, 1, 1)
    with pytest.raises(ValueError, match="reduce: only for binary ufuncs"):
        unary.reduce(np.ones(3))
    with pytest.raises(NotImplementedError, match="at: arrays are immutable"):
        _affine(rnp).at(np.ones(3), 0, 1.0)
    with pytest.raises(ValueError, match="does not have an identity, so to use a where mask"):
        _smaller(rnp).reduce(np.ones(3), where=np.ones(3, bool))
    with pytest.raises(ValueError, match="zero-size reduction"):
        _smaller(rnp).reduce(np.ones((0,)))


def test_reexports_and_io():
    assert rnp.array_repr is jnp.array_repr and rnp.array_str is jnp.array_str
    assert rnp.ComplexWarning is jnp.ComplexWarning
    assert (rnp.character, rnp.flexible, rnp.object_) == (jnp.character, jnp.flexible, jnp.object_)
    assert isinstance(rnp.zeros(2), rnp.ndarray) and not isinstance(np.zeros(2), rnp.ndarray)
    seen = []
    ri.jit(lambda x: seen.append(isinstance(x, rnp.ndarray)) or x)(np.float32(1.0))
    assert seen == [True]
    with rnp.printoptions(precision=2):
        assert rnp.get_printoptions()["precision"] == 2
    buffer = io.BytesIO()
    rnp.save(buffer, np.arange(3.0, dtype=np.float32))
    buffer.seek(0)
    loaded = rnp.load(buffer)
    assert isinstance(loaded, ri.Array) and loaded.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(loaded), [0.0, 1.0, 2.0])
    source = np.arange(4.0, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(rnp.from_dlpack(source)), source)


def test_every_jax_numpy_name_is_present_or_documented():
    """``set(dir(jax.numpy)) - set(dir(refimpl.numpy))`` is exactly the list
    docs/numpy.md gives under "Left out" (kept in sync by this test)."""
    missing = {n for n in dir(jnp) if not n.startswith("_")} - set(dir(rnp))
    documented = {
        "int1", "int2", "uint1", "uint2",
        "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e8m0fnu",
    }  # fmt: skip
    assert missing == documented
