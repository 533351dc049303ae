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
    """Each input with at least one dim (a scalar becomes shape ``(1,)``)."""
    return _atleast("atleast_1d", arys, lambda a: reshape(a, (1,)) if _ndim(a) == 0 else a)


def atleast_2d(*arys: ArrayLike) -> Any:
    """Each input with at least two dims (``(n,)`` becomes ``(1, n)``)."""

    def fix(a: Any) -> Any:
        return lax.expand_dims(a, tuple(range(2 - _ndim(a)))) if _ndim(a) < 2 else a

    return _atleast("atleast_2d", arys, fix)


def atleast_3d(*arys: ArrayLike) -> Any:
    """Each input with at least three dims: ``()`` -> ``(1, 1, 1)``, ``(n,)`` ->
    ``(1, n, 1)``, ``(m, n)`` -> ``(m, n, 1)``."""

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
    """Concatenate along axis 1 (axis 0 for 1-d inputs)."""
    arrays = [atleast_1d(a) for a in _sequence("hstack", tup)]
    axis = 0 if arrays and _ndim(arrays[0]) == 1 else 1
    return concatenate(arrays, axis=axis, dtype=dtype)


def vstack(tup: Any, dtype: Any = None) -> Array:
    """Concatenate ``atleast_2d`` of each along axis 0."""
    return concatenate([atleast_2d(a) for a in _sequence("vstack", tup)], axis=0, dtype=dtype)


def dstack(tup: Any, dtype: Any = None) -> Array:
    """Concatenate ``atleast_3d`` of each along axis 2."""
    return concatenate([atleast_3d(a) for a in _sequence("dstack", tup)], axis=2, dtype=dtype)


def column_stack(tup: Any) -> Array:
    """1-d inputs become columns; then concatenate along axis 1."""
    arrays = []
    for a in _sequence("column_stack", tup):
        arrays.append(reshape(a, (-1, 1)) if _ndim(a) < 2 else a)
    return concatenate(arrays, axis=1)


def array_split(ary: ArrayLike, indices_or_sections: Any, axis: int = 0) -> list[Array]:
    """Like :func:`split`, but ``n`` sections need not divide the size: the first
    ``size % n`` parts get one extra element."""
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
    """Split along axis 1 (axis 0 for 1-d)."""
    return split(ary, indices_or_sections, _split_axis("hsplit", ary, 0 if _ndim(ary) == 1 else 1))


def vsplit(ary: ArrayLike, indices_or_sections: Any) -> list[Array]:
    """Split along axis 0."""
    return split(ary, indices_or_sections, _split_axis("vsplit", ary, 0))


def dsplit(ary: ArrayLike, indices_or_sections: Any) -> list[Array]:
    """Split along axis 2."""
    return split(ary, indices_or_sections, _split_axis("dsplit", ary, 2))


def append(arr: ArrayLike, values: ArrayLike, axis: int | None = None) -> Array:
    """``concatenate([arr, values], axis)`` (both flattened when ``axis`` is None)."""
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], axis=0)
    return concatenate([arr, values], axis=axis)


def unstack(x: ArrayLike, /, *, axis: int = 0) -> tuple[Array, ...]:
    """The slices of ``x`` along ``axis``."""
    aval = aval_of(x, "unstack", 0)
    axis = normalize_axis("unstack", axis, aval.ndim)
    return tuple(lax.index_in_dim(x, i, axis, keepdims=False) for i in range(aval.shape[axis]))


def fliplr(m: ArrayLike) -> Array:
    """Reverse axis 1."""
    m = checked_array("fliplr", m)
    return flip(m, 1)


def flipud(m: ArrayLike) -> Array:
    """Reverse axis 0."""
    m = checked_array("flipud", m)
    return flip(m, 0)


def permute_dims(a: ArrayLike, /, axes: Sequence[int]) -> Array:
    """The array-API's transpose: ``axes`` must be a permutation of
    ``range(ndim)`` (no negative axes: jnp hands them to lax.transpose)."""
    a = checked_array("permute_dims", a)
    return lax.transpose(a, tuple(operator.index(i) for i in axes))


def matrix_transpose(x: ArrayLike, /) -> Array:
    """Swap the last two axes."""
    x = checked_array("matrix_transpose", x)
    if _ndim(x) < 2:
        raise ValueError(f"matrix_transpose: x must be at least 2-d, got {_ndim(x)}-d")
    return swapaxes(x, -1, -2)


