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
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from refimpl import tracing
from refimpl.core import ShapedArray
from refimpl.primitives import (
    batch_rules,
    control_flow,
    reductions,
    rule_context,
    structural,
    xla_math,
)
from refimpl.primitives import elementwise as ew
from refimpl.primitives.base import (
    Primitive,
    all_weak,
    check_dtype_in,
    check_same_dtypes,
)
from refimpl.primitives.decompositions import composite_lowering
from refimpl.transforms.ad_util import Zero, tangent_aval

__all__ = [
    "bessel_i0e",
    "bessel_i1e",
    "betainc",
    "digamma",
    "erf_inv",
    "erfc",
    "igamma",
    "igammac",
    "lgamma",
    "polygamma",
    "random_gamma_grad",
    "regularized_incomplete_beta",
    "zeta",
]

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
    """float32 (and float16/bfloat16, computed in it): XLA's expansion
    (``xla_math.lgamma``, JAX's bits); float64: the correctly rounded value."""
    if x.dtype == np.float32:
        return xla_math.lgamma(x)
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
    if v == math.inf:  # XLA's value (its series gives NaN), not the limit 0
        return math.nan
    # -inf is a pole as in XLA; tested apart since math.floor(-inf) raises OverflowError
    if v == -math.inf or (v <= 0 and v == math.floor(v)):
        return math.inf if m % 2 else math.nan
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
    _prim.def_batch(batch_rules.elementwise_batch_rule(_prim))

polygamma_p = ew.binary("polygamma", ew._in_float32(_polygamma), ew.FLOAT)
polygamma_p.def_lowering(ew._hlo_binary("polygamma", dialect="chlo", in_float32=True))
polygamma_p.def_mask(ew._elementwise_mask_rule)
polygamma_p.def_batch(batch_rules.elementwise_batch_rule(polygamma_p))


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
    # assigned after the class, with the functions that first use them
    sqrt: ClassVar[Callable[..., Any]]
    log1p: ClassVar[Callable[..., Any]]

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
    # assigned after the class, with the functions that first use them
    sqrt: ClassVar[Callable[..., Any]]
    log1p: ClassVar[Callable[..., Any]]

    @staticmethod
    def where(c, a, b):
        return ew.select_n(c, b, a)

    @staticmethod
    def full(like, value):
        aval = tracing.get_aval(like, "random_gamma_grad", 0)
        return structural.broadcast_in_dim(np.asarray(value, aval.dtype), aval.shape, ())

    log, exp = staticmethod(ew.log), staticmethod(ew.exp)
    lgamma, digamma = (
        staticmethod(lambda x: lgamma_p.bind(x)),
        staticmethod(lambda x: digamma_p.bind(x)),
    )

    @staticmethod
    def while_loop(cond, body, state):
        return control_flow.while_loop(cond, body, state)

    @staticmethod
    def any(x):
        aval = tracing.get_aval(x, "random_gamma_grad", 0)
        return reductions.reduce_or(x, tuple(range(aval.ndim)))


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


def _common_shape(name: str, *operands: Any) -> list[Any]:
    """The operands of a broadcasting elementwise primitive at its result shape:
    its lowering's composite program combines them with ``select_n``, which
    takes equal shapes only (a batch rule leaves an unbatched operand rank-0
    or with size-1 dims)."""
    avals = [tracing.get_aval(v, name, i) for i, v in enumerate(operands)]
    shape = ew.broadcasting_shape(name, avals)
    out = []
    for v, aval in zip(operands, avals, strict=True):
        if aval.shape != shape:
            if aval.shape == ():
                v = structural.broadcast_in_dim(v, shape, ())
            else:  # one rank, size-1 dims
                v = structural.broadcast_in_dim(
                    structural.reshape(v, [d for d in aval.shape if d != 1]),
                    shape,
                    [i for i, d in enumerate(aval.shape) if d != 1],
                )
        out.append(v)
    return out


def _random_gamma_grad_program(a: Any, x: Any) -> Any:
    a, x = _common_shape("random_gamma_grad", a, x)
    dtype = tracing.get_aval(a, "random_gamma_grad", 0).dtype
    if dtype not in (np.float32, np.float64):  # in float32, as the impl
        wide = [ew.convert_element_type(v, np.float32) for v in (a, x)]
        return ew.convert_element_type(_random_gamma_grad_program(*wide), dtype)
    info = np.finfo(dtype)
    return _random_gamma_grad_generic(_LaxOps, a, x, float(info.eps), float(np.log(info.max)))


