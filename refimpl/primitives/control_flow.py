"""Structured control flow: ``scan``, ``while`` and ``cond``, primitives holding Programs.

Each primitive carries its body as a sub-program (a ``Program`` param) traced
from the user's Python function. Tracers of an enclosing trace that the
function closes over become the sub-program's leading inputs ("consts"), and
the enclosing values are passed as the primitive's leading operands.

* ``scan[body, num_consts, num_carry, length, reverse, unroll]`` with operands
  ``consts, init carry, xs``: step ``i`` (``length - 1 - i`` when reversed)
  runs ``carry, y = body(consts, carry, xs[i])``; the results are the final
  carry and the ``ys`` stacked on a new leading axis of size ``length``.
  ``unroll`` (an int >= 1; ``unroll >= length`` means fully unrolled) is a
  required param. It never changes the result -- only the shape of the
  program the unroll pass (``refimpl.transforms.scan.unroll_scans``) builds.
* ``while[cond, body, cond_num_consts, body_num_consts]`` with operands
  ``cond consts, body consts, carry``: ``while cond(carry): carry = body(carry)``.
* ``cond[branches]`` with operands ``index, operands``: runs
  ``branches[index](operands)``. As StableHLO's ``case``, an index outside
  ``[0, len(branches))`` runs the last branch; ``lax.switch`` clamps the index
  first (as ``jax.lax.switch``), so a negative index picks branch 0 there.

Carry types are loop invariant in the IR: a body's carry outputs have exactly
(weak types included) the types of its carry inputs. The public functions
make that so the way JAX 0.10 does where it can (see ``_promoted_carry``).

``scan`` is one block below (formula, constraints, example, then its rules in
a fixed order); while and cond keep the sections by rule.
"""

from __future__ import annotations

import functools
import inspect
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, NoReturn, TypeVar, cast

import numpy as np

from refimpl import dtypes, pytree, tracing
from refimpl.config import config, matmul_precision, numpy_promotion
from refimpl.core import Eqn, Literal, Program, ProgramTypeError, ShapedArray, Var, avals_str
from refimpl.errors import ShapeIndexError
from refimpl.primitives import debug, elementwise, ref_context, rule_context, structural
from refimpl.primitives.barriers import stop_gradient
from refimpl.primitives.base import Primitive
from refimpl.primitives.batch_rules import bdim_to, moveaxis, shape_of
from refimpl.primitives.callback import io_callback_p
from refimpl.primitives.collectives import bound_axes
from refimpl.primitives.elementwise import (
    add,
    clamp,
    convert_element_type,
    convert_element_type_p,
    lt,
    ne,
    select_n,
)
from refimpl.primitives.reductions import reduce_or
from refimpl.primitives.structural import iota
from refimpl.traceback_util import api_boundary
from refimpl.transforms.ad_util import (
    UndefinedPrimal,
    Zero,
    is_no_forward_mode_error,
    no_forward_mode_error,
    spread_cotangents,
    tangent_aval,
)

# --- tracing Python functions into sub-programs --------------------------------------------


@dataclass
class _Traced:
    """A traced function: its Program, the outer tracers it captured, its output tree."""

    program: Program
    captured: list[tracing.Tracer]
    out_tree: pytree.PyTreeDef
    # Refs made outside that the function touched (refimpl.ref.late_inputs):
    # the program's last inputs are their values, its last outputs their
    # final values (one per ref, in this order); ``written`` says which it wrote.
    refs: tuple[Any, ...] = ()
    written: tuple[bool, ...] = ()

    @property
    def out_avals(self) -> list[ShapedArray]:
        """The function's own outputs (not the refs' final values)."""
        avals = self.program.out_avals
        return avals[: len(avals) - len(self.refs)]

    @property
    def ref_vars(self) -> tuple[list[Var], list[Any]]:
        """The inputs and outputs of the program holding the refs' values."""
        n = len(self.refs)
        program = self.program
        return program.in_vars[len(program.in_vars) - n :], program.out_vars[
            len(program.out_vars) - n :
        ]

    def without_refs(self) -> tuple[list[Var], list[Any]]:
        """The program's inputs and outputs other than the refs' values."""
        n = len(self.refs)
        program = self.program
        return program.in_vars[: len(program.in_vars) - n], program.out_vars[
            : len(program.out_vars) - n
        ]


# Traces of control-flow functions, per first function (weakly) and then per
# (other functions, api, operand structure and types, x64, named axes bound):
# see _cached_trace.
_function_traces: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_function_traces_lock = threading.Lock()


def _cached_trace(funs: tuple[Callable, ...], key: tuple, trace: Callable[[], Any]) -> Any:
    """``trace()`` for the user functions ``funs``, remembered as JAX does.

    Calling ``while_loop``/``cond``/``switch`` again with the same function
    objects and operands of the same structure and types (and the same x64
    flag, default matmul precision and numpy promotion modes, which the
    traced equations depend on, and the same
    named axes bound, since a function may read their
    sizes: ``axis_size('i')`` is a constant of its trace, as in JAX, whose
    cache keys the axis environment too) reuses the Programs instead of
    tracing again. A trace that captured
    tracers of an enclosing trace is valid for that trace only and is not
    kept. As in JAX, a function that reads mutable Python state is not
    re-read: its first trace stands (docs/semantics.md).
    """
    full_key = (
        funs[1:],
        key,
        config.enable_x64,
        matmul_precision(),
        numpy_promotion(),
        bound_axes(),
    )
    try:
        with _function_traces_lock:
            hit = _function_traces.get(funs[0], {}).get(full_key)
    except TypeError:  # a function that cannot be weakly referenced or hashed
        return trace()
    if hit is not None:
        return hit
    result = trace()
    parts = result if isinstance(result, (list, tuple)) else [result]
    if not any(getattr(t, "captured", None) for t in parts):
        with _function_traces_lock:
            _function_traces.setdefault(funs[0], {})[full_key] = result
    return result


def _flatten_operands(label: str, tree: Any) -> tuple[list, pytree.PyTreeDef, list]:
    """Leaves, treedef and leaf paths of an operand pytree (``label`` prefixes paths)."""
    path_leaves, treedef = pytree.flatten_with_path_strings(tree)
    paths = [f"{label}{path}" for path, _ in path_leaves]
    return [leaf for _, leaf in path_leaves], treedef, paths


def _avals_of(api: str, leaves: Sequence[Any], paths: Sequence[str]) -> list[ShapedArray]:
    return [tracing.get_aval(leaf, api, path) for leaf, path in zip(leaves, paths)]


def _output_leaves(api: str, label: str, out: Any) -> tuple[list[Any], pytree.PyTreeDef]:
    """Flatten a function's output; every leaf must be an array or Python scalar."""
    path_leaves, treedef = pytree.flatten_with_path_strings(out)
    for path, leaf in path_leaves:
        if not tracing.is_array_like(leaf):
            raise TypeError(
                f"{api}: {label}{path} is a {type(leaf).__name__} ({leaf!r:.60}), not an array; "
                "functions passed to control flow must return arrays (or pytrees of them)"
            )
    return [leaf for _, leaf in path_leaves], treedef


def _trace(
    api: str,
    fun: Callable[..., Any],
    in_avals: Sequence[ShapedArray],
    origins: Sequence[str],
    out_label: str,
) -> _Traced:
    """Trace ``fun(*tracers)`` (one tracer per aval) into a Program with flat outputs."""
    out_trees: list[pytree.PyTreeDef] = []

    touched: list[tuple[tuple, tuple]] = []

    def flat_fun(*tracers: Any) -> list[Any]:
        with ref_context.late_inputs(lambda k: f"a Ref made outside {api}") as scope:
            leaves, out_tree = _output_leaves(api, out_label, fun(*tracers))
            finals = scope.finish()
            touched.append((tuple(scope.refs), scope.written_flags))
        out_trees.append(out_tree)
        return leaves + finals

    program, captured, _ = tracing.trace_to_program(flat_fun, in_avals, api, origins)
    refs, written = touched[0]
    return _Traced(program, list(captured), out_trees[0], refs, written)


def _with_leading_inputs(
    program: Program, own: Sequence[tracing.Tracer], union: Sequence[tracing.Tracer]
) -> Program:
    """``program`` (whose first inputs stand for ``own``) taking ``union`` first instead.

    Branches of one ``cond`` capture different outer tracers but must all
    take the same operands; an input a branch does not use is just unread.
    When ``union`` is ``own`` (no other branch captured anything more:
    always so outside a trace), ``program`` itself: the same traced branches
    then make the same ``cond`` equation, whose eager jit (pjrt) and derived
    programs are found again rather than made anew on every call.
    """
    if len(own) == len(union) and all(a is b for a, b in zip(own, union, strict=True)):
        return program
    own_vars = {id(t): v for t, v in zip(own, program.in_vars[: len(own)])}
    leading = [own_vars[id(t)] if id(t) in own_vars else Var(t.aval) for t in union]
    return Program(
        in_vars=leading + program.in_vars[len(own) :],
        eqns=program.eqns,
        out_vars=program.out_vars,
        const_vars=program.const_vars,
        consts=program.consts,
    )


_T = TypeVar("_T")


def _union(*lists: Sequence[_T]) -> list[_T]:
    seen: dict[int, _T] = {}
    for tracers in lists:
        for t in tracers:
            seen.setdefault(id(t), t)
    return list(seen.values())


# --- loop carries ---------------------------------------------------------------------------


def _carry_target(
    carry_in: ShapedArray, carry_out: ShapedArray, dtype_only: bool = False
) -> ShapedArray | None:
    """The type the initial carry must be converted to, or None to leave it.

    * Only the weak type differs: the carry takes the body output's weak type
      (so the final carry has the weak type JAX 0.10 reports for it).
    * A weakly typed init of another dtype (``init=0`` with a float32 body):
      JAX's promotion -- the init becomes strong ``result_type(init, out dtype)``.

    ``dtype_only``: the second case only (JAX's own rule).
    """
    if carry_in == carry_out or carry_in.shape != carry_out.shape:
        return None
    if carry_in.dtype == carry_out.dtype:
        return None if dtype_only else carry_out
    if carry_in.weak_type:
        dtype, _ = dtypes.result_type((carry_in.dtype, True), (carry_out.dtype, False))
        return ShapedArray(carry_in.shape, dtype, weak_type=False)
    return None


def _promoted_carry(
    leaves: Sequence[Any],
    carry_in: Sequence[ShapedArray],
    carry_out: Sequence[ShapedArray],
    dtype_only: bool = False,
) -> tuple[list[Any], bool]:
    """The initial carry converted where ``_carry_target`` says; whether anything changed."""
    promoted, changed = [], False
    for leaf, a_in, a_out in zip(leaves, carry_in, carry_out):
        target = _carry_target(a_in, a_out, dtype_only)
        if target is not None:
            leaf = convert_element_type(leaf, target.dtype, weak_type=target.weak_type)
            changed = True
        promoted.append(leaf)
    return promoted, changed


def _carry_component(body: Callable, path: str) -> str:
    """How JAX 0.10.2 names a part of a loop's carry: by the body's first
    parameter and the part's path (``the input carry component c[1]``)."""
    names = _positional_names(body)
    if names:
        return (
            f"the input carry component {names[0]}{path}" if path else f"the input carry {names[0]}"
        )
    return f"the input carry at path {path}" if path else "the input carry"


def _listed(differences: list[str], capitalized: bool = True) -> str:
    """One difference as a sentence (its first letter capitalized unless
    ``capitalized`` is false, as in JAX's message); several as JAX lists them."""
    if len(differences) == 1:
        first = differences[0][0].upper() if capitalized else differences[0][0]
        return f"{first}{differences[0][1:]}.\n"
    return "".join(f"  * {d};\n" for d in differences[:-1]) + f"  * {differences[-1]}.\n"


def _check_carry_tree(
    api: str, loop: str, body: Callable, init_tree: pytree.PyTreeDef, out_tree: pytree.PyTreeDef
) -> None:
    """The body's carry output has the initial carry's structure (JAX's words;
    ``loop`` is ``"scan body"`` or ``"while_loop body"``)."""
    if init_tree == out_tree:
        return
    differences = [
        f"{_carry_component(body, path)} is a {a} but the corresponding component of the carry "
        f"output is a {b}, so {why}"
        for path, a, b, why in pytree.treedef_differences(init_tree, out_tree)
    ]
    raise TypeError(
        f"{api}: {loop} function carry input and carry output must have the same pytree "
        f"structure, but they differ:\n\n{_listed(differences)}\nRevise the function so that "
        f"the carry output has the same pytree structure as the carry input. (The initial "
        f"carry is {init_tree!r}, the body's output carry {out_tree!r}.)"
    )


def _check_carry_types(
    api: str,
    loop: tuple[str, Callable],
    paths: Sequence[str],
    carry_in: Sequence[ShapedArray],
    carry_out: Sequence[ShapedArray],
) -> None:
    """The body's carry output has the initial carry's types (JAX's words;
    refimpl also refuses a carry differing only in weak type here: the
    promotions before this check leave none JAX accepts)."""
    name, body = loop
    differences = [
        f"{_carry_component(body, path.removeprefix('carry'))} has type {_long(a_in)} but the "
        f"corresponding output carry component has type {_long(a_out)}{_mismatch(a_in, a_out)}"
        for path, a_in, a_out in zip(paths, carry_in, carry_out)
        if a_in != a_out
    ]
    if differences:
        raise TypeError(
            f"{api}: {name} function carry input and carry output must have equal types, but "
            f"they differ:\n\n{_listed(differences)}\nRevise the function so that all output "
            "types match the corresponding input types."
        )


def _long(aval: ShapedArray) -> str:
    """``float32[2]``: a type as JAX's messages print it (no weak mark)."""
    return str(aval.strip_weak())


def _mismatch(a: ShapedArray, b: ShapedArray) -> str:
    """JAX's account of how two types differ (``, so the dtypes do not match``)."""
    why = []
    if a.dtype != b.dtype:
        why.append("the dtypes do not match")
    if a.shape != b.shape:
        why.append("the shapes do not match")
    if not why:
        return ", so the weak types do not match"
    return ", so " + (why[0] if len(why) == 1 else f"{why[0]}, and {why[1]}")


# --- helpers shared by the rules of scan, while and cond --------------------------------
# Batching: sub-programs are batched into new Programs (``rule_context.batch_subprogram``)
# whose batched inputs and outputs carry the batch axis first. Differentiation:
# each rule transforms the sub-program(s) once (memoized per Program, see
# refimpl.transforms.ad) and binds the same primitive again: the derivative of a
# loop is a loop.


def _to_front(values: Sequence[Any], dims: Sequence[int | None]) -> list[Any]:
    return [x if d is None else moveaxis(x, d, 0) for x, d in zip(values, dims)]


def _batched_to_front(values, dims, want: Sequence[bool], size: int) -> list[Any]:
    """Values with the batch axis first where ``want`` (broadcast if unbatched)."""
    return [bdim_to(x, d, size, 0) if w else x for x, d, w in zip(values, dims, want, strict=True)]


def _emit(program: Program, values: Sequence[Any], frame: Any) -> list[Any]:
    """``program``'s equations, unchanged, applied to ``values`` in the current trace."""
    return rule_context.batch_program(program, values, [None] * len(values), frame)[0]


def _traced(fun: Callable, avals: Sequence[ShapedArray], name: str) -> Program:
    origins = [f"input {i} of a batched {name}" for i in range(len(avals))]
    program, captured, _ = tracing.trace_to_program(fun, avals, name, origins)
    assert not captured, "internal error: a batched sub-program captured an outer value"
    return program


def _batched_avals(avals: Sequence[ShapedArray], size: int) -> list[ShapedArray]:
    return [a.update(shape=(size, *a.shape)) for a in avals]


def _carry_fixpoint(program, fixed_batched, carry_batched, frame, carry_slice) -> list[bool]:
    """Carry batched-ness is a fixpoint: a carry the body makes batched must
    be batched on entry too (at most one round per carry)."""
    carry_batched = list(carry_batched)
    while True:
        _, out_batched = rule_context.batch_subprogram(
            program, [*fixed_batched[0], *carry_batched, *fixed_batched[1]], frame
        )
        new = [a or b for a, b in zip(carry_batched, out_batched[carry_slice], strict=True)]
        if new == carry_batched:
            return carry_batched
        carry_batched = new


def _split3(values: Sequence[Any], a: int, b: int) -> tuple[list, list, list]:
    return list(values[:a]), list(values[a : a + b]), list(values[a + b :])


def _nonzero(tangents: Sequence[Any]) -> list[bool]:
    return [type(t) is not Zero for t in tangents]


def _tangent_operands(tangents, nonzero, primal_avals, keep_weak: bool = False) -> list:
    """The tangent operands at the ``nonzero`` positions, zeros instantiated and
    weak types matched to the tangent types of ``primal_avals``.

    ``keep_weak``: a tangent differing only in weak type stays as it is (a
    scan carry operand may, as JAX's; converting it here would give the
    initial carry's cotangent that weak type back when transposed)."""
    return [
        t
        if keep_weak
        and type(t) is not Zero
        and _weak_only_mismatch(tracing.get_aval(t, "scan", "tangent"), tangent_aval(a))
        else rule_context.match_aval(t, tangent_aval(a))
        for t, nz, a in zip(tangents, nonzero, primal_avals, strict=True)
        if nz
    ]


def _weak_only_mismatch(given: ShapedArray, taken: ShapedArray) -> bool:
    """Whether the two types differ, and only in weak type (JAX's ``typematch``)."""
    return given != taken and given.strip_weak() == taken.strip_weak()


