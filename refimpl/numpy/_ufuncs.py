"""Elementwise functions with NumPy broadcasting and JAX promotion.

Each function promotes its operands the way ``jax.numpy`` does (see
``_promote``), broadcasts them, and applies ``lax`` functions. Results are
weakly typed exactly when the promoted operands are (``rnp.add(i8, 1)`` is a
strong int8, ``rnp.add(1, 2.5)`` a weak float32). Comparisons and other
bool-valued functions are never weak in refimpl (JAX sometimes marks them
weak; the flag has no effect on bool promotion).
"""

from __future__ import annotations

import operator
from typing import Any

import ml_dtypes
import numpy as np

from refimpl import dtypes, lax, tracing
from refimpl.numpy._promote import (
    as_array,
    aval_of,
    broadcast_arrays,
    broadcast_shapes,
    broadcast_to_shape,
    is_traced,
    promote_args,
    promote_args_inexact,
    promote_args_numeric,
    promote_dtypes,
    promote_dtypes_inexact,
    promote_dtypes_numeric,
)
from refimpl.primitives import ad_helpers

Array = Any  # a refimpl array or tracer
ArrayLike = Any  # anything the numpy layer accepts as an operand


# --- small helpers ------------------------------------------------------------------


def _dtype_of(x: ArrayLike, fn_name: str = "rnp", position: int = 0) -> np.dtype:
    return aval_of(x, fn_name, position).dtype


def scalar_like(x: ArrayLike, value: Any, weak: bool | None = None) -> tracing.TypedScalar:
    """``value`` as a rank-0 constant of ``x``'s dtype (and weak flag unless given)."""
    aval = aval_of(x, "rnp", 0)
    return tracing.TypedScalar(value, aval.dtype, aval.weak_type if weak is None else weak)


def const_like(x: ArrayLike, value: Any) -> tracing.TypedScalar:
    """``value`` as a rank-0 constant of ``x``'s dtype, weak only when ``x`` is a
    weak rank-0 value: JAX's ``lax._const``, so ``ne(x, 0)`` of a weak array
    gives a strong bool (``scalar_like`` would copy the array's weak flag)."""
    return ad_helpers.lax_const(value, aval_of(x, "rnp", 0))


def full_like_shape(x: ArrayLike, value: Any, dtype: np.dtype) -> Array:
    """An array of ``x``'s shape filled with ``value`` (strongly typed ``dtype``)."""
    shape = aval_of(x, "rnp", 0).shape
    return lax.broadcast_in_dim(tracing.TypedScalar(value, dtype, False), shape, ())


def to_bool(x: ArrayLike) -> Array:
    """``x != 0`` (``x`` itself when it already is bool)."""
    if dtypes.is_bool(_dtype_of(x)):
        return x
    return lax.ne(x, const_like(x, 0))


def _reject_bool(fn_name: str, x: ArrayLike) -> None:
    if dtypes.is_bool(_dtype_of(x, fn_name)):
        raise TypeError(f"{fn_name} does not accept dtype bool")


def select(condition: ArrayLike, x: ArrayLike, y: ArrayLike) -> Array:
    """``x`` where ``condition`` else ``y``; the three already promoted, any shapes."""
    avals = [aval_of(a, "where", i) for i, a in enumerate((condition, x, y))]
    shape = broadcast_shapes("where", *(av.shape for av in avals))
    condition, x, y = (
        a if av.shape == shape else broadcast_to_shape(a, av.shape, shape)
        for a, av in zip((condition, x, y), avals, strict=True)
    )
    return lax.select(condition, x, y)


# --- unary -------------------------------------------------------------------------


def _inexact_unary(lax_fn: Any, name: str) -> Any:
    def fn(x: ArrayLike, /) -> Array:
        (x,) = promote_args_inexact(name, x)
        return lax_fn(x)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``{name}``; bool and integer inputs compute in the default float."
    return fn


