"""The rest of ``jax.numpy``'s functions: ``mask_indices``, ``histogram2d``/
``histogramdd``, ``polydiv``, ``poly``, ``roots``, ``kaiser``/``i0``,
``spacing``, ``bitwise_count``, ``packbits``/``unpackbits``, ``einsum_path``,
``vectorize`` (with gufunc ``signature``), ``gradient`` (array spacings,
``edge_order=2``), ``trim_zeros``, and thin re-exports of NumPy's printing,
I/O and abstract-type names (eager, through NumPy).

Everything numeric is written with ``refimpl.lax``/``refimpl.numpy``
functions, so it runs eagerly, under every transformation and on both
backends. Two need a concrete input, as in JAX: ``trim_zeros`` (its result's
length is the data's) and ``roots(..., strip_zeros=True)`` (the number of
leading zeros). docs/numpy.md records the choices.
"""

from __future__ import annotations

import builtins
import math
import operator
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from refimpl import dtypes, lax, tracing
from refimpl.numpy._creation import arange, asarray, full_like, ones, zeros
from refimpl.numpy._promote import (
    aval_of,
    checked_array,
    is_operand,
    is_traced,
    promote_dtypes_inexact,
    promote_dtypes_numeric,
)
from refimpl.numpy._shape import concatenate, moveaxis, normalize_axis, reshape

Array = Any
ArrayLike = Any


def _aval(x: Any, name: str = "rnp", position: Any = 0) -> Any:
    return aval_of(x, name, position)


def _concrete(name: str, what: str, value: Any) -> np.ndarray:
    """``value`` as a NumPy array, or ``ConcretizationTypeError`` under a trace."""
    if is_traced(value):
        raise tracing.ConcretizationTypeError(
            f"{name}: {what} must be concrete (its value decides the result's shape); "
            "it is traced here (jit, vmap, grad...)"
        )
    return np.asarray(value)


# --- index helpers ------------------------------------------------------------------------


def mask_indices(
    n: int, mask_func: Callable[[Any, int], Any], k: int = 0, *, size: int | None = None
) -> tuple[Array, Array]:
    """The ``(rows, cols)`` where ``mask_func(ones((n, n)), k)`` is nonzero
    (row-major order); ``size``/padding as :func:`nonzero` (needed under a trace)."""
    from refimpl.numpy._search import nonzero

    n = operator.index(n)
    mask = mask_func(ones((n, n)), k)
    if _aval(mask, "mask_indices").ndim != 2:
        raise ValueError("mask_indices: mask_func must return a 2-d array")
    rows, cols = nonzero(mask, size=size)
    return rows, cols


# --- histograms ---------------------------------------------------------------------------


def histogramdd(
    sample: ArrayLike,
    bins: Any = 10,
    range: Any = None,  # noqa: A002  (NumPy's name)
    weights: ArrayLike = None,
    density: bool | None = None,
) -> tuple[Array, list[Array]]:
    """The ``D``-dimensional histogram of ``N`` points ``sample[N, D]``.

    Per dimension, ``bins`` (an int or the edges, or one of those per
    dimension) and ``range`` (a ``(lo, hi)`` pair or ``None``) give the edges
    as :func:`histogram_bin_edges`; bins are half-open ``[e_i, e_i+1)`` but
    the last is closed; points outside every bin are not counted. ``weights``
    (one per point) sum instead of counting; ``density`` divides by the total
    and by each bin's volume. Returns ``(hist, [edges per dimension])``.
    """
    from refimpl.numpy._extras import bincount
    from refimpl.numpy._search import ravel_multi_index, searchsorted
    from refimpl.numpy._stacking import diff, histogram_bin_edges
    from refimpl.numpy._ufuncs import where

    sample = checked_array("histogramdd", sample, 0)
    if weights is None:
        (sample,) = promote_dtypes_inexact("histogramdd", sample)
    else:
        weights = checked_array("histogramdd", weights, "weights")
        if _aval(weights).shape != _aval(sample).shape[:1]:
            raise ValueError(
                f"histogramdd: weights must have one weight per sample: shape "
                f"{_aval(weights).shape} for sample shape {_aval(sample).shape}"
            )
        sample, weights = promote_dtypes_inexact("histogramdd", sample, weights)
    if _aval(sample).ndim != 2:
        raise ValueError(
            f"histogramdd: sample must be 2-d (N points by D dims), got shape {_aval(sample).shape}"
        )
    n_dims = _aval(sample).shape[1]
    if range is not None and (
        len(range) != n_dims or any(r is not None and np.shape(r)[0] != 2 for r in range)
    ):
        raise ValueError(
            f"histogramdd: range must be {n_dims} pairs or Nones (one per dimension), got {range!r}"
        )
    if _items(bins) is not None:
        per_dim = _items(bins)
        if len(per_dim) != n_dims:
            raise ValueError(
                f"histogramdd: bins must give one entry per dimension ({n_dims}), "
                f"got {len(per_dim)}"
            )
    else:  # one int or one edges array for every dimension
        per_dim = [bins] * n_dims
    indices, edges = [], []
    for d in builtins.range(n_dims):
        column = sample[:, d]
        edge = histogram_bin_edges(column, per_dim[d], None if range is None else range[d], weights)
        index = searchsorted(edge, column, side="right")
        # The last bin is closed: a point on the last edge belongs to it.
        index = where(column == edge[-1], index - 1, index)
        indices.append(index)
        edges.append(edge)
    # Bin i of a dimension is index i + 1; 0 and len(edges) are the outside.
    counts = tuple(_aval(e).shape[0] + 1 for e in edges)
    flat = ravel_multi_index(tuple(indices), counts, mode="clip")
    hist = bincount(flat, weights, length=math.prod(counts))
    hist = reshape(hist, counts)[(slice(1, -1),) * n_dims]
    if density:
        hist = lax.convert_element_type(hist, _aval(sample).dtype)
        from refimpl.numpy._reductions import sum as sum_

        hist = hist / sum_(hist)
        for d, e in enumerate(edges):
            shape = [1] * n_dims
            shape[d] = -1
            hist = hist / reshape(diff(e), tuple(shape))
    return hist, edges