random_gamma_grad_p = ew.binary(
    "random_gamma_grad", ew._in_float32(_random_gamma_grad_impl), ew.FLOAT
)
random_gamma_grad_p.def_mask(ew._elementwise_mask_rule)
random_gamma_grad_p.def_batch(batch_rules.elementwise_batch_rule(random_gamma_grad_p))


def _random_gamma_grad_lowering(ctx, a, x):
    return composite_lowering("random_gamma_grad", _random_gamma_grad_program)(ctx, a, x)


random_gamma_grad_p.def_lowering(_random_gamma_grad_lowering)


@random_gamma_grad_p.def_jvp
def _random_gamma_grad_jvp(primals, tangents):
    """JAX 0.10.2's ``lax.random_gamma_grad`` is the program above traced
    inline (no primitive): its derivative is the program's, the loops'
    iterates differentiated, in forward mode only (reverse mode meets the
    while loops: ValueError)."""
    outs, touts = rule_context.jvp_flat(
        lambda a, x: [_random_gamma_grad_program(a, x)], list(primals), list(tangents)
    )
    return outs[0], touts[0]


def _random_gamma_grad_linearize(primals, tangents):
    """As JAX's linearize of the inline program: the program linearized, its
    while loops partially evaluated as a whole (both their primal and tangent
    parts go to the linear program, as JAX's while partial evaluation does),
    so linearize runs and only a transpose (grad, vjp) meets the loops:
    ValueError."""
    outs, touts = rule_context.jvp_flat(
        lambda a, x: [_random_gamma_grad_program(a, x)],
        list(primals),
        list(tangents),
        linearize=True,
    )
    return outs[0], touts[0]


random_gamma_grad_p.linearize_rule = _random_gamma_grad_linearize


def random_gamma_grad(a: Any, x: Any) -> Any:
    """``lax.random_gamma_grad``: ``dx/da`` of a Gamma(a, 1) sample ``x`` at a
    fixed quantile (implicit reparameterization), NaN for ``a <= 0`` or
    ``x < 0``, 0 at ``x = 0``. Not differentiable itself (as JAX)."""
    return random_gamma_grad_p.bind(a, x)


# --- bessel_i0e, bessel_i1e: exponentially scaled modified Bessel functions ------------------
#
# i0e(x) = exp(-|x|) I0(x), i1e(x) = exp(-|x|) I1(x). Below a switch point the
# power series I_nu(x) = sum_k (x/2)^(2k+nu) / (k! (k+nu)!) (all terms of one
# sign: no cancellation), times exp(-|x|); above it the asymptotic expansion
# I_nu(x) ~ e^x / sqrt(2 pi x) sum_k (-1)^k prod_{j<=k} (4nu^2 - (2j-1)^2) / (k! (8x)^k),
# whose terms keep shrinking far past the number used. The switch point and
# term counts depend on the working precision (float64: 30 / 110 / 40 terms,
# float32: 15 / 48 / 20 terms; the truncation error is below half an ulp).
# The same code runs on NumPy arrays (the impl, in float64) and on tracers
# (i0e's lowering, a program of primitives in float32 or float64; i1e lowers to
# chlo.bessel_i1e, as JAX).


def _bessel_ie_generic(ops, x, nu, wide):
    switch, n_series, n_asym = (30.0, 110, 40) if wide else (15.0, 48, 20)
    ax = abs(x)
    small = ax <= switch
    xs = ops.where(small, ax, ops.full(ax, 1.0))
    half_sq = xs * xs * 0.25
    term = ops.full(xs, 1.0) if nu == 0 else xs * 0.5
    total = term
    for k in range(1, n_series):
        term = term * half_sq / float(k * (k + nu))
        total = total + term
    series = total * ops.exp(-xs)
    xl = ops.where(small, ops.full(ax, 2.0 * switch), ax)
    mu = 4.0 * nu * nu
    term = ops.full(xl, 1.0)
    total = term
    for k in range(1, n_asym):
        term = term * (-(mu - (2 * k - 1) ** 2) / (8.0 * k)) / xl
        total = total + term
    asym = total / ops.sqrt(xl * (2 * math.pi))
    out = ops.where(small, series, asym)
    out = ops.where(ax == math.inf, ops.full(out, 0.0), out)
    if nu == 1:  # odd: i1e(-x) = -i1e(x)
        out = ops.where(x < 0, -out, out)
    return out


