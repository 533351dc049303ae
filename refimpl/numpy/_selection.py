"""Counting, selecting, inserting and deleting elements: ``bincount``,
``compress``/``extract`` (with ``size=``), ``delete``, ``insert``, ``put``,
``place``, ``resize`` and ``trim_zeros`` (whose result length is the data's,
so it needs a concrete input, as in JAX).
"""

from __future__ import annotations

import builtins
import operator
from typing import Any

import numpy as np

from refimpl import dtypes, lax, tracing
from refimpl.numpy._creation import asarray, canonical_shape, zeros
from refimpl.numpy._indexing import take
from refimpl.numpy._promote import (
    as_array,
    aval_of,
    checked_array,
    is_traced,
)
from refimpl.numpy._promote import require_concrete as _concrete
from refimpl.numpy._search import argsort, flatnonzero, nonzero, unravel_index
from refimpl.numpy._shape import (
    broadcast_to,
    concatenate,
    moveaxis,
    normalize_axis,
    ravel,
    reshape,
    sort,
)
from refimpl.numpy._ufuncs import clip, remainder, where

Array = Any
ArrayLike = Any


def _aval(x: Any, name: str = "rnp", position: Any = 0) -> Any:
    return aval_of(x, name, position)


# --- counting and selection ---------------------------------------------------------------


def bincount(
    x: ArrayLike, weights: ArrayLike = None, minlength: int = 0, *, length: int | None = None
):
    """Counts the occurrences of each non-negative integer in ``x``.

    ``out[i]`` = the number (or summed ``weights``) of entries equal to ``i``;
    as JAX, a negative entry counts in bin 0 (``x`` is clipped below at 0) and
    a bool ``x`` counts as int32. ``length`` fixes the size (needed under a
    trace), else ``max(max(x) + 1, minlength)`` from concrete input; entries
    at or past it are dropped. The counts are int32, or the weights' dtype
    (``weights`` must have ``x``'s shape).

    Args:
        x: A 1-d array of non-negative integers (or bools).
        weights: The weight of each entry (``x``'s shape), or None for 1 each.
        minlength: The least number of bins.
        length: The static number of bins, or None (keyword-only).

    Returns:
        A 1-d array of the counts: the default int (int64 with x64), or the
        weights' dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.bincount(rnp.array([0, 1, 1, 3]))
        Array([1, 2, 0, 1], dtype=int32)
        >>> rnp.bincount(rnp.array([0, 1, 1, 3]), length=3)
        Array([1, 2, 0], dtype=int32)
    """
    x = checked_array("bincount", x)
    if dtypes.is_bool(_aval(x).dtype):
        x = lax.convert_element_type(x, np.int32)
    if not dtypes.is_integer(_aval(x).dtype):
        raise TypeError(f"bincount: x must be integers, got {_aval(x).dtype.name}")
    if _aval(x).ndim != 1:
        raise ValueError("bincount: only 1-dimensional input is supported")
    minlength = operator.index(minlength)
    if length is None:
        if is_traced(x):
            raise tracing.ConcretizationTypeError(
                "bincount: the length argument is required under a trace (jit, vmap...)"
            )
        values = np.asarray(x)
        length = max(minlength, max(0, int(values.max())) + 1 if values.size else 0)
    if weights is None:
        # counts in the default int when called (int64 under x64, as JAX's)
        dtype = dtypes.canonicalize_dtype(np.int64)
        weights = asarray(1, dtype=dtype)
    else:
        weights = checked_array("bincount", weights, 1)
        if _aval(weights).shape != _aval(x).shape:
            raise ValueError(
                f"bincount: weights must have the shape of x, got {_aval(weights).shape} "
                f"and {_aval(x).shape}"
            )
        dtype = _aval(weights).dtype
        if dtypes.is_bool(dtype):  # JAX's add of bools
            raise TypeError("bincount: bool weights are not supported (JAX's add refuses bool)")
    updates = broadcast_to(lax.convert_element_type(weights, dtype), _aval(x).shape)
    clipped = lax.max(x, tracing.TypedScalar(0, _aval(x).dtype, False))
    return lax.scatter_add_along_axis(zeros((length,), dtype), clipped, updates, 0, mode="drop")


