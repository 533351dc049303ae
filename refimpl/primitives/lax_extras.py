"""The rest of ``jax.lax`` that ordinary programs use.

Primitives (each with abstract_eval, impl, jvp/transpose, batch, mask and
pjrt lowering side by side): ``stop_gradient``, ``optimization_barrier``,
``population_count``, ``clz``, ``reduce_precision`` and ``cumlogsumexp``.

Functions JAX itself defines over other primitives, written here over
refimpl's: ``square``, ``reciprocal``, ``exp2``, ``asinh``/``acosh``/``atanh``,
``full``/``full_like``, ``dot``, ``batch_matmul``, ``broadcast``,
``collapse``, ``tile``, ``split``, ``real``/``imag``/``conj``/``complex``,
``axis_size``, ``conv``/``conv_with_general_padding``/``conv_transpose``,
``reduce`` (monoids only), ``map`` and ``associative_scan``.
"""

from __future__ import annotations

import builtins
import enum
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from refimpl import dtypes, tracing
from refimpl.core import ShapedArray
from refimpl.primitives import ad_helpers, collectives, linalg, reductions, structural
from refimpl.primitives import elementwise as ew
from refimpl.primitives.base import Primitive, check_dtype_in, normalize_axis
from refimpl.transforms import batching
from refimpl.transforms.ad_util import Zero


def _tree():
    from refimpl import tree_util  # tree_util imports nothing from the primitives

    return tree_util


def _passthrough_mask(ctx, *operands: Any, **params: Any):
    """Identity-like primitives: the logical shapes pass through unchanged."""
    out = ctx.primitive.bind(*operands, **params)
    if ctx.primitive.multiple_results:
        return out, list(ctx.logical_in)
    return out, ctx.logical_in[0]


# --- stop_gradient -----------------------------------------------------------------------
#
# As JAX's: the identity whose derivative is zero. Not linear (its tangent
# is not stop_gradient of the input tangent), so it has no transpose rule:
# the jvp rule never puts it on a tangent.

stop_gradient_p = Primitive("stop_gradient")


@stop_gradient_p.def_abstract_eval
def _stop_gradient_abstract_eval(x: ShapedArray) -> ShapedArray:
    return x


@stop_gradient_p.def_impl
def _stop_gradient_impl(x: np.ndarray) -> np.ndarray:
    return x


@stop_gradient_p.def_jvp
def _stop_gradient_jvp(primals, tangents):
    (x,) = primals
    ans = stop_gradient_p.bind(x)
    return ans, ad_helpers.zero_tangent(ad_helpers.aval_of(ans))


@stop_gradient_p.def_batch
def _stop_gradient_batch(args, dims):
    return stop_gradient_p.bind(args[0]), dims[0]


stop_gradient_p.def_mask(_passthrough_mask)


@stop_gradient_p.def_lowering
def _stop_gradient_lowering(ctx, x):
    return [x]


def stop_gradient(x: Any) -> Any:
    """The identity on the pytree ``x`` whose derivative is zero.

    As JAX: leaves of float or complex dtype go through the ``stop_gradient``
    primitive (a Python float becomes a weakly typed array); other leaves
    (integers, bools, float0) are returned unchanged, since they carry no
    gradient.
    """

    def stop(leaf: Any) -> Any:
        if isinstance(leaf, Zero):
            return leaf
        if isinstance(leaf, np.ndarray) and leaf.dtype == dtypes.float0:
            return leaf  # a float0 tangent carries no data
        aval = tracing.get_aval(leaf, "stop_gradient", 0)
        if dtypes.is_inexact(aval.dtype):
            return stop_gradient_p.bind(leaf)
        return leaf

    return _tree().tree_map(stop, x)


# --- optimization_barrier ------------------------------------------------------------------

optimization_barrier_p = Primitive("optimization_barrier", multiple_results=True)


@optimization_barrier_p.def_abstract_eval
def _barrier_abstract_eval(*avals: ShapedArray) -> list[ShapedArray]:
    return list(avals)


@optimization_barrier_p.def_impl
def _barrier_impl(*arrays: np.ndarray) -> list[np.ndarray]:
    return list(arrays)


@optimization_barrier_p.def_jvp
def _barrier_jvp(primals, tangents):
    """Primals and (non-zero) tangents through one barrier each, as JAX."""
    outs = optimization_barrier_p.bind(*primals)
    live = [i for i, t in enumerate(tangents) if not ad_helpers.is_zero(t)]
    out_tangents: list[Any] = [ad_helpers.zero_tangent(ad_helpers.aval_of(o)) for o in outs]
    if live:
        through = optimization_barrier_p.bind(*[tangents[i] for i in live])
        for i, t in zip(live, through, strict=True):
            out_tangents[i] = t
    return list(outs), out_tangents


