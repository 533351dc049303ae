"""``ri.vmap``: axes conventions and errors (JAX 0.10.2's), collectives under a
named axis, custom_vmap, control flow and compositions, against ``jax.vmap``
and Python loops."""

from __future__ import annotations

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import lax


def assert_close(got, want, tol=1e-5):
    got_leaves, want_leaves = jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves, strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape, (g.shape, w.shape)
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


def jax_error(fn):
    with pytest.raises(Exception) as info:
        fn()
    return info.value


X = np.arange(6, dtype=np.float32).reshape(3, 2)


# --- axes conventions -------------------------------------------------------------------


def test_in_axes_tree_prefix_none_leaves_and_kwargs():
    def f(pair, scale, *, bias):
        a, b = pair["a"], pair["b"]
        return a * scale + b + bias

    pair = {"a": np.ones((2, 4), np.float32), "b": np.arange(8, dtype=np.float32).reshape(4, 2)}
    bias = np.arange(4, dtype=np.float32).reshape(4, 1) * np.ones((4, 2), np.float32)
    in_axes = ({"a": 1, "b": 0}, None)
    got = ri.vmap(f, in_axes=in_axes)(pair, 3.0, bias=bias)
    want = jax.vmap(f, in_axes=in_axes)(pair, 3.0, bias=bias)
    assert_close(got, want)


def test_lists_are_tuples_and_negative_axes():
    f = lambda a, b: a - b  # noqa: E731
    y = np.ones((2, 3), np.float32)
    assert_close(ri.vmap(f, in_axes=[0, -1])(X, y), jax.vmap(f, in_axes=[0, -1])(X, y))


def test_none_arguments_pass_through_untouched():
    def f(x, how):
        assert how == "twice"  # a non-array, unmapped, reaches f as itself
        return x * 2

    assert_close(ri.vmap(f, in_axes=(0, None))(X, "twice"), X * 2)


def test_unmapped_argument_stays_concrete():
    def f(x, n):
        return x * n if n > 2 else x  # Python control flow on the unmapped value

    assert_close(ri.vmap(f, in_axes=(0, None))(X, 3), jax.vmap(f, in_axes=(0, None))(X, 3))


@pytest.mark.parametrize("out_axes", [0, (1, 0), -1, None, (1, None)])
def test_out_axes(out_axes):
    def f(x, c):
        return x + c, c * 2

    c = np.float32(1.5)
    if out_axes is None:
        f2 = lambda x, c: (c, c * 2)  # noqa: E731
        assert_close(ri.vmap(f2, (0, None), None)(X, c), jax.vmap(f2, (0, None), None)(X, c))
        return
    got = ri.vmap(f, in_axes=(0, None), out_axes=out_axes)(X, c)
    want = jax.vmap(f, in_axes=(0, None), out_axes=out_axes)(X, c)
    assert_close(got, want)


def test_unbatched_output_is_broadcast_and_axis_size():
    got = ri.vmap(lambda x: 1.0, axis_size=3)(X)
    assert_close(got, jax.vmap(lambda x: 1.0, axis_size=3)(X))
    got = ri.vmap(lambda x: x, in_axes=None, axis_size=4)(X)
    assert np.asarray(got).shape == (4, 3, 2)


def test_nested_vmap_matches_jax():
    def f(a, b):
        return lax.dot_general(a, b, (((0,), (0,)), ((), ())))

    a = np.random.default_rng(0).normal(size=(5, 4, 3)).astype(np.float32)
    b = np.random.default_rng(1).normal(size=(4, 6, 5)).astype(np.float32)
    got = ri.vmap(ri.vmap(f, in_axes=(1, None)), in_axes=(0, 2))(a, b)

    def jf(a, b):
        return jax.lax.dot_general(a, b, (((0,), (0,)), ((), ())))

    want = jax.vmap(jax.vmap(jf, in_axes=(1, None)), in_axes=(0, 2))(a, b)
    assert_close(got, want, 1e-4)


# --- errors: JAX's class and words ---------------------------------------------------------