def compress(
    condition: ArrayLike, a: ArrayLike, axis: int | None = None, *, size: int | None = None,
    fill_value: Any = 0, out: None = None,
) -> Array:  # fmt: skip
    """The slices of ``a`` along ``axis`` where ``condition`` is true.

    The slices of ``a`` along ``axis`` (flattened when None) where the 1-d
    ``condition`` holds (``condition`` shorter than the axis: the rest is
    dropped); ``size``/``fill_value`` as for :func:`nonzero`.

    Args:
        condition: A 1-d array of truth values.
        a: The array to select from.
        axis: The axis to select along, or None for the flattened ``a``.
        size: The static number of slices, or None (then ``condition`` must be
            concrete; keyword-only).
        fill_value: The value of the padding slices with ``size``
            (keyword-only).
        out: Must be None (NotImplementedError otherwise; keyword-only).

    Returns:
        An array of ``a``'s dtype with ``axis`` the number of true entries
        (or ``size``).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.compress(rnp.array([True, False, True]), rnp.array([[1, 2, 3], [4, 5, 6]]), axis=1)
        Array([[1, 3],
               [4, 6]], dtype=int32)
    """
    if out is not None:
        raise NotImplementedError("compress: the out argument is not supported")
    condition = checked_array("compress", condition)
    a = checked_array("compress", a, 1)
    if _aval(condition).ndim != 1:
        raise ValueError("compress: condition must be a 1-d array")
    if axis is None:
        a, axis = ravel(a), 0
    axis = normalize_axis("compress", axis, _aval(a).ndim)
    n = _aval(a).shape[axis]
    cond_len = _aval(condition).shape[0]
    if cond_len > n:
        # entries past the axis must be false (jnp checks them; a traced
        # condition fails in nonzero without size anyway)
        extra = condition[n:]
        condition = condition[:n]
        if size is None and not is_traced(extra) and np.any(np.asarray(extra)):
            raise ValueError("compress: condition contains entries that are out of bounds")
    if size is not None and not 0 <= size <= min(n, cond_len):
        raise ValueError(
            "compress: size must be positive and not greater than the size of the array "
            f"axis; got size={size} for a.shape[axis]={min(n, cond_len)}"
        )
    (found,) = nonzero(condition, size=size, fill_value=-1)
    count = _aval(found).shape[0]

    taken = take(a, where(found < 0, 0, found), axis=axis, mode="clip")
    if size is None:
        return taken
    shape = [1] * _aval(a).ndim
    shape[axis] = count
    valid = reshape(found >= 0, tuple(shape))
    return where(valid, taken, lax.convert_element_type(asarray(fill_value), _aval(a).dtype))


def extract(condition: ArrayLike, arr: ArrayLike, *, size: int | None = None, fill_value: Any = 0):
    """The elements of ``arr`` where ``condition`` is nonzero, flattened.

    ``compress(ravel(condition) != 0, ravel(arr))``, with the same ``size``
    and ``fill_value``.

    Args:
        condition: The truth values (``arr``'s size).
        arr: The array to take from.
        size: The static number of elements, or None (keyword-only).
        fill_value: The padding value with ``size`` (keyword-only).

    Returns:
        A 1-d array of ``arr``'s dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.extract(rnp.array([[1, 0], [0, 1]]), rnp.array([[1, 2], [3, 4]]))
        Array([1, 4], dtype=int32)
    """
    condition = ravel(checked_array("extract", condition))
    # fill_value is checked even without size=, as JAX 0.10.2 (None is a TypeError)
    aval_of(fill_value, "extract", 2)
    return compress(
        condition != 0, ravel(checked_array("extract", arr, 1)), size=size, fill_value=fill_value
    )


def delete(
    arr: ArrayLike, obj: Any, axis: int | None = None, *, assume_unique_indices: bool = False
):
    """``arr`` with the entries ``obj`` along ``axis`` removed.

    ``arr`` without the entries ``obj`` (an int, a slice or concrete indices;
    a bool mask marks the entries to delete) along ``axis`` (flattened when None).
    With ``assume_unique_indices=True`` integer indices may be traced.

    Args:
        arr: The input array.
        obj: What to delete: an int, a slice, an array of indices, or a bool
            mask.
        axis: The axis to delete along, or None for the flattened ``arr``.
        assume_unique_indices: Whether the indices are known to be distinct
            (keyword-only).

    Returns:
        An array of ``arr``'s dtype, shorter along ``axis``.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.delete(rnp.array([1, 2, 3, 4]), 1)
        Array([1, 3, 4], dtype=int32)
        >>> rnp.delete(rnp.array([[1, 2], [3, 4]]), 0, axis=0)
        Array([[3, 4]], dtype=int32)
    """
    arr = checked_array("delete", arr)
    if axis is None:
        arr, axis = ravel(arr), 0
    axis = normalize_axis("delete", axis, _aval(arr).ndim)
    n = _aval(arr).shape[axis]
    if (
        assume_unique_indices
        and is_traced(obj)
        and dtypes.is_integer(_aval(obj, "delete", "obj").dtype)
    ):
        return _delete_traced_unique(arr, obj, axis, n)
    keep = np.ones(n, bool)
    if isinstance(obj, slice):
        keep[obj] = False
    else:
        # a list or tuple is a TypeError, as JAX 0.10.2's check_arraylike
        aval_of(obj, "delete", 1)
        index = np.asarray(obj)
        if index.dtype == bool:
            keep &= ~index
        else:
            index = np.where(index < 0, index + n, index)
            if ((index < 0) | (index >= n)).any():
                raise IndexError(f"delete: index out of bounds for axis {axis} with size {n}")
            keep[index] = False

    return take(arr, asarray(np.nonzero(keep)[0].astype(np.int32)), axis=axis)


