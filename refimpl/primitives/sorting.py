"""``top_k``: the ``k`` largest entries along the last axis, and where they were.

Semantics (``jax.lax.top_k``)::

    order   = stable sort of operand[..., :] by descending key
    values  = operand[..., order[:k]]
    indices = order[:k]                      (int32)

The key is the sort primitive's total order (NaN above +inf, ``-0.0 ==
0.0``), so NaNs come first; equal keys keep their index order (the lower
index first). Constraints: (C1) rank >= 1; (C2) ``0 <= k <= operand.shape[-1]``;
(C3) ``operand.shape[-1]`` fits the int32 indices (``ValueError``, as JAX).
Example: ``top_k([1, nan, 3, 3], 3)`` is ``([nan, 3, 3], [1, 2, 3])``.

StableHLO has no top-k operation (``chlo.top_k`` is not part of the portable
set used here), so the lowering is a program of primitives: a stable
descending sort of ``(operand, iota)`` and a slice.

Mask rule: a masked last axis has its padding filled with the dtype's lowest
value, which sorts after every valid entry (see ``_top_k_mask``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import dtypes, tracing
from refimpl.core import ShapedArray
from refimpl.primitives import ad_helpers, batch_rules, structural
from refimpl.primitives import composite_ops as ops
from refimpl.primitives.base import Primitive, normalize_axis
from refimpl.primitives.decompositions import composite_lowering
from refimpl.primitives.reductions import sort_keys
from refimpl.transforms.masking.shape_spec import Dim

top_k_p = Primitive("top_k", multiple_results=True)


@top_k_p.def_abstract_eval
def _top_k_abstract_eval(operand: ShapedArray, *, k: int) -> tuple[ShapedArray, ShapedArray]:
    if operand.ndim == 0:
        raise ValueError("top_k: the operand must have rank >= 1 (C1), got shape ()")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"top_k: k must be an int, got {k!r}")
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


@top_k_p.def_impl
def _top_k_impl(operand: np.ndarray, *, k: int) -> list[np.ndarray]:
    n = operand.shape[-1]
    reversed_ = operand[..., ::-1]
    keys = sort_keys(reversed_)
    # np.lexsort: the last key is the primary one; stable, ascending. On the
    # reversed axis, ties end up with the higher original index first, so the
    # tail read backwards has the lower index first.
    ascending = np.lexsort(keys[::-1], axis=-1)
    order = (n - 1 - ascending[..., ::-1][..., :k]).astype(np.int32)
    return [np.take_along_axis(operand, order, axis=-1), order]


def _top_k_program(operand: Any, *, k: int) -> tuple[Any, Any]:
    order = ops.argsort(operand, axis=-1, descending=True)[..., :k]
    return ops.take_along_axis(operand, order, axis=-1), order.astype(np.int32)


top_k_p.def_lowering(composite_lowering("top_k", _top_k_program))


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
    dtype's lowest value (-inf, the integer minimum, False). The sort order
    puts NaN first and breaks ties by the lower index, and every valid index
    precedes the padding, so while ``k <= n`` the padding is never chosen
    and both results equal the unpadded program's. ``k > n`` is an error in
    the unpadded program but ``n`` is only known at run time here: the
    masked program then returns the ``n`` valid entries followed by the fill
    value with indices ``>= n`` (the caller must ensure ``k <= n``).
    """
    logical = ctx.logical_in[0]
    if ctx.masked(logical[-1]):
        lowest = dtypes.min_value(ctx.avals_in[0].dtype)
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
    ``axis`` (the last by default), largest first (NaN first; ties: lower index
    first). Another axis is moved last around the primitive (JAX's primitive
    takes ``axis`` itself; the values are the same)."""

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
