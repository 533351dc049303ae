"""custom_jvp / custom_vjp as in JAX 0.10.2 (issue 29, class 3): None inside a
bwd output pytree is zero, nondiff_argnames, and the transpose of a linear
custom_jvp function (its primal is transposed). Compared with JAX, on both
backends."""

from __future__ import annotations

import functools

import jax
import numpy as np
import pytest

import refimpl as ri

BACKENDS = ["ref", "pjrt"]


def _close(got, want):
    for g, w in zip(ri.tree_leaves(got), jax.tree_util.tree_leaves(want), strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)
        assert np.asarray(g).dtype == np.asarray(w).dtype


def _none_in_bwd_tree(lib):
    @lib.custom_vjp
    def f(x):
        return x["a"] * x["b"][0]

    # None for a leaf and None for a whole subtree both mean zeros
    f.defvjp(lambda x: (f(x), x), lambda x, g: ({"a": g * x["b"][0], "b": None},))
    return f


@pytest.mark.parametrize("backend", BACKENDS)
def test_none_in_a_bwd_output_pytree_is_zero(backend):
    arg = {"a": 2.0, "b": (3.0, 4.0)}
    want = jax.grad(_none_in_bwd_tree(jax))(arg)
    f = _none_in_bwd_tree(ri)
    _close(ri.grad(f)(arg), want)
    _close(ri.jit(ri.grad(f), backend=backend)(arg), want)


def test_a_bwd_output_of_the_wrong_structure_is_still_an_error():
    @ri.custom_vjp
    def f(x):
        return x["a"]

    f.defvjp(lambda x: (f(x), None), lambda _, g: ({"a": g, "b": (None, 1.0)},))
    with pytest.raises(TypeError, match="same container"):
        ri.grad(f)({"a": 2.0, "b": 3.0})


def _power_jvp(lib):
    @functools.partial(lib.custom_jvp, nondiff_argnames=("n",))
    def f(x, n):
        return x**n

    @f.defjvp
    def f_jvp(n, primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x, n), n * x ** (n - 1) * t

    return f


def _power_vjp(lib):
    @functools.partial(lib.custom_vjp, nondiff_argnames=("n",))
    def f(x, n):
        return x**n

    f.defvjp(lambda x, n: (f(x, n), x), lambda n, x, g: (n * x ** (n - 1) * g,))
    return f


@pytest.mark.parametrize("make", [_power_jvp, _power_vjp])
@pytest.mark.parametrize("backend", BACKENDS)
def test_nondiff_argnames(make, backend):
    want = jax.grad(lambda x: make(jax)(x, n=3))(2.0)
    f = make(ri)
    _close(ri.grad(lambda x: f(x, n=3))(2.0), want)
    _close(ri.jit(ri.grad(lambda x: f(x, n=3)), backend=backend)(2.0), want)
    _close(ri.grad(lambda x: f(x, 3))(2.0), want)
    with pytest.raises(ValueError, match="nondiff_argnames"):
        ri.custom_jvp(lambda x: x, nondiff_argnames=("nope",))


def _linear(lib):
    @lib.custom_jvp
    def f(x, y):
        return 2.0 * x + y * 3.0

    f.defjvp(lambda p, t: (f(*p), f(*t)))
    return f


@pytest.mark.parametrize("backend", BACKENDS)
def test_linear_transpose_of_a_linear_custom_jvp_function(backend):
    want = jax.linear_transpose(_linear(jax), 1.0, 1.0)(1.0)
    f = _linear(ri)
    _close(ri.linear_transpose(f, 1.0, 1.0)(1.0), want)
    _close(ri.jit(ri.linear_transpose(f, 1.0, 1.0), backend=backend)(1.0), want)
    g = jax.linear_transpose(lambda x: _linear(jax)(x, 2.0 * x), 1.0)(1.0)
    _close(ri.linear_transpose(lambda x: f(x, 2.0 * x), 1.0)(1.0), g)
