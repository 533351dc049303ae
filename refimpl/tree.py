"""``refimpl.tree``: ``jax.tree``, and the key-path part of ``jax.tree_util``.

``ri.tree.map(f, tree, *rest)`` is ``ri.tree_util.tree_map`` and so on; the
functions below add what ``tree_util`` lacked:

* key paths: a leaf's path is a tuple of keys, one per level -- a
  ``SequenceKey(idx)`` in a tuple, list or None-free sequence, a
  ``DictKey(key)`` in a dict, a ``GetAttrKey(name)`` in a namedtuple, a
  ``FlattenedIndexKey(idx)`` in a custom node -- printed by ``keystr`` as
  ``[0]['w'].x``;
* ``reduce(f, tree, initializer)`` = ``functools.reduce`` over the leaves;
  ``all(tree)`` = every leaf truthy;
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
    "DictKey",
    "FlattenedIndexKey",
    "GetAttrKey",
    "SequenceKey",
    "all",
    "flatten",
    "flatten_with_path",
    "keystr",
    "leaves",
    "leaves_with_path",
    "map",
    "map_with_path",
    "reduce",
    "structure",
    "transpose",
    "unflatten",
]


class SequenceKey:
    __slots__ = ("idx",)

    def __init__(self, idx: int) -> None:
        self.idx = idx

    def __str__(self) -> str:
        return f"[{self.idx!r}]"

    def __repr__(self) -> str:
        return f"SequenceKey(idx={self.idx!r})"

    def __eq__(self, other: Any) -> bool:
        return type(other) is SequenceKey and other.idx == self.idx

    def __hash__(self) -> int:
        return hash(("SequenceKey", self.idx))


class DictKey:
    __slots__ = ("key",)

    def __init__(self, key: Any) -> None:
        self.key = key

    def __str__(self) -> str:
        return f"[{self.key!r}]"

    def __repr__(self) -> str:
        return f"DictKey(key={self.key!r})"

    def __eq__(self, other: Any) -> bool:
        return type(other) is DictKey and other.key == self.key

    def __hash__(self) -> int:
        return hash(("DictKey", self.key))


class GetAttrKey:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        return f".{self.name}"

    def __repr__(self) -> str:
        return f"GetAttrKey(name={self.name!r})"

    def __eq__(self, other: Any) -> bool:
        return type(other) is GetAttrKey and other.name == self.name

    def __hash__(self) -> int:
        return hash(("GetAttrKey", self.name))


class FlattenedIndexKey:
    __slots__ = ("key",)

    def __init__(self, key: int) -> None:
        self.key = key

    def __str__(self) -> str:
        return f"[<flat index {self.key}>]"

    def __repr__(self) -> str:
        return f"FlattenedIndexKey(key={self.key!r})"

    def __eq__(self, other: Any) -> bool:
        return type(other) is FlattenedIndexKey and other.key == self.key

    def __hash__(self) -> int:
        return hash(("FlattenedIndexKey", self.key))


def keystr(keys: tuple[Any, ...]) -> str:
    """A key path as a string, e.g. ``[0]['w'].x``."""
    return "".join(str(k) for k in keys)


def _child_keys(node: tuple[Any, Any, tuple[Any, ...]]) -> list[Any]:
    kind, data, children = node
    if kind.tag in ("tuple", "list"):
        return [SequenceKey(i) for i in range(len(children))]
    if kind.tag == "dict":
        names = data[1] if kind.type.__name__ == "defaultdict" else data
        return [DictKey(k) for k in names]
    if kind.tag == "namedtuple":
        return [GetAttrKey(f) for f in kind.type._fields]
    return [FlattenedIndexKey(i) for i in range(len(children))]


def _paths(node: Any, prefix: tuple[Any, ...], out: list[tuple[Any, ...]]) -> None:
    if node is None:
        out.append(prefix)
        return
    for key, child in zip(_child_keys(node), node[2], strict=True):
        _paths(child, (*prefix, key), out)


def flatten_with_path(
    tree: Any, is_leaf: Callable[[Any], bool] | None = None
) -> tuple[list[tuple[tuple[Any, ...], Any]], PyTreeDef]:
    """``(path, leaf)`` pairs in flatten order, and the treedef."""
    leaves_, treedef = tree_util.tree_flatten(tree, is_leaf)
    paths: list[tuple[Any, ...]] = []
    _paths(treedef._key, (), paths)
    return list(zip(paths, leaves_, strict=True)), treedef


def leaves_with_path(
    tree: Any, is_leaf: Callable[[Any], bool] | None = None
) -> list[tuple[tuple[Any, ...], Any]]:
    return flatten_with_path(tree, is_leaf)[0]


def map_with_path(
    f: Callable[..., Any], tree: Any, *rest: Any, is_leaf: Callable[[Any], bool] | None = None
) -> Any:
    """``f(path, leaf, *corresponding leaves of rest)`` at every leaf."""
    pairs, treedef = flatten_with_path(tree, is_leaf)
    columns = [treedef.flatten_up_to(other) for other in rest]
    outs = [f(path, leaf, *(c[i] for c in columns)) for i, (path, leaf) in enumerate(pairs)]
    return treedef.unflatten(outs)


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


def transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None, pytree_to_transpose):
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


def register_pytree_node_class(cls: type) -> type:
    """Class decorator: register ``cls`` with its ``tree_flatten`` method and
    ``tree_unflatten`` classmethod (JAX's convention)."""
    tree_util.register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


map = tree_util.tree_map  # noqa: A001
leaves = tree_util.tree_leaves
structure = tree_util.tree_structure
flatten = tree_util.tree_flatten
unflatten = tree_util.tree_unflatten
