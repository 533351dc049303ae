"""Indexing primitives: slices at run-time offsets, gathers and scatters.

* ``dynamic_slice`` / ``dynamic_update_slice`` are XLA's: the start indices are
  scalar integer operands (one per dimension, all of one dtype), and each is
  *clamped* so that the slice stays inside the operand:
  ``start = clip(start, 0, operand_size - slice_size)``. The primitives never
  wrap negative indices; the public functions do that first, as
  ``jax.lax.dynamic_slice`` does (statically for Python/NumPy ints, with
  ``lt``/``add``/``select_n`` equations for traced signed indices).
* ``gather_along_axis`` / ``scatter`` / ``scatter_add`` are deliberately simpler than
  XLA's general gather and scatter: they index ONE axis with an integer array,
  with ``np.take`` semantics -- the result (or the updates) have shape
  ``operand.shape[:axis] + indices.shape + operand.shape[axis + 1:]``. That is
  what ``x[idx]`` and ``x.at[idx].set/add(...)`` need once the numpy layer has
  wrapped negative indices and broadcast the updates. Out-of-range indices:
  gather clamps them (``mode="clip"``) or reads a fill value (``mode="fill"``);
  ``mode="promise_in_bounds"`` (JAX's default for ``x[idx]``) clamps them too,
  and so does its JVP, but its transpose drops their cotangents (XLA's gather
  clamps, its scatter skips: JAX's reverse mode of ``x[idx]``); scatters drop
  those updates
  (``mode="drop"``, JAX's default for ``x.at[idx]``) or clamp them
  (``mode="clip"``). Negative indices are out of range here.

Weak types follow JAX 0.10: the result is weak iff the operand is, except
``dynamic_update_slice``, which is weak iff the operand, the update and every
start index are.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from refimpl import dtypes, tracing
from refimpl.core import ShapedArray
from refimpl.primitives import (
    ad_helpers,
    barriers,
    batch_rules,
    elementwise,
    rule_context,
    structural,
)
from refimpl.primitives.base import Primitive, all_weak, as_int_tuple, normalize_axis
from refimpl.transforms.masking.shape_spec import Dim

# --- start indices ---------------------------------------------------------------------


def _check_start_indices(name: str, x: ShapedArray, starts: Sequence[ShapedArray]) -> None:
    """One scalar start index per operand dimension, all of one integer dtype."""
    if len(starts) != x.ndim:
        raise TypeError(
            f"{name}: got {len(starts)} start indices for the operand of shape {x.shape}; "
            "it takes one per dimension"
        )
    for position, start in enumerate(starts):
        if start.shape != ():
            raise TypeError(
                f"{name}: start index {position} must be a scalar, got shape {start.shape}"
            )
        if not dtypes.is_integer(start.dtype):
            raise TypeError(
                f"{name}: start indices must be integers, got {start.dtype.name} at index "
                f"{position}"
            )
    if len({start.dtype for start in starts}) > 1:
        listed = ", ".join(start.dtype.name for start in starts)
        raise TypeError(
            f"{name}: index arguments to {name} must be integers of the same type, got {listed}"
        )


def _clamped_starts(
    starts: Sequence[np.ndarray], operand_shape: Sequence[int], sizes: Sequence[int]
) -> list[int]:
    """XLA's clamp: each start moves into ``[0, operand_size - size]``."""
    return [
        int(np.clip(int(start), 0, dim - size))
        for start, dim, size in zip(starts, operand_shape, sizes, strict=True)
    ]


def _window(starts: Sequence[int], sizes: Sequence[int]) -> tuple[Any, ...]:
    return tuple(builtins.slice(s, s + n) for s, n in zip(starts, sizes, strict=True))


# --- dynamic_slice -------------------------------------------------------------------------

dynamic_slice_p = Primitive("dynamic_slice")


@dynamic_slice_p.def_abstract_eval
def _dynamic_slice_abstract_eval(
    x: ShapedArray, *starts: ShapedArray, slice_sizes: tuple[int, ...]
) -> ShapedArray:
    """A ``slice_sizes`` window of ``x`` at the (clamped) run-time start indices."""
    sizes = as_int_tuple("dynamic_slice", slice_sizes, "slice_sizes")
    _check_start_indices("dynamic_slice", x, starts)
    if len(sizes) != x.ndim or any(not 0 <= n <= d for n, d in zip(sizes, x.shape, strict=True)):
        raise TypeError(
            f"dynamic_slice: slice_sizes {sizes} must have one entry per dimension, each "
            f"between 0 and the size of the operand of shape {x.shape}"
        )
    return ShapedArray(sizes, x.dtype, x.weak_type)


@dynamic_slice_p.def_impl
def _dynamic_slice_impl(
    x: np.ndarray, *starts: np.ndarray, slice_sizes: tuple[int, ...]
) -> np.ndarray:
    begin = _clamped_starts(starts, x.shape, slice_sizes)
    return x[_window(begin, slice_sizes)]


def _start_within(ctx, start: Any, last: Dim) -> Any:
    """``start`` clamped into ``[0, last]`` (``last`` a run-time dim), in its dtype."""
    dtype = tracing.get_aval(start, ctx.name, "start").dtype
    bound = elementwise.convert_element_type(ctx.index(last), dtype)
    return elementwise.clamp(np.zeros((), dtype), start, bound)


@dynamic_slice_p.def_mask
def _dynamic_slice_mask(ctx, x, *starts, slice_sizes):
    """A static-size window of a masked dim (logical L) must stay inside the
    logical extent, so its start is clamped into ``[0, L - size]`` (the
    padded op alone would only keep it inside the padded extent). A window
    as large as the padded dim is the whole dim: start 0, logical size L."""
    logical, padded = ctx.logical_in[0], ctx.avals_in[0].shape
    starts, out_logical = list(starts), []
    for d, (dim, size) in enumerate(zip(logical, slice_sizes, strict=True)):
        if ctx.masked(dim) and size == padded[d]:
            starts[d] = np.zeros((), tracing.get_aval(starts[d], ctx.name, d).dtype)
            out_logical.append(dim)
        else:
            if ctx.masked(dim):
                starts[d] = _start_within(ctx, starts[d], dim - size)
            out_logical.append(Dim.constant(size))
    return dynamic_slice_p.bind(x, *starts, slice_sizes=slice_sizes), tuple(out_logical)


# --- dynamic_update_slice --------------------------------------------------------------

dynamic_update_slice_p = Primitive("dynamic_update_slice")


@dynamic_update_slice_p.def_abstract_eval
def _dynamic_update_slice_abstract_eval(
    x: ShapedArray, update: ShapedArray, *starts: ShapedArray
) -> ShapedArray:
    """``x`` with the window at the (clamped) start indices replaced by ``update``."""
    if update.dtype != x.dtype:
        raise TypeError(
            f"dynamic_update_slice: operand and update must have the same dtype, got "
            f"{x.dtype.name} and {update.dtype.name}"
        )
    if update.ndim != x.ndim or any(u > d for u, d in zip(update.shape, x.shape, strict=True)):
        raise TypeError(
            f"dynamic_update_slice: update of shape {update.shape} must have the rank of "
            f"the operand of shape {x.shape} and fit inside it"
        )
    _check_start_indices("dynamic_update_slice", x, starts)
    # JAX's standard rule over all operands: the (strong) int indices make it strong
    return ShapedArray(x.shape, x.dtype, all_weak([x, update, *starts]))


