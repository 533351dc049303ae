"""The exponential, trigonometric and other integrals of
``jax.scipy.special``, each following the algorithm JAX 0.10.2 uses (so
results agree to a few float32 ulps, special values included):

* ``expn(n, x) = E_n(x) = x^(n-1) int_x^inf e^-t / t^n dt`` (Cephes ``expn.c``):
  a power series for ``x <= 1``, a continued fraction for ``x > 1``, an
  asymptotic expansion for ``n >= 5000``; ``nan`` for ``n < 0`` or ``x < 0``
  (unless ``x > 1``, where JAX's last-matching branch, the continued fraction,
  wins), ``inf`` at ``x = 0`` for ``n < 2``, ``1/n`` at ``x = 0`` otherwise (JAX's value;
  the exact one is ``1/(n-1)``),
  ``e^-x / x`` for ``n = 0``. ``d/dx E_n(x) = -E_(n-1)(x)``; not differentiable
  in ``n``. ``exp1(x) = expn(1, x)``.
* ``expi(x) = int_-inf^x e^t / t dt`` (Cephes ``ei.c``): rational fits on
  ``(0, 2], (2, 4], ..., (32, 64]`` and ``(64, inf)``, ``-exp1(-x)`` for
  ``x < 0``; ``nan`` at 0, ``+inf`` and ``nan``. ``d/dx = e^x / x``.
* ``spence(x) = int_1^x log t / (1 - t) dt`` for ``x >= 0`` (Cephes ``spence.c``),
  ``nan`` for ``x < 0``; float32/float64 arguments only (``TypeError``
  otherwise, as JAX); differentiated through its formula.
* ``sici``, ``fresnel`` and ``owens_t``: see each function.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import custom_derivatives, dtypes, lax, tracing
from refimpl import numpy as rnp
from refimpl.scipy.special._common import (
    _const,
    _horner,
    _masked_loop,
    _select_last,
    _strong_inexact,
)

# --- expn / exp1 ------------------------------------------------------------------


def _expn_series(x: Any, n: Any) -> Any:
    """``E_n(x)`` for ``0 < x <= 1`` (Cephes): ``(-x)^(n-1) psi(n) / (n-1)! - sum``."""
    eps = float(dtypes.finfo(x.dtype).eps)
    one, zero = _const(x, 1.0), _const(x, 0.0)
    psi0 = rnp.subtract(_const(x, -np.euler_gamma), rnp.log(x))

    def psi_cond(s):
        return rnp.any(rnp.less(s["i"], n))

    def psi_body(s):
        i = s["i"]
        return {
            "i": rnp.add(i, one),
            "psi": rnp.where(rnp.less(i, n), rnp.add(s["psi"], rnp.divide(one, i)), s["psi"]),
        }

    psi = lax.while_loop(psi_cond, psi_body, {"i": rnp.ones_like(x), "psi": psi0})["psi"]
    is_one = rnp.equal(n, one)
    n1 = rnp.where(is_one, _const(x, 2.0), n)
    state = {
        "z": rnp.negative(x),
        "xk": rnp.zeros_like(x),
        "yk": rnp.ones_like(x),
        "pk": rnp.subtract(one, n),
        "ans": rnp.where(is_one, zero, rnp.divide(one, rnp.subtract(one, n1))),
        "t": rnp.full_like(x, np.inf),
    }

    def body(d):
        d["xk"] = rnp.add(d["xk"], one)
        d["yk"] = rnp.multiply(d["yk"], rnp.divide(d["z"], d["xk"]))
        d["pk"] = rnp.add(d["pk"], one)
        nz = rnp.not_equal(d["pk"], zero)
        d["ans"] = rnp.add(d["ans"], rnp.where(nz, rnp.divide(d["yk"], d["pk"]), zero))
        d["t"] = rnp.where(
            rnp.not_equal(d["ans"], zero), rnp.abs(rnp.divide(d["yk"], d["ans"])), one
        )
        return d

    d = _masked_loop(
        lambda d: rnp.logical_and(rnp.greater(x, zero), rnp.greater(d["t"], eps)), body, state
    )
    lead = rnp.multiply(rnp.power(d["z"], rnp.subtract(n, one)), psi)
    return rnp.subtract(rnp.divide(lead, rnp.exp(lax.lgamma(n))), d["ans"])


def _expn_fraction(x: Any, n: Any) -> Any:
    """``E_n(x)`` for ``x > 1``: Cephes' continued fraction, rescaled by ``BIG``."""
    eps = float(dtypes.finfo(x.dtype).eps)
    big = _const(x, 1.44115188075855872e17)
    one, two, zero = _const(x, 1.0), _const(x, 2.0), _const(x, 0.0)
    state = {
        "k": rnp.ones_like(x),
        "pkm2": rnp.ones_like(x),
        "qkm2": x,
        "pkm1": rnp.ones_like(x),
        "qkm1": rnp.add(x, n),
        "ans": rnp.divide(one, rnp.add(x, n)),
        "t": rnp.full_like(x, np.inf),
        "r": rnp.zeros_like(x),
    }

    def body(d):
        k = rnp.add(d["k"], one)
        odd = rnp.equal(rnp.remainder(k, two), one)
        yk = rnp.where(odd, one, x)
        xk = rnp.where(odd, rnp.add(n, rnp.divide(rnp.subtract(k, one), two)), rnp.divide(k, two))
        pk = rnp.add(rnp.multiply(d["pkm1"], yk), rnp.multiply(d["pkm2"], xk))
        qk = rnp.add(rnp.multiply(d["qkm1"], yk), rnp.multiply(d["qkm2"], xk))
        nz = rnp.not_equal(qk, zero)
        r = rnp.where(nz, rnp.divide(pk, qk), d["r"])
        t = rnp.where(nz, rnp.abs(rnp.divide(rnp.subtract(d["ans"], r), r)), one)
        ans = rnp.where(nz, r, d["ans"])
        rescale = rnp.greater(rnp.abs(pk), big)

        def scaled(v):
            return rnp.where(rescale, rnp.divide(v, big), v)

        return {
            "k": k,
            "pkm2": scaled(d["pkm1"]),
            "qkm2": scaled(d["qkm1"]),
            "pkm1": scaled(pk),
            "qkm1": scaled(qk),
            "ans": ans,
            "t": t,
            "r": r,
        }

    d = _masked_loop(
        lambda d: rnp.logical_and(rnp.greater(x, zero), rnp.greater(d["t"], eps)), body, state
    )
    return rnp.multiply(d["ans"], rnp.exp(rnp.negative(x)))


