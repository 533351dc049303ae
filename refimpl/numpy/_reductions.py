"""Reductions: sum, prod, max, min, mean, all, any, argmax, argmin, cumsum, cumprod.

Dtype rules are ``jax.numpy``'s:

* results are always strongly typed (a weak input gives a strong result);
* ``sum``/``prod`` promote bool and narrow integers to the default int
  (``sum(int8)`` is int32, ``sum(uint8)`` uint32); ``cumsum``/``cumprod``
  promote only bool; ``max``/``min`` keep the dtype;
* ``mean`` computes in the default float for bool/integers;
* float16/bfloat16 sums, products and means are computed in float32 and
  rounded back once;
* ``dtype=`` sets the result (and computation) dtype.

``axis`` is None (all axes), an int or a tuple of ints; ``keepdims`` keeps
reduced dims as size 1; ``initial`` is combined into the result; ``where``
masks elements out (they count as the reduction's identity). Reducing an
empty axis with ``max``/``min``/``argmax``/``argmin`` is a ValueError (no
identity), as in NumPy.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

import numpy as np

from refimpl import dtypes, lax, tracing
from refimpl.numpy._creation import canonical_dtype
from refimpl.numpy._promote import aval_of, broadcast_shapes, to_inexact_dtype
from refimpl.numpy._shape import normalize_axis, ravel
from refimpl.numpy._ufuncs import select, to_bool

Array = Any
ArrayLike = Any

_LOW_PRECISION = (np.dtype(np.float16), dtypes.bfloat16)


def cast(x: Any, dtype: np.dtype) -> Any:
    """``x`` as a strong ``dtype`` array; no equation when it already is one."""
    aval = aval_of(x, "rnp", 0)
    if aval.dtype == dtype and not aval.weak_type:
        return x
    return lax.convert_element_type(x, dtype)


def _promote_integer(dtype: np.dtype) -> np.dtype:
    """bool and integers narrower than the default int -> the default (u)int."""
    if dtypes.is_bool(dtype):
        return dtypes.weak_default_dtype("i")
    if dtype in dtypes.INT4_DTYPES:
        # JAX 0.10.2 has no default accumulator for 4-bit integers: its sum/prod raise
        # ValueError (its own wording is NumPy's "Invalid integer data type 'V'")
        raise ValueError(
            f"sum/prod of {dtype.name} needs an explicit dtype= to accumulate in "
            "(4-bit integers have no default accumulation type)"
        )
    if dtypes.is_integer(dtype):
        default = dtypes.weak_default_dtype(dtype.kind)
        return default if dtype.itemsize < default.itemsize else dtype
    return dtype


def _upcast_f16(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dtype in _LOW_PRECISION else dtype


def reduction_axes(fn_name: str, axis: Any, ndim: int) -> tuple[int, ...]:
    """``axis`` (None, an int, or a tuple/list of ints) as sorted distinct axes."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        axes = tuple(normalize_axis(fn_name, a, ndim) for a in axis)
        if len(set(axes)) != len(axes):
            # JAX's words (its reductions' own check; expand_dims and
            # average say 'repeated axis')
            raise ValueError(f"duplicate value in 'axis': {axis}")
        return tuple(sorted(axes))
    return (normalize_axis(fn_name, axis, ndim),)


def check_where(name: str, where: Any) -> None:
    """A reduction's ``where`` must be None or boolean (a ValueError in JAX's
    words, naming the function called: ``jnp.nansum``, not the ``sum`` under it)."""
    if where is None:
        return
    dtype = aval_of(where, name, "where").dtype
    if not dtypes.is_bool(dtype):
        raise ValueError(
            f"jnp.{name}: where must be None or a boolean array; got where.dtype={dtype!r}."
        )