@dynamic_update_slice_p.def_impl
def _dynamic_update_slice_impl(
    x: np.ndarray, update: np.ndarray, *starts: np.ndarray
) -> np.ndarray:
    begin = _clamped_starts(starts, x.shape, update.shape)
    out = x.copy()
    out[_window(begin, update.shape)] = update
    return out


@dynamic_update_slice_p.def_mask
def _dynamic_update_slice_mask(ctx, x, update, *starts):
    """On a masked operand dim (logical L) the start is clamped into ``[0, L
    - update size]``, as in the unpadded program. The update must be
    unmasked (its padding would overwrite valid entries)."""
    logical, update_logical = ctx.logical_in[0], ctx.logical_in[1]
    if any(ctx.masked(dim) for dim in update_logical):
        raise ctx.unsupported(
            f"the update (logical shape {ctx.show(update_logical)}) must not be masked"
        )
    starts = [
        _start_within(ctx, start, dim - size) if ctx.masked(dim) else start
        for start, dim, size in zip(starts, logical, ctx.avals_in[1].shape, strict=True)
    ]
    return dynamic_update_slice_p.bind(x, update, *starts), logical


# --- gather, scatter, scatter_add along one axis --------------------------------------------

GATHER_MODES = ("clip", "fill", "promise_in_bounds")
_CLAMPING = ("clip", "promise_in_bounds")  # gather modes that clamp their reads
SCATTER_MODES = ("drop", "clip")


def _taken_shape(name: str, x: ShapedArray, indices: ShapedArray, axis: int) -> tuple[int, ...]:
    """``x.shape`` with dimension ``axis`` replaced by ``indices.shape``."""
    # unreachable from the public API: gather_along_axis/scatter_*along_axis normalize the axis
    # first (normalize_axis), and the rules bind normalized axes
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):  # pragma: no cover
        raise TypeError(f"{name}: axis must be an int, got {axis!r}")
    # unreachable from the public API: gather_along_axis/scatter_*along_axis normalize the axis
    # first (normalize_axis), and the rules bind normalized axes
    if not 0 <= axis < x.ndim:  # pragma: no cover
        raise ValueError(f"{name}: axis {axis} out of range for the operand of shape {x.shape}")
    if not dtypes.is_integer(indices.dtype):
        raise TypeError(f"{name}: indices must be integers, got {indices.dtype.name}")
    if x.shape[axis] == 0 and int(np.prod(indices.shape)) != 0:
        # no indices read nothing (the transpose of sorting an empty array takes them)
        raise TypeError(
            f"{name}: cannot index axis {axis} of size 0 of the operand of shape {x.shape}"
        )
    return x.shape[:axis] + indices.shape + x.shape[axis + 1 :]


def _positions(indices: np.ndarray, size: int, clip: bool) -> tuple[np.ndarray, np.ndarray]:
    """(int64 positions, in-range mask); with ``clip`` positions are clamped into range."""
    if dtypes.is_unsigned_int(indices.dtype):  # keep huge unsigned values out of range
        indices = np.minimum(indices, size)
    positions = indices.astype(np.int64)
    if clip:
        return np.clip(positions, 0, size - 1), np.ones(positions.shape, bool)
    return positions, (positions >= 0) & (positions < size)


def default_fill_value(dtype: np.dtype) -> Any:
    """JAX's fill for out-of-range gathers: NaN for inexact dtypes, the minimum
    of signed and the maximum of unsigned integers, True for bool."""
    if dtypes.is_inexact(dtype):
        return np.array(np.nan, dtype)
    if dtypes.is_signed_int(dtype):
        return dtypes.min_value(dtype)
    return dtypes.max_value(dtype)


gather_along_axis_p = Primitive("gather_along_axis")


@gather_along_axis_p.def_abstract_eval
def _gather_abstract_eval(
    x: ShapedArray, indices: ShapedArray, *, axis: int, mode: str, fill_value: Any
) -> ShapedArray:
    """``np.take(x, indices, axis)``: result shape ``x.shape[:axis] + indices.shape
    + x.shape[axis+1:]``. An index outside ``[0, x.shape[axis])`` is clamped into
    it (``mode="clip"``) or reads ``fill_value`` (``mode="fill"``; ``None`` means
    :func:`default_fill_value`, a Python scalar is converted like ``astype``)."""
    shape = _taken_shape("gather", x, indices, axis)
    # unreachable from the public API: gather_along_axis checks the mode first (_check_mode)
    if mode not in GATHER_MODES:  # pragma: no cover
        raise ValueError(f"gather: mode must be one of {GATHER_MODES}, got {mode!r}")
    if fill_value is not None:
        if mode != "fill":
            raise ValueError("gather: fill_value is only used with mode='fill'")
        if not dtypes.is_python_scalar(fill_value):
            raise TypeError(f"gather: fill_value must be a Python scalar, got {fill_value!r}")
    return ShapedArray(shape, x.dtype, x.weak_type)


@gather_along_axis_p.def_impl
def _gather_impl(
    x: np.ndarray, indices: np.ndarray, *, axis: int, mode: str, fill_value: Any
) -> np.ndarray:
    positions, in_range = _positions(indices, x.shape[axis], clip=mode in _CLAMPING)
    taken = np.take(x, np.where(in_range, positions, 0), axis=axis)
    if mode in _CLAMPING:
        return taken
    fill = default_fill_value(x.dtype) if fill_value is None else fill_value
    keep = in_range.reshape((1,) * axis + in_range.shape + (1,) * (x.ndim - axis - 1))
    return np.where(keep, taken, np.asarray(fill).astype(x.dtype)).astype(x.dtype)


@gather_along_axis_p.def_mask
def _gather_mask(ctx, x, indices, *, axis, mode, fill_value):
    """Indices into a masked axis (logical L) behave as against the unpadded
    operand: clamped into ``[0, L - 1]`` (mode "clip"), or, from L on,
    reading the fill value (mode "fill"). The result's logical shape is the
    operand's with ``axis`` replaced by the indices' logical shape."""
    logical = ctx.logical_in[0]
    dim = logical[axis]
    if ctx.masked(dim):
        dtype = ctx.avals_in[1].dtype
        size = elementwise.convert_element_type(ctx.index(dim), dtype)
        if mode in _CLAMPING:
            last = elementwise.sub(size, np.ones((), dtype))
            indices = elementwise.clamp(np.zeros((), dtype), indices, last)
        else:  # the padded size is out of range of the padded operand too
            beyond = np.asarray(ctx.avals_in[0].shape[axis], dtype)
            indices = elementwise.select_n(elementwise.lt(indices, size), beyond, indices)
    out = gather_along_axis_p.bind(x, indices, axis=axis, mode=mode, fill_value=fill_value)
    return out, (*logical[:axis], *ctx.logical_in[1], *logical[axis + 1 :])


