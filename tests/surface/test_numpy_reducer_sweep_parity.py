"""The reducer table of JAX 0.10.2's tests/lax_numpy_reducers_test.py, swept
(issue 29): every record (sum, prod, max, min, mean, all, any, var, std,
ptp and their nan* forms) over its dtypes, shapes, axes, keepdims, dtype=,
initial=, where= and promote_integers=, then average (1-d and n-d weights),
var/std with ddof/correction/mean, nanvar, cov, median, quantile and
percentile (all methods, weighted inverted_cdf), cumulative_sum/prod with
include_initial, and the error cases; and the reducers of
tests/lax_numpy_test.py (argmin/argmax and nan forms with keepdims,
cumsum/cumprod/nancumsum/nancumprod with dtype=, count_nonzero, empty
reductions). Each case runs on JAX (the oracle) and on refimpl, eager and
under jit: the same shape, dtype, weak type, values within JAX's per-dtype
tolerances (NaN equal), or an exception of JAX's class.

The default run checks a deterministic spread of each test's cases; the
whole table (about 175,000 cases) is `-m slow`, sampled to SWEEP_PER_KEY
cases per (test, function) unless REFIMPL_REDUCER_SWEEP=all."""

from __future__ import annotations

import collections
import os
import random
import warnings
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp

# --- JAX's shapes and dtypes (x64 off: no 64-bit dtypes) ------------------------------------

PY, NP = "python scalar", "numpy scalar"
SCALAR_SHAPES: list[Any] = [NP, PY]
NONEMPTY_NONSCALAR = [(4,), (3, 4), (3, 1), (1, 4), (2, 1, 4), (2, 3, 4)]
NONEMPTY_ARRAY = [(), *NONEMPTY_NONSCALAR]
EMPTY_ARRAY = [(0,), (0, 4), (3, 0)]
NONEMPTY_SHAPES = SCALAR_SHAPES + NONEMPTY_ARRAY
ALL_SHAPES = SCALAR_SHAPES + NONEMPTY_ARRAY + EMPTY_ARRAY

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = [BF16, np.dtype(np.float16), np.dtype(np.float32)]
COMPLEX = [np.dtype(np.complex64)]
INTS = [np.dtype(t) for t in (np.int8, np.int16, np.int32)]
UINTS = [np.dtype(t) for t in (np.uint8, np.uint16, np.uint32)]
BOOL = [np.dtype(np.bool_)]
INEXACT = FLOATS + COMPLEX
NUMBER = FLOATS + COMPLEX + INTS + UINTS
ALL = NUMBER + BOOL
DEFAULT = FLOATS + INTS
PY_DTYPES = {np.dtype(np.bool_), np.dtype(np.int32), np.dtype(np.float32), np.dtype(np.complex64)}


# --- JAX's random inputs (test_util's rand_* kinds, a fixed NumPy RNG) ----------------------


def _cast(values: np.ndarray, shape: Any, dtype: np.dtype) -> Any:
    if dtype.kind == "c":
        values = values + 1j * np.roll(values, 1)
    if dtype.kind in "iu":
        values = np.clip(np.round(values), *(np.iinfo(dtype).min, np.iinfo(dtype).max))
        if dtype.kind == "u":
            values = np.abs(values)
    out = np.asarray(values).astype(dtype)
    if shape == PY:
        return out.reshape(()).item()
    if shape == NP:
        return out.reshape(())[()]
    return out


def _shape_of(shape: Any) -> tuple[int, ...]:
    return () if shape in SCALAR_SHAPES else shape


def rand_default(rs: np.random.RandomState, shape: Any, dtype: np.dtype) -> Any:
    if dtype.kind == "b":
        return _cast(rs.rand(*_shape_of(shape)) < 0.5, shape, dtype)
    return _cast(3 * rs.randn(*_shape_of(shape)), shape, dtype)


def rand_small_positive(rs: np.random.RandomState, shape: Any, dtype: np.dtype) -> Any:
    if dtype.kind == "b":
        return _cast(rs.rand(*_shape_of(shape)) < 0.8, shape, dtype)
    low = 1.0 if dtype.kind in "iu" else 0.1
    return _cast(rs.uniform(low, 2.0, _shape_of(shape)), shape, dtype)


def rand_positive(rs: np.random.RandomState, shape: Any, dtype: np.dtype) -> Any:
    return _cast(rs.uniform(1.0, 3.0, _shape_of(shape)), shape, dtype)


