"""``refimpl.tree``: ``jax.tree``, the short names of ``jax.tree_util``.

``ri.tree.map(f, tree, *rest)`` is ``ri.tree_util.tree_map`` and so on
(key paths: ``flatten_with_path``, ``map_with_path``, ``leaves_with_path``,
whose paths are tuples of ``tree_util``'s key objects); the functions
defined here:

* ``reduce(f, tree, initializer)`` = ``functools.reduce`` over the leaves;
  ``reduce_associative`` pairs them as a balanced tree; ``all(tree)`` = every
  leaf truthy;
* ``transpose(outer, inner, tree)``: a tree of structure ``outer`` whose
  subtrees have structure ``inner`` becomes ``inner`` of ``outer`` trees.
"""

from __future__ import annotations

import builtins
import functools
from collections.abc import Callable
from typing import Any

from refimpl import tree_util
from refimpl.tree_util import PyTreeDef

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
    "structure",
    "transpose",
    "unflatten",
]


flatten_with_path = tree_util.tree_flatten_with_path
leaves_with_path = tree_util.tree_leaves_with_path
map_with_path = tree_util.tree_map_with_path
keystr = tree_util.keystr


_NO_INITIALIZER: Any = object()


def reduce(
    function: Callable[[Any, Any], Any],
    tree: Any,
    initializer: Any = _NO_INITIALIZER,
    is_leaf: Callable[[Any], bool] | None = None,
) -> Any:
    """``functools.reduce(function, leaves(tree)[, initializer])``."""
    items = tree_util.tree_leaves(tree, is_leaf)
    if initializer is _NO_INITIALIZER:
        return functools.reduce(function, items)
    return functools.reduce(function, items, initializer)


def all(tree: Any, *, is_leaf: Callable[[Any], bool] | None = None) -> bool:  # noqa: A001
    """Whether every leaf is truthy."""
    return builtins.all(tree_util.tree_leaves(tree, is_leaf))


def reduce_associative(
    operation: Callable[[Any, Any], Any],
    tree: Any,
    *,
    identity: Any = _NO_INITIALIZER,
    is_leaf: Callable[[Any], bool] | None = None,
) -> Any:
    """Combine the leaves with an associative ``operation`` (pairwise, as a
    balanced tree); ``identity`` for a tree with no leaves."""
    items = tree_util.tree_leaves(tree, is_leaf)
    if not items:
        if identity is _NO_INITIALIZER:
            raise TypeError("Must specify identity for parallel reduction of empty sequence.")
        return identity
    while len(items) > 1:
        paired = [operation(a, b) for a, b in zip(items[::2], items[1::2])]
        items = paired + ([items[-1]] if len(items) % 2 else [])
    return items[0]


def broadcast(
    prefix_tree: Any, full_tree: Any, is_leaf: Callable[[Any], bool] | None = None
) -> Any:
    """``prefix_tree``'s leaves repeated over ``full_tree``'s subtrees."""
    return tree_util.tree_broadcast(prefix_tree, full_tree, is_leaf)


def transpose(
    outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None, pytree_to_transpose: Any
) -> Any:
    """An ``outer`` tree of ``inner`` trees -> an ``inner`` tree of ``outer`` trees."""
    flat = tree_util.tree_leaves(pytree_to_transpose)
    if inner_treedef is None:
        first = outer_treedef.flatten_up_to(pytree_to_transpose)[0]
        inner_treedef = tree_util.tree_structure(first)
    n_inner, n_outer = inner_treedef.num_leaves, outer_treedef.num_leaves
    if len(flat) != n_inner * n_outer:
        raise TypeError(
            f"transpose: the tree has {len(flat)} leaves, expected "
            f"{n_outer} (outer) x {n_inner} (inner) = {n_inner * n_outer}"
        )
    rows = [flat[i * n_inner : (i + 1) * n_inner] for i in range(n_outer)]
    columns = [outer_treedef.unflatten([row[j] for row in rows]) for j in range(n_inner)]
    return inner_treedef.unflatten(columns)


map = tree_util.tree_map  # noqa: A001
leaves = tree_util.tree_leaves
structure = tree_util.tree_structure
flatten = tree_util.tree_flatten
unflatten = tree_util.tree_unflatten
