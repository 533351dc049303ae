"""The operator table of JAX's tests/lax_numpy_operators_test.py, swept
(issue 29): every op record (one-to-one, compound, bitwise, shifts, the
operator overloads and their right-hand forms), each dtype combination the
record lists at a broadcasting shape pair, 0-d arrays, empty arrays and
Python scalars of each kind on either side. ``jax.numpy.<op>`` on JAX 0.10.2
is the oracle: refimpl must give the same shape, dtype, weak type and values
(per-dtype tolerances; NaN equal to NaN) or raise the same exception class,
eagerly on ``ref`` and under ``jit`` on both backends.

The default run takes a deterministic slice of the table (a few cases per
record); ``-m slow`` runs all of it (about 11,000 cases)."""

from __future__ import annotations

import itertools
import operator
import warnings
import zlib
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp

# --- dtypes and shapes, as the JAX test names them (x64 off) ----------------------------

BF16 = ml_dtypes.bfloat16
F = [BF16, np.float16, np.float32]
C = [np.complex64]
I = [np.int8, np.int16, np.int32]  # noqa: E741
U = [np.uint8, np.uint16, np.uint32]
B = [np.bool_]
DEF, INEX, NUM, REAL = F + I, F + C, F + C + I + U, F + I + U
ALL = NUM + B


class _Scalar:
    """A shape marker: a Python scalar (weakly typed) rather than an array."""

    def __repr__(self) -> str:
        return "py"


class _NpScalar:
    """A shape marker: a NumPy scalar, given to jnp/rnp as a 0-d array."""

    def __repr__(self) -> str:
        return "np"


PY, NPS = _Scalar(), _NpScalar()
PY_OF_KIND = {"b": bool, "i": int, "u": int, "f": float, "c": complex}


# --- input generators (the rng kinds of JAX's test_util, re-derived) --------------------


def _kind(dtype) -> str:
    return "f" if dtype == BF16 else np.dtype(dtype).kind


def _cast(x, dtype):
    """Floats to ``dtype``, rounding for ints and clipping into unsigned range."""
    k = _kind(dtype)
    if k == "c":
        return x.astype(dtype)
    x = np.real(x)
    if k == "b":
        return x > 0
    if k in "iu":
        info = np.iinfo(dtype)
        return np.clip(np.round(x), info.min, info.max).astype(dtype)
    return x.astype(dtype)


def _normal(r, shape, dtype, scale=3.0):
    x = r.standard_normal(shape) * scale
    if _kind(dtype) == "c":
        x = x + 1j * r.standard_normal(shape) * scale
    if _kind(dtype) == "u":
        x = np.abs(x)
    return x


def _special(values, frac=0.3):
    def make(r, shape, dtype, base):
        x = base(r, shape, dtype)
        if _kind(dtype) in "fc" and x.size:
            pick = r.random(shape) < frac
            x = np.where(pick, r.choice(values, shape), x)
        return x

    return make


