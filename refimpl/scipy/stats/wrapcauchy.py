"""The wrapped Cauchy distribution on ``[0, 2 pi]`` with shape ``c``.

``pdf(x; c) = (1 - c^2) / (2 pi (1 + c^2 - 2 c cos x))``; ``-inf``
log-density outside ``[0, 2 pi]``; ``0 < c < 1`` (else NaN).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import numpy as rnp
from refimpl.scipy.stats._common import promote


def logpdf(x: Any, c: Any) -> Any:
    x, c = promote("wrapcauchy.logpdf", x, c)
    value = rnp.log(1 - c * c) - rnp.log(2 * np.pi) - rnp.log(1 + c * c - 2 * c * rnp.cos(x))
    inside = rnp.where((x >= 0) & (x <= np.pi * 2), value, -np.inf)
    return rnp.where((c > 0) & (c < 1), inside, np.nan)


def pdf(x: Any, c: Any) -> Any:
    return rnp.exp(logpdf(x, c))
