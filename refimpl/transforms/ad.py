"""Automatic differentiation: forward mode (JVP), linearize, transpose.

Forward mode
    ``JVPTrace`` is a transformation on the trace stack
    (``docs/semantics.md``, "Transformations: the trace stack"). Its tracers
    carry a primal value and a tangent (an array, or ``Zero`` -- a symbolic
    zero). Each primitive applied to one of them is handed to the primitive's
    ``jvp_rule``; a primitive whose operands all have zero tangents is simply
    applied to the primals, so untouched values never pay for AD.

Linearize (reverse mode, first half)
    ``linearize`` is partial evaluation done while tracing, with the primal
    part *known* and the tangent part *unknown*: a ``JVPTrace`` in
    linearize mode whose tangents are tracers of a separate, non-dynamic
    ``Builder`` one level below it. The JVP rules apply primal operations to
    primals (so they run eagerly, or in the enclosing jit, and Python can
    branch on their values) and tangent operations to tangents (so they are
    recorded in the builder). The builder's Program is the linear map; the
    primal values it uses are its residuals. Primitives holding
    sub-programs (jit, scan, cond) have a ``linearize_rule`` that splits the
    sub-program the same way into a known and a linear part.

Transpose (reverse mode, second half)
    ``backward_pass`` walks a linear Program backwards from output
    cotangents, applying each linear equation's ``transpose_rule`` and
    accumulating cotangents by addition; zeros stay symbolic.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np

from refimpl import _wraps, backends, dtypes, pytree, tracing
from refimpl.array import as_array
from refimpl.core import AbstractRef, Literal, Program, ShapedArray, Var
from refimpl.primitives import elementwise, ref_context, rule_context, structural
from refimpl.primitives.elementwise import add_p, convert_element_type_p
from refimpl.primitives.structural import broadcast_in_dim_p
from refimpl.sharding import AxisType, NamedSharding, PartitionSpec
from refimpl.traceback_util import api_boundary
from refimpl.tracing import Builder, Trace, Tracer, TypedScalar, new_main
from refimpl.transforms.ad_util import (
    UndefinedPrimal,
    Zero,
    tangent_aval,
    transposed_outputs,
)
from refimpl.transforms.batching import BatchTracer, vmap
from refimpl.transforms.dce import dce_program
from refimpl.transforms.sharded import MeshArray, is_split, put_sharded

# --- forward mode ------------------------------------------------------------------------


class JVPTracer(Tracer):
    """A primal value with its tangent (``Zero`` when structurally zero)."""

    __slots__ = ("_trace", "primal", "tangent", "aval")

    def __init__(self, trace: JVPTrace, primal: Any, tangent: Any) -> None:
        self._trace = trace
        self.primal = primal
        self.tangent = tangent
        self.aval = tracing.get_aval(primal, "jvp", "primal")

    @property
    def origin(self) -> str:
        primal = self.primal
        return primal.origin if isinstance(primal, Tracer) else "a differentiated value"

    def _concrete(self, what: str) -> Any:
        # Outside jit the primal is a concrete array: Python may branch on it,
        # as in JAX. Inside jit it is a staging tracer, which raises.
        return self.primal

    def _without_host_data(self, passes_through: bool = False) -> JVPTracer:
        # The user's own NumPy array or Python number a jnp function passed
        # through (primal or tangent) made an array, as a jax.jit computes
        # new ones, even for a function vmap would pass through (asarray);
        # a lower-level tracer is asked the same. linearize forwards such
        # values through the jits it inlines, as JAX's.
        trace = cast(JVPTrace, self._trace)
        if trace.linearize:
            return self
        primal = _host_made_array(self.primal, passes_through)
        tangent = _host_made_array(self.tangent, passes_through)
        if primal is self.primal and tangent is self.tangent:
            return self
        return JVPTracer(trace, primal, tangent)


class JVPTrace(Trace):
    """Forward-mode differentiation; with ``linearize=True`` the tangents are
    tracers of a lower-level linear ``Builder`` and primitives holding
    sub-programs use their ``linearize_rule`` (partial evaluation)."""

    jax_trace_name = "JVPTrace"
    jax_tracer_name = "JVPTracer"

    def __init__(self, linearize: bool = False) -> None:
        self.linearize = linearize
        self.name = "linearize" if linearize else "jvp"

    def primal_tangent(self, value: Any) -> tuple[Any, Any]:
        """(primal, tangent) of an operand; lower-level values have zero tangent."""
        if isinstance(value, JVPTracer) and value._trace is self:
            return value.primal, value.tangent
        return value, Zero(tangent_aval(tracing.get_aval(value, "jvp", 0)))

    def process_primitive(self, primitive: Any, args: Sequence[Any], params: dict[str, Any]):
        if not any(  # pragma: no cover - unreachable from the public API, see below
            isinstance(a, JVPTracer) and a._trace is self and type(a.tangent) is not Zero
            for a in args
        ):
            # No operand carries a tangent: the result is a constant of this trace.
            # A JVPTracer always carries a nonzero tangent (wrap, jvp_flat and
            # linearize keep a zero's primal instead) and this trace is chosen
            # only for one of its tracers (it is never the dynamic trace, nor a
            # collective's axis owner), so every caller has one: kept as a guard.
            primals: Sequence[Any] = [
                a.primal if isinstance(a, JVPTracer) and a._trace is self else a for a in args
            ]
            outs = primitive.bind(*primals, **params)
            return outs if primitive.multiple_results else [outs]
        primals, tangents = zip(*[self.primal_tangent(a) for a in args])
        rule = None
        if self.linearize:
            rule = primitive.linearize_rule
        if rule is None:
            rule = primitive.jvp_rule
        if rule is None:
            # Operands the primitive rejects are reported as such first (a
            # TypeError for complex nextafter), as JAX, which type-checks
            # while tracing jnp's inline-jitted functions, before any rule; a
            # primitive missing its other rules too is named for this one, as JAX
            with contextlib.suppress(NotImplementedError):
                primitive.bind(*primals, **params)
            raise NotImplementedError(
                f"Differentiation rule for '{primitive.name}' not implemented"
            )
        primal_out, tangent_out = rule(list(primals), list(tangents), **params)
        if not primitive.multiple_results:
            return [self.wrap(primal_out, tangent_out)]
        return [self.wrap(p, t) for p, t in zip(primal_out, tangent_out, strict=True)]

    def wrap(self, primal: Any, tangent: Any) -> Any:
        if type(tangent) is Zero:
            # A constant of this trace: the lower-level value itself is exact
            # (JAX's full_lower) and keeps later operations off this trace.
            return primal
        return JVPTracer(self, primal, tangent)


def _aval(value: Any) -> ShapedArray:
    return tracing.get_aval(value, "ad", 0)


def zeros_like_aval(aval: ShapedArray) -> Any:
    """A zero array of type ``aval`` (concrete outside a trace)."""
    if aval.dtype == dtypes.float0:
        return np.zeros(aval.shape, dtypes.float0)

    scalar = TypedScalar(0, aval.dtype, aval.weak_type)
    if not aval.shape:
        # As JAX's zeros (broadcasting to rank 0 applies nothing): a constant,
        # not an equation of the staging trace. A checkpoint's forward pass
        # would otherwise count it among the values it computes and saves (a
        # scan's instantiated carry tangent under everything_saveable).
        stack = tracing._stack
        staging, stack.dynamic = stack.dynamic, None
        try:
            return broadcast_in_dim_p.bind(scalar, shape=(), broadcast_dimensions=())
        finally:
            stack.dynamic = staging
    return broadcast_in_dim_p.bind(scalar, shape=tuple(aval.shape), broadcast_dimensions=())


def user_value(value: Any) -> Any:
    """``value`` as something user code can compute with, as JAX hands out
    arrays: a Python scalar, a ``TypedScalar`` or a NumPy constant (read from
    a Program) becomes a refimpl array (weak type kept)."""
    if (
        isinstance(value, TypedScalar)
        or dtypes.is_python_scalar(value)
        or (isinstance(value, (np.ndarray, np.generic)) and value.dtype != dtypes.float0)
    ):
        aval = tracing.get_aval(value, "ad", 0)
        return broadcast_in_dim_p.bind(
            value, shape=aval.shape, broadcast_dimensions=tuple(range(aval.ndim))
        )
    return value


def _users(values: Sequence[Any]) -> list[Any]:
    return [user_value(v) for v in values]


_TRACED = object()  # (_host_outputs) an output leaf the function computed


def _host_outputs(leaves: Sequence[Any]) -> list[Any]:
    """Per output leaf of a differentiated function, the leaf itself where it
    is host data the function returned as it is (a Python number, a NumPy
    array), else ``_TRACED``: JAX 0.10.2's ``jvp``, ``linearize`` and ``vjp``
    hand such a primal output back untouched (``2.0`` stays a float, a NumPy
    array stays one), only computed outputs are arrays."""
    return [
        leaf
        if dtypes.is_python_scalar(leaf) or isinstance(leaf, (np.ndarray, np.generic))
        else _TRACED
        for leaf in leaves
    ]


def _is_given(value: Any, given: Sequence[Any]) -> bool:
    return any(value is g for g in given)


def _primal_outputs(
    values: Sequence[Any],
    host: Sequence[Any],
    given: Sequence[Any] = (),
    inputs: Sequence[Any] = (),
) -> list[Any]:
    """``values`` as the user gets them: arrays, but the host data of
    :func:`_host_outputs` as the function returned it, (``jvp``,
    ``linearize``) a value that is one of the primals the user ``given`` as
    that object (:func:`_as_given`), and a Python number a custom rule
    computed as that number (not one of the user's ``inputs`` passed through:
    ``vjp`` makes those arrays, as JAX's)."""
    return [
        v
        if _is_given(v, given) or (dtypes.is_python_scalar(v) and not _is_given(v, inputs))
        else user_value(v)
        if h is _TRACED
        else h
        for v, h in zip(values, host, strict=True)
    ]


def _as_given(value: Any, given: Sequence[Any]) -> Any:
    """A result for the user that is one of the objects the user passed in
    (``given``) handed back as that object, anything else as
    :func:`_output_tangent` makes it. JAX's tracers hold the user's own
    primals and tangents and nothing converts them on the way out: where no
    operation made a new value (the function returned its input, a rule
    passed a tangent through: ``jvp(lambda x: x, (a,), (t,))`` is ``(a, t)``,
    ``lax.add(x, 1.0)``'s tangent is ``t``; a linearized or transposed
    identity returns its argument) a NumPy array or a Python number comes
    back as itself, not as an array."""
    if _is_given(value, given):
        return value
    return _output_tangent(value)


def instantiate(tangent: Any) -> Any:
    """A symbolic zero as an array; anything else unchanged."""
    return zeros_like_aval(tangent.aval) if type(tangent) is Zero else tangent


def add_tangents(x: Any, y: Any) -> Any:
    """Sum of two tangents (or cotangents), keeping zeros symbolic: JAX
    0.10.2's ``add_any`` (``add_jaxvals``), with which its backward pass
    accumulates a variable's cotangent.

    Its values are ``add``'s; its weak type is JAX's: staged (a ``jit``, a
    loop or cond body, any program being traced) the sum is typed as its
    first term, as ``add_any``'s abstract evaluation returns its first
    operand's type (``vjp(jit(lambda c: (c, c)), f32(1))`` given a Python
    float then a NumPy cotangent is weak); evaluated eagerly it is
    ``add``'s, weak only when both terms are (``add_any``'s impl is
    ``lax.add``). Terms of different dtypes (a custom_vjp bwd's float32
    cotangent of a bfloat16 value) keep ``add``'s promotion."""
    if type(x) is Zero:
        return y
    if type(y) is Zero:
        return x
    total = add_p.bind(x, y)
    if tracing.current_builder() is None:
        return total
    first = tracing.get_aval(x, "add_any", 0)
    got = tracing.get_aval(total, "add_any", 0)
    if got.weak_type == first.weak_type or got.strip_weak() != first.strip_weak():
        return total
    return convert_element_type_p.bind(total, new_dtype=first.dtype, weak_type=first.weak_type)


def jvp_flat(
    fun: Callable[..., Sequence[Any]],
    primals: Sequence[Any],
    tangents: Sequence[Any],
    linearize: bool = False,
) -> tuple[list[Any], list[Any]]:
    """``fun`` (flat in, flat out) pushed forward: (primal outs, tangent outs).

    Tangents may be ``Zero``; output tangents are ``Zero`` where structurally zero.
    ``linearize``: the tangents are a linear program's tracers (a primitive's
    linearize rule inlining its program), so sub-program primitives in
    ``fun`` use their own linearize rules (partial evaluation).
    """
    with new_main(JVPTrace(linearize)) as trace:
        tracers = [
            p if type(t) is Zero else JVPTracer(trace, p, t)
            for p, t in zip(primals, tangents, strict=True)
        ]
        outs = fun(*tracers)
        pairs = [trace.primal_tangent(o) for o in outs]
    return [p for p, _ in pairs], [t for _, t in pairs]


def tangents_typed_as_primals(value: Any) -> Any:
    """``value`` (an argument: an array, or lists/tuples of them) with the
    tangent of each forward-mode tracer of a ``jvp`` given its primal's weak
    type, as a ``jax.jit`` boundary does (JAX's jit-wrapped ``jnp``
    functions, see ``refimpl/numpy/_jit_boundary.py``); anything else
    unchanged. The values inside ``vmap``'s and ``linearize``'s tracers are
    retyped too (JAX binds the jit again on them, down to the ``jvp``), but
    not ``linearize``'s own tangents: JAX inlines most of these jits into its
    linear program, where they retype nothing (docs/semantics.md)."""
    kind = type(value)
    if kind is JVPTracer:
        primal = tangents_typed_as_primals(value.primal)
        tangent = value.tangent
        if not value._trace.linearize:
            want = tangent_aval(value.aval)
            if tracing.get_aval(tangent, "jvp", 0).weak_type != want.weak_type:
                tangent = match_aval(tangent, want)
        if primal is value.primal and tangent is value.tangent:
            return value
        return JVPTracer(value._trace, primal, tangent)
    if kind is BatchTracer:
        val = tangents_typed_as_primals(value.val)
        return value if val is value.val else BatchTracer(value._trace, val, value.bdim)
    if kind is list or kind is tuple:
        return _items_mapped(tangents_typed_as_primals, value)
    return value


def _is_host(value: Any) -> bool:
    return dtypes.is_python_scalar(value) or isinstance(value, (np.ndarray, np.generic))


def _host_made_array(value: Any, passes_through: bool) -> Any:
    if isinstance(value, Tracer):
        return value._without_host_data(passes_through)
    return user_value(value) if _is_host(value) else value


def jit_outputs_made_arrays(value: Any, passes_through: bool = False) -> Any:
    """``value`` (a jitted ``jnp`` function's result: an array, or
    lists/tuples of them) as a ``jax.jit`` boundary returns it under a
    transformation: a tracer still holding the user's own host data (a NumPy
    array or Python number the function passed through, a tangent, a
    batched value below it included) holds arrays instead, as JAX's jit
    computes new ones (``jvp(jnp.asarray, (a,), (t,))`` gives arrays,
    ``jvp(lambda x: x, ...)`` gives ``(a, t)`` back: :func:`_as_given`).
    One protocol for every tracer, each level deciding for its own data
    (``Tracer._without_host_data``); ``passes_through``: the function hands
    its argument back as it is under ``vmap`` (``asarray`` without a copy)."""
    if isinstance(value, Tracer):
        return value._without_host_data(passes_through)
    if isinstance(value, (list, tuple)):
        return _items_mapped(lambda v: jit_outputs_made_arrays(v, passes_through), value)
    return value


def _items_mapped(fn: Callable[[Any], Any], items: list[Any] | tuple[Any, ...]) -> Any:
    """``fn`` of each item of a list or tuple; the same object when ``fn``
    changed none (callers compare results by identity)."""
    mapped = [fn(v) for v in items]
    if all(a is b for a, b in zip(mapped, items, strict=True)):
        return items
    # a NamedTuple (unique_all's UniqueAllResult, eigh's ...) takes its fields one by one
    return type(items)(*mapped) if hasattr(items, "_fields") else type(items)(mapped)


# --- linearize ------------------------------------------------------------------------------


class _LinearBuilder(Builder):
    """The builder of a linear program (``linearize_flat``). A concrete
    sharded array its equations use (a residual of an eager linearization:
    ``2 * x`` in the tangent of ``x ** 2``) becomes a residual *input*, passed
    as it is, instead of a NumPy constant: the backward (or forward) pass then
    applies its eager operations to the sharded array over its mesh, as JAX
    0.10.2 (whose residuals are its arrays), rather than to a gathered copy
    on one device (docs/semantics.md, "Sharding")."""

    def _add_const(self, value: Any, aval: ShapedArray) -> Any:
        if not is_split(value):
            return super()._add_const(value, aval)
        key = id(value)
        if key not in self._capture_vars:
            self._capture_vars[key] = Var(aval)
            self.captured.append(value)  # kept alive by the list: ids stay unique
        return self._capture_vars[key]


class Linearized:
    """The result of linearizing a flat function at a point.

    ``linear`` maps ``residuals + nonzero tangents in`` to the nonzero
    tangents out: ``linear.in_vars`` are the residual inputs (standing for
    ``residuals``, values of the enclosing level) followed by one input per
    ``in_nonzero`` entry that is True; its outputs are the ``out_nonzero``
    tangents.
    """

    def __init__(self, primals_out, linear, residuals, in_nonzero, out_nonzero, out_avals):
        self.primals_out: list[Any] = primals_out
        self.linear: Program = linear
        self.residuals: list[Any] = residuals
        self.in_nonzero: list[bool] = in_nonzero
        self.out_nonzero: list[bool] = out_nonzero
        self.out_avals: list[ShapedArray] = out_avals


def linearize_flat(
    fun: Callable[..., Sequence[Any]],
    primals: Sequence[Any],
    in_nonzero: Sequence[bool],
    instantiate_out: Sequence[bool] | bool = False,
    own_types: bool = False,
) -> Linearized:
    """Linearize flat ``fun`` at ``primals`` w.r.t. the inputs marked in ``in_nonzero``.

    The primal computation runs at the current level (eagerly outside any
    trace, staged in the enclosing jit); the tangent computation is recorded
    in a linear Program. ``instantiate_out`` forces nonzero (materialized)
    output tangents. The output tangents take their primals' weak types,
    unless ``own_types`` (see :func:`jvp_program`).
    """
    builder = _LinearBuilder("linearize")
    with new_main(builder):
        tangents_in = []
        for p, nz in zip(primals, in_nonzero, strict=True):
            aval = tangent_aval(tracing.get_aval(p, "linearize", 0))
            tangents_in.append(builder.new_input(aval, "a tangent") if nz else Zero(aval))
        with new_main(JVPTrace(linearize=True)) as trace:
            tracers = [
                JVPTracer(trace, p, t) if nz else p
                for p, t, nz in zip(primals, tangents_in, in_nonzero, strict=True)
            ]
            outs = list(fun(*tracers))
            pairs = [trace.primal_tangent(o) for o in outs]
        primals_out = [p for p, _ in pairs]
        tangents_out = [t for _, t in pairs]
        if isinstance(instantiate_out, bool):
            instantiate_out = [instantiate_out] * len(tangents_out)
        # the tangent of an integer or bool output (float0, e.g. what a
        # custom_vjp's bwd gives for it) is zero, whatever value carries it:
        # a symbolic zero, so no float0 operand reaches a primitive (a scan
        # carry, as JAX's loop carries no float0 tangent)
        tangents_out = [
            Zero(tangent_aval(_aval(p)))
            if not inst and type(t) is not Zero and tangent_aval(_aval(p)).dtype == dtypes.float0
            else t
            for t, inst, p in zip(tangents_out, instantiate_out, primals_out, strict=True)
        ]
        tangents_out = [
            t
            if (type(t) is Zero or own_types) and not inst
            else match_aval(t, tangent_aval(_aval(p)))
            for t, inst, p in zip(tangents_out, instantiate_out, primals_out, strict=True)
        ]
        out_nonzero = [type(t) is not Zero for t in tangents_out]
        out_avals = [
            t.aval if type(t) is Zero else tracing.get_aval(t, "linearize", i)
            for i, t in enumerate(tangents_out)
        ]
        linear = builder.build([t for t in tangents_out if type(t) is not Zero])
    return Linearized(
        primals_out, linear, list(builder.captured), list(in_nonzero), out_nonzero, out_avals
    )


# --- transpose ------------------------------------------------------------------------------


def backward_pass(
    program: Program,
    linear: Sequence[bool],
    args: Sequence[Any],
    cts_out: Sequence[Any],
    linear_avals: Sequence[ShapedArray | None] | None = None,
) -> list[Any]:
    """Transpose ``program`` w.r.t. its inputs marked ``linear``.

    ``args`` gives a value for every non-linear input (anything for the
    linear ones, ignored); ``cts_out`` one cotangent per output (``Zero``
    allowed). Returns the cotangent of each linear input (``Zero`` where
    nothing flows back) and None for the others. Equations whose inputs are
    all non-linear are evaluated forward first (with ``bind``); the others
    are transposed in reverse order.

    ``linear_avals``: per input, the type its cotangent is accumulated as
    (None: the input's own tangent type). A transpose rule sees a linear
    input of that type (JAX's accumulator of the input: a transposed scan
    body's carry is typed as its cotangent, so ``convert_element_type``'s
    transpose converts to the cotangent's weak type), and a zero cotangent
    has it.
    """
    env: dict[int, Any] = {}
    linear_ids: set[int] = set()
    undefined: dict[int, ShapedArray] = {}  # the linear inputs' accumulator types
    for var, value in zip(program.const_vars, program.consts, strict=True):
        env[var.id] = tracing._const_operand(value, var.aval)
    given_avals = [None] * len(program.in_vars) if linear_avals is None else linear_avals
    for var, value, lin, aval in zip(program.in_vars, args, linear, given_avals, strict=True):
        if lin:
            linear_ids.add(var.id)
            undefined[var.id] = var.aval if aval is None else aval
        else:
            env[var.id] = value

    def read(atom: Any) -> Any:
        if isinstance(atom, Literal):
            return TypedScalar(atom.value, atom.aval.dtype, atom.aval.weak_type)
        return env[atom.id]

    linear_eqns = []
    for eqn in program.eqns:
        if any(not isinstance(a, Literal) and a.id in linear_ids for a in eqn.inputs):
            linear_eqns.append(eqn)
            linear_ids.update(v.id for v in eqn.outputs)
        else:
            outs = eqn.primitive.bind(*[read(a) for a in eqn.inputs], **eqn.params)
            outs = outs if eqn.primitive.multiple_results else [outs]
            for var, value in zip(eqn.outputs, outs, strict=True):
                env[var.id] = value

    cts: dict[int, Any] = {}

    def add_ct(atom: Any, ct: Any) -> None:
        if isinstance(atom, Literal) or atom.id not in linear_ids or ct is None:
            return
        if type(ct) is Zero:
            return
        previous = cts.get(atom.id)
        cts[atom.id] = ct if previous is None else add_tangents(previous, ct)

    for atom, ct in zip(program.out_vars, cts_out, strict=True):
        add_ct(atom, ct)

    for eqn in reversed(linear_eqns):
        outs_ct = [cts.pop(v.id, None) for v in eqn.outputs]
        if all(ct is None for ct in outs_ct):
            continue
        outs_ct = [
            Zero(tangent_aval(v.aval)) if ct is None else ct
            for ct, v in zip(outs_ct, eqn.outputs, strict=True)
        ]
        rule = eqn.primitive.transpose_rule
        if rule is None:
            raise NotImplementedError(
                f"Transpose rule (for reverse-mode differentiation) for "
                f"'{eqn.primitive.name}' not implemented"
            )
        invals = [
            UndefinedPrimal(undefined.get(a.id, a.aval))
            if not isinstance(a, Literal) and a.id in linear_ids
            else read(a)
            for a in eqn.inputs
        ]
        ct_arg = outs_ct if eqn.primitive.multiple_results else outs_ct[0]
        cts_in = rule(ct_arg, *invals, **eqn.params)
        for atom, ct in zip(eqn.inputs, cts_in, strict=True):
            add_ct(atom, ct)

    result: list[Any] = []
    for var, lin in zip(program.in_vars, linear, strict=True):
        if not lin:
            result.append(None)
        else:
            ct = cts.get(var.id)
            result.append(Zero(tangent_aval(undefined[var.id])) if ct is None else ct)
    return result


def transpose_linearized(lin: Linearized, cts_out: Sequence[Any]) -> list[Any]:
    """Cotangents of the nonzero tangent inputs of ``lin`` (``Zero`` allowed)."""
    num_res = len(lin.residuals)
    num_lin = len(lin.linear.in_vars) - num_res
    nonzero_cts = [ct for ct, nz in zip(cts_out, lin.out_nonzero, strict=True) if nz]
    linear_mask = [False] * num_res + [True] * num_lin
    args = list(lin.residuals) + [None] * num_lin
    cts = backward_pass(lin.linear, linear_mask, args, nonzero_cts)
    return cts[num_res:]


# --- the public API ---------------------------------------------------------------------


def _tree():
    return pytree


def _dtype_of(value: Any) -> np.dtype:
    if isinstance(value, np.ndarray) and value.dtype == dtypes.float0:
        return value.dtype
    return tracing.get_aval(value, "jvp", 0).dtype


def _shape_of(value: Any) -> tuple[int, ...]:
    if isinstance(value, np.ndarray):
        return value.shape
    return tracing.get_aval(value, "jvp", 0).shape


def _input_tangent(primal: Any, tangent: Any) -> Any:
    """A tangent argument as used inside: float0 tangents are symbolic zeros."""
    aval = tangent_aval(tracing.get_aval(primal, "jvp", "primal"))
    if aval.dtype == dtypes.float0:
        return Zero(aval)
    return tangent


def _cotangent_layout(primal: Any) -> Any:
    """Where the cotangent of the argument leaf ``primal`` lives: None for an
    unsharded one; for a sharded array (``is_split``), its own sharding on a
    mesh with Explicit axes (JAX 0.10.2 types a cotangent as its primal, and
    an Explicit sharding is part of the type), else P() over its mesh -- the
    layout a cotangent the backward pass computed off the mesh gets (Auto
    axes: JAX's eager backward operations run over the mesh and keep
    whatever layout they compute)."""
    if not is_split(primal):
        return None
    sharding = primal.sharding
    mesh = sharding.mesh
    if AxisType.Explicit in mesh.axis_types:  # spelled as JAX types it: one entry per axis
        spec = tuple(sharding.spec) + (None,) * (primal.ndim - len(sharding.spec))
        return NamedSharding(mesh, PartitionSpec(*spec))
    return NamedSharding(mesh, PartitionSpec())


def _laid_out(ct: Any, layout: Any) -> Any:
    """The cotangent ``ct`` of an argument leaf laid out as
    :func:`_cotangent_layout` says (``layout`` None: unchanged)."""
    if layout is None or isinstance(ct, Tracer) or type(ct) is Zero:
        return ct
    explicit = AxisType.Explicit in layout.mesh.axis_types
    if is_split(ct) and not explicit:
        return ct  # Auto axes: a cotangent already over the mesh keeps its layout
    if isinstance(ct, MeshArray) and ct.sharding == layout:
        # the same blocks; only the spec's spelling (P() vs P(None, None)) differs
        return MeshArray(list(ct._shards), layout, ct.aval)
    return put_sharded(ct, layout)


def _output_tangent(tangent: Any) -> Any:
    """A tangent for the user: zeros instantiated (float0 for integer primals)."""
    if type(tangent) is Zero:
        return zeros_like_aval(tangent.aval)
    if dtypes.is_python_scalar(tangent):  # a custom rule's own number, as JAX hands it back
        return tangent
    return user_value(tangent)


@api_boundary
def jvp(fun: Callable, primals: Any, tangents: Any, has_aux: bool = False) -> Any:
    """Like ``jax.jvp``: ``(fun(*primals), d fun(primals) . tangents)``, forward mode.

    Args:
        fun: The function to differentiate.
        primals: A tuple (or list) of its arguments (pytrees).
        tangents: A tuple (or list) of the same structure: each tangent has
            its primal's shape and tangent dtype (the same dtype for inexact
            primals, ``float0`` for integer and bool ones).
        has_aux: Whether ``fun`` returns ``(out, aux)``.

    Returns:
        ``(out, tangent_out)`` (``(out, tangent_out, aux)`` with ``has_aux``).

    Raises:
        TypeError: ``primals``/``tangents`` are not tuples or lists, differ
            in structure, or a tangent's shape or dtype does not match its
            primal.

    Example:
        >>> import refimpl as ri, refimpl.numpy as rnp
        >>> ri.jvp(rnp.sin, (0.0,), (1.0,))
        (Array(0., dtype=float32, weak_type=True), Array(1., dtype=float32, weak_type=True))
    """
    tracing.check_transform_fun(fun, "jvp")
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError(
            "primal and tangent arguments to jax.jvp must be tuples or lists; "
            f"found {type(primals).__name__} and {type(tangents).__name__}."
        )
    tu = _tree()
    p_leaves, p_tree = tu.tree_flatten(tuple(primals))
    t_leaves, t_tree = tu.tree_flatten(tuple(tangents))
    if t_tree != p_tree:  # float0[key.shape] for a key? (only then: no cost otherwise)
        t_leaves, t_tree = tu.tree_flatten(key_tangents_in(tu, tuple(primals), tuple(tangents)))
    # compared as given (JAX's): a tuple of primals with a list of tangents differs
    if p_tree != t_tree or type(primals) is not type(tangents):
        raise TypeError(
            "primal and tangent arguments to jax.jvp must have the same tree structure; "
            f"primals have tree structure {tu.tree_structure(primals)} whereas tangents have "
            f"tree structure {tu.tree_structure(tangents)}."
        )
    _refuse_ref_leaves("jvp", p_leaves, reverse=False)
    for p, t in zip(p_leaves, t_leaves, strict=True):
        expected = tangent_aval(tracing.get_aval(p, "jvp", "primal")).dtype
        got = _dtype_of(t)
        if expected != got:
            raise TypeError(
                "primal and tangent arguments to jax.jvp do not match; dtypes must be equal, "
                "or in case of int/bool primal dtype the tangent dtype must be float0."
                f"Got primal dtype {_dtype_of(p)} and so expected tangent dtype {expected}, "
                f"but got tangent dtype {got} instead."
            )
        if _shape_of(p) != _shape_of(t):
            raise ValueError(
                "jvp called with different primal and tangent shapes;"
                f"Got primal shape {_shape_of(p)} and tangent shape as {_shape_of(t)}"
            )
    out_info: list[Any] = []

    def flat_fun(*leaves: Any) -> list[Any]:
        out = fun(*tu.tree_unflatten(p_tree, list(leaves)))
        if has_aux:
            out, aux = _split_aux("jvp", out)
            aux_leaves, aux_tree = _aux_outputs(aux)
        else:
            aux_leaves, aux_tree = [], None
        out_leaves, out_tree = tu.tree_flatten(out)
        out_info.append((out_tree, len(out_leaves), aux_tree, _host_outputs(out_leaves)))
        return out_leaves + aux_leaves

    tangents_in = [_input_tangent(p, t) for p, t in zip(p_leaves, t_leaves, strict=True)]
    outs, touts = jvp_flat(flat_fun, p_leaves, tangents_in)
    out_tree, n_out, aux_tree, host = out_info[0]
    primal_out = tu.tree_unflatten(out_tree, _primal_outputs(outs[:n_out], host, p_leaves))
    tangent_out = tu.tree_unflatten(out_tree, [_as_given(t, t_leaves) for t in touts[:n_out]])
    tangent_out = extended_cotangents(tu, tangent_out)  # a key's: float0[key.shape]
    if has_aux:
        return primal_out, tangent_out, _aux_value(aux_tree, outs[n_out:], p_leaves)
    return primal_out, tangent_out


def _aux_outputs(aux: Any) -> tuple[list[Any], Any]:
    """``aux``'s traced leaves (outputs of the differentiated program) and what
    rebuilds it (:func:`_aux_value`): a leaf that is not a tracer -- a Python
    number, a NumPy array, an array computed from no input -- is returned as it
    is, as JAX returns it (not converted to an array)."""
    leaves, tree = _tree().tree_flatten(aux)
    traced = [isinstance(leaf, Tracer) for leaf in leaves]
    kept = [None if t else leaf for leaf, t in zip(leaves, traced, strict=True)]
    return [leaf for leaf, t in zip(leaves, traced, strict=True) if t], (tree, traced, kept)


def _aux_value(info: Any, outs: Sequence[Any], given: Sequence[Any] = ()) -> Any:
    """The aux pytree from :func:`_aux_outputs`' record and the traced leaves'
    values (one of the primals ``given`` by the user as that object, as
    :func:`_primal_outputs`)."""
    tree, traced, kept = info
    values = iter(_primal_outputs(outs, [_TRACED] * len(outs), given))
    leaves = [next(values) if t else leaf for t, leaf in zip(traced, kept, strict=True)]
    return _tree().tree_unflatten(tree, leaves)


def _split_aux(api: str, out: Any) -> tuple[Any, Any]:
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise TypeError(
            "expected function with aux output to return a two-element tuple, but got type "
            f"{type(out)} with value {out!r:.200} ({api} with has_aux=True)"
        )
    return out[0], out[1]


def _held_type(aval: AbstractRef) -> str:
    """The type a ref holds as JAX's messages spell it (``float32[3]``)."""
    return f"{aval.dtype.name}[{','.join(map(str, aval.shape))}]"


def _refuse_ref_leaves(name: str, leaves: Sequence[Any], reverse: bool) -> None:
    """A mutable array reference has no tangent or cotangent of its own: as
    an argument ``grad``/``jacrev``/``jvp``/``jacfwd`` differentiate, JAX
    0.10.2 fails on it with a ``ValueError`` (reverse mode: its "Expected
    cotangent type Ref{float32[3]} but got float32[3]"). Refused before
    ``fun`` runs. (``vjp`` refuses it when the pullback is called, as JAX.)"""
    for i, leaf in enumerate(leaves):
        aval = tracing.get_aval(leaf, name, i)
        if type(aval) is AbstractRef:
            inner = _held_type(aval)
            what = (
                f"Expected cotangent type Ref{{{inner}}} but got {inner}"
                if reverse
                else f"`get` must be called on `Ref` types: {inner}"
            )
            raise ValueError(
                f"{name}: {what}: differentiated argument leaf {i} is a mutable array "
                f"reference, which has no {'co' if reverse else ''}tangent; differentiate "
                "the value it holds (ref[...]) instead"
            )


def _differentiable(value: Any) -> bool:
    aval = tracing.get_aval(value, "vjp", 0)
    # a Ref argument is passed through as itself (a custom_vjp fwd may hand
    # it to bwd); it has no tangent
    return type(aval) is not AbstractRef and dtypes.is_inexact(aval.dtype)


class _Pullback:
    """The function ``vjp`` returns, without its residuals: output cotangent ->
    input cotangents. ``vjp`` hands it out as ``tree_util.Partial(pullback,
    residuals)``, a pytree whose leaves are the residuals (as JAX's), so it
    can be returned from or passed into ``jit``; nothing here holds a value
    of the trace that made it."""

    def __init__(
        self, lin: Linearized, in_tree: Any, in_leaves: list, out_tree: Any, name: str = "fun"
    ) -> None:
        self.name = name  # the differentiated function's, for the arity error
        self.linear = lin.linear
        self.in_nonzero = lin.in_nonzero
        self.out_nonzero = lin.out_nonzero
        self.out_avals = lin.out_avals
        self.in_tree = in_tree
        avals = [tracing.get_aval(x, "vjp", 0) for x in in_leaves]
        self.in_avals = [a if type(a) is AbstractRef else tangent_aval(a) for a in avals]
        self.in_layouts = [_cotangent_layout(x) for x in in_leaves]
        self.out_tree = out_tree

    def __call__(self, residuals: list, *given: Any) -> tuple[Any, ...]:
        if len(given) != 1:
            raise TypeError(_pullback_arity_message(self.name, len(given)))
        (ct,) = given
        tu = _tree()
        ct_leaves, ct_tree = tu.tree_flatten(ct)
        if ct_tree != self.out_tree:  # float0[key.shape] for a key?
            ct = key_tangents_in(tu, _float0_like(tu, self.out_tree, self.out_avals), ct)
            ct_leaves, ct_tree = tu.tree_flatten(ct)
        if ct_tree != self.out_tree:  # a ValueError with these words, as JAX 0.10.2
            raise ValueError(
                "unexpected tree structure.\n\nThe argument to a VJP function returned by "
                "vjp must match the pytree structure of the differentiated function's output: "
                f"got {ct_tree}, expected {self.out_tree} "
                f"({pytree.treedef_difference(ct_tree, self.out_tree)})."
            )
        for i, (leaf, aval) in enumerate(zip(ct_leaves, self.out_avals, strict=True)):
            if _shape_of(leaf) != aval.shape:  # JAX 0.10.2's words, then the leaf
                got = _jax_type(getattr(leaf, "dtype", None), _shape_of(leaf))
                want = _jax_type(aval.dtype, aval.shape)
                raise ValueError(
                    "unexpected JAX type (e.g. shape/dtype) for argument to VJP function: got "
                    f"{got}, but expected {want} because the corresponding output of the "
                    f"differentiated function had JAX type {want} (cotangent leaf {i})"
                )
            # A differentiable output's cotangent has its dtype (a Python scalar
            # its default one), as JAX 0.10.2; an integer or bool output's
            # cotangent is not read, so any is taken.
            if aval.dtype != dtypes.float0:
                own = getattr(leaf, "dtype", None)  # (float0 data has no aval)
                is_float0 = own is not None and np.dtype(own) == dtypes.float0
                ct_dtype = dtypes.float0 if is_float0 else tracing.get_aval(leaf, "vjp", i).dtype
                if ct_dtype != aval.dtype:
                    raise ValueError(
                        "unexpected JAX type (e.g. shape/dtype) for argument to VJP function: "
                        f"cotangent leaf {i} has dtype {ct_dtype}, but the corresponding "
                        f"output of the differentiated function has dtype {aval.dtype}"
                    )
        cts_in = [
            Zero(aval) if aval.dtype == dtypes.float0 else leaf
            for leaf, aval in zip(ct_leaves, self.out_avals, strict=True)
        ]
        lin = Linearized(
            [], self.linear, list(residuals), self.in_nonzero, self.out_nonzero, self.out_avals
        )
        cts = iter(transpose_linearized(lin, cts_in))
        grads = []
        for i, (aval, nz) in enumerate(zip(self.in_avals, self.in_nonzero, strict=True)):
            if type(aval) is AbstractRef:  # JAX fails here too
                inner = _held_type(aval)
                raise ValueError(
                    f"vjp: Expected cotangent type Ref{{{inner}}} but got {inner}: primal "
                    f"leaf {i} is a mutable array reference, which has no cotangent"
                )
            if nz:  # (a cotangent the user gave, passed through, is handed back as given)
                grads.append(_laid_out(_as_given(next(cts), ct_leaves), self.in_layouts[i]))
            else:
                grads.append(zeros_like_aval(aval))
        return extended_cotangents(tu, tu.tree_unflatten(self.in_tree, grads))


def _jax_type(dtype: Any, shape: tuple[int, ...]) -> str:
    """A type as JAX's VJP errors write it: ``float32[2,4]`` (a Python
    scalar's dtype is its default one)."""
    name = np.dtype(dtype).name if dtype is not None else "float32"
    return f"{name}[{','.join(str(d) for d in shape)}]"


def _pullback_arity_message(name: str, count: int) -> str:
    """JAX 0.10.2's words for a pullback called with other than one argument."""
    return (
        f"\nThe function returned by `jax.vjp` applied to {name} was called with {count} "
        "arguments,\nbut functions returned by `jax.vjp` must be called with a single "
        "argument\ncorresponding to the single value returned by the function being "
        "differentiated\n(even if that returned value is a tuple or other container).\n\n"
        "For example, if we have:\n\n  def f(x):\n    return (x, x)\n  _, f_vjp = "
        "jax.vjp(f, 1.0)\n\nthe function `f` returns a single tuple as output, and so we "
        "call `f_vjp` with a\nsingle tuple as its argument:\n\n  x_bar, = f_vjp((2.0, "
        "2.0))\n\nIf we instead call `f_vjp(2.0, 2.0)`, with the values 'splatted out' as\n"
        "arguments rather than in a tuple, this error can arise.\n"
    )


def extended_cotangents(tu: Any, tree: Any) -> Any:
    """``tree`` with each array of an extended dtype (a typed PRNG key, a
    pytree node over its key data, whose cotangent came back as float0 key
    data) replaced by float0 zeros of the key array's own shape, as JAX's
    cotangent of a key (``float0[key.shape]``)."""

    def extended(v: Any) -> bool:
        return isinstance(getattr(v, "dtype", None), dtypes.ExtendedDtype)

    return tu.tree_map(
        lambda v: np.zeros(v.shape, dtypes.float0) if extended(v) else v, tree, is_leaf=extended
    )


def key_tangents_in(tu: Any, like: Any, tree: Any) -> Any:
    """``tree`` (tangents or cotangents given by the user) with each float0
    array (of a key array's shape) at the place of a key in ``like`` (the
    primals, or a tree of that structure), made the key node over float0 key
    data that refimpl differentiates: the inverse of :func:`extended_cotangents`,
    so ``jvp``/``linearize``/``vjp`` take JAX's ``float0[key.shape]`` for a
    key. Anything else is left as given (for the caller's own checks)."""

    def extended(v: Any) -> bool:
        return isinstance(getattr(v, "dtype", None), dtypes.ExtendedDtype)

    def inward(key: Any, t: Any) -> Any:
        if not extended(key) or extended(t) or _dtype_of(t) != dtypes.float0:
            return t
        # float0 key data of t's shape (another shape than the key's stays
        # the caller's shape error, as JAX's)
        (data,) = tu.tree_leaves(key)
        words = _shape_of(data)[len(key.shape) :]
        zeros = np.zeros((*_shape_of(t), *words), dtypes.float0)
        return tu.tree_unflatten(tu.tree_structure(key), [zeros])

    try:
        return tu.tree_map(inward, like, tree, is_leaf=extended)
    except (TypeError, ValueError):  # another structure: the caller reports it
        return tree


def _float0_like(tu: Any, treedef: Any, avals: list) -> Any:
    """A tree of ``treedef`` over float0 zeros of ``avals``' shapes (its key
    nodes are keys of the right shapes, for :func:`key_tangents_in`)."""
    return tu.tree_unflatten(treedef, [np.zeros(a.shape, dtypes.float0) for a in avals])


def _flat_with_aux(
    fun: Callable, in_tree: Any, has_aux: bool, api: str, out_info: list[Any]
) -> Callable[..., list[Any]]:
    """``fun`` on flat leaves returning ``out leaves + aux leaves``; each call
    appends ``(out_tree, number of out leaves, aux_tree or None, host outputs)``
    to ``out_info`` (:func:`_host_outputs` of the out leaves)."""
    tu = _tree()

    def flat_fun(*xs: Any) -> list[Any]:
        out = fun(*tu.tree_unflatten(in_tree, list(xs)))
        if has_aux:
            out, aux = _split_aux(api, out)
            aux_leaves, aux_tree = _aux_outputs(aux)
        else:
            aux_leaves, aux_tree = [], None
        out_leaves, out_tree = tu.tree_flatten(out)
        out_info.append((out_tree, len(out_leaves), aux_tree, _host_outputs(out_leaves)))
        return out_leaves + aux_leaves

    return flat_fun


@api_boundary
def vjp(fun: Callable, *primals: Any, has_aux: bool = False, reduce_axes: Any = ()) -> Any:
    """Like ``jax.vjp``: ``fun``'s value and its pullback (reverse mode).

    Args:
        fun: The function to differentiate.
        *primals: Its arguments (pytrees of arrays or scalars).
        has_aux: Whether ``fun`` returns ``(out, aux)``.
        reduce_axes: JAX's deprecated parameter: anything but empty is
            a ``NotImplementedError``, as in JAX.

    Returns:
        ``(fun(*primals), pullback)`` (``(out, pullback, aux)`` with
        ``has_aux``): ``pullback(ct)``, for a cotangent ``ct`` of ``out``'s
        structure, shapes and dtypes, returns the tuple of input cotangents
        ``ct . d fun(primals)``, one per primal.

    Raises:
        TypeError: A primal is not an array or scalar; ``pullback`` is given
            a cotangent of the wrong structure, shape or dtype.

    Example:
        >>> import refimpl as ri, refimpl.numpy as rnp
        >>> y, pullback = ri.vjp(rnp.sin, 0.0)
        >>> pullback(1.0)
        (Array(1., dtype=float32, weak_type=True),)
    """
    _refuse_reduce_axes(reduce_axes, "vjp")
    user = _UserLinearization(fun, primals, has_aux, "vjp")
    name = getattr(fun, "__name__", str(fun))
    pullback = _Pullback(user.lin, user.in_tree, user.leaves, user.out_tree, name)
    return user.results(VJPPullback(pullback, list(user.lin.residuals)))


class GradRef:
    """What ``pullback.with_refs(...)`` returns for a primal whose cotangent
    went into a ref (JAX 0.10.2's ``GradRef()``)."""

    def __repr__(self) -> str:
        return "GradRef()"


class VJPPullback(pytree.Partial):
    """``vjp``'s pullback: a pytree of its residuals (so it can cross
    ``jit``) with JAX's ``with_refs``."""

    def with_refs(self, *refs: Any) -> Callable[[Any], tuple]:
        """``pullback.with_refs(*refs)(ct)``: one entry per primal; where it is
        a ``Ref`` (a pytree of refs for a pytree primal), the cotangent is
        added into it (``ref[...] += ct``) and ``GradRef()`` returned in its
        place; any other entry (``None``, a placeholder object) leaves the
        cotangent returned as usual."""

        def pullback(ct: Any) -> tuple:
            cts = self(ct)
            if len(refs) != len(cts):
                raise TypeError(
                    f"vjp pullback.with_refs: got {len(refs)} entries for the {len(cts)} "
                    "primals of the function (one per primal: a Ref, or any other "
                    "value for a cotangent returned as usual)"
                )
            out: list[Any] = []
            for entry, c in zip(refs, cts, strict=True):
                ref_leaves = _tree().tree_leaves(entry, is_leaf=_is_ref)
                if not ref_leaves or not all(_is_ref(r) for r in ref_leaves):
                    out.append(c)
                    continue
                refs_flat = _tree().tree_flatten(entry, is_leaf=_is_ref)
                ct_leaves = _tree().tree_leaves(c)
                if len(refs_flat[0]) != len(ct_leaves):
                    raise TypeError(
                        "vjp pullback.with_refs: a pytree of refs must have the structure "
                        f"of its primal ({len(ct_leaves)} leaves), got {len(refs_flat[0])}"
                    )
                for r, leaf in zip(refs_flat[0], ct_leaves, strict=True):
                    r[...] += leaf
                out.append(GradRef())
            return tuple(out)

        return pullback


def _is_ref(x: Any) -> bool:
    # by its type: refimpl.ref (the Ref class) sits above this module
    return isinstance(getattr(x, "aval", None), AbstractRef)


pytree.register_pytree_node(
    VJPPullback,
    lambda p: ((p.args, p.keywords), p.func),
    lambda func, xs: VJPPullback(func, *list(xs)[0], **list(xs)[1]),
)


class _UserLinearization:
    """What ``vjp`` and ``linearize`` share: ``fun`` (pytrees in and out,
    maybe with aux) linearized at ``primals`` on flat leaves; ``lin`` has the
    differentiated outputs only, ``results`` builds the API's return value."""

    def __init__(self, fun: Callable, primals: tuple, has_aux: bool, api: str) -> None:
        tracing.check_transform_fun(fun, api)
        self.tu = _tree()
        self.has_aux = has_aux
        self.leaves, self.in_tree = self.tu.tree_flatten(tuple(primals))
        out_info: list[Any] = []
        flat_fun = _flat_with_aux(fun, self.in_tree, has_aux, api, out_info)
        self.nonzero = [_differentiable(x) for x in self.leaves]
        full = linearize_flat(flat_fun, self.leaves, self.nonzero, own_types=True)
        self.out_tree, self.n_out, self.aux_tree, self.host = out_info[0]
        self.primals_out = full.primals_out
        self.lin = _drop_outputs(full, self.n_out)
        # linearize hands back a primal the user gave as that object, as JAX's
        # (vjp's outputs are arrays: JAX 0.10.2's vjp converts them too)
        self.given = self.leaves if api == "linearize" else []

    def results(self, function: Callable) -> tuple:
        """``(primal_out, function)``, with ``aux`` appended under ``has_aux``."""
        outs, n_out = self.primals_out, self.n_out
        primals = _primal_outputs(outs[:n_out], self.host, self.given, self.leaves)
        primal_out = self.tu.tree_unflatten(self.out_tree, primals)
        if self.has_aux:
            return primal_out, function, _aux_value(self.aux_tree, outs[n_out:], self.given)
        return primal_out, function


def _drop_outputs(lin: Linearized, keep: int) -> Linearized:
    """``lin`` restricted to its first ``keep`` outputs (aux outputs have no
    cotangent; their tangent outputs are simply not read)."""
    if keep == len(lin.out_nonzero):
        return lin
    n_nz = sum(lin.out_nonzero[:keep])
    linear = Program(
        in_vars=lin.linear.in_vars,
        eqns=lin.linear.eqns,
        out_vars=lin.linear.out_vars[:n_nz],
        const_vars=lin.linear.const_vars,
        consts=lin.linear.consts,
    )
    return Linearized(
        lin.primals_out[:keep],
        linear,
        lin.residuals,
        lin.in_nonzero,
        lin.out_nonzero[:keep],
        lin.out_avals[:keep],
    )


def _argnums_tuple(api: str, argnums: Any) -> tuple[int, ...]:
    if isinstance(argnums, (int, np.integer)) and not isinstance(argnums, bool):
        return (int(argnums),)
    if isinstance(argnums, (tuple, list)) and all(
        isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in argnums
    ):
        return tuple(int(a) for a in argnums)
    raise TypeError(f"{api}: argnums must be an int or a tuple of ints, got {argnums!r}")


def _dyn_args(api: str, args: tuple, argnums: tuple[int, ...]) -> None:
    if argnums and max(argnums) >= len(args):
        shown = argnums if len(argnums) > 1 else argnums[0]
        raise TypeError(
            f"differentiating with respect to argnums={shown} "
            f"requires at least {max(argnums) + 1} positional arguments to be passed by the "
            f"caller, but got only {len(args)} positional arguments."
        )


def _check_input_dtype_revderiv(name: str, holomorphic: bool, allow_int: bool, x: Any) -> None:
    aval = tracing.get_aval(x, name, "argument")
    if holomorphic and not dtypes.is_complex(aval.dtype):
        raise TypeError(
            f"{name} with holomorphic=True requires inputs with complex dtype, "
            f"but got {aval.dtype.name}."
        )
    if not dtypes.is_inexact(aval.dtype) and not allow_int:
        raise TypeError(
            f"{name} requires real- or complex-valued inputs (input dtype that is a sub-dtype "
            f"of np.inexact), but got {aval.dtype.name}. If you want to use Boolean- or "
            "integer-valued inputs, use vjp or set allow_int to True."
        )


def _check_output_dtype_revderiv(name: str, holomorphic: bool, x: Any) -> None:
    aval = tracing.get_aval(x, name, "output")
    if holomorphic:
        if not dtypes.is_complex(aval.dtype):
            raise TypeError(
                f"{name} with holomorphic=True requires outputs with complex dtype, "
                f"but got {aval.dtype.name}."
            )
    elif dtypes.is_complex(aval.dtype):
        raise TypeError(
            f"{name} requires real-valued outputs (output dtype that is a sub-dtype of "
            f"np.floating), but got {aval.dtype.name}. For holomorphic differentiation, pass "
            "holomorphic=True. For differentiation of non-holomorphic functions involving "
            "complex outputs, use jax.vjp directly."
        )
    elif not dtypes.is_inexact(aval.dtype):
        raise TypeError(
            f"{name} requires real-valued outputs (output dtype that is a sub-dtype of "
            f"np.floating), but got {aval.dtype.name}. For differentiation of functions with "
            "integer outputs, use jax.vjp directly."
        )


def _check_scalar(x: Any) -> None:
    msg = "Gradient only defined for scalar-output functions. Output {}."
    try:
        aval = tracing.get_aval(x, "grad", "output")
    except TypeError:
        raise TypeError(msg.format(f"was {x}")) from None
    if aval.shape != ():
        raise TypeError(msg.format(f"had shape: {aval.shape}"))


def value_and_grad(
    fun: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    allow_int: bool = False,
    reduce_axes: Any = (),
) -> Callable:
    """Like ``jax.value_and_grad``: ``fun``'s value and its gradient, by reverse mode.

    Args:
        fun: A function returning a real scalar (with ``has_aux``: a pair
            ``(scalar, aux)``).
        argnums: The positional argument(s) to differentiate: an int, or a
            sequence of ints (the gradient is then a tuple).
        has_aux: Whether ``fun`` returns ``(value, aux)``; ``aux`` is
            returned as it is, not differentiated.
        holomorphic: Differentiate a complex ``fun`` of complex inputs as
            holomorphic.
        allow_int: Accept integer/bool inputs (their gradient is float0 zeros).
        reduce_axes: JAX's deprecated parameter: anything but empty is
            a ``NotImplementedError``, as in JAX.

    Returns:
        A function with ``fun``'s signature returning ``(value, gradient)``
        (``((value, aux), gradient)`` with ``has_aux``); the gradient has the
        structure and dtypes of the ``argnums`` argument(s).

    Raises:
        TypeError: An input is not real or complex (integer, bool) without
            ``allow_int``; the output is not a scalar, or is complex without
            ``holomorphic``; ``argnums`` names a missing argument.

    Example:
        >>> import refimpl as ri
        >>> ri.value_and_grad(lambda x: x**2)(3.0)
        (Array(9., dtype=float32, weak_type=True), Array(6., dtype=float32, weak_type=True))
    """
    return _value_and_grad(
        "value_and_grad", fun, argnums, has_aux, holomorphic, allow_int, reduce_axes
    )


def _refuse_reduce_axes(reduce_axes: Any, what: str) -> None:
    """JAX 0.10.2 keeps the ``reduce_axes`` parameter only to refuse it."""
    if reduce_axes:
        raise NotImplementedError(f"reduce_axes argument to {what} is deprecated")


def _value_and_grad(
    name: str, fun, argnums, has_aux, holomorphic, allow_int, reduce_axes
) -> Callable:
    """``value_and_grad`` whose errors name ``name`` (the API the user called)."""
    _refuse_reduce_axes(reduce_axes, "grad")
    tracing.check_transform_fun(fun, name)
    nums = _argnums_tuple(name, argnums)

    @api_boundary
    def value_and_grad_f(*args: Any, **kwargs: Any) -> Any:
        tu = _tree()
        _dyn_args(name, args, nums)
        dyn = tuple(args[i] for i in nums)
        leaves, in_tree = tu.tree_flatten(dyn)
        _refuse_ref_leaves(name, leaves, reverse=True)
        for leaf in leaves:
            _check_input_dtype_revderiv(name, holomorphic, allow_int, leaf)
        aux_info: list[Any] = []

        def flat_fun(*xs: Any) -> list[Any]:
            new_dyn = tu.tree_unflatten(in_tree, list(xs))
            full = list(args)
            for i, value in zip(nums, new_dyn, strict=True):
                full[i] = value
            out = fun(*full, **kwargs)
            if has_aux:
                out, aux = _split_aux(name, out)
                aux_leaves, aux_tree = _aux_outputs(aux)
            else:
                aux_leaves, aux_tree = [], None
            _check_scalar(out)
            _check_output_dtype_revderiv(name, holomorphic, out)
            aux_info.append(aux_tree)
            return [out, *aux_leaves]

        nonzero = [_differentiable(x) for x in leaves]
        # as vjp: the output tangent keeps the type its JVP computed, and the
        # seed is a one of the output's type (JAX's _one(ans)), so a rule
        # whose tangent is weak for a strong output gives a strong gradient
        full = linearize_flat(flat_fun, leaves, nonzero, own_types=True)
        aux_leaves = full.primals_out[1:]
        lin = _drop_outputs(full, 1)
        value = lin.primals_out[0]
        seed = tangent_aval(_aval(value))
        ct = _ones_like(seed) if lin.out_nonzero[0] else Zero(lin.out_avals[0])
        ct = _on_device_of(ct, value)
        cts = iter(transpose_linearized(lin, [ct]))
        grads = []
        for leaf, nz in zip(leaves, nonzero, strict=True):
            aval = tangent_aval(tracing.get_aval(leaf, name, 0))
            g = _output_tangent(next(cts)) if nz else zeros_like_aval(aval)
            grads.append(_laid_out(g, _cotangent_layout(leaf)) if nz else g)
        grad_tree = extended_cotangents(tu, tu.tree_unflatten(in_tree, grads))
        g = grad_tree if isinstance(argnums, (tuple, list)) else grad_tree[0]
        if has_aux:
            return (user_value(value), _aux_value(aux_info[0], aux_leaves)), g
        return user_value(value), g

    # dressed as fun (JAX's name, docstring and fun's signature)
    doc = _wraps.ad_doc(_wraps.VALUE_AND_GRAD_DOC, fun, argnums)
    return _wraps.wraps(fun, doc=doc)(value_and_grad_f)


def _on_device_of(ct: Any, value: Any) -> Any:
    """The output cotangent seed placed where the (concrete) output lives, so
    an eager backward pass runs on the output's backend and device."""
    if type(ct) is Zero or isinstance(value, Tracer):
        return ct
    if is_split(value):
        # a literal, typed with no mesh as jit(grad)'s seed: placed on the
        # mesh by the first operation with a sharded operand (JAX types the
        # seed's broadcast as the primal; refimpl's broadcast carries no
        # sharding, and a P() seed would clash with split loop carries)
        return ct
    device = getattr(value, "device", None)
    if device is None or callable(device):
        return ct
    if isinstance(value, (np.ndarray, np.generic)):  # NumPy's ``device`` is the string "cpu"
        return ct
    return backends.device_put(ct, device)


def _ones_like(aval: ShapedArray) -> Any:
    # grad's seed: its output is checked to be rank 0 (_check_scalar), so the
    # seed is a literal and the program has no equation for it
    assert not aval.shape, f"internal error: grad's seed of type {aval.str_short()}"
    return TypedScalar(1, aval.dtype, aval.weak_type)


def grad(
    fun: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    allow_int: bool = False,
    reduce_axes: Any = (),
) -> Callable:
    """Like ``jax.grad``: the gradient of a scalar-valued ``fun``, by reverse mode.

    Args:
        fun: A function returning a real scalar (with ``has_aux``: a pair
            ``(scalar, aux)``).
        argnums: The positional argument(s) to differentiate: an int, or a
            sequence of ints (the gradient is then a tuple).
        has_aux: Whether ``fun`` returns ``(value, aux)``; the result is then
            ``(gradient, aux)``.
        holomorphic: Differentiate a complex ``fun`` of complex inputs as
            holomorphic.
        allow_int: Accept integer/bool inputs (their gradient is float0 zeros).
        reduce_axes: JAX's deprecated parameter: anything but empty is
            a ``NotImplementedError``, as in JAX.

    Returns:
        A function with ``fun``'s signature returning the gradient, with the
        structure and dtypes of the ``argnums`` argument(s).

    Raises:
        TypeError: An input is not real or complex (``grad requires real- or
            complex-valued inputs ...``) without ``allow_int``; the output is
            not a scalar (``Gradient only defined for scalar-output
            functions``), or is complex without ``holomorphic``; ``argnums``
            names a missing argument.

    Example:
        >>> import numpy as np, refimpl as ri, refimpl.numpy as rnp
        >>> ri.grad(lambda x: rnp.sum(x**2))(np.array([1.0, 2.0], np.float32))
        Array([2., 4.], dtype=float32)
    """
    vg = _value_and_grad("grad", fun, argnums, has_aux, holomorphic, allow_int, reduce_axes)

    @api_boundary
    def grad_f(*args: Any, **kwargs: Any) -> Any:
        (_, aux), g = vg(*args, **kwargs) if has_aux else (((None, None)), vg(*args, **kwargs)[1])
        return (g, aux) if has_aux else g

    doc = _wraps.ad_doc(_wraps.GRAD_DOC, fun, argnums)
    return _wraps.wraps(fun, doc=doc)(grad_f)


# --- transforming sub-programs (for the rules of jit, scan, cond, ...) ----------------


def _program_cache(program: Program) -> dict:
    """Per-Program memo of its derived programs (jvp, linearized, transposed):
    a nested jit called again under the same transformation reuses them."""
    cache = program.__dict__.get("_ad_cache")
    if cache is None:
        cache = program.__dict__["_ad_cache"] = {}
    return cache


class JVPProgram:
    """``program`` pushed forward: inputs ``primals + nonzero tangents``,
    outputs ``primal outs + nonzero tangent outs`` (``out_nonzero``)."""

    def __init__(self, program: Program, out_nonzero: list[bool]) -> None:
        self.program = program
        self.out_nonzero = out_nonzero


def jvp_program(
    program: Program,
    in_nonzero: Sequence[bool],
    instantiate: Sequence[bool] | bool = False,
    own_types: bool = False,
) -> JVPProgram:
    """The JVP of a closed Program, itself a closed Program (memoized).

    The output tangents take the weak types of the program's outputs (a
    loop's carry or a branch's outputs must keep one type), unless
    ``own_types``: then they keep the types the JVP computed them with, as
    JAX's tangents of a call (``jit``, ``checkpoint``), whose tangent types
    come from the JVP-traced program (``grad(jit(lambda x: x ** n))`` is
    strong where ``n`` is converted to a strong float)."""
    n_out = len(program.out_vars)
    if isinstance(instantiate, bool):
        instantiate = [instantiate] * n_out
    key = ("jvp", tuple(in_nonzero), tuple(instantiate), own_types)
    cache = _program_cache(program)
    if key in cache:
        return cache[key]
    n_in = len(program.in_vars)
    t_avals = [tangent_aval(a) for a, nz in zip(program.in_avals, in_nonzero) if nz]
    out_nonzero: list[bool] = []

    def fun(*args: Any) -> list[Any]:
        primals = list(args[:n_in])
        t_iter = iter(args[n_in:])
        tangents = [
            next(t_iter) if nz else Zero(tangent_aval(a))
            for a, nz in zip(program.in_avals, in_nonzero, strict=True)
        ]
        outs, touts = jvp_flat(
            lambda *xs: tracing.eval_program_bind(program, xs), primals, tangents
        )
        touts = [
            t if (type(t) is Zero or own_types) and not inst else match_aval(t, tangent_aval(a))
            for t, inst, a in zip(touts, instantiate, program.out_avals, strict=True)
        ]
        out_nonzero.extend(type(t) is not Zero for t in touts)
        return outs + [t for t in touts if type(t) is not Zero]

    origins = ["a primal"] * n_in + ["a tangent"] * len(t_avals)
    new, captured, _ = tracing.trace_to_program(fun, [*program.in_avals, *t_avals], "jvp", origins)
    assert not captured, "jvp_program: the program must be closed"
    result = JVPProgram(new, out_nonzero)
    cache[key] = result
    return result


class LinearizedProgram:
    """``program`` split by partial evaluation into a known and a linear part.

    ``known``: ``primals -> primal outs + residuals`` (``num_res`` of them);
    ``linear``: ``residuals + nonzero tangents -> nonzero tangent outs``.
    """

    def __init__(self, known: Program, linear: Program, num_res: int, out_nonzero: list[bool]):
        self.known = known
        self.linear = linear
        self.num_res = num_res
        self.out_nonzero = out_nonzero


def linearize_program(
    program: Program,
    in_nonzero: Sequence[bool],
    instantiate: Sequence[bool] | bool = False,
    own_types: bool = False,
) -> LinearizedProgram:
    """Partial evaluation of a closed Program's JVP, primals known and
    tangents unknown (memoized). Residuals are the primal values the tangent
    computation reads. ``own_types``: as for :func:`jvp_program`."""
    n_out = len(program.out_vars)
    if isinstance(instantiate, bool):
        instantiate = [instantiate] * n_out
    key = ("linearize", tuple(in_nonzero), tuple(instantiate), own_types)
    cache = _program_cache(program)
    if key in cache:
        return cache[key]
    # (linear program, number of residuals, out_nonzero): not the Linearized
    # itself, whose primals and residuals are tracers of the finished trace
    holder: list[tuple[Program, int, list[bool]]] = []

    def known_fun(*primals: Any) -> list[Any]:
        lin = linearize_flat(
            lambda *xs: tracing.eval_program_bind(program, xs),
            primals,
            in_nonzero,
            instantiate,
            own_types,
        )
        holder.append((lin.linear, len(lin.residuals), lin.out_nonzero))
        return list(lin.primals_out) + list(lin.residuals)

    known, captured, _ = tracing.trace_to_program(
        known_fun, program.in_avals, "linearize", ["a primal"] * len(program.in_vars)
    )
    assert not captured, "linearize_program: the program must be closed"
    linear, num_res, out_nonzero = holder[0]
    result = LinearizedProgram(known, linear, num_res, out_nonzero)
    cache[key] = result
    return result


def transpose_program(
    program: Program,
    linear: Sequence[bool],
    thread_refs: bool = False,
    own_types: bool = False,
    ct_nonzero: Sequence[bool] | None = None,
    ct_weak: Sequence[bool] | None = None,
    linear_avals: Sequence[ShapedArray | None] | None = None,
) -> Any:
    """The transpose of a linear Program w.r.t. its inputs marked ``linear``:
    inputs ``non-linear inputs + output cotangents``, outputs the cotangents
    of the linear inputs (zeros instantiated) but the integer and bool ones
    (``transposed_outputs``: their float0 zeros are the caller's). Memoized.

    ``thread_refs``: refs made outside that the transposition touches (a
    custom_vjp bwd writing a Ref its fwd saved) are late inputs of the
    trace, after the cotangents, and the written ones' final values extra
    outputs; returns ``(program, refs, written)`` for the caller to pass
    their values and write them back.

    The cotangents take the weak types of the linear inputs, unless
    ``own_types``: then they keep the types the backward pass computed
    them with (a call's, as for :func:`jvp_program`).

    ``ct_nonzero``: which output cotangents are inputs; the others are
    symbolic zeros inside, so they add no ``0 * x`` terms (as JAX's call
    transposes: a +0 term would turn a -0 cotangent into +0). Default: all.

    ``ct_weak``: the weak types of the nonzero cotangents as given (a strong
    cotangent of a weak output, as JAX's call transpose traces with the
    cotangents' own types); default: the outputs' tangent types.

    ``linear_avals``: per input, the type its cotangent accumulates as and is
    returned with (:func:`backward_pass`; None: its own)."""
    ct_nonzero = [True] * len(program.out_vars) if ct_nonzero is None else list(ct_nonzero)
    kind = "transpose_refs" if thread_refs else "transpose"
    weak_key = None if ct_weak is None else tuple(ct_weak)
    acc_avals = [None] * len(linear) if linear_avals is None else list(linear_avals)
    key = (kind, tuple(linear), own_types, tuple(ct_nonzero), weak_key, tuple(acc_avals))
    cache = _program_cache(program)
    if key in cache:
        return cache[key]
    nonlin_avals = [a for a, lin in zip(program.in_avals, linear, strict=True) if not lin]
    out_ct_avals = [tangent_aval(a) for a in program.out_avals]
    ct_avals = [a for a, nz in zip(out_ct_avals, ct_nonzero, strict=True) if nz]
    if ct_weak is not None:
        ct_avals = [a.update(weak_type=w) for a, w in zip(ct_avals, ct_weak, strict=True)]
        it_ct = iter(ct_avals)
        out_ct_avals = [next(it_ct) if nz else a for a, nz in zip(out_ct_avals, ct_nonzero)]
    touched: list[tuple[tuple, tuple]] = []

    def transpose(*args: Any) -> list[Any]:
        it = iter(args[: len(nonlin_avals)])
        full = [None if lin else next(it) for lin in linear]
        given = iter(args[len(nonlin_avals) :])
        out_cts = [next(given) if nz else Zero(a) for a, nz in zip(out_ct_avals, ct_nonzero)]
        cts = backward_pass(program, linear, full, out_cts, acc_avals)
        emitted = transposed_outputs(linear, program.in_avals)
        return [
            _transposed_ct(ct, tangent_aval(a if acc is None else acc), own_types)
            for ct, out, a, acc in zip(cts, emitted, program.in_avals, acc_avals, strict=True)
            if out
        ]

    def fun(*args: Any) -> list[Any]:
        if not thread_refs:
            return transpose(*args)
        with ref_context.late_inputs(lambda k: "a Ref written by a custom_vjp bwd") as scope:
            outs = transpose(*args)
            finals = scope.finish()
            touched.append((tuple(scope.refs), scope.written_flags))
        return outs + [v for v, w in zip(finals, scope.written_flags, strict=True) if w]

    origins = ["a residual"] * len(nonlin_avals) + ["a cotangent"] * len(ct_avals)
    new, captured, _ = tracing.trace_to_program(
        fun, [*nonlin_avals, *ct_avals], "transpose", origins
    )
    assert not captured, "transpose_program: the program must be closed"
    cache[key] = (new, *touched[0]) if thread_refs else new
    return cache[key]


# --- helpers for the rules of primitives holding sub-programs -----------------------------


def permute_program(program: Program, in_order: Sequence[int], out_order: Sequence[int]) -> Program:
    """``program`` with its inputs and outputs reordered (``new[i] = old[order[i]]``)."""
    return Program(
        in_vars=[program.in_vars[i] for i in in_order],
        eqns=program.eqns,
        out_vars=[program.out_vars[i] for i in out_order],
        const_vars=program.const_vars,
        consts=program.consts,
    )


def _transposed_ct(ct: Any, aval: ShapedArray, own_types: bool = False) -> Any:
    """An input cotangent of a transposed sub-program (jit, checkpoint): of
    ``aval``'s type, except that a cotangent of another dtype (a custom_vjp bwd
    returning float32 for a bfloat16 input, which JAX passes on as it is)
    leaves the sub-program as it is, as it would without the sub-program;
    with ``own_types`` a cotangent of another weak type too."""
    if type(ct) is not Zero:
        got = tracing.get_aval(ct, "ad", 0)
        if got.shape == aval.shape and (got.dtype != aval.dtype or own_types):
            return ct
    return match_aval(ct, aval)


def match_aval(value: Any, aval: ShapedArray) -> Any:
    """``value`` with exactly ``aval``'s weak type (sub-programs type-check
    their operands strictly; a rule may produce a tangent whose weak type
    differs from its primal's)."""
    if type(value) is Zero:
        return zeros_like_aval(aval)
    got = tracing.get_aval(value, "ad", 0)
    if got == aval:
        return value
    if got.shape == aval.shape and got.dtype == aval.dtype:
        return convert_element_type_p.bind(value, new_dtype=aval.dtype, weak_type=aval.weak_type)
    raise TypeError(f"internal error: AD produced {got.str_short()} for {aval.str_short()}")


def fill_zeros(values: Sequence[Any], nonzero: Sequence[bool], avals: Sequence[ShapedArray]):
    """``values`` at the ``nonzero`` positions, symbolic zeros (of the
    tangent types of ``avals``) elsewhere."""
    it = iter(values)
    return [next(it) if nz else Zero(tangent_aval(a)) for nz, a in zip(nonzero, avals, strict=True)]


def closed_program(
    fun: Callable[..., Sequence[Any]], in_avals: Sequence[ShapedArray], name: str
) -> Program:
    """Trace flat ``fun`` into a closed Program (nothing captured from outside)."""
    program, captured, _ = tracing.trace_to_program(
        lambda *xs: list(fun(*xs)), in_avals, name, [f"an input of {name}"] * len(in_avals)
    )
    assert not captured, f"{name}: the traced function must be closed"
    return program


def memo(program: Program, key: Any, make: Callable[[], Any]) -> Any:
    """``make()`` memoized on ``program`` under ``key``."""
    cache = _program_cache(program)
    if key not in cache:
        cache[key] = make()
    return cache[key]


# --- linearize, jacobians, linear_transpose ------------------------------------------------


@api_boundary
def linearize(fun: Callable, *primals: Any, has_aux: bool = False) -> Any:
    """``jax.linearize``: ``(fun(*primals), f_jvp[, aux])`` where ``f_jvp(*tangents)``
    evaluates the linear map recorded once (no re-tracing of ``fun``).

    ``fun`` is run once, at ``primals``, with its JVP partially evaluated:
    the part that depends only on the primals is computed now (the primal
    outputs and the residuals the tangent part needs); the part linear in
    the tangents is kept as a Program, which ``f_jvp`` evaluates on the
    residuals for each new tangent. So ``f_jvp(t)`` equals
    ``jvp(fun, primals, (t,))[1]`` at the cost of the linear part only.

    Args:
        fun: A function of array pytrees.
        *primals: The point to linearize at (one value per argument of
            ``fun``).
        has_aux: Whether ``fun`` returns ``(out, aux)``; ``aux`` is then
            returned third, not differentiated.

    Returns:
        ``(out, f_jvp)`` or ``(out, f_jvp, aux)``: ``out`` is
        ``fun(*primals)``; ``f_jvp`` takes one tangent per primal (each of
        its primal's shape and tangent dtype) and returns ``out``'s
        tangent.

    Raises:
        TypeError: ``fun`` is not callable or a primal is not array-like; at
            call time, ``f_jvp``'s tangents do not have the primals'
            structure.
        ValueError: At call time, a tangent's shape or dtype does not match
            its primal's tangent type.

    Example:
        >>> import numpy as np, refimpl as ri, refimpl.numpy as rnp
        >>> y, f_jvp = ri.linearize(rnp.sin, np.float32(0.0))
        >>> y, f_jvp(np.float32(2.0))
        (Array(0., dtype=float32), Array(2., dtype=float32))
    """
    user = _UserLinearization(fun, primals, has_aux, "linearize")
    lin = user.lin
    primal_avals = [tracing.get_aval(x, "linearize", i) for i, x in enumerate(user.leaves)]
    out_avals = [tracing.get_aval(p, "linearize", i) for i, p in enumerate(lin.primals_out)]
    linear, residuals = _residuals_as_inputs(lin.linear, list(lin.residuals))
    f_jvp = _LinearizedJVP(
        linear, lin.out_nonzero, out_avals, user.in_tree, primal_avals, user.nonzero,
        user.out_tree,
    )  # fmt: skip
    # a pytree whose leaves are the residuals (JAX's Partial): it can leave a jit
    return user.results(pytree.Partial(f_jvp, residuals))


def _residuals_as_inputs(linear: Program, residuals: list[Any]) -> tuple[Program, list[Any]]:
    """The residuals computed eagerly (the linear program's constants) made
    leading inputs, their values arrays among the ``Partial``'s leaves, as
    JAX 0.10.2's ``linearize``: so ``make_jaxpr(f_jvp)`` takes them as its
    constants (``{ lambda a:f32[]; b:f32[]. let c:f32[] = mul b a ...``)
    instead of inlining a scalar one as a literal."""
    if not linear.const_vars or any(s is not None for s in linear.const_shardings):
        return linear, residuals
    values = [
        c if isinstance(c, Tracer) else as_array(c, weak_type=v.aval.weak_type)
        for v, c in zip(linear.const_vars, linear.consts, strict=True)
    ]
    program = Program(
        in_vars=list(linear.const_vars) + list(linear.in_vars),
        eqns=linear.eqns,
        out_vars=linear.out_vars,
    )
    return program, values + residuals


class _LinearizedJVP:
    """The function ``linearize`` returns, without its residuals (which come first)."""

    def __init__(self, linear, out_nonzero, out_avals, in_tree, primal_avals, nonzero, out_tree):
        self.linear, self.out_nonzero, self.out_avals = linear, out_nonzero, out_avals
        self.in_tree, self.primal_avals, self.nonzero = in_tree, primal_avals, nonzero
        self.out_tree = out_tree

    @property
    def args(self) -> tuple[Any]:
        """``(linear program,)``: the program this function evaluates (its
        inputs the residuals, then the nonzero tangents), where JAX 0.10.2's
        linearized function holds its linear jaxpr (``f_lin.func.args[0]``,
        which programs read to see what the linear part recomputes)."""
        return (self.linear,)

    def __call__(self, residuals: list, *tangents: Any) -> Any:
        tu = _tree()
        t_leaves, t_tree = tu.tree_flatten(tuple(tangents))
        if t_tree != self.in_tree:  # float0[key.shape] for a key?
            like = _float0_like(tu, self.in_tree, self.primal_avals)
            t_leaves, t_tree = tu.tree_flatten(key_tangents_in(tu, like, tuple(tangents)))
        if t_tree != self.in_tree:
            raise TypeError(
                f"linearize: the linearized function takes tangents with the structure of the "
                f"primals {self.in_tree}, got {t_tree}"
            )
        for t, aval in zip(t_leaves, self.primal_avals, strict=True):
            expected = tangent_aval(aval)
            if _shape_of(t) != expected.shape or _dtype_of(t) != expected.dtype:
                # (float0 has no short name: the tangent types are spelled out)
                raise ValueError(
                    "linearized function called on tangent values inconsistent with the "
                    f"original primal values (linearize): a tangent of type "
                    f"{_dtype_of(t)}{list(_shape_of(t))} was given for a primal of type "
                    f"{aval.str_short()}; expected "
                    f"{'float0' if expected.dtype == dtypes.float0 else expected.dtype}"
                    f"{list(expected.shape)}"
                )
        args = list(residuals) + [t for t, nz in zip(t_leaves, self.nonzero) if nz]
        outs = tracing.eval_program_bind(self.linear, args)
        touts = fill_zeros(outs, self.out_nonzero, self.out_avals)
        out = tu.tree_unflatten(self.out_tree, [_as_given(t, t_leaves) for t in touts])
        return extended_cotangents(tu, out)  # a key's tangent: float0[key.shape]


def _jac_check_inputs(api: str, leaves: list, holomorphic: bool, allow_int: bool = False):
    for x in leaves:
        aval = tracing.get_aval(x, api, "argument")
        if holomorphic and not dtypes.is_complex(aval.dtype):
            raise TypeError(
                f"{api} with holomorphic=True requires inputs with complex dtype, but got "
                f"{aval.dtype.name}."
            )
        if api == "jacrev":  # as JAX's reverse-mode check: complex inputs are fine
            if dtypes.is_inexact(aval.dtype) or allow_int:
                continue
        elif holomorphic:
            continue
        if not dtypes.is_inexact(aval.dtype) or dtypes.is_complex(aval.dtype):
            raise TypeError(
                f"{api} requires real-valued inputs (input dtype that is a sub-dtype of "
                f"np.floating), but got {aval.dtype.name}. For holomorphic differentiation, "
                "pass holomorphic=True. For differentiation of non-holomorphic functions "
                "involving complex inputs or integer inputs, use jax.jvp directly."
                if api == "jacfwd"
                else f"{api} requires real- or complex-valued inputs (input dtype that is a "
                f"sub-dtype of np.inexact), but got {aval.dtype.name}. If you want to use "
                "Boolean- or integer-valued inputs, use vjp or set allow_int to True."
            )


def _jac_check_outputs(api: str, out_avals: list, holomorphic: bool) -> None:
    """JAX's output dtype rules: holomorphic needs complex outputs; jacrev
    otherwise needs real floating outputs (a complex one would lose its
    imaginary part)."""
    for aval in out_avals:
        name = aval.dtype.name
        if holomorphic:
            if not dtypes.is_complex(aval.dtype):
                raise TypeError(
                    f"{api} with holomorphic=True requires outputs with complex dtype, but got "
                    f"{name}."
                )
        elif api == "jacrev" and dtypes.is_complex(aval.dtype):
            raise TypeError(
                f"{api} requires real-valued outputs (output dtype that is a sub-dtype of "
                f"np.floating), but got {name}. For holomorphic differentiation, pass "
                "holomorphic=True. For differentiation of non-holomorphic functions involving "
                "complex outputs, use jax.vjp directly."
            )
        elif api == "jacrev" and not dtypes.is_inexact(aval.dtype):
            raise TypeError(
                f"{api} requires real-valued outputs (output dtype that is a sub-dtype of "
                f"np.floating), but got {name}. For differentiation of functions with integer "
                "outputs, use jax.vjp directly."
            )


def _jacobian(api: str, fun, argnums, has_aux, holomorphic, allow_int=False) -> Callable:
    tracing.check_transform_fun(fun, api)
    nums = _argnums_tuple(api, argnums)
    fwd = api == "jacfwd"

    @api_boundary
    def jac_f(*args: Any, **kwargs: Any) -> Any:
        tu = _tree()
        _dyn_args(api, args, nums)
        dyn = tuple(args[i] for i in nums)
        leaves, in_tree = tu.tree_flatten(dyn)
        _refuse_ref_leaves(api, leaves, reverse=not fwd)
        _jac_check_inputs(api, leaves, holomorphic, allow_int)
        given = leaves
        if fwd:
            # JAX's function sees arrays (its tracers) even where a column's
            # tangent is zero: a NumPy or Python leaf becomes an array
            leaves = [user_value(x) for x in leaves]
        info: list[Any] = []

        def with_dyn(*dyn_values: Any) -> Any:
            full = list(args)
            for i, value in zip(nums, dyn_values, strict=True):
                full[i] = value
            return fun(*full, **kwargs)

        flat_fun = _flat_with_aux(with_dyn, in_tree, has_aux, api, info)

        in_avals = [tracing.get_aval(x, api, i) for i, x in enumerate(leaves)]
        if fwd:
            # This first run gives the outputs' types; the columns are pushed
            # under a vmap, where a write to a ref made outside is JAX's vmap
            # error (JAX's jacfwd runs once, under vmap): raised here, before
            # a write could happen.
            depth = len(tracing._stack.traces)
            with ref_context.refuse_outer("", depth=depth, error=ref_context.vmap_write_error):
                zeros = [Zero(tangent_aval(a)) for a in in_avals]
                outs = list(jvp_flat(flat_fun, leaves, zeros)[0])
            lin = None
        else:
            full = linearize_flat(flat_fun, leaves, [True] * len(leaves))
            outs = full.primals_out
        out_tree, n_out, aux_tree, _ = info[0]
        out_avals = [tracing.get_aval(o, api, i) for i, o in enumerate(outs[:n_out])]
        _jac_check_outputs(api, out_avals, holomorphic)
        if not fwd:
            lin = _drop_outputs(full, n_out)
        try:
            # one batched JVP per input leaf / one batched backward pass per output leaf
            matrix = _jacobian_blocks(fwd, flat_fun, leaves, in_avals, out_avals, lin, True)
        except NotImplementedError:
            # a primitive without a batching rule: one JVP / backward pass per element
            matrix = _jacobian_blocks(fwd, flat_fun, leaves, in_avals, out_avals, lin, False)
        blocks = []
        for j in range(len(out_avals)):
            # JAX's _possible_downcast: a jacfwd block has its output's dtype
            # and weak type, a jacrev block its input's
            per_in = [
                _jac_block_type(b, out_avals[j] if fwd else in_avals[i])
                for i, b in enumerate(matrix[j])
            ]
            tree = tu.tree_unflatten(in_tree, per_in)
            blocks.append(tree if isinstance(argnums, (tuple, list)) else tree[0])
        jac = tu.tree_unflatten(out_tree, blocks)
        if has_aux:
            aux = _aux_value(aux_tree, outs[n_out:])
            return jac, _given_back(aux, leaves, given) if fwd else aux
        return jac

    # dressed as fun, with fun's signature (inspect.signature follows
    # __wrapped__), as JAX's: jit's static_argnames of a jacfwd/jacrev
    # function name fun's parameters
    doc = _wraps.ad_doc(_wraps.JACOBIAN_DOC, fun, argnums)
    return _wraps.wraps(fun, doc=doc)(jac_f)


def _given_back(tree: Any, converted: list[Any], given: list[Any]) -> Any:
    """``tree`` with each of the arrays ``converted`` from a user's input
    replaced by that input as given: jacfwd's aux returning its argument
    hands back the user's own object, as JAX 0.10.2's (its jvp's primal is
    the argument itself; a NumPy float64 stays float64)."""
    by_id = {id(c): g for c, g in zip(converted, given, strict=True) if c is not g}
    if not by_id:
        return tree
    return _tree().tree_map(lambda v: by_id.get(id(v), v), tree)


def _jacobian_blocks(fwd, flat_fun, leaves, in_avals, out_avals, lin, batched) -> list[list]:
    """``blocks[j][i]``: d out_j / d in_i, shaped ``out_j.shape + in_i.shape``.

    Forward: the tangents are the rows of an identity, pushed forward with
    ``vmap`` over them (``batched``) or one at a time. Reverse: the output
    cotangents are the rows of an identity, pulled back through the one
    linearization ``lin`` the same way.
    """
    n_out = len(out_avals)
    blocks: list[list[Any]] = [[None] * len(in_avals) for _ in out_avals]
    if fwd:
        for i, aval in enumerate(in_avals):
            if aval.size == 0:
                for j, o_aval in enumerate(out_avals):
                    blocks[j][i] = _zeros((*o_aval.shape, *aval.shape), o_aval.dtype)
                continue
            eye = _basis(aval.size, aval.shape, aval.dtype, aval.weak_type)

            def push(t: Any, i: int = i) -> list[Any]:
                # the other inputs' tangents are real zeros, as in JAX's one
                # basis over all of them: their +0 terms count (the sign of a
                # zero entry, as pow's second derivative at y = 0)
                tangents = [t if k == i else _zero_tangent(a) for k, a in enumerate(in_avals)]
                _, touts = jvp_flat(flat_fun, leaves, tangents)
                return [instantiate(o) for o in touts[:n_out]]

            cols = _map_rows(push, eye, batched)  # per output: (in size, *out shape)
            for j, o_aval in enumerate(out_avals):
                if tangent_aval(o_aval).dtype == dtypes.float0:  # an int output: zeros (JAX)
                    blocks[j][i] = _zeros((*o_aval.shape, *aval.shape), o_aval.dtype)
                    continue
                moved = _first_axis_last(cols[j])
                blocks[j][i] = _reshape(moved, (*o_aval.shape, *aval.shape))
        return blocks
    num_res = len(lin.residuals)
    n_lin = len(lin.linear.in_vars) - num_res
    for j, aval in enumerate(out_avals):
        ct_aval = tangent_aval(aval)
        if aval.size == 0 or ct_aval.dtype == dtypes.float0:
            for i, i_aval in enumerate(in_avals):
                blocks[j][i] = _zeros((*aval.shape, *i_aval.shape), i_aval.dtype)
            continue
        eye = _basis(aval.size, aval.shape, ct_aval.dtype, aval.weak_type)

        def pull(ct: Any, j: int = j) -> list[Any]:
            # the other outputs' cotangents are real zeros, as in JAX's one
            # basis over all of them (their +0 terms count, as in push)
            cts = [ct if m == j else _zero_tangent(a) for m, a in enumerate(out_avals)]
            cts = [c for c, nz in zip(cts, lin.out_nonzero, strict=True) if nz]
            got = backward_pass(
                lin.linear,
                [False] * num_res + [True] * n_lin,
                list(lin.residuals) + [None] * n_lin,
                cts,
            )[num_res:]
            return [instantiate(g) for g in got]

        rows = _map_rows(pull, eye, batched)  # per input: (out size, *in shape)
        for i, i_aval in enumerate(in_avals):
            if tangent_aval(i_aval).dtype == dtypes.float0:  # an int input (allow_int): zeros
                blocks[j][i] = _zeros((*aval.shape, *i_aval.shape), i_aval.dtype)
                continue
            blocks[j][i] = _reshape(rows[i], (*aval.shape, *i_aval.shape))
    return blocks


def _jac_block_type(block: Any, example: ShapedArray) -> Any:
    """``block`` of ``example``'s dtype and weak type (its real part if
    complex for a real example: the conversion keeps it)."""
    got = tracing.get_aval(block, "jacobian", 0)
    if got.dtype == example.dtype and got.weak_type == example.weak_type:
        return block
    return convert_element_type_p.bind(block, new_dtype=example.dtype, weak_type=example.weak_type)


def _basis(size: int, shape: tuple[int, ...], dtype: Any, weak_type: bool) -> Any:
    """The standard basis of ``shape``-shaped values, stacked: a program
    (iota == iota), never a host constant, so tracing a Jacobian (eval_shape,
    jit) allocates nothing of size ``size**2``. It takes the weak type of the
    leaf it spans (as JAX's ``_std_basis``), so that the Jacobian of a weakly
    typed function stays weak."""
    int32 = np.dtype(np.int32)
    rows = structural.broadcasted_iota(int32, (size, size), 0)
    cols = structural.broadcasted_iota(int32, (size, size), 1)
    # rnp.eye's program, diagonal offset 0 included
    on_diagonal = elementwise.eq(elementwise.add(rows, TypedScalar(0, int32, False)), cols)
    eye = _reshape(elementwise.convert_element_type(on_diagonal, dtype), (size, *shape))
    if weak_type:
        eye = convert_element_type_p.bind(eye, new_dtype=np.dtype(dtype), weak_type=True)
    return eye


def _map_rows(fun: Callable, rows: np.ndarray, batched: bool) -> list[Any]:
    """``fun`` applied to each row of ``rows``, results stacked on a new axis 0."""
    if batched:
        return list(vmap(fun)(rows))
    results = [fun(rows[k]) for k in range(rows.shape[0])]
    return [_stack([r[m] for r in results]) for m in range(len(results[0]))]


# The Jacobian's array helpers, written with the primitives as refimpl.numpy's
# zeros/reshape/moveaxis/stack build them (the numpy layer sits above this one).


def _zeros(shape: tuple[int, ...], dtype: Any) -> Any:
    return structural.broadcast_in_dim(TypedScalar(0, np.dtype(dtype), False), shape, ())


def _zero_tangent(aval: ShapedArray) -> Any:
    """Zeros of ``aval``'s tangent type (a symbolic ``Zero`` for float0)."""
    t_aval = tangent_aval(aval)
    if t_aval.dtype == dtypes.float0:
        return Zero(t_aval)
    zeros = _zeros(tuple(t_aval.shape), t_aval.dtype)
    if t_aval.weak_type:
        zeros = convert_element_type_p.bind(zeros, new_dtype=t_aval.dtype, weak_type=True)
    return zeros


def _reshape(x: Any, shape: tuple[int, ...]) -> Any:
    if tracing.get_aval(x, "jacobian", 0).shape == shape:
        return x
    return structural.reshape(x, shape)


def _first_axis_last(x: Any) -> Any:
    ndim = tracing.get_aval(x, "jacobian", 0).ndim
    if ndim <= 1:
        return x
    return structural.transpose(x, (*range(1, ndim), 0))


def _stack(items: list[Any]) -> Any:
    expanded = [structural.expand_dims(x, (0,)) for x in items]
    return expanded[0] if len(expanded) == 1 else structural.concatenate(expanded, 0)


def jacfwd(
    fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
    holomorphic: bool = False,
) -> Callable:  # fmt: skip
    """Like ``jax.jacfwd``: the Jacobian by forward mode, one JVP per input element.

    Args:
        fun: The function.
        argnums: The positional argument(s) to differentiate.
        has_aux: Whether ``fun`` returns ``(out, aux)``.
        holomorphic: Differentiate a complex ``fun`` as holomorphic.

    Returns:
        A function returning the Jacobian: for each output leaf and input
        leaf, an array of shape ``out.shape + in.shape``.

    Raises:
        TypeError: An input is not real (integer, bool, or complex without
            ``holomorphic``).

    Example:
        >>> import numpy as np, refimpl as ri
        >>> ri.jacfwd(lambda x: x**2)(np.array([1.0, 2.0], np.float32))
        Array([[2., 0.],
               [0., 4.]], dtype=float32)
    """
    return _jacobian("jacfwd", fun, argnums, has_aux, holomorphic)


def jacrev(
    fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
    holomorphic: bool = False, allow_int: bool = False,
) -> Callable:  # fmt: skip
    """Like ``jax.jacrev``: the Jacobian by reverse mode, one backward pass per output element.

    Args:
        fun: The function.
        argnums: The positional argument(s) to differentiate.
        has_aux: Whether ``fun`` returns ``(out, aux)``.
        holomorphic: Differentiate a complex ``fun`` as holomorphic.
        allow_int: Accept integer/bool inputs.

    Returns:
        A function returning the Jacobian: for each output leaf and input
        leaf, an array of shape ``out.shape + in.shape``.

    Raises:
        TypeError: An input is not real or complex without ``allow_int``.

    Example:
        >>> import numpy as np, refimpl as ri
        >>> ri.jacrev(lambda x: x**2)(np.array([1.0, 2.0], np.float32))
        Array([[2., 0.],
               [0., 4.]], dtype=float32)
    """
    return _jacobian("jacrev", fun, argnums, has_aux, holomorphic, allow_int)


def hessian(
    fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
    holomorphic: bool = False,
) -> Callable:  # fmt: skip
    """Like ``jax.hessian``: ``jacfwd(jacrev(fun))``.

    Args:
        fun: A scalar-valued function.
        argnums: The positional argument(s) to differentiate.
        has_aux: Whether ``fun`` returns ``(out, aux)``.
        holomorphic: Differentiate a complex ``fun`` as holomorphic.

    Returns:
        A function returning the Hessian, of shape ``in.shape + in.shape``
        for one input leaf.

    Raises:
        TypeError: An input is not real (integer, bool).

    Example:
        >>> import numpy as np, refimpl as ri, refimpl.numpy as rnp
        >>> ri.hessian(lambda x: rnp.sum(x**3))(np.array([1.0, 2.0], np.float32))
        Array([[ 6.,  0.],
               [ 0., 12.]], dtype=float32)
    """
    return jacfwd(jacrev(fun, argnums, has_aux, holomorphic), argnums, has_aux, holomorphic)


def linear_transpose(fun: Callable, *primals: Any, reduce_axes: Any = ()) -> Callable:
    """``jax.linear_transpose``: the transpose of the linear function ``fun``
    at the types of ``primals`` (values or ``ShapeDtypeStruct``s). ``fun``
    is traced once; its equations must be linear in its inputs (a primitive
    without a transpose rule is a ``NotImplementedError`` naming it).

    For a linear ``fun: x -> A x`` the result computes ``ct -> A^T ct``
    (the adjoint: ``<A x, ct> == <x, A^T ct>``) by running the traced
    program's equations backwards with their transpose rules, as the
    backward pass of reverse mode does; ``primals`` only give the types
    (their values are not used). Linearity is checked per equation, not
    proven: an equation that is not linear in the inputs fails when the
    transpose is called.

    Args:
        fun: A linear function of array pytrees.
        *primals: Example arguments (or ``ShapeDtypeStruct``s) giving the
            input types.
        reduce_axes: JAX's deprecated parameter: anything but empty is
            a ``NotImplementedError``, as in JAX.

    Returns:
        ``f_t(ct)``: takes a cotangent of ``fun``'s output structure and
        types and returns a tuple with one cotangent per argument of
        ``fun``.

    Raises:
        TypeError: ``fun`` is not callable; the inputs and outputs are not
            all inexact or all integer; at call time, the cotangent's
            structure or types differ from ``fun``'s output.
        NotImplementedError: At call time, an equation is not linear in the
            inputs (``mul: transpose needs exactly one linear operand``) or
            its primitive has no transpose rule (``sin``).

    Example:
        >>> import numpy as np, refimpl as ri
        >>> spec = ri.ShapeDtypeStruct((2,), np.float32)
        >>> f_t = ri.linear_transpose(lambda x, y: x + 3.0 * y, spec, spec)
        >>> f_t(np.ones(2, np.float32))
        (Array([1., 1.], dtype=float32), Array([3., 3.], dtype=float32))
    """
    _refuse_reduce_axes(reduce_axes, "transpose")
    tracing.check_transform_fun(fun, "linear_transpose")
    tu = _tree()
    leaves, in_tree = tu.tree_flatten(tuple(primals))
    in_avals = []
    for i, x in enumerate(leaves):
        if hasattr(x, "shape") and hasattr(x, "dtype") and not tracing.is_array_like(x):
            aval = ShapedArray(tuple(x.shape), np.dtype(x.dtype))
        else:
            aval = tracing.get_aval(x, "linear_transpose", i)
        in_avals.append(aval)
    out_trees: list[Any] = []

    def flat_fun(*xs: Any) -> list[Any]:
        # A read captures the ref's value now (as JAX); a write would leave
        # this trace's value in the ref (JAX fails on a linear one).
        message = (
            f"linear_transpose of {getattr(fun, '__name__', fun)!r}: the function writes a "
            "mutable array reference made outside it, which is not supported"
        )
        with ref_context.refuse_outer(message):
            out = fun(*tu.tree_unflatten(in_tree, list(xs)))
        out_leaves, out_tree = tu.tree_flatten(out)
        out_trees.append(out_tree)
        return out_leaves

    program, captured, _ = tracing.trace_to_program(
        flat_fun, in_avals, "linear_transpose", ["a linear input"] * len(in_avals)
    )
    in_dtypes = [a.dtype for a in in_avals]
    out_dtypes = [a.dtype for a in program.out_avals]
    all_dtypes = in_dtypes + out_dtypes
    if not (
        all(dtypes.is_inexact(d) for d in all_dtypes)
        or all(np.issubdtype(d, np.integer) for d in all_dtypes)
    ):
        raise TypeError(
            "linear_transpose only supports [float or complex] -> [float or complex], and "
            f"integer -> integer functions, but got {in_dtypes} -> {out_dtypes}."
        )
    # Dead code first (JAX's transpose sees only what the outputs need): a
    # non-linear value nothing returns, such as the unused `x > 0` output of a
    # jitted function, then has nothing to transpose.
    program, used_inputs = dce_program(program)
    n_captured = len(captured)
    captured = [c for c, used in zip(captured, used_inputs[:n_captured], strict=True) if used]
    transposed = _LinearTranspose(
        program, out_trees[0], in_tree, in_avals, used_inputs[n_captured:]
    )
    # a pytree whose leaves are the captured values (JAX's Partial): it can leave a jit
    return pytree.Partial(transposed, list(captured))


class _LinearTranspose:
    """The function ``linear_transpose`` returns, without the values its
    program captured (which come first)."""

    def __init__(
        self, program: Program, out_tree: Any, in_tree: Any, in_avals: list, used: list[bool]
    ) -> None:
        self.program, self.out_tree, self.in_tree = program, out_tree, in_tree
        self.in_avals, self.used = in_avals, used  # the program reads the inputs marked used

    def __call__(self, captured: list, out_ct: Any) -> tuple:
        tu, program, out_tree, in_tree = _tree(), self.program, self.out_tree, self.in_tree
        n_captured = len(captured)
        ct_leaves, ct_tree = tu.tree_flatten(out_ct)
        if ct_tree != out_tree:
            raise TypeError(
                "linear_transpose: cotangent tree does not match function output, expected "
                f"{out_tree} but got {ct_tree}"
            )
        # each cotangent has its output's type (JAX: "cotangent type does not match")
        ct_avals = [tracing.get_aval(c, "linear_transpose", i) for i, c in enumerate(ct_leaves)]
        if any(
            c.shape != o.shape or c.dtype != o.dtype
            for c, o in zip(ct_avals, program.out_avals, strict=True)
        ):
            expected = [o.str_short() for o in program.out_avals]
            got = [c.str_short() for c in ct_avals]
            raise TypeError(
                "linear_transpose: cotangent type does not match function output, expected "
                f"{expected} but got {got}"
            )
        n_in = sum(self.used)
        linear = [False] * n_captured + [True] * n_in
        cts = iter(
            backward_pass(program, linear, list(captured) + [None] * n_in, list(ct_leaves))[
                n_captured:
            ]
        )
        # an input the outputs do not depend on gets zeros
        full = [
            next(cts) if used else Zero(tangent_aval(aval))
            for aval, used in zip(self.in_avals, self.used, strict=True)
        ]
        # an input the function returns as it is (no equation: JAX's transpose
        # has nothing to run) hands the cotangent back as given (_as_given);
        # one an equation reads gets that equation's transpose, a new array
        # in JAX even where it passes the cotangent through (add's)
        returned = {id(v) for v in program.out_vars}
        as_is = iter(id(v) in returned for v in program.in_vars[n_captured:])
        results = [
            _as_given(c, ct_leaves) if used and next(as_is) else _output_tangent(c)
            for c, used in zip(full, self.used, strict=True)
        ]
        return tu.tree_unflatten(in_tree, results)


# the rules of sub-program primitives differentiate through these (primitives.rule_context)
rule_context.jvp_program = jvp_program
rule_context.linearize_program = linearize_program
rule_context.transpose_program = transpose_program
rule_context.permute_program = permute_program
rule_context.instantiate = instantiate
rule_context.jvp_flat = jvp_flat
rule_context.match_aval = match_aval
rule_context.zeros_like_aval = zeros_like_aval
rule_context.add_tangents = add_tangents
rule_context.backward_pass = backward_pass
rule_context.closed_program = closed_program
rule_context.fill_zeros = fill_zeros
rule_context.memo = memo
