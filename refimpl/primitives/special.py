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

__all__ = ["digamma", "erf_inv", "erfc", "lgamma", "polygamma", "random_gamma_grad"]

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


for _prim in (erf_inv_p, erfc_p, lgamma_p, digamma_p):
    _prim.def_batch(batching.elementwise_batch_rule(_prim))

polygamma_p = ew.binary("polygamma", ew._in_float32(_polygamma), ew.FLOAT)
polygamma_p.def_lowering(ew._hlo_binary("polygamma", dialect="chlo", in_float32=True))
polygamma_p.def_mask(ew._elementwise_mask_rule)
polygamma_p.def_batch(batching.elementwise_batch_rule(polygamma_p))


def _scalar_like(value: float, x: Any) -> Any:
    aval = tracing.get_aval(x, "special", 0)
    return tracing.TypedScalar(value, aval.dtype, aval.weak_type)


# d erf_inv = sqrt(pi)/2 exp(y^2), d erfc = -2/sqrt(pi) exp(-x^2),
# d lgamma = digamma, d digamma = polygamma(1, .)
ew._unary_jvp(
    erf_inv_p,
    lambda t, y, x: ew.mul(
        t, ew.mul(_scalar_like(math.sqrt(math.pi) / 2, y), ew.exp(ew.mul(y, y)))
    ),
)
ew._unary_jvp(
    erfc_p,
    lambda t, y, x: ew.mul(
        t, ew.mul(_scalar_like(-2 / math.sqrt(math.pi), x), ew.exp(ew.neg(ew.mul(x, x))))
    ),
)
ew._unary_jvp(lgamma_p, lambda t, y, x: ew.mul(t, digamma_p.bind(x)))
ew._unary_jvp(digamma_p, lambda t, y, x: ew.mul(t, polygamma_p.bind(_scalar_like(1.0, x), x)))


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


# --- random_gamma_grad: the implicit derivative of a Gamma sample ---------------------------
#
# A Gamma(a) sample x = F^-1(u; a) (F the regularized lower incomplete gamma
# function P(a, x)) moves with `a` at fixed u by dx/da = -(dP/da) / (dP/dx),
# with dP/dx = x^(a-1) e^-x / Gamma(a). dP/da comes from the power series of
# P (x <= 1 or x <= a) or from the continued fraction of Q = 1 - P (else),
# each differentiated term by term alongside (the algorithm of Cephes' igam/
# igamc that XLA's RandomGammaGrad uses). The same code runs on NumPy arrays
# (the impl) and on tracers (the lowering, a program of primitives), through
# the two small namespaces below; loops run until every element has
# converged, converged elements keeping their values.


class _NumpyOps:
    @staticmethod
    def where(c, a, b):
        return np.where(c, a, b).astype(np.result_type(a, b), copy=False)

    @staticmethod
    def full(like, value):
        return np.full(np.shape(like), value, like.dtype)

    log = staticmethod(np.log)
    exp = staticmethod(np.exp)

    @staticmethod
    def lgamma(x):
        return _as_dtype(_lgamma)(x)

    @staticmethod
    def digamma(x):
        return _as_dtype(_digamma)(x)

    @staticmethod
    def while_loop(cond, body, state):
        while cond(state):
            state = body(state)
        return state

    @staticmethod
    def any(x):
        return bool(np.any(x))


class _LaxOps:
    @staticmethod
    def where(c, a, b):
        return ew.select_n(c, b, a)

    @staticmethod
    def full(like, value):
        aval = tracing.get_aval(like, "random_gamma_grad", 0)
        from refimpl import lax

        return lax.broadcast_in_dim(np.asarray(value, aval.dtype), aval.shape, ())

    log, exp = staticmethod(ew.log), staticmethod(ew.exp)
    lgamma, digamma = (
        staticmethod(lambda x: lgamma_p.bind(x)),
        staticmethod(lambda x: digamma_p.bind(x)),
    )

    @staticmethod
    def while_loop(cond, body, state):
        from refimpl import lax

        return lax.while_loop(cond, body, state)

    @staticmethod
    def any(x):
        from refimpl import lax

        aval = tracing.get_aval(x, "random_gamma_grad", 0)
        return lax.reduce_or(x, tuple(range(aval.ndim)))


