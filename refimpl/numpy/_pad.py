"""``pad``: NumPy's pad modes (constant, edge, wrap, reflect, symmetric,
linear_ramp, maximum, minimum, mean, median, empty, a callable).

Apart from ``_shape`` because the edge/wrap and statistic modes need
``_indexing`` and ``_reductions``/``_stats``, which import ``_shape``.
Pad widths must be concrete; the result keeps the operand's dtype and weak
type.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from refimpl import dtypes, lax
from refimpl.numpy import _reductions, _stats
from refimpl.numpy._creation import asarray, linspace, scalar_as
from refimpl.numpy._indexing import take
from refimpl.numpy._promote import as_array, aval_of, is_traced
from refimpl.numpy._shape import broadcast_to, moveaxis
from refimpl.transforms.batching import vmap

Array = Any
ArrayLike = Any


def _pad_widths(pad_width: Any, ndim: int) -> np.ndarray:
    """NumPy's ``pad_width`` forms (int, (n,), (before, after), one pair per axis)
    as an ``(ndim, 2)`` int array."""
    if is_traced(pad_width):
        raise TypeError("pad: pad_width must be concrete (not traced)")
    widths = np.asarray(pad_width)
    if widths.dtype == object or not (
        np.issubdtype(widths.dtype, np.integer) or widths.dtype == bool
    ):
        raise TypeError(f"pad: pad_width must contain ints, got {pad_width!r}")
    if widths.shape not in ((ndim, 2), (1, 2), (2,), (1,), ()):
        raise ValueError(
            f"pad: pad_width with {ndim} dims has unsupported shape {widths.shape}; valid "
            f"shapes are ({ndim}, 2), (1, 2), (2,), (1,) and ()"
        )
    if (widths < 0).any():
        raise ValueError(f"pad: pad_width must not be negative, got {pad_width!r}")
    return np.broadcast_to(widths, (ndim, 2)).astype(np.int64)


def _pad_pairs(name: str, value: Any, ndim: int, dtype: Any = None) -> list[tuple[Any, Any]]:
    """A NumPy per-axis ``(before, after)`` argument (scalar, pair, or one pair
    per axis) as ``ndim`` concrete pairs."""
    table = np.broadcast_to(np.asarray(value, dtype=dtype), (ndim, 2))
    return [(table[i, 0], table[i, 1]) for i in range(ndim)]


def _slice(x: Any, start: int, stop: int | None, axis: int) -> Any:
    size = aval_of(x, "pad", 0).shape[axis]
    stop = size if stop is None else (stop + size if stop < 0 else stop)
    start = start + size if start < 0 else start
    return lax.slice_in_dim(x, start, stop, 1, axis)


def _pad_edge_or_wrap(x: Any, lo: int, hi: int, axis: int, mode: str) -> Any:
    """``edge``: the end elements repeated; ``wrap``: periodic (index mod size)."""
    n = aval_of(x, "pad", 0).shape[axis]
    positions = np.arange(-lo, n + hi)
    index = np.clip(positions, 0, n - 1) if mode == "edge" else positions % n
    return take(x, index.astype(np.int32), axis=axis)


def _pad_reflect(x: Any, lo: int, hi: int, axis: int, mode: str, odd: bool) -> Any:
    """``reflect``/``symmetric`` as NumPy: each side grows by reflections of
    at most ``size`` (``size - 1`` for reflect) elements of the array as padded
    so far; ``odd`` reflects through the current edge (``2 * edge - x``)."""
    n = aval_of(x, "pad", 0).shape[axis]
    offset = 1 if (mode == "reflect" and n > 1) else 0
    for before, padding in ((True, lo), (False, hi)):
        edge = _slice(x, 0, 1, axis) if before else _slice(x, -1, None, axis)
        while padding > 0:
            step = builtins.min(padding, n - offset)
            padding -= step
            if before:
                part = _slice(x, offset, offset + step, axis)
            else:
                stop = None if (mode == "symmetric" or n == 1) else -1
                part = _slice(x, -(step + offset), stop, axis)
            part = lax.rev(part, (axis,))
            if odd:
                part = lax.sub(lax.mul(_like(2, aval_of(x, "pad", 0)), edge), part)
                if n > 1:
                    edge = _slice(part, 0, 1, axis) if before else _slice(part, -1, None, axis)
            x = lax.concatenate([part, x] if before else [x, part], axis)
    return x


def _pad_stat(x: Any, lo: int, hi: int, axis: int, mode: str, lengths: Any) -> Any:
    """``maximum``/``minimum``/``mean``/``median`` of the first/last
    ``stat_length`` elements (all by default), rounded for integers."""
    aval = aval_of(x, "pad", 0)
    # Any: mypy types some of these wrapped functions as the bare `function` class
    stat: Any = {"maximum": _reductions.max, "minimum": _reductions.min,
                 "mean": _reductions.mean, "median": _stats.median}[mode]  # fmt: skip
    n = aval.shape[axis]
    if lengths is None:
        first = last = stat(x, axis=axis, keepdims=True)
    else:
        before, after = (int(v) for v in lengths)
        if before == 0 or after == 0:
            raise ValueError("stat_length of 0 yields no value for padding")
        first = stat(_slice(x, 0, builtins.min(before, n), axis), axis=axis, keepdims=True)
        last = stat(_slice(x, -builtins.min(after, n), None, axis), axis=axis, keepdims=True)
    parts = []
    for value, count in ((first, lo), (last, hi)):
        if dtypes.is_integer(aval.dtype) and mode in ("mean", "median"):
            value = lax.round(value, lax.RoundingMethod.TO_NEAREST_EVEN)
        value = lax.convert_element_type(value, aval.dtype, weak_type=aval.weak_type)
        shape = list(aval.shape)
        shape[axis] = count
        parts.append(lax.broadcast_in_dim(value, tuple(shape), tuple(range(aval.ndim))))
    return lax.concatenate([parts[0], x, parts[1]], axis)


def _pad_linear_ramp(x: Any, lo: int, hi: int, axis: int, ends: tuple) -> Any:
    """A linear ramp from each end value to the edge (the edge excluded), as JAX."""

    aval = aval_of(x, "pad", 0)
    parts = []
    for count, end, edge, flip in (
        (lo, ends[0], _slice(x, 0, 1, axis), False),
        (hi, ends[1], _slice(x, -1, None, axis), True),
    ):
        edge = lax.squeeze(edge, (axis,))
        ramp = linspace(end, edge, count, endpoint=False, dtype=aval.dtype, axis=axis)
        ramp = lax.convert_element_type(ramp, aval.dtype, weak_type=aval.weak_type)
        parts.append(lax.rev(ramp, (axis,)) if flip else ramp)
    return lax.concatenate([parts[0], x, parts[1]], axis)


_PAD_KWARGS = {
    "constant": {"constant_values"},
    "edge": set(), "wrap": set(), "empty": set(),
    "reflect": {"reflect_type"}, "symmetric": {"reflect_type"},
    "linear_ramp": {"end_values"},
    "maximum": {"stat_length"}, "minimum": {"stat_length"},
    "mean": {"stat_length"}, "median": {"stat_length"},
}  # fmt: skip


def pad(array: ArrayLike, pad_width: Any, mode: str = "constant", **kwargs: Any) -> Array:
    """``array`` padded along each axis by ``pad_width`` values before and after.

    NumPy's ``pad`` with every mode JAX has: ``constant`` (``constant_values``),
    ``edge``, ``wrap``, ``reflect``/``symmetric`` (``reflect_type`` even or
    odd), ``linear_ramp`` (``end_values``), ``maximum``/``minimum``/``mean``/
    ``median`` (``stat_length``) and ``empty`` (zeros, as JAX). Axes are padded
    in order, each from the array as padded along the earlier axes.

    ``constant_values`` is a scalar or anything broadcastable to ``(ndim, 2)``
    (before/after per axis); corners take the later axis's value, as in
    NumPy. It is converted to the array's dtype. A callable ``mode`` is
    NumPy's ``padding_func(vector, iaxis_pad_width, iaxis, kwargs)``,
    returning the padded vector. An unknown mode is NotImplementedError, as
    JAX's.

    Args:
        array: The array to pad.
        pad_width: The widths: an int for all, ``(before, after)`` for all
            axes, or one such pair per axis.
        mode: The padding mode (a string above, or a callable).
        **kwargs: The mode's options (``constant_values``, ``end_values``,
            ``reflect_type``, ``stat_length``).

    Returns:
        The padded array, in ``array``'s dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.pad(rnp.array([1, 2, 3]), 2)
        Array([0, 0, 1, 2, 3, 0, 0], dtype=int32)
        >>> rnp.pad(rnp.array([1, 2, 3]), (1, 2), mode="edge")
        Array([1, 1, 2, 3, 3, 3], dtype=int32)
        >>> rnp.pad(rnp.array([[1, 2], [3, 4]]), ((0, 1), (1, 0)), constant_values=9)
        Array([[9, 1, 2],
               [9, 3, 4],
               [9, 9, 9]], dtype=int32)
    """
    aval = aval_of(array, "pad", 0)
    if callable(mode):
        return _pad_callable(array, aval, _pad_widths(pad_width, aval.ndim), mode, kwargs)
    if mode not in _PAD_KWARGS:
        # NotImplementedError as jnp (NumPy raises ValueError)
        raise NotImplementedError(f"Unimplemented padding mode '{mode}' for np.pad.")
    unknown = set(kwargs) - _PAD_KWARGS[mode]
    if unknown:
        raise ValueError(f"unsupported keyword arguments for mode '{mode}': {sorted(unknown)}")
    widths = _pad_widths(pad_width, aval.ndim)
    if mode == "constant":
        return _pad_constant(array, aval, widths, kwargs.get("constant_values", 0))
    if mode == "empty":
        return _pad_constant(array, aval, widths, 0)
    x = as_array(array)
    reflect_type = kwargs.get("reflect_type", "even")
    if mode in ("reflect", "symmetric") and reflect_type not in ("even", "odd"):
        raise ValueError(f"Unsupported reflect_type '{reflect_type}' for np.pad.")
    stat_length = kwargs.get("stat_length")
    if stat_length is not None:
        stat_length = _pad_pairs("stat_length", stat_length, aval.ndim, np.int64)
    ends = _pad_pairs("end_values", kwargs.get("end_values", 0), aval.ndim)
    for axis in range(aval.ndim):
        lo, hi = int(widths[axis, 0]), int(widths[axis, 1])
        if lo == 0 and hi == 0:
            continue
        if aval.shape[axis] == 0 and mode != "linear_ramp":
            raise ValueError(
                f"Cannot apply '{mode}' padding to empty axis {axis} (padding {lo, hi})"
            )
        if mode in ("edge", "wrap"):
            x = _pad_edge_or_wrap(x, lo, hi, axis, mode)
        elif mode in ("reflect", "symmetric"):
            x = _pad_reflect(x, lo, hi, axis, mode, reflect_type == "odd")
        elif mode == "linear_ramp":
            x = _pad_linear_ramp(x, lo, hi, axis, ends[axis])
        else:
            x = _pad_stat(x, lo, hi, axis, mode, None if stat_length is None else stat_length[axis])
    return as_array(x)


def _pad_callable(
    array: Any, aval: Any, widths: np.ndarray, func: Any, kwargs: dict[str, Any]
) -> Array:
    """NumPy's callable mode as JAX runs it: zeros around the array, then for
    each axis in order ``func(vector, (before, after), axis, kwargs)`` on every
    1-d slice along it (vmapped over the others), its result the new slice."""
    x = _pad_constant(array, aval, widths, 0)
    ndim = aval.ndim
    for axis in range(ndim):
        pair = (int(widths[axis, 0]), int(widths[axis, 1]))

        def one(vector: Any, _pair: Any = pair, _axis: int = axis) -> Any:
            return func(vector, _pair, _axis, kwargs)

        fn = one
        for _ in range(ndim - 1):
            fn = vmap(fn)
        x = moveaxis(fn(moveaxis(x, axis, -1)), -1, axis)
    return as_array(x)


def _pad_constant(array: Any, aval: Any, widths: np.ndarray, values: Any) -> Array:
    if isinstance(values, (list, tuple)):
        values = asarray(values)
    values_aval = aval_of(values, "pad", "constant_values")
    if values_aval.shape == ():
        value = _like(values, aval)
        config = [(int(lo), int(hi), 0) for lo, hi in widths]
        return lax.pad(array, value, config) if widths.any() else as_array(array)
    table = broadcast_to(values, (aval.ndim, 2))
    for ax in range(aval.ndim):
        for side in (0, 1):
            if widths[ax, side]:
                entry = lax.reshape(lax.slice(table, (ax, side), (ax + 1, side + 1)), ())
                config = [(0, 0, 0)] * aval.ndim
                config[ax] = (int(widths[ax, 0]), 0, 0) if side == 0 else (0, int(widths[ax, 1]), 0)
                array = lax.pad(array, _like(entry, aval), config)
    return as_array(array)


def _like(value: Any, aval: Any) -> Any:
    """A rank-0 ``value`` converted to ``aval``'s dtype and weak type."""
    if dtypes.is_python_scalar(value):
        return scalar_as(value, aval.dtype, aval.weak_type)
    value_aval = aval_of(value, "pad", "constant_values")
    if (value_aval.dtype, value_aval.weak_type) == (aval.dtype, aval.weak_type):
        return value
    return lax.convert_element_type(value, aval.dtype, weak_type=aval.weak_type)


__all__ = ["pad"]
