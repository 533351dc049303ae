"""More creation functions: triangles and diagonals, grids, ``identity``,
``empty``, ``logspace``/``geomspace``, ``fromfunction``, ``copy``, ``tri``.

Masks are built from ``broadcasted_iota`` comparisons (``row + k >= col``) and
applied with ``select``, so ``tril``/``triu`` keep any leading batch dims.
Sizes and offsets (``N``, ``M``, ``k``) must be concrete, except the ``k`` of
``eye`` and ``tri``, which may be traced (as JAX's).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from refimpl import dtypes, lax, tracing
from refimpl.numpy._creation import (
    _concrete_int,
    asarray,
    canonical_dtype,
    canonical_shape,
    check_forgot_shape_tuple,
    diagonal_offset,
    eye,
    full_like,
    linspace,
    zeros,
)
from refimpl.numpy._math import log10
from refimpl.numpy._promote import aval_of, checked_array, promote_args, promote_dtypes_inexact
from refimpl.numpy._shape import broadcast_to, normalize_axis, reshape
from refimpl.numpy._ufuncs import power, scalar_like, select, sign

Array = Any
ArrayLike = Any


def _triangle_mask(n: int, m: int, k: int) -> Array:
    """``mask[i, j] = j <= i + k`` as a bool ``(n, m)`` array."""
    rows = lax.broadcasted_iota(np.int32, (n, m), 0)
    cols = lax.broadcasted_iota(np.int32, (n, m), 1)
    shifted = lax.add(rows, tracing.TypedScalar(k, np.dtype(np.int32), False))
    return lax.ge(shifted, cols)


def tri(N: int, M: int | None = None, k: int = 0, dtype: Any = None) -> Array:
    """The lower-triangular matrix of ones: ``T[i, j] = 1`` where ``j <= i + k``, else 0.

    As JAX 0.10.2: the default dtype is float32 even under x64 (its "strange
    default"), and ``k`` becomes an array of the default int, so a Python int
    beyond int32 is an OverflowError without x64 and runs with it (``eye``
    clips it instead).

    Args:
        N: The number of rows.
        M: The number of columns, or None for ``N``.
        k: The diagonal at and below which the ones are (0 the main one,
            positive above, negative below); may be traced.
        dtype: The dtype, or None for float32.

    Returns:
        An array of shape ``(N, M)``.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.tri(3)
        Array([[1., 0., 0.],
               [1., 1., 0.],
               [1., 1., 1.]], dtype=float32)
        >>> rnp.tri(2, 3, k=1, dtype=int)
        Array([[1, 1, 0],
               [1, 1, 1]], dtype=int32)
    """
    # (N, M) is read as a shape: JAX's TypeError and words for a traced or
    # non-integer one (canonical_shape's, less its prefix)
    try:
        n, m = canonical_shape("tri", (N, N if M is None else M))
    except TypeError as error:
        raise TypeError(str(error).removeprefix("tri: ")) from None
    k_type = np.iinfo(dtypes.canonicalize_dtype(np.int64))
    if isinstance(k, int) and not k_type.min <= k <= k_type.max:
        raise OverflowError(f"tri: Python int {k} too large to convert to {k_type.dtype}")
    if isinstance(k, (bool, float, np.bool_, np.floating)):
        raise TypeError(f"tri: k must be an integer, got {k!r}")
    dtype = np.dtype(np.float32) if dtype is None else canonical_dtype("tri", dtype)
    rows = lax.broadcasted_iota(np.int32, (n, m), 0)
    cols = lax.broadcasted_iota(np.int32, (n, m), 1)
    mask = lax.ge(lax.add(rows, diagonal_offset("tri", k, n, m, TypeError)), cols)
    return lax.convert_element_type(mask, dtype)


def _masked_triangle(name: str, m: ArrayLike, k: int, lower: bool) -> Array:
    aval = aval_of(m, name, 0)
    if aval.ndim < 2:
        raise ValueError(f"{name}: input array must be at least 2-d, got shape {aval.shape}")
    k = _concrete_int(name, "k", k, allow_negative=True)
    n, cols = aval.shape[-2:]
    mask = _triangle_mask(n, cols, k if lower else k - 1)
    if not lower:
        mask = lax.bitwise_not(mask)
    mask = lax.broadcast_in_dim(mask, aval.shape, (aval.ndim - 2, aval.ndim - 1))
    zero = lax.broadcast_in_dim(scalar_like(m, 0), aval.shape, ())
    return select(mask, m, zero)


def tril(m: ArrayLike, k: int = 0) -> Array:
    """The lower triangle of ``m``: the elements above diagonal ``k`` zeroed.

    The triangle is taken over the last two axes; leading axes are a batch.

    Args:
        m: An array of at least two dimensions.
        k: The diagonal above which to zero (0 the main one, positive above,
            negative below; a static int).

    Returns:
        An array of ``m``'s shape and dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.tril(rnp.arange(1, 10).reshape(3, 3))
        Array([[1, 0, 0],
               [4, 5, 0],
               [7, 8, 9]], dtype=int32)
        >>> rnp.tril(rnp.arange(1, 10).reshape(3, 3), k=-1)
        Array([[0, 0, 0],
               [4, 0, 0],
               [7, 8, 0]], dtype=int32)
    """
    return _masked_triangle("tril", m, k, lower=True)


def triu(m: ArrayLike, k: int = 0) -> Array:
    """The upper triangle of ``m``: the elements below diagonal ``k`` zeroed.

    The triangle is taken over the last two axes; leading axes are a batch.

    Args:
        m: An array of at least two dimensions.
        k: The diagonal below which to zero (0 the main one, positive above,
            negative below; a static int).

    Returns:
        An array of ``m``'s shape and dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.triu(rnp.arange(1, 10).reshape(3, 3), k=1)
        Array([[0, 2, 3],
               [0, 0, 6],
               [0, 0, 0]], dtype=int32)
    """
    return _masked_triangle("triu", m, k, lower=False)


def diagonal(a: ArrayLike, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Array:
    """The diagonal of ``a`` at ``offset`` in the plane of ``axis1`` and ``axis2``.

    The elements ``a[..., i, i + offset]`` of the plane ``(axis1, axis2)``, as a
    new last axis (the other axes first, in order).

    A gather of the flattened plane at ``i * (cols + 1) + offset`` (rows
    ``max(0, -offset) ...``).

    Args:
        a: An array of at least two dimensions.
        offset: Which diagonal: 0 the main one, positive above, negative
            below (a static int).
        axis1: The row axis of the plane.
        axis2: The column axis of the plane (a different one).

    Returns:
        An array of ``a``'s dtype: the other axes, then the diagonal's length.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.diagonal(rnp.arange(1, 10).reshape(3, 3))
        Array([1, 5, 9], dtype=int32)
        >>> rnp.diagonal(rnp.arange(1, 10).reshape(3, 3), offset=1)
        Array([2, 6], dtype=int32)
    """
    aval = aval_of(a, "diagonal", 0)
    if aval.ndim < 2:
        raise ValueError(f"diagonal: input must be at least 2-d, got shape {aval.shape}")
    offset = _concrete_int("diagonal", "offset", offset, allow_negative=True)
    ax1 = normalize_axis("diagonal", axis1, aval.ndim)
    ax2 = normalize_axis("diagonal", axis2, aval.ndim)
    if ax1 == ax2:
        raise ValueError("diagonal: axis1 and axis2 cannot be the same")
    others = [d for d in range(aval.ndim) if d not in (ax1, ax2)]
    a = lax.transpose(a, (*others, ax1, ax2))
    rows, cols = aval.shape[ax1], aval.shape[ax2]
    lead = tuple(aval.shape[d] for d in others)
    first_row = max(0, -offset)
    length = max(0, min(rows - first_row, cols - max(0, offset)))
    if length == 0:
        return lax.broadcast_in_dim(scalar_like(a, 0), (*lead, 0), ())
    flat = lax.reshape(a, (*lead, rows * cols))
    # element (r, r + offset) for r = first_row, first_row + 1, ...
    positions = strided_positions(length, cols + 1, first_row * (cols + 1) + offset)
    return lax.gather_along_axis(flat, positions, len(lead), mode="clip")


def strided_positions(length: int, stride: int, start: int) -> Any:
    """int32 ``start + stride * i`` for ``i < length``: the flat positions of a
    diagonal. Computed from an iota, as JAX's diagonals are: equations on no
    input, which ``checkpoint`` recomputes in the backward pass, where a
    NumPy index array would be a constant saved as a residual."""
    int32 = np.dtype(np.int32)
    return lax.add(
        lax.mul(lax.iota(int32, length), tracing.TypedScalar(stride, int32, False)),
        tracing.TypedScalar(start, int32, False),
    )


def diag(v: ArrayLike, k: int = 0) -> Array:
    """A diagonal matrix from a vector, or the diagonal of a matrix.

    For a vector: the square matrix with ``v`` on diagonal ``k`` (zeros
    elsewhere). For a matrix: its diagonal ``k`` (:func:`diagonal`).

    Args:
        v: A 1-d or 2-d array.
        k: The diagonal: 0 the main one, positive above, negative below.

    Returns:
        For 1-d ``v``, an ``(n + |k|, n + |k|)`` matrix; for 2-d ``v``, a 1-d
        array; in ``v``'s dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.diag(rnp.array([1, 2]), k=1)
        Array([[0, 1, 0],
               [0, 0, 2],
               [0, 0, 0]], dtype=int32)
        >>> rnp.diag(rnp.arange(1, 10).reshape(3, 3))
        Array([1, 5, 9], dtype=int32)
    """
    aval = aval_of(v, "diag", 0)
    k = _concrete_int("diag", "k", k, allow_negative=True)
    if aval.ndim == 2:
        return diagonal(v, k)
    if aval.ndim != 1:
        raise ValueError(f"diag: input must be 1-d or 2-d, got shape {aval.shape}")
    n = aval.shape[0] + abs(k)
    mask = lax.eq(
        lax.add(
            lax.broadcasted_iota(np.int32, (n, n), 0),
            tracing.TypedScalar(k, np.dtype(np.int32), False),
        ),
        lax.broadcasted_iota(np.int32, (n, n), 1),
    )
    # v[i] sits in row i (k >= 0) or in column i (k < 0) of the matrix
    padded = lax.pad(v, scalar_like(v, 0), [(0, abs(k), 0)])
    values = lax.broadcast_in_dim(padded, (n, n), (0,) if k >= 0 else (1,))
    return select(mask, values, lax.broadcast_in_dim(scalar_like(v, 0), (n, n), ()))


def diagflat(v: ArrayLike, k: int = 0) -> Array:
    """The diagonal matrix with the flattened ``v`` on diagonal ``k``: ``diag(ravel(v), k)``.

    Args:
        v: The input array (flattened).
        k: The diagonal: 0 the main one, positive above, negative below.

    Returns:
        A square 2-d array of ``v``'s dtype, of side ``v.size + |k|``.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.diagflat(rnp.array([[1, 2], [3, 4]]))
        Array([[1, 0, 0, 0],
               [0, 2, 0, 0],
               [0, 0, 3, 0],
               [0, 0, 0, 4]], dtype=int32)
    """
    v = checked_array("diagflat", v)
    return diag(reshape(v, (-1,)), k)


def identity(n: int, dtype: Any = None) -> Array:
    """The ``n x n`` identity matrix: ones on the diagonal, zeros elsewhere.

    Args:
        n: The number of rows and columns.
        dtype: The dtype, or None for the default float.

    Returns:
        An array of shape ``(n, n)``.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.identity(2)
        Array([[1., 0.],
               [0., 1.]], dtype=float32)
    """
    return eye(n, dtype=None if dtype is None else canonical_dtype("identity", dtype))


def empty(shape: Any, dtype: Any = None) -> Array:
    """A new array of ``shape``: zeros (XLA has no uninitialized memory; JAX returns zeros too).

    NumPy's ``empty`` leaves the values uninitialized; refimpl's, as JAX's,
    are zeros.

    Args:
        shape: The shape (an int or a sequence of ints).
        dtype: The dtype, or None for the default float.

    Returns:
        An array of zeros of ``shape``.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.empty((2, 2))
        Array([[0., 0.],
               [0., 0.]], dtype=float32)
    """
    check_forgot_shape_tuple("empty", shape, dtype)
    return zeros(shape, None if dtype is None else canonical_dtype("empty", dtype))


def empty_like(prototype: ArrayLike, dtype: Any = None, shape: Any = None) -> Array:
    """A new array like ``prototype``: zeros, as :func:`empty`'s.

    Args:
        prototype: The array whose shape and dtype to take.
        dtype: The dtype, or None for ``prototype``'s.
        shape: The shape, or None for ``prototype``'s.

    Returns:
        An array of zeros.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.empty_like(rnp.array([1, 2, 3]))
        Array([0, 0, 0], dtype=int32)
    """
    prototype = checked_array("empty_like", prototype)
    return full_like(prototype, 0, dtype=dtype, shape=shape)


def copy(a: ArrayLike, order: Any = None) -> Array:
    """A copy of ``a``: a new array with ``a``'s values (a new buffer for a concrete array).

    Args:
        a: The array (or anything :func:`asarray` takes) to copy.
        order: Accepted and ignored.

    Returns:
        An array of ``a``'s shape and dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.copy(rnp.array([1, 2]))
        Array([1, 2], dtype=int32)
    """
    a = checked_array("copy", a)
    del order
    result = asarray(a)
    return lax.copy(result) if result is a else result


def meshgrid(*xi: ArrayLike, copy: bool = True, sparse: bool = False, indexing: str = "xy") -> list:
    """Coordinate grids from 1-d coordinate vectors.

    Coordinate matrices from 1-D coordinate vectors; ``indexing="xy"`` swaps
    the first two output axes (Cartesian), ``"ij"`` does not (matrix). The
    outputs are always new arrays: ``copy=False`` (NumPy's views) is JAX's
    ValueError.

    Args:
        *xi: 1-d coordinate vectors.
        copy: Must be True (keyword-only).
        sparse: Whether to return the vectors reshaped to broadcast against
            each other instead of the full grids (keyword-only).
        indexing: ``"xy"`` or ``"ij"`` (keyword-only).

    Returns:
        A list of ``len(xi)`` arrays (a tuple in NumPy), each of the grid's
        shape (size 1 in the other axes with ``sparse``).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.meshgrid(rnp.array([1, 2, 3]), rnp.array([10, 20]))
        [Array([[1, 2, 3],
               [1, 2, 3]], dtype=int32), Array([[10, 10, 10],
               [20, 20, 20]], dtype=int32)]
        >>> rnp.meshgrid(rnp.array([1, 2, 3]), rnp.array([10, 20]), sparse=True)
        [Array([[1, 2, 3]], dtype=int32), Array([[10],
               [20]], dtype=int32)]
    """
    if not copy:
        raise ValueError("meshgrid: only copy=True is supported (as jax.numpy.meshgrid)")
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    vectors = [reshape(checked_array("meshgrid", x, i), (-1,)) for i, x in enumerate(xi)]
    for position, x in enumerate(xi):
        if aval_of(x, "meshgrid", position).ndim != 1:
            raise ValueError(
                f"meshgrid: arguments must be 1-d, got shape {aval_of(x, 'meshgrid', 0).shape}"
            )
    sizes = [aval_of(v, "meshgrid", 0).shape[0] for v in vectors]
    if indexing == "xy" and len(vectors) >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, v in enumerate(vectors):
        dim = i
        if indexing == "xy" and len(vectors) >= 2 and i < 2:
            dim = 1 - i
        if sparse:
            shape = [1] * len(vectors)
            shape[dim] = sizes[dim]
            out.append(lax.reshape(v, tuple(shape)))
        else:
            out.append(lax.broadcast_in_dim(v, tuple(sizes), (dim,)))
    return out


def indices(dimensions: Sequence[int], dtype: Any = None, sparse: bool = False) -> Any:
    """The index grids of an array of shape ``dimensions``: ``grid[k][i0, i1, ...] = ik``.

    Args:
        dimensions: The shape of the grid.
        dtype: The integer dtype, or None for the default int.
        sparse: Whether to return one array per dimension, of size 1 in the
            others, instead of the stacked full grids.

    Returns:
        An array of shape ``(len(dimensions), *dimensions)``, or with
        ``sparse`` a tuple of ``len(dimensions)`` arrays.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.indices((2, 3))
        Array([[[0, 0, 0],
                [1, 1, 1]],
        <BLANKLINE>
               [[0, 1, 2],
                [0, 1, 2]]], dtype=int32)
    """
    dims = canonical_shape("indices", dimensions)
    dtype = (
        dtypes.canonicalize_dtype(np.int64) if dtype is None else canonical_dtype("indices", dtype)
    )
    grids = []
    for k, size in enumerate(dims):
        if sparse:
            shape = [1] * len(dims)
            shape[k] = size
            grids.append(lax.reshape(lax.iota(dtype, size), tuple(shape)))
        else:
            grids.append(lax.broadcasted_iota(dtype, dims, k))
    if sparse:
        return tuple(grids)
    if not grids:
        return lax.broadcast_in_dim(tracing.TypedScalar(0, dtype, False), (0,), ())
    return lax.concatenate([lax.expand_dims(g, (0,)) for g in grids], 0)


def logspace(
    start: ArrayLike,
    stop: ArrayLike,
    num: int = 50,
    endpoint: bool = True,
    base: ArrayLike = 10.0,
    dtype: Any = None,
    axis: int = 0,
) -> Array:
    """Numbers spaced evenly on a log scale: ``base ** linspace(start, stop, num)``.

    Computed in the inexact dtype, then converted to ``dtype``.

    Args:
        start: The exponent of the first value.
        stop: The exponent of the last value (included with ``endpoint``).
        num: The number of values (a static int).
        endpoint: Whether ``stop`` is the last exponent.
        base: The base of the powers (an array broadcasts along ``axis``).
        dtype: The dtype of the result, or None for the inexact one.
        axis: The axis of the values in the result, for array bounds.

    Returns:
        A 1-d array of ``num`` values (more dims for array bounds).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.logspace(0, 2, 3)
        Array([  1.,  10., 100.], dtype=float32)
        >>> rnp.logspace(0, 3, 4, base=2.0)
        Array([1., 2., 4., 8.], dtype=float32)
    """
    computation = None
    if dtype is not None:
        target = canonical_dtype("logspace", dtype)
        computation = target if dtypes.is_inexact(target) else None
    exponents = linspace(start, stop, num, endpoint=endpoint, dtype=computation, axis=axis)
    (base,) = promote_dtypes_inexact("logspace", base)
    base = lax.convert_element_type(base, aval_of(exponents, "logspace", 0).dtype)
    base_shape = aval_of(base, "logspace", 0).shape
    if base_shape:
        base = lax.expand_dims(base, (normalize_axis("logspace", axis, len(base_shape) + 1),))
        base = broadcast_to(base, aval_of(exponents, "logspace", 0).shape)
    result = power(base, exponents)
    return (
        result
        if dtype is None
        else lax.convert_element_type(result, canonical_dtype("logspace", dtype))
    )


def geomspace(
    start: ArrayLike,
    stop: ArrayLike,
    num: int = 50,
    endpoint: bool = True,
    dtype: Any = None,
    axis: int = 0,
) -> Array:
    """Numbers spaced evenly on a log scale from ``start`` to ``stop``.

    A geometric sequence from ``start`` to ``stop``, as JAX computes it:
    ``s * logspace(log10(start / s), log10(stop / s))`` with ``s = sign(start)``,
    built along axis 0 and then moved to ``axis``. ``start`` and ``stop``
    broadcast against each other; a complex sequence follows NumPy 2's path
    (``start / s`` is real, the phase comes from ``stop / s``).

    Args:
        start: The first value (nonzero).
        stop: The last value (included with ``endpoint``).
        num: The number of values (a static int).
        endpoint: Whether ``stop`` is the last value.
        dtype: The dtype of the result, or None for the inexact one.
        axis: The axis of the values in the result, for array bounds.

    Returns:
        An array of ``num`` values along ``axis``.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.geomspace(1, 1000, 4)
        Array([   1.,   10.,  100., 1000.], dtype=float32)
    """

    start, stop = promote_dtypes_inexact("geomspace", start, stop)
    target = (
        aval_of(start, "geomspace", 0).dtype
        if dtype is None
        else canonical_dtype("geomspace", dtype)
    )
    computation = target if dtypes.is_inexact(target) else aval_of(start, "geomspace", 0).dtype
    start = lax.convert_element_type(start, computation)
    stop = lax.convert_element_type(stop, computation)
    signs = sign(start)
    lo = log10(lax.div(start, signs))
    hi = log10(lax.div(*_same(stop, signs)))
    result = logspace(lo, hi, num, endpoint=endpoint, base=10.0, dtype=computation, axis=0)
    result = lax.mul(*_same(signs, result))
    ndim = aval_of(result, "geomspace", 0).ndim
    axis_n = normalize_axis("geomspace", axis, ndim)
    if axis_n != 0:
        order = (*range(1, axis_n + 1), 0, *range(axis_n + 1, ndim))
        result = lax.transpose(result, order)
    return lax.convert_element_type(result, target)


def _same(a: Any, b: Any) -> tuple[Any, Any]:
    return tuple(promote_args("geomspace", a, b))


def fromfunction(function: Callable[..., Any], shape: Any, *, dtype: Any = float, **kwargs: Any):
    """An array made by calling ``function`` on the coordinate grids of ``shape``.

    ``function(*indices(shape, dtype))``: the function is called once, on
    coordinate arrays (as ``jnp.fromfunction`` does), so it must work
    elementwise on arrays.

    Args:
        function: Called with one coordinate array per dimension (and
            ``kwargs``).
        shape: The shape of the coordinate grids.
        dtype: The dtype of the coordinates (keyword-only).
        **kwargs: Passed on to ``function``.

    Returns:
        What ``function`` returns.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.fromfunction(lambda i, j: i + 10 * j, (2, 3))
        Array([[ 0., 10., 20.],
               [ 1., 11., 21.]], dtype=float32)
    """
    shape = canonical_shape("fromfunction", shape)
    dtype = canonical_dtype("fromfunction", dtype)
    grids = [lax.broadcasted_iota(dtype, shape, k) for k in range(len(shape))]
    return function(*grids, **kwargs)


def vander(x: ArrayLike, N: int | None = None, increasing: bool = False) -> Array:
    """The Vandermonde matrix of ``x``: its columns are powers of ``x``.

    ``x[:, None] ** p`` for the powers ``p = N - 1, ..., 0`` (``0, ..., N - 1``
    with ``increasing``), as JAX 0.10.2: ``p`` is an array of x's own dtype
    (an iota), so the result is strong, a bool ``x`` is iota's TypeError, and
    the derivative at 0 is ``p * 0 ** (p - 1)``: nan in the ``p = 0`` column.

    Args:
        x: A 1-d array.
        N: The number of columns, or None for ``len(x)``.
        increasing: Whether the powers increase from left to right.

    Returns:
        An array of shape ``(len(x), N)``, in ``x``'s dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.vander(rnp.array([1, 2, 3]))
        Array([[1, 1, 1],
               [4, 2, 1],
               [9, 3, 1]], dtype=int32)
    """
    aval = aval_of(x, "vander", 0)
    if aval.ndim != 1:
        raise ValueError(f"vander: x must be 1-d, got shape {aval.shape}")
    n = aval.shape[0] if N is None else _concrete_int("vander", "N", N)
    if n < 0:
        raise ValueError(f"vander: N must be nonnegative, got {n}")
    powers = lax.iota(aval.dtype, n)
    if not increasing:
        # N - 1 in x's dtype (NumPy's OverflowError for N = 0 of an unsigned x, as JAX's)
        powers = lax.sub(np.array(n - 1, aval.dtype), powers)
    return power(lax.expand_dims(x, (1,)), lax.expand_dims(powers, (0,)))


__all__ = [
    "copy", "diag", "diagflat", "diagonal", "empty", "empty_like", "fromfunction", "geomspace",
    "identity", "indices", "logspace", "meshgrid", "tri", "tril", "triu", "vander",
]  # fmt: skip
