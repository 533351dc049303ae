"""User computations of ``reduce`` and ``reduce_window`` as Programs:
``computation_program`` traces ``computation(accumulators, elements)``;
``_monoid_reducer`` recognises a traced computation that is one monoid
primitive (add, mul, max, min, or, and, xor) with its identity as the init, which
``lax.reduce`` and ``lax.reduce_window`` turn into the reduce_* primitives
(as JAX's monoid path). ``refimpl.lax._higher_order`` exports them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from refimpl import dtypes, pytree, tracing
from refimpl.primitives import bits, reductions
from refimpl.primitives import elementwise as ew


def computation_program(name: str, computation: Any, init_avals: list, init_tree: Any) -> Any:
    """``computation(accumulators, elements)`` (pytrees shaped as the init
    values) traced on rank-0 values of the init values' types: a Program of
    ``2n`` inputs and ``n`` outputs (JAX's ``_variadic_reduction_jaxpr``).
    ``lax.add`` etc. on one operand in a pytree get the bare values (JAX's
    monoid path never calls them on the pytree)."""

    tree = pytree
    n = len(init_avals)
    if n == 1 and _is_lax_function(computation):
        init_tree = tree.tree_structure(0)

    def fun(*args: Any) -> list[Any]:
        acc = tree.tree_unflatten(init_tree, list(args[:n]))
        elem = tree.tree_unflatten(init_tree, list(args[n:]))
        out_flat, out_tree = tree.tree_flatten(computation(acc, elem))
        if out_tree != init_tree and name.startswith("reduce_window"):  # JAX's words
            raise ValueError(
                f"{name}: reduce_window output must have the same tree structure as the "
                f"operands {init_tree} vs. {out_tree}"
            )
        if out_tree != init_tree:
            raise ValueError(
                f"{name}: the computation must return the init values' structure {init_tree}, "
                f"got {out_tree}"
            )
        return out_flat

    avals = [*init_avals, *init_avals]
    origins = [f"an argument of the {name} computation"] * (2 * n)
    program, captured, _ = tracing.trace_to_program(fun, avals, name, origins)
    if captured:
        raise NotImplementedError(
            f"{name}: the computation closes over traced values; pass them as operands instead"
        )
    return program


def _is_lax_function(fn: Any) -> bool:
    """Whether ``fn`` is one of refimpl's lax monoid functions (the module's
    or the public, possibly wrapped, one: refimpl.lax's wrappers, Python or
    C++, name the module's function as ``__wrapped__``)."""
    names = ("add", "mul", "max", "min", "bitwise_or", "bitwise_and", "bitwise_xor")
    fn = getattr(fn, "__wrapped__", fn)
    return any(fn is getattr(ew, n) for n in names)


# primitive of a one-equation computation -> (reducer, identity of a dtype)
def _monoid_table() -> dict:
    return {
        ew.add_p: (reductions.reduce_sum, dtypes.zero),
        ew.mul_p: (reductions.reduce_prod, lambda d: np.ones((), d)),
        ew.max_p: (reductions.reduce_max, dtypes.min_value),
        ew.min_p: (reductions.reduce_min, dtypes.max_value),
        ew.or_p: (reductions.reduce_or, dtypes.zero),
        ew.and_p: (reductions.reduce_and, lambda d: np.asarray(-1).astype(d)),
        ew.xor_p: (bits.reduce_xor, dtypes.zero),
    }


def _monoid_reducer(program: Any, init: Any) -> Callable[..., Any] | None:
    """The reduce_* function when ``program`` is one equation of a monoid's
    primitive on its two inputs and ``init`` is concrete and its identity.
    JAX recognises ``lax.add`` etc. by identity; refimpl reads the traced
    computation, so ``operator.add`` or a wrapped ``lax.add`` count too."""
    try:
        value = np.asarray(init)
    except Exception:  # a tracer: not concrete, no monoid
        return None
    if value.shape != () or value.dtype == object:
        return None
    if len(program.eqns) != 1 or program.consts:
        return None
    (eqn,) = program.eqns
    ins = program.in_vars
    if eqn.outputs != list(program.out_vars) or len(eqn.inputs) != 2:
        return None
    if not all(a is b for a, b in zip(eqn.inputs, ins, strict=True)) and not all(
        a is b for a, b in zip(eqn.inputs, ins[::-1], strict=True)
    ):
        return None
    entry = _monoid_table().get(eqn.primitive)
    if entry is None:
        return None
    reducer, identity = entry
    dtype = program.in_avals[0].dtype
    if eqn.primitive in (ew.or_p, ew.and_p, ew.xor_p) and not (
        dtypes.is_bool(dtype) or dtypes.is_integer(dtype)
    ):
        return None
    return reducer if np.array_equal(value.astype(dtype), identity(dtype)) else None
