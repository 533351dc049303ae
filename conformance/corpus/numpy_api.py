"""np_ functions beyond the ufuncs: creation, shape manipulation, joining and
splitting, where/clip/take/tile/repeat, sorting, indexing and array methods.

Oracles are NumPy's own functions with jax.numpy's dtype rules (x64 off:
int64 -> int32, float64 -> float32).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, Raw, fn_case, rng_for, sample
from conformance.compare import Tolerance
from conformance.corpus._tables import BF16, BOOL, F16, F32, I32, U8, canonical, short
from conformance.observe import Raises, Weak


def _canon(fn: Callable[..., Any]) -> Callable[..., Any]:
    """NumPy's result with 64-bit dtypes canonicalized (applied to every leaf)."""

    def oracle(*args: Any) -> Any:
        return _canonical_tree(fn(*args))

    return oracle


def _canonical_tree(x: Any) -> Any:
    if isinstance(x, (list, tuple)):
        return type(x)(_canonical_tree(v) for v in x)
    x = np.asarray(x)
    return x.astype(canonical(x.dtype))


# --- creation -----------------------------------------------------------------------------

CREATION: list[tuple[str, Callable[..., Any], Callable[[], Any]]] = [
    ("zeros-f32", lambda ns: ns.np_.zeros((2, 3)), lambda: np.zeros((2, 3), np.float32)),
    ("zeros-i32", lambda ns: ns.np_.zeros((2, 3), np.int32), lambda: np.zeros((2, 3), np.int32)),
    ("zeros-int-type", lambda ns: ns.np_.zeros(4, int), lambda: np.zeros(4, np.int32)),
    ("zeros-rank0", lambda ns: ns.np_.zeros(()), lambda: np.zeros((), np.float32)),
    ("zeros-zero-size", lambda ns: ns.np_.zeros((0, 2)), lambda: np.zeros((0, 2), np.float32)),
    ("ones-bool", lambda ns: ns.np_.ones(3, bool), lambda: np.ones(3, bool)),
    ("ones-bf16", lambda ns: ns.np_.ones((2,), BF16), lambda: np.ones(2, BF16)),
    ("full-float", lambda ns: ns.np_.full((2, 2), 1.5),
     lambda: Weak(np.full((2, 2), 1.5, np.float32))),
    ("full-int", lambda ns: ns.np_.full((3,), 7), lambda: Weak(np.full(3, 7, np.int32))),
    ("full-dtype", lambda ns: ns.np_.full((2,), 3, np.float16), lambda: np.full(2, 3, np.float16)),
    ("arange-stop", lambda ns: ns.np_.arange(5), lambda: np.arange(5, dtype=np.int32)),
    ("arange-start-stop-step", lambda ns: ns.np_.arange(2, 11, 3),
     lambda: np.arange(2, 11, 3, dtype=np.int32)),
    ("arange-float", lambda ns: ns.np_.arange(0.0, 1.0, 0.25),
     lambda: np.arange(0.0, 1.0, 0.25).astype(np.float32)),
    ("arange-negative-step", lambda ns: ns.np_.arange(5, 0, -2),
     lambda: np.arange(5, 0, -2).astype(np.int32)),
    ("arange-dtype", lambda ns: ns.np_.arange(4, dtype=np.float32),
     lambda: np.arange(4, dtype=np.float32)),
    ("arange-empty", lambda ns: ns.np_.arange(3, 1), lambda: np.arange(3, 1).astype(np.int32)),
    ("linspace", lambda ns: ns.np_.linspace(0.0, 1.0, 5),
     lambda: np.linspace(0, 1, 5).astype(np.float32)),
    ("linspace-no-endpoint", lambda ns: ns.np_.linspace(0.0, 2.0, 4, endpoint=False),
     lambda: np.linspace(0, 2, 4, endpoint=False).astype(np.float32)),
    ("linspace-one", lambda ns: ns.np_.linspace(3.0, 7.0, 1),
     lambda: np.array([3.0], np.float32)),
    ("eye", lambda ns: ns.np_.eye(3), lambda: np.eye(3, dtype=np.float32)),
    ("eye-rect-k", lambda ns: ns.np_.eye(3, 4, k=1), lambda: np.eye(3, 4, k=1, dtype=np.float32)),
    ("eye-negative-k-int", lambda ns: ns.np_.eye(4, k=-2, dtype=np.int32),
     lambda: np.eye(4, k=-2, dtype=np.int32)),
    ("array-list", lambda ns: ns.np_.array([[1, 2], [3, 4]]),
     lambda: np.array([[1, 2], [3, 4]], np.int32)),
    ("array-float-list", lambda ns: ns.np_.array([1.0, 2.5]),
     lambda: np.array([1, 2.5], np.float32)),
    ("array-mixed-list", lambda ns: ns.np_.array([1, 2.5, True]),
     lambda: np.array([1, 2.5, 1], np.float32)),
    ("asarray-scalar", lambda ns: ns.np_.asarray(3.0), lambda: Weak(np.float32(3.0))),
    ("asarray-dtype", lambda ns: ns.np_.asarray([1, 2], dtype=np.uint8),
     lambda: np.array([1, 2], np.uint8)),
]  # fmt: skip


