"""``jax.interpreters.batching``: a primitive's ``vmap`` rule, JAX 0.10.2's way.

``primitive_batchers[p] = rule`` sets ``p.batch_rule``, refimpl's own slot,
whose convention is JAX's: ``rule(batched_args, batch_dims, **params) ->
(out, out_dim)`` (lists for ``multiple_results``), a dim ``None`` for an
unbatched operand or output. As in JAX, the rule is only called when some
operand is batched, and the table can only be written (``primitive_batchers[p]``
is JAX's TypeError). ``defvectorized``, ``defbroadcasting`` and ``defreducer``
give the rules of elementwise, broadcasting and reducing primitives.

``register_vmappable``/``unregister_vmappable`` make a type vmappable (``vmap``
takes its values whole, with a spec object as their axis; refimpl's
transforms/batching.py). Not provided: ``fancy_primitive_batchers`` and
``axis_primitive_batchers`` (rules given JAX's axis data, for collectives);
``not_mapped`` is not public in JAX 0.10.2 either (write ``None``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from refimpl import tracing
from refimpl.interpreters.ad import TupleArgs
from refimpl.primitives import batch_rules, structural
from refimpl.primitives.base import Primitive
from refimpl.transforms.batching import register_vmappable, unregister_vmappable

__all__ = [
    "bdim_at_front",
    "broadcast",
    "defbroadcasting",
    "defreducer",
    "defvectorized",
    "primitive_batchers",
    "register_vmappable",
    "unregister_vmappable",
]


class _BatchRuleTable:
    """``primitive_batchers``: write-only, as JAX's ``PrimitiveBatchersProxy``."""

    def __setitem__(self, primitive: Primitive, rule: Callable[..., Any]) -> None:
        primitive.batch_rule = TupleArgs(rule)

    def __delitem__(self, primitive: Primitive) -> None:
        if primitive.batch_rule is None:
            raise KeyError(primitive)
        primitive.batch_rule = None


primitive_batchers = _BatchRuleTable()


def defvectorized(primitive: Primitive) -> None:
    """An elementwise primitive whose batched operands share their batch
    axis: applied to the stacked values as they are."""
    primitive.batch_rule = TupleArgs(functools.partial(_vectorized_batcher, primitive))


def _vectorized_batcher(primitive: Primitive, args: Sequence, dims: Sequence, **params: Any):
    assert not primitive.multiple_results
    assert all(dims[0] == d for d in dims[1:]), dims  # (JAX asserts it too)
    return primitive.bind(*args, **params), dims[0]


def defbroadcasting(primitive: Primitive) -> None:
    """A primitive that broadcasts its operands (NumPy-style, size-1 and
    missing leading axes): batched operands moved to the front, unbatched
    ones given a size-1 axis there."""
    primitive.batch_rule = TupleArgs(functools.partial(_broadcast_batcher, primitive))


def _broadcast_batcher(primitive: Primitive, args: Sequence, dims: Sequence, **params: Any):
    assert len(args) > 1
    shape, dim = next((_shape(x), d) for x, d in zip(args, dims) if d is not None)
    if all(_shape(x) == shape and d == dim for x, d in zip(args, dims) if _ndim(x)):
        out_dim = dim  # agreeing batch axes (and scalars): the primitive as it is
    else:  # batch axes to the front; an unbatched operand gets a size-1 axis there
        args = [bdim_at_front(x, d, 1) if _ndim(x) else x for x, d in zip(args, dims)]
        rank = max(_ndim(x) for x in args)
        # a batched scalar, now of shape (n,), gets trailing axes to broadcast against
        args = [
            x if d is None or _ndim(x) == rank else _trailing_axes(x, rank)
            for x, d in zip(args, dims)
        ]
        out_dim = 0
    out = primitive.bind(*args, **params)
    if primitive.multiple_results:
        return out, [out_dim] * len(out)
    return out, out_dim


def defreducer(primitive: Primitive) -> None:
    """A reduction with an ``axes`` param: the axes renumbered around the
    batch axis, which the output keeps."""
    primitive.batch_rule = TupleArgs(functools.partial(_reducer_batcher, primitive))


def _reducer_batcher(primitive: Primitive, args: Sequence, dims: Sequence, *, axes, **params):
    (operand,), (bdim,) = args, dims
    axes = tuple(int(a) + (a >= bdim) for a in axes)
    kept = [d for d in range(_ndim(operand)) if d not in axes]
    if "input_shape" in params:
        params = dict(params, input_shape=_shape(operand))
    return primitive.bind(operand, axes=axes, **params), kept.index(bdim)


def bdim_at_front(x: Any, bdim: int | None, size: int, mesh_axis: Any = None) -> Any:
    """``x`` with its batch axis first: moved there, or ``x`` broadcast along
    a new leading axis of ``size`` when unbatched (``bdim`` None)."""
    return batch_rules.bdim_to(x, bdim, size, 0)


def broadcast(x: Any, sz: int, axis: int, mesh_axis: Any) -> Any:
    """``x`` broadcast along a new axis of size ``sz`` at ``axis``."""
    return batch_rules.broadcast_batch(x, sz, axis)


def _shape(x: Any) -> tuple[int, ...]:
    return tuple(tracing.get_aval(x, "vmap", 0).shape)


def _ndim(x: Any) -> int:
    return len(_shape(x))


def _trailing_axes(x: Any, rank: int) -> Any:
    return structural.expand_dims(x, tuple(range(_ndim(x), rank)))