def _expn_asymptotic(x: Any, n: Any) -> Any:
    """``E_n(x)`` for ``n >= 5000``: three terms of the large-``n`` expansion."""
    one = _const(x, 1.0)
    xk = rnp.add(x, n)
    yk = rnp.divide(one, rnp.multiply(xk, xk))
    inner = rnp.add(
        rnp.subtract(rnp.multiply(_const(x, 6.0), rnp.multiply(x, x)), rnp.multiply(8.0, n * x)),
        rnp.multiply(n, n),
    )
    ans = rnp.multiply(yk, rnp.multiply(n, inner))
    ans = rnp.multiply(yk, rnp.add(ans, rnp.multiply(n, rnp.subtract(n, rnp.multiply(2.0, x)))))
    ans = rnp.multiply(yk, rnp.add(ans, n))
    return rnp.divide(rnp.multiply(rnp.add(ans, one), rnp.exp(rnp.negative(x))), xk)


def _expn_value(n: Any, x: Any) -> Any:
    zero, one = _const(x, 0.0), _const(x, 1.0)
    conds = [
        rnp.logical_or(rnp.less(n, zero), rnp.less(x, zero)),
        rnp.logical_and(rnp.equal(x, zero), rnp.less(n, 2.0)),
        rnp.logical_and(rnp.equal(x, zero), rnp.greater_equal(n, 2.0)),
        rnp.logical_and(rnp.equal(n, zero), rnp.greater_equal(x, zero)),
        rnp.greater_equal(n, 5000.0),
        rnp.greater(x, one),
    ]
    # which branch each element takes (the last true condition; 6 = none)
    choice = rnp.full(x.shape, 6, np.int32)
    for i, c in enumerate(conds):
        choice = rnp.where(c, np.int32(i), choice)
    # the looping branches see, where not chosen, an x that stops them at once
    series_x = rnp.where(rnp.equal(choice, 6), x, zero)
    series_n = rnp.where(rnp.equal(choice, 6), n, one)
    fraction_x = rnp.where(rnp.equal(choice, 5), x, zero)
    fraction_n = rnp.where(rnp.equal(choice, 5), n, one)
    n1 = rnp.where(rnp.equal(n, one), rnp.add(n, n), n)
    values = [
        rnp.full_like(x, np.nan),
        rnp.full_like(x, np.inf),
        rnp.divide(one, n1),  # JAX's 1/n (the exact value is 1/(n-1))
        rnp.divide(rnp.exp(rnp.negative(x)), x),
        _expn_asymptotic(x, n),
        _expn_fraction(fraction_x, fraction_n),
    ]
    return _select_last(
        _expn_series(series_x, series_n),
        *[(rnp.equal(choice, i), v) for i, v in enumerate(values)],
    )


def _expn_jvp(primals, tangents):
    (n, x), (_, tx) = primals, tangents
    return _expn_value(n, x), rnp.multiply(
        rnp.negative(tx), _expn_value(rnp.subtract(n, _const(n, 1.0)), x)
    )


_expn = custom_derivatives.custom_jvp(_expn_value)
_expn.defjvp(_expn_jvp)


def expn(n: Any, x: Any) -> Any:
    """The generalized exponential integral ``E_n(x)`` (see the module docstring;
    ``n`` and ``x`` are promoted together and broadcast)."""
    n, x = _strong_inexact("expn", n, x)
    n, x = rnp.broadcast_arrays(n, x)
    return _expn(n, x)


