"""The invertible (memory-efficient) VJP: ``invertible(fun)`` and ``custom_ivjp``.

JAX had these (``jax.invertible``, ``jax.custom_ivjp``) until 2022; refimpl
keeps them as the reference. ``invertible(fun)(*args)`` traces ``fun`` into
one ``invertible`` equation. Its values, JVP and batching are ``fun``'s.
Under reverse mode it saves no intermediates: the residuals of its VJP are
only its *outputs* and the values ``fun`` closes over (captured values,
constants). The backward pass (``invertible_backward``) walks ``fun``'s
equations in reverse, and for each one

1. obtains its outputs (known, rebuilt earlier, or recomputed forward from
   known values);
2. rebuilds its unknown inputs: an input that can be recomputed forward from
   known values is recomputed; if exactly one cannot, the primitive's inverse
   rule (``inverse_rules``) computes it from the outputs and the other inputs;
   more than one, or no rule: ``NotImplementedError``;
3. applies that equation's VJP to its output cotangents;

and then forgets its outputs, so at any time it holds the values of a few
equations, not of the whole function. Gradients equal plain ``grad``'s up to
the rounding of the inverse computations.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from refimpl import dtypes, pytree, tracing
from refimpl.core import Eqn, Literal, Program, ShapedArray, avals_str
from refimpl.interpreter import eval_program
from refimpl.primitives import elementwise as ew
from refimpl.primitives import ref_context
from refimpl.primitives.base import Primitive
from refimpl.primitives.call import jit_call_p
from refimpl.transforms import ad, batching
from refimpl.transforms.ad_util import Zero, tangent_aval

# --- inverse rules ----------------------------------------------------------------------------
# rule(outs, ins, **params) -> the value of the one input given as None, from
# the outputs and the other inputs.


def _inv_add(outs, ins, **_):
    (y,), (a, b) = outs, ins
    return ew.sub_p.bind(y, b) if a is None else ew.sub_p.bind(y, a)


def _inv_sub(outs, ins, **_):
    (y,), (a, b) = outs, ins
    return ew.add_p.bind(y, b) if a is None else ew.sub_p.bind(a, y)


def _inv_mul(outs, ins, **_):
    (y,), (a, b) = outs, ins
    return ew.div_p.bind(y, b) if a is None else ew.div_p.bind(y, a)


def _inv_div(outs, ins, **_):
    (y,), (a, b) = outs, ins
    return ew.mul_p.bind(y, b) if a is None else ew.div_p.bind(a, y)


def _unary(inverse: Primitive) -> Callable:
    def rule(outs, ins, **_):
        return inverse.bind(outs[0])

    return rule


inverse_rules: dict[Primitive, Callable[..., Any]] = {
    ew.add_p: _inv_add,
    ew.sub_p: _inv_sub,
    ew.mul_p: _inv_mul,
    ew.div_p: _inv_div,
    ew.neg_p: _unary(ew.neg_p),
    ew.exp_p: _unary(ew.log_p),
    ew.log_p: _unary(ew.exp_p),
    ew.log1p_p: _unary(ew.expm1_p),
    ew.expm1_p: _unary(ew.log1p_p),
}


# --- the backward walk -----------------------------------------------------------------------


class _Unknown(Exception):
    """A value that can neither be read nor recomputed forward (yet)."""


def _literal(atom: Literal) -> Any:
    return tracing.TypedScalar(atom.value, atom.aval.dtype, atom.aval.weak_type)


def _differentiable(aval: ShapedArray) -> bool:
    return dtypes.is_inexact(aval.dtype)


def invertible_backward(
    program: Program,
    known_inputs: Sequence[Any | None],
    outs: Sequence[Any],
    cts_out: Sequence[Any],
    in_nonzero: Sequence[bool] | None = None,
) -> list[Any]:
    """Cotangents of ``program``'s inputs (``Zero`` where none flows), from its
    outputs ``outs`` and their cotangents ``cts_out`` (``Zero``/None allowed).

    ``known_inputs`` gives a value for each input that is kept (the captured
    values) and None for each input to rebuild; ``in_nonzero`` marks the
    inputs whose cotangents are wanted (default: all). Rebuilt values and
    cotangents are computed with ``bind``, so under a staging trace the walk
    is recorded as a Program.
    """
    return _walk(program, known_inputs, outs, cts_out, in_nonzero)[1]


def rebuild_inputs(program: Program, known_inputs: Sequence[Any | None], outs: Sequence[Any]):
    """The inputs of ``program`` rebuilt from its outputs (the walk without
    cotangents)."""
    inputs, _ = _walk(program, known_inputs, outs, [None] * len(outs))
    for var, value in zip(program.in_vars, inputs, strict=True):
        if value is None:
            raise NotImplementedError(
                f"invertible: the input {var.aval.str_short()} cannot be rebuilt from the outputs"
            )
    return inputs


def _walk(program, known_inputs, outs, cts_out, in_nonzero=None) -> tuple[list, list]:
    eqns = program.eqns
    if in_nonzero is None:
        in_nonzero = [True] * len(program.in_vars)
    # Values that depend on no differentiated input get no cotangent. (Kept
    # as this set, usually small, rather than its complement, which holds
    # nearly every value of the program.)
    constant_ids = {v.id for v, nz in zip(program.in_vars, in_nonzero, strict=True) if not nz}
    constant_ids.update(v.id for v in program.const_vars)
    for eqn in eqns:
        if all(isinstance(a, Literal) or a.id in constant_ids for a in eqn.inputs):
            constant_ids.update(v.id for v in eqn.outputs)
    producer: dict[int, int] = {}
    for i, eqn in enumerate(eqns):
        for v in eqn.outputs:
            producer[v.id] = i
    env: dict[int, Any] = {}
    for var, value in zip(program.const_vars, program.consts, strict=True):
        env[var.id] = tracing._const_operand(value, var.aval)
    for var, value in zip(program.in_vars, known_inputs, strict=True):
        if value is not None:
            env[var.id] = value
    for atom, value in zip(program.out_vars, outs, strict=True):
        if not isinstance(atom, Literal):
            env[atom.id] = value
    cts: dict[int, Any] = {}

    def add_ct(atom: Any, ct: Any) -> None:
        if isinstance(atom, Literal) or ct is None or type(ct) is Zero:
            return
        prev = cts.get(atom.id)
        cts[atom.id] = ct if prev is None else ad.add_tangents(prev, ct)

    for atom, ct in zip(program.out_vars, cts_out, strict=True):
        add_ct(atom, ct)

    def get(atom: Any) -> Any:
        """The value of ``atom``, recomputing it forward if need be."""
        if isinstance(atom, Literal):
            return _literal(atom)
        if atom.id in env:
            return env[atom.id]
        j = producer.get(atom.id)
        if j is None:
            raise _Unknown(atom)
        eqn = eqns[j]
        values = eqn.primitive.bind(*[get(a) for a in eqn.inputs], **eqn.params)
        values = values if eqn.primitive.multiple_results else [values]
        for v, value in zip(eqn.outputs, values, strict=True):
            env[v.id] = value
        return env[atom.id]

    for i in reversed(range(len(eqns))):
        eqn = eqns[i]
        out_cts = [cts.pop(v.id, None) for v in eqn.outputs]
        try:
            out_values = [get(v) for v in eqn.outputs]
        except _Unknown:
            if any(ct is not None for ct in out_cts):
                raise NotImplementedError(
                    f"invertible: the outputs of '{eqn.primitive.name}' (equation {i}) can "
                    "neither be read nor recomputed, so its inputs cannot be rebuilt"
                ) from None
            continue  # unused: nothing to rebuild from it
        in_values = _rebuild_inputs(eqn, i, out_values, get, env)
        if any(ct is not None for ct in out_cts):
            in_cts = _eqn_vjp(eqn, in_values, out_values, out_cts, constant_ids)
            for atom, ct in zip(eqn.inputs, in_cts, strict=True):
                add_ct(atom, ct)
        # Every user of these outputs (a later equation) is done.
        for v in eqn.outputs:
            env.pop(v.id, None)

    inputs = [env.get(var.id) for var in program.in_vars]
    result = []
    for var in program.in_vars:
        ct = cts.get(var.id)
        result.append(Zero(tangent_aval(var.aval)) if ct is None else ct)
    return inputs, result


def _rebuild_inputs(eqn: Eqn, index: int, out_values: list, get: Callable, env: dict) -> list:
    blocked: list[Any] = []
    for atom in eqn.inputs:
        if isinstance(atom, Literal) or any(atom is b for b in blocked):
            continue
        try:
            get(atom)
        except _Unknown:
            blocked.append(atom)
    name = eqn.primitive.name
    if len(blocked) > 1:
        raise NotImplementedError(
            f"invertible: equation {index} ('{name}') has {len(blocked)} inputs that are "
            "neither known nor computable from known values; only one input of an "
            "equation can be rebuilt from its outputs"
        )
    if blocked:
        (var,) = blocked
        if eqn.primitive is custom_ivjp_call_p:
            return _custom_ivjp_rebuild(eqn, out_values, get, env)
        rule = inverse_rules.get(eqn.primitive)
        if rule is None:
            raise NotImplementedError(f"Inverse rule for '{name}' not implemented")
        ins = [None if atom is var else get(atom) for atom in eqn.inputs]
        if sum(atom is var for atom in eqn.inputs) > 1:
            raise NotImplementedError(
                f"invertible: equation {index} ('{name}') uses the value to rebuild twice; "
                "it cannot be inverted"
            )
        value = rule(out_values, ins, **eqn.params)
        got = tracing.get_aval(value, "invertible", 0)
        if got.shape != var.aval.shape:
            raise NotImplementedError(
                f"invertible: cannot rebuild the {var.aval.str_short()} operand of '{name}' "
                f"(a broadcast operand) from its {got.str_short()} output"
            )
        env[var.id] = ad.match_aval(value, var.aval)
    return [get(a) for a in eqn.inputs]


def _eqn_vjp(eqn: Eqn, in_values: list, out_values: list, out_cts: list, constant_ids: set) -> list:
    if eqn.primitive is custom_ivjp_call_p:
        _, in_cts = _call_ivjp(eqn, in_values, out_values, out_cts)
        return [None if type(c) is Zero else c for c in in_cts]
    mask = [
        not isinstance(a, Literal) and a.id not in constant_ids and _differentiable(a.aval)
        for a in eqn.inputs
    ]
    prim, params = eqn.primitive, eqn.params

    def apply(*xs: Any) -> list[Any]:
        outs = prim.bind(*xs, **params)
        return list(outs) if prim.multiple_results else [outs]

    lin = ad.linearize_flat(apply, in_values, mask)
    cts = [
        Zero(tangent_aval(v.aval)) if ct is None else ct
        for ct, v in zip(out_cts, eqn.outputs, strict=True)
    ]
    got = iter(ad.transpose_linearized(lin, cts))
    return [next(got) if m else None for m in mask]


# --- the invertible primitive ------------------------------------------------------------------

#: ``outs = invertible[program, num_consts](consts, args)``: evaluate
#: ``program``; under reverse mode, rebuild instead of saving.
invertible_p = Primitive("invertible", multiple_results=True)


def _call_abstract_eval(*avals: ShapedArray, program: Program, **_: Any) -> list[ShapedArray]:
    if list(avals) != program.in_avals:
        raise TypeError(
            f"invertible: called with ({avals_str(avals)}) but its program takes "
            f"({avals_str(program.in_avals)})"
        )
    return program.out_avals


def _call_impl(*args: Any, program: Program, **_: Any) -> list[Any]:
    # (each call traces its own program: a plan kept with it would only
    # hold memory for as long as the residuals keep the program)
    return eval_program(program, args, keep_plan=False)


invertible_p.def_abstract_eval(_call_abstract_eval)
invertible_p.def_impl(_call_impl)


@invertible_p.def_lowering
def _invertible_lowering(ctx: Any, *args: Any, program: Program, **_: Any) -> list[Any]:
    return ctx.call(program, "invertible", args)


def _batch_rule(prim: Primitive) -> Callable:
    def rule(args: list, dims: list, *, program: Program, **params: Any):
        frame = batching.current_frame()
        in_batched = [d is not None for d in dims]
        moved = [x if d is None else batching.moveaxis(x, d, 0) for x, d in zip(args, dims)]
        new_program, out_batched = batching.batch_subprogram(
            program, in_batched, frame, name=prim.name
        )
        outs = prim.bind(*moved, program=new_program, **params)
        return list(outs), [0 if b else None for b in out_batched]

    return rule


def _jvp_rule(primals: list, tangents: list, *, program: Program, **_: Any):
    # Forward mode keeps nothing either way: the JVP of the Program.

    assert jit_call_p.jvp_rule is not None  # primitives.call defines it with jit_call_p
    return jit_call_p.jvp_rule(primals, tangents, program=program, name="invertible")


invertible_p.def_batch(_batch_rule(invertible_p))
invertible_p.def_jvp(_jvp_rule)


def _invertible_linearize(primals: list, tangents: list, *, program: Program, num_consts: int):
    outs = invertible_p.bind(*primals, program=program, num_consts=num_consts)
    nonzero = tuple(type(t) is not Zero for t in tangents)
    touts = invertible_lin_p.bind(
        *primals[:num_consts],
        *outs,
        *[t for t in tangents if type(t) is not Zero],
        program=program,
        num_consts=num_consts,
        in_nonzero=nonzero,
    )
    return outs, list(touts)


invertible_p.linearize_rule = _invertible_linearize

#: The linear part of a linearized ``invertible`` call:
#: ``touts = invertible_lin[program, num_consts, in_nonzero](consts, outs, tangents)``.
#: Its residuals are the captured values and the outputs only; its transpose
#: is ``invertible_backward``.
invertible_lin_p = Primitive("invertible_lin", multiple_results=True)


@invertible_lin_p.def_abstract_eval
def _invertible_lin_abstract_eval(*avals, program: Program, **_: Any):
    return [tangent_aval(a) for a in program.out_avals]


@invertible_lin_p.def_impl
def _invertible_lin_impl(*args: Any, program: Program, num_consts: int, in_nonzero: tuple):
    # Applying the linear map forward (ri.linearize's f_jvp): rebuild the
    # inputs from the outputs with no cotangents, then the JVP of the Program.
    n_out = len(program.out_vars)
    consts, outs, tangents = args[:num_consts], args[num_consts : num_consts + n_out], args[
        num_consts + n_out :
    ]  # fmt: skip
    known = list(consts) + [None] * (len(program.in_vars) - num_consts)
    inputs = rebuild_inputs(program, known, list(outs))
    full = ad.fill_zeros(list(tangents), in_nonzero, program.in_avals)
    _, touts = ad.jvp_flat(lambda *xs: tracing.eval_program_bind(program, xs), inputs, full)
    return [
        ad.match_aval(t, tangent_aval(a)) for t, a in zip(touts, program.out_avals, strict=True)
    ]


@invertible_lin_p.def_transpose
def _invertible_lin_transpose(cts: list, *args: Any, program: Program, num_consts, in_nonzero):
    n_out = len(program.out_vars)
    consts, outs = list(args[:num_consts]), list(args[num_consts : num_consts + n_out])
    known = consts + [None] * (len(program.in_vars) - num_consts)
    cts_in = invertible_backward(program, known, outs, cts, in_nonzero)
    result: list[Any] = [None] * (num_consts + n_out)
    for ct, nz, aval in zip(cts_in, in_nonzero, program.in_avals, strict=True):
        if nz:
            result.append(ct if type(ct) is Zero else ad.match_aval(ct, tangent_aval(aval)))
    return result


# --- custom_ivjp ---------------------------------------------------------------------------------

#: ``outs = custom_ivjp_call[program, rule, in_tree, out_tree](args)``:
#: ``program`` everywhere except in the backward walk of ``invertible``,
#: which calls the user's ``ivjp``.
custom_ivjp_call_p = Primitive("custom_ivjp_call", multiple_results=True)
custom_ivjp_call_p.def_abstract_eval(_call_abstract_eval)
custom_ivjp_call_p.def_impl(_call_impl)
custom_ivjp_call_p.def_batch(_batch_rule(custom_ivjp_call_p))
custom_ivjp_call_p.def_jvp(_jvp_rule)


def _custom_ivjp_linearize(primals: list, tangents: list, *, program: Program, **_: Any):
    assert jit_call_p.linearize_rule is not None  # primitives.call defines it with jit_call_p
    return jit_call_p.linearize_rule(primals, tangents, program=program, name="custom_ivjp")


custom_ivjp_call_p.linearize_rule = _custom_ivjp_linearize


@custom_ivjp_call_p.def_lowering
def _custom_ivjp_lowering(ctx: Any, *args: Any, program: Program, **_: Any) -> list[Any]:
    return ctx.call(program, "custom_ivjp", args)


def _call_ivjp(eqn: Eqn, in_values: list, out_values: list, out_cts: list) -> tuple[list, list]:
    """The user's ``ivjp(inputs, outputs, out_cts) -> (inputs, in_cts)`` on flat lists."""
    owner: custom_ivjp = eqn.params["rule"]
    in_tree, out_tree = eqn.params["in_tree"], eqn.params["out_tree"]
    cts = [
        ad.zeros_like_aval(tangent_aval(v.aval)) if ct is None or type(ct) is Zero else ct
        for ct, v in zip(out_cts, eqn.outputs, strict=True)
    ]
    user_ins = pytree.tree_unflatten(
        in_tree, [None if x is None else ad.user_value(x) for x in in_values]
    )
    assert owner.ivjp is not None  # custom_ivjp.__call__ binds only once defivjp gave it
    result = owner.ivjp(
        user_ins,
        pytree.tree_unflatten(out_tree, [ad.user_value(o) for o in out_values]),
        pytree.tree_unflatten(out_tree, [ad.user_value(c) for c in cts]),
    )
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise TypeError(
            f"custom_ivjp: ivjp of {getattr(owner.fun, '__name__', owner.fun)} must return a "
            f"pair (inputs, input_cotangents), got {result!r:.200}"
        )
    ins, in_cts = result
    ins_leaves = pytree.tree_leaves(ins)
    ct_leaves = pytree.tree_leaves(in_cts)
    if len(ins_leaves) != len(eqn.inputs) or len(ct_leaves) != len(eqn.inputs):
        raise TypeError(
            f"custom_ivjp: ivjp must return {len(eqn.inputs)} inputs and {len(eqn.inputs)} "
            f"input cotangents (the structure of the arguments), got {len(ins_leaves)} and "
            f"{len(ct_leaves)}"
        )
    return ins_leaves, ct_leaves