def _items(bins: Any) -> list | None:
    """``bins`` as a list of per-dimension entries if it is a sequence (a list,
    tuple or array of rank >= 1, as JAX's ``list(bins)``), else ``None``."""
    if isinstance(bins, (list, tuple)):
        return list(bins)
    if is_operand(bins) and _aval(bins).ndim >= 1:
        return [bins[i] for i in builtins.range(_aval(bins).shape[0])]
    return None


def histogram2d(
    x: ArrayLike,
    y: ArrayLike,
    bins: Any = 10,
    range: Any = None,  # noqa: A002  (NumPy's name)
    weights: ArrayLike = None,
    density: bool | None = None,
) -> tuple[Array, Array, Array]:
    """:func:`histogramdd` of the points ``(x[i], y[i])``: ``(hist, x_edges,
    y_edges)``. ``bins`` is an int, one edges array for both, or a pair."""
    from refimpl.numpy._shape import stack

    x = checked_array("histogram2d", x, 0)
    y = checked_array("histogram2d", y, 1)
    items = _items(bins)
    if items is None or len(items) != 2:
        bins = [bins, bins]  # an int or one edges array, for both
    if _aval(x).shape != _aval(y).shape or _aval(x).ndim != 1:
        raise ValueError(
            f"histogram2d: x and y must be 1-d of one length, got shapes "
            f"{_aval(x).shape} and {_aval(y).shape}"
        )
    from refimpl.numpy._promote import promote_dtypes

    x, y = promote_dtypes("histogram2d", x, y)
    hist, edges = histogramdd(stack([x, y], axis=1), bins, range, weights, density)
    return hist, edges[0], edges[1]


# --- polynomials --------------------------------------------------------------------------


def _poly_1d(name: str, p: ArrayLike, position: Any = 0) -> Array:
    p = checked_array(name, p, position)
    if _aval(p).ndim != 1:
        raise ValueError(
            f"{name}: the coefficients must be a 1-d array, got shape {_aval(p).shape}"
        )
    return p


def polydiv(u: ArrayLike, v: ArrayLike, *, trim_leading_zeros: bool = False) -> tuple[Array, Array]:
    """Quotient and remainder of ``u / v`` (coefficients highest power first)
    by long division. The remainder keeps ``u``'s length (its leading entries
    are the cancelled ones, zero up to rounding) unless ``trim_leading_zeros``
    (eager only) drops the leading entries below ``sqrt(eps)``, as JAX."""
    u = _poly_1d("polydiv", u, 0)
    v = _poly_1d("polydiv", v, 1)
    u, v = promote_dtypes_inexact("polydiv", u, v)
    m, n = _aval(u).shape[0] - 1, _aval(v).shape[0] - 1
    if n < 0:
        raise ValueError("polydiv: the divisor v must have at least one coefficient")
    from refimpl.numpy._shape import stack

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
        from refimpl.numpy._scalars import finfo

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
    from refimpl.numpy._creation import eye
    from refimpl.numpy._linalg import matmul
    from refimpl.numpy._stacking import trace

    n = _aval(a).shape[0]
    identity = eye(n, dtype=_aval(a).dtype)
    coefficients = [ones((), _aval(a).dtype)]
    m = zeros((n, n), _aval(a).dtype)
    for k in builtins.range(1, n + 1):
        m = matmul(a, m) + coefficients[-1] * identity
        coefficients.append(-trace(matmul(a, m)) / k)
    from refimpl.numpy._shape import stack

    return stack(coefficients)


