"""random_more (SPEC section 3 "The rest of the JAX surface"): the remaining
``jax.random`` samplers (poisson, binomial, multinomial, chisquare, t, f,
geometric, wald, maxwell, double_sided_maxwell, generalized_normal,
triangular, ball) -- the same key gives JAX's samples.

Keys are raw ``uint32[2]`` data and the distribution parameters are arrays
passed as arguments (as constants, XLA would fold what depends on them at
compile time with other code than it runs: docs/semantics.md 15.1). The
integer-valued samplers (poisson, binomial, multinomial, geometric) and
wald, triangular are compared exactly. Within ulps (docs/semantics.md,
section 14.1.1): the ones through ``gamma`` on the
reference (XLA's hardware ``rsqrt``; exact on pjrt), and maxwell and
double_sided_maxwell on both, whose three squares XLA CPU adds in an order
(and with fmas) that depends on the fusion and the shape.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, fn_case
from conformance.compare import Tolerance
from conformance.namespace import Unsupported

# the measured bounds (tests/surface/test_random_distributions.py) with some room
GAMMA = Tolerance(ulps={"float32": 64, "float16": 4, "bfloat16": 4})
# maxwell's three squares; atol for double_sided_maxwell's cancellation near loc
ROW_SUM = Tolerance(ulps={"float32": 4, "float16": 2, "bfloat16": 2}, atol_eps=64)
F32 = np.float32


def _random(ns: Any) -> Any:
    module = importlib.import_module(ns.lax_.__name__.split(".")[0])
    if not hasattr(module, "random"):
        raise Unsupported(f"{ns.name} has no random module")
    return module.random


def _key(seed: int) -> np.ndarray:
    return np.array([0, seed], np.uint32)


# name, fn(random, key, *params), params, tolerance (None: exact)
ROWS: list[tuple[str, Any, tuple, Tolerance | None]] = [
    ("poisson_knuth", lambda R, k, lam: R.poisson(k, lam, (8, 4)),
     (F32([0.5, 3.0, 9.9, 0.0]),), None),
    ("poisson_rejection", lambda R, k, lam: R.poisson(k, lam, (8, 4)),
     (F32([10.0, 30.0, 1e3, 1e6]),), None),
    ("poisson_edges_int8", lambda R, k, lam: R.poisson(k, lam, dtype=np.int8),
     (F32([0.0, 1e10, np.inf, np.nan, -1.0, 3.0, 200.0]),), None),
    ("binomial_inversion", lambda R, k, n, p: R.binomial(k, n, p, (8, 2)),
     (F32([5.0, 20.0]), F32([0.3, 0.9])), None),
    ("binomial_btrs", lambda R, k, n, p: R.binomial(k, n, p, (8, 2)),
     (F32([100.0, 1000.0]), F32([0.3, 0.6])), None),
    ("binomial_edges", lambda R, k, n, p: R.binomial(k, n, p),
     (F32([np.nan, -1, np.inf, 5, 5, 0]), F32([0.5, 0.5, 0.5, np.nan, -0.1, 0.3])), None),
    ("multinomial", lambda R, k, n, p: R.multinomial(k, n, p, shape=(4, 2, 3)),
     (F32([20.0, 500.0]), F32([[0.2, 0.3, 0.5], [0.1, 0.6, 0.3]])), None),
    ("chisquare", lambda R, k, df: R.chisquare(k, df, (6, 3)), (F32([0.5, 3.0, 10.0]),), GAMMA),
    ("t", lambda R, k, df: R.t(k, df, (6, 3)), (F32([0.5, 3.0, 10.0]),), GAMMA),
    ("f", lambda R, k, a, b: R.f(k, a, b, (6, 2)), (F32([[1.0, 3.0]] * 6), F32(5.0)), GAMMA),
    ("geometric", lambda R, k, p: R.geometric(k, p, (6, 3)), (F32([0.1, 0.5, 0.9]),), None),
    ("wald", lambda R, k, m: R.wald(k, m, (6, 3)), (F32([0.3, 1.0, 5.0]),), None),
    ("maxwell", lambda R, k: R.maxwell(k, (12,)), (), ROW_SUM),
    ("double_sided_maxwell", lambda R, k, loc, scale: R.double_sided_maxwell(k, loc, scale, (5,)),
     (F32(1.0), F32([2.0, 3.0])), ROW_SUM),
    ("generalized_normal", lambda R, k, p: R.generalized_normal(k, p, (12,)), (F32(1.5),), GAMMA),
    ("triangular", lambda R, k, a, m, b: R.triangular(k, a, m, b, (6, 2)),
     (F32(-1.0), F32([0.0, 0.5]), F32(2.0)), None),
    ("ball", lambda R, k, p: R.ball(k, 3, p, (5,)), (F32(2.0),), GAMMA),
    # mean + factor @ normal draws; eigh/svd: the factor's columns carry the
    # eigenvectors' signs (pjrt's Jacobi lowering: other signs than LAPACK's,
    # conformance/known.py)
    *[(f"multivariate_normal_{method}",
       lambda R, k, mean, cov, method=method: R.multivariate_normal(k, mean, cov, (4,),
                                                                    method=method),
       (F32([1.0, -1.0, 0.5]), F32([[2.0, 0.5, 0.1], [0.5, 1.0, 0.3], [0.1, 0.3, 1.5]])),
       Tolerance(ulps={"float32": 64}, atol_eps=64))
      for method in ("cholesky", "eigh", "svd")],
]  # fmt: skip


QUICK = {"poisson_rejection", "binomial_btrs", "wald"}


def cases() -> Iterator[Case]:
    for seed in (0, 42):
        for name, fn, params, tolerance in ROWS:
            for mode in ("jit", "eager"):
                yield fn_case(
                    f"random_more/{name}_{seed}_{mode}",
                    lambda ns, k, *p, fn=fn: fn(_random(ns), k, *p),
                    (_key(seed), *params),
                    expect=AGREE,
                    mode=mode,
                    tolerance=tolerance,
                    tags=("quick",) if (seed, mode) == (0, "jit") and name in QUICK else (),
                )