def rand_some_zero(rs: np.random.RandomState, shape: Any, dtype: np.dtype) -> Any:
    values = 3 * rs.randn(*_shape_of(shape))
    values = np.where(rs.rand(*_shape_of(shape)) < 0.3, 0.0, values)
    if dtype.kind == "b":
        values = values != 0
    return _cast(values, shape, dtype)


def rand_some_nan(rs: np.random.RandomState, shape: Any, dtype: np.dtype) -> Any:
    values = 3 * rs.randn(*_shape_of(shape))
    if dtype.kind in "fc":
        values = np.where(rs.rand(*_shape_of(shape)) < 0.25, np.nan, values)
    elif dtype.kind == "b":
        values = values > 0
    return _cast(values, shape, dtype)


def rand_bool(rs: np.random.RandomState, shape: Any) -> np.ndarray:
    return rs.rand(*_shape_of(shape)) < 0.5


# --- the table -----------------------------------------------------------------------------

Rec = collections.namedtuple("Rec", "name dtypes shapes rng")
REDUCER = [
    Rec("mean", NUMBER, NONEMPTY_SHAPES, rand_default),
    Rec("prod", ALL, ALL_SHAPES, rand_small_positive),
    Rec("sum", ALL, ALL_SHAPES, rand_default),
    Rec("nanmean", INEXACT, NONEMPTY_SHAPES, rand_some_nan),
    Rec("nanprod", ALL, ALL_SHAPES, rand_some_nan),
    Rec("nansum", NUMBER, ALL_SHAPES, rand_some_nan),
]
INITIAL = [
    Rec("prod", ALL, ALL_SHAPES, rand_small_positive),
    Rec("sum", ALL, ALL_SHAPES, rand_default),
    Rec("max", ALL, ALL_SHAPES, rand_default),
    Rec("min", ALL, ALL_SHAPES, rand_default),
    Rec("nanprod", INEXACT, ALL_SHAPES, rand_small_positive),
    Rec("nansum", INEXACT, ALL_SHAPES, rand_default),
    Rec("nanmax", INEXACT, ALL_SHAPES, rand_default),
    Rec("nanmin", INEXACT, ALL_SHAPES, rand_default),
]
WHERE_NO_INITIAL = [
    Rec("all", BOOL, ALL_SHAPES, rand_some_zero),
    Rec("any", BOOL, ALL_SHAPES, rand_some_zero),
    *(Rec(n, ALL, NONEMPTY_SHAPES, rand_default) for n in ("mean", "var", "std")),
    *(Rec(n, INEXACT, NONEMPTY_SHAPES, rand_default) for n in ("nanmean", "nanvar", "nanstd")),
]
NO_DTYPE = [
    Rec("all", ALL, ALL_SHAPES, rand_some_zero),
    Rec("any", ALL, ALL_SHAPES, rand_some_zero),
    *(Rec(n, ALL, NONEMPTY_SHAPES, rand_default) for n in ("max", "min", "var", "std")),
    *(
        Rec(n, ALL, NONEMPTY_SHAPES, rand_some_nan)
        for n in ("nanmax", "nanmin", "nanvar", "nanstd")
    ),
    Rec("ptp", NUMBER, NONEMPTY_SHAPES, rand_default),
]
PROMOTE = [
    Rec("prod", ALL, ALL_SHAPES, rand_small_positive),
    Rec("sum", ALL, ALL_SHAPES, rand_default),
]

# A case: ``call(module, *inputs)`` with ``inputs(rs)`` made from a RandomState;
# ``where`` and other closed-over arguments are built into ``call``.
Case = collections.namedtuple("Case", "test name label inputs call")


def _valid(shape: Any, dtype: np.dtype) -> bool:
    return shape != PY or dtype in PY_DTYPES


def _ndim(shape: Any) -> int:
    return len(_shape_of(shape))


def _axes(shape: Any) -> list[Any]:
    return [*range(-_ndim(shape), _ndim(shape)), None]


def _compatible(shape: Any) -> list[Any]:
    if _ndim(shape) == 0:
        return [shape]
    return [shape[n:] for n in range(len(shape) + 1)]


def _one(rng: Callable, shape: Any, dtype: np.dtype) -> Callable:
    return lambda rs: [rng(rs, shape, dtype)]


