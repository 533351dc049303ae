"""The geometric distribution (number of trials up to the first success).

``pmf(k; p) = (1 - p)^(y - 1) p`` with ``y = k - loc >= 1`` (``-inf``
log-probability for ``y <= 0``; ``k`` is not required to be an integer, as in JAX).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import numpy as rnp
from refimpl.scipy.special import xlog1py
from refimpl.scipy.stats._common import lax_const, promote


def logpmf(k: Any, p: Any, loc: Any = 0) -> Any:
    k, p, loc = promote("geom.logpmf", k, p, loc)
    zero, one = lax_const(k, 0), lax_const(k, 1)
    x = k - loc
    log_probs = xlog1py(x - one, -p) + rnp.log(p)
    return rnp.where(x <= zero, -np.inf, log_probs)


def pmf(k: Any, p: Any, loc: Any = 0) -> Any:
    return rnp.exp(logpmf(k, p, loc))