def exp1(x: Any) -> Any:
    """``E_1(x) = int_x^inf e^-t / t dt`` (``expn(1, x)``)."""
    (x,) = _strong_inexact("exp1", x)
    return expn(_const(x, 1.0), x)


# --- expi ------------------------------------------------------------------------

# Cephes ei.c: (numerator, denominator) of the rational fits, highest power first.
# The first is in x on (0, 2]; the others are in w = 1/x on (2, 4], (4, 8], (8, 16],
# (16, 32], (32, 64] and (64, inf).
_Fit = tuple[tuple[float, ...], tuple[float, ...]]
_EI_SMALL: _Fit = (
    (-5.350447357812543, 218.50491688166133, -4176.572384826693, 55411.76756393557,
     -331338.13311781443, 1592627.1633849454),
    (1.0, -52.505479591128626, 1259.6161867867906, -17565.495819735348, 149306.2117002726,
     -729494.9239640528, 1592627.1633849454),
)  # fmt: skip
_EI_LARGE: tuple[_Fit, ...] = (
    (
        (0.019818085032596897, -1.2716456259849176, -2.0881603356812284, 2.7555445091879367,
         -0.44095070487016, 0.046656238059358916, -0.0015450426796734852, 7.059980605299618e-05),
        (1.0, 1.4764986709149215, 0.5629177174822436, 0.16990178978793072, 0.02291647179034212,
         0.0044501504397287525, 0.00017274396122065214, 3.953167195549672e-05),
    ),
    (
        (-1.3732153758712087, -0.7084559133740839, 1.580806855547941, -0.2601500427425623,
         0.029946746941137137, -0.001038086040188744, 4.371064420753005e-05, 2.141783679522603e-06),
        (1.0, 0.8585231423622028, 0.4483285822873995, 0.07687932158124476, 0.024498682410218877,
         0.0008832165941927797, 0.00045909522995113536, -4.729848351866523e-06,
         2.66519553739071e-06),
    ),
    (
        (-2.1069346016919166, 1.7327338696646881, -0.2423619178935842, 0.02322724180937566,
         0.00023728804404931798, -8.343219561192553e-05, 1.3634087956052505e-05,
         -3.655412321999254e-07, 1.4649417339759612e-08, 6.17640786371036e-10),
        (1.0, -0.2298062239901678, 0.11050770414740378, -0.015665429666307924,
         0.002761106850817353, -0.00020891480122840484, 1.7085289388076754e-05,
         -4.4593117963566865e-07, 1.3946349303538475e-08, 6.150865933977338e-10),
    ),
    (
        (-0.24581193676740204, -0.14833822533220778, 0.07248291795735552, -0.013483156873809405,
         0.001342775069788637, -7.942465637159712e-05, 2.644179518984236e-06,
         -4.239473659313765e-08),
        (1.0, -0.10442259084438711, -0.26764531281014026, 0.09695000254621984,
         -0.01601745692712991, 0.001496414899205908, -8.462452563778485e-05,
         2.7289384034767266e-06, -4.239462431819542e-08),
    ),
    (
        (0.12125611181054567, -0.5823133179043894, 0.2348887314557017, -0.030400343181132484,
         0.0015100821468651906, -2.5231370954995714e-05),
        (1.0, -1.002252150365854, 0.2928709694872224, -0.03337004338674008,
         0.0015605448811273888, -2.5231370936032347e-05),
    ),
    (
        (-0.7657847078286127, 0.6886192415566705, -0.2132598113545206, 0.033461075523841935,
         -0.003076541477344756, 0.00017471193164549074, -6.1037116822741705e-06,
         1.218032765428652e-07, -1.0860761027932903e-09),
        (1.0, -1.8888028686623086, 1.066691687211409, -0.27519159823063805,
         0.039308526882338234, -0.003414684558602365, 0.00018668443707035555,
         -6.345146083130515e-06, 1.239754287483207e-07, -1.0860761027931265e-09),
    ),
)  # fmt: skip


def _expi_value(x: Any) -> Any:
    one = _const(x, 1.0)
    num, den = _EI_SMALL
    small = rnp.add(
        rnp.add(rnp.multiply(x, rnp.divide(_horner(num, x), _horner(den, x))),
                _const(x, np.euler_gamma)),
        rnp.log(x),
    )  # fmt: skip
    w = rnp.divide(one, x)
    large = []
    for num, den in _EI_LARGE:
        f = rnp.add(rnp.multiply(w, rnp.divide(_horner(num, w), _horner(den, w))), one)
        large.append(rnp.multiply(rnp.multiply(rnp.exp(x), w), f))
    # (64, inf) is also the fallback: 0, +inf and nan give nan there
    pairs = [(rnp.logical_and(rnp.greater(x, 0.0), rnp.less_equal(x, 2.0)), small)]
    for i in range(1, 6):
        inside = rnp.logical_and(rnp.greater(x, 2.0**i), rnp.less_equal(x, 2.0 ** (i + 1)))
        pairs.append((inside, large[i - 1]))
    positive = _select_last(large[5], *pairs)
    negative = rnp.negative(_expn_value(rnp.ones_like(x), rnp.negative(x)))
    return rnp.where(rnp.less(x, 0.0), negative, positive)


