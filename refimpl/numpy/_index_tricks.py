"""Index helpers of ``jax.numpy``: ``tril_indices``/``triu_indices`` (and
``_from``), ``diag_indices`` (and ``_from``), ``mask_indices``,
``fill_diagonal``, and the index objects ``mgrid``, ``ogrid``, ``r_``,
``c_``, ``s_``, ``index_exp``.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from refimpl import dtypes
from refimpl.config import promotion_block
from refimpl.numpy._construct import meshgrid
from refimpl.numpy._creation import arange, array, asarray, linspace, ones
from refimpl.numpy._promote import (
    aval_of,
    checked_array,
    promote_dtypes,
    require_concrete,
)
from refimpl.numpy._search import nonzero
from refimpl.numpy._shape import concatenate, expand_dims, ravel, stack, transpose

Array = Any
ArrayLike = Any


def _aval(x: Any, name: str = "rnp", position: Any = 0) -> Any:
    return aval_of(x, name, position)


# --- index helpers ------------------------------------------------------------------------


def mask_indices(
    n: int, mask_func: Callable[[Any, int], Any], k: int = 0, *, size: int | None = None
) -> tuple[Array, Array]:
    """The indices where ``mask_func(ones((n, n)), k)`` is nonzero, as ``(rows, cols)``.

    In row-major order; ``size``/padding as :func:`nonzero` (needed under a
    trace).

    Args:
        n: The side of the square matrix.
        mask_func: A function of a matrix and ``k`` returning a matrix of its
            shape (:func:`triu`, :func:`tril`...).
        k: The second argument of ``mask_func``.
        size: The static number of indices, or None (keyword-only).

    Returns:
        A pair of 1-d int32 arrays (int64 with x64).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.mask_indices(3, rnp.triu, 1)
        (Array([0, 0, 1], dtype=int32), Array([1, 2, 2], dtype=int32))
    """

    n = operator.index(n)
    mask = mask_func(ones((n, n)), k)
    if _aval(mask, "mask_indices").ndim != 2:
        raise ValueError("mask_indices: mask_func must return a 2-d array")
    rows, cols = nonzero(mask, size=size)
    return rows, cols


# --- index helpers ------------------------------------------------------------------------


def _index_pair(rows: np.ndarray, cols: np.ndarray) -> tuple[Array, Array]:
    # the default int when called: int64 under x64, as JAX's
    dtype = dtypes.canonicalize_dtype(np.int64)
    return asarray(rows.astype(dtype)), asarray(cols.astype(dtype))


def tril_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Array, Array]:
    """The indices of the lower triangle of an ``(n, m)`` matrix: on or below diagonal ``k``.

    Args:
        n: The number of rows.
        k: The diagonal: 0 the main one, positive above, negative below.
        m: The number of columns, or None for ``n``.

    Returns:
        A pair ``(rows, cols)`` of 1-d arrays of the default int (int64 with
        x64), in row-major order.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.tril_indices(3, k=-1)
        (Array([1, 2, 2], dtype=int32), Array([0, 0, 1], dtype=int32))
    """
    return _index_pair(*np.tril_indices(operator.index(n), operator.index(k), m))


def triu_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Array, Array]:
    """The indices of the upper triangle of an ``(n, m)`` matrix: on or above diagonal ``k``.

    Args:
        n: The number of rows.
        k: The diagonal: 0 the main one, positive above, negative below.
        m: The number of columns, or None for ``n``.

    Returns:
        A pair ``(rows, cols)`` of 1-d arrays of the default int (int64 with
        x64), in row-major order.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.triu_indices(3, k=1)
        (Array([0, 0, 1], dtype=int32), Array([1, 2, 2], dtype=int32))
        >>> rnp.arange(9).reshape(3, 3)[rnp.triu_indices(3, k=1)]
        Array([1, 2, 5], dtype=int32)
    """
    return _index_pair(*np.triu_indices(operator.index(n), operator.index(k), m))


def tril_indices_from(arr: ArrayLike, k: int = 0) -> tuple[Array, Array]:
    """The indices of the lower triangle of ``arr``: :func:`tril_indices` for its shape.

    Args:
        arr: A 2-d array (only its shape is used).
        k: The diagonal: 0 the main one, positive above, negative below.

    Returns:
        A pair ``(rows, cols)`` of 1-d arrays of the default int.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.tril_indices_from(rnp.ones((2, 3)))
        (Array([0, 1, 1], dtype=int32), Array([0, 0, 1], dtype=int32))
    """
    shape = _aval(arr, "tril_indices_from").shape
    if len(shape) != 2:
        raise ValueError(f"tril_indices_from: input array must be 2-d, got shape {shape}")
    return tril_indices(shape[0], k, shape[1])


def triu_indices_from(arr: ArrayLike, k: int = 0) -> tuple[Array, Array]:
    """The indices of the upper triangle of ``arr``: :func:`triu_indices` for its shape.

    Args:
        arr: A 2-d array (only its shape is used).
        k: The diagonal: 0 the main one, positive above, negative below.

    Returns:
        A pair ``(rows, cols)`` of 1-d arrays of the default int.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.triu_indices_from(rnp.ones((3, 3)), k=1)
        (Array([0, 0, 1], dtype=int32), Array([1, 2, 2], dtype=int32))
    """
    shape = _aval(arr, "triu_indices_from").shape
    if len(shape) != 2:
        raise ValueError(f"triu_indices_from: input array must be 2-d, got shape {shape}")
    return triu_indices(shape[0], k, shape[1])


def diag_indices(n: int, ndim: int = 2) -> tuple[Array, ...]:
    """The indices of the main diagonal of an ``n``-sided ``ndim``-d array.

    ``ndim`` copies of ``arange(n)``.

    Args:
        n: The side of the array.
        ndim: Its number of dimensions.

    Returns:
        A tuple of ``ndim`` 1-d arrays of the default int.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.diag_indices(3)
        (Array([0, 1, 2], dtype=int32), Array([0, 1, 2], dtype=int32))
    """
    return tuple(arange(operator.index(n)) for _ in range(operator.index(ndim)))


def diag_indices_from(arr: ArrayLike) -> tuple[Array, ...]:
    """The indices of the main diagonal of ``arr``: :func:`diag_indices` for its shape.

    All its dimensions (at least two) must be equal, a ValueError otherwise.

    Args:
        arr: The array (only its shape is used).

    Returns:
        A tuple of ``arr.ndim`` 1-d arrays of the default int.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.diag_indices_from(rnp.ones((2, 2)))
        (Array([0, 1], dtype=int32), Array([0, 1], dtype=int32))
    """
    shape = _aval(arr, "diag_indices_from").shape
    if len(shape) < 2 or len(set(shape)) != 1:
        raise ValueError(f"diag_indices_from: all dimensions of input must be equal, got {shape}")
    return diag_indices(shape[0], len(shape))


def fill_diagonal(a: ArrayLike, val: ArrayLike, wrap: bool = False, *, inplace: bool = True):
    """A copy of ``a`` with its main diagonal set to ``val`` (repeated as needed).

    ``inplace=False`` is required, as in JAX (NumPy writes into ``a``); an
    array of more than two dimensions must have equal sides.

    Args:
        a: An array of at least two dimensions.
        val: The value or values for the diagonal (flattened, repeated or
            cut to its length).
        wrap: Must be False (NotImplementedError otherwise).
        inplace: Must be False (a ValueError otherwise; keyword-only).

    Returns:
        An array of ``a``'s shape and dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.fill_diagonal(rnp.zeros((3, 3), dtype=int), 5, inplace=False)
        Array([[5, 0, 0],
               [0, 5, 0],
               [0, 0, 5]], dtype=int32)
    """
    if inplace:
        raise ValueError("fill_diagonal: jax-style arrays are immutable; pass inplace=False")
    a = checked_array("fill_diagonal", a)
    shape = _aval(a).shape
    if len(shape) < 2:
        raise ValueError("fill_diagonal: array must be at least 2-d")
    if len(shape) > 2 and len(set(shape)) != 1:
        raise ValueError("fill_diagonal: all dimensions of input must be of equal length")
    if wrap:
        raise NotImplementedError(
            "fill_diagonal: wrap=True is not implemented, must use wrap=False"
        )
    count = min(shape)
    index = tuple(np.arange(count) for _ in shape)
    values = ravel(asarray(val))
    size = _aval(values).shape[0]
    reps = np.arange(count) % max(size, 1)
    values = values[asarray(reps.astype(np.int32))] if size != count else values
    return a.at[tuple(asarray(i.astype(np.int32)) for i in index)].set(values)


def _grid_from_slice(item: slice, op_name: str) -> Array:
    """One slice of an index object as a 1-d array: ``arange``, or ``linspace``
    (end included) when the step is imaginary (``5j`` means 5 points). The
    bounds decide the result's shape, so they must be concrete."""
    where = f"jnp.{op_name}"
    for what, bound in (("start", item.start), ("stop", item.stop), ("step", item.step)):
        if bound is not None:
            require_concrete(where, f"the slice {what}", bound, f"slice {what} of {where}")
    start = item.start or 0
    step = item.step or 1
    if np.iscomplex(step):
        return linspace(start, item.stop, int(abs(step)))
    return arange(start, item.stop, step)


