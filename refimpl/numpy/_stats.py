"""Statistics: var/std, average, quantiles and medians, ptp, count_nonzero and
the NaN-ignoring reductions, with ``jax.numpy``'s formulas and dtypes.

* ``var``: ``sum(|a - mean(a)|^2) / (N - ddof)`` (the mean with
  ``keepdims``); bool/integers compute in the default float, float16 and
  bfloat16 in float32; complex input gives a real result.
* ``quantile``: sort along the axes (flattened into one), then interpolate
  between the order statistics at ``low = floor(p)``, ``high = ceil(p)``,
  ``p = q (n - 1)``: ``linear`` is ``lo (1 - (p - low)) + hi (p - low)``,
  ``lower``/``higher`` pick one, ``nearest`` picks ``lo`` when ``p - low <=
  0.5``, ``midpoint`` is ``(lo + hi) / 2``. A slice with a NaN gives NaN
  (the ``nan*`` versions use only the non-NaN values: ``n`` is their count).
* ``nan*`` reductions replace NaNs by the reduction's identity; an all-NaN
  slice gives NaN for ``nanmax``/``nanmin``/``nanmean``/``nanvar``, -1 for
  ``nanargmax``/``nanargmin`` (as JAX, which does not raise).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import dtypes, lax, tracing
from refimpl.numpy._creation import asarray, canonical_dtype
from refimpl.numpy._promote import aval_of, checked_array, promote_dtypes_inexact, to_inexact_dtype
from refimpl.numpy._reductions import (
    _promote_integer,
    _upcast_f16,
    argmax,
    argmin,
    cast,
    check_where,
    cumprod,
    cumsum,
    max,
    mean,
    min,
    prod,
    reduction_axes,
    sum,
)
from refimpl.numpy._reductions import all as all_
from refimpl.numpy._reductions import mean as _mean
from refimpl.numpy._search import take_along_axis
from refimpl.numpy._shape import (
    broadcast_to,
    moveaxis,
    normalize_axes,
    normalize_axis,
    reshape,
    transpose,
)
from refimpl.numpy._ufuncs import (
    alias,
    conjugate,
    full_like_shape,
    isnan,
    logical_not,
    multiply,
    real,
    scalar_like,
    select,
    sqrt,
    subtract,
    to_bool,
)

Array = Any
ArrayLike = Any


def _aval(x: Any, name: str = "rnp") -> Any:
    return aval_of(x, name, 0)


def _no_out(name: str, out: Any) -> None:
    if out is not None:
        raise NotImplementedError(f"{name}: the out argument is not supported")


def _real_dtype(dtype: np.dtype) -> np.dtype:
    if dtype == np.complex64:
        return np.dtype(np.float32)
    if dtype == np.complex128:
        return np.dtype(np.float64)
    return dtype


def _var_dtypes(name: str, a_dtype: np.dtype, dtype: Any) -> tuple[np.dtype, np.dtype]:
    """(computation dtype, result dtype) of var/std, as jnp's ``_var_promote_types``."""
    if dtype is not None:
        result = canonical_dtype(name, dtype)
        if not dtypes.is_inexact(result):
            raise ValueError(f"{name}: dtype must be inexact, got {result.name}")
        if dtypes.is_complex(a_dtype) and not dtypes.is_complex(result):
            # JAX 0.10.2 leaves this open (NumPy's meaning is unclear): a ValueError
            raise ValueError(
                f"{name}: a real dtype ({result.name}) for the variance of complex values "
                "is not supported"
            )
        computation = result
    elif not dtypes.is_inexact(a_dtype):
        result = computation = to_inexact_dtype(a_dtype)
    else:
        result, computation = _real_dtype(a_dtype), a_dtype
    return _upcast_f16(computation), result


def _correction(name: str, ddof: Any, correction: Any) -> Any:
    """``correction`` (the Array API's name) or else ``ddof``; both is a ValueError (JAX)."""
    if correction is None:
        return ddof
    if not isinstance(ddof, int) or ddof != 0:
        raise ValueError(f"{name}: ddof and correction can't be provided simultaneously")
    return correction


def _nan_where_no_freedom(result: Any, normalizer: Any, dtype: np.dtype) -> Any:
    """NaN where ``count - ddof <= 0`` (JAX's rule; the quotient is meaningless there)."""
    nan = full_like_shape(result, np.nan, _aval(result).dtype)
    return select(lax.le(normalizer, tracing.TypedScalar(0, dtype, False)), nan, result)


def _squared_deviation(centered: Any) -> Any:
    if dtypes.is_complex(_aval(centered).dtype):
        return real(multiply(centered, conjugate(centered)))
    return multiply(centered, centered)


def var(
    a: ArrayLike,
    axis: Any = None,
    dtype: Any = None,
    out: None = None,
    ddof: int = 0,
    keepdims: bool = False,
    *,
    where: ArrayLike = None,
    mean: ArrayLike = None,
    correction: Any = None,
) -> Array:
    """The variance of ``a`` over ``axis``: ``sum(|a - mean|^2) / (N - ddof)``.

    NaN where ``N - ddof <= 0``; ``mean`` given is used as the mean (JAX's
    argument). Bool and integers compute in the default float dtype, float16
    and bfloat16 in float32; complex input gives a real result.

    Args:
        a: The input array.
        axis: The axis or axes to reduce, or None for all.
        dtype: The inexact dtype to compute and return in, or None.
        out: Must be None (NotImplementedError otherwise).
        ddof: The "delta degrees of freedom" subtracted from the count ``N``.
        keepdims: Whether to keep the reduced axes as size-1 axes.
        where: A bool array (broadcast against ``a``) of the elements to
            include, or None for all.
        mean: The mean to use, broadcastable against ``a`` with the reduced
            axes kept, or None to compute it.
        correction: The array API's name for ``ddof`` (give one of the two).

    Returns:
        An array of ``a``'s shape without the reduced axes, in the real
        inexact dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.var(rnp.array([1, 2, 3, 4]))
        Array(1.25, dtype=float32)
        >>> rnp.var(rnp.array([[1.0, 2.0], [3.0, 5.0]]), axis=1, ddof=1)
        Array([0.5, 2. ], dtype=float32)
    """
    _no_out("var", out)
    ddof = _correction("var", ddof, correction)
    a = checked_array("var", a)
    aval = _aval(a, "var")
    check_where("var", where)
    computation, result_dtype = _var_dtypes("var", aval.dtype, dtype)
    a = cast(a, computation)
    axes = reduction_axes("var", axis, aval.ndim)
    if mean is None:
        mean = _mean(a, axes, dtype=computation, keepdims=True, where=where)
    else:
        mean = cast(checked_array("var", mean, "mean"), computation)
    squares = _squared_deviation(subtract(a, mean))
    real_computation = _real_dtype(computation)
    total = sum(squares, axes, dtype=real_computation, keepdims=keepdims, where=where)
    count = _count(a, axes, keepdims, where, real_computation)
    normalizer = lax.sub(count, tracing.TypedScalar(ddof, real_computation, False))
    result = lax.div(total, normalizer)
    return cast(_nan_where_no_freedom(result, normalizer, real_computation), result_dtype)