def poly(seq_of_zeros: ArrayLike) -> Array:
    """The monic polynomial with the given roots (highest power first):
    ``prod_k (x - z_k)``. A square 2-d input gives its characteristic
    polynomial ``det(x I - A)``, complex as in JAX (computed by the
    Faddeev-LeVerrier recurrence, not through eigenvalues). A scalar counts as
    one root; no roots give ``1``."""
    from refimpl.numpy._stacking import convolve

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
    from refimpl.numpy._reductions import max as max_
    from refimpl.numpy._scalars import finfo
    from refimpl.numpy._ufuncs import abs as abs_
    from refimpl.numpy._ufuncs import where

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
    """
    from refimpl.numpy._stacking import roll
    from refimpl.numpy._ufuncs import where

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
    """The modified Bessel function of the first kind, order 0:
    ``exp(|x|) * i0e(|x|)`` with Cephes' Chebyshev series for ``i0e``; real
    floating inputs only (integers promote); derivative zero at 0."""
    x = checked_array("i0", x)
    (x,) = promote_dtypes_inexact("i0", x)
    if dtypes.is_complex(_aval(x).dtype):
        raise ValueError(f"i0: unsupported input type {_aval(x).dtype} (real floats only)")
    return _i0(x)


def kaiser(M: int, beta: ArrayLike) -> Array:
    """The Kaiser window ``I0(beta sqrt(1 - (2n/(M-1) - 1)^2)) / I0(beta)``,
    ``n = 0..M-1``, in the default float dtype; ``M <= 1`` gives ``ones(M)``."""
    from refimpl.numpy._ufuncs import sqrt

    M = operator.index(_concrete("kaiser", "M", M).item() if not isinstance(M, int) else M)
    dtype = dtypes.canonicalize_dtype(np.float64)
    if M <= 1:
        return ones((max(M, 0),), dtype)
    n = lax.iota(dtype, M)
    half = 0.5 * (M - 1)
    return i0(beta * sqrt(1 - ((n - half) / half) ** 2)) / i0(beta)


# --- floating point and bits --------------------------------------------------------------


def spacing(x: ArrayLike, /) -> Array:
    """The distance from ``x`` to the next float away from zero (toward +inf
    for float16, as NumPy); ``+-`` the smallest subnormal where that distance
    rounds to zero. Real floating types only (integers promote)."""
    from refimpl.numpy._math import copysign
    from refimpl.numpy._scalars import finfo
    from refimpl.numpy._ufuncs import where

    x = checked_array("spacing", x)
    (x,) = promote_dtypes_inexact("spacing", x)
    dtype = _aval(x).dtype
    if dtypes.is_complex(dtype):
        raise ValueError("spacing: complex inputs are not supported")
    inf = full_like(x, np.inf)
    if dtype == np.float16:
        return lax.sub(lax.nextafter(x, inf), x)
    step = lax.sub(lax.nextafter(x, copysign(inf, x)), x)
    tiny = float(finfo(dtype).smallest_subnormal)
    return where(step == 0, copysign(full_like(x, tiny), x), step)


_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def bitwise_count(x: ArrayLike, /) -> Array:
    """The number of one bits in ``|x|`` (two's complement, so ``|int_min|``
    counts one bit), as uint8; booleans count as 0/1."""
    x = checked_array("bitwise_count", x)
    (x,) = promote_dtypes_numeric("bitwise_count", x)
    dtype = _aval(x).dtype
    if not dtypes.is_integer(dtype):
        raise TypeError(f"bitwise_count: integer or boolean input required, got {dtype}")
    if dtypes.is_signed_int(dtype):
        x = lax.abs(x)
    width = np.dtype(dtype).itemsize
    unsigned = np.dtype(_UNSIGNED[width])
    if unsigned != dtype:
        x = lax.bitcast_convert_type(x, unsigned)

    def c(pattern: int) -> Any:
        return full_like(x, np.asarray(pattern, unsigned))

    def shifted(value: Any, amount: int) -> Any:
        return lax.shift_right_logical(value, c(amount))

    # Sum bits in pairs, nibbles, then bytes; the byte counts are then added
    # by a multiply that accumulates them into the top byte.
    ones_ = int.from_bytes(b"\x01" * width, "little")
    x = lax.sub(x, lax.bitwise_and(shifted(x, 1), c(0x55 * ones_)))
    x = lax.add(
        lax.bitwise_and(x, c(0x33 * ones_)), lax.bitwise_and(shifted(x, 2), c(0x33 * ones_))
    )
    x = lax.bitwise_and(lax.add(x, shifted(x, 4)), c(0x0F * ones_))
    if width > 1:
        x = shifted(lax.mul(x, c(ones_)), 8 * (width - 1))
    return lax.convert_element_type(x, np.uint8)


def _bit_weights(bitorder: str, name: str) -> np.ndarray:
    if bitorder not in ("big", "little"):
        raise ValueError(f"{name}: bitorder must be 'big' or 'little', got {bitorder!r}")
    weights = np.arange(8, dtype=np.uint8)
    return weights[::-1].copy() if bitorder == "big" else weights


def packbits(a: ArrayLike, axis: int | None = None, bitorder: str = "big") -> Array:
    """Each run of 8 elements along ``axis`` (the flattened array for
    ``None``; zero-padded at the end) as one uint8, nonzero elements being
    one bits, the first element the highest bit (``bitorder="big"``) or the lowest."""
    a = checked_array("packbits", a)
    dtype = _aval(a).dtype
    if not (dtypes.is_integer(dtype) or dtypes.is_bool(dtype)):
        raise TypeError(f"packbits: integer or boolean input required, got {dtype}")
    shifts = _bit_weights(bitorder, "packbits")
    bits = lax.convert_element_type(lax.ne(a, full_like(a, 0)), np.uint8)
    if axis is None:
        bits, axis = reshape(bits, (-1,)), 0
    axis = normalize_axis("packbits", axis, _aval(bits).ndim)
    bits = moveaxis(bits, axis, -1)
    shape = _aval(bits).shape
    extra = -shape[-1] % 8
    if extra:
        bits = lax.pad(bits, np.uint8(0), [(0, 0, 0)] * (len(shape) - 1) + [(0, extra, 0)])
    groups = reshape(bits, (*shape[:-1], (shape[-1] + extra) // 8, 8))
    weighted = lax.shift_left(
        groups, lax.broadcast_in_dim(asarray(shifts), _aval(groups).shape, (len(shape),))
    )
    packed = lax.reduce_sum(weighted, (len(shape),))
    return moveaxis(packed, -1, axis)


def unpackbits(
    a: ArrayLike, axis: int | None = None, count: int | None = None, bitorder: str = "big"
) -> Array:
    """The inverse of :func:`packbits`: each uint8 becomes 8 elements (0/1,
    uint8) along ``axis``; ``count`` keeps the first ``count`` (or pads with zeros)."""
    a = checked_array("unpackbits", a)
    if _aval(a).dtype != np.uint8:
        raise TypeError(f"unpackbits: uint8 input required, got {_aval(a).dtype}")
    shifts = _bit_weights(bitorder, "unpackbits")
    if axis is None:
        a, axis = reshape(a, (-1,)), 0
    axis = normalize_axis("unpackbits", axis, _aval(a).ndim)
    a = moveaxis(a, axis, -1)
    shape = _aval(a).shape
    wide = lax.broadcast_in_dim(a, (*shape, 8), tuple(range(len(shape))))
    masks = lax.broadcast_in_dim(
        asarray(np.left_shift(np.uint8(1), shifts)), (*shape, 8), (len(shape),)
    )
    bits = lax.convert_element_type(
        lax.ne(lax.bitwise_and(wide, masks), full_like(wide, 0)), np.uint8
    )
    bits = reshape(bits, (*shape[:-1], shape[-1] * 8))
    if count is not None:
        count = operator.index(count)
        total = shape[-1] * 8
        if count > total:
            bits = lax.pad(
                bits, np.uint8(0), [(0, 0, 0)] * (len(shape) - 1) + [(0, count - total, 0)]
            )
        else:
            bits = bits[..., : max(count, 0) if count >= 0 else total + count]
    return moveaxis(bits, -1, axis)


# --- trim_zeros ---------------------------------------------------------------------------


def trim_zeros(filt: ArrayLike, trim: str = "fb", axis: Any = None) -> Array:
    """``filt`` without its leading (``"f"`` in ``trim``) and trailing (``"b"``)
    all-zero slices along each axis in ``axis`` (every axis for ``None``).
    Eager only: the result's shape depends on the values (as in JAX)."""
    filt = checked_array("trim_zeros", filt)
    values = _concrete("trim_zeros", "filt", filt)
    ndim = values.ndim
    if axis is None:
        axes = set(builtins.range(ndim))
    else:
        axes = {
            normalize_axis("trim_zeros", ax, ndim)
            for ax in (axis if isinstance(axis, (tuple, list)) else (axis,))
        }
    front, back = "f" in trim.lower(), "b" in trim.lower()
    if not axes or not (front or back):
        return filt
    index = []
    for ax in builtins.range(ndim):
        if ax not in axes:
            index.append(slice(None))
            continue
        others = tuple(d for d in builtins.range(ndim) if d != ax)
        used = np.any(values != 0, axis=others) if others else values != 0
        if not used.any():
            index.append(slice(0, 0))
            continue
        where_used = np.flatnonzero(used)
        index.append(
            slice(int(where_used[0]) if front else None, int(where_used[-1]) + 1 if back else None)
        )
    return filt[tuple(index)]


