"""Shape manipulation: reshape, transpose, swapaxes, moveaxis, squeeze,
expand_dims, flip, ravel, broadcast_to, concatenate, stack, split, tile,
repeat and sort (``pad``: ``_pad.py``).

Axes follow NumPy: negative ones count from the end, and an axis out of range
is a ValueError (as ``jax.numpy`` raises). Shapes, axes, split points, pad
widths and repeat counts must be concrete. Everything keeps the operand's
dtype and weak type; the functions that join several arrays promote them
first (``concatenate([int8, float16])`` is float16).
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from refimpl import dtypes, lax, tracing
from refimpl.numpy._creation import asarray, broadcast_to, canonical_dtype
from refimpl.numpy._promote import (
    as_array,
    aval_of,
    convert_all,
    is_traced,
    result_type,
)

Array = Any
ArrayLike = Any


# --- axes -------------------------------------------------------------------------------


def _index(fn_name: str, what: str, value: Any) -> int:
    """A concrete Python int from an int-like; TypeError naming ``what`` otherwise."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{fn_name}: {what} must be an int, got {value!r}")
    if is_traced(value):
        value = _known_value(fn_name, what, value)
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{fn_name}: {what} must be a concrete int, got {value!r}") from None


def _known_value(fn_name: str, what: str, tracer: Any) -> Any:
    """The value of a scalar tracer where it is known (a JVP tracer outside
    jit), as JAX's ``concrete_or_error``; a ``ConcretizationTypeError`` in JAX's
    words where it is not."""
    if tracer.ndim != 0:
        raise TypeError(f"{fn_name}: {what} must be a scalar, got shape {tracer.shape}")
    try:
        return tracer.item()
    except tracing.ConcretizationTypeError:
        raise tracing.ConcretizationTypeError(
            f"Abstract tracer value encountered where concrete value is expected: "
            f"{fn_name}: {what} must be concrete, got a traced value {tracer!r}; mark it static"
        ) from None


def section_count(fn_name: str, value: Any) -> int:
    """A number of sections as JAX reads it, with ``int()``: a float counts,
    and so does a tracer whose value is known (JVP outside jit)."""
    if is_traced(value):
        value = _known_value(fn_name, "the number of sections", value)
    try:
        return int(value)
    except TypeError:
        raise TypeError(f"{fn_name}: number of sections must be an int, got {value!r}") from None


def normalize_axis(fn_name: str, axis: Any, ndim: int) -> int:
    """``axis`` in ``[0, ndim)``; negative counts from the end."""
    axis = _index(fn_name, "axis", axis)
    if not -ndim <= axis < ndim:
        # NumPy's AxisError is both a ValueError and an IndexError, as in jnp
        raise np.exceptions.AxisError(axis, ndim, msg_prefix=fn_name)
    return axis % ndim


def normalize_axes(fn_name: str, axis: Any, ndim: int) -> tuple[int, ...]:
    """An int or a sequence of ints as distinct non-negative axes."""
    items = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    axes = tuple(normalize_axis(fn_name, a, ndim) for a in items)
    if len(set(axes)) != len(axes):
        raise ValueError(f"{fn_name}: repeated axis in {axis!r}")
    return axes


def _int_tuple(fn_name: str, what: str, value: Any) -> tuple[int, ...]:
    items = value if _is_sequence(value) else (value,)
    return tuple(_index(fn_name, what, v) for v in items)


# --- reshape and transpose ---------------------------------------------------------------


