"""refimpl.tree_util, with jax.tree_util as the oracle for leaf order and structure."""

from __future__ import annotations

import collections
import re
from typing import Any, NamedTuple

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from refimpl import tree_util as tu

Point = collections.namedtuple("Point", "x y")
Other = collections.namedtuple("Other", "x y")


class Typed(NamedTuple):
    a: Any
    b: Any


class Box:
    """A registered node: children ``items``, aux data ``tag``."""

    def __init__(self, tag: str, *items: Any) -> None:
        self.tag, self.items = tag, items

    def __eq__(self, other: object) -> bool:
        return type(other) is Box and (self.tag, self.items) == (other.tag, other.items)

    def __repr__(self) -> str:
        return f"Box({self.tag!r}, {self.items!r})"


def _box_flatten(b: Box):
    return b.items, b.tag


def _box_unflatten(tag: str, children):
    return Box(tag, *children)


tu.register_pytree_node(Box, _box_flatten, _box_unflatten)
jax.tree_util.register_pytree_node(Box, _box_flatten, _box_unflatten)


class DictSub(dict):
    pass


SAMPLES = [
    1,
    None,
    (),
    [],
    {},
    (1, 2),
    [1, (2, 3), [4]],
    {"b": 1, "a": 2, "c": (3, 4)},
    {3: "x", 1: "y", 2: None},
    (None, 1, [None, 2]),
    Point(1, (2, 3)),
    Typed(a=[1], b={"k": 2}),
    Box("t", 1, (2, 3)),
    Box("t"),
    collections.OrderedDict([("b", 1), ("a", 2)]),
    collections.defaultdict(list, {"z": 1, "y": 2}),
    DictSub(a=1),
    np.arange(3),
    ((((1,),),),),
    {"w": [np.zeros(2), 1.5], "b": (Point(1, None), Box("u", 2))},
]


@pytest.mark.parametrize("tree", SAMPLES, ids=[repr(type(s).__name__) for s in SAMPLES])
def test_round_trip_and_leaves_match_jax(tree):
    leaves, treedef = tu.tree_flatten(tree)
    jleaves, jtreedef = jax.tree_util.tree_flatten(tree)
    assert [id(x) for x in leaves] == [id(x) for x in jleaves]
    assert treedef.num_leaves == jtreedef.num_leaves == len(leaves)
    assert treedef.num_nodes == jtreedef.num_nodes
    rebuilt = tu.tree_unflatten(treedef, leaves)
    assert type(rebuilt) is type(tree)
    assert tu.tree_structure(rebuilt) == treedef
    assert tu.tree_leaves(rebuilt) == leaves


def test_dict_keys_sorted():
    leaves, treedef = tu.tree_flatten({"b": 1, "a": 2})
    assert leaves == [2, 1]
    assert list(treedef.unflatten([10, 20])) == ["a", "b"]
    assert tu.tree_structure({"a": 1, "b": 2}) == tu.tree_structure({"b": 3, "a": 4})


def test_unorderable_dict_keys():
    with pytest.raises(ValueError, match="orderable"):
        tu.tree_flatten({1: 1, "a": 2})


def test_none_is_an_empty_node():
    assert tu.tree_leaves(None) == []
    assert tu.tree_structure(None).num_leaves == 0
    assert tu.tree_leaves((None, 1, {"a": None})) == [1]
    assert tu.tree_structure(None) != tu.tree_structure(1)
    assert tu.tree_map(lambda x: x + 1, (None, 1)) == (None, 2)
    assert repr(tu.tree_structure(None)) == "PyTreeDef(None)"


def test_namedtuples():
    td = tu.tree_structure(Point(1, 2))
    assert td != tu.tree_structure(Other(1, 2))
    assert td != tu.tree_structure((1, 2))
    assert td == tu.tree_structure(Point("a", "b"))
    assert tu.tree_unflatten(td, [5, 6]) == Point(5, 6)
    assert type(tu.tree_unflatten(td, [5, 6])) is Point
    assert tu.tree_map(lambda v: v * 2, Typed(1, 2)) == Typed(2, 4)


def test_registered_node_aux_data():
    a = tu.tree_structure(Box("t", 1, 2))
    assert a == tu.tree_structure(Box("t", 3, 4))
    assert a != tu.tree_structure(Box("u", 1, 2))
    assert a != tu.tree_structure(Box("t", 1))
    assert tu.tree_map(lambda v: -v, Box("t", 1, (2,))) == Box("t", -1, (-2,))
    assert repr(a) == "PyTreeDef(Box['t'](*, *))"


def test_register_errors():
    with pytest.raises(ValueError, match="already registered"):
        tu.register_pytree_node(Box, _box_flatten, _box_unflatten)
    with pytest.raises(ValueError):
        tu.register_pytree_node(dict, _box_flatten, _box_unflatten)
    with pytest.raises(TypeError):
        tu.register_pytree_node("Box", _box_flatten, _box_unflatten)


