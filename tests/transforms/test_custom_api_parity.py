"""custom_jvp / custom_vjp programs of the kinds JAX's own custom-rule tests
run, compared with JAX 0.10.2 on both backends: nested vmap of a custom_vjp
gradient, bwd outputs in user pytree nodes, SymbolicZero checks, traced
nondiff arguments of custom_vjp, zero_from_primal and float0 zeros."""

from __future__ import annotations

import functools
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.custom_derivatives as rcd
import refimpl.numpy as rnp
from refimpl import core_api
from tests.helpers.parity import assert_same_as_jax

JAX = types.SimpleNamespace(
    lib=jax, np=jnp, cd=jax.custom_derivatives, tu=jax.tree_util, float0=jax.dtypes.float0
)
RI = types.SimpleNamespace(lib=ri, np=rnp, cd=rcd, tu=ri.tree_util, float0=ri.dtypes.float0)


def _close(got, want):
    got_leaves, want_leaves = ri.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves, strict=True):
        # JAX returns a rule's Python float as it is (refimpl too, where the
        # rule ran on the user's numbers): compare the canonical types
        assert not isinstance(g, float) or isinstance(w, float), (g, w)
        g = np.asarray(rnp.asarray(g) if isinstance(g, (int, float, complex)) else g)
        w = np.asarray(jnp.asarray(w))
        assert g.dtype == w.dtype and g.shape == w.shape
        if w.dtype != jax.dtypes.float0:
            np.testing.assert_allclose(g, w, rtol=1e-6)


def _sin_vjp(n):
    @n.lib.custom_vjp
    def f(x):
        return n.np.sin(x)

    f.defvjp(lambda x: (f(x), n.np.cos(x)), lambda c, g: (2 * c * g,))
    return f


def test_nested_vmap_of_a_custom_vjp_gradient(backend):
    xx = np.arange(6.0, dtype=np.float32).reshape(2, 3)

    def prog(n):
        f = _sin_vjp(n)
        return (
            n.lib.vmap(n.lib.vmap(n.lib.grad(f)))(xx),
            n.lib.vmap(n.lib.vmap(n.lib.value_and_grad(f)))(xx),
            n.lib.grad(lambda x: n.lib.vmap(n.lib.vmap(f))(x).sum())(xx),
        )

    want = prog(JAX)
    _close(prog(RI), want)
    _close(ri.jit(lambda x: ri.vmap(ri.vmap(ri.grad(_sin_vjp(RI))))(x))(xx), want[0])


def test_a_bwd_output_node_is_not_rebuilt_with_none_children():
    def prog(n):
        class Box(list):
            pass

        def unflatten(_, children):
            assert children[0] is not None, "rebuilt with a None child"
            return Box(children)

        n.tu.register_pytree_node(Box, lambda b: (list(b), None), unflatten)

        @n.lib.custom_vjp
        def f(b):
            return b[0] * 3.0

        f.defvjp(lambda b: (f(b), None), lambda _, g: (Box([2.0 * g]),))
        return list(n.lib.grad(f)(Box([1.5])))

    _close(prog(RI), prog(JAX))


def test_a_symbolic_zero_of_another_type_from_bwd_is_a_value_error(backend):
    def run(n):
        @n.lib.custom_vjp
        def f(x, y):
            return x, y

        def bwd(_, cts):
            return cts[1], cts[0]  # swapped: each a SymbolicZero of the other's shape

        f.defvjp(lambda x, y: (f(x.value, y.value), None), bwd, symbolic_zeros=True)
        return n.lib.grad(lambda x, y: f(x, y)[1].sum() * 0 + f(x, y)[0].sum())(
            np.ones(1, np.float32), np.ones(2, np.float32)
        )

    with pytest.raises(ValueError):
        run(JAX)
    with pytest.raises(ValueError, match="SymbolicZero"):
        run(RI)


def test_a_traced_nondiff_argument_of_custom_vjp_is_an_unexpected_tracer_error(backend):
    def prog(n):
        @functools.partial(n.lib.custom_vjp, nondiff_argnums=(0,))
        def f(x, y):
            return x * y

        f.defvjp(lambda x, y: (f(x, y), y), lambda x, y, g: (x * g,))
        return f

    with pytest.raises(jax.errors.UnexpectedTracerError):
        jax.jit(prog(JAX))(2.0, 3.0)
    with pytest.raises(jax.errors.UnexpectedTracerError):
        jax.vmap(prog(JAX), in_axes=(0, None))(np.ones(2, np.float32), 3.0)
    f = prog(RI)
    with pytest.raises(ri.errors.UnexpectedTracerError, match="nondiff_argnums"):
        ri.jit(f)(2.0, 3.0)
    with pytest.raises(ri.errors.UnexpectedTracerError):
        ri.vmap(f, in_axes=(0, None))(np.ones(2, np.float32), 3.0)
    # a concrete nondiff argument still works, differentiated or not
    assert float(ri.grad(f, 1)(2.0, 3.0)) == float(jax.grad(prog(JAX), 1)(2.0, 3.0))