def _expi_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _expi_value(x), rnp.multiply(rnp.divide(rnp.exp(x), x), t)


_expi = custom_derivatives.custom_jvp(_expi_value)
_expi.defjvp(_expi_jvp)


def expi(x: Any) -> Any:
    """The exponential integral ``Ei(x) = int_-inf^x e^t / t dt`` (real ``x``)."""
    (x,) = _strong_inexact("expi", x)
    return _expi(x)


# --- spence ----------------------------------------------------------------------

_SPENCE_NUM = (4.65128586073990045278e-5, 7.31589045238094711071e-3, 1.33847639578309018650e-1,
               8.79691311754530315341e-1, 2.71149851196553469920e0, 4.25697156008121755724e0,
               3.29771340985225106936e0, 1.00000000000000000126e0)  # fmt: skip
_SPENCE_DEN = (6.90990488912553276999e-4, 2.54043763932544379113e-2, 2.82974860602568089943e-1,
               1.41172597751831069617e0, 3.63800533345137075418e0, 5.03278880143316990390e0,
               3.54771340985225096217e0, 9.99999999999999998740e-1)  # fmt: skip


def _spence_positive(x: Any) -> Any:
    # reduce to w = x - 1 near 1 (|w| <= 1/2) with the reflection (x < 1/2) and
    # inversion (x > 3/2, after x -> 1/x for x > 2) formulas of the dilogarithm
    one = _const(x, 1.0)
    inverted = rnp.greater(x, 2.0)
    x = rnp.where(inverted, rnp.divide(one, x), x)
    above = rnp.greater(x, 1.5)
    below = rnp.less(x, 0.5)
    inverted = rnp.logical_or(inverted, above)
    w = rnp.where(
        above,
        rnp.subtract(rnp.divide(one, x), one),
        rnp.where(below, rnp.negative(x), rnp.subtract(x, one)),
    )
    y = rnp.negative(rnp.divide(rnp.multiply(w, _horner(_SPENCE_NUM, w)), _horner(_SPENCE_DEN, w)))
    reflected = rnp.subtract(
        rnp.subtract(
            _const(x, np.pi**2 / 6), rnp.multiply(rnp.log(x), rnp.log(rnp.subtract(one, x)))
        ),
        y,
    )
    y = rnp.where(below, reflected, y)
    inverse = rnp.subtract(rnp.multiply(-0.5, rnp.square(rnp.log(x))), y)
    return rnp.where(inverted, inverse, y)


def spence(x: Any) -> Any:
    """Spence's function ``int_1^x log t / (1 - t) dt`` for float32/float64 ``x``
    (``nan`` for ``x < 0``, ``pi^2/6`` at 0, 0 at 1)."""
    aval = tracing.get_aval(x, "spence", 0)
    if aval.dtype not in (np.float32, np.float64):
        raise TypeError(f"spence: x.dtype={aval.dtype} is not supported (float32 or float64 only)")
    x = rnp.asarray(x)
    if aval.weak_type:
        x = lax.convert_element_type(x, aval.dtype, weak_type=False)
    # the formula runs on 1 where a constant is chosen (its gradient there is 0)
    special = rnp.logical_or(rnp.less(x, 0.0), rnp.logical_or(rnp.equal(x, 1.0), rnp.equal(x, 0.0)))
    value = _spence_positive(rnp.where(special, rnp.ones_like(x), x))
    return _select_last(
        value,
        (rnp.less(x, 0.0), _const(x, np.nan)),
        (rnp.equal(x, 1.0), _const(x, 0.0)),
        (rnp.equal(x, 0.0), _const(x, np.pi**2 / 6)),
    )


# --- sici ---------------------------------------------------------------------------

