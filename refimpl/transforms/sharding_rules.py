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

from refimpl.core import Eqn, Literal, Program, ShapedArray
from refimpl.errors import ShardingTypeError
from refimpl.sharding import AxisType, NamedSharding, PartitionSpec

__all__ = ["RULES", "output_shardings"]

#: One entry per array axis: None, a mesh axis name, or a tuple of names.
Spec = tuple[Any, ...]


@dataclass(frozen=True)
class Context:
    """What every rule may need besides its operands: the mesh and whether
    its axes are Explicit (rules raise) or Auto (rules fall back)."""

    mesh: Any
    explicit: bool


#: A rule: (context, equation, one spec per input) -> one spec per output.
Rule = Callable[[Context, Eqn, list[Spec]], list[Spec]]

RULES: dict[str, Rule] = {}


def output_shardings(program: Program, in_shardings: Sequence[Any], where: str) -> list:
    """The ``NamedSharding`` of each output of ``program``, as JAX 0.10.2 types it.

    Args:
        program: A traced Program (``jit``'s, ``make_program``'s).
        in_shardings: One ``NamedSharding`` or ``None`` (not split: replicated
            over the mesh) per entry of ``program.in_vars``; all the
            NamedShardings must share one mesh.
        where: The caller's name for the computation (``jit(f)``), added as a
            note to the errors raised.

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
    n_out = len(program.out_vars)
    named = [s for s in in_shardings if isinstance(s, NamedSharding)]
    if not named:
        return [None] * n_out
    mesh = named[0].mesh
    for s in named[1:]:
        if s.mesh != mesh:
            raise ShardingTypeError(
                f"Mesh for all inputs should be equal. Got one mesh: {mesh} and another "
                f"mesh: {s.mesh}"
            )
    explicit = all(t == AxisType.Explicit for t in mesh.axis_types)
    ctx = Context(mesh, explicit)
    in_specs = [
        _full_spec(s, v.aval.ndim) if isinstance(s, NamedSharding) else _replicated(v.aval)
        for s, v in zip(in_shardings, program.in_vars)
    ]
    try:
        out_specs = propagate(ctx, program, in_specs)
    except ShardingTypeError as error:
        error.add_note(f"(while typing the outputs of {where})")
        raise
    return [NamedSharding(mesh, PartitionSpec(*_as_written(ctx, s))) for s in out_specs]


def propagate(ctx: Context, program: Program, in_specs: Sequence[Spec]) -> list[Spec]:
    """Run the rules over ``program``'s equations: the spec of each output.
    Constants (``const_vars``, literals) are replicated."""
    env: dict[int, Spec] = {}
    for var, spec in zip(program.in_vars, in_specs):
        env[id(var)] = spec
    for var in program.const_vars:
        env[id(var)] = _replicated(var.aval)

    def read(atom: Any) -> Spec:
        if isinstance(atom, Literal) or id(atom) not in env:
            return _replicated(atom.aval)
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
    gives replicated outputs instead of raising."""
    rule = RULES.get(eqn.primitive.name, replicated_rule)
    try:
        outs = rule(ctx, eqn, specs)
        for out_var, spec in zip(eqn.outputs, outs):
            if _duplicated(spec):
                if not ctx.explicit:
                    continue
                raise ShardingTypeError(_illegal_result(eqn, specs, out_var.aval, spec))
    except ShardingTypeError:
        if ctx.explicit:
            raise
        return [_replicated(v.aval) for v in eqn.outputs]
    if not ctx.explicit:
        outs = [_first_use_only(s) for s in outs]
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
    return tuple(out)


def _as_written(ctx: Context, spec: Spec) -> Spec:
    """JAX 0.10.2 writes an Explicit type's spec one entry per axis
    (``P('x', None)``) and XLA's chosen Auto sharding without trailing Nones
    (``P('x',)``)."""
    if ctx.explicit:
        return spec
    out = list(spec)
    while out and out[-1] is None:
        out.pop()
    return tuple(out)


def _aval_text(aval: Any, spec: Spec) -> str:
    """JAX's short type with its sharding: ``f32[8@x,1]``."""
    text = aval.str_short() if isinstance(aval, ShapedArray) else str(aval)
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


def _illegal_result(eqn: Eqn, specs: list[Spec], out_aval: Any, out_spec: Spec) -> str:
    inputs = ", ".join(_aval_text(a.aval, s) for a, s in zip(eqn.inputs, specs))
    return (
        f"{eqn.primitive.name} operation with inputs: {inputs} produces an illegally "
        f"sharded result: {_aval_text(out_aval, out_spec)}"
    )


def _register(*names: str) -> Callable[[Rule], Rule]:
    def deco(rule: Rule) -> Rule:
        for name in names:
            RULES[name] = rule
        return rule

    return deco


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
    "random_gamma_grad convert_element_type bitcast_convert_type select_n clamp"
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
