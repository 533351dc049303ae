"""The logistic distribution.

``pdf(x) = e^-z / (scale (1 + e^-z)^2)`` with ``z = (x - loc) / scale``,
evaluated as ``-2 logaddexp(z/2, -z/2) - log(scale)``; support the real line.
``cdf = expit(z)``, ``ppf(q) = loc + scale logit(q)``.
"""

from __future__ import annotations

from typing import Any

from refimpl import numpy as rnp
from refimpl.scipy.special import expit, logit
from refimpl.scipy.stats._common import promote


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("logistic.logpdf", x, loc, scale)
    half_z = (x - loc) / scale / 2
    return -2 * rnp.logaddexp(half_z, -half_z) - rnp.log(scale)


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return rnp.exp(logpdf(x, loc, scale))


def ppf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("logistic.ppf", x, loc, scale)
    return logit(x) * scale + loc


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("logistic.sf", x, loc, scale)
    return expit(-((x - loc) / scale))


def isf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("logistic.isf", x, loc, scale)
    return -logit(x) * scale + loc


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("logistic.cdf", x, loc, scale)
    return expit((x - loc) / scale)
