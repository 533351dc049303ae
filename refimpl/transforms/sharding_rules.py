"""Sharding propagation: the sharding of each output of a traced Program,
from the shardings of its inputs (issue 33).

JAX 0.10.2 gives every value a sharding in its type when the mesh's axes are
``Explicit`` (``jax.make_mesh``'s default): each primitive has a *sharding
rule* that computes its output's spec from its operands' specs, or raises
``ShardingTypeError`` where the result would be ambiguous or illegal (a
mesh axis twice in one spec). With ``Auto`` axes the types carry no sharding
and XLA's propagation chooses; refimpl uses the same rules there but never
raises: where Explicit would raise, the output is replicated (``P()``), and
a duplicated mesh axis keeps its first dimension only (as XLA does for
``x[:, None] * x[None, :]``).

This module is a reference pass over a Program, kept apart from running it:
``jit`` and eager operations on sharded arrays (``transforms/sharded.py``)
call :func:`output_shardings` to type their results. Specs are handled here as
tuples with one entry per array axis: ``None`` (not split), a mesh axis name,
or a tuple of names (split over several axes, the first the major one).

The rule table (:data:`RULES`) is keyed by primitive name, one short function
per family; a primitive without a rule gives replicated outputs (``P()``).
docs/sharding_rules.md lists the rules, Explicit against Auto, and what is
not modelled.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from refimpl.core import Eqn, Literal, Program, ShapedArray, subprograms
from refimpl.errors import ShardingTypeError
from refimpl.primitives.linalg import AS_PRIMAL
from refimpl.sharding import AxisType, NamedSharding, PartitionSpec

__all__ = ["RULES", "output_shardings"]

#: One entry per array axis: None, a mesh axis name, or a tuple of names.
Spec = tuple[Any, ...]


class Meshless(tuple):
    """The spec of a value whose type names no mesh (JAX 0.10.2: an empty
    abstract mesh): constants, iotas, unsharded arguments, and what is
    computed from those alone. It reads as unsplit on every axis, but the
    rules that require operands sharded alike (``select_n``,
    ``concatenate``, ``sort``, a loop's carry) leave it out, as JAX does; an
    output of this kind is written ``P()``."""

    __slots__ = ()


class Broadcasted(tuple):
    """The spec of a ``broadcast_in_dim``'s result. Read as any spec, but
    where operands of an elementwise op disagree on Auto axes XLA keeps the
    other operands' entries (:func:`full_operands_win`)."""

    __slots__ = ()


@dataclass(frozen=True)
class Context:
    """What every rule may need besides its operands: the mesh and whether
    its axes are Explicit (rules raise) or Auto (rules fall back)."""

    mesh: Any
    explicit: bool


#: A rule: (context, equation, one spec per input) -> one spec per output.
Rule = Callable[[Context, Eqn, list[Spec]], list[Spec]]

RULES: dict[str, Rule] = {}

#: Under Auto axes, where a rule would raise on Explicit ones: what XLA's
#: propagation is known to choose instead, per primitive (default: replicated).
AUTO_FALLBACKS: dict[str, Rule] = {}

#: Primitives whose output is typed on the mesh whatever their operands.
TYPING_PRIMITIVES = {"sharding_constraint"}


def output_shardings(
    program: Program,
    in_shardings: Sequence[Any],
    where: str,
    const_shardings: Sequence[Any] = (),
) -> list:
    """The ``NamedSharding`` of each output of ``program``, as JAX 0.10.2 types it.

    Args:
        program: A traced Program (``jit``'s, ``make_program``'s).
        in_shardings: One ``NamedSharding`` or ``None`` (not split: replicated
            over the mesh) per entry of ``program.in_vars``; all the
            NamedShardings must share one mesh.
        where: The caller's name for the computation (``jit(f)``), added as a
            note to the errors raised.
        const_shardings: One ``NamedSharding`` or ``None`` per entry of
            ``program.const_vars`` (empty: all None): the sharding a
            closed-over array keeps in the types, as JAX 0.10.2 types one
            over Explicit axes (``sharded.const_shardings``).

    Returns:
        One ``NamedSharding`` over that mesh per output of ``program``
        (``P()`` where nothing better is known, e.g. outputs computed from
        constants), or ``[None] * n_outputs`` when no input is a NamedSharding.

    Raises:
        ShardingTypeError: The mesh's axes are Explicit and an operation's
            result cannot be typed (JAX 0.10.2's cases and words).

    Example:
        >>> import numpy as np, refimpl as ri
        >>> from refimpl.sharding import Mesh, NamedSharding, P
        >>> mesh = ri.make_mesh((1,), ('x',))
        >>> prog = ri.make_program(lambda x: (x * 2, x.sum()))(np.ones(4))
        >>> [s.spec for s in output_shardings(prog, [NamedSharding(mesh, P('x'))], 'f')]
        [P('x',), P()]
    """
    typed = _typed_outputs(program, in_shardings, where, const_shardings)
    if typed is None:
        return [None] * len(program.out_vars)
    ctx, named, out_specs = typed
    return [
        NamedSharding(ctx.mesh, PartitionSpec(*_as_written(ctx, spec, named))) for spec in out_specs
    ]


def first_output_on_mesh(
    program: Program, in_shardings: Sequence[Any], where: str, const_shardings: Sequence[Any]
) -> str | None:
    """JAX's text of the first output whose type names the mesh
    (``f32[8@x]({Explicit: ('x',)})``), or None when every output's type
    names none: what JAX 0.10.2 checks against its device assignment."""
    typed = _typed_outputs(program, in_shardings, where, const_shardings)
    if typed is None:
        return None
    ctx, _, out_specs = typed
    for var, spec in zip(program.out_vars, out_specs, strict=True):
        if not isinstance(spec, Meshless):
            return _typed_text(ctx, var.aval, spec, long=False)
    return None


def _typed_outputs(
    program: Program, in_shardings: Sequence[Any], where: str, const_shardings: Sequence[Any]
) -> tuple[Context, list[NamedSharding], list[Spec]] | None:
    """The context, the inputs' NamedShardings and each output's spec; None
    when no input or constant is typed over a mesh."""
    consts = list(const_shardings) or [None] * len(program.const_vars)
    named = [s for s in (*in_shardings, *consts) if isinstance(s, NamedSharding)]
    if not named:
        return None
    mesh = named[0].mesh
    for s in named[1:]:
        if s.mesh != mesh:
            raise ShardingTypeError(
                f"Mesh for all inputs should be equal. Got one mesh: {mesh} and another "
                f"mesh: {s.mesh}"
            )
    explicit = all(t == AxisType.Explicit for t in mesh.axis_types)
    ctx = Context(mesh, explicit)

    def spec_of(sharding: Any, var: Any) -> Spec:
        if isinstance(sharding, NamedSharding):
            return _full_spec(sharding, var.aval.ndim)
        return _meshless(var.aval)

    in_specs = [spec_of(s, v) for s, v in zip(in_shardings, program.in_vars)]
    const_specs = [spec_of(s, v) for s, v in zip(consts, program.const_vars, strict=True)]
    try:
        out_specs = propagate(ctx, program, in_specs, const_specs)
    except ShardingTypeError as error:
        error.add_note(f"(while typing the outputs of {where})")
        raise
    return ctx, named, out_specs


def propagate(
    ctx: Context,
    program: Program,
    in_specs: Sequence[Spec],
    const_specs: Sequence[Spec] = (),
) -> list[Spec]:
    """Run the rules over ``program``'s equations: the spec of each output.
    Constants (``const_vars``, literals) are :class:`Meshless`, but for the
    closed-over sharded arrays ``const_specs`` types (one per const var, or
    empty)."""
    env: dict[int, Spec] = {}
    for var, spec in zip(program.in_vars, in_specs):
        env[id(var)] = spec
    for k, var in enumerate(program.const_vars):
        env[id(var)] = const_specs[k] if const_specs else _meshless(var.aval)

    def read(atom: Any) -> Spec:
        if isinstance(atom, Literal) or id(atom) not in env:
            return _meshless(atom.aval)
        return env[id(atom)]

    for eqn in program.eqns:
        specs = [read(a) for a in eqn.inputs]
        outs = apply_rule(ctx, eqn, specs)
        for var, spec in zip(eqn.outputs, outs):
            env[id(var)] = spec
    return [read(a) for a in program.out_vars]


def apply_rule(ctx: Context, eqn: Eqn, specs: list[Spec]) -> list[Spec]:
    """One equation's output specs: its rule's, checked for a mesh axis named
    twice (JAX's "illegally sharded result"); under Auto axes a failing rule
    gives replicated outputs instead of raising. Operands that all name no
    mesh give outputs that name none (but for ``sharding_constraint``)."""
    name = eqn.primitive.name
    if all(isinstance(s, Meshless) for s in specs) and name not in TYPING_PRIMITIVES:
        return [_meshless(v.aval) for v in eqn.outputs]
    rule = RULES.get(name, replicated_rule)
    try:
        outs = rule(ctx, eqn, specs)
        for out_var, spec in zip(eqn.outputs, outs):
            if not _divides(ctx, spec, out_var.aval):
                raise ShardingTypeError(_uneven_result(ctx, eqn, specs, out_var.aval, spec))
            if _duplicated(spec):
                if not ctx.explicit:
                    continue
                raise ShardingTypeError(_illegal_result(eqn, specs, out_var.aval, spec))
    except ShardingTypeError:
        if ctx.explicit:
            raise
        outs = AUTO_FALLBACKS.get(name, replicated_rule)(ctx, eqn, specs)
    if not ctx.explicit:
        # XLA never splits an axis unevenly: what a fallback would, it leaves unsplit
        outs = [_even_only(ctx, _first_use_only(s), v.aval) for s, v in zip(outs, eqn.outputs)]
    return list(outs)


# --- spec helpers -----------------------------------------------------------


def _entry(entry: Any) -> Any:
    """One spec entry in normal form: None, a name, or a tuple of >= 2 names."""
    if isinstance(entry, (tuple, list)):
        names = tuple(entry)
        if not names:
            return None
        return names[0] if len(names) == 1 else names
    return entry


def _names(entry: Any) -> tuple[str, ...]:
    if entry is None:
        return ()
    return tuple(entry) if isinstance(entry, tuple) else (entry,)


def _full_spec(sharding: NamedSharding, ndim: int) -> Spec:
    """A sharding's spec padded with None to the array's rank."""
    spec = tuple(_entry(e) for e in sharding.spec)
    return spec + (None,) * (ndim - len(spec))


def _replicated(aval: Any) -> Spec:
    return (None,) * getattr(aval, "ndim", 0)


def _meshless(aval: Any) -> Meshless:
    return Meshless((None,) * getattr(aval, "ndim", 0))


def _typed(specs: Sequence[Spec]) -> list[Spec]:
    """The specs of the operands whose types name the mesh."""
    return [s for s in specs if not isinstance(s, Meshless)]


def _duplicated(spec: Spec) -> bool:
    names = [n for e in spec for n in _names(e)]
    return len(names) != len(set(names))


def _first_use_only(spec: Spec) -> Spec:
    """Under Auto axes: a mesh axis named twice keeps its first dimension."""
    seen: set[str] = set()
    out = []
    for entry in spec:
        kept = tuple(n for n in _names(entry) if n not in seen)
        seen.update(kept)
        out.append(_entry(kept))
    return _like(spec, out)


def _like(spec: Spec, entries: Sequence[Any]) -> Spec:
    """``entries`` as a spec of ``spec``'s kind (Meshless, Broadcasted, plain)."""
    return type(spec)(entries) if isinstance(spec, (Meshless, Broadcasted)) else tuple(entries)


def _as_written(ctx: Context, spec: Spec, inputs: list[NamedSharding]) -> Spec:
    """The spec as JAX 0.10.2 writes it: a value naming no mesh ``P()``; an
    Explicit type one entry per axis (``P('x', None)``); under Auto axes the
    first input's spec as the caller wrote it where it lays the output out
    alike (JAX reuses an input's sharding XLA's choice equals), else XLA's
    choice without trailing Nones (``P('x',)``)."""
    if isinstance(spec, Meshless):
        return ()
    if ctx.explicit:
        return spec
    for sharding in inputs:
        if len(sharding.spec) <= len(spec) and _full_spec(sharding, len(spec)) == spec:
            return tuple(sharding.spec)
    out = list(spec)
    while out and out[-1] is None:
        out.pop()
    return tuple(out)


def _aval_text(aval: Any, spec: Spec, long: bool = False) -> str:
    """JAX's type with its sharding: short ``f32[8@x,1]`` or long ``float32[8@x,1]``."""
    if isinstance(aval, ShapedArray):
        text = aval._long_text() if long else aval.str_short()
    else:
        text = str(aval)
    head = text[: text.index("[") + 1]
    dims = []
    for size, entry in zip(aval.shape, spec):
        names = _names(entry)
        if not names:
            dims.append(f"{size}")
        elif len(names) == 1:
            dims.append(f"{size}@{names[0]}")
        else:
            dims.append(f"{size}@({','.join(names)})")
    return f"{head}{','.join(dims)}]"


def _shaped_text(aval: Any, spec: Spec) -> str:
    """A type as JAX's repr writes it: ``ShapedArray(float32[8@x,4])``."""
    return f"ShapedArray({_aval_text(aval, spec, long=True)})"


def _illegal_result(eqn: Eqn, specs: list[Spec], out_aval: Any, out_spec: Spec) -> str:
    inputs = ", ".join(_aval_text(a.aval, s) for a, s in zip(eqn.inputs, specs))
    return (
        f"{eqn.primitive.name} operation with inputs: {inputs} produces an illegally "
        f"sharded result: {_aval_text(out_aval, out_spec)}"
    )


def _divides(ctx: Context, spec: Spec, aval: Any) -> bool:
    """Whether every split axis of ``aval`` is a whole number of blocks (a
    sharding that does not divide is no array layout: no rule may give one)."""
    shape = getattr(aval, "shape", ())
    return all(size % _pieces(ctx, e) == 0 for size, e in zip(shape, spec))


def _even_only(ctx: Context, spec: Spec, aval: Any) -> Spec:
    """Auto axes: ``spec`` with the entries its axes' sizes do not divide unsplit."""
    if _divides(ctx, spec, aval):
        return spec
    return _like(
        spec, [e if size % _pieces(ctx, e) == 0 else None for size, e in zip(aval.shape, spec)]
    )


def _uneven_result(ctx: Context, eqn: Eqn, specs: list[Spec], aval: Any, spec: Spec) -> str:
    inputs = ", ".join(_aval_text(a.aval, s) for a, s in zip(eqn.inputs, specs))
    return (
        f"{eqn.primitive.name} operation with inputs: {inputs} would split its result "
        f"unevenly: {_aval_text(aval, spec)} (a mesh axis on an axis its size does not divide)"
    )


def _pieces(ctx: Context, entry: Any) -> int:
    """How many blocks a spec entry cuts its axis into."""
    count = 1
    for name in _names(entry):
        count *= ctx.mesh.shape[name]
    return count


def _sharding_text(ctx: Context, spec: Spec) -> str:
    """A type's sharding as JAX 0.10.2 prints it in its errors (over the
    abstract mesh)."""
    sizes = ", ".join(f"'{n}': {ctx.mesh.shape[n]}" for n in ctx.mesh.axis_names)
    types = ", ".join(t.name for t in ctx.mesh.axis_types)
    comma = "," if len(ctx.mesh.axis_types) == 1 else ""
    return (
        f"NamedSharding(mesh=AbstractMesh({sizes}, axis_types=({types}{comma})), "
        f"spec={PartitionSpec(*spec)!r})"
    )


def _registrar(table: dict[str, Rule]) -> Callable[..., Callable[[Rule], Rule]]:
    """A decorator factory entering a rule into ``table`` under each name given."""

    def register(*names: str) -> Callable[[Rule], Rule]:
        def deco(rule: Rule) -> Rule:
            for name in names:
                table[name] = rule
            return rule

        return deco

    return register


_register = _registrar(RULES)


# --- rules ------------------------------------------------------------------


def replicated_rule(ctx: Context, eqn: Eqn, specs: list[Spec]) -> list[Spec]:
    """Every output replicated: constants (``iota``) and any primitive without
    a rule of its own. Example: ``iota -> P(None)``."""
    return [_replicated(v.aval) for v in eqn.outputs]


ELEMENTWISE = (
    "abs acos add and asin atan atan2 bessel_i0e bessel_i1e cbrt ceil clz complex conj "
    "copy cos cosh digamma div eq erf erf_inv erfc exp expm1 floor ge gt igamma igammac "
    "imag integer_pow is_finite le lgamma log log1p logistic lt max min mul mul_add ne "
    "neg nextafter not or polygamma population_count pow real reduce_precision "
    "regularized_incomplete_beta rem round rsqrt shift_left shift_right_arithmetic "
    "shift_right_logical sign sin sinh sqrt square stop_gradient sub tan tanh xor zeta "
    "random_gamma_grad threefry2x32"
).split()


@_register(*ELEMENTWISE)
def elementwise_rule(ctx: Context, eqn: Eqn, specs: list[Spec]) -> list[Spec]:
    """Per axis, the sharding the operands agree on; a size-1 unsplit axis
    does not count; two different mesh axes on one dimension raise (rank-0
    operands are left out). Example: ``mul f32[8@x] f32[8] -> f32[8@x]``."""
    shaped = [(a.aval.shape, s) for a, s in zip(eqn.inputs, specs) if a.aval.shape]
    if not shaped:
        return [_replicated(v.aval) for v in eqn.outputs]
    out: list[Any] = []
    for axis in range(len(shaped[0][0])):
        entries = [(shape[axis], spec[axis]) for shape, spec in shaped]
        if all(e == entries[0][1] for _, e in entries):
            out.append(entries[0][1])
            continue
        nontrivial = [e for size, e in entries if not (size == 1 and e is None)]
        if not nontrivial:
            out.append(None)
        elif all(e == nontrivial[0] for e in nontrivial):
            out.append(nontrivial[0])
        else:
            chosen = None
            for _, e in entries:
                if chosen is None and e is not None:
                    chosen = e
                elif chosen is not None and e is not None and e != chosen:
                    raise ShardingTypeError(
                        f"{eqn.primitive.name} got incompatible shardings for broadcasting: "
                        f"{', '.join(str(s) for _, s in shaped)}."
                    )
            out.append(chosen)
    return [tuple(out)] * len(eqn.outputs)


def _operand_rule(ctx: Context, eqn: Eqn, specs: list[Spec]) -> list[Spec]:
    return [specs[0]] * len(eqn.outputs)


@_register("convert_element_type", "reduce_precision", "copy", "name", "rev")
def same_as_operand_rule(ctx: Context, eqn: Eqn, specs: list[Spec]) -> list[Spec]:
    """The operand's sharding, unchanged (casts, ``rev``: JAX keeps the spec
    even where reversing moves data). Example: ``convert f32[8@x] -> i32[8@x]``."""
    return _operand_rule(ctx, eqn, specs)


@_register("bitcast_convert_type")
def bitcast_rule(ctx: Context, eqn: Eqn, specs: list[Spec]) -> list[Spec]:
    """The operand's sharding; a width change adds (unsplit) or drops the
    minor axis. Example: ``bitcast f32[8@x] -> u16[8@x,2]``."""
    ndim = eqn.outputs[0].aval.ndim
    spec = specs[0][:ndim] + (None,) * (ndim - len(specs[0]))
    return [spec]


@_register("clamp")
def clamp_rule(ctx: Context, eqn: Eqn, specs: list[Spec]) -> list[Spec]:
    """The middle operand's sharding (JAX does not broadcast the bounds'
    shardings). Example: ``clamp 0 f32[8@x] 1 -> f32[8@x]``."""
    return [specs[1]]


@_register("select_n")
def select_rule(ctx: Context, eqn: Eqn, specs: list[Spec]) -> list[Spec]:
    """The cases must all be sharded alike, and a non-scalar predicate as they
    are; the result is sharded as the cases, or as the predicate where all
    cases are constants. Example: ``select_n bool[8@x] f32[8@x] f32[8@x] ->
    f32[8@x]``."""
    which, cases = specs[0], specs[1:]
    typed = _typed(cases)
    if not typed:
        # constant cases: JAX's jnp.where and AD's transposes broadcast them
        # to the predicate's sharding (broadcast_in_dim's sharding parameter,
        # which refimpl's Programs do not carry)
        split_which = eqn.inputs[0].aval.shape and not isinstance(which, Meshless)
        return [which if split_which else cases[0]]
    first = typed[0]
    if any(c != first for c in typed[1:]):
        shown = ", ".join(_sharding_text(ctx, c) for c in cases)
        raise ShardingTypeError(f"select cases must have the same shardings, got [{shown}].")
    if eqn.inputs[0].aval.shape and not isinstance(which, Meshless) and which != first:
        raise ShardingTypeError(
            "select `which` must be scalar or have the same sharding as cases, got `which` "
            f"sharding {_sharding_text(ctx, which)} but case sharding "
            f"{_sharding_text(ctx, first)}."
        )
    return [first]


@_register("broadcast_in_dim")
def broadcast_in_dim_rule(ctx: Context, eqn: Eqn, specs: list[Spec]) -> list[Spec]:
    """Each operand axis keeps its sharding at its new position; new axes are
    unsplit. Example: ``broadcast_in_dim[(0,), (8, 3)] f32[8@x] -> f32[8@x,3]``."""
    positions = dict(zip(eqn.params["broadcast_dimensions"], specs[0]))
    return [Broadcasted(positions.get(i) for i in range(len(eqn.params["shape"])))]


@_register("transpose")
def transpose_rule(ctx: Context, eqn: Eqn, specs: list[Spec]) -> list[Spec]:
    """The operand's entries permuted. Example: ``transpose[(1, 0)] f32[8@x,4]
    -> f32[4,8@x]``."""
    return [tuple(specs[0][i] for i in eqn.params["permutation"])]


@_register("squeeze")
def squeeze_rule(ctx: Context, eqn: Eqn, specs: list[Spec]) -> list[Spec]:
    """The squeezed axes' entries dropped. Example: ``squeeze[(1,)] f32[8@x,1]
    -> f32[8@x]``."""
    dropped = {d % len(specs[0]) for d in eqn.params["dimensions"]} if specs[0] else set()
    return [tuple(e for i, e in enumerate(specs[0]) if i not in dropped)]


@_register(
    "reduce_sum",
    "reduce_max",
    "reduce_min",
    "reduce_prod",
    "reduce_and",
    "reduce_or",
    "reduce_xor",
    "argmax",
    "argmin",
)
def reduce_rule(ctx: Context, eqn: Eqn, specs: list[Spec]) -> list[Spec]:
    """The reduced axes' entries dropped, sharded or not (the partial results
    are combined across devices). Example: ``reduce_sum[(0,)] f32[8@x,4] -> f32[4]``."""
    axes = set(eqn.params["axes"])
    return [tuple(e for i, e in enumerate(specs[0]) if i not in axes)] * len(eqn.outputs)


@_register("reduce")
def variadic_reduce_rule(ctx: Context, eqn: Eqn, specs: list[Spec]) -> list[Spec]:
    """``reduce`` (operands, then their initial values): each operand's
    entries less the reduced dimensions. Example: ``reduce[(0,)] f32[8@x,4] 0.0
    -> f32[4]``."""
    dims = set(eqn.params.get("dimensions", eqn.params.get("axes", ())))
    n = len(eqn.outputs)
    return [tuple(e for i, e in enumerate(s) if i not in dims) for s in specs[:n]]


@_register("cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp")
def cumulative_rule(ctx: Context, eqn: Eqn, specs: list[Spec]) -> list[Spec]:
    """The operand's sharding; the scanned axis must be unsplit. Example:
    ``cumsum[axis=1] f32[8@x,4] -> f32[8@x,4]``; ``cumsum[axis=0] f32[8@x]`` raises."""
    axis = eqn.params["axis"]
    if specs[0][axis] is not None:
        raise ShardingTypeError(
            "Input should be unsharded over the axis being reduced. Got input "
            f"type={_aval_text(eqn.inputs[0].aval, specs[0])} and axis={axis}"
        )
    return [specs[0]]


@_register("sort")
def sort_rule(ctx: Context, eqn: Eqn, specs: list[Spec]) -> list[Spec]:
    """The operands' common sharding; the sorted axis must be unsplit and all
    operands sharded alike. Example: ``sort[dimension=1] f32[8@x,4] -> f32[8@x,4]``."""
    dim = eqn.params["dimension"]
    typed = _typed(specs)
    for spec in typed:
        if spec[dim] is not None:
            raise ShardingTypeError(
                "Arguments to sort must be unsharded over the sorting dimension. Got arg "
                f"sharding={_sharding_text(ctx, spec)} and sorting dimension={dim}"
            )
        if spec != typed[0]:
            shown = " ".join(_sharding_text(ctx, s) for s in typed)
            raise ShardingTypeError(f"Arguments to sort must have equal shardings, got: {shown}")
    return [typed[0]] * len(eqn.outputs)


@_register("top_k")
def top_k_rule(ctx: Context, eqn: Eqn, specs: list[Spec]) -> list[Spec]:
    """The operand's sharding for both outputs; the last (selected) axis must
    be unsplit. Example: ``top_k[k=2] f32[8@x,4] -> f32[8@x,2], i32[8@x,2]``."""
    if specs[0] and specs[0][-1] is not None:
        raise ShardingTypeError(
            "top_k: the last (selected) axis must be unsharded; got "
            f"{_aval_text(eqn.inputs[0].aval, specs[0])}"
        )
    return [specs[0], specs[0]]


@_register(
    "slice",
    "dynamic_slice",
    "pad",
    "reduce_window_sum",
    "reduce_window_max",
    "reduce_window_min",
    "reduce_window",
)
def varying_shape_rule(ctx: Context, eqn: Eqn, specs: list[Spec]) -> list[Spec]:
    """The operand's sharding, where every split axis whose size changes
    still divides evenly over its mesh axes (else it raises). Example:
    ``slice[2:6] f32[8@x]`` on a mesh x=4 -> ``f32[4@x]``; ``f32[3]`` raises."""
    operand, spec = eqn.inputs[0].aval, specs[0]
    what = {
        "slice": "slicing",
        "dynamic_slice": "dynamic_slice",
        "pad": "padding",
    }.get(eqn.primitive.name, "reduce_window")
    outs = []
    for out_var in eqn.outputs:
        out_shape = out_var.aval.shape
        for before, after, entry in zip(operand.shape, out_shape, spec):
            pieces = _pieces(ctx, entry)
            if before != after and entry is not None and after % pieces:
                raise ShardingTypeError(
                    f"{what} on sharded dims where out dim ({after}) is not divisible by mesh "
                    f"axes ({pieces}) with spec ({entry}) is not implemented. Got input "
                    f"type={_aval_text(operand, spec)} and output shape={tuple(out_shape)}"
                )
        outs.append(spec)
    return outs


@_register("dynamic_update_slice")
def dynamic_update_slice_rule(ctx: Context, eqn: Eqn, specs: list[Spec]) -> list[Spec]:
    """The operand's sharding; the update must be sharded alike. Example:
    ``dynamic_update_slice f32[8@x] f32[4@x] i -> f32[8@x]``."""
    operand, update = specs[:2]
    if update != operand or isinstance(update, Meshless) != isinstance(operand, Meshless):
        raise ShardingTypeError(
            "dynamic_update_slice operand sharding must be equal to update sharding, got "
            f"operand sharding {_typed_text(ctx, eqn.inputs[0].aval, operand)} and update "
            f"sharding {_typed_text(ctx, eqn.inputs[1].aval, update)}."
        )
    return [operand]


def _typed_text(ctx: Context, aval: Any, spec: Spec, long: bool = True) -> str:
    """JAX's type with its mesh's axis types: ``float32[4,4@x]({Explicit: ('x',)})``."""
    axes = "{}" if isinstance(spec, Meshless) else f"{{Explicit: {tuple(ctx.mesh.axis_names)}}}"
    return f"{_aval_text(aval, spec, long=long)}({axes})"


@_register("concatenate")
def concatenate_rule(ctx: Context, eqn: Eqn, specs: list[Spec]) -> list[Spec]:
    """The operands' common sharding (they must agree, the joined axis
    included). Example: ``concatenate[0] f32[8@x] f32[8@x] -> f32[16@x]``."""
    typed = _typed(specs)
    if any(s != typed[0] for s in typed[1:]):
        shown = ", ".join(_sharding_text(ctx, s) for s in specs)
        raise ShardingTypeError(
            f"All operands should have the same sharding. Got shardings {shown}"
        )
    return [typed[0]]


@_register("dot_general")
def dot_general_rule(ctx: Context, eqn: Eqn, specs: list[Spec]) -> list[Spec]:
    """Batch axes (lhs and rhs agree), then lhs's free axes, then rhs's; a
    contracting axis split on both sides, or split differently, raises.
    Example: ``dot_general f32[8@x,4] f32[4,3] -> f32[8@x,3]``. A given
    ``out_sharding`` is the result's, unchecked (JAX 0.10.2); the marker a
    transpose rule passes (``AS_PRIMAL``: the cotangent typed as its primal)
    sums contracted axes however they are split: ``dot_general[AS_PRIMAL]
    f32[8@x,4] f32[8@x,3] (contracting 0) -> f32[4,3]``."""
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    lhs, rhs = specs
    out_sharding = eqn.params.get("out_sharding")
    if isinstance(out_sharding, NamedSharding):
        return [_full_spec(out_sharding, eqn.outputs[0].aval.ndim)]
    if out_sharding is AS_PRIMAL:
        return [_dot_as_primal(lhs, rhs, lc, rc, lb, rb)]
    lhs_batch, rhs_batch = tuple(lhs[i] for i in lb), tuple(rhs[i] for i in rb)
    lhs_con, rhs_con = tuple(lhs[i] for i in lc), tuple(rhs[i] for i in rc)
    _check_specs_match(
        lhs_batch,
        rhs_batch,
        "dot_general requires lhs batch dimensions and rhs batch dimensions to have the "
        f"consistent sharding, got {lhs_batch} and {rhs_batch}.",
    )
    _check_specs_match(
        lhs_con,
        rhs_con,
        "dot_general requires contracting dimensions to have consistent sharding, got "
        f"{lhs_con} and {rhs_con}.",
    )
    for a, b in zip(lhs_con, rhs_con):
        if a is not None and b is not None:
            raise ShardingTypeError(
                "Contracting dimensions are sharded and it is ambiguous how the output should "
                "be sharded. Please specify the output sharding via the `out_sharding` "
                f"parameter. Got lhs_contracting_spec={lhs_con} and "
                f"rhs_contracting_spec={rhs_con}"
            )
    lhs_free = tuple(e for i, e in enumerate(lhs) if i not in set(lc) | set(lb))
    rhs_free = tuple(e for i, e in enumerate(rhs) if i not in set(rc) | set(rb))
    return [lhs_batch + lhs_free + rhs_free]


def _dot_as_primal(lhs: Spec, rhs: Spec, lc, rc, lb, rb) -> Spec:
    """A cotangent's product typed as its primal: batch axes (the split entry
    of the two), the free axes, contracted axes summed (whatever their split)."""
    batch = tuple(
        a if a is not None else b for a, b in zip((lhs[i] for i in lb), (rhs[i] for i in rb))
    )
    lhs_free = tuple(e for i, e in enumerate(lhs) if i not in set(lc) | set(lb))
    rhs_free = tuple(e for i, e in enumerate(rhs) if i not in set(rc) | set(rb))
    return batch + lhs_free + rhs_free


def _check_specs_match(lhs: Spec, rhs: Spec, message: str) -> None:
    if any(a is not None and b is not None and a != b for a, b in zip(lhs, rhs)):
        raise ShardingTypeError(message)


@_register("sharding_constraint")
def sharding_constraint_rule(ctx: Context, eqn: Eqn, specs: list[Spec]) -> list[Spec]:
    """The constraint's own spec. Example: ``sharding_constraint[P(None, 'x')]
    f32[8@x,4] -> f32[8,4@x]``."""
    sharding = eqn.params["sharding"]
    if not isinstance(sharding, NamedSharding):
        return replicated_rule(ctx, eqn, specs)
    return [_full_spec(sharding, eqn.outputs[0].aval.ndim)]


@_register("optimization_barrier")
def identity_rule(ctx: Context, eqn: Eqn, specs: list[Spec]) -> list[Spec]:
    """Each operand's sharding to its output. Example: ``optimization_barrier
    f32[8@x] i32[] -> f32[8@x], i32[]``."""
    return list(specs)


# --- indexing ---------------------------------------------------------------


def _gather_refusal(eqn: Eqn, specs: list[Spec]) -> ShardingTypeError:
    operand, indices = (_shaped_text(a.aval, s) for a, s in zip(eqn.inputs, specs))
    return ShardingTypeError(
        "Use `.at[...].get(out_sharding=)` to provide output PartitionSpec for the gather "
        "indexing as out sharding could not be resolved unambiguously (or would require "
        f"collectives on inputs). Got operand={operand}, indices={indices}"
    )


@_register("general_gather")
def gather_rule(ctx: Context, eqn: Eqn, specs: list[Spec]) -> list[Spec]:
    """``lax.gather``: the operand's axes sliced into must be unsplit (or taken
    whole), the indices unsplit but for batching axes (which must agree with
    the operand's); then offset axes carry the operand's entries and the
    other axes the indices'. Example: ``x[:, i]`` of ``f32[8@x,4]`` -> ``f32[8@x,2]``."""
    dn, sizes = eqn.params["dimension_numbers"], eqn.params["slice_sizes"]
    operand_aval = eqn.inputs[0].aval
    operand, indices = specs[0], list(specs[1])
    if all(e is None for e in operand) and all(e is None for e in indices):
        return [_replicated(eqn.outputs[0].aval)]
    batching = list(zip(dn.operand_batching_dims, dn.start_indices_batching_dims))
    # JAX checks the axes in start_index_map only, then asserts the others
    # (an AssertionError for a window narrower than a split offset axis):
    # refimpl refuses every axis sliced narrower than a split one
    whole_or_unsplit = all(
        sizes[i] == operand_aval.shape[i] or operand[i] is None
        for i in range(len(operand))
        if i not in dn.operand_batching_dims
    )
    batches_agree = all(
        indices[j] == operand[i] or operand[i] is None or indices[j] is None for i, j in batching
    )
    indices_unsplit = all(
        e is None for j, e in enumerate(indices) if j not in dn.start_indices_batching_dims
    )
    if not (whole_or_unsplit and batches_agree and indices_unsplit):
        raise _gather_refusal(eqn, specs)
    for i, j in batching:
        indices[j] = indices[j] or operand[i]
    skipped = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
    offset_entries = iter(operand[i] for i in range(len(operand)) if i not in skipped)
    index_entries = iter(indices)
    out = [
        next(offset_entries) if k in dn.offset_dims else next(index_entries)
        for k in range(eqn.outputs[0].aval.ndim)
    ]
    return [tuple(out)]


@_register("gather_along_axis")
def take_rule(ctx: Context, eqn: Eqn, specs: list[Spec]) -> list[Spec]:
    """refimpl's ``take`` along one axis (JAX: a gather with one collapsed
    axis): that axis of the operand and the indices must be unsplit; the
    result is the operand's entries around the indices' (unsplit) axes.
    Example: ``x[:, i]`` of ``f32[8@x,4]`` -> ``f32[8@x,2]``."""
    axis = eqn.params["axis"]
    operand, indices = specs
    if operand[axis] is not None or any(e is not None for e in indices):
        raise _gather_refusal(eqn, specs)
    return [operand[:axis] + indices + operand[axis + 1 :]]


def _scatter_refusal(eqn: Eqn, specs: list[Spec]) -> ShardingTypeError:
    operand, indices, updates = (_shaped_text(a.aval, s) for a, s in zip(eqn.inputs, specs))
    return ShardingTypeError(
        "Use `.at[...].set/add/mul/...(out_sharding=)` to provide output PartitionSpec for "
        "the scatter update as out sharding could not be resolved unambiguously (or would "
        f"require collectives on inputs). Got operand={operand}, indices={indices}, "
        f"updates={updates}"
    )


@_register(
    "general_scatter",
    "general_scatter_add",
    "general_scatter_mul",
    "general_scatter_min",
    "general_scatter_max",
    "general_scatter_sub",
    "general_scatter_apply",
)
def scatter_rule(ctx: Context, eqn: Eqn, specs: list[Spec]) -> list[Spec]:
    """``lax.scatter*`` (JAX 0.10.2's rule, the gather's inverse): batching
    axes may be split, alike wherever split (operand, indices, updates); a
    window axis split in the operand or the updates must be whole and split
    alike in both; inserted window axes, the indices' other axes and the
    updates' scatter axes unsplit. Result: the operand's entries, its
    unsplit batching and window axes taking the split found. Example:
    ``scatter_add f32[8,4@x] i32[2,1] f32[2,4@x] -> f32[8,4@x]``."""
    dn = eqn.params["dimension_numbers"]
    operand_aval, indices_aval, updates_aval = (a.aval for a in eqn.inputs)
    operand, indices, updates = specs
    index_vector_dim = indices_aval.ndim - 1
    batching = list(
        zip(
            dn.operand_batching_dims,
            dn.scatter_indices_batching_dims,
            _updates_batching_dims(dn, index_vector_dim, updates_aval.ndim),
        )
    )
    skipped = set(dn.inserted_window_dims) | set(dn.operand_batching_dims)
    windows = list(zip(dn.update_window_dims, [i for i in range(len(operand)) if i not in skipped]))
    updates_batching = {u for _, _, u in batching}
    ok = (
        all(
            len({e for e in (operand[o], indices[i], updates[u]) if e is not None}) <= 1
            for o, i, u in batching
        )
        and all(
            (updates_aval.shape[u] == operand_aval.shape[o] and updates[u] == operand[o])
            or (updates[u] is None and operand[o] is None)
            for u, o in windows
        )
        and all(operand[o] is None for o in dn.inserted_window_dims)
        and all(
            e is None
            for u, e in enumerate(updates)
            if u not in updates_batching and u not in dn.update_window_dims
        )
        and all(
            e is None
            for i, e in enumerate(indices[:index_vector_dim])
            if i not in dn.scatter_indices_batching_dims
        )
        and indices[index_vector_dim] is None
    )
    if not ok:
        raise _scatter_refusal(eqn, specs)
    out = list(operand)
    for o, i, u in batching:
        out[o] = out[o] or indices[i] or updates[u]
    for u, o in windows:
        out[o] = out[o] or updates[u]
    return [tuple(out)]


def _updates_batching_dims(dn: Any, index_vector_dim: int, updates_ndim: int) -> list[int]:
    """The updates' axis for each of the indices' batching axes: the updates'
    scatter axes are the indices' axes but the index vector, in order."""
    scatter_axes: list[int | None] = list(range(index_vector_dim))
    for k in dn.update_window_dims:
        scatter_axes.insert(k, None)
    assert len(scatter_axes) == updates_ndim
    return [scatter_axes.index(i) for i in dn.scatter_indices_batching_dims]


@_register("scatter")
def scatter_along_axis_rule(ctx: Context, eqn: Eqn, specs: list[Spec]) -> list[Spec]:
    """refimpl's scatter along one axis (``x.at[i].set``): that axis of the
    operand, the indices and the updates' index axes must be unsplit; the
    result is sharded as the operand. Example: ``x.at[i].set(u)`` of
    ``f32[4,8@x]`` along axis 0 -> ``f32[4,8@x]``."""
    axis = eqn.params["axis"]
    operand, indices, updates = specs[:3]
    n_index = eqn.inputs[1].aval.ndim
    around = operand[:axis] + (None,) * n_index + operand[axis + 1 :]
    if operand[axis] is not None or any(e is not None for e in indices):
        raise _scatter_refusal(eqn, specs)
    for mine, theirs in zip(around, updates):
        if theirs is not None and theirs != mine:
            raise _scatter_refusal(eqn, specs)
    return [operand]


# --- sub-programs -----------------------------------------------------------


def _only_subprogram(eqn: Eqn) -> Program | None:
    found = subprograms(eqn)
    if len(found) != 1:
        return None
    (program,) = found
    if len(program.in_vars) != len(eqn.inputs) or len(program.out_vars) != len(eqn.outputs):
        return None
    return program


@_register(
    "jit",
    "checkpoint",
    "remat_opt",
    "custom_jvp_call",
    "custom_vjp_call",
    "composite",
    "custom_vmap_call",
    "invertible",
)
def call_rule(ctx: Context, eqn: Eqn, specs: list[Spec]) -> list[Spec]:
    """A call of one sub-program (a nested ``jit``, ``checkpoint``, a custom
    derivative's primal): the sub-program's own output shardings. Example:
    ``jit{x * 3} f32[8@x] -> f32[8@x]``."""
    program = _only_subprogram(eqn)
    if program is None:
        return replicated_rule(ctx, eqn, specs)
    return propagate(ctx, program, specs)


def _join_one(ctx: Context, a: Spec, b: Spec) -> Spec | None:
    """One value typed twice: one that names no mesh takes the other's type;
    else they must be equal (None: they are not)."""
    if isinstance(a, Meshless):
        return b
    if isinstance(b, Meshless) or a == b:
        return a
    return None


def _join(ctx: Context, eqn: Eqn, first: list[Spec], other: list[Spec]) -> list[Spec]:
    """cond's branches' typings of its outputs (``first`` the false branch's):
    as :func:`_join_one`; JAX 0.10.2 raises a ``TypeError`` where they
    differ; under Auto a disagreement is replicated."""
    out = []
    for k, (a, b) in enumerate(zip(first, other)):
        joined = _join_one(ctx, a, b)
        if joined is None:
            if ctx.explicit:
                aval = eqn.outputs[k].aval
                raise TypeError(
                    "cond branches must have equal output types but they differ.\n\n"
                    f"The output of true_fun has type {_aval_text(aval, b, long=True)} but "
                    "the corresponding output of false_fun has type "
                    f"{_aval_text(aval, a, long=True)}."
                )
            joined = (None,) * len(a)
        out.append(joined)
    return out


def _loop_carry(
    ctx: Context, eqn: Eqn, loop: str, carry_in: list[Spec], carry_out: list[Spec]
) -> list[Spec]:
    """A loop's carry: the body must give it back typed as it came in (an
    input naming no mesh takes the body's type). JAX 0.10.2 raises a
    ``TypeError`` otherwise; under Auto a disagreement is replicated."""
    out = []
    for k, (a, b) in enumerate(zip(carry_in, carry_out)):
        joined = _join_one(ctx, a, b)
        if joined is None:
            if ctx.explicit:
                aval = eqn.outputs[k].aval
                raise TypeError(
                    f"{loop} body function carry input and carry output must have equal "
                    "types, but they differ:\n\nThe input carry component "
                    f"{k} has type {_aval_text(aval, a, long=True)} but the corresponding "
                    f"output carry component has type {_aval_text(aval, b, long=True)}.\n\n"
                    "Revise the function so that all output types match the corresponding "
                    "input types."
                )
            joined = (None,) * len(a)
        out.append(joined)
    return out


@_register("cond")
def cond_rule(ctx: Context, eqn: Eqn, specs: list[Spec]) -> list[Spec]:
    """Each branch typed with the operands' shardings; the branches must
    agree (JAX types ``cond``'s outputs as its branches'). Example:
    ``cond i{x + 1 | x - 1} f32[8@x] -> f32[8@x]``."""
    outs = None
    for branch in eqn.params["branches"]:
        typed = propagate(ctx, branch, specs[1:])
        outs = typed if outs is None else _join(ctx, eqn, outs, typed)
    return outs if outs is not None else replicated_rule(ctx, eqn, specs)


@_register("while")
def while_rule(ctx: Context, eqn: Eqn, specs: list[Spec]) -> list[Spec]:
    """The carry's sharding, which the body must keep (Explicit axes);
    under Auto a carry the body reshards is replicated. Example:
    ``while{c * 2} f32[8@x] -> f32[8@x]``."""
    n_consts = eqn.params["cond_num_consts"] + eqn.params["body_num_consts"]
    body_consts = specs[eqn.params["cond_num_consts"] : n_consts]
    carry = specs[n_consts:]
    for _ in range(2):  # the carry's type, then a check that the body keeps it
        out = propagate(ctx, eqn.params["body"], body_consts + carry)
        carry = _loop_carry(ctx, eqn, "while_loop", carry, out)
    return carry


@_register("scan")
def scan_rule(ctx: Context, eqn: Eqn, specs: list[Spec]) -> list[Spec]:
    """The carry keeps its sharding (as ``while``); each ``x`` slice loses
    the scanned (leading) axis and each stacked ``y`` gains an unsplit one.
    The ``xs`` must be unsplit along the scanned axis on Explicit axes (a
    ``ValueError``, as JAX's ``lax.scan``). Example: ``scan{c + x, x * 2}
    0.0 f32[4,8@x] -> f32[8@x], f32[4,8@x]``."""
    n_consts, n_carry = eqn.params["num_consts"], eqn.params["num_carry"]
    consts = specs[:n_consts]
    carry = specs[n_consts : n_consts + n_carry]
    stacked = specs[n_consts + n_carry :]
    if ctx.explicit and any(s and s[0] is not None for s in stacked):
        raise ValueError(
            "0th dimension of all xs should be replicated. Got "
            + ", ".join(str(PartitionSpec(*s)) for s in stacked)
        )
    xs = [type(s)(s[1:]) for s in stacked]
    for _ in range(2):  # the carry's type, then a check that the body keeps it
        out = propagate(ctx, eqn.params["body"], consts + carry + xs)
        carry = _loop_carry(ctx, eqn, "scan", carry, out[:n_carry])
    return carry + [_stacked(s) for s in out[n_carry:]]


def _stacked(spec: Spec) -> Spec:
    """A scan's stacked output: an unsplit leading axis before the body's."""
    out = (None,) + tuple(spec)
    return Meshless(out) if isinstance(spec, Meshless) else out


# --- reshape ----------------------------------------------------------------


class _Unsupported(Exception):
    """A reshape JAX cannot type on Explicit axes."""


def _split_groups(old: tuple[int, ...], new: tuple[int, ...]) -> list[Any] | None:
    """``new`` read as ``old`` with one axis split into consecutive axes: per
    old axis its size (kept) or the list of new sizes it becomes. None if
    ``new`` is no such split; ``_Unsupported`` if it splits two axes.
    Trailing size-1 axes common to both are set aside first, and a split
    axis's group takes the size-1 axes after it unless the next new size is
    the next old one (JAX 0.10.2's reading)."""
    if len(new) <= len(old):
        return None
    ones = 0
    while old and new and old[-1] == 1 and new[-1] == 1:
        old, new, ones = old[:-1], new[:-1], ones + 1
    groups: list[Any] = []
    i = j = 0
    split_seen = False
    while j < len(new):
        if i >= len(old):
            return None
        if old[i] == new[j]:
            groups.append(old[i])
            i, j = i + 1, j + 1
            continue
        if split_seen:
            raise _Unsupported
        split_seen = True
        group = [new[j]]
        while True:
            product = _product(group)
            more_ones = j + 1 < len(new) and new[j + 1] == 1
            if product == old[i] and not more_ones:
                break
            if product > old[i]:
                return None
            if product == old[i] and i + 1 < len(old) and new[j + 1] == old[i + 1]:
                break
            j += 1
            if j >= len(new):
                return None
            group.append(new[j])
        groups.append(group)
        i, j = i + 1, j + 1
    if i != len(old):
        return None
    return groups + [1] * ones


def _product(sizes: list[int]) -> int:
    out = 1
    for n in sizes:
        out *= n
    return out


def _spread(ctx: Context, names: tuple[str, ...], sizes: list[int]) -> list[Any]:
    """Mesh axes ``names`` (major first) laid over consecutive array axes of
    ``sizes``: each array axis takes names while its size still divides;
    a size a name does not divide is unsupported."""
    left = list(names)
    out = []
    for size in sizes:
        taken: list[str] = []
        while size > 1 and left:
            size, remainder = divmod(size, ctx.mesh.shape[left[0]])
            if remainder:
                raise _Unsupported
            taken.append(left.pop(0))
        out.append(_entry(tuple(taken)))
    if left:
        raise _Unsupported
    return out


def _reshape_spec(ctx: Context, old: tuple[int, ...], new: tuple[int, ...], spec: Spec) -> Spec:
    if all(e is None for e in spec):
        return (None,) * len(new)
    if [n for n in old if n != 1] == [n for n in new if n != 1]:
        # only size-1 axes come or go: the others keep their entries
        kept = iter(e for n, e in zip(old, spec) if n != 1)
        return tuple(None if n == 1 else next(kept) for n in new)
    groups = _split_groups(old, new)
    if groups is not None:
        out: list[Any] = []
        for group, entry in zip(groups, spec):
            if not isinstance(group, list):
                out.append(entry)
            elif entry is None:
                out.extend([None] * len(group))
            else:
                out.extend(_spread(ctx, _names(entry), group))
        return tuple(out)
    groups = _split_groups(new, old) if len(new) < len(old) else None
    if groups is None:
        raise _Unsupported
    entries = iter(spec)
    out = []
    for size, group in zip(new, groups):
        if not isinstance(group, list):
            out.append(next(entries))
            continue
        merged = [next(entries) for _ in group]
        if all(e is None for e in merged):
            out.append(None)
            continue
        # the merged axes' mesh axes in order; an unsplit axis may only trail
        flat: list[str | None] = [n for e in merged for n in (_names(e) or (None,))]
        while flat[-1] is None:
            flat.pop()
        names = tuple(n for n in flat if n is not None)
        if len(names) != len(flat):
            raise _Unsupported
        out.extend(_spread(ctx, names, [size]))
    return tuple(out)


def _reshape_without_ones(
    ctx: Context, old: tuple[int, ...], new: tuple[int, ...], spec: Spec
) -> Spec:
    """Beyond JAX: the reshape read without its size-1 axes (unsplit), which
    refimpl's own decompositions add where JAX's jaxprs have none
    (``jnp.tile``: ``f32[8@x,4] -> f32[1,8@x,1,4]``, a broadcast, then
    ``-> f32[8,8]``); ``_Unsupported`` if that fails too or a size-1 axis is split.
    On Explicit axes the split axes must also come through whole (only
    unsplit axes merged or split): JAX refuses ``f32[4@x,8] -> f32[1,32]``,
    which XLA (Auto axes) lays out as ``f32[1,32@x]``."""
    if 1 not in old and 1 not in new:
        raise _Unsupported
    if any(e is not None for n, e in zip(old, spec) if n == 1):
        raise _Unsupported
    old_kept = tuple(n for n in old if n != 1)
    new_kept = tuple(n for n in new if n != 1)
    spec_kept = tuple(e for n, e in zip(old, spec) if n != 1)
    kept = _reshape_spec(ctx, old_kept, new_kept, spec_kept)
    if ctx.explicit and _split_axes(old_kept, spec_kept) != _split_axes(new_kept, kept):
        raise _Unsupported
    entries = iter(kept)
    return tuple(None if n == 1 else next(entries) for n in new)


def _split_axes(shape: tuple[int, ...], spec: Spec) -> list[tuple[int, Any]]:
    """The (size, entry) of each split axis, in order."""
    return [(n, e) for n, e in zip(shape, spec) if e is not None]


@_register("reshape")
def reshape_rule(ctx: Context, eqn: Eqn, specs: list[Spec]) -> list[Spec]:
    """Unsplit operands, and size-1 axes coming or going, are simple; else
    only one axis may be split into several (its mesh axes spread over the
    new axes, major first, each taking what divides it) or several merged
    into one (their mesh axes joined, the unsplit ones only at the end);
    others raise. Example: ``reshape f32[8@x] -> f32[4@x,2]`` on x=4."""
    old = eqn.inputs[0].aval.shape
    new = tuple(eqn.params["new_sizes"])
    try:
        return [_reshape_spec(ctx, old, new, specs[0])]
    except _Unsupported:
        pass
    try:
        return [_reshape_without_ones(ctx, old, new, specs[0])]
    except _Unsupported:
        raise ShardingTypeError(
            "This reshape is not supported. Please specify the sharding of the output via the "
            "`out_sharding` argument of jax.lax.reshape. Got operand type: "
            f"{_aval_text(eqn.inputs[0].aval, specs[0], long=True)}, new sizes: {new}"
        ) from None


# --- Auto axes: XLA's choices where Explicit axes raise ---------------------


_auto_fallback = _registrar(AUTO_FALLBACKS)


@_auto_fallback(
    "dynamic_update_slice",
    "scatter",
    "general_scatter",
    "general_scatter_add",
    "general_scatter_mul",
    "general_scatter_min",
    "general_scatter_max",
    "general_scatter_sub",
    "general_scatter_apply",
    "cumsum",
    "cumprod",
    "cummax",
    "cummin",
    "cumlogsumexp",
)
def keep_operand_layout(ctx: Context, eqn: Eqn, specs: list[Spec]) -> list[Spec]:
    """Auto: an update or a cumulative op keeps its operand's layout (XLA
    communicates instead). Example: ``cumsum f32[8@x]`` -> ``f32[8@x]``."""
    return [specs[0]] * len(eqn.outputs)


@_auto_fallback("select_n")
def first_typed_case(ctx: Context, eqn: Eqn, specs: list[Spec]) -> list[Spec]:
    """Auto: cases sharded differently take the first split entry per axis.
    Example: ``select_n p f32[8@x] f32[8]`` -> ``f32[8@x]``."""
    cases = _typed(specs[1:]) or specs[1:]
    out = tuple(next((c[i] for c in cases if c[i] is not None), None) for i in range(len(cases[0])))
    return [_first_use_only(out)]


@_auto_fallback(*ELEMENTWISE)
def full_operands_win(ctx: Context, eqn: Eqn, specs: list[Spec]) -> list[Spec]:
    """Auto: where the operands disagree on an axis, the entry the operands
    that are no broadcast's result agree on (else the broadcasts'), unsplit
    where those differ too, as XLA. Example: ``add f32[3,2@y]`` and a
    broadcast ``f32[3,2@x]`` -> ``f32[3,2@y]``."""
    shaped = [s for a, s in zip(eqn.inputs, specs) if a.aval.shape]
    if not shaped:
        return [_replicated(v.aval) for v in eqn.outputs]
    full = [s for s in shaped if not isinstance(s, Broadcasted)]
    broadcast = [s for s in shaped if isinstance(s, Broadcasted)]
    out = []
    for axis in range(len(shaped[0])):
        entry = None
        for group in (full, broadcast):
            split = {s[axis] for s in group if s[axis] is not None}
            if split:
                entry = split.pop() if len(split) == 1 else None
                break
        out.append(entry)
    return [_first_use_only(tuple(out))] * len(eqn.outputs)


@_auto_fallback("concatenate")
def agreed_entries(ctx: Context, eqn: Eqn, specs: list[Spec]) -> list[Spec]:
    """Auto: operands sharded differently give, per axis, the entry the split
    ones agree on (unsplit where two differ), as XLA. Example:
    ``concatenate f32[2,4@y] f32[2@x,4]`` -> ``f32[4@x,8@y]``."""
    typed = _typed(specs) or specs
    out = []
    for i in range(len(typed[0])):
        split = {s[i] for s in typed if s[i] is not None}
        out.append(split.pop() if len(split) == 1 else None)
    return [_first_use_only(tuple(out))]


@_auto_fallback("general_gather")
def gather_keeps_whole_axes(ctx: Context, eqn: Eqn, specs: list[Spec]) -> list[Spec]:
    """Auto: a gather the Explicit rule refuses keeps the operand's entries on
    the offset axes it takes whole, the others unsplit. Example: ``gather``
    of rows of ``f32[4@x,8@y]`` -> ``f32[2,8@y]``."""
    dn, sizes = eqn.params["dimension_numbers"], eqn.params["slice_sizes"]
    operand_aval, operand = eqn.inputs[0].aval, specs[0]
    skipped = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
    offset = iter(
        operand[i] if sizes[i] == operand_aval.shape[i] and i not in dn.start_index_map else None
        for i in range(len(operand))
        if i not in skipped
    )
    out = [next(offset) if k in dn.offset_dims else None for k in range(eqn.outputs[0].aval.ndim)]
    return [tuple(out)]


@_auto_fallback("reshape")
def reshape_keeps_leading_axes(ctx: Context, eqn: Eqn, specs: list[Spec]) -> list[Spec]:
    """Auto: a reshape the rule refuses keeps the entries of the leading
    axes it leaves alone. Example: ``f32[2@x,4,8@y] -> f32[2,32]`` -> ``f32[2@x,32]``."""
    old, new = eqn.inputs[0].aval.shape, eqn.params["new_sizes"]
    out: list[Any] = [None] * len(new)
    for i, (a, b) in enumerate(zip(old, new)):
        if a != b:
            break
        out[i] = specs[0][i]
    return [tuple(out)]


# --- linear algebra, FFT, convolution ---------------------------------------


LINALG = ("cholesky", "eigh", "lu", "qr", "svd")


@_register(*LINALG)
def linalg_rule(ctx: Context, eqn: Eqn, specs: list[Spec]) -> list[Spec]:
    """Batched matrix decompositions: the two matrix axes must be unsplit;
    each output keeps the batch axes' entries, the rest unsplit. Example:
    ``cholesky f32[4@x,3,3] -> f32[4@x,3,3]``."""
    spec = specs[0]
    batch, matrix = spec[:-2], spec[-2:]
    if any(e is not None for e in matrix):
        raise ShardingTypeError(
            f"Input 0 to {eqn.primitive.name} must be unsharded on non-batch dimensions, "
            f"but got {PartitionSpec(*spec)}."
        )
    return [batch + (None,) * (v.aval.ndim - len(batch)) for v in eqn.outputs]


@_register("triangular_solve")
def triangular_solve_rule(ctx: Context, eqn: Eqn, specs: list[Spec]) -> list[Spec]:
    """``a`` and ``b`` share their batch entries; the axes the solve
    contracts must be unsplit; the result is sharded as ``b``. Example:
    ``triangular_solve f32[4@x,3,3] f32[4@x,3,2] -> f32[4@x,3,2]``."""
    a, b = specs
    left, transpose_a = eqn.params["left_side"], eqn.params["transpose_a"]
    if a[:-2] != b[:-2]:
        raise ShardingTypeError(
            "All inputs to triangular_solve must have the same batch sharding, but got "
            f"{a[:-2]} and {b[:-2]}."
        )
    if a[-2:][left ^ transpose_a] is not None:
        raise ShardingTypeError(
            "triangular solve input `a` must be unsharded on the contracting axis, but got "
            f"{PartitionSpec(*a)} with left_side={left} and transpose_a={transpose_a}."
        )
    if b[-2:][not left] is not None:
        raise ShardingTypeError(
            "triangular solve input `b` must be unsharded on the contracting axis, but got "
            f"{PartitionSpec(*b)} with left_side={left}."
        )
    return [b]


@_register("fft")
def fft_rule(ctx: Context, eqn: Eqn, specs: list[Spec]) -> list[Spec]:
    """The operand's spec, the transformed axes included (JAX 0.10.2 keeps
    the type's sharding as it is). Example: ``fft f32[8@x,4] -> c64[8@x,4]``."""
    return [specs[0]]


@_register("conv_general_dilated")
def conv_rule(ctx: Context, eqn: Eqn, specs: list[Spec]) -> list[Spec]:
    """The kernel must be replicated and the input's feature axis unsplit;
    the result is laid out as the input (a spatial axis whose size changes
    must still divide). Example: ``conv f32[4@x,2,8] f32[3,2,3] -> f32[4@x,3,8]``."""
    lhs, rhs = specs
    feature = eqn.params["dimension_numbers"].lhs_spec[1]
    if any(e is not None for e in rhs) or lhs[feature] is not None:
        raise ShardingTypeError(
            "Please specify the output sharding via `out_sharding` parameter of "
            "`conv_general_dilated`"
        )
    operand, out_shape = eqn.inputs[0].aval, eqn.outputs[0].aval.shape
    for before, after, entry in zip(operand.shape, out_shape, lhs):
        pieces = _pieces(ctx, entry)
        if before != after and entry is not None and after % pieces:
            raise ShardingTypeError(
                f"conv_general_dilated on sharded dims where out dim ({after}) is not "
                f"divisible by mesh axes ({pieces}) with spec ({entry}) is not implemented. "
                f"Got input type={_aval_text(operand, lhs)} and output shape={tuple(out_shape)}"
            )
    return [lhs]
