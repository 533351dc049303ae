"""custom_jvp and custom_vjp against jax.custom_jvp / jax.custom_vjp."""

import jax
import numpy as np
import pytest

import refimpl as ri
from refimpl import lax


def _close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


X, Y = np.float32(0.3), np.float32(2.0)


def _make_jvp(custom_jvp, L):
    @custom_jvp
    def f(x, y):
        return L.sin(x) * y

    @f.defjvp
    def f_jvp(primals, tangents):
        x, y = primals
        tx, ty = tangents
        # deliberately not the true derivative (factor 2), so the rule is observable
        return f(x, y), 2.0 * L.cos(x) * y * tx + L.sin(x) * ty

    return f


def _make_vjp(custom_vjp, L):
    @custom_vjp
    def g(x, y):
        return L.sin(x) * y

    def fwd(x, y):
        return g(x, y), (L.cos(x), L.sin(x), y)

    def bwd(res, ct):
        c, s, y = res
        return (3.0 * c * y * ct, s * ct)

    g.defvjp(fwd, bwd)
    return g


FR, FJ = _make_jvp(ri.custom_jvp, lax), _make_jvp(jax.custom_jvp, jax.lax)
GR, GJ = _make_vjp(ri.custom_vjp, lax), _make_vjp(jax.custom_vjp, jax.lax)


def test_custom_jvp_rule_is_used_in_jvp_grad_and_under_jit():
    t = (np.float32(1.0), np.float32(0.5))
    _close(ri.jvp(FR, (X, Y), t)[1], jax.jvp(FJ, (X, Y), t)[1])
    _close(ri.grad(FR)(X, Y), jax.grad(FJ)(X, Y))
    _close(ri.jit(ri.grad(FR))(X, Y), jax.grad(FJ)(X, Y))
    _close(ri.grad(ri.jit(FR))(X, Y), jax.grad(jax.jit(FJ))(X, Y))
    _close(FR(X, Y), FJ(X, Y))


def test_custom_jvp_defjvps():
    def make(custom_jvp, L):
        @custom_jvp
        def f(x, y):
            return x * y

        f.defjvps(lambda tx, ans, x, y: 5.0 * tx * y, lambda ty, ans, x, y: x * ty)
        return f

    fr, fj = make(ri.custom_jvp, lax), make(jax.custom_jvp, jax.lax)
    for got, want in zip(ri.grad(fr, (0, 1))(X, Y), jax.grad(fj, (0, 1))(X, Y)):
        _close(got, want)


def test_custom_jvp_nondiff_argnums():
    def make(custom_jvp, L):
        @lambda f: custom_jvp(f, nondiff_argnums=(0,))
        def f(n, x):
            return x**n

        @f.defjvp
        def f_jvp(n, primals, tangents):
            (x,), (t,) = primals, tangents
            return f(n, x), 10.0 * n * x ** (n - 1) * t

        return f

    fr, fj = make(ri.custom_jvp, lax), make(jax.custom_jvp, jax.lax)
    _close(ri.grad(fr, 1)(3, X), jax.grad(fj, 1)(3, X))


def test_custom_vjp_rule_is_used_in_grad_and_under_jit():
    for got, want in zip(ri.grad(GR, (0, 1))(X, Y), jax.grad(GJ, (0, 1))(X, Y)):
        _close(got, want)
    _close(ri.jit(ri.grad(GR))(X, Y), jax.grad(GJ)(X, Y))
    _close(ri.grad(ri.jit(GR))(X, Y), jax.grad(jax.jit(GJ))(X, Y))
    _close(ri.grad(ri.grad(GR))(X, Y), jax.grad(jax.grad(GJ))(X, Y))


def test_custom_vjp_inside_scan():
    xs = np.linspace(0.1, 1, 4).astype(np.float32)

    def s(xs, L, g):
        return L.scan(lambda c, x: (g(c, x), c), np.float32(1.0), xs)[0]

    _close(ri.grad(lambda xs: s(xs, lax, GR))(xs), jax.grad(lambda xs: s(xs, jax.lax, GJ))(xs))


