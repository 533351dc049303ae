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
from refimpl.transforms import sharded

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
        if -(2**31) <= int(item) < 2**31:
            return "int", int(item)
        # beyond int32 JAX reads it as an array of its dtype (a Python int:
        # int64), which converts to int32 where JAX converts (see index_as_int32)
        if not -(2**63) <= int(item) < 2**64 and isinstance(item, int):
            raise OverflowError(f"getitem: Python int {item} too large to convert to int64")
        return "scalar", np.asarray(item)
    if isinstance(item, (str, bytes)):
        raise TypeError(f"getitem: string indices are not supported, got {item!r}")
    if isinstance(item, list):
        # an empty list is an empty integer index (NumPy's asarray makes it float64)
        item = np.asarray(item) if item else np.zeros((0,), _INDEX_DTYPE)
    if hasattr(type(item), "__jax_array__") and not tracing.is_array_like(item):
        # JAX abstracts an index (a pytree node's too), never calling it
        raise tracing.jax_array_error("getitem", "index")
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
        if is_traced(item) or _narrow_signed(aval) or not _fits_int32(item, aval):
            # a narrow signed array keeps its dtype: JAX counts a negative
            # one from the end in that dtype (see wrapped_negative); one
            # beyond int32 is converted as JAX converts it (see index_as_int32)
            return "scalar", item
        return "int", int(np.asarray(tracing.concrete_value(item, aval)))
    return "array", item


def _fits_int32(item: Any, aval: Any) -> bool:
    """Whether a concrete 0-d index array reads the same in every int32
    conversion: its value, as given (a NumPy int64 array is not yet wrapped to
    x64-off's int32) and as canonicalized, within int32."""
    values: list[Any] = [tracing.concrete_value(item, aval)]
    if isinstance(item, (np.ndarray, np.generic)):
        values.append(item)
    return all(-(2**31) <= int(np.asarray(v)) < 2**31 for v in values)


def _narrow_signed(aval: Any) -> bool:
    return dtypes.is_signed_int(aval.dtype) and aval.dtype.itemsize < _INDEX_DTYPE.itemsize


def _wide(aval: Any) -> bool:
    """An integer dtype int32 cannot hold: uint32, int64, uint64."""
    return aval.dtype.itemsize >= _INDEX_DTYPE.itemsize and aval.dtype != _INDEX_DTYPE


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
            f"getitem: Too many indices: array is {ndim}-dimensional, but {consumed} were indexed"
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
    """``x[index]``: the elements of ``x`` an index picks, by NumPy's rules with JAX's choices.

    Basic indices (ints, slices, ``None``, ``...``) must be concrete; a
    static int out of range is clamped (an IndexError with the
    ``checked_indexing`` option); integer arrays gather, out-of-range entries
    clamped; bool masks must be concrete (see the module docstring).
    ``x[index]`` on a refimpl array calls this function.

    Args:
        x: The array to index.
        index: An index or a tuple of them.

    Returns:
        An array of ``x``'s dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.getitem(rnp.arange(6).reshape(2, 3), (1, slice(None, None, -1)))
        Array([5, 4, 3], dtype=int32)
        >>> rnp.getitem(rnp.arange(5), rnp.array([0, -1, 9]))
        Array([0, 4, 4], dtype=int32)
    """
    aval_of(x, "getitem", 0)
    check_python_ints(index, "getitem")
    x, items = _normalize(x, index)
    if any(kind == "array" for kind, _ in items):
        return _advanced(x, items)
    if sharded.is_split(x) and _partial_static(items, aval_of(x, "getitem", 0).shape):
        return _basic_gather(x, items)
    return _basic(x, items)


