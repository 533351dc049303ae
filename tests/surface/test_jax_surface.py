"""ri.tree (as jax.tree), key paths in ri.tree_util, DLPack exchange with
NumPy and JAX (zero-copy: compared by buffer pointer), copy/item/tolist."""

from __future__ import annotations

import collections

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
from tests.helpers.pjrt_helpers import skip_without_pjrt

Point = collections.namedtuple("Point", "x y")
TREES = [
    {"a": [1, (2, 3)], "b": Point(4, None), "c": 5},
    [(), {"z": 1.5, "y": [2]}, None, 7],
    8,
    collections.OrderedDict([("q", 1), ("p", (2,))]),
]


@pytest.mark.parametrize("tree", TREES)
def test_tree_functions_match_jax(tree):
    assert ri.tree.leaves(tree) == jax.tree.leaves(tree)
    assert ri.tree.map(lambda v: v * 2, tree) == jax.tree.map(lambda v: v * 2, tree)
    got = [(ri.tree_util.keystr(p), v) for p, v in ri.tree.leaves_with_path(tree)]
    want = [(jax.tree_util.keystr(p), v) for p, v in jax.tree.leaves_with_path(tree)]
    assert got == want
    assert [repr(p) for p, _ in ri.tree.leaves_with_path(tree)] == [
        repr(p) for p, _ in jax.tree.leaves_with_path(tree)
    ]
    f = lambda p, v: (ri.tree_util.keystr(p), v)  # noqa: E731
    g = lambda p, v: (jax.tree_util.keystr(p), v)  # noqa: E731
    assert ri.tree.map_with_path(f, tree) == jax.tree.map_with_path(g, tree)
    assert ri.tree.reduce(lambda a, b: a + b, tree, 0) == jax.tree.reduce(
        lambda a, b: a + b, tree, 0
    )
    assert ri.tree.all(tree) == jax.tree.all(tree)
    leaves, treedef = ri.tree.flatten(tree)
    assert ri.tree.unflatten(treedef, leaves) == tree
    assert ri.tree.structure(tree).num_leaves == jax.tree.structure(tree).num_leaves


def test_tree_transpose_and_errors():
    outer, inner = ri.tree.structure([0, 0, 0]), ri.tree.structure((0, 0))
    tree = [(1, 2), (3, 4), (5, 6)]
    want = jax.tree.transpose(jax.tree.structure([0, 0, 0]), jax.tree.structure((0, 0)), tree)
    assert ri.tree.transpose(outer, inner, tree) == want
    assert ri.tree.transpose(outer, None, tree) == want
    with pytest.raises(TypeError, match="transpose: the tree has 5 leaves"):
        ri.tree.transpose(outer, inner, [(1, 2), (3, 4), 5])
    assert ri.tree.all([1, 0]) is False and ri.tree_util.tree_all([]) is True
    with pytest.raises(TypeError):
        ri.tree.reduce(lambda a, b: a + b, [])


def test_register_pytree_node_class():
    @ri.tree_util.register_pytree_node_class
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

        def tree_flatten(self):
            return (self.a, self.b), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)

    out = ri.tree.map(lambda v: v + 1, Pair(1, 2))
    assert (out.a, out.b) == (2, 3)
    assert [str(k[0]) for k, _ in ri.tree.leaves_with_path(Pair(1, 2))] == [
        "[<flat index 0>]",
        "[<flat index 1>]",
    ]


def aligned(values: np.ndarray, alignment: int = 64) -> np.ndarray:
    raw = np.empty(values.nbytes + alignment, np.uint8)
    offset = -raw.ctypes.data % alignment
    out = raw[offset : offset + values.nbytes].view(values.dtype).reshape(values.shape)
    out[...] = values
    return out


