"""``custom_jvp`` and ``custom_vjp``: functions whose derivative is given by the user.

``custom_jvp_call[call=P, jvp=R](args)``
    evaluates the closed Program ``P`` (the primal function); under forward
    mode and linearize its tangent is ``R(primals, tangents)``, the user's
    JVP rule, instead of the derivative of ``P``.

``custom_vjp_call[call=P, fwd=F, bwd=B](args)``
    evaluates ``P``; under linearize (and forward mode, as JAX's) the known
    part is ``F(primals) -> (outputs, residuals)`` and the tangent part is one
    ``custom_lin`` equation holding ``B``, whose transpose is
    ``B(residuals, cotangents)``. Evaluating ``custom_lin`` (forward mode's
    tangent, eagerly or returned by a jit) is JAX's ``TypeError``; a jit whose
    tangent is dropped never evaluates it (``transforms.dce.live_program``).

Outside any transformation the decorated function is simply called. Keyword
arguments are resolved to positions from the signature of the function, as
in JAX; a keyword-only parameter passed by keyword is a ``TypeError``.
Arguments in ``nondiff_argnums`` are not differentiated: they are passed to
the rules as given (first, in order), as in JAX.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from refimpl import dtypes, pytree, tracing, tree_util
from refimpl.ad_checkpoint import remat_opt_fwd
from refimpl.core import AbstractRef, Eqn, Program, ShapedArray, avals_str
from refimpl.custom_batching import forward_def
from refimpl.errors import UnexpectedTracerError
from refimpl.interpreter import eval_program
from refimpl.primitives import ref_context
from refimpl.primitives.base import EAGER_BODIES, Primitive
from refimpl.primitives.debug import INLINABLE_CALLS
from refimpl.primitives.reductions import reduce_sum_p
from refimpl.transforms import ad, batching
from refimpl.transforms.ad_util import (
    UndefinedPrimal,
    Zero,
    constant_residual,
    no_forward_mode_error,
    tangent_aval,
)
from refimpl.transforms.batching import vmap
from refimpl.transforms.dce import dce_program, dce_rules, with_params


class SymbolicZero:
    """What a rule defined with ``symbolic_zeros=True`` receives for a zero
    tangent or cotangent (as ``jax.custom_derivatives.SymbolicZero``): no
    data, only the type (``aval``; ``shape``, ``dtype``, ... read through to
    it). A rule may also return one for a zero output."""

    def __init__(self, aval: ShapedArray) -> None:
        self.aval = aval

    def __repr__(self) -> str:
        return "SymbolicZero"

    def __getattr__(self, name: str) -> Any:
        if name == "aval":  # not set yet (copying): no recursion through the aval
            raise AttributeError(name)
        return getattr(self.aval, name)

    @staticmethod
    def from_primal_value(value: Any) -> SymbolicZero:
        return SymbolicZero(tangent_aval(tracing.get_aval(value, "SymbolicZero", 0)))


class CustomVJPPrimal:
    """An argument of a ``custom_vjp`` fwd rule defined with
    ``symbolic_zeros=True``: its ``value`` and whether it is ``perturbed``
    (has a nonzero tangent), as in JAX."""

    __slots__ = ("value", "perturbed")

    def __init__(self, value: Any, perturbed: bool) -> None:
        self.value = value
        self.perturbed = perturbed

    def __repr__(self) -> str:
        return f"CustomVJPPrimal(value={self.value!r}, perturbed={self.perturbed})"


def custom_vjp_primal_tree_values(tree: Any) -> Any:
    """``tree`` with each ``CustomVJPPrimal`` leaf replaced by its value."""

    def value(leaf: Any) -> Any:
        if type(leaf) is not CustomVJPPrimal:
            raise TypeError(f"unexpected leaf type {type(leaf)}")
        return leaf.value

    return pytree.tree_map(value, tree, is_leaf=lambda x: type(x) is CustomVJPPrimal)


def _fwd_args_with_symbolic_zeros(split: Any, leaves: Sequence[Any], perturbed: Sequence[bool]):
    """fwd's arguments under ``symbolic_zeros``: each leaf the user sees wrapped
    in a ``CustomVJPPrimal``, as JAX's. The leaves given are physical
    (refimpl.pytree), so a key array, one leaf to the user, is wrapped whole
    (perturbed when its key data is)."""
    wrapped = [CustomVJPPrimal(x, z) for x, z in zip(leaves, perturbed, strict=True)]

    def whole(x: Any) -> Any:
        if not pytree.is_extended_leaf(x):
            return x
        parts, treedef = pytree.tree_flatten(x)
        if not parts or any(type(p) is not CustomVJPPrimal for p in parts):
            return x
        value = treedef.unflatten([p.value for p in parts])
        return CustomVJPPrimal(value, any(p.perturbed for p in parts))

    return tree_util.tree_map(whole, split.full_args(wrapped))


def zero_from_primal(val: Any, symbolic_zeros: bool = False) -> Any:
    """A zero tangent for each leaf of ``val`` (``jax.custom_derivatives.
    zero_from_primal``): of the leaf's tangent type (float0 for an integer
    or boolean leaf); a ``SymbolicZero`` of it with ``symbolic_zeros=True``."""

    def zero(x: Any) -> Any:
        aval = tangent_aval(tracing.get_aval(x, "zero_from_primal", 0))
        return SymbolicZero(aval) if symbolic_zeros else ad.zeros_like_aval(aval)

    return pytree.tree_map(zero, val)


def _to_user_zero(x: Any) -> Any:
    return SymbolicZero(x.aval) if type(x) is Zero else x


def _from_user_zero(x: Any) -> Any:
    return Zero(x.aval) if type(x) is SymbolicZero else x


def _name(fun: Callable) -> str:
    return getattr(fun, "__name__", type(fun).__name__)


def _canonical_numpy(args: tuple, nondiff_argnums: Sequence[int]) -> tuple:
    """The arguments a custom_jvp/custom_vjp function runs on eagerly: NumPy
    data of a non-canonical dtype (float64, int64 without x64) converted to
    the canonical one, as JAX 0.10.2 binds them (``f(np.arange(2.0))``
    sees float32); Python scalars and the ``nondiff_argnums`` ones as given."""

    def canonical(leaf: Any) -> Any:
        if isinstance(leaf, (np.ndarray, np.generic)) and leaf.dtype.kind in "biufc":
            dtype = dtypes.canonicalize_dtype(leaf.dtype)
            if dtype != leaf.dtype:
                return np.asarray(leaf).astype(dtype)
        return leaf

    return tuple(
        arg if i in nondiff_argnums else pytree.tree_map(canonical, arg)
        for i, arg in enumerate(args)
    )


# fun -> its signature (None: it has none), computed once per function: every
# call binds its arguments (_resolve_kwargs)
_SIGNATURES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_OPAQUE = inspect.signature(lambda *a, **k: None)  # a partial's signature is opaque, as JAX's


def _signature(fun: Callable) -> inspect.Signature | None:
    try:
        return _SIGNATURES[fun]
    except (KeyError, TypeError):  # not seen yet; or not weakly referable / unhashable
        pass
    signature: inspect.Signature | None = _OPAQUE
    if not isinstance(fun, functools.partial):
        try:
            signature = inspect.signature(fun)
        except (TypeError, ValueError):
            signature = None
    try:
        _SIGNATURES[fun] = signature
    except TypeError:
        pass
    return signature


def _resolve_kwargs(kind: str, fun: Callable, args: tuple, kwargs: dict) -> tuple:
    """Positional arguments from ``args``/``kwargs`` by ``fun``'s signature.

    Always bound, as JAX's ``resolve_kwargs``: a missing or an extra argument
    is its wrapped TypeError here, before ``fun`` or a rule runs."""
    signature = _signature(fun)
    if signature is None:  # a builtin without one: the call itself checks
        return args
    try:
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
            f"The input arguments to the {kind}-decorated function {_name(fun)} could not be "
            f"resolved to positional-only arguments. Binding failed with the error:\n{e}"
        ) from e
    return bound.args


def _argnums_of_names(kind: str, fun: Callable, names: Any) -> tuple[int, ...]:
    """JAX's ``nondiff_argnames``: the positions of the named parameters of
    ``fun`` (a call passing them by keyword is resolved to positions)."""
    if isinstance(names, str):
        names = (names,)
    names = tuple(names)
    if not names:
        return ()
    params = list(inspect.signature(fun).parameters.values())
    positions = {
        p.name: i
        for i, p in enumerate(params)
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    }
    missing = [n for n in names if n not in positions]
    if missing:
        raise ValueError(
            f"{kind}: nondiff_argnames {missing} are not positional parameters of {_name(fun)}"
        )
    return tuple(positions[n] for n in names)


def _check_nondiff_argnums(kind: str, nondiff_argnums: Any) -> tuple[int, ...]:
    try:
        nums = tuple(int(i) for i in nondiff_argnums)
    except TypeError:
        raise TypeError(
            f"{kind}: nondiff_argnums must be a tuple of ints, got {nondiff_argnums!r}"
        ) from None
    if any(i < 0 for i in nums):
        raise ValueError(f"{kind}: nondiff_argnums must be non-negative, got {nums}")
    return tuple(sorted(set(nums)))


def _is_ref(value: Any) -> bool:
    return tracing.is_array_like(value) and type(tracing.get_aval(value, "ref", 0)) is AbstractRef


class _Split:
    """A call's arguments split into the non-differentiated ones and the flat
    leaves of the differentiated ones."""

    def __init__(
        self, kind: str, args: tuple, nondiff_argnums: tuple[int, ...], refs_apart: bool = False
    ) -> None:
        if nondiff_argnums and max(nondiff_argnums) >= len(args):
            raise TypeError(
                f"{kind}: nondiff_argnums={nondiff_argnums} but the function was called with "
                f"only {len(args)} positional arguments"
            )
        self.nondiff = [args[i] for i in nondiff_argnums]
        self.positions = [i for i in range(len(args)) if i not in nondiff_argnums]
        self.nondiff_argnums = nondiff_argnums
        self.n_args = len(args)
        diff = tuple(args[i] for i in self.positions)
        self.leaves, self.in_tree = pytree.tree_flatten(diff)
        # Ref arguments (custom_vjp): kept out of the leaves, which are values;
        # the function and fwd get the Ref itself back in its place, and its
        # reads and writes are those of a ref made outside (late inputs)
        self.ref_slots: tuple = ()
        if refs_apart:
            self.ref_slots = tuple((i, x) for i, x in enumerate(self.leaves) if _is_ref(x))
            if self.ref_slots:
                self.leaves = [x for x in self.leaves if not _is_ref(x)]

    def without_values(self) -> _Split:
        """This split with each leaf replaced by its aval, for a rule kept in
        a program (it needs only the structure): the leaves are the values
        of the call, tracers of the trace that bound it, which must not
        outlive that trace (the leak checker would find them). Its Ref
        arguments are held weakly, for the same reason (:class:`_KeptRef`)."""
        copy = object.__new__(_Split)
        copy.__dict__.update(self.__dict__)
        copy.leaves = [tracing.get_aval(x, "custom rule", i) for i, x in enumerate(self.leaves)]
        copy.ref_slots = tuple((i, _KeptRef(ref)) for i, ref in self.ref_slots)
        return copy

    def with_refs(self, leaves: Sequence[Any]) -> list[Any]:
        """``leaves`` (without the Ref arguments) with the Refs back in place."""
        merged = list(leaves)
        for i, ref in self.ref_slots:
            merged.insert(i, _live(ref))
        return merged

    def full_args(self, leaves: Sequence[Any]) -> list[Any]:
        diff = pytree.tree_unflatten(self.in_tree, self.with_refs(leaves))
        full: list[Any] = [None] * self.n_args
        for i, value in zip(self.nondiff_argnums, self.nondiff, strict=True):
            full[i] = value
        for i, value in zip(self.positions, diff, strict=True):
            full[i] = value
        return full

    def diff_args(self, leaves: Sequence[Any]) -> tuple:
        return tuple(pytree.tree_unflatten(self.in_tree, self.with_refs(leaves)))

    def ref_values(self) -> list[Any]:
        """The values the Ref arguments hold now."""
        return [ref._value for _, ref in self.ref_slots]


class _KeptRef:
    """A Ref argument of a custom_vjp call as its rules, kept in a program,
    hold it: weakly. A Ref made inside a staging trace holds a tracer of that
    trace, which a strong reference from the program would keep past its end
    (the leak checker reports it; JAX's Ref is itself a tracer, which its
    custom_vjp equation does not keep). While the Ref lives (someone else
    holds it, say a Ref made outside the jit) fwd gets the Ref itself, so a
    write of bwd to it, saved by fwd, reaches it. Once it is gone no one can
    read it again, and fwd gets a twin of it (its type and creation order, no
    value: fwd's binding gives it one), the same one on every later call so
    that fwd and bwd agree on it."""

    __slots__ = ("_ref", "_twin")

    def __init__(self, ref: Any) -> None:
        self._ref = weakref.ref(ref)
        # the twin copies everything but the value now: by the time it is
        # needed the Ref itself is gone
        twin = object.__new__(type(ref))
        for name in type(ref).__slots__:
            if name not in ("_value", "__weakref__"):
                setattr(twin, name, getattr(ref, name))
        twin._value = None
        self._twin = twin

    def get(self) -> Any:
        ref = self._ref()
        return self._twin if ref is None else ref


def _live(ref: Any) -> Any:
    """The Ref a kept rule's fwd and bwd use for ``ref`` (a Ref or :class:`_KeptRef`)."""
    return ref.get() if type(ref) is _KeptRef else ref


class _Refs:
    """The refs made outside a custom function that its primal touched
    (``refimpl.ref.late_inputs``): their values are the call's last operands,
    the written ones' final values its last outputs. A rule (JVP, fwd/bwd)
    replaces the primal, so, as in JAX, the primal's accesses do not happen
    then: the rule's outputs for the written refs are their values unchanged."""

    def __init__(self, refs: tuple = (), written: tuple = ()) -> None:
        self.refs = refs
        self.written = written
        self.n = len(refs)
        self.n_written = sum(written)

    def split(self, values: Sequence[Any]) -> tuple[list, list]:
        """(the function's own operands, the refs' values)."""
        cut = len(values) - self.n
        return list(values[:cut]), list(values[cut:])

    def unchanged(self) -> list[Any]:
        """The written refs' final values when the primal does not run: their
        values now (after the rule, which may write them itself)."""
        return [_live(r)._value for r, w in zip(self.refs, self.written, strict=True) if w]

    def zero_tangents(self) -> list[Any]:
        return [Zero(tangent_aval(tracing.get_aval(v, "Ref", "value").strip_weak()))
                for v in self.unchanged()]  # fmt: skip


_NO_REFS = _Refs()


def _trace_primal(
    kind: str,
    fun: Callable,
    split: _Split,
    rule_writes: Callable[[list], set[int]] | None = None,
) -> tuple[Program, list, Any, _Refs]:
    """Trace the primal function on the differentiated leaves -> (program,
    captured values, output tree, the refs made outside it that it touched).
    ``rule_writes(leaves)``: the ids of the Ref arguments a rule that may
    replace the function (custom_vjp's fwd) writes; they count as written."""
    out_trees: list[Any] = []
    touched: list[_Refs] = []

    def flat_fun(*leaves: Any) -> list[Any]:
        with ref_context.late_inputs(lambda k: f"a Ref made outside {kind} {_name(fun)}") as scope:
            # A Ref argument is an operand of the call even if the function
            # never reads it: its value is differentiated like an argument's
            # (bwd's cotangent for it flows to that value, as in JAX).
            ref_context.outer_values(
                [ref for _, ref in split.ref_slots], [False] * len(split.ref_slots)
            )
            out = fun(*split.full_args(leaves))
            finals = scope.finish()
            written = scope.written_flags
            args = {id(ref) for _, ref in split.ref_slots}
            unwritten = args - {id(r) for r, w in zip(scope.refs, written, strict=True) if w}
            if rule_writes is not None and unwritten:
                # Under differentiation fwd replaces the function and its
                # writes to a Ref argument land (JAX's fwd writes the primal
                # ref), also where the function writes none: such a Ref
                # argument's final value is one of the call's outputs too.
                extra = rule_writes(list(leaves)) & unwritten
                written = tuple(
                    w or id(r) in extra for r, w in zip(scope.refs, written, strict=True)
                )
            touched.append(_Refs(tuple(scope.refs), written))
        out_leaves, out_tree = pytree.tree_flatten(out)
        if any(type(leaf) is ref_context.Ref for leaf in out_leaves):
            # JAX names the custom_vjp function its "primal function" (matched by regex)
            ref_context.check_no_refs(out, f"{kind} primal function {_name(fun)}")
        for i, leaf in enumerate(out_leaves):
            if not tracing.is_array_like(leaf):
                raise TypeError(
                    f"{kind} function {_name(fun)} output leaf {i} is a "
                    f"{type(leaf).__name__}, not an array"
                )
        out_trees.append(out_tree)
        written = touched[-1].written
        return out_leaves + [v for v, w in zip(finals, written, strict=True) if w]

    avals = [tracing.get_aval(x, _name(fun), i) for i, x in enumerate(split.leaves)]
    origins = [f"an argument of {_name(fun)}"] * len(avals)
    program, captured, _ = tracing.trace_to_program(flat_fun, avals, _name(fun), origins)
    return program, list(captured), out_trees[0], touched[0]


def _check_no_closed_over_tangents(kind: str, tangents: Sequence[Any], num_consts: int) -> None:
    if any(type(t) is not Zero for t in tangents[:num_consts]):
        raise _closed_over_error(kind)


def _closed_over_error(kind: str) -> UnexpectedTracerError:
    # JAX 0.10.2's class where the closed-over value is a tracer of the
    # differentiation (it finds it as an escaped tracer); a TypeError too.
    return UnexpectedTracerError(
        f"Detected differentiation of a {kind} function with respect to a closed-over "
        f"value. That isn't supported because the custom rule only specifies how to "
        f"differentiate the {kind} function with respect to explicit input parameters. "
        "Try passing the closed-over value into the function as an argument, and "
        "adapting the rule."
    )


def _jvp_traces(tree: Any) -> set[int]:
    """The differentiations (JVP traces, also below a vmap's) whose tracers
    are among ``tree``'s leaves."""
    found = set()
    for leaf in pytree.tree_leaves(tree):
        while isinstance(leaf, tracing.Tracer):
            if isinstance(leaf, ad.JVPTracer):
                found.add(id(leaf._trace))
                leaf = leaf.primal
            elif isinstance(leaf, batching.BatchTracer):
                leaf = leaf.val
            else:
                break
    return found


def _no_closed_over_jvp_tracers(kind: str, fun: Callable, out: Any, args: Any) -> Any:
    """``out``, the function run as it is on arguments no differentiation
    perturbs; a differentiated value it closes over is JAX 0.10.2's
    UnexpectedTracerError. JAX runs the function below every JVP trace whose
    tangents of the arguments are zero, so such a value is an escaped tracer
    there (a vmap's tracer is not: vmap runs it in its own subtrace)."""
    if _jvp_traces(out) - _jvp_traces(args):
        raise UnexpectedTracerError(
            f"Encountered an unexpected tracer: the {kind} function {_name(fun)} reads a "
            "value that an enclosing jvp/grad differentiates, and none of its arguments is "
            "differentiated there. Differentiation with respect to a closed-over value is "
            "not supported: the function runs outside that differentiation (its rule gives "
            "the derivative), where the value is an escaped tracer. Pass it to the function "
            "as an argument."
        )
    return out


def _call_abstract_eval(*avals: ShapedArray, call: Program, **_: Any) -> list[ShapedArray]:
    if list(avals) != call.in_avals:
        raise TypeError(
            f"custom derivative call: operands ({avals_str(avals)}) but the function takes "
            f"({avals_str(call.in_avals)})"
        )
    return call.out_avals


def _call_impl(*args: np.ndarray, call: Program, **_: Any) -> list[Any]:
    return eval_program(call, args)


def _call_lowering(ctx: Any, *args: Any, call: Program, **params: Any) -> list[Any]:
    return ctx.call(call, "custom_call", args)


# --- custom_jvp ---------------------------------------------------------------------------

custom_jvp_call_p = Primitive("custom_jvp_call", multiple_results=True)
custom_jvp_call_p.jax_param_names = {"call_jaxpr": "call"}  # type: ignore[attr-defined]
INLINABLE_CALLS[custom_jvp_call_p] = "call"  # lowering may inline it (primitives.debug)
EAGER_BODIES[custom_jvp_call_p] = "call"  # evaluated eagerly by binding, as JAX's
custom_jvp_call_p.def_abstract_eval(_call_abstract_eval)


def _check_no_refs_run(jvp: Any) -> None:
    refs: _Refs = getattr(jvp, "refs", _NO_REFS)
    if refs.n:
        raise NotImplementedError(
            f"custom_jvp: the function {_name(jvp.owner.fun)} reads or writes a Ref made "
            "outside it, and it is run inside a jit (not differentiated): not supported, as "
            "in JAX 0.10.2 (no state discharge rule for custom_jvp_call). Pass the ref's value "
            "as an argument, or touch the ref outside the custom_jvp function."
        )


@custom_jvp_call_p.def_impl
def _custom_jvp_call_impl(*args: Any, call: Program, jvp: Any, **params: Any) -> list[Any]:
    _check_no_refs_run(jvp)
    return _call_impl(*args, call=call, **params)


@custom_jvp_call_p.def_lowering
def _custom_jvp_call_lowering(ctx: Any, *args: Any, call: Program, jvp: Any, **params: Any):
    _check_no_refs_run(jvp)
    return _call_lowering(ctx, *args, call=call, **params)


def _rule_value(value: Any) -> Any:
    """A primal or tangent as a custom rule sees it: a Python number as it was
    given (JAX's rules get the user's numbers, its TypedFloat/TypedInt being
    their subclasses), anything else as user code computes with it."""
    return value if dtypes.is_python_scalar(value) else ad.user_value(value)


class _JVPRule:
    """The user's JVP rule for one call, flat in and flat out."""

    def __init__(
        self, owner: custom_jvp, split: _Split, out_tree: Any, out_avals: list, refs: _Refs
    ) -> None:
        self.owner = owner
        self.split = split.without_values()
        self.out_tree = out_tree
        self.out_avals = out_avals  # the function's own outputs
        self.refs = refs

    def __repr__(self) -> str:
        return f"jvp_of({_name(self.owner.fun)})"

    @property
    def lowering_key(self) -> int:
        """All the lowering reads of the rule (it refuses outer refs): the
        compilation cache keys the equation by this, not by the Python rule."""
        return self.refs.n

    def __call__(self, primals: list, tangents: list) -> tuple[list, list]:
        primals, _ = self.refs.split(primals)
        tangents, _ = self.refs.split(tangents)
        p_leaves, touts = self._call(primals, tangents)
        return p_leaves + self.refs.unchanged(), touts + self.refs.zero_tangents()

    def _call(self, primals: list, tangents: list) -> tuple[list, list]:
        owner, split = self.owner, self.split
        if not owner.symbolic_zeros:
            tangents = [ad.instantiate(t) for t in tangents]
        primals = [_rule_value(p) for p in primals]
        tangents = [_to_user_zero(t) if type(t) is Zero else _rule_value(t) for t in tangents]
        p_args = split.diff_args(primals)
        t_args = split.diff_args(tangents)
        if not owner.symbolic_zeros:
            # a key's tangent is float0[key.shape], as JAX's (not a key over float0 data)
            t_args = ad.extended_cotangents(pytree, t_args)
        assert owner.jvp is not None  # __call__ raised before binding without one
        out = owner.jvp(*split.nondiff, p_args, t_args)
        # JAX 0.10.2's checks, in its order and words (its test files match them)
        rule, fun = _name(owner.jvp), _name(owner.fun)
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise TypeError(
                f"Custom JVP rule {rule} for function {fun} must produce a pair (list or tuple "
                f"of length two) representing primal and tangent outputs, but got {out}."
            )
        primal_out, tangent_out = out
        p_leaves, p_tree = pytree.tree_flatten(primal_out)
        t_leaves, t_tree = pytree.tree_flatten(tangent_out, is_leaf=_is_zero)
        t_leaves = [_from_user_zero(t) for t in t_leaves]
        if p_tree != t_tree:
            raise TypeError(
                f"Custom JVP rule {rule} for function {fun} must produce primal and tangent "
                f"outputs with equal container (pytree) structures, but got {p_tree} and "
                f"{t_tree} respectively."
            )
        p_avals = [tracing.get_aval(p, "custom_jvp", "primal") for p in p_leaves]
        if self.out_tree is None:  # the function was not traced: the rule's outputs say
            self.out_tree, self.out_avals = p_tree, p_avals
        head = (
            f"Custom JVP rule {rule} for function {fun} must produce a pair (list or tuple of "
            "length two) where the first element represents the primal output (equal in value "
            f"to the output of the custom_jvp-decorated function {fun}, and in particular "
        )
        _check_rule_primals(
            (
                f"{head}of the same container/pytree structure), but ",
                f"{head}with leaves of the same shape/dtype), but ",
            ),
            ("JVP rule", "custom_jvp", fun),
            (p_tree, p_avals),
            (self.out_tree, self.out_avals),
        )
        touts = []
        for t, aval in zip(t_leaves, self.out_avals, strict=True):
            expected = tangent_aval(aval)
            if type(t) is Zero:
                touts.append(Zero(expected))
                continue
            if getattr(t, "dtype", None) == dtypes.float0:  # a NumPy float0 array
                got = ShapedArray(np.shape(t), dtypes.float0)
            else:
                got = tracing.get_aval(t, "custom_jvp", "tangent")
            if expected.dtype == dtypes.float0:
                # an integer or bool output's tangent is float0 zeros (a
                # SymbolicZero or None too), JAX's check: not integer zeros
                if got.dtype != dtypes.float0 or got.shape != expected.shape:
                    raise TypeError(
                        "Custom JVP rule must produce primal and tangent outputs with "
                        "corresponding shapes and dtypes, but got:\n  primal "
                        f"{_aval_str(aval)} with tangent {_aval_str(got)}, expecting tangent "
                        f"{_aval_str(expected)}"
                    )
                touts.append(Zero(expected))
                continue
            if got.shape != expected.shape or got.dtype != expected.dtype:
                raise TypeError(
                    "Custom JVP rule must produce primal and tangent outputs with "
                    f"corresponding shapes and dtypes. Expected {_aval_str(expected)} (tangent "
                    f"type of {_aval_str(aval)}) but got {_aval_str(got)}."
                )
            touts.append(t)
        return p_leaves, touts


def _aval_str(aval: Any) -> str:
    """``float32[2]``, as JAX's messages print a type: the dtype's full name
    (not the listings' ``f32[2]``), no weak mark; ``float0[]``, ``key<fry>[]``."""
    return str(aval.update(weak_type=False) if isinstance(aval, ShapedArray) else aval)


def _check_rule_primals(openings: tuple, who: tuple, rule_out: tuple, fun_out: tuple) -> None:
    """A custom_jvp rule's or custom_vjp fwd rule's primal outputs against the
    function's (``fun_out``: its tree and avals, once it was traced): the
    same tree, then the same shapes and dtypes (weak types aside), as JAX
    0.10.2 checks them and in its words. ``openings`` begin the two
    messages (another tree, other types); ``who`` is ``(the rule's kind,
    the decorator, the function's name)``."""
    kind, decorator, fun = who
    (tree, avals), (fun_tree, fun_avals) = rule_out, fun_out
    if tree == fun_tree and all(
        a.strip_weak() == b.strip_weak() for a, b in zip(avals, fun_avals, strict=True)
    ):
        return
    got, expected = _types_text(tree, avals), _types_text(fun_tree, fun_avals)
    if tree != fun_tree:
        raise TypeError(
            f"{openings[0]}instead the {kind} output's first element had container/pytree "
            f"structure:\n    {got}\nwhile the {decorator}-decorated function {fun} had "
            f"output container/pytree structure:\n    {expected}."
        )
    raise TypeError(
        f"{openings[1]}instead the {kind} output's first element had shapes/dtypes of:\n"
        f"    {got}\nwhile the {decorator}-decorated function {fun} had output "
        f"shapes/dtypes of:\n    {expected}"
    )


def _types_text(tree: Any, avals: list) -> str:
    """``(float32[], float32[])``: a tree of types, as JAX's rule checks print one."""
    return str(pytree.tree_unflatten(tree, [_aval_str(a) for a in avals])).replace("'", "")


def _is_zero(x: Any) -> bool:
    return type(x) is Zero or type(x) is SymbolicZero


def _check_no_ref_tangents(kind: str, tangents: Sequence[Any], refs: _Refs) -> None:
    """The values of refs made outside the function are closed-over values too."""
    if refs.n:
        _check_no_closed_over_tangents(kind, tangents[len(tangents) - refs.n :], refs.n)


def _custom_jvp_call_jvp(primals, tangents, *, call, jvp, num_consts, symbolic_zeros):
    _check_no_closed_over_tangents("custom_jvp", tangents, num_consts)
    _check_no_ref_tangents("custom_jvp", tangents, getattr(jvp, "refs", _NO_REFS))
    return jvp(list(primals[num_consts:]), list(tangents[num_consts:]))


custom_jvp_call_p.def_jvp(_custom_jvp_call_jvp)


@custom_jvp_call_p.def_transpose
def _custom_jvp_call_transpose(cts: list, *args: Any, call: Program, **_: Any) -> list:
    """A custom_jvp function that is linear in some inputs transposes as its
    primal function (JAX's rule: the JVP rule plays no part in transposition)."""

    linear = [isinstance(a, UndefinedPrimal) for a in args]
    return ad.backward_pass(call, linear, args, list(cts))


def _vmap_inside(trace: Any) -> bool:
    """Whether a vmap that started inside ``trace`` is still running."""
    traces = tracing._stack.traces
    for k, t in enumerate(traces):
        if t is trace:
            return any(isinstance(u, batching.BatchTrace) for u in traces[k + 1 :])
    return False


class _CustomFunction:
    """What ``custom_jvp`` and ``custom_vjp`` share: the wrapped function, its
    ``nondiff_argnums``, and the call: keyword arguments resolved to
    positions; outside a trace the function itself runs (its rules matter
    only to transformations); under a trace the primal is traced into a
    Program and bound as one call equation carrying the rules. Not a
    descriptor, as JAX 0.10.2's: a class attribute does not bind ``self``."""

    _kind = ""
    # custom_vjp's defvjp may set it: such a fwd's Ref effects are checked on
    # the traced path, so eager differentiation does not bypass them
    optimize_remat = False

    def __init__(
        self,
        fun: Callable,
        nondiff_argnums: Sequence[int] = (),
        nondiff_argnames: Sequence[str] = (),
    ) -> None:
        if not callable(fun):
            raise TypeError(f"{self._kind}: fun must be callable, got {type(fun).__name__}")
        # First: update_wrapper copies fun.__dict__ into ours, and a wrapped
        # custom_vmap/custom_jvp object has its own ``fun`` (its body), which
        # must not replace ours.
        functools.update_wrapper(self, fun)
        self.fun = fun
        nondiff_argnums = tuple(nondiff_argnums) + _argnums_of_names(
            self._kind, fun, nondiff_argnames
        )
        self.nondiff_argnums = _check_nondiff_argnums(self._kind, nondiff_argnums)
        self.symbolic_zeros = False

    def __getattr__(self, name: str) -> Any:
        return forward_def(self, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        missing = self._missing_rule(_name(self.fun))
        if missing is not None:
            raise AttributeError(missing)
        args = _resolve_kwargs(self._kind, self.fun, args, kwargs)
        if not tracing.is_tracing():
            return self.fun(*_canonical_numpy(args, self.nondiff_argnums))
        split = _Split(self._kind, args, self.nondiff_argnums, self._kind == "custom_vjp")
        self._check_nondiff(split)
        ref_values = split.ref_values()
        trace = tracing.find_top_trace(split.leaves + ref_values)
        if trace is None:  # a transformation is active, but not on these arguments
            out = self.fun(*_canonical_numpy(args, self.nondiff_argnums))
            return _no_closed_over_jvp_tracers(self._kind, self.fun, out, args)
        if (
            isinstance(trace, ad.JVPTrace)
            and tracing.current_builder() is None
            and not self.optimize_remat
            # a Ref argument holding a differentiated value: the call is
            # traced, so that value is an operand the rules differentiate
            and not any(isinstance(v, tracing.Tracer) and v._trace is trace for v in ref_values)
            # no vmap started inside the differentiation is running (the
            # function or its rule may close over its tracers: the call goes
            # to that vmap first, as JAX's innermost trace); a differentiation
            # started inside it (grad of grad) does not count: its rules run
            # in this one's context
            and not _vmap_inside(trace)
        ):
            # Differentiation outside jit: as JAX's JVPTrace.process_custom_*_call,
            # the rules run on the primal values, which are concrete (so Python
            # may branch on them); the function itself is not traced.
            return self._differentiate_eagerly(trace, split)
        program, captured, out_tree, refs = _trace_primal(
            self._kind, self.fun, split, self._rule_writes(split)
        )
        if not refs.n:
            outs = self._bind(captured, split.leaves, split, program, out_tree, refs)
            return pytree.tree_unflatten(out_tree, outs)
        ref_values = ref_context.outer_values(refs.refs, refs.written)
        outs = self._bind(captured, split.leaves + ref_values, split, program, out_tree, refs)
        n_out = len(outs) - refs.n_written
        ref_context.write_back([r for r, w in zip(refs.refs, refs.written) if w], outs[n_out:])
        return pytree.tree_unflatten(out_tree, outs[:n_out])

    def _missing_rule(self, name: str) -> str | None:
        raise NotImplementedError

    def _rule_writes(self, split: _Split) -> Callable[[list], set[int]] | None:
        return None

    def _check_nondiff(self, split: _Split) -> None:
        """custom_jvp takes a traced value among its nondiff arguments (its
        rule sees it as it is); custom_vjp refuses one, as JAX."""

    def _differentiate_eagerly(self, trace: ad.JVPTrace, split: _Split) -> Any:
        primal_tuple, tangent_tuple = zip(*[trace.primal_tangent(x) for x in split.leaves])
        primals, tangents = list(primal_tuple), list(tangent_tuple)
        if all(type(t) is Zero for t in tangents):  # nothing to differentiate
            args = split.full_args(primals)
            return _no_closed_over_jvp_tracers(self._kind, self.fun, self.fun(*args), args)
        primals_out, tangents_out, out_tree = self._apply_rules(trace, split, primals, tangents)
        if any(isinstance(p, tracing.Tracer) and p._trace is trace for p in primals_out):
            # the rule computed its primal output from a value this trace
            # differentiates that is not an argument (a closed-over tracer,
            # e.g. read from a Ref): the same error as the traced path's
            raise _closed_over_error(self._kind)
        outs = [trace.wrap(p, t) for p, t in zip(primals_out, tangents_out, strict=True)]
        return pytree.tree_unflatten(out_tree, outs)

    def _apply_rules(
        self, trace: ad.JVPTrace, split: _Split, primals: list, tangents: list
    ) -> tuple[list, list, Any]:
        """(primal outputs, tangent outputs, output tree) of the rules applied
        to ``primals`` and ``tangents`` (the function is not traced)."""
        raise NotImplementedError

    def _bind(
        self,
        captured: list,
        operands: list,
        split: _Split,
        program: Program,
        out_tree: Any,
        refs: _Refs,
    ) -> list:
        raise NotImplementedError


class custom_jvp(_CustomFunction):
    """``jax.custom_jvp``: ``f = custom_jvp(fun)``, then ``f.defjvp(rule)`` with
    ``rule(primals, tangents) -> (primal_out, tangent_out)`` (``primals`` and
    ``tangents`` are tuples of the differentiated arguments; arguments in
    ``nondiff_argnums`` come first, as given), or ``f.defjvps(*rules)``."""

    _kind = "custom_jvp"

    def __init__(
        self,
        fun: Callable,
        nondiff_argnums: Sequence[int] = (),
        nondiff_argnames: Sequence[str] = (),
    ) -> None:
        super().__init__(fun, nondiff_argnums, nondiff_argnames)
        self.jvp: Callable | None = None

    def defjvp(self, jvp: Callable, symbolic_zeros: bool = False) -> Callable:
        self.jvp = jvp
        self.symbolic_zeros = bool(symbolic_zeros)
        return jvp

    def defjvps(self, *jvps: Callable | None) -> None:
        """One rule per differentiated argument: ``jvp_i(tangent_i, primal_out,
        *primals) -> tangent contribution``; ``None`` for a zero contribution.
        The output tangent is the sum of the contributions."""
        if self.nondiff_argnums:
            raise TypeError("Can't use ``defjvps`` with ``nondiff_argnums``.")

        def jvp(primals: tuple, tangents: tuple) -> tuple[Any, Any]:
            primal_out = self(*primals)
            total: Any = None
            for rule, t in zip(jvps, tangents, strict=False):
                if rule is None:
                    continue
                contribution = rule(t, primal_out, *primals)
                total = (
                    contribution
                    if total is None
                    else pytree.tree_map(lambda a, b: a + b, total, contribution)
                )
            if total is None:
                total = pytree.tree_map(lambda p: p * 0, primal_out)
            return primal_out, total

        self.defjvp(jvp)

    def _missing_rule(self, name: str) -> str | None:
        if self.jvp is None:
            return f"No JVP defined for custom_jvp function {name} using defjvp."
        return None

    def _apply_rules(self, trace, split, primals, tangents):
        rule = _JVPRule(self, split, None, None, _NO_REFS)
        primals_out, tangents_out = rule(primals, tangents)
        return primals_out, tangents_out, rule.out_tree

    def _bind(self, captured, operands, split, program, out_tree, refs) -> list:
        own_avals = program.out_avals[: len(program.out_avals) - refs.n_written]
        return custom_jvp_call_p.bind(
            *captured,
            *operands,
            call=program,
            jvp=_JVPRule(self, split, out_tree, own_avals, refs),
            num_consts=len(captured),
            symbolic_zeros=self.symbolic_zeros,
        )


# --- custom_vjp ---------------------------------------------------------------------------

custom_vjp_call_p = Primitive("custom_vjp_call", multiple_results=True)
# eqn.params["call_jaxpr"] is the primal program, as JAX's (refimpl.core.JaxNamedParams)
custom_vjp_call_p.jax_param_names = {"call_jaxpr": "call"}  # type: ignore[attr-defined]
INLINABLE_CALLS[custom_vjp_call_p] = "call"
EAGER_BODIES[custom_vjp_call_p] = "call"  # evaluated eagerly by binding, as JAX's
custom_vjp_call_p.def_abstract_eval(_call_abstract_eval)
custom_vjp_call_p.def_impl(_call_impl)
custom_vjp_call_p.def_lowering(_call_lowering)

_NO_JVP = "can't apply forward-mode autodiff (jvp) to a custom_vjp function."


class _VJPRules:
    """The user's fwd and bwd for one call."""

    def __init__(
        self, owner: custom_vjp, split: _Split, out_tree: Any, out_avals: list, refs: _Refs
    ) -> None:
        self.owner = owner
        self.split = split.without_values()
        self.out_tree = out_tree
        self.out_avals = out_avals  # the function's own outputs
        # the Ref arguments among the touched refs: held as the split holds
        # them (weakly, the same handles)
        kept = {
            id(ref): handle
            for (_, ref), (_, handle) in zip(split.ref_slots, self.split.ref_slots, strict=True)
        }
        self.refs = _Refs(tuple(kept.get(id(r), r) for r in refs.refs), refs.written)

    def __repr__(self) -> str:
        return f"vjp_of({_name(self.owner.fun)})"

    @property
    def optimize_remat(self) -> bool:
        return self.owner.optimize_remat

    def arg_ref_slots(self) -> list[int | None]:
        """For each ref the function touched: its position among the Ref
        arguments (whose values are differentiated), or None for a ref
        made outside and closed over (whose value must not be)."""
        index = {id(ref): k for k, (_, ref) in enumerate(self.split.ref_slots)}
        return [index.get(id(ref)) for ref in self.refs.refs]

    def fwd(self, primals: list, perturbed: list[bool]) -> tuple[list, list, Any]:
        primals, ref_values = self.refs.split(primals)
        perturbed, _ = self.refs.split(perturbed)
        # fwd runs on the values the call received: each Ref argument holds
        # its operand's value meanwhile (outside, it may hold a tracer of a
        # finished trace, or the differentiated value itself). fwd's writes
        # to the refs the function writes are the call's final values of
        # them; another write of fwd's stays, as to a closed-over ref.
        live = [_live(r) for r in self.refs.refs]
        bound = [
            (ref, ref._value, ad.user_value(value))
            for ref, value, k in zip(live, ref_values, self.arg_ref_slots(), strict=True)
            if k is not None
        ]
        written = {id(r) for r, w in zip(live, self.refs.written, strict=True) if w}
        # a twin keeps no write of fwd's either: no one can read it, and it
        # would hold a tracer of this differentiation
        written |= {id(r._twin) for r in self.refs.refs if type(r) is _KeptRef}
        try:
            for ref, _, value in bound:
                ref._value = value
            p_leaves, res_leaves, res_tree = self._fwd(primals, perturbed)
            finals = self.refs.unchanged()
        finally:
            for ref, outer, value in bound:
                if ref._value is value or id(ref) in written:
                    ref._value = outer
        return p_leaves + finals, res_leaves, res_tree

    def _fwd(self, primals: list, perturbed: list[bool]) -> tuple[list, list, Any]:
        owner, split = self.owner, self.split
        primals = [_rule_value(p) for p in primals]
        if owner.symbolic_zeros:
            args = _fwd_args_with_symbolic_zeros(split, primals, perturbed)
        else:
            args = split.full_args(primals)
        assert owner.fwd is not None  # __call__ raised before binding without one
        out = owner.fwd(*args)
        # JAX 0.10.2's checks, in its order and words (its test files match them)
        rule, fun = _name(owner.fwd), _name(owner.fun)
        residuals = (
            "and the second element represents residuals (i.e. values stored from the forward "
            "pass for use on the backward pass), but "
        )
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise TypeError(
                f"Custom VJP fwd rule {rule} for function {fun} must produce a pair (list or "
                "tuple of length two) where the first element represents the primal output "
                f"(equal to those of the custom_vjp-decorated function {fun}) {residuals}"
                f"instead of a pair the fwd rule {rule} produced {out}."
            )
        primal_out, res = out
        _check_ref_residuals(owner.fwd, args, res)
        p_leaves, p_tree = pytree.tree_flatten(primal_out)
        p_avals = [tracing.get_aval(p, "custom_vjp", "fwd output") for p in p_leaves]
        if self.out_tree is None:  # the function was not traced: fwd's outputs say
            self.out_tree, self.out_avals = p_tree, p_avals
        head = (
            f"Custom VJP fwd rule {rule} for function {fun} must produce a pair (list or tuple "
            "of length two) where the first element represents the primal output (equal to the "
            f"output of the custom_vjp-decorated function {fun}) {residuals}"
        )
        _check_rule_primals(
            (head, head),
            ("fwd rule", "custom_vjp", fun),
            (p_tree, p_avals),
            (self.out_tree, self.out_avals),
        )
        res_leaves, res_tree = pytree.tree_flatten(res)
        return p_leaves, res_leaves, res_tree

    def bwd(self, res: list, res_tree: Any, cts: list) -> list:
        # ``cts``: of the function's own outputs. A Ref argument's value
        # gets bwd's cotangent for that argument; a closed-over ref's none.
        leaves = self._bwd(res, res_tree, cts)
        slots = {i for i, _ in self.split.ref_slots}
        ref_cts = [ct for i, ct in enumerate(leaves) if i in slots]
        own = [ct for i, ct in enumerate(leaves) if i not in slots]
        return own + [None if k is None else ref_cts[k] for k in self.arg_ref_slots()]

    def _bwd(self, res: list, res_tree: Any, cts: list) -> list:
        owner, split = self.owner, self.split
        if not owner.symbolic_zeros:
            cts = [ad.instantiate(c) for c in cts]
        cts = [_to_user_zero(c) if type(c) is Zero else _rule_value(c) for c in cts]
        res = [r.value if type(r) is _Constant else ad.user_value(r) for r in res]
        ct_tree = pytree.tree_unflatten(self.out_tree, cts)
        ct_tree = _key_cotangents(ct_tree)
        assert owner.bwd is not None  # __call__ raised before binding without one
        out = owner.bwd(*split.nondiff, pytree.tree_unflatten(res_tree, res), ct_tree)
        n_diff = len(split.positions)
        if not isinstance(out, (tuple, list)) or len(out) != n_diff:
            got = pytree.tree_structure(out)
            raise TypeError(
                "Custom VJP bwd rule must produce an output with the same container (pytree) "
                "structure as the args tuple of the primal function, and in particular must "
                "produce a tuple of length equal to the number of arguments to the primal "
                f"function, but got bwd output structure {got} for primal input structure "
                f"{split.in_tree}."
            )
        leaves: list[Any] = []
        for arg_ct, arg in zip(out, split.diff_args(split.leaves), strict=True):
            arg_leaves = pytree.tree_leaves(arg)
            if arg_ct is None:
                leaves.extend([None] * len(arg_leaves))
                continue
            leaves.extend(_bwd_output_leaves(arg_ct, arg, len(arg_leaves)))
        return leaves


def _key_cotangents(tree: Any) -> Any:
    """``tree`` with a key output's cotangent as JAX gives it to ``bwd``:
    float0 zeros of the key array's shape (not a key over float0 data), or a
    ``SymbolicZero`` of that type under ``symbolic_zeros=True``, as a
    ``custom_jvp`` rule's key tangent."""

    def is_key(v: Any) -> bool:
        return isinstance(getattr(v, "dtype", None), dtypes.ExtendedDtype)

    def float0(key: Any) -> Any:
        if any(type(d) is SymbolicZero for d in pytree.tree_leaves(key)):
            return SymbolicZero(ShapedArray(key.shape, dtypes.float0))
        return np.zeros(key.shape, dtypes.float0)

    return pytree.tree_map(lambda v: float0(v) if is_key(v) else v, tree, is_leaf=is_key)


def _bwd_output_leaves(arg_ct: Any, arg: Any, n_leaves: int) -> list[Any]:
    """The cotangent leaves ``bwd`` gave for one argument (``None`` for a
    zero): as in JAX, a ``None`` anywhere in ``arg_ct`` stands for zeros for
    the whole subtree of ``arg`` at its place."""
    leaves: list[Any] = []

    def take(ct: Any, sub: Any) -> bool:
        if ct is None:
            leaves.extend([None] * len(pytree.tree_leaves(sub)))
        else:
            leaves.append(_from_user_zero(ct))
        # tree_map rebuilds arg_ct's containers from these results; a user
        # node's unflatten may refuse None children (JAX never rebuilds them)
        return True

    places = pytree.tree_unflatten(pytree.tree_structure(arg), [object() for _ in range(n_leaves)])
    try:
        pytree.tree_map(take, arg_ct, places, is_leaf=lambda x: x is None or _is_zero(x))
    except (TypeError, ValueError):
        leaves = []
    if len(leaves) != n_leaves:
        raise TypeError(
            "Custom VJP bwd rule must produce an output with the same container (pytree) "
            f"structure as the args tuple of the primal function; got "
            f"{pytree.tree_structure(arg_ct, is_leaf=_is_zero)} for an argument of "
            f"structure {pytree.tree_structure(arg)}."
        )
    return leaves


def _perturbed(tangent: Any) -> bool:
    """Whether an argument is perturbed for a custom_vjp rule: a nonzero
    tangent, and not the float0 tangent of an integer (always zero: JAX's
    ``perturbed`` is False there, as under grad)."""
    if type(tangent) is Zero:
        return False
    return tracing.get_aval(tangent, "custom_vjp", "tangent").dtype != dtypes.float0


def _custom_vjp_call_linearize(primals, tangents, *, call, rules, num_consts, symbolic_zeros):
    _check_no_closed_over_tangents("custom_vjp", tangents, num_consts)
    refs: _Refs = getattr(rules, "refs", _NO_REFS)
    arg_slots = rules.arg_ref_slots() if refs.n else []
    ref_tangents = tangents[len(tangents) - refs.n :] if refs.n else []
    # the values of refs closed over are closed-over values; a Ref
    # argument's is differentiated as an argument
    if any(k is None and type(t) is not Zero for k, t in zip(arg_slots, ref_tangents)):
        raise _closed_over_error("custom_vjp")
    consts = list(primals[:num_consts])
    primals, tangents = list(primals[num_consts:]), list(tangents[num_consts:])
    nonzero = [_perturbed(t) for t in tangents]
    if rules.optimize_remat:
        outs, res, res_tree = remat_opt_fwd(rules, consts, primals, nonzero, call)
    else:
        outs, res, res_tree = rules.fwd(primals, nonzero)
    in_avals = call.in_avals[num_consts:]
    n_own = len(call.out_avals) - refs.n_written
    res, static_res = _split_static_residuals(res)
    own_avals = call.out_avals[:n_own]
    if hasattr(rules, "fwd_out_avals"):  # under vmap fwd may batch more outputs
        own_avals = rules.fwd_out_avals(own_avals)
    touts = custom_lin_p.bind(
        *res,
        *[t for t, nz in zip(tangents, nonzero, strict=True) if nz],
        num_res=len(res),
        rules=rules,
        res_tree=res_tree,
        in_nonzero=tuple(nonzero),
        in_avals=tuple(in_avals),
        out_avals=tuple(tangent_aval(a) for a in own_avals),
        static_res=static_res,
    )
    # The written refs' final values are fwd's writes: as in JAX (fwd
    # writes the primal ref only) their tangents are the refs' tangents
    # before the call (zero for a closed-over ref).
    written_tangents = [t for t, w in zip(ref_tangents, refs.written, strict=True) if w]
    return outs, list(touts) + [
        t if type(t) is not Zero else Zero(tangent_aval(a))
        for t, a in zip(written_tangents, call.out_avals[n_own:], strict=True)
    ]


# Forward mode is linearize's rule, as JAX's JVP of a custom_vjp: fwd runs
# and the tangents go through one ``custom_lin``, staged under jit (make_jaxpr
# shows it; nothing runs it when its result is dropped) and a TypeError only
# when it is evaluated (eagerly, or a jit that returns the tangent).
custom_vjp_call_p.def_jvp(_custom_vjp_call_linearize)
custom_vjp_call_p.linearize_rule = _custom_vjp_call_linearize

#: The tangent part of a linearized custom_vjp call: ``outs = custom_lin(res,
#: tangents)``. It is only ever transposed (by calling ``bwd``); evaluating it
#: would be forward mode, which custom_vjp does not define.
custom_lin_p = Primitive("custom_lin", multiple_results=True)


@custom_lin_p.def_abstract_eval
def _custom_lin_abstract_eval(*avals, out_avals, **_):
    return list(out_avals)


@custom_lin_p.def_impl
def _custom_lin_impl(*args, **_):
    raise no_forward_mode_error(_NO_JVP)


@custom_lin_p.def_jvp
def _custom_lin_jvp(primals, tangents, **_):
    # differentiating the tangent program itself (grad of a jvp's tangent):
    # JAX's custom_lin has no JVP rule, and says so in its generic words
    raise NotImplementedError("Differentiation rule for 'custom_lin' not implemented")


# evaluating the linear part under jit on pjrt, or under vmap, is forward mode
# too: JAX's TypeError rather than a missing lowering or batching rule
@custom_lin_p.def_lowering
def _custom_lin_lowering(ctx, *args, **_):
    raise no_forward_mode_error(_NO_JVP)


@custom_lin_p.def_batch
def _custom_lin_batch(args, dims, **_):
    raise no_forward_mode_error(_NO_JVP)


def _check_ref_residuals(fwd: Any, args: Any, res: Any) -> None:
    """JAX's rule: a Ref among fwd's residuals must be one of fwd's arguments
    (bwd may then write it); one made in fwd or closed over is refused."""
    arg_refs = {id(leaf) for leaf in pytree.tree_leaves(args) if _is_ref(leaf)}
    for path, leaf in pytree.tree_leaves_with_path(res):
        if _is_ref(leaf) and id(leaf) not in arg_refs:
            raise ValueError(
                f"custom_vjp fwd function {_name(fwd)} returned a mutable array reference of "
                f"type {leaf.aval.str_short()} at output tree path [1]"
                f"{pytree.keystr(path)} that was not an argument."
            )


def _split_static_residuals(res: list) -> tuple[list, tuple]:
    """The residuals of a fwd rule that are ``custom_lin``'s operands, and
    those that ride along as its parameter, with their positions, and reach
    bwd as themselves:

    * a Ref: JAX lets fwd return one (say an argument, for bwd to write
      statistics into); a Ref is not a value an equation can take;
    * a constant (:func:`_constant_residual`): JAX 0.10.2 keeps Python
      numbers and NumPy data out of its trace, also under jit, so bwd can
      read them in Python (``range(n)``, ``(g,) * n``, ``if flag:``)."""
    static: list[tuple[int, Any]] = []
    operands: list[Any] = []
    for i, r in enumerate(res):
        if _is_ref(r):
            static.append((i, r))
        elif (constant := constant_residual(r)) is not None:
            static.append((i, _Constant(constant)))
        else:
            operands.append(r)
    return operands, tuple(static)


class _Constant:
    """A constant residual on its way to bwd (which gets ``value`` itself,
    not an array of it: ``_VJPRules._bwd``)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return repr(self.value)


def _with_static_residuals(res: list, static_res: tuple) -> list:
    res = list(res)
    for i, value in static_res:
        res.insert(i, value)
    return res


@custom_lin_p.def_transpose
def _custom_lin_transpose(
    cts, *args, num_res, rules, res_tree, in_nonzero, in_avals, out_avals, static_res=()
):
    res = _with_static_residuals(list(args[:num_res]), static_res)
    cts = [Zero(a) if a.dtype == dtypes.float0 else c for c, a in zip(cts, out_avals, strict=True)]
    if any(_is_ref(r) for _, r in static_res) and not ref_context.current_body_threads_refs():
        # transposed inside a closed program (grad of a jit or scan holding the
        # call): a write could not leave it
        with ref_context.refuse_outer(
            f"custom_vjp: the bwd rule of {_name(rules.owner.fun)} writes a Ref its fwd "
            "saved, while transposed inside a jit or loop (grad of jit(f)); apply jit to "
            "the gradient instead (jit(grad(f)))",
            depth=tracing.current_builder().level,
        ):
            leaves = rules.bwd(res, res_tree, cts)
    else:
        leaves = rules.bwd(res, res_tree, cts)
    result: list[Any] = [None] * num_res
    for ct, nz, aval in zip(leaves, in_nonzero, in_avals, strict=True):
        if not nz:
            continue
        expected = tangent_aval(aval)
        if (
            type(ct) is Zero
            and expected.dtype != dtypes.float0
            and (ct.aval.shape != expected.shape or ct.aval.dtype != expected.dtype)
        ):
            raise ValueError(
                "Custom VJP bwd rule produced a SymbolicZero with a shape/dtype that does not "
                "match the corresponding input tangent shape/dtype: the SymbolicZero had "
                f"shape/dtype {ct.aval.str_short()} while the corresponding input had "
                f"shape/dtype {aval.str_short()}. Consider just returning a None here instead "
                "of a SymbolicZero object."
            )
        if ct is None or type(ct) is Zero or expected.dtype == dtypes.float0:
            # an integer input's cotangent is a float0 zero whatever bwd gave
            # for it (JAX ignores that value)
            result.append(Zero(expected))
            continue
        got = tracing.get_aval(ct, "custom_vjp", "bwd output")
        if got.shape != expected.shape:
            raise ValueError(
                f"Custom VJP bwd rule must produce an output with a shape matching the "
                f"corresponding primal input: expected {expected.str_short()}, got "
                f"{got.str_short()}."
            )
        # as JAX, of bwd's own type (a strong cotangent of a weak input stays strong)
        result.append(ct)
    return result


def _check_ref_aliases(fun: Callable, args: tuple, kwargs: dict) -> None:
    """JAX's ValueError for one ref passed twice to a custom_vjp function,
    naming the two parameters (or argument positions) that receive it."""
    try:
        params = list(inspect.signature(fun).parameters)
    except (TypeError, ValueError):
        params = []
    named = [(params[i] if i < len(params) else f"args[{i}]", a) for i, a in enumerate(args)]
    named += list(kwargs.items())
    seen: dict[int, str] = {}
    for name, arg in named:
        for path, leaf in pytree.flatten_with_path_strings(arg)[0]:
            if not _is_ref(leaf):
                continue
            where = f"{name}{path}"
            if id(leaf) in seen:
                raise ValueError(
                    "only one reference to a mutable array may be passed as an argument to a "
                    f"function, but custom_vjp function {_name(fun)} got the same mutable "
                    f"array reference of type {leaf.aval.str_short()} at {seen[id(leaf)]} "
                    f"and {where}."
                )
            seen[id(leaf)] = where


class custom_vjp(_CustomFunction):
    """``jax.custom_vjp``: ``f = custom_vjp(fun)``, then ``f.defvjp(fwd, bwd)``:
    ``fwd(*args) -> (out, residuals)``, ``bwd(residuals, out_cotangent) ->``
    a tuple with one cotangent per differentiated argument (``None`` for zero).
    Arguments in ``nondiff_argnums`` come first in ``bwd``'s arguments."""

    _kind = "custom_vjp"

    def __init__(
        self,
        fun: Callable,
        nondiff_argnums: Sequence[int] = (),
        nondiff_argnames: Sequence[str] = (),
    ) -> None:
        super().__init__(fun, nondiff_argnums, nondiff_argnames)
        self.fwd: Callable | None = None
        self.bwd: Callable | None = None
        self.optimize_remat = False
        self._probing = False  # fwd is being traced to find its Ref writes

    def defvjp(
        self,
        fwd: Callable,
        bwd: Callable,
        symbolic_zeros: bool = False,
        optimize_remat: bool = False,
    ) -> None:
        if optimize_remat and symbolic_zeros:
            raise NotImplementedError(
                "remat optimization for custom_vjp does not support symbolic zeros"
            )
        self.fwd = fwd
        self.bwd = bwd
        self.symbolic_zeros = bool(symbolic_zeros)
        # fwd is traced into a remat_opt equation (refimpl/ad_checkpoint.py).
        self.optimize_remat = bool(optimize_remat)

    def _check_nondiff(self, split: _Split) -> None:
        # JAX's check: bwd runs later, outside the traces such a value lives in
        if any(isinstance(x, tracing.Tracer) for x in pytree.tree_leaves(split.nondiff)):
            raise UnexpectedTracerError(
                f"Found a traced value passed as an argument to the custom_vjp function "
                f"{_name(self.fun)} in a position indicated by nondiff_argnums as "
                "non-differentiable. Tracers cannot be passed as non-differentiable arguments "
                "to custom_vjp functions; nondiff_argnums should only be used for arguments "
                "that can't be or contain tracers, e.g. function-valued arguments."
            )

    def _missing_rule(self, name: str) -> str | None:
        if self.fwd is None or self.bwd is None:
            return f"No VJP defined for custom_vjp function {name} using defvjp."
        return None

    def _rule_writes(self, split: _Split) -> Callable[[list], set[int]] | None:
        # (not while fwd is being traced so: a fwd calling the function itself
        # would trace fwd again without end)
        if not split.ref_slots or self.fwd is None or self.optimize_remat or self._probing:
            return None
        fwd, symbolic_zeros = self.fwd, self.symbolic_zeros

        def writes(leaves: list) -> set[int]:
            """The Ref arguments fwd writes, found by tracing it on the
            leaves' types (its program is dropped); all of them if fwd cannot
            be traced so (it may branch on values it gets concretely)."""
            found: set[int] = set()

            def flat(*xs: Any) -> list[Any]:
                with ref_context.late_inputs(lambda k: f"a Ref made outside {_name(fwd)}") as scope:
                    if symbolic_zeros:
                        fwd(*_fwd_args_with_symbolic_zeros(split, xs, [True] * len(xs)))
                    else:
                        fwd(*split.full_args(list(xs)))
                    scope.finish()
                    found.update(id(r) for r, w in zip(scope.refs, scope.written_flags) if w)
                return []

            avals = [tracing.get_aval(x, _name(fwd), i) for i, x in enumerate(leaves)]
            self._probing = True
            try:
                tracing.trace_to_program(flat, avals, _name(fwd), [_name(fwd)] * len(avals))
            except Exception:
                return {id(ref) for _, ref in split.ref_slots}
            finally:
                self._probing = False
            return found

        return writes

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        leaves = pytree.tree_leaves((args, kwargs))
        if not any(_is_ref(leaf) for leaf in leaves):
            return super().__call__(*args, **kwargs)
        _check_ref_aliases(self.fun, args, kwargs)
        if tracing.current_builder() is not None:
            ref_context.bound_refs[0] += 1
        out = super().__call__(*args, **kwargs)
        for leaf in pytree.tree_leaves(out):
            if _is_ref(leaf):  # JAX's error (a ref returned by the primal)
                raise ValueError(
                    f"custom_vjp primal function {_name(self.fun)} returned a mutable array "
                    f"reference of type {leaf.aval.str_short()}, but mutable array "
                    "references cannot be returned."
                )
        return out

    def _apply_rules(self, trace, split, primals, tangents):
        rules = _VJPRules(self, split, None, None, _NO_REFS)
        nonzero = [_perturbed(t) for t in tangents]
        # forward mode too, as JAX's JVPTrace: fwd runs, then the tangents go
        # through custom_lin (which refuses to be evaluated)
        outs, res, res_tree = rules.fwd(primals, nonzero)
        res, static_res = _split_static_residuals(res)
        touts = custom_lin_p.bind(
            *res,
            *[t for t, nz in zip(tangents, nonzero, strict=True) if nz],
            num_res=len(res),
            rules=rules,
            res_tree=res_tree,
            in_nonzero=tuple(nonzero),
            in_avals=tuple(tracing.get_aval(p, "custom_vjp", i) for i, p in enumerate(primals)),
            out_avals=tuple(tangent_aval(a) for a in rules.out_avals),
            static_res=static_res,
        )
        return outs, list(touts), rules.out_tree

    def _bind(self, captured, operands, split, program, out_tree, refs) -> list:
        own_avals = program.out_avals[: len(program.out_avals) - refs.n_written]
        return custom_vjp_call_p.bind(
            *captured,
            *operands,
            call=program,
            rules=_VJPRules(self, split, out_tree, own_avals, refs),
            num_consts=len(captured),
            symbolic_zeros=self.symbolic_zeros,
        )


# --- vmap of functions with custom rules -----------------------------------------------------
# The primal Program is batched like any sub-program; the rules are wrapped so that the
# user's functions run under vmap too (they see one member's values, as in JAX), under
# the vmap's axis name. A batched output carries the batch axis at 0; as in JAX, an
# output the same for every member (a psum over the vmap's name) stays unbatched (so
# the vmap's broadcast of it sums its cotangent before a bwd sees it, and out_axes=None
# takes it), unless the rule, once it ran, batches it.


def _batched_axis(value: Any, unbatched: ShapedArray) -> int | None:
    """0 if ``value`` carries a leading batch axis over ``unbatched``, else None."""
    if type(value) is Zero:
        return None
    return 0 if tracing.get_aval(value, "vmap", 0).ndim == unbatched.ndim + 1 else None


def _batch_trace_of(frame: Any) -> Any:
    """The active vmap trace batching ``frame`` (its batch rule is running)."""
    for trace in reversed(tracing._stack.traces):
        if isinstance(trace, batching.BatchTrace) and trace.frame is frame:
            return trace
    return None  # pragma: no cover - a batch rule runs under its trace


class _BatchedJVPRule:
    def __init__(
        self,
        inner: Any,
        in_avals: list,
        out_avals: list,
        size: int = 0,
        trace: Any = None,
        axis_name: Any = None,
    ) -> None:
        self.inner = inner  # the rule of one member
        self.in_avals = in_avals  # unbatched
        self.out_avals = out_avals  # unbatched
        self.size = size
        # the vmap whose batch rule made this one: while it is active the
        # rule runs on its tracers (as JAX's batch_custom_jvp_subtrace), so a
        # value of that vmap the rule closes over, or takes as a nondiff
        # argument, is batched with the arguments
        self.trace = trace
        # which outputs carry the batch axis (all, unless the batch rule
        # found some unbatched: then the rule's must be unbatched there too)
        self.out_batched = [True] * len(out_avals)
        self.axis_name = axis_name

    def __repr__(self) -> str:
        return f"vmap({self.inner!r})"

    def __call__(self, primals: list, tangents: list) -> tuple[list, list]:
        n = len(primals)
        tangents = [
            Zero(tangent_aval(a)) if type(t) is Zero else t
            for t, a in zip(tangents, self.in_avals, strict=True)
        ]
        nz = [type(t) is not Zero for t in tangents]
        kept = [tangent_aval(a).dtype != dtypes.float0 for a in self.out_avals]

        # a zero tangent output (a symbolic zero of the rule's, the same for
        # every member) stays symbolic, as JAX: a rule applied to it next
        # (symbolic_zeros=True) sees a SymbolicZero, not batched zeros
        zero_out: list[bool] = []

        def member(*xs: Any) -> tuple[list, list]:
            it = iter(xs[n:])
            ts = [next(it) if z else Zero(tangent_aval(a)) for z, a in zip(nz, self.in_avals)]
            outs, touts = self.inner(list(xs[:n]), ts)
            zero_out[:] = [type(t) is Zero for t in touts]
            return list(outs), [t for t, k, z in zip(touts, kept, zero_out) if k and not z]

        args = list(primals) + [t for t in tangents if type(t) is not Zero]
        avals = list(self.in_avals) + [tangent_aval(a) for a, z in zip(self.in_avals, nz) if z]
        axes = [_batched_axis(x, a) for x, a in zip(args, avals, strict=True)]
        pairs = _run_batched_rule(self.trace, self.axis_name, self.size, member, axes, args)
        self._grow(pairs, zero_out, kept)
        outs, touts = self._unwrap(pairs, zero_out, kept)
        it = iter(touts)
        return list(outs), [
            Zero(tangent_aval(a))
            if not k
            else Zero(tangent_aval(a.update(shape=(self.size, *a.shape)) if b else a))
            if z
            else next(it)
            for k, z, a, b in zip(kept, zero_out, self.out_avals, self.out_batched, strict=True)
        ]

    def _tangent_batched(self, zero_out: list[bool], kept: list[bool]) -> list[bool]:
        """``out_batched`` for the tangents the member returned (after it ran)."""
        return [b for b, k, z in zip(self.out_batched, kept, zero_out, strict=True) if k and not z]

    def _grow(self, pairs: tuple[list, list], zero_out: list[bool], kept: list[bool]) -> None:
        """Batch the outputs the rule batches (its primal or tangent) where
        the function's program does not: the batched call's output dims are
        then the rule's, as JAX's out_dims2 once the rule ran."""
        outs, touts = pairs
        batched = [d is not None for _, d in outs]
        given = [k for k, (kp, z) in enumerate(zip(kept, zero_out, strict=True)) if kp and not z]
        for k, (_, d) in zip(given, touts, strict=True):
            batched[k] = batched[k] or d is not None
        self.out_batched = [a or b for a, b in zip(self.out_batched, batched, strict=True)]

    def _unwrap(
        self, pairs: tuple[list, list], zero_out: list[bool], kept: list[bool]
    ) -> tuple[list, list]:
        """The rule's (value, batch axis) outputs and tangents, batched at
        axis 0 where the function's outputs are (unbatched where not)."""

        def unwrap(pair: tuple[Any, int | None], batched: bool) -> Any:
            value, dim = pair
            if not batched:
                if dim is not None:
                    raise ValueError(
                        "custom_jvp: under vmap the rule's output is batched where the "
                        "function's is not (its operands are all unbatched)"
                    )
                return value
            return batching.bdim_to(value, dim, self.size, 0)

        outs, touts = pairs
        t_batched = self._tangent_batched(zero_out, kept)
        return (
            [unwrap(x, b) for x, b in zip(outs, self.out_batched, strict=True)],
            [unwrap(t, b) for t, b in zip(touts, t_batched, strict=True)],
        )


def _run_batched_rule(
    trace: Any, axis_name: Any, size: int, fun: Callable, axes: list, args: list
) -> Any:
    """``fun``'s outputs (a pytree) as (value, batch axis) pairs, run on
    ``args`` batched at ``axes``. Under the vmap's ``trace`` while it is
    active, as JAX's batch_custom_jvp_subtrace: a value of that vmap a rule
    closes over, or takes as a nondiff argument, is batched with the
    arguments (not inside a program traced since, e.g. a scan body being
    linearized: that program must not capture the vmap's tracers). Else (a
    program holding the call differentiated after the vmap returned) under a
    new vmap of the same name and size, so a rule may use a collective over
    it."""
    builder = tracing.current_builder()
    if trace is not None and trace.active and (builder is None or builder.level < trace.level):
        wrapped = [
            x if axis is None else batching.BatchTracer(trace, x, axis)
            for x, axis in zip(args, axes, strict=True)
        ]
        return pytree.tree_map(trace.unpack, fun(*wrapped))
    leaves, in_tree = pytree.tree_flatten((tuple(args), {}))
    fresh = batching.BatchTrace(batching.AxisFrame(axis_name, size), "vmap(custom rule)")
    values, dims, _, out_tree = batching._run_batched(
        fresh, fun, "custom rule", leaves, in_tree, axes, size, axis_name
    )
    return out_tree.unflatten(list(zip(values, dims, strict=True)))


def _custom_call_batch(
    primitive: Primitive, rule_param: str, wrap: Callable, natural_outs: Callable
):
    def rule(args, dims, *, call, num_consts, symbolic_zeros, **params):
        frame = batching.current_frame()
        in_batched = [d is not None for d in dims]
        moved = [x if d is None else batching.moveaxis(x, d, 0) for x, d in zip(args, dims)]
        n_out = len(call.out_vars)
        out_batched = [True] * n_out
        new_call = None
        inner = params[rule_param]
        if natural_outs(inner, in_batched):
            # the outputs are batched only where the program makes them so,
            # as JAX's batch_jaxpr without instantiation: ``psum(x, 'i')`` is
            # the same for every member
            new_call, out_batched = batching.batch_subprogram(
                call, in_batched, frame, name=primitive.name
            )
        if new_call is None:
            new_call, out_batched = batching.batch_subprogram(
                call, in_batched, frame, force_out=[True] * n_out, name=primitive.name
            )
        wrapped = wrap(inner, call, num_consts, in_batched[num_consts:], frame.size)
        wrapped.out_batched = out_batched
        outs = primitive.bind(
            *moved,
            call=new_call,
            num_consts=num_consts,
            symbolic_zeros=symbolic_zeros,
            **{rule_param: wrapped},
        )
        # (read after the bind: a custom_vjp's fwd, if it ran, may batch more)
        return list(outs), [0 if b else None for b in wrapped.out_batched]

    return rule


custom_jvp_call_p.def_batch(
    _custom_call_batch(
        custom_jvp_call_p,
        "jvp",
        lambda inner, call, nc, in_batched, size: _BatchedJVPRule(
            inner,
            call.in_avals[nc:],
            call.out_avals,
            size,
            _batch_trace_of(batching.current_frame()),
            batching.current_frame().name,
        ),
        natural_outs=lambda inner, in_batched: True,
    )
)


class _BatchedVJPRules:
    def __init__(
        self,
        inner: Any,
        in_avals: list,
        out_avals: list,
        in_batched: list,
        size: int,
        trace: Any = None,
        axis_name: Any = None,
    ) -> None:
        self.inner = inner
        # the vmap whose batch rule made these rules: while it is active fwd
        # runs on its tracers (as _BatchedJVPRule), so a value of that vmap
        # fwd closes over is batched with the arguments
        self.trace = trace
        self.in_avals = in_avals  # unbatched
        # one member's outputs (unbatched), what ``inner.bwd`` takes cotangents
        # of; not ``inner.out_avals``: a nested vmap's inner is batched itself
        self.member_out_avals = out_avals
        self.in_batched = in_batched
        self.size = size
        # which outputs carry the batch axis (set by the batch rule): fwd's
        # must be unbatched where the primal program's are
        self.out_batched = [True] * len(out_avals)
        self.grown: set[int] = set()  # outputs only fwd batches (see fwd)
        self.axis_name = axis_name

    def __repr__(self) -> str:
        return f"vmap({self.inner!r})"

    @property
    def optimize_remat(self) -> bool:
        return self.inner.optimize_remat

    def fwd(self, primals: list, perturbed: list[bool]) -> tuple[list, list, Any]:
        trees: list[Any] = []
        # constant residuals are the same for every member and stay constants
        # (_split_static_residuals): not batched, handed back in their places
        constants: list[tuple[int, Any]] = []

        def member(*xs: Any) -> list:
            outs, res, res_tree = self.inner.fwd(list(xs), perturbed)
            trees.append(res_tree)
            constants[:] = [(i, r) for i, r in enumerate(res) if constant_residual(r) is not None]
            return [*outs, *(r for r in res if constant_residual(r) is None)]

        axes = [0 if b else None for b in self.in_batched]
        pairs = _run_batched_rule(self.trace, self.axis_name, self.size, member, axes, primals)
        values, dims = [v for v, _ in pairs], [d for _, d in pairs]
        n = len(self.out_batched)
        # an output fwd batches where the program does not is batched (JAX's
        # out_dims2: the batched call's output dims are fwd's once it ran)
        self.grown |= {
            k for k, d in enumerate(dims[:n]) if d is not None and not self.out_batched[k]
        }
        self.out_batched = [b or d is not None for b, d in zip(self.out_batched, dims)]
        batched = self.out_batched + [True] * (len(values) - n)
        outs = [
            batching.bdim_to(v, d, self.size, 0) if b else v
            for v, d, b in zip(values, dims, batched, strict=True)
        ]
        # a batched residual is an array (vmap hands back a NumPy argument a
        # member returned as it is, which must not pass for a constant)
        res = [ad.user_value(r) for r in outs[n:]]
        return outs[:n], _with_static_residuals(res, tuple(constants)), trees[0]

    def fwd_out_avals(self, avals: Sequence[ShapedArray]) -> list[ShapedArray]:
        """The batched call's output avals after fwd ran (see ``fwd``)."""
        return [
            a.update(shape=(self.size, *a.shape)) if k in self.grown else a
            for k, a in enumerate(avals)
        ]

    def bwd(self, res: list, res_tree: Any, cts: list) -> list:
        # the constant residuals (_Constant) go to every member as they are
        batched_res = [r for r in res if type(r) is not _Constant]
        n_res = len(batched_res)
        out_avals = self.member_out_avals[: len(cts)]

        # a zero cotangent stays symbolic (the same for every member), so a
        # symbolic_zeros bwd sees a SymbolicZero for it under vmap, as JAX
        zero = [type(c) is Zero for c in cts]

        def member(*xs: Any) -> list:
            given = iter(xs[n_res:])
            member_cts = [
                Zero(tangent_aval(a)) if z else next(given)
                for z, a in zip(zero, out_avals, strict=True)
            ]
            member_res = iter(xs[:n_res])
            res_of_member = [r if type(r) is _Constant else next(member_res) for r in res]
            leaves = self.inner.bwd(res_of_member, res_tree, member_cts)
            return [
                ad.zeros_like_aval(tangent_aval(a)) if ct is None or type(ct) is Zero else ct
                for ct, a in zip(leaves, self.in_avals, strict=True)
            ]

        cts = [
            batching.broadcast_batch(c, self.size, 0)
            if _batched_axis(c, tangent_aval(a)) is None
            else c
            for c, a, z in zip(cts, out_avals, zero, strict=True)
            if not z
        ]
        # under the vmap's name, as JAX's batch_custom_vjp_bwd: bwd may use
        # a collective over it (its transpose runs after the vmap returned)
        leaves = vmap(member, axis_name=self.axis_name, axis_size=self.size)(*batched_res, *cts)

        return [
            ct if batched else reduce_sum_p.bind(ct, axes=(0,))
            for ct, batched in zip(leaves, self.in_batched, strict=True)
        ]


custom_vjp_call_p.def_batch(
    _custom_call_batch(
        custom_vjp_call_p,
        "rules",
        lambda inner, call, nc, in_batched, size: _BatchedVJPRules(
            inner,
            call.in_avals[nc:],
            call.out_avals,
            in_batched,
            size,
            _batch_trace_of(batching.current_frame()),
            batching.current_frame().name,
        ),
        # always, as JAX's _custom_vjp_call_vmap: an output the same for
        # every member (a psum over the vmap's name) stays unbatched, so the
        # vmap's broadcast of it sums its cotangent before bwd sees it (not
        # with refs written: their outputs follow the refs)
        natural_outs=lambda inner, in_batched: not getattr(inner, "refs", _NO_REFS).n_written,
    )
)


# --- dead code elimination -------------------------------------------------------------------
# As JAX's dce rules for custom_jvp_call/custom_vjp_call: outputs nobody uses
# are dropped from the call, its primal program pruned to the rest (so a jit
# does not compute them), and the rules answer for the kept outputs only: the
# JVP rule's pruned outputs are dropped, bwd gets zero cotangents for them.
# Every input is kept (the rules take them all). Calls touching refs made
# outside, with optimize_remat, or whose rules a transformation wrapped (vmap)
# stay whole.


class _PrunedJVPRule:
    """A custom_jvp call's JVP rule for the outputs marked ``used``."""

    def __init__(self, inner: _JVPRule, used: list[bool]) -> None:
        self.inner = inner
        self.used = used

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)  # owner, refs, lowering_key, ...

    def __repr__(self) -> str:
        return repr(self.inner)

    def __call__(self, primals: list, tangents: list) -> tuple[list, list]:
        p_out, t_out = self.inner(primals, tangents)
        return _kept(p_out, self.used), _kept(t_out, self.used)


class _PrunedVJPRules:
    """A custom_vjp call's fwd and bwd for the outputs marked ``used``
    (``out_avals``: all the call's outputs, for the zeros of the others)."""

    def __init__(self, inner: _VJPRules, used: list[bool], out_avals: list) -> None:
        self.inner = inner
        self.used = used
        self.all_out_avals = out_avals

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)  # owner, refs, optimize_remat, arg_ref_slots, ...

    def __repr__(self) -> str:
        return repr(self.inner)

    def fwd(self, primals: list, perturbed: list[bool]) -> tuple[list, list, Any]:
        outs, res, res_tree = self.inner.fwd(primals, perturbed)
        return _kept(outs, self.used), res, res_tree

    def bwd(self, res: list, res_tree: Any, cts: list) -> list:
        given = iter(cts)
        full = [
            next(given) if u else Zero(tangent_aval(a))
            for u, a in zip(self.used, self.all_out_avals, strict=True)
        ]
        return self.inner.bwd(res, res_tree, full)


