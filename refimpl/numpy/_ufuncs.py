"""Elementwise functions with NumPy broadcasting and JAX promotion.

Each function promotes its operands the way ``jax.numpy`` does (see
``_promote``), broadcasts them, and applies ``lax`` functions. Results are
weakly typed exactly when the promoted operands are (``rnp.add(i8, 1)`` is a
strong int8, ``rnp.add(1, 2.5)`` a weak float32). Comparisons and other
bool-valued functions are never weak in refimpl (JAX sometimes marks them
weak; the flag has no effect on bool promotion).
"""

from __future__ import annotations

import functools
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


def alias(target: Any) -> Any:
    """``target`` under a second public name (``abs`` for ``absolute``): a
    distinct function whose docstring says "Alias of" the target, as JAX's
    aliases are distinct functions. It keeps the target's ``__name__`` and
    signature (``functools.wraps``), as when the two names were one object:
    the errors it raises name the target."""

    @functools.wraps(target)
    def alias_of(*args: Any, **kwargs: Any) -> Any:
        return target(*args, **kwargs)

    alias_of.__doc__ = (
        f"Alias of :func:`refimpl.numpy.{target.__name__}`.\n\n"
        "The same function under a second name: see its documentation."
    )
    return alias_of


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


def _inexact_unary(lax_fn: Any, name: str, summary: str, example: str, result: str) -> Any:
    """``lax_fn`` elementwise after promotion to an inexact dtype, named
    ``name``; its docstring is ``summary`` and one example call ``example``
    that prints ``result``."""

    def fn(x: ArrayLike, /) -> Array:
        (x,) = promote_args_inexact(name, x)
        return lax_fn(x)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"""{summary}

    Bool and integer inputs are computed in the default float dtype (float32,
    or float64 with x64 enabled); inexact inputs keep their dtype.

    Args:
        x: The input array, or a scalar.

    Returns:
        An array of ``x``'s shape, in ``x``'s dtype if it is inexact, else in
        the default float dtype; weakly typed when ``x`` is (a Python scalar).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> {example}
        {result}
    """
    return fn


exp = _inexact_unary(
    lax.exp,
    "exp",
    "The exponential ``e**x``, elementwise (complex inputs too).",
    "rnp.exp(rnp.array([0.0, 1.0]))",
    "Array([1.       , 2.7182817], dtype=float32)",
)
expm1 = _inexact_unary(
    lax.expm1,
    "expm1",
    "``exp(x) - 1``, elementwise, accurate also for ``x`` near zero (complex inputs too).",
    "rnp.expm1(rnp.array([0.0, 1e-10]))",
    "Array([0.e+00, 1.e-10], dtype=float32)",
)
log = _inexact_unary(
    lax.log,
    "log",
    "The natural logarithm, elementwise.\n\n"
    "    ``-inf`` at 0, ``nan`` for negative real ``x`` (complex inputs give the principal\n"
    "    branch).",
    "rnp.log(rnp.array([1.0, 2.0, 4.0]))",
    "Array([0.       , 0.6931472, 1.3862944], dtype=float32)",
)
log1p = _inexact_unary(
    lax.log1p,
    "log1p",
    "``log(1 + x)``, elementwise, accurate also for ``x`` near zero (complex inputs too).",
    "rnp.log1p(rnp.array([0.0, 1e-10]))",
    "Array([0.e+00, 1.e-10], dtype=float32)",
)
sqrt = _inexact_unary(
    lax.sqrt,
    "sqrt",
    "The non-negative square root, elementwise.\n\n"
    "    ``nan`` for negative real ``x`` (complex inputs give the principal root).",
    "rnp.sqrt(rnp.array([1, 4, 9]))",
    "Array([1., 2., 3.], dtype=float32)",
)
cbrt = _inexact_unary(
    lax.cbrt,
    "cbrt",
    "The real cube root, elementwise (negative for negative ``x``).\n\n"
    "    Complex input is a TypeError.",
    "rnp.cbrt(rnp.array([-8.0, 1.0, 8.0]))",
    "Array([-2.,  1.,  2.], dtype=float32)",
)
sin = _inexact_unary(
    lax.sin,
    "sin",
    "The sine of ``x`` (in radians), elementwise.",
    "rnp.sin(rnp.array([0.0, rnp.pi / 2]))",
    "Array([0., 1.], dtype=float32)",
)
cos = _inexact_unary(
    lax.cos,
    "cos",
    "The cosine of ``x`` (in radians), elementwise.",
    "rnp.cos(rnp.array([0.0, rnp.pi]))",
    "Array([ 1., -1.], dtype=float32)",
)
tan = _inexact_unary(
    lax.tan,
    "tan",
    "The tangent of ``x`` (in radians), elementwise.",
    "rnp.tan(rnp.array([0.0, rnp.pi / 4]))",
    "Array([0., 1.], dtype=float32)",
)
arcsin = _inexact_unary(
    lax.asin,
    "arcsin",
    "The inverse sine, elementwise: an angle in radians in ``[-pi/2, pi/2]``.\n\n"
    "    ``nan`` for real ``x`` outside ``[-1, 1]``.",
    "rnp.arcsin(rnp.array([0.0, 1.0]))",
    "Array([0.       , 1.5707964], dtype=float32)",
)
arccos = _inexact_unary(
    lax.acos,
    "arccos",
    "The inverse cosine, elementwise: an angle in radians in ``[0, pi]``.\n\n"
    "    ``nan`` for real ``x`` outside ``[-1, 1]``.",
    "rnp.arccos(rnp.array([1.0, 0.0]))",
    "Array([0.       , 1.5707964], dtype=float32)",
)
arctan = _inexact_unary(
    lax.atan,
    "arctan",
    "The inverse tangent, elementwise: an angle in radians in ``[-pi/2, pi/2]``.",
    "rnp.arctan(rnp.array([0.0, 1.0]))",
    "Array([0.       , 0.7853982], dtype=float32)",
)
sinh = _inexact_unary(
    lax.sinh,
    "sinh",
    "The hyperbolic sine ``(e**x - e**-x) / 2``, elementwise.",
    "rnp.sinh(rnp.array([0.0, 1.0]))",
    "Array([0.       , 1.1752012], dtype=float32)",
)
cosh = _inexact_unary(
    lax.cosh,
    "cosh",
    "The hyperbolic cosine ``(e**x + e**-x) / 2``, elementwise.",
    "rnp.cosh(rnp.array([0.0, 1.0]))",
    "Array([1.       , 1.5430807], dtype=float32)",
)
tanh = _inexact_unary(
    lax.tanh,
    "tanh",
    "The hyperbolic tangent ``sinh(x) / cosh(x)``, elementwise.",
    "rnp.tanh(rnp.array([0.0, rnp.inf]))",
    "Array([0., 1.], dtype=float32)",
)


