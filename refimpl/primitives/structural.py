"""Structural primitives: they move, copy or select elements without math.

broadcast_in_dim, reshape, squeeze, transpose, rev, slice, pad, concatenate
and iota. ``expand_dims``, ``slice_in_dim`` and ``index_in_dim`` are public
functions built from them (as in JAX), not primitives.

Types, as in JAX 0.10: the result has the operand's dtype and weak type;
``concatenate`` is weak iff every operand is, ``pad`` iff both the operand and
the padding value are, and ``iota`` is always strongly typed. Dimension
numbers in params are non-negative: the public functions normalize negative
axes where ``jax.lax`` does (squeeze, expand_dims), and reject them where it
does not (transpose, rev, slice, concatenate, iota).
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import numpy as np

from refimpl import dtypes, tracing
from refimpl.core import ShapedArray, not_a_shape
from refimpl.primitives import ad_helpers, rule_context
from refimpl.primitives.base import Primitive, all_weak, as_int_tuple, normalize_axis
from refimpl.transforms.masking.shape_spec import Dim

# --- shared parameter checks --------------------------------------------------------


def _check_dims(name: str, dims: tuple[int, ...], ndim: int, arg: str, error: type) -> None:
    """``dims`` are unique operand dimensions in ``[0, ndim)``; else ``error``."""
    if len(set(dims)) != len(dims):
        raise error(f"{name}: {arg} must be unique, got {dims}")
    for d in dims:
        if not 0 <= d < ndim:
            raise error(f"{name}: {arg} {dims} out of range for an operand of rank {ndim}")


def _one_per_dim(name: str, values: tuple[int, ...], arg: str, shape: tuple[int, ...]) -> None:
    if len(values) != len(shape):
        raise TypeError(
            f"{name}: {arg} {values} must have one entry per dimension of the operand "
            f"of shape {shape}"
        )


# --- broadcast_in_dim -----------------------------------------------------------

broadcast_in_dim_p = Primitive("broadcast_in_dim")


@broadcast_in_dim_p.def_abstract_eval
def _broadcast_in_dim_abstract_eval(
    x: ShapedArray, *, shape: tuple[int, ...], broadcast_dimensions: tuple[int, ...]
) -> ShapedArray:
    """Operand dim ``i`` becomes output dim ``broadcast_dimensions[i]``; it must
    have size 1 or the output's size there. Dims are distinct, in any order
    (out of order they transpose the operand, as JAX 0.10.2's)."""
    shape = as_int_tuple("broadcast_in_dim", shape, "shape")
    dims = as_int_tuple("broadcast_in_dim", broadcast_dimensions, "broadcast_dimensions")
    if any(d < 0 for d in shape):
        raise TypeError(f"broadcast_in_dim: negative dimension in shape {shape}")  # as JAX
    # TypeErrors worded as JAX's shape rule
    if len(dims) != x.ndim:
        raise TypeError(
            f"broadcast_in_dim: broadcast_dimensions must have length equal to operand ndim; "
            f"got broadcast_dimensions {dims} for operand shape {x.shape}"
        )
    if len(shape) < x.ndim:
        raise TypeError(
            "broadcast_in_dim: target broadcast shape must have equal or higher rank to the "
            f"operand shape; got operand shape {x.shape} and target shape {shape}"
        )
    if any(not 0 <= d < len(shape) for d in dims):
        raise TypeError(
            "broadcast_in_dim broadcast_dimensions must be a subset of output dimensions, "
            f"got {dims} for operand ndim {x.ndim} and shape {shape}."
        )
    for operand_dim, out_dim in enumerate(dims):
        if x.shape[operand_dim] not in (1, shape[out_dim]):
            raise TypeError(
                "broadcast_in_dim: operand dimension sizes must either be 1, or be equal to "
                "their corresponding dimensions in the target broadcast shape; got operand "
                f"shape {x.shape}, target shape {shape}, broadcast_dimensions {dims}"
            )
    if len(set(dims)) != len(dims):
        raise TypeError(
            f"broadcast_in_dim: broadcast_dimensions must not contain duplicates, got {dims}"
        )
    return ShapedArray(shape, x.dtype, x.weak_type)


@broadcast_in_dim_p.def_impl
def _broadcast_in_dim_impl(
    x: np.ndarray, *, shape: tuple[int, ...], broadcast_dimensions: tuple[int, ...]
) -> np.ndarray:
    order = sorted(range(x.ndim), key=lambda i: broadcast_dimensions[i])
    x = np.transpose(x, order)
    expanded_shape = [1] * len(shape)
    for operand_dim, out_dim in enumerate(sorted(broadcast_dimensions)):
        expanded_shape[out_dim] = x.shape[operand_dim]
    return np.broadcast_to(x.reshape(expanded_shape), shape)


@broadcast_in_dim_p.def_mask
def _broadcast_in_dim_mask(ctx, x, *, shape, broadcast_dimensions):
    """An operand dim keeps its logical size; new dims (and size-1 dims
    broadcast) hold copies, valid over their whole extent."""
    logical = [Dim.constant(size) for size in shape]
    for operand_dim, out_dim in enumerate(broadcast_dimensions):
        dim = ctx.logical_in[0][operand_dim]
        if ctx.avals_in[0].shape[operand_dim] == shape[out_dim]:
            logical[out_dim] = dim
        elif ctx.masked(dim):
            raise ctx.unsupported(
                f"cannot broadcast the masked dim {operand_dim} (logical size {dim}, padded "
                f"size 1) to size {shape[out_dim]}"
            )
    out = broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=broadcast_dimensions)
    return out, tuple(logical)


# --- reshape -----------------------------------------------------------------------

reshape_p = Primitive("reshape")


@reshape_p.def_abstract_eval
def _reshape_abstract_eval(x: ShapedArray, *, new_sizes: tuple[int, ...]) -> ShapedArray:
    """Row-major reshape; the element count must not change."""
    new_sizes = as_int_tuple("reshape", new_sizes, "new_sizes")
    if any(d < 0 for d in new_sizes):
        raise TypeError(f"reshape: negative dimension in new_sizes {new_sizes}")
    if int(np.prod(new_sizes, dtype=np.int64)) != x.size:
        # ValueError as JAX 0.10.2's lax.reshape (its verifier) and jnp.reshape
        raise ValueError(f"reshape: cannot reshape array of shape {x.shape} into {new_sizes}")
    return ShapedArray(new_sizes, x.dtype, x.weak_type)


@reshape_p.def_impl
def _reshape_impl(x: np.ndarray, *, new_sizes: tuple[int, ...]) -> np.ndarray:
    return x.reshape(new_sizes)


