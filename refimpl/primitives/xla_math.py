"""XLA CPU's float32 transcendental functions, bit for bit, in NumPy.

The reference defines ``exp``, ``log``, ``log1p``, ``expm1``, ``tanh``,
``logistic``, ``erf``, ``erf_inv``, ``tan`` and ``pow`` on float32 (and on
float16/bfloat16, which are computed in float32 and rounded once) as the
approximations XLA's CPU backend compiles (for ``tan`` and ``pow``: the C
library functions its code calls, glibc's ``tanf`` and ``powf``), so that the
reference interpreter, the PJRT backend and JAX give the same bits. Each
function below states its algorithm: the range reduction, the polynomial and
where its coefficients come from. They were
checked against the PJRT CPU plugin (and jaxlib 0.10.2's CPU client, which
agrees with it) on millions of inputs: subnormals, zeros, infinities, NaNs
and the ranges the samplers use (``tests/primitives/test_xla_math.py``).

Three properties of XLA's CPU code generation are part of the definition:

* Fused multiply-adds: LLVM contracts ``a * b + c`` in these expansions into
  one ``fma`` with a single rounding. :func:`fma` computes it exactly.
* Denormals are flushed: XLA runs its kernels with the x86 ``DAZ`` and
  ``FTZ`` flags, so a subnormal operand of an arithmetic instruction (or a
  comparison) reads as a zero of the same sign, and a subnormal result is
  replaced by a zero of the same sign. Selects and bit operations pass values
  through unchanged. :func:`_flush` models both; the arithmetic helpers
  below apply it to every result.
* The float32 values of the coefficients: XLA rounds its decimal constants
  to float32 once, as ``np.float32(c)`` does.

Maximum distance from the correctly rounded result (float32, measured on
5.4 million normal inputs against float64 NumPy / ``math.erf``): ``exp`` 5
ulps, ``log`` 1, ``log1p`` 2, ``expm1`` 6, ``tanh`` 4, ``logistic`` 2,
``erf`` 5, ``erf_inv`` 64 (on uniform inputs in (-1, 1)); beyond that,
subnormal results are flushed to zero.

float64 is not here: XLA's float64 functions differ from NumPy's too (see
docs/semantics.md for the measured differences), and the reference keeps
NumPy's.
"""

from __future__ import annotations

import numpy as np

__all__ = ["erf", "erf_inv", "exp", "expm1", "fma", "fma64", "log", "log1p", "logistic", "pow"]
__all__ += ["lgamma", "tan", "tanh"]

_F32 = np.float32
_TINY = np.finfo(np.float32).tiny  # 2**-126, the smallest normal float32


# --- one float32 instruction at a time ------------------------------------------------


def _flush(x: np.ndarray) -> np.ndarray:
    """DAZ/FTZ: a subnormal float32 becomes a zero of the same sign."""
    x = np.asarray(x, _F32)
    return np.where(np.abs(x) < _TINY, np.copysign(_F32(0), x), x).astype(_F32)


def _add(a, b) -> np.ndarray:
    return _flush(np.add(a, b, dtype=_F32))


def _sub(a, b) -> np.ndarray:
    return _flush(np.subtract(a, b, dtype=_F32))


def _mul(a, b) -> np.ndarray:
    return _flush(np.multiply(a, b, dtype=_F32))


def _div(a, b) -> np.ndarray:
    return _flush(np.divide(a, b, dtype=_F32))


def fma(a, b, c) -> np.ndarray:
    """``a * b + c`` for float32 operands, rounded once to float32 (then flushed).

    The product of two float32 values is exact in float64. The float64 sum
    ``s = p + c`` is rounded, and its error ``e`` is recovered exactly
    (Knuth's two-sum). Rounding ``s`` to float32 directly could round twice;
    instead ``s`` is first replaced by its neighbour towards ``e`` when ``s``
    is even and inexact ("round to odd"), which makes the final rounding to
    float32 (29 fewer significand bits) exactly the rounding of ``a * b + c``.
    """
    a, b, c = (np.asarray(v, _F32).astype(np.float64) for v in (a, b, c))
    with np.errstate(invalid="ignore", over="ignore"):
        p = a * b
        s = p + c
        c_part = s - p
        e = (p - (s - c_part)) + (c - c_part)
        s_bits = np.asarray(s).view(np.uint64)
        inexact_even = ((s_bits & 1) == 0) & (e != 0) & np.isfinite(e)
        s = np.where(inexact_even, np.nextafter(s, np.where(e > 0, np.inf, -np.inf)), s)
    return _flush(s.astype(_F32))


def _polynomial(x: np.ndarray, coefficients) -> np.ndarray:
    """Horner's rule, highest degree first, one fma per step."""
    result = np.full(np.shape(x), _F32(coefficients[0]), _F32)
    for c in coefficients[1:]:
        result = fma(result, x, _F32(c))
    return result


