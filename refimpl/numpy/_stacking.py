"""Stacking, splitting, rolling and the small products of ``jax.numpy``.

Everything here is a composition of the shape functions (``concatenate``,
``split``, ``reshape``, ``transpose``...) and ``dot_general``/``einsum``; the
joined operands are promoted together first. Counts, shifts given as Python
ints, axes and split points must be concrete; ``roll`` also takes a traced
shift (then it is a ``dynamic_slice`` of the array concatenated with itself).
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from refimpl import dtypes, lax
from refimpl.numpy._construct import diagonal
from refimpl.numpy._creation import asarray, canonical_dtype, linspace
from refimpl.numpy._linalg import _contract, dot, einsum, product_type, with_type
from refimpl.numpy._promote import (
    as_array,
    aval_of,
    checked_array,
    is_traced,
    promote_args,
    promote_dtypes,
    promote_dtypes_inexact,
    require_concrete,
)
from refimpl.numpy._reductions import max as max_
from refimpl.numpy._reductions import min as min_
from refimpl.numpy._reductions import sum as sum_
from refimpl.numpy._search import searchsorted
from refimpl.numpy._shape import (
    broadcast_to,
    concatenate,
    expand_dims,
    flip,
    moveaxis,
    normalize_axes,
    normalize_axis,
    ravel,
    reshape,
    section_count,
    split,
    stack,
    swapaxes,
)
from refimpl.numpy._ufuncs import clip, conjugate, multiply, remainder, subtract, where

Array = Any
ArrayLike = Any


# --- atleast_nd ------------------------------------------------------------------------


def _atleast(name: str, arys: tuple[Any, ...], fix: Any) -> Any:
    out = [fix(checked_array(name, a, i)) for i, a in enumerate(arys)]
    return out[0] if len(out) == 1 else out


def atleast_1d(*arys: ArrayLike) -> Any:
    """Each input as an array of at least one dimension.

    A scalar becomes shape ``(1,)``; arrays with dimensions are returned as
    they are.

    Args:
        *arys: Arrays or scalars.

    Returns:
        The one array for a single input; else a list of them (NumPy returns
        a tuple).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.atleast_1d(3)
        Array([3], dtype=int32, weak_type=True)
        >>> rnp.atleast_1d(1, rnp.array([2, 3]))
        [Array([1], dtype=int32, weak_type=True), Array([2, 3], dtype=int32)]
    """
    return _atleast("atleast_1d", arys, lambda a: reshape(a, (1,)) if _ndim(a) == 0 else a)


def atleast_2d(*arys: ArrayLike) -> Any:
    """Each input as an array of at least two dimensions.

    A scalar becomes shape ``(1, 1)`` and ``(n,)`` becomes ``(1, n)``.

    Args:
        *arys: Arrays or scalars.

    Returns:
        The one array for a single input; else a list of them.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.atleast_2d(rnp.array([1, 2]))
        Array([[1, 2]], dtype=int32)
    """

    def fix(a: Any) -> Any:
        return lax.expand_dims(a, tuple(range(2 - _ndim(a)))) if _ndim(a) < 2 else a

    return _atleast("atleast_2d", arys, fix)


def atleast_3d(*arys: ArrayLike) -> Any:
    """Each input as an array of at least three dimensions.

    ``()`` -> ``(1, 1, 1)``, ``(n,)`` -> ``(1, n, 1)``, ``(m, n)`` -> ``(m, n, 1)``.

    Args:
        *arys: Arrays or scalars.

    Returns:
        The one array for a single input; else a list of them.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.atleast_3d(rnp.array([1, 2])).shape
        (1, 2, 1)
        >>> rnp.atleast_3d(rnp.ones((2, 3))).shape
        (2, 3, 1)
    """

    def fix(a: Any) -> Any:
        ndim = _ndim(a)
        if ndim == 0:
            return reshape(a, (1, 1, 1))
        if ndim == 1:
            return lax.expand_dims(a, (0, 2))
        if ndim == 2:
            return lax.expand_dims(a, (2,))
        return a

    return _atleast("atleast_3d", arys, fix)


def _ndim(a: Any) -> int:
    return aval_of(a, "rnp", 0).ndim


# --- stacking ---------------------------------------------------------------------------


def _sequence(name: str, tup: Any) -> list[Any]:
    if isinstance(tup, (list, tuple)):
        return [checked_array(name, t, i) for i, t in enumerate(tup)]
    aval = aval_of(tup, name, 0)
    return [lax.index_in_dim(tup, i, 0, keepdims=False) for i in range(aval.shape[0])]


def hstack(tup: Any, dtype: Any = None) -> Array:
    """Stacks arrays horizontally: concatenates them along axis 1 (axis 0 for 1-d).

    Scalars become 1-d first; the arrays are promoted together.

    Args:
        tup: A sequence of arrays, or an array whose leading axis is
            iterated over.
        dtype: The result's dtype, or None for the promoted one.

    Returns:
        The concatenated array.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.hstack([rnp.array([1, 2]), rnp.array([3])])
        Array([1, 2, 3], dtype=int32)
        >>> rnp.hstack([rnp.array([[1], [2]]), rnp.array([[3], [4]])])
        Array([[1, 3],
               [2, 4]], dtype=int32)
    """
    arrays = [atleast_1d(a) for a in _sequence("hstack", tup)]
    axis = 0 if arrays and _ndim(arrays[0]) == 1 else 1
    return concatenate(arrays, axis=axis, dtype=dtype)


def vstack(tup: Any, dtype: Any = None) -> Array:
    """Stacks arrays vertically: concatenates ``atleast_2d`` of each along axis 0.

    Args:
        tup: A sequence of arrays, or an array whose leading axis is
            iterated over.
        dtype: The result's dtype, or None for the promoted one.

    Returns:
        The concatenated array, of at least two dimensions.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.vstack([rnp.array([1, 2]), rnp.array([3, 4])])
        Array([[1, 2],
               [3, 4]], dtype=int32)
    """
    return concatenate([atleast_2d(a) for a in _sequence("vstack", tup)], axis=0, dtype=dtype)


def dstack(tup: Any, dtype: Any = None) -> Array:
    """Stacks arrays depth-wise: concatenates ``atleast_3d`` of each along axis 2.

    Args:
        tup: A sequence of arrays, or an array whose leading axis is
            iterated over.
        dtype: The result's dtype, or None for the promoted one.

    Returns:
        The concatenated array, of at least three dimensions.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.dstack([rnp.array([1, 2]), rnp.array([3, 4])])
        Array([[[1, 3],
                [2, 4]]], dtype=int32)
    """
    return concatenate([atleast_3d(a) for a in _sequence("dstack", tup)], axis=2, dtype=dtype)


def column_stack(tup: Any) -> Array:
    """Stacks 1-d arrays as the columns of a 2-d array.

    Inputs of fewer than two dimensions become columns ``(n, 1)``; then all
    are concatenated along axis 1.

    Args:
        tup: A sequence of arrays, or an array whose leading axis is
            iterated over.

    Returns:
        The concatenated array.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.column_stack([rnp.array([1, 2]), rnp.array([3, 4])])
        Array([[1, 3],
               [2, 4]], dtype=int32)
    """
    arrays = []
    for a in _sequence("column_stack", tup):
        arrays.append(reshape(a, (-1, 1)) if _ndim(a) < 2 else a)
    return concatenate(arrays, axis=1)


def array_split(ary: ArrayLike, indices_or_sections: Any, axis: int = 0) -> list[Array]:
    """Splits ``ary`` into parts along ``axis``; the sections need not be equal.

    Like :func:`split`, but ``n`` sections need not divide the size: the first
    ``size % n`` parts get one extra element.

    Args:
        ary: The array to split.
        indices_or_sections: A number of sections, or the split points.
        axis: The axis to split.

    Returns:
        A list of arrays.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.array_split(rnp.arange(5), 3)
        [Array([0, 1], dtype=int32), Array([2, 3], dtype=int32), Array([4], dtype=int32)]
    """
    if isinstance(indices_or_sections, (list, tuple)) or np.ndim(indices_or_sections) > 0:
        return split(ary, indices_or_sections, axis)
    aval = aval_of(ary, "array_split", 0)
    axis = normalize_axis("array_split", axis, aval.ndim)
    sections = section_count("array_split", indices_or_sections)
    if sections <= 0:
        raise ValueError(f"array_split: number of sections must be positive, got {sections}")
    part, extra = builtins.divmod(aval.shape[axis], sections)
    sizes = [part + 1] * extra + [part] * (sections - extra)
    points = list(np.cumsum(sizes)[:-1])
    return split(ary, [int(p) for p in points], axis)


def _split_axis(name: str, ary: ArrayLike, axis: int) -> int:
    """``axis`` of ``ary``, as JAX 0.10.2 reads it from the shape: an array
    without that axis is its IndexError (NumPy's ValueError asks for 2 or 3
    dims; JAX's vsplit takes a 1-d array)."""
    if _ndim(ary) <= axis:
        raise IndexError(
            f"{name}: tuple index out of range (axis {axis} of a {_ndim(ary)}-d array)"
        )
    return axis


def hsplit(ary: ArrayLike, indices_or_sections: Any) -> list[Array]:
    """Splits ``ary`` horizontally: :func:`split` along axis 1 (axis 0 for 1-d).

    Args:
        ary: The array to split.
        indices_or_sections: A number of equal sections, or the split points.

    Returns:
        A list of arrays.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.hsplit(rnp.arange(4), 2)
        [Array([0, 1], dtype=int32), Array([2, 3], dtype=int32)]
    """
    return split(ary, indices_or_sections, _split_axis("hsplit", ary, 0 if _ndim(ary) == 1 else 1))


def vsplit(ary: ArrayLike, indices_or_sections: Any) -> list[Array]:
    """Splits ``ary`` vertically: :func:`split` along axis 0.

    Args:
        ary: The array to split (a 1-d one too, as JAX's).
        indices_or_sections: A number of equal sections, or the split points.

    Returns:
        A list of arrays.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.vsplit(rnp.arange(4).reshape(2, 2), 2)
        [Array([[0, 1]], dtype=int32), Array([[2, 3]], dtype=int32)]
    """
    return split(ary, indices_or_sections, _split_axis("vsplit", ary, 0))


def dsplit(ary: ArrayLike, indices_or_sections: Any) -> list[Array]:
    """Splits ``ary`` depth-wise: :func:`split` along axis 2.

    Args:
        ary: The array to split, of at least three dimensions.
        indices_or_sections: A number of equal sections, or the split points.

    Returns:
        A list of arrays.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.dsplit(rnp.arange(4).reshape(1, 1, 4), 2)
        [Array([[[0, 1]]], dtype=int32), Array([[[2, 3]]], dtype=int32)]
    """
    return split(ary, indices_or_sections, _split_axis("dsplit", ary, 2))


def append(arr: ArrayLike, values: ArrayLike, axis: int | None = None) -> Array:
    """``values`` appended to ``arr``: ``concatenate([arr, values], axis)``.

    Both are flattened when ``axis`` is None; the two are promoted together.

    Args:
        arr: The array to append to.
        values: The values to append; with an ``axis``, of ``arr``'s shape
            except along it.
        axis: The axis to append along, or None.

    Returns:
        The concatenated array (1-d when ``axis`` is None).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.append(rnp.array([1, 2]), rnp.array([[3, 4]]))
        Array([1, 2, 3, 4], dtype=int32)
        >>> rnp.append(rnp.array([[1, 2]]), rnp.array([[3, 4]]), axis=0)
        Array([[1, 2],
               [3, 4]], dtype=int32)
    """
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], axis=0)
    return concatenate([arr, values], axis=axis)


