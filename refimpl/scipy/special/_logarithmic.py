"""Logistic, logarithmic and entropy functions: ``expit``, ``logit``,
``xlogy``, ``xlog1py``, ``entr``, ``rel_entr``, ``kl_div``, ``logsumexp``,
``softmax``, ``log_softmax``, ``boxcox`` and ``boxcox1p``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from refimpl import dtypes, lax
from refimpl import numpy as rnp
from refimpl.scipy.special._common import _inexact, _unary

expit = _unary("expit", lax.logistic)


def _logit(x: Any) -> Any:
    return rnp.log(rnp.divide(x, rnp.subtract(1, x)))


logit = _unary("logit", _logit)


def xlogy(x: Any, y: Any) -> Any:
    """``x * log(y)``, and 0 where ``x == 0`` (even where ``log(y)`` is infinite;
    not where ``y`` is NaN, as JAX)."""
    x, y = _inexact("xlogy", x, y)
    zero = rnp.logical_and(rnp.equal(x, 0), rnp.logical_not(rnp.isnan(y)))
    safe_y = rnp.where(zero, 1, y)
    return rnp.where(zero, 0, rnp.multiply(x, rnp.log(safe_y)))


def xlog1py(x: Any, y: Any) -> Any:
    """``x * log1p(y)``, and 0 where ``x == 0``."""
    x, y = _inexact("xlog1py", x, y)
    zero = rnp.logical_and(rnp.equal(x, 0), rnp.logical_not(rnp.isnan(y)))
    safe_y = rnp.where(zero, 0, y)
    return rnp.where(zero, 0, rnp.multiply(x, rnp.log1p(safe_y)))


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
    if where is not None:  # masked-out elements count as absent (JAX's rule)
        a = rnp.where(where, a, 0)
    if b is None:
        (a,) = _inexact("logsumexp", a)
    else:
        a, b = _inexact("logsumexp", a, b)
    if b is not None:
        shape = np.broadcast_shapes(a.shape, np.shape(b))
        a = rnp.broadcast_to(a, shape)
        b = rnp.broadcast_to(b, shape)
        a = rnp.where(rnp.not_equal(b, 0), a, -np.inf)  # a zero weight drops the term (JAX)
    dims = _axes(a.ndim, axis)
    amax = (
        rnp.max(a, axis=dims, keepdims=True, where=where, initial=-np.inf)
        if where is not None
        else rnp.max(a, axis=dims, keepdims=True)
        if a.size
        else rnp.full(tuple(1 if i in dims else d for i, d in enumerate(a.shape)), -np.inf, a.dtype)
    )
    # the shift is a constant of differentiation (JAX's stop_gradient)
    amax = lax.stop_gradient(rnp.where(rnp.isfinite(amax), amax, rnp.zeros_like(amax)))
    exp_a = rnp.exp(rnp.subtract(a, amax))
    if b is not None:
        exp_a = rnp.multiply(exp_a, b)
    sumexp = rnp.sum(exp_a, axis=dims, keepdims=keepdims, where=where)
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


# jax.nn's softmax and log_softmax live here, below refimpl.nn (which
# re-exports them): random.dirichlet needs softmax, and refimpl.nn imports
# random (its initializers)
def _reduction_axes(name: str, ndim: int, axis: int | Sequence[int] | None) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    for a in axes:
        if not -ndim <= a < max(ndim, 1):
            raise ValueError(f"{name}: axis {a} is out of bounds for rank {ndim}")
    return tuple(sorted({int(a) % max(ndim, 1) for a in axes}))


def _own_or_inexact(name: str, x: Any) -> Any:
    """An integer ``x`` as it is (JAX's softmax computes with it before any
    conversion: ``x - max(x)`` wraps; masked out, it meets ``-inf`` and becomes
    the default float), anything else inexact."""
    x = rnp.asarray(x)
    if dtypes.is_integer(x.dtype):
        return x
    (x,) = _inexact(name, x)
    return x


def _shifted(name: str, x: Any, axis: int | Sequence[int] | None) -> Any:
    """``x - max(x)`` in an inexact dtype, computed as JAX computes it: in
    ``x``'s own dtype, so that of an integer ``x`` wraps around (uint8 ``[0,
    9]`` shifts to ``[247, 0]``, int8 ``[-128, 127]`` to ``[1, 0]``) before the
    conversion to float."""
    x = _own_or_inexact(name, x)
    axes = _reduction_axes(name, x.ndim, axis)
    (shifted,) = _inexact(name, rnp.subtract(x, rnp.max(x, axis=axes, keepdims=True)))
    return shifted


def _softmax(x: Any, axis: int | Sequence[int] | None, where: Any) -> Any:
    """``jax.nn.softmax`` (``refimpl.nn`` and ``random.dirichlet`` call it)."""
    if where is None:
        unnormalized = rnp.exp(_shifted("softmax", x, axis))
        axes = _reduction_axes("softmax", unnormalized.ndim, axis)
        return rnp.divide(unnormalized, rnp.sum(unnormalized, axis=axes, keepdims=True))
    x = _own_or_inexact("softmax", x)
    axes = _reduction_axes("softmax", x.ndim, axis)
    # masked-out elements take no part and come out 0 (JAX's rule)
    x_max = rnp.max(x, axis=axes, where=where, initial=-np.inf, keepdims=True)
    unnormalized = rnp.exp(rnp.subtract(rnp.where(where, x, -np.inf), x_max))
    total = rnp.sum(unnormalized, axis=axes, where=where, keepdims=True)
    return rnp.where(where, rnp.divide(unnormalized, total), 0)


def _log_softmax(x: Any, axis: int | Sequence[int] | None, where: Any) -> Any:
    """``jax.nn.log_softmax`` (``refimpl.nn`` calls it)."""
    if where is None:
        shifted = _shifted("log_softmax", x, axis)
        axes = _reduction_axes("log_softmax", shifted.ndim, axis)
        total = rnp.sum(rnp.exp(shifted), axis=axes, keepdims=True)
        return rnp.subtract(shifted, rnp.log(total))
    x = _own_or_inexact("log_softmax", x)
    axes = _reduction_axes("log_softmax", x.ndim, axis)
    # masked-out elements take no part and come out -inf (JAX's rule)
    x_max = rnp.max(x, axis=axes, where=where, initial=-np.inf, keepdims=True)
    shifted = rnp.subtract(rnp.where(where, x, -np.inf), lax.stop_gradient(x_max))
    total = rnp.sum(rnp.exp(shifted), axis=axes, where=where, keepdims=True)
    return rnp.where(where, rnp.subtract(shifted, rnp.log(total)), -np.inf)


def softmax(x: Any, axis: Any = None) -> Any:
    """``jax.scipy.special.softmax``: ``jax.nn.softmax`` (default over all axes)."""
    return _softmax(x, axis, None)


def log_softmax(x: Any, axis: Any = None) -> Any:
    """``jax.scipy.special.log_softmax``: ``jax.nn.log_softmax`` (default over all axes)."""
    return _log_softmax(x, axis, None)


def rel_entr(p: Any, q: Any) -> Any:
    """``p log(p / q)`` for ``p, q > 0``; 0 where ``p == 0`` and ``q >= 0``; ``inf`` otherwise."""
    p, q = _inexact("rel_entr", p, q)
    both = rnp.logical_and(rnp.greater(p, 0), rnp.greater(q, 0))
    safe_p = rnp.where(both, p, 1)
    safe_q = rnp.where(both, q, 1)
    value = rnp.subtract(rnp.multiply(safe_p, rnp.log(safe_p)), xlogy(safe_p, safe_q))
    zero = rnp.logical_and(rnp.equal(p, 0), rnp.greater_equal(q, 0))
    return rnp.where(both, value, rnp.where(zero, 0, np.inf))


def kl_div(p: Any, q: Any) -> Any:
    """``rel_entr(p, q) - p + q``."""
    p, q = _inexact("kl_div", p, q)
    return rnp.add(rnp.subtract(rel_entr(p, q), p), q)


def _boxcox_of_log(log_x: Any, lmbda: Any) -> Any:
    """``expm1(lmbda log_x) / lmbda``, and ``log_x`` where ``lmbda == 0``."""
    zero = rnp.equal(lmbda, 0)
    safe = rnp.where(zero, rnp.ones_like(lmbda), lmbda)
    return rnp.where(zero, log_x, rnp.divide(rnp.expm1(rnp.multiply(safe, log_x)), safe))


def boxcox(x: Any, lmbda: Any) -> Any:
    """``(x^lmbda - 1) / lmbda`` as ``expm1(lmbda log x) / lmbda``; ``log x`` at ``lmbda == 0``."""
    x, lmbda = _inexact("boxcox", x, lmbda)
    return _boxcox_of_log(rnp.log(x), lmbda)


def boxcox1p(x: Any, lmbda: Any) -> Any:
    """``boxcox(1 + x, lmbda)`` computed with ``log1p(x)``."""
    x, lmbda = _inexact("boxcox1p", x, lmbda)
    return _boxcox_of_log(rnp.log1p(x), lmbda)


__all__ = [
    "boxcox",
    "boxcox1p",
    "entr",
    "expit",
    "kl_div",
    "log_softmax",
    "logit",
    "logsumexp",
    "rel_entr",
    "softmax",
    "xlog1py",
    "xlogy",
]
