"""``refimpl.scipy.special``: ``jax.scipy.special``'s common functions.

Each is written with ``refimpl.lax``/``refimpl.numpy`` (so it traces, and
runs on both backends); integer and bool inputs are promoted to the default
float type first, as in JAX.

* ``logsumexp(a, axis, b, keepdims, return_sign)`` ``= log sum_i b_i exp(a_i)``,
  computed as ``m + log(sum(b * exp(a - m)))`` with ``m`` the maximum of
  ``a`` (0 where that is not finite); with ``return_sign`` the pair
  ``(log|s|, sign(s))``, otherwise NaN where the sum ``s`` is negative.
* ``erf``, ``erfc``, ``erfinv``, ``gammaln`` (``log|Gamma|``), ``digamma``,
  ``polygamma(n, x)`` (the ``n``-th derivative of digamma): the ``lax`` primitives.
* ``expit(x) = 1 / (1 + exp(-x))`` and ``logit(p) = log(p / (1 - p))``.
* ``xlogy(x, y) = x * log(y)``, 0 where ``x == 0`` (NaN where ``y`` is NaN);
  ``xlog1py(x, y) = x * log1p(y)``, 0 where ``x == 0`` (NaN where ``y`` is NaN).
* ``entr(x) = -x log x`` for ``x > 0``, 0 at 0, ``-inf`` for ``x < 0``.

The functions live by family in this package's modules: ``_error_functions``,
``_gamma_functions``, ``_logarithmic`` (logistic, entropy, logsumexp, softmax),
``_bessel`` and ``_integrals`` (exponential, sine/cosine, Fresnel, Spence,
Owen's T); ``_common`` holds argument promotion and the series helpers.

Results are never weakly typed (as JAX). Every loop is a masked
``lax.while_loop`` over the whole array: an element stops changing when its
own series has converged, so the result is that of an element-wise loop.
"""

from refimpl.scipy.special import (
    _bessel,
    _error_functions,
    _gamma_functions,
    _integrals,
    _logarithmic,
)
from refimpl.scipy.special._bessel import *  # noqa: F403
from refimpl.scipy.special._error_functions import *  # noqa: F403
from refimpl.scipy.special._gamma_functions import *  # noqa: F403
from refimpl.scipy.special._integrals import *  # noqa: F403
from refimpl.scipy.special._logarithmic import *  # noqa: F403

__all__ = sorted(
    [
        *_bessel.__all__,
        *_error_functions.__all__,
        *_gamma_functions.__all__,
        *_integrals.__all__,
        *_logarithmic.__all__,
    ]
)
