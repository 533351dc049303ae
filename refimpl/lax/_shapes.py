"""Array-building and shape ``jax.lax`` functions over the structural
primitives: ``full``/``full_like``/``empty``, ``broadcast``, ``collapse``,
``tile``, ``split``, ``stack``/``unstack``, ``broadcast_to_rank``,
``broadcast_shapes``, ``broadcast_like``, ``index_take`` and ``dtype``; and
two JAX 0.10.2 keeps in ``jax._src.lax.lax`` (not exported from ``jax.lax``;
its own tests call them), so not in ``__all__``: ``asarray`` and ``delta``
(JAX's ``_delta``).
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from refimpl import backends, dtypes, tracing
from refimpl.array import as_array, is_refimpl_array
from refimpl.core import not_a_shape
from refimpl.lax._elementwise import _aval
from refimpl.primitives import elementwise as ew
from refimpl.primitives import structural
from refimpl.primitives.base import normalize_axis


def _shape_tuple(name: str, shape: Any, arg: str = "shape") -> tuple[int, ...]:
    dims = _integer_dims(name, shape)
    if builtins.any(d < 0 for d in dims):
        raise TypeError(f"{name}: {arg} must be a sequence of non-negative ints, got {shape!r}")
    return dims


def _integer_dims(name: str, shape: Any) -> tuple[int, ...]:
    """``shape`` (a sequence of integers, or one integer) as a tuple of ints,
    read as JAX 0.10.2's ``canonicalize_shape`` reads it: each dimension by
    ``operator.index`` (a bool or NumPy integer is one; a float, a string's
    characters, a traced value are not: TypeError in JAX's words)."""
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        return tuple(operator.index(d) for d in shape)
    except TypeError:
        traced = isinstance(shape, Sequence) and builtins.any(
            isinstance(d, tracing.Tracer) for d in shape
        )
        raise TypeError(f"{name}: {not_a_shape(shape, traced)}") from None


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
    when ``dtype`` is None and ``x`` is. Outside a trace the result is put on
    ``sharding`` when given, else where :func:`like_sharding` says."""
    aval = _aval(x, "full_like")
    out_shape = aval.shape if shape is None else _shape_tuple("full_like", shape)
    out = _filled(fill_value, out_shape, aval, dtype)
    if tracing.current_builder() is not None:
        return out
    if sharding is None:
        sharding = like_sharding(x, out)
    return out if sharding is None else backends.device_put(out, sharding)


def like_sharding(x: Any, out: Any) -> Any:
    """Where JAX 0.10.2's ``lax.full_like(x, ...)`` (and so ``jnp.zeros_like``
    and the other ``*_like``) without a sharding puts its result ``out``: on
    ``x``'s sharding when ``x`` is an array committed to it (not a tracer),
    ``out`` is not weakly typed, and it has ``x``'s shape or ``x`` is
    replicated (one device, or all); else None (the default device,
    uncommitted, where a value made from host data lands)."""
    if isinstance(x, tracing.Tracer) or not getattr(x, "committed", False):
        return None
    if _aval(out, "full_like").weak_type:
        return None
    same_shape = _aval(x, "full_like").shape == _aval(out, "full_like").shape
    return x.sharding if same_shape or x.sharding.is_fully_replicated else None


# Its placement reads the concrete argument: the eager fast path's jit would
# see a tracer (refimpl.backends.fast_functions.wrap_module leaves it plain).
full_like._places_by_its_argument = True  # type: ignore[attr-defined]


def broadcast(operand: Any, sizes: Sequence[int], *, out_sharding: Any = None) -> Any:
    """``operand`` with new leading dims ``sizes``."""
    sizes = _shape_tuple("broadcast", sizes, "sizes")
    if not sizes:  # JAX 0.10.2: asarray(operand), no equation (structural._unchanged)
        return as_array(operand)
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
    if len(reps) != len(shape):  # JAX 0.10.2's class
        raise TypeError(
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
    listed = sizes if isinstance(sizes, (list, tuple, np.ndarray)) else ()
    if any(not isinstance(s, bool) and isinstance(s, (int, np.integer)) and s < 0 for s in listed):
        # a negative size is a bad value, not a bad type (JAX's ValueError)
        raise ValueError(f"split: Sizes passed to split must be nonnegative, got {list(sizes)}")
    sizes = _shape_tuple("split", sizes, "sizes")
    if sum(sizes) != shape[axis]:
        raise ValueError(
            f"split: Sum of sizes {sum(sizes)} must be equal to dimension {axis} of the "
            f"operand shape {list(shape)}"
        )
    pieces, start = [], 0
    for size in sizes:
        pieces.append(structural.slice_in_dim(operand, start, start + size, 1, axis))
        start += size
    return pieces


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
    """The NumPy broadcast of ``shapes`` (each a tuple of ints, or an int)."""
    if not shapes:
        raise ValueError("broadcast_shapes: at least one shape is required")
    dims = [_static_shape("broadcast_shapes", s) for s in shapes]
    rank = builtins.max((len(d) for d in dims), default=0)
    padded = [(1,) * (rank - len(d)) + d for d in dims]
    out = []
    for sizes in zip(*padded):
        big = {n for n in sizes if n != 1}
        if len(big) > 1:
            raise ValueError(f"Incompatible shapes for broadcasting: shapes={list(dims)}")
        out.append(big.pop() if big else 1)
    return tuple(out)


def _static_shape(name: str, shape: Any) -> tuple[int, ...]:
    """``shape`` (a sequence of integers, or an integer) as a tuple of ints,
    checked as JAX 0.10.2's ``broadcast_shapes`` checks it, in its order and
    words: every dim an integer (``_integer_dims``), then none negative."""
    dims = _integer_dims(name, shape)
    if builtins.any(d < 0 for d in dims):
        raise TypeError(
            f"{name}: Only non-negative indices are allowed when broadcasting static shapes, "
            f"but got shape {shape!r}."
        )
    return dims


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


def broadcast_like(arr: Any, like_arr: Any) -> Any:
    """``arr`` broadcast (NumPy rules) to the shape of ``like_arr``."""
    shape = tracing.get_aval(like_arr, "broadcast_like", "like_arr").shape
    from_shape = tracing.get_aval(arr, "broadcast_like", "arr").shape
    lead = len(shape) - len(from_shape)
    fits = lead >= 0 and all(d in (1, s) for d, s in zip(from_shape, shape[lead:], strict=True))
    if not fits:
        raise ValueError(
            f"broadcast_like: cannot broadcast an array of shape {from_shape} to the shape "
            f"{shape} of like_arr"
        )
    if from_shape == shape:
        return as_array(arr)
    return structural.broadcast_in_dim(arr, shape, tuple(range(lead, len(shape))))


def index_take(src: Any, idxs: Sequence[Any], axes: Sequence[int]) -> Any:
    """``src`` at the points ``(idxs[0][i], idxs[1][i], ...)`` of the dims
    ``axes``, for each ``i``; the other dims kept whole after the points'
    axis: shape ``(N, *other dims)``. Indices wrap (taken modulo the dim's
    size), as JAX."""
    api = "index_take"
    aval = tracing.get_aval(src, api, "src")
    axes = tuple(normalize_axis(api, a, aval.ndim, "axes") for a in axes)
    idxs = list(idxs)
    if len(idxs) != len(axes) or not axes:
        raise ValueError(
            f"{api}: idxs must hold one index array per axis in {axes}, got {len(idxs)}"
        )
    if list(axes) != sorted(set(axes)):
        raise TypeError(f"{api}: axes must be distinct and sorted (as JAX's gather), got {axes}")
    rest = [d for d in range(aval.ndim) if d not in axes]
    moved = structural.transpose(src, [*axes, *rest])
    # the arrays' own `%` and indexing: NumPy's floor modulo, then NumPy indexing
    wrapped = tuple(as_array(i) % aval.shape[a] for i, a in zip(idxs, axes, strict=True))
    return moved[wrapped]


def dtype(x: Any) -> np.dtype:
    """The dtype ``x`` has (or, for a dtype-like, names) in refimpl: the
    canonical one (no 64-bit types with x64 off, as JAX)."""
    if isinstance(x, (str, np.dtype, type)) and not isinstance(x, bool):
        return dtypes.canonicalize_dtype(np.dtype(x))
    return tracing.get_aval(x, "dtype", "x").dtype


def shape_as_value(shape: Sequence[int]) -> Any:
    """The dims of a static ``shape`` as an int32 vector (``lax.shape_as_value``;
    int32 also under x64, as JAX 0.10.2 for a shape without symbolic dims).

    As JAX 0.10.2's, the vector of a non-empty shape is a NumPy array (a
    constant; under ``jit`` an output or operand like any other), and that of
    ``()`` an empty array of the current backend (JAX's ``full``)."""
    dims = _shape_tuple("shape_as_value", shape)
    if dims:
        return np.asarray(dims, dtype=np.int32)
    # bound (not wrapped), so the array is the current backend's
    return ew.convert_element_type(np.array(dims, dtype=np.int32), np.int32)


def asarray(x: Any) -> Any:
    """``x`` as an array, binding nothing: a refimpl array (or tracer) as it
    is; NumPy data and a bool strongly typed, a Python number weakly (JAX's
    lax-internal ``asarray``). Under a trace the result is a constant of the
    program, never an equation."""
    if is_refimpl_array(x):
        return x
    if isinstance(x, (bool, np.ndarray, np.generic)):
        return as_array(x, weak_type=False)
    if isinstance(x, (int, float, complex, tracing.TypedScalar)):
        return as_array(x)
    raise TypeError(f"asarray: expected ArrayLike, got {x} of type {type(x)}.")


def delta(dtype: Any, shape: Sequence[int], axes: Sequence[int]) -> Any:
    """The Kronecker delta of ``shape`` along ``axes``: 1 where the indices
    along all of ``axes`` are equal, 0 elsewhere, constant along the other
    axes, in ``dtype`` (strong). Example: ``delta(f32, (2, 3), (0, 1))`` is
    ``[[1, 0, 0], [0, 1, 0]]``."""
    axes = tuple(operator.index(a) for a in axes)
    shape = _shape_tuple("delta", shape)
    target = dtypes.canonicalize_dtype(np.dtype(dtype))
    base = tuple(shape[a] for a in axes)
    iotas = [structural.broadcasted_iota(np.uint32, base, i) for i in range(len(base))]
    same: Any = np.ones(base, np.bool_)
    for left, right in zip(iotas[:-1], iotas[1:], strict=True):
        same = ew.bitwise_and(same, ew.eq(left, right))
    return structural.broadcast_in_dim(ew.convert_element_type(same, target), shape, axes)


__all__ = [
    "shape_as_value",
    "full",
    "full_like",
    "broadcast",
    "collapse",
    "tile",
    "split",
    "broadcast_to_rank",
    "broadcast_shapes",
    "stack",
    "unstack",
    "empty",
    "broadcast_like",
    "dtype",
    "index_take",
]
