"""The binomial distribution.

``pmf(k; n, p) = C(n, y) p^y (1 - p)^(n - y)`` with ``y = k - loc`` in
``[0, n]`` (``-inf`` log-probability outside; ``k`` is not required to be an
integer, as in JAX); ``C`` from ``gammaln``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import numpy as rnp
from refimpl.scipy.special import gammaln, xlog1py, xlogy
from refimpl.scipy.stats._common import promote


def logpmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    k, n, p, loc = promote("binom.logpmf", k, n, p, loc)
    y = k - loc
    comb = gammaln(n + 1) - (gammaln(y + 1) + gammaln(n - y + 1))
    log_linear = xlogy(y, p) + xlog1py(n - y, -p)
    log_probs = comb + log_linear
    log_probs = rnp.where(((y == 0) & (n == 0)) | (log_linear == 0), 0.0, log_probs)
    return rnp.where((k >= loc) & (k < loc + n + 1), log_probs, -np.inf)


def pmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    return rnp.exp(logpmf(k, n, p, loc))