def _custom_ivjp_rebuild(eqn: Eqn, out_values: list, get: Callable, env: dict) -> list:
    ins: list[Any] = []
    for atom in eqn.inputs:
        try:
            ins.append(get(atom))
        except _Unknown:
            ins.append(None)
    n_out = len(eqn.outputs)
    zero_cts = [None] * n_out
    rebuilt, _ = _call_ivjp(eqn, ins, out_values, zero_cts)
    for atom, value in zip(eqn.inputs, rebuilt, strict=True):
        if not isinstance(atom, Literal) and atom.id not in env:
            env[atom.id] = ad.match_aval(value, atom.aval)
    return [get(a) for a in eqn.inputs]


class custom_ivjp:  # noqa: N801 -- JAX's spelling
    """``custom_ivjp(fun)`` then ``defivjp(ivjp)``: ``fun`` with a user rule for
    the backward walk of ``invertible``: ``ivjp(inputs, outputs, out_cts) ->
    (inputs, input_cotangents)``, where ``inputs`` is the tuple of arguments
    (None for those not known yet) and the results have its structure. Outside
    ``invertible`` it is ``fun`` (its derivatives are ``fun``'s)."""

    def __init__(self, fun: Callable) -> None:
        if not callable(fun):
            raise TypeError(f"custom_ivjp: fun must be callable, got {type(fun).__name__}")
        self.fun = fun
        self.ivjp: Callable | None = None
        functools.update_wrapper(self, fun)

    def defivjp(self, ivjp: Callable) -> Callable:
        if not callable(ivjp):
            raise TypeError(f"custom_ivjp.defivjp: ivjp must be callable, got {ivjp!r}")
        self.ivjp = ivjp
        return ivjp

    def __call__(self, *args: Any) -> Any:
        if self.ivjp is None:
            raise AttributeError(
                f"No inverse VJP defined for custom_ivjp function "
                f"{getattr(self.fun, '__name__', self.fun)} using defivjp."
            )
        if not tracing.is_tracing():
            return self.fun(*args)
        leaves, in_tree = pytree.tree_flatten(tuple(args))
        program, captured, out_tree = _trace(self.fun, leaves, in_tree, "custom_ivjp")
        if captured:
            raise TypeError(
                "custom_ivjp: the function must not close over traced values; pass them as "
                "arguments"
            )
        outs = custom_ivjp_call_p.bind(
            *leaves, program=program, rule=self, in_tree=in_tree, out_tree=out_tree
        )
        return pytree.tree_unflatten(out_tree, list(outs))