def _count(a: Any, axes: tuple[int, ...], keepdims: bool, where: Any, dtype: np.dtype) -> Any:
    """The number of elements reduced (of ``where``'s true ones when given)."""
    aval = _aval(a)
    if where is None:
        n = int(np.prod([aval.shape[d] for d in axes], dtype=np.int64))
        return tracing.TypedScalar(n, dtype, False)

    mask = broadcast_to(asarray(where), aval.shape)
    return sum(mask, axes, dtype=dtype, keepdims=keepdims)


def std(
    a: ArrayLike,
    axis: Any = None,
    dtype: Any = None,
    out: None = None,
    ddof: int = 0,
    keepdims: bool = False,
    *,
    where: ArrayLike = None,
    mean: ArrayLike = None,
    correction: Any = None,
) -> Array:
    """The standard deviation of ``a`` over ``axis``: ``sqrt(var(...))``.

    See :func:`var` for the dtypes and the NaN where ``N - ddof <= 0``.

    Args:
        a: The input array.
        axis: The axis or axes to reduce, or None for all.
        dtype: The inexact dtype to compute and return in, or None.
        out: Must be None (NotImplementedError otherwise).
        ddof: The "delta degrees of freedom" subtracted from the count ``N``.
        keepdims: Whether to keep the reduced axes as size-1 axes.
        where: A bool array (broadcast against ``a``) of the elements to
            include, or None for all.
        mean: The mean to use, or None to compute it.
        correction: The array API's name for ``ddof`` (give one of the two).

    Returns:
        An array of ``a``'s shape without the reduced axes, in the real
        inexact dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.std(rnp.array([2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]))
        Array(2., dtype=float32)
    """
    a = checked_array("std", a)
    _no_out("std", out)
    check_where("std", where)
    ddof = _correction("std", ddof, correction)
    return sqrt(var(a, axis, dtype, None, ddof, keepdims, where=where, mean=mean))


def _weights_like(name: str, w: Any, shape: tuple[int, ...], axis: Any) -> Any:
    """``w`` broadcast to the array's ``shape``: ``w`` has that shape, or one
    weight per position along ``axis`` (an int or a tuple, in the tuple's
    order: weights of shape ``(shape[2], shape[0])`` for ``axis=(2, 0)``), as
    JAX's average and weighted quantiles."""
    w_shape = _aval(w).shape
    if w_shape == shape:
        return w
    if axis is None:
        raise ValueError(f"{name}: axis must be specified when shapes of a and weights differ")
    axes = (
        normalize_axes(name, axis, len(shape))
        if isinstance(axis, (tuple, list))
        else (normalize_axis(name, axis, len(shape)),)
    )
    if w_shape != tuple(shape[ax] for ax in axes):
        raise ValueError(
            f"{name}: shape of weights {w_shape} must be consistent with shape of a "
            f"along axis {axis}: {tuple(shape[ax] for ax in axes)}"
        )
    order = tuple(int(i) for i in np.argsort(axes))
    return lax.broadcast_in_dim(transpose(w, order), shape, tuple(sorted(axes)))


def average(
    a: ArrayLike,
    axis: Any = None,
    weights: ArrayLike = None,
    returned: bool = False,
    keepdims: bool = False,
) -> Any:
    """The weighted average of ``a`` over ``axis``: ``sum(a * w) / sum(w)``.

    The mean without ``weights``; a
    1-d ``weights`` applies along a single ``axis``. With ``returned``, also
    the sum of weights (broadcast like the result). With weights, ``a`` and
    the weights are promoted to a common inexact dtype.

    Args:
        a: The input array.
        axis: The axis or axes to reduce, or None for all.
        weights: The weights, of ``a``'s shape or one per position along
            ``axis``, or None for equal weights.
        returned: Whether to also return the sum of the weights.
        keepdims: Whether to keep the reduced axes as size-1 axes.

    Returns:
        The averages (an array of ``a``'s shape without the reduced axes), or
        with ``returned`` the pair ``(average, sum_of_weights)``.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.average(rnp.array([1.0, 2.0, 3.0]), weights=rnp.array([3.0, 1.0, 0.0]))
        Array(1.25, dtype=float32)
        >>> rnp.average(rnp.array([1.0, 2.0]), weights=rnp.array([1.0, 3.0]), returned=True)
        (Array(1.75, dtype=float32), Array(4., dtype=float32))
    """
    a = checked_array("average", a)
    aval = _aval(a, "average")
    if isinstance(axis, (tuple, list)):
        # JAX's average reads its axes first, in other words than its reductions'
        axes = tuple(normalize_axis("average", d, aval.ndim) for d in axis)
        if len(set(axes)) != len(axes):
            raise ValueError(f"repeated axis: {axis}")
    if weights is None:
        avg = mean(a, axis, keepdims=keepdims)
        if not returned:
            return avg
        axes = reduction_axes("average", axis, aval.ndim)
        count = int(np.prod([aval.shape[d] for d in axes], dtype=np.int64))
        return avg, lax.broadcast_in_dim(
            tracing.TypedScalar(count, _aval(avg).dtype, False), _aval(avg).shape, ()
        )
    a, w = promote_dtypes_inexact("average", a, weights)
    w = _weights_like("average", w, aval.shape, axis)
    axes = reduction_axes("average", axis, aval.ndim)
    scale = sum(w, axes, keepdims=keepdims)
    avg = lax.div(sum(multiply(a, w), axes, keepdims=keepdims), scale)
    if returned:
        return avg, scale
    return avg


