"""Masked reductions over valid regions of every sign and size (issue 36).

A masked reduction fills the padding with the reduction's identity before
reducing (``-inf`` for ``max``, ``+inf`` for ``min``, 0 for sums, 1 for
products; for ``argmax``/``argmin`` a value no valid entry loses to). A rule
filling with the wrong value passes whenever the valid values happen to beat
it: a ``max`` filling with 0 is right for every region with a positive
entry. So every masked reduction here runs on four valid regions:

* ``neg``: every valid value negative (a fill of 0 wins a ``max``),
* ``pos``: every valid value positive (a fill of 0 wins a ``min``),
* ``single``: one valid (negative) element,
* ``empty``: none; the result is the identity (``-inf`` for a float ``max``,
  the dtype's minimum for an int one, 0 for ``argmax``, an empty array for a
  cumulative op),

with the padding itself holding garbage that would win if it leaked
(``+1e4`` for max-like reductions, ``-1e4`` for min-like ones). The oracle is
NumPy on the unpadded values. refimpl only (JAX has no ``mask``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from conformance.case import Case, rng_for, script_case
from conformance.compare import Tolerance
from conformance.corpus._tables import F32, I32

REQUIRES = ("mask",)
PADDED = 6
T = Tolerance(ulps=16, atol_eps=64)

# region -> (logical size, value range)
REGIONS: dict[str, tuple[int, tuple[float, float]]] = {
    "neg": (4, (-3.0, -0.5)),
    "pos": (4, (0.5, 3.0)),
    "single": (1, (-3.0, -0.5)),
    "empty": (0, (-3.0, -0.5)),
}


@dataclass(frozen=True)
class Reduction:
    label: str
    fun: Callable[..., Any]  # fun(ns, x) on the padded (PADDED,) or (2, PADDED) array
    oracle: Callable[[np.ndarray], Any]  # on the unpadded array
    garbage: float  # what the padding holds
    dtype: Any = F32
    out_spec: str = "()"
    cumulative: bool = False  # output (n,): the valid region is [:n]
    rows: bool = False  # operand (2, n), reduced along the masked axis 1
    tolerance: Tolerance | None = None


def _lse(x: np.ndarray, axis: int = -1) -> Any:
    x = np.asarray(x, np.float64)
    if x.shape[axis] == 0:
        return np.full(np.delete(x.shape, axis), -np.inf, np.float32)
    m = x.max(axis=axis, keepdims=True)
    return (np.log(np.exp(x - m).sum(axis=axis)) + m.squeeze(axis)).astype(np.float32)


def _cum(op: Callable[..., Any], reverse: bool = False) -> Callable[[np.ndarray], Any]:
    def oracle(x: np.ndarray) -> np.ndarray:
        y = x[::-1] if reverse else x
        out = op(y.astype(np.float64) if y.dtype.kind == "f" else y)
        out = out[::-1] if reverse else out
        return np.asarray(out).astype(x.dtype)

    return oracle


def _cumlogsumexp(x: np.ndarray) -> np.ndarray:
    return np.array([_lse(x[: i + 1]) for i in range(len(x))], np.float32).reshape(len(x))


def _arg(fn: Callable[..., Any]) -> Callable[[np.ndarray], Any]:
    return lambda x: np.int32(fn(x) if len(x) else 0)


def _special(ns: Any) -> Any:
    return ns.api.scipy.special


BIG = 1e4
REDUCTIONS: list[Reduction] = [
    Reduction("sum", lambda ns, x: ns.np_.sum(x), lambda x: np.float32(x.sum()), BIG,
              tolerance=T),
    Reduction("prod", lambda ns, x: ns.np_.prod(x), lambda x: np.float32(np.prod(x)), 7.0,
              tolerance=T),
    Reduction("max", lambda ns, x: ns.np_.max(x),
              lambda x: np.float32(x.max() if len(x) else -np.inf), BIG),
    Reduction("min", lambda ns, x: ns.np_.min(x),
              lambda x: np.float32(x.min() if len(x) else np.inf), -BIG),
    Reduction("lax.reduce_max", lambda ns, x: ns.lax_.reduce_max(x, (0,)),
              lambda x: np.float32(x.max() if len(x) else -np.inf), BIG),
    Reduction("max-int", lambda ns, x: ns.np_.max(x),
              lambda x: np.int32(x.max() if len(x) else np.iinfo(np.int32).min), 1000, dtype=I32),
    Reduction("min-int", lambda ns, x: ns.np_.min(x),
              lambda x: np.int32(x.min() if len(x) else np.iinfo(np.int32).max), -1000, dtype=I32),
    Reduction("argmax", lambda ns, x: ns.np_.argmax(x), _arg(np.argmax), BIG),
    Reduction("argmin", lambda ns, x: ns.np_.argmin(x), _arg(np.argmin), -BIG),
    Reduction("argmax-int", lambda ns, x: ns.np_.argmax(x), _arg(np.argmax), 1000, dtype=I32),
    Reduction("logsumexp", lambda ns, x: _special(ns).logsumexp(x), lambda x: _lse(x), BIG,
              tolerance=T),
    Reduction("any", lambda ns, x: ns.np_.any(x > -1.0), lambda x: np.bool_((x > -1.0).any()),
              BIG),
    Reduction("all", lambda ns, x: ns.np_.all(x < -1.0), lambda x: np.bool_((x < -1.0).all()),
              BIG),
    Reduction("max-rows", lambda ns, x: ns.np_.max(x, axis=1),
              lambda x: (x.max(axis=1) if x.shape[1] else np.full(2, -np.inf)).astype(np.float32),
              BIG, out_spec="(2,)", rows=True),
    Reduction("min-rows", lambda ns, x: ns.np_.min(x, axis=1),
              lambda x: (x.min(axis=1) if x.shape[1] else np.full(2, np.inf)).astype(np.float32),
              -BIG, out_spec="(2,)", rows=True),
    Reduction("sum-rows", lambda ns, x: ns.np_.sum(x, axis=1),
              lambda x: x.sum(axis=1).astype(np.float32), BIG, out_spec="(2,)", rows=True,
              tolerance=T),
    Reduction("cumsum", lambda ns, x: ns.lax_.cumsum(x, 0), _cum(np.cumsum), BIG,
              cumulative=True, tolerance=T),
    Reduction("cumsum-reverse", lambda ns, x: ns.lax_.cumsum(x, 0, reverse=True),
              _cum(np.cumsum, True), BIG, cumulative=True, tolerance=T),
    Reduction("cumprod-reverse", lambda ns, x: ns.lax_.cumprod(x, 0, reverse=True),
              _cum(np.cumprod, True), 7.0, cumulative=True, tolerance=T),
    Reduction("cummax", lambda ns, x: ns.lax_.cummax(x, 0), _cum(np.maximum.accumulate), BIG,
              cumulative=True),
    Reduction("cummax-reverse", lambda ns, x: ns.lax_.cummax(x, 0, reverse=True),
              _cum(np.maximum.accumulate, True), BIG, cumulative=True),
    Reduction("cummin-reverse", lambda ns, x: ns.lax_.cummin(x, 0, reverse=True),
              _cum(np.minimum.accumulate, True), -BIG, cumulative=True),
    Reduction("cummax-int-reverse", lambda ns, x: ns.lax_.cummax(x, 0, reverse=True),
              _cum(np.maximum.accumulate, True), 1000, dtype=I32, cumulative=True),
    Reduction("cumlogsumexp", lambda ns, x: ns.lax_.cumlogsumexp(x, 0), _cumlogsumexp, BIG,
              cumulative=True, tolerance=T),
    Reduction("cumlogsumexp-reverse", lambda ns, x: ns.lax_.cumlogsumexp(x, 0, reverse=True),
              lambda x: _cumlogsumexp(x[::-1])[::-1], BIG, cumulative=True, tolerance=T),
]  # fmt: skip


def _inputs(r: Reduction, region: str, name: str) -> tuple[np.ndarray, np.ndarray, int]:
    """(padded input, unpadded valid values, n)."""
    n, (lo, hi) = REGIONS[region]
    rng = rng_for(name)
    shape = (2, PADDED) if r.rows else (PADDED,)
    values = rng.uniform(lo, hi, shape)
    if r.dtype == I32:
        values = np.round(values * 10)
    padded = values.astype(r.dtype)
    padded[..., n:] = r.garbage
    return padded, padded[..., :n].copy(), n


def _case(r: Reduction, region: str) -> Case:
    name = f"mask.regions/{r.label}/{region}"
    padded, valid, n = _inputs(r, region, name)
    in_spec = "(2, n)" if r.rows else "(n,)"
    out_spec = "(n,)" if r.cumulative else r.out_spec

    def script(ns: Any) -> Any:
        masked = ns.mask(lambda x: r.fun(ns, x), [in_spec], out_spec)
        out = np.asarray(ns.to_numpy(masked([ns.asarray(padded)], {"n": n})))
        return out[:n] if r.cumulative else out

    return script_case(
        name,
        script,
        expect=lambda: np.asarray(r.oracle(valid)),
        requires=REQUIRES,
        tags=["masking"] + (["quick"] if (r.label, region) == ("max", "neg") else []),
        tolerance=r.tolerance,
        notes=f"valid values {valid.tolist()}, padding {r.garbage}",
    )


# --- masked indexing: gathers, scatters and slices into a masked dim -----------------------
# (refimpl's masking rules for gather/scatter rewrite the indices to what the unpadded
# program does; each mode, each side masked)

_IDX = np.array([0, 2, 5, 1], np.int32)  # 5 is past every logical size used below


def _take_fill(x: np.ndarray, idx: np.ndarray) -> np.ndarray:
    ok = idx < len(x)
    rows = x[np.where(ok, idx, 0)]
    return np.where(ok[:, None], rows, np.nan).astype(np.float32)


def _scatter_add_drop(x: np.ndarray, idx: np.ndarray, u: np.ndarray) -> np.ndarray:
    out = x.copy()
    for i, row in zip(idx, u, strict=True):
        if 0 <= i < len(x):
            out[i] += row
    return out


def _lax_gather_clip(ns: Any, x: Any) -> Any:
    L = ns.lax_
    dn = L.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                  start_index_map=(0,))  # fmt: skip
    return L.gather(x, _IDX[:, None], dn, (1, 2), mode="clip")


def _lax_scatter_add(mode: str) -> Callable[..., Any]:
    def fn(ns: Any, x: Any, u: Any) -> Any:
        L = ns.lax_
        dn = L.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                       scatter_dims_to_operand_dims=(0,))  # fmt: skip
        return L.scatter_add(x, _IDX[:, None], u, dn, mode=mode)

    return fn


def _lax_scatter_add_masked(ns: Any, x: Any, i: Any, u: Any) -> Any:
    L = ns.lax_
    dn = L.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                   scatter_dims_to_operand_dims=(0,))  # fmt: skip
    return L.scatter_add(x, i, u, dn, mode="fill")


def _dus(x: np.ndarray, u: np.ndarray, start: int) -> np.ndarray:
    out = x.copy()
    s = min(max(start, 0), len(x) - len(u))
    out[s : s + len(u)] = u
    return out


def _indexing_rows() -> list[Any]:
    from conformance.corpus.masking import Masked, _all, _rows

    rows2 = lambda s: [(s["n"], 2)]  # noqa: E731
    return [
        Masked("indexing-take-clip", lambda ns, x: ns.np_.take(x, _IDX, axis=0, mode="clip"),
               lambda x: np.take(x, _IDX, axis=0, mode="clip"), ["(n, 2)"], "(4, 2)", rows2,
               [(6, 2)], _all, ({"n": 3}, {"n": 1})),
        Masked("indexing-take-fill", lambda ns, x: ns.np_.take(x, _IDX, axis=0, mode="fill"),
               lambda x: _take_fill(x, _IDX), ["(n, 2)"], "(4, 2)", rows2, [(6, 2)], _all,
               ({"n": 3},)),
        Masked("indexing-lax-gather-clip", _lax_gather_clip,
               lambda x: x[np.clip(_IDX, 0, len(x) - 1)], ["(n, 2)"], "(4, 2)", rows2,
               [(6, 2)], _all, ({"n": 3}, {"n": 6})),
        Masked("indexing-at-add-drop", lambda ns, x, u: x.at[_IDX].add(u, mode="drop"),
               lambda x, u: _scatter_add_drop(x, _IDX, u), ["(n, 2)", "(4, 2)"], "(n, 2)",
               lambda s: [(s["n"], 2), (4, 2)], [(6, 2), (4, 2)], _rows, ({"n": 3}, {"n": 0})),
        Masked("indexing-lax-scatter-add-clip", _lax_scatter_add("clip"),
               lambda x, u: _scatter_add_drop(x, np.clip(_IDX, 0, len(x) - 1), u),
               ["(n, 2)", "(4, 2)"], "(n, 2)", lambda s: [(s["n"], 2), (4, 2)],
               [(6, 2), (4, 2)], _rows, ({"n": 3},)),
        Masked("indexing-lax-scatter-add-drop", _lax_scatter_add("fill"),
               lambda x, u: _scatter_add_drop(x, _IDX, u),
               ["(n, 2)", "(4, 2)"], "(n, 2)", lambda s: [(s["n"], 2), (4, 2)],
               [(6, 2), (4, 2)], _rows, ({"n": 3},)),
        Masked("indexing-at-set-masked-indices",
               lambda ns, x, i: x.at[i].set(ns.np_.float32(7.0), mode="drop"),
               lambda x, i: _set_rows(x, i), ["(5,)", "(n,)"], "(5,)",
               lambda s: [(5,), (s["n"],)], [(5,), (4,)], _all, ({"n": 2},), dtype=I32),
        Masked("indexing-gather-masked-indices",
               lambda ns, x, i: ns.np_.take(x, i[:, 0], axis=0, mode="clip"),
               lambda x, i: x[np.clip(i[:, 0], 0, 4)], ["(5, 2)", "(n, 1)"], "(n, 2)",
               lambda s: [(5, 2), (s["n"], 1)], [(5, 2), (4, 1)], _rows, ({"n": 3}, {"n": 0}),
               dtype=I32),
        Masked("indexing-lax-scatter-add-masked-updates", _lax_scatter_add_masked,
               lambda x, i, u: _scatter_add_drop(x, i[:, 0], u), ["(5, 2)", "(n, 1)", "(n, 2)"],
               "(5, 2)", lambda s: [(5, 2), (s["n"], 1), (s["n"], 2)],
               [(5, 2), (4, 1), (4, 2)], _all, ({"n": 2}, {"n": 4}), dtype=I32),
        Masked("indexing-squeeze", lambda ns, x: ns.lax_.squeeze(x, (1,)), lambda x: x[:, 0],
               ["(n, 1)"], "(n,)", lambda s: [(s["n"], 1)], [(5, 1)], _rows, ({"n": 3},)),
        Masked("indexing-reshape-split", lambda ns, x: ns.np_.reshape(x, (x.shape[0], 2, 2)),
               lambda x: x.reshape(len(x), 2, 2), ["(n, 4)"], "(n, 2, 2)",
               lambda s: [(s["n"], 4)], [(5, 4)], _rows, ({"n": 2},)),
        Masked("indexing-dynamic-update-slice",
               lambda ns, x, u: ns.lax_.dynamic_update_slice(x, u, (np.int32(2),)),
               lambda x, u: _dus(x, u, 2), ["(n,)", "(2,)"], "(n,)",
               lambda s: [(s["n"],), (2,)], [(6,), (2,)], _rows, ({"n": 3}, {"n": 5})),
    ]  # fmt: skip


def _set_rows(x: np.ndarray, i: np.ndarray) -> np.ndarray:
    out = x.copy()
    out[i[(i >= 0) & (i < len(x))]] = 7
    return out


def _indexing_cases() -> Iterator[Case]:
    from conformance.corpus.masking import _mask_case

    for m in _indexing_rows():
        for sizes in m.sizes:
            yield _mask_case(m, sizes)


def cases() -> Iterator[Case]:
    for r in REDUCTIONS:
        for region in REGIONS:
            yield _case(r, region)
    yield from _indexing_cases()
    yield from _spec_cases()


# --- polynomial shape specs and the mask API's errors --------------------------------------


def _spec_rows() -> list[Any]:
    from conformance.corpus.masking import Masked

    one = lambda s: [(s["n"],)]  # noqa: E731
    return [
        Masked("spec-floordiv", lambda ns, x: x[::2], lambda x: x[::2], ["(n,)"],
               "((n + 1)//2,)", one, [(6,)], lambda s: np.s_[: (s["n"] + 1) // 2],
               ({"n": 5}, {"n": 1})),
        Masked("spec-2n", lambda ns, x: ns.np_.concatenate([x, x * 2]),
               lambda x: np.concatenate([x, x * 2]), ["(n,)"], "(2*n,)", one, [(6,)],
               lambda s: np.s_[: 2 * s["n"]], ({"n": 3},)),
        Masked("spec-pad-interior",
               lambda ns, x: ns.lax_.pad(x, np.float32(0), [(1, 2, 1)]),
               lambda x: _pad_interior(x), ["(n,)"], "(2*n + 2,)", one, [(6,)],
               lambda s: np.s_[: 2 * s["n"] + 2], ({"n": 3},)),
    ]  # fmt: skip


def _pad_interior(x: np.ndarray) -> np.ndarray:
    out = np.zeros(2 * len(x) + 2, np.float32)
    out[1 : 2 * len(x) : 2] = x
    return out


MASK_ERRORS = [
    ("spec-exponent-missing", "(n**,)", {"n": 2}, Exception, "expected an integer exponent"),
    ("spec-divisor-zero", "(n//0,)", {"n": 2}, Exception, "must be a positive"),
    ("spec-divisor-a-size", "(n//m,)", {"n": 2, "m": 1}, Exception, "must be a positive"),
    ("spec-two-names", "(n n,)", {"n": 2}, Exception, "expected ',' or '\\)'"),
    ("size-missing", "(n,)", {}, ValueError, "missing \\['n'\\]"),
    ("size-negative", "(n,)", {"n": -1}, ValueError, "must be >= 0"),
    ("size-not-an-int", "(n,)", {"n": 2.5}, TypeError, "must be an integer scalar"),
]


def _spec_cases() -> Iterator[Case]:
    from conformance.corpus.masking import _mask_case
    from conformance.observe import Raises

    for m in _spec_rows():
        for sizes in m.sizes:
            yield _mask_case(m, sizes)
    for label, spec, sizes, exc, key in MASK_ERRORS:

        def script(ns: Any, spec: str = spec, sizes: dict = sizes) -> Any:
            x = ns.asarray(np.arange(6, dtype=np.float32))
            return ns.mask(lambda v: v, [spec], "(n,)")([x], dict(sizes))

        yield script_case(f"mask/errors/{label}", script, expect=Raises(exc, key),
                          requires=REQUIRES, tags=["masking", "errors"])  # fmt: skip
