"""The uniform distribution on ``[loc, loc + scale]``.

``pdf(x) = 1 / scale`` on the interval (``-inf`` log-density outside);
``cdf = (x - loc) / scale`` clipped to ``[0, 1]``; ``ppf(q) = loc + scale q``
(NaN for ``q`` outside ``[0, 1]``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import numpy as rnp
from refimpl.scipy.stats._common import promote


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("uniform.logpdf", x, loc, scale)
    return rnp.where((x > loc + scale) | (x < loc), -np.inf, -rnp.log(scale))


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return rnp.exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("uniform.cdf", x, loc, scale)
    zero, one = rnp.array(0, x.dtype), rnp.array(1, x.dtype)
    conds = [x < loc, x > loc + scale, (x >= loc) & (x <= loc + scale)]
    return rnp.select(conds, [zero, one, (x - loc) / scale])


def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    q, loc, scale = promote("uniform.ppf", q, loc, scale)
    return rnp.where(rnp.isnan(q) | (q < 0) | (q > 1), np.nan, loc + scale * q)
