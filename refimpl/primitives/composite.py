"""``lax.composite``: a function named as one operation, computed by its decomposition.

``outs = composite[name=n, version=v, attributes=..., program={...}](args)``
means: evaluate the sub-program (the decomposition traced on the arguments'
types, with the call's keyword arguments as static attributes). As JAX
0.10.2's composite:

* it is evaluated, staged by ``jit`` and ``eval_shape``d like any call;
* it has no differentiation rule: ``jvp``/``grad``/``vjp``/``linearize`` raise
  JAX's ``ValueError`` ("JVP rule for composite not implemented ..."), which
  points to ``custom_jvp``;
* it has no batching rule (``vmap`` raises ``NotImplementedError``);
* its decomposition may not close over a traced value (an argument of an
  enclosing ``jit``, ``vmap``...): JAX's ``UnexpectedTracerError``.

JAX lowers it to ``stablehlo.composite`` (a backend may match the name); the
pjrt backend lowers a ``func.call`` of the decomposition, which computes the
same values (docs/semantics.md, "lax.composite").
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from refimpl import pytree, tracing
from refimpl.core import Program, ShapedArray, avals_str
from refimpl.errors import UnexpectedTracerError
from refimpl.primitives import rule_context
from refimpl.primitives.base import Primitive

__all__ = ["composite"]

composite_p = Primitive("composite", multiple_results=True)

_NO_JVP = (
    "JVP rule for composite not implemented. You can use `jax.custom_jvp` to add support. "
    "See https://docs.jax.dev/en/latest/_autosummary/jax.custom_jvp.html"
)


@composite_p.def_abstract_eval
def _abstract_eval(*avals: ShapedArray, program: Program, **_: Any) -> list[ShapedArray]:
    if [a.strip_weak() for a in avals] != [a.strip_weak() for a in program.in_avals]:
        raise TypeError(
            f"composite: called with ({avals_str(avals)}) but its decomposition takes "
            f"({avals_str(program.in_avals)})"
        )
    return program.out_avals


@composite_p.def_impl
def _impl(*args: np.ndarray, program: Program, **_: Any) -> list[Any]:
    return rule_context.eval_program(program, args)


@composite_p.def_lowering
def _lowering(ctx: Any, *args: Any, program: Program, name: str, **_: Any) -> list[Any]:
    return ctx.call(program, name, args)


@composite_p.def_jvp
def _jvp(primals: list, tangents: list, **_: Any) -> Any:
    raise ValueError(_NO_JVP)


def _linearize(primals: list, tangents: list, **_: Any) -> Any:
    raise ValueError(_NO_JVP)


composite_p.linearize_rule = _linearize


def _attribute(value: Any) -> Any:
    """A static attribute as an equation parameter (hashable: an array by its
    dtype, shape and values)."""
    if isinstance(value, np.ndarray | np.generic):
        array = np.asarray(value)
        return ("array", array.dtype.name, array.shape, tuple(array.ravel().tolist()))
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


def composite(decomposition: Callable[..., Any], name: str, version: int = 0) -> Callable[..., Any]:
    """``jax.lax.composite``: ``decomposition`` as one operation named ``name``.

    The returned function takes array arguments (a pytree of them) and static
    keyword attributes, passed on to ``decomposition``."""

    @functools.wraps(decomposition)
    def call(*args: Any, **attributes: Any) -> Any:
        flat, in_tree = pytree.tree_flatten(args)
        avals = [tracing.get_aval(x, name, i) for i, x in enumerate(flat)]
        if any(isinstance(v, tracing.Tracer) for v in attributes.values()):
            # an attribute is static: a traced one is refused up front, as in
            # JAX 0.10.2, whether or not the decomposition reads it
            raise UnexpectedTracerError(
                f"Found a JAX Tracer as an attribute in the decomposition for the composite "
                f"op '{name}'. This means that the decomposition function closes over a value "
                "that is involved in a JAX transformation. Any values that aren't explicitly "
                "known at compile time must be explicitly passed as arguments to the composite."
                "\n\nNote: If you are passing jax arrays as attributes, use numpy arrays instead."
            )
        out_tree: list[Any] = []

        def flat_decomposition(*tracers: Any) -> list[Any]:
            out = decomposition(*pytree.tree_unflatten(in_tree, tracers), **attributes)
            leaves, tree = pytree.tree_flatten(out)
            out_tree.append(tree)
            return leaves

        program, captured, _ = tracing.trace_to_program(
            flat_decomposition, avals, name, [f"composite {name!r}"] * len(avals)
        )
        if captured:
            raise UnexpectedTracerError(
                f"Found a JAX Tracer as a constant in the decomposition for the composite op "
                f"'{name}'. This means that the decomposition function closes over a value "
                "that is involved in a JAX transformation. Any values that aren't explicitly "
                "known at compile time must be explicitly passed as arguments to the composite."
                "\n\nNote: If you are passing jax arrays as attributes, use numpy arrays instead."
            )
        outs = composite_p.bind(
            *flat,
            program=program,
            name=name,
            version=version,
            attributes=tuple((k, _attribute(v)) for k, v in sorted(attributes.items())),
        )
        return pytree.tree_unflatten(out_tree[0], outs)

    return call
