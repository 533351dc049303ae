"""``fft``: the discrete Fourier transform over the trailing 1-3 axes
(StableHLO's ``fft`` op).

``fft[fft_type, fft_lengths](x)``, ``k = len(fft_lengths)`` in 1..3, acts on
the last ``k`` axes (the leading ones are a batch):

* ``FFT``: complex -> complex, ``y[k] = sum_j x[j] exp(-2 pi i j.k / n)``
  (unnormalized); ``IFFT``: the inverse, ``exp(+...)`` divided by
  ``prod(fft_lengths)``. The last ``k`` dims must equal ``fft_lengths``.
* ``RFFT``: real -> complex (float32 -> complex64, float64 -> complex128), the
  FFT of a real array keeping the non-negative frequencies of the last axis
  (``n // 2 + 1`` of them).
* ``IRFFT``: complex -> real, the inverse of ``RFFT``: the input's last axis
  holds ``n // 2 + 1`` frequencies of a Hermitian spectrum of length ``n =
  fft_lengths[-1]`` (the imaginary parts of the self-conjugate ones are
  ignored).

Reference: NumPy's ``fftn``/``ifftn``/``rfftn``/``irfftn`` (in double
precision, rounded to the result type). Lowering: ``stablehlo.fft``. The
transform is linear: jvp applies it to the tangent; transposes (with JAX's
pairing ``Re(sum(a * b))`` between complex cotangents and values): ``FFT``
and ``IFFT`` are their own transposes (the DFT matrix is symmetric);
``RFFT``'s is the real part of the ``FFT`` of the cotangent zero-padded to
the full spectrum; ``IRFFT``'s is the conjugated ``RFFT`` of the cotangent,
divided by ``prod(fft_lengths)``, with the frequencies that stand for two
(all but 0 and, for even ``n``, ``n / 2``) doubled.
"""

from __future__ import annotations

import enum
from typing import Any

import numpy as np

from refimpl import dtypes, tracing
from refimpl._static_args import hashable_statics
from refimpl.core import ShapedArray
from refimpl.primitives import ad_helpers, batch_rules, elementwise, structural
from refimpl.primitives import elementwise as ew
from refimpl.primitives.base import Primitive
from refimpl.primitives.complex_parts import conj, real

__all__ = ["FftType", "fft"]

FFT_TYPES = ("FFT", "IFFT", "RFFT", "IRFFT")
_COMPLEX: dict[np.dtype[Any], np.dtype[Any]] = {
    np.dtype(np.float32): np.dtype(np.complex64),
    np.dtype(np.float64): np.dtype(np.complex128),
}
_REAL = {c: r for r, c in _COMPLEX.items()}

fft_p = Primitive("fft")


class FftType(enum.IntEnum):
    """``lax.FftType``: the four transforms (a string of the name works too)."""

    FFT = 0
    IFFT = 1
    RFFT = 2
    IRFFT = 3


