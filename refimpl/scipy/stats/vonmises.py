"""The von Mises distribution (a normal on the circle) with concentration ``kappa``.

``pdf(x; kappa) = e^(kappa cos x) / (2 pi I0(kappa))``, evaluated as
``kappa (cos x - 1) - log(2 pi i0e(kappa))``; any real ``x`` (periodic);
``kappa > 0`` (else NaN).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import lax
from refimpl import numpy as rnp
from refimpl.scipy.stats._common import promote


def logpdf(x: Any, kappa: Any) -> Any:
    x, kappa = promote("vonmises.logpdf", x, kappa)
    value = kappa * (rnp.cos(x) - 1) - rnp.log(2 * np.pi * lax.bessel_i0e(kappa))
    return rnp.where(kappa > 0, value, np.nan)


def pdf(x: Any, kappa: Any) -> Any:
    return rnp.exp(logpdf(x, kappa))