# --- gradient -----------------------------------------------------------------------------


def _along(x: Any, axis: int, start: int | None, stop: int | None) -> Any:
    index = [slice(None)] * _aval(x).ndim
    index[axis] = slice(start, stop)
    return x[tuple(index)]


def _gradient_axis(f: Any, h: Any, axis: int, edge_order: int) -> Any:
    """One axis of :func:`gradient` (``h`` a scalar step or the coordinates)."""
    n = _aval(f).shape[axis]

    def s(start: int | None, stop: int | None) -> Any:
        return _along(f, axis, start, stop)

    if _aval(h).ndim == 0:
        inner = (s(2, None) - s(None, -2)) * 0.5 / h
        if edge_order == 1:
            first = (s(1, 2) - s(0, 1)) / h
            last = (s(-1, None) - s(-2, -1)) / h
        else:
            first = (-1.5 * s(0, 1) + 2.0 * s(1, 2) - 0.5 * s(2, 3)) / h
            last = (0.5 * s(-3, -2) - 2.0 * s(-2, -1) + 1.5 * s(-1, None)) / h
        return concatenate([first, inner, last], axis=axis)
    if _aval(h).ndim != 1 or _aval(h).shape[0] != n:
        raise ValueError(
            f"gradient: a spacing array must be 1-d with the axis' length {n}, "
            f"got shape {_aval(h).shape}"
        )
    shape = [1] * _aval(f).ndim
    shape[axis] = n
    h = reshape(h, tuple(shape))

    def x(start: int | None, stop: int | None) -> Any:
        return _along(h, axis, start, stop)

    # Second-order differences on the uneven grid (NumPy's weights).
    dx1, dx2 = x(1, -1) - x(0, -2), x(2, None) - x(1, -1)
    inner = (
        -dx2 / (dx1 * (dx1 + dx2)) * s(0, -2)
        + (dx2 - dx1) / (dx1 * dx2) * s(1, -1)
        + dx1 / (dx2 * (dx1 + dx2)) * s(2, None)
    )
    if edge_order == 1:
        first = (s(1, 2) - s(0, 1)) / (x(1, 2) - x(0, 1))
        last = (s(-1, None) - s(-2, -1)) / (x(-1, None) - x(-2, -1))
    else:
        d1, d2 = x(1, 2) - x(0, 1), x(2, 3) - x(1, 2)
        first = (
            -(2.0 * d1 + d2) / (d1 * (d1 + d2)) * s(0, 1)
            + (d1 + d2) / (d1 * d2) * s(1, 2)
            - d1 / (d2 * (d1 + d2)) * s(2, 3)
        )
        d1, d2 = x(-2, -1) - x(-3, -2), x(-1, None) - x(-2, -1)
        last = (
            d2 / (d1 * (d1 + d2)) * s(-3, -2)
            - (d2 + d1) / (d1 * d2) * s(-2, -1)
            + (2.0 * d2 + d1) / (d2 * (d1 + d2)) * s(-1, None)
        )
    return concatenate([first, inner, last], axis=axis)


