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
from refimpl.scipy.stats._common import promote


def logpmf(k: Any, p: Any, loc: Any = 0) -> Any:
    k, p, loc = promote("bernoulli.logpmf", k, p, loc)
    x = k - loc
    log_probs = xlogy(x, p) + xlog1py(1 - x, -p)
    return rnp.where((x < 0) | (x > 1), -np.inf, log_probs)


def pmf(k: Any, p: Any, loc: Any = 0) -> Any:
    return rnp.exp(logpmf(k, p, loc))


def cdf(k: Any, p: Any) -> Any:
    k, p = promote("bernoulli.cdf", k, p)
    bad = rnp.isnan(k) | rnp.isnan(p) | (p < 0) | (p > 1)
    conds = [bad, k < 0, (k >= 0) & (k < 1), k >= 1]
    return rnp.select(conds, [rnp.full_like(k, np.nan), rnp.zeros_like(k), 1 - p, rnp.ones_like(k)])


def ppf(q: Any, p: Any) -> Any:
    q, p = promote("bernoulli.ppf", q, p)
    bad = rnp.isnan(q) | rnp.isnan(p) | (p < 0) | (p > 1) | (q < 0) | (q > 1)
    return rnp.where(bad, np.nan, rnp.where(q <= 1 - p, rnp.zeros_like(q), rnp.ones_like(q)))
