"""Reductions, cumulative reductions, argmax/argmin and sort.

Shared rules (JAX's ``lax`` semantics, checked against jax 0.10.2):

* ``axes``/``axis``/``dimension`` params are non-negative and in range; the
  ``lax`` functions reject negative axes, as XLA does (``sort`` alone
  normalizes a negative ``dimension``, like ``jax.lax.sort``).
* The result keeps the operand's dtype, and its weak type -- except
  ``reduce_and``/``reduce_or`` (always strong, as in JAX) and ``argmax``/
  ``argmin`` (strong ``index_dtype``).
* Integer sums and products wrap around. They are computed in 64 bits and
  truncated, which gives the same result because wrap-around arithmetic is
  arithmetic modulo ``2**bits``.
* float16/bfloat16 sums and products (also the cumulative ones) are
  accumulated in float32 and rounded back once per output element. XLA's CPU
  backend accumulates in the narrow type in a vectorized order, so results
  agree within float16/bfloat16 rounding, except that an intermediate value
  that overflows the narrow type (``60000 + 60000 - 60000`` in float16) gives
  ``inf`` on XLA and the exact value here.
* float32/float64 sums are NumPy's (pairwise) sums; XLA may add in another
  order, so they agree within a few ulps per element summed.
* Reducing a zero-size axis gives the identity: 0 for sums, 1 for products,
  ``-inf``/``+inf`` (dtype min/max for integers, False/True for bool) for
  max/min, all ones for ``and`` and zero for ``or``.
* Max and min propagate NaN. Complex max/min compare lexicographically (real
  part first), as XLA does; with a NaN in a complex operand the result is
  unspecified.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from refimpl import dtypes, tracing
from refimpl.core import ShapedArray
from refimpl.primitives import (
    ad_helpers,
    batch_rules,
    elementwise,
    indexing,
    rule_context,
    structural,
)
from refimpl.primitives.base import Primitive, as_int_tuple, check_dtype_in

# --- dtype classes ----------------------------------------------------------------

NUMBER = (lambda d: not dtypes.is_bool(d), "numeric types (not bool)")
ANY = (lambda d: True, "any type")
# JAX 0.10.2's logical reductions refuse the 4-bit integers (their check is NumPy's integer)
BOOL_OR_INT = (
    lambda d: dtypes.is_bool(d) or (dtypes.is_integer(d) and d not in dtypes.INT4_DTYPES),
    "bool or integer types (not int4/uint4)",
)
NOT_COMPLEX = (lambda d: not dtypes.is_complex(d), "bool, integer or floating-point types")

_LOW_PRECISION = (np.dtype(np.float16), dtypes.bfloat16)


def accumulation_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype in which sums and products of ``dtype`` are computed.

    float16/bfloat16 -> float32; signed integers -> int64 and unsigned ->
    uint64 (truncating back afterwards gives exactly the wrapped result);
    bool -> int64 (an or-of-ands is ``count != 0``); everything else itself.
    """
    if dtype in _LOW_PRECISION:
        return np.dtype(np.float32)
    if dtypes.is_unsigned_int(dtype):
        return np.dtype(np.uint64)
    if dtypes.is_signed_int(dtype) or dtypes.is_bool(dtype):
        return np.dtype(np.int64)
    return dtype


def _comparable(x: np.ndarray) -> np.ndarray:
    """``x`` in a dtype NumPy compares natively (f16/bf16 widen exactly to f32)."""
    return x.astype(np.float32) if x.dtype in _LOW_PRECISION else x


def _all_ones(dtype: np.dtype) -> Any:
    """The identity of ``and``: True, or an integer with every bit set."""
    return np.invert(dtypes.zero(dtype))


# --- axis checking --------------------------------------------------------------------


def check_axes(name: str, operand: ShapedArray, axes: Any) -> tuple[int, ...]:
    """``axes`` as a tuple of distinct, non-negative, in-range ints."""
    axes = as_int_tuple(name, axes, "axes")
    for axis in axes:
        if not 0 <= axis < operand.ndim:
            raise ValueError(
                f"{name}: axes {axes} contain the out-of-bounds axis {axis} for an operand "
                f"of shape {operand.shape} (axes must be in [0, {operand.ndim}); negative "
                "axes are not allowed)"
            )
    if len(set(axes)) != len(axes):
        raise ValueError(f"{name}: duplicate value in 'axes' of reduction: {axes}")
    return axes


def check_axis(name: str, operand: ShapedArray, axis: Any, arg: str = "axis") -> int:
    """One non-negative, in-range axis."""
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"{name}: {arg} must be an int, got {axis!r}")
    if not 0 <= axis < operand.ndim:
        raise ValueError(
            f"{name}: {arg} {axis} is out of bounds for an operand of shape {operand.shape} "
            f"(it must be in [0, {operand.ndim}); negative values are not allowed)"
        )
    return int(axis)


def _check_bool_param(name: str, value: Any, arg: str) -> None:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name}: {arg} must be a bool, got {value!r}")