def _delete_traced_unique(arr: Any, obj: Any, axis: int, n: int) -> Any:
    """jnp's delete at traced unique indices: the kept positions are
    ``0..n-k-1`` each shifted past the (sorted, de-offset) deleted ones."""
    removed = lax.convert_element_type(ravel(obj), np.int32)
    removed = lax.clamp(np.int32(0), where(removed < 0, removed + n, removed), np.int32(n))
    k = _aval(removed).shape[0]
    removed = sort(removed) - asarray(np.arange(k, dtype=np.int32))
    kept = asarray(np.arange(n - k, dtype=np.int32))
    shift = lax.convert_element_type(kept[None, :] >= removed[:, None], np.int32)
    kept = kept + lax.reduce_sum(shift, (0,)) if k else kept
    return take(arr, kept, axis=axis)


# --- trim_zeros ---------------------------------------------------------------------------


def trim_zeros(filt: ArrayLike, trim: str = "fb", axis: Any = None) -> Array:
    """``filt`` without its leading and/or trailing all-zero slices.

    ``filt`` without its leading (``"f"`` in ``trim``) and trailing (``"b"``)
    all-zero slices along each axis in ``axis`` (every axis for ``None``).
    Eager only: the result's shape depends on the values (as in JAX).

    Args:
        filt: The input array (concrete).
        trim: ``"f"`` (front), ``"b"`` (back) or ``"fb"`` (both).
        axis: The axis or axes to trim, or None for all.

    Returns:
        A slice of ``filt``.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.trim_zeros(rnp.array([0, 0, 1, 2, 0]))
        Array([1, 2], dtype=int32)
        >>> rnp.trim_zeros(rnp.array([0, 0, 1, 2, 0]), trim="f")
        Array([1, 2, 0], dtype=int32)
    """
    filt = checked_array("trim_zeros", filt)
    values = _concrete("trim_zeros", "filt", filt)
    ndim = values.ndim
    if axis is None:
        axes = set(builtins.range(ndim))
    else:
        axes = {
            normalize_axis("trim_zeros", ax, ndim)
            for ax in (axis if isinstance(axis, (tuple, list)) else (axis,))
        }
    front, back = "f" in trim.lower(), "b" in trim.lower()
    if not axes or not (front or back):
        return filt
    index = []
    for ax in builtins.range(ndim):
        if ax not in axes:
            index.append(slice(None))
            continue
        others = tuple(d for d in builtins.range(ndim) if d != ax)
        used = np.any(values != 0, axis=others) if others else values != 0
        if not used.any():
            index.append(slice(0, 0))
            continue
        where_used = np.flatnonzero(used)
        index.append(
            slice(int(where_used[0]) if front else None, int(where_used[-1]) + 1 if back else None)
        )
    return filt[tuple(index)]


# --- more composition functions ------------------------------------------------------------


