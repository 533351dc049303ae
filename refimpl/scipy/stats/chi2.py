"""The chi-squared distribution with ``df`` degrees of freedom.

``pdf(x; df) = y^(df/2 - 1) e^(-y/2) / (2^(df/2) Gamma(df/2) scale)`` with
``y = (x - loc) / scale >= 0`` (``-inf`` log-density below ``loc``);
``cdf``/``sf`` are the regularized incomplete gamma functions of ``y / 2``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import lax
from refimpl import numpy as rnp
from refimpl.scipy.special import gammainc, gammaincc
from refimpl.scipy.stats._common import const, promote


def logpdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, df, loc, scale = promote("chi2.logpdf", x, df, loc, scale)
    y = (x - loc) / scale
    half_df = df / 2
    kernel = (half_df - 1) * rnp.log(y) - y / 2
    normalizer = -(lax.lgamma(half_df) + np.log(2.0) * df / 2)
    return rnp.where(x < loc, -np.inf, normalizer - rnp.log(scale) + kernel)


def pdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return rnp.exp(logpdf(x, df, loc, scale))


def _half_y(x: Any, loc: Any, scale: Any) -> Any:
    return lax.clamp(const(x, 0), (x - loc) / (scale * 2), const(x, np.inf))


def cdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, df, loc, scale = promote("chi2.cdf", x, df, loc, scale)
    return gammainc(df / 2, _half_y(x, loc, scale))


def logcdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return rnp.log(cdf(x, df, loc, scale))


def sf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, df, loc, scale = promote("chi2.sf", x, df, loc, scale)
    return gammaincc(df / 2, _half_y(x, loc, scale))


def logsf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return rnp.log(sf(x, df, loc, scale))
