"""A program's effects, as JAX's ``ClosedJaxpr.effects`` lists them.

JAX records on each jaxpr the set of effects its equations have beyond
computing their outputs (``jax.extend.core.Effect``). refimpl's programs
carry no such set: :func:`program_effects` reads it off the equations, for
a program's ``effects`` (:attr:`refimpl.core.Program.effects`, so
``make_jaxpr``'s result and its sub-programs have them, as JAX's):

* a ref the program takes or closes over (a Ref-typed input or constant,
  as ``make_jaxpr`` shows them, ``refimpl.ref_jaxpr``) read by ``get`` is a
  :class:`ReadEffect` of it, written by ``swap`` a :class:`WriteEffect`,
  added to by ``addupdate`` an :class:`AccumEffect`; a nested ``jit``'s
  effects on its Ref inputs are those of the refs it is given;
* ``jax.debug.print``/``debug.callback`` is :data:`debug_effect`, an
  ``io_callback`` :data:`io_effect` (:data:`ordered_io_effect` when
  ``ordered=True``), wherever they are, sub-programs included.

A program with none has the empty set (``no_effects``), as JAX's. The other
effects JAX knows (collectives' axis names, named-axis checks, ...) are not
modelled: refimpl has no use for them.
"""

from __future__ import annotations

from typing import Any

from refimpl import core
from refimpl.core import AbstractRef, Program, Var, subprograms

__all__ = [
    "AccumEffect",
    "DebugEffect",
    "Effect",
    "Effects",
    "IOEffect",
    "OrderedIOEffect",
    "ReadEffect",
    "RefEffect",
    "WriteEffect",
    "debug_effect",
    "io_effect",
    "no_effects",
    "ordered_io_effect",
    "program_effects",
]


class Effect:
    """An effect of a program (``jax.extend.core.Effect``)."""


Effects = frozenset  # JAX's ``Effects``: a set of them
no_effects: frozenset[Effect] = frozenset()


# effects with no data: one object of each class, as JAX's


class DebugEffect(Effect):
    """A ``jax.debug`` callback (``debug.print``, ``debug.callback``)."""


class IOEffect(Effect):
    """An ``io_callback`` with ``ordered=False``."""


class OrderedIOEffect(Effect):
    """An ``io_callback`` with ``ordered=True``."""


debug_effect = DebugEffect()
io_effect = IOEffect()
ordered_io_effect = OrderedIOEffect()


class RefEffect(Effect):
    """An access to a ref the program takes or closes over: ``input`` is the
    program's Ref-typed input or constant variable (JAX's attribute name)."""

    def __init__(self, input: Var) -> None:
        self.input = input

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, RefEffect) and type(other) is type(self) and other.input is self.input
        )

    def __hash__(self) -> int:
        return hash((type(self), id(self.input)))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.input.aval.str_short()})"


class ReadEffect(RefEffect):
    """The ref is read (``get``, ``x_ref[...]``)."""


class WriteEffect(RefEffect):
    """The ref is written (``swap``, ``x_ref[...] = v``)."""


class AccumEffect(RefEffect):
    """The ref is added to (``addupdate``)."""


_REF_EFFECTS: dict[str, type[RefEffect]] = {
    "get": ReadEffect,
    "swap": WriteEffect,
    "addupdate": AccumEffect,
}


def program_effects(program: Program) -> set[Effect]:
    """The effects of ``program``'s equations (the module docstring)."""
    refs = {v.id: v for v in (*program.const_vars, *program.in_vars) if type(v.aval) is AbstractRef}
    found: set[Effect] = set()
    for eqn in program.eqns:
        name = eqn.primitive.name
        first = eqn.inputs[0] if eqn.inputs else None
        if name in _REF_EFFECTS and isinstance(first, Var) and first.id in refs:
            found.add(_REF_EFFECTS[name](refs[first.id]))
        elif name in ("debug_callback", "debug_print"):
            found.add(debug_effect)
        elif name == "io_callback":
            found.add(ordered_io_effect if eqn.params.get("ordered") else io_effect)
        elif name == "jit":
            found |= _called(eqn.params["program"], eqn.inputs, refs)
        else:
            for sub in subprograms(eqn):
                found |= {e for e in program_effects(sub) if not isinstance(e, RefEffect)}
    return found


def _called(sub: Program, operands: list[Any], refs: dict[int, Var]) -> set[Effect]:
    """A nested jit's effects seen from outside: an effect on its Ref input
    is one on the ref it is given."""
    given = {v.id: a for v, a in zip(sub.in_vars, operands, strict=True)}
    found: set[Effect] = set()
    for effect in program_effects(sub):
        if not isinstance(effect, RefEffect):
            found.add(effect)
            continue
        outer = given.get(effect.input.id)
        if isinstance(outer, Var) and outer.id in refs:
            found.add(type(effect)(refs[outer.id]))
    return found


core.PROGRAM_EFFECTS.append(program_effects)
