"""The basic samplers: ``bits`` (the Threefry counters), the float samplers
built on uniform mantissa bits (``uniform``, ``normal``, ``truncated_normal``,
``bernoulli``...) and the integer ones (``randint``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from refimpl import dtypes, lax, tracing
from refimpl import numpy as rnp
from refimpl.random import _keys
from refimpl.random._keys import (
    _UINT_OF_BITS,
    _as_shape,
    _hash_counters,
    _key_data_of,
    _run,
    _split_data,
)

# --- bits ------------------------------------------------------------------------------


def _random_bits(data: Any, bit_width: int, shape: tuple[int, ...]) -> Any:
    user = _keys._USER_IMPLS.get(_keys._state.active)
    if user is not None:  # define_prng_impl's
        return user.random_bits(data, bit_width, shape)
    if _keys._state.active in ("rbg", "unsafe_rbg"):  # XLA's generator
        _, out = lax.rng_bit_generator(data, shape, _UINT_OF_BITS[bit_width])
        return out
    if _keys._state.active != "threefry2x32":
        return _keys.counter_bits(data, bit_width, shape)
    y1, y2 = _hash_counters(data, shape)
    if bit_width == 64:
        u64 = _UINT_OF_BITS[64]
        hi = lax.convert_element_type(y1, u64)
        lo = lax.convert_element_type(y2, u64)
        return lax.bitwise_or(lax.shift_left(hi, np.uint64(32)), lo)
    mixed = lax.bitwise_xor(y1, y2)
    if bit_width == 32:
        return mixed
    return lax.convert_element_type(mixed, _UINT_OF_BITS[bit_width])


def bits(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Uniform random bits as unsigned integers (default uint32; uint64 with x64)."""
    data, _ = _key_data_of("bits", key)
    dtype = dtypes.canonicalize_dtype(np.uint64 if dtype is None else dtype)
    if not dtypes.is_unsigned_int(dtype):
        raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dtype}")
    return _run("bits", _random_bits, (dtype.itemsize * 8, _as_shape("bits", shape)), data)


def random_bits(keys: Any, bit_width: int, shape: Sequence[int]) -> Any:
    """``bit_width`` (8, 16, 32 or 64) random bits of ``shape`` as that
    unsigned type (JAX 0.10.2's ``jax._src.prng.random_bits``, which its
    tests call; not exported from jax.random, whose ``bits`` takes a dtype)."""
    if bit_width not in _UINT_OF_BITS:
        raise TypeError(f"random_bits: bit_width must be 8, 16, 32 or 64, got {bit_width}")
    return bits(keys, shape, _UINT_OF_BITS[bit_width])


# --- floats ---------------------------------------------------------------------------


def _float_dtype(name: str, dtype: Any) -> np.dtype:
    dtype = dtypes.canonicalize_dtype(float if dtype is None else dtype)
    if not dtypes.is_floating(dtype):
        raise ValueError(f"dtype argument to `{name}` must be a float dtype, got {dtype}")
    return dtype


def _strong(value: Any, dtype: np.dtype) -> Any:
    """``value`` converted to a strongly typed ``dtype`` (as lax.convert_element_type)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return np.asarray(value, dtype)
    return lax.convert_element_type(value, dtype)


def _check_broadcast(
    name: str, shape: tuple[int, ...], *others: Any, error: type[Exception] = ValueError
) -> None:
    for other in others:
        other_shape = tuple(np.shape(other))
        try:
            joined = np.broadcast_shapes(shape, other_shape)
        except ValueError:
            joined = None
        if joined != shape:
            raise error(
                f"{name} parameter shapes must be broadcast-compatible with shape argument, "
                f"and the result of broadcasting the shapes must equal the shape argument, "
                f"but got result {joined} for shape argument {shape}."
            )


def _uniform_shape_error(shape: tuple[int, ...], minval: Any, maxval: Any) -> type[Exception]:
    """The class of JAX 0.10.2's error for a ``minval``/``maxval`` that does
    not broadcast to ``shape`` (the other samplers check first, a
    ValueError; uniform checks nothing and its arithmetic fails): a TypeError
    where ``minval``, ``maxval`` and the sample do not broadcast together
    (``mul``) or ``minval`` has more axes than ``shape`` (``max``); else a
    ValueError, where the larger sample's reshape to ``shape`` fails to lower."""
    shapes = [tuple(np.shape(v)) for v in (minval, maxval)]
    try:
        np.broadcast_shapes(shape, *shapes)
    except ValueError:
        return TypeError
    # (max takes a 0-d sample with any minval: that one fails at lowering too)
    return TypeError if shape and len(shapes[0]) > len(shape) else ValueError


