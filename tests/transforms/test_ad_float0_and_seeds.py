"""Differentiation details: float0 through jit, logaddexp's custom
JVP, weak types of gradients through sort, grad's literal seed. Each
compared with JAX."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import lax as rlax

# --- logaddexp / logaddexp2: JAX's custom_jvp -----------------------------------------

_LAE_POINTS = [
    (1.0, 1.0),
    (0.5, 2.0),
    (-3.0, -3.0),
    (np.inf, np.inf),
    (np.inf, 1.0),
    (-np.inf, 2.0),
    (np.nan, 1.0),
]


@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2"])
@pytest.mark.parametrize("a,b", _LAE_POINTS)
def test_logaddexp_grad_matches_jax(name, a, b):
    args = (np.float32(a), np.float32(b))
    want = jax.grad(getattr(jnp, name), argnums=(0, 1))(*args)
    with np.errstate(invalid="ignore"):  # inf - inf in the primal's formula, as JAX's
        got = ri.grad(getattr(rnp, name), argnums=(0, 1))(*args)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


def test_logaddexp_equal_arguments_half_each():
    # the formula's max and |x - y| have kinks at x == y; the custom rule does not
    got = ri.grad(rnp.logaddexp, argnums=(0, 1))(1.0, 1.0)
    assert [float(g) for g in got] == [0.5, 0.5]
    jitted = ri.jit(ri.grad(rnp.logaddexp, argnums=(0, 1)))(np.float32(2.0), np.float32(2.0))
    assert [float(g) for g in jitted] == [0.5, 0.5]


def test_logaddexp_jvp_arrays_matches_jax():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 3)).astype(np.float32)
    y = x.copy()
    y[0] += 1.0
    tx, ty = rng.normal(size=(2, 4, 3)).astype(np.float32)
    out, t = ri.jvp(rnp.logaddexp, (x, y), (tx, ty))
    jout, jt = jax.jvp(jnp.logaddexp, (x, y), (tx, ty))
    np.testing.assert_allclose(np.asarray(out), np.asarray(jout), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(t), np.asarray(jt), rtol=1e-6)


def test_softplus_at_zero_through_logaddexp():
    assert float(ri.grad(ri.nn.softplus)(0.0)) == float(jax.grad(jax.nn.softplus)(0.0)) == 0.5


# --- weak types of gradients ------------------------------------------------------------


def _weak_grad_cases():
    def sort_1d(ns, L, x):
        return L.sort(ns.broadcast_to(x, (3,))).sum()

    def np_sort_2d(ns, L, x):
        return ns.sort(ns.broadcast_to(x, (2, 3)), axis=0).sum()

    def cumprod_rev(ns, L, x):
        return L.cumprod(ns.broadcast_to(x, (2, 3)), axis=1, reverse=True).sum()

    def cumprod_np(ns, L, x):
        return ns.cumprod(ns.broadcast_to(x, (3,))).sum()

    def take_along(ns, L, x):
        return ns.take_along_axis(ns.broadcast_to(x, (3,)), np.array([0, 2]), axis=0).sum()

    def cumsum(ns, L, x):  # stays weak in JAX too
        return L.cumsum(ns.broadcast_to(x, (3,))).sum()

    return [sort_1d, np_sort_2d, cumprod_rev, cumprod_np, take_along, cumsum]


@pytest.mark.parametrize("fn", _weak_grad_cases(), ids=lambda f: f.__name__)
@pytest.mark.parametrize("backend", ["ref", "pjrt"])
def test_weak_type_of_gradient_matches_jax(fn, backend):
    want = jax.grad(lambda x: fn(jnp, jax.lax, x))(2.0)
    rfn = ri.grad(lambda x: fn(rnp, rlax, x))
    got = rfn(2.0) if backend == "ref" else ri.jit(rfn, backend="pjrt")(2.0)
    assert got.weak_type == want.weak_type
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


@pytest.mark.parametrize("name", ["sort", "cumprod", "cummax", "cummin", "cumsum"])
@pytest.mark.parametrize("shape", [(1,), (5,), (2, 3)])
@pytest.mark.parametrize("reverse", [False, True])
def test_weak_type_of_scan_and_sort_tangents_matches_jax(name, shape, reverse):
    if name == "sort" and reverse:
        pytest.skip("sort has no reverse")
    kw = {} if name == "sort" else {"axis": 0, "reverse": reverse}

    def fn(ns, L):
        return lambda x: getattr(L, name)(ns.broadcast_to(x, shape), **kw)

    cts = np.linspace(1, 2, int(np.prod(shape)), dtype=np.float32).reshape(shape)
    _, t = ri.jvp(fn(rnp, rlax), (2.0,), (1.0,))
    _, jt = jax.jvp(fn(jnp, jax.lax), (2.0,), (1.0,))
    (ct,) = ri.vjp(fn(rnp, rlax), 2.0)[1](cts)
    (jct,) = jax.vjp(fn(jnp, jax.lax), 2.0)[1](cts)
    assert (t.weak_type, ct.weak_type) == (jt.weak_type, jct.weak_type)
    np.testing.assert_allclose(np.asarray(t), np.asarray(jt), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(ct), np.asarray(jct), rtol=1e-6)


# --- grad's seed is a literal -----------------------------------------------------------


def _num_eqns_jax(closed) -> int:
    return len(closed.jaxpr.eqns)


_SEED_FUNS = [
    ("sin_mul", lambda ns: lambda x: ns.sin(x) * x),
    ("square", lambda ns: lambda x: x * x),
    ("exp_tanh", lambda ns: lambda x: ns.tanh(ns.exp(x))),
    ("poly", lambda ns: lambda x: 3.0 * x * x + 2.0 * x),
]


@pytest.mark.parametrize("name,make", _SEED_FUNS, ids=[n for n, _ in _SEED_FUNS])
def test_grad_seed_is_a_literal(name, make):
    prog = ri.make_program(ri.grad(make(rnp)))(1.0)
    text = str(prog)
    assert "broadcast_in_dim" not in text, text
    ours = len(prog.eqns) if hasattr(prog, "eqns") else len(prog.jaxpr.eqns)
    theirs = _num_eqns_jax(jax.make_jaxpr(jax.grad(make(jnp)))(1.0))
    assert ours <= theirs, (ours, theirs, text)
    assert float(ri.grad(make(rnp))(0.3)) == pytest.approx(float(jax.grad(make(jnp))(0.3)), 1e-6)


@pytest.mark.parametrize("x", [1.0, np.float32(2.0), np.float64(2.0), np.array(3.0, np.float32)])
def test_grad_of_identity_numpy_input(x):
    # a NumPy output's ``device`` is the string "cpu", not a Device
    got, want = ri.grad(lambda v: v)(x), jax.grad(lambda v: v)(x)
    assert float(got) == float(want) == 1.0
    assert got.dtype == want.dtype and got.weak_type == want.weak_type


# --- float0 through jit -----------------------------------------------------------------

FLOAT0 = jax.dtypes.float0
BACKENDS = ["ref", "pjrt"]


def _skip_pjrt(backend):
    if backend == "pjrt":
        from tests.helpers.pjrt_helpers import skip_without_pjrt

        skip_without_pjrt()


def _assert_tree_matches_jax(got, want):
    got_leaves, got_tree = jax.tree_util.tree_flatten(got)
    want_leaves, want_tree = jax.tree_util.tree_flatten(want)
    assert str(got_tree) == str(want_tree)
    for g, w in zip(got_leaves, want_leaves, strict=True):
        assert np.dtype(g.dtype) == np.dtype(w.dtype)
        assert np.shape(g) == np.shape(w)
        if np.dtype(w.dtype) == FLOAT0:
            assert isinstance(g, np.ndarray)  # materialized outside the program, as JAX
        else:
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)


def _mixed(ns):
    return lambda x, i: ns.sin(x) * i


@pytest.mark.parametrize("backend", BACKENDS)
def test_jit_grad_returns_float0(backend):
    _skip_pjrt(backend)
    x, i = np.float32(0.5), np.int32(3)
    g = ri.jit(ri.grad(_mixed(rnp), argnums=1, allow_int=True), backend=backend)
    want = jax.jit(jax.grad(_mixed(jnp), argnums=1, allow_int=True))(x, i)
    for _ in range(2):  # the second call hits the cache
        _assert_tree_matches_jax(g(x, i), want)
    both = ri.jit(ri.grad(_mixed(rnp), argnums=(0, 1), allow_int=True), backend=backend)
    jboth = jax.jit(jax.grad(_mixed(jnp), argnums=(0, 1), allow_int=True))
    for k in range(3):
        _assert_tree_matches_jax(both(x, np.int32(k)), jboth(x, np.int32(k)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_jit_jvp_with_float0_tangent_argument(backend):
    _skip_pjrt(backend)
    x, i = np.linspace(0, 1, 4, dtype=np.float32), np.arange(4, dtype=np.int32)
    tx, ti = np.ones(4, np.float32), np.zeros(4, FLOAT0)

    def run(api, ns):
        return lambda x, i, tx, ti: api.jvp(_mixed(ns), (x, i), (tx, ti))

    got = ri.jit(run(ri, rnp), backend=backend)
    want = jax.jit(run(jax, jnp))(x, i, tx, ti)
    _assert_tree_matches_jax(got(x, i, tx, ti), want)
    _assert_tree_matches_jax(got(x, i, tx, ti), want)
    # closed over rather than passed
    closed = ri.jit(lambda x, i: ri.jvp(_mixed(rnp), (x, i), (tx, ti)), backend=backend)
    _assert_tree_matches_jax(closed(x, i), want)


@pytest.mark.parametrize("backend", BACKENDS)
def test_jit_float0_in_and_out(backend):
    _skip_pjrt(backend)
    x = np.arange(3.0, dtype=np.float32)
    t = np.ones(3, np.float32)

    def run(api, ns):
        return lambda x, t: api.jvp(lambda v: ns.argmax(v), (x,), (t,))

    _assert_tree_matches_jax(
        ri.jit(run(ri, rnp), backend=backend)(x, t), jax.jit(run(jax, jnp))(x, t)
    )
    ident = ri.jit(lambda a, b: (b, a), backend=backend)
    _assert_tree_matches_jax(
        ident(np.zeros((2, 3), FLOAT0), x),
        jax.jit(lambda a, b: (b, a))(np.zeros((2, 3), FLOAT0), x),
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_nested_jit_float0(backend):
    _skip_pjrt(backend)
    x, i = np.float32(0.25), np.int32(2)
    inner_r = ri.jit(ri.grad(_mixed(rnp), argnums=(0, 1), allow_int=True))
    inner_j = jax.jit(jax.grad(_mixed(jnp), argnums=(0, 1), allow_int=True))
    got = ri.jit(lambda x, i: inner_r(x, i), backend=backend)(x, i)
    _assert_tree_matches_jax(got, jax.jit(lambda x, i: inner_j(x, i))(x, i))


def test_float0_kept_out_of_the_program():
    # JAX lowers no parameter and no result for float0 leaves
    x, i = np.float32(0.5), np.int32(3)
    ti = np.zeros((), FLOAT0)
    prog = ri.make_program(lambda x, i, tx, ti: ri.jvp(_mixed(rnp), (x, i), (tx, ti)))(x, i, x, ti)
    assert [np.dtype(a.dtype) for a in prog.in_avals] == [np.float32, np.int32, np.float32]
    lowered = jax.jit(lambda x, i, tx, ti: jax.jvp(_mixed(jnp), (x, i), (tx, ti))).lower(
        x, i, x, ti
    )
    main = next(line for line in lowered.as_text().splitlines() if "@main(" in line)
    assert main.count("%arg") == len(prog.in_avals)
    g = ri.make_program(ri.grad(_mixed(rnp), argnums=(0, 1), allow_int=True))(x, i)
    assert len(g.out_avals) == 1 and np.dtype(g.out_avals[0].dtype) == np.float32
    shapes = ri.eval_shape(ri.grad(_mixed(rnp), argnums=(0, 1), allow_int=True), x, i)
    jshapes = jax.eval_shape(jax.grad(_mixed(jnp), argnums=(0, 1), allow_int=True), x, i)
    assert [(s.shape, np.dtype(s.dtype)) for s in shapes] == [
        (s.shape, np.dtype(s.dtype)) for s in jshapes
    ]


def test_lowered_compiled_with_float0():
    x, i, ti = np.float32(0.5), np.int32(3), np.zeros((), FLOAT0)

    def run(api, ns):
        return lambda x, i, tx, ti: api.jvp(_mixed(ns), (x, i), (tx, ti))

    got = ri.jit(run(ri, rnp)).lower(x, i, x, ti).compile()(x, i, x, ti)
    _assert_tree_matches_jax(got, jax.jit(run(jax, jnp)).lower(x, i, x, ti).compile()(x, i, x, ti))
    grad_r = ri.jit(ri.grad(_mixed(rnp), argnums=(0, 1), allow_int=True)).lower(x, i).compile()
    grad_j = jax.jit(jax.grad(_mixed(jnp), argnums=(0, 1), allow_int=True)).lower(x, i).compile()
    _assert_tree_matches_jax(grad_r(x, i), grad_j(x, i))


def test_float0_with_ref_arguments_is_a_clear_error():
    # a documented limit (JAX supports it): named, not "unsupported dtype"
    r = ri.new_ref(np.float32(1.0))
    with pytest.raises(NotImplementedError, match=r"jit\(<lambda>\): float0 arguments"):
        ri.jit(lambda t, r: t)(np.zeros(2, FLOAT0), r)

    def step(x, i, r):
        r[...] = r[...] + x
        return ri.grad(_mixed(rnp), argnums=(0, 1), allow_int=True)(x, i)

    with pytest.raises(NotImplementedError, match=r"jit\(step\): float0 outputs"):
        ri.jit(step)(np.float32(0.5), np.int32(3), r)
