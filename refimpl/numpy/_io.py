"""NumPy's printing, I/O and abstract-type names that ``jax.numpy`` re-exports
(eager, through NumPy), and ``frombuffer``/``fromstring``/``fromiter``/
``fromfile``/``from_dlpack``.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from refimpl import dlpack
from refimpl.array import Array as array_type
from refimpl.numpy._creation import asarray

Array = Any


# --- NumPy's names that JAX re-exports, and eager I/O -----------------------------------

array_repr = np.array_repr
array_str = np.array_str
save = np.save
savez = np.savez
get_printoptions = np.get_printoptions
set_printoptions = np.set_printoptions
printoptions = np.printoptions
ComplexWarning = np.exceptions.ComplexWarning
character, flexible, object_ = np.character, np.flexible, np.object_


def _ndarray_type() -> type:
    return array_type


ndarray = _ndarray_type()  # as jnp.ndarray is jax.Array: isinstance(x, rnp.ndarray)


def load(file: Any, *args: Any, **kwargs: Any) -> Any:
    """``numpy.load``, with a loaded array (not an ``.npz`` archive) as a refimpl array.

    As JAX 0.10.2: NumPy writes bfloat16 as the raw void type ``V2``, so that
    comes back as bfloat16; a dtype no Array holds (``object``, strings) stays
    the NumPy array NumPy loaded, not a TypeError.
    """
    out = np.load(file, *args, **kwargs)
    if not isinstance(out, np.ndarray):
        return out
    if out.dtype == np.dtype("V2"):
        out = out.view(ml_dtypes.bfloat16)
    try:
        return asarray(out)
    except TypeError:  # a dtype refimpl's arrays do not hold
        return out


def frombuffer(buffer: Any, dtype: Any = float, count: int = -1, offset: int = 0) -> Array:
    """``numpy.frombuffer`` as a refimpl array (a copy; the dtype as given)."""
    return asarray(np.frombuffer(buffer, dtype=dtype, count=count, offset=offset))


def fromstring(string: str, dtype: Any = float, count: int = -1, *, sep: str) -> Array:
    """``numpy.fromstring`` of text (``sep`` required, as NumPy's binary mode is gone)."""
    return asarray(np.fromstring(string, dtype=dtype, count=count, sep=sep))


def fromiter(*args: Any, **kwargs: Any) -> Array:
    """Not supported (as in JAX: the iterable may be impure under a trace):
    use ``asarray(numpy.fromiter(...))``."""
    raise NotImplementedError(
        "fromiter: not supported (as jax.numpy); use rnp.asarray(numpy.fromiter(...))"
    )


def fromfile(*args: Any, **kwargs: Any) -> Array:
    """Not supported (as in JAX): read with ``numpy.fromfile`` and pass the
    result to :func:`asarray`."""
    raise NotImplementedError(
        "fromfile: not supported (as jax.numpy); use numpy.fromfile and then rnp.asarray"
    )


def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> Array:
    """``ri.dlpack.from_dlpack`` (zero-copy on CPU where possible)."""

    return dlpack.from_dlpack(x, device=device, copy=copy)


__all__ = [
    "ComplexWarning",
    "array_repr",
    "array_str",
    "character",
    "flexible",
    "from_dlpack",
    "frombuffer",
    "fromfile",
    "fromiter",
    "fromstring",
    "get_printoptions",
    "load",
    "ndarray",
    "object_",
    "printoptions",
    "save",
    "savez",
    "set_printoptions",
]
