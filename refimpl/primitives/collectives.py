"""Collectives over a named axis: psum, pmax, pmin, pmean, all_gather,
ppermute, psum_scatter and axis_index.

A collective runs in every *member* of a named axis at once (the batch
members of ``vmap(..., axis_name=...)``, or the devices of a ``pmap``), each
holding its own value ``x[m]`` for ``m`` in ``range(n)``:

* ``psum(x, name)[m] = sum_k x[k]``; ``pmax``/``pmin`` likewise with max/min;
  ``pmean = psum / n``. ``axis_name`` may be a tuple of names (reduce over
  all of them).
* ``all_gather(x, name, axis=a)[m] = stack([x[0], ..., x[n-1]], axis=a)``;
  with ``tiled=True`` the pieces are concatenated along ``a`` instead.
* ``ppermute(x, name, perm)[d] = x[s]`` for each pair ``(s, d)`` in ``perm``;
  a member that is no pair's destination gets zeros.
* ``psum_scatter(x, name, scatter_dimension=a)[m] = psum(x)`` indexed at
  ``m`` along ``a`` (whose size must be ``n``); with ``tiled=True`` the
  ``m``-th block of size ``x.shape[a] / n`` along ``a``.
* ``axis_index(name)[m] = m`` (int32).

``axis_index_groups`` (a partition of ``range(n)`` into groups, each
collective acting within a group; of equal sizes but for the all-reduces)
is part of every primitive's params; vmap does not support it
(``NotImplementedError``, as JAX), pmap does.

Every collective shares two constraints, numbered as in psum's block below
and cited by their errors: (C1) every axis name is bound; (C2)
``axis_index_groups`` is None or, with one axis name, a partition of
``range(n)`` into groups (of equal size, but for psum/pmax/pmin/pmean).

Outside a named axis the names are unbound: the ``lax`` functions raise
``NameError('Found an unbound axis name: i. ...')`` as JAX does. Device
semantics (``refimpl.transforms.pmap``): on the reference backend a pmap's N
devices run in lock step as a batch, so each batch rule below *is* the
definition (groups included, on a pmap's device axis); on pjrt each
collective lowers to a StableHLO collective over ``replica_groups``
(``all_reduce``, ``all_gather``, ``reduce_scatter``, ``collective_permute``,
``replica_id``). A primitive's ``impl`` (applied with no axis trace at all)
is a ``NotImplementedError``.

Each primitive has ``axis_dependent = True`` and ``uses_axis(name, params)``:
vmap's batching applies the rule of a collective over the axis it batches
even when the operand is unbatched (``psum`` of a value the same in every
member is ``n * x``).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from refimpl import dtypes, pytree, tracing
from refimpl.core import Eqn, Program, ShapedArray
from refimpl.errors import LoweringError
from refimpl.primitives import (
    ad_helpers,
    base,
    batch_rules,
    elementwise,
    indexing,
    reductions,
    rule_context,
    structural,
)
from refimpl.primitives.base import Primitive, normalize_axis
from refimpl.transforms.ad_util import Zero

# --- the names in scope ---------------------------------------------------------------


class _AxisEnv(threading.local):
    def __init__(self) -> None:
        self.frames: list[tuple[Any, int, Any]] = []  # (name, size, trace), innermost last
        # the sizes of the pmap axes bound (named or not); whether a batch
        # rule runs over a pmap's devices is its frame's ``device`` flag
        self.device_sizes: list[int] = []
        # pmap's lowering: axis name -> the replica groups of the whole axis
        self.replica_axes: dict[Any, tuple[tuple[int, ...], ...]] = {}


_env = _AxisEnv()


@contextlib.contextmanager
def bound_axis(name: Any, size: int, trace: Any = None) -> Iterator[None]:
    """Bind axis ``name`` (of ``size`` members) while the block runs; ``None``:
    nothing. ``trace`` is the transformation that gives the name its meaning
    (vmap's BatchTrace): a collective over the name goes to it even when no
    operand is one of its tracers (``psum(1, 'i')``, ``axis_index('i')``)."""
    if name is None:
        yield
        return
    _env.frames.append((name, size, trace))
    if trace is not None:
        _count_owners(1)
    try:
        yield
    finally:
        _env.frames.pop()
        if trace is not None:
            _count_owners(-1)


_owners_lock = threading.Lock()
_owners = 0  # axes bound with a trace, all threads together


def _count_owners(delta: int) -> None:
    """Install :func:`sub_program_owner` in ``Primitive.bind`` while any
    thread binds an axis with a trace (nothing to check, and no cost, otherwise)."""
    global _owners
    with _owners_lock:
        _owners += delta
        base._axis_owner = sub_program_owner if _owners else None


def sub_program_owner(prim: Any, top: Any, params: dict[str, Any]) -> Any:
    """The trace ``prim`` applies in: the trace of a bound axis that a
    collective in one of its sub-programs (a scan body, cond branches, a
    checkpointed or jitted program) uses, when that trace is above ``top``
    (the operands' top trace); ``top`` otherwise. Without this a loop whose
    operands are all unbatched would run its body's ``axis_index('i')`` or
    ``psum(1, 'i')`` as if no axis were bound."""
    frames = _env.frames
    if not frames:
        return top
    if getattr(prim, "axis_dependent", False):
        # a collective bound directly (``eval_jaxpr`` of a traced program):
        # the trace of its own axis, as the public binders' ``_bind`` picks
        return _owner_above(top, lambda name: prim.uses_axis(name, params))
    programs = [
        sub
        for value in params.values()
        for sub in (value if isinstance(value, tuple) else (value,))
        if isinstance(sub, Program)
    ]
    if not programs:
        return top
    return _owner_above(top, lambda name: any(_program_uses(p, name) for p in programs))


def _owner_above(top: Any, uses: Callable[[Any], bool]) -> Any:
    """The innermost active trace of a bound axis that ``uses`` accepts, when
    it is above ``top``; ``top`` otherwise."""
    owner = None
    for name, _, trace in _env.frames:
        if (
            trace is not None
            and trace.active
            and (owner is None or trace.level > owner.level)
            and (top is None or trace.level > top.level)
            and uses(name)
        ):
            owner = trace
    return top if owner is None else owner


def _program_uses(program: Program, name: Any) -> bool:
    return any(
        getattr(eqn.primitive, "axis_dependent", False)
        and eqn.primitive.uses_axis(name, eqn.params)
        for eqn in program.walk_eqns()
    )


@contextlib.contextmanager
def device_axis(name: Any, size: int) -> Iterator[None]:
    """Mark ``name`` as a pmap axis of ``size`` devices (not vmap members)
    while the block runs."""
    _env.device_sizes.append(size)
    try:
        yield
    finally:
        _env.device_sizes.pop()


@contextlib.contextmanager
def replica_axes(groups: dict[Any, tuple[tuple[int, ...], ...]]) -> Iterator[None]:
    """While lowering a pmap body: each axis name -> its replica groups (the
    replicas that form one instance of the axis, in axis-index order)."""
    saved = _env.replica_axes
    _env.replica_axes = {**saved, **groups}
    try:
        yield
    finally:
        _env.replica_axes = saved


def bound_axes() -> tuple[tuple[Any, int], ...]:
    """The named axes bound now, outermost first, with their sizes: part of a
    jit call's signature, since a trace may read them (``psum(1, 'i')`` is the
    axis size, a constant of the traced program)."""
    return tuple((name, size) for name, size, _ in _env.frames)


def axis_size_or_none(name: Any) -> int | None:
    for bound, size, _ in reversed(_env.frames):
        if bound == name:
            return size
    return None


def _bind(prim: Primitive, owner_axes: tuple, *args: Any, **params: Any) -> Any:
    """``prim.bind``, but handed to the trace owning one of ``axes`` when that
    trace is above every operand's (so the collective is not computed as if
    no axis were bound)."""
    owner = None
    for bound, _, trace in _env.frames:
        if (
            bound in owner_axes
            and trace is not None
            and trace.active
            and (owner is None or trace.level > owner.level)
        ):
            owner = trace
    if owner is not None:
        top = tracing.find_top_trace(args)
        if top is None or top.level < owner.level:
            outs = owner.process_primitive(prim, args, params)
            return outs if prim.multiple_results else outs[0]
    return prim.bind(*args, **params)


def axis_size(name: Any) -> int:
    """The size of the named axis; ``NameError`` if it is not bound (JAX's words)."""
    size = axis_size_or_none(name)
    if size is None:
        raise NameError(
            f"Found an unbound axis name: {name}. To fix this, call the collective under "
            "vmap(..., axis_name=...) (or pmap) with that name (C1)"
        )
    return size


def _axes_tuple(axis_name: Any) -> tuple[Any, ...]:
    axes = tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)
    for name in axes:
        axis_size(name)
    return axes


# The all-reduces take groups of different sizes, as JAX 0.10.2 does under pmap
# (psum over ((0, 1, 2), (3,))); pmean still divides by len(groups[0]), as JAX.
# The other collectives' results are shaped by the group size: equal groups only.
_UNEVEN_GROUPS_OK = ("psum", "pmax", "pmin", "pmean")


def _check_groups(api: str, groups: Any, axes: tuple[Any, ...]) -> Any:
    """Normalize ``axis_index_groups`` to a tuple of int tuples (or None), checking
    it partitions ``range(n)`` (into equal groups, but for the all-reduces)."""
    if groups is None:
        return None
    groups = tuple(tuple(int(i) for i in g) for g in groups)
    if len(axes) != 1:
        raise ValueError(f"{api}: axis_index_groups needs exactly one axis name (C2), got {axes}")
    n = axis_size(axes[0])
    members = sorted(i for g in groups for i in g)
    if api in _UNEVEN_GROUPS_OK:
        if members != list(range(n)) or not all(groups):
            raise ValueError(
                f"{api}: axis_index_groups must cover range({n}) exactly once (C2), got {groups}"
            )
    elif members != list(range(n)) or len({len(g) for g in groups}) != 1:
        raise ValueError(
            f"{api}: axis_index_groups must cover range({n}) exactly once with groups of "
            f"equal size (C2), got {groups}"
        )
    return groups