def scatter_primitive(name: str, combine: Any = None, *, numeric: bool = False) -> Primitive:
    """A scatter along one axis: ``x[..., indices, ...] = updates`` (``combine``
    None), or ``combine(x[..., indices, ...], updates)`` for a NumPy ufunc
    ``combine`` (``np.add`` for ``+=``), where ``updates`` has the shape
    ``np.take(x, indices, axis)`` would have; ``numeric`` rejects bool.
    ``mode="drop"`` skips updates at out-of-range indices, ``mode="clip"``
    clamps those indices. Repeated indices: the last update in row-major order
    of ``indices`` wins, or all of them combine in that order. (The batch rule
    and lowering are added by the caller: :func:`_scatter_batch_rule`,
    :func:`scatter_lowering`.)"""
    prim = Primitive(name)

    @prim.def_abstract_eval
    def _abstract_eval(
        x: ShapedArray, indices: ShapedArray, updates: ShapedArray, *, axis: int, mode: str
    ) -> ShapedArray:
        shape = _taken_shape(name, x, indices, axis)
        # unreachable from the public API: the public binders check the mode first (_check_mode)
        if mode not in SCATTER_MODES:  # pragma: no cover
            raise ValueError(f"{name}: mode must be one of {SCATTER_MODES}, got {mode!r}")
        if updates.dtype != x.dtype:
            raise TypeError(
                f"{name}: operand and updates must have the same dtype, got "
                f"{x.dtype.name} and {updates.dtype.name}"
            )
        if numeric and dtypes.is_bool(x.dtype):
            raise TypeError(f"{name}: does not accept dtype bool; it takes numeric types")
        if updates.shape != shape:
            raise TypeError(
                f"{name}: updates of shape {updates.shape} must have shape {shape} for the "
                f"operand of shape {x.shape} and indices of shape {indices.shape} "
                f"along axis {axis}"
            )
        return ShapedArray(x.shape, x.dtype, x.weak_type)

    @prim.def_impl
    def _impl(
        x: np.ndarray, indices: np.ndarray, updates: np.ndarray, *, axis: int, mode: str
    ) -> np.ndarray:
        positions, in_range = _positions(indices, x.shape[axis], clip=mode == "clip")
        out = x.copy()
        # View the indexed axis as the leading one, of the output and of the
        # updates (whose index dims are flattened into one), then apply rows.
        rows_out = np.moveaxis(out, axis, 0)
        flat_updates = updates.reshape(x.shape[:axis] + (positions.size,) + x.shape[axis + 1 :])
        rows_in = np.moveaxis(flat_updates, axis, 0)
        keep = in_range.reshape(-1)
        targets = positions.reshape(-1)[keep]
        if combine is None:
            rows_out[targets] = rows_in[keep]  # NumPy: the last duplicate wins
        else:
            with np.errstate(all="ignore"):
                combine.at(rows_out, targets, rows_in[keep])  # in row-major order
        return out

    @prim.def_mask
    def _mask(ctx, x, indices, updates, *, axis, mode):
        """Any dim may be masked; the result's logical shape is the
        operand's (its dims unified with the updates' matching dims).

        * Indexed axis masked (logical ``L``): an index outside ``[0, L)``
          behaves as in the unpadded program: dropped (mode "drop") or
          clamped into ``[0, L - 1]`` (mode "clip"; this assumes ``L >= 1``,
          as the unpadded clip needs a row to clamp to).
        * Indices masked: an index at a padding position of ``indices`` (so
          its row of ``updates`` is padding) writes nothing.
        * Other operand dims masked: updates rows in their padding land in
          the operand's padding, which stays unspecified.

        Both are done by rewriting the indices (clamped as the mode says,
        then the ones that must not write set to the padded axis size) and
        binding with mode "drop"; the order of the remaining updates, and so
        which of repeated indices wins, is unchanged."""
        x_logical, idx_logical, upd_logical = ctx.logical_in
        k = len(idx_logical)
        matched = [*range(axis), *range(axis + 1, len(x_logical))]
        upd_outer = [*range(axis), *range(axis + k, len(upd_logical))]
        out_logical = list(x_logical)
        for d, u in zip(matched, upd_outer, strict=True):
            out_logical[d] = ctx.unify([x_logical[d], upd_logical[u]], f"the operand's dim {d}")
        for j in range(k):
            ctx.unify([idx_logical[j], upd_logical[axis + j]], f"the indices' dim {j}")
        padded_size = ctx.avals_in[0].shape[axis]
        dtype = ctx.avals_in[1].dtype
        if np.iinfo(dtype).max < padded_size:
            dtype = np.dtype(np.int32)
            indices = elementwise.convert_element_type(indices, dtype)
        size = (
            elementwise.convert_element_type(ctx.index(x_logical[axis]), dtype)
            if ctx.masked(x_logical[axis])
            else np.asarray(padded_size, dtype)
        )
        beyond = np.asarray(padded_size, dtype)
        if mode == "clip":
            last = elementwise.sub(size, np.ones((), dtype))
            indices = elementwise.clamp(np.zeros((), dtype), indices, last)
        elif ctx.masked(x_logical[axis]):
            indices = elementwise.select_n(elementwise.lt(indices, size), beyond, indices)
        keep = ctx.valid_region(ctx.avals_in[1].shape, idx_logical, range(k))
        indices = ctx.where(keep, indices, beyond)
        out = prim.bind(x, indices, updates, axis=axis, mode="drop")
        return out, tuple(out_logical)

    return prim


scatter_p = scatter_primitive("scatter")
scatter_add_p = scatter_primitive("scatter_add", np.add, numeric=True)


# --- batching rules (refimpl.transforms.batching) -------------------------------------
# Per-member indices become indices into the operand with the batch axis merged
# into the indexed one: member b's index i is position b * n + i of the merged
# axis of size B * n, out-of-range indices being sent to B * n (out of range of
# the merged axis too), so the clip/fill/drop modes keep their meaning.


def _index_dtype() -> np.dtype:
    return dtypes.canonicalize_dtype(np.int64)  # int32 unless x64 is enabled


def _merged_positions(indices: Any, bd: int | None, size: int, n: int, clip: bool) -> Any:
    """Member-local ``indices`` (batch axis ``bd``) -> positions along the merged
    axis (batch axis first), as described above."""
    wide = _index_dtype()
    indices = batch_rules.bdim_to(indices, bd, size, 0)
    aval = tracing.get_aval(indices, "gather", 1)
    if dtypes.is_unsigned_int(aval.dtype) and aval.dtype.itemsize >= wide.itemsize:
        indices = elementwise.min(indices, np.asarray(n, aval.dtype))  # no wrap below
    indices = elementwise.convert_element_type(indices, wide)
    if clip:
        indices = elementwise.clamp(np.asarray(0, wide), indices, np.asarray(n - 1, wide))
    offsets = structural.broadcast_in_dim(
        elementwise.mul(structural.iota(wide, size), np.asarray(n, wide)), aval.shape, (0,)
    )
    merged = elementwise.add(indices, offsets)
    if clip:
        return merged
    inside = elementwise.bitwise_and(
        elementwise.ge(indices, np.asarray(0, wide)), elementwise.lt(indices, np.asarray(n, wide))
    )
    return elementwise.select(inside, merged, np.asarray(size * n, wide))