def _reducer_cases() -> Iterator[Case]:
    for rec in REDUCER:
        for shape in rec.shapes:
            for dt in (d for d in rec.dtypes if _valid(shape, d)):
                for axis in _axes(shape):
                    for out in [None, *(d for d in rec.dtypes if d not in UINTS)]:
                        for kd in (False, True):
                            yield Case(
                                "testReducer", rec.name, (shape, dt, axis, out, kd),
                                _one(rec.rng, shape, dt),
                                lambda m, x, n=rec.name, a=axis, o=out, k=kd: getattr(m, n)(
                                    x, a, dtype=o, keepdims=k
                                ),
                            )  # fmt: skip
    for rec in NO_DTYPE:
        for shape in rec.shapes:
            for dt in (d for d in rec.dtypes if _valid(shape, d)):
                for axis in _axes(shape):
                    for kd in (False, True):
                        yield Case(
                            "testReducerNoDtype", rec.name, (shape, dt, axis, kd),
                            _one(rec.rng, shape, dt),
                            lambda m, x, n=rec.name, a=axis, k=kd: getattr(m, n)(x, a, keepdims=k),
                        )  # fmt: skip
    for rec in PROMOTE:
        for shape in rec.shapes:
            for dt in (d for d in rec.dtypes if _valid(shape, d)):
                for axis in _axes(shape):
                    for init, kd, pi in _product((0, 1), (False, True), (False, True)):
                        yield Case(
                            "testReducerPromoteInt", rec.name, (shape, dt, axis, init, kd, pi),
                            _one(rec.rng, shape, dt),
                            lambda m, x, n=rec.name, a=axis, i=init, k=kd, p=pi: getattr(m, n)(
                                x, a, keepdims=k, initial=i, promote_integers=p
                            ),
                        )  # fmt: skip


def _product(*axes: Any) -> Iterator[tuple]:
    if not axes:
        yield ()
        return
    for head in axes[0]:
        for rest in _product(*axes[1:]):
            yield (head, *rest)


def _where_call(name: str, axis: Any, kd: bool, wshape: Any, **kwargs: Any) -> Callable:
    # the mask is fixed per case (JAX's tests close over it, not an argument)
    where = rand_bool(np.random.RandomState(len(str(wshape))), wshape)
    return lambda m, x: getattr(m, name)(x, axis, keepdims=kd, where=where, **kwargs)


def _initial_and_where_cases() -> Iterator[Case]:
    for rec in INITIAL:
        yield Case(
            "testReducerBadInitial", rec.name, (), lambda rs: [],
            lambda m, n=rec.name: getattr(m, n)(
                m.ones((2, 3, 4)), axis=-1, initial=m.zeros((1, 2, 3))
            ),
        )  # fmt: skip
        yield Case(
            "testReducerWhereNonBooleanErrorInitial", rec.name, (), lambda rs: [],
            lambda m, n=rec.name, d=rec.dtypes[0]: getattr(m, n)(
                m.zeros((10,), d), where=m.ones(10, dtype=int), initial=m.array(0, dtype=d)
            ),
        )  # fmt: skip
        for shape in rec.shapes:
            for dt in (d for d in rec.dtypes if _valid(shape, d)):
                for axis in _axes(shape):
                    for init, kd in _product((0, 1), (False, True)):
                        yield Case(
                            "testReducerInitial", rec.name, (shape, dt, axis, init, kd),
                            _one(rec.rng, shape, dt),
                            lambda m, x, n=rec.name, a=axis, i=init, k=kd: getattr(m, n)(
                                x, a, keepdims=k, initial=i
                            ),
                        )  # fmt: skip
                        for ws in _compatible(shape):
                            yield Case(
                                "testReducerWhere", rec.name, (shape, dt, axis, init, kd, ws),
                                _one(rec.rng, shape, dt),
                                _where_call(rec.name, axis, kd, ws, initial=init),
                            )  # fmt: skip
            if shape in SCALAR_SHAPES or np.prod(shape) != 0:
                continue
            for axis in (a for a in range(-len(shape), len(shape)) if shape[a] >= 1):
                for dt, kd in _product(rec.dtypes, (False, True)):
                    yield Case(
                        "testReducerNoInitialZeroDims", rec.name, (shape, dt, axis, kd),
                        _one(rec.rng, shape, dt),
                        lambda m, x, n=rec.name, a=axis, k=kd: getattr(m, n)(x, a, keepdims=k),
                    )  # fmt: skip
    for rec in WHERE_NO_INITIAL:
        yield Case(
            "testReducerWhereNonBooleanErrorNoInitial", rec.name, (), lambda rs: [],
            lambda m, n=rec.name, d=rec.dtypes[0]: getattr(m, n)(
                m.zeros((10,), d), where=m.ones(10, dtype=int)
            ),
        )  # fmt: skip
        for shape in rec.shapes:
            for dt in (d for d in rec.dtypes if _valid(shape, d)):
                for ws in _compatible(shape):
                    for axis, kd in _product(_axes(shape), (False, True)):
                        yield Case(
                            "testReducerWhereNoInitial", rec.name, (shape, dt, axis, kd, ws),
                            _one(rec.rng, shape, dt), _where_call(rec.name, axis, kd, ws),
                        )  # fmt: skip
    yield Case("testReductionOfOutOfBoundsAxis", "sum", (), lambda rs: [],
               lambda m: m.sum(m.ones((3, 4)), axis=2))  # fmt: skip
    yield Case("testReductionWithRepeatedAxisError", "sum", (), lambda rs: [],
               lambda m: m.sum(m.arange(3), (0, 0)))  # fmt: skip


