"""Smaller ``jax.numpy`` functions composed from the rest of the layer:
index helpers (``tril_indices``, ``diag_indices``...), ``bincount``,
``compress``/``extract`` (with ``size=``), ``delete``, ``fill_diagonal``,
``trapezoid``, ``cov``/``corrcoef``, polynomials, window functions,
``apply_along_axis`` (by ``vmap``), ``matvec``/``vecmat`` and
``unique_inverse``/``unique_all``.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from refimpl import dtypes, lax
from refimpl.numpy._creation import arange, asarray, zeros
from refimpl.numpy._linalg import einsum
from refimpl.numpy._promote import aval_of, checked_array, promote_dtypes_inexact
from refimpl.numpy._reductions import sum
from refimpl.numpy._search import nonzero, unique
from refimpl.numpy._shape import concatenate, moveaxis, normalize_axis, ravel, reshape
from refimpl.numpy._ufuncs import conj, cos, where

Array = Any
ArrayLike = Any


def _aval(x: Any, name: str = "rnp", position: Any = 0) -> Any:
    return aval_of(x, name, position)


# --- shapes -----------------------------------------------------------------------------


def broadcast_shapes(*shapes: Any) -> tuple[int, ...]:
    """NumPy's broadcast of the shapes."""
    return tuple(int(d) for d in np.broadcast_shapes(*shapes))


def broadcast_arrays(*args: ArrayLike) -> list[Array]:
    """Every argument broadcast to the common shape."""
    from refimpl.numpy._shape import broadcast_to

    arrays = [checked_array("broadcast_arrays", a, i) for i, a in enumerate(args)]
    shape = broadcast_shapes(*(_aval(a).shape for a in arrays))
    return [broadcast_to(a, shape) for a in arrays]


def concat(arrays: Any, /, *, axis: int | None = 0) -> Array:
    """The array-API name of :func:`concatenate`."""
    return concatenate(arrays, axis=axis)


def rollaxis(a: ArrayLike, axis: int, start: int = 0) -> Array:
    """Move ``axis`` to before position ``start`` (NumPy's legacy rule)."""
    a = checked_array("rollaxis", a)
    ndim = _aval(a).ndim
    axis = normalize_axis("rollaxis", axis, ndim)
    start = start + ndim if start < 0 else start
    if not 0 <= start <= ndim:
        raise ValueError(f"rollaxis: start {start} is out of bounds for {ndim} dims")
    if axis < start:
        start -= 1
    return moveaxis(a, axis, start)


# --- index helpers ------------------------------------------------------------------------


def _index_pair(rows: np.ndarray, cols: np.ndarray) -> tuple[Array, Array]:
    return asarray(rows.astype(np.int32)), asarray(cols.astype(np.int32))


def tril_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Array, Array]:
    """The (row, col) indices of the lower triangle (on or below diagonal ``k``)."""
    return _index_pair(*np.tril_indices(operator.index(n), operator.index(k), m))


def triu_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Array, Array]:
    """The (row, col) indices of the upper triangle (on or above diagonal ``k``)."""
    return _index_pair(*np.triu_indices(operator.index(n), operator.index(k), m))


def tril_indices_from(arr: ArrayLike, k: int = 0) -> tuple[Array, Array]:
    """:func:`tril_indices` for ``arr``'s (2-d) shape."""
    shape = _aval(arr, "tril_indices_from").shape
    if len(shape) != 2:
        raise ValueError(f"tril_indices_from: input array must be 2-d, got shape {shape}")
    return tril_indices(shape[0], k, shape[1])


def triu_indices_from(arr: ArrayLike, k: int = 0) -> tuple[Array, Array]:
    """:func:`triu_indices` for ``arr``'s (2-d) shape."""
    shape = _aval(arr, "triu_indices_from").shape
    if len(shape) != 2:
        raise ValueError(f"triu_indices_from: input array must be 2-d, got shape {shape}")
    return triu_indices(shape[0], k, shape[1])


