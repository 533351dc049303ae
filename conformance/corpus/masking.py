"""Masking (SPEC "Masking", the old jax.mask): per-rule cases and whole masked
programs. JAX has had no mask since 2021, so these run on refimpl only and
skip elsewhere.

Every case pads its inputs with garbage beyond the logical sizes, runs the
masked function, keeps the valid region of the output, and compares it with
a NumPy oracle applied to the unpadded inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from conformance.case import Case, rng_for, sample, script_case
from conformance.compare import Tolerance
from conformance.corpus._tables import F32, I32
from conformance.observe import Raises

REQUIRES = ("mask",)
Sizes = dict[str, int]


@dataclass(frozen=True)
class Masked:
    """One masked program: the function (on ns), its NumPy oracle, the specs,
    logical and padded input shapes, and how to cut the valid output."""

    label: str
    fun: Callable[..., Any]  # fun(ns, *args)
    oracle: Callable[..., Any]  # oracle(*unpadded numpy args)
    in_shapes: list[str]
    out_shape: str
    logical: Callable[[Sizes], list[tuple[int, ...]]]
    padded: list[tuple[int, ...]]
    valid: Callable[[Sizes], Any]  # index of the valid output region
    sizes: tuple[Sizes, ...] = ({"n": 3},)
    dtype: Any = F32
    tolerance: Tolerance | None = None


def _rows(s: Sizes) -> Any:
    return np.s_[: s["n"]]


def _all(s: Sizes) -> Any:
    return ()


T = Tolerance(ulps=16, atol_eps=64)

RULES: list[Masked] = [
    Masked("sin", lambda ns, x: ns.np_.sin(x), np.sin, ["(n,)"], "(n,)",
           lambda s: [(s["n"],)], [(6,)], _rows, ({"n": 3}, {"n": 6}, {"n": 0})),
    Masked("add-two-masked", lambda ns, x, y: x + y, np.add, ["(n, 2)", "(n, 2)"], "(n, 2)",
           lambda s: [(s["n"], 2), (s["n"], 2)], [(5, 2), (5, 2)], _rows),
    Masked("broadcast-scalar", lambda ns, x: x * 2.0 + 1, lambda x: x * 2 + 1, ["(n,)"], "(n,)",
           lambda s: [(s["n"],)], [(4,)], _rows),
    Masked("broadcast-row", lambda ns, x, b: x + b[None, :], lambda x, b: x + b[None, :],
           ["(n, 3)", "(3,)"], "(n, 3)", lambda s: [(s["n"], 3), (3,)], [(5, 3), (3,)], _rows),
    Masked("reshape-leading", lambda ns, x: ns.np_.reshape(x, (x.shape[0], 2, 3)),
           lambda x: x.reshape(x.shape[0], 2, 3), ["(n, 6)"], "(n, 2, 3)",
           lambda s: [(s["n"], 6)], [(4, 6)], _rows),
    Masked("transpose", lambda ns, x: x.T, lambda x: x.T, ["(n, 3)"], "(3, n)",
           lambda s: [(s["n"], 3)], [(5, 3)], lambda s: np.s_[:, : s["n"]]),
    Masked("slice-drop-first", lambda ns, x: x[1:], lambda x: x[1:], ["(n,)"], "(n-1,)",
           lambda s: [(s["n"],)], [(6,)], lambda s: np.s_[: s["n"] - 1]),
    Masked("pad", lambda ns, x: ns.np_.pad(x, (2, 1)), lambda x: np.pad(x, (2, 1)), ["(n,)"],
           "(n+3,)", lambda s: [(s["n"],)], [(5,)], lambda s: np.s_[: s["n"] + 3]),
    Masked("concatenate", lambda ns, x, y: ns.np_.concatenate([x, y]),
           lambda x, y: np.concatenate([x, y]), ["(n,)", "(m,)"], "(n+m,)",
           lambda s: [(s["n"],), (s["m"],)], [(4,), (5,)], lambda s: np.s_[: s["n"] + s["m"]],
           ({"n": 2, "m": 3}, {"n": 4, "m": 0})),
    Masked("where", lambda ns, x, y: ns.np_.where(x > 0, x, y),
           lambda x, y: np.where(x > 0, x, y), ["(n,)", "(n,)"], "(n,)",
           lambda s: [(s["n"],), (s["n"],)], [(6,), (6,)], _rows),
    Masked("dot-free-dim", lambda ns, x, w: x @ w, lambda x, w: x @ w, ["(n, 3)", "(3, 4)"],
           "(n, 4)", lambda s: [(s["n"], 3), (3, 4)], [(5, 3), (3, 4)], _rows, tolerance=T),
    Masked("dot-contracting-dim", lambda ns, x, y: x @ y, lambda x, y: x @ y,
           ["(3, n)", "(n, 2)"], "(3, 2)", lambda s: [(3, s["n"]), (s["n"], 2)],
           [(3, 6), (6, 2)], _all, ({"n": 4}, {"n": 0}), tolerance=T),
    Masked("sum", lambda ns, x: x.sum(), lambda x: np.float32(x.sum()), ["(n,)"], "()",
           lambda s: [(s["n"],)], [(7,)], _all, ({"n": 3}, {"n": 0}), tolerance=T),
    Masked("sum-axis0", lambda ns, x: x.sum(axis=0), lambda x: x.sum(axis=0), ["(n, 2)"], "(2,)",
           lambda s: [(s["n"], 2)], [(5, 2)], _all, tolerance=T),
    Masked("prod", lambda ns, x: ns.np_.prod(x), lambda x: np.float32(np.prod(x)), ["(n,)"],
           "()", lambda s: [(s["n"],)], [(6,)], _all, tolerance=T),
    Masked("max", lambda ns, x: ns.np_.max(x), lambda x: np.float32(np.max(x)), ["(n,)"], "()",
           lambda s: [(s["n"],)], [(6,)], _all),
    Masked("min-int", lambda ns, x: ns.np_.min(x), lambda x: np.int32(np.min(x)), ["(n,)"], "()",
           lambda s: [(s["n"],)], [(6,)], _all, dtype=I32),
    Masked("argmax", lambda ns, x: ns.np_.argmax(x), lambda x: np.int32(np.argmax(x)), ["(n,)"],
           "()", lambda s: [(s["n"],)], [(6,)], _all),
    Masked("any", lambda ns, x: ns.np_.any(x > 2), lambda x: np.bool_(np.any(x > 2)), ["(n,)"],
           "()", lambda s: [(s["n"],)], [(6,)], _all),
    Masked("cumsum", lambda ns, x: ns.np_.cumsum(x), lambda x: np.cumsum(x).astype(np.float32),
           ["(n,)"], "(n,)", lambda s: [(s["n"],)], [(6,)], _rows, tolerance=T),
    Masked("iota", lambda ns, x: x + ns.lax_.iota(np.float32, x.shape[0]),
           lambda x: x + np.arange(len(x), dtype=np.float32), ["(n,)"], "(n,)",
           lambda s: [(s["n"],)], [(6,)], _rows),
    Masked("dynamic_slice", lambda ns, x: ns.lax_.dynamic_slice(x, (1,), (2,)),
           lambda x: x[1:3], ["(n,)"], "(2,)", lambda s: [(s["n"],)], [(6,)], _all,
           ({"n": 4},)),
    Masked("conv1d", lambda ns, x, w: ns.lax_.conv_general_dilated(x, w, (1,), "VALID"),
           lambda x, w: _conv1d_valid(x, w), ["(1, 2, n)", "(3, 2, 2)"], "(1, 3, n-1)",
           lambda s: [(1, 2, s["n"]), (3, 2, 2)], [(1, 2, 7), (3, 2, 2)],
           lambda s: np.s_[:, :, : s["n"] - 1], tolerance=T),
    Masked("scan-masked-length",
           lambda ns, xs: ns.lax_.scan(lambda c, x: (c * 0.5 + x, c), np.float32(0), xs)[0],
           lambda xs: _scan_carry(xs), ["(n,)"], "()", lambda s: [(s["n"],)], [(6,)], _all,
           ({"n": 4}, {"n": 0}), tolerance=T),
    # reverse and cumulative ops: the padding sits at the end, where a reverse walk
    # starts, so a rule that forgets it leaks the garbage into every valid entry
    Masked("cumsum-reverse", lambda ns, x: ns.lax_.cumsum(x, 0, reverse=True),
           lambda x: np.cumsum(x[::-1])[::-1].astype(np.float32), ["(n,)"], "(n,)",
           lambda s: [(s["n"],)], [(6,)], _rows, ({"n": 4}, {"n": 1}, {"n": 0}), tolerance=T),
    Masked("cumprod-reverse", lambda ns, x: ns.lax_.cumprod(x, 0, reverse=True),
           lambda x: np.cumprod(x[::-1])[::-1].astype(np.float32), ["(n,)"], "(n,)",
           lambda s: [(s["n"],)], [(6,)], _rows, ({"n": 4},), tolerance=T),
    Masked("cummax-reverse", lambda ns, x: ns.lax_.cummax(x, 0, reverse=True),
           lambda x: np.maximum.accumulate(x[::-1])[::-1], ["(n,)"], "(n,)",
           lambda s: [(s["n"],)], [(6,)], _rows, ({"n": 4},)),
    Masked("cummin", lambda ns, x: ns.lax_.cummin(x, 0), lambda x: np.minimum.accumulate(x),
           ["(n,)"], "(n,)", lambda s: [(s["n"],)], [(6,)], _rows, ({"n": 4},)),
    Masked("cumsum-reverse-axis1", lambda ns, x: ns.lax_.cumsum(x, 1, reverse=True),
           lambda x: np.cumsum(x[:, ::-1], axis=1)[:, ::-1].astype(np.float32), ["(2, n)"],
           "(2, n)", lambda s: [(2, s["n"])], [(2, 5)], lambda s: np.s_[:, : s["n"]],
           ({"n": 3},), tolerance=T),
    Masked("np-cumsum-rows", lambda ns, x: ns.np_.cumsum(x, axis=0),
           lambda x: np.cumsum(x, axis=0).astype(np.float32), ["(n, 2)"], "(n, 2)",
           lambda s: [(s["n"], 2)], [(5, 2)], _rows, tolerance=T),
    Masked("rev", lambda ns, x: ns.lax_.rev(x, (0,)), lambda x: x[::-1], ["(n,)"], "(n,)",
           lambda s: [(s["n"],)], [(6,)], _rows, ({"n": 4}, {"n": 0})),
    Masked("flip-then-cumsum", lambda ns, x: ns.np_.cumsum(ns.np_.flip(x)),
           lambda x: np.cumsum(x[::-1]).astype(np.float32), ["(n,)"], "(n,)",
           lambda s: [(s["n"],)], [(6,)], _rows, tolerance=T),
    Masked("scan-reverse-ys",
           lambda ns, xs: ns.lax_.scan(lambda c, x: (c + x, c + x), np.float32(0), xs,
                                       reverse=True)[1],
           lambda xs: np.cumsum(xs[::-1])[::-1].astype(np.float32), ["(n,)"], "(n,)",
           lambda s: [(s["n"],)], [(6,)], _rows, ({"n": 4}, {"n": 1}), tolerance=T),
    Masked("scan-reverse-carry",
           lambda ns, xs: ns.lax_.scan(lambda c, x: (c * 0.5 + x, c), np.float32(0), xs,
                                       reverse=True)[0],
           lambda xs: _scan_carry(xs[::-1]), ["(n,)"], "()", lambda s: [(s["n"],)], [(6,)],
           _all, ({"n": 4},), tolerance=T),
    Masked("argmin", lambda ns, x: ns.np_.argmin(x), lambda x: np.int32(np.argmin(x)), ["(n,)"],
           "()", lambda s: [(s["n"],)], [(6,)], _all),
]  # fmt: skip


def _conv1d_valid(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    n = x.shape[2] - w.shape[2] + 1
    out = np.zeros((1, w.shape[0], max(n, 0)))
    for i in range(max(n, 0)):
        out[0, :, i] = np.tensordot(w, x[0, :, i : i + w.shape[2]], axes=([1, 2], [0, 1]))
    return out.astype(np.float32)


def _scan_carry(xs: np.ndarray) -> np.float32:
    c = np.float32(0)
    for x in xs:
        c = np.float32(c * np.float32(0.5) + x)
    return c


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


PROGRAMS: list[Masked] = [
    Masked(
        "program-attention",
        lambda ns, q, k, v: _attention(ns, q, k, v),
        lambda q, k, v: (_softmax(q @ k.T) @ v).astype(np.float32),
        ["(n, 4)", "(n, 4)", "(n, 3)"], "(n, 3)",
        lambda s: [(s["n"], 4), (s["n"], 4), (s["n"], 3)], [(6, 4), (6, 4), (6, 3)], _rows,
        ({"n": 2}, {"n": 5}, {"n": 6}), tolerance=Tolerance(ulps=64, atol_eps=256),
    ),
    Masked(
        "program-rnn-scan",
        lambda ns, xs, w: ns.lax_.scan(lambda h, x: (ns.np_.tanh(h @ w + x), h.sum()),
                                       ns.np_.zeros(3, np.float32), xs)[0],
        lambda xs, w: _rnn(xs, w), ["(n, 3)", "(3, 3)"], "(3,)",
        lambda s: [(s["n"], 3), (3, 3)], [(6, 3), (3, 3)], _all, ({"n": 1}, {"n": 4}),
        tolerance=Tolerance(ulps=64, atol_eps=256),
    ),
    Masked(
        "program-conv-then-sum",
        lambda ns, x, w: ns.lax_.conv_general_dilated(x, w, (1,), "VALID").sum(),
        lambda x, w: np.float32(_conv1d_valid(x, w).sum()),
        ["(1, 1, n)", "(1, 1, 3)"], "()", lambda s: [(1, 1, s["n"]), (1, 1, 3)],
        [(1, 1, 8), (1, 1, 3)], _all, ({"n": 5},), tolerance=Tolerance(ulps=64, atol_eps=256),
    ),
]  # fmt: skip


def _attention(ns: Any, q: Any, k: Any, v: Any) -> Any:
    scores = q @ k.T
    e = ns.np_.exp(scores - ns.np_.max(scores, axis=-1, keepdims=True))
    return (e / ns.np_.sum(e, axis=-1, keepdims=True)) @ v


def _rnn(xs: np.ndarray, w: np.ndarray) -> np.ndarray:
    h = np.zeros(3, np.float32)
    for x in xs:
        h = np.tanh(h @ w + x).astype(np.float32)
    return h


def _padded_inputs(m: Masked, name: str, sizes: Sizes) -> tuple[list[np.ndarray], list[Any]]:
    """(padded arrays with garbage past the logical sizes, unpadded views)."""
    rng = rng_for(name)
    padded = [sample(rng, shape, m.dtype) for shape in m.padded]
    logical = [p[tuple(slice(0, d) for d in shape)] for p, shape in
               zip(padded, m.logical(sizes), strict=True)]  # fmt: skip
    for p, shape in zip(padded, m.logical(sizes), strict=True):
        garbage = np.ones(p.shape, bool)
        garbage[tuple(slice(0, d) for d in shape)] = False
        p[garbage] = 1000 if m.dtype.kind in "iu" else np.float32(1e4)
    return padded, logical


def _mask_case(m: Masked, sizes: Sizes) -> Case:
    shown = ",".join(f"{k}={v}" for k, v in sorted(sizes.items()))
    name = f"mask/{m.label}/{shown}"
    padded, logical = _padded_inputs(m, name, sizes)

    def script(ns):
        masked = ns.mask(lambda *args: m.fun(ns, *args), m.in_shapes, m.out_shape)
        out = masked([ns.asarray(p) for p in padded], dict(sizes))
        return np.asarray(ns.to_numpy(out))[m.valid(sizes)]

    return script_case(
        name,
        script,
        expect=lambda: np.asarray(m.oracle(*logical)),
        requires=REQUIRES,
        tags=["masking"] + (["quick"] if m.label in ("sin", "sum", "program-attention") else []),
        tolerance=m.tolerance,
    )


def _trace_count_cases() -> Iterator[Case]:
    def script(ns):
        count = [0]

        def fun(x):
            count[0] += 1
            return ns.np_.cumsum(ns.np_.sin(x))

        f = ns.jit(ns.mask(fun, ["(n,)"], "(n,)"))
        x = ns.asarray(np.linspace(0, 1, 8, dtype=np.float32))
        outs = [np.asarray(ns.to_numpy(f([x], dict(n=n))))[:n] for n in range(1, 9)]
        return {"traces": count[0], "cache_size": ns.trace_count(f), "last": outs[-1]}

    yield script_case(
        "mask/jit-one-trace-for-all-sizes",
        script,
        expect=lambda: {
            "traces": 1,
            "cache_size": 1,
            "last": np.cumsum(np.sin(np.linspace(0, 1, 8))).astype(np.float32),
        },
        requires=REQUIRES,
        tags=["masking", "jit", "quick"],
    )


def _error_cases() -> Iterator[Case]:
    def bad_spec(ns):
        return ns.mask(lambda x: x, ["(n,"], "(n,)")([ns.asarray(np.ones(3, np.float32))], {"n": 2})

    yield script_case(
        "mask/errors/unparsable-spec",
        bad_spec,
        expect=Raises(Exception),
        requires=REQUIRES,
        tags=["masking", "errors"],
    )

    def too_small(ns):
        masked = ns.mask(lambda x: x, ["(n,)"], "(n,)")
        return masked([ns.asarray(np.ones(3, np.float32))], {"n": 5})

    yield script_case(
        "mask/errors/padded-smaller-than-logical",
        too_small,
        expect=Raises(Exception, r"n"),
        requires=REQUIRES,
        tags=["masking", "errors"],
    )

    def wrong_out(ns):
        masked = ns.mask(lambda x: x.sum(), ["(n,)"], "(n,)")
        return masked([ns.asarray(np.ones(3, np.float32))], {"n": 2})

    yield script_case(
        "mask/errors/out-shape-mismatch",
        wrong_out,
        expect=Raises(Exception),
        requires=REQUIRES,
        tags=["masking", "errors"],
    )

    def no_rule(ns):
        masked = ns.mask(lambda x: ns.lax_.sort(x), ["(n,)"], "(n,)")
        return masked([ns.asarray(np.ones(3, np.float32))], {"n": 2})

    yield script_case(
        "mask/errors/op-without-rule",
        no_rule,
        expect=Raises(NotImplementedError, r"sort"),
        requires=REQUIRES,
        tags=["masking", "errors"],
        notes="sort has no masking rule in SPEC's list",
    )


def cases() -> Iterator[Case]:
    for m in RULES + PROGRAMS:
        for sizes in m.sizes:
            yield _mask_case(m, sizes)
    yield from _trace_count_cases()
    yield from _error_cases()


__all__ = ["cases", "Masked"]
