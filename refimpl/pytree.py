"""Pytrees as refimpl's transformations see them: nested containers
flattened to a list of leaves plus a structure.

This module is the implementation, and its view is the physical one: an
array of an extended dtype (a typed PRNG key array) is a node whose one child
is its key data, because refimpl's programs hold only NumPy dtypes, so
``jit``, ``vmap``, ``scan`` and the fast path's signatures see the data.
``refimpl.tree_util`` (``jax.tree_util``) is the user's view over the same
registry, in which such an array is a leaf, as in JAX (see
:func:`register_extended_leaf`). Every user-visible tree is a prefix of its
physical tree, so a user's ``in_axes`` or sharding tree applies to both.

Node types (everything else is a leaf), as in JAX:

- ``tuple``, ``list``: children in order;
- ``dict``: children in sorted key order (keys must be mutually orderable);
  unflattening builds the dict in sorted key order;
- ``collections.OrderedDict``: children in insertion order;
- ``collections.defaultdict``: sorted keys, ``default_factory`` is node data;
- ``None``: a node with no children (zero leaves);
- namedtuple classes: one node type per class, children in field order;
- types registered with :func:`register_pytree_node`.

Dispatch is on the exact ``type(x)``: a subclass of ``dict`` or ``list`` is a
leaf unless registered itself (namedtuples are recognised by being ``tuple``
subclasses with ``_fields``).

A :class:`PyTreeDef` is immutable and hashable (its hash is precomputed), and
two are ``==`` when they have the same node types, dict keys, namedtuple
classes and equal node data at every node.
"""

from __future__ import annotations

import collections
import dataclasses
import difflib
import functools
import textwrap
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

__all__ = [
    "PyTreeDef",
    "is_extended_leaf",
    "prefix_errors",
    "register_extended_leaf",
    "register_pytree_node",
    "tree_flatten",
    "tree_flatten_with_path",
    "tree_leaves",
    "tree_map",
    "tree_structure",
    "tree_unflatten",
    "treedef_difference",
    "treedef_differences",
]


class _NodeKind:
    """How to take one node type apart and put it back together.

    ``flatten(x) -> (children, data)``; ``unflatten(data, children) -> x``;
    ``keys(data, n) -> list of path-key strings`` for the ``n`` children;
    ``flatten_with_keys(x) -> (((key, child), ...), data)`` for types
    registered with their own key paths (None: keys from ``tag``).
    """

    __slots__ = ("flatten", "flatten_with_keys", "keys", "name", "tag", "type", "unflatten")

    def __init__(
        self,
        nodetype: type,
        tag: str,
        flatten: Callable[[Any], tuple[Iterable[Any], Any]],
        unflatten: Callable[[Any, tuple[Any, ...]], Any],
        keys: Callable[[Any, int], list[str]],
        flatten_with_keys: Callable[[Any], tuple[Iterable[Any], Any]] | None = None,
    ) -> None:
        self.type = nodetype
        self.flatten_with_keys = flatten_with_keys
        self.name = "None" if nodetype is type(None) else nodetype.__name__
        self.tag = tag  # "tuple", "list", "dict", "None", "namedtuple" or "custom"
        self.flatten = flatten
        self.unflatten = unflatten
        self.keys = keys

    def __repr__(self) -> str:
        return f"<node kind {self.name}>"


def _index_keys(data: Any, n: int) -> list[str]:
    return [f"[{i}]" for i in range(n)]


def _dict_keys(data: tuple[Any, ...], n: int) -> list[str]:
    return [f"[{k!r}]" for k in data]


def _sorted_keys(d: dict[Any, Any]) -> tuple[Any, ...]:
    try:
        return tuple(sorted(d))
    except TypeError as e:  # JAX 0.10.2's words, then why
        raise ValueError(
            "Comparator raised exception while sorting pytree dictionary keys: the keys "
            f"must be mutually orderable (they are sorted); got {list(d)!r}"
        ) from e


def _flatten_dict(d: dict[Any, Any]) -> tuple[list[Any], tuple[Any, ...]]:
    keys = _sorted_keys(d)
    return [d[k] for k in keys], keys


def _flatten_defaultdict(d: collections.defaultdict[Any, Any]) -> tuple[list[Any], Any]:
    keys = _sorted_keys(d)
    return [d[k] for k in keys], (d.default_factory, keys)


def _flatten_ordered_dict(
    d: collections.OrderedDict[Any, Any],
) -> tuple[list[Any], tuple[Any, ...]]:
    keys = tuple(d)
    return [d[k] for k in keys], keys


_TUPLE = _NodeKind(tuple, "tuple", lambda x: (x, None), lambda _, c: tuple(c), _index_keys)
_LIST = _NodeKind(list, "list", lambda x: (x, None), lambda _, c: list(c), _index_keys)
_DICT = _NodeKind(
    dict,
    "dict",
    _flatten_dict,
    lambda keys, c: dict(zip(keys, c, strict=True)),
    _dict_keys,
)
_NONE = _NodeKind(type(None), "None", lambda x: ((), None), lambda _, c: None, _index_keys)
_ORDERED_DICT = _NodeKind(
    collections.OrderedDict,
    "dict",
    _flatten_ordered_dict,
    lambda keys, c: collections.OrderedDict(zip(keys, c, strict=True)),
    _dict_keys,
)
_DEFAULTDICT = _NodeKind(
    collections.defaultdict,
    "dict",
    _flatten_defaultdict,
    lambda data, c: collections.defaultdict(data[0], zip(data[1], c, strict=True)),
    lambda data, n: _dict_keys(data[1], n),
)

_MISSING: Any = object()

# Types whose values are leaves to the user but nodes here (the module docstring)
_EXTENDED_LEAVES: set[type] = set()


def register_extended_leaf(nodetype: type) -> None:
    """Make the registered node type ``nodetype`` a leaf of the user's view
    (``refimpl.tree_util``), keeping it a node for the transformations."""
    if _registry.get(nodetype) is None:
        raise ValueError(f"register_extended_leaf: {nodetype.__name__} is not a registered node")
    _EXTENDED_LEAVES.add(nodetype)
    _user_registry[nodetype] = None


