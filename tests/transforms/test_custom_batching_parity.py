"""custom_vmap / sequential_vmap called outside vmap, compared with JAX 0.10.2
on both backends: the call evaluates the function's program, so Python
scalar arguments are weak arrays and every result is an array of JAX's
dtype and weak type (not whatever the Python body returns on its own)."""

from __future__ import annotations

import jax
import jax.custom_batching as jcb
import numpy as np

import refimpl as ri
import refimpl.custom_batching as rcb


def _same(got, want):
    got_leaves, want_leaves = ri.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves, strict=True):
        # JAX may hand back a forwarded Python scalar as its typed-scalar
        # subclass; its dtype and weak type are those of the array it stands for
        w_arr = jax.numpy.asarray(w)
        assert isinstance(g, ri.Array), type(g)
        assert (g.dtype, g.shape, g.weak_type) == (w_arr.dtype, w_arr.shape, w_arr.weak_type)
        np.testing.assert_allclose(np.asarray(g), np.asarray(w_arr), rtol=1e-6)


def _plus_one(cb):
    f = cb.custom_vmap(lambda x: x + 1.0)
    f.def_vmap(lambda size, batched, xs: (xs + 1.0, batched[0]))
    return f


def test_custom_vmap_outside_vmap_returns_arrays_of_jax_types(backend):
    args = [2.0, 3, np.arange(3.0), np.int32(4)]
    for a in args:
        _same(_plus_one(rcb)(a), _plus_one(jcb)(a))


def test_custom_vmap_outside_vmap_forwarded_and_constant_outputs(backend):
    def make(cb):
        f = cb.custom_vmap(lambda x: (x, None, [2.0]))
        f.def_vmap(lambda size, batched, xs: (xs, batched[0]))
        return f

    _same(make(rcb)((1, 2.0)), make(jcb)((1, 2.0)))


def test_sequential_vmap_outside_vmap(backend):
    def make(cb):
        return cb.sequential_vmap(lambda x, y: x * y)

    _same(make(rcb)(2, 3), make(jcb)(2, 3))
    _same(make(rcb)(np.arange(3), 2.0), make(jcb)(np.arange(3), 2.0))
    # under vmap the rule (a scan over the members) runs, as before
    xs = np.arange(3.0, dtype=np.float32)
    _same(
        ri.vmap(make(rcb), in_axes=(0, None))(xs, 2.0),
        jax.vmap(make(jcb), in_axes=(0, None))(xs, 2.0),
    )
