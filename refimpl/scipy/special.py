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
* ``xlogy(x, y) = x * log(y)``, 0 where ``x == 0``;
  ``xlog1py(x, y) = x * log1p(y)``, 0 where ``x == 0``.
* ``entr(x) = -x log x`` for ``x > 0``, 0 at 0, ``-inf`` for ``x < 0``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from refimpl import dtypes, lax, tracing
from refimpl import numpy as rnp

__all__ = [
    "digamma",
    "entr",
    "erf",
    "erfc",
    "erfinv",
    "expit",
    "gammaln",
    "logit",
    "logsumexp",
    "polygamma",
    "xlog1py",
    "xlogy",
]


def _inexact(name: str, *args: Any) -> list[Any]:
    """The arguments promoted together to an inexact dtype (ints -> default float)."""
    avals = [tracing.get_aval(a, name, i) for i, a in enumerate(args)]
    dtype, weak = dtypes.result_type(*[(a.dtype, a.weak_type) for a in avals])
    if not dtypes.is_inexact(dtype):
        dtype = dtypes.canonicalize_dtype(float)
    out = []
    for a, aval in zip(args, avals, strict=True):
        a = rnp.asarray(a)
        if aval.dtype != dtype or aval.weak_type != weak:
            a = lax.convert_element_type(a, dtype, weak_type=weak)
        out.append(a)
    return out


def _unary(name: str, fn):
    def apply(x: Any) -> Any:
        (x,) = _inexact(name, x)
        return fn(x)

    apply.__name__ = name
    apply.__qualname__ = name
    return apply


erf = _unary("erf", lax.erf)
erfc = _unary("erfc", lax.erfc)
erfinv = _unary("erfinv", lax.erf_inv)
gammaln = _unary("gammaln", lax.lgamma)
digamma = _unary("digamma", lax.digamma)
expit = _unary("expit", lax.logistic)


def _logit(x: Any) -> Any:
    return rnp.log(rnp.divide(x, rnp.subtract(1, x)))


logit = _unary("logit", _logit)


def xlogy(x: Any, y: Any) -> Any:
    """``x * log(y)``, and 0 where ``x == 0`` (even where ``log(y)`` is infinite)."""
    x, y = _inexact("xlogy", x, y)
    safe_y = rnp.where(rnp.equal(x, 0), 1, y)
    return rnp.where(rnp.equal(x, 0), 0, rnp.multiply(x, rnp.log(safe_y)))


def xlog1py(x: Any, y: Any) -> Any:
    """``x * log1p(y)``, and 0 where ``x == 0``."""
    x, y = _inexact("xlog1py", x, y)
    safe_y = rnp.where(rnp.equal(x, 0), 0, y)
    return rnp.where(rnp.equal(x, 0), 0, rnp.multiply(x, rnp.log1p(safe_y)))


def entr(x: Any) -> Any:
    """``-x log x`` for ``x > 0``; 0 at 0; ``-inf`` for negative ``x``."""
    (x,) = _inexact("entr", x)
    safe = rnp.where(rnp.greater(x, 0), x, 1)
    body = rnp.negative(rnp.multiply(x, rnp.log(safe)))
    return rnp.where(rnp.less(x, 0), -np.inf, rnp.where(rnp.equal(x, 0), 0, body))


def _axes(ndim: int, axis: int | Sequence[int] | None) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = []
    for a in axes:
        if not -ndim <= a < max(ndim, 1):
            raise ValueError(f"logsumexp: axis {a} is out of bounds for rank {ndim}")
        out.append(int(a) % max(ndim, 1))
    return tuple(sorted(set(out)))


def logsumexp(
    a: Any,
    axis: int | Sequence[int] | None = None,
    b: Any = None,
    keepdims: bool = False,
    return_sign: bool = False,
    where: Any = None,
) -> Any:
    """``log(sum(b * exp(a)))`` over ``axis`` (see the module docstring)."""
    if where is not None:
        raise NotImplementedError("logsumexp: the where= argument is not supported")
    if b is None:
        (a,) = _inexact("logsumexp", a)
    else:
        a, b = _inexact("logsumexp", a, b)
    if b is not None:
        shape = np.broadcast_shapes(a.shape, np.shape(b))
        a = rnp.broadcast_to(a, shape)
        b = rnp.broadcast_to(b, shape)
    dims = _axes(a.ndim, axis)
    amax = (
        rnp.max(a, axis=dims, keepdims=True)
        if a.size
        else rnp.full(tuple(1 if i in dims else d for i, d in enumerate(a.shape)), -np.inf, a.dtype)
    )
    amax = rnp.where(rnp.isfinite(amax), amax, rnp.zeros_like(amax))
    exp_a = rnp.exp(rnp.subtract(a, amax))
    if b is not None:
        exp_a = rnp.multiply(exp_a, b)
    sumexp = rnp.sum(exp_a, axis=dims, keepdims=keepdims)
    sign = rnp.sign(sumexp)
    if return_sign or not dtypes.is_complex(a.dtype):
        sumexp = rnp.abs(sumexp)
    kept_max = amax if keepdims else rnp.squeeze(amax, axis=dims)
    out = rnp.add(rnp.log(sumexp), kept_max)
    if return_sign:
        return out, sign
    if b is not None and not dtypes.is_complex(out.dtype):
        out = rnp.where(rnp.less(sign, 0), np.asarray(np.nan, out.dtype), out)
    return out


def polygamma(n: Any, x: Any) -> Any:
    """The ``n``-th derivative of ``digamma`` at ``x`` (``n`` a non-negative integer)."""
    n, x = _inexact("polygamma", n, x)
    shape = np.broadcast_shapes(np.shape(n), np.shape(x))
    if np.shape(n) != shape and np.shape(n) != ():
        n = rnp.broadcast_to(n, shape)
    if np.shape(x) != shape and np.shape(x) != ():
        x = rnp.broadcast_to(x, shape)
    return lax.polygamma(n, x)