def _as_f32(x) -> np.ndarray:
    x = np.asarray(x)
    if x.dtype != _F32:
        raise TypeError(f"xla_math: expected a float32 array, got {x.dtype.name}")
    return x


# --- exp and log (Cephes' single-precision algorithms) --------------------------------

# Cephes' expf: e^r = 1 + r + r^2 P(r) on |r| <= ln(2)/2, and ln 2 split in two
# (C1 exact in 9 bits, C1 + C2 = ln 2 to float32 precision).
_EXP_C1 = 0.693359375
_EXP_C2 = -2.12194440e-4
_EXP_P: tuple[float, ...] = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2)
_EXP_P += (1.6666665459e-1, 5.0000001201e-1)


def exp(x) -> np.ndarray:
    """XLA CPU's float32 ``exp`` (Cephes' ``expf``).

    ``x`` is clamped to ``[-87.8, 88.8]``; ``n = floor(x log2(e) + 1/2)``
    (one fma) clamped to ``[-127, 127]``; ``r = x - n C1 - n C2`` (two fmas);
    ``e^r = 1 + (r + r^2 P(r))`` with ``P`` of degree 5 by Horner; the result
    is ``e^r * 2^n``, with ``2^n`` built from the exponent bits (``n = -127``
    gives 0). NaN stays NaN; +inf gives +inf (clamped to 88.8, which
    overflows), -inf gives 0.
    """
    x = _flush(_as_f32(x))
    with np.errstate(invalid="ignore", over="ignore"):
        clamped = np.where(np.isnan(x), x, np.clip(x, _F32(-87.8), _F32(88.8)))
        n = np.floor(fma(clamped, _F32(1.44269504088896341), _F32(0.5)))
        n = np.clip(n, _F32(-127), _F32(127))
        r = fma(-_F32(_EXP_C1), n, clamped)
        r = fma(-_F32(_EXP_C2), n, r)
        z = _polynomial(r, _EXP_P)
        z = _add(_F32(1), fma(z, _mul(r, r), r))
        n_int = np.nan_to_num(n).astype(np.int32)
        two_to_n = ((n_int + 127).astype(np.uint32) << np.uint32(23)).view(_F32)
        return _mul(z, two_to_n)


# Cephes' logf: log(1 + f) = f - f^2/2 + f^3 P(f) on sqrt(1/2) <= 1 + f < sqrt(2).
_LOG_P: tuple[float, ...] = (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1)
_LOG_P += (1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1)
_LOG_P += (3.3333331174e-1,)


def log(x) -> np.ndarray:
    """XLA CPU's float32 ``log`` (Cephes' ``logf``, as in Eigen).

    ``x = m 2^e`` with ``m`` in ``[1/2, 1)`` (read from the bits); if
    ``m < sqrt(1/2)`` then ``f = 2m - 1`` and ``e -= 1``, else ``f = m - 1``.
    ``P(f)`` (degree 8) is evaluated as three cubics in ``f`` combined with
    ``f^3`` (fmas), and ``log x = (f - f^2/2) + (f^3 P(f) + e C2) + e C1``
    with ``C1 + C2 = ln 2`` as in :func:`exp`. 0 gives -inf, +inf gives
    +inf, negative numbers and NaN give NaN.
    """
    x = _flush(_as_f32(x))
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        bits = np.maximum(x, _TINY).view(np.uint32)  # 0 and negatives: patched below
        exponent = (bits >> np.uint32(23)).astype(np.int32) - 126
        m = ((bits & np.uint32(0x807FFFFF)) | np.uint32(0x3F000000)).view(_F32)
        below = m < _F32(0.707106781186547524)
        e = np.where(below, exponent - 1, exponent).astype(_F32)
        f = _add(_sub(m, _F32(1)), np.where(below, m, _F32(0)))
        f2 = _mul(f, f)
        f3 = _mul(f2, f)
        p = _LOG_P
        y = fma(fma(f, _F32(p[0]), _F32(p[1])), f, _F32(p[2]))
        y1 = fma(fma(f, _F32(p[3]), _F32(p[4])), f, _F32(p[5]))
        y2 = fma(fma(f, _F32(p[6]), _F32(p[7])), f, _F32(p[8]))
        y = fma(fma(y, f3, y1), f3, y2)
        y = fma(y, f3, _mul(_F32(_EXP_C2), e))
        result = fma(_F32(_EXP_C1), e, _add(fma(_F32(-0.5), f2, f), y))
        result = np.where(x > 0, result, _F32(np.nan))
        result = np.where(x == 0, _F32(-np.inf), result)
        return np.where(x == np.inf, _F32(np.inf), result).astype(_F32)


