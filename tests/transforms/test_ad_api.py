"""The AD API surface: linearize, jacobians, hessian, linear_transpose, float0, errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp


def _close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


X = np.array([0.1, 0.5, 0.9], np.float32)
Y = np.array([1.0, 2.0], np.float32)


def _f(x, y, np_):
    return {"a": np_.sin(x) * y[0], "b": np_.sum(x * x) * y}


@pytest.mark.parametrize("name", ["jacfwd", "jacrev"])
def test_jacobians_match_jax_with_pytrees_and_argnums(name):
    api, japi = getattr(ri, name), getattr(jax, name)
    got = api(lambda x, y: _f(x, y, rnp), argnums=(0, 1))(X, Y)
    want = japi(lambda x, y: _f(x, y, jnp), argnums=(0, 1))(X, Y)
    for key in ("a", "b"):
        for g, w in zip(got[key], want[key]):
            assert np.shape(g) == np.shape(w)
            _close(g, w)
    got = api(lambda x, y: _f(x, y, rnp))(X, Y)
    want = japi(lambda x, y: _f(x, y, jnp))(X, Y)
    _close(got["a"], want["a"])
    _close(got["b"], want["b"])


def test_hessian_matches_jax():
    def h(x, np_):
        return np_.sum(np_.sin(x) * x * x)

    _close(ri.hessian(lambda x: h(x, rnp))(X), jax.hessian(lambda x: h(x, jnp))(X))


def test_linearize_matches_jax():
    def h(x, np_):
        return np_.sin(x) * x

    out, f_jvp = ri.linearize(lambda x: h(x, rnp), X)
    jout, jf_jvp = jax.linearize(lambda x: h(x, jnp), X)
    _close(out, jout)
    t = np.array([1.0, -2.0, 0.5], np.float32)
    _close(f_jvp(t), jf_jvp(t))


def test_linear_transpose_matches_jax():
    def lin(a):
        return 2.0 * a[:2] + a[1:]

    _close(ri.linear_transpose(lin, X)(Y)[0], jax.linear_transpose(lin, X)(Y)[0])


def test_float0_tangents_for_integer_inputs():
    f0 = ri.dtypes.float0
    assert f0 == jax.dtypes.float0
    _, t = ri.jvp(lambda i: i * 2, (np.int32(3),), (np.zeros((), f0),))
    _, jt = jax.jvp(lambda i: i * 2, (np.int32(3),), (np.zeros((), jax.dtypes.float0),))
    assert t.dtype == jt.dtype == f0 and t.shape == jt.shape
    g = ri.grad(lambda x, i: x * i, argnums=(0, 1), allow_int=True)(np.float32(2.0), np.int32(3))
    jg = jax.grad(lambda x, i: x * i, argnums=(0, 1), allow_int=True)(np.float32(2.0), np.int32(3))
    _close(g[0], jg[0])
    assert g[1].dtype == jg[1].dtype == f0
    _, pb = ri.vjp(lambda x, i: x * i, np.float32(2.0), np.int32(3))
    assert pb(np.float32(1.0))[1].dtype == f0


def test_jvp_argument_errors_as_jax():
    with pytest.raises(TypeError, match="must be tuples or lists"):
        ri.jvp(lambda x: x, np.float32(1), np.float32(1))
    with pytest.raises(TypeError, match="do not match; dtypes must be equal"):
        ri.jvp(lambda x: x, (np.float32(1),), (np.int32(1),))
    with pytest.raises(ValueError, match="different primal and tangent shapes"):
        ri.jvp(lambda x: x, (np.ones(2, np.float32),), (np.ones(3, np.float32),))
    with pytest.raises(TypeError, match="same tree structure"):
        ri.jvp(lambda x, y: x, (X, X), (X,))


def test_grad_errors_as_jax():
    for api in (ri, jax):
        with pytest.raises(TypeError, match="grad requires real- or complex-valued inputs"):
            api.grad(lambda x: x * 2)(np.int32(1))
        with pytest.raises(TypeError, match="Gradient only defined for scalar-output functions"):
            api.grad(lambda x: x * 2.0)(np.ones(3, np.float32))
        with pytest.raises(TypeError, match="requires real-valued outputs"):
            api.grad(lambda x: (x * 2).astype(np.int32))(np.float32(1))
        with pytest.raises(TypeError, match="argnums"):
            api.grad(lambda x: x, argnums=2)(np.float32(1))


def test_value_and_grad_with_aux_and_pytree_argument():
    def loss(params, x, np_):
        w, b = params["w"], params["b"]
        y = np_.tanh(x @ w + b)
        return np_.sum(y * y), y

    params = {"w": np.ones((3, 2), np.float32) * 0.1, "b": np.zeros(2, np.float32)}
    (v, aux), g = ri.value_and_grad(lambda p, x: loss(p, x, rnp), has_aux=True)(params, X)
    (jv, jaux), jg = jax.value_and_grad(lambda p, x: loss(p, x, jnp), has_aux=True)(params, X)
    _close(v, jv)
    _close(aux, jaux)
    _close(g["w"], jg["w"])
    _close(g["b"], jg["b"])


def test_pjrt_jit_of_grad_runs():
    pytest.importorskip("refimpl._pjrt")

    def f(x):
        return rnp.sum(rnp.sin(x) * x)

    got = ri.jit(ri.grad(f), backend="pjrt")(X)
    want = jax.grad(lambda x: jnp.sum(jnp.sin(x) * x))(X)
    _close(got, want)


def test_jvp_and_vjp_has_aux_as_jax():
    def f(x, np_):
        return np_.sin(x) * x, {"sq": x * x}

    t = np.ones(3, np.float32)
    out, tan, aux = ri.jvp(lambda x: f(x, rnp), (X,), (t,), has_aux=True)
    jout, jtan, jaux = jax.jvp(lambda x: f(x, jnp), (X,), (t,), has_aux=True)
    _close(out, jout)
    _close(tan, jtan)
    _close(aux["sq"], jaux["sq"])
    out, pb, aux = ri.vjp(lambda x: f(x, rnp), X, has_aux=True)
    jout, jpb, jaux = jax.vjp(lambda x: f(x, jnp), X, has_aux=True)
    _close(pb(t)[0], jpb(t)[0])
    _close(aux["sq"], jaux["sq"])


def test_holomorphic_grad_and_jacobians_as_jax():
    z = np.complex64(1 + 2j)
    _close(
        ri.grad(lambda z: z * z * 3.0, holomorphic=True)(z),
        jax.grad(lambda z: z * z * 3.0, holomorphic=True)(z),
    )
    zs = np.array([z, 2 * z])
    for name in ("jacfwd", "jacrev"):
        got = getattr(ri, name)(lambda z: z * z, holomorphic=True)(zs)
        want = getattr(jax, name)(lambda z: z * z, holomorphic=True)(zs)
        _close(got, want)
    with pytest.raises(TypeError, match="holomorphic=True requires inputs with complex dtype"):
        ri.grad(lambda x: x, holomorphic=True)(np.float32(1))


def test_nested_jit_is_traced_once_and_its_derivative_programs_are_reused():
    inner = ri.jit(lambda x: rnp.sin(x) * x)
    g = ri.grad(lambda x: rnp.sum(inner(x)))
    first = ri.make_program(g)(X)
    second = ri.make_program(g)(X)
    assert inner.trace_count == 1

    def calls(program):
        return [e.params["program"] for e in program.eqns if e.primitive.name == "jit"]

    assert len(calls(first)) == 2
    assert all(a is b for a, b in zip(calls(first), calls(second)))  # memoized, not rebuilt


def test_pjrt_jit_of_grad_of_scan_and_cond():
    pytest.importorskip("refimpl._pjrt")
    from refimpl import lax

    def f(x, L, np_):
        ys = L.scan(lambda c, x: (c * L.sin(x) + x, c), np.float32(1.0), x)[1]
        return L.cond(np_.sum(x) > 1.0, lambda y: np_.sum(y * y), lambda y: np_.sum(y), ys)

    got = ri.jit(ri.grad(lambda x: f(x, lax, rnp)), backend="pjrt")(X)
    want = jax.grad(lambda x: f(x, jax.lax, jnp))(X)
    _close(got, want)


def test_eager_grad_of_a_pjrt_array_stays_on_its_device():
    pytest.importorskip("refimpl._pjrt")
    device = ri.devices("pjrt")[0]
    x = ri.device_put(X, device)
    g = ri.grad(lambda x: rnp.sum(rnp.sin(x) * x))(x)
    assert g.device == device
    _close(g, jax.grad(lambda x: jnp.sum(jnp.sin(x) * x))(X))


@pytest.mark.parametrize("name", ["jacfwd", "jacrev"])
def test_jacobian_has_aux(name):
    def f(x, np_):
        return np_.sin(x) * x, {"aux": x + 1.0}

    jac, aux = getattr(ri, name)(lambda x: f(x, rnp), has_aux=True)(X)
    jjac, jaux = getattr(jax, name)(lambda x: f(x, jnp), has_aux=True)(X)
    _close(jac, jjac)
    _close(aux["aux"], jaux["aux"])


def test_jacobians_are_batched_and_fall_back_without_a_batching_rule(monkeypatch):
    from refimpl.primitives import elementwise

    def h(x, np_):
        return np_.sum(np_.sin(x) * x**3)

    x = np.linspace(0.1, 1, 12).astype(np.float32)
    want = jax.jit(jax.hessian(lambda x: h(x, jnp)))(x)
    small = ri.make_program(ri.hessian(lambda x: h(x, rnp)))(x[:3])
    large = ri.make_program(ri.hessian(lambda x: h(x, rnp)))(x)
    assert len(small.eqns) == len(large.eqns)  # vmapped: size-independent programs
    _close(ri.hessian(lambda x: h(x, rnp))(x), want, tol=1e-4)
    monkeypatch.setattr(elementwise.sin_p, "batch_rule", None)
    _close(ri.hessian(lambda x: h(x, rnp))(x[:4]), want[:4, :4], tol=1e-4)


_WEAK_JACOBIANS = {
    "jacfwd": lambda m, np_: m.jacfwd(lambda x: x * 2)(1.0),
    "jacrev": lambda m, np_: m.jacrev(lambda x: x * 2)(1.0),
    "hessian": lambda m, np_: m.hessian(lambda x: x**3)(1.0),
    "jacrev/strong_out": lambda m, np_: m.jacrev(lambda x: x * np.float32(2))(1.0),
    "jacfwd/strong_out": lambda m, np_: m.jacfwd(lambda x: x * np.float32(2))(1.0),
    "jacfwd/mixed": lambda m, np_: m.jacfwd(lambda x, y: (x * y, x * 2), (0, 1))(1.0, Y[0]),
    "jacrev/mixed": lambda m, np_: m.jacrev(lambda x, y: (x * y, x * 2), (0, 1))(1.0, Y[0]),
    "jacfwd/pytree": lambda m, np_: m.jacfwd(lambda d: np_.sin(d["a"]) * d["b"])(
        {"a": 1.0, "b": 2.0}
    ),
    "jit_jacfwd_aux": lambda m, np_: m.jit(m.jacfwd(lambda x: (x * 2, x), has_aux=True))(1.0),
    "jit_jacrev_aux": lambda m, np_: m.jit(m.jacrev(lambda x: (x * 2, x), has_aux=True))(1.0),
}


@pytest.mark.parametrize("case", sorted(_WEAK_JACOBIANS))
def test_jacobians_keep_weak_types_as_jax(backend, case):
    # JAX's basis takes each leaf's weak type, so a Jacobian of weak values is weak
    got = _WEAK_JACOBIANS[case](ri, rnp)
    want = _WEAK_JACOBIANS[case](jax, jnp)
    got_leaves, want_leaves = jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert [g.weak_type for g in got_leaves] == [jax.typeof(w).weak_type for w in want_leaves]
    for g, w in zip(got_leaves, want_leaves):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        _close(g, w)


def _functions_out_of_jit(m, np_):
    f = lambda x: np_.sin(x) * x  # noqa: E731
    x, ct = X, np.float32(1.5) * X
    y, pullback = m.jit(lambda x: m.vjp(f, x))(x)
    y2, f_jvp = m.jit(lambda x: m.linearize(f, x))(x)
    f_t = m.jit(lambda x: m.linear_transpose(lambda t: t * x + 2.0 * t, x))(x)
    into = m.jit(lambda pb, c: pb(c))(m.vjp(f, x)[1], ct)  # a pullback as a jit argument
    return y, pullback(ct), y2, f_jvp(ct), f_t(ct), into


def test_functions_returned_by_jitted_vjp_linearize_linear_transpose(backend):
    # JAX's pullbacks are pytrees (Partial / VJP) whose leaves are the residuals
    got = _functions_out_of_jit(ri, rnp)
    want = _functions_out_of_jit(jax, jnp)
    got_leaves, want_leaves = jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves):
        _close(g, w)
    # the leaves of a pullback are arrays: it is a pytree
    _, pullback = ri.vjp(lambda x: rnp.sin(x) * x, X)
    assert all(isinstance(leaf, ri.Array) for leaf in ri.tree_util.tree_leaves(pullback))


def _aux_kinds(aux):
    return {k: (type(v).__name__ if not hasattr(v, "shape") else "array") for k, v in aux.items()}


def _aux_fun(np_):
    def g(x):
        aux = {"i": 2, "f": 1.5, "np": np.ones(2, np.float32), "x": x * 2}
        return np_.sin(x).sum(), aux

    return g


@pytest.mark.parametrize("api", ["jvp", "vjp", "linearize", "grad", "value_and_grad", "jacfwd"])
def test_aux_leaves_that_are_not_traced_come_back_as_they_are(api):
    """JAX returns an aux leaf that depends on no input unchanged (a Python
    number stays a Python number, a NumPy array a NumPy array)."""

    def aux_of(lib, np_):
        g, x = _aux_fun(np_), np_.ones(3)
        if api == "jvp":
            return lib.jvp(g, (x,), (x,), has_aux=True)[2]
        if api in ("vjp", "linearize"):
            return getattr(lib, api)(g, x, has_aux=True)[2]
        if api == "value_and_grad":
            return lib.value_and_grad(g, has_aux=True)(x)[0][1]
        return getattr(lib, api)(g, has_aux=True)(x)[1]

    ours, theirs = aux_of(ri, rnp), aux_of(jax, jnp)
    assert _aux_kinds(ours) == _aux_kinds(theirs)
    assert ours["i"] == 2 and ours["f"] == 1.5
    assert type(ours["np"]) is np.ndarray
    np.testing.assert_allclose(np.asarray(ours["x"]), np.asarray(theirs["x"]))


def test_pullback_of_a_wrong_cotangent_structure_is_a_value_error_as_jax():
    with pytest.raises(ValueError, match="unexpected tree structure"):
        jax.vjp(lambda x: (x, x), jnp.ones(3))[1](jnp.ones(3))
    with pytest.raises(ValueError, match="unexpected tree structure"):
        ri.vjp(lambda x: (x, x), rnp.ones(3))[1](rnp.ones(3))


_MIXED_WEAK = {
    # a tangent or cotangent given strong for a weakly typed primal reaches
    # the sub-program's linear part (it raised "called with f32[] but its
    # program takes ~f32[]"); JAX's typematch lets it through
    "jvp_jit": lambda m, np_: m.jvp(m.jit(lambda x: np_.sin(x) * 2.0), (1.0,), (np.float32(1),)),
    "jvp_checkpoint": lambda m, np_: m.jvp(
        m.checkpoint(lambda x: np_.sin(x) * 2.0), (1.0,), (np.float32(1),)
    ),
    "linearize_jit": lambda m, np_: m.linearize(m.jit(lambda x: np_.sin(x) * 2.0), 1.0)[1](
        np.float32(1)
    ),
    "linearize_checkpoint": lambda m, np_: m.linearize(
        m.checkpoint(lambda x: np_.sin(x) * 2.0), 1.0
    )[1](np.float32(1)),
    "linearize_cond": lambda m, np_: m.linearize(
        lambda x: m.lax.cond(x > 0, lambda y: y * 2.0, lambda y: y, x), 1.0
    )[1](np.float32(1)),
    "vjp_jit": lambda m, np_: m.vjp(m.jit(lambda x: np_.sin(x) * 2.0), 1.0)[1](np.float32(1)),
    "vjp_jit_weak_ct": lambda m, np_: m.vjp(m.jit(lambda x: np_.sin(x) * 2.0), np.float32(1))[1](
        1.0
    ),
    "vjp_checkpoint": lambda m, np_: m.vjp(m.checkpoint(lambda x: np_.sin(x) * 2.0), 1.0)[1](
        np.float32(1)
    ),
    "vjp_jit_cond": lambda m, np_: m.vjp(
        m.jit(lambda x: m.lax.cond(x > 0, lambda y: y * 2.0, lambda y: y, x)), 1.0
    )[1](np.float32(1)),
}


@pytest.mark.parametrize("case", sorted(_MIXED_WEAK))
def test_strong_tangents_and_cotangents_of_weak_primals_through_sub_programs(backend, case):
    got = jax.tree_util.tree_leaves(_MIXED_WEAK[case](ri, rnp))
    want = jax.tree_util.tree_leaves(_MIXED_WEAK[case](jax, jnp))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        _close(g, w)