def _uniform(data: Any, shape: tuple[int, ...], dtype: np.dtype, minval: Any, maxval: Any):
    finfo = dtypes.finfo(dtype)
    nbits, nmant = finfo.bits, finfo.nmant
    if nbits not in (8, 16, 32, 64):
        raise TypeError(f"uniform only accepts 8-, 16-, 32-, or 64-bit dtypes, got {dtype}")
    minval = _strong(minval, dtype)
    maxval = _strong(maxval, dtype)
    error = _uniform_shape_error(shape, minval, maxval)
    _check_broadcast("uniform", shape, minval, maxval, error=error)
    rng_bits = 8 if nmant < 8 else nbits
    uint = _UINT_OF_BITS[nbits]
    raw = _random_bits(data, rng_bits, shape)
    if rng_bits != nbits:
        raw = lax.convert_element_type(raw, uint)
    mantissa = lax.shift_right_logical(raw, np.asarray(rng_bits - nmant, uint))
    one_bits = np.array(1.0, dtype).view(uint)
    in_one_two = lax.bitcast_convert_type(lax.bitwise_or(mantissa, one_bits), dtype)
    floats = lax.sub(in_one_two, np.asarray(1.0, dtype))
    width = rnp.subtract(maxval, minval)
    if shape:
        width, low = rnp.broadcast_to(width, shape), rnp.broadcast_to(minval, shape)
    else:
        low = minval
    return rnp.maximum(minval, lax.mul_add(floats, width, low))


def uniform(
    key: Any, shape: Sequence[int] = (), dtype: Any = None, minval: Any = 0.0, maxval: Any = 1.0
) -> Any:
    """Uniform floats in ``[minval, maxval)`` (see the module docstring)."""
    data, _ = _key_data_of("uniform", key)
    dtype = _float_dtype("uniform", dtype)
    shape = _as_shape("uniform", shape)
    error = _uniform_shape_error(shape, minval, maxval)
    _check_broadcast("uniform", shape, minval, maxval, error=error)
    return _run("uniform", _uniform, (shape, dtype), data, minval, maxval)


def _normal(data: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    lo = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype), dtype=dtype)
    u = _uniform(data, shape, dtype, lo, 1.0)
    return lax.mul(np.asarray(np.sqrt(2), dtype), lax.erf_inv(u))


