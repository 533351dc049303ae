"""``jax.core``: the public names of JAX's core that libraries use.

``Tracer`` is the base of every refimpl tracer (jit/staging, ``jvp``/``grad``,
``vmap``), so ``isinstance(x, jax.core.Tracer)`` tells a traced value from a
concrete one as in JAX; ``ShapedArray`` is the abstract value of an array
(``AbstractValue`` names the same type); ``Trace`` is the base of the
transformations' traces. ``eval_jaxpr(jaxpr, consts, *args)`` evaluates a
:class:`refimpl.core.Program` (what ``make_jaxpr`` returns; its ``.jaxpr`` is
itself) with the given constants, binding each equation's primitive as
JAX's does, so it runs eagerly, is traced under ``jit`` and transformed
under ``grad``/``vmap``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from refimpl import key_jaxpr, ref_jaxpr, tracing
from refimpl.array import as_array
from refimpl.contexts import ensure_compile_time_eval
from refimpl.core import Program, ShapedArray
from refimpl.tracing import Trace, Tracer

__all__ = [
    "AbstractValue",
    "ShapedArray",
    "Trace",
    "Tracer",
    "ensure_compile_time_eval",
    "eval_context",
    "eval_jaxpr",
]

AbstractValue = ShapedArray

# JAX 0.10.2's jax.core.eval_context: inside a trace, operations on values
# that are not tracers run now (the name JAX's ensure_compile_time_eval builds on)
eval_context = ensure_compile_time_eval


def eval_jaxpr(jaxpr: Program, consts: Sequence[Any], *args: Any) -> list[Any]:
    """``jax.core.eval_jaxpr``: the outputs of ``jaxpr`` on ``args``, with
    ``consts`` for its constants (``make_jaxpr(f)(...)`` gives both:
    ``eval_jaxpr(p.jaxpr, p.consts, *args)``).

    Each equation's primitive is bound again, as JAX: outside a
    transformation the program runs; under one it is transformed. An
    output that is an input is that argument as given; a literal output is
    an array.

    Args:
        jaxpr: The program (a :class:`refimpl.core.Program`).
        consts: One value per constant of the program.
        *args: One value per input of the program.

    Returns:
        The list of the program's outputs.

    Raises:
        TypeError: ``jaxpr`` is not a Program.
        ValueError: The number of ``consts`` or ``args`` is not the
            program's.

    Example:
        >>> import refimpl as ri
        >>> from refimpl import core_api
        >>> p = ri.make_jaxpr(lambda x: x * 2.0)(1.0)
        >>> core_api.eval_jaxpr(p.jaxpr, p.consts, 3.0)
        [Array(6., dtype=float32, weak_type=True)]
    """
    if not isinstance(jaxpr, Program):
        raise TypeError(
            f"eval_jaxpr: expected a Program (make_jaxpr's), got {type(jaxpr).__name__}"
        )
    # ValueError, JAX's class for a count that does not match
    if len(consts) != len(jaxpr.const_vars):
        raise ValueError(
            f"eval_jaxpr: the program has {len(jaxpr.const_vars)} constants, got {len(consts)}"
        )
    if len(args) != len(jaxpr.in_vars):
        raise ValueError(
            f"eval_jaxpr: the program has {len(jaxpr.in_vars)} inputs, got {len(args)}"
        )
    # make_jaxpr's typed keys (its ClosedJaxpr, jaxpr_as_fun's, or its .jaxpr):
    # key arrays in and out, their data run
    view = getattr(jaxpr, "key_view", None) or jaxpr
    if isinstance(view, key_jaxpr.KeyView):
        return key_jaxpr.eval_view(view, consts, args, eval_jaxpr)
    program = dataclasses.replace(jaxpr, consts=list(consts))
    if ref_jaxpr.has_refs(program):  # make_jaxpr's Ref constants or inputs: act on them
        outs = ref_jaxpr.eval_with_refs(program, args)
    else:
        outs = tracing.eval_program_bind(program, list(args))
    return [as_array(v) if isinstance(v, tracing.TypedScalar) else v for v in outs]