# --- quantiles -------------------------------------------------------------------------------

_METHODS = ("linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf")


def _i32(value: int) -> tracing.TypedScalar:
    return tracing.TypedScalar(value, np.dtype(np.int32), False)


def _quantile(
    name: str,
    a: Any,
    q: Any,
    axis: Any,
    method: str,
    keepdims: bool,
    ignore_nan: bool,
    weights: Any = None,
) -> Array:
    if method not in _METHODS:
        raise ValueError(f"{name}: method must be one of {_METHODS}, got {method!r}")
    a = checked_array(name, a)
    aval = _aval(a, name)
    if dtypes.is_complex(aval.dtype):
        raise ValueError(f"{name}: complex input is not supported")
    # the result has a's inexact dtype (JAX's; joined with the weights' when
    # given); the positions are computed in the dtype a and q join to
    # (float32 for float16 a and float32 q)
    if weights is not None:
        weights = checked_array(name, weights, "weights")
        if dtypes.is_complex(aval_of(weights, name, "weights").dtype):
            raise ValueError(f"{name}: weights cannot be complex")
        if method != "inverted_cdf":
            raise NotImplementedError(
                f"{name}: method {method!r} does not take weights; only 'inverted_cdf' does"
            )
        a, weights = promote_dtypes_inexact(name, a, weights)
        weights = _weights_like(name, weights, aval.shape, axis)
    else:
        (a,) = promote_dtypes_inexact(name, a)
    result_dtype = _aval(a).dtype
    # JAX computes the positions (and linear's interpolation) in q's own
    # inexact dtype, a Python scalar's being the default float: a bfloat16 a
    # with q=0.3 finds its positions in float32 (joined with a, bfloat16,
    # they would round to a neighbouring element)
    (q,) = promote_dtypes_inexact(name, q)
    q = asarray(q)
    dtype = _aval(q).dtype
    axes = reduction_axes(name, axis, aval.ndim)
    kept = [d for d in range(aval.ndim) if d not in axes]
    n = int(np.prod([aval.shape[d] for d in axes], dtype=np.int64))
    # the reduced axes flattened into one last axis and sorted (NaNs last)
    batch = tuple(aval.shape[d] for d in kept)
    last = len(batch)
    x = reshape(transpose(a, (*kept, *axes)), (*batch, n))
    q_shape = _aval(q).shape
    q_flat = reshape(q, (-1,))
    nq = _aval(q_flat).shape[0]
    grid = (*batch, nq)
    if n == 0:
        result = lax.broadcast_in_dim(tracing.TypedScalar(np.nan, result_dtype, False), grid, ())
    elif method == "inverted_cdf":
        # the weights (1 each without them) travel with the values they weigh
        w = (
            full_like_shape(x, 1, result_dtype)
            if weights is None
            else reshape(transpose(weights, (*kept, *axes)), (*batch, n))
        )
        x, w = lax.sort((x, w), last, num_keys=1)
        result = _inverted_cdf(x, w, cast(q_flat, result_dtype), ignore_nan)
    else:
        x = lax.sort(x, last)
        nans = lax.reduce_sum(lax.convert_element_type(isnan(x), np.int32), (last,))
        count = lax.sub(_i32(n), nans) if ignore_nan else lax.broadcast_in_dim(_i32(n), batch, ())
        count = lax.broadcast_in_dim(count, grid, tuple(range(last)))
        top = lax.max(lax.sub(count, _i32(1)), lax.broadcast_in_dim(_i32(0), grid, ()))
        positions = lax.mul(
            lax.broadcast_in_dim(q_flat, grid, (last,)), lax.convert_element_type(top, dtype)
        )
        low, high = lax.floor(positions), lax.ceil(positions)
        high_weight = lax.sub(positions, low)
        top = lax.convert_element_type(top, dtype)
        zero = lax.broadcast_in_dim(tracing.TypedScalar(0, dtype, False), grid, ())
        low_i = lax.convert_element_type(lax.min(lax.max(low, zero), top), np.int32)
        high_i = lax.convert_element_type(lax.min(lax.max(high, zero), top), np.int32)

        lo, hi = take_along_axis(x, low_i, last), take_along_axis(x, high_i, last)
        result = cast(_interpolate(method, lo, hi, high_weight, dtype), result_dtype)
        # a NaN in the slice (or, ignoring NaNs, no value at all) gives NaN
        invalid = lax.eq(count, _i32(0)) if ignore_nan else lax.gt(nans, _i32(0))
        if not ignore_nan:
            invalid = lax.broadcast_in_dim(invalid, grid, tuple(range(last)))
        nan = lax.broadcast_in_dim(tracing.TypedScalar(np.nan, result_dtype, False), grid, ())
        result = select(invalid, nan, result)
    # q's dims first, then the kept dims (unit dims in place of the reduced ones)
    result = moveaxis(result, -1, 0)
    if keepdims:
        kept_shape = tuple(1 if d in axes else aval.shape[d] for d in range(aval.ndim))
        if aval.ndim == 0:
            kept_shape = (1,)  # JAX reduces a rank-0 a as a 1-element vector
        result = reshape(result, (nq, *kept_shape))
    return cast(reshape(result, (*q_shape, *_aval(result).shape[1:])), result_dtype)