def _reduce_uneven_groups(x: Any, d: int | None, size: int, groups: Any, reduce_fn: Any) -> Any:
    """``out[m]`` = ``reduce_fn`` over the members of ``m``'s group (groups of
    any sizes), batch axis 0: one reduction per group, then each member
    takes its group's."""
    x = batch_rules.bdim_to(x, d, size, 0)
    rest = batch_rules.shape_of(x)[1:]
    per_group = []
    for group in groups:
        taken = indexing.gather_along_axis(x, np.asarray(group, np.int32), 0)
        reduced = reduce_fn(taken, (0,))
        per_group.append(structural.reshape(reduced, (1, *rest)))
    stacked = structural.concatenate(per_group, 0)
    group_of = np.zeros(size, np.int32)
    for g, group in enumerate(groups):
        group_of[list(group)] = g
    return indexing.gather_along_axis(stacked, group_of, 0)


def _no_groups_under_vmap(name: str, groups: Any) -> None:
    if groups is not None and not on_device_axis():
        raise NotImplementedError(
            f"axis_index_groups not supported in vmap collectives ({name}), as in JAX"
        )


def _group_members(groups: Any) -> tuple[np.ndarray, np.ndarray]:
    """``members[m]``: the group holding member ``m`` (``(n, k)`` int32), and
    ``position[m]``: ``m``'s place in it."""
    n, k = sum(len(g) for g in groups), len(groups[0])
    members = np.zeros((n, k), np.int32)
    position = np.zeros(n, np.int32)
    for group in groups:
        for place, m in enumerate(group):
            members[m] = group
            position[m] = place
    return members, position


def _gather_groups(x: Any, d: int | None, size: int, groups: Any) -> Any:
    """``x`` (batched at ``d``) -> ``g`` with ``g[m, j] = x[members[m][j]]``
    (the ``k`` values of ``m``'s group, for each member ``m``), batch axis 0."""
    x = batch_rules.bdim_to(x, d, size, 0)
    members, _ = _group_members(groups)
    taken = indexing.gather_along_axis(x, members.reshape(-1), 0)
    rest = batch_rules.shape_of(taken)[1:]
    return structural.reshape(taken, (members.shape[0], members.shape[1], *rest))


def _for_outer_axis(prim: Primitive, x: Any, d: int | None, axes: tuple, **params: Any) -> Any:
    """A collective over an outer axis met by the batch rule of another one
    (an unnamed ``vmap`` inside a ``pmap``, or a vmap over other names): the
    batch axis is an ordinary axis of the operand there, moved to the front;
    ``params`` are the primitive's with their dimensions shifted past it.
    Returns the result and its batch axis (0, or None when unbatched)."""
    if d is not None:
        x = batch_rules.moveaxis(x, d, 0)
    return _bind(prim, axes, x, axes=axes, **params), (None if d is None else 0)


def _unbound_impl(name: str):
    def impl(*args: Any, **params: Any) -> Any:
        raise NotImplementedError(
            f"{name}: collectives run only under a named axis (vmap with axis_name, or pmap); "
            "their device semantics outside vmap come with pmap"
        )

    return impl


class CollectivePrimitive(Primitive):
    """A primitive whose meaning depends on a named axis (``params['axes']``)."""

    axis_dependent = True

    def uses_axis(self, name: Any, params: dict[str, Any]) -> bool:
        return name is not None and name in params["axes"]


def on_device_axis() -> bool:
    """Whether the batch rule running now batches a pmap's devices (run in
    lock step on the reference backend) rather than vmap's members: there a
    host callback runs once per device, as on pjrt and in JAX. The frame
    says so itself: by name an unnamed vmap would be mistaken for an unnamed
    pmap around or inside it (both are ``None``)."""
    return bool(rule_context.current_frame().device)


def _frame_size() -> tuple[Any, int]:
    frame = rule_context.current_frame()
    return frame.name, frame.size


# === psum (with pmax and pmin, built the same way): one block ==========================
#
# psum(x, axis_name) over a named axis of n members, member m holding x[m]:
#
#     psum(x, name)[m] = sum over k in range(n) of x[k]      (the same in every m)
#     pmax / pmin: the same with max / min (under vmap NaN propagates; over a
#       pmap's devices a NaN is skipped, -inf/+inf if all are NaN, as XLA's
#       CPU all-reduce in JAX 0.10.2)
#     axis_name a tuple of names: the sum over every member of all of them
#     axis_index_groups = ((0, 1), (2, 3), ...): the sum over m's group only
#     bool operands: logical or (psum), and (pmin), or (pmax)
#     result dtype = x.dtype; strong over a pmap's devices, weak kept under vmap
#     x a pytree: each leaf separately (one primitive with a result per leaf);
#     a Python number leaf is the same in every member: psum gives n * x
#
# Constraints (shared by every collective of this module; the errors name the
# label):
#   (C1) every name in axis_name is bound by an enclosing vmap(axis_name=...)
#        or pmap (NameError, JAX's "Found an unbound axis name" message);
#   (C2) axis_index_groups is None or, with exactly one axis name, a partition
#        of range(n) into groups (ValueError); the all-reduces take groups of
#        different sizes (JAX 0.10.2's pmap does), the others need equal ones.
# Under vmap axis_index_groups is a NotImplementedError, as in JAX (pmap has it).
#
# Example: vmap(lambda v: psum(v, "i"), axis_name="i")([1., 2., 3.]) is
# [6., 6., 6.]; pmap(lambda v: psum(v, "i", axis_index_groups=((0, 1), (2, 3))),
# axis_name="i") over four devices holding [1., 2., 3., 4.] gives [3., 3., 7., 7.].
#
# Rules below, in the fixed order: abstract_eval, impl, jvp, transpose, batch,
# (no mask rule: collectives are not maskable), lowering (and the pmap pass
# joining all-reduces), then the public binders psum, pmax, pmin and pmean.
# The batch rule *is* the definition on the reference backend (vmap's members,
# and a pmap's devices run in lock step as a batch). psum stays in this module:
# it shares the axis environment (_env, _bind, the replica groups) with every
# other collective.

psum_p = CollectivePrimitive("psum", multiple_results=True)
pmax_p = CollectivePrimitive("pmax", multiple_results=True)
pmin_p = CollectivePrimitive("pmin", multiple_results=True)
_ALL_REDUCES = (psum_p, pmax_p, pmin_p)


# --- psum: abstract_eval


def _all_reduce_abstract_eval(*avals: ShapedArray, axes: tuple, axis_index_groups: Any):
    # A reduction over devices is never weakly typed (JAX 0.10.2: psum of
    # a weak value in a pmap is strong; under vmap the batch rule, not
    # this, decides, and keeps it weak as JAX does).
    return [aval.strip_weak() for aval in avals]


for _prim in _ALL_REDUCES:
    _prim.def_abstract_eval(_all_reduce_abstract_eval)


# --- psum: impl (a NotImplementedError: the batch rule below is the definition)


for _prim in _ALL_REDUCES:
    _prim.def_impl(_unbound_impl(_prim.name))


# --- psum: jvp (linear; pmax and pmin have no derivative rule, as in JAX)


@psum_p.def_jvp
def _psum_jvp(primals, tangents, *, axes, axis_index_groups):
    outs = _bind(psum_p, axes, *primals, axes=axes, axis_index_groups=axis_index_groups)
    nonzero = [t for t in tangents if not isinstance(t, Zero)]
    summed = iter(_bind(psum_p, axes, *nonzero, axes=axes, axis_index_groups=axis_index_groups))
    return outs, [t if isinstance(t, Zero) else next(summed) for t in tangents]


# --- psum: transpose


@psum_p.def_transpose
def _psum_transpose(cts, *args, axes, axis_index_groups):
    """psum is its own transpose: ``<psum(x), c> = sum_m <x[m], psum(c)[m]>``."""
    nonzero = [c for c in cts if not isinstance(c, Zero)]
    summed = iter(_bind(psum_p, axes, *nonzero, axes=axes, axis_index_groups=axis_index_groups))
    return [c if isinstance(c, Zero) else next(summed) for c in cts]


# --- psum: batch (the definition: reduce over the batch axis)


def _all_reduce_batch_rule(prim: CollectivePrimitive, reduce_fn: Any, unbatched_fn: Any) -> Any:
    """``reduce_fn(x, axes)`` reduces a batched operand over its batch axis;
    ``unbatched_fn(x, n)`` is the reduction of a value the same in all ``n``
    members."""
    name = prim.name

    def rule(args, dims, *, axes, axis_index_groups):
        frame_name, size = _frame_size()
        if frame_name not in axes:
            return _bind(prim, axes, *args, axes=axes, axis_index_groups=axis_index_groups), list(
                dims
            )
        _no_groups_under_vmap(name, axis_index_groups)
        if name in ("pmax", "pmin") and on_device_axis():
            args = [_nan_as_identity(x, name) for x in args]
        if axis_index_groups is not None:  # (one axis: _check_groups)
            if len({len(g) for g in axis_index_groups}) > 1:
                outs = [
                    _reduce_uneven_groups(x, d, size, axis_index_groups, reduce_fn)
                    for x, d in zip(args, dims, strict=True)
                ]
                return outs, [0] * len(outs)
            outs = [
                reduce_fn(_gather_groups(x, d, size, axis_index_groups), (1,))
                for x, d in zip(args, dims, strict=True)
            ]
            return outs, [0] * len(outs)
        outs = [
            unbatched_fn(x, size) if d is None else reduce_fn(x, (d,))
            for x, d in zip(args, dims, strict=True)
        ]
        rest = tuple(a for a in axes if a != frame_name)
        if rest:
            outs = _bind(prim, rest, *outs, axes=rest, axis_index_groups=None)
        if on_device_axis():
            # over devices (pmap in lock step) the result is strong, as the
            # primitive's own abstract evaluation (JAX: strong under pmap,
            # weak kept under vmap)
            outs = [_strong(x) for x in outs]
        return list(outs), [None] * len(outs)

    return rule


