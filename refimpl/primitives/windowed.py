"""Window reductions: ``reduce_window_sum``, ``reduce_window_max``, ``reduce_window_min``.

Semantics (StableHLO ``reduce_window`` with one operand and the monoid's
identity as init)::

    padded[lo_d + i_d * base_dilation_d] = operand[i]      (identity elsewhere;
                                                            shape lo + (n-1)*b + 1 + hi)
    out[j] = combine over k in window of padded[j * stride + k * window_dilation]

    out_shape_d = floor((padded_d - ((window_d - 1) * window_dilation_d + 1)) / stride_d) + 1

Constraints: (C1) one window size, stride and dilation per operand dimension,
all >= 1 (window sizes may be 0 only for empty windows, rejected here);
(C2) ``padding`` is one ``(lo, hi)`` pair of ints per dimension; a negative
one crops the base-dilated operand, as ``lax.pad`` (JAX 0.10.2 and XLA accept
it); (C3) a dilated window that does not fit in the padded operand gives no
output along that dimension. ``combine`` is ``+``
(sums of float16/bfloat16 accumulate in float32 in the reference), ``max``
or ``min`` (NaN propagates; bool: or / and).
Example: ``reduce_window_max([1, 3, 2, 5], window (2,), stride (2,))`` is
``[3, 5]``.

Rules: impl, lowering (``stablehlo.reduce_window``), batch (a window of 1
over the batch axis), jvp and transpose for the sum (it is linear), jvp for
max/min (the tangent of the element each window chose, the first on ties).
mask (padding filled with the identity; the output's logical size from the
formula above).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from refimpl import dtypes, pytree, tracing
from refimpl.core import ShapedArray
from refimpl.primitives import (
    ad_helpers,
    batch_rules,
    elementwise,
    indexing,
    reductions,
    rule_context,
    structural,
)
from refimpl.primitives.base import Primitive, as_int_tuple
from refimpl.primitives.computations import _monoid_reducer, computation_program
from refimpl.primitives.linalg import padtype_to_pads
from refimpl.transforms.masking.shape_spec import Dim

_IDENTITY = {
    "reduce_window_sum": dtypes.zero,
    "reduce_window_max": dtypes.min_value,
    "reduce_window_min": dtypes.max_value,
}


def _window_params(name: str, x: ShapedArray, params: dict[str, Any]) -> tuple[int, ...]:
    """Checks (C1)-(C3); returns the output shape."""
    n = x.ndim
    fields = ("window_dimensions", "window_strides", "base_dilation", "window_dilation")
    values = {f: params[f] for f in fields}
    for field, value in values.items():
        if len(value) != n:
            raise TypeError(f"{name}: {field} must have {n} entries (C1), got {value}")
        if any(v < 1 for v in value):  # JAX's words
            raise TypeError(
                f"{name}: {field} must have every element be strictly positive, got {value} (C1)"
            )
    padding = params["padding"]
    if len(padding) != n or any(len(p) != 2 for p in padding):
        raise TypeError(f"{name}: padding must be {n} (lo, hi) pairs of ints (C2), got {padding}")
    out = []
    for d in range(n):
        size = x.shape[d]
        dilated = (size - 1) * values["base_dilation"][d] + 1 if size else 0
        padded = padding[d][0] + dilated + padding[d][1]
        window = (values["window_dimensions"][d] - 1) * values["window_dilation"][d] + 1
        # A window larger than the padded dimension fits nowhere: an empty result, as JAX
        # 0.10.2 (XLA's shape rule)
        out.append(max(0, (padded - window) // values["window_strides"][d] + 1))
    return tuple(out)


def _empty_shape(padded: Any, spans: Any, strides: Any) -> tuple[int, ...]:
    return tuple(max(0, (p - s) // t + 1) for p, s, t in zip(padded, spans, strides, strict=True))


def _padded_operand(
    x: np.ndarray, fill: Any, padding: Any, base_dilation: Any, dtype: Any
) -> np.ndarray:
    """``x`` base-dilated (holes ``fill``) and padded with ``fill``: ``padded[lo
    + i * b] = x[i]``; a negative ``lo``/``hi`` crops that many elements from
    its end (all of them when it exceeds the length: a size-0 dimension)."""
    grown = [
        (max(lo, 0), (n - 1) * b + 1 if n else 0, max(hi, 0))
        for n, b, (lo, hi) in zip(x.shape, base_dilation, padding, strict=True)
    ]
    padded = np.full([lo + mid + hi for lo, mid, hi in grown], fill, dtype)
    padded[tuple(slice(lo, lo + mid, b) for (lo, mid, _), b in zip(grown, base_dilation))] = x
    crops = []
    for (lo, hi), size in zip(padding, padded.shape, strict=True):
        start = max(-lo, 0)
        crops.append(slice(start, max(start, size - max(-hi, 0))))
    return padded[tuple(crops)]


def _window_primitive(name: str, reduce: Any) -> Primitive:
    prim = Primitive(name)

    @prim.def_abstract_eval
    def _abstract_eval(x: ShapedArray, **params: Any) -> ShapedArray:
        # unreachable from the public API: reduce_window sends bool operands of an add
        # computation to the general primitive, and lax.add refuses bool before that
        if name == "reduce_window_sum" and dtypes.is_bool(x.dtype):  # pragma: no cover
            raise TypeError(f"{name}: does not accept dtype bool")
        return ShapedArray(_window_params(name, x, params), x.dtype, x.weak_type)

    @prim.def_impl
    def _impl(
        x: np.ndarray, *, window_dimensions, window_strides, padding, base_dilation, window_dilation
    ) -> np.ndarray:
        identity = _IDENTITY[name](x.dtype)
        work = x.dtype
        if name == "reduce_window_sum" and x.dtype in (np.float16, dtypes.bfloat16):
            work = np.dtype(np.float32)
        padded = _padded_operand(x.astype(work), identity, padding, base_dilation, work)
        shape = padded.shape
        spans = [(w - 1) * d + 1 for w, d in zip(window_dimensions, window_dilation, strict=True)]
        if any(s > p for s, p in zip(spans, shape, strict=True)):  # no window fits: empty
            return np.empty(_empty_shape(shape, spans, window_strides), x.dtype)
        views = sliding_window_view(padded, spans)
        views = views[tuple(slice(None, None, s) for s in window_strides)]
        dilated: tuple[Any, ...] = (Ellipsis, *(slice(None, None, d) for d in window_dilation))
        views = views[dilated]
        axes = tuple(range(x.ndim, 2 * x.ndim))
        with np.errstate(all="ignore"):
            return reduce(views, axis=axes).astype(x.dtype)

    @prim.def_lowering
    def _lowering(
        ctx, x, *, window_dimensions, window_strides, padding, base_dilation, window_dilation
    ):
        dtype = ctx.avals_in[0].dtype
        init = ctx.constant(_IDENTITY[name](dtype), dtype)
        pads = _padding_attr(padding)
        op = ctx.hlo.ReduceWindowOp(
            [ctx.ir_type(ctx.avals_out[0])],
            [x],
            [init],
            list(window_dimensions),
            window_strides=list(window_strides),
            base_dilations=list(base_dilation),
            window_dilations=list(window_dilation),
            padding=pads,
        )
        combine = _combiner(ctx, name, dtype)
        ctx.scalar_block(op.regions[0], [dtype, dtype], lambda a, b: [combine(a, b)])
        return list(op.results)

    @prim.def_batch
    def _batch(args, dims, **params):
        (x,), (d,) = args, dims
        x = batch_rules.moveaxis(x, d, 0)
        batched = {
            "window_dimensions": (1, *params["window_dimensions"]),
            "window_strides": (1, *params["window_strides"]),
            "padding": ((0, 0), *params["padding"]),
            "base_dilation": (1, *params["base_dilation"]),
            "window_dilation": (1, *params["window_dilation"]),
        }
        return prim.bind(x, **batched), 0

    @prim.def_mask
    def _mask(ctx, x, **params):
        """Any dim may be masked. Along a masked dim (logical ``L``) the
        padding is filled with the monoid's identity (0, the dtype's lowest
        or highest value), so the padded operand reads as the unpadded one
        followed by identities -- what high padding and base dilation add
        anyway -- and the first outputs are the unpadded program's. Logical
        output size ``(lo + (L - 1)*base_dilation + 1 + hi - window) //
        stride + 1`` with ``window = (w - 1)*window_dilation + 1``; this
        assumes ``L >= 1`` and that the window fits (the unpadded program
        rejects a window that does not: (C3)). Unmasked dims keep the
        primitive's output size.
        """
        logical = ctx.logical_in[0]
        masked_axes = [d for d, dim in enumerate(logical) if ctx.masked(dim)]
        if any(params["padding"][d][1] < 0 for d in masked_axes):
            # it would crop the padded buffer's tail, not the logical operand's
            raise NotImplementedError(
                f"{name}: negative high padding of a masked dimension is not supported "
                f"under mask, got padding {params['padding']}"
            )
        filled = ctx.fill_padding(x, logical, masked_axes, _IDENTITY[name](ctx.avals_in[0].dtype))
        out = prim.bind(filled, **params)
        out_logical = [Dim.constant(size) for size in out.shape]
        for d in masked_axes:
            lo, hi = params["padding"][d]
            window = (params["window_dimensions"][d] - 1) * params["window_dilation"][d] + 1
            extent = (logical[d] - 1) * params["base_dilation"][d] + 1 + lo + hi
            out_logical[d] = (extent - window) // params["window_strides"][d] + 1
        return out, tuple(out_logical)

    return prim


def _padding_attr(padding: Any) -> Any:
    from jaxlib.mlir import ir

    # jaxlib's stubs take a Buffer, which numpy's stubs make ndarray only on Python 3.12+
    return ir.DenseIntElementsAttr.get(np.asarray(padding, np.int64).reshape(-1, 2))  # type: ignore[call-overload]


def _combiner(ctx: Any, name: str, dtype: np.dtype) -> Any:
    if name == "reduce_window_sum":
        return ctx.hlo.add
    if dtypes.is_bool(dtype):
        return ctx.hlo.or_ if name == "reduce_window_max" else ctx.hlo.and_
    return ctx.hlo.maximum if name == "reduce_window_max" else ctx.hlo.minimum


reduce_window_sum_p = _window_primitive("reduce_window_sum", np.sum)
reduce_window_max_p = _window_primitive("reduce_window_max", np.max)
reduce_window_min_p = _window_primitive("reduce_window_min", np.min)


@reduce_window_sum_p.def_jvp
def _reduce_window_sum_jvp(primals, tangents, **params):
    """Linear: the tangent summed over the same windows."""
    (x,), (t,) = primals, tangents
    out = reduce_window_sum_p.bind(x, **params)
    # unreachable from the public API: the jvp trace calls a rule only when some operand has a
    # nonzero tangent, and this one has one operand (ad.JVPTrace.process_primitive)
    if ad_helpers.is_zero(t):  # pragma: no cover
        return out, ad_helpers.zero_tangent(ad_helpers.aval_of(out))
    return out, reduce_window_sum_p.bind(t, **params)


def _window_positions(
    shape: tuple[int, ...], out_shape: tuple[int, ...], params: dict
) -> np.ndarray:
    """Flat positions in the padded, base-dilated operand of every window
    element: an int32 array of shape ``out_shape + (window size,)``."""
    padded = [
        lo + ((n - 1) * b + 1 if n else 0) + hi
        for n, b, (lo, hi) in zip(shape, params["base_dilation"], params["padding"], strict=True)
    ]
    grids = np.meshgrid(*(np.arange(n) for n in out_shape), indexing="ij")
    offsets = np.meshgrid(*(np.arange(w) for w in params["window_dimensions"]), indexing="ij")
    flat = np.zeros(tuple(out_shape) + (int(np.prod(params["window_dimensions"])),), np.int64)
    stride = 1
    for d in reversed(range(len(shape))):
        coordinate = (
            grids[d][..., None] * params["window_strides"][d]
            + offsets[d].reshape(-1) * params["window_dilation"][d]
        )
        flat = flat + coordinate * stride
        stride *= padded[d]
    return flat.astype(np.int32)


def _chooser_jvp(prim: Primitive, arg_reduce: str):
    def rule(primals, tangents, **params):
        """The tangent of the element each window chose (the first one on ties,
        as ``argmax``/``argmin``)."""

        (x,), (t,) = primals, tangents
        out = prim.bind(x, **params)
        # unreachable from the public API: one operand, and the jvp trace calls a rule only
        # when some operand has a nonzero tangent (ad.JVPTrace.process_primitive)
        if ad_helpers.is_zero(t):  # pragma: no cover
            return out, ad_helpers.zero_tangent(ad_helpers.aval_of(out))
        x_aval = ad_helpers.aval_of(x)
        out_aval = ad_helpers.aval_of(out)
        if 0 in out_aval.shape:  # no window (negative padding may crop past the operand)
            return out, ad_helpers.zeros(ad_helpers.tangent_aval(out_aval))
        t = ad_helpers.instantiate(t, ad_helpers.tangent_aval(x_aval))
        return out, chosen_values(x, t, prim.name, out_aval.shape, params)

    return rule


def chosen_values(x: Any, t: Any, reduction: str, out_shape: tuple, params: dict) -> Any:
    """For each window of ``x`` (``params`` as a window primitive's), the
    element of ``t`` (``x``'s shape) at the place ``reduction``
    (``reduce_window_max`` or ``_min``) chooses in ``x``: the first one on ties,
    as ``argmax``/``argmin``. Windows are read as patches of the padded
    operand (``x`` padded with the reduction's identity, ``t`` with 0). Linear
    in ``t``: the max/min window's tangent, and JAX's ``select_and_gather_add``."""
    x_aval, t_aval = ad_helpers.aval_of(x), ad_helpers.aval_of(t)
    config = [
        (lo, hi, b - 1)
        for (lo, hi), b in zip(params["padding"], params["base_dilation"], strict=True)
    ]
    identity = _IDENTITY[reduction](x_aval.dtype)
    padded_x = structural.pad(x, np.asarray(identity, x_aval.dtype), config)
    padded_t = structural.pad(t, ad_helpers.scalar(0, t_aval), config)
    positions = _window_positions(x_aval.shape, out_shape, params)
    size = int(np.prod(ad_helpers.aval_of(padded_x).shape))
    patches_x = indexing.gather_along_axis_p.bind(
        structural.reshape(padded_x, (size,)), positions, axis=0, mode="clip", fill_value=None
    )
    patches_t = indexing.gather_along_axis_p.bind(
        structural.reshape(padded_t, (size,)), positions, axis=0, mode="clip", fill_value=None
    )
    last = len(out_shape)
    arg_reduce = "argmax" if reduction == "reduce_window_max" else "argmin"
    chosen = getattr(reductions, arg_reduce)(patches_x, last, np.int32)
    window = positions.shape[-1]
    flat_t = structural.reshape(patches_t, (int(np.prod(positions.shape, dtype=np.int64)),))
    rows = structural.reshape(
        structural.iota(np.int32, int(np.prod(out_shape, dtype=np.int64))), out_shape
    )
    index = elementwise.add(elementwise.mul(rows, np.int32(window)), chosen)
    return indexing.gather_along_axis_p.bind(flat_t, index, axis=0, mode="clip", fill_value=None)


reduce_window_max_p.def_jvp(_chooser_jvp(reduce_window_max_p, "argmax"))
reduce_window_min_p.def_jvp(_chooser_jvp(reduce_window_min_p, "argmin"))


@reduce_window_sum_p.def_transpose
def _reduce_window_sum_transpose(
    ct, x, *, window_dimensions, window_strides, padding, base_dilation, window_dilation
):
    """Each input element gets the sum of the cotangents of the windows it is
    in: the cotangent spread back by stride (interior zeros), padded by the
    dilated window span, summed over windows again (stride 1), then read at
    the operand's places in the padded, base-dilated layout."""

    # unreachable from the public API: the backward pass skips an equation whose one output has
    # no cotangent and never passes a symbolic Zero to a single-output rule (ad.backward_pass)
    if isinstance(ct, ad_helpers.Zero):  # pragma: no cover
        return [ad_helpers.Zero(x.aval)]
    shape = x.aval.shape
    out_shape = ad_helpers.aval_of(ct).shape
    zero = ad_helpers.scalar(0, ad_helpers.aval_of(ct))
    if 0 in out_shape:  # no window: nothing reaches the operand
        return [structural.broadcast_in_dim(zero, shape, ())]
    config, uncrop, starts, limits, strides = [], [], [], [], []
    for d, n in enumerate(shape):
        span = (window_dimensions[d] - 1) * window_dilation[d]
        lo, hi = padding[d]
        dilated = (n - 1) * base_dilation[d] + 1 if n else 0
        padded = lo + dilated + hi
        spread = (out_shape[d] - 1) * window_strides[d] + 1
        config.append((span, padded - spread, window_strides[d] - 1))
        # negative padding cropped operand elements: zeros put them back in the layout
        uncrop.append((max(-lo, 0), max(-hi, 0), 0))
        starts.append(max(lo, 0))
        limits.append(max(lo, 0) + dilated)
        strides.append(base_dilation[d])
    spread_ct = structural.pad(ct, zero, config)
    ones = (1,) * len(shape)
    summed = reduce_window_sum_p.bind(
        spread_ct,
        window_dimensions=window_dimensions,
        window_strides=ones,
        padding=tuple((0, 0) for _ in shape),
        base_dilation=ones,
        window_dilation=window_dilation,
    )
    if any(lo or hi for lo, hi, _ in uncrop):
        summed = structural.pad(summed, zero, uncrop)
    return [structural.slice(summed, starts, limits, strides)]


# --- the general reduce_window: any computation, any init, several operands --------------
#
# ``reduce_window_p`` (JAX's generic ``reduce_window``): operands of one shape
# and rank-0 inits; each window's operand elements fold in row-major order
# into the inits with ``program`` (``2n`` rank-0 inputs, ``n`` outputs).
# Padding and the holes of base dilation are skipped, as XLA does (JAX 0.10.2
# on CPU: a window of holes only is the init), although StableHLO's text
# says they hold the init value -- the same for a monoid.

reduce_window_p = Primitive("reduce_window", multiple_results=True)


@reduce_window_p.def_abstract_eval
def _reduce_window_abstract_eval(*avals: ShapedArray, program: Any, **params: Any):
    n = len(avals) // 2
    operands, inits = list(avals[:n]), list(avals[n:])
    reductions.check_reducer("reduce_window", operands, inits, program)
    if any(o.shape != operands[0].shape for o in operands):
        raise TypeError(
            f"reduce_window: operands must have one shape, got {[o.shape for o in operands]}"
        )
    shape = _window_params("reduce_window", operands[0], params)
    return [ShapedArray(shape, o.dtype) for o in operands]


def _windows(x: np.ndarray, fill: np.ndarray, params: dict[str, Any]) -> np.ndarray:
    """The windows of ``x`` (padding and dilation holes ``fill``): shape
    ``out_shape + window_dimensions``."""
    padded = _padded_operand(x, fill, params["padding"], params["base_dilation"], x.dtype)
    shape = padded.shape
    spans = [
        (w - 1) * d + 1
        for w, d in zip(params["window_dimensions"], params["window_dilation"], strict=True)
    ]
    if any(s > p for s, p in zip(spans, shape, strict=True)):  # no window fits: empty
        out = _empty_shape(shape, spans, params["window_strides"])
        return np.empty((*out, *params["window_dimensions"]), x.dtype)
    views = sliding_window_view(padded, spans)
    views = views[tuple(slice(None, None, s) for s in params["window_strides"])]
    dilated: tuple[Any, ...] = (
        Ellipsis,
        *(slice(None, None, d) for d in params["window_dilation"]),
    )
    return views[dilated]


@reduce_window_p.def_impl
def _reduce_window_impl(*values: np.ndarray, program: Any, **params: Any):
    n = len(values) // 2
    operands, inits = values[:n], values[n:]
    out_shape = _window_params("reduce_window", ShapedArray(operands[0].shape,
                               operands[0].dtype), params)  # fmt: skip
    m = int(np.prod(out_shape, dtype=np.int64))
    k = int(np.prod(params["window_dimensions"], dtype=np.int64))
    rows = [
        np.ascontiguousarray(_windows(x, i, params)).reshape(m, k)
        for x, i in zip(operands, inits, strict=True)
    ]
    inside = _windows(np.ones(operands[0].shape, bool), np.zeros((), bool), params)
    valid = np.ascontiguousarray(inside).reshape(m, k)
    folded = reductions.fold_rows(program, rows, list(inits), valid)
    return [a.reshape(out_shape) for a in folded]


@reduce_window_p.def_lowering
def _reduce_window_general_lowering(
    ctx, *values, program, window_dimensions, window_strides, padding, base_dilation,
    window_dilation,
):  # fmt: skip
    n = len(values) // 2
    op = ctx.hlo.ReduceWindowOp(
        [ctx.ir_type(a) for a in ctx.avals_out],
        list(values[:n]),
        list(values[n:]),
        list(window_dimensions),
        window_strides=list(window_strides),
        base_dilations=list(base_dilation),
        window_dilations=list(window_dilation),
        padding=_padding_attr(padding),
    )
    dtypes_ = [a.dtype for a in ctx.avals_in[:n]]
    ctx.scalar_block(
        op.regions[0], [*dtypes_, *dtypes_], lambda *args: ctx.lower_program(program, args)
    )
    return list(op.results)


@reduce_window_p.def_batch
def _reduce_window_general_batch(args, dims, *, program, **params):
    n = len(args) // 2
    if any(d is not None for d in dims[n:]):
        raise NotImplementedError("reduce_window batching is not implemented for initial values")
    size = batch_rules.axis_size_of(args, dims)
    operands = [batch_rules.bdim_to(x, d, size, 0) for x, d in zip(args[:n], dims[:n], strict=True)]
    batched = {
        "window_dimensions": (1, *params["window_dimensions"]),
        "window_strides": (1, *params["window_strides"]),
        "padding": ((0, 0), *params["padding"]),
        "base_dilation": (1, *params["base_dilation"]),
        "window_dilation": (1, *params["window_dilation"]),
    }
    outs = reduce_window_p.bind(*operands, *args[n:], program=program, **batched)
    return outs, [0] * n


@reduce_window_p.def_jvp
def _reduce_window_general_jvp(primals, tangents, *, program, **params):
    """As JAX's: a reduce_window over primals and tangents together, whose
    computation is the jvp of ``program`` (the inits' tangents must be zero)."""
    n = len(primals) // 2
    operands, inits = list(primals[:n]), list(primals[n:])
    if not all(ad_helpers.is_zero(t) for t in tangents[n:]):
        raise TypeError("reduce_window jvp does not support non-zero init_value_tangent.")
    t_ops = [
        ad_helpers.instantiate(t, ad_helpers.tangent_aval(ad_helpers.aval_of(x)))
        for x, t in zip(operands, tangents[:n], strict=True)
    ]
    t_inits = [ad_helpers.zeros(ad_helpers.tangent_aval(ad_helpers.aval_of(i))) for i in inits]
    jvp = rule_context.jvp_program(program, [True] * (2 * n), instantiate=True)
    # jvp.program: (acc, elem, t_acc, t_elem) -> (outs, t_outs); the window body
    # takes (acc, t_acc, elem, t_elem)
    body = rule_context.permute_program(
        jvp.program,
        [*range(n), *range(2 * n, 3 * n), *range(n, 2 * n), *range(3 * n, 4 * n)],
        list(range(2 * n)),
    )
    outs = reduce_window_p.bind(*operands, *t_ops, *inits, *t_inits, program=body, **params)
    return outs[:n], outs[n:]


_LINEARIZATION_FAILED = (
    "Linearization failed to produce known values for all output primals. This is "
    "typically caused by attempting to differentiate a function uses an operation that "
    "does not support reverse-mode autodiff."
)


def _reduce_window_general_linearize(primals, tangents, **params):
    """Under linearize (grad, vjp, linearize): the jvp above computes primals
    and tangents in one reduce_window, so JAX 0.10.2's partial evaluation finds
    the primal outputs unknown and raises ValueError, before any transpose
    (forward mode only, as JAX's)."""
    outs = _reduce_window_general_jvp(primals, tangents, **params)  # its checks first
    if not all(ad_helpers.is_zero(t) for t in tangents):
        raise ValueError(_LINEARIZATION_FAILED)
    return outs  # pragma: no cover - a rule is called only with some nonzero tangent


reduce_window_p.linearize_rule = _reduce_window_general_linearize


# --- the public lax function ---------------------------------------------------------------


def _normalize(
    name: str,
    operand: Any,
    window_dimensions: Any,
    window_strides: Any,
    padding: Any,
    base_dilation: Any,
    window_dilation: Any,
) -> dict[str, Any]:
    shape = tracing.get_aval(operand, name, 0).shape
    n = len(shape)
    dims = as_int_tuple(name, window_dimensions, "window_dimensions")
    strides = as_int_tuple(name, window_strides, "window_strides")
    if isinstance(padding, str):
        padding = padtype_to_pads(shape, dims, strides, padding)
    pads = tuple(tuple(as_int_tuple(name, p, "padding")) for p in padding)
    return {
        "window_dimensions": dims,
        "window_strides": strides,
        "padding": pads,
        "base_dilation": (1,) * n
        if base_dilation is None
        else as_int_tuple(name, base_dilation, "base_dilation"),
        "window_dilation": (1,) * n
        if window_dilation is None
        else as_int_tuple(name, window_dilation, "window_dilation"),
    }


def reduce_window(
    operand: Any,
    init_value: Any,
    computation: Any,
    window_dimensions: Any,
    window_strides: Any = None,
    padding: Any = "VALID",
    base_dilation: Any = None,
    window_dilation: Any = None,
) -> Any:
    """``jax.lax.reduce_window``: ``operand`` (a pytree of arrays of one
    shape) reduced over windows with ``computation(accumulators, elements)``
    from ``init_value`` (the same pytree of scalars). As JAX, one operand
    whose computation is ``add``/``max``/``min`` with that monoid's identity
    as a concrete init is ``reduce_window_sum``/``max``/``min``; anything else
    is the general ``reduce_window`` primitive, whose padding holds the init."""
    flat_operands, treedef = pytree.tree_flatten(operand)
    flat_inits, init_tree = pytree.tree_flatten(init_value)
    if treedef != init_tree:
        raise ValueError(
            f"Operands must have the same tree structure as init_values: {treedef} vs. {init_tree}"
        )
    if not flat_operands:
        raise ValueError("reduce_window must have at least one operand.")
    n = tracing.get_aval(flat_operands[0], "reduce_window", 0).ndim
    if window_strides is None:
        window_strides = (1,) * n
    if isinstance(padding, str) and window_dilation is not None:
        dilated = tuple(
            (w - 1) * d + 1 for w, d in zip(window_dimensions, window_dilation, strict=True)
        )
        shape = tracing.get_aval(flat_operands[0], "reduce_window", 0).shape

        padding = padtype_to_pads(
            shape, dilated, as_int_tuple("reduce_window", window_strides, "window_strides"),
            padding,
        )  # fmt: skip
    params = _normalize(
        "reduce_window",
        flat_operands[0],
        window_dimensions,
        window_strides,
        padding,
        base_dilation,
        window_dilation,
    )
    init_avals = [tracing.get_aval(v, "reduce_window", i) for i, v in enumerate(flat_inits)]
    program = computation_program("reduce_window", computation, init_avals, init_tree)
    if len(flat_operands) == 1:
        prim = _monoid_window_primitive(program, flat_inits[0])
        if prim is not None:
            return pytree.tree_unflatten(treedef, [prim.bind(flat_operands[0], **params)])
    outs = reduce_window_p.bind(*flat_operands, *flat_inits, program=program, **params)
    return pytree.tree_unflatten(treedef, outs)


def window_params(
    name: str,
    operand: Any,
    window_dimensions: Any,
    window_strides: Any,
    padding: Any,
    base_dilation: Any = None,
    window_dilation: Any = None,
) -> tuple[dict[str, Any], tuple[int, ...]]:
    """A window primitive's params for ``operand`` (checked, in the
    primitive's own words under ``name``) and the output shape they give."""
    params = _normalize(
        name, operand, window_dimensions, window_strides, padding, base_dilation, window_dilation
    )
    return params, _window_params(name, tracing.get_aval(operand, name, 0), params)


def _monoid_window_primitive(program: Any, init: Any) -> Primitive | None:
    """reduce_window_sum/max/min when ``program`` is one add/max/min equation
    on its inputs and ``init`` is concrete and the identity (as JAX's
    ``_get_monoid_window_reducer``, reading the traced computation)."""
    reducer = _monoid_reducer(program, init)
    table: dict[object, Primitive] = {
        reductions.reduce_sum: reduce_window_sum_p,
        reductions.reduce_max: reduce_window_max_p,
        reductions.reduce_min: reduce_window_min_p,
    }
    prim = table.get(reducer)
    # unreachable from the public API: a computation of bools never traces to add (lax.add
    # refuses bool; + on bool arrays is logical or); kept as JAX's guard
    bool_sum = prim is reduce_window_sum_p and dtypes.is_bool(program.in_avals[0].dtype)
    if bool_sum:  # pragma: no cover
        return None
    return prim


__all__ = ["reduce_window"]