def _creation_cases() -> Iterator[Case]:
    for label, program, oracle in CREATION:
        for mode in ("jit", "eager"):
            yield fn_case(
                f"np.creation/{label}" + ("/eager" if mode == "eager" else ""),
                program,
                [],
                oracle=oracle,
                mode=mode,
                tags=["numpy", "creation"] + (["quick"] if label == "arange-stop" else []),
            )
    like = [("zeros_like", np.zeros_like), ("ones_like", np.ones_like)]
    for name, np_fn in like:
        for dtype in (F32, I32, BOOL):
            case_name = f"np.{name}/{short(dtype)}"
            yield fn_case(
                case_name,
                lambda ns, x, _n=name: getattr(ns.np_, _n)(x),
                [sample(rng_for(case_name), (2, 3), dtype)],
                oracle=np_fn,
                tags=["numpy", "creation"],
            )
    yield fn_case(
        "np.full_like/f32-int-fill",
        lambda ns, x: ns.np_.full_like(x, 4),
        [np.ones((2, 2), np.float32)],
        oracle=lambda x: np.full_like(x, 4),
        tags=["numpy", "creation"],
    )
    yield fn_case(
        "np.zeros_like/dtype-argument",
        lambda ns, x: ns.np_.zeros_like(x, dtype=np.int32),
        [np.ones((2, 2), np.float32)],
        oracle=lambda x: np.zeros((2, 2), np.int32),
        tags=["numpy", "creation"],
    )
    # Weak types of created values (what the reference does is what JAX does)
    for label, program in [
        ("asarray-python-float", lambda ns: ns.np_.asarray(2.0)),
        ("array-python-int", lambda ns: ns.np_.array(3)),
        ("full-python-float", lambda ns: ns.np_.full((2,), 1.5)),
        ("zeros", lambda ns: ns.np_.zeros(2)),
    ]:
        yield fn_case(
            f"np.creation/weak-type/{label}",
            program,
            [],
            mode="eager",
            expect=AGREE,
            tags=["numpy", "creation", "weak"],
        )


# --- shape manipulation -------------------------------------------------------------------

SHAPE_FNS: list[tuple[str, Callable[..., Any], Callable[..., Any], tuple[int, ...]]] = [
    ("reshape/(4,3)", lambda ns, x: ns.np_.reshape(x, (4, 3)), lambda x: x.reshape(4, 3), (3, 4)),
    ("reshape/(-1,)", lambda ns, x: ns.np_.reshape(x, (-1,)), lambda x: x.reshape(-1), (3, 4)),
    ("reshape/(2,-1,3)", lambda ns, x: ns.np_.reshape(x, (2, -1, 3)),
     lambda x: x.reshape(2, -1, 3), (3, 4)),
    ("ravel", lambda ns, x: ns.np_.ravel(x), np.ravel, (3, 4)),
    ("transpose/default", lambda ns, x: ns.np_.transpose(x), np.transpose, (2, 3, 4)),
    ("transpose/axes", lambda ns, x: ns.np_.transpose(x, (1, 2, 0)),
     lambda x: np.transpose(x, (1, 2, 0)), (2, 3, 4)),
    ("swapaxes", lambda ns, x: ns.np_.swapaxes(x, 0, 2), lambda x: np.swapaxes(x, 0, 2), (2, 3, 4)),
    ("moveaxis", lambda ns, x: ns.np_.moveaxis(x, 0, -1), lambda x: np.moveaxis(x, 0, -1),
     (2, 3, 4)),
    ("squeeze/all", lambda ns, x: ns.np_.squeeze(x), np.squeeze, (1, 3, 1)),
    ("squeeze/axis", lambda ns, x: ns.np_.squeeze(x, axis=2), lambda x: np.squeeze(x, 2),
     (1, 3, 1)),
    ("expand_dims/0", lambda ns, x: ns.np_.expand_dims(x, 0), lambda x: np.expand_dims(x, 0),
     (3, 4)),
    ("expand_dims/-1", lambda ns, x: ns.np_.expand_dims(x, -1), lambda x: np.expand_dims(x, -1),
     (3, 4)),
    ("expand_dims/tuple", lambda ns, x: ns.np_.expand_dims(x, (0, 2)),
     lambda x: np.expand_dims(x, (0, 2)), (3, 4)),
    ("flip/axis0", lambda ns, x: ns.np_.flip(x, 0), lambda x: np.flip(x, 0), (3, 4)),
    ("flip/all", lambda ns, x: ns.np_.flip(x), np.flip, (3, 4)),
    ("broadcast_to", lambda ns, x: ns.np_.broadcast_to(x, (2, 3, 4)),
     lambda x: np.broadcast_to(x, (2, 3, 4)), (3, 1)),
    ("tile/int", lambda ns, x: ns.np_.tile(x, 2), lambda x: np.tile(x, 2), (2, 3)),
    ("tile/tuple", lambda ns, x: ns.np_.tile(x, (2, 1, 2)), lambda x: np.tile(x, (2, 1, 2)),
     (2, 3)),
    ("repeat/flat", lambda ns, x: ns.np_.repeat(x, 2), lambda x: np.repeat(x, 2), (2, 3)),
    ("repeat/axis", lambda ns, x: ns.np_.repeat(x, 3, axis=1), lambda x: np.repeat(x, 3, 1),
     (2, 3)),
    ("pad/constant", lambda ns, x: ns.np_.pad(x, ((1, 0), (2, 1))),
     lambda x: np.pad(x, ((1, 0), (2, 1))), (2, 3)),
    ("pad/int-width", lambda ns, x: ns.np_.pad(x, 1), lambda x: np.pad(x, 1), (2, 3)),
    ("pad/constant-value", lambda ns, x: ns.np_.pad(x, ((0, 1), (1, 1)), constant_values=7),
     lambda x: np.pad(x, ((0, 1), (1, 1)), constant_values=7), (2, 3)),
    ("sort/default", lambda ns, x: ns.np_.sort(x), np.sort, (3, 4)),
    ("sort/axis0", lambda ns, x: ns.np_.sort(x, axis=0), lambda x: np.sort(x, 0), (3, 4)),
    ("sort/axis-none", lambda ns, x: ns.np_.sort(x, axis=None), lambda x: np.sort(x, None),
     (3, 4)),
    ("T", lambda ns, x: x.T, lambda x: x.T, (3, 4)),
    ("method-reshape", lambda ns, x: x.reshape(2, 6), lambda x: x.reshape(2, 6), (3, 4)),
    ("method-astype-i32", lambda ns, x: x.astype(np.int32), lambda x: x.astype(np.int32), (3, 4)),
    ("method-sum-axis", lambda ns, x: x.sum(axis=0), lambda x: x.sum(0), (3, 4)),
    ("method-flatten", lambda ns, x: x.flatten(), lambda x: x.flatten(), (3, 4)),
    ("method-ravel", lambda ns, x: x.ravel(), lambda x: x.ravel(), (3, 4)),
]  # fmt: skip