# === scan: the whole primitive in one block =============================================
#
# scan[body, num_consts, num_carry, length, reverse, unroll] with operands
# (consts, init, xs) -- num_consts and num_carry of them, the rest xs:
#
#     carry = init
#     for i in (reversed(range(length)) if reverse else range(length)):
#         carry, y = body(consts, carry, [x[i] for x in xs])
#         ys[i] = y                                 (for each y output)
#     results = carry, ys      ys[j].shape = (length, *y_j.shape)
#
# The carry keeps its exact types (weak types included) through the body.
# ``unroll`` (an int >= 1; >= length: fully unrolled) never changes a result,
# only the loop structure of the lowering and of the unroll pass.
#
# Constraints (the abstract evaluation's errors name the label):
#   (C1) body is a Program; num_consts, num_carry and length are
#        non-negative ints, unroll an int >= 1, reverse a bool (TypeError);
#   (C2) num_consts + num_carry <= the number of operands (TypeError);
#   (C3) length <= 2**31 - 1 unless enable_x64 (the step counter is an
#        int32; ValueError);
#   (C4) every xs operand has rank >= 1 and leading dim length (TypeError);
#   (C5) body takes (consts, carry, xs without their leading axis), exactly
#        those avals (TypeError);
#   (C6) body returns the carry with exactly the avals it takes (TypeError).
# The binder ``lax.scan`` checks the user's pytrees and arguments itself (its
# errors say ``lax.scan: ...``) and makes C5/C6 hold by promoting the carry
# where JAX 0.10 does (``_promoted_carry``).
#
# Example: lax.scan(lambda c, x: (c + x, c * x), 0., [1., 2., 3.]) is
# (6., [0., 2., 9.]): the carries are 0, 1, 3, 6 and y_i = c_i * x_i. With
# reverse=True the steps run i = 2, 1, 0: (6., [5., 6., 0.]).
#
# Rules below, in the fixed order: abstract_eval, impl, jvp (with the
# linearize rule reverse mode uses), transpose, batch, mask, lowering, then
# the public binder ``scan`` (and its tracing helpers). The helpers shared with
# while and cond (tracing sub-programs, loop carries, batching and
# differentiation helpers) are above; the unroll pass the lowering runs is
# refimpl/transforms/scan.py (a transformation). scan stays in this module:
# on its own it would import the interpreter, ad and batching from below their
# layer, new upward edges for tests/project/test_layering.py.

scan_p = Primitive("scan", multiple_results=True)
# eqn.params answers to JAX's name of the body too (refimpl.core.JaxNamedParams)
scan_p.jax_param_names = {"jaxpr": "body"}  # type: ignore[attr-defined]


_INT32_MAX = 2**31 - 1


def _check_scan_params(
    n_operands: int, body: Program, num_consts: int, num_carry: int, length: int, reverse: bool,
    unroll: int,
) -> None:  # fmt: skip
    # unreachable from the public API (a check of the primitive's own invariants):
    # lax.scan binds parameters it computes itself
    if not isinstance(body, Program):  # pragma: no cover
        raise TypeError(f"scan: body must be a Program (C1), got {type(body).__name__}")
    for name, value in (("num_consts", num_consts), ("num_carry", num_carry), ("length", length)):
        # unreachable from the public API (a check of the primitive's own invariants):
        # lax.scan binds parameters it computes itself
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:  # pragma: no cover
            raise _invalid_param("scan", name, value, "non-negative int")
    # unreachable from the public API (a check of the primitive's own invariants):
    # lax.scan binds parameters it computes itself
    if isinstance(unroll, bool) or not isinstance(unroll, int) or unroll < 1:  # pragma: no cover
        raise _invalid_param("scan", "unroll", unroll, "int >= 1")
    # unreachable from the public API (a check of the primitive's own invariants):
    # lax.scan binds parameters it computes itself
    if not isinstance(reverse, bool):  # pragma: no cover
        raise _invalid_param("scan", "reverse", reverse, "bool")
    # unreachable from the public API (a check of the primitive's own invariants):
    # lax.scan binds parameters it computes itself
    if num_consts + num_carry > n_operands:  # pragma: no cover
        raise TypeError(
            f"scan: num_consts={num_consts} and num_carry={num_carry} exceed the "
            f"{n_operands} operands (C2)"
        )
    if length > _INT32_MAX and not config.enable_x64:
        # The step counter is an int32 without x64: such a loop could not count
        # its steps (and would run for hours on the reference backend).
        raise ValueError(
            f"scan: length {length} does not fit the int32 step counter (at most "
            f"2**31 - 1 = {_INT32_MAX}) with enable_x64 off (C3)"
        )


# --- scan: abstract_eval


def _invalid_param(
    primitive: str, name: str, value: Any, required: str, label: str | None = "C1"
) -> ProgramTypeError:
    """A loop or branch parameter of the wrong kind (a Program edited by hand:
    ``check_jaxpr`` finds it), in JAX 0.10.2's class and words, then the
    primitive's constraint label, if it has one."""
    cited = f" ({label})" if label else ""
    return ProgramTypeError(
        f"invalid {primitive} param {name} of type {type(value).__name__}, "
        f"{required} required: {value!r}{cited}"
    )


@scan_p.def_abstract_eval
def _scan_abstract_eval(
    *avals: ShapedArray,
    body: Program,
    num_consts: int,
    num_carry: int,
    length: int,
    reverse: bool,
    unroll: int,
) -> list[ShapedArray]:
    """Operands ``consts, carry, xs``; results ``carry, ys`` (ys: ``(length, *y.shape)``).

    The body takes ``consts, carry, x`` (x: an xs leaf without its leading
    axis) and returns ``carry, y`` with the carry's types unchanged.
    """
    _check_scan_params(len(avals), body, num_consts, num_carry, length, reverse, unroll)
    carry = list(avals[num_consts : num_consts + num_carry])
    xs = avals[num_consts + num_carry :]
    for index, x in enumerate(xs):
        # unreachable from the public API (a check of the primitive's own invariants):
        # lax.scan traces the body at the operands' types and checks the carry first
        if x.ndim == 0 or x.shape[0] != length:  # pragma: no cover
            raise TypeError(
                f"scan: xs operand {index} has shape {x.shape}; its leading axis must be the "
                f"scan length {length} (C4)"
            )
    # An initial carry operand may differ from the body's carry in weak type
    # only (JAX's scan: a weak init the body returns strong is not promoted);
    # the results take the body's types, so a cotangent of that init is too.
    carry_taken = body.in_avals[num_consts : num_consts + num_carry]
    carry = [
        taken if _weak_only_mismatch(given, taken) else given
        for given, taken in zip(carry, carry_taken)
    ]
    expected_in = [*avals[:num_consts], *carry, *(x.update(shape=x.shape[1:]) for x in xs)]
    # consts and xs may too (JAX's typematch): eagerly, a checkpoint's transpose
    # evaluates a transposed scan on cotangents whose weak types are the given ones
    expected_in = [
        taken if _weak_only_mismatch(given, taken) else given
        for given, taken in zip(expected_in, body.in_avals)
    ]
    # unreachable from the public API (a check of the primitive's own invariants):
    # lax.scan traces the body at the operands' types and checks the carry first
    if body.in_avals != expected_in:  # pragma: no cover
        raise TypeError(
            f"scan: the body takes ({avals_str(body.in_avals)}) but the operands give "
            f"({avals_str(expected_in)}) (C5)"
        )
    carry_out = body.out_avals[:num_carry]
    # A batched body may return strong a carry it takes weak (vmap of a cond
    # whose batched predicate selects between a strong and a weak branch
    # output): JAX's scan runs it, its carry results typed as the body returns
    # them.
    carry = [
        out if _weak_only_mismatch(out, taken) else taken
        for out, taken in zip(carry_out, carry, strict=True)
    ]
    # unreachable from the public API (a check of the primitive's own invariants):
    # lax.scan traces the body at the operands' types and checks the carry first
    if carry_out != carry:  # pragma: no cover
        raise TypeError(
            f"scan: the body returns the carry as ({avals_str(carry_out)}) but takes it as "
            f"({avals_str(carry)}) (C6)"
        )
    ys = [y.update(shape=(length, *y.shape)) for y in body.out_avals[num_carry:]]
    return [*carry, *ys]


# --- scan: impl (NumPy: the definition)


@scan_p.def_impl
def _scan_impl(
    *args: np.ndarray,
    body: Program,
    num_consts: int,
    num_carry: int,
    length: int,
    reverse: bool,
    unroll: int,
) -> list[np.ndarray]:
    """The definition: evaluate the body ``length`` times (``unroll`` does not matter)."""
    consts = list(args[:num_consts])
    carry = list(args[num_consts : num_consts + num_carry])
    xs = args[num_consts + num_carry :]
    ys = [np.empty((length, *y.shape), y.dtype) for y in body.out_avals[num_carry:]]
    for i in reversed(range(length)) if reverse else range(length):
        outs = rule_context.eval_program(body, [*consts, *carry, *(x[i] for x in xs)])
        carry = outs[:num_carry]
        for stacked, y in zip(ys, outs[num_carry:]):
            stacked[i] = y
    return [*carry, *ys]


# --- scan: jvp (forward mode; and the linearize rule: known scan + linear scan)


def _scan_carry_fixpoint(make: Callable, nz_consts, nz_carry, nz_xs, num_ys: int):
    """Which carries have nonzero tangents: those whose initial tangent is
    nonzero, plus those the body makes nonzero (iterated to a fixed point)."""
    while True:
        result = make(nz_consts + nz_carry + nz_xs, nz_carry + [False] * num_ys)
        carry_out = result.out_nonzero[: len(nz_carry)]
        grown = [a or b for a, b in zip(nz_carry, carry_out, strict=True)]
        if grown == nz_carry:
            return result, nz_carry
        nz_carry = grown


def _scan_jvp(primals, tangents, *, body, num_consts, num_carry, length, reverse, unroll):
    """Forward mode: one scan carrying primals and tangents side by side."""
    nc, nk = num_consts, num_carry
    nz_consts, nz_carry, nz_xs = _split3(_nonzero(tangents), nc, nk)
    num_ys = len(body.out_vars) - nk
    jp, nz_carry = _scan_carry_fixpoint(
        lambda nz, inst: rule_context.jvp_program(body, nz, inst),
        nz_consts,
        nz_carry,
        nz_xs,
        num_ys,
    )
    n_in = len(body.in_vars)
    ntc, ntk, ntx = sum(nz_consts), sum(nz_carry), sum(nz_xs)
    nz_ys = jp.out_nonzero[nk:]
    p = list(range(n_in))
    t = list(range(n_in, n_in + ntc + ntk + ntx))
    in_order = (
        p[:nc] + t[:ntc] + p[nc : nc + nk] + t[ntc : ntc + ntk] + p[nc + nk :] + t[ntc + ntk :]
    )
    n_out = len(body.out_vars)
    po = list(range(n_out))
    to = list(range(n_out, n_out + ntk + sum(nz_ys)))
    out_order = po[:nk] + to[:ntk] + po[nk:] + to[ntk:]
    new_body = rule_context.memo(
        jp.program,
        ("scan_layout",),
        lambda: rule_context.permute_program(jp.program, in_order, out_order),
    )
    p_consts, p_init, p_xs = _split3(primals, nc, nk)
    t_consts, t_init, t_xs = _split3(tangents, nc, nk)
    t_init = _tangent_operands(t_init, nz_carry, body.in_avals[nc : nc + nk], keep_weak=True)
    outs = scan_p.bind(
        *p_consts,
        *[x for x, nz in zip(t_consts, nz_consts) if nz],
        *p_init,
        *t_init,
        *p_xs,
        *[x for x, nz in zip(t_xs, nz_xs) if nz],
        body=new_body,
        num_consts=nc + ntc,
        num_carry=nk + ntk,
        length=length,
        reverse=reverse,
        unroll=unroll,
    )
    p_carry, t_carry, rest = _split3(outs, nk, ntk)
    p_ys, t_ys = rest[:num_ys], rest[num_ys:]
    out_avals = _scan_out_avals(body, nk, length)
    tangents_out = rule_context.fill_zeros(t_carry + t_ys, nz_carry + nz_ys, out_avals)
    return p_carry + p_ys, tangents_out


def _scan_out_avals(body: Program, num_carry: int, length: int) -> list[ShapedArray]:
    outs = body.out_avals
    return outs[:num_carry] + [y.update(shape=(length, *y.shape)) for y in outs[num_carry:]]


def _scan_linearize(primals, tangents, *, body, num_consts, num_carry, length, reverse, unroll):
    """Partial evaluation: a known scan (primal outputs, and the per-step
    residuals as extra stacked outputs) and a linear scan over the residuals
    and tangents. Residuals that are loop constants are passed as constants."""
    nc, nk = num_consts, num_carry
    nz_consts, nz_carry, nz_xs = _split3(_nonzero(tangents), nc, nk)
    num_ys = len(body.out_vars) - nk
    lp, nz_carry = _scan_carry_fixpoint(
        lambda nz, inst: rule_context.linearize_program(body, nz, inst),
        nz_consts,
        nz_carry,
        nz_xs,
        num_ys,
    )
    known, linear = lp.known, lp.linear
    n_out = len(body.out_vars)
    res_atoms = known.out_vars[n_out:]
    const_vars = {id(v): i for i, v in enumerate(known.in_vars[:nc])}
    invariant = [const_vars.get(id(a)) for a in res_atoms]  # const index, or None
    variant_pos = [r for r, c in enumerate(invariant) if c is None]
    invariant_pos = [r for r, c in enumerate(invariant) if c is not None]

    def make_known() -> Program:
        return Program(
            in_vars=known.in_vars,
            eqns=known.eqns,
            out_vars=known.out_vars[:n_out] + [res_atoms[r] for r in variant_pos],
            const_vars=known.const_vars,
            consts=known.consts,
        )

    new_known = rule_context.memo(known, ("scan_known",), make_known)
    p_consts, p_init, p_xs = _split3(primals, nc, nk)
    outs = scan_p.bind(
        *p_consts, *p_init, *p_xs,
        body=new_known, num_consts=nc, num_carry=nk, length=length, reverse=reverse,
        unroll=unroll,
    )  # fmt: skip
    p_carry, p_ys, stacked_res = outs[:nk], outs[nk:n_out], outs[n_out:]

    num_res = lp.num_res
    ntc, ntk = sum(nz_consts), sum(nz_carry)
    res_in = list(range(num_res))
    t_in = list(range(num_res, len(linear.in_vars)))
    in_order = (
        [res_in[r] for r in invariant_pos]
        + t_in[:ntc]
        + t_in[ntc : ntc + ntk]
        + [res_in[r] for r in variant_pos]
        + t_in[ntc + ntk :]
    )
    new_linear = rule_context.memo(
        linear,
        ("scan_linear",),
        lambda: rule_context.permute_program(linear, in_order, list(range(len(linear.out_vars)))),
    )
    t_consts, t_init, t_xs = _split3(tangents, nc, nk)
    nz_ys = lp.out_nonzero[nk:]
    touts = scan_p.bind(
        *[p_consts[invariant[r]] for r in invariant_pos],
        *[x for x, nz in zip(t_consts, nz_consts) if nz],
        *_tangent_operands(t_init, nz_carry, body.in_avals[nc : nc + nk], keep_weak=True),
        *stacked_res,
        *[x for x, nz in zip(t_xs, nz_xs) if nz],
        body=new_linear,
        num_consts=len(invariant_pos) + ntc,
        num_carry=ntk,
        length=length,
        reverse=reverse,
        unroll=unroll,
    )
    out_avals = _scan_out_avals(body, nk, length)
    return p_carry + p_ys, rule_context.fill_zeros(touts, nz_carry + nz_ys, out_avals)


scan_p.def_jvp(_scan_jvp)
scan_p.linearize_rule = _scan_linearize


# --- scan: transpose (the linear scan run backwards)


