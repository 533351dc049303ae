"""``refimpl.tree_util``: ``jax.tree_util``, pytrees as the user sees them.

The functions are :mod:`refimpl.pytree`'s, with one difference of view: an
array of an extended dtype (a typed PRNG key array) is a leaf here, as in
JAX, where ``refimpl.pytree`` (what ``jit``, ``vmap`` and ``scan`` use) takes
it apart into its key data. So ``tree_map(lambda k: k.shape, keys)`` sees the
keys' shape, ``tree_leaves(key)`` is ``[key]``, and a tree built here (an
``in_axes`` or sharding tree) is a prefix of the physical tree, which the
transformations accept. Registration, ``PyTreeDef`` and the key-path classes
are shared: one registry, two views.

A user ``is_leaf`` is asked as well; the extended arrays are leaves first.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

from refimpl import pytree
from refimpl.pytree import (
    DictKey,
    FlattenedIndexKey,
    GetAttrKey,
    KeyEntry,
    KeyPath,
    Partial,
    PyTreeDef,
    SequenceKey,
    keystr,
    register_dataclass,
    register_pytree_node,
    register_pytree_node_class,
    register_pytree_with_keys,
    register_pytree_with_keys_class,
    register_static,
    tree_unflatten,
    treedef_children,
    treedef_difference,
    treedef_is_leaf,
    treedef_tuple,
)

__all__ = [
    "DictKey",
    "FlattenedIndexKey",
    "GetAttrKey",
    "KeyEntry",
    "KeyPath",
    "Partial",
    "PyTreeDef",
    "SequenceKey",
    "all_leaves",
    "flatten_one_level",
    "flatten_one_level_with_keys",
    "flatten_with_path_strings",
    "is_tree_node",
    "keystr",
    "register_dataclass",
    "register_pytree_node",
    "register_pytree_node_class",
    "register_pytree_with_keys",
    "register_pytree_with_keys_class",
    "register_static",
    "tree_all",
    "tree_broadcast",
    "tree_flatten",
    "tree_flatten_with_path",
    "tree_leaves",
    "tree_leaves_with_path",
    "tree_map",
    "tree_map_with_path",
    "tree_reduce",
    "tree_reduce_associative",
    "tree_structure",
    "tree_transpose",
    "tree_unflatten",
    "treedef_children",
    "treedef_difference",
    "treedef_is_leaf",
    "treedef_tuple",
]

_NO_INITIALIZER: Any = pytree._NO_INITIALIZER
IsLeaf = Callable[[Any], bool] | None


def _view(is_leaf: IsLeaf) -> Callable[[Any], bool]:
    """The ``is_leaf`` of the user's view, with the user's own predicate."""
    if is_leaf is None:
        return pytree.is_extended_leaf  # recognised by tree_flatten's fast path
    return lambda x: pytree.is_extended_leaf(x) or bool(is_leaf(x))


@functools.wraps(pytree.tree_flatten)
def tree_flatten(tree: Any, is_leaf: IsLeaf = None) -> tuple[list[Any], PyTreeDef]:
    return pytree.tree_flatten(tree, _view(is_leaf))


@functools.wraps(pytree.tree_leaves)
def tree_leaves(tree: Any, is_leaf: IsLeaf = None) -> list[Any]:
    return pytree.tree_leaves(tree, _view(is_leaf))


@functools.wraps(pytree.tree_structure)
def tree_structure(tree: Any, is_leaf: IsLeaf = None) -> PyTreeDef:
    return pytree.tree_structure(tree, _view(is_leaf))


@functools.wraps(pytree.tree_map)
def tree_map(f: Callable[..., Any], tree: Any, *rest: Any, is_leaf: IsLeaf = None) -> Any:
    return pytree.tree_map(f, tree, *rest, is_leaf=_view(is_leaf))


@functools.wraps(pytree.flatten_with_path_strings)
def flatten_with_path_strings(
    tree: Any, is_leaf: IsLeaf = None
) -> tuple[list[tuple[str, Any]], PyTreeDef]:
    return pytree.flatten_with_path_strings(tree, _view(is_leaf))


@functools.wraps(pytree.tree_flatten_with_path)
def tree_flatten_with_path(
    tree: Any, is_leaf: IsLeaf = None
) -> tuple[list[tuple[tuple[Any, ...], Any]], PyTreeDef]:
    return pytree.tree_flatten_with_path(tree, _view(is_leaf))


@functools.wraps(pytree.tree_leaves_with_path)
def tree_leaves_with_path(tree: Any, is_leaf: IsLeaf = None) -> list[tuple[tuple[Any, ...], Any]]:
    return pytree.tree_leaves_with_path(tree, _view(is_leaf))


@functools.wraps(pytree.tree_map_with_path)
def tree_map_with_path(f: Callable[..., Any], tree: Any, *rest: Any, is_leaf: IsLeaf = None) -> Any:
    return pytree.tree_map_with_path(f, tree, *rest, is_leaf=_view(is_leaf))


@functools.wraps(pytree.all_leaves)
def all_leaves(iterable: Iterable[Any], is_leaf: IsLeaf = None) -> bool:
    return pytree.all_leaves(iterable, _view(is_leaf))


@functools.wraps(pytree.tree_broadcast)
def tree_broadcast(prefix_tree: Any, full_tree: Any, is_leaf: IsLeaf = None) -> Any:
    return pytree.tree_broadcast(prefix_tree, full_tree, _view(is_leaf))


@functools.wraps(pytree.tree_reduce)
def tree_reduce(
    function: Callable[[Any, Any], Any],
    tree: Any,
    initializer: Any = _NO_INITIALIZER,
    is_leaf: IsLeaf = None,
) -> Any:
    return pytree.tree_reduce(function, tree, initializer, _view(is_leaf))


@functools.wraps(pytree.tree_all)
def tree_all(tree: Any, *, is_leaf: IsLeaf = None) -> bool:
    return pytree.tree_all(tree, is_leaf=_view(is_leaf))


@functools.wraps(pytree.tree_reduce_associative)
def tree_reduce_associative(
    operation: Callable[[Any, Any], Any],
    tree: Any,
    *,
    identity: Any = _NO_INITIALIZER,
    is_leaf: IsLeaf = None,
) -> Any:
    return pytree.tree_reduce_associative(
        operation, tree, identity=identity, is_leaf=_view(is_leaf)
    )


@functools.wraps(pytree.tree_transpose)
def tree_transpose(
    outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None, pytree_to_transpose: Any
) -> Any:
    return pytree.tree_transpose(
        outer_treedef, inner_treedef, pytree_to_transpose, is_leaf=_view(None)
    )


@functools.wraps(pytree.is_tree_node)
def is_tree_node(x: Any) -> bool:
    return not pytree.is_extended_leaf(x) and pytree.is_tree_node(x)


def _refuse_leaf(tree: Any) -> None:
    if pytree.is_extended_leaf(tree):
        raise ValueError(f"can't tree-flatten type: {type(tree)}")


@functools.wraps(pytree.flatten_one_level)
def flatten_one_level(tree: Any) -> tuple[list[Any], Any]:
    _refuse_leaf(tree)
    return pytree.flatten_one_level(tree)


@functools.wraps(pytree.flatten_one_level_with_keys)
def flatten_one_level_with_keys(tree: Any) -> tuple[list[tuple[Any, Any]], Any]:
    _refuse_leaf(tree)
    return pytree.flatten_one_level_with_keys(tree)
