"""Higher-order ``jax.lax`` functions: ``reduce`` (any computation), ``map``
(a ``scan``, optionally batched) and ``associative_scan`` (the
odd/even recursion).
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Callable, Sequence
from typing import Any

from refimpl import dtypes, pytree, tracing
from refimpl.lax._elementwise import _aval
from refimpl.primitives import ad_helpers, control_flow, reductions, structural
from refimpl.primitives import elementwise as ew
from refimpl.primitives.base import normalize_axis

# computation_program, _monoid_reducer: below the primitives' lax binders
# (reduce_window) that need them too
from refimpl.primitives.computations import _is_lax_function, _monoid_reducer, computation_program
from refimpl.transforms.batching import vmap

# --- reduce, map, associative_scan -----------------------------------------------------------


def reduce(
    operands: Any,
    init_values: Any,
    computation: Callable[[Any, Any], Any],
    dimensions: Sequence[int],
    out_sharding: Any = None,
) -> Any:
    """Reduce ``operands`` over ``dimensions`` with ``computation``.

    ``computation(accumulators, elements)`` takes and returns pytrees shaped
    as ``init_values`` (rank-0 values). As JAX, one operand whose computation
    is ``add``/``mul``/``max``/``min`` (``bitwise_or``/``bitwise_and``/``bitwise_xor`` on bools
    and integers) with that monoid's identity as a concrete init becomes
    ``reduce_sum`` etc.; anything else is the general ``reduce`` primitive,
    which folds each output's elements in order starting from the init.
    """

    tree = pytree
    flat_operands, treedef = tree.tree_flatten(operands)
    flat_inits, init_tree = tree.tree_flatten(init_values)
    if treedef != init_tree:
        raise ValueError(
            "reduce: Operands must have the same tree structure as init_values: "
            f"{treedef} vs. {init_tree}"
        )
    if not flat_operands:
        raise ValueError("reduce: needs at least one operand")
    dims = tuple(
        normalize_axis("reduce", d, _aval(flat_operands[0], "reduce").ndim, "dimensions")
        for d in dimensions
    )
    init_avals = [tracing.get_aval(v, "reduce", i) for i, v in enumerate(flat_inits)]
    program = computation_program("reduce", computation, init_avals, init_tree)
    if len(flat_operands) == 1:
        # as JAX: the identity is judged in the init value's own dtype; an init
        # of another dtype than the operand's reaches the reducer only through
        # lax.add etc. themselves (JAX's identity test), else the general
        # reduce rejects it
        reducer = _monoid_reducer(program, flat_inits[0])
        same = init_avals[0].dtype == _aval(flat_operands[0], "reduce").dtype
        if reducer is not None and (same or _is_lax_function(computation)):
            out = reducer(flat_operands[0], dims)
            weak = _aval(flat_operands[0], "reduce").weak_type and init_avals[0].weak_type
            if ad_helpers.aval_of(out).weak_type != weak:
                out = ew.convert_element_type_p.bind(
                    out, new_dtype=ad_helpers.aval_of(out).dtype, weak_type=weak
                )
            return tree.tree_unflatten(treedef, [out])
    outs = reductions.reduce_general(flat_operands, flat_inits, program, dims)
    return tree.tree_unflatten(treedef, outs)


def map(f: Callable[[Any], Any], xs: Any, *, batch_size: int | None = None) -> Any:  # noqa: A001
    """``f`` over the leading axis of the pytree ``xs``, as a scan (stacked
    results); with ``batch_size``, ``f`` is vmapped over chunks of that size
    and the remainder is vmapped on its own, as JAX."""

    leaves, _ = pytree.tree_flatten(xs)
    if not leaves:
        raise ValueError("map: xs must contain at least one array")
    n = _aval(leaves[0], "map").shape[0] if _aval(leaves[0], "map").ndim else None
    if n is None:
        raise ValueError("map: the leaves of xs must have a leading axis")
    if batch_size is None:
        _, ys = control_flow.scan(lambda c, x: (c, f(x)), None, xs)
        return ys
    try:  # an integer of any kind (a bool, a NumPy integer), as JAX's divmod takes
        batch_size = operator.index(batch_size)
    except TypeError:
        raise TypeError(
            f"map: batch_size must be a non-negative int, got {type(batch_size).__name__} "
            f"{batch_size!r}"
        ) from None
    if batch_size < 0:
        raise ValueError(f"map: batch_size must be a non-negative int, got {batch_size!r}")
    if batch_size == 0:  # JAX: no chunks, the whole axis is the remainder
        return vmap(f)(xs)

    tree = pytree
    batch_size = builtins.min(batch_size, n) if n else batch_size
    chunks, rest = divmod(n, batch_size) if n else (0, 0)

    def piece(start: int, stop: int) -> Any:
        return tree.tree_map(lambda x: structural.slice_in_dim(x, start, stop, 1, 0), xs)

    results = []
    if chunks or not n:  # an empty axis: a scan of no chunks, as JAX (results of length 0)
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
        raise TypeError("lax.associative_scan: fn argument should be callable.")
    tree = pytree
    flat, treedef = tree.tree_flatten(elems)
    if not flat:
        return elems
    ndim = _aval(flat[0], "associative_scan").ndim
    if ndim == 0:  # JAX 0.10.2's ValueError: a scalar has no axis to scan along
        raise ValueError(f"associative_scan: axis {axis} is out of bounds for array of dimension 0")
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
        if size == 2:
            # nothing left to combine: fn is not called on empty slices (a
            # batched fn such as vmap(solve) need not accept a zero-size batch)
            evens = [take(e, 2, None, 2) for e in es]
        elif size % 2 == 0:
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