def _shape_cases() -> Iterator[Case]:
    for label, program, np_fn, shape in SHAPE_FNS:
        dtypes = (F32, I32, BOOL) if label.startswith(("reshape/(4", "transpose/axes")) else (F32,)
        for index, dtype in enumerate(dtypes):
            name = f"np.{label}/{short(dtype)}"
            x = sample(
                rng_for(name),
                shape,
                dtype,
            )
            if label.startswith("method-astype"):
                x = x * 3
            yield fn_case(
                name,
                program,
                [x],
                oracle=_canon(np_fn),
                tags=["numpy", "shape"] + (["quick"] if index == 0 and "/" not in label else []),
            )


def _join_split_cases() -> Iterator[Case]:
    rng = rng_for("join")
    a, b = sample(rng, (2, 3), F32), sample(rng, (2, 3), F32)
    c = sample(rng, (1, 3), F32)
    yield fn_case(
        "np.concatenate/axis0",
        lambda ns, a, b, c: ns.np_.concatenate([a, b, c]),
        [a, b, c],
        oracle=lambda a, b, c: np.concatenate([a, b, c]),
        tags=["numpy", "shape", "quick"],
    )
    yield fn_case(
        "np.concatenate/axis1",
        lambda ns, a, b: ns.np_.concatenate((a, b), axis=1),
        [a, b],
        oracle=lambda a, b: np.concatenate((a, b), 1),
        tags=["numpy", "shape"],
    )
    yield fn_case(
        "np.concatenate/axis-none",
        lambda ns, a, c: ns.np_.concatenate([a, c], axis=None),
        [a, c],
        oracle=lambda a, c: np.concatenate([a, c], axis=None),
        tags=["numpy", "shape"],
    )
    yield fn_case(
        "np.concatenate/promotes",
        lambda ns, a, i: ns.np_.concatenate([a, i]),
        [a, np.ones((1, 3), np.int32)],
        oracle=lambda a, i: np.concatenate([a, i.astype(np.float32)]),
        tags=["numpy", "shape", "promotion"],
    )
    for axis in (0, 1, -1, 2):
        yield fn_case(
            f"np.stack/axis{axis}",
            lambda ns, a, b, _x=axis: ns.np_.stack([a, b], _x),
            [a, b],
            oracle=lambda a, b, _x=axis: np.stack([a, b], _x),
            tags=["numpy", "shape"],
        )
    x = sample(rng_for("split"), (6, 4), F32)
    for label, arg, axis in [("sections3", 3, 0), ("indices", [1, 4], 0), ("axis1", 2, 1),
                             ("indices-empty-part", [0, 2, 2], 1)]:  # fmt: skip
        yield fn_case(
            f"np.split/{label}",
            lambda ns, x, _a=arg, _x=axis: tuple(ns.np_.split(x, _a, axis=_x)),
            [x],
            oracle=lambda x, _a=arg, _x=axis: tuple(np.split(x, _a, axis=_x)),
            tags=["numpy", "shape"],
        )


def _selection_cases() -> Iterator[Case]:
    rng = rng_for("where")
    cond = sample(rng, (3, 4), BOOL)
    x, y = sample(rng, (3, 4), F32), sample(rng, (4,), F32)
    yield fn_case(
        "np.where/broadcast",
        lambda ns, c, x, y: ns.np_.where(c, x, y),
        [cond, x, y],
        oracle=np.where,
        tags=["numpy", "select", "quick"],
    )
    yield fn_case(
        "np.where/scalar-branches",
        lambda ns, c: ns.np_.where(c, 1.0, 0),
        [cond],
        oracle=lambda c: Weak(np.where(c, 1.0, 0.0).astype(np.float32)),
        tags=["numpy", "select"],
    )
    yield fn_case(
        "np.where/promotes",
        lambda ns, c, x, i: ns.np_.where(c, x, i),
        [cond, x, np.arange(4, dtype=np.int32)],
        oracle=lambda c, x, i: np.where(c, x, i.astype(np.float32)),
        tags=["numpy", "select", "promotion"],
    )
    yield fn_case(
        "np.where/weak",
        lambda ns, c: ns.np_.where(c, 2.0, 3.0),
        [cond],
        expect=AGREE,
        tags=["numpy", "select", "weak"],
    )
    for label, lo, hi in [("both", -1.0, 1.0), ("min-only", 0.0, None), ("max-only", None, 0.5)]:
        yield fn_case(
            f"np.clip/{label}",
            lambda ns, x, _l=lo, _h=hi: ns.np_.clip(x, _l, _h),
            [x],
            oracle=lambda x, _l=lo, _h=hi: np.clip(x, _l, _h).astype(np.float32),
            tags=["numpy", "select"],
        )
    xi = sample(rng, (3, 4), I32)
    yield fn_case(
        "np.clip/int-arrays",
        lambda ns, x, lo, hi: ns.np_.clip(x, lo, hi),
        [xi, np.int32(-5), np.full(4, 5, np.int32)],
        oracle=lambda x, lo, hi: np.clip(x, lo, hi),
        tags=["numpy", "select"],
    )
    data = sample(rng_for("take"), (4, 5), F32)
    for label, idx, axis in [("axis0", [3, 0, 0], 0), ("axis1", [[1, 4], [0, 2]], 1),
                             ("flat", [7, 0, 19], None), ("negative", [-1, -4], 0)]:  # fmt: skip
        yield fn_case(
            f"np.take/{label}",
            lambda ns, d, i, _a=axis: ns.np_.take(d, i, axis=_a),
            [data, np.array(idx, np.int32)],
            oracle=lambda d, i, _a=axis: np.take(d, i, axis=_a),
            tags=["numpy", "select"],
        )


