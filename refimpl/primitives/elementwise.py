"""Elementwise primitives: unary math, binary arithmetic, comparisons, bitwise,
select_n, clamp, convert_element_type, integer_pow and copy.

Shared rules (JAX's ``lax`` semantics):

* operands of a binary primitive have equal dtypes, and equal shapes except
  that rank-0 operands broadcast; the ``lax`` functions convert nothing: a
  Python scalar is a weakly typed array of its default dtype, so
  ``lax.add(f32_array, 1.0)`` works and ``lax.add(f32_array, 1)`` does not;
* the result is weakly typed iff every operand is (comparisons too, as JAX);
* float16 and bfloat16 transcendental functions are computed in float32 and
  rounded back, which is what XLA's CPU backend does;
* integer arithmetic wraps around; integer division truncates toward zero, and
  ``x / 0`` is -1 (all ones for unsigned) and ``x % 0`` is ``x``, as in XLA.
"""

from __future__ import annotations

import builtins
import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from refimpl import backends, dtypes, tracing
from refimpl.core import Literal, ShapedArray
from refimpl.primitives import ad_helpers, batch_rules, rule_context, xla_math
from refimpl.primitives.base import (
    Primitive,
    all_weak,
    check_dtype_in,
    check_same_dtypes,
    elementwise_shape,
)
from refimpl.primitives.complex_special_values import flush_subnormal
from refimpl.primitives.complex_special_values import numpy_with_xla_values as _xla_values

# --- dtype classes accepted by the math functions -----------------------------

FLOAT = (dtypes.is_floating, "floating-point types")
INEXACT = (dtypes.is_inexact, "floating-point or complex types")
NUMERIC = (lambda d: not dtypes.is_bool(d), "numeric types (not bool)")
SIGNED_NUMERIC = (
    lambda d: dtypes.is_signed_int(d) or dtypes.is_inexact(d),
    "signed integer, floating-point or complex types",
)
# JAX 0.10.2's abs refuses int4 (narrow integers are limited to basic arithmetic and casts)
_ABS_TYPES = (
    lambda d: (dtypes.is_signed_int(d) and d != dtypes.int4) or dtypes.is_inexact(d),
    "signed integer (not int4), floating-point or complex types",
)
REAL_NUMERIC = (lambda d: not dtypes.is_bool(d) and not dtypes.is_complex(d), "real numbers")
INTEGER = (dtypes.is_integer, "integer types")
BOOL_OR_INT = (lambda d: dtypes.is_bool(d) or dtypes.is_integer(d), "bool or integer types")
ANY = (lambda d: True, "any type")
ORDERED = (lambda d: not dtypes.is_complex(d), "non-complex types")

_LOW_PRECISION = (np.dtype(np.float16), dtypes.bfloat16)


def _fits_float16(dtype: np.dtype) -> bool:
    info = dtypes.finfo(dtype)
    return float(info.max) <= 65504.0 and float(info.smallest_subnormal) >= 2.0**-24


# the type XLA's CPU backend computes each float8 type in
_FLOAT8_WORKING = {
    d: np.dtype(np.float16 if _fits_float16(d) else np.float32) for d in dtypes.FLOAT8_DTYPES
}


