"""The wider ``refimpl.numpy`` surface against ``jax.numpy`` (the oracle).

Every case is a function ``fn(np_module, *arrays)`` run three ways on the same
random inputs: ``jnp`` (expected), ``rnp`` eagerly (ref backend) and ``rnp``
under ``ri.jit(..., backend="pjrt")``. Results (any nesting of tuples/lists)
are compared leaf by leaf: same shape and dtype, values exact for integers
and bools, within a per-dtype tolerance for floats (NaNs equal).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from tests.helpers.pjrt_helpers import skip_without_pjrt

jax.config.update("jax_platforms", "cpu")

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32, C64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.complex64)
I8, I32, U8, U32 = np.dtype(np.int8), np.dtype(np.int32), np.dtype(np.uint8), np.dtype(np.uint32)
BOOL = np.dtype(bool)
TOL = {F16: 4e-3, BF16: 3e-2, F32: 3e-5, C64: 3e-5}


def rand(shape, dtype=F32, low=-5, high=5, seed=0):
    rng = np.random.default_rng(seed + 7 * len(shape) + sum(shape))
    dtype = np.dtype(dtype)
    if dtype == BOOL:
        return rng.random(shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, low), min(info.max, high), size=shape).astype(dtype)
    if dtype == C64:
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return (rng.uniform(low, high, size=shape)).astype(dtype)


def _leaves(x):
    if isinstance(x, (tuple, list)):
        return [leaf for item in x for leaf in _leaves(item)]
    return [x]


def assert_same(ours, expected, tol=None, what=""):
    ours_leaves, expected_leaves = _leaves(ours), _leaves(expected)
    assert len(ours_leaves) == len(expected_leaves), (what, ours, expected)
    for o, e in zip(ours_leaves, expected_leaves, strict=True):
        if isinstance(e, (bool, int, float, np.bool_)) and not hasattr(o, "dtype"):
            assert o == e, (what, o, e)
            continue
        e = np.asarray(e)
        o_arr = np.asarray(o)
        assert o_arr.shape == e.shape, (what, o_arr.shape, e.shape)
        assert o_arr.dtype == e.dtype, (what, o_arr.dtype, e.dtype)
        dtype = e.dtype
        if np.issubdtype(dtype, np.integer) or dtype == BOOL:
            np.testing.assert_array_equal(o_arr, e, err_msg=what)
        else:
            t = TOL.get(dtype, 3e-5) if tol is None else tol
            np.testing.assert_allclose(
                o_arr.astype(np.complex128 if dtype == C64 else np.float64),
                e.astype(np.complex128 if dtype == C64 else np.float64),
                rtol=t,
                atol=t,
                equal_nan=True,
                err_msg=what,
            )


def run_case(fn, arrays, tol=None, backends=("ref", "pjrt")):
    expected = fn(jnp, *[jnp.asarray(a) for a in arrays])
    if "ref" in backends:
        assert_same(fn(rnp, *arrays), expected, tol, "ref")
    if "pjrt" in backends:
        skip_without_pjrt()
        jitted = ri.jit(lambda *a: fn(rnp, *a), backend="pjrt")
        assert_same(jitted(*arrays), expected, tol, "pjrt")


CASES: list = []


def case(name, fn, *arrays, tol=None, backends=("ref", "pjrt"), slow=False):
    marks = [pytest.mark.slow] if slow else []
    CASES.append(pytest.param(fn, arrays, tol, backends, id=f"{name}-{len(CASES)}", marks=marks))


# --- elementwise math --------------------------------------------------------------------

A = rand((3, 4))
B = rand((4,), seed=1)
POS = rand((3, 4), low=0.1, high=9)
for dtype in (F32, F16, BF16, I32, U8, BOOL):
    x = rand((2, 3), dtype)
    y = rand((3,), dtype, seed=3)
    tag = dtype.name
    for name in ("deg2rad", "rad2deg", "exp2", "sinc", "trunc", "signbit", "rint"):
        if dtype == BOOL and name in ("trunc", "signbit", "rint"):
            continue
        case(f"{name}-{tag}", lambda m, x, n=name: getattr(m, n)(x), x)
    for name in ("hypot", "logaddexp", "logaddexp2", "heaviside", "copysign", "fmax", "fmin"):
        if dtype == BOOL and name in ("fmax", "fmin"):
            continue
        case(f"{name}-{tag}", lambda m, x, y, n=name: getattr(m, n)(x, y), x, y)
    if dtype != BOOL:
        case(f"fmod-{tag}", lambda m, x, y: m.fmod(x, y), x, y + (1 if dtype == U8 else 0))
        case(f"divmod-{tag}", lambda m, x, y: m.divmod(x, y), x, y + (1 if dtype == U8 else 0))
    case(f"isclose-{tag}", lambda m, x, y: m.isclose(x, y), x, y)
    case(f"allclose-{tag}", lambda m, x: m.allclose(x, x), x)
    case(f"array_equal-{tag}", lambda m, x: m.array_equal(x, x), x)
case("log2", lambda m, x: m.log2(x), POS)
case("log10", lambda m, x: m.log10(x), POS)
case("arcsinh", lambda m, x: m.arcsinh(x), A * 100, tol=1e-5)
case("arccosh", lambda m, x: m.arccosh(x), POS + 1, tol=1e-5)
case("arctanh", lambda m, x: m.arctanh(x), A / 6, tol=1e-5)
case("modf", lambda m, x: m.modf(x), A)
case("float_power", lambda m, x, y: m.float_power(x, y), POS, B)
case("ldexp", lambda m, x, e: m.ldexp(x, e), A, rand((4,), I32, -3, 3))
case("nextafter", lambda m, x, y: m.nextafter(x, y), A, B)
case(
    "signbit-zero",
    lambda m, x: m.signbit(x),
    np.array([-0.0, 0.0, -1.0, np.inf, -np.inf, np.nan, -np.nan], F32),
)
for dtype in (F32, F16, BF16):
    case(
        f"frexp-{dtype.name}",
        lambda m, x: m.frexp(x),
        np.array([0.0, 1.0, -3.5, 0.3, np.inf, -np.inf, np.nan, 100.0, -0.0, 6e4], dtype),
    )
case("copysign-zero", lambda m, x: m.copysign(2.0, x), np.array([-0.0, 0.0, -3.0], F32))
case(
    "isclose-inf-nan",
    lambda m, x: m.isclose(x, x[::-1], equal_nan=True),
    np.array([np.inf, np.nan, 1.0, np.nan, np.inf], F32),
)
case("isclose-tol", lambda m, x, y: m.isclose(x, y, rtol=1e-2, atol=0.5), A, A + 0.3)
case("array_equal-shape", lambda m, x: m.array_equal(x, x[:1]), A)
case(
    "array_equal-nan", lambda m, x: m.array_equal(x, x, equal_nan=True), np.array([np.nan, 1], F32)
)
case("array_equiv", lambda m, x, y: m.array_equiv(x, y), A, A[:1])
case("angle", lambda m, z: m.angle(z), rand((5,), C64))
case("angle-deg", lambda m, z: m.angle(z, deg=True), rand((5,), C64))
case("angle-real", lambda m, x: m.angle(x), A)
case("gcd", lambda m, x, y: m.gcd(x, y), rand((6,), I32, -30, 30), rand((6,), I32, -30, 30, 1))
case("lcm", lambda m, x, y: m.lcm(x, y), rand((6,), I32, -12, 12), rand((6,), I32, -12, 12, 1))
case("nan_to_num", lambda m, x: m.nan_to_num(x), np.array([np.nan, np.inf, -np.inf, 1.5], F32))
case(
    "nan_to_num-args",
    lambda m, x: m.nan_to_num(x, nan=1.0, posinf=2.0, neginf=-2.0),
    np.array([np.nan, np.inf, -np.inf, 1.5], F32),
)
case(
    "isposinf",
    lambda m, x: (m.isposinf(x), m.isneginf(x)),
    np.array([np.nan, np.inf, -np.inf, 1.5], F32),
)
case("isreal", lambda m, z: (m.isreal(z), m.iscomplex(z)), np.array([1 + 0j, 1j], C64))
case("fabs", lambda m, x: m.fabs(x), rand((4,), I32))
case("scalar-rank0", lambda m, x: (m.hypot(x, 2.0), m.logaddexp(x, x)), np.float32(1.5))
case("empty-shape", lambda m, x: (m.hypot(x, x), m.sinc(x), m.isclose(x, x)), np.zeros((0, 3), F32))


# --- creation ---------------------------------------------------------------------------------

case("tri", lambda m: (m.tri(3), m.tri(3, 4, 1, dtype=m.int32), m.tri(4, 2, -1)))
case("tril-triu", lambda m, x: (m.tril(x), m.triu(x), m.tril(x, -1), m.triu(x, 2)), A)
case("tril-batch", lambda m, x: (m.tril(x), m.triu(x, -1)), rand((2, 3, 3), I32))
case("diag", lambda m, v: (m.diag(v), m.diag(v, 1), m.diag(v, -2)), B)
case("diag-matrix", lambda m, x: (m.diag(x), m.diag(x, 1), m.diag(x, -2), m.diag(x, 5)), A)
case(
    "diagonal",
    lambda m, x: (m.diagonal(x), m.diagonal(x, 1, 0, 2), m.diagonal(x, -1, 2, 1)),
    rand((3, 4, 5)),
)
case("diagflat", lambda m, x: (m.diagflat(x), m.diagflat(x, -1)), rand((2, 2)))
case("identity", lambda m: (m.identity(3), m.identity(2, dtype=m.int8)))
case("empty", lambda m: (m.empty((2, 3)), m.empty(2, m.int32)))
case("meshgrid", lambda m, x, y: (m.meshgrid(x, y), m.meshgrid(x, y, indexing="ij")), B, A[0, :3])
case("meshgrid-3", lambda m, x, y, z: m.meshgrid(x, y, z, sparse=True), B, A[0, :3], B[:2])
case("indices", lambda m: (m.indices((2, 3)), m.indices((2, 3), sparse=True)))
case(
    "logspace",
    lambda m: (m.logspace(0, 2, 5), m.logspace(1, 2, 4, base=2.0, endpoint=False)),
    tol=1e-4,
)
case("geomspace", lambda m: (m.geomspace(1, 1000, 4), m.geomspace(-1, -16, 5)), tol=1e-4)
case("fromfunction", lambda m: m.fromfunction(lambda i, j: i * 10 + j, (2, 3), dtype=m.int32))
case("copy", lambda m, x: m.copy(x), A)
case("vander", lambda m, x: (m.vander(x), m.vander(x, 2, increasing=True)), B)
case("scalar-types", lambda m: (m.float32(3), m.int32(3.7), m.bool_(2), m.uint8(7), m.int8(-3)))
case("scalar-types-array", lambda m, x: (m.int32(x), m.float16(x), m.bfloat16(x)), A)


# --- stacking, splitting, products ----------------------------------------------------------

V = rand((3,))
case("hstack", lambda m, x, y: (m.hstack([x, y]), m.hstack([x[0], y[0]])), A, A + 1)
case("vstack", lambda m, x, y: (m.vstack([x, y]), m.vstack([x[0], y[0]])), A, A)
case("dstack", lambda m, x, y: (m.dstack([x, y]), m.dstack([x[0], y[0]])), A, A)
case("column_stack", lambda m, x, y: m.column_stack([x, y]), V, V)
case("stack-promote", lambda m, x, y: m.hstack([x, y]), rand((2,), I8), rand((2,), F16))
case(
    "array_split",
    lambda m, x: (m.array_split(x, 3), m.array_split(x, [1, 5], axis=0)),
    rand((7, 2)),
)
case(
    "hsplit", lambda m, x: (m.hsplit(x, 2), m.vsplit(x, 3), m.dsplit(rand((2, 2, 4)), 2)), A[:, :4]
)
case(
    "atleast",
    lambda m, s, v, x: (m.atleast_1d(s), m.atleast_2d(s, v), m.atleast_3d(s, v, x)),
    np.float32(2),
    V,
    A,
)
case(
    "roll",
    lambda m, x: (m.roll(x, 2), m.roll(x, -1, 0), m.roll(x, (1, 2), (0, 1)), m.roll(x, 5, 1)),
    A,
)
case("roll-traced", lambda m, x, s: m.roll(x, s, 1), A, np.int32(3))
case(
    "rot90",
    lambda m, x: [m.rot90(x, k) for k in range(-1, 5)] + [m.rot90(rand((2, 3, 4)), 1, (2, 0))],
    A,
)
case("trace", lambda m, x: (m.trace(x), m.trace(x, 1), m.trace(rand((2, 3, 4)), -1, 1, 2)), A)
case("trace-int", lambda m, x: m.trace(x), rand((3, 3), I8))
case("outer", lambda m, x, y: m.outer(x, y), A, B)
case("inner", lambda m, x, y: (m.inner(x, y), m.inner(V, V), m.inner(x, 2.0)), A, rand((2, 4)))
case("vdot", lambda m, x, y: m.vdot(x, y), A, A + 1, tol=1e-4)
case(
    "vdot-complex", lambda m, x, y: m.vdot(x, y), rand((3,), C64), rand((3,), C64, seed=2), tol=1e-4
)
case("kron", lambda m, x, y: (m.kron(x, y), m.kron(V, x)), rand((2, 2)), rand((3, 2), I32))
case(
    "tensordot",
    lambda m, x, y: (
        m.tensordot(x, y, 1),
        m.tensordot(x, y.T, ((0, 1), (0, 1))),
        m.tensordot(x, y, ((1, 0), (0, 1))),
    ),
    A,
    rand((4, 3)),
    tol=1e-4,
)
case("tensordot-0", lambda m, x, y: m.tensordot(x, y, 0), V, B)
case(
    "cross",
    lambda m, x, y: (
        m.cross(x, y),
        m.cross(x[:, :2], y[:, :2]),
        m.cross(x, y[:, :2]),
        m.cross(x[:, :2], y),
    ),
    rand((4, 3)),
    rand((4, 3), seed=5),
)
case("cross-axis", lambda m, x, y: m.cross(x, y, axis=0), rand((3, 4)), rand((3, 4), seed=5))
case(
    "diff", lambda m, x: (m.diff(x), m.diff(x, 2, axis=0), m.diff(x, prepend=0.0), m.diff(x, 0)), A
)
case("diff-bool", lambda m, x: m.diff(x), rand((6,), BOOL))
case("diff-int", lambda m, x: m.diff(x, append=x[:, :1]), rand((2, 5), U8))
case("ediff1d", lambda m, x: (m.ediff1d(x), m.ediff1d(x, to_end=np.array([9.0]), to_begin=1.0)), A)
for mode in ("full", "same", "valid"):
    case(
        f"convolve-{mode}",
        lambda m, a, v, mo=mode: (m.convolve(a, v, mo), m.convolve(v, a, mo)),
        rand((7,)),
        rand((3,), seed=1),
        tol=1e-4,
    )
    case(
        f"correlate-{mode}",
        lambda m, a, v, mo=mode: (m.correlate(a, v, mo), m.correlate(v, a, mo)),
        rand((7,)),
        rand((4,), seed=1),
        tol=1e-4,
    )
case("convolve-int", lambda m, a, v: m.convolve(a, v), rand((5,), I32), rand((2,), I32))
case(
    "interp",
    lambda m, x, xp, fp: (m.interp(x, xp, fp), m.interp(x, xp, fp, left=-9.0, right=9.0)),
    np.linspace(-1, 6, 15).astype(F32),
    np.array([0, 1, 2.5, 4], F32),
    rand((4,)),
)
case(
    "histogram",
    lambda m, x: (
        m.histogram(x),
        m.histogram(x, 4, range=(-2, 2)),
        m.histogram(x, 3, weights=x + 5, density=True),
    ),
    rand((20,)),
    tol=1e-5,
    slow=True,
)
case("fliplr", lambda m, x: (m.fliplr(x), m.flipud(x)), A)
case("append", lambda m, x: (m.append(x, x), m.append(x, x[:1], axis=0)), A)
case("unstack", lambda m, x: (m.unstack(x), m.unstack(x, axis=1)), A)
case(
    "matrix_transpose",
    lambda m, x: (m.matrix_transpose(x), m.permute_dims(x, (1, 2, 0))),
    rand((2, 3, 4)),
)


# --- statistics --------------------------------------------------------------------------

WITH_NAN = A.copy()
WITH_NAN[0, 1] = WITH_NAN[2, 3] = np.nan
ALL_NAN_ROW = WITH_NAN.copy()
ALL_NAN_ROW[1] = np.nan
for dtype in (F32, F16, I32, BOOL):
    x = rand((3, 4), dtype)
    tag = dtype.name
    case(
        f"var-{tag}",
        lambda m, x: (m.var(x), m.var(x, 0), m.var(x, 1, ddof=1, keepdims=True)),
        x,
        tol=1e-3 if dtype == F16 else 1e-5,
    )
    case(
        f"std-{tag}",
        lambda m, x: (m.std(x), m.std(x, (0, 1), ddof=1)),
        x,
        tol=1e-3 if dtype == F16 else 1e-5,
    )
    case(
        f"ptp-{tag}", lambda m, x: (m.ptp(x), m.ptp(x, 1, keepdims=True)), x
    ) if dtype != BOOL else None
    case(f"count_nonzero-{tag}", lambda m, x: (m.count_nonzero(x), m.count_nonzero(x, 0)), x)
    case(
        f"median-{tag}",
        lambda m, x: (m.median(x), m.median(x, 0), m.median(x, 1, keepdims=True)),
        x,
    ) if dtype != BOOL else None
case("var-complex", lambda m, z: (m.var(z), m.std(z, 0)), rand((3, 2), C64), tol=1e-5)
case("var-where", lambda m, x, w: m.var(x, 1, where=w), A, rand((3, 4), BOOL), tol=1e-5)
case(
    "average",
    lambda m, x, w: (
        m.average(x),
        m.average(x, 1, w),
        m.average(x, 0, returned=True),
        m.average(x, None, x + 6, returned=True),
    ),
    A,
    B + 6,
)
for method in ("linear", "lower", "higher", "midpoint", "nearest"):
    case(
        f"quantile-{method}",
        lambda m, x, q, me=method: (
            m.quantile(x, q, method=me),
            m.quantile(x, q, axis=1, method=me),
            m.quantile(x, 0.3, axis=(0, 1), keepdims=True, method=me),
            m.percentile(x, 40.0, axis=0, method=me),
        ),
        A,
        np.array([0.0, 0.25, 0.5, 1.0], F32),
    )
case("quantile-nan", lambda m, x: (m.quantile(x, 0.5, 1), m.median(x, 0)), WITH_NAN)
case("quantile-int", lambda m, x: (m.quantile(x, 0.5), m.median(x, 1)), rand((3, 4), I32))
case(
    "nanquantile",
    lambda m, x: (
        m.nanquantile(x, 0.5, 1),
        m.nanmedian(x, 0),
        m.nanmedian(x),
        m.nanpercentile(x, 30.0, 1),
    ),
    ALL_NAN_ROW,
)
for name in ("nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar", "nanstd"):
    case(
        name,
        lambda m, x, n=name: (
            getattr(m, n)(x),
            getattr(m, n)(x, 0),
            getattr(m, n)(x, 1, keepdims=True),
        ),
        ALL_NAN_ROW,
        tol=1e-5,
    )
    case(
        f"{name}-int", lambda m, x, n=name: getattr(m, n)(x, 1), rand((3, 4), I32, -3, 3), tol=1e-5
    )
case(
    "nanargmax",
    lambda m, x: (m.nanargmax(x, 1), m.nanargmin(x, 1), m.nanargmax(WITH_NAN)),
    ALL_NAN_ROW,
)
case("nanvar-ddof", lambda m, x: m.nanvar(x, 1, ddof=1), WITH_NAN, tol=1e-5)
case("nancumsum", lambda m, x: (m.nancumsum(x), m.nancumsum(x, 1), m.nancumprod(x, 0)), WITH_NAN)
case(
    "cumulative_sum",
    lambda m, x: (
        m.cumulative_sum(x, axis=1),
        m.cumulative_sum(x, axis=0, include_initial=True),
        m.cumulative_prod(x[0], include_initial=True),
    ),
    A,
)
case("amax", lambda m, x: (m.amax(x, 0), m.amin(x)), A)


# --- indexing helpers, sorting, searching -------------------------------------------------

IDX = rand((3, 2), I32, -4, 4)
case(
    "take_along_axis",
    lambda m, x, i: (m.take_along_axis(x, i, 1), m.take_along_axis(x, i[:2, :1], 0)),
    A,
    IDX,
)
case(
    "take_along_axis-bcast", lambda m, x, i: m.take_along_axis(x, i, 1), A, rand((1, 5), I32, -4, 4)
)
case(
    "take_along_axis-none",
    lambda m, x, i: m.take_along_axis(x, i, None),
    A,
    rand((5,), I32, -12, 12),
)
case(
    "take_along_axis-oob",
    lambda m, x, i: m.take_along_axis(x, i, 1),
    A,
    np.array([[9], [-9], [0]], np.int32),
)
case("take_along_axis-argsort", lambda m, x: m.take_along_axis(x, m.argsort(x, 1), 1), A)
case(
    "put_along_axis",
    lambda m, x, i: m.put_along_axis(x, i, 9.0, 1, inplace=False),
    A,
    rand((3, 1), I32, 0, 4),
)
case(
    "put_along_axis-values",
    lambda m, x, i, v: m.put_along_axis(x, i, v, 0, inplace=False),
    A,
    rand((1, 4), I32, -3, 3),
    rand((1, 4), seed=3),
)
case("where-3", lambda m, c, x: m.where(c, x, 0), rand((3, 4), BOOL), A)
case(
    "nonzero",
    lambda m, x: (
        m.nonzero(x, size=5),
        m.nonzero(x, size=20, fill_value=-1),
        m.where(x, size=3),
        m.nonzero(x[0], size=2, fill_value=(7,)),
    ),
    rand((3, 4), BOOL),
)
case(
    "argwhere",
    lambda m, x: (
        m.argwhere(x, size=4),
        m.argwhere(x, size=20, fill_value=-2),
        m.flatnonzero(x, size=6),
    ),
    rand((3, 4), I32, -1, 2),
)
case(
    "nonzero-eager",
    lambda m, x: (m.nonzero(x), m.argwhere(x), m.flatnonzero(x)),
    rand((3, 4), BOOL),
    backends=("ref",),
)
case("argwhere-0d", lambda m, x: m.argwhere(x, size=2), np.float32(3))
case("select", lambda m, x: m.select([x < -1, x > 1], [x * 2, x * 3], -7.0), A)
case("select-int", lambda m, x: m.select([x < 0], [x], 5), rand((5,), I32))
case(
    "choose",
    lambda m, i, a, b, c: (
        m.choose(i, [a, b, c], mode="clip"),
        m.choose(i, [a, b, c], mode="wrap"),
    ),
    rand((3, 4), I32, -1, 5),
    A,
    B,
    np.float32(2),
)
case(
    "piecewise",
    lambda m, x: m.piecewise(x, [x < 0, x > 2], [lambda v: -v, lambda v: v * 2, 0.5]),
    A,
)
case("piecewise-2", lambda m, x: m.piecewise(x, [x < 0], [lambda v: v**2, 1.0]), A)
case("ix_", lambda m, a, b: m.ix_(a, b), rand((3,), I32), rand((2,), I32))
case("ix_-index", lambda m, x: x[m.ix_(np.array([0, 2]), np.array([1, 3]))], A)
case(
    "unravel_index",
    lambda m, i: (m.unravel_index(i, (3, 4)), m.unravel_index(i, (2, 3, 2))),
    rand((5,), I32, -14, 14),
)
case(
    "ravel_multi_index",
    lambda m, a, b: (
        m.ravel_multi_index((a, b), (4, 5), mode="clip"),
        m.ravel_multi_index((a, b), (4, 5), mode="wrap"),
        m.ravel_multi_index((a, b), (4, 5), order="F", mode="clip"),
    ),
    rand((6,), I32, -6, 6),
    rand((6,), I32, -7, 7),
)
SORT_ME = np.array(
    [[3.0, np.nan, -1.0, 3.0, 0.0, -0.0], [2.0, 2.0, np.inf, -np.inf, 1.0, np.nan]], F32
)
for dtype in (F32, I32, U8, BOOL):
    x = rand((4, 5), dtype, -3, 3)
    case(
        f"argsort-{dtype.name}",
        lambda m, x: (
            m.argsort(x),
            m.argsort(x, 0),
            m.argsort(x, None),
            m.argsort(x, descending=True),
        ),
        x,
    )
    case(
        f"partition-{dtype.name}",
        lambda m, x: (
            m.partition(x, 2),
            m.partition(x, 0, axis=0),
            m.argpartition(x, 3),
            m.argpartition(x, 1, axis=0),
        ),
        x,
    ) if dtype != BOOL else None
case("argsort-nan", lambda m, x: (m.argsort(x), m.argsort(x, descending=True)), SORT_ME)
case(
    "lexsort",
    lambda m, a, b: (m.lexsort((a, b)), m.lexsort([b, a], axis=0)),
    rand((3, 4), I32, 0, 2),
    rand((3, 4), I32, 0, 3),
)
SORTED = np.array([-2.0, -1.0, -1.0, 0.5, 3.0, 3.0, np.nan], F32)
case(
    "searchsorted",
    lambda m, a, v: (m.searchsorted(a, v), m.searchsorted(a, v, side="right")),
    SORTED,
    np.array([[-3.0, -1.0, 3.0], [np.nan, 0.0, 9.0]], F32),
)
case(
    "searchsorted-int",
    lambda m, a, v: (m.searchsorted(a, v), m.searchsorted(a, 2)),
    np.array([1, 2, 2, 5], np.int32),
    rand((5,), I32, 0, 7),
)
case(
    "searchsorted-sorter",
    lambda m, a, v: m.searchsorted(a, v, sorter=m.argsort(a)),
    rand((6,), I32, 0, 9),
    rand((4,), I32, 0, 9),
)
case(
    "digitize",
    lambda m, x, b: (
        m.digitize(x, b),
        m.digitize(x, b, right=True),
        m.digitize(x, b[::-1]),
        m.digitize(x, b[::-1], right=True),
    ),
    np.array([-1.0, 0.0, 0.5, 1.0, 2.5, 9.0], F32),
    np.array([0.0, 1.0, 2.5], F32),
)


# --- sets ------------------------------------------------------------------------------------

U = np.array([3, 1, 3, 0, 1, 7, 3], np.int32)
UF = np.array([2.0, np.nan, 1.0, 2.0, np.nan, -0.0, 0.0], F32)
case(
    "unique-size",
    lambda m, x: (m.unique(x, size=6), m.unique(x, size=2), m.unique(x, size=6, fill_value=-1)),
    U,
)
case("unique-all", lambda m, x: m.unique(x, True, True, True, size=6), U)
case("unique-all-2d", lambda m, x: m.unique(x, True, True, True, size=5), rand((3, 4), I32, 0, 4))
case(
    "unique-float", lambda m, x: (m.unique(x, size=5), m.unique(x, return_counts=True, size=5)), UF
)
case(
    "unique-eager", lambda m, x: (m.unique(x), m.unique(x, True, True, True)), U, backends=("ref",)
)
case("unique_counts", lambda m, x: (m.unique_values(x, size=4), m.unique_counts(x, size=4)), U)
case("union1d", lambda m, a, b: m.union1d(a, b, size=8), U, np.array([9, 1, -2], np.int32))
case(
    "intersect1d",
    lambda m, a, b: (m.intersect1d(a, b, size=3), m.intersect1d(a, b, size=3, fill_value=0)),
    U,
    np.array([9, 1, 7, 7], np.int32),
)
case(
    "setdiff1d",
    lambda m, a, b: (m.setdiff1d(a, b, size=3), m.setdiff1d(a, b, size=3, fill_value=5)),
    U,
    np.array([9, 1], np.int32),
)
case(
    "setxor1d",
    lambda m, a, b: m.setxor1d(a, b, size=4, fill_value=0),
    U,
    np.array([9, 1], np.int32),
)
case(
    "sets-eager",
    lambda m, a, b: (m.union1d(a, b), m.intersect1d(a, b), m.setdiff1d(a, b), m.setxor1d(a, b)),
    U,
    np.array([9, 1, 7], np.int32),
    backends=("ref",),
)
case(
    "isin",
    lambda m, a, b: (m.isin(a, b), m.isin(a, b, invert=True)),
    rand((3, 4), I32, 0, 6),
    np.array([1, 3, 9], np.int32),
)
case("isin-nan", lambda m, a: m.isin(a, a), UF)


# --- .at[] ------------------------------------------------------------------------------------

IDX1 = np.array([1, 1, -1, 9, -9], np.int32)
MASK = rand((3, 4), BOOL, seed=4)  # repeated, negative and out-of-range indices
for method in ("set", "add", "multiply", "min", "max", "subtract", "divide", "power"):
    v = np.float32(1.5)
    case(
        f"at-{method}",
        lambda m, x, i, meth=method: getattr(m.asarray(x).at[i], meth)(2.0),
        rand((6,), low=0.5),
        IDX1,
    )
    case(
        f"at-{method}-2d",
        lambda m, x, meth=method: (
            getattr(m.asarray(x).at[1, ::2], meth)(3.0),
            getattr(m.asarray(x).at[:, np.array([0, 2])], meth)(-1.0),
            getattr(m.asarray(x).at[..., -1], meth)(x[0, :3]),
            getattr(m.asarray(x).at[MASK], meth)(0.5),
        ),
        rand((3, 4), low=0.5),
    )
case(
    "at-int",
    lambda m, x: (
        m.asarray(x).at[1].add(2.7),
        m.asarray(x).at[1].set(2.7),
        m.asarray(x).at[2].min(-5),
        m.asarray(x).at[0].mul(3),
    ),
    rand((4,), I32),
)
case(
    "at-get",
    lambda m, x, i: (
        m.asarray(x).at[i].get(),
        m.asarray(x).at[i].get(mode="fill"),
        m.asarray(x).at[i].get(mode="fill", fill_value=-1.0),
        m.asarray(x).at[7].get(),
        m.asarray(x).at[1:3].get(),
    ),
    rand((6,)),
    IDX1,
)
case(
    "at-clip",
    lambda m, x, i: (
        m.asarray(x).at[i].set(5.0, mode="clip"),
        m.asarray(x).at[i % 6].add(1.0, mode="promise_in_bounds"),
    ),
    rand((6,)),
    IDX1,
)
case(
    "at-static-oob",
    lambda m, x: (m.asarray(x).at[10].set(1.0), m.asarray(x).at[-10].add(1.0)),
    rand((6,)),
)
case(
    "at-traced-index",
    lambda m, x, i: (m.asarray(x).at[i].set(0.0), m.asarray(x).at[i, 1].add(1.0)),
    rand((3, 4)),
    np.int32(-1),
)
case("at-apply", lambda m, x: m.asarray(x).at[1:].apply(lambda v: v * 10), rand((4,)))
case(
    "at-rank0",
    lambda m, x: (m.asarray(x).at[()].set(3.0), m.asarray(x).at[()].add(1.0)),
    np.float32(2),
)
case(
    "at-bool",
    lambda m, x: (m.asarray(x).at[1].set(True), m.asarray(x).at[0].max(True)),
    np.array([False, False, True]),
)


@pytest.mark.parametrize("fn, arrays, tol, backends", CASES)
def test_against_jax(fn, arrays, tol, backends):
    run_case(fn, arrays, tol, backends)


# --- dtypes, scalar types, constants -----------------------------------------------------------


def test_dtype_names_and_constants():
    for name in (
        "float32",
        "float16",
        "bfloat16",
        "int8",
        "int32",
        "uint8",
        "uint32",
        "bool_",
        "complex64",
        "int16",
        "uint16",
    ):
        ours, theirs = getattr(rnp, name), getattr(jnp, name)
        assert np.dtype(ours) == np.dtype(theirs), name
        assert rnp.zeros(2, ours).dtype == np.dtype(theirs), name
        value = ours(3)
        assert isinstance(value, ri.Array) and value.dtype == theirs(3).dtype
        assert not value.weak_type
    assert rnp.float64(1).dtype == jnp.float64(1).dtype  # float32 without x64
    for name in ("pi", "e", "inf", "euler_gamma"):
        assert getattr(rnp, name) == getattr(jnp, name), name
    assert np.isnan(rnp.nan) and rnp.newaxis is None
    assert rnp.issubdtype(rnp.float32, rnp.floating) and rnp.issubdtype(rnp.bfloat16, rnp.floating)
    assert not rnp.issubdtype(rnp.int32, rnp.floating)
    assert rnp.issubdtype(np.uint8, rnp.unsignedinteger)
    assert rnp.finfo(rnp.bfloat16).eps == jnp.finfo(jnp.bfloat16).eps
    assert rnp.iinfo(rnp.int8).min == -128
    assert rnp.result_type(rnp.int8, 2.0) == jnp.result_type(jnp.int8, 2.0)
    assert rnp.result_type(rnp.int8, rnp.uint8) == jnp.result_type(jnp.int8, jnp.uint8)
    assert rnp.promote_types(np.int8, np.float16) == jnp.promote_types(jnp.int8, jnp.float16)
    x = rnp.ones((2, 3))
    assert (rnp.ndim(x), rnp.shape(x), rnp.size(x), rnp.size(x, 1)) == (2, (2, 3), 6, 3)
    assert rnp.isscalar(3.0) and not rnp.isscalar(x)
    assert rnp.iscomplexobj(rnp.zeros(2, rnp.complex64)) and rnp.isrealobj(x)
    for dtype in (np.int8, np.uint8, np.float32, np.bool_, np.complex64, BF16):
        for kind in (
            "bool",
            "signed integer",
            "unsigned integer",
            "integral",
            "real floating",
            "complex floating",
            "numeric",
            np.float32,
            ("bool", "integral"),
        ):
            assert rnp.isdtype(dtype, kind) == jnp.isdtype(dtype, kind), (dtype, kind)
    assert x.astype(rnp.int32).dtype == np.int32


# --- data-dependent sizes and errors -----------------------------------------------------------


def test_size_is_required_under_jit():
    x = np.array([0, 1, 2], np.int32)
    for fn in (rnp.nonzero, rnp.argwhere, rnp.flatnonzero, rnp.unique):
        with pytest.raises(ri.ConcretizationTypeError, match="size"):
            ri.jit(fn)(x)
    with pytest.raises(ri.ConcretizationTypeError, match="size"):
        ri.jit(lambda a: rnp.where(a))(x)


def test_errors_name_the_function():
    x = rnp.arange(4.0)
    with pytest.raises(ValueError, match="put_along_axis.*inplace=False"):
        rnp.put_along_axis(x, np.array([0]), 1.0, 0)
    with pytest.raises(ValueError, match="at\\[\\].set: mode"):
        x.at[0].set(1.0, mode="wrap")
    with pytest.raises(ValueError, match=r"invalid entry in choice array \(choose\)"):
        rnp.choose(np.array([0, 3]), [x, x])
    with pytest.raises(ValueError, match="quantile: method"):
        rnp.quantile(x, 0.5, method="bogus")
    with pytest.raises(ValueError, match="partition: kth"):
        rnp.partition(x, 4)
    with pytest.raises(ValueError, match="gcd: arguments must be integers"):
        rnp.gcd(x, x)
    with pytest.raises(TypeError, match="at\\[\\].add: does not accept dtype bool"):
        rnp.zeros(2, bool).at[0].add(True)
    with pytest.raises(TypeError, match="var.*position 0"):
        rnp.var([1.0, 2.0])


EINSUM = [
    ("ij,jk,kl,lm->im", [(2, 6), (6, 7), (7, 3), (3, 5)]),
    ("ij,jk,kl,lm", [(2, 6), (6, 7), (7, 3), (3, 5)]),
    ("ab,bc,ca->", [(3, 4), (4, 5), (5, 3)]),
    ("i,i,j,k->jk", [(4,), (4,), (3,), (2,)]),
    ("...ij,...jk,k->...i", [(2, 3, 4), (2, 4, 5), (5,)]),
    ("bij,bjk,bkl->bil", [(2, 3, 4), (2, 4, 5), (2, 5, 2)]),
]


@pytest.mark.parametrize("subscripts, shapes", EINSUM)
def test_einsum_many_operands(subscripts, shapes):
    operands = [rand(shape, seed=k) for k, shape in enumerate(shapes)]
    run_case(lambda m, *ops: m.einsum(subscripts, *ops), operands, tol=1e-4)


# --- smaller functions (refimpl/numpy/_selection.py, _index_tricks.py...) ---------------------

EXTRAS = {
    "broadcast_arrays": (lambda m, x, y: m.broadcast_arrays(x, y), [A, B]),
    "broadcast_shapes": (lambda m: m.asarray(m.broadcast_shapes((2, 1), (3,))), []),
    "concat": (lambda m, x: m.concat([x, x], axis=1), [A]),
    "rollaxis": (
        lambda m, x: (m.rollaxis(x, 2), m.rollaxis(x, 0, 3), m.rollaxis(x, 1, -1)),
        [rand((2, 3, 4))],
    ),
    "tril_indices": (
        lambda m: (m.tril_indices(3), m.triu_indices(4, 1, 3), m.tril_indices(3, -1, 5)),
        [],
    ),
    "indices_from": (
        lambda m, x: (
            m.tril_indices_from(x),
            m.triu_indices_from(x, -1),
            m.diag_indices_from(x[:3, :3]),
        ),
        [A],
    ),
    "diag_indices": (lambda m: m.diag_indices(3, 3), []),
    "fill_diagonal": (
        lambda m, x: (
            m.fill_diagonal(x, 7.0, inplace=False),
            m.fill_diagonal(x, m.arange(2.0), inplace=False),
        ),
        [A],
    ),
    "bincount": (
        lambda m, x, w: (
            m.bincount(x, length=6),
            m.bincount(x, w, length=4),
            m.bincount(x, minlength=3, length=3),
        ),
        [rand((9,), I32, 0, 6), rand((9,))],
    ),
    "compress": (
        lambda m, c, x: (
            m.compress(c, x, axis=1, size=4),
            m.compress(c[:3], x, axis=0, size=2, fill_value=9.0),
            m.extract(x > 0, x, size=5),
        ),
        [np.array([True, False, True, True]), A],
    ),
    "delete": (
        lambda m, x: (
            m.delete(x, 1),
            m.delete(x, np.array([0, -1]), axis=1),
            m.delete(x, slice(1, None, 2), axis=0),
        ),
        [A],
    ),
    "trapezoid": (
        lambda m, y, x: (m.trapezoid(y), m.trapezoid(y, x), m.trapezoid(y, dx=0.5, axis=0)),
        [A, B],
    ),
    "cov": (
        lambda m, x: (
            m.cov(x),
            m.cov(x, rowvar=False),
            m.cov(x[0], x[1]),
            m.cov(x, bias=True),
            m.corrcoef(x),
        ),
        [A],
    ),
    "poly": (
        lambda m, p, q, x: (
            m.polyval(p, x),
            m.polyadd(p, q),
            m.polysub(q, p),
            m.polymul(p, q),
            m.polyder(p),
            m.polyder(p, 2),
        ),
        [rand((4,)), rand((2,)), A],
    ),
    "windows": (
        lambda m: (
            m.hamming(5),
            m.hanning(6),
            m.blackman(7),
            m.bartlett(5),
            m.hamming(1),
            m.bartlett(0),
        ),
        [],
    ),
    "matvec": (lambda m, x, v: (m.matvec(x, v), m.vecmat(v[:3], x)), [A, B]),
    "apply_along_axis": (
        lambda m, x: (
            m.apply_along_axis(lambda v: v.sum(), 1, x),
            m.apply_along_axis(lambda v: v * 2, 0, x),
            m.apply_along_axis(lambda v: m.outer(v, v), 1, x),
        ),
        [A],
    ),
    "unique_inverse": (
        lambda m, x: (tuple(m.unique_inverse(x, size=5)), tuple(m.unique_all(x, size=5))),
        [U],
    ),
}


@pytest.mark.parametrize("name", sorted(EXTRAS))
def test_extras_against_jax(name):
    fn, arrays = EXTRAS[name]
    run_case(fn, arrays, tol=1e-4)


def test_extras_errors():
    with pytest.raises(ValueError, match="fill_diagonal.*inplace=False"):
        rnp.fill_diagonal(rnp.zeros((2, 2)), 1.0)
    with pytest.raises(ri.ConcretizationTypeError, match="bincount: the length"):
        ri.jit(rnp.bincount)(np.array([1, 2], np.int32))
    assert rnp.s_[1:2] == np.s_[1:2] and rnp.iterable([1]) and rnp.bool is rnp.bool_


MORE_EXTRAS = {
    "insert": (
        lambda m, x: (
            m.insert(x, 1, 9.0, axis=1),
            m.insert(x, np.array([0, 2, 2]), 5.0, axis=0),
            m.insert(x, 2, m.arange(3.0), axis=1),
            m.insert(x, 3, -1.0),
            m.insert(x, slice(0, 2), 7.0, axis=1),
        ),
        [A],
    ),
    "resize": (lambda m, x: (m.resize(x, (5, 5)), m.resize(x, 2), m.resize(x, (2, 3))), [A]),
    "put": (
        lambda m, x: (
            m.put(x, np.array([0, 5, -1]), np.array([9.0, 8.0, 7.0]), inplace=False),
            m.put(x, np.array([1, 14]), 3.0, mode="clip", inplace=False),
            m.put(x, np.array([1, 14]), 3.0, mode="wrap", inplace=False),
        ),
        [A],
    ),
    "polyint": (
        lambda m, p: (m.polyint(p), m.polyint(p, 2), m.polyint(p, 2, k=np.array([1.0, 2.0]))),
        [rand((4,))],
    ),
    "polyfit": (
        lambda m, x, y: (m.polyfit(x, y, 2), m.polyfit(x, y, 1, w=x * x)),
        [rand((8,), seed=1), rand((8,), seed=2)],
    ),
    "apply_over_axes": (lambda m, x: m.apply_over_axes(m.sum, x, [0, 2]), [rand((2, 3, 4))]),
    "sort_complex": (lambda m, x: m.sort_complex(x), [rand((5,), C64)]),
    "unwrap": (
        lambda m, x: (m.unwrap(x), m.unwrap(x, axis=0), m.unwrap(x, discont=4.0, period=5.0)),
        [A * 3],
    ),
}


@pytest.mark.parametrize("name", sorted(MORE_EXTRAS))
def test_more_extras_against_jax(name):
    fn, arrays = MORE_EXTRAS[name]
    run_case(fn, arrays, tol=1e-3)


LAST_EXTRAS = {
    "place": (
        lambda m, x, k: (
            m.place(x, k, np.array([9.0, 8.0]), inplace=False),
            m.place(x, k, 1.0, inplace=False),
        ),
        [A, MASK],
    ),
    "gradient": (
        lambda m, x: (
            m.gradient(x[0]),
            m.gradient(x),
            m.gradient(x, 2.0, axis=1),
            m.gradient(x, 0.5, 2.0),
        ),
        [A],
    ),
    "block": (
        lambda m, x, y: (
            m.block([[x, y[:, :1]], [m.ones((1, 4)), m.zeros((1, 1))]]),
            m.block([x[0], y[0]]),
        ),
        [A, A],
    ),
    "vectorize": (lambda m, x, y: m.vectorize(lambda a, b: a * 2 + b)(x, y), [A, B]),
    "grids": (
        lambda m: (
            m.mgrid[0:3, 0:2],
            m.mgrid[0:1:5j],
            m.ogrid[0:3, 1:4:2],
            m.r_[1:3, 5, m.array([7, 8])],
            m.c_[m.array([1, 2]), m.array([3, 4])],
        ),
        [],
    ),
}


@pytest.mark.parametrize("name", sorted(LAST_EXTRAS))
def test_last_extras_against_jax(name):
    fn, arrays = LAST_EXTRAS[name]
    run_case(fn, arrays, tol=1e-4)


CREATIONS = {
    "ones": lambda m: m.ones(3),
    "zeros_int": lambda m: m.zeros((2, 2), np.int32),
    "full_weak": lambda m: m.full(2, 3.0),
    "asarray_scalar": lambda m: m.asarray(2.0),
    "asarray_list": lambda m: m.asarray([1.0, 2.0]),
    "array_numpy": lambda m: m.array(np.arange(3, dtype=np.int32)),
    "arange": lambda m: m.arange(5),
    "linspace": lambda m: m.linspace(0.0, 1.0, 5),
    "eye": lambda m: m.eye(3),
    "identity": lambda m: m.identity(2, np.float32),
    "tri": lambda m: m.tri(3),
    "zeros_like_numpy": lambda m: m.zeros_like(np.ones(2, np.float32)),
}


@pytest.mark.parametrize("name", list(CREATIONS))
def test_creation_functions_land_on_the_config_backend(name):
    skip_without_pjrt()
    # docs/semantics.md: eager operations follow config.backend; JAX's
    # creation functions land on the default device
    make = CREATIONS[name]
    want = make(jnp)
    old = ri.config.backend
    ri.config.update("backend", "pjrt")
    try:
        out = make(rnp)
    finally:
        ri.config.update("backend", old)
    assert out.devices() == {ri.devices("pjrt")[0]} and not out.committed
    assert out.dtype == want.dtype and out.weak_type == want.weak_type
    np.testing.assert_array_equal(np.asarray(out), np.asarray(want))
    with ri.default_device(ri.devices("pjrt")[0]):
        assert make(rnp).devices() == {ri.devices("pjrt")[0]}
    assert make(rnp).devices() == {ri.devices("ref")[0]}  # the ref default again


def test_creation_from_a_refimpl_array_or_in_a_trace_stays_put():
    skip_without_pjrt()
    on_ref = ri.device_put(np.ones(3, np.float32), ri.devices("ref")[0])
    old = ri.config.backend
    ri.config.update("backend", "pjrt")
    try:
        assert rnp.asarray(on_ref) is on_ref
        assert rnp.zeros_like(on_ref).devices() == {ri.devices("ref")[0]}
        inside = ri.jit(lambda: rnp.ones(3) * 2, backend="ref")()
        assert inside.devices() == {ri.devices("ref")[0]}
    finally:
        ri.config.update("backend", old)


_NAMED_RESULTS = {
    "unique_all": lambda m, x: m.unique_all(x, size=5),
    "unique_inverse": lambda m, x: m.unique_inverse(x, size=5),
    "unique_counts": lambda m, x: m.unique_counts(x, size=5),
    "slogdet": lambda m, x: m.linalg.slogdet(m.reshape(x[:4], (2, 2)).astype(np.float32) + 1),
    "eigh": lambda m, x: m.linalg.eigh(m.eye(2) * x[0]),
}


@pytest.mark.parametrize("name", sorted(_NAMED_RESULTS))
def test_named_tuple_results_under_jit(backend, name):
    """A jnp function's NamedTuple result comes out of a jit as that NamedTuple
    with JAX's fields and values (the jit boundary rebuilds it field by field)."""
    fn = _NAMED_RESULTS[name]
    x = np.array([3, 1, 3, 2, 1, 5, 3], np.int32)
    want = jax.jit(lambda x: fn(jnp, x))(x)
    got = ri.jit(lambda x: fn(rnp, x), backend=backend)(x)
    assert got._fields == want._fields  # JAX's class is private (_UniqueAllResult)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5)


@pytest.mark.parametrize(
    "a,b",
    [
        (np.dtype("float64"), np.float32),
        (np.dtype("int64"), np.int8),
        (np.dtype("complex128"), np.float32),
        ("float64", "int32"),
        (np.dtype("float64"), float),
        (float, np.int32),
        (int, np.float16),
        (complex, np.float16),
        (int, float),
    ],
    ids=str,
)
def test_promote_types_of_64_bit_dtypes_and_python_types_as_jax(a, b):
    # a NumPy dtype equal to a Python type (np.dtype("float64") == float) is a dtype
    assert rnp.promote_types(a, b) == jnp.promote_types(a, b)
    sixty_four = {"float64": rnp.float64, "int64": rnp.int64, "complex128": rnp.complex128}
    if isinstance(a, np.dtype) and a.name in sixty_four:
        assert rnp.promote_types(sixty_four[a.name], b) == jnp.promote_types(a, b)