def test_zero_from_primal(backend):
    val = (2.0, 3, np.ones(2, np.float16), {"b": np.int8(1)})
    want = jax.custom_derivatives.zero_from_primal(val)
    _close(rcd.zero_from_primal(val), want)
    zeros = rcd.zero_from_primal(val, symbolic_zeros=True)
    assert all(type(z) is rcd.SymbolicZero for z in ri.tree_leaves(zeros))
    assert [z.dtype for z in ri.tree_leaves(zeros)] == [
        z.dtype for z in jax.tree_util.tree_leaves(want)
    ]


def test_float0_zeros_and_a_custom_jvp_passing_them_through(backend):
    def prog(n):
        z = n.np.zeros((), dtype=n.float0)

        @n.lib.custom_jvp
        def f(x, i):
            return x, i

        f.defjvp(lambda p, _: (p, (2.0, n.cd.zero_from_primal(p[1]))))
        return z, n.np.ones((2,), n.float0), n.lib.jvp(f, (2.0, 3), (np.ones(()), z))

    want = prog(JAX)
    got = prog(RI)
    _close(got, want)
    assert isinstance(got[0], np.ndarray) and got[0].dtype == ri.dtypes.float0


def _transposed(lib, f, example):
    return lambda t: lib.linear_transpose(f, example)(t)[0]


def _linear_call_programs(n, untrue):
    """x + linear_call(x / y) with a transpose that is true (t / y) or not
    (t / 2y): its transposes (1, 2 and 3 times), under jit, and its grad."""
    lc = n.cd.linear_call
    tp = (lambda r, t: t / (2.0 * r)) if untrue else (lambda r, t: t / r)
    y = n.np.ones(2) * 3.0
    x = n.np.ones(2) * 6.0

    def f(x):
        return x + lc(lambda r, v: v / r, tp, y, x)

    ft = _transposed(n.lib, f, x)
    ftt = _transposed(n.lib, ft, x)
    fttt = _transposed(n.lib, ftt, x)
    return (
        f(x),
        ft(x),
        ftt(x),
        fttt(x),
        n.lib.jit(ft)(x),
        n.lib.grad(lambda s: f(s * x).sum())(1.0),
        n.lib.jvp(f, (x,), (x,)),
    )


@pytest.mark.parametrize("untrue", [False, True])
def test_linear_call_is_transposed_by_its_rule(backend, untrue):
    _close(_linear_call_programs(RI, untrue), _linear_call_programs(JAX, untrue))


def test_linear_call_structures_and_nesting(backend):
    def prog(n):
        lc = n.cd.linear_call

        def to_pair(x):  # a scalar to a list, transposed by a sum
            return lc(lambda _, v: [v, v], lambda _, t: t[0] + t[1], (), 2.0 * x)

        def id_(x):  # identity whose (untrue) transpose is 0
            return lc(lambda _, v: v, lambda _, t: 0.0, (), x)

        def g(x):  # calls id_ both ways: neither inner transpose is used
            return lc(lambda _, v: id_(v), lambda _, t: id_(7.0), (), x)

        gt = _transposed(n.lib, g, 5.0)
        return (
            _transposed(n.lib, to_pair, 3.0)([4.0, 5.0]),
            _transposed(n.lib, id_, 5.0)(5.0),
            g(5.0),
            gt(5.0),
            _transposed(n.lib, gt, 5.0)(5.0),
            n.lib.jit(lambda x: lc(lambda _, v: v, lambda _, t: t, None, x))(0.1),
        )

    _close(prog(RI), prog(JAX))


def test_linear_call_transpose_of_another_structure_is_a_type_error(backend):
    def run(n):
        f = lambda x: n.cd.linear_call(lambda r, v: v / r, lambda r, t: None, 3.0, x)  # noqa: E731
        return _transposed(n.lib, f, 6.0)(1.0)

    with pytest.raises(TypeError, match="transpose output pytree"):
        run(JAX)
    with pytest.raises(TypeError, match="transpose output pytree"):
        run(RI)


