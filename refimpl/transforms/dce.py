"""Dead-code elimination on Programs.

``dce_program(program, used_outputs)`` keeps the outputs marked used and
removes every equation none of whose outputs is needed (directly or through
later equations) to compute them. It returns the new Program and, per input
of the old one, whether the new one still reads it (the new Program takes
only those inputs). Constants nobody reads are dropped.

An equation whose outputs are partly used is kept whole, unless its
primitive has a DCE rule in ``dce_rules``:
``rule(eqn, used_outs) -> (new_eqn | None, used_inputs)``. ``new_eqn`` must
have exactly the outputs of ``eqn`` marked used (it may be a different
primitive); ``None`` deletes the equation. Primitives holding a Program
(``jit``, ``checkpoint``) get a rule that removes dead outputs and inputs of
the sub-program; ``remat_opt`` (``custom_vjp(optimize_remat=True)``) has
the rule that turns it into a call of the primal function when its residual
outputs are unused. ``scan`` keeps the carries its used outputs need,
through the loop (a fixpoint, as JAX's ``dce_jaxpr``) and drops the unused
``ys``;
``cond`` drops the unused outputs of every branch and the operands no
branch still reads. An equation with no used output is dead unless its
primitive is ``effectful`` (``debug_callback``: it has no outputs and exists
for its effect; ``io_callback``, kept with its results unused); no other
refimpl primitive has side effects.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from refimpl.core import Eqn, Literal, Program, subprograms
from refimpl.primitives.call import jit_call_p
from refimpl.primitives.control_flow import cond_p, scan_p

#: primitive -> rule(eqn, used_outs: list[bool]) -> (new eqn or None, used_inputs: list[bool])
dce_rules: dict[object, Callable[[Eqn, list[bool]], tuple[Eqn | None, list[bool]]]] = {}


def dce_program(
    program: Program, used_outputs: Sequence[bool] | None = None
) -> tuple[Program, list[bool]]:
    """``program`` restricted to the outputs marked in ``used_outputs`` (all
    by default), dead equations removed -> (new Program, used_inputs).
    The new Program's inputs are the old ones marked in ``used_inputs``."""
    if used_outputs is None:
        used_outputs = [True] * len(program.out_vars)
    if len(used_outputs) != len(program.out_vars):  # pragma: no cover - one flag per output
        raise ValueError(
            f"dce_program: used_outputs has {len(used_outputs)} entries for a program "
            f"with {len(program.out_vars)} outputs"
        )
    live: set[int] = set()
    out_vars = [a for a, u in zip(program.out_vars, used_outputs, strict=True) if u]
    for atom in out_vars:
        if not isinstance(atom, Literal):
            live.add(atom.id)
    new_eqns: list[Eqn] = []
    for eqn in reversed(program.eqns):
        used_outs = [v.id in live for v in eqn.outputs]
        if not any(used_outs) and not _has_effects(eqn):
            continue
        rule = dce_rules.get(eqn.primitive)
        new_eqn: Eqn | None
        if rule is None:
            new_eqn, used_ins = eqn, [True] * len(eqn.inputs)
        else:
            new_eqn, used_ins = rule(eqn, used_outs)
            if new_eqn is None:  # pragma: no cover - the protocol allows it; no rule does it yet
                continue
        new_eqns.append(new_eqn)
        for atom, used in zip(eqn.inputs, used_ins, strict=True):
            if used and not isinstance(atom, Literal):
                live.add(atom.id)
    new_eqns.reverse()
    used_inputs = [v.id in live for v in program.in_vars]
    consts = [
        (v, c) for v, c in zip(program.const_vars, program.consts, strict=True) if v.id in live
    ]
    # of the program's own class: make_jaxpr's ClosedJaxpr stays one (printed
    # as JAX's jaxpr, as JAX's dce_jaxpr gives a Jaxpr); constants' shardings
    # are not carried (as before)
    new = dataclasses.replace(
        program,
        in_vars=[v for v, u in zip(program.in_vars, used_inputs, strict=True) if u],
        eqns=new_eqns,
        out_vars=out_vars,
        const_vars=[v for v, _ in consts],
        consts=[c for _, c in consts],
        const_shardings=[],
    )
    return new, used_inputs