def _merge_into(x: Any, bd: int | None, size: int, axis: int) -> tuple[Any, tuple[int, ...]]:
    """``x`` with its batch axis merged into ``axis`` (batch-major); and the
    shape with both axes apart, to split them again."""
    x = batch_rules.bdim_to(x, bd, size, axis)
    shape = batch_rules.shape_of(x)
    merged = (*shape[:axis], shape[axis] * shape[axis + 1], *shape[axis + 2 :])
    return structural.reshape(x, merged), shape


def batched_take(x, bd, indices, ibd, axis: int, mode: str, fill_value: Any = None):
    """Member b's ``take(x[b], indices[b], axis)`` for batched ``indices``;
    the batch axis of the result is ``axis``."""
    size = batch_rules.shape_of(indices)[ibd]
    if bd is None:  # one operand: a plain gather, the batch axis among the index dims
        out = gather_along_axis_p.bind(x, indices, axis=axis, mode=mode, fill_value=fill_value)
        return batch_rules.moveaxis(out, axis + ibd, axis)
    n = batch_rules.shape_of(x)[batch_rules.shift_dims((axis,), bd)[0]]
    merged, _ = _merge_into(x, bd, size, axis)
    if mode == "promise_in_bounds":
        # merged rows cannot carry an out-of-range index past the clamp: read
        # the clamped places; their cotangents drop by a stop_gradient there
        positions = _merged_positions(indices, ibd, size, n, clip=True)
        taken = gather_along_axis_p.bind(merged, positions, axis=axis, mode="clip", fill_value=None)
        inside = _inside(batch_rules.bdim_to(indices, ibd, size, 0), n)
        keep = structural.broadcast_in_dim(
            inside,
            batch_rules.shape_of(taken),
            tuple(range(axis, axis + len(batch_rules.shape_of(inside)))),
        )
        return elementwise.select(keep, taken, barriers.stop_gradient(taken))
    positions = _merged_positions(indices, ibd, size, n, clip=mode == "clip")
    return gather_along_axis_p.bind(merged, positions, axis=axis, mode=mode, fill_value=fill_value)


def _inside(indices: Any, n: int) -> Any:
    """Where ``0 <= indices < n``."""
    aval = tracing.get_aval(indices, "gather", 1)
    wide = _index_dtype()
    if dtypes.is_unsigned_int(aval.dtype) and aval.dtype.itemsize >= wide.itemsize:
        indices = elementwise.min(indices, np.asarray(n, aval.dtype))
    indices = elementwise.convert_element_type(indices, wide)
    return elementwise.bitwise_and(
        elementwise.ge(indices, np.asarray(0, wide)), elementwise.lt(indices, np.asarray(n, wide))
    )


@gather_along_axis_p.def_batch
def _gather_batch(args, dims, *, axis, mode, fill_value):
    (x, indices), (bd, ibd) = args, dims
    if ibd is not None:
        return batched_take(x, bd, indices, ibd, axis, mode, fill_value), axis
    shifted = batch_rules.shift_dims((axis,), bd)[0]
    out = gather_along_axis_p.bind(x, indices, axis=shifted, mode=mode, fill_value=fill_value)
    index_ndim = batch_rules.ndim_of(indices)
    return out, bd if bd < shifted else bd + index_ndim - 1


def _scatter_batch_rule(prim: Primitive):
    def rule(args, dims, *, axis, mode):
        (x, indices, updates), (bd, ibd, ubd) = args, dims
        size = batch_rules.axis_size_of(args, dims)
        if ibd is None:
            x = batch_rules.bdim_to(x, bd, size, 0)
            updates = batch_rules.bdim_to(updates, ubd, size, 0)
            return prim.bind(x, indices, updates, axis=axis + 1, mode=mode), 0
        n = batch_rules.shape_of(x)[axis if bd is None else batch_rules.shift_dims((axis,), bd)[0]]
        merged, split_shape = _merge_into(x, bd, size, axis)
        positions = _merged_positions(indices, ibd, size, n, clip=mode == "clip")
        updates = batch_rules.bdim_to(updates, ubd, size, axis)
        out = prim.bind(merged, positions, updates, axis=axis, mode=mode)
        return structural.reshape(out, split_shape), axis

    return rule


scatter_p.def_batch(_scatter_batch_rule(scatter_p))
scatter_add_p.def_batch(_scatter_batch_rule(scatter_add_p))


def _batched_starts(starts, dims, size: int, limits: list[int]) -> list[Any]:
    """Each start index as a (size,) vector of the wide index dtype, clamped
    into ``[0, limit]`` as XLA clamps it."""
    wide = _index_dtype()
    out = []
    for start, d, limit in zip(starts, dims, limits, strict=True):
        dtype = tracing.get_aval(start, "dynamic_slice", "start").dtype
        if dtype != wide and limit <= dtypes.iinfo(dtype).max:
            # clamped in its own dtype first: converting a uint32 start of
            # 2**31 to x64-off's int32 would wrap it below 0
            start = elementwise.clamp(np.asarray(0, dtype), start, np.asarray(limit, dtype))
        start = elementwise.convert_element_type(start, wide)
        start = batch_rules.bdim_to(start, d, size, 0)
        out.append(elementwise.clamp(np.asarray(0, wide), start, np.asarray(limit, wide)))
    return out


def _window_indices(start: Any, length: int, size: int) -> Any:
    """``start[b] + arange(length)`` as a (size, length) array."""
    wide = _index_dtype()
    shape = (size, length)
    return elementwise.add(
        structural.broadcast_in_dim(start, shape, (0,)),
        structural.broadcast_in_dim(structural.iota(wide, length), shape, (1,)),
    )


@dynamic_slice_p.def_batch
def _dynamic_slice_batch(args, dims, *, slice_sizes):
    """Unbatched starts: one more (zero) start for the batch axis. Batched
    starts: one batched gather per dimension the window does not cover whole."""
    x, *starts = args
    bd, *start_dims = dims
    size = batch_rules.axis_size_of(args, dims)
    if all(d is None for d in start_dims):
        start_dtype = tracing.get_aval(starts[0], "dynamic_slice", 1).dtype if starts else np.int32
        starts = list(starts)
        starts.insert(bd, np.zeros((), start_dtype))
        sizes = list(slice_sizes)
        sizes.insert(bd, size)
        return dynamic_slice_p.bind(x, *starts, slice_sizes=tuple(sizes)), bd
    x = batch_rules.bdim_to(x, bd, size, 0)
    shape = batch_rules.shape_of(x)[1:]
    limits = [n - k for n, k in zip(shape, slice_sizes, strict=True)]
    vectors = _batched_starts(starts, start_dims, size, limits)
    for d, (n, k, start) in enumerate(zip(shape, slice_sizes, vectors, strict=True)):
        if k == n:
            continue  # the window is the whole dimension: the start clamps to 0
        taken = batched_take(x, 0, _window_indices(start, k, size), 0, d, "clip")
        x = batch_rules.moveaxis(taken, d, 0)
    return x, 0