def _resolve_shape(
    fn_name: str, shape: Any, size: int, old_shape: tuple[int, ...], error: type = TypeError
) -> tuple:
    """``shape`` with its one ``-1`` (if any) replaced so that the size is ``size``.
    A shape that cannot hold the array is ``error``: JAX 0.10.2's TypeError,
    NumPy's ValueError for a NumPy array (``jnp.reshape`` calls its own method)."""
    new = _int_tuple(fn_name, "shape", shape)
    unknown = [i for i, d in enumerate(new) if d == -1]
    if len(unknown) > 1:
        raise error(f"{fn_name}: can only specify one unknown dimension (-1), got {new}")
    if any(d < -1 for d in new):
        raise error(f"{fn_name}: invalid dimension in shape {new}")
    known = int(np.prod([d for d in new if d != -1], dtype=np.int64))
    if unknown:
        if known == 0 or size % known:
            raise error(f"{fn_name}: cannot reshape array of shape {old_shape} into {new}")
        new = tuple(size // known if d == -1 else d for d in new)
    if int(np.prod(new, dtype=np.int64)) != size:
        raise error(f"{fn_name}: cannot reshape array of shape {old_shape} into {new}")
    return new


def reshape(a: ArrayLike, shape: Any, order: str = "C", *, copy: Any = None) -> Array:
    """``a`` with a new shape of the same size (one dimension may be -1).

    ``order="C"`` reads and writes row-major; ``"F"`` column-major. As JAX
    0.10.2's, ``rnp.reshape`` of a NumPy array or scalar calls its own
    ``reshape`` method (a NumPy result).

    Args:
        a: The input array.
        shape: The new shape (an int or a sequence of ints; one may be -1,
            the size left over).
        order: ``"C"`` or ``"F"`` (others are NotImplementedError).
        copy: Accepted and ignored (keyword-only; arrays are immutable).

    Returns:
        An array of ``shape`` with ``a``'s elements and dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.reshape(rnp.arange(6), (2, 3))
        Array([[0, 1, 2],
               [3, 4, 5]], dtype=int32)
        >>> rnp.reshape(rnp.arange(6), (3, -1), order="F")
        Array([[0, 3],
               [1, 4],
               [2, 5]], dtype=int32)
    """
    aval = aval_of(a, "reshape", 0)
    error = ValueError if isinstance(a, np.ndarray) else TypeError
    new = _resolve_shape("reshape", shape, aval.size, aval.shape, error)
    if order == "F":
        reversed_axes = tuple(range(aval.ndim))[::-1]
        flat = lax.reshape(_transpose(a, reversed_axes), new[::-1])
        return _transpose(flat, tuple(range(len(new)))[::-1])
    if order != "C":
        raise NotImplementedError(f"reshape: order={order!r} is not supported (use 'C' or 'F')")
    return as_array(a) if new == aval.shape else lax.reshape(a, new)


def forwarding_to_numpy(reshape: Any) -> Any:
    """The public ``jnp.reshape``: as JAX 0.10.2's, a NumPy array or scalar
    goes to its own ``reshape`` method (a NumPy result of its own dtype,
    float64 included; NumPy's errors); anything else is ``reshape``'s.
    refimpl's own modules call the plain ``reshape``, whose results are
    arrays (JAX's call it on tracers inside its jits)."""

    def public_reshape(a: ArrayLike, shape: Any, order: str = "C", *, copy: Any = None) -> Any:
        if isinstance(a, (np.ndarray, np.generic)):
            own_method: Any = a.reshape  # (NumPy's stubs want a Literal order)
            return own_method(shape, order=order)
        return reshape(a, shape, order, copy=copy)

    public_reshape.__name__ = public_reshape.__qualname__ = "reshape"
    public_reshape.__doc__ = reshape.__doc__
    public_reshape.__module__ = reshape.__module__
    return public_reshape


def ravel(a: ArrayLike, order: str = "C") -> Array:
    """``a`` flattened to one dimension: ``reshape(a, (-1,), order)``.

    Args:
        a: The input array.
        order: ``"C"`` (row-major) or ``"F"`` (column-major) reading order.

    Returns:
        A 1-d array of ``a``'s size and dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.ravel(rnp.array([[1, 2], [3, 4]]))
        Array([1, 2, 3, 4], dtype=int32)
        >>> rnp.ravel(rnp.array([[1, 2], [3, 4]]), order="F")
        Array([1, 3, 2, 4], dtype=int32)
    """
    aval_of(a, "ravel", 0)
    return reshape(a, (-1,), order=order)


def _transpose(a: Any, permutation: tuple[int, ...]) -> Any:
    if permutation == tuple(range(len(permutation))):
        return as_array(a)
    return lax.transpose(a, permutation)


def transpose(a: ArrayLike, axes: Sequence[int] | None = None) -> Array:
    """``a`` with its dimensions permuted: result dim ``i`` is ``a``'s dim ``axes[i]``.

    The dimensions are reversed when ``axes`` is None (the matrix transpose
    for 2-d ``a``); negative axes count from the end.

    Args:
        a: The input array.
        axes: A permutation of ``a``'s axes, or None.

    Returns:
        An array of the permuted shape, in ``a``'s dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.transpose(rnp.array([[1, 2, 3], [4, 5, 6]]))
        Array([[1, 4],
               [2, 5],
               [3, 6]], dtype=int32)
        >>> rnp.transpose(rnp.ones((2, 3, 4)), (1, 2, 0)).shape
        (3, 4, 2)
    """
    ndim = aval_of(a, "transpose", 0).ndim
    if axes is None:
        return _transpose(a, tuple(range(ndim))[::-1])
    permutation = tuple(normalize_axis("transpose", ax, ndim) for ax in _items(axes))
    if sorted(permutation) != list(range(ndim)):
        raise TypeError(f"transpose: axes {tuple(axes)} are not a permutation of {ndim} dims")
    return _transpose(a, permutation)


def _items(value: Any) -> tuple[Any, ...]:
    return tuple(value) if _is_sequence(value) else (value,)


def _is_sequence(value: Any) -> bool:
    # a 0-d NumPy array is one int (as in JAX), not a sequence of them
    return isinstance(value, Sequence) or (isinstance(value, np.ndarray) and value.ndim > 0)


def swapaxes(a: ArrayLike, axis1: int, axis2: int) -> Array:
    """``a`` with dims ``axis1`` and ``axis2`` exchanged.

    Args:
        a: The input array.
        axis1: The first axis.
        axis2: The second axis.

    Returns:
        An array of ``a``'s dtype with the two sizes exchanged.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.swapaxes(rnp.ones((2, 3, 4)), 0, 2).shape
        (4, 3, 2)
    """
    ndim = aval_of(a, "swapaxes", 0).ndim
    first = normalize_axis("swapaxes", axis1, ndim)
    second = normalize_axis("swapaxes", axis2, ndim)
    permutation = list(range(ndim))
    permutation[first], permutation[second] = second, first
    return _transpose(a, tuple(permutation))


def moveaxis(a: ArrayLike, source: Any, destination: Any) -> Array:
    """``a`` with dims ``source`` moved to positions ``destination``.

    The other dimensions keep their order.

    Args:
        a: The input array.
        source: The axis or axes to move.
        destination: Their positions in the result (as many as ``source``).

    Returns:
        An array of ``a``'s dtype with the dimensions rearranged.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.moveaxis(rnp.ones((2, 3, 4)), 0, -1).shape
        (3, 4, 2)
    """
    ndim = aval_of(a, "moveaxis", 0).ndim
    src = normalize_axes("moveaxis", source, ndim)
    dst = normalize_axes("moveaxis", destination, ndim)
    if len(src) != len(dst):
        raise ValueError("moveaxis: source and destination must have the same number of elements")
    permutation = [d for d in range(ndim) if d not in src]
    for to, from_ in sorted(zip(dst, src, strict=True)):
        permutation.insert(to, from_)
    return _transpose(a, tuple(permutation))


def squeeze(a: ArrayLike, axis: Any = None) -> Array:
    """``a`` without size-1 dims: all of them, or those in ``axis``.

    A dimension named in ``axis`` that is not of size 1 is a ValueError.

    Args:
        a: The input array.
        axis: The axis or axes to remove, or None for every size-1 axis.

    Returns:
        An array of ``a``'s elements and dtype, of fewer dimensions.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.squeeze(rnp.ones((1, 3, 1))).shape
        (3,)
        >>> rnp.squeeze(rnp.ones((1, 3, 1)), axis=0).shape
        (3, 1)
    """
    shape = aval_of(a, "squeeze", 0).shape
    if axis is None:
        axes = tuple(i for i, d in enumerate(shape) if d == 1)
    else:
        axes = normalize_axes("squeeze", axis, len(shape))
        for ax in axes:
            if shape[ax] != 1:
                raise ValueError(
                    f"squeeze: cannot select an axis to squeeze out which has size not equal "
                    f"to one, got shape={shape} and axis={axis}"
                )
    return lax.squeeze(a, axes) if axes else as_array(a)


def expand_dims(a: ArrayLike, axis: Any) -> Array:
    """``a`` with size-1 dims inserted at positions ``axis`` of the result.

    Args:
        a: The input array.
        axis: The position or positions (in the result; negative counts from
            its end).

    Returns:
        An array of ``a``'s elements and dtype, ``len(axis)`` dims more.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.expand_dims(rnp.array([1, 2]), 0)
        Array([[1, 2]], dtype=int32)
        >>> rnp.expand_dims(rnp.ones((2, 3)), (0, -1)).shape
        (1, 2, 3, 1)
    """
    ndim = aval_of(a, "expand_dims", 0).ndim
    axes = _items(axis)
    out_ndim = ndim + len(axes)
    return lax.expand_dims(a, normalize_axes("expand_dims", axes, out_ndim))


def flip(m: ArrayLike, axis: Any = None) -> Array:
    """``m`` with the element order reversed along ``axis`` (all axes when None).

    Args:
        m: The input array.
        axis: The axis or axes to reverse, or None.

    Returns:
        An array of ``m``'s shape and dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.flip(rnp.array([[1, 2], [3, 4]]))
        Array([[4, 3],
               [2, 1]], dtype=int32)
        >>> rnp.flip(rnp.array([[1, 2], [3, 4]]), axis=1)
        Array([[2, 1],
               [4, 3]], dtype=int32)
    """
    ndim = aval_of(m, "flip", 0).ndim
    axes = tuple(range(ndim)) if axis is None else normalize_axes("flip", axis, ndim)
    return lax.rev(m, axes) if axes else as_array(m)


# --- joining and splitting ----------------------------------------------------------------


def _operand_list(fn_name: str, arrays: Any) -> list[Any]:
    """A sequence of arrays, or an array whose leading axis is the sequence."""
    if isinstance(arrays, (list, tuple)):
        items = list(arrays)
    else:
        aval = aval_of(arrays, fn_name, 0)
        if aval.ndim == 0:
            raise ValueError(f"{fn_name}: zero-dimensional arrays cannot be concatenated")
        items = [lax.index_in_dim(arrays, i, 0, keepdims=False) for i in range(aval.shape[0])]
    if not items:
        raise ValueError(f"{fn_name}: need at least one array to concatenate")
    for position, item in enumerate(items):
        aval_of(item, fn_name, position)
    return items


def _promote_list(fn_name: str, items: list[Any], dtype: Any) -> list[Any]:
    """Every item converted to the joined dtype (or ``dtype``, strongly typed)."""
    if dtype is None:
        joined, weak = result_type(fn_name, *items)
    else:
        joined, weak = canonical_dtype(fn_name, dtype), False
    return convert_all(fn_name, tuple(items), joined, weak)


def concatenate(arrays: Any, axis: int | None = 0, dtype: Any = None) -> Array:
    """Joins arrays of one rank along an existing ``axis`` (``None``: flatten them first).

    Their dtypes are promoted together (or converted to ``dtype``); the sizes
    must agree except along ``axis``. Rank-0 arrays are a ValueError.

    Args:
        arrays: A sequence of arrays, or an array whose leading axis is
            iterated over.
        axis: The axis to join along, or None.
        dtype: The result's dtype, or None for the promoted one.

    Returns:
        The joined array.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.concatenate([rnp.array([[1, 2]]), rnp.array([[3, 4]])])
        Array([[1, 2],
               [3, 4]], dtype=int32)
        >>> rnp.concatenate([rnp.array([[1, 2]]), rnp.array([[3.5]])], axis=1)
        Array([[1. , 2. , 3.5]], dtype=float32)
    """
    items = _operand_list("concatenate", arrays)
    if axis is None:
        items = [ravel(x) for x in items]
        axis = 0
    avals = [aval_of(x, "concatenate", i) for i, x in enumerate(items)]
    if any(av.ndim == 0 for av in avals):
        raise ValueError("concatenate: zero-dimensional arrays cannot be concatenated")
    if len({av.ndim for av in avals}) > 1:
        shapes = ", ".join(str(av.shape) for av in avals)
        raise TypeError(
            f"concatenate: cannot concatenate arrays with different numbers of dimensions: "
            f"got {shapes}"
        )
    axis = normalize_axis("concatenate", axis, avals[0].ndim)
    items = _promote_list("concatenate", items, dtype)
    if len(items) == 1:
        return as_array(items[0])
    return lax.concatenate(items, axis)


def stack(arrays: Any, axis: int = 0, out: None = None, dtype: Any = None) -> Array:
    """Joins arrays of one shape along a new dimension ``axis``.

    Their dtypes are promoted together (or converted to ``dtype``).

    Args:
        arrays: A sequence of arrays of one shape, or an array whose leading
            axis is iterated over.
        axis: The position of the new axis in the result.
        out: Must be None (NotImplementedError otherwise, as in JAX).
        dtype: The result's dtype, or None for the promoted one.

    Returns:
        An array of one more dimension, of size ``len(arrays)`` at ``axis``.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.stack([rnp.array([1, 2]), rnp.array([3, 4])], axis=1)
        Array([[1, 3],
               [2, 4]], dtype=int32)
    """
    if out is not None:
        raise NotImplementedError("stack: the 'out' argument is not supported (as JAX)")
    items = _operand_list("stack", arrays)
    shapes = {aval_of(x, "stack", i).shape for i, x in enumerate(items)}
    if len(shapes) > 1:
        listed = ", ".join(str(aval_of(x, "stack", 0).shape) for x in items)
        raise ValueError(f"stack: all input arrays must have the same shape, got {listed}")
    ndim = len(shapes.pop())
    axis = normalize_axis("stack", axis, ndim + 1)
    items = _promote_list("stack", items, dtype)
    expanded = [lax.expand_dims(x, (axis,)) for x in items]
    return as_array(expanded[0]) if len(expanded) == 1 else lax.concatenate(expanded, axis)


def split(ary: ArrayLike, indices_or_sections: Any, axis: int = 0) -> list[Array]:
    """Splits ``ary`` along ``axis`` into equal sections or at the given indices.

    A number of sections must divide the size; indices follow NumPy's
    slicing rules: negative indices count from the end, out-of-range ones
    clip, decreasing ones give empty parts.

    Args:
        ary: The array to split.
        indices_or_sections: A number of equal sections, or a sequence of
            split points.
        axis: The axis to split.

    Returns:
        A list of arrays.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.split(rnp.arange(6), 3)
        [Array([0, 1], dtype=int32), Array([2, 3], dtype=int32), Array([4, 5], dtype=int32)]
        >>> rnp.split(rnp.arange(6), [1, 4])
        [Array([0], dtype=int32), Array([1, 2, 3], dtype=int32), Array([4, 5], dtype=int32)]
    """
    aval = aval_of(ary, "split", 0)
    axis = normalize_axis("split", axis, aval.ndim)
    size = aval.shape[axis]
    if isinstance(indices_or_sections, (list, tuple)) or (
        hasattr(indices_or_sections, "ndim") and indices_or_sections.ndim > 0
    ):
        points = [_index("split", "split index", i) for i in indices_or_sections]
        bounds = list(zip([None, *points], [*points, None], strict=True))
    else:
        sections = section_count("split", indices_or_sections)
        if sections <= 0:
            raise ValueError(f"split: number of sections must be positive, got {sections}")
        part, rest = divmod(size, sections)
        if rest:
            raise ValueError(
                f"split: array split does not result in an equal division: {size} into "
                f"{sections} sections"
            )
        bounds = [(i * part, (i + 1) * part) for i in range(sections)]
    parts = []
    for start, stop in bounds:
        begin, end, _ = builtins.slice(start, stop).indices(size)
        parts.append(lax.slice_in_dim(ary, begin, max(begin, end), 1, axis))
    return parts


# --- tile, repeat (pad: _pad.py) ------------------------------------------------------------------


def tile(A: ArrayLike, reps: Any) -> Array:  # noqa: N803
    """``A`` repeated ``reps[i]`` times along each dim (``reps`` aligned to the right).

    The shorter of ``A.shape`` and ``reps`` is padded with leading 1s.

    Args:
        A: The array to tile.
        reps: The non-negative repetition counts (an int or a sequence).

    Returns:
        An array of ``A``'s dtype and shape ``reps[i] * A.shape[i]`` (aligned).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.tile(rnp.array([1, 2]), 2)
        Array([1, 2, 1, 2], dtype=int32)
        >>> rnp.tile(rnp.array([1, 2]), (2, 2))
        Array([[1, 2, 1, 2],
               [1, 2, 1, 2]], dtype=int32)
    """
    aval = aval_of(A, "tile", 0)
    reps = _int_tuple("tile", "reps", reps)
    if any(r < 0 for r in reps):
        raise ValueError(f"tile: reps must not be negative, got {reps}")
    ndim = max(aval.ndim, len(reps))
    shape = (1,) * (ndim - aval.ndim) + aval.shape
    reps = (1,) * (ndim - len(reps)) + reps
    interleaved = tuple(d for size in shape for d in (1, size))
    target = tuple(d for pair in zip(reps, shape, strict=True) for d in pair)
    expanded = lax.reshape(A, interleaved) if interleaved != aval.shape else A
    tiled = broadcast_to(expanded, target)
    final = tuple(r * s for r, s in zip(reps, shape, strict=True))
    return reshape(tiled, final)


def repeat(
    a: ArrayLike, repeats: Any, axis: int | None = None, *, total_repeat_length: int | None = None
) -> Array:
    """Repeat each element ``repeats`` times along ``axis`` (flattened when None).

    ``repeats`` is an int or a 1-D int array (one count per element). Without
    ``total_repeat_length`` it must be concrete (it fixes the result's shape);
    with it, it may be traced, and the result has exactly that length along
    ``axis``, as JAX's: cut short, or padded with the last element.

    Args:
        a: The input array.
        repeats: The number of repetitions: one for all, or one per element
            along ``axis``.
        axis: The axis to repeat along, or None for the flattened ``a``.
        total_repeat_length: The static length of the result along ``axis``,
            or None (keyword-only).

    Returns:
        An array of ``a``'s dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.repeat(rnp.array([1, 2, 3]), 2)
        Array([1, 1, 2, 2, 3, 3], dtype=int32)
        >>> rnp.repeat(rnp.array([[1, 2], [3, 4]]), rnp.array([1, 2]), axis=0)
        Array([[1, 2],
               [3, 4],
               [3, 4]], dtype=int32)
        >>> rnp.repeat(rnp.array([1, 2, 3]), rnp.array([2, 0, 1]), total_repeat_length=4)
        Array([1, 1, 3, 3], dtype=int32)
    """
    aval = aval_of(a, "repeat", 0)
    aval_of(repeats, "repeat", 1)
    if axis is None or aval.ndim == 0:
        # a rank-0 operand repeats as a 1-d one whatever the axis, as jnp
        a, axis = ravel(a), 0
        aval = aval_of(a, "repeat", 0)
    axis = normalize_axis("repeat", axis, aval.ndim)
    if total_repeat_length is not None:
        return _repeat_to_length(a, aval.shape, repeats, axis, total_repeat_length)
    if is_traced(repeats):
        raise tracing.ConcretizationTypeError(
            "repeat: repeats must be concrete (not traced) unless total_repeat_length is "
            "given; it fixes the result's shape"
        )
    counts = np.asarray(tracing.concrete_value(repeats, aval_of(repeats, "repeat", 1)))
    if not (np.issubdtype(counts.dtype, np.integer)):
        raise TypeError(f"repeat: repeats must be integers, got dtype {counts.dtype}")
    if (counts < 0).any():
        raise ValueError("repeat: repeats must not be negative")
    size = aval.shape[axis]
    if counts.ndim == 0 or counts.shape == (1,):  # one count for all, as np/jnp broadcast it
        result = _repeat_each(a, aval.shape, axis, int(counts.reshape(())))
    else:
        if counts.shape != (size,):
            raise ValueError(f"repeat: got {counts.shape[0]} repeats for an axis of size {size}")
        positions = np.repeat(np.arange(size, dtype=np.int32), counts)
        if positions.size == 0:
            result = lax.slice_in_dim(a, 0, 0, 1, axis)
        else:
            result = lax.gather_along_axis(a, positions, axis)
    return result


def _repeat_to_length(a: Any, shape: tuple[int, ...], repeats: Any, axis: int, total: Any) -> Any:
    """JAX's algorithm for a given length: a 1 at each element's first output
    position (its exclusive cumulative count; positions past the end dropped),
    whose cumulative sum minus 1 is the element each output position takes."""
    try:
        total = operator.index(total)
    except TypeError:
        raise TypeError(
            f"repeat: total_repeat_length must be a concrete int, got {type(total).__name__}"
        ) from None
    if total < 0:
        raise ValueError(f"repeat: total_repeat_length must not be negative, got {total}")
    counts_aval = aval_of(repeats, "repeat", 1)
    if not dtypes.is_integer(counts_aval.dtype):
        raise TypeError(f"repeat: repeats must be integers, got dtype {counts_aval.dtype.name}")
    if not is_traced(repeats):
        counts = np.asarray(tracing.concrete_value(repeats, counts_aval))
        if (counts < 0).any():
            raise ValueError("repeat: repeats must not be negative")
    size = shape[axis]
    if counts_aval.ndim > 1 or counts_aval.size not in (1, size):
        raise ValueError(f"repeat: got {counts_aval.size} repeats for an axis of size {size}")
    if size == 0:
        return as_array(a)
    if total == 0:
        return lax.slice_in_dim(a, 0, 0, 1, axis)
    counts = lax.convert_element_type(
        lax.broadcast_in_dim(lax.reshape(asarray(repeats), (counts_aval.size,)), (size,), (0,))
        if counts_aval.size == 1
        else lax.reshape(asarray(repeats), (size,)),
        np.int32,
    )
    exclusive = lax.concatenate(
        [np.zeros((1,), np.int32), lax.slice_in_dim(counts, 0, size - 1, 1, 0)], 0
    )
    starts = lax.cumsum(exclusive, 0)
    marks = lax.scatter_add_along_axis(
        np.zeros((total,), np.int32), starts, np.ones((size,), np.int32), 0, mode="drop"
    )
    positions = lax.sub(lax.cumsum(marks, 0), np.ones((), np.int32))
    return lax.gather_along_axis(a, positions, axis)


def _repeat_each(a: Any, shape: tuple[int, ...], axis: int, count: int) -> Any:
    """Every element along ``axis`` ``count`` times: expand, broadcast, merge."""
    expanded = lax.expand_dims(a, (axis + 1,))
    wide = shape[: axis + 1] + (count,) + shape[axis + 1 :]
    broadcast = lax.broadcast_in_dim(expanded, wide, tuple(range(len(wide))))
    merged = shape[:axis] + (shape[axis] * count,) + shape[axis + 1 :]
    return lax.reshape(broadcast, merged)


# --- sort ------------------------------------------------------------------------------------


def sort(
    a: ArrayLike,
    axis: int | None = -1,
    *,
    kind: None = None,
    order: None = None,
    stable: bool = True,
    descending: bool = False,
) -> Array:
    """A sorted copy of ``a`` along ``axis`` (flattened when None).

    NaNs go last; ``descending`` reverses the ascending result (so equal
    elements come in reverse order, as JAX's).

    Args:
        a: The array to sort, of at least one dimension.
        axis: The axis to sort along, or None.
        kind: Must be None (a TypeError otherwise; use ``stable``).
        order: Must be None (a TypeError otherwise).
        stable: Whether to use a stable sort.
        descending: Whether to sort in descending order.

    Returns:
        An array of ``a``'s shape (1-d when ``axis`` is None) and dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.sort(rnp.array([2.0, rnp.nan, 1.0]))
        Array([ 1.,  2., nan], dtype=float32)
        >>> rnp.sort(rnp.array([[3, 1], [0, 2]]), axis=0)
        Array([[0, 1],
               [3, 2]], dtype=int32)
        >>> rnp.sort(rnp.array([3, 1, 2]), descending=True)
        Array([3, 2, 1], dtype=int32)
    """
    aval = aval_of(a, "sort", 0)
    if kind is not None:
        raise TypeError("sort: 'kind' is not supported; use stable=True or stable=False")
    if order is not None:
        raise TypeError("sort: 'order' is not supported")
    if axis is None:
        a, axis = ravel(a), 0
        aval = aval_of(a, "sort", 0)
    if aval.ndim == 0:
        raise ValueError("sort: cannot sort a zero-dimensional array")
    axis = normalize_axis("sort", axis, aval.ndim)
    result = lax.sort(a, axis, is_stable=bool(stable))
    return lax.rev(result, (axis,)) if descending else result


__all__ = [
    "broadcast_to", "concatenate", "expand_dims", "flip", "moveaxis", "ravel", "repeat",
    "reshape", "sort", "split", "squeeze", "stack", "swapaxes", "tile", "transpose",
]  # fmt: skip