def _scan_transpose(cts, *args, body, num_consts, num_carry, length, reverse, unroll):
    """The transpose of a scan linear in its carry and in some consts and xs:
    a scan the other way round carrying the carry cotangent and the
    accumulated cotangents of the linear consts; the xs cotangents are its ys."""
    nc, nk = num_consts, num_carry
    consts, carry, xs = _split3(args, nc, nk)
    lin_k = _linear_carries(body, consts, carry, xs)
    if not all(lin_k):
        return _scan_transpose_known_carry(
            cts, consts, carry, xs, lin_k, body=body, length=length, reverse=reverse, unroll=unroll
        )
    lin_consts = [isinstance(c, UndefinedPrimal) for c in consts]
    lin_xs = [isinstance(x, UndefinedPrimal) for x in xs]
    linear = lin_consts + [True] * nk + lin_xs
    body_avals = body.in_avals
    const_avals, carry_avals, x_avals = _split3(body_avals, nc, nk)
    nl_const_avals = [a for a, lin in zip(const_avals, lin_consts) if not lin]
    acc_avals = [tangent_aval(a) for a, lin in zip(const_avals, lin_consts) if lin]
    # The transposed body is traced with the cotangents' own types (JAX's
    # transposed scan): a carry or y cotangent differing from its tangent type
    # in weak type only (a strong one given for a weak carry) keeps it, and
    # the body returns the carry cotangents it sums (typed by their first
    # terms, add_tangents), so the init's cotangent has that type
    ct_carry_avals = [_own_ct_aval(ct, a) for ct, a in zip(cts[:nk], carry_avals, strict=True)]
    nl_x_avals = [a for a, lin in zip(x_avals, lin_xs) if not lin]
    # a y whose cotangent is a symbolic zero adds no term (JAX's transposed
    # body has none: a term of zeros could change a sum's weak type)
    ys_nonzero = [type(ct) is not Zero for ct in cts[nk:]]
    ct_y_avals = [
        _own_ct_aval(ct, a, stacked=True)
        for ct, a, nz in zip(cts[nk:], body.out_avals[nk:], ys_nonzero, strict=True)
        if nz
    ]
    zero_ys = [Zero(tangent_aval(a)) for a in body.out_avals[nk:]]

    def make_body() -> tuple[Program, tuple, tuple]:
        n1, n2, n3, n4 = len(nl_const_avals), len(acc_avals), nk, len(nl_x_avals)
        carry_as_taken = _without_carry_retypes(body, nc, nk)

        def fun(*vals):
            nl_consts = list(vals[:n1])
            acc = list(vals[n1 : n1 + n2])
            ct_carry = list(vals[n1 + n2 : n1 + n2 + n3])
            nl_xs = list(vals[n1 + n2 + n3 : n1 + n2 + n3 + n4])
            given_ys = iter(vals[n1 + n2 + n3 + n4 :])
            ct_ys = [next(given_ys) if nz else z for nz, z in zip(ys_nonzero, zero_ys, strict=True)]
            it_c, it_x = iter(nl_consts), iter(nl_xs)
            full = (
                [None if lin else next(it_c) for lin in lin_consts]
                + [None] * nk
                + [None if lin else next(it_x) for lin in lin_xs]
            )
            # the carries accumulate as their cotangents' types (JAX's
            # transposed body types its carry accumulators as ct_carry)
            acc_types = [None] * nc + list(ct_carry_avals) + [None] * len(x_avals)
            ct_in = rule_context.backward_pass(
                carry_as_taken, linear, full, ct_carry + ct_ys, acc_types
            )
            c_cts, k_cts, x_cts = _split3(ct_in, nc, nk)
            c_cts = [c for c, lin in zip(c_cts, lin_consts) if lin]
            new_acc = [
                rule_context.match_aval(rule_context.add_tangents(a, c), av)
                for a, c, av in zip(acc, c_cts, acc_avals, strict=True)
            ]
            # each carry's sum as it is (JAX's ValAccum.freeze: its first
            # term's type), a zero of the cotangent's type
            new_carry = [_own_type(c, av) for c, av in zip(k_cts, ct_carry_avals, strict=True)]
            x_out = [
                _own_type(c, tangent_aval(av))
                for c, av, lin in zip(x_cts, x_avals, lin_xs, strict=True)
                if lin
            ]
            return new_acc + new_carry + x_out

        in_avals = nl_const_avals + acc_avals + ct_carry_avals + nl_x_avals + ct_y_avals
        # A custom_vjp bwd in the body may write a Ref its fwd saved: the refs
        # the transposed body touches are threaded as a scan body's (read ones
        # extra consts, written ones extra carries after the carry)
        traced = _trace("scan transpose", fun, in_avals, ["a cotangent"] * len(in_avals), "")
        assert not traced.captured, "scan transpose: the traced body must be closed"
        if not traced.refs:
            return traced.program, (), ()
        (ins, outs), (ref_ins, ref_outs) = traced.without_refs(), traced.ref_vars
        w = traced.written
        read = [v for v, wr in zip(ref_ins, w, strict=True) if not wr]
        w_ins = [v for v, wr in zip(ref_ins, w, strict=True) if wr]
        w_outs = [v for v, wr in zip(ref_outs, w, strict=True) if wr]
        k = n1 + n2 + n3
        program = Program(
            in_vars=ins[:n1] + read + ins[n1:k] + w_ins + ins[k:],
            eqns=traced.program.eqns,
            out_vars=outs[: n2 + n3] + w_outs + outs[n2 + n3 :],
            const_vars=traced.program.const_vars,
            consts=traced.program.consts,
        )
        return program, traced.refs, w

    body_t, refs, written = rule_context.memo(
        body,
        (
            "scan_transpose",
            tuple(linear),
            tuple(ct_carry_avals),
            tuple(ys_nonzero),
            tuple(ct_y_avals),
        ),
        make_body,
    )
    read = [r for r, w in zip(refs, written, strict=True) if not w]
    written_refs = [r for r, w in zip(refs, written, strict=True) if w]
    ct_carry, ct_ys = list(cts[:nk]), list(cts[nk:])
    ys_avals = [y.update(shape=(length, *y.shape)) for y in ct_y_avals]
    n_carry = len(acc_avals) + nk
    outs = scan_p.bind(
        *[c for c, lin in zip(consts, lin_consts) if not lin],
        *ref_context.outer_values(read, [False] * len(read)),
        *[rule_context.zeros_like_aval(a) for a in acc_avals],
        *[rule_context.match_aval(c, a) for c, a in zip(ct_carry, ct_carry_avals, strict=True)],
        *ref_context.outer_values(written_refs, [True] * len(written_refs)),
        *[x for x, lin in zip(xs, lin_xs) if not lin],
        *[
            rule_context.match_aval(c, a)
            for c, a in zip([c for c in ct_ys if type(c) is not Zero], ys_avals, strict=True)
        ],
        body=body_t,
        num_consts=len(nl_const_avals) + len(read),
        num_carry=n_carry + len(written_refs),
        length=length,
        reverse=not reverse,
        unroll=unroll,
    )
    if written_refs:
        ref_context.write_back(written_refs, outs[n_carry : n_carry + len(written_refs)])
        outs = outs[:n_carry] + outs[n_carry + len(written_refs) :]
    acc_out, carry_out, xs_out = _split3(outs, len(acc_avals), nk)
    it_acc, it_xs = iter(acc_out), iter(xs_out)
    return (
        [next(it_acc) if lin else None for lin in lin_consts]
        + [ct if isinstance(a, UndefinedPrimal) else None for a, ct in zip(carry, carry_out)]
        + [next(it_xs) if lin else None for lin in lin_xs]
    )


def _own_ct_aval(ct: Any, aval: ShapedArray, stacked: bool = False) -> ShapedArray:
    """The type a transposed scan body takes the cotangent ``ct`` of a value
    of type ``aval`` with: its own where it differs in weak type only (a
    symbolic zero's is the scan output's), else ``aval``'s tangent type.
    ``stacked``: ``ct`` is a ys cotangent, one step of it is taken."""
    want = tangent_aval(aval)
    got = ct.aval if type(ct) is Zero else tracing.get_aval(ct, "scan", "cotangent")
    if stacked:
        got = got.update(shape=got.shape[1:])
    return got if _weak_only_mismatch(got, want) else want


def _own_type(ct: Any, aval: ShapedArray) -> Any:
    """A cotangent a transposed scan body returns for a value of tangent type
    ``aval``: as the backward pass computed it where it differs in weak type
    only (JAX's transposed body returns its sums as they are), zeros and
    anything else of ``aval``'s type."""
    if type(ct) is not Zero and _weak_only_mismatch(
        tracing.get_aval(ct, "scan", "cotangent"), aval
    ):
        return ct
    return rule_context.match_aval(ct, aval)


def _without_carry_retypes(body: Program, num_consts: int, num_carry: int) -> Program:
    """``body`` as JAX's scan body takes its carry, for transposing: a carry
    the body takes strong only to convert it to the weak type the user's
    body was traced with (:func:`_retyped_scan_body`: JAX's body takes that
    carry weak and returns it strong) is that conversion's output instead,
    the conversion dropped. JAX's transposed body has no such conversion,
    whose transpose would convert the carry's cotangent to the carry's type."""
    uses = _uses(body)
    outputs = {id(v) for v in body.out_vars}
    in_vars, dropped = list(body.in_vars), set()
    for k in range(num_consts, num_consts + num_carry):
        var = in_vars[k]
        var_uses = uses.get(id(var), [])
        if len(var_uses) != 1 or id(var) in outputs:
            continue
        eqn, _ = var_uses[0]
        out = eqn.outputs[0]
        if (
            eqn.primitive is convert_element_type_p
            and eqn.params["weak_type"]
            and not var.aval.weak_type
            and out.aval.strip_weak() == var.aval.strip_weak()
        ):
            in_vars[k] = out
            dropped.add(id(eqn))
    if not dropped:
        return body
    return Program(
        in_vars=in_vars,
        eqns=[e for e in body.eqns if id(e) not in dropped],
        out_vars=body.out_vars,
        const_vars=body.const_vars,
        consts=body.consts,
    )


def _outputs_reached(program: Program, reached_in: Sequence[bool]) -> list[bool]:
    """Which outputs of ``program`` depend on the inputs marked in ``reached_in``."""
    reached = {id(v) for v, r in zip(program.in_vars, reached_in, strict=True) if r}
    for eqn in program.eqns:
        if any(isinstance(a, Var) and id(a) in reached for a in eqn.inputs):
            reached.update(id(v) for v in eqn.outputs)
    return [isinstance(v, Var) and id(v) in reached for v in program.out_vars]


def _linear_carries(body: Program, consts: list, carry: list, xs: list) -> list[bool]:
    """The carries of a scan being transposed that its linear inputs reach
    (a fixpoint over the steps): a linear carry may start as a constant zero."""
    lin_c, lin_x = ([isinstance(v, UndefinedPrimal) for v in g] for g in (consts, xs))
    lin_k = [isinstance(c, UndefinedPrimal) for c in carry]
    while True:
        reached = _outputs_reached(body, lin_c + lin_k + lin_x)[: len(carry)]
        new = [a or b for a, b in zip(lin_k, reached, strict=True)]
        if new == lin_k:
            return lin_k
        lin_k = new


def _scan_transpose_known_carry(cts, consts, carry, xs, lin_k, *, body, length, reverse, unroll):
    """The transpose of a linear scan with a carry that is not linear: a
    fori_loop's counter in a custom_jvp rule's tangent computation or under
    linear_transpose (JAX's partial evaluation splits it off before it
    transposes). A forward scan computes that carry's value at each step,
    and the transposed scan reads those values as xs."""
    nc, nk = len(consts), len(carry)
    lin_c, lin_x = ([isinstance(v, UndefinedPrimal) for v in g] for g in (consts, xs))
    c_avals, k_avals, x_avals = _split3(body.in_avals, nc, nk)
    known_k_avals = [a for a, lin in zip(k_avals, lin_k) if not lin]
    n_known, n_lin = len(known_k_avals), nk - len(known_k_avals)

    def known_step(*vals):
        # no linear input reaches a known carry (the scan is linear in
        # them): zeros stand in for the linear inputs
        it = iter(vals)
        full = [
            rule_context.zeros_like_aval(a) if lin else next(it)
            for a, lin in zip(body.in_avals, lin_c + lin_k + lin_x, strict=True)
        ]
        new_carry = tracing.eval_program_bind(body, full)[:nk]
        before = [v for v, lin in zip(full[nc : nc + nk], lin_k) if not lin]
        return [v for v, lin in zip(new_carry, lin_k) if not lin] + before

    def known(values, flags):
        return [v for v, lin in zip(values, flags, strict=True) if not lin]

    known_consts = known(consts, lin_c)
    outs = scan_p.bind(
        *known_consts,
        *known(carry, lin_k),
        *known(xs, lin_x),
        body=_traced(
            known_step,
            known(c_avals, lin_c) + known_k_avals + known(x_avals, lin_x),
            "scan",
        ),
        num_consts=len(known_consts),
        num_carry=n_known,
        length=length,
        reverse=reverse,
        unroll=unroll,
    )
    stacked = outs[n_known:]  # each step's value of the known carries

    def linear_step(*vals):
        cs, lk = vals[:nc], iter(vals[nc : nc + n_lin])
        xv, kv = vals[nc + n_lin : len(vals) - n_known], iter(vals[len(vals) - n_known :])
        full_carry = [next(lk) if lin else next(kv) for lin in lin_k]
        outs = tracing.eval_program_bind(body, [*cs, *full_carry, *xv])
        return [o for o, lin in zip(outs[:nk], lin_k) if lin] + outs[nk:]

    lin_k_avals = [a for a, lin in zip(k_avals, lin_k) if lin]
    ct = _scan_transpose(
        [c for c, lin in zip(cts[:nk], lin_k) if lin] + list(cts[nk:]),
        *consts,
        *[c for c, lin in zip(carry, lin_k) if lin],
        *xs,
        *stacked,
        body=_traced(linear_step, c_avals + lin_k_avals + x_avals + known_k_avals, "scan"),
        num_consts=nc,
        num_carry=n_lin,
        length=length,
        reverse=reverse,
        unroll=unroll,
    )
    ct_carry = iter(ct[nc : nc + n_lin])
    return (
        ct[:nc]
        + [next(ct_carry) if lin else None for lin in lin_k]
        + ct[nc + n_lin : nc + n_lin + len(xs)]
    )


scan_p.def_transpose(_scan_transpose)


# --- scan: batch


@scan_p.def_batch
def _scan_batch(args, dims, *, body, num_consts, num_carry, length, reverse, unroll):
    """Consts and carry batched on axis 0, xs and ys on axis 1 (axis 0 is the scan's)."""
    frame = rule_context.current_frame()
    batched = [d is not None for d in dims]
    const_b = batched[:num_consts]
    xs_b = batched[num_consts + num_carry :]
    carry_b = _carry_fixpoint(
        body, (const_b, xs_b), batched[num_consts : num_consts + num_carry], frame,
        slice(0, num_carry),
    )  # fmt: skip
    n_ys = len(body.out_vars) - num_carry
    new_body, out_b = rule_context.batch_subprogram(
        body, [*const_b, *carry_b, *xs_b], frame, force_out=[*carry_b, *[False] * n_ys],
        name="scan",
    )  # fmt: skip
    consts = _to_front(args[:num_consts], dims[:num_consts])
    carry = _batched_to_front(
        args[num_consts : num_consts + num_carry], dims[num_consts : num_consts + num_carry],
        carry_b, frame.size,
    )  # fmt: skip
    xs = [
        x if d is None else moveaxis(x, d, 1)
        for x, d in zip(args[num_consts + num_carry :], dims[num_consts + num_carry :])
    ]
    outs = scan_p.bind(
        *consts, *carry, *xs, body=new_body, num_consts=num_consts, num_carry=num_carry,
        length=length, reverse=reverse, unroll=unroll,
    )  # fmt: skip
    out_dims = [0 if b else None for b in carry_b]
    out_dims += [1 if b else None for b in out_b[num_carry:]]
    return list(outs), out_dims


# --- scan: mask


@scan_p.def_mask
def _scan_mask(ctx, *operands, body, num_consts, num_carry, length, reverse, unroll):
    """A scan over a masked length (the xs' leading dim, logical n) still runs
    all ``length`` padded steps, but a step whose index is n or more leaves
    the carry as it was (a select on the step index, which comes in as one
    more xs: an iota). So the final carry is the unpadded program's, also
    when reversed (then the padded steps come first); the ys rows from n on
    are unspecified. The body is masked too: consts, carry and xs slices
    keep their logical shapes, and the carry must come back with its own."""
    logical = ctx.logical_in
    carry_logical = logical[num_consts : num_consts + num_carry]
    xs_logical = logical[num_consts + num_carry :]
    steps = ctx.unify([x[0] for x in xs_logical], "the xs' leading dims") if xs_logical else None
    consts = operands[:num_consts]
    body_logical = [*logical[:num_consts], *carry_logical, *(x[1:] for x in xs_logical)]
    ys_logical: list = []

    def step(carry: list, inputs: tuple) -> tuple:
        index, x_slices = inputs
        outs, outs_logical = ctx.mask_subprogram(body, [*consts, *carry, *x_slices], body_logical)
        for i, (got, want) in enumerate(zip(outs_logical[:num_carry], carry_logical)):
            if any(g != w and not g.is_constant for g, w in zip(got, want, strict=True)):
                raise TypeError(
                    f"mask: scan: the body returns carry {i} with logical shape {ctx.show(got)} "
                    f"but takes it with {ctx.show(want)}"
                )
        new_carry = outs[:num_carry]
        if steps is not None and ctx.masked(steps):
            active = lt(index, ctx.index(steps))
            new_carry = [ctx.where(active, new, old) for new, old in zip(new_carry, carry)]
        ys_logical[:] = outs_logical[num_carry:]
        return new_carry, outs[num_carry:]

    indices = iota(np.int32, length)
    init = list(operands[num_consts : num_consts + num_carry])
    xs = list(operands[num_consts + num_carry :])
    carry, ys = _scan("lax.scan", step, init, (indices, xs), length, reverse, unroll)
    stacked = steps if steps is not None else length
    return [*carry, *ys], [*carry_logical, *((stacked, *y) for y in ys_logical)]


# --- scan: lowering


@scan_p.def_lowering
def _scan_lowering(
    ctx: Any, *args: Any, body: Program, num_consts: int, num_carry: int, length: int,
    reverse: bool, unroll: int,
) -> list[Any]:  # fmt: skip
    """The loop structure of the unroll pass (``refimpl.transforms.scan.unroll_scans``),
    lowered: a ``stablehlo.while`` over blocks of ``unroll`` inlined steps (none
    when fully unrolled) and the remaining steps after it."""
    in_vars = [Var(aval) for aval in ctx.avals_in]
    out_vars = [Var(aval) for aval in ctx.avals_out]
    params = dict(
        body=body, num_consts=num_consts, num_carry=num_carry, length=length, reverse=reverse,
        unroll=unroll,
    )  # fmt: skip
    one_scan = Program(in_vars, [Eqn(scan_p, [*in_vars], out_vars, params)], [*out_vars])
    return ctx.lower_program(rule_context.unroll_scans(one_scan), args)


# --- scan: the public binder lax.scan


def _static_int(api: str, arg: str, value: Any) -> int:
    """``int(value)``, as JAX 0.10.2's scan takes ``length`` (so ``2.0``,
    ``2.5`` and ``True`` are 2, 2 and 1 steps); a traced value is a
    ``ConcretizationTypeError``, and what ``int`` refuses keeps its class
    (``TypeError`` for a list or an array of several elements, ``ValueError``
    for a string that is no number)."""
    if isinstance(value, tracing.Tracer):
        raise tracing.ConcretizationTypeError(
            f"{api}: The `{arg}` argument to `scan` expects a concrete `int` value. For "
            "scan-like iteration with a dynamic length, use `while_loop` or `fori_loop`. "
            f"Got a traced value {value.aval.str_short()} (it depends on {value.origin})"
        )
    try:
        return int(value)
    except (TypeError, ValueError) as err:
        raise type(err)(f"{api}: {arg} must be an int, got {value!r} ({err})") from None