def _in_float32(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """Run ``fn`` in float32 for f16/bf16 inputs and round the result back."""

    def impl(*args: np.ndarray) -> np.ndarray:
        dtype = args[0].dtype
        if dtype.itemsize == 2 and dtype in _LOW_PRECISION:  # (a cheap test first)
            widened = [a.astype(np.float32) for a in args]
            return np.asarray(fn(*widened)).astype(dtype)
        if dtype.itemsize == 1 and dtype in dtypes.FLOAT8_DTYPES:
            # as XLA's CPU backend: float8 is computed as float16 (itself in
            # float32, rounded to float16), then rounded to float8. The double
            # rounding shows: float8_e5m2 exp(-0.375) = 0.6873 -> 0.6875 (f16)
            # -> 0.75 (the tie to even), not 0.625
            working = _FLOAT8_WORKING[dtype]
            return impl(*[a.astype(working) for a in args]).astype(dtype)
        out = fn(*args)
        if type(out) is np.ndarray and out.dtype == dtype:
            return out  # what the line below returns, without its two calls
        return np.asarray(out).astype(dtype, copy=False)

    return impl


# Elements per piece of an XLA approximation: its NumPy emulation holds
# about twenty float64 temporaries of its input's size at once.
_XLA_PIECE = 1 << 12


def _xla_f32(xla_fn: Callable[..., np.ndarray], other: Callable[..., np.ndarray]):
    """float32 by XLA CPU's approximation (``refimpl.primitives.xla_math``, so
    that ref, pjrt and JAX agree bit for bit), other dtypes by ``other``.
    A large input is computed piece by piece (the function is elementwise:
    the same values), so that its temporaries stay small next to the result."""

    def impl(x: np.ndarray) -> np.ndarray:
        if x.dtype != np.float32:
            return other(x)
        if x.size <= _XLA_PIECE:
            return xla_fn(x)
        flat = np.ravel(x)
        out = np.empty(flat.shape, np.float32)
        for start in range(0, flat.size, _XLA_PIECE):
            out[start : start + _XLA_PIECE] = xla_fn(flat[start : start + _XLA_PIECE])
        return out.reshape(x.shape)

    return impl


# --- unary ---------------------------------------------------------------------


def unary(name: str, impl: Callable[..., np.ndarray], accepts: tuple, result_dtype=None):
    """A unary elementwise primitive: same shape; dtype kept unless given."""
    prim = Primitive(name)
    allowed, what = accepts

    @prim.def_abstract_eval
    def _abstract_eval(x: ShapedArray) -> ShapedArray:
        check_dtype_in(name, x, allowed, what)
        if result_dtype is None:
            return x
        # weak in, weak out, even for a bool predicate (as JAX)
        return ShapedArray(x.shape, result_dtype(x.dtype), x.weak_type)

    prim.def_impl(impl)
    return prim


def _sign(x: np.ndarray) -> np.ndarray:
    if dtypes.is_complex(x.dtype):
        # XLA's: each part divided by |x| (a real division: sign(0 + inf j) is
        # 0 + nan j, where a complex division would make both parts NaN); x
        # itself at 0 (the zeros' signs kept)
        magnitude = _abs(x)
        safe = np.where(magnitude == 0, 1, magnitude)
        out = np.empty(x.shape, x.dtype)
        with np.errstate(invalid="ignore"):
            out.real = np.where(magnitude == 0, x.real, x.real / safe)
            out.imag = np.where(magnitude == 0, x.imag, x.imag / safe)
        return out
    return np.sign(x).astype(x.dtype)


def _round(x: np.ndarray, rounding_method: int = 0) -> np.ndarray:
    if rounding_method == 1:  # to nearest even
        return np.round(x).astype(x.dtype)
    # half away from zero, decided on the exact fraction: floor(|x| + 0.5)
    # would round 0.49999997 up, because the addition itself rounds
    whole = np.trunc(x)
    step = np.where(np.abs(x - whole) >= 0.5, np.sign(x), 0).astype(x.dtype)
    return (whole + step).astype(x.dtype)


def _erf(x: np.ndarray) -> np.ndarray:
    wide = np.vectorize(math.erf, otypes=[np.float64])(x.astype(np.float64))
    return wide.astype(x.dtype)


def _logistic(x: np.ndarray) -> np.ndarray:
    one = np.asarray(1, x.dtype)
    return one / (one + np.exp(-x))


def _rsqrt(x: np.ndarray) -> np.ndarray:
    return np.asarray(1, x.dtype) / np.sqrt(x)


def _abs(x: np.ndarray) -> np.ndarray:
    if dtypes.is_complex(x.dtype):
        # XLA's |z| is NaN when either part is (its max/min propagate NaN);
        # NumPy's hypot gives inf for inf + nan j
        return np.where(np.isnan(x.real) | np.isnan(x.imag), np.nan, np.abs(x)).astype(x.real.dtype)
    return np.abs(x)


def _square(x: np.ndarray) -> np.ndarray:
    """``x * x``; complex ``a + bi`` as CHLO's square (JAX 0.10.2's lowering):
    ``(a - b)(a + b) + (ab)2 i``, the real part +0 where finite ``|a| == |b|``
    (``square(3e38 + 3e38j)`` is ``inf j``; the product ``z * z`` gives
    ``nan + inf j``, and ``square(3e38 + 0j)`` is ``inf + 0j``, not ``inf + nan j``)."""
    if not dtypes.is_complex(x.dtype):
        with np.errstate(all="ignore"):
            return np.multiply(x, x)
    a, b = x.real, x.imag
    with np.errstate(all="ignore"):
        re = (a - b) * (a + b)
        im = (a * b) * np.asarray(2, a.dtype)
    out = np.empty(x.shape, x.dtype)
    out.real = np.where(np.isfinite(a) & np.isfinite(b) & (np.abs(a) == np.abs(b)), 0, re)
    out.imag = im
    return out


def _abs_dtype(dtype: np.dtype) -> np.dtype:
    if dtypes.is_complex(dtype):
        return np.dtype(np.float32 if dtype == np.complex64 else np.float64)
    return dtype


neg_p = unary("neg", np.negative, NUMERIC)
sign_p = unary("sign", _sign, NUMERIC)
floor_p = unary("floor", np.floor, FLOAT)
ceil_p = unary("ceil", np.ceil, FLOAT)
exp_p = unary("exp", _in_float32(_xla_f32(xla_math.exp, _xla_values("exp"))), INEXACT)
log_p = unary("log", _in_float32(_xla_f32(xla_math.log, _xla_values("log"))), INEXACT)
log1p_p = unary("log1p", _in_float32(_xla_f32(xla_math.log1p, _xla_values("log1p"))), INEXACT)
expm1_p = unary("expm1", _in_float32(_xla_f32(xla_math.expm1, _xla_values("expm1"))), INEXACT)
tanh_p = unary("tanh", _in_float32(_xla_f32(xla_math.tanh, _xla_values("tanh"))), INEXACT)
sin_p = unary("sin", _in_float32(_xla_values("sin")), INEXACT)
cos_p = unary("cos", _in_float32(_xla_values("cos")), INEXACT)
tan_p = unary("tan", _in_float32(_xla_f32(xla_math.tan, _xla_values("tan"))), INEXACT)
asin_p = unary("asin", _in_float32(_xla_values("asin")), INEXACT)
acos_p = unary("acos", _in_float32(_xla_values("acos")), INEXACT)
atan_p = unary("atan", _in_float32(_xla_values("atan")), INEXACT)
sinh_p = unary("sinh", _in_float32(_xla_values("sinh")), INEXACT)
cosh_p = unary("cosh", _in_float32(_xla_values("cosh")), INEXACT)
sqrt_p = unary("sqrt", _in_float32(_xla_values("sqrt")), INEXACT)
square_p = unary("square", _square, NUMERIC)
rsqrt_p = unary("rsqrt", _in_float32(_rsqrt), INEXACT)
cbrt_p = unary("cbrt", _in_float32(np.cbrt), FLOAT)
logistic_p = unary("logistic", _in_float32(_xla_f32(xla_math.logistic, _logistic)), INEXACT)
erf_p = unary("erf", _in_float32(_xla_f32(xla_math.erf, _erf)), FLOAT)
not_p = unary("not", np.invert, BOOL_OR_INT)
copy_p = unary("copy", np.copy, ANY)
is_finite_p = unary("is_finite", np.isfinite, FLOAT, result_dtype=lambda d: np.dtype(bool))
abs_p = unary("abs", _abs, _ABS_TYPES, result_dtype=_abs_dtype)


round_p = Primitive("round")


@round_p.def_abstract_eval
def _round_abstract_eval(x: ShapedArray, *, rounding_method: int) -> ShapedArray:
    check_dtype_in("round", x, *FLOAT)
    if rounding_method not in (0, 1):
        raise ValueError(f"round: rounding_method must be 0 or 1, got {rounding_method!r}")
    return x


@round_p.def_impl
def _round_impl(x: np.ndarray, *, rounding_method: int) -> np.ndarray:
    return _in_float32(lambda v: _round(v, rounding_method))(x)


# --- integer_pow ------------------------------------------------------------------

integer_pow_p = Primitive("integer_pow")


@integer_pow_p.def_abstract_eval
def _integer_pow_abstract_eval(x: ShapedArray, *, y: int) -> ShapedArray:
    check_dtype_in("integer_pow", x, *NUMERIC)
    if not isinstance(y, int) or isinstance(y, bool):
        raise TypeError(f"integer_pow: exponent y must be an int, got {y!r}")
    if y < 0 and dtypes.is_integer(x.dtype):
        # TypeError as JAX 0.10.2 ("Integers cannot be raised to negative powers")
        raise TypeError(f"integer_pow: negative exponent {y} for integer dtype {x.dtype.name}")
    return x


@integer_pow_p.def_impl
def _integer_pow_impl(x: np.ndarray, *, y: int) -> np.ndarray:
    """Repeated squaring, as XLA expands it (so rounding matches multiplies)."""
    if x.dtype in _LOW_PRECISION:
        return _integer_pow_impl(x.astype(np.float32), y=y).astype(x.dtype)
    result = None  # x^0 is 1; otherwise no multiplication by 1 (1 * (inf + nan j) is NaN)
    base = x.copy()
    n = builtins.abs(y)  # the module's abs is the lax function
    with np.errstate(all="ignore"):
        while n:
            if n & 1:
                result = base if result is None else result * base
            n >>= 1
            if n:
                base = base * base
    if result is None:
        result = np.ones_like(x)
    if y < 0:
        result = _div(np.ones_like(result), result)
    return result.astype(x.dtype, copy=False)


# --- binary --------------------------------------------------------------------------


def broadcasting_shape(name: str, avals: list[ShapedArray]) -> tuple[int, ...]:
    """The result shape of a broadcasting n-ary elementwise primitive (JAX's
    ``broadcasting_shape_rule``): rank-0 operands broadcast; the others must
    have one rank, and each dim is that of the operands whose size is not 1
    (all equal), or 1."""
    shapes = [a.shape for a in avals if a.shape != ()]
    if not shapes:
        return ()
    ranks = {len(s) for s in shapes}
    if len(ranks) != 1:
        raise TypeError(f"{name}: arrays must have the same number of dimensions, got {ranks}")
    result = []
    for dims in zip(*shapes, strict=True):
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            listed = ", ".join(str(s) for s in shapes)
            raise TypeError(f"{name} got incompatible shapes for broadcasting: {listed}.")
        result.append(sizes.pop() if sizes else 1)
    return tuple(result)


def binary(name: str, impl: Callable[..., np.ndarray], accepts: tuple, result_dtype=None):
    """A binary elementwise primitive over equal dtypes; shapes broadcast as
    JAX's: rank 0, or one rank with size-1 dims (``add`` of f32[3,4] and
    f32[3,1] is f32[3,4])."""
    prim = Primitive(name)
    allowed, what = accepts

    @prim.def_abstract_eval
    def _abstract_eval(x: ShapedArray, y: ShapedArray) -> ShapedArray:
        check_same_dtypes(name, [x, y])
        shape = broadcasting_shape(name, [x, y])
        check_dtype_in(name, x, allowed, what)
        # a comparison of weak operands is a weak bool (as JAX)
        return ShapedArray(shape, result_dtype or x.dtype, all_weak([x, y]))

    prim.def_impl(impl)
    return prim


def _int_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Truncating division in the operand's own dtype (no wider type exists
    for int64): NumPy's floor quotient, moved one toward zero when inexact and
    the signs differ."""
    safe_y = np.where(y == 0, 1, y).astype(x.dtype)
    if dtypes.is_signed_int(x.dtype):
        # INT_MIN / -1 overflows: XLA gives INT_MIN, which is INT_MIN / 1
        overflow = (x == np.iinfo(x.dtype).min) & (safe_y == -1)
        safe_y = np.where(overflow, 1, safe_y).astype(x.dtype)
        floor = x // safe_y
        inexact = (floor * safe_y) != x
        signs_differ = (x < 0) != (safe_y < 0)
        result = np.where(inexact & signs_differ, floor + 1, floor).astype(x.dtype)
    else:
        result = (x // safe_y).astype(x.dtype)
    all_ones = np.asarray(-1).astype(x.dtype)
    return np.where(y == 0, all_ones, result).astype(x.dtype)


def _div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if dtypes.is_integer(x.dtype):
        return _int_div(x, y)
    if dtypes.is_complex(x.dtype):
        return _complex_div(x, y)
    return np.true_divide(x, y).astype(x.dtype, copy=False)


def _complex_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """XLA's complex division: Smith's algorithm (divide through by the larger
    part of the denominator), then, where both parts came out NaN, C99 Annex
    G's recovery: a zero denominator gives inf times the numerator, an
    infinite numerator over a finite denominator an infinity, a finite one
    over an infinite denominator a zero, each with the signs of the parts.
    NumPy's division has no recovery (0 / (inf + inf j) is NaN there, 0 in XLA)."""
    x, y = np.broadcast_arrays(x, y)
    ar, ai, br, bi = x.real, x.imag, y.real, y.imag
    one, zero, inf = (np.asarray(v, ar.dtype) for v in (1, 0, np.inf))
    with np.errstate(all="ignore"):
        r_over_i = flush_subnormal(br / bi)
        i_over_r = flush_subnormal(bi / br)
        denom_i, denom_r = bi + br * r_over_i, br + bi * i_over_r
        imag_larger = np.abs(br) < np.abs(bi)
        re = np.where(imag_larger, (ar * r_over_i + ai) / denom_i, (ar + ai * i_over_r) / denom_r)
        im = np.where(imag_larger, (ai * r_over_i - ar) / denom_i, (ai - ar * i_over_r) / denom_r)

        def unit(v: np.ndarray, where: np.ndarray) -> np.ndarray:  # +-1 where, else +-0
            return np.copysign(np.where(where, one, zero), v)

        a_inf, b_inf = (
            (np.abs(ar) == inf, np.abs(ai) == inf),
            (np.abs(br) == inf, np.abs(bi) == inf),
        )
        a_finite = np.isfinite(ar) & np.isfinite(ai)
        b_finite = np.isfinite(br) & np.isfinite(bi)
        zero_denominator = (br == 0) & (bi == 0) & ~(np.isnan(ar) & np.isnan(ai))
        over_zero = np.copysign(inf, br)
        inf_over_finite = (a_inf[0] | a_inf[1]) & b_finite
        ur, ui = unit(ar, a_inf[0]), unit(ai, a_inf[1])
        finite_over_inf = (b_inf[0] | b_inf[1]) & a_finite
        vr, vi = unit(br, b_inf[0]), unit(bi, b_inf[1])
        recovered_re = np.select(
            [zero_denominator, inf_over_finite, finite_over_inf],
            [over_zero * ar, inf * (ur * br + ui * bi), zero * (ar * vr + ai * vi)],
            re,
        )
        recovered_im = np.select(
            [zero_denominator, inf_over_finite, finite_over_inf],
            [over_zero * ai, inf * (ui * br - ur * bi), zero * (ai * vr - ar * vi)],
            im,
        )
        both_nan = np.isnan(re) & np.isnan(im)
    out = np.empty(x.shape, x.dtype)
    out.real = np.where(both_nan, recovered_re, re)
    out.imag = np.where(both_nan, recovered_im, im)
    return out


