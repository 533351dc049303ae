"""XLA's general gather and scatter: ``lax.gather`` and ``lax.scatter*`` with dimension numbers.

These are the StableHLO ``gather``/``scatter`` ops (with JAX's convention that
the index vector is always the LAST dimension of the indices). Notation for
``gather(operand, indices, dn, slice_sizes)``: ``batch_shape =
indices.shape[:-1]``; for a batch index ``b``, the *start* of its slice is an
operand index with ``start[dn.start_index_map[k]] = indices[b][k]``,
``start[dn.operand_batching_dims[j]] = b[dn.start_indices_batching_dims[j]]``
and 0 elsewhere. Then::

    out[b, w] = operand[start(b) + full(w)]      # before the final transpose

where ``w`` runs over the *window* dims of the operand (those neither in
``collapsed_slice_dims`` nor in ``operand_batching_dims``, each of extent
``slice_sizes[d]``) and ``full(w)`` puts ``w`` at those dims, 0 elsewhere.
The result's dims in ``offset_dims`` are the window dims (in order), its other
dims the batch dims (in order), so its shape is (constraints: the gather block)::

    rank = len(offset_dims) + indices.ndim - 1
    shape[i] = window_sizes.next() if i in offset_dims else batch_shape.next()

``scatter(operand, indices, updates, dn)`` is the mirror image: ``updates``
has its window dims at ``update_window_dims`` and its other (scatter) dims
shaped ``batch_shape``; for each ``b`` in row-major order, the window
``updates[b]`` (with size-1 dims inserted at ``inserted_window_dims`` and
``operand_batching_dims``) is combined into ``operand`` at ``start(b)`` by
``combine(old, new)`` = ``new`` (scatter), ``+``, ``*``, ``min`` or ``max``.

Out-of-bounds starts (``GatherScatterMode``). A start is in bounds when
``0 <= start[d] <= operand.shape[d] - window[d]`` for every ``d`` in
``start_index_map``; otherwise:

* ``CLIP``: the start is clamped into that range (gather and scatter);
* ``FILL_OR_DROP``: a gather's whole window reads ``fill_value``; a
  scatter's whole window is dropped;
* ``PROMISE_IN_BOUNDS`` (the caller promises in-bounds starts): what XLA does
  -- a gather clamps, a scatter drops.

The primitives are ``general_gather`` and ``general_scatter[_add|_mul|_min|_max]``
rather than ``gather``/``scatter``, apart from the one-axis primitives of
:mod:`refimpl.primitives.indexing` (``np.take`` layout: ``gather_along_axis``,
``scatter``, ``scatter_add``) that the numpy layer's indexing, the masking
rules and the printed programs rely on
(docs/semantics.md, "General gather and scatter").
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from refimpl import dtypes, tracing
from refimpl.core import ShapedArray
from refimpl.primitives import (
    ad_helpers,
    batch_rules,
    elementwise,
    indexing,
    ref_context,
    rule_context,
    structural,
)
from refimpl.primitives.base import Primitive
from refimpl.transforms.masking.shape_spec import Dim

# --- dimension numbers and modes -------------------------------------------------------


class GatherDimensionNumbers(NamedTuple):
    """``jax.lax.GatherDimensionNumbers``: how the operand, the indices (index
    vector last) and the output of :func:`gather` relate (module docstring)."""

    offset_dims: tuple[int, ...]
    collapsed_slice_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    start_indices_batching_dims: tuple[int, ...] = ()


class ScatterDimensionNumbers(NamedTuple):
    """``jax.lax.ScatterDimensionNumbers``: how the operand, the indices (index
    vector last) and the updates of a scatter relate (module docstring)."""

    update_window_dims: tuple[int, ...]
    inserted_window_dims: tuple[int, ...]
    scatter_dims_to_operand_dims: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    scatter_indices_batching_dims: tuple[int, ...] = ()


class GatherScatterMode(enum.Enum):
    """What an out-of-bounds start does (module docstring)."""

    CLIP = enum.auto()
    FILL_OR_DROP = enum.auto()
    PROMISE_IN_BOUNDS = enum.auto()

    @staticmethod
    def from_any(mode: str | GatherScatterMode | None) -> GatherScatterMode:
        """JAX's parsing: ``"clip"``; ``None``, ``"fill"`` or ``"drop"``;
        ``"promise_in_bounds"``; or a member. (A gather's ``None`` is
        ``PROMISE_IN_BOUNDS``, decided in :func:`gather`.)"""
        if isinstance(mode, GatherScatterMode):
            return mode
        if isinstance(mode, enum.Enum) and mode.name in GatherScatterMode.__members__:
            return GatherScatterMode[mode.name]  # jax.lax.GatherScatterMode members
        if mode == "clip":
            return GatherScatterMode.CLIP
        if mode is None or mode == "fill" or mode == "drop":
            return GatherScatterMode.FILL_OR_DROP
        if mode == "promise_in_bounds":
            return GatherScatterMode.PROMISE_IN_BOUNDS
        raise ValueError(f'Unknown gather mode "{mode}"')


def _dims(name: str, value: Any, field: str) -> tuple[int, ...]:
    try:
        items = tuple(value)
    except TypeError:
        raise TypeError(f"{name}: {field} must be a sequence of ints, got {value!r}") from None
    if any(isinstance(i, bool) or not isinstance(i, (int, np.integer)) for i in items):
        raise TypeError(f"{name}: {field} must be a sequence of ints, got {value!r}")
    return tuple(int(i) for i in items)


def _as_dnums(name: str, dn: Any, kind: type[Any]) -> Any:
    """``dn`` (ours, JAX's, or any object with the fields) as ``kind`` of int tuples."""
    try:
        fields = {f: getattr(dn, f) for f in kind._fields}
    except AttributeError:
        raise TypeError(
            f"{name}: dimension_numbers must be a lax.{kind.__name__}, got {dn!r}"
        ) from None
    return kind(**{f: _dims(name, v, f) for f, v in fields.items()})


def _gather_dnums_of(dn: ScatterDimensionNumbers) -> GatherDimensionNumbers:
    """The gather reading back what a scatter with ``dn`` wrote (its transpose)."""
    return GatherDimensionNumbers(
        offset_dims=dn.update_window_dims,
        collapsed_slice_dims=dn.inserted_window_dims,
        start_index_map=dn.scatter_dims_to_operand_dims,
        operand_batching_dims=dn.operand_batching_dims,
        start_indices_batching_dims=dn.scatter_indices_batching_dims,
    )


def _scatter_window(operand_shape, updates_shape, dn: ScatterDimensionNumbers) -> tuple:
    """The window of one update in operand dims: 1 at inserted and batching
    dims, the updates' window extents (in order) elsewhere."""
    sizes = iter(updates_shape[d] for d in dn.update_window_dims)
    skip = set(dn.inserted_window_dims) | set(dn.operand_batching_dims)
    return tuple(1 if d in skip else next(sizes) for d in range(len(operand_shape)))


# --- shape checks (JAX's, in JAX's order and words) ---------------------------------------


def _cite(label: str | None) -> str:
    """`` (C4)``: the constraint label a gather error ends with (the scatters
    pass none)."""
    return f" ({label})" if label else ""


def _sorted(name, dims, op, field, label=None):
    if any(b < a for a, b in zip(dims, dims[1:])):
        raise TypeError(f"{name}: {field} in {op} op must be sorted; got {dims}{_cite(label)}")


def _in_range(name, dims, rank, op, field, *, only_ends=False, label=None):
    """JAX's two range checks: every dim, or (``only_ends``, for a tuple
    checked sorted) its first if negative, else its last if too large --
    except 0, which JAX's ``if invalid_dim:`` lets through."""
    if only_ends:
        bad = [dims[0]] if dims and dims[0] < 0 else [dims[-1]] if dims and dims[-1] >= rank else []
        bad = [d for d in bad if d != 0]
    else:
        bad = [d for d in dims if not 0 <= d < rank][:1]
    if bad:
        raise TypeError(
            f"{name}: Invalid {field} set in {op} op; valid range is [0, {rank}); got: {bad[0]}."
            f"{_cite(label)}"
        )


def _unique(name, dims, op, field, label=None):
    if len(set(dims)) != len(dims):
        raise TypeError(f"{name}: {field} in {op} op must not repeat; got: {dims}.{_cite(label)}")


def _disjoint(name, a, b, op, field_a, field_b, label=None):
    if set(a) & set(b):
        raise TypeError(
            f"{name}: {field_a} and {field_b} in {op} op must be disjoint; got: {a} and {b}."
            f"{_cite(label)}"
        )


def _check_indices(name: str, indices: ShapedArray, op: str, label: str | None = None) -> int:
    if not dtypes.is_integer(indices.dtype):
        raise ValueError(f"{name}: indices must have an integer type{_cite(label)}")
    if indices.ndim == 0:
        raise TypeError(
            f"{name}: {op} index leaf dimension must be within [0, rank(indices) + 1). "
            f"rank(indices) is 0 and {op.lower()} index leaf dimension is -1.{_cite(label)}"
        )
    return indices.ndim - 1


def _check_batching(
    name: str,
    op: str,
    operand: ShapedArray,
    indices: ShapedArray,
    operand_dims: tuple[int, ...],
    indices_dims: tuple[int, ...],
    indices_field: str,
    disjoint_from: list[tuple[tuple[int, ...], str]],
    label: str | None = None,
) -> tuple[int, ...]:
    """JAX's checks of the batching dims, shared by gather and scatter (in
    each op's order and words); returns the batch shape."""
    first, second = (_unique, _sorted) if op == "gather" else (_sorted, _unique)
    first(name, operand_dims, op, "operand_batching_dims", label)
    second(name, operand_dims, op, "operand_batching_dims", label)
    _in_range(
        name, operand_dims, operand.ndim, op, "operand_batching_dims", only_ends=True, label=label
    )
    for dims, field in disjoint_from:
        _disjoint(name, dims, operand_dims, op, field, "operand_batching_dims", label)
    _unique(name, indices_dims, op, indices_field, label)
    _in_range(name, indices_dims, indices.ndim, op, indices_field, label=label)
    title = op.capitalize()
    if indices.ndim - 1 in indices_dims:
        raise TypeError(
            f"{name}: {title} op cannot have the index vector dimension as a batching "
            f"dimension; got {indices_dims}.{_cite(label)}"
        )
    if len(operand_dims) != len(indices_dims):
        space = "" if op == "gather" else " "  # JAX's gather message lacks it
        raise TypeError(
            f"{name}: {title} op requires equal numbers of operand_batching_dims and "
            f"{indices_field}, got {operand_dims} and{space}{indices_dims}.{_cite(label)}"
        )
    operand_batch = tuple(operand.shape[d] for d in operand_dims)
    indices_batch = tuple(indices.shape[d] for d in indices_dims)
    if operand_batch != indices_batch:
        raise TypeError(
            f"{name}: {title} op requires operand batching dimensions and indices batching "
            f"dimensions to have the same shape, got {operand_batch} and {indices_batch}."
            f"{_cite(label)}"
        )
    return operand_batch


def check_scatter(
    name: str,
    operand: ShapedArray,
    indices: ShapedArray,
    updates: ShapedArray,
    dn: ScatterDimensionNumbers,
) -> None:
    """JAX's checks of a scatter's dimension numbers against the shapes."""
    ivd = _check_indices(name, indices, "Scatter")
    batch_shape = indices.shape[:-1]
    expected_rank = len(batch_shape) + len(dn.update_window_dims)
    if updates.ndim != expected_rank:
        raise TypeError(
            f"{name}: Updates tensor must be of rank {expected_rank}; got {updates.ndim}."
        )
    _sorted(name, dn.update_window_dims, "scatter", "update_window_dims")
    _unique(name, dn.update_window_dims, "scatter", "update_window_dims")
    _in_range(name, dn.update_window_dims, updates.ndim, "scatter", "update_window_dims",
              only_ends=True)  # fmt: skip
    _sorted(name, dn.inserted_window_dims, "scatter", "inserted_window_dims")
    _unique(name, dn.inserted_window_dims, "scatter", "inserted_window_dims")
    _in_range(name, dn.inserted_window_dims, operand.ndim, "scatter", "inserted_window_dims",
              only_ends=True)  # fmt: skip
    operand_batch = _check_batching(
        name, "scatter", operand, indices, dn.operand_batching_dims,
        dn.scatter_indices_batching_dims, "scatter_indices_batching_dims",
        [(dn.inserted_window_dims, "inserted_window_dims"),
         (dn.scatter_dims_to_operand_dims, "scatter_dims_to_operand_dims")],
    )  # fmt: skip
    scatter_dims = [d for d in range(updates.ndim) if d not in dn.update_window_dims]
    updates_batch = tuple(updates.shape[scatter_dims[d]] for d in dn.scatter_indices_batching_dims)
    if operand_batch != updates_batch:
        raise TypeError(
            f"{name}: Scatter op requires operand batching dimensions and updates batching "
            f"dimensions to have the same shape, got {operand_batch} and {updates_batch}."
        )
    window = (
        len(dn.update_window_dims) + len(dn.inserted_window_dims) + len(dn.operand_batching_dims)
    )
    if operand.ndim != window:
        raise TypeError(
            f"{name}: Scatter op has window of size {window}; doesn't match operand of rank "
            f"{operand.ndim}."
        )
    if len(dn.scatter_dims_to_operand_dims) != indices.shape[ivd]:
        raise TypeError(
            f"{name}: Scatter op has {len(dn.scatter_dims_to_operand_dims)} elements in "
            f"scatter_dims_to_operand_dims and the bound of dimension index_vector_dim={ivd} "
            f"of indices is {indices.shape[ivd]}. These two numbers must be equal"
        )
    for i, d in enumerate(dn.scatter_dims_to_operand_dims):
        if not 0 <= d < operand.ndim:
            raise TypeError(
                f"{name}: Invalid scatter_dims_to_operand_dims mapping; domain is "
                f"[0, {operand.ndim}), got: {i}->{d}."
            )
    _unique(name, dn.scatter_dims_to_operand_dims, "scatter", "scatter_dims_to_operand_dims")
    skip = set(dn.inserted_window_dims) | set(dn.operand_batching_dims)
    bounds = [n for d, n in enumerate(operand.shape) if d not in skip]
    for bound, d in zip(bounds, dn.update_window_dims, strict=True):
        if bound < updates.shape[d]:
            raise TypeError(
                f"{name}: Bounds of the window dimensions of updates must not exceed the "
                f"bounds of the corresponding dimensions of operand. For dimension {d}, "
                f"updates bound is {updates.shape[d]}, operand bound is {bound}."
            )
    for d, want in zip(scatter_dims, batch_shape, strict=True):
        if updates.shape[d] != want:
            raise TypeError(
                f"{name}: Bounds of the scatter dimensions of updates must be the same as the "
                f"bounds of the corresponding dimensions of scatter indices. For scatter "
                f"dimension {d}, updates bound is {updates.shape[d]}, indices bound is {want}."
            )


# --- the index computation shared by the impls ------------------------------------------


def _int64_indices(indices: np.ndarray) -> np.ndarray:
    """Indices as int64; unsigned values past int64's range stay out of bounds."""
    if indices.dtype == np.uint64:
        indices = np.minimum(indices, np.uint64(np.iinfo(np.int64).max))
    return indices.astype(np.int64)


def _start(
    vector: np.ndarray,
    batch_index: tuple[int, ...],
    operand_shape: Sequence[int],
    window: Sequence[int],
    index_map: Sequence[int],
    operand_batching_dims: Sequence[int],
    indices_batching_dims: Sequence[int],
    clip: bool,
) -> tuple[list[int], bool]:
    """(the operand index where batch element ``batch_index``'s window starts,
    whether it was in bounds); with ``clip`` an out-of-bounds start is clamped."""
    start = [0] * len(operand_shape)
    for k, d in enumerate(index_map):
        start[d] = int(vector[k])
    for d, i in zip(operand_batching_dims, indices_batching_dims, strict=True):
        start[d] = batch_index[i]
    inside = all(0 <= start[d] <= operand_shape[d] - window[d] for d in index_map)
    if clip:
        for d in index_map:
            start[d] = min(max(start[d], 0), operand_shape[d] - window[d])
    return start, inside


def _region(start: Sequence[int], window: Sequence[int]) -> tuple[slice, ...]:
    return tuple(slice(s, s + n) for s, n in zip(start, window, strict=True))


# === gather (``lax.gather``, the primitive ``general_gather``): one block ==============
#
# gather(operand, indices, dn, slice_sizes, mode, fill_value). The index vector
# is the LAST dim of indices; batch_shape = indices.shape[:-1]. For each batch
# index b (the module docstring has the same in prose):
#
#     start(b)[dn.start_index_map[k]]      = indices[b][k]
#     start(b)[dn.operand_batching_dims[j]] = b[dn.start_indices_batching_dims[j]]
#     start(b)[d]                           = 0 for every other d
#     window dims W = the operand dims neither in collapsed_slice_dims nor in
#                     operand_batching_dims, of extents slice_sizes[d]
#     out[b, w] = operand[start(b) + full(w)]    (w over W; full(w): 0 off W)
#     then the W dims go to offset_dims, the batch dims (in order) elsewhere:
#     out.ndim = len(offset_dims) + indices.ndim - 1
#     out.shape[i] = next extent of W if i in offset_dims else next of batch_shape
#     out.dtype, weak type = the operand's
#
# A start is out of bounds when start[d] is outside [0, operand.shape[d] -
# slice_sizes[d]] for some d in start_index_map. mode CLIP and
# PROMISE_IN_BOUNDS (the default, mode=None) clamp it into that range;
# FILL_OR_DROP ("fill") makes the whole window read fill_value (default NaN,
# the minimum of a signed / maximum of an unsigned integer type, True).
#
# Constraints (JAX's checks, in JAX's order and words; each error ends with
# the label). With ivd = indices.ndim - 1:
#   (C1) indices have an integer dtype (ValueError) and rank >= 1;
#   (C2) offset_dims are sorted, unique and in [0, out.ndim);
#   (C3) len(start_index_map) == indices.shape[ivd]; its entries are in
#        [0, operand.ndim) and unique;
#   (C4) collapsed_slice_dims are sorted, in range and unique;
#   (C5) operand_batching_dims are unique, sorted, in range and disjoint from
#        collapsed_slice_dims and start_index_map; start_indices_batching_dims
#        are unique, in [0, indices.ndim) and exclude ivd; both have the same
#        length and the paired dims the same sizes;
#   (C6) len(slice_sizes) == operand.ndim == len(offset_dims) +
#        len(collapsed_slice_dims) + len(operand_batching_dims);
#   (C7) 0 <= slice_sizes[d] <= operand.shape[d] (checked only when indices
#        is non-empty, as JAX);
#   (C8) slice_sizes[d] == 1 for d in collapsed_slice_dims, <= 1 for d in
#        operand_batching_dims.
# All are TypeErrors but C1's dtype. The binder also parses its arguments:
# dimension_numbers a GatherDimensionNumbers of ints, a known mode, a scalar
# fill_value.
#
# Example: operand = [[0, 1, 2], [3, 4, 5], [6, 7, 8]], indices = [[2], [0]],
# dn = GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
# start_index_map=(0,)), slice_sizes = (1, 3): rows 2 and 0, [[6, 7, 8],
# [0, 1, 2]]. With indices [[5]] and mode="fill": [[nan, nan, nan]].
#
# Rules below, in the fixed order: abstract_eval, impl, jvp, transpose, batch,
# mask, lowering, then the public binder ``gather``. They use the helpers
# shared with the scatters above (dimension numbers, JAX's check helpers, the
# index computation _start/_region) and below (_plus, _clamped,
# _start_bounds, _lowering_dnums).

general_gather_p = Primitive("general_gather")


def gather_shape(
    name: str, operand: ShapedArray, indices: ShapedArray, dn: GatherDimensionNumbers, sizes
) -> tuple[int, ...]:
    """The output shape (module docstring), after JAX's checks of the dimension numbers."""
    ivd = _check_indices(name, indices, "Gather", "C1")
    _sorted(name, dn.offset_dims, "gather", "offset_dims", "C2")
    _unique(name, dn.offset_dims, "gather", "offset_dims", "C2")
    out_rank = len(dn.offset_dims) + indices.ndim - 1
    for i, d in enumerate(dn.offset_dims):
        if not 0 <= d < out_rank:
            raise TypeError(
                f"{name}: Offset dimension {i} in gather op is out of bounds; got {d}, but "
                f"should have been in [0, {out_rank}) (C2)"
            )
    if len(dn.start_index_map) != indices.shape[ivd]:
        raise TypeError(
            f"{name}: Gather op has {len(dn.start_index_map)} elements in start_index_map and "
            f"the bound of dimension index_vector_dim={ivd} of indices is "
            f"{indices.shape[ivd]}. These two numbers must be equal. (C3)"
        )
    for i, d in enumerate(dn.start_index_map):
        if not 0 <= d < operand.ndim:
            raise TypeError(
                f"{name}: Invalid start_index_map; domain is [0, {operand.ndim}), got: {i}->{d}."
                " (C3)"
            )
    _unique(name, dn.start_index_map, "gather", "start_index_map", "C3")
    _sorted(name, dn.collapsed_slice_dims, "gather", "collapsed_slice_dims", "C4")
    _in_range(name, dn.collapsed_slice_dims, operand.ndim, "gather", "collapsed_slice_dims",
              only_ends=True, label="C4")  # fmt: skip
    _unique(name, dn.collapsed_slice_dims, "gather", "collapsed_slice_dims", "C4")
    _check_batching(
        name, "gather", operand, indices, dn.operand_batching_dims,
        dn.start_indices_batching_dims, "start_indices_batching_dims",
        [(dn.collapsed_slice_dims, "collapsed_slice_dims"),
         (dn.start_index_map, "start_index_map")], label="C5",
    )  # fmt: skip
    if len(sizes) != operand.ndim:
        raise TypeError(
            f"{name}: Gather op must have one slice size for every input dimension; got: "
            f"len(slice_sizes)={len(sizes)}, input_shape.rank={operand.ndim} (C6)"
        )
    described = len(dn.offset_dims) + len(dn.collapsed_slice_dims) + len(dn.operand_batching_dims)
    if len(sizes) != described:
        raise TypeError(
            f"{name}: All components of the offset index in a gather op must either be a "
            f"offset dimension or explicitly collapsed/batching; got len(slice_sizes)="
            f"{len(sizes)}, output_slice_sizes={dn.offset_dims}, collapsed_slice_dims="
            f"{dn.collapsed_slice_dims}, operand_batching_dims={dn.operand_batching_dims}. (C6)"
        )
    if indices.size:  # JAX skips this check for empty indices
        for i, (size, bound) in enumerate(zip(sizes, operand.shape, strict=True)):
            if not 0 <= size <= bound:
                raise TypeError(
                    f"{name}: Slice size at index {i} in gather op is out of range, must be "
                    f"within [0, {bound} + 1), got {size}. (C7)"
                )
    for i, d in enumerate(dn.collapsed_slice_dims):
        if sizes[d] != 1:
            raise TypeError(
                f"{name}: Gather op can only collapse slice dims with bound 1, but bound is "
                f"{sizes[d]} for index {d} at position {i}. (C8)"
            )
    for i, d in enumerate(dn.operand_batching_dims):
        if sizes[d] > 1:
            raise TypeError(
                f"{name}: Gather op can only have operand batching dims with bound 0/1, but "
                f"bound is {sizes[d]} for index {d} at position {i}. (C8)"
            )
    batch = iter(indices.shape[:-1])
    skip = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
    window = iter(s for d, s in enumerate(sizes) if d not in skip)
    return tuple(next(window) if i in dn.offset_dims else next(batch) for i in range(out_rank))


def _scatter_dnums_of(dn: GatherDimensionNumbers) -> ScatterDimensionNumbers:
    return ScatterDimensionNumbers(
        update_window_dims=dn.offset_dims,
        inserted_window_dims=dn.collapsed_slice_dims,
        scatter_dims_to_operand_dims=dn.start_index_map,
        operand_batching_dims=dn.operand_batching_dims,
        scatter_indices_batching_dims=dn.start_indices_batching_dims,
    )


# --- gather: abstract_eval


@general_gather_p.def_abstract_eval
def _gather_abstract_eval(
    operand, indices, *, dimension_numbers, slice_sizes, indices_are_sorted, unique_indices,
    mode, fill_value,
):  # fmt: skip
    """Shape: ``len(offset_dims) + indices.ndim - 1`` dims, the ``offset_dims``
    taking the window extents ``slice_sizes[d]`` of the operand dims ``d``
    neither collapsed nor batching (in order), the others ``indices.shape[:-1]``
    (in order). Dtype and weak type: the operand's."""
    shape = gather_shape("gather", operand, indices, dimension_numbers, slice_sizes)
    return ShapedArray(shape, operand.dtype, operand.weak_type)


# --- gather: impl (NumPy)


@general_gather_p.def_impl
def _gather_impl(
    operand, indices, *, dimension_numbers, slice_sizes, indices_are_sorted, unique_indices,
    mode, fill_value,
):  # fmt: skip
    dn = dimension_numbers
    vectors = _int64_indices(indices)
    batch_shape = indices.shape[:-1]
    skip = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
    window_shape = tuple(n for d, n in enumerate(slice_sizes) if d not in skip)
    # a batching dim's window (size 0 or 1) is the one element at the batch index
    window = [1 if d in dn.operand_batching_dims else n for d, n in enumerate(slice_sizes)]
    fill = mode == GatherScatterMode.FILL_OR_DROP
    gathered = np.empty(batch_shape + window_shape, operand.dtype)
    for b in np.ndindex(*batch_shape):
        start, inside = _start(
            vectors[b], b, operand.shape, window, dn.start_index_map,
            dn.operand_batching_dims, dn.start_indices_batching_dims, clip=not fill,
        )  # fmt: skip
        if fill and not inside:
            gathered[b] = np.asarray(fill_value).astype(operand.dtype)
        else:
            gathered[b] = operand[_region(start, window)].reshape(window_shape)
    # batch dims first, window dims last -> window dims at offset_dims
    batch_axes = iter(range(len(batch_shape)))
    perm = [
        len(batch_shape) + dn.offset_dims.index(i) if i in dn.offset_dims else next(batch_axes)
        for i in range(gathered.ndim)
    ]
    return np.transpose(gathered, perm)


# --- gather: jvp (linear in the operand; indices are integers: float0 tangents)


@general_gather_p.def_jvp
def _gather_jvp(primals, tangents, **params):
    """The tangent gathered alike (a filled window's tangent is 0)."""
    operand, indices = primals
    ans = general_gather_p.bind(operand, indices, **params)
    # unreachable from the public API: the jvp trace calls a rule only when some operand has a
    # nonzero tangent, and the indices (integers) never have one (ad.JVPTrace.process_primitive)
    if ad_helpers.is_zero(tangents[0]):  # pragma: no cover
        return ans, ad_helpers.zero_tangent(ad_helpers.aval_of(ans))
    if params["mode"] == GatherScatterMode.FILL_OR_DROP:
        params = {**params, "fill_value": 0}
    return ans, general_gather_p.bind(tangents[0], indices, **params)


# --- gather: transpose (a scatter_add into zeros)


@general_gather_p.def_transpose
def _gather_transpose(ct, operand, indices, *, dimension_numbers, slice_sizes, fill_value,
                      **params):  # fmt: skip
    """Scatter-add the cotangent back into (strong) zeros, same mode."""
    # unreachable from the public API: the backward pass skips an equation whose one output has
    # no cotangent and never passes a symbolic Zero to a single-output rule (ad.backward_pass)
    if isinstance(ct, ad_helpers.Zero):  # pragma: no cover
        return [ad_helpers.Zero(operand.aval), None]
    zeros = ad_helpers.zeros(operand.aval.update(weak_type=False))
    dn = _scatter_dnums_of(dimension_numbers)
    return [general_scatter_add_p.bind(zeros, indices, ct, dimension_numbers=dn, **params), None]


# --- gather: batch (one more batching dim, as JAX)


@general_gather_p.def_batch
def _gather_batch(args, dims, *, dimension_numbers, slice_sizes, **params):
    """Batch axes moved to 0. A batched operand alone: one more window dim (the
    whole batch) at output dim 0. Batched indices alone: one more indices batch
    dim, output dim 0. Both: one more pair of batching dims, output dim 0."""
    (operand, indices), (bd, ibd) = args, dims
    dn = dimension_numbers
    size = batch_rules.axis_size_of(args, dims)
    if ibd is None:
        operand = batch_rules.moveaxis(operand, bd, 0)
        dn = GatherDimensionNumbers(
            offset_dims=(0, *_plus(dn.offset_dims)),
            collapsed_slice_dims=_plus(dn.collapsed_slice_dims),
            start_index_map=_plus(dn.start_index_map),
            operand_batching_dims=_plus(dn.operand_batching_dims),
            start_indices_batching_dims=dn.start_indices_batching_dims,
        )
        sizes = (size, *slice_sizes)
    elif bd is None:
        indices = batch_rules.moveaxis(indices, ibd, 0)
        dn = dn._replace(
            offset_dims=_plus(dn.offset_dims),
            start_indices_batching_dims=_plus(dn.start_indices_batching_dims),
        )
        sizes = tuple(slice_sizes)
    else:
        operand = batch_rules.moveaxis(operand, bd, 0)
        indices = batch_rules.moveaxis(indices, ibd, 0)
        dn = GatherDimensionNumbers(
            offset_dims=_plus(dn.offset_dims),
            collapsed_slice_dims=_plus(dn.collapsed_slice_dims),
            start_index_map=_plus(dn.start_index_map),
            operand_batching_dims=(0, *_plus(dn.operand_batching_dims)),
            start_indices_batching_dims=(0, *_plus(dn.start_indices_batching_dims)),
        )
        sizes = (1, *slice_sizes)
    out = general_gather_p.bind(operand, indices, dimension_numbers=dn, slice_sizes=sizes, **params)
    return out, 0


# --- gather: mask


@general_gather_p.def_mask
def _gather_mask(
    ctx, operand, indices, *, dimension_numbers, slice_sizes, indices_are_sorted,
    unique_indices, mode, fill_value,
):  # fmt: skip
    """Masked operand dims, masked batch dims of the indices; the index
    vector dim (last) must be unmasked.

    * An operand dim ``d`` (logical ``L``) with a window ``w < padded``:
      its start component behaves as against the unpadded operand, whose
      in-bounds starts are ``[0, L - w]``: clamped there (CLIP,
      PROMISE_IN_BOUNDS), or, outside it, moved past the padded bound so the
      whole window reads ``fill_value`` (FILL_OR_DROP). The window dim (if
      not collapsed) keeps its size ``w``; this assumes ``L >= w``, as the
      unpadded program needs.
    * An operand dim sliced whole (window = padded size): the start can only
      be 0 in both programs, and the window dim has the logical size ``L``.
    * Batch dims of the indices carry their logical sizes to the output's
      batch dims; a masked operand batching dim is unified with its indices
      batching dim. Output rows at padding batch positions are unspecified.
    """
    dn = dimension_numbers
    op_logical, idx_logical = ctx.logical_in
    op_shape, idx_aval = ctx.avals_in[0].shape, ctx.avals_in[1]
    if ctx.masked(idx_logical[-1]):
        raise ctx.unsupported(
            f"the index vector dim (last) of the indices is masked ({ctx.show(idx_logical)})"
        )
    batch_logical = list(idx_logical[:-1])
    for od, idim in zip(dn.operand_batching_dims, dn.start_indices_batching_dims, strict=True):
        batch_logical[idim] = ctx.unify(
            [op_logical[od], batch_logical[idim]], f"the operand's batching dim {od}"
        )
    dtype = idx_aval.dtype
    fill = mode == GatherScatterMode.FILL_OR_DROP
    component = None
    for k, d in enumerate(dn.start_index_map):
        w = slice_sizes[d]
        if not ctx.masked(op_logical[d]) or w == op_shape[d]:
            continue
        beyond = op_shape[d] - w + 1
        if fill and beyond > int(dtypes.iinfo(dtype).max):
            raise ctx.unsupported(f"the index dtype {dtype.name} cannot hold {beyond}")
        if component is None:
            component = structural.broadcasted_iota(np.int32, idx_aval.shape, idx_aval.ndim - 1)
        mine = elementwise.eq(component, np.int32(k))
        bound = elementwise.sub(
            elementwise.convert_element_type(ctx.index(op_logical[d]), dtype), np.asarray(w, dtype)
        )
        if fill:
            outside = elementwise.bitwise_or(
                elementwise.lt(indices, np.zeros((), dtype)), elementwise.gt(indices, bound)
            )
            moved = np.asarray(beyond, dtype)
            indices = elementwise.select_n(elementwise.bitwise_and(mine, outside), indices, moved)
        else:
            clamped = elementwise.clamp(np.zeros((), dtype), indices, bound)
            indices = elementwise.select_n(mine, indices, clamped)
    out = general_gather_p.bind(
        operand, indices, dimension_numbers=dn, slice_sizes=slice_sizes,
        indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode,
        fill_value=fill_value,
    )  # fmt: skip
    skip = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
    windows = iter(
        op_logical[d] if slice_sizes[d] == op_shape[d] else Dim.constant(slice_sizes[d])
        for d in range(len(op_shape))
        if d not in skip
    )
    batches = iter(batch_logical)
    out_logical = tuple(
        next(windows) if i in dn.offset_dims else next(batches) for i in range(out.ndim)
    )
    return out, out_logical


# --- gather: lowering (stablehlo.gather)


@general_gather_p.def_lowering
def _gather_lowering(ctx, operand, indices, *, dimension_numbers, slice_sizes, mode,
                     fill_value, **_):  # fmt: skip
    x_aval, index_aval = ctx.avals_in
    out_aval = ctx.avals_out[0]
    if out_aval.size == 0:
        # no indices: slice sizes may exceed an empty operand (allowed, as JAX), which
        # stablehlo.gather's verifier refuses; the result is empty whatever it reads
        return [ctx.constant(0, out_aval.dtype, out_aval.shape)]
    dn = dimension_numbers
    window = [1 if d in dn.operand_batching_dims else n for d, n in enumerate(slice_sizes)]
    starts = indices
    if mode == GatherScatterMode.CLIP:
        starts = _clamped(ctx, indices, index_aval, x_aval.shape, window, dn.start_index_map)
    dims = _lowering_dnums(ctx, dn, "gather", index_aval.ndim)
    out = ctx.hlo.gather(operand, starts, dims, list(slice_sizes), results=[ctx.ir_type(out_aval)])
    if mode != GatherScatterMode.FILL_OR_DROP or index_aval.size == 0:
        return [out]
    dtype = index_aval.dtype
    high = _start_bounds(ctx, index_aval, x_aval.shape, window, dn.start_index_map)
    low = ctx.constant(0, dtype, index_aval.shape)
    ok = ctx.hlo.and_(
        ctx.compare(indices, low, "GE", dtype), ctx.compare(indices, high, "LE", dtype)
    )
    true = ctx.constant(True, np.dtype(bool))
    (ok,) = ctx.reduce([ok], [np.dtype(bool)], [true], [index_aval.ndim - 1],
                       lambda a, b: [ctx.hlo.and_(a, b)])  # fmt: skip
    batch_dims = [i for i in range(out_aval.ndim) if i not in dn.offset_dims]
    keep = ctx.hlo.broadcast_in_dim(ctx.tensor_type(out_aval.shape, np.dtype(bool)), ok, batch_dims)
    fill = ctx.constant(np.asarray(fill_value).astype(x_aval.dtype), x_aval.dtype,
                        out_aval.shape)  # fmt: skip
    return [ctx.select(keep, out, fill)]


# --- gather: the public binder


def _default_fill(dtype: np.dtype) -> Any:
    """JAX's fill: NaN for inexact dtypes, the minimum of signed and the
    maximum of unsigned integers, True for bool."""
    if dtypes.is_inexact(dtype):
        return float("nan")
    if dtypes.is_bool(dtype):
        return True
    info = dtypes.iinfo(dtype)
    return int(info.min) if dtypes.is_signed_int(dtype) else int(info.max)


def gather(
    operand: Any,
    start_indices: Any,
    dimension_numbers: GatherDimensionNumbers,
    slice_sizes: Sequence[int],
    *,
    unique_indices: bool = False,
    indices_are_sorted: bool = False,
    mode: str | GatherScatterMode | None = None,
    fill_value: Any = None,
):
    """``jax.lax.gather``: XLA's gather (module docstring). ``mode=None`` is
    ``PROMISE_IN_BOUNDS`` (clamping); with ``"fill"`` an out-of-bounds window
    reads ``fill_value`` (default: NaN, the integer minimum (signed) or
    maximum (unsigned), True). ``unique_indices``/``indices_are_sorted`` are
    promises that change no result."""
    dn = _as_dnums("gather", dimension_numbers, GatherDimensionNumbers)
    sizes = _dims("gather", slice_sizes, "slice_sizes")
    parsed = GatherScatterMode.PROMISE_IN_BOUNDS if mode is None else mode
    parsed = GatherScatterMode.from_any(parsed)
    if parsed == GatherScatterMode.FILL_OR_DROP:
        if fill_value is None:
            dtype = tracing.get_aval(operand, "gather", "operand").dtype
            fill_value = _default_fill(dtype)
        else:  # a static parameter: a plain Python scalar, hashable and printable
            value = np.asarray(fill_value)
            if value.ndim != 0 or not (
                dtypes.is_inexact(value.dtype)
                or dtypes.is_integer(value.dtype)
                or dtypes.is_bool(value.dtype)
            ):
                raise TypeError(f"gather: fill_value must be a scalar, got {fill_value!r}")
            fill_value = value.item()
    else:
        fill_value = None
    return general_gather_p.bind(
        operand, start_indices, dimension_numbers=dn, slice_sizes=sizes,
        indices_are_sorted=bool(indices_are_sorted), unique_indices=bool(unique_indices),
        mode=parsed, fill_value=fill_value,
    )  # fmt: skip


# --- scatters ----------------------------------------------------------------------------

_COMBINE: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "scatter": lambda old, new: new,
    "scatter_add": np.add,
    "scatter_sub": np.subtract,
    "scatter_mul": np.multiply,
    "scatter_min": np.minimum,
    "scatter_max": np.maximum,
}


