"""Shared helpers for the table-driven case generators: dtype sets, oracles
computed in wide precision, and the standard shape sets."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np

F32, F16, BF16, F64 = (
    np.dtype(t) for t in (np.float32, np.float16, ml_dtypes.bfloat16, np.float64)
)
I8, I16, I32, I64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
U8, U32 = np.dtype(np.uint8), np.dtype(np.uint32)
C64 = np.dtype(np.complex64)
BOOL = np.dtype(bool)

FLOATS = (F32, F16, BF16)
SIGNED = (I32, I8)
UNSIGNED = (U8, U32)
INTS = SIGNED + UNSIGNED
COMPLEX = (C64,)
NUMERIC = FLOATS + INTS + COMPLEX
REAL = FLOATS + INTS
ALL = (BOOL,) + NUMERIC

# x64 is off: 64-bit results of NumPy oracles become their 32-bit types
_CANONICAL = {np.dtype(np.float64): F32, np.dtype(np.int64): I32,
              np.dtype(np.uint64): U32, np.dtype(np.complex128): C64}  # fmt: skip


def canonical(dtype: Any) -> np.dtype:
    dtype = np.dtype(dtype)
    return _CANONICAL.get(dtype, dtype)


def short(dtype: Any) -> str:
    names = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64",
             "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8",
             "uint16": "u16", "uint32": "u32", "uint64": "u64", "bool": "bool",
             "complex64": "c64", "complex128": "c128"}  # fmt: skip
    return names.get(np.dtype(dtype).name, np.dtype(dtype).name)


def shape_str(shape: tuple[int, ...]) -> str:
    return "(" + ",".join(str(d) for d in shape) + ")"


def wide(fn: Callable[..., Any]) -> Callable[..., np.ndarray]:
    """An oracle computing ``fn`` in float64/complex128 and rounding to the input dtype.

    Integer and bool inputs are computed in their own dtype (wrapping).
    """

    def oracle(*args: np.ndarray) -> np.ndarray:
        dtype = np.asarray(args[0]).dtype
        with np.errstate(all="ignore"):
            if dtype.kind == "c":
                return np.asarray(fn(*[np.asarray(a, np.complex128) for a in args])).astype(dtype)
            if dtype.kind == "f" or dtype == BF16:
                return np.asarray(fn(*[np.asarray(a, np.float64) for a in args])).astype(dtype)
            return np.asarray(fn(*args)).astype(dtype)

    return oracle


def wide_to(fn: Callable[..., Any], out_dtype: Any) -> Callable[..., np.ndarray]:
    """Like ``wide`` but the result has ``out_dtype`` (e.g. bool for comparisons)."""

    def oracle(*args: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            converted = [_widen(np.asarray(a)) for a in args]
            return np.asarray(fn(*converted)).astype(out_dtype)

    return oracle


def _widen(a: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "c":
        return a.astype(np.complex128)
    if a.dtype.kind == "f" or a.dtype == BF16:
        return a.astype(np.float64)
    return a


def trunc_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Integer division rounding toward zero (C / XLA), in the operands' dtype."""
    q = np.abs(x.astype(np.int64)) // np.abs(y.astype(np.int64))
    return np.where((x < 0) != (y < 0), -q, q).astype(x.dtype)


