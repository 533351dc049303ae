"""Argument handling shared by the numpy layer: promotion and broadcasting.

``refimpl.numpy`` functions accept anything array-like, promote with JAX's
lattice (weak types included) and broadcast NumPy-style; then they call the
``lax`` functions, whose primitives require matched dtypes and shapes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import dtypes, tracing
from refimpl.core import ShapedArray
from refimpl.primitives.elementwise import convert_element_type
from refimpl.primitives.structural import broadcast_in_dim


def is_operand(value: Any) -> bool:
    """Whether an operator's other side is something we compute with."""
    return tracing.is_array_like(value)


def aval_of(value: Any, fn_name: str, position: int) -> ShapedArray:
    if isinstance(value, (list, tuple)):
        raise TypeError(
            f"{fn_name}: argument at position {position} is a {type(value).__name__}; "
            "pass an array (rnp.asarray(...)) instead of a Python sequence"
        )
    return tracing.get_aval(value, fn_name, position)


def promote_dtypes(fn_name: str, *args: Any) -> list[Any]:
    """Convert every argument to the joined dtype (JAX's lattice, weak types)."""
    avals = [aval_of(a, fn_name, i) for i, a in enumerate(args)]
    dtype, weak = dtypes.result_type(*[(av.dtype, av.weak_type) for av in avals])
    return [_to_dtype(a, av, dtype, weak) for a, av in zip(args, avals, strict=True)]


def _to_dtype(value: Any, aval: ShapedArray, dtype: np.dtype, weak: bool) -> Any:
    if aval.dtype == dtype and aval.weak_type == weak:
        return value
    if dtypes.is_python_scalar(value):
        return tracing.TypedScalar(value, dtype, weak)
    if aval.dtype == dtype and not weak:
        # only the weak flag differs: the primitive's result is strong anyway
        return value
    return convert_element_type(value, dtype, weak_type=weak)


def broadcast_arrays(fn_name: str, *args: Any) -> list[Any]:
    """NumPy broadcasting; rank-0 operands stay rank 0 (lax broadcasts them)."""
    avals = [aval_of(a, fn_name, i) for i, a in enumerate(args)]
    try:
        shape = np.broadcast_shapes(*(av.shape for av in avals))
    except ValueError:
        shapes = ", ".join(str(av.shape) for av in avals)
        raise TypeError(f"{fn_name}: incompatible shapes for broadcasting: {shapes}") from None
    return [
        a if av.shape in ((), shape) else broadcast_to_shape(a, av.shape, shape)
        for a, av in zip(args, avals, strict=True)
    ]


def broadcast_to_shape(x: Any, from_shape: tuple[int, ...], shape: tuple[int, ...]) -> Any:
    """Right-aligned NumPy broadcast of ``x`` (of ``from_shape``) to ``shape``."""
    lead = len(shape) - len(from_shape)
    return broadcast_in_dim(x, shape, tuple(range(lead, len(shape))))


def promote_and_broadcast(fn_name: str, *args: Any) -> list[Any]:
    return broadcast_arrays(fn_name, *promote_dtypes(fn_name, *args))