def _scatter_primitive(kind: str) -> Primitive:
    prim = Primitive(f"general_{kind}")
    combine = _COMBINE.get(kind)

    @prim.def_abstract_eval
    def _abstract_eval(
        operand, indices, updates, *, dimension_numbers, indices_are_sorted, unique_indices,
        mode, update_program=None,
    ):  # fmt: skip
        """The operand's shape, dtype and weak type, after JAX's checks
        (``updates.shape`` = ``indices.shape[:-1]`` at the scatter dims and at
        most the operand's window extents at ``update_window_dims``)."""
        if not dtypes.is_integer(indices.dtype):
            raise ValueError(f"{kind}: indices must have an integer type")
        if updates.dtype != operand.dtype:
            raise TypeError(
                f"{kind}: lax.scatter requires arguments to have the same dtypes, got "
                f"{operand.dtype.name}, {updates.dtype.name}."
            )
        if kind in ("scatter_add", "scatter_sub", "scatter_mul") and dtypes.is_bool(operand.dtype):
            op = kind.removeprefix("scatter_")
            raise TypeError(
                f"{kind}: {op} does not accept dtype bool at position 0. Accepted dtypes at "
                "position 0 are subtypes of integer, floating, complexfloating."
            )
        check_scatter(kind, operand, indices, updates, dimension_numbers)
        return ShapedArray(operand.shape, operand.dtype, operand.weak_type)

    @prim.def_impl
    def _impl(
        operand, indices, updates, *, dimension_numbers, indices_are_sorted, unique_indices,
        mode, update_program=None,
    ):  # fmt: skip
        dn = dimension_numbers
        step = combine
        if update_program is not None:  # scatter_apply: func of the old values

            def step(old, new):
                return _apply_elementwise(update_program, old)

        vectors = _int64_indices(indices)
        window = _scatter_window(operand.shape, updates.shape, dn)
        scatter_dims = [d for d in range(updates.ndim) if d not in dn.update_window_dims]
        clip = mode == GatherScatterMode.CLIP
        out = operand.copy()
        for b in np.ndindex(*indices.shape[:-1]):  # row-major: the last update wins
            start, inside = _start(
                vectors[b], b, operand.shape, window, dn.scatter_dims_to_operand_dims,
                dn.operand_batching_dims, dn.scatter_indices_batching_dims, clip=clip,
            )  # fmt: skip
            if not (inside or clip):
                continue
            at = [slice(None)] * updates.ndim
            for d, i in zip(scatter_dims, b, strict=True):
                at[d] = i
            new = updates[tuple(at)].reshape(window)
            region = _region(start, window)
            with np.errstate(all="ignore"):
                out[region] = step(out[region], new)
        return out

    return prim


