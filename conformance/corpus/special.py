"""The special-function primitives of ``jax.lax`` beyond erf/lgamma/digamma:
``bessel_i0e``, ``bessel_i1e``, ``igamma``, ``igammac``, ``zeta``, ``betainc``,
and their derivatives, on random inputs with edge values mixed in.

These are ``AGREE`` cases judged by JAX: the question is what XLA computes
(its edge-value conventions included). Tolerances are in float32 ulps and
are wider than the default where the reference (the exact value, rounded)
and XLA's float32 algorithm differ by more (each stated with the measured
worst case on these inputs; docs/semantics.md 15.2.1).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from conformance.case import AGREE, Case, fn_case, rng_for
from conformance.compare import Tolerance

_EDGES = np.array([0.0, 1.0, 0.5, 2.0, 1e-3, np.inf, np.nan], np.float32)


def _pairs(name: str, n: int = 40) -> tuple[np.ndarray, np.ndarray]:
    rng = rng_for(name)
    a = rng.gamma(1.5, 2.0, n).astype(np.float32)
    x = rng.gamma(1.5, 2.0, n).astype(np.float32)
    ea, ex = np.meshgrid(_EDGES, _EDGES)
    return np.concatenate([a, ea.ravel()]), np.concatenate([x, ex.ravel()])


def cases() -> Iterator[Case]:
    rng = rng_for("special/bessel")
    x = np.concatenate([rng.normal(0, 12, 48), [0.0, -0.0, 15.0, -15.0, np.inf, -np.inf, np.nan]])
    x = x.astype(np.float32)
    # the reference's float64 series vs XLA's Chebyshev fits (i0e) and XLA's own
    # i1e: measured at most 2 and 9 ulps here (pjrt's i0e program: 6)
    for name, tol in (("bessel_i0e", 8), ("bessel_i1e", 16)):
        yield fn_case(
            f"lax.{name}/f32",
            lambda ns, v, name=name: getattr(ns.lax_, name)(v),
            [x],
            expect=AGREE,
            tolerance=Tolerance(ulps=tol),
        )
        yield fn_case(
            f"lax.{name}/grad",
            lambda ns, v, name=name: ns.api.grad(lambda w: getattr(ns.lax_, name)(w).sum())(v),
            [x[:48]],
            expect=AGREE,
            # i1e - sign(x) i0e cancels for large |x|: an ulp of i0e (~1e-8)
            # absolute, up to ~1000 ulps of the small difference
            tolerance=Tolerance(ulps=32, atol_eps=4),
            requires=("api.grad",),
        )

    # igamma/igammac: XLA forms x^a e^-x / Gamma(a) from float32 logarithms;
    # measured on these inputs: igamma 60 ulps, igammac 1e-6 absolute (67,000
    # ulps of a small value, hence the absolute slack), derivatives 62 ulps
    for name in ("igamma", "igammac"):
        a, v = _pairs(f"special/{name}")
        yield fn_case(
            f"lax.{name}/f32",
            lambda ns, p, q, name=name: getattr(ns.lax_, name)(p, q),
            [a, v],
            expect=AGREE,
            tolerance=Tolerance(ulps=128, atol_eps=16),
        )
        yield fn_case(
            f"lax.{name}/grad_x",
            lambda ns, p, q, name=name: ns.api.grad(lambda w: getattr(ns.lax_, name)(p, w).sum())(
                q
            ),
            [a[:40], v[:40]],
            expect=AGREE,
            tolerance=Tolerance(ulps=128, atol_eps=16),
            requires=("api.grad",),
        )

    q, s = _pairs("special/zeta")
    # x = q + 1 formed here: inside the program, XLA's fusion evaluates
    # zeta(q + 1, .) near x = 1 as if q + 1 were exact (1000.577 for q = 1e-3
    # where the float32 sum 1.00100005 gives 1000.531)
    yield fn_case(
        "lax.zeta/f32",
        lambda ns, p, r: ns.lax_.zeta(p, r),
        [(q + 1).astype(np.float32), s],
        expect=AGREE,
        tolerance=Tolerance(ulps=8),
    )
    yield fn_case(
        "lax.zeta/edges",
        lambda ns, p, r: ns.lax_.zeta(p, r),
        [
            np.array([1, 0.5, 2, 2, 2, -1, 2.5, 3, 0, 1, 3], np.float32),
            np.array([1, 1, 0, -1, -1.5, 1, -1.5, -2, -1, np.nan, -1.5], np.float32),
        ],
        expect=AGREE,
        # zeta(3, -1.5): XLA 0.1181022, exact 0.11810203 (24 ulps)
        tolerance=Tolerance(ulps=32),
    )

    rng = rng_for("special/betainc")
    a = rng.gamma(1.5, 3.0, 40).astype(np.float32)
    b = rng.gamma(1.5, 3.0, 40).astype(np.float32)
    v = rng.uniform(0, 1, 40).astype(np.float32)
    # XLA's float32 continued fraction: up to 4.5e-4 relative (6e-6 absolute)
    # off the exact value where the result is small
    yield fn_case(
        "lax.betainc/f32",
        lambda ns, p, r, w: ns.lax_.betainc(p, r, w),
        [a, b, v],
        expect=AGREE,
        tolerance=Tolerance(ulps=4096, atol_eps=64),
    )