@optimization_barrier_p.def_transpose
def _barrier_transpose(cts, *args):
    live = [i for i, ct in enumerate(cts) if not isinstance(ct, Zero)]
    result: list[Any] = [
        Zero(a.aval) if isinstance(a, ad_helpers.UndefinedPrimal) else None for a in args
    ]
    if live:
        through = optimization_barrier_p.bind(*[cts[i] for i in live])
        for i, ct in zip(live, through, strict=True):
            result[i] = ct
    return result


@optimization_barrier_p.def_batch
def _barrier_batch(args, dims):
    return list(optimization_barrier_p.bind(*args)), list(dims)


optimization_barrier_p.def_mask(_passthrough_mask)


@optimization_barrier_p.def_lowering
def _barrier_lowering(ctx, *operands):
    if not operands:
        return []
    return list(ctx.hlo.OptimizationBarrierOp(list(operands)).results)


def optimization_barrier(operand: Any, /) -> Any:
    """The identity on the pytree ``operand``; on pjrt, a
    ``stablehlo.optimization_barrier`` that XLA does not move computations across."""
    tree = _tree()
    leaves, treedef = tree.tree_flatten(operand)
    return tree.tree_unflatten(treedef, optimization_barrier_p.bind(*leaves))


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
    _prim.def_batch(batching.elementwise_batch_rule(_prim))
    _prim.def_jvp(ad_helpers.zero_jvp(_prim))
    _prim.def_lowering(ew._hlo_unary(_op))


def population_count(x: Any) -> Any:
    """Number of set bits of each integer (of its two's complement bits)."""
    return population_count_p.bind(x)


def clz(x: Any) -> Any:
    """Number of leading zero bits of each integer (the bit width for 0)."""
    return clz_p.bind(x)


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
    if ad_helpers.is_zero(t):
        return ans, ad_helpers.zero_tangent(ad_helpers.aval_of(ans))
    return ans, reduce_precision_p.bind(t, **params)


@reduce_precision_p.def_transpose
def _reduce_precision_transpose(ct, x, **params):
    if isinstance(ct, Zero):
        return [Zero(x.aval)]
    return [reduce_precision_p.bind(ct, **params)]


reduce_precision_p.def_batch(batching.elementwise_batch_rule(reduce_precision_p))
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


# --- cumlogsumexp ----------------------------------------------------------------------------

cumlogsumexp_p = Primitive("cumlogsumexp")


@cumlogsumexp_p.def_abstract_eval
def _cumlogsumexp_abstract_eval(x: ShapedArray, *, axis: int, reverse: bool) -> ShapedArray:
    check_dtype_in("cumlogsumexp", x, dtypes.is_floating, "floating-point types")
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
    out = v.copy()
    if reverse:  # out[i] = (...(v[i] + v[i+1]) + ...) + v[n-1]
        for k in range(1, n):
            out[: n - k] = _np_logaddexp(out[: n - k], v[k:])
    else:  # out[i] = (...(v[0] + v[1]) + ...) + v[i]
        for i in range(1, n):
            out[i] = _np_logaddexp(out[i - 1], v[i])
    return np.moveaxis(out, 0, axis)


cumlogsumexp_p.def_batch(reductions._cumulative_batch_rule(cumlogsumexp_p))
cumlogsumexp_p.def_mask(reductions._cumulative_mask_rule(cumlogsumexp_p, lambda d: -np.inf))


def _replace_inf(x: Any) -> Any:
    aval = ad_helpers.aval_of(x)
    inf = ew.eq(ew.abs(x), ad_helpers.scalar(np.inf, aval))
    return ew.select(inf, ad_helpers.zeros(aval), x)


def logaddexp(a: Any, b: Any) -> Any:
    """``log(exp(a) + exp(b))`` by JAX's formula (see ``_np_logaddexp``)."""
    aval = ad_helpers.aval_of(a)
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

    ctx.scalar_block(op.regions[0], [dtype, dtype], body)
    return [op.results[0]]


