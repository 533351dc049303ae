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

from refimpl.numpy._construct import meshgrid
from refimpl.numpy._creation import arange, asarray, linspace, ones
from refimpl.numpy._promote import (
    aval_of,
    checked_array,
)
from refimpl.numpy._search import nonzero
from refimpl.numpy._shape import concatenate, ravel, reshape, stack

Array = Any
ArrayLike = Any


def _aval(x: Any, name: str = "rnp", position: Any = 0) -> Any:
    return aval_of(x, name, position)


# --- index helpers ------------------------------------------------------------------------


def mask_indices(
    n: int, mask_func: Callable[[Any, int], Any], k: int = 0, *, size: int | None = None
) -> tuple[Array, Array]:
    """The ``(rows, cols)`` where ``mask_func(ones((n, n)), k)`` is nonzero
    (row-major order); ``size``/padding as :func:`nonzero` (needed under a trace)."""

    n = operator.index(n)
    mask = mask_func(ones((n, n)), k)
    if _aval(mask, "mask_indices").ndim != 2:
        raise ValueError("mask_indices: mask_func must return a 2-d array")
    rows, cols = nonzero(mask, size=size)
    return rows, cols


# --- index helpers ------------------------------------------------------------------------


def _index_pair(rows: np.ndarray, cols: np.ndarray) -> tuple[Array, Array]:
    return asarray(rows.astype(np.int32)), asarray(cols.astype(np.int32))


def tril_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Array, Array]:
    """The (row, col) indices of the lower triangle (on or below diagonal ``k``)."""
    return _index_pair(*np.tril_indices(operator.index(n), operator.index(k), m))


def triu_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Array, Array]:
    """The (row, col) indices of the upper triangle (on or above diagonal ``k``)."""
    return _index_pair(*np.triu_indices(operator.index(n), operator.index(k), m))


def tril_indices_from(arr: ArrayLike, k: int = 0) -> tuple[Array, Array]:
    """:func:`tril_indices` for ``arr``'s (2-d) shape."""
    shape = _aval(arr, "tril_indices_from").shape
    if len(shape) != 2:
        raise ValueError(f"tril_indices_from: input array must be 2-d, got shape {shape}")
    return tril_indices(shape[0], k, shape[1])


def triu_indices_from(arr: ArrayLike, k: int = 0) -> tuple[Array, Array]:
    """:func:`triu_indices` for ``arr``'s (2-d) shape."""
    shape = _aval(arr, "triu_indices_from").shape
    if len(shape) != 2:
        raise ValueError(f"triu_indices_from: input array must be 2-d, got shape {shape}")
    return triu_indices(shape[0], k, shape[1])


def diag_indices(n: int, ndim: int = 2) -> tuple[Array, ...]:
    """``ndim`` copies of ``arange(n)``: the indices of the main diagonal."""
    return tuple(arange(operator.index(n)) for _ in range(operator.index(ndim)))


def diag_indices_from(arr: ArrayLike) -> tuple[Array, ...]:
    """:func:`diag_indices` of ``arr`` (all its dims must be equal)."""
    shape = _aval(arr, "diag_indices_from").shape
    if len(shape) < 2 or len(set(shape)) != 1:
        raise ValueError(f"diag_indices_from: all dimensions of input must be equal, got {shape}")
    return diag_indices(shape[0], len(shape))


def fill_diagonal(a: ArrayLike, val: ArrayLike, wrap: bool = False, *, inplace: bool = True):
    """A copy of ``a`` with its main diagonal set to ``val`` (repeated as
    needed); ``inplace=False`` is required, as in JAX."""
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


class _Grid:
    """``mgrid[...]`` / ``ogrid[...]``: dense or open grids from slices (a
    complex step ``5j`` means that many points, end included)."""

    def __init__(self, sparse: bool) -> None:
        self.sparse = sparse

    def __getitem__(self, key: Any) -> Any:
        single = isinstance(key, slice)
        ranges = []
        for item in (key,) if single else key:
            start = 0 if item.start is None else item.start
            step = 1 if item.step is None else item.step
            if isinstance(step, complex):
                ranges.append(linspace(start, item.stop, int(abs(step))))
            else:
                ranges.append(arange(start, item.stop, step))
        if single:
            return ranges[0]
        grids = meshgrid(*ranges, indexing="ij", sparse=self.sparse)
        if self.sparse:
            return grids

        return stack(grids, 0)


class _Concatenator:
    """``r_[...]`` / ``c_[...]``: slices become ``arange``s, scalars 1-d, then
    one concatenation (``c_``: 1-d pieces become columns, joined along the last axis)."""

    def __init__(self, columns: bool) -> None:
        self.columns = columns

    def __getitem__(self, key: Any) -> Array:
        items = key if isinstance(key, tuple) else (key,)
        parts = []
        for item in items:
            if isinstance(item, slice):
                start = 0 if item.start is None else item.start
                step = 1 if item.step is None else item.step
                part = (
                    linspace(start, item.stop, int(abs(step)))
                    if isinstance(step, complex)
                    else arange(start, item.stop, step)
                )
            else:
                part = asarray(item)
                part = reshape(part, (1,)) if _aval(part).ndim == 0 else part
            if self.columns and _aval(part).ndim == 1:
                part = reshape(part, (-1, 1))
            parts.append(part)
        return concatenate(parts, axis=-1 if self.columns else 0)


mgrid = _Grid(sparse=False)
ogrid = _Grid(sparse=True)
r_ = _Concatenator(columns=False)
c_ = _Concatenator(columns=True)
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
