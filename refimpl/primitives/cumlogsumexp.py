"""``cumlogsumexp``: the inclusive ``log(cumsum(exp(x)))`` along an axis,
computed stably, with its rules side by side (batch and mask as the other
cumulative reductions of ``reductions.py``).
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from refimpl import dtypes, tracing
from refimpl.core import ShapedArray
from refimpl.primitives import ad_helpers, reductions
from refimpl.primitives import complex_parts as cp
from refimpl.primitives import elementwise as ew
from refimpl.primitives.base import Primitive, check_dtype_in

# --- cumlogsumexp ----------------------------------------------------------------------------

cumlogsumexp_p = Primitive("cumlogsumexp")


@cumlogsumexp_p.def_abstract_eval
def _cumlogsumexp_abstract_eval(x: ShapedArray, *, axis: int, reverse: bool) -> ShapedArray:
    check_dtype_in("cumlogsumexp", x, dtypes.is_inexact, "floating-point or complex types")
    reductions.check_axis("cumlogsumexp", x, axis)
    return x


def _np_logaddexp(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """JAX's logaddexp formula: ``max + log1p(exp(-|a - b|))``; ``a + b`` where
    the difference is NaN (a NaN, or infinities of one sign). exp and log1p
    are the reference's (XLA's float32 approximations; 16-bit floats
    through float32), so the result is XLA's bit for bit."""
    amax = np.maximum(a, b)
    delta = a - b
    stable = amax + ew.log1p_p.impl(ew.exp_p.impl(-np.abs(delta)))
    return np.where(np.isnan(delta), a + b, stable).astype(a.dtype)


