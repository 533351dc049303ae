"""custom_vmap / sequential_vmap called outside vmap, compared with JAX 0.10.2
on both backends: the call evaluates the function's program, so Python
scalar arguments are weak arrays and every result is an array of JAX's
dtype and weak type (not whatever the Python body returns on its own)."""

from __future__ import annotations

import jax
import jax.custom_batching as jcb
import numpy as np
import pytest

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


def _scaled(cb, np_):
    f = cb.custom_vmap(lambda x, n, p: np_.where(p, x * n, -x))
    f.def_vmap(lambda size, b, x, n, p: (np_.where(p, x * n * 2, -x), b[0] or b[1] or b[2]))
    return f


def test_jvp_of_custom_vmap_with_integer_and_bool_arguments(backend):
    # Their tangents are float0 zeros: neither an argument of the JVP's own
    # custom_vmap function nor of its rule's JVP (refimpl raised TypeError).
    def prog(lib, cb, np_):
        f = _scaled(cb, np_)

        def one(x, n, p):
            return lib.jvp(lambda x: f(x, n, p), (x,), (np_.float32(1.0),))

        xs = np_.arange(3.0, dtype=np_.float32)
        ns = np_.arange(3, dtype=np_.int32)
        ps = np_.array([True, False, True])
        return (
            one(np_.float32(2.0), 3, True),
            lib.vmap(one)(xs, ns, ps),
            lib.vmap(one, in_axes=(0, None, None))(xs, 3, True),
            lib.jacfwd(lambda x: lib.vmap(f, in_axes=(0, None, None))(x, 3, True))(xs),
        )

    got = prog(ri, rcb, ri.numpy)
    want = prog(jax, jcb, jax.numpy)
    for g, w in zip(ri.tree_leaves(got), jax.tree_util.tree_leaves(want), strict=True):
        w = np.asarray(w)
        assert np.asarray(g).dtype == w.dtype and np.asarray(g).shape == w.shape
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-6)


def test_lax_map_batch_size_of_empty_axes_and_integer_kinds(backend):
    # an empty leading axis is a scan of no chunks (refimpl crashed in tree_map);
    # any integer is a batch size (refimpl refused bools and NumPy integers)
    xs = (np.zeros((0, 3), np.float32), np.zeros((0,), np.int32))
    for bs in (1, 2, True, np.int32(2)):
        _same(
            ri.lax.map(lambda v: (v[0] * 2, v[1] + 1), xs, batch_size=bs),
            jax.lax.map(lambda v: (v[0] * 2, v[1] + 1), xs, batch_size=bs),
        )
    _same(
        ri.jit(lambda x: ri.lax.map(lambda v: v.sum(), x, batch_size=2))(xs[0]),
        jax.jit(lambda x: jax.lax.map(lambda v: v.sum(), x, batch_size=2))(xs[0]),
    )
    five = np.arange(5.0, dtype=np.float32)
    _same(
        ri.lax.map(lambda v: v * 2, five, batch_size=np.int64(2)),
        jax.lax.map(lambda v: v * 2, five, batch_size=np.int64(2)),
    )
    with pytest.raises(TypeError, match="map: batch_size"):  # JAX: TypeError too
        ri.lax.map(lambda v: v, five, batch_size=2.0)


def test_custom_vmap_errors_in_jax_words(backend):
    # JAX's messages, matched as JAX's own tests match them
    f = rcb.custom_vmap(lambda x, y, *, z=None: x * y)
    f.def_vmap(lambda size, b, xs, ys: (xs * ys, True))
    words = r"The input arguments to the custom_vmap-decorated function <lambda>(.*)\n"
    with pytest.raises(TypeError, match=words + "missing a required argument: 'y'"):
        f(0.5)
    with pytest.raises(TypeError, match=words + "The following keyword arguments could not"):
        f(0.5, 0.1, z=1.0)
    g = _plus_one(rcb)
    with pytest.raises(ValueError, match="Linearization failed to produce known values"):
        ri.grad(g)(0.5)


def _rule_of_another_type(cb, np_mod, kind):
    z = np.array([2.0, 1.0, 3.0], np.float32)
    f = cb.custom_vmap(lambda x: z + np_mod.sin(x))
    if kind == "shape":  # f32[3] where the function batched is f32[3, 3]
        f.def_vmap(lambda size, b, xs: (z + np_mod.cos(xs), b[0]))
    elif kind == "dtype":
        f.def_vmap(lambda size, b, xs: ((z + np_mod.cos(xs)).astype(np.float16), b[0]))
    elif kind == "extra_axis":
        f.def_vmap(lambda size, b, xs: (np_mod.stack([xs, xs], 1), b[0]))
    else:  # marked unbatched: every member's value
        f.def_vmap(lambda size, b, xs: (xs, False))
    return f


@pytest.mark.parametrize("kind", ["shape", "dtype", "extra_axis", "unbatched"])
def test_custom_vmap_rule_output_of_another_type_is_taken_as_jax(backend, kind):
    r = _rule_of_another_type(rcb, ri.numpy, kind)
    j = _rule_of_another_type(jcb, jax.numpy, kind)
    xs = np.arange(3.0, dtype=np.float32)
    _same(ri.vmap(r)(xs), jax.vmap(j)(xs))
    _same(ri.jit(ri.vmap(r))(xs), jax.jit(jax.vmap(j))(xs))
    _same(ri.vmap(ri.jit(r))(xs), jax.vmap(jax.jit(j))(xs))
    # later operations see the rule's member type
    _same(ri.vmap(lambda x: r(x).sum() + 1.0)(xs), jax.vmap(lambda x: j(x).sum() + 1.0)(xs))
    if kind == "shape":  # JAX's test_jvp_closure program
        t = xs * 2.0
        _same(
            ri.vmap(lambda x, tx: ri.jvp(r, [x], [tx]))(xs, t),
            jax.vmap(lambda x, tx: jax.jvp(j, [x], [tx]))(xs, t),
        )
        _same(ri.jvp(ri.vmap(r), [xs], [t]), jax.jvp(jax.vmap(j), [xs], [t]))


def test_custom_vmap_rule_output_without_the_batch_axis_is_refused(backend):
    # deliberately stricter than JAX 0.10.2 (conformance/known.py)
    f = rcb.custom_vmap(lambda x: x)
    f.def_vmap(lambda size, b, xs: (xs[:2], True))
    with pytest.raises(ValueError, match=r"custom vmap rule \(<lambda>\) .* batch axis of size 3"):
        ri.vmap(f)(np.arange(3.0, dtype=np.float32))
