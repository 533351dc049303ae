"""Polynomials of ``jax.numpy`` (coefficients highest power first):
``polyval`` (Horner), ``polyadd``/``polysub``/``polymul``/``polydiv``,
``polyder``/``polyint``, ``polyfit`` (least squares on the Vandermonde
matrix), ``poly`` (the characteristic polynomial) and ``roots`` (Aberth's
iteration; ``strip_zeros=True`` needs a concrete input, as in JAX).
"""

from __future__ import annotations

import builtins
import math
import operator
from typing import Any

import numpy as np

from refimpl import dtypes, lax
from refimpl.numpy import linalg
from refimpl.numpy._construct import vander
from refimpl.numpy._creation import arange, asarray, broadcast_to, eye, ones, zeros
from refimpl.numpy._linalg import matmul
from refimpl.numpy._pad import pad
from refimpl.numpy._promote import (
    aval_of,
    checked_array,
    promote_dtypes,
    promote_dtypes_inexact,
)
from refimpl.numpy._promote import require_concrete as _concrete
from refimpl.numpy._reductions import max as max_
from refimpl.numpy._scalars import finfo
from refimpl.numpy._shape import concatenate, reshape, stack
from refimpl.numpy._stacking import convolve, roll, trace
from refimpl.numpy._ufuncs import abs as abs_
from refimpl.numpy._ufuncs import where

Array = Any
ArrayLike = Any


def _aval(x: Any, name: str = "rnp", position: Any = 0) -> Any:
    return aval_of(x, name, position)


# --- polynomials --------------------------------------------------------------------------


def _poly_1d(name: str, p: ArrayLike, position: Any = 0) -> Array:
    p = checked_array(name, p, position)
    if _aval(p).ndim != 1:
        raise ValueError(
            f"{name}: the coefficients must be a 1-d array, got shape {_aval(p).shape}"
        )
    return p


def polydiv(u: ArrayLike, v: ArrayLike, *, trim_leading_zeros: bool = False) -> tuple[Array, Array]:
    """The quotient and remainder of the polynomial division ``u / v``.

    Quotient and remainder of ``u / v`` (coefficients highest power first)
    by long division. The remainder keeps ``u``'s length (its leading entries
    are the cancelled ones, zero up to rounding) unless ``trim_leading_zeros``
    (eager only) drops the leading entries below ``sqrt(eps)``, as JAX
    (NumPy trims the remainder always). The coefficients compute in their
    inexact dtype.

    Args:
        u: The dividend's coefficients, 1-d.
        v: The divisor's coefficients, 1-d and non-empty.
        trim_leading_zeros: Whether to trim the remainder (keyword-only;
            needs concrete values).

    Returns:
        A pair ``(quotient, remainder)`` of 1-d inexact arrays.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.polydiv(rnp.array([1.0, 0.0, 1.0]), rnp.array([1.0, 1.0]))
        (Array([ 1., -1.], dtype=float32), Array([0., 0., 2.], dtype=float32))
    """
    u = _poly_1d("polydiv", u, 0)
    v = _poly_1d("polydiv", v, 1)
    u, v = promote_dtypes_inexact("polydiv", u, v)
    m, n = _aval(u).shape[0] - 1, _aval(v).shape[0] - 1
    if n < 0:
        raise ValueError("polydiv: the divisor v must have at least one coefficient")

    inverse_lead = 1.0 / v[0]
    # Long division on the coefficients one by one (stacked at the end, so no
    # scatter of a traced value into a constant array is needed).
    rest = [u[i] for i in builtins.range(m + 1)]
    divisor = [v[j] for j in builtins.range(n + 1)]
    digits = []
    for k in builtins.range(m - n + 1):
        d = inverse_lead * rest[k]
        digits.append(d)
        for j in builtins.range(n + 1):
            rest[k + j] = rest[k + j] - d * divisor[j]
    quotient = stack(digits) if digits else zeros((1,), _aval(u).dtype)
    u = stack(rest) if rest else u
    if trim_leading_zeros:
        values = _concrete("polydiv", "u (with trim_leading_zeros=True)", u)
        tol = math.sqrt(float(finfo(_aval(u).dtype).eps))
        small = np.abs(values) < tol
        start = int(np.argmin(small)) if not small.all() else values.shape[0]
        u = u[start:]
    return quotient, u


