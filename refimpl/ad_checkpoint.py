"""Rematerialization: ``checkpoint`` (alias ``remat``), its policies, and
``checkpoint_name``; the ``remat_opt`` primitive of
``custom_vjp.defvjp(optimize_remat=True)``.

``checkpoint(fun)(*args)`` traces ``fun`` into one ``checkpoint`` equation
holding its Program. Evaluated, it is the Program. Under ``grad`` (reverse
mode) its partial-evaluation rule splits it like a nested ``jit``
(``ad.linearize_program``: a known part computing primal outputs and
residuals, a linear part from residuals and tangents), then applies the
policy: a residual is *saved* -- computed in the forward pass and kept --
only if it is an input of the checkpoint or an output of an equation the
policy accepts (``policy(primitive, *in_avals, **params) -> bool``); every
other residual is recomputed in the backward pass from the inputs and the
saved values. So the forward pass is one ``checkpoint`` equation whose
outputs are ``primal outputs + saved values`` (dead code removed with
``refimpl.transforms.dce``), and the linear part is one ``checkpoint``
equation whose Program starts with the recomputation, which its transpose
evaluates before transposing the rest. ``policy=None`` saves nothing but the
inputs (``nothing_saveable``).
"""

from __future__ import annotations

import inspect
import logging
import operator
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from refimpl import _wraps, pytree, tracing
from refimpl.config import config
from refimpl.core import Atom, Eqn, Program, ShapedArray, Var, avals_str, subprograms
from refimpl.interpreter import eval_program
from refimpl.primitives import ref_context
from refimpl.primitives.base import EAGER_BODIES, Primitive
from refimpl.primitives.call import jit_call_p
from refimpl.primitives.callback import io_callback_p
from refimpl.primitives.control_flow import cond_p, scan_p
from refimpl.primitives.debug import INLINABLE_CALLS
from refimpl.transforms import ad, batching
from refimpl.transforms.ad_util import (
    UndefinedPrimal,
    Zero,
    constant_residual,
    spread_cotangents,
    tangent_aval,
    transposed_outputs,
)
from refimpl.transforms.dce import dce_program, dce_rules

# --- checkpoint_name ------------------------------------------------------------------------

#: ``y = name[name=n](x)``: the identity, marking ``x`` for name-based policies.
name_p = Primitive("name")


@name_p.def_abstract_eval
def _name_abstract_eval(x: ShapedArray, *, name: str) -> ShapedArray:
    return x


@name_p.def_impl
def _name_impl(x: Any, *, name: str) -> Any:
    return x


@name_p.def_lowering
def _name_lowering(ctx: Any, x: Any, *, name: str) -> list[Any]:
    return [x]


@name_p.def_jvp
def _name_jvp(primals: list, tangents: list, *, name: str):
    # The primal is named (a policy may save it); the tangent is plain.
    return name_p.bind(primals[0], name=name), tangents[0]


@name_p.def_transpose
def _name_transpose(ct: Any, x: Any, *, name: str) -> list:
    return [ct]


@name_p.def_batch
def _name_batch(args: list, dims: list, *, name: str):
    return name_p.bind(args[0], name=name), dims[0]


def checkpoint_name(x: Any, name: str) -> Any:
    """``jax.ad_checkpoint.checkpoint_name``: ``x`` (a pytree of arrays)
    unchanged, each leaf marked ``name`` for ``save_only_these_names`` and
    friends."""
    if not isinstance(name, str):
        raise TypeError(f"checkpoint_name: name must be a str, got {type(name).__name__}")
    return pytree.tree_map(lambda leaf: name_p.bind(leaf, name=name), x)


# --- policies -------------------------------------------------------------------------------


def _policy_fn(fn: Callable[..., bool], text: str) -> Callable[..., bool]:
    fn.__name__ = fn.__qualname__ = text
    return fn


class checkpoint_policies:  # noqa: N801 -- a namespace, spelled as JAX's
    """``jax.checkpoint_policies``: ``policy(primitive, *in_avals, **params)
    -> bool`` says whether the outputs of an equation may be saved."""

    @staticmethod
    def everything_saveable(prim: Primitive, *_: Any, **__: Any) -> bool:
        return True

    @staticmethod
    def nothing_saveable(prim: Primitive, *_: Any, **__: Any) -> bool:
        return False

    @staticmethod
    def dots_saveable(prim: Primitive, *_: Any, **__: Any) -> bool:
        return prim.name == "dot_general"

    checkpoint_dots = dots_saveable

    @staticmethod
    def dots_with_no_batch_dims_saveable(prim: Primitive, *_: Any, **params: Any) -> bool:
        if prim.name != "dot_general":
            return False
        (_, _), (lhs_batch, rhs_batch) = params["dimension_numbers"]
        return not lhs_batch and not rhs_batch

    checkpoint_dots_with_no_batch_dims = dots_with_no_batch_dims_saveable

    @staticmethod
    def save_anything_except_these_names(*names: str) -> Callable[..., bool]:
        excluded = frozenset(names)

        def policy(prim: Primitive, *_: Any, **params: Any) -> bool:
            return not (prim is name_p and params["name"] in excluded)

        return _policy_fn(policy, f"save_anything_except_these_names{tuple(names)}")

    @staticmethod
    def save_any_names_but_these(*names: str) -> Callable[..., bool]:
        excluded = frozenset(names)

        def policy(prim: Primitive, *_: Any, **params: Any) -> bool:
            return prim is name_p and params["name"] not in excluded

        return _policy_fn(policy, f"save_any_names_but_these{tuple(names)}")

    @staticmethod
    def save_only_these_names(*names: str) -> Callable[..., bool]:
        included = frozenset(names)

        def policy(prim: Primitive, *_: Any, **params: Any) -> bool:
            return prim is name_p and params["name"] in included

        return _policy_fn(policy, f"save_only_these_names{tuple(names)}")

    # Host offloading: refimpl has no memory kinds, so a residual a policy
    # would offload to ``offload_dst`` is saved where it is (same values).
    @staticmethod
    def offload_dot_with_no_batch_dims(offload_src: str, offload_dst: str) -> Callable[..., bool]:
        return _policy_fn(
            checkpoint_policies.dots_with_no_batch_dims_saveable,
            f"offload_dot_with_no_batch_dims({offload_src!r}, {offload_dst!r})",
        )

    @staticmethod
    def save_and_offload_only_these_names(
        *,
        names_which_can_be_saved: Sequence[str],
        names_which_can_be_offloaded: Sequence[str],
        offload_src: str,
        offload_dst: str,
    ) -> Callable[..., bool]:
        kept = frozenset(names_which_can_be_saved) | frozenset(names_which_can_be_offloaded)

        def policy(prim: Primitive, *_: Any, **params: Any) -> bool:
            return prim is name_p and params["name"] in kept

        return _policy_fn(policy, f"save_and_offload_only_these_names{tuple(sorted(kept))}")

    @staticmethod
    def save_from_both_policies(a: Callable, b: Callable) -> Callable[..., bool]:
        def policy(prim: Primitive, *avals: Any, **params: Any) -> bool:
            return bool(a(prim, *avals, **params)) or bool(b(prim, *avals, **params))

        return _policy_fn(policy, "save_from_both_policies")


