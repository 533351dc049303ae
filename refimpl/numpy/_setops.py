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
    """The distinct values of ``x`` and how often each occurs.

    ``(values, counts)`` of :func:`unique`.

    Args:
        x: The input array (flattened).
        size: The static number of values, or None (then ``x`` must be
            concrete; keyword-only).
        fill_value: The padding value with ``size``, or None (keyword-only).

    Returns:
        A ``UniqueCountsResult(values, counts)`` named tuple of 1-d arrays.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> values, counts = rnp.unique_counts(rnp.array([3, 1, 3, 3]))
        >>> values
        Array([1, 3], dtype=int32)
        >>> counts
        Array([1, 3], dtype=int32)
    """
    x = checked_array("unique_counts", x)
    return UniqueCountsResult(*unique(x, return_counts=True, size=size, fill_value=fill_value))


def unique_inverse(x: ArrayLike, /, *, size: int | None = None, fill_value: Any = None):
    """The distinct values of ``x`` and where each element of ``x`` is among them.

    ``(values, inverse_indices)`` of :func:`unique`: ``values[inverse_indices]``
    is ``x``.

    Args:
        x: The input array (flattened).
        size: The static number of values, or None (then ``x`` must be
            concrete; keyword-only).
        fill_value: The padding value with ``size``, or None (keyword-only).

    Returns:
        A ``UniqueInverseResult(values, inverse_indices)`` named tuple; the
        inverse has ``x``'s shape.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> result = rnp.unique_inverse(rnp.array([3, 1, 3]))
        >>> result.inverse_indices
        Array([1, 0, 1], dtype=int32)
    """
    x = checked_array("unique_inverse", x)
    return UniqueInverseResult(*unique(x, return_inverse=True, size=size, fill_value=fill_value))


def unique_all(x: ArrayLike, /, *, size: int | None = None, fill_value: Any = None):
    """The distinct values of ``x`` with their first indices, the inverse and the counts.

    ``(values, indices, inverse_indices, counts)`` of :func:`unique`.

    Args:
        x: The input array (flattened).
        size: The static number of values, or None (then ``x`` must be
            concrete; keyword-only).
        fill_value: The padding value with ``size``, or None (keyword-only).

    Returns:
        A ``UniqueAllResult(values, indices, inverse_indices, counts)`` named
        tuple.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> result = rnp.unique_all(rnp.array([3, 1, 3]))
        >>> result.values
        Array([1, 3], dtype=int32)
        >>> result.indices
        Array([1, 0], dtype=int32)
    """
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
