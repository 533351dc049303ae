"""``lax.rng_bit_generator``: XLA's stateless RngBitGenerator, bit for bit as
XLA computes it on CPU.

``rng_bit_generator(key, shape, dtype=uint32, algorithm=RNG_DEFAULT)``
returns ``(new_key, bits)``. The key is a ``uint32[4]`` array read as the
``uint64[2]`` state ``(k, c)`` of XLA's generator (``k = key[0] | key[1] << 32``,
``c = key[2] | key[3] << 32``); ``new_key`` keeps ``k`` and advances ``c`` by the
number of counters used. ``bits`` are unsigned (uint8/16/32/64; a narrower
dtype takes the low bits of uint32 draws).

``RNG_THREE_FRY``
    Counter ``c + j`` (split into its low and high 32 bits) hashed by
    Threefry-2x32 under ``k`` (refimpl/primitives/prng.py) gives two words per
    counter. For 32 bits or fewer the shape is halved along its first even
    dim (or else its largest one, rounded up) and the two words of counter
    ``j`` fill positions ``2i`` and ``2i + 1`` along that dim; ``c`` advances
    by the halved size. For 64 bits, one counter per element (``lo | hi << 32``),
    ``c`` advances by the size.
``RNG_PHILOX``
    Philox-4x32 with 10 rounds under ``k`` of the 128-bit counter whose low
    64 bits are ``c + j`` (carrying into the high 64 bits, which start as
    ``k``) gives four words per counter, laid out round-robin (element
    ``i`` is word ``i % 4`` of counter ``i // 4``; for 64 bits, element ``i``
    is the word pair ``i % 2`` of counter ``i // 2``). ``c`` advances by the
    number of counters (the carry is not kept).
``RNG_DEFAULT``
    The platform's choice: XLA's CPU backend picks Philox, and so does the
    reference.

Under ``vmap`` JAX 0.10.2 draws every row from the first key (bits of shape
``(batch, *shape)``) and only that key advances; refimpl does the same.
"""

from __future__ import annotations

import enum
import warnings
from typing import Any

import numpy as np

from refimpl import dtypes
from refimpl.core import ShapedArray
from refimpl.primitives import structural
from refimpl.primitives.base import Primitive, as_int_tuple
from refimpl.primitives.prng import threefry2x32_p
from refimpl.transforms.ad_util import Zero, tangent_aval

__all__ = ["RandomAlgorithm", "rng_bit_generator"]

_U32 = np.dtype(np.uint32)
_U64 = np.dtype(np.uint64)
_BIT_DTYPES = tuple(np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))

_PHILOX_MUL = (0xD2511F53, 0xCD9E8D57)
_PHILOX_KEY_STEP = (0x9E3779B9, 0xBB67AE85)


class RandomAlgorithm(enum.IntEnum):
    """The algorithm of :func:`rng_bit_generator` (JAX's values)."""

    RNG_DEFAULT = 0
    RNG_THREE_FRY = 1
    RNG_PHILOX = 2

    def __str__(self) -> str:
        return self.name


rng_bit_generator_p = Primitive("rng_bit_generator", multiple_results=True)


@rng_bit_generator_p.def_abstract_eval
def _abstract_eval(key: ShapedArray, *, shape, dtype, algorithm) -> list[ShapedArray]:
    # JAX checks the key only when lowering (an AssertionError); refimpl says so on
    # every path, with the same condition
    u32_key = key.shape == (4,) and key.dtype == _U32
    u64_key = key.shape == (2,) and key.dtype == _U64
    if not (u32_key or u64_key):
        raise TypeError(
            f"rng_bit_generator: key must be a uint32[4] (or uint64[2]) array, got "
            f"{key.dtype.name}{list(key.shape)}"
        )
    return [ShapedArray(key.shape, key.dtype, key.weak_type), ShapedArray(shape, dtype)]


def _lo_hi(x: Any) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(x, _U64)
    return (x & np.uint64(0xFFFFFFFF)).astype(_U32), (x >> np.uint64(32)).astype(_U32)


