"""``refimpl.nn``: ``jax.nn``'s activation functions and helpers.

Formulas (elementwise unless stated; inputs promoted to an inexact dtype):

* ``relu(x) = max(x, 0)``; ``relu6(x) = min(max(x, 0), 6)``
* ``sigmoid(x) = 1 / (1 + exp(-x))`` (``lax.logistic``);
  ``silu(x) = swish(x) = x * sigmoid(x)``
* ``softplus(x) = log(1 + exp(x))``, as ``logaddexp(x, 0)``;
  ``log_sigmoid(x) = -softplus(-x)``
* ``elu(x, a) = x if x > 0 else a * expm1(x)``; ``celu(x, a) = max(x, 0) +
  a * expm1(min(x, 0) / a)``; ``selu(x) = 1.0507... * elu(x, 1.6732...)``
* ``leaky_relu(x, s) = x if x >= 0 else s * x``; ``hard_tanh(x) = clip(x, -1, 1)``
* ``gelu(x, approximate=True) = x/2 * (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``;
  ``gelu(x, approximate=False) = x/2 * erfc(-x / sqrt(2))``
* ``hard_sigmoid(x) = relu6(x + 3) / 6``; ``hard_silu(x) = hard_swish(x) =
  x * hard_sigmoid(x)``; ``mish(x) = x * tanh(softplus(x))``;
  ``squareplus(x, b=4) = (x + sqrt(x^2 + b)) / 2``; ``sparse_plus(x)`` = 0 for
  ``x <= -1``, ``x`` for ``x >= 1``, ``(x + 1)^2 / 4`` between;
  ``sparse_sigmoid(x) = clip(x + 1, 0, 2) / 2``
* ``glu(x, axis) = a * sigmoid(b)`` with ``a, b`` the halves of ``x`` along ``axis``
* ``softmax(x, axis) = exp(x - max) / sum(exp(x - max))``;
  ``log_softmax(x, axis) = (x - max) - log(sum(exp(x - max)))``
* ``logsumexp``: ``refimpl.scipy.special.logsumexp``
* ``one_hot(x, n, dtype, axis)``: ``x[..., None] == arange(n)`` (out-of-range
  indices give all zeros), the class axis at ``axis``
* ``standardize(x, axis, mean, variance, epsilon=1e-5)``:
  ``(x - mean) * rsqrt(variance + epsilon)``, by default with
  ``variance = max(mean(x^2) - mean(x)^2, 0)`` (JAX's "fast" algorithm)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from refimpl import dtypes, lax
from refimpl import numpy as rnp
from refimpl.nn import initializers
from refimpl.scipy.special import _inexact, logsumexp

__all__ = [
    "celu",
    "elu",
    "gelu",
    "glu",
    "hard_sigmoid",
    "hard_silu",
    "hard_swish",
    "hard_tanh",
    "initializers",
    "leaky_relu",
    "log_sigmoid",
    "log_softmax",
    "logsumexp",
    "mish",
    "one_hot",
    "relu",
    "relu6",
    "selu",
    "sigmoid",
    "silu",
    "soft_sign",
    "softmax",
    "softplus",
    "sparse_plus",
    "sparse_sigmoid",
    "squareplus",
    "standardize",
    "swish",
]


def _with_jvp(value_fn, jvp_fn):
    from refimpl import custom_derivatives

    fn = custom_derivatives.custom_jvp(value_fn)
    fn.defjvp(jvp_fn)
    return fn


def _relu_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return rnp.maximum(x, 0), rnp.where(rnp.greater(x, 0), t, rnp.zeros_like(t))


def _relu6_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    inside = rnp.logical_and(rnp.greater(x, 0), rnp.less(x, 6.0))
    return rnp.minimum(rnp.maximum(x, 0), 6.0), rnp.where(inside, t, rnp.zeros_like(t))


# relu and relu6 have derivative 0 at their kinks (as in JAX), where
# differentiating max/min would give 1/2
relu = _with_jvp(lambda x: rnp.maximum(x, 0), _relu_jvp)
relu6 = _with_jvp(lambda x: rnp.minimum(rnp.maximum(x, 0), 6.0), _relu6_jvp)


def sigmoid(x: Any) -> Any:
    (x,) = _inexact("sigmoid", x)
    return lax.logistic(x)


def silu(x: Any) -> Any:
    (x,) = _inexact("silu", x)
    return rnp.multiply(x, lax.logistic(x))


swish = silu


def softplus(x: Any) -> Any:
    (x,) = _inexact("softplus", x)
    # rnp.logaddexp carries JAX's custom_jvp: derivative 1/2 at x == 0
    return rnp.logaddexp(x, rnp.zeros_like(x))


def log_sigmoid(x: Any) -> Any:
    (x,) = _inexact("log_sigmoid", x)
    return rnp.negative(softplus(rnp.negative(x)))


def soft_sign(x: Any) -> Any:
    (x,) = _inexact("soft_sign", x)
    return rnp.divide(x, rnp.add(rnp.abs(x), 1))


def elu(x: Any, alpha: Any = 1.0) -> Any:
    (x,) = _inexact("elu", x)
    positive = rnp.greater(x, 0)
    return rnp.where(positive, x, rnp.multiply(alpha, rnp.expm1(rnp.where(positive, 0.0, x))))


def leaky_relu(x: Any, negative_slope: Any = 1e-2) -> Any:
    (x,) = _inexact("leaky_relu", x)
    return rnp.where(rnp.greater_equal(x, 0), x, rnp.multiply(negative_slope, x))


def hard_tanh(x: Any) -> Any:
    (x,) = _inexact("hard_tanh", x)
    return rnp.where(rnp.greater(x, 1), 1, rnp.where(rnp.less(x, -1), -1, x))


def celu(x: Any, alpha: Any = 1.0) -> Any:
    (x,) = _inexact("celu", x)
    negative_part = rnp.expm1(rnp.divide(rnp.minimum(x, 0.0), alpha))
    return rnp.add(rnp.maximum(x, 0.0), rnp.multiply(alpha, negative_part))


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(x: Any) -> Any:
    return rnp.multiply(_SELU_SCALE, elu(x, _SELU_ALPHA))


def gelu(x: Any, approximate: bool = True) -> Any:
    (x,) = _inexact("gelu", x)
    dtype = x.dtype
    if approximate:
        k = np.asarray(np.sqrt(2 / np.pi), dtype)
        inner = rnp.multiply(k, rnp.add(x, rnp.multiply(0.044715, rnp.power(x, 3))))
        cdf = rnp.multiply(0.5, rnp.add(1.0, rnp.tanh(inner)))
        return rnp.multiply(x, cdf)
    sqrt_half = np.asarray(np.sqrt(0.5), dtype)
    return rnp.multiply(rnp.multiply(0.5, x), lax.erfc(rnp.multiply(rnp.negative(x), sqrt_half)))


def glu(x: Any, axis: int = -1) -> Any:
    x = rnp.asarray(x)
    size = x.shape[axis]
    if size % 2:
        raise ValueError(f"glu: the size of axis {axis} must be even, got {size}")
    first, second = rnp.split(x, 2, axis=axis)
    return rnp.multiply(first, sigmoid(second))


def _reduction_axes(name: str, ndim: int, axis: int | Sequence[int] | None) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    for a in axes:
        if not -ndim <= a < max(ndim, 1):
            raise ValueError(f"{name}: axis {a} is out of bounds for rank {ndim}")
    return tuple(sorted({int(a) % max(ndim, 1) for a in axes}))


def softmax(x: Any, axis: int | Sequence[int] | None = -1, where: Any = None) -> Any:
    if where is not None:
        raise NotImplementedError("softmax: the where= argument is not supported")
    (x,) = _inexact("softmax", x)
    axes = _reduction_axes("softmax", x.ndim, axis)
    unnormalized = rnp.exp(rnp.subtract(x, rnp.max(x, axis=axes, keepdims=True)))
    return rnp.divide(unnormalized, rnp.sum(unnormalized, axis=axes, keepdims=True))


def log_softmax(x: Any, axis: int | Sequence[int] | None = -1, where: Any = None) -> Any:
    if where is not None:
        raise NotImplementedError("log_softmax: the where= argument is not supported")
    (x,) = _inexact("log_softmax", x)
    axes = _reduction_axes("log_softmax", x.ndim, axis)
    shifted = rnp.subtract(x, rnp.max(x, axis=axes, keepdims=True))
    total = rnp.sum(rnp.exp(shifted), axis=axes, keepdims=True)
    return rnp.subtract(shifted, rnp.log(total))


def one_hot(x: Any, num_classes: int, *, dtype: Any = None, axis: int = -1) -> Any:
    if isinstance(num_classes, bool) or not isinstance(num_classes, (int, np.integer)):
        raise TypeError(f"one_hot: num_classes must be a concrete int, got {num_classes!r}")
    x = rnp.asarray(x)
    dtype = dtypes.canonicalize_dtype(float if dtype is None else dtype)
    out_ndim = x.ndim + 1
    if not -out_ndim <= axis < out_ndim:
        raise ValueError(f"one_hot: axis {axis} is out of bounds for rank {out_ndim}")
    axis %= out_ndim
    lhs = rnp.expand_dims(x, axis)
    rhs_shape = [1] * x.ndim
    rhs_shape.insert(axis, int(num_classes))
    rhs = lax.broadcasted_iota(x.dtype, tuple(rhs_shape), axis)
    return rnp.astype(rnp.equal(lhs, rhs), dtype)


def standardize(
    x: Any,
    axis: int | Sequence[int] | None = -1,
    mean: Any = None,
    variance: Any = None,
    epsilon: Any = 1e-5,
    where: Any = None,
    *,
    algorithm: str = "fast",
) -> Any:
    if where is not None:
        raise NotImplementedError("standardize: the where= argument is not supported")
    (x,) = _inexact("standardize", x)
    axes = _reduction_axes("standardize", x.ndim, axis)
    if mean is None:
        mean = rnp.mean(x, axis=axes, keepdims=True)
    if variance is None:
        if algorithm == "stable":
            variance = rnp.mean(rnp.square(rnp.subtract(x, mean)), axis=axes, keepdims=True)
        elif algorithm == "fast":
            second = rnp.mean(rnp.square(x), axis=axes, keepdims=True)
            variance = rnp.clip(rnp.subtract(second, rnp.square(mean)), 0)
        else:
            raise ValueError(f"Unknown algorithm '{algorithm}'. Expected 'fast' or 'stable'.")
    return rnp.multiply(rnp.subtract(x, mean), lax.rsqrt(rnp.add(variance, epsilon)))


def hard_sigmoid(x: Any) -> Any:
    (x,) = _inexact("hard_sigmoid", x)
    return rnp.divide(relu6(rnp.add(x, 3.0)), 6.0)


def hard_silu(x: Any) -> Any:
    (x,) = _inexact("hard_silu", x)
    return rnp.multiply(x, hard_sigmoid(x))


hard_swish = hard_silu


def mish(x: Any) -> Any:
    (x,) = _inexact("mish", x)
    return rnp.multiply(x, rnp.tanh(softplus(x)))


def squareplus(x: Any, b: Any = 4) -> Any:
    (x,) = _inexact("squareplus", x)
    return rnp.divide(rnp.add(x, rnp.sqrt(rnp.add(rnp.square(x), b))), 2)


def sparse_plus(x: Any) -> Any:
    (x,) = _inexact("sparse_plus", x)
    middle = rnp.divide(rnp.square(rnp.add(x, 1.0)), 4)
    return rnp.where(rnp.less_equal(x, -1.0), 0.0, rnp.where(rnp.greater_equal(x, 1.0), x, middle))


def sparse_sigmoid(x: Any) -> Any:
    (x,) = _inexact("sparse_sigmoid", x)
    return rnp.multiply(0.5, rnp.clip(rnp.add(x, 1.0), 0.0, 2.0))