def diag_indices(n: int, ndim: int = 2) -> tuple[Array, ...]:
    """``ndim`` copies of ``arange(n)``: the indices of the main diagonal."""
    return tuple(arange(operator.index(n)) for _ in range(operator.index(ndim)))


def diag_indices_from(arr: ArrayLike) -> tuple[Array, ...]:
    """:func:`diag_indices` of ``arr`` (all its dims must be equal)."""
    shape = _aval(arr, "diag_indices_from").shape
    if len(shape) < 2 or len(set(shape)) != 1:
        raise ValueError(f"diag_indices_from: all dimensions of input must be equal, got {shape}")
    return diag_indices(shape[0], len(shape))


def fill_diagonal(a: ArrayLike, val: ArrayLike, wrap: bool = False, *, inplace: bool = True):
    """A copy of ``a`` with its main diagonal set to ``val`` (repeated as
    needed); ``inplace=False`` is required, as in JAX."""
    if inplace:
        raise ValueError("fill_diagonal: jax-style arrays are immutable; pass inplace=False")
    a = checked_array("fill_diagonal", a)
    shape = _aval(a).shape
    if len(shape) < 2:
        raise ValueError("fill_diagonal: array must be at least 2-d")
    if len(shape) > 2 and len(set(shape)) != 1:
        raise ValueError("fill_diagonal: all dimensions of input must be of equal length")
    if wrap:
        raise NotImplementedError(
            "fill_diagonal: wrap=True is not implemented, must use wrap=False"
        )
    count = min(shape)
    index = tuple(np.arange(count) for _ in shape)
    values = ravel(asarray(val))
    size = _aval(values).shape[0]
    reps = np.arange(count) % max(size, 1)
    values = values[asarray(reps.astype(np.int32))] if size != count else values
    return a.at[tuple(asarray(i.astype(np.int32)) for i in index)].set(values)


# --- counting and selection ---------------------------------------------------------------


def bincount(
    x: ArrayLike, weights: ArrayLike = None, minlength: int = 0, *, length: int | None = None
):
    """``out[i]`` = the number (or summed ``weights``) of entries equal to ``i``
    for non-negative integers ``x``; ``length`` fixes the size (needed under a
    trace), else ``max(max(x) + 1, minlength)`` from concrete input. Entries
    outside ``[0, length)`` are dropped."""
    x = checked_array("bincount", x)
    if not dtypes.is_integer(_aval(x).dtype):
        raise TypeError(f"bincount: x must be integers, got {_aval(x).dtype.name}")
    if _aval(x).ndim != 1:
        raise ValueError("bincount: only 1-dimensional input is supported")
    if length is None:
        from refimpl import tracing
        from refimpl.numpy._promote import is_traced

        if is_traced(x):
            raise tracing.ConcretizationTypeError(
                "bincount: the length argument is required under a trace (jit, vmap...)"
            )
        values = np.asarray(x)
        length = max(int(values.max()) + 1 if values.size else 0, operator.index(minlength))
    if weights is None:
        weights = asarray(1, dtype=np.int32)
        dtype = np.dtype(np.int32)
    else:
        weights = checked_array("bincount", weights, 1)
        dtype = dtypes.result_type((_aval(weights).dtype, False), (np.int32, False))[0]
    from refimpl.numpy._shape import broadcast_to

    updates = broadcast_to(lax.convert_element_type(weights, dtype), _aval(x).shape)
    return lax.scatter_add_along_axis(zeros((length,), dtype), x, updates, 0, mode="drop")