def cumlogsumexp(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Inclusive ``log(cumsum(exp(operand)))`` along ``axis``, computed stably."""
    return cumlogsumexp_p.bind(operand, axis=axis, reverse=bool(reverse))


# --- thin wrappers over existing primitives --------------------------------------------------


def _aval(x: Any, name: str, index: int = 0) -> ShapedArray:
    return tracing.get_aval(x, name, index)


def _require(name: str, x: Any, allowed: Callable[[np.dtype], bool], what: str) -> ShapedArray:
    aval = _aval(x, name)
    if not allowed(aval.dtype):
        raise TypeError(f"{name} does not accept dtype {aval.dtype.name}; it takes {what}")
    return aval


def square(x: Any) -> Any:
    """``x * x`` elementwise (numeric types)."""
    _require("square", x, lambda d: not dtypes.is_bool(d), "numeric types (not bool)")
    return ew.integer_pow(x, 2)


def reciprocal(x: Any) -> Any:
    """``1 / x`` elementwise (floating or complex types), as ``integer_pow(x, -1)``."""
    _require("reciprocal", x, dtypes.is_inexact, "floating-point or complex types")
    return ew.integer_pow(x, -1)


def exp2(x: Any, *, accuracy: Any = None) -> Any:
    """``2 ** x`` as XLA lowers JAX's exp2: ``exp(log(2) * x)``."""
    aval = _require("exp2", x, dtypes.is_inexact, "floating-point or complex types")
    return ew.exp(ew.mul(ad_helpers.scalar(math.log(2), aval), x))


def _inverse_hyperbolic(name: str, numpy_name: str) -> Callable[[Any], Any]:
    def fn(x: Any) -> Any:
        aval = _require(name, x, dtypes.is_inexact, "floating-point or complex types")
        import refimpl.numpy as rnp  # the numpy layer imports the primitives

        out = getattr(rnp, numpy_name)(x)
        if aval.weak_type:  # lax keeps a weak operand's weak type; the numpy layer does not
            out = ew.convert_element_type(out, aval.dtype, weak_type=True)
        return out

    fn.__name__ = name
    fn.__doc__ = f"Elementwise inverse hyperbolic function (``refimpl.numpy.{numpy_name}``)."
    return fn


asinh = _inverse_hyperbolic("asinh", "arcsinh")
acosh = _inverse_hyperbolic("acosh", "arccosh")
atanh = _inverse_hyperbolic("atanh", "arctanh")


def _shape_tuple(name: str, shape: Any, arg: str = "shape") -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        dims = tuple(shape)
    except TypeError:
        raise TypeError(f"{name}: {arg} must be a sequence of ints, got {shape!r}") from None
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 0:
            raise TypeError(f"{name}: {arg} must be a sequence of non-negative ints, got {shape!r}")
    return tuple(int(d) for d in dims)


def full(shape: Any, fill_value: Any, dtype: Any = None, *, sharding: Any = None) -> Any:
    """An array of ``shape`` filled with the scalar ``fill_value``; weakly typed
    when ``dtype`` is None and ``fill_value`` is (as JAX)."""
    shape = _shape_tuple("full", shape)
    aval = _aval(fill_value, "full")
    if aval.shape != ():
        raise TypeError(f"full: fill_value must be a scalar, got an array of shape {aval.shape}")
    return _filled(fill_value, shape, aval, dtype)


def _filled(fill_value: Any, shape: tuple, like: Any, dtype: Any) -> Any:
    """``fill_value`` broadcast to ``shape``: in ``dtype``, else in ``like``'s
    dtype and weak type."""
    if dtype is None:
        value = ew.convert_element_type(fill_value, like.dtype, weak_type=like.weak_type)
    else:
        value = ew.convert_element_type(fill_value, dtype)
    return structural.broadcast_in_dim(value, shape, ())


def full_like(
    x: Any, fill_value: Any, dtype: Any = None, shape: Any = None, sharding: Any = None
) -> Any:
    """``full(shape or x.shape, fill_value, dtype or x.dtype)``; weakly typed
    when ``dtype`` is None and ``x`` is."""
    aval = _aval(x, "full_like")
    out_shape = aval.shape if shape is None else _shape_tuple("full_like", shape)
    return _filled(fill_value, out_shape, aval, dtype)


def dot(
    lhs: Any,
    rhs: Any,
    *,
    dimension_numbers: Any = None,
    precision: Any = None,
    preferred_element_type: Any = None,
    out_sharding: Any = None,
) -> Any:
    """Vector/matrix products (ranks 1 or 2, contracting lhs's last dim with
    rhs's first), or ``dot_general`` with ``dimension_numbers``."""
    if dimension_numbers is None:
        ls, rs = _aval(lhs, "dot", 0).shape, _aval(rhs, "dot", 1).shape
        if not (1 <= len(ls) <= 2 and 1 <= len(rs) <= 2 and ls[-1] == rs[0]):
            raise ValueError(
                "dot: dimension_numbers must be specified when not performing simple "
                "un-batched matrix-matrix, matrix-vector, or vector-vector products; "
                f"got lhs_shape={ls} rhs_shape={rs}"
            )
        dimension_numbers = (((len(ls) - 1,), (0,)), ((), ()))
    return linalg.dot_general(lhs, rhs, dimension_numbers, precision, preferred_element_type)


def batch_matmul(lhs: Any, rhs: Any, precision: Any = None) -> Any:
    """Batched matrix product: all but the last two dims are batch dims."""
    ls, rs = _aval(lhs, "batch_matmul", 0).shape, _aval(rhs, "batch_matmul", 1).shape
    if len(ls) != len(rs) or len(ls) < 2:
        raise ValueError(
            "batch_matmul: lhs and rhs must have the same rank of at least 2, "
            f"got shapes {ls} and {rs}"
        )
    if ls[:-2] != rs[:-2]:
        raise ValueError(
            f"batch_matmul: lhs and rhs must agree on batch dimensions, got {ls} and {rs}"
        )
    batch = tuple(range(len(ls) - 2))
    return linalg.dot_general(
        lhs, rhs, (((len(ls) - 1,), (len(rs) - 2,)), (batch, batch)), precision
    )


def broadcast(operand: Any, sizes: Sequence[int], *, out_sharding: Any = None) -> Any:
    """``operand`` with new leading dims ``sizes``."""
    sizes = _shape_tuple("broadcast", sizes, "sizes")
    shape = _aval(operand, "broadcast").shape
    dims = tuple(range(len(sizes), len(sizes) + len(shape)))
    return structural.broadcast_in_dim(operand, sizes + shape, dims)


def collapse(operand: Any, start_dimension: int, stop_dimension: int | None = None) -> Any:
    """``operand`` with dims ``start_dimension:stop_dimension`` merged into one."""
    shape = _aval(operand, "collapse").shape
    ndim = len(shape)
    lo = normalize_axis("collapse", start_dimension, ndim, "start_dimension")
    if stop_dimension is None:
        hi = ndim
    else:
        if isinstance(stop_dimension, bool) or not isinstance(stop_dimension, (int, np.integer)):
            raise TypeError(f"collapse: stop_dimension must be an int, got {stop_dimension!r}")
        hi = int(stop_dimension) + ndim if stop_dimension < 0 else int(stop_dimension)
        if not lo <= hi <= ndim:
            raise ValueError(
                f"collapse: stop_dimension {stop_dimension} is out of range for "
                f"start_dimension {start_dimension} and rank {ndim}"
            )
    size = int(np.prod(shape[lo:hi], dtype=np.int64))
    return structural.reshape(operand, shape[:lo] + (size,) + shape[hi:])


def tile(operand: Any, reps: Sequence[int]) -> Any:
    """``operand`` repeated ``reps[i]`` times along dim ``i`` (one rep per dim)."""
    shape = _aval(operand, "tile").shape
    reps = _shape_tuple("tile", reps, "reps")
    if len(reps) != len(shape):
        raise ValueError(
            f"tile: reps must have one entry per dimension of the operand (rank "
            f"{len(shape)}), got {reps}"
        )
    # broadcast to (r0, s0, r1, s1, ...) then merge each pair
    interleaved = tuple(v for r, s in zip(reps, shape, strict=True) for v in (r, s))
    odd = tuple(range(1, 2 * len(shape), 2))
    spread = structural.broadcast_in_dim(operand, interleaved, odd)
    return structural.reshape(spread, tuple(r * s for r, s in zip(reps, shape, strict=True)))


def split(operand: Any, sizes: Sequence[int], axis: int = 0) -> list[Any]:
    """Consecutive pieces of ``operand`` along ``axis`` with ``sizes`` (which
    must add up to the axis size)."""
    shape = _aval(operand, "split").shape
    axis = normalize_axis("split", axis, len(shape))
    sizes = _shape_tuple("split", sizes, "sizes")
    if sum(sizes) != shape[axis]:
        raise ValueError(
            f"split: sizes {sizes} must sum to the size of axis {axis} of the operand, "
            f"{shape[axis]}"
        )
    pieces, start = [], 0
    for size in sizes:
        pieces.append(structural.slice_in_dim(operand, start, start + size, 1, axis))
        start += size
    return pieces


def _complex_part(name: str, x: Any) -> tuple[Any, ShapedArray]:
    aval = _require(name, x, dtypes.is_complex, "complex types")
    return x, aval


def real(x: Any) -> Any:
    """The real part of a complex array (a float array)."""
    _complex_part("real", x)
    import refimpl.numpy as rnp

    return rnp.real(x)


def imag(x: Any) -> Any:
    """The imaginary part of a complex array (a float array)."""
    _complex_part("imag", x)
    import refimpl.numpy as rnp

    return rnp.imag(x)


def conj(x: Any) -> Any:
    """The complex conjugate; a float input becomes complex (as JAX's lax.conj)."""
    aval = _require("conj", x, dtypes.is_inexact, "floating-point or complex types")
    if not dtypes.is_complex(aval.dtype):
        target = np.complex64 if aval.dtype != np.float64 else np.complex128
        return ew.convert_element_type(x, target, weak_type=aval.weak_type)
    import refimpl.numpy as rnp

    return rnp.conjugate(x)


def complex(x: Any, y: Any) -> Any:  # noqa: A001
    """``x + i y`` from two float arrays of one dtype (float32 gives complex64)."""
    ax, ay = _aval(x, "complex", 0), _aval(y, "complex", 1)
    for aval, arg in [(ax, "x"), (ay, "y")]:
        if aval.dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
            raise TypeError(f"complex: {arg} must be float32 or float64, got {aval.dtype.name}")
    if ax.dtype != ay.dtype:
        raise TypeError(
            f"complex requires arguments to have the same dtypes, got {ax.dtype.name}, "
            f"{ay.dtype.name}"
        )
    target = np.dtype(np.complex64 if ax.dtype == np.float32 else np.complex128)
    weak = ax.weak_type and ay.weak_type
    re = ew.convert_element_type(x, target, weak_type=weak)
    im = ew.convert_element_type(y, target, weak_type=weak)
    return ew.add(re, ew.mul(im, tracing.TypedScalar(1j, target, weak)))


def axis_size(axis_name: Any) -> int:
    """The size of the named axis (vmap/pmap ``axis_name``), a Python int; a
    tuple of names gives the product."""
    if isinstance(axis_name, (tuple, list)):
        return int(np.prod([collectives.axis_size(n) for n in axis_name], dtype=np.int64))
    return collectives.axis_size(axis_name)


def broadcast_to_rank(x: Any, rank: int) -> Any:
    """``x`` with leading dims of size 1 added up to rank ``rank``."""
    ndim = _aval(x, "broadcast_to_rank").ndim
    if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or rank < ndim:
        raise ValueError(
            f"broadcast_to_rank: rank must be an int at least the operand's rank {ndim}, "
            f"got {rank!r}"
        )
    return broadcast(x, (1,) * (int(rank) - ndim))


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """The NumPy broadcast of ``shapes`` (a tuple of ints)."""
    if not shapes:
        raise ValueError("broadcast_shapes: at least one shape is required")
    dims = [_shape_tuple("broadcast_shapes", s, "shapes") for s in shapes]
    rank = builtins.max((len(d) for d in dims), default=0)
    padded = [(1,) * (rank - len(d)) + d for d in dims]
    out = []
    for sizes in zip(*padded):
        big = {n for n in sizes if n != 1}
        if len(big) > 1:
            raise ValueError(f"Incompatible shapes for broadcasting: shapes={list(dims)}")
        out.append(big.pop() if big else 1)
    return tuple(out)


def stack(operands: Sequence[Any], axis: int = 0) -> Any:
    """The operands (one shape) stacked along a new dim ``axis``."""
    operands = list(operands)
    if not operands:
        raise ValueError("stack: operands must not be empty")
    shapes = [_aval(x, "stack", i).shape for i, x in enumerate(operands)]
    if builtins.any(s != shapes[0] for s in shapes):
        listed = ", ".join(str(s) for s in shapes)
        raise ValueError(f"stack: all input arrays must have the same shape, got {listed}")
    axis = normalize_axis("stack", axis, len(shapes[0]) + 1)
    shape = shapes[0][:axis] + (1,) + shapes[0][axis:]
    return structural.concatenate([structural.reshape(x, shape) for x in operands], axis)


def unstack(x: Any, axis: int = 0) -> tuple[Any, ...]:
    """The slices of ``x`` along ``axis``, that dim removed."""
    shape = _aval(x, "unstack").shape
    if not shape:
        raise ValueError("unstack: the operand must have at least one dimension")
    axis = normalize_axis("unstack", axis, len(shape))
    rest = shape[:axis] + shape[axis + 1 :]
    return tuple(
        structural.reshape(structural.slice_in_dim(x, i, i + 1, 1, axis), rest)
        for i in range(shape[axis])
    )


def empty(shape: Any, dtype: Any, *, out_sharding: Any = None) -> Any:
    """An array of ``shape`` and ``dtype`` (zeros, as JAX's)."""
    return full(shape, 0, dtype)


class Precision(enum.Enum):
    """Dot/conv precision names (the reference computes every one exactly)."""

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2


class RoundingMethod(enum.IntEnum):
    """``lax.round``'s methods."""

    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


# --- convolutions ----------------------------------------------------------------------------


def conv(
    lhs: Any,
    rhs: Any,
    window_strides: Sequence[int],
    padding: Any,
    precision: Any = None,
    preferred_element_type: Any = None,
) -> Any:
    """``conv_general_dilated`` with NCHW/OIHW layouts and no dilation."""
    return linalg.conv_general_dilated(
        lhs, rhs, window_strides, padding, precision=precision,
        preferred_element_type=preferred_element_type,
    )  # fmt: skip


def conv_with_general_padding(
    lhs: Any,
    rhs: Any,
    window_strides: Sequence[int],
    padding: Any,
    lhs_dilation: Sequence[int] | None,
    rhs_dilation: Sequence[int] | None,
    precision: Any = None,
    preferred_element_type: Any = None,
) -> Any:
    """``conv_general_dilated`` with NCHW/OIHW layouts."""
    return linalg.conv_general_dilated(
        lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, precision=precision,
        preferred_element_type=preferred_element_type,
    )  # fmt: skip


def _conv_transpose_padding(k: int, s: int, padding: Any) -> tuple[int, int]:
    """(before, after) padding of one spatial dim of the gradient-style
    transposed convolution of a forward conv with ``padding``."""
    if padding == "SAME":
        pad_len = k + s - 2
        pad_a = k - 1 if s > k - 1 else math.ceil(pad_len / 2)
    elif padding == "VALID":
        pad_len = k + s - 2 + builtins.max(k - s, 0)
        pad_a = k - 1
    elif isinstance(padding, tuple):
        pads = tuple(k - p - 1 for p in padding)
        pad_a, pad_len = pads[0], sum(pads)
    else:
        raise ValueError(f"conv_transpose: invalid padding mode {padding!r}")
    return pad_a, pad_len - pad_a


_TRANSPOSE_LAYOUTS = {
    2: ("NC", "IO", "NC"),
    3: ("NHC", "HIO", "NHC"),
    4: ("NHWC", "HWIO", "NHWC"),
    5: ("NHWDC", "HWDIO", "NHWDC"),
}


def conv_transpose(
    lhs: Any,
    rhs: Any,
    strides: Sequence[int],
    padding: Any,
    rhs_dilation: Sequence[int] | None = None,
    dimension_numbers: Any = None,
    transpose_kernel: bool = False,
    precision: Any = None,
    preferred_element_type: Any = None,
    use_consistent_padding: bool = False,
) -> Any:
    """Transposed ("deconvolution") convolution: ``conv_general_dilated`` with
    lhs dilation ``strides``, default layouts NHWC/HWIO/NHWC, and "SAME"/"VALID"
    padding as in JAX (``transpose_kernel`` flips the spatial dims and swaps
    the kernel's feature dims: the gradient of a forward conv)."""
    la, ra = _aval(lhs, "conv_transpose", 0), _aval(rhs, "conv_transpose", 1)
    if la.ndim != ra.ndim or la.ndim < 2:
        raise ValueError(
            "conv_transpose: lhs and rhs must have the same rank of at least 2, "
            f"got shapes {la.shape} and {ra.shape}"
        )
    if dimension_numbers is None:
        if la.ndim not in _TRANSPOSE_LAYOUTS:
            raise ValueError("conv_transpose: no default dimension_numbers for rank above 5")
        dimension_numbers = _TRANSPOSE_LAYOUTS[la.ndim]
    dn = linalg.conv_dimension_numbers(la.shape, ra.shape, dimension_numbers)
    nspatial = la.ndim - 2
    strides = tuple(strides)
    k_sdims = [ra.shape[d] for d in dn.rhs_spec[2:]]
    if rhs_dilation is None:
        rhs_dilation = (1,) * nspatial
    if use_consistent_padding or (isinstance(padding, str) and padding in ("SAME", "VALID")):
        effective = [0 if k == 0 else (k - 1) * r + 1 for k, r in zip(k_sdims, rhs_dilation)]
        per_dim = [padding] * len(strides) if isinstance(padding, str) else list(padding)
        pads: Any = tuple(
            _conv_transpose_padding(k, s, p)
            for k, s, p in zip(effective, strides, per_dim, strict=True)
        )
    else:
        pads = padding
    if transpose_kernel:
        rhs = structural.rev(rhs, tuple(dn.rhs_spec[2:]))
        perm = list(range(ra.ndim))
        o, i = dn.rhs_spec[0], dn.rhs_spec[1]
        perm[o], perm[i] = perm[i], perm[o]
        rhs = structural.transpose(rhs, tuple(perm))
    return linalg.conv_general_dilated(
        lhs, rhs, (1,) * nspatial, pads, strides, rhs_dilation, dn, precision=precision,
        preferred_element_type=preferred_element_type,
    )  # fmt: skip


# --- reduce, map, associative_scan -----------------------------------------------------------


def _is(fn: Any, name: str) -> bool:
    """Whether ``fn`` is refimpl's lax function ``name`` (the module's or the
    public, possibly wrapped, one)."""
    if fn is getattr(ew, name, None):
        return True
    from refimpl import lax

    return fn is getattr(lax, name, None)


def _monoid_reducer(computation: Any, init: Any) -> Callable[..., Any] | None:
    """The reduce_* function for ``computation`` with identity ``init``, as
    JAX's ``_get_monoid_reducer``: only a concrete init equal to the identity."""
    try:
        value = np.asarray(init)
    except Exception:  # a tracer: not concrete, no monoid
        return None
    if value.shape != () or value.dtype == object:
        return None
    aval = _aval(init, "reduce")
    dtype = aval.dtype
    if _is(computation, "add"):
        return reductions.reduce_sum if value == 0 else None
    if _is(computation, "mul"):
        return reductions.reduce_prod if value == 1 else None
    if _is(computation, "max"):
        return reductions.reduce_max if value == dtypes.min_value(dtype) else None
    if _is(computation, "min"):
        return reductions.reduce_min if value == dtypes.max_value(dtype) else None
    if _is(computation, "bitwise_or") and dtypes.is_bool(dtype):
        return reductions.reduce_or if not value else None
    if _is(computation, "bitwise_and") and dtypes.is_bool(dtype):
        return reductions.reduce_and if value else None
    return None


def reduce(
    operands: Any,
    init_values: Any,
    computation: Callable[[Any, Any], Any],
    dimensions: Sequence[int],
    out_sharding: Any = None,
) -> Any:
    """Reduce ``operands`` over ``dimensions`` with ``computation``.

    As JAX, a single operand whose computation is ``lax.add``/``mul``/``max``/
    ``min`` (or ``bitwise_or``/``bitwise_and`` on bools) with that monoid's
    identity as ``init_values`` becomes ``reduce_sum`` etc. refimpl has no
    general reduce primitive, so anything else raises NotImplementedError.
    """
    tree = _tree()
    flat_operands, treedef = tree.tree_flatten(operands)
    flat_inits, init_tree = tree.tree_flatten(init_values)
    if treedef != init_tree:
        raise ValueError(
            "reduce: operands and init_values must have the same tree structure, got "
            f"{treedef} and {init_tree}"
        )
    dims = tuple(
        normalize_axis("reduce", d, _aval(flat_operands[0], "reduce").ndim, "dimensions")
        for d in dimensions
    ) if flat_operands else ()  # fmt: skip
    if len(flat_operands) == 1:
        # as JAX: the identity is judged in the init value's own dtype
        reducer = _monoid_reducer(computation, flat_inits[0])
        if reducer is not None:
            return tree.tree_unflatten(treedef, [reducer(flat_operands[0], dims)])
    name = getattr(computation, "__name__", repr(computation))
    raise NotImplementedError(
        f"reduce: computation {name} with these init_values is not a known monoid "
        "(lax.add/mul/max/min with the identity as init, or bitwise_or/bitwise_and on "
        "bools), and refimpl has no general reduce primitive"
    )


def map(f: Callable[[Any], Any], xs: Any, *, batch_size: int | None = None) -> Any:  # noqa: A001
    """``f`` over the leading axis of the pytree ``xs``, as a scan (stacked
    results); with ``batch_size``, ``f`` is vmapped over chunks of that size
    and the remainder is vmapped on its own, as JAX."""
    from refimpl.primitives import control_flow

    leaves, _ = _tree().tree_flatten(xs)
    if not leaves:
        raise ValueError("map: xs must contain at least one array")
    n = _aval(leaves[0], "map").shape[0] if _aval(leaves[0], "map").ndim else None
    if n is None:
        raise ValueError("map: the leaves of xs must have a leading axis")
    if batch_size is None:
        _, ys = control_flow.scan(lambda c, x: (c, f(x)), None, xs)
        return ys
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"map: batch_size must be a positive int, got {batch_size!r}")
    from refimpl.transforms.batching import vmap

    tree = _tree()
    batch_size = builtins.min(batch_size, n) if n else batch_size
    chunks, rest = divmod(n, batch_size) if n else (0, 0)

    def piece(start: int, stop: int) -> Any:
        return tree.tree_map(lambda x: structural.slice_in_dim(x, start, stop, 1, 0), xs)

    results = []
    if chunks:
        main = tree.tree_map(
            lambda x: structural.reshape(x, (chunks, batch_size) + _aval(x, "map").shape[1:]),
            piece(0, chunks * batch_size),
        )
        _, ys = control_flow.scan(lambda c, x: (c, vmap(f)(x)), None, main)
        ys = tree.tree_map(
            lambda y: structural.reshape(y, (chunks * batch_size,) + _aval(y, "map").shape[2:]),
            ys,
        )
        results.append(ys)
    if rest:
        results.append(vmap(f)(piece(chunks * batch_size, n)))
    if len(results) == 1:
        return results[0]
    return tree.tree_map(lambda a, b: structural.concatenate([a, b], 0), *results)


