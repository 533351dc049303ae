"""Broadcasting and arranging arrays: ``broadcast_shapes``,
``broadcast_arrays``, ``concat``, ``rollaxis``, ``block`` and
``sort_complex``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import dtypes, lax
from refimpl.numpy._creation import asarray
from refimpl.numpy._promote import aval_of, checked_array
from refimpl.numpy._shape import broadcast_to, concatenate, moveaxis, normalize_axis, reshape, sort

Array = Any
ArrayLike = Any


def _aval(x: Any, name: str = "rnp", position: Any = 0) -> Any:
    return aval_of(x, name, position)


# --- shapes -----------------------------------------------------------------------------


def broadcast_shapes(*shapes: Any) -> tuple[int, ...]:
    """The shape the given shapes broadcast to, by NumPy's rules.

    A scalar is a shape of one dim; the shapes are checked by
    ``lax.broadcast_shapes`` as JAX's (a negative dim: TypeError;
    incompatible sizes: ValueError).

    Args:
        *shapes: Shapes (tuples of ints) or ints.

    Returns:
        A tuple of ints (``()`` for no shapes).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.broadcast_shapes((2, 1), (3,))
        (2, 3)
        >>> rnp.broadcast_shapes((5, 1, 4), (1, 3, 1), 4)
        (5, 3, 4)
    """
    if not shapes:
        return ()
    return lax.broadcast_shapes(*((s,) if np.ndim(s) == 0 else tuple(s) for s in shapes))


def broadcast_arrays(*args: ArrayLike) -> list[Array]:
    """Every argument broadcast to their common shape (dtypes unchanged).

    Args:
        *args: Arrays or scalars.

    Returns:
        A list of arrays of the broadcast shape (NumPy returns a tuple).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.broadcast_arrays(rnp.array([[1], [2]]), rnp.array([10, 20, 30]))
        [Array([[1, 1, 1],
               [2, 2, 2]], dtype=int32), Array([[10, 20, 30],
               [10, 20, 30]], dtype=int32)]
    """

    arrays = [checked_array("broadcast_arrays", a, i) for i, a in enumerate(args)]
    shape = broadcast_shapes(*(_aval(a).shape for a in arrays))
    return [broadcast_to(a, shape) for a in arrays]


def concat(arrays: Any, /, *, axis: int | None = 0) -> Array:
    """Joins arrays along an existing axis: the array API's name of :func:`concatenate`.

    Args:
        arrays: A sequence of arrays of one rank (promoted together).
        axis: The axis to join along, or None to flatten them first
            (keyword-only).

    Returns:
        The joined array.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.concat([rnp.array([[1], [2]]), rnp.array([[3], [4]])], axis=1)
        Array([[1, 3],
               [2, 4]], dtype=int32)
    """
    return concatenate(arrays, axis=axis)


def rollaxis(a: ArrayLike, axis: int, start: int = 0) -> Array:
    """``a`` with ``axis`` moved to before position ``start`` (NumPy's legacy rule).

    :func:`moveaxis` is the clearer way to say the same.

    Args:
        a: The input array.
        axis: The axis to move.
        start: The position it is moved before (``ndim`` moves it last).

    Returns:
        An array of ``a``'s dtype with the dimensions rearranged.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.rollaxis(rnp.ones((2, 3, 4)), 2).shape
        (4, 2, 3)
        >>> rnp.rollaxis(rnp.ones((2, 3, 4)), 0, 2).shape
        (3, 2, 4)
    """
    a = checked_array("rollaxis", a)
    ndim = _aval(a).ndim
    axis = normalize_axis("rollaxis", axis, ndim)
    start = start + ndim if start < 0 else start
    if not 0 <= start <= ndim:
        raise ValueError(f"rollaxis: start {start} is out of bounds for {ndim} dims")
    if axis < start:
        start -= 1
    return moveaxis(a, axis, start)


def block(arrays: Any) -> Array:
    """An array assembled from nested lists of blocks.

    The innermost lists join along the last axis, each level out along the
    axis before (NumPy's ``block``); blocks get leading unit dims as needed.

    Args:
        arrays: A nested list of arrays (of equal depth), or an array.

    Returns:
        The assembled array.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> a, b = rnp.eye(2, dtype=int), rnp.zeros((2, 1), dtype=int)
        >>> rnp.block([[a, b], [rnp.array([[5, 6]]), rnp.array([[7]])]])
        Array([[1, 0, 0],
               [0, 1, 0],
               [5, 6, 7]], dtype=int32)
    """

    def depth(x: Any) -> int:
        return 1 + depth(x[0]) if isinstance(x, list) and x else (1 if isinstance(x, list) else 0)

    levels = depth(arrays)
    if levels == 0:
        return asarray(arrays)
    leaves = []

    def collect(x: Any, level: int) -> None:
        if isinstance(x, list):
            if not x:  # JAX's (and NumPy's) ValueError
                raise ValueError("block: empty lists are not allowed")
            for item in x:
                collect(item, level + 1)
        else:
            if level != levels:
                raise ValueError(f"block: mismatched list depths ({level} and {levels})")
            leaves.append(asarray(x))

    collect(arrays, 0)
    ndim = max(levels, *(_aval(leaf).ndim for leaf in leaves))

    def assemble(x: Any, level: int) -> Any:
        if not isinstance(x, list):
            x = asarray(x)
            return reshape(x, (1,) * (ndim - _aval(x).ndim) + _aval(x).shape)
        parts = [assemble(item, level + 1) for item in x]
        return concatenate(parts, axis=ndim - levels + level)

    return assemble(arrays, 0)


def sort_complex(a: ArrayLike) -> Array:
    """``a`` sorted along its last axis, as a complex array.

    ``sort(a)`` as a complex array (by real part, then imaginary part), of
    the complex type of ``a``'s width as JAX's ``to_complex_dtype``: complex128
    for 64-bit input (with x64), complex64 otherwise (float32, int32, bool).

    Args:
        a: The input array (sorted along its last axis).

    Returns:
        A complex array of ``a``'s shape.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.sort_complex(rnp.array([1 + 2j, 1 - 1j, 0 + 5j]))
        Array([0.+5.j, 1.-1.j, 1.+2.j], dtype=complex64)
        >>> rnp.sort_complex(rnp.array([3, 1, 2]))
        Array([1.+0.j, 2.+0.j, 3.+0.j], dtype=complex64)
    """
    a = checked_array("sort_complex", a)
    dtype = _aval(a).dtype
    if dtypes.is_complex(dtype):
        target = dtype
    else:
        wide = dtype.itemsize == 8
        target = dtypes.canonicalize_dtype(np.complex128 if wide else np.complex64)
    return lax.convert_element_type(sort(a), target)


__all__ = [
    "broadcast_arrays",
    "broadcast_shapes",
    "concat",
    "sort_complex",
    "block",
    "rollaxis",
]