def _rem(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if dtypes.is_integer(x.dtype):
        safe_y = np.where(y == 0, 1, y).astype(x.dtype)
        result = np.fmod(x, safe_y).astype(x.dtype)
        return np.where(y == 0, x, result).astype(x.dtype)
    return _in_float32(np.fmod)(x, y)


def _shift_amount_too_big(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    bits = x.dtype.itemsize * 8
    return (y.astype(np.int64) < 0) | (y.astype(np.int64) >= bits)


def _shift_left(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    too_big = _shift_amount_too_big(x, y)
    safe = np.where(too_big, 0, y).astype(x.dtype)
    return np.where(too_big, 0, np.left_shift(x, safe)).astype(x.dtype)


def _unsigned_view(dtype: np.dtype) -> np.dtype:
    return np.dtype(f"u{dtype.itemsize}")


def _shift_right_logical(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    too_big = _shift_amount_too_big(x, y)
    unsigned = (
        x.view(_unsigned_view(x.dtype))
        if x.ndim
        else x.reshape(1).view(_unsigned_view(x.dtype)).reshape(())
    )
    safe = np.where(too_big, 0, y).astype(unsigned.dtype)
    shifted = np.right_shift(unsigned, safe).astype(unsigned.dtype)
    result = shifted.view(x.dtype) if shifted.ndim else shifted.reshape(1).view(x.dtype).reshape(())
    return np.where(too_big, 0, result).astype(x.dtype)


def _shift_right_arithmetic(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    bits = x.dtype.itemsize * 8
    if dtypes.is_unsigned_int(x.dtype):
        signed = np.dtype(f"i{x.dtype.itemsize}")
        as_signed = x.astype(signed)
        return _shift_right_arithmetic(as_signed, y.astype(signed)).astype(x.dtype)
    clamped = np.clip(y.astype(np.int64), 0, bits - 1)
    too_big = _shift_amount_too_big(x, y)
    clamped = np.where(too_big, bits - 1, clamped).astype(x.dtype)
    return np.right_shift(x, clamped).astype(x.dtype)


def _lexicographic_less(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``x < y`` for complex numbers as XLA orders them: by real part, then
    imaginary part (a NaN part compares false)."""
    return (x.real < y.real) | ((x.real == y.real) & (x.imag < y.imag))


def _max(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """NumPy's maximum; complex: ``x if y < x else y`` in XLA's order."""
    if dtypes.is_complex(x.dtype):
        return np.where(_lexicographic_less(y, x), x, y)
    return np.maximum(x, y)


def _min(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """NumPy's minimum; complex: ``x if x < y else y`` in XLA's order."""
    if dtypes.is_complex(x.dtype):
        return np.where(_lexicographic_less(x, y), x, y)
    return np.minimum(x, y)


def _pow(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """float32 (and 16-bit floats, through float32) by the C library's powf,
    which XLA CPU calls (``xla_math.pow``); other dtypes by NumPy. An integer
    exponent is converted to ``x``'s dtype first, as JAX's lowering does."""
    y = y.astype(x.dtype, copy=False)
    if x.dtype == np.float32 or x.dtype in _LOW_PRECISION:
        return _in_float32(xla_math.pow)(x, y)
    return np.power(x, y)


def _atan2(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Floats by NumPy (16-bit floats through float32). Complex operands, which
    JAX 0.10.2's ``lax.atan2`` takes too, by XLA's expansion
    ``-i log((y + i x) / sqrt(y^2 + x^2))``, here in complex128 and rounded once."""
    if dtypes.is_complex(x.dtype):
        wx, wy = x.astype(np.complex128), y.astype(np.complex128)
        with np.errstate(all="ignore"):
            out = -1j * np.log((wy + 1j * wx) / np.sqrt(wy * wy + wx * wx))
        return out.astype(x.dtype)
    return _in_float32(np.arctan2)(x, y)


def _nextafter(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.nextafter(x, y).astype(x.dtype)


add_p = binary("add", np.add, NUMERIC)
sub_p = binary("sub", np.subtract, NUMERIC)
mul_p = binary("mul", np.multiply, NUMERIC)


# mul[out_dtype=T] (JAX 0.10.2): the operands (of any numeric dtypes) are
# converted to T, then multiplied; the param is present only when given
@mul_p.def_abstract_eval
def _mul_abstract_eval(x: ShapedArray, y: ShapedArray, *, out_dtype=None) -> ShapedArray:
    if out_dtype is None:
        check_same_dtypes("mul", [x, y])
    shape = broadcasting_shape("mul", [x, y])
    check_dtype_in("mul", x, *NUMERIC)
    check_dtype_in("mul", y, *NUMERIC)
    dtype = x.dtype if out_dtype is None else np.dtype(out_dtype)
    return ShapedArray(shape, dtype, all_weak([x, y]))


@mul_p.def_impl
def _mul_impl(x: np.ndarray, y: np.ndarray, *, out_dtype=None) -> np.ndarray:
    if out_dtype is not None:
        x = convert_values(x, np.dtype(out_dtype))
        y = convert_values(y, np.dtype(out_dtype))
    return np.multiply(x, y)


div_p = binary("div", _div, NUMERIC)
rem_p = binary("rem", _rem, REAL_NUMERIC)
pow_p = Primitive("pow")
pow_p.def_impl(_pow)


@pow_p.def_abstract_eval
def _pow_abstract_eval(x: ShapedArray, y: ShapedArray) -> ShapedArray:
    """An inexact base; the exponent of its dtype or any integer one (JAX)."""
    check_dtype_in("pow", x, *INEXACT)
    if x.dtype != y.dtype and not dtypes.is_integer(y.dtype):
        raise TypeError(
            "pow: the first argument must have an inexact dtype (float or complex), and the "
            "second argument an inexact or integer dtype, and two inexact dtypes must match, "
            f"but got {x.dtype} and {y.dtype} respectively."
        )
    return ShapedArray(broadcasting_shape("pow", [x, y]), x.dtype, all_weak([x, y]))


max_p = binary("max", _max, ANY)
min_p = binary("min", _min, ANY)
atan2_p = binary("atan2", _atan2, INEXACT)
nextafter_p = binary("nextafter", _nextafter, FLOAT)
and_p = binary("and", np.bitwise_and, BOOL_OR_INT)
or_p = binary("or", np.bitwise_or, BOOL_OR_INT)
xor_p = binary("xor", np.bitwise_xor, BOOL_OR_INT)
shift_left_p = binary("shift_left", _shift_left, INTEGER)
shift_right_logical_p = binary("shift_right_logical", _shift_right_logical, INTEGER)
shift_right_arithmetic_p = binary("shift_right_arithmetic", _shift_right_arithmetic, INTEGER)

_BOOL = np.dtype(bool)
eq_p = binary("eq", np.equal, ANY, result_dtype=_BOOL)
ne_p = binary("ne", np.not_equal, ANY, result_dtype=_BOOL)
lt_p = binary("lt", np.less, ORDERED, result_dtype=_BOOL)
le_p = binary("le", np.less_equal, ORDERED, result_dtype=_BOOL)
gt_p = binary("gt", np.greater, ORDERED, result_dtype=_BOOL)
ge_p = binary("ge", np.greater_equal, ORDERED, result_dtype=_BOOL)


# --- select_n and clamp ------------------------------------------------------------------

select_n_p = Primitive("select_n")


@select_n_p.def_abstract_eval
def _select_n_abstract_eval(which: ShapedArray, *cases: ShapedArray) -> ShapedArray:
    if not cases:
        raise ValueError("select_n requires at least one case")  # ValueError as JAX 0.10.2
    check_same_dtypes("select_n", list(cases))
    shape = elementwise_shape("select_n", list(cases))
    if which.dtype != _BOOL and which.dtype != np.int32:
        raise TypeError(f"select_n: which must be bool or int32, got {which.dtype.name}")
    if which.dtype == _BOOL and len(cases) > 2:
        raise TypeError("select_n: a bool which selects between at most 2 cases")
    if which.shape not in ((), shape):
        raise TypeError(f"select_n: which has shape {which.shape}, cases have shape {shape}")
    return ShapedArray(shape, cases[0].dtype, all_weak(list(cases)))


@select_n_p.def_impl
def _select_n_impl(which: np.ndarray, *cases: np.ndarray) -> np.ndarray:
    """``cases[which]`` elementwise; out-of-range ``which`` clamps to the ends."""
    shape = np.broadcast_shapes(which.shape, *(c.shape for c in cases))
    index = np.broadcast_to(np.clip(which.astype(np.int64), 0, len(cases) - 1), shape)
    return np.choose(index, [np.broadcast_to(c, shape) for c in cases]).astype(cases[0].dtype)


clamp_p = Primitive("clamp")


@clamp_p.def_abstract_eval
def _clamp_abstract_eval(lo: ShapedArray, x: ShapedArray, hi: ShapedArray) -> ShapedArray:
    check_same_dtypes("clamp", [lo, x, hi])
    check_dtype_in("clamp", x, *ORDERED)
    for bound, label in ((lo, "min"), (hi, "max")):
        if bound.shape not in ((), x.shape):
            raise TypeError(f"clamp: {label} has shape {bound.shape}, operand has shape {x.shape}")
    return ShapedArray(x.shape, x.dtype, x.weak_type)


@clamp_p.def_impl
def _clamp_impl(lo: np.ndarray, x: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return np.minimum(np.maximum(x, lo), hi).astype(x.dtype)


# --- convert_element_type ------------------------------------------------------------

convert_element_type_p = Primitive("convert_element_type")


@convert_element_type_p.def_abstract_eval
def _convert_abstract_eval(x: ShapedArray, *, new_dtype: np.dtype, weak_type: bool) -> ShapedArray:
    if not isinstance(new_dtype, np.dtype) or new_dtype not in dtypes.ALL_DTYPES:
        raise TypeError(f"convert_element_type: unsupported new_dtype {new_dtype!r}")
    return ShapedArray(x.shape, new_dtype, bool(weak_type))


@convert_element_type_p.def_impl
def _convert_impl(x: np.ndarray, *, new_dtype: np.dtype, weak_type: bool) -> np.ndarray:
    return convert_values(x, new_dtype)


def convert_values(x: np.ndarray, new_dtype: np.dtype) -> np.ndarray:
    """XLA's conversion: complex->real drops the imaginary part, anything->bool
    is ``!= 0``, float->int truncates toward zero, saturates, and maps NaN to 0."""
    if dtypes.is_complex(x.dtype) and not dtypes.is_complex(new_dtype):
        x = np.real(x)
    if x.dtype == _BOOL and new_dtype != _BOOL:
        x = _bool_bytes(x, new_dtype)
    if new_dtype == _BOOL:
        return np.asarray(x != 0)
    if x.dtype in dtypes.INT4_DTYPES:  # NumPy has few int4 casts (none to uint4): exact via int8
        x = x.astype(np.int8)
    if new_dtype in dtypes.INT4_DTYPES and not dtypes.is_inexact(x.dtype):
        wide = x.astype(np.int64)  # two's complement wraps modulo 16 (XLA's narrowing)
        return np.asarray(((wide + 8) % 16 - 8) if new_dtype == dtypes.int4 else wide % 16).astype(
            new_dtype
        )
    if dtypes.is_integer(new_dtype) and dtypes.is_inexact(x.dtype):
        info = dtypes.iinfo(new_dtype)
        wide = np.nan_to_num(np.trunc(x.astype(np.float64)), nan=0.0)
        saturated = np.clip(wide, float(info.min), float(info.max))
        # float64 cannot hold int64's max exactly; pick the ends explicitly
        result = saturated.astype(new_dtype)
        result = np.where(wide >= float(info.max), info.max, result)
        result = np.where(wide <= float(info.min), info.min, result)
        return np.asarray(result, dtype=new_dtype)
    with np.errstate(all="ignore"):
        return np.asarray(x.astype(new_dtype))


def _bool_bytes(x: np.ndarray, new_dtype: np.dtype) -> np.ndarray:
    """What XLA converts a bool array's bytes from. A bool byte need not be 0 or 1
    (NumPy bytes viewed as bool keep their bits, and so does every backend's
    buffer). XLA on CPU, as JAX 0.10.2 and pjrt run it, reads such a byte as
    a signed byte for unsigned, 4-bit and complex targets (255 -> uint16
    65535, int4 -1, complex -1), and as ``!= 0`` for the others (signed
    integers of 8 bits or more, real floats). So ``x.view(uint8)`` of bool
    data, which JAX builds as ``astype(uint8)`` then a bitcast, keeps the
    bytes."""
    byte = x.view(np.uint8)
    if (
        dtypes.is_unsigned_int(new_dtype)
        or new_dtype in dtypes.INT4_DTYPES
        or dtypes.is_complex(new_dtype)
    ):
        return byte.view(np.int8)
    return np.asarray(byte != 0)


# --- masking rule (refimpl.transforms.masking) -----------------------------------------


def _elementwise_mask_rule(ctx, *operands: Any, **params: Any):
    """Every elementwise primitive works position by position: the result's
    logical shape is the operands' common one (rank-0 operands broadcast; an
    unmasked dim agrees with a masked one) and its padding is unspecified."""
    return ctx.primitive.bind(*operands, **params), ctx.elementwise_logical()


# The primitives of this module: each result element depends only on the
# operands' elements at the same position (rank-0 operands broadcast).
ELEMENTWISE_PRIMITIVES: frozenset[Primitive] = frozenset([
    neg_p, sign_p, floor_p, ceil_p, exp_p, log_p, log1p_p, expm1_p, tanh_p, sin_p, cos_p, tan_p,
    asin_p, acos_p, atan_p, sinh_p, cosh_p, sqrt_p, rsqrt_p, cbrt_p, logistic_p, erf_p, not_p,
    copy_p, is_finite_p, abs_p, round_p, integer_pow_p, square_p, add_p, sub_p, mul_p, div_p,
    rem_p, pow_p, max_p, min_p, atan2_p, nextafter_p, and_p, or_p, xor_p, shift_left_p,
    shift_right_logical_p, shift_right_arithmetic_p, eq_p, ne_p, lt_p, le_p, gt_p, ge_p,
    select_n_p, clamp_p,
    convert_element_type_p,
])  # fmt: skip

for _prim in ELEMENTWISE_PRIMITIVES:
    _prim.def_mask(_elementwise_mask_rule)


# --- batching rule (refimpl.transforms.batching) ---------------------------------------
# Elementwise: move batched operands' axes together, broadcast unbatched ones of
# full rank (scalars broadcast by themselves); clamp's operand and select_n's
# cases must be full (a scalar case cannot follow a batched which).
for _prim in ELEMENTWISE_PRIMITIVES - {select_n_p, clamp_p}:
    _prim.def_batch(batch_rules.elementwise_batch_rule(_prim))
clamp_p.def_batch(batch_rules.elementwise_batch_rule(clamp_p, full_operands=(1,)))
select_n_p.def_batch(batch_rules.elementwise_batch_rule(select_n_p, full_operands=lambda i: i > 0))


# --- differentiation rules (refimpl.transforms.ad) -------------------------------------
#
# Conventions: refimpl.transforms.ad_util. Each derivative is written with the
# lax functions of this module, so rules run eagerly and under any trace.
# Formulas are JAX's (same expressions, so rounding and the values at
# singular points agree): ``t`` is the input tangent, ``ans`` the primal result.


def _unary_jvp(prim: Primitive, derivative: Callable[[Any, Any, Any], Any]) -> None:
    """Register ``tangent_out = derivative(t, ans, x)`` as ``prim``'s jvp rule."""

    def rule(primals, tangents, **params):
        (x,), (t,) = primals, tangents
        ans = prim.bind(x, **params)
        # unreachable from the public API: one differentiable operand, and the jvp trace calls a
        # rule only when some operand has a nonzero tangent (ad.JVPTrace.process_primitive)
        if ad_helpers.is_zero(t):  # pragma: no cover
            return ans, ad_helpers.zero_tangent(ad_helpers.aval_of(ans))
        return ans, derivative(t, ans, x)

    prim.def_jvp(rule)


def _c(value: Any, like: Any) -> Any:
    return ad_helpers.scalar(value, like)


# JAX's lax._const in the rules that use it: the derivative of sqrt of a weak
# array is strong, as JAX's
_const = ad_helpers.lax_const


def _times_itself(x: Any) -> Any:
    return mul(x, x)


# d exp = t exp(x); d log = t / x; d log1p = t / (1 + x); d expm1 = t (1 + expm1 x)
_unary_jvp(exp_p, lambda t, ans, x: mul(t, ans))
_unary_jvp(log_p, lambda t, ans, x: div(t, x))
_unary_jvp(log1p_p, lambda t, ans, x: div(t, add(x, _c(1, x))))
_unary_jvp(expm1_p, lambda t, ans, x: mul(t, add(ans, _c(1, ans))))
# d tanh = t (1 + tanh)(1 - tanh)
_unary_jvp(tanh_p, lambda t, ans, x: mul(add(t, mul(t, ans)), sub(_c(1, x), ans)))
_unary_jvp(sin_p, lambda t, ans, x: mul(t, cos(x)))
# as JAX's: -(t * sin x), so sin x is linearize's residual and the neg is linear
_unary_jvp(cos_p, lambda t, ans, x: neg(mul(t, sin(x))))
# d tan = t (1 + tan^2)
_unary_jvp(tan_p, lambda t, ans, x: mul(t, add(_const(1, x), _times_itself(ans))))
# d asin = t / sqrt(1 - x^2); d acos = -t / sqrt(1 - x^2); d atan = t / (1 + x^2)
_unary_jvp(asin_p, lambda t, ans, x: mul(t, rsqrt(sub(_const(1, x), _times_itself(x)))))
_unary_jvp(acos_p, lambda t, ans, x: mul(t, neg(rsqrt(sub(_const(1, x), _times_itself(x))))))
_unary_jvp(atan_p, lambda t, ans, x: div(t, add(_const(1, x), _times_itself(x))))
_unary_jvp(sinh_p, lambda t, ans, x: mul(t, cosh(x)))
_unary_jvp(cosh_p, lambda t, ans, x: mul(t, sinh(x)))
# d sqrt = t * 0.5 / sqrt(x); d rsqrt = t * (-0.5) * rsqrt(x) / x
_unary_jvp(sqrt_p, lambda t, ans, x: mul(t, div(_const(0.5, x), ans)))
# d square = t * (2 x)  (JAX's rule, whatever the lowering computes)
_unary_jvp(square_p, lambda t, ans, x: mul(t, mul(_const(2, x), x)))
_unary_jvp(rsqrt_p, lambda t, ans, x: mul(t, mul(_const(-0.5, x), div(ans, x))))
# d cbrt = t / (3 cbrt(x)^2)  (infinite at 0, as in JAX)
_unary_jvp(cbrt_p, lambda t, ans, x: mul(t, mul(_const(1 / 3, x), integer_pow(ans, -2))))
# d logistic = t s (1 - s), s = logistic(x)
_unary_jvp(logistic_p, lambda t, ans, x: mul(t, mul(ans, sub(_c(1, ans), ans))))
# d erf = t * 2/sqrt(pi) * exp(-x^2)
_unary_jvp(
    erf_p,
    lambda t, ans, x: mul(_const(2 / math.sqrt(math.pi), x), mul(t, exp(neg(_times_itself(x))))),
)


def _abs_derivative(t: Any, ans: Any, x: Any) -> Any:
    """d|x| = t for x >= 0 (so +t at 0, as JAX), -t for x < 0. For complex
    z: d|z| = Re(conj(z) t) / |z| (with |z| read as 1 at 0, as JAX), real
    and imaginary parts taken by converting to the real type (``Im w =
    Re(-i w)``), which keeps the tangent map linear and transposable."""
    dtype = ad_helpers.aval_of(x).dtype
    if not dtypes.is_complex(dtype):
        return select_n(ge(x, _c(0, x)), neg(t), t)
    real = _abs_dtype(dtype)

    def re(w):
        return convert_element_type_p.bind(w, new_dtype=real, weak_type=False)

    def im(w):
        return re(mul(w, np.asarray(-1j, dtype)))

    numerator = add(mul(re(x), re(t)), mul(im(x), im(t)))
    return div(numerator, _replace_zero(ans))


_unary_jvp(abs_p, _abs_derivative)


@integer_pow_p.def_jvp
def _integer_pow_jvp(primals, tangents, *, y: int):
    """d x^y = t * y * x^(y-1) (zero for y = 0)."""
    (x,), (t,) = primals, tangents
    ans = integer_pow(x, y)
    if y == 0 or ad_helpers.is_zero(t):
        return ans, ad_helpers.zero_tangent(ad_helpers.aval_of(ans))
    if y == 1:
        factor = _c(y, x)
    else:  # (x itself rather than x^1: no equation for it, as in JAX)
        factor = mul(_const(y, x), x if y == 2 else integer_pow(x, y - 1))
    return ans, mul(t, factor)


# Piecewise-constant or integer-valued: zero derivative (float0 for integer
# and bool results). nextafter has no rule, as in JAX.
for _prim in [
    sign_p, floor_p, ceil_p, round_p, not_p, is_finite_p, and_p, or_p, xor_p, shift_left_p,
    shift_right_logical_p, shift_right_arithmetic_p, eq_p, ne_p, lt_p, le_p, gt_p, ge_p,
]:  # fmt: skip
    _prim.def_jvp(ad_helpers.zero_jvp(_prim))

# Linear unary primitives: jvp applies the primitive to the tangent.
for _prim in [neg_p, copy_p]:
    _prim.def_jvp(ad_helpers.linear_jvp(_prim))


@neg_p.def_transpose
def _neg_transpose(ct, x):
    return [ad_helpers.Zero(x.aval) if isinstance(ct, ad_helpers.Zero) else neg(ct)]


@copy_p.def_transpose
def _copy_transpose(ct, x):
    # a copy of the cotangent, as JAX's: the input's cotangent is a new array,
    # not the very object passed to the pullback
    return [ad_helpers.Zero(x.aval) if isinstance(ct, ad_helpers.Zero) else copy(ct)]


def _out_aval(prim: Primitive, primals: list, params: dict) -> ShapedArray:
    avals = [ad_helpers.aval_of(p) for p in primals]
    return prim.out_avals(avals, params)[0]


def _binary_jvp(prim: Primitive, dx, dy) -> None:
    """Register ``t_out = dx(tx, ans, x, y) + dy(ty, ans, x, y)`` (rank-0 terms
    broadcast to the result; a term of a zero tangent is skipped)."""

    def rule(primals, tangents):
        x, y = primals
        tx, ty = tangents
        ans = prim.bind(x, y)
        out_aval = ad_helpers.aval_of(ans)
        terms = []
        if not ad_helpers.is_zero(tx):
            terms.append(dx(tx, ans, x, y))
        if not ad_helpers.is_zero(ty):
            terms.append(dy(ty, ans, x, y))
        return ans, ad_helpers.sum_tangents(terms, out_aval)

    prim.def_jvp(rule)


_binary_jvp(add_p, lambda tx, ans, x, y: tx, lambda ty, ans, x, y: ty)
_binary_jvp(sub_p, lambda tx, ans, x, y: tx, lambda ty, ans, x, y: neg(ty))


@mul_p.def_jvp
def _mul_jvp(primals, tangents, **params):
    """``tx y + x ty``, each product with the same ``out_dtype`` (as JAX)."""
    x, y = primals
    tx, ty = tangents
    ans = mul_p.bind(x, y, **params)
    terms = []
    if not ad_helpers.is_zero(tx):
        terms.append(mul_p.bind(tx, y, **params))
    if not ad_helpers.is_zero(ty):
        terms.append(mul_p.bind(x, ty, **params))
    return ans, ad_helpers.sum_tangents(terms, ad_helpers.aval_of(ans))


# d (x / y) = tx / y - ty x / y^2
_binary_jvp(
    div_p,
    lambda tx, ans, x, y: div(tx, y),
    lambda ty, ans, x, y: mul(mul(neg(ty), x), integer_pow(y, -2)),
)
# rem(x, y) = x - y trunc(x / y): d = tx - ty trunc(x / y)
_binary_jvp(
    rem_p,
    lambda tx, ans, x, y: tx,
    lambda ty, ans, x, y: mul(neg(ty), mul(sign(div(x, y)), floor(abs(div(x, y))))),
)


def _replace_zero(x: Any) -> Any:
    """``x`` with zeros replaced by ones."""
    ones = ad_helpers.broadcast_to(_c(1, x), ad_helpers.aval_of(x).shape)
    return select_n(eq(x, _c(0, x)), x, ones)


def _strong(x: Any) -> Any:
    """``x`` strongly typed (JAX's pow derivatives convert their operands
    with ``convert_element_type``, which drops the weak type)."""
    aval = ad_helpers.aval_of(x)
    if not aval.weak_type:
        return x
    return convert_element_type_p.bind(x, new_dtype=aval.dtype, weak_type=False)


# d x^y = tx y x^(y-1) + ty log(x) x^y, with log(x) read as 0 at x = 0 (JAX);
# both terms strongly typed, as in JAX
def _pow_jvp_x(tx: Any, ans: Any, x: Any, y: Any) -> Any:
    y_aval = ad_helpers.aval_of(y)
    if not dtypes.is_integer(y_aval.dtype):
        return mul(tx, _strong(mul(y, pow(x, sub(y, _c(1, y))))))
    # an integer exponent: y x^(y-1) in x's dtype, 0 where y = 0 (0^-1 is inf), as JAX
    x_aval = ad_helpers.aval_of(x)
    shape = np.broadcast_shapes(x_aval.shape, y_aval.shape)
    x = ad_helpers.broadcast_to(_strong(x), shape)
    yf = ad_helpers.broadcast_to(
        convert_element_type_p.bind(y, new_dtype=x_aval.dtype, weak_type=False), shape
    )
    jac = mul(_replace_zero(yf), pow(x, sub(yf, _c(1, yf))))
    return mul(tx, select_n(eq(yf, _c(0, yf)), jac, ad_helpers.broadcast_to(_c(0, yf), shape)))


_binary_jvp(
    pow_p,
    _pow_jvp_x,
    lambda ty, ans, x, y: _strong(mul(ty, mul(log(_replace_zero(x)), ans))),
)


def _balanced_eq(x: Any, z: Any, y: Any) -> Any:
    """1 where ``x == z != y``, 1/2 where ``x == z == y``, else 0: the share of
    ``x``'s tangent in ``z = max(x, y)`` (ties split equally, as JAX)."""
    aval = ad_helpers.aval_of(z)
    hit = convert_element_type_p.bind(eq(x, z), new_dtype=aval.dtype, weak_type=aval.weak_type)
    shared = convert_element_type_p.bind(eq(y, z), new_dtype=aval.dtype, weak_type=aval.weak_type)
    return div(hit, add(shared, _c(1, aval)))


_binary_jvp(
    max_p,
    lambda tx, ans, x, y: mul(tx, _balanced_eq(x, ans, y)),
    lambda ty, ans, x, y: mul(ty, _balanced_eq(y, ans, x)),
)
_binary_jvp(
    min_p,
    lambda tx, ans, x, y: mul(tx, _balanced_eq(x, ans, y)),
    lambda ty, ans, x, y: mul(ty, _balanced_eq(y, ans, x)),
)
# atan2(x, y): d = (tx y - ty x) / (x^2 + y^2)
_binary_jvp(
    atan2_p,
    lambda tx, ans, x, y: mul(tx, div(y, add(_times_itself(x), _times_itself(y)))),
    lambda ty, ans, x, y: mul(ty, div(neg(x), add(_times_itself(x), _times_itself(y)))),
)


def _linear_binary_transpose(prim: Primitive, ct_x, ct_y) -> None:
    """Transpose of add/sub: each undefined operand gets ``ct_x(ct)`` /
    ``ct_y(ct)``, summed down to rank 0 if that operand was broadcast."""

    def rule(ct, x, y):
        outs = []
        for operand, fn in ((x, ct_x), (y, ct_y)):
            if not isinstance(operand, ad_helpers.UndefinedPrimal):
                outs.append(None)
            # unreachable from the public API: the backward pass never passes a symbolic Zero
            # to a single-output rule (ad.backward_pass)
            elif isinstance(ct, ad_helpers.Zero):  # pragma: no cover
                outs.append(ad_helpers.Zero(operand.aval))
            else:
                outs.append(ad_helpers.unbroadcast(fn(ct), operand.aval))
        return outs

    prim.def_transpose(rule)


_linear_binary_transpose(add_p, lambda ct: ct, lambda ct: ct)
_linear_binary_transpose(sub_p, lambda ct: ct, lambda ct: neg(ct))


@mul_p.def_transpose
def _mul_transpose(ct, x, y, **params):
    """Linear in one operand, the other a constant: ``ct * constant``."""
    x_linear = isinstance(x, ad_helpers.UndefinedPrimal)
    y_linear = isinstance(y, ad_helpers.UndefinedPrimal)
    if x_linear == y_linear:
        raise NotImplementedError("mul: transpose needs exactly one linear operand")
    linear, constant = (x, y) if x_linear else (y, x)
    # unreachable from the public API: the backward pass skips an equation whose one output has
    # no cotangent and never passes a symbolic Zero to a single-output rule (ad.backward_pass)
    if isinstance(ct, ad_helpers.Zero):  # pragma: no cover
        ct_linear = ad_helpers.Zero(linear.aval)
    else:
        if params.get("out_dtype") is None:
            product = mul(ct, constant)
        else:  # as JAX: the product in the linear operand's dtype
            product = mul_p.bind(ct, constant, out_dtype=linear.aval.dtype)
        ct_linear = ad_helpers.unbroadcast(product, linear.aval)
    return [ct_linear, None] if x_linear else [None, ct_linear]


@div_p.def_transpose
def _div_transpose(ct, x, y):
    """Linear in the numerator only: ``ct / y``."""
    if isinstance(y, ad_helpers.UndefinedPrimal) or not isinstance(x, ad_helpers.UndefinedPrimal):
        raise NotImplementedError("div: transpose is only linear in the numerator")
    # unreachable from the public API: the backward pass skips an equation whose one output has
    # no cotangent and never passes a symbolic Zero to a single-output rule (ad.backward_pass)
    if isinstance(ct, ad_helpers.Zero):  # pragma: no cover
        return [ad_helpers.Zero(x.aval), None]
    return [ad_helpers.unbroadcast(div(ct, y), x.aval), None]


@select_n_p.def_jvp
def _select_n_jvp(primals, tangents):
    """``which`` is not differentiable: the tangent selects the cases' tangents."""
    which, *cases = primals
    ans = select_n(which, *cases)
    case_tangents = tangents[1:]
    # unreachable from the public API: the other operands are integers (never a nonzero
    # tangent), and the jvp trace calls a rule only when some operand has a nonzero tangent
    if all(ad_helpers.is_zero(t) for t in case_tangents):  # pragma: no cover
        return ans, ad_helpers.zero_tangent(ad_helpers.aval_of(ans))
    filled = [
        ad_helpers.instantiate(t, ad_helpers.tangent_aval(ad_helpers.aval_of(c)))
        for c, t in zip(cases, case_tangents, strict=True)
    ]
    return ans, select_n(which, *filled)


@select_n_p.def_transpose
def _select_n_transpose(ct, which, *cases):
    """Case ``i`` gets ``ct`` where ``which == i`` and zero elsewhere."""
    # unreachable from the public API: which is bool or int32, never a linear (float) operand
    if isinstance(which, ad_helpers.UndefinedPrimal):  # pragma: no cover
        raise NotImplementedError("select_n: transpose is not linear in which")
    outs: list[Any] = [None]
    # unreachable from the public API: the backward pass skips an equation whose one output has
    # no cotangent and never passes a symbolic Zero to a single-output rule (ad.backward_pass)
    if isinstance(ct, ad_helpers.Zero):  # pragma: no cover
        return outs + [
            ad_helpers.Zero(c.aval) if isinstance(c, ad_helpers.UndefinedPrimal) else None
            for c in cases
        ]
    zero = ad_helpers.zeros(ad_helpers.aval_of(ct))
    for i, case in enumerate(cases):
        if not isinstance(case, ad_helpers.UndefinedPrimal):
            outs.append(None)
            continue
        picked = select_n(which, *[ct if j == i else zero for j in range(len(cases))])
        outs.append(ad_helpers.unbroadcast(picked, case.aval))
    return outs


@clamp_p.def_jvp
def _clamp_jvp(primals, tangents):
    """clamp(lo, x, hi) = min(max(x, lo), hi): the tangent is ``t_lo`` where
    ``lo > x`` (and ``lo < hi``), ``t_x`` where ``lo < x < hi``, ``t_hi``
    where ``x > hi``; zero at the ties (JAX's choice)."""
    lo, x, hi = primals
    t_lo, t_x, t_hi = tangents
    ans = clamp(lo, x, hi)
    out_aval = ad_helpers.aval_of(ans)
    zero = ad_helpers.zeros(ad_helpers.tangent_aval(out_aval))
    terms = []
    if not ad_helpers.is_zero(t_lo):
        terms.append(select_n(bitwise_and(gt(lo, x), lt(lo, hi)), zero, t_lo))
    if not ad_helpers.is_zero(t_x):
        terms.append(select_n(bitwise_and(gt(x, lo), lt(x, hi)), zero, t_x))
    if not ad_helpers.is_zero(t_hi):
        terms.append(select_n(ad_helpers.broadcast_to(lt(hi, x), out_aval.shape), zero, t_hi))
    return ans, ad_helpers.sum_tangents(terms, out_aval)


@convert_element_type_p.def_jvp
def _convert_jvp(primals, tangents, *, new_dtype: np.dtype, weak_type: bool):
    """The tangent converted likewise; zero (float0) when either side is an
    integer or bool type."""
    (x,), (t,) = primals, tangents
    ans = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    out_aval = ad_helpers.aval_of(ans)
    if ad_helpers.is_zero(t) or not dtypes.is_inexact(new_dtype):
        return ans, ad_helpers.zero_tangent(out_aval)
    # the wrapper, as JAX's: a traced tangent already of the type is itself
    # (no equation in a linearized program, so vjp hands a cotangent back as given)
    return ans, _convert_element_type(t, new_dtype, weak_type)


@convert_element_type_p.def_transpose
def _convert_transpose(ct, x, *, new_dtype: np.dtype, weak_type: bool):
    """Convert the cotangent back to the operand's dtype and weak type."""
    aval = x.aval
    if not dtypes.is_inexact(aval.dtype):
        return [ad_helpers.zero_tangent(aval)]
    # unreachable from the public API: the backward pass skips an equation whose one output has
    # no cotangent and never passes a symbolic Zero to a single-output rule (ad.backward_pass)
    if isinstance(ct, ad_helpers.Zero):  # pragma: no cover
        return [ad_helpers.Zero(aval)]
    return [convert_element_type_p.bind(ct, new_dtype=aval.dtype, weak_type=aval.weak_type)]


# --- lowering to StableHLO (refimpl.backends.pjrt.lowering) ---------------------------
#
# Each rule emits the StableHLO for its primitive with the reference's
# semantics: rank-0 operands are broadcast first, float16/bfloat16
# transcendental functions go through float32 (``ctx.in_float32``) exactly
# where the impls above do, and integer corner cases are spelled out.


def _hlo_unary(op: str, dialect: str = "hlo", in_float32: bool = False):
    """A rule applying the StableHLO (or CHLO) op ``op`` to the operand."""

    def rule(ctx, x):
        emit = getattr(ctx.hlo if dialect == "hlo" else ctx.chlo, op)
        if in_float32:
            return [ctx.in_float32(emit, x, dtype=ctx.avals_in[0].dtype)]
        return [emit(x)]

    return rule


for _prim, _op in [
    (neg_p, "negate"), (floor_p, "floor"), (ceil_p, "ceil"),
    (not_p, "not_"), (is_finite_p, "is_finite"), (abs_p, "abs"),
]:  # fmt: skip
    _prim.def_lowering(_hlo_unary(_op))

for _prim, _op in [
    (exp_p, "exponential"), (log_p, "log"), (log1p_p, "log_plus_one"),
    (expm1_p, "exponential_minus_one"), (tanh_p, "tanh"), (rsqrt_p, "rsqrt"), (cbrt_p, "cbrt"),
    (logistic_p, "logistic"),
]:  # fmt: skip
    _prim.def_lowering(_hlo_unary(_op, in_float32=True))


def _sin_cos_lowering(is_sin: bool):
    """``stablehlo.sine``/``cosine``; complex by JAX's formula over the parts
    ``a + bi`` (XLA's complex sine gives NaN real parts on the imaginary axis,
    sin(0 + inf j) = nan + inf j where JAX has 0 + inf j):
    ``sin = (sin a cosh b, cos a sinh b)``, ``cos = (cos a cosh b, -sin a sinh b)``,
    with ``sinh b, cosh b`` from ``expm1(b), expm1(-b)`` and the part that
    is ``0 * inf`` at ``a == 0`` set to 0."""
    real_rule = _hlo_unary("sine" if is_sin else "cosine", in_float32=True)

    def rule(ctx, x):
        dtype = ctx.avals_in[0].dtype
        if not dtypes.is_complex(dtype):
            return real_rule(ctx, x)
        h = ctx.hlo
        part = _abs_dtype(dtype)
        shape = ctx.avals_in[0].shape
        a, b = h.real(x), h.imag(x)
        zero, two = ctx.constant(0, part, shape), ctx.constant(2, part, shape)
        sin_a, cos_a = h.sine(a), h.cosine(a)
        up, down = h.exponential_minus_one(b), h.exponential_minus_one(h.negate(b))
        sinh_b = h.divide(h.subtract(up, down), two)
        cosh_b = h.divide(h.add(h.add(up, down), two), two)
        if is_sin:
            re, im = h.multiply(sin_a, cosh_b), h.multiply(cos_a, sinh_b)
            on_axis = h.complex(zero, im)
        else:
            re, im = h.multiply(cos_a, cosh_b), h.multiply(h.negate(sin_a), sinh_b)
            on_axis = h.complex(re, zero)
        a_is_zero = ctx.compare(a, zero, "EQ", part)
        return [h.select(a_is_zero, on_axis, h.complex(re, im))]

    return rule


sin_p.def_lowering(_sin_cos_lowering(is_sin=True))
cos_p.def_lowering(_sin_cos_lowering(is_sin=False))
# tan and sqrt on their 16-bit operand, as JAX emits them: XLA computes them in
# float32 (glibc's tanf; sqrt) and rounds, the same values; but with an explicit
# float32 conversion XLA removes the rounding of a 16-bit product feeding them
# (bfloat16 cauchy's tan(pi * (u - 1/2)) differed from JAX in 1 sample in 3,
# bfloat16 triangular's sqrt((1 - u) * w * (right - mode)) in 1 in 100)
tan_p.def_lowering(_hlo_unary("tan"))


@square_p.def_lowering
def _square_lowering(ctx, x):
    """``chlo.square`` (JAX 0.10.2's; its complex form is the impl's formula);
    integers as a product."""
    if dtypes.is_integer(ctx.avals_in[0].dtype):
        return [ctx.hlo.multiply(x, x)]
    return [ctx.chlo.square(x)]


sqrt_p.def_lowering(_hlo_unary("sqrt"))

for _prim, _op in [
    (asin_p, "asin"), (acos_p, "acos"), (atan_p, "atan"), (sinh_p, "sinh"), (cosh_p, "cosh"),
    (erf_p, "erf"),
]:  # fmt: skip
    _prim.def_lowering(_hlo_unary(_op, dialect="chlo", in_float32=True))


@sign_p.def_lowering
def _sign_lowering(ctx, x):
    """``stablehlo.sign``; for unsigned integers (which it does not take) ``min(x, 1)``."""
    dtype = ctx.avals_in[0].dtype
    if dtypes.is_unsigned_int(dtype):
        return [ctx.hlo.minimum(x, ctx.constant(1, dtype, ctx.shape_of(x)))]
    return [ctx.hlo.sign(x)]


@copy_p.def_lowering
def _copy_lowering(ctx, x):
    return [x]  # values are immutable; XLA gives each output its own buffer


@round_p.def_lowering
def _round_lowering(ctx, x, *, rounding_method: int):
    emit = ctx.hlo.round_nearest_afz if rounding_method == 0 else ctx.hlo.round_nearest_even
    return [ctx.in_float32(emit, x, dtype=ctx.avals_in[0].dtype)]


@integer_pow_p.def_lowering
def _integer_pow_lowering(ctx, x, *, y: int):
    """The impl's repeated squaring, multiply for multiply."""
    dtype = ctx.avals_in[0].dtype

    def power(base):
        result = None
        n = builtins.abs(y)
        while n:
            if n & 1:
                result = base if result is None else ctx.hlo.multiply(result, base)
            n >>= 1
            if n:
                base = ctx.hlo.multiply(base, base)
        element_dtype = np.dtype(np.float32) if dtype in _LOW_PRECISION else dtype
        one = ctx.constant(1, element_dtype, ctx.shape_of(base))
        if result is None:
            return one
        return ctx.hlo.divide(one, result) if y < 0 else result

    return [ctx.in_float32(power, x, dtype=dtype)]


def _hlo_binary(op: str, dialect: str = "hlo", in_float32: bool = False):
    """A rule applying the binary StableHLO (or CHLO) op ``op`` after broadcasting."""

    def rule(ctx, x, y):
        emit = getattr(ctx.hlo if dialect == "hlo" else ctx.chlo, op)
        x, y = ctx.broadcast_operands(x, y)
        if in_float32:
            return [ctx.in_float32(emit, x, y, dtype=ctx.avals_in[0].dtype)]
        return [emit(x, y)]

    return rule


for _prim, _op in [
    (add_p, "add"), (sub_p, "subtract"), (and_p, "and_"), (or_p, "or_"), (xor_p, "xor"),
]:  # fmt: skip
    _prim.def_lowering(_hlo_binary(_op))


def _minmax_lowering(op: str, direction: str):
    """``maximum``/``minimum``; complex numbers compared as the impl does (real
    parts, then imaginary parts where the real parts are equal), as JAX lowers it."""
    plain = _hlo_binary(op)

    def rule(ctx, x, y):
        dtype = ctx.avals_in[0].dtype
        if not dtypes.is_complex(dtype):
            return plain(ctx, x, y)
        x, y = ctx.broadcast_operands(x, y)
        part = np.dtype(np.float32 if dtype == np.complex64 else np.float64)
        rx, ry = ctx.hlo.real(x), ctx.hlo.real(y)
        real_eq = ctx.compare(rx, ry, "EQ", part)
        real_cmp = ctx.compare(rx, ry, direction, part)
        imag_cmp = ctx.compare(ctx.hlo.imag(x), ctx.hlo.imag(y), direction, part)
        return [ctx.select(ctx.select(real_eq, imag_cmp, real_cmp), x, y)]

    return rule


max_p.def_lowering(_minmax_lowering("maximum", "GT"))
min_p.def_lowering(_minmax_lowering("minimum", "LT"))

atan2_p.def_lowering(_hlo_binary("atan2", in_float32=True))


@pow_p.def_lowering
def _pow_lowering(ctx, x, y):
    """``power``, an integer exponent converted to the base's dtype first (JAX)."""
    x_dtype = ctx.avals_in[0].dtype
    x, y = ctx.broadcast_operands(x, y)
    y = ctx.convert(y, ctx.avals_in[1].dtype, x_dtype)
    return [ctx.in_float32(ctx.hlo.power, x, y, dtype=x_dtype)]


nextafter_p.def_lowering(_hlo_binary("next_after", dialect="chlo"))


@mul_p.def_lowering
def _mul_lowering(ctx, x, y, *, out_dtype=None):
    """``multiply``; with ``out_dtype`` the operands converted to it first
    (after broadcasting, which builds its ops in the operands' own dtypes)."""
    x, y = ctx.broadcast_operands(x, y)
    if out_dtype is not None:
        x = ctx.convert(x, ctx.avals_in[0].dtype, np.dtype(out_dtype))
        y = ctx.convert(y, ctx.avals_in[1].dtype, np.dtype(out_dtype))
    return [ctx.hlo.multiply(x, y)]


@div_p.def_lowering
def _div_lowering(ctx, x, y):
    """Integer division as in the impl: ``x / 0`` is -1 (all ones) and
    ``INT_MIN / -1`` is ``INT_MIN``; StableHLO leaves both undefined."""
    dtype = ctx.avals_in[0].dtype
    x, y = ctx.broadcast_operands(x, y)
    if not dtypes.is_integer(dtype):
        return [ctx.hlo.divide(x, y)]
    shape = ctx.shape_of(x)
    zero = ctx.compare(y, ctx.constant(0, dtype, shape), "EQ", dtype)
    safe_y = ctx.select(zero, ctx.constant(1, dtype, shape), y)
    if dtypes.is_signed_int(dtype):
        overflow = ctx.hlo.and_(
            ctx.compare(x, ctx.constant(dtypes.min_value(dtype), dtype, shape), "EQ", dtype),
            ctx.compare(safe_y, ctx.constant(-1, dtype, shape), "EQ", dtype),
        )
        safe_y = ctx.select(overflow, ctx.constant(1, dtype, shape), safe_y)
    quotient = ctx.hlo.divide(x, safe_y)
    return [ctx.select(zero, ctx.constant(-1, dtype, shape), quotient)]


@rem_p.def_lowering
def _rem_lowering(ctx, x, y):
    """``fmod``; for integers ``x % 0`` is ``x`` (and ``INT_MIN % -1`` is 0)."""
    dtype = ctx.avals_in[0].dtype
    x, y = ctx.broadcast_operands(x, y)
    if not dtypes.is_integer(dtype):
        return [ctx.in_float32(ctx.hlo.remainder, x, y, dtype=dtype)]
    shape = ctx.shape_of(x)
    zero = ctx.compare(y, ctx.constant(0, dtype, shape), "EQ", dtype)
    unsafe = zero  # x % 0 traps; it is x, chosen below
    if dtypes.is_signed_int(dtype):  # INT_MIN % -1 overflows; x % -1 is 0 = x % 1
        unsafe = ctx.hlo.or_(zero, ctx.compare(y, ctx.constant(-1, dtype, shape), "EQ", dtype))
    safe_y = ctx.select(unsafe, ctx.constant(1, dtype, shape), y)
    remainder = ctx.hlo.remainder(x, safe_y)
    return [ctx.select(zero, x, remainder)]


def _shift_lowering(op: str, fill_sign: bool):
    """A shift whose amount, read as unsigned, is at least the bit width gives 0
    (or, for the arithmetic right shift, the sign fill ``x >> (bits - 1)``)."""

    def rule(ctx, x, y):
        dtype = ctx.avals_in[0].dtype
        x, y = ctx.broadcast_operands(x, y)
        shape = ctx.shape_of(x)
        narrow = dtype in dtypes.INT4_DTYPES  # 4 bits, held a byte an element
        bits = 4 if narrow else 8 * dtype.itemsize
        unsigned = dtypes.uint4 if narrow else np.dtype(f"u{dtype.itemsize}")
        amount = (
            y
            if dtypes.is_unsigned_int(dtype)
            else ctx.hlo.bitcast_convert(ctx.tensor_type(shape, unsigned), y)
        )
        too_big = ctx.compare(amount, ctx.constant(bits, unsigned, shape), "GE", unsigned)
        safe = ctx.select(too_big, ctx.constant(bits - 1 if fill_sign else 0, dtype, shape), y)
        shifted = getattr(ctx.hlo, op)(x, safe)
        if fill_sign:
            return [shifted]
        return [ctx.select(too_big, ctx.constant(0, dtype, shape), shifted)]

    return rule


shift_left_p.def_lowering(_shift_lowering("shift_left", fill_sign=False))
shift_right_logical_p.def_lowering(_shift_lowering("shift_right_logical", fill_sign=False))
shift_right_arithmetic_p.def_lowering(_shift_lowering("shift_right_arithmetic", fill_sign=True))


def _compare_lowering(direction: str):
    def rule(ctx, x, y):
        x, y = ctx.broadcast_operands(x, y)
        return [ctx.compare(x, y, direction, ctx.avals_in[0].dtype)]

    return rule


for _prim, _direction in [
    (eq_p, "EQ"), (ne_p, "NE"), (lt_p, "LT"), (le_p, "LE"), (gt_p, "GT"), (ge_p, "GE"),
]:  # fmt: skip
    _prim.def_lowering(_compare_lowering(_direction))


@select_n_p.def_lowering
def _select_n_lowering(ctx, which, *cases):
    """A binary tree of selects on ``which < middle``: out-of-range values of an
    int32 ``which`` end at the first or last case, as the impl's clamp does."""
    shape = ctx.avals_out[0].shape
    cases = [ctx.broadcast_to(c, a.dtype, shape) for c, a in zip(cases, ctx.avals_in[1:])]
    which_dtype = ctx.avals_in[0].dtype
    which = ctx.broadcast_to(which, which_dtype, shape)
    if which_dtype == _BOOL:
        return [ctx.select(which, cases[1], cases[0]) if len(cases) == 2 else cases[0]]

    def pick(first: int, options: list) -> Any:
        if len(options) == 1:
            return options[0]
        middle = len(options) // 2
        below = ctx.compare(
            which, ctx.constant(first + middle, which_dtype, shape), "LT", which_dtype
        )
        return ctx.select(
            below, pick(first, options[:middle]), pick(first + middle, options[middle:])
        )

    return [pick(0, cases)]


@clamp_p.def_lowering
def _clamp_lowering(ctx, lo, x, hi):
    """``min(max(x, lo), hi)`` (NaN anywhere gives NaN, as the impl)."""
    dtype = ctx.avals_in[1].dtype
    shape = ctx.avals_out[0].shape
    lo, hi = ctx.broadcast_to(lo, dtype, shape), ctx.broadcast_to(hi, dtype, shape)
    return [ctx.hlo.minimum(ctx.hlo.maximum(x, lo), hi)]


@convert_element_type_p.def_lowering
def _convert_lowering(ctx, x, *, new_dtype: np.dtype, weak_type: bool):
    return [ctx.convert(x, ctx.avals_in[0].dtype, new_dtype)]


# --- the public lax functions ------------------------------------------------------


def _unary_fn(prim: Primitive) -> Callable[[Any], Any]:
    def fn(x: Any) -> Any:
        return prim.bind(x)

    return _named(fn, prim)


# JAX 0.10.2's transcendental functions take ``accuracy`` (a Tolerance or
# AccuracyMode for the backend's implementation); refimpl computes one
# implementation, so it is accepted and not used


def _unary_accuracy_fn(prim: Primitive) -> Callable[..., Any]:
    def fn(x: Any, accuracy: Any = None) -> Any:
        return prim.bind(x)

    return _named(fn, prim)


def _named(fn: Callable[..., Any], prim: Primitive) -> Callable[..., Any]:
    fn.__name__ = prim.name
    fn.__doc__ = f"Elementwise ``{prim.name}`` (the ``{prim.name}`` primitive)."
    return fn


def _binary_fn(prim: Primitive) -> Callable[[Any, Any], Any]:
    def fn(x: Any, y: Any) -> Any:
        return prim.bind(x, y)

    fn.__name__ = prim.name
    fn.__doc__ = f"Elementwise ``{prim.name}`` (the ``{prim.name}`` primitive)."
    return fn


# Declared here for mypy: the JVP rules above call these names, which the
# tuple assignments below bind (mypy cannot infer a type it meets before them)
_Unary = Callable[[Any], Any]
_Accuracy = Callable[..., Any]
_Binary = Callable[[Any, Any], Any]
neg: _Unary
sign: _Unary
floor: _Unary
abs: _Unary  # noqa: A001
sinh: _Unary
cosh: _Unary
exp: _Accuracy
log: _Accuracy
sin: _Accuracy
cos: _Accuracy
rsqrt: _Accuracy
add: _Binary
sub: _Binary
div: _Binary
pow: _Binary  # noqa: A001
neg, sign, floor, ceil = map(_unary_fn, (neg_p, sign_p, floor_p, ceil_p))
exp, log, log1p, expm1 = map(_unary_accuracy_fn, (exp_p, log_p, log1p_p, expm1_p))
tanh, sin, cos, tan = map(_unary_accuracy_fn, (tanh_p, sin_p, cos_p, tan_p))
asin, acos, atan, sinh, cosh = map(_unary_fn, (asin_p, acos_p, atan_p, sinh_p, cosh_p))
sqrt, rsqrt, cbrt, logistic = map(_unary_accuracy_fn, (sqrt_p, rsqrt_p, cbrt_p, logistic_p))
square = _unary_fn(square_p)
erf = _unary_fn(erf_p)
not_, is_finite, abs = map(_unary_fn, (not_p, is_finite_p, abs_p))  # noqa: A001
bitwise_not = not_
add, sub, div, rem, pow = map(_binary_fn, (add_p, sub_p, div_p, rem_p, pow_p))  # noqa: A001
max, min, atan2 = map(_binary_fn, (max_p, min_p, atan2_p))  # noqa: A001


def mul(x: Any, y: Any, *, out_dtype: Any = None) -> Any:
    """Elementwise ``mul``; with ``out_dtype`` (any numeric operand dtypes) the
    operands are converted to it and multiplied in it (JAX 0.10.2)."""
    if out_dtype is None:
        return mul_p.bind(x, y)
    return mul_p.bind(x, y, out_dtype=dtypes.canonicalize_dtype(out_dtype))


def nextafter(x1: Any, x2: Any) -> Any:
    """The next representable value after ``x1`` in the direction of ``x2``."""
    return nextafter_p.bind(x1, x2)


bitwise_and, bitwise_or, bitwise_xor = map(_binary_fn, (and_p, or_p, xor_p))
shift_left = _binary_fn(shift_left_p)
shift_right_logical = _binary_fn(shift_right_logical_p)
shift_right_arithmetic = _binary_fn(shift_right_arithmetic_p)
eq, ne, lt, le, gt, ge = map(_binary_fn, (eq_p, ne_p, lt_p, le_p, gt_p, ge_p))


def round(x: Any, rounding_method: int = 0) -> Any:  # noqa: A001
    """Round to integral values: 0 = half away from zero, 1 = half to even."""
    return round_p.bind(x, rounding_method=int(rounding_method))


def integer_pow(x: Any, y: int) -> Any:
    return integer_pow_p.bind(x, y=y)


def copy(x: Any) -> Any:
    return copy_p.bind(x)


def select_n(which: Any, *cases: Any) -> Any:
    """``cases[which]`` elementwise (which: bool for 2 cases, or int32)."""
    return select_n_p.bind(which, *cases)


def select(pred: Any, on_true: Any, on_false: Any) -> Any:
    """``on_true`` where ``pred`` else ``on_false`` (select_n with cases swapped)."""
    return select_n(pred, on_false, on_true)


def clamp(min: Any, x: Any, max: Any) -> Any:  # noqa: A002
    return clamp_p.bind(min, x, max)


def convert_element_type(x: Any, new_dtype: Any, weak_type: bool = False) -> Any:
    """Convert ``x`` to ``new_dtype`` (canonicalized for the x64 flag).

    A Python int is converted on the host first, as JAX 0.10.2 does: one
    outside the target's range wraps (``2**32`` to int32 is 0) instead of
    being refused as an operand too large for the default int type. A
    complex ``x`` converted to a real or integer type keeps its real part and
    warns (NumPy's ``ComplexWarning``, as JAX 0.10.2 and NumPy do), also
    while tracing: the function, not the primitive, warns, so a rule that
    binds the primitive (the tangent of such a conversion) does not warn
    again."""
    if new_dtype is None:
        raise ValueError("convert_element_type: dtype must be specified.")
    new_dtype = dtypes.canonicalize_dtype(new_dtype)
    _warn_complex_to_real(x, new_dtype)
    return _convert_element_type(x, new_dtype, weak_type)


def _warn_complex_to_real(x: Any, new_dtype: np.dtype) -> None:
    # (every conversion passes here: the dtype kinds are compared first, cheaply)
    old = getattr(x, "dtype", None) if type(x) is not complex else np.dtype(complex)
    if (
        getattr(old, "kind", None) == "c"
        and getattr(new_dtype, "kind", "c") != "c"
        and not isinstance(new_dtype, dtypes.ExtendedDtype)
        and new_dtype != dtypes.float0
    ):
        # JAX 0.10.2's words; stacklevel 3: the caller of convert_element_type
        warnings.warn(
            "Casting complex values to real discards the imaginary part",
            np.exceptions.ComplexWarning,
            stacklevel=3,
        )


def convert_keeping_real_part(x: Any, new_dtype: Any) -> Any:
    """``convert_element_type(x, new_dtype)`` without the complex-to-real
    warning: for a caller that already said what happens to the imaginary
    part (``astype``'s deprecation warning, as JAX 0.10.2's, which warns once)."""
    return _convert_element_type(x, dtypes.canonicalize_dtype(new_dtype), False)


def _convert_element_type(x: Any, new_dtype: np.dtype, weak_type: bool) -> Any:
    if type(x) is int:
        x = np.asarray(x).astype(new_dtype)
    if isinstance(x, tracing.Tracer) or backends.backend_of_array(x) is not None:
        aval = tracing.get_aval(x, "convert_element_type", 0)
        if (
            aval.dtype == new_dtype
            and aval.weak_type == bool(weak_type)
            and not _differentiates_host_data(x)
        ):
            # as JAX 0.10.2: an array or tracer already of that type is returned
            # itself (no copy, no equation); NumPy data still becomes an array
            return x
    folded = _fold_scalar_constant(x, new_dtype, bool(weak_type))
    if folded is not None:
        return folded
    if (
        isinstance(x, np.ndarray)
        and x.dtype == new_dtype
        and not weak_type
        and tracing.current_builder() is not None
    ):
        # NumPy data already of the type, in a staging trace: a constant of
        # the program as it is, no equation (JAX 0.10.2 elides the trivial
        # conversion: api_test's test_elide_trivial_convert_element_types)
        return x
    return convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=bool(weak_type))


def _fold_scalar_constant(x: Any, new_dtype: np.dtype, weak_type: bool) -> Any:
    """Inside a staging trace, a Python, NumPy or literal scalar converted to
    a strong dtype (or to its own type) is converted now, on the host, and
    stands in the program as a literal (``3.0:f16[]``), as JAX 0.10.2 folds
    it: no equation, so ``make_jaxpr(lambda: convert_element_type(3., f16))``
    is ``{ lambda ; . let  in (3.0:f16[],) }``, and ``jnp.float32(2.)`` in a
    traced function is the literal ``2.0:f32[]``. Outside a trace the
    conversion runs (an array, as JAX's)."""
    builder = tracing.current_builder()
    scalar = isinstance(x, (bool, int, float, complex, np.generic, tracing.TypedScalar)) or (
        isinstance(x, np.ndarray) and x.shape == ()
    )
    if builder is None or not scalar or isinstance(new_dtype, dtypes.ExtendedDtype):
        return None
    aval = tracing.get_aval(x, "convert_element_type", 0)
    if aval.dtype == new_dtype and aval.weak_type == weak_type:
        value = tracing.concrete_value(x, aval)
    elif weak_type or new_dtype == dtypes.float0:
        return None
    else:
        value = np.asarray(tracing.concrete_value(x, aval))
        if dtypes.is_complex(value.dtype) and not dtypes.is_complex(new_dtype):
            value = value.real
        if not np.all(np.isfinite(value)) and np.issubdtype(new_dtype, np.integer):
            return None  # as JAX: inf/nan to an integer is left to the primitive
        value = value.astype(new_dtype)
    out_aval = aval.update(dtype=new_dtype, weak_type=weak_type)
    literal: Any = Literal(value, out_aval)  # a tracer standing for a literal, as JAX's
    return tracing.DynamicTracer(out_aval, builder, literal, "a constant")


def _differentiates_host_data(x: Any) -> bool:
    """True for a forward-mode tracer whose innermost primal is NumPy data:
    JAX 0.10.2 binds the conversion for such a (concrete) tracer, so ``jvp``
    of ``convert_element_type(x, x.dtype)`` at a NumPy ``x`` returns arrays
    (the NumPy value itself came back)."""
    while isinstance(x, tracing.Tracer) and hasattr(x, "primal"):
        x = x.primal
    return isinstance(x, np.ndarray | np.generic)


# ad_helpers and structural's pad rules, below this module, apply these
rule_context.add = add
rule_context.sub = sub
rule_context.select = select
rule_context.convert_element_type_p = convert_element_type_p


__all__ = [
    "neg", "sign", "floor", "ceil", "round", "exp", "log", "log1p", "expm1", "tanh", "sin",
    "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "sqrt", "rsqrt", "cbrt", "logistic",
    "erf", "not_", "bitwise_not", "is_finite", "abs", "add", "sub", "mul", "div", "rem", "pow",
    "max", "min", "atan2", "nextafter", "bitwise_and", "bitwise_or", "bitwise_xor",
    "shift_left", "shift_right_logical", "shift_right_arithmetic", "eq", "ne", "lt", "le",
    "gt", "ge", "integer_pow", "select_n", "select", "clamp", "convert_element_type", "copy",
]  # fmt: skip
# (square is not exported: refimpl.lax.square, which checks its operand first, binds it)
