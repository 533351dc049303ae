"""A traced program's refs as JAX's jaxpr shows them (``make_jaxpr`` of a function using refs).

refimpl traces a ref by threading its value (``refimpl.ref``): a jit's
program takes each ref's value as an input and returns its final value as
an extra output, and ``get``/``swap``/``addupdate`` map values to values
(``d = a[...] <- c``: ``d`` is the ref's new value). JAX 0.10.2's
``make_jaxpr`` shows the refs themselves: a ref the function closes over is
a constant of type ``Ref{f32[3]}`` (``consts`` holds the ``Ref``), a Ref
argument an input of that type, and there are no write-back outputs; a
``swap`` returns the old value at its index (printed ``a[...] <- c`` when
nothing reads it) and ``addupdate`` returns nothing.

:func:`with_refs` rewrites the value-threaded program into that form. Each
ref's values form a chain: its input, then each ``swap``/``addupdate`` of
the current value makes the next (the trace reads and writes a ref's latest
value only). Equations on the chain are put on the ref; a nested ``jit``
taking a value of the chain is rewritten the same way inside; any other
equation taking one (a scan, a while, a cond, a ``scatter`` for a traced
index) reads the whole ref before it and, if it makes the ref's next value,
writes it back after. :func:`eval_with_refs` runs such a program: the
equations on a ref act on the ``Ref`` object (``refimpl.ref``), so a write
through a constant ``Ref`` happens when the program is evaluated, eagerly or
under a transformation.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, cast

from refimpl import ref as ref_mod
from refimpl import tracing
from refimpl.core import AbstractRef, Atom, Eqn, Literal, Program, ShapedArray, Var
from refimpl.primitives.ref_ops import addupdate_p, decode_indexer, get_p, swap_p

__all__ = ["eval_with_refs", "has_refs", "with_refs"]

_WHOLE = ("...",)


class _Unsupported(Exception):
    """The program's use of a ref's values does not fit the chain rules
    (make_jaxpr then keeps the value-threaded program)."""


def has_refs(program: Program) -> bool:
    """Whether ``program`` has Ref-typed constants or inputs (made by :func:`with_refs`)."""
    return any(type(v.aval) is AbstractRef for v in (*program.const_vars, *program.in_vars))


# --- rewriting ---------------------------------------------------------------------------------


def with_refs(
    program: Program, ref_inputs: Sequence[int], closed_refs: Sequence[Any]
) -> Program | None:
    """``program`` (a traced jit program after its captured tracers became
    constants) with its refs shown as JAX's: ``ref_inputs`` are the input
    positions holding a ref's value (the Ref arguments, then the closed-over
    refs, whose final values are the program's last outputs, in that order),
    the last ``len(closed_refs)`` of them the values of ``closed_refs``.
    None when a use of a ref's values does not fit the rules (the module
    docstring)."""
    if any(r._keys for r in closed_refs):  # key data in the program, key types in the Ref
        return None
    n_closed = len(closed_refs)
    n_user = len(program.out_vars) - len(ref_inputs)
    values = [program.in_vars[i] for i in ref_inputs]
    ref_vars = [_ref_var(v) for v in values]
    try:
        eqns, states = _thread(
            program.eqns, program.out_vars, dict(zip((v.id for v in values), ref_vars, strict=True))
        )
        finals = program.out_vars[n_user:]
        for final, ref_var in zip(finals, ref_vars, strict=True):
            if not isinstance(final, Var) or states.get(final.id) is not ref_var:
                raise _Unsupported
        outs = [_read_whole(a, states, eqns) for a in program.out_vars[:n_user]]
    except _Unsupported:
        return None
    by_position = dict(zip(ref_inputs, ref_vars, strict=True))
    closed_positions = set(ref_inputs[len(ref_inputs) - n_closed :])
    in_vars = [
        by_position.get(i, v) for i, v in enumerate(program.in_vars) if i not in closed_positions
    ]
    # The constants in the order the trace met them, as JAX's: a variable is
    # made at first use (a ref's value at its first touch), so by its id.
    shardings = program.const_shardings or [None] * len(program.const_vars)
    consts = [
        *zip(
            values[len(values) - n_closed :],
            ref_vars[len(ref_vars) - n_closed :],
            closed_refs,
            [None] * n_closed,
            strict=True,
        ),
        *zip(program.const_vars, program.const_vars, program.consts, shardings, strict=True),
    ]
    consts.sort(key=lambda c: c[0].id)
    return dataclasses.replace(
        program,
        in_vars=in_vars,
        eqns=eqns,
        out_vars=outs,
        const_vars=[c[1] for c in consts],
        consts=[c[2] for c in consts],
        const_shardings=[c[3] for c in consts] if program.const_shardings else [],
    )


def _ref_var(value: Var) -> Var:
    """A variable of type ``Ref{...}`` holding values like ``value``."""
    # Var is typed for arrays; a Ref type is one of the avals a program's
    # variables may have (AbstractRef has the fields listings read)
    return Var(cast(ShapedArray, AbstractRef(value.aval)))


def _last_uses(eqns: Sequence[Eqn], out_vars: Sequence[Atom]) -> dict[int, int]:
    """Per variable, the index of the last equation reading it (``len(eqns)``
    for an output of the program)."""
    last: dict[int, int] = {}
    for n, eqn in enumerate(eqns):
        for a in eqn.inputs:
            if isinstance(a, Var):
                last[a.id] = n
    for a in out_vars:
        if isinstance(a, Var):
            last[a.id] = len(eqns)
    return last


def _thread(
    eqns: Sequence[Eqn], out_vars: Sequence[Atom], states: dict[int, Var]
) -> tuple[list[Eqn], dict[int, Var]]:
    """``eqns`` with the equations on the refs' chains put on the refs.
    ``states`` maps each value of a chain seen so far to its ref's variable;
    it is returned with the values the equations made added."""
    last = _last_uses(eqns, out_vars)
    out: list[Eqn] = []
    for n, eqn in enumerate(eqns):
        on = [i for i, a in enumerate(eqn.inputs) if isinstance(a, Var) and a.id in states]
        if not on:
            out.append(eqn)
        elif on == [0] and eqn.primitive in (get_p, swap_p, addupdate_p):
            out.append(_on_ref(eqn, states))
        elif eqn.primitive.name == "jit":
            out.append(_jit_on_refs(eqn, on, states))
        else:
            out.extend(_around(eqn, on, states, last, n))
    return out, states


def _on_ref(eqn: Eqn, states: dict[int, Var]) -> Eqn:
    """A get, swap or addupdate of a chain's value as the same operation on its ref."""
    ref_var = states[eqn.inputs[0].id]  # type: ignore[union-attr]
    inputs = [ref_var, *eqn.inputs[1:]]
    if eqn.primitive is get_p:
        return dataclasses.replace(eqn, inputs=inputs)
    states[eqn.outputs[0].id] = ref_var  # the ref's next value: the ref itself
    if eqn.primitive is swap_p:  # JAX's swap returns the old value at the index
        old = Var(eqn.inputs[1].aval.update(weak_type=False))
        return dataclasses.replace(eqn, inputs=inputs, outputs=[old])
    return dataclasses.replace(eqn, inputs=inputs, outputs=[])