def test_rank0_and_python_scalar_mapped_are_value_errors():
    for arg in (2.0, np.float32(2.0), np.ones((), np.float32)):
        with pytest.raises(ValueError) as ours:
            ri.vmap(lambda a: a)(arg)
        theirs = jax_error(lambda arg=arg: jax.vmap(lambda a: a)(arg))
        assert str(ours.value) == str(theirs)


def test_axis_out_of_range():
    with pytest.raises(ValueError) as ours:
        ri.vmap(lambda a: a, in_axes=1)(np.ones(3))
    theirs = jax_error(lambda: jax.vmap(lambda a: a, in_axes=1)(jnp.ones(3)))
    assert str(ours.value) == str(theirs)
    assert "rank should be at least 2" in str(ours.value)


def test_inconsistent_sizes_lists_each_argument():
    y = np.ones((4, 2), np.float32)
    with pytest.raises(ValueError) as ours:
        ri.vmap(lambda a, b: a + b)(X, y)
    theirs = jax_error(lambda: jax.vmap(lambda a, b: a + b)(X, y))
    assert str(ours.value) == str(theirs)
    assert str(ours.value).startswith("vmap got inconsistent sizes for array axes to be mapped:")


def test_inconsistent_sizes_with_axis_size_and_paths():
    def f(p, q):
        return p

    args = ({"w": X, "v": np.ones((3, 1), np.float32)}, np.ones((5, 2), np.float32))
    with pytest.raises(ValueError) as ours:
        ri.vmap(f, axis_size=3)(*args)
    theirs = jax_error(lambda: jax.vmap(f, axis_size=3)(*args))
    assert str(ours.value) == str(theirs)
    assert "argument p['v'] of type float32[3,1]" in str(ours.value)


def test_in_axes_structure_errors():
    with pytest.raises(ValueError, match=r"len\(in_axes\)=1, len\(args\)=2"):
        ri.vmap(lambda a, b: a, in_axes=((0, 1),))(X, X)
    with pytest.raises(ValueError) as info:
        ri.vmap(lambda a: a, in_axes=((0, 1),))((X,))
    message = str(info.value)
    assert message.startswith("vmap in_axes specification must be a tree prefix")
    assert "(0, 1)" in message and "tuple of 2" in message and "tuple of 1" in message
    with pytest.raises(TypeError, match="vmap in_axes must be an int, None, or a tuple"):
        ri.vmap(lambda a: a, in_axes=0.5)
    with pytest.raises(TypeError, match="out_axes must be an int, None"):
        ri.vmap(lambda a: a, out_axes="x")
    with pytest.raises(ValueError, match="at least one non-None value in in_axes"):
        ri.vmap(lambda a: a, in_axes=None)(X)


def test_batched_output_with_out_axes_none():
    with pytest.raises(ValueError) as ours:
        ri.vmap(lambda a: a, out_axes=None)(X)
    theirs = jax_error(lambda: jax.vmap(lambda a: a, out_axes=None)(X))
    assert str(ours.value) == str(theirs)


# --- collectives under a named axis --------------------------------------------------------

M = np.random.default_rng(3).normal(size=(4, 3)).astype(np.float32)