def test_register_previously_seen_leaf_type():
    class Late:
        def __init__(self, v):
            self.v = v

    obj = Late(3)
    assert tu.tree_leaves(obj) == [obj]  # cached as a leaf type
    tu.register_pytree_node(Late, lambda x: ((x.v,), None), lambda _, c: Late(*c))
    assert tu.tree_leaves(obj) == [3]


def test_subclasses_of_containers_are_leaves():
    d = DictSub(a=1)
    assert tu.tree_leaves(d) == [d]
    assert tu.tree_leaves([d]) == jax.tree_util.tree_leaves([d])


def test_treedef_equality_and_hash():
    a = tu.tree_structure((1, {"a": 2, "b": [3, None]}))
    b = tu.tree_structure(("x", {"a": "y", "b": ["z", None]}))
    assert a == b and hash(a) == hash(b)
    assert {a: 1}[b] == 1
    assert a != tu.tree_structure((1, {"a": 2, "c": [3, None]}))
    assert a != tu.tree_structure((1, {"a": 2, "b": (3, None)}))
    assert a != tu.tree_structure((1, {"a": 2, "b": [3, 4]}))
    assert tu.tree_structure([1]) != tu.tree_structure((1,))
    assert tu.tree_structure(1) == tu.tree_structure("leaf")
    assert a != "not a treedef"


def test_unhashable_aux_data_still_compares():
    tu.register_pytree_node(ListAux, lambda x: ((x.v,), [x.k]), lambda aux, c: ListAux(aux[0], *c))
    a, b = tu.tree_structure(ListAux(1, 0)), tu.tree_structure(ListAux(1, 5))
    assert a == b and hash(a) == hash(b)
    assert a != tu.tree_structure(ListAux(2, 0))


class ListAux:
    def __init__(self, k, v):
        self.k, self.v = k, v


def test_repr():
    td = tu.tree_structure((1, {"a": 2, "b": None}, [3], Point(1, 2), (4,)))
    assert repr(td) == "PyTreeDef((*, {'a': *, 'b': None}, [*], Point(x=*, y=*), (*,)))"
    assert repr(tu.tree_structure(1)) == "PyTreeDef(*)"
    assert repr(tu.tree_structure(())) == "PyTreeDef(())"


def test_children_and_node_data():
    td = tu.tree_structure((1, [2, 3], None))
    assert [c.num_leaves for c in td.children()] == [1, 2, 0]
    assert td.node_data() == (tuple, None)
    assert tu.tree_structure({"b": 1, "a": 2}).node_data() == (dict, ("a", "b"))
    assert tu.tree_structure(1).node_data() is None
    assert tu.tree_structure(1).is_leaf and not td.is_leaf


def test_unflatten_wrong_leaf_count():
    td = tu.tree_structure((1, 2))
    with pytest.raises(ValueError, match="2 leaves, got 3"):
        td.unflatten([1, 2, 3])


def test_is_leaf():
    tree = {"a": (1, 2), "b": [3, (4, 5)]}
    leaves, td = tu.tree_flatten(tree, is_leaf=lambda x: type(x) is tuple)
    assert leaves == jax.tree_util.tree_leaves(tree, is_leaf=lambda x: type(x) is tuple)
    assert leaves == [(1, 2), 3, (4, 5)]
    assert td.unflatten(leaves) == tree
    assert tu.tree_leaves(None, is_leaf=lambda x: x is None) == [None]


# --------------------------------------------------------------------------
# tree_map


def test_tree_map_multiple_trees():
    out = tu.tree_map(lambda a, b, c: a + b * c, (1, {"x": 2}), (10, {"x": 20}), (2, {"x": 3}))
    assert out == (21, {"x": 62})


def test_tree_map_prefix_semantics_match_jax():
    def f(a, b):
        return (a, b)

    args = ((1, 2), ((3, 4), 5))
    assert tu.tree_map(f, *args) == jax.tree_util.tree_map(f, *args)


@pytest.mark.parametrize(
    ("first", "second", "fragment"),
    [
        ((1, 2), (1, 2, 3), "tuple of 2, got tuple of 3"),
        ({"a": 1}, {"b": 1}, "dict keys ['a'], got dict keys ['b']"),
        ([1, 2], (1, 2), "list of 2, got tuple of 2"),
        ((1, [2]), (1, 3), "at [1]: expected list of 1, got leaf"),
        (Point(1, 2), Other(1, 2), "namedtuple Point, got namedtuple Other"),
        (Box("t", 1), Box("u", 1), "Box['t'] of 1, got Box['u'] of 1"),
        ((None,), (1,), "expected None, got leaf"),
    ],
)
def test_tree_map_mismatch_names_both_structures(first, second, fragment):
    with pytest.raises(ValueError) as e:
        tu.tree_map(lambda a, b: a, first, second)
    msg = str(e.value)
    assert repr(tu.tree_structure(first)) in msg
    assert repr(tu.tree_structure(second)) in msg
    assert fragment in msg
    with pytest.raises(ValueError):
        jax.tree_util.tree_map(lambda a, b: a, first, second)