def insert(arr: ArrayLike, obj: Any, values: ArrayLike, axis: int | None = None) -> Array:
    """``arr`` with ``values`` inserted before ``obj`` along ``axis``.

    ``arr`` with ``values`` inserted before the (concrete) index or indices
    ``obj`` along ``axis`` (flattened when None), as ``np.insert``;
    out-of-range positions are clipped (NumPy raises). Traced integer
    positions work too (their number is static).

    Args:
        arr: The input array.
        obj: The position(s) to insert before: an int, a slice or an integer
            array (not a list).
        values: The values, converted to ``arr``'s dtype and broadcast to
            the inserted slices.
        axis: The axis to insert along, or None for the flattened ``arr``.

    Returns:
        An array of ``arr``'s dtype, longer along ``axis``.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.insert(rnp.array([1, 2, 3]), 1, 9)
        Array([1, 9, 2, 3], dtype=int32)
        >>> rnp.insert(rnp.array([[1, 2], [3, 4]]), 1, 0, axis=1)
        Array([[1, 0, 2],
               [3, 0, 4]], dtype=int32)
    """
    arr = checked_array("insert", arr)
    # lists and tuples are refused for obj and values, as jnp
    if not isinstance(obj, slice):
        checked_array("insert", obj, 1)
    checked_array("insert", values, 2)
    if axis is None:
        arr, axis = ravel(arr), 0
    axis = normalize_axis("insert", axis, _aval(arr).ndim)
    n = _aval(arr).shape[axis]
    values = lax.convert_element_type(asarray(values), _aval(arr).dtype)
    if not isinstance(obj, slice) and is_traced(obj):
        return _insert_traced(arr, obj, values, axis, n)
    scalar_obj = not isinstance(obj, slice) and np.ndim(obj) == 0
    # a slice picks positions among the n existing ones (obj.indices(n)), as
    # NumPy and jnp: insert(x, slice(1, -1), v) puts v before x[1] .. x[n-2]
    positions = (
        np.arange(*obj.indices(n)) if isinstance(obj, slice) else np.atleast_1d(np.asarray(obj))
    )
    # out-of-range positions are clipped into [0, n], as jnp (NumPy raises)
    positions = np.clip(np.where(positions < 0, positions + n, positions), 0, n)

    ndim = _aval(arr).ndim
    values = reshape(values, (1,) * (ndim - _aval(values).ndim) + _aval(values).shape)
    if scalar_obj:  # NumPy: the values' first axis becomes the inserted slices
        values = moveaxis(values, 0, axis)
    if positions.size == 1:  # one position: every slice of values goes there
        positions = np.full(_aval(values).shape[axis], positions[0])
    k = len(positions)
    shape = list(_aval(arr).shape)
    shape[axis] = k
    vals = moveaxis(broadcast_to(values, tuple(shape)), axis, 0)
    moved = moveaxis(arr, axis, 0)
    # existing element i sorts at 2i + 1, a value inserted before i at 2i
    order = np.argsort(np.concatenate([2 * np.arange(n) + 1, 2 * positions]), kind="stable")
    joined = concatenate([moved, lax.convert_element_type(vals, _aval(arr).dtype)], axis=0)

    return moveaxis(take(joined, asarray(order.astype(np.int32)), axis=0), 0, axis)


def _insert_traced(arr: Any, obj: Any, values: Any, axis: int, n: int) -> Any:
    """:func:`insert` at traced positions (their number is static, as jnp
    allows under jit): negative ones count from the end, the rest clipped into
    ``[0, n]``; the same sort of keys as the concrete path, done with lax."""
    index_aval = _aval(obj, "insert", "obj")
    if index_aval.ndim > 1 or not dtypes.is_integer(index_aval.dtype):
        raise TypeError("insert: obj must be an integer scalar or 1-d integer array")
    positions = lax.convert_element_type(obj, np.int32)
    positions = lax.clamp(np.int32(0), where(positions < 0, positions + n, positions), np.int32(n))
    ndim = _aval(arr).ndim
    values = reshape(values, (1,) * (ndim - _aval(values).ndim) + _aval(values).shape)
    if index_aval.ndim == 0:  # NumPy: the values' first axis becomes the inserted slices
        values = moveaxis(values, 0, axis)
        k = _aval(values).shape[axis]
        positions = broadcast_to(positions, (k,))
    k = _aval(positions).shape[0]
    shape = list(_aval(arr).shape)
    shape[axis] = k
    vals = moveaxis(broadcast_to(values, tuple(shape)), axis, 0)
    moved = moveaxis(arr, axis, 0)
    keys = concatenate([asarray(2 * np.arange(n, dtype=np.int32) + 1), 2 * positions])
    order = argsort(keys, stable=True)
    joined = concatenate([moved, lax.convert_element_type(vals, _aval(arr).dtype)], axis=0)
    return moveaxis(take(joined, order, axis=0), 0, axis)


def resize(a: ArrayLike, new_shape: Any) -> Array:
    """``a``'s elements (flattened), repeated or cut as needed, in ``new_shape``.

    An empty ``a`` gives zeros.

    Args:
        a: The input array.
        new_shape: The shape of the result.

    Returns:
        An array of ``new_shape`` and ``a``'s dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.resize(rnp.array([1, 2, 3]), (2, 4))
        Array([[1, 2, 3, 1],
               [2, 3, 1, 2]], dtype=int32)
    """

    a = ravel(checked_array("resize", a))
    shape = canonical_shape("resize", new_shape)
    size = int(np.prod(shape, dtype=np.int64))
    n = _aval(a).shape[0]
    if n == 0 or size == 0:
        return zeros(shape, _aval(a).dtype)

    return reshape(take(a, asarray((np.arange(size) % n).astype(np.int32))), shape)