def _gen(kind: str, **kw):
    """rng kind -> f(r, shape, dtype) -> ndarray."""

    def default(r, s, d):
        return _cast(_normal(r, s, d, kw.get("scale", 3.0)), d)

    def positive(r, s, d):
        x = np.abs(_normal(r, s, d)) + 0.5
        return _cast(x if _kind(d) != "c" else x + 0.5j, d)

    def nonzero(r, s, d):
        x = _normal(r, s, d)
        x = np.where(np.abs(x) < 1, np.sign(x + 0.1) * (np.abs(x) + 1), x)
        return _cast(x, d)

    def small(r, s, d):
        return _cast(_normal(r, s, d, 0.3) if _kind(d) in "fc" else _normal(r, s, d), d)

    def small_positive(r, s, d):
        return _cast(np.abs(_normal(r, s, d, 0.3)) + 0.01 if _kind(d) in "fc" else
                     np.abs(_normal(r, s, d)) + 1, d)  # fmt: skip

    def not_small(r, s, d):
        x = _normal(r, s, d, 40.0)
        return _cast(np.where(np.abs(x) < 5, x + np.sign(x + 0.1) * 5, x), d)

    def uniform(r, s, d):
        return _cast(r.uniform(kw["low"], kw["high"], s), d)

    def boolean(r, s, d):
        return _cast(r.integers(-1, 2, s).astype(np.float64), d)

    def fullrange(r, s, d):
        info = np.iinfo(d)
        return r.integers(info.min, info.max, s, endpoint=True, dtype=np.int64).astype(d)

    def integers(r, s, d):
        lo = kw.get("low", 0)
        return r.integers(lo, kw["high"], s).astype(d)

    def some_equal(r, s, d):
        x = default(r, s, d)
        if x.size:
            x.flat[: max(1, x.size // 2)] = x.flat[0]
        return x

    def some_zero(r, s, d):
        x = default(r, s, d)
        if x.size:
            x = np.where(r.random(s) < 0.3, np.zeros((), x.dtype), x)
        return x

    specials = {
        "some_inf": _special([np.inf, -np.inf]),
        "some_nan": _special([np.nan]),
        "some_inf_and_nan": _special([np.inf, -np.inf, np.nan]),
    }
    table = dict(
        default=default, positive=positive, nonzero=nonzero, small=small, uniform=uniform,
        small_positive=small_positive, not_small=not_small, bool=boolean, fullrange=fullrange,
        int=integers, some_equal=some_equal, some_zero=some_zero,
    )  # fmt: skip
    if kind in specials:
        spec = specials[kind]
        return lambda r, s, d: _cast(spec(r, s, d, lambda r, s, d: _normal(r, s, d)), d)
    return table[kind]


# --- the record table ---------------------------------------------------------------------


class Rec(NamedTuple):
    name: str
    nargs: int
    dtypes: list
    rng: Any
    tol: dict | float | None = None
    kwargs: dict | None = None
    kind: str = "op"  # op | bit | shift | dunder | rdunder
    shapes: str = "all"  # all | nonscalar | nonempty
    test_name: str | None = None

    @property
    def id(self) -> str:
        return self.test_name or self.name


g = _gen
RECORDS: list[Rec] = [
    Rec("abs", 1, ALL, g("default")), Rec("add", 2, ALL, g("default")),
    Rec("ceil", 1, F + I + U, g("default")), Rec("conj", 1, NUM, g("default")),
    Rec("equal", 2, ALL, g("some_equal")), Rec("exp", 1, NUM, g("default")),
    Rec("fabs", 1, F, g("default")),
    Rec("float_power", 2, INEX, g("default", scale=1.0),
        {BF16: 1e-2, np.float32: 1e-3, np.complex64: 2e-4}),
    Rec("floor", 1, F + I + U, g("default")),
    Rec("greater", 2, ALL, g("some_equal")), Rec("greater_equal", 2, ALL, g("some_equal")),
    Rec("i0", 1, F, g("default"), {np.float16: 3e-3}), Rec("ldexp", 2, I, g("default")),
    Rec("less", 2, ALL, g("some_equal")), Rec("less_equal", 2, ALL, g("some_equal")),
    Rec("log", 1, NUM, g("positive")),
    Rec("logical_and", 2, ALL, g("bool")), Rec("logical_not", 1, ALL, g("bool")),
    Rec("logical_or", 2, ALL, g("bool")), Rec("logical_xor", 2, ALL, g("bool")),
    Rec("maximum", 2, ALL, g("some_inf")), Rec("minimum", 2, ALL, g("some_inf")),
    Rec("multiply", 2, ALL, g("default")), Rec("negative", 1, NUM, g("default")),
    Rec("nextafter", 2, [np.float16, np.float32], g("default")),
    Rec("not_equal", 2, ALL, g("some_equal")), Rec("array_equal", 2, NUM, g("some_equal")),
    Rec("array_equiv", 2, NUM, g("some_equal")), Rec("reciprocal", 1, INEX, g("default")),
    Rec("subtract", 2, NUM, g("default")), Rec("signbit", 1, DEF + B, g("some_inf_and_nan")),
    Rec("trunc", 1, F + I + U, g("some_inf_and_nan")),
    Rec("sin", 1, NUM, g("default")), Rec("cos", 1, NUM, g("default")),
    Rec("tan", 1, INEX + I, g("uniform", low=-1.5, high=1.5)),
    Rec("tan", 1, U, g("uniform", low=0, high=1.5), test_name="tan_unsigned"),
    Rec("sinh", 1, NUM, g("default")), Rec("cosh", 1, NUM, g("default")),
    Rec("tanh", 1, NUM, g("default")),
    Rec("arcsin", 1, NUM, g("small")), Rec("arccos", 1, NUM, g("small")),
    Rec("arctan", 1, NUM, g("small")), Rec("arctan2", 2, F, g("small")),
    Rec("arcsinh", 1, NUM, g("default"), {np.complex64: 2e-4}),
    Rec("arccosh", 1, NUM, g("default"), {np.complex64: 2e-2}),
    Rec("arctanh", 1, NUM, g("small")),
    Rec("asin", 1, NUM, g("small")), Rec("acos", 1, NUM, g("small")),
    Rec("atan", 1, NUM, g("small")), Rec("atan2", 2, F, g("small")),
    Rec("asinh", 1, NUM, g("default"), {np.complex64: 2e-4}),
    Rec("acosh", 1, NUM, g("default"), {np.complex64: 2e-2}),
    Rec("atanh", 1, NUM, g("small")),
    # compound ops
    Rec("angle", 1, NUM, g("default")),
    Rec("angle", 1, NUM, g("default"), kwargs={"deg": True}, test_name="angle_deg"),
    Rec("atleast_1d", 1, DEF, g("default")), Rec("atleast_2d", 1, DEF, g("default")),
    Rec("atleast_3d", 1, DEF, g("default")), Rec("cbrt", 1, DEF, g("some_inf")),
    Rec("conjugate", 1, NUM, g("default")), Rec("deg2rad", 1, F, g("default")),
    Rec("divide", 2, NUM, g("nonzero")), Rec("divmod", 2, I + F, g("nonzero")),
    Rec("exp2", 1, NUM, g("default"), {BF16: 4e-2, np.float16: 1e-2}),
    Rec("expm1", 1, NUM, g("positive"), test_name="expm1_large"),
    Rec("expm1", 1, NUM, g("small_positive")),
    Rec("floor_divide", 2, DEF + U, g("nonzero")),
    Rec("fmin", 2, NUM, g("some_nan")), Rec("fmax", 2, NUM, g("some_nan")),
    Rec("fmod", 2, DEF, g("some_nan")), Rec("heaviside", 2, DEF, g("default")),
    Rec("hypot", 2, REAL, g("default")),
    Rec("kron", 2, NUM, g("default"), shapes="nonempty"), Rec("outer", 2, NUM, g("default")),
    Rec("imag", 1, NUM, g("some_inf")), Rec("iscomplex", 1, NUM, g("some_inf")),
    Rec("isfinite", 1, INEX, g("some_inf_and_nan")), Rec("isinf", 1, INEX, g("some_inf_and_nan")),
    Rec("isnan", 1, INEX, g("some_inf_and_nan")), Rec("isneginf", 1, F, g("some_inf_and_nan")),
    Rec("isposinf", 1, F, g("some_inf_and_nan")), Rec("isreal", 1, NUM, g("some_inf")),
    Rec("isrealobj", 1, NUM, g("some_inf")),
    Rec("log2", 1, NUM, g("positive")), Rec("log10", 1, NUM, g("positive")),
    Rec("log1p", 1, NUM, g("positive"), test_name="log1p_large"),
    Rec("log1p", 1, NUM, g("small_positive")),
    Rec("logaddexp", 2, F, g("some_inf_and_nan")),
    Rec("logaddexp2", 2, F, g("some_inf_and_nan"), {np.float16: 1e-2}),
    Rec("polyval", 2, [d for d in NUM if d not in (np.int8, np.uint8)], g("default"),
        {BF16: 4e-2, np.float16: 2e-2}, shapes="nonscalar"),
    Rec("positive", 1, NUM, g("default")),
    Rec("pow", 2, NUM, g("positive")), Rec("power", 2, NUM, g("positive")),
    Rec("rad2deg", 1, F, g("default")), Rec("ravel", 1, ALL, g("default")),
    Rec("real", 1, NUM, g("some_inf")),
    Rec("remainder", 2, DEF, g("some_zero"), {np.float16: 1e-2}),
    Rec("mod", 2, DEF, g("some_zero")), Rec("modf", 1, F + I + U, g("default")),
    Rec("rint", 1, INEX + I + U, g("some_inf_and_nan")),
    Rec("sign", 1, NUM, g("some_inf_and_nan")),
    Rec("copysign", 2, DEF + U, g("some_inf_and_nan")),
    Rec("sinc", 1, [t for t in NUM if t != BF16], g("default"), {np.complex64: 1e-5}),
    Rec("square", 1, NUM, g("default")), Rec("sqrt", 1, NUM, g("positive")),
    Rec("transpose", 1, ALL, g("default")), Rec("true_divide", 2, ALL, g("nonzero")),
    Rec("unwrap", 1, [np.float16, np.float32], g("default"), {np.float16: 1e-1},
        shapes="nonscalar"),
    Rec("isclose", 2, [t for t in ALL if t != BF16], g("small_positive")),
    Rec("gcd", 2, I + U, g("default")), Rec("lcm", 2, I + U, g("default")),
    Rec("lcm", 2, [np.int8], g("not_small"), test_name="lcm_not_small"),
    # bitwise
    *[Rec(n, k, I + U, g("fullrange"), kind="bit") for n, k in [
        ("bitwise_and", 2), ("bitwise_invert", 1), ("bitwise_not", 1), ("invert", 1),
        ("bitwise_or", 2), ("bitwise_xor", 2)]],
    Rec("bitwise_count", 1, I + U, g("fullrange"), kind="bit"),
    # shifts (a full-range value, a shift below the bit width)
    *[Rec(n, 2, I + U, None, kind="shift", shapes="nonscalar") for n in [
        "left_shift", "bitwise_left_shift", "right_shift", "bitwise_right_shift"]],
    # operator overloads
    *[Rec(n, 2, d, rng, tol, kind="dunder") for n, d, rng, tol in [
        ("__add__", NUM, g("default"), None), ("__sub__", NUM, g("default"), None),
        ("__mul__", NUM, g("default"), None), ("__eq__", NUM, g("default"), None),
        ("__ne__", NUM, g("default"), None), ("__lt__", DEF, g("default"), None),
        ("__le__", DEF, g("default"), None), ("__gt__", DEF, g("default"), None),
        ("__ge__", DEF, g("default"), None),
        ("__pow__", INEX, g("positive"), {np.float32: 2e-4, np.complex64: 2e-4}),
        ("__mod__", DEF, g("nonzero"), {np.float16: 1e-1}),
        ("__floordiv__", DEF, g("nonzero"), None), ("__truediv__", NUM, g("nonzero"), None),
        ("__lshift__", I + U, g("int", high=8), None),
        ("__rshift__", I + U, g("int", high=8), None)]],
    *[Rec(n, 1, d, g("default"), kind="dunder") for n, d in [
        ("__pos__", NUM), ("__neg__", NUM), ("__abs__", NUM), ("__invert__", I)]],
    *[Rec(n, 2, d, rng, tol, kind="rdunder") for n, d, rng, tol in [
        ("__radd__", NUM, g("default"), None), ("__rsub__", NUM, g("default"), None),
        ("__rmul__", NUM, g("default"), None),
        ("__rpow__", INEX, g("positive"), {np.float32: 2e-4, np.complex64: 1e-3}),
        ("__rmod__", DEF, g("nonzero"), {np.float16: 1e-1}),
        ("__rfloordiv__", DEF, g("nonzero"), None), ("__rtruediv__", NUM, g("nonzero"), None),
        ("__rlshift__", I + U, g("int", high=8), None),
        ("__rrshift__", I + U, g("int", high=8), None)]],
]  # fmt: skip


def _bitwise_compatible(x, y) -> bool:
    """The dtype pairs JAX's bitwise test takes (NumPy's promotion agrees there)."""
    signed = np.issubdtype(x, np.signedinteger), np.issubdtype(y, np.signedinteger)
    wx, wy = np.iinfo(x).bits, np.iinfo(y).bits
    return signed[0] == signed[1] or wx == wy == 32


def _shape_sets(rec: Rec) -> list[tuple]:
    if rec.nargs == 1:
        return [((3, 4),), (NPS,), (PY,), ((0, 4),)]
    if rec.shapes == "nonscalar" or rec.kind == "shift":
        return [((3, 4), (4,)), ((4,), (3, 4)), ((3, 1), (0, 4))]
    sets = [((3, 4), (3, 1)), (PY, (3, 4)), ((3, 4), PY), (NPS, (3, 4))]
    return sets if rec.kind != "rdunder" else [s for s in sets if s[1] is not PY]


def _py_dtypes(rec: Rec) -> list:
    kinds = {_kind(d) for d in rec.dtypes}
    return [t for k, t in PY_OF_KIND.items() if k in kinds and not (k == "u" and "i" in kinds)]


def cases(rec: Rec) -> list[tuple[tuple, tuple]]:
    """(shapes, dtypes) pairs: every dtype combination at each shape set;
    Python scalars of each kind the record has; NumPy scalars with a
    same-dtype array."""
    out = []
    for shapes in _shape_sets(rec):
        if rec.shapes == "nonempty" and (0, 4) in shapes:
            continue
        options = [_py_dtypes(rec) if s is PY else rec.dtypes for s in shapes]
        for dts in itertools.product(*options):
            if shapes[0] is NPS and len(dts) == 2 and dts[0] != dts[1]:
                continue
            if rec.kind == "shift" and not _shift_compatible(*dts):
                continue
            if rec.kind == "bit" and len(dts) == 2 and not _bitwise_compatible(*dts):
                continue
            out.append((shapes, dts))
    return out


def _shift_compatible(x, y) -> bool:
    """JAX's shift test skips signed/unsigned mixes with a 32-bit side (NumPy
    promotes them to int64)."""
    mixed = np.issubdtype(x, np.signedinteger) != np.issubdtype(y, np.signedinteger)
    return not (mixed and 32 in (np.iinfo(x).bits, np.iinfo(y).bits))


def make_args(rec: Rec, shapes: tuple, dts: tuple, seed: int) -> list:
    r = np.random.default_rng(seed)
    if rec.kind == "shift":
        x, s = dts
        info = np.iinfo(x)
        value = r.integers(info.min, info.max, shapes[0], endpoint=True, dtype=np.int64).astype(x)
        shift = r.integers(0, max(info.bits, np.iinfo(s).bits), shapes[1]).astype(s)
        return [value, shift]
    args = []
    for shape, dt in zip(shapes, dts, strict=True):
        if shape is PY:
            np_dt = {bool: np.bool_, int: np.int32, float: np.float32, complex: np.complex64}[dt]
            args.append(dt(rec.rng(r, (), np_dt).item()))
        elif shape is NPS:
            args.append(rec.rng(r, (), dt)[()])
        else:
            args.append(rec.rng(r, shape, dt))
    return args


def function(rec: Rec, module):
    if rec.kind in ("op", "bit", "shift"):
        fn = getattr(module, rec.name)
        return partial(fn, **rec.kwargs) if rec.kwargs else fn
    if rec.kind == "dunder":
        return getattr(operator, rec.name.strip("_"))
    return lambda a, b: getattr(b, rec.name)(a)


def _as_arrays(args: list, module, rec: Rec) -> list:
    """Arrays of the module (bitwise: NumPy arrays as they are); Python scalars kept."""
    if rec.kind == "bit":
        return list(args)
    return [module.asarray(a) if isinstance(a, np.ndarray | np.generic) else a for a in args]


# --- comparison ------------------------------------------------------------------------

_DEFAULT_TOL = {BF16: 2e-2, np.float16: 2e-3, np.float32: 1e-5, np.complex64: 1e-5}


def tolerance(rec: Rec, dts: tuple) -> float:
    tol = 1e-5
    for dt in dts:
        if isinstance(dt, type) and dt in (bool, int, float, complex):
            continue
        tol = max(tol, _DEFAULT_TOL.get(dt, 0.0))
        if isinstance(rec.tol, dict):
            tol = max(tol, rec.tol.get(dt, 0.0))
    return tol


def outcome(fn, args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(*args)
        except Exception as e:  # noqa: BLE001  (the class is compared)
            return e


def _leaves(x) -> list:
    return [y for z in x for y in _leaves(z)] if isinstance(x, tuple | list) else [x]


def assert_same(got, want, tol: float) -> None:
    if isinstance(want, Exception):
        assert isinstance(got, type(want)), f"JAX raises {want!r}; refimpl gave {got!r}"
        return
    assert not isinstance(got, Exception), f"refimpl raised {got!r}; JAX gives {want!r}"
    gl, wl = _leaves(got), _leaves(want)
    assert len(gl) == len(wl)
    for g_, w in zip(gl, wl, strict=True):
        if not hasattr(w, "dtype"):  # a Python value (array_equal's bool, ...)
            assert type(g_) is type(w) and g_ == w, (g_, w)
            continue
        assert g_.shape == w.shape, (g_.shape, w.shape)
        assert g_.dtype == w.dtype, (g_.dtype, w.dtype)
        assert g_.aval.weak_type == w.aval.weak_type, ("weak type", g_.aval.weak_type)
        ga, wa = np.asarray(g_), np.asarray(w)
        if wa.dtype.kind in "fcV":
            wide = np.complex128 if wa.dtype.kind == "c" else np.float64
            np.testing.assert_allclose(ga.astype(wide), wa.astype(wide), rtol=tol, atol=tol)
        else:
            np.testing.assert_array_equal(ga, wa)


# --- the parametrisation -----------------------------------------------------------------


def _name(dt) -> str:
    return dt.__name__ if isinstance(dt, type) else str(dt)


def _table() -> tuple[list, list]:
    """(default slice, whole table): the slice is one case per record, picked
    by a hash of the record and case (stable across runs and machines), a
    case with a Python scalar for every other binary record."""
    quick, whole = [], []
    for number, rec in enumerate(RECORDS):
        cs = cases(rec)
        ranked = sorted(range(len(cs)), key=lambda i: zlib.crc32(f"{rec.id}/{i}".encode()))
        scalar = [i for i in ranked if PY in cs[i][0]]
        pick = scalar[0] if scalar and number % 2 else ranked[0]
        for i, (shapes, dts) in enumerate(cs):
            shown = "_".join(f"{s!r}:{_name(d)}" for s, d in zip(shapes, dts, strict=True))
            param = pytest.param(rec, shapes, dts, i, id=f"{rec.id}-{shown}")
            (quick if i == pick else whole).append(param)
    return quick, whole


QUICK, WHOLE = _table()
_JAX_RESULTS: dict[tuple, Any] = {}


def _want(rec: Rec, args: list, seed: int, jitted: bool) -> Any:
    """JAX's outcome, once per case (not once per backend). Eager and jitted
    agree except where the eager op returns a Python value (``isrealobj``,
    ``array_equal`` of shapes that differ), which ``jit`` makes an array."""
    key = (rec.id, seed, jitted)
    if key not in _JAX_RESULTS:
        fn = function(rec, jnp)
        _JAX_RESULTS[key] = outcome(jax.jit(fn) if jitted else fn, _as_arrays(args, jnp, rec))
    return _JAX_RESULTS[key]


def _python_leaves(x) -> bool:
    return not isinstance(x, Exception) and any(not hasattr(y, "dtype") for y in _leaves(x))


def _check(backend: str, rec: Rec, shapes: tuple, dts: tuple, seed: int) -> None:
    args = make_args(rec, shapes, dts, seed)
    want = _want(rec, args, seed, jitted=False)
    tol = tolerance(rec, dts)
    fn = function(rec, rnp)
    rargs = _as_arrays(args, rnp, rec)
    if backend == "ref":  # eager pjrt compiles one program per op; its jit is the same
        assert_same(outcome(fn, rargs), want, tol)
    if _python_leaves(want):
        want = _want(rec, args, seed, jitted=True)
    try:
        assert_same(outcome(ri.jit(fn), rargs), want, tol)
    except AssertionError as err:
        raise AssertionError(f"under jit: {err}") from err


@pytest.mark.parametrize("rec, shapes, dts, seed", QUICK)
def test_operator_record(backend, rec, shapes, dts, seed):
    _check(backend, rec, shapes, dts, seed)


@pytest.mark.slow
@pytest.mark.parametrize("rec, shapes, dts, seed", WHOLE)
def test_operator_record_whole_table(backend, rec, shapes, dts, seed):
    _check(backend, rec, shapes, dts, seed)


def test_the_table_is_the_whole_sweep():
    """Every record contributes cases; the sweep is the size the docstring says."""
    assert all(cases(rec) for rec in RECORDS)
    assert 10_000 < len(QUICK) + len(WHOLE) < 13_000
    assert {rec.id for rec in RECORDS} == {p.values[0].id for p in QUICK}


# --- classes the sweep found and fixed ---------------------------------------------------


@pytest.mark.parametrize("name", ["arctan2", "atan2"])
def test_arctan2_takes_complex_operands(backend, name):
    """JAX 0.10.2's ``lax.atan2`` takes complex operands (``-i log((y + i x) /
    sqrt(y^2 + x^2))``); refimpl raised TypeError. Values and the holomorphic
    derivative, eager and under jit."""
    x = np.array([1 + 1j, 2 - 0.5j, -1 + 0.3j, 0.5j], np.complex64)
    y = np.array([0.5 + 0.2j, 1j, -2 + 0j, 1.5 - 1j], np.complex64)
    want = getattr(jnp, name)(x, y)
    for fn in (getattr(rnp, name), ri.jit(getattr(rnp, name))):
        assert_same(fn(x, y), want, 1e-5)

    def loss(module, api):
        return api.grad(lambda a, b: module.real(getattr(module, name)(a, b)).sum(), (0, 1))

    want_grad = loss(jnp, jax)(x, y)
    for got in (loss(rnp, ri)(x, y), ri.jit(loss(rnp, ri))(x, y)):
        assert_same(got, want_grad, 1e-5)


def test_grad_of_an_op_without_a_rule_reports_rejected_operands_first(backend):
    """``grad`` of complex ``nextafter``: JAX 0.10.2 raises the dtype's
    TypeError (it type-checks while tracing jnp's inline-jitted function);
    refimpl raised NotImplementedError for the missing rule. Real operands
    still get NotImplementedError on both."""
    z = np.array([1 + 1j, 2.0], np.complex64)

    def loss(module, api):
        return api.grad(lambda a: module.real(module.nextafter(a, a)).sum())

    for module, api in ((jnp, jax), (rnp, ri)):
        with pytest.raises(TypeError):
            loss(module, api)(z)
        with pytest.raises(NotImplementedError):
            api.grad(module.nextafter)(1.0, 2.0)
    with pytest.raises(TypeError):
        ri.jit(loss(rnp, ri))(z)
