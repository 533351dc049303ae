"""``rnp.fft``: jax.numpy.fft over the ``fft`` primitive (refimpl/primitives/fft.py).

Every transform moves its axes last, zero-pads or truncates them to the
requested lengths (``n``/``s``), applies the primitive (at most 3 axes at a
time, as StableHLO's op takes), and moves them back. Inputs promote to an
inexact dtype (complex for ``fft``, real for ``rfft``); ``norm`` is
``"backward"`` (default: inverse transforms divide by ``n``), ``"ortho"``
(both by ``sqrt(n)``) or ``"forward"`` (forward transforms divide by ``n``).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from refimpl import dtypes, lax
from refimpl.numpy._creation import arange, asarray
from refimpl.numpy._promote import aval_of, checked_array, promote_dtypes_inexact
from refimpl.numpy._shape import moveaxis, normalize_axis
from refimpl.numpy._stacking import roll
from refimpl.numpy._ufuncs import conj
from refimpl.primitives.fft import fft_p

Array = Any
ArrayLike = Any

_NORMS = (None, "backward", "ortho", "forward")


def _aval(x: Any) -> Any:
    return aval_of(x, "fft", 0)


def _complex(dtype: np.dtype) -> np.dtype:
    if dtypes.is_complex(dtype):
        return np.dtype(dtype)
    return np.dtype(np.complex128 if dtype == np.float64 else np.complex64)


def _real(dtype: np.dtype) -> np.dtype:
    if not dtypes.is_complex(dtype):
        return np.dtype(dtype)
    return np.dtype(np.float64 if dtype == np.complex128 else np.float32)


def _resize_last(x: Any, sizes: Sequence[int]) -> Any:
    """The last ``len(sizes)`` axes cut or zero-padded at the end to ``sizes``."""
    aval = _aval(x)
    k = len(sizes)
    if aval.shape[-k:] == tuple(sizes):
        return x
    config = [(0, 0, 0)] * (aval.ndim - k) + [(0, 0, 0)] * k
    starts, limits = [0] * aval.ndim, list(aval.shape)
    for i, size in enumerate(sizes):
        d = aval.ndim - k + i
        if size < aval.shape[d]:
            limits[d] = size
        else:
            config[d] = (0, size - aval.shape[d], 0)
    x = lax.slice(x, starts, limits)
    return lax.pad(x, np.zeros((), aval.dtype), config)


def _scale(x: Any, factor: float) -> Any:
    return x if factor == 1 else lax.mul(x, np.asarray(factor, _aval(x).dtype))


def _norm_factor(name: str, norm: Any, n: int, inverse: bool) -> float:
    """The factor multiplying the primitive's result (whose IFFT divides by n)."""
    if norm not in _NORMS:
        raise ValueError(f"{name}: norm must be 'backward', 'ortho' or 'forward', got {norm!r}")
    if norm in (None, "backward"):
        return 1.0
    if norm == "ortho":
        return math.sqrt(n) if inverse else 1 / math.sqrt(n)
    return float(n) if inverse else 1 / n


def _axes_and_sizes(
    name: str, a: Any, s: Any, axes: Any
) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
    ndim = _aval(a).ndim
    if axes is None:
        count = ndim if s is None else len(s)
        axes = tuple(range(ndim - count, ndim))
    axes = tuple(normalize_axis(name, operator.index(ax), ndim) for ax in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"{name}: repeated axes {axes}")
    if s is not None:
        s = tuple(operator.index(n) for n in s)
        if len(s) != len(axes):
            raise ValueError(f"{name}: s and axes must have one entry each, got {s} and {axes}")
        if any(n < 1 for n in s):
            raise ValueError(f"{name}: invalid number of data points {s}")
    return axes, s


def _complex_fftn(x: Any, count: int, inverse: bool) -> Any:
    """FFT/IFFT over the last ``count`` axes, at most 3 at a time."""
    kind = "IFFT" if inverse else "FFT"
    done = 0
    while done < count:
        step = min(3, count - done)
        shape = _aval(x).shape
        ndim = len(shape)
        # Bring the next `step` axes (counted from the end) last, transform, put back.
        group = list(range(ndim - done - step, ndim - done))
        order = [d for d in range(ndim) if d not in group] + group
        moved = lax.transpose(x, tuple(order)) if done else x
        lengths = tuple(_aval(moved).shape[-step:])
        moved = fft_p.bind(moved, fft_type=kind, fft_lengths=lengths)
        x = lax.transpose(moved, tuple(np.argsort(order))) if done else moved
        done += step
    return x