class _Grid:
    """``mgrid[...]`` / ``ogrid[...]``: dense or open grids from slices. The
    1-d ranges are promoted to one dtype first (``ogrid[0:2, 0.5:1.5]`` is all
    float, as JAX), and ``mgrid[()]`` is the empty ``arange(0)``."""

    def __init__(self, sparse: bool) -> None:
        self.sparse = sparse
        self.op_name = "ogrid" if sparse else "mgrid"

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, slice):
            return _grid_from_slice(key, self.op_name)
        ranges = [_grid_from_slice(item, self.op_name) for item in key]
        with promotion_block("numpy_dtype_promotion", "standard"):  # as JAX's, in any mode
            ranges = promote_dtypes(self.op_name, *ranges) if ranges else []
        grids = meshgrid(*ranges, indexing="ij", sparse=self.sparse)
        if self.sparse:
            return grids
        if not grids:
            return arange(0)
        return stack(grids, 0)


class _Concatenator:
    """``r_[...]`` / ``c_[...]``: slices become 1-d ranges, other items arrays
    with at least ``ndmin`` dims, all joined along ``axis``. A leading string
    directive sets ``"axis[,ndmin[,trans1d]]"`` (``trans1d``: where an
    upgraded item's own dims go in the padded shape), or is ``"r"``/``"c"``
    (a 1-d result becomes a row/column), as NumPy and JAX."""

    def __init__(self, axis: int, ndmin: int, trans1d: int, op_name: str) -> None:
        self.axis, self.ndmin, self.trans1d, self.op_name = axis, ndmin, trans1d, op_name

    def __getitem__(self, key: Any) -> Array:
        items = key if isinstance(key, tuple) else (key,)
        axis, ndmin, trans1d, matrix = self.axis, self.ndmin, self.trans1d, -1
        directive = items[0]
        if isinstance(directive, str):
            items = items[1:]
            if directive in ("r", "c"):
                matrix = 0 if directive == "r" else 1
            else:
                fields = directive.split(",")
                defaults = [axis, ndmin, trans1d]
                try:
                    values = [int(f) for f in fields[:3]]
                except ValueError:
                    raise ValueError(
                        f"{self.op_name}: could not understand directive {directive!r}"
                    ) from None
                axis, ndmin, trans1d = values + defaults[len(values) :]
        parts = []
        for item in items:
            if isinstance(item, slice):
                part = _grid_from_slice(item, self.op_name)
                item_ndim = 0
            elif isinstance(item, str):
                raise ValueError(
                    f"{self.op_name}: a string directive must be placed at the beginning"
                )
            else:
                part = asarray(item)
                item_ndim = _aval(part, self.op_name).ndim
            part = array(part, copy=False, ndmin=ndmin)
            if trans1d != -1 and ndmin - item_ndim > 0:
                # NumPy's rule: rotate the padded axes so the item's own dims
                # land at position trans1d (negative counts from the end).
                order = tuple(range(ndmin))
                shift = ndmin - abs(ndmin + trans1d + 1) % ndmin
                part = transpose(part, order[shift:] + order[:shift])
            parts.append(part)
        result = concatenate(tuple(parts), axis=axis)
        if matrix != -1 and _aval(result).ndim == 1:
            result = expand_dims(result, matrix)
        return result

    def __len__(self) -> int:
        return 0


mgrid = _Grid(sparse=False)
ogrid = _Grid(sparse=True)
r_ = _Concatenator(axis=0, ndmin=1, trans1d=-1, op_name="r_")
c_ = _Concatenator(axis=-1, ndmin=2, trans1d=0, op_name="c_")
s_ = np.s_
index_exp = np.index_exp
iterable = np.iterable


__all__ = [
    "mask_indices",
    "diag_indices",
    "c_",
    "mgrid",
    "ogrid",
    "r_",
    "diag_indices_from",
    "fill_diagonal",
    "index_exp",
    "iterable",
    "s_",
    "tril_indices",
    "tril_indices_from",
    "triu_indices",
    "triu_indices_from",
]