def _average_cases() -> Iterator[Case]:
    for shape in NONEMPTY_SHAPES:
        for dt in (d for d in NUMBER if _valid(shape, d)):
            nd = _ndim(shape)
            for axis in [*range(-nd, nd), None, tuple(range(nd))]:
                one_weight_each = axis is None or nd == 1 or isinstance(axis, tuple)
                wss = [None, shape] if one_weight_each else [None, (shape[axis],), shape]
                for ws, kd, ret in _product(wss, (False, True), (False, True)):
                    yield Case(
                        "testAverage", "average", (shape, dt, axis, ws, kd, ret),
                        (lambda rs, s=shape, d=dt: [rand_default(rs, s, d)])
                        if ws is None
                        else (lambda rs, s=shape, d=dt, w=ws: [rand_default(rs, s, d),
                                                               rand_default(rs, w, d)]),
                        lambda m, x, w=None, a=axis, k=kd, r=ret: m.average(
                            x, a, w, returned=r, keepdims=k
                        ),
                    )  # fmt: skip
    for shape, axis in [((2, 3, 4), (1, 2)), ((2, 3, 4), (2, 0)), ((2, 3, 4), (0, 1, 2)),
                        ((2, 3, 4), (2, 0, 1)), ((2, 3, 4), (2, 1, 0)), ((2, 3, 4, 5), (3, 0)),
                        ((2, 3, 4, 5), (3, 0, 2, 1))]:  # fmt: skip
        wshape = tuple(shape[a] for a in axis)
        yield Case(
            "testAverageNDWeights", "average", (shape, axis),
            lambda rs, s=shape, w=wshape: [rand_default(rs, s, np.dtype(np.float32)),
                                           rand_default(rs, w, np.dtype(np.float32))],
            lambda m, x, w, a=axis: m.average(x, a, w),
        )  # fmt: skip


def _var_cases() -> Iterator[Case]:
    ddofs = [(0, None), (1, None), (1, 0), (0, 0), (0, 1), (0, 2)]
    for name in ("var", "std"):
        for shape, dt, out, axis, (ddof, corr), kd in _product(
            [(5,), (10, 5)], ALL, INEXACT, (None, 0, -1), ddofs, (False, True)
        ):
            yield Case(
                "testStdOrVar", name, (shape, dt, out, axis, ddof, corr, kd),
                _one(rand_default, shape, dt),
                lambda m, x, n=name, o=out, a=axis, dd=ddof, c=corr, k=kd: getattr(m, n)(
                    x, dtype=o, axis=a, ddof=dd, correction=c, keepdims=k
                ),
            )  # fmt: skip
        for size, extra in _product((0, 1, 2), (0, 1, 2)):
            yield Case(
                "testStdOrVarLargeDdofReturnsNan", name, (size, extra), lambda rs: [],
                lambda m, n=name, s=size, e=extra: getattr(m, n)(m.arange(s), ddof=s + e),
            )  # fmt: skip
    for shape, dt, out, axis, ddof, kd in _product(
        [(5,), (10, 5)], ALL, INEXACT, (None, 0, -1), (0, 1, 2), (False, True)
    ):
        yield Case(
            "testNanVar", "nanvar", (shape, dt, out, axis, ddof, kd),
            _one(rand_some_nan, shape, dt),
            lambda m, x, o=out, a=axis, dd=ddof, k=kd: m.nanvar(
                x, dtype=o, axis=a, ddof=dd, keepdims=k
            ),
        )  # fmt: skip
    shapes_axes = [((5,), None), ((5,), 0), ((5,), -1), ((10, 5), None), ((10, 5), 0),
                   ((10, 5), 1), ((10, 5), -1), ((10, 5), (0, 1)), ((5, 4, 3), (0, 2)),
                   ((5, 4, 3), (1, -1))]  # fmt: skip
    for (shape, axis), name, dt, ddof, kd in _product(
        shapes_axes, ("var", "std", "nanvar", "nanstd"), INEXACT + INTS, (0, 1), (False, True)
    ):
        mshape = np.mean(np.zeros(shape), axis=axis, keepdims=True).shape
        mdt = dt if dt.kind in "fc" else np.dtype(np.float32)
        rng = rand_some_nan if "nan" in name else rand_default
        yield Case(
            "testReducerWithMean", name, (shape, axis, dt, ddof, kd),
            lambda rs, s=shape, d=dt, r=rng, ms=mshape, md=mdt: [r(rs, s, d),
                                                                 rand_default(rs, ms, md)],
            lambda m, x, mean, n=name, a=axis, dd=ddof, k=kd: getattr(m, n)(
                x, axis=a, ddof=dd, keepdims=k, mean=mean
            ),
        )  # fmt: skip


