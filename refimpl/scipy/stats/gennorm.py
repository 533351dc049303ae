"""The generalized normal distribution with shape ``beta``.

``pdf(x; beta) = beta e^(-|x|^beta) / (2 Gamma(1 / beta))``; support the real
line (``beta = 2``: a normal with variance 1/2; ``beta = 1``: Laplace).
``cdf = (1 + sign(x) P(1/beta, |x|^beta)) / 2``.
"""

from __future__ import annotations

from typing import Any

from refimpl import lax
from refimpl import numpy as rnp
from refimpl.scipy.stats._common import promote


def logpdf(x: Any, beta: Any) -> Any:
    x, beta = promote("gennorm.logpdf", x, beta)
    return rnp.log(0.5 * beta) - lax.lgamma(1 / beta) - rnp.abs(x) ** beta


def cdf(x: Any, beta: Any) -> Any:
    x, beta = promote("gennorm.cdf", x, beta)
    return 0.5 * (1 + rnp.sign(x) * lax.igamma(1 / beta, rnp.abs(x) ** beta))


def pdf(x: Any, beta: Any) -> Any:
    return rnp.exp(logpdf(x, beta))