def _inverted_cdf(x: Any, w: Any, q: Any, ignore_nan: bool) -> Any:
    """Per slice of the sorted ``x`` (..., n) with weights ``w``, the first
    value whose running weight reaches ``q`` (nq,) of the total: the
    (..., nq) result. NaN values weigh nothing; a negative or NaN weight
    anywhere in a slice, or a NaN value (only an all-NaN slice when
    ``ignore_nan``), makes its results NaN (JAX 0.10.2's weighted quantile)."""
    *batch, n = _aval(x).shape
    last, nq = len(batch), _aval(q).shape[0]
    grid, batch_dims = (*batch, nq), tuple(range(last))
    zeros = full_like_shape(w, 0, _aval(w).dtype)
    bad = lax.bitwise_or(lax.lt(w, zeros), isnan(w))
    nan_data = isnan(x)
    running = lax.cumsum(select(lax.bitwise_or(bad, nan_data), zeros, w), last)
    total = reshape(lax.slice_in_dim(running, n - 1, n, axis=last), tuple(batch))
    target = lax.mul(
        lax.broadcast_in_dim(q, grid, (last,)),
        lax.broadcast_in_dim(total, grid, batch_dims),
    )
    # how many running weights fall short of the target: the index taken
    short = lax.lt(
        lax.broadcast_in_dim(running, (*grid, n), (*batch_dims, last + 1)),
        lax.broadcast_in_dim(target, (*grid, n), (*batch_dims, last)),
    )
    index = lax.reduce_sum(lax.convert_element_type(short, np.int32), (last + 1,))
    valid = lax.reduce_sum(lax.convert_element_type(logical_not(nan_data), np.int32), (last,))
    if not ignore_nan:
        valid = lax.broadcast_in_dim(_i32(n), tuple(batch), ())
    limit = lax.broadcast_in_dim(lax.sub(valid, _i32(1)), grid, batch_dims)
    index = lax.max(lax.broadcast_in_dim(_i32(0), grid, ()), lax.min(index, limit))
    result = take_along_axis(x, index, last)
    no_value = lax.eq(valid, _i32(0)) if ignore_nan else _any_last(nan_data)
    force_nan = lax.bitwise_or(_any_last(bad), no_value)
    nan = lax.broadcast_in_dim(tracing.TypedScalar(np.nan, _aval(x).dtype, False), grid, ())
    return select(lax.broadcast_in_dim(force_nan, grid, batch_dims), nan, result)


def _any_last(mask: Any) -> Any:
    return lax.reduce_or(mask, (_aval(mask).ndim - 1,))


def _interpolate(method: str, lo: Any, hi: Any, high_weight: Any, dtype: np.dtype) -> Any:
    """The quantile from the values ``lo``/``hi`` (a's dtype) either side of
    the position and its fraction ``high_weight`` (q's ``dtype``): linear
    interpolates in q's dtype, midpoint averages in a's (as JAX)."""
    if method == "lower":
        return lo
    if method == "higher":
        return hi
    if method == "midpoint":
        return lax.mul(lax.add(lo, hi), tracing.TypedScalar(0.5, _aval(lo).dtype, False))
    if method == "nearest":
        return select(lax.le(high_weight, tracing.TypedScalar(0.5, dtype, False)), lo, hi)
    one = tracing.TypedScalar(1, dtype, False)
    lo, hi = cast(lo, dtype), cast(hi, dtype)
    return lax.add(lax.mul(lo, lax.sub(one, high_weight)), lax.mul(hi, high_weight))


def quantile(
    a: ArrayLike,
    q: ArrayLike,
    axis: Any = None,
    out: None = None,
    overwrite_input: bool = False,
    method: str = "linear",
    keepdims: bool = False,
    *,
    weights: ArrayLike = None,
) -> Array:
    """The ``q``-th quantiles of ``a`` over ``axis`` (``0 <= q <= 1``).

    The reduced axes are flattened into one and sorted; the quantile
    interpolates between the order statistics either side of position
    ``q (n - 1)`` as ``method`` says. A slice containing NaN gives NaN;
    ``weights`` (only with ``method="inverted_cdf"``) weigh the values.

    Args:
        a: The input array (not complex).
        q: The quantile or quantiles to compute, in ``[0, 1]``.
        axis: The axis or axes to reduce, or None for all.
        out: Must be None (NotImplementedError otherwise).
        overwrite_input: Accepted and ignored (arrays are immutable).
        method: ``"linear"``, ``"lower"``, ``"higher"``, ``"midpoint"``,
            ``"nearest"`` (the lower value at exactly half way, where NumPy
            rounds half to even, as JAX's) or ``"inverted_cdf"``.
        keepdims: Whether to keep the reduced axes as size-1 axes.
        weights: Weights of the values (of ``a``'s shape, or one per position
            along ``axis``), only with ``method="inverted_cdf"``; or None.

    Returns:
        An array of shape ``q.shape`` followed by ``a``'s shape without the
        reduced axes, in ``a``'s inexact dtype (the default float for
        integers).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.quantile(rnp.array([1.0, 2.0, 3.0, 4.0]), rnp.array([0.25, 0.75]))
        Array([1.75, 3.25], dtype=float32)
        >>> rnp.quantile(rnp.array([1.0, 2.0, 3.0, 4.0]), 0.4, method="lower")
        Array(2., dtype=float32)
    """
    a = checked_array("quantile", a)
    _no_out("quantile", out)
    return _quantile("quantile", a, q, axis, method, keepdims, False, weights)


def nanquantile(
    a: ArrayLike,
    q: ArrayLike,
    axis: Any = None,
    out: None = None,
    overwrite_input: bool = False,
    method: str = "linear",
    keepdims: bool = False,
    *,
    weights: ArrayLike = None,
) -> Array:
    """The ``q``-th quantiles of ``a`` over ``axis``, ignoring NaNs.

    :func:`quantile` of the non-NaN values (NaN for an all-NaN slice).

    Args:
        a: The input array (not complex).
        q: The quantile or quantiles to compute, in ``[0, 1]``.
        axis: The axis or axes to reduce, or None for all.
        out: Must be None (NotImplementedError otherwise).
        overwrite_input: Accepted and ignored (arrays are immutable).
        method: ``"linear"``, ``"lower"``, ``"higher"``, ``"midpoint"``,
            ``"nearest"`` (the lower value at exactly half way, where NumPy
            rounds half to even, as JAX's) or ``"inverted_cdf"``.
        keepdims: Whether to keep the reduced axes as size-1 axes.
        weights: Weights of the values (of ``a``'s shape, or one per position
            along ``axis``), only with ``method="inverted_cdf"``; or None.

    Returns:
        An array of shape ``q.shape`` followed by ``a``'s shape without the
        reduced axes, in ``a``'s inexact dtype (the default float for
        integers).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.nanquantile(rnp.array([1.0, rnp.nan, 3.0]), 0.5)
        Array(2., dtype=float32)
    """
    a = checked_array("nanquantile", a)
    _no_out("nanquantile", out)
    return _quantile("nanquantile", a, q, axis, method, keepdims, True, weights)


