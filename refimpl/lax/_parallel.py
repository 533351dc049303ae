"""Named-axis ``jax.lax`` functions over the collective primitives:
``axis_size``, ``pshuffle``, ``pbroadcast``, ``pswapaxes``, and
``with_sharding_constraint`` (refimpl.transforms.sharded); and ``pargmax`` /
``pargmin``, which JAX 0.10.2 keeps in ``jax._src.lax.parallel`` (not exported
from ``jax.lax``; its own tests call them), so they are not in ``__all__``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from refimpl import pytree
from refimpl.primitives import collectives, elementwise, structural
from refimpl.transforms import sharded


def axis_size(axis_name: Any) -> int:
    """The size of the named axis (vmap/pmap ``axis_name``), a Python int; a
    tuple of names gives the product."""
    if isinstance(axis_name, (tuple, list)):
        return int(np.prod([collectives.axis_size(n) for n in axis_name], dtype=np.int64))
    return collectives.axis_size(axis_name)


def with_sharding_constraint(x: Any, shardings: Any) -> Any:
    """The value of the pytree ``x``, laid out as ``shardings`` (a prefix tree
    of ``Sharding``\\ s or ``PartitionSpec``\\ s over the current mesh): a
    concrete leaf comes back as an array with that sharding; a traced one
    (after JAX's checks: rank, divisibility, Auto mesh axes only) goes
    through a ``sharding_constraint`` equation, the identity on values.
    ``shardings`` must not contain ``None`` (a ``ValueError``, as JAX)."""
    return sharded.with_sharding_constraint(x, shardings)


def pshuffle(x: Any, axis_name: Any, perm: Sequence[int]) -> Any:
    """Member ``i`` gets member ``perm[i]``'s ``x`` (``perm`` a permutation of
    ``range(n)``): ``ppermute`` with the pairs ``(perm[i], i)``."""
    perm = [int(p) for p in perm]
    if set(perm) != set(range(len(perm))):
        raise ValueError(f"pshuffle: `perm` does not represent a permutation: {perm}")
    return collectives.ppermute(x, axis_name, list(zip(perm, range(len(perm)), strict=True)))


def pbroadcast(x: Any, axis_name: Any, source: int) -> Any:
    """Every member gets member ``source``'s ``x`` (a pytree): the
    ``source``-th piece of an ``all_gather`` (whose transpose sends the sum of
    the cotangents back to ``source`` alone)."""
    n = collectives.axis_size(axis_name)
    source = int(source)
    if not 0 <= source < n:
        raise ValueError(f"pbroadcast: source {source} is outside range({n}) of axis {axis_name}")
    tu = pytree
    return tu.tree_map(
        lambda leaf: structural.index_in_dim(
            collectives.all_gather(leaf, axis_name), source, 0, False
        ),
        x,
    )


def pswapaxes(x: Any, axis_name: Any, axis: int, *, axis_index_groups: Any = None) -> Any:
    """Swap the named axis with ``x``'s ``axis`` (their sizes must agree):
    ``all_to_all(x, axis_name, axis, axis)``."""
    return collectives.all_to_all(x, axis_name, axis, axis, axis_index_groups=axis_index_groups)


def pargmax(x: Any, axis_name: Any) -> Any:
    """Elementwise, the position along the named axis of the member whose
    ``x`` is largest (the lowest such position on ties), int32, the same on
    every member: ``pmax`` finds the value, ``pmin`` of the positions that
    hold it picks the first."""
    return _position_of(x, collectives.pmax(x, axis_name), axis_name)


def pargmin(x: Any, axis_name: Any) -> Any:
    """As :func:`pargmax`, for the smallest ``x``."""
    return _position_of(x, collectives.pmin(x, axis_name), axis_name)


def _position_of(x: Any, chosen: Any, axis_name: Any) -> Any:
    # one axis only: with several, "the position" would need a numbering of
    # their product, which JAX's pargmax does not define either (JAX's words
    # name pargmin for both)
    if isinstance(axis_name, (tuple, list)):
        raise TypeError(f"pargmin only accepts a single axis, got {axis_name}")
    here = collectives.axis_index(axis_name)
    holds = elementwise.eq(x, chosen)
    shape = tuple(getattr(holds, "shape", ()))
    mine = structural.broadcast_in_dim(here, shape, ())
    # members that do not hold it offer the largest int32, which pmin never picks
    # while some member holds it
    none = structural.broadcast_in_dim(np.int32(np.iinfo(np.int32).max), shape, ())
    return collectives.pmin(elementwise.select(holds, mine, none), axis_name)


__all__ = [
    "axis_size",
    "pbroadcast",
    "pshuffle",
    "pswapaxes",
    "with_sharding_constraint",
]
