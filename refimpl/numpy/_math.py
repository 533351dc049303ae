"""More elementwise functions of ``jax.numpy``, each a short formula over ``lax``.

Promotion is ``jax.numpy``'s: functions of real analysis (``hypot``, ``log2``,
``sinc``, ...) compute in the default float for bool and integer inputs
(``promote_args_inexact``); integer-valued ones (``gcd``, ``lcm``) require
integers. Where JAX computes a function by a particular formula (``log2(x) =
log(x) / log(2)``, ``logaddexp``'s ``max + log1p(exp(-|x - y|))``), the same
formula is used here, so results agree to the last place or nearly.

``signbit``, ``copysign`` and ``frexp`` read the bit pattern
(``bitcast_convert_type``), so ``-0.0`` and the sign of a NaN count.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from refimpl import dtypes, lax
from refimpl.custom_derivatives import custom_jvp
from refimpl.lax._elementwise import arccosh_of_inexact, arcsinh_of_inexact, arctanh_of_inexact
from refimpl.numpy import _ufuncs
from refimpl.numpy._creation import asarray
from refimpl.numpy._promote import (
    as_array,
    aval_of,
    checked_array,
    promote_args,
    promote_args_inexact,
    promote_args_numeric,
    promote_dtypes_inexact,
)
from refimpl.numpy._ufuncs import (
    abs,
    alias,
    const_like,
    floor_divide,
    full_like_shape,
    imag,
    isinf,
    isnan,
    real,
    remainder,
    scalar_like,
    select,
)
from refimpl.primitives.prng import bitcast_convert_type

Array = Any
ArrayLike = Any


def _dtype(x: ArrayLike, name: str = "rnp") -> np.dtype:
    return aval_of(x, name, 0).dtype


def _inexact(name: str, *args: ArrayLike) -> list[Any]:
    return promote_args_inexact(name, *args)


# --- unary ----------------------------------------------------------------------------


def deg2rad(x: ArrayLike, /) -> Array:
    """Converts angles from degrees to radians: ``x * (pi / 180)``, elementwise.

    Bool and integer inputs compute in the default float dtype.

    Args:
        x: The angles in degrees, an array or a scalar.

    Returns:
        An array of ``x``'s shape, in ``x``'s dtype if it is inexact, else the
        default float dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.deg2rad(rnp.array([0.0, 90.0, 180.0]))
        Array([0.       , 1.5707964, 3.1415927], dtype=float32)
    """
    (x,) = promote_dtypes_inexact("deg2rad", x)
    return lax.mul(x, scalar_like(x, math.pi / 180))


def rad2deg(x: ArrayLike, /) -> Array:
    """Converts angles from radians to degrees: ``x * (180 / pi)``, elementwise.

    Bool and integer inputs compute in the default float dtype.

    Args:
        x: The angles in radians, an array or a scalar.

    Returns:
        An array of ``x``'s shape, in ``x``'s dtype if it is inexact, else the
        default float dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.rad2deg(rnp.array([0.0, rnp.pi / 2, rnp.pi]))
        Array([  0.,  90., 180.], dtype=float32)
    """
    (x,) = promote_dtypes_inexact("rad2deg", x)
    return lax.mul(x, scalar_like(x, 180 / math.pi))


radians, degrees = alias(deg2rad), alias(rad2deg)


def exp2(x: ArrayLike, /) -> Array:
    """The power of two ``2 ** x``, elementwise.

    Computed as ``exp(x * log(2))`` (JAX's lowering of ``exp2``); bool and
    integer inputs compute in the default float dtype.

    Args:
        x: The exponents, an array or a scalar.

    Returns:
        An array of ``x``'s shape, in ``x``'s dtype if it is inexact, else the
        default float dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.exp2(rnp.array([0.0, 1.0, 3.0, -1.0]))
        Array([1. , 2. , 8. , 0.5], dtype=float32)
    """
    (x,) = promote_dtypes_inexact("exp2", x)
    return lax.exp(lax.mul(x, scalar_like(x, math.log(2))))


def log2(x: ArrayLike, /) -> Array:
    """The base-2 logarithm, elementwise.

    Computed as ``log(x) / log(2)``, as jnp computes it (complex: each part
    of ``log(x)`` divided); bool and integer inputs compute in the default
    float dtype.

    Args:
        x: The input array, or a scalar.

    Returns:
        An array of ``x``'s shape, in ``x``'s dtype if it is inexact, else the
        default float dtype; strongly typed (the constant is).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.log2(rnp.array([1.0, 2.0, 8.0]))
        Array([0., 1., 3.], dtype=float32)
    """
    (x,) = promote_dtypes_inexact("log2", x)
    return _scaled_log(x, lambda part: lax.div(part, lax.log(np.asarray(2, _dtype(part)))))


def log10(x: ArrayLike, /) -> Array:
    """The base-10 logarithm, elementwise.

    Computed as ``log(x) * log10(e)``, as jnp computes it: the constant rounded to x's
    real dtype, a product and not a division by ``log(10)`` (the two differ in
    the last bit: float32 ``log10(2)`` is 0.30103 vs 0.30102998); complex:
    each part multiplied. Bool and integer inputs compute in the default
    float dtype.

    Args:
        x: The input array, or a scalar.

    Returns:
        An array of ``x``'s shape, in ``x``'s dtype if it is inexact, else the
        default float dtype; strongly typed (the constant is).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.log10(rnp.array([1.0, 10.0, 1000.0]))
        Array([0., 1., 3.], dtype=float32)
    """
    (x,) = promote_dtypes_inexact("log10", x)
    return _scaled_log(x, lambda part: lax.mul(part, np.asarray(math.log10(math.e), _dtype(part))))


def _scaled_log(x: Any, scale: Any) -> Array:
    # the constants are strongly typed, as JAX's: a weak input (a Python
    # float) gives a strong result
    if dtypes.is_complex(_dtype(x)):
        # JAX scales the two parts by a real constant: a complex division
        # would put NaN into the imaginary part of log(0) = -inf + 0j
        ln = lax.log(x)
        return lax.complex(scale(lax.real(ln)), scale(lax.imag(ln)))
    return scale(lax.log(x))


def sinc(x: ArrayLike, /) -> Array:
    """The normalized sinc function ``sin(pi x) / (pi x)``, elementwise.

    1 at ``x == 0`` (the weak type kept). At 0
    the value and every derivative come from the Maclaurin series of
    ``sin(y) / y``, as JAX (the quotient's own derivatives there are 0/0
    guarded to 0: ``grad(grad(sinc))(0.)`` would be 0, not ``-pi**2 / 3``).
    Bool and integer inputs compute in the default float dtype.

    Args:
        x: The input array, or a scalar.

    Returns:
        An array of ``x``'s shape, in ``x``'s dtype if it is inexact, else the
        default float dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.sinc(rnp.array([0.0, 0.5]))
        Array([1.        , 0.63661975], dtype=float32)
    """
    (x,) = promote_dtypes_inexact("sinc", x)
    zero = lax.eq(x, scalar_like(x, 0))
    pi_x = lax.mul(scalar_like(x, math.pi), x)
    safe = select(zero, lax.full_like(pi_x, scalar_like(x, 1)), pi_x)
    return select(zero, _sinc_term(0)(pi_x), lax.div(lax.sin(safe), safe))


_SINC_TERMS: dict[int, Any] = {}


def _sinc_term(k: int) -> Any:
    """``y -> f^(k)(0)`` shaped like ``y`` for ``f(y) = sin(y) / y`` (0 for odd
    ``k``, ``(-1)^(k/2) / (k + 1)`` for even), whose derivative is the next
    term times the tangent: the series of sinc at 0, to any order."""
    fn = _SINC_TERMS.get(k)
    if fn is None:

        def term(y: Any) -> Any:
            zeros = lax.mul(y, scalar_like(y, 0))
            if k % 2:
                return zeros
            return lax.add(zeros, scalar_like(y, (-1) ** (k // 2) / (k + 1)))

        fn = custom_jvp(term)

        def jvp(primals: Any, tangents: Any) -> Any:
            ((y,), (t,)) = primals, tangents
            return _sinc_term(k)(y), lax.mul(_sinc_term(k + 1)(y), t)

        fn.defjvp(jvp)
        _SINC_TERMS[k] = fn
    return fn


def trunc(x: ArrayLike, /) -> Array:
    """Rounds toward zero, elementwise: the integer part of ``x``.

    Bool and integer inputs are returned unchanged (in their own dtype).

    Args:
        x: The input array, or a scalar.

    Returns:
        An array of ``x``'s shape and dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.trunc(rnp.array([-1.7, -0.5, 0.5, 1.7]))
        Array([-1., -0.,  0.,  1.], dtype=float32)
    """
    if not dtypes.is_inexact(_dtype(x, "trunc")):
        return as_array(x)
    return select(lax.lt(x, scalar_like(x, 0)), lax.ceil(x), lax.floor(x))


def rint(x: ArrayLike, /) -> Array:
    """Rounds to the nearest integer, elementwise, halves to even.

    The dtype is kept; bool and
    ints -> the default float, float64 under x64, as JAX's. Complex input
    rounds the two parts separately.

    Args:
        x: The input array, or a scalar.

    Returns:
        An array of ``x``'s shape, in ``x``'s dtype if it is inexact, else the
        default float dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.rint(rnp.array([0.5, 1.5, 2.5, -1.7]))
        Array([ 0.,  2.,  2., -2.], dtype=float32)
    """
    if not dtypes.is_inexact(_dtype(x, "rint")):
        return lax.convert_element_type(x, dtypes.weak_default_dtype("f"))
    (x,) = promote_dtypes_inexact("rint", x)
    if dtypes.is_complex(_dtype(x)):
        return lax.complex(lax.round(real(x), 1), lax.round(imag(x), 1))
    return lax.round(x, 1)


def fabs(x: ArrayLike, /) -> Array:
    """The absolute value ``|x|``, elementwise, in floating point.

    Bool and integers go to the default float dtype; complex input is a
    TypeError (:func:`absolute` takes it).

    Args:
        x: The input array, or a scalar (not complex).

    Returns:
        An array of ``x``'s shape, in ``x``'s dtype if it is floating, else the
        default float dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.fabs(rnp.array([-3, 2]))
        Array([3., 2.], dtype=float32)
    """
    (x,) = promote_dtypes_inexact("fabs", x)
    if dtypes.is_complex(_dtype(x)):
        raise TypeError("fabs does not support complex-valued inputs")
    return abs(x)


def _bits(x: Any) -> tuple[Any, Any]:
    """``x``'s bit pattern as the signed integer of its width, and that dtype."""

    int_dtype = np.dtype(f"int{_dtype(x).itemsize * 8}")
    return bitcast_convert_type(x, int_dtype), int_dtype


def signbit(x: ArrayLike, /) -> Array:
    """Whether the sign bit of ``x`` is set, elementwise.

    Also for ``-0.0`` and negative NaNs: the bit pattern, read as a signed
    integer, is negative. Signed integers test ``x < 0``; bool and unsigned
    inputs give False; complex input is a ValueError, as in JAX 0.10.2.

    Args:
        x: The input array, or a scalar (not complex).

    Returns:
        A bool array of ``x``'s shape.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.signbit(rnp.array([-1.0, -0.0, 0.0, 2.0]))
        Array([ True,  True, False, False], dtype=bool)
    """
    dtype = _dtype(x, "signbit")
    if dtypes.is_bool(dtype) or dtypes.is_unsigned_int(dtype):
        return full_like_shape(x, False, np.dtype(bool))
    if dtypes.is_complex(dtype):
        # ValueError as JAX 0.10.2 (the sign of a complex number is not defined)
        raise ValueError("signbit does not support complex-valued inputs")
    if dtypes.is_integer(dtype):
        return lax.lt(x, np.zeros((), dtype))  # a strong zero: strong also for a Python int
    bits, int_dtype = _bits(x)
    return lax.lt(bits, np.zeros((), int_dtype))


def frexp(x: ArrayLike, /) -> tuple[Array, Array]:
    """Splits ``x`` into mantissa and exponent: ``(m, e)`` with ``x = m * 2**e``.

    ``0.5 <= |m| < 1`` (``m = x``, ``e = 0``
    for 0, inf and NaN), read from the bit pattern; subnormals are scaled
    into the normal range first. Bool and integer inputs compute in the
    default float dtype; complex input is a TypeError.

    Args:
        x: The input array, or a scalar (not complex).

    Returns:
        A pair ``(m, e)`` of arrays of ``x``'s shape: ``m`` in ``x``'s float
        dtype (the default float for bool and integers), ``e`` int32.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.frexp(rnp.array([8.0, 0.75, 0.0]))
        (Array([0.5 , 0.75, 0.  ], dtype=float32), Array([4, 0, 0], dtype=int32))
    """

    (x,) = promote_dtypes_inexact("frexp", x)
    if dtypes.is_complex(_dtype(x)):
        raise TypeError("frexp does not support complex-valued inputs")
    fn = _CUSTOM_JVP.get("frexp")
    if fn is None:
        # a custom_jvp as JAX's: the bit manipulations have no derivative, but
        # m = x * 2**-e with e locally constant gives d m = d x * 2**-e (the
        # exponent's tangent is float0)
        fn = custom_jvp(_frexp_value)

        def jvp(primals: Any, tangents: Any) -> Any:
            ((x,), (t,)) = primals, tangents
            m, e = fn(x)
            scale = exp2(lax.neg(lax.convert_element_type(e, _dtype(t))))
            no_tangent = np.zeros(aval_of(e, "frexp", 0).shape, dtypes.float0)
            return (m, e), (lax.mul(t, scale), no_tangent)

        fn.defjvp(jvp)
        _CUSTOM_JVP["frexp"] = fn
    return fn(x)


def _frexp_value(x: Array) -> tuple[Array, Array]:
    dtype = _dtype(x)
    import ml_dtypes

    info = ml_dtypes.finfo(dtype)
    nmant, nexp = int(info.nmant), int(info.nexp)
    bias = (1 << (nexp - 1)) - 1
    subnormal = lax.bitwise_and(
        lax.lt(abs(x), scalar_like(x, float(info.tiny))), lax.ne(x, scalar_like(x, 0))
    )
    scaled = select(subnormal, lax.mul(x, scalar_like(x, float(2.0**nmant))), x)
    bits, int_dtype = _bits(scaled)
    exp_mask = (1 << nexp) - 1

    def const(value: int) -> Any:
        return (
            np.asarray(value, int_dtype)
            if value < np.iinfo(int_dtype).max
            else np.asarray(value - (1 << (8 * int_dtype.itemsize)), int_dtype)
        )

    exponent_field = lax.bitwise_and(lax.shift_right_logical(bits, const(nmant)), const(exp_mask))
    exponent = lax.sub(exponent_field, const(bias - 1))
    cleared = lax.bitwise_and(bits, lax.bitwise_not(const(exp_mask << nmant)))
    mantissa = bitcast_convert_type(lax.bitwise_or(cleared, const((bias - 1) << nmant)), dtype)
    exponent = select(subnormal, lax.sub(exponent, const(nmant)), exponent)
    special = lax.bitwise_or(lax.eq(x, scalar_like(x, 0)), lax.bitwise_not(lax.is_finite(x)))
    mantissa = select(special, x, mantissa)
    exponent = select(
        special, lax.broadcast_in_dim(const(0), aval_of(x, "frexp", 0).shape, ()), exponent
    )
    return mantissa, lax.convert_element_type(exponent, np.int32)


def copysign(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """``|x1|`` with the sign of ``x2``, elementwise (``-0.0`` counts as negative).

    The operands are promoted to a common inexact dtype (bool and integers
    to the default float) and broadcast together; complex is a TypeError.

    Args:
        x1: The magnitudes, an array or a scalar.
        x2: The signs, broadcast against ``x1``.

    Returns:
        An array of the broadcast shape, in the promoted inexact dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.copysign(rnp.array([1.0, 2.0, 3.0]), rnp.array([-1.0, 0.0, -0.0]))
        Array([-1.,  2., -3.], dtype=float32)
    """
    x1, x2 = _inexact("copysign", x1, x2)
    if dtypes.is_complex(_dtype(x1)):
        raise TypeError("copysign does not support complex-valued inputs")
    magnitude = abs(x1)
    return select(signbit(x2), lax.neg(magnitude), magnitude)


def arcsinh(x: ArrayLike, /) -> Array:
    """The inverse hyperbolic sine, elementwise.

    Computed as ``sign(x) log1p(|x| + x^2 / (1 + sqrt(1 + x^2)))``; ``log(2|x|)``
    once x^2 would overflow. Bool and integer inputs compute in the default
    float dtype.

    Args:
        x: The input array, or a scalar.

    Returns:
        An array of ``x``'s shape, in ``x``'s dtype if it is inexact, else the
        default float dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.arcsinh(rnp.array([0.0, 1.0]))
        Array([0.        , 0.88137364], dtype=float32)
    """
    (x,) = promote_dtypes_inexact("arcsinh", x)
    return arcsinh_of_inexact(x)


def arccosh(x: ArrayLike, /) -> Array:
    """The inverse hyperbolic cosine, elementwise (NaN below 1 for real ``x``).

    Computed as ``log(x + sqrt(x - 1) sqrt(x + 1))``; ``log(x) + log(2)`` once
    x^2 would overflow. Bool and integer inputs compute in the default float
    dtype.

    Args:
        x: The input array, or a scalar.

    Returns:
        An array of ``x``'s shape, in ``x``'s dtype if it is inexact, else the
        default float dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.arccosh(rnp.array([1.0, 2.0]))
        Array([0.      , 1.316958], dtype=float32)
    """
    (x,) = promote_dtypes_inexact("arccosh", x)
    return arccosh_of_inexact(x)


def arctanh(x: ArrayLike, /) -> Array:
    """The inverse hyperbolic tangent, elementwise (±inf at ±1, NaN beyond for real ``x``).

    Computed as ``log1p(2x / (1 - x)) / 2``. Bool and integer inputs compute
    in the default float dtype.

    Args:
        x: The input array, or a scalar.

    Returns:
        An array of ``x``'s shape, in ``x``'s dtype if it is inexact, else the
        default float dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.arctanh(rnp.array([0.0, 0.5]))
        Array([0.        , 0.54930615], dtype=float32)
    """
    (x,) = promote_dtypes_inexact("arctanh", x)
    return arctanh_of_inexact(x)


def angle(z: ArrayLike, deg: bool = False) -> Array:
    """The angle (argument) of complex ``z``: ``atan2(imag(z), real(z))``, elementwise.

    Real input has angle 0 (or pi where negative). Integers and real scalars
    compute in the default float dtype (strongly typed), as JAX's.

    Args:
        z: The input array, or a scalar.
        deg: Return degrees instead of radians.

    Returns:
        A real float array of ``z``'s shape (float32 for complex64 and for
        integers without x64).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.angle(rnp.array([1.0, 1j, -1.0]))
        Array([0.       , 1.5707964, 3.1415927], dtype=float32)
        >>> rnp.angle(rnp.array([1 + 1j, -1j]), deg=True)
        Array([ 45., -90.], dtype=float32)
    """
    dtype = _dtype(z, "angle")
    if dtypes.is_complex(dtype) or (dtypes.is_floating(dtype) and aval_of(z, "angle", 0).ndim):
        (z,) = promote_dtypes_inexact("angle", z)
    else:
        # JAX computes integers and real scalars in the default float (float64
        # under x64; strong), not in what inexact promotion would give them
        z = lax.convert_element_type(z, dtypes.weak_default_dtype("f"))
    re, im = real(z), imag(z)
    result = lax.atan2(im, re)
    return rad2deg(result) if deg else result


def isreal(x: ArrayLike, /) -> Array:
    """Whether ``x`` has no imaginary part, elementwise: ``imag(x) == 0``.

    True for non-complex input (weakly typed for a Python scalar, as JAX's).

    Args:
        x: The input array, or a scalar.

    Returns:
        A bool array of ``x``'s shape.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.isreal(rnp.array([1 + 0j, 1 + 2j]))
        Array([ True, False], dtype=bool)
    """
    x = checked_array("isreal", x)
    if not dtypes.is_complex(_dtype(x, "isreal")):
        # weak for a weak input (a Python int or float), as JAX's imag(x) == 0
        weak = aval_of(x, "isreal", 0).weak_type
        return lax.convert_element_type(
            full_like_shape(x, True, np.dtype(bool)), np.dtype(bool), weak_type=weak
        )
    return lax.eq(imag(x), scalar_like(imag(x), 0))


def iscomplex(x: ArrayLike, /) -> Array:
    """Whether ``x`` has a nonzero imaginary part, elementwise: ``imag(x) != 0``.

    False for non-complex input.

    Args:
        x: The input array, or a scalar.

    Returns:
        A bool array of ``x``'s shape.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.iscomplex(rnp.array([1 + 0j, 1 + 2j]))
        Array([False,  True], dtype=bool)
    """
    x = checked_array("iscomplex", x)
    return lax.bitwise_not(isreal(x))


def isposinf(x: ArrayLike, /, out: None = None) -> Array:
    """Whether ``x`` is positive infinity, elementwise: ``x == +inf``.

    False for bool and integer inputs; complex input is a ValueError.

    Args:
        x: The input array, or a scalar (not complex).
        out: Must be None (NotImplementedError otherwise, as in JAX).

    Returns:
        A bool array of ``x``'s shape.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.isposinf(rnp.array([rnp.inf, -rnp.inf, 1.0]))
        Array([ True, False, False], dtype=bool)
    """
    if out is not None:
        raise NotImplementedError("isposinf: the 'out' argument is not supported (as JAX)")
    return _isinf_sign("isposinf", x, np.inf)


def isneginf(x: ArrayLike, /, out: None = None) -> Array:
    """Whether ``x`` is negative infinity, elementwise: ``x == -inf``.

    False for bool and integer inputs; complex input is a ValueError.

    Args:
        x: The input array, or a scalar (not complex).
        out: Must be None (NotImplementedError otherwise, as in JAX).

    Returns:
        A bool array of ``x``'s shape.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.isneginf(rnp.array([rnp.inf, -rnp.inf, 1.0]))
        Array([False,  True, False], dtype=bool)
    """
    if out is not None:
        raise NotImplementedError("isneginf: the 'out' argument is not supported (as JAX)")
    return _isinf_sign("isneginf", x, -np.inf)


def _isinf_sign(name: str, x: ArrayLike, value: float) -> Array:
    dtype = _dtype(x, name)
    if dtypes.is_complex(dtype):
        raise ValueError(f"{name}: complex values are not supported")
    if not dtypes.is_floating(dtype):
        return full_like_shape(x, False, np.dtype(bool))
    return lax.eq(x, np.asarray(value, dtype))  # a strong constant, as JAX's


def nan_to_num(
    x: ArrayLike, copy: bool = True, nan: float = 0.0, posinf: Any = None, neginf: Any = None
) -> Array:
    """``x`` with NaN and infinities replaced by finite numbers, elementwise.

    NaN -> ``nan``, +inf -> ``posinf`` (default the dtype's maximum), -inf ->
    ``neginf`` (default its minimum); complex parts separately. Bool and
    integer inputs are returned unchanged.

    Args:
        x: The input array, or a scalar.
        copy: Accepted and ignored (arrays are immutable: the result is new).
        nan: The value for NaN.
        posinf: The value for +inf, or None for the dtype's largest value.
        neginf: The value for -inf, or None for the dtype's lowest value.

    Returns:
        An array of ``x``'s shape and dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.nan_to_num(rnp.array([rnp.nan, rnp.inf, -rnp.inf], dtype=rnp.float32))
        Array([ 0.0000000e+00,  3.4028235e+38, -3.4028235e+38], dtype=float32)
        >>> rnp.nan_to_num(rnp.array([rnp.nan, rnp.inf, 1.0]), nan=-1.0, posinf=9.0)
        Array([-1.,  9.,  1.], dtype=float32)
    """
    del copy
    dtype = _dtype(x, "nan_to_num")
    if not dtypes.is_inexact(dtype):
        return as_array(x)
    if dtypes.is_complex(dtype):
        re = nan_to_num(real(x), nan=nan, posinf=posinf, neginf=neginf)
        im = nan_to_num(imag(x), nan=nan, posinf=posinf, neginf=neginf)
        return lax.complex(re, im)
    info = dtypes.finfo(dtype)  # (ml_dtypes': bfloat16 and the float8s too)
    posinf = float(info.max) if posinf is None else posinf
    neginf = float(info.min) if neginf is None else neginf
    out = select(isnan(x), full_like_shape(x, nan, dtype), x)
    out = select(lax.eq(x, scalar_like(x, np.inf)), full_like_shape(x, posinf, dtype), out)
    return select(lax.eq(x, scalar_like(x, -np.inf)), full_like_shape(x, neginf, dtype), out)


# --- binary ---------------------------------------------------------------------------


def hypot(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """The hypotenuse ``sqrt(x1**2 + x2**2)``, elementwise, without overflow.

    Computed as ``hi * sqrt(1 + (lo / hi)^2)`` with ``hi = max(|x1|, |x2|)``;
    0 when both are 0; inf if either is. The operands are promoted to a
    common inexact dtype (bool and integers to the default float) and
    broadcast together; complex is a ValueError.

    Args:
        x1: The first leg, an array or a scalar.
        x2: The second leg, broadcast against ``x1``.

    Returns:
        An array of the broadcast shape, in the promoted inexact dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.hypot(rnp.array([3.0, 5.0]), rnp.array([4.0, 12.0]))
        Array([ 5., 13.], dtype=float32)
    """
    x1, x2 = _inexact("hypot", x1, x2)
    if dtypes.is_complex(_dtype(x1)):
        raise ValueError(
            "jnp.hypot is not well defined for complex-valued inputs; "
            "convert to real values first, such as with abs(x)"
        )
    a, b = abs(x1), abs(x2)
    hi, lo = lax.max(a, b), lax.min(a, b)
    zero = lax.eq(hi, scalar_like(hi, 0))
    # JAX's lax._ones keeps the weak type, its inf (lax._const) is weak for a
    # weak scalar only: hypot of two Python scalars is weak
    safe_hi = select(zero, scalar_like(hi, 1), hi)
    ratio = lax.div(lo, safe_hi)
    out = lax.mul(hi, lax.sqrt(lax.add(scalar_like(hi, 1), lax.mul(ratio, ratio))))
    out = select(zero, hi, out)
    return select(lax.bitwise_or(isinf(x1), isinf(x2)), const_like(hi, np.inf), out)


def logaddexp(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """``log(exp(x1) + exp(x2))``, elementwise, without overflow.

    Computed as ``max + log1p(exp(-|x1 - x2|))`` (``x1 + x2``
    where the difference is NaN, which keeps ``-inf, -inf -> -inf``).

    A ``custom_jvp`` as in JAX: ``d out = dx1 * exp(x1 - out) + dx2 * exp(x2 - out)``
    (``+inf`` read as 0 in the exponents), so ``x1 == x2`` gives 1/2 each,
    where the formula's ``max`` and ``|x1 - x2|`` would be differentiated at
    their kinks. The operands are promoted to a common inexact dtype and
    broadcast together. ``rnp.logaddexp`` is a :class:`ufunc` object whose
    ``reduce`` is a log-sum-exp.

    Args:
        x1: The first operand, an array or a scalar.
        x2: The second operand, broadcast against ``x1``.

    Returns:
        An array of the broadcast shape, in the promoted inexact dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.logaddexp(rnp.array([0.0, 1.0]), rnp.array([0.0, 1.0]))
        Array([0.6931472, 1.6931472], dtype=float32)
        >>> rnp.logaddexp(rnp.array([0.0, -rnp.inf]), -rnp.inf)
        Array([  0., -inf], dtype=float32)
    """
    x1, x2 = _inexact("logaddexp", x1, x2)
    return _with_custom_jvp("logaddexp")(x1, x2)


def logaddexp2(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """``log2(2**x1 + 2**x2)``, elementwise, without overflow.

    Computed as ``max + log1p(2^-|x1 - x2|) / log(2)``; a
    ``custom_jvp`` ``d out = dx1 * 2^(x1 - out) + dx2 * 2^(x2 - out)`` as
    ``logaddexp``'s. The operands are promoted to a common inexact dtype and
    broadcast together. ``rnp.logaddexp2`` is a :class:`ufunc` object.

    Args:
        x1: The first operand, an array or a scalar.
        x2: The second operand, broadcast against ``x1``.

    Returns:
        An array of the broadcast shape, in the promoted inexact dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.logaddexp2(rnp.array([1.0, 3.0]), rnp.array([1.0, 3.0]))
        Array([2., 4.], dtype=float32)
    """
    x1, x2 = _inexact("logaddexp2", x1, x2)
    return _with_custom_jvp("logaddexp2")(x1, x2)


def _logaddexp_value(x1: Array, x2: Array) -> Array:
    amax = lax.max(x1, x2)
    if dtypes.is_complex(_dtype(x1)):
        return _complex_logaddexp(x1, x2, amax, lax.exp, 1.0)
    delta = lax.sub(x1, x2)
    soft = lax.add(amax, lax.log1p(lax.exp(lax.neg(lax.abs(delta)))))
    return select(isnan(delta), lax.add(x1, x2), soft)


def _logaddexp2_value(x1: Array, x2: Array) -> Array:
    amax = lax.max(x1, x2)
    if dtypes.is_complex(_dtype(x1)):
        return _complex_logaddexp(x1, x2, amax, exp2, 1 / math.log(2))
    delta = lax.sub(x1, x2)
    tail = lax.div(lax.log1p(exp2(lax.neg(lax.abs(delta)))), scalar_like(x1, math.log(2)))
    return select(isnan(delta), lax.add(x1, x2), lax.add(amax, tail))


def _complex_logaddexp(x1: Array, x2: Array, amax: Array, power: Any, scale: float) -> Array:
    """JAX's complex branch: ``amax + log1p(power(x1 + x2 - 2 amax)) * scale``
    (``amax`` the lexicographic maximum, so the exponent is ``-(x1 - x2)`` or
    ``x1 - x2``), its imaginary part wrapped into ``[-pi, pi) * scale`` as the
    logarithm's principal branch."""
    delta = lax.sub(lax.add(x1, x2), lax.mul(amax, scalar_like(amax, 2)))
    out = lax.add(amax, lax.mul(lax.log1p(power(delta)), scalar_like(amax, scale)))
    period = math.pi * scale
    im = imag(out)
    # (im + period) mod 2 period - period, with the sign of the divisor as Python's %
    shifted = lax.add(im, scalar_like(im, period))
    two = scalar_like(im, 2 * period)
    wrapped = lax.rem(shifted, two)
    wrapped = select(lax.lt(wrapped, scalar_like(im, 0)), lax.add(wrapped, two), wrapped)
    return lax.complex(real(out), lax.sub(wrapped, scalar_like(im, period)))


def _posinf_to_zero(x: Array) -> Array:
    # exp(x - out) with x == out == +inf would be NaN; JAX reads +inf (the real part
    # for complex) as 0 there
    part = real(x) if dtypes.is_complex(_dtype(x)) else x
    zeros = lax.full_like(x, scalar_like(x, 0))  # x's weak type kept, as JAX's tangent
    return select(lax.eq(part, scalar_like(part, math.inf)), zeros, x)


_CUSTOM_JVP: dict[str, Any] = {}


def _with_custom_jvp(name: str) -> Any:
    """The ``custom_jvp`` function for ``logaddexp``/``logaddexp2``, built on
    first use (``refimpl.custom_derivatives`` imports the numpy layer's users)."""
    fn = _CUSTOM_JVP.get(name)
    if fn is not None:
        return fn

    value, power = {
        "logaddexp": (_logaddexp_value, lax.exp),
        "logaddexp2": (_logaddexp2_value, exp2),
    }[name]
    fn = custom_jvp(value)

    def jvp(primals: Any, tangents: Any) -> Any:
        (x1, x2), (t1, t2) = primals, tangents
        out = fn(x1, x2)
        inf_free = _posinf_to_zero(out)
        w1 = power(lax.sub(_posinf_to_zero(x1), inf_free))
        w2 = power(lax.sub(_posinf_to_zero(x2), inf_free))
        return out, lax.add(lax.mul(t1, w1), lax.mul(t2, w2))

    fn.defjvp(jvp)
    _CUSTOM_JVP[name] = fn
    return fn


def heaviside(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """The Heaviside step function of ``x1``, elementwise, with ``x2`` at 0.

    0 where ``x1 < 0``, ``x2`` where ``x1 == 0``, 1 where ``x1 > 0`` (NaN
    stays). The operands are promoted to a common inexact dtype and broadcast
    together.

    Args:
        x1: The input array, or a scalar.
        x2: The value at ``x1 == 0``, broadcast against ``x1``.

    Returns:
        An array of the broadcast shape, in the promoted inexact dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.heaviside(rnp.array([-1.0, 0.0, 2.0]), 0.5)
        Array([0. , 0.5, 1. ], dtype=float32)
    """
    x1, x2 = _inexact("heaviside", x1, x2)
    # JAX's lax._const: the 0 and 1 are weak only for a weak scalar x1, so the
    # result is weak when x1 is a Python scalar and x2 weak too
    zero, one = const_like(x1, 0), const_like(x1, 1)
    out = select(lax.lt(x1, zero), zero, select(lax.gt(x1, zero), one, x2))
    return select(isnan(x1), x1, out)


def fmod(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """C's ``fmod``: the remainder of ``x1 / x2`` with the sign of ``x1``, elementwise.

    Integer ``x % 0`` is 0 (the divisor 0 is replaced by 1), as in JAX. The
    operands are promoted with JAX's rules (bool to the default int) and
    broadcast together.

    Args:
        x1: The dividend, an array or a scalar.
        x2: The divisor, broadcast against ``x1``.

    Returns:
        An array of the broadcast shape, in the promoted dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.fmod(rnp.array([7, -7, 7]), rnp.array([3, 3, -3]))
        Array([ 1, -1,  1], dtype=int32)
    """
    x1, x2 = promote_args_numeric("fmod", x1, x2)
    if dtypes.is_integer(_dtype(x2)):
        # JAX's lax._ones: weak for a weak x2
        x2 = select(lax.eq(x2, scalar_like(x2, 0)), scalar_like(x2, 1), x2)
    return lax.rem(x1, x2)


def modf(x: ArrayLike, /, out: None = None) -> tuple[Array, Array]:
    """Splits ``x`` into fractional and integral parts, both with the sign of ``x``.

    Bool and integer inputs compute in the default float dtype.

    Args:
        x: The input array, or a scalar.
        out: Must be None (NotImplementedError otherwise).

    Returns:
        A pair ``(fractional, integral)`` of arrays of ``x``'s shape, in ``x``'s
        inexact dtype (the default float for bool and integers).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.modf(rnp.array([1.5, -2.25]))
        (Array([ 0.5 , -0.25], dtype=float32), Array([ 1., -2.], dtype=float32))
    """
    if out is not None:
        raise NotImplementedError("modf: the out argument is not supported")
    (x,) = promote_dtypes_inexact("modf", x)
    whole = trunc(x)
    return lax.sub(x, whole), whole


def divmod(x1: ArrayLike, x2: ArrayLike, /) -> tuple[Array, Array]:  # noqa: A001
    """The floor quotient and remainder: ``(x1 // x2, x1 % x2)``, elementwise.

    ``(floor_divide(x1, x2), remainder(x1, x2))``: see those functions for
    promotion and for integer division by zero.

    Args:
        x1: The dividend, an array or a scalar.
        x2: The divisor, broadcast against ``x1``.

    Returns:
        A pair of arrays of the broadcast shape, in the promoted dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.divmod(rnp.array([7, -7]), 2)
        (Array([ 3, -4], dtype=int32), Array([1, 1], dtype=int32))
    """
    return floor_divide(x1, x2), remainder(x1, x2)


def float_power(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """The power ``x1 ** x2``, elementwise, in floating point.

    Computed in the inexact dtype the two promote to (as JAX's, which
    unlike NumPy's does not widen: float16 stays float16, and without x64
    the result is float32 where NumPy's is float64).

    Args:
        x1: The base, an array or a scalar.
        x2: The exponent, broadcast against ``x1``.

    Returns:
        An array of the broadcast shape, in the promoted inexact dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.float_power(rnp.array([2, 3]), 2)
        Array([4., 9.], dtype=float32)
    """
    x1, x2 = promote_args_inexact("float_power", x1, x2)
    return lax.pow(x1, x2)


def ldexp(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """``x1 * 2 ** x2``, elementwise, for integer ``x2``.

    Computed as JAX's: ``x1`` split by
    :func:`frexp` first, so a small ``x1`` with a large ``x2`` (or a large
    one with a negative ``x2``) stays finite where ``2 ** x2`` alone would
    overflow or underflow; ``x2`` is converted to ``x1``'s float dtype; 0 and
    infinities are returned as they are. A complex ``x1`` or an inexact
    ``x2`` is a ValueError.

    Args:
        x1: The mantissas, an array or a scalar (bool and integers compute in
            the default float dtype).
        x2: The integer exponents, broadcast against ``x1``.

    Returns:
        An array of the broadcast shape, in ``x1``'s inexact dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.ldexp(rnp.array([1.0, 0.5, 3.0]), rnp.array([3, 1, -1]))
        Array([8. , 1. , 1.5], dtype=float32)
    """
    d1, d2 = _dtype(x1, "ldexp"), aval_of(x2, "ldexp", 1).dtype
    if dtypes.is_complex(d1) or dtypes.is_inexact(d2):
        raise ValueError(f"ldexp: not supported for input types ({d1.name}, {d2.name})")
    (x1,) = promote_dtypes_inexact("ldexp", x1)
    dtype = _dtype(x1)
    mantissa, exponent = frexp(x1)
    exponent = _ufuncs.add(
        lax.convert_element_type(exponent, dtype), lax.convert_element_type(x2, dtype)
    )
    # an exponent one past the largest can still give a finite result
    positive = _ufuncs.greater(exponent, 0)
    mantissa = _ufuncs.where(positive, _ufuncs.multiply(mantissa, 2), mantissa)
    exponent = _ufuncs.where(positive, _ufuncs.subtract(exponent, 1), exponent)
    result = _ufuncs.multiply(mantissa, _ufuncs.power(2, exponent))
    passed = _ufuncs.logical_or(isinf(x1), _ufuncs.equal(x1, 0))
    if dtype in _FLUSHED_DTYPES:
        # JAX's ldexp runs under XLA CPU's flushing of subnormals (its PJRT
        # client sets FTZ and DAZ around every execution, whatever the host
        # CPU): a subnormal x1 compares equal to 0 and comes back as it is,
        # and a subnormal result is a zero of its sign. float16 is computed
        # in float32 by XLA, where its subnormals are normal: kept.
        tiny = scalar_like(x1, float(_finfo(dtype).tiny))
        passed = _ufuncs.logical_or(passed, lax.lt(abs(x1), tiny))
        flushed = lax.mul(result, scalar_like(result, 0.0))
        result = _ufuncs.where(lax.lt(abs(result), tiny), flushed, result)
    return _ufuncs.where(passed, x1, result)


_FLUSHED_DTYPES = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(dtypes.bfloat16))


def _finfo(dtype: np.dtype) -> Any:
    import ml_dtypes

    return ml_dtypes.finfo(dtype)


def fmax(x1: ArrayLike, x2: ArrayLike) -> Array:
    """The larger of ``x1`` and ``x2``, elementwise, ignoring NaN.

    ``x1`` where ``x1 > x2`` or ``x2`` is
    NaN, else ``x2`` (JAX's formula; complex compares by real part, then
    imaginary part, and is NaN when either part is): NaN only where both are.
    The operands are promoted with JAX's rules and broadcast together.

    Args:
        x1: The first operand, an array or a scalar.
        x2: The second operand, broadcast against ``x1``.

    Returns:
        An array of the broadcast shape, in the promoted dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.fmax(rnp.array([1.0, rnp.nan, 3.0]), rnp.array([2.0, 0.0, rnp.nan]))
        Array([2., 0., 3.], dtype=float32)
    """
    x1, x2 = promote_args("fmax", x1, x2)
    return select(lax.bitwise_or(_greater(x1, x2), isnan(x2)), x1, x2)


def fmin(x1: ArrayLike, x2: ArrayLike) -> Array:
    """The smaller of ``x1`` and ``x2``, elementwise, ignoring NaN.

    ``x1`` where ``x1 < x2`` or ``x2`` is
    NaN, else ``x2`` (JAX's formula, complex ordered as in ``fmax``): NaN only
    where both are. The operands are promoted with JAX's rules and broadcast
    together.

    Args:
        x1: The first operand, an array or a scalar.
        x2: The second operand, broadcast against ``x1``.

    Returns:
        An array of the broadcast shape, in the promoted dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.fmin(rnp.array([1.0, rnp.nan, 3.0]), rnp.array([2.0, 0.0, rnp.nan]))
        Array([1., 0., 3.], dtype=float32)
    """
    x1, x2 = promote_args("fmin", x1, x2)
    return select(lax.bitwise_or(_greater(x2, x1), isnan(x2)), x1, x2)


def _greater(x1: Any, x2: Any) -> Array:
    if not dtypes.is_complex(_dtype(x1)):
        return lax.gt(x1, x2)
    re1, re2 = lax.real(x1), lax.real(x2)
    return select(lax.eq(re1, re2), lax.gt(lax.imag(x1), lax.imag(x2)), lax.gt(re1, re2))


def nextafter(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """The next representable value after ``x1`` toward ``x2``, elementwise.

    The step is that of the promoted dtype (float32 without x64, where
    NumPy's Python floats step in float64). The operands are promoted to a
    common inexact dtype and broadcast together.

    Args:
        x1: The starting values, an array or a scalar.
        x2: The directions, broadcast against ``x1``.

    Returns:
        An array of the broadcast shape, in the promoted inexact dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> ones = rnp.ones(2, dtype=rnp.float32)
        >>> rnp.nextafter(ones, rnp.array([2.0, 0.0], dtype=rnp.float32))
        Array([1.0000001 , 0.99999994], dtype=float32)
    """
    x1, x2 = _inexact("nextafter", x1, x2)
    return lax.nextafter(x1, x2)


def _require_integers(name: str, *args: ArrayLike) -> list[Any]:
    """The arguments promoted, whose joint dtype must be an integer (JAX checks
    after promoting: ``gcd(bool_array, 6)`` is an int32 gcd)."""
    for position, arg in enumerate(args):
        aval_of(arg, name, position)
    promoted = promote_args(name, *args)
    dtype = _dtype(promoted[0])
    if not dtypes.is_integer(dtype):
        raise ValueError(f"{name}: arguments must be integers, got dtype {dtype.name}")
    return promoted


def gcd(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """The greatest common divisor of ``|x1|`` and ``|x2|``, elementwise.

    By Euclid's algorithm (a ``while_loop`` until every remainder is 0);
    ``gcd(0, 0) == 0``. The operands are promoted with JAX's rules and
    broadcast together; the promoted dtype must be an integer (a ValueError
    otherwise; bool with an integer is fine).

    Args:
        x1: The first operand, an integer array or scalar.
        x2: The second operand, broadcast against ``x1``.

    Returns:
        An array of the broadcast shape, in the promoted integer dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.gcd(rnp.array([12, -18, 0]), rnp.array([8, 12, 0]))
        Array([4, 6, 0], dtype=int32)
    """
    weak = _both_weak("gcd", x1, x2)
    x1, x2 = _require_integers("gcd", x1, x2)
    # the loop carries both at the full shape (promotion leaves rank-0 operands as they are)
    shape = np.broadcast_shapes(aval_of(x1, "gcd", 0).shape, aval_of(x2, "gcd", 1).shape)
    # the loop runs strongly typed (its carry must keep one type); the gcd of
    # two weak operands is weak again, as JAX's
    dtype = _dtype(x1)
    a = lax.convert_element_type(lax.broadcast_in_dim(abs(x1), shape, _trailing(x1, shape)), dtype)
    b = lax.convert_element_type(lax.broadcast_in_dim(abs(x2), shape, _trailing(x2, shape)), dtype)

    def cond(carry: Any) -> Any:
        return lax.reduce_or(
            lax.ne(carry[1], scalar_like(carry[1], 0)), tuple(range(_ndim(carry[1])))
        )

    def body(carry: Any) -> Any:
        a, b = carry
        zero = lax.eq(b, scalar_like(b, 0))
        safe_b = select(zero, full_like_shape(b, 1, _dtype(b)), b)
        return select(zero, a, b), select(zero, b, lax.rem(a, safe_b))

    result = lax.while_loop(cond, body, (a, b))[0]
    return lax.convert_element_type(result, dtype, weak_type=True) if weak else result


def _both_weak(name: str, x1: Any, x2: Any) -> bool:
    return bool(aval_of(x1, name, 0).weak_type and aval_of(x2, name, 1).weak_type)


def _trailing(x: Any, shape: tuple[int, ...]) -> tuple[int, ...]:
    ndim = aval_of(x, "rnp", 0).ndim
    return tuple(range(len(shape) - ndim, len(shape)))


def _ndim(x: Any) -> int:
    return aval_of(x, "rnp", 0).ndim


def lcm(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """The least common multiple of ``|x1|`` and ``|x2|``, elementwise.

    Computed as ``|x1| * (|x2| / gcd(x1, x2))``, and 0 when either is 0; the
    product wraps in the dtype, sign included (JAX's order: no absolute value
    after it). The promoted dtype must be an integer, as for :func:`gcd`.

    Args:
        x1: The first operand, an integer array or scalar.
        x2: The second operand, broadcast against ``x1``.

    Returns:
        An array of the broadcast shape, in the promoted integer dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.lcm(rnp.array([4, 6, 0]), rnp.array([6, -4, 5]))
        Array([12, 12,  0], dtype=int32)
    """
    weak = _both_weak("lcm", x1, x2)
    x1, x2 = _require_integers("lcm", x1, x2)
    x1, x2 = abs(x1), abs(x2)
    divisor = gcd(x1, x2)
    zero = lax.eq(divisor, scalar_like(divisor, 0))
    safe = select(zero, full_like_shape(divisor, 1, _dtype(divisor)), divisor)
    result = lax.mul(x1, lax.div(x2, safe))
    result = select(zero, full_like_shape(divisor, 0, _dtype(divisor)), result)
    return lax.convert_element_type(result, _dtype(result), weak_type=True) if weak else result


def isclose(
    a: ArrayLike, b: ArrayLike, rtol: Any = 1e-05, atol: Any = 1e-08, equal_nan: bool = False
) -> Array:
    """Whether ``a`` and ``b`` are close, elementwise: ``|a - b| <= atol + rtol |b|``.

    Infinities equal only to
    themselves; NaNs equal only with ``equal_nan``. Bools compare
    exactly; integers are compared in the default float. Equal values are
    close whatever the tolerances (``rtol=inf`` at 0); otherwise ``b`` must be
    finite, so an infinite ``a`` is within an infinite ``atol`` of a finite
    ``b`` (JAX's formula, not NumPy's). Typed keys compare equal or not.

    Args:
        a: The first operand, an array or a scalar.
        b: The second operand, broadcast against ``a``.
        rtol: The relative tolerance (relative to ``|b|``).
        atol: The absolute tolerance.
        equal_nan: Whether NaN is close to NaN.

    Returns:
        A bool array of the broadcast shape.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.isclose(rnp.array([1.0, 1.0, rnp.nan]), rnp.array([1.0 + 1e-9, 1.1, rnp.nan]))
        Array([ True, False, False], dtype=bool)
    """
    if isinstance(getattr(a, "dtype", None), dtypes.ExtendedDtype) or isinstance(
        getattr(b, "dtype", None), dtypes.ExtendedDtype
    ):
        return a == b
    a, b = promote_args("isclose", a, b)
    dtype = _dtype(a)
    if not dtypes.is_inexact(dtype):
        if dtypes.is_bool(dtype):
            return lax.eq(a, b)
        a, b = promote_args_inexact("isclose", a, b)
        dtype = _dtype(a)
    real_dtype = _dtype(abs(a))
    rtol = lax.convert_element_type(rtol, real_dtype)
    atol = lax.convert_element_type(atol, real_dtype)
    in_range = lax.le(abs(lax.sub(a, b)), lax.add(atol, lax.mul(rtol, abs(b))))
    finite_b = lax.bitwise_not(lax.bitwise_or(isinf(b), isnan(b)))
    close = lax.bitwise_or(lax.eq(a, b), lax.bitwise_and(finite_b, in_range))
    if equal_nan:
        both_nan = lax.bitwise_and(isnan(a), isnan(b))
        close = lax.bitwise_or(close, both_nan)
    return close


def allclose(
    a: ArrayLike, b: ArrayLike, rtol: Any = 1e-05, atol: Any = 1e-08, equal_nan: bool = False
) -> Array:
    """Whether ``a`` and ``b`` are close everywhere: :func:`isclose`, all true.

    Args:
        a: The first operand, an array or a scalar.
        b: The second operand, broadcast against ``a``.
        rtol: The relative tolerance (relative to ``|b|``).
        atol: The absolute tolerance.
        equal_nan: Whether NaN is close to NaN.

    Returns:
        A rank-0 bool array (NumPy returns a Python bool).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.allclose(rnp.array([1.0, 2.0]), rnp.array([1.0, 2.0 + 1e-9]))
        Array(True, dtype=bool)
    """
    close = isclose(a, b, rtol, atol, equal_nan)
    return lax.reduce_and(close, tuple(range(_ndim(close))))


def array_equal(a1: ArrayLike, a2: ArrayLike, equal_nan: bool = False) -> Array:
    """Whether ``a1`` and ``a2`` have the same shape and equal elements.

    The elements are compared after promotion; NaNs are equal only with
    ``equal_nan``. Different shapes give False (no broadcasting).

    Args:
        a1: The first array, or a scalar.
        a2: The second array, or a scalar.
        equal_nan: Whether NaN equals NaN.

    Returns:
        A rank-0 bool array (NumPy returns a Python bool).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.array_equal(rnp.array([1, 2]), rnp.array([1, 2]))
        Array(True, dtype=bool)
        >>> rnp.array_equal(rnp.array([1, 2]), rnp.array([[1, 2]]))
        Array(False, dtype=bool)
    """

    a1, a2 = asarray(a1), asarray(a2)
    if aval_of(a1, "array_equal", 0).shape != aval_of(a2, "array_equal", 1).shape:
        return asarray(False)
    a1, a2 = promote_args("array_equal", a1, a2)
    equal = lax.eq(a1, a2)
    if equal_nan:
        equal = lax.bitwise_or(equal, lax.bitwise_and(isnan(a1), isnan(a2)))
    return lax.reduce_and(equal, tuple(range(_ndim(equal))))


def array_equiv(a1: ArrayLike, a2: ArrayLike) -> Array:
    """Whether ``a1`` and ``a2`` are equal everywhere after broadcasting together.

    False if the shapes do not broadcast together.

    Args:
        a1: The first array, or a scalar.
        a2: The second array, or a scalar.

    Returns:
        A rank-0 bool array (NumPy returns a Python bool).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.array_equiv(rnp.array([1, 2]), rnp.array([[1, 2], [1, 2]]))
        Array(True, dtype=bool)
        >>> rnp.array_equiv(rnp.array([1, 2]), rnp.array([1, 2, 3]))
        Array(False, dtype=bool)
    """

    a1, a2 = asarray(a1), asarray(a2)
    try:
        np.broadcast_shapes(
            aval_of(a1, "array_equiv", 0).shape, aval_of(a2, "array_equiv", 1).shape
        )
    except ValueError:
        return asarray(False)
    equal = lax.eq(*promote_args("array_equiv", a1, a2))
    return lax.reduce_and(equal, tuple(range(_ndim(equal))))


# Array-API names jax.numpy also exports
acos, asin, atan = alias(_ufuncs.arccos), alias(_ufuncs.arcsin), alias(_ufuncs.arctan)
atan2 = alias(_ufuncs.arctan2)
acosh, asinh, atanh = alias(arccosh), alias(arcsinh), alias(arctanh)
bitwise_invert = alias(_ufuncs.invert)
bitwise_left_shift, bitwise_right_shift = alias(_ufuncs.left_shift), alias(_ufuncs.right_shift)


__all__ = [
    "acos", "acosh", "allclose", "angle", "arccosh", "arcsinh", "arctanh", "array_equal",
    "array_equiv", "asin", "asinh", "atan", "atan2", "atanh", "bitwise_invert",
    "bitwise_left_shift", "bitwise_right_shift", "copysign", "deg2rad", "degrees", "divmod",
    "exp2", "fabs", "frexp", "float_power", "fmax", "fmin", "fmod", "gcd", "heaviside", "hypot",
    "iscomplex", "isclose", "isneginf", "isposinf", "isreal", "lcm", "ldexp", "log10", "log2",
    "logaddexp", "logaddexp2", "modf", "nan_to_num", "nextafter", "rad2deg", "radians",
    "rint", "signbit", "sinc", "trunc",
]  # fmt: skip