general_scatter_p = _scatter_primitive("scatter")
general_scatter_add_p = _scatter_primitive("scatter_add")
general_scatter_sub_p = _scatter_primitive("scatter_sub")
general_scatter_mul_p = _scatter_primitive("scatter_mul")
general_scatter_min_p = _scatter_primitive("scatter_min")
general_scatter_max_p = _scatter_primitive("scatter_max")
# the update region is a traced scalar function of the old value (updates: a placeholder)
general_scatter_apply_p = _scatter_primitive("scatter_apply")
SCATTERS = (
    general_scatter_p, general_scatter_add_p, general_scatter_sub_p, general_scatter_mul_p,
    general_scatter_min_p, general_scatter_max_p, general_scatter_apply_p,
)  # fmt: skip


def _scatter_mask_rule(prim: Primitive):
    def rule(ctx, operand, indices, updates, *, dimension_numbers, mode, **params):
        """Masked operand dims, masked batch (scatter) dims of the indices and
        updates, masked update window dims that cover the whole operand dim.
        The result's logical shape is the operand's.

        The indices are rewritten to what the unpadded program does, then
        bound in mode FILL_OR_DROP (so which of repeated starts wins is
        unchanged):

        * CLIP: every start component clamped to ``[0, size - window]`` with
          ``size`` the logical size of a masked operand dim (assumes
          ``size >= window``), the padded size otherwise.
        * FILL_OR_DROP / PROMISE_IN_BOUNDS (XLA drops): a component outside
          ``[0, L - window]`` of a masked dim is moved past the padded bound,
          so the whole window is dropped.
        * A start at a padding position of the indices' batch dims (its
          updates are padding) is moved out of bounds: it writes nothing.
          This needs at least one start component (else unsupported).
        * An update window dim that is masked must span the whole (padded)
          operand dim, whose logical size it shares; a masked operand dim
          with a partial window is handled by the start rewrite above.
        """
        dn = dimension_numbers
        op_logical, idx_logical, upd_logical = ctx.logical_in
        op_shape, idx_aval = ctx.avals_in[0].shape, ctx.avals_in[1]
        upd_shape = ctx.avals_in[2].shape
        if ctx.masked(idx_logical[-1]):
            raise ctx.unsupported(
                f"the index vector dim (last) of the indices is masked ({ctx.show(idx_logical)})"
            )
        out_logical = list(op_logical)
        batch = list(idx_logical[:-1])
        scatter_dims = [d for d in range(len(upd_shape)) if d not in dn.update_window_dims]
        for j, u in enumerate(scatter_dims):
            batch[j] = ctx.unify([batch[j], upd_logical[u]], f"the indices' batch dim {j}")
        for od, idim in zip(
            dn.operand_batching_dims, dn.scatter_indices_batching_dims, strict=True
        ):
            out_logical[od] = ctx.unify(
                [op_logical[od], batch[idim]], f"the operand's batching dim {od}"
            )
        window = _scatter_window(op_shape, upd_shape, dn)
        skip = set(dn.inserted_window_dims) | set(dn.operand_batching_dims)
        windowed = [d for d in range(len(op_shape)) if d not in skip]
        for d, u in zip(windowed, dn.update_window_dims, strict=True):
            if ctx.masked(upd_logical[u]):
                if upd_shape[u] != op_shape[d]:
                    raise ctx.unsupported(
                        f"the updates' window dim {u} is masked ({ctx.show(upd_logical)}) but "
                        f"does not span the operand's dim {d}"
                    )
                out_logical[d] = ctx.unify(
                    [op_logical[d], upd_logical[u]], f"the operand's dim {d}"
                )
        dtype = idx_aval.dtype
        index_map = dn.scatter_dims_to_operand_dims
        keep = ctx.valid_region(idx_aval.shape, (*batch, idx_logical[-1]), range(len(batch)))
        if keep is not None and not index_map:
            raise ctx.unsupported("masked indices without start components cannot be dropped")
        clip = mode == GatherScatterMode.CLIP
        component = structural.broadcasted_iota(np.int32, idx_aval.shape, idx_aval.ndim - 1)
        for k, d in enumerate(index_map):
            masked = ctx.masked(op_logical[d]) and window[d] < op_shape[d]
            if not masked and not clip and not (keep is not None and k == 0):
                continue
            beyond = op_shape[d] - window[d] + 1
            if beyond > int(dtypes.iinfo(dtype).max):
                raise ctx.unsupported(f"the index dtype {dtype.name} cannot hold {beyond}")
            mine = elementwise.eq(component, np.int32(k))
            if masked:
                size = elementwise.convert_element_type(ctx.index(op_logical[d]), dtype)
                bound = elementwise.sub(size, np.asarray(window[d], dtype))
            else:
                bound = np.asarray(op_shape[d] - window[d], dtype)
            moved = np.asarray(beyond, dtype)
            if clip:
                clamped = elementwise.clamp(np.zeros((), dtype), indices, bound)
                indices = elementwise.select_n(mine, indices, clamped)
            elif masked:
                outside = elementwise.bitwise_or(
                    elementwise.lt(indices, np.zeros((), dtype)), elementwise.gt(indices, bound)
                )
                indices = elementwise.select_n(
                    elementwise.bitwise_and(mine, outside), indices, moved
                )
            if keep is not None and k == 0:
                drop = elementwise.bitwise_and(mine, elementwise.eq(keep, np.bool_(False)))
                indices = elementwise.select_n(drop, indices, moved)
        out = prim.bind(
            operand, indices, updates, dimension_numbers=dn,
            mode=GatherScatterMode.FILL_OR_DROP, **params,
        )  # fmt: skip
        return out, tuple(out_logical)

    return rule