def is_extended_leaf(x: Any) -> bool:
    """Whether ``x`` is a leaf of the user's view that is a node here: the
    ``is_leaf`` that gives the user's view (``tree_flatten`` takes it on a
    fast path)."""
    return type(x) in _EXTENDED_LEAVES


_BUILTIN_KINDS = (_TUPLE, _LIST, _DICT, _NONE, _ORDERED_DICT, _DEFAULTDICT)

# type -> _NodeKind, or None for a known leaf type. Filled lazily for new types.
_registry: dict[type, _NodeKind | None] = {k.type: k for k in _BUILTIN_KINDS}
# The same for the user's view: the extended leaves map to None. Kept in step
# by _kind_of and the registrations, so the hot path does one lookup either way.
_user_registry: dict[type, _NodeKind | None] = dict(_registry)


def _namedtuple_kind(cls: type) -> _NodeKind:
    fields = cls._fields  # type: ignore[attr-defined]
    return _NodeKind(
        cls,
        "namedtuple",
        lambda x: (x, None),
        lambda _, c: cls(*c),
        lambda data, n: [f".{f}" for f in fields],
    )


def _is_namedtuple_class(cls: type) -> bool:
    return issubclass(cls, tuple) and isinstance(getattr(cls, "_fields", None), tuple)


def _kind_of(cls: type) -> _NodeKind | None:
    """The node kind of a type (None for leaves), classifying and caching new types."""
    try:
        return _registry[cls]
    except KeyError:
        kind = _namedtuple_kind(cls) if _is_namedtuple_class(cls) else None
        _registry[cls] = kind
        _user_registry[cls] = None if cls in _EXTENDED_LEAVES else kind
        return kind


def register_pytree_node(
    nodetype: type,
    flatten_func: Callable[[Any], tuple[Iterable[Any], Hashable]],
    unflatten_func: Callable[[Any, Sequence[Any]], Any],
    flatten_with_keys_func: Callable[[Any], tuple[Iterable[Any], Hashable]] | None = None,
) -> None:
    """Make ``nodetype`` a pytree node (JAX's convention).

    ``flatten_func(x) -> (children, aux_data)``; ``unflatten_func(aux_data,
    children) -> x``; optionally ``flatten_with_keys_func(x) -> (((key,
    child), ...), aux_data)`` gives the children's key paths (otherwise they
    are ``FlattenedIndexKey(i)``). ``aux_data`` should be hashable and
    comparable with ``==``: it is part of the structure (and of jit cache
    keys). Registering a type twice, or a built-in node type, is a ``ValueError``.

    Registration is global and lasts for the process: every pytree function
    (``tree_map``, ``jit``'s and ``grad``'s argument handling, ``vmap``'s
    axes) then looks inside ``nodetype``'s values. A namedtuple class (a
    node already) may be registered again, to replace its default.

    Args:
        nodetype: The class to register.
        flatten_func: ``x -> (children, aux_data)``.
        unflatten_func: ``(aux_data, children) -> x``.
        flatten_with_keys_func: Optional
            ``x -> (((key, child), ...), aux_data)``.

    Returns:
        None.

    Raises:
        TypeError: ``nodetype`` is not a type.
        ValueError: ``nodetype`` is already registered (or is a built-in
            node type: tuple, list, dict, None).

    Example:
        >>> import refimpl as ri
        >>> class Point:
        ...     def __init__(self, x, y):
        ...         self.x, self.y = x, y
        >>> ri.register_pytree_node(
        ...     Point, lambda p: ((p.x, p.y), None), lambda aux, xy: Point(*xy)
        ... )
        >>> ri.tree_leaves(Point(1, [2, 3]))
        [1, 2, 3]
        >>> ri.jit(lambda p: p.x + p.y)(Point(1.0, 2.0))
        Array(3., dtype=float32, weak_type=True)
    """
    if not isinstance(nodetype, type):
        raise TypeError(f"register_pytree_node: expected a type, got {nodetype!r}")
    existing = _registry.get(nodetype)
    if existing is not None and not _is_namedtuple_class(nodetype):
        raise ValueError(f"register_pytree_node: {nodetype.__name__} is already registered")
    _registry[nodetype] = _NodeKind(
        nodetype, "custom", flatten_func, unflatten_func, _index_keys, flatten_with_keys_func
    )
    _user_registry[nodetype] = _registry[nodetype]


def register_pytree_with_keys(
    nodetype: type,
    flatten_with_keys: Callable[[Any], tuple[Iterable[Any], Hashable]],
    unflatten_func: Callable[[Any, Sequence[Any]], Any],
    flatten_func: Callable[[Any], tuple[Iterable[Any], Hashable]] | None = None,
) -> None:
    """:func:`register_pytree_node` with the children's key paths:
    ``flatten_with_keys(x) -> (((key, child), ...), aux_data)``; ``flatten_func``
    defaults to it with the keys dropped."""
    if flatten_func is None:

        def flatten_func(x: Any) -> tuple[list[Any], Any]:
            pairs, data = flatten_with_keys(x)
            return [child for _, child in pairs], data

    register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys)


def register_pytree_node_class(cls: type) -> type:
    """Class decorator: register ``cls`` with its ``tree_flatten`` method and
    ``tree_unflatten`` classmethod (JAX's convention)."""
    unflatten = cls.tree_unflatten  # type: ignore[attr-defined]
    register_pytree_node(cls, lambda x: x.tree_flatten(), unflatten)
    return cls


def register_pytree_with_keys_class(cls: type) -> type:
    """Class decorator: register ``cls`` with its ``tree_flatten_with_keys``
    method (and ``tree_flatten``, if it has one) and ``tree_unflatten`` classmethod."""
    flatten = (lambda x: x.tree_flatten()) if hasattr(cls, "tree_flatten") else None
    unflatten = cls.tree_unflatten  # type: ignore[attr-defined]
    register_pytree_with_keys(cls, lambda x: x.tree_flatten_with_keys(), unflatten, flatten)
    return cls