def unstack(x: ArrayLike, /, *, axis: int = 0) -> tuple[Array, ...]:
    """Splits ``x`` into its slices along ``axis`` (the inverse of :func:`stack`).

    Args:
        x: The array to unstack.
        axis: The axis to slice along (keyword-only).

    Returns:
        A tuple of ``x.shape[axis]`` arrays, each of ``x``'s shape without
        ``axis``.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.unstack(rnp.array([[1, 2], [3, 4]]))
        (Array([1, 2], dtype=int32), Array([3, 4], dtype=int32))
    """
    aval = aval_of(x, "unstack", 0)
    axis = normalize_axis("unstack", axis, aval.ndim)
    return tuple(lax.index_in_dim(x, i, axis, keepdims=False) for i in range(aval.shape[axis]))


def fliplr(m: ArrayLike) -> Array:
    """``m`` with its columns in reverse order: axis 1 reversed.

    Args:
        m: An array of at least two dimensions.

    Returns:
        An array of ``m``'s shape and dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.fliplr(rnp.array([[1, 2], [3, 4]]))
        Array([[2, 1],
               [4, 3]], dtype=int32)
    """
    m = checked_array("fliplr", m)
    return flip(m, 1)


def flipud(m: ArrayLike) -> Array:
    """``m`` with its rows in reverse order: axis 0 reversed.

    Args:
        m: An array of at least one dimension.

    Returns:
        An array of ``m``'s shape and dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.flipud(rnp.array([[1, 2], [3, 4]]))
        Array([[3, 4],
               [1, 2]], dtype=int32)
    """
    m = checked_array("flipud", m)
    return flip(m, 0)