def _charpoly(a: Array) -> Array:
    """``det(x I - a)``'s coefficients, highest power first, by the
    Faddeev-LeVerrier recurrence (matrix products and traces only):
    ``M_k = a M_(k-1) + c_(n-k+1) I``, ``c_(n-k) = -trace(a M_k) / k``."""

    n = _aval(a).shape[0]
    identity = eye(n, dtype=_aval(a).dtype)
    coefficients = [ones((), _aval(a).dtype)]
    m = zeros((n, n), _aval(a).dtype)
    for k in builtins.range(1, n + 1):
        m = matmul(a, m) + coefficients[-1] * identity
        coefficients.append(-trace(matmul(a, m)) / k)

    return stack(coefficients)


def poly(seq_of_zeros: ArrayLike) -> Array:
    """The coefficients of the monic polynomial with the given roots.

    The monic polynomial with the given roots (highest power first):
    ``prod_k (x - z_k)``. A square 2-d input gives its characteristic
    polynomial ``det(x I - A)``, complex as in JAX (computed by the
    Faddeev-LeVerrier recurrence, not through eigenvalues; NumPy's is real
    for a real matrix). A scalar counts as one root; no roots give ``1``.

    Args:
        seq_of_zeros: The roots (a scalar or a 1-d array), or a square
            matrix.

    Returns:
        A 1-d inexact array of ``len(roots) + 1`` coefficients (complex for a
        matrix).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.poly(rnp.array([1.0, 2.0]))
        Array([ 1., -3.,  2.], dtype=float32)
    """

    z = checked_array("poly", seq_of_zeros)
    (z,) = promote_dtypes_inexact("poly", z)
    if _aval(z).ndim == 0:
        z = reshape(z, (1,))
    shape = _aval(z).shape
    if len(shape) == 2 and shape[0] == shape[1] and shape[0] != 0:
        complex_dtype = _to_complex(_aval(z).dtype)
        return lax.convert_element_type(_charpoly(z), complex_dtype)
    if len(shape) != 1:
        raise ValueError(
            f"poly: input must be 1-d or a non-empty square 2-d array, got shape {shape}"
        )
    dtype = _aval(z).dtype
    result = ones((1,), dtype)
    for k in builtins.range(shape[0]):
        factor = concatenate([ones((1,), dtype), reshape(-z[k], (1,))])
        result = convolve(result, factor, mode="full")
    return result if shape[0] else reshape(result, ())


def _to_complex(dtype: np.dtype) -> np.dtype:
    if dtypes.is_complex(dtype):
        return np.dtype(dtype)
    return np.dtype(np.complex128 if np.dtype(dtype) == np.float64 else np.complex64)