@pytest.mark.parametrize(
    "name, ours, theirs",
    [
        ("psum", lambda x: lax.psum(x, "i"), lambda x: jax.lax.psum(x, "i")),
        ("pmean", lambda x: lax.pmean(x, "i"), lambda x: jax.lax.pmean(x, "i")),
        ("pmax", lambda x: lax.pmax(x, "i"), lambda x: jax.lax.pmax(x, "i")),
        ("pmin", lambda x: lax.pmin(x, "i"), lambda x: jax.lax.pmin(x, "i")),
        (
            "psum_of_unbatched",
            lambda x: lax.psum(2.0, "i") * x,
            lambda x: jax.lax.psum(2.0, "i") * x,
        ),
        ("normalize", lambda x: x / lax.psum(x, "i"), lambda x: x / jax.lax.psum(x, "i")),
        (
            "all_gather",
            lambda x: lax.all_gather(x, "i", axis=1),
            lambda x: jax.lax.all_gather(x, "i", axis=1),
        ),
        (
            "all_gather_tiled",
            lambda x: lax.all_gather(x, "i", tiled=True),
            lambda x: jax.lax.all_gather(x, "i", tiled=True),
        ),
        (
            "ppermute",
            lambda x: lax.ppermute(x, "i", [(0, 1), (1, 2), (2, 3), (3, 0)]),
            lambda x: jax.lax.ppermute(x, "i", [(0, 1), (1, 2), (2, 3), (3, 0)]),
        ),
        ("axis_index", lambda x: x * lax.axis_index("i"), lambda x: x * jax.lax.axis_index("i")),
        (
            "psum_scatter_tiled",
            lambda x: lax.psum_scatter(jnp_tile(x), "i", tiled=True),
            lambda x: jax.lax.psum_scatter(jnp.tile(x, 4), "i", tiled=True),
        ),
    ],
)
def test_collectives_match_jax(name, ours, theirs):
    got = ri.vmap(ours, axis_name="i")(M)
    want = jax.vmap(theirs, axis_name="i")(M)
    assert_close(got, want)


def test_ppermute_partial_permutation_gives_zeros():
    """JAX's vmap rule takes only full permutations; the semantics (SPEC) are zeros
    for members that receive nothing."""
    got = ri.vmap(lambda x: lax.ppermute(x, "i", [(3, 0), (0, 2)]), axis_name="i")(M)
    want = np.zeros_like(M)
    want[0], want[2] = M[3], M[0]
    assert_close(got, want)


def test_out_axes_out_of_range():
    with pytest.raises(ValueError, match="out of bounds"):
        ri.vmap(lambda x, c: (x + c, c * 2), in_axes=(0, None), out_axes=1)(X, np.float32(1))


def jnp_tile(x):
    return lax.concatenate([x] * 4, 0)


def test_psum_scatter_untiled_and_nested_names():
    a = np.random.default_rng(4).normal(size=(2, 3, 3)).astype(np.float32)
    got = ri.vmap(lambda x: lax.psum_scatter(x, "i"), axis_name="i")(a[0])
    want = jax.vmap(lambda x: jax.lax.psum_scatter(x, "i"), axis_name="i")(a[0])
    assert_close(got, want)
    inner = lambda x: lax.psum(x, ("i", "j"))  # noqa: E731
    inner_j = lambda x: jax.lax.psum(x, ("i", "j"))  # noqa: E731
    got = ri.vmap(ri.vmap(inner, axis_name="j"), axis_name="i")(a)
    want = jax.vmap(jax.vmap(inner_j, axis_name="j"), axis_name="i")(a)
    assert_close(got, want, 1e-5)


def test_collective_errors():
    with pytest.raises(NotImplementedError, match="axis_index_groups not supported in vmap"):
        ri.vmap(lambda x: lax.psum(x, "i", axis_index_groups=[[0, 1], [2, 3]]), axis_name="i")(M)
    with pytest.raises(NameError, match="unbound axis name: j"):
        ri.vmap(lambda x: lax.psum(x, "j"), axis_name="i")(M)
    with pytest.raises(NameError, match="unbound axis name: i"):
        lax.psum(M, "i")


def test_collectives_under_jit_and_pjrt():
    def f(x):
        return x - lax.pmean(x, "i")

    want = jax.vmap(lambda x: x - jax.lax.pmean(x, "i"), axis_name="i")(M)
    assert_close(ri.jit(ri.vmap(f, axis_name="i"))(M), want)
    assert_close(ri.jit(ri.vmap(f, axis_name="i"), backend="pjrt")(M), want)


def test_psum_is_linear_under_grad():
    """``grad`` of a vmapped psum: d/dx sum_b psum(x**2)_b = 2 * B * x (psum transposes to psum)."""

    def loss(x):
        return rnp.sum(ri.vmap(lambda v: lax.psum(v * v, "i"), axis_name="i")(x))

    def jloss(x):
        return jnp.sum(jax.vmap(lambda v: jax.lax.psum(v * v, "i"), axis_name="i")(x))

    assert_close(ri.grad(loss)(M), jax.grad(jloss)(M), 1e-4)


