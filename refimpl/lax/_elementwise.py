"""Elementwise ``jax.lax`` functions JAX defines over other primitives, written
over refimpl's: ``square``, ``reciprocal``, ``exp2``, the inverse hyperbolic
functions, ``real``/``imag``/``conj``/``complex``, ``mulhi`` and
``igamma_grad_a``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from refimpl import dtypes, tracing
from refimpl.core import ShapedArray
from refimpl.custom_derivatives import custom_jvp
from refimpl.primitives import ad_helpers, complex_parts, special, structural
from refimpl.primitives import elementwise as ew
from refimpl.primitives.prng import bitcast_convert_type


def _aval(x: Any, name: str, index: int = 0) -> ShapedArray:
    return tracing.get_aval(x, name, index)


def _require(name: str, x: Any, allowed: Callable[[np.dtype], bool], what: str) -> ShapedArray:
    aval = _aval(x, name)
    if not allowed(aval.dtype):
        raise TypeError(f"{name} does not accept dtype {aval.dtype.name}; it takes {what}")
    return aval


def square(x: Any) -> Any:
    """``x * x`` elementwise (numeric types; the ``square`` primitive)."""
    _require("square", x, lambda d: not dtypes.is_bool(d), "numeric types (not bool)")
    return ew.square(x)


def reciprocal(x: Any) -> Any:
    """``1 / x`` elementwise (floating or complex types), as ``integer_pow(x, -1)``."""
    _require("reciprocal", x, dtypes.is_inexact, "floating-point or complex types")
    return ew.integer_pow(x, -1)


def exp2(x: Any, *, accuracy: Any = None) -> Any:
    """``2 ** x`` as XLA lowers JAX's exp2: ``exp(log(2) * x)``."""
    aval = _require("exp2", x, dtypes.is_inexact, "floating-point or complex types")
    return ew.exp(ew.mul(ad_helpers.scalar(math.log(2), aval), x))


# The inverse hyperbolic functions of an already inexact ``x``; ``refimpl.numpy``'s
# arcsinh/arccosh/arctanh promote and call these (the numpy layer sits above lax).
# Results are those of the formulas over the primitives: a weak ``x`` may give a
# strong result (``abs`` and the filled ones are strong), which each layer adjusts.


def _scalar(x: Any, value: Any) -> tracing.TypedScalar:
    aval = _aval(x, "rnp")
    return tracing.TypedScalar(value, aval.dtype, aval.weak_type)


def _abs_keeping_weak(x: Any) -> Any:
    aval = _aval(x, "absolute")
    out = ew.abs(x)
    out_aval = _aval(out, "absolute")
    if aval.weak_type and not out_aval.weak_type:
        out = ew.convert_element_type(out, out_aval.dtype, weak_type=True)
    return out


def _sqrt_max(dtype: np.dtype) -> float:
    real_dtype = np.float32 if dtype == np.complex64 else dtype
    # ml_dtypes' finfo: NumPy's does not know bfloat16
    return float(np.sqrt(float(dtypes.finfo(np.dtype(real_dtype)).max))) / 2


# JAX's asinh/acosh/atanh are primitives with their own jvp rules; refimpl's
# real ones are formulas, so they take JAX's rules as custom_jvp rules (built
# on first use: a module-level custom_jvp would be built at import). The
# formulas' own derivatives are right in value but not in the sign of a zero:
# asinh'' at 0 is JAX's -0.0 only through rsqrt's rule.
_REAL_INVERSE_HYPERBOLIC: dict[str, Any] = {}


def _with_jax_jvp(name: str, value: Callable[[Any], Any]) -> Any:
    if name not in _REAL_INVERSE_HYPERBOLIC:
        fn = custom_jvp(value)

        def jvp(primals: Any, tangents: Any) -> Any:
            ((x,), (g,)) = primals, tangents
            one = _scalar(x, 1)
            if name == "asinh":  # g rsqrt(x^2 + 1)
                t = ew.mul(g, ew.rsqrt(ew.add(ew.square(x), one)))
            elif name == "acosh":  # g rsqrt(x^2 - 1)
                t = ew.mul(g, ew.rsqrt(ew.sub(ew.square(x), one)))
            else:  # atanh: (1 / (1 + x)) (g / (1 - x))
                t = ew.mul(ew.integer_pow(ew.add(one, x), -1), ew.div(g, ew.sub(one, x)))
            return fn(x), t

        fn.defjvp(jvp)
        _REAL_INVERSE_HYPERBOLIC[name] = fn
    return _REAL_INVERSE_HYPERBOLIC[name]