class _Answer:
    """A policy's answer for one equation's outputs, as JAX's
    ``jax.ad_checkpoint.Saveable``/``Recompute`` (both truthy, as JAX's: it
    tells them apart by identity, not by ``bool``)."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name


Saveable = _Answer("Saveable")
Recompute = _Answer("Recompute")


class Offloadable(NamedTuple):
    """Save the outputs in memory ``dst`` (moved from ``src``) for the backward
    pass. refimpl has no memory kinds: an offloaded residual is saved where it
    is, as the offload policies do (docs/semantics.md 9.2)."""

    src: str
    dst: str


def _saveable(policy: Callable | None, eqn: Eqn) -> bool:
    if policy is None:
        return False
    answer = policy(eqn.primitive, *[a.aval for a in eqn.inputs], **eqn.params)
    if answer is Recompute:
        return False
    return answer is Saveable or isinstance(answer, Offloadable) or bool(answer)


def _saveable_outputs(policy: Callable | None, eqn: Eqn) -> list[bool]:
    """Which of ``eqn``'s outputs the policy lets the forward pass keep.

    The policy sees the equations inside a loop, a branch or a jit call too,
    as JAX's partial evaluation passes it into their jaxprs: a scan's stacked
    residual (a ``y``) is saved when the body computes it with an equation
    the policy accepts, a cond's output when every branch does or computes
    nothing for it (a constant: the zeros of a residual only another branch
    has; an operand given back, as ``lambda x: x``), a jit call's
    output when its program does. So ``save_cos`` keeps a scan's ``cos``
    values and the backward pass recomputes no loop."""
    if _saveable(policy, eqn):
        return [True] * len(eqn.outputs)
    if policy is None:
        return [False] * len(eqn.outputs)
    if eqn.primitive is scan_p:
        n_carry = eqn.params["num_carry"]
        return [False] * n_carry + _program_saveable(policy, eqn.params["body"])[n_carry:]
    if eqn.primitive is jit_call_p and isinstance(eqn.params.get("program"), Program):
        return _program_saveable(policy, eqn.params["program"])
    if eqn.primitive is cond_p:
        masks = [_program_saveable(policy, b, free_too=True) for b in eqn.params["branches"]]
        return [all(col) for col in zip(*masks, strict=True)]
    return [False] * len(eqn.outputs)


def _program_saveable(policy: Callable, program: Program, free_too: bool = False) -> list[bool]:
    """For each of ``program``'s outputs: computed by an equation (output)
    the policy accepts; with ``free_too``, also a constant, a literal or an
    input given back (a branch computes nothing for it)."""
    made: dict[int, bool] = {}
    for e in program.eqns:
        for v, s in zip(e.outputs, _saveable_outputs(policy, e), strict=True):
            made[id(v)] = s
    return [made.get(id(v), free_too) for v in program.out_vars]


def _recomputed(eqn: Eqn, saved: list[bool]) -> Eqn:
    """``eqn`` in the recomputation: the outputs the forward pass saves are
    its inputs there, so the equation's own copies get fresh, unread names
    (dead-code elimination then drops what only they needed)."""
    if not any(saved):
        return eqn
    outs = [Var(v.aval) if s else v for v, s in zip(eqn.outputs, saved, strict=True)]
    return Eqn(eqn.primitive, eqn.inputs, outs, eqn.params)


def _policy_split(eqns: list[Eqn], policy: Callable | None) -> tuple[list, list, list]:
    """``eqns`` (computing residuals) as the forward pass's equations, the
    recomputation's, and the values the forward pass may save (the
    recomputation's extra inputs; dead-code elimination keeps those it
    reads)."""
    fwd: list[Eqn] = []
    rec: list[Eqn] = []
    saveable: list[Any] = []
    for e in eqns:
        if _saveable(policy, e):
            fwd.append(e)
            saveable.extend(e.outputs)
            continue
        split = _SPLITS[e.primitive](e, policy) if e.primitive in _SPLITS and policy else None
        if split is not None:
            fwd.append(split[0])
            rec.append(split[1])
            saveable.extend(split[2])
            continue
        mask = _saveable_outputs(policy, e)
        fwd.append(e)
        rec.append(_recomputed(e, mask))
        saveable.extend(v for v, s in zip(e.outputs, mask, strict=True) if s)
    return fwd, rec, saveable


def _split_program(program: Program, policy: Callable) -> tuple[Program, Program, list] | None:
    """``program`` split by the policy: the forward program also returns the
    values the policy saves, the recomputation takes them as extra inputs
    and recomputes the rest. None when it saves nothing."""
    p_fwd, p_rec, p_saved = _policy_split(program.eqns, policy)
    if not p_saved:
        return None
    fwd = Program(
        in_vars=list(program.in_vars),
        eqns=p_fwd,
        out_vars=[*program.out_vars, *p_saved],
        const_vars=program.const_vars,
        consts=program.consts,
    )
    rec = Program(
        in_vars=[*program.in_vars, *p_saved],
        eqns=p_rec,
        out_vars=list(program.out_vars),
        const_vars=program.const_vars,
        consts=program.consts,
    )
    return fwd, rec, p_saved


def _split_scan(eqn: Eqn, policy: Callable) -> tuple[Eqn, Eqn, list] | None:
    """A scan split by the policy step by step, as JAX's scan partial
    evaluation: the forward loop also stacks, as extra ``ys``, each step's
    values the policy saves; the recomputation is the loop again over those
    stacks, recomputing each step's residuals from them and recomputing the
    carries it reads (JAX's dead-code fixed point keeps them: no carry is
    stacked). So ``checkpoint_dots`` saves a loop's matmuls and recomputes
    its sines. None when the body saves nothing: the loop is recomputed
    whole."""
    params = eqn.params
    parts = _split_program(params["body"], policy)
    if parts is None:
        return None
    fwd_body, rec_body, _ = parts
    fwd_params = dict(params, body=fwd_body)
    avals = scan_p.abstract_eval(*[a.aval for a in eqn.inputs], **fwd_params)
    stacked = [Var(a) for a in avals[len(eqn.outputs) :]]
    rec = Eqn(scan_p, [*eqn.inputs, *stacked], list(eqn.outputs), dict(params, body=rec_body))
    fwd = Eqn(scan_p, list(eqn.inputs), [*eqn.outputs, *stacked], fwd_params)
    return fwd, rec, stacked


def _split_cond(eqn: Eqn, policy: Callable) -> tuple[Eqn, Eqn, list] | None:
    """A cond split by the policy branch by branch, as JAX's cond partial
    evaluation: the forward cond also returns the values its taken branch's
    policy saves (zeros for the other branches' ones); the recomputation is
    the cond again, each branch recomputing its residuals from its own saved
    values. None when no branch saves anything."""
    branches: tuple[Program, ...] = eqn.params["branches"]
    splits = [_policy_split(b.eqns, policy) for b in branches]
    if not any(saved for _, _, saved in splits):
        return None
    slots = [v.aval for _, _, saved in splits for v in saved]
    fwd_branches, rec_branches, start = [], [], 0
    for b, (b_fwd, b_rec, b_saved) in zip(branches, splits, strict=True):
        mine = range(start, start + len(b_saved))
        zeros = [Var(a) for i, a in enumerate(slots) if i not in mine]
        it_zero, it_mine = iter(zeros), iter(b_saved)
        extra = [next(it_mine) if i in mine else next(it_zero) for i in range(len(slots))]
        fwd_branches.append(
            Program(
                in_vars=list(b.in_vars),
                eqns=b_fwd,
                out_vars=[*b.out_vars, *extra],
                const_vars=[*b.const_vars, *zeros],
                consts=[*b.consts, *[np.zeros(v.aval.shape, v.aval.dtype) for v in zeros]],
            )
        )
        # the other branches' slots are inputs this branch does not read
        ins = [v if i in mine else Var(v.aval) for i, v in enumerate(extra)]
        rec_branches.append(
            Program(
                in_vars=[*b.in_vars, *ins],
                eqns=b_rec,
                out_vars=list(b.out_vars),
                const_vars=b.const_vars,
                consts=b.consts,
            )
        )
        start += len(b_saved)
    saved = [Var(a) for a in slots]
    fwd_params = dict(eqn.params, branches=tuple(fwd_branches))
    rec_params = dict(eqn.params, branches=tuple(rec_branches))
    fwd = Eqn(eqn.primitive, list(eqn.inputs), [*eqn.outputs, *saved], fwd_params)
    rec = Eqn(eqn.primitive, [*eqn.inputs, *saved], list(eqn.outputs), rec_params)
    return fwd, rec, saved


def _split_jit(eqn: Eqn, policy: Callable) -> tuple[Eqn, Eqn, list] | None:
    """A jit call split by the policy, as JAX's pjit partial evaluation: the
    forward call also returns the values its program's policy saves; the
    recomputation calls a program recomputing the outputs from its inputs
    and those values. None when it saves nothing."""
    program = eqn.params.get("program")
    if not isinstance(program, Program):
        return None
    parts = _split_program(program, policy)
    if parts is None:
        return None
    fwd_program, rec_program, p_saved = parts
    saved = [Var(v.aval) for v in p_saved]
    fwd = Eqn(
        jit_call_p, list(eqn.inputs), [*eqn.outputs, *saved], dict(eqn.params, program=fwd_program)
    )
    rec = Eqn(
        jit_call_p, [*eqn.inputs, *saved], list(eqn.outputs), dict(eqn.params, program=rec_program)
    )
    return fwd, rec, saved


_SPLITS: dict[Any, Callable[[Eqn, Callable], tuple[Eqn, Eqn, list] | None]] = {
    scan_p: _split_scan,
    cond_p: _split_cond,
    jit_call_p: _split_jit,
}


# --- the checkpoint primitive ---------------------------------------------------------------

#: ``outs = checkpoint[program, prevent_cse, differentiated, policy](args)``:
#: evaluate ``program``. ``differentiated`` marks the linear part made by
#: reverse mode (its Program begins with the recomputation). A body that
#: touched refs made outside it takes their values as its last operands and
#: has the param ``ref_finals``: the positions of the outputs that are the
#: written refs' final values (see ``_remat_linearize`` for why it matters).
remat_p = Primitive("checkpoint", multiple_results=True)
remat_p.jax_param_names = {"jaxpr": "program"}  # type: ignore[attr-defined]  # JAX's remat2's
INLINABLE_CALLS[remat_p] = "program"  # lowering may inline it (primitives.debug)
EAGER_BODIES[remat_p] = "program"  # evaluated eagerly by binding, as JAX's


@remat_p.def_abstract_eval
def _remat_abstract_eval(*avals: ShapedArray, program: Program, **_: Any) -> list[ShapedArray]:
    # weak types may differ (as jit's call, JAX's typematch)
    if [a.strip_weak() for a in avals] != [a.strip_weak() for a in program.in_avals]:
        raise TypeError(
            f"checkpoint: called with ({avals_str(avals)}) but its program takes "
            f"({avals_str(program.in_avals)})"
        )
    return program.out_avals


@remat_p.def_impl
def _remat_impl(*args: Any, program: Program, **_: Any) -> list[Any]:
    return eval_program(program, args)


@remat_p.def_lowering
def _remat_lowering(
    ctx: Any, *args: Any, program: Program, differentiated: bool = False,
    prevent_cse: bool = True, **_: Any,
) -> list[Any]:  # fmt: skip
    # JAX's remat_lowering: the backward pass's recomputation reads its
    # operands through an optimization barrier, so XLA cannot merge it with
    # the forward pass's computation of the same values (CSE), which would
    # keep those values alive instead of recomputing them.
    if differentiated and prevent_cse and args:
        args = tuple(ctx.hlo.OptimizationBarrierOp(list(args)).results)
    return ctx.call(program, "checkpoint", args)


@remat_p.def_batch
def _remat_batch(args: list, dims: list, *, program: Program, **params: Any):
    frame = batching.current_frame()
    in_batched = [d is not None for d in dims]
    moved = [x if d is None else batching.moveaxis(x, d, 0) for x, d in zip(args, dims)]
    new_program, out_batched = batching.batch_subprogram(
        program, in_batched, frame, name="checkpoint"
    )
    outs = remat_p.bind(*moved, program=new_program, **params)
    return list(outs), [0 if b else None for b in out_batched]


@remat_p.def_jvp
def _remat_jvp(primals: list, tangents: list, *, program: Program, **params: Any):
    nonzero = [type(t) is not Zero for t in tangents]
    jp = ad.jvp_program(program, nonzero)
    outs = remat_p.bind(
        *primals, *[t for t in tangents if type(t) is not Zero], program=jp.program, **params
    )
    n_out = len(program.out_vars)
    return outs[:n_out], ad.fill_zeros(outs[n_out:], jp.out_nonzero, program.out_avals)


class RematPlan:
    """The reverse-mode split of a checkpoint under a policy.

    ``known``: the used primal inputs (``known_used``) -> primal outputs +
    ``num_saved`` saved values. ``linear``: the used primal inputs
    (``linear_used``) + saved values + nonzero tangents -> nonzero tangent
    outputs; it recomputes every residual that was not saved.
    """

    def __init__(self, known, known_used, linear, linear_used, num_saved, out_nonzero):
        self.known: Program = known
        self.known_used: list[bool] = known_used
        self.linear: Program = linear
        self.linear_used: list[bool] = linear_used
        self.num_saved: int = num_saved
        self.out_nonzero: list[bool] = out_nonzero


def remat_plan(program: Program, nonzero: Sequence[bool], policy: Callable | None) -> RematPlan:
    # Dead steps first: their linearization would add residuals (saved under
    # a policy that saves them) for tangents nothing reads. JAX drops them too.
    live, _ = dce_program(program)
    program = Program(
        in_vars=program.in_vars,
        eqns=live.eqns,
        out_vars=live.out_vars,
        const_vars=live.const_vars,
        consts=live.consts,
    )
    lp = ad.linearize_program(program, nonzero)
    known = lp.known
    n_out, n_in = len(program.out_vars), len(known.in_vars)
    residuals = known.out_vars[n_out:]
    # Outputs of the equations the policy accepts become inputs of the
    # recomputation; dead-code elimination keeps the ones it actually reads.
    fwd_eqns, rec_eqns, saveable = _policy_split(known.eqns, policy)
    recompute = Program(
        in_vars=list(known.in_vars) + saveable,
        eqns=rec_eqns,
        out_vars=list(residuals),
        const_vars=known.const_vars,
        consts=known.consts,
    )
    recompute, rec_used = dce_program(recompute)
    saved: list[Atom] = [v for v, u in zip(saveable, rec_used[n_in:], strict=True) if u]
    fwd = Program(
        in_vars=list(known.in_vars),
        eqns=fwd_eqns,
        out_vars=list(known.out_vars[:n_out]) + saved,
        const_vars=known.const_vars,
        consts=known.consts,
    )
    fwd, known_used = dce_program(fwd)
    n_rec = len(recompute.in_vars)
    t_avals = [tangent_aval(a) for a, nz in zip(program.in_avals, nonzero, strict=True) if nz]

    def linear_fun(*args: Any) -> list[Any]:
        res = tracing.eval_program_bind(recompute, args[:n_rec])
        return tracing.eval_program_bind(lp.linear, [*res, *args[n_rec:]])

    linear = ad.closed_program(linear_fun, [*recompute.in_avals, *t_avals], "checkpoint")
    return RematPlan(fwd, known_used, linear, rec_used[:n_in], len(saved), lp.out_nonzero)


# JAX 0.10.2 logs what a checkpoint's reverse-mode split saves (DEBUG) on
# jax._src.ad_checkpoint; refimpl on refimpl.ad_checkpoint, in its words
_logger = logging.getLogger("refimpl.ad_checkpoint")


def _log_saved(program: Program, plan: RematPlan) -> None:
    """One DEBUG record: the inputs the recomputation reads ("saving inputs
    with shapes") and the values the policy saved ("saving these
    intermediates", each with the equation that made it), as JAX's."""
    if not _logger.isEnabledFor(logging.DEBUG):
        return
    inputs = [a for a, used in zip(program.in_avals, plan.linear_used, strict=True) if used]
    n_out = len(program.out_vars)
    known = plan.known
    names = [""] * len(known.in_vars)
    saved = [
        (known.out_avals[n_out + i], _where(*_source_of_var(v, known.eqns, known.in_vars, names)))
        for i, v in enumerate(known.out_vars[n_out:])
    ]
    head = "remat-decorated function"
    lines: list[str] = []
    if inputs:
        head += " saving inputs with shapes:"
        lines += [f"  {_short(a)}" for a in inputs]
    if saved:
        if inputs:
            lines.append("and saving these intermediates:")
        else:
            head += " saving these intermediates:"
        lines += [f"  {_short(a)} from {source}" for a, source in saved]
    if lines:
        _logger.debug("\n".join([head, *lines]))


def _where(key: tuple, source: str) -> str:
    # JAX names the equation's source line; refimpl's equations carry none, so
    # the place is the equation's position in the checkpointed function
    source = source.removeprefix("from ")
    return f"{source} at equation {key[1]}" if key[0] == 2 else source


def _short(aval: ShapedArray) -> str:
    return f"{aval.dtype.name}[{','.join(str(d) for d in aval.shape)}]"


def _remat_linearize(primals: list, tangents: list, *, program: Program, **params: Any):
    if any(eqn.primitive is io_callback_p for eqn in program.walk_eqns()):
        # the recomputation would repeat the callback's effects (JAX 0.10.2's words)
        raise NotImplementedError(
            "Effects not supported in partial-eval of `checkpoint`/`remat`: [io_callback]"
        )
    nonzero = [type(t) is not Zero for t in tangents]
    policy = params["policy"]
    plan = ad.memo(
        program,
        ("remat_plan", tuple(nonzero), policy),
        lambda: remat_plan(program, nonzero, policy),
    )
    _log_saved(program, plan)
    ref_finals = params.get("ref_finals", ())
    if (
        ref_finals
        and policy is not checkpoint_policies.everything_saveable
        and not any(plan.out_nonzero[i] for i in ref_finals)  # JAX's error comes first then
    ):
        raise NotImplementedError(
            "checkpoint: reverse-mode differentiation (grad, vjp, linearize) of a checkpointed "
            "function that writes a Ref made outside it is not supported: JAX re-runs the "
            "write when it recomputes the function in the backward pass (and reads the ref's "
            "value at that time); refimpl does not. Write the ref outside the checkpointed "
            "function, or use policy=checkpoint_policies.everything_saveable (no recomputation)."
        )
    # The known part (primal outputs and saved residuals) is computed in
    # place, not as a checkpoint call: JAX's remat partial-eval hoists it out
    # of the remat primitive (eval_jaxpr of the known jaxpr), so a staged
    # linearization shows its equations inline (and a scan body's DCE sees
    # them one by one).
    outs = tracing.eval_program_bind(
        plan.known, [p for p, u in zip(primals, plan.known_used, strict=True) if u]
    )
    n_out = len(program.out_vars)
    saved = outs[n_out:]
    linear_params = dict(params, differentiated=True)
    linear_params.pop("ref_finals", None)  # its outputs are tangents
    touts = remat_p.bind(
        *[p for p, u in zip(primals, plan.linear_used, strict=True) if u],
        *saved,
        *[t for t in tangents if type(t) is not Zero],
        program=plan.linear,
        **linear_params,
    )
    return outs[:n_out], ad.fill_zeros(touts, plan.out_nonzero, program.out_avals)


remat_p.linearize_rule = _remat_linearize


@remat_p.def_transpose
def _remat_transpose(cts: list, *args: Any, program: Program, **params: Any) -> list:
    linear = [isinstance(a, UndefinedPrimal) for a in args]
    # a custom_vjp bwd inside may write a Ref its fwd saved (threaded as in jit's transpose).
    # The cotangents keep the types the backward pass gives them, as JAX's
    # remat transpose (a scan's strong cotangent of a weak init stays strong).
    transposed, refs, written = ad.transpose_program(
        program, linear, thread_refs=True, own_types=True
    )
    if not refs and any(type(ct) is Zero for ct in cts):
        return _pruned_remat_transpose(cts, args, program, params)
    emitted = transposed_outputs(linear, program.in_avals)
    n_cts = sum(emitted)
    if refs:
        params = dict(params, ref_finals=tuple(range(n_cts, n_cts + sum(written))))
    operands = [
        *[a for a in args if not isinstance(a, UndefinedPrimal)],
        *[ad.instantiate(ct) for ct in cts],
        *(ref_context.outer_values(refs, written) if refs else ()),
    ]
    if not refs and tracing.find_top_trace(operands) is None:
        # Eagerly, JAX's remat impl evaluates the transposed program equation
        # by equation on the values given (eval_jaxpr), so a strong cotangent
        # of a weak output gives a strong input cotangent; traced (under jit)
        # the call's outputs have the program's types, as below.
        outs = tracing.eval_program_bind(transposed, operands)
    else:
        outs = remat_p.bind(*operands, program=transposed, **params)
    if refs:
        ref_context.write_back([r for r, w in zip(refs, written) if w], outs[n_cts:])
    return spread_cotangents(outs[:n_cts], linear, program.in_avals)


def _pruned_remat_transpose(cts: list, args: tuple, program: Program, params: dict) -> list:
    """The transpose of a remat whose outputs ``cts`` marks as symbolic
    zeros: JAX's linearization has no tangent path to an unused output (its
    linear jaxpr is dead-code eliminated), so the program loses those outputs
    and what only they need (a scan's carry, through the loop) before it is
    transposed; their zero cotangents add no ``0 * x`` terms (a -0 would
    stay -0 where JAX gives a symbolic zero, instantiated +0)."""
    nonzero = [ct for ct in cts if type(ct) is not Zero]
    pruned, used_ins = dce_program(program, [type(ct) is not Zero for ct in cts])
    if not nonzero:  # every output's cotangent is zero: so is every input's
        used_ins = [False] * len(args)
    kept = [a for a, u in zip(args, used_ins, strict=True) if u]
    it = iter(_remat_transpose(nonzero, *kept, program=pruned, **params) if kept else [])
    return [
        next(it) if u else Zero(tangent_aval(a.aval)) if isinstance(a, UndefinedPrimal) else None
        for a, u in zip(args, used_ins, strict=True)
    ]


def _remat_dce(eqn: Eqn, used_outs: list[bool]):
    new_sub, used_ins = dce_program(eqn.params["program"], used_outs)
    params = dict(eqn.params, program=new_sub)
    if "ref_finals" in params:  # the positions of the written refs' kept final values
        kept = [i for i, u in enumerate(used_outs) if u]
        params["ref_finals"] = tuple(kept.index(i) for i in params["ref_finals"] if used_outs[i])
    new_eqn = Eqn(
        remat_p,
        [a for a, u in zip(eqn.inputs, used_ins, strict=True) if u],
        [v for v, u in zip(eqn.outputs, used_outs, strict=True) if u],
        params,
    )
    return new_eqn, used_ins


dce_rules[remat_p] = _remat_dce


# --- the API --------------------------------------------------------------------------------


def _static_argnums(static_argnums: Any) -> tuple[int, ...]:
    if isinstance(static_argnums, int):
        static_argnums = (static_argnums,)
    try:
        nums = tuple(operator.index(i) for i in static_argnums)
    except TypeError:
        raise TypeError(
            f"checkpoint: static_argnums must be an int or a tuple of ints, got {static_argnums!r}"
        ) from None
    return nums


def checkpoint(
    fun: Callable,
    *,
    prevent_cse: bool | Sequence[bool] = True,
    policy: Callable[..., bool] | None = None,
    static_argnums: int | Sequence[int] = (),
) -> Callable:
    """``jax.checkpoint`` (alias ``remat``): ``fun`` with the same values,
    whose intermediates are recomputed in the backward pass of reverse-mode
    differentiation instead of being saved, except those ``policy`` accepts.

    ``static_argnums`` arguments are Python values fixed at trace time (not
    differentiated). ``prevent_cse`` is kept as a parameter of the equation:
    refimpl's recomputation is a separate call equation in the backward pass
    and is never merged with the forward computation.

    ``fun`` is traced into one ``checkpoint`` equation (visible in
    ``ri.make_program``; evaluated at once outside any transformation)
    whose values, JVP and batching are ``fun``'s; under reverse mode it is
    split into a forward equation that saves only the checkpoint's inputs
    and the residuals ``policy`` accepts, and a backward equation that
    first recomputes the rest. As in JAX, a function is traced once per
    argument types and static arguments, whichever ``checkpoint`` wrapper
    of it is called.

    Args:
        fun: The function to checkpoint (array arguments and outputs).
        prevent_cse: A bool, or a tuple of bools (one per argument, as
            JAX's); recorded on the equation; changes nothing in refimpl.
        policy: ``policy(primitive, *input_avals, **params) -> bool``, which
            intermediates to save (``ri.checkpoint_policies``); None saves
            none (``nothing_saveable``).
        static_argnums: Positions of arguments that are Python values fixed
            at trace time.

    Returns:
        A function with ``fun``'s signature and values.

    Raises:
        TypeError: ``fun`` or ``policy`` is not callable, ``static_argnums``
            is not an int or a tuple of ints, ``prevent_cse`` is not a bool
            or a sequence; at call time, an output leaf
            is not an array.
        ValueError: At call time, a ``static_argnums`` position is not among
            the positional arguments.

    Example:
        >>> import numpy as np, refimpl as ri, refimpl.numpy as rnp
        >>> from refimpl.ad_checkpoint import saved_residuals
        >>> def f(x):
        ...     return rnp.sin(rnp.sin(x))
        >>> x = np.float32(1.0)
        >>> len(saved_residuals(f, x)), len(saved_residuals(ri.checkpoint(f), x))
        (2, 1)
        >>> ri.grad(ri.checkpoint(f))(x)
        Array(0.36003944, dtype=float32)
    """
    if not callable(fun):
        raise TypeError(f"checkpoint: fun must be callable, got {type(fun).__name__}")
    if policy is not None and not callable(policy):
        raise TypeError(f"checkpoint: policy must be callable or None, got {policy!r}")
    if isinstance(prevent_cse, Sequence):
        prevent_cse = tuple(prevent_cse)
    if not isinstance(prevent_cse, (tuple, bool)):  # JAX's check, when checkpoint is made
        raise TypeError(
            f"checkpoint: prevent_cse must be a bool or tuple of bools, got {type(prevent_cse)}"
        )
    statics = _static_argnums(static_argnums)

    @_wraps.wraps(fun)  # dressed as fun, as JAX's (a partial's name is its function's)
    def remat_f(*args: Any, **kwargs: Any) -> Any:
        nums = tuple(i + len(args) if i < 0 else i for i in statics)
        for i in nums:
            if not 0 <= i < len(args):
                raise ValueError(
                    f"checkpoint: static_argnums={statics} but the function was called with "
                    f"{len(args)} positional arguments"
                )
        dyn = tuple(a for i, a in enumerate(args) if i not in nums)
        all_leaves, in_tree = pytree.tree_flatten((dyn, kwargs))
        # A Ref argument is not a value of the trace: the body gets the Ref
        # itself and its accesses are threaded like a closed-over ref's (JAX
        # passes Ref arguments of remat through as refs)
        ref_args = {i: x for i, x in enumerate(all_leaves) if type(x) is ref_context.Ref}
        leaves = [x for i, x in enumerate(all_leaves) if i not in ref_args]
        out_trees: list[Any] = []

        touched: list[tuple[tuple, tuple]] = []

        def flat_fun(*xs: Any) -> list[Any]:
            it_xs = iter(xs)
            full_leaves = [
                ref_args[i] if i in ref_args else next(it_xs) for i in range(len(all_leaves))
            ]
            dyn_args, kw = pytree.tree_unflatten(in_tree, full_leaves)
            it = iter(dyn_args)
            full = [args[i] if i in nums else next(it) for i in range(len(args))]
            # Refs made outside that the body touches are late inputs of its
            # trace; the written ones' final values are extra outputs.
            with ref_context.late_inputs(lambda k: "a Ref made outside checkpoint") as scope:
                out = fun(*full, **kw)
                finals = scope.finish()
                touched.append((tuple(scope.refs), scope.written_flags))
            out_leaves, out_tree = pytree.tree_flatten(out)
            if any(type(leaf) is ref_context.Ref for leaf in out_leaves):
                ref_context.check_no_refs(out, "checkpoint / remat")
            for i, leaf in enumerate(out_leaves):
                if not tracing.is_array_like(leaf):
                    raise TypeError(
                        f"checkpoint: output leaf {i} of {getattr(fun, '__name__', fun)} is "
                        f"a {type(leaf).__name__}, not an array"
                    )
            out_trees.append(out_tree)
            written = scope.written_flags
            return out_leaves + [v for v, w in zip(finals, written, strict=True) if w]

        avals = [tracing.get_aval(x, "checkpoint", i) for i, x in enumerate(leaves)]
        ref_avals = tuple((i, r.aval) for i, r in ref_args.items())
        key: Any = (
            in_tree,
            tuple(avals),
            ref_avals,
            tuple((i, args[i]) for i in nums),
            config.enable_x64,
        )
        try:
            hash(key)
            with _traces_lock:
                hit = _traces.get(fun, {}).get(key)
        except TypeError:  # an unhashable static argument, or fun not weakly referenceable
            key, hit = None, None
        refs: tuple = ()
        written: tuple = ()
        captured: list[tracing.Tracer]
        if hit is not None:
            program, captured, out_tree = hit[0], [], hit[1]
        else:
            origins = _trace_origins(fun, args, nums, kwargs, len(all_leaves), ref_args)
            program, captured, _ = tracing.trace_to_program(flat_fun, avals, "checkpoint", origins)
            out_tree = out_trees[0]
            refs, written = touched[0]
            if key is not None and not captured and not refs:
                # As JAX: the same function on the same types is traced once
                # (eagerly too), so its derived Programs and executables are
                # reused. A trace that captured an enclosing trace's tracers
                # holds them and is valid for that trace only.
                with _traces_lock:
                    _traces.setdefault(fun, {})[key] = (program, out_tree)
        if not refs:
            outs = remat_p.bind(
                *captured,
                *leaves,
                program=program,
                prevent_cse=bool(prevent_cse),
                differentiated=False,
                policy=policy,
            )
            return pytree.tree_unflatten(out_tree, list(outs))
        # The touched refs' values are the last operands (read now, in the
        # enclosing context); the written ones take the last outputs.
        n_out = len(program.out_vars) - sum(written)
        outs = remat_p.bind(
            *captured,
            *leaves,
            *ref_context.outer_values(refs, written),
            program=program,
            prevent_cse=bool(prevent_cse),
            differentiated=False,
            policy=policy,
            ref_finals=tuple(range(n_out, len(program.out_vars))),
        )
        ref_context.write_back([r for r, w in zip(refs, written, strict=True) if w], outs[n_out:])
        return pytree.tree_unflatten(out_tree, list(outs[:n_out]))

    return remat_f


# Traces of checkpointed functions: function (weakly) -> (argument tree, types,
# static arguments, x64) -> (Program, output tree). Shared by every
# checkpoint(fun) wrapper of one function, as JAX's cache is keyed on fun.
_traces: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_traces_lock = threading.Lock()


def remat(
    fun: Callable,
    *,
    prevent_cse: bool | Sequence[bool] = True,
    policy: Callable[..., bool] | None = None,
    static_argnums: int | Sequence[int] = (),
) -> Callable:
    """``jax.remat``: an alias of :func:`checkpoint`, a function of its own
    named ``remat`` as JAX 0.10.2's (``jax.remat is not jax.checkpoint``).

    Args:
        fun: The function whose intermediates the backward pass recomputes.
        prevent_cse: As :func:`checkpoint`'s.
        policy: As :func:`checkpoint`'s (which values to save).
        static_argnums: As :func:`checkpoint`'s.

    Returns:
        ``checkpoint(fun, ...)``.

    Raises:
        TypeError: As :func:`checkpoint` (``fun`` not callable, a bad policy).

    Example:
        >>> import refimpl as ri
        >>> ri.remat.__name__, float(ri.grad(ri.remat(lambda x: x * x))(3.0))
        ('remat', 6.0)
    """
    return checkpoint(fun, prevent_cse=prevent_cse, policy=policy, static_argnums=static_argnums)


def saved_residuals(fun: Callable, *args: Any) -> list[ShapedArray]:
    """The types of the values reverse mode keeps from the forward pass of
    ``fun(*args)`` for the backward pass (w.r.t. every inexact argument):
    the residuals of its linearization (each once), as
    ``jax.ad_checkpoint.saved_residuals`` counts them."""
    return [aval for aval, _ in residual_sources(fun, *args)]


def print_saved_residuals(fun: Callable, *args: Any, **kwargs: Any) -> None:
    """Print each residual of ``fun(*args, **kwargs)``'s reverse mode (see
    :func:`saved_residuals`) with where it comes from, as JAX's: ``f32[3]
    from the argument x``, ``f32[3] named 'h'`` (a :func:`checkpoint_name`),
    ``f32[3] output of cos``. refimpl's equations carry no source lines, so
    the ``from file:line`` JAX adds to outputs is left out, and an output
    names refimpl's primitive."""
    for aval, source in residual_sources(fun, *args, **kwargs):
        print(f"{aval.str_short().lstrip('~')} {source}")


def _trace_origins(
    fun: Callable, args: tuple, nums: tuple, kwargs: dict, n_leaves: int, refs: dict
) -> list[str]:
    """Where each traced leaf of a checkpointed call comes from, for the
    concreteness errors: ``argument x of f`` (as jit's; JAX names the
    argument too), or a general phrase where the names are not known."""
    name = getattr(fun, "__name__", None)
    dynamic = tuple(() if i in nums else a for i, a in enumerate(args))  # statics: no leaves
    names = _argument_names(fun, dynamic, {}) if not kwargs and name else []
    if len(names) != n_leaves:
        return ["an argument of a checkpointed function"] * (n_leaves - len(refs))
    return [f"argument {n} of {name}" for i, n in enumerate(names) if i not in refs]


def _argument_names(fun: Callable, args: tuple, kwargs: dict) -> list[str]:
    """A name per leaf of ``(args, kwargs)``: the parameter's name, with the
    leaf's key path inside it (``params['w']``)."""
    try:
        bound = inspect.signature(fun).bind(*args, **kwargs)
        names = list(bound.arguments)
        values = list(bound.arguments.values())
    except (TypeError, ValueError):
        names = [f"args[{i}]" for i in range(len(args))] + list(kwargs)
        values = list(args) + list(kwargs.values())
    out = []
    for name, value in zip(names, values):
        for path, _ in pytree.tree_flatten_with_path(value)[0]:
            out.append(name + pytree.keystr(path))
    return out


def residual_sources(fun: Callable, *args: Any, **kwargs: Any) -> list[tuple[ShapedArray, str]]:
    """``(type, source)`` of each residual of ``fun(*args, **kwargs)``'s
    linearization: an argument, a constant, a named value or an equation's output."""
    leaves, in_tree = pytree.tree_flatten((args, kwargs))
    names = _argument_names(fun, args, kwargs)

    def flat_fun(*xs: Any) -> list[Any]:
        call_args, call_kwargs = pytree.tree_unflatten(in_tree, list(xs))
        return pytree.tree_leaves(fun(*call_args, **call_kwargs))

    nonzero = [ad._differentiable(x) for x in leaves]
    avals = [tracing.get_aval(x, "saved_residuals", i) for i, x in enumerate(leaves)]
    found: list[tuple[ShapedArray, str]] = []

    def staged(*xs: Any) -> list[Any]:
        # Staged (as under jit), so every residual is a captured value of the
        # enclosing trace rather than a constant. Refs made outside that the
        # function touches are late inputs of this trace (nothing is run:
        # they keep their values, as under make_program).
        with ref_context.late_inputs(lambda k: f"closed-over Ref {k}"):
            lin = ad.linearize_flat(flat_fun, xs, nonzero)
        sources = _constant_sources(lin.linear)
        for i, r in enumerate(lin.residuals):
            key, source = _source(r, xs, names)
            sources.append((key, i, tracing.get_aval(r, "saved_residuals", i), source))
        # a value is saved once, however many residuals forward it (JAX's
        # residuals are a set of variables)
        seen: set[tuple] = set()
        for key, _, aval, source in sorted(sources, key=operator.itemgetter(0, 1)):
            if key[0] == 0 or key not in seen:
                seen.add(key)
                found.append((aval, source))
        return list(lin.primals_out)

    tracing.trace_to_program(staged, avals, "saved_residuals", ["an argument"] * len(avals))
    return found


def _constant_sources(linear: Program) -> list[tuple[tuple, int, ShapedArray, str]]:
    """The concrete arrays the linear program (or a jit inside it) holds:
    JAX saves them as residuals too (``from a constant``), a concrete ``jnp``
    scalar included (a NumPy or Python scalar is a literal in both programs,
    not saved). Inside a jit, refimpl's linearization makes a scalar constant
    a literal too, so a jit's closed-over ``jnp`` scalar is not counted."""
    consts: dict[int, Any] = {}
    programs = [linear] + [sub for eqn in linear.walk_eqns() for sub in subprograms(eqn)]
    for program in programs:
        for value in program.consts:
            consts.setdefault(id(value), value)
    out = []
    for i, value in enumerate(consts.values()):
        aval = tracing.get_aval(value, "saved_residuals", i)
        out.append(((0, 1), i - len(consts), aval, "from a constant"))
    return out


def _source(value: Any, inputs: Sequence[Any], names: Sequence[str]) -> tuple[tuple, str]:
    """(sort key, description): JAX lists literals and constants, then
    arguments in order, then equations' outputs in program order."""
    for i, x in enumerate(inputs):
        if value is x:
            return _argument(i, names)
    var = getattr(value, "_var", None)
    builder = getattr(value, "_trace", None)
    if var is None or not isinstance(builder, tracing.Builder):
        return (0, 1), "from a constant"
    input_vars = [getattr(x, "_var", None) for x in inputs]
    return _source_of_var(var, builder.eqns, input_vars, names)


def _argument(i: int, names: Sequence[str]) -> tuple[tuple, str]:
    return (1, i), f"from the argument {names[i] if i < len(names) else i}"


def _source_of_var(
    var: Any, eqns: Sequence[Eqn], input_vars: Sequence[Any], names: Sequence[str]
) -> tuple[tuple, str]:
    for i, v in enumerate(input_vars):
        if v is not None and v is var:
            return _argument(i, names)
    for position, eqn in enumerate(eqns):
        for k, out in enumerate(eqn.outputs):
            if out is var:
                forwarded = _forwarded_operand(eqn, k)
                if forwarded is not None:
                    return _source_of_var(forwarded, eqns[:position], input_vars, names)
                return (2, position, k), _describe_output(eqn, k)
    return (0, 1), "from a constant"


def _forwarded_operand(eqn: Eqn, k: int) -> Any:
    """The operand a jit's output ``k`` is, when its program returns one of
    its inputs unchanged: JAX's jit forwards such an output (the residual is
    where the operand comes from, e.g. an argument), so it is not an output
    of the jitted function."""
    program = eqn.params.get("program")
    if eqn.primitive is not jit_call_p or not isinstance(program, Program):
        return None
    out = program.out_vars[k]
    for j, v in enumerate(program.in_vars):
        if v is out:
            return eqn.inputs[j]
    return None


def _describe_output(eqn: Eqn, k: int) -> str:
    """What output ``k`` of ``eqn`` is, looking into checkpointed programs."""
    if eqn.primitive is name_p:
        return f"named '{eqn.params['name']}'"
    program = eqn.params.get("program")
    if eqn.primitive is remat_p and isinstance(program, Program):
        inner = program.out_vars[k]
        for sub in program.eqns:
            for j, out in enumerate(sub.outputs):
                if out is inner:
                    return _describe_output(sub, j)
    if eqn.primitive is jit_call_p:
        return f"output of jitted function '{eqn.params.get('name')}'"
    return f"output of {eqn.primitive.name}"


# --- remat_opt: custom_vjp(optimize_remat=True) ---------------------------------------------

#: ``outs + res = remat_opt[fwd, primal, num_call_consts, num_fwd_consts,
#: num_res](call_consts, fwd_consts, primals)``: a ``custom_vjp``'s ``fwd``
#: traced into a Program (``fwd``: fwd_consts + primals -> outs + res).
#: Evaluated, it runs ``fwd``. Its dead-code-elimination rule replaces it by a
#: ``jit`` call of ``primal`` (call_consts + primals -> outs) when no residual
#: is used, so a checkpointed forward pass runs only the primal function.
remat_opt_p = Primitive("remat_opt", multiple_results=True)


def _fwd_operands(args: Sequence[Any], num_call_consts: int) -> list[Any]:
    return list(args[num_call_consts:])


@remat_opt_p.def_abstract_eval
def _remat_opt_abstract_eval(*avals: ShapedArray, fwd: Program, num_call_consts: int, **_: Any):
    if _fwd_operands(avals, num_call_consts) != fwd.in_avals:
        raise TypeError(
            f"remat_opt: called with ({avals_str(avals)}) but its fwd takes "
            f"({avals_str(fwd.in_avals)}) after {num_call_consts} primal constants"
        )
    return fwd.out_avals


@remat_opt_p.def_impl
def _remat_opt_impl(*args: Any, fwd: Program, num_call_consts: int, **_: Any) -> list[Any]:
    return eval_program(fwd, _fwd_operands(args, num_call_consts))


@remat_opt_p.def_lowering
def _remat_opt_lowering(ctx: Any, *args: Any, fwd: Program, num_call_consts: int, **_: Any):
    return ctx.call(fwd, "remat_opt_fwd", _fwd_operands(args, num_call_consts))


def _remat_opt_dce(eqn: Eqn, used_outs: list[bool]):
    primal: Program = eqn.params["primal"]
    n_cc, num_res = eqn.params["num_call_consts"], eqn.params["num_res"]
    n_out = len(eqn.outputs) - num_res
    if any(used_outs[n_out:]):
        return eqn, [True] * len(eqn.inputs)
    # No residual is used: the primal function computes the used outputs.
    n_fc = eqn.params["num_fwd_consts"]
    new_primal, used_primal_ins = dce_program(primal, used_outs[:n_out])
    primal_operands = list(eqn.inputs[:n_cc]) + list(eqn.inputs[n_cc + n_fc :])
    used_ins = list(used_primal_ins[:n_cc]) + [False] * n_fc + list(used_primal_ins[n_cc:])
    new_eqn = Eqn(
        jit_call_p,
        [a for a, u in zip(primal_operands, used_primal_ins, strict=True) if u],
        [v for v, u in zip(eqn.outputs[:n_out], used_outs[:n_out], strict=True) if u],
        {"program": new_primal, "name": "remat_opt_primal"},
    )
    return new_eqn, used_ins


dce_rules[remat_opt_p] = _remat_opt_dce


def _remat_opt_as_jit(rule_name: str) -> Callable:
    """jvp / linearize of ``remat_opt``: those of a ``jit`` call of ``fwd``
    (the optimization only matters for the first derivative)."""

    def rule(primals: list, tangents: list, *, fwd: Program, num_call_consts: int, **_: Any):
        jit_rule = getattr(jit_call_p, rule_name)
        return jit_rule(
            primals[num_call_consts:],
            tangents[num_call_consts:],
            program=fwd,
            name="remat_opt_fwd",
        )

    return rule


remat_opt_p.def_jvp(_remat_opt_as_jit("jvp_rule"))
remat_opt_p.linearize_rule = _remat_opt_as_jit("linearize_rule")


@remat_opt_p.def_batch
def _remat_opt_batch(args: list, dims: list, **params: Any):
    frame = batching.current_frame()
    n_cc, n_fc = params["num_call_consts"], params["num_fwd_consts"]
    moved = [x if d is None else batching.moveaxis(x, d, 0) for x, d in zip(args, dims)]
    batched = [d is not None for d in dims]
    fwd, primal = params["fwd"], params["primal"]
    new_fwd, _ = batching.batch_subprogram(
        fwd, batched[n_cc:], frame, force_out=[True] * len(fwd.out_vars), name="remat_opt"
    )
    new_primal, _ = batching.batch_subprogram(
        primal,
        batched[:n_cc] + batched[n_cc + n_fc :],
        frame,
        force_out=[True] * len(primal.out_vars),
        name="remat_opt",
    )
    outs = remat_opt_p.bind(*moved, **dict(params, fwd=new_fwd, primal=new_primal))
    return list(outs), [0] * len(outs)


def remat_opt_fwd(rules: Any, consts: list, primals: list, perturbed: list[bool], call: Program):
    """``rules.fwd`` traced into a Program and bound as one ``remat_opt``
    equation -> (primal outputs, residual leaves, residual tree)."""
    avals = [tracing.get_aval(p, "custom_vjp", i) for i, p in enumerate(primals)]
    out_avals = call.out_avals
    trees: list[Any] = []
    # fwd's Python-number residuals: bwd gets them as they are, not outputs
    # of the traced fwd (as custom_derivatives._split_static_residuals)
    constants: list[tuple[int, Any]] = []
    name = repr(rules)

    def flat_fwd(*xs: Any) -> list[Any]:
        # JAX's remat optimization replaces a fwd whose residuals are unused
        # by the primal, dropping the fwd's ref effects under jit but not
        # eagerly: not modelled here.
        message = (
            f"custom_vjp with optimize_remat=True: the fwd rule of {name} writes a Ref made "
            "outside it, which is not supported; use optimize_remat=False"
        )
        with ref_context.refuse_outer(message):
            outs, res, res_tree = rules.fwd(list(xs), perturbed)
        trees.append((res_tree, len(res)))
        # under vmap fwd may batch an output the primal does not (see
        # custom_derivatives._BatchedVJPRules.fwd): it is then batched
        typed = rules.fwd_out_avals(out_avals) if hasattr(rules, "fwd_out_avals") else out_avals
        outs = [ad.match_aval(o, a) for o, a in zip(outs, typed, strict=True)]
        constants[:] = [(i, r) for i, r in enumerate(res) if constant_residual(r) is not None]
        return [*outs, *(r for r in res if constant_residual(r) is None)]

    try:
        fwd, captured, _ = tracing.trace_to_program(
            flat_fwd, avals, f"fwd of {name}", [f"an argument of the fwd of {name}"] * len(avals)
        )
    except tracing.ConcretizationTypeError as err:
        raise tracing.ConcretizationTypeError(
            f"custom_vjp with optimize_remat=True traces its fwd rule ({name}) into a "
            f"Program with abstract arguments, so fwd cannot branch on argument values "
            f"with Python control flow (use lax.cond / lax.select): {err}"
        ) from err
    res_tree, num_res = trees[0]
    num_res -= len(constants)
    outs = remat_opt_p.bind(
        *consts,
        *captured,
        *primals,
        fwd=fwd,
        primal=call,
        num_call_consts=len(consts),
        num_fwd_consts=len(captured),
        num_res=num_res,
    )
    n_out = len(out_avals)
    res = list(outs[n_out:])
    for i, value in constants:
        res.insert(i, value)
    return list(outs[:n_out]), res, res_tree
