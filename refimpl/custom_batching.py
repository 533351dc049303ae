"""``custom_vmap``: a function with its own batching rule (``jax.custom_batching``).

::

    @custom_vmap
    def f(x, y): ...

    @f.def_vmap
    def f_vmap_rule(axis_size, in_batched, x, y):
        ...                      # x, y: batched ones carry the batch axis first
        return out, out_batched  # out_batched: bools, the structure of out

Called outside ``vmap``, the call evaluates ``f``'s traced program (as JAX:
Python scalar arguments are weak arrays, results are arrays). Under ``vmap``
the call is one ``custom_vmap_call`` equation (holding ``f``'s Program and the rule), and
batching it calls the rule instead of batching the body: ``in_batched`` is a
list with one pytree of bools per positional argument; the rule returns the
outputs (batched ones with the batch axis first, of size ``axis_size``) and a
matching pytree of bools. Keyword arguments are resolved to positions from
``f``'s signature, as for ``custom_vjp``; calling ``f`` before ``def_vmap``
is an ``AttributeError`` (JAX's words).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from refimpl import dtypes, pytree, tracing
from refimpl.core import Program, ShapedArray
from refimpl.errors import UnexpectedTracerError
from refimpl.interpreter import eval_program
from refimpl.primitives import collectives, control_flow, ref_context
from refimpl.primitives.base import Primitive
from refimpl.transforms import ad, batching
from refimpl.transforms.ad_util import Zero, tangent_aval

custom_vmap_call_p = Primitive("custom_vmap_call", multiple_results=True)


@custom_vmap_call_p.def_abstract_eval
def _abstract_eval(*avals: ShapedArray, call: Program, rule: Any, num_consts: int, **_: Any):
    return call.out_avals


def _check_no_refs_run(name: str, ref_written: tuple) -> None:
    if ref_written:
        raise ValueError(
            f"custom_vmap: the function {name} reads or writes a Ref made outside it, and it "
            "is run inside a jit (not vmapped): not supported, as in JAX 0.10.2 (its ref "
            "effects have no input of the call there). Pass the ref's value as an argument, "
            "or touch the ref outside the custom_vmap function."
        )


@custom_vmap_call_p.def_impl
def _impl(*args: np.ndarray, call: Program, name: str, ref_written: tuple = (), **_: Any):
    _check_no_refs_run(name, ref_written)
    return eval_program(call, args)


@custom_vmap_call_p.def_lowering
def _lowering(ctx: Any, *args: Any, call: Program, name: str, ref_written: tuple = (), **_: Any):
    _check_no_refs_run(name, ref_written)
    return ctx.call(call, name, args)


@custom_vmap_call_p.def_batch
def _batch(
    args, dims, *, call, rule, num_consts, in_tree, out_tree, name, ref_written=(), replaced=None
):

    # Refs made outside that the function touched (ref_context.late_inputs): their
    # values are the last operands. The rule replaces the function, so (as in
    # JAX) its accesses do not happen: the written refs' final values are the
    # operands (unbatched: a write into an outer ref under vmap is refused).
    n_refs = len(ref_written)
    if replaced is not None:  # the caller writes nothing back (see custom_vmap.__call__)
        replaced.append(True)
    ref_values = list(args[len(args) - n_refs :])
    ref_dims = list(dims[len(dims) - n_refs :])
    args, dims = args[: len(args) - n_refs], dims[: len(dims) - n_refs]
    finals = [v for v, w in zip(ref_values, ref_written, strict=True) if w]
    final_dims = [d for d, w in zip(ref_dims, ref_written, strict=True) if w]
    if batching.current_frame().device and not n_refs:
        outs = _over_devices(args, dims, call, rule, num_consts, in_tree, out_tree, name)
        return outs, [0] * len(outs)
    out_leaves, out_dims = _apply_rule(args, dims, call, rule, num_consts, in_tree, out_tree, name)
    return out_leaves + finals, out_dims + final_dims


def _over_devices(args, dims, call, rule, num_consts, in_tree, out_tree, name) -> list:
    """The call batched over a reference pmap's devices (run in lock step as
    a batch): as in JAX and on pjrt, each device runs the function itself,
    not the rule (which is for vmap). A vmap *around* the pmap is an outer
    batch here, met after this one, yet in JAX it is inside each device:
    so the result is again a custom_vmap function, of the arguments stacked
    over devices, whose body is the function mapped over the devices and
    whose rule is ``rule`` mapped over them (each device's rule sees the
    vmap's members only). Outside any vmap that call runs its body."""
    frame = batching.current_frame()
    size, axis_name = frame.size, frame.name
    dev_dims = list(dims)

    def over_devices(fun: Callable[..., list], xs: list, axes: list, label: str) -> list:
        tree = pytree.tree_structure((tuple(xs), {}))
        with collectives.device_axis(axis_name, size):
            return batching._vmap_call(
                fun, label, list(xs), tree, axes, size, 0, axis_name, device=True
            )

    def body(*xs: Any) -> list:
        return over_devices(
            lambda *a: tracing.eval_program_bind(call, list(a)), list(xs), dev_dims, f"pmap({name})"
        )

    def rule_over_devices(axis_size: int, in_batched: list, *xs: Any) -> tuple[list, list]:
        if any(in_batched[:num_consts]):
            raise NotImplementedError(
                f"custom_vmap({name}): the function closes over a value batched by an "
                "enclosing vmap; pass it as an argument instead"
            )
        user_batched = list(pytree.tree_unflatten(in_tree, list(in_batched[num_consts:])))
        # the vmap's batch axis is first: a device axis of a batched argument moved by one
        axes = [
            None if d is None else d + 1 if b else d
            for d, b in zip(dev_dims, in_batched, strict=True)
        ]
        flags: list[list[bool]] = []

        def per_device(*ys: Any) -> list:
            out, out_batched = rule(
                axis_size, user_batched, *pytree.tree_unflatten(in_tree, list(ys[num_consts:]))
            )
            leaves, batched = _checked_rule_output(rule, out, out_batched, out_tree)
            flags.append(batched)
            return leaves

        outs = over_devices(per_device, list(xs), axes, f"pmap({name}) vmap rule")
        # a batched output is (devices, members, ...) there; the vmap's axis goes first
        outs = [batching.moveaxis(x, 1, 0) if b else x for x, b in zip(outs, flags[0], strict=True)]
        return outs, list(flags[0])

    body.__name__ = f"pmap({name})"
    fun = custom_vmap(body)
    fun.def_vmap(rule_over_devices)
    return list(fun(*args))


def _checked_rule_output(rule, out, out_batched, out_tree) -> tuple[list, list]:
    """The leaves of a rule's ``(out, out_batched)``, checked against the
    function's output structure (JAX's errors)."""
    rule_name = getattr(rule, "__name__", "<unnamed rule>")
    out_leaves, rule_tree = pytree.tree_flatten(out)
    batched_leaves, batched_tree = pytree.tree_flatten(out_batched)
    if rule_tree != batched_tree:
        raise ValueError(
            "structure of output value and output batching specification returned by custom "
            f"vmap rule ({rule_name}) do not match.\nOutput values: {rule_tree}\n"
            f"Batching spec: {batched_tree}"
        )
    if rule_tree != out_tree:
        raise ValueError(
            f"structure of output returned by custom vmap rule ({rule_name}) does not match "
            f"that of original custom-vmapped function.\nOriginal output: {out_tree}\n"
            f"Rule output: {rule_tree}"
        )
    return out_leaves, batched_leaves


def _apply_rule(args, dims, call, rule, num_consts, in_tree, out_tree, name):
    frame = batching.current_frame()
    if any(d is not None for d in dims[:num_consts]):
        raise NotImplementedError(
            f"custom_vmap({name}): the function closes over a value batched by an enclosing "
            "vmap; pass it as an argument instead"
        )
    leaves = [
        batching.as_array(x) if d is None else batching.moveaxis(x, d, 0)
        for x, d in zip(args[num_consts:], dims[num_consts:], strict=True)
    ]
    batched = [d is not None for d in dims[num_consts:]]
    call_args = pytree.tree_unflatten(in_tree, leaves)
    in_batched = list(pytree.tree_unflatten(in_tree, batched))
    out, out_batched = rule(frame.size, in_batched, *call_args)
    rule_name = getattr(rule, "__name__", "<unnamed rule>")
    out_leaves, batched_leaves = _checked_rule_output(rule, out, out_batched, out_tree)
    # As JAX 0.10.2, the rule's outputs are the values as they are: one of
    # another shape or dtype than the function's (batched) output is taken,
    # and its members have the rule's type (a rule closing over an array may
    # return it unbatched, of the member's shape). A batched output must
    # still carry the batch axis first: without it vmap's result would not
    # have the mapped size, which JAX returns as it is (ill-defined there).
    for index, (leaf, is_batched) in enumerate(zip(out_leaves, batched_leaves, strict=True)):
        got = tracing.get_aval(leaf, f"custom_vmap({name})", index)
        if is_batched and (not got.shape or got.shape[0] != frame.size):
            raise ValueError(
                f"custom vmap rule ({rule_name}) returned output {index} of type "
                f"{got.str_short()} marked batched, whose first axis is not the batch axis "
                f"of size {frame.size}"
            )
    return out_leaves, [0 if b else None for b in batched_leaves]


@custom_vmap_call_p.def_jvp
def _jvp(primals, tangents, *, call, rule, num_consts, in_tree, name, ref_written=(), **_):
    """As JAX's ``custom_vmap_jvp``: the JVP is itself a custom_vmap function,
    the JVP of the body, whose batching rule is the JVP of ``rule``; so
    ``vmap(jvp(f))`` and ``jvp(vmap(f))`` both use the rule, and outside
    vmap the body is differentiated. Integer and bool arguments and outputs
    have float0 tangents, which are zeros: they are not arguments or
    outputs of that function (as inputs they are rebuilt inside it)."""
    if ref_written:
        raise NotImplementedError(
            f"custom_vmap({name}): differentiating a function that touches a Ref made "
            "outside it is not supported"
        )
    consts = list(primals[:num_consts])
    primals = list(primals[num_consts:])
    in_t_avals = [
        tangent_aval(tracing.get_aval(p, f"custom_vmap({name})", i))
        for i, p in enumerate(consts + primals)
    ]
    const_t_avals, t_avals = in_t_avals[:num_consts], in_t_avals[num_consts:]
    out_t_avals = [tangent_aval(a) for a in call.out_avals]
    diff_in = [a.dtype != dtypes.float0 for a in t_avals]
    diff_const = [a.dtype != dtypes.float0 for a in const_t_avals]
    diff_out = [a.dtype != dtypes.float0 for a in out_t_avals]

    def full(ts: list, avals: list, diff: list) -> list:
        it = iter(ts)
        return [next(it) if d else ad.zeros_like_aval(a) for a, d in zip(avals, diff, strict=True)]

    def only_diff(values: list, diff: list) -> list:
        return [v for v, d in zip(values, diff, strict=True) if d]

    # Closed-over values being differentiated: outside vmap the body's JVP
    # takes their tangents too (as JAX); the rule cannot (see rule_jvp).
    const_ts = only_diff([ad.instantiate(t) for t in tangents[:num_consts]], diff_const)
    closed_over = any(type(t) is not Zero for t in tangents[:num_consts])

    def body_jvp(ps: list, ts: list, *cts: list) -> tuple[list, list]:
        def body(*a: Any) -> list:
            return tracing.eval_program_bind(call, list(a))

        ts = full(ts, t_avals, diff_in)
        if cts:
            all_ts = [*full(cts[0], const_t_avals, diff_const), *ts]
            out_p, out_t = ad.jvp(body, [*consts, *ps], all_ts)
        else:
            out_p, out_t = ad.jvp(lambda *a: body(*consts, *a), ps, ts)
        return out_p, only_diff(list(out_t), diff_out)

    def rule_jvp(axis_size: int, in_batched: list, ps: list, ts: list, *cts: list) -> Any:
        if cts:
            # JAX 0.10.2's class here too (the rule meets an escaped tracer)
            raise UnexpectedTracerError(
                f"custom_vmap({name}): vmap of the JVP with respect to a value the function "
                "closes over (its vmap rule only sees its arguments); pass it as an argument"
            )
        p_batched, t_batched = in_batched
        it = iter(t_batched)
        t_batched = [bool(next(it)) if d else False for d in diff_in]
        # As JAX's custom_vmap_jvp: the rule sees as batched the arguments
        # batched together with their tangents; an argument batched without
        # its tangent (or a tangent without its argument) is mapped over by
        # a vmap of the rule's JVP, whose outputs are batched only where they
        # depend on it.
        mutual = [p and t for p, t in zip(p_batched, t_batched, strict=True)]
        extra = [0 if p and not t else None for p, t in zip(p_batched, t_batched, strict=True)]
        extra += [
            0 if t and not p else None
            for p, t, d in zip(p_batched, t_batched, diff_in, strict=True)
            if d
        ]
        flags: list[Any] = []
        n = len(ps)

        def primal_rule(*leaves: Any) -> list:
            args = pytree.tree_unflatten(in_tree, list(leaves))
            out, out_batched = rule(axis_size, list(pytree.tree_unflatten(in_tree, mutual)), *args)
            flags.append(out_batched)
            return pytree.tree_leaves(out)

        def rule_jvp_flat(*xs: Any) -> list:
            ts_full = full(list(xs[n:]), t_avals, diff_in)
            out_p, out_t = ad.jvp(primal_rule, list(xs[:n]), ts_full)
            return [*out_p, *only_diff(list(out_t), diff_out)]

        outs, dims = _vmap_unrestricted(rule_jvp_flat, [*ps, *ts], extra, axis_size)
        out_flags = pytree.tree_leaves(flags[0])
        m = len(out_flags)
        if m + sum(diff_out) != len(outs) or m != len(diff_out):
            raise ValueError(
                "structure of output value and output batching specification returned by "
                f"custom vmap rule ({getattr(rule, '__name__', '<unnamed rule>')}) do not match"
            )
        outs = [x if d is None else batching.moveaxis(x, d, 0) for x, d in zip(outs, dims)]
        p_flags = [b or d is not None for b, d in zip(out_flags, dims[:m], strict=True)]
        t_flags = [
            b or d is not None
            for b, d in zip(only_diff(out_flags, diff_out), dims[m:], strict=True)
        ]
        return (outs[:m], outs[m:]), (p_flags, t_flags)

    body_jvp.__name__ = f"jvp({name})"
    jvp_fun = custom_vmap(body_jvp)
    jvp_fun.def_vmap(rule_jvp)
    out_p, out_t = jvp_fun(
        primals,
        only_diff([ad.instantiate(t) for t in tangents[num_consts:]], diff_in),
        *([const_ts] if closed_over else []),
    )
    it = iter(out_t)
    out_tangents = [next(it) if d else Zero(a) for a, d in zip(out_t_avals, diff_out, strict=True)]
    return list(out_p), out_tangents


def _linearization_failed(name: str) -> ValueError:
    return ValueError(
        f"custom_vmap({name}): Linearization failed to produce known values for all output "
        "primals: reverse-mode differentiation (grad, vjp) of a custom_vmap function is not "
        "supported (its JVP cannot be linearized); use jvp, or wrap it in a custom_vjp"
    )


def _linearize(primals, tangents, *, name, **params):
    """Under linearize (grad, vjp, linearize): JAX 0.10.2's partial evaluation
    of the JVP above finds its primal outputs unknown (they come out of a
    custom_vmap taking the tangents) and raises, before any transpose; with
    no tangent there is nothing to linearize."""
    if any(type(t) is not Zero for t in tangents):
        raise _linearization_failed(name)
    outs = custom_vmap_call_p.bind(*primals, name=name, **params)
    return list(outs), [
        Zero(tangent_aval(tracing.get_aval(o, name, i))) for i, o in enumerate(outs)
    ]


custom_vmap_call_p.linearize_rule = _linearize


@custom_vmap_call_p.def_transpose
def _transpose(cts, *args, name, **_):
    # The JVP above is itself a custom_vmap (its tangents are not separable), so
    # reverse mode cannot transpose it; JAX 0.10.2 raises ValueError here too.
    raise _linearization_failed(name)


def _vmap_unrestricted(
    fun: Callable[..., list], args: list, axes: list, size: int
) -> tuple[list, list]:
    """``fun`` mapped over the arguments with an axis in ``axes`` (None:
    unmapped), returning its outputs with their batch axes (None for an
    output that does not depend on a mapped argument), as JAX's
    ``vmap_unrestricted``; with nothing mapped, ``fun`` itself."""
    if all(a is None for a in axes):
        outs = fun(*args)
        return list(outs), [None] * len(outs)
    trace = batching.BatchTrace(batching.AxisFrame(None, size), "vmap(custom_vmap jvp)")
    with tracing.new_main(trace):
        wrapped = [
            x if a is None else batching.BatchTracer(trace, x, a)
            for x, a in zip(args, axes, strict=True)
        ]
        unpacked = [trace.unpack(out) for out in fun(*wrapped)]
    return [v for v, _ in unpacked], [d for _, d in unpacked]


def _resolve_kwargs(fun: Callable[..., Any], name: str, args: tuple, kwargs: dict) -> tuple:
    try:
        signature = inspect.signature(fun)
    except (TypeError, ValueError):  # a builtin without one: the call itself checks
        return args
    try:
        # always bound, as JAX: a missing or extra argument is reported here
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        passed = [k for k in bound.kwargs if k in kwargs]
        if passed:
            raise TypeError(
                "The following keyword arguments could not be resolved to positions: "
                + ", ".join(passed)
            )
    except TypeError as e:
        raise TypeError(
            f"The input arguments to the custom_vmap-decorated function {name} could not be "
            f"resolved to positional-only arguments. Binding failed with the error:\n{e}"
        ) from e
    return bound.args


def forward_def(obj: Any, name: str) -> Any:
    """As JAX, a custom_* wrapper of another one forwards the ``def*``
    methods it lacks to the function it wraps (``custom_vjp(custom_vmap(f))``
    has ``def_vmap``), and only those."""
    fun = obj.__dict__.get("fun")
    if name.startswith("def") and fun is not None:
        return getattr(fun, name)
    raise AttributeError(f"{type(obj).__name__!r} object has no attribute {name!r}")


class custom_vmap:  # noqa: N801  (JAX's name)
    """Wrap ``fun`` so that ``vmap`` uses the rule given by :meth:`def_vmap`."""

    def __init__(self, fun: Callable[..., Any]) -> None:
        if not callable(fun):
            raise TypeError(f"custom_vmap: fun must be callable, got {type(fun).__name__}")
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.vmap_rule: Callable[..., Any] | None = None

    def __getattr__(self, name: str) -> Any:
        return forward_def(self, name)

    def def_vmap(self, rule: Callable[..., Any]) -> Callable[..., Any]:
        """Set the batching rule ``rule(axis_size, in_batched, *args) -> (out, out_batched)``."""
        self.vmap_rule = rule
        return rule

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        name = getattr(self.fun, "__name__", type(self.fun).__name__)
        args = _resolve_kwargs(self.fun, name, args, kwargs)
        if self.vmap_rule is None:
            raise AttributeError(
                f"No batching rule defined for custom_vmap function {name} using def_vmap."
            )
        leaves, in_tree = pytree.tree_flatten(args)
        avals = [tracing.get_aval(x, f"custom_vmap({name})", i) for i, x in enumerate(leaves)]
        out_trees: list[Any] = []
        touched: list[tuple[tuple, tuple]] = []

        def flat_fun(*tracers: Any) -> list[Any]:
            with ref_context.late_inputs(
                lambda k: f"a Ref made outside custom_vmap {name}"
            ) as scope:
                out = self.fun(*pytree.tree_unflatten(in_tree, tracers))
                finals = scope.finish()
                touched.append((tuple(scope.refs), scope.written_flags))
            out_leaves, out_tree = pytree.tree_flatten(out)
            if any(type(leaf) is ref_context.Ref for leaf in out_leaves):
                ref_context.check_no_refs(out, f"custom_vmap {name}")
            out_trees.append(out_tree)
            written = scope.written_flags
            return out_leaves + [v for v, w in zip(finals, written, strict=True) if w]

        origins = [f"argument {i} of {name}" for i in range(len(avals))]
        program, captured, _ = tracing.trace_to_program(flat_fun, avals, name, origins)
        refs, written = touched[0]
        if refs and not tracing.is_tracing():
            # Outside any transformation the function itself runs (its rule is
            # for vmap) on the Refs it touches; without Refs the program is
            # evaluated as JAX does, so a Python scalar argument is a weak
            # array and the results are arrays.
            return self.fun(*args)
        # Set by the batching rule when the rule replaces the function, so
        # nothing is written back (a write under vmap would be refused).
        replaced: list[bool] = []
        extra = {"ref_written": written, "replaced": replaced} if refs else {}
        outs = custom_vmap_call_p.bind(
            *captured,
            *leaves,
            *(ref_context.outer_values(refs, written) if refs else ()),
            call=program,
            rule=self.vmap_rule,
            num_consts=len(captured),
            in_tree=in_tree,
            out_tree=out_trees[0],
            name=name,
            **extra,
        )
        n_out = len(outs) - sum(written)
        if refs and not replaced:
            ref_context.write_back([r for r, w in zip(refs, written) if w], outs[n_out:])
        return pytree.tree_unflatten(out_trees[0], list(outs[:n_out]))


def sequential_vmap(f: Callable[..., Any]) -> custom_vmap:
    """``f`` as a ``custom_vmap`` whose rule maps it over the batch one
    member at a time (a scan, as ``lax.map``), the unbatched arguments
    passed whole to every member (``jax.custom_batching.sequential_vmap``)."""
    wrapped = custom_vmap(f)

    def rule(axis_size: int, in_batched: list, *args: Any) -> tuple[Any, Any]:
        del axis_size
        flags = pytree.tree_leaves(in_batched)
        leaves, in_tree = pytree.tree_flatten(list(args))
        mapped = [x for x, b in zip(leaves, flags, strict=True) if b]

        def member(mapped_leaves: list) -> Any:
            it = iter(mapped_leaves)
            merged = [next(it) if b else x for x, b in zip(leaves, flags, strict=True)]
            return wrapped(*pytree.tree_unflatten(in_tree, merged))

        _, out = control_flow.scan(lambda c, xs: (c, member(xs)), None, mapped)
        return out, pytree.tree_map(lambda _: True, out)

    wrapped.def_vmap(rule)
    return wrapped


__all__ = ["custom_vmap", "sequential_vmap"]