def _join64(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return lo.astype(_U64) | (hi.astype(_U64) << np.uint64(32))


def _halved(shape: tuple[int, ...]) -> tuple[int | None, tuple[int, ...]]:
    """XLA's split of a shape for two words per counter: the dim and the half shape."""
    if not shape:
        return None, (1,)
    dim = next((i for i, s in enumerate(shape) if s % 2 == 0), None)
    if dim is None:
        dim = int(np.argmax(shape))
    half = list(shape)
    half[dim] = -(-shape[dim] // 2)
    return dim, tuple(half)


def _threefry_bits(k: np.uint64, c: np.uint64, shape, bits: int):
    k_lo, k_hi = _lo_hi(k)
    if bits == 64:
        count = int(np.prod(shape, dtype=np.int64))
        y0, y1 = threefry2x32_p.impl(k_lo, k_hi, *_lo_hi(c + np.arange(count, dtype=_U64)))
        return _join64(y0, y1).reshape(shape), count
    dim, half = _halved(shape)
    count = int(np.prod(half, dtype=np.int64))
    y0, y1 = threefry2x32_p.impl(k_lo, k_hi, *_lo_hi(c + np.arange(count, dtype=_U64)))
    if dim is None:
        return y0.reshape(()), count
    pairs = np.stack([y0.reshape(half), y1.reshape(half)], axis=dim + 1)
    full = list(shape)
    full[dim] = 2 * half[dim]
    return pairs.reshape(full)[tuple(slice(0, s) for s in shape)], count


def _philox4x32(words: list[np.ndarray], key: tuple[np.ndarray, np.ndarray]) -> list[np.ndarray]:
    x = [np.asarray(w, _U32) for w in words]
    k0, k1 = np.uint32(key[0]), np.uint32(key[1])
    for _ in range(10):
        p0 = x[0].astype(_U64) * np.uint64(_PHILOX_MUL[0])
        p1 = x[2].astype(_U64) * np.uint64(_PHILOX_MUL[1])
        hi0, lo0 = (p0 >> np.uint64(32)).astype(_U32), p0.astype(_U32)
        hi1, lo1 = (p1 >> np.uint64(32)).astype(_U32), p1.astype(_U32)
        x = [hi1 ^ x[1] ^ k0, lo1, hi0 ^ x[3] ^ k1, lo0]
        k0 = np.uint32(k0 + np.uint32(_PHILOX_KEY_STEP[0]))
        k1 = np.uint32(k1 + np.uint32(_PHILOX_KEY_STEP[1]))
    return x


def _philox_bits(k: np.uint64, c: np.uint64, shape, bits: int):
    size = int(np.prod(shape, dtype=np.int64))
    words = 2 * size if bits == 64 else size
    count = -(-words // 4)
    low = c + np.arange(count, dtype=_U64)
    high = np.where(low < c, k + np.uint64(1), k).astype(_U64)  # the 128-bit carry
    x = _philox4x32([*_lo_hi(low), *_lo_hi(high)], _lo_hi(k))
    lanes = [_join64(x[0], x[1]), _join64(x[2], x[3])] if bits == 64 else x
    return np.stack(lanes, axis=1).reshape(-1)[:size].reshape(shape), count


@rng_bit_generator_p.def_impl
def _impl(key, *, shape, dtype, algorithm):
    key = np.asarray(key)
    state = key.astype(_U64) if key.dtype == _U64 else _join64(key[0::2], key[1::2])
    k, c = state[0], state[1]
    bits = 8 * np.dtype(dtype).itemsize
    with np.errstate(over="ignore"):
        if algorithm == RandomAlgorithm.RNG_THREE_FRY:
            out, count = _threefry_bits(k, c, shape, bits)
        else:  # RNG_PHILOX, and RNG_DEFAULT as XLA's CPU backend
            out, count = _philox_bits(k, c, shape, bits)
        new_state = np.array([k, c + np.uint64(count)], _U64)
    if key.dtype == _U32:
        lo, hi = _lo_hi(new_state)
        new_key = np.stack([lo, hi], axis=1).reshape(4)
    else:
        new_key = new_state
    return [new_key, np.asarray(out).astype(dtype)]


@rng_bit_generator_p.def_lowering
def _lowering(ctx, key, *, shape, dtype, algorithm):
    """StableHLO's rng_bit_generator on the uint64[2] state; XLA expands it into
    the computation the reference does."""
    hlo = ctx.hlo
    u32_key = ctx.avals_in[0].dtype == _U32
    if u32_key:
        key = hlo.bitcast_convert(
            ctx.tensor_type((2,), _U64), hlo.reshape(ctx.tensor_type((2, 2), _U32), key)
        )
    name = {0: "DEFAULT", 1: "THREE_FRY", 2: "PHILOX"}[int(algorithm)]
    new_key, out = hlo.RngBitGeneratorOp(
        key.type, ctx.tensor_type(shape, dtype), hlo.RngAlgorithmAttr.get(name), key
    ).results
    if u32_key:
        new_key = hlo.reshape(
            ctx.tensor_type((4,), _U32),
            hlo.bitcast_convert(ctx.tensor_type((2, 2), _U32), new_key),
        )
    return [new_key, out]


@rng_bit_generator_p.def_jvp
def _jvp(primals, tangents, **params):
    outs = rng_bit_generator_p.bind(*primals, **params)
    return outs, [Zero(tangent_aval(ShapedArray(np.shape(o), o.dtype))) for o in outs]


@rng_bit_generator_p.def_batch
def _batch(args, dims, *, shape, dtype, algorithm):
    """JAX 0.10.2's rule: one draw of shape ``(batch, *shape)`` from the first
    key, which alone advances."""
    (keys,), (dim,) = args, dims
    if dim is None:
        outs = rng_bit_generator_p.bind(keys, shape=shape, dtype=dtype, algorithm=algorithm)
        return outs, [None, None]
    if dim != 0:
        keys = structural.transpose(keys, (dim, *(i for i in range(np.ndim(keys)) if i != dim)))
    batch, width = np.shape(keys)
    first = structural.reshape(structural.slice(keys, (0, 0), (1, width)), (width,))
    new_key, out = rng_bit_generator_p.bind(
        first, shape=(batch, *shape), dtype=dtype, algorithm=algorithm
    )
    rest = structural.slice(keys, (1, 0), (batch, width))
    new_keys = structural.concatenate([structural.reshape(new_key, (1, width)), rest], 0)
    return [new_keys, out], [0, 0]


def rng_bit_generator(
    key: Any,
    shape: Any,
    dtype: Any = np.uint32,
    algorithm: RandomAlgorithm = RandomAlgorithm.RNG_DEFAULT,
    *,
    out_sharding: Any = None,
) -> tuple[Any, Any]:
    """XLA's stateless bit generator: ``(new_key, bits)`` (see the module docstring)."""
    del out_sharding  # one device: nothing to place
    shape = as_int_tuple("rng_bit_generator", shape, "shape")
    requested = np.dtype(dtype)
    dtype = dtypes.canonicalize_dtype(dtype)
    if dtype != requested:
        warnings.warn(
            f"Explicitly requested dtype {requested.name} requested in rng_bit_generator is "
            "not available, and will be truncated to dtype "
            f"{dtype.name}. To enable more dtypes, set the jax_enable_x64 configuration "
            "option or the JAX_ENABLE_X64 shell environment variable. See "
            "https://github.com/jax-ml/jax#current-gotchas for more.",
            UserWarning,
            stacklevel=2,
        )
    if dtype not in _BIT_DTYPES:
        raise TypeError(f"rng_bit_generator: unsupported dtype {dtype}")
    try:
        algorithm = RandomAlgorithm(algorithm)
    except ValueError:
        raise ValueError(
            f"rng_bit_generator: algorithm must be a lax.RandomAlgorithm, got {algorithm!r}"
        ) from None
    new_key, bits = rng_bit_generator_p.bind(key, shape=shape, dtype=dtype, algorithm=algorithm)
    return new_key, bits