# Cephes sici.c, highest power first: Si/Ci series on |x| <= 4 (in x^2), the
# auxiliary functions f, g on (4, 8) and [8, 1e9] (in 1/x^2).
_SICI_SN = (
    -8.391678279103039e-11,
    4.625917144270128e-08,
    -9.757593038436328e-06,
    0.0009769454381704354,
    -0.04134703162294066,
    1.0,
)
_SICI_SD = (
    2.0326926619595193e-12,
    1.279978911799433e-09,
    4.418278428012189e-07,
    9.964121220438756e-05,
    0.01420852393261499,
    1.0,
)
_SICI_CN = (
    2.0252400238910228e-11,
    -1.3524950491579076e-08,
    3.593250514199931e-06,
    -0.0004740072068734079,
    0.028915965260755523,
    -1.0,
)
_SICI_CD = (
    4.077460400618806e-12,
    3.067809975818878e-09,
    1.2321035568588342e-06,
    0.00031744202477503275,
    0.051002805623644606,
    4.0,
)
_SICI_FN4 = (
    4.236128628922166,
    5.4593771716181285,
    1.6208328770153833,
    0.16700661183132304,
    0.006810201324725182,
    0.00010893658065032867,
    5.489002234213736e-07,
)
_SICI_FD4 = (
    1.0,
    8.16496634205391,
    7.308288225055645,
    1.867922579501842,
    0.1787920529631499,
    0.007017106683227897,
    0.00011003435715391573,
    5.489002527562557e-07,
)
_SICI_GN4 = (
    0.08710016989731142,
    0.6113791099522193,
    0.3971802963923375,
    0.07485277376284691,
    0.005388686814621773,
    0.00016199979459893403,
    1.9796387414096365e-06,
    7.825790407440903e-09,
)
_SICI_GD4 = (
    1.0,
    1.6440220241335535,
    0.666296701268988,
    0.09887717612776888,
    0.006223963454417684,
    0.0001732210814741771,
    2.0265918208634397e-06,
    7.825792189335346e-09,
)
_SICI_FN8 = (
    0.4558808734704653,
    0.7137152741001467,
    0.16030015822231947,
    0.01160642294081244,
    0.00034955644244785906,
    4.8621543082645475e-06,
    3.200927900910049e-08,
    9.41779576128513e-11,
    9.70507110881952e-14,
)
_SICI_FD8 = (
    1.0,
    0.9174636118736841,
    0.17868554533207454,
    0.012225359477197129,
    0.00035869648188185157,
    4.924350643178815e-06,
    3.21956939101046e-08,
    9.437205903502767e-11,
    9.70507110881952e-14,
)
_SICI_GN8 = (
    0.6973599534432762,
    0.33041097930563207,
    0.03848787676499743,
    0.001717182390523479,
    3.4894116550227946e-05,
    3.471311670841167e-07,
    1.7040445278204452e-09,
    3.859459254302766e-12,
    3.1404009894636335e-15,
)
_SICI_GD8 = (
    1.0,
    1.6854889881101165,
    0.48785225869530496,
    0.04679131942596258,
    0.0019028442667439953,
    3.684755044425611e-05,
    3.5704322344374083e-07,
    1.7269374896631615e-09,
    3.878301660239547e-12,
    3.1404009894636335e-15,
)


def _sici_value(x: Any) -> tuple[Any, Any]:
    one = _const(x, 1.0)
    ax = rnp.abs(x)
    # series (|x| <= 4)
    t = rnp.square(ax)
    si_s = rnp.divide(rnp.multiply(ax, _horner(_SICI_SN, t)), _horner(_SICI_SD, t))
    ci_s = rnp.add(
        rnp.add(_const(x, np.euler_gamma), rnp.log(ax)),
        rnp.divide(rnp.multiply(t, _horner(_SICI_CN, t)), _horner(_SICI_CD, t)),
    )
    si_s = rnp.where(rnp.equal(ax, 0.0), _const(x, 0.0), si_s)
    ci_s = rnp.where(rnp.equal(ax, 0.0), _const(x, -np.inf), ci_s)
    # asymptotic: Si = pi/2 - f cos - g sin, Ci = f sin - g cos (4 < |x| <= 1e9)
    s, c = rnp.sin(ax), rnp.cos(ax)
    z = rnp.divide(one, rnp.square(ax))
    below8 = rnp.less(ax, 8.0)
    f = rnp.where(
        below8,
        rnp.divide(_horner(_SICI_FN4, z), rnp.multiply(ax, _horner(_SICI_FD4, z))),
        rnp.divide(_horner(_SICI_FN8, z), rnp.multiply(ax, _horner(_SICI_FD8, z))),
    )
    g = rnp.where(
        below8,
        rnp.divide(rnp.multiply(z, _horner(_SICI_GN4, z)), _horner(_SICI_GD4, z)),
        rnp.divide(rnp.multiply(z, _horner(_SICI_GN8, z)), _horner(_SICI_GD8, z)),
    )
    half_pi = _const(x, np.pi / 2)
    si_a = rnp.subtract(rnp.subtract(half_pi, rnp.multiply(f, c)), rnp.multiply(g, s))
    ci_a = rnp.subtract(rnp.multiply(f, s), rnp.multiply(g, c))
    # beyond 1e9: the leading terms; exact limits at +inf
    inf = rnp.isposinf(ax)
    si_f = rnp.where(inf, half_pi, rnp.subtract(half_pi, rnp.divide(c, ax)))
    ci_f = rnp.where(inf, _const(x, 0.0), rnp.divide(s, ax))
    series = rnp.less_equal(ax, 4.0)
    middle = rnp.logical_and(rnp.greater(ax, 4.0), rnp.less_equal(ax, 1e9))
    si = rnp.where(series, si_s, rnp.where(middle, si_a, si_f))
    ci = rnp.where(series, ci_s, rnp.where(middle, ci_a, ci_f))
    return rnp.multiply(rnp.sign(x), si), rnp.where(rnp.isneginf(x), _const(x, np.nan), ci)


def _sici_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    d_si = rnp.sinc(rnp.divide(x, _const(x, np.pi)))
    d_ci = rnp.divide(rnp.cos(x), x)
    return _sici_value(x), (rnp.multiply(d_si, t), rnp.multiply(d_ci, t))


