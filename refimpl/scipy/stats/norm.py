"""The normal (Gaussian) distribution.

``pdf(x) = e^(-z^2 / 2) / (sqrt(2 pi) scale)`` with ``z = (x - loc) / scale``;
support the real line. ``cdf = ndtr(z)``, ``logcdf = log_ndtr(z)``,
``ppf(q) = loc + scale ndtri(q)`` (always the default float dtype, as in JAX).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import numpy as rnp
from refimpl.scipy.special import log_ndtr, ndtr, ndtri
from refimpl.scipy.stats._common import promote


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("norm.logpdf", x, loc, scale)
    variance = rnp.square(scale)
    log_normalizer = rnp.log(2 * np.pi * variance)
    quadratic = rnp.square(x - loc) / variance
    return (log_normalizer + quadratic) / -2


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return rnp.exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("norm.cdf", x, loc, scale)
    return ndtr((x - loc) / scale)


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("norm.logcdf", x, loc, scale)
    return log_ndtr((x - loc) / scale)


def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return rnp.asarray(ndtri(q) * scale + loc, float)


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("norm.logsf", x, loc, scale)
    return logcdf(-x, -loc, scale)


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("norm.sf", x, loc, scale)
    return cdf(-x, -loc, scale)


def isf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return ppf(1 - rnp.asarray(q), loc, scale)