def _gamma_series_grad(ops, x, a, enabled, eps):
    """-(dP/da) * x / (x^a e^-x / Gamma(a)) from P's power series
    ``sum_n x^n / (a (a+1) ... (a+n))`` and its term-wise derivative."""

    def body(state):
        on, r, c, ans, dc_da, dans_da = state
        r2 = r + 1.0
        dc_da2 = dc_da * (x / r2) - (c * x) / (r2 * r2)
        dans_da2 = dans_da + dc_da2
        c2 = c * (x / r2)
        ans2 = ans + c2
        more = on & (abs(dc_da2 / dans_da2) > eps)
        return (
            more,
            ops.where(on, r2, r),
            ops.where(on, c2, c),
            ops.where(on, ans2, ans),
            ops.where(on, dc_da2, dc_da),
            ops.where(on, dans_da2, dans_da),
        )

    one, zero = ops.full(a, 1.0), ops.full(a, 0.0)
    state = (enabled, a, one, one, zero, zero)
    _, _, _, ans, _, dans_da = ops.while_loop(lambda s: ops.any(s[0]), body, state)
    dlogax_da = ops.log(x) - ops.digamma(a + 1.0)
    return -(dans_da + ans * dlogax_da) * x / a


def _gamma_fraction_grad(ops, x, a, enabled, eps):
    """The same from the continued fraction of Q = 1 - P (Cephes' igamc),
    with the derivatives of its numerators and denominators carried along;
    at most 2000 terms."""

    def body(state):
        (on, ans, y, z, c, pkm1, qkm1, pkm2, qkm2, dpkm2, dqkm2, dpkm1, dqkm1, dans) = state
        c2, y2, z2 = c + 1.0, y + 1.0, z + 2.0
        yc = y2 * c2
        pk = pkm1 * z2 - pkm2 * yc
        qk = qkm1 * z2 - qkm2 * yc
        nonzero = qk != 0.0
        ans2 = ops.where(nonzero, pk / ops.where(nonzero, qk, ops.full(qk, 1.0)), ans)
        dpk = dpkm1 * z2 - pkm1 - dpkm2 * yc + pkm2 * c2
        dqk = dqkm1 * z2 - qkm1 - dqkm2 * yc + qkm2 * c2
        safe_qk = ops.where(nonzero, qk, ops.full(qk, 1.0))
        dans2 = ops.where(nonzero, (dpk - ans2 * dqk) / safe_qk, dans)
        change = ops.where(nonzero, abs(dans2 - dans), ops.full(dans, 1.0))
        # Keep the recurrences in range by rescaling all four by eps.
        big = abs(pk) > 1.0 / eps
        scale = ops.where(big, ops.full(pk, eps), ops.full(pk, 1.0))
        new = (pk, qk, pkm1, qkm1, dpk, dqk, dpkm1, dqkm1)
        pkm1n, qkm1n, pkm2n, qkm2n, dpkm1n, dqkm1n, dpkm2n, dqkm2n = (v * scale for v in new)
        more = on & (change > eps)
        keep = [
            (ans2, ans), (y2, y), (z2, z), (pkm1n, pkm1), (qkm1n, qkm1), (pkm2n, pkm2),
            (qkm2n, qkm2), (dpkm2n, dpkm2), (dqkm2n, dqkm2), (dpkm1n, dpkm1), (dqkm1n, dqkm1),
            (dans2, dans),
        ]  # fmt: skip
        kept = [ops.where(on, n, o) for n, o in keep]
        return (more, kept[0], kept[1], kept[2], c2, *kept[3:])

    y = 1.0 - a
    z = x + y + 1.0
    pkm2, qkm2 = ops.full(x, 1.0), x
    pkm1 = x + 1.0
    qkm1 = z * x
    ans = pkm1 / qkm1
    zero = ops.full(x, 0.0)
    dqkm1 = -x
    dans = (zero - ans * dqkm1) / qkm1
    state = (enabled, ans, y, z, zero, pkm1, qkm1, pkm2, qkm2, zero, zero, zero, dqkm1, dans)

    def going(s):
        return ops.any(s[0] & (s[4] < 2000.0))

    out = ops.while_loop(going, body, state)
    ans, dans = out[1], out[13]
    dlogax_da = ops.log(x) - ops.digamma(a)
    return (dans + ans * dlogax_da) * x