def normalize_unroll(unroll: Any, length: int, api: str = "lax.scan") -> int:
    """The scan primitive's ``unroll`` param: an int >= 1.

    As in JAX 0.10: ``True`` and ``0`` mean fully unrolled (normalized to
    ``max(length, 1)``), ``False`` means 1; a negative int is a ValueError and
    anything that is neither int nor bool a TypeError.
    """
    if isinstance(unroll, tracing.Tracer):
        raise tracing.ConcretizationTypeError(
            f"{api}: The `unroll` argument to `scan` expects a concrete `int` or `bool` "
            f"value; got a traced value {unroll.aval.str_short()}"
        )
    if isinstance(unroll, (bool, np.bool_)):
        return max(length, 1) if unroll else 1
    if not isinstance(unroll, (int, np.integer)):
        raise TypeError(f"{api}: unroll must be an int or a bool, got {unroll!r}")
    if unroll < 0:
        raise ValueError(f"{api}: unroll must be a bool or a non-negative int, got {unroll}")
    return max(length, 1) if unroll == 0 else int(unroll)


@api_boundary
def scan(
    f: Callable[[Any, Any], tuple[Any, Any]],
    init: Any,
    xs: Any = None,
    length: int | None = None,
    reverse: bool = False,
    unroll: int | bool = 1,
    _split_transpose: bool = False,
) -> tuple[Any, Any]:
    """``jax.lax.scan``: loop ``carry, y = f(carry, x)`` over the leading axis of ``xs``.

    Semantically (``unroll`` never changes the result)::

        def scan(f, init, xs, length=None):
            carry, ys = init, []
            for x in xs:           # xs[::-1] with reverse=True
                carry, y = f(carry, x)
                ys.append(y)
            return carry, stack(ys)  # ys[::-1] with reverse=True

    ``f`` is traced once (again once if the init's weak types must be
    promoted to the carry ``f`` returns, as JAX does) and the loop is one
    ``scan`` primitive. As in JAX, the trace is reused by later scans of the
    same function object over operands of the same structure and types.

    Args:
        f: ``f(carry, x) -> (carry, y)``; the returned carry must have the
            pytree structure, shapes and dtypes of ``init``.
        init: The initial carry, a pytree of arrays or Python scalars.
        xs: A pytree of arrays scanned along their leading axis (all of the
            same size), or None to loop ``length`` times with ``x = None``.
        length: The number of steps; required when ``xs`` is None, and must
            equal the leading axis size otherwise.
        reverse: Walk ``xs`` and fill ``ys`` from the end.
        unroll: ``1``/``False``: a plain loop; ``k > 1``: ``k`` steps per loop
            iteration (a remainder handled separately); ``True`` or ``0``:
            fully unrolled.
        _split_transpose: JAX's private switch between two ways of
            transposing the loop (its tests run both); accepted, and the
            same program either way: the derivatives do not depend on it.

    Returns:
        ``(final carry, ys)``, the ``y``s stacked on a new leading axis of
        size ``length``.

    Raises:
        TypeError: ``f`` is not callable, does not return a pair, or returns
            a carry whose structure, shape or dtype differs from ``init``;
            ``unroll`` is not an int or bool.
        ValueError: ``xs`` leaves disagree on their leading axis, ``length``
            disagrees with it or is missing without ``xs``, or ``unroll`` is
            negative.

    Example:
        >>> import numpy as np
        >>> from refimpl import lax
        >>> total, running = lax.scan(lambda c, x: (c + x, c + x), 0.0,
        ...                           np.arange(1, 5, dtype=np.float32), unroll=2)
        >>> float(total), np.asarray(running)
        (10.0, array([ 1.,  3.,  6., 10.], dtype=float32))
    """
    return _scan("lax.scan", f, init, xs, length, reverse, unroll)


def _scan(
    api: str, f: Callable, init: Any, xs: Any, length: Any, reverse: Any, unroll: Any
) -> Any:  # (carry, ys), a list when f returns one (as JAX)
    if not callable(f):
        raise TypeError(f"{api}: f argument should be a callable.")
    _check_carried_refs(f, init)
    ref_context.check_no_refs(init, "scan")
    init_leaves, init_tree, carry_paths = _flatten_operands("carry", init)
    xs_leaves, xs_tree, xs_paths = _flatten_operands("xs", xs)
    if any(isinstance(leaf, ref_context.Ref) for leaf in xs_leaves):
        f, xs_leaves = _scanning_refs(f, xs_leaves, xs_tree)
    xs_avals = _avals_of(api, xs_leaves, xs_paths)
    length = _scan_length(api, xs_avals, xs_paths, length)
    if config.disable_jit:
        return _scan_in_python(f, init, xs_leaves, xs_tree, length, bool(reverse))
    unroll = normalize_unroll(unroll, length, api)
    reverse = bool(reverse)
    x_avals = [x.update(shape=x.shape[1:]) for x in xs_avals]

    init_avals = _avals_of(api, init_leaves, carry_paths)

    def traced_body(ys_weak: tuple | None = None) -> tuple[_Traced, pytree.PyTreeDef]:
        return _cached_trace(
            (f,),
            (api, init_tree, tuple(init_avals), xs_tree, tuple(x_avals), ys_weak),
            lambda: _trace_scan_body(api, f, init_tree, init_avals, xs_tree, x_avals, ys_weak),
        )

    body, y_tree = traced_body()
    n_init = len(init_leaves)
    carry_out = body.out_avals[:n_init]
    # JAX's rule: a weak init of another dtype than the carry f returns is
    # promoted and f traced again; a carry differing only in weak type is not
    # (JAX keeps that trace: the carry taken weak, returned strong).
    init_leaves, changed = _promoted_carry(init_leaves, init_avals, carry_out, dtype_only=True)
    if changed:
        init_avals = _avals_of(api, init_leaves, carry_paths)
        body, y_tree = traced_body()
        carry_out = body.out_avals[:n_init]
    # refimpl's scan body takes its carry with exactly the types it returns
    # (C6): retyped to those, its ys keep the weak types of JAX's trace.
    promoted, changed = _promoted_carry(init_leaves, init_avals, carry_out)
    if changed:
        ys_weak = tuple(y.weak_type for y in body.out_avals[n_init : n_init + y_tree.num_leaves])
        init_leaves = _carry_operands(body, init_leaves, promoted)
        init_avals = _avals_of(api, promoted, carry_paths)
        body = _retyped_scan_body(api, body, init_avals, ys_weak)
        carry_out = body.out_avals[:n_init]
    _check_carry_types(api, ("scan body", f), carry_paths, init_avals, carry_out)

    # Refs made outside that the body touched: the ones it reads are extra
    # consts, the ones it writes extra carries (after the carry), written back.
    program = _scan_threading_refs(body, len(init_leaves))
    read = [r for r, w in zip(body.refs, body.written, strict=True) if not w]
    written = [r for r, w in zip(body.refs, body.written, strict=True) if w]
    consts = [*body.captured, *ref_context.outer_values(read, [False] * len(read))]
    carried = ref_context.outer_values(written, [True] * len(written))
    # JAX's forwarding of a carry the body returns unchanged: a constant of
    # the scan (first), its final value the init
    fixed = _carries_forwarded(program, len(consts), init_leaves)
    if fixed:
        program = _carries_as_consts(program, len(consts), len(init_leaves) + len(carried), fixed)
        consts = [*(init_leaves[j] for j in fixed), *consts]
    looped = [leaf for j, leaf in enumerate(init_leaves) if j not in fixed]
    n_carry = len(looped) + len(carried)
    nc = len(consts)
    # JAX's forwarding of a y that is an x: the xs themselves, the body
    # pruned of that output (so the scan does not stack a copy of them)
    xs_ys = _ys_forwarded_from_xs(program, nc, n_carry, xs_leaves, length)
    if xs_ys:
        kept = [a for j, a in enumerate(program.out_vars) if j not in xs_ys]
        program = replace(program, out_vars=kept)
    outs = scan_p.bind(
        *consts,
        *looped,
        *carried,
        *xs_leaves,
        body=program,
        num_consts=nc,
        num_carry=n_carry,
        length=length,
        reverse=reverse,
        unroll=unroll,
    )
    ref_context.write_back(written, outs[len(looped) : n_carry])
    computed = iter(outs)
    carries = [fixed[j] if j in fixed else next(computed) for j in range(len(init_leaves))]
    ys_out = list(computed)[len(carried) :]
    ys_in = iter(ys_out)
    ys_all = [xs_ys[n_carry + i] if n_carry + i in xs_ys else next(ys_in)
              for i in range(len(ys_out) + len(xs_ys))]  # fmt: skip
    outs = [*carries, *ys_all]
    n_carry = len(init_leaves)
    carry = init_tree.unflatten(outs[: len(init_leaves)])
    ys = y_tree.unflatten(outs[n_carry:])
    node = body.out_tree.node_data()
    return [carry, ys] if node is not None and node[0] is list else (carry, ys)


def _carry_operands(body: _Traced, leaves: list, promoted: list) -> list:
    """The initial carry operands of a scan whose body ``body`` was traced
    with the carry ``leaves`` and returns it as typed by ``promoted``.

    JAX's scan takes a weak init the body returns strong as it is (weak in,
    strong out). Its cotangent is then what the transposed body returns (the
    sum as it is, typed by its first term: strong for ``c * x``, weak for
    ``sin(c) * x``), so such an init is bound as it is (C5 allows an operand
    differing from the body's carry in weak type only; a conversion here
    would transpose to one of the cotangent). Only a carry the body returns
    as another carry is converted here.
    """
    program, n_cap = body.program, len(body.captured)
    carry_vars = program.in_vars[n_cap : n_cap + len(leaves)]
    as_carry = {id(v) for v in program.out_vars[: len(leaves)]}

    def taken_as_is(var: Var) -> bool:
        return id(var) not in as_carry

    return [
        leaf
        if new is not leaf
        and _weak_only_mismatch(
            tracing.get_aval(leaf, "lax.scan", "init"), tracing.get_aval(new, "lax.scan", "init")
        )
        and taken_as_is(var)
        else new
        for leaf, new, var in zip(leaves, promoted, carry_vars, strict=True)
    ]


def _uses(program: Program, eqns: Sequence[Eqn] | None = None) -> dict[int, list[tuple[Eqn, int]]]:
    """Each variable's uses in ``program``'s equations, or in ``eqns`` of
    them (equation, operand position)."""
    uses: dict[int, list[tuple[Eqn, int]]] = {}
    for eqn in program.eqns if eqns is None else eqns:
        for k, atom in enumerate(eqn.inputs):
            if isinstance(atom, Var):
                uses.setdefault(id(atom), []).append((eqn, k))
    return uses


def _scan_in_python(
    f: Callable,
    init: Any,
    xs_leaves: list,
    xs_tree: pytree.PyTreeDef,
    length: int,
    reverse: bool,
) -> tuple[Any, Any]:
    """``scan`` under ``disable_jit``, as JAX 0.10.2: a Python loop calling
    ``f`` op by op (the carry stays whatever ``f`` returns, Python scalars
    included), the ys stacked; zero steps are JAX's ValueError (no trace
    gives the ys' types)."""
    if length == 0:
        raise ValueError(
            "zero-length scan is not supported in disable_jit() mode because the output "
            "type is unknown."
        )
    carry, ys = init, []
    steps = range(length - 1, -1, -1) if reverse else range(length)
    for i in steps:
        x = [structural.index_in_dim(leaf, i, 0, keepdims=False) for leaf in xs_leaves]
        carry, y = f(carry, xs_tree.unflatten(x))
        ys.append(y)
    if reverse:
        ys.reverse()

    def stack(*leaves: Any) -> Any:
        return structural.concatenate([structural.expand_dims(y, (0,)) for y in leaves], 0)

    return carry, pytree.tree_map(stack, *ys)


def _check_carried_refs(f: Callable, init: Any) -> None:
    """JAX's errors for a ref in the initial carry passed twice or also
    closed over by ``f``, named by f's carry parameter (``c[0]`` and
    ``c[1]``); checked before the carry's refs are refused."""
    path_leaves = pytree.tree_flatten_with_path(init)[0]
    leaves = [leaf for _, leaf in path_leaves]
    if not any(isinstance(leaf, ref_context.Ref) for leaf in leaves):
        return
    name = (_positional_names(f) or ["init"])[0]
    paths = [name + pytree.keystr(keys) for keys, _ in path_leaves]
    ref_context.check_jit_refs(leaves, paths, f, _function_name(f), "scan")


def _scanning_refs(f: Callable, xs_leaves: list, xs_tree: Any) -> tuple[Callable, list]:
    """A Ref among the xs, as JAX 0.10.2: step ``i`` of the body gets a view
    of the ref's row ``i`` (reads and writes go to ``ref[i, ...]``). The xs
    leaf becomes the step indices and the body reaches the ref through the
    view, as a ref made outside it (threaded like any such ref)."""
    refs = {k: leaf for k, leaf in enumerate(xs_leaves) if isinstance(leaf, ref_context.Ref)}
    indices = [
        np.arange(r.shape[0], dtype=np.int32) if r.ndim else np.zeros((), np.int32)
        for r in refs.values()
    ]
    it = iter(indices)
    leaves = [next(it) if k in refs else leaf for k, leaf in enumerate(xs_leaves)]

    def body(carry: Any, x: Any) -> Any:
        x_leaves = pytree.tree_leaves(x)
        views = [_ScannedRef(refs[k], i) if k in refs else i for k, i in enumerate(x_leaves)]
        return f(carry, xs_tree.unflatten(views))

    return body, leaves


class _ScannedRef:
    """Row ``index`` of a ref that a scan walks over (JAX's sliced ref)."""

    __slots__ = ("ref", "index")

    def __init__(self, ref: Any, index: Any) -> None:
        self.ref, self.index = ref, index

    shape = property(lambda self: self.ref.shape[1:])
    dtype = property(lambda self: self.ref.dtype)
    ndim = property(lambda self: self.ref.ndim - 1)

    def _at(self, idx: Any) -> tuple:
        return (self.index, *(idx if isinstance(idx, tuple) else (idx,)))

    def __getitem__(self, idx: Any) -> Any:
        return self.ref[self._at(idx)]

    def __setitem__(self, idx: Any, value: Any) -> None:
        self.ref[self._at(idx)] = value

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def addupdate(self, x: Any, idx: Any = ()) -> None:
        self.ref.addupdate(x, self._at(idx))


def _scan_threading_refs(body: _Traced, num_carry: int) -> Program:
    """The scan body with the refs it touched threaded: inputs ``captured,
    read refs, carry, written refs, xs``; outputs ``carry, written refs' final
    values, ys``."""
    if not body.refs:
        return body.program
    (ins, outs), (ref_ins, ref_outs) = body.without_refs(), body.ref_vars
    n_captured = len(body.captured)
    read = [v for v, w in zip(ref_ins, body.written, strict=True) if not w]
    w_ins = [v for v, w in zip(ref_ins, body.written, strict=True) if w]
    w_outs = [v for v, w in zip(ref_outs, body.written, strict=True) if w]
    carry_end = n_captured + num_carry
    return Program(
        in_vars=ins[:n_captured] + read + ins[n_captured:carry_end] + w_ins + ins[carry_end:],
        eqns=body.program.eqns,
        out_vars=outs[:num_carry] + w_outs + outs[num_carry:],
        const_vars=body.program.const_vars,
        consts=body.program.consts,
    )


def _types_of(tree: Any) -> Any:
    """``tree`` with each leaf's type in its place, as JAX's messages show a
    function's output (``float32[]``, ``(float32[], float32[])``)."""
    try:
        return pytree.tree_map(lambda x: tracing.get_aval(x, "scan", "output"), tree)
    except TypeError:  # a leaf that is no array: shown as it is
        return tree


def _scan_length(
    api: str, xs_avals: Sequence[ShapedArray], xs_paths: Sequence[str], length: Any
) -> int:
    """The number of steps: the xs leaves' common leading size, checked against ``length``."""
    for aval, path in zip(xs_avals, xs_paths):
        if aval.ndim == 0:
            raise ShapeIndexError(
                f"{api}: scan got value with no leading axis to scan over: {path} is a "
                f"scalar ({aval.str_short()})"
            )
    # Each message starts with JAX 0.10.2's own words (programs and tests
    # match them, e.g. "scan got values with different leading axis sizes:
    # 2, 1."); refimpl's account of which leaf follows.
    sizes_listed = [aval.shape[0] for aval in xs_avals]
    if length is not None:
        length = _static_int(api, "length", length)
        if length < 0:
            raise ValueError(f"{api}: length must be non-negative, got {length}")
        for aval, path in zip(xs_avals, xs_paths):
            if aval.shape[0] != length:
                raise ValueError(
                    f"scan got `length` argument of {length} which disagrees with leading "
                    f"axis sizes {sizes_listed}. ({api}: length={length} disagrees with the "
                    f"leading axis size {aval.shape[0]} of {path} (shape {aval.shape}))"
                )
        return length
    if not xs_avals:
        raise ValueError(
            "scan got no values to scan over and `length` not provided. "
            f"({api}: got no xs to scan over and no length; pass length=)"
        )
    if len(set(sizes_listed)) > 1:
        listed = ", ".join(f"{p} has {a.shape[0]}" for p, a in zip(xs_paths, xs_avals))
        raise ValueError(
            "scan got values with different leading axis sizes: "
            f"{', '.join(map(str, sizes_listed))}. ({api}: {listed})"
        )
    return sizes_listed[0]