_NumpyOps.sqrt = staticmethod(np.sqrt)
_LaxOps.sqrt = staticmethod(ew.sqrt)


def _bessel_ie_impl(nu: int):
    def impl(x: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            out = _bessel_ie_generic(_NumpyOps, x.astype(np.float64), nu, wide=True)
        return np.asarray(out).astype(x.dtype)

    return impl


def _bessel_i0e_program(x: Any) -> Any:
    dtype = tracing.get_aval(x, "bessel_i0e", 0).dtype
    if dtype not in (np.float32, np.float64):
        wide = ew.convert_element_type(x, np.float32)
        return ew.convert_element_type(_bessel_i0e_program(wide), dtype)
    return _bessel_ie_generic(_LaxOps, x, 0, wide=dtype == np.float64)


bessel_i0e_p = ew.unary("bessel_i0e", ew._in_float32(_bessel_ie_impl(0)), ew.FLOAT)
bessel_i1e_p = ew.unary("bessel_i1e", ew._in_float32(_bessel_ie_impl(1)), ew.FLOAT)


def _bessel_i0e_lowering(ctx, x):
    return composite_lowering("bessel_i0e", _bessel_i0e_program)(ctx, x)


bessel_i0e_p.def_lowering(_bessel_i0e_lowering)
bessel_i1e_p.def_lowering(ew._hlo_unary("bessel_i1e", dialect="chlo", in_float32=True))
for _prim in (bessel_i0e_p, bessel_i1e_p):
    _prim.def_mask(ew._elementwise_mask_rule)
    _prim.def_batch(batch_rules.elementwise_batch_rule(_prim))

# d i0e = i1e(x) - sign(x) i0e(x); d i1e = i0e(x) - i1e(x) (sign(x) + 1/x), whose
# limit at 0 is 1/2 (used for |x| <= eps, where 1/x would blow up)
ew._unary_jvp(
    bessel_i0e_p, lambda t, y, x: ew.mul(t, ew.sub(bessel_i1e_p.bind(x), ew.mul(ew.sign(x), y)))
)


def _bessel_i1e_derivative(t, y, x):
    aval = tracing.get_aval(x, "bessel_i1e", 0)
    eps = _scalar_like(float(np.finfo(aval.dtype).eps), x)
    not_tiny = ew.gt(ew.abs(x), eps)
    safe_x = ew.select_n(not_tiny, ew.add(ew.mul(x, _scalar_like(0.0, x)), eps), x)
    slope = ew.sub(
        bessel_i0e_p.bind(safe_x),
        ew.mul(y, ew.add(ew.sign(safe_x), ew.div(_scalar_like(1.0, x), safe_x))),
    )
    slope = ew.select_n(
        not_tiny, ew.add(ew.mul(x, _scalar_like(0.0, x)), _scalar_like(0.5, x)), slope
    )
    return ew.mul(t, slope)


ew._unary_jvp(bessel_i1e_p, _bessel_i1e_derivative)


def bessel_i0e(x: Any) -> Any:
    """``lax.bessel_i0e``: ``exp(-|x|) I0(x)``, the exponentially scaled modified
    Bessel function of order 0 (even; 0 at +-inf)."""
    return bessel_i0e_p.bind(x)


def bessel_i1e(x: Any) -> Any:
    """``lax.bessel_i1e``: ``exp(-|x|) I1(x)`` (odd; +-0 at +-inf)."""
    return bessel_i1e_p.bind(x)


# --- igamma, igammac: the regularized incomplete gamma functions ----------------------------
#
# P(a, x) = gamma(a, x) / Gamma(a) and Q(a, x) = 1 - P(a, x). Where x <= 1 or
# x <= a, P from its power series x^a e^-x / Gamma(a + 1) sum_n x^n / ((a+1)...(a+n))
# (Q = 1 - P, which is >= ~1/2 there: no cancellation); elsewhere Q from its
# continued fraction (Cephes' igamc recurrence, rescaled to stay in range), and
# P = 1 - Q. Loops stop when every element has converged (at most 2000 terms).
# Edge values as XLA (see _igamma_generic). The same code runs
# on NumPy arrays (the impl, in float64, then rounded: the reference is the
# mathematical function; XLA's float32 evaluation, which the lowering repeats,
# loses up to ~4e-4 relative where x^a e^-x / Gamma(a) is formed from large
# cancelling logarithms, a, x ~ 50-100) and on tracers (the lowering, in the
# operand's precision; float32 for the 16-bit types).


def _igamma_generic(ops, a, x, eps, complement):
    # XLA's edge values (artifacts of its algorithm, kept for equality): for
    # a = 0, P is 1 for x >= 1 and NaN below, Q is 0 for x > 0; for a = inf, P
    # is 0 (Q 1) for x < 1 and NaN for finite x >= 1; x = inf gives P = 1
    # (Q = 0) for every a >= 0; x = 0 < a gives P = 0 (Q = 1)
    x_inf = x == math.inf
    a_inf = (a == math.inf) & ~x_inf
    nan = (a != a) | (x != x) | (a < 0.0) | (x < 0.0) | ((a == 0.0) & (x == 0.0))
    nan = nan | (a_inf & (x >= 1.0))
    if complement:
        a_zero = (a == 0.0) & (x > 0.0)
    else:
        a_zero = (a == 0.0) & (x >= 1.0)
        nan = nan | ((a == 0.0) & (x < 1.0))
    x_zero = ((x == 0.0) & (a > 0.0)) | (a_inf & (x < 1.0))
    special = nan | a_zero | x_zero | x_inf
    safe_a = ops.where(special, ops.full(a, 1.0), a)
    safe_x = ops.where(special, ops.full(x, 1.0), x)
    use_fraction = (safe_x > 1.0) & (safe_x > safe_a)
    log_ax = safe_a * ops.log(safe_x) - safe_x - ops.lgamma(safe_a)
    ax = ops.exp(log_ax)

    def series_body(state):
        on, r, c, total = state
        r2 = r + 1.0
        c2 = c * safe_x / r2
        total2 = total + c2
        more = on & (c2 / total2 > eps)
        return (more, ops.where(on, r2, r), ops.where(on, c2, c), ops.where(on, total2, total))

    one = ops.full(safe_a, 1.0)
    state = (~special & ~use_fraction, safe_a, one, one)
    total = ops.while_loop(lambda s: ops.any(s[0]), series_body, state)[3]
    p_series = total * ax / safe_a

    def fraction_body(state):
        on, ans, y, z, c, pkm1, qkm1, pkm2, qkm2 = state
        c2, y2, z2 = c + 1.0, y + 1.0, z + 2.0
        yc = y2 * c2
        pk = pkm1 * z2 - pkm2 * yc
        qk = qkm1 * z2 - qkm2 * yc
        nonzero = qk != 0.0
        ans2 = ops.where(nonzero, pk / ops.where(nonzero, qk, ops.full(qk, 1.0)), ans)
        change = ops.where(nonzero, abs((ans - ans2) / ans2), ops.full(ans, 1.0))
        big = abs(pk) > 1.0 / eps  # rescale all four to stay in range
        scale = ops.where(big, ops.full(pk, eps), ops.full(pk, 1.0))
        more = on & (change > eps)
        new = [pk * scale, qk * scale, pkm1 * scale, qkm1 * scale]
        old = [pkm1, qkm1, pkm2, qkm2]
        kept = [ops.where(on, n, o) for n, o in zip(new, old, strict=True)]
        return (
            more,
            ops.where(on, ans2, ans),
            ops.where(on, y2, y),
            ops.where(on, z2, z),
            c2,
            *kept,
        )

    y = 1.0 - safe_a
    z = safe_x + y + 1.0
    pkm1 = safe_x + 1.0
    qkm1 = z * safe_x
    zero = ops.full(safe_x, 0.0)
    state = (~special & use_fraction, pkm1 / qkm1, y, z, zero, pkm1, qkm1, one, safe_x)
    ans = ops.while_loop(lambda s: ops.any(s[0] & (s[4] < 2000.0)), fraction_body, state)[1]
    q_fraction = ans * ax
    if complement:
        out = ops.where(use_fraction, q_fraction, 1.0 - p_series)
        out = ops.where(a_zero | x_inf, ops.full(out, 0.0), out)
        out = ops.where(x_zero, ops.full(out, 1.0), out)
    else:
        out = ops.where(use_fraction, 1.0 - q_fraction, p_series)
        out = ops.where(a_zero | x_inf, ops.full(out, 1.0), out)
        out = ops.where(x_zero, ops.full(out, 0.0), out)
    return ops.where(nan, ops.full(out, np.nan), out)


def _igamma_impl(complement: bool):
    def impl(a: np.ndarray, x: np.ndarray) -> np.ndarray:
        dtype = a.dtype
        a, x = np.broadcast_arrays(a.astype(np.float64), x.astype(np.float64))
        with np.errstate(all="ignore"):
            out = _igamma_generic(_NumpyOps, np.array(a), np.array(x), 2.0**-53, complement)
        return np.asarray(out).astype(dtype)

    return impl


def _igamma_program(complement: bool):
    def program(a: Any, x: Any) -> Any:
        a, x = _common_shape("igamma", a, x)
        dtype = tracing.get_aval(a, "igamma", 0).dtype
        if dtype not in (np.float32, np.float64):
            wide = [ew.convert_element_type(v, np.float32) for v in (a, x)]
            return ew.convert_element_type(program(*wide), dtype)
        return _igamma_generic(_LaxOps, a, x, float(np.finfo(dtype).eps) / 2, complement)

    return program


igamma_p = ew.binary("igamma", ew._in_float32(_igamma_impl(False)), ew.FLOAT)
igammac_p = ew.binary("igammac", ew._in_float32(_igamma_impl(True)), ew.FLOAT)
for _prim, _complement in ((igamma_p, False), (igammac_p, True)):
    _prim.def_mask(ew._elementwise_mask_rule)
    _prim.def_batch(batch_rules.elementwise_batch_rule(_prim))

    def _lowering(ctx, a, x, _name=_prim.name, _complement=_complement):
        return composite_lowering(_name, _igamma_program(_complement))(ctx, a, x)

    _prim.def_lowering(_lowering)


def _igamma_dp_dx(a: Any, x: Any) -> Any:
    """``dP/dx = x^(a-1) e^-x / Gamma(a)``."""
    one = _scalar_like(1.0, x)
    return ew.exp(ew.sub(ew.sub(ew.mul(ew.sub(a, one), ew.log(x)), x), lgamma_p.bind(a)))


def _igamma_dp_da(a: Any, x: Any) -> Any:
    """``dP/da`` from the implicit derivative of a Gamma sample,
    ``random_gamma_grad = -(dP/da) / (dP/dx)``, which already evaluates dP/da
    by Cephes' series and fraction differentiated term by term (JAX's
    ``igamma_grad_a`` is the same quantity, and not differentiable either)."""
    return ew.neg(ew.mul(random_gamma_grad_p.bind(a, x), _igamma_dp_dx(a, x)))


def _igamma_jvp_rule(prim, sign: float):
    def rule(primals, tangents):
        (a, x), (ta, tx) = primals, tangents
        y = prim.bind(a, x)
        # unreachable from the public API: the jvp trace calls a rule only when some operand has a
        # nonzero tangent (ad.JVPTrace.process_primitive)
        if isinstance(ta, Zero) and isinstance(tx, Zero):  # pragma: no cover
            return y, Zero(tangent_aval(tracing.get_aval(y, prim.name, 0)))
        s = _scalar_like(sign, x)
        # each slope only where its tangent is nonzero, as JAX's defjvp: dP/da
        # is not differentiable, so a second derivative in x alone must not
        # meet it
        parts = []
        if not isinstance(ta, Zero):
            parts.append(ew.mul(ta, ew.mul(s, _igamma_dp_da(a, x))))
        if not isinstance(tx, Zero):
            parts.append(ew.mul(tx, ew.mul(s, _igamma_dp_dx(a, x))))
        return y, parts[0] if len(parts) == 1 else ew.add(parts[0], parts[1])

    return rule


igamma_p.def_jvp(_igamma_jvp_rule(igamma_p, 1.0))
igammac_p.def_jvp(_igamma_jvp_rule(igammac_p, -1.0))


def igamma(a: Any, x: Any) -> Any:
    """``lax.igamma``: the regularized lower incomplete gamma function ``P(a, x)``."""
    return igamma_p.bind(a, x)


def igammac(a: Any, x: Any) -> Any:
    """``lax.igammac``: the regularized upper incomplete gamma function ``1 - P(a, x)``."""
    return igammac_p.bind(a, x)


# --- zeta: the Hurwitz zeta function ---------------------------------------------------------
#
# zeta(x, q) = sum_{k>=0} (q + k)^-x for x > 1, by Euler-Maclaurin summation:
# the first N terms (q + N >= max(12, min(x, 200))), the integral (q+N)^(1-x) / (x-1),
# half the next term, and sum_{j=1..9} B_2j / (2j)! x (x+1)...(x+2j-2) (q+N)^(-x-2j+1).
# Edge values as XLA's, tested in this order: x = 1 gives inf (whatever q);
# then a NaN operand gives NaN; q a non-positive integer or -inf gives inf for
# even integer x (0 included) and NaN otherwise; NaN for x < 1, x or q
# infinite, and q < 0 with x not an integer. Lowered to chlo.zeta (as JAX). The
# derivative in q is -x zeta(x + 1, q); the one in x is not a primitive rule
# (refimpl.scipy.special.zeta supplies it, as JAX's does, from a series).

_BERNOULLI_2J = (
    1 / 6,
    -1 / 30,
    1 / 42,
    -1 / 30,
    5 / 66,
    -691 / 2730,
    7 / 6,
    -3617 / 510,
    43867 / 798,
)


def _zeta_scalar(x: float, q: float) -> float:
    if x == 1:  # first: even a NaN q gives inf (XLA's order of tests)
        return math.inf
    if math.isnan(x) or math.isnan(q):
        return math.nan
    x_integer = math.isfinite(x) and x == math.floor(x)
    if q == -math.inf or (q <= 0 and q == math.floor(q)):  # a pole of every term
        return math.inf if x_integer and x % 2 == 0 else math.nan
    if x < 1 or math.isinf(x) or math.isinf(q) or (q < 0 and not x_integer):
        return math.nan
    # w = q + n at least 12 and at least x (up to 200): the Bernoulli tail's
    # terms then shrink like ((x + 2j) / (2 pi w))^2; past x = 200 the direct
    # sum's own terms fall off as (q / (q + k))^x
    n = max(0, math.ceil(max(12.0, min(x, 200.0)) - q))
    total = math.fsum((q + k) ** -x for k in range(n))
    w = q + n
    total += w ** (1 - x) / (x - 1) + 0.5 * w**-x
    rising, power, factorial = x, w ** (-x - 1), 2.0
    for j, b in enumerate(_BERNOULLI_2J, start=1):
        total += b / factorial * rising * power
        rising *= (x + 2 * j - 1) * (x + 2 * j)
        power /= w * w
        factorial *= (2 * j + 1) * (2 * j + 2)
    return total


def _zeta(x: np.ndarray, q: np.ndarray) -> np.ndarray:
    wide = np.vectorize(_zeta_scalar, otypes=[np.float64])
    return np.asarray(wide(x.astype(np.float64), q.astype(np.float64))).astype(x.dtype)


zeta_p = ew.binary("zeta", ew._in_float32(_zeta), ew.FLOAT)
zeta_p.def_lowering(ew._hlo_binary("zeta", dialect="chlo", in_float32=True))
zeta_p.def_mask(ew._elementwise_mask_rule)
zeta_p.def_batch(batch_rules.elementwise_batch_rule(zeta_p))


@zeta_p.def_jvp
def _zeta_jvp(primals, tangents):
    (x, q), (tx, tq) = primals, tangents
    y = zeta_p.bind(x, q)
    if not isinstance(tx, Zero):
        raise NotImplementedError(
            "zeta: the derivative with respect to x (the exponent) is not a primitive rule; "
            "refimpl.scipy.special.zeta differentiates in x (through a series), lax.zeta does not"
        )
    # unreachable from the public API: x's tangent is zero here, and the jvp trace calls a rule
    # only when some operand has a nonzero tangent (ad.JVPTrace.process_primitive)
    if isinstance(tq, Zero):  # pragma: no cover
        return y, Zero(tangent_aval(tracing.get_aval(y, "zeta", 0)))
    slope = ew.neg(ew.mul(x, zeta_p.bind(ew.add(x, _scalar_like(1.0, x)), q)))
    return y, ew.mul(tq, slope)


def zeta(x: Any, q: Any) -> Any:
    """``lax.zeta``: the Hurwitz zeta function ``sum_k (q + k)^-x``."""
    return zeta_p.bind(x, q)


# --- regularized_incomplete_beta: I_x(a, b) --------------------------------------------------
#
# I_x(a, b) = x^a (1-x)^b / (a B(a, b)) * 1 / (1 + d1 / (1 + d2 / (1 + ...))), with
# d_{2m+1} = -(a+m)(a+b+m) x / ((a+2m)(a+2m+1)), d_{2m} = m (b-m) x / ((a+2m-1)(a+2m)),
# evaluated by the modified Lentz method; for x > (a+1)/(a+b+2), where that
# fraction converges slowly, 1 - I_{1-x}(b, a). At most 300 terms (each step
# consumes two d's). Edge values as XLA's: NaN for a NaN operand, a < 0,
# b < 0, a = b = 0, a = b = inf or x outside [0, 1]; 0 at x = 0 and 1 at
# x = 1; for 0 < x < 1, 1 where a = 0 or b = inf and 0 where b = 0 or a = inf.
# The impl runs in float64; the lowering runs the same code in the operand's
# precision (float32 for 16-bit).
# Differentiable in x only (x^(a-1) (1-x)^(b-1) / B(a, b)), as in JAX.


def _betainc_generic(ops, a, b, x, eps, tiny):
    nan = (a != a) | (b != b) | (x != x) | (a < 0.0) | (b < 0.0) | (x < 0.0) | (x > 1.0)
    nan = nan | ((a == 0.0) & (b == 0.0)) | ((a == math.inf) & (b == math.inf))
    interior = (x > 0.0) & (x < 1.0)
    one_at = (x == 1.0) | (interior & ((a == 0.0) | (b == math.inf)))
    zero_at = (x == 0.0) | (interior & ((b == 0.0) | (a == math.inf)))
    special = nan | one_at | zero_at
    half = ops.full(x, 0.5)
    a = ops.where(special, ops.full(a, 1.0), a)
    b = ops.where(special, ops.full(b, 1.0), b)
    x = ops.where(special, half, x)
    swap = x > (a + 1.0) / (a + b + 2.0)
    a, b, x = ops.where(swap, b, a), ops.where(swap, a, b), ops.where(swap, 1.0 - x, x)
    log_front = (
        a * ops.log(x) + b * ops.log1p(-x) - (ops.lgamma(a) + ops.lgamma(b) - ops.lgamma(a + b))
    )
    front = ops.exp(log_front) / a

    def clamp(v):  # Lentz: keep denominators away from 0
        return ops.where(abs(v) < tiny, ops.full(v, tiny), v)

    def body(state):
        on, m, c, d, f = state
        # the even step d_{2m}, then the odd step d_{2m+1}
        even = m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m))
        d1 = 1.0 / clamp(1.0 + even * d)
        c1 = clamp(1.0 + even / c)
        f1 = f * c1 * d1
        odd = -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0))
        d2 = 1.0 / clamp(1.0 + odd * d1)
        c2 = clamp(1.0 + odd / c1)
        step = c2 * d2
        f2 = f1 * step
        more = on & (abs(step - 1.0) > eps) & (m < 300.0)
        return (
            more,
            m + 1.0,
            ops.where(on, c2, c),
            ops.where(on, d2, d),
            ops.where(on, f2, f),
        )

    # the leading term: f = 1 / (1 + d1) with d1 = -(a+b) x / (a+1)
    first = -(a + b) * x / (a + 1.0)
    d0 = 1.0 / clamp(1.0 + first)
    state = (~special, ops.full(x, 1.0), ops.full(x, 1.0), d0, d0)
    fraction = ops.while_loop(lambda s: ops.any(s[0]), body, state)[4]
    value = front * fraction
    out = ops.where(swap, 1.0 - value, value)
    out = ops.where(one_at, ops.full(out, 1.0), out)
    out = ops.where(zero_at, ops.full(out, 0.0), out)
    return ops.where(nan, ops.full(out, np.nan), out)