def _zero_kinds(n, log):
    """A custom_jvp and a custom_vjp (symbolic_zeros=True) under vmap that
    log whether each tangent/cotangent they get is a SymbolicZero."""
    sz = n.cd.SymbolicZero

    @n.lib.custom_jvp
    def f(x, y):
        return y

    def f_jvp(primals, tangents):
        log.append(("jvp", [type(t) is sz for t in tangents]))
        return primals[1], tangents[1]

    f.defjvp(f_jvp, symbolic_zeros=True)

    @n.lib.custom_vjp
    def g(x, y):
        return x, y

    def g_bwd(_, cts):
        log.append(("bwd", [type(c) is sz for c in cts]))
        return cts

    g.defvjp(lambda x, y: (g(x.value, y.value), None), g_bwd, symbolic_zeros=True)
    return f, g


def test_symbolic_zeros_stay_symbolic_under_vmap(backend):
    ones = np.ones(3, np.float32)

    def prog(n):
        log = []
        f, g = _zero_kinds(n, log)
        # f's output tangent (of the constant 1.0) is a symbolic zero, which
        # the outer f receives as one
        out = n.lib.jvp(n.lib.vmap(lambda x: f(x, f(x, 1.0))), (ones,), (ones,))
        # only g's first output is used: its second cotangent is zero
        grad = n.lib.grad(lambda x, y: n.lib.vmap(g)(x, y)[0].sum())(ones, ones)
        jit_grad = n.lib.jit(n.lib.grad(lambda x, y: n.lib.vmap(g)(x, y)[0].sum()))(ones, ones)
        return out, grad, jit_grad, log

    want_out, want_grad, want_jit, want_log = prog(JAX)
    got_out, got_grad, got_jit, got_log = prog(RI)
    _close((got_out, got_grad, got_jit), (want_out, want_grad, want_jit))
    assert got_log == want_log


def test_sequential_vmap(backend):
    xs = np.linspace(0.0, 1.0, 5).astype(np.float32)

    def prog(n):
        cb = n.lib.custom_batching

        @cb.sequential_vmap
        def add(x, y):
            return {"s": x + y, "p": [x * y]}

        @cb.sequential_vmap
        def fwd(x, y):
            return n.np.sin(x) * y, (x, y)

        @cb.sequential_vmap
        def bwd(res, ct):
            return res[0] * ct, res[1] * ct

        fun = n.lib.custom_vjp(lambda x, y: fwd(x, y)[0])
        fun.defvjp(fwd, bwd)
        f = n.lib.vmap(n.lib.jit(fun), in_axes=(0, None))
        out, f_vjp = n.lib.vjp(f, xs, np.float32(0.5))
        return (
            n.lib.vmap(add)(xs, xs + 1.0),
            n.lib.vmap(add, in_axes=(0, None))(xs, np.float32(4.0)),
            add(np.float32(1.0), np.float32(2.0)),
            out,
            f_vjp(out),
        )

    _close(prog(RI), prog(JAX))


def test_a_custom_vjp_of_a_custom_vmap_forwards_def_vmap(backend):
    xs = np.linspace(0.0, 1.0, 5).astype(np.float32)

    def prog(n):
        @n.lib.custom_vjp
        @n.lib.custom_batching.custom_vmap
        def f(x, y):
            return n.np.sin(x) * y

        f.def_vmap(lambda size, batched, x, y: (n.np.cos(x) * y, True))
        f.defvjp(lambda x, y: (f(x, y), (n.np.cos(x), y)), lambda r, g: (r[0] * g * r[1], g))
        return n.lib.vmap(f)(xs, xs), n.lib.grad(f)(xs[1], xs[2])

    _close(prog(RI), prog(JAX))
    with pytest.raises(AttributeError):
        RI.lib.custom_jvp(RI.lib.custom_batching.custom_vmap(lambda x: x)).not_a_def_method  # noqa: B018


@pytest.mark.parametrize("batch_size", [0, 3])
def test_lax_map_batch_size_zero_is_one_vmap(backend, batch_size):
    xs = {"a": np.arange(7, dtype=np.float32)}

    def prog(n):
        return n.lib.lax.map(lambda x: {"b": x["a"] ** 2}, xs, batch_size=batch_size)

    _close(prog(RI), prog(JAX))


