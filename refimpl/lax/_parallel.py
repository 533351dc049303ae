"""Named-axis ``jax.lax`` functions over the collective primitives:
``axis_size``, ``pshuffle``, ``pbroadcast``, ``pswapaxes``, and
``with_sharding_constraint`` (refimpl.transforms.sharded).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from refimpl import pytree
from refimpl.primitives import collectives, structural
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


__all__ = [
    "axis_size",
    "pbroadcast",
    "pshuffle",
    "pswapaxes",
    "with_sharding_constraint",
]
