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
    """NumPy's broadcast of the shapes (a scalar is a shape of one dim), checked
    by ``lax.broadcast_shapes`` as JAX's (a negative dim: TypeError)."""
    if not shapes:
        return ()
    return lax.broadcast_shapes(*((s,) if np.ndim(s) == 0 else tuple(s) for s in shapes))


def broadcast_arrays(*args: ArrayLike) -> list[Array]:
    """Every argument broadcast to the common shape."""

    arrays = [checked_array("broadcast_arrays", a, i) for i, a in enumerate(args)]
    shape = broadcast_shapes(*(_aval(a).shape for a in arrays))
    return [broadcast_to(a, shape) for a in arrays]


def concat(arrays: Any, /, *, axis: int | None = 0) -> Array:
    """The array-API name of :func:`concatenate`."""
    return concatenate(arrays, axis=axis)


def rollaxis(a: ArrayLike, axis: int, start: int = 0) -> Array:
    """Move ``axis`` to before position ``start`` (NumPy's legacy rule)."""
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
    """Assemble nested lists of arrays: the innermost lists join along the last
    axis, each level out along the axis before (NumPy's ``block``)."""

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
    """``sort(a)`` as a complex array (by real part, then imaginary part), of
    the complex type of ``a``'s width as JAX's ``to_complex_dtype``: complex128
    for 64-bit input (with x64), complex64 otherwise (float32, int32, bool)."""
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
