"""Combining scatters along one axis: ``scatter_mul``, ``scatter_min``, ``scatter_max``.

They complete ``scatter``/``scatter_add`` of :mod:`refimpl.primitives.indexing`
(same operands, shapes, modes and index conventions) for
``x.at[idx].multiply/min/max`` and for ``divide``/``power`` (which JAX builds on
``scatter_mul``)::

    out = x.copy()
    for j in ndindex(indices.shape):               # row-major order
        i = indices[j]                              # out of range: dropped
        out[..., i, ...] = combine(out[..., i, ...], updates[..., j, ...])

with ``combine`` = ``*``, ``min``, ``max`` (NaN propagates through min/max, as
``np.minimum``). Each is commutative and associative, so repeated indices
give one answer whatever the order (for floats up to the rounding of ``*``).
``mode="clip"`` clamps out-of-range indices instead of dropping them.

Constraints: (C1) ``indices`` integers; (C2) ``updates.dtype == x.dtype``;
(C3) ``updates.shape == x.shape[:axis] + indices.shape + x.shape[axis+1:]``.
Example: ``scatter_max([0, 5, 0], [0, 0, 2], [3, 1, -1], axis=0)`` is
``[3, 5, 0]``.

Mask rule: the one of ``indexing.scatter_primitive`` (indices rewritten to
the unpadded program's bounds, padding rows dropped).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from refimpl import dtypes, tracing
from refimpl.primitives import ad_helpers, elementwise, indexing, structural
from refimpl.primitives.base import Primitive, normalize_axis

_COMBINE: dict[str, Callable[..., Any]] = {
    "scatter_mul": np.multiply,
    "scatter_min": np.minimum,
    "scatter_max": np.maximum,
}


def _combining_scatter(name: str) -> Primitive:
    """``indexing.scatter_primitive`` with ``name``'s combine: the same checks,
    NumPy impl (``ufunc.at`` in row-major order), StableHLO scatter (the
    combiner as its region) and batch rule as ``scatter``/``scatter_add``."""
    prim = indexing.scatter_primitive(name, _COMBINE[name])
    prim.def_lowering(indexing.scatter_lowering(lambda ctx, dtype: _hlo_combiner(ctx, name, dtype)))
    prim.def_batch(indexing._scatter_batch_rule(prim))
    return prim


def _hlo_combiner(ctx, name: str, dtype: np.dtype) -> Callable[..., Any]:
    if name == "scatter_mul":
        # unreachable from the public API: at[].multiply/divide/power, its only callers, refuse bool
        if dtypes.is_bool(dtype):  # pragma: no cover
            return ctx.hlo.and_
        return ctx.hlo.multiply
    if dtypes.is_bool(dtype):
        return ctx.hlo.and_ if name == "scatter_min" else ctx.hlo.or_
    return ctx.hlo.minimum if name == "scatter_min" else ctx.hlo.maximum


scatter_mul_p = _combining_scatter("scatter_mul")
scatter_min_p = _combining_scatter("scatter_min")
scatter_max_p = _combining_scatter("scatter_max")


# --- differentiation ----------------------------------------------------------------------


def _zero_result(x: Any, indices: Any, updates: Any, prim: Primitive, params: dict) -> tuple:
    ans = prim.bind(x, indices, updates, **params)
    return ans, ad_helpers.zero_tangent(ad_helpers.aval_of(ans))


@scatter_mul_p.def_jvp
def _scatter_mul_jvp(primals, tangents, *, axis, mode):
    """Linear in the operand: ``d out = scatter_mul(dx, indices, updates)``. The
    derivative in the updates is left out (as in JAX without unique indices):
    a nonzero update tangent is a NotImplementedError."""
    x, indices, updates = primals
    tx, _, tu = tangents
    if not ad_helpers.is_zero(tu):
        raise NotImplementedError(
            "scatter_mul: differentiation with respect to the updates is not implemented"
        )
    # unreachable from the public API: the updates' tangent is zero here and the indices (integers)
    # never have one, and the jvp trace calls a rule only when some operand has a nonzero tangent
    if ad_helpers.is_zero(tx):  # pragma: no cover
        return _zero_result(x, indices, updates, scatter_mul_p, {"axis": axis, "mode": mode})
    ans = scatter_mul_p.bind(x, indices, updates, axis=axis, mode=mode)
    return ans, scatter_mul_p.bind(tx, indices, updates, axis=axis, mode=mode)


@scatter_mul_p.def_transpose
def _scatter_mul_transpose(ct, x, indices, updates, *, axis, mode):
    """The operand's cotangent: ``ct`` multiplied at each place by the product
    of the updates that landed there (``scatter_mul`` is diagonal in ``x``)."""
    if isinstance(updates, ad_helpers.UndefinedPrimal):
        raise NotImplementedError("scatter_mul: transposing in the updates is not implemented")
    # unreachable from the public API: the backward pass skips an equation whose one output has
    # no cotangent and never passes a symbolic Zero to a single-output rule (ad.backward_pass)
    if isinstance(ct, ad_helpers.Zero):  # pragma: no cover
        return [ad_helpers.Zero(x.aval), None, None]
    return [scatter_mul_p.bind(ct, indices, updates, axis=axis, mode=mode), None, None]


def _extremal_jvp(prim: Primitive):
    def rule(primals, tangents, *, axis, mode):
        """The tangent of the winner; ties share it equally (JAX's rule): with
        ``k`` updates equal to the output at a place, and the operand too if it
        equals it, each contributes ``1 / (k + [operand ties])`` of its tangent."""
        x, indices, updates = primals
        tx, _, tu = tangents
        params = {"axis": axis, "mode": mode}
        ans = prim.bind(x, indices, updates, **params)
        # unreachable from the public API: the other operands are integers (never a nonzero
        # tangent), and the jvp trace calls a rule only when some operand has a nonzero tangent
        if ad_helpers.is_zero(tx) and ad_helpers.is_zero(tu):  # pragma: no cover
            return ans, ad_helpers.zero_tangent(ad_helpers.aval_of(ans))
        x_aval = ad_helpers.aval_of(x)
        u_aval = ad_helpers.aval_of(updates)
        tx = ad_helpers.instantiate(tx, ad_helpers.tangent_aval(x_aval))
        tu = ad_helpers.instantiate(tu, ad_helpers.tangent_aval(u_aval))
        gather_mode, fill = indexing._gather_mode(mode)
        at_updates = indexing.gather_along_axis_p.bind(
            ans, indices, axis=axis, mode=gather_mode, fill_value=fill
        )
        won = elementwise.eq(updates, at_updates)
        kept = elementwise.eq(x, ans)
        one = ad_helpers.scalar(1, x_aval)
        zero = ad_helpers.scalar(0, x_aval)
        zeros_x = ad_helpers.zeros(x_aval)
        ones_u = structural.broadcast_in_dim(one, u_aval.shape, ())
        zeros_u = structural.broadcast_in_dim(zero, u_aval.shape, ())
        count = indexing.scatter_add_p.bind(
            zeros_x, indices, elementwise.select(won, ones_u, zeros_u), **params
        )
        ones_x = structural.broadcast_in_dim(one, x_aval.shape, ())
        refs = elementwise.add(count, elementwise.select(kept, ones_x, zeros_x))
        share = elementwise.div(ones_x, elementwise.max(refs, ones_x))
        x_coef = elementwise.select(kept, share, zeros_x)
        u_share = indexing.gather_along_axis_p.bind(
            share, indices, axis=axis, mode=gather_mode, fill_value=fill
        )
        u_coef = elementwise.select(won, u_share, zeros_u)
        tangent = elementwise.add(
            elementwise.mul(x_coef, tx),
            indexing.scatter_add_p.bind(zeros_x, indices, elementwise.mul(u_coef, tu), **params),
        )
        return ans, tangent

    return rule


scatter_min_p.def_jvp(_extremal_jvp(scatter_min_p))
scatter_max_p.def_jvp(_extremal_jvp(scatter_max_p))


# --- the public lax functions ------------------------------------------------------------


def _bind(prim: Primitive, operand: Any, indices: Any, updates: Any, axis: int, mode: str):
    ndim = tracing.get_aval(operand, prim.name, 0).ndim
    axis = normalize_axis(prim.name, axis, ndim)
    mode = indexing._check_mode(prim.name, mode, indexing.SCATTER_MODES)
    return prim.bind(operand, indices, updates, axis=axis, mode=mode)


def scatter_mul_along_axis(operand: Any, indices: Any, updates: Any, axis: int = 0, *, mode="drop"):
    """``operand`` with ``operand[..., indices[j], ...] *= updates[..., j, ...]``."""
    return _bind(scatter_mul_p, operand, indices, updates, axis, mode)


def scatter_min_along_axis(operand: Any, indices: Any, updates: Any, axis: int = 0, *, mode="drop"):
    """``operand`` with ``operand[..., i, ...] = min(it, updates landing at i)``."""
    return _bind(scatter_min_p, operand, indices, updates, axis, mode)


def scatter_max_along_axis(operand: Any, indices: Any, updates: Any, axis: int = 0, *, mode="drop"):
    """``operand`` with ``operand[..., i, ...] = max(it, updates landing at i)``."""
    return _bind(scatter_max_p, operand, indices, updates, axis, mode)


__all__ = ["scatter_max_along_axis", "scatter_min_along_axis", "scatter_mul_along_axis"]
