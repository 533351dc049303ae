"""Looking at programs and types: ``make_jaxpr`` (the traced program,
printed as JAX prints a jaxpr), ``typeof`` and ``float0``.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from refimpl import _wraps, dtypes, key_jaxpr, ref_jaxpr, tracing
from refimpl.core import AbstractRef, Program, ShapedArray, Var
from refimpl.jaxpr_text import jaxpr_text
from refimpl.primitives import collectives
from refimpl.ref import Ref
from refimpl.transforms.jit import Jitted

float0 = dtypes.float0


# --- programs ----------------------------------------------------------------------------


def make_jaxpr(
    fun: Callable[..., Any],
    static_argnums: int | Sequence[int] = (),
    axis_env: Sequence[tuple[Any, int]] | None = None,
    return_shape: bool = False,
) -> Callable[..., Any]:
    """``jax.make_jaxpr``: a function returning ``fun``'s traced program.

    The result is refimpl's closed :class:`~refimpl.core.Program` (its
    constants included) as a :class:`ClosedJaxpr`, which prints JAX 0.10.2's
    jaxpr text (:mod:`refimpl.jaxpr_text`; the equations are refimpl's
    primitives). With ``return_shape=True`` it
    returns ``(program, shapes)``, ``shapes`` the output pytree of
    ``ShapeDtypeStruct``. ``axis_env``, a sequence of ``(name, size)``
    pairs, binds those axis names while ``fun`` is traced (as JAX), so a
    collective over them (``psum(x, 'i')``) is an equation of the program
    instead of an unbound-name ``NameError``.

    ``fun`` is traced as ``jit`` traces it (the same signature rules:
    Python scalars are weakly typed, ``static_argnums`` arguments are fixed
    Python values); nothing is compiled or run. It is ``make_program``
    under JAX's name.

    Args:
        fun: The function to trace.
        static_argnums: Positions of the arguments that are Python values
            fixed at trace time (not inputs of the program).
        axis_env: ``(axis_name, size)`` pairs bound while tracing, or None.
        return_shape: Whether to return the output shapes too.

    Returns:
        A function with ``fun``'s signature returning the traced
        :class:`ClosedJaxpr` (or ``(jaxpr, shapes)``).

    Raises:
        TypeError: ``fun`` is not callable, ``return_shape`` is not a
            bool or an ``axis_env`` size is not an int; at call time, an
            argument is not array-like or tracing ``fun`` fails (operands
            of incompatible shapes, ...).
        ValueError: ``axis_env`` is not a sequence of pairs.
        ConcretizationTypeError: ``fun`` used a traced value in Python
            control flow.

    Example:
        >>> import refimpl as ri, refimpl.numpy as rnp
        >>> print(ri.make_jaxpr(lambda x: rnp.sin(x) * 2.0)(1.0))
        { lambda ; a:f32[]. let b:f32[] = sin a; c:f32[] = mul b 2.0:f32[] in (c,) }
    """

    if not callable(fun):
        raise TypeError(f"make_jaxpr: expected a callable, got {type(fun).__name__}")
    axes = _check_axis_env(axis_env)
    if not isinstance(return_shape, bool):
        raise TypeError(f"make_jaxpr: return_shape must be a bool, got {return_shape!r}")
    jitted = Jitted(fun, static_argnums=static_argnums)

    def traced(*args: Any, **kwargs: Any) -> Any:
        with contextlib.ExitStack() as stack:
            for name, size in axes:
                stack.enter_context(collectives.bound_axis(name, size))
            result = jitted.trace_abstract(*args, **kwargs)  # duck-typed inputs too, as JAX
        program = _captured_as_consts(result.program, result.entry.captured)
        program = ClosedJaxpr.of(_refs_as_jax(program, result.entry))
        program.key_view = _keys_as_jax(program, result)
        if return_shape:
            return program, result.out_info
        return program

    # as JAX's: dressed as fun (_wraps.wraps), then named make_jaxpr(f) where
    # fun has names (a partial keeps its function's name, unprefixed); the
    # module is the library's (JAX: "jax")
    _wraps.wraps(fun)(traced)
    traced.__module__ = "refimpl"
    if hasattr(fun, "__qualname__"):
        traced.__qualname__ = f"make_jaxpr({fun.__qualname__})"
    if hasattr(fun, "__name__"):
        traced.__name__ = f"make_jaxpr({fun.__name__})"
    return traced


class ClosedJaxpr(Program):
    """What ``make_jaxpr`` returns: refimpl's closed :class:`Program` (every
    field and method of it, so transformations and ``eval_jaxpr`` take it
    as one), printed as JAX 0.10.2 prints a ClosedJaxpr
    (:func:`refimpl.jaxpr_text.jaxpr_text`: JAX's names, parameter
    rendering and layout, no weak-type mark) instead of refimpl's listing."""

    # the program as JAX shows it when the function takes or returns typed
    # keys (refimpl.key_jaxpr): its JAX spellings (``jaxpr``, ``invars``,
    # ``outvars``, the avals) and text are the view's; refimpl's fields
    # (``in_vars``, ``eqns``, ...) stay the program that runs
    key_view: Program | None = None

    @classmethod
    def of(cls, program: Program) -> ClosedJaxpr:
        return cls(**{f.name: getattr(program, f.name) for f in dataclasses.fields(Program)})

    @property
    def jaxpr(self) -> Program:
        return self if self.key_view is None else self.key_view

    @property
    def invars(self) -> list[Var]:
        return self.jaxpr.in_vars

    @property
    def outvars(self) -> list[Any]:
        return self.jaxpr.out_vars

    @property
    def in_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.jaxpr.in_vars]

    @property
    def out_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.jaxpr.out_vars]

    def __str__(self) -> str:
        return jaxpr_text(self.jaxpr)

    __repr__ = __str__

    def pretty_print(self, **options: Any) -> str:
        """JAX's ``ClosedJaxpr.pretty_print(use_color=False, ...)``: the text
        ``str`` gives. Its keyword options (``use_color``, ``source_info``,
        ``print_shapes``, ``name_stack``, ``width`` ...) are accepted;
        ``width`` sets the margin, the others change nothing (refimpl keeps
        no colours, source lines or name stacks)."""
        return jaxpr_text(self.jaxpr, options.get("width", 80))


