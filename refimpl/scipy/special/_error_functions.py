"""The error function family: ``erf``, ``erfc``, ``erfinv``, ``erfcx``,
``ndtr``, ``log_ndtr``, ``ndtri``, Dawson's integral ``dawsn`` and the
Faddeeva function ``wofz``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import custom_derivatives, dtypes, lax, tracing
from refimpl import numpy as rnp
from refimpl.scipy.special._common import (
    _const,
    _float32_or_64,
    _horner,
    _inexact,
    _strong_inexact,
    _unary,
)

erf = _unary("erf", lax.erf)
erfc = _unary("erfc", lax.erfc)
erfinv = _unary("erfinv", lax.erf_inv)


def _ndtr(x: Any) -> Any:
    # 1/2 (1 + erf(x/sqrt2)) near 0; in the tails erfc, which keeps the relative
    # precision of the small side: 1/2 erfc(|x|/sqrt2) for x < 0, 1 - that for x > 0
    half_sqrt2 = np.asarray(np.sqrt(0.5), x.dtype)
    w = rnp.multiply(x, half_sqrt2)
    z = rnp.abs(w)
    tail = lax.erfc(z)
    y = rnp.where(
        rnp.less(z, half_sqrt2),
        rnp.add(1.0, lax.erf(w)),
        rnp.where(rnp.greater(w, 0), rnp.subtract(2.0, tail), tail),
    )
    return rnp.multiply(0.5, y)


def ndtr(x: Any) -> Any:
    """The standard normal CDF ``(1 + erf(x / sqrt(2))) / 2``; float32/float64 only."""
    return _ndtr(_float32_or_64("ndtr", x))


# float32: asymptotic series below -10, -ndtr(-x) (= log(1 - ndtr(-x)) to
# rounding) above 5; float64: -20 and 8 (JAX's segments)
_LOG_NDTR_SEGMENTS = {np.dtype(np.float32): (-10.0, 5.0), np.dtype(np.float64): (-20.0, 8.0)}


def _log_ndtr_lower(x: Any, series_order: int) -> Any:
    """``log ndtr(x)`` for very negative ``x`` from ``ndtr(x) ~ phi(x)/(-x) *
    (1 + sum_{n=1..order} (-1)^n (2n-1)!! / x^(2n))``."""
    x_sq = rnp.square(x)
    log_scale = rnp.subtract(
        rnp.subtract(rnp.multiply(-0.5, x_sq), rnp.log(rnp.negative(x))),
        np.asarray(0.5 * np.log(2 * np.pi), x.dtype),
    )
    total = rnp.ones_like(x)
    if series_order > 0:
        even, odd = rnp.zeros_like(x), rnp.zeros_like(x)
        x_2n = x_sq
        double_factorial = 1.0
        for n in range(1, series_order + 1):
            term = rnp.divide(np.asarray(double_factorial, x.dtype), x_2n)
            if n % 2:
                odd = rnp.add(odd, term)
            else:
                even = rnp.add(even, term)
            x_2n = rnp.multiply(x_2n, x_sq)
            double_factorial *= 2 * n + 1
        total = rnp.add(total, rnp.subtract(even, odd))
    return rnp.add(log_scale, rnp.log(total))


def _log_ndtr_value(x: Any, series_order: int) -> Any:
    lower, upper = _LOG_NDTR_SEGMENTS[x.dtype]
    above = rnp.greater(x, upper)
    value = _ndtr(rnp.where(above, rnp.negative(x), rnp.maximum(x, lower)))
    return rnp.where(
        above,
        rnp.negative(value),
        rnp.where(
            rnp.greater(x, lower),
            rnp.log(value),
            _log_ndtr_lower(rnp.minimum(x, lower), series_order),
        ),
    )


def _log_ndtr_fn(series_order: int):
    def value(x):
        return _log_ndtr_value(x, series_order)

    def jvp(primals, tangents):
        # d log ndtr = phi(x) / ndtr(x) = exp(log phi(x) - log ndtr(x))
        (x,), (t,) = primals, tangents
        ans = value(x)
        log_pdf = rnp.subtract(
            rnp.multiply(-0.5, rnp.square(x)), np.asarray(0.5 * np.log(2 * np.pi), x.dtype)
        )
        return ans, rnp.multiply(t, rnp.exp(rnp.subtract(log_pdf, ans)))

    fn = custom_derivatives.custom_jvp(value)
    fn.defjvp(jvp)
    return fn


def log_ndtr(x: Any, series_order: int = 3) -> Any:
    """``log(ndtr(x))``, accurate in both tails: for ``x`` above 5 (float64: 8)
    ``-ndtr(-x)``; between the segments ``log(ndtr(x))``; below -10 (float64:
    -20) the asymptotic series of ``series_order`` terms (0..30).
    Derivative ``exp(log phi(x) - log_ndtr(x))``. float32/float64 only."""
    if isinstance(series_order, bool) or not isinstance(series_order, int):
        raise TypeError(f"log_ndtr: series_order must be a Python int, got {series_order!r}")
    if not 0 <= series_order <= 30:
        raise ValueError(f"log_ndtr: series_order must be in [0, 30], got {series_order}")
    return _log_ndtr_fn(series_order)(_float32_or_64("log_ndtr", x))


def _ndtri_jvp(primals, tangents):
    # d ndtri / dp = 1 / phi(ndtri(p)) = sqrt(2 pi) exp(x^2 / 2), rather than the
    # derivative of the Newton iterations (whose unselected branches are inf)
    (p,), (t,) = primals, tangents
    x = _ndtri_value(p)
    slope = rnp.multiply(
        np.asarray(np.sqrt(2 * np.pi), x.dtype), rnp.exp(rnp.multiply(0.5, rnp.square(x)))
    )
    return x, rnp.multiply(t, slope)


def ndtri(p: Any) -> Any:
    """The inverse of ``ndtr``: the ``x`` with ``ndtr(x) = p``; ``-inf`` at 0,
    ``inf`` at 1, NaN outside ``[0, 1]``. float32/float64 only.

    In the middle (``exp(-2) <= p <= 1 - exp(-2)``) ``sqrt(2) erfinv(2p - 1)``;
    in the tails, with ``r = min(p, 1 - p)``, Newton's method on ``log_ndtr(x) =
    log(r)`` (concave in ``x``: monotone convergence) from the asymptotic start
    ``-sqrt(t - log(t) - log(2 pi))``, ``t = -2 log r``, negated for ``p > 1/2``.
    """

    fn = custom_derivatives.custom_jvp(_ndtri_value)
    fn.defjvp(_ndtri_jvp)
    return fn(_float32_or_64("ndtri", p))


def _ndtri_value(p: Any) -> Any:
    dtype = p.dtype
    low, high = np.exp(-2.0), 1 - np.exp(-2.0)
    middle = rnp.logical_and(rnp.greater_equal(p, low), rnp.less_equal(p, high))
    central = rnp.multiply(
        np.asarray(np.sqrt(2.0), dtype), lax.erf_inv(rnp.subtract(rnp.multiply(2.0, p), 1.0))
    )
    upper = rnp.greater(p, 0.5)
    r = rnp.where(upper, rnp.subtract(1.0, p), p)
    r = rnp.where(rnp.logical_or(middle, rnp.less_equal(r, 0)), np.asarray(0.05, dtype), r)
    log_r = rnp.log(r)
    t = rnp.multiply(-2.0, log_r)
    x = rnp.negative(
        rnp.sqrt(rnp.subtract(rnp.subtract(t, rnp.log(t)), np.asarray(np.log(2 * np.pi), dtype)))
    )
    half_log_2pi = np.asarray(0.5 * np.log(2 * np.pi), dtype)
    for _ in range(4 if dtype == np.float32 else 6):
        log_cdf = _log_ndtr_value(x, 3)
        log_pdf = rnp.subtract(rnp.multiply(-0.5, rnp.square(x)), half_log_2pi)
        x = rnp.subtract(
            x, rnp.multiply(rnp.subtract(log_cdf, log_r), rnp.exp(rnp.subtract(log_cdf, log_pdf)))
        )
    tail = rnp.where(upper, rnp.negative(x), x)
    out = rnp.where(middle, central, tail)
    out = rnp.where(rnp.equal(p, 0), -np.inf, rnp.where(rnp.equal(p, 1), np.inf, out))
    outside = rnp.logical_or(rnp.less(p, 0), rnp.greater(p, 1))
    return rnp.where(rnp.logical_or(outside, rnp.isnan(p)), np.nan, out)


def _erfcx_value(x: Any) -> Any:
    # exp(x^2) erfc(x) while exp(x^2) is finite (x <= sqrt(log(finfo.max)));
    # beyond, the asymptotic series 1/(sqrt(pi) x) sum_k (-1)^k (2k-1)!! / (2x^2)^k,
    # terms k = 0..nterms-1 (float32: 5, the first omitted below 1e-8 there;
    # float64: 9)
    nterms = 9 if x.dtype == np.float64 else 5
    threshold = float(np.sqrt(np.log(float(dtypes.finfo(x.dtype).max))))
    large = rnp.greater(x, threshold)
    safe = rnp.where(large, rnp.ones_like(x), x)
    direct = rnp.multiply(rnp.exp(rnp.square(safe)), lax.erfc(safe))
    big = rnp.where(large, x, np.asarray(2 * threshold, x.dtype))
    inv = rnp.reciprocal(rnp.multiply(2.0, rnp.square(big)))
    total = rnp.zeros_like(x)
    coefficients = []
    c = 1.0
    for k in range(nterms):
        coefficients.append(c)
        c *= -(2 * k + 1)
    for coefficient in reversed(coefficients):  # Horner in 1 / (2 x^2)
        total = rnp.add(rnp.multiply(total, inv), coefficient)
    asymptotic = rnp.divide(total, rnp.multiply(np.asarray(np.sqrt(np.pi), x.dtype), big))
    return rnp.where(large, asymptotic, direct)


def _erfcx_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    y = _erfcx_value(x)
    slope = rnp.subtract(
        rnp.multiply(rnp.multiply(2.0, x), y), np.asarray(2 / np.sqrt(np.pi), x.dtype)
    )
    return y, rnp.multiply(t, slope)


def erfcx(x: Any) -> Any:
    """The scaled complementary error function ``exp(x^2) erfc(x)`` (real ``x``;
    16-bit types computed in float32); derivative ``2 x erfcx(x) - 2/sqrt(pi)``."""

    (x,) = _inexact("erfcx", x)
    if dtypes.is_complex(x.dtype):
        raise NotImplementedError("erfcx: complex arguments (Faddeeva's wofz) are not supported")
    fn = custom_derivatives.custom_jvp(_erfcx_value)
    fn.defjvp(_erfcx_jvp)
    if x.dtype in (np.float32, np.float64):
        return fn(x)
    return fn(x.astype(np.float32)).astype(x.dtype)


# --- dawsn -----------------------------------------------------------------------

# Cody, Paciorek, Thacher (1970), highest power first: |x| < 3.25 in x^2;
# 3.25 <= |x| < 6.25 and beyond in t = 1/x^2.
_DAWSN_AN = (1.1368149897175597e-11, 8.492622676674738e-10, 1.9443420417555306e-08,
             9.531517412544844e-07, 3.078283098749132e-06, 0.00035251336852028877,
             -0.0008501498467244109, 0.04226182230055466, -0.09174803717734524, 1.0)  # fmt: skip
_DAWSN_AD = (2.403720730667626e-11, 1.488646813684934e-09, 5.212652810105416e-08,
             1.2725847827318697e-06, 2.324902498207895e-05, 0.00032552474182605793,
             0.003488058146571626, 0.027944853119882897, 0.15887424196012057,
             0.5749186294893204, 1.0)  # fmt: skip
_DAWSN_BN = (0.5089551564179009, -0.24475441814269785, 0.09415123353035344,
             -0.021871125514203903, 0.003662076123295692, -0.0004232091144603888,
             3.5964130479389666e-05, -2.1464035171996896e-06, 9.100107800763914e-08,
             -2.4027452082825098e-09, 3.592333854409284e-11)  # fmt: skip
_DAWSN_BD = (1.0, -0.6318398698733682, 0.2367067882282487, -0.053180636700322324,
             0.008480417185862954, -0.0009479967684866654, 7.810255929445524e-05,
             -4.558751532524426e-06, 1.8910035811142186e-07, -4.913246913319206e-09,
             7.184664032357345e-11)  # fmt: skip
_DAWSN_CN = (-0.5905928605347732, 0.6292352427243688, -0.17285897538038814,
             0.016483704782518965, -0.0004868276130204627)  # fmt: skip
_DAWSN_CD = (1.0, -2.698200571975449, 1.7327079904594784, -0.3937085822819395,
             0.03442789240412334, -0.0009736552260409412)  # fmt: skip


def _dawsn_value(x: Any) -> Any:
    one, half = _const(x, 1.0), _const(x, 0.5)
    ax = rnp.abs(x)
    near = rnp.less(ax, 3.25)
    middle = rnp.logical_and(rnp.logical_not(near), rnp.less(ax, 6.25))
    far = rnp.greater_equal(ax, 6.25)
    # each region's fit sees 1 outside it (inf/inf there would not be selected away)
    a1 = rnp.where(near, ax, one)
    a1sq = rnp.square(a1)
    v1 = rnp.divide(rnp.multiply(a1, _horner(_DAWSN_AN, a1sq)), _horner(_DAWSN_AD, a1sq))

    def tail(inside, num, den):
        t = rnp.where(inside, rnp.divide(one, rnp.square(ax)), one)
        a = rnp.where(inside, ax, one)
        ratio = rnp.divide(rnp.multiply(t, _horner(num, t)), _horner(den, t))
        return rnp.multiply(rnp.divide(half, a), rnp.add(one, ratio))

    v2 = tail(middle, _DAWSN_BN, _DAWSN_BD)
    v3 = tail(far, _DAWSN_CN, _DAWSN_CD)
    return rnp.multiply(rnp.sign(x), rnp.where(near, v1, rnp.where(middle, v2, v3)))


def _dawsn_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    y = _dawsn_value(x)
    return y, rnp.multiply(t, rnp.subtract(_const(x, 1.0), rnp.multiply(2.0, rnp.multiply(x, y))))


_dawsn = custom_derivatives.custom_jvp(_dawsn_value)
_dawsn.defjvp(_dawsn_jvp)


def dawsn(x: Any) -> Any:
    """Dawson's integral ``e^(-x^2) int_0^x e^(t^2) dt`` (real ``x``)."""
    (x,) = _strong_inexact("dawsn", x)
    if x.dtype in (np.float32, np.float64):
        return _dawsn(x)
    return _dawsn(x.astype(np.float32)).astype(x.dtype)