# --- roll, rot90 -------------------------------------------------------------------------


def roll(a: ArrayLike, shift: Any, axis: Any = None) -> Array:
    """Elements shifted by ``shift`` along ``axis`` (of the flattened array when
    None), wrapping around: ``out[(i + shift) % n] = a[i]``."""
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
    """Rotate by 90 degrees ``k`` times in the plane ``axes`` (from the first
    axis toward the second)."""
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
    """``sum(diagonal(a, offset, axis1, axis2), -1)``."""
    a = checked_array("trace", a)

    if out is not None:
        raise NotImplementedError("trace: the out argument is not supported")
    ndim = aval_of(a, "trace", 0).ndim
    if normalize_axis("trace", axis1, ndim) == normalize_axis("trace", axis2, ndim):
        # JAX's words (its diagonal's error is another one)
        raise ValueError(f"axis1 and axis2 can not be same. axis1={axis1} and axis2={axis2}")
    return sum_(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


def outer(a: ArrayLike, b: ArrayLike, out: None = None) -> Array:
    """``ravel(a)[:, None] * ravel(b)[None, :]``, the operands promoted first (as JAX)."""
    if out is not None:
        raise NotImplementedError("outer: the out argument is not supported")
    a, b = promote_dtypes("outer", a, b)
    return multiply(expand_dims(ravel(a), 1), expand_dims(ravel(b), 0))


def inner(a: ArrayLike, b: ArrayLike, *, precision: Any = None, preferred_element_type: Any = None):
    """Sum over the last axes of ``a`` and ``b`` (a product if either is a
    scalar, of both converted to ``preferred_element_type`` when given, as
    JAX 0.10.2)."""
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
    """``dot(conj(ravel(a)), ravel(b))`` (``conj`` of a complex ``a`` only)."""
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
    """``sum(conj(x1) * x2, axis)`` with the other axes broadcast."""

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
    """Sum of products over ``axes``: an int ``n`` (the last ``n`` of ``a`` with
    the first ``n`` of ``b``) or a pair of axis sequences. One ``dot_general``
    taking both operands' dtypes (as ``dot``)."""
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
    """The Kronecker product: ``out[i*B + k, j*D + l] = a[i, j] * b[k, l]``
    (generalized to any rank; the lower rank gets leading unit dims)."""
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
    """The cross product of 3-vectors (2-vectors get a zero third component; two
    2-vectors give the scalar z component)."""
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
    """The ``n``-th difference ``a[1:] - a[:-1]`` along ``axis`` (bool: ``!=``)."""
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
    """``diff(ravel(ary))`` with ``to_begin``/``to_end`` attached (in ``ary``'s dtype)."""
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
    """Discrete linear convolution ``out[k] = sum_i a[i] v[k - i]`` of 1-d arrays
    (the longer one slides; ``mode`` as in NumPy)."""
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
    """Cross-correlation ``out[k] = sum_n a[n + k] conj(v[n])`` of 1-d arrays."""

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
    """Piecewise-linear interpolation of ``(xp, fp)`` at ``x`` (``xp`` increasing);
    ``left``/``right`` (default ``fp[0]``/``fp[-1]``, ``"extrapolate"`` continues
    the end segments) outside ``[xp[0], xp[-1]]``.

    As JAX's: ``x`` and ``xp`` are promoted together and ``fp`` alone (so ``fp``
    may be complex), the result has their common type, and a segment no wider
    than the spacing of epsilon reads its left value. ``period`` takes
    ``x`` and ``xp`` modulo ``|period|``, sorts ``xp`` (``fp`` along) and closes
    the table with its last point one period left and its first one period
    right; ``left``/``right`` are then unused."""

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
    """``bins + 1`` evenly spaced edges over ``range`` (default ``[min(a), max(a)]``,
    widened by 0.5 each way when empty), or ``bins`` itself if it is 1-d; in
    ``a``'s inexact dtype either way (integer edges become floats, as JAX)."""
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
    """(counts, edges): the (weighted) number of elements of ``a`` in each bin
    ``[edges[i], edges[i+1])``, the last bin closed; ``density`` divides by the
    total and the bin widths."""

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
