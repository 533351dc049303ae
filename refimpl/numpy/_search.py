"""Indexing helpers, sorting and searching, and set functions of ``jax.numpy``.

Functions whose result size depends on the data (``nonzero``, ``argwhere``,
``unique``, the set functions) take ``size=``: the result has exactly
``size`` entries, cut or padded with ``fill_value``. Without ``size`` they
need a concrete input (eagerly, the count is read from it); under a trace they
raise ``ConcretizationTypeError`` naming the argument, as in JAX.

The building block is *compaction*: the entries where a mask holds go, in
order, to positions ``cumsum(mask) - 1`` of a ``size``-long result (a
``scatter`` that drops positions ``>= size``).

Orders are the sort primitive's: NaNs after +inf, ``-0.0 == 0.0``.
``searchsorted`` counts, for each query, the sorted elements before it in
that order (a comparison of every pair: O(len(a) * len(v)) work, exact).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from refimpl import dtypes, lax, tracing
from refimpl.numpy import _indexing, _ufuncs
from refimpl.numpy._creation import asarray, canonical_dtype, full, zeros
from refimpl.numpy._promote import (
    as_array,
    aval_of,
    broadcast_shapes,
    broadcast_to_shape,
    checked_array,
    is_traced,
    promote_dtypes,
    result_type,
)
from refimpl.numpy._shape import (
    broadcast_to,
    concatenate,
    moveaxis,
    normalize_axis,
    ravel,
    reshape,
    stack,
)
from refimpl.numpy._ufuncs import add, clip, floor_divide, isnan, remainder, to_bool
from refimpl.numpy._ufuncs import select as _where
from refimpl.transforms.jit import jit

Array = Any
ArrayLike = Any
# searchsorted's positions are int32 whatever x64 says (JAX picks int64 only
# for a sorted array longer than int32 can count)
_I32 = np.dtype(np.int32)


def _index_dtype() -> np.dtype:
    """The dtype of the indices these functions return: the default int, read at
    call time (int64 under x64, as JAX), since x64 can change between calls."""
    return dtypes.canonicalize_dtype(np.int64)


def _aval(x: Any, name: str = "rnp", position: Any = 0) -> Any:
    return aval_of(x, name, position)


def _int(value: int) -> tracing.TypedScalar:
    return tracing.TypedScalar(value, _index_dtype(), False)


def _iota(n: int) -> Any:
    return lax.iota(_index_dtype(), n)


def _static_size(name: str, size: Any, count: Callable[[], Any]) -> int:
    """``size`` if given, else the concrete number ``count()`` evaluates to."""
    if size is not None:
        size = operator.index(size)
        if size < 0:
            raise ValueError(f"{name}: size must be non-negative, got {size}")
        return size
    value = count()
    if is_traced(value):
        raise tracing.ConcretizationTypeError(
            f"{name}: the size argument is required under a trace (jit, vmap...): the "
            "result's length depends on the data. Pass size=... (and fill_value=...)."
        )
    return int(np.asarray(value))


def _count(mask: Any) -> Any:
    return lax.reduce_sum(lax.convert_element_type(mask, _index_dtype()), (0,))


def compact(values: Any, mask: Any, size: int, fill: Any) -> Any:
    """The ``values[i]`` (along axis 0) where ``mask[i]``, in order, in a
    ``size``-long result padded with ``fill``."""
    aval = _aval(values)
    n = aval.shape[0]
    target = lax.sub(lax.cumsum(lax.convert_element_type(mask, _index_dtype()), 0), _int(1))
    target = _where(mask, target, lax.broadcast_in_dim(_int(size), (n,), ()))
    fill = lax.convert_element_type(fill, aval.dtype)
    base = lax.broadcast_in_dim(fill, (size, *aval.shape[1:]), ())
    if n == 0 or size == 0:
        return base
    return lax.scatter_along_axis(base, target, values, 0, mode="drop")


# --- nonzero and friends ---------------------------------------------------------------------


def nonzero(a: ArrayLike, *, size: int | None = None, fill_value: Any = None) -> tuple[Array, ...]:
    """The indices of the nonzero elements of ``a``, one array per dimension.

    The indices come in row-major order; with ``size``, ``size`` of them
    padded with ``fill_value`` (default 0; a tuple gives one value per dim).
    A 0-d ``a`` is a ValueError.

    Args:
        a: The input array, of at least one dimension (nonzero is True).
        size: The static number of results, or None (then ``a`` must be
            concrete: under a trace it is a ConcretizationTypeError).
        fill_value: The value of the padding positions when ``size`` is more
            than the count, or None for 0; a tuple gives one per dimension.

    Returns:
        A tuple of ``a.ndim`` 1-d int32 arrays (int64 with x64), each of the
        count's (or ``size``'s) length.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.nonzero(rnp.array([[1, 0], [0, 2]]))
        (Array([0, 1], dtype=int32), Array([0, 1], dtype=int32))
        >>> rnp.nonzero(rnp.array([0, 3, 0, 4]), size=3, fill_value=-1)
        (Array([ 1,  3, -1], dtype=int32),)
    """
    aval = _aval(a, "nonzero")
    if aval.ndim == 0:
        raise ValueError("nonzero: calling nonzero on 0d arrays is not allowed; use atleast_1d")
    mask = to_bool(ravel(a))
    size = _static_size("nonzero", size, lambda: _count(mask))
    flat = compact(_iota(aval.size), mask, size, _int(-1))
    valid = lax.ge(flat, _int(0))
    fills = fill_value if isinstance(fill_value, (tuple, list)) else [fill_value] * aval.ndim
    if len(fills) != aval.ndim:
        raise ValueError(f"nonzero: fill_value must be a scalar or a tuple of length {aval.ndim}")
    out = []
    stride = aval.size
    for dim, fill in zip(aval.shape, fills, strict=True):
        stride = stride // dim if dim else 0
        coord = lax.rem(lax.div(flat, _int(max(stride, 1))), _int(max(dim, 1)))
        fill = _int(0) if fill is None else asarray(fill, dtype=_index_dtype())
        out.append(_where(valid, coord, lax.broadcast_in_dim(fill, (size,), ())))
    return tuple(out)


def flatnonzero(a: ArrayLike, *, size: int | None = None, fill_value: Any = None) -> Array:
    """The indices of the nonzero elements of the flattened ``a``.

    ``nonzero(ravel(a))[0]``, with the same ``size`` and ``fill_value``.

    Args:
        a: The input array (flattened).
        size: The static number of results, or None (then ``a`` must be
            concrete: under a trace it is a ConcretizationTypeError).
        fill_value: The value of the padding positions when ``size`` is more
            than the count, or None for 0.

    Returns:
        A 1-d int32 array (int64 with x64).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.flatnonzero(rnp.array([[1, 0], [0, 2]]))
        Array([0, 3], dtype=int32)
    """
    a = checked_array("flatnonzero", a)
    return nonzero(ravel(a), size=size, fill_value=fill_value)[0]


def argwhere(a: ArrayLike, *, size: int | None = None, fill_value: Any = None) -> Array:
    """The indices of the nonzero elements of ``a``, one row per element.

    ``stack(nonzero(a), -1)``: one row of indices per nonzero element (a 0-d
    input gives rows of length 0, as NumPy).

    Args:
        a: The input array.
        size: The static number of results, or None (then ``a`` must be
            concrete: under a trace it is a ConcretizationTypeError).
        fill_value: The value of the padding positions when ``size`` is more
            than the count, or None for 0.

    Returns:
        An int32 array (int64 with x64) of shape ``(count, a.ndim)``.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.argwhere(rnp.array([[1, 0], [0, 2]]))
        Array([[0, 0],
               [1, 1]], dtype=int32)
    """
    aval = _aval(a, "argwhere")
    if aval.ndim == 0:
        (found,) = nonzero(reshape(a, (1,)), size=size, fill_value=fill_value)
        return lax.broadcast_in_dim(_int(0), (_aval(found).shape[0], 0), ())
    return stack(nonzero(a, size=size, fill_value=fill_value), axis=1)


def where(
    condition: ArrayLike,
    x: ArrayLike = None,
    y: ArrayLike = None,
    /,
    *,
    size: int | None = None,
    fill_value: Any = None,
) -> Any:
    """Elements of ``x`` where ``condition`` holds, else of ``y`` (or :func:`nonzero`).

    With ``condition`` alone, :func:`nonzero` of it. With ``x`` and ``y``, the three are
    broadcast together and ``x`` and ``y`` promoted together (``condition`` is read as ``!=
    0``); giving only one of them is a TypeError.

    Args:
        condition: The condition array.
        x: The values where ``condition`` holds, or None.
        y: The values elsewhere, or None.
        size: Only with ``condition`` alone: :func:`nonzero`'s ``size``.
        fill_value: Only with ``condition`` alone: :func:`nonzero`'s
            ``fill_value``.

    Returns:
        An array of the broadcast shape in the promoted dtype, or, with
        ``condition`` alone, :func:`nonzero`'s tuple of index arrays.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.where(rnp.array([True, False, True]), rnp.array([1, 2, 3]), 0)
        Array([1, 0, 3], dtype=int32)
        >>> rnp.where(rnp.array([0, 5, 0, 7]))
        (Array([1, 3], dtype=int32),)
    """

    if x is None and y is None:
        return nonzero(condition, size=size, fill_value=fill_value)
    if x is None or y is None:
        # JAX's TypeError (NumPy's is a ValueError): None is not an operand
        position = 1 if x is None else 2
        raise TypeError(
            f"where: argument at position {position} is None; "
            "either both or neither of x and y should be given"
        )
    if size is not None or fill_value is not None:
        raise ValueError("where: size and fill_value are only used with a lone condition")
    return _ufuncs.where(condition, x, y)


# --- take_along_axis, put_along_axis ------------------------------------------------------------


def _along_axis(
    name: str, arr: Any, indices: Any, axis: Any, *, wrap: bool = True, order: str = "gather"
) -> tuple[Any, ...]:
    """The operands of take/put_along_axis as ``(batch..., n)`` and the default
    int ``(batch..., k)`` (``axis`` moved last, the other dims broadcast),
    negative indices counted from the end; also the row numbers of the batch
    positions. The indices are converted to int32 first as JAX converts them
    (``order``: see ``_indexing.index_as_int32``; a value outside ``[0, n)``
    is out of range)."""
    arr_aval, idx_aval = _aval(arr, name, 0), _aval(indices, name, 1)
    if not dtypes.is_integer(idx_aval.dtype):  # JAX's words for each
        if name == "take_along_axis":
            raise TypeError(f"{name} indices must be of integer type, got {idx_aval.dtype.name}")
        raise TypeError(
            "Indexer must have integer or boolean type, got indexer with type "
            f"{idx_aval.dtype.name}"
        )
    if axis is None:
        arr, axis = ravel(arr), 0
        arr_aval = _aval(arr)
        if idx_aval.ndim != 1:
            raise ValueError(f"{name}: indices must be 1-d when axis is None")
    if idx_aval.ndim != arr_aval.ndim:
        raise ValueError(
            f"{name}: indices and arr must have the same number of dimensions; "
            f"{idx_aval.ndim} vs. {arr_aval.ndim}"
        )
    axis = normalize_axis(name, axis, arr_aval.ndim)
    arr, indices = moveaxis(arr, axis, -1), moveaxis(indices, axis, -1)
    n, k = arr_aval.shape[axis], idx_aval.shape[axis]
    batch = broadcast_shapes(name, _aval(arr).shape[:-1], _aval(indices).shape[:-1])
    arr = broadcast_to(arr, (*batch, n))
    indices = broadcast_to(indices, (*batch, k))
    if n > 0:
        indices = _indexing.index_as_int32(indices, n, order, normalize=wrap)
    wrapped = lax.convert_element_type(indices, _index_dtype())
    count = int(np.prod(batch, dtype=np.int64))
    rows = lax.broadcast_in_dim(
        lax.reshape(_iota(count), batch), (*batch, k), tuple(range(len(batch)))
    )
    return arr, wrapped, rows, batch, n, k, axis


def _flat_targets(wrapped: Any, rows: Any, n: int, size: int) -> Any:
    """``row * n + index``, and ``size`` (out of range) where the index is."""
    inside = lax.bitwise_and(lax.ge(wrapped, _int(0)), lax.lt(wrapped, _int(n)))
    flat = lax.add(lax.mul(rows, _int(n)), wrapped)
    return _where(inside, flat, lax.broadcast_in_dim(_int(size), _aval(flat).shape, ()))


_TAKE_ALONG_AXIS_MODES = ("fill", "clip", "one_hot", "promise_in_bounds")


def take_along_axis(
    arr: ArrayLike,
    indices: ArrayLike,
    axis: int | None = -1,
    mode: Any = None,
    fill_value: Any = None,
    *,
    wrap_negative_indices: bool | None = None,
) -> Array:
    """The elements of ``arr`` at ``indices`` along ``axis``, position by position.

    ``out[..., j, ...] = arr[..., indices[..., j, ...], ...]`` along ``axis``
    (the other dims broadcast). Out-of-range indices read ``fill_value`` (NaN,
    or the integer extreme) with ``mode="fill"`` (the default) or are clamped
    with ``mode="clip"`` and ``"promise_in_bounds"`` (XLA's clamp).

    ``mode="one_hot"`` is JAX's gather-free form: the sum over the axis of
    ``arr`` times the one-hot encoding of the indices (an out-of-range index
    gives 0, and a NaN or inf anywhere along the axis reaches every result of
    that row, as in JAX). Negative indices count from the end unless
    ``wrap_negative_indices=False`` (the default for ``"promise_in_bounds"``).
    NumPy raises an IndexError for out-of-range indices instead.

    Args:
        arr: The array to take from.
        indices: Integer indices, of ``arr``'s rank (1-d when ``axis`` is None).
        axis: The axis to take along, or None for the flattened ``arr``.
        mode: ``"fill"`` (None), ``"clip"``, ``"one_hot"`` or
            ``"promise_in_bounds"``.
        fill_value: The value out-of-range indices read in ``"fill"`` mode, or
            None for NaN (the smallest integer, or True, for other dtypes).
        wrap_negative_indices: Whether negative indices count from the end
            (keyword-only; None for the mode's default).

    Returns:
        An array of ``arr``'s dtype, of the broadcast shape with ``axis`` the
        size of ``indices``'s.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> x = rnp.array([[10, 30, 20], [60, 40, 50]])
        >>> rnp.take_along_axis(x, rnp.array([[0], [2]]), axis=1)
        Array([[10],
               [50]], dtype=int32)
        >>> rnp.take_along_axis(rnp.array([1.0, 2.0, 3.0]), rnp.array([2, 5, -1]), axis=0)
        Array([ 3., nan,  3.], dtype=float32)
    """
    mode = "fill" if mode is None else getattr(mode, "name", mode)
    mode = mode.lower() if isinstance(mode, str) else mode
    if mode not in _TAKE_ALONG_AXIS_MODES:
        raise ValueError(
            f"take_along_axis: mode must be one of {_TAKE_ALONG_AXIS_MODES}, got {mode!r}"
        )
    if wrap_negative_indices is None:
        wrap_negative_indices = mode != "promise_in_bounds"
    # JAX converts the indices to int32 before counting negatives from the
    # end (int64 2**32 - 1 is -1, the last element); with no negatives to
    # count it gathers with them as they are: exact clamps, and the "fill"
    # gather's own conversion to int32
    order = "int32" if wrap_negative_indices else "gather" if mode == "fill" else "exact"
    arr, wrapped, rows, batch, n, k, axis = _along_axis(
        "take_along_axis", arr, indices, axis, wrap=bool(wrap_negative_indices), order=order
    )
    size = int(np.prod(batch, dtype=np.int64)) * n
    dtype = _aval(arr).dtype
    if size == 0:
        out = lax.broadcast_in_dim(tracing.TypedScalar(0, dtype, False), (*batch, k), ())
        return moveaxis(out, -1, axis)
    if mode == "one_hot":
        return moveaxis(_one_hot_take(arr, wrapped, batch, n, k), -1, axis)
    if mode in ("clip", "promise_in_bounds"):
        wrapped = lax.clamp(_int(0), wrapped, _int(n - 1))
    flat = _flat_targets(wrapped, rows, n, size)
    taken = lax.gather_along_axis(
        reshape(arr, (size,)), flat, 0, mode="fill", fill_value=fill_value
    )
    return moveaxis(taken, -1, axis)


def _one_hot_take(arr: Any, wrapped: Any, batch: tuple[int, ...], n: int, k: int) -> Any:
    """``sum_j arr[..., j] * (wrapped[..., i] == j)``: a batched dot product as
    JAX's einsum (so ``0 * nan`` is NaN), an ``or`` of ``and``s for bool."""
    hot = lax.eq(
        lax.broadcast_in_dim(wrapped, (*batch, k, n), tuple(range(len(batch) + 1))),
        lax.broadcasted_iota(_index_dtype(), (*batch, k, n), len(batch) + 1),
    )
    dtype = _aval(arr).dtype
    if dtypes.is_bool(dtype):
        spread = lax.broadcast_in_dim(arr, (*batch, k, n), (*range(len(batch)), len(batch) + 1))
        return lax.reduce_or(lax.bitwise_and(hot, spread), (len(batch) + 1,))
    nb = len(batch)
    return lax.dot_general(
        lax.convert_element_type(hot, dtype),
        arr,
        (((nb + 1,), (nb,)), (tuple(range(nb)), tuple(range(nb)))),
        precision=lax.Precision.HIGHEST,
        preferred_element_type=dtype,
    )


def put_along_axis(
    arr: ArrayLike,
    indices: ArrayLike,
    values: ArrayLike,
    axis: int | None,
    inplace: bool = True,
    *,
    mode: Any = None,
) -> Array:
    """A copy of ``arr`` with ``values`` written at ``indices`` along ``axis``.

    ``values`` are broadcast to ``indices``; ``inplace=False`` is required, as in JAX
    (arrays are immutable). ``mode`` is JAX's ``x.at[]`` one: out-of-range
    indices are dropped (None, "drop", "fill", and "promise_in_bounds", where
    they are the caller's error: JAX's CPU backend drops them) or clamped
    ("clip"); negative ones count from the end first. Of repeated ones the
    last write wins.

    Args:
        arr: The array to copy and write into.
        indices: Integer indices, of ``arr``'s rank (1-d when ``axis`` is None).
        values: The values to write, broadcast to ``indices``'s shape and
            converted to ``arr``'s dtype.
        axis: The axis to write along, or None for the flattened ``arr``.
        inplace: Must be False (a ValueError otherwise: arrays are immutable).
        mode: What to do with out-of-range indices (keyword-only, see above).

    Returns:
        An array of ``arr``'s shape and dtype (NumPy writes into ``arr`` and
        returns None).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.put_along_axis(rnp.array([[1, 2], [3, 4]]), rnp.array([[1], [0]]), 0, axis=1,
        ...                     inplace=False)
        Array([[1, 0],
               [0, 4]], dtype=int32)
    """
    if inplace:
        raise ValueError(
            "put_along_axis: jax-style arrays are immutable; pass inplace=False to get a copy"
        )
    if mode not in (None, "drop", "fill", "clip", "promise_in_bounds"):
        raise ValueError(
            f"put_along_axis: mode {mode!r} is not one of 'drop', 'fill', 'clip', "
            "'promise_in_bounds'"
        )
    shape = _aval(arr, "put_along_axis").shape
    moved, wrapped, rows, batch, n, k, moved_axis = _along_axis(
        "put_along_axis", arr, indices, axis
    )
    if mode == "clip":
        wrapped = lax.clamp(_int(0), wrapped, _int(max(n - 1, 0)))
    dtype = _aval(moved).dtype
    values = lax.convert_element_type(asarray(values), dtype)
    index_ndim = len(batch) + 1
    values = reshape(values, (1,) * (index_ndim - _aval(values).ndim) + _aval(values).shape)
    values = broadcast_to(moveaxis(values, moved_axis, -1), (*batch, k))
    size = int(np.prod(batch, dtype=np.int64)) * n
    if size == 0:
        return as_array(arr)
    target = _flat_targets(wrapped, rows, n, size)
    out = lax.scatter_along_axis(
        reshape(moved, (size,)), reshape(target, (-1,)), reshape(values, (-1,)), 0
    )
    out = moveaxis(reshape(out, (*batch, n)), -1, moved_axis)
    return reshape(out, shape)


# --- select, choose, piecewise --------------------------------------------------------------


def select(condlist: Sequence[ArrayLike], choicelist: Sequence[ArrayLike], default: Any = 0):
    """Elements chosen from ``choicelist`` by the first condition that holds.

    ``choicelist[i]`` where ``condlist[i]`` is the first true condition, else
    ``default`` (all broadcast together, choices promoted together; a
    condition that is not bool is read as ``!= 0``).

    Args:
        condlist: A non-empty sequence of condition arrays.
        choicelist: A sequence of value arrays, one per condition.
        default: The value where no condition holds.

    Returns:
        An array of the broadcast shape, in the promoted dtype of the choices
        and ``default``.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> conds = [rnp.array([True, False, False]), rnp.array([True, True, False])]
        >>> rnp.select(conds, [rnp.array([1, 2, 3]), rnp.array([10, 20, 30])], default=-1)
        Array([ 1, 20, -1], dtype=int32)
    """
    if len(condlist) != len(choicelist):
        raise ValueError(
            f"select: condlist and choicelist must have the same length, got "
            f"{len(condlist)} and {len(choicelist)}"
        )
    if not condlist:
        raise ValueError("select: condlist must be non-empty")
    choices = promote_dtypes("select", default, *choicelist)
    # a non-bool condition is its truth value (`!= 0`), as JAX
    conds = [to_bool(asarray(c)) for c in condlist]
    shape = broadcast_shapes("select", *(_aval(x).shape for x in [*conds, *choices]))
    result = _broadcast(choices[0], shape)
    for cond, choice in reversed(list(zip(conds, choices[1:], strict=True))):
        result = lax.select(_broadcast(cond, shape), _broadcast(choice, shape), result)
    return as_array(result)


def _broadcast(x: Any, shape: tuple[int, ...]) -> Any:
    own = _aval(x).shape
    return x if own == shape else broadcast_to_shape(x, own, shape)


def choose(a: ArrayLike, choices: Sequence[ArrayLike], out: None = None, mode: str = "raise"):
    """Elements picked from ``choices`` by the indices in ``a``: ``choices[a[i]][i]``.

    Everything is broadcast together and the choices promoted together.
    ``mode``: ``"raise"`` (checked now; under jit a ConcretizationTypeError,
    as JAX), ``"wrap"`` (modulo the number of choices) or ``"clip"``.

    Args:
        a: Integer indices into ``choices`` (a ValueError for other dtypes).
        choices: A non-empty sequence of arrays.
        out: Must be None (NotImplementedError otherwise).
        mode: How out-of-range indices are handled (see above).

    Returns:
        An array of the broadcast shape, in the choices' promoted dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> choices = [rnp.array([1, 2, 3]), rnp.array([10, 20, 30])]
        >>> rnp.choose(rnp.array([0, 1, 0]), choices)
        Array([ 1, 20,  3], dtype=int32)
        >>> rnp.choose(rnp.array([0, 3, -1]), choices, mode="wrap")
        Array([ 1, 20, 30], dtype=int32)
    """
    if out is not None:
        raise NotImplementedError("choose: the out argument is not supported")
    a = checked_array("choose", a)
    if not dtypes.is_integer(_aval(a).dtype):
        # ValueError, as JAX 0.10.2 (NumPy's is a TypeError)
        raise ValueError(f"choose: a must be integers, got {_aval(a).dtype.name}")
    choices = list(promote_dtypes("choose", *choices)) if choices else []
    n = len(choices)
    if n == 0:
        raise ValueError("choose: choices must be non-empty")
    if mode == "raise":
        if is_traced(a):
            raise tracing.ConcretizationTypeError(
                "choose: a is traced. The error occurred because jnp.choose was jit-compiled "
                "with mode='raise'. Use mode='wrap' or mode='clip' instead."
            )
        values = np.asarray(a)
        if values.size and (values.min() < 0 or values.max() >= n):
            # the message starts as NumPy's (callers test it)
            raise ValueError("invalid entry in choice array (choose)")
        mode = "clip"
    if mode == "wrap":
        a = remainder(a, n)
    elif mode == "clip":
        a = lax.clamp(
            tracing.TypedScalar(0, _aval(a).dtype, False),
            a,
            tracing.TypedScalar(n - 1, _aval(a).dtype, False),
        )
    else:
        raise ValueError(f"choose: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    shape = broadcast_shapes("choose", _aval(a).shape, *(_aval(c).shape for c in choices))
    stacked = stack([_broadcast(c, shape) for c in choices], axis=0)
    if _aval(stacked).weak_type:
        # JAX gathers from jnp.array(choices), and an array built from a list is
        # strongly typed even when every element is weak
        stacked = lax.convert_element_type(stacked, _aval(stacked).dtype)
    index = lax.expand_dims(_broadcast(a, shape), (0,))
    return take_along_axis(stacked, index, 0)[0]


def piecewise(x: ArrayLike, condlist: Any, funclist: Sequence[Any], *args: Any, **kw: Any):
    """A piecewise-defined function of ``x``: ``funclist[i](x)`` where ``condlist[i]`` holds.

    ``funclist[i]`` may also be a constant; the last true condition wins, as
    NumPy; an extra last function is the default (elsewhere 0). Every
    function is evaluated on all of ``x`` (in one jit per tuple of functions),
    and its result converted to ``x``'s dtype.

    Args:
        x: The input array.
        condlist: A sequence of bool arrays of ``x``'s shape (or one array).
        funclist: Functions of ``x`` or constants, one per condition, or one
            more for the default.
        *args: Extra positional arguments for the functions.
        **kw: Extra keyword arguments for the functions.

    Returns:
        An array of ``x``'s shape and dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> x = rnp.array([-2.0, 0.0, 3.0])
        >>> rnp.piecewise(x, [x < 0, x >= 0], [lambda v: -v, lambda v: v * 10])
        Array([ 2.,  0., 30.], dtype=float32)
    """
    x = checked_array("piecewise", x)
    if isinstance(condlist, (list, tuple)):
        conds = [asarray(c) for c in condlist]
    else:
        cond_aval = _aval(condlist, "piecewise", 1)
        conds = (
            [asarray(condlist)]
            if cond_aval.ndim == 0 or cond_aval.shape == _aval(x).shape
            else [condlist[i] for i in range(cond_aval.shape[0])]
        )
    n = len(conds)
    if len(funclist) not in (n, n + 1):
        raise ValueError(
            f"piecewise: with {n} condition(s), either {n} or {n + 1} functions are needed"
        )
    # As JAX: one jit per tuple of functions (static, compared by identity),
    # so calling piecewise again with the same functions traces none of them
    # again; constants, conditions and extra arguments are traced arguments.
    funcs = tuple(f if callable(f) else None for f in funclist)
    consts = [None if callable(f) else asarray(f) for f in funclist]
    return _piecewise_jitted(x, conds, consts, funcs, args, kw)


def _piecewise_body(
    x: Any, conds: list[Any], consts: list[Any], funcs: tuple[Any, ...], args: Any, kw: Any
) -> Any:
    dtype, shape = _aval(x).dtype, _aval(x).shape

    def value(fn: Any, const: Any) -> Any:
        out = fn(x, *args, **kw) if fn is not None else const
        return _broadcast(lax.convert_element_type(asarray(out), dtype), shape)

    if len(funcs) == len(conds) + 1:
        otherwise = lax.bitwise_not(_any_of(conds, shape))
        conds = [*conds, otherwise]
    result = lax.broadcast_in_dim(tracing.TypedScalar(0, dtype, False), shape, ())
    for cond, fn, const in zip(conds, funcs, consts, strict=True):
        result = lax.select(_broadcast(to_bool(cond), shape), value(fn, const), result)
    return result


_piecewise_cache: list[Any] = []


def _piecewise_jitted(*args: Any) -> Any:
    # made on first use, not at import: jit picks its backend when made, and
    # making the pjrt one while refimpl.numpy is still importing is a cycle
    if not _piecewise_cache:
        _piecewise_cache.append(jit(_piecewise_body, static_argnums=(3,)))
    return _piecewise_cache[0](*args)


def _any_of(conds: list[Any], shape: tuple[int, ...]) -> Any:
    out = lax.broadcast_in_dim(tracing.TypedScalar(False, np.dtype(bool), False), shape, ())
    for cond in conds:
        out = lax.bitwise_or(out, _broadcast(to_bool(cond), shape))
    return out


# --- index arithmetic ------------------------------------------------------------------------


def ix_(*args: ArrayLike) -> tuple[Array, ...]:
    """Open-mesh index arrays, for indexing the cross product of the arguments.

    Argument ``i`` (1-d) is reshaped to have its length in
    dim ``i`` and 1 elsewhere (bool arguments become their nonzero indices,
    so they must be concrete).

    Args:
        *args: 1-d integer or bool arrays.

    Returns:
        A tuple of arrays, each of ``len(args)`` dimensions.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.arange(12).reshape(3, 4)[rnp.ix_(rnp.array([0, 2]), rnp.array([1, 3]))]
        Array([[ 1,  3],
               [ 9, 11]], dtype=int32)
    """
    n = len(args)
    out = []
    for i, arg in enumerate(args):
        arg = checked_array("ix_", arg)
        aval = _aval(arg, "ix_", i)
        if aval.ndim != 1:
            raise ValueError(f"ix_: arguments must be 1-d, got shape {aval.shape} at position {i}")
        if dtypes.is_bool(aval.dtype):
            (arg,) = nonzero(arg)
        elif not dtypes.is_integer(aval.dtype):
            raise TypeError(f"ix_: arguments must be integer or boolean, got {aval.dtype.name}")
        shape = [1] * n
        shape[i] = _aval(arg).shape[0]
        out.append(reshape(arg, tuple(shape)))
    return tuple(out)


def unravel_index(indices: ArrayLike, shape: Sequence[int]) -> tuple[Array, ...]:
    """The coordinates of flat ``indices`` in an array of ``shape``.

    In C order, in the indices' dtype. As in JAX, negative indices count from the end and
    out-of-range ones are clipped (past the end: the last element; before
    ``-size``: the first); float indices are accepted too (NumPy raises for
    out-of-range and float indices).

    Args:
        indices: Flat indices into an array of ``shape``.
        shape: The shape (an int or a sequence of ints; may be traced).

    Returns:
        A tuple of ``len(shape)`` arrays of ``indices``'s shape.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.unravel_index(rnp.array([5, 7]), (2, 4))
        (Array([1, 1], dtype=int32), Array([1, 3], dtype=int32))
    """

    indices = checked_array("unravel_index", indices)
    given: list[Any]
    try:
        given = list(shape)
    except TypeError:  # a single int, as JAX
        given = [shape]
    if any(np.ndim(d) != 0 for d in given):
        raise ValueError("unravel_index: shape should be a scalar or 1D sequence")
    # a NumPy integer (an element of an ndarray shape too) keeps its dtype and
    # joins the coordinates' promotion, as JAX's divmod by it: indices of
    # int8 in shape np.array([3, 4]) come out in the default int. The sizes
    # may be traced (jit(unravel_index)(i, (3, 4)) traces the 3 and 4), as
    # JAX's: each is only divided by, compared and subtracted from
    dims = [operator.index(d) if isinstance(d, int) else d for d in given]
    out: list[Any] = [0] * len(dims)
    rest = indices
    for i in reversed(range(len(dims))):
        rest, out[i] = floor_divide(rest, dims[i]), remainder(rest, dims[i])
    past_end = lax.gt(rest, _zero_like(rest))
    if dtypes.is_unsigned_int(_aval(rest).dtype):
        before_start: Any = False
    else:
        before_start = lax.lt(rest, lax.neg(_one_like(rest)))
    return tuple(
        where(past_end, d - 1, where(before_start, 0, coord))
        for d, coord in zip(dims, out, strict=True)
    )


def _zero_like(x: Any) -> Any:
    return tracing.TypedScalar(0, _aval(x).dtype, False)


def _one_like(x: Any) -> Any:
    return tracing.TypedScalar(1, _aval(x).dtype, False)


def ravel_multi_index(
    multi_index: Sequence[ArrayLike],
    dims: Sequence[int],
    mode: str = "raise",
    order: str = "C",
    *,
    dtype: Any = None,
) -> Array:
    """The flat indices of coordinates in an array of shape ``dims``.

    The flat index ``sum(i_k * stride_k)`` of coordinates in an array of
    ``dims``; ``mode`` "raise" (concrete input only: under jit it is a
    ConcretizationTypeError, as JAX), "wrap", "clip" or "ignore" (no check).
    The result's dtype is ``dtype``, else the coordinates' joined with a weak
    int (int8 coordinates give int8), strongly typed.

    Args:
        multi_index: A sequence of integer coordinate arrays, one per
            dimension (broadcast together).
        dims: The shape of the array indexed.
        mode: ``"raise"``, ``"wrap"``, ``"clip"`` or ``"ignore"`` (see above).
        order: ``"C"`` (row-major) or ``"F"`` (column-major) strides.
        dtype: The integer dtype of the result, or None (keyword-only).

    Returns:
        An integer array of the coordinates' broadcast shape.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.ravel_multi_index((rnp.array([1, 0]), rnp.array([1, 3])), (2, 4))
        Array([5, 3], dtype=int32)
    """

    dims = tuple(operator.index(d) for d in dims)
    if len(multi_index) != len(dims):
        raise ValueError(
            f"ravel_multi_index: parameter multi_index must be a sequence of length {len(dims)}"
        )
    coords = [checked_array("ravel_multi_index", i, n) for n, i in enumerate(multi_index)]
    if dtype is None:
        dtype = result_type("ravel_multi_index", 0, *coords)[0]
    else:
        dtype = canonical_dtype("ravel_multi_index", dtype)
    if not dtypes.is_integer(dtype):
        raise ValueError(f"ravel_multi_index: dtype={dtype} is not an integer type")
    if math.prod(dims) - 1 > dtypes.iinfo(dtype).max:
        raise ValueError(
            f"ravel_multi_index: dtype={dtype} cannot hold the flat index for dims={dims}; "
            "pass a larger integer dtype"
        )
    for position, coord in enumerate(coords):
        if mode == "raise" and is_traced(coord):
            raise tracing.ConcretizationTypeError(
                f"ravel_multi_index: index {position} is traced. The error occurred because "
                "ravel_multi_index was jit-compiled with mode='raise'. Use mode='wrap' or "
                "mode='clip' instead."
            )
        if not dtypes.is_integer(_aval(coord).dtype):
            raise TypeError(f"ravel_multi_index: index {position} must be integers")
    if mode == "raise":
        for coord, dim in zip(coords, dims, strict=True):
            values = np.asarray(coord)
            if values.size and (values.min() < 0 or values.max() >= dim):
                # the message starts as NumPy's (callers test it)
                raise ValueError("invalid entry in coordinates array (ravel_multi_index)")
    elif mode == "wrap":
        coords = [remainder(c, dim) for c, dim in zip(coords, dims, strict=True)]
    elif mode == "clip":
        coords = [clip(c, 0, max(dim - 1, 0)) for c, dim in zip(coords, dims, strict=True)]
    elif mode != "ignore":
        raise ValueError(
            f"ravel_multi_index: invalid mode={mode!r}; expected 'raise', 'wrap', 'clip' "
            "or 'ignore'"
        )
    if order not in ("C", "F"):
        raise ValueError(f"ravel_multi_index: order must be 'C' or 'F', got {order!r}")
    order_dims = range(len(dims)) if order == "C" else reversed(range(len(dims)))
    flat: Any = full((), 0, dtype)
    stride = 1
    for d in reversed(list(order_dims)):
        coord = lax.convert_element_type(coords[d], dtype)
        term = lax.mul(coord, tracing.TypedScalar(stride, dtype, False))
        flat = add(flat, term)
        stride *= dims[d]
    return flat


# --- sorting and searching -------------------------------------------------------------------


def argsort(
    a: ArrayLike,
    axis: int | None = -1,
    *,
    kind: None = None,
    order: None = None,
    stable: bool = True,
    descending: bool = False,
    dtype: Any = None,
) -> Array:
    """The indices that sort ``a`` along ``axis``.

    The indices are int32 (int64 with x64), or ``dtype``: JAX counts them in
    that dtype. NaNs sort last; ties keep their order (also with
    ``descending``).

    Args:
        a: The array to sort, of at least one dimension.
        axis: The axis to sort along, or None for the flattened ``a``.
        kind: Must be None (a TypeError otherwise).
        order: Must be None (a TypeError otherwise).
        stable: Whether ties keep their order (a stable sort).
        descending: Whether to sort in descending order.
        dtype: The integer dtype of the indices, or None.

    Returns:
        An integer array of ``a``'s shape (1-d when ``axis`` is None).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.argsort(rnp.array([3, 1, 2]))
        Array([1, 2, 0], dtype=int32)
        >>> rnp.argsort(rnp.array([3, 1, 2]), descending=True)
        Array([0, 2, 1], dtype=int32)
    """
    if kind is not None or order is not None:
        raise TypeError("argsort: 'kind' and 'order' are not supported")
    a = checked_array("argsort", a)
    index_dtype = _index_dtype() if dtype is None else canonical_dtype("argsort", dtype)
    if axis is None:
        a, axis = ravel(a), 0
    aval = _aval(a, "argsort")
    if aval.ndim == 0:
        raise ValueError("argsort: cannot sort a zero-dimensional array")
    axis = normalize_axis("argsort", axis, aval.ndim)
    iota = lax.broadcasted_iota(index_dtype, aval.shape, axis)
    if descending:
        # sorting the reversed array ascending and reversing back keeps ties in order
        _, index = lax.sort((lax.rev(a, (axis,)), lax.rev(iota, (axis,))), axis, num_keys=1)
        return lax.rev(index, (axis,))
    _, index = lax.sort((a, iota), axis, is_stable=bool(stable), num_keys=1)
    return index


def lexsort(keys: Sequence[ArrayLike], axis: int = -1) -> Array:
    """The indices that sort by several keys, the last key the primary one.

    Ties of the last key are ordered by the one before it, and so on (a
    stable sort). Rank-0 keys (the rows of a 1-d array) sort to the rank-0 index 0, as JAX.

    Args:
        keys: A sequence of arrays of one shape (or a 2-d array, one key per
            row).
        axis: The axis to sort along.

    Returns:
        An int32 array (int64 with x64) of the keys' shape.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.lexsort((rnp.array([1, 0, 1, 0]), rnp.array([2, 2, 1, 1])))
        Array([3, 2, 1, 0], dtype=int32)
    """
    if isinstance(keys, (list, tuple)):
        keys = [asarray(k) for k in keys]
    else:
        if _aval(keys, "lexsort").ndim == 0:
            raise TypeError("lexsort: iteration over a 0-d array (keys must be a sequence)")
        keys = [asarray(keys)[i] for i in range(_aval(keys).shape[0])]
    if not keys:
        raise TypeError("lexsort: need sequence of keys with len > 0")
    shapes = {_aval(k).shape for k in keys}
    if len(shapes) != 1:
        raise ValueError("lexsort: all keys need to be the same shape")
    shape = shapes.pop()
    if not shape:
        return full((), 0, _index_dtype())
    axis = normalize_axis("lexsort", axis, len(shape))
    iota = lax.broadcasted_iota(_index_dtype(), shape, axis)
    *_, index = lax.sort((*reversed(keys), iota), axis, num_keys=len(keys))
    return index


def _total_lt(x: Any, y: Any) -> Any:
    """``x < y`` in the sort order (NaN after everything, equal to NaN;
    complex numbers by real part, then imaginary part, as ``lax.sort``)."""
    if dtypes.is_complex(_aval(x).dtype):
        x_re, y_re = _ufuncs.real(x), _ufuncs.real(y)
        re_lt = _total_lt(x_re, y_re)
        re_eq = lax.bitwise_not(lax.bitwise_or(re_lt, _total_lt(y_re, x_re)))
        im_lt = _total_lt(_ufuncs.imag(x), _ufuncs.imag(y))
        return lax.bitwise_or(re_lt, lax.bitwise_and(re_eq, im_lt))
    if not dtypes.is_floating(_aval(x).dtype):
        return lax.lt(x, y)
    return lax.bitwise_or(lax.lt(x, y), lax.bitwise_and(lax.bitwise_not(isnan(x)), isnan(y)))


def searchsorted(
    a: ArrayLike, v: ArrayLike, side: str = "left", sorter: Any = None, *, method: str = "scan"
) -> Array:
    """The insertion points of ``v`` into the sorted 1-d ``a``.

    The number of elements of ``a`` before each ``v`` (``< v`` for
    ``side="left"``, ``<= v`` for ``"right"``) in the sort order (NaN last),
    computed by comparing every pair whatever ``method`` says.

    Args:
        a: A sorted 1-d array (ascending).
        v: The values to insert.
        side: ``"left"`` or ``"right"``: where ties go.
        sorter: Indices that sort ``a``, or None if ``a`` is sorted.
        method: One of JAX's methods (``"scan"``, ``"scan_unrolled"``,
            ``"sort"``, ``"compare_all"``): checked, all give the same result.

    Returns:
        An int32 array of ``v``'s shape.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.searchsorted(rnp.array([1, 2, 2, 3]), rnp.array([2, 0, 5]))
        Array([1, 0, 4], dtype=int32)
        >>> rnp.searchsorted(rnp.array([1, 2, 2, 3]), 2, side="right")
        Array(3, dtype=int32)
    """
    # every method gives the same answer; this one counts comparisons
    if method not in ("compare_all", "scan", "scan_unrolled", "sort"):
        raise ValueError(
            f"searchsorted: invalid argument method={method!r}, expected one of "
            "['compare_all', 'scan', 'scan_unrolled', 'sort']"
        )
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    a = checked_array("searchsorted", a)
    if _aval(a).ndim != 1:
        raise ValueError("searchsorted: a should be 1-dimensional")
    if sorter is not None:
        a = take_along_axis(a, asarray(sorter), 0)
    a, v = promote_dtypes("searchsorted", a, v)
    v = checked_array("searchsorted", v)
    v_shape = _aval(v).shape
    n = _aval(a).shape[0]
    if n > np.iinfo(np.int32).max and canonical_dtype("searchsorted", np.int64) != np.int64:
        # JAX asks for int64 positions past int32's range; without x64 that
        # request warns and the length does not fit the int32 it gets
        raise OverflowError(f"searchsorted: Python integer {n} out of bounds for int32")
    if n == 0:
        return lax.broadcast_in_dim(tracing.TypedScalar(0, _I32, False), v_shape, ())
    grid = (*v_shape, n)
    a_b = lax.broadcast_in_dim(a, grid, (len(v_shape),))
    v_b = lax.broadcast_in_dim(v, grid, tuple(range(len(v_shape))))
    before = _total_lt(a_b, v_b) if side == "left" else lax.bitwise_not(_total_lt(v_b, a_b))
    index_dtype = _I32 if n <= np.iinfo(np.int32).max else np.dtype(np.int64)
    return lax.reduce_sum(lax.convert_element_type(before, index_dtype), (len(v_shape),))


def digitize(x: ArrayLike, bins: ArrayLike, right: bool = False, *, method: Any = None):
    """The index of the bin of each ``x``: ``i`` with ``bins[i-1] <= x < bins[i]``.

    ``<`` and ``<=`` are swapped with ``right``; ``bins`` may be increasing
    or decreasing.

    Args:
        x: The values to place.
        bins: The 1-d, monotonic bin edges.
        right: Whether the bins are closed on the right instead of the left.
        method: Accepted and ignored (keyword-only).

    Returns:
        An int32 array of ``x``'s shape, from 0 to ``len(bins)``.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.digitize(rnp.array([0.5, 1.0, 2.5, 4.0]), rnp.array([1.0, 2.0, 3.0]))
        Array([0, 1, 2, 3], dtype=int32)
    """
    bins = checked_array("digitize", bins)
    if _aval(bins).ndim != 1:
        raise ValueError(f"digitize: bins must be a 1-dimensional array, got {_aval(bins).shape}")
    n = _aval(bins).shape[0]
    if n == 0:
        return lax.broadcast_in_dim(
            tracing.TypedScalar(0, _I32, False), _aval(asarray(x)).shape, ()
        )
    side = "left" if right else "right"
    increasing = searchsorted(bins, x, side=side)
    decreasing = lax.sub(
        tracing.TypedScalar(n, _aval(increasing).dtype, False),
        searchsorted(lax.rev(bins, (0,)), x, side=side),
    )
    rising = _ufuncs.greater_equal(bins[-1], bins[0])  # complex: real part, then imaginary
    return _where(lax.broadcast_in_dim(rising, _aval(increasing).shape, ()), increasing, decreasing)


def partition(a: ArrayLike, kth: int, axis: int = -1) -> Array:
    """``a`` partially sorted along ``axis``: the ``kth`` smallest in its sorted place.

    The ``kth + 1`` smallest first, ascending, then the rest, descending (the
    layout ``jnp.partition`` produces with ``top_k``; NumPy leaves the order
    within the two parts open). Bool input is a TypeError, as JAX's.

    Args:
        a: The input array.
        kth: The position that gets its sorted element (a static int;
            negative counts from the end).
        axis: The axis to partition along.

    Returns:
        An array of ``a``'s shape and dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.partition(rnp.array([5, 1, 4, 2, 3]), 3)
        Array([1, 2, 3, 4, 5], dtype=int32)
    """
    a = checked_array("partition", a)
    aval = _aval(a, "partition")
    _no_bool("partition", aval.dtype)
    axis = normalize_axis("partition", axis, aval.ndim)
    n = aval.shape[axis]
    kth = _kth("partition", kth, n)
    moved = moveaxis(a, axis, -1)
    ascending = _total_order_ascending(moved)
    bottom = lax.slice_in_dim(ascending, 0, kth + 1, 1, -1 % _aval(moved).ndim)
    top = lax.rev(
        lax.slice_in_dim(ascending, kth + 1, n, 1, _aval(moved).ndim - 1), (_aval(moved).ndim - 1,)
    )
    return moveaxis(lax.concatenate([bottom, top], _aval(moved).ndim - 1), -1, axis)


def argpartition(a: ArrayLike, kth: int, axis: int = -1) -> Array:
    """The indices that partition ``a`` along ``axis`` around its ``kth`` element.

    The indices of the ``kth + 1`` smallest (ascending), then the others in
    increasing index order (NumPy leaves the order within the two parts
    open). Bool input is a TypeError, as JAX's.

    Args:
        a: The input array.
        kth: The position that gets its sorted element's index (a static int).
        axis: The axis to partition along.

    Returns:
        An int32 array of ``a``'s shape.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.argpartition(rnp.array([5, 1, 4, 2, 3]), 3)
        Array([1, 3, 4, 2, 0], dtype=int32)
    """
    a = checked_array("argpartition", a)
    aval = _aval(a, "argpartition")
    _no_bool("argpartition", aval.dtype)
    axis = normalize_axis("argpartition", axis, aval.ndim)
    n = aval.shape[axis]
    kth = _kth("argpartition", kth, n)
    moved = moveaxis(a, axis, -1)
    last = _aval(moved).ndim - 1
    # int32 whatever x64 says: JAX's indices come from top_k, whose are int32
    if dtypes.is_floating(_aval(moved).dtype):
        order = lax.top_k(lax.neg(moved), n)[1]  # see _total_order_ascending
    else:
        order = argsort(moved, axis=-1, dtype=np.int32)
    bottom = lax.slice_in_dim(order, 0, kth + 1, 1, last)
    rest = lax.slice_in_dim(order, kth + 1, n, 1, last)
    rest = lax.sort(rest, last)  # the remaining indices in increasing order
    return moveaxis(lax.concatenate([bottom, rest], last), -1, axis)


def _total_order_ascending(x: Any) -> Any:
    """``x`` sorted along its last axis. A float axis is in ``top_k``'s IEEE
    totalOrder (``-NaN`` first, ``-0.0`` before ``0.0``, ``+NaN`` last), as
    JAX 0.10.2's partitions, which take ``top_k`` of the negated array (negation
    reverses that order exactly); integers sort as the sort primitive does
    (JAX's negation would move the minimum integer to the top: see
    docs/semantics.md)."""
    if dtypes.is_floating(_aval(x).dtype):
        return lax.neg(lax.top_k(lax.neg(x), _aval(x).shape[-1])[0])
    return lax.sort(x, _aval(x).ndim - 1)


def _no_bool(name: str, dtype: np.dtype) -> None:
    """JAX 0.10.2 partitions by ``top_k`` of the negated array, which a bool
    array cannot be: its TypeError, kept so that programs fail alike."""
    if dtypes.is_bool(dtype):
        raise TypeError(f"{name}: bool arrays are not supported (as JAX: cast to an integer first)")


def _kth(name: str, kth: Any, n: int) -> int:
    kth = operator.index(kth)
    if not -n <= kth < n:
        raise ValueError(f"{name}: kth {kth} is out of bounds for an axis of size {n}")
    return kth % n


# --- set functions -------------------------------------------------------------------------


def _sorted_groups(x: Any, equal_nan: bool) -> tuple[Any, Any, Any]:
    """(stable sorting permutation, sorted values, mask of the first of each run)."""
    n = _aval(x).shape[0]
    values, perm = lax.sort((x, _iota(n)), 0, num_keys=1)
    if n == 0:
        return (
            perm,
            values,
            lax.broadcast_in_dim(tracing.TypedScalar(True, np.dtype(bool), False), (0,), ()),
        )
    previous = lax.slice_in_dim(values, 0, n - 1, 1, 0)
    current = lax.slice_in_dim(values, 1, n, 1, 0)
    same = lax.eq(previous, current)
    if equal_nan and dtypes.is_inexact(_aval(x).dtype):
        same = lax.bitwise_or(same, lax.bitwise_and(isnan(previous), isnan(current)))
    first = lax.concatenate(
        [
            lax.broadcast_in_dim(tracing.TypedScalar(True, np.dtype(bool), False), (1,), ()),
            lax.bitwise_not(same),
        ],
        0,
    )
    return perm, values, first


def unique(
    ar: ArrayLike,
    return_index: bool = False,
    return_inverse: bool = False,
    return_counts: bool = False,
    axis: int | None = None,
    *,
    equal_nan: bool = True,
    size: int | None = None,
    fill_value: Any = None,
    sorted: bool = True,  # noqa: A002
) -> Any:
    """The sorted distinct values of ``ar``, with their indices, inverse and counts if asked.

    The sorted distinct values of ``ar`` (flattened), and optionally the index
    of each one's first occurrence, the inverse (the position in the result of
    each input element, shaped like ``ar``) and each one's count.

    With ``axis``, the distinct slices along it, in lexicographic order (the
    first element of a slice its most significant key, as JAX's and NumPy's);
    the inverse then has one entry per slice.

    With ``size``: exactly ``size`` values; missing ones are ``fill_value``
    (default: the smallest value), their index is that of the smallest value
    and their count 0. An input without elements, as JAX 0.10.2: an empty axis
    needs ``fill_value``, and the index and counts are only those of the
    groups found (see ``_unique_of_no_elements``).

    Args:
        ar: The input array.
        return_index: Whether to also return the first occurrences' indices.
        return_inverse: Whether to also return the inverse.
        return_counts: Whether to also return the counts.
        axis: The axis whose slices are compared, or None for the elements of
            the flattened array.
        equal_nan: Whether NaNs count as one value.
        size: The static number of values, or None (then ``ar`` must be
            concrete).
        fill_value: The padding value with ``size``, or None.
        sorted: Accepted (the values always come sorted).

    Returns:
        The distinct values (a 1-d array, or with ``axis`` the distinct
        slices), or a tuple of them followed by the index, inverse and counts
        asked for (int32 arrays, int64 with x64).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.unique(rnp.array([3, 1, 3, 2, 1]))
        Array([1, 2, 3], dtype=int32)
        >>> rnp.unique(rnp.array([3, 1, 3, 2, 1]), return_counts=True)
        (Array([1, 2, 3], dtype=int32), Array([2, 1, 2], dtype=int32))
        >>> rnp.unique(rnp.array([3, 1, 3]), size=4, fill_value=0)
        Array([1, 3, 0, 0], dtype=int32)
    """
    ar = checked_array("unique", ar)
    shape = _aval(ar, "unique").shape
    if axis is None:
        x = ravel(ar)
        perm, values, first = _sorted_groups(x, equal_nan)
    else:
        axis = normalize_axis("unique", axis, len(shape))
        perm, values, first = _sorted_slices(moveaxis(ar, axis, 0), equal_nan)
    n = _aval(values).shape[0]
    rest = _aval(values).shape[1:]
    if n == 0 and size and fill_value is None:
        raise ValueError(
            "unique: for zero-sized input with nonzero size argument, fill_value must be "
            "specified (there is no smallest value to pad with)"
        )
    if size is not None and 0 in (n, *rest):
        return _unique_of_no_elements(
            values, shape, axis, n, size, fill_value, return_index, return_inverse, return_counts
        )
    size = _static_size("unique", size, lambda: _count(first))
    starts = compact(_iota(n), first, size, _int(0)) if n else zeros((size,), _index_dtype())
    if n:
        result = lax.gather_along_axis(values, starts, 0, mode="clip")
        if fill_value is not None:
            valid = lax.broadcast_in_dim(lax.lt(_iota(size), _count(first)), (size, *rest), (0,))
            fill = lax.convert_element_type(asarray(fill_value), _aval(values).dtype)
            result = _where(valid, result, lax.broadcast_in_dim(fill, (size, *rest), ()))
    else:
        fill = 0 if fill_value is None else fill_value
        result = full((size, *rest), fill, dtype=_aval(values).dtype)
    outputs = [result if axis is None else moveaxis(result, 0, axis)]
    if return_index:
        outputs.append(lax.gather_along_axis(perm, starts, 0, mode="clip") if n else starts)
    if return_inverse:
        group = lax.sub(lax.cumsum(lax.convert_element_type(first, _index_dtype()), 0), _int(1))
        inverse = (
            lax.scatter_along_axis(zeros((n,), _index_dtype()), perm, group, 0)
            if n
            else zeros((0,), _index_dtype())
        )
        outputs.append(reshape(inverse, shape) if axis is None else inverse)
    if return_counts:
        bounds = (
            compact(_iota(n), first, size + 1, _int(0)) if n else zeros((size + 1,), _index_dtype())
        )
        tail = lax.slice_in_dim(bounds, 1, size + 1, 1, 0)
        tail = _where(lax.eq(tail, _int(0)), lax.broadcast_in_dim(_int(n), (size,), ()), tail)
        counts = lax.sub(tail, lax.slice_in_dim(bounds, 0, size, 1, 0))
        padded = lax.ge(_iota(size), _count(first)) if n else lax.ge(_iota(size), _int(0))
        outputs.append(_where(padded, lax.broadcast_in_dim(_int(0), (size,), ()), counts))
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


def _unique_of_no_elements(
    values: Any,
    shape: tuple,
    axis: int | None,
    n: int,
    size: int,
    fill_value: Any,
    return_index: bool,
    return_inverse: bool,
    return_counts: bool,
) -> Any:
    """``unique(..., size=size)`` of an input without elements, as JAX 0.10.2
    gives it: ``size`` rows of ``fill_value`` (or the one group of empty slices
    when no ``fill_value``), and the index and counts of the groups found,
    not padded to ``size`` (none for an empty axis; one, ``[0]`` and ``[n]``, for
    ``n`` empty slices)."""
    groups = 1 if n else 0
    rows = size if fill_value is not None else groups
    fill = 0 if fill_value is None else fill_value
    result = full((rows, *_aval(values).shape[1:]), fill, dtype=_aval(values).dtype)
    outputs = [result if axis is None else moveaxis(result, 0, axis)]
    if return_index:
        outputs.append(zeros((groups,), _index_dtype()))
    if return_inverse:
        inverse = zeros((n,), _index_dtype())
        outputs.append(reshape(inverse, shape) if axis is None else inverse)
    if return_counts:
        outputs.append(full((groups,), n, dtype=_index_dtype()))
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


def _sorted_slices(a: Any, equal_nan: bool) -> tuple[Any, Any, Any]:
    """``_sorted_groups`` for the slices ``a[i]``: (stable lexicographic
    permutation, sorted slices, mask of the first slice of each run)."""
    aval = _aval(a)
    n, rest = aval.shape[0], aval.shape[1:]
    m = int(np.prod(rest, dtype=np.int64))
    if m == 0:
        # empty slices are all equal: one group (NumPy and JAX agree)
        first = lax.eq(_iota(n), _int(0))
        return _iota(n), a, first
    if n == 0:
        # no slices: nothing to sort (a gather from an empty axis is not valid StableHLO)
        return _iota(0), a, zeros((0,), np.dtype(bool))
    rows = lax.reshape(a, (n, m))
    columns = [lax.squeeze(lax.slice_in_dim(rows, j, j + 1, 1, 1), (1,)) for j in range(m)]
    perm = lax.sort((*columns, _iota(n)), 0, num_keys=m)[-1]
    values = lax.gather_along_axis(a, perm, 0, mode="clip")
    flat = lax.reshape(values, (n, m))
    previous = lax.slice_in_dim(flat, 0, n - 1, 1, 0)
    current = lax.slice_in_dim(flat, 1, n, 1, 0)
    differ = lax.ne(previous, current)
    if equal_nan and dtypes.is_inexact(aval.dtype):
        differ = lax.bitwise_and(
            differ, lax.bitwise_not(lax.bitwise_and(isnan(previous), isnan(current)))
        )
    first = lax.concatenate(
        [
            lax.broadcast_in_dim(tracing.TypedScalar(True, np.dtype(bool), False), (1,), ()),
            lax.reduce_or(differ, (1,)),
        ],
        0,
    )
    return perm, values, first


def unique_values(x: ArrayLike, /, *, size: int | None = None, fill_value: Any = None) -> Array:
    """The sorted distinct values of ``x`` (flattened): ``unique(x)``.

    The values are sorted (as JAX's); NumPy 2.4's ``unique_values`` leaves
    their order open.

    Args:
        x: The input array.
        size: The static number of values, or None (then ``x`` must be
            concrete).
        fill_value: The padding value with ``size``, or None for the smallest.

    Returns:
        A 1-d array in ``x``'s dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.unique_values(rnp.array([3, 1, 3, 2]))
        Array([1, 2, 3], dtype=int32)
    """
    x = checked_array("unique_values", x)
    return unique(x, size=size, fill_value=fill_value)


def isin(
    element: ArrayLike,
    test_elements: ArrayLike,
    assume_unique: bool = False,
    invert: bool = False,
    *,
    method: str = "auto",
) -> Array:
    """Whether each element of ``element`` equals some element of ``test_elements``.

    The two are promoted together and compared pairwise; NaN is in nothing.

    Args:
        element: The values to test.
        test_elements: The values to test against (flattened).
        assume_unique: Accepted and ignored.
        invert: Whether to return the negation (not in ``test_elements``).
        method: Accepted and ignored (keyword-only).

    Returns:
        A bool array of ``element``'s shape.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.isin(rnp.array([1, 2, 3, 4]), rnp.array([2, 4, 6]))
        Array([False,  True, False,  True], dtype=bool)
    """
    del assume_unique, method
    element, tests = promote_dtypes("isin", asarray(element), ravel(asarray(test_elements)))
    shape = _aval(element).shape
    m = _aval(tests).shape[0]
    grid = (*shape, m)
    equal = lax.eq(
        lax.broadcast_in_dim(element, grid, tuple(range(len(shape)))),
        lax.broadcast_in_dim(tests, grid, (len(shape),)),
    )
    found = lax.reduce_or(equal, (len(shape),))
    return lax.bitwise_not(found) if invert else found


def _set_result(name: str, x: Any, keep: Any, size: Any, fill_value: Any) -> Array:
    """The sorted distinct ``x`` where ``keep`` (evaluated on the sorted values),
    compacted to ``size`` (padded with ``fill_value``, default the smallest kept
    value, else 0)."""
    x = ravel(x)
    n = _aval(x).shape[0]
    _, values, first = _sorted_groups(x, equal_nan=True)
    mask = lax.bitwise_and(first, keep(values))
    size = _static_size(name, size, lambda: _count(mask))
    dtype = _aval(values).dtype
    if n == 0:
        return full((size,), 0 if fill_value is None else fill_value, dtype=dtype)
    if fill_value is None:
        starts = compact(_iota(n), mask, 1, _int(0))
        fill = lax.squeeze(lax.gather_along_axis(values, starts, 0, mode="clip"), (0,))
        # nothing kept: 0, as JAX (not the smallest input value)
        zero = lax.convert_element_type(_int(0), dtype)
        fill = _where(lax.gt(_count(mask), _int(0)), fill, zero)
    else:
        fill = lax.convert_element_type(asarray(fill_value), dtype)
    return compact(values, mask, size, fill)


def union1d(ar1: ArrayLike, ar2: ArrayLike, *, size: int | None = None, fill_value: Any = None):
    """The union of two arrays: the sorted distinct values of both (flattened).

    Args:
        ar1: The first array.
        ar2: The second array.
        size: The static number of values, or None (then the inputs must be
            concrete).
        fill_value: The padding value with ``size``, or None (see :func:`unique`).

    Returns:
        A 1-d array in the promoted dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.union1d(rnp.array([3, 1]), rnp.array([2, 1, 5]))
        Array([1, 2, 3, 5], dtype=int32)
    """
    both = concatenate([ravel(asarray(ar1)), ravel(asarray(ar2))])
    return unique(both, size=size, fill_value=fill_value)


def intersect1d(
    ar1: ArrayLike,
    ar2: ArrayLike,
    assume_unique: bool = False,
    return_indices: bool = False,
    *,
    size: int | None = None,
    fill_value: Any = None,
) -> Any:
    """The intersection of two arrays: the sorted distinct values found in both.

    The sorted distinct values found in both arrays. With ``return_indices``
    also, for each value, the index of its first occurrence in each
    (flattened) array, as JAX's; positions past the intersection (with
    ``size``) get the array's length.

    Args:
        ar1: The first array (flattened).
        ar2: The second array (flattened).
        assume_unique: Accepted and ignored.
        return_indices: Whether to also return the indices.
        size: The static number of values, or None (then the inputs must be
            concrete).
        fill_value: The padding value with ``size``, or None for the smallest
            value found (0 when none).

    Returns:
        A 1-d array in the promoted dtype, or with ``return_indices`` the
        triple ``(values, indices_in_ar1, indices_in_ar2)``.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.intersect1d(rnp.array([1, 3, 4, 3]), rnp.array([3, 1, 2, 1]))
        Array([1, 3], dtype=int32)
        >>> rnp.intersect1d(rnp.array([1, 3, 4, 3]), rnp.array([3, 1, 2, 1]), return_indices=True)
        (Array([1, 3], dtype=int32), Array([0, 1], dtype=int32), Array([1, 0], dtype=int32))
    """
    del assume_unique
    ar1, ar2 = promote_dtypes("intersect1d", asarray(ar1), asarray(ar2))
    values = _set_result("intersect1d", ar1, lambda v: isin(v, ar2), size, fill_value)
    if not return_indices:
        return values
    x1, x2 = ravel(ar1), ravel(ar2)
    _, ordered, first = _sorted_groups(x1, equal_nan=True)
    count = _count(lax.bitwise_and(first, isin(ordered, x2)))
    k = _aval(values).shape[0]
    valid = lax.lt(_iota(k), count)
    return values, _first_index(values, x1, valid), _first_index(values, x2, valid)


def _first_index(values: Any, x: Any, valid: Any) -> Any:
    """For each of ``values``, the first position in the 1-d ``x`` holding it
    (``len(x)`` where ``valid`` is False)."""
    k, n = _aval(values).shape[0], _aval(x).shape[0]
    if n == 0 or k == 0:
        return lax.broadcast_in_dim(_int(n), (k,), ())
    grid = (k, n)
    equal = lax.eq(lax.broadcast_in_dim(values, grid, (0,)), lax.broadcast_in_dim(x, grid, (1,)))
    positions = lax.broadcast_in_dim(_iota(n), grid, (1,))
    missing = lax.broadcast_in_dim(_int(n), grid, ())
    first = lax.reduce_min(_where(equal, positions, missing), (1,))
    return _where(valid, first, lax.broadcast_in_dim(_int(n), (k,), ()))


def setdiff1d(
    ar1: ArrayLike,
    ar2: ArrayLike,
    assume_unique: bool = False,
    *,
    size: int | None = None,
    fill_value: Any = None,
):
    """The set difference: the sorted distinct values of ``ar1`` not in ``ar2``.

    With ``size``, padded with ``fill_value``, default 0 as JAX. The result
    keeps ``ar1``'s dtype.

    Args:
        ar1: The first array (flattened).
        ar2: The values to leave out.
        assume_unique: Accepted and ignored.
        size: The static number of values, or None (then the inputs must be
            concrete).
        fill_value: The padding value with ``size``, or None for 0.

    Returns:
        A 1-d array in ``ar1``'s dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.setdiff1d(rnp.array([5, 1, 3, 1]), rnp.array([3, 4]))
        Array([1, 5], dtype=int32)
        >>> rnp.setdiff1d(rnp.array([5, 1, 3, 1]), rnp.array([3, 4]), size=4)
        Array([1, 5, 0, 0], dtype=int32)
    """
    del assume_unique
    own_dtype = _aval(asarray(ar1), "setdiff1d").dtype
    ar1, ar2 = promote_dtypes("setdiff1d", asarray(ar1), asarray(ar2))
    fill_value = 0 if fill_value is None else fill_value
    out = _set_result("setdiff1d", ar1, lambda v: isin(v, ar2, invert=True), size, fill_value)
    # the values come from ar1, which keeps its dtype in JAX (no promotion with ar2)
    return lax.convert_element_type(out, own_dtype)


def setxor1d(
    ar1: ArrayLike,
    ar2: ArrayLike,
    assume_unique: bool = False,
    *,
    size: int | None = None,
    fill_value: Any = None,
):
    """The symmetric difference: the sorted distinct values in exactly one of the arrays.

    NaN equals nothing, so each array holding NaN gives one NaN, last (JAX's
    result: NaNs pad when ``fill_value`` is not given).

    Args:
        ar1: The first array (flattened).
        ar2: The second array (flattened).
        assume_unique: Accepted and ignored.
        size: The static number of values, or None (then the inputs must be
            concrete).
        fill_value: The padding value with ``size``, or None for the smallest value found.

    Returns:
        A 1-d array in the promoted dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.setxor1d(rnp.array([1, 2, 3]), rnp.array([2, 3, 4]))
        Array([1, 4], dtype=int32)
    """
    del assume_unique
    name = "setxor1d"
    ar1, ar2 = promote_dtypes(name, ravel(asarray(ar1)), ravel(asarray(ar2)))
    both = concatenate([ar1, ar2])

    def keep_values(v: Any) -> Any:
        return lax.bitwise_xor(isin(v, ar1), isin(v, ar2))

    dtype = _aval(both).dtype
    if not dtypes.is_inexact(dtype) or _aval(both).shape[0] == 0:
        return _set_result(name, both, keep_values, size, fill_value)
    nan1 = lax.reduce_or(isnan(ar1), (0,))
    nan2 = lax.reduce_or(isnan(ar2), (0,))

    def keep(v: Any) -> Any:
        any_nan = lax.broadcast_in_dim(lax.bitwise_or(nan1, nan2), _aval(v).shape, ())
        return _where(isnan(v), any_nan, keep_values(v))

    # _set_result keeps one NaN (its NaNs form one group); the second array's goes after it
    _, values, first = _sorted_groups(both, equal_nan=True)
    kept = _count(lax.bitwise_and(first, keep(values)))
    second_nan = lax.bitwise_and(nan1, nan2)
    total = lax.add(kept, lax.convert_element_type(second_nan, _aval(kept).dtype))
    out_size = _static_size(name, size, lambda: total)
    result = _set_result(name, both, keep, out_size, fill_value)
    positions = _iota(out_size)
    nan = lax.broadcast_in_dim(np.array(np.nan, dtype), (out_size,), ())
    as_nan = lax.bitwise_and(lax.eq(positions, kept), second_nan)
    if fill_value is None:  # JAX pads with its result's max, NaN when it holds one
        padding = lax.bitwise_and(lax.ge(positions, kept), lax.bitwise_or(nan1, nan2))
        as_nan = lax.bitwise_or(as_nan, padding)
    return _where(as_nan, nan, result)


__all__ = [
    "argpartition", "argsort", "argwhere", "choose", "digitize", "flatnonzero", "intersect1d",
    "isin", "ix_", "lexsort", "nonzero", "partition", "piecewise", "put_along_axis",
    "ravel_multi_index", "searchsorted", "select", "setdiff1d", "setxor1d", "take_along_axis",
    "union1d", "unique", "unique_values", "unravel_index", "where",
]  # fmt: skip
