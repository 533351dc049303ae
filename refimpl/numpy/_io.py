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
ComplexWarning = np.exceptions.ComplexWarning
character, flexible, object_ = np.character, np.flexible, np.object_


def get_printoptions() -> dict[str, Any]:
    """Alias of :func:`numpy.get_printoptions`.

    refimpl arrays print through NumPy, so NumPy's print options are theirs."""
    return dict(np.get_printoptions())


def set_printoptions(*args: Any, **kwargs: Any) -> None:
    """Alias of :func:`numpy.set_printoptions`.

    refimpl arrays print through NumPy, so NumPy's print options apply to them."""
    np.set_printoptions(*args, **kwargs)


def printoptions(*args: Any, **kwargs: Any) -> Any:
    """Alias of :func:`numpy.printoptions`.

    A context manager setting NumPy's print options (which refimpl arrays
    print with) inside a ``with`` block."""
    return np.printoptions(*args, **kwargs)


def _ndarray_type() -> type:
    return array_type


ndarray = _ndarray_type()  # as jnp.ndarray is jax.Array: isinstance(x, rnp.ndarray)


def load(file: Any, *args: Any, **kwargs: Any) -> Any:
    """``numpy.load``, with a loaded array (not an ``.npz`` archive) as a refimpl array.

    As JAX 0.10.2: NumPy writes bfloat16 as the raw void type ``V2``, so that
    comes back as bfloat16; a dtype no Array holds (``object``, strings) stays
    the NumPy array NumPy loaded, not a TypeError.

    Args:
        file: A file name or file-like object, as for ``numpy.load``.
        *args: Passed on to ``numpy.load``.
        **kwargs: Passed on to ``numpy.load``.

    Returns:
        A refimpl array for an ``.npy`` array of a supported dtype; else what
        ``numpy.load`` returns.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> import io, numpy as np
        >>> buffer = io.BytesIO()
        >>> np.save(buffer, np.array([1, 2, 3], dtype=np.int32))
        >>> _ = buffer.seek(0)
        >>> rnp.load(buffer)
        Array([1, 2, 3], dtype=int32)
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
    """The bytes of ``buffer`` read as a 1-d array: ``numpy.frombuffer``, as a refimpl array.

    The data is copied; the dtype is taken as given (then canonicalized: a
    float64 buffer gives float32 without x64).

    Args:
        buffer: An object exposing the buffer interface (``bytes``...).
        dtype: The dtype of the elements.
        count: The number of elements to read (-1 for all).
        offset: The number of bytes to skip first.

    Returns:
        A 1-d array.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.frombuffer(bytes([1, 2, 3]), dtype=rnp.uint8)
        Array([1, 2, 3], dtype=uint8)
    """
    return asarray(np.frombuffer(buffer, dtype=dtype, count=count, offset=offset))


def fromstring(string: str, dtype: Any = float, count: int = -1, *, sep: str) -> Array:
    """The numbers in ``string``, separated by ``sep``: ``numpy.fromstring`` of text.

    ``sep`` is required, as NumPy's binary mode is gone.

    Args:
        string: The text.
        dtype: The dtype of the elements.
        count: The number of elements to read (-1 for all).
        sep: The separator (keyword-only).

    Returns:
        A 1-d array.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.fromstring("1 2 3", dtype=int, sep=" ")
        Array([1, 2, 3], dtype=int32)
    """
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
    """An array from an object implementing the DLPack protocol: ``ri.dlpack.from_dlpack``.

    Zero-copy on CPU where possible.

    Args:
        x: An object with ``__dlpack__`` (a NumPy array, a JAX array...).
        device: The device to put the result on, or None (keyword-only).
        copy: Whether to copy (True), never copy (False) or copy if needed
            (None; keyword-only).

    Returns:
        A refimpl array.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> import numpy as np
        >>> rnp.from_dlpack(np.arange(3, dtype=np.int32))
        Array([0, 1, 2], dtype=int32)
    """

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
