"""The Bernoulli distribution.

``pmf(k; p) = p^k (1 - p)^(1 - k)`` for ``k`` in ``{0, 1}`` (shifted by
``loc``); ``p`` in ``[0, 1]``. ``logpmf`` is ``-inf`` outside ``[0, 1]``;
``cdf``/``ppf`` are NaN for NaN or out-of-range ``p`` (and ``q``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import numpy as rnp
from refimpl.scipy.special import xlog1py, xlogy
from refimpl.scipy.stats._common import lax_const, promote


def logpmf(k: Any, p: Any, loc: Any = 0) -> Any:
    k, p, loc = promote("bernoulli.logpmf", k, p, loc)
    zero, one = lax_const(k, 0), lax_const(k, 1)
    x = k - loc
    log_probs = xlogy(x, p) + xlog1py(one - x, -p)
    return rnp.where((x < zero) | (x > one), -np.inf, log_probs)


def pmf(k: Any, p: Any, loc: Any = 0) -> Any:
    return rnp.exp(logpmf(k, p, loc))


def cdf(k: Any, p: Any) -> Any:
    k, p = promote("bernoulli.cdf", k, p)
    zero, one = lax_const(k, 0), lax_const(k, 1)
    bad = rnp.isnan(k) | rnp.isnan(p) | (p < zero) | (p > one)
    conds = [bad, k < zero, (k >= zero) & (k < one), k >= one]
    return rnp.select(conds, [np.nan, zero, one - p, one])


def ppf(q: Any, p: Any) -> Any:
    q, p = promote("bernoulli.ppf", q, p)
    zero, one = lax_const(q, 0), lax_const(q, 1)
    bad = rnp.isnan(q) | rnp.isnan(p) | (p < zero) | (p > one) | (q < zero) | (q > one)
    return rnp.where(bad, np.nan, rnp.where(q <= one - p, zero, one))