def percentile(
    a: ArrayLike,
    q: ArrayLike,
    axis: Any = None,
    out: None = None,
    overwrite_input: bool = False,
    method: str = "linear",
    keepdims: bool = False,
    *,
    weights: ArrayLike = None,
) -> Array:
    """The ``q``-th percentiles of ``a`` over ``axis``: ``quantile(a, q / 100)``.

    Args:
        a: The input array (not complex).
        q: The quantile or quantiles to compute, in ``[0, 100]``.
        axis: The axis or axes to reduce, or None for all.
        out: Must be None (NotImplementedError otherwise).
        overwrite_input: Accepted and ignored (arrays are immutable).
        method: ``"linear"``, ``"lower"``, ``"higher"``, ``"midpoint"``,
            ``"nearest"`` (the lower value at exactly half way, where NumPy
            rounds half to even, as JAX's) or ``"inverted_cdf"``.
        keepdims: Whether to keep the reduced axes as size-1 axes.
        weights: Weights of the values (of ``a``'s shape, or one per position
            along ``axis``), only with ``method="inverted_cdf"``; or None.

    Returns:
        An array of shape ``q.shape`` followed by ``a``'s shape without the
        reduced axes, in ``a``'s inexact dtype (the default float for
        integers).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.percentile(rnp.array([1.0, 2.0, 3.0, 4.0, 5.0]), 25)
        Array(2., dtype=float32)
    """
    a = checked_array("percentile", a)
    _no_out("percentile", out)
    (q,) = promote_dtypes_inexact("percentile", q)
    q = lax.div(q, scalar_like(q, 100))
    return quantile(a, q, axis, None, False, method, keepdims, weights=weights)


def nanpercentile(
    a: ArrayLike,
    q: ArrayLike,
    axis: Any = None,
    out: None = None,
    overwrite_input: bool = False,
    method: str = "linear",
    keepdims: bool = False,
    *,
    weights: ArrayLike = None,
) -> Array:
    """The ``q``-th percentiles of ``a`` over ``axis``, ignoring NaNs.

    ``nanquantile(a, q / 100)``.

    Args:
        a: The input array (not complex).
        q: The quantile or quantiles to compute, in ``[0, 100]``.
        axis: The axis or axes to reduce, or None for all.
        out: Must be None (NotImplementedError otherwise).
        overwrite_input: Accepted and ignored (arrays are immutable).
        method: ``"linear"``, ``"lower"``, ``"higher"``, ``"midpoint"``,
            ``"nearest"`` (the lower value at exactly half way, where NumPy
            rounds half to even, as JAX's) or ``"inverted_cdf"``.
        keepdims: Whether to keep the reduced axes as size-1 axes.
        weights: Weights of the values (of ``a``'s shape, or one per position
            along ``axis``), only with ``method="inverted_cdf"``; or None.

    Returns:
        An array of shape ``q.shape`` followed by ``a``'s shape without the
        reduced axes, in ``a``'s inexact dtype (the default float for
        integers).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.nanpercentile(rnp.array([1.0, rnp.nan, 3.0, 5.0]), 50)
        Array(3., dtype=float32)
    """
    a = checked_array("nanpercentile", a)
    _no_out("nanpercentile", out)
    (q,) = promote_dtypes_inexact("nanpercentile", q)
    q = lax.div(q, scalar_like(q, 100))
    return nanquantile(a, q, axis, None, False, method, keepdims, weights=weights)


def median(
    a: ArrayLike,
    axis: Any = None,
    out: None = None,
    overwrite_input: bool = False,
    keepdims: bool = False,
) -> Array:
    """The median of ``a`` over ``axis``: ``quantile(a, 0.5, method="midpoint")``.

    The middle value, or the mean of the two middle values for an even count;
    NaN for a slice containing NaN.

    Args:
        a: The input array (not complex).
        axis: The axis or axes to reduce, or None for all.
        out: Must be None (NotImplementedError otherwise).
        overwrite_input: Accepted and ignored (arrays are immutable).
        keepdims: Whether to keep the reduced axes as size-1 axes.

    Returns:
        An array of ``a``'s shape without the reduced axes, in ``a``'s inexact
        dtype (the default float for integers).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.median(rnp.array([3, 1, 2, 4]))
        Array(2.5, dtype=float32)
        >>> rnp.median(rnp.array([[1.0, 5.0, 2.0], [4.0, 3.0, 6.0]]), axis=1)
        Array([2., 4.], dtype=float32)
    """
    a = checked_array("median", a)
    _no_out("median", out)
    return quantile(a, 0.5, axis, method="midpoint", keepdims=keepdims)


def nanmedian(
    a: ArrayLike,
    axis: Any = None,
    out: None = None,
    overwrite_input: bool = False,
    keepdims: bool = False,
) -> Array:
    """The median of ``a`` over ``axis``, ignoring NaNs.

    ``nanquantile(a, 0.5, method="midpoint")`` (NaN for an all-NaN slice).

    Args:
        a: The input array (not complex).
        axis: The axis or axes to reduce, or None for all.
        out: Must be None (NotImplementedError otherwise).
        overwrite_input: Accepted and ignored (arrays are immutable).
        keepdims: Whether to keep the reduced axes as size-1 axes.

    Returns:
        An array of ``a``'s shape without the reduced axes, in ``a``'s inexact
        dtype (the default float for integers).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.nanmedian(rnp.array([1.0, rnp.nan, 3.0, 10.0]))
        Array(3., dtype=float32)
    """
    a = checked_array("nanmedian", a)
    _no_out("nanmedian", out)
    return nanquantile(a, 0.5, axis, method="midpoint", keepdims=keepdims)


# --- ptp, count_nonzero ---------------------------------------------------------------------


def ptp(a: ArrayLike, axis: Any = None, out: None = None, keepdims: bool = False) -> Array:
    """The range ("peak to peak") of ``a`` over ``axis``: ``max - min``.

    Args:
        a: The input array.
        axis: The axis or axes to reduce, or None for all.
        out: Must be None (NotImplementedError otherwise).
        keepdims: Whether to keep the reduced axes as size-1 axes.

    Returns:
        An array of ``a``'s shape without the reduced axes, in ``a``'s dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.ptp(rnp.array([[1, 5], [7, 2]]))
        Array(6, dtype=int32)
        >>> rnp.ptp(rnp.array([[1, 5], [7, 2]]), axis=0)
        Array([6, 3], dtype=int32)
    """
    a = checked_array("ptp", a)
    _no_out("ptp", out)
    return subtract(max(a, axis, keepdims=keepdims), min(a, axis, keepdims=keepdims))


