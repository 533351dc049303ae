"""The primitives under ``refimpl.random``: the Threefry-2x32 hash and
``bitcast_convert_type`` (used to turn random bits into floats).

``threefry2x32(k1, k2, x1, x2) -> (y1, y2)``
    Threefry-2x32 with 20 rounds (Salmon et al., "Parallel random numbers:
    as easy as 1, 2, 3", SC 2011), applied elementwise to uint32 arrays of
    equal shape (rank-0 operands broadcast). With the key schedule
    ``ks = (k1, k2, k1 ^ k2 ^ 0x1BD11BDA)`` the state starts as
    ``(x1 + ks[0], x2 + ks[1])`` and then, for ``i = 1..5``, four rounds

        x1 = x1 + x2;  x2 = rotl32(x2, r) ^ x1

    with ``r`` taken from ``R[(i - 1) % 2]`` where ``R = ((13, 15, 26, 6),
    (17, 29, 16, 24))``, followed by the key injection

        x1 = x1 + ks[i % 3];  x2 = x2 + ks[(i + 1) % 3] + i

    All additions wrap modulo 2**32. This is JAX's ``threefry2x32_p``, bit for
    bit (the hash itself has no data-dependent behaviour, so a NumPy reference
    and the StableHLO lowering agree exactly).

``bitcast_convert_type(x, new_dtype)``
    Reinterprets the bytes of each element as ``new_dtype``. Equal widths
    keep the shape; a narrower ``new_dtype`` (``k`` times narrower) appends a
    trailing dim of size ``k``, lowest-addressed (least significant, on a
    little-endian host as XLA's CPU backend) piece first; a wider one
    (``k`` times) consumes a trailing dim that must be exactly ``k``
    (``ValueError`` otherwise, rank 0 included). bool and complex operands or
    targets only convert to their own dtype (``TypeError``), as JAX 0.10.2.
    Example: ``uint32 [0x01020304] -> uint8 [[4, 3, 2, 1]]``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import dtypes, tracing
from refimpl.core import ShapedArray
from refimpl.primitives import batch_rules, structural
from refimpl.primitives import elementwise as ew
from refimpl.primitives.base import Primitive, elementwise_shape
from refimpl.transforms.ad_util import Zero, tangent_aval

__all__ = ["bitcast_convert_type", "mul_add", "threefry2x32"]

_U32 = np.dtype(np.uint32)
ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
KEY_PARITY = 0x1BD11BDA


# --- threefry2x32 ------------------------------------------------------------------

threefry2x32_p = Primitive("threefry2x32", multiple_results=True)


@threefry2x32_p.def_abstract_eval
def _threefry_abstract_eval(*avals: ShapedArray) -> list[ShapedArray]:
    if len(avals) != 4:
        raise TypeError(f"threefry2x32 takes 4 operands (k1, k2, x1, x2), got {len(avals)}")
    for name, aval in zip(("k1", "k2", "x1", "x2"), avals, strict=True):
        if aval.dtype != _U32:
            raise TypeError(
                f"threefry2x32: operand {name} must have dtype uint32, got {aval.dtype.name}"
            )
    shape = elementwise_shape("threefry2x32", list(avals))
    return [ShapedArray(shape, _U32), ShapedArray(shape, _U32)]


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


@threefry2x32_p.def_impl
def _threefry_impl(k1, k2, x1, x2):
    shape = np.broadcast_shapes(*(np.shape(a) for a in (k1, k2, x1, x2)))
    k1, k2, x1, x2 = (np.broadcast_to(np.asarray(a, _U32), shape) for a in (k1, k2, x1, x2))
    ks = (k1, k2, k1 ^ k2 ^ np.uint32(KEY_PARITY))
    with np.errstate(over="ignore"):
        x1 = x1 + ks[0]
        x2 = x2 + ks[1]
        for i in range(1, 6):
            for r in ROTATIONS[(i - 1) % 2]:
                x1 = x1 + x2
                x2 = _rotl(x2, r) ^ x1
            x1 = x1 + ks[i % 3]
            x2 = x2 + ks[(i + 1) % 3] + np.uint32(i)
    return [np.asarray(x1, _U32), np.asarray(x2, _U32)]


@threefry2x32_p.def_lowering
def _threefry_lowering(ctx, k1, k2, x1, x2):
    """The same 20 rounds, unrolled, as StableHLO integer ops on ui32."""
    shape = ctx.avals_out[0].shape
    hlo = ctx.hlo
    k1, k2, x1, x2 = ctx.broadcast_operands(k1, k2, x1, x2)

    def const(value: int):
        return ctx.constant(value, _U32, shape)

    def rotl(x, r: int):
        return hlo.or_(hlo.shift_left(x, const(r)), hlo.shift_right_logical(x, const(32 - r)))

    ks = (k1, k2, hlo.xor(hlo.xor(k1, k2), const(KEY_PARITY)))
    x1 = hlo.add(x1, ks[0])
    x2 = hlo.add(x2, ks[1])
    for i in range(1, 6):
        for r in ROTATIONS[(i - 1) % 2]:
            x1 = hlo.add(x1, x2)
            x2 = hlo.xor(rotl(x2, r), x1)
        x1 = hlo.add(x1, ks[i % 3])
        x2 = hlo.add(hlo.add(x2, ks[(i + 1) % 3]), const(i))
    return [x1, x2]


@threefry2x32_p.def_jvp
def _threefry_jvp(primals, tangents):
    outs = threefry2x32_p.bind(*primals)
    zeros = [Zero(tangent_aval(ShapedArray(np.shape(o), _U32))) for o in outs]
    return outs, zeros


@threefry2x32_p.def_batch
def _threefry_batch(args, dims):
    """Broadcasting batch rule: every operand gets the batch axis in front,
    unbatched ones (and rank-0 batched ones) broadcast to the full shape."""

    size = next(np.shape(a)[d] for a, d in zip(args, dims, strict=True) if d is not None)
    shapes = [
        tuple(s for i, s in enumerate(np.shape(a)) if i != d) if d is not None else np.shape(a)
        for a, d in zip(args, dims, strict=True)
    ]
    inner = next((s for s in shapes if s != ()), ())
    full = (size, *inner)
    moved = []
    for a, d in zip(args, dims, strict=True):
        if d is None:
            rank = np.ndim(a)
            dims_map = tuple(range(1 + len(inner) - rank, 1 + len(inner)))
            moved.append(structural.broadcast_in_dim(a, full, dims_map))
            continue
        if d != 0:
            perm = (d, *(i for i in range(np.ndim(a)) if i != d))
            a = structural.transpose(a, perm)
        if np.shape(a) != full:
            a = structural.broadcast_in_dim(a, full, (0,))
        moved.append(a)
    return threefry2x32_p.bind(*moved), [0, 0]


def _threefry_mask_rule(ctx, *operands: Any, **params: Any):
    return threefry2x32_p.bind(*operands, **params), [ctx.elementwise_logical()] * 2


threefry2x32_p.def_mask(_threefry_mask_rule)


def threefry2x32(k1: Any, k2: Any, x1: Any, x2: Any) -> tuple[Any, Any]:
    """The Threefry-2x32 hash of the counter pair ``(x1, x2)`` under the key
    ``(k1, k2)``, elementwise on uint32 arrays (see the module docstring)."""
    y1, y2 = threefry2x32_p.bind(k1, k2, x1, x2)
    return y1, y2


# --- bitcast_convert_type ----------------------------------------------------------

bitcast_convert_type_p = Primitive("bitcast_convert_type")


def _bitcast_shape(shape: tuple[int, ...], old: np.dtype, new: np.dtype) -> tuple[int, ...]:
    special = (dtypes.is_bool(old) or dtypes.is_complex(old) or dtypes.is_bool(new)
               or dtypes.is_complex(new))  # fmt: skip
    if special and old != new:
        raise TypeError(
            f"bitcast_convert_type: bool and complex values convert only to their own "
            f"dtype, got operand dtype {old.name} and new_dtype {new.name}"
        )
    old_bits, new_bits = _bits(old), _bits(new)
    if old_bits == new_bits:
        return shape
    if old_bits > new_bits:
        return (*shape, old_bits // new_bits)
    if not shape or shape[-1] * old_bits != new_bits:
        raise ValueError(
            f"bitcast_convert_type: converting an operand of shape {shape} from "
            f"{old.name} ({old_bits} bits) to {new.name} ({new_bits} bits) "
            f"needs a last dim of size {new_bits // old_bits}"
        )
    return shape[:-1]


def _bits(dtype: np.dtype) -> int:
    return 4 if dtype in dtypes.INT4_DTYPES else 8 * dtype.itemsize


@bitcast_convert_type_p.def_abstract_eval
def _bitcast_abstract_eval(x: ShapedArray, *, new_dtype: np.dtype) -> ShapedArray:
    new_dtype = np.dtype(new_dtype)
    return ShapedArray(_bitcast_shape(x.shape, x.dtype, new_dtype), new_dtype)


@bitcast_convert_type_p.def_impl
def _bitcast_impl(x: np.ndarray, *, new_dtype: np.dtype) -> np.ndarray:
    new_dtype = np.dtype(new_dtype)
    shape = _bitcast_shape(np.shape(x), x.dtype, new_dtype)
    if x.dtype in dtypes.INT4_DTYPES or new_dtype in dtypes.INT4_DTYPES:
        return _bitcast_nibbles(np.asarray(x), new_dtype, shape)
    # NumPy's view reinterprets the bytes along the last axis in memory order
    return np.ascontiguousarray(x).reshape(-1).view(new_dtype).reshape(shape).copy()


def _bitcast_nibbles(x: np.ndarray, new_dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """A bitcast from or to a 4-bit type, as XLA packs them: the first of the
    nibbles an element splits into is its lowest 4 bits (little-endian)."""
    if x.dtype in dtypes.INT4_DTYPES:
        nibbles = (x.view(np.uint8) & np.uint8(0x0F)).astype(
            np.uint64
        )  # ml_dtypes: a nibble a byte
    else:
        raw = np.ascontiguousarray(x).reshape(-1).view(np.uint8).astype(np.uint64)
        nibbles = np.stack([raw & np.uint64(0x0F), raw >> np.uint64(4)], axis=-1)
    nibbles = nibbles.reshape(-1)
    if new_dtype in dtypes.INT4_DTYPES:
        return nibbles.astype(np.uint8).view(new_dtype).reshape(shape).copy()
    count = 2 * new_dtype.itemsize  # nibbles per new element, lowest first
    groups = nibbles.reshape(-1, count)
    packed = sum(groups[:, i] << np.uint64(4 * i) for i in range(count))
    wide = np.asarray(packed, np.uint64).astype(np.dtype(f"u{new_dtype.itemsize}"))
    return wide.view(new_dtype).reshape(shape).copy()


@bitcast_convert_type_p.def_lowering
def _bitcast_lowering(ctx, x, *, new_dtype: np.dtype):
    return [ctx.hlo.bitcast_convert(ctx.ir_type(ctx.avals_out[0]), x)]


@bitcast_convert_type_p.def_jvp
def _bitcast_jvp(primals, tangents, *, new_dtype):
    # as in JAX, a reinterpretation of bits has no derivative
    out = bitcast_convert_type_p.bind(*primals, new_dtype=new_dtype)
    return out, Zero(tangent_aval(ShapedArray(np.shape(out), np.dtype(new_dtype))))


@bitcast_convert_type_p.def_batch
def _bitcast_batch(args, dims, *, new_dtype):
    return bitcast_convert_type_p.bind(args[0], new_dtype=new_dtype), dims[0]


bitcast_convert_type_p.def_mask(
    lambda ctx, x, **params: (
        bitcast_convert_type_p.bind(x, **params),
        ctx.elementwise_logical(),
    )
)


def bitcast_convert_type(operand: Any, new_dtype: Any) -> Any:
    """``lax.bitcast_convert_type``: the same bytes read as ``new_dtype``
    (a width change adds or consumes a trailing dim; see the module docstring)."""
    return bitcast_convert_type_p.bind(operand, new_dtype=dtypes.canonicalize_dtype(new_dtype))


# --- mul_add ------------------------------------------------------------------------

mul_add_p = Primitive("mul_add")


@mul_add_p.def_abstract_eval
def _mul_add_abstract_eval(x: ShapedArray, y: ShapedArray, z: ShapedArray) -> ShapedArray:
    avals = [x, y, z]
    for aval in avals:
        if not dtypes.is_floating(aval.dtype):
            raise TypeError(f"mul_add takes floating-point operands, got {aval.dtype.name}")
    if len({a.dtype for a in avals}) != 1:
        names = ", ".join(a.dtype.name for a in avals)
        raise TypeError(f"mul_add requires arguments to have the same dtypes, got {names}")
    shape = elementwise_shape("mul_add", avals)
    return ShapedArray(shape, x.dtype, all(a.weak_type for a in avals))


def _fused(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> np.ndarray:
    dtype = np.result_type(x, y, z)
    if dtype == np.float64:
        # NumPy has no fused multiply-add; float64 rounds twice here
        return x * y + z
    if dtype.itemsize == 2:
        # 16-bit floats round after each operation (StableHLO's semantics;
        # pjrt compiles with xla_allow_excess_precision=false to match)
        return (x * y).astype(dtype) + z
    # the product of two float32 values is exact in float64, so this rounds
    # once (up to a double rounding of the sum, which is rare)
    wide = x.astype(np.float64) * y.astype(np.float64) + z.astype(np.float64)
    return wide.astype(dtype)


@mul_add_p.def_impl
def _mul_add_impl(x, y, z):
    shape = np.broadcast_shapes(np.shape(x), np.shape(y), np.shape(z))
    return np.broadcast_to(_fused(x, y, z), shape)


@mul_add_p.def_lowering
def _mul_add_lowering(ctx, x, y, z):
    """``multiply`` then ``add`` in the operands' dtype, the ops JAX emits for
    ``x * y + z``: XLA's CPU backend contracts a float32 pair into one fused
    multiply-add, which is what the impl computes; 16-bit floats are rounded
    after each of the two (no excess precision, ``compile_overrides``)."""
    x, y, z = ctx.broadcast_operands(x, y, z)
    return [ctx.hlo.add(ctx.hlo.multiply(x, y), z)]


@mul_add_p.def_jvp
def _mul_add_jvp(primals, tangents):
    x, y, z = primals
    tx, ty, tz = tangents
    out = mul_add_p.bind(x, y, z)
    terms = []
    if not isinstance(tx, Zero):
        terms.append(ew.mul(tx, y))
    if not isinstance(ty, Zero):
        terms.append(ew.mul(x, ty))
    if not isinstance(tz, Zero):
        terms.append(tz)
    if not terms:
        return out, Zero(tangent_aval(tracing.get_aval(out, "mul_add", 0)))
    total = terms[0]
    for term in terms[1:]:
        total = ew.add(total, term)
    return out, total


mul_add_p.def_mask(lambda ctx, x, y, z: (mul_add_p.bind(x, y, z), ctx.elementwise_logical()))
mul_add_p.def_batch(batch_rules.elementwise_batch_rule(mul_add_p))


def mul_add(x: Any, y: Any, z: Any) -> Any:
    """``x * y + z`` rounded once for float32 (a fused multiply-add); 16-bit
    floats round the product and the sum separately (per-operation rounding),
    float64 too (NumPy has no fused multiply-add), elementwise on floats
    of one dtype; rank-0 operands broadcast. ``jax.random.uniform``
    scales its samples this way on XLA's CPU backend."""
    return mul_add_p.bind(x, y, z)