def _captured_as_consts(program: Program, captured: list[Any]) -> Program:
    """The outer tracers ``fun`` closes over (under an enclosing ``vmap``,
    ``jit`` or ``grad``), which the jit's program takes as leading inputs,
    made its constants instead, as JAX 0.10.2's ``make_jaxpr`` (its
    ``consts`` hold the tracers; the inputs are ``fun``'s own), so
    ``eval_jaxpr(p.jaxpr, p.consts, *args)`` takes ``fun``'s arguments."""
    if not captured:
        return program
    k = len(captured)
    shardings = program.const_shardings
    return dataclasses.replace(
        program,
        in_vars=list(program.in_vars[k:]),
        const_vars=list(program.in_vars[:k]) + list(program.const_vars),
        consts=list(captured) + list(program.consts),
        const_shardings=[None] * k + list(shardings) if shardings else [],
    )


def _refs_as_jax(program: Program, entry: Any) -> Program:
    """The refs ``fun`` takes or closes over as JAX 0.10.2's ``make_jaxpr``
    shows them (``refimpl.ref_jaxpr``): Ref-typed inputs, the closed-over
    ones Ref-typed constants (``consts`` holds the ``Ref`` objects), no
    write-back outputs. A program whose refs do not fit those rules keeps
    refimpl's value-threaded form (the refs' values as inputs, their final
    values as the last outputs)."""
    if not entry.ref_leaves:
        return program
    shown = ref_jaxpr.with_refs(program, entry.ref_leaves, entry.closed_refs)
    return program if shown is None else shown


def _keys_as_jax(program: Program, traced: Any) -> Program | None:
    """The view of ``program`` with the typed keys ``fun`` takes and returns
    as JAX's jaxpr shows them (``refimpl.key_jaxpr``), or None when it takes
    and returns none (or refs: their view is ``_refs_as_jax``'s)."""
    if traced.entry.ref_leaves or ref_jaxpr.has_refs(program):
        return None
    in_keys = key_jaxpr.leaf_key_types(traced.in_tree, len(program.in_vars))
    out_keys = key_jaxpr.leaf_key_types(traced.out_tree, len(program.out_vars))
    if not any(k is not None for k in (*in_keys, *out_keys)):
        return None
    return key_jaxpr.with_keys(program, in_keys, out_keys)


def _check_axis_env(axis_env: Any) -> list[tuple[Any, int]]:
    if axis_env is None:
        return []
    try:
        pairs = [(name, size) for name, size in axis_env]
    except (TypeError, ValueError):
        # ValueError, as JAX's unpacking of a pair of another length
        raise ValueError(
            f"make_jaxpr: axis_env must be a sequence of (axis_name, size) pairs, got {axis_env!r}"
        ) from None
    for name, size in pairs:
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0:
            raise TypeError(
                f"make_jaxpr: axis_env size of axis {name!r} must be a non-negative int, "
                f"got {size!r}"
            )
    return [(name, int(size)) for name, size in pairs]


def typeof(x: Any) -> ShapedArray | AbstractRef:
    """The abstract value of ``x`` (shape, dtype, weak type), as ``jax.typeof``.

    A Python scalar is weakly typed (``~f32[]``); a tracer gives its aval
    (the type of one member under ``vmap``), so ``typeof`` works inside
    ``jit`` where the value is unknown; a ``Ref`` gives its ``Ref{...}``
    type. The result is refimpl's :class:`~refimpl.core.ShapedArray`
    (printed in the listing's short form), not JAX's ``ShapedArray``; it has
    no sharding or memory-space fields.

    Args:
        x: An array, NumPy array, Python scalar, tracer, ``Ref`` or typed
            key array (whose type is ``key<fry>[...]``, of the key dtype).

    Returns:
        ``x``'s :class:`~refimpl.core.ShapedArray`.

    Raises:
        TypeError: ``x`` is not array-like (a string, a list, ...).

    Example:
        >>> import numpy as np, refimpl as ri
        >>> print(ri.typeof(1.0), ri.typeof(np.ones((2, 3), np.float32)))
        ~float32[] float32[2,3]
    """

    if isinstance(x, Ref):
        return x.aval
    if isinstance(getattr(x, "dtype", None), dtypes.ExtendedDtype):
        # a typed key array (eager or over a tracer): its logical type,
        # ``key<fry>[3]`` as JAX 0.10.2, not the uint32 key data's under it
        return ShapedArray(tuple(x.shape), x.dtype)
    return tracing.get_aval(x, "typeof", 0)


__all__ = [
    "float0",
    "make_jaxpr",
    "typeof",
]