def count_nonzero(a: ArrayLike, axis: Any = None, keepdims: bool = False) -> Array:
    """The number of nonzero elements of ``a`` over ``axis``.

    Counted in the default int (int64 with x64, as JAX 0.10.2).

    Args:
        a: The input array, of any dtype.
        axis: The axis or axes to reduce, or None for all.
        keepdims: Whether to keep the reduced axes as size-1 axes.

    Returns:
        An integer array of ``a``'s shape without the reduced axes.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.count_nonzero(rnp.array([[0, 1, 2], [0, 0, 3]]))
        Array(3, dtype=int32)
        >>> rnp.count_nonzero(rnp.array([[0, 1, 2], [0, 0, 3]]), axis=1)
        Array([2, 1], dtype=int32)
    """
    a = checked_array("count_nonzero", a)
    count_dtype = dtypes.canonicalize_dtype(np.int64)
    return sum(to_bool(asarray(a)), axis, dtype=count_dtype, keepdims=keepdims)


# --- NaN-ignoring reductions ----------------------------------------------------------------


def _nan_replaced(a: Any, value: Any, name: str = "rnp") -> Any:
    a = checked_array(name, a)
    if not dtypes.is_inexact(_aval(a).dtype):
        return a
    return select(isnan(a), full_like_shape(a, value, _aval(a).dtype), a)


def _all_nan(a: Any, axis: Any, keepdims: bool) -> Any:
    return all_(isnan(a), axis, keepdims=keepdims)


def nansum(
    a: ArrayLike,
    axis: Any = None,
    dtype: Any = None,
    out: None = None,
    keepdims: bool = False,
    initial: Any = None,
    where: Any = None,
) -> Array:
    """The sum of ``a`` over ``axis``, ignoring NaNs: :func:`sum` with NaNs counted as 0.

    Args:
        a: The input array.
        axis: The axis or axes to reduce, or None for all.
        dtype: The dtype to accumulate and return in, or None for :func:`sum`'s.
        out: Must be None (NotImplementedError otherwise).
        keepdims: Whether to keep the reduced axes as size-1 axes.
        initial: The starting value of the reduction, or None.
        where: A bool array (broadcast against ``a``) of the elements to
            include, or None for all.

    Returns:
        An array of ``a``'s shape without the reduced axes, in the dtype
        :func:`sum` gives.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.nansum(rnp.array([1.0, rnp.nan, 2.0]))
        Array(3., dtype=float32)
    """
    _no_out("nansum", out)
    check_where("nansum", where)
    return sum(_nan_replaced(a, 0, "nansum"), axis, dtype, None, keepdims, initial, where)


def nanprod(
    a: ArrayLike,
    axis: Any = None,
    dtype: Any = None,
    out: None = None,
    keepdims: bool = False,
    initial: Any = None,
    where: Any = None,
) -> Array:
    """The product of ``a`` over ``axis``, ignoring NaNs: :func:`prod` with NaNs counted as 1.

    Args:
        a: The input array.
        axis: The axis or axes to reduce, or None for all.
        dtype: The dtype to accumulate and return in, or None for :func:`prod`'s.
        out: Must be None (NotImplementedError otherwise).
        keepdims: Whether to keep the reduced axes as size-1 axes.
        initial: The starting value of the reduction, or None.
        where: A bool array (broadcast against ``a``) of the elements to
            include, or None for all.

    Returns:
        An array of ``a``'s shape without the reduced axes, in the dtype
        :func:`prod` gives.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.nanprod(rnp.array([2.0, rnp.nan, 3.0]))
        Array(6., dtype=float32)
    """
    _no_out("nanprod", out)
    check_where("nanprod", where)
    return prod(_nan_replaced(a, 1, "nanprod"), axis, dtype, None, keepdims, initial, where)


def _nan_extreme(
    name: str, reduce: Any, identity: float, which: str, example: str, result: str
) -> Any:
    """``reduce`` (max or min) ignoring NaNs, named ``name``; documented as the
    ``which`` ("largest", "smallest") value, with one example call ``example``
    that prints ``result``."""

    def fn(
        a: ArrayLike,
        axis: Any = None,
        out: None = None,
        keepdims: bool = False,
        initial: Any = None,
        where: Any = None,
    ) -> Array:
        _no_out(name, out)
        a = checked_array(name, a)
        check_where(name, where)
        if not dtypes.is_inexact(_aval(a).dtype):
            return reduce(a, axis, None, keepdims, initial, where)
        result = reduce(_nan_replaced(a, identity), axis, None, keepdims, initial, where)
        if initial is not None:  # initial stands for the all-NaN slices too (JAX)
            return result
        return select(
            _all_nan(a, axis, keepdims),
            full_like_shape(result, np.nan, _aval(result).dtype),
            result,
        )

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"""The {which} value of ``a`` over ``axis``, ignoring NaNs.

    :func:`{name[3:]}` of ``a`` with NaNs replaced by {identity}; NaN for an
    all-NaN slice (a warning in NumPy), unless ``initial`` is given, which
    then stands for it. Bool and integer inputs have no NaNs.

    Args:
        a: The input array.
        axis: The axis or axes to reduce, or None for all.
        out: Must be None (NotImplementedError otherwise).
        keepdims: Whether to keep the reduced axes as size-1 axes.
        initial: A value to include in the reduction, or None.
        where: A bool array (broadcast against ``a``) of the elements to
            include, or None for all (then ``initial`` is needed).

    Returns:
        An array of ``a``'s shape without the reduced axes, in ``a``'s dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> {example}
        {result}
    """
    return fn


nanmax = _nan_extreme(
    "nanmax",
    max,
    -np.inf,
    "largest",
    "rnp.nanmax(rnp.array([1.0, rnp.nan, 3.0]))",
    "Array(3., dtype=float32)",
)
nanmin = _nan_extreme(
    "nanmin",
    min,
    np.inf,
    "smallest",
    "rnp.nanmin(rnp.array([1.0, rnp.nan, 3.0]))",
    "Array(1., dtype=float32)",
)


