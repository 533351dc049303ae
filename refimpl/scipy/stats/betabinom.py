"""The beta-binomial distribution.

``pmf(k; n, a, b) = C(n, y) B(y + a, n - y + b) / B(a, b)`` with
``y = floor(k) - loc`` in ``{0, ..., n}``; ``n >= 0``, ``a, b > 0`` (else NaN).
``C(n, y)`` is formed as ``1 / ((n + 1) B(n - y + 1, y + 1))``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import numpy as rnp
from refimpl.scipy.special import betaln
from refimpl.scipy.stats._common import lax_const, promote


def logpmf(k: Any, n: Any, a: Any, b: Any, loc: Any = 0) -> Any:
    k, n, a, b, loc = promote("betabinom.logpmf", k, n, a, b, loc)
    y = rnp.floor(k) - loc
    zero, one = lax_const(y, 0), lax_const(y, 1)
    log_comb = -(rnp.log1p(n) + betaln(n - y + one, y + one))
    log_probs = log_comb + betaln(y + a, n - y + b) - betaln(a, b)
    log_probs = rnp.where((y == zero) & (n == zero), 0.0, log_probs)
    outside = (y < -loc) | (y > n) | (y + a <= zero)
    log_probs = rnp.where(outside, -np.inf, log_probs)
    return rnp.where((n < zero) | (a <= zero) | (b <= zero), np.nan, log_probs)


def pmf(k: Any, n: Any, a: Any, b: Any, loc: Any = 0) -> Any:
    return rnp.exp(logpmf(k, n, a, b, loc))
