"""``unique_counts``, ``unique_inverse`` and ``unique_all`` (the array-API set
functions over ``unique``, whose results are NamedTuples as in JAX 0.10.2).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from refimpl.numpy._promote import checked_array
from refimpl.numpy._search import unique

ArrayLike = Any


class UniqueCountsResult(NamedTuple):
    values: Any
    counts: Any


class UniqueInverseResult(NamedTuple):
    values: Any
    inverse_indices: Any


class UniqueAllResult(NamedTuple):
    values: Any
    indices: Any
    inverse_indices: Any
    counts: Any


def unique_counts(x: ArrayLike, /, *, size: int | None = None, fill_value: Any = None):
    """``(values, counts)`` of :func:`unique`."""
    x = checked_array("unique_counts", x)
    return UniqueCountsResult(*unique(x, return_counts=True, size=size, fill_value=fill_value))


def unique_inverse(x: ArrayLike, /, *, size: int | None = None, fill_value: Any = None):
    """``(values, inverse_indices)`` of :func:`unique`."""
    x = checked_array("unique_inverse", x)
    return UniqueInverseResult(*unique(x, return_inverse=True, size=size, fill_value=fill_value))


def unique_all(x: ArrayLike, /, *, size: int | None = None, fill_value: Any = None):
    """``(values, indices, inverse_indices, counts)`` of :func:`unique`."""
    x = checked_array("unique_all", x)
    return UniqueAllResult(
        *unique(
            x,
            return_index=True,
            return_inverse=True,
            return_counts=True,
            size=size,
            fill_value=fill_value,
        )
    )


__all__ = [
    "unique_counts",
    "unique_all",
    "unique_inverse",
]
