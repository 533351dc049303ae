"""custom_gradient compared with JAX 0.10.2 on both backends: the rule's
cotangent has the value's type, weak type included (grad of a function of a
Python float is weakly typed, as JAX's), and jax.custom_derivatives exports
custom_gradient and closure_convert under refimpl.as_jax too."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import as_jax


def _square(lib):
    @lib.custom_gradient
    def f(x):
        return x**2, lambda g: (g * 10 * x,)

    return f


def _pair(lib):
    @lib.custom_gradient
    def f(x, y):
        return {"p": x * y, "s": x + y}, lambda g: (g["p"] * y + g["s"], g["p"] * x * 3)

    return f


def _same(got, want):
    g, w = np.asarray(got), np.asarray(want)
    assert (g.dtype, g.shape) == (w.dtype, w.shape)
    assert got.weak_type == want.weak_type
    np.testing.assert_allclose(g, w, rtol=1e-6)


def test_weak_types_of_custom_gradient_cotangents(backend):
    for arg in (3.0, np.float32(3.0)):
        _same(ri.grad(_square(ri))(arg), jax.grad(_square(jax))(arg))
        _same(ri.jit(ri.grad(_square(ri)))(arg), jax.jit(jax.grad(_square(jax)))(arg))
    xs = np.arange(3.0, dtype=np.float32)
    _same(ri.vmap(ri.grad(_square(ri)))(xs), jax.vmap(jax.grad(_square(jax)))(xs))
    for args in ((2.0, 3.0), (np.float32(2.0), 3.0)):
        got = ri.grad(lambda x, y: _pair(ri)(x, y)["p"], (0, 1))(*args)
        want = jax.grad(lambda x, y: _pair(jax)(x, y)["p"], (0, 1))(*args)
        for g, w in zip(got, want, strict=True):
            _same(g, w)
    _same(
        ri.grad(lambda x: 5.0 * _square(ri)(x) * rnp.float32(1.0))(2.0),
        jax.grad(lambda x: 5.0 * _square(jax)(x) * jnp.float32(1.0))(2.0),
    )


def test_custom_derivatives_module_exports_under_as_jax():
    with as_jax.aliased_jax():
        import jax.custom_derivatives as cd  # noqa: PLC0415  (the alias exists only here)

        assert cd.custom_gradient is ri.custom_gradient
        assert cd.closure_convert is ri.closure_convert
