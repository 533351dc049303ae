"""Window functions of ``jax.numpy``: ``hamming``, ``hanning``, ``blackman``,
``bartlett`` and ``kaiser`` (with the Bessel function ``i0`` it needs).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from refimpl import dtypes, lax
from refimpl.numpy._creation import arange, asarray, full_like, ones, zeros
from refimpl.numpy._promote import (
    aval_of,
    checked_array,
    promote_dtypes_inexact,
)
from refimpl.numpy._promote import require_concrete as _concrete
from refimpl.numpy._ufuncs import abs as abs_
from refimpl.numpy._ufuncs import cos, sqrt

Array = Any
ArrayLike = Any


def _aval(x: Any, name: str = "rnp", position: Any = 0) -> Any:
    return aval_of(x, name, position)


# --- window functions, Bessel ------------------------------------------------------------

# Cephes' Chebyshev coefficients for exp(-|x|) I0(x): on [0, 8] in (x / 2 - 2),
# beyond 8 in (32 / x - 2) times sqrt(x).
_I0E_SMALL = (
    -4.41534164647933937950e-18, 3.33079451882223809783e-17, -2.43127984654795469359e-16,
    1.71539128555513303061e-15, -1.16853328779934516808e-14, 7.67618549860493561688e-14,
    -4.85644678311192946090e-13, 2.95505266312963983461e-12, -1.72682629144155570723e-11,
    9.67580903537323691224e-11, -5.18979560163526290666e-10, 2.65982372468238665035e-9,
    -1.30002500998624804212e-8, 6.04699502254191894932e-8, -2.67079385394061173391e-7,
    1.11738753912010371815e-6, -4.41673835845875056359e-6, 1.64484480707288970893e-5,
    -5.75419501008210370398e-5, 1.88502885095841655729e-4, -5.76375574538582365885e-4,
    1.63947561694133579842e-3, -4.32430999505057594430e-3, 1.05464603945949983183e-2,
    -2.37374148058994688156e-2, 4.93052842396707084878e-2, -9.49010970480476444210e-2,
    1.71620901522208775349e-1, -3.04682672343198398683e-1, 6.76795274409476084995e-1,
)  # fmt: skip
_I0E_LARGE = (
    -7.23318048787475395456e-18, -4.83050448594418207126e-18, 4.46562142029675999901e-17,
    3.46122286769746109310e-17, -2.82762398051658348494e-16, -3.42548561967721913462e-16,
    1.77256013305652638360e-15, 3.81168066935262242075e-15, -9.55484669882830764870e-15,
    -4.15056934728722208663e-14, 1.54008621752140982691e-14, 3.85277838274214270114e-13,
    7.18012445138366623367e-13, -1.79417853150680611778e-12, -1.32158118404477131188e-11,
    -3.14991652796324136454e-11, 1.18891471078464383424e-11, 4.94060238822496958910e-10,
    3.39623202570838634515e-9, 2.26666899049817806459e-8, 2.04891858946906374183e-7,
    2.89137052083475648297e-6, 6.88975834691682398426e-5, 3.36911647825569408990e-3,
    8.04490411014108831608e-1,
)  # fmt: skip
# Single precision needs only the tail of each series (Cephes' float tables).
_I0E_SMALL_F32, _I0E_LARGE_F32 = _I0E_SMALL[12:], _I0E_LARGE[18:]


def _chebyshev(x: Any, coefficients: tuple[float, ...]) -> Any:
    """Clenshaw's recurrence for ``sum' c_k T_k(x / 2)`` (Cephes' ``chbevl``)."""
    dtype = _aval(x).dtype
    b0 = b1 = b2 = full_like(x, 0)
    for c in coefficients:
        b2, b1 = b1, b0
        b0 = lax.add(lax.sub(lax.mul(x, b1), b2), full_like(x, np.asarray(c, dtype)))
    return lax.mul(full_like(x, 0.5), lax.sub(b0, b2))


def _i0e(x: Any) -> Any:
    """``exp(-|x|) I0(x)`` for a float array (float16/bfloat16 computed in float32)."""
    dtype = _aval(x).dtype
    if dtype not in (np.float32, np.float64):
        return lax.convert_element_type(_i0e(lax.convert_element_type(x, np.float32)), dtype)
    small, large = (
        (_I0E_SMALL, _I0E_LARGE) if dtype == np.float64 else (_I0E_SMALL_F32, _I0E_LARGE_F32)
    )
    x = lax.abs(x)

    def c(v: float) -> Any:
        return full_like(x, v)

    is_near = lax.le(x, c(8.0))
    near = _chebyshev(lax.sub(lax.mul(c(0.5), x), c(2.0)), small)
    # The far series only sees x > 8, so that neither it nor its derivative
    # divides by zero where `near` is chosen (a NaN there would survive grad).
    far_x = lax.select(is_near, c(9.0), x)
    far = lax.div(_chebyshev(lax.sub(lax.div(c(32.0), far_x), c(2.0)), large), lax.sqrt(far_x))
    return lax.select(is_near, near, far)


def _i0(x: Any) -> Any:
    # |x| as x * sign(x): the same value, and the derivative 0 at x = 0
    # (I0'(0) = I1(0) = 0), where abs's one-sided +1 would leave the series'
    # rounding error instead (JAX zeroes it with a custom jvp).
    absolute = lax.mul(x, lax.sign(x))
    return lax.mul(lax.exp(absolute), _i0e(absolute))


def i0(x: ArrayLike) -> Array:
    """The modified Bessel function of the first kind of order 0, elementwise.

    The modified Bessel function of the first kind, order 0:
    ``exp(|x|) * i0e(|x|)`` with Cephes' Chebyshev series for ``i0e``; real
    floating inputs only (integers promote; complex is a ValueError);
    derivative zero at 0. Float32 results carry the series' rounding
    (``i0(0.0)`` is 1.0000001, as JAX's).

    Args:
        x: The input array, or a scalar.

    Returns:
        An array of ``x``'s shape, in its inexact dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.round(rnp.i0(rnp.array([0.0, 1.0, 2.0])), 4)
        Array([1.    , 1.2661, 2.2796], dtype=float32)
    """
    x = checked_array("i0", x)
    (x,) = promote_dtypes_inexact("i0", x)
    if dtypes.is_complex(_aval(x).dtype):
        raise ValueError(f"i0: unsupported input type {_aval(x).dtype} (real floats only)")
    return _i0(x)


def kaiser(M: int, beta: ArrayLike) -> Array:
    """The Kaiser window of ``M`` points with shape parameter ``beta``.

    The Kaiser window ``I0(beta sqrt(1 - (2n/(M-1) - 1)^2)) / I0(beta)``,
    ``n = 0..M-1``, in the default float dtype; ``M <= 1`` gives ``ones(M)``.

    Args:
        M: The number of points (concrete: it fixes the length).
        beta: The shape parameter (0 is a rectangular window).

    Returns:
        A 1-d float array of ``M`` points.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.round(rnp.kaiser(4, 5.0), 4)
        Array([0.0367, 0.7753, 0.7753, 0.0367], dtype=float32)
    """

    M = _window_length("kaiser", M)
    dtype = dtypes.canonicalize_dtype(np.float64)
    if M <= 1:
        return ones((max(M, 0),), dtype)
    n = lax.iota(dtype, M)
    half = 0.5 * (M - 1)
    return i0(beta * sqrt(1 - ((n - half) / half) ** 2)) / i0(beta)


# --- window functions ----------------------------------------------------------------------


def _window_length(name: str, M: Any) -> int:
    """``int(M)``, as JAX's ``core.concrete_or_error(int, M)``: a float or a
    0-d array is taken (``hanning(5.0)``, as NumPy); a traced ``M`` is a
    ConcretizationTypeError, since it fixes the window's length."""
    return int(_concrete(name, "M", M))


def _window(name: str, M: int, terms: list[tuple[float, float]]) -> Array:
    """``sum_k a_k cos(2 pi f_k n / (M - 1))`` for ``n`` in ``0..M-1``."""
    M = _window_length(name, M)
    if M <= 0:  # built by broadcasting, not as a host constant, like every other result
        return zeros((0,), dtypes.weak_default_dtype("f"))
    if M == 1:
        return lax.broadcast_in_dim(asarray(1.0, dtype=dtypes.weak_default_dtype("f")), (1,), ())
    n = arange(M, dtype=dtypes.weak_default_dtype("f"))
    out = None
    for coefficient, frequency in terms:
        term = (
            coefficient * cos(2 * math.pi * frequency * n / (M - 1))
            if frequency
            else coefficient + n * 0
        )
        out = term if out is None else out + term
    return out


def hamming(M: int) -> Array:
    """The Hamming window: ``0.54 - 0.46 cos(2 pi n / (M - 1))`` for ``n = 0..M-1``.

    ``M <= 0`` gives an empty array and ``M == 1`` ``[1.]``; the window is
    computed in the default float dtype.

    Args:
        M: The number of points (concrete: it fixes the length).

    Returns:
        A 1-d float array of ``M`` points, symmetric, 1 at the center.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.round(rnp.hamming(5), 4)
        Array([0.08, 0.54, 1.  , 0.54, 0.08], dtype=float32)
    """
    return _window("hamming", M, [(0.54, 0), (-0.46, 1)])


def hanning(M: int) -> Array:
    """The Hann window: ``0.5 - 0.5 cos(2 pi n / (M - 1))`` for ``n = 0..M-1``.

    ``M <= 0`` gives an empty array and ``M == 1`` ``[1.]``; the window is
    computed in the default float dtype.

    Args:
        M: The number of points (concrete: it fixes the length).

    Returns:
        A 1-d float array of ``M`` points, symmetric, 1 at the center.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.hanning(5)
        Array([0. , 0.5, 1. , 0.5, 0. ], dtype=float32)
    """
    return _window("hanning", M, [(0.5, 0), (-0.5, 1)])


def blackman(M: int) -> Array:
    """The Blackman window: ``0.42 - 0.5 cos(2 pi n / (M - 1)) + 0.08 cos(4 pi n / (M - 1))``.

    ``M <= 0`` gives an empty array and ``M == 1`` ``[1.]``; the window is
    computed in the default float dtype.

    Args:
        M: The number of points (concrete: it fixes the length).

    Returns:
        A 1-d float array of ``M`` points, symmetric, 1 at the center.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.round(rnp.blackman(5), 4)
        Array([-0.  ,  0.34,  1.  ,  0.34, -0.  ], dtype=float32)
    """
    return _window("blackman", M, [(0.42, 0), (-0.5, 1), (0.08, 2)])


def bartlett(M: int) -> Array:
    """The Bartlett (triangular) window: ``1 - |2 n / (M - 1) - 1|`` for ``n = 0..M-1``.

    ``M <= 0`` gives an empty array and ``M == 1`` ``[1.]``; the window is
    computed in the default float dtype.

    Args:
        M: The number of points (concrete: it fixes the length).

    Returns:
        A 1-d float array of ``M`` points, symmetric, 1 at the center.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.bartlett(5)
        Array([0. , 0.5, 1. , 0.5, 0. ], dtype=float32)
    """

    M = _window_length("bartlett", M)
    if M <= 1:
        return _window("bartlett", M, [])
    n = arange(M, dtype=dtypes.weak_default_dtype("f"))
    return 1 - abs_(2 * n / (M - 1) - 1)


__all__ = [
    "i0",
    "kaiser",
    "bartlett",
    "blackman",
    "hamming",
    "hanning",
]
