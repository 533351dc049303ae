"""The ``jit`` call primitive: a nested jitted function as one equation.

``outs = jit[name=f, program={...}](args)`` means: evaluate the sub-program on
the arguments. Its inputs must have exactly the sub-program's input types,
weak types included (the caller's jit cache made the sub-program for them).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl.core import Program, ShapedArray, avals_str
from refimpl.primitives.base import Primitive

jit_call_p = Primitive("jit", multiple_results=True)


@jit_call_p.def_abstract_eval
def _jit_call_abstract_eval(*avals: ShapedArray, program: Program, name: str) -> list[ShapedArray]:
    if list(avals) != program.in_avals:
        raise TypeError(
            f"jit({name}): called with ({avals_str(avals)}) but its program takes "
            f"({avals_str(program.in_avals)})"
        )
    return program.out_avals


@jit_call_p.def_impl
def _jit_call_impl(*args: np.ndarray, program: Program, name: str) -> list[Any]:
    from refimpl.interpreter import eval_program

    return eval_program(program, args)


@jit_call_p.def_lowering
def _jit_call_lowering(ctx: Any, *args: Any, program: Program, name: str) -> list[Any]:
    """A private function holding the sub-program, and a ``func.call`` of it
    (one function per sub-program, however often it is called)."""
    return ctx.call(program, name, args)
