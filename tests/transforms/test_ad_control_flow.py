"""Differentiation of scan, cond/switch, fori_loop, while_loop and nested jit, against jax."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import lax


def _close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def _scan_fn(L, np_, unroll=1, reverse=False):
    def f(c, xs):
        def body(carry, x):
            carry = carry * L.sin(x) + x * c
            return carry, carry * 2.0

        carry, ys = L.scan(body, np.float32(1.0), xs, unroll=unroll, reverse=reverse)
        return carry + np_.sum(ys)

    return f


XS = np.linspace(0.1, 1.0, 5).astype(np.float32)
C = np.float32(0.7)


@pytest.mark.parametrize("unroll", [1, 2, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_scan_jvp_and_grad(unroll, reverse):
    fr = _scan_fn(lax, rnp, unroll, reverse)
    fj = _scan_fn(jax.lax, jnp, unroll, reverse)
    tangents = (np.float32(1.0), np.ones(5, np.float32))
    out, tan = ri.jvp(fr, (C, XS), tangents)
    jout, jtan = jax.jvp(fj, (C, XS), tangents)
    _close(out, jout)
    _close(tan, jtan)
    for got, want in zip(ri.grad(fr, (0, 1))(C, XS), jax.grad(fj, (0, 1))(C, XS)):
        _close(got, want)


def test_scan_second_order_and_under_jit():
    fr, fj = _scan_fn(lax, rnp), _scan_fn(jax.lax, jnp)
    _close(ri.grad(ri.grad(fr))(C, XS), jax.grad(jax.grad(fj))(C, XS))
    _close(ri.jit(ri.grad(fr))(C, XS), jax.grad(fj)(C, XS))
    program = ri.make_program(ri.grad(fr))(C, XS)
    scans = [e for e in program.eqns if e.primitive.name == "scan"]
    assert len(scans) == 2  # the known forward scan and the transposed (reverse) scan
    assert scans[1].params["reverse"] is True


def test_scan_with_a_carry_made_nonzero_by_the_body():
    # the carry starts as a constant but picks up a tangent from xs
    def f(xs, L=lax):
        return L.scan(lambda c, x: (c + x * x, c), np.float32(0.0), xs)[0]

    _close(ri.grad(f)(XS), jax.grad(lambda xs: f(xs, jax.lax))(XS))


@pytest.mark.parametrize("x", [0.2, 0.9])
def test_cond_jvp_grad_and_jit(x):
    x = np.float32(x)

    def g(x, L=lax):
        return L.cond(x > 0.5, lambda y: L.sin(y) * y, lambda y: y * 3.0, x)

    gj = lambda x: g(x, jax.lax)  # noqa: E731
    _close(ri.grad(g)(x), jax.grad(gj)(x))
    _close(ri.jit(ri.grad(g))(x), jax.grad(gj)(x))
    _close(ri.jvp(g, (x,), (np.float32(2.0),))[1], jax.jvp(gj, (x,), (np.float32(2.0),))[1])
    _close(ri.grad(ri.grad(g))(x), jax.grad(jax.grad(gj))(x))


@pytest.mark.parametrize("index", [0, 1, 2])
def test_switch_grad(index):
    def h(i, x, L=lax):
        return L.switch(i, [lambda y: y * y, lambda y: L.exp(y), lambda y: -y], x)

    x = np.float32(0.3)
    _close(ri.grad(h, 1)(index, x), jax.grad(lambda i, x: h(i, x, jax.lax), 1)(index, x))


def test_fori_loop_static_bounds_grad():
    def f(x, L=lax):
        return L.fori_loop(0, 4, lambda i, c: c * L.sin(c) + i, x)

    x = np.float32(0.9)
    _close(ri.grad(f)(x), jax.grad(lambda x: f(x, jax.lax))(x))


def _while(x, L=lax):
    return L.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * L.sin(c[1])), (0, x))[1]


def test_while_loop_jvp():
    x, t = np.float32(0.9), np.float32(1.0)
    _close(ri.jvp(_while, (x,), (t,))[1], jax.jvp(lambda x: _while(x, jax.lax), (x,), (t,))[1])


def test_while_loop_linearize_works_as_jax():
    x, t = np.float32(0.9), np.float32(2.0)
    out, f_jvp = ri.linearize(_while, x)
    jout, jf_jvp = jax.linearize(lambda x: _while(x, jax.lax), x)
    _close(out, jout)
    _close(f_jvp(t), jf_jvp(t))
    _close(ri.jit(lambda x: ri.linearize(_while, x)[1](t))(x), jf_jvp(t))


def test_while_loop_reverse_mode_is_a_value_error_as_jax():
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
        ri.grad(_while)(np.float32(0.9))
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
        ri.jit(ri.grad(_while))(np.float32(0.9))
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
        jax.grad(lambda x: _while(x, jax.lax))(np.float32(0.9))


def test_nested_jit_inside_scan_grad():
    inner = ri.jit(lambda c, x: c * lax.sin(x))

    def f(xs, L=lax, jit_inner=inner):
        return L.scan(lambda c, x: (jit_inner(c, x), c), np.float32(1.0), xs)[0]

    fj = lambda xs: jax.lax.scan(lambda c, x: (c * jnp.sin(x), c), np.float32(1.0), xs)[0]  # noqa: E731
    _close(ri.grad(f)(XS), jax.grad(fj)(XS))


def test_grad_of_mask_and_mask_of_grad():
    masked = ri.mask(lambda x: rnp.sum(rnp.sin(x) * x), ["(n,)"], "()")
    x = np.linspace(0.1, 1, 8).astype(np.float32)
    want = jax.grad(lambda x: jnp.sum(jnp.sin(x[:5]) * x[:5]))(x)
    _close(ri.grad(lambda x: masked([x], dict(n=5)))(x), want)
    _close(ri.jit(ri.grad(lambda x: masked([x], dict(n=5))))(x), want)
    mg = ri.mask(ri.grad(lambda x: rnp.sum(rnp.sin(x) * x)), ["(n,)"], "(n,)")
    _close(mg([x], dict(n=5))[:5], want[:5])


def test_compositions_with_vmap_and_jit():
    xs = np.linspace(0.1, 1, 6).astype(np.float32).reshape(2, 3)

    def f(x, L, np_):
        return L.scan(lambda c, x: (c * L.sin(x) + x, c), np.float32(1.0), x)[0]

    def g(x, L, np_):
        return L.cond(np_.sum(x) > 1.0, lambda y: np_.sum(y * y), lambda y: np_.sum(L.sin(y)), x)

    fr, fj = (lambda x: f(x, lax, rnp)), (lambda x: f(x, jax.lax, jnp))
    gr, gj = (lambda x: g(x, lax, rnp)), (lambda x: g(x, jax.lax, jnp))
    _close(ri.vmap(ri.grad(fr))(xs), jax.vmap(jax.grad(fj))(xs))
    _close(
        ri.grad(lambda x: rnp.sum(ri.vmap(fr)(x)))(xs),
        jax.grad(lambda x: jnp.sum(jax.vmap(fj)(x)))(xs),
    )
    _close(
        ri.vmap(lambda x, t: ri.jvp(fr, (x,), (t,))[1])(xs, xs),
        jax.vmap(lambda x, t: jax.jvp(fj, (x,), (t,))[1])(xs, xs),
    )
    _close(ri.jvp(ri.vmap(fr), (xs,), (xs,))[1], jax.jvp(jax.vmap(fj), (xs,), (xs,))[1])
    _close(ri.vmap(ri.grad(gr))(xs), jax.vmap(jax.grad(gj))(xs))
    _close(ri.jit(ri.vmap(ri.grad(gr)))(xs), jax.vmap(jax.grad(gj))(xs))