# --- indexing -------------------------------------------------------------------------------

INDEXES: list[tuple[str, Any]] = [
    ("int", 1),
    ("negative-int", -1),
    ("slice", slice(1, 3)),
    ("slice-step", slice(None, None, 2)),
    ("slice-negative-step", slice(None, None, -1)),
    ("slice-past-end", slice(2, 10)),
    ("tuple-int-slice", (1, slice(0, 2))),
    ("none", (None, 0)),
    ("ellipsis", (Ellipsis, 1)),
    ("ellipsis-none", (Ellipsis, None)),
    ("int-int", (2, 3)),
    ("empty-slice", slice(3, 1)),
]


def _index_cases() -> Iterator[Case]:
    x = sample(rng_for("index"), (4, 5), F32)
    for label, index in INDEXES:
        for mode in ("jit", "eager") if label in ("int", "slice") else ("jit",):
            yield fn_case(
                f"np.indexing/{label}" + ("/eager" if mode == "eager" else ""),
                lambda ns, x, _i=index: x[_i],
                [x],
                oracle=lambda x, _i=index: x[_i],
                mode=mode,
                tags=["numpy", "indexing"] + (["quick"] if label == "tuple-int-slice" else []),
                source=f"lambda ns, x: x[{index!r}]",
            )
    idx = np.array([3, 0, -1], np.int32)
    yield fn_case(
        "np.indexing/int-array",
        lambda ns, x, i: x[i],
        [x, idx],
        oracle=lambda x, i: x[i],
        tags=["numpy", "indexing"],
    )
    yield fn_case(
        "np.indexing/int-array-axis1",
        lambda ns, x, i: x[:, i],
        [x, idx],
        oracle=lambda x, i: x[:, i],
        tags=["numpy", "indexing"],
    )
    yield fn_case(
        "np.indexing/two-int-arrays",
        lambda ns, x, i: x[i, i],
        [x, idx],
        oracle=lambda x, i: x[i, i],
        tags=["numpy", "indexing"],
    )
    yield fn_case(
        "np.indexing/traced-int",
        lambda ns, x, i: x[i],
        [x, np.int32(2)],
        oracle=lambda x, i: x[i],
        tags=["numpy", "indexing"],
    )
    yield fn_case(
        "np.indexing/out-of-bounds-int-clamps",
        lambda ns, x, i: x[i],
        [x, np.array([7, -9], np.int32)],
        expect=AGREE,
        tags=["numpy", "indexing", "edge"],
        notes="jnp clamps out-of-bounds gather indices",
    )
    yield fn_case(
        "np.indexing/static-out-of-bounds",
        lambda ns, x: x[10],
        [x],
        expect=AGREE,
        mode="eager",
        tags=["numpy", "indexing", "edge"],
        notes="jax 0.10.2 clamps a static out-of-bounds int index too",
    )
    yield fn_case(
        "np.indexing/too-many-indices",
        lambda ns, x: x[1, 2, 3],
        [x],
        expect=Raises(IndexError),
        mode="eager",
        tags=["numpy", "indexing", "errors"],
    )
    yield fn_case(
        "np.indexing/float-index",
        lambda ns, x: x[1.5],
        [x],
        expect=Raises(TypeError),
        mode="eager",
        tags=["numpy", "indexing", "errors"],
    )
    yield fn_case(
        "np.indexing/rank0-ellipsis",
        lambda ns, s: s[...],
        [np.float32(2.5)],
        oracle=lambda s: np.float32(2.5),
        tags=["numpy", "indexing"],
    )


def _misc_cases() -> Iterator[Case]:
    for dtype in (F32, F16, BF16, U8):
        name = f"np.astype/f32->{short(dtype)}"
        x = sample(rng_for(name), (5,), F32) * 3
        yield fn_case(
            name,
            lambda ns, x, _d=dtype: ns.np_.astype(x, _d),
            [x],
            oracle=lambda x, _d=dtype: (
                x.astype(_d) if _d != U8 else np.clip(np.trunc(x), 0, 255).astype(np.uint8)
            ),
            tags=["numpy"],
        )
    yield fn_case(
        "np.round/decimals",
        lambda ns, x: ns.np_.round(x, 1),
        [np.array([0.25, 1.26, -2.35, 3.0], np.float32)],
        expect=AGREE,
        tags=["numpy"],
    )
    yield fn_case(
        "np.asarray/numpy-input",
        lambda ns, x: ns.np_.asarray(x) * 2,
        [Raw(np.arange(3, dtype=np.float64))],
        oracle=lambda x: (x * 2).astype(np.float32),
        tags=["numpy"],
    )