@reshape_p.def_mask
def _reshape_mask(ctx, x, *, new_sizes):
    """Supported when the masked dim leads: one masked dim, only size-1 dims
    before it. Its valid elements are then a prefix in row-major order, and
    so they are in the result, whose first dim of size other than 1 gets the
    logical size (valid elements) / (elements per row of the result): ``(n,
    6) -> (n, 2, 3)``, ``(n, 2, 3) -> (2*n, 3)``, ``(2*n, 3) -> (n, 6)``."""
    logical, padded = ctx.logical_in[0], ctx.avals_in[0].shape
    masked = [axis for axis, dim in enumerate(logical) if ctx.masked(dim)]
    problem = f"operand of logical shape {ctx.show(logical)} (padded {padded}) to {new_sizes}"
    axis = masked[0]
    if len(masked) > 1 or any(padded[a] != 1 for a in range(axis)):
        raise ctx.unsupported(f"the masked dim must lead to reshape an {problem}")
    valid_elements = logical[axis] * int(np.prod(padded[axis + 1 :], dtype=np.int64))
    lead, rows = None, None
    for j in range(len(new_sizes)):  # the first dim after leading 1s the rows divide into
        rows = valid_elements.exact_div(int(np.prod(new_sizes[j + 1 :], dtype=np.int64)))
        if rows is not None or new_sizes[j] != 1:
            lead = j
            break
    if rows is None:
        raise ctx.unsupported(
            f"cannot reshape an {problem}: its valid elements ({valid_elements}) do not "
            "make whole rows of the result"
        )
    out_logical = [Dim.constant(size) for size in new_sizes]
    out_logical[lead] = rows
    return reshape_p.bind(x, new_sizes=new_sizes), tuple(out_logical)


# --- squeeze -----------------------------------------------------------------------

squeeze_p = Primitive("squeeze")


@squeeze_p.def_abstract_eval
def _squeeze_abstract_eval(x: ShapedArray, *, dimensions: tuple[int, ...]) -> ShapedArray:
    """Remove the listed dimensions, each of size 1 (unique, in ``[0, ndim)``)."""
    dims = as_int_tuple("squeeze", dimensions, "dimensions")
    _check_dims("squeeze", dims, x.ndim, "dimensions", ValueError)
    for d in dims:
        if x.shape[d] != 1:
            raise ValueError(
                "squeeze: cannot select an axis to squeeze out which has size not equal to "
                f"one, got shape={x.shape} and dimensions={dims}"
            )
    shape = tuple(size for d, size in enumerate(x.shape) if d not in dims)
    return ShapedArray(shape, x.dtype, x.weak_type)


@squeeze_p.def_impl
def _squeeze_impl(x: np.ndarray, *, dimensions: tuple[int, ...]) -> np.ndarray:
    return np.squeeze(x, axis=dimensions)


@squeeze_p.def_mask
def _squeeze_mask(ctx, x, *, dimensions):
    """Removes unmasked size-1 dims; squeezing a masked dim is an error."""
    logical = ctx.logical_in[0]
    for d in dimensions:
        if ctx.masked(logical[d]):
            raise ctx.unsupported(
                f"cannot squeeze the masked dim {d} of logical shape {ctx.show(logical)}"
            )
    kept = tuple(dim for d, dim in enumerate(logical) if d not in dimensions)
    return squeeze_p.bind(x, dimensions=dimensions), kept


# --- transpose ---------------------------------------------------------------------

transpose_p = Primitive("transpose")


@transpose_p.def_abstract_eval
def _transpose_abstract_eval(x: ShapedArray, *, permutation: tuple[int, ...]) -> ShapedArray:
    """Output dim ``i`` is operand dim ``permutation[i]``."""
    perm = as_int_tuple("transpose", permutation, "permutation")
    if sorted(perm) != list(range(x.ndim)):
        raise TypeError(
            f"transpose: permutation {perm} is not a permutation of the dimensions of "
            f"the operand of shape {x.shape}"
        )
    return ShapedArray(tuple(x.shape[d] for d in perm), x.dtype, x.weak_type)


@transpose_p.def_impl
def _transpose_impl(x: np.ndarray, *, permutation: tuple[int, ...]) -> np.ndarray:
    return np.transpose(x, permutation)


@transpose_p.def_mask
def _transpose_mask(ctx, x, *, permutation):
    """Logical sizes move with their dims."""
    logical = tuple(ctx.logical_in[0][d] for d in permutation)
    return transpose_p.bind(x, permutation=permutation), logical


# --- rev ---------------------------------------------------------------------------

rev_p = Primitive("rev")


@rev_p.def_abstract_eval
def _rev_abstract_eval(x: ShapedArray, *, dimensions: tuple[int, ...]) -> ShapedArray:
    """Reverse the order of elements along each listed dimension."""
    dims = as_int_tuple("rev", dimensions, "dimensions")
    _check_dims("rev", dims, x.ndim, "dimensions", TypeError)
    return x


@rev_p.def_impl
def _rev_impl(x: np.ndarray, *, dimensions: tuple[int, ...]) -> np.ndarray:
    return np.flip(x, axis=dimensions) if dimensions else x


@rev_p.def_mask
def _rev_mask(ctx, x, *, dimensions):
    """Reversing a masked dim (logical L, padded P) leaves the valid entries
    at ``[P - L, P)``; they are moved back to the front by padding with P
    entries and taking a P-entry window at the run-time offset ``P - L``."""
    out = rev_p.bind(x, dimensions=dimensions)
    logical, aval = ctx.logical_in[0], ctx.avals_in[0]
    zero = tracing.TypedScalar(0, aval.dtype, aval.weak_type)
    for d in dimensions:
        if ctx.masked(logical[d]):
            config = tuple((0, aval.shape[d] if a == d else 0, 0) for a in range(aval.ndim))
            grown = pad_p.bind(out, zero, padding_config=config)
            starts = [np.int32(0)] * aval.ndim
            starts[d] = ctx.index(aval.shape[d] - logical[d])
            out = rule_context.dynamic_slice_p.bind(grown, *starts, slice_sizes=aval.shape)
    return out, logical


# --- slice -------------------------------------------------------------------------

slice_p = Primitive("slice")


def _sliced_size(start: int, limit: int, stride: int) -> int:
    return (limit - start + stride - 1) // stride


