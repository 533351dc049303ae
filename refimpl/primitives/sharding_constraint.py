"""``sharding_constraint``: the identity that tells XLA's SPMD partitioner how
a value inside a program is laid out (``lax.with_sharding_constraint`` under
a trace; JAX's primitive of the same name).

Its value is its operand's everywhere. Only the pjrt lowering of a program
compiled for partitions (``refimpl.backends.pjrt.spmd``, which lowers inside
:func:`lowering_for_partitions`) emits what it means: a ``@Sharding`` custom
call carrying the ``mhlo.sharding`` text of the sharding; any other lowering
(a program on one device) emits nothing for it. Under ``vmap`` the
constraint is dropped (its spec does not cover the batch axis).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from refimpl.core import ShapedArray
from refimpl.primitives.base import Primitive
from refimpl.sharding import xla_sharding_text
from refimpl.transforms.ad_util import Zero

__all__ = ["lowering_for_partitions", "sharding_constraint_p"]

sharding_constraint_p = Primitive("sharding_constraint")


class _Partitioned(threading.local):
    active = False


_partitioned = _Partitioned()


@contextlib.contextmanager
def lowering_for_partitions() -> Iterator[None]:
    """Lower ``sharding_constraint`` as ``@Sharding`` custom calls inside the
    block (the module is compiled with ``num_partitions`` = the mesh size)."""
    previous, _partitioned.active = _partitioned.active, True
    try:
        yield
    finally:
        _partitioned.active = previous


@sharding_constraint_p.def_abstract_eval
def _abstract_eval(aval: ShapedArray, *, sharding: Any) -> ShapedArray:
    return aval


@sharding_constraint_p.def_impl
def _impl(x: np.ndarray, *, sharding: Any) -> np.ndarray:
    return x


@sharding_constraint_p.def_jvp
def _jvp(primals, tangents, *, sharding):
    """Linear: the tangent is constrained the same way (a zero one stays zero:
    the identity's output tangent has the input tangent's type)."""
    out = sharding_constraint_p.bind(primals[0], sharding=sharding)
    tangent = tangents[0]
    # unreachable from the public API: one differentiable operand, and the jvp trace calls a
    # rule only when some operand has a nonzero tangent (ad.JVPTrace.process_primitive)
    if isinstance(tangent, Zero):  # pragma: no cover
        return out, tangent
    return out, sharding_constraint_p.bind(tangent, sharding=sharding)


@sharding_constraint_p.def_transpose
def _transpose(ct, x, *, sharding):
    # unreachable from the public API: the backward pass skips an equation whose one output has
    # no cotangent and never passes a symbolic Zero to a single-output rule (ad.backward_pass)
    if isinstance(ct, Zero):  # pragma: no cover
        return [Zero(x.aval)]
    return [sharding_constraint_p.bind(ct, sharding=sharding)]


@sharding_constraint_p.def_batch
def _batch(args, dims, *, sharding):
    return args[0], dims[0]


@sharding_constraint_p.def_mask
def _mask(ctx, operand, *, sharding):
    return operand, ctx.logical_in[0]


@sharding_constraint_p.def_lowering
def _lowering(ctx, operand, *, sharding):
    if not _partitioned.active:
        return [operand]
    ir = ctx.ir
    aval = ctx.avals_out[0]
    op = ctx.hlo.CustomCallOp.build_generic(
        results=[ctx.ir_type(aval)],
        operands=[operand],
        attributes={
            "call_target_name": ir.StringAttr.get("Sharding"),
            "mhlo.sharding": ir.StringAttr.get(xla_sharding_text(sharding, aval.ndim)),
        },
    )
    return list(op.results)
