"""Structural primitives: they move, copy or select elements without math.

broadcast_in_dim, reshape (and more added beside them). Every structural
primitive keeps its operand's dtype and weak type.
"""

from __future__ import annotations

import numpy as np

from refimpl.core import ShapedArray
from refimpl.primitives.base import Primitive, as_int_tuple

# --- broadcast_in_dim -----------------------------------------------------------

broadcast_in_dim_p = Primitive("broadcast_in_dim")


@broadcast_in_dim_p.def_abstract_eval
def _broadcast_in_dim_abstract_eval(
    x: ShapedArray, *, shape: tuple[int, ...], broadcast_dimensions: tuple[int, ...]
) -> ShapedArray:
    """Operand dim ``i`` becomes output dim ``broadcast_dimensions[i]``; it must
    have size 1 or the output's size there. Dims must be strictly increasing."""
    shape = as_int_tuple("broadcast_in_dim", shape, "shape")
    dims = as_int_tuple("broadcast_in_dim", broadcast_dimensions, "broadcast_dimensions")
    if any(d < 0 for d in shape):
        raise ValueError(f"broadcast_in_dim: negative dimension in shape {shape}")
    if len(dims) != x.ndim:
        raise TypeError(
            f"broadcast_in_dim: broadcast_dimensions {dims} must have one entry per operand "
            f"dimension of shape {x.shape}"
        )
    if any(b <= a for a, b in zip(dims, dims[1:])) or any(not 0 <= d < len(shape) for d in dims):
        raise TypeError(
            f"broadcast_in_dim: broadcast_dimensions {dims} must be strictly increasing "
            f"and within the output rank {len(shape)}"
        )
    for operand_dim, out_dim in enumerate(dims):
        if x.shape[operand_dim] not in (1, shape[out_dim]):
            raise TypeError(
                f"broadcast_in_dim: operand shape {x.shape} cannot be broadcast to {shape} "
                f"with broadcast_dimensions {dims}"
            )
    return ShapedArray(shape, x.dtype, x.weak_type)


@broadcast_in_dim_p.def_impl
def _broadcast_in_dim_impl(
    x: np.ndarray, *, shape: tuple[int, ...], broadcast_dimensions: tuple[int, ...]
) -> np.ndarray:
    expanded_shape = [1] * len(shape)
    for operand_dim, out_dim in enumerate(broadcast_dimensions):
        expanded_shape[out_dim] = x.shape[operand_dim]
    return np.broadcast_to(x.reshape(expanded_shape), shape)


# --- reshape -----------------------------------------------------------------------

reshape_p = Primitive("reshape")


@reshape_p.def_abstract_eval
def _reshape_abstract_eval(x: ShapedArray, *, new_sizes: tuple[int, ...]) -> ShapedArray:
    """Row-major reshape; the element count must not change."""
    new_sizes = as_int_tuple("reshape", new_sizes, "new_sizes")
    if any(d < 0 for d in new_sizes):
        raise TypeError(f"reshape: negative dimension in new_sizes {new_sizes}")
    if int(np.prod(new_sizes, dtype=np.int64)) != x.size:
        raise TypeError(f"reshape: cannot reshape array of shape {x.shape} into {new_sizes}")
    return ShapedArray(new_sizes, x.dtype, x.weak_type)


@reshape_p.def_impl
def _reshape_impl(x: np.ndarray, *, new_sizes: tuple[int, ...]) -> np.ndarray:
    return x.reshape(new_sizes)


# --- the public lax functions ------------------------------------------------------


def reshape(operand, new_sizes, dimensions=None):
    """Row-major reshape; ``dimensions`` (a transpose applied first) is not supported yet."""
    if dimensions is not None:
        raise NotImplementedError("reshape: the dimensions argument is not supported")
    return reshape_p.bind(operand, new_sizes=tuple(int(d) for d in new_sizes))


def broadcast_in_dim(operand, shape, broadcast_dimensions):
    """Broadcast ``operand`` to ``shape``; operand dim i maps to output dim
    ``broadcast_dimensions[i]``."""
    return broadcast_in_dim_p.bind(
        operand, shape=tuple(shape), broadcast_dimensions=tuple(broadcast_dimensions)
    )


__all__ = ["broadcast_in_dim", "reshape"]