def _aberth(q: Array, count: Any) -> Array:
    """Roots of the polynomial ``q[0] z^(m-1) + ... + q[m-1]`` formed by the
    first ``m = count`` coefficients of ``q`` (``q[0] != 0``; ``count`` may be
    traced), in the first ``m - 1`` of ``len(q) - 1`` slots; the other slots
    hold NaN. The Aberth-Ehrlich iteration: every estimate ``z_k`` moves by
    ``w_k = r_k / (1 - r_k sum_(j != k) 1 / (z_k - z_j))`` with
    ``r_k = q(z_k) / q'(z_k)``, starting on a circle of the Cauchy bound's
    radius, until every step is below ``4 eps |z_k|`` (or 500 rounds)."""

    dtype = _aval(q).dtype
    real = np.dtype(np.float64 if dtype == np.complex128 else np.float32)
    size = _aval(q).shape[0]
    n = size - 1
    used = arange(size) < count
    monic = where(used, q / q[0], 0)
    active = arange(n) < count - 1
    radius = 1.0 + max_(abs_(monic[1:]))
    angles = (2 * math.pi / max(n, 1)) * np.arange(n) + 0.4
    circle = asarray((np.cos(angles) + 1j * np.sin(angles)).astype(dtype))
    z0 = lax.convert_element_type(radius, dtype) * circle
    eps = float(finfo(real).eps)
    pairs = asarray(~np.eye(n, dtype=bool)) & active[None, :]

    def horner(z: Any) -> tuple[Any, Any]:
        # value and derivative of the first `count` coefficients at z
        value = zeros((n,), dtype)
        slope = zeros((n,), dtype)
        for i in builtins.range(size):
            take = used[i]
            slope = where(take, slope * z + value, slope)
            value = where(take, value * z + monic[i], value)
        return value, slope

    def step(state):
        z, _, rounds = state
        value, slope = horner(z)
        ratio = where(value == 0, 0, value / slope)
        gaps = z[:, None] - z[None, :]
        pull = where(pairs, 1 / where(pairs, gaps, 1), 0).sum(axis=1)
        w = where(ratio == 0, 0, ratio / (1 - ratio * pull))
        w = where((w == w) & active, w, 0)  # a NaN step (0/0 at a clustered pair) waits
        moving = abs_(w) > 4 * eps * abs_(z)
        return z - w, moving.any(), rounds + 1

    def going(state):
        return lax.bitwise_and(state[1], state[2] < 500)

    z, _, _ = lax.while_loop(going, step, (z0, asarray(True), asarray(np.int32(0))))
    return where(active, z, complex(np.nan, np.nan))


def roots(p: ArrayLike, *, strip_zeros: bool = True) -> Array:
    """The roots of the polynomial ``p`` (highest power first), always complex.

    JAX takes the eigenvalues of the companion matrix (LAPACK ``geev``, CPU
    only); refimpl runs the Aberth-Ehrlich iteration (see ``_aberth``), so
    the roots agree with JAX's to rounding but may come in another order.
    ``strip_zeros=True`` drops leading zero coefficients (needs a concrete
    ``p``); with ``False`` they stay and their would-be roots are NaN, at the end.

    Args:
        p: The coefficients, 1-d (a scalar has no roots).
        strip_zeros: Whether to drop leading zero coefficients first
            (keyword-only).

    Returns:
        A 1-d complex array (complex64, or complex128 for float64 input) of
        ``len(p) - 1`` roots (fewer with ``strip_zeros``).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.roots(rnp.array([1.0, 0.0, 1.0]))
        Array([0.+1.j, 0.-1.j], dtype=complex64)
    """

    p = checked_array("roots", p)
    (p,) = promote_dtypes_inexact("roots", p)
    if _aval(p).ndim == 0:
        p = reshape(p, (1,))
    if _aval(p).ndim != 1:
        raise ValueError(f"roots: p must be 1-d, got shape {_aval(p).shape}")
    complex_dtype = _to_complex(_aval(p).dtype)
    size = _aval(p).shape[0]
    if size < 2:
        return zeros((0,), complex_dtype)
    p = lax.convert_element_type(p, complex_dtype)
    if strip_zeros:
        values = _concrete("roots", "p (with strip_zeros=True; pass strip_zeros=False)", p)
        nonzero = np.flatnonzero(values != 0)
        lead = int(nonzero[0]) if nonzero.size else size
        p = p[lead:]
        if _aval(p).shape[0] < 2:
            return zeros((0,), complex_dtype)
        return _aberth(p, _aval(p).shape[0])
    is_zero = p == 0
    lead = where(is_zero.all(), size, lax.argmin(is_zero, 0, np.dtype(np.int32)))
    # The leading zeros rolled to the end and left out: the roots of the
    # nonzero part, then one NaN per leading zero.
    return _aberth(where(lead == size, 1, roll(p, -lead)), size - lead)