def round_half_away(x: np.ndarray) -> np.ndarray:
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def logistic(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def erf(x: np.ndarray) -> np.ndarray:
    import math

    return np.vectorize(math.erf, otypes=[np.float64])(x)


def saturating_cast(x: np.ndarray, dtype: Any) -> np.ndarray:
    """XLA's float -> integer conversion: truncate, saturate, NaN -> 0."""
    dtype = np.dtype(dtype)
    info = np.iinfo(dtype)
    wide_x = np.nan_to_num(np.trunc(np.asarray(x, np.float64)), nan=0.0)
    clipped = np.clip(wide_x, float(info.min), float(info.max))
    out = clipped.astype(dtype)
    out = np.where(wide_x >= float(info.max), info.max, out)
    return np.where(wide_x <= float(info.min), info.min, out).astype(dtype)


def convert(x: np.ndarray, dtype: Any) -> np.ndarray:
    """XLA's convert_element_type on NumPy values."""
    dtype = np.dtype(dtype)
    if x.dtype.kind == "c" and dtype.kind != "c":
        x = np.real(x)
    if dtype == BOOL:
        return x != 0
    if dtype.kind in "iu" and (x.dtype.kind == "f" or x.dtype == BF16):
        return saturating_cast(x, dtype)
    with np.errstate(all="ignore"):
        return x.astype(dtype)


def shift_left(x: np.ndarray, s: np.ndarray) -> np.ndarray:
    bits = x.dtype.itemsize * 8
    unsigned = np.dtype(f"uint{bits}")
    out = np.left_shift(x.view(unsigned), s.astype(unsigned) % bits)
    return np.where(s.astype(np.int64) >= bits, 0, out).astype(unsigned).view(x.dtype)


def shift_right_logical(x: np.ndarray, s: np.ndarray) -> np.ndarray:
    bits = x.dtype.itemsize * 8
    unsigned = np.dtype(f"uint{bits}")
    out = np.right_shift(x.view(unsigned), s.astype(unsigned) % bits)
    return np.where(s.astype(np.int64) >= bits, 0, out).astype(unsigned).view(x.dtype)


def shift_right_arithmetic(x: np.ndarray, s: np.ndarray) -> np.ndarray:
    bits = x.dtype.itemsize * 8
    signed = np.dtype(f"int{bits}")
    amount = np.minimum(s.astype(np.int64), bits - 1).astype(signed)
    return np.right_shift(x.view(signed), amount).astype(signed).view(x.dtype)


# shapes: the main shape first, then edge shapes (rank 0, zero-size, rank 3)
UNARY_SHAPES = [(3, 4), (), (0, 3), (2, 1, 5)]
LAX_BINARY_SHAPES = [
    ((3, 4), (3, 4)),
    ((), ()),
    ((3, 4), ()),
    ((0, 3), (0, 3)),
    ((2, 1, 5), (2, 1, 5)),
]
NP_BINARY_SHAPES = [((3, 4), (3, 4)), ((3, 4), (4,)), ((4, 1), (1, 3)), ((), (2, 3)),
                    ((0, 3), (1, 3)), ((2, 1, 3), (4, 3))]  # fmt: skip


def complex_pairs(parts: list[float], dtype: Any) -> np.ndarray:
    """Every (real, imag) pair of ``parts`` as a 1-D complex array, built part
    by part (no arithmetic, which would turn inf * 0 into NaN and lose the
    signs of zeros)."""
    pairs = [(a, b) for a in parts for b in parts]
    z = np.empty(len(pairs), dtype)
    z.real = [a for a, _ in pairs]
    z.imag = [b for _, b in pairs]
    return z


def seen_leaves(ns: Any, out: Any, values_of: Callable[[np.ndarray], np.ndarray]) -> list:
    """Each leaf of ``out`` (one array, or a tuple or list of them) as
    ``(values_of(its NumPy value), dtype name, weak type)``: what a case
    compares when the values need a view (a complex as its float parts, a
    narrow integer widened) that keeps the dtype's name."""
    leaves = out if isinstance(out, (tuple, list)) else (out,)
    seen = []
    for leaf in leaves:
        values = ns.to_numpy(leaf)
        seen.append((values_of(values), values.dtype.name, ns.weak_type(leaf)))
    return seen


def on_lax(fn: Any) -> Any:
    """A script case that calls ``fn(ns, ns.lax_)``: the ``*_paths`` families
    write their programs against the implementation's lax. (The inner
    function's text is what a case's recording hashes: keep it as it is.)"""

    def script(ns: Any) -> Any:
        return fn(ns, ns.lax_)

    return script
