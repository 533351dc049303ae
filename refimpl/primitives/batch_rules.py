"""What vmap's batch rules share: moving and broadcasting the batch axis (from
``structural``), the rule of elementwise primitives and the rule that loops
over the batch. The primitives import this module, not the batching driver
(``refimpl.transforms.batching``, which re-exports these names).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from refimpl import tracing
from refimpl.primitives import structural
from refimpl.primitives.structural import (
    axis_size_of,
    bdim_to,
    broadcast_batch,
    moveaxis,
    ndim_of,
    shape_of,
    shift_dims,
)

__all__ = [
    "axis_size_of",
    "bdim_to",
    "broadcast_batch",
    "elementwise_batch_rule",
    "loop_batch_rule",
    "moveaxis",
    "ndim_of",
    "shape_of",
    "shift_dims",
]


def loop_batch_rule(primitive: Any) -> Callable[..., Any]:
    """A rule that applies ``primitive`` once per batch member and stacks the
    results on axis 0: correct for any primitive, but ``size`` equations.
    Used where no vectorized formulation exists (e.g. convolutions with
    ``batch_group_count > 1``)."""

    def rule(args: Sequence[Any], dims: Sequence[int | None], **params: Any):
        size = axis_size_of(args, dims)
        if size == 0:  # no member to run: empty results of the members' types
            avals = []
            for i, (x, d) in enumerate(zip(args, dims, strict=True)):
                aval = tracing.get_aval(x, primitive.name, i)
                if d is not None:
                    aval = aval.update(shape=aval.shape[:d] + aval.shape[d + 1 :])
                avals.append(aval)
            empty = [
                structural.broadcast_in_dim(np.zeros((), out.dtype), (0, *out.shape), ())
                for out in primitive.out_avals(avals, params)
            ]
            if primitive.multiple_results:
                return empty, [0] * len(empty)
            return empty[0], 0
        per_member = []
        for b in range(size):
            member = [
                x if d is None else structural.index_in_dim(x, b, d, keepdims=False)
                for x, d in zip(args, dims, strict=True)
            ]
            out = primitive.bind(*member, **params)
            per_member.append(list(out) if primitive.multiple_results else [out])
        stacked = [
            structural.concatenate([structural.expand_dims(o, (0,)) for o in outs], 0)
            for outs in zip(*per_member, strict=True)
        ]
        if primitive.multiple_results:
            return stacked, [0] * len(stacked)
        return stacked[0], 0

    return rule


# --- batching a Program --------------------------------------------------------------------


# --- the rule shared by elementwise primitives ------------------------------------------


def elementwise_batch_rule(
    primitive: Any, full_operands: Sequence[int] | Callable[[int], bool] = ()
):
    """Batch rule of an elementwise primitive (operands of one shape, rank-0
    operands broadcasting). The batch axis of the first batched operand of
    full rank is the output's; other batched operands are moved there,
    unbatched operands of full rank are broadcast along it, unbatched
    scalars stay as they are. ``full_operands`` (positions, or a predicate on
    the position) must have full rank even when scalar: ``clamp``'s operand,
    ``select_n``'s cases (a batched ``which`` needs cases of its shape)."""
    if callable(full_operands):
        must_be_full = full_operands
    else:
        positions = tuple(full_operands)

        def must_be_full(i: int) -> bool:
            return i in positions

    def rule(args: Sequence[Any], dims: Sequence[int | None], **params: Any):
        avals = [tracing.get_aval(x, primitive.name, i) for i, x in enumerate(args)]
        ranks = [a.ndim - (d is not None) for a, d in zip(avals, dims, strict=True)]
        full = max(ranks)
        size = 0
        out_dim = None
        shapes = []  # the full-rank operands' unbatched shapes
        for aval, d, r in zip(avals, dims, ranks, strict=True):
            if d is not None:
                size = aval.shape[d]
                if r == full and out_dim is None:
                    out_dim = d
            if r == full:
                shapes.append(aval.shape if d is None else aval.shape[:d] + aval.shape[d + 1 :])
        # size-1 dims broadcast (binary primitives, as JAX's broadcasting_shape_rule)
        shape = tuple(max(ds) if 0 not in ds else 0 for ds in zip(*shapes, strict=True))
        out_dim = 0 if out_dim is None else out_dim
        out_shape = (*shape[:out_dim], size, *shape[out_dim:])
        unbatched_dims = tuple(d for d in range(full + 1) if d != out_dim)
        new_args = []
        for i, (x, d, r) in enumerate(zip(args, dims, ranks, strict=True)):
            if d is None:
                if r == 0 and not must_be_full(i):
                    new_args.append(x)
                else:
                    expanded = (0,) * 0 if r == 0 else unbatched_dims
                    new_args.append(structural.broadcast_in_dim(x, out_shape, expanded))
            elif r == full:
                new_args.append(moveaxis(x, d, out_dim))
            else:  # a batched scalar among full-rank operands
                new_args.append(structural.broadcast_in_dim(x, out_shape, (out_dim,)))
        return primitive.bind(*new_args, **params), out_dim

    return rule
