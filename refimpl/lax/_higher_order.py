"""Higher-order ``jax.lax`` functions: ``reduce`` (monoids only), ``map``
(a ``scan``, optionally batched) and ``associative_scan`` (the
odd/even recursion).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from refimpl import dtypes, tree_util
from refimpl.lax._elementwise import _aval
from refimpl.primitives import ad_helpers, reductions, structural
from refimpl.primitives import elementwise as ew
from refimpl.primitives.base import normalize_axis

# --- reduce, map, associative_scan -----------------------------------------------------------


def _is(fn: Any, name: str) -> bool:
    """Whether ``fn`` is refimpl's lax function ``name`` (the module's or the
    public, possibly wrapped, one)."""
    if fn is getattr(ew, name, None):
        return True
    from refimpl import lax

    return fn is getattr(lax, name, None)


def _monoid_reducer(computation: Any, init: Any) -> Callable[..., Any] | None:
    """The reduce_* function for ``computation`` with identity ``init``, as
    JAX's ``_get_monoid_reducer``: only a concrete init equal to the identity."""
    try:
        value = np.asarray(init)
    except Exception:  # a tracer: not concrete, no monoid
        return None
    if value.shape != () or value.dtype == object:
        return None
    aval = _aval(init, "reduce")
    dtype = aval.dtype
    if _is(computation, "add"):
        return reductions.reduce_sum if value == 0 else None
    if _is(computation, "mul"):
        return reductions.reduce_prod if value == 1 else None
    if _is(computation, "max"):
        return reductions.reduce_max if value == dtypes.min_value(dtype) else None
    if _is(computation, "min"):
        return reductions.reduce_min if value == dtypes.max_value(dtype) else None
    if _is(computation, "bitwise_or") and dtypes.is_bool(dtype):
        return reductions.reduce_or if not value else None
    if _is(computation, "bitwise_and") and dtypes.is_bool(dtype):
        return reductions.reduce_and if value else None
    return None


def reduce(
    operands: Any,
    init_values: Any,
    computation: Callable[[Any, Any], Any],
    dimensions: Sequence[int],
    out_sharding: Any = None,
) -> Any:
    """Reduce ``operands`` over ``dimensions`` with ``computation``.

    As JAX, a single operand whose computation is ``lax.add``/``mul``/``max``/
    ``min`` (or ``bitwise_or``/``bitwise_and`` on bools) with that monoid's
    identity as ``init_values`` becomes ``reduce_sum`` etc. refimpl has no
    general reduce primitive, so anything else raises NotImplementedError.
    """
    tree = tree_util
    flat_operands, treedef = tree.tree_flatten(operands)
    flat_inits, init_tree = tree.tree_flatten(init_values)
    if treedef != init_tree:
        raise ValueError(
            "reduce: operands and init_values must have the same tree structure, got "
            f"{treedef} and {init_tree}"
        )
    dims = tuple(
        normalize_axis("reduce", d, _aval(flat_operands[0], "reduce").ndim, "dimensions")
        for d in dimensions
    ) if flat_operands else ()  # fmt: skip
    if len(flat_operands) == 1:
        # as JAX: the identity is judged in the init value's own dtype
        reducer = _monoid_reducer(computation, flat_inits[0])
        if reducer is not None:
            return tree.tree_unflatten(treedef, [reducer(flat_operands[0], dims)])
    name = getattr(computation, "__name__", repr(computation))
    raise NotImplementedError(
        f"reduce: computation {name} with these init_values is not a known monoid "
        "(lax.add/mul/max/min with the identity as init, or bitwise_or/bitwise_and on "
        "bools), and refimpl has no general reduce primitive"
    )


def map(f: Callable[[Any], Any], xs: Any, *, batch_size: int | None = None) -> Any:  # noqa: A001
    """``f`` over the leading axis of the pytree ``xs``, as a scan (stacked
    results); with ``batch_size``, ``f`` is vmapped over chunks of that size
    and the remainder is vmapped on its own, as JAX."""
    from refimpl.primitives import control_flow

    leaves, _ = tree_util.tree_flatten(xs)
    if not leaves:
        raise ValueError("map: xs must contain at least one array")
    n = _aval(leaves[0], "map").shape[0] if _aval(leaves[0], "map").ndim else None
    if n is None:
        raise ValueError("map: the leaves of xs must have a leading axis")
    if batch_size is None:
        _, ys = control_flow.scan(lambda c, x: (c, f(x)), None, xs)
        return ys
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"map: batch_size must be a positive int, got {batch_size!r}")
    from refimpl.transforms.batching import vmap

    tree = tree_util
    batch_size = builtins.min(batch_size, n) if n else batch_size
    chunks, rest = divmod(n, batch_size) if n else (0, 0)

    def piece(start: int, stop: int) -> Any:
        return tree.tree_map(lambda x: structural.slice_in_dim(x, start, stop, 1, 0), xs)

    results = []
    if chunks:
        main = tree.tree_map(
            lambda x: structural.reshape(x, (chunks, batch_size) + _aval(x, "map").shape[1:]),
            piece(0, chunks * batch_size),
        )
        _, ys = control_flow.scan(lambda c, x: (c, vmap(f)(x)), None, main)
        ys = tree.tree_map(
            lambda y: structural.reshape(y, (chunks * batch_size,) + _aval(y, "map").shape[2:]),
            ys,
        )
        results.append(ys)
    if rest:
        results.append(vmap(f)(piece(chunks * batch_size, n)))
    if len(results) == 1:
        return results[0]
    return tree.tree_map(lambda a, b: structural.concatenate([a, b], 0), *results)