_sici = custom_derivatives.custom_jvp(_sici_value)
_sici.defjvp(_sici_jvp)


def sici(x: Any) -> tuple[Any, Any]:
    """The sine and cosine integrals ``(Si(x), Ci(x))``: ``Si = int_0^x sin t / t dt``
    (odd), ``Ci = gamma + log|x| + int_0^|x| (cos t - 1) / t dt`` (real part for
    ``x < 0``; ``-inf`` at 0, NaN at ``-inf``). Cephes' series for ``|x| <= 4``,
    its auxiliary-function fits up to 1e9, ``pi/2 - cos x / x`` and ``sin x / x``
    beyond. Derivatives ``sin x / x`` and ``cos x / x``."""
    (x,) = _strong_inexact("sici", x)
    return _sici(x)


# --- fresnel ------------------------------------------------------------------------

# Cephes fresnl (float32: fresnlf's polynomials; float64: rational fits), highest
# power first.
_FRESNEL32_SN = (
    1.6476294637887e-09,
    -1.522754752581096e-07,
    8.4247488085024e-06,
    -0.0003120693124703272,
    0.007244727626597022,
    -0.09228055941124598,
    0.5235987735681432,
)
_FRESNEL32_CN = (
    1.416802502367354e-08,
    -1.157231412229871e-06,
    5.387223446683264e-05,
    -0.001604381798862293,
    0.02818489036795073,
    -0.2467398198317899,
    0.9999999760004487,
)
_FRESNEL32_FN = (
    -1903009855649.792,
    135594238805.0252,
    -4158143148.511033,
    73438484.63587323,
    -873235.6681548485,
    8560.51546627547,
    -103.2877601091159,
    2.999401847870011,
)
_FRESNEL32_GN = (
    -186084399762.465,
    12783506733.93208,
    -377938771.3202229,
    6492611.570598858,
    -77877.89623358162,
    860.2931494734327,
    -14.93439396592284,
    0.9999841934744914,
)
_FRESNEL64_SN = (
    -2991.8191940101983,
    708840.0452577386,
    -62974148.62058625,
    2548908805.7337637,
    -44297951805.96978,
    318016297876.5678,
)
_FRESNEL64_SD = (
    1.0,
    281.3762688899943,
    45584.78108065326,
    5173438.887700964,
    419320245.8981112,
    22441179564.534092,
    607366389490.0846,
)
_FRESNEL64_CN = (
    -4.9884311457357354e-08,
    9.504280628298596e-06,
    -0.0006451914356839651,
    0.018884331939670384,
    -0.20552590095501388,
    1.0,
)
_FRESNEL64_CD = (
    3.99982968972496e-12,
    9.154392157746574e-10,
    1.2500186247959882e-07,
    1.2226278902417902e-05,
    0.0008680295429417843,
    0.04121420907221998,
    1.0,
)
_FRESNEL64_FN = (
    0.4215435550436775,
    0.1434079197807589,
    0.011522095507358577,
    0.000345017939782574,
    4.6361374928786735e-06,
    3.055689837902576e-08,
    1.0230451416490724e-10,
    1.7201074326816183e-13,
    1.3428327623306275e-16,
    3.763297112699879e-20,
)
_FRESNEL64_FD = (
    1.0,
    0.7515863983533789,
    0.11688892585919138,
    0.0064405152650885865,
    0.00015593440916415301,
    1.8462756734893055e-06,
    1.1269922476399903e-08,
    3.6014002958937136e-11,
    5.887545336215784e-14,
    4.5200143407412973e-17,
    1.2544323709001127e-20,
)
_FRESNEL64_GN = (
    0.5044420736433832,
    0.1971028335255234,
    0.018764858409257526,
    0.0006840793809153931,
    1.1513882611188428e-05,
    9.828524436884223e-08,
    4.4534441586175015e-10,
    1.0826804113902088e-12,
    1.375554606332618e-15,
    8.363544356306774e-19,
    1.8695871016278324e-22,
)
_FRESNEL64_GD = (
    1.0,
    1.4749575992512833,
    0.33774898912002,
    0.02536037414203388,
    0.0008146791071843061,
    1.2754507566772912e-05,
    1.0431458965757199e-07,
    4.6068072814652043e-10,
    1.1027321506624028e-12,
    1.3879653125957886e-15,
    8.391588162831187e-19,
    1.8695871016278324e-22,
)


