"""Window selections: JAX's ``select_and_gather_add`` and
``select_and_scatter_add``, the two halves of a max/min pool's derivative.

JAX 0.10.2 keeps them in ``jax._src.lax.windowed_reductions`` (not exported
from ``jax.lax``; its own tests call them), so they are not in ``__all__``.
Here they are built on the window primitives' own rule
(:func:`refimpl.primitives.windowed.chosen_values`, the tangent of
``reduce_window_max``/``_min``), so a pool's derivative and these functions
choose the same element: the first on ties.

* ``select_and_gather_add(t, x, select_prim, ...)``: per window of ``x``, the
  element of ``t`` at the place ``select_prim`` (``ge``/``gt``: the largest,
  ``le``/``lt``: the smallest) chooses in ``x``.
* ``select_and_scatter_add(s, x, select_prim, ...)``: its transpose in ``t``:
  each window's ``s`` added at that place, an array of ``x``'s shape.
"""

from __future__ import annotations

from typing import Any

from refimpl import tracing
from refimpl.core import ShapedArray
from refimpl.primitives import windowed
from refimpl.transforms import ad

# select_prim's name -> the window reduction whose choice it makes
_REDUCTION = {
    "ge": "reduce_window_max",
    "gt": "reduce_window_max",
    "le": "reduce_window_min",
    "lt": "reduce_window_min",
}


def _reduction(name: str, select_prim: Any) -> str:
    reduction = _REDUCTION.get(str(getattr(select_prim, "name", "")))
    if reduction is None:
        raise TypeError(
            f"{name}: select_prim must be lax.ge_p, gt_p, le_p or lt_p, got {select_prim!r}"
        )
    return reduction


def select_and_gather_add(
    tangents: Any,
    operand: Any,
    select_prim: Any,
    window_dimensions: Any,
    window_strides: Any,
    padding: Any,
    base_dilation: Any,
    window_dilation: Any,
) -> Any:
    """Per window of ``operand``, the element of ``tangents`` (the same shape)
    at the place ``select_prim`` chooses. Example: ``tangents = [10, 20, 30,
    40]``, ``operand = [1, 3, 2, 5]``, ``ge``, window 2, stride 2: ``[20, 40]``."""
    reduction = _reduction("select_and_gather_add", select_prim)
    params, out_shape = windowed.window_params(
        "select_and_gather_add",
        operand,
        window_dimensions,
        window_strides,
        padding,
        base_dilation,
        window_dilation,
    )
    return windowed.chosen_values(operand, tangents, reduction, out_shape, params)


def select_and_scatter_add(
    source: Any,
    operand: Any,
    select_prim: Any,
    window_dimensions: Any,
    window_strides: Any,
    padding: Any,
) -> Any:
    """``operand``'s shape, each window's ``source`` element added at the
    place ``select_prim`` chooses in that window (0 where no window chose):
    the transpose of :func:`select_and_gather_add` in its tangents, computed
    as that (its pullback of ``source``)."""
    _reduction("select_and_scatter_add", select_prim)
    ones = None  # no dilation: JAX's select_and_scatter_add takes none

    def gather(tangents: Any) -> Any:
        return select_and_gather_add(
            tangents, operand, select_prim, window_dimensions, window_strides, padding, ones, ones
        )

    # linear in the tangents: any point will do; zeros of source's dtype
    shape = tracing.get_aval(operand, "select_and_scatter_add", 1).shape
    dtype = tracing.get_aval(source, "select_and_scatter_add", 0).dtype
    _, pullback = ad.vjp(gather, ad.zeros_like_aval(ShapedArray(shape, dtype)))
    return pullback(source)[0]