def put(
    a: ArrayLike, ind: ArrayLike, v: ArrayLike, mode: str | None = None, *, inplace: bool = True
):
    """A copy of ``a`` with the values ``v`` written at the flat indices ``ind``.

    A copy of ``a`` with ``ravel(a)[ind] = v`` (``inplace=False`` required),
    ``v`` repeated or cut to ``len(ind)``. As JAX: an index out of range is
    clipped by default (``unravel_index``'s rule), ``mode="clip"`` clips to
    ``[0, size)``, ``"wrap"`` wraps; NumPy's ``"raise"`` is not supported;
    empty ``ind`` or ``v`` leave ``a`` unchanged.

    Args:
        a: The array to copy and write into.
        ind: The flat indices to write at.
        v: The values, repeated or cut to ``len(ind)``.
        mode: None, ``"clip"`` or ``"wrap"`` (see above).
        inplace: Must be False (a ValueError otherwise; keyword-only).

    Returns:
        An array of ``a``'s shape and dtype (NumPy writes into ``a`` and
        returns None).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.put(rnp.array([1, 2, 3, 4]), rnp.array([0, 2]), rnp.array([9, 8]), inplace=False)
        Array([9, 2, 8, 4], dtype=int32)
    """
    if inplace:
        raise ValueError("put: jax-style arrays are immutable; pass inplace=False")
    a = checked_array("put", a)
    ind = ravel(checked_array("put", ind, 1))
    values = ravel(checked_array("put", v, 2))
    shape = _aval(a).shape
    size = int(np.prod(shape, dtype=np.int64))
    k = _aval(ind).shape[0]
    n = _aval(values).shape[0]
    if not size or not k or not n:
        return as_array(a)
    if n != k:
        values = take(values, asarray((np.arange(k) % n).astype(np.int32)))
    if mode == "clip":
        ind = clip(ind, 0, size - 1)
    elif mode == "wrap":
        ind = remainder(ind, size)
    elif mode == "raise":
        raise NotImplementedError("put: mode='raise' is not supported (as JAX)")
    elif mode is not None:
        raise ValueError(f"put: mode should be one of 'wrap' or 'clip', got {mode!r}")
    return as_array(a).at[unravel_index(ind, shape)].set(values)


def place(arr: ArrayLike, mask: ArrayLike, vals: ArrayLike, *, inplace: bool = True) -> Array:
    """A copy of ``arr`` with ``vals`` placed where ``mask`` holds.

    A copy of ``arr`` whose elements where ``mask`` holds take ``vals`` in
    order, repeated as needed (``inplace=False`` required, as in JAX). ``mask``
    has ``arr``'s size; empty ``vals`` is a ValueError even where ``mask`` is
    all false (as JAX).

    Args:
        arr: The array to copy and write into.
        mask: The positions to write (``arr``'s size).
        vals: The values, used in order and repeated as needed.
        inplace: Must be False (a ValueError otherwise; keyword-only).

    Returns:
        An array of ``arr``'s shape and dtype (NumPy writes into ``arr`` and
        returns None).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> x = rnp.array([1, 2, 3, 4])
        >>> rnp.place(x, rnp.array([True, False, True, True]), rnp.array([0, 9]), inplace=False)
        Array([0, 2, 9, 0], dtype=int32)
    """

    if inplace:
        raise ValueError("place: jax-style arrays are immutable; pass inplace=False")
    arr = checked_array("place", arr)
    mask = ravel(checked_array("place", mask, 1))
    flat = ravel(arr)
    size = _aval(flat).shape[0]
    values = ravel(checked_array("place", vals, 2))
    if _aval(mask).shape[0] != size:
        raise ValueError("place: arr and mask must be the same size")
    count = _aval(values).shape[0]
    if count == 0:
        raise ValueError("place: cannot place values from an empty array")
    if size == 0:
        return as_array(arr)
    positions = flatnonzero(mask, size=size, fill_value=size)  # padding: out of range, dropped
    cyclic = take(values, asarray((np.arange(size) % count).astype(np.int32)))
    return reshape(flat.at[positions].set(cyclic, mode="drop"), _aval(arr).shape)


__all__ = [
    "trim_zeros",
    "bincount",
    "compress",
    "delete",
    "insert",
    "put",
    "resize",
    "place",
    "extract",
]
