"""The Poisson distribution with mean ``mu``.

``pmf(k; mu) = mu^y e^-mu / y!`` with ``y = k - loc``, for integer ``k`` and
``y >= 0`` (``-inf`` log-probability otherwise); ``cdf = Q(floor(y + 1), mu)``
(0 for ``y < 0``). ``entropy(mu)`` sums ``-p log p`` over the first 35 (``mu < 10``)
or 250 (``mu < 100``) values, as JAX does, and uses the asymptotic
``log(2 pi e mu) / 2 - 1 / (12 mu)`` above; 0 at ``mu = 0``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import numpy as rnp
from refimpl.numpy._promote import promote_dtypes_inexact
from refimpl.numpy._shape import reshape as _reshape  # arrays, also of NumPy data
from refimpl.scipy.special import entr, gammaincc, gammaln, xlogy
from refimpl.scipy.stats._common import lax_const, promote


def logpmf(k: Any, mu: Any, loc: Any = 0) -> Any:
    k, mu, loc = promote("poisson.logpmf", k, mu, loc)
    x = k - loc
    log_probs = xlogy(x, mu) - gammaln(x + 1) - mu
    return rnp.where((x < 0) | (rnp.round(k) != k), -np.inf, log_probs)


def pmf(k: Any, mu: Any, loc: Any = 0) -> Any:
    return rnp.exp(logpmf(k, mu, loc))


def cdf(k: Any, mu: Any, loc: Any = 0) -> Any:
    k, mu, loc = promote("poisson.logpmf", k, mu, loc)
    zero = lax_const(k, 0)
    x = k - loc
    return rnp.where(x < zero, zero, gammaincc(rnp.floor(1 + x), mu))


def _summed_entropy(mu: Any, count: int, upper: Any) -> Any:
    k = rnp.arange(count, dtype=mu.dtype)[:, None]
    probs = rnp.where(k < upper[None, :], pmf(k, mu, 0), 0.0)
    return rnp.sum(entr(probs), axis=0)


def entropy(mu: Any, loc: Any = 0) -> Any:
    mu, loc = (rnp.asarray(v) for v in promote_dtypes_inexact("poisson.entropy", mu, loc))
    shape = rnp.broadcast_shapes(mu.shape, loc.shape)
    flat = rnp.ravel(mu)
    small = _summed_entropy(flat, 35, rnp.ceil(flat + 20))
    medium = _summed_entropy(flat, 250, rnp.ceil(flat + 10 * rnp.sqrt(flat) + 20))
    large = 0.5 * rnp.log(2 * np.pi * np.e * flat) - 1.0 / (12 * flat)
    result = rnp.where(flat < 100, medium, large)
    result = rnp.where(flat < 10, small, result)
    result = rnp.where(flat == 0, rnp.zeros_like(flat), result)
    return rnp.broadcast_to(_reshape(result, mu.shape), shape)