@slice_p.def_abstract_eval
def _slice_abstract_eval(
    x: ShapedArray,
    *,
    start_indices: tuple[int, ...],
    limit_indices: tuple[int, ...],
    strides: tuple[int, ...] | None,
) -> ShapedArray:
    """Elements ``start:limit:stride`` of each dimension, with
    ``0 <= start <= limit <= size`` and ``stride >= 1`` (``None``: all 1)."""
    starts = as_int_tuple("slice", start_indices, "start_indices")
    limits = as_int_tuple("slice", limit_indices, "limit_indices")
    steps = (1,) * x.ndim if strides is None else as_int_tuple("slice", strides, "strides")
    _one_per_dim("slice", starts, "start_indices", x.shape)
    _one_per_dim("slice", limits, "limit_indices", x.shape)
    _one_per_dim("slice", steps, "strides", x.shape)
    for start, limit, step, size in zip(starts, limits, steps, x.shape, strict=True):
        if not 0 <= start <= limit <= size:
            raise TypeError(
                f"slice: start_indices {starts} and limit_indices {limits} must satisfy "
                f"0 <= start <= limit <= size for the operand of shape {x.shape}"
            )
        if step < 1:
            # negative: JAX's TypeError; zero fails in JAX only by accident (a
            # ZeroDivisionError computing the shape), a ValueError here
            error = TypeError if step < 0 else ValueError
            raise error(f"slice: strides must be positive, got {steps}")
    shape = tuple(_sliced_size(*dim) for dim in zip(starts, limits, steps, strict=True))
    return ShapedArray(shape, x.dtype, x.weak_type)


@slice_p.def_impl
def _slice_impl(
    x: np.ndarray,
    *,
    start_indices: tuple[int, ...],
    limit_indices: tuple[int, ...],
    strides: tuple[int, ...] | None,
) -> np.ndarray:
    steps = strides or (1,) * x.ndim
    return x[
        tuple(builtins.slice(*dim) for dim in zip(start_indices, limit_indices, steps, strict=True))
    ]