def polyval(p: ArrayLike, x: ArrayLike, *, unroll: int = 16) -> Array:
    """The polynomial ``p`` evaluated at ``x``: ``p[0] x^(n-1) + ... + p[n-1]``.

    By Horner's rule, in the dtype ``p`` and ``x`` promote to.

    Args:
        p: The coefficients, 1-d (highest power first).
        x: The points to evaluate at.
        unroll: Accepted and ignored (keyword-only; JAX's loop unrolling).

    Returns:
        An array of ``x``'s shape, in the promoted dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.polyval(rnp.array([1, 2, 3]), 2)
        Array(11, dtype=int32)
        >>> rnp.polyval(rnp.array([1, 2, 3]), rnp.array([0, 1, 2]))
        Array([ 3,  6, 11], dtype=int32)
    """
    p = checked_array("polyval", p)
    x = checked_array("polyval", x, 1)
    p, x = promote_dtypes("polyval", p, x)
    # Horner from a strong zero of the joined dtype, as JAX's (bool stays bool)
    result = zeros(_aval(x).shape, _aval(x).dtype)
    for i in range(_aval(p).shape[0]):
        result = result * x + p[i]
    return result


def _poly_pad(a: Any, b: Any) -> tuple[Any, Any]:
    na, nb = _aval(a).shape[0], _aval(b).shape[0]
    return pad(a, (max(0, nb - na), 0)), pad(b, (max(0, na - nb), 0))


def polyadd(a1: ArrayLike, a2: ArrayLike) -> Array:
    """The sum of two polynomials (coefficients highest power first).

    The shorter one is padded with leading zeros. One empty and the other not
    is a ValueError, as JAX 0.10.2.

    Args:
        a1: The first polynomial's coefficients, 1-d.
        a2: The second polynomial's coefficients, 1-d.

    Returns:
        A 1-d array of the longer length, in the promoted dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.polyadd(rnp.array([1, 2]), rnp.array([1, 0, 3]))
        Array([1, 1, 5], dtype=int32)
    """
    a1, a2 = _poly_pad(*_not_one_empty("polyadd", a1, a2))
    return a1 + a2


def polysub(a1: ArrayLike, a2: ArrayLike) -> Array:
    """The difference of two polynomials, ``a1 - a2`` (coefficients highest power first).

    The shorter one is padded with leading zeros. One empty and the other not
    is a ValueError, as JAX 0.10.2.

    Args:
        a1: The first polynomial's coefficients, 1-d.
        a2: The second polynomial's coefficients, 1-d.

    Returns:
        A 1-d array of the longer length, in the promoted dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.polysub(rnp.array([1, 2]), rnp.array([1, 0, 3]))
        Array([-1,  1, -1], dtype=int32)
    """
    a1, a2 = _poly_pad(*_not_one_empty("polysub", a1, a2))
    return a1 - a2


def _not_one_empty(name: str, a1: ArrayLike, a2: ArrayLike) -> tuple[Array, Array]:
    """Both checked; one empty and the other not is a ValueError, as JAX
    0.10.2 (it adds the shorter into ``longer.at[-0:]``, the whole array)."""
    a1, a2 = checked_array(name, a1), checked_array(name, a2, 1)
    n1, n2 = _aval(a1).shape[0], _aval(a2).shape[0]
    if min(n1, n2) == 0 < max(n1, n2):
        raise ValueError(
            f"Incompatible types for broadcasting: input type=[{min(n1, n2)}] and requested "
            f"type=[{max(n1, n2)}]"
        )
    return a1, a2


def polymul(a1: ArrayLike, a2: ArrayLike, *, trim_leading_zeros: bool = False) -> Array:
    """The product of two polynomials.

    The product of two polynomials (a full convolution). With
    ``trim_leading_zeros`` (eager only, as JAX) the leading zero coefficients
    of both are dropped first (unless both have one coefficient), an empty
    one counting as ``[0]``. The coefficients compute in their inexact dtype
    (integers give floats, unlike NumPy).

    Args:
        a1: The first polynomial's coefficients, 1-d.
        a2: The second polynomial's coefficients, 1-d.
        trim_leading_zeros: Whether to drop leading zeros first (keyword-only).

    Returns:
        A 1-d inexact array of ``len(a1) + len(a2) - 1`` coefficients.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.polymul(rnp.array([1.0, 2.0]), rnp.array([1.0, 3.0]))
        Array([1., 5., 6.], dtype=float32)
    """
    a1, a2 = checked_array("polymul", a1), checked_array("polymul", a2, 1)
    a1, a2 = promote_dtypes_inexact("polymul", a1, a2)
    if trim_leading_zeros and (_aval(a1).shape[0] > 1 or _aval(a2).shape[0] > 1):
        a1, a2 = _trim_leading_zeros(a1), _trim_leading_zeros(a2)
    # an empty polynomial counts as [0], as JAX 0.10.2 (also without trimming)
    if _aval(a1).shape[0] == 0:
        a1 = zeros((1,), _aval(a2).dtype)
    if _aval(a2).shape[0] == 0:
        a2 = zeros((1,), _aval(a1).dtype)
    return convolve(a1, a2, mode="full")