# --- custom_vmap ---------------------------------------------------------------------------


def make_custom():
    calls = []

    @ri.custom_batching.custom_vmap
    def f(x, y):
        return x * y

    @f.def_vmap
    def rule(axis_size, in_batched, x, y):
        calls.append((axis_size, list(in_batched)))
        x_batched, y_batched = in_batched
        out = x * y + 100.0  # visibly the rule's
        return out, x_batched or y_batched

    return f, calls


def test_custom_vmap_rule_is_used():
    f, calls = make_custom()
    y = np.float32(2.0)
    assert_close(f(X, y), X * 2)  # outside vmap: the function itself
    assert calls == []
    got = ri.vmap(f, in_axes=(0, None))(X, y)
    assert_close(got, X * 2 + 100)
    assert calls == [(3, [True, False])]
    assert_close(ri.jit(ri.vmap(f, in_axes=(0, None)))(X, y), X * 2 + 100)


def test_custom_vmap_matches_jax_custom_vmap():
    @jax.custom_batching.custom_vmap
    def jf(x, y):
        return x * y

    @jf.def_vmap
    def jrule(axis_size, in_batched, x, y):
        return x * y + 100.0, in_batched[0] or in_batched[1]

    f, _ = make_custom()
    y = np.float32(2.0)
    assert_close(ri.vmap(f, in_axes=(0, None))(X, y), jax.vmap(jf, in_axes=(0, None))(X, y))


def test_custom_vmap_keywords_and_errors():
    f, calls = make_custom()
    assert_close(ri.vmap(lambda x: f(x, y=np.float32(3.0)))(X), X * 3 + 100)

    @ri.custom_batching.custom_vmap
    def g(x):
        return x

    with pytest.raises(AttributeError, match="No batching rule defined for custom_vmap function g"):
        g(X)

    @ri.custom_batching.custom_vmap
    def h(x, *, k):
        return x

    h.def_vmap(lambda n, b, x: (x, b[0]))
    with pytest.raises(TypeError, match="could not be resolved to positional-only arguments"):
        h(X, k=1)


def _sin_with_cos_rule(cv):
    """sin, whose vmap rule computes cos instead (so the rule's use is visible)."""

    @cv.custom_vmap
    def f(x):
        return jnp.sin(x) if cv is jax.custom_batching else rnp.sin(x)

    @f.def_vmap
    def rule(axis_size, in_batched, xs):
        return (jnp.cos(xs) if cv is jax.custom_batching else rnp.cos(xs)), in_batched[0]

    return f


def _custom_vmap_jvp_programs(api, cv):
    f = _sin_with_cos_rule(cv)
    xs, ts = np.arange(3, dtype=np.float32), np.float32([1.0, 2.0, -1.0])
    g = api.custom_jvp(f)  # custom_jvp around custom_vmap (JAX's composition tests)
    g.defjvp(lambda p, t: (g(p[0]), 5.0 * t[0]))
    return [
        api.jvp(f, (np.float32(2.0),), (np.float32(1.0),)),  # outside vmap: the body
        api.jvp(api.vmap(f), (xs,), (ts,)),  # the rule, differentiated
        api.vmap(lambda x, t: api.jvp(f, (x,), (t,)))(xs, ts),
        api.vmap(lambda x: api.jvp(f, (x,), (np.float32(1.0),)))(xs),  # tangent unbatched
        api.vmap(lambda t: api.jvp(f, (np.float32(2.0),), (t,)))(ts),  # primal unbatched
        api.jit(api.vmap(lambda x, t: api.jvp(f, (x,), (t,))))(xs, ts),
        api.jacfwd(api.vmap(f))(xs),
        api.vmap(g)(xs),
        api.vmap(lambda x: api.jvp(g, (x,), (np.float32(1.0),)))(xs),
    ]


