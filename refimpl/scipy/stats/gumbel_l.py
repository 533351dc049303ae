"""The left-skewed Gumbel (minimum extreme value) distribution.

``pdf(x) = e^(z - e^z) / scale`` with ``z = (x - loc) / scale``; support the
real line; ``scale > 0`` (else NaN). ``cdf = 1 - e^(-e^z)``, ``sf = e^(-e^z)``,
``ppf(p) = loc + scale log(-log1p(-p))`` (NaN outside ``(0, 1)``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import numpy as rnp
from refimpl.scipy.special import xlog1py, xlogy
from refimpl.scipy.stats._common import promote


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("gumbel_l.logpdf", x, loc, scale)
    z = (x - loc) / scale
    return rnp.where(scale > 0, xlogy(-1, scale) + (z - rnp.exp(z)), np.nan)


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return rnp.exp(logpdf(x, loc, scale))


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("gumbel_l.logcdf", x, loc, scale)
    z = (x - loc) / scale
    return rnp.where(scale > 0, rnp.log(-rnp.expm1(-rnp.exp(z))), np.nan)


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return rnp.exp(logcdf(x, loc, scale))


def ppf(p: Any, loc: Any = 0, scale: Any = 1) -> Any:
    p, loc, scale = promote("gumbel_l.ppf", p, loc, scale)
    ok = (p > 0) & (p < 1)
    return rnp.where(ok, loc + scale * rnp.log(xlog1py(-1, -p)), np.nan)


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return rnp.exp(logsf(x, loc, scale))


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("gumbel_l.logsf", x, loc, scale)
    z = (x - loc) / scale
    return rnp.where(scale > 0, -rnp.exp(z), np.nan)
