"""The gamma function family: ``gamma``, ``gammaln``, ``loggamma``,
``gammasgn``, ``digamma``, ``polygamma``, ``beta``, ``betaln``,
``factorial``, ``comb``, ``multigammaln``, ``poch``, the incomplete
``gammainc``/``gammaincc``/``betainc``, ``zeta``, ``bernoulli`` and the
confluent hypergeometric ``hyp1f1``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import custom_derivatives, dtypes, lax
from refimpl import numpy as rnp
from refimpl.scipy.special._common import (
    _broadcast,
    _const,
    _inexact,
    _masked_loop,
    _select_last,
    _strong_inexact,
    _unary,
)

gammaln = _unary("gammaln", lax.lgamma)
digamma = _unary("digamma", lax.digamma)


def polygamma(n: Any, x: Any) -> Any:
    """The ``n``-th derivative of ``digamma`` at ``x`` (``n`` a non-negative integer)."""
    n, x = _inexact("polygamma", n, x)
    shape = np.broadcast_shapes(np.shape(n), np.shape(x))
    if np.shape(n) != shape and np.shape(n) != ():
        n = rnp.broadcast_to(n, shape)
    if np.shape(x) != shape and np.shape(x) != ():
        x = rnp.broadcast_to(x, shape)
    return lax.polygamma(n, x)


def gammasgn(x: Any) -> Any:
    """The sign of ``Gamma(x)``: 1, or -1 where ``floor(x)`` is odd and negative
    (and at -0); NaN at the negative integers and NaN."""
    (x,) = _inexact("gammasgn", x)
    floor_x = rnp.floor(x)
    negative = rnp.less(x, 0)
    nan_at = rnp.logical_or(rnp.logical_and(negative, rnp.equal(x, floor_x)), rnp.isnan(x))
    minus = rnp.logical_or(
        rnp.logical_and(negative, rnp.not_equal(rnp.remainder(floor_x, 2), 0)),
        rnp.logical_and(rnp.equal(x, 0), rnp.signbit(x)),
    )
    one = rnp.ones_like(x)
    return rnp.where(nan_at, np.nan, rnp.where(minus, rnp.negative(one), one))


def gamma(x: Any) -> Any:
    """``Gamma(x) = gammasgn(x) * exp(gammaln(x))`` (real ``x``)."""
    (x,) = _inexact("gamma", x)
    return rnp.multiply(gammasgn(x), rnp.exp(lax.lgamma(x)))


def loggamma(x: Any) -> Any:
    """``log Gamma(x)`` for real ``x > 0``; NaN for ``x <= 0`` (real inputs only)."""
    (x,) = _inexact("loggamma", x)
    if dtypes.is_complex(x.dtype):
        raise NotImplementedError("loggamma: complex arguments are not supported")
    return rnp.where(rnp.greater(x, 0), lax.lgamma(x), np.nan)


def _stirling_remainder(x: Any) -> Any:
    """``lgamma(x) - ((x - 1/2) log x - x + log(2 pi)/2)`` for ``x >= 8``:
    ``sum_k B_2k / (2k (2k-1) x^(2k-1))``, five terms (below 1e-15 there)."""
    inv = rnp.reciprocal(x)
    inv_sq = rnp.square(inv)
    total = rnp.zeros_like(x)
    for c in (1 / 1188, -1 / 1680, 1 / 1260, -1 / 360, 1 / 12):  # Horner, highest first
        total = rnp.add(rnp.multiply(total, inv_sq), c)
    return rnp.multiply(total, inv)


def betaln(a: Any, b: Any) -> Any:
    """``log|B(a, b)| = lgamma(a) + lgamma(b) - lgamma(a + b)``. With ``a <= b``:
    for ``b < 8`` that formula; for ``b >= 8`` the difference
    ``lgamma(b) - lgamma(a + b)`` from Stirling's series, ``a - a log b
    - (a + b - 1/2) log1p(a / b) + del(b) - del(a + b)`` (``del`` the series
    remainder), which avoids cancelling two large logarithms."""
    a, b = _inexact("betaln", a, b)
    a, b = rnp.minimum(a, b), rnp.maximum(a, b)
    small = rnp.add(lax.lgamma(a), rnp.subtract(lax.lgamma(b), lax.lgamma(rnp.add(a, b))))
    # a Python 8: a weakly typed b keeps a weak result, as JAX's betaln
    big_b = rnp.where(rnp.less(b, 8), 8.0, b)
    difference = rnp.subtract(
        rnp.subtract(a, rnp.multiply(a, rnp.log(big_b))),
        rnp.multiply(rnp.subtract(rnp.add(a, big_b), 0.5), rnp.log1p(rnp.divide(a, big_b))),
    )
    difference = rnp.add(
        difference,
        rnp.subtract(_stirling_remainder(big_b), _stirling_remainder(rnp.add(a, big_b))),
    )
    large = rnp.add(lax.lgamma(a), difference)
    return rnp.where(rnp.less(b, 8), small, large)


def beta(a: Any, b: Any) -> Any:
    """``B(a, b) = Gamma(a) Gamma(b) / Gamma(a + b)``, as ``sign * exp(betaln)``."""
    a, b = _inexact("beta", a, b)
    sign = rnp.multiply(rnp.multiply(gammasgn(a), gammasgn(b)), gammasgn(rnp.add(a, b)))
    return rnp.multiply(sign, rnp.exp(betaln(a, b)))


def factorial(n: Any, exact: bool = False) -> Any:
    """``Gamma(n + 1)``, and 0 for ``n < 0``; ``exact=True`` is not supported (as JAX)."""
    if exact:
        raise NotImplementedError("factorial: exact=True is not supported (as in JAX)")
    (n,) = _inexact("factorial", n)
    return rnp.where(rnp.less(n, 0), 0, rnp.exp(lax.lgamma(rnp.add(n, 1))))


def comb(N: Any, k: Any, *, repetition: bool = False) -> Any:
    """``N choose k = exp(lgamma(N+1) - lgamma(k+1) - lgamma(N-k+1))``, 0 unless
    ``0 <= k <= N``; with ``repetition``, ``comb(N + k - 1, k)`` (1 at ``k = 0``
    for ``N >= 0``)."""
    N, k = _inexact("comb", N, k)
    if repetition:
        result = comb(rnp.subtract(rnp.add(N, k), 1), k)
        return rnp.where(rnp.logical_and(rnp.equal(k, 0), rnp.greater_equal(N, 0)), 1.0, result)
    valid = rnp.logical_and(
        rnp.logical_and(rnp.less_equal(k, N), rnp.greater_equal(N, 0)), rnp.greater_equal(k, 0)
    )
    safe_N = rnp.where(valid, N, 0.0)
    safe_k = rnp.where(valid, k, 0.0)
    log_c = rnp.subtract(
        rnp.subtract(lax.lgamma(rnp.add(safe_N, 1)), lax.lgamma(rnp.add(safe_k, 1))),
        lax.lgamma(rnp.subtract(rnp.add(safe_N, 1), safe_k)),
    )
    return rnp.where(valid, rnp.exp(log_c), 0.0)


def multigammaln(a: Any, d: int) -> Any:
    """The log of the multivariate gamma function of dimension ``d`` (a Python int):
    ``d (d-1)/4 log(pi) + sum_{j=0}^{d-1} lgamma(a - j/2)``."""
    try:
        d_int = int(d)
    except Exception:
        raise TypeError(f"multigammaln: d must be a concrete integer, got {d!r}") from None
    if isinstance(d, bool) or d_int != d:
        raise TypeError(f"multigammaln: d must be an integer, got {d!r}")
    d = d_int
    if d < 1:
        raise ValueError(f"multigammaln: d must be a positive integer, got {d}")
    a, d_ = _inexact("multigammaln", a, d)
    constant = rnp.multiply(
        rnp.multiply(rnp.multiply(0.25, d_), rnp.subtract(d_, 1)),
        np.asarray(np.log(np.pi), a.dtype),
    )
    halves = rnp.divide(rnp.arange(d, dtype=a.dtype), 2)
    terms = lax.lgamma(rnp.subtract(rnp.expand_dims(a, -1), halves))
    return rnp.add(rnp.sum(terms, axis=-1), constant)


def _poch_value(z: Any, m: Any) -> Any:
    return rnp.where(rnp.equal(m, 0), rnp.ones_like(z), rnp.divide(gamma(rnp.add(z, m)), gamma(z)))


def _poch_jvp(primals, tangents):
    # d/dz = (digamma(z + m) - digamma(z)) poch; d/dm = digamma(z + m) poch
    (z, m), (tz, tm) = primals, tangents
    value = _poch_value(z, m)
    zm_digamma = lax.digamma(rnp.add(z, m))
    dz = rnp.multiply(rnp.subtract(zm_digamma, lax.digamma(z)), value)
    dm = rnp.multiply(zm_digamma, value)
    return value, rnp.add(rnp.multiply(dz, tz), rnp.multiply(dm, tm))


def poch(z: Any, m: Any) -> Any:
    """The rising factorial ``Gamma(z + m) / Gamma(z)`` (1 where ``m == 0``)."""

    z, m = _inexact("poch", z, m)
    z, m = _broadcast(z, m)
    fn = custom_derivatives.custom_jvp(_poch_value)
    fn.defjvp(_poch_jvp)
    return fn(z, m)


def gammainc(a: Any, x: Any) -> Any:
    """The regularized lower incomplete gamma function ``P(a, x)`` (``lax.igamma``)."""
    a, x = _broadcast(*_inexact("gammainc", a, x))
    return lax.igamma(a, x)


def gammaincc(a: Any, x: Any) -> Any:
    """The regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``."""
    a, x = _broadcast(*_inexact("gammaincc", a, x))
    return lax.igammac(a, x)


# Bernoulli numbers B_2j / (2j)!, j = 1..9, for the Euler-Maclaurin tail
_ZETA_TAIL = tuple(
    b / float(np.prod(np.arange(1, 2 * j + 1, dtype=np.float64)))
    for j, b in enumerate(
        (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798),
        start=1,
    )
)


def _zeta_dx(x: Any, q: Any) -> Any:
    """``d zeta(x, q) / dx`` from the Euler-Maclaurin expansion with 12 leading
    terms (``w = q + 12``), each term differentiated in ``x`` by hand:
    ``-sum_k log(q+k) (q+k)^-x + d/dx[w^(1-x)/(x-1) + w^-x/2 + sum_j c_j
    x(x+1)...(x+2j-2) w^(-x-2j+1)]``. Accurate for ``q > 0`` (as JAX's series)."""
    total = rnp.zeros_like(x)
    for k in range(12):
        base = rnp.add(q, float(k))
        total = rnp.subtract(total, rnp.multiply(rnp.log(base), rnp.power(base, rnp.negative(x))))
    w = rnp.add(q, 12.0)
    log_w = rnp.log(w)
    x_minus_1 = rnp.subtract(x, 1.0)
    integral = rnp.divide(rnp.power(w, rnp.subtract(1.0, x)), x_minus_1)
    total = rnp.subtract(
        total, rnp.add(rnp.multiply(log_w, integral), rnp.divide(integral, x_minus_1))
    )
    total = rnp.subtract(
        total, rnp.multiply(0.5, rnp.multiply(log_w, rnp.power(w, rnp.negative(x))))
    )
    rising = x  # x (x+1) ... (x+2j-2)
    rising_log_slope = rnp.reciprocal(x)  # d log(rising) / dx
    for j, c in enumerate(_ZETA_TAIL, start=1):
        term = rnp.multiply(
            c, rnp.multiply(rising, rnp.power(w, rnp.subtract(float(1 - 2 * j), x)))
        )
        total = rnp.add(total, rnp.multiply(term, rnp.subtract(rising_log_slope, log_w)))
        for i in (2 * j - 1, 2 * j):
            rising = rnp.multiply(rising, rnp.add(x, float(i)))
            rising_log_slope = rnp.add(rising_log_slope, rnp.reciprocal(rnp.add(x, float(i))))
    return total


def _zeta_jvp(primals, tangents):
    (x, q), (tx, tq) = primals, tangents
    value = lax.zeta(x, q)
    dq = rnp.negative(rnp.multiply(x, lax.zeta(rnp.add(x, 1.0), q)))
    return value, rnp.add(rnp.multiply(_zeta_dx(x, q), tx), rnp.multiply(dq, tq))


def zeta(x: Any, q: Any = None) -> Any:
    """The Hurwitz zeta function ``sum_{k>=0} (q + k)^-x`` (``lax.zeta``; see
    ``refimpl.primitives.special`` for the edge values). The Riemann zeta
    function (``q=None``) is not implemented, as in JAX. Differentiable in
    ``q`` (``-x zeta(x + 1, q)``) and in ``x`` (:func:`_zeta_dx`)."""

    if q is None:
        raise NotImplementedError(
            "zeta: the Riemann zeta function (q=None) is not implemented (as in JAX); "
            "pass q to compute the Hurwitz zeta function"
        )
    x, q = _broadcast(*_inexact("zeta", x, q))
    fn = custom_derivatives.custom_jvp(lax.zeta)
    fn.defjvp(_zeta_jvp)
    return fn(x, q)


def betainc(a: Any, b: Any, x: Any) -> Any:
    """The regularized incomplete beta function ``I_x(a, b)`` (``lax.betainc``;
    differentiable in ``x`` only, as in JAX)."""
    a, b, x = _broadcast(*_inexact("betainc", a, b, x))
    return lax.regularized_incomplete_beta(a, b, x)


def bernoulli(n: int) -> Any:
    """The Bernoulli numbers ``B_0 .. B_n`` (``B_1 = -1/2``) as a float array of
    length ``n + 1``, ``n`` a concrete non-negative integer. Computed exactly
    in rationals (``sum_{j<=m} C(m+1, j) B_j = 0``) and rounded once; JAX's own
    float recurrence is within ~1e-5 relative of these."""
    import operator
    from fractions import Fraction
    from math import comb as exact_comb

    n = operator.index(n)
    if n < 0:
        raise ValueError(f"bernoulli: n must be a non-negative integer, got {n}")
    numbers: list[Fraction] = [Fraction(1)]
    for m in range(1, n + 1):
        total = sum((exact_comb(m + 1, j) * numbers[j] for j in range(m)), Fraction(0))
        numbers.append(-total / (m + 1))
    dtype = dtypes.canonicalize_dtype(float)
    wide = np.array([float(b) for b in numbers], np.float64)
    with np.errstate(over="ignore"):  # |B_n| passes float32's range near n = 86: inf, as JAX
        return rnp.asarray(wide.astype(dtype))


# --- hyp1f1 --------------------------------------------------------------------------


def _series_loop(step, serie0: Any, term0: Any, x: Any, weight=None) -> Any:
    """``serie0 + sum_k weight(k) term_k`` with ``term_(k+1) = term_k * step(k)``,
    ``k = 1, 2, ...``, per element until ``|term / serie| <= eps`` or ``k = 250``
    (the term ratio is tested, as JAX, whatever the weight)."""
    eps = float(dtypes.finfo(x.dtype).eps)
    state = {"serie": serie0, "k": rnp.ones_like(x), "term": term0}

    def active(d):
        ratio = rnp.divide(rnp.abs(d["term"]), rnp.abs(d["serie"]))
        return rnp.logical_and(rnp.less(d["k"], 250.0), rnp.greater(ratio, eps))

    def body(d):
        k = d["k"]
        w = d["term"] if weight is None else rnp.multiply(d["term"], weight(k))
        return {
            "serie": rnp.add(d["serie"], w),
            "k": rnp.add(k, 1.0),
            "term": rnp.multiply(d["term"], step(k)),
        }

    return _masked_loop(active, body, state)["serie"]


def _hyp1f1_taylor_step(a, b, x):
    def step(k):
        return rnp.divide(
            rnp.multiply(rnp.divide(rnp.add(a, k), rnp.add(b, k)), x), rnp.add(k, 1.0)
        )

    return step


def _hyp1f1_raw(a: Any, b: Any, x: Any) -> Any:

    def step(k):
        return rnp.divide(
            rnp.divide(
                rnp.multiply(rnp.add(rnp.subtract(b, a), k), rnp.add(rnp.subtract(1.0, a), k)),
                rnp.add(k, 1.0),
            ),
            x,
        )

    first = rnp.divide(rnp.multiply(rnp.subtract(b, a), rnp.subtract(1.0, a)), x)
    big = rnp.greater_equal(rnp.abs(x), 100.0)
    # each expansion runs only where chosen (elsewhere a zero first term stops it)
    taylor = _series_loop(
        _hyp1f1_taylor_step(a, b, x),
        rnp.ones_like(x),
        rnp.where(big, rnp.zeros_like(x), rnp.multiply(rnp.divide(a, b), x)),
        x,
    )
    asym = _series_loop(step, rnp.ones_like(x), rnp.where(big, first, rnp.zeros_like(x)), x)
    asym = rnp.multiply(
        rnp.multiply(rnp.divide(gamma(b), gamma(a)), rnp.exp(x)),
        rnp.multiply(rnp.power(x, rnp.subtract(a, b)), asym),
    )
    result = rnp.where(big, asym, taylor)
    a_zero = rnp.equal(a, 0.0)
    return _select_last(
        result,
        (a_zero, _const(x, 1.0)),
        (rnp.logical_and(rnp.equal(a, b), rnp.logical_not(a_zero)), rnp.exp(x)),
        (rnp.logical_and(rnp.equal(b, 0.0), rnp.logical_not(a_zero)), _const(x, np.inf)),
    )


def _hyp1f1_jvp(primals, tangents):

    (a, b, x), (da, db, dx) = primals, tangents
    step = _hyp1f1_taylor_step(a, b, x)
    first = rnp.multiply(rnp.divide(a, b), x)
    zero = rnp.zeros_like(x)
    d_a = _series_loop(
        step, zero, first, x, weight=lambda k: rnp.subtract(digamma(rnp.add(a, k)), digamma(a))
    )
    d_b = _series_loop(
        step, zero, first, x, weight=lambda k: rnp.subtract(digamma(b), digamma(rnp.add(b, k)))
    )
    d_x = rnp.multiply(rnp.divide(a, b), _hyp1f1_raw(rnp.add(a, 1.0), rnp.add(b, 1.0), x))
    tangent = rnp.add(rnp.add(rnp.multiply(d_a, da), rnp.multiply(d_b, db)), rnp.multiply(d_x, dx))
    return _hyp1f1_raw(a, b, x), tangent


_hyp1f1 = custom_derivatives.custom_jvp(_hyp1f1_raw)
_hyp1f1.defjvp(_hyp1f1_jvp)


def hyp1f1(a: Any, b: Any, x: Any) -> Any:
    """Kummer's confluent hypergeometric function ``1F1(a; b; x) = sum_k (a)_k /
    ((b)_k k!) x^k`` (Pearson, Olver and Porter: the Taylor series for ``|x| < 100``,
    the large-``x`` asymptotic series beyond, each at most 250 terms); 1 where
    ``a = 0`` (also at ``b = 0``), ``e^x`` where ``a = b``, ``inf`` where ``b = 0``.
    Derivatives in ``a`` and ``b`` by their series, in ``x`` as ``a/b 1F1(a+1; b+1; x)``."""
    a, b, x = _strong_inexact("hyp1f1", a, b, x)
    a, b, x = rnp.broadcast_arrays(a, b, x)
    return _hyp1f1(a, b, x)


__all__ = [
    "bernoulli",
    "beta",
    "betainc",
    "betaln",
    "comb",
    "digamma",
    "factorial",
    "gamma",
    "gammainc",
    "gammaincc",
    "gammaln",
    "gammasgn",
    "loggamma",
    "multigammaln",
    "poch",
    "polygamma",
    "zeta",
    "hyp1f1",
]
