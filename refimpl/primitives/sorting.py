"""``top_k``: the ``k`` largest entries along the last axis, and where they were.

Semantics (``jax.lax.top_k``)::

    order   = stable sort of operand[..., :] by descending key
    values  = operand[..., order[:k]]
    indices = order[:k]                      (int32)

The key is IEEE 754's totalOrder, as JAX 0.10.2's ``top_k`` (XLA's TopK
compares floats by their bits read as sign-magnitude integers): ``-NaN <
-inf < ... < -0.0 < +0.0 < ... < +inf < +NaN``, NaNs ordered by payload
within their sign. This is not the ``sort`` primitive's order (which has
``-0.0 == 0.0`` and every NaN equal and last): ``top_k([-0., 0.], 1)`` picks
index 1. Equal keys (equal bits) keep their index order (the lower index
first). Constraints: (C1) rank >= 1; (C2) ``0 <= k <= operand.shape[-1]``;
(C3) ``operand.shape[-1]`` fits the int32 indices (``ValueError``, as JAX).
Example: ``top_k([1, nan, 3, 3], 3)`` is ``([nan, 3, 3], [1, 2, 3])``;
``top_k([-nan, -inf, 1], 3)`` is ``([1, -inf, -nan], [2, 1, 0])``.

The lowering is JAX's: ``chlo.top_k(%x, k = k)``. Serializing the module
legalizes it to StableHLO (a sort in that order, then a slice), which gives
the order above bit for bit (checked over every real dtype, NaN payloads and
signed zeros included, against the reference on the CPU plugin).

Mask rule: a masked last axis has its padding filled with the dtype's lowest
value in that order, which sorts after every valid entry (see ``_top_k_mask``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import dtypes, tracing
from refimpl.core import ShapedArray
from refimpl.primitives import ad_helpers, batch_rules, structural
from refimpl.primitives import composite_ops as ops
from refimpl.primitives.base import Primitive, normalize_axis
from refimpl.transforms.masking.shape_spec import Dim

top_k_p = Primitive("top_k", multiple_results=True)


@top_k_p.def_abstract_eval
def _top_k_abstract_eval(operand: ShapedArray, *, k: int) -> tuple[ShapedArray, ShapedArray]:
    if operand.ndim == 0:
        raise ValueError("top_k: the operand must have rank >= 1 (C1), got shape ()")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"top_k: k must be an int, got {k!r}")
    if dtypes.is_complex(operand.dtype):  # ValueError as JAX 0.10.2: no order on complex numbers
        raise ValueError(f"top_k: the operand must be real, got {operand.dtype}")
    size = operand.shape[-1]
    if isinstance(size, (int, np.integer)) and size > np.iinfo(np.int32).max:
        raise ValueError(  # JAX 0.10.2's check: the indices are int32
            f"top_k: the indices are int32, which overflows for a last dimension of "
            f"{size} (more than {np.iinfo(np.int32).max})"
        )
    if not 0 <= k <= operand.shape[-1]:
        raise ValueError(
            f"top_k: k must be between 0 and the last dimension {operand.shape[-1]} (C2), got {k}"
        )
    shape = (*operand.shape[:-1], int(k))
    return ShapedArray(shape, operand.dtype, operand.weak_type), ShapedArray(
        shape, np.dtype(np.int32)
    )


def _bits_dtype(dtype: np.dtype) -> np.dtype:
    """The signed integer dtype of a float dtype's width."""
    return np.dtype(f"int{8 * np.dtype(dtype).itemsize}")


def _total_order_key(x: np.ndarray) -> np.ndarray:
    """An array whose ascending order is ``top_k``'s order of ``x``: for
    floats the bits as signed integers with a negative number's magnitude bits
    flipped (sign-magnitude to two's complement, so ``-0.0 < 0.0`` and NaNs
    sit beyond the infinities by sign and payload); bools as uint8."""
    if dtypes.is_floating(x.dtype):
        bits = np.ascontiguousarray(x).view(_bits_dtype(x.dtype))
        magnitude = np.iinfo(bits.dtype).max
        return np.where(bits < 0, bits ^ bits.dtype.type(magnitude), bits)
    if dtypes.is_bool(x.dtype):
        return x.astype(np.uint8)
    return x