# Cephes' log1p: log(1 + x) = x - x^2/2 + x^3 N(x)/D(x) for |x| < sqrt(2) - 1.
_LOG1P_N: tuple[float, ...] = (4.5270000862445199635215e-5, 4.9854102823193375972212e-1)
_LOG1P_N += (6.5787325942061044846969e0, 2.9911919328553073277375e1)
_LOG1P_N += (6.0949667980987787057556e1, 5.7112963590585538103336e1)
_LOG1P_N += (2.0039553499201281259648e1,)
_LOG1P_D: tuple[float, ...] = (1.0, 1.5062909083469192043167e1, 8.3047565967967209469434e1)
_LOG1P_D += (2.2176239823732856465394e2, 3.0909872225312059774938e2)
_LOG1P_D += (2.1642788614495947685003e2, 6.0118660497603843919306e1)


def log1p(x) -> np.ndarray:
    """XLA's ``log1p``: ``log(1 + x)`` (:func:`log`) for ``|x| >= sqrt(2) - 1``,
    else Cephes' rational approximation
    ``x + (-x^2/2 + x^3 N(x)/D(x))`` with ``N``, ``D`` of degree 6 (Horner,
    fmas)."""
    x = _flush(_as_f32(x))
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        large = log(_add(x, _F32(1)))
        x2 = _mul(x, x)
        ratio = _div(_polynomial(x, _LOG1P_N), _polynomial(x, _LOG1P_D))
        small = _add(x, fma(_F32(-0.5), x2, _mul(_mul(x, x2), ratio)))
        return np.where(np.abs(x) < _F32(0.41421356237309504880), small, large).astype(_F32)


# --- tanh, expm1, logistic --------------------------------------------------------------

# Eigen's float tanh: x P(x^2) / Q(x^2), P of degree 6 and Q of degree 3 in x^2.
_TANH_P: tuple[float, ...] = (-2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11)
_TANH_P += (5.12229709037114e-08, 1.48572235717979e-05, 6.37261928875436e-04)
_TANH_P += (4.89352455891786e-03,)
_TANH_Q: tuple[float, ...] = (1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03)
_TANH_Q += (4.89352518554385e-03,)


def tanh(x) -> np.ndarray:
    """XLA CPU's float32 ``tanh`` (Eigen's rational approximation).

    ``|x| < 0.0004`` gives ``x`` itself (unflushed); ``|x| >= 20`` gives
    ``copysign(1, x)``; otherwise ``x`` is clamped to ``+-7.99881172180175781``
    (where the approximation reaches exactly 1 with fmas) and the result is
    ``x P(x^2) / Q(x^2)`` (Horner, fmas). NaN gives NaN.
    """
    raw = _as_f32(x)
    x = _flush(raw)
    with np.errstate(invalid="ignore", over="ignore"):
        bound = _F32(7.99881172180175781)
        clamped = np.where(np.isnan(x), x, np.clip(x, -bound, bound))
        x2 = _mul(clamped, clamped)
        ratio = _div(_mul(clamped, _polynomial(x2, _TANH_P)), _polynomial(x2, _TANH_Q))
        result = np.where(np.abs(x) < _F32(0.0004), raw, ratio)
        return np.where(np.abs(x) >= _F32(20), np.copysign(_F32(1), x), result).astype(_F32)


def expm1(x) -> np.ndarray:
    """XLA's ``expm1``: ``exp(x) - 1`` for ``|x| > 1/2``, else
    ``tanh(x/2) * (exp(x) + 1)`` (no cancellation); ``x`` itself (unflushed)
    where ``x/2`` is zero (after flushing)."""
    raw = _as_f32(x)
    x = _flush(raw)
    with np.errstate(invalid="ignore", over="ignore"):
        half = _mul(x, _F32(0.5))
        e = exp(x)
        small = _mul(tanh(half), _add(e, _F32(1)))
        result = np.where(np.abs(x) > _F32(0.5), _sub(e, _F32(1)), small)
        return np.where(half == 0, raw, result).astype(_F32)


def logistic(x) -> np.ndarray:
    """XLA's ``logistic``: ``1 / (1 + exp(-x))`` with :func:`exp`."""
    x = _flush(_as_f32(x))
    with np.errstate(over="ignore", divide="ignore"):
        return _div(_F32(1), _add(_F32(1), exp(-x)))


# --- erf and erf_inv ------------------------------------------------------------------

# Eigen's float erf: x P(x^2) / Q(x^2), P of degree 4 and Q of degree 6 in x^2.
_ERF_P: tuple[float, ...] = (0.00022905065861350646, 0.0034082910107109506, 0.050955695062380861)
_ERF_P += (0.18520832239976145, 1.128379143519084)
_ERF_Q: tuple[float, ...] = (-1.1791602954361697e-7, 0.000023547966471313185, 0.0010179625278914885)
_ERF_Q += (0.014070470171167667, 0.11098505178285362, 0.49746925110067538, 1.0)


def erf(x) -> np.ndarray:
    """XLA CPU's float32 ``erf`` (Eigen's rational approximation):
    ``copysign(1, x)`` for ``|x| >= 3.832506856900711`` (where erf rounds to
    1), else ``x P(x^2) / Q(x^2)`` (Horner, fmas). NaN gives NaN."""
    x = _flush(_as_f32(x))
    with np.errstate(invalid="ignore", over="ignore"):
        x2 = _mul(x, x)
        ratio = _div(_mul(x, _polynomial(x2, _ERF_P)), _polynomial(x2, _ERF_Q))
        return np.where(np.abs(x) >= _F32(3.832506856900711), np.copysign(_F32(1), x), ratio)