def register_dataclass(
    nodetype: type,
    data_fields: Sequence[str] | None = None,
    meta_fields: Sequence[str] | None = None,
    drop_fields: Sequence[str] = (),
) -> type:
    """Register a dataclass-like type: ``data_fields`` are its children (key
    paths ``GetAttrKey(name)``), ``meta_fields`` its static node data; it is
    rebuilt as ``nodetype(**fields)``. For a dataclass both may be omitted:
    fields are data unless ``field(metadata=dict(static=True))``. Returns
    ``nodetype`` (a decorator)."""
    if data_fields is None or meta_fields is None:
        if (data_fields is None) != (meta_fields is None):
            raise TypeError(
                "register_dataclass: data_fields and meta_fields must both be specified when "
                f"either is specified. Got data_fields={data_fields} meta_fields={meta_fields}."
            )
        if not dataclasses.is_dataclass(nodetype):
            raise TypeError(
                "register_dataclass: data_fields and meta_fields are required when nodetype "
                f"is not a dataclass. Got nodetype={nodetype!r}."
            )
        fields = [f for f in dataclasses.fields(nodetype) if f.name not in drop_fields]
        data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
    data_fields, meta_fields = tuple(data_fields), tuple(meta_fields)
    if dataclasses.is_dataclass(nodetype):
        init_fields = {f.name for f in dataclasses.fields(nodetype) if f.init}
        init_fields.difference_update(drop_fields)
        if {*meta_fields, *data_fields} != init_fields:
            msg = (
                "data_fields and meta_fields must include all dataclass fields with "
                "``init=True`` and only them."
            )
            if missing := init_fields - {*meta_fields, *data_fields}:
                msg += (
                    f" Missing fields: {missing}. Add them to drop_fields to suppress this error."
                )
            if unexpected := {*meta_fields, *data_fields} - init_fields:
                msg += f" Unexpected fields: {unexpected}."
            raise ValueError(msg)
    if overlap := set(data_fields) & set(meta_fields):
        raise ValueError(
            f"data_fields and meta_fields must not overlap. Overlapping fields: {overlap}."
        )

    def flatten(x: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        return tuple(getattr(x, n) for n in data_fields), tuple(getattr(x, n) for n in meta_fields)

    def flatten_with_keys(x: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        pairs = tuple((GetAttrKey(n), getattr(x, n)) for n in data_fields)
        return pairs, tuple(getattr(x, n) for n in meta_fields)

    def unflatten(meta: Any, data: Iterable[Any]) -> Any:
        return nodetype(**dict(zip(meta_fields, meta)), **dict(zip(data_fields, data)))

    register_pytree_node(nodetype, flatten, unflatten, flatten_with_keys)
    return nodetype


def register_static(cls: type) -> type:
    """Register ``cls`` as a node with no children: its instances are node data
    (static under ``jit``), so they must be hashable. Returns ``cls``."""
    register_pytree_node(cls, lambda x: ((), x), lambda x, _: x)
    return cls


# --------------------------------------------------------------------------
# Structure keys
#
# Internally a structure is a nested tuple ("key"): ``None`` for a leaf and
# ``(kind, data, (child keys...))`` for a node. Building one while flattening
# costs a tuple per node, and ``==``/``hash`` on it run in C. PyTreeDef wraps
# the root key.

_Key = Any  # None | tuple[_NodeKind, Any, tuple[_Key, ...]]


def _data_equal(a: Any, b: Any) -> bool:
    if a is b:
        return True
    try:
        return bool(a == b)
    except (TypeError, ValueError):  # e.g. arrays in aux data: ambiguous truth value
        return False


def _keys_equal(a: _Key, b: _Key) -> bool:
    """Structural equality that tolerates aux data whose ``==`` is not a bool."""
    if a is None or b is None:
        return a is b
    return (
        a[0] is b[0]
        and len(a[2]) == len(b[2])
        and _data_equal(a[1], b[1])
        and all(_keys_equal(x, y) for x, y in zip(a[2], b[2], strict=True))
    )


def _hash_key(key: _Key) -> int:
    """Hash of a structure; unhashable aux data is left out of it."""
    try:
        return hash(key)
    except TypeError:
        kind, data, children = key
        try:
            data_hash = hash(data)
        except TypeError:
            data_hash = 0
        return hash((kind, data_hash, tuple(None if c is None else _hash_key(c) for c in children)))


def _count_leaves(key: _Key) -> int:
    if key is None:
        return 1
    return sum(_count_leaves(c) for c in key[2])


def _count_nodes(key: _Key) -> int:
    if key is None:
        return 1
    return 1 + sum(_count_nodes(c) for c in key[2])


def _build(key: _Key, leaves: Iterator[Any]) -> Any:
    if key is None:
        return next(leaves)
    kind, data, children = key
    built = [next(leaves) if c is None else _build(c, leaves) for c in children]
    return kind.unflatten(data, tuple(built))


def _key_str(key: _Key) -> str:
    """The body of a PyTreeDef repr: ``*`` leaves, Python-like containers."""
    if key is None:
        return "*"
    kind, data, children = key
    parts = [_key_str(c) for c in children]
    if kind is _TUPLE:
        return "(" + parts[0] + ",)" if len(parts) == 1 else "(" + ", ".join(parts) + ")"
    if kind is _LIST:
        return "[" + ", ".join(parts) + "]"
    if kind is _DICT:  # OrderedDict and defaultdict show as other nodes
        return "{" + ", ".join(f"{k!r}: {p}" for k, p in zip(data, parts, strict=True)) + "}"
    if kind is _NONE:
        return "None"
    if kind.tag == "namedtuple":
        fields = kind.type._fields
        return f"{kind.name}(" + ", ".join(f"{f}={p}" for f, p in zip(fields, parts)) + ")"
    return f"{kind.name}[{data!r}](" + ", ".join(parts) + ")"


def _describe(key: _Key) -> str:
    """A short description of a structure's root node."""
    if key is None:
        return "leaf"
    kind, data, children = key
    if kind is _NONE:
        return "None"
    if kind is _DEFAULTDICT:
        return f"defaultdict keys {list(data[1])!r}"
    if kind.tag == "dict":
        return f"{kind.name} keys {list(data)!r}"
    if kind.tag in ("tuple", "list"):
        return f"{kind.name} of {len(children)}"
    if kind.tag == "namedtuple":
        return f"namedtuple {kind.name}"
    return f"{kind.name}[{data!r}] of {len(children)}"


def _child_paths(key: tuple[_NodeKind, Any, tuple[_Key, ...]]) -> list[str]:
    kind, data, children = key
    return kind.keys(data, len(children))


class PyTreeDef:
    """The structure of a pytree: node kinds, node data and children, no leaves.

    Hashable (hash computed once) and ``==`` by structure. Attributes:
    ``num_leaves``, ``num_nodes``, ``is_leaf``. Methods: ``unflatten(leaves)``,
    ``flatten_up_to(tree)``, ``children()``, ``node_data()``.
    """

    __slots__ = ("_hash", "_key", "num_leaves")

    def __init__(self, key: _Key, num_leaves: int | None = None) -> None:
        self._key = key
        self.num_leaves = _count_leaves(key) if num_leaves is None else num_leaves
        self._hash = _hash_key(key)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, PyTreeDef) or self._hash != other._hash:
            return False
        try:
            return bool(self._key == other._key)
        except (TypeError, ValueError):  # aux data whose == is not a bool (arrays)
            return _keys_equal(self._key, other._key)

    def __repr__(self) -> str:
        return f"PyTreeDef({_key_str(self._key)})"

    @property
    def num_nodes(self) -> int:
        """Number of nodes, leaves included (a ``None`` node counts as one)."""
        return _count_nodes(self._key)

    @property
    def is_leaf(self) -> bool:
        """Whether this treedef is a single leaf (``*``)."""
        return self._key is None

    def children(self) -> list[PyTreeDef]:
        """The treedefs of this node's children (empty for leaves and None)."""
        return [] if self._key is None else [PyTreeDef(c) for c in self._key[2]]

    def node_data(self) -> tuple[type, Any] | None:
        """``(node type, node data)`` of the root; None for a leaf."""
        return None if self._key is None else (self._key[0].type, self._key[1])

    def unflatten(self, leaves: Iterable[Any]) -> Any:
        """Build the pytree with this structure from ``leaves`` (in flatten order)."""
        leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(f"unflatten: {self!r} has {self.num_leaves} leaves, got {len(leaves)}")
        return _build(self._key, iter(leaves))

    def flatten_up_to(self, tree: Any) -> list[Any]:
        """The subtrees of ``tree`` at this structure's leaf positions.

        ``tree`` must have this treedef as a prefix; a ``ValueError`` names the
        path and both node descriptions otherwise.
        """
        out: list[Any] = []
        _flatten_up_to(self._key, tree, out, "")
        return out


def _flatten_up_to(key: _Key, tree: Any, out: list[Any], path: str) -> None:
    if key is None:
        out.append(tree)
        return
    kind: _NodeKind
    kind, data, subkeys = key
    got = None
    if _kind_of(type(tree)) is not kind:
        got = _describe(_flatten(tree, []))
    else:
        children, tree_data = kind.flatten(tree)
        children = list(children)
        if len(children) != len(subkeys) or not _data_equal(tree_data, data):
            got = _describe((kind, tree_data, (None,) * len(children)))
    if got is not None:
        raise ValueError(
            f"pytree structure mismatch at {path or 'root'}: expected {_describe(key)}, got {got}"
        )
    for sub, child, step in zip(subkeys, children, _child_paths(key), strict=True):
        _flatten_up_to(sub, child, out, path + step)


# --------------------------------------------------------------------------
# flatten / unflatten


def _flatten(x: Any, leaves: list[Any], registry: dict[type, _NodeKind | None] = _registry) -> _Key:
    """Append the leaves of ``x`` to ``leaves``; return its structure key. The
    hot path. ``registry``: ``_registry`` or the user's view's ``_user_registry``."""
    kind = registry.get(type(x), _MISSING)
    if kind is _MISSING:
        _kind_of(type(x))
        kind = registry[type(x)]
    if kind is None:
        leaves.append(x)
        return None
    children, data = kind.flatten(x)
    subkeys: list[_Key] = []
    for c in children:  # leaf children inline: saves a call per leaf
        if registry.get(type(c), _MISSING) is None:
            leaves.append(c)
            subkeys.append(None)
        else:
            subkeys.append(_flatten(c, leaves, registry))
    return (kind, data, tuple(subkeys))


def _flatten_is_leaf(x: Any, leaves: list[Any], is_leaf: Callable[[Any], bool]) -> _Key:
    kind = None if is_leaf(x) else _kind_of(type(x))
    if kind is None:
        leaves.append(x)
        return None
    children, data = kind.flatten(x)
    return (kind, data, tuple([_flatten_is_leaf(c, leaves, is_leaf) for c in children]))


def tree_flatten(
    tree: Any, is_leaf: Callable[[Any], bool] | None = None
) -> tuple[list[Any], PyTreeDef]:
    """Leaves of ``tree`` (depth first, dicts in sorted key order) and its structure.

    ``is_leaf(x)``, if given, is asked at every node first; True makes ``x`` a leaf.

    Nodes are tuples, lists, dicts, namedtuples, None (a node with no
    children, so no leaf) and registered classes
    (:func:`register_pytree_node`); anything else, arrays included, is a
    leaf. The order is JAX's, so the leaves line up with ``jax``'s for the
    same tree; refimpl's ``PyTreeDef`` is its own class (not JAX's).

    Args:
        tree: Any Python value.
        is_leaf: Optional predicate stopping the descent.

    Returns:
        ``(leaves, treedef)``: the list of leaves and a ``PyTreeDef`` (the
        structure with the leaves left out; hashable and comparable).

    Raises:
        Exception: Whatever ``is_leaf`` or a registered node's
            ``flatten_func`` raises propagates; built-in nodes never raise.

    Example:
        >>> import refimpl as ri
        >>> leaves, treedef = ri.tree_flatten([1, (2, None), {"b": 3, "a": 4}])
        >>> leaves
        [1, 2, 4, 3]
        >>> treedef
        PyTreeDef([*, (*, None), {'a': *, 'b': *}])
    """
    leaves: list[Any] = []
    if is_leaf is None:
        key = _flatten(tree, leaves)
    elif is_leaf is is_extended_leaf:
        key = _flatten(tree, leaves, _user_registry)
    else:
        key = _flatten_is_leaf(tree, leaves, is_leaf)
    return leaves, PyTreeDef(key, len(leaves))


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> Any:
    """Inverse of :func:`tree_flatten`: ``treedef`` filled with ``leaves``.

    Leaves are placed in flatten order and may be any values (they need not
    have the types of the original leaves); registered nodes are rebuilt by
    their ``unflatten_func``.

    Args:
        treedef: A ``PyTreeDef`` from :func:`tree_flatten` or
            :func:`tree_structure`.
        leaves: As many values as ``treedef`` has leaves.

    Returns:
        A new tree of ``treedef``'s structure.

    Raises:
        ValueError: The number of leaves differs from ``treedef``'s.

    Example:
        >>> import refimpl as ri
        >>> treedef = ri.tree_structure({"b": (1, 2), "a": [3]})
        >>> ri.tree_unflatten(treedef, [10, 20, 30])
        {'a': [10], 'b': (20, 30)}
    """
    return treedef.unflatten(leaves)


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
    """The leaves of ``tree``, in flatten order (``tree_flatten(tree)[0]``).

    Dicts are visited in sorted key order; None is an empty node, so it
    contributes no leaf (as in JAX).

    Args:
        tree: Any Python value.
        is_leaf: Optional predicate: True makes a node a leaf.

    Returns:
        The list of leaves.

    Raises:
        Exception: Whatever ``is_leaf`` or a registered node's
            ``flatten_func`` raises propagates.

    Example:
        >>> import refimpl as ri
        >>> ri.tree_leaves({"b": [1, None], "a": (2,)})
        [2, 1]
    """
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
    """The treedef of ``tree`` (``tree_flatten(tree)[1]``).

    Two trees have equal structures when they have the same node types,
    dict keys, registered nodes' aux data and number of leaves; the leaves'
    values and types do not matter. ``jit`` keys its cache on it.

    Args:
        tree: Any Python value.
        is_leaf: Optional predicate: True makes a node a leaf.

    Returns:
        A ``PyTreeDef`` (hashable; ``num_leaves`` counts its leaves).

    Raises:
        Exception: Whatever ``is_leaf`` or a registered node's
            ``flatten_func`` raises propagates.

    Example:
        >>> import refimpl as ri
        >>> ri.tree_structure([1, (2, 3)])
        PyTreeDef([*, (*, *)])
    """
    return tree_flatten(tree, is_leaf)[1]


def tree_map(
    f: Callable[..., Any],
    tree: Any,
    *rest: Any,
    is_leaf: Callable[[Any], bool] | None = None,
) -> Any:
    """Apply ``f`` leafwise: ``f(leaf, *corresponding leaves of rest)``.

    The result has the structure of ``tree``. As in JAX, each tree in ``rest``
    must have ``tree``'s structure as a prefix (at a leaf of ``tree`` it may
    hold a whole subtree, passed to ``f`` as is); otherwise ``ValueError``
    naming both structures and where they differ.

    ``f`` is called once per leaf, in flatten order, with plain Python
    values (nothing is traced). None is an empty node, so ``f`` never sees
    it unless ``is_leaf`` says so.

    Args:
        f: A function of ``1 + len(rest)`` leaves.
        tree: The tree whose structure the result has.
        *rest: Trees with ``tree``'s structure as a prefix.
        is_leaf: Optional predicate: True makes a node of ``tree`` a leaf.

    Returns:
        A tree of ``tree``'s structure holding ``f``'s results.

    Raises:
        ValueError: A tree of ``rest`` does not have ``tree``'s structure
            as a prefix.

    Example:
        >>> import refimpl as ri
        >>> ri.tree_map(lambda a, b: a + b, {"x": 1, "y": (2, 3)}, {"x": 10, "y": (20, 30)})
        {'x': 11, 'y': (22, 33)}
    """
    leaves, treedef = tree_flatten(tree, is_leaf)
    if not rest:
        return treedef.unflatten([f(x) for x in leaves])
    columns = [leaves]
    for i, other in enumerate(rest, start=1):
        try:
            columns.append(treedef.flatten_up_to(other))
        except ValueError as e:
            raise ValueError(
                f"tree_map: tree {i} has structure {tree_structure(other)!r}, which does not "
                f"match the first tree's structure {treedef!r}: {e}"
            ) from None
    return treedef.unflatten([f(*xs) for xs in zip(*columns, strict=True)])


# --------------------------------------------------------------------------
# paths and differences


def flatten_with_path_strings(
    tree: Any, is_leaf: Callable[[Any], bool] | None = None
) -> tuple[list[tuple[str, Any]], PyTreeDef]:
    """Like :func:`tree_flatten`, with each leaf paired with its path string
    (what refimpl's error messages print).

    Paths concatenate one step per level: ``[0]`` for sequence positions and
    registered nodes' children, ``['a']`` for dict keys (their repr), ``.x``
    for namedtuple fields; e.g. ``[0]['w']``. A root leaf's path is ``""``.
    """
    leaves, treedef = tree_flatten(tree, is_leaf)
    paths: list[str] = []
    _collect_paths(treedef._key, "", paths)
    return list(zip(paths, leaves, strict=True)), treedef


def _collect_paths(key: _Key, prefix: str, out: list[str]) -> None:
    if key is None:
        out.append(prefix)
        return
    for step, child in zip(_child_paths(key), key[2], strict=True):
        _collect_paths(child, prefix + step, out)


def treedef_difference(a: PyTreeDef, b: PyTreeDef) -> str:
    """One line saying where ``a`` and ``b`` first differ; "" when they are equal.

    E.g. ``"tuple of 2 vs tuple of 3 at [1]"``, ``"dict keys ['a', 'b'] vs ['a']"``,
    ``"leaf vs list of 2 at [0]['w']"``. Paths are in ``a``'s terms; none at the root.
    """
    if a == b:
        return ""
    found = _first_difference(a._key, b._key, "")
    if found is None:  # pragma: no cover  (unequal structures differ somewhere)
        return ""
    desc_a, desc_b, path = found
    return f"{desc_a} vs {desc_b}" + (f" at {path}" if path else "")


def _first_difference(a: _Key, b: _Key, path: str) -> tuple[str, str, str] | None:
    if a is None and b is None:
        return None
    same_kind = a is not None and b is not None and a[0] is b[0]
    if same_kind and len(a[2]) == len(b[2]) and _data_equal(a[1], b[1]):
        for step, ca, cb in zip(_child_paths(a), a[2], b[2], strict=True):
            found = _first_difference(ca, cb, path + step)
            if found is not None:
                return found
        return None
    da, db = _describe(a), _describe(b)
    if da == db:  # same description, different node data
        da, db = f"{da} with data {a[1]!r}", f"{db} with data {b[1]!r}"
    elif same_kind and a[0].tag == "dict":
        db = db.split(" keys ", 1)[1]  # "dict keys ['a', 'b'] vs ['a']"
    return da, db, path


def treedef_differences(a: PyTreeDef, b: PyTreeDef) -> list[tuple[str, str, str, str]]:
    """Every place ``a`` and ``b`` differ, as JAX 0.10.2's ``equality_errors``
    describes them: ``(path, what a has, what b has, why they differ)``, e.g.
    ``("[1]", "tuple of length 2", "tuple of length 3", "the lengths do not
    match")``; none below a node that differs. Empty when they are equal."""
    found: list[tuple[str, str, str, str]] = []
    _differences(a._key, b._key, "", found)
    return found


def _differences(a: _Key, b: _Key, path: str, found: list) -> None:
    if a is None and b is None:
        return
    what_a = "pytree leaf" if a is None else str(a[0].type)
    what_b = "pytree leaf" if b is None else str(b[0].type)
    if a is None or b is None or a[0] is not b[0]:
        found.append((path, what_a, what_b, "their Python types differ"))
        return
    kind, n_a, n_b = a[0], len(a[2]), len(b[2])
    if kind.tag in ("tuple", "list") and n_a != n_b:
        name = kind.name
        found.append(
            (path, f"{name} of length {n_a}", f"{name} of length {n_b}", "the lengths do not match")
        )
        return
    if n_a != n_b:
        why = "the numbers of children do not match"
        if kind.tag == "dict":
            keys = set(a[1]).symmetric_difference(b[1])
            why += f", with the symmetric difference of key sets: {{{' '.join(map(repr, keys))}}}"
        children = (f"{what_a} with {n_a} child{'ren' if n_a > 1 else ''}",
                    f"{what_b} with {n_b} child{'ren' if n_b > 1 else ''}")  # fmt: skip
        found.append((path, *children, why))
        return
    if not _data_equal(a[1], b[1]):
        found.append(
            (
                path,
                f"{what_a} with pytree metadata {a[1]}",
                f"{what_b} with pytree metadata {b[1]}",
                "the pytree node metadata does not match",
            )
        )
        return
    for step, ca, cb in zip(_child_paths(a), a[2], b[2], strict=True):
        _differences(ca, cb, path + step, found)


# --------------------------------------------------------------------------
# key paths (JAX's): each leaf's path is a tuple of key objects


class SequenceKey:
    """A position in a tuple or list (``[0]``)."""

    __slots__ = ("idx",)
    __match_args__ = ("idx",)

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
    """A dict key (``['w']``)."""

    __slots__ = ("key",)
    __match_args__ = ("key",)

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
    """An attribute: namedtuple fields, dataclass fields (``.x``)."""

    __slots__ = ("name",)
    __match_args__ = ("name",)

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
    """The position of a child of a node registered without key paths."""

    __slots__ = ("key",)
    __match_args__ = ("key",)

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


def _simple_key(key: Any) -> str:
    for attr in ("idx", "key", "name"):
        if hasattr(key, attr):
            return str(getattr(key, attr))
    return str(key)


def keystr(keys: tuple[Any, ...], *, simple: bool = False, separator: str = "") -> str:
    """A key path as a string: ``[0]['w'].x``; with ``simple=True`` the bare
    keys (``0``, ``w``, ``x``) joined by ``separator``."""
    if simple:
        return separator.join(_simple_key(k) for k in keys)
    return separator.join(str(k) for k in keys)


def _child_keys(kind: _NodeKind, data: Any, n: int) -> list[Any]:
    if kind.tag in ("tuple", "list"):
        return [SequenceKey(i) for i in range(n)]
    if kind.tag == "dict":
        names = data[1] if kind is _DEFAULTDICT else data
        return [DictKey(k) for k in names]
    if kind.tag == "namedtuple":
        return [GetAttrKey(f) for f in kind.type._fields]  # type: ignore[attr-defined]
    return [FlattenedIndexKey(i) for i in range(n)]


def _flatten_one_with_keys(x: Any, kind: _NodeKind) -> tuple[list[Any], list[Any], Any]:
    """``(keys, children, data)`` of one node."""
    if kind.flatten_with_keys is not None:
        pairs, data = kind.flatten_with_keys(x)
        pairs = list(pairs)
        return [k for k, _ in pairs], [c for _, c in pairs], data
    children, data = kind.flatten(x)
    children = list(children)
    return _child_keys(kind, data, len(children)), children, data


def _flatten_with_keys(
    x: Any,
    prefix: tuple[Any, ...],
    out: list[tuple[tuple[Any, ...], Any]],
    is_leaf: Callable[[Any], bool] | None,
) -> _Key:
    kind = None if is_leaf is not None and is_leaf(x) else _kind_of(type(x))
    if kind is None:
        out.append((prefix, x))
        return None
    keys, children, data = _flatten_one_with_keys(x, kind)
    subkeys = [_flatten_with_keys(c, (*prefix, k), out, is_leaf) for k, c in zip(keys, children)]
    return (kind, data, tuple(subkeys))


def tree_flatten_with_path(
    tree: Any, is_leaf: Callable[[Any], bool] | None = None
) -> tuple[list[tuple[tuple[Any, ...], Any]], PyTreeDef]:
    """``(key path, leaf)`` pairs in flatten order, and the treedef. A key path
    is a tuple of :class:`SequenceKey`/:class:`DictKey`/:class:`GetAttrKey`/
    :class:`FlattenedIndexKey` (or a registered type's own keys)."""
    pairs: list[tuple[tuple[Any, ...], Any]] = []
    key = _flatten_with_keys(tree, (), pairs, is_leaf)
    return pairs, PyTreeDef(key, len(pairs))


def tree_leaves_with_path(
    tree: Any, is_leaf: Callable[[Any], bool] | None = None
) -> list[tuple[tuple[Any, ...], Any]]:
    """The ``(key path, leaf)`` pairs of :func:`tree_flatten_with_path`."""
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_map_with_path(
    f: Callable[..., Any], tree: Any, *rest: Any, is_leaf: Callable[[Any], bool] | None = None
) -> Any:
    """``f(key path, leaf, *corresponding leaves of rest)`` at every leaf."""
    pairs, treedef = tree_flatten_with_path(tree, is_leaf)
    columns = [treedef.flatten_up_to(other) for other in rest]
    outs = [f(path, leaf, *(c[i] for c in columns)) for i, (path, leaf) in enumerate(pairs)]
    return treedef.unflatten(outs)


# --------------------------------------------------------------------------
# treedef helpers, as JAX's


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    return treedef.is_leaf


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
    return treedef.children()


def treedef_tuple(treedefs: Iterable[PyTreeDef]) -> PyTreeDef:
    """The treedef of a tuple whose children have ``treedefs``."""
    return PyTreeDef((_TUPLE, None, tuple(t._key for t in treedefs)))


def is_tree_node(x: Any) -> bool:
    """Whether ``x`` is a pytree node (not a leaf)."""
    return _kind_of(type(x)) is not None


def flatten_one_level(tree: Any) -> tuple[list[Any], Any]:
    """The children and node data of ``tree``'s root; ``ValueError`` for a leaf."""
    kind = _kind_of(type(tree))
    if kind is None:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    children, data = kind.flatten(tree)
    return list(children), data


def flatten_one_level_with_keys(tree: Any) -> tuple[list[tuple[Any, Any]], Any]:
    """The ``(key, child)`` pairs and node data of ``tree``'s root."""
    kind = _kind_of(type(tree))
    if kind is None:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    keys, children, data = _flatten_one_with_keys(tree, kind)
    return list(zip(keys, children)), data


def all_leaves(iterable: Iterable[Any], is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """Whether every element of ``iterable`` is a leaf."""
    if is_leaf is None:
        return all(_kind_of(type(x)) is None for x in iterable)
    return all(tree_structure(x, is_leaf).is_leaf for x in iterable)


# --------------------------------------------------------------------------
# why a tree is not a prefix of another, in JAX 0.10.2's words


def prefix_errors(
    prefix_tree: Any, full_tree: Any, is_leaf: Callable[[Any], bool] | None = None
) -> list[Callable[[str], ValueError]]:
    """Every place ``prefix_tree`` is not a tree prefix of ``full_tree``, as
    JAX 0.10.2's ``prefix_errors`` finds and words them: each a function of
    the prefix's name (``pmap in_axes``) giving the ``ValueError`` (``pytree
    structure error: different lengths of tuple at key path ...``); none below
    a node that differs. Empty when it is a prefix."""
    found: list[Callable[[str], ValueError]] = []
    _prefix_errors((), prefix_tree, full_tree, is_leaf, found)
    return found


def _prefix_errors(path: tuple, prefix: Any, full: Any, is_leaf: Any, found: list) -> None:
    if tree_structure(prefix, is_leaf).is_leaf:  # a leaf is a prefix of any tree
        return
    if type(prefix) is not type(full):
        found.append(_structure_error(path, "different types", _types_differ(prefix, full)))
        return
    prefix_kind = _kind_of(type(prefix))
    assert prefix_kind is not None  # not a leaf, so a node
    keys, children, data = _flatten_one_with_keys(prefix, prefix_kind)
    full_keys, full_children, full_data = _flatten_one_with_keys(full, prefix_kind)
    if isinstance(prefix, (list, tuple)):
        if len(prefix) != len(full):
            what = f"different lengths of {type(prefix).__name__}"
            found.append(_structure_error(path, what, _lengths_differ(prefix, full)))
            return
    elif len(children) != len(full_children):
        why = _children_differ(type(prefix), keys, full_keys)
        found.append(_structure_error(path, "different numbers of pytree children", why))
        return
    if not _data_equal(data, full_data):
        why = _metadata_differs(type(prefix), data, full_data)
        found.append(_structure_error(path, "different pytree metadata", why))
        return
    for key, a, b in zip(keys, children, full_children):
        _prefix_errors((*path, key), a, b, is_leaf, found)


def _structure_error(path: tuple, what: str, why: str) -> Callable[[str], ValueError]:
    def error(name: str) -> ValueError:
        return ValueError(
            f"pytree structure error: {what} at key path\n    {name}{keystr(path)}\n"
            f"At that key path, the prefix pytree {name} has a subtree of type{why}"
        )

    return error


def _types_differ(prefix: Any, full: Any) -> str:
    return (
        f"\n    {type(prefix)}\nbut at the same key path the full pytree has a subtree of "
        f"different type\n    {type(full)}."
    )


def _lengths_differ(prefix: Any, full: Any) -> str:
    return (
        f" {type(prefix).__name__} of length {len(prefix)}, but the full pytree has a subtree "
        f"of the same type but of length {len(full)}."
    )


def _children_differ(node_type: type, keys: list, full_keys: list) -> str:
    words = " ".join(_simple_key(k) for k in keys)
    full_words = " ".join(_simple_key(k) for k in full_keys)
    try:
        diff = " ".join(_simple_key(k) for k in set(keys).symmetric_difference(full_keys))
    except TypeError:  # unhashable keys
        diff = None
    return (
        f"\n    {node_type}\nwith {len(keys)} child keys\n    {words}\nbut at the same key "
        f"path the full pytree has a subtree of the same type but with {len(full_keys)} child "
        f"keys\n    {full_words}\n"
        + ("" if diff is None else f"so the symmetric difference on key sets is\n    {diff}")
    )


def _metadata_differs(node_type: type, data: Any, full_data: Any) -> str:
    lines = difflib.ndiff(str(data).splitlines(), str(full_data).splitlines())
    diff = textwrap.indent("\n".join(lines), "    ")
    return (
        f"\n    {node_type}\nwith metadata\n    {data}\nbut at the same key path the full "
        f"pytree has a subtree of the same type but with metadata\n    {full_data}\nso the "
        f"diff in the metadata at these pytree nodes is\n{diff}"
    )


def tree_broadcast(
    prefix_tree: Any, full_tree: Any, is_leaf: Callable[[Any], bool] | None = None
) -> Any:
    """``prefix_tree`` with each leaf repeated over the subtree of
    ``full_tree`` at its position."""
    treedef = tree_structure(prefix_tree, is_leaf)
    subtrees = treedef.flatten_up_to(full_tree)
    leaves = tree_leaves(prefix_tree, is_leaf)
    return treedef.unflatten(
        [tree_map(lambda _, v=v: v, sub) for v, sub in zip(leaves, subtrees, strict=True)]
    )


class Partial(functools.partial[Any]):
    """``functools.partial`` as a pytree: the bound arguments are its
    children, the function its node data (so it can cross ``jit``)."""

    def __new__(klass, func: Any, *args: Any, **kw: Any) -> Partial:  # noqa: N804
        return super().__new__(klass, func, *args, **kw)


register_pytree_node(
    Partial,
    lambda p: ((p.args, p.keywords), p.func),
    lambda func, xs: Partial(func, *list(xs)[0], **list(xs)[1]),
)


# --------------------------------------------------------------------------
# reduce, transpose (refimpl.tree's reduce, all, reduce_associative, transpose)

_NO_INITIALIZER: Any = object()


def tree_reduce(
    function: Callable[[Any, Any], Any],
    tree: Any,
    initializer: Any = _NO_INITIALIZER,
    is_leaf: Callable[[Any], bool] | None = None,
) -> Any:
    """``functools.reduce(function, leaves(tree)[, initializer])``."""
    items = tree_leaves(tree, is_leaf)
    if initializer is _NO_INITIALIZER:
        return functools.reduce(function, items)
    return functools.reduce(function, items, initializer)


def tree_all(tree: Any, *, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """Whether every leaf is truthy."""
    return all(tree_leaves(tree, is_leaf))


def tree_reduce_associative(
    operation: Callable[[Any, Any], Any],
    tree: Any,
    *,
    identity: Any = _NO_INITIALIZER,
    is_leaf: Callable[[Any], bool] | None = None,
) -> Any:
    """Combine the leaves with an associative ``operation`` (pairwise, as a
    balanced tree); ``identity`` for a tree with no leaves."""
    items = tree_leaves(tree, is_leaf)
    if not items:
        if identity is _NO_INITIALIZER:
            raise TypeError("Must specify identity for parallel reduction of empty sequence.")
        return identity
    while len(items) > 1:
        paired = [operation(a, b) for a, b in zip(items[::2], items[1::2])]
        items = paired + ([items[-1]] if len(items) % 2 else [])
    return items[0]


def tree_transpose(
    outer_treedef: PyTreeDef,
    inner_treedef: PyTreeDef | None,
    pytree_to_transpose: Any,
    *,
    is_leaf: Callable[[Any], bool] | None = None,
) -> Any:
    """An ``outer`` tree of ``inner`` trees -> an ``inner`` tree of ``outer``
    trees. ``is_leaf``: the view's (``refimpl.tree_util`` passes the user's)."""
    flat = tree_leaves(pytree_to_transpose, is_leaf)
    if inner_treedef is None:
        first = outer_treedef.flatten_up_to(pytree_to_transpose)[0]
        inner_treedef = tree_structure(first, is_leaf)
    n_inner, n_outer = inner_treedef.num_leaves, outer_treedef.num_leaves
    if len(flat) != n_inner * n_outer:
        raise TypeError(
            f"transpose: the tree has {len(flat)} leaves, expected "
            f"{n_outer} (outer) x {n_inner} (inner) = {n_inner * n_outer}"
        )
    rows = [flat[i * n_inner : (i + 1) * n_inner] for i in range(n_outer)]
    columns = [outer_treedef.unflatten([row[j] for row in rows]) for j in range(n_inner)]
    return inner_treedef.unflatten(columns)


__all__ += [
    "DictKey", "FlattenedIndexKey", "GetAttrKey", "Partial", "SequenceKey", "all_leaves",
    "flatten_one_level", "flatten_one_level_with_keys", "flatten_with_path_strings",
    "is_tree_node", "keystr", "register_dataclass", "register_pytree_node_class",
    "register_pytree_with_keys", "register_pytree_with_keys_class", "register_static",
    "tree_all", "tree_broadcast", "tree_leaves_with_path", "tree_map_with_path",
    "tree_reduce", "tree_reduce_associative", "tree_transpose", "treedef_children",
    "treedef_is_leaf", "treedef_tuple",
]  # fmt: skip

# The annotation types of key paths (``jax.tree_util.KeyEntry``/``KeyPath``):
# an entry is one of the key classes above (or a user node's own key), a path
# the tuple of entries from the root to a leaf.
KeyEntry = TypeVar("KeyEntry", bound=Any)
KeyPath = tuple[KeyEntry, ...]

__all__ += ["KeyEntry", "KeyPath"]