def _trace_scan_body(
    api: str,
    f: Callable,
    init_tree: pytree.PyTreeDef,
    init_avals: list[ShapedArray],
    xs_tree: pytree.PyTreeDef,
    x_avals: list[ShapedArray],
    ys_weak: tuple | None = None,
) -> tuple[_Traced, pytree.PyTreeDef]:
    """Trace ``f(carry, x)``; check it returns ``(carry, y)`` with the carry's
    structure. ``ys_weak``: weak types the y leaves take where only that differs."""
    num_carry = init_tree.num_leaves

    def body(*tracers: Any) -> Any:
        carry = init_tree.unflatten(tracers[:num_carry])
        out = f(carry, xs_tree.unflatten(tracers[num_carry:]))
        ref_context.check_no_refs(out, "scan")
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise TypeError(f"{api}: scan body output must be a pair, got {_types_of(out)}.")
        _check_carry_tree(api, "scan body", f, init_tree, pytree.tree_structure(out[0]))
        pair = (out[0], out[1] if ys_weak is None else _with_weak_types(out[1], ys_weak))
        return list(pair) if isinstance(out, list) else pair  # JAX returns f's container

    origins = [f"the carry of {api}"] * len(init_avals) + [f"the xs of {api}"] * len(x_avals)
    traced = _trace(api, body, [*init_avals, *x_avals], origins, "the body output")
    _, y_tree = traced.out_tree.children()
    return traced, y_tree


def _retyped_scan_body(
    api: str, body: _Traced, carry_avals: list[ShapedArray], ys_weak: tuple
) -> _Traced:
    """``body`` for carry inputs of ``carry_avals`` (differing from its own
    only in weak type), its ys keeping the weak types ``ys_weak``.

    Re-binds the Program's equations instead of calling the user's function
    again: JAX traces the body once there (the carry taken weak, returned
    strong), so a body with Python side effects (one popping from a list,
    say) must run once here too.
    """
    program, n_carry = body.program, len(carry_avals)
    n_cap, n_refs = len(body.captured), len(body.refs)
    rest = program.in_vars[n_cap + n_carry :]
    in_avals = [*carry_avals, *(v.aval for v in rest)]
    n_ys = len(ys_weak)

    def retyped(*args: Any) -> list[Any]:
        # the body's own equations see the carry as it was traced: a loop or
        # cond inside takes its operands with exactly the types it was made for
        operands = list(args)
        for i, v in enumerate(program.in_vars[n_cap : n_cap + n_carry]):
            if operands[i].aval.weak_type != v.aval.weak_type:
                operands[i] = convert_element_type(
                    operands[i], v.aval.dtype, weak_type=v.aval.weak_type
                )
        outs = tracing.eval_program_bind(program, [*body.captured, *operands])
        # the carry returned with the types it is taken with: retyping one
        # carry can retype another it feeds (a carry shifted along a tuple)
        carry = list(outs[:n_carry])
        for i, (c, aval) in enumerate(zip(carry, carry_avals, strict=True)):
            if c.aval.weak_type != aval.weak_type:
                carry[i] = convert_element_type(c, c.aval.dtype, weak_type=aval.weak_type)
        ys = list(outs[n_carry : n_carry + n_ys])
        for i, (y, weak) in enumerate(zip(ys, ys_weak, strict=True)):
            if y.aval.weak_type != weak:
                ys[i] = convert_element_type(y, y.aval.dtype, weak_type=weak)
        return [*carry, *ys, *outs[n_carry + n_ys :]]

    origins = [f"the carry of {api}"] * n_carry + [f"the xs of {api}"] * (len(rest) - n_refs)
    origins += [f"a Ref made outside {api}"] * n_refs
    new_program, captured, _ = tracing.trace_to_program(retyped, in_avals, api, origins)
    return _Traced(new_program, list(captured), body.out_tree, body.refs, body.written)


def _with_weak_types(ys: Any, weak: tuple) -> Any:
    leaves, tree = pytree.tree_flatten(ys)
    if len(leaves) != len(weak):  # a different structure this time: checked elsewhere
        return ys
    out = []
    for leaf, w in zip(leaves, weak, strict=True):
        aval = tracing.get_aval(leaf, "lax.scan", "y") if tracing.is_array_like(leaf) else None
        if aval is not None and aval.weak_type != w:
            leaf = convert_element_type(leaf, aval.dtype, weak_type=w)
        out.append(leaf)
    return tree.unflatten(out)


# --- while --------------------------------------------------------------------------------

while_p = Primitive("while", multiple_results=True)
while_p.jax_param_names = {  # type: ignore[attr-defined]
    "cond_jaxpr": "cond",
    "body_jaxpr": "body",
    "cond_nconsts": "cond_num_consts",
    "body_nconsts": "body_num_consts",
}


@while_p.def_abstract_eval
def _while_abstract_eval(
    *avals: ShapedArray, cond: Program, body: Program, cond_num_consts: int, body_num_consts: int
) -> list[ShapedArray]:
    """Operands ``cond consts, body consts, carry``; results: the final carry.

    ``cond`` takes ``cond consts, carry`` and returns a bool scalar; ``body``
    takes ``body consts, carry`` and returns the carry with its types unchanged.
    """
    for name, sub in (("cond", cond), ("body", body)):
        # unreachable from the public API (a check of the primitive's own invariants):
        # lax.while_loop traces cond/body at the carry's types and checks them first
        if not isinstance(sub, Program):  # pragma: no cover
            raise TypeError(f"while: {name} must be a Program, got {type(sub).__name__}")
    for name, value in (("cond_num_consts", cond_num_consts), ("body_num_consts", body_num_consts)):
        # unreachable from the public API (a check of the primitive's own invariants):
        # lax.while_loop traces cond/body at the carry's types and checks them first
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:  # pragma: no cover
            raise TypeError(f"while: {name} must be a non-negative int, got {value!r}")
    # unreachable from the public API (a check of the primitive's own invariants):
    # lax.while_loop traces cond/body at the carry's types and checks them first
    if cond_num_consts + body_num_consts > len(avals):  # pragma: no cover
        raise TypeError("while: cond_num_consts + body_num_consts exceed the operands")
    cond_consts = list(avals[:cond_num_consts])
    body_consts = list(avals[cond_num_consts : cond_num_consts + body_num_consts])
    carry = list(avals[cond_num_consts + body_num_consts :])
    # unreachable from the public API (a check of the primitive's own invariants):
    # lax.while_loop traces cond/body at the carry's types and checks them first
    if cond.in_avals != cond_consts + carry:  # pragma: no cover
        raise TypeError(
            f"while: cond takes ({avals_str(cond.in_avals)}) but the operands give "
            f"({avals_str(cond_consts + carry)})"
        )
    # unreachable from the public API (a check of the primitive's own invariants):
    # lax.while_loop traces cond/body at the carry's types and checks them first
    cond_out = [a.strip_weak() for a in cond.out_avals]
    if cond_out != [ShapedArray((), np.dtype(bool))]:  # pragma: no cover
        raise TypeError(f"while: cond must return one bool[], got ({avals_str(cond.out_avals)})")
    # unreachable from the public API (a check of the primitive's own invariants):
    # lax.while_loop traces cond/body at the carry's types and checks them first
    if body.in_avals != body_consts + carry:  # pragma: no cover
        raise TypeError(
            f"while: body takes ({avals_str(body.in_avals)}) but the operands give "
            f"({avals_str(body_consts + carry)})"
        )
    # as scan's: a batched body may return strong a carry it takes weak (JAX's
    # while results are the body's output types)
    carry = [
        out if _weak_only_mismatch(out, taken) else taken
        for out, taken in zip(body.out_avals, carry, strict=True)
    ]
    # unreachable from the public API (a check of the primitive's own invariants):
    # lax.while_loop traces cond/body at the carry's types and checks them first
    if body.out_avals != carry:  # pragma: no cover
        raise TypeError(
            f"while: body returns ({avals_str(body.out_avals)}) but the carry is "
            f"({avals_str(carry)})"
        )
    return carry


@while_p.def_impl
def _while_impl(
    *args: np.ndarray, cond: Program, body: Program, cond_num_consts: int, body_num_consts: int
) -> list[np.ndarray]:
    cond_consts = list(args[:cond_num_consts])
    body_consts = list(args[cond_num_consts : cond_num_consts + body_num_consts])
    carry = list(args[cond_num_consts + body_num_consts :])
    while rule_context.eval_program(cond, [*cond_consts, *carry])[0]:
        carry = rule_context.eval_program(body, [*body_consts, *carry])
    return carry


# --- cond ---------------------------------------------------------------------------------

cond_p = Primitive("cond", multiple_results=True)


@cond_p.def_abstract_eval
def _cond_abstract_eval(
    index: ShapedArray, *operands: ShapedArray, branches: tuple[Program, ...]
) -> list[ShapedArray]:
    """``branches[index](operands)``; every branch takes the operands and returns
    the same types (those are the results)."""
    # unreachable from the public API (a check of the primitive's own invariants):
    # lax.cond/switch trace every branch at the operands' types and check them first
    if not isinstance(branches, tuple) or not branches:  # pragma: no cover
        raise _invalid_param("cond", "branches", branches, "tuple of ClosedJaxpr", None)
    # unreachable from the public API (a check of the primitive's own invariants):
    # lax.cond/switch trace every branch at the operands' types and check them first
    if not all(isinstance(b, Program) for b in branches):  # pragma: no cover
        raise _invalid_param("cond", "branches", branches, "tuple of ClosedJaxpr", None)
    # unreachable from the public API (a check of the primitive's own invariants):
    # lax.cond/switch trace every branch at the operands' types and check them first
    if index.shape != () or index.dtype != np.int32:  # pragma: no cover
        raise TypeError(f"cond: the index must be an int32 scalar, got {index.str_short()}")
    for number, branch in enumerate(branches):
        # weak types may differ (as jit's call, JAX's typematch)
        # unreachable from the public API (a check of the primitive's own invariants):
        # lax.cond/switch trace every branch at the operands' types and check them first
        takes = [a.strip_weak() for a in branch.in_avals]
        if takes != [a.strip_weak() for a in operands]:  # pragma: no cover
            raise TypeError(
                f"cond: branch {number} takes ({avals_str(branch.in_avals)}) but the operands "
                f"are ({avals_str(operands)})"
            )
        # unreachable from the public API (a check of the primitive's own invariants):
        # lax.cond/switch trace every branch at the operands' types and check them first
        if branch.out_avals != branches[0].out_avals:  # pragma: no cover
            raise TypeError(
                f"cond: branch {number} returns ({avals_str(branch.out_avals)}) but branch 0 "
                f"returns ({avals_str(branches[0].out_avals)})"
            )
    return branches[0].out_avals


@cond_p.def_impl
def _cond_impl(
    index: np.ndarray, *operands: np.ndarray, branches: tuple[Program, ...]
) -> list[np.ndarray]:
    chosen = int(index)
    if not 0 <= chosen < len(branches):
        chosen = len(branches) - 1  # StableHLO case: out of range runs the last branch
    return rule_context.eval_program(branches[chosen], operands)


@cond_p.def_mask
def _cond_mask(ctx, index, *operands, branches):
    """Every branch is masked with the operands' logical shapes; each output's
    logical shape must agree across the branches (an unmasked dim agrees
    with a masked one, as everywhere)."""
    found: list = []

    def masked(branch: Program) -> Callable:
        def fun(*values: Any) -> list:
            outs, logical = ctx.mask_subprogram(branch, values, ctx.logical_in[1:])
            found.append(logical)
            return outs

        return fun

    names = tuple(f"branch {i}" for i in range(len(branches)))
    outs = _switch("lax.cond", index, [masked(b) for b in branches], tuple(operands), names)
    out_logical = [
        tuple(
            ctx.unify([logical[i][d] for logical in found], f"dim {d} of the branches' output {i}")
            for d in range(len(found[0][i]))
        )
        for i in range(len(outs))
    ]
    return list(outs), out_logical


# --- batching rules of while and cond (refimpl.transforms.batching) --------------------


@while_p.def_batch
def _while_batch(args, dims, *, cond, body, cond_num_consts, body_num_consts):
    """An unbatched predicate: one loop of batched programs. A batched one: the
    loop runs while any member's predicate holds, and a step keeps the old
    carry of members whose predicate is already false (so every carry is
    batched)."""
    frame, size = rule_context.current_frame(), rule_context.current_frame().size
    if not frame.device and _io_callbacks((cond, body), ordered=True):  # (JAX's class too)
        raise Exception("Ordered IO effects not supported in vmap.")
    nc, nb = cond_num_consts, body_num_consts
    batched = [d is not None for d in dims]
    cc_b, bc_b, carry_b = batched[:nc], batched[nc : nc + nb], batched[nc + nb :]
    carry_b = _carry_fixpoint(body, (bc_b, []), carry_b, frame, slice(0, len(carry_b)))
    _, pred_b = rule_context.batch_subprogram(cond, [*cc_b, *carry_b], frame)
    if pred_b[0]:
        if not frame.device and _io_callbacks((cond, body)):
            # every member would run the effects of the steps it does not take
            raise Exception(
                "Unordered IO effects not supported in while_loop with batched predicate"
            )
        carry_b = [True] * len(carry_b)
    cc = _to_front(args[:nc], dims[:nc])
    bc = _to_front(args[nc : nc + nb], dims[nc : nc + nb])
    carry = _batched_to_front(args[nc + nb :], dims[nc + nb :], carry_b, size)
    new_cond, _ = rule_context.batch_subprogram(cond, [*cc_b, *carry_b], frame, name="while")
    new_body, _ = rule_context.batch_subprogram(
        body, [*bc_b, *carry_b], frame, force_out=carry_b, name="while"
    )
    if pred_b[0]:
        new_cond, new_body = _any_member_loop(new_cond, new_body, nc, frame)
        bc = [*cc, *bc]
        nb = nc + nb
    outs = while_p.bind(
        *cc, *bc, *carry, cond=new_cond, body=new_body, cond_num_consts=nc, body_num_consts=nb
    )
    return list(outs), [0 if b else None for b in carry_b]


def _any_member_loop(cond: Program, body: Program, nc: int, frame) -> tuple[Program, Program]:
    """From the batched ``cond`` (a bool per member) and ``body``: a cond that
    holds while any member's does, and a body (taking the cond consts too)
    that steps only the members whose cond holds."""

    cond_consts = cond.in_avals[:nc]
    carry_avals = cond.in_avals[nc:]

    def any_cond(*values: Any) -> list[Any]:
        return [reduce_or(_emit(cond, values, frame)[0], (0,))]

    def masked_body(*values: Any) -> list[Any]:
        cc, rest = values[:nc], values[nc:]
        carry = rest[len(rest) - len(carry_avals) :]
        active = _emit(cond, [*cc, *carry], frame)[0]
        stepped = _emit(body, rest, frame)
        results = []
        for new, old, aval in zip(stepped, carry, carry_avals, strict=True):
            keep = structural.broadcast_in_dim(active, aval.shape, (0,))
            results.append(select_n(keep, old, new))
        return results

    new_cond = _traced(any_cond, cond.in_avals, "while")
    new_body = _traced(masked_body, [*cond_consts, *body.in_avals], "while")
    return new_cond, new_body


def _io_callbacks(programs: Any, ordered: bool = False) -> bool:
    """Whether ``programs`` hold an io_callback (an ordered one with
    ``ordered``): JAX 0.10.2's vmap of a cond or while refuses them."""
    return any(
        eqn.primitive is io_callback_p and (eqn.params["ordered"] or not ordered)
        for program in programs
        for eqn in program.walk_eqns()
    )


@cond_p.def_batch
def _cond_batch(args, dims, *, branches):
    """An unbatched index: one cond of batched branches (an output batched in
    any branch is batched in all). A batched index: every branch runs, and
    each output selects its member's branch (an index out of range picks the
    last branch, as the cond itself does)."""
    frame = rule_context.current_frame()
    if not frame.device and _io_callbacks(branches):  # (a pmap's devices each run theirs)
        raise NotImplementedError("IO effect not supported in vmap-of-cond.")
    (index, *operands), (index_dim, *operand_dims) = args, dims
    if index_dim is None:
        in_b = [d is not None for d in operand_dims]
        out_b = [False] * len(branches[0].out_vars)
        for branch in branches:
            _, branch_b = rule_context.batch_subprogram(branch, in_b, frame)
            out_b = [a or b for a, b in zip(out_b, branch_b, strict=True)]
        new = tuple(
            rule_context.batch_subprogram(b, in_b, frame, force_out=out_b, name="cond")[0]
            for b in branches
        )
        outs = cond_p.bind(index, *_to_front(operands, operand_dims), branches=new)
        return list(outs), [0 if b else None for b in out_b]
    size = frame.size
    last = np.asarray(len(branches) - 1, np.int32)
    out_of_range = elementwise.bitwise_or(
        lt(index, np.asarray(0, np.int32)), elementwise.gt(index, last)
    )
    which = elementwise.select(out_of_range, structural.broadcast_in_dim(last, (size,), ()), index)
    which = moveaxis(which, index_dim, 0)
    per_branch = []
    for i, branch in enumerate(branches):
        # as JAX: branch i sees its float operands through stop_gradient in
        # the members that do not take it, so a branch not taken (sqrt at 0)
        # sends no cotangent (not 0 * inf = NaN) into them
        taken = elementwise.eq(which, np.asarray(i, np.int32))
        ops, ops_dims = [], []
        for x, d in zip(operands, operand_dims, strict=True):
            aval = tracing.get_aval(x, "cond", "operand")
            if type(aval) is ShapedArray and dtypes.is_inexact(aval.dtype):
                x = bdim_to(x, d, size, 0)
                mask = structural.broadcast_in_dim(taken, shape_of(x), (0,))
                x, d = select_n(mask, stop_gradient(x), x), 0
            ops.append(x)
            ops_dims.append(d)
        outs, out_dims = rule_context.batch_program(branch, ops, ops_dims, frame)
        per_branch.append([bdim_to(o, d, size, 0) for o, d in zip(outs, out_dims)])
    results = []
    for k, cases in enumerate(zip(*per_branch, strict=True)):
        shape = shape_of(cases[0])
        out = select_n(structural.broadcast_in_dim(which, shape, (0,)), *cases)
        # as JAX's select of the branches' own outputs: weak only if every one is
        weak = all(_unconformed_weak_type(branch, k) for branch in branches)
        if tracing.get_aval(out, "cond", "output").weak_type != weak:
            out = convert_element_type(out, tracing.get_aval(out, "cond", "output").dtype,
                                       weak_type=weak)  # fmt: skip
        results.append(out)
    return results, [0] * len(results)