@fft_p.def_abstract_eval
def _fft_abstract_eval(
    x: ShapedArray, *, fft_type: str, fft_lengths: tuple[int, ...]
) -> ShapedArray:
    k = len(fft_lengths)
    # unreachable from the public API: lax.fft checks the name before binding
    if fft_type not in FFT_TYPES:  # pragma: no cover
        raise TypeError(f"fft: fft_type must be one of {FFT_TYPES}, got {fft_type!r}")
    if x.ndim < k:  # ValueError as JAX 0.10.2's shape rule
        raise ValueError(
            f"fft: an operand of shape {x.shape} needs at least as many dimensions as "
            f"fft_lengths {tuple(fft_lengths)}"
        )
    if not 1 <= k <= 3:
        raise TypeError(f"fft: 1 to 3 fft_lengths, got {fft_lengths}")
    lengths = tuple(int(n) for n in fft_lengths)
    if fft_type == "RFFT":
        if x.dtype not in _COMPLEX:  # ValueError as JAX 0.10.2 (float16 and bfloat16 reach it)
            raise ValueError(f"fft: RFFT takes float32 or float64, got {x.dtype.name}")
        if x.shape[-k:] != lengths:
            # ValueError as JAX 0.10.2's shape rule (IRFFT's mismatch JAX finds only in MLIR)
            raise ValueError(f"fft: RFFT of shape {x.shape} with fft_lengths {lengths}")
        shape = (*x.shape[:-1], lengths[-1] // 2 + 1)
        return ShapedArray(shape, _COMPLEX[x.dtype], False)
    # unreachable from the public API: lax.fft makes the operand of these complex
    if x.dtype not in _REAL:  # pragma: no cover
        raise TypeError(f"fft: {fft_type} takes complex64 or complex128, got {x.dtype.name}")
    if fft_type == "IRFFT":
        expected = (*lengths[:-1], lengths[-1] // 2 + 1)
        if x.shape[-k:] != expected:
            raise TypeError(
                f"fft: IRFFT of shape {x.shape} with fft_lengths {lengths} (expects the last "
                f"dims {expected})"
            )
        return ShapedArray((*x.shape[:-1], lengths[-1]), _REAL[x.dtype], False)
    if x.shape[-k:] != lengths:
        raise ValueError(f"fft: {fft_type} of shape {x.shape} with fft_lengths {lengths}")
    return ShapedArray(x.shape, x.dtype, False)


@fft_p.def_impl
def _fft_impl(x: np.ndarray, *, fft_type: str, fft_lengths: tuple[int, ...]) -> np.ndarray:
    k = len(fft_lengths)
    axes = tuple(range(x.ndim - k, x.ndim))
    wide = x.astype(np.complex128 if dtypes.is_complex(x.dtype) else np.float64)
    out: np.ndarray
    dtype: np.dtype[Any]
    if fft_type == "FFT":
        out, dtype = np.fft.fftn(wide, axes=axes), x.dtype
    elif fft_type == "IFFT":
        out, dtype = np.fft.ifftn(wide, axes=axes), x.dtype
    elif fft_type == "RFFT":
        out, dtype = np.fft.rfftn(wide, axes=axes), _COMPLEX[x.dtype]
    else:
        out, dtype = np.fft.irfftn(wide, s=fft_lengths, axes=axes), _REAL[x.dtype]
    return np.asarray(out).astype(dtype)


@fft_p.def_lowering
def _fft_lowering(ctx, x, *, fft_type: str, fft_lengths: tuple[int, ...]):
    kind = ctx.hlo.FftTypeAttr.get(fft_type)
    out = ctx.hlo.fft(x, kind, list(fft_lengths), results=[ctx.ir_type(ctx.avals_out[0])])
    return [out]


@fft_p.def_batch
def _fft_batch(args, dims, **params):
    (x,), (d,) = args, dims
    return fft_p.bind(batch_rules.moveaxis(x, d, 0), **params), 0


@fft_p.def_jvp
def _fft_jvp(primals, tangents, **params):
    (x,), (t,) = primals, tangents
    out = fft_p.bind(x, **params)
    # unreachable from the public API: one operand, and the jvp trace calls a rule only when
    # some operand has a nonzero tangent (ad.JVPTrace.process_primitive)
    if ad_helpers.is_zero(t):  # pragma: no cover
        return out, ad_helpers.zero_tangent(ad_helpers.aval_of(out))
    return out, fft_p.bind(t, **params)


@fft_p.def_transpose
def _fft_transpose(ct, x, *, fft_type: str, fft_lengths: tuple[int, ...]):
    # unreachable from the public API: the backward pass skips an equation whose one output has
    # no cotangent and never passes a symbolic Zero to a single-output rule (ad.backward_pass)
    if isinstance(ct, ad_helpers.Zero):  # pragma: no cover
        return [ad_helpers.Zero(x.aval)]
    if fft_type in ("FFT", "IFFT"):
        return [fft_p.bind(ct, fft_type=fft_type, fft_lengths=fft_lengths)]
    ct_aval = ad_helpers.aval_of(ct)
    n = fft_lengths[-1]
    if fft_type == "RFFT":
        missing = n - ct_aval.shape[-1]
        zero = np.zeros((), ct_aval.dtype)
        config = [(0, 0, 0)] * (ct_aval.ndim - 1) + [(0, missing, 0)]
        full = structural.pad(ct, zero, config)
        spectrum = fft_p.bind(full, fft_type="FFT", fft_lengths=fft_lengths)
        return [real(spectrum)]
    half = fft_p.bind(ct, fft_type="RFFT", fft_lengths=fft_lengths)
    size = n // 2 + 1
    weights = np.full(size, 2.0)
    weights[0] = 1.0
    if n % 2 == 0:
        weights[-1] = 1.0
    weights = weights / float(np.prod(fft_lengths))
    complex_dtype = ad_helpers.aval_of(half).dtype
    scale = structural.broadcast_in_dim(
        np.asarray(weights, complex_dtype), ad_helpers.aval_of(half).shape, (ct_aval.ndim - 1,)
    )
    return [ew.mul(conj(half), scale)]


@hashable_statics("lax.fft", ("fft_type", "fft_lengths"))  # JAX 0.10.2: a jit, these static
def fft(x: Any, fft_type: str, fft_lengths: Any) -> Any:
    """``lax.fft``: see the module docstring (``fft_type`` a string)."""
    kind = fft_type.name if isinstance(fft_type, FftType) else fft_type
    if kind not in FFT_TYPES:
        # an unknown name is a ValueError, another type a TypeError, as JAX 0.10.2
        raise (ValueError if isinstance(kind, str) else TypeError)(
            f"fft: fft_type must be a FftType or one of {FFT_TYPES}, got {fft_type!r}"
        )
    fft_lengths = tuple(int(n) for n in fft_lengths)
    converted = _convert_operand(x, kind)
    if not fft_lengths:
        # a transform over no axes: x (converted) itself, as JAX's lax.fft; a
        # new array, as its jit returns (so a NumPy value under vmap does not
        # come back as itself: batching._vmap_outputs)
        return converted if converted is not x else elementwise.copy(x)
    x = converted
    return fft_p.bind(x, fft_type=kind, fft_lengths=fft_lengths)


def _convert_operand(x: Any, kind: str) -> Any:
    """As JAX 0.10.2's lax.fft: RFFT takes a real operand, the others a complex
    one. A bool or integer operand becomes float32 (float64 from 64-bit ones)
    first; then, but for RFFT, complex (complex128 from float64, complex64 from
    the other floats); canonicalized for the x64 flag."""
    dtype = tracing.get_aval(x, "fft", 0).dtype
    if kind == "RFFT" and dtypes.is_complex(dtype):  # ValueError, as JAX
        raise ValueError(f"fft: RFFT takes a real operand, got {dtype.name}")
    target = dtype
    if not dtypes.is_inexact(dtype):
        target = np.dtype(np.float64 if dtype.itemsize == 8 else np.float32)
    if kind != "RFFT":
        wide = target in (np.float64, np.complex128)
        target = np.dtype(np.complex128 if wide else np.complex64)
    target = dtypes.canonicalize_dtype(target)
    return x if target == dtype else elementwise.convert_element_type(x, target)