def _sincos_pi_half_square(x: Any) -> tuple[Any, Any]:
    """``(sin(pi x^2 / 2), cos(pi x^2 / 2))`` with the argument reduced exactly:
    ``x^2 / 2 mod 2 = (s (x - s/2)) mod 2`` for ``s = x mod 2``."""
    x = rnp.abs(x)
    s = rnp.fmod(x, _const(x, 2.0))
    r = rnp.fmod(rnp.multiply(s, rnp.subtract(x, rnp.divide(s, 2.0))), _const(x, 2.0))
    pi = _const(x, np.pi)

    def sin_pi(v):
        return rnp.sin(rnp.multiply(pi, v))

    sin = rnp.where(
        rnp.less(r, 0.5),
        sin_pi(r),
        rnp.where(rnp.greater(r, 1.5), sin_pi(rnp.subtract(r, 2.0)), -sin_pi(rnp.subtract(r, 1.0))),
    )
    cos = rnp.where(
        rnp.equal(r, 0.5),
        _const(x, 0.0),
        rnp.where(rnp.less(r, 1.0), -sin_pi(rnp.subtract(r, 0.5)), sin_pi(rnp.subtract(r, 1.5))),
    )
    return sin, cos


def _fresnel_value(xx: Any) -> tuple[Any, Any]:
    single = xx.dtype == np.float32
    one, half = _const(xx, 1.0), _const(xx, 0.5)
    x = rnp.abs(xx)
    x2 = rnp.square(x)
    t = rnp.square(x2)
    if single:
        s_small = rnp.multiply(rnp.multiply(x, x2), _horner(_FRESNEL32_SN, t))
        c_small = rnp.multiply(x, _horner(_FRESNEL32_CN, t))
    else:
        s_small = rnp.divide(
            rnp.multiply(rnp.multiply(x, x2), _horner(_FRESNEL64_SN, t)), _horner(_FRESNEL64_SD, t)
        )
        c_small = rnp.divide(rnp.multiply(x, _horner(_FRESNEL64_CN, t)), _horner(_FRESNEL64_CD, t))
    sin, cos = _sincos_pi_half_square(x)
    pi = _const(xx, np.pi)
    if single:
        s_large = c_large = rnp.full_like(x, 0.5)
    else:
        inv = rnp.divide(one, rnp.multiply(pi, x))
        c_large = rnp.add(half, rnp.multiply(inv, sin))
        s_large = rnp.subtract(half, rnp.multiply(inv, cos))
    pt = rnp.multiply(pi, x2)
    u = rnp.divide(one, rnp.multiply(pt, pt))
    w = rnp.divide(one, pt)
    if single:
        f = rnp.subtract(one, rnp.multiply(u, _horner(_FRESNEL32_FN, u)))
        g = rnp.multiply(w, _horner(_FRESNEL32_GN, u))
    else:
        f = rnp.subtract(
            one, rnp.divide(rnp.multiply(u, _horner(_FRESNEL64_FN, u)), _horner(_FRESNEL64_FD, u))
        )
        g = rnp.divide(rnp.multiply(w, _horner(_FRESNEL64_GN, u)), _horner(_FRESNEL64_GD, u))
    px = rnp.multiply(pi, x)
    c_other = rnp.add(
        half, rnp.divide(rnp.subtract(rnp.multiply(f, sin), rnp.multiply(g, cos)), px)
    )
    s_other = rnp.subtract(
        half, rnp.divide(rnp.add(rnp.multiply(f, cos), rnp.multiply(g, sin)), px)
    )
    inf = rnp.isinf(xx)
    small = rnp.less(x2, 2.5625)
    large = rnp.greater(x, 36974.0)
    s = rnp.where(inf, half, rnp.where(small, s_small, rnp.where(large, s_large, s_other)))
    c = rnp.where(inf, half, rnp.where(small, c_small, rnp.where(large, c_large, c_other)))
    neg = rnp.less(xx, 0.0)
    return rnp.where(neg, rnp.negative(s), s), rnp.where(neg, rnp.negative(c), c)


def _fresnel_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    sin, cos = _sincos_pi_half_square(x)
    return _fresnel_value(x), (rnp.multiply(sin, t), rnp.multiply(cos, t))


_fresnel = custom_derivatives.custom_jvp(_fresnel_value)
_fresnel.defjvp(_fresnel_jvp)


def fresnel(x: Any) -> tuple[Any, Any]:
    """The Fresnel integrals ``(S(x), C(x))``, ``S = int_0^x sin(pi t^2/2) dt``,
    ``C = int_0^x cos(pi t^2/2) dt`` (odd; 1/2 at ``+inf``). Cephes: float32
    uses ``fresnlf``'s polynomials (and 1/2 beyond 36974), float64 the rational
    fits; 16-bit types are computed in float32. Derivatives ``sin(pi x^2/2)``
    and ``cos(pi x^2/2)``."""
    (x,) = _strong_inexact("fresnel", x)
    if x.dtype == np.float64:
        return _fresnel(x)
    s, c = _fresnel(x.astype(np.float32))
    return s.astype(x.dtype), c.astype(x.dtype)


# --- owens_t ------------------------------------------------------------------------

