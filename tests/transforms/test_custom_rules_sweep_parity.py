"""custom_api_test.py's second sweep (issue 29, class 3), compared with JAX
0.10.2 on both backends: a custom_jvp/custom_vjp function that reads a
differentiated value while the differentiation reaches none of its
arguments is JAX's UnexpectedTracerError (JAX runs the function below that
differentiation, where the value has escaped); a vmap's value may be read."""

from __future__ import annotations

import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from tests.helpers.parity import assert_same_as_jax

JAX = types.SimpleNamespace(lib=jax, np=jnp, UTE=jax.errors.UnexpectedTracerError)
RI = types.SimpleNamespace(lib=ri, np=rnp, UTE=ri.UnexpectedTracerError)


def _closing_over(n, x, kind, use=True):
    """A custom_jvp / custom_vjp function of ``y`` that reads ``x`` (or not)."""

    def fun(y):
        return x + y if use else 2.0 * y

    if kind == "jvp":
        g = n.lib.custom_jvp(fun)
        g.defjvp(lambda p, t: (g(p[0]), 2.0 * t[0]))
    else:
        g = n.lib.custom_vjp(fun)
        g.defvjp(lambda y: (g(y), None), lambda _, c: (2.0 * c,))
    return g


def _programs(n, kind, use=True):
    lib, one = n.lib, np.float32(1.0)
    g = lambda x: _closing_over(n, x, kind, use)  # noqa: E731
    ones = n.np.ones(2)
    return {
        "jvp": lambda: lib.jvp(lambda x: g(x)(one), (3.0,), (1.0,)),
        "grad": lambda: lib.grad(lambda x: g(x)(one))(3.0),
        "linearize": lambda: lib.linearize(lambda x: g(x)(one), 3.0)[0],
        "jit_of_jvp": lambda: lib.jit(lambda x: lib.jvp(lambda x: g(x)(one), (x,), (1.0,)))(3.0),
        "jit_of_grad": lambda: lib.jit(lib.grad(lambda x: g(x)(one)))(3.0),
        "vmap_inside": lambda: lib.jvp(
            lambda x: lib.vmap(lambda z: g(x)(one) + z)(ones), (3.0,), (1.0,)
        ),
        "vmap_outside": lambda: lib.vmap(lambda x: lib.jvp(lambda x: g(x)(one), (x,), (1.0,)))(
            ones
        ),
        "outer_jvp": lambda: lib.jvp(
            lambda x: lib.jvp(lambda y: g(x)(one) * y, (2.0,), (1.0,)), (3.0,), (1.0,)
        ),
        "argnums": lambda: lib.grad(lambda x, w: g(x)(w), argnums=0)(3.0, 1.0),
    }


PROGRAMS = sorted(_programs(JAX, "jvp"))


@pytest.mark.parametrize("kind", ["jvp", "vjp"])
@pytest.mark.parametrize("name", PROGRAMS)
def test_reading_a_differentiated_value_no_argument_carries_is_an_escaped_tracer(
    backend, kind, name
):
    with pytest.raises(jax.errors.UnexpectedTracerError):
        _programs(JAX, kind)[name]()
    with pytest.raises(ri.UnexpectedTracerError, match="closed-over value"):
        _programs(RI, kind)[name]()


def test_custom_jvp_closing_over_the_value_it_is_called_on_is_an_escaped_tracer(backend):
    # custom_api_test's test_closed_over_tracers_error_message, with the
    # argument perturbed too: the rule's call of the function reads it
    for n in (JAX, RI):

        def f(x, n=n):
            return _closing_over(n, x, "jvp")(x)

        with pytest.raises(n.UTE):
            n.lib.jvp(f, (3.0,), (1.0,))
        with pytest.raises(n.UTE):
            n.lib.grad(f)(3.0)


@pytest.mark.parametrize("kind", ["jvp", "vjp"])
def test_a_closed_over_value_the_function_does_not_read_is_fine(backend, kind):
    def prog(n):
        return n.lib.jvp(
            lambda x: _closing_over(n, x, kind, use=False)(np.float32(1.0)) + x, (3.0,), (1.0,)
        )

    assert_same_as_jax(prog(RI), prog(JAX))