class _Reduction:
    """How one reduction combines: its lax reduction, binary op and identity."""

    def __init__(
        self,
        name: str,
        reduce: Callable[..., Any],
        combine: Callable[..., Any],
        identity: Callable[[np.dtype], Any] | None,
        *,
        promote_integers: bool = False,
        upcast_f16: bool = False,
        preprocess: Callable[[Any], Any] | None = None,
    ) -> None:
        self.name = name
        self.reduce = reduce
        self.combine = combine
        self.identity = identity
        self.promote_integers = promote_integers
        self.upcast_f16 = upcast_f16
        self.preprocess = preprocess
        # sum and prod into dtype=bool are any and all (JAX's bool_op)
        self.bool_reduction: _Reduction | None = None

    def __call__(
        self,
        a: ArrayLike,
        axis: Any = None,
        dtype: Any = None,
        keepdims: bool = False,
        initial: ArrayLike = None,
        where: ArrayLike = None,
        promote_integers: bool = True,
    ) -> Array:
        name = self.name
        aval = aval_of(a, name, 0)
        check_where(name, where)
        if self.preprocess is not None:
            a = self.preprocess(a)
            aval = aval_of(a, name, 0)
        axes = reduction_axes(name, axis, aval.ndim)
        if self.identity is None and where is not None and initial is None:
            raise ValueError(
                f"{name}: the reduction has no identity, so a where mask needs 'initial'"
            )
        if (
            self.identity is None
            and initial is None
            and builtins.any(aval.shape[d] == 0 for d in axes)
        ):
            raise ValueError(
                f"{name}: zero-size array to reduction operation {name} which has no identity"
            )
        if dtype is None:
            result_dtype = aval.dtype
            if self.promote_integers and (promote_integers or dtypes.is_bool(result_dtype)):
                # promote_integers=False keeps an integer dtype; bool still counts in ints
                result_dtype = _promote_integer(result_dtype)
        else:
            result_dtype = canonical_dtype(name, dtype)
            if self.bool_reduction is not None and dtypes.is_bool(result_dtype):
                return self.bool_reduction(a, axis, None, keepdims, initial, where)
        computation = result_dtype
        # a 16-bit float computes in float32 unless the dtype was asked for (JAX)
        if self.upcast_f16 and dtype is None and dtypes.is_inexact(result_dtype):
            computation = _upcast_f16(result_dtype)
        a = cast(a, computation)
        if where is not None:
            # a mask that does not broadcast: an error naming the reduction
            broadcast_shapes(name, aval_of(where, name, "where").shape, aval.shape)
            a = select(to_bool(where), a, self._masked_value(computation, initial))
        result = self.reduce(a, axes)
        if initial is not None:
            initial_aval = aval_of(initial, name, "initial")
            if initial_aval.shape != ():
                raise ValueError(
                    f"initial value must be a scalar. Got array of shape {initial_aval.shape}"
                )
            result = self.combine(lax.convert_element_type(initial, computation), result)
        if keepdims:
            result = lax.expand_dims(result, axes)
        return cast(result, result_dtype)

    def _masked_value(self, dtype: np.dtype, initial: Any) -> Any:
        """What masked-out elements become: the identity, or else ``initial``
        (which is combined into the result anyway, so it cannot change it)."""
        if self.identity is None:
            return lax.convert_element_type(initial, dtype)
        return tracing.TypedScalar(self.identity(dtype), dtype, False)


def _reduce_bool_or(reduce_numeric: Callable, reduce_bool: Callable) -> Callable:
    """max/min of bool is any/all."""

    def reduce(a: Any, axes: tuple[int, ...]) -> Any:
        fn = reduce_bool if dtypes.is_bool(aval_of(a, "rnp", 0).dtype) else reduce_numeric
        return fn(a, axes)

    return reduce


def _combine_bool_or(combine_numeric: Callable, combine_bool: Callable) -> Callable:
    def combine(x: Any, y: Any) -> Any:
        fn = combine_bool if dtypes.is_bool(aval_of(y, "rnp", 0).dtype) else combine_numeric
        return fn(x, y)

    return combine