def _nan_arg(name: str, reduce: Any, identity: float, which: str, example: str, result: str) -> Any:
    """``reduce`` (argmax or argmin) ignoring NaNs, named ``name``; documented
    as the index of the ``which`` value, with one example call ``example``
    that prints ``result``."""

    def fn(
        a: ArrayLike, axis: int | None = None, out: None = None, keepdims: bool = False
    ) -> Array:
        _no_out(name, out)
        a = checked_array(name, a)
        if not dtypes.is_inexact(_aval(a).dtype):
            return reduce(a, axis, keepdims=keepdims)
        index = reduce(_nan_replaced(a, identity), axis, keepdims=keepdims)
        minus_one = full_like_shape(index, -1, _aval(index).dtype)
        return select(_all_nan(a, axis, keepdims), minus_one, index)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"""The index of the {which} value of ``a`` along ``axis``, ignoring NaNs.

    :func:`{name[3:]}` of ``a`` with NaNs replaced by {identity}; -1 for an
    all-NaN slice, as JAX's (NumPy raises a ValueError).

    Args:
        a: The input array.
        axis: The axis to search along, or None for the flattened array.
        out: Must be None (NotImplementedError otherwise).
        keepdims: Whether to keep the reduced axis as a size-1 axis.

    Returns:
        An int32 array (int64 with x64) of ``a``'s shape without ``axis``.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> {example}
        {result}
    """
    return fn


nanargmax = _nan_arg(
    "nanargmax",
    argmax,
    -np.inf,
    "largest",
    "rnp.nanargmax(rnp.array([1.0, rnp.nan, 3.0]))",
    "Array(2, dtype=int32)",
)
nanargmin = _nan_arg(
    "nanargmin",
    argmin,
    np.inf,
    "smallest",
    "rnp.nanargmin(rnp.array([rnp.nan, 2.0, 1.0]))",
    "Array(2, dtype=int32)",
)


def nanmean(
    a: ArrayLike,
    axis: Any = None,
    dtype: Any = None,
    out: None = None,
    keepdims: bool = False,
    where: Any = None,
) -> Array:
    """The mean of ``a`` over ``axis``, ignoring NaNs (NaN when there are none).

    Bool and integers compute in the default float dtype (and have no NaNs).

    Args:
        a: The input array.
        axis: The axis or axes to reduce, or None for all.
        dtype: The inexact dtype to return, or None for ``a``'s.
        out: Must be None (NotImplementedError otherwise).
        keepdims: Whether to keep the reduced axes as size-1 axes.
        where: A bool array (broadcast against ``a``) of the elements to
            include, or None for all.

    Returns:
        An array of ``a``'s shape without the reduced axes, in the inexact
        dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.nanmean(rnp.array([1.0, rnp.nan, 3.0]))
        Array(2., dtype=float32)
    """
    _no_out("nanmean", out)
    a = checked_array("nanmean", a)
    check_where("nanmean", where)
    aval = _aval(a, "nanmean")
    if not dtypes.is_inexact(aval.dtype):
        return mean(a, axis, dtype, keepdims=keepdims, where=where)
    result_dtype = (
        to_inexact_dtype(aval.dtype) if dtype is None else canonical_dtype("nanmean", dtype)
    )
    computation = _upcast_f16(result_dtype)

    present = logical_not(isnan(a))
    if where is not None:
        present = (
            lax.bitwise_and(present, asarray(where))
            if _aval(asarray(where)).shape == aval.shape
            else present
        )
    total = sum(_nan_replaced(a, 0), axis, computation, keepdims=keepdims, where=where)
    count = sum(present, axis, _real_dtype(computation), keepdims=keepdims, where=where)
    return cast(lax.div(total, lax.convert_element_type(count, computation)), result_dtype)


def nanvar(
    a: ArrayLike,
    axis: Any = None,
    dtype: Any = None,
    out: None = None,
    ddof: int = 0,
    keepdims: bool = False,
    where: Any = None,
    mean: Any = None,
) -> Array:
    """The variance of ``a`` over ``axis``, ignoring NaNs.

    The variance of the non-NaN values: ``sum(|a - m|^2) / (count - ddof)``
    with ``m`` the ``nanmean``, or ``mean`` when given (broadcastable against
    ``a`` with the reduced axes kept), as JAX's ``nanvar``; NaN where
    ``count - ddof <= 0``.

    Args:
        a: The input array.
        axis: The axis or axes to reduce, or None for all.
        dtype: The inexact dtype to compute and return in, or None.
        out: Must be None (NotImplementedError otherwise).
        ddof: The "delta degrees of freedom" subtracted from the count of
            non-NaN values.
        keepdims: Whether to keep the reduced axes as size-1 axes.
        where: A bool array (broadcast against ``a``) of the elements to
            include, or None for all.
        mean: The mean to use, or None for the :func:`nanmean`.

    Returns:
        An array of ``a``'s shape without the reduced axes, in the real
        inexact dtype (see :func:`var`).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.nanvar(rnp.array([1.0, rnp.nan, 3.0]))
        Array(1., dtype=float32)
    """
    _no_out("nanvar", out)
    a = checked_array("nanvar", a)
    aval = _aval(a, "nanvar")
    check_where("nanvar", where)
    computation, result_dtype = _var_dtypes("nanvar", aval.dtype, dtype)
    a = cast(a, computation)
    axes = reduction_axes("nanvar", axis, aval.ndim)
    if mean is None:
        mean = nanmean(a, axes, dtype=computation, keepdims=True, where=where)
    else:
        mean = cast(checked_array("nanvar", mean, "mean"), computation)
    centered = subtract(a, mean)
    centered = _nan_replaced(centered, 0)
    real_computation = _real_dtype(computation)
    total = sum(
        _squared_deviation(centered), axes, dtype=real_computation, keepdims=keepdims, where=where
    )

    count = sum(logical_not(isnan(a)), axes, dtype=real_computation, keepdims=keepdims, where=where)
    normalizer = lax.sub(count, tracing.TypedScalar(ddof, real_computation, False))
    result = lax.div(total, normalizer)
    nan = full_like_shape(result, np.nan, real_computation)
    result = select(
        lax.le(normalizer, tracing.TypedScalar(0, real_computation, False)), nan, result
    )
    return cast(result, result_dtype)