def _np_logaddexp_complex(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """JAX's complex logaddexp (see ``logaddexp``) on NumPy values, with the
    reference's exp, log1p and max (XLA's order of complex numbers)."""
    amax = ew.max_p.impl(a, b)
    delta = (a + b) - amax * np.asarray(2, a.dtype)  # a complex product: -inf * 2 is -inf + nan j
    out = amax + ew.log1p_p.impl(ew.exp_p.impl(delta))
    pi, two_pi = (np.asarray(v, out.real.dtype) for v in (np.pi, 2 * np.pi))
    rem = np.fmod(out.imag + pi, two_pi)
    wrapped = np.zeros_like(out)
    wrapped.real, wrapped.imag = out.real, np.where(rem < 0, rem + two_pi, rem) - pi
    return wrapped


@cumlogsumexp_p.def_impl
def _cumlogsumexp_impl(x: np.ndarray, *, axis: int, reverse: bool) -> np.ndarray:
    """Output ``i`` folds its window with logaddexp in increasing index order,
    in the operand's dtype: inputs ``0..i`` (``i..n-1`` when reversed), as
    XLA's reduce_window does element by element. XLA gives the same bits
    for short windows; over long ones (about 18 and up on CPU) it
    reassociates, so results there differ in the last bits."""
    v = np.moveaxis(x, axis, 0)
    n = v.shape[0]
    if n == 0:
        return x
    if dtypes.is_complex(x.dtype):
        # the fold starts from reduce_window's init -inf, which the complex
        # formula does not leave unchanged (it wraps the imaginary part)
        combine = _np_logaddexp_complex
        out = combine(np.full_like(v, complex(-np.inf, 0)), v)
    else:  # (logaddexp(-inf, v) is v)
        combine, out = _np_logaddexp, v.copy()
    if reverse:  # out[i] = (...(v[i] + v[i+1]) + ...) + v[n-1]
        for k in range(1, n):
            out[: n - k] = combine(out[: n - k], v[k:])
    else:  # out[i] = (...(v[0] + v[1]) + ...) + v[i]
        for i in range(1, n):
            out[i] = combine(out[i - 1], v[i])
    return np.moveaxis(out, 0, axis)


cumlogsumexp_p.def_batch(reductions._cumulative_batch_rule(cumlogsumexp_p))
cumlogsumexp_p.def_mask(reductions._cumulative_mask_rule(cumlogsumexp_p, lambda d: -np.inf))


def _replace_inf(x: Any) -> Any:
    """``x`` with +inf replaced by 0, as JAX's logaddexp jvp: -inf stays, so
    a -inf input's weight ``exp(-inf - out)`` is 0, not 1 (complex: where
    the real part is +inf)."""
    aval = ad_helpers.aval_of(x)
    re = cp.real(x) if dtypes.is_complex(aval.dtype) else x
    inf = ew.eq(re, ad_helpers.scalar(np.inf, ad_helpers.aval_of(re)))
    return ew.select(inf, ad_helpers.zeros(aval), x)


def _wrap_pi(x: Any) -> Any:
    """``x`` wrapped into ``[-pi, pi)`` as JAX's ``_wrap_between(x, pi)``."""
    pi, two_pi = ad_helpers.lax_const(np.pi, x), ad_helpers.lax_const(2 * np.pi, x)
    rem = ew.rem(ew.add(x, pi), two_pi)
    rem = ew.select(ew.lt(rem, ad_helpers.lax_const(0, x)), ew.add(rem, two_pi), rem)
    return ew.sub(rem, pi)


def logaddexp(a: Any, b: Any) -> Any:
    """``log(exp(a) + exp(b))`` by JAX's formula (see ``_np_logaddexp``);
    complex: JAX 0.10.2's ``max + log1p(exp(a + b - 2 max))``, its imaginary
    part wrapped into ``[-pi, pi)``."""
    aval = ad_helpers.aval_of(a)
    if dtypes.is_complex(aval.dtype):
        amax = ew.max(a, b)
        delta = ew.sub(ew.add(a, b), ew.mul(amax, ad_helpers.lax_const(2, amax)))
        out = ew.add(amax, ew.log1p(ew.exp(delta)))
        return cp.complex(cp.real(out), _wrap_pi(cp.imag(out)))
    amax = ew.max(a, b)
    delta = ew.sub(a, b)
    stable = ew.add(amax, ew.log1p(ew.exp(ew.neg(ew.abs(delta)))))
    return ew.select(ew.ne(delta, delta), ew.add(a, b), stable) if aval.ndim >= 0 else stable


def _logaddexp_combine(a_pair, b_pair):
    """(value, tangent) pairs under logaddexp, with JAX's logaddexp jvp (the
    infinities replaced by 0 in the weights, so -inf inputs give 0 not NaN)."""
    (a, ta), (b, tb) = a_pair, b_pair
    out = logaddexp(a, b)
    wa = ew.exp(ew.sub(_replace_inf(a), _replace_inf(out)))
    wb = ew.exp(ew.sub(_replace_inf(b), _replace_inf(out)))
    return out, ew.add(ew.mul(ta, wa), ew.mul(tb, wb))


reductions._prefix_scan_jvp(cumlogsumexp_p, _logaddexp_combine)


@cumlogsumexp_p.def_lowering
def _cumlogsumexp_lowering(ctx, x, *, axis: int, reverse: bool):
    """A ``reduce_window`` as long as the axis, padded with -inf, whose body is
    the impl's logaddexp (exp and log1p of 16-bit floats in float32), as JAX
    lowers it."""
    dtype = ctx.avals_in[0].dtype
    shape = ctx.avals_in[0].shape
    n = shape[axis]
    window = [1] * len(shape)
    window[axis] = builtins.max(n, 1)
    padding = np.zeros((len(shape), 2), np.int64)
    if n:
        padding[axis] = (0, n - 1) if reverse else (n - 1, 0)
    op = ctx.hlo.ReduceWindowOp(
        [ctx.tensor_type(shape, dtype)],
        [x],
        [ctx.constant(-np.inf, dtype)],
        window,
        padding=ctx.ir.DenseIntElementsAttr.get(padding, shape=[len(shape), 2]),
    )

    def body(a, b):
        amax = ctx.hlo.maximum(a, b)
        delta = ctx.hlo.subtract(a, b)
        tail = ctx.in_float32(ctx.hlo.exponential, ctx.hlo.negate(ctx.hlo.abs(delta)), dtype=dtype)
        tail = ctx.in_float32(ctx.hlo.log_plus_one, tail, dtype=dtype)
        return [ctx.select(ctx.is_nan(delta, dtype), ctx.hlo.add(a, b), ctx.hlo.add(amax, tail))]

    if dtypes.is_complex(dtype):  # the body is the traced complex logaddexp
        scalar = ShapedArray((), dtype)
        program, _, _ = tracing.trace_to_program(
            lambda a, b: [logaddexp(a, b)], [scalar, scalar], "cumlogsumexp", ["a", "b"]
        )

        def body(a, b):  # noqa: F811 (the complex body replaces the real one)
            return ctx.lower_program(program, [a, b])

    ctx.scalar_block(op.regions[0], [dtype, dtype], body)
    return [op.results[0]]


def cumlogsumexp(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Inclusive ``log(cumsum(exp(operand)))`` along ``axis``, computed stably."""
    return cumlogsumexp_p.bind(operand, axis=reductions.integer_value(axis), reverse=bool(reverse))


__all__ = [
    "cumlogsumexp",
]