def _unconformed_weak_type(branch: Program, k: int) -> bool:
    """Output ``k``'s weak type as the branch computed it, before the cond
    matched it to branch 0's (``_conforming_branch``'s weak-only conversion)."""
    out = branch.out_vars[k]
    for eqn in branch.eqns:
        if any(o is out for o in eqn.outputs):
            (source,) = eqn.inputs if eqn.primitive is convert_element_type_p else (None,)
            if source is not None and source.aval.strip_weak() == out.aval.strip_weak():
                return bool(source.aval.weak_type)
            break
    return bool(out.aval.weak_type)


# --- lowering of while and cond to StableHLO (refimpl.backends.pjrt.lowering) ----------


@while_p.def_lowering
def _while_lowering(
    ctx: Any, *args: Any, cond: Program, body: Program, cond_num_consts: int, body_num_consts: int
) -> list[Any]:
    """``stablehlo.while`` whose loop state is every operand: the consts ride along
    unchanged, so both regions see them as block arguments."""
    n_consts = cond_num_consts + body_num_consts
    types = [ctx.ir_type(aval) for aval in ctx.avals_in]
    loop = ctx.hlo.WhileOp(types, list(args))
    with ctx.block(loop.cond, types) as state:
        cond_consts, carry = state[:cond_num_consts], state[n_consts:]
        ctx.hlo.return_(ctx.lower_program(cond, [*cond_consts, *carry]))
    with ctx.block(loop.body, types) as state:
        body_consts, carry = state[cond_num_consts:n_consts], state[n_consts:]
        new_carry = ctx.lower_program(body, [*body_consts, *carry])
        ctx.hlo.return_([*state[:n_consts], *new_carry])
    return list(loop.results)[n_consts:]


@cond_p.def_lowering
def _cond_lowering(ctx: Any, index: Any, *operands: Any, branches: tuple[Program, ...]) -> list:
    """``stablehlo.case`` (an out-of-range index runs the last branch, as the
    impl); each branch region reads the operands from the enclosing block.
    An index known while lowering (``platform_dependent``'s for one
    platform) emits that branch alone, as JAX's lowering does."""
    known = ctx.module.known_branch(index)
    if known is not None:
        return list(ctx.lower_program(branches[known], operands))
    case = ctx.hlo.CaseOp([ctx.ir_type(aval) for aval in ctx.avals_out], index, len(branches))
    for region, branch in zip(case.regions, branches, strict=True):
        with ctx.block(region, []):
            ctx.hlo.return_(ctx.lower_program(branch, operands))
    return list(case.results)


# --- the public functions: while_loop and fori_loop -----------------------------------


@api_boundary
def while_loop(
    cond_fun: Callable[[Any], Any], body_fun: Callable[[Any], Any], init_val: Any
) -> Any:
    """``jax.lax.while_loop``: ``while cond_fun(val): val = body_fun(val)``; returns ``val``.

    ``cond_fun`` must return a bool scalar; ``body_fun`` must return a value of
    the same pytree structure and leaf types as ``init_val``.
    """
    return _while_loop("lax.while_loop", cond_fun, body_fun, init_val)


def _while_loop(api: str, cond_fun: Callable, body_fun: Callable, init_val: Any) -> Any:
    if not (callable(cond_fun) and callable(body_fun)):
        raise TypeError(f"{api}: body_fun and cond_fun arguments should be callable.")
    if config.disable_jit:
        # as JAX 0.10.2: a Python loop over the carry as arrays; a predicate
        # that cannot be a Python bool (traced, under vmap) falls back to the loop
        def arrays(tree: Any) -> Any:
            return pytree.tree_map(lambda leaf: _as_array(api, leaf), tree)

        try:
            val = arrays(init_val)
            while cond_fun(val):
                val = arrays(body_fun(val))
            return val
        except tracing.ConcretizationTypeError:
            pass
    ref_context.check_no_refs(init_val, "while_body")
    leaves, tree, paths = _flatten_operands("carry", init_val)
    avals = _avals_of(api, leaves, paths)

    def traced_while() -> tuple[_Traced, _Traced]:
        return _cached_trace(
            (cond_fun, body_fun),
            (api, tree, tuple(avals)),
            lambda: _trace_while(api, cond_fun, body_fun, tree, avals),
        )

    cond, body = traced_while()
    leaves, changed = _promoted_carry(leaves, avals, body.out_avals)
    if changed:  # trace again with the promoted carry (as JAX does)
        avals = _avals_of(api, leaves, paths)
        cond, body = traced_while()
    _check_carry_types(api, ("while_loop body", body_fun), paths, avals, body.out_avals)
    if cond.refs or body.refs:
        return _while_threading_refs(cond, body, leaves, tree)
    # a carry the body returns unchanged and cond_fun does not read is a
    # constant of the body (first), its final value the initial one, as JAX's
    nb, nc = len(body.captured), len(cond.captured)
    fixed = {}
    for j, leaf in enumerate(leaves):
        if _forwarding_index(body.program, j) == nb + j and not _reads(
            cond.program, cond.program.in_vars[nc + j]
        ):
            value = _forwarded_as(body.program.in_vars[nb + j].aval, leaf, carry=True)
            if value is not None:
                fixed[j] = value
    cond_program, body_program = cond.program, body.program
    if fixed:
        cond_ins = cond_program.in_vars
        cond_program = replace(
            cond_program,
            in_vars=[*cond_ins[:nc], *(v for j, v in enumerate(cond_ins[nc:]) if j not in fixed)],
        )
        body_program = _carries_as_consts(body_program, nb, len(leaves), fixed)
    outs = while_p.bind(
        *cond.captured,
        *(leaves[j] for j in fixed),
        *body.captured,
        *(leaf for j, leaf in enumerate(leaves) if j not in fixed),
        cond=cond_program,
        body=body_program,
        cond_num_consts=nc,
        body_num_consts=nb + len(fixed),
    )
    looped = iter(outs)
    return tree.unflatten([fixed[j] if j in fixed else next(looped) for j in range(len(leaves))])


def _while_threading_refs(cond: _Traced, body: _Traced, leaves: list, tree: Any) -> Any:
    """A while loop whose functions touched refs made outside it.

    The refs a function only reads are its extra consts; the written ones are
    extra loop state, written back. As JAX 0.10.2: the writes of ``cond_fun``
    while it computes the predicate are dropped, and each iteration runs
    ``cond_fun`` again (keeping its writes) before ``body_fun`` (the body
    program is the cond program's equations, then the body's); a ref
    written by one of the two and touched by the other is refused (JAX:
    "Cannot write to the same ref in both cond and body", or, outside every
    trace, its ValueError for a ref passed twice; a ref the body writes and
    the cond reads would not be seen by JAX's cond).
    """
    _check_while_refs(cond, body)
    c_ins, _ = cond.without_refs()
    b_ins, b_outs = body.without_refs()
    c_refs, b_refs = cond.ref_vars, body.ref_vars
    c_cap, b_cap, n = len(cond.captured), len(body.captured), len(leaves)

    def split(traced: _Traced, ref_vars: tuple) -> tuple[list, list, list]:
        read: list[tuple[Any, Var, Any]] = []
        written: list[tuple[Any, Var, Any]] = []
        for r, w, var, final in zip(traced.refs, traced.written, *ref_vars, strict=True):
            (written if w else read).append((r, var, final))
        return read, written, [r for r, _, _ in written]

    c_read, c_written, c_w_refs = split(cond, c_refs)
    b_read, b_written, b_w_refs = split(body, b_refs)
    carried = c_w_refs + b_w_refs
    cond_program = Program(
        in_vars=c_ins[:c_cap]
        + [v for _, v, _ in c_read]
        + c_ins[c_cap:]
        + [v for _, v, _ in c_written]
        + [Var(r.aval.inner) for r in b_w_refs],
        eqns=cond.program.eqns,
        out_vars=cond.program.out_vars[:1],
        const_vars=cond.program.const_vars,
        consts=cond.program.consts,
    )
    c_read_refs, b_read_refs = [r for r, _, _ in c_read], [r for r, _, _ in b_read]
    cond_consts = [*cond.captured, *ref_context.outer_values(c_read_refs, [False] * len(c_read))]
    body_consts = [*body.captured, *ref_context.outer_values(b_read_refs, [False] * len(b_read))]
    body_const_vars = b_ins[:b_cap] + [v for _, v, _ in b_read]
    carry_vars = b_ins[b_cap:]
    state_vars = [Var(r.aval.inner) for r in c_w_refs] + [v for _, v, _ in b_written]
    eqns: list[Eqn] = []
    cond_finals: list[Any] = []
    const_vars: list[Var] = []
    consts: list[Any] = []
    if c_written:  # the cond again, keeping its writes, before the body
        cond_again = [Var(v.aval) for v in c_ins[:c_cap] + [v for _, v, _ in c_read]]
        body_const_vars += cond_again
        body_consts += cond_consts
        writes = Program(
            in_vars=cond_program.in_vars,
            eqns=cond.program.eqns,
            out_vars=[final for _, _, final in c_written],
            const_vars=cond.program.const_vars,
            consts=cond.program.consts,
        )
        eqns, cond_finals, const_vars, consts = _inlined(
            writes, cond_again + carry_vars + state_vars
        )
    body_program = Program(
        in_vars=body_const_vars + carry_vars + state_vars,
        eqns=eqns + body.program.eqns,
        out_vars=b_outs + cond_finals + [f for _, _, f in b_written],
        const_vars=const_vars + body.program.const_vars,
        consts=consts + body.program.consts,
    )
    outs = while_p.bind(
        *cond_consts,
        *body_consts,
        *leaves,
        *ref_context.outer_values(carried, [True] * len(carried)),
        cond=cond_program,
        body=body_program,
        cond_num_consts=len(cond_consts),
        body_num_consts=len(body_consts),
    )
    ref_context.write_back(carried, outs[n:])
    return tree.unflatten(outs[:n])


def _check_while_refs(cond: _Traced, body: _Traced) -> None:
    """JAX 0.10.2's rules for a ref touched by both functions of a while loop."""
    c_written = {id(r) for r, w in zip(cond.refs, cond.written) if w}
    b_written = {id(r) for r, w in zip(body.refs, body.written) if w}
    b_touched = {id(r) for r in body.refs}
    for ref in cond.refs:
        key = id(ref)
        if key not in b_touched:
            continue
        if not tracing.is_tracing():  # JAX runs an eager while as a jit taking each ref twice
            raise ValueError(
                "only one reference to a mutable array may be passed as an argument to a "
                "function, but when tracing while for jit the mutable array reference of type "
                f"{ref.aval.str_short()} appeared at both args[0] and args[1]."
            )
        if key in c_written and key in b_written:
            raise NotImplementedError(
                "Cannot write to the same ref in both cond and body of while loop."
            )
        if key in c_written or key in b_written:
            raise NotImplementedError(
                f"while_loop: the mutable array reference of type {ref.aval.str_short()} is "
                "written by one of cond_fun and body_fun and read by the other; JAX 0.10.2 "
                "gives its cond a copy that never sees the body's writes (it loops forever) "
                "and its body a copy that never sees the cond's. Read it in one function only"
            )


def _inlined(program: Program, args: Sequence[Any]) -> tuple[list, list, list, list]:
    """``program``'s equations applied to the atoms ``args``, every variable
    renamed (so the copy shares none with ``program``): (equations, output
    atoms, const vars, consts)."""
    env: dict[int, Any] = {v.id: a for v, a in zip(program.in_vars, args, strict=True)}
    const_vars = [Var(v.aval) for v in program.const_vars]
    env.update({v.id: c for v, c in zip(program.const_vars, const_vars, strict=True)})

    def read(atom: Any) -> Any:
        return atom if isinstance(atom, Literal) else env[atom.id]

    eqns = []
    for eqn in program.eqns:
        outputs = [Var(v.aval) for v in eqn.outputs]
        env.update({v.id: o for v, o in zip(eqn.outputs, outputs, strict=True)})
        eqns.append(Eqn(eqn.primitive, [read(a) for a in eqn.inputs], outputs, dict(eqn.params)))
    return eqns, [read(a) for a in program.out_vars], const_vars, list(program.consts)


def _trace_while(
    api: str, cond_fun: Callable, body_fun: Callable, tree: pytree.PyTreeDef, avals: list
) -> tuple[_Traced, _Traced]:
    origins = [f"the carry of {api}"] * len(avals)

    def checked(fun: Callable, what: str) -> Callable:
        def flat(*carry: Any) -> Any:
            out = fun(tree.unflatten(carry))
            ref_context.check_no_refs(out, what)
            return out

        return flat

    cond_flat, body_flat = checked(cond_fun, "while_cond"), checked(body_fun, "while_body")
    cond = _trace(api, cond_flat, avals, origins, "the cond_fun output")
    pred = cond.out_avals
    if not cond.out_tree.is_leaf:
        raise TypeError(
            f"{api}: cond_fun must return a boolean scalar, but got pytree {cond.out_tree!r}."
        )
    if pred[0].strip_weak() != ShapedArray((), np.dtype(bool)):
        raise TypeError(
            f"{api}: cond_fun must return a boolean scalar, but got output type(s) {list(pred)!r}."
        )
    body = _trace(api, body_flat, avals, origins, "the body_fun output")
    _check_carry_tree(api, "while_loop body", body_fun, tree, body.out_tree)
    return cond, body


@api_boundary
def fori_loop(
    lower: Any,
    upper: Any,
    body_fun: Callable[[Any, Any], Any],
    init_val: Any,
    *,
    unroll: int | bool | None = None,
) -> Any:
    """``jax.lax.fori_loop``: ``for i in range(lower, upper): val = body_fun(i, val)``.

    When both bounds are concrete (not traced) this is a ``scan`` of
    ``max(upper - lower, 0)`` steps whose index starts as the Python int
    ``lower`` (so ``i`` is a weakly typed int32), like JAX; ``unroll`` is
    passed to it. Otherwise it is a ``while`` loop over ``(i, upper, val)``,
    and ``unroll`` must be None, False or 1.
    """
    api = "lax.fori_loop"
    if not callable(body_fun):
        raise TypeError(f"{api}: body_fun argument should be callable.")
    dtype = _fori_index_dtype(api, lower, upper)
    bounds = _concrete_bounds(lower, upper)
    wrappers = _ForiWrappers.of(body_fun)
    if bounds is not None:
        start, stop = bounds
        if config.disable_jit and stop <= start:  # JAX: its Python scan needs a step
            return init_val
        (_, result), _ = _scan(
            api, wrappers.scan_step, (start, init_val), None, max(stop - start, 0), False,
            False if unroll is None else unroll,
        )  # fmt: skip
        return result
    if unroll is not None and unroll is not False and unroll != 1:
        raise ValueError(
            f"{api}: Can only use `unroll` in `fori_loop` if the loop bounds are statically "
            f"known (got unroll={unroll!r})."
        )
    lower = _as_index(lower, dtype)
    upper = _as_index(upper, dtype)
    _, _, result = _while_loop(api, wrappers.while_cond, wrappers.while_body,
                               (lower, upper, init_val))  # fmt: skip
    return result


class _ForiWrappers:
    """The functions a ``fori_loop`` hands to ``scan`` or ``while_loop`` for
    one ``body_fun``, made once per ``body_fun`` (kept while it lives), so that
    calling ``fori_loop`` again with the same ``body_fun`` reuses the traced
    body as JAX does (the trace cache is keyed by function identity). They
    hold ``body_fun`` weakly: the cache must not keep it alive."""

    _cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
    _lock = threading.Lock()

    def __init__(self, body_fun: Callable[[Any, Any], Any], weak: bool) -> None:
        # the wrappers run only inside fori_loop, whose caller holds body_fun,
        # so the weak reference is alive there
        body = (
            cast(Callable[[], Callable[[Any, Any], Any]], weakref.ref(body_fun))
            if weak
            else (lambda: body_fun)
        )

        # (named as JAX's: its carry errors name the parameter, loop_carry[1])
        def scan_step(loop_carry: tuple[Any, Any], _: Any) -> tuple[tuple[Any, Any], None]:
            i, val = loop_carry
            return (_plus_one(i), body()(i, val)), None

        def while_cond(loop_carry: tuple[Any, Any, Any]) -> Any:
            return lt(loop_carry[0], loop_carry[1])

        def while_body(loop_carry: tuple[Any, Any, Any]) -> tuple[Any, Any, Any]:
            i, stop, val = loop_carry
            return _plus_one(i), stop, body()(i, val)

        self.scan_step, self.while_cond, self.while_body = scan_step, while_cond, while_body

    @classmethod
    def of(cls, body_fun: Callable[[Any, Any], Any]) -> _ForiWrappers:
        try:
            with cls._lock:
                wrappers = cls._cache.get(body_fun)
                if wrappers is None:
                    wrappers = cls._cache[body_fun] = cls(body_fun, weak=True)
                return wrappers
        except TypeError:  # not weakly referenceable or not hashable: no reuse
            return cls(body_fun, weak=False)


def _as_array(api: str, leaf: Any) -> Any:
    """``leaf`` as an array of its own type (JAX's ``lax.asarray``)."""
    if isinstance(leaf, tracing.Tracer):
        return leaf
    aval = tracing.get_aval(leaf, api, "carry")
    return convert_element_type(leaf, aval.dtype, weak_type=aval.weak_type)


def _plus_one(i: Any) -> Any:
    """``i + 1`` in ``i``'s dtype, keeping its weak type."""
    if type(i) is int:  # a Python loop under disable_jit counts in Python, as JAX's
        return i + 1
    return add(i, tracing.TypedScalar(1, tracing.get_aval(i, "lax.fori_loop", "i").dtype, True))


