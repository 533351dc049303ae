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
    """The matrix-vector product over the last axes (batch axes broadcast)."""
    return einsum("...ij,...j->...i", checked_array("matvec", x1), checked_array("matvec", x2, 1))


def vecmat(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """``conj(x1) @ x2`` over the last axes (batch axes broadcast)."""
    return einsum(
        "...i,...ij->...j", conj(checked_array("vecmat", x1)), checked_array("vecmat", x2, 1)
    )


__all__ = [
    "matvec",
    "vecmat",
]