def _kept(values: list, used: list[bool]) -> list:
    return [v for v, u in zip(values, used, strict=True) if u]


def _custom_call_dce(rule_param: str, rules_type: type, prune: Callable) -> Callable:
    """The DCE rule of a custom call whose rules are ``params[rule_param]``;
    ``prune(rules, used_outs, call)`` gives the rules for the kept outputs."""

    def rule(eqn: Any, used_outs: list[bool]) -> tuple[Any, list[bool]]:
        inner: Any = eqn.params[rule_param]
        refs: _Refs = getattr(inner, "refs", _NO_REFS)
        all_inputs = [True] * len(eqn.inputs)
        if (
            all(used_outs)
            or type(inner) is not rules_type
            or refs.n
            or getattr(inner, "optimize_remat", False)
        ):
            return eqn, all_inputs
        call: Program = eqn.params["call"]
        pruned, _ = dce_program(call, used_outs)
        pruned = dataclasses.replace(pruned, in_vars=list(call.in_vars))  # every input kept
        params = with_params(eqn, call=pruned, **{rule_param: prune(inner, used_outs, call)})
        outputs = _kept(eqn.outputs, used_outs)
        return Eqn(eqn.primitive, list(eqn.inputs), outputs, params), all_inputs

    return rule


dce_rules[custom_jvp_call_p] = _custom_call_dce(
    "jvp", _JVPRule, lambda inner, used, call: _PrunedJVPRule(inner, used)
)
dce_rules[custom_vjp_call_p] = _custom_call_dce(
    "rules", _VJPRules, lambda inner, used, call: _PrunedVJPRules(inner, used, call.out_avals)
)