def _cov_cases() -> Iterator[Case]:
    for shape, dt, rowvar in _product([(5,), (10, 5), (5, 10)], ALL, (True, False)):
        for y_dt in (None, dt):
            if y_dt is None:
                yss: list[Any] = [None]
            elif len(shape) == 1:
                yss = [shape]
            elif rowvar or shape[0] == 1:
                yss = [(k, shape[-1]) for k in (1, 2, 5)]
            else:
                yss = [(shape[0], k) for k in (1, 2, 5)]
            for ys, bias, ddof, fw, aw in _product(
                yss, (True, False), (None, 2, 3), (True, False), (True, False)
            ):
                wshape = shape[-1:] if rowvar or shape[0] == 1 else shape[:1]
                wdt = np.dtype(np.float32) if dt.kind == "c" else dt

                def inputs(rs, s=shape, d=dt, ys=ys, fw=fw, aw=aw, wshape=wshape, wdt=wdt):
                    return [
                        rand_default(rs, s, d),
                        None if ys is None else rand_default(rs, ys, d),
                        rand_positive(rs, wshape, np.dtype(np.int32)) if fw else None,
                        rand_positive(rs, wshape, wdt) if aw else None,
                    ]

                yield Case(
                    "testCov", "cov", (shape, dt, rowvar, ys, bias, ddof, fw, aw), inputs,
                    lambda m, x, y, f, a, rv=rowvar, dd=ddof, b=bias: m.cov(
                        x, y, fweights=f, aweights=a, rowvar=rv, ddof=dd, bias=b
                    ),
                )  # fmt: skip
    for shape, dt, rowvar in _product([(0,), (3, 0), (0, 5)], FLOATS, (True, False)):
        yield Case(
            "testEmptyCov", "cov", (shape, dt, rowvar), _one(rand_default, shape, dt),
            lambda m, x, rv=rowvar: m.cov(x, rowvar=rv),
        )  # fmt: skip
    for shape, rowvar in _product([(1, 3), (3, 1)], (True, False)):
        yield Case(
            "testCovTransposeBehavior", "cov", (shape, rowvar),
            _one(rand_default, shape, np.dtype(np.float32)),
            lambda m, x, rv=rowvar: m.cov(x, rowvar=rv, ddof=0),
        )  # fmt: skip