# Patefield and Tandy (2000), method T5: 13 Gauss-type nodes t_i and weights w_i with
# T(h, a) ~ a sum_i w_i exp(-h^2 (1 + a^2 t_i) / 2) / (1 + a^2 t_i) for |a| <= 1
# (the 1/(2 pi) and the Jacobian of u^2 = a^2 t are inside the weights).
_OWENS_T_NODES = (
    0.0035082039676451715, 0.031279042338030754, 0.085266826283219451, 0.16245071730812277,
    0.25851196049125435, 0.36807553840697534, 0.48501092905604697, 0.60277514152618577,
    0.71477884217753227, 0.81475510988760099, 0.89711029755948966, 0.95723808085944262,
    0.99178832974629704,
)  # fmt: skip
_OWENS_T_WEIGHTS = (
    0.018831438115323503, 0.018567086243977649, 0.018042093461223386, 0.017263829606398753,
    0.016243219975989857, 0.014994592034116705, 0.013535474469662088, 0.011886351605820165,
    0.010070377242777432, 0.0081130545742299587, 0.0060419009528470239, 0.0038862217010742058,
    0.0016793031084546090,
)  # fmt: skip


def _owens_t_value(h: Any, a: Any) -> Any:
    one = _const(h, 1.0)
    root2 = _const(h, np.sqrt(2.0))
    h = rnp.abs(h)
    abs_a = rnp.abs(a)
    h_normed = rnp.divide(h, root2)
    # |a| > 1 is reduced to 1/|a| by T(h, a) + T(ah, 1/a) = (Phi(h) + Phi(ah))/2 - Phi(h) Phi(ah)
    inside = rnp.less_equal(abs_a, 1.0)
    ma = rnp.where(inside, abs_a, rnp.reciprocal(abs_a))
    mh = rnp.where(inside, h, rnp.multiply(abs_a, h))
    r = rnp.multiply(rnp.square(ma)[..., None], np.asarray(_OWENS_T_NODES, h.dtype))
    integrand = rnp.divide(
        rnp.exp(rnp.multiply(rnp.multiply(-0.5, rnp.square(mh))[..., None], rnp.add(one, r))),
        rnp.add(one, r),
    )
    result = rnp.multiply(ma, rnp.matmul(integrand, np.asarray(_OWENS_T_WEIGHTS, h.dtype)))
    result = rnp.where(rnp.equal(mh, 0.0), rnp.divide(rnp.arctan(ma), _const(h, 2 * np.pi)), result)
    at_one = rnp.multiply(
        0.125,
        rnp.multiply(
            lax.erfc(rnp.divide(rnp.negative(mh), root2)), lax.erfc(rnp.divide(mh, root2))
        ),
    )
    result = rnp.where(rnp.equal(ma, 1.0), at_one, result)
    ah_normed = rnp.multiply(abs_a, h_normed)
    norm_h, norm_ah = lax.erfc(h_normed), lax.erfc(ah_normed)
    small = rnp.subtract(
        rnp.subtract(0.25, rnp.multiply(0.25, rnp.multiply(lax.erf(h_normed), lax.erf(ah_normed)))),
        result,
    )
    big = rnp.subtract(
        rnp.multiply(0.25, rnp.subtract(rnp.add(norm_h, norm_ah), rnp.multiply(norm_h, norm_ah))),
        result,
    )
    reflected = rnp.where(rnp.less_equal(rnp.multiply(abs_a, h), 0.67), small, big)
    result = rnp.multiply(lax.sign(a), rnp.where(rnp.greater(abs_a, 1.0), reflected, result))
    return rnp.where(rnp.logical_or(rnp.isnan(a), rnp.isnan(h)), _const(h, np.nan), result)


def _owens_t_jvp(primals, tangents):
    (h, a), (dh, da) = primals, tangents
    a2p1 = rnp.add(rnp.square(a), 1.0)
    d_h = rnp.divide(
        rnp.multiply(
            rnp.negative(rnp.exp(rnp.multiply(-0.5, rnp.square(h)))),
            lax.erf(rnp.divide(rnp.multiply(a, h), _const(h, np.sqrt(2.0)))),
        ),
        rnp.multiply(2.0, _const(h, np.sqrt(2 * np.pi))),
    )
    d_a = rnp.divide(
        rnp.exp(rnp.multiply(rnp.multiply(-0.5, a2p1), rnp.square(h))),
        rnp.multiply(_const(h, 2 * np.pi), a2p1),
    )
    return _owens_t_value(h, a), rnp.add(rnp.multiply(d_h, dh), rnp.multiply(d_a, da))


_owens_t = custom_derivatives.custom_jvp(_owens_t_value)
_owens_t.defjvp(_owens_t_jvp)


def owens_t(h: Any, a: Any) -> Any:
    """Owen's T function ``T(h, a) = 1/(2 pi) int_0^a exp(-h^2 (1 + u^2)/2) / (1 + u^2) du``
    (13-point quadrature for ``|a| <= 1``, the reflection formula beyond; exact at
    ``h = 0`` and ``|a| = 1``; NaN if either is NaN). Differentiable in both."""
    h, a = _strong_inexact("owens_t", h, a)
    h, a = rnp.broadcast_arrays(h, a)
    return _owens_t(h, a)


__all__ = [
    "exp1",
    "expi",
    "expn",
    "fresnel",
    "owens_t",
    "sici",
    "spence",
]