def gradient(
    f: ArrayLike, *varargs: ArrayLike, axis: Any = None, edge_order: int | None = None
) -> Any:
    """Second-order central differences inside and one-sided differences of
    order ``edge_order`` (1, the default, or 2 as NumPy; JAX takes only the
    default) at the ends, along each axis in ``axis`` (all by default).
    ``varargs``: none (unit spacing), one for every axis, or one per axis,
    each a scalar step or the 1-d coordinates along that axis. One array per
    axis (the array itself for a single axis). ``f`` and the spacings are
    promoted together to an inexact dtype."""
    f = checked_array("gradient", f)
    spacings = [checked_array("gradient", h, i + 1) for i, h in enumerate(varargs)]
    f, *spacings = promote_dtypes_inexact("gradient", f, *spacings)
    order = 1 if edge_order is None else edge_order
    if order not in (1, 2):
        raise ValueError(f"gradient: edge_order must be 1 or 2, got {edge_order!r}")
    ndim = _aval(f).ndim
    axes = (
        tuple(builtins.range(ndim))
        if axis is None
        else tuple(
            normalize_axis("gradient", a, ndim)
            for a in (axis if isinstance(axis, (tuple, list)) else (axis,))
        )
    )
    if not axes:
        return []
    if min(_aval(f).shape[a] for a in axes) < order + 1:
        raise ValueError(
            f"gradient: each differentiated axis needs at least {order + 1} elements "
            f"(edge_order={order}), got shape {_aval(f).shape}"
        )
    if not spacings:
        steps: list[Any] = [1.0] * len(axes)
    elif len(spacings) == 1:
        steps = spacings * len(axes)
    elif len(spacings) == len(axes):
        steps = spacings
    else:
        raise TypeError(
            f"gradient: {len(spacings)} spacings for {len(axes)} axes: give none, one, "
            "or one per axis"
        )
    out = [_gradient_axis(f, asarray(h), a, order) for a, h in zip(axes, steps, strict=True)]
    return out[0] if len(out) == 1 else out


# --- vectorize ----------------------------------------------------------------------------

_DIMENSION = r"\w+"
_CORE = rf"\((?:{_DIMENSION}(?:,{_DIMENSION})*)?\)"
_CORES = rf"{_CORE}(?:,{_CORE})*"
_SIGNATURE = re.compile(rf"^{_CORES}->{_CORES}$")


def _parse_signature(signature: str) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    """``"(m,n),(n)->(m)"`` as ``([("m", "n"), ("n",)], [("m",)])``."""
    compact = signature.replace(" ", "")
    if not _SIGNATURE.match(compact):
        raise ValueError(f"vectorize: not a valid gufunc signature: {signature!r}")
    inputs, outputs = compact.split("->")
    return (
        [tuple(re.findall(_DIMENSION, core)) for core in re.findall(_CORE, inputs)],
        [tuple(re.findall(_DIMENSION, core)) for core in re.findall(_CORE, outputs)],
    )


def _bind_sizes(
    sizes: dict[str, int], shape: tuple[int, ...], core: tuple[str, ...], what: str
) -> None:
    if len(shape) < len(core):
        raise ValueError(
            f"vectorize: {what} has {len(shape)} dims, fewer than its core dims {core}"
        )
    for name, size in zip(core, shape[len(shape) - len(core) :], strict=True):
        if sizes.setdefault(name, size) != size:
            raise ValueError(
                f"vectorize: inconsistent size for core dim {name!r}: {size} in {what}, "
                f"{sizes[name]} before"
            )