@pytest.mark.parametrize("kind", ["jvp", "vjp"])
def test_a_closed_over_vmap_value_is_fine(backend, kind):
    # custom_api_test's test_closure_with_vmap2 / test_closed_over_vmap_tracer:
    # the vmap runs the function in its own subtrace
    def prog(n):
        def h(z):
            return n.lib.vmap(lambda x: _closing_over(n, x, kind)(z))(n.np.arange(3.0))

        if kind == "jvp":
            return n.lib.jvp(h, (np.float32(1.0),), (np.float32(2.0),))
        return n.lib.grad(lambda z: h(z).sum())(np.float32(1.0))

    assert_same_as_jax(prog(RI), prog(JAX))


def test_a_custom_vjp_bwd_may_read_an_enclosing_differentiation(backend):
    # custom_api_test's test_bwd_closes_over_tracer: the rules (not the
    # function) read the enclosing grad's value
    def prog(n):
        def f(y):
            @n.lib.custom_vjp
            def g(x):
                return 2.0 * n.np.sin(x)

            g.defvjp(lambda x: (g(x), ()), lambda _, c: (2.0 * n.np.cos(y) * c,))
            return n.lib.grad(g)(1.0)

        return n.lib.grad(f)(np.float32(4.0)), n.lib.jit(n.lib.vmap(f))(n.np.arange(3.0))

    assert_same_as_jax(prog(RI), prog(JAX))


def _fori_tangent_programs(n):
    """A scan or fori_loop whose carry has a part that is not linear (the
    counter) inside a linear computation: a custom_jvp rule's tangent, a
    linear_transpose'd function (JAX splits the counter off by partial
    evaluation before transposing)."""
    lib, lax = n.lib, n.lib.lax

    def doubled(t):
        return lax.fori_loop(0, 3, lambda i, c: c * 2.0 + i * 0.0, t)

    def scanned(t):
        body = lambda c, x: ((c[0] + 1, c[1] * x), c[1])  # noqa: E731
        (_, out), ys = lax.scan(body, (0, t), n.np.arange(1.0, 4.0))
        return out + ys.sum()

    f = lib.custom_jvp(lambda x: x * 8.0)
    f.defjvp(lambda p, t: (f(p[0]), doubled(t[0])))
    x = np.float32(2.0)
    return {
        "linear_transpose_fori": lambda: lib.linear_transpose(doubled, x)(x),
        "linear_transpose_scan": lambda: lib.linear_transpose(scanned, x)(x),
        "jit_linear_transpose": lambda: lib.jit(lib.linear_transpose(scanned, x))(x),
        "grad_custom_jvp_fori_rule": lambda: lib.grad(f)(x),
        "jit_grad_custom_jvp_fori_rule": lambda: lib.jit(lib.grad(f))(x),
        "vmap_grad_custom_jvp_fori_rule": lambda: lib.vmap(lib.grad(f))(n.np.arange(3.0)),
        "vjp_custom_jvp_fori_rule": lambda: lib.vjp(lambda x: f(x) * x, x)[1](x),
    }


@pytest.mark.parametrize("name", sorted(_fori_tangent_programs(JAX)))
def test_transposing_a_scan_whose_carry_is_partly_not_linear(backend, name):
    assert_same_as_jax(_fori_tangent_programs(RI)[name](), _fori_tangent_programs(JAX)[name]())


def _int_output_tangent(n, tangent, primal=lambda x: np.int32(3)):
    """A custom_jvp with an integer (or bool) output beside a float one,
    whose rule gives ``tangent(x)`` as that output's tangent."""
    f = n.lib.custom_jvp(lambda x: (x * 2.0, primal(x)))
    f.defjvp(lambda p, t: (f(p[0]), (t[0] * 5.0, tangent(p[0]))))
    return f


INT_TANGENTS = {
    "int32_zeros": lambda x: np.zeros((), np.int32),
    "python_zero": lambda x: 0,
    "float32_zero": lambda x: np.float32(0.0),
    "float0_of_another_shape": lambda x: np.zeros((2,), jax.dtypes.float0),
}


@pytest.mark.parametrize("mode", ["jvp", "grad", "jit_jvp"])
@pytest.mark.parametrize("tangent", sorted(INT_TANGENTS))
def test_an_integer_output_tangent_other_than_float0_is_a_type_error(backend, tangent, mode):
    def run(n):
        f = _int_output_tangent(n, INT_TANGENTS[tangent])
        lib = n.lib
        return {
            "jvp": lambda: lib.jvp(f, (1.0,), (1.0,)),
            "grad": lambda: lib.grad(lambda x: f(x)[0])(1.0),
            "jit_jvp": lambda: lib.jit(lambda x: lib.jvp(f, (x,), (1.0,)))(1.0),
        }[mode]()

    with pytest.raises(TypeError, match="corresponding shapes and dtypes"):
        run(JAX)
    with pytest.raises(TypeError, match="expecting tangent float0"):
        run(RI)


