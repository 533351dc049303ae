"""The exponential distribution.

``pdf(x) = e^(-y) / scale`` with ``y = (x - loc) / scale >= 0`` (``-inf``
log-density below ``loc``); ``sf = e^(-y)`` (1 below ``loc``),
``ppf(q) = loc - scale log1p(-q)`` (NaN for ``q`` outside ``[0, 1]``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import numpy as rnp
from refimpl.scipy.stats._common import promote


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("expon.logpdf", x, loc, scale)
    log_probs = -((x - loc) / scale + rnp.log(scale))
    return rnp.where(x < loc, -np.inf, log_probs)


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return rnp.exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("expon.cdf", x, loc, scale)
    neg_y = (loc - x) / scale
    return rnp.where(x < loc, rnp.zeros_like(neg_y), -rnp.expm1(neg_y))


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return rnp.log1p(-sf(x, loc, scale))


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("expon.sf", x, loc, scale)
    neg_y = (loc - x) / scale
    return rnp.where(x < loc, rnp.zeros_like(neg_y), neg_y)


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return rnp.exp(logsf(x, loc, scale))


def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    q, loc, scale = promote("expon.ppf", q, loc, scale)
    bad = rnp.isnan(q) | (q < 0) | (q > 1)
    return rnp.where(bad, np.nan, loc - scale * rnp.log1p(-q))