_sum = _Reduction(
    "sum", lax.reduce_sum, lax.add, dtypes.zero, promote_integers=True, upcast_f16=True
)
_prod = _Reduction(
    "prod", lax.reduce_prod, lax.mul, dtypes.one, promote_integers=True, upcast_f16=True
)
_max = _Reduction(
    "max",
    _reduce_bool_or(lax.reduce_max, lax.reduce_or),
    _combine_bool_or(lax.max, lax.bitwise_or),
    None,
)
_min = _Reduction(
    "min",
    _reduce_bool_or(lax.reduce_min, lax.reduce_and),
    _combine_bool_or(lax.min, lax.bitwise_and),
    None,
)


def _cast_to_bool(a: Any) -> Any:
    """JAX's conversion for its logical reductions: complex numbers by their
    real part (``all([1j])`` is False there, True in NumPy)."""
    if dtypes.is_complex(aval_of(a, "rnp", 0).dtype):
        a = lax.real(a)
    return to_bool(a)


_all = _Reduction("all", lax.reduce_and, lax.bitwise_and, dtypes.one, preprocess=_cast_to_bool)
_any = _Reduction("any", lax.reduce_or, lax.bitwise_or, dtypes.zero, preprocess=_cast_to_bool)
_sum.bool_reduction, _prod.bool_reduction = _any, _all


def sum(  # noqa: A001
    a: ArrayLike,
    axis: Any = None,
    dtype: Any = None,
    out: None = None,
    keepdims: bool = False,
    initial: ArrayLike = None,
    where: ArrayLike = None,
    promote_integers: bool = True,
) -> Array:
    """The sum of the elements of ``a`` over ``axis``.

    Bool and narrow integers sum in the default int (integers keep their
    dtype with ``promote_integers=False``); float16 and bfloat16 sum in
    float32, rounded back once. ``dtype=bool`` is :func:`any`. The result is
    strongly typed.

    Args:
        a: The input array.
        axis: The axis or axes to reduce, or None for all.
        dtype: The dtype to sum and return in, or None.
        out: Must be None (NotImplementedError otherwise).
        keepdims: Whether to keep the reduced axes as size-1 axes.
        initial: A scalar added to the sum, or None.
        where: A bool array (broadcast against ``a``) of the elements to
            include, or None for all.
        promote_integers: Whether narrow integers sum in the default int.

    Returns:
        An array of ``a``'s shape without the reduced axes.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.sum(rnp.array([[1, 2], [3, 4]]))
        Array(10, dtype=int32)
        >>> rnp.sum(rnp.array([[1, 2], [3, 4]]), axis=0)
        Array([4, 6], dtype=int32)
        >>> rnp.sum(rnp.array([1.0, 2.0, 3.0]), where=rnp.array([True, False, True]))
        Array(4., dtype=float32)
    """
    _no_out("sum", out)
    return _sum(a, axis, dtype, keepdims, initial, where, promote_integers)


def prod(
    a: ArrayLike,
    axis: Any = None,
    dtype: Any = None,
    out: None = None,
    keepdims: bool = False,
    initial: ArrayLike = None,
    where: ArrayLike = None,
    promote_integers: bool = True,
) -> Array:
    """The product of the elements of ``a`` over ``axis``.

    Bool and narrow integers multiply in the default int (integers keep their
    dtype with ``promote_integers=False``); float16 and bfloat16 in float32.
    ``dtype=bool`` is :func:`all`. The result is strongly typed.

    Args:
        a: The input array.
        axis: The axis or axes to reduce, or None for all.
        dtype: The dtype to multiply and return in, or None.
        out: Must be None (NotImplementedError otherwise).
        keepdims: Whether to keep the reduced axes as size-1 axes.
        initial: A scalar multiplied into the product, or None.
        where: A bool array (broadcast against ``a``) of the elements to
            include, or None for all.
        promote_integers: Whether narrow integers multiply in the default int.

    Returns:
        An array of ``a``'s shape without the reduced axes.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.prod(rnp.array([[1, 2], [3, 4]]), axis=1)
        Array([ 2, 12], dtype=int32)
        >>> rnp.prod(rnp.array([2, 3]), initial=10)
        Array(60, dtype=int32)
    """
    _no_out("prod", out)
    return _prod(a, axis, dtype, keepdims, initial, where, promote_integers)


