"""Student's t distribution with ``df`` degrees of freedom.

``pdf(x; df) = Gamma((df+1)/2) / (Gamma(df/2) sqrt(pi df) scale) (1 + z^2/df)^(-(df+1)/2)``
with ``z = (x - loc) / scale``; support the real line.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import lax
from refimpl import numpy as rnp
from refimpl.scipy.stats._common import promote


def logpdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, df, loc, scale = promote("t.logpdf", x, df, loc, scale)
    z = (x - loc) / scale
    half_df = df / 2
    half_df_plus_half = half_df + 0.5
    log_norm_const = rnp.log(scale * scale * np.pi * df) / 2
    normalizer = lax.lgamma(half_df) + log_norm_const - lax.lgamma(half_df_plus_half)
    return -(normalizer + half_df_plus_half * rnp.log1p(z * z / df))


def pdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return rnp.exp(logpdf(x, df, loc, scale))