def _reduced_shape(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(size for dim, size in enumerate(shape) if dim not in axes)


# --- reduce_sum / prod / max / min / and / or -----------------------------------------


def reduction(
    name: str,
    reduce: Callable[[np.ndarray, tuple[int, ...]], np.ndarray],
    accepts: tuple,
    keeps_weak_type: bool = True,
) -> Primitive:
    """A reduction over ``axes``: those dims disappear from the shape."""
    prim = Primitive(name)
    allowed, what = accepts

    @prim.def_abstract_eval
    def _abstract_eval(operand: ShapedArray, *, axes: tuple[int, ...]) -> ShapedArray:
        check_dtype_in(name, operand, allowed, what)
        axes = check_axes(name, operand, axes)
        weak = operand.weak_type and keeps_weak_type
        return ShapedArray(_reduced_shape(operand.shape, axes), operand.dtype, weak)

    @prim.def_impl
    def _impl(operand: np.ndarray, *, axes: tuple[int, ...]) -> np.ndarray:
        return np.asarray(reduce(operand, tuple(axes))).astype(operand.dtype)

    return prim


def _sum(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    return np.sum(x.astype(accumulation_dtype(x.dtype)), axis=axes)


def _prod(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    return np.prod(x.astype(accumulation_dtype(x.dtype)), axis=axes)


def _max(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    wide = _comparable(x)
    return np.max(wide, axis=axes, initial=dtypes.min_value(wide.dtype))


def _min(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    wide = _comparable(x)
    return np.min(wide, axis=axes, initial=dtypes.max_value(wide.dtype))


def _and(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    return np.bitwise_and.reduce(x, axis=axes, initial=_all_ones(x.dtype))


def _or(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    return np.bitwise_or.reduce(x, axis=axes, initial=dtypes.zero(x.dtype))


reduce_sum_p = reduction("reduce_sum", _sum, NUMBER)
reduce_prod_p = reduction("reduce_prod", _prod, NUMBER)
reduce_max_p = reduction("reduce_max", _max, ANY)
reduce_min_p = reduction("reduce_min", _min, ANY)
reduce_and_p = reduction("reduce_and", _and, BOOL_OR_INT, keeps_weak_type=False)
reduce_or_p = reduction("reduce_or", _or, BOOL_OR_INT, keeps_weak_type=False)


# --- argmax / argmin ---------------------------------------------------------------------


def arg_reduction(name: str, numpy_arg: Callable[..., np.ndarray]) -> Primitive:
    """The index of the max/min along ``axes[0]``.

    Ties go to the first index. NaN counts as greater than (for argmax) and
    less than (for argmin) every number, so the first NaN wins; -0.0 equals
    0.0. This is JAX's comparator, and also what ``np.argmax``/``np.argmin`` do.
    """
    prim = Primitive(name)

    @prim.def_abstract_eval
    def _abstract_eval(
        operand: ShapedArray, *, axes: tuple[int, ...], index_dtype: np.dtype
    ) -> ShapedArray:
        check_dtype_in(name, operand, *NOT_COMPLEX)
        axes = as_int_tuple(name, axes, "axes")
        if len(axes) != 1:
            raise TypeError(f"{name}: axes must hold exactly one axis, got {axes}")
        if isinstance(axes[0], int) and not 0 <= axes[0] < operand.ndim:  # JAX's words
            raise ValueError(
                f"{name}: Invalid axis {axes[0]} for operand shape {operand.shape} (it must be "
                f"in [0, {operand.ndim}); negative values are not allowed)"
            )
        axis = check_axis(name, operand, axes[0])
        if operand.shape[axis] == 0:
            raise ValueError(
                f"{name}: argmin and argmax require non-empty reduced dimension. "
                f"operand.shape={operand.shape} axis={axis}"
            )
        if not isinstance(index_dtype, np.dtype) or not dtypes.is_integer(index_dtype):
            raise TypeError(f"{name}: index_dtype must be an integer dtype, got {index_dtype!r}")
        return ShapedArray(_reduced_shape(operand.shape, axes), index_dtype, weak_type=False)

    @prim.def_impl
    def _impl(operand: np.ndarray, *, axes: tuple[int, ...], index_dtype: np.dtype) -> np.ndarray:
        return numpy_arg(_comparable(operand), axis=axes[0]).astype(index_dtype)

    return prim


argmax_p = arg_reduction("argmax", np.argmax)
argmin_p = arg_reduction("argmin", np.argmin)


# --- cumsum / cumprod / cummax / cummin ------------------------------------------------


def cumulative(name: str, accumulate: Callable[[np.ndarray, int], np.ndarray]) -> Primitive:
    """An inclusive scan along ``axis``; ``reverse`` scans from the end.

    Output ``i`` combines inputs ``0..i`` (``i..n-1`` when reversed). Same
    shape, dtype and weak type as the operand; bool is rejected, as in JAX.
    """
    prim = Primitive(name)

    @prim.def_abstract_eval
    def _abstract_eval(operand: ShapedArray, *, axis: int, reverse: bool) -> ShapedArray:
        check_dtype_in(name, operand, *NUMBER)
        check_axis(name, operand, axis)
        _check_bool_param(name, reverse, "reverse")
        return operand

    @prim.def_impl
    def _impl(operand: np.ndarray, *, axis: int, reverse: bool) -> np.ndarray:
        x = np.flip(operand, axis) if reverse else operand
        result = np.asarray(accumulate(x, axis)).astype(operand.dtype)
        return np.flip(result, axis) if reverse else result

    return prim


def _cumsum(x: np.ndarray, axis: int) -> np.ndarray:
    return np.cumsum(x.astype(accumulation_dtype(x.dtype)), axis=axis)


def _cumprod(x: np.ndarray, axis: int) -> np.ndarray:
    return np.cumprod(x.astype(accumulation_dtype(x.dtype)), axis=axis)


def _cummax(x: np.ndarray, axis: int) -> np.ndarray:
    return np.maximum.accumulate(_comparable(x), axis=axis)


def _cummin(x: np.ndarray, axis: int) -> np.ndarray:
    return np.minimum.accumulate(_comparable(x), axis=axis)


cumsum_p = cumulative("cumsum", _cumsum)
cumprod_p = cumulative("cumprod", _cumprod)
cummax_p = cumulative("cummax", _cummax)
cummin_p = cumulative("cummin", _cummin)


# --- masking rules (refimpl.transforms.masking) ------------------------------------------
#
# Before reducing over a masked dim its padding is filled with a value that
# cannot change the result: the reduction's identity, or for argmax/argmin
# a value no valid entry loses to.


def _reduction_mask_rule(prim: Primitive, identity: Callable[[np.dtype], Any]):
    def rule(ctx, operand, *, axes):
        """Padding along the reduced axes becomes the identity (0 for sums, 1
        for products, -inf/+inf or the dtype's min/max for max/min, all ones
        for and, 0 for or), so an empty valid region gives the identity."""
        logical = ctx.logical_in[0]
        filled = ctx.fill_padding(operand, logical, axes, identity(ctx.avals_in[0].dtype))
        kept = tuple(dim for axis, dim in enumerate(logical) if axis not in axes)
        return prim.bind(filled, axes=axes), kept

    return rule


def _arg_reduction_mask_rule(prim: Primitive, fill: Callable[[np.dtype], Any]):
    def rule(ctx, operand, *, axes, index_dtype):
        """Padding along the reduced axis becomes the dtype's smallest value
        (argmax) or largest (argmin). A tie goes to the first index and every
        valid index precedes the padding, so the result is the unpadded one,
        NaN included (the first NaN wins). An empty valid region gives 0."""
        logical = ctx.logical_in[0]
        filled = ctx.fill_padding(operand, logical, axes, fill(ctx.avals_in[0].dtype))
        kept = tuple(dim for axis, dim in enumerate(logical) if axis not in axes)
        return prim.bind(filled, axes=axes, index_dtype=index_dtype), kept

    return rule


def _cumulative_mask_rule(prim: Primitive, identity: Callable[[np.dtype], Any]):
    def rule(ctx, operand, *, axis, reverse):
        """Output i combines inputs 0..i, so the valid region never sees the
        padding; reversed (inputs i..end) it would, so then the padding along
        ``axis`` is filled with the identity first."""
        logical = ctx.logical_in[0]
        if reverse:
            operand = ctx.fill_padding(operand, logical, (axis,), identity(ctx.avals_in[0].dtype))
        return prim.bind(operand, axis=axis, reverse=reverse), logical

    return rule


for _prim, _identity in [
    (reduce_sum_p, dtypes.zero), (reduce_prod_p, dtypes.one), (reduce_max_p, dtypes.min_value),
    (reduce_min_p, dtypes.max_value), (reduce_and_p, _all_ones), (reduce_or_p, dtypes.zero),
]:  # fmt: skip
    _prim.def_mask(_reduction_mask_rule(_prim, _identity))
argmax_p.def_mask(_arg_reduction_mask_rule(argmax_p, dtypes.min_value))
argmin_p.def_mask(_arg_reduction_mask_rule(argmin_p, dtypes.max_value))
for _prim, _identity in [
    (cumsum_p, dtypes.zero), (cumprod_p, dtypes.one), (cummax_p, dtypes.min_value),
    (cummin_p, dtypes.max_value),
]:  # fmt: skip
    _prim.def_mask(_cumulative_mask_rule(_prim, _identity))


# --- sort --------------------------------------------------------------------------------

sort_p = Primitive("sort", multiple_results=True)


@sort_p.def_abstract_eval
def _sort_abstract_eval(
    *operands: ShapedArray, dimension: int, is_stable: bool, num_keys: int
) -> tuple[ShapedArray, ...]:
    """Operands of one shape (any dtypes), sorted together by the first ``num_keys``."""
    if not operands:
        raise TypeError("sort: requires at least one operand")
    shapes = [op.shape for op in operands]
    if any(shape != shapes[0] for shape in shapes):
        raise TypeError(f"sort: operands must all have the same shape, got {shapes}")
    if operands[0].ndim == 0:
        raise ValueError("sort: operands must have rank >= 1, got shape ()")
    check_axis("sort", operands[0], dimension, "dimension")
    _check_bool_param("sort", is_stable, "is_stable")
    if isinstance(num_keys, bool) or not isinstance(num_keys, int):
        raise TypeError(f"sort: num_keys must be an int, got {num_keys!r}")
    if not 1 <= num_keys <= len(operands):
        raise ValueError(
            f"sort: num_keys must be between 1 and the number of operands "
            f"({len(operands)}), got {num_keys}"
        )
    return operands


@sort_p.def_impl
def _sort_impl(
    *operands: np.ndarray, dimension: int, is_stable: bool, num_keys: int
) -> list[np.ndarray]:
    """Sort along ``dimension`` lexicographically by ``operands[:num_keys]``.

    The order is JAX's: floats ascending with -0.0 == 0.0 and every NaN
    (either sign) equal to each other and after +inf; complex numbers by real
    part, then imaginary part, each ordered like a float. Equal keys keep
    their input order (a stable sort is always used, which is a valid result
    for ``is_stable=False`` too).
    """
    keys = [k for operand in operands[:num_keys] for k in sort_keys(operand)]
    keys_last = [np.moveaxis(k, dimension, -1) for k in keys]
    # np.lexsort sorts by its *last* key first, and is stable
    order = np.lexsort(keys_last[::-1], axis=-1)
    return [_permute_last(np.moveaxis(x, dimension, -1), order, dimension) for x in operands]


@sort_p.def_mask
def _sort_mask(ctx, *operands, dimension, is_stable, num_keys):
    """Sorting along an unmasked dim sorts every row (masked other dims just
    carry their logical sizes). Sorting along a masked dim is not supported."""
    logical = ctx.elementwise_logical()
    if ctx.masked(logical[dimension]):
        raise ctx.unsupported(
            f"sorting along the masked dim {dimension} (logical shape {ctx.show(logical)}) "
            "is not supported"
        )
    outs = sort_p.bind(*operands, dimension=dimension, is_stable=is_stable, num_keys=num_keys)
    return list(outs), [logical] * len(operands)


def _permute_last(x: np.ndarray, order: np.ndarray, dimension: int) -> np.ndarray:
    """Reorder ``x``'s last axis by ``order`` and move it back to ``dimension``."""
    return np.moveaxis(np.take_along_axis(x, order, axis=-1), -1, dimension)


def sort_keys(x: np.ndarray) -> list[np.ndarray]:
    """Arrays whose lexicographic order (first array first) is the sort order of ``x``."""
    if dtypes.is_complex(x.dtype):
        return _float_sort_keys(np.real(x)) + _float_sort_keys(np.imag(x))
    if dtypes.is_floating(x.dtype):
        return _float_sort_keys(x)
    if dtypes.is_bool(x.dtype):
        return [x.astype(np.uint8)]
    return [x]


def _float_sort_keys(x: np.ndarray) -> list[np.ndarray]:
    """(is NaN, value with NaN and -0.0 replaced by 0): NaNs last, -0.0 == 0.0."""
    x = _comparable(x)
    is_nan = np.isnan(x)
    value = np.where(is_nan | (x == 0), np.zeros((), x.dtype), x)
    return [is_nan, value]


# --- batching rules (refimpl.transforms.batching) -------------------------------------
# Reduced axes are the unbatched operand's, shifted past the batch axis ``bd``.


def _reduction_batch_rule(prim: Primitive):
    def rule(args, dims, *, axes, **params):
        (x,), (bd,) = args, dims
        out_bd = bd - sum(1 for a in axes if a < bd)
        return prim.bind(x, axes=batch_rules.shift_dims(axes, bd), **params), out_bd

    return rule


def _cumulative_batch_rule(prim: Primitive):
    def rule(args, dims, *, axis, reverse):
        (x,), (bd,) = args, dims
        return prim.bind(x, axis=batch_rules.shift_dims((axis,), bd)[0], reverse=reverse), bd

    return rule


for _prim in [
    reduce_sum_p, reduce_prod_p, reduce_max_p, reduce_min_p, reduce_and_p, reduce_or_p,
    argmax_p, argmin_p,
]:  # fmt: skip
    _prim.def_batch(_reduction_batch_rule(_prim))
for _prim in [cumsum_p, cumprod_p, cummax_p, cummin_p]:
    _prim.def_batch(_cumulative_batch_rule(_prim))


@sort_p.def_batch
def _sort_batch(args, dims, *, dimension, is_stable, num_keys):
    """Every operand batched on axis 0 (sorting moves elements of all of them)."""
    size = batch_rules.axis_size_of(args, dims)
    moved = [batch_rules.bdim_to(x, d, size, 0) for x, d in zip(args, dims, strict=True)]
    outs = sort_p.bind(*moved, dimension=dimension + 1, is_stable=is_stable, num_keys=num_keys)
    return list(outs), [0] * len(moved)


# --- differentiation rules (refimpl.transforms.ad) -------------------------------------


def _structural():
    return structural


def _elementwise():
    return elementwise


def _kept_dims(ndim: int, axes: Sequence[int]) -> tuple[int, ...]:
    return tuple(d for d in range(ndim) if d not in axes)


def _expand_back(y: Any, aval: ShapedArray, axes: Sequence[int]) -> Any:
    """A reduction result broadcast back over the reduced ``axes``."""
    return _structural().broadcast_in_dim(y, aval.shape, _kept_dims(aval.ndim, axes))


reduce_sum_p.def_jvp(ad_helpers.linear_jvp(reduce_sum_p))
cumsum_p.def_jvp(ad_helpers.linear_jvp(cumsum_p))
for _prim in [reduce_and_p, reduce_or_p, argmax_p, argmin_p]:
    _prim.def_jvp(ad_helpers.zero_jvp(_prim))


@reduce_sum_p.def_transpose
def _reduce_sum_transpose(ct, x, *, axes):
    """Every summed element gets the cotangent of its sum."""
    # unreachable from the public API: the backward pass skips an equation whose one output has
    # no cotangent and never passes a symbolic Zero to a single-output rule (ad.backward_pass)
    if isinstance(ct, ad_helpers.Zero):  # pragma: no cover
        return [ad_helpers.Zero(x.aval)]
    return [_expand_back(ct, x.aval, axes)]


@cumsum_p.def_transpose
def _cumsum_transpose(ct, x, *, axis, reverse):
    """Input ``j`` feeds outputs ``j..n-1``: the cumulative sum the other way."""
    # unreachable from the public API: the backward pass skips an equation whose one output has
    # no cotangent and never passes a symbolic Zero to a single-output rule (ad.backward_pass)
    if isinstance(ct, ad_helpers.Zero):  # pragma: no cover
        return [ad_helpers.Zero(x.aval)]
    return [cumsum_p.bind(ct, axis=axis, reverse=not reverse)]


def _chooser_jvp(prim: Primitive):
    """reduce_max/min: the tangent of the chosen element; when several elements
    tie for the result, the mean of their tangents (as JAX)."""

    def rule(primals, tangents, *, axes):
        (x,), (t,) = primals, tangents
        ans = prim.bind(x, axes=axes)
        # unreachable from the public API: one differentiable operand, and the jvp trace calls a
        # rule only when some operand has a nonzero tangent (ad.JVPTrace.process_primitive)
        if ad_helpers.is_zero(t):  # pragma: no cover
            return ans, ad_helpers.zero_tangent(ad_helpers.aval_of(ans))
        ew = _elementwise()
        aval = ad_helpers.aval_of(x)
        hit = ew.eq(x, _expand_back(ans, aval, axes))
        indicators = ew.convert_element_type_p.bind(hit, new_dtype=aval.dtype, weak_type=False)
        counts = reduce_sum(indicators, axes)
        return ans, ew.div(reduce_sum(ew.mul(t, indicators), axes), counts)

    prim.def_jvp(rule)


_chooser_jvp(reduce_max_p)
_chooser_jvp(reduce_min_p)


def _exclusive(cumulative_prim: Primitive, x: Any, axis: int, reverse: bool, identity: Any):
    """The cumulative op of the elements strictly before (``reverse``: after)
    each position: the inclusive one shifted by one, ``identity`` first."""
    structural = _structural()
    inclusive = cumulative_prim.bind(x, axis=axis, reverse=reverse)
    ndim = ad_helpers.aval_of(x).ndim
    config = [(0, 0, 0)] * ndim
    config[axis] = (0, 1, 0) if reverse else (1, 0, 0)
    config_crop = [(0, 0, 0)] * ndim
    config_crop[axis] = (-1, 0, 0) if reverse else (0, -1, 0)
    padded = structural.pad_p.bind(inclusive, identity, padding_config=tuple(config))
    zero = ad_helpers.scalar(0, ad_helpers.aval_of(x))
    return structural.pad_p.bind(padded, zero, padding_config=tuple(config_crop))


@reduce_prod_p.def_jvp
def _reduce_prod_jvp(primals, tangents, *, axes):
    """d prod(x) = sum_j t_j prod_{k != j} x_k, the product of the others taken
    as (product before j) * (product after j): no division, exact at zeros."""
    (x,), (t,) = primals, tangents
    ans = reduce_prod(x, axes)
    # unreachable from the public API: one differentiable operand, and the jvp trace calls a
    # rule only when some operand has a nonzero tangent (ad.JVPTrace.process_primitive)
    if ad_helpers.is_zero(t):  # pragma: no cover
        return ans, ad_helpers.zero_tangent(ad_helpers.aval_of(ans))
    structural, ew = _structural(), _elementwise()
    aval = ad_helpers.aval_of(x)
    kept = _kept_dims(aval.ndim, axes)
    count = int(np.prod([aval.shape[a] for a in axes], dtype=np.int64))
    if count == 0:  # an empty product is the constant 1
        return ans, ad_helpers.zero_tangent(ad_helpers.aval_of(ans))
    rows = tuple(aval.shape[d] for d in kept) + (count,)

    def as_rows(v):
        return structural.reshape(v, rows, tuple(kept) + tuple(axes))

    xr, tr = as_rows(x), as_rows(t)
    last = len(rows) - 1
    one = ad_helpers.scalar(1, aval)
    before = _exclusive(cumprod_p, xr, last, False, one)
    after = _exclusive(cumprod_p, xr, last, True, one)
    others = ew.mul(before, after)
    return ans, reduce_sum(ew.mul(tr, others), (last,))


def _prefix_scan_jvp(prim: Primitive, combine):
    """cumprod/cummax/cummin: the tangent of the prefix scan evaluated on
    (value, tangent) pairs, ``combine((a, ta), (b, tb))`` giving the pair of
    ``a op b``, with the odd/even recursive combining tree JAX's
    ``associative_scan`` uses (so ties in cummax/cummin, where each combine
    splits the tangent equally as the elementwise max/min do, resolve as in
    JAX): combine neighbouring pairs, scan those recursively (the results at
    odd positions), then combine each with the next even element."""

    def rule(primals, tangents, *, axis, reverse):
        (x,), (t,) = primals, tangents
        ans = prim.bind(x, axis=axis, reverse=reverse)
        # unreachable from the public API: one differentiable operand, and the jvp trace calls a
        # rule only when some operand has a nonzero tangent (ad.JVPTrace.process_primitive)
        if ad_helpers.is_zero(t):  # pragma: no cover
            return ans, ad_helpers.zero_tangent(ad_helpers.aval_of(ans))
        structural = _structural()
        if reverse:
            x, t = structural.rev(x, (axis,)), structural.rev(t, (axis,))
        _, tangent = _odd_even_scan((x, t), axis, combine)
        if reverse:
            tangent = structural.rev(tangent, (axis,))
        return ans, tangent

    prim.def_jvp(rule)


def _take_every(x: Any, axis: int, start: int, stop: int | None, step: int) -> Any:
    """``x[start:stop:step]`` along ``axis`` (``stop`` may be negative)."""
    structural = _structural()
    return structural.slice_in_dim(x, start, stop, step, axis)


def _odd_even_scan(pair: tuple[Any, Any], axis: int, combine) -> tuple[Any, Any]:
    size = ad_helpers.aval_of(pair[0]).shape[axis]
    if size < 2:
        return pair
    structural = _structural()
    evens = tuple(_take_every(e, axis, 0, size - 1 if size % 2 else None, 2) for e in pair)
    odds = tuple(_take_every(e, axis, 1, None, 2) for e in pair)
    # results at odd positions 1, 3, 5, ...
    odd_results = _odd_even_scan(combine(evens, odds), axis, combine)
    # results at even positions 2, 4, ...: the previous odd result op the element
    later_evens = tuple(_take_every(e, axis, 2, None, 2) for e in pair)
    n_later = ad_helpers.aval_of(later_evens[0]).shape[axis]
    previous = tuple(_take_every(r, axis, 0, n_later, 1) for r in odd_results)
    even_results = combine(previous, later_evens) if n_later else later_evens
    even_results = tuple(
        structural.concatenate([_take_every(e, axis, 0, 1, 1), r], axis)
        for e, r in zip(pair, even_results, strict=True)
    )
    return tuple(_interleave(a, b, axis) for a, b in zip(even_results, odd_results, strict=True))


def _interleave(evens: Any, odds: Any, axis: int) -> Any:
    """``evens[0], odds[0], evens[1], odds[1], ...`` along ``axis``: each
    spread out with zero-valued gaps (interior padding) and the two added."""
    structural, ew = _structural(), _elementwise()
    aval = ad_helpers.aval_of(evens)
    n_even, n_odd = aval.shape[axis], ad_helpers.aval_of(odds).shape[axis]
    even_config = [(0, 0, 0)] * aval.ndim
    odd_config = [(0, 0, 0)] * aval.ndim
    even_config[axis] = (0, 1 if n_even == n_odd else 0, 1)
    odd_config[axis] = (1, 0 if n_even == n_odd else 1, 1)
    # a strong zero, as JAX's (a NumPy constant): the interleaved result is
    # strong even for weak operands, so cumprod's tangent of a weak input is
    zero = ad_helpers.scalar(0, aval.update(weak_type=False))
    spread_evens = structural.pad_p.bind(evens, zero, padding_config=tuple(even_config))
    spread_odds = structural.pad_p.bind(odds, zero, padding_config=tuple(odd_config))
    return ew.add(spread_evens, spread_odds)


def _prod_combine(a_pair, b_pair):
    ew = _elementwise()
    (a, ta), (b, tb) = a_pair, b_pair
    return ew.mul(a, b), ew.add(ew.mul(ta, b), ew.mul(a, tb))


def _chooser_combine(choose):
    def combine(a_pair, b_pair):
        ew = _elementwise()
        (a, ta), (b, tb) = a_pair, b_pair
        value = choose(a, b)
        return value, ew.add(
            ew.mul(ta, ew._balanced_eq(a, value, b)), ew.mul(tb, ew._balanced_eq(b, value, a))
        )

    return combine


_prefix_scan_jvp(cumprod_p, _prod_combine)
_prefix_scan_jvp(cummax_p, _chooser_combine(lambda a, b: _elementwise().max(a, b)))
_prefix_scan_jvp(cummin_p, _chooser_combine(lambda a, b: _elementwise().min(a, b)))


@sort_p.def_jvp
def _sort_jvp(primals, tangents, *, dimension, is_stable, num_keys):
    """Sorting permutes: each tangent is permuted like its operand. The
    permutation comes from sorting an iota along, and the tangents are
    gathered with it (a gather, so reverse mode transposes it to a scatter)."""
    structural = _structural()
    aval = ad_helpers.aval_of(primals[0])
    # unreachable from the public API: the jvp trace calls a rule only when some operand has a
    # nonzero tangent (ad.JVPTrace.process_primitive)
    if all(ad_helpers.is_zero(t) for t in tangents):  # pragma: no cover
        outs = sort_p.bind(*primals, dimension=dimension, is_stable=is_stable, num_keys=num_keys)
        return outs, [ad_helpers.zero_tangent(ad_helpers.aval_of(o)) for o in outs]
    positions = structural.broadcasted_iota(np.int32, aval.shape, dimension)
    *outs, order = sort_p.bind(
        *primals, positions, dimension=dimension, is_stable=is_stable, num_keys=num_keys
    )
    tangents_out = [
        ad_helpers.zero_tangent(ad_helpers.aval_of(o))
        if ad_helpers.is_zero(t)
        else _take_along(t, order, dimension)
        for o, t in zip(outs, tangents, strict=True)
    ]
    return outs, tangents_out


def _take_along(x: Any, order: Any, dimension: int) -> Any:
    """``np.take_along_axis(x, order, dimension)`` as one gather on the
    flattened ``x`` (the row offsets added to ``order``)."""

    structural, ew = _structural(), _elementwise()
    aval = ad_helpers.aval_of(x)
    ndim, size = aval.ndim, aval.shape[dimension]
    moved = tuple(d for d in range(ndim) if d != dimension) + (dimension,)
    moved_shape = tuple(aval.shape[d] for d in moved)
    rows = int(np.prod(moved_shape[:-1], dtype=np.int64))
    row_start = ew.mul(structural.iota(np.int32, rows), np.array(size, np.int32))
    row_start = structural.reshape(row_start, moved_shape[:-1])
    row_start = structural.broadcast_in_dim(row_start, moved_shape, tuple(range(ndim - 1)))
    flat_index = ew.add(structural.transpose(order, moved), row_start)
    flat = structural.reshape(x, (aval.size,), moved)
    taken = indexing.gather_along_axis(flat, flat_index, 0, mode="clip")
    return structural.transpose(taken, tuple(int(i) for i in np.argsort(moved)))


# --- lowering to StableHLO (refimpl.backends.pjrt.lowering) ---------------------------
#
# Sums and products of float16/bfloat16 accumulate in float32 and round once,
# as the impls do (XLA alone would accumulate in the narrow type). Max and
# min use StableHLO's maximum/minimum, which propagate NaN; bool uses or/and;
# complex numbers compare lexicographically, real part first.


def _combiner(name: str, dtype: np.dtype):
    """The binary op of reduction ``name`` on rank-0 values of ``dtype``."""

    def combine(ctx):
        if name == "sum":
            return ctx.hlo.add
        if name == "prod":
            return ctx.hlo.multiply
        if name == "and" or (name == "min" and dtypes.is_bool(dtype)):
            return ctx.hlo.and_
        if name == "or" or (name == "max" and dtypes.is_bool(dtype)):
            return ctx.hlo.or_
        if dtypes.is_complex(dtype):
            return lambda a, b: _complex_pick(ctx, a, b, dtype, "GT" if name == "max" else "LT")
        return ctx.hlo.maximum if name == "max" else ctx.hlo.minimum

    return combine


def _complex_pick(ctx, a, b, dtype: np.dtype, direction: str):
    """The lexicographically larger (GT) or smaller (LT) of two complex values."""
    part = np.dtype(np.float32 if dtype == np.complex64 else np.float64)
    ra, rb, ia, ib = ctx.hlo.real(a), ctx.hlo.real(b), ctx.hlo.imag(a), ctx.hlo.imag(b)
    wins = ctx.hlo.or_(
        ctx.compare(ra, rb, direction, part),
        ctx.hlo.and_(ctx.compare(ra, rb, "EQ", part), ctx.compare(ia, ib, direction, part)),
    )
    return ctx.select(wins, a, b)


_IDENTITIES = {
    "sum": dtypes.zero,
    "prod": dtypes.one,
    "max": dtypes.min_value,
    "min": dtypes.max_value,
    "and": _all_ones,
    "or": dtypes.zero,
}


def _compute_dtype(name: str, dtype: np.dtype) -> np.dtype:
    if name in ("sum", "prod") and dtype in _LOW_PRECISION:
        return np.dtype(np.float32)
    return dtype


def _reduction_lowering(name: str):
    def rule(ctx, x, *, axes):
        dtype = ctx.avals_in[0].dtype
        compute = _compute_dtype(name, dtype)
        x = ctx.convert(x, dtype, compute)
        init = ctx.constant(_IDENTITIES[name](compute), compute)
        op = _combiner(name, compute)(ctx)
        (out,) = ctx.reduce([x], [compute], [init], axes, lambda acc, v: [op(acc, v)])
        return [ctx.convert(out, compute, dtype)]

    return rule


for _prim, _name in [
    (reduce_sum_p, "sum"), (reduce_prod_p, "prod"), (reduce_max_p, "max"),
    (reduce_min_p, "min"), (reduce_and_p, "and"), (reduce_or_p, "or"),
]:  # fmt: skip
    _prim.def_lowering(_reduction_lowering(_name))


def _arg_reduction_lowering(direction: str):
    """A reduce over (value, index) pairs: the better value wins, NaN beats every
    number, and among equal values (or two NaNs) the lower index wins."""

    def rule(ctx, x, *, axes, index_dtype):
        dtype = ctx.avals_in[0].dtype
        axis = axes[0]
        shape = ctx.avals_in[0].shape
        indices = ctx.hlo.iota(ctx.tensor_type(shape, index_dtype), axis)
        init_value = ctx.constant(
            dtypes.min_value(dtype) if direction == "GT" else dtypes.max_value(dtype), dtype
        )
        init_index = ctx.constant(0, index_dtype)

        def combine(value_a, index_a, value_b, index_b):
            nan_a, nan_b = ctx.is_nan(value_a, dtype), ctx.is_nan(value_b, dtype)
            not_nan_b = ctx.hlo.not_(nan_b)
            better = ctx.hlo.or_(
                ctx.compare(value_a, value_b, direction, dtype), ctx.hlo.and_(nan_a, not_nan_b)
            )
            tie = ctx.hlo.or_(
                ctx.compare(value_a, value_b, "EQ", dtype), ctx.hlo.and_(nan_a, nan_b)
            )
            first = ctx.compare(index_a, index_b, "LT", index_dtype)
            pick_a = ctx.hlo.or_(better, ctx.hlo.and_(tie, first))
            return [ctx.select(pick_a, value_a, value_b), ctx.select(pick_a, index_a, index_b)]

        _, index = ctx.reduce(
            [x, indices], [dtype, index_dtype], [init_value, init_index], [axis], combine
        )
        return [index]

    return rule


argmax_p.def_lowering(_arg_reduction_lowering("GT"))
argmin_p.def_lowering(_arg_reduction_lowering("LT"))


def _cumulative_lowering(name: str):
    """Output ``i`` reduces the window of inputs ``0..i`` (``i..n-1`` reversed):
    a ``reduce_window`` as long as the axis, padded with the identity."""

    def rule(ctx, x, *, axis, reverse):
        dtype = ctx.avals_in[0].dtype
        shape = ctx.avals_in[0].shape
        compute = _compute_dtype(name, dtype)
        x = ctx.convert(x, dtype, compute)
        n = shape[axis]
        window = [1] * len(shape)
        window[axis] = max(n, 1)
        padding = np.zeros((len(shape), 2), np.int64)
        padding[axis] = (0, n - 1) if reverse else (n - 1, 0)
        if n == 0:
            padding[axis] = (0, 0)
        init = ctx.constant(_IDENTITIES[name](compute), compute)
        op = ctx.hlo.ReduceWindowOp(
            [ctx.tensor_type(shape, compute)],
            [x],
            [init],
            window,
            padding=ctx.ir.DenseIntElementsAttr.get(padding, shape=[len(shape), 2]),
        )
        combine = _combiner(name, compute)(ctx)
        ctx.scalar_block(op.regions[0], [compute, compute], lambda a, b: [combine(a, b)])
        return [ctx.convert(op.results[0], compute, dtype)]

    return rule


for _prim, _name in [
    (cumsum_p, "sum"), (cumprod_p, "prod"), (cummax_p, "max"), (cummin_p, "min"),
]:  # fmt: skip
    _prim.def_lowering(_cumulative_lowering(_name))


@sort_p.def_lowering
def _sort_lowering(ctx, *operands, dimension: int, is_stable: bool, num_keys: int):
    """A stable ``stablehlo.sort`` whose comparator is the impl's order:
    lexicographic over the keys; floats with -0.0 == 0.0 and NaNs last and
    equal; complex by real part, then imaginary part."""
    avals = ctx.avals_in
    op = ctx.hlo.SortOp(
        [ctx.ir_type(a) for a in avals], list(operands), dimension=dimension, is_stable=True
    )
    pair_dtypes = [a.dtype for a in avals for _ in range(2)]

    def comparator(*args):
        keys = []
        for k in range(num_keys):
            keys += _sort_keys(ctx, args[2 * k], args[2 * k + 1], avals[k].dtype)
        less = None
        for key_less, key_equal in reversed(keys):  # k0 < or (k0 == and (k1 < or ...))
            if less is None:
                less = key_less
            else:
                less = ctx.hlo.or_(key_less, ctx.hlo.and_(key_equal, less))
        return [less]

    ctx.scalar_block(op.regions[0], pair_dtypes, comparator)
    return list(op.results)


def _sort_keys(ctx, a, b, dtype: np.dtype) -> list:
    """(a < b, a == b) per sort key of one operand (see ``sort_keys``)."""
    if dtypes.is_complex(dtype):
        part = np.dtype(np.float32 if dtype == np.complex64 else np.float64)
        real = _float_keys(ctx, ctx.hlo.real(a), ctx.hlo.real(b), part)
        imag = _float_keys(ctx, ctx.hlo.imag(a), ctx.hlo.imag(b), part)
        return real + imag
    if dtypes.is_floating(dtype):
        return _float_keys(ctx, a, b, dtype)
    return [(ctx.compare(a, b, "LT", dtype), ctx.compare(a, b, "EQ", dtype))]


def _float_keys(ctx, a, b, dtype: np.dtype) -> list:
    """Keys (is NaN, value with NaN and -0.0 as 0): NaNs last and equal, -0.0 == 0.0."""
    boolean = np.dtype(bool)
    zero = ctx.constant(0, dtype)

    def key(x):
        nan = ctx.is_nan(x, dtype)
        plain = ctx.select(ctx.hlo.or_(nan, ctx.compare(x, zero, "EQ", dtype)), zero, x)
        return nan, plain

    nan_a, value_a = key(a)
    nan_b, value_b = key(b)
    return [
        (ctx.compare(nan_a, nan_b, "LT", boolean), ctx.compare(nan_a, nan_b, "EQ", boolean)),
        (ctx.compare(value_a, value_b, "LT", dtype), ctx.compare(value_a, value_b, "EQ", dtype)),
    ]


# --- the general reduce: any computation, any init, several operands ------------------
#
# ``reduce_p`` (JAX's ``reduce``): operands ``x_1..x_n`` of one shape and rank-0
# inits ``i_1..i_n`` of their dtypes; ``program`` maps ``2n`` rank-0 values
# (accumulators, then elements) to ``n``. Each output element folds its
# reduced elements in row-major order into the inits:
# ``acc = program(*acc, *x[..., k, ...])`` -- the order XLA's CPU backend uses;
# for a monoid any order gives the same value. Results are weak when both the
# operand and its init are (JAX's weak-type rule).

reduce_p = Primitive("reduce", multiple_results=True)


def _split_operands(values: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    n = len(values) // 2
    return list(values[:n]), list(values[n:])


def check_reducer(name: str, operands: list, inits: list, program: Any) -> None:
    """Checks shared by ``reduce`` and the general ``reduce_window``: rank-0
    inits of the operands' dtypes, a body mapping them to themselves."""
    if not operands or len(operands) != len(inits):
        raise TypeError(f"{name}: takes n >= 1 operands and n init values")
    if any(i.shape != () for i in inits):
        # JAX 0.10.2's classes and words: reduce's ValueError, reduce_window's TypeError
        shapes = [i.shape for i in inits]
        if name.startswith("reduce_window"):
            raise TypeError(
                f"{name}: reduce_window expected init_values to be scalars but init_values "
                f"have shapes {shapes}."
            )
        raise ValueError(f"{name} found non-scalar initial value: {shapes}")
    if [o.dtype for o in operands] != [i.dtype for i in inits]:
        raise TypeError(
            f"{name} operand dtypes should match corresponding initial value dtypes, got "
            f"operands={[o.str_short() for o in operands]} and "
            f"initial_values={[i.str_short() for i in inits]}"
        )
    outs = [(a.shape, a.dtype) for a in program.out_avals]
    if outs != [((), i.dtype) for i in inits]:
        raise TypeError(
            f"{name}: the computation must return rank-0 values of the init values' dtypes "
            f"{[i.dtype.name for i in inits]}, got {[a.str_short() for a in program.out_avals]}"
        )


@reduce_p.def_abstract_eval
def _reduce_abstract_eval(*avals: ShapedArray, program: Any, dimensions: tuple[int, ...]):
    operands, inits = _split_operands(avals)
    check_reducer("reduce", operands, inits, program)
    if any(o.shape != operands[0].shape for o in operands):
        # ValueError as JAX 0.10.2 (its shape verification)
        raise ValueError(f"reduce: operands must have one shape, got {[o.shape for o in operands]}")
    check_axes("reduce", operands[0], dimensions)
    shape = _reduced_shape(operands[0].shape, dimensions)
    return [
        ShapedArray(shape, o.dtype, o.weak_type and i.weak_type)
        for o, i in zip(operands, inits, strict=True)
    ]


def fold_rows(
    program: Any, rows: list[np.ndarray], inits: list[np.ndarray], valid: np.ndarray | None = None
) -> list[np.ndarray]:
    """``rows[j]`` of shape ``(m, k)``: fold each row's ``k`` elements in order
    into ``inits`` with ``program`` (applied to ``m`` rows at once: the program
    batched once, then evaluated ``k`` times). Where ``valid`` (``(m, k)``
    bools) is False, the element is skipped."""
    m, k = rows[0].shape
    acc = [np.array(np.broadcast_to(i, (m,))) for i in inits]
    if m == 0 or k == 0:
        return acc
    cache = program.__dict__.setdefault("_fold_cache", {})
    batched = cache.get(m)
    if batched is None:
        batched, _ = rule_context.batch_subprogram(
            program,
            [True] * len(program.in_vars),
            rule_context.axis_frame(None, m),
            [True] * len(acc),
            "reduce",
        )
        cache[m] = batched
    with np.errstate(all="ignore"):
        for j in range(k):
            outs = rule_context.eval_program(batched, [*acc, *(r[:, j] for r in rows)])
            if valid is None:
                acc = [np.asarray(o, a.dtype) for o, a in zip(outs, acc, strict=True)]
            else:
                acc = [np.where(valid[:, j], o, a) for o, a in zip(outs, acc, strict=True)]
    return acc


@reduce_p.def_impl
def _reduce_impl(*values: np.ndarray, program: Any, dimensions: tuple[int, ...]):
    operands, inits = _split_operands(values)
    shape = operands[0].shape
    kept = [d for d in range(len(shape)) if d not in dimensions]
    out_shape = tuple(shape[d] for d in kept)
    m = int(np.prod(out_shape, dtype=np.int64))
    k = int(np.prod([shape[d] for d in dimensions], dtype=np.int64))
    rows = [np.transpose(x, kept + list(dimensions)).reshape(m, k) for x in operands]
    return [a.reshape(out_shape) for a in fold_rows(program, rows, inits)]


@reduce_p.def_lowering
def _reduce_general_lowering(ctx, *values, program: Any, dimensions: tuple[int, ...]):
    operands, inits = _split_operands(values)
    dtypes_ = [a.dtype for a in ctx.avals_in[: len(operands)]]
    return ctx.reduce(
        operands, dtypes_, inits, dimensions, lambda *args: ctx.lower_program(program, args)
    )


@reduce_p.def_batch
def _reduce_general_batch(args, dims, *, program: Any, dimensions: tuple[int, ...]):
    """Operands batched at axis 0, the reduced dims shifted (as JAX: batched
    init values are not supported)."""
    operands, inits = _split_operands(args)
    operand_dims, init_dims = _split_operands(dims)
    if any(d is not None for d in init_dims):
        raise NotImplementedError("vmap of lax.reduce with batched init values")
    size = batch_rules.axis_size_of(args, dims)
    moved = [
        batch_rules.bdim_to(x, d, size, 0) for x, d in zip(operands, operand_dims, strict=True)
    ]
    outs = reduce_p.bind(
        *moved, *inits, program=program, dimensions=tuple(d + 1 for d in dimensions)
    )
    return outs, [0] * len(outs)


@reduce_p.def_jvp
def _reduce_general_jvp(primals, tangents, *, program: Any, dimensions: tuple[int, ...]):
    """As JAX's: the reduced dims moved to the front and flattened, then
    reduced pairwise (halves combined by the computation, vmapped over the
    kept dims; an odd half padded with the init) under ``jvp``. The init
    values must have zero tangents."""
    operands, inits = _split_operands(primals)
    txs, tinits = _split_operands(tangents)
    if not all(ad_helpers.is_zero(t) for t in tinits):
        raise NotImplementedError(
            "Gradient of general lax.reduce with non-zero tangents for initial values to "
            "reduction not implemented"
        )
    aval = ad_helpers.aval_of(operands[0])
    kept = [d for d in range(aval.ndim) if d not in dimensions]
    kept_shape = tuple(aval.shape[d] for d in kept)
    n = int(np.prod([aval.shape[d] for d in dimensions], dtype=np.int64))
    perm = (*dimensions, *kept)

    def front(x: Any) -> Any:
        return structural.reshape(structural.transpose(x, perm), (n, *kept_shape))

    xs = [front(x) for x in operands]
    txs = [
        front(ad_helpers.instantiate(t, ad_helpers.tangent_aval(ad_helpers.aval_of(x))))
        for x, t in zip(operands, txs, strict=True)
    ]

    def body(*args: Any) -> list[Any]:
        return tracing.eval_program_bind(program, args)

    for _ in range(len(kept) + 1):
        body = rule_context.vmap(body)

    def tree(*leaves: Any) -> list[Any]:
        values = list(leaves)
        while ad_helpers.aval_of(values[0]).shape[0] > 1:
            size = ad_helpers.aval_of(values[0]).shape[0]
            half = (size + 1) // 2
            first = [structural.slice_in_dim(v, 0, half, 1, 0) for v in values]
            second = [structural.slice_in_dim(v, half, size, 1, 0) for v in values]
            if size - half != half:
                config = [(0, 0, 0)] * len(kept_shape)
                second = [
                    structural.pad(v, i, [(0, 1, 0), *config])
                    for v, i in zip(second, inits, strict=True)
                ]
            values = list(body(*first, *second))
        if ad_helpers.aval_of(values[0]).shape[0] == 0:
            return [structural.broadcast_in_dim(i, kept_shape, ()) for i in inits]
        return [structural.reshape(v, kept_shape) for v in values]

    return rule_context.jvp_flat(tree, xs, txs)


def reduce_general(
    operands: Sequence[Any], inits: Sequence[Any], program: Any, dimensions: Sequence[int]
) -> list[Any]:
    """``reduce_p`` applied (``refimpl.lax.reduce`` traces ``program``)."""
    return reduce_p.bind(*operands, *inits, program=program, dimensions=tuple(dimensions))


# --- the public lax functions ------------------------------------------------------


def _reduce_fn(prim: Primitive) -> Callable[[Any, Sequence[int]], Any]:
    def fn(operand: Any, axes: Sequence[int]) -> Any:
        return prim.bind(operand, axes=as_int_tuple(prim.name, axes, "axes"))

    fn.__name__ = prim.name
    fn.__doc__ = (
        f"``{prim.name}`` of ``operand`` over ``axes`` (non-negative, distinct ints); "
        "see the module docstring for accumulation and zero-size rules."
    )
    return fn


reduce_sum = _reduce_fn(reduce_sum_p)
reduce_prod = _reduce_fn(reduce_prod_p)
reduce_max = _reduce_fn(reduce_max_p)
reduce_min = _reduce_fn(reduce_min_p)
reduce_and = _reduce_fn(reduce_and_p)
reduce_or = _reduce_fn(reduce_or_p)


def _index_dtype(name: str, index_dtype: Any) -> np.dtype:
    try:
        dtype = dtypes.canonicalize_dtype(index_dtype)
    except TypeError as e:
        raise TypeError(f"{name}: index_dtype {index_dtype!r} is not a valid dtype") from e
    if not dtypes.is_integer(dtype):
        raise TypeError(f"{name}: index_dtype must be an integer type, got {dtype.name}")
    return dtype


def _arg_params(name: str, axis: Any, index_dtype: Any) -> dict[str, Any]:
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"{name}: axis must be an int, got {axis!r}")
    return {"axes": (int(axis),), "index_dtype": _index_dtype(name, index_dtype)}


def argmax(operand: Any, axis: int, index_dtype: Any = np.int32) -> Any:
    """Index of the largest element along ``axis`` (first one on ties; the
    first NaN wins). A strongly typed ``index_dtype`` array."""
    return argmax_p.bind(operand, **_arg_params("argmax", axis, index_dtype))


def argmin(operand: Any, axis: int, index_dtype: Any = np.int32) -> Any:
    """Index of the smallest element along ``axis`` (first one on ties; the
    first NaN wins). A strongly typed ``index_dtype`` array."""
    return argmin_p.bind(operand, **_arg_params("argmin", axis, index_dtype))


def integer_value(value: Any) -> Any:
    """A 0-d integer NumPy array as its int (JAX 0.10.2's lax functions that
    are no jit read ``int(axis)``); anything else unchanged, for the
    primitive's own check."""
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iu":
        return int(value)
    return value


def _cumulative_fn(prim: Primitive) -> Callable[..., Any]:
    def fn(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
        return prim.bind(operand, axis=integer_value(axis), reverse=bool(reverse))

    fn.__name__ = prim.name
    fn.__doc__ = (
        f"Inclusive ``{prim.name}`` along ``axis`` (non-negative), from the end if ``reverse``."
    )
    return fn


cumsum = _cumulative_fn(cumsum_p)
cumprod = _cumulative_fn(cumprod_p)
cummax = _cumulative_fn(cummax_p)
cummin = _cumulative_fn(cummin_p)


def sort(operand: Any, dimension: int = -1, is_stable: bool = True, num_keys: int = 1) -> Any:
    """Sort ``operand`` along ``dimension`` (negative counts from the end).

    ``operand`` may be one array (the result is one array) or a sequence of
    arrays of one shape (the result is a tuple): they are permuted together,
    ordered lexicographically by the first ``num_keys`` of them. NaNs sort
    last; -0.0 and 0.0 are equal; see ``sort_p``'s impl for the full order.
    """
    several = isinstance(operand, (list, tuple))
    operands = tuple(operand) if several else (operand,)
    avals = [tracing.get_aval(x, "sort", i) for i, x in enumerate(operands)]
    if avals and not isinstance(dimension, bool) and isinstance(dimension, (int, np.integer)):
        ndim = avals[0].ndim
        dimension = int(dimension) + ndim if -ndim <= dimension < 0 else int(dimension)
    outs = sort_p.bind(*operands, dimension=dimension, is_stable=bool(is_stable), num_keys=num_keys)
    return tuple(outs) if several else outs[0]


def sort_key_val(keys: Any, values: Any, dimension: int = -1, is_stable: bool = True) -> Any:
    """Sort ``keys`` along ``dimension`` and permute ``values`` the same way."""
    return sort((keys, values), dimension=dimension, is_stable=is_stable, num_keys=1)


# ad_helpers' unbroadcast and structural's transposes, below this module, sum
rule_context.reduce_sum = reduce_sum


__all__ = [
    "reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_and", "reduce_or",
    "argmax", "argmin", "cumsum", "cumprod", "cummax", "cummin", "sort", "sort_key_val",
]  # fmt: skip
