"""Differences and integrals: ``gradient`` (second-order central differences,
array spacings, ``edge_order=2``), ``trapezoid`` and ``unwrap``.
"""

from __future__ import annotations

import builtins
import math
from typing import Any

from refimpl import dtypes
from refimpl.numpy._creation import asarray
from refimpl.numpy._promote import (
    aval_of,
    checked_array,
    promote_dtypes,
    promote_dtypes_inexact,
)
from refimpl.numpy._reductions import cumsum, sum
from refimpl.numpy._shape import concatenate, moveaxis, normalize_axis, reshape
from refimpl.numpy._stacking import diff
from refimpl.numpy._ufuncs import abs as abs_
from refimpl.numpy._ufuncs import remainder, where

Array = Any
ArrayLike = Any


def _aval(x: Any, name: str = "rnp", position: Any = 0) -> Any:
    return aval_of(x, name, position)


# --- gradient -----------------------------------------------------------------------------


def _along(x: Any, axis: int, start: int | None, stop: int | None) -> Any:
    index = [slice(None)] * _aval(x).ndim
    index[axis] = slice(start, stop)
    return x[tuple(index)]


def _gradient_axis(f: Any, h: Any, axis: int, edge_order: int) -> Any:
    """One axis of :func:`gradient` (``h`` a scalar step or the coordinates)."""
    n = _aval(f).shape[axis]

    def s(start: int | None, stop: int | None) -> Any:
        return _along(f, axis, start, stop)

    if _aval(h).ndim == 0:
        inner = (s(2, None) - s(None, -2)) * 0.5 / h
        if edge_order == 1:
            first = (s(1, 2) - s(0, 1)) / h
            last = (s(-1, None) - s(-2, -1)) / h
        else:
            first = (-1.5 * s(0, 1) + 2.0 * s(1, 2) - 0.5 * s(2, 3)) / h
            last = (0.5 * s(-3, -2) - 2.0 * s(-2, -1) + 1.5 * s(-1, None)) / h
        return concatenate([first, inner, last], axis=axis)
    if _aval(h).ndim != 1 or _aval(h).shape[0] != n:
        raise ValueError(
            f"gradient: a spacing array must be 1-d with the axis' length {n}, "
            f"got shape {_aval(h).shape}"
        )
    shape = [1] * _aval(f).ndim
    shape[axis] = n
    h = reshape(h, tuple(shape))

    def x(start: int | None, stop: int | None) -> Any:
        return _along(h, axis, start, stop)

    # Second-order differences on the uneven grid (NumPy's weights).
    dx1, dx2 = x(1, -1) - x(0, -2), x(2, None) - x(1, -1)
    inner = (
        -dx2 / (dx1 * (dx1 + dx2)) * s(0, -2)
        + (dx2 - dx1) / (dx1 * dx2) * s(1, -1)
        + dx1 / (dx2 * (dx1 + dx2)) * s(2, None)
    )
    if edge_order == 1:
        first = (s(1, 2) - s(0, 1)) / (x(1, 2) - x(0, 1))
        last = (s(-1, None) - s(-2, -1)) / (x(-1, None) - x(-2, -1))
    else:
        d1, d2 = x(1, 2) - x(0, 1), x(2, 3) - x(1, 2)
        first = (
            -(2.0 * d1 + d2) / (d1 * (d1 + d2)) * s(0, 1)
            + (d1 + d2) / (d1 * d2) * s(1, 2)
            - d1 / (d2 * (d1 + d2)) * s(2, 3)
        )
        d1, d2 = x(-2, -1) - x(-3, -2), x(-1, None) - x(-2, -1)
        last = (
            d2 / (d1 * (d1 + d2)) * s(-3, -2)
            - (d2 + d1) / (d1 * d2) * s(-2, -1)
            + (2.0 * d2 + d1) / (d2 * (d1 + d2)) * s(-1, None)
        )
    return concatenate([first, inner, last], axis=axis)


def gradient(
    f: ArrayLike, *varargs: ArrayLike, axis: Any = None, edge_order: int | None = None
) -> Any:
    """The gradient of the sampled function ``f``, by finite differences along each axis.

    Second-order central differences inside and one-sided differences of
    order ``edge_order`` (1, the default, or 2 as NumPy; JAX takes only the
    default) at the ends, along each axis in ``axis`` (all by default).
    ``varargs``: none (unit spacing), one for every axis, or one per axis,
    each a scalar step or the 1-d coordinates along that axis. One array per
    axis (the array itself for a single axis). ``f`` and the spacings are
    promoted together to an inexact dtype.

    Args:
        f: The sampled values.
        *varargs: The spacings (see above).
        axis: The axis or axes to differentiate along, or None for all
            (keyword-only).
        edge_order: 1 or 2, or None for 1 (keyword-only).

    Returns:
        An array of ``f``'s shape for one axis, else a list of them (NumPy
        returns a tuple).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.gradient(rnp.array([1.0, 2.0, 4.0, 7.0]))
        Array([1. , 1.5, 2.5, 3. ], dtype=float32)
        >>> rnp.gradient(rnp.array([1.0, 4.0, 9.0]), rnp.array([1.0, 2.0, 3.0]))
        Array([3., 4., 5.], dtype=float32)
    """
    f = checked_array("gradient", f)
    spacings = [checked_array("gradient", h, i + 1) for i, h in enumerate(varargs)]
    f, *spacings = promote_dtypes_inexact("gradient", f, *spacings)
    order = 1 if edge_order is None else edge_order
    if order not in (1, 2):
        raise ValueError(f"gradient: edge_order must be 1 or 2, got {edge_order!r}")
    ndim = _aval(f).ndim
    axes = (
        tuple(builtins.range(ndim))
        if axis is None
        else tuple(
            normalize_axis("gradient", a, ndim)
            for a in (axis if isinstance(axis, (tuple, list)) else (axis,))
        )
    )
    if not axes:
        return []
    if min(_aval(f).shape[a] for a in axes) < order + 1:
        raise ValueError(
            f"gradient: each differentiated axis needs at least {order + 1} elements "
            f"(edge_order={order}), got shape {_aval(f).shape}"
        )
    if not spacings:
        steps: list[Any] = [1.0] * len(axes)
    elif len(spacings) == 1:
        steps = spacings * len(axes)
    elif len(spacings) == len(axes):
        steps = spacings
    else:
        raise TypeError(
            f"gradient: {len(spacings)} spacings for {len(axes)} axes: give none, one, "
            "or one per axis"
        )
    out = [_gradient_axis(f, asarray(h), a, order) for a, h in zip(axes, steps, strict=True)]
    return out[0] if len(out) == 1 else out