def nanstd(
    a: ArrayLike,
    axis: Any = None,
    dtype: Any = None,
    out: None = None,
    ddof: int = 0,
    keepdims: bool = False,
    where: Any = None,
    mean: Any = None,
) -> Array:
    """The standard deviation of ``a`` over ``axis``, ignoring NaNs: ``sqrt(nanvar(...))``.

    Args:
        a: The input array.
        axis: The axis or axes to reduce, or None for all.
        dtype: The inexact dtype to compute and return in, or None.
        out: Must be None (NotImplementedError otherwise).
        ddof: The "delta degrees of freedom" subtracted from the count of
            non-NaN values.
        keepdims: Whether to keep the reduced axes as size-1 axes.
        where: A bool array (broadcast against ``a``) of the elements to
            include, or None for all.
        mean: The mean to use, or None for the :func:`nanmean`.

    Returns:
        An array of ``a``'s shape without the reduced axes, in the real
        inexact dtype (see :func:`var`).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.nanstd(rnp.array([1.0, rnp.nan, 3.0]))
        Array(1., dtype=float32)
    """
    a = checked_array("nanstd", a)
    _no_out("nanstd", out)
    check_where("nanstd", where)
    return sqrt(nanvar(a, axis, dtype, None, ddof, keepdims, where, mean))


def nancumsum(a: ArrayLike, axis: int | None = None, dtype: Any = None, out: None = None) -> Array:
    """The cumulative sum of ``a`` along ``axis``, NaNs counted as 0.

    Args:
        a: The input array.
        axis: The axis to accumulate along, or None for the flattened array.
        dtype: The dtype to accumulate and return in, or None for
            :func:`cumsum`'s.
        out: Must be None (NotImplementedError otherwise).

    Returns:
        An array of ``a``'s shape (1-d when ``axis`` is None).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.nancumsum(rnp.array([1.0, rnp.nan, 2.0]))
        Array([1., 1., 3.], dtype=float32)
    """
    _no_out("nancumsum", out)
    return cumsum(_nan_replaced(a, 0, "nancumsum"), axis, dtype)


def nancumprod(a: ArrayLike, axis: int | None = None, dtype: Any = None, out: None = None) -> Array:
    """The cumulative product of ``a`` along ``axis``, NaNs counted as 1.

    Args:
        a: The input array.
        axis: The axis to accumulate along, or None for the flattened array.
        dtype: The dtype to accumulate and return in, or None for
            :func:`cumprod`'s.
        out: Must be None (NotImplementedError otherwise).

    Returns:
        An array of ``a``'s shape (1-d when ``axis`` is None).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.nancumprod(rnp.array([2.0, rnp.nan, 3.0]))
        Array([2., 2., 6.], dtype=float32)
    """
    _no_out("nancumprod", out)
    return cumprod(_nan_replaced(a, 1, "nancumprod"), axis, dtype)


def _cumulative(
    name: str,
    fn: Any,
    identity: int,
    what: str,
    example: str,
    result: str,
    promote_integers: bool = False,
) -> Any:
    """The array API's ``name``: ``fn`` (cumsum or cumprod) with the
    ``identity`` put first when asked; documented as the ``what`` with one
    example call ``example`` that prints ``result``."""

    def cumulative(
        x: ArrayLike,
        /,
        *,
        axis: int | None = None,
        dtype: Any = None,
        include_initial: bool = False,
    ) -> Array:
        x = checked_array(name, x)
        aval = _aval(x, name)
        # JAX's words for both errors
        if aval.ndim == 0:
            raise ValueError(
                f"The input must be non-scalar to take a {what}, however a scalar "
                "value or scalar array was given."
            )
        if axis is None:
            if aval.ndim > 1:
                raise ValueError(
                    f"The input array has rank {aval.ndim}, however axis was not set to "
                    "an explicit value. The axis argument is only optional for "
                    "one-dimensional arrays."
                )
            axis = 0
        if dtype is None and promote_integers:
            # cumulative_sum counts narrow integers in the default int, as sum (JAX)
            dtype = _promote_integer(aval.dtype)
        out = fn(x, axis, dtype)
        if not include_initial:
            return out

        ax = normalize_axis(name, axis, aval.ndim)
        config = [(0, 0, 0)] * aval.ndim
        config[ax] = (1, 0, 0)
        return lax.pad(out, tracing.TypedScalar(identity, _aval(out).dtype, False), config)

    cumulative.__name__ = cumulative.__qualname__ = name
    dtype_rule = (
        "narrow integers and bool accumulate in the default integer dtype, as :func:`sum`'s"
        if promote_integers
        else "the dtype is :func:`cumprod`'s"
    )
    cumulative.__doc__ = f"""The {what} of ``x`` along ``axis`` (the array API's ``{name}``).

    :func:`{fn.__name__}` along ``axis``, with the identity ({identity}) put
    first when ``include_initial``;
    {dtype_rule}.
    ``axis`` may be left out only for 1-d ``x``; a scalar is a ValueError.

    Args:
        x: The input array, of at least one dimension.
        axis: The axis to accumulate along (keyword-only).
        dtype: The dtype to accumulate and return in, or None.
        include_initial: Whether the result starts with the identity (then
            ``axis`` is one longer).

    Returns:
        An array of ``x``'s shape (``axis`` one longer with
        ``include_initial``).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> {example}
        {result}
    """
    return cumulative


cumulative_sum = _cumulative(
    "cumulative_sum",
    cumsum,
    0,
    "cumulative sum",
    "rnp.cumulative_sum(rnp.array([1, 2, 3]), include_initial=True)",
    "Array([0, 1, 3, 6], dtype=int32)",
    promote_integers=True,
)
cumulative_prod = _cumulative(
    "cumulative_prod",
    cumprod,
    1,
    "cumulative product",
    "rnp.cumulative_prod(rnp.array([[1, 2], [3, 4]]), axis=1)",
    "Array([[ 1,  2],\n               [ 3, 12]], dtype=int32)",
)

amax, amin = alias(max), alias(min)

__all__ = [
    "amax", "amin", "average", "count_nonzero", "cumulative_prod", "cumulative_sum", "median",
    "nanargmax", "nanargmin", "nancumprod", "nancumsum", "nanmax", "nanmean", "nanmedian",
    "nanmin", "nanpercentile", "nanprod", "nanquantile", "nanstd", "nansum", "nanvar",
    "percentile", "ptp", "quantile", "std", "var",
]  # fmt: skip
