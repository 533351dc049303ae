"""``reduce_precision``: round a float to fewer exponent and mantissa bits,
with its rules side by side.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import dtypes
from refimpl.core import ShapedArray
from refimpl.primitives import ad_helpers, batch_rules
from refimpl.primitives import elementwise as ew
from refimpl.primitives.base import Primitive, check_dtype_in
from refimpl.transforms.ad_util import Zero

# --- reduce_precision ----------------------------------------------------------------------

reduce_precision_p = Primitive("reduce_precision")


def _float_layout(dtype: np.dtype) -> tuple[int, int]:
    """(exponent bits, explicit mantissa bits) of a float dtype."""
    info = dtypes.finfo(dtype)
    return int(info.nexp), int(info.nmant)


@reduce_precision_p.def_abstract_eval
def _reduce_precision_abstract_eval(
    x: ShapedArray, *, exponent_bits: int, mantissa_bits: int
) -> ShapedArray:
    check_dtype_in("reduce_precision", x, dtypes.is_floating, "floating-point types")
    return x


@reduce_precision_p.def_impl
def _reduce_precision_impl(x: np.ndarray, *, exponent_bits: int, mantissa_bits: int):
    """XLA's bit manipulation: round the mantissa to nearest even (in the bits,
    so a carry may bump the exponent), then flush exponents below the reduced
    range to signed zero and above it to signed infinity; NaNs stay NaN (a
    NaN whose surviving mantissa bits are all zero is kept as the input)."""
    src_exp, src_mant = _float_layout(x.dtype)
    nbits = 8 * x.dtype.itemsize
    utype = np.dtype(f"u{x.dtype.itemsize}")
    bits = x.view(utype).copy()

    def u(value: int) -> Any:
        return utype.type(value & ((1 << nbits) - 1))

    if mantissa_bits < src_mant:
        drop = src_mant - mantissa_bits
        last_bit = 1 << drop
        base_bias = (last_bit >> 1) - 1
        last = (bits & u(last_bit)) >> u(drop)
        bits = (bits + last + u(base_bias)) & u(~(last_bit - 1))
    if exponent_bits < src_exp:
        sign_mask = u(1 << (nbits - 1))
        exp_mask = u(((1 << src_exp) - 1) << src_mant)
        bias = (1 << (src_exp - 1)) - 1
        reduced_bias = (1 << (exponent_bits - 1)) - 1
        max_exp, min_exp = bias + reduced_bias, bias - reduced_bias
        exponent = bits & exp_mask
        overflow = exponent > u(max_exp << src_mant)
        underflow = exponent <= u(min_exp << src_mant)
        signed_zero = bits & sign_mask
        signed_inf = signed_zero | exp_mask
        bits = np.where(overflow, signed_inf, np.where(underflow, signed_zero, bits))
    result = np.asarray(bits, utype).view(x.dtype)
    if mantissa_bits < src_mant or exponent_bits < src_exp:
        result = np.where(np.isnan(x), x, result)
    return np.asarray(result, x.dtype).reshape(x.shape)


@reduce_precision_p.def_jvp
def _reduce_precision_jvp(primals, tangents, **params):
    """Linear in JAX's sense: the tangent is rounded the same way."""
    (x,), (t,) = primals, tangents
    ans = reduce_precision_p.bind(x, **params)
    # unreachable from the public API: one differentiable operand, and the jvp trace calls a
    # rule only when some operand has a nonzero tangent (ad.JVPTrace.process_primitive)
    if ad_helpers.is_zero(t):  # pragma: no cover
        return ans, ad_helpers.zero_tangent(ad_helpers.aval_of(ans))
    return ans, reduce_precision_p.bind(t, **params)


@reduce_precision_p.def_transpose
def _reduce_precision_transpose(ct, x, **params):
    # unreachable from the public API: the backward pass skips an equation whose one output has
    # no cotangent and never passes a symbolic Zero to a single-output rule (ad.backward_pass)
    if isinstance(ct, Zero):  # pragma: no cover
        return [Zero(x.aval)]
    return [reduce_precision_p.bind(ct, **params)]


reduce_precision_p.def_batch(batch_rules.elementwise_batch_rule(reduce_precision_p))
reduce_precision_p.def_mask(ew._elementwise_mask_rule)


@reduce_precision_p.def_lowering
def _reduce_precision_lowering(ctx, x, *, exponent_bits: int, mantissa_bits: int):
    return [ctx.hlo.reduce_precision(x, exponent_bits, mantissa_bits)]


def reduce_precision(operand: Any, exponent_bits: int, mantissa_bits: int) -> Any:
    """Round ``operand`` to a float format with ``exponent_bits`` exponent and
    ``mantissa_bits`` mantissa bits, keeping its dtype (as XLA's ReducePrecision)."""
    for arg, value, low in [
        ("exponent_bits", exponent_bits, 1),
        ("mantissa_bits", mantissa_bits, 0),
    ]:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"reduce_precision: {arg} must be an int, got {value!r}")
        if value < low:
            raise ValueError(f"reduce_precision: {arg} must be at least {low}, got {value}")
    return reduce_precision_p.bind(
        operand, exponent_bits=int(exponent_bits), mantissa_bits=int(mantissa_bits)
    )


__all__ = [
    "reduce_precision",
]
