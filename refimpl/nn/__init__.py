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

from refimpl import custom_derivatives, dtypes, lax
from refimpl import numpy as rnp
from refimpl._static_args import hashable_statics
from refimpl.nn import initializers
from refimpl.numpy._shape import reshape as _reshape  # arrays, also of NumPy data
from refimpl.primitives.reductions import integer_value
from refimpl.scipy.special import logsumexp
from refimpl.scipy.special._common import _inexact
from refimpl.scipy.special._logarithmic import _log_softmax, _reduction_axes, _softmax

__all__ = [
    "celu",
    "dot_product_attention",
    "elu",
    "gelu",
    "glu",
    "hard_sigmoid",
    "hard_silu",
    "hard_swish",
    "hard_tanh",
    "identity",
    "initializers",
    "leaky_relu",
    "log1mexp",
    "log_sigmoid",
    "log_softmax",
    "logmeanexp",
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
    "tanh",
]


def _with_jvp(value_fn, jvp_fn):
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


# Most activations are written, as in JAX, directly in jnp/lax operations on
# the argument, without promoting it first: their dtypes follow those
# operations' promotion (elu(int32) is a weak default float, hard_tanh(int32)
# stays int32, sigmoid(int32) is logistic's TypeError, log_sigmoid(bool)
# negative's).


def _bool_is_an_error(name: str, x: Any) -> Any:
    x = rnp.asarray(x)
    if x.dtype == np.bool_:
        raise TypeError(f"{name} does not accept dtype bool (JAX subtracts or negates it)")
    return x


def sigmoid(x: Any) -> Any:
    return lax.logistic(x)


def silu(x: Any) -> Any:
    return rnp.multiply(x, sigmoid(x))


swish = silu


def softplus(x: Any) -> Any:
    # rnp.logaddexp carries JAX's custom_jvp: derivative 1/2 at x == 0
    return rnp.logaddexp(x, 0)


def log_sigmoid(x: Any) -> Any:
    return rnp.negative(softplus(rnp.negative(x)))


def soft_sign(x: Any) -> Any:
    return rnp.divide(x, rnp.add(rnp.abs(x), 1))


def elu(x: Any, alpha: Any = 1.0) -> Any:
    positive = rnp.greater(x, 0)
    return rnp.where(positive, x, rnp.multiply(alpha, rnp.expm1(rnp.where(positive, 0.0, x))))


def leaky_relu(x: Any, negative_slope: Any = 1e-2) -> Any:
    return rnp.where(rnp.greater_equal(x, 0), x, rnp.multiply(negative_slope, x))


def hard_tanh(x: Any) -> Any:
    return rnp.where(rnp.greater(x, 1), 1, rnp.where(rnp.less(x, -1), -1, x))


def celu(x: Any, alpha: Any = 1.0) -> Any:
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


@hashable_statics("nn.glu", ("axis",))  # a jit with these static in JAX 0.10.2
def glu(x: Any, axis: int = -1) -> Any:
    x = rnp.asarray(x)
    size = x.shape[axis]
    if size % 2:
        raise ValueError(f"glu: the size of axis {axis} must be even, got {size}")
    first, second = rnp.split(x, 2, axis=axis)
    return rnp.multiply(first, sigmoid(second))


def softmax(x: Any, axis: int | Sequence[int] | None = -1, where: Any = None) -> Any:
    # x - max(x) of a bool is JAX's TypeError, after a bad axis's error
    x = rnp.asarray(x)
    axis = integer_value(axis)  # a 0-d integer array, as JAX's (no jit: read as an int)
    _reduction_axes("softmax", x.ndim, axis)
    return _softmax(_bool_is_an_error("softmax", x), axis, where)


@hashable_statics("nn.log_softmax", ("axis",))  # a jit with these static in JAX 0.10.2
def log_softmax(x: Any, axis: int | Sequence[int] | None = -1, where: Any = None) -> Any:
    x = rnp.asarray(x)
    _reduction_axes("log_softmax", x.ndim, axis)
    return _log_softmax(_bool_is_an_error("log_softmax", x), axis, where)


@hashable_statics("nn.one_hot", ("axis",))  # JAX 0.10.2 jits its body with axis static
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


