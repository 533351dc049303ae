"""Differentiation helpers of JAX's top-level namespace: ``jacobian``,
``custom_gradient`` and ``closure_convert``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from refimpl import tree_util
from refimpl.callbacks import _match_weak
from refimpl.core import Program
from refimpl.introspection import typeof

# --- differentiation -----------------------------------------------------------------------


def jacobian(
    fun: Callable[..., Any],
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    allow_int: bool = False,
) -> Callable[..., Any]:
    """``jax.jacobian``: the same as :func:`refimpl.jacrev`."""
    from refimpl.transforms.ad import jacrev

    return jacrev(fun, argnums, has_aux, holomorphic, allow_int)


class _VjpResidual:
    """A ``custom_gradient`` rule carried from the forward to the backward pass:
    the traced rule (static: the pytree's aux data) and the values it closes
    over (its children)."""

    def __init__(self, rule: Callable[..., Any], n_args: int, consts: list[Any]) -> None:
        self.rule = rule
        self.n_args = n_args
        self.consts = consts


tree_util.register_pytree_node(
    _VjpResidual,
    lambda r: (r.consts, (r.rule, r.n_args)),
    lambda aux, consts: _VjpResidual(aux[0], aux[1], list(consts)),
)


def custom_gradient(fun: Callable[..., Any]) -> Callable[..., Any]:
    """``jax.custom_gradient``: ``fun(*args)`` returns ``(value, vjp)`` and
    differentiation uses ``vjp(ct)`` (a tuple of one cotangent per positional
    argument, or the single cotangent of a one-argument function).

    Built on :func:`refimpl.custom_vjp`: the forward pass runs ``fun`` once
    and traces ``vjp`` for a cotangent of the value's type
    (:func:`closure_convert`); the values it closes over are the residuals,
    and the backward pass runs the traced rule on them. Keyword arguments are
    a ``TypeError``.
    """
    from refimpl.custom_derivatives import custom_vjp

    if not callable(fun):
        raise TypeError(f"custom_gradient: expected a callable, got {type(fun).__name__}")
    name = getattr(fun, "__name__", "fun")

    def split(args: tuple) -> tuple[Any, Callable]:
        out = fun(*args)
        if not (isinstance(out, tuple) and len(out) == 2 and callable(out[1])):
            raise TypeError(
                f"custom_gradient({name}): the function must return a pair (value, vjp_fn) "
                f"with a callable vjp_fn, got {type(out).__name__}"
            )
        return out

    @custom_vjp
    def wrapped(*args: Any) -> Any:
        return split(args)[0]

    def fwd(*args: Any) -> Any:
        value, rule = split(args)
        example = tree_util.tree_map(lambda v: _ShapeDtype(np.shape(v), typeof(v).dtype), value)
        converted, consts = closure_convert(rule, example)
        return value, _VjpResidual(converted, len(args), consts)

    def bwd(residual: _VjpResidual, ct: Any) -> tuple:
        cts = residual.rule(ct, *residual.consts)
        n_args = residual.n_args
        if n_args == 1 and not isinstance(cts, tuple):
            cts = (cts,)
        if not isinstance(cts, tuple) or len(cts) != n_args:
            raise TypeError(
                f"custom_gradient({name}): vjp_fn must return a tuple of {n_args} "
                f"cotangent(s), one per positional argument, got {cts!r:.80}"
            )
        return cts

    wrapped.defvjp(fwd, bwd)

    @functools.wraps(fun)
    def call(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            raise TypeError(
                f"custom_gradient({name}): keyword arguments are not supported by refimpl; "
                f"pass {sorted(kwargs)} positionally"
            )
        return wrapped(*args)

    return call


def _ShapeDtype(shape: tuple, dtype: Any) -> Any:
    from refimpl.transforms.jit import ShapeDtypeStruct

    return ShapeDtypeStruct(tuple(shape), dtype)


def closure_convert(fun: Callable[..., Any], *example_args: Any) -> tuple[Callable, list[Any]]:
    """``jax.closure_convert``: ``(converted, consts)`` with
    ``converted(*args, *consts) == fun(*args)``.

    ``consts`` are the traced values of enclosing transformations that
    ``fun`` closes over (what a ``custom_vjp`` rule may not capture); other
    closed-over values stay constants of the traced program, so outside any
    transformation ``consts`` is empty. ``fun`` is traced once, for the
    shapes of ``example_args``.
    """
    from refimpl.primitives.call import jit_call_p
    from refimpl.transforms.jit import Jitted

    if not callable(fun):
        raise TypeError(f"closure_convert: expected a callable, got {type(fun).__name__}")
    jitted = Jitted(fun)
    call = jitted._split_args(example_args, {})
    entry = jitted._lookup(call)
    if entry.ref_leaves or entry.float0 is not None:
        raise NotImplementedError(
            "closure_convert: functions with Ref or float0 arguments are not supported"
        )
    program: Program = entry.program
    consts = list(entry.captured)
    in_tree = call.signature.in_tree
    n_args = len(example_args)

    def converted(*args_and_consts: Any) -> Any:
        if len(args_and_consts) != n_args + len(consts):
            raise TypeError(
                f"closure_convert({jitted.__name__}): expected {n_args} arguments and "
                f"{len(consts)} constants, got {len(args_and_consts)} values"
            )
        args, closed = args_and_consts[:n_args], args_and_consts[n_args:]
        leaves, tree = tree_util.tree_flatten((tuple(args), {}))
        if tree != in_tree:
            raise TypeError(
                f"closure_convert({jitted.__name__}): arguments have structure {tree}, "
                f"the example arguments had {in_tree}"
            )
        leaves = [_match_weak(x, v.aval) for x, v in zip(leaves, program.in_vars[len(closed) :])]
        outs = jit_call_p.bind(*closed, *leaves, program=program, name=jitted.__name__)
        return tree_util.tree_unflatten(entry.out_tree, outs)

    return converted, consts


__all__ = [
    "closure_convert",
    "custom_gradient",
    "jacobian",
]