@slice_p.def_mask
def _slice_mask(ctx, x, *, start_indices, limit_indices, strides):
    """The same slice of the padded operand. On a masked dim (logical L,
    padded P) the start counts from the front and the limit from the logical
    end: a slice that runs to the padded end (its next element would be at
    P or beyond) runs to L, and limit P - k means L - k. That is what
    ``x[1:]``, ``x[::2]``, ``x[:-1]`` and ``x[a:x.shape[0] - b]`` mean in the
    unpadded program (a fixed-size window of a masked dim is
    ``lax.dynamic_slice``). The logical size is ``ceil((end - start) / stride)``."""
    logical, padded = ctx.logical_in[0], ctx.avals_in[0].shape
    steps = strides or (1,) * len(padded)
    out_logical = []
    for dim, size, start, limit, step in zip(
        logical, padded, start_indices, limit_indices, steps, strict=True
    ):
        if ctx.masked(dim):
            to_the_end = start + _sliced_size(start, limit, step) * step >= size
            end = dim if to_the_end else dim - (size - limit)
            out_logical.append((end - start + step - 1) // step)
        else:
            out_logical.append(Dim.constant(_sliced_size(start, limit, step)))
    out = slice_p.bind(x, start_indices=start_indices, limit_indices=limit_indices, strides=strides)
    return out, tuple(out_logical)


# === pad: the whole primitive in one block ===========================================
#
# pad(x, padding_value, padding_config) is XLA's Pad. Per dimension d with
# (lo, hi, interior) = padding_config[d]:
#
#     grown  = interior copies of padding_value between adjacent elements of x
#     result = lo copies before and hi copies after grown, where a negative lo
#              (hi) instead removes -lo (-hi) elements from that end of grown
#     result.shape[d] = lo + hi + n + max(n - 1, 0) * interior   (n = x.shape[d])
#     result dtype = x.dtype; weak iff x and padding_value both are
#
# Constraints (the errors name their label):
#   (C1) padding_value is a scalar;                                    ValueError
#   (C2) padding_value.dtype == x.dtype;                               TypeError
#   (C3) padding_config is a sequence of (lo, hi, interior) int triples (TypeError),
#        one per dimension of x (ValueError);
#   (C4) interior >= 0;                                                ValueError
#   (C5) every result dimension is >= 0 (negative edges crop at most
#        what the interior-padded dimension holds).                    ValueError
#
# Example: pad([1, 2, 3], 0, [(1, -1, 1)]): interior gives [1, 0, 2, 0, 3],
# lo = 1 prepends a 0, hi = -1 removes the last element: [0, 1, 0, 2, 0].
#
# Rules below, in the fixed order: abstract_eval, impl, jvp, transpose, batch,
# mask, lowering, then the public binder ``pad``. ``slice``'s transpose and
# ``rev``'s mask rule (above) build on pad_p: pad stays in this module, since a
# module of its own would import structural's slice_p and broadcasting helpers
# while structural imports pad_p, an import cycle.

pad_p = Primitive("pad")


def _padded_size(size: int, lo: int, hi: int, interior: int) -> int:
    return lo + hi + size + builtins.max(size - 1, 0) * interior


def _as_padding_config(value: Any) -> tuple[tuple[int, int, int], ...]:
    """A tuple of ``(lo, hi, interior)`` int triples, or a TypeError (C3)."""
    try:
        triples = tuple(as_int_tuple("pad", triple, "padding_config entry") for triple in value)
    except TypeError:
        raise TypeError(
            f"pad: padding_config must be a sequence of (lo, hi, interior) int triples (C3), "
            f"got {value!r}"
        ) from None
    if any(len(t) != 3 for t in triples):
        # ValueError as JAX 0.10.2 (its unpacking of each entry into three)
        raise ValueError(
            f"pad: padding_config must be a sequence of (lo, hi, interior) int triples (C3), "
            f"got {value!r}"
        )
    return triples  # type: ignore[return-value]


# --- pad: abstract_eval


@pad_p.def_abstract_eval
def _pad_abstract_eval(
    x: ShapedArray, padding_value: ShapedArray, *, padding_config: tuple[tuple[int, int, int], ...]
) -> ShapedArray:
    """The result shape of the formula above, after checking C1-C5."""
    config = _as_padding_config(padding_config)
    if padding_value.shape != ():
        raise ValueError(
            f"pad: padding_value must be a scalar (C1), got shape {padding_value.shape} "
            f"(operand shape {x.shape})"
        )
    if padding_value.dtype != x.dtype:
        raise TypeError(
            f"pad: operand and padding_value must have the same dtype (C2), got "
            f"{x.dtype.name} and {padding_value.dtype.name}"
        )
    if len(config) != x.ndim:
        raise ValueError(
            f"pad: padding_config {config} must have one (lo, hi, interior) triple per "
            f"dimension of the operand of shape {x.shape} (C3)"
        )
    if any(interior < 0 for _, _, interior in config):
        raise ValueError(
            f"pad: interior padding in padding_config must be nonnegative, got padding_config "
            f"{config} (C4)"
        )
    shape = tuple(_padded_size(size, *dim) for size, dim in zip(x.shape, config, strict=True))
    if any(d < 0 for d in shape):
        raise ValueError(
            f"pad: Dimension size after padding is not at least 0, got result shape {shape}, "
            f"for padding_config {config} and operand shape {x.shape} (C5)"
        )
    return ShapedArray(shape, x.dtype, all_weak([x, padding_value]))


# --- pad: impl (NumPy)


@pad_p.def_impl
def _pad_impl(
    x: np.ndarray, padding_value: np.ndarray, *, padding_config: tuple[tuple[int, int, int], ...]
) -> np.ndarray:
    # Place the operand into an array of padding values big enough for the
    # non-negative padding, then crop what the negative padding removes.
    grown_shape, placed, cropped = [], [], []
    for size, (lo, hi, interior) in zip(x.shape, padding_config, strict=True):
        core = builtins.max(size + (size - 1) * interior, 0)
        grown = builtins.max(lo, 0) + core + builtins.max(hi, 0)
        grown_shape.append(grown)
        placed.append(builtins.slice(builtins.max(lo, 0), builtins.max(lo, 0) + core, interior + 1))
        cropped.append(builtins.slice(-builtins.min(lo, 0), grown + builtins.min(hi, 0)))
    out = np.full(grown_shape, padding_value, dtype=x.dtype)
    out[tuple(placed)] = x
    return out[tuple(cropped)]


# --- pad: jvp (linear in the operand and the padding value jointly)

pad_p.def_jvp(ad_helpers.linear_jvp(pad_p))


# --- pad: transpose


def _pad_zeros(ct: Any, config: tuple[tuple[int, int, int], ...], weak: bool = True) -> Any:
    """``ct`` padded with zeros; a strong zero (``weak=False``) makes the
    result strong, as JAX's pad transpose does."""
    aval = ad_helpers.aval_of(ct)
    zero = tracing.TypedScalar(0, aval.dtype, weak_type=aval.weak_type and weak)
    return pad_p.bind(ct, zero, padding_config=config)


@pad_p.def_transpose
def _pad_transpose(ct, x, padding_value, *, padding_config):
    """The operand's cotangent is the cotangent with the ``lo``/``hi`` padding
    cropped (or, where it was negative, refilled with zeros) and every
    ``interior + 1``-th element kept; the padding value's is the sum of the
    rest."""
    x_linear = isinstance(x, ad_helpers.UndefinedPrimal)
    pv_linear = isinstance(padding_value, ad_helpers.UndefinedPrimal)
    # unreachable from the public API: the backward pass skips an equation whose one output has
    # no cotangent and never passes a symbolic Zero to a single-output rule (ad.backward_pass)
    if isinstance(ct, ad_helpers.Zero):  # pragma: no cover
        return [
            _zero_ct(x) if x_linear else None,
            _zero_ct(padding_value) if pv_linear else None,
        ]
    unpadded = _pad_zeros(ct, tuple((-lo, -hi, 0) for lo, hi, _ in padding_config), weak=False)
    shape = ad_helpers.aval_of(unpadded).shape
    ct_x = slice_p.bind(
        unpadded,
        start_indices=(0,) * len(shape),
        limit_indices=shape,
        strides=tuple(interior + 1 for _, _, interior in padding_config),
    )
    ct_pv = None
    if pv_linear:
        every = tuple(range(len(shape)))
        ct_pv = rule_context.sub(
            rule_context.reduce_sum(ct, every), rule_context.reduce_sum(ct_x, every)
        )
    return [ct_x if x_linear else None, ct_pv]


# --- pad: batch


@pad_p.def_batch
def _pad_batch(args, dims, *, padding_config):
    """A batched padding value: pad with anything, then select each member's
    value where a padded mask (True inside the operand) is False."""
    (x, value), (bd, value_bd) = args, dims
    size = axis_size_of(args, dims)
    if bd is None:
        x, bd = broadcast_batch(x, size, 0), 0
    config = list(padding_config)
    config.insert(bd, (0, 0, 0))
    if value_bd is None:
        return pad_p.bind(x, value, padding_config=tuple(config)), bd
    x_aval = tracing.get_aval(x, "pad", 0)
    zero = np.zeros((), x_aval.dtype)
    padded = pad_p.bind(x, zero, padding_config=tuple(config))
    inside = broadcast_in_dim(np.ones((), bool), x_aval.shape, ())
    mask = pad_p.bind(inside, np.zeros((), bool), padding_config=tuple(config))
    out_shape = shape_of(padded)
    fill = broadcast_in_dim(value, out_shape, (bd,))
    return rule_context.select(mask, padded, fill), bd


# --- pad: mask


@pad_p.def_mask
def _pad_mask(ctx, x, padding_value, *, padding_config):
    """Pad the padded operand as it is; then, along each masked dim (logical
    L), everything from the end of the logical body on -- where the
    operand's padding landed -- becomes the padding value. Logical size:
    ``lo + hi + L + (L - 1) * interior`` (with interior padding this
    assumes L >= 1)."""
    out = pad_p.bind(x, padding_value, padding_config=padding_config)
    logical = ctx.logical_in[0]
    out_shape = tuple(
        _padded_size(size, *dim) for size, dim in zip(ctx.avals_in[0].shape, padding_config)
    )
    out_logical, body_ends, masked_axes = [], [], []
    for d, (dim, (lo, hi, interior)) in enumerate(zip(logical, padding_config, strict=True)):
        if ctx.masked(dim):
            out_logical.append(lo + hi + dim + (dim - 1) * interior)
            body_ends.append(lo + dim + (dim - 1) * interior)
            masked_axes.append(d)
        else:
            out_logical.append(Dim.constant(out_shape[d]))
            body_ends.append(Dim.constant(out_shape[d]))
    keep = ctx.valid_region(out_shape, tuple(body_ends), masked_axes)
    return ctx.where(keep, out, padding_value), tuple(out_logical)


# --- pad: lowering


@pad_p.def_lowering
def _pad_lowering(ctx, x, padding_value, *, padding_config):
    """``stablehlo.pad`` has XLA's semantics, negative edge padding included."""
    lows: list[int] = []
    highs: list[int] = []
    interiors: list[int] = []
    if padding_config:  # a rank-0 operand has none (unzipping nothing would fail)
        lows, highs, interiors = (list(column) for column in zip(*padding_config, strict=True))
    return [ctx.hlo.pad(x, padding_value, lows, highs, interiors)]


# --- pad: the public binder


def pad(operand: Any, padding_value: Any, padding_config: Sequence[Sequence[int]]):
    """XLA's Pad with ``(lo, hi, interior)`` per dimension; negative ``lo``/``hi``
    crop. A Python scalar ``padding_value`` takes the operand's dtype when that
    involves no promotion (``pad(f32_array, 0, ...)``; ``jax.lax`` would raise)."""
    config = _as_padding_config(padding_config)
    if dtypes.is_python_scalar(padding_value):
        operand_aval = tracing.get_aval(operand, "pad", 0)
        target = (operand_aval.dtype, operand_aval.weak_type)
        if dtypes.result_type(target, padding_value)[0] == operand_aval.dtype:
            weak = dtypes.weak_type_of_value(padding_value)
            padding_value = tracing.TypedScalar(padding_value, operand_aval.dtype, weak)
    return pad_p.bind(operand, padding_value, padding_config=config)


# --- concatenate -------------------------------------------------------------------

concatenate_p = Primitive("concatenate")


@concatenate_p.def_abstract_eval
def _concatenate_abstract_eval(*xs: ShapedArray, dimension: int) -> ShapedArray:
    """Join operands along ``dimension``; all other dims and the dtypes agree."""
    if not xs:
        raise ValueError("concatenate: requires at least one operand")
    shapes = ", ".join(str(x.shape) for x in xs)
    if isinstance(dimension, bool) or not isinstance(dimension, (int, np.integer)):
        raise TypeError(f"concatenate: dimension must be an int, got {dimension!r}")
    if any(x.dtype != xs[0].dtype for x in xs):
        listed = ", ".join(x.dtype.name for x in xs)
        raise TypeError(f"concatenate: operands must have the same dtype, got {listed}")
    if any(x.ndim != xs[0].ndim for x in xs):
        raise TypeError(f"concatenate: operands must have the same rank, got shapes {shapes}")
    if not 0 <= dimension < xs[0].ndim:
        raise TypeError(f"concatenate: dimension {dimension} out of range for shapes {shapes}")
    for x in xs:
        others = [s for d, s in enumerate(x.shape) if d != dimension]
        if others != [s for d, s in enumerate(xs[0].shape) if d != dimension]:
            raise TypeError(
                f"concatenate: operand shapes must agree except along dimension "
                f"{dimension}, got shapes {shapes}"
            )
    shape = list(xs[0].shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return ShapedArray(tuple(shape), xs[0].dtype, all_weak(list(xs)))


@concatenate_p.def_impl
def _concatenate_impl(*xs: np.ndarray, dimension: int) -> np.ndarray:
    return np.concatenate(xs, axis=dimension)


@concatenate_p.def_mask
def _concatenate_mask(ctx, *xs, dimension):
    """The other dims are unified. Along a masked ``dimension`` the valid
    parts are packed: operand i goes at the sum of the logical sizes before
    it, a ``dynamic_update_slice`` at a run-time offset (each later operand
    overwrites the padding of the ones before). Logical size: the sum."""
    logicals = ctx.logical_in
    out_logical = [
        sum((logical[d] for logical in logicals), Dim.constant(0))
        if d == dimension
        else ctx.unify([logical[d] for logical in logicals], f"dim {d} of the operands")
        for d in range(len(logicals[0]))
    ]
    out = concatenate_p.bind(*xs, dimension=dimension)
    offset, padded_offset = Dim.constant(0), 0
    for x, logical, aval in zip(xs, logicals, ctx.avals_in, strict=True):
        if offset != padded_offset:  # a masked operand before this one
            starts = [np.int32(0)] * aval.ndim
            starts[dimension] = ctx.index(offset)
            out = rule_context.dynamic_update_slice_p.bind(out, x, *starts)
        offset, padded_offset = offset + logical[dimension], padded_offset + aval.shape[dimension]
    return out, tuple(out_logical)


# --- iota --------------------------------------------------------------------------

iota_p = Primitive("iota")


@iota_p.def_abstract_eval
def _iota_abstract_eval(*, dtype: np.dtype, shape: tuple[int, ...], dimension: int) -> ShapedArray:
    """An array of ``shape`` whose element at index ``i`` is ``i[dimension]``
    converted to ``dtype`` (integers wrap around, floats round to nearest).
    Strongly typed; ``dtype`` is numeric (not bool)."""
    if not isinstance(dtype, np.dtype) or dtype not in dtypes.ALL_DTYPES:
        raise TypeError(f"iota: unsupported dtype {dtype!r}")
    if dtypes.is_bool(dtype):
        raise TypeError("iota: dtype must be an integer, floating or complex type, got bool")
    shape = as_int_tuple("iota", shape, "shape")
    if any(d < 0 for d in shape):
        raise TypeError(f"iota: negative dimension in shape {shape}")
    if isinstance(dimension, bool) or not isinstance(dimension, (int, np.integer)):
        raise TypeError(f"iota: dimension must be an int, got {dimension!r}")
    if not 0 <= dimension < len(shape):
        raise ValueError(f"iota: dimension {dimension} out of range for shape {shape}")
    return ShapedArray(shape, dtype, weak_type=False)


@iota_p.def_impl
def _iota_impl(*, dtype: np.dtype, shape: tuple[int, ...], dimension: int) -> np.ndarray:
    counts = np.arange(shape[dimension], dtype=np.int64)
    along = [1] * len(shape)
    along[dimension] = shape[dimension]
    # int64 -> dtype in one conversion: wraps for ints, rounds once for floats
    return np.broadcast_to(counts.reshape(along), shape).astype(dtype)


# --- moving and broadcasting batch axes (every batch rule uses them: batch_rules) --------


def moveaxis(x: Any, src: int, dst: int) -> Any:
    """``x`` with axis ``src`` moved to position ``dst`` (a transpose, or ``x``)."""
    if src == dst:
        return x
    ndim = tracing.get_aval(x, "vmap", 0).ndim
    perm = [d for d in range(ndim) if d != src]
    perm.insert(dst, src)
    return transpose(x, perm)


def broadcast_batch(x: Any, size: int, axis: int) -> Any:
    """The unbatched ``x`` repeated ``size`` times along a new axis at ``axis``."""
    aval = tracing.get_aval(x, "vmap", 0)
    shape = list(aval.shape)
    shape.insert(axis, size)
    dims = [d if d < axis else d + 1 for d in range(aval.ndim)]
    return broadcast_in_dim(x, shape, dims)


def bdim_to(x: Any, dim: int | None, size: int, dst: int) -> Any:
    """``x`` with its batch axis at ``dst``: moved there, or broadcast if unbatched."""
    if dim is None:
        return broadcast_batch(x, size, dst)
    return moveaxis(x, dim, dst)


def shift_dims(dims: Sequence[int], bdim: int) -> tuple[int, ...]:
    """Unbatched dim numbers -> dim numbers of the value batched at ``bdim``."""
    return tuple(d if d < bdim else d + 1 for d in dims)


def axis_size_of(args: Sequence[Any], dims: Sequence[int | None]) -> int:
    for x, d in zip(args, dims, strict=True):
        if d is not None:
            return tracing.get_aval(x, "vmap", 0).shape[d]
    raise AssertionError("internal error: batch rule called with no batched operand")


def ndim_of(x: Any) -> int:
    return tracing.get_aval(x, "vmap", 0).ndim


def shape_of(x: Any) -> tuple[int, ...]:
    return tracing.get_aval(x, "vmap", 0).shape


# --- batching rules (refimpl.transforms.batching) -------------------------------------
# Dim numbers in params are the unbatched operand's; ``shift_dims`` maps
# them past the batch axis ``bd``, which stays where it is unless noted.


@broadcast_in_dim_p.def_batch
def _broadcast_in_dim_batch(args, dims, *, shape, broadcast_dimensions):
    """The batch axis goes to the front of the result."""
    (x,), (bd,) = args, dims
    x = moveaxis(x, bd, 0)
    size = shape_of(x)[0]
    new_dims = (0, *(d + 1 for d in broadcast_dimensions))
    return broadcast_in_dim(x, (size, *shape), new_dims), 0


@reshape_p.def_batch
def _reshape_batch(args, dims, *, new_sizes):
    """Row-major order is per member once the batch axis is the leading one."""
    (x,), (bd,) = args, dims
    x = moveaxis(x, bd, 0)
    return reshape_p.bind(x, new_sizes=(shape_of(x)[0], *new_sizes)), 0


@squeeze_p.def_batch
def _squeeze_batch(args, dims, *, dimensions):
    (x,), (bd,) = args, dims
    out_bd = bd - builtins.sum(1 for d in dimensions if d < bd)
    return squeeze_p.bind(x, dimensions=shift_dims(dimensions, bd)), out_bd


@transpose_p.def_batch
def _transpose_batch(args, dims, *, permutation):
    (x,), (bd,) = args, dims
    perm = list(shift_dims(permutation, bd))
    perm.insert(bd, bd)
    if perm == sorted(perm):
        return x, bd
    return transpose_p.bind(x, permutation=tuple(perm)), bd


@rev_p.def_batch
def _rev_batch(args, dims, *, dimensions):
    (x,), (bd,) = args, dims
    return rev_p.bind(x, dimensions=shift_dims(dimensions, bd)), bd


@slice_p.def_batch
def _slice_batch(args, dims, *, start_indices, limit_indices, strides):
    (x,), (bd,) = args, dims
    starts, limits = list(start_indices), list(limit_indices)
    starts.insert(bd, 0)
    limits.insert(bd, shape_of(x)[bd])
    if strides is not None:
        strides = list(strides)
        strides.insert(bd, 1)
        strides = tuple(strides)
    out = slice_p.bind(x, start_indices=tuple(starts), limit_indices=tuple(limits), strides=strides)
    return out, bd


@concatenate_p.def_batch
def _concatenate_batch(args, dims, *, dimension):
    size = axis_size_of(args, dims)
    moved = [bdim_to(x, d, size, 0) for x, d in zip(args, dims, strict=True)]
    return concatenate_p.bind(*moved, dimension=dimension + 1), 0


# --- differentiation rules (refimpl.transforms.ad) -------------------------------------
#
# Every structural primitive is linear in its operands (pad in the operand and
# the padding value jointly, concatenate in all of them): the jvp applies the
# primitive to the tangents, and the transpose moves each cotangent element
# back to where it came from (summing where one element was copied many times).

for _prim in [
    broadcast_in_dim_p, reshape_p, squeeze_p, transpose_p, rev_p, slice_p, concatenate_p,
]:  # fmt: skip
    _prim.def_jvp(ad_helpers.linear_jvp(_prim))
iota_p.def_jvp(ad_helpers.zero_jvp(iota_p))


def _zero_ct(operand: Any) -> Any:
    return ad_helpers.Zero(operand.aval)


@broadcast_in_dim_p.def_transpose
def _broadcast_in_dim_transpose(ct, x, *, shape, broadcast_dimensions):
    """Sum over the new dims and over the size-1 dims that were broadcast."""
    # unreachable from the public API: the backward pass skips an equation whose one output has
    # no cotangent and never passes a symbolic Zero to a single-output rule (ad.backward_pass)
    if isinstance(ct, ad_helpers.Zero):  # pragma: no cover
        return [_zero_ct(x)]
    summed = [d for d in range(len(shape)) if d not in broadcast_dimensions]
    summed += [
        out_dim
        for operand_dim, out_dim in enumerate(broadcast_dimensions)
        if x.aval.shape[operand_dim] == 1 and shape[out_dim] != 1
    ]
    if summed:
        ct = rule_context.reduce_sum(ct, tuple(sorted(summed)))
    # the kept dims are in output order: operand dims sorted by their output dim
    order = sorted(range(x.aval.ndim), key=lambda i: broadcast_dimensions[i])
    sorted_shape = tuple(x.aval.shape[i] for i in order)
    if ad_helpers.aval_of(ct).shape != sorted_shape:
        ct = reshape_p.bind(ct, new_sizes=sorted_shape)
    if order != sorted(order):
        ct = transpose_p.bind(ct, permutation=tuple(int(i) for i in np.argsort(order)))
    return [ct]


@reshape_p.def_transpose
def _reshape_transpose(ct, x, *, new_sizes):
    # unreachable from the public API: the backward pass skips an equation whose one output has
    # no cotangent and never passes a symbolic Zero to a single-output rule (ad.backward_pass)
    if isinstance(ct, ad_helpers.Zero):  # pragma: no cover
        return [_zero_ct(x)]
    return [reshape_p.bind(ct, new_sizes=x.aval.shape)]


@squeeze_p.def_transpose
def _squeeze_transpose(ct, x, *, dimensions):
    # unreachable from the public API: the backward pass skips an equation whose one output has
    # no cotangent and never passes a symbolic Zero to a single-output rule (ad.backward_pass)
    if isinstance(ct, ad_helpers.Zero):  # pragma: no cover
        return [_zero_ct(x)]
    return [reshape_p.bind(ct, new_sizes=x.aval.shape)]


@transpose_p.def_transpose
def _transpose_transpose(ct, x, *, permutation):
    """The inverse permutation."""
    # unreachable from the public API: the backward pass skips an equation whose one output has
    # no cotangent and never passes a symbolic Zero to a single-output rule (ad.backward_pass)
    if isinstance(ct, ad_helpers.Zero):  # pragma: no cover
        return [_zero_ct(x)]
    inverse = tuple(int(i) for i in np.argsort(permutation))
    return [transpose_p.bind(ct, permutation=inverse)]


@rev_p.def_transpose
def _rev_transpose(ct, x, *, dimensions):
    # unreachable from the public API: the backward pass skips an equation whose one output has
    # no cotangent and never passes a symbolic Zero to a single-output rule (ad.backward_pass)
    if isinstance(ct, ad_helpers.Zero):  # pragma: no cover
        return [_zero_ct(x)]
    return [rev_p.bind(ct, dimensions=dimensions)]


@slice_p.def_transpose
def _slice_transpose(ct, x, *, start_indices, limit_indices, strides):
    """Pad the cotangent with zeros back to the operand's shape: ``start``
    before, ``stride - 1`` between elements, the rest after. The zero is
    strong, so the result is strong even for a weak cotangent (JAX 0.10.2:
    ``vjp(lambda x: x[1], x)[1](1.0)`` is ``float32``, not ``~float32``)."""
    # unreachable from the public API: the backward pass skips an equation whose one output has
    # no cotangent and never passes a symbolic Zero to a single-output rule (ad.backward_pass)
    if isinstance(ct, ad_helpers.Zero):  # pragma: no cover
        return [_zero_ct(x)]
    out_shape = ad_helpers.aval_of(ct).shape
    steps = strides or (1,) * len(out_shape)
    if 0 in out_shape:
        return [ad_helpers.zeros(x.aval)]
    config = tuple(
        (start, size - (start + (n - 1) * step + 1), step - 1)
        for start, size, n, step in zip(start_indices, x.aval.shape, out_shape, steps, strict=True)
    )
    return [_pad_zeros(ct, config, weak=False)]


@concatenate_p.def_transpose
def _concatenate_transpose(ct, *xs, dimension):
    """Each linear operand gets its slice of the cotangent."""
    outs, offset = [], 0
    for x in xs:
        aval = ad_helpers.aval_of(x)
        size = aval.shape[dimension]
        if not isinstance(x, ad_helpers.UndefinedPrimal):
            outs.append(None)
        elif isinstance(ct, ad_helpers.Zero):
            outs.append(_zero_ct(x))
        else:
            starts = [0] * aval.ndim
            limits = list(ad_helpers.aval_of(ct).shape)
            starts[dimension], limits[dimension] = offset, offset + size
            outs.append(
                slice_p.bind(
                    ct, start_indices=tuple(starts), limit_indices=tuple(limits), strides=None
                )
            )
        offset += size
    return outs


# --- lowering to StableHLO (refimpl.backends.pjrt.lowering) ---------------------------
#
# Each structural primitive is one StableHLO op with the same meaning; only
# iota goes through int32 (then ``convert``), so that its values are the
# impl's int64 counts converted once (wrapping for narrow integers,
# rounding once for floats) without a 64-bit type when x64 is off.


@broadcast_in_dim_p.def_lowering
def _broadcast_in_dim_lowering(ctx, x, *, shape, broadcast_dimensions):
    return [ctx.hlo.broadcast_in_dim(ctx.ir_type(ctx.avals_out[0]), x, list(broadcast_dimensions))]


def _reshape_lowering(ctx, x, **params):
    return [ctx.hlo.reshape(ctx.ir_type(ctx.avals_out[0]), x)]


reshape_p.def_lowering(_reshape_lowering)
squeeze_p.def_lowering(_reshape_lowering)


@transpose_p.def_lowering
def _transpose_lowering(ctx, x, *, permutation):
    return [ctx.hlo.transpose(x, list(permutation))]


@rev_p.def_lowering
def _rev_lowering(ctx, x, *, dimensions):
    return [ctx.hlo.reverse(x, list(dimensions))]


@slice_p.def_lowering
def _slice_lowering(ctx, x, *, start_indices, limit_indices, strides):
    steps = strides if strides is not None else (1,) * len(start_indices)
    return [ctx.hlo.slice(x, list(start_indices), list(limit_indices), list(steps))]


@concatenate_p.def_lowering
def _concatenate_lowering(ctx, *xs, dimension):
    return [ctx.hlo.concatenate(list(xs), dimension)]


@iota_p.def_lowering
def _iota_lowering(ctx, *, dtype, shape, dimension):
    int32 = np.dtype(np.int32)
    counts = ctx.hlo.iota(ctx.tensor_type(shape, int32), dimension)
    return [ctx.convert(counts, int32, dtype)]


# --- the public lax functions ------------------------------------------------------


# JAX 0.10.2's lax functions return an array or tracer as it is where they
# would change nothing (a reshape to its own shape, squeeze of no dims, the
# identity transpose, concatenate of one operand): no equation is traced, and
# under vmap the user's NumPy argument comes back as it is (float64 kept).
# NumPy data still goes through the primitive, so becomes an array.


def _unchanged(operand: Any) -> bool:
    """JAX's ``isinstance(operand, Array)``: a tracer or a refimpl array."""
    if isinstance(operand, (np.ndarray, np.generic, tracing.TypedScalar)):
        return False
    return tracing.is_array_like(operand) and not dtypes.is_python_scalar(operand)


def reshape(operand: Any, new_sizes: Sequence[int], dimensions: Sequence[int] | None = None):
    """Row-major reshape to ``new_sizes``; ``dimensions`` transposes the operand first."""
    try:
        new_sizes = as_int_tuple("reshape", new_sizes, "new_sizes")
    except TypeError:  # JAX's words (its canonicalize_shape)
        traced = isinstance(new_sizes, Sequence) and any(
            isinstance(d, tracing.Tracer) for d in new_sizes
        )
        raise TypeError(f"reshape: {not_a_shape(new_sizes, traced)}") from None
    shape = tracing.get_aval(operand, "reshape", 0).shape
    same_dims = dimensions is None or tuple(dimensions) == tuple(range(len(shape)))
    if shape and new_sizes == shape and same_dims and _unchanged(operand):
        return operand
    if dimensions is not None:
        operand = transpose(operand, dimensions)
    return reshape_p.bind(operand, new_sizes=new_sizes)


def broadcast_in_dim(operand: Any, shape: Sequence[int], broadcast_dimensions: Sequence[int]):
    """Broadcast ``operand`` to ``shape``; operand dim i maps to output dim
    ``broadcast_dimensions[i]``."""
    return broadcast_in_dim_p.bind(
        operand,
        shape=as_int_tuple("broadcast_in_dim", shape, "shape"),
        broadcast_dimensions=as_int_tuple(
            "broadcast_in_dim", broadcast_dimensions, "broadcast_dimensions"
        ),
    )


def _ndim(value: Any, name: str) -> int:
    return tracing.get_aval(value, name, 0).ndim


def _normalized_unique(name: str, dims: Any, ndim: int, arg: str) -> tuple[int, ...]:
    """Negative dims counted from the end; repeats (after that) are a ValueError."""
    dims = as_int_tuple(name, dims, arg)
    normalized = tuple(normalize_axis(name, d, ndim, arg) for d in dims)
    if len(set(normalized)) != len(normalized):
        raise ValueError(f"{name}: {arg} are not unique: {dims}")
    return normalized


def squeeze(array: Any, dimensions: Sequence[int]):
    """Remove the size-1 ``dimensions`` (negative ones count from the end)."""
    dims = _normalized_unique("squeeze", dimensions, _ndim(array, "squeeze"), "dimensions")
    if not dims and _unchanged(array):
        return array
    return squeeze_p.bind(array, dimensions=tuple(sorted(dims)))


def expand_dims(array: Any, dimensions: Sequence[int]):
    """Insert size-1 dims at ``dimensions``, positions in the *result* (negative
    ones count from its end). A broadcast_in_dim, as in JAX."""
    aval = tracing.get_aval(array, "expand_dims", 0)
    out_ndim = aval.ndim + len(as_int_tuple("expand_dims", dimensions, "dimensions"))
    new_dims = set(_normalized_unique("expand_dims", dimensions, out_ndim, "dimensions"))
    kept = tuple(d for d in range(out_ndim) if d not in new_dims)
    shape = [1] * out_ndim
    for operand_dim, out_dim in enumerate(kept):
        shape[out_dim] = aval.shape[operand_dim]
    return broadcast_in_dim_p.bind(array, shape=tuple(shape), broadcast_dimensions=kept)


def transpose(operand: Any, permutation: Sequence[int]):
    """Permute dimensions: output dim ``i`` is operand dim ``permutation[i]``."""
    permutation = as_int_tuple("transpose", permutation, "permutation")
    if permutation == tuple(range(_ndim(operand, "transpose"))) and _unchanged(operand):
        return operand
    return transpose_p.bind(operand, permutation=permutation)


def rev(operand: Any, dimensions: Sequence[int]):
    """Reverse the element order along each of ``dimensions``."""
    return rev_p.bind(operand, dimensions=as_int_tuple("rev", dimensions, "dimensions"))


def slice(  # noqa: A001
    operand: Any,
    start_indices: Sequence[int],
    limit_indices: Sequence[int],
    strides: Sequence[int] | None = None,
):
    """Static slice ``operand[start:limit:stride, ...]`` (no negative indices)."""
    return slice_p.bind(
        operand,
        start_indices=as_int_tuple("slice", start_indices, "start_indices"),
        limit_indices=as_int_tuple("slice", limit_indices, "limit_indices"),
        strides=None if strides is None else as_int_tuple("slice", strides, "strides"),
    )


def slice_in_dim(
    operand: Any, start_index: int | None, limit_index: int | None, stride: int = 1, axis: int = 0
):
    """``slice`` along one ``axis``. ``None`` means the start/end, a negative
    index counts from the end; out-of-range indices are an error (no clipping)."""
    shape = tracing.get_aval(operand, "slice_in_dim", 0).shape
    axis = normalize_axis("slice_in_dim", axis, len(shape))
    size = shape[axis]
    start = 0 if start_index is None else int(start_index)
    limit = size if limit_index is None else int(limit_index)
    starts, limits, strides = [0] * len(shape), list(shape), [1] * len(shape)
    starts[axis] = start + size if start < 0 else start
    limits[axis] = limit + size if limit < 0 else limit
    strides[axis] = stride
    return slice(operand, starts, limits, strides)


def index_in_dim(operand: Any, index: int, axis: int = 0, keepdims: bool = True):
    """The static ``index`` (negative counts from the end) of ``axis``."""
    shape = tracing.get_aval(operand, "index_in_dim", 0).shape
    axis = normalize_axis("index_in_dim", axis, len(shape))
    if not -shape[axis] <= index < shape[axis]:
        raise IndexError(
            f"index_in_dim: index {index} out of bounds for axis of size {shape[axis]}"
        )
    index = index % shape[axis]
    result = slice_in_dim(operand, index, index + 1, 1, axis)
    return result if keepdims else squeeze(result, (axis,))


def concatenate(operands: Sequence[Any], dimension: int):
    """Join ``operands`` (same dtype and rank) along ``dimension``."""
    if isinstance(operands, (str, bytes)) or not isinstance(operands, Sequence):
        raise TypeError(f"concatenate: operands must be a sequence of arrays, got {operands!r}")
    if len(operands) == 1 and _unchanged(operands[0]):
        return operands[0]  # (whatever ``dimension`` is, as JAX)
    # a bool is an int here, as in JAX 0.10.2 (True names axis 1)
    if not isinstance(dimension, (int, np.integer)):
        raise TypeError(f"concatenate: dimension must be an int, got {dimension!r}")
    return concatenate_p.bind(*operands, dimension=int(dimension))


def broadcasted_iota(dtype: Any, shape: Sequence[int], dimension: int):
    """An array of ``shape`` counting 0, 1, ... along ``dimension``."""
    if isinstance(dimension, (float, np.floating)) and float(dimension).is_integer():
        # JAX 0.10.2 takes int(dimension): an integral float names that axis. A fraction
        # (which JAX truncates) stays an error here.
        dimension = int(dimension)
    if not isinstance(dimension, (int, np.integer)):  # a bool is an int, as in JAX 0.10.2
        raise TypeError(f"broadcasted_iota: dimension must be an int, got {dimension!r}")
    return iota_p.bind(
        dtype=_iota_dtype(dtype),
        shape=as_int_tuple("broadcasted_iota", shape, "shape"),
        dimension=int(dimension),
    )


def _iota_dtype(dtype: Any) -> np.dtype:
    try:
        return dtypes.canonicalize_dtype(dtype)
    except TypeError:
        raise TypeError(f"iota: dtype must be a numeric dtype, got {dtype!r}") from None


def iota(dtype: Any, size: int):
    """``[0, 1, ..., size - 1]`` as ``dtype`` (the iota primitive on one dim)."""
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
        raise TypeError(f"iota: size must be an int, got {size!r}")
    return broadcasted_iota(dtype, (int(size),), 0)


# ad_helpers, below this module, broadcasts and reshapes through these slots
rule_context.broadcast_in_dim = broadcast_in_dim
rule_context.reshape = reshape


__all__ = [
    "broadcast_in_dim", "broadcasted_iota", "concatenate", "expand_dims", "index_in_dim", "iota",
    "pad", "reshape", "rev", "slice", "slice_in_dim", "squeeze", "transpose",
]  # fmt: skip