def _nan_as_identity(x: Any, name: str) -> Any:
    """pmax/pmin over a pmap's devices skip NaN, as XLA's CPU all-reduce does in
    JAX 0.10.2 (its max/min keeps the accumulator when a NaN arrives): a NaN
    counts as the reduction's identity, so the result is the max/min of the
    other members, or -inf/+inf when all are NaN. Under vmap, NaN propagates
    (JAX's reduce_max)."""
    aval = tracing.get_aval(x, name, 0)
    if not dtypes.is_floating(aval.dtype):
        return x
    identity = -np.inf if name == "pmax" else np.inf
    fill = structural.broadcast_in_dim(
        tracing.TypedScalar(identity, aval.dtype, aval.weak_type), aval.shape, ()
    )
    return elementwise.select_n(elementwise.ne(x, x), x, fill)


def _strong(x: Any) -> Any:
    aval = tracing.get_aval(x, "psum", 0)
    if not aval.weak_type:
        return x
    return elementwise.convert_element_type(x, aval.dtype, weak_type=False)


def _times(x: Any, n: int) -> Any:
    aval = tracing.get_aval(x, "psum", 0)
    if dtypes.is_bool(aval.dtype):
        return reductions.reduce_or(
            structural.broadcast_in_dim(x, (n, *aval.shape), tuple(range(1, aval.ndim + 1))),
            (0,),
        )
    # n is a Python int to JAX: weak, so a weak x stays weak (as jax.vmap)
    return elementwise.mul(x, tracing.TypedScalar(n, aval.dtype, True))


def _psum_reduce(x: Any, axes: tuple[int, ...]) -> Any:
    if dtypes.is_bool(tracing.get_aval(x, "psum", 0).dtype):
        return reductions.reduce_or(x, axes)
    return reductions.reduce_sum(x, axes)


psum_p.def_batch(_all_reduce_batch_rule(psum_p, _psum_reduce, _times))
pmax_p.def_batch(
    _all_reduce_batch_rule(pmax_p, lambda x, a: reductions.reduce_max(x, a), lambda x, n: x)
)
pmin_p.def_batch(
    _all_reduce_batch_rule(pmin_p, lambda x, a: reductions.reduce_min(x, a), lambda x, n: x)
)


# --- psum: lowering (pmap on pjrt: one stablehlo.all_reduce over the replica groups)


COMBINE_LIMIT = 1 << 16
"""Operands of one all-reduce (same element type) whose sizes add up to at
most this many elements are reduced as one flat buffer (see below)."""


def _all_reduce_lowering(name: str):
    """The all-reduce of several operands (``psum`` of a gradient tree): per
    element type, the operands are flattened and concatenated into one
    buffer, reduced by ONE single-operand ``stablehlo.all_reduce``, and sliced
    back, when they add up to at most ``COMBINE_LIMIT`` elements; otherwise
    one variadic ``all_reduce``.

    Why: XLA CPU runs one rendezvous of the replicas per all-reduced buffer,
    even inside a variadic op (~100 us each for 4 replicas on 2 cores,
    whatever the size), while concatenating and slicing a small buffer costs
    well under a microsecond. The values are the same elementwise sums.
    (JAX 0.10.2 emits one all_reduce per leaf.)"""

    def rule(ctx, *xs, axes, axis_index_groups):
        groups = _groups_attr(ctx, name, axes, axis_index_groups)
        by_dtype: dict[np.dtype, list[int]] = {}
        for i, aval in enumerate(ctx.avals_in):
            by_dtype.setdefault(np.dtype(aval.dtype), []).append(i)

        def all_reduce(types: list[Any], operands: list[Any], dtype: np.dtype) -> list[Any]:
            op = ctx.hlo.AllReduceOp(types, operands, groups)
            ctx.scalar_block(op.regions[0], [dtype, dtype], _combiner(ctx, name, dtype))
            return list(op.results)

        outs: list[Any] = [None] * len(xs)
        for dtype, members in by_dtype.items():
            sizes = [int(np.prod(ctx.avals_in[i].shape, dtype=np.int64)) for i in members]
            if len(members) > 1 and sum(sizes) <= COMBINE_LIMIT:
                flat = [
                    ctx.hlo.reshape(ctx.tensor_type((n,), dtype), xs[i])
                    for i, n in zip(members, sizes, strict=True)
                ]
                total = ctx.tensor_type((sum(sizes),), dtype)
                (joined,) = all_reduce([total], [ctx.hlo.concatenate(flat, 0)], dtype)
                start = 0
                for i, n in zip(members, sizes, strict=True):
                    piece = ctx.hlo.slice(joined, [start], [start + n], [1])
                    outs[i] = ctx.hlo.reshape(ctx.ir_type(ctx.avals_in[i]), piece)
                    start += n
            else:
                types = [ctx.ir_type(ctx.avals_in[i]) for i in members]
                results = all_reduce(types, [xs[i] for i in members], dtype)
                for i, result in zip(members, results, strict=True):
                    outs[i] = result
        return outs

    return rule


for _prim, _name in ((psum_p, "psum"), (pmax_p, "pmax"), (pmin_p, "pmin")):
    _prim.def_lowering(_all_reduce_lowering(_name))


def combine_all_reduces(program: Any) -> Any:
    """``program`` with each top-level all-reduce (psum, pmax, pmin) joined by
    the later ones of the same primitive and parameters whose operands are
    already computed at its position (moved up to it: they are pure, and
    their results are only used after their old position): ``pmean(grads)``
    then ``pmean(loss)`` in a pmap body become ONE all-reduce, so ONE
    rendezvous of the replicas on XLA CPU (see :func:`_all_reduce_lowering`).
    Used only for the pjrt lowering of a pmap (every replica runs the same
    program); the results are the same elementwise reductions. Sub-programs
    are left as they are."""
    reducers = (psum_p, pmax_p, pmin_p)

    def ready(eqn: Eqn) -> bool:
        return all(a.id in defined for a in eqn.inputs if hasattr(a, "id"))

    keys = {  # equal keys: the same reduction over the same axes and groups
        i: (eqn.primitive.name, repr(sorted(eqn.params.items())))
        for i, eqn in enumerate(program.eqns)
        if eqn.primitive in reducers
    }
    defined = {v.id for v in (*program.in_vars, *program.const_vars)}
    moved: set[int] = set()
    eqns: list[Eqn] = []
    for i, eqn in enumerate(program.eqns):
        if i in moved:
            continue
        if i in keys:
            group = [eqn]
            for j, other_key in keys.items():
                other = program.eqns[j]
                if j > i and j not in moved and other_key == keys[i] and ready(other):
                    group.append(other)
                    moved.add(j)
            if len(group) > 1:
                eqn = Eqn(
                    eqn.primitive,
                    [a for e in group for a in e.inputs],
                    [v for e in group for v in e.outputs],
                    dict(eqn.params),
                )
        eqns.append(eqn)
        defined.update(v.id for v in eqn.outputs)
    if not moved:
        return program
    return Program(program.in_vars, eqns, program.out_vars, program.const_vars, program.consts)


# --- psum: the public binders (psum, pmax, pmin, pmean)