def vectorize(
    pyfunc: Callable[..., Any], *, excluded: Any = frozenset(), signature: str | None = None
) -> Callable[..., Any]:
    """``pyfunc`` mapped over the broadcast leading ("loop") dims of its array
    arguments by ``vmap``, one ``vmap`` per loop dim. Without ``signature``
    every dim is a loop dim (``pyfunc`` sees scalars); a gufunc ``signature``
    like ``"(m,n),(n)->(m)"`` names each argument's trailing core dims, which
    ``pyfunc`` receives whole (sizes checked for consistency, outputs
    checked against their core dims). ``excluded``: positions (ints) or
    keyword names passed through unmapped; ``None`` arguments pass through too."""
    if any(not isinstance(e, (int, str)) for e in excluded):
        raise TypeError(f"vectorize: excluded must hold ints and strs, got {excluded!r}")
    if any(isinstance(e, int) and e < 0 for e in excluded):
        raise ValueError(f"vectorize: excluded={excluded!r} contains negative numbers")
    parsed = None if signature is None else _parse_signature(signature)

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        from refimpl.transforms.batching import vmap

        fixed_kwargs = {k: v for k, v in kwargs.items() if k in excluded}
        mapped_kwargs = {k: v for k, v in kwargs.items() if k not in excluded}
        positions = [i for i, a in enumerate(args) if i not in excluded and a is not None]
        if parsed is None:
            in_cores: list[tuple[str, ...]] = [()] * len(positions)
        else:
            in_cores = parsed[0]
            dynamic = [i for i in builtins.range(len(args)) if i not in excluded]
            if len(dynamic) != len(in_cores):
                raise TypeError(
                    f"vectorize: the signature {signature!r} has {len(in_cores)} inputs, "
                    f"the call passes {len(dynamic)} (excluded={set(excluded)!r})"
                )
            none_cores = [c for i, c in zip(dynamic, in_cores, strict=True) if args[i] is None]
            if any(none_cores):
                raise ValueError("vectorize: None can only be passed for a scalar core ()")
            in_cores = [c for i, c in zip(dynamic, in_cores, strict=True) if args[i] is not None]
        arrays = [asarray(args[i]) for i in positions]
        sizes: dict[str, int] = {}
        loop_shapes = []
        for i, a, core in zip(positions, arrays, in_cores, strict=True):
            shape = _aval(a).shape
            _bind_sizes(sizes, shape, core, f"argument {i}")
            loop_shapes.append(shape[: len(shape) - len(core)])
        loop = tuple(int(d) for d in np.broadcast_shapes(*loop_shapes)) if loop_shapes else ()
        from refimpl.numpy._shape import broadcast_to

        arrays = [
            broadcast_to(a, loop + _aval(a).shape[len(ls) :])
            for a, ls in zip(arrays, loop_shapes, strict=True)
        ]

        def call(*values: Any) -> Any:
            full = list(args)
            for i, value in zip(positions, values, strict=True):
                full[i] = value
            out = pyfunc(*full, **fixed_kwargs, **mapped_kwargs)
            if parsed is not None:
                out_cores = parsed[1]
                outs = out if isinstance(out, tuple) else (out,)
                if len(out_cores) > 1 and not isinstance(out, tuple):
                    raise TypeError(
                        f"vectorize: {len(out_cores)} outputs in the signature, the "
                        "function returned one (not a tuple)"
                    )
                if len(outs) != len(out_cores):
                    raise TypeError(
                        f"vectorize: the signature has {len(out_cores)} outputs, the "
                        f"function returned {len(outs)}"
                    )
                known = dict(sizes)
                for k, (o, core) in enumerate(zip(outs, out_cores, strict=True)):
                    shape = _aval(asarray(o)).shape
                    if len(shape) != len(core):
                        raise ValueError(
                            f"vectorize: output {k} has shape {shape}, the signature's core "
                            f"dims are {core}"
                        )
                    _bind_sizes(known, shape, core, f"output {k}")
            return out

        fn = call
        for _ in loop:
            fn = vmap(fn)
        return fn(*arrays)

    wrapped.__name__ = getattr(pyfunc, "__name__", "vectorized")
    wrapped.__doc__ = pyfunc.__doc__
    wrapped.__wrapped__ = pyfunc
    return wrapped


# --- ufunc objects ---------------------------------------------------------------------


