"""refimpl.scipy.special (and the erf_inv/erfc/lgamma/digamma primitives)
against jax.scipy.special and scipy.special on random inputs and edge values,
eagerly and under jit on both backends; derivatives against JAX's."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.special as sps

import refimpl as ri
from refimpl import lax
from refimpl.scipy import special
from tests.helpers.pjrt_helpers import skip_without_pjrt


def runners():
    yield "eager", lambda f: f
    yield "ref", lambda f: ri.jit(f, backend="ref")
    skip_without_pjrt()
    yield "pjrt", lambda f: ri.jit(f, backend="pjrt")


def close(got, want, rtol=3e-6, atol=3e-6):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol,
                               atol=atol)  # fmt: skip


UNARY = {
    "erf": (lambda r: r.uniform(-4, 4, 60), []),
    "erfc": (lambda r: r.uniform(-4, 9, 60), [0.0, -30.0, 30.0]),
    "erfinv": (lambda r: r.uniform(-1, 1, 60), [0.0, 1.0, -1.0, 0.999999, 2.0]),
    "expit": (lambda r: r.normal(0, 10, 60), [0.0, 100.0, -100.0]),
    "logit": (lambda r: r.uniform(0, 1, 60), [0.0, 1.0, 0.5]),
    "gammaln": (lambda r: r.uniform(-10, 40, 60), [1.0, 2.0, 0.5, 0.0, -1.0, np.inf]),
    "digamma": (lambda r: r.uniform(-10, 40, 60), [1.0, 0.5, 0.0, -2.0, 1e-3]),
}


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_against_jax(name, rng):
    make, edges = UNARY[name]
    x = np.concatenate([make(rng), edges]).astype(np.float32)
    want = getattr(jax.scipy.special, name)(x)
    for _, wrap in runners():
        close(wrap(getattr(special, name))(x), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["erfinv", "gammaln", "digamma", "erfc"])
def test_float64_against_scipy(name, rng):
    ri.config.update("enable_x64", True)  # restored by conftest
    make, edges = UNARY[name]
    x = np.concatenate([make(rng), [v for v in edges if v != 2.0]]).astype(np.float64)
    ref = {"erfinv": sps.erfinv, "gammaln": sps.gammaln, "digamma": sps.digamma,
           "erfc": sps.erfc}[name]  # fmt: skip
    want = ref(x)
    if name == "digamma":
        want = np.where((x <= 0) & (x == np.floor(x)), np.nan, want)  # XLA's pole convention
    got = np.asarray(getattr(lax, {"erfinv": "erf_inv", "gammaln": "lgamma"}.get(name, name))(x))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_erf_inv_float32_matches_xla_closely(rng):
    """The reference evaluates XLA's polynomial (with fused multiply-adds):
    equal to XLA except where NumPy's and XLA's log1p differ by an ulp."""
    x = rng.uniform(-1, 1, 20000).astype(np.float32)
    want = np.asarray(jax.jit(jax.lax.erf_inv)(x))
    got = np.asarray(lax.erf_inv(x))
    assert np.mean(got == want) > 0.95
    np.testing.assert_allclose(got, want, rtol=4e-7)
    skip_without_pjrt()
    np.testing.assert_array_equal(np.asarray(ri.jit(lax.erf_inv, backend="pjrt")(x)), want)


def test_xlogy_xlog1py_entr(rng):
    x = np.concatenate([rng.uniform(0, 3, 30), [0.0, 0.0, 1.0, -1.0]]).astype(np.float32)
    y = np.concatenate([rng.uniform(0, 3, 30), [0.0, -1.0, 0.0, 2.0]]).astype(np.float32)
    for _, wrap in runners():
        close(wrap(special.xlogy)(x, y), jax.scipy.special.xlogy(x, y))
        close(wrap(special.xlog1py)(x, y - 1), jax.scipy.special.xlog1py(x, y - 1))
        close(wrap(special.entr)(x), jax.scipy.special.entr(x))
    close(special.xlogy(2, 3), jax.scipy.special.xlogy(2, 3))  # ints -> default float


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"axis": 1}, {"axis": (0, 2), "keepdims": True}, {"b": "b"}, {"b": "b", "axis": 0},
     {"b": "neg", "return_sign": True, "axis": -1}, {"b": "neg", "axis": -1}],
)  # fmt: skip
def test_logsumexp(kwargs, rng):
    a = (rng.normal(size=(3, 4, 5)) * 5).astype(np.float32)
    a[0, 0, :] = -np.inf
    kwargs = dict(kwargs)
    if kwargs.get("b") == "b":
        kwargs["b"] = rng.uniform(0, 2, (4, 5)).astype(np.float32)
    elif kwargs.get("b") == "neg":
        kwargs["b"] = rng.uniform(-1, 2, (3, 4, 5)).astype(np.float32)
    want = jax.scipy.special.logsumexp(a, **kwargs)
    for _, wrap in runners():
        got = wrap(lambda v: special.logsumexp(v, **kwargs))(a)
        for g, w in zip(jax.tree.leaves(got) if isinstance(got, tuple) else [got],
                        jax.tree.leaves(want), strict=True):  # fmt: skip
            close(g, w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["erf_inv", "erfc", "lgamma"])
def test_derivatives_against_jax(name, rng):
    x = {"erf_inv": rng.uniform(-0.9, 0.9, 8), "erfc": rng.uniform(-2, 2, 8),
         "lgamma": rng.uniform(0.3, 6, 8)}[name].astype(np.float32)  # fmt: skip
    ours = ri.grad(lambda v: ri.numpy.sum(getattr(lax, name)(v)))(x)
    theirs = jax.grad(lambda v: jnp.sum(getattr(jax.lax, name)(v)))(x)
    close(ours, theirs, rtol=2e-5, atol=2e-5)
    ours = ri.jit(ri.grad(lambda v: ri.numpy.sum(getattr(lax, name)(v))), backend="ref")(x)
    close(ours, theirs, rtol=2e-5, atol=2e-5)


def test_bad_input_errors():
    with pytest.raises(TypeError, match="erf_inv does not accept dtype int32"):
        lax.erf_inv(np.int32(1))
    with pytest.raises(ValueError, match="logsumexp: axis 3 is out of bounds"):
        special.logsumexp(np.zeros((2, 2)), axis=3)


@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_polygamma(n, rng):
    x = np.concatenate([rng.uniform(-6, 30, 40), [0.0, -1.0, 0.5, 1e-3]]).astype(np.float32)
    want = jax.scipy.special.polygamma(n, x)
    for _, wrap in runners():
        got = wrap(lambda v: special.polygamma(n, v))(x)
        close(got, want, rtol=3e-5, atol=1e-5)


def test_polygamma_float64_and_digamma_derivative(rng):
    ri.config.update("enable_x64", True)  # restored by conftest
    x = rng.uniform(-5.5, 30, 50)
    for n in [1, 2, 4]:
        got = np.asarray(special.polygamma(n, x))
        np.testing.assert_allclose(got, sps.polygamma(n, x), rtol=1e-12, atol=1e-12)
    ri.config.update("enable_x64", False)
    v = np.array([0.7, 2.0, 5.0], np.float32)
    ours = ri.grad(lambda a: ri.numpy.sum(special.digamma(a)))(v)
    close(ours, jax.grad(lambda a: jnp.sum(jax.scipy.special.digamma(a)))(v), rtol=2e-5)