def _fori_index_dtype(api: str, lower: Any, upper: Any) -> np.dtype:
    """Equal integer dtypes, or a weak bound taking the other's signed dtype (as JAX)."""
    lo = tracing.get_aval(lower, api, "lower")
    hi = tracing.get_aval(upper, api, "upper")
    if lo.dtype == hi.dtype:
        return lo.dtype
    both_signed = dtypes.is_signed_int(lo.dtype) and dtypes.is_signed_int(hi.dtype)
    if both_signed and lo.weak_type != hi.weak_type:
        return hi.dtype if lo.weak_type else lo.dtype
    raise TypeError(
        f"{api}: lower and upper arguments to fori_loop must have equal types, got "
        f"{lo.dtype.name} and {hi.dtype.name}"
    )


def _concrete_bounds(lower: Any, upper: Any) -> tuple[int, int] | None:
    """Both bounds as Python ints when both are concrete (JAX's
    ``core.is_concrete``): not traced, or differentiated outside jit, whose
    JVP tracer holds a concrete primal -- so ``grad`` of
    ``fori_loop(x, x + 2., body, x)`` is a scan that reverse mode can
    differentiate (JAX's testStaticForiGrad)."""
    values = []
    for bound in (lower, upper):
        while isinstance(bound, tracing.Tracer):
            try:
                bound = bound._concrete("a fori_loop bound")
            except tracing.ConcretizationTypeError:
                return None
        values.append(bound)
    try:
        return int(values[0]), int(values[1])
    except TypeError:
        return None


def _as_index(bound: Any, dtype: np.dtype) -> Any:
    aval = tracing.get_aval(bound, "lax.fori_loop", "bound")
    if aval.dtype == dtype:
        return bound
    return convert_element_type(bound, dtype)


# --- JAX's input-to-output forwarding ------------------------------------------------


def _forwarded(out: Any, value: Any, *, carry: bool = False) -> Any:
    """``value`` (an input the loop or conditional returns unchanged) in
    place of the output ``out`` computed for it, as JAX's ``cond``, ``scan``
    and ``while_loop`` forward such an output outside the primitive (under
    ``vmap`` it then keeps the input's batching: ``out_axes=None`` takes an
    unbatched operand a batched predicate leaves alone). An array or a
    tracer of the output's type is forwarded itself. NumPy data and Python
    scalars: a loop's ``carry`` is the object given (JAX 0.10.2's scan and
    while_loop hand back the init as it is, a float64 NumPy array or a
    Python int included); a ``cond`` operand or a scan's ``x`` is an array
    of the output's type (JAX's ``lax.asarray``)."""
    try:
        want = tracing.get_aval(out, "forwarding", 0)
    except TypeError:
        return out
    forwarded = _forwarded_as(want, value, carry=carry)
    return out if forwarded is None else forwarded


def _forwarded_as(want: ShapedArray, value: Any, *, carry: bool = False) -> Any:
    """``value`` forwarded for an output of type ``want`` (``_forwarded``), or
    None when it is not forwarded (another shape, or an array of another
    type)."""
    try:
        got = tracing.get_aval(value, "forwarding", 0)
    except TypeError:
        return None
    if got.shape != want.shape:
        return None
    host = isinstance(value, (np.ndarray, np.generic, tracing.TypedScalar))
    if host or dtypes.is_python_scalar(value):
        if carry and not isinstance(value, tracing.TypedScalar):
            return value
        return convert_element_type(value, want.dtype, weak_type=want.weak_type)
    return value if got == want else None


def _carries_forwarded(program: Program, nc: int, init_leaves: list) -> dict[int, Any]:
    """The carries a scan body ``program`` (``nc`` consts first) returns as it
    takes them -> the final value to give for each (the init, as JAX's
    forwarding: ``_forwarded``), in order. JAX's scan makes such a carry a
    constant of the scan. Left a carry: an init of another type than the
    carry (``_forwarded`` would keep the computed one)."""
    found = {}
    for j, leaf in enumerate(init_leaves):
        if _forwarding_index(program, j) != nc + j:
            continue
        value = _forwarded_as(program.in_vars[nc + j].aval, leaf, carry=True)
        if value is not None:
            found[j] = value
    return found


def _carries_as_consts(program: Program, nc: int, n_carry: int, fixed: dict[int, Any]) -> Program:
    """Loop body ``program`` (a scan's or a while's) with its carries
    ``fixed`` taken as constants (before its own ``nc``) and no longer
    returned."""
    ins = program.in_vars
    carry_ins = ins[nc : nc + n_carry]
    return replace(
        program,
        in_vars=[
            *(carry_ins[j] for j in fixed),
            *ins[:nc],
            *(v for j, v in enumerate(carry_ins) if j not in fixed),
            *ins[nc + n_carry :],
        ],
        out_vars=[a for j, a in enumerate(program.out_vars) if j not in fixed],
    )


def _ys_forwarded_from_xs(
    program: Program, nc: int, n_carry: int, xs_leaves: list, length: int
) -> dict[int, Any]:
    """The outputs of a scan body ``program`` (``nc`` consts, ``n_carry``
    carries) that return an x as it is -> the xs to give for them, as JAX's
    scan prunes such a y from its body and forwards the xs. Left in the scan:
    xs of another type than the stacked y (a weak-typed array, say), which
    JAX's forwarding leaves alone too."""
    found = {}
    for j in range(n_carry, len(program.out_vars)):
        k = _forwarding_index(program, j)
        if k is None or k < nc + n_carry:
            continue
        value = xs_leaves[k - nc - n_carry]
        y = program.out_vars[j].aval
        want = y.update(shape=(length, *y.shape))
        try:
            got = tracing.get_aval(value, "forwarding", 0)
        except TypeError:
            continue
        if isinstance(value, (np.ndarray, np.generic)):  # JAX's lax.asarray of the xs
            found[j] = convert_element_type(value, want.dtype, weak_type=want.weak_type)
        elif got == want:
            found[j] = value
    return found


def _forwarding_index(program: Program, out_index: int) -> int | None:
    """The input position that output ``out_index`` of ``program`` returns as
    it is. None for a program with debug callbacks: the pjrt lowering orders
    a later callback after the loop or conditional through the primitive's
    outputs, and with such an output forwarded a later callback was seen
    running first (conformance host_callbacks/debug-callback-order)."""
    if debug.has_callbacks(program):
        return None
    atom = program.out_vars[out_index]
    if not isinstance(atom, Var):
        return None
    for i, var in enumerate(program.in_vars):
        if var is atom:
            return i
    return None


def _reads(program: Program, var: Var) -> bool:
    """Whether ``program`` uses its input ``var`` (an equation reads it or it is an output)."""
    if any(atom is var for atom in program.out_vars):
        return True
    return any(atom is var for eqn in program.eqns for atom in eqn.inputs)


# --- the public functions: cond and switch -------------------------------------------


_NO_OPERAND: Any = object()


def _operand_keyword(api: str, operands: tuple, operand: Any) -> tuple:
    """JAX's older spelling ``operand=x``: the same as one positional operand."""
    if operand is _NO_OPERAND:
        return operands
    if operands:
        raise TypeError(
            f"{api}: if 'operand' keyword is passed then no positional operands can be passed, "
            f"got operand={operand!r} and positional operands {operands}"
        )
    return (operand,)


@api_boundary
def cond(
    pred: Any,
    true_fun: Callable[..., Any],
    false_fun: Callable[..., Any],
    *operands: Any,
    operand: Any = _NO_OPERAND,
):
    """``jax.lax.cond``: ``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``.

    ``pred`` is a bool or number scalar (a number means ``pred != 0``). Both
    functions are traced; their outputs must have the same pytree structure,
    shapes and dtypes. Where only the weak type differs, the result takes
    ``false_fun``'s (JAX's branch 0 is ``false_fun``). ``operand=x`` is
    JAX's older spelling of one operand.
    """
    api = "lax.cond"
    if not (callable(true_fun) and callable(false_fun)):
        # JAX's older form cond(pred, true_operand, true_fun, false_operand,
        # false_fun), which JAX 0.10.2 still accepts: each branch its operand
        if callable(false_fun) and len(operands) == 2 and callable(operands[1]):
            x_true, f_true, x_false, f_false = true_fun, false_fun, *operands
            return cond(
                pred,
                lambda x, _: f_true(x),
                lambda _, x: f_false(x),
                x_true,
                x_false,
            )
        raise TypeError(f"{api}: true_fun and false_fun arguments should be callable.")
    operands = _operand_keyword(api, operands, operand)
    # JAX 0.10.2's checks, in its order and words
    if pred is None:
        raise TypeError(f"{api}: cond predicate is None")
    if isinstance(pred, Sequence):  # a str too
        raise TypeError(f"{api}: Pred must be a scalar, got {pred} of type {type(pred)}")
    if type(pred) is int:  # JAX's pred != 0 on the Python int itself: 2**40 is True
        pred = pred != 0
    try:
        aval = tracing.get_aval(pred, api, "pred")
    except TypeError:  # not an array (a function, an object)
        raise TypeError(f"{api}: Pred type must be either boolean or number, got {pred}.") from None
    if aval.shape != ():
        raise TypeError(f"{api}: Pred must be a scalar, got {pred} of shape {aval.shape}.")
    if dtypes.is_complex(aval.dtype):
        raise TypeError(
            f"{api}: Pred type must be either boolean or number, got {aval.dtype.name}."
        )
    if not dtypes.is_bool(aval.dtype):
        zero = tracing.TypedScalar(0, aval.dtype, weak_type=True)
        pred = (pred != 0) if dtypes.is_python_scalar(pred) else ne(pred, zero)
    if config.disable_jit and not isinstance(pred, tracing.Tracer):
        # as JAX 0.10.2: the chosen branch called op by op, its result as it returns it
        return true_fun(*operands) if pred else false_fun(*operands)
    index = convert_element_type(pred, np.int32)
    return _switch(api, index, (false_fun, true_fun), operands, ("false_fun", "true_fun"))


@api_boundary
def switch(
    index: Any, branches: Sequence[Callable[..., Any]], *operands: Any, operand: Any = _NO_OPERAND
) -> Any:
    """``jax.lax.switch``: ``branches[clamp(0, index, len(branches) - 1)](*operands)``.

    ``index`` is an integer scalar. Every branch is traced; their outputs must
    have the same pytree structure, shapes and dtypes. Where only the weak
    type differs, the result takes branch 0's. One branch is just called.
    ``operand=x`` is JAX's older spelling of one operand.
    """
    api = "lax.switch"
    operands = _operand_keyword(api, operands, operand)
    try:
        branches = tuple(branches)
    except TypeError:
        raise TypeError(f"{api}: branches argument should be a sequence of callables.") from None
    if not all(callable(b) for b in branches):
        raise TypeError(f"{api}: branches argument should be a sequence of callables.")
    if type(index) is int:  # JAX converts it to int32 as NumPy does: 2**40 + 1 wraps to 1
        index = convert_element_type(index, np.int32)
    # JAX 0.10.2's checks, in its order and words
    aval = _switch_index_aval(api, index)
    if not dtypes.is_integer(aval.dtype):
        raise TypeError(f"{api}: Index type must be an integer, got {index} as {aval.dtype.name}")
    if not branches:
        raise ValueError(f"{api}: Empty branch sequence")
    if len(branches) == 1:
        return branches[0](*operands)
    if aval.dtype != np.int32 or aval.weak_type:
        # as JAX 0.10.2: a weak index (a Python int argument) is made a strong
        # int32 first, an equation of the program before the clamp
        index = convert_element_type(index, np.int32)
    index = clamp(np.int32(0), index, np.int32(len(branches) - 1))
    if config.disable_jit and not isinstance(index, tracing.Tracer):
        return branches[int(index)](*operands)
    names = tuple(f"branch {i}" for i in range(len(branches)))
    return _switch(api, index, branches, operands, names)


def _switch_index_aval(api: str, index: Any) -> ShapedArray:
    """The type of ``switch``'s index, which must be a scalar."""
    if isinstance(index, (list, tuple)):  # NumPy's shape of a nested sequence
        shape: tuple = np.shape(np.asarray(index, dtype=object))
    else:
        try:
            shape = tracing.get_aval(index, api, "index").shape
        except TypeError:  # not an array (a function, a string)
            raise TypeError(f"{api}: Index type must be an integer, got {index}.") from None
    if shape != ():
        raise TypeError(f"{api}: Branch index must be scalar, got {index} of shape {shape}.")
    return tracing.get_aval(index, api, "index")


def _switch_with_ref_operands(
    api: str, index: Any, branches: Sequence[Callable], operands: tuple, names: Sequence[str]
) -> Any:
    """Refs among the operands, as JAX 0.10.2: each branch gets the Ref
    itself. JAX's errors first (one ref passed twice, or passed and closed
    over, named by the branch's parameters); then each operand Ref is a
    stand-in Ref closed over by the branches (threaded as a ref made outside
    them) whose final value the operand Ref takes afterwards."""
    path_leaves = pytree.tree_flatten_with_path(operands)[0]
    params = _positional_names(branches[-1])
    paths = [
        (params[keys[0].idx] if keys[0].idx < len(params) else f"operands[{keys[0].idx}]")
        + pytree.keystr(keys[1:])
        for keys, _ in path_leaves
    ]
    leaves = [leaf for _, leaf in path_leaves]
    for branch in branches:
        ref_context.check_jit_refs(leaves, paths, branch, _function_name(branch), "cond")
    outer = [leaf for leaf in leaves if isinstance(leaf, ref_context.Ref)]
    # read as an access of the enclosing bodies (a jit closing over the ref
    # threads it), then held by the stand-ins at the ref's own depth
    values = ref_context.outer_values(outer, [True] * len(outer))
    stand_ins = {
        id(r): ref_context.Ref(v, r._depth, r._memory_space, r._kind)
        for r, v in zip(outer, values, strict=True)
    }
    tree = pytree.tree_structure(operands)
    with_stand_ins = tree.unflatten([stand_ins.get(id(leaf), leaf) for leaf in leaves])

    def closing(fun: Callable) -> Callable:
        return lambda *_: fun(*with_stand_ins)

    out = _switch(api, index, [closing(b) for b in branches], (), names)
    for ref, value in zip(outer, values, strict=True):
        final = stand_ins[id(ref)]._value
        if final is not value:
            ref_context.write_back([ref], [final])
    return out


def _positional_names(fun: Callable) -> list[str]:
    try:
        parameters = inspect.signature(fun).parameters.values()
    except (TypeError, ValueError):
        return []
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in parameters if p.kind in kinds]


def _function_name(fun: Callable) -> str:
    return getattr(fun, "__name__", type(fun).__name__)


def _switch(
    api: str, index: Any, branches: Sequence[Callable], operands: tuple, names: Sequence[str]
) -> Any:
    leaves, in_tree, paths = _flatten_operands("operands", operands)
    if any(isinstance(leaf, ref_context.Ref) for leaf in leaves):
        return _switch_with_ref_operands(api, index, branches, operands, names)
    avals = _avals_of(api, leaves, paths)
    origins = [f"an operand of {api}"] * len(leaves)

    def taking_operands(fun: Callable) -> Callable:
        def branch(*tracers: Any) -> Any:
            out = fun(*in_tree.unflatten(tracers))
            ref_context.check_no_refs(out, "cond")
            return out

        return branch

    def trace_branches() -> list[_Traced]:
        first = _trace(
            api, taking_operands(branches[0]), avals, origins, f"the output of {names[0]}"
        )
        traced = [first]
        by_function = {id(branches[0]): first}  # one function given twice is traced once
        for branch, name in zip(branches[1:], names[1:]):
            if id(branch) not in by_function:
                conforming = taking_operands(
                    _conforming_branch(api, first, (branches[0], names[0]), (branch, name))
                )
                by_function[id(branch)] = _trace(
                    api, conforming, avals, origins, f"the output of {name}"
                )
            traced.append(by_function[id(branch)])
        return traced

    traced = _cached_trace(tuple(branches), (api, in_tree, tuple(avals)), trace_branches)
    first = traced[0]
    captured = _union(*(t.captured for t in traced))
    # Refs made outside that some branch touched: every branch takes the
    # values of all of them (after the operands) and returns the final values
    # of those some branch writes (after its outputs), written back.
    refs = _union(*(t.refs for t in traced))
    written_ids = {id(r) for t in traced for r, w in zip(t.refs, t.written) if w}
    written = [id(r) in written_ids for r in refs]
    ref_values = ref_context.outer_values(refs, written)
    if written_ids:
        _check_no_vmap_of_cond_writes(index, leaves, refs, written, ref_values)
    programs = tuple(
        _with_leading_inputs(_branch_threading_refs(t, refs, written), t.captured, captured)
        for t in traced
    )
    outs = cond_p.bind(index, *captured, *leaves, *ref_values, branches=programs)
    n_out = len(outs) - sum(written)
    ref_context.write_back([r for r, w in zip(refs, written) if w], outs[n_out:])
    # an output every branch returns as the same operand is that operand (JAX)
    inputs = [*captured, *leaves]
    results = list(outs[:n_out])
    for j in range(n_out):
        where = {_forwarding_index(p, j) for p in programs}
        (k,) = where if len(where) == 1 else (None,)
        if k is not None and k < len(inputs):
            results[j] = _forwarded(results[j], inputs[k])
    return first.out_tree.unflatten(results)


def _branch_threading_refs(traced: _Traced, refs: Sequence[Any], written: Sequence[bool]):
    """A branch's program taking the values of ``refs`` after its own inputs
    and returning the final values of the written ones after its outputs (a
    ref it does not touch: an unused input, returned as it came in)."""
    if not refs:
        return traced.program
    (ins, outs), (ref_ins, ref_outs) = traced.without_refs(), traced.ref_vars
    own = {id(r): (i, o) for r, i, o in zip(traced.refs, ref_ins, ref_outs, strict=True)}
    new_ins, new_outs = [], []
    for r, w in zip(refs, written, strict=True):
        var, final = own.get(id(r)) or (Var(r.aval.inner), None)
        new_ins.append(var)
        if w:
            new_outs.append(var if final is None else final)
    return Program(
        in_vars=ins + new_ins,
        eqns=traced.program.eqns,
        out_vars=outs + new_outs,
        const_vars=traced.program.const_vars,
        consts=traced.program.consts,
    )