# --- wofz ------------------------------------------------------------------------------

# Weideman (1994), N = 32: w(z) = 2 P(Z) / (L - iz)^2 + 1 / (sqrt(pi) (L - iz)),
# Z = (L + iz) / (L - iz), for Im z >= 0 (P's coefficients highest power first).
_WOFZ_L = 4.7568284600108841
_WOFZ_C = (
    -1.3034426067909105e-12,
    3.741183837373847e-12,
    8.030427700497756e-12,
    -2.154359355749088e-11,
    -5.544244996323793e-11,
    1.165824698850374e-10,
    4.1537441121999766e-10,
    -5.231020211492061e-10,
    -3.2080151339721323e-09,
    8.124886421653591e-10,
    2.3797556530014025e-08,
    2.2930438438915445e-08,
    -1.4813078929137642e-07,
    -4.1840763750512053e-07,
    4.2558331397138446e-07,
    4.401531731283225e-06,
    6.821031944357515e-06,
    -2.1409619201999998e-05,
    -0.0001307544925457942,
    -0.00024532980270038237,
    0.00039259136070109705,
    0.004519541105349309,
    0.0190061557848455,
    0.05730440352983728,
    0.14060716226893755,
    0.2954445107150874,
    0.5460139720639338,
    0.9019254893648001,
    1.345544169234545,
    1.8256696296324815,
    2.2635372999002676,
    2.5722534081245696,
)


