"""Complex elementwise functions as XLA computes them, where NumPy differs.

NumPy's complex functions follow C99's special values and its own choice of
signs for zero parts; XLA's complex formulas (JAX 0.10.2's lowerings, CHLO's
expansions) give other results at infinite and NaN parts, other signs of
zero parts, and flush subnormal results. The reference defines these
functions as XLA does, so that the reference interpreter, the PJRT backend and
JAX agree on every pair of parts (``tests/primitives/test_complex_parts_parity.py``
and the conformance fuzzer's ``complex_special`` kind check them against XLA).

:func:`numpy_with_xla_values` gives the reference implementation of one
function: NumPy's result for finite parts, replaced by XLA's where the rules
below say so. Real input passes through NumPy's function unchanged.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from refimpl import dtypes


def flush_subnormal(r: np.ndarray) -> np.ndarray:
    # XLA's CPU code flushes subnormal results to zero (the sign kept)
    return np.where(np.abs(r) < dtypes.finfo(r.dtype).tiny, r * 0, r)


# --- complex functions at infinities and NaN: XLA's results ----------------------------
# NumPy follows C99's special values (sin(inf + 0j) is nan + 0j, exp(-inf + inf j)
# is 0); XLA's complex formulas give NaN in both parts there. Each rule below
# replaces NumPy's result only where an input part is infinite or NaN (finite
# inputs keep NumPy's values), as measured against XLA on every pair of parts
# from {0, -0, +-1.5, +-3e38, +-inf, nan}.

_NAN_PAIR = complex(np.nan, np.nan)


def _any_nan(z: np.ndarray) -> np.ndarray:
    return np.isnan(z.real) | np.isnan(z.imag)


def _xla_complex(fn: Callable[..., np.ndarray], nan_where: Callable[..., np.ndarray]):
    """``fn``, and for complex input both parts NaN where ``nan_where(x, out)``."""

    def impl(x: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            out = np.asarray(fn(x))
        if not dtypes.is_complex(x.dtype):
            return out
        return np.where(nan_where(x, out), np.asarray(_NAN_PAIR, x.dtype), out)

    return impl


def _exp_nan(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    # e^(+-inf) times cos/sin of an infinite or NaN angle
    return np.isinf(x.real) & ~np.isfinite(x.imag)


def _result_nan(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    return _any_nan(out)


def _result_nan_off_imaginary_axis(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    # sin, cos, tan of (+-0, nan): C99's and XLA's results agree
    return _any_nan(out) & (x.real != 0)


def _result_nan_off_real_axis(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    # sinh, cosh, tanh of (nan, +-0): C99's and XLA's results agree
    return _any_nan(out) & (x.imag != 0)


def _expm1(x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        out = np.asarray(np.expm1(x))
    if dtypes.is_complex(x.dtype):
        # a real argument keeps a zero imaginary part where e^x overflows or is NaN
        # (NumPy's inf * 0 is NaN there), and as XLA's it is +0 whatever the sign of
        # the argument's zero; XLA's real part is never -0 (expm1(-0-0j) is 0+0j):
        # +0.0 turns a -0 into +0 and leaves every other value as it is
        out = out.copy()
        out.imag = np.where(x.imag == 0, 0, out.imag)
        out.real = out.real + 0.0
    return out


def _arc_sin_cos(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """``fn`` (NumPy's arcsin or arccos) as XLA's (CHLO's) complex asin/acos:
    the sign of a zero imaginary part on the branch cuts ``|Re z| > 1`` is
    ignored (asin(1.5 - 0j) is pi/2 + 0.96j, NumPy's pi/2 - 0.96j), and
    ``+-0 + nan j`` gives nan + nan j (NumPy: a finite real part)."""

    def impl(x: np.ndarray) -> np.ndarray:
        if not dtypes.is_complex(x.dtype):
            return fn(x)
        z = np.array(x)
        z.imag = np.where((x.imag == 0) & (np.abs(x.real) > 1), 0, x.imag)
        with np.errstate(all="ignore"):
            out = fn(z)
        on_axis_nan = (x.real == 0) & np.isnan(x.imag)
        out = np.where(on_axis_nan, np.asarray(_NAN_PAIR, x.dtype), out)
        # XLA's large-argument branch (|Re z| >= sqrt(max) / 8) still applies when the
        # imaginary part is NaN: asin(3e38 + nan j) is nan + 89.29j (log(2 |Re z|); acos's
        # negated; an infinite one gives nan + inf j), whatever the NaN's sign bit; NumPy
        # gives nan + nan j
        part = np.abs(x.real).astype(np.float64)
        big = np.isnan(x.imag) & (part >= np.sqrt(float(np.finfo(x.real.dtype).max)) / 8)
        if big.any():
            with np.errstate(divide="ignore", over="ignore"):
                imag = np.log(2.0) + np.log(part)
            big_out = np.empty(x.shape, x.dtype)
            big_out.real = np.nan
            big_out.imag = imag if fn is np.arcsin else -imag
            out = np.where(big, big_out, out)
        return out

    return impl


def _complex_atanh_parts(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The parts of ``atanh(a + b j)`` as XLA expands ``chlo.atanh`` of a complex
    (JAX 0.10.2): ``log1p(4 |a| / ((1 - |a|)^2 + b^2)) / 4`` with the sign of
    ``a``, and ``atan2(2b, (1 - |a|)(1 + |a|) - b^2) / 2``; past a bound on
    either part the real part comes from ``1 / |a|`` (or 0 at an infinity) and
    the imaginary part is +-pi/2 by the sign of ``b`` (so NaN parts and
    infinities give XLA's results, which NumPy's do not); subnormal results
    are flushed to zero, as XLA's CPU code does."""
    real_dtype = a.dtype.type
    one, zero = real_dtype(1), real_dtype(0)
    # the bound and the 1 / eps + 2 ratio are the constants XLA's expansion uses
    bound, tiny_ratio = (
        (real_dtype("2.81475044e+14"), real_dtype(16777218))
        if a.dtype == np.float32
        else (real_dtype("8.1129638414606718e+31"), real_dtype(9007199254740994))
    )
    with np.errstate(all="ignore"):
        ax, ay = np.abs(a), np.abs(b)
        in_range = (ax < bound) & (ay < bound)
        one_minus = one - ax
        near = ax / (one_minus * one_minus + b * b)
        far = np.where(np.isinf(a) | np.isinf(b), zero, (one / (ax / b + b / ax)) / b)
        far = np.where(ay * tiny_ratio < ax, one / ax, far)
        ratio = flush_subnormal(np.where(in_range, near, far))
        sign_a = np.where(a >= zero, one, -one)
        real = sign_a * np.log1p(ratio * real_dtype(4)) * real_dtype(0.25)
        angle = np.arctan2(b + b, one_minus * (ax + one) - b * b)
        sign_b = np.where(b >= zero, one, -one)
        imag = np.where(in_range, angle, sign_b * real_dtype(np.pi)) * real_dtype(0.5)
    return flush_subnormal(real.astype(a.dtype)), flush_subnormal(imag.astype(a.dtype))


def _atan(x: np.ndarray) -> np.ndarray:
    if not dtypes.is_complex(x.dtype):
        return np.arctan(x)
    # atan(z) = -i atanh(i z), the multiplications by +-i as swaps of parts (exact),
    # as XLA's chlo.atan of a complex
    a, b = _complex_atanh_parts(-np.imag(x), np.real(x))
    out = np.empty(x.shape, x.dtype)
    out.real, out.imag = b, -a
    return out


def _sqrt(x: np.ndarray) -> np.ndarray:
    if not dtypes.is_complex(x.dtype):
        return np.sqrt(x)
    # XLA ignores the sign of a zero imaginary part on the negative real axis
    # (sqrt(-1 - 0j) is +1j, NumPy's -1j), and a NaN part makes both NaN
    z = np.array(x)
    z.imag = np.where((x.real < 0) & (x.imag == 0), 0, x.imag)
    with np.errstate(all="ignore"):
        out = np.sqrt(z)
    return np.where(_any_nan(x), np.asarray(_NAN_PAIR, x.dtype), out)


# --- complex functions' zero parts: XLA's signs ------------------------------------------
# Where NumPy's complex result has a zero part, its sign can differ from XLA's (found by the
# conformance fuzzer's complex_special kind): exp(0.5 - 0j) is 1.65 - 0j in NumPy, 1.65 + 0j
# in XLA. Each rule gives a zero part XLA's sign, measured against XLA on every pair of
# parts from {0, -0, +-1e-30, +-0.5, +-1.5, +-2, +-10, +-100, +-3e38, +-inf, nan}; "+ 0.0"
# where XLA's part is never -0 (it turns -0 into +0 and leaves every other value as is).


def _with_zero_signs(
    impl: Callable[[np.ndarray], np.ndarray],
    fix: Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]],
) -> Callable[[np.ndarray], np.ndarray]:
    """``impl``, its complex result's parts then passed through ``fix(x, re, im)``."""

    def wrapped(x: np.ndarray) -> np.ndarray:
        result = impl(x)
        if not dtypes.is_complex(x.dtype):
            return result
        out = np.array(result)
        out.real, out.imag = fix(x, out.real, out.imag)
        return out

    return wrapped


def _positive_zero(where: np.ndarray, part: np.ndarray) -> np.ndarray:
    return np.where(where & (part == 0), 0.0, part).astype(part.dtype)


def _both_infinite(x: np.ndarray) -> np.ndarray:
    return np.isinf(x.real) & np.isinf(x.imag)


def _log1p_real_unscaled(x: np.ndarray, re: np.ndarray) -> np.ndarray:
    """log|1 + z| where NumPy's complex64 log1p overflows for finite parts near the
    largest float (log1p(3e38 + 3e38j) is inf + 0.79j in NumPy, 88.9 + 0.79j in XLA)."""
    over = np.isinf(re) & np.isfinite(x.real) & np.isfinite(x.imag)
    if not over.any():
        return re
    wide = np.log(np.hypot(1.0 + x.real.astype(np.float64), x.imag.astype(np.float64)))
    return np.where(over, wide, re).astype(re.dtype)


_ZERO_SIGNS: dict[str, Callable[..., tuple[np.ndarray, np.ndarray]]] = {
    # e^x (cos y + i sin y) with the imaginary part +0 for a real argument
    "exp": lambda x, re, im: (re, _positive_zero(x.imag == 0, im)),
    "sqrt": lambda x, re, im: (re, _positive_zero(x.imag == 0, im)),
    "sin": lambda x, re, im: (re + 0.0, im),
    # the part that is 0 * (something) on the imaginary axis is +0 there
    "cos": lambda x, re, im: (re, _positive_zero(x.real == 0, im)),
    "tan": lambda x, re, im: (_positive_zero((x.real == 0) | _both_infinite(x), re), im),
    "sinh": lambda x, re, im: (re + 0.0, im + 0.0),
    "cosh": lambda x, re, im: (re, im + 0.0),
    "tanh": lambda x, re, im: (re, _positive_zero((x.imag == 0) | _both_infinite(x), im)),
    "asin": lambda x, re, im: (re, im + 0.0),
    "acos": lambda x, re, im: (re, np.where(im == 0, -0.0, im).astype(im.dtype)),
    "log1p": lambda x, re, im: (_log1p_real_unscaled(x, re), im),
}


def _log1p(x: np.ndarray) -> np.ndarray:
    """``log1p``; for a complex ``z = a + bi`` not NumPy's ``log(1 + z)``,
    which loses the real part's digits to the rounding of ``1 + z`` near 0
    and near the circle ``|1 + z| = 1`` (complex64 ``log1p(1e-5)`` had real
    part 1.0014e-05; XLA 9.99995e-06), but ``log|1 + z| = log1p(a (2 + a) +
    b^2) / 2`` and ``atan2(b, 1 + a)``, in float64 for complex64, where the
    squares cannot overflow (NumPy's beyond ``|z| = 1e150``)."""
    out = np.log1p(x)
    if not np.iscomplexobj(x):
        return out
    small = np.abs(x) < 1e150  # False at NaN and infinite parts
    if not small.any():
        return out
    wide = x.astype(np.complex128)
    a, b = wide.real, wide.imag
    accurate = np.empty(x.shape, x.dtype)  # parts set one by one: + 1j * b loses -0.0
    accurate.real = 0.5 * np.log1p(a * (2.0 + a) + b * b)
    accurate.imag = np.arctan2(b, 1.0 + a)
    return np.where(small, accurate, out)


def _sinh(x: np.ndarray) -> np.ndarray:
    """Complex ``sinh`` at finite parts as JAX 0.10.2's ``chlo.sinh`` expands it:
    ``exp(z + log(1/2)) - exp(-z + log(1/2))`` in the input's precision, with
    its cancellation where ``|Re z|`` is small (``sinh(1e-20 + 1j)`` has real
    part 0, NumPy's 5.4e-21; ``sinh(0.001 + 0.001j)``'s is 0.0010000169 in
    complex64, NumPy's 0.0009999997). Elsewhere (infinite or NaN parts, real
    input) NumPy's, which the NaN and zero-sign rules then fix."""
    out = np.sinh(x)
    if not dtypes.is_complex(x.dtype):
        return out
    finite = np.isfinite(x.real) & np.isfinite(x.imag)
    half = x.dtype.type(np.log(np.asarray(0.5, x.real.dtype)))
    formula = np.exp(x + half) - np.exp(-x + half)
    return np.where(finite, formula, out)


# --- the functions ------------------------------------------------------------------------
# NumPy's function and where XLA's result is NaN in both parts
_NAN_WHERE: dict[str, tuple[Callable[..., np.ndarray], Callable[..., np.ndarray]]] = {
    "exp": (np.exp, _exp_nan),
    "log": (np.log, _result_nan),
    "log1p": (_log1p, _result_nan),
    "sin": (np.sin, _result_nan_off_imaginary_axis),
    "cos": (np.cos, _result_nan_off_imaginary_axis),
    "tan": (np.tan, _result_nan_off_imaginary_axis),
    "sinh": (_sinh, _result_nan_off_real_axis),
    "cosh": (np.cosh, _result_nan_off_real_axis),
    "tanh": (np.tanh, _result_nan_off_real_axis),
}

# functions whose XLA formula needs more than a NaN mask over NumPy's result
_OWN_RULES: dict[str, Callable[..., np.ndarray]] = {
    "expm1": _expm1,
    "asin": _arc_sin_cos(np.arcsin),
    "acos": _arc_sin_cos(np.arccos),
    "atan": _atan,
    "sqrt": _sqrt,
}


def numpy_with_xla_values(name: str) -> Callable[[np.ndarray], np.ndarray]:
    """The reference implementation of the elementwise function ``name``
    (``exp``, ``log``, ``log1p``, ``expm1``, ``sin``, ``cos``, ``tan``,
    ``sinh``, ``cosh``, ``tanh``, ``asin``, ``acos``, ``atan``, ``sqrt``):
    NumPy's, with XLA's values at complex infinite and NaN parts and XLA's
    signs of zero parts."""
    if name in _OWN_RULES:
        impl = _OWN_RULES[name]
    else:
        fn, nan_where = _NAN_WHERE[name]
        impl = _xla_complex(fn, nan_where)
    fix = _ZERO_SIGNS.get(name)
    return impl if fix is None else _with_zero_signs(impl, fix)