def _trim_leading_zeros(p: Array) -> Array:
    nonzero = np.flatnonzero(_concrete("polymul", "a coefficient array", p) != 0)
    return p[int(nonzero[0]) :] if nonzero.size else p[:0]


def polyder(p: ArrayLike, m: int = 1) -> Array:
    """The ``m``-th derivative of a polynomial (coefficients highest power first).

    In the inexact dtype (integer coefficients give floats, as jnp; NumPy's
    stay integers).

    Args:
        p: The coefficients, 1-d.
        m: The order of the derivative (a non-negative static int).

    Returns:
        A 1-d inexact array, ``m`` shorter (empty once the degree runs out).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.polyder(rnp.array([1.0, 2.0, 3.0, 4.0]))
        Array([3., 4., 3.], dtype=float32)
        >>> rnp.polyder(rnp.array([1.0, 2.0, 3.0, 4.0]), m=2)
        Array([6., 4.], dtype=float32)
    """
    p = checked_array("polyder", p)
    m = operator.index(m)
    if m < 0:
        raise ValueError("polyder: the order of the derivative m must be >= 0")
    (p,) = promote_dtypes_inexact("polyder", p)
    for _ in range(m):
        n = _aval(p).shape[0]
        if n <= 1:
            return p[:0]
        powers = asarray(np.arange(n - 1, 0, -1), dtype=_aval(p).dtype)
        p = p[:-1] * powers
    return p


def polyint(p: ArrayLike, m: int = 1, k: ArrayLike = None) -> Array:
    """The ``m``-th antiderivative of a polynomial.

    The ``m``-th antiderivative (integration constants ``k``, default 0).
    As JAX 0.10.2, ``p`` and ``k`` (an array or a scalar, not a list: a
    TypeError) promote together, so a weak ``k`` with an integer ``p`` gives
    weak floats (``m=0`` returns that promoted ``p``); ``k`` has one or ``m``
    constants (a ValueError otherwise).

    Args:
        p: The coefficients, 1-d (highest power first).
        m: The order of the antiderivative (a non-negative static int).
        k: The integration constants (a scalar or 1 or ``m`` of them), or
            None for zeros.

    Returns:
        A 1-d inexact array, ``m`` longer.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.polyint(rnp.array([3, 2, 1]))
        Array([1., 1., 1., 0.], dtype=float32)
        >>> rnp.polyint(rnp.array([6.0, 2.0]), k=5)
        Array([3., 2., 5.], dtype=float32)
    """
    p = checked_array("polyint", p)
    k_arr = checked_array("polyint", 0 if k is None else k, 1)
    p, k_arr = promote_dtypes_inexact("polyint", p, k_arr)
    m = operator.index(m)
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    k_shape = aval_of(k_arr, "polyint", 1).shape
    if len(k_shape) > 1 or (k_shape and k_shape[0] not in (1, m)):
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or m.")
    constants = broadcast_to(reshape(k_arr, (-1,)), (m,))
    for i in range(m):
        n = _aval(p).shape[0]
        divisors = asarray(np.arange(n, 0, -1), dtype=_aval(p).dtype)
        tail = reshape(constants[i], (1,))
        p = concatenate([p / divisors, tail])
    return p


