"""The real part, imaginary part and conjugate of a complex array, written over
the elementwise primitives (there are no real/imag/conj primitives).

``convert_element_type`` from complex to real keeps the real part; the
imaginary part is the real part of ``x * -1j``; the conjugate is rebuilt from
the two. Exact for finite values. The results keep the operand's weak type.
Used by ``lax.real``/``imag``/``conj`` and by fft's transpose rule; the
``refimpl.numpy`` functions compute the same.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import tracing
from refimpl.core import ShapedArray
from refimpl.primitives import elementwise as ew

__all__ = ["conj", "imag", "real"]


def _complex_aval(x: Any, name: str) -> ShapedArray:
    aval = tracing.get_aval(x, name, 0)
    if aval.dtype not in (np.dtype(np.complex64), np.dtype(np.complex128)):
        raise TypeError(f"{name}: expected a complex array, got {aval.dtype.name}")
    return aval


def _real_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dtype == np.complex64 else np.dtype(np.float64)


def real(x: Any) -> Any:
    """The real part of complex ``x`` (a float array)."""
    aval = _complex_aval(x, "real")
    return ew.convert_element_type(x, _real_dtype(aval.dtype), weak_type=aval.weak_type)


def imag(x: Any) -> Any:
    """The imaginary part of complex ``x`` (a float array)."""
    aval = _complex_aval(x, "imag")
    return real(ew.mul(x, tracing.TypedScalar(-1j, aval.dtype, aval.weak_type)))


def conj(x: Any) -> Any:
    """The complex conjugate of complex ``x``."""
    aval = _complex_aval(x, "conj")
    real_part = ew.convert_element_type(real(x), aval.dtype, weak_type=aval.weak_type)
    minus_imag = ew.convert_element_type(ew.neg(imag(x)), aval.dtype, weak_type=aval.weak_type)
    return ew.add(
        real_part, ew.mul(minus_imag, tracing.TypedScalar(1j, aval.dtype, aval.weak_type))
    )