@hashable_statics("nn.standardize", ("axis", "algorithm"))  # a jit with these static in JAX 0.10.2
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
    # JAX squares an integer x in its own dtype (wrapping) for the variance
    original = rnp.asarray(x)
    (x,) = _inexact("standardize", x)
    axes = _reduction_axes("standardize", x.ndim, axis)
    if mean is None:
        mean = rnp.mean(x, axis=axes, keepdims=True)
    if variance is None:
        if algorithm == "stable":
            variance = rnp.mean(rnp.square(rnp.subtract(x, mean)), axis=axes, keepdims=True)
        elif algorithm == "fast":
            squared = rnp.square(original if dtypes.is_integer(original.dtype) else x)
            second = rnp.mean(squared, axis=axes, keepdims=True)
            variance = rnp.clip(rnp.subtract(second, rnp.square(mean)), 0)
        else:
            raise ValueError(f"Unknown algorithm '{algorithm}'. Expected 'fast' or 'stable'.")
    return rnp.multiply(rnp.subtract(x, mean), lax.rsqrt(rnp.add(variance, epsilon)))


def hard_sigmoid(x: Any) -> Any:
    return rnp.divide(relu6(rnp.add(x, 3.0)), 6.0)


def hard_silu(x: Any) -> Any:
    return rnp.multiply(x, hard_sigmoid(x))


hard_swish = hard_silu


def mish(x: Any) -> Any:
    return rnp.multiply(x, rnp.tanh(softplus(x)))


def squareplus(x: Any, b: Any = 4) -> Any:
    (x,) = _inexact("squareplus", x)
    return rnp.divide(rnp.add(x, rnp.sqrt(rnp.add(rnp.square(x), b))), 2)


def sparse_plus(x: Any) -> Any:
    middle = rnp.divide(rnp.square(rnp.add(x, 1.0)), 4)
    return rnp.where(rnp.less_equal(x, -1.0), 0.0, rnp.where(rnp.greater_equal(x, 1.0), x, middle))


def sparse_sigmoid(x: Any) -> Any:
    return rnp.multiply(0.5, rnp.clip(rnp.add(x, 1.0), 0.0, 2.0))


def identity(x: Any) -> Any:
    """``x`` itself (as an array; ints stay ints, as in JAX)."""
    return rnp.asarray(x)


def tanh(x: Any, /) -> Any:
    """``jax.nn.tanh`` is ``jax.numpy.tanh``."""
    return rnp.tanh(x)


def _log1mexp_value(x: Any) -> Any:
    # Maechler's split at log 2: below it 1 - exp(-x) cancels, so log(-expm1(-x));
    # above it exp(-x) < 1/2 and log1p(-exp(-x)) is exact to rounding
    below = rnp.less(x, np.log(2.0))
    return rnp.where(below, rnp.log(rnp.negative(rnp.expm1(rnp.negative(x)))),
                     rnp.log1p(rnp.negative(rnp.exp(rnp.negative(x)))))  # fmt: skip


def _log1mexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _log1mexp_value(x), rnp.divide(t, rnp.expm1(x))


_log1mexp = _with_jvp(_log1mexp_value, _log1mexp_jvp)


def log1mexp(x: Any) -> Any:
    """``log(1 - exp(-x))`` for ``x >= 0``, without cancellation near 0 or
    underflow for large ``x``; derivative ``1 / expm1(x)``. NaN for ``x < 0``."""
    x = _bool_is_an_error("log1mexp", x)
    if dtypes.is_integer(x.dtype):
        # JAX negates an integer x in its own dtype (wrapping: uint8 1 gives
        # 255, so NaN); no derivative to carry
        (minus,) = _inexact("log1mexp", rnp.negative(x))
        (x,) = _inexact("log1mexp", x)
        below = rnp.less(x, np.log(2.0))
        return rnp.where(below, rnp.log(rnp.negative(rnp.expm1(minus))),
                         rnp.log1p(rnp.negative(rnp.exp(minus))))  # fmt: skip
    (x,) = _inexact("log1mexp", x)
    return _log1mexp(x)