def test_custom_vjp_forward_mode_is_a_type_error_as_jax():
    with pytest.raises(TypeError, match="can't apply forward-mode autodiff"):
        ri.jvp(GR, (X, Y), (X, Y))
    with pytest.raises(TypeError, match="can't apply forward-mode autodiff"):
        jax.jvp(GJ, (X, Y), (X, Y))


def test_custom_vjp_keyword_arguments_resolved_to_positions():
    _close(ri.grad(lambda x: GR(x, y=Y))(X), jax.grad(lambda x: GJ(x, y=Y))(X))
    _close(ri.grad(lambda y: GR(x=X, y=y))(Y), jax.grad(lambda y: GJ(x=X, y=y))(Y))


def test_keyword_only_argument_is_a_type_error_as_jax():
    def make(custom_vjp):
        @custom_vjp
        def h(x, *, scale):
            return x * scale

        h.defvjp(lambda x, *, scale: (x * scale, None), lambda res, ct: (ct,))
        return h

    for api, module in ((ri, ri), (jax, jax)):
        h = make(module.custom_vjp)
        with pytest.raises(TypeError, match="could not be resolved to positional-only arguments"):
            api.grad(lambda x, h=h: h(x, scale=2.0))(X)


def test_custom_vjp_bwd_with_none_cotangent_and_symbolic_zero_inputs():
    def make(custom_vjp, L):
        @custom_vjp
        def g(x, y):
            return x * y

        g.defvjp(lambda x, y: (x * y, y), lambda y, ct: (y * ct, None))
        return g

    gr, gj = make(ri.custom_vjp, lax), make(jax.custom_vjp, jax.lax)
    for got, want in zip(ri.grad(gr, (0, 1))(X, Y), jax.grad(gj, (0, 1))(X, Y)):
        _close(got, want)


def test_optimize_remat_with_symbolic_zeros_is_not_implemented():
    # optimize_remat itself is tested in tests/transforms/test_checkpoint.py.
    g = ri.custom_vjp(lambda x: x)
    with pytest.raises(NotImplementedError, match="symbolic zeros"):
        g.defvjp(lambda x: (x, None), lambda r, ct: (ct,), symbolic_zeros=True, optimize_remat=True)


def test_missing_rule_is_an_attribute_error():
    with pytest.raises(AttributeError, match="No JVP defined"):
        ri.custom_jvp(lambda x: x)(X)


def test_vmap_of_custom_rules_and_their_derivatives():
    import jax.numpy as jnp

    import refimpl.numpy as rnp

    xs = np.linspace(0.1, 1, 4).astype(np.float32)
    _close(ri.vmap(FR, (0, None))(xs, Y), jax.vmap(FJ, (0, None))(xs, Y))
    _close(ri.vmap(ri.grad(FR), (0, None))(xs, Y), jax.vmap(jax.grad(FJ), (0, None))(xs, Y))
    _close(
        ri.grad(lambda xs: rnp.sum(ri.vmap(FR, (0, None))(xs, Y)))(xs),
        jax.grad(lambda xs: jnp.sum(jax.vmap(FJ, (0, None))(xs, Y)))(xs),
    )
    _close(ri.vmap(GR, (0, None))(xs, Y), jax.vmap(GJ, (0, None))(xs, Y))
    got = ri.grad(lambda xs, y: rnp.sum(ri.vmap(GR, (0, None))(xs, y)), (0, 1))(xs, Y)
    want = jax.grad(lambda xs, y: jnp.sum(jax.vmap(GJ, (0, None))(xs, y)), (0, 1))(xs, Y)
    _close(got[0], want[0])
    _close(got[1], want[1])  # the unbatched argument's cotangent is summed over the batch