def _check_no_vmap_of_cond_writes(index, leaves, refs, written, values) -> None:
    """As JAX 0.10.2, a cond whose branches write refs cannot be batched: when
    the index, an operand or a touched ref's value is batched by a vmap, or a
    written ref was made outside an active vmap, NotImplementedError."""
    top = tracing.find_top_trace([index, *leaves, *values])
    lowest = min(r._depth for r, w in zip(refs, written) if w)
    if isinstance(top, rule_context.batch_trace) or any(
        isinstance(t, rule_context.batch_trace) for t in tracing._stack.traces[lowest:]
    ):
        raise NotImplementedError("State effect not supported in vmap-of-cond.")


def _conforming_branch(
    api: str, first: _Traced, first_branch: tuple[Callable, str], branch: tuple[Callable, str]
):
    """``branch``'s function with its outputs checked against the first
    branch's (JAX 0.10.2's words), weak types matched to the first's."""
    fun, _ = branch

    def conforming(*args: Any) -> Any:
        leaves, tree = _output_leaves(api, f"the output of {branch[1]}", fun(*args))
        if tree != first.out_tree:
            _raise_branch_trees_differ(api, (first_branch, first.out_tree), (branch, tree))
        paths = [p for p, _ in pytree.flatten_with_path_strings(tree.unflatten(leaves))[0]]
        avals = [tracing.get_aval(leaf, api, f"output{path}") for leaf, path in zip(leaves, paths)]
        if any(a.strip_weak() != b.strip_weak() for a, b in zip(first.out_avals, avals)):
            _raise_branch_types_differ(api, paths, (first_branch, first.out_avals), (branch, avals))
        return tree.unflatten(
            [
                convert_element_type(leaf, want.dtype, weak_type=want.weak_type)
                if got.weak_type != want.weak_type
                else leaf
                for leaf, got, want in zip(leaves, avals, first.out_avals)
            ]
        )

    return conforming


def _as_jax_compares(api: str, first: tuple, other: tuple) -> tuple[tuple, tuple, str]:
    """Two branches (each ``((function, name), outputs)``) in the order and
    spelling of JAX 0.10.2's messages, and the API's name there: ``cond``
    compares true_fun with false_fun (refimpl's first branch is false_fun,
    JAX's branch 0), ``switch`` branch 0 with each other, spelt ``branch1``."""
    if first[0][1] == "false_fun":
        return other, first, "cond"
    (fun, name), outputs = other
    return first, ((fun, name.replace("branch ", "branch")), outputs), api.removeprefix("lax.")


def _branches_named(one: tuple, two: tuple) -> str:
    """The lines of JAX's messages saying where the two branches are defined."""
    return "".join(f"{name} is {_source_info(fun)}\n" for (fun, name), _ in (one, two))


def _raise_branch_trees_differ(api: str, first: tuple, other: tuple) -> NoReturn:
    one, two, words = _as_jax_compares(api, first, other)
    (_, name1), tree1 = one
    (_, name2), tree2 = two
    differences = [
        f"{name1} output{_at_path(path)} is a {a} but {name2} output{_at_path(path)} is a {b}, "
        f"so {why}"
        for path, a, b, why in pytree.treedef_differences(tree1, tree2)
    ]
    raise TypeError(
        f"{api}: {words} branch outputs must have the same pytree structure, but they differ:"
        f"\n\n{_branches_named(one, two)}\n{_listed(differences, capitalized=False)}\nRevise "
        f"{name1} and/or {name2} so that they have the same pytree structure. "
        f"({name1}: {tree1!r}, {name2}: {tree2!r})"
    )


def _raise_branch_types_differ(
    api: str, paths: Sequence[str], first: tuple, other: tuple
) -> NoReturn:
    one, two, words = _as_jax_compares(api, first, other)
    (_, name1), avals1 = one
    (_, name2), avals2 = two
    differences = [
        f"the output of {name1}{_at_path(path)} has type {_long(a)} but the corresponding "
        f"output of {name2} has type {_long(b)}{_mismatch(a, b)}"
        for path, a, b in zip(paths, avals1, avals2)
        if a.strip_weak() != b.strip_weak()  # JAX's typematch: weak types aside
    ]
    raise TypeError(
        f"{api}: {words} branches must have equal output types but they differ.\n\n"
        f"{_branches_named(one, two)}\n{_listed(differences)}\nRevise {name1} and/or {name2} "
        "so that all output types match."
    )


def _at_path(path: str) -> str:
    return f" at path {path}" if path else ""


def _source_info(fun: Callable) -> str:
    """Where a function is defined, as JAX's messages say it
    (``<lambda> at /path/file.py:12``)."""
    while isinstance(fun, functools.partial):
        fun = fun.func
    fun = inspect.unwrap(fun)
    code = getattr(fun, "__code__", None)
    if code is None:
        return "<unknown>"
    return f"{_function_name(fun)} at {code.co_filename}:{code.co_firstlineno}"


__all__ = ["cond", "fori_loop", "scan", "switch", "while_loop"]


# --- differentiation rules of while and cond (helpers: the shared section above) ------


def _while_jvp(primals, tangents, *, cond, body, cond_num_consts, body_num_consts):
    """Forward mode: the loop carries primals and tangents; the predicate reads
    only the primals."""
    cnc, bnc = cond_num_consts, body_num_consts
    cconsts, bconsts, init = _split3(primals, cnc, bnc)
    _, t_bconsts, t_init = _split3(tangents, cnc, bnc)
    nz_bconsts, nz_carry = _nonzero(t_bconsts), _nonzero(t_init)
    if not any(nz_bconsts) and not any(nz_carry):
        outs = while_p.bind(*primals, cond=cond, body=body, cond_num_consts=cnc,
                            body_num_consts=bnc)  # fmt: skip
        return outs, [Zero(tangent_aval(a)) for a in body.out_avals]
    while True:
        jp = rule_context.jvp_program(body, nz_bconsts + nz_carry, nz_carry)
        grown = [a or b for a, b in zip(nz_carry, jp.out_nonzero, strict=True)]
        if grown == nz_carry:
            break
        nz_carry = grown
    nk = len(init)
    ntb, ntk = sum(nz_bconsts), sum(nz_carry)
    p = list(range(bnc + nk))
    t = list(range(bnc + nk, bnc + nk + ntb + ntk))
    in_order = p[:bnc] + t[:ntb] + p[bnc:] + t[ntb:]
    new_body = rule_context.memo(
        jp.program,
        ("while_layout",),
        lambda: rule_context.permute_program(
            jp.program, in_order, list(range(len(jp.program.out_vars)))
        ),
    )
    # the tangents typed as the body takes its carry: a batched body may
    # return strong a carry it takes weak (see _while_abstract_eval)
    carry_avals = body.in_avals[bnc:]
    t_avals = [tangent_aval(a) for a, nz in zip(carry_avals, nz_carry) if nz]

    def make_cond() -> Program:
        extra = [Var(a) for a in t_avals]
        return Program(cond.in_vars + extra, cond.eqns, cond.out_vars, cond.const_vars,
                       cond.consts)  # fmt: skip

    new_cond = rule_context.memo(cond, ("while_cond", tuple(nz_carry)), make_cond)
    outs = while_p.bind(
        *cconsts,
        *bconsts,
        *[x for x, nz in zip(t_bconsts, nz_bconsts) if nz],
        *init,
        *_tangent_operands(t_init, nz_carry, carry_avals),
        cond=new_cond,
        body=new_body,
        cond_num_consts=cnc,
        body_num_consts=bnc + ntb,
    )
    return outs[:nk], rule_context.fill_zeros(outs[nk:], nz_carry, body.out_avals)


_WHILE_REVERSE = (
    "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop "
    "with dynamic start/stop values. Try using lax.scan, or using fori_loop with "
    "static start/stop."
)


def _while_linearize(primals, tangents, *, cond, body, cond_num_consts, body_num_consts):
    """Partial evaluation as in JAX: a known while computes the primal outputs;
    the tangents come from the whole forward-mode while, recorded where the
    tangents live (it recomputes the primal part). That is a valid linearization
    (``linearize`` works) but not a transposable one (reverse mode is the
    ValueError of the transpose rule)."""
    cnc, bnc = cond_num_consts, body_num_consts
    params = dict(cond=cond, body=body, cond_num_consts=cnc, body_num_consts=bnc)
    outs = while_p.bind(*primals, **params)
    if not any(_nonzero(tangents[cnc:])):
        return outs, [Zero(tangent_aval(a)) for a in body.out_avals]
    try:
        _, touts = _while_jvp(primals, tangents, **params)
    except TypeError as e:
        if not is_no_forward_mode_error(e):
            raise
        # A body with no forward mode (a custom_vjp): JAX records the tangent
        # loop unevaluated, so linearize succeeds and the error comes when the
        # linear function is applied (reverse mode: the while's own error).
        return outs, _deferred_tangents(str(e), tangents[cnc:], body.out_avals)
    # A carry the body returns unchanged leaves with the tangent it came in
    # with, outside the loop (JAX's forwarding): reverse mode then reaches
    # the while only through the carries it changes.
    t_init = tangents[cnc + bnc :]
    for i, (v_in, v_out) in enumerate(zip(body.in_vars[bnc:], body.out_vars, strict=True)):
        if v_in is v_out:
            touts[i] = t_init[i] if not isinstance(t_init[i], Zero) else touts[i]
    return outs, touts


def _while_transpose(cts, *args, cond, body, cond_num_consts, body_num_consts):
    raise ValueError(_WHILE_REVERSE)


#: The tangent outputs of a while whose body has no forward mode, under
#: linearize: evaluating them is that error, transposing them the while's.
while_no_jvp_p = Primitive("while_no_jvp", multiple_results=True)


def _deferred_tangents(message: str, tangents: Sequence[Any], out_avals: Sequence[Any]) -> list:
    inexact = [dtypes.is_inexact(a.dtype) for a in out_avals]
    t_avals = tuple(tangent_aval(a) for a, f in zip(out_avals, inexact, strict=True) if f)
    outs = iter(
        while_no_jvp_p.bind(
            *[t for t in tangents if not isinstance(t, Zero)], message=message, out_avals=t_avals
        )
    )
    return [next(outs) if f else Zero(tangent_aval(a)) for a, f in zip(out_avals, inexact)]


@while_no_jvp_p.def_abstract_eval
def _while_no_jvp_abstract_eval(*avals, message, out_avals):
    return list(out_avals)


def _while_no_jvp_raise(*args, message, out_avals, **_):
    raise no_forward_mode_error(message)


while_no_jvp_p.def_impl(_while_no_jvp_raise)
while_no_jvp_p.def_jvp(lambda primals, tangents, **params: _while_no_jvp_raise(**params))
while_no_jvp_p.def_batch(lambda args, dims, **params: _while_no_jvp_raise(**params))
while_no_jvp_p.def_lowering(lambda ctx, *args, **params: _while_no_jvp_raise(**params))


@while_no_jvp_p.def_transpose
def _while_no_jvp_transpose(cts, *args, message, out_avals):
    raise ValueError(_WHILE_REVERSE)


while_p.def_jvp(_while_jvp)
while_p.linearize_rule = _while_linearize
while_p.def_transpose(_while_transpose)


def _cond_jvp(primals, tangents, *, branches):
    """Forward mode: every branch pushed forward with the same nonzero
    tangents (the union of what the branches produce)."""
    index, ops = primals[0], primals[1:]
    nz = _nonzero(tangents[1:])
    out_nz = [False] * len(branches[0].out_vars)
    for b in branches:
        out_nz = [a or c for a, c in zip(out_nz, rule_context.jvp_program(b, nz).out_nonzero)]
    jps = [rule_context.jvp_program(b, nz, out_nz) for b in branches]
    outs = cond_p.bind(
        index,
        *ops,
        *_tangent_operands(tangents[1:], nz, branches[0].in_avals),
        branches=tuple(jp.program for jp in jps),
    )
    n_out = len(branches[0].out_vars)
    return outs[:n_out], rule_context.fill_zeros(outs[n_out:], out_nz, branches[0].out_avals)


def _shared_residual_slots(
    res_avals: list[list[ShapedArray]],
) -> tuple[list[ShapedArray], list[list[int]]]:
    """The residual slots the branches of a linearized cond share, and each
    branch's slot per residual: as JAX 0.10.2 merges them, a branch's k-th
    residual of a type takes the k-th slot of that type, so there are as many
    slots of a type as the branch with most residuals of it has (``switch``
    of ``sin``, ``cos``, ``sinh`` keeps one f32 slot, not three); the slots
    in the order the branches first need them. A branch not taken fills its
    slots with zeros."""
    order: dict[tuple[ShapedArray, int], int] = {}
    slots: list[list[int]] = []
    for avals in res_avals:
        seen: dict[ShapedArray, int] = {}
        mine = []
        for aval in avals:
            k = seen[aval] = seen.get(aval, -1) + 1
            mine.append(order.setdefault((aval, k), len(order)))
        slots.append(mine)
    return [aval for aval, _ in order], slots


def _cond_linearize(primals, tangents, *, branches):
    """Partial evaluation: a known cond returning the primal outputs and the
    residuals of every branch (zeros in the slots of the branches not taken),
    and a linear cond choosing the same branch's linear part."""
    index, ops = primals[0], primals[1:]
    nz = _nonzero(tangents[1:])
    n_out = len(branches[0].out_vars)
    out_nz = [False] * n_out
    for b in branches:
        out_nz = [a or c for a, c in zip(out_nz, rule_context.linearize_program(b, nz).out_nonzero)]
    lps = [rule_context.linearize_program(b, nz, out_nz) for b in branches]
    all_res, slots = _shared_residual_slots([lp.known.out_avals[n_out:] for lp in lps])

    def known_branch(i: int) -> Program:
        def fun(*xs):
            outs = tracing.eval_program_bind(lps[i].known, xs)
            res = [rule_context.zeros_like_aval(a) for a in all_res]
            for slot, value in zip(slots[i], outs[n_out:], strict=True):
                res[slot] = value
            return outs[:n_out] + res

        return rule_context.closed_program(fun, branches[i].in_avals, "cond known")

    def linear_branch(i: int) -> Program:
        t_avals = [tangent_aval(a) for a, z in zip(branches[i].in_avals, nz) if z]

        def fun(*xs):
            res = [xs[slot] for slot in slots[i]]
            return tracing.eval_program_bind(lps[i].linear, res + list(xs[len(all_res) :]))

        return rule_context.closed_program(fun, all_res + t_avals, "cond linear")

    key = ("cond_split", tuple(nz), tuple(out_nz))
    known = tuple(rule_context.memo(b, key + ("known",), lambda i=i: known_branch(i))
                  for i, b in enumerate(branches))  # fmt: skip
    linear = tuple(rule_context.memo(b, key + ("linear",), lambda i=i: linear_branch(i))
                   for i, b in enumerate(branches))  # fmt: skip
    outs = cond_p.bind(index, *ops, branches=known)
    touts = cond_p.bind(
        index,
        *outs[n_out:],
        *_tangent_operands(tangents[1:], nz, branches[0].in_avals),
        branches=linear,
    )
    return outs[:n_out], rule_context.fill_zeros(touts, out_nz, branches[0].out_avals)


def _cond_transpose(cts, index, *operands, branches):
    if isinstance(index, UndefinedPrimal):
        raise TypeError("cond: the branch index cannot be a linear operand")
    linear = [isinstance(x, UndefinedPrimal) for x in operands]
    # JAX's cond transpose: the branches take the cotangents with their own
    # weak types, accumulate each linear operand's cotangent as the caller's
    # accumulator for it (the operand's type as the backward pass gives it:
    # in a scan's transposed body a carry's is its cotangent's type) and
    # return the sums as they are, zeros of the accumulator's type; the
    # results have branch 0's types
    ct_avals = [_own_ct_aval(c, a) for c, a in zip(cts, branches[0].out_avals, strict=True)]
    acc_avals = [x.aval if isinstance(x, UndefinedPrimal) else a
                 for x, a in zip(operands, branches[0].in_avals, strict=True)]  # fmt: skip
    transposed = _typed_as_the_first(
        [
            rule_context.transpose_program(
                b,
                linear,
                own_types=True,
                ct_weak=[a.weak_type for a in ct_avals],
                linear_avals=acc_avals,
            )
            for b in branches
        ]
    )
    outs = cond_p.bind(
        index,
        *[x for x, lin in zip(operands, linear) if not lin],
        *[rule_context.match_aval(c, a) for c, a in zip(cts, ct_avals, strict=True)],
        branches=transposed,
    )
    return [None, *spread_cotangents(outs, linear, acc_avals)]


def _typed_as_the_first(branches: list[Program]) -> tuple[Program, ...]:
    """The branches, each returning what it does with the first's types
    where they differ in weak type only (JAX's cond types its results as its
    first branch's)."""
    want = branches[0].out_avals

    def retyped(branch: Program) -> Program:
        if branch.out_avals == want or any(
            got != w and not _weak_only_mismatch(got, w)
            for got, w in zip(branch.out_avals, want, strict=True)
        ):
            return branch

        def fun(*xs: Any) -> list[Any]:
            outs = tracing.eval_program_bind(branch, xs)
            return [rule_context.match_aval(o, w) for o, w in zip(outs, want, strict=True)]

        return rule_context.memo(
            branch,
            ("typed_as", tuple(want)),
            lambda: rule_context.closed_program(fun, branch.in_avals, "cond transpose"),
        )

    return (branches[0], *(retyped(b) for b in branches[1:]))


cond_p.def_jvp(_cond_jvp)
cond_p.linearize_rule = _cond_linearize
cond_p.def_transpose(_cond_transpose)