def compress(
    condition: ArrayLike, a: ArrayLike, axis: int | None = None, *, size: int | None = None,
    fill_value: Any = 0, out: None = None,
) -> Array:  # fmt: skip
    """The slices of ``a`` along ``axis`` (flattened when None) where the 1-d
    ``condition`` holds (``condition`` shorter than the axis: the rest is
    dropped); ``size``/``fill_value`` as for :func:`nonzero`."""
    if out is not None:
        raise NotImplementedError("compress: the out argument is not supported")
    condition = checked_array("compress", condition)
    a = checked_array("compress", a, 1)
    if _aval(condition).ndim != 1:
        raise ValueError("compress: condition must be a 1-d array")
    if axis is None:
        a, axis = ravel(a), 0
    axis = normalize_axis("compress", axis, _aval(a).ndim)
    n = _aval(a).shape[axis]
    cond_len = _aval(condition).shape[0]
    if cond_len > n:
        condition = condition[:n]
    (found,) = nonzero(condition, size=size, fill_value=-1)
    count = _aval(found).shape[0]
    from refimpl.numpy._indexing import take

    taken = take(a, where(found < 0, 0, found), axis=axis, mode="clip")
    if size is None:
        return taken
    shape = [1] * _aval(a).ndim
    shape[axis] = count
    valid = reshape(found >= 0, tuple(shape))
    return where(valid, taken, lax.convert_element_type(asarray(fill_value), _aval(a).dtype))


def extract(condition: ArrayLike, arr: ArrayLike, *, size: int | None = None, fill_value: Any = 0):
    """``compress(ravel(condition), ravel(arr))``."""
    condition = ravel(checked_array("extract", condition))
    return compress(
        condition != 0, ravel(checked_array("extract", arr, 1)), size=size, fill_value=fill_value
    )


def delete(
    arr: ArrayLike, obj: Any, axis: int | None = None, *, assume_unique_indices: bool = False
):
    """``arr`` without the entries ``obj`` (an int, a slice or concrete indices;
    a bool mask marks the entries to delete) along ``axis`` (flattened when None)."""
    del assume_unique_indices
    arr = checked_array("delete", arr)
    if axis is None:
        arr, axis = ravel(arr), 0
    axis = normalize_axis("delete", axis, _aval(arr).ndim)
    n = _aval(arr).shape[axis]
    keep = np.ones(n, bool)
    if isinstance(obj, slice):
        keep[obj] = False
    else:
        index = np.asarray(obj)
        if index.dtype == bool:
            keep &= ~index
        else:
            index = np.where(index < 0, index + n, index)
            if ((index < 0) | (index >= n)).any():
                raise IndexError(f"delete: index out of bounds for axis {axis} with size {n}")
            keep[index] = False
    from refimpl.numpy._indexing import take

    return take(arr, asarray(np.nonzero(keep)[0].astype(np.int32)), axis=axis)


# --- integration, statistics, polynomials ---------------------------------------------------


def trapezoid(y: ArrayLike, x: ArrayLike = None, dx: ArrayLike = 1.0, axis: int = -1) -> Array:
    """``sum((y[1:] + y[:-1]) / 2 * diff(x))`` along ``axis`` (spacing ``dx``
    without ``x``)."""
    from refimpl.numpy._stacking import diff

    y = checked_array("trapezoid", y)
    (y,) = promote_dtypes_inexact("trapezoid", y)
    y = moveaxis(y, axis, -1)
    if x is None:
        widths = asarray(dx)
    else:
        x = checked_array("trapezoid", x, 1)
        widths = diff(x) if _aval(x).ndim == 1 else moveaxis(diff(x, axis=axis), axis, -1)
    return sum(widths * (y[..., 1:] + y[..., :-1]), axis=-1) * 0.5


def cov(
    m: ArrayLike,
    y: ArrayLike = None,
    rowvar: bool = True,
    bias: bool = False,
    ddof: int | None = None,
    fweights: Any = None,
    aweights: Any = None,
):
    """The covariance matrix of the variables (rows with ``rowvar``) of ``m``
    (and ``y``); ``fweights``/``aweights`` are not supported."""
    if fweights is not None or aweights is not None:
        raise NotImplementedError("cov: fweights and aweights are not supported")
    m = checked_array("cov", m)
    (m,) = promote_dtypes_inexact("cov", m)
    if _aval(m).ndim > 2:
        raise ValueError("cov: m has more than 2 dimensions")
    m = reshape(m, (1, -1)) if _aval(m).ndim < 2 else m
    if not rowvar and _aval(m).shape[0] != 1:
        m = m.T
    if y is not None:
        y = checked_array("cov", y, 1)
        (y,) = promote_dtypes_inexact("cov", y)
        y = reshape(y, (1, -1)) if _aval(y).ndim < 2 else y
        if not rowvar and _aval(y).shape[0] != 1:
            y = y.T
        m = concatenate([m, lax.convert_element_type(y, _aval(m).dtype)], axis=0)
    n = _aval(m).shape[1]
    ddof = (0 if bias else 1) if ddof is None else ddof
    centered = m - sum(m, axis=1, keepdims=True) / n
    c = einsum("ij,kj->ik", centered, conj(centered)) / (n - ddof)
    return reshape(c, ()) if _aval(c).shape == (1, 1) else c