# --- linear_call ----------------------------------------------------------------------------
# ``linear_call(fun, fun_transpose, residual_args, linear_args)``: ``fun``
# applied, with ``fun_transpose`` as its transpose with respect to the linear
# arguments (the residuals are not transposed). As JAX, the call is one
# equation holding ``fun``'s Program; transposing it gives another linear_call
# whose function is ``fun_transpose`` and whose transpose is ``fun`` (so
# transposing twice gives back the original, whether or not the two are true
# transposes of each other).

linear_call_p = Primitive("linear_call", multiple_results=True)


class _LinearTranspose:
    """The transpose of one linear_call: a Program of ``(residuals,
    cotangents) -> linear-input cotangents`` and the values it captured.
    ``fun_transpose`` is traced when first needed (a call never transposed
    never traces it), then kept."""

    lowering_key = 0  # lowering reads nothing of it

    def __init__(
        self,
        fun: Callable | None,
        in_trees: tuple[Any, Any],
        lin_tree: Any,
        in_avals: list[ShapedArray],
        traced: tuple[Program, list] | None = None,
    ) -> None:
        self.fun = fun
        self.in_trees = in_trees
        self.lin_tree = lin_tree
        self.in_avals = in_avals
        self.traced = traced

    def __repr__(self) -> str:
        return f"linear_call_transpose({_name(self.fun) if self.fun else 'traced'})"

    def program(self) -> tuple[Program, list]:
        if self.traced is None:
            assert self.fun is not None
            fun, (res_tree, ct_tree), n_res = self.fun, self.in_trees, self.in_trees[0].num_leaves
            out_trees: list[Any] = []

            def flat(*leaves: Any) -> list[Any]:
                res = pytree.tree_unflatten(res_tree, leaves[:n_res])
                cts = pytree.tree_unflatten(ct_tree, leaves[n_res:])
                out_leaves, out_tree = pytree.tree_flatten(fun(res, cts))
                out_trees.append(out_tree)
                return out_leaves

            origins = [f"an argument of {_name(fun)}"] * len(self.in_avals)
            program, captured, _ = tracing.trace_to_program(
                flat, self.in_avals, _name(fun), origins
            )
            if out_trees[0] != self.lin_tree:
                raise TypeError(
                    "transpose output pytree structure must match that of linear inputs, got "
                    f"output structure {out_trees[0]} and input structure {self.lin_tree}."
                )
            self.traced = (program, list(captured))
        return self.traced