def live_program(program: Program) -> Program:
    """``program`` without the equations none of its outputs needs (sub-programs
    too, through the DCE rules), taking the same inputs and constants: what a
    backend runs for a jit, as JAX 0.10.2 removes dead code when it lowers a
    jit (``pe.dce_jaxpr``). So an equation whose result nothing reads is never
    evaluated: a ``custom_lin`` of a ``custom_vjp`` under ``jvp`` whose tangent
    is dropped (``jit(lambda x: jvp(f, (x,), (x,))[0])``) runs, as JAX's. The
    program itself stays as traced (``make_jaxpr`` shows the dead code, as
    JAX's); the result is kept on it (programs are not changed once traced)."""
    return _live(program)[0]


def _live(program: Program) -> tuple[Program, list[bool]]:
    """(:func:`live_program`, the inputs it reads), computed once per program."""
    held = program.__dict__.get("_live_program")
    if held is not None and held[0] == id(program):
        return held[1], held[2]
    pruned, used = dce_program(program)
    live = program
    if len(pruned.eqns) != len(program.eqns) or any(
        a is not b for a, b in zip(pruned.eqns, program.eqns, strict=True)
    ):
        live = dataclasses.replace(program, eqns=pruned.eqns)
    program.__dict__["_live_program"] = (id(program), live, used)
    return live, used


def placed_leaves(program: Program, leaves: list[Any], keep_unused: bool) -> list[Any]:
    """The argument leaves of a jit call of ``program`` that decide where it
    runs: JAX 0.10.2 drops the arguments its program does not read before
    placing the call (``jit``'s ``keep_unused=False``, the default), so an
    unused committed array neither moves the computation to its device nor
    clashes with another committed argument; the unused ones are None here.
    With ``keep_unused`` every leaf counts."""
    if keep_unused:
        return leaves
    used = _live(program)[1]
    if len(used) != len(leaves) or all(used):
        return leaves
    return [leaf if u else None for leaf, u in zip(leaves, used, strict=True)]


def kept_inputs(
    program: Program, donated: Sequence[bool], keep_unused: bool
) -> tuple[bool, ...] | None:
    """Which inputs of ``program`` a jit's executable takes, or None for all.

    JAX 0.10.2 prunes the inputs its program does not read before lowering
    (``keep_unused=False``, the default): its executable has no parameter
    for them, so they are never copied to the device and the lowered text's
    ``@main`` does not list them. Donated inputs are kept, whether read or
    not: refimpl deletes every donated array after a call (SPEC "Donation"),
    and only a buffer the executable takes can be given up to it. With
    ``keep_unused`` every input is a parameter."""
    if keep_unused:
        return None
    used = _live(program)[1]
    if len(used) != len(program.in_vars) or all(used):
        return None
    donated = list(donated) if len(donated) == len(used) else [False] * len(used)
    kept = tuple(bool(u or d) for u, d in zip(used, donated, strict=True))
    return None if all(kept) else kept


def with_params(eqn: Eqn, **changed: Any) -> dict[str, Any]:
    """``eqn``'s parameters with ``changed`` replaced, of the same mapping type
    (parameters that also answer to JAX's names keep doing so)."""
    params = copy.copy(eqn.params)
    params.update(changed)
    return params


def _has_effects(eqn: Eqn) -> bool:
    """Whether ``eqn`` is kept for its effect alone: its primitive is
    ``effectful`` or a sub-program holds such an equation (a ``debug.print``
    in a jit or checkpoint), as JAX's effects propagate to the equation."""
    if getattr(eqn.primitive, "effectful", False):
        return True
    return any(
        getattr(e.primitive, "effectful", False)
        for sub in subprograms(eqn)
        for e in sub.walk_eqns()
    )