def _symbolic(module, L):
    seen = {}

    @module.custom_vjp
    def h(x, y):
        return L.sin(x) * y

    def fwd(x, y):
        seen["perturbed"] = (x.perturbed, y.perturbed)
        return h(x.value, y.value), (x.value, y.value)

    def bwd(res, ct):
        x, y = res
        return (L.cos(x) * y * ct, L.sin(x) * ct)

    h.defvjp(fwd, bwd, symbolic_zeros=True)

    @module.custom_jvp
    def k(x, y):
        return x * y

    def k_jvp(primals, tangents):
        (x, y), (tx, ty) = primals, tangents
        zero = type(ty).__name__ == "SymbolicZero"
        seen["ty"] = (zero, tuple(ty.shape) if zero else None)
        return k(x, y), tx * y if zero else tx * y + x * ty

    k.defjvp(k_jvp, symbolic_zeros=True)
    return h, k, seen


def test_symbolic_zeros_as_jax():
    for api, module, L in ((ri, ri, lax), (jax, jax, jax.lax)):
        h, k, seen = _symbolic(module, L)
        g = api.grad(h)(X, Y)  # y is not differentiated: not perturbed
        _close(g, np.cos(X) * Y)
        assert seen["perturbed"] == (True, False)
        _close(api.grad(k)(X, Y), Y)
        assert seen["ty"] == (True, ())
    assert ri.custom_derivatives.custom_vjp_primal_tree_values(
        [ri.custom_derivatives.CustomVJPPrimal(1.0, True)]
    ) == [1.0]


def test_custom_vjp_nondiff_argnums_as_jax():
    def make(module, L):
        @lambda f: module.custom_vjp(f, nondiff_argnums=(0,))
        def scaled(scale, x):
            return L.sin(x) * scale

        def fwd(scale, x):
            return scaled(scale, x), L.cos(x)

        def bwd(scale, cos_x, ct):
            return (7.0 * scale * cos_x * ct,)

        scaled.defvjp(fwd, bwd)
        return scaled

    got = ri.grad(lambda x: make(ri, lax)(2.0, x))(X)
    want = jax.grad(lambda x: make(jax, jax.lax)(2.0, x))(X)
    _close(got, want)


def _closed_over_programs(api):
    """Custom rules whose function closes over the value being differentiated
    (JAX's CustomJVPTest/CustomVJPTest closed-over-tracer cases)."""

    def jvp_closure(x):
        @api.custom_jvp
        def f(y):
            return x * y

        f.defjvp(lambda p, t: (x * p[0], x * t[0]))
        return f

    def vjp_closure(x):
        @api.custom_vjp
        def f(y):
            return x * y

        f.defvjp(lambda y: (f(y), y), lambda y, g: (x * g,))
        return f

    return [
        lambda: api.grad(lambda x: jvp_closure(x)(x))(2.0),
        lambda: api.jvp(lambda x: jvp_closure(x)(x), (2.0,), (1.0,)),
        lambda: api.jit(api.grad(lambda x: jvp_closure(x)(x)))(2.0),
        lambda: api.grad(lambda x: vjp_closure(x)(x))(2.0),
    ]


@pytest.mark.parametrize("index", range(4))
def test_differentiating_a_closed_over_value_is_an_unexpected_tracer_error(backend, index):
    with pytest.raises(jax.errors.UnexpectedTracerError):
        _closed_over_programs(jax)[index]()
    with pytest.raises(ri.UnexpectedTracerError, match="with respect to a closed-over value"):
        _closed_over_programs(ri)[index]()
    assert issubclass(ri.UnexpectedTracerError, TypeError)  # as JAX's


def test_closing_over_a_vmap_tracer_is_fine(backend):
    def programs(api):
        def outer(x):
            @api.custom_jvp
            def f(y):
                return x * y

            f.defjvp(lambda p, t: (x * p[0], x * t[0]))
            return f

        xs = np.arange(3, dtype=np.float32)
        return api.vmap(lambda x: outer(x)(3.0))(xs), api.vmap(api.grad(outer(2.0)))(xs)

    for got, want in zip(programs(ri), programs(jax), strict=True):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
        assert got.dtype == want.dtype