def psum(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """The sum of ``x`` (a pytree) over every member of ``axis_name`` (a name or tuple).

    A Python number or NumPy value (not a bool) is the same in every member:
    its sum is ``n * x`` computed by Python or NumPy, a value of the same kind
    (JAX's constant case: ``psum(1, 'i')`` is the Python int ``n``, usable as
    ``range(n)`` under jit too); an array summed over a pmap's devices is
    strong. Booleans are counted: a bool leaf is summed as int32 (JAX's psum),
    so the sum of bools is how many are true."""
    _check_no_keys("psum", x)
    leaves, tree = pytree.tree_flatten(x)
    if any(_is_bool(leaf) for leaf in leaves):
        leaves = [
            elementwise.convert_element_type(leaf, np.dtype(np.int32), weak_type=False)
            if _is_bool(leaf)
            else leaf
            for leaf in leaves
        ]
        x = pytree.tree_unflatten(tree, leaves)
    if not any(_is_host_constant(leaf) for leaf in leaves):
        return _tree_collective(psum_p, "psum", x, axis_name, axis_index_groups)
    axes = _axes_tuple(axis_name)
    groups = _check_groups("psum", axis_index_groups, axes)
    n = _scatter_count(axes, groups)
    at = [i for i, leaf in enumerate(leaves) if not _is_host_constant(leaf)]
    summed = iter(
        _bind(psum_p, axes, *[leaves[i] for i in at], axes=axes, axis_index_groups=groups)
        if at
        else []
    )
    outs = [next(summed) if i in at else _host_times(leaf, n) for i, leaf in enumerate(leaves)]
    return pytree.tree_unflatten(tree, outs)


def _check_no_keys(api: str, x: Any) -> None:
    """The reducing collectives add, compare or divide their operands: typed
    PRNG keys (pytree nodes over their data in refimpl, so looked for before
    flattening) are none of those, a TypeError as JAX 0.10.2's (whose
    ``add``, ``max``, ``min`` refuse the key dtype)."""
    is_key = lambda v: isinstance(getattr(v, "dtype", None), dtypes.ExtendedDtype)  # noqa: E731
    for leaf in pytree.tree_leaves(x, is_leaf=is_key):
        dtype = getattr(leaf, "dtype", None)
        if isinstance(dtype, dtypes.ExtendedDtype):
            raise TypeError(
                f"{api} does not accept dtype {dtype}: it reduces numbers (integer, floating, "
                "complexfloating), not typed PRNG keys"
            )


def _is_host_constant(leaf: Any) -> bool:
    """A Python number or a NumPy scalar/array: psum's constant case."""
    return type(leaf) in (int, float, complex) or isinstance(leaf, (np.ndarray, np.generic))


def _host_times(leaf: Any, n: int) -> Any:
    """``n * leaf`` as JAX's ``lax._const(leaf, n) * leaf``: a Python number stays
    one (of its own type); a NumPy value is multiplied by ``n`` as a NumPy value
    of its canonical dtype (so NumPy's promotion gives the result's dtype)."""
    if type(leaf) in (int, float, complex):
        return type(leaf)(n) * leaf
    return np.array(n, dtypes.canonicalize_dtype(leaf.dtype)) * leaf


def _is_bool(leaf: Any) -> bool:
    dtype = bool if type(leaf) is bool else getattr(leaf, "dtype", None)
    return dtype is not None and np.dtype(dtype) == np.bool_


def pmax(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """The maximum of ``x`` over every member of ``axis_name``."""
    return _tree_collective(pmax_p, "pmax", x, axis_name, axis_index_groups)


def pmin(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """The minimum of ``x`` over every member of ``axis_name``."""
    return _tree_collective(pmin_p, "pmin", x, axis_name, axis_index_groups)


def pmean(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """``psum(x) / n`` with ``n`` the number of members summed over."""
    axes = _axes_tuple(axis_name)
    groups = _check_groups("pmean", axis_index_groups, axes)
    n = _scatter_count(axes, groups)
    summed = psum(x, axis_name, axis_index_groups=axis_index_groups)

    return pytree.tree_map(lambda v: _divide_by_count(v, n), summed)


def _divide_by_count(v: Any, n: int) -> Any:
    """``jnp.true_divide(v, n)``, written with the primitives (``numpy`` sits above):
    an integer or bool sum becomes a mean in the default float dtype; a float one
    keeps its dtype and weak flag, ``n`` being a weak Python int."""
    if _is_host_constant(v):  # psum's constant case: Python's or NumPy's division
        return v / n
    aval = tracing.get_aval(v, "pmean", 0)
    dtype, weak = dtypes.result_type((aval.dtype, aval.weak_type), int)
    if not dtypes.is_inexact(dtype):
        dtype = dtypes.weak_default_dtype("f")
    if aval.dtype != dtype or aval.weak_type != weak:
        v = elementwise.convert_element_type(v, dtype, weak_type=weak)
    return elementwise.div(v, tracing.TypedScalar(n, dtype, weak))


# --- all_gather ------------------------------------------------------------------------------

all_gather_p = CollectivePrimitive("all_gather")


@all_gather_p.def_abstract_eval
def _all_gather_abstract_eval(x, *, axes, axis_index_groups, axis_size, axis, tiled):
    n = axis_size if axis_index_groups is None else len(axis_index_groups[0])
    shape = list(x.shape)
    if tiled:
        shape[axis] *= n
    else:
        shape.insert(axis, n)
    return x.update(shape=tuple(shape))


all_gather_p.def_impl(_unbound_impl("all_gather"))


@all_gather_p.def_batch
def _all_gather_batch(args, dims, *, axes, axis_index_groups, axis_size, axis, tiled):
    (x,), (d,) = args, dims
    frame_name, size = _frame_size()
    if frame_name not in axes:
        return _for_outer_axis(
            all_gather_p, x, d, axes, axis_index_groups=axis_index_groups,
            axis_size=axis_size, axis=axis + (d is not None), tiled=tiled,
        )  # fmt: skip
    _no_groups_under_vmap("all_gather", axis_index_groups)
    if axis_index_groups is not None:
        gathered = batch_rules.moveaxis(_gather_groups(x, d, size, axis_index_groups), 1, axis + 1)
        if tiled:
            shape = list(batch_rules.shape_of(gathered))
            shape[axis + 1 : axis + 3] = [shape[axis + 1] * shape[axis + 2]]
            gathered = structural.reshape(gathered, shape)
        return gathered, 0
    if d is None:
        x = batch_rules.broadcast_batch(x, size, 0)
        d = 0
    gathered = batch_rules.moveaxis(x, d, axis)
    if tiled:
        shape = list(batch_rules.shape_of(gathered))
        shape[axis : axis + 2] = [shape[axis] * shape[axis + 1]]
        gathered = structural.reshape(gathered, shape)
    return gathered, None


@all_gather_p.def_jvp
def _all_gather_jvp(primals, tangents, **params):
    (x,), (t,) = primals, tangents
    out = _bind(all_gather_p, params["axes"], x, **params)
    # unreachable from the public API: one differentiable operand, and the jvp trace calls a
    # rule only when some operand has a nonzero tangent (ad.JVPTrace.process_primitive)
    if isinstance(t, Zero):  # pragma: no cover
        return out, Zero(tracing.get_aval(out, "all_gather", 0))
    return out, _bind(all_gather_p, params["axes"], t, **params)


@all_gather_p.def_transpose
def _all_gather_transpose(ct, x, *, axes, axis_index_groups, axis_size, axis, tiled):
    """The transpose of gathering is summing the cotangents and keeping one's own piece."""
    # unreachable from the public API: the backward pass skips an equation whose one output has
    # no cotangent and never passes a symbolic Zero to a single-output rule (ad.backward_pass)
    if isinstance(ct, Zero):  # pragma: no cover
        return [Zero(x.aval)]
    if not tiled:  # gathered on a new axis: scatter along it, then drop it
        out = _bind(
            psum_scatter_p,
            axes,
            ct,
            axes=axes,
            axis_index_groups=axis_index_groups,
            scatter_dimension=axis,
            tiled=False,
        )
        return [out]
    out = _bind(
        psum_scatter_p,
        axes,
        ct,
        axes=axes,
        axis_index_groups=axis_index_groups,
        scatter_dimension=axis,
        tiled=True,
    )
    return [out]


# --- psum_scatter ---------------------------------------------------------------------------

psum_scatter_p = CollectivePrimitive("psum_scatter")


@psum_scatter_p.def_abstract_eval
def _psum_scatter_abstract_eval(x, *, axes, axis_index_groups, scatter_dimension, tiled):
    shape = list(x.shape)
    if tiled:
        n = _scatter_count(axes, axis_index_groups)
        if shape[scatter_dimension] % n:
            raise ValueError(
                f"psum_scatter: dimension {scatter_dimension} of size {shape[scatter_dimension]} "
                f"does not split into {n} equal parts"
            )
        shape[scatter_dimension] //= n
    else:
        # one slice per member: JAX checks it when it traces (pjrt's verifier
        # would only refuse the program later)
        n = _scatter_count(axes, axis_index_groups)
        if shape[scatter_dimension] != n:
            raise ValueError(
                f"psum_scatter: operand scatter dimension size {shape[scatter_dimension]} "
                f"must match shard count {n}"
            )
        del shape[scatter_dimension]
    return x.update(shape=tuple(shape))


def _scatter_count(axes: tuple, groups: Any) -> int:
    if groups is not None:
        return len(groups[0])
    return int(np.prod([axis_size(a) for a in axes]))


psum_scatter_p.def_impl(_unbound_impl("psum_scatter"))


@psum_scatter_p.def_batch
def _psum_scatter_batch(args, dims, *, axes, axis_index_groups, scatter_dimension, tiled):
    (x,), (d,) = args, dims
    frame_name, size = _frame_size()
    if frame_name not in axes:
        return _for_outer_axis(
            psum_scatter_p, x, d, axes, axis_index_groups=axis_index_groups,
            scatter_dimension=scatter_dimension + (d is not None), tiled=tiled,
        )  # fmt: skip
    _no_groups_under_vmap("psum_scatter", axis_index_groups)
    if axis_index_groups is not None:
        return _grouped_psum_scatter(x, d, size, axis_index_groups, scatter_dimension, tiled), 0
    summed = _times(x, size) if d is None else _psum_reduce(x, (d,))
    if not tiled:
        if batching_shape(summed)[scatter_dimension] != size:
            raise ValueError(
                f"psum_scatter: the scattered dimension {scatter_dimension} has size "
                f"{batching_shape(summed)[scatter_dimension]}, but the axis {frame_name!r} has "
                f"{size} members"
            )
        return summed, scatter_dimension
    shape = list(batching_shape(summed))
    shape[scatter_dimension : scatter_dimension + 1] = [size, shape[scatter_dimension] // size]
    return structural.reshape(summed, shape), scatter_dimension


def _grouped_psum_scatter(x: Any, d: Any, size: int, groups: Any, dim: int, tiled: bool) -> Any:
    """Member ``m`` keeps block ``position[m]`` (its place in its group) of its
    group's sum along ``dim``; the result is batched at 0."""
    members, position = _group_members(groups)
    n, k = members.shape
    summed = _psum_reduce(_gather_groups(x, d, size, groups), (1,))  # (n, *member shape)
    shape = list(batch_rules.shape_of(summed))
    if not tiled and shape[dim + 1] != k:
        raise ValueError(
            f"psum_scatter: the scattered dimension {dim} has size {shape[dim + 1]}, but the "
            f"groups have {k} members"
        )
    if tiled:  # split the dimension into k blocks
        shape[dim + 1 : dim + 2] = [k, shape[dim + 1] // k]
        summed = structural.reshape(summed, shape)
    blocks = batch_rules.moveaxis(summed, dim + 1, 1)
    rest = batch_rules.shape_of(blocks)[2:]
    flat = structural.reshape(blocks, (n * k, *rest))
    return indexing.gather_along_axis(flat, np.arange(n, dtype=np.int32) * k + position, 0)


def batching_shape(x: Any) -> tuple[int, ...]:
    return tracing.get_aval(x, "psum_scatter", 0).shape


@psum_scatter_p.def_jvp
def _psum_scatter_jvp(primals, tangents, **params):
    (x,), (t,) = primals, tangents
    out = _bind(psum_scatter_p, params["axes"], x, **params)
    # unreachable from the public API: one differentiable operand, and the jvp trace calls a
    # rule only when some operand has a nonzero tangent (ad.JVPTrace.process_primitive)
    if isinstance(t, Zero):  # pragma: no cover
        return out, Zero(tracing.get_aval(out, "psum_scatter", 0))
    return out, _bind(psum_scatter_p, params["axes"], t, **params)


@psum_scatter_p.def_transpose
def _psum_scatter_transpose(ct, x, *, axes, axis_index_groups, scatter_dimension, tiled):
    # unreachable from the public API: the backward pass skips an equation whose one output has
    # no cotangent and never passes a symbolic Zero to a single-output rule (ad.backward_pass)
    if isinstance(ct, Zero):  # pragma: no cover
        return [Zero(x.aval)]
    n = _scatter_count(axes, axis_index_groups)
    return [
        _bind(
            all_gather_p, axes, ct, axes=axes, axis_index_groups=axis_index_groups, axis_size=n,
            axis=scatter_dimension, tiled=tiled,
        )
    ]  # fmt: skip


# --- ppermute ------------------------------------------------------------------------------

ppermute_p = CollectivePrimitive("ppermute")


@ppermute_p.def_abstract_eval
def _ppermute_abstract_eval(x, *, axes, axis_index_groups, perm):
    return x


ppermute_p.def_impl(_unbound_impl("ppermute"))


@ppermute_p.def_batch
def _ppermute_batch(args, dims, *, axes, axis_index_groups, perm):
    (x,), (d,) = args, dims
    frame_name, size = _frame_size()
    if frame_name not in axes:
        return _for_outer_axis(ppermute_p, x, d, axes, axis_index_groups=axis_index_groups,
                               perm=perm)  # fmt: skip
    _no_groups_under_vmap("ppermute", axis_index_groups)
    if d is None:
        x, d = batch_rules.broadcast_batch(x, size, 0), 0
    source = np.zeros(size, np.int32)
    received = np.zeros(size, bool)
    for src, dst in perm:
        source[dst] = src
        received[dst] = True
    taken = indexing.gather_along_axis(x, source, d)
    if received.all():
        return taken, d
    shape = batch_rules.shape_of(taken)
    keep = structural.broadcast_in_dim(received, shape, (d,))
    aval = tracing.get_aval(taken, "ppermute", 0)
    # the zeros take the operand's weak type: a weak value stays weak (JAX)
    zero = elementwise.convert_element_type(
        np.zeros((), aval.dtype), aval.dtype, weak_type=aval.weak_type
    )
    zeros = structural.broadcast_in_dim(zero, shape, ())
    return elementwise.select(keep, taken, zeros), d


@ppermute_p.def_jvp
def _ppermute_jvp(primals, tangents, **params):
    (x,), (t,) = primals, tangents
    out = _bind(ppermute_p, params["axes"], x, **params)
    return out, t if isinstance(t, Zero) else _bind(ppermute_p, params["axes"], t, **params)


@ppermute_p.def_transpose
def _ppermute_transpose(ct, x, *, axes, axis_index_groups, perm):
    """The transpose of sending ``s -> d`` is sending ``d -> s``."""
    # unreachable from the public API: the backward pass skips an equation whose one output has
    # no cotangent and never passes a symbolic Zero to a single-output rule (ad.backward_pass)
    if isinstance(ct, Zero):  # pragma: no cover
        return [ct]
    inverse = tuple((dst, src) for src, dst in perm)
    return [
        _bind(ppermute_p, axes, ct, axes=axes, axis_index_groups=axis_index_groups, perm=inverse)
    ]


# --- axis_index ----------------------------------------------------------------------------

axis_index_p = CollectivePrimitive("axis_index")


@axis_index_p.def_abstract_eval
def _axis_index_abstract_eval(*, axes):
    return ShapedArray((), np.dtype(np.int32))


axis_index_p.def_impl(_unbound_impl("axis_index"))


@axis_index_p.def_batch
def _axis_index_batch(args, dims, *, axes):
    _, size = _frame_size()
    return structural.iota(np.int32, size), 0


# --- all_to_all ----------------------------------------------------------------------------
#
# The primitive has the *tiled* meaning; ``lax.all_to_all`` with tiled=False
# inserts a size-1 axis at ``concat_axis`` first and removes ``split_axis``
# after (as JAX). With ``n`` members (of a group), member ``m`` splits its
# ``x`` into ``n`` blocks along ``split_axis``, sends block ``k`` to member
# ``k``, and concatenates the ``n`` blocks it receives, in member order,
# along ``concat_axis``:
#     all_to_all(x)[m] = concatenate([block(x[k], m) for k in range(n)], concat_axis)

all_to_all_p = CollectivePrimitive("all_to_all")


@all_to_all_p.def_abstract_eval
def _all_to_all_abstract_eval(x, *, axes, axis_index_groups, split_axis, concat_axis):
    n = _scatter_count(axes, axis_index_groups)
    shape = list(x.shape)
    if shape[split_axis] % n:
        raise ValueError(
            f"all_to_all: the size of split_axis ({shape[split_axis]}) has to be divisible by "
            f"the size of the named axis {axes[0]} ({n})"
        )
    shape[split_axis] //= n
    shape[concat_axis] *= n
    return x.update(shape=tuple(shape))


all_to_all_p.def_impl(_unbound_impl("all_to_all"))


def _exchange_blocks(x: Any, own_block: Any, n: int, split_axis: int, concat_axis: int) -> Any:
    """``x``: ``(members, k, *member shape)`` with ``x[m, j]`` the value sent by
    the ``j``-th member of ``m``'s group; ``own_block(blocks)`` picks, for each
    member ``m``, its own block from ``blocks`` (``(members, k blocks, k, ...)``).
    Returns ``(members, *result shape)``: the picked blocks concatenated
    (group order) along ``concat_axis``."""
    shape = list(batch_rules.shape_of(x))
    k = shape[1]
    s, c = split_axis + 2, concat_axis + 1
    shape[s : s + 1] = [k, shape[s] // k]  # the blocks of the split axis
    blocks = batch_rules.moveaxis(structural.reshape(x, shape), s, 1)
    mine = own_block(blocks)  # (members, k senders, *member shape with the block)
    mine = batch_rules.moveaxis(mine, 1, c)  # the senders just before the concat axis
    shape = list(batch_rules.shape_of(mine))
    shape[c : c + 2] = [shape[c] * shape[c + 1]]  # sender-major
    return structural.reshape(mine, shape)


@all_to_all_p.def_batch
def _all_to_all_batch(args, dims, *, axes, axis_index_groups, split_axis, concat_axis):
    """The definition on the reference backend's lock-step devices too: every
    member's blocks are in the batch, so the exchange is a transpose of the
    (member, block) axes."""
    (x,), (d,) = args, dims
    frame_name, size = _frame_size()
    if frame_name not in axes:
        shift = d is not None
        return _for_outer_axis(
            all_to_all_p, x, d, axes, axis_index_groups=axis_index_groups,
            split_axis=split_axis + shift, concat_axis=concat_axis + shift,
        )  # fmt: skip
    _no_groups_under_vmap("all_to_all", axis_index_groups)
    if len(axes) > 1:
        return _all_to_all_over_names(x, d, size, axes, frame_name, split_axis, concat_axis), 0
    groups = axis_index_groups if axis_index_groups is not None else (tuple(range(size)),)
    n = len(groups[0])
    split_size = batch_rules.shape_of(x)[split_axis + (d is not None and d <= split_axis)]
    if split_size % n:
        raise ValueError(
            f"all_to_all: the size of split_axis ({split_size}) has to be divisible by the size "
            f"of the named axis {frame_name} ({n})"
        )
    if axis_index_groups is None:
        # x[k] for every m at once: the members axis doubles as the senders axis
        x = batch_rules.bdim_to(x, d, size, 0)
        senders = structural.expand_dims(x, (0,))

        def own_block(blocks: Any) -> Any:  # blocks: (1, n blocks, n senders, ...)
            shape = batch_rules.shape_of(blocks)
            return structural.reshape(blocks, shape[1:])  # block m is member m's

        return _exchange_blocks(senders, own_block, n, split_axis, concat_axis), 0
    _, position = _group_members(groups)
    gathered = _gather_groups(x, d, size, groups)  # (size, k, *member shape)

    def own_block_grouped(blocks: Any) -> Any:  # (size, k blocks, k senders, ...)
        shape = batch_rules.shape_of(blocks)
        flat = structural.reshape(blocks, (shape[0] * shape[1], *shape[2:]))
        rows = np.arange(size, dtype=np.int32) * shape[1] + position
        return indexing.gather_along_axis(flat, rows, 0)

    return _exchange_blocks(gathered, own_block_grouped, n, split_axis, concat_axis), 0


def _all_to_all_over_names(
    x: Any, d: int | None, size: int, axes: tuple, frame: Any, split_axis: int, concat_axis: int
) -> Any:
    """all_to_all over several names, met by the batch rule of one of them.

    The members are numbered row-major over ``axes`` (``m = (before, f, after)``,
    ``f`` this frame's index), as JAX. With the split axis cut into ``n``
    blocks, ``out[m]`` is, sender-major along ``concat_axis``, block ``m`` of
    every sender ``s``. In block coordinates the exchange is
    ``U[m][s] = T[s][m]``: swapping this frame's member axis with the ``f``
    part of the block index does the ``f`` part of it; the other names'
    members exchange the rest through the primitive over the remaining names
    (the frame's axis an ordinary axis there). The result is batched at 0.
    """
    where = axes.index(frame)
    rest = axes[:where] + axes[where + 1 :]
    n_before = int(np.prod([axis_size(a) for a in axes[:where]]))
    n_after = int(np.prod([axis_size(a) for a in axes[where + 1 :]]))
    n = n_before * size * n_after
    x = batch_rules.bdim_to(x, d, size, 0)
    shape = list(batch_rules.shape_of(x))
    s = split_axis + 1
    if shape[s] % n:
        raise ValueError(
            f"all_to_all: the size of split_axis ({shape[s]}) has to be divisible by the size "
            f"of the named axes {axes} ({n})"
        )
    blk = shape[s] // n
    # the block index as (before, f, after) axes at s, s+1, s+2; the block itself at s+3
    x = structural.reshape(x, shape[:s] + [n_before, size, n_after, blk] + shape[s + 1 :])
    perm = list(range(len(shape) + 3))
    perm[0], perm[s + 1] = s + 1, 0
    x = structural.transpose(x, perm)  # f part of the block index <-> member axis
    # the other names' exchange: their block index (before, after) as one axis of
    # n_before * n_after blocks of one, sent and received in place
    perm = list(range(len(shape) + 3))
    perm[s : s + 3] = [s, s + 2, s + 1]
    x = structural.transpose(x, perm)  # (before, after, senders along f, blk)
    shape = list(batch_rules.shape_of(x))
    x = structural.reshape(x, shape[:s] + [n_before * n_after] + shape[s + 2 :])
    x = _bind(all_to_all_p, rest, x, axes=rest, axis_index_groups=None, split_axis=s,
              concat_axis=s)  # fmt: skip
    x = structural.reshape(x, shape)  # senders (before, after, f, blk) now
    perm = list(range(len(shape)))
    perm[s : s + 3] = [s, s + 2, s + 1]
    x = structural.transpose(x, perm)  # senders row-major: (before, f, after)
    shape = list(batch_rules.shape_of(x))
    x = structural.reshape(x, shape[:s] + [n, blk] + shape[s + 4 :])
    # senders just before the concat axis, merged into it (sender-major)
    c = concat_axis + 1 + (concat_axis >= split_axis)
    at = c - 1 if c > s else c
    x = batch_rules.moveaxis(x, s, at)
    shape = list(batch_rules.shape_of(x))
    return structural.reshape(x, shape[:at] + [shape[at] * shape[at + 1]] + shape[at + 2 :])


@all_to_all_p.def_jvp
def _all_to_all_jvp(primals, tangents, **params):
    (x,), (t,) = primals, tangents
    out = _bind(all_to_all_p, params["axes"], x, **params)
    # unreachable from the public API: one differentiable operand, and the jvp trace calls a
    # rule only when some operand has a nonzero tangent (ad.JVPTrace.process_primitive)
    if isinstance(t, Zero):  # pragma: no cover
        return out, Zero(tracing.get_aval(out, "all_to_all", 0))
    return out, _bind(all_to_all_p, params["axes"], t, **params)


@all_to_all_p.def_transpose
def _all_to_all_transpose(ct, x, *, axes, axis_index_groups, split_axis, concat_axis):
    """Sending block ``k`` to member ``k`` is undone by sending it back: the
    same exchange with ``split_axis`` and ``concat_axis`` swapped."""
    # unreachable from the public API: the backward pass skips an equation whose one output has
    # no cotangent and never passes a symbolic Zero to a single-output rule (ad.backward_pass)
    if isinstance(ct, Zero):  # pragma: no cover
        return [Zero(x.aval)]
    return [
        _bind(
            all_to_all_p, axes, ct, axes=axes, axis_index_groups=axis_index_groups,
            split_axis=concat_axis, concat_axis=split_axis,
        )
    ]  # fmt: skip


# --- lowerings (pmap on pjrt: the body runs once per replica) ---------------------------


def _replica_groups(prim_name: str, axes: tuple, groups: Any) -> np.ndarray:
    """The ``replica_groups`` of a collective over ``axes`` inside a pmap body:
    each instance of the axis (a tuple of replicas in axis-index order, set by
    pmap's lowering), split further by ``axis_index_groups``."""
    missing = [a for a in axes if a not in _env.replica_axes]
    if missing or (groups is not None and len(axes) != 1):
        raise LoweringError(
            f"{prim_name}: a collective over {axes} can only be lowered inside a pmap body "
            "over axis names bound by that pmap (and by pmaps nested in it)"
        )
    if len(axes) > 1:  # replicas joined along any of the axes form one group
        return np.asarray(_joined(axes), np.int64)
    instances = _env.replica_axes[axes[0]]
    if groups is None:
        return np.asarray(instances, np.int64)
    rows = [[inst[m] for m in g] for inst in instances for g in groups]
    width = max(len(row) for row in rows)  # groups of different sizes: padded with -1, as JAX
    return np.asarray([row + [-1] * (width - len(row)) for row in rows], np.int64)


def _joined(axes: tuple) -> list[list[int]]:
    """The replica groups of a collective over several axes at once: the
    classes of "in the same instance of one of the axes" (union-find)."""
    parent: dict[int, int] = {}

    def root(r: int) -> int:
        while parent.setdefault(r, r) != r:
            r = parent[r]
        return r

    for name in axes:
        for instance in _env.replica_axes[name]:
            for r in instance[1:]:
                parent[root(r)] = root(instance[0])
    classes: dict[int, list[int]] = {}
    for r in sorted(parent):
        classes.setdefault(root(r), []).append(r)
    return list(classes.values())


def _groups_attr(ctx: Any, prim_name: str, axes: tuple, groups: Any) -> Any:
    return ctx.ir.DenseIntElementsAttr.get(_replica_groups(prim_name, axes, groups))


def _combiner(ctx: Any, name: str, dtype: np.dtype) -> Any:
    hlo = ctx.hlo
    if dtypes.is_bool(dtype):
        op = hlo.and_ if name == "pmin" else hlo.or_
    else:
        op = {"psum": hlo.add, "pmax": hlo.maximum, "pmin": hlo.minimum}[name]
    return lambda a, b: [op(a, b)]


@all_gather_p.def_lowering
def _all_gather_lowering(ctx, x, *, axes, axis_index_groups, axis_size, axis, tiled):
    groups = _groups_attr(ctx, "all_gather", axes, axis_index_groups)
    aval = ctx.avals_in[0]
    if not tiled:  # stacking = concatenating pieces with a new axis of size 1
        shape = list(aval.shape)
        shape.insert(axis, 1)
        x = ctx.hlo.reshape(ctx.tensor_type(shape, aval.dtype), x)
    op = ctx.hlo.AllGatherOp([ctx.ir_type(ctx.avals_out[0])], [x], axis, groups)
    return [op.results[0]]


@psum_scatter_p.def_lowering
def _psum_scatter_lowering(ctx, x, *, axes, axis_index_groups, scatter_dimension, tiled):
    groups = _groups_attr(ctx, "psum_scatter", axes, axis_index_groups)
    aval, out = ctx.avals_in[0], ctx.avals_out[0]
    block = list(out.shape)
    if not tiled:
        block.insert(scatter_dimension, 1)
    op = ctx.hlo.ReduceScatterOp(ctx.tensor_type(block, out.dtype), x, scatter_dimension, groups)
    ctx.scalar_block(op.regions[0], [aval.dtype, aval.dtype], _combiner(ctx, "psum", aval.dtype))
    result = op.result
    if not tiled:
        result = ctx.hlo.reshape(ctx.ir_type(out), result)
    return [result]


@ppermute_p.def_lowering
def _ppermute_lowering(ctx, x, *, axes, axis_index_groups, perm):
    instances = _replica_groups("ppermute", axes, None)
    pairs = [(int(inst[s]), int(inst[d])) for inst in instances for s, d in perm]
    attr = ctx.ir.DenseIntElementsAttr.get(np.asarray(pairs, np.int64).reshape(-1, 2))
    op = ctx.hlo.CollectivePermuteOp(x, attr, results=[ctx.ir_type(ctx.avals_out[0])])
    return [op.result]


@axis_index_p.def_lowering
def _axis_index_lowering(ctx, *, axes):
    """The position of this replica in its instance of the axis: a lookup of
    ``replica_id`` in a table (identity for a single pmap)."""
    instances = _replica_groups("axis_index", axes, None)
    table = np.zeros(int(instances.max()) + 1, np.int32)
    for inst in instances:
        table[inst] = np.arange(len(inst), dtype=np.int32)
    u32 = ctx.tensor_type((), np.dtype(np.uint32))
    replica = ctx.hlo.ReplicaIdOp(results=[u32]).result
    index = ctx.convert(replica, np.dtype(np.uint32), np.dtype(np.int32))
    if np.array_equal(table, np.arange(len(table))):
        return [index]
    consts = ctx.constant(table, np.dtype(np.int32), table.shape)
    sliced = ctx.hlo.dynamic_slice(consts, [index], [1])
    return [ctx.hlo.reshape(ctx.tensor_type((), np.dtype(np.int32)), sliced)]


@all_to_all_p.def_lowering
def _all_to_all_lowering(ctx, x, *, axes, axis_index_groups, split_axis, concat_axis):
    groups = _replica_groups("all_to_all", axes, axis_index_groups)
    op = ctx.hlo.AllToAllOp(
        [x], split_axis, concat_axis, int(groups.shape[1]), ctx.ir.DenseIntElementsAttr.get(groups),
        results=[ctx.ir_type(ctx.avals_out[0])],
    )  # fmt: skip
    return [op.results[0]]


# === ragged_all_to_all: one block ======================================================
#
# ragged_all_to_all(operand, output, input_offsets, send_sizes, output_offsets,
# recv_sizes, axis_name) over a named axis of n members, N = len(offsets) =
# n * s (s slices per member). Member m sends its slice j (rows
# input_offsets[j] : + send_sizes[j] of operand, along axis 0) to member j // s,
# which writes it at rows output_offsets[j] : + recv_sizes[k] of its copy of
# output, k = m * s + j % s being the slot the receiver keeps for it; later
# slots overwrite earlier ones. So receiver r's slot k holds sender k // s's
# slice r * s + k % s, and
#
#     result[r] = output[r] with, for k in 0..N-1 in order,
#         rows start : start + recv_sizes[r][k] = operand[k // s][src : src + recv_sizes[r][k]]
#     where start = output_offsets[k // s][r * s + k % s],
#           src = input_offsets[k // s][r * s + k % s]
#
# (send_sizes[m][r * s + i] == recv_sizes[r][m * s + i] is the caller's
# promise, as in JAX; rows past an array's end are not read or written).
# Constraints, JAX 0.10.2's ValueErrors, in its order: (C1) the four offset
# and size arrays have integer dtypes, (C2) rank 1 with a positive length,
# then (C3) axis_name bound; (C4) N divisible by n (where it runs). The result
# has output's type, strong.
#
# Where it runs, as in JAX 0.10.2: over a pmap's devices (shard_map too) the
# reference computes the definition above; XLA's CPU backend has no
# ragged-all-to-all (JAX's module does not compile there: "UNIMPLEMENTED: HLO
# opcode `ragged-all-to-all` is not supported by XLA:CPU"), and pjrt lowers it
# as JAX does, to the same custom call, so it fails the same way there. Under
# vmap over its own axis name it is JAX's NotImplementedError; vmap over
# another axis maps the members' data into one bigger exchange (JAX's rule).
# Outside any named axis it is JAX's RuntimeError. Linear in operand and
# output: the JVP exchanges the tangents with the same offsets and sizes.

ragged_all_to_all_p = CollectivePrimitive("ragged_all_to_all")

_RAGGED_ARGS = ("input_offsets", "send_sizes", "output_offsets", "recv_sizes")


@ragged_all_to_all_p.def_abstract_eval
def _ragged_abstract_eval(operand, output, *offsets_and_sizes, axes, axis_index_groups):
    for name, aval in zip(_RAGGED_ARGS, offsets_and_sizes, strict=True):
        if not dtypes.is_integer(aval.dtype):  # (C1)
            raise ValueError(f"ragged_all_to_all {name} must be integer type.")
    for name, aval in zip(_RAGGED_ARGS, offsets_and_sizes, strict=True):
        if aval.ndim != 1 or aval.shape[0] < 1:  # (C2)
            raise ValueError(
                f"ragged_all_to_all {name} must be rank 1 with positive dimension size, "
                f"but got shape {tuple(aval.shape)}"
            )
    return output.update(weak_type=False)


def _ragged_impl(*args: Any, **params: Any) -> Any:
    raise RuntimeError(
        "ragged_all_to_all must be used within a mapped context like vmap or shard_map."
    )


ragged_all_to_all_p.def_impl(_ragged_impl)


def _ragged_jvp(primals, tangents, **params):
    """Linear in operand and output: the tangents exchanged the same way."""
    out = _bind(ragged_all_to_all_p, params["axes"], *primals, **params)
    operand_dot, output_dot = tangents[:2]
    if ad_helpers.is_zero(operand_dot) and ad_helpers.is_zero(output_dot):
        return out, ad_helpers.zero_tangent(ad_helpers.aval_of(out))
    dots = [
        ad_helpers.instantiate(t, ad_helpers.tangent_aval(ad_helpers.aval_of(x)))
        for t, x in zip(tangents[:2], primals[:2], strict=True)
    ]
    return out, _bind(ragged_all_to_all_p, params["axes"], *dots, *primals[2:], **params)


ragged_all_to_all_p.def_jvp(_ragged_jvp)


@ragged_all_to_all_p.def_transpose
def _ragged_transpose(ct, operand, output, input_offsets, send_sizes, output_offsets,
                      recv_sizes, *, axes, axis_index_groups):  # fmt: skip
    """JAX's rule: each received row's cotangent goes back to the row it was
    read from (the exchange run backwards: offsets and sizes swap roles, the
    received starts found by an all_to_all); the output rows a slice
    overwrote get no cotangent."""
    rest = [None] * 4
    undefined = [isinstance(x, ad_helpers.UndefinedPrimal) for x in (operand, output)]
    if isinstance(ct, Zero):  # pragma: no cover - a single-output rule gets no Zero
        return [Zero(x.aval) if u else None for x, u in zip((operand, output), undefined)] + rest
    params = {"axes": axes, "axis_index_groups": axis_index_groups}

    def exchanged(table: Any) -> Any:  # the receiver's view: all_to_all, tiled
        return _bind(all_to_all_p, axes, table, split_axis=0, concat_axis=0, **params)

    starts = exchanged(output_offsets)
    operand_ct = None
    if undefined[0]:
        zeros = ad_helpers.zeros(ad_helpers.aval_of(operand))
        operand_ct = _bind(
            ragged_all_to_all_p, axes, ct, zeros, starts, recv_sizes,
            exchanged(input_offsets), send_sizes, **params,
        )  # fmt: skip
    output_ct = None
    if undefined[1]:
        aval = ad_helpers.aval_of(ct)
        covered = _rows_written(starts, recv_sizes, aval.shape[0])
        mask = structural.broadcast_in_dim(covered, aval.shape, (0,))
        output_ct = elementwise.select(mask, ad_helpers.zeros(aval), ct)
    return [operand_ct, output_ct, *rest]


def _rows_written(starts: Any, sizes: Any, rows: int) -> Any:
    """Whether each of ``rows`` output rows lies in some ``starts[k] : + sizes[k]``."""
    index = np.dtype(np.int32)
    big = batch_rules.shape_of(starts)[0]
    row = structural.broadcast_in_dim(structural.iota(index, rows), (big, rows), (1,))
    start = structural.broadcast_in_dim(
        elementwise.convert_element_type(starts, index), (big, rows), (0,)
    )
    end = elementwise.add_p.bind(
        start,
        structural.broadcast_in_dim(
            elementwise.convert_element_type(sizes, index), (big, rows), (0,)
        ),
    )
    inside = elementwise.and_p.bind(
        elementwise.ge_p.bind(row, start), elementwise.lt_p.bind(row, end)
    )
    return reductions.reduce_or_p.bind(inside, axes=(0,))


def _received(a: Any, n: int, s: int) -> Any:
    """``(senders, n * s)`` -> ``(receivers, n * s)``: receiver ``r``'s slot
    ``k`` holds sender ``k // s``'s entry ``r * s + k % s``."""
    a = structural.reshape(a, (n, n, s))
    return structural.reshape(batch_rules.moveaxis(a, 1, 0), (n, n * s))


def _pick(table: Any, k: Any) -> Any:
    """``out[r, p] = table[r, k[r, p]]`` for an ``(n, N)`` table and in-range ``k``."""
    n, big = batch_rules.shape_of(table)
    index = tracing.get_aval(k, "ragged_all_to_all", 0).dtype
    rows = structural.broadcast_in_dim(structural.iota(index, n), batch_rules.shape_of(k), (0,))
    flat = elementwise.add_p.bind(
        elementwise.mul_p.bind(rows, elementwise.convert_element_type(big, index)), k
    )
    return indexing.gather_along_axis(structural.reshape(table, (n * big,)), flat, 0)


def _ragged_exchange(operand, output, input_offsets, output_offsets, recv_sizes, n: int):
    """The definition over the members at once (every argument has the members
    axis first): a gather of each output row's source row, where a slot covers it."""
    rows_in, rows_out = batch_rules.shape_of(operand)[1], batch_rules.shape_of(output)[1]
    big = batch_rules.shape_of(input_offsets)[1]
    if big % n:  # (C4)
        raise ValueError(
            f"ragged_all_to_all: the number of offsets ({big}) must be divisible by the size "
            f"of the named axis ({n})"
        )
    index = np.dtype(np.int32)
    starts = _received(elementwise.convert_element_type(output_offsets, index), n, big // n)
    sources = _received(elementwise.convert_element_type(input_offsets, index), n, big // n)
    lengths = elementwise.convert_element_type(recv_sizes, index)
    row = structural.broadcast_in_dim(structural.iota(index, rows_out), (n, big, rows_out), (2,))
    start = structural.broadcast_in_dim(starts, (n, big, rows_out), (0, 1))
    end = elementwise.add_p.bind(
        start, structural.broadcast_in_dim(lengths, (n, big, rows_out), (0, 1))
    )
    covered = elementwise.and_p.bind(
        elementwise.ge_p.bind(row, start), elementwise.lt_p.bind(row, end)
    )
    slot = structural.broadcast_in_dim(structural.iota(index, big), (n, big, rows_out), (1,))
    minus_one = structural.broadcast_in_dim(
        elementwise.convert_element_type(-1, index), (n, big, rows_out), ()
    )
    last = reductions.reduce_max_p.bind(elementwise.select(covered, slot, minus_one), axes=(1,))
    written = elementwise.ge_p.bind(last, elementwise.convert_element_type(0, index))
    k = elementwise.max_p.bind(last, elementwise.convert_element_type(0, index))  # (n, rows_out)
    # the source row: sender k // s's operand, at its offset plus the row's distance
    # from the slot's start (rows past the operand's end are not read)
    offset = _pick(sources, k)
    distance = elementwise.sub_p.bind(
        structural.broadcast_in_dim(structural.iota(index, rows_out), (n, rows_out), (1,)),
        _pick(starts, k),
    )
    sender = elementwise.div_p.bind(k, elementwise.convert_element_type(big // n, index))
    source_row = elementwise.add_p.bind(offset, distance)
    inside = elementwise.and_p.bind(
        elementwise.ge_p.bind(source_row, elementwise.convert_element_type(0, index)),
        elementwise.lt_p.bind(source_row, elementwise.convert_element_type(rows_in, index)),
    )
    written = elementwise.and_p.bind(written, inside)
    flat_row = elementwise.add_p.bind(
        elementwise.mul_p.bind(sender, elementwise.convert_element_type(rows_in, index)),
        elementwise.clamp(
            elementwise.convert_element_type(0, index),
            source_row,
            elementwise.convert_element_type(rows_in - 1, index),
        ),
    )
    rest = tuple(batch_rules.shape_of(operand)[2:])
    flat = structural.reshape(operand, (n * rows_in, *rest)) if rows_in else None
    if flat is None:  # an empty operand: nothing is read
        return output
    values = indexing.gather_along_axis(flat, structural.reshape(flat_row, (n * rows_out,)), 0)
    values = structural.reshape(values, (n, rows_out, *rest))
    mask = structural.broadcast_in_dim(written, (n, rows_out, *rest), (0, 1))
    return elementwise.select(mask, values, output)


@ragged_all_to_all_p.def_batch
def _ragged_batch(args, dims, *, axes, axis_index_groups):
    frame_name, size = _frame_size()
    if frame_name not in axes:
        return _ragged_outer_axis(args, dims, size, axes, axis_index_groups)
    if not on_device_axis():
        raise NotImplementedError("Please open a feature request!")  # JAX 0.10.2's words
    if axis_index_groups is not None or len(axes) > 1:
        raise NotImplementedError(
            "ragged_all_to_all: axis_index_groups and several axis names are not supported "
            "by the reference backend"
        )
    operand, output, input_offsets, _, output_offsets, recv_sizes = (
        batch_rules.bdim_to(x, d, size, 0) for x, d in zip(args, dims, strict=True)
    )
    out = _ragged_exchange(operand, output, input_offsets, output_offsets, recv_sizes, size)
    return out, 0


def _ragged_outer_axis(args, dims, size, axes, axis_index_groups):
    """vmap over another axis (JAX's rule): the mapped instances' rows are
    stacked into one operand and output per member, their offsets shifted to
    their block, and one exchange moves every instance's slices."""
    if all(d is None for d in dims):
        return _bind(ragged_all_to_all_p, axes, *args, axes=axes,
                     axis_index_groups=axis_index_groups), None  # fmt: skip
    if axis_index_groups is not None:
        raise NotImplementedError("Please open a feature request!")
    operand, output = (batch_rules.bdim_to(x, d, size, 0) for x, d in zip(args[:2], dims[:2]))
    rows_in, rows_out = batch_rules.shape_of(operand)[1], batch_rules.shape_of(output)[1]
    # the offsets and sizes with the instances second: (N, size)
    tables = [batch_rules.bdim_to(x, d, size, 1) for x, d in zip(args[2:], dims[2:])]
    big = batch_rules.shape_of(tables[0])[0]

    def shifted(table: Any, rows: int) -> Any:
        dtype = tracing.get_aval(table, "ragged_all_to_all", 0).dtype
        step = structural.iota(dtype, size)
        block = elementwise.mul_p.bind(step, elementwise.convert_element_type(rows, dtype))
        return elementwise.add_p.bind(table, structural.broadcast_in_dim(block, (big, size), (1,)))

    tables[0], tables[2] = shifted(tables[0], rows_in), shifted(tables[2], rows_out)
    merged = [
        structural.reshape(operand, (size * rows_in, *batch_rules.shape_of(operand)[2:])),
        structural.reshape(output, (size * rows_out, *batch_rules.shape_of(output)[2:])),
        *(structural.reshape(t, (big * size,)) for t in tables),
    ]
    out = _bind(ragged_all_to_all_p, axes, *merged, axes=axes, axis_index_groups=None)
    return structural.reshape(out, (size, rows_out, *batch_rules.shape_of(output)[2:])), 0


@ragged_all_to_all_p.def_lowering
def _ragged_lowering(ctx, *args, axes, axis_index_groups):
    """JAX's custom call (which XLA's CPU backend does not implement)."""
    groups = _replica_groups("ragged_all_to_all", axes, axis_index_groups)
    i64 = ctx.ir.IntegerType.get_signless(64)
    config = {
        "replica_groups": ctx.ir.DenseIntElementsAttr.get(groups),
        "channel_id": ctx.ir.IntegerAttr.get(i64, 1),
    }
    op = ctx.hlo.CustomCallOp.build_generic(
        results=[ctx.ir_type(ctx.avals_out[0])],
        operands=list(args),
        attributes={
            "call_target_name": ctx.ir.StringAttr.get("ragged_all_to_all"),
            "api_version": ctx.ir.IntegerAttr.get(ctx.ir.IntegerType.get_signless(32), 4),
            "backend_config": ctx.ir.DictAttr.get(config),
        },
    )
    return [op.results[0]]


# --- the public lax functions ------------------------------------------------------------


def _tree_collective(prim: CollectivePrimitive, api: str, x: Any, axis_name: Any, groups: Any):
    axes = _axes_tuple(axis_name)
    groups = _check_groups(api, groups, axes)
    _check_no_keys(api, x)
    leaves, tree = pytree.tree_flatten(x)
    outs = _bind(prim, axes, *leaves, axes=axes, axis_index_groups=groups) if leaves else []
    return pytree.tree_unflatten(tree, list(outs))


def _single_axis(api: str, axis_name: Any) -> Any:
    axes = _axes_tuple(axis_name)
    if len(axes) != 1:
        raise NotImplementedError(f"{api}: a tuple of axis names is not supported, got {axes}")
    return axes


def all_gather(
    x: Any, axis_name: Any, *, axis_index_groups: Any = None, axis: int = 0, tiled: bool = False
) -> Any:
    """Every member's ``x`` stacked along a new ``axis`` (concatenated if ``tiled``)."""
    axes = _single_axis("all_gather", axis_name)
    groups = _check_groups("all_gather", axis_index_groups, axes)
    n = axis_size(axes[0])

    def gather(leaf: Any) -> Any:
        ndim = tracing.get_aval(leaf, "all_gather", 0).ndim
        where = normalize_axis("all_gather", axis, ndim if tiled else ndim + 1)
        return _bind(
            all_gather_p, axes, leaf, axes=axes, axis_index_groups=groups, axis_size=n,
            axis=where, tiled=bool(tiled),
        )  # fmt: skip

    return pytree.tree_map(gather, x)


def psum_scatter(
    x: Any,
    axis_name: Any,
    *,
    scatter_dimension: int = 0,
    axis_index_groups: Any = None,
    tiled: bool = False,
) -> Any:
    """``psum(x)`` with each member keeping only its own slice along ``scatter_dimension``."""
    axes = _single_axis("psum_scatter", axis_name)
    groups = _check_groups("psum_scatter", axis_index_groups, axes)

    _check_no_keys("psum_scatter", x)

    def scatter(leaf: Any) -> Any:
        ndim = tracing.get_aval(leaf, "psum_scatter", 0).ndim
        dim = normalize_axis("psum_scatter", scatter_dimension, ndim, "scatter_dimension")
        return _bind(
            psum_scatter_p, axes, leaf, axes=axes, axis_index_groups=groups,
            scatter_dimension=dim, tiled=bool(tiled),
        )  # fmt: skip

    return pytree.tree_map(scatter, x)


def ppermute(x: Any, axis_name: Any, perm: Sequence[tuple[int, int]]) -> Any:
    """Member ``d`` gets member ``s``'s ``x`` for each ``(s, d)`` in ``perm``; others get 0."""
    axes = _single_axis("ppermute", axis_name)
    n = axis_size(axes[0])
    perm = tuple((int(s), int(d)) for s, d in perm)
    sources, dests = [s for s, _ in perm], [d for _, d in perm]
    if len(set(sources)) != len(sources) or len(set(dests)) != len(dests):
        raise ValueError(f"ppermute: perm sources and destinations must be unique, got {perm}")
    if any(not 0 <= i < n for i in sources + dests):
        raise ValueError(f"ppermute: perm {perm} has an index outside range({n})")
    return pytree.tree_map(
        lambda leaf: _bind(ppermute_p, axes, leaf, axes=axes, axis_index_groups=None, perm=perm),
        x,
    )


def axis_index(axis_name: Any) -> Any:
    """This member's position along ``axis_name`` (int32); for a tuple of names,
    its position among all their members numbered row-major (the first name
    the slowest), as JAX."""
    axes = _axes_tuple(axis_name)
    if len(axes) != 1:
        index = None
        for name in axes:
            own = _bind(axis_index_p, (name,), axes=(name,))
            if index is None:
                index = own
            else:
                size = np.asarray(axis_size(name), np.int32)
                index = elementwise.add(elementwise.mul(index, size), own)
        if index is None:  # no names: the one member of an empty product (weak, as JAX)
            return 0
        return index
    return _bind(axis_index_p, axes, axes=axes)


def all_to_all(
    x: Any,
    axis_name: Any,
    split_axis: int,
    concat_axis: int,
    *,
    axis_index_groups: Any = None,
    tiled: bool = False,
) -> Any:
    """Exchange blocks between the members of ``axis_name`` (``x`` a pytree).

    ``tiled=True``: member ``m`` splits ``x`` into ``n`` blocks along
    ``split_axis`` (its size must divide by ``n``, the members in a group),
    sends block ``k`` to member ``k`` and concatenates what it receives along
    ``concat_axis``, in member order: the split axis shrinks ``n`` times and
    the concat axis grows ``n`` times. ``tiled=False``: ``x.shape[split_axis]``
    must be ``n``; the result is
    ``np.insert(np.delete(x.shape, split_axis), concat_axis, n)``-shaped, with
    ``out[m]`` at index ``k`` of ``concat_axis`` equal to ``x[k]`` at index
    ``m`` of ``split_axis``. Negative axes count from the end (of ``x`` for
    ``split_axis``, of the result for ``concat_axis``).
    """
    axes = _axes_tuple(axis_name)
    groups = _check_groups("all_to_all", axis_index_groups, axes)
    n = _scatter_count(axes, groups)

    def exchange(leaf: Any) -> Any:
        ndim = tracing.get_aval(leaf, "all_to_all", 0).ndim
        split = normalize_axis("all_to_all", split_axis, ndim, "split_axis")
        concat = normalize_axis("all_to_all", concat_axis, ndim, "concat_axis")
        shape = tracing.get_aval(leaf, "all_to_all", 0).shape
        if tiled and shape[split] % n:
            raise ValueError(
                f"all_to_all: the size of split_axis ({shape[split]}) has to be divisible by the "
                f"size of the named axis {axes[0]} ({n})"
            )
        if not tiled:
            if shape[split] != n:
                raise ValueError(
                    "all_to_all requires the size of the mapped axis axis_name to equal "
                    f"x.shape[split_axis], but they are {n} and {shape[split]} respectively."
                )
            # a size-1 axis at concat_axis to concatenate into, the split axis
            # (now of blocks of size 1) removed after
            if split < concat:
                concat += 1
                leaf = structural.expand_dims(leaf, (concat,))
            elif concat < split:
                leaf = structural.expand_dims(leaf, (concat,))
                split += 1
        out = _bind(
            all_to_all_p, axes, leaf, axes=axes, axis_index_groups=groups, split_axis=split,
            concat_axis=concat,
        )  # fmt: skip
        if not tiled and split != concat:
            out = structural.squeeze(out, (split,))
        return out

    return pytree.tree_map(exchange, x)


def ragged_all_to_all(
    operand: Any,
    output: Any,
    input_offsets: Any,
    send_sizes: Any,
    output_offsets: Any,
    recv_sizes: Any,
    *,
    axis_name: Any,
    axis_index_groups: Any = None,
) -> Any:
    """``jax.lax.ragged_all_to_all``: the members of ``axis_name`` exchange
    ragged slices (rows of ``operand``) into their copies of ``output`` (the
    ragged_all_to_all block above). Checked as JAX checks: the offsets' and
    sizes' types and ranks first, then the axis name."""
    args = (operand, output, input_offsets, send_sizes, output_offsets, recv_sizes)
    avals = [tracing.get_aval(x, "ragged_all_to_all", i) for i, x in enumerate(args)]
    _ragged_abstract_eval(*avals, axes=(), axis_index_groups=None)
    names = tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)
    unbound = [name for name in names if axis_size_or_none(name) is None]
    if unbound and not any(isinstance(x, tracing.Tracer) for x in args):
        _ragged_impl()  # eagerly, as JAX's impl: RuntimeError
    if unbound:
        raise NameError(  # (C3), JAX 0.10.2's words
            f"Found an unbound axis name: {unbound[0]}. To fix this, please call "
            "ragged_all_to_all under `jax.shard_map`."
        )
    axes = _axes_tuple(axis_name)
    groups = _check_groups("ragged_all_to_all", axis_index_groups, axes)
    return _bind(ragged_all_to_all_p, axes, *args, axes=axes, axis_index_groups=groups)


__all__ = [
    "all_gather", "all_to_all", "axis_index", "pmax", "pmean", "pmin", "ppermute", "psum",
    "psum_scatter", "ragged_all_to_all",
]  # fmt: skip
