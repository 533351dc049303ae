"""Branches of refimpl/primitives/special.py's NumPy references no other case
reaches (issue 36): ``digamma``, ``lgamma`` and ``polygamma`` at NaN, the
infinities and the poles, and ``erf_inv`` in float64 (Newton's refinement,
the tails and +-1). The reference backend computes these in NumPy/``math``;
pjrt runs XLA's expansions, so both are judged against JAX's recordings
(``AGREE``). ``polygamma(m, +-inf)`` follows XLA (NaN at +inf; -inf a pole),
not the mathematical limit (docs/semantics.md 15.2).

Each case's recorded source includes its row.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, script_case
from conformance.compare import Tolerance

TOL = Tolerance(ulps=16, atol_eps=64)
_F = np.float32
_D = np.array([np.nan, -np.inf, np.inf, 0.0, -2.0, 0.5, -0.5, 30.0], _F)
_Z = np.array([np.nan, 0.0, -1.0, 2.5, -0.5, np.inf, -np.inf], _F)
_M = np.array([1.0, 2.0, 3.0, 4.0, 1.0, 2.0, 3.0, np.nan, 1.5, -1.0, 1.0, 2.0], _F)
_V = np.array([np.inf, np.inf, -np.inf, -np.inf, -np.inf, 0.0, -3.0, 2.0, 2.0, 2.0, np.nan, 0.5],
              _F)  # fmt: skip
# not near +-1 inside: there JAX's float64 expansion is off by ~6e4 ulps (refimpl refines it)
_E = np.array([-1.0, -0.999, -0.3, 0.0, 0.6, 0.99, 1.0, 1.5], np.float64)

ROWS: list[tuple[str, Any, bool]] = [
    ("digamma_edges", lambda L: L.digamma(_D), False),
    ("lgamma_edges", lambda L: L.lgamma(_Z), False),
    ("polygamma_infinities_poles", lambda L: L.polygamma(_M, _V), False),
    ("erf_inv_float64", lambda L: L.erf_inv(_E), True),
]


def cases() -> Iterator[Case]:
    for name, fn, x64 in ROWS:
        case = script_case(f"special.paths/{name}", lambda ns, fn=fn: fn(ns.lax_),
                           expect=AGREE, tolerance=TOL, x64=x64)  # fmt: skip
        yield replace(case, source=f"{case.source}\n{inspect.getsource(fn).strip()}")