def max(  # noqa: A001
    a: ArrayLike,
    axis: Any = None,
    out: None = None,
    keepdims: bool = False,
    initial: ArrayLike = None,
    where: ArrayLike = None,
) -> Array:
    """The largest element of ``a`` over ``axis`` (NaN propagates).

    The dtype is kept (bool reduces as :func:`any`). Reducing an empty axis
    without ``initial`` is a ValueError.

    Args:
        a: The input array.
        axis: The axis or axes to reduce, or None for all.
        out: Must be None (NotImplementedError otherwise).
        keepdims: Whether to keep the reduced axes as size-1 axes.
        initial: A scalar included in the reduction, or None; needed for an
            empty reduction and with ``where``.
        where: A bool array (broadcast against ``a``) of the elements to
            include, or None for all.

    Returns:
        An array of ``a``'s shape without the reduced axes, in ``a``'s dtype
        (strongly typed).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.max(rnp.array([[1, 5], [7, 2]]))
        Array(7, dtype=int32)
        >>> rnp.max(rnp.array([[1, 5], [7, 2]]), axis=1)
        Array([5, 7], dtype=int32)
        >>> rnp.max(rnp.array([1.0, rnp.nan, 3.0]))
        Array(nan, dtype=float32)
    """
    _no_out("max", out)
    return _max(a, axis, None, keepdims, initial, where)


def min(  # noqa: A001
    a: ArrayLike,
    axis: Any = None,
    out: None = None,
    keepdims: bool = False,
    initial: ArrayLike = None,
    where: ArrayLike = None,
) -> Array:
    """The smallest element of ``a`` over ``axis`` (NaN propagates).

    The dtype is kept (bool reduces as :func:`all`). Reducing an empty axis
    without ``initial`` is a ValueError.

    Args:
        a: The input array.
        axis: The axis or axes to reduce, or None for all.
        out: Must be None (NotImplementedError otherwise).
        keepdims: Whether to keep the reduced axes as size-1 axes.
        initial: A scalar included in the reduction, or None; needed for an
            empty reduction and with ``where``.
        where: A bool array (broadcast against ``a``) of the elements to
            include, or None for all.

    Returns:
        An array of ``a``'s shape without the reduced axes, in ``a``'s dtype
        (strongly typed).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.min(rnp.array([[1, 5], [7, 2]]), axis=0)
        Array([1, 2], dtype=int32)
        >>> rnp.min(rnp.array([3, 1, 2]), where=rnp.array([True, False, True]), initial=10)
        Array(2, dtype=int32)
    """
    _no_out("min", out)
    return _min(a, axis, None, keepdims, initial, where)


def all(  # noqa: A001
    a: ArrayLike, axis: Any = None, out: None = None, keepdims: bool = False, *, where=None
) -> Array:
    """Whether every element of ``a`` over ``axis`` is nonzero (True for empty).

    A complex element counts by its real part, as JAX's (``all([1j])`` is
    False there and here, True in NumPy).

    Args:
        a: The input array, of any dtype (nonzero is True; complex numbers
            by their real part, as JAX's).
        axis: The axis or axes to reduce, or None for all.
        out: Must be None (NotImplementedError otherwise).
        keepdims: Whether to keep the reduced axes as size-1 axes.
        where: A bool array (broadcast against ``a``) of the elements to
            include, or None for all (keyword-only).

    Returns:
        A bool array of ``a``'s shape without the reduced axes.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.all(rnp.array([[True, False], [True, True]]), axis=1)
        Array([False,  True], dtype=bool)
        >>> rnp.all(rnp.array([1, 2, 0]))
        Array(False, dtype=bool)
    """
    _no_out("all", out)
    return _all(a, axis, None, keepdims, None, where)