def test_integer_arguments_of_custom_vjp_are_not_perturbed(backend):
    i = np.array(7, np.int32)

    def prog(n):
        log = []

        @n.lib.custom_vjp
        def f(x, y, z):
            return x * 2.0, x

        def fwd(x, y, z):
            log.append([x.perturbed, y.perturbed, z.perturbed])
            return f(x.value, y.value, z.value), None

        # a cotangent given for an integer input is ignored: it is a float0 zero
        f.defvjp(fwd, lambda _, g: (g[0], g[0], g[1]), symbolic_zeros=True)
        jac = n.lib.jacrev(f, argnums=(0, 1, 2), allow_int=True)(4.0, i, i)
        grads = n.lib.grad(lambda *a: f(*a)[0], argnums=(0, 1, 2), allow_int=True)(4.0, i, i)
        return jac, grads, log

    want = prog(JAX)
    got = prog(RI)
    _close(got[:2], want[:2])
    assert got[2] == want[2]


def test_custom_jvp_rule_sees_a_batched_nondiff_argument(backend):
    def prog(n):
        @functools.partial(n.lib.custom_jvp, nondiff_argnums=(0,))
        def f(x, y):
            return x * y

        f.defjvp(lambda x, p, t: (f(x, p[0]), 5.0 * x * t[0]))
        g = n.lib.vmap(f)
        two, three = np.array([2.0, 4.0], np.float32), np.array([3.0, 1.0], np.float32)
        return (
            n.lib.jvp(lambda y: g(two, y), (three,), (np.ones(2, np.float32),)),
            n.lib.grad(lambda y: g(two, y).sum())(three),
            n.lib.jit(n.lib.vmap(n.lib.grad(lambda x, y: f(x, y), 1)))(two, three),
        )

    _close(prog(RI), prog(JAX))


def test_custom_vmap_jvp_maps_over_arguments_batched_apart_from_their_tangents(backend):
    xs, x = np.arange(3.0, dtype=np.float32), np.float32(1.0)

    def prog(n):
        cb, log = n.lib.custom_batching, []

        @cb.custom_vmap
        def f(x):
            return n.np.sin(x)

        @f.def_vmap
        def rule(size, batched, xs):
            log.append(list(batched))
            return n.np.cos(xs), batched[0]

        @cb.custom_vmap
        def lin(x):
            return 7.0 * x

        lin.def_vmap(lambda size, batched, xs: (11.0 * xs, batched[0]))
        f_jvp = lambda p, t: n.lib.jvp(f, [p], [t])  # noqa: E731
        lin_jvp = lambda p, t: n.lib.jvp(lin, [p], [t])  # noqa: E731
        return (
            n.lib.vmap(f_jvp, in_axes=(None, 0), out_axes=(None, 0))(x, xs + 2.0),
            n.lib.vmap(f_jvp, in_axes=(0, None))(xs, np.float32(4.0)),
            n.lib.jacfwd(f)(xs + 0.72),
            # a linear rule: the tangent of a fixed tangent stays unbatched
            n.lib.vmap(lin_jvp, in_axes=(0, None), out_axes=(0, None))(xs, np.float32(4.0)),
            log,
        )

    want, got = prog(JAX), prog(RI)
    _close(got[:4], want[:4])
    assert got[4] == want[4]


def _psum_rule_program(n, out_axes):
    """A custom_jvp over a collective, traced with make_jaxpr and re-bound
    with eval_jaxpr under a named vmap whose batched argument it does not see."""
    core = jax.core if n is JAX else core_api

    @n.lib.custom_jvp
    def f(x):
        return n.lib.lax.psum(x, "foo")

    f.defjvp(lambda xs, ts: (n.lib.lax.psum(xs[0], "foo"), ts[0] * 3.0))

    def g(x):
        p = n.lib.make_jaxpr(f)(x)
        return core.eval_jaxpr(p.jaxpr, [], x)[0]

    def direct(x):
        p = n.lib.make_jaxpr(lambda y: n.lib.lax.psum(y, "foo"))(x)
        return core.eval_jaxpr(p.jaxpr, [], x)[0]

    def mapped(fn):
        return lambda x: n.lib.vmap(
            lambda _, y: fn(y), axis_name="foo", in_axes=(0, None), out_axes=out_axes
        )(n.np.arange(4.0), x)

    return (
        mapped(g)(2.0),
        mapped(direct)(2.0),
        n.lib.jvp(mapped(g), (2.0,), (1.0,)),
        n.lib.jit(mapped(g))(2.0),
    ) + ((n.lib.grad(mapped(g))(2.0),) if out_axes is None else ())