for _prim in SCATTERS:
    _prim.def_mask(_scatter_mask_rule(_prim))


def _apply_elementwise(program: Any, values: np.ndarray) -> np.ndarray:
    """``program`` (traced on a scalar) applied to each element of ``values``."""
    results = [
        rule_context.eval_program(program, [np.asarray(v, values.dtype)])[0]
        for v in values.reshape(-1)
    ]
    return np.asarray(results, values.dtype).reshape(values.shape)


# --- differentiation -----------------------------------------------------------------------
# Indices are integers (float0 tangents). gather and scatter_add are linear and
# each other's transposes; scatter's jvp is built from selects and scatter_add
# (so its reverse mode needs no scatter transpose), as JAX's.


def _undefined(x: Any) -> bool:
    return isinstance(x, ad_helpers.UndefinedPrimal)


def _gather_back(ct, indices, updates_aval, operand_shape, dn, params, fill_value=0):
    """The values at the places a scatter with ``dn`` writes ``updates``
    (updates-shaped): the gather with the mirrored dimension numbers."""
    sizes = _scatter_window(operand_shape, updates_aval.shape, dn)
    mode = params["mode"]
    return general_gather_p.bind(
        ct, indices, dimension_numbers=_gather_dnums_of(dn), slice_sizes=sizes,
        indices_are_sorted=params["indices_are_sorted"],
        unique_indices=params["unique_indices"], mode=mode,
        fill_value=fill_value if mode == GatherScatterMode.FILL_OR_DROP else None,
    )  # fmt: skip