@pytest.mark.parametrize("bool_output", [False, True])
def test_float0_tangents_of_integer_and_bool_outputs(backend, bool_output):
    def run(n):
        primal = (lambda x: x > 0) if bool_output else (lambda x: np.int32(3))
        f = _int_output_tangent(n, lambda x: np.zeros((), jax.dtypes.float0), primal)
        (p, q), (tp, tq) = n.lib.jit(lambda x: n.lib.jvp(f, (x,), (1.0,)))(np.float32(1.0))
        return (p, q, tp), np.asarray(tq).dtype, n.lib.grad(lambda x: f(x)[0])(np.float32(1.0))

    (got, got_dtype, got_grad), (want, want_dtype, want_grad) = run(RI), run(JAX)
    assert_same_as_jax(got, want)
    assert got_dtype == want_dtype == jax.dtypes.float0
    assert_same_as_jax(got_grad, want_grad)


@pytest.mark.parametrize("kind", ["jvp", "vjp"])
def test_a_custom_function_is_not_a_method_descriptor(backend, kind):
    # JAX 0.10.2's custom_jvp/custom_vjp define no __get__: as a class
    # attribute it is called without self (a missing-argument TypeError);
    # called through the class with self given, it runs
    def make(n):
        if kind == "jvp":
            f = n.lib.custom_jvp(lambda self, x: x * self.k, nondiff_argnums=(0,))
            f.defjvp(lambda s, p, t: (f(s, *p), t[0] * s.k * 2.0))
        else:
            f = n.lib.custom_vjp(lambda self, x: x * self.k, nondiff_argnums=(0,))
            f.defvjp(lambda s, x: (f(s, x), None), lambda s, _, g: (g * s.k * 2.0,))
        return type("M", (), {"f": f, "k": 3.0})

    for n in (JAX, RI):
        m = make(n)()
        with pytest.raises(TypeError, match="missing"):
            m.f(np.float32(2.0))
    got_m, want_m = make(RI)(), make(JAX)()
    got = RI.lib.grad(lambda x: type(got_m).f(got_m, x))(np.float32(2.0))
    want = jax.grad(lambda x: type(want_m).f(want_m, x))(np.float32(2.0))
    assert_same_as_jax(got, want)


def _custom_vmap_reverse_programs(n):
    lib = n.lib
    cb = lib.custom_batching

    f = cb.custom_vmap(lambda x: n.np.sin(x))
    f.def_vmap(lambda size, batched, xs: (n.np.cos(xs), batched[0]))
    seq = cb.sequential_vmap(lambda x, y: x + y)
    xs = n.np.arange(3.0)
    return {
        "grad": lambda: lib.grad(f)(0.5),
        "grad_of_vmap_sequential": lambda: lib.grad(lambda x: lib.vmap(seq)(x, x).sum())(xs),
        "linearize": lambda: lib.linearize(f, 0.5)[0],
        "jit_grad": lambda: lib.jit(lib.grad(lambda x: f(x) * 2.0))(0.5),
    }


@pytest.mark.parametrize("name", sorted(_custom_vmap_reverse_programs(JAX)))
def test_linearizing_a_custom_vmap_function_is_a_value_error(backend, name):
    # custom_api_test's test_partial_eval_raises (and test_sequential_vmap
    # under grad): JAX's partial evaluation finds the primal unknown
    with pytest.raises(ValueError, match="Linearization failed"):
        _custom_vmap_reverse_programs(JAX)[name]()
    with pytest.raises(ValueError, match="Linearization failed"):
        _custom_vmap_reverse_programs(RI)[name]()


def test_reverse_mode_runs_where_no_custom_vmap_call_is_linearized(backend):
    # no tangent reaches the call, or a vmap inside the differentiation
    # applies the rule first (the rule's operations are differentiated)
    def prog(n):
        f = n.lib.custom_batching.custom_vmap(lambda x: n.np.sin(x))
        f.def_vmap(lambda size, batched, xs: (n.np.cos(xs), batched[0]))
        xs = n.np.arange(3.0)
        return (
            n.lib.grad(lambda x, c: x * f(c), argnums=0)(np.float32(2.0), np.float32(0.5)),
            n.lib.vjp(n.lib.vmap(f), xs)[1](xs),
            n.lib.grad(lambda x: n.lib.vmap(f)(x).sum())(xs),
        )

    assert_same_as_jax(prog(RI), prog(JAX))