def absolute(x: ArrayLike, /) -> Array:
    """The absolute value ``|x|``, elementwise.

    Bool and unsigned inputs are returned unchanged; complex input gives its
    magnitude, in the real dtype of the same precision (complex64 gives
    float32). Signed integers wrap around: the most negative value is its own
    absolute value. A weakly typed input gives a weakly typed result.

    Args:
        x: The input array, or a scalar.

    Returns:
        An array of ``x``'s shape, in ``x``'s dtype (the matching real dtype
        for complex ``x``).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.absolute(rnp.array([-2, 0, 3]))
        Array([2, 0, 3], dtype=int32)
        >>> rnp.absolute(rnp.array([3 + 4j]))
        Array([5.], dtype=float32)
    """
    aval = aval_of(x, "absolute", 0)
    if dtypes.is_bool(aval.dtype) or dtypes.is_unsigned_int(aval.dtype):
        return as_array(x)
    result = lax.abs(x)
    result_aval = aval_of(result, "absolute", 0)
    if aval.weak_type and not result_aval.weak_type:
        # the abs primitive drops the weak type; jnp.abs keeps it
        result = lax.convert_element_type(result, result_aval.dtype, weak_type=True)
    return result


abs = alias(absolute)  # noqa: A001


def negative(x: ArrayLike, /) -> Array:
    """The numerical negative ``-x``, elementwise.

    Integers wrap around (in int8, ``-(-128)`` is -128); bool input is a
    TypeError (:func:`logical_not` and :func:`invert` negate bools).
    ``rnp.negative`` is a one-input :class:`ufunc` object.

    Args:
        x: The input array, or a scalar (not bool).

    Returns:
        An array of ``x``'s shape and dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.negative(rnp.array([1, -2, 0]))
        Array([-1,  2,  0], dtype=int32)
    """
    _reject_bool("negative", x)
    return lax.neg(x)


def positive(x: ArrayLike, /) -> Array:
    """The unary plus ``+x``: the input itself, as an array.

    Any dtype is accepted, bool included (NumPy refuses bool).

    Args:
        x: The input array, or a scalar.

    Returns:
        ``x`` as an array: the same values, shape, dtype and weak type.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.positive(rnp.array([1, -2]))
        Array([ 1, -2], dtype=int32)
    """
    aval_of(x, "positive", 0)
    return as_array(x)