def _jit_on_refs(eqn: Eqn, on: list[int], states: dict[int, Var]) -> Eqn:
    """A nested jit given chain values: its program takes the refs (its last
    ``len(on)`` outputs, the refs' final values, dropped), rewritten inside."""
    inner: Program = eqn.params["program"]
    k = len(on)
    if len(eqn.outputs) < k:
        raise _Unsupported
    inner_refs = [_ref_var(inner.in_vars[i]) for i in on]
    starts = {inner.in_vars[i].id: r for i, r in zip(on, inner_refs, strict=True)}
    if len(starts) != k:
        raise _Unsupported
    n_user = len(inner.out_vars) - k
    eqns, inner_states = _thread(inner.eqns, inner.out_vars, starts)
    for final, r in zip(inner.out_vars[n_user:], inner_refs, strict=True):
        if not isinstance(final, Var) or inner_states.get(final.id) is not r:
            raise _Unsupported
    outs = [_read_whole(a, inner_states, eqns) for a in inner.out_vars[:n_user]]
    in_vars = list(inner.in_vars)
    for i, r in zip(on, inner_refs, strict=True):
        in_vars[i] = r
    program = dataclasses.replace(inner, in_vars=in_vars, eqns=eqns, out_vars=outs)
    inputs = list(eqn.inputs)
    for i in on:
        ref_var = states[inputs[i].id]  # type: ignore[union-attr]
        inputs[i] = ref_var
    for i, final in zip(on, eqn.outputs[n_user:], strict=True):
        states[final.id] = inputs[i]  # type: ignore[assignment]
    params = {**eqn.params, "program": program}
    return dataclasses.replace(eqn, inputs=inputs, outputs=eqn.outputs[:n_user], params=params)