@hashable_statics("nn.logmeanexp", ("axis", "keepdims"))  # a jit with these static in JAX 0.10.2
def logmeanexp(x: Any, axis: Any = None, where: Any = None, keepdims: bool = False) -> Any:
    """``logsumexp(x, axis) - log(n)`` with ``n`` the number of reduced elements."""
    if where is not None:
        raise NotImplementedError("logmeanexp: the where= argument is not supported")
    (x,) = _inexact("logmeanexp", x)
    axes = _reduction_axes("logmeanexp", x.ndim, axis)
    lse = logsumexp(x, axis=axes, keepdims=keepdims)
    count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    return rnp.subtract(lse, rnp.log(rnp.asarray(count, lse.dtype)))


def dot_product_attention(
    query: Any,
    key: Any,
    value: Any,
    bias: Any = None,
    mask: Any = None,
    *,
    scale: float | None = None,
    is_causal: bool = False,
    query_seq_lengths: Any = None,
    key_value_seq_lengths: Any = None,
    local_window_size: int | tuple[int, int] | None = None,
    implementation: str | None = None,
    return_residual: bool = False,
) -> Any:
    """Scaled dot-product attention, as ``jax.nn.dot_product_attention`` with
    ``implementation='xla'``.

    ``query`` is ``(B, T, N, H)`` (or ``(T, N, H)``), ``key``/``value`` are
    ``(B, S, K, H)`` with ``N`` a multiple of ``K`` (grouped-query attention:
    query head ``n`` uses key/value head ``n // (N // K)``). Per head:
    ``out = softmax(scale * Q K^T + bias, masked) V`` with ``scale`` default
    ``1/sqrt(H)``. The logits are computed in ``promote(query.dtype,
    float32)`` (16-bit operands widened exactly), the softmax in float32, its
    probabilities cast to ``key``'s dtype before the product with ``value``.
    Masked logits (``mask`` False, above the diagonal when ``is_causal``,
    outside ``local_window_size = (left, right)``: key ``s`` visible to query
    ``t`` iff ``t - left <= s <= t + right``, or at padding positions given by
    ``query_seq_lengths``/``key_value_seq_lengths``) are replaced by
    ``-0.7 * finfo(logits dtype).max`` (capped to float32's range), so a fully
    masked row averages ``value`` uniformly; output rows at query padding are
    0. ``bias`` and ``mask`` are 4-D, broadcastable to ``(B, N, T, S)``.
    With ``return_residual`` also the logsumexp of the masked logits,
    ``(B, T, N)`` in ``key``'s dtype.
    """
    fn = "dot_product_attention"
    if implementation not in (None, "xla"):
        if implementation == "cudnn":
            raise NotImplementedError(
                f"{fn}: implementation='cudnn' (cuDNN flash attention) needs a GPU; "
                "refimpl has only the 'xla' implementation (use implementation=None or 'xla')"
            )
        raise ValueError(
            f"{fn}: implementation must be None, 'xla' or 'cudnn', got {implementation!r}"
        )
    q, k, v = (rnp.asarray(t) for t in (query, key, value))
    if not (q.ndim == k.ndim == v.ndim) or q.ndim not in (3, 4):
        raise ValueError(
            f"{fn}: query, key and value must all be 3-D (TNH) or 4-D (BTNH), got shapes "
            f"{q.shape}, {k.shape}, {v.shape}"
        )
    unbatched = q.ndim == 3
    if unbatched:
        q, k, v = (rnp.expand_dims(t, 0) for t in (q, k, v))
    if k.shape != v.shape:
        raise ValueError(
            f"{fn}: key and value must have the same shape, got {k.shape} and {v.shape}"
        )
    B, T, N, H = q.shape
    _, S, K, _ = k.shape
    if k.shape[0] != B or k.shape[3] != H:
        raise ValueError(
            f"{fn}: key's batch and head dims must match query's: query {q.shape}, key {k.shape}"
        )
    if N % K:
        raise ValueError(
            f"{fn}: the number of query heads {N} must be a multiple of the "
            f"number of key/value heads {K}"
        )
    G = N // K
    if scale is None:
        scale = 1.0 / np.sqrt(H)
    if isinstance(local_window_size, (int, np.integer)):
        local_window_size = (int(local_window_size), int(local_window_size))
    if not dtypes.is_inexact(q.dtype):
        raise TypeError(f"{fn}: query must have a floating dtype, got {q.dtype}")

    logits_dtype = dtypes.promote_types(q.dtype, np.float32)
    # (B, T, K, G, H) x (B, S, K, H) -> (B, K, G, T, S): query head n = k * G + g
    qg = _reshape(q.astype(logits_dtype), (B, T, K, G, H))
    logits = rnp.einsum("BTKGH,BSKH->BKGTS", qg, k.astype(logits_dtype))
    logits = rnp.multiply(logits, np.asarray(scale, logits_dtype))

    def grouped(t: Any, name: str) -> Any:
        if unbatched and t.ndim == 3:
            t = rnp.expand_dims(t, 0)
        if t.ndim != 4:
            raise ValueError(
                f"{fn}: {name} must be 4-D, broadcastable to (B, N, T, S), got shape {t.shape}"
            )
        try:
            np.broadcast_shapes(t.shape, (B, N, T, S))
        except ValueError:
            raise ValueError(
                f"{fn}: {name} of shape {t.shape} does not broadcast to "
                f"(B, N, T, S) = {(B, N, T, S)}"
            ) from None
        tb, tn, tt, ts = t.shape
        if tn == 1:
            return rnp.expand_dims(t, 2)  # (tB, 1, 1, tT, tS)
        return _reshape(t, (tb, K, G, tt, ts))

    if bias is not None:
        logits = rnp.add(logits, grouped(rnp.asarray(bias), "bias")).astype(logits_dtype)
    keep = None
    if mask is not None:
        mask = rnp.asarray(mask)
        if mask.dtype != np.bool_:
            raise TypeError(f"{fn}: mask must be boolean (True = attend), got dtype {mask.dtype}")
        keep = grouped(mask, "mask")
    positions_t = rnp.arange(T)[:, None]
    positions_s = rnp.arange(S)[None, :]

    def both(a: Any, b: Any) -> Any:
        return b if a is None else rnp.logical_and(a, b)

    if is_causal:
        keep = both(keep, rnp.greater_equal(positions_t, positions_s))
    if local_window_size is not None:
        left, right = local_window_size
        inside = rnp.logical_and(
            rnp.less_equal(positions_t, rnp.add(positions_s, left)),
            rnp.greater_equal(positions_t, rnp.subtract(positions_s, right)),
        )
        keep = both(keep, inside)
    for lengths, name, pos, shape in (
        (query_seq_lengths, "query_seq_lengths", rnp.arange(T), (B, 1, 1, T, 1)),
        (key_value_seq_lengths, "key_value_seq_lengths", rnp.arange(S), (B, 1, 1, 1, S)),
    ):
        if lengths is None:
            continue
        lengths = rnp.asarray(lengths)
        if lengths.shape != (B,) or not dtypes.is_integer(lengths.dtype):
            raise ValueError(
                f"{fn}: {name} must be an integer array of shape (B,) = ({B},), "
                f"got {lengths.dtype}{list(lengths.shape)}"
            )
        keep = both(keep, _reshape(rnp.less(pos[None, :], lengths[:, None]), shape))
    if keep is not None:
        big = min(float(dtypes.finfo(logits_dtype).max), float(np.finfo(np.float32).max))
        logits = rnp.where(keep, logits, np.asarray(-0.7 * big, logits_dtype))
    logits = logits.astype(np.float32)
    probs = softmax(logits, axis=-1).astype(k.dtype)
    # (B, K, G, T, S) x (B, S, K, H) -> (B, T, K, G, H)
    out = rnp.einsum("BKGTS,BSKH->BTKGH", probs, v)
    out = _reshape(out, (B, T, N, H))
    if query_seq_lengths is not None:
        valid = rnp.less(rnp.arange(T)[None, :], rnp.asarray(query_seq_lengths)[:, None])
        out = rnp.multiply(out, valid[:, :, None, None].astype(out.dtype))
    if unbatched:
        out = out[0]
    if return_residual:
        lse = logsumexp(logits, axis=-1).astype(k.dtype)  # (B, K, G, T)
        lse = _reshape(rnp.transpose(lse, (0, 3, 1, 2)), (B, T, N))
        if unbatched:
            lse = lse[0]
        return out, lax.stop_gradient(lse)
    return out