@dynamic_update_slice_p.def_batch
def _dynamic_update_slice_batch(args, dims):
    """Unbatched starts: one more (zero) start for the batch axis. Batched
    starts: read the update at ``position - start`` along every dimension
    (a batched gather each) and select it inside the window."""
    x, update, *starts = args
    bd, ubd, *start_dims = dims
    size = batch_rules.axis_size_of(args, dims)
    x = batch_rules.bdim_to(x, bd, size, 0)
    update = batch_rules.bdim_to(update, ubd, size, 0)
    if all(d is None for d in start_dims):
        start_dtype = (
            tracing.get_aval(starts[0], "dynamic_update_slice", 2).dtype if starts else np.int32
        )
        return dynamic_update_slice_p.bind(x, update, np.zeros((), start_dtype), *starts), 0
    shape = batch_rules.shape_of(x)[1:]
    update_shape = batch_rules.shape_of(update)[1:]
    if any(k == 0 for k in update_shape):
        return x, 0
    wide = _index_dtype()
    limits = [n - k for n, k in zip(shape, update_shape, strict=True)]
    vectors = _batched_starts(starts, start_dims, size, limits)
    spread, inside = update, None
    for d, (n, k, start) in enumerate(zip(shape, update_shape, vectors, strict=True)):
        positions = _window_indices(elementwise.neg(start), n, size)  # b, i -> i - start[b]
        clamped = elementwise.clamp(np.asarray(0, wide), positions, np.asarray(k - 1, wide))
        spread = batch_rules.moveaxis(batched_take(spread, 0, clamped, 0, d, "clip"), d, 0)
        in_window = elementwise.bitwise_and(
            elementwise.ge(positions, np.asarray(0, wide)),
            elementwise.lt(positions, np.asarray(k, wide)),
        )
        mask = structural.broadcast_in_dim(in_window, (size, *shape), (0, d + 1))
        inside = mask if inside is None else elementwise.bitwise_and(inside, mask)
    return elementwise.select(inside, spread, x), 0


# --- differentiation rules (refimpl.transforms.ad) -------------------------------------
#
# The start indices and gather/scatter indices are integers (float0
# tangents, never linear); each primitive is linear in its other operands.


def _undefined(x: Any) -> bool:
    return isinstance(x, ad_helpers.UndefinedPrimal)


@dynamic_slice_p.def_jvp
def _dynamic_slice_jvp(primals, tangents, *, slice_sizes):
    x, *starts = primals
    ans = dynamic_slice_p.bind(x, *starts, slice_sizes=slice_sizes)
    # unreachable from the public API: the other operands are integers (never a nonzero
    # tangent), and the jvp trace calls a rule only when some operand has a nonzero tangent
    if ad_helpers.is_zero(tangents[0]):  # pragma: no cover
        return ans, ad_helpers.zero_tangent(ad_helpers.aval_of(ans))
    return ans, dynamic_slice_p.bind(tangents[0], *starts, slice_sizes=slice_sizes)


@dynamic_slice_p.def_transpose
def _dynamic_slice_transpose(ct, x, *starts, slice_sizes):
    """Zeros with the cotangent written into the (same, clamped) window."""
    rest = [None] * len(starts)
    # unreachable from the public API: the backward pass skips an equation whose one output has
    # no cotangent and never passes a symbolic Zero to a single-output rule (ad.backward_pass)
    if isinstance(ct, ad_helpers.Zero):  # pragma: no cover
        return [ad_helpers.Zero(x.aval), *rest]
    zeros = ad_helpers.zeros(x.aval)
    return [dynamic_update_slice_p.bind(zeros, ct, *starts), *rest]


@dynamic_update_slice_p.def_jvp
def _dynamic_update_slice_jvp(primals, tangents):
    x, update, *starts = primals
    tx, tu = tangents[:2]
    ans = dynamic_update_slice_p.bind(x, update, *starts)
    # unreachable from the public API: the other operands are integers (never a nonzero
    # tangent), and the jvp trace calls a rule only when some operand has a nonzero tangent
    if ad_helpers.is_zero(tx) and ad_helpers.is_zero(tu):  # pragma: no cover
        return ans, ad_helpers.zero_tangent(ad_helpers.aval_of(ans))
    tx = ad_helpers.instantiate(tx, ad_helpers.tangent_aval(ad_helpers.aval_of(x)))
    tu = ad_helpers.instantiate(tu, ad_helpers.tangent_aval(ad_helpers.aval_of(update)))
    return ans, dynamic_update_slice_p.bind(tx, tu, *starts)


@dynamic_update_slice_p.def_transpose
def _dynamic_update_slice_transpose(ct, x, update, *starts):
    """The operand gets the cotangent with the window zeroed (those elements
    were overwritten); the update gets the window."""
    rest = [None] * len(starts)
    update_aval = ad_helpers.aval_of(update)
    # unreachable from the public API: the backward pass skips an equation whose one output has
    # no cotangent and never passes a symbolic Zero to a single-output rule (ad.backward_pass)
    if isinstance(ct, ad_helpers.Zero):  # pragma: no cover
        return [
            ad_helpers.Zero(x.aval) if _undefined(x) else None,
            ad_helpers.Zero(update_aval) if _undefined(update) else None,
            *rest,
        ]
    ct_x = ct_update = None
    if _undefined(x):
        ct_x = dynamic_update_slice_p.bind(ct, ad_helpers.zeros(update_aval), *starts)
    if _undefined(update):
        ct_update = dynamic_slice_p.bind(ct, *starts, slice_sizes=update_aval.shape)
    return [ct_x, ct_update, *rest]


@gather_along_axis_p.def_jvp
def _gather_jvp(primals, tangents, *, axis, mode, fill_value):
    """The tangent gathered alike; an out-of-range read (mode "fill") reads a
    constant, whose tangent is zero."""
    x, indices = primals
    ans = gather_along_axis_p.bind(x, indices, axis=axis, mode=mode, fill_value=fill_value)
    # unreachable from the public API: the other operands are integers (never a nonzero
    # tangent), and the jvp trace calls a rule only when some operand has a nonzero tangent
    if ad_helpers.is_zero(tangents[0]):  # pragma: no cover
        return ans, ad_helpers.zero_tangent(ad_helpers.aval_of(ans))
    tangent_fill = 0 if mode == "fill" else None
    return ans, gather_along_axis_p.bind(
        tangents[0], indices, axis=axis, mode=mode, fill_value=tangent_fill
    )


def _scatter_mode(gather_mode: str) -> str:
    """The scatter that sends a gather's cotangent back: clamped indices go to
    the clamped place, out-of-range reads (fill, promise_in_bounds) to nowhere."""
    return "clip" if gather_mode == "clip" else "drop"


def _gather_mode(scatter_mode: str) -> tuple[str, Any]:
    """The gather that reads a scatter's cotangent: the (mode, fill_value)."""
    return ("clip", None) if scatter_mode == "clip" else ("fill", 0)


@gather_along_axis_p.def_transpose
def _gather_transpose(ct, x, indices, *, axis, mode, fill_value):
    """Scatter-add the cotangent back: repeated indices accumulate."""
    # unreachable from the public API: the backward pass skips an equation whose one output has
    # no cotangent and never passes a symbolic Zero to a single-output rule (ad.backward_pass)
    if isinstance(ct, ad_helpers.Zero):  # pragma: no cover
        return [ad_helpers.Zero(x.aval), None]
    # strong zeros, as JAX's gather transpose (a full of an explicit dtype): the
    # cotangent of a weak operand comes out strong, e.g. through sort's jvp
    zeros = ad_helpers.zeros(x.aval.update(weak_type=False))
    return [scatter_add_p.bind(zeros, indices, ct, axis=axis, mode=_scatter_mode(mode)), None]