def sign(x: ArrayLike, /) -> Array:
    """The sign of ``x``, elementwise: -1, 0 or 1 (``nan`` for ``nan``).

    For nonzero complex ``x`` the sign is ``x / |x|`` (NumPy 2's definition);
    bool input is a TypeError.

    Args:
        x: The input array, or a scalar (not bool).

    Returns:
        An array of ``x``'s shape and dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.sign(rnp.array([-3.0, 0.0, 2.0]))
        Array([-1.,  0.,  1.], dtype=float32)
        >>> rnp.sign(rnp.array([3 + 4j]))
        Array([0.6+0.8j], dtype=complex64)
    """
    _reject_bool("sign", x)
    return lax.sign(x)


def floor(x: ArrayLike, /) -> Array:
    """Rounds down, elementwise: the largest integer not greater than ``x``.

    Bool and integer inputs are returned unchanged (in their own dtype);
    complex input is a TypeError.

    Args:
        x: The input array, or a scalar.

    Returns:
        An array of ``x``'s shape and dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.floor(rnp.array([-1.5, 0.5, 2.0]))
        Array([-2.,  0.,  2.], dtype=float32)
    """
    if not dtypes.is_inexact(_dtype_of(x, "floor")):
        return as_array(x)
    return lax.floor(x)


def ceil(x: ArrayLike, /) -> Array:
    """Rounds up, elementwise: the smallest integer not less than ``x``.

    Bool and integer inputs are returned unchanged (in their own dtype);
    complex input is a TypeError.

    Args:
        x: The input array, or a scalar.

    Returns:
        An array of ``x``'s shape and dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.ceil(rnp.array([-1.5, 0.5, 2.0]))
        Array([-1.,  1.,  2.], dtype=float32)
    """
    if not dtypes.is_inexact(_dtype_of(x, "ceil")):
        return as_array(x)
    return lax.ceil(x)


