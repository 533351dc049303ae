"""``lax.composite`` as JAX 0.10.2's (lax_test's CompositeTest, issue 29): the
decomposition's values eagerly, under jit and eval_shape, with static
attributes and variadic/pytree results; JVP and grad are JAX's ValueError;
vmap is a NotImplementedError; a closed-over traced value is JAX's
UnexpectedTracerError. On both backends."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
from refimpl import lax
from tests.helpers.parity import assert_same_as_jax

_X = np.array([0.5, 1.5, -2.0], np.float32)
_NO_JVP = "JVP rule for composite not implemented. You can use `jax.custom_jvp`"


def _square(L):
    return L.composite(lambda x: x**2, name="my.square")


def _tangent(L):
    def decomposition(x, **_):
        return L.sin(x) / L.cos(x)

    return lambda x: L.composite(decomposition, "my.tangent")(
        x, dtype=np.dtype(np.float32), int=1, omit=None, str="bar", tensor=np.zeros((1, 2))
    )


def _top_k(L):
    return partial(L.composite, name="my.top_k")(lambda x, *, k: L.top_k(x, k))


def test_values_eager_and_jit(backend):
    for make in (_square, _tangent):
        want = make(jax.lax)(_X)
        assert_same_as_jax(make(lax)(_X), want)
        assert_same_as_jax(ri.jit(make(lax))(_X), want)
    assert ri.eval_shape(_square(lax), _X).shape == (3,)


def test_static_attributes_and_versions(backend):
    want = jax.jit(_top_k(jax.lax), static_argnames="k")(_X, k=2)
    assert_same_as_jax(ri.jit(_top_k(lax), static_argnames="k")(_X, k=2), want)
    assert_same_as_jax(_top_k(lax)(_X, k=2), _top_k(jax.lax)(_X, k=2))
    versioned = lax.composite(lambda x: x * 2, "my.double", version=1)
    assert_same_as_jax(versioned(_X), jax.lax.composite(lambda x: x * 2, "my.double", 1)(_X))


def test_variadic_pytree_and_no_arguments(backend):
    ident = lambda L: L.composite(lambda *a: a, name="my.ident")  # noqa: E731
    xs = (_X, _X * 2, np.int32(3))
    assert_same_as_jax(ident(lax)(*xs), ident(jax.lax)(*xs))
    pair = lambda L: L.composite(lambda a, b: {"s": a + b, "p": a * b}, "my.pair")  # noqa: E731
    assert_same_as_jax(ri.jit(pair(lax))(_X, _X), jax.jit(pair(jax.lax))(_X, _X))
    one = lambda L, np_: L.composite(lambda: np_.array(1.0, np_.float32), "my.one")  # noqa: E731
    assert_same_as_jax(one(lax, ri.numpy)(), one(jax.lax, jnp)())


@pytest.mark.parametrize(
    "transform",
    [
        lambda api, f: api.jvp(f, (1.0,), (2.0,)),
        lambda api, f: api.grad(f)(1.0),
        lambda api, f: api.vjp(f, 1.0),
        lambda api, f: api.linearize(f, 1.0),
        lambda api, f: api.jit(api.grad(f))(1.0),
    ],
    ids=["jvp", "grad", "vjp", "linearize", "jit_grad"],
)
def test_no_differentiation_rule(backend, transform):
    with pytest.raises(ValueError, match="JVP rule for composite not implemented"):
        transform(jax, _square(jax.lax))
    with pytest.raises(ValueError, match=_NO_JVP.replace("(", r"\(")):
        transform(ri, _square(lax))


def test_no_batching_rule(backend):
    with pytest.raises(NotImplementedError, match="composite"):
        jax.vmap(_square(jax.lax))(_X)
    with pytest.raises(NotImplementedError, match="composite"):
        ri.vmap(_square(lax))(_X)


def test_closed_over_traced_value(backend):
    def fun(L, np_):
        def f(x, scale):
            return L.composite(lambda y: np_.round(y / scale), "my.consts")(x)

        return f

    scale = np.array([0.5, 0.4, 0.3], np.float32)
    want = fun(jax.lax, jnp)(_X, scale)
    assert_same_as_jax(fun(lax, ri.numpy)(_X, scale), want)  # a concrete closure: fine
    assert_same_as_jax(ri.jit(partial(fun(lax, ri.numpy), scale=scale))(_X), want)
    match = "Found a JAX Tracer as a constant in the decomposition for the composite op 'my.consts'"
    with pytest.raises(jax.errors.UnexpectedTracerError, match=match):
        jax.jit(fun(jax.lax, jnp))(_X, scale)
    with pytest.raises(ri.UnexpectedTracerError, match=match):
        ri.jit(fun(lax, ri.numpy))(_X, scale)
