"""ri.mask: every masking rule, whole masked programs, jit trace counts, errors.

Each rule case runs a function masked on inputs padded with garbage (NaN,
inf, huge values) beyond random logical sizes, keeps the valid region of the
output (``out_shape`` evaluated at the sizes) and compares it with a NumPy
oracle applied to the unpadded inputs. The oracles are written here in plain
NumPy, independent of refimpl.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import lax
from refimpl.transforms.masking.shape_spec import parse_spec
from refimpl.transforms.masking.transform import logical_size

F32, I32, BOOL = np.dtype(np.float32), np.dtype(np.int32), np.dtype(bool)

# The padding holds NaN and inf on purpose; NumPy warns when ops compute on it.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

# --- NumPy oracles ----------------------------------------------------------------


def np_pad(x: np.ndarray, value: Any, config: list[tuple[int, int, int]]) -> np.ndarray:
    """XLA's pad: interior padding, then lo/hi (negative crops)."""
    for axis, (lo, hi, interior) in enumerate(config):
        n = x.shape[axis]
        shape = list(x.shape)
        shape[axis] = max(n + (n - 1) * interior, 0)
        spread = np.full(shape, value, x.dtype)
        index = [slice(None)] * x.ndim
        index[axis] = slice(None, None, interior + 1)
        spread[tuple(index)] = x
        widths = [(0, 0)] * x.ndim
        widths[axis] = (max(lo, 0), max(hi, 0))
        grown = np.pad(spread, widths, constant_values=value)
        crop = [slice(None)] * x.ndim
        crop[axis] = slice(-min(lo, 0), grown.shape[axis] + min(hi, 0))
        x = grown[tuple(crop)]
    return x


