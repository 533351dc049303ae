"""``scipy.stats``: every distribution's functions, jitted, on random points
with out-of-support points, boundaries and NaN mixed in; derivatives and
``vmap`` of a few; ``mode``, ``rankdata`` and ``sem``.

``AGREE`` cases judged by JAX: refimpl's distributions are JAX's formulas
written with ``refimpl.numpy``/``refimpl.scipy.special``, so they agree to a
few ulps, except through the special functions (incomplete gamma/beta,
``log_ndtr``), where the reference's float32 results and XLA's differ more
(tolerances stated per case, each above the worst measured on these inputs).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator

import numpy as np

from conformance.case import AGREE, Case, fn_case, rng_for
from conformance.compare import Tolerance

N = 16


def _stats(ns):
    return importlib.import_module(ns.api.__name__ + ".scipy.stats")


def _with_edges(columns, edges):
    rows = np.array(edges, np.float64).T
    return [np.concatenate([c, e]).astype(np.float32) for c, e in zip(columns, rows, strict=True)]


def _apply(module, fns, args):
    return {fn: getattr(module, fn)(*args) for fn in fns}


# (distribution, functions, argument draws, edge rows, tolerance in ulps, absolute slack in eps)
_LS_EDGES = [(np.inf, 0, 1), (-np.inf, 0, 1), (np.nan, 0, 1), (0, 0, 1), (1, 0, -1), (1, 0, 0)]


def _table(rng):
    x, loc, scale = rng.normal(0, 3, N), rng.normal(0, 1, N), rng.uniform(0.3, 3, N)
    q = rng.uniform(0.01, 0.99, N)
    ls = [x, loc, scale]
    pos = rng.uniform(-1, 10, N)
    shape = rng.uniform(0.3, 6, N)
    unit = rng.uniform(-0.2, 1.2, N)
    counts = rng.integers(0, 10, N).astype(np.float64)
    trials = rng.integers(0, 10, N).astype(np.float64)
    prob = rng.uniform(0.05, 0.95, N)
    a = rng.normal(-1, 1, N)
    return [
        ("norm", ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"], ls, _LS_EDGES, 8, 1),
        ("norm", ["ppf", "isf"], [q, loc, scale], [(0, 0, 1), (1, 0, 1), (np.nan, 0, 1)], 8, 1),
        ("cauchy", ["logpdf", "pdf", "cdf", "sf", "ppf", "isf"], [q, loc, scale], [], 8, 1),
        ("laplace", ["logpdf", "pdf", "cdf"], ls, _LS_EDGES, 8, 1),
        ("logistic", ["logpdf", "pdf", "cdf", "sf"], ls, _LS_EDGES, 8, 1),
        ("expon", ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"], ls, _LS_EDGES, 8, 1),
        ("uniform", ["logpdf", "pdf", "cdf"], ls, _LS_EDGES + [(1, 0, 1), (0, 0, 1)], 8, 1),
        ("gumbel_l", ["logpdf", "cdf", "logcdf", "sf", "logsf"], ls, _LS_EDGES[2:], 16, 2),
        ("gumbel_r", ["logpdf", "cdf", "logcdf", "sf", "logsf"], ls, _LS_EDGES[2:], 16, 2),
        ("gamma", ["logpdf", "cdf", "sf"], [pos, shape, loc * 0.3, scale],
         [(0, 1, 0, 1), (0, 2, 0, 1), (-1, 2, 0, 1), (1, -1, 0, 1)], 256, 16),
        ("chi2", ["logpdf", "cdf", "sf"], [pos, shape, loc * 0.3, scale],
         [(0, 2, 0, 1), (-1, 2, 0, 1)], 256, 16),
        ("beta", ["logpdf", "cdf", "sf"], [unit, shape, shape[::-1], loc * 0.05, scale * 0 + 1],
         [(0, 1, 1, 0, 1), (0.5, -1, 2, 0, 1), (1.1, 2, 2, 0, 1)], 4096, 64),
        # lgamma(df/2) - lgamma((df+1)/2) cancels: ref (float64 lgamma, rounded) and
        # XLA (float32 Lanczos) differ by 1e-6 absolute at a result of -0.106
        ("t", ["logpdf", "pdf"], [x, shape, loc, scale], [(0, 1, 0, 1), (np.nan, 3, 0, 1)], 16, 16),
        ("pareto", ["logpdf", "cdf", "logsf", "ppf"], [pos, shape, loc * 0.3, scale],
         [(1, 2, 0, 1), (0.5, 2, 0, 1)], 16, 2),
        ("gennorm", ["logpdf", "cdf"], [x, shape], [(0, 2), (np.inf, 2), (1, -1)], 256, 16),
        ("truncnorm", ["logpdf", "cdf", "logsf"], [x, a, a + shape, loc, scale],
         [(0, 5, 8, 0, 1), (0, 1, 0.5, 0, 1), (0, -np.inf, np.inf, 0, 1)], 64, 16),
        ("vonmises", ["logpdf", "pdf"], [x, shape], [(0, 0), (0, 100)], 16, 2),
        ("wrapcauchy", ["logpdf"], [pos, prob], [(1, 0), (-0.1, 0.5), (7, 0.5)], 16, 2),
        ("bernoulli", ["logpmf", "pmf"], [np.minimum(counts, 2), prob, counts * 0],
         [(0, 0, 0), (1, 1, 0), (-1, 0.5, 0)], 8, 1),
        ("binom", ["logpmf", "pmf"], [counts, trials, prob, counts * 0],
         [(0, 0, 0.5, 0), (5, 5, 1, 0), (6, 5, 0.5, 0)], 64, 4),
        ("betabinom", ["logpmf"], [counts, trials, shape, shape[::-1], counts * 0],
         [(0, 0, 1, 1, 0), (1, -1, 1, 1, 0)], 64, 4),
        ("nbinom", ["logpmf"], [counts, shape, prob, counts * 0], [(-1, 1, 0.5, 0)], 64, 4),
        ("geom", ["logpmf"], [counts, prob, counts * 0], [(0, 0.5, 0), (3, 1, 0)], 16, 2),
        ("poisson", ["logpmf", "cdf"], [counts, shape, counts * 0],
         [(0, 0, 0), (2.5, 3, 0), (-1, 3, 0)], 256, 16),
    ]  # fmt: skip


def cases() -> Iterator[Case]:
    rng = rng_for("scipy_stats/table")
    for name, fns, columns, edges, ulps, atol in _table(rng):
        args = _with_edges(columns, edges) if edges else [c.astype(np.float32) for c in columns]
        label = "+".join(fns) if len(fns) <= 2 else f"{fns[0]}+{len(fns) - 1}"
        yield fn_case(
            f"scipy_stats.{name}/{label}",
            lambda ns, *a, name=name, fns=fns: _apply(getattr(_stats(ns), name), fns, a),
            args,
            expect=AGREE,
            tolerance=Tolerance(ulps=ulps, atol_eps=atol),
            tags=("quick",) if name == "norm" else (),
        )

    rng = rng_for("scipy_stats/grad")
    x, shape = rng.uniform(0.2, 5, 8).astype(np.float32), rng.uniform(0.5, 4, 8).astype(np.float32)
    for name in ("norm", "t", "gamma"):
        args = [x] if name == "norm" else [x, shape]
        yield fn_case(
            f"scipy_stats.{name}/grad_vmap",
            lambda ns, *a, name=name: ns.api.vmap(
                ns.api.grad(getattr(_stats(ns), name).logpdf, argnums=tuple(range(len(a))))
            )(*a),
            args,
            expect=AGREE,
            tolerance=Tolerance(ulps=64, atol_eps=4),
            requires=("api.grad", "api.vmap"),
        )

    rng = rng_for("scipy_stats/sample")
    ints = rng.integers(0, 4, (5, 6)).astype(np.int32)
    floats = rng.normal(size=(4, 5)).astype(np.float32)
    yield fn_case(
        "scipy_stats.mode/axis",
        lambda ns, a: tuple(_stats(ns).mode(a, axis=1)),
        [ints],
        expect=AGREE,
    )
    yield fn_case(
        "scipy_stats.rankdata/methods",
        lambda ns, a: {m: _stats(ns).rankdata(a, m) for m in ("average", "min", "max", "dense")},
        [np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3], np.float32)],
        expect=AGREE,
    )
    yield fn_case(
        "scipy_stats.sem/axis",
        lambda ns, a: (_stats(ns).sem(a), _stats(ns).sem(a, axis=None, ddof=0)),
        [floats],
        expect=AGREE,
    )
    yield fn_case(
        "scipy_stats.weak/scalars",
        lambda ns: (
            _stats(ns).norm.logpdf(0.5),
            _stats(ns).gamma.sf(1.0, 2.0),
            _stats(ns).norm.ppf(0.3),
        ),
        [],
        mode="eager",
        expect=AGREE,
    )