def permute_dims(a: ArrayLike, /, axes: Sequence[int]) -> Array:
    """The axes of ``a`` permuted: the array API's transpose.

    ``axes`` must be a permutation of
    ``range(ndim)`` (no negative axes: jnp hands them to lax.transpose).

    Args:
        a: The input array.
        axes: The new order of the axes: result axis ``i`` is ``a``'s axis
            ``axes[i]``.

    Returns:
        An array of shape ``[a.shape[i] for i in axes]``, in ``a``'s dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.permute_dims(rnp.ones((2, 3, 4)), (2, 0, 1)).shape
        (4, 2, 3)
    """
    a = checked_array("permute_dims", a)
    return lax.transpose(a, tuple(operator.index(i) for i in axes))


def matrix_transpose(x: ArrayLike, /) -> Array:
    """The transpose of each matrix in ``x``: its last two axes swapped.

    Args:
        x: An array of at least two dimensions (a ValueError otherwise).

    Returns:
        An array of ``x``'s shape with the last two sizes swapped.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.matrix_transpose(rnp.array([[1, 2, 3], [4, 5, 6]]))
        Array([[1, 4],
               [2, 5],
               [3, 6]], dtype=int32)
    """
    x = checked_array("matrix_transpose", x)
    if _ndim(x) < 2:
        raise ValueError(f"matrix_transpose: x must be at least 2-d, got {_ndim(x)}-d")
    return swapaxes(x, -1, -2)


# --- roll, rot90 -------------------------------------------------------------------------


def roll(a: ArrayLike, shift: Any, axis: Any = None) -> Array:
    """``a``'s elements shifted by ``shift`` along ``axis``, wrapping around.

    ``out[(i + shift) % n] = a[i]``; with ``axis`` None the flattened array
    is rolled and the shape restored. ``shift`` may be traced (then a
    ``dynamic_slice`` of the array concatenated with itself), and shifts and
    axes given as sequences broadcast against each other.

    Args:
        a: The input array.
        shift: The shift (an int, a traced scalar, or one per axis).
        axis: The axis or axes to roll along, or None.

    Returns:
        An array of ``a``'s shape and dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.roll(rnp.array([1, 2, 3, 4]), 1)
        Array([4, 1, 2, 3], dtype=int32)
        >>> rnp.roll(rnp.array([[1, 2], [3, 4]]), -1, axis=1)
        Array([[2, 1],
               [4, 3]], dtype=int32)
    """
    aval = aval_of(a, "roll", 0)
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), aval.shape)
    axes = (
        normalize_axes("roll", axis, aval.ndim)
        if not isinstance(axis, (list, tuple))
        else tuple(normalize_axis("roll", ax, aval.ndim) for ax in axis)
    )
    if not isinstance(shift, (list, tuple)) and np.ndim(shift) == 1:
        # an array of shifts (traced or not): one per entry, as JAX (whose
        # shifts and axes broadcast against each other)
        shift_aval = aval_of(shift, "roll", 1)
        shift = [lax.reshape(lax.slice_in_dim(shift, i, i + 1, 1, 0), ())
                 for i in range(shift_aval.shape[0])]  # fmt: skip
        if len(axes) == 1:
            axes = axes * len(shift)
    shifts = shift if isinstance(shift, (list, tuple)) else [shift] * len(axes)
    if isinstance(axis, (list, tuple)) and not isinstance(shift, (list, tuple)):
        shifts = [shift] * len(axes)
    if len(shifts) == 1 and len(axes) > 1:
        shifts = list(shifts) * len(axes)
    if len(axes) == 1 and len(shifts) > 1:  # shifts and axes broadcast, as NumPy and JAX
        axes = tuple(axes) * len(shifts)
    if len(shifts) != len(axes):
        raise ValueError("roll: shift and axis must have the same length")
    for s, ax in zip(shifts, axes, strict=True):
        a = _roll_one(a, s, ax)
    return a


def _roll_one(a: Any, shift: Any, axis: int) -> Any:
    size = aval_of(a, "roll", 0).shape[axis]
    if size == 0:
        return as_array(a)
    if not is_traced(shift) and np.ndim(shift) == 0:
        s = int(np.asarray(shift)) % size
        if s == 0:
            return as_array(a)
        tail = lax.slice_in_dim(a, size - s, size, 1, axis)
        head = lax.slice_in_dim(a, 0, size - s, 1, axis)
        return lax.concatenate([tail, head], axis)
    # a traced shift: read a window of the doubled array

    s = remainder(lax.convert_element_type(shift, np.int32), asarray(size, dtype=np.int32))
    start = lax.sub(asarray(size, dtype=np.int32), s)
    doubled = lax.concatenate([a, a], axis)
    return lax.dynamic_slice_in_dim(doubled, start, size, axis)


def rot90(m: ArrayLike, k: int = 1, axes: tuple[int, int] = (0, 1)) -> Array:
    """``m`` rotated by 90 degrees ``k`` times in the plane ``axes``.

    The rotation goes from the first axis toward the second (counterclockwise
    for the default axes); a negative ``k`` rotates the other way.

    Args:
        m: An array of at least two dimensions.
        k: The number of quarter turns (a static int).
        axes: The two distinct axes of the plane of rotation.

    Returns:
        The rotated array, in ``m``'s dtype (the two sizes swapped for odd
        ``k``).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.rot90(rnp.array([[1, 2], [3, 4]]))
        Array([[2, 4],
               [1, 3]], dtype=int32)
    """
    m = checked_array("rot90", m)
    ndim = _ndim(m)
    if ndim < 2:
        raise ValueError(
            "rot90 requires its first argument to have ndim at least two, but got first "
            f"argument of shape {aval_of(m, 'rot90', 0).shape}, which has ndim {ndim}"
        )
    if len(axes) != 2:
        raise ValueError("rot90: len(axes) must be 2")
    ax0, ax1 = (normalize_axis("rot90", a, ndim) for a in axes)
    if ax0 == ax1:
        raise ValueError("rot90: axes must be different")
    k = operator.index(k) % 4
    if k == 0:
        return as_array(m)
    if k == 2:
        return flip(flip(m, ax0), ax1)
    if k == 1:
        return swapaxes(flip(m, ax1), ax0, ax1)
    return flip(swapaxes(m, ax0, ax1), ax1)