def arcsinh_of_inexact(x: Any) -> Any:
    """``sign(x) log1p(|x| + x^2 / (1 + sqrt(1 + x^2)))``; ``log(2|x|)`` once x^2
    would overflow; JAX's derivative ``1 / sqrt(x^2 + 1)``."""
    if dtypes.is_complex(_aval(x, "arcsinh").dtype):
        return _complex_asinh(x)
    return _with_jax_jvp("asinh", _real_asinh)(x)


def _complex_asinh(x: Any) -> Any:
    # asinh(z) = -i asin(i z): asin's primitive carries the complex branch cuts
    # and its derivative 1 / sqrt(1 - w^2) gives asinh's 1 / sqrt(1 + z^2);
    # the two multiplications by +-i are done by swapping parts (exact, no inf * 0)
    re, im = complex_parts.real(x), complex_parts.imag(x)
    w = ew.asin(complex(ew.neg(im), re))
    real = complex_parts.imag(w)
    # XLA's asinh of nan +- inf j is +inf + nan j; through asin the infinity takes
    # the sign of the NaN's sign bit
    nan_inf = ew.bitwise_and(ew.ne(re, re), ew.eq(ew.abs(im), _scalar(im, math.inf)))
    real = ew.select(nan_inf, ew.abs(real), real)
    return complex(real, ew.neg(complex_parts.real(w)))


def _real_asinh(x: Any) -> Any:
    aval = _aval(x, "arcsinh")
    # |x| as a select; each branch sees only values it is finite for (the
    # derivative is JAX's rule's, _with_jax_jvp)
    negative = ew.lt(x, _scalar(x, 0))
    a = ew.select(negative, ew.neg(x), x)
    big = ew.gt(a, _scalar(x, _sqrt_max(aval.dtype)))
    ones = structural.broadcast_in_dim(_scalar(x, 1), aval.shape, ())
    safe = ew.select(big, ones, a)
    square = ew.mul(safe, safe)
    one = _scalar(x, 1)
    small = ew.log1p(ew.add(safe, ew.div(square, ew.add(one, ew.sqrt(ew.add(square, one))))))
    large = ew.add(ew.log(ew.select(big, a, ones)), _scalar(x, math.log(2)))
    result = ew.select(big, large, small)
    result = ew.select(negative, ew.neg(result), result)
    # asinh(-0) is -0 (XLA's); the formula gives +0
    return ew.select(ew.eq(x, _scalar(x, 0)), x, result)


def arccosh_of_inexact(x: Any) -> Any:
    """``log(x + sqrt(x - 1) sqrt(x + 1))``; ``log(x) + log(2)`` once x^2 would
    overflow; NaN below 1; JAX's derivative ``1 / sqrt(x^2 - 1)``."""
    if dtypes.is_complex(_aval(x, "arccosh").dtype):
        return _complex_acosh()(x)
    return _with_jax_jvp("acosh", _real_acosh)(x)


def _real_acosh(x: Any) -> Any:
    aval = _aval(x, "arccosh")
    one = _scalar(x, 1)
    big = ew.gt(x, _scalar(x, _sqrt_max(aval.dtype)))
    root = ew.mul(ew.sqrt(ew.sub(x, one)), ew.sqrt(ew.add(x, one)))
    small = ew.log1p(ew.add(ew.sub(x, one), root))
    large = ew.add(ew.log(x), _scalar(x, math.log(2)))
    return ew.select(big, large, small)


_COMPLEX_ACOSH: list[Any] = []


def _complex_acosh() -> Any:
    """Complex acosh with the principal branch's derivative
    ``1 / (sqrt(z - 1) sqrt(z + 1))`` as its jvp (a ``custom_jvp``, built on
    first use: a module-level custom_jvp would be built at import).
    Differentiating the value's formula instead goes through acos's jvp
    ``-1 / sqrt(1 - z^2)``, whose square root flips sign with the zero
    imaginary part of ``1 - z^2`` on the real axis: d acosh(1.6 + 0j) came out
    -0.8006, not JAX's (and the finite differences') +0.8006."""
    if not _COMPLEX_ACOSH:
        fn = custom_jvp(_complex_acosh_value)

        def jvp(primals: Any, tangents: Any) -> Any:
            ((z,), (t,)) = primals, tangents
            one = _scalar(z, 1)
            root = ew.mul(ew.sqrt(ew.sub(z, one)), ew.sqrt(ew.add(z, one)))
            return fn(z), ew.div(t, root)

        fn.defjvp(jvp)
        _COMPLEX_ACOSH.append(fn)
    return _COMPLEX_ACOSH[0]