def _partial_static(items: list[tuple[str, Any]], shape: tuple[int, ...]) -> bool:
    """Whether static ints and slices (no traced index) pick part of some
    axis: an int, or a slice whose step is not +-1 or that leaves elements
    out (JAX 0.10.2's ``has_partial_slices``)."""
    partial = False
    for (kind, value), size in zip(items, shape, strict=True):
        if kind == "scalar":
            return False  # (a dynamic slice, as JAX's)
        if kind == "int":
            partial = True
        elif kind == "slice":
            start, stop, step = value.indices(size)
            partial |= abs(step) != 1 or len(range(start, stop, step)) != size
    return partial


def _basic_gather(x: Any, items: list[tuple[str, Any]]) -> Any:
    """Static ints and slices of an array split over a mesh, outside a trace,
    as one ``gather``: JAX 0.10.2 indexes a concrete array over several
    devices so whenever an index picks part of an axis (``x[0:2]``,
    ``x[::2]``, ``x[0]``), never with ``slice``, so the gather's sharding
    rule types the result (over Explicit axes it refuses a split axis
    indexed so; over Auto ones it leaves that result replicated). As JAX's
    ``_index_to_gather``: an int is one index component, its axis
    collapsed; a slice of step 1 one component (its start) and a window of
    its length, a whole axis a whole window without one; any other step an
    ``arange`` of positions along a new batch axis of the indices (a
    negative step reverses the axis first)."""
    shape = aval_of(x, "getitem", 0).shape
    reversed_axes = tuple(
        axis
        for axis, (kind, value) in enumerate(items)
        if kind == "slice" and value.indices(shape[axis])[2] < 0
    )
    if reversed_axes:
        x = lax.rev(x, reversed_axes)
    batch_shape: list[int] = []
    components: list[tuple[Any, int | None]] = []  # (positions, batch axis or None)
    offset_dims, collapsed, start_map, sizes = [], [], [], []
    out_axis = 0
    for axis, (kind, value) in enumerate(items):
        size = shape[axis]
        if kind == "int":
            components.append((_static_int(value, size, axis), None))
            collapsed.append(axis)
            start_map.append(axis)
            sizes.append(1)
            continue
        start, stop, step = value.indices(size)
        count = len(range(start, stop, step))
        if step < 0:  # (on the reversed axis)
            start, step = size - 1 - start, -step
        if step == 1 and count == size:
            offset_dims.append(out_axis)
            sizes.append(size)
        elif step == 1:
            components.append((start, None))
            start_map.append(axis)
            offset_dims.append(out_axis)
            sizes.append(count)
        else:
            components.append((np.arange(start, start + count * step, step), len(batch_shape)))
            batch_shape.append(count)
            collapsed.append(axis)
            start_map.append(axis)
            sizes.append(1)
        out_axis += 1
    indices = np.zeros((*batch_shape, len(components)), _INDEX_DTYPE)
    for k, (positions, batch_axis) in enumerate(components):
        if batch_axis is None:
            indices[..., k] = positions
        else:
            along = [1] * len(batch_shape)
            along[batch_axis] = batch_shape[batch_axis]
            indices[..., k] = np.reshape(positions, along)
    dnums = lax.GatherDimensionNumbers(tuple(offset_dims), tuple(collapsed), tuple(start_map))
    return as_array(lax.gather(x, indices, dnums, tuple(sizes), mode="promise_in_bounds"))


def check_python_ints(index: Any, name: str) -> None:
    """With x64 off JAX converts a Python int index to int32 first, refusing
    one beyond it (``x[i]``, ``x.at[i].get()``; not ``get(mode="clip")`` nor
    the updates, which read it as int64 and wrap, see ``index_as_int32``)."""
    if config.enable_x64:
        return
    for item in _index_items(index):
        if type(item) is int and not -(2**31) <= item < 2**31:
            raise OverflowError(f"{name}: Python int {item} too large to convert to int32")


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
            # dims to int32 (wrapping: uint32 2**31 is -2**31, then clamped
            # to 0); the one index into a 1-d array keeps its dtype, and
            # dynamic_slice counts a negative one from the end in it (int8 -1
            # into 300 elements: -1 + int8(300) = 43) and clamps in it (int64
            # 2**32 reads the last element)
            one_dim = len(items) == 1 and (_narrow_signed(aval) or _wide(aval))
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


