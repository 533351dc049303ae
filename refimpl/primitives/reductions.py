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
from refimpl.primitives.base import Primitive, as_int_tuple, check_dtype_in

# --- dtype classes ----------------------------------------------------------------

NUMBER = (lambda d: not dtypes.is_bool(d), "numeric types (not bool)")
ANY = (lambda d: True, "any type")
BOOL_OR_INT = (lambda d: dtypes.is_bool(d) or dtypes.is_integer(d), "bool or integer types")
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
        raise ValueError(f"{name}: duplicate axis in axes {axes}")
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
        axis = check_axis(name, operand, axes[0])
        if operand.shape[axis] == 0:
            raise ValueError(
                f"{name}: the reduced dimension {axis} of operand shape {operand.shape} is empty"
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


def _cumulative_fn(prim: Primitive) -> Callable[..., Any]:
    def fn(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
        return prim.bind(operand, axis=axis, reverse=bool(reverse))

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


__all__ = [
    "reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_and", "reduce_or",
    "argmax", "argmin", "cumsum", "cumprod", "cummax", "cummin", "sort", "sort_key_val",
]  # fmt: skip