@pytest.mark.parametrize("out_axes", [None, 0])
def test_a_rebound_collective_of_an_unbatched_value_stays_unbatched(backend, out_axes):
    # JAX's collective binds to the vmap of its axis name even when no operand
    # is batched, and a custom_jvp call whose operands are all unbatched has
    # the outputs its program makes (psum of an unbatched x: unbatched n * x)
    # (JAX's vmap hands back psum's Python-float result of a Python float as
    # it is, an unbatched output; refimpl's is the weak array of that number)
    want = jax.tree_util.tree_map(jnp.asarray, _psum_rule_program(JAX, out_axes))
    got = ri.tree_util.tree_map(rnp.asarray, _psum_rule_program(RI, out_axes))
    assert_same_as_jax(got, want)


def _float0_carry_grads(n):
    # a custom_vjp over a scan carry (float, int): its bwd gives the int part
    # a float0 zero, which must not become a float0 scan operand
    @n.lib.custom_vjp
    def f(c):
        return c

    f.defvjp(lambda c: (c, None), lambda _, g: ((2.0 * g[0], n.np.zeros((), dtype=n.float0)),))

    def foo(x, y, length):
        out, _ = n.lib.lax.scan(lambda c, _: (f(c), None), (x, y), None, length=length)
        return out[0] * out[1]

    both = dict(allow_int=True, argnums=(0, 1))
    return (
        n.lib.grad(foo, **both)(2.0, 3, 1),
        n.lib.grad(foo, **both)(2.0, 3, 3),
        n.lib.jit(n.lib.grad(foo, **both), static_argnums=2)(2.0, 3, 2),
        n.lib.vjp(lambda x: foo(x, 3, 2), 2.0)[1](1.0),
    )


def test_a_float0_cotangent_of_a_scan_carry_from_a_custom_vjp(backend):
    got, want = _float0_carry_grads(RI), _float0_carry_grads(JAX)
    _close(got, want)


def _rules_closing_over_a_vmap_value(n):
    # the function and its rules close over x, a value of a vmap that runs
    # inside the differentiation: the call goes to that vmap first
    def jvp_h(z):
        def f(x):
            @n.lib.custom_jvp
            def g(y):
                return x * y

            g.defjvp(lambda p, t: (x * p[0], x * t[0]))
            return g(z)

        return n.lib.vmap(f)(n.np.arange(3.0, dtype="float32"))

    def vjp_h(z):
        def f(x):
            @n.lib.custom_vjp
            def g(y):
                return x * y

            g.defvjp(lambda y: (x * y, (x, x * y, y)), lambda res, w: (res[0] * w,))
            return g(z)

        return n.lib.vmap(f)(n.np.arange(3.0, dtype="float32")).sum()

    z = np.float32(3.14)
    return (
        n.lib.jvp(jvp_h, (z,), (np.float32(2.0),)),
        n.lib.grad(vjp_h)(z),
        n.lib.value_and_grad(vjp_h)(np.float32(2.0)),
        n.lib.jit(n.lib.grad(vjp_h))(z),
    )


def test_rules_closing_over_a_value_of_an_inner_vmap(backend):
    # JAX's custom_api tests test_closure_with_vmap2 (custom_jvp and custom_vjp)
    _close(_rules_closing_over_a_vmap_value(RI), _rules_closing_over_a_vmap_value(JAX))


def _rules_on_python_numbers(n):
    """custom_api_test's test_symbolic_zero_custom_jvp/_vjp, eager: the rules run
    on the user's Python numbers, and what they compute from them comes back as
    Python numbers (JAX: its rules see floats, or TypedFloats, float subclasses)."""
    seen = []

    @n.lib.custom_jvp
    def f(a, x):
        return a + x

    def f_jvp(primals, tangents):
        seen.append([isinstance(p, float) for p in primals])
        return f(*primals), primals[0] + 90

    f.defjvp(f_jvp, symbolic_zeros=True)

    @n.lib.custom_vjp
    def g(a, x):
        return a, a + x

    def g_fwd(a, x):
        seen.append([isinstance(v.value, float) for v in (a, x)])
        return g(a.value, x.value), a.value

    def g_bwd(a, cts):
        seen.append([isinstance(c, float) for c in cts if type(c) is not n.cd.SymbolicZero])
        return a + 90, cts[1] + 92

    g.defvjp(g_fwd, g_bwd, symbolic_zeros=True)
    jvp_out = n.lib.jvp(lambda x: f(1.0, x), (4.0,), (7.0,))
    outs, pullback = n.lib.vjp(lambda x: g(1.0, x)[1], 4.0)
    cts = pullback(7.0)
    results = [*jvp_out, outs, *cts]
    return seen, [isinstance(r, float) for r in results], [float(r) for r in results]


def test_custom_rules_run_on_python_numbers_as_jax(backend):
    assert _rules_on_python_numbers(RI) == _rules_on_python_numbers(JAX)
