"""The Pareto distribution with shape ``b``.

``pdf(x; b) = b / (scale y^(b + 1))`` with ``y = (x - loc) / scale >= 1``
(``-inf`` log-density below ``loc + scale``); ``sf = y^-b``,
``ppf(q) = loc + scale (1 - q)^(-1/b)`` (NaN for ``q`` outside ``[0, 1]``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import numpy as rnp
from refimpl.scipy.stats._common import promote


def logpdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, b, loc, scale = promote("pareto.logpdf", x, b, loc, scale)
    y = (x - loc) / scale
    log_probs = -(rnp.log(scale / b) + (b + 1) * rnp.log(y))
    return rnp.where(x < loc + scale, -np.inf, log_probs)


def pdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return rnp.exp(logpdf(x, b, loc, scale))


def cdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, b, loc, scale = promote("pareto.cdf", x, b, loc, scale)
    y = (x - loc) / scale
    return rnp.where(x < loc + scale, rnp.zeros_like(x), 1 - rnp.power(y, -b))


def logcdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, b, loc, scale = promote("pareto.logcdf", x, b, loc, scale)
    y = (x - loc) / scale
    return rnp.where(x < loc + scale, -np.inf, rnp.log1p(-rnp.power(y, -b)))


def logsf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, b, loc, scale = promote("pareto.logsf", x, b, loc, scale)
    y = (x - loc) / scale
    return rnp.where(x < loc + scale, rnp.zeros_like(x), -(b * rnp.log(y)))


def sf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return rnp.exp(logsf(x, b, loc, scale))


def ppf(q: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    q, b, loc, scale = promote("pareto.ppf", q, b, loc, scale)
    value = loc + scale * rnp.power(1 - q, -(1 / b))
    return rnp.where(rnp.isnan(q) | (q < 0) | (q > 1), np.nan, value)