def _around(
    eqn: Eqn, on: list[int], states: dict[int, Var], last: dict[int, int], n: int
) -> list[Eqn]:
    """Any other equation given chain values: each ref read whole before it;
    an output that is a ref's next value written back after it."""
    before: list[Eqn] = []
    inputs = list(eqn.inputs)
    refs: dict[int, tuple[Var, Var]] = {}  # ref var id -> (ref var, the value it took)
    for i in on:
        value: Var = inputs[i]  # type: ignore[assignment]
        ref_var = states[value.id]
        read = Var(value.aval)
        before.append(Eqn(get_p, [ref_var], [read], {"indexer": _WHOLE}))
        inputs[i] = read
        refs[ref_var.id] = (ref_var, value)
    after: list[Eqn] = []
    taken: set[int] = set()
    for ref_var, value in refs.values():
        if last.get(value.id, -1) > n:
            continue  # still the ref's value: the equation only read it
        nexts = [
            o
            for o in eqn.outputs
            if o.id not in taken
            and last.get(o.id, -1) > n
            and o.aval.shape == value.aval.shape
            and o.aval.dtype == value.aval.dtype
        ]
        if len(nexts) != 1:
            raise _Unsupported  # which output is the ref's next value is not clear
        (new,) = nexts
        taken.add(new.id)
        states[new.id] = ref_var
        old = Var(new.aval.update(weak_type=False))
        after.append(Eqn(swap_p, [ref_var, new], [old], {"indexer": _WHOLE}))
    return [*before, dataclasses.replace(eqn, inputs=inputs), *after]


def _read_whole(atom: Atom, states: dict[int, Var], eqns: list[Eqn]) -> Atom:
    """An output that is a chain's value: the ref read whole (appended to ``eqns``)."""
    if isinstance(atom, Literal) or atom.id not in states:
        return atom
    read = Var(atom.aval)
    eqns.append(Eqn(get_p, [states[atom.id]], [read], {"indexer": _WHOLE}))
    return read


# --- evaluating ----------------------------------------------------------------------------------


def eval_with_refs(program: Program, args: Sequence[Any]) -> list[Any]:
    """Evaluate ``program`` (its ``consts`` the values of its constants, Ref
    ones ``Ref`` objects) on ``args`` as ``tracing.eval_program_bind`` does,
    the equations on a ``Ref`` acting on it (a write happens now, or is
    traced as a write to that ref under a transformation)."""
    return tracing.eval_program_bind(program, list(args), _apply_on_ref)


def _apply_on_ref(eqn: Eqn, values: list[Any]) -> list[Any] | None:
    """The outputs of ``eqn`` on ``values`` when one is a Ref; None otherwise."""
    if not any(isinstance(v, ref_mod.Ref) for v in values):
        return None
    if eqn.primitive.name == "jit":  # inlined: its program acts on the refs too
        return eval_with_refs(eqn.params["program"], values)
    ref, *rest = values
    if not isinstance(ref, ref_mod.Ref) or eqn.primitive not in (get_p, swap_p, addupdate_p):
        raise TypeError(f"eval_jaxpr: a Ref is an operand of {eqn.primitive.name}")
    idx = decode_indexer(eqn.params["indexer"])
    if eqn.primitive is get_p:
        return [ref_mod.get(ref, idx)]
    if eqn.primitive is swap_p:
        return [ref_mod.swap(ref, idx, rest[0])]
    ref_mod.addupdate(ref, idx, rest[0])
    return []