def test_dlpack_ref_to_numpy_and_jax_zero_copy():
    x = ri.device_put(np.arange(6.0, dtype=np.float32).reshape(2, 3))
    assert x.__dlpack_device__() == (1, 0)
    n = np.from_dlpack(x)
    assert n.ctypes.data == x.unsafe_buffer_pointer()
    assert not n.flags.writeable
    j = jax.dlpack.from_dlpack(x)
    # JAX aliases CPU memory only when it is 64-byte aligned (XLA's
    # alignment); NumPy's allocator aligns to 16, so it copies otherwise
    if x.unsafe_buffer_pointer() % 64 == 0:
        assert j.unsafe_buffer_pointer() == x.unsafe_buffer_pointer()
    np.testing.assert_array_equal(np.asarray(j), np.asarray(x))
    x = ri.dlpack.from_dlpack(aligned(np.arange(6.0, dtype=np.float32).reshape(2, 3)))
    n = np.from_dlpack(x)
    j = jax.dlpack.from_dlpack(x)
    assert j.unsafe_buffer_pointer() == x.unsafe_buffer_pointer() == n.ctypes.data
    np.testing.assert_array_equal(np.asarray(j), np.asarray(x))
    copied = np.from_dlpack(x, copy=True)
    assert copied.ctypes.data != x.unsafe_buffer_pointer()
    del x  # the exported views keep the memory alive
    np.testing.assert_array_equal(np.asarray(j), n)


def test_dlpack_import_zero_copy():
    a = np.arange(10, dtype=np.int32)
    r = ri.dlpack.from_dlpack(a)
    assert isinstance(r, ri.Array) and r.unsafe_buffer_pointer() == a.ctypes.data
    j = jnp.linspace(0, 1, 7, dtype=jnp.float32)
    r = ri.dlpack.from_dlpack(j)
    assert r.unsafe_buffer_pointer() == j.unsafe_buffer_pointer()
    np.testing.assert_array_equal(np.asarray(ri.jit(lambda v: v * 2)(r)), np.asarray(j) * 2)
    r2 = ri.dlpack.from_dlpack(j, copy=True)
    assert r2.unsafe_buffer_pointer() != j.unsafe_buffer_pointer()
    with pytest.raises(TypeError, match="from_dlpack: expected an object with __dlpack__"):
        ri.dlpack.from_dlpack([1, 2])


def test_dlpack_pjrt_arrays():
    skip_without_pjrt()
    p = ri.device_put(np.arange(4.0, dtype=np.float32), ri.devices("pjrt")[0])
    n = np.from_dlpack(p)
    assert n.ctypes.data == p.unsafe_buffer_pointer()
    j = jax.dlpack.from_dlpack(p)
    assert j.unsafe_buffer_pointer() == p.unsafe_buffer_pointer()
    back = ri.dlpack.from_dlpack(j, backend="pjrt")
    assert type(back).__name__ == "PjrtArray"
    np.testing.assert_array_equal(np.asarray(back), np.arange(4.0))


def test_dlpack_deleted_array():
    x = ri.device_put(np.ones(3))
    x.delete()
    with pytest.raises(RuntimeError, match="has been deleted"):
        x.__dlpack__()


@pytest.mark.parametrize("backend", ["ref", "pjrt"])
def test_copy_item_tolist(backend):
    if backend == "pjrt":
        skip_without_pjrt()
    device = ri.devices(backend)[0]
    x = ri.device_put(np.arange(6, dtype=np.int32).reshape(2, 3), device)
    c = x.copy()
    assert c.unsafe_buffer_pointer() != x.unsafe_buffer_pointer()
    assert (c.shape, c.dtype) == (x.shape, x.dtype) and type(c) is type(x)
    assert x.tolist() == [[0, 1, 2], [3, 4, 5]] == jnp.arange(6).reshape(2, 3).tolist()
    s = ri.device_put(np.float32(2.5), device)
    assert s.item() == 2.5 and isinstance(s.item(), float)
    with pytest.raises(ValueError):
        x.item()