# --- integration, statistics, polynomials ---------------------------------------------------


def trapezoid(y: ArrayLike, x: ArrayLike = None, dx: ArrayLike = 1.0, axis: int = -1) -> Array:
    """The integral of ``y`` along ``axis`` by the trapezoidal rule.

    ``sum((y[1:] + y[:-1]) / 2 * diff(x))`` along ``axis`` (spacing ``dx``
    without ``x``), as JAX: ``y`` and ``x`` are promoted together; an array
    ``dx`` lines up with ``y``'s trailing axes (its ``axis`` is the integration
    axis), and a spacing constant along that axis uses
    ``dx * (sum(y) - (y[0] + y[-1]) / 2)``.

    Args:
        y: The sampled values.
        x: The sample points (1-d, or ``y``'s shape), or None.
        dx: The spacing when ``x`` is None (a scalar or an array).
        axis: The axis to integrate along.

    Returns:
        An inexact array of ``y``'s shape without ``axis``.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.trapezoid(rnp.array([1.0, 2.0, 3.0]))
        Array(4., dtype=float32)
        >>> rnp.trapezoid(rnp.array([1.0, 2.0, 3.0]), x=rnp.array([0.0, 1.0, 3.0]))
        Array(6.5, dtype=float32)
    """

    y = checked_array("trapezoid", y)
    if x is None:
        (y,) = promote_dtypes_inexact("trapezoid", y)
        widths = asarray(dx)
        rank = _aval(widths).ndim
        if rank:
            lead = (1,) * (_aval(y).ndim - rank)
            widths = moveaxis(reshape(widths, lead + _aval(widths).shape), axis, -1)
    else:
        x = checked_array("trapezoid", x, 1)
        y, x = promote_dtypes_inexact("trapezoid", y, x)
        widths = diff(x) if _aval(x).ndim == 1 else moveaxis(diff(x, axis=axis), axis, -1)
    y = moveaxis(y, axis, -1)
    w_shape = _aval(widths).shape
    if not w_shape or w_shape[-1] == 1:
        width = widths[..., 0] if w_shape else widths
        return width * (sum(y, axis=-1) - 0.5 * (y[..., 0] + y[..., -1]))
    return 0.5 * sum(widths * (y[..., 1:] + y[..., :-1]), axis=-1)


def unwrap(
    p: ArrayLike, discont: ArrayLike = None, axis: int = -1, period: ArrayLike = 2 * math.pi
):
    """``p`` unwrapped: jumps larger than ``discont`` replaced by their ``period``-complement.

    ``p`` with jumps larger than ``discont`` (default ``period / 2``) along
    ``axis`` replaced by their ``period``-complement (NumPy's algorithm).

    ``p`` and ``period`` are promoted together: integers with an integer
    period stay integers. Complex input is a ValueError.

    Args:
        p: The signal (phases, by default in radians).
        discont: The largest jump left as it is, or None for ``period / 2``.
        axis: The axis to unwrap along.
        period: The period of the signal.

    Returns:
        An array of ``p``'s shape, in the promoted dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.unwrap(rnp.array([0.0, 0.75, 1.5, 0.25]), period=1.0)
        Array([ 0.  , -0.25, -0.5 , -0.75], dtype=float32)
        >>> rnp.unwrap(rnp.array([0, 6, 12, 2, 8]), period=10)
        Array([  0,  -4,  -8,  -8, -12], dtype=int32)
    """

    p = checked_array("unwrap", p)
    # The result keeps the joined dtype of p and period, as jnp: an integer
    # signal with an integer period stays integer (half period floor-divided).
    p, period = (asarray(a) for a in promote_dtypes("unwrap", p, period))
    p_aval = aval_of(p, "unwrap", 0)
    if dtypes.is_complex(p_aval.dtype):
        raise ValueError("unwrap: complex input is not supported (as JAX)")
    axis = normalize_axis("unwrap", axis, p_aval.ndim)
    if p_aval.shape[axis] == 0:
        return p
    discont = period / 2 if discont is None else discont
    half = period // 2 if dtypes.is_integer(p_aval.dtype) else period / 2
    dd = diff(p, axis=axis)
    ddmod = remainder(dd + half, period) - half
    ddmod = where((ddmod == -half) & (dd > 0), half, ddmod)
    correction = where(abs_(dd) < discont, 0, ddmod - dd)
    moved = moveaxis(p, axis, -1)
    corr = moveaxis(cumsum(correction, axis=axis), axis, -1)
    head = moved[..., :1]
    out = concatenate([head, moved[..., 1:] + corr], axis=-1)
    return moveaxis(out, -1, axis)


__all__ = [
    "gradient",
    "unwrap",
    "trapezoid",
]