def test_custom_vmap_jvp_uses_differentiated_rule(backend):
    """jvp of a custom_vmap function (JAX's custom_batching_test jvp cases):
    outside vmap the body is differentiated, under vmap the rule; and a
    custom_jvp around it keeps the custom_vmap (functools.update_wrapper had
    copied the custom_vmap's own ``fun``, its body, over the custom_jvp's)."""
    got = _custom_vmap_jvp_programs(ri, ri.custom_batching)
    want = _custom_vmap_jvp_programs(jax, jax.custom_batching)
    assert_close(got, want)


def _closing_over(api, cv, np_, c, x):
    @cv.custom_vmap
    def f(x):
        return np_.sin(x) * c

    @f.def_vmap
    def rule(axis_size, in_batched, xs):
        return np_.cos(xs) * c, in_batched[0]

    return f(x)


def test_custom_vmap_jvp_of_a_closed_over_value(backend):
    def programs(api, cv, np_):
        xs = np.arange(3, dtype=np.float32)
        closing = functools.partial(_closing_over, api, cv, np_)
        return [
            api.jvp(lambda c: closing(c, np.float32(2.0)), (np.float32(3.0),), (np.float32(1.0),)),
            api.jvp(lambda c: api.vmap(lambda x: closing(c, x))(xs), (np.float32(3.0),),
                    (np.float32(1.0),)),
        ]  # fmt: skip

    assert_close(programs(ri, ri.custom_batching, rnp), programs(jax, jax.custom_batching, jnp))
    # vmap of the JVP: the rule cannot take the closed-over value's tangent
    with pytest.raises(ri.UnexpectedTracerError, match="closes over"):
        ri.vmap(
            lambda x: ri.jvp(
                lambda c: _closing_over(ri, ri.custom_batching, rnp, c, x),
                (np.float32(3.0),),
                (np.float32(1.0),),
            )
        )(np.arange(3, dtype=np.float32))


def test_custom_vmap_grad_is_an_error():
    f = _sin_with_cos_rule(ri.custom_batching)
    # ValueError as JAX 0.10.2 ("Linearization failed ...")
    with pytest.raises(ValueError, match=r"reverse-mode differentiation .* custom_vmap"):
        ri.grad(f)(np.float32(2.0))


# --- control flow --------------------------------------------------------------------------


def test_cond_with_batched_predicate_runs_both_branches():
    def f(p, x):
        return lax.cond(p > 0, lambda v: v * 2.0, lambda v: v - 1.0, x)

    def jf(p, x):
        return jax.lax.cond(p > 0, lambda v: v * 2.0, lambda v: v - 1.0, x)

    p = np.array([1.0, -1.0, 2.0], np.float32)
    assert_close(ri.vmap(f)(p, X), jax.vmap(jf)(p, X))
    assert_close(ri.vmap(f, in_axes=(None, 0))(np.float32(-1), X), jax.vmap(jf, (None, 0))(-1.0, X))
    program = ri.make_program(ri.vmap(f))(p, X)
    assert "cond" not in [e.primitive.name for e in program.eqns]  # a select instead


def test_switch_batched_index_out_of_range():
    def f(i, x):
        return lax.switch(i, [lambda v: v, lambda v: v * 10.0, lambda v: -v], x)

    def jf(i, x):
        return jax.lax.switch(i, [lambda v: v, lambda v: v * 10.0, lambda v: -v], x)

    i = np.array([-3, 1, 7], np.int32)
    assert_close(ri.vmap(f)(i, X), jax.vmap(jf)(i, X))


def test_while_with_batched_predicate_freezes_finished_members():
    def f(limit, x):
        return lax.while_loop(lambda c: c[0] < limit, lambda c: (c[0] + 1, c[1] * 2.0), (0, x))

    def jf(limit, x):
        return jax.lax.while_loop(lambda c: c[0] < limit, lambda c: (c[0] + 1, c[1] * 2.0), (0, x))

    limit = np.array([0, 3, 1], np.int32)
    assert_close(ri.vmap(f)(limit, X), jax.vmap(jf)(limit, X))
    assert_close(ri.jit(ri.vmap(f), backend="pjrt")(limit, X), jax.vmap(jf)(limit, X))


