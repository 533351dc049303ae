"""The beta distribution.

``pdf(x; a, b) = y^(a-1) (1-y)^(b-1) / (B(a, b) scale)`` with
``y = (x - loc) / scale`` in ``[0, 1]``; ``a, b, scale > 0`` (else NaN).
``logpdf`` is ``-inf`` outside the support; ``cdf``/``sf`` are the regularized
incomplete beta function of ``y`` clipped to ``[0, 1]``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import lax
from refimpl import numpy as rnp
from refimpl.scipy.special import betainc, betaln, xlog1py, xlogy
from refimpl.scipy.stats._common import const, promote


def logpdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, a, b, loc, scale = promote("beta.logpdf", x, a, b, loc, scale)
    y = (x - loc) / scale
    log_linear = xlogy(a - 1, y) + xlog1py(b - 1, -y)
    log_probs = -betaln(a, b) + log_linear - rnp.log(scale)
    out = rnp.where((x > loc + scale) | (x < loc), -np.inf, log_probs)
    return rnp.where((a <= 0) | (b <= 0) | (scale <= 0), np.nan, out)


def pdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return rnp.exp(logpdf(x, a, b, loc, scale))


def _clipped(x: Any, loc: Any, scale: Any) -> Any:
    return lax.clamp(const(x, 0), (x - loc) / scale, const(x, 1))


def cdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, a, b, loc, scale = promote("beta.cdf", x, a, b, loc, scale)
    return betainc(a, b, _clipped(x, loc, scale))


def logcdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return rnp.log(cdf(x, a, b, loc, scale))


def sf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, a, b, loc, scale = promote("beta.sf", x, a, b, loc, scale)
    return betainc(b, a, 1 - _clipped(x, loc, scale))


def logsf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return rnp.log(sf(x, a, b, loc, scale))