def _wofz_upper(z: Any) -> Any:
    length = _const(z, _WOFZ_L)
    iz = rnp.multiply(_const(z, 1j), z)
    denom = rnp.subtract(length, iz)
    big_z = rnp.divide(rnp.add(length, iz), denom)
    p = _horner(_WOFZ_C, big_z)
    return rnp.add(
        rnp.divide(rnp.multiply(2.0, p), rnp.multiply(denom, denom)),
        rnp.divide(_const(z, 1 / np.sqrt(np.pi)), denom),
    )


def _wofz_value(z: Any) -> Any:
    upper = rnp.greater_equal(rnp.imag(z), 0.0)
    w = _wofz_upper(rnp.where(upper, z, rnp.negative(z)))
    # w(-z) = 2 exp(-z^2) - w(z) carries the upper half plane to the lower
    reflected = rnp.subtract(rnp.multiply(2.0, rnp.exp(rnp.negative(rnp.multiply(z, z)))), w)
    return rnp.where(upper, w, reflected)


def _wofz_jvp(primals, tangents):
    (z,), (t,) = primals, tangents
    w = _wofz_value(z)
    slope = rnp.add(
        rnp.negative(rnp.multiply(2.0, rnp.multiply(z, w))), _const(z, 2j / np.sqrt(np.pi))
    )
    return w, rnp.multiply(t, slope)


_wofz = custom_derivatives.custom_jvp(_wofz_value)
_wofz.defjvp(_wofz_jvp)


def wofz(z: Any) -> Any:
    """The Faddeeva function ``w(z) = exp(-z^2) erfc(-iz)`` (real arguments are
    made complex): Weideman's 32-term rational approximation in the upper half
    plane, ``2 exp(-z^2) - w(-z)`` below. ``w'(z) = -2 z w(z) + 2i/sqrt(pi)``."""
    avals = tracing.get_aval(z, "wofz", 0)
    z = rnp.asarray(z)
    dtype = dtypes.canonicalize_dtype(complex)
    if avals.dtype == np.float64 or avals.dtype == np.complex128:
        dtype = np.dtype(np.complex128)
    if not (avals.dtype == dtype and not avals.weak_type):
        z = lax.convert_element_type(z, dtype, weak_type=False)
    return _wofz(z)


__all__ = [
    "erf",
    "erfc",
    "erfcx",
    "erfinv",
    "log_ndtr",
    "ndtr",
    "ndtri",
    "dawsn",
    "wofz",
]
