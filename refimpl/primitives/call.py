"""The ``jit`` call primitive: a nested jitted function as one equation.

``outs = jit[name=f, program={...}](args)`` means: evaluate the sub-program on
the arguments. Its inputs must have the sub-program's input types; only their
weak types may differ, as JAX's ``typematch`` allows (a tangent or cotangent
given strong for a weakly typed primal), and the results have the program's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import backends, dtypes, tracing
from refimpl.config import config
from refimpl.core import Program, ShapedArray, avals_str
from refimpl.primitives import base, batch_rules, ref_context, rule_context
from refimpl.primitives.base import Primitive
from refimpl.transforms.ad_util import (
    UndefinedPrimal,
    Zero,
    spread_cotangents,
    tangent_aval,
    transposed_outputs,
)

jit_call_p = Primitive("jit", multiple_results=True)
# eqn.params["jaxpr"] is the program, as JAX's pjit (refimpl.core.JaxNamedParams)
jit_call_p.jax_param_names = {"jaxpr": "program"}  # type: ignore[attr-defined]


def _strip(avals: Any) -> list[ShapedArray]:
    return [a.strip_weak() for a in avals]


def _host_data(x: Any) -> bool:
    """NumPy data, a Python scalar or a reference array: what a PJRT jit
    copies in (float0 data stays on the host)."""
    ref_array = backends.get("ref").RefArray  # (a higher layer: looked up, not imported)
    if isinstance(x, (tracing.TypedScalar, ref_array)) or dtypes.is_python_scalar(x):
        return True
    return isinstance(x, (np.ndarray, np.generic)) and x.dtype != dtypes.float0


def bind_call(*args: Any, program: Program, name: str) -> list[Any]:
    """``jit_call_p.bind``, for the calls a jit's rules derive from it (its
    jvp, known, linear, transposed or batched program). Run eagerly on host
    data or reference arrays alone (``grad(jit(f))(2.0)``), such a call runs
    on the configured backend, as the jit itself called on that data does;
    an eager operation on host data runs on the reference backend
    (docs/semantics.md 2), which would interpret the jit's programs on pjrt."""
    # (not while a named axis is bound: a collective inside goes to its trace)
    if config.backend != "ref" and base._axis_owner is None and all(map(_host_data, args)):
        in_avals = [tracing.get_aval(a, "jit", i) for i, a in enumerate(args)]
        params = {"program": program, "name": name}
        out_avals = jit_call_p.eager_out_avals(in_avals, params)
        dispatch = backends.get(config.backend).eager_dispatch
        return list(dispatch(jit_call_p, tuple(args), in_avals, out_avals, params))
    return jit_call_p.bind(*args, program=program, name=name)


@jit_call_p.def_abstract_eval
def _jit_call_abstract_eval(*avals: ShapedArray, program: Program, name: str) -> list[ShapedArray]:
    # as JAX's typematch, weak types may differ (a tangent or cotangent given
    # strong for a weakly typed primal): the program's types stand
    if _strip(avals) != _strip(program.in_avals):
        raise TypeError(
            f"jit({name}): called with ({avals_str(avals)}) but its program takes "
            f"({avals_str(program.in_avals)})"
        )
    return program.out_avals


@jit_call_p.def_impl
def _jit_call_impl(*args: np.ndarray, program: Program, name: str) -> list[Any]:
    # a jit's program, compiled: refimpl's rules, never a user's def_impl (as JAX)
    return rule_context.eval_compiled(program, args)


@jit_call_p.def_lowering
def _jit_call_lowering(ctx: Any, *args: Any, program: Program, name: str) -> list[Any]:
    """A private function holding the sub-program, and a ``func.call`` of it
    (one function per sub-program, however often it is called)."""
    return ctx.call(program, name, args)


@jit_call_p.def_batch
def _jit_call_batch(args: list, dims: list, *, program: Program, name: str):
    """Still one ``jit`` equation: its program batched (batch axes first)."""
    frame = rule_context.current_frame()
    in_batched = [d is not None for d in dims]
    moved = [x if d is None else batch_rules.moveaxis(x, d, 0) for x, d in zip(args, dims)]
    new_program, out_batched = rule_context.batch_subprogram(program, in_batched, frame, name=name)
    outs = bind_call(*moved, program=new_program, name=name)
    return list(outs), [0 if b else None for b in out_batched]