def linear_call(
    fun: Callable, fun_transpose: Callable, residual_args: Any, linear_args: Any
) -> Any:
    """``fun(residual_args, linear_args)``, transposed (with respect to
    ``linear_args``) by ``fun_transpose(residual_args, cotangents)`` instead
    of by transposing ``fun`` (``jax.custom_derivatives.linear_call``)."""
    if not callable(fun) or not callable(fun_transpose):
        raise TypeError(
            f"linear_call: fun and fun_transpose must be callable, got "
            f"{type(fun).__name__} and {type(fun_transpose).__name__}"
        )
    res_leaves, res_tree = pytree.tree_flatten(residual_args)
    lin_leaves, lin_tree = pytree.tree_flatten(linear_args)
    n_res = len(res_leaves)
    out_trees: list[Any] = []

    def flat(*leaves: Any) -> list[Any]:
        res = pytree.tree_unflatten(res_tree, leaves[:n_res])
        lin = pytree.tree_unflatten(lin_tree, leaves[n_res:])
        out_leaves, out_tree = pytree.tree_flatten(fun(res, lin))
        out_trees.append(out_tree)
        return out_leaves

    leaves = res_leaves + lin_leaves
    avals = [tracing.get_aval(x, "linear_call", i) for i, x in enumerate(leaves)]
    origins = [f"an argument of {_name(fun)}"] * len(avals)
    program, captured, _ = tracing.trace_to_program(flat, avals, _name(fun), origins)
    transpose = _LinearTranspose(
        fun_transpose,
        (res_tree, out_trees[0]),
        lin_tree,
        avals[:n_res] + [tangent_aval(a) for a in program.out_avals],
    )
    outs = linear_call_p.bind(
        *captured,
        *leaves,
        callee=program,
        transpose=transpose,
        num_consts=len(captured),
        num_res=n_res,
    )
    return pytree.tree_unflatten(out_trees[0], list(outs))