# --- issue 29 (class 5): jax.numpy behaviours JAX's own tests found different ----------

_Z = np.array([1.5 + 0.5j, -3 + 1e-3j, 0.5j, -1.5 - 2j, 2 + 3.1j], np.complex64)
_ZT = np.array([1 - 1j, 0.5j, -2 + 0j, 1 + 1j, 0.25 - 3j], np.complex64)

COMPLEX_DERIVATIVES: list[tuple[str, Callable[..., Any]]] = [
    ("logaddexp", lambda np_: lambda z: np_.logaddexp(z, z[::-1] * 0.7)),
    ("logaddexp2", lambda np_: lambda z: np_.logaddexp2(z[::-1] * 0.7, z)),
    ("arcsinh", lambda np_: np_.arcsinh),
    ("round", lambda np_: lambda z: np_.round(z * 3.3, 1)),
    ("corrcoef", lambda np_: lambda z: np_.corrcoef(np_.stack([z, z**2, z * 0.5 + 1j])).ravel()),
]


def _issue29_cases() -> Iterator[Case]:
    for fname, make in COMPLEX_DERIVATIVES:
        yield fn_case(
            f"np.complex-derivatives/{fname}",
            lambda ns, z, t, _m=make: (
                ns.api.jvp(_m(ns.np_), (z,), (t,)),
                ns.api.vjp(_m(ns.np_), z)[1](ns.api.jvp(_m(ns.np_), (z,), (t,))[1])[0],
                ns.api.grad(lambda w: _m(ns.np_)(w * z)[1], holomorphic=True)(z[0]),
            ),
            [_Z, _ZT],
            expect=AGREE,
            tags=["numpy", "ad", "complex"],
            # corrcoef's diagonal is 1, its derivative 0 up to cancellation
            tolerance=Tolerance(ulps=64, atol_eps=64),
            notes="value, jvp, vjp and holomorphic grad with complex inputs",
        )
    acosh_points = np.array([1.5 + 0.5j, 0.4 - 1.2j, -0.3 + 0.2j, -10 - 0.1j], np.complex64)
    yield fn_case(
        "np.complex-derivatives/arccosh",
        lambda ns, z: (ns.np_.arccosh(z), ns.api.jvp(ns.np_.arccosh, (z,), (ns.np_.ones_like(z),))),
        [acosh_points],
        oracle=lambda z: (
            np.arccosh(z.astype(np.complex128)).astype(np.complex64),
            (
                np.arccosh(z.astype(np.complex128)).astype(np.complex64),
                (1 / (np.sqrt(z - 1.0) * np.sqrt(z + 1.0))).astype(np.complex64),
            ),
        ),
        tags=["numpy", "ad", "complex"],
        notes="the derivative of the principal branch, 1 / (sqrt(z - 1) sqrt(z + 1))",
    )
    yield fn_case(
        "np.frexp/jvp",
        lambda ns, x, t: ns.api.jvp(ns.np_.frexp, (x,), (t,))[1][0],
        [np.array([3.0, -0.3, 0.0, 1024.0, 5.5], np.float32), np.arange(1, 6, dtype=np.float32)],
        expect=AGREE,
        tags=["numpy", "ad"],
        notes="JAX's custom_jvp: d mantissa = dx * 2**-exponent",
    )
    table = np.arange(12, dtype=np.float32).reshape(3, 4)
    table[0, 2] = np.nan
    for mode in ("one_hot", "promise_in_bounds"):
        yield fn_case(
            f"np.take_along_axis/mode-{mode}",
            lambda ns, a, i, _m=mode: ns.np_.take_along_axis(a, i, 1, mode=_m),
            [table, np.array([[0, -1], [5, 1], [2, -7]], np.int32)],
            expect=AGREE,
            tags=["numpy", "indexing"],
            notes="one_hot: a product with the one-hot encoding (out of range 0, NaN spreads)",
        )
    xp, fp = np.array([0.0, 90, 180, 270], np.float32), np.array([0.0, 1, 2, 3], np.float32)
    for name, kwargs in [
        ("period", {"period": 360}),
        ("period-complex-fp", {"period": -360.0, "complex": True}),
        ("extrapolate", {"left": "extrapolate", "right": "extrapolate"}),
    ]:
        yield fn_case(
            f"np.interp/{name}",
            lambda ns, x, xp, fp, _k=kwargs: ns.np_.interp(
                x,
                xp,
                fp * (1 + 1j) if _k.get("complex") else fp,
                **{k: v for k, v in _k.items() if k != "complex"},
            ),
            [np.array([-10.0, 45, 300, 370, 725, 90], np.float32), xp, fp],
            expect=AGREE,
            tags=["numpy"],
        )
    for length in (4, 9):
        yield fn_case(
            f"np.repeat/traced-total_repeat_length-{length}",
            lambda ns, x, r, _n=length: ns.np_.repeat(x, r, 1, total_repeat_length=_n),
            [np.arange(6, dtype=np.float32).reshape(2, 3), np.array([1, 2, 3], np.int32)],
            expect=AGREE,
            tags=["numpy"],
            notes="repeats traced under jit; the result cut short or padded with the last element",
        )
    yield fn_case(
        "np.shape/zero-d-array-as-shape-and-axis",
        lambda ns, x: (
            ns.np_.zeros(np.array(3)),
            ns.np_.broadcast_to(x[0], np.array(2)),
            ns.np_.expand_dims(x, np.array(1)),
            ns.np_.split(x, np.array(2), np.array(0))[1],
        ),
        [np.arange(4, dtype=np.float32)],
        expect=AGREE,
        tags=["numpy"],
    )
    yield fn_case(
        "np.shape/zero-d-array-as-method-reshape-size",
        lambda ns, x: (
            x.reshape(np.array(4)),
            x.reshape(np.array(2), 2),
            x.reshape(np.array([4, 1])),
        ),
        [np.arange(4, dtype=np.float32)],
        expect=AGREE,
        tags=["numpy"],
        notes="jax.Array.reshape takes one 0-d array as the size (issue 29 audit)",
    )
    yield fn_case(
        "np.cov/fweights-aweights",
        lambda ns, x, f, a: (ns.np_.cov(x, fweights=f), ns.np_.cov(x, fweights=f, aweights=a)),
        [
            np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32),
            np.array([1, 2, 1, 3, 1], np.int32),
            np.array([0.5, 1.0, 2.0, 0.1, 1.0], np.float32),
        ],
        expect=AGREE,
        tags=["numpy"],
        # a covariance near 0 is a difference of sums (summation order)
        tolerance=Tolerance(ulps=64, atol_eps=8),
    )
    yield fn_case(
        "np.sum/promote_integers-false",
        lambda ns, x: (ns.np_.sum(x, promote_integers=False), ns.np_.prod(x > 2)),
        [np.arange(1, 7, dtype=np.int8)],
        expect=AGREE,
        tags=["numpy", "reductions"],
    )
    yield fn_case(
        "np.intersect1d/return_indices-size",
        lambda ns, x, y: (
            ns.np_.intersect1d(x, y, return_indices=True, size=4),
            ns.np_.setdiff1d(x, y, size=5),
        ),
        [np.array([5, 1, 3, 3, 7, 1], np.int32), np.array([3, 9, 1, 1, 8], np.int32)],
        expect=AGREE,
        tags=["numpy"],
    )
    yield fn_case(
        "np.unique/axis-size",
        lambda ns, x: ns.np_.unique(
            x, return_index=True, return_inverse=True, return_counts=True, axis=1, size=5
        ),
        [np.array([[1, 2, 1, 0, 1], [0, 5, 0, 3, 0]], np.int32)],
        expect=AGREE,
        tags=["numpy"],
    )
    yield fn_case(
        "np.array-methods/view-divmod-argpartition",
        lambda ns, x, i: (
            x.view(np.uint8),
            x.view(np.int16),
            i.view(np.float32),
            divmod(i, 3),
            i.argpartition(1),
        ),
        [np.array([[1.0, -2.5, 3e-8, np.inf]], np.float32), np.array([7, -1, 300, 2], np.int32)],
        expect=AGREE,
        tags=["numpy"],
    )
    yield fn_case(
        "np.pad/callable-mode",
        lambda ns, x: ns.np_.pad(
            x, ((1, 2), (0, 3)), mode=lambda v, w, i, k: v.at[: w[0]].set(k["fill"] + i), fill=7
        ),
        [np.arange(12, dtype=np.float32).reshape(3, 4)],
        expect=AGREE,
        tags=["numpy"],
    )


