"""``jax.dtypes``: the public dtype functions, with JAX's signatures.

refimpl's internal :mod:`refimpl.dtypes` works on ``(dtype, weak_type)``
pairs (its ``result_type`` returns one); this module is the user-facing
surface ``jax.dtypes`` names, built on it:

* ``result_type(*args, return_weak_type_flag=False)``: the dtype ``jnp``
  operations on ``args`` compute in (with the weak flag on request);
* ``issubdtype(a, b)``: ``np.issubdtype`` that knows ``bfloat16`` is
  floating and that typed PRNG keys are ``prng_key``/``extended``;
* ``canonicalize_dtype(dtype)``: the dtype refimpl stores for a request
  (64-bit types become 32-bit without x64);
* ``float0``, ``bfloat16``, ``finfo``, ``iinfo``, ``extended``, ``prng_key``,
  ``scalar_type_of``, ``itemsize_bits``, ``TypePromotionError``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import dtypes as _dtypes
from refimpl.numpy import _scalars
from refimpl.random import KeyDtype

__all__ = [
    "TypePromotionError",
    "bfloat16",
    "canonicalize_dtype",
    "extended",
    "finfo",
    "float0",
    "float8_e3m4",
    "float8_e4m3",
    "float8_e4m3b11fnuz",
    "float8_e4m3fn",
    "float8_e4m3fnuz",
    "float8_e5m2",
    "float8_e5m2fnuz",
    "iinfo",
    "issubdtype",
    "itemsize_bits",
    "prng_key",
    "result_type",
    "scalar_type_of",
]

bfloat16 = _dtypes.bfloat16
# (JAX's dtypes module, jax._src.dtypes, has the float8 types; jax.dtypes not)
float8_e4m3fn = _dtypes.float8_e4m3fn
float8_e5m2 = _dtypes.float8_e5m2
float8_e4m3fnuz = _dtypes.float8_e4m3fnuz
float8_e5m2fnuz = _dtypes.float8_e5m2fnuz
float8_e4m3b11fnuz = _dtypes.float8_e4m3b11fnuz
float8_e3m4 = _dtypes.float8_e3m4
float8_e4m3 = _dtypes.float8_e4m3
float0 = _dtypes.float0
finfo = _scalars.finfo
iinfo = _scalars.iinfo


TypePromotionError = _dtypes.TypePromotionError


extended = _dtypes.extended
prng_key = _dtypes.prng_key


def result_type(*args: Any, return_weak_type_flag: bool = False) -> Any:
    """The canonical dtype ``jnp`` operations on ``args`` compute in.

    Arguments are arrays, dtypes, scalar types or Python scalars; Python scalars
    and the types ``int``/``float``/``complex`` are weak. With
    ``return_weak_type_flag=True``, a ``(dtype, weak_type)`` pair."""
    if not args:
        raise ValueError("at least one array or dtype is required")
    dtype, weak = _dtypes.jnp_result_type(*(_operand(a) for a in args))
    return (dtype, weak) if return_weak_type_flag else dtype


def _operand(value: Any) -> Any:
    if isinstance(value, _scalars._ScalarMeta):
        return value.dtype
    if isinstance(getattr(value, "dtype", None), KeyDtype):
        raise TypePromotionError("result_type: typed PRNG keys do not promote with numbers")
    return _scalars._operand(value)


def canonicalize_dtype(dtype: Any, allow_extended_dtype: bool = False) -> Any:
    """The dtype refimpl stores for ``dtype`` (64-bit types become 32-bit
    without x64); a typed key dtype passes through with ``allow_extended_dtype``."""
    if isinstance(dtype, KeyDtype):
        if allow_extended_dtype:
            return dtype
        raise ValueError(f"Internal: canonicalize_dtype called on extended dtype {dtype}")
    return _dtypes.canonicalize_dtype(dtype)


def issubdtype(a: Any, b: Any) -> bool:
    """Whether ``a`` is ``b`` or below it in NumPy's type hierarchy (``bfloat16``
    is floating; a typed key dtype is ``prng_key`` and ``extended``)."""
    if (
        isinstance(a, _dtypes.ExtendedDtype)
        or isinstance(b, _dtypes.ExtendedDtype)
        or (isinstance(b, type) and issubclass(b, extended))
    ):
        return _dtypes.issubdtype_extended(a, b)
    if a is None or b is None:
        return False
    a = np.dtype(a)
    if a in _dtypes.INT4_DTYPES and b in _ABSTRACT:  # ml_dtypes' int4 is no NumPy integer
        kind = np.signedinteger if a == _dtypes.int4 else np.unsignedinteger
        return b in (kind, np.integer, np.number, np.generic)
    if b in _ABSTRACT:  # np.floating, np.integer, ...: bfloat16 and the float8s are floating
        if a == bfloat16 or a in _dtypes.FLOAT8_DTYPES:
            return b in (np.floating, np.inexact, np.number, np.generic)
        return bool(np.issubdtype(a, b))
    return a == np.dtype(b)


_ABSTRACT = (
    np.generic, np.number, np.inexact, np.floating, np.complexfloating, np.integer,
    np.signedinteger, np.unsignedinteger, np.flexible, np.character,
)  # fmt: skip


def scalar_type_of(x: Any) -> type:
    """The Python scalar type (``bool``/``int``/``float``/``complex``) of
    ``x``'s dtype."""
    if type(x) in (bool, int, float, complex):
        return type(x)
    dtype = _scalars._plain_dtype("scalar_type_of", x)
    if _dtypes.is_bool(dtype):
        return bool
    if _dtypes.is_integer(dtype):
        return int
    if _dtypes.is_floating(dtype):
        return float
    if _dtypes.is_complex(dtype):
        return complex
    raise TypeError(f"scalar_type_of: invalid scalar value {x!r}")


def itemsize_bits(dtype: Any) -> int:
    """The number of bits one element of ``dtype`` takes."""
    if isinstance(dtype, KeyDtype):
        return dtype.itemsize * 8
    if np.dtype(dtype) in _dtypes.INT4_DTYPES:
        return 4  # stored a byte an element on the host, 4 bits wide in arithmetic
    return np.dtype(dtype).itemsize * 8