# linear in (operand, updates) jointly: the tangents scattered alike
general_scatter_add_p.def_jvp(indexing.scatter_tangents_alike(general_scatter_add_p))
general_scatter_sub_p.def_jvp(indexing.scatter_tangents_alike(general_scatter_sub_p))


def _additive_transpose(subtract: bool):
    def rule(ct, operand, indices, updates, *, dimension_numbers, **params):
        """The operand gets the cotangent; each update the cotangent of its
        window (zero for a dropped window), negated for scatter_sub."""
        # unreachable from the public API: the backward pass skips an equation whose one output has
        # no cotangent and never passes a symbolic Zero to a single-output rule (ad.backward_pass)
        if isinstance(ct, ad_helpers.Zero):  # pragma: no cover
            return indexing.zero_scatter_cts(operand, updates)
        ct_updates = None
        if _undefined(updates):
            shape = ad_helpers.aval_of(operand).shape
            u_aval = ad_helpers.aval_of(updates)
            ct_updates = _gather_back(ct, indices, u_aval, shape, dimension_numbers, params)
            if subtract:
                ct_updates = elementwise.neg(ct_updates)
        return [ct if _undefined(operand) else None, None, ct_updates]

    return rule


general_scatter_add_p.def_transpose(_additive_transpose(subtract=False))
general_scatter_sub_p.def_transpose(_additive_transpose(subtract=True))