def np_conv(lhs, rhs, strides, padding, lhs_dilation=None, rhs_dilation=None):
    """Cross-correlation in NC<spatial> / OI<spatial> layout, by explicit loops."""
    nsp = lhs.ndim - 2
    lhs_dilation = lhs_dilation or (1,) * nsp
    rhs_dilation = rhs_dilation or (1,) * nsp
    x = lhs.astype(np.float64)
    for i, d in enumerate(lhs_dilation):  # dilate, then pad (negative crops)
        x = np_pad(x, 0.0, [(0, 0, 0)] * (2 + i) + [(0, 0, d - 1)] + [(0, 0, 0)] * (nsp - i - 1))
    x = np_pad(x, 0.0, [(0, 0, 0), (0, 0, 0)] + [(lo, hi, 0) for lo, hi in padding])
    w = rhs.astype(np.float64)
    for i, d in enumerate(rhs_dilation):
        w = np_pad(w, 0.0, [(0, 0, 0)] * (2 + i) + [(0, 0, d - 1)] + [(0, 0, 0)] * (nsp - i - 1))
    out_sp = [max(0, (x.shape[2 + i] - w.shape[2 + i]) // strides[i] + 1) for i in range(nsp)]
    out = np.zeros((x.shape[0], w.shape[0], *out_sp))
    for pos in np.ndindex(*out_sp):
        window = tuple(
            slice(p * s, p * s + k) for p, s, k in zip(pos, strides, w.shape[2:], strict=True)
        )
        patch = x[(slice(None), slice(None), *window)]
        out[(slice(None), slice(None), *pos)] = np.tensordot(
            patch, w, axes=([1, *range(2, 2 + nsp)], [1, *range(2, 2 + nsp)])
        )
    return out.astype(np.float32)


def np_cumulative(op, x, axis=0, reverse=False):
    if reverse:
        return np.flip(op.accumulate(np.flip(x, axis), axis=axis), axis)
    return op.accumulate(x, axis=axis)


def np_softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# --- the rule table ----------------------------------------------------------------


@dataclass
class Case:
    """One masked function: ``fun`` (refimpl), ``oracle`` (NumPy, unpadded)."""

    name: str
    fun: Callable[..., Any]
    oracle: Callable[..., Any]
    in_shapes: list[str]
    out_shape: str
    dtypes: list[np.dtype] | None = None  # per input; float32 by default
    min_size: int = 0  # smallest logical size of every named size
    rtol: float = 0.0
    values: Any = None  # per input: None (normal) or a list of special values to pick from
    sizes: tuple[str, ...] = field(default=("n",))
    min_padded: int = 0  # smallest padded size (some shape params are ambiguous below it)


ABS = [-np.inf, -2.0, -1.0, 0.0, 1.0, 2.0, np.inf, np.nan]  # ties, infinities, NaN
T = 2e-5

CASES = [
    # elementwise
    Case("sin", lambda x: rnp.sin(x), np.sin, ["(n, 3)"], "(n, 3)", rtol=1e-6),
    Case("unary-chain", lambda x: rnp.abs(rnp.floor(x * 3.0)) - rnp.exp(-rnp.abs(x)),
         lambda x: np.abs(np.floor(x * 3)) - np.exp(-np.abs(x)), ["(n,)"], "(n,)", rtol=1e-6),
    Case("binary", lambda x, y: x * y + x / (rnp.abs(y) + 1.0) - rnp.maximum(x, y),
         lambda x, y: x * y + x / (np.abs(y) + 1) - np.maximum(x, y), ["(n, 3)", "(n, 3)"],
         "(n, 3)", rtol=1e-6),
    Case("compare-where", lambda x, y: rnp.where(x > y, x, y - 1.0),
         lambda x, y: np.where(x > y, x, y - 1), ["(n, 2)", "(n, 2)"], "(n, 2)"),
    Case("select_n-int", lambda k, a, b, c: lax.select_n(k, a, b, c),
         lambda k, a, b, c: np.choose(k, [a, b, c]), ["(n,)", "(n,)", "(n,)", "(n,)"], "(n,)",
         dtypes=[I32, F32, F32, F32], values=[[0, 1, 2], None, None, None]),
    Case("clamp", lambda x: lax.clamp(np.float32(-0.5), x, np.float32(0.5)),
         lambda x: np.clip(x, -0.5, 0.5), ["(n,)"], "(n,)"),
    Case("convert-integer_pow", lambda x: lax.convert_element_type(lax.integer_pow(x, 2), I32),
         lambda x: (x.astype(np.int64) ** 2).astype(np.int32), ["(n,)"], "(n,)", dtypes=[I32],
         values=[list(range(-9, 10))]),
    Case("bitwise-int", lambda x, y: (x & y) ^ (x | 3), lambda x, y: (x & y) ^ (x | 3),
         ["(n,)", "(n,)"], "(n,)", dtypes=[I32, I32]),
    # broadcasting and iota
    Case("broadcast-scalar", lambda x: x * 2.0 + 1.0, lambda x: x * 2 + 1, ["(n,)"], "(n,)"),
    Case("broadcast-row", lambda x, b: x + b[None, :], lambda x, b: x + b[None, :],
         ["(n, 3)", "(3,)"], "(n, 3)"),
    Case("outer", lambda x, y: x[:, None] * y[None, :], lambda x, y: np.outer(x, y),
         ["(n,)", "(m,)"], "(n, m)", sizes=("n", "m")),
    Case("broadcast_in_dim", lambda x: lax.broadcast_in_dim(x, (x.shape[0], 4), (0,)),
         lambda x: np.broadcast_to(x[:, None], (len(x), 4)), ["(n,)"], "(n, 4)"),
    Case("iota", lambda x: x + lax.iota(np.float32, x.shape[0]),
         lambda x: x + np.arange(len(x), dtype=np.float32), ["(n,)"], "(n,)"),
    Case("broadcasted_iota", lambda x: x * lax.broadcasted_iota(np.float32, x.shape, 0),
         lambda x: x * np.arange(len(x), dtype=np.float32)[:, None], ["(n, 2)"], "(n, 2)"),
    # reshape, transpose, rev, squeeze
    Case("reshape-split", lambda x: rnp.reshape(x, (x.shape[0], 2, 3)),
         lambda x: x.reshape(len(x), 2, 3), ["(n, 6)"], "(n, 2, 3)"),
    Case("reshape-merge", lambda x: rnp.reshape(x, (x.shape[0] * 2, 3)),
         lambda x: x.reshape(len(x) * 2, 3), ["(n, 2, 3)"], "(2*n, 3)"),
    Case("reshape-unmerge", lambda x: rnp.reshape(x, (x.shape[0] // 2, 6)),
         lambda x: x.reshape(len(x) // 2, 6), ["(2*n, 3)"], "(n, 6)"),
    Case("reshape-leading-one", lambda x: rnp.reshape(x, (1, x.shape[1] * 3)),
         lambda x: x.reshape(1, -1), ["(1, n, 3)"], "(1, 3*n)", min_padded=2),
    Case("expand-squeeze", lambda x: rnp.squeeze(rnp.expand_dims(x, 0) * 2.0, 0),
         lambda x: x * 2, ["(n, 3)"], "(n, 3)"),
    Case("transpose", lambda x: x.T, lambda x: x.T, ["(n, 3)"], "(3, n)"),
    Case("transpose-two", lambda x: rnp.transpose(x, (1, 2, 0)),
         lambda x: np.transpose(x, (1, 2, 0)), ["(n, 2, m)"], "(2, m, n)", sizes=("n", "m")),
    Case("rev", lambda x: rnp.flip(x, 0), lambda x: np.flip(x, 0), ["(n, 3)"], "(n, 3)"),
    Case("rev-both", lambda x: lax.rev(x, (0, 1)), lambda x: np.flip(x, (0, 1)),
         ["(n, m)"], "(n, m)", sizes=("n", "m")),
    # slice
    Case("slice-drop-first", lambda x: x[1:], lambda x: x[1:], ["(n,)"], "(n - 1,)", min_size=1),
    Case("slice-drop-last", lambda x: x[:-1], lambda x: x[:-1], ["(n,)"], "(n - 1,)", min_size=1),
    Case("slice-both-ends", lambda x: x[2:-1], lambda x: x[2:-1], ["(n, 2)"], "(n - 3, 2)",
         min_size=3),
    Case("slice-stride", lambda x: x[::2], lambda x: x[::2], ["(n,)"], "((n + 1)//2,)"),
    Case("slice-start-stride", lambda x: x[1::3], lambda x: x[1::3], ["(n,)"], "((n + 1)//3,)",
         min_size=1),
    Case("slice-unmasked-dim", lambda x: x[:, 1:], lambda x: x[:, 1:], ["(n, 3)"], "(n, 2)"),
    Case("diff", lambda x: x[1:] - x[:-1], lambda x: x[1:] - x[:-1], ["(n,)"], "(n - 1,)",
         min_size=1),
    # pad
    Case("pad-lo-hi", lambda x: lax.pad(x, np.float32(-7), [(2, 1, 0)]),
         lambda x: np_pad(x, -7, [(2, 1, 0)]), ["(n,)"], "(n + 3,)"),
    Case("pad-interior-crop", lambda x: lax.pad(x, np.float32(9), [(1, -1, 1)]),
         lambda x: np_pad(x, 9, [(1, -1, 1)]), ["(n,)"], "(2*n - 1,)", min_size=1),
    Case("pad-negative-lo", lambda x: lax.pad(x, np.float32(0), [(-1, 2, 2), (1, 0, 0)]),
         lambda x: np_pad(x, 0, [(-1, 2, 2), (1, 0, 0)]), ["(n, 2)"], "(3*n - 1, 3)",
         min_size=1),
    Case("pad-two-masked", lambda x: lax.pad(x, np.float32(5), [(0, 2, 0), (1, 1, 1)]),
         lambda x: np_pad(x, 5, [(0, 2, 0), (1, 1, 1)]), ["(n, m)"], "(n + 2, 2*m + 1)",
         min_size=1, sizes=("n", "m")),
    Case("rnp-pad", lambda x: rnp.pad(x, (2, 1)), lambda x: np.pad(x, (2, 1)), ["(n,)"],
         "(n + 3,)"),
    # concatenate
    Case("concatenate", lambda x, y: rnp.concatenate([x, y]), lambda x, y: np.concatenate([x, y]),
         ["(n,)", "(m,)"], "(n + m,)", sizes=("n", "m")),
    Case("concatenate-three", lambda w, x, y: rnp.concatenate([w, x, y, w]),
         lambda w, x, y: np.concatenate([w, x, y, w]), ["(2,)", "(n,)", "(m,)"],
         "(n + m + 4,)", sizes=("n", "m")),
    Case("concatenate-2d", lambda x, w: rnp.concatenate([x, w, x], axis=0),
         lambda x, w: np.concatenate([x, w, x]), ["(n, 2)", "(3, 2)"], "(2*n + 3, 2)"),
    Case("concatenate-unmasked-axis", lambda x, y: rnp.concatenate([x, y], axis=1),
         lambda x, y: np.concatenate([x, y], axis=1), ["(n, 2)", "(n, 3)"], "(n, 5)"),
    # dot_general
    Case("dot-free", lambda x, w: x @ w, lambda x, w: x @ w, ["(n, 3)", "(3, 4)"], "(n, 4)",
         rtol=T),
    Case("dot-contracting", lambda x, y: x @ y, lambda x, y: x @ y, ["(3, n)", "(n, 2)"],
         "(3, 2)", rtol=T),
    Case("dot-vector", lambda x, y: rnp.dot(x, y), lambda x, y: np.float32(np.dot(x, y)),
         ["(n,)", "(n,)"], "()", rtol=T),
    Case("dot-batch-and-contracting",
         lambda x, y: lax.dot_general(x, y, (((2,), (1,)), ((0,), (0,)))),
         lambda x, y: np.einsum("bij,bjk->bik", x, y), ["(m, 2, n)", "(m, n, 3)"], "(m, 2, 3)",
         rtol=T, sizes=("n", "m")),
    Case("dot-int", lambda x, y: x @ y, lambda x, y: x @ y, ["(2, n)", "(n, 2)"], "(2, 2)",
         dtypes=[I32, I32]),
    # reductions
    Case("sum", lambda x: rnp.sum(x), lambda x: np.float32(x.sum()), ["(n,)"], "()", rtol=T),
    Case("sum-axis0", lambda x: x.sum(axis=0), lambda x: x.sum(axis=0), ["(n, 2)"], "(2,)",
         rtol=T),
    Case("sum-unmasked-axis", lambda x: x.sum(axis=1), lambda x: x.sum(axis=1), ["(n, 3)"],
         "(n,)", rtol=T),
    Case("sum-both", lambda x: lax.reduce_sum(x, (0, 1)), lambda x: np.float32(x.sum()),
         ["(n, m)"], "()", rtol=T, sizes=("n", "m")),
    Case("prod", lambda x: rnp.prod(x), lambda x: np.float32(np.prod(x)), ["(n,)"], "()",
         rtol=T),
    Case("max", lambda x: lax.reduce_max(x, (0,)), lambda x: np.max(x, axis=0, initial=-np.inf),
         ["(n, 2)"], "(2,)", values=[ABS]),
    Case("min-int", lambda x: lax.reduce_min(x, (0,)),
         lambda x: np.min(x, initial=np.iinfo(np.int32).max).astype(np.int32), ["(n,)"], "()",
         dtypes=[I32]),
    Case("max-keepdims", lambda x: rnp.max(x, axis=-1, keepdims=True),
         lambda x: np.max(x, axis=-1, keepdims=True), ["(n, m)"], "(n, 1)", min_size=1,
         sizes=("n", "m")),
    Case("and", lambda x: lax.reduce_and(x, (0,)), lambda x: np.all(x, axis=0), ["(n, 2)"],
         "(2,)", dtypes=[BOOL]),
    Case("or", lambda x: lax.reduce_or(x, (0,)), lambda x: np.any(x, axis=0), ["(n, 2)"],
         "(2,)", dtypes=[BOOL]),
    Case("any-compare", lambda x: rnp.any(x > 0.5), lambda x: np.any(x > 0.5), ["(n,)"], "()"),
    # argmax / argmin
    Case("argmax", lambda x: lax.argmax(x, 0), lambda x: np.argmax(x, axis=0).astype(np.int32),
         ["(n, 2)"], "(2,)", min_size=1, values=[ABS]),
    Case("argmin", lambda x: lax.argmin(x, 0), lambda x: np.argmin(x, axis=0).astype(np.int32),
         ["(n, 2)"], "(2,)", min_size=1, values=[ABS]),
    Case("argmax-int", lambda x: rnp.argmax(x), lambda x: np.int32(np.argmax(x)), ["(n,)"], "()",
         min_size=1, dtypes=[I32], values=[[-3, 0, 2, 5]]),
    Case("argmin-batch", lambda x: lax.argmin(x, 1), lambda x: np.argmin(x, 1).astype(np.int32),
         ["(n, 3)"], "(n,)", values=[ABS]),
    # cumulative
    Case("cumsum", lambda x: rnp.cumsum(x), lambda x: np.cumsum(x, dtype=np.float32), ["(n,)"],
         "(n,)", rtol=T),
    Case("cumsum-reverse", lambda x: lax.cumsum(x, 0, reverse=True),
         lambda x: np_cumulative(np.add, x, 0, True), ["(n, 2)"], "(n, 2)", rtol=T),
    Case("cumprod-reverse", lambda x: lax.cumprod(x, 0, reverse=True),
         lambda x: np_cumulative(np.multiply, x, 0, True), ["(n,)"], "(n,)", rtol=T),
    Case("cummax", lambda x: lax.cummax(x, 0), lambda x: np_cumulative(np.maximum, x),
         ["(n,)"], "(n,)", values=[ABS]),
    Case("cummax-reverse", lambda x: lax.cummax(x, 0, reverse=True),
         lambda x: np_cumulative(np.maximum, x, 0, True), ["(n,)"], "(n,)", values=[ABS]),
    Case("cummin-reverse-int", lambda x: lax.cummin(x, 0, reverse=True),
         lambda x: np_cumulative(np.minimum, x, 0, True), ["(n,)"], "(n,)", dtypes=[I32]),
    Case("cumsum-unmasked-axis", lambda x: lax.cumsum(x, 1, reverse=True),
         lambda x: np_cumulative(np.add, x, 1, True), ["(n, 3)"], "(n, 3)", rtol=T),
    # sort along an unmasked dim
    Case("sort-rows", lambda x: lax.sort(x, dimension=1), lambda x: np.sort(x, axis=1),
         ["(n, 4)"], "(n, 4)"),
    # conv_general_dilated
    Case("conv1d-valid", lambda x, w: lax.conv_general_dilated(x, w, (1,), "VALID"),
         lambda x, w: np_conv(x, w, (1,), [(0, 0)]), ["(1, 2, n)", "(3, 2, 2)"], "(1, 3, n - 1)",
         min_size=2, rtol=T),
    Case("conv1d-stride", lambda x, w: lax.conv_general_dilated(x, w, (2,), "VALID"),
         lambda x, w: np_conv(x, w, (2,), [(0, 0)]), ["(2, 1, n)", "(1, 1, 3)"],
         "(2, 1, (n - 3)//2 + 1)", min_size=3, rtol=T),
    Case("conv1d-same", lambda x, w: lax.conv_general_dilated(x, w, (1,), "SAME"),
         lambda x, w: np_conv(x, w, (1,), [(1, 1)]), ["(1, 2, n)", "(2, 2, 3)"], "(1, 2, n)",
         min_size=1, rtol=T),
    Case("conv1d-padding-dilation",
         lambda x, w: lax.conv_general_dilated(x, w, (1,), [(2, -1)], (2,), (2,)),
         lambda x, w: np_conv(x, w, (1,), [(2, -1)], (2,), (2,)), ["(1, 1, n)", "(1, 1, 2)"],
         "(1, 1, 2*n - 2)", min_size=2, rtol=T),
    Case("conv1d-batch", lambda x, w: lax.conv_general_dilated(x, w, (1,), "VALID"),
         lambda x, w: np_conv(x, w, (1,), [(0, 0)]), ["(m, 2, 5)", "(2, 2, 3)"], "(m, 2, 3)",
         rtol=T, sizes=("m",)),
    Case("conv1d-features", lambda x, w: lax.conv_general_dilated(x, w, (1,), "VALID"),
         lambda x, w: np_conv(x, w, (1,), [(0, 0)]), ["(1, n, 4)", "(2, n, 2)"], "(1, 2, 3)",
         rtol=T),
    Case("conv2d-masked-height", lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "VALID"),
         lambda x, w: np_conv(x, w, (1, 1), [(0, 0), (0, 0)]), ["(1, 1, n, 4)", "(2, 1, 2, 2)"],
         "(1, 2, n - 1, 3)", min_size=2, rtol=T),
    # dynamic_slice, dynamic_update_slice, gather
    Case("dynamic_slice-static-start", lambda x: lax.dynamic_slice(x, (1,), (2,)),
         lambda x: x[1:3], ["(n,)"], "(2,)", min_size=3),
    Case("dynamic_slice-clamped", lambda x, i: lax.dynamic_slice(x, (i, 0), (2, 3)),
         lambda x, i: x[min(max(int(i), 0), len(x) - 2):][:2], ["(n, 3)", "()"], "(2, 3)",
         min_size=2, dtypes=[F32, I32], values=[None, list(range(0, 12))], min_padded=3),
    Case("dynamic_slice-whole-dim", lambda x, i: lax.dynamic_slice(x, (i, i), (x.shape[0], 2)),
         lambda x, i: x[:, min(max(int(i), 0), 1):][:, :2], ["(n, 3)", "()"], "(n, 2)",
         dtypes=[F32, I32], values=[None, list(range(0, 5))]),
    Case("dynamic_update_slice", lambda x, u, i: lax.dynamic_update_slice(x, u, (i,)),
         lambda x, u, i: _np_update(x, u, int(i)), ["(n,)", "(2,)", "()"], "(n,)", min_size=2,
         dtypes=[F32, F32, I32], values=[None, None, list(range(0, 12))]),
    Case("gather-clip", lambda x, idx: lax.gather_along_axis(x, idx, 0),
         lambda x, idx: np.take(x, np.clip(idx, 0, len(x) - 1), axis=0), ["(n, 2)", "(4,)"],
         "(4, 2)", min_size=1, dtypes=[F32, I32], values=[None, list(range(0, 9))]),
    Case("gather-fill", lambda x, idx: lax.gather_along_axis(x, idx, 0, mode="fill"),
         lambda x, idx: np.where((idx >= 0) & (idx < len(x)), x[np.clip(idx, 0, len(x) - 1)],
                                 np.nan).astype(np.float32),
         ["(n,)", "(k,)"], "(k,)", min_size=1, dtypes=[F32, I32],
         values=[None, list(range(-2, 9))], sizes=("n", "k")),
    # reduce_window
    Case("reduce_window_sum-stride-pad",
         lambda x: lax.reduce_window(x, 0.0, lax.add, (3,), (2,), ((1, 2),)),
         lambda x: np_reduce_window(x, np.sum, 0, (3,), (2,), ((1, 2),)), ["(n,)"],
         "(n // 2 + 1,)", min_size=1, rtol=T),
    Case("reduce_window_max-2d-base-dilation",
         lambda x: lax.reduce_window(x, -np.inf, lax.max, (2, 2), (1, 1), ((0, 0), (0, 0)),
                                     base_dilation=(2, 1)),
         lambda x: np_reduce_window(x, np.max, -np.inf, (2, 2), (1, 1), ((0, 0), (0, 0)),
                                    base=(2, 1)),
         ["(n, m)"], "(2*n - 2, m - 1)", min_size=2, values=[ABS], sizes=("n", "m")),
    Case("reduce_window_min-int-window-dilation",
         lambda x: lax.reduce_window(x, np.iinfo(np.int32).max, lax.min, (2,), (1,), ((0, 1),),
                                     window_dilation=(2,)),
         lambda x: np_reduce_window(x, np.min, np.iinfo(np.int32).max, (2,), (1,), ((0, 1),),
                                    wdil=(2,)),
         ["(n,)"], "(n - 1,)", min_size=2, dtypes=[I32]),
    # top_k
    Case("top_k-masked-last-values", lambda x: lax.top_k(x, 2)[0], lambda x: np_top_k(x, 2)[0],
         ["(3, n)"], "(3, 2)", min_size=2, values=[ABS]),
    Case("top_k-masked-last-indices", lambda x: lax.top_k(x, 3)[1], lambda x: np_top_k(x, 3)[1],
         ["(2, n)"], "(2, 3)", min_size=3, values=[ABS]),
    Case("top_k-int-masked-leading", lambda x: lax.top_k(x, 3)[1], lambda x: np_top_k(x, 3)[1],
         ["(n, 4)"], "(n, 3)", dtypes=[I32], values=[[-(2**31), -1, 0, 1, 2**31 - 1]]),
    # one-axis scatters
    Case("scatter-drop", lambda x, i, u: lax.scatter_along_axis(x, i, u, 0),
         lambda x, i, u: np_scatter(None, x, i, u, 0, "drop"), ["(n, 2)", "(k,)", "(k, 2)"],
         "(n, 2)", min_size=1, dtypes=[F32, I32, F32], values=[None, list(range(0, 9)), None],
         sizes=("n", "k")),
    Case("scatter_add-clip", lambda x, i, u: lax.scatter_add_along_axis(x, i, u, 0, mode="clip"),
         lambda x, i, u: np_scatter(np.add, x, i, u, 0, "clip"), ["(n,)", "(k,)", "(k,)"],
         "(n,)", min_size=1, dtypes=[F32, I32, F32], values=[None, list(range(0, 9)), None],
         sizes=("n", "k"), rtol=T),
    Case("scatter_max-int-axis1", lambda x, i, u: lax.scatter_max_along_axis(x, i, u, 1),
         lambda x, i, u: np_scatter(np.maximum, x, i, u, 1, "drop"),
         ["(3, n)", "(k,)", "(3, k)"], "(3, n)", min_size=1, dtypes=[I32, I32, I32],
         values=[None, list(range(0, 9)), None], sizes=("n", "k")),
    Case("scatter_mul-2d-indices-masked-rows",
         lambda x, i, u: lax.scatter_mul_along_axis(x, i, u, 1),
         lambda x, i, u: np_scatter(np.multiply, x, i, u, 1, "drop"),
         ["(m, n)", "(2, k)", "(m, 2, k)"], "(m, n)", min_size=1, dtypes=[F32, I32, F32],
         values=[None, list(range(0, 9)), None], sizes=("n", "k", "m"), rtol=T),
]  # fmt: skip


def np_scatter(combine, x, indices, updates, axis, mode):
    """Reference one-axis scatter: row-major over ``indices``; out of range
    dropped or clamped; ``combine`` None: the last write wins."""
    out = np.moveaxis(x.copy(), axis, 0)
    rows = np.moveaxis(updates, list(range(axis, axis + indices.ndim)), list(range(indices.ndim)))
    for j in np.ndindex(*indices.shape):
        i = int(indices[j])
        if mode == "clip":
            i = min(max(i, 0), out.shape[0] - 1)
        elif not 0 <= i < out.shape[0]:
            continue
        out[i] = rows[j] if combine is None else combine(out[i], rows[j])
    return np.moveaxis(out, 0, axis)


def np_reduce_window(x, op, init, window, strides, padding, base=None, wdil=None):
    """Reference reduce_window: dilate by ``base``, pad with ``init``, combine windows."""
    base = base or (1,) * x.ndim
    wdil = wdil or (1,) * x.ndim
    shape = tuple(lo + (n - 1) * b + 1 + hi for n, b, (lo, hi) in zip(x.shape, base, padding))
    big = np.full(shape, init, x.dtype)
    big[
        tuple(slice(lo, lo + (n - 1) * b + 1, b) for n, b, (lo, _) in zip(x.shape, base, padding))
    ] = x
    spans = [(w - 1) * d + 1 for w, d in zip(window, wdil)]
    out_shape = tuple((p - s) // st + 1 for p, s, st in zip(shape, spans, strides))
    out = np.empty(out_shape, x.dtype)
    for j in np.ndindex(*out_shape):
        sel = tuple(slice(jj * st, jj * st + s, d) for jj, st, s, d in zip(j, strides, spans, wdil))
        out[j] = op(big[sel])
    return out


def np_top_k(x, k):
    """Per row: NaN first, then descending, ties by the lower index."""
    rows = x.reshape(-1, x.shape[-1])
    order = np.array(
        [
            sorted(range(len(r)), key=lambda i: (not np.isnan(r[i]), -float(r[i]), i))[:k]
            for r in rows
        ],
        np.int32,
    ).reshape(*x.shape[:-1], k)
    return np.take_along_axis(x, order, axis=-1), order


def _np_update(x: np.ndarray, u: np.ndarray, i: int) -> np.ndarray:
    out = x.copy()
    start = min(max(i, 0), len(x) - len(u))
    out[start : start + len(u)] = u
    return out


# --- running a case ----------------------------------------------------------------

_GARBAGE = {"f": [np.nan, np.inf, -np.inf, 1e30, -3e38], "i": [2**31 - 1, -(2**31), 12345]}


def _padded_inputs(case: Case, sizes: dict[str, int], padded_env: dict[str, int], rng):
    """(padded arrays with garbage past the logical sizes, unpadded copies)."""
    padded, logical = [], []
    dtypes = case.dtypes or [F32] * len(case.in_shapes)
    values = case.values or [None] * len(case.in_shapes)
    for text, dtype, choices in zip(case.in_shapes, dtypes, values, strict=True):
        spec = parse_spec(text)
        shape = tuple(d.evaluate(padded_env) for d in spec.dims)
        valid = tuple(d.evaluate(sizes) for d in spec.dims)
        if choices is not None:
            full = rng.choice(np.asarray(choices), size=shape).astype(dtype)
        elif dtype == BOOL:
            full = rng.random(shape) < 0.5
        elif dtype.kind == "i":
            full = rng.integers(-20, 20, size=shape).astype(dtype)
        else:
            full = rng.standard_normal(shape).astype(dtype)
        garbage = np.ones(shape, bool)
        garbage[tuple(slice(0, v) for v in valid)] = False
        if dtype != BOOL and garbage.any():
            pool = np.asarray(_GARBAGE[dtype.kind], dtype)
            full[garbage] = rng.choice(pool, size=int(garbage.sum()))
        padded.append(full)
        logical.append(full[tuple(slice(0, v) for v in valid)].copy())
    return padded, logical


_masked_cache: dict[str, Any] = {}


def _masked(case: Case) -> Any:
    """One masked function per case, so examples of one padded shape share a trace."""
    if case.name not in _masked_cache:
        _masked_cache[case.name] = ri.mask(case.fun, case.in_shapes, case.out_shape)
    return _masked_cache[case.name]


def run_case(case: Case, sizes: dict[str, int], extra: dict[str, int], seed: int) -> None:
    padded_env = {k: sizes[k] + extra[k] for k in sizes}
    rng = np.random.default_rng(seed)
    padded, logical = _padded_inputs(case, sizes, padded_env, rng)
    out = np.asarray(_masked(case)(padded, sizes))
    out_spec = parse_spec(case.out_shape)
    valid = tuple(slice(None) if d is None else slice(0, d.evaluate(sizes)) for d in out_spec.dims)
    with np.errstate(all="ignore"):
        expected = np.asarray(case.oracle(*logical))
    got = out[valid]
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert got.dtype == expected.dtype or expected.dtype == np.float64, (got.dtype, expected.dtype)
    if case.rtol:
        np.testing.assert_allclose(got, expected, rtol=case.rtol, atol=case.rtol * 10)
    else:
        np.testing.assert_array_equal(got, expected.astype(got.dtype))


@st.composite
def _sizes(draw, case: Case):
    sizes = {k: draw(st.integers(case.min_size, case.min_size + 4)) for k in case.sizes}
    extra = {k: draw(st.integers(max(0, case.min_padded - sizes[k]), 3)) for k in case.sizes}
    return sizes, extra, draw(st.integers(0, 2**32 - 1))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_rule_valid_region_matches_numpy(case: Case):
    @settings(max_examples=15, deadline=None, database=None)
    @given(_sizes(case))
    def check(drawn):
        sizes, extra, seed = drawn
        run_case(case, sizes, extra, seed)

    check()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_rule_at_the_edges(case: Case):
    """Smallest logical sizes and no padding at all."""
    low = {k: case.min_size for k in case.sizes}
    run_case(case, low, {k: max(2, case.min_padded - case.min_size) for k in case.sizes}, 0)
    high = {k: max(case.min_size + 2, case.min_padded) for k in case.sizes}
    run_case(case, high, {k: 0 for k in case.sizes}, 1)


# --- whole programs -------------------------------------------------------------------


def _garbage_padded(rng, shape, valid, dtype=F32):
    full = rng.standard_normal(shape).astype(dtype)
    garbage = np.ones(shape, bool)
    garbage[tuple(slice(0, v) for v in valid)] = False
    full[garbage] = np.nan
    return full


def _attention(q, k, v):
    scores = q @ k.T
    e = rnp.exp(scores - rnp.max(scores, axis=-1, keepdims=True))
    return (e / rnp.sum(e, axis=-1, keepdims=True)) @ v


@settings(max_examples=20, deadline=None, database=None)
@given(st.integers(1, 7), st.integers(0, 3), st.integers(0, 2**32 - 1))
def test_program_attention_with_masked_length(n, extra, seed):
    rng = np.random.default_rng(seed)
    p = n + extra
    q, k, v = (_garbage_padded(rng, (p, d), (n, d)) for d in (4, 4, 3))
    masked = _masked_program("attention", _attention, ["(n, 4)", "(n, 4)", "(n, 3)"], "(n, 3)")
    out = np.asarray(masked([q, k, v], {"n": n}))[:n]
    expected = np_softmax(q[:n] @ k[:n].T) @ v[:n]
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def _rnn(xs, w, h0):
    def step(h, x):
        h = rnp.tanh(h @ w + x)
        return h, rnp.sum(h)

    return lax.scan(step, h0, xs)


def _np_rnn(xs, w, h0):
    h, ys = h0, []
    for x in xs:
        h = np.tanh(h @ w + x)
        ys.append(h.sum())
    return h, np.asarray(ys, np.float32)


@settings(max_examples=20, deadline=None, database=None)
@given(st.integers(0, 6), st.integers(0, 3), st.integers(0, 2**32 - 1))
def test_program_rnn_step_via_scan(n, extra, seed):
    """The carry stops updating past n; ys rows below n are the unpadded ones."""
    rng = np.random.default_rng(seed)
    xs = _garbage_padded(rng, (n + extra, 3), (n, 3))
    w = rng.standard_normal((3, 3)).astype(F32) * 0.5
    h0 = rng.standard_normal(3).astype(F32)
    masked = _masked_program("rnn", _rnn, ["(n, 3)", "(3, 3)", "(3,)"], ("(3,)", "(n,)"))
    h, ys = masked([xs, w, h0], {"n": n})
    want_h, want_ys = _np_rnn(xs[:n], w, h0)
    np.testing.assert_allclose(np.asarray(h), want_h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(ys)[:n], want_ys, rtol=1e-5, atol=1e-5)


@settings(max_examples=15, deadline=None, database=None)
@given(st.integers(0, 6), st.integers(0, 3), st.booleans(), st.integers(0, 2**32 - 1))
def test_program_scan_reverse_and_masked_carry(n, extra, reverse, seed):
    """A reversed scan over a masked length whose carry is itself masked (m)."""
    rng = np.random.default_rng(seed)
    m, m_extra = 3, 2
    xs = _garbage_padded(rng, (n + extra, m + m_extra), (n, m))
    c0 = _garbage_padded(rng, (m + m_extra,), (m,))

    def fun(xs, c0):
        return lax.scan(lambda c, x: (c * 0.5 + x, c.sum()), c0, xs, reverse=reverse)

    masked = ri.mask(fun, ["(n, m)", "(m,)"], ("(m,)", "(n,)"))
    c, ys = masked([xs, c0], {"n": n, "m": m})
    want_c, want_ys = c0[:m], []
    for x in xs[:n][::-1] if reverse else xs[:n]:
        want_ys.append(want_c.sum())
        want_c = want_c * np.float32(0.5) + x[:m]
    if reverse:
        want_ys = want_ys[::-1]
    np.testing.assert_allclose(np.asarray(c)[:m], want_c, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(ys)[:n], np.asarray(want_ys, F32), rtol=1e-5, atol=1e-5)


def _conv_then_sum(x, w):
    y = lax.conv_general_dilated(x, w, (1,), "VALID")
    return rnp.sum(rnp.maximum(y, 0.0), axis=2)


@settings(max_examples=20, deadline=None, database=None)
@given(st.integers(3, 9), st.integers(0, 3), st.integers(0, 2**32 - 1))
def test_program_masked_conv1d_then_reduction(n, extra, seed):
    rng = np.random.default_rng(seed)
    x = _garbage_padded(rng, (2, 2, n + extra), (2, 2, n))
    w = rng.standard_normal((3, 2, 3)).astype(F32)
    masked = _masked_program("conv-sum", _conv_then_sum, ["(2, 2, n)", "(3, 2, 3)"], "(2, 3)")
    out = np.asarray(masked([x, w], {"n": n}))
    expected = np.maximum(np_conv(x[:, :, :n], w, (1,), [(0, 0)]), 0).sum(axis=2)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


_program_cache: dict[str, Any] = {}


def _masked_program(name, fun, in_shapes, out_shape):
    if name not in _program_cache:
        _program_cache[name] = ri.mask(fun, in_shapes, out_shape)
    return _program_cache[name]


def test_logical_size_gives_the_masked_mean():
    """rnp.mean would divide by the padded size; logical_size is the run-time n."""

    def mean(x):
        return rnp.sum(x) / logical_size("n").astype(np.float32)

    x = np.array([1, 2, 3, 4, np.nan, np.nan], F32)
    masked = ri.mask(mean, ["(n,)"], "()")
    for n in (1, 2, 4):
        np.testing.assert_allclose(np.asarray(masked([x], {"n": n})), x[:n].mean(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="only available while a masked function"):
        logical_size("n")


def test_logical_size_as_a_dynamic_index():
    """x[n - 1] (the last valid entry) via a run-time index."""
    x = np.array([5, 6, 7, np.nan], F32)
    masked = ri.mask(lambda x: lax.dynamic_index_in_dim(x, logical_size("n") - 1, 0, False),
                     ["(n,)"], "()")  # fmt: skip
    assert [float(np.asarray(masked([x], {"n": n}))) for n in (1, 2, 3)] == [5.0, 6.0, 7.0]


def test_nested_jit_is_masked_inline():
    inner = ri.jit(lambda x: rnp.cumsum(x, axis=0))
    masked = ri.mask(lambda x: inner(x * 2.0).sum(axis=0), ["(n, 2)"], "(2,)")
    x = np.array([[1, 2], [3, 4], [np.nan, np.inf]], F32)
    np.testing.assert_array_equal(np.asarray(masked([x], {"n": 2})), [10, 16])


def test_inputs_padded_beyond_the_spec_polynomials():
    """Padded sizes need not be the spec at one padded size (only >= it)."""
    masked = ri.mask(lambda x, y: rnp.sum(x) + rnp.sum(y), ["(n,)", "(2*n + 1,)"], "()")
    x = np.array([1, 2, np.nan, np.nan, np.nan], F32)
    y = np.array([1, 1, 1, 1, 1, np.nan, np.nan], F32)
    assert float(np.asarray(masked([x, y], {"n": 2}))) == 8.0


def test_pytree_arguments_and_outputs():
    def fun(args):
        return {"total": rnp.sum(args["a"]), "scaled": args["a"] * args["b"]}

    masked = ri.mask(fun, [{"a": "(n,)", "b": "()"}], {"total": "()", "scaled": "(n,)"})
    out = masked([{"a": np.array([1, 2, np.nan], F32), "b": np.float32(3)}], {"n": 2})
    assert float(np.asarray(out["total"])) == 3.0
    np.testing.assert_array_equal(np.asarray(out["scaled"])[:2], [3, 6])


# --- one trace per padded signature ------------------------------------------------------


def test_jit_of_mask_traces_once_for_twenty_sizes():
    calls = []

    def fun(x, y):
        calls.append(1)
        return rnp.cumsum(rnp.sin(x) @ y, axis=0)

    jitted = ri.jit(ri.mask(fun, ["(n, 3)", "(3, 2)"], "(n, 2)"))
    x = np.random.default_rng(0).standard_normal((24, 3)).astype(F32)
    y = np.random.default_rng(1).standard_normal((3, 2)).astype(F32)
    for n in range(1, 21):
        out = np.asarray(jitted([x, y], dict(n=n)))
        np.testing.assert_allclose(out[:n], np.cumsum(np.sin(x[:n]) @ y, axis=0), rtol=2e-5,
                                   atol=2e-5)  # fmt: skip
    assert jitted.trace_count == 1
    assert len(calls) == 1


def test_eager_mask_traces_once_per_padded_signature():
    calls = []

    def fun(x):
        calls.append(1)
        return rnp.sum(x)

    masked = ri.mask(fun, ["(n,)"], "()")
    for n in range(20):
        masked([np.ones(20, F32)], dict(n=n))
    assert masked.jitted.trace_count == 1 and len(calls) == 1
    masked([np.ones(21, F32)], dict(n=3))  # a new padded shape: one more trace
    assert masked.jitted.trace_count == 2


def test_sizes_under_jit_can_be_arrays_or_ints():
    jitted = ri.jit(ri.mask(lambda x: rnp.sum(x), ["(n,)"], "()"))
    x = np.arange(8, dtype=F32)
    assert float(np.asarray(jitted([x], dict(n=3)))) == 3.0
    assert float(np.asarray(jitted([x], dict(n=np.int32(4))))) == 6.0
    assert float(np.asarray(jitted([x], dict(n=ri.device_put(np.int32(5)))))) == 10.0


# --- errors ------------------------------------------------------------------------------


def _call(fun, in_shapes, out_shape, args, sizes):
    return ri.mask(fun, in_shapes, out_shape)(args, sizes)


X6 = np.zeros(6, F32)


def test_error_unparsable_spec_names_position():
    with pytest.raises(ValueError, match=r"mask\(<lambda>\): in_shapes: cannot parse shape spec "
                       r"'\(n,': expected a dim .* at the end of the spec"):  # fmt: skip
        ri.mask(lambda x: x, ["(n,"], "(n,)")
    with pytest.raises(ValueError, match="out_shape: cannot parse shape spec '2n'"):
        ri.mask(lambda x: x, ["(n,)"], "2n")


def test_error_padded_smaller_than_logical_names_argument_dim_spec_sizes():
    with pytest.raises(ValueError) as info:
        _call(lambda x, y: x, ["(n,)", "(2*n + 1, 3)"], "(n,)",
              [X6, np.zeros((6, 3), F32)], {"n": 3})  # fmt: skip
    message = str(info.value)
    for part in ("argument 1", "dim 0", "2*n + 1 = 7", "n=3", "'(2*n + 1, 3)'", "padded size 6"):
        assert part in message, (part, message)


def test_error_constant_dim_and_rank_mismatch():
    with pytest.raises(TypeError, match=r"argument 0 .*dim 1 must be 3 .*got 4"):
        _call(lambda x: x, ["(n, 3)"], "(n, 3)", [np.zeros((5, 4), F32)], {"n": 2})
    with pytest.raises(TypeError, match=r"argument 0 .* has rank 1 but its spec '\(n, 3\)'"):
        _call(lambda x: x, ["(n, 3)"], "(n, 3)", [X6], {"n": 2})


def test_error_sizes_missing_unknown_negative_or_not_ints():
    with pytest.raises(ValueError, match=r"missing \['n'\], unknown \['m'\]"):
        _call(lambda x: x, ["(n,)"], "(n,)", [X6], {"m": 2})
    with pytest.raises(ValueError, match="'n' must be >= 0, got -1"):
        _call(lambda x: x, ["(n,)"], "(n,)", [X6], {"n": -1})
    with pytest.raises(TypeError, match="'n' must be an integer scalar"):
        _call(lambda x: x, ["(n,)"], "(n,)", [X6], {"n": 2.5})
    with pytest.raises(ValueError, match="out_shape uses the sizes"):
        ri.mask(lambda x: x, ["(n,)"], "(m,)")


def test_error_args_do_not_match_in_shapes():
    with pytest.raises(TypeError, match="args do not match in_shapes"):
        _call(lambda x, y: x, ["(n,)", "(n,)"], "(n,)", [X6], {"n": 2})
    with pytest.raises(TypeError, match="args must be a list"):
        _call(lambda x: x, ["(n,)"], "(n,)", X6, {"n": 2})


def test_error_output_shape_or_tree_mismatch_names_both():
    with pytest.raises(TypeError, match=r"output 0 has logical shape \(\) .*out_shape says "
                       r"'\(n,\)'"):  # fmt: skip
        _call(lambda x: x.sum(), ["(n,)"], "(n,)", [X6], {"n": 2})
    with pytest.raises(TypeError, match=r"output 0 has logical shape \(n,\).*says '\(m,\)'"):
        _call(lambda x, y: x, ["(n,)", "(m,)"], "(m,)", [X6, X6], {"n": 2, "m": 2})
    with pytest.raises(TypeError, match="output structure .* does not match out_shape"):
        _call(lambda x: (x, x), ["(n,)"], "(n,)", [X6], {"n": 2})


def test_error_op_without_rule_names_it():
    with pytest.raises(NotImplementedError, match="'fft' has no masking rule"):
        _call(lambda x: rnp.fft.fft(x).real, ["(n,)"], "(n,)", [X6], {"n": 2})
    with pytest.raises(NotImplementedError, match="mask: sort: sorting along the masked dim 0"):
        _call(lambda x: lax.sort(x), ["(n,)"], "(n,)", [X6], {"n": 2})


def test_error_mismatched_logical_sizes_name_the_op():
    with pytest.raises(TypeError, match=r"mask: add: .* different logical sizes n and m"):
        _call(lambda x, y: x + y, ["(n,)", "(m,)"], "(n,)", [X6, X6], {"n": 2, "m": 3})
    with pytest.raises(TypeError, match="mask: dot_general: contracting dims 1 and 0 have"):
        _call(lambda x, y: x @ y, ["(2, n)", "(m, 2)"], "(2, 2)",
              [np.zeros((2, 6), F32), np.zeros((6, 2), F32)], {"n": 2, "m": 3})  # fmt: skip


def test_error_unsupported_shapes_of_supported_ops():
    with pytest.raises(NotImplementedError, match="reshape: the masked dim must lead"):
        _call(lambda x: rnp.reshape(x, (-1,)), ["(3, n)"], "(3*n,)",
              [np.zeros((3, 6), F32)], {"n": 2})  # fmt: skip
    with pytest.raises(NotImplementedError, match="dynamic_update_slice: the update"):
        _call(lambda x, u: lax.dynamic_update_slice(x, u, (0,)), ["(n,)", "(m,)"], "(n,)",
              [X6, np.zeros(3, F32)], {"n": 4, "m": 2})  # fmt: skip
    with pytest.raises(NotImplementedError, match="conv_general_dilated: the kernel's spatial"):
        _call(lambda x, w: lax.conv_general_dilated(x, w, (1,), "VALID"),
              ["(1, 1, 6)", "(1, 1, n)"], "(1, 1, _)",
              [np.zeros((1, 1, 6), F32), np.zeros((1, 1, 3), F32)], {"n": 2})  # fmt: skip


@settings(max_examples=15, deadline=None, database=None)
@given(st.integers(0, 5), st.integers(0, 3), st.integers(-1, 3), st.integers(0, 2**32 - 1))
def test_cond_and_switch_with_masked_operands(n, extra, which, seed):
    rng = np.random.default_rng(seed)
    x = _garbage_padded(rng, (n + extra + 1, 2), (n, 2))  # rnp.max rejects a padded size 0

    def fun(x, k):
        branches = [lambda x: rnp.sum(x, axis=0), lambda x: rnp.max(x, axis=0),
                    lambda x: rnp.min(x, axis=0)]  # fmt: skip
        return lax.switch(k, branches, x)

    masked = _masked_program("switch", fun, ["(n, 2)", "()"], "(2,)")
    out = np.asarray(masked([x, np.int32(which)], {"n": n}))
    valid = x[:n]
    expected = [valid.sum(0), np.max(valid, 0, initial=-np.inf), np.min(valid, 0, initial=np.inf)]
    np.testing.assert_allclose(out, expected[min(max(which, 0), 2)], rtol=1e-5, atol=1e-6)


def test_scan_closing_over_a_masked_value_and_fori_loop():
    x = np.array([1, 2, 3, np.nan, np.inf], F32)

    def fun(x):
        total, _ = lax.scan(lambda c, _: (c + rnp.sum(x), None), np.float32(0), None, length=3)
        doubled = lax.fori_loop(0, 2, lambda i, v: v * 2.0, x)
        return total, doubled

    masked = ri.mask(fun, ["(n,)"], ("()", "(n,)"))
    total, doubled = masked([x], {"n": 3})
    assert float(np.asarray(total)) == 18.0
    np.testing.assert_array_equal(np.asarray(doubled)[:3], [4, 8, 12])


def test_error_scan_carry_changes_logical_shape():
    def fun(x, y):
        return lax.scan(lambda c, _: (y, None), x, None, length=2)[0]

    with pytest.raises(TypeError, match=r"scan: the body returns carry 0 with logical shape "
                       r"\(m,\) but takes it with \(n,\)"):  # fmt: skip
        _call(fun, ["(n,)", "(m,)"], "(n,)", [X6, X6], {"n": 2, "m": 3})


def test_error_while_loop_over_a_masked_carry_has_no_rule():
    with pytest.raises(NotImplementedError, match="'while' has no masking rule"):
        _call(lambda x: lax.while_loop(lambda v: rnp.sum(v) < 10.0, lambda v: v + 1.0, x),
              ["(n,)"], "(n,)", [X6], {"n": 2})  # fmt: skip


def test_reduce_window_negative_padding_under_mask():
    x = np.arange(6, dtype=np.float32)

    def window(padding):
        return lambda v: ri.lax.reduce_window(v, np.float32(0), ri.lax.add, (2,), (1,), padding)

    # a negative low pad crops the logical operand's head: its windows, NumPy's sums
    out = ri.mask(window(((-1, 0),)), ["(n,)"], "(n - 2,)")([x], dict(n=4))
    np.testing.assert_array_equal(np.asarray(out)[:2], [1 + 2, 2 + 3])
    # a negative high pad would crop the buffer's padding, not the logical tail
    with pytest.raises(NotImplementedError, match="negative high padding of a masked dim"):
        ri.mask(window(((0, -1),)), ["(n,)"], "(n - 2,)")([x], dict(n=4))