def scatter_tangents_alike(prim: Primitive) -> Callable[..., Any]:
    """The jvp of a scatter linear in (operand, updates) jointly, or whose
    winners do not depend on the values: the tangents scattered alike
    (``scatter``: the same update wins at each place)."""

    def rule(primals, tangents, **params):
        x, indices, updates = primals
        tx, _, tu = tangents
        ans = prim.bind(x, indices, updates, **params)
        # unreachable from the public API: the other operands are integers (never a nonzero
        # tangent), and the jvp trace calls a rule only when some operand has a nonzero tangent
        if ad_helpers.is_zero(tx) and ad_helpers.is_zero(tu):  # pragma: no cover
            return ans, ad_helpers.zero_tangent(ad_helpers.aval_of(ans))
        tx = ad_helpers.instantiate(tx, ad_helpers.tangent_aval(ad_helpers.aval_of(x)))
        tu = ad_helpers.instantiate(tu, ad_helpers.tangent_aval(ad_helpers.aval_of(updates)))
        return ans, prim.bind(tx, indices, tu, **params)

    return rule


def zero_scatter_cts(x: Any, updates: Any) -> list[Any]:
    """A scatter transpose's result for a zero cotangent."""
    return [
        ad_helpers.Zero(x.aval) if _undefined(x) else None,
        None,
        ad_helpers.Zero(ad_helpers.aval_of(updates)) if _undefined(updates) else None,
    ]


scatter_add_p.def_jvp(scatter_tangents_alike(scatter_add_p))
scatter_p.def_jvp(scatter_tangents_alike(scatter_p))


@scatter_add_p.def_transpose
def _scatter_add_transpose(ct, x, indices, updates, *, axis, mode):
    """The operand gets the cotangent; each update the cotangent where it
    landed (zero where it was dropped)."""
    # unreachable from the public API: the backward pass skips an equation whose one output has
    # no cotangent and never passes a symbolic Zero to a single-output rule (ad.backward_pass)
    if isinstance(ct, ad_helpers.Zero):  # pragma: no cover
        return zero_scatter_cts(x, updates)
    ct_updates = None
    if _undefined(updates):
        gather_mode, fill = _gather_mode(mode)
        ct_updates = gather_along_axis_p.bind(
            ct, indices, axis=axis, mode=gather_mode, fill_value=fill
        )
    return [ct if _undefined(x) else None, None, ct_updates]


@scatter_p.def_transpose
def _scatter_transpose(ct, x, indices, updates, *, axis, mode):
    """The operand gets the cotangent except where it was overwritten; an
    update gets the cotangent of its place only if it is the one that won
    there (the last of repeated indices), found by scattering each index
    position's own number and reading the winners back."""
    update_aval = ad_helpers.aval_of(updates)
    # unreachable from the public API: the backward pass skips an equation whose one output has
    # no cotangent and never passes a symbolic Zero to a single-output rule (ad.backward_pass)
    if isinstance(ct, ad_helpers.Zero):  # pragma: no cover
        return zero_scatter_cts(x, updates)
    ct_x = ct_updates = None
    if _undefined(x):
        ct_x = scatter_p.bind(ct, indices, ad_helpers.zeros(update_aval), axis=axis, mode=mode)
    if _undefined(updates):
        index_aval = tracing.get_aval(indices, "scatter", 1)
        own = structural.reshape(structural.iota(np.int32, index_aval.size), index_aval.shape)
        size = ad_helpers.aval_of(x).shape[axis]
        nobody = np.full((size,), -1, np.int32)
        winners = scatter_p.bind(nobody, indices, own, axis=0, mode=mode)
        read_back = gather_along_axis_p.bind(winners, indices, axis=0, mode="clip", fill_value=None)
        won = elementwise.eq(read_back, own)
        won = structural.broadcast_in_dim(
            won, update_aval.shape, tuple(range(axis, axis + index_aval.ndim))
        )
        gather_mode, fill = _gather_mode(mode)
        taken = gather_along_axis_p.bind(ct, indices, axis=axis, mode=gather_mode, fill_value=fill)
        ct_updates = elementwise.select_n(won, ad_helpers.zeros(update_aval), taken)
    return [ct_x, None, ct_updates]


# --- lowering to StableHLO (refimpl.backends.pjrt.lowering) ---------------------------
#
# dynamic_slice and dynamic_update_slice clamp their start indices exactly as
# the impls do, so they are the StableHLO ops of the same name. gather and
# scatter along one axis become StableHLO's general gather/scatter with one
# collapsed (inserted) dimension; the index handling of the impls (clip,
# fill, drop) is spelled out around them so XLA's own clamping never decides.


def _index_bounds(ctx, indices, index_dtype, size: int):
    """(in-range mask, indices clamped into ``[0, size - 1]``) in the index dtype.

    ``size - 1`` saturates at the dtype's maximum (an int8 index cannot
    point past 127 anyway)."""
    shape = ctx.shape_of(indices)
    info = dtypes.iinfo(index_dtype)
    last = builtins.min(size - 1, int(info.max))
    low = ctx.constant(0, index_dtype, shape)
    high = ctx.constant(last, index_dtype, shape)
    in_range = ctx.hlo.and_(
        ctx.compare(indices, low, "GE", index_dtype),
        ctx.compare(indices, high, "LE", index_dtype),
    )
    if size - 1 > int(info.max):  # every representable non-negative index is in range
        in_range = ctx.compare(indices, low, "GE", index_dtype)
    clamped = ctx.hlo.clamp(ctx.constant(0, index_dtype), indices, ctx.constant(last, index_dtype))
    return in_range, clamped


def _other_dims(operand_ndim: int, axis: int, index_ndim: int) -> list[int]:
    """Where the operand's dims other than ``axis`` sit in the np.take layout."""
    return [d if d < axis else d - 1 + index_ndim for d in range(operand_ndim) if d != axis]


def _wide_starts(ctx, starts, start_avals) -> list:
    """Start indices narrower than 32 bits widened to int32: XLA clamps a
    start into ``[0, dim - size]`` in the index's own type, where the bound
    wraps when it does not fit (an int8 start of 127 into 300 elements, 2
    written, is clamped to int8(298) = 42 by XLA's CPU backend in some
    programs and not in others). The primitive clamps exactly, as the
    reference interpreter."""
    wide = np.dtype(np.int32)
    return [
        ctx.convert(s, a.dtype, wide) if a.dtype.itemsize < wide.itemsize else s
        for s, a in zip(starts, start_avals, strict=True)
    ]


@dynamic_slice_p.def_lowering
def _dynamic_slice_lowering(ctx, x, *starts, slice_sizes):
    starts = _wide_starts(ctx, starts, ctx.avals_in[1:])
    return [ctx.hlo.dynamic_slice(x, starts, list(slice_sizes))]


@dynamic_update_slice_p.def_lowering
def _dynamic_update_slice_lowering(ctx, x, update, *starts):
    starts = _wide_starts(ctx, starts, ctx.avals_in[2:])
    return [ctx.hlo.dynamic_update_slice(x, update, starts)]