def _update_ids(indices: Any, updates_aval: ShapedArray, dn: ScatterDimensionNumbers) -> Any:
    """int32, updates-shaped: 1 + the row-major number of each update's batch index."""
    batch_shape = tracing.get_aval(indices, "scatter", 1).shape[:-1]
    count = math.prod(batch_shape)
    ids = elementwise.add(structural.iota(np.int32, count), np.ones((), np.int32))
    ids = structural.reshape(ids, batch_shape)
    scatter_dims = [d for d in range(updates_aval.ndim) if d not in dn.update_window_dims]
    return structural.broadcast_in_dim(ids, updates_aval.shape, tuple(scatter_dims))


@general_scatter_p.def_jvp
def _scatter_jvp(primals, tangents, *, dimension_numbers, **params):
    """Each place's tangent is that of the update that won there (or the
    operand's where none landed). Unless ``unique_indices``, the winners are
    found by scattering each update's id and reading the ids back; the
    tangent is then ``scatter_add(tx where not overwritten, tu where won)``."""
    operand, indices, updates = primals
    tx, _, tu = tangents
    dn = dimension_numbers
    ans = general_scatter_p.bind(operand, indices, updates, dimension_numbers=dn, **params)
    # unreachable from the public API: the jvp trace calls a rule only when some operand has a
    # nonzero tangent, and the indices (integers) never have one (ad.JVPTrace.process_primitive)
    if ad_helpers.is_zero(tx) and ad_helpers.is_zero(tu):  # pragma: no cover
        return ans, ad_helpers.zero_tangent(ad_helpers.aval_of(ans))
    x_aval, u_aval = ad_helpers.aval_of(operand), ad_helpers.aval_of(updates)
    tx = ad_helpers.instantiate(tx, ad_helpers.tangent_aval(x_aval))
    tu = ad_helpers.instantiate(tu, ad_helpers.tangent_aval(u_aval))
    if params["unique_indices"]:
        return ans, general_scatter_p.bind(tx, indices, tu, dimension_numbers=dn, **params)
    ids = _update_ids(indices, u_aval, dn)
    nobody = structural.broadcast_in_dim(np.zeros((), np.int32), x_aval.shape, ())
    placed = general_scatter_p.bind(nobody, indices, ids, dimension_numbers=dn, **params)
    won = elementwise.eq(_gather_back(placed, indices, u_aval, x_aval.shape, dn, params), ids)
    kept = elementwise.eq(placed, nobody)
    tx = elementwise.select(kept, tx, ad_helpers.zeros(ad_helpers.tangent_aval(x_aval)))
    tu = elementwise.select(won, tu, ad_helpers.zeros(ad_helpers.tangent_aval(u_aval)))
    return ans, general_scatter_add_p.bind(tx, indices, tu, dimension_numbers=dn, **params)


