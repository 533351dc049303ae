"""The wider numpy surface: dtype names, elementwise math, creation, stacking,
statistics, search/sort/set functions with ``size=``, ``x.at[]`` and
``np_.linalg``.

Exact functions (integers, bools, sorting, indexing, sets) use NumPy
oracles (with jax.numpy's dtype rules: x64 off, int32 indices). Floating
results whose rounding depends on the algorithm (statistics, linalg) use
``AGREE``: pjrt and jax must agree with the reference within a tolerance of
a few hundred ulps (the PJRT backend lowers decompositions as loops of
primitives, JAX calls LAPACK). Eigen- and singular vectors are observed
through unique quantities (reconstructions), never directly.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, fn_case, rng_for, sample
from conformance.compare import Tolerance
from conformance.corpus._tables import BOOL, F32, I32, U8

LOOSE = Tolerance(ulps=512, atol_eps=64)


def _int32(x: Any) -> Any:
    return np.asarray(x).astype(np.int32)


def _exact_cases() -> Iterator[Case]:
    rng = rng_for("np.surface/exact")
    ints = rng.integers(-5, 6, (3, 4)).astype(np.int32)
    mask = rng.random((3, 4)) < 0.5
    flat = np.array([3, 1, 3, 0, 1, 7, 3], np.int32)
    table = [
        ("tril", lambda ns, x: ns.np_.tril(x, -1), lambda x: np.tril(x, -1), [ints]),
        ("triu", lambda ns, x: ns.np_.triu(x, 1), lambda x: np.triu(x, 1), [ints]),
        ("diag", lambda ns, x: ns.np_.diag(x, 1), lambda x: np.diag(x, 1), [ints]),
        ("diagonal", lambda ns, x: ns.np_.diagonal(x, -1), lambda x: np.diagonal(x, -1), [ints]),
        ("trace", lambda ns, x: ns.np_.trace(x), lambda x: _int32(np.trace(x)), [ints]),
        ("roll", lambda ns, x: ns.np_.roll(x, 2, 1), lambda x: np.roll(x, 2, 1), [ints]),
        ("rot90", lambda ns, x: ns.np_.rot90(x), lambda x: np.rot90(x), [ints]),
        ("hstack", lambda ns, x: ns.np_.hstack([x, x]), lambda x: np.hstack([x, x]), [ints]),
        ("vstack", lambda ns, x: ns.np_.vstack([x, x]), lambda x: np.vstack([x, x]), [ints]),
        (
            "kron",
            lambda ns, x: ns.np_.kron(x[:2, :2], x[:2, :2]),
            lambda x: np.kron(x[:2, :2], x[:2, :2]),
            [ints],
        ),
        ("outer", lambda ns, x: ns.np_.outer(x[0], x[1]), lambda x: np.outer(x[0], x[1]), [ints]),
        ("diff", lambda ns, x: ns.np_.diff(x, 2), lambda x: np.diff(x, 2), [ints]),
        (
            "cross",
            lambda ns, x: ns.np_.cross(x[:, :3], x[:, 1:]),
            lambda x: np.cross(x[:, :3], x[:, 1:]),
            [ints],
        ),
        ("gcd", lambda ns, x: ns.np_.gcd(x, 6), lambda x: np.gcd(x, 6), [ints]),
        ("lcm", lambda ns, x: ns.np_.lcm(x, 4), lambda x: np.lcm(x, 4), [ints]),
        (
            "argsort",
            lambda ns, x: ns.np_.argsort(x, axis=1),
            lambda x: _int32(np.argsort(x, axis=1, kind="stable")),
            [ints],
        ),
        (
            "argsort-descending",
            lambda ns, x: ns.np_.argsort(x, descending=True),
            lambda x: _int32(np.argsort(-x, kind="stable")),
            [ints],
        ),
        (
            "lexsort",
            lambda ns, x: ns.np_.lexsort((x[0], x[1])),
            lambda x: _int32(np.lexsort((x[0], x[1]))),
            [ints],
        ),
        (
            "searchsorted",
            lambda ns, a, v: ns.np_.searchsorted(a, v, side="right"),
            lambda a, v: _int32(np.searchsorted(a, v, side="right")),
            [np.array([-2, 0, 0, 3, 8], np.int32), ints],
        ),
        (
            "digitize",
            lambda ns, x: ns.np_.digitize(x, ns.np_.array([-2, 0, 3])),
            lambda x: _int32(np.digitize(x, np.array([-2, 0, 3]))),
            [ints],
        ),
        (
            "take_along_axis",
            lambda ns, x: ns.np_.take_along_axis(x, ns.np_.argsort(x, 1), 1),
            lambda x: np.sort(x, 1),
            [ints],
        ),
        (
            "nonzero-size",
            lambda ns, m: ns.np_.nonzero(m, size=8, fill_value=-1),
            lambda m: tuple(
                np.pad(i, (0, 8 - i.size), constant_values=-1).astype(np.int32)
                for i in (k[:8] for k in np.nonzero(m))
            ),
            [mask],
        ),
        (
            "argwhere-size",
            lambda ns, m: ns.np_.argwhere(m, size=3),
            lambda m: _int32(
                np.pad(np.argwhere(m)[:3], ((0, max(0, 3 - np.argwhere(m).shape[0])), (0, 0)))
            ),
            [mask],
        ),
        (
            "unique-size",
            lambda ns, x: ns.np_.unique(x, size=5, fill_value=-1),
            lambda x: np.array([0, 1, 3, 7, -1], np.int32),
            [flat],
        ),
        (
            "unique-counts",
            lambda ns, x: ns.np_.unique(x, return_counts=True, size=4),
            lambda x: (np.array([0, 1, 3, 7], np.int32), np.array([1, 2, 3, 1], np.int32)),
            [flat],
        ),
        (
            "unique-inverse",
            lambda ns, x: ns.np_.unique(x, return_inverse=True, size=4)[1],
            lambda x: _int32(np.unique(x, return_inverse=True)[1]),
            [flat],
        ),
        (
            "isin",
            lambda ns, x: ns.np_.isin(x, ns.np_.array([1, 7])),
            lambda x: np.isin(x, [1, 7]),
            [flat],
        ),
        (
            "setdiff1d",
            lambda ns, x: ns.np_.setdiff1d(x, ns.np_.array([1, 9]), size=3),
            lambda x: np.array([0, 3, 7], np.int32),
            [flat],
        ),
        (
            "intersect1d",
            lambda ns, x: ns.np_.intersect1d(x, ns.np_.array([1, 9, 7]), size=2),
            lambda x: np.array([1, 7], np.int32),
            [flat],
        ),
        (
            "union1d",
            lambda ns, x: ns.np_.union1d(x, ns.np_.array([9, -1]), size=6),
            lambda x: np.array([-1, 0, 1, 3, 7, 9], np.int32),
            [flat],
        ),
        (
            "unravel_index",
            lambda ns, x: ns.np_.unravel_index(x, (3, 4)),
            lambda x: tuple(_int32(i) for i in np.unravel_index(x, (3, 4))),
            [np.array([0, 5, 11], np.int32)],
        ),
        (
            "count_nonzero",
            lambda ns, x: ns.np_.count_nonzero(x, 0),
            lambda x: _int32(np.count_nonzero(x, 0)),
            [ints],
        ),
        ("ptp", lambda ns, x: ns.np_.ptp(x, 1), lambda x: np.ptp(x, 1), [ints]),
        (
            "select",
            lambda ns, x: ns.np_.select([x < 0, x > 2], [x, -x], 9),
            lambda x: np.select([x < 0, x > 2], [x, -x], 9).astype(np.int32),
            [ints],
        ),
        (
            "at-set",
            lambda ns, x: ns.np_.asarray(x).at[1, ::2].set(0),
            lambda x: _set(x, (1, slice(None, None, 2)), 0),
            [ints],
        ),
        (
            "at-add-repeated",
            lambda ns, x: ns.np_.asarray(x).at[ns.np_.array([0, 0, 2, 9])].add(1),
            lambda x: _add_at(x, [0, 0, 2], 1),
            [flat],
        ),
        (
            "at-max",
            lambda ns, x: ns.np_.asarray(x).at[ns.np_.array([0, 1])].max(5),
            lambda x: np.concatenate([np.maximum(x[:2], 5), x[2:]]),
            [flat],
        ),
        (
            "at-get-fill",
            lambda ns, x: (
                ns.np_.asarray(x).at[ns.np_.array([1, 9])].get(mode="fill", fill_value=-7)
            ),
            lambda x: np.array([x[1], -7], np.int32),
            [flat],
        ),
    ]
    for label, fn, oracle, args in table:
        yield fn_case(f"np.surface/{label}", fn, args, oracle=oracle, tags=["numpy", "surface"])


def _set(x: np.ndarray, index: Any, value: Any) -> np.ndarray:
    out = x.copy()
    out[index] = value
    return out


def _add_at(x: np.ndarray, index: list[int], value: Any) -> np.ndarray:
    out = x.copy()
    np.add.at(out, index, value)
    return out


def _agree_cases() -> Iterator[Case]:
    rng = rng_for("np.surface/agree")
    x = rng.standard_normal((3, 4)).astype(np.float32)
    with_nan = x.copy()
    with_nan[0, 1] = np.nan
    a = rng.standard_normal((4, 4)).astype(np.float32)
    spd = (a @ a.T + 4 * np.eye(4)).astype(np.float32)
    # complex, with no ties between lu's pivot candidates (|re| + |im|, as LAPACK's)
    ca = (a + 1j * np.vstack([x, 0.5 * x[:1]])).astype(np.complex64)
    herm = (ca @ ca.conj().T + 4 * np.eye(4)).astype(np.complex64)
    table = [
        ("scalar-types", lambda ns, x: (ns.np_.float32(3), ns.np_.int32(x), ns.np_.uint8(7)), [x]),
        ("constants", lambda ns, x: x * ns.np_.pi + ns.np_.e + ns.np_.euler_gamma, [x]),
        (
            "hypot-logaddexp",
            lambda ns, x: (ns.np_.hypot(x, 2.0), ns.np_.logaddexp(x, x.T[0])),
            [x[:, :3]],
        ),
        ("var-std", lambda ns, x: (ns.np_.var(x, 0), ns.np_.std(x, 1, ddof=1)), [x]),
        ("quantile", lambda ns, x: ns.np_.quantile(x, ns.np_.array([0.1, 0.5]), axis=1), [x]),
        ("median", lambda ns, x: ns.np_.median(x, 0), [x]),
        (
            "nan-reductions",
            lambda ns, x: (
                ns.np_.nanmean(x, 1),
                ns.np_.nanmax(x),
                ns.np_.nanstd(x, 0),
                ns.np_.nanargmin(x, 1),
            ),
            [with_nan],
        ),
        ("average", lambda ns, x: ns.np_.average(x, 1, ns.np_.arange(4.0)), [x]),
        ("convolve", lambda ns, x: ns.np_.convolve(x[0], x[1, :3], "same"), [x]),
        (
            "interp",
            lambda ns, x: ns.np_.interp(
                x, ns.np_.array([-1.0, 0.0, 2.0]), ns.np_.array([0.0, 1.0, 5.0])
            ),
            [x],
        ),
        ("linalg-solve", lambda ns, a, b: ns.np_.linalg.solve(a, b), [a, x.T]),
        ("linalg-inv-det", lambda ns, a: (ns.np_.linalg.inv(a), ns.np_.linalg.det(a)), [a]),
        ("linalg-slogdet", lambda ns, a: tuple(ns.np_.linalg.slogdet(a)), [a]),
        ("linalg-cholesky", lambda ns, a: ns.np_.linalg.cholesky(a), [spd]),
        ("linalg-qr", lambda ns, a: tuple(ns.np_.linalg.qr(a)), [x.T]),
        ("linalg-eigvalsh", lambda ns, a: ns.np_.linalg.eigvalsh(a), [spd]),
        ("linalg-eigh-reconstruct", lambda ns, a: _eigh_reconstruct(ns, a), [spd]),
        ("linalg-svdvals", lambda ns, a: ns.np_.linalg.svd(a, compute_uv=False), [x]),
        ("linalg-svd-reconstruct", lambda ns, a: _svd_reconstruct(ns, a), [x]),
        ("linalg-pinv", lambda ns, a: ns.np_.linalg.pinv(a), [x]),
        (
            "linalg-norms",
            lambda ns, a: tuple(ns.np_.linalg.norm(a, o) for o in (None, 1, 2, "nuc", -2)),
            [x],
        ),
        (
            "linalg-complex-solve-lu",
            lambda ns, a, b: (
                ns.np_.linalg.solve(a, b),
                ns.lax_.linalg.lu(a),
                ns.np_.linalg.det(a),
            ),
            [ca, ca[:, :2].conj()],
        ),
        (
            "linalg-complex-cholesky-qr-eigvalsh-svdvals",
            lambda ns, h, a: (
                ns.np_.linalg.cholesky(h),
                tuple(ns.np_.linalg.qr(a[:, :3])),
                ns.np_.linalg.eigvalsh(h),
                ns.np_.linalg.svd(a, compute_uv=False),
            ),
            [herm, ca],
        ),
    ]
    for label, fn, args in table:
        for mode in ("jit", "eager"):
            name = f"np.surface/{label}" + ("/eager" if mode == "eager" else "")
            yield fn_case(
                name,
                fn,
                args,
                expect=AGREE,
                mode=mode,
                tolerance=LOOSE,
                tags=["numpy", "surface", "linalg" if "linalg" in label else "math"],
            )


def _eigh_reconstruct(ns: Any, a: Any) -> Any:
    w, v = ns.np_.linalg.eigh(a)
    return ns.np_.matmul(v * w[None, :], v.T)


def _svd_reconstruct(ns: Any, a: Any) -> Any:
    u, s, vh = ns.np_.linalg.svd(a, full_matrices=False)
    return ns.np_.matmul(u * s[None, :], vh)


def _dtype_cases() -> Iterator[Case]:
    for dtype in (F32, I32, U8, BOOL):
        name = f"np.surface/argsort-dtype/{dtype.name}"
        yield fn_case(
            name,
            lambda ns, x: ns.np_.argsort(x, axis=0),
            [sample(rng_for(name), (5, 3), dtype)],
            oracle=lambda x: np.argsort(x, axis=0, kind="stable").astype(np.int32),
            tags=["numpy", "surface"],
        )


def _at_apply_cases() -> Iterator[Case]:
    # x.at[idx].apply(f) is lax.scatter_apply: f once per occurrence of an
    # index (a repeated index applies it repeatedly), as JAX
    x = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    for label, idx, mode in (
        ("repeated", np.array([0, 0, 2]), None),
        ("out-of-range-drop", np.array([5, -1]), None),
        ("out-of-range-clip", np.array([5, -1]), "clip"),
    ):
        yield fn_case(
            f"np.surface/at-apply/{label}",
            lambda ns, x, idx=idx, mode=mode: x.at[idx].apply(ns.np_.sin, mode=mode),
            [x],
            expect=AGREE,
            tags=["numpy", "surface"],
        )


def cases() -> Iterator[Case]:
    yield from _exact_cases()
    yield from _agree_cases()
    yield from _dtype_cases()
    yield from _at_apply_cases()
