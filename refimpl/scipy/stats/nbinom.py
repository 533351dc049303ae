"""The negative binomial distribution (failures before the ``n``-th success).

``pmf(k; n, p) = Gamma(y + n) / (Gamma(n) y!) p^n (1 - p)^y`` with
``y = k - loc >= 0`` (``-inf`` log-probability below ``loc``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import numpy as rnp
from refimpl.scipy.special import gammaln, xlogy
from refimpl.scipy.stats._common import lax_const, promote


def logpmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    k, n, p, loc = promote("nbinom.logpmf", k, n, p, loc)
    one = lax_const(k, 1)
    y = k - loc
    comb = gammaln(y + n) - gammaln(n) - gammaln(y + 1)
    log_probs = comb + (xlogy(n, p) + xlogy(y, one - p))
    return rnp.where(k < loc, -np.inf, log_probs)


def pmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    return rnp.exp(logpmf(k, n, p, loc))