def any(  # noqa: A001
    a: ArrayLike, axis: Any = None, out: None = None, keepdims: bool = False, *, where=None
) -> Array:
    """Whether some element of ``a`` over ``axis`` is nonzero (False for empty).

    A complex element counts by its real part, as JAX's.

    Args:
        a: The input array, of any dtype (nonzero is True; complex numbers
            by their real part, as JAX's).
        axis: The axis or axes to reduce, or None for all.
        out: Must be None (NotImplementedError otherwise).
        keepdims: Whether to keep the reduced axes as size-1 axes.
        where: A bool array (broadcast against ``a``) of the elements to
            include, or None for all (keyword-only).

    Returns:
        A bool array of ``a``'s shape without the reduced axes.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.any(rnp.array([[True, False], [False, False]]), axis=1)
        Array([ True, False], dtype=bool)
        >>> rnp.any(rnp.array([0, 0, 3]))
        Array(True, dtype=bool)
    """
    _no_out("any", out)
    return _any(a, axis, None, keepdims, None, where)


def mean(
    a: ArrayLike,
    axis: Any = None,
    dtype: Any = None,
    out: None = None,
    keepdims: bool = False,
    *,
    where: ArrayLike = None,
) -> Array:
    """The arithmetic mean of ``a`` over ``axis``: ``sum / count``.

    In the default float for bool and integers (float32 for float16/bfloat16,
    rounded back). Empty -> NaN. With ``where``, the count is that of the
    included elements.

    Args:
        a: The input array.
        axis: The axis or axes to reduce, or None for all.
        dtype: The dtype to compute and return in, or None.
        out: Must be None (NotImplementedError otherwise).
        keepdims: Whether to keep the reduced axes as size-1 axes.
        where: A bool array (broadcast to ``a``'s shape) of the elements to
            include, or None for all (keyword-only).

    Returns:
        An inexact array of ``a``'s shape without the reduced axes.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.mean(rnp.array([1, 2, 3, 4]))
        Array(2.5, dtype=float32)
        >>> rnp.mean(rnp.array([[1.0, 2.0], [3.0, 5.0]]), axis=0)
        Array([2. , 3.5], dtype=float32)
    """
    _no_out("mean", out)
    aval = aval_of(a, "mean", 0)
    check_where("mean", where)
    axes = reduction_axes("mean", axis, aval.ndim)
    result_dtype = to_inexact_dtype(aval.dtype) if dtype is None else canonical_dtype("mean", dtype)
    computation = _upcast_f16(result_dtype) if dtype is None else result_dtype
    if where is not None:
        where_shape = aval_of(where, "mean", 1).shape
        if broadcast_shapes("mean", where_shape, aval.shape) != aval.shape:
            # a shape error, so a TypeError (SPEC; JAX's broadcast_to raises ValueError)
            raise TypeError(
                f"mean: where of shape {where_shape} does not broadcast to the shape "
                f"{aval.shape} of the array"
            )
    total = _sum(a, axes, computation, keepdims, None, where)
    if where is None:
        count = int(np.prod([aval.shape[d] for d in axes], dtype=np.int64))
        normalizer: Any = tracing.TypedScalar(count, computation, False)
    else:
        mask = lax.broadcast_in_dim(to_bool(where), aval.shape, _right_aligned(where, aval.ndim))
        normalizer = _sum(mask, axes, computation, keepdims, None, None)
    return cast(lax.div(total, normalizer), result_dtype)


def _right_aligned(x: Any, ndim: int) -> tuple[int, ...]:
    x_ndim = aval_of(x, "where", 0).ndim
    return tuple(range(ndim - x_ndim, ndim))


