"""The multinomial distribution.

``pmf(x; n, p) = n! prod_i p_i^x_i / x_i!`` over the last axis, for integer
counts ``x`` summing to ``n`` (``-inf`` log-probability otherwise). As in JAX,
the sum compared with ``n`` is the sum of *all* of ``x``, and ``x``/``n`` must
have an integer dtype (a ValueError otherwise).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import dtypes
from refimpl import numpy as rnp
from refimpl.numpy._promote import promote_args_numeric
from refimpl.scipy.special import gammaln, xlogy
from refimpl.scipy.stats._common import promote


def logpmf(x: Any, n: Any, p: Any) -> Any:
    (p,) = promote("multinomial.logpmf", p)
    x, n = (rnp.asarray(v) for v in promote_args_numeric("multinomial.logpmf", x, n))
    if not dtypes.is_integer(x.dtype):
        raise ValueError(
            f"x and n must be of integer type; got x.dtype={x.dtype}, n.dtype={n.dtype}"
        )
    x = x.astype(p.dtype)
    n = n.astype(p.dtype)
    log_probs = gammaln(n + 1) + rnp.sum(xlogy(x, p) - gammaln(x + 1), axis=-1)
    return rnp.where(rnp.equal(rnp.sum(x), n), log_probs, -np.inf)


def pmf(x: Any, n: Any, p: Any) -> Any:
    return rnp.exp(logpmf(x, n, p))