# --- differentiation: the sub-program is transformed once (memoized per program) and
# stays one call equation.


@jit_call_p.def_jvp
def _jit_call_jvp(primals: list, tangents: list, *, program: Program, name: str):
    nonzero = [type(t) is not Zero for t in tangents]
    jp = rule_context.jvp_program(program, nonzero, own_types=True)
    outs = bind_call(
        *primals,
        *[t for t in tangents if type(t) is not Zero],
        program=jp.program,
        name=f"jvp({name})",
    )
    n_out = len(program.out_vars)
    return outs[:n_out], _fill_zeros(outs[n_out:], jp.out_nonzero, program.out_avals)


def _jit_call_linearize(primals: list, tangents: list, *, program: Program, name: str):
    """Partial evaluation: a known call computing primal outputs and residuals,
    and a linear call (recorded where the tangents live) from residuals and
    tangents to output tangents."""
    nonzero = [type(t) is not Zero for t in tangents]
    lp = rule_context.linearize_program(program, nonzero, own_types=True)
    known = bind_call(*primals, program=lp.known, name=name)
    n_out = len(program.out_vars)
    residuals = known[n_out:]
    nz_tangents = [t for t in tangents if type(t) is not Zero]
    touts = bind_call(*residuals, *nz_tangents, program=lp.linear, name=f"linear({name})")
    return known[:n_out], _fill_zeros(touts, lp.out_nonzero, program.out_avals)


jit_call_p.linearize_rule = _jit_call_linearize


def integer_cotangents(cts: list) -> bool:
    """Whether integer cotangents reach a sub-program: only when
    ``linear_transpose`` transposes an integer function (reverse mode gives
    integer values float0 cotangents)."""
    return any(
        type(ct) is not Zero
        and np.issubdtype(np.dtype(getattr(ct, "dtype", np.float32)), np.integer)
        for ct in cts
    )


@jit_call_p.def_transpose
def _jit_call_transpose(cts: list, *args: Any, program: Program, name: str) -> list:
    linear = [isinstance(a, UndefinedPrimal) for a in args]
    if integer_cotangents(cts):
        # linear_transpose of an integer function (JAX 0.10.2 runs it): a
        # transposed call takes and returns only float cotangents, so the
        # body is transposed in place, equation by equation
        return rule_context.backward_pass(program, linear, list(args), list(cts))
    # a custom_vjp bwd inside may write a Ref its fwd saved: the transposed
    # program threads the refs it touches (their values in, written ones out)
    ct_nonzero = [type(ct) is not Zero for ct in cts]
    # traced with the cotangents' own weak types, as JAX's (a strong
    # cotangent of a weak output gives strong input cotangents)
    ct_weak = [
        tracing.get_aval(ct, "jit", "cotangent").weak_type for ct in cts if type(ct) is not Zero
    ]
    transposed, refs, written = rule_context.transpose_program(
        program, linear, thread_refs=True, own_types=True, ct_nonzero=ct_nonzero, ct_weak=ct_weak
    )
    outs = bind_call(
        *[a for a in args if not isinstance(a, UndefinedPrimal)],
        *[ct for ct in cts if type(ct) is not Zero],
        *(ref_context.outer_values(refs, written) if refs else ()),
        program=transposed,
        name=f"transpose({name})",
    )
    emitted = transposed_outputs(linear, program.in_avals)
    n_cts = sum(emitted)
    if refs:
        ref_context.write_back([r for r, w in zip(refs, written) if w], outs[n_cts:])
    return spread_cotangents(outs[:n_cts], linear, program.in_avals)


def _fill_zeros(values: list, nonzero: list[bool], avals: list[ShapedArray]) -> list:
    """``values`` at the ``nonzero`` positions, symbolic zeros elsewhere."""

    it = iter(values)
    return [next(it) if nz else Zero(tangent_aval(a)) for nz, a in zip(nonzero, avals, strict=True)]
