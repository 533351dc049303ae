"""Bit-level integer primitives: ``population_count``, ``clz`` (elementwise)
and ``reduce_xor`` (a reduction), each with its rules side by side.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from refimpl import dtypes
from refimpl.primitives import ad_helpers, batch_rules, reductions
from refimpl.primitives import elementwise as ew
from refimpl.primitives.base import as_int_tuple

# --- population_count, clz -----------------------------------------------------------------

_INT = (dtypes.is_integer, "integer types")


def _unsigned(x: np.ndarray) -> np.ndarray:
    return x.view(np.dtype(f"u{x.dtype.itemsize}"))


def _population_count(x: np.ndarray) -> np.ndarray:
    return np.bitwise_count(_unsigned(x)).astype(x.dtype)


def _clz(x: np.ndarray) -> np.ndarray:
    """Leading zero bits: the width minus the bit length (found by halving)."""
    bits = 8 * x.dtype.itemsize
    u = _unsigned(x).astype(np.uint64)
    length = np.zeros(x.shape, np.int64)
    shift = bits // 2
    while shift:
        high = u >> np.uint64(shift)
        moved = high != 0
        length = np.where(moved, length + shift, length)
        u = np.where(moved, high, u)
        shift //= 2
    length = length + (u != 0)
    return (bits - length).astype(x.dtype)


population_count_p = ew.unary("population_count", _population_count, _INT)
clz_p = ew.unary("clz", _clz, _INT)

for _prim, _op in [(population_count_p, "popcnt"), (clz_p, "count_leading_zeros")]:
    _prim.def_mask(ew._elementwise_mask_rule)
    _prim.def_batch(batch_rules.elementwise_batch_rule(_prim))
    _prim.def_jvp(ad_helpers.zero_jvp(_prim))
    _prim.def_lowering(ew._hlo_unary(_op))


def population_count(x: Any) -> Any:
    """Number of set bits of each integer (of its two's complement bits)."""
    return population_count_p.bind(x)


def clz(x: Any) -> Any:
    """Number of leading zero bits of each integer (the bit width for 0)."""
    return clz_p.bind(x)


# --- reduce_xor ------------------------------------------------------------------------------
#
# As reduce_or: a reduction primitive over bool or integer operands (XOR of
# bools is parity), always strongly typed, zero derivative; its rules are the
# reductions' own (refimpl/primitives/reductions.py).


def _xor(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    return np.bitwise_xor.reduce(x, axis=axes, initial=dtypes.zero(x.dtype))


reduce_xor_p = reductions.reduction("reduce_xor", _xor, reductions.BOOL_OR_INT, False)
reduce_xor_p.def_batch(reductions._reduction_batch_rule(reduce_xor_p))
reduce_xor_p.def_mask(reductions._reduction_mask_rule(reduce_xor_p, dtypes.zero))
reduce_xor_p.def_jvp(ad_helpers.zero_jvp(reduce_xor_p))


@reduce_xor_p.def_lowering
def _reduce_xor_lowering(ctx, x, *, axes):
    dtype = ctx.avals_in[0].dtype
    init = ctx.constant(dtypes.zero(dtype), dtype)
    (out,) = ctx.reduce([x], [dtype], [init], axes, lambda acc, v: [ctx.hlo.xor(acc, v)])
    return [out]


def reduce_xor(operand: Any, axes: Sequence[int]) -> Any:
    """Bitwise XOR of ``operand`` (bool or integer) over ``axes`` (distinct,
    non-negative); the empty XOR is 0 (``False``). Strongly typed, as JAX."""
    return reduce_xor_p.bind(operand, axes=as_int_tuple("reduce_xor", axes, "axes"))


__all__ = [
    "population_count",
    "clz",
    "reduce_xor",
]