class ufunc:  # noqa: N801  (NumPy's and JAX's name)
    """A scalar function ``func`` of ``nin`` arrays to ``nout`` as a NumPy
    ufunc (``jnp.ufunc``): calling it maps ``func`` over the broadcast
    arguments (:func:`vectorize`); for binary single-output functions,
    ``reduce`` (a ``fori_loop`` folding along one axis), ``accumulate`` (a
    ``scan``), ``reduceat``, ``outer`` (two ``vmap`` s) and ``at`` (a ``scan``
    applying ``func`` at each index in turn, so repeated indices compound).
    ``identity`` starts empty reductions. The module's own functions
    (``rnp.add``...) are plain functions, not ufunc objects."""

    def __init__(
        self,
        func: Callable[..., Any],
        /,
        nin: int,
        nout: int,
        *,
        name: str | None = None,
        nargs: int | None = None,
        identity: Any = None,
    ) -> None:
        self._func = func
        self.nin, self.nout = operator.index(nin), operator.index(nout)
        self.nargs = operator.index(nargs or nin)
        self.identity = identity
        self.__name__ = name or getattr(func, "__name__", "ufunc")
        self.__doc__ = func.__doc__

    def __repr__(self) -> str:
        return f"<rnp.ufunc {self.__name__!r}>"

    def __call__(self, *args: ArrayLike, out: None = None, where: None = None) -> Any:
        if out is not None or where is not None:
            raise NotImplementedError(f"{self.__name__}: the out= and where= arguments")
        if len(args) != self.nin:
            raise TypeError(f"{self.__name__}: takes {self.nin} arguments, got {len(args)}")
        return vectorize(self._func)(*args)

    def _binary(self, method: str) -> None:
        if self.nin != 2 or self.nout != 1:
            raise ValueError(
                f"{self.__name__}.{method}: only for binary ufuncs with one output "
                f"(nin={self.nin}, nout={self.nout})"
            )

    def _result_dtype(self, *args: Any) -> np.dtype:
        from refimpl.transforms.jit import eval_shape

        probes = [zeros((), _aval(asarray(a)).dtype) for a in args]
        return np.dtype(eval_shape(self._func, *probes).dtype)

    def reduce(
        self,
        a: ArrayLike,
        axis: int | None = 0,
        dtype: Any = None,
        out: None = None,
        keepdims: bool = False,
        initial: ArrayLike = None,
        where: ArrayLike = None,
    ) -> Array:
        """``func`` folded along ``axis`` (the flattened array for ``None``),
        from ``initial`` (or ``identity``, else the first element); ``where``
        skips elements (then ``initial`` or ``identity`` is required)."""
        name = f"{self.__name__}.reduce"
        self._binary("reduce")
        if out is not None:
            raise NotImplementedError(f"{name}: the out argument")
        if isinstance(axis, tuple):
            raise NotImplementedError(f"{name}: a tuple of axes")
        a = checked_array(name, a)
        start = self.identity if initial is None else initial
        if where is not None:
            where = checked_array(name, where, "where")
            if _aval(where).dtype != np.bool_:
                raise ValueError(f"{name}: where must be boolean, got {_aval(where).dtype}")
            if start is None:
                raise ValueError(
                    f"{name}: {self.__name__!r} has no identity: a where mask needs initial"
                )
        dtype = self._result_dtype(a, a) if dtype is None else np.dtype(dtype)
        from refimpl.numpy._shape import broadcast_to

        if where is not None:
            where = broadcast_to(where, _aval(a).shape)
        if axis is None:
            out_shape = (1,) * _aval(a).ndim if keepdims else ()
            a = reshape(a, (-1,))
            where = None if where is None else reshape(where, (-1,))
        else:
            axis = normalize_axis(name, axis, _aval(a).ndim)
            shape = _aval(a).shape
            out_shape = shape[:axis] + ((1,) if keepdims else ()) + shape[axis + 1 :]
            a = moveaxis(a, axis, 0)
            where = None if where is None else moveaxis(where, axis, 0)
        n = _aval(a).shape[0]
        if n == 0:
            if start is None:
                raise ValueError(
                    f"{name}: zero-size reduction and {self.__name__!r} has no identity"
                )
            from refimpl.numpy._creation import full

            return full(out_shape, start, dtype)

        def step(i: Any, acc: Any) -> Any:
            new = self(acc, a[i].astype(dtype))
            return new if where is None else _where(where[i], new, acc)

        first = 0 if start is not None else 1
        acc = a[0] if start is None else start
        acc = broadcast_to(asarray(acc).astype(dtype), _aval(a).shape[1:])
        result = lax.fori_loop(first, n, step, acc)
        return reshape(result, out_shape)

    def accumulate(self, a: ArrayLike, axis: int = 0, dtype: Any = None, out: None = None) -> Array:
        """The running ``func`` fold along ``axis`` (the first element as is)."""
        name = f"{self.__name__}.accumulate"
        self._binary("accumulate")
        if out is not None:
            raise NotImplementedError(f"{name}: the out argument")
        if axis is None or isinstance(axis, tuple):
            raise ValueError(f"{name}: a single integer axis is required")
        a = checked_array(name, a)
        dtype = self._result_dtype(a, a) if dtype is None else np.dtype(dtype)
        axis = normalize_axis(name, axis, _aval(a).ndim)
        if math.prod(_aval(a).shape) == 0:
            return zeros(_aval(a).shape, dtype)
        moved = moveaxis(a, axis, 0).astype(dtype)

        def step(acc: Any, x: Any) -> tuple[Any, Any]:
            new = self(acc, x)
            return new, new

        _, rest = lax.scan(step, moved[0], moved[1:])
        return moveaxis(concatenate([moved[:1], rest], axis=0), 0, axis)

    def reduceat(
        self, a: ArrayLike, indices: ArrayLike, axis: int = 0, dtype: Any = None, out: None = None
    ) -> Array:
        """``reduce`` over each slice ``a[indices[i]:indices[i+1]]`` along
        ``axis`` (to the end for the last); where ``indices[i] >=
        indices[i+1]`` just ``a[indices[i]]`` (NumPy's rule)."""
        from refimpl.numpy._indexing import take

        name = f"{self.__name__}.reduceat"
        self._binary("reduceat")
        if out is not None:
            raise NotImplementedError(f"{name}: the out argument")
        a = checked_array(name, a)
        indices = checked_array(name, indices, "indices")
        if _aval(a).ndim == 0 or _aval(indices).ndim != 1:
            raise ValueError(
                f"{name}: a must have a dimension and indices be 1-d, got shapes "
                f"{_aval(a).shape} and {_aval(indices).shape}"
            )
        if axis is None or isinstance(axis, (tuple, list)):
            raise ValueError(f"{name}: a single integer axis is required")
        axis = normalize_axis(name, axis, _aval(a).ndim)
        dtype = _aval(a).dtype if dtype is None else np.dtype(dtype)
        a = moveaxis(a, axis, 0).astype(dtype)
        n = _aval(a).shape[0]
        start = indices
        stop = concatenate([indices[1:], asarray([n]).astype(_aval(indices).dtype)])
        extra = (1,) * (_aval(a).ndim - 1)
        start_b, stop_b = reshape(start, (-1, *extra)), reshape(stop, (-1, *extra))

        def step(i: Any, acc: Any) -> Any:
            inside = (i > start_b) & (i < stop_b)
            return _where(inside, self(acc, a[i]), acc)

        first = take(a, indices, axis=0)
        return moveaxis(lax.fori_loop(0, n, step, first), 0, axis)

    def outer(self, A: ArrayLike, B: ArrayLike, /) -> Array:
        """``func(A[i...], B[j...])`` for every pair: shape ``A.shape + B.shape``."""
        from refimpl.transforms.batching import vmap

        self._binary("outer")
        A = checked_array(f"{self.__name__}.outer", A, 0)
        B = checked_array(f"{self.__name__}.outer", B, 1)
        pairs = vmap(vmap(self, (None, 0)), (0, None))(reshape(A, (-1,)), reshape(B, (-1,)))
        return reshape(pairs, (*_aval(A).shape, *_aval(B).shape))

    def at(
        self, a: ArrayLike, indices: Any, b: ArrayLike = None, /, *, inplace: bool = True
    ) -> Array:
        """``a`` with ``a[idx] = func(a[idx], b_k)`` applied at each index in
        turn (``inplace=False`` required: arrays are immutable)."""
        name = f"{self.__name__}.at"
        if inplace:
            raise NotImplementedError(
                f"{name}: arrays are immutable; pass inplace=False for the updated copy"
            )
        operands = [a] if b is None else [a, b]
        a = checked_array(name, a)
        dtype = self._result_dtype(*operands)
        a = a.astype(dtype)
        rest = [] if b is None else [asarray(b).astype(dtype)]
        index = indices if isinstance(indices, tuple) else (indices,)
        arrays = [asarray(i) for i in index if not isinstance(i, slice)]
        shape = tuple(np.broadcast_shapes(*(_aval(i).shape for i in arrays))) if arrays else ()
        if not shape:
            return a.at[indices].set(self(a.at[indices].get(), *rest))
        from refimpl.numpy._shape import broadcast_to

        count = math.prod(shape)
        if rest:
            tail = _aval(rest[0]).shape[len(shape) :] if _aval(rest[0]).ndim > len(shape) else ()
            rest = [reshape(broadcast_to(rest[0], (*shape, *tail)), (count, *tail))]
        flat = [
            i if isinstance(i, slice) else reshape(broadcast_to(asarray(i), shape), (-1,))
            for i in index
        ]

        def step(carry: Any, k: Any) -> tuple[Any, None]:
            where_ = tuple(i if isinstance(i, slice) else i[k] for i in flat)
            args = [r[k] for r in rest]
            return carry.at[where_].set(self(carry.at[where_].get(), *args)), None

        result, _ = lax.scan(step, a, arange(count))
        return result


