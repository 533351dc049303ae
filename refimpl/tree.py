"""``refimpl.tree``: ``jax.tree``, the short names of ``jax.tree_util``.

``ri.tree.map(f, tree, *rest)`` is ``ri.tree_util.tree_map`` and so on
(key paths: ``flatten_with_path``, ``map_with_path``, ``leaves_with_path``,
whose paths are tuples of ``tree_util``'s key objects). Those with no
``tree_util`` name of the same form (defined in ``tree_util``, which sits
below every user-surface module):

* ``reduce(f, tree, initializer)`` = ``functools.reduce`` over the leaves;
  ``reduce_associative`` pairs them as a balanced tree; ``all(tree)`` = every
  leaf truthy;
* ``transpose(outer, inner, tree)``: a tree of structure ``outer`` whose
  subtrees have structure ``inner`` becomes ``inner`` of ``outer`` trees.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from refimpl import tree_util

__all__ = [
    "all",
    "broadcast",
    "flatten",
    "flatten_with_path",
    "keystr",
    "leaves",
    "leaves_with_path",
    "map",
    "map_with_path",
    "reduce",
    "reduce_associative",
    "static",
    "structure",
    "transpose",
    "unflatten",
]


flatten_with_path = tree_util.tree_flatten_with_path
leaves_with_path = tree_util.tree_leaves_with_path
map_with_path = tree_util.tree_map_with_path
keystr = tree_util.keystr


def broadcast(
    prefix_tree: Any, full_tree: Any, is_leaf: Callable[[Any], bool] | None = None
) -> Any:
    """``prefix_tree``'s leaves repeated over ``full_tree``'s subtrees."""
    return tree_util.tree_broadcast(prefix_tree, full_tree, is_leaf)


reduce = tree_util.tree_reduce
all = tree_util.tree_all  # noqa: A001
reduce_associative = tree_util.tree_reduce_associative
transpose = tree_util.tree_transpose
map = tree_util.tree_map  # noqa: A001
leaves = tree_util.tree_leaves
structure = tree_util.tree_structure
flatten = tree_util.tree_flatten
unflatten = tree_util.tree_unflatten


def static(**kwargs: Any) -> Any:
    """A ``dataclasses.field`` marked static (``metadata["static"] = True``),
    as ``jax.tree.static``: ``tree_util.register_dataclass`` then keeps it in
    the tree structure, not among the leaves. ``kwargs`` are
    ``dataclasses.field``'s; a ``metadata`` of the caller's is merged over
    the mark (so ``metadata={"static": False}`` wins, as JAX's)."""
    metadata = {"static": True, **(kwargs.pop("metadata", None) or {})}
    return dataclasses.field(metadata=metadata, **kwargs)
