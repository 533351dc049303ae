"""The Cauchy distribution.

``pdf(x) = 1 / (pi scale (1 + z^2))`` with ``z = (x - loc) / scale``; support
the real line. ``cdf = 1/2 + arctan(z) / pi``; ``ppf(q) = loc + scale tan(pi (q - 1/2))``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import numpy as rnp
from refimpl.scipy.stats._common import promote


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("cauchy.logpdf", x, loc, scale)
    z = (x - loc) / scale
    return -(rnp.log(np.pi * scale) + rnp.log1p(z * z))


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return rnp.exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("cauchy.cdf", x, loc, scale)
    z = (x - loc) / scale
    return 0.5 + (1.0 / np.pi) * rnp.arctan(z)


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return rnp.log(cdf(x, loc, scale))


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("cauchy.sf", x, loc, scale)
    return cdf(-x, -loc, scale)


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("cauchy.logsf", x, loc, scale)
    return logcdf(-x, -loc, scale)


def isf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    q, loc, scale = promote("cauchy.isf", q, loc, scale)
    return rnp.tan(np.pi / 2 - np.pi * q) * scale + loc


def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    q, loc, scale = promote("cauchy.ppf", q, loc, scale)
    return rnp.tan(np.pi * q - np.pi / 2) * scale + loc
