"""The Laplace (double exponential) distribution.

``pdf(x) = e^(-|x - loc| / scale) / (2 scale)``; support the real line.
``cdf = e^z / 2`` for ``z = (x - loc) / scale <= 0``, ``1 - e^(-z) / 2`` above.
"""

from __future__ import annotations

from typing import Any

from refimpl import numpy as rnp
from refimpl.scipy.stats._common import promote


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("laplace.logpdf", x, loc, scale)
    return -(rnp.abs(x - loc) / scale + rnp.log(2 * scale))


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return rnp.exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("laplace.cdf", x, loc, scale)
    z = (x - loc) / scale
    return rnp.where(z <= 0, 0.5 * rnp.exp(z), 1 - 0.5 * rnp.exp(-z))