@general_scatter_p.def_transpose
def _scatter_transpose(ct, operand, indices, updates, *, dimension_numbers, **params):
    """Only with ``unique_indices`` (as JAX): the operand gets the cotangent
    where it was not overwritten, each update the cotangent of its window."""
    if not params["unique_indices"]:
        raise NotImplementedError(
            "scatter: transpose is only implemented where unique_indices=True"
        )
    # unreachable from the public API: the backward pass skips an equation whose one output has
    # no cotangent and never passes a symbolic Zero to a single-output rule (ad.backward_pass)
    if isinstance(ct, ad_helpers.Zero):  # pragma: no cover
        return indexing.zero_scatter_cts(operand, updates)
    dn = dimension_numbers
    u_aval = ad_helpers.aval_of(updates)
    shape = ad_helpers.aval_of(operand).shape
    ct_x = ct_updates = None
    if _undefined(operand):
        zeros = ad_helpers.zeros(u_aval)
        ct_x = general_scatter_p.bind(ct, indices, zeros, dimension_numbers=dn, **params)
    if _undefined(updates):
        ct_updates = _gather_back(ct, indices, u_aval, shape, dn, params)
    return [ct_x, None, ct_updates]


@general_scatter_mul_p.def_jvp
def _scatter_mul_jvp(primals, tangents, *, dimension_numbers, **params):
    """``scatter_mul(tx, i, u)`` (linear in the operand) plus, only with
    ``unique_indices`` (as JAX), ``x * scatter_add(0, i, tu)``."""
    operand, indices, updates = primals
    tx, _, tu = tangents
    dn = dimension_numbers
    ans = general_scatter_mul_p.bind(operand, indices, updates, dimension_numbers=dn, **params)
    if not ad_helpers.is_zero(tu) and not params["unique_indices"]:
        raise NotImplementedError(
            "scatter_mul gradients are only implemented if `unique_indices=True`"
        )
    x_aval = ad_helpers.aval_of(operand)
    terms = []
    if not ad_helpers.is_zero(tx):
        terms.append(
            general_scatter_mul_p.bind(tx, indices, updates, dimension_numbers=dn, **params)
        )
    if not ad_helpers.is_zero(tu):
        zeros = ad_helpers.zeros(ad_helpers.tangent_aval(x_aval))
        spread = general_scatter_add_p.bind(zeros, indices, tu, dimension_numbers=dn, **params)
        terms.append(elementwise.mul(operand, spread))
    return ans, ad_helpers.sum_tangents(terms, ad_helpers.tangent_aval(x_aval))


@general_scatter_mul_p.def_transpose
def _scatter_mul_transpose(ct, operand, indices, updates, *, dimension_numbers, **params):
    """In the operand only: ``ct`` times the product of the updates landing at each place."""
    if _undefined(updates):
        raise NotImplementedError("scatter_mul: transposing in the updates is not implemented")
    # unreachable from the public API: the backward pass skips an equation whose one output has
    # no cotangent and never passes a symbolic Zero to a single-output rule (ad.backward_pass)
    if isinstance(ct, ad_helpers.Zero):  # pragma: no cover
        return [ad_helpers.Zero(operand.aval), None, None]
    dn = dimension_numbers
    return [
        general_scatter_mul_p.bind(ct, indices, updates, dimension_numbers=dn, **params),
        None,
        None,
    ]


def _extremal_jvp(prim: Primitive):
    def rule(primals, tangents, *, dimension_numbers, **params):
        """The tangent of the winner; ties share it equally: with ``k``
        updates equal to the output at a place, and the operand too if it
        equals it, each contributes ``1 / (k + [operand ties])`` of its tangent."""
        operand, indices, updates = primals
        tx, _, tu = tangents
        dn = dimension_numbers
        ans = prim.bind(operand, indices, updates, dimension_numbers=dn, **params)
        # unreachable from the public API: the jvp trace calls a rule only when some operand has a
        # nonzero tangent, and the indices (integers) never have one (ad.JVPTrace.process_primitive)
        if ad_helpers.is_zero(tx) and ad_helpers.is_zero(tu):  # pragma: no cover
            return ans, ad_helpers.zero_tangent(ad_helpers.aval_of(ans))
        x_aval, u_aval = ad_helpers.aval_of(operand), ad_helpers.aval_of(updates)
        tx = ad_helpers.instantiate(tx, ad_helpers.tangent_aval(x_aval))
        tu = ad_helpers.instantiate(tu, ad_helpers.tangent_aval(u_aval))

        def full(value, aval):
            return structural.broadcast_in_dim(ad_helpers.scalar(value, aval), aval.shape, ())

        def spread(values):  # updates-shaped -> summed at their places
            zeros = full(0, x_aval)
            return general_scatter_add_p.bind(
                zeros, indices, values, dimension_numbers=dn, **params
            )

        def read(values):  # operand-shaped -> at each update's place (0 if dropped)
            return _gather_back(values, indices, u_aval, x_aval.shape, dn, params)

        won = elementwise.eq(updates, read(ans))
        kept = elementwise.eq(operand, ans)
        count = spread(elementwise.select(won, full(1, u_aval), full(0, u_aval)))
        refs = elementwise.add(count, elementwise.select(kept, full(1, x_aval), full(0, x_aval)))
        share = elementwise.div(full(1, x_aval), elementwise.max(refs, full(1, x_aval)))
        x_coef = elementwise.select(kept, share, full(0, x_aval))
        u_coef = elementwise.select(won, read(share), full(0, u_aval))
        tangent = elementwise.add(elementwise.mul(x_coef, tx), spread(elementwise.mul(u_coef, tu)))
        return ans, tangent

    return rule


general_scatter_min_p.def_jvp(_extremal_jvp(general_scatter_min_p))
general_scatter_max_p.def_jvp(_extremal_jvp(general_scatter_max_p))


# --- batching: one more batching dim, as JAX --------------------------------------------


def _plus(dims: Sequence[int], n: int = 1) -> tuple[int, ...]:
    return tuple(d + n for d in dims)


def _scatter_batch_rule(prim: Primitive):
    def rule(args, dims, *, dimension_numbers, **params):
        """Operand and updates batched at 0 (broadcast if not batched). Unbatched
        indices: the batch is one more window dim. Batched indices: one more
        pair of batching dims."""
        (operand, indices, updates), (bd, ibd, ubd) = args, dims
        dn = dimension_numbers
        size = batch_rules.axis_size_of(args, dims)
        operand = batch_rules.bdim_to(operand, bd, size, 0)
        updates = batch_rules.bdim_to(updates, ubd, size, 0)
        if ibd is None:
            dn = ScatterDimensionNumbers(
                update_window_dims=(0, *_plus(dn.update_window_dims)),
                inserted_window_dims=_plus(dn.inserted_window_dims),
                scatter_dims_to_operand_dims=_plus(dn.scatter_dims_to_operand_dims),
                operand_batching_dims=_plus(dn.operand_batching_dims),
                scatter_indices_batching_dims=dn.scatter_indices_batching_dims,
            )
        else:
            indices = batch_rules.moveaxis(indices, ibd, 0)
            dn = ScatterDimensionNumbers(
                update_window_dims=_plus(dn.update_window_dims),
                inserted_window_dims=_plus(dn.inserted_window_dims),
                scatter_dims_to_operand_dims=_plus(dn.scatter_dims_to_operand_dims),
                operand_batching_dims=(0, *_plus(dn.operand_batching_dims)),
                scatter_indices_batching_dims=(0, *_plus(dn.scatter_indices_batching_dims)),
            )
        return prim.bind(operand, indices, updates, dimension_numbers=dn, **params), 0

    return rule


for _prim in SCATTERS:
    _prim.def_batch(_scatter_batch_rule(_prim))


# --- lowering to StableHLO (refimpl.backends.pjrt.lowering) ------------------------------
# CLIP clamps the starts explicitly; FILL_OR_DROP gathers mask the result; the
# rest is StableHLO's own behaviour (XLA clamps a gather's starts and skips a
# scatter's out-of-bounds windows), which is PROMISE_IN_BOUNDS and DROP.


