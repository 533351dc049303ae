"""``scipy.special``'s exponential integrals (``exp1``, ``expi``, ``expn``), ``sici``, ``fresnel``,
``owens_t``, ``bessel_jn``, ``hyp1f1``, ``wofz``,
``spence`` and ``dawsn``, values and derivatives, on grids with special values.

``AGREE`` cases judged by JAX: refimpl follows JAX's algorithms (Cephes,
Cody et al.), so the float32 results agree to a few ulps (worst measured on
these inputs: 18 ulps, pjrt's expi/exp1). Tiny positive arguments are left
out of the expn/exp1 grids: JAX evaluates every branch on every element and
its continued fraction crawls there (tests/primitives/test_special_integrals.py checks them
one at a time).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator

import numpy as np

from conformance.case import AGREE, Case, fn_case, rng_for
from conformance.compare import Tolerance


def _special(ns):
    return importlib.import_module(ns.api.__name__ + ".scipy.special")


def cases() -> Iterator[Case]:
    rng = rng_for("special_more/grid")
    real = np.concatenate(
        [rng.uniform(-12, 90, 32), [0.0, 0.5, 1, 2, 8, 64, 100, -1, np.inf, -np.inf, np.nan]]
    ).astype(np.float32)
    positive = np.concatenate(
        [rng.uniform(0.05, 80, 32), [0.0, 0.5, 1, 1.5, 2, 3, 100, np.inf, np.nan]]
    ).astype(np.float32)
    for name, x in (("expi", real), ("dawsn", real), ("exp1", positive), ("spence", positive)):
        yield fn_case(
            f"special_more.{name}/f32",
            lambda ns, v, name=name: getattr(_special(ns), name)(v),
            [x],
            expect=AGREE,
            tolerance=Tolerance(ulps=24),
        )
        grad_x = np.array([0.1, 0.5, 1.5, 3.0, 7.0, 20.0, 0.7, 1.2], np.float32)
        yield fn_case(
            f"special_more.{name}/grad",
            lambda ns, v, name=name: ns.api.vmap(ns.api.grad(getattr(_special(ns), name)))(v),
            [grad_x],
            expect=AGREE,
            # dawsn' = 1 - 2 x dawsn(x) cancels for large x: 128 ulps of -1.25e-3
            # at x = 20 (1.5e-8 absolute), hence the absolute slack
            tolerance=Tolerance(ulps=64, atol_eps=4),
            requires=("api.grad", "api.vmap"),
        )
    n = np.array([0, 1, 2, 3, 5, -1] * 6 + [6000, 1], np.float32)
    yield fn_case(
        "special_more.expn/f32",
        lambda ns, k, v: _special(ns).expn(k, v),
        [n, positive[: n.size]],
        expect=AGREE,
        tolerance=Tolerance(ulps=24),
    )
    sici_x = np.concatenate(
        [rng.uniform(-30, 30, 32), [0.0, 4, -4, 8, 2e9, np.inf, -np.inf, np.nan]]
    )
    yield fn_case(
        "special_more.sici/f32",
        lambda ns, v: _special(ns).sici(v),
        [sici_x.astype(np.float32)],
        expect=AGREE,
        # Ci = f sin x - g cos x cancels near Ci's zeros: NumPy's and XLA's
        # sin/cos (an ulp apart) give 2.4e-7 absolute there (128 ulps of 0.0237)
        tolerance=Tolerance(ulps=24, atol_eps=4),
    )
    fresnel_x = np.concatenate([rng.uniform(-12, 12, 32), [0.0, 1.6, -1.6, 4e4, np.inf, np.nan]])
    yield fn_case(
        "special_more.fresnel/f32",
        lambda ns, v: _special(ns).fresnel(v),
        [fresnel_x.astype(np.float32)],
        expect=AGREE,
        tolerance=Tolerance(ulps=24),
    )
    h = np.concatenate([rng.normal(0, 2, 32), [0, 0, 1, 1, 2, -1, np.inf, np.nan, 0.3, 5]])
    a = np.concatenate([rng.normal(0, 2, 32), [0, 1, 1, -1, 0.5, 3, 1, 0.5, np.nan, np.inf]])
    yield fn_case(
        "special_more.owens_t/f32",
        lambda ns, p, q: _special(ns).owens_t(p, q),
        [h.astype(np.float32), a.astype(np.float32)],
        expect=AGREE,
        # NumPy's erf/erfc vs XLA's: measured 9 ulps, 4.5e-8 absolute
        tolerance=Tolerance(ulps=24, atol_eps=2),
    )
    z = np.concatenate([rng.uniform(-20, 20, 30), [0.0, 1e-3, 1, -5, np.inf, np.nan]])
    yield fn_case(
        "special_more.bessel_jn/f32",
        lambda ns, q: _special(ns).bessel_jn(q, v=4),
        [z.astype(np.float32)],
        expect=AGREE,
        tolerance=Tolerance(ulps=24),
    )
    a = np.concatenate([rng.uniform(0.1, 5, 30), [0, 1, 2, 0, 3]]).astype(np.float32)
    b = np.concatenate([rng.uniform(0.1, 5, 30), [0, 1, 0, 2, 3]]).astype(np.float32)
    x = np.concatenate([rng.uniform(-20, 20, 25), rng.uniform(100, 120, 5), [1, 2, 3, 0.5, 150]])
    yield fn_case(
        "special_more.hyp1f1/f32",
        lambda ns, p, q, r: _special(ns).hyp1f1(p, q, r),
        [a, b, x.astype(np.float32)],
        expect=AGREE,
        tolerance=Tolerance(ulps=24),
    )
    wz = rng.normal(0, 4, 32) + 1j * rng.normal(0, 4, 32)
    wz = np.concatenate([wz, [0, 1j, -1j, 3, -3, 2 - 5j]]).astype(np.complex64)
    yield fn_case(
        "special_more.wofz/c64",
        lambda ns, q: _special(ns).wofz(q),
        [wz],
        expect=AGREE,
        tolerance=Tolerance(ulps=24),
    )