# --------------------------------------------------------------------------
# paths and differences


def test_paths():
    tree = (np.zeros(1), {"w": 1, "b": [2, Point(3, 4)]}, Box("t", 5), {7: 8})
    pairs, td = tu.flatten_with_path_strings(tree)
    assert [p for p, _ in pairs] == [
        "[0]",
        "[1]['b'][0]",
        "[1]['b'][1].x",
        "[1]['b'][1].y",
        "[1]['w']",
        "[2][0]",
        "[3][7]",
    ]
    assert [x for _, x in pairs] == tu.tree_leaves(tree)
    assert td == tu.tree_structure(tree)
    assert tu.flatten_with_path_strings(5)[0] == [("", 5)]
    assert tu.tree_flatten_with_path(5)[0] == [((), 5)]


def test_paths_match_jax_keystr():
    tree = [{"a": (1, Point(2, 3)), "b": collections.OrderedDict(z=4)}]
    ours = [p for p, _ in tu.flatten_with_path_strings(tree)[0]]
    theirs = [jax.tree_util.keystr(k) for k, _ in jax.tree_util.tree_flatten_with_path(tree)[0]]
    assert ours == theirs
    keys = [tu.keystr(k) for k, _ in tu.tree_flatten_with_path(tree)[0]]
    assert keys == theirs


@pytest.mark.parametrize(
    ("a", "b", "want"),
    [
        ((1, (2, 3)), (1, (2, 3, 4)), "tuple of 2 vs tuple of 3 at [1]"),
        ({"a": 1, "b": 2}, {"a": 1}, "dict keys ['a', 'b'] vs ['a']"),
        ([{"w": 1}], [{"w": (1, 2)}], "leaf vs tuple of 2 at [0]['w']"),
        (Point(1, 2), (1, 2), "namedtuple Point vs tuple of 2"),
        ((1, None), (1, 2), "None vs leaf at [1]"),
        (Box("t", 1), Box("u", 1), "Box['t'] of 1 vs Box['u'] of 1"),
        ((Point(1, [2]),), (Point(1, [2, 3]),), "list of 1 vs list of 2 at [0].y"),
        ((1, 2), ("x", "y"), ""),
    ],
)
def test_treedef_difference(a, b, want):
    assert tu.treedef_difference(tu.tree_structure(a), tu.tree_structure(b)) == want


def test_treedef_difference_same_description_different_data():
    a = tu.tree_structure(collections.defaultdict(list, a=1))
    b = tu.tree_structure(collections.defaultdict(dict, a=1))
    diff = tu.treedef_difference(a, b)
    assert diff.startswith("defaultdict keys ['a'] with data") and " vs " in diff


# --------------------------------------------------------------------------
# property test


def _node(children: st.SearchStrategy) -> st.SearchStrategy:
    keys = st.text(alphabet="abcde", min_size=1, max_size=2)
    return st.one_of(
        st.lists(children, max_size=3),
        st.lists(children, max_size=3).map(tuple),
        st.dictionaries(keys, children, max_size=3),
        st.tuples(children, children).map(lambda t: Point(*t)),
        st.tuples(children, children).map(lambda t: Typed(*t)),
        st.lists(children, max_size=2).map(lambda c: Box("k", *c)),
        st.dictionaries(keys, children, max_size=3).map(collections.OrderedDict),
    )


TREES = st.recursive(
    st.one_of(st.integers(), st.none(), st.text(max_size=2), st.floats(allow_nan=False)),
    _node,
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(TREES, TREES)
def test_flatten_round_trip_property(tree, other):
    leaves, td = tu.tree_flatten(tree)
    jleaves, jtd = jax.tree_util.tree_flatten(tree)
    assert leaves == jleaves
    assert td.num_leaves == jtd.num_leaves
    assert tu.tree_unflatten(td, leaves) == tree
    assert tu.tree_unflatten(td, leaves) == jax.tree_util.tree_unflatten(jtd, leaves)
    # structure equality agrees with JAX's
    td2, jtd2 = tu.tree_structure(other), jax.tree_util.tree_structure(other)
    assert (td == td2) == (jtd == jtd2)
    assert (tu.treedef_difference(td, td2) == "") == (td == td2)
    if td == td2:
        assert hash(td) == hash(td2)
    # paths line up with leaves and with JAX's key strings
    pairs, _ = tu.flatten_with_path_strings(tree)
    jpairs, _ = jax.tree_util.tree_flatten_with_path(tree)
    assert [p for p, _ in pairs] == [_jax_keystr(k) for k, _ in jpairs]
    key_pairs, _ = tu.tree_flatten_with_path(tree)
    assert [tu.keystr(k) for k, _ in key_pairs] == [jax.tree_util.keystr(k) for k, _ in jpairs]


def _jax_keystr(keys) -> str:
    """jax.tree_util.keystr, with registered nodes' "[<flat index 0>]" shown as "[0]"."""
    return re.sub(r"<flat index (\d+)>", r"\1", jax.tree_util.keystr(keys))