def frompyfunc(func: Callable[..., Any], /, nin: int, nout: int, *, identity: Any = None) -> ufunc:
    """``func`` as a :class:`ufunc` with ``nin`` inputs and ``nout`` outputs."""
    return ufunc(func, nin, nout, identity=identity)


def _where(condition: Any, x: Any, y: Any) -> Any:
    from refimpl.numpy._ufuncs import where

    return where(condition, x, y)


# --- NumPy's names that JAX re-exports, and eager I/O -----------------------------------

array_repr = np.array_repr
array_str = np.array_str
save = np.save
savez = np.savez
get_printoptions = np.get_printoptions
set_printoptions = np.set_printoptions
printoptions = np.printoptions
ComplexWarning = np.exceptions.ComplexWarning
character, flexible, object_ = np.character, np.flexible, np.object_


def _ndarray_type() -> type:
    from refimpl.array import Array as array_type

    return array_type


ndarray = _ndarray_type()  # as jnp.ndarray is jax.Array: isinstance(x, rnp.ndarray)


def load(file: Any, *args: Any, **kwargs: Any) -> Any:
    """``numpy.load``, with a loaded array (not an ``.npz`` archive) as a refimpl array."""
    out = np.load(file, *args, **kwargs)
    return asarray(out) if isinstance(out, np.ndarray) else out


def frombuffer(buffer: Any, dtype: Any = float, count: int = -1, offset: int = 0) -> Array:
    """``numpy.frombuffer`` as a refimpl array (a copy; the dtype as given)."""
    return asarray(np.frombuffer(buffer, dtype=dtype, count=count, offset=offset))


def fromstring(string: str, dtype: Any = float, count: int = -1, *, sep: str) -> Array:
    """``numpy.fromstring`` of text (``sep`` required, as NumPy's binary mode is gone)."""
    return asarray(np.fromstring(string, dtype=dtype, count=count, sep=sep))


def fromiter(*args: Any, **kwargs: Any) -> Array:
    """Not supported (as in JAX: the iterable may be impure under a trace):
    use ``asarray(numpy.fromiter(...))``."""
    raise NotImplementedError(
        "fromiter: not supported (as jax.numpy); use rnp.asarray(numpy.fromiter(...))"
    )


def fromfile(*args: Any, **kwargs: Any) -> Array:
    """Not supported (as in JAX): read with ``numpy.fromfile`` and pass the
    result to :func:`asarray`."""
    raise NotImplementedError(
        "fromfile: not supported (as jax.numpy); use numpy.fromfile and then rnp.asarray"
    )


def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> Array:
    """``ri.dlpack.from_dlpack`` (zero-copy on CPU where possible)."""
    from refimpl import dlpack

    return dlpack.from_dlpack(x, device=device, copy=copy)


__all__ = [
    "ComplexWarning", "array_repr", "array_str", "bitwise_count", "character",
    "flexible", "from_dlpack", "frombuffer", "frompyfunc", "ufunc", "fromfile", "fromiter",
    "fromstring",
    "get_printoptions", "gradient", "histogram2d", "histogramdd", "i0", "kaiser", "load",
    "mask_indices", "ndarray", "object_", "packbits", "poly", "polydiv", "printoptions",
    "roots", "save", "savez", "set_printoptions", "spacing", "trim_zeros", "unpackbits",
    "vectorize",
]  # fmt: skip