def _quantile_cases() -> Iterator[Case]:
    shapes_axes = [((7,), None), ((6, 7), None), ((47, 7), 0), ((47, 7), ()), ((4, 101), 1),
                   ((4, 47, 7), (1, 2)), ((4, 47, 7), (0, 2)), ((4, 47, 7), (1, 0, 2))]  # fmt: skip
    for op, top in (("percentile", 100.0), ("quantile", 1.0), ("nanpercentile", 100.0),
                    ("nanquantile", 1.0)):  # fmt: skip
        for (shape, axis), dt, qs, kd, method in _product(
            shapes_axes, DEFAULT, [NP, PY, (1,), (4,)], (False, True),
            ("linear", "lower", "higher", "nearest", "midpoint"),
        ):  # fmt: skip
            yield Case(
                "testQuantile", op, (shape, axis, dt, qs, kd, method),
                lambda rs, s=shape, d=dt, qs=qs, t=top: [
                    rand_some_nan(rs, s, d),
                    _cast(rs.uniform(0, t, _shape_of(qs)), qs, np.dtype(np.float32)),
                ],
                lambda m, x, q, op=op, a=axis, k=kd, me=method: getattr(m, op)(
                    x, q, axis=a, keepdims=k, method=me
                ),
            )  # fmt: skip
    for (shape, axis), dt, kd, op in _product(
        [((7,), None), ((6, 7), None), ((47, 7), 0), ((4, 101), 1)], DEFAULT, (False, True),
        ("median", "nanmedian"),
    ):  # fmt: skip
        rng = rand_default if op == "median" else rand_some_nan
        yield Case(
            "testMedian", op, (shape, axis, dt, kd), _one(rng, shape, dt),
            lambda m, x, op=op, a=axis, k=kd: getattr(m, op)(x, axis=a, keepdims=k),
        )  # fmt: skip
    for op, shape, axis, dt, kd in _product(
        ("quantile", "nanquantile", "percentile", "nanpercentile"),
        [(10,), (4, 3, 5), (2, 3, 4, 5)], (0, -1, None), FLOATS, (False, True),
    ):  # fmt: skip
        rng = rand_some_nan if "nan" in op else rand_default
        scale = 100.0 if "percentile" in op else 1.0
        yield Case(
            "testWeightedQuantile", op, (shape, axis, dt, kd),
            lambda rs, s=shape, d=dt, r=rng, c=scale: [
                r(rs, s, d), (np.array([0.25, 0.5, 0.75]) * c).astype(d), rand_positive(rs, s, d)
            ],
            lambda m, x, q, w, op=op, a=axis, k=kd: getattr(m, op)(
                x, q, axis=a, weights=w, method="inverted_cdf", keepdims=k
            ),
        )  # fmt: skip


def _cumulative_cases() -> Iterator[Case]:
    for op in ("cumulative_sum", "cumulative_prod"):
        for shape in ALL_SHAPES:
            nd = _ndim(shape)
            for axis in [*range(-nd, nd), *([None] if nd == 1 else [])]:
                for dt in [*ALL, None]:
                    outs = COMPLEX if dt is not None and dt.kind == "c" else ALL
                    for out, ii in _product(outs, (False, True)):
                        in_dt = dt if dt is not None else np.dtype(np.float32)
                        yield Case(
                            "testCumulative", op, (shape, dt, axis, out, ii),
                            _one(rand_some_zero, shape, in_dt),
                            lambda m, x, op=op, a=axis, o=out, i=ii: getattr(m, op)(
                                10 * m.abs(m.asarray(x)) if o in UINTS else m.asarray(x),
                                axis=a, dtype=o, include_initial=i,
                            ),
                        )  # fmt: skip
        for shape in (s for s in ALL_SHAPES if _ndim(s) != 1):
            for dt, ii in _product([d for d in ALL if _valid(shape, d)], (False, True)):
                yield Case(
                    "testCumulativeErrors", op, (shape, dt, ii), _one(rand_some_zero, shape, dt),
                    lambda m, x, op=op, i=ii: getattr(m, op)(x, include_initial=i),
                )  # fmt: skip
    yield Case(
        "testCumulativeSumBool", "cumulative_sum", (), lambda rs: [],
        lambda m: m.cumulative_sum(m.array([[0.1], [0.1], [0.0]]), axis=-1, dtype=m.bool_),
    )  # fmt: skip
    for dt in (np.dtype(np.float16), BF16):
        yield Case("test_f16_mean", "mean", (dt,), lambda rs: [],
                   lambda m, d=dt: m.mean(np.full(100_000, 1e-5, dtype=d)))  # fmt: skip


def rand_some_equal(rs: np.random.RandomState, shape: Any, dtype: np.dtype) -> Any:
    # ties for argmin/argmax: a third of the values repeat the first one
    values = 3 * rs.randn(*_shape_of(shape))
    if values.size:
        values.flat[rs.rand(values.size) < 0.3] = values.flat[0]
    return _cast(values, shape, dtype)


