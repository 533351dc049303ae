"""The rest of ``jax.lax`` (refimpl/lax/, refimpl/primitives/barriers.py, bits.py,
precision.py, cumlogsumexp.py) against ``jax.lax``.

Every function runs eagerly (reference backend), under ``jit`` on the
reference backend and under ``jit`` on PJRT, on random inputs over its
dtypes (and weakly typed Python scalars), and must equal ``jax.lax`` in
values, dtype and weak type; derivatives against ``jax.jvp``/``jax.grad``,
batching against ``jax.vmap``; bad arguments raise errors naming the
function and the argument.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from jax import lax as jlax

import refimpl as ri
from refimpl import lax

RUNNERS = ["eager", "ref", "pjrt"]


def run(fn, args, runner):
    if runner == "eager":
        return fn(*args)
    return ri.jit(fn, backend=runner)(*args)


def check(ours, theirs, exact=True, rtol=1e-6, atol=0.0):
    ours_l, tree_o = jax.tree_util.tree_flatten(ours)
    theirs_l, tree_t = jax.tree_util.tree_flatten(theirs)
    assert len(ours_l) == len(theirs_l), (tree_o, tree_t)
    for o, t in zip(ours_l, theirs_l, strict=True):
        t_arr = np.asarray(t)
        o_arr = np.asarray(o)
        assert o_arr.shape == t_arr.shape
        assert o_arr.dtype == t_arr.dtype, (o_arr.dtype, t_arr.dtype)
        if hasattr(t, "weak_type") and hasattr(o, "weak_type"):
            assert o.weak_type == t.weak_type
        if t_arr.dtype == jax.dtypes.float0:
            continue
        if exact:
            np.testing.assert_array_equal(o_arr, t_arr)
        else:
            np.testing.assert_allclose(
                o_arr.astype(np.float64), t_arr.astype(np.float64), rtol=rtol, atol=atol
            )


def rand(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    if np.issubdtype(dtype, np.complexfloating):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return (rng.standard_normal(shape) * 3).astype(dtype)


# --- stop_gradient ------------------------------------------------------------------------


@pytest.mark.parametrize("runner", ["ref", "pjrt"])
def test_stop_gradient_grad(runner):
    def f(x):
        return x * lax.stop_gradient(x)

    def g(x):
        return x * jlax.stop_gradient(x)

    assert float(ri.jit(ri.grad(f), backend=runner)(3.0)) == float(jax.grad(g)(3.0)) == 3.0
    assert float(ri.grad(f)(3.0)) == 3.0
    x = np.float32(1.5)
    check(ri.jvp(f, (x,), (np.float32(1),)), jax.jvp(g, (x,), (np.float32(1),)))


@pytest.mark.parametrize("runner", RUNNERS)
def test_stop_gradient_values_and_trees(runner):
    tree = {"f": np.arange(3, dtype=np.float32), "i": np.arange(2, dtype=np.int32), "w": 2.0}
    check(run(lax.stop_gradient, (tree,), runner), jax.jit(jlax.stop_gradient)(tree))
    # integer / bool leaves are passed through as JAX does (a Python int stays one)
    assert lax.stop_gradient(3) == 3 and isinstance(lax.stop_gradient(3), int)


def test_stop_gradient_vmap_scan_and_integer_grad():
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)

    def f(v):
        return jnp.sum(v * jlax.stop_gradient(v) ** 2)

    def ours(v):
        return ri.numpy.sum(v * lax.stop_gradient(v) ** 2)

    check(ri.vmap(ri.grad(ours))(x), jax.vmap(jax.grad(f))(x), exact=False)

    def body(c, v):
        return c + v * lax.stop_gradient(v), None

    def jbody(c, v):
        return c + v * jlax.stop_gradient(v), None

    def total(v):
        return ri.lax.scan(body, 0.0, v)[0]

    def jtotal(v):
        return jlax.scan(jbody, 0.0, v)[0]

    xs = np.arange(4.0, dtype=np.float32)
    check(ri.grad(total)(xs), jax.grad(jtotal)(xs), exact=False)
    check(ri.jit(ri.grad(total), backend="pjrt")(xs), jax.grad(jtotal)(xs), exact=False)
    # an integer input: the float0 gradient of allow_int
    n = np.int32(3)

    def h(n, x):
        return x * lax.stop_gradient(n)

    def jh(n, x):
        return x * jlax.stop_gradient(n)

    check(
        ri.grad(h, argnums=(0, 1), allow_int=True)(n, 2.0),
        jax.grad(jh, argnums=(0, 1), allow_int=True)(n, 2.0),
    )


# --- thin wrappers: values, dtypes, weak types ----------------------------------------------

FLOATS = [np.float32, np.float16, ml_dtypes.bfloat16]

UNARY = [
    ("square", [np.float32, np.int32, np.int8, np.float16], True),
    ("reciprocal", FLOATS, True),
    ("exp2", FLOATS, True),
    ("asinh", [np.float32], False),
    ("acosh", [np.float32], False),
    ("atanh", [np.float32], False),
    ("population_count", [np.int32, np.uint8, np.int64, np.uint16], True),
    ("clz", [np.int32, np.uint8, np.int64, np.int16], True),
]


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("name,dtypes_,exact", UNARY, ids=[u[0] for u in UNARY])
def test_unary(name, dtypes_, exact, runner, rng):
    ours, theirs = getattr(lax, name), getattr(jlax, name)
    for dtype in dtypes_:
        if np.dtype(dtype) == np.int64 and not jax.config.jax_enable_x64:
            continue
        x = rand(rng, (3, 4), dtype)
        if name == "acosh":
            x = np.abs(x) + 1
        if name == "atanh":
            x = np.tanh(x)
        # asinh/acosh/atanh are refimpl.numpy's formulas, not XLA's chlo expansions
        check(run(ours, (x,), runner), theirs(x), exact=exact, rtol=1e-5)
    if name not in ("population_count", "clz"):
        check(
            run(ours, (0.75 if name == "atanh" else 1.5,), runner),
            theirs(0.75 if name == "atanh" else 1.5),
            exact=exact,
            rtol=2e-6,
        )


@pytest.mark.parametrize("name", ["square", "reciprocal", "exp2", "asinh", "acosh", "atanh"])
def test_unary_derivatives(name):
    x = np.float32(1.7 if name != "atanh" else 0.3)
    check(ri.grad(getattr(lax, name))(x), jax.grad(getattr(jlax, name))(x), exact=False, rtol=1e-5)
    xs = np.linspace(1.1, 2, 5, dtype=np.float32)
    if name == "atanh":
        xs = xs / 3
    check(
        ri.vmap(getattr(lax, name))(xs), jax.vmap(getattr(jlax, name))(xs), exact=False, rtol=2e-6
    )


@pytest.mark.parametrize("runner", RUNNERS)
def test_full_and_full_like(runner):
    x = np.arange(6, dtype=np.int16).reshape(2, 3)
    cases = [
        (lambda: lax.full((2, 3), 1.5), lambda: jlax.full((2, 3), 1.5)),
        (lambda: lax.full((2,), 2, np.float32), lambda: jlax.full((2,), 2, np.float32)),
        (lambda: lax.full(3, True), lambda: jlax.full(3, True)),
    ]
    for ours, theirs in cases:
        check(run(ours, (), runner), theirs())
    check(run(lambda a: lax.full_like(a, 7), (x,), runner), jlax.full_like(x, 7))
    check(
        run(lambda a: lax.full_like(a, 7.5, np.float32, (4,)), (x,), runner),
        jlax.full_like(x, 7.5, np.float32, (4,)),
    )
    check(run(lambda: lax.full_like(2.0, 3), (), runner), jlax.full_like(2.0, 3))


@pytest.mark.parametrize("runner", RUNNERS)
def test_dot_and_batch_matmul(runner, rng):
    a, b, v = (
        rand(rng, (3, 4), np.float32),
        rand(rng, (4, 5), np.float32),
        rand(rng, (4,), np.float32),
    )
    tol = dict(exact=False, rtol=1e-5, atol=1e-5)
    check(run(lax.dot, (a, b), runner), jlax.dot(a, b), **tol)
    check(run(lax.dot, (a, v), runner), jlax.dot(a, v), **tol)
    check(run(lax.dot, (v, v), runner), jlax.dot(v, v), **tol)
    ai, bi = rand(rng, (2, 3), np.int8), rand(rng, (3, 2), np.int8)

    def pref(x, y):
        return lax.dot(x, y, preferred_element_type=np.int32)

    check(run(pref, (ai, bi), runner), jlax.dot(ai, bi, preferred_element_type=np.int32))
    dn = (((2,), (1,)), ((0,), (0,)))
    x3, y3 = rand(rng, (2, 3, 4), np.float32), rand(rng, (2, 4, 5), np.float32)
    check(
        run(lambda x, y: lax.dot(x, y, dimension_numbers=dn), (x3, y3), runner),
        jlax.dot(x3, y3, dimension_numbers=dn),
        **tol,
    )
    check(run(lax.batch_matmul, (x3, y3), runner), jlax.batch_matmul(x3, y3), **tol)
    check(
        run(lambda x, y: lax.dot(x, y, precision="highest"), (a, b), runner),
        jlax.dot(a, b, precision="highest"),
        **tol,
    )


def test_dot_derivatives_and_vmap(rng):
    a, b = rand(rng, (3, 4), np.float32), rand(rng, (4, 2), np.float32)

    def f(x, y):
        return lax.dot(x, y).sum()

    def g(x, y):
        return jlax.dot(x, y).sum()

    check(
        ri.grad(f, argnums=(0, 1))(a, b), jax.grad(g, argnums=(0, 1))(a, b), exact=False, rtol=1e-5
    )
    xs = rand(rng, (5, 3, 4), np.float32)
    check(
        ri.vmap(lax.dot, (0, None))(xs, b),
        jax.vmap(jlax.dot, (0, None))(xs, b),
        exact=False,
        rtol=1e-5,
        atol=1e-6,
    )


@pytest.mark.parametrize("runner", RUNNERS)
def test_structural_wrappers(runner, rng):
    x = rand(rng, (2, 3, 4), np.int32)
    cases = [
        (lambda a: lax.broadcast(a, (5,)), lambda a: jlax.broadcast(a, (5,))),
        (lambda a: lax.broadcast(a, ()), lambda a: jlax.broadcast(a, ())),
        (lambda a: lax.collapse(a, 1), lambda a: jlax.collapse(a, 1)),
        (lambda a: lax.collapse(a, 0, 2), lambda a: jlax.collapse(a, 0, 2)),
        (lambda a: lax.collapse(a, -2, -1), lambda a: jlax.collapse(a, -2, -1)),
        (lambda a: lax.tile(a, (2, 1, 3)), lambda a: jlax.tile(a, (2, 1, 3))),
        (lambda a: lax.tile(a, (1, 0, 1)), lambda a: jlax.tile(a, (1, 0, 1))),
        (
            lambda a: tuple(lax.split(a, (1, 0, 2), axis=1)),
            lambda a: tuple(jlax.split(a, (1, 0, 2), axis=1)),
        ),
        (
            lambda a: tuple(lax.split(a, (4,), axis=-1)),
            lambda a: tuple(jlax.split(a, (4,), axis=-1)),
        ),
    ]
    for ours, theirs in cases:
        check(run(ours, (x,), runner), theirs(x))
    check(run(lambda: lax.broadcast(1.0, (2,)), (), runner), jlax.broadcast(1.0, (2,)))


def test_structural_derivatives_and_vmap(rng):
    x = rand(rng, (2, 3), np.float32)
    for ours, theirs in [
        (lambda a: (lax.tile(a, (2, 2)) ** 2).sum(), lambda a: (jlax.tile(a, (2, 2)) ** 2).sum()),
        (
            lambda a: (lax.split(a, (1, 2), 1)[1] ** 2).sum(),
            lambda a: (jlax.split(a, (1, 2), 1)[1] ** 2).sum(),
        ),
        (
            lambda a: (lax.collapse(a, 0) * np.arange(6)).sum(),
            lambda a: (jlax.collapse(a, 0) * jnp.arange(6)).sum(),
        ),
    ]:
        check(ri.grad(ours)(x), jax.grad(theirs)(x), exact=False)
    xs = rand(rng, (4, 2, 3), np.float32)
    check(ri.vmap(lambda a: lax.tile(a, (1, 2)))(xs), jax.vmap(lambda a: jlax.tile(a, (1, 2)))(xs))
    check(ri.vmap(lambda a: lax.collapse(a, 0))(xs), jax.vmap(lambda a: jlax.collapse(a, 0))(xs))


@pytest.mark.parametrize("runner", RUNNERS)
def test_complex_parts(runner, rng):
    x, y = rand(rng, (3,), np.float32), rand(rng, (3,), np.float32)
    check(run(lax.complex, (x, y), runner), jlax.complex(x, y))
    z = (x + 1j * y).astype(np.complex64)
    check(run(lax.real, (z,), runner), jlax.real(z))
    check(run(lax.imag, (z,), runner), jlax.imag(z))
    check(run(lax.conj, (z,), runner), jlax.conj(z))
    check(run(lax.conj, (x,), runner), jlax.conj(x))


def test_axis_size():
    x = np.arange(6.0, dtype=np.float32).reshape(3, 2)

    def ours(v):
        return v * lax.axis_size("i")

    def theirs(v):
        return v * jlax.axis_size("i")

    check(ri.vmap(ours, axis_name="i")(x), jax.vmap(theirs, axis_name="i")(x))
    assert (
        ri.vmap(
            lambda v: ri.vmap(lambda w: w * lax.axis_size(("i", "j")), axis_name="j")(v),
            axis_name="i",
        )(x)[0, 0]
        == 0
    )
    with pytest.raises(NameError, match="unbound axis name: k"):
        lax.axis_size("k")


# --- convolutions ------------------------------------------------------------------------


@pytest.mark.parametrize("runner", RUNNERS)
def test_convolutions(runner, rng):
    lhs, rhs = rand(rng, (2, 3, 7, 6), np.float32), rand(rng, (4, 3, 3, 2), np.float32)
    tol = dict(exact=False, rtol=1e-5, atol=1e-5)
    for padding in ("SAME", "VALID", [(1, 0), (0, 2)]):
        check(
            run(lambda a, b, p=padding: lax.conv(a, b, (1, 2), p), (lhs, rhs), runner),
            jlax.conv(lhs, rhs, (1, 2), padding),
            **tol,
        )
    check(
        run(
            lambda a, b: lax.conv_with_general_padding(
                a, b, (2, 1), [(1, 1), (2, 0)], (1, 2), (2, 1)
            ),
            (lhs, rhs),
            runner,
        ),
        jlax.conv_with_general_padding(lhs, rhs, (2, 1), [(1, 1), (2, 0)], (1, 2), (2, 1)),
        **tol,
    )
    x, k = rand(rng, (2, 5, 6, 3), np.float32), rand(rng, (3, 2, 3, 4), np.float32)
    for padding in ("SAME", "VALID", [(1, 2), (0, 1)]):
        for transpose_kernel in (False, True):
            kk = k if not transpose_kernel else rand(rng, (3, 2, 4, 3), np.float32)

            def ours(a, b, padding=padding, tk=transpose_kernel):
                return lax.conv_transpose(a, b, (2, 1), padding, transpose_kernel=tk)

            check(
                run(ours, (x, kk), runner),
                jlax.conv_transpose(x, kk, (2, 1), padding, transpose_kernel=transpose_kernel),
                **tol,
            )
    check(
        run(
            lambda a, b: lax.conv_transpose(a, b, (2, 2), "SAME", rhs_dilation=(2, 1)),
            (x, k),
            runner,
        ),
        jlax.conv_transpose(x, k, (2, 2), "SAME", rhs_dilation=(2, 1)),
        **tol,
    )


def test_conv_transpose_grad(rng):
    x, k = rand(rng, (1, 4, 4, 2), np.float32), rand(rng, (3, 3, 2, 2), np.float32)

    def ours(a, b):
        return (lax.conv_transpose(a, b, (2, 2), "SAME") ** 2).sum()

    def theirs(a, b):
        return (jlax.conv_transpose(a, b, (2, 2), "SAME") ** 2).sum()

    check(
        ri.grad(ours, argnums=(0, 1))(x, k),
        jax.grad(theirs, argnums=(0, 1))(x, k),
        exact=False,
        rtol=1e-4,
    )


# --- reduce, map, associative_scan ------------------------------------------------------------


@pytest.mark.parametrize("runner", RUNNERS)
def test_reduce_monoids(runner, rng):
    x = rand(rng, (3, 4), np.float32)
    xi = rand(rng, (3, 4), np.int32)
    xb = rand(rng, (3, 4), np.bool_)
    cases = [
        (x, 0.0, "add", (0,)),
        (x, 1.0, "mul", (1,)),
        (x, -np.inf, "max", (0, 1)),
        (x, np.inf, "min", (1,)),
        (xi, np.int32(0), "add", (1,)),
        (xi, np.iinfo(np.int32).min, "max", (0,)),
        (xb, False, "bitwise_or", (1,)),
        (xb, True, "bitwise_and", (0,)),
    ]
    for operand, init, op, dims in cases:
        init_o = (
            np.asarray(init, operand.dtype) if not isinstance(init, float) else np.float32(init)
        )

        def ours(a, init=init_o, op=op, dims=dims):
            return lax.reduce(a, init, getattr(lax, op), dims)

        check(
            run(ours, (operand,), runner),
            jlax.reduce(operand, init_o, getattr(jlax, op), dims),
            exact=op not in ("add", "mul") or operand.dtype != np.float32,
            rtol=1e-6,
        )
    # a Python int init for an int8 operand (the identity judged in its own dtype)
    x8 = rand(rng, (3, 4), np.int8)
    check(
        run(lambda a: lax.reduce(a, 0, lax.add, (1,)), (x8,), runner),
        jlax.reduce(x8, 0, jlax.add, (1,)),
    )
    # a pytree of one operand
    check(
        lax.reduce({"a": x}, {"a": np.float32(0)}, lax.add, (0,)),
        jlax.reduce({"a": x}, {"a": np.float32(0)}, jlax.add, (0,)),
        exact=False,
    )


def test_reduce_errors():
    x = np.ones((2, 3), np.float32)
    # any computation is the general reduce (tests/surface/test_lax_parity.py); its checks:
    with pytest.raises(TypeError, match="dtypes should match"):
        lax.reduce(x, np.int32(1), lambda a, b: a + b, (0,))
    with pytest.raises(TypeError, match="must return rank-0 values"):
        lax.reduce(x, np.float32(0), lambda a, b: (a + b).astype(np.int32), (0,))
    with pytest.raises(ValueError, match="reduce: dimensions: axis 5 is out of bounds"):
        lax.reduce(x, np.float32(0), lax.add, (5,))


@pytest.mark.parametrize("runner", RUNNERS)
def test_map(runner, rng):
    xs = rand(rng, (7, 3), np.float32)

    def f(v):
        return {"s": v.sum(), "d": v * 2}

    def jf(v):
        return {"s": v.sum(), "d": v * 2}

    for batch_size in (None, 1, 3, 7, 10):
        check(
            run(lambda a, bs=batch_size: lax.map(f, a, batch_size=bs), (xs,), runner),
            jlax.map(jf, xs, batch_size=batch_size),
            exact=False,
            rtol=1e-6,
        )


def test_map_grad():
    xs = np.linspace(0, 1, 5, dtype=np.float32)
    check(
        ri.grad(lambda a: lax.map(lambda v: v**3, a).sum())(xs),
        jax.grad(lambda a: jlax.map(lambda v: v**3, a).sum())(xs),
        exact=False,
    )


@pytest.mark.parametrize("runner", RUNNERS)
def test_associative_scan(runner, rng):
    # eagerly every combine is its own dispatch: fewer lengths there
    for n in (1, 5, 8) if runner == "eager" else (1, 2, 5, 8, 13):
        x = rand(rng, (n, 3), np.float32)
        xi = rand(rng, (3, n), np.int32)
        for reverse in (False, True):
            check(
                run(lambda a, r=reverse: lax.associative_scan(lax.add, a, reverse=r), (x,), runner),
                jlax.associative_scan(jlax.add, x, reverse=reverse),
            )
            check(
                run(
                    lambda a, r=reverse: lax.associative_scan(lax.max, a, r, axis=1), (xi,), runner
                ),
                jlax.associative_scan(jlax.max, xi, reverse, axis=1),
            )
    # a pytree and a non-commutative combine (2x2 matrix products)
    mats = rand(rng, (6, 2, 2), np.float32)
    check(
        run(lambda m: lax.associative_scan(lambda a, b: a @ b, m), (mats,), runner),
        jlax.associative_scan(lambda a, b: a @ b, mats),
        exact=False,
        rtol=1e-5,
        atol=1e-6,
    )
    pair = (rand(rng, (5,), np.float32), rand(rng, (5,), np.float32))

    def affine(a, b):
        return (a[0] * b[0], a[1] * b[0] + b[1])

    # XLA may fuse ``a * b + c`` under jit (one rounding): equal within an ulp or two
    check(
        run(lambda p: lax.associative_scan(affine, p), (pair,), runner),
        jlax.associative_scan(affine, pair),
        exact=False,
        rtol=1e-6,
    )


def test_associative_scan_grad_and_errors(rng):
    x = rand(rng, (6,), np.float32)
    check(
        ri.grad(lambda a: (lax.associative_scan(lax.mul, a) ** 2).sum())(x),
        jax.grad(lambda a: (jlax.associative_scan(jlax.mul, a) ** 2).sum())(x),
        exact=False,
        rtol=1e-5,
    )
    with pytest.raises(TypeError, match="associative_scan: fn argument should be callable"):
        lax.associative_scan(3, x)
    with pytest.raises(ValueError, match="associative_scan: array inputs must have the same size"):
        lax.associative_scan(lax.add, (x, x[:3]))


# --- new primitives -------------------------------------------------------------------------


@pytest.mark.parametrize("runner", RUNNERS)
def test_optimization_barrier(runner, rng):
    tree = (rand(rng, (3,), np.float32), {"i": rand(rng, (2,), np.int32)})
    check(run(lax.optimization_barrier, (tree,), runner), jlax.optimization_barrier(tree))
    x = np.float32(2.0)

    def f(v):
        a, b = lax.optimization_barrier((v * v, v))
        return a * b

    def g(v):
        a, b = jlax.optimization_barrier((v * v, v))
        return a * b

    check(run(ri.grad(f), (x,), runner), jax.grad(g)(x))
    check(ri.jvp(f, (x,), (np.float32(1),)), jax.jvp(g, (x,), (np.float32(1),)))
    xs = rand(rng, (4, 3), np.float32)
    check(
        ri.vmap(lambda v: lax.optimization_barrier(v * 2))(xs),
        jax.vmap(lambda v: jlax.optimization_barrier(v * 2))(xs),
    )


def test_optimization_barrier_in_stablehlo():
    text = (
        ri.jit(lambda v: lax.optimization_barrier(v + 1), backend="pjrt")
        .lower(np.float32(1))
        .as_text()
    )
    assert "optimization_barrier" in text


def _special_floats(dtype, rng, n=4000):
    """Random bit patterns (every exponent: denormals, inf, nan) plus the corners."""
    utype = np.dtype(f"u{np.dtype(dtype).itemsize}")
    bits = rng.integers(0, np.iinfo(utype).max, size=n, dtype=utype, endpoint=True)
    x = bits.view(dtype)
    corners = np.array(
        [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.5, 65504.0, 65520.0, 1e-8], np.float64
    )
    with np.errstate(over="ignore"):  # 65520 overflows float16 to inf: a corner too
        return np.concatenate([x, corners.astype(dtype)])


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16, np.float64])
def test_reduce_precision_bit_exact(dtype, runner, rng, request):
    if np.dtype(dtype) == np.float64:
        request.getfixturevalue("x64")
    x = _special_floats(dtype, rng)
    src_exp = int(ml_dtypes.finfo(dtype).nexp)
    src_mant = int(ml_dtypes.finfo(dtype).nmant)
    for exponent_bits, mantissa_bits in [
        (5, 10),
        (8, 7),
        (4, 3),
        (5, 2),
        (2, 0),
        (src_exp, src_mant),
        (src_exp + 1, src_mant + 2),
        (3, src_mant),
    ]:
        ours = run(
            lambda a, e=exponent_bits, m=mantissa_bits: lax.reduce_precision(a, e, m), (x,), runner
        )
        theirs = jlax.reduce_precision(x, exponent_bits, mantissa_bits)
        o, t = np.asarray(ours), np.asarray(theirs)
        assert o.dtype == t.dtype
        with np.errstate(invalid="ignore"):  # signalling NaN bit patterns
            nan = np.isnan(t)
            np.testing.assert_array_equal(np.isnan(o), nan)
        utype = np.dtype(f"u{o.dtype.itemsize}")
        np.testing.assert_array_equal(
            o[~nan].view(utype), t[~nan].view(utype), err_msg=f"{exponent_bits}, {mantissa_bits}"
        )


def test_reduce_precision_rules_and_errors():
    x = np.float32(1.2345678)
    check(
        ri.grad(lambda v: lax.reduce_precision(v, 5, 10) * v)(x),
        jax.grad(lambda v: jlax.reduce_precision(v, 5, 10) * v)(x),
    )
    check(
        ri.jvp(lambda v: lax.reduce_precision(v, 8, 7), (x,), (np.float32(1.1),)),
        jax.jvp(lambda v: jlax.reduce_precision(v, 8, 7), (x,), (np.float32(1.1),)),
    )
    xs = np.linspace(0, 1, 7, dtype=np.float32)
    check(
        ri.vmap(lambda v: lax.reduce_precision(v, 5, 10))(xs),
        jax.vmap(lambda v: jlax.reduce_precision(v, 5, 10))(xs),
    )
    check(lax.reduce_precision(1.1, 5, 10), jlax.reduce_precision(1.1, 5, 10))
    with pytest.raises(TypeError, match="reduce_precision does not accept dtype int32"):
        lax.reduce_precision(np.int32(1), 5, 10)
    with pytest.raises(ValueError, match="reduce_precision: exponent_bits must be at least 1"):
        lax.reduce_precision(x, 0, 10)
    with pytest.raises(TypeError, match="reduce_precision: mantissa_bits must be an int"):
        lax.reduce_precision(x, 5, 1.5)


@pytest.mark.parametrize("runner", RUNNERS)
def test_cumlogsumexp(runner, rng):
    """Bit-exact on pjrt (the same reduce_window as JAX's), and on ref for
    windows up to 16 long; longer windows XLA reassociates (a few ulps)."""
    for dtype in (np.float32, np.float16, ml_dtypes.bfloat16):
        x = rand(rng, (5, 6), dtype)
        x[1, 2] = -np.inf
        x[3, 4] = np.inf
        long = rand(rng, (40, 3), dtype)
        for axis in (0, 1):
            for reverse in (False, True):
                check(
                    run(lambda a, ax=axis, r=reverse: lax.cumlogsumexp(a, ax, r), (x,), runner),
                    jlax.cumlogsumexp(x, axis, reverse),
                )
            check(
                run(lambda a, r=reverse: lax.cumlogsumexp(a, 0, r), (long,), runner),
                jlax.cumlogsumexp(long, 0, reverse),
                exact=runner == "pjrt",
                rtol={np.float32: 1e-6, np.float16: 4e-3}.get(dtype, 3e-2),  # ~2 ulps
            )
    check(
        run(lambda: lax.cumlogsumexp(np.zeros((0, 2), np.float32)), (), runner),
        jlax.cumlogsumexp(np.zeros((0, 2), np.float32)),
    )


def test_cumlogsumexp_rules_and_errors(rng):
    x = rand(rng, (6,), np.float32)
    for reverse in (False, True):
        check(
            ri.grad(lambda a, r=reverse: (lax.cumlogsumexp(a, reverse=r) ** 2).sum())(x),
            jax.grad(lambda a, r=reverse: (jlax.cumlogsumexp(a, reverse=r) ** 2).sum())(x),
            exact=False,
            rtol=1e-5,
        )
    xs = rand(rng, (3, 6), np.float32)
    check(
        ri.vmap(lambda a: lax.cumlogsumexp(a))(xs),
        jax.vmap(lambda a: jlax.cumlogsumexp(a))(xs),
        exact=False,
    )
    check(
        ri.jit(ri.vmap(lambda a: lax.cumlogsumexp(a, reverse=True), in_axes=1), backend="pjrt")(xs),
        jax.vmap(lambda a: jlax.cumlogsumexp(a, reverse=True), in_axes=1)(xs),
        exact=False,
    )
    with pytest.raises(TypeError, match="cumlogsumexp does not accept dtype int32"):
        lax.cumlogsumexp(np.arange(3, dtype=np.int32))
    with pytest.raises(ValueError, match="cumlogsumexp"):
        lax.cumlogsumexp(x, axis=3)


def test_popcount_clz_rules_and_errors(rng):
    x = rand(rng, (4, 3), np.int32)
    check(ri.vmap(lax.clz)(x), jax.vmap(jlax.clz)(x))
    check(ri.vmap(lax.population_count, 1)(x), jax.vmap(jlax.population_count, 1)(x))
    check(
        ri.jvp(lax.clz, (x,), (np.zeros(x.shape, jax.dtypes.float0),))[1],
        jax.jvp(jlax.clz, (x,), (np.zeros(x.shape, jax.dtypes.float0),))[1],
    )
    for name in ("clz", "population_count"):
        with pytest.raises(TypeError, match=f"{name} does not accept dtype float32"):
            getattr(lax, name)(np.float32(1))


# --- errors of the wrappers -------------------------------------------------------------------


def test_wrapper_errors():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match="dot: dimension_numbers must be specified"):
        lax.dot(np.ones((2, 3, 4)), np.ones((4, 2)))
    with pytest.raises(ValueError, match="batch_matmul: lhs and rhs must have the same rank"):
        lax.batch_matmul(x, np.ones((1, 3, 2), np.float32))
    with pytest.raises(ValueError, match="split: Sum of sizes .* must be equal to dimension"):
        lax.split(x, (1, 1), axis=1)
    with pytest.raises(ValueError, match="split: axis 2 is out of bounds"):
        lax.split(x, (1, 1), axis=2)
    with pytest.raises(
        TypeError, match="tile: reps must have one entry per dimension"
    ):  # JAX's class
        lax.tile(x, (2,))
    with pytest.raises(TypeError, match="broadcast: sizes must be a sequence"):
        lax.broadcast(x, (-1,))
    with pytest.raises(ValueError, match="collapse: start_dimension: axis 3 is out of bounds"):
        lax.collapse(x, 3)
    with pytest.raises(TypeError, match="full: fill_value must be a scalar"):
        lax.full((2,), np.ones(2))
    with pytest.raises(TypeError, match="reciprocal does not accept dtype int32"):
        lax.reciprocal(np.int32(2))
    with pytest.raises(TypeError, match="real does not accept dtype float32"):
        lax.real(x)
    with pytest.raises(TypeError, match="complex: y must be float32 or float64, got float16"):
        lax.complex(np.float32(1), np.float16(1))
    with pytest.raises(TypeError, match="complex: x must be float32 or float64"):
        lax.complex(np.int32(1), np.int32(1))
    # batch_size=0 is JAX's whole-axis vmap (test_custom_api_parity); below 0 is refused
    with pytest.raises(ValueError, match="map: batch_size must be a non-negative int"):
        lax.map(lambda v: v, x, batch_size=-1)


@pytest.mark.parametrize("runner", RUNNERS)
def test_stack_unstack_and_shapes(runner, rng):
    a, b = rand(rng, (2, 3), np.float32), rand(rng, (2, 3), np.float32)
    for axis in (0, 1, 2, -1):
        check(
            run(lambda x, y, ax=axis: lax.stack([x, y], ax), (a, b), runner),
            jlax.stack([a, b], axis),
        )
        if axis < 2:
            check(run(lambda x, ax=axis: lax.unstack(x, ax), (a,), runner), jlax.unstack(a, axis))
    check(run(lambda: lax.stack([1.0, 2.0]), (), runner), jax.jit(lambda: jlax.stack([1.0, 2.0]))())
    check(run(lambda x: lax.broadcast_to_rank(x, 4), (a,), runner), jlax.broadcast_to_rank(a, 4))
    check(run(lambda: lax.empty((2, 3), np.int32), (), runner), jlax.empty((2, 3), np.int32))
    assert lax.broadcast_shapes((2, 1), (3,), ()) == jlax.broadcast_shapes((2, 1), (3,), ())
    x = np.array([0.5, 1.5, 2.5, -2.5], np.float32)
    for method in (lax.RoundingMethod.AWAY_FROM_ZERO, lax.RoundingMethod.TO_NEAREST_EVEN):
        check(run(lambda v, m=method: lax.round(v, m), (x,), runner), jlax.round(x, int(method)))
    check(
        run(lambda v: lax.dot(v, v.T, precision=lax.Precision.HIGHEST), (a,), runner),
        jlax.dot(a, a.T, precision=jlax.Precision.HIGHEST),
        exact=False,
        rtol=1e-5,
    )


def test_stack_errors():
    with pytest.raises(ValueError, match="stack: all input arrays must have the same shape"):
        lax.stack([np.ones(2), np.ones(3)])
    with pytest.raises(ValueError, match="Incompatible shapes for broadcasting"):
        lax.broadcast_shapes((2,), (3,))
    with pytest.raises(ValueError, match="broadcast_shapes: at least one shape"):
        lax.broadcast_shapes()  # JAX fails an internal assert here
    with pytest.raises(ValueError, match="unstack: axis 2 is out of bounds"):
        lax.unstack(np.ones((2, 3)), 2)
    with pytest.raises(ValueError, match="broadcast_to_rank: rank must be an int at least"):
        lax.broadcast_to_rank(np.ones((2, 3)), 1)


def test_mask_rules(rng):
    """Under ri.mask the new primitives keep the logical shape; the valid
    region equals the unpadded computation (NumPy/JAX oracles)."""
    x = rand(rng, (6,), np.float32)
    n = 4

    def fun(v):
        a, b = lax.optimization_barrier((v, lax.stop_gradient(v)))
        return lax.cumlogsumexp(lax.reduce_precision(a + b, 5, 10), reverse=True)

    masked = ri.mask(fun, ["(n,)"], "(n,)")
    out = np.asarray(masked([x], {"n": n}))[:n]
    want = jlax.cumlogsumexp(jlax.reduce_precision(x[:n] * 2, 5, 10), reverse=True)
    np.testing.assert_allclose(out, np.asarray(want), rtol=1e-6)
    xi = rand(rng, (6,), np.int32)
    masked = ri.mask(lambda v: lax.clz(v) + lax.population_count(v), ["(n,)"], "(n,)")
    out = np.asarray(masked([xi], {"n": n}))[:n]
    np.testing.assert_array_equal(out, np.asarray(jlax.clz(xi[:n]) + jlax.population_count(xi[:n])))


def test_stop_gradient_float0_and_bool():
    from refimpl import dtypes

    z = np.zeros(3, dtypes.float0)
    assert lax.stop_gradient(z) is z
    assert lax.stop_gradient(True) is True


def test_vmap_of_scans_and_conv_transpose(rng):
    xs = rand(rng, (3, 6), np.float32)
    check(
        ri.vmap(lambda v: lax.associative_scan(lax.add, v))(xs),
        jax.vmap(lambda v: jlax.associative_scan(jlax.add, v))(xs),
    )
    check(
        ri.vmap(lambda v: lax.map(lambda w: w * w, v, batch_size=4), in_axes=1)(xs),
        jax.vmap(lambda v: jlax.map(lambda w: w * w, v, batch_size=4), in_axes=1)(xs),
    )
    x, k = rand(rng, (3, 1, 4, 2), np.float32), rand(rng, (3, 2, 2), np.float32)
    check(
        ri.vmap(lambda a: lax.conv_transpose(a, k, (2,), "SAME"))(x),
        jax.vmap(lambda a: jlax.conv_transpose(a, k, (2,), "SAME"))(x),
        exact=False,
        rtol=1e-5,
        atol=1e-6,
    )
