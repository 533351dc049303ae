"""``histogramdd`` and ``histogram2d`` (``histogram`` and
``histogram_bin_edges`` are in ``_stacking.py``).
"""

from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np

from refimpl import lax
from refimpl.numpy._promote import (
    aval_of,
    checked_array,
    is_operand,
    promote_dtypes,
    promote_dtypes_inexact,
)
from refimpl.numpy._reductions import sum as sum_
from refimpl.numpy._search import ravel_multi_index, searchsorted
from refimpl.numpy._selection import bincount
from refimpl.numpy._shape import reshape, stack
from refimpl.numpy._stacking import diff, histogram_bin_edges
from refimpl.numpy._ufuncs import where

Array = Any
ArrayLike = Any


def _aval(x: Any, name: str = "rnp", position: Any = 0) -> Any:
    return aval_of(x, name, position)


# --- histograms ---------------------------------------------------------------------------


def histogramdd(
    sample: ArrayLike,
    bins: Any = 10,
    range: Any = None,  # noqa: A002  (NumPy's name)
    weights: ArrayLike = None,
    density: bool | None = None,
) -> tuple[Array, list[Array]]:
    """The ``D``-dimensional histogram of ``N`` points ``sample[N, D]``.

    Per dimension, ``bins`` (an int or the edges, or one of those per
    dimension) and ``range`` (a ``(lo, hi)`` pair or ``None``) give the edges
    as :func:`histogram_bin_edges`; bins are half-open ``[e_i, e_i+1)`` but
    the last is closed; points outside every bin are not counted. ``weights``
    (one per point) sum instead of counting; ``density`` divides by the total
    and by each bin's volume. Returns ``(hist, [edges per dimension])``.
    Unweighted counts are int32, as JAX's (NumPy's are floats).

    Args:
        sample: The points, an ``(N, D)`` array.
        bins: An int, edges, or one of those per dimension.
        range: One ``(lo, hi)`` pair (or None) per dimension, or None.
        weights: One weight per point, or None.
        density: Whether to normalize to a probability density.

    Returns:
        A pair ``(hist, edges)``: the ``D``-dimensional counts and a list of
        ``D`` 1-d edge arrays.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> points = rnp.array([[0.0, 0.0], [1.0, 1.0], [1.0, 0.0]])
        >>> hist, edges = rnp.histogramdd(points, bins=2)
        >>> hist
        Array([[1, 0],
               [1, 1]], dtype=int32)
        >>> edges
        [Array([0. , 0.5, 1. ], dtype=float32), Array([0. , 0.5, 1. ], dtype=float32)]
    """

    sample = checked_array("histogramdd", sample, 0)
    if weights is None:
        (sample,) = promote_dtypes_inexact("histogramdd", sample)
    else:
        weights = checked_array("histogramdd", weights, "weights")
        if _aval(weights).shape != _aval(sample).shape[:1]:
            raise ValueError(
                f"histogramdd: weights must have one weight per sample: shape "
                f"{_aval(weights).shape} for sample shape {_aval(sample).shape}"
            )
        sample, weights = promote_dtypes_inexact("histogramdd", sample, weights)
    if _aval(sample).ndim != 2:
        raise ValueError(
            f"histogramdd: sample must be 2-d (N points by D dims), got shape {_aval(sample).shape}"
        )
    n_dims = _aval(sample).shape[1]
    if range is not None and (
        len(range) != n_dims or any(r is not None and np.shape(r)[0] != 2 for r in range)
    ):
        raise ValueError(
            f"histogramdd: range must be {n_dims} pairs or Nones (one per dimension), got {range!r}"
        )
    if _items(bins) is not None:
        per_dim = _items(bins)
        assert per_dim is not None  # _items(bins) was just not None
        if len(per_dim) != n_dims:
            raise ValueError(
                f"histogramdd: bins must give one entry per dimension ({n_dims}), "
                f"got {len(per_dim)}"
            )
    else:  # one int or one edges array for every dimension
        per_dim = [bins] * n_dims
    indices, edges = [], []
    for d in builtins.range(n_dims):
        column = sample[:, d]
        edge = histogram_bin_edges(column, per_dim[d], None if range is None else range[d], weights)
        index = searchsorted(edge, column, side="right")
        # The last bin is closed: a point on the last edge belongs to it.
        index = where(column == edge[-1], index - 1, index)
        indices.append(index)
        edges.append(edge)
    # Bin i of a dimension is index i + 1; 0 and len(edges) are the outside.
    counts = tuple(_aval(e).shape[0] + 1 for e in edges)
    flat = ravel_multi_index(tuple(indices), counts, mode="clip")
    hist = bincount(flat, weights, length=math.prod(counts))
    hist = reshape(hist, counts)[(slice(1, -1),) * n_dims]
    if density:
        hist = lax.convert_element_type(hist, _aval(sample).dtype)

        hist = hist / sum_(hist)
        for d, e in enumerate(edges):
            shape = [1] * n_dims
            shape[d] = -1
            hist = hist / reshape(diff(e), tuple(shape))
    return hist, edges


def _items(bins: Any) -> list | None:
    """``bins`` as a list of per-dimension entries if it is a sequence (a list,
    tuple or array of rank >= 1, as JAX's ``list(bins)``), else ``None``."""
    if isinstance(bins, (list, tuple)):
        return list(bins)
    if is_operand(bins) and _aval(bins).ndim >= 1:
        return [bins[i] for i in builtins.range(_aval(bins).shape[0])]
    return None


def histogram2d(
    x: ArrayLike,
    y: ArrayLike,
    bins: Any = 10,
    range: Any = None,  # noqa: A002  (NumPy's name)
    weights: ArrayLike = None,
    density: bool | None = None,
) -> tuple[Array, Array, Array]:
    """The two-dimensional histogram of the points ``(x[i], y[i])``.

    :func:`histogramdd` of the points ``(x[i], y[i])``: ``(hist, x_edges,
    y_edges)``. ``bins`` is an int, one edges array for both, or a pair.
    Unweighted counts are int32, as JAX's (NumPy's are floats).

    Args:
        x: The first coordinates, 1-d.
        y: The second coordinates, 1-d like ``x``.
        bins: An int, one edges array for both axes, or a pair of those.
        range: A pair of ``(lo, hi)`` pairs (or None), or None.
        weights: One weight per point, or None.
        density: Whether to normalize to a probability density.

    Returns:
        A triple ``(hist, x_edges, y_edges)``.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> x, y = rnp.array([0.0, 1.0, 1.0]), rnp.array([0.0, 1.0, 0.0])
        >>> hist, x_edges, y_edges = rnp.histogram2d(x, y, bins=2)
        >>> hist
        Array([[1, 0],
               [1, 1]], dtype=int32)
        >>> x_edges
        Array([0. , 0.5, 1. ], dtype=float32)
    """

    x = checked_array("histogram2d", x, 0)
    y = checked_array("histogram2d", y, 1)
    items = _items(bins)
    if items is None or len(items) != 2:
        bins = [bins, bins]  # an int or one edges array, for both
    if _aval(x).shape != _aval(y).shape or _aval(x).ndim != 1:
        raise ValueError(
            f"histogram2d: x and y must be 1-d of one length, got shapes "
            f"{_aval(x).shape} and {_aval(y).shape}"
        )

    x, y = promote_dtypes("histogram2d", x, y)
    hist, edges = histogramdd(stack([x, y], axis=1), bins, range, weights, density)
    return hist, edges[0], edges[1]


__all__ = [
    "histogram2d",
    "histogramdd",
]