def test_scan_batches_carry_and_xs():
    def f(init, xs, w):
        def step(c, x):
            c = c * w + x
            return c, c.sum()

        return lax.scan(step, init, xs)

    def jf(init, xs, w):
        def step(c, x):
            c = c * w + x
            return c, c.sum()

        return jax.lax.scan(step, init, xs)

    rng = np.random.default_rng(5)
    init = np.zeros(2, np.float32)
    xs = rng.normal(size=(4, 3, 2)).astype(np.float32)
    w = rng.normal(size=(3,)).astype(np.float32)
    # carry starts unbatched and becomes batched (the fixpoint); xs mapped on axis 1
    in_axes = (None, 1, 0)
    w2 = np.broadcast_to(w[:, None], (3, 2)).copy()
    assert_close(ri.vmap(f, in_axes)(init, xs, w2), jax.vmap(jf, in_axes)(init, xs, w2), 1e-5)
    got = ri.jit(ri.vmap(f, in_axes), backend="pjrt")(init, xs, w2)
    assert_close(got, jax.vmap(jf, in_axes)(init, xs, w2), 1e-5)


def test_fori_loop_with_batched_bound():
    def f(n, x):
        return lax.fori_loop(0, n, lambda i, v: v + i, x)

    def jf(n, x):
        return jax.lax.fori_loop(0, n, lambda i, v: v + i, x)

    n = np.array([0, 2, 5], np.int32)
    x = np.zeros(3, np.int32)
    assert_close(ri.vmap(f)(n, x), jax.vmap(jf)(n, x))


def test_nested_jit_stays_one_call_equation():
    inner = ri.jit(lambda a: rnp.sin(a) * 2.0)
    program = ri.make_program(ri.vmap(lambda a: inner(a) + 1.0))(X)
    names = [e.primitive.name for e in program.eqns]
    assert names.count("jit") == 1 and "sin" not in names
    assert_close(ri.vmap(lambda a: inner(a) + 1.0)(X), np.sin(X) * 2 + 1, 1e-6)


# --- compositions ----------------------------------------------------------------------------


def mlp_params(rng):
    return [
        (rng.normal(size=(3, 8)).astype(np.float32), np.zeros(8, np.float32)),
        (rng.normal(size=(8, 2)).astype(np.float32) * 0.3, np.zeros(2, np.float32)),
    ]


def mlp_loss(params, x, y, np_=rnp):
    h = x
    for i, (w, b) in enumerate(params):
        h = h @ w + b
        if i + 1 < len(params):
            h = np_.tanh(h)
    return np_.sum((h - y) ** 2)


def test_per_example_gradients_of_an_mlp():
    rng = np.random.default_rng(6)
    params = mlp_params(rng)
    xs = rng.normal(size=(5, 3)).astype(np.float32)
    ys = rng.normal(size=(5, 2)).astype(np.float32)
    per_example = ri.vmap(ri.grad(mlp_loss), in_axes=(None, 0, 0))
    got = per_example(params, xs, ys)
    loop = [ri.grad(mlp_loss)(params, xs[i], ys[i]) for i in range(5)]
    stacked = jax.tree_util.tree_map(lambda *g: np.stack([np.asarray(v) for v in g]), *loop)
    assert_close(got, stacked, 1e-5)
    jloss = lambda p, x, y: mlp_loss(p, x, y, jnp)  # noqa: E731
    want = jax.vmap(jax.grad(jloss), in_axes=(None, 0, 0))(params, xs, ys)
    assert_close(got, want, 1e-4)
    assert_close(ri.jit(per_example)(params, xs, ys), want, 1e-4)
    assert_close(ri.jit(per_example, backend="pjrt")(params, xs, ys), want, 1e-4)