# --- jax.numpy behaviours JAX's lax_numpy_test.py pins down -------------------------------

_SIGNAL = np.array([[4, -1, 3, -3, 2, 0], [1, 1, -4, 2, 5, -2]], np.int32)
_XS = np.linspace(0.0, 1.0, 7).astype(np.float32)
_YS = np.stack([_XS**2 - 0.5 * _XS + 1, 2 * _XS - 1], axis=1).astype(np.float32)


def _lax_numpy_test_cases() -> Iterator[Case]:
    yield fn_case(
        "np.lax_numpy/unwrap_int_period",
        lambda ns, p: (ns.np_.unwrap(p, period=4), ns.np_.unwrap(p, discont=np.pi, period=2)),
        [_SIGNAL],
        expect=AGREE,
        tags=["numpy", "dtypes"],
        notes="an integer signal with an integer period stays integer",
    )
    yield fn_case(
        "np.lax_numpy/polyfit_cov_full",
        lambda ns, x, y: (
            ns.np_.polyfit(x, y, 2, cov=True),
            ns.np_.polyfit(x, y[:, 0], 1, w=x + 1, cov="unscaled"),
            ns.np_.polyfit(x, y[:, 1], 2, full=True)[2:],
        ),
        [_XS, _YS],
        expect=AGREE,
        tags=["numpy", "linalg"],
        tolerance=Tolerance(ulps=4096, atol_eps=4096),
        notes="coefficients with the covariance; full=True's rank, singular values, rcond",
    )
    yield fn_case(
        "np.lax_numpy/lstsq_rank_deficient_residuals",
        lambda ns, a, b: ns.np_.linalg.lstsq(a, b, rcond=-1)[1:3],
        [np.array([[1, 2, 2], [3, 1, 1], [0, 5, 5], [2, 2, 2]], np.float32), _YS[:4]],
        expect=AGREE,
        tags=["numpy", "linalg"],
        tolerance=Tolerance(ulps=4096, atol_eps=4096),
        notes="residuals computed whatever the rank; rcond < 0 is machine precision",
    )
    yield fn_case(
        "np.lax_numpy/polyder_int",
        lambda ns, p: (ns.np_.polyder(p, 2), ns.np_.polyder(p, 0)),
        [np.array([3, -1, 2, 5, 1], np.int32)],
        expect=AGREE,
        tags=["numpy", "dtypes"],
        notes="integer coefficients give the default float",
    )
    yield fn_case(
        "np.lax_numpy/compress_condition_past_axis",
        lambda ns, c, x: ns.np_.compress(c, x, axis=1),
        [np.array([1, 0, 0, 1]), np.arange(6, dtype=np.int32).reshape(2, 3)],
        expect=Raises(ValueError),
        mode="eager",
        tags=["numpy", "errors"],
    )
    yield fn_case(
        "np.lax_numpy/extract_size_past_axis",
        lambda ns, c, x: ns.np_.extract(c, x, size=4),
        [np.array([True, False, True]), np.arange(3, dtype=np.float32)],
        expect=Raises(ValueError),
        tags=["numpy", "errors"],
    )
    yield fn_case(
        "np.lax_numpy/permute_dims_negative",
        lambda ns, x: ns.np_.permute_dims(x, (-1, -2)),
        [np.arange(6, dtype=np.int32).reshape(2, 3)],
        expect=Raises(TypeError),
        tags=["numpy", "errors"],
    )
    yield fn_case(
        "np.lax_numpy/hypot_complex",
        lambda ns, z: ns.np_.hypot(z, z),
        [np.ones(3, np.complex64)],
        expect=Raises(ValueError),
        tags=["numpy", "errors", "complex"],
    )
    yield fn_case(
        "np.lax_numpy/pad_unknown_mode",
        lambda ns, x: ns.np_.pad(x, 1, mode="foo"),
        [np.arange(3, dtype=np.float32)],
        expect=Raises(NotImplementedError),
        tags=["numpy", "errors"],
    )
    yield fn_case(
        "np.lax_numpy/convolve_preferred_int",
        lambda ns, a, v: (
            ns.np_.convolve(a, v, mode="same", preferred_element_type=np.int8),
            ns.np_.correlate(v, a, mode="full", preferred_element_type=np.int8),
        ),
        [np.array([3, -1, 2, 4, -2, 1], np.int8), np.array([1, -2, 1], np.int8)],
        expect=AGREE,
        tags=["numpy", "dtypes"],
        notes="with preferred_element_type the integer operands stay integers",
    )
    yield fn_case(
        "np.lax_numpy/repeat_scalar_axis",
        lambda ns, x: (ns.np_.repeat(x, 3, axis=0), ns.np_.repeat(x, 2, axis=2)),
        [np.float32(1.5)],
        expect=AGREE,
        tags=["numpy", "shapes"],
        notes="a rank-0 operand repeats as 1-d whatever the axis",
    )
    yield fn_case(
        "np.lax_numpy/insert_traced_position",
        lambda ns, x, i, j: (
            ns.np_.insert(x, i, np.float32(-7), axis=1),
            ns.np_.insert(x, j, np.float32(9)),
        ),
        [np.arange(12, dtype=np.float32).reshape(3, 4), np.int32(-1), np.array([5, 0], np.int32)],
        expect=AGREE,
        tags=["numpy", "jit"],
        notes="traced insert positions under jit (a static count)",
    )
    yield fn_case(
        "np.lax_numpy/delete_traced_unique",
        lambda ns, x, i: ns.np_.delete(x, i, axis=1, assume_unique_indices=True),
        [np.arange(12, dtype=np.int32).reshape(3, 4), np.array([3, 0], np.int32)],
        expect=AGREE,
        tags=["numpy", "jit"],
        notes="traced unique indices under jit",
    )
    yield fn_case(
        "np.lax_numpy/pad_linear_ramp_weak",
        lambda ns: ns.np_.pad(
            ns.np_.asarray(3.0)[None], 2, mode="linear_ramp", end_values=(1.5, -2.0)
        ),
        [],
        expect=AGREE,
        tags=["numpy", "dtypes", "weak"],
        notes="a weak operand stays weak",
    )
    yield fn_case(
        "np.lax_numpy/unique_empty_slices",
        lambda ns: (
            ns.np_.unique(
                np.zeros((0, 4), np.float32),
                axis=1,
                return_index=True,
                return_inverse=True,
                return_counts=True,
            ),
            ns.np_.unique(np.zeros((3, 0), np.int8), axis=0),
        ),
        [],
        mode="eager",
        expect=AGREE,
        tags=["numpy"],
        notes="slices with no elements along the axis are all equal: one group (eager: "
        "under jit the result's length needs size=, in JAX too)",
    )
    yield fn_case(
        "np.lax_numpy/einsum_interleaved",
        lambda ns, a, b, c: (
            ns.np_.einsum(a, [0, 1], b, [1, 2], [0, 2]),
            ns.np_.einsum(c, [Ellipsis, 0, 1], b, [1, 2]),
            ns.np_.einsum(a, [26, 51], [51]),
        ),
        [
            np.arange(12, dtype=np.float32).reshape(3, 4) / 7,
            np.arange(20, dtype=np.float32).reshape(4, 5) / 9,
            np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 5,
        ],
        expect=AGREE,
        tags=["numpy"],
        notes="NumPy's operand/sublist form, with ... and an output sublist",
    )
    yield fn_case(
        "np.lax_numpy/unique_size_no_elements",
        lambda ns, x, y: (
            ns.np_.unique(
                x, return_index=True, return_inverse=True, return_counts=True, size=3, fill_value=1
            ),
            ns.np_.unique(y, axis=1, return_index=True, return_counts=True, size=2),
        ),
        [np.zeros((0, 4), np.float32), np.zeros((0, 3), np.int8)],
        expect=AGREE,
        tags=["numpy", "jit"],
        notes="index and counts are those of the groups found, not padded to size",
    )
    yield fn_case(
        "np.lax_numpy/choose_weak_choices",
        lambda ns, i: (
            ns.np_.choose(i, [1.0, 2.5], mode="clip"),
            ns.np_.choose(i, [1, np.int8(3)], mode="wrap"),
        ),
        [np.array([0, 1, 3], np.int32)],
        expect=AGREE,
        tags=["numpy", "jit", "weak"],
        notes="the result is strongly typed, as an array built from the choices",
    )