exp = _inexact_unary(lax.exp, "exp")
expm1 = _inexact_unary(lax.expm1, "expm1")
log = _inexact_unary(lax.log, "log")
log1p = _inexact_unary(lax.log1p, "log1p")
sqrt = _inexact_unary(lax.sqrt, "sqrt")
cbrt = _inexact_unary(lax.cbrt, "cbrt")
sin = _inexact_unary(lax.sin, "sin")
cos = _inexact_unary(lax.cos, "cos")
tan = _inexact_unary(lax.tan, "tan")
arcsin = _inexact_unary(lax.asin, "arcsin")
arccos = _inexact_unary(lax.acos, "arccos")
arctan = _inexact_unary(lax.atan, "arctan")
sinh = _inexact_unary(lax.sinh, "sinh")
cosh = _inexact_unary(lax.cosh, "cosh")
tanh = _inexact_unary(lax.tanh, "tanh")


def absolute(x: ArrayLike, /) -> Array:
    """``|x|``; bool and unsigned inputs are returned unchanged, complex gives real."""
    aval = aval_of(x, "absolute", 0)
    if dtypes.is_bool(aval.dtype) or dtypes.is_unsigned_int(aval.dtype):
        return as_array(x)
    result = lax.abs(x)
    result_aval = aval_of(result, "absolute", 0)
    if aval.weak_type and not result_aval.weak_type:
        # the abs primitive drops the weak type; jnp.abs keeps it
        result = lax.convert_element_type(result, result_aval.dtype, weak_type=True)
    return result


abs = absolute  # noqa: A001


def negative(x: ArrayLike, /) -> Array:
    """``-x`` (integers wrap around); bool is a TypeError."""
    _reject_bool("negative", x)
    return lax.neg(x)


def positive(x: ArrayLike, /) -> Array:
    """``+x``: the input itself as an array."""
    aval_of(x, "positive", 0)
    return as_array(x)


def sign(x: ArrayLike, /) -> Array:
    """-1, 0 or 1 by the sign of ``x`` (``x / |x|`` for complex); bool is a TypeError."""
    _reject_bool("sign", x)
    return lax.sign(x)


def floor(x: ArrayLike, /) -> Array:
    """Round down; bool and integers are returned unchanged."""
    if not dtypes.is_inexact(_dtype_of(x, "floor")):
        return as_array(x)
    return lax.floor(x)


def ceil(x: ArrayLike, /) -> Array:
    """Round up; bool and integers are returned unchanged."""
    if not dtypes.is_inexact(_dtype_of(x, "ceil")):
        return as_array(x)
    return lax.ceil(x)


def round(a: ArrayLike, decimals: int = 0, out: None = None) -> Array:  # noqa: A001
    """Round to ``decimals`` decimal places, halves to even (like NumPy).

    Integers are returned unchanged; ``decimals != 0`` scales by ``10**decimals``,
    rounds and scales back (float16 in float32), as JAX does.
    """
    if out is not None:
        raise NotImplementedError("round: the out argument is not supported")
    decimals = operator.index(decimals)
    dtype = _dtype_of(a, "round")
    if dtypes.is_bool(dtype):
        raise ValueError("round: bool input is not supported (round needs a number)")
    if dtypes.is_integer(dtype):
        if decimals < 0:
            raise NotImplementedError("round: integer input with decimals < 0 is not supported")
        return as_array(a)
    if decimals > np.log10(float(ml_dtypes.finfo(dtype).max)):
        # 10**decimals would overflow; no value of the dtype has digits that far out
        return as_array(a)
    if dtypes.is_complex(dtype):
        # JAX rounds the two parts separately (NumPy does too)
        return lax.complex(_round_float(real(a), decimals), _round_float(imag(a), decimals))
    return _round_float(a, decimals)