def _interleave(evens: Any, odds: Any, axis: int) -> Any:
    """``evens[0], odds[0], evens[1], ...`` along ``axis``: both spread with
    zero gaps (interior padding), then added (or-ed for bools), as JAX."""
    aval = ad_helpers.aval_of(evens)
    n_even, n_odd = aval.shape[axis], ad_helpers.aval_of(odds).shape[axis]
    even_cfg = [(0, 0, 0)] * aval.ndim
    odd_cfg = [(0, 0, 0)] * aval.ndim
    even_cfg[axis] = (0, 1 if n_even == n_odd else 0, 1)
    odd_cfg[axis] = (1, 0 if n_even == n_odd else 1, 1)
    zero = ad_helpers.scalar(0, aval)
    a = structural.pad_p.bind(evens, zero, padding_config=tuple(even_cfg))
    b = structural.pad_p.bind(odds, ad_helpers.scalar(0, ad_helpers.aval_of(odds)),
                              padding_config=tuple(odd_cfg))  # fmt: skip
    return ew.bitwise_or(a, b) if dtypes.is_bool(aval.dtype) else ew.add(a, b)


def associative_scan(fn: Callable, elems: Any, reverse: bool = False, axis: int = 0) -> Any:
    """Inclusive scan of the pytree ``elems`` along ``axis`` with the
    associative ``fn(a, b)`` (``a`` the earlier elements), by the odd/even
    parallel prefix (Blelloch's): combine neighbouring pairs, scan those
    recursively (results at odd positions), then combine each with the
    next even element. ``reverse`` scans from the end: element ``i`` is
    ``fn(fn(x[n-1], x[n-2]), ..., x[i])``."""
    if not callable(fn):
        raise TypeError("associative_scan: fn argument should be callable.")
    tree = tree_util
    flat, treedef = tree.tree_flatten(elems)
    if not flat:
        return elems
    ndim = _aval(flat[0], "associative_scan").ndim
    axis = normalize_axis("associative_scan", axis, ndim)
    n = _aval(flat[0], "associative_scan").shape[axis]
    for leaf in flat[1:]:
        if _aval(leaf, "associative_scan").shape[axis] != n:
            raise ValueError(
                "associative_scan: array inputs must have the same size along the scan "
                f"axis, saw {[_aval(e, 'associative_scan').shape for e in flat]}"
            )
    if reverse:
        flat = [structural.rev(e, (axis,)) for e in flat]

    def combine(a_flat: list, b_flat: list) -> list:
        out = fn(tree.tree_unflatten(treedef, a_flat), tree.tree_unflatten(treedef, b_flat))
        out_flat, _ = tree.tree_flatten(out)
        return out_flat

    def take(x: Any, start: int, stop: int | None, step: int) -> Any:
        size = _aval(x, "associative_scan").shape[axis]
        stop = size if stop is None else (stop + size if stop < 0 else stop)
        return structural.slice_in_dim(x, start, builtins.max(stop, start), step, axis)

    def scan(es: list) -> list:
        size = _aval(es[0], "associative_scan").shape[axis]
        if size < 2:
            return es
        reduced = combine([take(e, 0, -1, 2) for e in es], [take(e, 1, None, 2) for e in es])
        odds = scan(reduced)
        if size % 2 == 0:
            evens = combine([take(o, 0, -1, 1) for o in odds], [take(e, 2, None, 2) for e in es])
        else:
            evens = combine(odds, [take(e, 2, None, 2) for e in es])
        evens = [
            structural.concatenate([take(e, 0, 1, 1), r], axis)
            for e, r in zip(es, evens, strict=True)
        ]
        return [_interleave(e, o, axis) for e, o in zip(evens, odds, strict=True)]

    out = scan(flat)
    if reverse:
        out = [structural.rev(e, (axis,)) for e in out]
    return tree.tree_unflatten(treedef, out)


__all__ = [
    "reduce",
    "map",
    "associative_scan",
]