def corrcoef(x: ArrayLike, y: ArrayLike = None, rowvar: bool = True) -> Array:
    """The correlation coefficients ``cov[i, j] / sqrt(cov[i, i] cov[j, j])``,
    clipped to [-1, 1]."""
    from refimpl.numpy._ufuncs import clip, sqrt

    c = cov(checked_array("corrcoef", x), y, rowvar)
    if _aval(c).ndim == 0:
        return c / c
    d = sqrt(einsum("ii->i", c))
    return clip(c / d[:, None] / d[None, :], -1, 1)


def polyval(p: ArrayLike, x: ArrayLike, *, unroll: int = 16) -> Array:
    """``p[0] x^(n-1) + ... + p[n-1]`` by Horner's rule."""
    p = checked_array("polyval", p)
    x = checked_array("polyval", x, 1)
    from refimpl.numpy._ufuncs import multiply

    result = multiply(x, 0) + p[0] * 0
    for i in range(_aval(p).shape[0]):
        result = result * x + p[i]
    return result


def _poly_pad(a: Any, b: Any) -> tuple[Any, Any]:
    from refimpl.numpy._shape import pad

    na, nb = _aval(a).shape[0], _aval(b).shape[0]
    return pad(a, (max(0, nb - na), 0)), pad(b, (max(0, na - nb), 0))


def polyadd(a1: ArrayLike, a2: ArrayLike) -> Array:
    """The sum of two polynomials (coefficients highest power first)."""
    a1, a2 = _poly_pad(checked_array("polyadd", a1), checked_array("polyadd", a2, 1))
    return a1 + a2


def polysub(a1: ArrayLike, a2: ArrayLike) -> Array:
    """The difference of two polynomials."""
    a1, a2 = _poly_pad(checked_array("polysub", a1), checked_array("polysub", a2, 1))
    return a1 - a2


def polymul(a1: ArrayLike, a2: ArrayLike, *, trim_leading_zeros: bool = False) -> Array:
    """The product of two polynomials (a full convolution)."""
    from refimpl.numpy._stacking import convolve

    return convolve(checked_array("polymul", a1), checked_array("polymul", a2, 1), mode="full")


def polyder(p: ArrayLike, m: int = 1) -> Array:
    """The ``m``-th derivative of a polynomial."""
    p = checked_array("polyder", p)
    (p,) = promote_dtypes_inexact("polyder", p) if not dtypes.is_integer(_aval(p).dtype) else (p,)
    for _ in range(operator.index(m)):
        n = _aval(p).shape[0]
        if n <= 1:
            return p[:0]
        powers = asarray(np.arange(n - 1, 0, -1), dtype=_aval(p).dtype)
        p = p[:-1] * powers
    return p


# --- window functions ----------------------------------------------------------------------


def _window(name: str, M: int, terms: list[tuple[float, float]]) -> Array:
    """``sum_k a_k cos(2 pi f_k n / (M - 1))`` for ``n`` in ``0..M-1``."""
    M = operator.index(M)
    if M <= 0:  # built by broadcasting, not as a host constant, like every other result
        return zeros((0,), np.float32)
    if M == 1:
        return lax.broadcast_in_dim(asarray(1.0, dtype=np.float32), (1,), ())
    n = arange(M, dtype=np.float32)
    out = None
    for coefficient, frequency in terms:
        term = (
            coefficient * cos(2 * math.pi * frequency * n / (M - 1))
            if frequency
            else coefficient + n * 0
        )
        out = term if out is None else out + term
    return out