def normal(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Standard normal samples: ``sqrt(2) * erf_inv(u)``, ``u`` uniform in ``(-1, 1)``.

    Complex dtypes: real and imaginary parts from the two halves of
    ``split(key)``, each scaled by ``1/sqrt(2)``.
    """
    data, _ = _key_data_of("normal", key)
    dtype = dtypes.canonicalize_dtype(float if dtype is None else dtype)
    shape = _as_shape("normal", shape)
    if not dtypes.is_floating(dtype) and not dtypes.is_complex(dtype):
        raise ValueError(
            f"dtype argument to `normal` must be a float or complex dtype, got {dtype}"
        )
    return _run("normal", _normal_or_complex, (shape, dtype), data)


def _normal_or_complex(data: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    if not dtypes.is_complex(dtype):
        return _normal(data, shape, dtype)
    real = np.dtype(np.float32 if dtype == np.complex64 else np.float64)
    keys = _split_data(data, (2,))
    re = rnp.astype(_normal(keys[0], shape, real), dtype)
    im = rnp.astype(_normal(keys[1], shape, real), dtype)
    # JAX divides by sqrt(2) in its jitted sampler, where XLA turns a division by
    # a constant into a multiplication by the constant's reciprocal: bit for bit,
    # the samples are (re + 1j im) * (1 / sqrt 2)
    scale = np.asarray(np.reciprocal(np.sqrt(np.asarray(2, real))), dtype)
    return rnp.multiply(rnp.add(re, rnp.multiply(1j, im)), scale)


def truncated_normal(
    key: Any, lower: Any, upper: Any, shape: Sequence[int] | None = None, dtype: Any = None
) -> Any:
    """Normal samples conditioned on ``lower < x < upper``: ``sqrt(2) erf_inv(u)``
    with ``u`` uniform between ``erf(lower/sqrt2)`` and ``erf(upper/sqrt2)``,
    clipped into the open interval."""
    data, _ = _key_data_of("truncated_normal", key)
    dtype = _float_dtype("truncated_normal", dtype)
    if shape is None:
        shape = tuple(np.broadcast_shapes(np.shape(lower), np.shape(upper)))
    else:
        shape = _as_shape("truncated_normal", shape)
        _check_broadcast("truncated_normal", shape, lower, upper)
    return _run("truncated_normal", _truncated_normal, (shape, dtype), data, lower, upper)


def _truncated_normal(
    data: Any, shape: tuple[int, ...], dtype: np.dtype, lower: Any, upper: Any
) -> Any:
    sqrt2 = np.asarray(np.sqrt(2), dtype)
    lower = _strong(lower, dtype)
    upper = _strong(upper, dtype)
    # XLA rewrites a division by a constant into a product with its rounded
    # reciprocal (JAX's lower / sqrt2 runs as this product): written so here,
    # the reference computes the same bits without modelling that rewrite
    inv_sqrt2 = np.asarray(np.asarray(1, dtype) / sqrt2, dtype)
    a = lax.erf(lax.mul(lower, inv_sqrt2))
    b = lax.erf(lax.mul(upper, inv_sqrt2))
    u = _uniform(data, shape, dtype, a, b)
    out = lax.mul(sqrt2, lax.erf_inv(u))
    # the clip bounds are not differentiated (JAX's stop_gradient: nextafter
    # has no derivative rule); the gradient flows through erf and the sample
    low = lax.nextafter(lax.stop_gradient(lower), np.asarray(np.inf, dtype))
    high = lax.nextafter(lax.stop_gradient(upper), np.asarray(-np.inf, dtype))
    return rnp.clip(out, low, high)


def exponential(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Exponential(1) samples: ``-log1p(-u)``."""
    data, _ = _key_data_of("exponential", key)
    dtype = _float_dtype("exponential", dtype)
    return _run("exponential", _exponential, (_as_shape("exponential", shape), dtype), data)


def _exponential(data: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    u = _uniform(data, shape, dtype, 0.0, 1.0)
    return lax.neg(lax.log1p(lax.neg(u)))


def laplace(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Laplace(0, 1) samples: ``sign(u) * log1p(-|u|)``, ``u`` uniform in ``(-1, 1)``."""
    data, _ = _key_data_of("laplace", key)
    dtype = _float_dtype("laplace", dtype)
    return _run("laplace", _laplace, (_as_shape("laplace", shape), dtype), data)


def _laplace(data: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    lo = -1.0 + float(dtypes.finfo(dtype).epsneg)
    u = _uniform(data, shape, dtype, lo, 1.0)
    return lax.mul(lax.sign(u), lax.log1p(lax.neg(lax.abs(u))))


def _uniform_from_tiny(data: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    """JAX's ``uniform(key, shape, dtype, minval=tiny, maxval=1)`` inside a
    sampler, as XLA compiles it: ``max(tiny, f - 1)`` with ``f`` in ``[1, 2)``
    (:func:`_uniform`'s random mantissa under the exponent of 1.0).

    JAX's samplers pass these bounds as constants of their program, and XLA's
    algebraic simplifier rewrites ``(f - 1) * (1 - tiny) + tiny``: the width
    ``1 - tiny`` folds to 1 (it rounds to 1 in every float dtype), the product
    by 1 goes, and ``(f + -1) + tiny`` is reassociated into ``f + (-1 + tiny)``,
    whose constant also rounds to -1. For float32 and bfloat16 this is the
    value of the unsimplified formula (adding ``tiny = 2**-126`` to a nonzero
    multiple of ``2**-23`` or ``2**-7`` changes nothing); for float16 it is not
    (``tiny = 2**-14`` against multiples of ``2**-10``: 1 sample in 8 differs),
    and JAX's float16 ``gumbel``/``logistic`` are computed from this ``u``
    (checked bit for bit on 10,000 samples per key; the optimized HLO of
    ``jit(lambda k: gumbel(k, (2000,), float16))`` has no addition of tiny).
    """
    tiny = np.asarray(dtypes.finfo(dtype).tiny, dtype)
    one = _uniform(data, shape, dtype, 0.0, 1.0)  # f - 1: width 1, no offset
    return rnp.maximum(tiny, one)


def logistic(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Logistic samples: ``log(u) - log1p(-u)``, ``u`` uniform in ``[tiny, 1)``
    as JAX's compiled program draws it (:func:`_uniform_from_tiny`)."""
    data, _ = _key_data_of("logistic", key)
    dtype = _float_dtype("logistic", dtype)
    return _run("logistic", _logistic, (_as_shape("logistic", shape), dtype), data)


def _logistic(data: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    u = _uniform_from_tiny(data, shape, dtype)
    return lax.sub(lax.log(u), lax.log1p(lax.neg(u)))


def _gumbel_mode(mode: str | None) -> str:
    mode = "low" if mode is None else mode
    if mode not in ("highest", "high", "low"):
        raise ValueError(f"Must provide valid mode for gumbel got: {mode}")
    return mode


def _u64_fraction_to_f32(hi: Any, lo: Any) -> Any:
    """The float32 nearest below the 64-bit fixed-point fraction ``hi:lo``
    (in (0, 1)): the leading one found with ``clz``, the next 23 bits the
    mantissa, the exponent from the leading zeros (JAX's ``_safe_int_to_float``)."""
    hiclz, loclz = lax.clz(hi), lax.clz(lo)
    full = lax.eq(hiclz, np.uint32(32))
    mantissa = lax.bitwise_or(
        lax.shift_left(hi, hiclz),
        lax.select(
            full,
            lax.shift_left(lo, loclz),
            lax.shift_right_logical(lo, lax.sub(np.uint32(32), hiclz)),
        ),
    )
    mantissa = lax.bitwise_and(
        lax.shift_right_logical(mantissa, np.uint32(8)), np.uint32((1 << 23) - 1)
    )
    zeros = lax.select(full, lax.add(loclz, np.uint32(32)), hiclz)
    exponent = lax.shift_left(lax.sub(np.uint32(126), zeros), np.uint32(23))
    exponent = lax.bitwise_and(exponent, np.uint32((1 << 30) - (1 << 22)))
    return lax.bitcast_convert_type(lax.bitwise_or(exponent, mantissa), np.float32)


def _gumbel_highest(data: Any, shape: tuple[int, ...]) -> Any:
    """float32 ``mode="highest"`` (JAX's): 64 random bits per sample as a
    fraction ``x``, ``-log(-log1p(-x))`` below 1/2 and ``-log(-log(1 - x))``
    (``1 - x`` exact in 64-bit fixed point) above."""
    both = _random_bits(data, 32, (2, *shape))
    hi, lo = both[0], both[1]
    neg_hi, neg_lo = lax.bitwise_not(hi), lax.bitwise_not(lo)
    carry = lax.convert_element_type(lax.eq(neg_lo, np.uint32(0xFFFFFFFF)), np.uint32)
    neg_hi, neg_lo = lax.add(neg_hi, carry), lax.add(neg_lo, np.uint32(1))
    flip = lax.lt(hi, np.uint32(1 << 31))
    x = _u64_fraction_to_f32(lax.select(flip, hi, neg_hi), lax.select(flip, lo, neg_lo))
    small = lax.neg(lax.log(lax.neg(lax.log1p(lax.neg(x)))))
    large = lax.neg(lax.log(lax.neg(lax.log(x))))
    return lax.select(flip, small, large)


def _gumbel(data: Any, shape: tuple[int, ...], dtype: np.dtype, mode: str | None) -> Any:
    mode = _gumbel_mode(mode)
    info = dtypes.finfo(dtype)
    if mode == "highest" and dtype == np.float32:
        return _gumbel_highest(data, shape)
    if mode in ("high", "highest"):
        both = _uniform(data, (2, *shape), dtype, 0.0, 1.0)
        high, low = both[0], both[1]
        fine = rnp.add(
            rnp.add(high, rnp.multiply(np.asarray(2.0**-info.nmant, dtype), low)),
            np.asarray(info.tiny, dtype),
        )
        x = rnp.where(rnp.greater_equal(high, np.asarray(0.5, dtype)), high, fine)
        return lax.neg(lax.log(lax.neg(lax.log1p(lax.neg(x)))))
    u = _uniform_from_tiny(data, shape, dtype)
    return lax.neg(lax.log(lax.neg(lax.log(u))))


def gumbel(key: Any, shape: Sequence[int] = (), dtype: Any = None, mode: str | None = None):
    """Standard Gumbel samples: ``-log(-log(u))``, ``u`` uniform in ``[tiny, 1)``
    as JAX's compiled program draws it (:func:`_uniform_from_tiny`); ``mode="high"``
    uses two uniforms per sample for a finer ``u`` near 0."""
    data, _ = _key_data_of("gumbel", key)
    dtype = _float_dtype("gumbel", dtype)
    static = (_as_shape("gumbel", shape), dtype, _gumbel_mode(mode))
    return _run("gumbel", _gumbel, static, data)


def bernoulli(key: Any, p: Any = 0.5, shape: Sequence[int] | None = None, mode: str = "low"):
    """Booleans ``uniform(key, shape) < p`` (``mode="high"``: ``u2 * 2**-nmant < p - u1``)."""
    data, _ = _key_data_of("bernoulli", key)
    if mode not in ("high", "low"):
        raise ValueError(f"got mode={mode!r}, expected 'high' or 'low'")
    p_dtype = tracing.get_aval(p, "bernoulli", 1).dtype
    if not dtypes.is_floating(p_dtype):
        raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {p_dtype}.")
    shape = tuple(np.shape(p)) if shape is None else _as_shape("bernoulli", shape)
    _check_broadcast("bernoulli", shape, p)
    return _run("bernoulli", _bernoulli, (shape, mode), data, p)


def _bernoulli(data: Any, shape: tuple[int, ...], mode: str, p: Any) -> Any:
    p_dtype = tracing.get_aval(p, "bernoulli", 1).dtype
    p = lax.convert_element_type(p, p_dtype)
    if mode == "high":
        both = _uniform(data, (2, *shape), p_dtype, 0.0, 1.0)
        u1 = both[0]
        u2 = rnp.multiply(both[1], np.asarray(2.0 ** -dtypes.finfo(p_dtype).nmant, p_dtype))
        return rnp.less(u2, rnp.subtract(p, u1))
    return rnp.less(_uniform(data, shape, p_dtype, 0.0, 1.0), p)


# --- integers ---------------------------------------------------------------------------


def _clip_convert(value: Any, dtype: np.dtype) -> Any:
    """An integer array converted to ``dtype``, clipped to its range (not wrapped)."""
    src = tracing.get_aval(value, "randint", 0).dtype
    lo = max(int(dtypes.iinfo(dtype).min), int(dtypes.iinfo(src).min))
    hi = min(int(dtypes.iinfo(dtype).max), int(dtypes.iinfo(src).max))
    clipped = rnp.clip(value, np.asarray(lo, src), np.asarray(hi, src))
    return rnp.astype(clipped, dtype)


def randint(key: Any, shape: Sequence[int], minval: Any, maxval: Any, dtype: Any = None) -> Any:
    """Integers in ``[minval, maxval)``: two words of random bits ``hi``, ``lo``
    (from the two keys of ``split(key)``) reduced as ``(hi * 2**nbits + lo) mod span``,
    computed without overflow; ``span`` is 1 when ``maxval <= minval`` (the
    result is then ``minval``). 8- and 16-bit dtypes are sampled as int32."""
    data, _ = _key_data_of("randint", key)
    dtype = dtypes.canonicalize_dtype(int if dtype is None else dtype)
    if not dtypes.is_integer(dtype):
        raise TypeError(f"randint only accepts integer dtypes, got {dtype}")
    shape = _as_shape("randint", shape)
    _check_broadcast("randint", shape, minval, maxval)
    return _run("randint", _randint_of_dtype, (shape, dtype), data, minval, maxval)


def _randint_of_dtype(
    data: Any, shape: tuple[int, ...], dtype: np.dtype, minval: Any, maxval: Any
) -> Any:
    info = dtypes.iinfo(dtype)
    minval = rnp.asarray(minval)
    maxval = rnp.asarray(maxval)
    sampling = dtype
    if info.bits < 32:
        sampling = np.dtype(np.int32)
        minval = rnp.clip(rnp.astype(minval, np.int32), int(info.min), int(info.max))
        maxval = rnp.clip(rnp.astype(maxval, np.int32), int(info.min), int(info.max) + 1)
    out = _randint(data, shape, minval, maxval, sampling)
    return rnp.astype(out, dtype)


def _randint(data: Any, shape: tuple[int, ...], minval: Any, maxval: Any, dtype: np.dtype):
    _check_broadcast("randint", shape, minval, maxval)
    if not dtypes.is_integer(minval.dtype):
        minval = rnp.astype(minval, int)
    if not dtypes.is_integer(maxval.dtype):
        maxval = rnp.astype(maxval, int)
    top = _clip_convert(np.asarray(dtypes.iinfo(dtype).max, dtype), maxval.dtype)
    maxval_out_of_range = rnp.greater(maxval, top)
    minval = _clip_convert(minval, dtype)
    maxval = _clip_convert(maxval, dtype)
    nbits = dtypes.iinfo(dtype).bits
    keys = _split_data(data, (2,))
    higher = _random_bits(keys[0], nbits, shape)
    lower = _random_bits(keys[1], nbits, shape)
    unsigned = _UINT_OF_BITS[nbits]
    span = rnp.astype(rnp.subtract(maxval, minval), unsigned)
    span = rnp.where(rnp.less_equal(maxval, minval), np.asarray(1, unsigned), span)
    # one more when maxval is beyond the dtype; a full-range span wraps to 0,
    # and "mod 0" is the identity in XLA, which is what is wanted there
    widen = rnp.logical_and(maxval_out_of_range, rnp.greater(maxval, minval))
    span = rnp.where(widen, rnp.add(span, np.asarray(1, unsigned)), span)
    span = rnp.broadcast_to(span, shape) if np.shape(span) != shape else span
    # 2**nbits mod span, as ((2**(nbits/2) mod span)**2) mod span
    half = lax.rem(rnp.full_like(span, 2 ** (nbits // 2)), span)
    multiplier = lax.rem(lax.mul(half, half), span)
    offset = lax.add(lax.mul(lax.rem(higher, span), multiplier), lax.rem(lower, span))
    offset = lax.rem(offset, span)
    return rnp.add(minval, rnp.astype(offset, dtype))


__all__ = [
    "bernoulli",
    "bits",
    "exponential",
    "gumbel",
    "laplace",
    "logistic",
    "normal",
    "randint",
    "truncated_normal",
    "uniform",
]
