"""Bessel functions: ``i0``, ``i0e``, ``i1``, ``i1e`` (over the ``lax``
primitives) and ``bessel_jn`` (the ``J_0..J_v`` recurrence, as JAX).
"""

from __future__ import annotations

from typing import Any

from refimpl import lax
from refimpl import numpy as rnp
from refimpl.scipy.special._common import _const, _inexact, _strong_inexact, _unary

i0e = _unary("i0e", lax.bessel_i0e)
i1e = _unary("i1e", lax.bessel_i1e)


def i0(x: Any) -> Any:
    """The modified Bessel function ``I0(x) = exp(|x|) i0e(x)``."""
    (x,) = _inexact("i0", x)
    return rnp.multiply(rnp.exp(rnp.abs(x)), lax.bessel_i0e(x))


def i1(x: Any) -> Any:
    """The modified Bessel function ``I1(x) = exp(|x|) i1e(x)``."""
    (x,) = _inexact("i1", x)
    return rnp.multiply(rnp.exp(rnp.abs(x)), lax.bessel_i1e(x))


# --- bessel_jn ------------------------------------------------------------------------


def bessel_jn(z: Any, *, v: int, n_iter: int = 50) -> Any:
    """Bessel functions of the first kind ``J_0(z) .. J_v(z)`` of real ``z``, as an
    array of shape ``(v + 1, *z.shape)`` (Zhang and Jin's ``BJNDD``, as JAX):
    Miller's backward recurrence ``f_k = 2 (k + 1) f_(k+1) / z - f_(k+2)`` from
    ``k = n_iter`` down to 0 (``f_(n_iter+2) = 0``, ``f_(n_iter+1) = 1e-16``),
    normalized by ``J_0 + 2 J_2 + 2 J_4 + ... = 1``. ``v`` and ``n_iter`` are
    concrete integers; ``n_iter`` must grow with ``|z|`` for accuracy (50 suits
    ``|z|`` up to ~25). Differentiated through the recurrence, as JAX."""
    import operator

    try:
        v = operator.index(v)
    except TypeError:
        raise TypeError(f"bessel_jn: v must be a concrete integer, got {v!r}") from None
    try:
        n_iter = operator.index(n_iter)
    except TypeError:
        raise TypeError(f"bessel_jn: n_iter must be a concrete integer, got {n_iter!r}") from None
    (z,) = _strong_inexact("bessel_jn", z)
    f0 = rnp.zeros_like(z)
    f1 = rnp.full_like(z, 1e-16)
    total = rnp.zeros_like(z)  # f_0 + 2 (f_0 + f_2 + f_4 + ...), f_0 removed below
    values = [None] * (n_iter + 1)
    for k in range(n_iter, -1, -1):
        f = rnp.subtract(rnp.divide(rnp.multiply(_const(z, 2.0 * (k + 1.0)), f1), z), f0)
        if k % 2 == 0:
            total = rnp.add(total, rnp.multiply(2.0, f))
        values[k] = f
        f0, f1 = f1, f
    norm = rnp.subtract(total, values[0])
    return rnp.stack([rnp.divide(values[k], norm) for k in range(min(v, n_iter) + 1)])


__all__ = [
    "i0",
    "i0e",
    "i1",
    "i1e",
    "bessel_jn",
]