# M. Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011):
# single-precision polynomials in w = -log(1 - x^2), for w < 5 in (w - 2.5)
# and otherwise in (sqrt(w) - 3).
_GILES_CENTRAL: tuple[float, ...] = (
    2.81022636e-08,
    3.43273939e-07,
    -3.5233877e-06,
    -4.39150654e-06,
)
_GILES_CENTRAL += (0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_GILES_TAIL: tuple[float, ...] = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844)
_GILES_TAIL += (0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def erf_inv(x) -> np.ndarray:
    """The float32 ``erf_inv`` of CHLO's expansion, as XLA compiles it:
    ``w = -log1p(-x^2)`` (:func:`log1p`); ``p`` is Giles' central polynomial
    in ``w - 2.5`` if ``w < 5``, else his tail polynomial in ``sqrt(w) - 3``
    (Horner, fmas, both evaluated with the coefficients selected per
    element); the result is ``p x``, ``+-inf`` at ``x = +-1`` and NaN for
    ``|x| > 1``."""
    x = _flush(_as_f32(x))
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        w = -log1p(-_mul(x, x))
        central = w < _F32(5)
        t = np.where(central, _sub(w, _F32(2.5)), _sub(np.sqrt(w), _F32(3)))
        p = np.where(central, _F32(_GILES_CENTRAL[0]), _F32(_GILES_TAIL[0]))
        for a, b in zip(_GILES_CENTRAL[1:], _GILES_TAIL[1:], strict=True):
            p = fma(p, t, np.where(central, _F32(a), _F32(b)))
        result = _mul(p, x)
        result = np.where(np.abs(x) == 1, _mul(x, _F32(np.inf)), result)
        return np.where(np.abs(x) > 1, _F32(np.nan), result).astype(_F32)


# Lanczos coefficients (g = 7) of CHLO's lgamma expansion, as float32 constants
_LANCZOS = (
    676.520386, -1259.13916, 771.323425, -176.615036, 12.5073433, -0.138571098,
    9.98436917e-06, 1.50563267e-07,
)  # fmt: skip


def lgamma(x) -> np.ndarray:
    """The float32 ``lgamma`` of CHLO's expansion, as XLA compiles it: for
    ``x >= 1/2`` with ``z = x - 1`` the Lanczos sum ``1 + sum c_i / (z + i)``
    (i = 1..8), ``t = z + 7.5``, ``log t`` as ``log1p(z * (1/7.5)) +
    log 7.5`` (XLA's product with the rounded reciprocal), and ``(z + 1/2 -
    t / log t) * log t + log(2 pi)/2`` as one fma, plus ``log`` of the sum;
    below 1/2 the reflection ``log pi - log|sin(pi frac)| - lgamma(1 - x)``
    (``frac`` the distance to the nearest integer; ``+inf`` at the poles);
    ``+inf`` at ``+-inf``. Bit for bit XLA's for ``x >= 1/2``; in the
    reflection the host's ``sinf`` (NumPy's) may differ from XLA's by an ulp
    (99.4 % of inputs in (-20, 0.5) bit-equal)."""
    x = _flush(_as_f32(x))
    with np.errstate(all="ignore"):
        reflect = x < _F32(0.5)
        z = np.where(reflect, -x, _sub(x, _F32(1)))
        series = _add(_div(_F32(_LANCZOS[0]), _add(z, _F32(1))), _F32(1))
        for i, coefficient in enumerate(_LANCZOS[1:], start=2):
            series = _add(series, _div(_F32(coefficient), _add(z, _F32(i))))
        log_t = _add(log1p(_mul(z, _F32(1) / _F32(7.5))), _F32(2.01490307))
        ratio = _div(_add(z, _F32(7.5)), log_t)
        log_y = fma(_sub(_add(z, _F32(0.5)), ratio), log_t, _F32(0.918938518))
        log_y = _add(log_y, log(series))
        magnitude = np.abs(x)
        frac = _sub(magnitude, np.floor(magnitude))
        frac = np.where(_F32(0.5) < frac, _sub(_F32(1), frac), frac)
        log_sin = log(np.sin(_mul(frac, _F32(np.pi))).astype(_F32))
        reflected = np.where(
            np.isfinite(log_sin), _sub(_sub(_F32(1.14472985), log_sin), log_y), -log_sin
        )
        out = np.where(reflect, reflected, log_y)
        return np.where(magnitude == np.inf, _F32(np.inf), out).astype(_F32)


# --- tan: the C library's tanf, which XLA CPU calls ----------------------------------
#
# XLA CPU compiles float32 tan into a call to the host's `tanf`. The PJRT
# plugin and jaxlib link the system libm dynamically, so its bits are those of
# the machine's C library: this is glibc's tanf as of glibc 2.28-2.40 (a
# double-precision range reduction, then the fdlibm float kernel, x86-64
# build without fma), checked bit for bit against glibc 2.36.


def _pi_times_2_to(bits: int) -> int:
    """floor(pi * 2**bits), by Machin's formula in integer arithmetic."""
    guard = 32
    one = 1 << (bits + guard)

    def arctan_inverse(n: int) -> int:  # arctan(1/n) * 2**(bits + guard)
        term = total = one // n
        k, sign = 1, -1
        while term:
            term //= n * n
            total += sign * (term // (2 * k + 1))
            sign, k = -sign, k + 1
        return total

    return (16 * arctan_inverse(5) - 4 * arctan_inverse(239)) >> guard


_TWO_OVER_PI_BITS = 400
_TWO_OVER_PI = (2 << (2 * _TWO_OVER_PI_BITS)) // _pi_times_2_to(_TWO_OVER_PI_BITS)
# word i: bits 8i-24 .. 8i+8 of the binary fraction of 2/pi (0xa2, 0xa2f9, ...)
_TWO_OVER_PI_WORDS = np.array(
    [((_TWO_OVER_PI << (8 * i + 8)) >> _TWO_OVER_PI_BITS) & 0xFFFFFFFF for i in range(24)],
    np.uint64,
)
# the fdlibm tan kernel's coefficients: tan(x) = x + x^3 T0 + x^5 (T1 + T2 x^2 + ...)
_TAN_T: tuple[float, ...] = (3.3333334327e-01, 1.3333334029e-01, 5.3968254477e-02, 2.1869488060e-02)
_TAN_T += (8.8632395491e-03, 3.5920790397e-03, 1.4562094584e-03, 5.8804126456e-04)
_TAN_T += (2.4646313977e-04, 7.8179444245e-05, 7.1407252108e-05, -1.8558637748e-05)
_TAN_T += (2.5907305826e-05,)


def _reduce_large(bits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """|x| mod pi/2 for |x| >= 120 (Payne-Hanek): the 24-bit significand times
    96 bits of 2/pi chosen by the exponent, in 64-bit integer arithmetic; the
    top two bits of the product's integer part give the quadrant ``n``, the
    rest, rounded to the nearest quadrant boundary, times pi/2 * 2^-62, the
    remainder (a float64, of the sign of ``|x|``)."""
    bits = bits.astype(np.uint64)
    word = ((bits >> np.uint64(26)) & np.uint64(15)).astype(np.int64)
    shift = (bits >> np.uint64(23)) & np.uint64(7)
    m = ((bits & np.uint64(0xFFFFFF)) | np.uint64(0x800000)) << shift
    with np.errstate(over="ignore"):
        low = (m * _TWO_OVER_PI_WORDS[word]) & np.uint64(0xFFFFFFFF)
        mid = m * _TWO_OVER_PI_WORDS[word + 4]
        high = m * _TWO_OVER_PI_WORDS[word + 8]
        frac = ((high >> np.uint64(32)) | (low << np.uint64(32))) + mid
        n = (frac + (np.uint64(1) << np.uint64(61))) >> np.uint64(62)
        frac = frac - (n << np.uint64(62))
    return frac.view(np.int64).astype(np.float64) * (np.pi / 2 * 2.0**-62), n.astype(np.int64)


def _tan_kernel(x: np.ndarray, y: np.ndarray, odd: np.ndarray) -> np.ndarray:
    """fdlibm's ``__kernel_tanf(x, y, iy)``: tan(x + y) for |x + y| <= pi/4, or
    -1/tan(x + y) where ``odd`` (``iy = -1``), every step rounded to float32.
    Above 0.6744 it uses tan(pi/4 - x) = (1 - tan x)/(1 + tan x)."""
    f = _F32
    iy = np.where(odd, f(-1), f(1))
    hx = x.view(np.int32)
    ix = hx & 0x7FFFFFFF
    big = ix >= 0x3F2CA140
    sign = np.where(hx < 0, f(-1), f(1))
    with np.errstate(all="ignore"):
        xa, ya = np.where(big, np.abs(x), x), np.where(big & (hx < 0), -y, y)
        folded = (f(7.8539812565e-01) - xa).astype(f) + (f(3.7748947079e-08) - ya).astype(f)
        x = np.where(big, folded, xa).astype(f)
        y = np.where(big, f(0), ya).astype(f)
        z = (x * x).astype(f)
        w = (z * z).astype(f)

        def horner(coefficients):
            acc = f(coefficients[-1])
            for c in reversed(coefficients[:-1]):
                acc = (f(c) + (w * acc).astype(f)).astype(f)
            return acc

        r = horner(_TAN_T[1::2])
        v = (z * horner(_TAN_T[2::2])).astype(f)
        s = (z * x).astype(f)
        r = (y + (z * ((s * (r + v).astype(f)).astype(f) + y).astype(f)).astype(f)).astype(f)
        r = (r + (f(_TAN_T[0]) * s).astype(f)).astype(f)
        w = (x + r).astype(f)
        # above 0.6744: (1 - tan)/(1 + tan) written to keep the precision
        ratio = ((w * w).astype(f) / (w + iy).astype(f)).astype(f)
        folded_result = (sign * (iy - (f(2) * (x - (ratio - r).astype(f))).astype(f))).astype(f)
        # -1/(x + r) with a split reciprocal (12 low bits cleared) for accuracy
        w_hi = (w.view(np.uint32) & np.uint32(0xFFFFF000)).view(f)
        v = (r - (w_hi - x).astype(f)).astype(f)
        a = (f(-1) / w).astype(f)
        t = (a.view(np.uint32) & np.uint32(0xFFFFF000)).view(f)
        s = (f(1) + (t * w_hi).astype(f)).astype(f)
        negative_reciprocal = (t + (a * (s + (t * v).astype(f)).astype(f)).astype(f)).astype(f)
        result = np.where(odd, negative_reciprocal, w)
        result = np.where(big, folded_result, result)
        # |x| folded below 2^-13: the first-order expansion
        near = big & (np.abs(x) < f(2.0**-13))
        linear = (sign * iy * (f(1) - (f(2) * iy * x).astype(f))).astype(f)
        result = np.where(near, linear, result)
        # |x| < 2^-13 unfolded: x, or -1/x (+inf for +-0)
        tiny = ix < 0x39000000
        tiny_odd = np.where(ix == 0, (f(1) / np.abs(x)).astype(f), (f(-1) / x).astype(f))
        return np.where(tiny, np.where(odd, tiny_odd, x), result).astype(f)


def tan(x) -> np.ndarray:
    """XLA CPU's float32 ``tan``: the host C library's ``tanf`` (glibc 2.28-2.40).

    ``|x| <= pi/4`` goes to the kernel directly. Otherwise ``x`` is reduced
    modulo pi/2 in float64 -- for ``|x| < 120`` by ``x - n pi/2`` with
    ``n = round(x 2/pi)``, beyond by :func:`_reduce_large` -- and the
    remainder, split into a float32 head and tail, goes to the kernel with
    the quadrant's parity (odd quadrants give ``-1/tan``). The kernel is
    fdlibm's float tan (an odd polynomial of degree 27, its terms split in
    two interleaved halves). NaN and +-inf give NaN. The C library ignores
    the flush-to-zero mode for the tiny inputs it returns unchanged.
    """
    x = _as_f32(x)
    bits = x.view(np.uint32)
    magnitude = bits & np.uint32(0x7FFFFFFF)
    with np.errstate(invalid="ignore", over="ignore"):
        wide = x.astype(np.float64)
        n = np.rint(wide * (2 / np.pi))
        remainder = wide - n * (np.pi / 2)
        far, n_far = _reduce_large(bits)
        far = np.where(bits >> np.uint32(31) == 1, -far, far)
        near = magnitude < np.uint32(0x42F00000)  # |x| < 120
        remainder = np.where(near, remainder, far)
        n = np.where(near, np.nan_to_num(n).astype(np.int64), n_far)
        head = remainder.astype(_F32)
        tail = (remainder - head).astype(_F32)
        direct = magnitude <= np.uint32(0x3F490FDA)  # |x| <= pi/4
        head, tail = np.where(direct, x, head), np.where(direct, _F32(0), tail)
        odd = ~direct & (n & 1 == 1)
        result = _tan_kernel(head, tail, odd)
        return np.where(magnitude >= np.uint32(0x7F800000), _F32(np.nan), result).astype(_F32)


# --- pow: the C library's powf, which XLA CPU calls ------------------------------------
#
# XLA CPU compiles float32 pow into a call to the host's `powf`. Since glibc
# 2.28 that is the algorithm of ARM's optimized-routines (Szabolcs Nagy):
# log2(x) from a 16-entry table and a degree-5 polynomial, then
# exp2(y log2 x) from a 32-entry table and a degree-3 polynomial, all in
# float64, one rounding to float32 at the end. The log2 table's `1/c` and
# the two polynomials' coefficients are that algorithm's data (the centres `c`
# were chosen by a search, the coefficients fitted); log2(c) and the exp2
# table are roundings of exact values and are computed here.


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``a + b`` rounded, and its rounding error (exactly; Knuth)."""
    s = a + b
    b_part = s - a
    return s, (a - (s - b_part)) + (b - b_part)


def _two_product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``a * b`` rounded, and its rounding error (exactly; Dekker's product
    with Veltkamp's splitting into 26-bit halves)."""

    def halves(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        scaled = v * 134217729.0  # 2**27 + 1
        high = scaled - (scaled - v)
        return high, v - high

    p = a * b
    (ah, al), (bh, bl) = halves(a), halves(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def fma64(a, b, c) -> np.ndarray:
    """``a * b + c`` for float64 operands, rounded once (Boldo and Melquiond,
    "Emulation of FMA and correctly rounded sums", 2008): the exact product
    and sum are split into a rounded head and two error terms; the error
    terms are added with rounding to odd (the rounded sum moved one ulp
    towards the exact one when it is inexact and even), so that the final
    rounding to nearest of head + error is the rounding of the exact value.
    Valid where no intermediate overflows (as in :func:`pow`'s use)."""
    a, b, c = (np.asarray(v, np.float64) for v in (a, b, c))
    with np.errstate(invalid="ignore", over="ignore"):
        uh, ul = _two_product(a, b)
        th, tl = _two_sum(c, ul)
        vh, vl = _two_sum(uh, th)
        z, error = _two_sum(tl, vl)
        even = (np.asarray(z).view(np.uint64) & np.uint64(1)) == 0
        inexact_even = even & (error != 0) & np.isfinite(error)
        z = np.where(inexact_even, np.nextafter(z, np.where(error > 0, np.inf, -np.inf)), z)
        fused = vh + z
        return np.where(np.isfinite(fused), fused, a * b + c)


_POW_INVC = np.array([float.fromhex(h) for h in """
    0x1.661ec79f8f3bep+0 0x1.571ed4aaf883dp+0 0x1.49539f0f010bp+0 0x1.3c995b0b80385p+0
    0x1.30d190c8864a5p+0 0x1.25e227b0b8eap+0 0x1.1bb4a4a1a343fp+0 0x1.12358f08ae5bap+0
    0x1.0953f419900a7p+0 0x1p+0 0x1.e608cfd9a47acp-1 0x1.ca4b31f026aap-1
    0x1.b2036576afce6p-1 0x1.9c2d163a1aa2dp-1 0x1.886e6037841edp-1 0x1.767dcf5534862p-1
""".split()])  # fmt: skip


def _log2_of_centres() -> np.ndarray:
    """log2(c) = -log2(invc) for each table entry, rounded to float64 (from
    50-digit decimal logarithms; equal to the C library's table)."""
    from decimal import Decimal, localcontext

    with localcontext() as context:
        context.prec = 50
        ln2 = Decimal(2).ln()
        return np.array([float(-(Decimal(float(v)).ln() / ln2)) for v in _POW_INVC])


_POW_LOGC = _log2_of_centres()
# log2(1 + r) ~ r P(r), P of degree 4 (highest first); exp2(r) ~ 1 + r Q(r), Q of degree 2
_POW_LOG2_P = [float.fromhex(h) for h in """
    0x1.27616c9496e0bp-2 -0x1.71969a075c67ap-2 0x1.ec70a6ca7baddp-2 -0x1.7154748bef6c8p-1
    0x1.71547652ab82bp0
""".split()]  # fmt: skip
_POW_EXP2_Q = [
    float.fromhex(h)
    for h in "0x1.c6af84b912394p-5 0x1.ebfce50fac4f3p-3 0x1.62e42ff0c52d6p-1".split()
]


def _exp2_table() -> np.ndarray:
    """Entry ``i``: the bits of 2**(i/32) rounded to the nearest float64 (its
    53-bit significand ``m``, the integer nearest to 2**(52 + i/32), found by
    comparing ``(2m +- 1)**32`` with ``2**(32 * 53 + i)`` exactly), minus ``i``
    in the exponent's units / 32 (``i << 47``), so that adding ``k << 47``
    for ``k = 32 q + i`` gives 2**(k/32)."""
    entries = []
    for i in range(32):
        m = int(round(2.0 ** (52 + i / 32)))
        target = 2 ** (32 * 53 + i)
        while (2 * m + 1) ** 32 <= target:
            m += 1
        while (2 * m - 1) ** 32 > target:
            m -= 1
        bits = (1023 << 52) + (m - 2**52)  # the exponent of 1.0, significand m
        entries.append((bits - (i << 47)) % 2**64)
    return np.array(entries, np.uint64)


_POW_EXP2_TABLE = _exp2_table()


def _odd_even_integer(bits: np.ndarray) -> np.ndarray:
    """For float32 bits of a nonzero finite value: 0 if not an integer, 1 if an
    odd integer, 2 if an even one."""
    exponent = (bits >> 23) & 0xFF
    shift = np.clip(0x7F + 23 - exponent, 0, 31)
    fraction = bits & ((np.int64(1) << shift) - 1)
    odd = ((bits >> shift) & 1) == 1
    integer = np.where(fraction != 0, 0, np.where(odd, 1, 2))
    return np.where(exponent < 0x7F, 0, np.where(exponent > 0x7F + 23, 2, integer))


def pow(x, y) -> np.ndarray:  # noqa: A001 (the function's name)
    """XLA CPU's float32 ``pow``: the host C library's ``powf`` (glibc >= 2.28,
    its x86-64 build with fused multiply-adds), under XLA's DAZ/FTZ flags.

    ``|x| = 2^k z`` with ``z`` in ``[0x3f330000, 2 * 0x3f330000)`` (about
    ``[0.7, 1.4)``, read from the bits); ``i`` = the 4 bits of ``z`` below its
    exponent picks ``invc``/``logc``; ``r = z invc - 1`` (fma) and
    ``log2|x| = k + logc + r P(r)`` (the polynomial in a pipelined order of
    fmas). ``t = y log2|x|`` (float64 product); beyond ``0x1.fffffffd1d571p+6``
    the result is inf, at or below -150 it is 0. Else ``t = k'/32 + r'``
    (``k'`` by adding and subtracting ``1.5 * 2**47``), and
    ``2**t = T[k' mod 32] 2**(k' div 32) (1 + r' Q(r'))`` (fmas), rounded to
    float32, flushed to zero if subnormal; for ``x < 0`` and odd integer
    ``y`` the sign bit is set. A subnormal ``x`` is read as 0 by the C
    library's normalizing product (DAZ), which leaves a meaningless exponent
    the code then uses: modelled as such. Special cases as C99 (``pow(x, 0)
    = 1``, ``pow(1, y) = 1``, NaN, zeros and infinities, ``x < 0`` and
    non-integer ``y`` gives NaN).
    """
    x, y = np.broadcast_arrays(_as_f32(x), _as_f32(y))
    ix = x.view(np.uint32).astype(np.int64)
    iy = y.view(np.uint32).astype(np.int64)
    with np.errstate(all="ignore"):
        y_kind = _odd_even_integer(iy)
        negative = (ix & 0x80000000) != 0
        odd_power = negative & (y_kind == 1)
        magnitude = ix & 0x7FFFFFFF
        # a subnormal x: (x * 2**23) is 0 under DAZ, minus 23 in the exponent field
        normalized = np.where(magnitude < 0x00800000, -(23 << 23) & 0xFFFFFFFF, magnitude)
        # log2|x|
        offset = (normalized - 0x3F330000) & 0xFFFFFFFF
        index = (offset >> 19) % 16
        top = offset & 0xFF800000
        z = ((normalized - top) & 0xFFFFFFFF).astype(np.uint32).view(_F32).astype(np.float64)
        k = (top.astype(np.uint32).view(np.int32) >> 23).astype(np.float64)
        r = fma64(z, _POW_INVC[index], -1.0)
        p = _POW_LOG2_P
        r2 = r * r
        high = fma64(p[0], r, p[1])
        middle = fma64(p[2], r, p[3])
        low = fma64(p[4], r, _POW_LOGC[index] + k)
        log2_x = fma64(high, r2 * r2, fma64(middle, r2, low))
        t = y.astype(np.float64) * log2_x
        # 2**t
        shift = 1.5 * 2.0**47
        shifted = t + shift
        kbits = shifted.view(np.uint64)
        r = t - (shifted - shift)
        scale_bits = _POW_EXP2_TABLE[(kbits % np.uint64(32)).astype(np.int64)]
        sign_bit = np.where(odd_power, np.uint64(1) << np.uint64(63), np.uint64(0))
        scale = (scale_bits + (kbits << np.uint64(47)) + sign_bit).view(np.float64)
        q = _POW_EXP2_Q
        poly = fma64(fma64(q[0], r, q[1]), r * r, fma64(q[2], r, 1.0))
        result = _flush((poly * scale).astype(_F32))
        signed = np.where(odd_power, _F32(-1), _F32(1))
        result = np.where(t > float.fromhex("0x1.fffffffd1d571p+6"), signed * _F32(np.inf), result)
        result = np.where(t <= -150.0, signed * _F32(0), result)
        result = np.where(negative & (y_kind == 0), _F32(np.nan), result)
        # x zero, infinite or NaN: x^2 (signed for odd y), or its reciprocal for y < 0
        x_special = ((2 * ix - 1) & 0xFFFFFFFF) >= 2 * 0x7F800000 - 1
        square = np.where(odd_power, -(x * x), x * x).astype(_F32)
        result = np.where(x_special, np.where(iy & 0x80000000, _F32(1) / square, square), result)
        # y zero, infinite or NaN
        y_special = ((2 * iy - 1) & 0xFFFFFFFF) >= 2 * 0x7F800000 - 1
        y_nan_or_x_nan = (2 * magnitude > 2 * 0x7F800000) | ((2 * iy) & 0xFFFFFFFF > 2 * 0x7F800000)
        below_one = magnitude < 0x3F800000
        by_y = np.where(below_one == ((iy & 0x80000000) == 0), _F32(0), (y * y).astype(_F32))
        by_y = np.where(magnitude == 0x3F800000, _F32(1), by_y)
        by_y = np.where(y_nan_or_x_nan, (x + y).astype(_F32), by_y)
        by_y = np.where((ix == 0x3F800000) | ((2 * iy) & 0xFFFFFFFF == 0), _F32(1), by_y)
        return np.where(y_special, by_y, result).astype(_F32)