def _call_rule(program_param: str) -> Callable:
    """The DCE rule of a call-like primitive whose sub-program is
    ``params[program_param]`` and whose operands are the sub-program's inputs."""

    def rule(eqn: Eqn, used_outs: list[bool]) -> tuple[Eqn | None, list[bool]]:
        sub = eqn.params[program_param]
        if all(used_outs):
            # the call whole: one live sub-program per sub-program, so the
            # calls of one jit still share it (one private function on pjrt)
            live = live_program(sub)
            if live is sub:
                return eqn, [True] * len(eqn.inputs)
            return Eqn(
                eqn.primitive, eqn.inputs, eqn.outputs, with_params(eqn, **{program_param: live})
            ), [True] * len(eqn.inputs)
        new_sub, used_ins = dce_program(sub, used_outs)
        params = with_params(eqn, **{program_param: new_sub})
        new_eqn = Eqn(
            eqn.primitive,
            [a for a, u in zip(eqn.inputs, used_ins, strict=True) if u],
            [v for v, u in zip(eqn.outputs, used_outs, strict=True) if u],
            params,
        )
        return new_eqn, used_ins

    return rule


def _taking(program: Program, original: Program, keep: Sequence[bool]) -> Program:
    """``program`` (a DCE of ``original``) taking ``original``'s inputs marked
    in ``keep``: a loop's carry or a branch's operand is an input whether or
    not this program still reads it."""
    in_vars = [v for v, k in zip(original.in_vars, keep, strict=True) if k]
    return dataclasses.replace(program, in_vars=in_vars)


def _scan_rule(eqn: Eqn, used_outs: list[bool]) -> tuple[Eqn | None, list[bool]]:
    """A carry is live when its output is used or the body computes a live
    output from it: grow the live carries until the body needs no other
    (JAX's fixpoint). Dead carries and unused ``ys`` leave the loop (a weak
    init returned as a dropped y keeps its weak cotangent: the scan's
    transposed body sums it from the body's other uses, as JAX's)."""
    body: Program = eqn.params["body"]
    n_consts, n_carry = eqn.params["num_consts"], eqn.params["num_carry"]
    live_carry, used_ys = list(used_outs[:n_carry]), list(used_outs[n_carry:])
    while True:
        new_body, used_ins = dce_program(body, live_carry + used_ys)
        reads = used_ins[n_consts : n_consts + n_carry]
        if not any(r and not c for r, c in zip(reads, live_carry, strict=True)):
            break
        live_carry = [c or r for c, r in zip(live_carry, reads, strict=True)]
    keep = used_ins[:n_consts] + live_carry + used_ins[n_consts + n_carry :]
    params = dict(eqn.params)
    params.update(
        body=_taking(new_body, body, keep),
        num_consts=sum(used_ins[:n_consts]),
        num_carry=sum(live_carry),
    )
    outputs = [v for v, k in zip(eqn.outputs, live_carry + used_ys, strict=True) if k]
    operands = [a for a, k in zip(eqn.inputs, keep, strict=True) if k]
    return Eqn(eqn.primitive, operands, outputs, params), keep


def _cond_rule(eqn: Eqn, used_outs: list[bool]) -> tuple[Eqn | None, list[bool]]:
    """Every branch loses the unused outputs; an operand stays when some
    branch still reads it (all branches take the same operands)."""
    branches: tuple[Program, ...] = eqn.params["branches"]
    pruned = [dce_program(b, used_outs) for b in branches]
    keep = [any(used[i] for _, used in pruned) for i in range(len(eqn.inputs) - 1)]
    params = dict(eqn.params)
    params["branches"] = tuple(_taking(new, b, keep) for (new, _), b in zip(pruned, branches))
    index, *operands = eqn.inputs
    new_eqn = Eqn(
        eqn.primitive,
        [index] + [a for a, k in zip(operands, keep, strict=True) if k],
        [v for v, u in zip(eqn.outputs, used_outs, strict=True) if u],
        params,
    )
    return new_eqn, [True] + keep


def _register_call_rules() -> None:
    dce_rules[jit_call_p] = _call_rule("program")
    dce_rules[scan_p] = _scan_rule
    dce_rules[cond_p] = _cond_rule


_register_call_rules()