def index_as_int32(
    value: Any, size: int, order: str, normalize: bool = True, as_given: bool = False
) -> Any:
    """An integer index (an array or a traced scalar) as the int32 position JAX
    0.10.2 makes of it in an axis of ``size``; a result outside ``[0, size)``
    is out of range (the caller clamps it, fills or drops). Negative values
    count from the end (not with ``normalize=False``), and where that happens
    relative to the conversion to int32, which wraps modulo 2**32, is JAX's:

    * ``"gather"`` (gather and scatter indexing, ``x[idx]``, ``x.at[idx]``):
      counted from the end in the index's own dtype, then converted; so
      uint32 2**31 is -2**31 and int64 2**32 - 1 is -1, both out of range
      (not counted from the end: only the sign before the conversion does
      that), and int64 -2**32 + 1 into 10 elements is 11. With ``as_given``
      a NumPy array is read as given, before x64-off's conversion to int32
      (``x[idx]`` adds the size to it first; ``take`` converts it first);
    * ``"int32"`` (the start indices of a dynamic slice of several dims):
      converted first, then counted from the end (int64 2**32 - 1 is -1, the
      last element);
    * ``"exact"`` (the start of a dynamic slice of a 1-d array, ``take``):
      counted from the end and compared in the index's own dtype, so nothing
      wraps.

    A narrow signed index whose dtype cannot hold ``size`` counts from the
    end with the size wrapped into it (``wrapped_negative``), except in the
    order ``"int32"``.

    Concrete indices are converted now (they are constants, not traced
    values); traced ones with lax operations."""
    aval = aval_of(value, "getitem", "index")
    signed = dtypes.is_signed_int(aval.dtype)
    if not is_traced(value):
        given = value if as_given and order == "gather" and isinstance(value, np.ndarray) else None
        raw = np.asarray(given if given is not None else tracing.concrete_value(value, aval))
        if order != "int32" and signed and normalize and aval.dtype.itemsize < 4:
            narrow = wrapped_negative(value, size)
            if narrow is not None:
                raw, normalize = np.asarray(narrow), False
        if raw.dtype.kind == "u" and order != "int32":  # no sign: not counted from the end
            as_int = np.minimum(raw, size) if order == "exact" else raw
            return np.asarray(as_int).astype(np.int64).astype(_INDEX_DTYPE)
        concrete = raw.astype(np.int64)
        if order == "int32":
            concrete = concrete.astype(_INDEX_DTYPE).astype(np.int64)
        if normalize:
            concrete = np.where(concrete < 0, concrete + size, concrete)
        if order == "exact":
            concrete = np.clip(concrete, -1, size)
        return concrete.astype(_INDEX_DTYPE)
    if order == "int32" and (aval.dtype != _INDEX_DTYPE or aval.weak_type):
        value = lax.convert_element_type(value, _INDEX_DTYPE)
        aval, signed = aval_of(value, "getitem", "index"), True
    if order != "int32" and signed and normalize:
        narrow = wrapped_negative(value, size)
        if narrow is not None:
            value, normalize = narrow, False
    if signed and normalize:
        shift = tracing.TypedScalar(size, aval.dtype, False)
        negative = lax.lt(value, tracing.TypedScalar(0, aval.dtype, False))
        value = lax.select(negative, lax.add(value, shift), value)
    if order == "exact" and _wide(aval):
        high = tracing.TypedScalar(size, aval.dtype, False)
        if signed:
            value = lax.clamp(tracing.TypedScalar(-1, aval.dtype, False), value, high)
        else:
            value = lax.min(value, high)
    if aval.dtype != _INDEX_DTYPE or aval.weak_type:
        value = lax.convert_element_type(value, _INDEX_DTYPE)
    return value


