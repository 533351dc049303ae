"""``matvec`` and ``vecmat`` (the array-API products over the last axes)."""

from __future__ import annotations

from typing import Any

from refimpl.numpy._linalg import einsum
from refimpl.numpy._promote import checked_array
from refimpl.numpy._ufuncs import conj

Array = Any
ArrayLike = Any


# --- products, mapping, unique ----------------------------------------------------------------


def matvec(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """The matrix-vector product over the last axes: ``x1 @ x2`` for a vector ``x2``.

    ``out[..., i] = sum_j x1[..., i, j] x2[..., j]``; the batch axes
    broadcast.

    Args:
        x1: The matrices, of at least two dimensions.
        x2: The vectors, of at least one dimension.

    Returns:
        An array of the broadcast batch shape followed by ``x1``'s rows.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.matvec(rnp.array([[1, 2], [3, 4]]), rnp.array([1, 1]))
        Array([3, 7], dtype=int32)
        >>> rnp.matvec(rnp.ones((5, 2, 3)), rnp.ones(3)).shape
        (5, 2)
    """
    return einsum("...ij,...j->...i", checked_array("matvec", x1), checked_array("matvec", x2, 1))


def vecmat(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """The vector-matrix product over the last axes: ``conj(x1) @ x2``.

    ``out[..., j] = sum_i conj(x1[..., i]) x2[..., i, j]``; the batch axes
    broadcast.

    Args:
        x1: The vectors, of at least one dimension (conjugated when complex).
        x2: The matrices, of at least two dimensions.

    Returns:
        An array of the broadcast batch shape followed by ``x2``'s columns.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.vecmat(rnp.array([1, 1]), rnp.array([[1, 2], [3, 4]]))
        Array([4, 6], dtype=int32)
        >>> rnp.vecmat(rnp.array([1j, 1]), rnp.array([[1, 2], [3, 4]]))
        Array([3.-1.j, 4.-2.j], dtype=complex64)
    """
    return einsum(
        "...i,...ij->...j", conj(checked_array("vecmat", x1)), checked_array("vecmat", x2, 1)
    )


__all__ = [
    "matvec",
    "vecmat",
]