def _lax_numpy_cases() -> Iterator[Case]:
    """The reducers of JAX's tests/lax_numpy_test.py: JAX_ARGMINMAX_RECORDS
    (testArgMinMax), testCumSumProd and testNanCumSumProd with dtype=,
    testCountNonzero, ptp with keepdims, and the empty reductions JAX refuses."""
    for name, rng in (("argmin", rand_some_equal), ("argmax", rand_some_equal),
                      ("nanargmin", rand_some_nan), ("nanargmax", rand_some_nan)):  # fmt: skip
        for shape in NONEMPTY_SHAPES:
            for dt in (d for d in DEFAULT if _valid(shape, d)):
                for axis, kd in _product(range(-_ndim(shape), _ndim(shape)), (False, True)):
                    yield Case(
                        "testArgMinMax", name, (shape, dt, axis, kd), _one(rng, shape, dt),
                        lambda m, x, n=name, a=axis, k=kd: getattr(m, n)(x, axis=a, keepdims=k),
                    )  # fmt: skip
    outs = [d for d in DEFAULT if d != np.float16]
    for op, rng in (("cumsum", rand_default), ("cumprod", rand_default),
                    ("nancumsum", rand_some_nan), ("nancumprod", rand_some_nan)):  # fmt: skip
        for shape in ALL_SHAPES:
            for axis in [None, *range(-_ndim(shape), _ndim(shape))]:
                for dt, out in _product([d for d in ALL if _valid(shape, d)], outs):
                    yield Case(
                        "testCumSumProd", op, (shape, axis, dt, out), _one(rng, shape, dt),
                        lambda m, x, op=op, a=axis, o=out: getattr(m, op)(x, axis=a, dtype=o),
                    )  # fmt: skip
    for shape in ALL_SHAPES:
        for dt in (d for d in ALL if _valid(shape, d)):
            for axis in [None, *range(-_ndim(shape), _ndim(shape))]:
                yield Case(
                    "testCountNonzero", "count_nonzero", (shape, dt, axis),
                    _one(rand_some_zero, shape, dt), lambda m, x, a=axis: m.count_nonzero(x, a),
                )  # fmt: skip
    for shape in EMPTY_ARRAY:
        for name in ("argmin", "argmax", "nanargmin", "nanargmax", "max", "min", "ptp"):
            for axis in [None, *range(-len(shape), len(shape))]:
                yield Case(
                    "testEmptyReductions", name, (shape, axis),
                    _one(rand_default, shape, np.dtype(np.float32)),
                    lambda m, x, n=name, a=axis: getattr(m, n)(x, a),
                )  # fmt: skip


def all_cases() -> list[Case]:
    return [
        *_reducer_cases(), *_initial_and_where_cases(), *_average_cases(), *_var_cases(),
        *_cov_cases(), *_quantile_cases(), *_cumulative_cases(), *_lax_numpy_cases(),
    ]  # fmt: skip


def _by_test() -> dict[str, dict[str, list[Case]]]:
    table: dict[str, dict[str, list[Case]]] = {}
    for case in all_cases():
        table.setdefault(case.test, {}).setdefault(case.name, []).append(case)
    return table


TABLE = _by_test()
DEFAULT_PER_KEY = 2  # cases per (test, function) in the default run, spread evenly
SWEEP_PER_KEY = 60  # in the slow sweep, a fixed random sample; all with REFIMPL_REDUCER_SWEEP=all


def _spread(cases: list[Case], keep: int) -> list[Case]:
    if len(cases) <= keep:
        return cases
    return [cases[round(i * (len(cases) - 1) / max(keep - 1, 1))] for i in range(keep)]


def _sample(cases: list[Case], keep: int, seed: str) -> list[Case]:
    if os.environ.get("REFIMPL_REDUCER_SWEEP") == "all" or len(cases) <= keep:
        return cases
    return random.Random(seed).sample(cases, keep)


# --- comparing one case --------------------------------------------------------------------

TOL = {BF16: 1e-1, np.dtype(np.float16): 2e-2, np.dtype(np.float32): 1e-3,
       np.dtype(np.complex64): 1e-3}  # fmt: skip


def _tolerance(*dts: Any) -> float:
    return max([TOL.get(np.dtype(d), 1e-5 if np.dtype(d).kind in "fc" else 0.0) for d in dts])


def _run(module: Any, case: Case, inputs: list, jit: bool) -> Any:
    def fn(*args):
        return case.call(module, *args)

    if jit:
        # None inputs (cov's absent y and weights) stay Python constants
        present = [i for i, v in enumerate(inputs) if v is not None]

        def traced(*values):
            args = list(inputs)
            for i, v in zip(present, values, strict=True):
                args[i] = v
            return fn(*args)

        jitted = jax.jit(traced) if module is jnp else ri.jit(traced)
        return jitted(*(inputs[i] for i in present))
    return fn(*inputs)


def _outcome(module: Any, case: Case, inputs: list, jit: bool) -> tuple[str, Any]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return "ok", _run(module, case, inputs, jit)
    except Exception as e:  # noqa: BLE001 - the outcome is what is compared
        return "raise", e


def _leaves(value: Any) -> list:
    return list(value) if isinstance(value, (tuple, list)) else [value]