def _round_float(a: Any, decimals: int) -> Array:
    if decimals == 0:
        return lax.round(a, 1)
    dtype = _dtype_of(a, "round")
    x = lax.convert_element_type(a, np.float32) if dtype == np.float16 else a
    factor = scalar_like(x, 10.0**decimals)
    rounded = lax.div(lax.round(lax.mul(x, factor), 1), factor)
    return lax.convert_element_type(rounded, np.float16) if dtype == np.float16 else rounded


around = round


def isfinite(x: ArrayLike, /) -> Array:
    """Not inf and not NaN; always True for bool and integers."""
    dtype = _dtype_of(x, "isfinite")
    if dtypes.is_floating(dtype):
        return lax.is_finite(x)
    if dtypes.is_complex(dtype):
        return lax.bitwise_and(lax.is_finite(real(x)), lax.is_finite(imag(x)))
    return full_like_shape(x, True, np.dtype(bool))


def isinf(x: ArrayLike, /) -> Array:
    """``x`` is +inf or -inf (in either part, for complex). The result is
    strongly typed, also for a Python float (JAX compares with a strong
    constant)."""
    dtype = _dtype_of(x, "isinf")
    if dtypes.is_floating(dtype):
        return lax.eq(lax.abs(x), np.asarray(np.inf, dtype))
    if dtypes.is_complex(dtype):
        return lax.bitwise_or(isinf(real(x)), isinf(imag(x)))
    return full_like_shape(x, False, np.dtype(bool))


def isnan(x: ArrayLike, /) -> Array:
    """``x != x``."""
    aval_of(x, "isnan", 0)
    return lax.ne(x, x)


def logical_not(x: ArrayLike, /) -> Array:
    """``not x`` elementwise, after ``x != 0``."""
    aval_of(x, "logical_not", 0)
    return lax.bitwise_not(to_bool(x))


def invert(x: ArrayLike, /) -> Array:
    """Bitwise not (``~x``) of bool or integer input."""
    aval_of(x, "invert", 0)
    return lax.bitwise_not(x)


bitwise_not = invert


def square(x: ArrayLike, /) -> Array:
    """``x * x`` (bool computes in the default int)."""
    (x,) = promote_dtypes_numeric("square", x)
    return lax.square(x)


def reciprocal(x: ArrayLike, /) -> Array:
    """``1 / x``; bool and integers compute in the default float."""
    (x,) = promote_dtypes_inexact("reciprocal", x)
    return lax.integer_pow(x, -1)


# Complex parts: the real/imag/conj primitives, which read and write each part
# directly (an infinity or NaN in one part leaves the other alone, as XLA).


def real(val: ArrayLike, /) -> Array:
    """The real part; non-complex input is returned unchanged."""
    aval = aval_of(val, "real", 0)
    if not dtypes.is_complex(aval.dtype):
        return as_array(val)
    return lax.real(val)


def imag(val: ArrayLike, /) -> Array:
    """The imaginary part; zeros of the same dtype for non-complex input."""
    aval = aval_of(val, "imag", 0)
    if not dtypes.is_complex(aval.dtype):
        return lax.broadcast_in_dim(scalar_like(val, 0), aval.shape, ())
    return lax.imag(val)


def conjugate(x: ArrayLike, /) -> Array:
    """The complex conjugate; non-complex input is returned unchanged."""
    aval = aval_of(x, "conjugate", 0)
    if not dtypes.is_complex(aval.dtype):
        return as_array(x)
    return lax.conj(x)


conj = conjugate


# --- binary ------------------------------------------------------------------------


def add(x: ArrayLike, y: ArrayLike, /) -> Array:
    """``x + y``; for bool, logical or."""
    x, y = promote_args("add", x, y)
    return lax.bitwise_or(x, y) if dtypes.is_bool(_dtype_of(x)) else lax.add(x, y)


def subtract(x: ArrayLike, y: ArrayLike, /) -> Array:
    """``x - y``; bool is a TypeError."""
    x, y = promote_args("subtract", x, y)
    _reject_bool("subtract", x)
    return lax.sub(x, y)


