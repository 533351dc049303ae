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
* PJRT: a host callback inside the compiled program
  (refimpl.backends.pjrt.host_callbacks): the ``refimpl_host_callback``
  custom call with a side effect, run by the plugin at execution on an XLA
  thread (with the GIL), wherever it is: top level, nested calls, scan, cond
  and while bodies, pmap replicas (each replica calls back). Program order
  is kept by a dependency chain (lowering.ModuleBuilder.effect_dependency);
  the call returns after its callbacks ran (backend._run waits).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl.core import Literal, Program, ShapedArray, Var
from refimpl.primitives import batch_rules
from refimpl.primitives.base import Primitive
from refimpl.primitives.call import jit_call_p

__all__ = ["debug_callback_p", "debug_print_p", "has_callbacks", "inline_calls_with_callbacks"]

debug_callback_p = Primitive("debug_callback", multiple_results=True)
#: ``jax.debug.print``'s own primitive, as JAX 0.10.2's: debug_callback's
#: rules, with JAX's parameters (``fmt``, ``in_tree``, ``np_printoptions``,
#: ...) for ``make_jaxpr`` to show; ``callback`` does the printing.
debug_print_p = Primitive("debug_print", multiple_results=True)


def _register(prim: Primitive) -> None:
    """The rules both callbacks share; ``callback`` is the one parameter they
    read (``name``, or debug_print's display parameters, ride along)."""
    prim.effectful = True  # type: ignore[attr-defined]

    @prim.def_abstract_eval
    def _abstract_eval(*avals: ShapedArray, **params: Any) -> list[ShapedArray]:
        return []

    @prim.def_impl
    def _impl(*values: Any, callback: Any, **params: Any) -> list[Any]:
        callback(*values)
        return []

    @prim.def_jvp
    def _jvp(primals, tangents, **params):
        prim.bind(*primals, **params)
        return [], []

    @prim.def_batch
    def _batch(args, dims, **params):
        size = batch_rules.axis_size_of(args, dims)
        leading = [a if d is None else batch_rules.moveaxis(a, d, 0) for a, d in zip(args, dims)]
        for i in range(size):
            row = [a if d is None else a[i] for a, d in zip(leading, dims, strict=True)]
            prim.bind(*row, **params)
        return [], []

    @prim.def_lowering
    def _lowering(ctx: Any, *args: Any, callback: Any, **params: Any) -> list:
        def run(*values: np.ndarray) -> list:
            callback(*values[:-1])  # the last operand only orders the call
            return [np.zeros((), np.uint8)]

        # a side effect: XLA keeps it and runs it once per execution of its block;
        # the extra u8 operand and result chain the block's callbacks in program
        # order (lowering.ModuleBuilder.effect_dependency)
        u8 = ShapedArray((), np.dtype(np.uint8))
        dependency = ctx.module.effect_dependency()
        (done,) = ctx.host_callback(
            [*args, dependency], run, params.get("name", prim.name), (u8,),
            has_side_effect=True, avals_in=[*ctx.avals_in, u8],
        )  # fmt: skip
        ctx.module.effect_done([done])
        return []


_register(debug_callback_p)
_register(debug_print_p)


# Calls whose value is their program applied to their inputs, with the name of
# that program's parameter: inlining one changes no value. jit's is known here;
# refimpl.ad_checkpoint (checkpoint) and refimpl.custom_derivatives
# (custom_jvp/custom_vjp), above the primitives, add theirs when imported.
INLINABLE_CALLS: dict[Primitive, str] = {jit_call_p: "program"}


def has_callbacks(program: Any) -> bool:
    """Whether ``program`` or any of its sub-programs has an effectful host
    callback (debug_callback, io_callback): the calls the pjrt lowering keeps
    in program order."""
    return any(getattr(eqn.primitive, "effectful", False) for eqn in program.walk_eqns())


def inline_calls_with_callbacks(program: Any) -> Any:
    """``program`` with each top-level ``jit``, ``checkpoint``, ``custom_jvp``
    or ``custom_vjp`` call whose sub-program has a callback replaced by that
    sub-program's equations (recursively, on fresh variables: one sub-program
    may be called several times)."""
    # A checkpoint loses only its memory-saving barrier; a custom_jvp/custom_vjp
    # call its rules, which only differentiation (already done when lowering) reads.
    calls = INLINABLE_CALLS

    def inlined(eqn: Any) -> Any:
        key = calls.get(eqn.primitive)
        sub = eqn.params.get(key) if key is not None else None
        if sub is None or not has_callbacks(sub):
            return None
        # unreachable from the public API: jit, checkpoint and custom_jvp/vjp bind their
        # program's inputs (captured values first) and outputs one for one
        if len(sub.in_vars) != len(eqn.inputs) or len(sub.out_vars) != len(eqn.outputs):
            return None  # pragma: no cover - a guard, no public call has another arity
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
        sub = inline_calls_with_callbacks(sub)
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
