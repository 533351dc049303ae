"""The normal distribution truncated to ``[a, b]`` (in standardized units).

``pdf(x; a, b) = phi(z) / (scale (Phi(b) - Phi(a)))`` for ``z = (x - loc) / scale``
in ``[a, b]`` (``-inf`` log-density outside; NaN where ``a >= b``). The
log of the mass ``Phi(b) - Phi(a)`` is taken from the tail it lies in
(``log_ndtr`` differences) or, for an interval around 0, from
``log1p(-Phi(a) - Phi(-b))``. ``logcdf`` switches to ``log1p(-sf)`` where the
cdf is near 1.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import numpy as rnp
from refimpl.scipy.special import log_ndtr, logsumexp, ndtr
from refimpl.scipy.stats import norm
from refimpl.scipy.stats._common import promote


def _log_diff(x: Any, y: Any) -> Any:
    """``log(exp(x) - exp(y))``."""
    signs = rnp.array([rnp.ones_like(x), -rnp.ones_like(y)])
    return logsumexp(rnp.array([x, y]), b=signs, axis=0)


def _log_gauss_mass(a: Any, b: Any) -> Any:
    """``log(Phi(b) - Phi(a))`` for ``a <= b``."""
    a, b = rnp.broadcast_arrays(rnp.asarray(a), rnp.asarray(b))
    left = b <= 0
    right = a > 0
    central = ~(left | right)
    a_tail = rnp.where(right, -b, a)
    b_tail = rnp.where(right, -a, b)
    mass_tail = _log_diff(log_ndtr(b_tail), log_ndtr(a_tail))
    mass_central = rnp.log1p(-ndtr(a) - ndtr(-b))
    return rnp.where(central, mass_central, mass_tail)


def logpdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, a, b, loc, scale = promote("truncnorm.logpdf", x, a, b, loc, scale)
    value = norm.logpdf(x, loc, scale) - _log_gauss_mass(a, b)
    z = (x - loc) / scale
    value = rnp.where((z < a) | (z > b), -np.inf, value)
    return rnp.where(a >= b, np.nan, value)


def pdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return rnp.exp(logpdf(x, a, b, loc, scale))


def logsf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, a, b, loc, scale = promote("truncnorm.logsf", x, a, b, loc, scale)
    return logcdf(-x, -b, -a, -loc, scale)


def sf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return rnp.exp(logsf(x, a, b, loc, scale))


def logcdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, a, b, loc, scale = promote("truncnorm.logcdf", x, a, b, loc, scale)
    x, a, b = rnp.broadcast_arrays(x, a, b)
    z = (x - loc) / scale
    log_mass = _log_gauss_mass(a, b)
    log_cdf = _log_gauss_mass(a, z) - log_mass
    log_sf = _log_gauss_mass(z, b) - log_mass
    log_cdf = rnp.select(
        [z >= b, z <= a, log_cdf > -0.1, z > a],
        [rnp.zeros_like(z), rnp.full_like(z, -np.inf), rnp.log1p(-rnp.exp(log_sf)), log_cdf],
    )
    return rnp.where(a >= b, np.nan, log_cdf)


def cdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return rnp.exp(logcdf(x, a, b, loc, scale))
