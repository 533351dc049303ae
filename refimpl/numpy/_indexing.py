"""Indexing: ``x[index]`` (:func:`getitem`) and :func:`take`.

``getitem`` follows NumPy's indexing rules with JAX's choices:

* basic indices -- ints, slices (any step), ``None``, ``Ellipsis`` -- must be
  concrete and become ``slice``/``rev``/``squeeze``/``expand_dims``;
* a static int out of range is clamped into the axis, as JAX 0.10 does
  (``arange(10)[11]`` is ``9``, ``arange(10)[-11]`` is ``0``); with
  ``ri.config.update("checked_indexing", True)`` it is an ``IndexError``
  (NumPy's rule); an int index into an axis of size 0 is always one;
* a traced scalar integer index becomes a ``dynamic_slice`` (negative values
  count from the end, then the start is clamped into range, as in JAX);
* integer arrays (NumPy, refimpl or traced) are advanced indices: negative
  entries count from the end, out-of-range entries are clamped (JAX's rule
  for reads), several arrays broadcast together, and the broadcast dims go
  where NumPy puts them (in place if the advanced indices are adjacent, first
  otherwise). They become one ``gather`` along a single (flattened) axis;
* boolean masks must be concrete: they are turned into integer arrays with
  ``np.nonzero`` (the result's shape depends on their values). A traced mask
  is a ``NonConcreteBooleanIndexError`` (an ``IndexError``, as JAX's).
"""

from __future__ import annotations

import builtins
import operator
from typing import Any

import numpy as np

from refimpl import dtypes, lax, tracing
from refimpl.config import config
from refimpl.errors import NonConcreteBooleanIndexError
from refimpl.numpy._promote import as_array, aval_of, is_traced
from refimpl.numpy._shape import normalize_axis, ravel
from refimpl.numpy._ufuncs import remainder

Array = Any
ArrayLike = Any

_INDEX_DTYPE = np.dtype(np.int32)

# One normalized index item per operand dimension, after Ellipsis and None
# have been resolved:
#   ("slice", builtins.slice)   ("int", int)   ("scalar", traced 0-d int)
#   ("array", int array-like of any rank, possibly traced)


# --- parsing the index ---------------------------------------------------------------


def _index_items(index: Any) -> list[Any]:
    if isinstance(index, tuple):
        return list(index)
    if isinstance(index, list):
        raise TypeError(
            "getitem: using a non-tuple sequence for multidimensional indexing is not "
            "allowed; use x[rnp.asarray(seq)] for an index array or x[tuple(seq)]"
        )
    return [index]


def _classify(item: Any) -> tuple[str, Any]:
    """The kind of one index item, with its value checked."""
    if item is None or item is Ellipsis:
        return ("none" if item is None else "ellipsis", item)
    if isinstance(item, builtins.slice):
        return "slice", _concrete_slice(item)
    if isinstance(item, (bool, np.bool_)):
        return "bool", bool(item)
    if isinstance(item, (int, np.integer)):
        return "int", int(item)
    if isinstance(item, (str, bytes)):
        raise TypeError(f"getitem: string indices are not supported, got {item!r}")
    if isinstance(item, list):
        # an empty list is an empty integer index (NumPy's asarray makes it float64)
        item = np.asarray(item) if item else np.zeros((0,), _INDEX_DTYPE)
    if isinstance(item, (float, complex)) or not tracing.is_array_like(item):
        # JAX: a float index is a TypeError, an object of no known kind an IndexError
        raise (TypeError if isinstance(item, (float, complex)) else IndexError)(
            f"getitem: an index must be an int, a slice, None, Ellipsis or an integer or "
            f"boolean array, got {type(item).__name__} {item!r}"
        )
    aval = tracing.get_aval(item, "getitem", "index")
    if dtypes.is_bool(aval.dtype):
        if aval.ndim == 0 and not is_traced(item):
            return "bool", bool(np.asarray(tracing.concrete_value(item, aval)))
        return "mask", item
    if not dtypes.is_integer(aval.dtype):
        raise TypeError(
            f"getitem: index arrays must have an integer or boolean dtype, got {aval.dtype.name}"
        )
    if aval.ndim == 0:
        if is_traced(item) or _narrow_signed(aval):
            # a narrow signed array keeps its dtype: JAX counts a negative
            # one from the end in that dtype (see wrapped_negative)
            return "scalar", item
        return "int", int(np.asarray(tracing.concrete_value(item, aval)))
    return "array", item