def _start_bounds(ctx, index_aval, operand_shape, window, index_map) -> Any:
    """Indices-shaped constant: ``operand.shape[d] - window[d]`` for the
    component mapped to ``d``, saturated at the index dtype's maximum."""
    top = int(dtypes.iinfo(index_aval.dtype).max)
    bounds = np.array([min(operand_shape[d] - window[d], top) for d in index_map], np.int64)
    full = np.broadcast_to(bounds, index_aval.shape)
    return ctx.constant(full, index_aval.dtype, index_aval.shape)


def _clamped(ctx, indices, index_aval, operand_shape, window, index_map):
    if index_aval.size == 0:  # no starts (and no empty constants in StableHLO)
        return indices
    high = _start_bounds(ctx, index_aval, operand_shape, window, index_map)
    low = ctx.constant(0, index_aval.dtype, index_aval.shape)
    return ctx.hlo.clamp(low, indices, high)


def _lowering_dnums(ctx, dn, kind, index_ndim):
    if kind == "gather":
        return ctx.hlo.GatherDimensionNumbers.get(
            offset_dims=list(dn.offset_dims),
            collapsed_slice_dims=list(dn.collapsed_slice_dims),
            operand_batching_dims=list(dn.operand_batching_dims),
            start_indices_batching_dims=list(dn.start_indices_batching_dims),
            start_index_map=list(dn.start_index_map),
            index_vector_dim=index_ndim - 1,
        )
    return ctx.hlo.ScatterDimensionNumbers.get(
        update_window_dims=list(dn.update_window_dims),
        inserted_window_dims=list(dn.inserted_window_dims),
        input_batching_dims=list(dn.operand_batching_dims),
        scatter_indices_batching_dims=list(dn.scatter_indices_batching_dims),
        scattered_dims_to_operand_dims=list(dn.scatter_dims_to_operand_dims),
        index_vector_dim=index_ndim - 1,
    )


def _hlo_combiner(ctx, kind: str, dtype: np.dtype) -> Callable[..., Any]:
    if kind == "scatter":
        return lambda old, new: new
    if dtypes.is_bool(dtype):  # min is and, max is or (add and mul reject bool)
        return ctx.hlo.and_ if kind == "scatter_min" else ctx.hlo.or_
    return {
        "scatter_add": ctx.hlo.add,
        "scatter_sub": ctx.hlo.subtract,
        "scatter_mul": ctx.hlo.multiply,
        "scatter_min": ctx.hlo.minimum,
        "scatter_max": ctx.hlo.maximum,
    }[kind]


def _scatter_lowering(kind: str):
    def rule(ctx, operand, indices, updates, *, dimension_numbers, mode, update_program=None,
             **_):  # fmt: skip
        """``stablehlo.scatter`` with the combiner as its update region."""
        x_aval, index_aval, u_aval = ctx.avals_in
        dn = dimension_numbers
        if mode == GatherScatterMode.CLIP:
            window = _scatter_window(x_aval.shape, u_aval.shape, dn)
            indices = _clamped(ctx, indices, index_aval, x_aval.shape, window,
                               dn.scatter_dims_to_operand_dims)  # fmt: skip
        free = [d for d in range(x_aval.ndim) if d not in dn.operand_batching_dims]
        if index_aval.shape[-1] == 0 and free:
            # XLA applies only the last of several updates when the index
            # vector is empty; an explicit 0 start (what the empty vector
            # means) for some non-batching dim makes it combine them all
            shape = (*index_aval.shape[:-1], 1)
            indices = ctx.constant(0, index_aval.dtype, shape)
            dn = dn._replace(scatter_dims_to_operand_dims=(free[0],))
        dims = _lowering_dnums(ctx, dn, "scatter", index_aval.ndim)
        op = ctx.hlo.ScatterOp([ctx.ir_type(x_aval)], [operand], indices, [updates], dims)
        if update_program is not None:

            def combine(old, new):
                return ctx.lower_program(update_program, [old])[0]

        else:
            combine = _hlo_combiner(ctx, kind, x_aval.dtype)
        dtype = x_aval.dtype
        ctx.scalar_block(op.regions[0], [dtype, dtype], lambda old, new: [combine(old, new)])
        return list(op.results)

    return rule


for _prim in SCATTERS:
    _prim.def_lowering(_scatter_lowering(_prim.name.removeprefix("general_")))


# --- the public lax functions ------------------------------------------------------------


def _scatter_api(prim: Primitive, name: str):
    def function(
        operand: Any,
        scatter_indices: Any,
        updates: Any,
        dimension_numbers: ScatterDimensionNumbers,
        *,
        indices_are_sorted: bool = False,
        unique_indices: bool = False,
        mode: str | GatherScatterMode | None = None,
    ):
        dn = _as_dnums(name, dimension_numbers, ScatterDimensionNumbers)
        return prim.bind(
            operand, scatter_indices, updates, dimension_numbers=dn,
            indices_are_sorted=bool(indices_are_sorted), unique_indices=bool(unique_indices),
            mode=GatherScatterMode.from_any(mode),
        )  # fmt: skip

    function.__name__ = function.__qualname__ = name
    return function


scatter = _scatter_api(general_scatter_p, "scatter")
scatter.__doc__ = """``jax.lax.scatter``: ``operand`` with each update window written at
its start (module docstring); for overlapping windows the last in row-major
order of the indices wins (XLA leaves the order unspecified). ``mode=None``
drops out-of-bounds windows, ``"clip"`` clamps their starts."""
scatter_add = _scatter_api(general_scatter_add_p, "scatter_add")
scatter_add.__doc__ = """``jax.lax.scatter_add``: the update windows added at their starts."""
scatter_mul = _scatter_api(general_scatter_mul_p, "scatter_mul")
scatter_mul.__doc__ = """``jax.lax.scatter_mul``: ``operand`` multiplied by the update
windows at their starts."""
scatter_min = _scatter_api(general_scatter_min_p, "scatter_min")
scatter_min.__doc__ = """``jax.lax.scatter_min``: the elementwise minimum of ``operand``
and the update windows at their starts (NaN propagates)."""
scatter_max = _scatter_api(general_scatter_max_p, "scatter_max")
scatter_sub = _scatter_api(general_scatter_sub_p, "scatter_sub")
scatter_sub.__doc__ = """``jax.lax.scatter_sub``: the update windows subtracted at their starts."""
scatter_max.__doc__ = """``jax.lax.scatter_max``: the elementwise maximum of ``operand``
and the update windows at their starts (NaN propagates)."""


def scatter_apply(
    operand: Any,
    scatter_indices: Any,
    func: Callable[[Any], Any],
    dimension_numbers: ScatterDimensionNumbers,
    *,
    update_shape: Sequence[int] = (),
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
    mode: str | GatherScatterMode | None = None,
):
    """``jax.lax.scatter_apply``: ``func`` (a scalar function, traced once at the
    operand's dtype) applied to the operand at every place an update window of
    shape ``update_shape`` covers -- once per window covering it. Not
    differentiable (as in JAX); ``func`` must not close over traced values."""
    dn = _as_dnums("scatter_apply", dimension_numbers, ScatterDimensionNumbers)
    shape = _dims("scatter_apply", update_shape, "update_shape")
    aval = tracing.get_aval(operand, "scatter_apply", "operand")
    scalar = ShapedArray((), aval.dtype, False)

    def traced_func(x: Any) -> list[Any]:
        # A write to an outer ref would leave this trace's value in it.
        with ref_context.refuse_outer("scatter_apply: func writes a mutable array reference"):
            return [func(x)]

    program, captured, _ = tracing.trace_to_program(
        traced_func, [scalar], "scatter_apply", ["func's argument"]
    )
    if captured:
        raise NotImplementedError("scatter_apply: func must not close over traced values")
    if program.out_avals[0].shape != () or program.out_avals[0].dtype != aval.dtype:
        raise TypeError(
            f"scatter_apply: func must map a {aval.dtype.name} scalar to one, got "
            f"{program.out_avals[0].str_short()}"
        )
    unused = structural.broadcast_in_dim(np.zeros((), aval.dtype), shape, ())
    return general_scatter_apply_p.bind(
        operand, scatter_indices, unused, update_program=program, dimension_numbers=dn,
        indices_are_sorted=bool(indices_are_sorted), unique_indices=bool(unique_indices),
        mode=GatherScatterMode.from_any(mode),
    )  # fmt: skip


__all__ = [
    "GatherDimensionNumbers", "GatherScatterMode", "ScatterDimensionNumbers", "gather",
    "scatter", "scatter_add", "scatter_apply", "scatter_max", "scatter_min", "scatter_mul",
    "scatter_sub",
]  # fmt: skip