def round(a: ArrayLike, decimals: int = 0, out: None = None) -> Array:  # noqa: A001
    """Round to ``decimals`` decimal places, halves to even (like NumPy).

    Integers are returned unchanged; ``decimals != 0`` scales by ``10**decimals``,
    rounds and scales back (float16 in float32), as JAX does. Complex input
    rounds the real and imaginary parts separately. Bool input is a
    ValueError, and so (unlike NumPy) is integer input with ``decimals < 0``
    (NotImplementedError, as in JAX).

    Args:
        a: The input array, or a scalar.
        decimals: How many decimal places to keep (a static int; negative
            rounds to tens, hundreds...).
        out: Must be None (arrays are immutable; anything else is a
            NotImplementedError).

    Returns:
        An array of ``a``'s shape and dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.round(rnp.array([0.5, 1.5, 2.5, -0.5]))
        Array([ 0.,  2.,  2., -0.], dtype=float32)
        >>> rnp.round(rnp.array([1.234, 5.678]), 1)
        Array([1.2, 5.7], dtype=float32)
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


around = alias(round)


def isfinite(x: ArrayLike, /) -> Array:
    """Whether ``x`` is finite (not infinite and not NaN), elementwise.

    Always True for bool and integer inputs; a complex number is finite when
    both its parts are.

    Args:
        x: The input array, or a scalar.

    Returns:
        A bool array of ``x``'s shape.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.isfinite(rnp.array([1.0, rnp.inf, rnp.nan]))
        Array([ True, False, False], dtype=bool)
    """
    dtype = _dtype_of(x, "isfinite")
    if dtypes.is_floating(dtype):
        return lax.is_finite(x)
    if dtypes.is_complex(dtype):
        return lax.bitwise_and(lax.is_finite(real(x)), lax.is_finite(imag(x)))
    return full_like_shape(x, True, np.dtype(bool))


def isinf(x: ArrayLike, /) -> Array:
    """Whether ``x`` is +inf or -inf (in either part, for complex), elementwise.

    The result is strongly typed, also for a Python float (JAX compares with
    a strong constant). Always False for bool and integer inputs.

    Args:
        x: The input array, or a scalar.

    Returns:
        A bool array of ``x``'s shape.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.isinf(rnp.array([1.0, -rnp.inf, rnp.nan]))
        Array([False,  True, False], dtype=bool)
    """
    dtype = _dtype_of(x, "isinf")
    if dtypes.is_floating(dtype):
        return lax.eq(lax.abs(x), np.asarray(np.inf, dtype))
    if dtypes.is_complex(dtype):
        return lax.bitwise_or(isinf(real(x)), isinf(imag(x)))
    return full_like_shape(x, False, np.dtype(bool))


def isnan(x: ArrayLike, /) -> Array:
    """Whether ``x`` is NaN, elementwise, computed as ``x != x``.

    Always False for bool and integer inputs; a complex number is NaN when
    either part is.

    Args:
        x: The input array, or a scalar.

    Returns:
        A bool array of ``x``'s shape.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.isnan(rnp.array([1.0, rnp.inf, rnp.nan]))
        Array([False, False,  True], dtype=bool)
    """
    aval_of(x, "isnan", 0)
    return lax.ne(x, x)


def logical_not(x: ArrayLike, /) -> Array:
    """The logical negation ``not x``, elementwise, of ``x != 0``.

    Args:
        x: The input array, or a scalar, of any dtype (nonzero is True).

    Returns:
        A bool array of ``x``'s shape.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.logical_not(rnp.array([0, 1, 2]))
        Array([ True, False, False], dtype=bool)
    """
    aval_of(x, "logical_not", 0)
    return lax.bitwise_not(to_bool(x))


def invert(x: ArrayLike, /) -> Array:
    """The bitwise not ``~x``, elementwise, of bool or integer input.

    For signed integers ``~x`` is ``-x - 1``; for bool it is the logical not.
    Floating and complex inputs are a TypeError.

    Args:
        x: The input array, or a scalar, of a bool or integer dtype.

    Returns:
        An array of ``x``'s shape and dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.invert(rnp.array([0, 1, -2]))
        Array([-1, -2,  1], dtype=int32)
        >>> rnp.invert(rnp.array([0, 255], dtype=rnp.uint8))
        Array([255,   0], dtype=uint8)
    """
    aval_of(x, "invert", 0)
    return lax.bitwise_not(x)


bitwise_not = alias(invert)


def square(x: ArrayLike, /) -> Array:
    """The square ``x * x``, elementwise.

    Bool input computes in the default integer dtype (NumPy's gives int8).

    Args:
        x: The input array, or a scalar.

    Returns:
        An array of ``x``'s shape, in ``x``'s dtype (the default int for bool).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.square(rnp.array([1, -2, 3]))
        Array([1, 4, 9], dtype=int32)
    """
    (x,) = promote_dtypes_numeric("square", x)
    return lax.square(x)


def reciprocal(x: ArrayLike, /) -> Array:
    """The reciprocal ``1 / x``, elementwise.

    Bool and integer inputs compute in the default float dtype, as JAX's
    (NumPy's integer reciprocal truncates to an integer: 0 for ``x > 1``).

    Args:
        x: The input array, or a scalar.

    Returns:
        An array of ``x``'s shape, in ``x``'s dtype if it is inexact, else the
        default float dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.reciprocal(rnp.array([1.0, 2.0, 4.0]))
        Array([1.  , 0.5 , 0.25], dtype=float32)
    """
    (x,) = promote_dtypes_inexact("reciprocal", x)
    return lax.integer_pow(x, -1)


# Complex parts: the real/imag/conj primitives, which read and write each part
# directly (an infinity or NaN in one part leaves the other alone, as XLA).


def real(val: ArrayLike, /) -> Array:
    """The real part of ``val``, elementwise.

    Non-complex input is returned unchanged.

    Args:
        val: The input array, or a scalar.

    Returns:
        An array of ``val``'s shape: the real dtype of the same precision for
        complex ``val`` (complex64 gives float32), else ``val``'s dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.real(rnp.array([1 + 2j, 3 - 4j]))
        Array([1., 3.], dtype=float32)
    """
    aval = aval_of(val, "real", 0)
    if not dtypes.is_complex(aval.dtype):
        return as_array(val)
    return lax.real(val)


def imag(val: ArrayLike, /) -> Array:
    """The imaginary part of ``val``, elementwise.

    Non-complex input gives zeros of its own dtype.

    Args:
        val: The input array, or a scalar.

    Returns:
        An array of ``val``'s shape: the real dtype of the same precision for
        complex ``val`` (complex64 gives float32), else ``val``'s dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.imag(rnp.array([1 + 2j, 3 - 4j]))
        Array([ 2., -4.], dtype=float32)
        >>> rnp.imag(rnp.array([1.0, 2.0]))
        Array([0., 0.], dtype=float32)
    """
    aval = aval_of(val, "imag", 0)
    if not dtypes.is_complex(aval.dtype):
        return lax.broadcast_in_dim(scalar_like(val, 0), aval.shape, ())
    return lax.imag(val)


def conjugate(x: ArrayLike, /) -> Array:
    """The complex conjugate of ``x``, elementwise (the imaginary part negated).

    Non-complex input is returned unchanged.

    Args:
        x: The input array, or a scalar.

    Returns:
        An array of ``x``'s shape and dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.conjugate(rnp.array([1 + 2j, 3 - 4j]))
        Array([1.-2.j, 3.+4.j], dtype=complex64)
    """
    aval = aval_of(x, "conjugate", 0)
    if not dtypes.is_complex(aval.dtype):
        return as_array(x)
    return lax.conj(x)


conj = alias(conjugate)


# --- binary ------------------------------------------------------------------------


def add(x: ArrayLike, y: ArrayLike, /) -> Array:
    """The sum ``x + y``, elementwise; for bool operands, the logical or.

    The operands are promoted with JAX's rules (weak types included) and
    broadcast together. ``rnp.add`` is a :class:`ufunc` object:
    ``rnp.add.reduce`` is :func:`sum`, ``rnp.add.accumulate`` is
    :func:`cumsum`, and ``outer``, ``reduceat`` and ``at`` are there too.

    Args:
        x: The first operand, an array or a scalar.
        y: The second operand, broadcast against ``x``.

    Returns:
        An array of the broadcast shape, in the promoted dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.add(rnp.array([1, 2, 3]), 10)
        Array([11, 12, 13], dtype=int32)
        >>> rnp.add.reduce(rnp.array([1, 2, 3]))
        Array(6, dtype=int32)
    """
    x, y = promote_args("add", x, y)
    return lax.bitwise_or(x, y) if dtypes.is_bool(_dtype_of(x)) else lax.add(x, y)


def subtract(x: ArrayLike, y: ArrayLike, /) -> Array:
    """The difference ``x - y``, elementwise.

    The operands are promoted with JAX's rules and broadcast together; bool
    operands are a TypeError. ``rnp.subtract`` is a :class:`ufunc` object
    (``outer``, ``at``; its ``reduce`` folds left to right).

    Args:
        x: The first operand, an array or a scalar.
        y: The second operand, broadcast against ``x``.

    Returns:
        An array of the broadcast shape, in the promoted dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.subtract(rnp.array([5, 3]), rnp.array([1, 4]))
        Array([ 4, -1], dtype=int32)
        >>> rnp.subtract.outer(rnp.array([1, 2]), rnp.array([1, 2, 3]))
        Array([[ 0, -1, -2],
               [ 1,  0, -1]], dtype=int32)
    """
    x, y = promote_args("subtract", x, y)
    _reject_bool("subtract", x)
    return lax.sub(x, y)


def multiply(x: ArrayLike, y: ArrayLike, /) -> Array:
    """The product ``x * y``, elementwise; for bool operands, the logical and.

    The operands are promoted with JAX's rules and broadcast together.
    ``rnp.multiply`` is a :class:`ufunc` object: ``rnp.multiply.reduce`` is
    :func:`prod` and ``rnp.multiply.accumulate`` is :func:`cumprod`.

    Args:
        x: The first operand, an array or a scalar.
        y: The second operand, broadcast against ``x``.

    Returns:
        An array of the broadcast shape, in the promoted dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.multiply(rnp.array([1.5, 2.0]), rnp.array([2, 3]))
        Array([3., 6.], dtype=float32)
        >>> rnp.multiply.reduce(rnp.array([1, 2, 3, 4]))
        Array(24, dtype=int32)
    """
    x, y = promote_args("multiply", x, y)
    return lax.bitwise_and(x, y) if dtypes.is_bool(_dtype_of(x)) else lax.mul(x, y)


def true_divide(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """The quotient ``x1 / x2``, elementwise, in floating point.

    The operands are promoted with JAX's rules, then bool and integers go to
    the default float dtype; they are broadcast together.

    Args:
        x1: The dividend, an array or a scalar.
        x2: The divisor, broadcast against ``x1``.

    Returns:
        An array of the broadcast shape, in the promoted inexact dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.true_divide(rnp.array([1, 2, 3]), 2)
        Array([0.5, 1. , 1.5], dtype=float32)
    """
    x1, x2 = promote_args_inexact("true_divide", x1, x2)
    return lax.div(x1, x2)


divide = alias(true_divide)


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
    """The floor division ``x1 // x2``, elementwise: the quotient rounded toward -inf.

    The operands are promoted with JAX's rules (bool to the default int) and
    broadcast together; complex operands are a TypeError. Integer division
    by zero raises nothing: it gives ``lax.div``'s quotient (-1 for signed,
    all ones for unsigned) after the rounding correction, so ``5 // 0`` is
    -2 as in JAX (NumPy gives 0).

    Args:
        x1: The dividend, an array or a scalar.
        x2: The divisor, broadcast against ``x1``.

    Returns:
        An array of the broadcast shape, in the promoted dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.floor_divide(rnp.array([7, -7, 7]), rnp.array([2, 2, -2]))
        Array([ 3, -4, -4], dtype=int32)
        >>> rnp.floor_divide(rnp.array([7.5, -7.5]), 2)
        Array([ 3., -4.], dtype=float32)
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
    """The remainder ``x1 % x2``, elementwise, with the sign of the divisor.

    This is Python's and NumPy's remainder, unlike ``lax.rem`` (the sign of
    the dividend). The operands are promoted with JAX's rules (bool to the
    default int) and broadcast together. Integer ``x % 0`` is 0 (the divisor
    0 is replaced by 1), as in JAX.

    Args:
        x1: The dividend, an array or a scalar.
        x2: The divisor, broadcast against ``x1``.

    Returns:
        An array of the broadcast shape, in the promoted dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.remainder(rnp.array([7, -7, 7]), rnp.array([3, 3, -3]))
        Array([ 1,  2, -2], dtype=int32)
        >>> rnp.remainder(rnp.array([5.5, -5.5]), 2)
        Array([1.5, 0.5], dtype=float32)
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


mod = alias(remainder)


def _static_int(value: Any) -> int | None:
    """``operator.index(value)`` for concrete values; None if traced or not an int."""
    if is_traced(value):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def power(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """The power ``x1 ** x2``, elementwise.

    As in JAX: a concrete integer exponent uses ``integer_pow`` (the result has
    ``x1``'s dtype, bool -> int); an integer base with an integer array
    exponent uses binary exponentiation; a float base with an integer exponent
    keeps the base's dtype; anything else promotes and uses ``lax.pow``.
    Integers raised to a concrete negative power are a TypeError (an integer
    array exponent that is negative gives unspecified values).

    Args:
        x1: The base, an array or a scalar.
        x2: The exponent, broadcast against ``x1``.

    Returns:
        An array of the broadcast shape, in the dtype described above.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.power(rnp.array([1, 2, 3]), 2)
        Array([1, 4, 9], dtype=int32)
        >>> rnp.power(rnp.array([2, 3]), rnp.array([3, 2]))
        Array([8, 9], dtype=int32)
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


pow = alias(power)  # noqa: A001


_PROMOTED = (
    "The operands are promoted with JAX's rules (weak types included) and broadcast together."
)
_COMPARED = _PROMOTED + (
    "\n    Complex numbers are ordered by real part, then imaginary part (as JAX's)."
)
_BOOL_RESULT = "A bool array of the broadcast shape."
_PROMOTED_RESULT = "An array of the broadcast shape, in the promoted dtype."


def _promoted_binary(
    lax_fn: Any,
    name: str,
    promote: Any,
    summary: str,
    details: str,
    returns: str,
    example: str,
    result: str,
) -> Any:
    """``lax_fn`` of the two operands after ``promote``, named ``name``; its
    docstring has ``summary``, ``details``, what it ``returns`` and one
    example call ``example`` that prints ``result``."""

    def fn(x: ArrayLike, y: ArrayLike, /) -> Array:
        return lax_fn(*promote(name, x, y))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"""{summary}

    {details}

    Args:
        x: The first operand, an array or a scalar.
        y: The second operand, broadcast against ``x``.

    Returns:
        {returns}

    Examples:
        >>> import refimpl.numpy as rnp
        >>> {example}
        {result}
    """
    return fn


maximum = _promoted_binary(
    lax.max,
    "maximum",
    promote_args,
    "The larger of ``x`` and ``y``, elementwise; NaN wins (either operand's NaN).",
    _PROMOTED + "\n    ``rnp.maximum`` is a :class:`ufunc` object (``reduce`` is :func:`max`).",
    _PROMOTED_RESULT,
    "rnp.maximum(rnp.array([1, 5, 3]), rnp.array([4, 2, 3]))",
    "Array([4, 5, 3], dtype=int32)",
)
minimum = _promoted_binary(
    lax.min,
    "minimum",
    promote_args,
    "The smaller of ``x`` and ``y``, elementwise; NaN wins (either operand's NaN).",
    _PROMOTED + "\n    ``rnp.minimum`` is a :class:`ufunc` object (``reduce`` is :func:`min`).",
    _PROMOTED_RESULT,
    "rnp.minimum(rnp.array([1.0, rnp.nan]), 2.0)",
    "Array([ 1., nan], dtype=float32)",
)
arctan2 = _promoted_binary(
    lax.atan2,
    "arctan2",
    promote_args_inexact,
    "The angle of the point ``(y, x) = (x1, x2)``: ``arctan(x / y)`` in the right quadrant.",
    "The first operand is the y coordinate, the second the x coordinate; the\n"
    "    result is in radians in ``[-pi, pi]``. The operands are promoted with JAX's\n"
    "    rules, bool and integers to the default float dtype, and broadcast together.",
    "A float array of the broadcast shape, in the promoted inexact dtype.",
    "rnp.arctan2(rnp.array([0.0, 1.0]), rnp.array([1.0, 0.0]))",
    "Array([0.       , 1.5707964], dtype=float32)",
)
equal = _promoted_binary(
    lax.eq,
    "equal",
    promote_args,
    "Whether ``x == y``, elementwise.",
    _PROMOTED,
    _BOOL_RESULT,
    "rnp.equal(rnp.array([1, 2, 3]), 2)",
    "Array([False,  True, False], dtype=bool)",
)
not_equal = _promoted_binary(
    lax.ne,
    "not_equal",
    promote_args,
    "Whether ``x != y``, elementwise (True where either is NaN).",
    _PROMOTED,
    _BOOL_RESULT,
    "rnp.not_equal(rnp.array([1, 2, 3]), 2)",
    "Array([ True, False,  True], dtype=bool)",
)


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


less = _promoted_binary(
    _ordered(lax.lt),
    "less",
    promote_args,
    "Whether ``x < y``, elementwise.",
    _COMPARED,
    _BOOL_RESULT,
    "rnp.less(rnp.array([1, 2, 3]), 2)",
    "Array([ True, False, False], dtype=bool)",
)
less_equal = _promoted_binary(
    _ordered(lax.le),
    "less_equal",
    promote_args,
    "Whether ``x <= y``, elementwise.",
    _COMPARED,
    _BOOL_RESULT,
    "rnp.less_equal(rnp.array([1, 2, 3]), 2)",
    "Array([ True,  True, False], dtype=bool)",
)
greater = _promoted_binary(
    _ordered(lax.gt),
    "greater",
    promote_args,
    "Whether ``x > y``, elementwise.",
    _COMPARED,
    _BOOL_RESULT,
    "rnp.greater(rnp.array([1, 2, 3]), 2)",
    "Array([False, False,  True], dtype=bool)",
)
greater_equal = _promoted_binary(
    _ordered(lax.ge),
    "greater_equal",
    promote_args,
    "Whether ``x >= y``, elementwise.",
    _COMPARED,
    _BOOL_RESULT,
    "rnp.greater_equal(rnp.array([1, 2, 3]), 2)",
    "Array([False,  True,  True], dtype=bool)",
)
_BITWISE = _PROMOTED + (
    "\n    Bool and integer operands only (bool gives the logical operation). ``rnp.{name}``"
    "\n    is a :class:`ufunc` object whose ``reduce`` folds an integer array with it."
)
bitwise_and = _promoted_binary(
    lax.bitwise_and,
    "bitwise_and",
    promote_args,
    "The bitwise and ``x & y``, elementwise.",
    _BITWISE.format(name="bitwise_and"),
    _PROMOTED_RESULT,
    "rnp.bitwise_and(rnp.array([12, 10]), 6)",
    "Array([4, 2], dtype=int32)",
)
bitwise_or = _promoted_binary(
    lax.bitwise_or,
    "bitwise_or",
    promote_args,
    "The bitwise or ``x | y``, elementwise.",
    _BITWISE.format(name="bitwise_or"),
    _PROMOTED_RESULT,
    "rnp.bitwise_or(rnp.array([12, 10]), 6)",
    "Array([14, 14], dtype=int32)",
)
bitwise_xor = _promoted_binary(
    lax.bitwise_xor,
    "bitwise_xor",
    promote_args,
    "The bitwise exclusive or ``x ^ y``, elementwise.",
    _BITWISE.format(name="bitwise_xor"),
    _PROMOTED_RESULT,
    "rnp.bitwise_xor(rnp.array([12, 10]), 6)",
    "Array([10, 12], dtype=int32)",
)
left_shift = _promoted_binary(
    lax.shift_left,
    "left_shift",
    promote_args_numeric,
    "The bits of ``x`` shifted left by ``y``, elementwise: ``x << y``.",
    "The operands are promoted with JAX's rules (bool to the default int) and\n"
    "    broadcast together; integers only. Shifting by the bit width or more gives 0.",
    _PROMOTED_RESULT,
    "rnp.left_shift(rnp.array([1, 3]), rnp.array([2, 4]))",
    "Array([ 4, 48], dtype=int32)",
)


def right_shift(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """The bits of ``x1`` shifted right by ``x2``, elementwise: ``x1 >> x2``.

    The shift is arithmetic (the sign bit fills in) for signed integers and
    logical (zeros fill in) for unsigned ones, except uint4, which shifts
    arithmetically as in JAX 0.10.2. The operands are promoted with JAX's
    rules (bool to the default int) and broadcast together.

    Args:
        x1: The integers to shift, an array or a scalar.
        x2: The shift amounts, broadcast against ``x1``.

    Returns:
        An array of the broadcast shape, in the promoted dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.right_shift(rnp.array([16, -16]), 2)
        Array([ 4, -4], dtype=int32)
        >>> rnp.right_shift(rnp.array([240], dtype=rnp.uint8), 4)
        Array([15], dtype=uint8)
    """
    x1, x2 = promote_args_numeric("right_shift", x1, x2)
    # uint4 shifts arithmetically in JAX 0.10.2 (ml_dtypes' uint4 is no NumPy unsignedinteger)
    if dtypes.is_unsigned_int(_dtype_of(x1)) and _dtype_of(x1) != dtypes.uint4:
        return lax.shift_right_logical(x1, x2)
    return lax.shift_right_arithmetic(x1, x2)


def _logical(lax_fn: Any, name: str, operation: str, example: str, result: str) -> Any:
    """``lax_fn`` of the operands' truth values, named ``name``; documented as
    the logical ``operation`` with one example call ``example`` that prints
    ``result``."""

    def fn(x: ArrayLike, y: ArrayLike, /) -> Array:
        x, y = promote_args(name, x, y)
        return lax_fn(to_bool(x), to_bool(y))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"""The logical {operation} of ``x != 0`` and ``y != 0``, elementwise.

    The operands (any dtypes) are promoted with JAX's rules and broadcast
    together. ``rnp.{name}`` is a :class:`ufunc` object whose ``reduce`` folds
    an array's truth values with it.

    Args:
        x: The first operand, an array or a scalar.
        y: The second operand, broadcast against ``x``.

    Returns:
        A bool array of the broadcast shape.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> {example}
        {result}
    """
    return fn


logical_and = _logical(
    lax.bitwise_and,
    "logical_and",
    "and",
    "rnp.logical_and(rnp.array([0, 1, 2]), rnp.array([1, 1, 0]))",
    "Array([False,  True, False], dtype=bool)",
)
logical_or = _logical(
    lax.bitwise_or,
    "logical_or",
    "or",
    "rnp.logical_or(rnp.array([0, 1, 0]), rnp.array([0, 0, 3]))",
    "Array([False,  True,  True], dtype=bool)",
)
logical_xor = _logical(
    lax.bitwise_xor,
    "logical_xor",
    "exclusive or",
    "rnp.logical_xor(rnp.array([0, 1, 2]), rnp.array([1, 1, 0]))",
    "Array([ True, False,  True], dtype=bool)",
)


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
    """``arr`` with its values limited to ``[min, max]``, elementwise.

    Computed as ``minimum(max, maximum(min, arr))``, so where ``min > max``
    the result is ``max``; a ``None`` bound is not applied. Complex values
    have no order: a ``ValueError``, as in JAX.

    Args:
        arr: The input array, or a scalar.
        min: The lower bound, broadcast against ``arr``, or None.
        max: The upper bound, broadcast against ``arr``, or None.

    Returns:
        An array of the broadcast shape of ``arr`` and the bounds, in their
        promoted dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.clip(rnp.array([-2, 0, 5, 9]), 0, 5)
        Array([0, 0, 5, 5], dtype=int32)
        >>> rnp.clip(rnp.array([-2.5, 7.0]), max=3)
        Array([-2.5,  3. ], dtype=float32)
    """
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
