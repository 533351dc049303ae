"""Derivatives of jax.numpy functions as JAX's tests/lax_numpy_test.py
(NumpyGradTests) checks them: ``sinc`` at 0 to the fourth order, by ``jvp``
and ``grad`` in every combination (the Maclaurin series of sin(y)/y, as
JAX: -pi**2/3 for the second derivative, pi**4/5 for the fourth), with the
weak type of a Python-scalar argument kept in the value and the gradient;
and the weak type of ``logaddexp``/``logaddexp2``'s gradient. Compared with
JAX 0.10.2 (and the series) on both backends."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp

_SERIES = {1: 0.0, 2: -(np.pi**2) / 3, 3: 0.0, 4: np.pi**4 / 5}


def _derivative(api, f, how):
    if how == "grad":
        return api.grad(f)
    return lambda x: api.jvp(f, (x,), (1.0,))[1]


def _apply(api, f, hows):
    for how in hows:
        f = _derivative(api, f, how)
    return f


@pytest.mark.parametrize(
    "hows",
    [c for k in range(1, 5) for c in itertools.combinations_with_replacement(["jvp", "grad"], k)],
    ids="-".join,
)
def test_sinc_derivatives_at_zero(backend, hows):
    got = _apply(ri, rnp.sinc, hows)(0.0)
    want = _apply(jax, jnp.sinc, hows)(0.0)
    np.testing.assert_allclose(np.asarray(got), _SERIES[len(hows)], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)
    assert got.dtype == want.dtype and got.aval.weak_type == want.aval.weak_type


@pytest.mark.parametrize(
    "x", [0.0, 0.5, np.float32(0.0), np.array([0.0, 1.5], np.float32)], ids=repr
)
def test_sinc_value_and_hessian(backend, x):
    for got, want in [
        (rnp.sinc(x), jnp.sinc(x)),
        (ri.jit(rnp.sinc)(x), jax.jit(jnp.sinc)(x)),
        (ri.hessian(lambda v: rnp.sinc(v).sum())(x), jax.hessian(lambda v: jnp.sinc(v).sum())(x)),
    ]:
        assert got.shape == want.shape and got.dtype == want.dtype
        assert got.aval.weak_type == want.aval.weak_type
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2"])
@pytest.mark.parametrize("args", [(0.3, 0.2), (np.inf, 0.2), (np.float32(0.3), 0.2)], ids=repr)
def test_logaddexp_gradient_weak_type(backend, name, args):
    got = ri.grad(getattr(rnp, name), (0, 1))(*args)
    want = jax.grad(getattr(jnp, name), (0, 1))(*args)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.aval.weak_type == w.aval.weak_type
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)