def test_grad_of_vmap():
    rng = np.random.default_rng(7)
    params = mlp_params(rng)
    xs = rng.normal(size=(5, 3)).astype(np.float32)
    ys = rng.normal(size=(5, 2)).astype(np.float32)

    def total(p):
        return rnp.sum(ri.vmap(mlp_loss, in_axes=(None, 0, 0))(p, xs, ys))

    def jtotal(p):
        return jnp.sum(jax.vmap(lambda p, x, y: mlp_loss(p, x, y, jnp), (None, 0, 0))(p, xs, ys))

    assert_close(ri.grad(total)(params), jax.grad(jtotal)(params), 1e-4)
    assert_close(ri.jit(ri.grad(total), backend="pjrt")(params), jax.grad(jtotal)(params), 1e-4)


def test_vmap_of_mask():
    masked = ri.mask(lambda x: rnp.sum(x * x), ["n"], "()")
    xs = np.arange(10, dtype=np.float32).reshape(2, 5)
    f = ri.vmap(lambda x: masked([x], {"n": 3}))
    want = np.sum(xs[:, :3] ** 2, axis=1)
    assert_close(f(xs), want)
    assert_close(ri.jit(f, backend="pjrt")(xs), want)


def test_jit_of_vmap_is_an_ordinary_program():
    program = ri.make_program(ri.vmap(lambda a, b: rnp.tanh(a) @ b, in_axes=(0, None)))(
        X, np.ones((2, 4), np.float32)
    )
    ri.check_program(program)
    assert re.search(r"f32\[3,4\]", str(program))


# --- vmap is a trace of its own (not a staging one) ---------------------------------------------


def test_concrete_values_inside_vmap_stay_concrete():
    """Values that do not depend on a mapped argument are computed as they are
    (eagerly here), so Python may branch on them, as under jax.vmap."""

    def f(x):
        c = rnp.ones(3)
        return x * 2.0 if float(rnp.sum(c)) > 2 else x

    assert_close(ri.vmap(f)(X), X * 2)


def test_branching_on_a_batched_value_is_a_concretization_error():
    with pytest.raises(ri.ConcretizationTypeError, match="batched by vmap"):
        ri.vmap(lambda x: x if x.sum() > 0 else -x)(X)


def test_batched_tracer_shows_one_members_shape():
    shapes = []
    ri.vmap(lambda x: shapes.append(x.shape) or x, in_axes=1)(X)
    assert shapes == [(3,)]


def test_psum_jvp_and_transpose_under_vmap():
    """psum's jvp rule and its transpose (psum again) run inside a vmap with the name."""
    x = np.arange(1, 5, dtype=np.float32)
    got = ri.vmap(ri.grad(lambda v: lax.psum(v**2, "i")), axis_name="i")(x)
    want = jax.vmap(jax.grad(lambda v: jax.lax.psum(v**2, "i")), axis_name="i")(x)
    assert_close(got, want)  # 2 * n * x: the cotangent is psummed back
    got = ri.vmap(ri.grad(lambda v: lax.psum(v, "i") * v), axis_name="i")(x)
    want = jax.vmap(jax.grad(lambda v: jax.lax.psum(v, "i") * v), axis_name="i")(x)
    assert_close(got, want)

    def jvp_of(api, psum):
        return lambda v: api.jvp(lambda u: psum(u**2, "i"), (v,), (np.float32(1.0),))

    got = ri.vmap(jvp_of(ri, lax.psum), axis_name="i")(x)
    want = jax.vmap(jvp_of(jax, jax.lax.psum), axis_name="i")(x)
    assert_close(got, want)


W = np.linspace(0, 1, 12, dtype=np.float32).reshape(4, 3)
PERM = [(0, 1), (1, 2), (2, 3), (3, 0)]


