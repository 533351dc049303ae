"""Special-function primitives: ``erf_inv``, ``erfc``, ``lgamma``, ``digamma``.

All four are unary, elementwise, accept floating-point types only and keep
the operand's dtype (float16/bfloat16 are computed in float32 and rounded
once, as for the other transcendental functions). Their lowerings are the
CHLO ops of the same names, which XLA expands into polynomial
approximations; the NumPy references below define the mathematical function
and agree with XLA to a few ulps (bit for bit for float32 ``erf_inv``, which
is XLA CPU's own evaluation, ``refimpl.primitives.xla_math``; see each impl).

* ``erf_inv(x)``: the ``y`` in ``(-inf, inf)`` with ``erf(y) = x`` for
  ``-1 < x < 1``; ``erf_inv(+-1) = +-inf``; NaN outside ``[-1, 1]``.
  Derivative ``sqrt(pi) / 2 * exp(erf_inv(x)**2)``.
* ``erfc(x) = 1 - erf(x)`` (computed without cancellation); derivative
  ``-2 / sqrt(pi) * exp(-x**2)``.
* ``lgamma(x) = log|Gamma(x)|``; ``+inf`` at the poles ``0, -1, -2, ...``.
  Derivative ``digamma(x)``.
* ``digamma(x) = d/dx log Gamma(x)``; NaN at the poles ``0, -1, -2, ...``
  (XLA's convention). Derivative ``polygamma(1, x)``.
* ``polygamma(m, x)``: the ``m``-th derivative of ``digamma`` (binary, both
  operands floats of one dtype; ``m`` a non-negative integer value, NaN
  otherwise); at the poles ``+inf`` for odd ``m`` and NaN for even ``m``
  (XLA's convention). Derivative in ``x``: ``polygamma(m + 1, x)``; ``m`` gets
  none.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from refimpl import tracing
from refimpl.primitives import elementwise as ew
from refimpl.primitives import xla_math
from refimpl.transforms import batching
from refimpl.transforms.ad_util import Zero, tangent_aval

__all__ = ["digamma", "erf_inv", "erfc", "lgamma", "polygamma"]

_F32 = np.dtype(np.float32)

# float32: Giles' polynomials in -log1p(-x^2) exactly as XLA CPU evaluates
# CHLO's expansion (fmas, XLA's log1p, flushed subnormals): bit-equal to pjrt.
_erf_inv_f32 = xla_math.erf_inv


def _erf_inv_f64(x: np.ndarray) -> np.ndarray:
    """The float32 approximation refined by Newton's method on ``erf(y) - x``
    in float64 (three steps: quadratic convergence from ~1e-7)."""
    erf = np.vectorize(math.erf, otypes=[np.float64])
    erfc = np.vectorize(math.erfc, otypes=[np.float64])
    a = np.abs(x)
    y = _erf_inv_f32(a.astype(_F32)).astype(np.float64)
    inside = a < 1
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        # a float64 x within 2**-25 of 1 rounds to 1 in float32: start from
        # the leading asymptotic term there instead
        start = np.sqrt(-np.log((1 - a) * (1 + a)))
        y0 = np.where(inside, np.where(np.isfinite(y), y, start), 0.0)
        tail = a > 0.5  # there erf(y) - a cancels; erfc(y) - (1 - a) does not
        for _ in range(6):
            slope = 2 / math.sqrt(math.pi) * np.exp(-y0 * y0)
            c = erfc(y0)
            # in the tail, Newton on log(erfc(y)) - log(1 - a), nearly linear in y
            step = np.where(tail, -np.log(c / (1 - a)) * c, erf(y0) - a) / slope
            y0 = np.where(inside, y0 - step, y0)
    return np.copysign(np.where(inside, y0, y), x)


def _erf_inv(x: np.ndarray) -> np.ndarray:
    if x.dtype == np.float64:
        return _erf_inv_f64(x)
    return _erf_inv_f32(x)


def _lgamma_scalar(v: float) -> float:
    if math.isnan(v):
        return v
    try:
        return math.lgamma(v)
    except ValueError:  # a pole: Gamma is infinite there
        return math.inf


def _lgamma(x: np.ndarray) -> np.ndarray:
    return np.vectorize(_lgamma_scalar, otypes=[np.float64])(x.astype(np.float64))


def _digamma_scalar(v: float) -> float:
    if math.isnan(v) or v == -math.inf:
        return math.nan
    if v == math.inf:
        return math.inf
    if v <= 0 and v == math.floor(v):
        return math.nan
    shift = 0.0
    if v < 0.5:  # reflection: psi(1 - x) - psi(x) = pi / tan(pi x)
        return _digamma_scalar(1.0 - v) - math.pi / math.tan(math.pi * v)
    while v < 10.0:  # recurrence: psi(x) = psi(x + 1) - 1 / x
        shift -= 1.0 / v
        v += 1.0
    inv2 = 1.0 / (v * v)
    # asymptotic series: log x - 1/2x - sum_k B_2k / (2k x^2k), k = 1..7
    series = 0.0
    for coefficient in (1 / 12, -691 / 32760, 1 / 132, -1 / 240, 1 / 252, -1 / 120, 1 / 12):
        series = series * inv2 + coefficient
    series *= inv2
    return shift + math.log(v) - 0.5 / v - series


def _digamma(x: np.ndarray) -> np.ndarray:
    return np.vectorize(_digamma_scalar, otypes=[np.float64])(x.astype(np.float64))


def _polygamma_scalar(m: float, v: float) -> float:
    """psi^(m)(v) for integer m >= 1: the recurrence
    psi^(m)(v) = psi^(m)(v + 1) - (-1)^m m! / v^(m+1) up to v >= 10 + m, then
    the asymptotic series (-1)^(m+1) [(m-1)!/v^m + m!/(2 v^(m+1))
    + sum_k B_2k (2k+m-1)! / ((2k)! v^(2k+m))]."""
    if math.isnan(m) or math.isnan(v) or m < 0 or m != math.floor(m):
        return math.nan
    m = int(m)
    if m == 0:
        return _digamma_scalar(v)
    if v <= 0 and v == math.floor(v):
        return math.inf if m % 2 else math.nan
    if v == math.inf:
        return 0.0
    if v == -math.inf:
        return math.nan
    sign = -1.0 if m % 2 == 0 else 1.0  # (-1)^(m+1)
    fact_m = math.factorial(m)
    shift = 0.0
    while v < 10.0 + m:
        shift += sign * fact_m / v ** (m + 1)
        v += 1.0
    bernoulli = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6)
    series = math.factorial(m - 1) / v**m + fact_m / (2 * v ** (m + 1))
    for k, b in enumerate(bernoulli, start=1):
        series += b * math.factorial(2 * k + m - 1) / (math.factorial(2 * k) * v ** (2 * k + m))
    return shift + sign * series


def _polygamma(m: np.ndarray, x: np.ndarray) -> np.ndarray:
    dtype = x.dtype
    wide = np.vectorize(_polygamma_scalar, otypes=[np.float64])
    return np.asarray(wide(m.astype(np.float64), x.astype(np.float64))).astype(dtype)


def _as_dtype(fn):
    def impl(x: np.ndarray) -> np.ndarray:
        return np.asarray(fn(x)).astype(x.dtype)

    return impl


def _erfc(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erfc, otypes=[np.float64])(x.astype(np.float64))


erfc_p = ew.unary("erfc", ew._in_float32(_as_dtype(_erfc)), ew.FLOAT)
erf_inv_p = ew.unary("erf_inv", ew._in_float32(_as_dtype(_erf_inv)), ew.FLOAT)
lgamma_p = ew.unary("lgamma", ew._in_float32(_as_dtype(_lgamma)), ew.FLOAT)
digamma_p = ew.unary("digamma", ew._in_float32(_as_dtype(_digamma)), ew.FLOAT)

for _prim, _op in [
    (erf_inv_p, "erf_inv"), (erfc_p, "erfc"), (lgamma_p, "lgamma"), (digamma_p, "digamma"),
]:  # fmt: skip
    _prim.def_lowering(ew._hlo_unary(_op, dialect="chlo", in_float32=True))
    _prim.def_mask(ew._elementwise_mask_rule)


def _unary_batch(prim):
    def rule(args, dims, **params):
        return prim.bind(*args, **params), dims[0]

    return rule


for _prim in (erf_inv_p, erfc_p, lgamma_p, digamma_p):
    _prim.def_batch(_unary_batch(_prim))

polygamma_p = ew.binary("polygamma", ew._in_float32(_polygamma), ew.FLOAT)
polygamma_p.def_lowering(ew._hlo_binary("polygamma", dialect="chlo", in_float32=True))
polygamma_p.def_mask(ew._elementwise_mask_rule)
polygamma_p.def_batch(batching.elementwise_batch_rule(polygamma_p))


def _scalar_like(value: float, x: Any) -> Any:
    aval = tracing.get_aval(x, "special", 0)
    return tracing.TypedScalar(value, aval.dtype, aval.weak_type)


@erf_inv_p.def_jvp
def _erf_inv_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    y = erf_inv_p.bind(x)
    if isinstance(t, Zero):
        return y, t
    scale = ew.mul(_scalar_like(math.sqrt(math.pi) / 2, y), ew.exp(ew.mul(y, y)))
    return y, ew.mul(t, scale)


@erfc_p.def_jvp
def _erfc_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    y = erfc_p.bind(x)
    if isinstance(t, Zero):
        return y, t
    slope = ew.mul(_scalar_like(-2 / math.sqrt(math.pi), x), ew.exp(ew.neg(ew.mul(x, x))))
    return y, ew.mul(t, slope)


@lgamma_p.def_jvp
def _lgamma_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    y = lgamma_p.bind(x)
    if isinstance(t, Zero):
        return y, t
    return y, ew.mul(t, digamma_p.bind(x))


@digamma_p.def_jvp
def _digamma_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    y = digamma_p.bind(x)
    if isinstance(t, Zero):
        return y, t
    return y, ew.mul(t, polygamma_p.bind(_scalar_like(1.0, x), x))


@polygamma_p.def_jvp
def _polygamma_jvp(primals, tangents):
    (m, x), (_, t) = primals, tangents
    y = polygamma_p.bind(m, x)
    if isinstance(t, Zero):
        return y, Zero(tangent_aval(tracing.get_aval(y, "polygamma", 0)))
    return y, ew.mul(t, polygamma_p.bind(ew.add(m, _scalar_like(1.0, m)), x))


def polygamma(m: Any, x: Any) -> Any:
    """``lax.polygamma``: the ``m``-th derivative of ``digamma`` at ``x``."""
    return polygamma_p.bind(m, x)


def erf_inv(x: Any) -> Any:
    """``lax.erf_inv``: the inverse error function (see the module docstring)."""
    return erf_inv_p.bind(x)


def erfc(x: Any) -> Any:
    """``lax.erfc``: ``1 - erf(x)``, without the cancellation for large ``x``."""
    return erfc_p.bind(x)


def lgamma(x: Any) -> Any:
    """``lax.lgamma``: ``log|Gamma(x)|``."""
    return lgamma_p.bind(x)


def digamma(x: Any) -> Any:
    """``lax.digamma``: the logarithmic derivative of Gamma."""
    return digamma_p.bind(x)