def polyfit(
    x: ArrayLike,
    y: ArrayLike,
    deg: int,
    rcond: float | None = None,
    full: bool = False,
    w: ArrayLike = None,
    cov: bool | str = False,
) -> Any:
    """Least-squares polynomial coefficients (highest power first).

    ``full=True`` adds lstsq's residuals, rank and singular values of the
    scaled Vandermonde matrix and ``rcond``; ``cov`` (True or ``"unscaled"``)
    adds the coefficients' covariance, as ``jnp.polyfit``.

    Args:
        x: The sample points, 1-d and non-empty.
        y: The sample values, 1-d (or 2-d: one fit per column), as long as
            ``x``.
        deg: The degree of the polynomial (a non-negative static int).
        rcond: The relative cutoff for small singular values, or None for
            ``len(x) * eps``.
        full: Whether to also return the diagnostics.
        w: Weights of the sample points (1-d, as long as ``x``), or None.
        cov: Whether to also return the covariance (True, or ``"unscaled"``
            for the covariance not scaled by the residuals).

    Returns:
        The ``deg + 1`` coefficients (one column per fit for 2-d ``y``), or
        the tuples described above.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.polyfit(rnp.array([-1.0, 0.0, 1.0]), rnp.array([-1.0, 1.0, 3.0]), 1)
        Array([2., 1.], dtype=float32)
    """
    x = checked_array("polyfit", x)
    y = checked_array("polyfit", y, 1)
    deg = operator.index(deg)
    if deg < 0:
        raise ValueError("polyfit: expected deg >= 0")
    x_aval, y_aval = _aval(x, "polyfit", 0), _aval(y, "polyfit", 1)
    if x_aval.ndim != 1:
        raise TypeError("polyfit: expected a 1-d vector for x")
    if x_aval.shape[0] == 0:
        raise TypeError("polyfit: expected a non-empty vector for x")
    if y_aval.ndim not in (1, 2):
        raise TypeError("polyfit: expected a 1-d or 2-d array for y")
    if x_aval.shape[0] != y_aval.shape[0]:
        raise TypeError("polyfit: expected x and y to have the same length")
    x, y = promote_dtypes_inexact("polyfit", x, y)
    order = deg + 1
    length = x_aval.shape[0]
    lhs = vander(x, order)
    if w is not None:
        (w,) = promote_dtypes_inexact("polyfit", checked_array("polyfit", w, "w"))
        w_aval = _aval(w, "polyfit", "w")
        if w_aval.ndim != 1 or w_aval.shape[0] != length:
            raise TypeError("polyfit: expected a 1-d array of weights as long as y")
        lhs = lhs * w[:, None]
        y = y * (w if y_aval.ndim == 1 else w[:, None])
    if rcond is None:
        rcond = length * float(np.finfo(np.dtype(_aval(x).dtype)).eps)
    rcond = float(rcond)
    scale = linalg.norm(lhs, axis=0)
    scale = where(scale == 0, 1, scale)
    # scale broadcast explicitly (as JAX's), so a rank promotion mode of "raise" allows it
    lhs = lhs / scale[None, :]
    coefficients, residuals, rank, singular = linalg.lstsq(lhs, y, rcond)
    coefficients = coefficients / (scale if _aval(coefficients).ndim == 1 else scale[:, None])
    if full:
        return coefficients, residuals, rank, singular, asarray(rcond)
    if not cov:
        return coefficients
    base = linalg.inv(matmul(lhs.T, lhs)) / (scale[:, None] * scale[None, :])
    if cov == "unscaled":
        factor = asarray(np.ones((1,), np.float32)).astype(_aval(base).dtype)
    else:
        if length <= order:
            raise ValueError(
                "polyfit: the number of data points must exceed order to scale the covariance"
            )
        factor = reshape(residuals / (length - order), (-1,))
    if y_aval.ndim == 1:
        return coefficients, base * factor[None]
    return coefficients, base[:, :, None] * factor[None, None, :]


__all__ = [
    "poly",
    "polydiv",
    "roots",
    "polyfit",
    "polyint",
    "polyadd",
    "polyder",
    "polymul",
    "polysub",
    "polyval",
]
