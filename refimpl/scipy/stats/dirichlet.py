"""The Dirichlet distribution over the simplex.

``pdf(x; alpha) = prod_i x_i^(alpha_i - 1) / B(alpha)`` with
``B(alpha) = prod_i Gamma(alpha_i) / Gamma(sum_i alpha_i)``. ``alpha`` is
one-dimensional (``K`` entries); ``x`` has ``K`` or ``K - 1`` entries along its
first axis (then the last coordinate is ``1 - sum``), further axes are a batch.
``logpdf`` is ``-inf`` off the simplex (an entry ``<= 0``, or a sum more than
``1e-6`` from 1).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import lax
from refimpl import numpy as rnp
from refimpl.numpy._promote import promote_dtypes_inexact
from refimpl.scipy.special import gammaln, xlogy


def _is_simplex(x: Any) -> Any:
    return rnp.all(x > 0, axis=0) & (rnp.abs(rnp.sum(x, axis=0) - 1) < 1e-6)


def logpdf(x: Any, alpha: Any) -> Any:
    x, alpha = (rnp.asarray(v) for v in promote_dtypes_inexact("dirichlet.logpdf", x, alpha))
    if alpha.ndim != 1:
        raise ValueError(f"`alpha` must be one-dimensional; got alpha.shape={alpha.shape}")
    if x.shape[0] not in (alpha.shape[0], alpha.shape[0] - 1):
        raise ValueError(
            "`x` must have either the same number of entries as `alpha` or one entry "
            f"fewer; got x.shape={x.shape}, alpha.shape={alpha.shape}"
        )
    if x.shape[0] != alpha.shape[0]:
        x = rnp.concatenate([x, 1 - rnp.sum(x, axis=0, keepdims=True)], axis=0)
    normalizer = rnp.sum(gammaln(alpha)) - gammaln(rnp.sum(alpha))
    if x.ndim > 1:
        alpha = lax.broadcast_in_dim(alpha, alpha.shape + (1,) * (x.ndim - 1), (0,))
    log_probs = rnp.sum(xlogy(alpha - 1, x), axis=0) - normalizer
    return rnp.where(_is_simplex(x), log_probs, -np.inf)


def pdf(x: Any, alpha: Any) -> Any:
    return rnp.exp(logpdf(x, alpha))
