"""``debug_callback``: call a Python function on the runtime values of its operands.

The one primitive with an effect and no outputs. ``callback`` (a static
parameter, compared by identity) receives the operands as NumPy arrays each
time the program runs (``refimpl.debug``; docs/semantics.md "debug.print and
debug.callback").

* impl: calls ``callback(*operands)``; the reference interpreter runs every
  equation in program order, so it happens at execution, once per run.
* jvp: the callback sees the primals; the primitive has no outputs, so there
  are no tangents (as JAX). Under ``grad`` it runs in the forward pass.
* batch: unrolled over the batch axis, one call per element, as JAX 0.10.2.
* DCE keeps it (``effectful``): it has no outputs to be used.
* PJRT: no host callbacks through the plugin's C API. A callback at the top
  level of a jitted program becomes extra outputs of the compiled program and
  runs after it (``refimpl.backends.pjrt.backend``; nested ``jit``,
  ``checkpoint`` and custom-derivative calls with callbacks are inlined
  first; in a scan body the operands become stacked ``ys`` and the callbacks
  run per iteration; a cond returns every branch's operands and the chosen
  branch's callbacks run); anywhere else (a while body, a pmap) the lowering
  is a NotImplementedError.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl.core import ShapedArray
from refimpl.primitives.base import Primitive
from refimpl.transforms import batching

__all__ = ["debug_callback_p"]

debug_callback_p = Primitive("debug_callback", multiple_results=True)
debug_callback_p.effectful = True  # type: ignore[attr-defined]


@debug_callback_p.def_abstract_eval
def _abstract_eval(*avals: ShapedArray, callback: Any, name: str) -> list[ShapedArray]:
    return []


@debug_callback_p.def_impl
def _impl(*values: Any, callback: Any, name: str) -> list[Any]:
    callback(*values)
    return []


@debug_callback_p.def_jvp
def _jvp(primals, tangents, *, callback, name):
    debug_callback_p.bind(*primals, callback=callback, name=name)
    return [], []


@debug_callback_p.def_batch
def _batch(args, dims, *, callback, name):
    size = batching.axis_size_of(args, dims)
    leading = [a if d is None else batching.moveaxis(a, d, 0) for a, d in zip(args, dims)]
    for i in range(size):
        row = [a if d is None else a[i] for a, d in zip(leading, dims, strict=True)]
        debug_callback_p.bind(*row, callback=callback, name=name)
    return [], []


@debug_callback_p.def_lowering
def _lowering(*args: Any, **kwargs: Any) -> Any:
    name = kwargs.get("name", "debug.callback")
    raise NotImplementedError(
        f"{name} on the pjrt backend runs only at the top level of a jitted program "
        "(nested jit, checkpoint, custom_jvp, custom_vjp, scan bodies and cond branches "
        "included): not inside a while_loop body, a pmap or a program lowered for other platforms "
        '(the plugin has no host callbacks); use jit(..., backend="ref") for such programs'
    )


def has_callbacks(program: Any) -> bool:
    """Whether ``program`` or any of its sub-programs has a debug_callback."""
    return any(eqn.primitive is debug_callback_p for eqn in program.walk_eqns())


def split_top_level_callbacks(program: Any) -> tuple[Any, list[tuple]]:
    """``program`` without its debug_callback equations, their operands
    appended as extra outputs, and what to call after a run, in program order.

    Each item is ``("call", callback, operands)``, an operand being
    ``("out", k)`` (the k-th extra output) or ``("lit", value)`` (a literal,
    kept on the host), or ``("scan", length, reverse, base, n, items)``: a
    scan whose body had callbacks; its body's ``n`` extra outputs became
    stacked ``ys`` at extra outputs ``base ... base + n - 1`` and ``items``
    (indexing those ``n``) run once per iteration, in iteration order. Nested
    ``jit``, ``checkpoint`` and custom-derivative calls with callbacks are
    inlined first. A callback anywhere else (while, cond) stays, and its
    lowering raises.

    Without callbacks to split, ``(program, [])``: the same object.
    """
    return _split(_inline_calls_with_callbacks(program))


def _split(program: Any) -> tuple[Any, list[tuple]]:
    from refimpl.core import Literal, Program, Var
    from refimpl.primitives.control_flow import cond_p, scan_p

    def splittable(eqn: Any) -> bool:
        if eqn.primitive is debug_callback_p:
            return True
        if eqn.primitive is cond_p:
            return any(has_callbacks(b) for b in eqn.params["branches"])
        return eqn.primitive is scan_p and has_callbacks(eqn.params["body"])

    if not any(splittable(eqn) for eqn in program.eqns):
        return program, []
    eqns, extra, items = [], [], []
    for eqn in program.eqns:
        if eqn.primitive is debug_callback_p:
            operands = []
            for atom in eqn.inputs:
                if isinstance(atom, Literal):
                    operands.append(("lit", atom.value))
                else:
                    operands.append(("out", len(extra)))
                    extra.append(atom)
            items.append(("call", eqn.params["callback"], operands))
        elif eqn.primitive is cond_p and splittable(eqn):
            split_cond = _split_cond(eqn)
            if split_cond is None:
                eqns.append(eqn)
                continue
            new_eqn, extra_avals, branch_items = split_cond
            outs = [Var(aval) for aval in extra_avals]
            eqns.append(new_eqn.__class__(new_eqn.primitive, new_eqn.inputs,
                                          [*eqn.outputs, *outs], new_eqn.params))  # fmt: skip
            index = eqn.inputs[0]
            if isinstance(index, Literal):
                where = ("lit", index.value)
            else:
                where = ("out", len(extra))
                extra.append(index)
            items.append(("cond", where, len(extra), branch_items))
            extra.extend(outs)
        elif splittable(eqn):
            params = eqn.params
            body, body_items = _split(_inline_calls_with_callbacks(params["body"]))
            n = len(body.out_vars) - len(params["body"].out_vars)
            if not body_items:  # a callback the split cannot reach (a while in the body)
                eqns.append(eqn)
                continue
            length = params["length"]
            stacked = [
                Var(ShapedArray((length, *a.aval.shape), a.aval.dtype, a.aval.weak_type))
                for a in body.out_vars[len(body.out_vars) - n :]
            ]
            eqns.append(
                eqn.__class__(
                    eqn.primitive, eqn.inputs, [*eqn.outputs, *stacked], {**params, "body": body}
                )  # fmt: skip
            )
            items.append(("scan", length, params["reverse"], len(extra), n, body_items))
            extra.extend(stacked)
        else:
            eqns.append(eqn)
    split = Program(
        in_vars=program.in_vars,
        eqns=eqns,
        out_vars=[*program.out_vars, *extra],
        const_vars=program.const_vars,
        consts=program.consts,
    )
    return split, items


def _split_cond(eqn: Any) -> tuple[Any, list, list] | None:
    """A cond whose branches have callbacks -> (the cond returning every
    branch's callback operands as extra outputs, their avals, per branch
    ``(offset, n, items)``), or None when a branch's callback cannot be split.

    Branch ``i`` returns its own operands in its slots and zeros in the
    other branches' (every branch must return the same types); after the
    call only the chosen branch's callbacks run, on its slots.
    """
    from refimpl.core import Literal, Program, Var
    from refimpl.primitives.structural import broadcast_in_dim_p

    splits = [_split(_inline_calls_with_callbacks(b)) for b in eqn.params["branches"]]
    originals = eqn.params["branches"]
    per_branch = []  # (avals of its extra outputs, items)
    for (branch, items), original in zip(splits, originals, strict=True):
        if has_callbacks(original) and not items:
            return None  # e.g. a while inside the branch: its lowering raises
        per_branch.append(([a.aval for a in branch.out_vars[len(original.out_vars) :]], items))
    slots, offset = [], 0
    for avals, items in per_branch:
        slots.append((offset, len(avals), items))
        offset += len(avals)
    all_avals = [aval for avals, _ in per_branch for aval in avals]
    branches = []
    for number, (branch, _) in enumerate(splits):
        n_own = len(originals[number].out_vars)
        own_extra = branch.out_vars[n_own:]
        eqns, outs = list(branch.eqns), list(branch.out_vars[:n_own])
        for other, (avals, _) in enumerate(per_branch):
            if other == number:
                outs.extend(own_extra)
                continue
            for aval in avals:
                scalar = ShapedArray((), aval.dtype, aval.weak_type)
                zero = Literal(np.zeros((), aval.dtype), scalar)
                var = Var(aval)
                params = {"shape": aval.shape, "broadcast_dimensions": ()}
                eqns.append(eqn.__class__(broadcast_in_dim_p, [zero], [var], params))
                outs.append(var)
        branches.append(
            Program(
                in_vars=branch.in_vars,
                eqns=eqns,
                out_vars=outs,
                const_vars=branch.const_vars,
                consts=branch.consts,
            )  # fmt: skip
        )
    params = {**eqn.params, "branches": tuple(branches)}
    return eqn.__class__(eqn.primitive, eqn.inputs, eqn.outputs, params), all_avals, slots


def run_callbacks(items: list[tuple], extra: list[Any]) -> None:
    """Run the split-off callbacks (:func:`split_top_level_callbacks`) on the
    host values ``extra`` of the extra outputs, in program order."""
    import numpy as np

    for item in items:
        if item[0] == "call":
            _, callback, operands = item
            callback(*[np.asarray(extra[k]) if kind == "out" else k for kind, k in operands])
            continue
        if item[0] == "cond":
            _, (kind, index), base, branch_items = item
            chosen = int(np.asarray(extra[index]) if kind == "out" else index)
            if not 0 <= chosen < len(branch_items):
                chosen = len(branch_items) - 1  # out of range runs the last branch (cond_p)
            offset, n, inner = branch_items[chosen]
            run_callbacks(inner, extra[base + offset : base + offset + n])
            continue
        _, length, reverse, base, n, body_items = item
        stacked = extra[base : base + n]
        for t in reversed(range(length)) if reverse else range(length):
            run_callbacks(body_items, [ys[t] for ys in stacked])


def _inline_calls_with_callbacks(program: Any) -> Any:
    """``program`` with each top-level ``jit``, ``checkpoint``, ``custom_jvp``
    or ``custom_vjp`` call whose sub-program has a callback replaced by that
    sub-program's equations (recursively, on fresh variables: one sub-program
    may be called several times)."""
    from refimpl.ad_checkpoint import remat_p
    from refimpl.core import Literal, Program, Var
    from refimpl.custom_derivatives import custom_jvp_call_p, custom_vjp_call_p
    from refimpl.primitives.call import jit_call_p

    # calls whose value is their program applied to their inputs (and the name
    # of that program's parameter): inlining one changes no value. A checkpoint
    # loses only its memory-saving barrier; a custom_jvp/custom_vjp call its
    # rules, which only differentiation (already done when lowering) reads.
    calls = {jit_call_p: "program", remat_p: "program", custom_jvp_call_p: "call",
             custom_vjp_call_p: "call"}  # fmt: skip

    def inlined(eqn: Any) -> Any:
        key = calls.get(eqn.primitive)
        sub = eqn.params.get(key) if key is not None else None
        if sub is None or not has_callbacks(sub):
            return None
        if len(sub.in_vars) != len(eqn.inputs) or len(sub.out_vars) != len(eqn.outputs):
            return None
        return sub

    if not any(inlined(eqn) is not None for eqn in program.eqns):
        return program
    subst: dict[int, Any] = {}  # outer variable id -> the atom standing for it now
    consts_vars, consts = list(program.const_vars), list(program.consts)

    def read(env: dict[int, Any], atom: Any) -> Any:
        return atom if isinstance(atom, Literal) else env.get(atom.id, atom)

    eqns = []
    for eqn in program.eqns:
        inputs = [read(subst, a) for a in eqn.inputs]
        sub = inlined(eqn)
        if sub is None:
            eqns.append(eqn.__class__(eqn.primitive, inputs, eqn.outputs, eqn.params))
            continue
        sub = _inline_calls_with_callbacks(sub)
        env: dict[int, Any] = {v.id: a for v, a in zip(sub.in_vars, inputs, strict=True)}
        for var, value in zip(sub.const_vars, sub.consts, strict=True):
            fresh = Var(var.aval)
            consts_vars.append(fresh)
            consts.append(value)
            env[var.id] = fresh
        for inner in sub.eqns:
            outs = [Var(v.aval) for v in inner.outputs]
            env.update((v.id, n) for v, n in zip(inner.outputs, outs, strict=True))
            new_inputs = [read(env, a) for a in inner.inputs]
            eqns.append(inner.__class__(inner.primitive, new_inputs, outs, inner.params))
        for var, atom in zip(eqn.outputs, sub.out_vars, strict=True):
            subst[var.id] = read(env, atom)
    return Program(
        in_vars=program.in_vars,
        eqns=eqns,
        out_vars=[read(subst, a) for a in program.out_vars],
        const_vars=consts_vars,
        consts=consts,
    )


def _pp(outs: str, args: list[str], params: dict[str, Any]) -> str:
    # the callback's repr (a closure's address) says nothing; its kind does
    return f"debug_callback[{params['name']}] {' '.join(args)}"


debug_callback_p.pp_rule = _pp  # type: ignore[attr-defined]
