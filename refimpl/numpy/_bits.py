"""Floating-point spacing and bit functions of ``jax.numpy``: ``spacing``,
``bitwise_count``, ``packbits`` and ``unpackbits``.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from refimpl import dtypes, lax
from refimpl.numpy._creation import asarray, canonical_dtype, full_like
from refimpl.numpy._math import copysign
from refimpl.numpy._promote import (
    as_array,
    aval_of,
    checked_array,
    promote_dtypes_inexact,
    promote_dtypes_numeric,
)
from refimpl.numpy._scalars import finfo
from refimpl.numpy._shape import moveaxis, normalize_axis, reshape
from refimpl.numpy._ufuncs import where

Array = Any
ArrayLike = Any


def _aval(x: Any, name: str = "rnp", position: Any = 0) -> Any:
    return aval_of(x, name, position)


# --- floating point and bits --------------------------------------------------------------


def spacing(x: ArrayLike, /) -> Array:
    """The distance from ``x`` to the next float away from zero, elementwise.

    The distance from ``x`` to the next float away from zero (toward +inf
    for float16, as NumPy); ``+-`` the smallest subnormal where that distance
    rounds to zero. Real floating types only (integers promote; complex is a
    ValueError). The distance is that of ``x``'s dtype: float32 without x64,
    where NumPy's Python floats are float64.

    Args:
        x: The input array, or a scalar.

    Returns:
        An array of ``x``'s shape, in its float dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.spacing(rnp.array([1.0, 0.0], dtype=rnp.float32))
        Array([1.1920929e-07, 1.4012985e-45], dtype=float32)
    """

    x = checked_array("spacing", x)
    (x,) = promote_dtypes_inexact("spacing", x)
    dtype = _aval(x).dtype
    if dtypes.is_complex(dtype):
        raise ValueError("spacing: complex inputs are not supported")
    inf = full_like(x, np.inf)
    if dtype == np.float16:
        return lax.sub(lax.nextafter(x, inf), x)
    step = lax.sub(lax.nextafter(x, copysign(inf, x)), x)
    # finfo's smallest_subnormal is a NumPy scalar, strong: so is the result
    # (spacing of a Python float is a strong float32, as JAX's)
    tiny = np.asarray(finfo(dtype).smallest_subnormal, dtype)
    return where(step == 0, copysign(tiny, x), step)


_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def bitwise_count(x: ArrayLike, /) -> Array:
    """The number of one bits in ``|x|``, elementwise (a population count).

    Two's complement, so ``|int_min|`` counts one bit; booleans count as
    0/1. Floating input is a TypeError.

    Args:
        x: An integer or bool array, or a scalar.

    Returns:
        A uint8 array of ``x``'s shape.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.bitwise_count(rnp.array([0, 7, -1, 255]))
        Array([0, 3, 1, 8], dtype=uint8)
    """
    x = checked_array("bitwise_count", x)
    (x,) = promote_dtypes_numeric("bitwise_count", x)
    dtype = _aval(x).dtype
    if not dtypes.is_integer(dtype):
        raise TypeError(f"bitwise_count: integer or boolean input required, got {dtype}")
    if dtypes.is_signed_int(dtype):
        x = lax.abs(x)
    width = np.dtype(dtype).itemsize
    unsigned = np.dtype(_UNSIGNED[width])
    if unsigned != dtype:
        x = lax.bitcast_convert_type(x, unsigned)

    def c(pattern: int) -> Any:
        return full_like(x, np.asarray(pattern, unsigned))

    def shifted(value: Any, amount: int) -> Any:
        return lax.shift_right_logical(value, c(amount))

    # Sum bits in pairs, nibbles, then bytes; the byte counts are then added
    # by a multiply that accumulates them into the top byte.
    ones_ = int.from_bytes(b"\x01" * width, "little")
    x = lax.sub(x, lax.bitwise_and(shifted(x, 1), c(0x55 * ones_)))
    x = lax.add(
        lax.bitwise_and(x, c(0x33 * ones_)), lax.bitwise_and(shifted(x, 2), c(0x33 * ones_))
    )
    x = lax.bitwise_and(lax.add(x, shifted(x, 4)), c(0x0F * ones_))
    if width > 1:
        x = shifted(lax.mul(x, c(ones_)), 8 * (width - 1))
    return lax.convert_element_type(x, np.uint8)


def _bit_weights(bitorder: str, name: str) -> np.ndarray:
    if bitorder not in ("big", "little"):
        raise ValueError(f"{name}: bitorder must be 'big' or 'little', got {bitorder!r}")
    weights = np.arange(8, dtype=np.uint8)
    return weights[::-1].copy() if bitorder == "big" else weights


def packbits(a: ArrayLike, axis: int | None = None, bitorder: str = "big") -> Array:
    """The elements of ``a`` packed into the bits of uint8 values.

    Each run of 8 elements along ``axis`` (the flattened array for
    ``None``; zero-padded at the end) as one uint8, nonzero elements being
    one bits, the first element the highest bit (``bitorder="big"``) or the lowest.

    Args:
        a: An integer or bool array (nonzero is a one bit).
        axis: The axis to pack along, or None for the flattened array.
        bitorder: ``"big"`` or ``"little"``.

    Returns:
        A uint8 array with ``axis`` ``ceil(n / 8)`` long.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.packbits(rnp.array([1, 0, 1, 1, 0, 0, 0, 0, 1]))
        Array([176, 128], dtype=uint8)
        >>> rnp.packbits(rnp.array([1, 0, 1]), bitorder="little")
        Array([5], dtype=uint8)
    """
    a = checked_array("packbits", a)
    dtype = _aval(a).dtype
    if not (dtypes.is_integer(dtype) or dtypes.is_bool(dtype)):
        raise TypeError(f"packbits: integer or boolean input required, got {dtype}")
    shifts = _bit_weights(bitorder, "packbits")
    bits = lax.convert_element_type(lax.ne(a, full_like(a, 0)), np.uint8)
    if axis is None:
        bits, axis = reshape(bits, (-1,)), 0
    axis = normalize_axis("packbits", axis, _aval(bits).ndim)
    bits = moveaxis(bits, axis, -1)
    shape = _aval(bits).shape
    extra = -shape[-1] % 8
    if extra:
        bits = lax.pad(bits, np.uint8(0), [(0, 0, 0)] * (len(shape) - 1) + [(0, extra, 0)])
    groups = reshape(bits, (*shape[:-1], (shape[-1] + extra) // 8, 8))
    weighted = lax.shift_left(
        groups, lax.broadcast_in_dim(asarray(shifts), _aval(groups).shape, (len(shape),))
    )
    packed = lax.reduce_sum(weighted, (len(shape),))
    return moveaxis(packed, -1, axis)


def unpackbits(
    a: ArrayLike, axis: int | None = None, count: int | None = None, bitorder: str = "big"
) -> Array:
    """The bits of the uint8 values of ``a``, as an array of 0s and 1s.

    The inverse of :func:`packbits`: each uint8 becomes 8 elements (0/1,
    uint8) along ``axis``; ``count`` keeps the first ``count`` (or pads with zeros;
    a negative ``count`` drops that many from the end).

    Args:
        a: A uint8 array (other dtypes are a TypeError).
        axis: The axis to unpack along, or None for the flattened array.
        count: The number of bits to keep along ``axis``, or None for all.
        bitorder: ``"big"`` or ``"little"``.

    Returns:
        A uint8 array of 0s and 1s, ``axis`` 8 times as long (or ``count``).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.unpackbits(rnp.array([5], dtype=rnp.uint8))
        Array([0, 0, 0, 0, 0, 1, 0, 1], dtype=uint8)
        >>> rnp.unpackbits(rnp.array([5], dtype=rnp.uint8), bitorder="little")
        Array([1, 0, 1, 0, 0, 0, 0, 0], dtype=uint8)
    """
    a = checked_array("unpackbits", a)
    if _aval(a).dtype != np.uint8:
        raise TypeError(f"unpackbits: uint8 input required, got {_aval(a).dtype}")
    shifts = _bit_weights(bitorder, "unpackbits")
    if axis is None:
        a, axis = reshape(a, (-1,)), 0
    axis = normalize_axis("unpackbits", axis, _aval(a).ndim)
    a = moveaxis(a, axis, -1)
    shape = _aval(a).shape
    wide = lax.broadcast_in_dim(a, (*shape, 8), tuple(range(len(shape))))
    masks = lax.broadcast_in_dim(
        asarray(np.left_shift(np.uint8(1), shifts)), (*shape, 8), (len(shape),)
    )
    bits = lax.convert_element_type(
        lax.ne(lax.bitwise_and(wide, masks), full_like(wide, 0)), np.uint8
    )
    bits = reshape(bits, (*shape[:-1], shape[-1] * 8))
    if count is not None:
        count = operator.index(count)
        total = shape[-1] * 8
        if count > total:
            bits = lax.pad(
                bits, np.uint8(0), [(0, 0, 0)] * (len(shape) - 1) + [(0, count - total, 0)]
            )
        else:
            bits = bits[..., : max(count, 0) if count >= 0 else total + count]
    return moveaxis(bits, -1, axis)


def _view_bits(dtype: np.dtype) -> int:
    return 4 if dtype in dtypes.INT4_DTYPES else dtype.itemsize * 8


def _unsigned_of_bits(bits: int) -> np.dtype:
    return dtypes.uint4 if bits == 4 else np.dtype(f"uint{bits}")


def array_view(x: ArrayLike, dtype: Any = None, type: Any = None) -> Array:  # noqa: A002
    """``jax.Array.view``: ``x``'s bits read as ``dtype`` (little-endian, as
    NumPy on x86 and XLA); a change of width changes the last axis's size.
    Bool reads as uint8 (a view as bool is ``!= 0`` of the bytes), complex as
    its interleaved real and imaginary parts."""
    if type is not None:
        raise NotImplementedError("view: the type argument is not supported")
    x = as_array(x)
    if dtype is None:
        return x
    dtype = canonical_dtype("view", dtype)
    aval = _aval(x, "view")
    n_in, n_out = _view_bits(aval.dtype), _view_bits(dtype)
    if aval.ndim == 0:
        if n_in != n_out:
            raise ValueError(
                f"view: a 0-d array can only be viewed as a dtype of its itemsize "
                f"({aval.dtype.name} as {dtype.name})"
            )
        return lax.squeeze(array_view(lax.expand_dims(x, (0,)), dtype), (0,))
    if (aval.shape[-1] * n_in) % n_out:
        raise ValueError(
            f"view: the last axis ({aval.shape[-1]} x {aval.dtype.name}) does not divide into "
            f"{dtype.name} elements"
        )
    if aval.dtype == dtype:
        return x
    if dtypes.is_bool(aval.dtype):
        return array_view(lax.convert_element_type(x, np.uint8), dtype)
    if dtypes.is_complex(aval.dtype):
        last = (aval.ndim,)
        parts = lax.concatenate(
            [lax.expand_dims(lax.real(x), last), lax.expand_dims(lax.imag(x), last)], aval.ndim
        )
        return array_view(reshape(parts, (*aval.shape[:-1], 2 * aval.shape[-1])), dtype)
    if dtypes.is_bool(dtype):
        return lax.ne(array_view(x, np.uint8), np.zeros((), np.uint8))
    if dtypes.is_complex(dtype):
        part = np.dtype(np.float32 if dtype == np.complex64 else np.float64)
        out = lax.convert_element_type(array_view(x, part), dtype)
        # JAX 0.10.2's view builds re + 1j * im, not complex(re, im): an infinite
        # or NaN imaginary part makes the real part NaN there too
        return lax.add(out[..., 0::2], lax.mul(np.asarray(1j, dtype), out[..., 1::2]))
    if n_in == n_out:
        return lax.bitcast_convert_type(x, dtype)
    wide, narrow = (n_in, n_out) if n_in > n_out else (n_out, n_in)
    wide_u, narrow_u = _unsigned_of_bits(wide), _unsigned_of_bits(narrow)
    factor = wide // narrow
    if n_in > n_out:
        # element k of each group holds bits [narrow * k, narrow * (k + 1)): little-endian
        bits = lax.bitcast_convert_type(x, wide_u)
        mask = np.asarray((1 << narrow) - 1, wide_u)
        pieces = [
            lax.expand_dims(
                lax.convert_element_type(
                    lax.bitwise_and(
                        lax.shift_right_logical(bits, np.asarray(narrow * k, wide_u)), mask
                    ),
                    narrow_u,
                ),
                (aval.ndim,),
            )
            for k in range(factor)
        ]
        split = reshape(lax.concatenate(pieces, aval.ndim), (*aval.shape[:-1], -1))
        return lax.bitcast_convert_type(split, dtype)
    bits = lax.bitcast_convert_type(x, narrow_u)
    groups = reshape(bits, (*aval.shape[:-1], aval.shape[-1] // factor, factor))
    joined = None
    for k in range(factor):
        piece = lax.convert_element_type(groups[..., k], wide_u)
        piece = lax.shift_left(piece, np.asarray(narrow * k, wide_u))
        joined = piece if joined is None else lax.bitwise_or(joined, piece)
    return lax.bitcast_convert_type(joined, dtype)


__all__ = [
    "bitwise_count",
    "packbits",
    "spacing",
    "unpackbits",
]