def _refusing_writes(name: str, fun: Callable) -> Any:
    """Inside the trace of ``fun``: a write to a ref made outside it is a
    ``NotImplementedError`` (the backward pass rebuilds inputs from outputs
    and has no place for a ref's effect). A read captures the ref's value
    now, as any closed-over value."""
    return ref_context.refuse_outer(
        f"{name}: the function {getattr(fun, '__name__', fun)!r} writes a mutable array "
        "reference made outside it, which is not supported under a transformation"
    )


def _trace(fun: Callable, leaves: list, in_tree: Any, name: str) -> tuple[Program, list, Any]:
    out_trees: list[Any] = []

    def flat_fun(*xs: Any) -> list[Any]:
        with _refusing_writes(name, fun):
            out = fun(*pytree.tree_unflatten(in_tree, list(xs)))
        out_leaves, out_tree = pytree.tree_flatten(out)
        out_trees.append(out_tree)
        return out_leaves

    avals = [tracing.get_aval(x, name, i) for i, x in enumerate(leaves)]
    program, captured, _ = tracing.trace_to_program(
        flat_fun, avals, name, [f"an argument of an {name} function"] * len(avals)
    )
    return program, list(captured), out_trees[0]


def _trace_hoisting_arrays(fun: Callable, leaves: list, in_tree: Any) -> tuple:
    """Trace ``fun`` -> (program, kept operands, out tree). Closed-over
    arrays (weights) become leading operands, like captured tracers, rather
    than constants of the Program: the caller's arrays are passed as they are
    (a device array is not copied to the host) and are kept, not rebuilt."""
    out_trees: list[Any] = []

    def flat_fun(*xs: Any) -> list[Any]:
        with _refusing_writes("invertible", fun):
            out = fun(*pytree.tree_unflatten(in_tree, list(xs)))
        out_leaves, out_tree = pytree.tree_flatten(out)
        out_trees.append(out_tree)
        return out_leaves

    avals = [tracing.get_aval(x, "invertible", i) for i, x in enumerate(leaves)]
    with tracing.new_trace("invertible") as builder:
        tracers = [builder.new_input(a, "an argument of an invertible function") for a in avals]
        program = builder.build(flat_fun(*tracers))
    # Builder._add_const records each constant's original value in order.
    originals = builder._keepalive
    hoist = [i for i, c in enumerate(program.consts) if np.ndim(c) > 0]
    n_cap = len(builder.captured)
    program = Program(
        in_vars=[program.const_vars[i] for i in hoist] + program.in_vars,
        eqns=program.eqns,
        out_vars=program.out_vars,
        const_vars=[v for i, v in enumerate(program.const_vars) if i not in hoist],
        consts=[c for i, c in enumerate(program.consts) if i not in hoist],
    )
    kept = [originals[i] for i in hoist] + list(builder.captured)
    assert len(program.in_vars) == len(hoist) + n_cap + len(leaves)
    return program, kept, out_trees[0]