@top_k_p.def_impl
def _top_k_impl(operand: np.ndarray, *, k: int) -> list[np.ndarray]:
    n = operand.shape[-1]
    key = _total_order_key(operand)[..., ::-1]
    # A stable ascending sort of the reversed axis puts ties with the higher
    # original index first, so its tail read backwards has the lower index first.
    ascending = np.argsort(key, axis=-1, kind="stable")
    order = (n - 1 - ascending[..., ::-1][..., :k]).astype(np.int32)
    return [np.take_along_axis(operand, order, axis=-1), order]


@top_k_p.def_lowering
def _top_k_lowering(ctx: Any, operand: Any, *, k: int) -> list[Any]:
    return list(ctx.chlo.top_k(operand, k))


@top_k_p.def_batch
def _top_k_batch(args, dims, *, k):
    (x,), (d,) = args, dims
    size = batch_rules.shape_of(x)[d]
    x = batch_rules.bdim_to(x, d, size, 0)
    return list(top_k_p.bind(x, k=k)), [0, 0]


@top_k_p.def_mask
def _top_k_mask(ctx, operand, *, k):
    """Masked leading dims carry their logical sizes to both results; the
    last dim of both results is ``k`` (unmasked).

    A masked last dim (logical ``n``): its padding is filled with the
    dtype's lowest value in ``top_k``'s order (a NaN with every bit set, the
    integer minimum, False). Ties go to the lower index, and every valid index
    precedes the padding, so while ``k <= n`` the padding is never chosen
    and both results equal the unpadded program's. ``k > n`` is an error in
    the unpadded program but ``n`` is only known at run time here: the
    masked program then returns the ``n`` valid entries followed by the fill
    value with indices ``>= n`` (the caller must ensure ``k <= n``).
    """
    logical = ctx.logical_in[0]
    if ctx.masked(logical[-1]):
        dtype = ctx.avals_in[0].dtype
        lowest = (
            np.array(-1, _bits_dtype(dtype)).view(dtype)[()]
            if dtypes.is_floating(dtype)
            else dtypes.min_value(dtype)
        )
        operand = ctx.fill_padding(operand, logical, (len(logical) - 1,), lowest)
    values, indices = top_k_p.bind(operand, k=k)
    out_logical = (*logical[:-1], Dim.constant(k))
    return [values, indices], [out_logical, out_logical]


@top_k_p.def_jvp
def _top_k_jvp(primals, tangents, *, k):
    """The tangent read at the chosen indices; the indices have none."""
    (x,), (t,) = primals, tangents
    values, indices = top_k_p.bind(x, k=k)
    index_zero = ad_helpers.zero_tangent(ad_helpers.aval_of(indices))
    # unreachable from the public API: one differentiable operand, and the jvp trace calls a
    # rule only when some operand has a nonzero tangent (ad.JVPTrace.process_primitive)
    if ad_helpers.is_zero(t):  # pragma: no cover
        return [values, indices], [ad_helpers.zero_tangent(ad_helpers.aval_of(values)), index_zero]
    return [values, indices], [ops.take_along_axis(t, indices, axis=-1), index_zero]


def top_k(operand: Any, k: int, *, axis: int = -1) -> list[Any]:
    """``jax.lax.top_k``: ``(values, indices)`` of the ``k`` largest entries along
    ``axis`` (the last by default), largest first in IEEE totalOrder (+NaN
    first, -NaN last, ``0.0`` above ``-0.0``; ties: lower index first).
    Another axis is moved last around the primitive (JAX's primitive takes
    ``axis`` itself; the values are the same)."""

    k = int(k) if isinstance(k, np.integer) else k
    ndim = tracing.get_aval(operand, "top_k", 0).ndim
    if ndim == 0:
        # ValueError as JAX 0.10.2 (its axis check of a rank-0 operand)
        raise ValueError("top_k: operand must have >= 1 dimension, got shape ()")
    axis = normalize_axis("top_k", axis, ndim)
    if axis == ndim - 1:  # a list, as JAX's (the primitive's results)
        return list(top_k_p.bind(operand, k=k))
    perm = (*(d for d in range(ndim) if d != axis), axis)
    back = tuple(int(i) for i in np.argsort(perm))
    values, indices = top_k_p.bind(structural.transpose(operand, perm), k=k)
    return [structural.transpose(values, back), structural.transpose(indices, back)]


__all__ = ["top_k"]