@gather_along_axis_p.def_lowering
def _gather_lowering(ctx, x, indices, *, axis, mode, fill_value):
    x_aval, index_aval = ctx.avals_in
    out_aval = ctx.avals_out[0]
    in_range, clamped = _index_bounds(ctx, indices, index_aval.dtype, x_aval.shape[axis])
    dims = ctx.hlo.GatherDimensionNumbers.get(
        offset_dims=_other_dims(x_aval.ndim, axis, index_aval.ndim),
        collapsed_slice_dims=[axis],
        operand_batching_dims=[],
        start_indices_batching_dims=[],
        start_index_map=[axis],
        index_vector_dim=index_aval.ndim,
    )
    sizes = list(x_aval.shape)
    sizes[axis] = 1
    if x_aval.shape[axis] == 0:
        # StableHLO rejects a slice of size 1 from an empty axis. Nothing can
        # be read from it: the result is empty (vmap over a batch of size 0
        # flattens the batch into the gathered axis) or all fill values.
        taken = ctx.constant(np.zeros((), x_aval.dtype), x_aval.dtype, out_aval.shape)
    else:
        taken = ctx.hlo.gather(x, clamped, dims, sizes, results=[ctx.ir_type(out_aval)])
    if mode in _CLAMPING:
        return [taken]
    fill = default_fill_value(x_aval.dtype) if fill_value is None else fill_value
    fill = ctx.constant(np.asarray(fill).astype(x_aval.dtype), x_aval.dtype, out_aval.shape)
    keep = ctx.hlo.broadcast_in_dim(
        ctx.tensor_type(out_aval.shape, np.dtype(bool)),
        in_range,
        list(range(axis, axis + index_aval.ndim)),
    )
    return [ctx.select(keep, taken, fill)]


def scatter_lowering(combiner: Callable[[Any, np.dtype], Callable[..., Any]]):
    """The lowering of a :func:`scatter_primitive`; ``combiner(ctx, dtype)``
    gives the update region's ``f(old, new)``."""

    def rule(ctx, x, indices, updates, *, axis, mode):
        """StableHLO's scatter skips an update whose index is out of bounds;
        ``drop`` sends every out-of-range index to one such place (``size``, or
        -1 when ``size`` does not fit the index dtype), ``clip`` clamps them."""
        x_aval, index_aval, _ = ctx.avals_in
        index_dtype, size = index_aval.dtype, x_aval.shape[axis]
        in_range, clamped = _index_bounds(ctx, indices, index_dtype, size)
        if mode == "drop":
            outside = size if size <= int(dtypes.iinfo(index_dtype).max) else -1
            target = ctx.select(
                in_range, indices, ctx.constant(outside, index_dtype, index_aval.shape)
            )
        else:
            target = clamped
        dims = ctx.hlo.ScatterDimensionNumbers.get(
            update_window_dims=_other_dims(x_aval.ndim, axis, index_aval.ndim),
            inserted_window_dims=[axis],
            input_batching_dims=[],
            scatter_indices_batching_dims=[],
            scattered_dims_to_operand_dims=[axis],
            index_vector_dim=index_aval.ndim,
        )
        op = ctx.hlo.ScatterOp([ctx.ir_type(x_aval)], [x], target, [updates], dims)
        dtype = x_aval.dtype
        combine = combiner(ctx, dtype)
        ctx.scalar_block(op.regions[0], [dtype, dtype], lambda old, new: [combine(old, new)])
        return list(op.results)

    return rule


scatter_p.def_lowering(scatter_lowering(lambda ctx, dtype: lambda old, new: new))
scatter_add_p.def_lowering(scatter_lowering(lambda ctx, dtype: ctx.hlo.add))


# --- the public lax functions ------------------------------------------------------


def _static_start(name: str, index: int | np.integer, size: int, allow_negative: bool):
    """A Python/NumPy int start index, wrapped now, as a strong scalar literal."""
    dtype = (
        dtypes.python_scalar_dtype(index)
        if isinstance(index, int)
        else dtypes.canonicalize_dtype(index.dtype)
    )
    value = int(index)
    if value < 0:
        if not allow_negative:
            raise ValueError(f"{name}: start index {value} is negative for dimension {size}")
        value += size
    if isinstance(index, int):  # the primitive clamps anyway; keep the literal in range
        info = dtypes.iinfo(dtype)
        value = int(np.clip(value, info.min, info.max))
    return tracing.TypedScalar(value, dtype, weak_type=False)


def _traced_start(name: str, index: Any, position: int, size: int, allow_negative: bool) -> Any:
    """An array start index; a signed one becomes ``index < 0 ? index + size : index``."""
    aval = tracing.get_aval(index, name, f"start_indices[{position}]")
    if not allow_negative or aval.shape != () or not dtypes.is_signed_int(aval.dtype):
        return index  # unsigned needs no wrapping; bad ones are reported by the primitive
    is_negative = elementwise.lt(index, tracing.TypedScalar(0, aval.dtype, weak_type=False))
    wrapped = elementwise.add(index, tracing.TypedScalar(size, aval.dtype, weak_type=False))
    return elementwise.select_n(is_negative, index, wrapped)


def _start_operands(
    name: str, shape: tuple[int, ...], start_indices: Any, allow_negative_indices: Any
) -> list[Any]:
    """One start-index operand per dimension, negative indices wrapped."""
    if isinstance(start_indices, np.ndarray) and start_indices.ndim == 1:
        start_indices = list(start_indices)  # NumPy ints: static, as in JAX
    elif not isinstance(start_indices, Sequence):
        start_indices = _unstack(name, start_indices)
    if len(start_indices) != len(shape):
        raise ValueError(
            f"{name}: got {len(start_indices)} start indices for the operand of shape "
            f"{shape}; it takes one per dimension"
        )
    allow = allow_negative_indices
    allow = [allow] * len(shape) if isinstance(allow, bool) else list(allow)
    starts = []
    for position, (index, size, ok) in enumerate(zip(start_indices, shape, allow, strict=True)):
        if isinstance(index, (int, np.integer)) and not isinstance(index, (bool, np.bool_)):
            starts.append(_static_start(name, index, size, ok))
        else:
            starts.append(_traced_start(name, index, position, size, ok))
    return starts


def _unstack(name: str, vector: Any) -> list[Any]:
    """The elements of a 1-D index array as scalars (``jax.lax`` accepts one)."""
    aval = tracing.get_aval(vector, name, "start_indices")
    if aval.ndim != 1:
        raise ValueError(f"{name}: start_indices must be a 1-D sequence, got shape {aval.shape}")
    return [
        structural.reshape(structural.slice(vector, (i,), (i + 1,)), ())
        for i in range(aval.shape[0])
    ]


def dynamic_slice(
    operand: Any,
    start_indices: Any,
    slice_sizes: Sequence[int],
    *,
    allow_negative_indices: bool | Sequence[bool] = True,
):
    """The ``slice_sizes`` window of ``operand`` at run-time ``start_indices``.
    Negative starts count from the end; then each start is clamped so the
    window fits (``x[8:10]`` of a size-9 axis reads ``x[7:9]``)."""
    shape = tracing.get_aval(operand, "dynamic_slice", 0).shape
    sizes = as_int_tuple("dynamic_slice", slice_sizes, "slice_sizes")
    starts = _start_operands("dynamic_slice", shape, start_indices, allow_negative_indices)
    return dynamic_slice_p.bind(operand, *starts, slice_sizes=sizes)