def hamming(M: int) -> Array:
    """``0.54 - 0.46 cos(2 pi n / (M - 1))``."""
    return _window("hamming", M, [(0.54, 0), (-0.46, 1)])


def hanning(M: int) -> Array:
    """``0.5 - 0.5 cos(2 pi n / (M - 1))``."""
    return _window("hanning", M, [(0.5, 0), (-0.5, 1)])


def blackman(M: int) -> Array:
    """``0.42 - 0.5 cos(2 pi n / (M - 1)) + 0.08 cos(4 pi n / (M - 1))``."""
    return _window("blackman", M, [(0.42, 0), (-0.5, 1), (0.08, 2)])


def bartlett(M: int) -> Array:
    """The triangular window ``1 - |2 n / (M - 1) - 1|``."""
    from refimpl.numpy._ufuncs import abs as abs_

    M = operator.index(M)
    if M <= 1:
        return _window("bartlett", M, [])
    n = arange(M, dtype=np.float32)
    return 1 - abs_(2 * n / (M - 1) - 1)


# --- products, mapping, unique ----------------------------------------------------------------


def matvec(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """The matrix-vector product over the last axes (batch axes broadcast)."""
    return einsum("...ij,...j->...i", checked_array("matvec", x1), checked_array("matvec", x2, 1))


def vecmat(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """``conj(x1) @ x2`` over the last axes (batch axes broadcast)."""
    return einsum(
        "...i,...ij->...j", conj(checked_array("vecmat", x1)), checked_array("vecmat", x2, 1)
    )


def apply_along_axis(
    func1d: Callable[..., Any], axis: int, arr: ArrayLike, *args: Any, **kwargs: Any
):
    """``func1d`` applied to every 1-d slice along ``axis`` (by ``vmap`` over
    the other axes); the function's output dims take the place of ``axis``."""
    from refimpl.transforms.batching import vmap

    arr = checked_array("apply_along_axis", arr, 2)
    ndim = _aval(arr).ndim
    axis = normalize_axis("apply_along_axis", axis, ndim)

    def one(x: Any) -> Any:
        return func1d(x, *args, **kwargs)

    fn = one
    for _ in range(ndim - 1):
        fn = vmap(fn)
    out = fn(moveaxis(arr, axis, -1))
    out_dims = _aval(out).ndim - (ndim - 1)
    return (
        moveaxis(
            out, tuple(range(ndim - 1, ndim - 1 + out_dims)), tuple(range(axis, axis + out_dims))
        )
        if out_dims
        else out
    )


class UniqueInverseResult(NamedTuple):
    values: Any
    inverse_indices: Any


class UniqueAllResult(NamedTuple):
    values: Any
    indices: Any
    inverse_indices: Any
    counts: Any


def unique_inverse(x: ArrayLike, /, *, size: int | None = None, fill_value: Any = None):
    """``(values, inverse_indices)`` of :func:`unique`."""
    x = checked_array("unique_inverse", x)
    return UniqueInverseResult(*unique(x, return_inverse=True, size=size, fill_value=fill_value))


def unique_all(x: ArrayLike, /, *, size: int | None = None, fill_value: Any = None):
    """``(values, indices, inverse_indices, counts)`` of :func:`unique`."""
    x = checked_array("unique_all", x)
    return UniqueAllResult(
        *unique(
            x,
            return_index=True,
            return_inverse=True,
            return_counts=True,
            size=size,
            fill_value=fill_value,
        )
    )


# --- more composition functions ------------------------------------------------------------


def insert(arr: ArrayLike, obj: Any, values: ArrayLike, axis: int | None = None) -> Array:
    """``arr`` with ``values`` inserted before the (concrete) index or indices
    ``obj`` along ``axis`` (flattened when None), as ``np.insert``."""
    arr = checked_array("insert", arr)
    if axis is None:
        arr, axis = ravel(arr), 0
    axis = normalize_axis("insert", axis, _aval(arr).ndim)
    n = _aval(arr).shape[axis]
    values = lax.convert_element_type(asarray(values), _aval(arr).dtype)
    scalar_obj = isinstance(obj, (int, np.integer))
    positions = np.arange(n + 1)[obj] if isinstance(obj, slice) else np.atleast_1d(np.asarray(obj))
    positions = np.where(positions < 0, positions + n, positions)
    if ((positions < 0) | (positions > n)).any():
        raise IndexError(f"insert: index out of bounds for axis {axis} with size {n}")
    from refimpl.numpy._shape import broadcast_to

    ndim = _aval(arr).ndim
    values = reshape(values, (1,) * (ndim - _aval(values).ndim) + _aval(values).shape)
    if scalar_obj:  # NumPy: the values' first axis becomes the inserted slices
        values = moveaxis(values, 0, axis)
        k = _aval(values).shape[axis]
        positions = np.full(k, positions[0])
    k = len(positions)
    shape = list(_aval(arr).shape)
    shape[axis] = k
    vals = moveaxis(broadcast_to(values, tuple(shape)), axis, 0)
    moved = moveaxis(arr, axis, 0)
    # existing element i sorts at 2i + 1, a value inserted before i at 2i
    order = np.argsort(np.concatenate([2 * np.arange(n) + 1, 2 * positions]), kind="stable")
    joined = concatenate([moved, lax.convert_element_type(vals, _aval(arr).dtype)], axis=0)
    from refimpl.numpy._indexing import take

    return moveaxis(take(joined, asarray(order.astype(np.int32)), axis=0), 0, axis)


def resize(a: ArrayLike, new_shape: Any) -> Array:
    """``a``'s elements, repeated as needed, in ``new_shape``."""
    from refimpl.numpy._creation import canonical_shape

    a = ravel(checked_array("resize", a))
    shape = canonical_shape("resize", new_shape)
    size = int(np.prod(shape, dtype=np.int64))
    n = _aval(a).shape[0]
    if n == 0 or size == 0:
        return zeros(shape, _aval(a).dtype)
    from refimpl.numpy._indexing import take

    return reshape(take(a, asarray((np.arange(size) % n).astype(np.int32))), shape)


def put(
    a: ArrayLike, ind: ArrayLike, v: ArrayLike, mode: str | None = None, *, inplace: bool = True
):
    """A copy of ``a`` with ``ravel(a)[ind] = v`` (``inplace=False`` required)."""
    if inplace:
        raise ValueError("put: jax-style arrays are immutable; pass inplace=False")
    a = checked_array("put", a)
    ind = ravel(checked_array("put", ind, 1))
    values = ravel(asarray(v))
    k = _aval(ind).shape[0]
    n = _aval(values).shape[0]
    if n != k and n:
        from refimpl.numpy._indexing import take

        values = take(values, asarray((np.arange(k) % n).astype(np.int32)))
    flat = ravel(a)
    if mode == "wrap":
        from refimpl.numpy._ufuncs import remainder

        ind = remainder(ind, _aval(flat).shape[0])
    at_mode = "clip" if mode == "clip" else None
    return reshape(flat.at[ind].set(values, mode=at_mode), _aval(a).shape)


def place(arr: ArrayLike, mask: ArrayLike, vals: ArrayLike, *, inplace: bool = True) -> Array:
    """A copy of ``arr`` whose elements where ``mask`` holds take ``vals`` in
    order, repeated as needed (``inplace=False`` required, as in JAX)."""
    from refimpl.numpy._search import flatnonzero

    if inplace:
        raise ValueError("place: jax-style arrays are immutable; pass inplace=False")
    arr = checked_array("place", arr)
    mask = ravel(checked_array("place", mask, 1))
    flat = ravel(arr)
    size = _aval(flat).shape[0]
    values = ravel(asarray(vals))
    positions = flatnonzero(mask, size=size, fill_value=size)  # padding: out of range, dropped
    count = _aval(values).shape[0]
    if count == 0:
        return arr
    from refimpl.numpy._indexing import take

    cyclic = take(values, asarray((np.arange(size) % count).astype(np.int32)))
    return reshape(flat.at[positions].set(cyclic), _aval(arr).shape)


def polyint(p: ArrayLike, m: int = 1, k: ArrayLike = None) -> Array:
    """The ``m``-th antiderivative (integration constants ``k``, default 0)."""
    p = checked_array("polyint", p)
    (p,) = promote_dtypes_inexact("polyint", p)
    m = operator.index(m)
    constants = np.zeros(m) if k is None else np.broadcast_to(np.asarray(k, np.float64), (m,))
    for i in range(m):
        n = _aval(p).shape[0]
        divisors = asarray(np.arange(n, 0, -1), dtype=_aval(p).dtype)
        tail = asarray(constants[i], dtype=_aval(p).dtype).reshape((1,))
        p = concatenate([p / divisors, tail])
    return p


def polyfit(
    x: ArrayLike,
    y: ArrayLike,
    deg: int,
    rcond: float | None = None,
    full: bool = False,
    w: ArrayLike = None,
    cov: bool = False,
) -> Array:
    """Least-squares polynomial coefficients (highest power first)."""
    if full or cov:
        raise NotImplementedError("polyfit: full=True and cov=True are not supported")
    from refimpl.numpy import linalg
    from refimpl.numpy._construct import vander

    x = checked_array("polyfit", x)
    y = checked_array("polyfit", y, 1)
    x, y = promote_dtypes_inexact("polyfit", x, y)
    lhs = vander(x, operator.index(deg) + 1)
    if w is not None:
        w = asarray(w)
        lhs = lhs * w[:, None]
        y = y * (w if _aval(y).ndim == 1 else w[:, None])
    if rcond is None:
        rcond = _aval(x).shape[0] * float(np.finfo(np.dtype(_aval(x).dtype)).eps)
    scale = linalg.norm(lhs, axis=0)
    scale = where(scale == 0, 1, scale)
    coefficients = linalg.lstsq(lhs / scale, y, rcond)[0]
    return (coefficients.T / scale).T


def apply_over_axes(func: Callable[[Any, int], Any], a: ArrayLike, axes: Any) -> Array:
    """``func(a, axis)`` for each axis in turn, keeping the rank (a reduced axis
    comes back with size 1)."""
    a = checked_array("apply_over_axes", a, 1)
    for axis in axes:
        out = func(a, axis)
        if _aval(out).ndim == _aval(a).ndim - 1:
            out = lax.expand_dims(out, (normalize_axis("apply_over_axes", axis, _aval(a).ndim),))
        a = out
    return a


def sort_complex(a: ArrayLike) -> Array:
    """``sort(a)`` as a complex array (by real part, then imaginary part)."""
    from refimpl.numpy._shape import sort

    a = checked_array("sort_complex", a)
    dtype = _aval(a).dtype
    target = dtype if dtypes.is_complex(dtype) else dtypes.canonicalize_dtype(np.complex128)
    return lax.convert_element_type(sort(a), target)


def unwrap(
    p: ArrayLike, discont: ArrayLike = None, axis: int = -1, period: ArrayLike = 2 * math.pi
):
    """``p`` with jumps larger than ``discont`` (default ``period / 2``) along
    ``axis`` replaced by their ``period``-complement (NumPy's algorithm)."""
    from refimpl.numpy._reductions import cumsum
    from refimpl.numpy._stacking import diff
    from refimpl.numpy._ufuncs import abs as abs_
    from refimpl.numpy._ufuncs import remainder

    p = checked_array("unwrap", p)
    (p,) = promote_dtypes_inexact("unwrap", p)
    discont = period / 2 if discont is None else discont
    dd = diff(p, axis=axis)
    half = period / 2
    ddmod = remainder(dd + half, period) - half
    ddmod = where((ddmod == -half) & (dd > 0), half, ddmod)
    correction = where(abs_(dd) < discont, 0, ddmod - dd)
    moved = moveaxis(p, axis, -1)
    corr = moveaxis(cumsum(correction, axis=axis), axis, -1)
    head = moved[..., :1]
    out = concatenate([head, moved[..., 1:] + corr], axis=-1)
    return moveaxis(out, -1, axis)


def block(arrays: Any) -> Array:
    """Assemble nested lists of arrays: the innermost lists join along the last
    axis, each level out along the axis before (NumPy's ``block``)."""

    def depth(x: Any) -> int:
        return 1 + depth(x[0]) if isinstance(x, list) and x else (1 if isinstance(x, list) else 0)

    levels = depth(arrays)
    if levels == 0:
        return asarray(arrays)
    leaves = []

    def collect(x: Any) -> None:
        if isinstance(x, list):
            for item in x:
                collect(item)
        else:
            leaves.append(asarray(x))

    collect(arrays)
    ndim = max(levels, *(_aval(leaf).ndim for leaf in leaves))

    def assemble(x: Any, level: int) -> Any:
        if not isinstance(x, list):
            x = asarray(x)
            return reshape(x, (1,) * (ndim - _aval(x).ndim) + _aval(x).shape)
        parts = [assemble(item, level + 1) for item in x]
        return concatenate(parts, axis=ndim - levels + level)

    return assemble(arrays, 0)


class _Grid:
    """``mgrid[...]`` / ``ogrid[...]``: dense or open grids from slices (a
    complex step ``5j`` means that many points, end included)."""

    def __init__(self, sparse: bool) -> None:
        self.sparse = sparse

    def __getitem__(self, key: Any) -> Any:
        from refimpl.numpy._construct import meshgrid
        from refimpl.numpy._creation import linspace

        single = isinstance(key, slice)
        ranges = []
        for item in (key,) if single else key:
            start = 0 if item.start is None else item.start
            step = 1 if item.step is None else item.step
            if isinstance(step, complex):
                ranges.append(linspace(start, item.stop, int(abs(step))))
            else:
                ranges.append(arange(start, item.stop, step))
        if single:
            return ranges[0]
        grids = meshgrid(*ranges, indexing="ij", sparse=self.sparse)
        if self.sparse:
            return grids
        from refimpl.numpy._shape import stack

        return stack(grids, 0)


class _Concatenator:
    """``r_[...]`` / ``c_[...]``: slices become ``arange``s, scalars 1-d, then
    one concatenation (``c_``: 1-d pieces become columns, joined along the last axis)."""

    def __init__(self, columns: bool) -> None:
        self.columns = columns

    def __getitem__(self, key: Any) -> Array:
        from refimpl.numpy._creation import linspace

        items = key if isinstance(key, tuple) else (key,)
        parts = []
        for item in items:
            if isinstance(item, slice):
                start = 0 if item.start is None else item.start
                step = 1 if item.step is None else item.step
                part = (
                    linspace(start, item.stop, int(abs(step)))
                    if isinstance(step, complex)
                    else arange(start, item.stop, step)
                )
            else:
                part = asarray(item)
                part = reshape(part, (1,)) if _aval(part).ndim == 0 else part
            if self.columns and _aval(part).ndim == 1:
                part = reshape(part, (-1, 1))
            parts.append(part)
        return concatenate(parts, axis=-1 if self.columns else 0)


mgrid = _Grid(sparse=False)
ogrid = _Grid(sparse=True)
r_ = _Concatenator(columns=False)
c_ = _Concatenator(columns=True)
s_ = np.s_
index_exp = np.index_exp
iterable = np.iterable

__all__ = [
    "apply_along_axis", "bartlett", "bincount", "blackman", "broadcast_arrays",
    "broadcast_shapes", "compress", "concat", "corrcoef", "cov", "delete", "diag_indices",
    "apply_over_axes", "insert", "polyfit", "polyint", "put", "resize", "sort_complex", "unwrap",
    "block", "c_", "mgrid", "ogrid", "place", "r_",
    "diag_indices_from", "extract", "fill_diagonal", "hamming", "hanning", "index_exp",
    "iterable", "matvec", "polyadd", "polyder", "polymul", "polysub", "polyval", "rollaxis",
    "s_", "trapezoid", "tril_indices", "tril_indices_from", "triu_indices", "triu_indices_from",
    "unique_all", "unique_inverse", "vecmat",
]  # fmt: skip
