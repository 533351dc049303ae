"""The gamma distribution with shape ``a``.

``pdf(x; a) = y^(a-1) e^(-y) / (Gamma(a) scale)`` with ``y = (x - loc) / scale >= 0``
(``-inf`` log-density below ``loc``); ``cdf``/``sf`` are the regularized
incomplete gamma functions ``P(a, y)``/``Q(a, y)`` (``sf`` is 1 below ``loc``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import lax
from refimpl import numpy as rnp
from refimpl.scipy.special import gammainc, gammaincc, gammaln, xlogy
from refimpl.scipy.stats._common import const, promote


def logpdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, a, loc, scale = promote("gamma.logpdf", x, a, loc, scale)
    ok = x >= loc
    y = rnp.where(ok, (x - loc) / scale, rnp.ones_like(x))
    log_probs = (xlogy(a - 1, y) - y) - (gammaln(a) + rnp.log(scale))
    return rnp.where(ok, log_probs, -np.inf)


def pdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return rnp.exp(logpdf(x, a, loc, scale))


def cdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, a, loc, scale = promote("gamma.cdf", x, a, loc, scale)
    return gammainc(a, lax.clamp(const(x, 0), (x - loc) / scale, const(x, np.inf)))


def logcdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return rnp.log(cdf(x, a, loc, scale))


def sf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, a, loc, scale = promote("gamma.sf", x, a, loc, scale)
    y = (x - loc) / scale
    return rnp.where(y < 0, 1, gammaincc(a, y))


def logsf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return rnp.log(sf(x, a, loc, scale))