@linear_call_p.def_abstract_eval
def _linear_call_abstract_eval(*avals: ShapedArray, callee: Program, **_: Any) -> list:
    return callee.out_avals


@linear_call_p.def_impl
def _linear_call_impl(*args: Any, callee: Program, **_: Any) -> list[Any]:
    return eval_program(callee, args)


@linear_call_p.def_lowering
def _linear_call_lowering(ctx: Any, *args: Any, callee: Program, **_: Any) -> list[Any]:
    return ctx.call(callee, "linear_call", args)


@linear_call_p.def_jvp
def _linear_call_jvp(primals, tangents, *, callee, transpose, num_consts, num_res):
    # linear in the linear inputs: the tangent is the same call on their
    # tangents; a tangent of a residual or captured value is not defined (JAX
    # asserts there is none)
    fixed = num_consts + num_res
    if any(type(t) is not Zero for t in tangents[:fixed]):
        raise NotImplementedError(
            "linear_call: differentiating with respect to a residual argument (or a value "
            "the function closes over) is not supported, as in JAX"
        )
    params = dict(callee=callee, transpose=transpose, num_consts=num_consts, num_res=num_res)
    primals_out = linear_call_p.bind(*primals, **params)
    lin_tangents = [
        ad.instantiate(t) if type(t) is not Zero else ad.zeros_like_aval(t.aval)
        for t in tangents[fixed:]
    ]
    tangents_out = linear_call_p.bind(*primals[:fixed], *lin_tangents, **params)
    return list(primals_out), list(tangents_out)


@linear_call_p.def_transpose
def _linear_call_transpose(cts, *args, callee, transpose, num_consts, num_res):
    t_program, t_captured = transpose.program()
    consts, res = list(args[:num_consts]), list(args[num_consts : num_consts + num_res])
    if any(isinstance(r, UndefinedPrimal) for r in consts + res):
        raise NotImplementedError(
            "linear_call: transposing with respect to a residual argument is not supported"
        )
    ct_avals = t_program.in_avals[len(t_captured) + num_res :]
    cts = [
        ad.zeros_like_aval(a) if type(c) is Zero else c for c, a in zip(cts, ct_avals, strict=True)
    ]
    # the transposed call's own transpose is this call's function
    back = _LinearTranspose(None, transpose.in_trees, transpose.lin_tree, [], (callee, consts))
    cts_out = linear_call_p.bind(
        *t_captured,
        *res,
        *cts,
        callee=t_program,
        transpose=back,
        num_consts=len(t_captured),
        num_res=num_res,
    )
    return [None] * (num_consts + num_res) + list(cts_out)