def _random_gamma_grad_generic(ops, a, x, eps, log_max):
    nan = (a != a) | (x != x)
    x_zero = x == 0.0
    domain = (x < 0.0) | (a <= 0.0)
    use_fraction = (x > 1.0) & (x > a)
    safe_x = ops.where(x_zero | domain | nan, ops.full(x, 1.0), x)
    safe_a = ops.where(domain | nan, ops.full(a, 1.0), a)
    log_ax = safe_a * ops.log(safe_x) - safe_x - ops.lgamma(safe_a)
    underflow = log_ax < -log_max
    enabled = ~(x_zero | domain | underflow | nan)
    series = _gamma_series_grad(ops, safe_x, safe_a, enabled & ~use_fraction, eps)
    fraction = _gamma_fraction_grad(ops, safe_x, safe_a, enabled & use_fraction, eps)
    out = ops.where(use_fraction, fraction, series)
    out = ops.where(x_zero, ops.full(out, 0.0), out)
    return ops.where(domain | nan, ops.full(out, np.nan), out)


def _random_gamma_grad_impl(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    info = np.finfo(a.dtype)
    with np.errstate(all="ignore"):
        a, x = np.broadcast_arrays(a, x)
        out = _random_gamma_grad_generic(
            _NumpyOps, np.array(a), np.array(x), float(info.eps), float(np.log(info.max))
        )
    return np.asarray(out, a.dtype)


def _random_gamma_grad_program(a: Any, x: Any) -> Any:
    from refimpl import lax

    dtype = tracing.get_aval(a, "random_gamma_grad", 0).dtype
    if dtype not in (np.float32, np.float64):  # in float32, as the impl
        wide = [lax.convert_element_type(v, np.float32) for v in (a, x)]
        return lax.convert_element_type(_random_gamma_grad_program(*wide), dtype)
    info = np.finfo(dtype)
    return _random_gamma_grad_generic(_LaxOps, a, x, float(info.eps), float(np.log(info.max)))


random_gamma_grad_p = ew.binary(
    "random_gamma_grad", ew._in_float32(_random_gamma_grad_impl), ew.FLOAT
)
random_gamma_grad_p.def_mask(ew._elementwise_mask_rule)
random_gamma_grad_p.def_batch(batching.elementwise_batch_rule(random_gamma_grad_p))


def _random_gamma_grad_lowering(ctx, a, x):
    from refimpl.primitives.decompositions import composite_lowering

    return composite_lowering("random_gamma_grad", _random_gamma_grad_program)(ctx, a, x)


random_gamma_grad_p.def_lowering(_random_gamma_grad_lowering)


def random_gamma_grad(a: Any, x: Any) -> Any:
    """``lax.random_gamma_grad``: ``dx/da`` of a Gamma(a, 1) sample ``x`` at a
    fixed quantile (implicit reparameterization), NaN for ``a <= 0`` or
    ``x < 0``, 0 at ``x = 0``. Not differentiable itself (as JAX)."""
    return random_gamma_grad_p.bind(a, x)