def dynamic_update_slice(
    operand: Any,
    update: Any,
    start_indices: Any,
    *,
    allow_negative_indices: bool | Sequence[bool] = True,
):
    """``operand`` with ``update`` written at run-time ``start_indices`` (wrapped
    if negative, then clamped so the update fits)."""
    shape = tracing.get_aval(operand, "dynamic_update_slice", 0).shape
    starts = _start_operands("dynamic_update_slice", shape, start_indices, allow_negative_indices)
    return dynamic_update_slice_p.bind(operand, update, *starts)


def _zero_starts_with(ndim: int, axis: int, index: Any) -> list[Any]:
    """``index`` at ``axis`` and zeros elsewhere, the zeros of ``index``'s
    integer dtype (JAX's ``_const(index, 0)``: an int16 index is not mixed
    with int32 zeros); Python int zeros for a Python int index."""
    zero: Any = 0
    if not isinstance(index, (int, bool)):
        try:
            dtype = tracing.get_aval(index, "dynamic_slice_in_dim", "start_index").dtype
        except TypeError:
            dtype = None  # reported by the primitive
        if dtype is not None and dtypes.is_integer(dtype):
            zero = np.zeros((), dtype)[()]
    starts: list[Any] = [zero] * ndim
    starts[axis] = index
    return starts


def dynamic_slice_in_dim(
    operand: Any,
    start_index: Any,
    slice_size: int,
    axis: int = 0,
    *,
    allow_negative_indices: bool = True,
):
    """``dynamic_slice`` of ``slice_size`` elements along one ``axis``."""
    shape = tracing.get_aval(operand, "dynamic_slice_in_dim", 0).shape
    axis = normalize_axis("dynamic_slice_in_dim", axis, len(shape))
    sizes = list(shape)
    sizes[axis] = int(slice_size)
    starts = _zero_starts_with(len(shape), axis, start_index)
    allow = [d != axis or allow_negative_indices for d in range(len(shape))]
    return dynamic_slice(operand, starts, sizes, allow_negative_indices=allow)


def dynamic_index_in_dim(
    operand: Any,
    index: Any,
    axis: int = 0,
    keepdims: bool = True,
    *,
    allow_negative_indices: bool = True,
):
    """Element ``index`` of ``axis`` (kept as a size-1 dim if ``keepdims``)."""
    ndim = tracing.get_aval(operand, "dynamic_index_in_dim", 0).ndim
    axis = normalize_axis("dynamic_index_in_dim", axis, ndim)
    result = dynamic_slice_in_dim(
        operand, index, 1, axis, allow_negative_indices=allow_negative_indices
    )
    return result if keepdims else structural.squeeze(result, (axis,))


def dynamic_update_slice_in_dim(
    operand: Any, update: Any, start_index: Any, axis: int, *, allow_negative_indices: bool = True
):
    """``dynamic_update_slice`` at ``start_index`` along one ``axis``."""
    ndim = tracing.get_aval(operand, "dynamic_update_slice_in_dim", 0).ndim
    axis = normalize_axis("dynamic_update_slice_in_dim", axis, ndim)
    starts = _zero_starts_with(ndim, axis, start_index)
    allow = [d != axis or allow_negative_indices for d in range(ndim)]
    return dynamic_update_slice(operand, update, starts, allow_negative_indices=allow)


def dynamic_update_index_in_dim(
    operand: Any, update: Any, index: Any, axis: int, *, allow_negative_indices: bool = True
):
    """Write ``update`` at element ``index`` of ``axis``; ``update`` may lack that axis."""
    ndim = tracing.get_aval(operand, "dynamic_update_index_in_dim", 0).ndim
    axis = normalize_axis("dynamic_update_index_in_dim", axis, ndim)
    if tracing.get_aval(update, "dynamic_update_index_in_dim", 1).ndim == ndim - 1:
        update = structural.expand_dims(update, (axis,))
    return dynamic_update_slice_in_dim(
        operand, update, index, axis, allow_negative_indices=allow_negative_indices
    )


def _check_mode(name: str, mode: Any, allowed: tuple[str, ...]) -> str:
    if mode not in allowed:
        raise ValueError(f"{name}: mode must be one of {allowed}, got {mode!r}")
    return mode


def _plain_scalar(value: Any) -> Any:
    """NumPy scalars as Python ones, so params stay plain and printable."""
    return value.item() if isinstance(value, np.generic) else value


def gather_along_axis(
    operand: Any, indices: Any, axis: int = 0, *, mode: str = "clip", fill_value: Any = None
):
    """``np.take(operand, indices, axis)`` (NOT ``np.take_along_axis``): the gather
    primitive. Out-of-range indices (including negative ones: wrap them first)
    are clamped (``mode="clip"``) or read ``fill_value`` (``mode="fill"``)."""
    ndim = tracing.get_aval(operand, "gather_along_axis", 0).ndim
    axis = normalize_axis("gather_along_axis", axis, ndim)
    mode = _check_mode("gather_along_axis", mode, GATHER_MODES)
    return gather_along_axis_p.bind(
        operand, indices, axis=axis, mode=mode, fill_value=_plain_scalar(fill_value)
    )


def scatter_along_axis(operand: Any, indices: Any, updates: Any, axis: int = 0, *, mode="drop"):
    """``operand`` with ``operand[..., indices, ...] = updates`` (``np.take``
    layout along ``axis``), the scatter primitive. Out-of-range indices are
    dropped (``mode="drop"``) or clamped (``mode="clip"``); for repeated
    indices the last update (in row-major order of ``indices``) wins."""
    ndim = tracing.get_aval(operand, "scatter_along_axis", 0).ndim
    axis = normalize_axis("scatter_along_axis", axis, ndim)
    mode = _check_mode("scatter_along_axis", mode, SCATTER_MODES)
    return scatter_p.bind(operand, indices, updates, axis=axis, mode=mode)


def scatter_add_along_axis(
    operand: Any, indices: Any, updates: Any, axis: int = 0, *, mode: str = "drop"
):
    """Like :func:`scatter_along_axis`, but updates are added (repeated indices
    accumulate, in row-major order of ``indices``): the scatter_add primitive."""
    ndim = tracing.get_aval(operand, "scatter_add_along_axis", 0).ndim
    axis = normalize_axis("scatter_add_along_axis", axis, ndim)
    mode = _check_mode("scatter_add_along_axis", mode, SCATTER_MODES)
    return scatter_add_p.bind(operand, indices, updates, axis=axis, mode=mode)


# structural's mask rules (rev, concatenate), below this module, bind these
rule_context.dynamic_slice_p = dynamic_slice_p
rule_context.dynamic_update_slice_p = dynamic_update_slice_p


__all__ = [
    "dynamic_index_in_dim", "dynamic_slice", "dynamic_slice_in_dim", "dynamic_update_index_in_dim",
    "dynamic_update_slice", "dynamic_update_slice_in_dim", "gather_along_axis",
    "scatter_add_along_axis", "scatter_along_axis",
]  # fmt: skip