def _interleave(evens: Any, odds: Any, axis: int) -> Any:
    """``evens[0], odds[0], evens[1], ...`` along ``axis``: both spread with
    zero gaps (interior padding), then added (or-ed for bools), as JAX."""
    aval = ad_helpers.aval_of(evens)
    n_even, n_odd = aval.shape[axis], ad_helpers.aval_of(odds).shape[axis]
    even_cfg = [(0, 0, 0)] * aval.ndim
    odd_cfg = [(0, 0, 0)] * aval.ndim
    even_cfg[axis] = (0, 1 if n_even == n_odd else 0, 1)
    odd_cfg[axis] = (1, 0 if n_even == n_odd else 1, 1)
    zero = ad_helpers.scalar(0, aval)
    a = structural.pad_p.bind(evens, zero, padding_config=tuple(even_cfg))
    b = structural.pad_p.bind(odds, ad_helpers.scalar(0, ad_helpers.aval_of(odds)),
                              padding_config=tuple(odd_cfg))  # fmt: skip
    return ew.bitwise_or(a, b) if dtypes.is_bool(aval.dtype) else ew.add(a, b)


def associative_scan(fn: Callable, elems: Any, reverse: bool = False, axis: int = 0) -> Any:
    """Inclusive scan of the pytree ``elems`` along ``axis`` with the
    associative ``fn(a, b)`` (``a`` the earlier elements), by the odd/even
    parallel prefix (Blelloch's): combine neighbouring pairs, scan those
    recursively (results at odd positions), then combine each with the
    next even element. ``reverse`` scans from the end: element ``i`` is
    ``fn(fn(x[n-1], x[n-2]), ..., x[i])``."""
    if not callable(fn):
        raise TypeError("associative_scan: fn argument should be callable.")
    tree = _tree()
    flat, treedef = tree.tree_flatten(elems)
    if not flat:
        return elems
    ndim = _aval(flat[0], "associative_scan").ndim
    axis = normalize_axis("associative_scan", axis, ndim)
    n = _aval(flat[0], "associative_scan").shape[axis]
    for leaf in flat[1:]:
        if _aval(leaf, "associative_scan").shape[axis] != n:
            raise ValueError(
                "associative_scan: array inputs must have the same size along the scan "
                f"axis, saw {[_aval(e, 'associative_scan').shape for e in flat]}"
            )
    if reverse:
        flat = [structural.rev(e, (axis,)) for e in flat]

    def combine(a_flat: list, b_flat: list) -> list:
        out = fn(tree.tree_unflatten(treedef, a_flat), tree.tree_unflatten(treedef, b_flat))
        out_flat, _ = tree.tree_flatten(out)
        return out_flat

    def take(x: Any, start: int, stop: int | None, step: int) -> Any:
        size = _aval(x, "associative_scan").shape[axis]
        stop = size if stop is None else (stop + size if stop < 0 else stop)
        return structural.slice_in_dim(x, start, builtins.max(stop, start), step, axis)

    def scan(es: list) -> list:
        size = _aval(es[0], "associative_scan").shape[axis]
        if size < 2:
            return es
        reduced = combine([take(e, 0, -1, 2) for e in es], [take(e, 1, None, 2) for e in es])
        odds = scan(reduced)
        if size % 2 == 0:
            evens = combine([take(o, 0, -1, 1) for o in odds], [take(e, 2, None, 2) for e in es])
        else:
            evens = combine(odds, [take(e, 2, None, 2) for e in es])
        evens = [
            structural.concatenate([take(e, 0, 1, 1), r], axis)
            for e, r in zip(es, evens, strict=True)
        ]
        return [_interleave(e, o, axis) for e, o in zip(evens, odds, strict=True)]

    out = scan(flat)
    if reverse:
        out = [structural.rev(e, (axis,)) for e in out]
    return tree.tree_unflatten(treedef, out)


__all__ = [
    "stop_gradient", "optimization_barrier", "population_count", "clz", "reduce_precision",
    "cumlogsumexp", "square", "reciprocal", "exp2", "asinh", "acosh", "atanh", "full",
    "full_like", "dot", "batch_matmul", "broadcast", "collapse", "tile", "split", "real",
    "imag", "conj", "complex", "axis_size", "conv", "conv_with_general_padding",
    "conv_transpose", "reduce", "map", "associative_scan", "broadcast_to_rank",
    "broadcast_shapes", "stack", "unstack", "empty", "Precision", "RoundingMethod",
]  # fmt: skip