def _narrow_signed(aval: Any) -> bool:
    return dtypes.is_signed_int(aval.dtype) and aval.dtype.itemsize < _INDEX_DTYPE.itemsize


def _concrete_slice(item: builtins.slice) -> builtins.slice:
    """A slice whose bounds are None or concrete ints (traced bounds would make the
    result's shape data-dependent)."""
    parts = []
    for name in ("start", "stop", "step"):
        value = getattr(item, name)
        if value is not None:
            if is_traced(value):
                raise IndexError(
                    f"getitem: slice {name} must be concrete; for a traced start use "
                    "lax.dynamic_slice"
                )
            try:
                value = operator.index(value)
            except TypeError:
                raise TypeError(f"getitem: slice {name} must be an int, got {value!r}") from None
        parts.append(value)
    if parts[2] == 0:
        raise ValueError("getitem: slice step cannot be zero")
    return builtins.slice(*parts)


def _expand_masks(items: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """Concrete boolean masks -> one integer array per masked dim (``np.nonzero``)."""
    out = []
    for kind, value in items:
        if kind != "mask":
            out.append((kind, value))
            continue
        if is_traced(value):
            raise NonConcreteBooleanIndexError(
                "getitem: boolean indices must be concrete; a traced mask would make the "
                "result's shape depend on its values (use rnp.where instead)"
            )
        mask = np.asarray(tracing.concrete_value(value, aval_of(value, "getitem", "index")))
        for part, positions in enumerate(np.nonzero(mask)):
            out.append(("mask_part", (positions.astype(np.int32), mask.shape, part)))
    return out


def _normalize(x: Any, index: Any) -> tuple[Any, list[tuple[str, Any]]]:
    """``x`` with new unit axes for ``None``/bool items, and one item per dim."""
    items = _expand_masks([_classify(item) for item in _index_items(index)])
    ndim = aval_of(x, "getitem", 0).ndim
    consumed = sum(kind not in ("none", "ellipsis", "bool") for kind, _ in items)
    if consumed > ndim:
        raise IndexError(
            f"getitem: too many indices for array: array is {ndim}-dimensional, but "
            f"{consumed} were indexed"
        )
    ellipses = [i for i, (kind, _) in enumerate(items) if kind == "ellipsis"]
    if len(ellipses) > 1:
        raise IndexError("getitem: an index can only have a single ellipsis ('...')")
    fill = [("slice", builtins.slice(None))] * (ndim - consumed)
    if ellipses:
        items[ellipses[0] : ellipses[0] + 1] = fill
    else:
        items = items + fill
    return _new_axes(x, items)


def _new_axes(x: Any, items: list[tuple[str, Any]]) -> tuple[Any, list[tuple[str, Any]]]:
    """``None`` and ``True`` insert a unit axis (indexed by ``:``), ``False`` an axis
    of length 0; mask parts are checked against the dims they index."""
    new_positions: list[int] = []
    resolved: list[tuple[str, Any]] = []
    shape = aval_of(x, "getitem", 0).shape
    dim = 0
    for kind, value in items:
        if kind in ("none", "bool"):
            new_positions.append(len(resolved))
            whole = value is None or value is True
            resolved.append(("slice", builtins.slice(None) if whole else builtins.slice(0, 0)))
            continue
        if kind == "mask_part":
            positions, mask_shape, part = value
            if shape[dim] != mask_shape[part]:
                raise IndexError(
                    f"getitem: boolean index of shape {mask_shape} does not match the "
                    f"indexed dims of the array of shape {shape}"
                )
            kind, value = "array", positions
        resolved.append((kind, value))
        dim += 1
    if new_positions:
        x = lax.expand_dims(x, tuple(new_positions))
    return x, resolved


# --- getitem -----------------------------------------------------------------------


def getitem(x: ArrayLike, index: Any) -> Array:
    """``x[index]`` with NumPy's rules (see the module docstring)."""
    aval_of(x, "getitem", 0)
    if not config.enable_x64:
        for item in _index_items(index):
            # JAX converts a Python int index to int32 first (x.at[...] does not check)
            if type(item) is int and not -(2**31) <= item < 2**31:
                raise OverflowError(f"getitem: Python int {item} too large to convert to int32")
    x, items = _normalize(x, index)
    if any(kind == "array" for kind, _ in items):
        return _advanced(x, items)
    return _basic(x, items)


def _static_int(index: int, size: int, axis: int) -> int:
    """A static int index as a position: negatives count from the end, then
    clamped into the axis (JAX's rule), or checked under ``checked_indexing``."""
    if not -size <= index < size and (size == 0 or config.checked_indexing):
        raise IndexError(
            f"getitem: index {index} is out of bounds for axis {axis} with size {size}"
        )
    return builtins.min(builtins.max(index + size if index < 0 else index, 0), size - 1)


def _apply_slices(x: Any, items: list[tuple[str, Any]]) -> Any:
    """Every ``slice`` item applied (others untouched): one ``rev`` for the
    negative steps, then one ``slice``."""
    shape = aval_of(x, "getitem", 0).shape
    starts, limits, strides = [0] * len(shape), list(shape), [1] * len(shape)
    reversed_axes = []
    for axis, (kind, value) in enumerate(items):
        if kind == "int":
            start = _static_int(value, shape[axis], axis)
            starts[axis], limits[axis] = start, start + 1
        if kind != "slice":
            continue
        start, stop, step = value.indices(shape[axis])
        count = len(range(start, stop, step))
        if step < 0:
            reversed_axes.append(axis)
            start, step = shape[axis] - 1 - start, -step
        if count == 0:
            start = limit = 0
        else:
            limit = start + (count - 1) * step + 1
        starts[axis], limits[axis], strides[axis] = start, limit, step
    if reversed_axes:
        x = lax.rev(x, tuple(reversed_axes))
    if (starts, limits, strides) != ([0] * len(shape), list(shape), [1] * len(shape)):
        x = lax.slice(x, starts, limits, strides)
    return x


def _basic(x: Any, items: list[tuple[str, Any]]) -> Any:
    """Slices, static ints and traced scalar ints (no index arrays)."""
    x = _apply_slices(x, items)
    for axis, (kind, value) in enumerate(items):
        if kind == "scalar":  # int32, like the other (static) start indices
            size = aval_of(x, "getitem", 0).shape[axis]
            if size == 0:
                raise IndexError(f"getitem: index is out of bounds for axis {axis} with size 0")
            aval = aval_of(value, "getitem", "index")
            # JAX converts the start indices of a dynamic slice of several
            # dims to int32; the one index into a 1-d array keeps its dtype,
            # and dynamic_slice counts a negative one from the end in it
            # (int8 -1 into 300 elements: -1 + int8(300) = 43)
            one_dim = len(items) == 1 and _narrow_signed(aval) and not aval.weak_type
            if not one_dim and (aval.dtype != _INDEX_DTYPE or aval.weak_type):
                value = lax.convert_element_type(value, _INDEX_DTYPE)
            x = lax.dynamic_index_in_dim(x, value, axis, keepdims=True)
    removed = tuple(axis for axis, (kind, _) in enumerate(items) if kind in ("int", "scalar"))
    if removed:
        x = lax.squeeze(x, removed)
    return as_array(x)


def check_index_holds_size(aval: Any, size: int) -> None:
    """JAX 0.10.2 wraps a negative index array by adding the axis size in the
    index's own dtype: a signed array (0-d too) too narrow for the size (int8
    indices into an axis of 300) is NumPy's OverflowError there, so here too
    (gather and scatter indexing: ``x[i, idx]``, ``x.at[i].set``)."""
    if not dtypes.is_integer(aval.dtype) or dtypes.is_unsigned_int(aval.dtype):
        return
    if aval.dtype == dtypes.int4:
        return  # the size converts into int4 unchecked, wrapping (see _index_array)
    if size > np.iinfo(aval.dtype).max:
        raise OverflowError(f"Python integer {size} out of bounds for {aval.dtype.name}")


def wrapped_negative(value: Any, size: int) -> Any:
    """``value`` with its negative entries counted from the end in its own
    dtype, as JAX's ``jnp.take`` and its dynamic slices of a 1-d array: the
    size converted to the index dtype wraps (C-style) when it does not fit,
    so int8 -1 into 300 elements is -1 + int8(300) = 43, and -128 is -84,
    still out of range. None when the dtype holds ``size`` (no wrap)."""
    aval = aval_of(value, "getitem", "index")
    if not dtypes.is_signed_int(aval.dtype) or size <= dtypes.iinfo(aval.dtype).max:
        return None
    wrapped = int(np.array(size, np.int64).astype(aval.dtype))
    zero = tracing.TypedScalar(0, aval.dtype, False)
    shift = tracing.TypedScalar(wrapped, aval.dtype, False)
    return lax.select(lax.lt(value, zero), lax.add(value, shift), value)


def _index_array(value: Any, size: int, clamp: bool = True) -> Any:
    """An index (array or traced scalar) as int32, negatives counted from the end,
    then clamped into ``[0, size)`` (``clamp=False``: into ``[-1, size]``, so an
    index still out of range stays so). Concrete indices are normalized now
    (they are constants, not traced values); traced ones with lax operations."""
    low, high = (0, builtins.max(size - 1, 0)) if clamp else (-1, size)
    aval = aval_of(value, "getitem", "index")
    check_index_holds_size(aval, size)
    if aval.dtype == dtypes.int4 and size > 7:
        return _int4_index_array(value, aval, size, low, high)
    if not is_traced(value):
        concrete = np.asarray(tracing.concrete_value(value, aval)).astype(np.int64)
        concrete = np.where(concrete < 0, concrete + size, concrete)
        return np.clip(concrete, low, high).astype(_INDEX_DTYPE)
    unsigned = dtypes.is_unsigned_int(aval.dtype)
    if unsigned and not clamp and aval.dtype.itemsize >= _INDEX_DTYPE.itemsize:
        value = lax.min(value, tracing.TypedScalar(size, aval.dtype, False))  # no wrap below
    if aval.dtype != _INDEX_DTYPE or aval.weak_type:
        value = lax.convert_element_type(value, _INDEX_DTYPE)
    zero = tracing.TypedScalar(0, _INDEX_DTYPE, False)
    if not unsigned:
        wrapped = lax.add(value, tracing.TypedScalar(size, _INDEX_DTYPE, False))
        value = lax.select(lax.lt(value, zero), wrapped, value)
    return lax.clamp(
        tracing.TypedScalar(low, _INDEX_DTYPE, False),
        value,
        tracing.TypedScalar(high, _INDEX_DTYPE, False),
    )


def _int4_index_array(value: Any, aval: Any, size: int, low: int, high: int) -> Any:
    """An int4 index into an axis longer than 7, as JAX 0.10.2 reads it: a
    negative one plus the size, both in int4 (the size wraps: -2 into 10
    elements is -2 + int4(10) = -8), once, then clamped (or left out of range)."""
    if not is_traced(value):
        concrete = np.asarray(tracing.concrete_value(value, aval)).astype(np.int64)
        shifted = (concrete + dtypes.wrap_int4(size, dtypes.int4) + 8) % 16 - 8
        concrete = np.where(concrete < 0, shifted, concrete)
        return np.clip(concrete, low, high).astype(_INDEX_DTYPE)
    value = lax.convert_element_type(wrapped_negative(value, size), _INDEX_DTYPE)
    return lax.clamp(
        tracing.TypedScalar(low, _INDEX_DTYPE, False),
        value,
        tracing.TypedScalar(high, _INDEX_DTYPE, False),
    )


def _inside(indices: list[Any], sizes: list[int], shape: tuple) -> Any:
    """Where every index component (negatives counted from the end) is in
    range, broadcast to ``shape``; None when all are (known statically)."""
    inside = None
    for index, size in zip(indices, sizes, strict=True):
        component = _index_array(index, size, clamp=False)
        if not is_traced(component):
            ok = (component >= 0) & (component < size)
            if ok.all():
                continue
            term: Any = np.broadcast_to(ok, shape)
        else:
            term = lax.bitwise_and(
                lax.ge(component, tracing.TypedScalar(0, _INDEX_DTYPE, False)),
                lax.lt(component, tracing.TypedScalar(size, _INDEX_DTYPE, False)),
            )
            term_shape = aval_of(term, "getitem", "index").shape
            if term_shape != shape:
                lead = len(shape) - len(term_shape)
                term = lax.broadcast_in_dim(term, shape, tuple(range(lead, len(shape))))
        inside = term if inside is None else lax.bitwise_and(inside, term)
    return inside


def _advanced(x: Any, items: list[tuple[str, Any]]) -> Any:
    """Index arrays (ints and traced scalars join them as 0-d arrays): slices first,
    then one gather over the advanced axes flattened into one."""
    whole = ("slice", builtins.slice(None))
    x = _apply_slices(x, [whole if kind == "int" else (kind, v) for kind, v in items])
    shape = aval_of(x, "getitem", 0).shape
    axes = [axis for axis, (kind, _) in enumerate(items) if kind in ("int", "scalar", "array")]
    indices = []
    for axis in axes:
        kind, value = items[axis]
        if kind == "int":
            _static_int(value, shape[axis], axis)  # (its checks)
            # among index arrays it is one more index component, as JAX's
            value = np.int64(value)
        indices.append(value)
    index_shapes = [aval_of(i, "getitem", "index").shape for i in indices]
    try:
        broadcast = tuple(np.broadcast_shapes(*index_shapes))
    except ValueError:
        # ValueError, as JAX's broadcast of the index arrays (NumPy: IndexError)
        raise ValueError(
            f"getitem: index arrays could not be broadcast together with shapes {index_shapes}"
        ) from None
    rest = [shape[d] for d in range(len(shape)) if d not in axes]
    adjacent = axes == list(range(axes[0], axes[0] + len(axes)))
    sizes = [shape[d] for d in axes]
    result_shape = (
        tuple(rest[: axes[0]]) + broadcast + tuple(rest[axes[0] :])
        if adjacent
        else broadcast + tuple(rest)
    )
    if 0 in sizes:
        if int(np.prod(broadcast)) != 0:
            raise IndexError(f"getitem: cannot index an axis of size 0 (shape {shape})")
        aval = aval_of(x, "getitem", 0)
        return lax.broadcast_in_dim(
            tracing.TypedScalar(0, aval.dtype, aval.weak_type), result_shape, ()
        )
    flat_index = _flat_index(indices, sizes, broadcast)
    moved = [*axes, *(d for d in range(len(shape)) if d not in axes)]
    if moved != list(range(len(shape))):
        x = lax.transpose(x, moved)
    x = lax.reshape(x, (int(np.prod(sizes)), *rest))
    # JAX's x[idx] is a gather promising in-bounds indices: an out-of-range
    # one reads the clamped place (its tangent too) and its cotangent is
    # dropped (XLA's scatter skips it)
    if len(indices) == 1:
        index = _index_array(indices[0], sizes[0], clamp=False)
        index_shape = aval_of(index, "getitem", "index").shape
        if index_shape != broadcast:
            index = lax.broadcast_in_dim(index, broadcast, ())
        gathered = lax.gather_along_axis(x, index, 0, mode="promise_in_bounds")
    else:
        # one flat index cannot keep a component out of range: the clamped
        # read, its cotangent stopped where a component is out of range
        gathered = lax.gather_along_axis(x, flat_index, 0, mode="clip")
        inside = _inside(indices, sizes, broadcast)
        if inside is not None:
            keep = lax.broadcast_in_dim(
                inside, aval_of(gathered, "getitem", 0).shape, tuple(range(len(broadcast)))
            )
            gathered = lax.select(keep, gathered, lax.stop_gradient(gathered))
    if adjacent and axes[0] > 0:
        nb = len(broadcast)
        order = [*range(nb, nb + axes[0]), *range(nb), *range(nb + axes[0], nb + len(rest))]
        gathered = lax.transpose(gathered, order)
    return gathered


def _flat_index(indices: list[Any], sizes: list[int], shape: tuple) -> Any:
    """The row-major position in the flattened advanced axes: ``sum(i_k * stride_k)``."""
    flat = None
    stride = 1
    for index, size in reversed(list(zip(indices, sizes, strict=True))):
        component = _index_array(index, size)
        component_shape = aval_of(component, "getitem", "index").shape
        if component_shape not in ((), shape):  # rank 0 broadcasts inside add
            lead = len(shape) - len(component_shape)
            component = lax.broadcast_in_dim(component, shape, tuple(range(lead, len(shape))))
        if stride != 1:
            component = lax.mul(component, tracing.TypedScalar(stride, _INDEX_DTYPE, False))
        flat = component if flat is None else lax.add(flat, component)
        stride *= size
    return flat


# --- take ----------------------------------------------------------------------------

_TAKE_MODES = ("fill", "clip", "wrap")


def take(
    a: ArrayLike,
    indices: ArrayLike,
    axis: int | None = None,
    out: None = None,
    mode: str | None = None,
    unique_indices: bool = False,
    indices_are_sorted: bool = False,
    fill_value: Any = None,
) -> Array:
    """Elements of ``a`` at ``indices`` along ``axis`` (of the flattened ``a`` when
    None); the result has shape ``a.shape[:axis] + indices.shape + a.shape[axis+1:]``.

    ``mode`` (JAX's): ``"fill"`` (default) counts negative indices from the end and
    returns ``fill_value`` (NaN, or the integer minimum/maximum, or True) for
    indices still out of range; ``"clip"`` clamps (negative -> 0); ``"wrap"``
    takes indices modulo the axis size.
    """
    if out is not None:
        raise NotImplementedError("take: the out argument is not supported")
    aval = aval_of(a, "take", 0)
    index_aval = aval_of(indices, "take", 1)
    if dtypes.is_bool(index_aval.dtype):  # positions 0 and 1, as JAX (not a mask)
        indices = lax.convert_element_type(indices, np.int32)
        index_aval = aval_of(indices, "take", 1)
    if not dtypes.is_integer(index_aval.dtype):
        raise ValueError(f"take: indices must be integers, got dtype {index_aval.dtype.name}")
    mode = "fill" if mode is None else mode
    if mode not in _TAKE_MODES:
        raise (NotImplementedError if mode == "raise" else ValueError)(
            f"take: mode must be one of {_TAKE_MODES}, got {mode!r}"
        )
    if axis is None:
        a, axis = ravel(a), 0
        aval = aval_of(a, "take", 0)
    axis = normalize_axis("take", axis, aval.ndim)
    size = aval.shape[axis]
    if size == 0:
        if index_aval.size != 0:
            raise IndexError(f"take: cannot take from an empty axis {axis} of shape {aval.shape}")
        shape = aval.shape[:axis] + index_aval.shape + aval.shape[axis + 1 :]
        return lax.broadcast_in_dim(tracing.TypedScalar(0, aval.dtype, aval.weak_type), shape, ())
    if mode == "wrap":  # JAX takes the remainder by the size in the index's dtype
        check_index_holds_size(index_aval, size)
    narrow = wrapped_negative(indices, size) if mode == "fill" else None
    if narrow is not None:  # normalized in the index's own dtype, as JAX
        indices = narrow
    if index_aval.dtype != _INDEX_DTYPE or index_aval.weak_type:
        indices = lax.convert_element_type(indices, _INDEX_DTYPE)
    size_scalar = tracing.TypedScalar(size, _INDEX_DTYPE, False)
    zero = tracing.TypedScalar(0, _INDEX_DTYPE, False)
    if mode == "wrap":
        return lax.gather_along_axis(a, remainder(indices, size_scalar), axis, mode="clip")
    if mode == "clip":
        return lax.gather_along_axis(a, indices, axis, mode="clip")
    if narrow is None and not dtypes.is_unsigned_int(index_aval.dtype):
        indices = lax.select(lax.lt(indices, zero), lax.add(indices, size_scalar), indices)
    return lax.gather_along_axis(a, indices, axis, mode="fill", fill_value=fill_value)


__all__ = ["getitem", "take"]
