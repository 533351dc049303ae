"""Argument checks and dtype rules shared by the samplers of
``_discrete.py`` and ``_continuous.py``, as JAX 0.10.2 checks them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import dtypes, lax, tracing
from refimpl import numpy as rnp
from refimpl.random._basic import _check_broadcast
from refimpl.random._keys import _as_shape

# --- argument checks ------------------------------------------------------------------


def _check_safe_to_cast(name: str, dtype: np.dtype, *args: Any) -> None:
    """JAX's rule: a parameter may be cast to ``dtype`` only if promoting it
    with ``dtype`` gives ``dtype`` (a Python scalar is weak and always fits a
    float dtype; a float32 array does not fit float16)."""
    for arg in args:
        arg_dtype = tracing.get_aval(arg, name, 1).dtype
        joined, _ = dtypes.result_type(arg, np.zeros((), dtype))
        if joined != dtype:
            raise ValueError(
                f"In arguments to {name}, cannot safely cast argument of type "
                f"{np.dtype(arg_dtype).name} to {np.dtype(dtype).name}"
            )


def _check_arraylike(name: str, **params: Any) -> None:
    """JAX's samplers take arrays or scalars as parameters, not lists or tuples."""
    for arg, value in params.items():
        if isinstance(value, (list, tuple)):
            raise TypeError(
                f"{name}: {arg} must be an array or a scalar, got {type(value).__name__} "
                "(convert it with numpy.asarray first, as JAX requires)"
            )


def _broadcast_shape(name: str, shape: Any, *params: Any) -> tuple[int, ...]:
    """``shape`` (default: the parameters' broadcast shape), checked to be the
    broadcast of itself with every parameter's shape."""
    shapes = [tuple(np.shape(p)) for p in params]
    if shape is None:
        try:
            return tuple(np.broadcast_shapes(*shapes))
        except ValueError:
            raise ValueError(
                f"{name}: incompatible shapes for broadcasting: shapes={shapes}"
            ) from None
    shape = _as_shape(name, shape)
    _check_broadcast(name, shape, *params)
    return shape


def _float_out(name: str, dtype: Any) -> np.dtype:
    dtype = dtypes.canonicalize_dtype(float if dtype is None else dtype)
    if not dtypes.is_floating(dtype):
        raise ValueError(f"dtype argument to `{name}` must be a float dtype, got {dtype}")
    return dtype


def _int_out(name: str, dtype: Any) -> np.dtype:
    dtype = dtypes.canonicalize_dtype(int if dtype is None else dtype)
    if not dtypes.is_integer(dtype):
        raise ValueError(f"dtype argument to `{name}` must be an int dtype, got {dtype}")
    return dtype


def _inexact_dtype(name: str, value: Any) -> np.dtype:
    """The dtype ``value`` gets from JAX's ``promote_dtypes_inexact``."""
    aval = tracing.get_aval(value, name, 1)
    if dtypes.is_inexact(aval.dtype):
        return np.dtype(aval.dtype)
    return dtypes.canonicalize_dtype(float)


def _as_inexact(name: str, value: Any) -> Any:
    """``value`` promoted to an inexact dtype as JAX's ``promote_dtypes_inexact``
    (integers and bools to the default float; a Python scalar stays weak)."""
    value = rnp.asarray(value) if isinstance(value, (list, tuple)) else value
    dtype = _inexact_dtype(name, value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return rnp.asarray(float(value))  # weakly typed, as a Python float
    return lax.convert_element_type(value, dtype)


def _const(value: float | np.floating[Any], dtype: np.dtype) -> Any:
    return np.asarray(value, dtype)
