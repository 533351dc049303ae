"""NumPy-style array functions for the programs that primitives' rules build:
the decompositions' composite lowerings and derivatives, ``top_k``'s.

They are written with the primitives' binders because the numpy layer sits
above the primitives (docs/layers.md). Each does what the ``refimpl.numpy``
function of the same name does for the operands those rules pass it (real
or complex floating arrays, Python scalars, int32 index arrays): JAX's
promotion of the operands' dtypes (weak types included), NumPy broadcasting,
the same primitives in the same order, so a program built with them computes
the same values. They check nothing a rule could get wrong: the rules call
them with operands their own shape rules have checked.

Operators (``x + y``, ``x[..., 0]``, ``x.astype``) keep working on the
arrays and tracers they return: those are the array types' own methods.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from refimpl import dtypes, tracing
from refimpl.primitives import complex_parts, control_flow, indexing, linalg, reductions, structural
from refimpl.primitives import elementwise as ew
from refimpl.primitives.base import normalize_axis

_INT = np.dtype(np.int32)

# the loops and index helpers the programs use, as lax names them
fori_loop = control_flow.fori_loop
while_loop = control_flow.while_loop
broadcasted_iota = structural.broadcasted_iota
dynamic_slice_in_dim = indexing.dynamic_slice_in_dim
dynamic_update_slice_in_dim = indexing.dynamic_update_slice_in_dim


def _aval(x: Any) -> Any:
    return tracing.get_aval(x, "composite_ops", 0)


def _scalar(value: Any, dtype: np.dtype, weak: bool = False) -> tracing.TypedScalar:
    return tracing.TypedScalar(value, np.dtype(dtype), weak)


def _to(x: Any, dtype: np.dtype, weak: bool) -> Any:
    """``x`` as ``dtype`` with weak flag ``weak`` (no equation when nothing changes)."""
    aval = _aval(x)
    if aval.dtype == dtype and aval.weak_type == weak:
        return x
    if dtypes.is_python_scalar(x):
        return tracing.TypedScalar(x, dtype, weak)
    return ew.convert_element_type(x, dtype, weak_type=weak)


def _promote(*args: Any, inexact: bool = False) -> list[Any]:
    """The operands at their joined dtype (JAX's lattice, weak types), moved to
    the default float if ``inexact`` and the join is bool or integer."""
    avals = [_aval(a) for a in args]
    dtype, weak = dtypes.result_type(*[(av.dtype, av.weak_type) for av in avals])
    if inexact and not dtypes.is_inexact(dtype):
        dtype = dtypes.weak_default_dtype("f")
    return [_to(a, dtype, weak) for a in args]


def _broadcast(x: Any, shape: tuple[int, ...]) -> Any:
    """Right-aligned NumPy broadcast of ``x`` to ``shape``."""
    from_shape = _aval(x).shape
    if tuple(from_shape) == tuple(shape):
        return x
    lead = len(shape) - len(from_shape)
    return structural.broadcast_in_dim(x, shape, tuple(range(lead, len(shape))))


def _shape_of_all(*args: Any) -> tuple[int, ...]:
    return tuple(np.broadcast_shapes(*(_aval(a).shape for a in args)))


# --- elementwise -----------------------------------------------------------------------------


def where(condition: Any, x: Any, y: Any) -> Any:
    """``x`` where ``condition`` (bool) else ``y``, promoted and broadcast together."""
    x, y = _promote(x, y)
    shape = _shape_of_all(condition, x, y)
    return ew.select(_broadcast(condition, shape), _broadcast(x, shape), _broadcast(y, shape))


def sqrt(x: Any) -> Any:
    (x,) = _promote(x, inexact=True)
    return ew.sqrt(x)


def abs(x: Any) -> Any:  # noqa: A001 (numpy's name)
    return ew.abs(x)


def isnan(x: Any) -> Any:
    return ew.ne(x, x)


def _isinf(x: Any) -> Any:
    return ew.eq(ew.abs(x), _scalar(np.inf, _aval(x).dtype, _aval(x).weak_type))


def hypot(x1: Any, x2: Any) -> Any:
    """``sqrt(x1^2 + x2^2)`` without overflow, as ``refimpl.numpy.hypot``."""
    x1, x2 = _promote(x1, x2, inexact=True)
    shape = _shape_of_all(x1, x2)
    x1, x2 = _broadcast(x1, shape), _broadcast(x2, shape)
    a, b = ew.abs(x1), ew.abs(x2)
    hi, lo = ew.max(a, b), ew.min(a, b)
    aval = _aval(hi)
    zero = ew.eq(hi, _scalar(0, aval.dtype, aval.weak_type))
    safe_hi = ew.select(zero, _full(shape, 1, aval.dtype, aval.weak_type), hi)
    ratio = ew.div(lo, safe_hi)
    one = _scalar(1, aval.dtype, aval.weak_type)
    out = ew.mul(hi, ew.sqrt(ew.add(one, ew.mul(ratio, ratio))))
    out = ew.select(zero, hi, out)
    inf = _full(shape, np.inf, aval.dtype, aval.weak_type)
    return ew.select(ew.bitwise_or(_isinf(x1), _isinf(x2)), inf, out)


def conj(x: Any) -> Any:
    return complex_parts.conj(x) if dtypes.is_complex(_aval(x).dtype) else x


def real(x: Any) -> Any:
    return complex_parts.real(x) if dtypes.is_complex(_aval(x).dtype) else x


# --- creation --------------------------------------------------------------------------------


def _full(shape: Sequence[int], value: Any, dtype: Any, weak: bool = False) -> Any:
    return structural.broadcast_in_dim(_scalar(value, dtype, weak), tuple(shape), ())


def zeros(shape: Sequence[int], dtype: Any) -> Any:
    return _full(shape, 0, dtype)


def zeros_like(x: Any) -> Any:
    aval = _aval(x)
    return _full(aval.shape, 0, aval.dtype, aval.weak_type)


def ones_like(x: Any) -> Any:
    aval = _aval(x)
    return _full(aval.shape, 1, aval.dtype, aval.weak_type)


def eye(n: int, dtype: Any) -> Any:
    """The ``n x n`` identity of ``dtype`` (a bool mask for ``bool``)."""
    rows = structural.broadcasted_iota(_INT, (n, n), 0)
    cols = structural.broadcasted_iota(_INT, (n, n), 1)
    return ew.convert_element_type(ew.eq(rows, cols), np.dtype(dtype))


def arange(n: int, dtype: Any) -> Any:
    return structural.iota(np.dtype(dtype), n)


def asarray(value: Any, dtype: Any = None) -> np.ndarray:
    """A constant operand (a loop's initial carry)."""
    return np.asarray(value, dtype)


def index_at(values: np.ndarray, k: Any) -> Any:
    """``values[k]`` for a traced scalar index ``k`` (in range)."""
    return indexing.dynamic_index_in_dim(values, k, 0, keepdims=False)


def broadcast_to(x: Any, shape: Sequence[int]) -> Any:
    return _broadcast(x, tuple(shape))


# --- shape -----------------------------------------------------------------------------------


def swapaxes(x: Any, axis1: int, axis2: int) -> Any:
    ndim = _aval(x).ndim
    perm = list(range(ndim))
    a1, a2 = normalize_axis("swapaxes", axis1, ndim), normalize_axis("swapaxes", axis2, ndim)
    perm[a1], perm[a2] = perm[a2], perm[a1]
    return structural.transpose(x, perm)


def expand_dims(x: Any, axis: int) -> Any:
    return structural.expand_dims(x, (normalize_axis("expand_dims", axis, _aval(x).ndim + 1),))


def concatenate(arrays: Sequence[Any], axis: int) -> Any:
    ndim = _aval(arrays[0]).ndim
    return structural.concatenate(list(arrays), normalize_axis("concatenate", axis, ndim))


def _triangle(x: Any, k: int, lower: bool) -> Any:
    """``x`` with the elements above (``lower``) or below diagonal ``k`` zeroed."""
    aval = _aval(x)
    n, m = aval.shape[-2:]
    rows = structural.broadcasted_iota(_INT, (n, m), 0)
    cols = structural.broadcasted_iota(_INT, (n, m), 1)
    mask = ew.ge(ew.add(rows, _scalar(k if lower else k - 1, _INT)), cols)
    if not lower:
        mask = ew.bitwise_not(mask)
    mask = structural.broadcast_in_dim(mask, aval.shape, (aval.ndim - 2, aval.ndim - 1))
    return ew.select(mask, x, _full(aval.shape, 0, aval.dtype, aval.weak_type))


def tril(x: Any, k: int = 0) -> Any:
    return _triangle(x, k, lower=True)


def triu(x: Any, k: int = 0) -> Any:
    return _triangle(x, k, lower=False)


def diagonal(x: Any) -> Any:
    """The diagonal of the last two axes, as a new last axis."""
    aval = _aval(x)
    *lead, rows, cols = aval.shape
    length = min(rows, cols)
    if length == 0:
        return _full((*lead, 0), 0, aval.dtype, aval.weak_type)
    flat = structural.reshape(x, (*lead, rows * cols))
    positions = (np.arange(length) * (cols + 1)).astype(np.int32)
    return indexing.gather_along_axis(flat, positions, len(lead), mode="clip")


# --- reductions ------------------------------------------------------------------------------


def _axes(x: Any, axis: Any) -> tuple[int, ...]:
    ndim = _aval(x).ndim
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, tuple) else (axis,)
    return tuple(sorted(normalize_axis("composite_ops", a, ndim) for a in axes))


def _keep(x: Any, reduced: Any, axes: tuple[int, ...], keepdims: bool) -> Any:
    if not keepdims:
        return reduced
    shape = tuple(1 if d in axes else s for d, s in enumerate(_aval(x).shape))
    return structural.reshape(reduced, shape)


def sum(x: Any, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A001
    """Floats sum in their dtype; float16 and bfloat16 in float32 (as numpy.sum)."""
    axes = _axes(x, axis)
    aval = _aval(x)
    narrow = aval.dtype in (np.dtype(np.float16), dtypes.bfloat16)
    operand = ew.convert_element_type(x, np.dtype(np.float32)) if narrow else x
    out = reductions.reduce_sum(operand, axes)
    if narrow:
        out = ew.convert_element_type(out, aval.dtype, weak_type=aval.weak_type)
    return _keep(x, out, axes, keepdims)


def any(x: Any, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A001
    axes = _axes(x, axis)
    return _keep(x, reductions.reduce_or(x, axes), axes, keepdims)


def argmax(x: Any, axis: int = -1) -> Any:
    return reductions.argmax(x, normalize_axis("argmax", axis, _aval(x).ndim), _INT)


# --- sorting and gathering -------------------------------------------------------------------


def argsort(x: Any, axis: int = -1, descending: bool = False) -> Any:
    """The int32 indices that sort ``x`` along ``axis`` (stable; NaNs last, or
    first when ``descending``), as ``refimpl.numpy.argsort``."""
    aval = _aval(x)
    axis = normalize_axis("argsort", axis, aval.ndim)
    iota = structural.broadcasted_iota(_INT, aval.shape, axis)
    if descending:
        # sorting the reversed array ascending and reversing back keeps ties in order
        reversed_ = (structural.rev(x, (axis,)), structural.rev(iota, (axis,)))
        _, index = reductions.sort(reversed_, axis, num_keys=1)
        return structural.rev(index, (axis,))
    _, index = reductions.sort((x, iota), axis, is_stable=True, num_keys=1)
    return index


def take_along_axis(arr: Any, indices: Any, axis: int = -1) -> Any:
    """``out[..., j, ...] = arr[..., indices[..., j, ...], ...]`` along ``axis``,
    the other dims broadcast; the indices are in range (``refimpl.numpy``'s
    gather of the flattened operand)."""
    arr_aval, idx_aval = _aval(arr), _aval(indices)
    axis = normalize_axis("take_along_axis", axis, arr_aval.ndim)
    arr = structural.moveaxis(arr, axis, arr_aval.ndim - 1)
    indices = structural.moveaxis(indices, axis, idx_aval.ndim - 1)
    n, k = arr_aval.shape[axis], idx_aval.shape[axis]
    batch = tuple(np.broadcast_shapes(_aval(arr).shape[:-1], _aval(indices).shape[:-1]))
    arr = _broadcast(arr, (*batch, n))
    indices = _to(_broadcast(indices, (*batch, k)), _INT, False)
    count = int(np.prod(batch, dtype=np.int64))
    size = count * n
    if size == 0:
        out = _full((*batch, k), 0, _aval(arr).dtype)
        return structural.moveaxis(out, len(batch), axis)
    rows = structural.broadcast_in_dim(
        structural.reshape(structural.iota(_INT, count), batch),
        (*batch, k),
        tuple(range(len(batch))),
    )
    flat = ew.add(ew.mul(rows, _scalar(n, _INT)), indices)
    taken = indexing.gather_along_axis(structural.reshape(arr, (size,)), flat, 0, mode="fill")
    return structural.moveaxis(taken, len(batch), axis)


# --- products --------------------------------------------------------------------------------


def matmul(a: Any, b: Any) -> Any:
    """NumPy's ``matmul``: products over the last two axes, leading axes
    broadcast; a 1-D operand is a row (``a``) or column (``b``) vector."""
    a, b = _promote(a, b)
    a_shape, b_shape = _aval(a).shape, _aval(b).shape
    a_vector, b_vector = len(a_shape) == 1, len(b_shape) == 1
    if a_vector:
        a, a_shape = structural.expand_dims(a, (0,)), (1, *a_shape)
    if b_vector:
        b, b_shape = structural.expand_dims(b, (1,)), (*b_shape, 1)
    batch = tuple(np.broadcast_shapes(a_shape[:-2], b_shape[:-2]))
    a = _broadcast(a, batch + tuple(a_shape[-2:]))
    b = _broadcast(b, batch + tuple(b_shape[-2:]))
    nb = len(batch)
    dims = (((nb + 1,), (nb,)), (tuple(range(nb)), tuple(range(nb))))
    result = linalg.dot_general(a, b, dims)
    squeezed = ((nb,) if a_vector else ()) + ((nb + 1,) if b_vector else ())
    return structural.squeeze(result, squeezed) if squeezed else result


def outer(a: Any, b: Any) -> Any:
    """``a[:, None] * b[None, :]`` of two vectors."""
    a, b = _promote(a, b)
    shape = (_aval(a).shape[0], _aval(b).shape[0])
    return ew.mul(
        structural.broadcast_in_dim(a, shape, (0,)), structural.broadcast_in_dim(b, shape, (1,))
    )


def quadratic_form(mat: Any, x: Any, y: Any) -> Any:
    """``sum_ij mat[..., i, j] x[i] y[j]`` (``einsum("...ij,i,j->...")``)."""
    return matmul(matmul(mat, y), x)