def _transform(name: str, a: Any, s: Any, axes: Any, norm: Any, kind: str) -> Array:
    a = checked_array(name, a)
    (a,) = promote_dtypes_inexact(name, a)
    if kind == "RFFT" and dtypes.is_complex(_aval(a).dtype):
        raise TypeError(f"{name}: the input must be real, got {_aval(a).dtype}")
    if kind == "RFFT" and _aval(a).dtype not in (np.float32, np.float64):
        # (as JAX: XLA's real transform takes only these)
        raise ValueError(f"{name}: the input must be float32 or float64, got {_aval(a).dtype}")
    axes, s = _axes_and_sizes(name, a, s, axes)
    if not axes:
        return a
    k = len(axes)
    order = [d for d in range(_aval(a).ndim) if d not in axes] + list(axes)
    identity = order == list(range(len(order)))
    x = a if identity else lax.transpose(a, tuple(order))
    shape = _aval(x).shape
    if kind in ("FFT", "IFFT"):
        sizes = s or shape[-k:]
        x = _resize_last(lax.convert_element_type(x, _complex(_aval(x).dtype)), sizes)
        out = _complex_fftn(x, k, kind == "IFFT")
    elif kind == "RFFT":
        sizes = s or shape[-k:]
        out = fft_p.bind(_resize_last(x, sizes), fft_type="RFFT", fft_lengths=(sizes[-1],))
        if k > 1:
            out = _other_axes(out, k, inverse=False)
    else:
        sizes = s or (*shape[-k:-1], 2 * (shape[-1] - 1))
        if sizes[-1] < 1:
            raise ValueError(f"{name}: invalid number of data points {sizes[-1]}")
        x = lax.convert_element_type(x, _complex(_aval(x).dtype))
        x = _resize_last(x, (*sizes[:-1], sizes[-1] // 2 + 1))
        if k > 1:
            x = _other_axes(x, k, inverse=True)
        out = fft_p.bind(x, fft_type="IRFFT", fft_lengths=(sizes[-1],))
    out = _scale(out, _norm_factor(name, norm, math.prod(sizes), kind in ("IFFT", "IRFFT")))
    return out if identity else lax.transpose(out, tuple(int(d) for d in np.argsort(order)))


def _other_axes(x: Any, k: int, inverse: bool) -> Any:
    """FFT/IFFT over the ``k - 1`` axes before the last (the real transform's
    companions): the last axis moved before them and back."""
    ndim = _aval(x).ndim
    moved = _complex_fftn(moveaxis(x, -1, ndim - k), k - 1, inverse)
    return moveaxis(moved, ndim - k, -1)


def _one(name: str, a: Any, n: Any, axis: int, norm: Any, kind: str) -> Array:
    try:
        hash(axis)  # JAX 0.10.2's 1-d transforms hash their axis first
    except TypeError as error:  # a 0-d NumPy array, a list: JAX's TypeError
        raise TypeError(f"{error} (the axis of numpy.fft.{name})") from None
    return _transform(name, a, None if n is None else (n,), (axis,), norm, kind)


def fft(a: ArrayLike, n: int | None = None, axis: int = -1, norm: str | None = None) -> Array:
    """The 1-d DFT along ``axis`` (``n`` points: cut or zero-padded)."""
    return _one("fft", a, n, axis, norm, "FFT")


def ifft(a: ArrayLike, n: int | None = None, axis: int = -1, norm: str | None = None) -> Array:
    """The inverse 1-d DFT along ``axis``."""
    return _one("ifft", a, n, axis, norm, "IFFT")


def rfft(a: ArrayLike, n: int | None = None, axis: int = -1, norm: str | None = None) -> Array:
    """The 1-d DFT of real input: the ``n // 2 + 1`` non-negative frequencies."""
    return _one("rfft", a, n, axis, norm, "RFFT")


def irfft(a: ArrayLike, n: int | None = None, axis: int = -1, norm: str | None = None) -> Array:
    """The inverse of :func:`rfft`: ``n`` (default ``2 (m - 1)``) real points."""
    return _one("irfft", a, n, axis, norm, "IRFFT")


_SWAP = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}


def hfft(a: ArrayLike, n: int | None = None, axis: int = -1, norm: str | None = None) -> Array:
    """The DFT of a Hermitian-symmetric signal given by its first half: real output."""

    if norm not in _NORMS:
        _norm_factor("hfft", norm, 1, False)
    return _one("hfft", conj(checked_array("hfft", a)), n, axis, _SWAP[norm], "IRFFT")


def ihfft(a: ArrayLike, n: int | None = None, axis: int = -1, norm: str | None = None) -> Array:
    """The inverse of :func:`hfft`: the conjugated :func:`rfft`, scaled as an inverse."""

    if norm not in _NORMS:
        _norm_factor("ihfft", norm, 1, False)
    return conj(_one("ihfft", a, n, axis, _SWAP[norm], "RFFT"))


def fftn(a: ArrayLike, s: Any = None, axes: Any = None, norm: str | None = None) -> Array:
    """The n-d DFT over ``axes`` (all by default, or the last ``len(s)``)."""
    return _transform("fftn", a, s, axes, norm, "FFT")


def ifftn(a: ArrayLike, s: Any = None, axes: Any = None, norm: str | None = None) -> Array:
    """The inverse n-d DFT."""
    return _transform("ifftn", a, s, axes, norm, "IFFT")


def rfftn(a: ArrayLike, s: Any = None, axes: Any = None, norm: str | None = None) -> Array:
    """The n-d DFT of real input (half spectrum along the last of ``axes``)."""
    return _transform("rfftn", a, s, axes, norm, "RFFT")


def irfftn(a: ArrayLike, s: Any = None, axes: Any = None, norm: str | None = None) -> Array:
    """The inverse of :func:`rfftn`."""
    return _transform("irfftn", a, s, axes, norm, "IRFFT")


def fft2(a: ArrayLike, s: Any = None, axes: Any = (-2, -1), norm: str | None = None) -> Array:
    """:func:`fftn` over two axes."""
    return _transform("fft2", a, s, axes, norm, "FFT")


def ifft2(a: ArrayLike, s: Any = None, axes: Any = (-2, -1), norm: str | None = None) -> Array:
    """:func:`ifftn` over two axes."""
    return _transform("ifft2", a, s, axes, norm, "IFFT")


def rfft2(a: ArrayLike, s: Any = None, axes: Any = (-2, -1), norm: str | None = None) -> Array:
    """:func:`rfftn` over two axes."""
    return _transform("rfft2", a, s, axes, norm, "RFFT")


def irfft2(a: ArrayLike, s: Any = None, axes: Any = (-2, -1), norm: str | None = None) -> Array:
    """:func:`irfftn` over two axes."""
    return _transform("irfft2", a, s, axes, norm, "IRFFT")


def fftfreq(n: int, d: ArrayLike = 1.0, *, dtype: Any = None, device: Any = None) -> Array:
    """The sample frequencies ``[0, 1, ..., n/2-1, -n/2, ..., -1] / (d n)``."""
    n = operator.index(n)
    dtype = dtypes.canonicalize_dtype(np.float64 if dtype is None else dtype)
    k = np.concatenate([np.arange(0, (n - 1) // 2 + 1), np.arange(-(n // 2), 0)])
    return lax.div(
        asarray(k.astype(dtype)), lax.mul(asarray(d).astype(dtype), np.asarray(n, dtype))
    )


def rfftfreq(n: int, d: ArrayLike = 1.0, *, dtype: Any = None, device: Any = None) -> Array:
    """The non-negative sample frequencies ``[0, 1, ..., n // 2] / (d n)``."""
    n = operator.index(n)
    dtype = dtypes.canonicalize_dtype(np.float64 if dtype is None else dtype)
    k = arange(n // 2 + 1, dtype=dtype)
    return lax.div(k, lax.mul(asarray(d).astype(dtype), np.asarray(n, dtype)))


def _shift(name: str, x: Any, axes: Any, forward: bool) -> Array:
    x = checked_array(name, x)
    ndim = _aval(x).ndim
    axes = tuple(range(ndim)) if axes is None else axes
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    sizes = [_aval(x).shape[normalize_axis(name, ax, ndim)] for ax in axes]
    shifts = tuple(n // 2 if forward else -(n // 2) for n in sizes)
    return roll(x, shifts, axes)


def fftshift(x: ArrayLike, axes: Any = None) -> Array:
    """The zero frequency moved to the middle: ``roll`` by ``n // 2`` per axis."""
    return _shift("fftshift", x, axes, True)


def ifftshift(x: ArrayLike, axes: Any = None) -> Array:
    """The inverse of :func:`fftshift`: ``roll`` by ``-(n // 2)`` per axis."""
    return _shift("ifftshift", x, axes, False)


__all__ = [
    "fft", "fft2", "fftfreq", "fftn", "fftshift", "hfft", "ifft", "ifft2", "ifftn",
    "ifftshift", "ihfft", "irfft", "irfft2", "irfftn", "rfft", "rfft2", "rfftfreq", "rfftn",
]  # fmt: skip