# --- products ------------------------------------------------------------------------------


def trace(
    a: ArrayLike,
    offset: int = 0,
    axis1: int = 0,
    axis2: int = 1,
    dtype: Any = None,
    out: None = None,
) -> Array:
    """The sum along a diagonal of ``a``: ``sum(diagonal(a, offset, axis1, axis2), -1)``.

    Args:
        a: An array of at least two dimensions.
        offset: Which diagonal: 0 the main one, positive above, negative below.
        axis1: The first axis of the 2-d sub-arrays.
        axis2: The second axis (a different one).
        dtype: The dtype of the sum, or None for :func:`sum`'s default.
        out: Must be None (NotImplementedError otherwise).

    Returns:
        An array of ``a``'s shape without ``axis1`` and ``axis2``.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.trace(rnp.array([[1, 2], [3, 4]]))
        Array(5, dtype=int32)
        >>> rnp.trace(rnp.arange(9).reshape(3, 3), offset=1)
        Array(6, dtype=int32)
    """
    a = checked_array("trace", a)

    if out is not None:
        raise NotImplementedError("trace: the out argument is not supported")
    ndim = aval_of(a, "trace", 0).ndim
    if normalize_axis("trace", axis1, ndim) == normalize_axis("trace", axis2, ndim):
        # JAX's words (its diagonal's error is another one)
        raise ValueError(f"axis1 and axis2 can not be same. axis1={axis1} and axis2={axis2}")
    return sum_(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


def outer(a: ArrayLike, b: ArrayLike, out: None = None) -> Array:
    """The outer product of two vectors: ``ravel(a)[:, None] * ravel(b)[None, :]``.

    The operands are promoted together first (as JAX) and flattened.

    Args:
        a: The first array (flattened).
        b: The second array (flattened).
        out: Must be None (NotImplementedError otherwise).

    Returns:
        An array of shape ``(a.size, b.size)``, in the promoted dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.outer(rnp.array([1, 2]), rnp.array([1, 10, 100]))
        Array([[  1,  10, 100],
               [  2,  20, 200]], dtype=int32)
    """
    if out is not None:
        raise NotImplementedError("outer: the out argument is not supported")
    a, b = promote_dtypes("outer", a, b)
    return multiply(expand_dims(ravel(a), 1), expand_dims(ravel(b), 0))


def inner(a: ArrayLike, b: ArrayLike, *, precision: Any = None, preferred_element_type: Any = None):
    """The inner product: the sum of products over the last axes of ``a`` and ``b``.

    A product if either is a
    scalar, of both converted to ``preferred_element_type`` when given, as
    JAX 0.10.2; otherwise :func:`tensordot` over the two last axes.

    Args:
        a: The first array.
        b: The second array; its last axis the size of ``a``'s.
        precision: The ``lax`` precision of the contraction.
        preferred_element_type: The dtype to accumulate and return in, or None.

    Returns:
        An array of shape ``a.shape[:-1] + b.shape[:-1]``.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.inner(rnp.array([1, 2, 3]), rnp.array([4, 5, 6]))
        Array(32, dtype=int32)
        >>> rnp.inner(rnp.array([[1, 2], [3, 4]]), rnp.array([1, 1]))
        Array([3, 7], dtype=int32)
    """
    aval_of(a, "inner", 0), aval_of(b, "inner", 1)  # (checked; scalars stay literals)
    if _ndim(a) == 0 or _ndim(b) == 0:
        if preferred_element_type is not None:
            dtype = canonical_dtype("inner", preferred_element_type)
            a, b = lax.convert_element_type(a, dtype), lax.convert_element_type(b, dtype)
        return multiply(a, b)
    return tensordot(
        a, b, ((-1,), (-1,)), precision=precision, preferred_element_type=preferred_element_type
    )


def vdot(a: ArrayLike, b: ArrayLike, *, precision: Any = None, preferred_element_type: Any = None):
    """The dot product of the flattened arrays, ``a`` conjugated.

    ``dot(conj(ravel(a)), ravel(b))`` (``conj`` of a complex ``a`` only).

    Args:
        a: The first array (flattened, conjugated when complex).
        b: The second array (flattened), of ``a``'s size.
        precision: The ``lax`` precision of the contraction.
        preferred_element_type: The dtype to accumulate and return in, or None.

    Returns:
        A rank-0 array.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.vdot(rnp.array([1 + 2j, 3j]), rnp.array([1, 1]))
        Array(1.-5.j, dtype=complex64)
        >>> rnp.vdot(rnp.array([[1, 2], [3, 4]]), rnp.array([[1, 1], [1, 1]]))
        Array(10, dtype=int32)
    """
    aval_of(a, "vdot", 0), aval_of(b, "vdot", 1)  # (checked; scalars stay literals)
    if dtypes.is_complex(aval_of(a, "vdot", 0).dtype):
        a = conjugate(a)
    return dot(
        ravel(a),
        ravel(b),
        precision=precision,
        preferred_element_type=preferred_element_type,
    )


def vecdot(
    x1: ArrayLike,
    x2: ArrayLike,
    /,
    *,
    axis: int = -1,
    precision: Any = None,
    preferred_element_type: Any = None,
):
    """The vector dot product along ``axis``: ``sum(conj(x1) * x2, axis)``.

    The contracted axes must have equal sizes; the other axes broadcast.
    ``axis`` counts in each operand's own dimensions.

    Args:
        x1: The first array (conjugated when complex).
        x2: The second array.
        axis: The axis to contract (keyword-only).
        precision: The ``lax`` precision of the contraction.
        preferred_element_type: The dtype to accumulate and return in, or None.

    Returns:
        An array of the broadcast shape of the other axes.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.vecdot(rnp.array([[1, 2], [3, 4]]), rnp.array([1, 1]))
        Array([3, 7], dtype=int32)
        >>> rnp.vecdot(rnp.array([1j, 1]), rnp.array([1j, 1]))
        Array(2.+0.j, dtype=complex64)
    """

    # the contracted axes must match (JAX 0.10.2's ValueError), before broadcasting
    s1, s2 = aval_of(x1, "vecdot", 0).shape, aval_of(x2, "vecdot", 1).shape
    if s1[normalize_axis("vecdot", axis, len(s1))] != s2[normalize_axis("vecdot", axis, len(s2))]:
        raise ValueError(f"axes must match; got shapes {s1} and {s2} with axis={axis}")
    # axis counts in each operand's own dimensions (x1 (4, 1, 3) and x2 (4,)
    # with axis=0 contract the 4s), so it moves before the rest broadcast
    # no promotion first: the einsum's dot_general takes both dtypes (as JAX's vdot)
    x1, x2 = moveaxis(x1, axis, -1), moveaxis(x2, axis, -1)
    # the other dimensions broadcast (lax.broadcast_shapes' error, as JAX's)
    lax.broadcast_shapes(aval_of(x1, "vecdot", 0).shape[:-1], aval_of(x2, "vecdot", 1).shape[:-1])
    if dtypes.is_complex(aval_of(x1, "vecdot", 0).dtype):
        x1 = conjugate(x1)
    return einsum(
        "...i,...i->...",
        x1,
        x2,
        precision=precision,
        preferred_element_type=preferred_element_type,
    )


def tensordot(
    a: ArrayLike,
    b: ArrayLike,
    axes: Any = 2,
    *,
    precision: Any = None,
    preferred_element_type: Any = None,
) -> Array:
    """The tensor contraction of ``a`` and ``b``: the sum of products over ``axes``.

    ``axes`` is an int ``n`` (the last ``n`` of ``a`` with
    the first ``n`` of ``b``) or a pair of axis sequences. One ``dot_general``
    taking both operands' dtypes (as ``dot``).

    Args:
        a: The first array.
        b: The second array.
        axes: A Python int ``n``, a pair of ints, or a pair of equal-length
            sequences of axes of ``a`` and ``b``.
        precision: The ``lax`` precision of the contraction.
        preferred_element_type: The dtype to accumulate and return in, or None.

    Returns:
        An array of ``a``'s uncontracted axes followed by ``b``'s.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.tensordot(rnp.ones((2, 3, 4)), rnp.ones((3, 4, 5))).shape
        (2, 5)
        >>> rnp.tensordot(rnp.array([1, 2]), rnp.array([3, 4]), axes=0)
        Array([[3, 4],
               [6, 8]], dtype=int32)
    """
    aval_of(a, "tensordot", 0), aval_of(b, "tensordot", 1)  # (checked; scalars stay literals)
    dtype, weak = product_type("tensordot", (a, b), preferred_element_type)
    na, nb = _ndim(a), _ndim(b)
    # JAX's forms and words: a Python int (exactly: not a NumPy int or a
    # bool), a pair of ints, or a pair of lists/tuples of equal length
    if type(axes) is int:
        if axes > min(na, nb):
            shapes = (aval_of(a, "tensordot", 0).shape, aval_of(b, "tensordot", 1).shape)
            raise TypeError(
                f"Number of tensordot axes (axes {axes}) exceeds input ranks "
                f"({shapes[0]} and {shapes[1]})"
            )
        a_axes, b_axes = tuple(range(na - axes, na)), tuple(range(axes))
    elif isinstance(axes, (tuple, list)) and len(axes) == 2:
        first, second = axes
        if type(first) is int and type(second) is int:
            first, second = [first], [second]
        elif not (isinstance(first, (tuple, list)) and isinstance(second, (tuple, list))):
            raise TypeError(
                "tensordot requires both axes lists to be either ints, tuples or lists, "
                f"got {first} and {second}"
            )
        elif len(first) != len(second):
            raise TypeError(
                f"tensordot requires axes lists to have equal length, got {first} and {second}."
            )
        a_axes = tuple(normalize_axis("tensordot", x, na) for x in first)
        b_axes = tuple(normalize_axis("tensordot", x, nb) for x in second)
    else:
        raise TypeError(
            "tensordot axes argument must be an int, a pair of ints, or a pair of "
            "lists/tuples of ints."
        )

    product = _contract("tensordot", a, b, ((a_axes, b_axes), ((), ())), precision, dtype)
    return with_type(product, dtype, weak)


def kron(a: ArrayLike, b: ArrayLike) -> Array:
    """The Kronecker product of ``a`` and ``b``: blocks of ``b`` scaled by ``a``.

    ``out[i*B + k, j*D + l] = a[i, j] * b[k, l]``
    (generalized to any rank; the lower rank gets leading unit dims). The
    operands are promoted together; a bool product is a TypeError, as JAX's.

    Args:
        a: The first array.
        b: The second array.

    Returns:
        An array whose shape is the product of the (rank-aligned) shapes.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.kron(rnp.array([1, 10]), rnp.array([1, 2, 3]))
        Array([ 1,  2,  3, 10, 20, 30], dtype=int32)
    """
    a, b = promote_dtypes("kron", a, b)
    na, nb = _ndim(a), _ndim(b)
    n = max(na, nb)
    a = reshape(a, (1,) * (n - na) + aval_of(a, "kron", 0).shape)
    b = reshape(b, (1,) * (n - nb) + aval_of(b, "kron", 1).shape)
    sa, sb = aval_of(a, "kron", 0).shape, aval_of(b, "kron", 1).shape
    a_exp = reshape(a, tuple(x for d in sa for x in (d, 1)))
    b_exp = reshape(b, tuple(x for d in sb for x in (1, d)))
    ea, eb = aval_of(a_exp, "kron", 0).shape, aval_of(b_exp, "kron", 1).shape
    # each pair is (n, 1) or (1, n): n is the size, 0 included (max would make it 1)
    grid = tuple(y if x == 1 else x for x, y in zip(ea, eb, strict=True))
    # lax.mul, as JAX's: a bool product is its TypeError, not an elementwise and
    product = lax.mul(broadcast_to(a_exp, grid), broadcast_to(b_exp, grid))
    return reshape(product, tuple(x * y for x, y in zip(sa, sb, strict=True)))


def cross(
    a: ArrayLike, b: ArrayLike, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis: Any = None
):
    """The cross product of 3-vectors along the vector axes of ``a`` and ``b``.

    2-vectors get a zero third component; two 2-vectors give the scalar z
    component. The operands are promoted together and the other axes broadcast.

    Args:
        a: The first vectors (their components along ``axisa``).
        b: The second vectors (their components along ``axisb``).
        axisa: The vector axis of ``a``.
        axisb: The vector axis of ``b``.
        axisc: The vector axis of the result.
        axis: If given, used for all three axes.

    Returns:
        The cross products (the z components for two 2-vectors).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.cross(rnp.array([1, 0, 0]), rnp.array([0, 1, 0]))
        Array([0, 0, 1], dtype=int32)
        >>> rnp.cross(rnp.array([1, 2]), rnp.array([3, 4]))
        Array(-2, dtype=int32)
    """
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = promote_dtypes("cross", a, b)
    a, b = moveaxis(a, axisa, -1), moveaxis(b, axisb, -1)
    da, db = aval_of(a, "cross", 0).shape[-1], aval_of(b, "cross", 1).shape[-1]
    if da not in (2, 3) or db not in (2, 3):
        raise ValueError(
            "cross: incompatible dimensions for cross product (dimension must be 2 or 3)"
        )
    a0, a1 = a[..., 0], a[..., 1]
    b0, b1 = b[..., 0], b[..., 1]
    if da == 2 and db == 2:
        return subtract(multiply(a0, b1), multiply(a1, b0))
    # a missing third component is zero
    a2 = a[..., 2] if da == 3 else multiply(a0, 0)
    b2 = b[..., 2] if db == 3 else multiply(b0, 0)
    c0 = subtract(multiply(a1, b2), multiply(a2, b1))
    c1 = subtract(multiply(a2, b0), multiply(a0, b2))
    c2 = subtract(multiply(a0, b1), multiply(a1, b0))
    return moveaxis(stack(promote_args("cross", c0, c1, c2), -1), -1, axisc)


# --- differences and convolutions ------------------------------------------------------------


def diff(
    a: ArrayLike, n: int = 1, axis: int = -1, prepend: Any = None, append: Any = None
) -> Array:
    """The ``n``-th discrete difference along ``axis``: ``a[1:] - a[:-1]``, ``n`` times.

    Bool arrays compare instead (``a[1:] != a[:-1]``). ``n == 0`` returns ``a``
    as it is.

    Args:
        a: The input array, of at least one dimension.
        n: How many times to difference (a non-negative static int).
        axis: The axis to difference along.
        prepend: Values put before ``a`` along ``axis`` first (a scalar is
            broadcast to one slice).
        append: Values put after ``a`` along ``axis`` first.

    Returns:
        An array of ``a``'s shape with ``axis`` ``n`` shorter (after the
        prepended and appended values), in ``a``'s dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.diff(rnp.array([1, 4, 9, 16]))
        Array([3, 5, 7], dtype=int32)
        >>> rnp.diff(rnp.array([1, 4, 9, 16]), n=2)
        Array([2, 2], dtype=int32)
    """
    a = checked_array("diff", a)
    n = operator.index(n)
    if n == 0:  # as JAX: a as it is (prepend, append and axis unused, any rank)
        return a
    ndim = _ndim(a)
    if ndim == 0:
        raise ValueError("diff: requires input that is at least one dimensional")
    axis = normalize_axis("diff", axis, ndim)
    if n < 0:
        raise ValueError(f"diff: order must be non-negative, got {n}")
    parts: list[Any] = []
    for extra in (prepend, append):
        if extra is None:
            parts.append(None)
            continue
        extra = checked_array("diff", extra)
        if _ndim(extra) == 0:
            shape = list(aval_of(a, "diff", 0).shape)
            shape[axis] = 1

            extra = broadcast_to(extra, tuple(shape))
        parts.append(extra)
    pieces = [p for p in (parts[0], a, parts[1]) if p is not None]
    if len(pieces) > 1:
        a = concatenate(pieces, axis=axis)
    for _ in range(n):
        size = aval_of(a, "diff", 0).shape[axis]
        if size == 0:
            break
        upper = lax.slice_in_dim(a, 1, size, 1, axis)
        lower = lax.slice_in_dim(a, 0, size - 1, 1, axis)
        if dtypes.is_bool(aval_of(a, "diff", 0).dtype):
            a = lax.ne(upper, lower)
        else:
            a = lax.sub(upper, lower)
    return as_array(a)


def ediff1d(ary: ArrayLike, to_end: Any = None, to_begin: Any = None) -> Array:
    """The differences of consecutive elements of the flattened array.

    ``diff(ravel(ary))`` with ``to_begin``/``to_end`` attached (in ``ary``'s
    dtype); bool input is a TypeError.

    Args:
        ary: The input array (flattened).
        to_end: An array or scalar appended to the differences, or None.
        to_begin: An array or scalar put before the differences, or None.

    Returns:
        A 1-d array in ``ary``'s dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.ediff1d(rnp.array([1, 4, 9]))
        Array([3, 5], dtype=int32)
        >>> rnp.ediff1d(rnp.array([1, 4, 9]), to_begin=rnp.array([0]), to_end=rnp.array([100]))
        Array([  0,   3,   5, 100], dtype=int32)
    """
    ary = checked_array("ediff1d", ary)
    if dtypes.is_bool(aval_of(ary, "ediff1d", 0).dtype):
        # JAX (and NumPy) subtract, which bools do not support (diff compares them)
        raise TypeError("ediff1d: bool input is not supported (subtract of bools)")
    result = diff(ravel(ary))
    dtype = aval_of(result, "ediff1d", 0).dtype
    pieces = []
    # arrays or scalars only (a list is JAX's TypeError too)
    if to_begin is not None:
        to_begin = checked_array("ediff1d", to_begin, "to_begin")
        pieces.append(ravel(asarray(to_begin, dtype=dtype)))
    pieces.append(result)
    if to_end is not None:
        to_end = checked_array("ediff1d", to_end, "to_end")
        pieces.append(ravel(asarray(to_end, dtype=dtype)))
    return concatenate(pieces) if len(pieces) > 1 else result


def _conv1d(name: str, a: Any, v: Any, mode: str, precision: Any, preferred: Any) -> Any:
    """``out[k] = sum_i a[k + i - pad_lo] v[i]`` (a correlation, as
    ``conv_general_dilated`` computes it), padded for ``mode``."""
    na, nv = aval_of(a, name, 0).shape[0], aval_of(v, name, 1).shape[0]
    if mode == "valid":
        pad = (0, 0)
    elif mode == "same":
        pad = (nv // 2, nv - 1 - nv // 2)
    elif mode == "full":
        pad = (nv - 1, nv - 1)
    else:
        raise ValueError(f"{name}: mode must be one of 'full', 'same', 'valid', got {mode!r}")
    lhs, rhs = reshape(a, (1, 1, na)), reshape(v, (1, 1, nv))
    out = lax.conv_general_dilated(
        lhs, rhs, (1,), [pad], precision=precision, preferred_element_type=preferred
    )
    return reshape(out, (-1,))


def _conv_operands(name: str, a: Any, v: Any, preferred: Any = None) -> tuple[Any, Any]:
    # with preferred_element_type the operands only join (integers stay
    # integers, as jnp); without it they compute in the inexact dtype
    if preferred is None:
        a, v = promote_dtypes_inexact(name, a, v)
    else:
        a, v = promote_dtypes(name, a, v)
    if _ndim(a) != 1 or _ndim(v) != 1:
        raise ValueError(f"{name}: only 1-d arguments are supported")
    if aval_of(a, name, 0).shape[0] == 0 or aval_of(v, name, 1).shape[0] == 0:
        raise ValueError(f"{name}: inputs cannot be empty")
    if dtypes.is_bool(aval_of(a, name, 0).dtype):
        raise TypeError(f"{name}: bool inputs are not supported")
    return a, v


def convolve(
    a: ArrayLike,
    v: ArrayLike,
    mode: str = "full",
    *,
    precision: Any = None,
    preferred_element_type: Any = None,
) -> Array:
    """The discrete linear convolution of two 1-d arrays: ``out[k] = sum_i a[i] v[k - i]``.

    The longer one slides; ``mode`` as in NumPy. Without
    ``preferred_element_type`` the operands compute in their inexact dtype
    (integers give floats, unlike NumPy); with it they only join. Empty and
    bool inputs are errors.

    Args:
        a: The first 1-d array.
        v: The second 1-d array.
        mode: ``"full"`` (every overlap, length ``n + m - 1``), ``"same"``
            (length ``max(n, m)``, centered) or ``"valid"`` (full overlaps
            only, length ``max(n, m) - min(n, m) + 1``).
        precision: The ``lax`` precision of the convolution.
        preferred_element_type: The dtype to accumulate and return in, or None.

    Returns:
        A 1-d array of the length ``mode`` says.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.convolve(rnp.array([1, 2, 3]), rnp.array([0, 1, 0.5]))
        Array([0. , 1. , 2.5, 4. , 1.5], dtype=float32)
        >>> rnp.convolve(rnp.array([1, 2, 3]), rnp.array([0, 1, 0.5]), mode="same")
        Array([1. , 2.5, 4. ], dtype=float32)
    """
    a, v = _conv_operands("convolve", a, v, preferred_element_type)
    if aval_of(a, "convolve", 0).shape[0] < aval_of(v, "convolve", 1).shape[0]:
        a, v = v, a
    return _conv1d("convolve", a, flip(v, 0), mode, precision, preferred_element_type)


def correlate(
    a: ArrayLike,
    v: ArrayLike,
    mode: str = "valid",
    *,
    precision: Any = None,
    preferred_element_type: Any = None,
) -> Array:
    """The cross-correlation of two 1-d arrays: ``out[k] = sum_n a[n + k] conj(v[n])``.

    Promotion and ``mode`` are as in :func:`convolve` (but ``"valid"`` is the
    default); when ``v`` is the longer one, the result is that of the swapped
    operands reversed and conjugated, as NumPy's.

    Args:
        a: The first 1-d array.
        v: The second 1-d array (conjugated when complex).
        mode: ``"valid"``, ``"same"`` or ``"full"``.
        precision: The ``lax`` precision of the convolution.
        preferred_element_type: The dtype to accumulate and return in, or None.

    Returns:
        A 1-d array of the length ``mode`` says.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.correlate(rnp.array([1.0, 2.0, 3.0]), rnp.array([0.0, 1.0, 0.5]))
        Array([3.5], dtype=float32)
        >>> rnp.correlate(rnp.array([1.0, 2.0, 3.0]), rnp.array([0.0, 1.0, 0.5]), mode="full")
        Array([0.5, 2. , 3.5, 3. , 0. ], dtype=float32)
    """

    a, v = _conv_operands("correlate", a, v, preferred_element_type)
    if aval_of(a, "correlate", 0).shape[0] < aval_of(v, "correlate", 1).shape[0]:
        # correlate(a, v) is correlate(v, a) reversed and conjugated
        out = _conv1d("correlate", v, conjugate(a), mode, precision, preferred_element_type)
        return conjugate(flip(out, 0))
    return _conv1d("correlate", a, conjugate(v), mode, precision, preferred_element_type)


# --- interp, histogram ----------------------------------------------------------------------


def interp(
    x: ArrayLike,
    xp: ArrayLike,
    fp: ArrayLike,
    left: Any = None,
    right: Any = None,
    period: Any = None,
):
    """One-dimensional linear interpolation of the table ``(xp, fp)`` at ``x``.

    Piecewise-linear interpolation of ``(xp, fp)`` at ``x`` (``xp`` increasing);
    ``left``/``right`` (default ``fp[0]``/``fp[-1]``, ``"extrapolate"`` continues
    the end segments) outside ``[xp[0], xp[-1]]``.

    As JAX's: ``x`` and ``xp`` are promoted together and ``fp`` alone (so ``fp``
    may be complex), the result has their common type, and a segment no wider
    than the spacing of epsilon reads its left value. ``period`` takes
    ``x`` and ``xp`` modulo ``|period|``, sorts ``xp`` (``fp`` along) and closes
    the table with its last point one period left and its first one period
    right; ``left``/``right`` are then unused.

    Args:
        x: The points to evaluate at (not complex).
        xp: The increasing x coordinates of the table, 1-d.
        fp: The values of the table, 1-d like ``xp``.
        left: The value for ``x < xp[0]``, or ``"extrapolate"``.
        right: The value for ``x > xp[-1]``, or ``"extrapolate"``.
        period: The period of a periodic ``xp``, or None.

    Returns:
        An array of ``x``'s shape, in the inexact dtype ``fp`` promotes to
        with ``x`` and ``xp``.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> xp, fp = rnp.array([0.0, 1.0, 2.0]), rnp.array([0.0, 10.0, 20.0])
        >>> rnp.interp(rnp.array([0.5, 1.5, 3.0]), xp, fp)
        Array([ 5., 15., 20.], dtype=float32)
    """

    for value, what in [(left, "left"), (right, "right")]:
        if isinstance(value, str) and value != "extrapolate":
            raise ValueError(
                f"the only valid string value of `{what}` is 'extrapolate', but got: {value!r}"
            )
    x_aval, xp_aval, fp_aval = (aval_of(v, "interp", i) for i, v in enumerate([x, xp, fp]))
    if xp_aval.ndim != 1 or fp_aval.shape != xp_aval.shape:
        raise ValueError("xp and fp must be one-dimensional arrays of equal size")
    x, xp = (as_array(v) for v in promote_dtypes_inexact("interp", x, xp))
    fp = as_array(promote_dtypes_inexact("interp", fp)[0])
    if dtypes.is_complex(aval_of(x, "interp", 0).dtype):
        raise ValueError("jnp.interp: complex x values not supported.")
    if period is not None:
        if np.ndim(period) != 0:
            raise ValueError(f"period must be a scalar; got {period!r}")
        period = abs(asarray(period)) if not isinstance(period, (int, float)) else abs(period)
        x, xp = remainder(x, period), remainder(xp, period)
        xp, fp = lax.sort_key_val(xp, fp)
        xp = concatenate([xp[-1:] - period, xp, xp[:1] + period])
        fp = concatenate([fp[-1:], fp, fp[:1]])
    n = aval_of(xp, "interp", 1).shape[0]
    if n == 0:
        raise ValueError("interp: xp and fp must be non-empty")
    i = clip(searchsorted(xp, x, side="right"), 1, n - 1)
    df = fp[i] - fp[i - 1]
    dx = xp[i] - xp[i - 1]
    delta = x - xp[i - 1]
    # JAX's threshold: a segment this narrow would give NaN or huge gradients
    epsilon = np.spacing(np.finfo(aval_of(xp, "interp", 1).dtype).eps)
    narrow = lax.abs(dx) <= epsilon
    out = where(narrow, fp[i - 1], fp[i - 1] + (delta / where(narrow, 1, dx)) * df)
    if period is None:
        if not isinstance(left, str):
            out = where(x < xp[0], fp[0] if left is None else left, out)
        if not isinstance(right, str):
            out = where(x > xp[-1], fp[-1] if right is None else right, out)
    return out


def histogram_bin_edges(
    a: ArrayLike, bins: Any = 10, range: Any = None, weights: Any = None
) -> Array:  # noqa: A002
    """The bin edges :func:`histogram` uses for ``a`` and ``bins``.

    ``bins + 1`` evenly spaced edges over ``range`` (default ``[min(a), max(a)]``,
    widened by 0.5 each way when empty), or ``bins`` itself if it is 1-d; in
    ``a``'s inexact dtype either way (integer edges become floats, as JAX).

    Args:
        a: The data (flattened).
        bins: A number of equal bins, or the edges (1-d, increasing).
        range: ``(lo, hi)``, the span of the equal bins, or None.
        weights: Accepted and ignored.

    Returns:
        A 1-d float array of the edges.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.histogram_bin_edges(rnp.array([1, 2, 3, 5]), bins=4)
        Array([1., 2., 3., 4., 5.], dtype=float32)
    """
    a = checked_array("histogram_bin_edges", a)

    del weights
    (a,) = promote_dtypes_inexact("histogram", ravel(a))
    dtype = aval_of(a, "histogram", 0).dtype
    if not isinstance(bins, (int, np.integer)):
        bins = asarray(bins)
        if aval_of(bins, "histogram_bin_edges", "bins").ndim == 1:
            return lax.convert_element_type(bins, dtype)
        bins = operator.index(require_concrete("histogram_bin_edges", "bins", bins))
    if range is None:
        lo, hi = min_(a), max_(a)
    else:
        lo, hi = asarray(range[0], dtype=dtype), asarray(range[1], dtype=dtype)
    equal = lax.eq(lo, hi)
    half = asarray(0.5, dtype=dtype)
    lo = lax.select(equal, lax.sub(lo, half), lo)
    hi = lax.select(equal, lax.add(hi, half), hi)
    return linspace(lo, hi, int(bins) + 1, dtype=dtype)


def histogram(
    a: ArrayLike,
    bins: Any = 10,
    range: Any = None,  # noqa: A002
    weights: Any = None,
    density: Any = None,
) -> tuple[Array, Array]:
    """The histogram of ``a``: ``(counts, edges)``.

    The (weighted) number of elements of ``a`` in each bin
    ``[edges[i], edges[i+1])``, the last bin closed; ``density`` divides by the
    total and the bin widths. Elements outside the edges are not counted. The
    counts are floats, as JAX's (NumPy counts in integers unless weighted).

    Args:
        a: The data (flattened).
        bins: A number of equal bins, or the edges (1-d, increasing).
        range: ``(lo, hi)``, the span of the equal bins, or None for
            ``[min(a), max(a)]``.
        weights: An array of ``a``'s shape weighting each element, or None.
        density: Whether to normalize the counts to a probability density.

    Returns:
        A pair ``(counts, edges)`` of 1-d float arrays, ``edges`` one longer.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.histogram(rnp.array([1, 2, 2, 3, 5]), bins=4)
        (Array([1., 2., 1., 1.], dtype=float32), Array([1., 2., 3., 4., 5.], dtype=float32))
    """

    a = checked_array("histogram", a)
    if weights is not None:  # the counts are in the dtype a and weights join to, as JAX
        weights = checked_array("histogram", weights)
        if aval_of(weights, "histogram", "weights").shape != aval_of(a, "histogram", 0).shape:
            raise ValueError("histogram: weights should have the same shape as a")
        a, weights = promote_dtypes_inexact("histogram", a, weights)
    edges = histogram_bin_edges(a, bins, range)
    (flat,) = promote_dtypes_inexact("histogram", ravel(a))
    dtype = aval_of(flat, "histogram", 0).dtype
    edges = lax.convert_element_type(edges, dtype)
    nbins = aval_of(edges, "histogram", 0).shape[0] - 1
    index = lax.sub(searchsorted(edges, flat, side="right"), asarray(1, dtype=np.int32))
    index = where(flat == edges[-1], nbins - 1, index)  # the last bin includes its right edge
    inside = (flat >= edges[0]) & (flat <= edges[-1])
    w = asarray(1, dtype=dtype) if weights is None else ravel(weights)
    w = where(inside, w, 0)
    # (n, 1) against (1, nbins): both rank 2, no rank promotion (a mode of "raise" allows it)
    onehot = expand_dims(index, 1) == lax.broadcasted_iota(np.int32, (1, nbins), 1)
    counts = sum_(where(onehot, expand_dims(w, 1), 0), axis=0)
    if density:
        widths = edges[1:] - edges[:-1]
        counts = counts / (sum_(counts) * widths)
    return counts, edges


__all__ = [
    "append", "array_split", "atleast_1d", "atleast_2d", "atleast_3d", "column_stack",
    "convolve", "correlate", "cross", "diff", "dsplit", "dstack", "ediff1d", "fliplr", "flipud",
    "histogram", "histogram_bin_edges", "hsplit", "hstack", "inner", "interp", "kron",
    "matrix_transpose", "outer", "permute_dims", "roll", "rot90", "tensordot",
    "trace", "unstack", "vdot", "vecdot", "vsplit", "vstack",
]  # fmt: skip