@pytest.mark.parametrize(
    "name, ours, theirs",
    [
        (
            "all_gather",
            lambda v: rnp.sum(lax.all_gather(v, "i") * W),
            lambda v: jnp.sum(jax.lax.all_gather(v, "i") * W),
        ),
        (
            "all_gather_tiled",
            lambda v: rnp.sum(lax.all_gather(v, "i", tiled=True) * W.reshape(-1)),
            lambda v: jnp.sum(jax.lax.all_gather(v, "i", tiled=True) * W.reshape(-1)),
        ),
        (
            "ppermute",
            lambda v: rnp.sum(lax.ppermute(v, "i", PERM) * W[0]),
            lambda v: jnp.sum(jax.lax.ppermute(v, "i", PERM) * W[0]),
        ),
        (
            "psum_scatter",
            lambda v: rnp.sum(lax.psum_scatter(rnp.concatenate([v] * 4), "i", tiled=True) * W[0]),
            lambda v: jnp.sum(
                jax.lax.psum_scatter(jnp.concatenate([v] * 4), "i", tiled=True) * W[0]
            ),
        ),
    ],
)
def test_collective_transposes_under_vmap(name, ours, theirs):
    """all_gather <-> psum_scatter and ppermute -> inverse ppermute, as JAX."""
    x = np.arange(1, 13, dtype=np.float32).reshape(4, 3)
    got = ri.vmap(ri.grad(ours), axis_name="i")(x)
    assert_close(got, jax.vmap(jax.grad(theirs), axis_name="i")(x))


@pytest.mark.parametrize("out_axes", [0, 1])
def test_vmap_of_grad_with_float0_tangents_matches_jax(out_axes):
    x = np.arange(6, dtype=np.int32).reshape(3, 2)
    y = np.linspace(0.5, 2.0, 6, dtype=np.float32).reshape(3, 2)

    def f(a, b):
        return (a * b).sum()

    got = ri.vmap(ri.grad(f, argnums=(0, 1), allow_int=True), out_axes=out_axes)(x, y)
    want = jax.vmap(jax.grad(f, argnums=(0, 1), allow_int=True), out_axes=out_axes)(x, y)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
    np.testing.assert_array_equal(np.asarray(got[1]), np.asarray(want[1]))


def test_vmap_of_jvp_with_a_float0_tangent_matches_jax():
    x = np.arange(3, dtype=np.int32)
    t = np.zeros((), dtype=jax.dtypes.float0)
    got = ri.vmap(lambda a: ri.jvp(lambda u: u * 2, (a,), (t,)))(x)
    want = jax.vmap(lambda a: jax.jvp(lambda u: u * 2, (a,), (t,)))(x)
    assert [(g.dtype, g.shape) for g in got] == [(w.dtype, w.shape) for w in want]
    np.testing.assert_array_equal(np.asarray(got[0]), np.asarray(want[0]))


def test_select_n_with_a_batched_which_and_unbatched_scalar_cases_matches_jax():
    w = np.array([True, False, True])
    got = ri.vmap(lambda v: lax.select_n(v, np.float32(1.0), np.float32(2.0)))(w)
    want = jax.vmap(lambda v: jax.lax.select_n(v, np.float32(1.0), np.float32(2.0)))(w)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_vmap_of_grad_of_a_custom_jvp_whose_rule_selects_matches_jax():
    # the rule's where(x == 0, 0, dy) transposes to a select_n with a batched
    # which and unbatched zero cases
    def make(lib, np_):
        def g(x):
            return np_.exp(x) * x

        f = lib.custom_jvp(g)

        @f.defjvp
        def rule(primals, tangents):
            (x,), (t,) = primals, tangents
            y, dy = lib.jvp(g, (x,), (t,))
            return y, np_.where(x == 0, 0.0, dy)

        return f

    x = np.array([0.0, 1.0, 2.0], np.float32)
    got = ri.vmap(ri.grad(make(ri, rnp)))(x)
    want = jax.vmap(jax.grad(make(jax, jnp)))(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


@pytest.mark.parametrize("backend", ["ref", "pjrt"])
def test_psum_counts_booleans_as_jax(backend):
    # JAX's psum sums bools as int32 (a count); summing them as bools was an OR
    flags = np.array([True, True, False, True])

    def f(L, v):
        return L.psum(v, "i"), L.pmean(v, "i"), L.psum(True, "i")

    got = ri.jit(ri.vmap(functools.partial(f, lax), axis_name="i"), backend=backend)(flags)
    want = jax.vmap(functools.partial(f, jax.lax), axis_name="i")(flags)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.weak_type == w.weak_type
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    np.testing.assert_array_equal(np.asarray(got[0]), np.full(4, flags.sum()))