def multiply(x: ArrayLike, y: ArrayLike, /) -> Array:
    """``x * y``; for bool, logical and."""
    x, y = promote_args("multiply", x, y)
    return lax.bitwise_and(x, y) if dtypes.is_bool(_dtype_of(x)) else lax.mul(x, y)


def true_divide(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """``x1 / x2`` in floating point (bool and integers go to the default float)."""
    x1, x2 = promote_args_inexact("true_divide", x1, x2)
    return lax.div(x1, x2)


divide = true_divide


def _float_divmod(x1: Array, x2: Array) -> tuple[Array, Array]:
    """Python's float ``divmod``: the remainder takes the sign of the divisor."""
    mod = lax.rem(x1, x2)
    corrected = select(lax.eq(x2, scalar_like(x2, 0)), x1, lax.sub(x1, mod))
    quotient = lax.div(corrected, x2)
    zero = scalar_like(mod, 0)
    fix = lax.bitwise_and(lax.ne(mod, zero), lax.ne(lax.sign(x2), lax.sign(mod)))
    mod = select(fix, lax.add(mod, x2), mod)
    quotient = select(fix, lax.sub(quotient, scalar_like(quotient, 1)), quotient)
    return lax.round(quotient), mod


def floor_divide(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """``x1 // x2``: the quotient rounded toward minus infinity.

    Integer division by zero gives what ``lax.div`` gives (-1, or all ones).
    """
    x1, x2 = promote_args_numeric("floor_divide", x1, x2)
    dtype = _dtype_of(x1)
    if dtypes.is_unsigned_int(dtype):
        return lax.div(x1, x2)
    if dtypes.is_integer(dtype):
        quotient = lax.div(x1, x2)
        zero = scalar_like(x1, 0)
        signs_differ = lax.ne(lax.sign(x1), lax.sign(x2))
        inexact = lax.ne(lax.rem(x1, x2), zero)
        fix = lax.bitwise_and(signs_differ, inexact)
        return select(fix, lax.sub(quotient, scalar_like(quotient, 1)), quotient)
    if dtypes.is_complex(dtype):
        raise TypeError("floor_divide does not support complex-valued inputs")
    return _float_divmod(x1, x2)[0]


def remainder(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """``x1 % x2`` with the sign of the divisor (Python/NumPy), unlike ``lax.rem``.

    Integer ``x % 0`` is 0 (the divisor 0 is replaced by 1), as in JAX.
    """
    x1, x2 = promote_args_numeric("remainder", x1, x2)
    zero = scalar_like(x1, 0)
    if dtypes.is_integer(_dtype_of(x2)):
        x2 = select(lax.eq(x2, scalar_like(x2, 0)), scalar_like(x2, 1), x2)
    trunc_mod = lax.rem(x1, x2)
    nonzero = lax.ne(trunc_mod, zero)
    signs_differ = lax.ne(lax.lt(trunc_mod, zero), lax.lt(x2, scalar_like(x2, 0)))
    fix = lax.bitwise_and(signs_differ, nonzero)
    return select(fix, lax.add(trunc_mod, x2), trunc_mod)


mod = remainder


def _static_int(value: Any) -> int | None:
    """``operator.index(value)`` for concrete values; None if traced or not an int."""
    if is_traced(value):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def power(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """``x1 ** x2``.

    As in JAX: a concrete integer exponent uses ``integer_pow`` (the result has
    ``x1``'s dtype, bool -> int); an integer base with an integer array
    exponent uses binary exponentiation; a float base with an integer exponent
    keeps the base's dtype; anything else promotes and uses ``lax.pow``.
    """
    aval_of(x1, "power", 0)
    aval_of(x2, "power", 1)
    exponent = _static_int(x2)
    if exponent is not None:
        (x1,) = promote_dtypes_numeric("power", x1)
        if exponent < 0 and dtypes.is_integer(_dtype_of(x1)):
            raise TypeError(f"power: integers cannot be raised to negative powers, got {exponent}")
        return lax.integer_pow(x1, exponent)
    d1, d2 = _dtype_of(x1), _dtype_of(x2)
    base, exp_ = promote_args_numeric("power", x1, x2)
    if not dtypes.is_inexact(_dtype_of(base)):
        if _dtype_of(base) in dtypes.INT4_DTYPES:
            # JAX 0.10.2's array-exponent integer power asks NumPy for the bit
            # width, which it has not for ml_dtypes' int4: a ValueError there too
            raise ValueError(
                f"power: a {_dtype_of(base).name} base needs a static integer exponent "
                "(an array exponent is not supported for 4-bit integers)"
            )
        return _pow_int_int(base, exp_)
    if dtypes.is_inexact(d1) and dtypes.is_integer(d2):
        # the base's dtype is kept; the result is weak only if both operands
        # are. The exponent stays an integer: lax.pow's derivative in the
        # base is then 0 at 0 ** 0 (not nan), as JAX's
        x1, x2 = broadcast_arrays("power", x1, x2)
        return lax.pow(x1, x2)
    return lax.pow(base, exp_)


def _pow_int_int(x1: Array, x2: Array) -> Array:
    """Integer power by 6 steps of binary exponentiation (more would overflow for
    any base > 1); negative exponents give unspecified values, as in JAX."""
    zero = scalar_like(x2, 0, weak=False)
    one = scalar_like(x2, 1, weak=False)
    base_is_zero = lax.bitwise_and(lax.eq(x1, zero), lax.ne(x2, zero))
    acc = select(base_is_zero, zero, one)
    for _ in range(6):
        acc = select(lax.ne(lax.bitwise_and(x2, one), zero), lax.mul(acc, x1), acc)
        x1 = lax.mul(x1, x1)
        x2 = lax.shift_right_logical(x2, one)
    return acc


pow = power  # noqa: A001


def _promoted_binary(lax_fn: Any, name: str, promote: Any, doc: str) -> Any:
    def fn(x: ArrayLike, y: ArrayLike, /) -> Array:
        return lax_fn(*promote(name, x, y))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


maximum = _promoted_binary(lax.max, "maximum", promote_args, "Elementwise maximum (NaN wins).")
minimum = _promoted_binary(lax.min, "minimum", promote_args, "Elementwise minimum (NaN wins).")
arctan2 = _promoted_binary(
    lax.atan2, "arctan2", promote_args_inexact, "``atan(x / y)`` in the right quadrant."
)
equal = _promoted_binary(lax.eq, "equal", promote_args, "``x == y``.")
not_equal = _promoted_binary(lax.ne, "not_equal", promote_args, "``x != y``.")


def _ordered(lax_fn: Any) -> Any:
    """An order comparison; complex numbers by real part, then imaginary part
    where the real parts are equal (JAX's jnp comparisons; lax's refuse complex)."""

    def compare(x: Any, y: Any) -> Any:
        if not dtypes.is_complex(aval_of(x, "rnp", 0).dtype):
            return lax_fn(x, y)
        real_x, real_y = lax.real(x), lax.real(y)
        by_imag = lax_fn(lax.imag(x), lax.imag(y))
        return select(lax.eq(real_x, real_y), by_imag, lax_fn(real_x, real_y))

    return compare


less = _promoted_binary(_ordered(lax.lt), "less", promote_args, "``x < y``.")
less_equal = _promoted_binary(_ordered(lax.le), "less_equal", promote_args, "``x <= y``.")
greater = _promoted_binary(_ordered(lax.gt), "greater", promote_args, "``x > y``.")
greater_equal = _promoted_binary(_ordered(lax.ge), "greater_equal", promote_args, "``x >= y``.")
bitwise_and = _promoted_binary(lax.bitwise_and, "bitwise_and", promote_args, "``x & y``.")
bitwise_or = _promoted_binary(lax.bitwise_or, "bitwise_or", promote_args, "``x | y``.")
bitwise_xor = _promoted_binary(lax.bitwise_xor, "bitwise_xor", promote_args, "``x ^ y``.")
left_shift = _promoted_binary(
    lax.shift_left, "left_shift", promote_args_numeric, "``x << y`` (0 once y >= bits)."
)


def right_shift(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """``x1 >> x2``: arithmetic for signed integers, logical for unsigned."""
    x1, x2 = promote_args_numeric("right_shift", x1, x2)
    # uint4 shifts arithmetically in JAX 0.10.2 (ml_dtypes' uint4 is no NumPy unsignedinteger)
    if dtypes.is_unsigned_int(_dtype_of(x1)) and _dtype_of(x1) != dtypes.uint4:
        return lax.shift_right_logical(x1, x2)
    return lax.shift_right_arithmetic(x1, x2)


def _logical(lax_fn: Any, name: str) -> Any:
    def fn(x: ArrayLike, y: ArrayLike, /) -> Array:
        x, y = promote_args(name, x, y)
        return lax_fn(to_bool(x), to_bool(y))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``{name}`` of ``x != 0`` and ``y != 0``."
    return fn


logical_and = _logical(lax.bitwise_and, "logical_and")
logical_or = _logical(lax.bitwise_or, "logical_or")
logical_xor = _logical(lax.bitwise_xor, "logical_xor")


# --- where and clip ------------------------------------------------------------------


def where(condition: ArrayLike, x: ArrayLike = None, y: ArrayLike = None, /) -> Array:
    """``x`` where ``condition`` (taken as ``!= 0``) else ``y``, broadcast together.

    Only the three-argument form is supported (the one-argument form has a
    data-dependent shape).
    """
    if x is None or y is None:
        raise NotImplementedError(
            "where: only the three-argument form where(condition, x, y) is supported"
        )
    aval_of(condition, "where", 0)
    aval_of(x, "where", 1)
    aval_of(y, "where", 2)
    x, y = promote_dtypes("where", x, y)
    return select(to_bool(condition), x, y)


def clip(arr: ArrayLike, /, min: ArrayLike = None, max: ArrayLike = None) -> Array:  # noqa: A002
    """``minimum(max, maximum(min, arr))``; a ``None`` bound is not applied.
    Complex values have no order: a ``ValueError``, as in JAX."""
    avals = [aval_of(arr, "clip", 0)]
    for position, bound in ((1, min), (2, max)):
        if bound is not None:
            avals.append(aval_of(bound, "clip", position))
    if any(dtypes.is_complex(a.dtype) for a in avals):
        raise ValueError(
            "Clip received a complex value either through the input or the min/max keywords. "
            "Complex values have no ordering and cannot be clipped. Please convert to a real "
            "value or array by taking the real or imaginary components via "
            "jax.numpy.real/imag respectively."
        )
    if min is not None:
        arr = maximum(min, arr)
    if max is not None:
        arr = minimum(max, arr)
    return as_array(arr)


__all__ = [
    "abs", "absolute", "add", "arccos", "arcsin", "arctan", "arctan2", "around",
    "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor", "cbrt", "ceil", "clip", "conj",
    "conjugate", "cos", "cosh", "divide", "equal", "exp", "expm1", "floor", "floor_divide",
    "greater", "greater_equal", "imag", "invert", "isfinite", "isinf", "isnan", "left_shift",
    "less", "less_equal", "log", "log1p", "logical_and", "logical_not", "logical_or",
    "logical_xor", "maximum", "minimum", "mod", "multiply", "negative", "not_equal", "positive",
    "pow", "power", "real", "reciprocal", "remainder", "right_shift", "round", "sign", "sin",
    "sinh", "sqrt", "square", "subtract", "tan", "tanh", "true_divide",
]  # fmt: skip