def _complex_acosh_value(x: Any) -> Any:
    """acosh z = |Im w| + i sign(Im z) Re w for w = acos z (cosh(i w) = cos w
    = z; the principal branch), as XLA's chlo.acosh: accurate near 0 and 1
    where log(z + sqrt(z - 1) sqrt(z + 1)) cancels."""
    w = ew.acos(x)
    re_w, im_w = complex_parts.real(w), complex_parts.imag(w)
    y = complex_parts.imag(x)
    negative = ew.lt(y, _scalar(y, 0))  # -0.0 counts as positive, as XLA's
    return complex(ew.abs(im_w), ew.select(negative, ew.neg(re_w), re_w))


def arctanh_of_inexact(x: Any) -> Any:
    """``log1p(2x / (1 - x)) / 2``; of a complex, ``i atan(-i x)``; JAX's
    derivative ``(1 / (1 + x)) (1 / (1 - x))``."""
    if dtypes.is_complex(_aval(x, "arctanh").dtype):
        # XLA expands chlo.atan of a complex as -i atanh(i z) and JAX lowers atanh to
        # chlo.atanh, so i atan(-i z) is JAX's atanh bit for bit, NaN and infinite parts
        # included; the multiplications by +-i are swaps of parts (exact, no inf * 0), and
        # atan's derivative 1 / (1 + w^2) gives atanh's 1 / (1 - z^2)
        re, im = complex_parts.real(x), complex_parts.imag(x)
        w = ew.atan(complex(im, ew.neg(re)))
        return complex(ew.neg(complex_parts.imag(w)), complex_parts.real(w))
    return _with_jax_jvp("atanh", _real_atanh)(x)


def _real_atanh(x: Any) -> Any:
    ratio = ew.div(ew.add(x, x), ew.sub(_scalar(x, 1), x))
    return ew.mul(ew.log1p(ratio), _scalar(x, 0.5))


def _inverse_hyperbolic(
    name: str, numpy_name: str, formula: Callable[[Any], Any]
) -> Callable[[Any], Any]:
    def fn(x: Any) -> Any:
        aval = _require(name, x, dtypes.is_inexact, "floating-point or complex types")
        out = formula(x)
        if aval.weak_type:  # lax keeps a weak operand's weak type; the numpy layer does not
            out = ew.convert_element_type(out, aval.dtype, weak_type=True)
        return out

    fn.__name__ = name
    fn.__doc__ = f"Elementwise inverse hyperbolic function (``refimpl.numpy.{numpy_name}``)."
    return fn


asinh = _inverse_hyperbolic("asinh", "arcsinh", arcsinh_of_inexact)
acosh = _inverse_hyperbolic("acosh", "arccosh", arccosh_of_inexact)
atanh = _inverse_hyperbolic("atanh", "arctanh", arctanh_of_inexact)


def _complex_part(name: str, x: Any) -> tuple[Any, ShapedArray]:
    aval = _require(name, x, dtypes.is_complex, "complex types")
    return x, aval


def real(x: Any) -> Any:
    """The real part of a complex array (a float array)."""
    _complex_part("real", x)
    return complex_parts.real(x)


def imag(x: Any) -> Any:
    """The imaginary part of a complex array (a float array)."""
    _complex_part("imag", x)
    return complex_parts.imag(x)


def conj(x: Any) -> Any:
    """The complex conjugate; a float input becomes complex (as JAX's lax.conj).

    Only float32 and float64 have a complex type to become, so JAX 0.10.2
    refuses float16 and bfloat16 as it refuses integers and bool."""
    aval = _require(
        "conj",
        x,
        lambda d: dtypes.is_complex(d) or d in (np.float32, np.float64),
        "float32, float64 or complex types",
    )
    if not dtypes.is_complex(aval.dtype):
        target = np.complex64 if aval.dtype != np.float64 else np.complex128
        return ew.convert_element_type(x, target, weak_type=aval.weak_type)
    return complex_parts.conj(x)


def complex(x: Any, y: Any) -> Any:  # noqa: A001
    """``x + i y`` from two float arrays of one dtype (float32 gives complex64)."""
    return complex_parts.complex(x, y)


# --- mulhi ----------------------------------------------------------------------------------