def _index_array(value: Any, size: int, clamp: bool = True) -> Any:
    """An index (array or traced scalar) as int32 (``index_as_int32``'s
    ``"gather"`` order), then clamped into ``[0, size)`` (``clamp=False``:
    into ``[-1, size]``, so an index out of range stays so)."""
    low, high = (0, builtins.max(size - 1, 0)) if clamp else (-1, size)
    aval = aval_of(value, "getitem", "index")
    check_index_holds_size(aval, size)
    if aval.dtype == dtypes.int4 and size > 7:
        return _int4_index_array(value, aval, size, low, high)
    value = index_as_int32(value, size, "gather", as_given=True)
    if not is_traced(value):
        return np.clip(np.asarray(value), low, high).astype(_INDEX_DTYPE)
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
    """The elements of ``a`` at ``indices`` along ``axis``.

    Elements of ``a`` at ``indices`` along ``axis`` (of the flattened ``a`` when
    None); the result has shape ``a.shape[:axis] + indices.shape + a.shape[axis+1:]``.

    ``mode`` (JAX's): ``"fill"`` (default) counts negative indices from the end and
    returns ``fill_value`` (NaN, or the integer minimum/maximum, or True) for
    indices still out of range; ``"clip"`` clamps (negative -> 0); ``"wrap"``
    takes indices modulo the axis size. NumPy's ``"raise"`` is
    NotImplementedError, and bool indices are the positions 0 and 1 (not a
    mask), as JAX's.

    Args:
        a: The array to take from.
        indices: Integer indices.
        axis: The axis to take along, or None for the flattened ``a``.
        out: Must be None (NotImplementedError otherwise).
        mode: ``"fill"`` (None), ``"clip"`` or ``"wrap"``.
        unique_indices: Accepted and ignored (a hint in JAX).
        indices_are_sorted: Accepted and ignored (a hint in JAX).
        fill_value: The value out-of-range indices read in ``"fill"`` mode, or
            None for the default.

    Returns:
        An array of ``a``'s dtype and the shape given above.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.take(rnp.array([10, 20, 30]), rnp.array([2, 0]))
        Array([30, 10], dtype=int32)
        >>> rnp.take(rnp.array([10.0, 20.0, 30.0]), rnp.array([0, 5]))
        Array([10., nan], dtype=float32)
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
            raise IndexError("Cannot do a non-empty jnp.take() from an empty axis.")
        shape = aval.shape[:axis] + index_aval.shape + aval.shape[axis + 1 :]
        return lax.broadcast_in_dim(tracing.TypedScalar(0, aval.dtype, aval.weak_type), shape, ())
    # JAX clamps ("clip") and takes the remainder ("wrap") in the indices' own
    # dtype, exactly (uint32 2**31 clamps to the last element); its "fill"
    # gather converts them to int32 after counting negatives from the end
    # (int64 2**32 + 1 reads element 1)
    if mode == "wrap":
        check_index_holds_size(index_aval, size)
        if size > dtypes.iinfo(index_aval.dtype).max:  # (unsigned: exact in int32)
            indices = lax.convert_element_type(indices, _INDEX_DTYPE)
        dtype = aval_of(indices, "take", 1).dtype
        in_dtype = tracing.TypedScalar(size, dtype, False)
        indices = lax.convert_element_type(remainder(indices, in_dtype), _INDEX_DTYPE)
        return lax.gather_along_axis(a, indices, axis, mode="clip")
    if mode == "clip":
        indices = index_as_int32(indices, size, "exact", normalize=False)
        return lax.gather_along_axis(a, indices, axis, mode="clip")
    indices = index_as_int32(indices, size, "gather")
    return lax.gather_along_axis(a, indices, axis, mode="fill", fill_value=fill_value)


__all__ = ["getitem", "take"]