def _arg_reduction(name: str, lax_fn: Callable, example: str, result: str) -> Callable:
    """``lax_fn`` (argmax or argmin) as jnp's ``name``, with one example call
    ``example`` that prints ``result`` in its docstring."""

    def fn(a: ArrayLike, axis: int | None = None, out: None = None, keepdims: bool = False):
        _no_out(name, out)
        aval = aval_of(a, name, 0)
        # the default int when called (int64 under x64, as JAX's)
        index_dtype = dtypes.canonicalize_dtype(np.int64)
        if axis is None:
            flat = ravel(a)
            if aval.size == 0:
                raise ValueError(f"{name}: attempt to get {name} of an empty sequence")
            result = lax_fn(flat, 0, index_dtype)
            axes = tuple(range(aval.ndim))
        else:
            ax = normalize_axis(name, axis, aval.ndim)
            if aval.shape[ax] == 0:
                raise ValueError(f"{name}: attempt to get {name} of an empty sequence")
            result = lax_fn(a, ax, index_dtype)
            axes = (ax,)
        return lax.expand_dims(result, axes) if keepdims else result

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"""The index of the first {name[3:]}imum of ``a`` along ``axis``.

    Of the flattened array when ``axis`` is None; the first NaN wins. An
    empty axis is a ValueError.

    Args:
        a: The input array.
        axis: The axis to search along, or None for the flattened array.
        out: Must be None (NotImplementedError otherwise).
        keepdims: Whether to keep the reduced axis as a size-1 axis.

    Returns:
        An array of the default int (int64 under x64) of ``a``'s shape
        without ``axis`` (a scalar for None).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> {example}
        {result}
    """
    return fn


argmax = _arg_reduction(
    "argmax",
    lax.argmax,
    "rnp.argmax(rnp.array([[1, 5], [7, 2]]), axis=1)",
    "Array([1, 0], dtype=int32)",
)
argmin = _arg_reduction(
    "argmin", lax.argmin, "rnp.argmin(rnp.array([3, 1, 1, 2]))", "Array(1, dtype=int32)"
)


def _cumulative(name: str, lax_fn: Callable, what: str, example: str, result: str) -> Callable:
    """``lax_fn`` (cumsum or cumprod) as jnp's ``name``, documented as the
    cumulative ``what`` with one example call ``example`` that prints
    ``result``."""

    def fn(a: ArrayLike, axis: int | None = None, dtype: Any = None, out: None = None) -> Array:
        _no_out(name, out)
        aval = aval_of(a, name, 0)
        if axis is None:
            a = ravel(a)
            aval = aval_of(a, name, 0)
            axis = 0
        axis = normalize_axis(name, axis, aval.ndim)
        if dtype is None:
            result_dtype = (
                _promote_integer(aval.dtype) if dtypes.is_bool(aval.dtype) else aval.dtype
            )
            computation = result_dtype
        else:
            result_dtype = canonical_dtype(name, dtype)
            computation = result_dtype
            if dtypes.is_bool(result_dtype):  # accumulate counts, then test them
                a = to_bool(a)
                computation = _promote_integer(result_dtype)
        return cast(lax_fn(cast(a, computation), axis), result_dtype)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"""The cumulative {what} of ``a`` along ``axis`` (inclusive).

    Of the flattened array when ``axis`` is None. Bool accumulates in the
    default int; other dtypes keep theirs (unlike :func:`sum`, narrow
    integers are not widened). ``dtype=bool`` accumulates counts and tests
    them.

    Args:
        a: The input array.
        axis: The axis to accumulate along, or None for the flattened array.
        dtype: The dtype to accumulate and return in, or None.
        out: Must be None (NotImplementedError otherwise).

    Returns:
        An array of ``a``'s shape (1-d when ``axis`` is None).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> {example}
        {result}
    """
    return fn


cumsum = _cumulative(
    "cumsum",
    lax.cumsum,
    "sum",
    "rnp.cumsum(rnp.array([[1, 2], [3, 4]]), axis=0)",
    "Array([[1, 2],\n               [4, 6]], dtype=int32)",
)
cumprod = _cumulative(
    "cumprod",
    lax.cumprod,
    "product",
    "rnp.cumprod(rnp.array([1, 2, 3, 4]))",
    "Array([ 1,  2,  6, 24], dtype=int32)",
)


def _no_out(name: str, out: Any) -> None:
    if out is not None:
        raise NotImplementedError(f"{name}: the out argument is not supported")


__all__ = [
    "all", "any", "argmax", "argmin", "cumprod", "cumsum", "max", "mean", "min", "prod", "sum",
]  # fmt: skip