def mulhi(x: Any, y: Any, /) -> Any:
    """The upper N bits of the 2N-bit product of N-bit integers (signed or
    unsigned, as their dtype), elementwise.

    Without a 2N-bit type (int32 with x64 off; int64 always), the product is
    assembled from N/2-bit halves in unsigned N-bit arithmetic (each partial
    product fits), and the signed result corrects the unsigned one:
    ``hi_s(a, b) = hi_u(a, b) - (a < 0 ? b : 0) - (b < 0 ? a : 0)`` mod 2**N.
    Shapes broadcast as the binary ops' (a rank-0 operand, size-1 dims).
    """

    api = "mulhi"
    ax, ay = tracing.get_aval(x, api, "x"), tracing.get_aval(y, api, "y")
    for arg, aval in (("x", ax), ("y", ay)):
        if not dtypes.is_integer(aval.dtype):
            raise TypeError(f"{api}: {arg} must have an integer dtype, got {aval.dtype}")
    dtype = ay.dtype if ax.weak_type and not ay.weak_type else ax.dtype
    x = ew.convert_element_type(x, dtype) if ax.dtype != dtype or ax.weak_type else x
    y = ew.convert_element_type(y, dtype) if ay.dtype != dtype or ay.weak_type else y
    # JAX's binary shape rule: a rank-0 operand or size-1 dims broadcast
    shape = ew.broadcasting_shape(api, [ax, ay])
    if ax.shape != shape:
        x = structural.broadcast_in_dim(x, shape, tuple(range(len(ax.shape))))
    if ay.shape != shape:
        y = structural.broadcast_in_dim(y, shape, tuple(range(len(ay.shape))))
    bits = 8 * np.dtype(dtype).itemsize
    half = bits // 2
    unsigned = np.dtype(f"u{bits // 8}")
    signed = np.issubdtype(dtype, np.signedinteger)
    ux = bitcast_convert_type(x, unsigned) if signed else x
    uy = bitcast_convert_type(y, unsigned) if signed else y

    def const(value: int) -> Any:
        return structural.broadcast_in_dim(np.asarray(value, unsigned), shape, ())

    mask, shift = const((1 << half) - 1), const(half)
    a0, a1 = ew.bitwise_and(ux, mask), ew.shift_right_logical(ux, shift)
    b0, b1 = ew.bitwise_and(uy, mask), ew.shift_right_logical(uy, shift)
    low, cross1, cross2, high = ew.mul(a0, b0), ew.mul(a0, b1), ew.mul(a1, b0), ew.mul(a1, b1)
    mid = ew.add(
        ew.shift_right_logical(low, shift),
        ew.add(ew.bitwise_and(cross1, mask), ew.bitwise_and(cross2, mask)),
    )
    hi = ew.add(
        ew.add(high, ew.shift_right_logical(cross1, shift)),
        ew.add(ew.shift_right_logical(cross2, shift), ew.shift_right_logical(mid, shift)),
    )
    if not signed:
        return hi
    zero = const(0)
    zero_s = structural.broadcast_in_dim(np.asarray(0, dtype), shape, ())
    hi = ew.sub(hi, ew.select(ew.lt(x, zero_s), uy, zero))
    hi = ew.sub(hi, ew.select(ew.lt(y, zero_s), ux, zero))
    return bitcast_convert_type(hi, dtype)


def igamma_grad_a(a: Any, x: Any) -> Any:
    """``d/da`` of the regularized lower incomplete gamma function
    ``P(a, x)``: the slope ``lax.igamma``'s own derivative uses (from the
    implicit derivative of a Gamma sample, as JAX's). Float operands of one
    dtype and shape (or weakly typed scalars), as ``lax.igamma``."""

    avals = [tracing.get_aval(v, "igamma_grad_a", name) for v, name in ((a, "a"), (x, "x"))]
    try:
        out = special.igamma_p.abstract_eval(*avals)
    except TypeError as e:  # igamma's own checks, reported under this function's name
        raise TypeError(f"igamma_grad_a: {e}") from None
    a, x = (ew.convert_element_type(v, out.dtype, out.weak_type) for v in (a, x))
    a, x = (
        v if av.shape == out.shape else structural.broadcast_in_dim(v, out.shape, ())
        for v, av in zip((a, x), avals, strict=True)
    )  # a scalar beside an array: its rank-0 value everywhere
    return ew.convert_element_type(special._igamma_dp_da(a, x), out.dtype, out.weak_type)


__all__ = [
    "square",
    "reciprocal",
    "exp2",
    "asinh",
    "acosh",
    "atanh",
    "real",
    "imag",
    "conj",
    "complex",
    "igamma_grad_a",
    "mulhi",
]
