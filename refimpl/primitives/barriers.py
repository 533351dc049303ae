"""Barriers: ``stop_gradient`` (the identity whose derivative is zero) and
``optimization_barrier`` (the identity the compiler may not move work across).

Each primitive with abstract_eval, impl, jvp/transpose, batch, mask and pjrt
lowering side by side.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import dtypes, pytree, tracing
from refimpl.core import ShapedArray
from refimpl.primitives import ad_helpers
from refimpl.primitives.base import Primitive
from refimpl.transforms.ad_util import Zero


def _tree():
    return pytree


def _passthrough_mask(ctx, *operands: Any, **params: Any):
    """Identity-like primitives: the logical shapes pass through unchanged."""
    out = ctx.primitive.bind(*operands, **params)
    if ctx.primitive.multiple_results:
        return out, list(ctx.logical_in)
    return out, ctx.logical_in[0]


# --- stop_gradient -----------------------------------------------------------------------
#
# As JAX's: the identity whose derivative is zero. Not linear (its tangent
# is not stop_gradient of the input tangent), so it has no transpose rule:
# the jvp rule never puts it on a tangent.

stop_gradient_p = Primitive("stop_gradient")


@stop_gradient_p.def_abstract_eval
def _stop_gradient_abstract_eval(x: ShapedArray) -> ShapedArray:
    return x


@stop_gradient_p.def_impl
def _stop_gradient_impl(x: np.ndarray) -> np.ndarray:
    return x


@stop_gradient_p.def_jvp
def _stop_gradient_jvp(primals, tangents):
    (x,) = primals
    ans = stop_gradient_p.bind(x)
    return ans, ad_helpers.zero_tangent(ad_helpers.aval_of(ans))


@stop_gradient_p.def_batch
def _stop_gradient_batch(args, dims):
    return stop_gradient_p.bind(args[0]), dims[0]


stop_gradient_p.def_mask(_passthrough_mask)


@stop_gradient_p.def_lowering
def _stop_gradient_lowering(ctx, x):
    return [x]


def stop_gradient(x: Any) -> Any:
    """The identity on the pytree ``x`` whose derivative is zero.

    As JAX 0.10.2: float and complex leaves go through the ``stop_gradient``
    primitive (a Python float becomes a weakly typed array). A traced integer
    or bool leaf goes through it too (under ``jit`` an equation; under a
    derivative the result is a plain value, as a float one's), while a
    concrete one is returned unchanged (a Python int stays one, as JAX's
    eager result is an int); a float0 tangent is returned unchanged.
    """

    def stop(leaf: Any) -> Any:
        if isinstance(leaf, Zero):
            return leaf
        if isinstance(leaf, np.ndarray) and leaf.dtype == dtypes.float0:
            return leaf  # a float0 tangent carries no data
        aval = tracing.get_aval(leaf, "stop_gradient", 0)
        if dtypes.is_inexact(aval.dtype) or isinstance(leaf, tracing.Tracer):
            return stop_gradient_p.bind(leaf)
        return leaf

    return _tree().tree_map(stop, x)


# --- optimization_barrier ------------------------------------------------------------------

optimization_barrier_p = Primitive("optimization_barrier", multiple_results=True)


@optimization_barrier_p.def_abstract_eval
def _barrier_abstract_eval(*avals: ShapedArray) -> list[ShapedArray]:
    return list(avals)


@optimization_barrier_p.def_impl
def _barrier_impl(*arrays: np.ndarray) -> list[np.ndarray]:
    return list(arrays)


@optimization_barrier_p.def_jvp
def _barrier_jvp(primals, tangents):
    """Primals and (non-zero) tangents through one barrier each, as JAX."""
    outs = optimization_barrier_p.bind(*primals)
    live = [i for i, t in enumerate(tangents) if not ad_helpers.is_zero(t)]
    out_tangents: list[Any] = [ad_helpers.zero_tangent(ad_helpers.aval_of(o)) for o in outs]
    # always taken from the public API: the jvp trace calls a rule only when some operand has a
    # nonzero tangent (ad.JVPTrace.process_primitive)
    if live:  # pragma: no branch
        through = optimization_barrier_p.bind(*[tangents[i] for i in live])
        for i, t in zip(live, through, strict=True):
            out_tangents[i] = t
    return list(outs), out_tangents


@optimization_barrier_p.def_transpose
def _barrier_transpose(cts, *args):
    live = [i for i, ct in enumerate(cts) if not isinstance(ct, Zero)]
    result: list[Any] = [
        Zero(a.aval) if isinstance(a, ad_helpers.UndefinedPrimal) else None for a in args
    ]
    # always taken from the public API: the backward pass keeps no symbolic Zero cotangent and
    # skips an equation none of whose outputs has a cotangent (ad.backward_pass)
    if live:  # pragma: no branch
        through = optimization_barrier_p.bind(*[cts[i] for i in live])
        for i, ct in zip(live, through, strict=True):
            result[i] = ct
    return result


@optimization_barrier_p.def_batch
def _barrier_batch(args, dims):
    return list(optimization_barrier_p.bind(*args)), list(dims)


optimization_barrier_p.def_mask(_passthrough_mask)


@optimization_barrier_p.def_lowering
def _barrier_lowering(ctx, *operands):
    if not operands:
        return []
    return list(ctx.hlo.OptimizationBarrierOp(list(operands)).results)


def optimization_barrier(operand: Any, /) -> Any:
    """The identity on the pytree ``operand``; on pjrt, a
    ``stablehlo.optimization_barrier`` that XLA does not move computations across."""
    tree = _tree()
    leaves, treedef = tree.tree_flatten(operand)
    return tree.tree_unflatten(treedef, optimization_barrier_p.bind(*leaves))


__all__ = [
    "stop_gradient",
    "optimization_barrier",
]
