"""Differentiation helpers of JAX's top-level namespace: ``jacobian``,
``custom_gradient``, ``closure_convert`` and ``fwd_and_bwd``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from refimpl import pytree
from refimpl.callbacks import _match_weak
from refimpl.core import Program
from refimpl.custom_derivatives import custom_vjp
from refimpl.dtypes import float0, is_inexact
from refimpl.introspection import typeof
from refimpl.primitives.call import jit_call_p
from refimpl.tracing import check_transform_fun
from refimpl.transforms.ad import _argnums_tuple, jacrev, vjp
from refimpl.transforms.jit import Jitted, ShapeDtypeStruct, jit

# --- differentiation -----------------------------------------------------------------------


def jacobian(
    fun: Callable[..., Any],
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    allow_int: bool = False,
) -> Callable[..., Any]:
    """``jax.jacobian``: the same as :func:`refimpl.jacrev`.

    The Jacobian of ``fun`` by reverse mode (one VJP per output element,
    vmapped): for an input of shape ``in`` and an output of shape ``out``
    it has shape ``out + in``, with pytrees nested outputs-first.

    Args:
        fun: The function to differentiate.
        argnums: The positional argument(s) to differentiate: an int, or a
            sequence of ints (the Jacobian is then a tuple over them).
        has_aux: Whether ``fun`` returns ``(value, aux)``; the result is then
            ``(jacobian, aux)``.
        holomorphic: Differentiate a complex ``fun`` of complex inputs as
            holomorphic.
        allow_int: Accept integer/bool inputs (their Jacobian is float0
            zeros).

    Returns:
        A function with ``fun``'s signature returning the Jacobian.

    Raises:
        TypeError: An input is an integer or bool without ``allow_int``, or
            an output is complex without ``holomorphic``.

    Example:
        >>> import numpy as np, refimpl as ri
        >>> ri.jacobian(lambda x: x**2)(np.array([1.0, 2.0], np.float32))
        Array([[2., 0.],
               [0., 4.]], dtype=float32)
    """

    return jacrev(fun, argnums, has_aux, holomorphic, allow_int)


class _VjpResidual:
    """A ``custom_gradient`` rule carried from the forward to the backward pass:
    the traced rule (static: the pytree's aux data) and the values it closes
    over (its children)."""

    def __init__(
        self, rule: Callable[..., Any], n_args: int, consts: list[Any], float0_mask: tuple
    ) -> None:
        self.rule = rule
        self.n_args = n_args
        self.consts = consts
        # per leaf of the value: True where its cotangent is float0 (an
        # integer or boolean output), which the traced rule does not take
        self.float0_mask = float0_mask


pytree.register_pytree_node(
    _VjpResidual,
    lambda r: (r.consts, (r.rule, r.n_args, r.float0_mask)),
    lambda aux, consts: _VjpResidual(aux[0], aux[1], list(consts), aux[2]),
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

    As in JAX, the function's value is the first element of the pair, and
    only reverse mode (``grad``, ``vjp``) uses ``vjp``; forward mode
    (``jvp``, ``jacfwd``) is an error, as for any ``custom_vjp``.

    Args:
        fun: A function of positional array arguments returning
            ``(value, vjp)``, where ``vjp(ct)`` maps a cotangent of
            ``value`` to the arguments' cotangents.

    Returns:
        A function with ``fun``'s positional signature returning ``value``.

    Raises:
        TypeError: ``fun`` is not callable; it is called with keyword
            arguments; it does not return a pair with a callable second
            element; ``vjp`` returns the wrong number of cotangents.

    Example:
        >>> import refimpl as ri, refimpl.numpy as rnp
        >>> @ri.custom_gradient
        ... def clip_gradient(x):
        ...     return x, lambda g: (rnp.clip(g, -1.0, 1.0),)
        >>> ri.grad(lambda x: 5.0 * clip_gradient(x))(2.0)
        Array(1., dtype=float32, weak_type=True)
    """

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
        leaves, tree = pytree.tree_flatten(value)
        avals = [typeof(v) for v in leaves]
        # the cotangent has the value's tangent type, as JAX traces the rule:
        # a float leaf's type, weak type included (JAX's seed for a weakly
        # typed output), and float0 zeros for an integer or boolean leaf
        mask = tuple(not is_inexact(a.dtype) for a in avals)

        def dense_rule(*dense: Any) -> Any:
            given = iter(dense)
            full = [np.zeros(a.shape, float0) if z else next(given) for a, z in zip(avals, mask)]
            return rule(pytree.tree_unflatten(tree, full))

        example = [_ShapeDtype(a) for a, z in zip(avals, mask) if not z]
        converted, consts = closure_convert(dense_rule, *example)
        return value, _VjpResidual(converted, len(args), consts, mask)

    def bwd(residual: _VjpResidual, ct: Any) -> tuple:
        ct_leaves = pytree.tree_leaves(ct)
        dense = [c for c, z in zip(ct_leaves, residual.float0_mask, strict=True) if not z]
        cts = residual.rule(*dense, *residual.consts)
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


def _ShapeDtype(aval: Any) -> Any:
    return ShapeDtypeStruct(tuple(aval.shape), aval.dtype, weak_type=aval.weak_type)


def closure_convert(fun: Callable[..., Any], *example_args: Any) -> tuple[Callable, list[Any]]:
    """``jax.closure_convert``: ``(converted, consts)`` with
    ``converted(*args, *consts) == fun(*args)``.

    ``consts`` are the traced values of enclosing transformations that
    ``fun`` closes over (what a ``custom_vjp`` rule may not capture); other
    closed-over values stay constants of the traced program, so outside any
    transformation ``consts`` is empty. ``fun`` is traced once, for the
    shapes of ``example_args``. (JAX also hoists closed-over float arrays
    into ``consts``; refimpl keeps them in the program.)

    Its use: a ``custom_vjp`` rule must not close over tracers, so a
    function built inside one (an optimizer's update, a solver's step) is
    converted and its ``consts`` passed explicitly (as residuals or
    arguments).

    Args:
        fun: The function to convert.
        *example_args: Arguments of the types ``converted`` will be called
            with (arrays or ``ShapeDtypeStruct``s).

    Returns:
        ``(converted, consts)``: ``converted(*args, *consts)`` computes
        ``fun(*args)``; ``consts`` is a list of the hoisted values.

    Raises:
        TypeError: ``fun`` is not callable; tracing ``fun`` fails; at call
            time, ``converted`` gets the wrong number or structure of
            arguments.
        NotImplementedError: ``fun`` takes ``Ref`` or float0 arguments.

    Example:
        >>> import refimpl as ri
        >>> def outer(y):
        ...     converted, consts = ri.closure_convert(lambda x: x * y, 1.0)
        ...     return len(consts), converted(2.0, *consts)
        >>> ri.jit(outer)(5.0)
        (Array(1, dtype=int32, weak_type=True), Array(10., dtype=float32, weak_type=True))
    """

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
    args_tree = pytree.tree_structure(tuple(example_args))

    def converted(*args_and_consts: Any) -> Any:
        # as JAX's: the last len(consts) values are the constants, the rest
        # the arguments, which must have the example arguments' tree
        n_args = max(len(args_and_consts) - len(consts), 0)
        args, closed = args_and_consts[:n_args], args_and_consts[n_args:]
        leaves, tree = pytree.tree_flatten((tuple(args), {}))
        if tree != in_tree:
            raise TypeError(
                f"closure_convert({jitted.__name__}): The inputs to the closure produced by "
                "closure_convert must have the same Pytree structure as the example arguments "
                f"passed when closure_convert was called. Expected {args_tree}, but got "
                f"{pytree.tree_structure(tuple(args))}"
            )
        if len(closed) != len(consts):
            raise TypeError(
                f"closure_convert({jitted.__name__}): expected {len(consts)} constants after "
                f"the arguments, got {len(closed)}"
            )
        leaves = [_match_weak(x, v.aval) for x, v in zip(leaves, program.in_vars[len(closed) :])]
        outs = jit_call_p.bind(*closed, *leaves, program=program, name=jitted.__name__)
        return pytree.tree_unflatten(entry.out_tree, outs)

    return converted, consts


def fwd_and_bwd(
    fun: Callable[..., Any],
    argnums: int | Sequence[int],
    has_aux: bool = False,
    jitted: bool = True,
) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """``jax.fwd_and_bwd``: the forward and backward passes of ``fun`` as two functions.

    ``fwd(*args)`` is :func:`refimpl.vjp` of ``fun`` with respect to the
    positional arguments ``argnums``; ``bwd(residuals, ct)`` applies the
    pullback. With ``jitted`` both are ``jit``s, so the residuals (a pytree)
    made by one call of ``fwd`` are reused by any number of ``bwd`` calls
    without retracing. As JAX 0.10.2, ``fwd`` ignores keyword arguments
    (``fun`` runs with its defaults).

    Args:
        fun: The function to differentiate.
        argnums: The positional argument(s) to differentiate (int or sequence).
        has_aux: Whether ``fun`` returns ``(out, aux)``.
        jitted: Whether ``fwd`` and ``bwd`` are jitted.

    Returns:
        ``(fwd, bwd)``: ``fwd(*args)`` returns ``(out, residuals)`` (``(out,
        residuals, aux)`` with ``has_aux``); ``bwd(residuals, ct)`` returns the
        cotangent of the argument ``argnums`` (a tuple of them for a sequence).

    Raises:
        TypeError: ``fun`` is not callable or ``argnums`` not ints.
        ValueError: ``argnums`` is out of range for ``fwd``'s arguments; ``ct``
            has another shape than the output (as :func:`refimpl.vjp`'s pullback).

    Example:
        >>> import refimpl as ri, refimpl.numpy as rnp
        >>> fwd, bwd = ri.fwd_and_bwd(lambda x, w: rnp.sum(x * w), argnums=1)
        >>> y, residuals = fwd(rnp.arange(3.0), rnp.ones(3))
        >>> bwd(residuals, 2.0)
        Array([0., 2., 4.], dtype=float32)
    """
    check_transform_fun(fun, "fwd_and_bwd")
    indices = _argnums_tuple("fwd_and_bwd", argnums)

    def fwd(*args: Any, **kwargs: Any) -> Any:
        if any(not -len(args) <= i < len(args) for i in indices):
            raise ValueError(
                f"jax.fwd_and_bwd: argnums {argnums} out of bounds for a function called "
                f"with {len(args)} positional arguments"
            )
        chosen = [i % len(args) for i in indices]

        def partial_fun(*dynamic: Any) -> Any:
            full = list(args)
            for i, value in zip(chosen, dynamic, strict=True):
                full[i] = value
            return fun(*full)

        return vjp(partial_fun, *[args[i] for i in chosen], has_aux=has_aux)

    def bwd(residuals: Any, cotangent: Any) -> Any:
        cotangents = residuals(cotangent)
        return cotangents[0] if isinstance(argnums, int) else cotangents

    return (jit(fwd), jit(bwd)) if jitted else (fwd, bwd)


__all__ = [
    "closure_convert",
    "custom_gradient",
    "fwd_and_bwd",
    "jacobian",
]