def difference(case: Case, seed: int) -> str | None:
    """None when refimpl (the current backend) matches JAX on ``case``, eager
    and under jit; otherwise what differs."""
    inputs = case.inputs(np.random.RandomState(seed))
    in_dtypes = [np.asarray(v).dtype for v in inputs if v is not None]
    for jit in (False, True):
        mode = "jit" if jit else "eager"
        want_kind, want = _outcome(jnp, case, inputs, jit)
        got_kind, got = _outcome(rnp, case, inputs, jit)
        if want_kind == "raise":
            if got_kind != "raise" or not isinstance(got, type(want)):
                return f"{mode}: JAX raises {type(want).__name__}, refimpl {got_kind} {got!r:.200}"
            continue
        if got_kind == "raise":
            return f"{mode}: refimpl raises {type(got).__name__}: {got}"
        gl, wl = _leaves(got), _leaves(want)
        if len(gl) != len(wl):
            return f"{mode}: {len(gl)} results, JAX {len(wl)}"
        for g, w in zip(gl, wl, strict=True):
            if (g.shape, g.dtype, g.aval.weak_type) != (w.shape, w.dtype, w.aval.weak_type):
                return (
                    f"{mode}: {g.dtype}{list(g.shape)} weak={g.aval.weak_type}, "
                    f"JAX {w.dtype}{list(w.shape)} weak={w.aval.weak_type}"
                )
            tol = _tolerance(w.dtype, *in_dtypes)
            ga, wa = np.asarray(g), np.asarray(w)
            if wa.dtype.kind not in "biuc":
                ga, wa = ga.astype(np.float32), wa.astype(np.float32)
            try:
                np.testing.assert_allclose(ga, wa, rtol=tol, atol=tol, equal_nan=True)
            except AssertionError as e:
                return f"{mode}: values {e}"
    return None


def _check(cases: list[Case]) -> None:
    failures = []
    for case in cases:
        found = difference(case, zlib.crc32(repr(case.label).encode()))
        if found:
            failures.append(f"{case.test} {case.name} {case.label}: {found}")
    assert not failures, f"{len(failures)} of {len(cases)} differ:\n" + "\n".join(failures[:20])


KEYS = [(test, name) for test, names in TABLE.items() for name in names]


@pytest.mark.parametrize("test, name", KEYS, ids=[f"{t}-{n}" for t, n in KEYS])
def test_reducer_table_spread(backend, test, name):
    _check(_spread(TABLE[test][name], DEFAULT_PER_KEY))


@pytest.mark.slow
@pytest.mark.parametrize("test, name", KEYS, ids=[f"{t}-{n}" for t, n in KEYS])
def test_reducer_table_sweep(backend, test, name):
    _check(_sample(TABLE[test][name], SWEEP_PER_KEY, f"{test}-{name}"))


@pytest.mark.parametrize("name", ["quantile", "nanquantile", "percentile", "nanpercentile"])
@pytest.mark.parametrize("method", ["linear", "nearest", "lower", "midpoint"])
def test_quantile_positions_in_the_dtype_of_q(backend, name, method):
    """JAX finds the positions in q's own dtype (a Python scalar's: float32),
    not joined with a bfloat16 a, where they round to a neighbouring element."""
    rs = np.random.RandomState(7)
    x = (5 * rs.randn(4, 47, 7)).astype(BF16)
    scale = 100.0 if "percentile" in name else 1.0
    for q in (0.37 * scale, 0.813 * scale, np.float32(0.291 * scale)):
        want = getattr(jnp, name)(x, q, axis=(1, 2), method=method)
        for jit in (False, True):
            fn = lambda x, q=q: getattr(rnp, name)(x, q, axis=(1, 2), method=method)  # noqa: E731
            got = (ri.jit(fn) if jit else fn)(x)
            assert (got.dtype, got.aval.weak_type) == (want.dtype, want.aval.weak_type)
            np.testing.assert_array_equal(np.asarray(got, np.float32), np.asarray(want, np.float32))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.int8])
def test_cov_without_variables_has_the_default_float_dtype(backend, x64, dtype):
    """JAX's (0, 0) answer is an empty array of the default float (float64
    with x64), whatever m's dtype."""
    x = np.zeros((0, 5), dtype)
    want = jnp.cov(x)
    for got in (rnp.cov(x), ri.jit(rnp.cov)(x)):
        assert (got.shape, got.dtype, got.aval.weak_type) == (
            want.shape,
            want.dtype,
            want.aval.weak_type,
        )