# --- the API -----------------------------------------------------------------------------------


def invertible(fun: Callable) -> Callable:
    """``jax.invertible``: ``fun`` with a VJP that saves no intermediates.

    The explicit arguments are rebuilt from the outputs in the backward pass
    (so ``fun`` must be invertible in them, equation by equation); values
    ``fun`` closes over are kept. See the module docstring and
    ``docs/semantics.md``.

    Values, JVPs and batching are ``fun``'s; only reverse mode differs: it
    keeps ``fun``'s outputs (and closed-over values) as residuals and, in
    the backward pass, walks ``fun``'s equations in reverse, rebuilding each
    equation's input from its output with the primitive's inverse rule
    (``add``, ``sub``, ``mul``, ``div``, ``neg``, ``exp``, ``log``,
    ``log1p``, ``expm1``), so backward memory does not grow with depth (a
    RevNet). Invertibility is assumed, not checked: a ``mul`` by zero gives
    inf/NaN gradients. JAX removed ``jax.invertible`` in 2022; refimpl keeps
    it as the reference of the technique.

    Args:
        fun: A function of positional array arguments, invertible equation
            by equation in them.

    Returns:
        A function with ``fun``'s signature and values.

    Raises:
        TypeError: ``fun`` is not callable.
        NotImplementedError: In reverse mode, an equation has no inverse
            rule (``Inverse rule for 'sin' not implemented``) or uses the
            value to rebuild twice (``x * x``).

    Example:
        >>> import numpy as np, refimpl as ri, refimpl.numpy as rnp
        >>> f = ri.invertible(lambda x: rnp.exp(x) * 2.0)
        >>> ri.grad(lambda x: rnp.sum(f(x)))(np.array([0.0, 1.0], np.float32))
        Array([2.       , 5.4365635], dtype=float32)
    """
    if not callable(fun):
        raise TypeError(f"invertible: fun must be callable, got {type(fun).__name__}")

    @functools.wraps(fun)
    def invertible_f(*args: Any) -> Any:
        if not tracing.is_tracing():
            return fun(*args)
        leaves, in_tree = pytree.tree_flatten(tuple(args))
        program, kept, out_tree = _trace_hoisting_arrays(fun, leaves, in_tree)
        outs = invertible_p.bind(*kept, *leaves, program=program, num_consts=len(kept))
        return pytree.tree_unflatten(out_tree, list(outs))

    return invertible_f