_NumpyOps.log1p = staticmethod(np.log1p)
_LaxOps.log1p = staticmethod(ew.log1p)


def _betainc_impl(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
    dtype = a.dtype
    a, b, x = (np.array(v, np.float64) for v in np.broadcast_arrays(a, b, x))
    with np.errstate(all="ignore"):
        out = _betainc_generic(_NumpyOps, a, b, x, 2.0**-53, 1e-300)
    return np.asarray(out).astype(dtype)


def _betainc_program(a: Any, b: Any, x: Any) -> Any:
    a, b, x = _common_shape("regularized_incomplete_beta", a, b, x)
    dtype = tracing.get_aval(a, "regularized_incomplete_beta", 0).dtype
    if dtype not in (np.float32, np.float64):
        wide = [ew.convert_element_type(v, np.float32) for v in (a, b, x)]
        return ew.convert_element_type(_betainc_program(*wide), dtype)
    info = np.finfo(dtype)
    return _betainc_generic(_LaxOps, a, b, x, float(info.eps) / 2, float(info.tiny) * 1e6)


regularized_incomplete_beta_p = Primitive("regularized_incomplete_beta")


@regularized_incomplete_beta_p.def_abstract_eval
def _betainc_abstract_eval(a, b, x):
    name = "regularized_incomplete_beta"
    check_same_dtypes(name, [a, b, x])
    check_dtype_in(name, x, *ew.FLOAT)
    shape = ew.broadcasting_shape(name, [a, b, x])
    return ShapedArray(shape, x.dtype, all_weak([a, b, x]))


regularized_incomplete_beta_p.def_impl(ew._in_float32(_betainc_impl))
regularized_incomplete_beta_p.def_mask(ew._elementwise_mask_rule)
regularized_incomplete_beta_p.def_batch(
    batch_rules.elementwise_batch_rule(regularized_incomplete_beta_p)
)


def _betainc_lowering(ctx, a, b, x):
    return composite_lowering("regularized_incomplete_beta", _betainc_program)(ctx, a, b, x)


regularized_incomplete_beta_p.def_lowering(_betainc_lowering)


@regularized_incomplete_beta_p.def_jvp
def _betainc_jvp(primals, tangents):
    (a, b, x), (ta, tb, tx) = primals, tangents
    y = regularized_incomplete_beta_p.bind(a, b, x)
    if not (isinstance(ta, Zero) and isinstance(tb, Zero)):
        # ValueError, as JAX 0.10.2 ("Betainc gradient with respect to a and b not supported")
        raise ValueError(
            "regularized_incomplete_beta (betainc): the derivative with respect to a and b "
            "is not supported (JAX has none either); only x is differentiable"
        )
    # unreachable from the public API: a and b have zero tangents here, and the jvp
    # trace calls a rule only when some operand has a nonzero tangent
    if isinstance(tx, Zero):  # pragma: no cover
        return y, Zero(tangent_aval(tracing.get_aval(y, "regularized_incomplete_beta", 0)))
    one = _scalar_like(1.0, x)
    log_slope = ew.sub(
        ew.add(ew.mul(ew.sub(a, one), ew.log(x)), ew.mul(ew.sub(b, one), ew.log1p(ew.neg(x)))),
        ew.sub(ew.add(lgamma_p.bind(a), lgamma_p.bind(b)), lgamma_p.bind(ew.add(a, b))),
    )
    return y, ew.mul(tx, ew.exp(log_slope))


def regularized_incomplete_beta(a: Any, b: Any, x: Any) -> Any:
    """``lax.betainc``: the regularized incomplete beta function ``I_x(a, b)``."""
    return regularized_incomplete_beta_p.bind(a, b, x)


betainc = regularized_incomplete_beta