def _lax_numpy_test_cases_creation() -> Iterator[Case]:
    """Creation and shape functions as lax_numpy_test.py's middle part
    (testCumSumProd ... testIsComplexObj) uses them."""
    yield fn_case(
        "np.lax_numpy/eye_tri_traced_offset",
        lambda ns, k: (ns.np_.eye(4, 3, k=k, dtype=np.int32), ns.np_.tri(3, 5, k=k)),
        [np.int32(-1)],
        expect=AGREE,
        tags=["numpy", "jit"],
        notes="a traced diagonal offset under jit",
    )
    yield fn_case(
        "np.lax_numpy/tri_offset_overflow",
        lambda ns: ns.np_.tri(3, k=2**33),
        [],
        mode="eager",
        expect=Raises(OverflowError),
        tags=["numpy", "errors"],
        notes="tri's offset is an int32 (eye clips it instead)",
    )
    yield fn_case(
        "np.lax_numpy/ldexp_extreme_exponents",
        lambda ns, x1, x2: ns.np_.ldexp(x1, x2),
        [np.array([0.5, 1.1754944e-38, 3.4028235e38], np.float32), np.array([128, 252, -252])],
        expect=AGREE,
        tags=["numpy"],
        notes="x1 split by frexp first: 2**x2 alone would overflow",
    )
    yield fn_case(
        "np.lax_numpy/ldexp_subnormals_flushed",
        lambda ns, x1, x2: ns.np_.ldexp(x1, x2),
        [np.array([1.0, -1.75, 3.0, 4e-45, 1e-39], np.float32), np.array([-127, -127, -127, 5, 9])],
        expect=AGREE,
        tags=["numpy"],
        notes="XLA CPU's FTZ/DAZ: a subnormal x1 comes back as it is, a subnormal result is 0",
    )
    yield fn_case(
        "np.lax_numpy/polymul_trim_leading_zeros",
        lambda ns, a1, a2: ns.np_.polymul(a1, a2, trim_leading_zeros=True),
        [np.array([0, 0, 1, 2], np.int32), np.array([0.0, 3.0], np.float32)],
        mode="eager",
        expect=AGREE,
        tags=["numpy", "shapes"],
    )
    yield fn_case(
        "np.lax_numpy/diff_order_zero",
        lambda ns, x: ns.np_.diff(x, n=0, axis=0, prepend=1, append=x),
        [np.arange(6, dtype=np.int8).reshape(2, 3)],
        expect=AGREE,
        tags=["numpy", "shapes"],
        notes="n=0 returns the input; prepend/append unused",
    )
    yield fn_case(
        "np.lax_numpy/searchsorted_unknown_method",
        lambda ns, a, v: ns.np_.searchsorted(a, v, method="bisect"),
        [np.arange(4, dtype=np.float32), np.float32(1.5)],
        expect=Raises(ValueError),
        tags=["numpy", "errors"],
    )
    yield fn_case(
        "np.lax_numpy/histogram_integer_edges",
        lambda ns, a, w: (
            ns.np_.histogram(a, np.array([-5, 0, 3]), weights=w),
            ns.np_.histogramdd(ns.np_.stack([a, a], axis=1), [np.array([-5, 0, 3])] * 2),
        ),
        [np.array([-4, 0, 1, 2, 2, 3], np.int32), np.array([1, 2, 0, 1, 3, 1], np.int32)],
        expect=AGREE,
        tags=["numpy", "dtypes"],
        notes="integer edges become a's inexact dtype; counts the dtype a and weights join to",
    )
    yield fn_case(
        "np.lax_numpy/split_float_sections",
        lambda ns, x: (ns.np_.split(x, 3.0), ns.np_.array_split(x, 2.5)),
        [np.arange(6, dtype=np.float32)],
        mode="eager",
        expect=AGREE,
        tags=["numpy", "shapes"],
        notes="the number of sections is read with int(), as JAX",
    )
    yield fn_case(
        "np.lax_numpy/array_of_masked_array",
        lambda ns: ns.np_.array(np.ma.array([1, 2], mask=[True, False])),
        [],
        mode="eager",
        expect=AGREE,
        tags=["numpy"],
        notes="array drops the mask (asarray refuses it)",
    )
    yield fn_case(
        "np.lax_numpy/searchsorted_complex",
        lambda ns, a, v: (
            ns.np_.searchsorted(a, v),
            ns.np_.searchsorted(a, v, side="right", method="compare_all"),
        ),
        [
            np.array([-1 - 1j, -1 + 0j, -1 + 2j, 0j, 1 + 1j], np.complex64),
            np.array([-1 + 0j, -1 + 1j, 2 - 1j, -3 + 0j], np.complex64),
        ],
        expect=AGREE,
        tags=["numpy", "complex"],
        notes="complex numbers ordered by real part, then imaginary part",
    )


def cases() -> Iterator[Case]:
    yield from _issue29_cases()
    yield from _lax_numpy_test_cases()
    yield from _lax_numpy_test_cases_creation()
    yield from _creation_cases()
    yield from _shape_cases()
    yield from _join_split_cases()
    yield from _selection_cases()
    yield from _index_cases()
    yield from _misc_cases()
