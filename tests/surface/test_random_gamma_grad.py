"""The derivative of Gamma samples in their shape parameter (implicit
reparameterization) against JAX: ``lax.random_gamma_grad`` itself, and
``grad``/``jvp`` of ``random.gamma``, ``loggamma``, ``beta``, ``dirichlet``
on the reference backend and on pjrt (values within 2e-4 relative)."""

from __future__ import annotations

import jax
import ml_dtypes
import numpy as np
import pytest

import refimpl as ri
from tests.helpers.pjrt_helpers import skip_without_pjrt

jax.config.update("jax_platforms", "cpu")

RTOL = 2e-4


def _close(ours, expected, rtol=RTOL):
    ours, expected = np.asarray(ours), np.asarray(expected)
    assert ours.shape == expected.shape and ours.dtype == expected.dtype
    np.testing.assert_allclose(
        ours.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=1e-30, equal_nan=True
    )


def _alphas_and_samples(dtype=np.float32):
    rng = np.random.default_rng(0)
    a = np.concatenate([rng.uniform(0.02, 1, 30), rng.uniform(1, 10, 30), rng.uniform(10, 300, 10)])
    x = rng.gamma(a)
    a = np.concatenate([a, [0.5, 1.0, 2.0, 0.0, -1.0, np.nan, 3.0, 2.0]])
    x = np.concatenate([x, [0.0, 1e-30, 40.0, 1.0, 1.0, 1.0, np.inf, np.nan]])
    return a.astype(dtype), x.astype(dtype)


@pytest.mark.parametrize(
    "dtype",
    [
        np.float32,
        pytest.param(np.float16, marks=pytest.mark.slow),
        pytest.param(ml_dtypes.bfloat16, marks=pytest.mark.slow),
    ],
)
def test_random_gamma_grad_against_jax(dtype):
    a, x = _alphas_and_samples(dtype)
    expected = jax.lax.random_gamma_grad(a, x)
    rtol = RTOL if dtype == np.float32 else 1e-2
    _close(ri.lax.random_gamma_grad(a, x), expected, rtol)
    _close(ri.vmap(ri.lax.random_gamma_grad)(a, x), expected, rtol)
    skip_without_pjrt()
    _close(ri.jit(ri.lax.random_gamma_grad, backend="pjrt")(a, x), expected, rtol)


def test_random_gamma_grad_errors():
    with pytest.raises(TypeError, match="random_gamma_grad"):
        ri.lax.random_gamma_grad(np.ones(2, np.int32), np.ones(2, np.int32))


CASES = {
    "gamma": (lambda r, k, a: r.random.gamma(k, a), (5,)),
    "gamma-shape": (lambda r, k, a: r.random.gamma(k, a, shape=(2, 3)), (3,)),
    "loggamma": (lambda r, k, a: r.random.loggamma(k, a), (4,)),
    "beta": (lambda r, k, a: r.random.beta(k, a, a[::-1] + 0.5), (4,)),
    "dirichlet": (lambda r, k, a: r.random.dirichlet(k, a, shape=(3,)), (4,)),
    "gamma-scalar": (lambda r, k, a: r.random.gamma(k, a, shape=(6,)), ()),
}


@pytest.mark.slow  # JAX's own compiles of the sampler and its derivative take ~6 s a case
@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("seed", [0, 7])
def test_grad_of_samples_against_jax(name, seed):
    sample, shape = CASES[name]
    a = np.random.default_rng(seed).uniform(0.2, 4.0, shape).astype(np.float32)
    weights = np.random.default_rng(seed + 1).standard_normal(
        np.shape(sample(jax, jax.random.key(seed), a))
    )
    weights = weights.astype(np.float32)

    def loss(module, key):
        return lambda al: (sample(module, key, al) * weights).sum()

    expected = jax.grad(loss(jax, jax.random.key(seed)))(a)
    _close(ri.grad(loss(ri, ri.random.key(seed)))(a), expected)
    t = np.ones_like(a)
    _, expected_t = jax.jvp(lambda al: sample(jax, jax.random.key(seed), al), (a,), (t,))
    _, ours_t = ri.jvp(lambda al: sample(ri, ri.random.key(seed), al), (a,), (t,))
    _close(ours_t, expected_t)
    skip_without_pjrt()
    jitted = ri.jit(ri.grad(loss(ri, ri.random.key(seed))), backend="pjrt")
    _close(jitted(a), expected)


def test_grad_of_gamma_is_random_gamma_grad_at_the_samples():
    """The fast check: d sample / d a is JAX's random_gamma_grad at JAX's
    samples (which equal ours), for gamma and (through d log x = dx / x) loggamma."""
    a = np.array([0.05, 0.7, 1.0, 3.5, 40.0], np.float32)
    key = jax.random.key(11)
    samples = jax.random.gamma(key, a)
    slope = jax.lax.random_gamma_grad(a, samples)
    _close(ri.grad(lambda al: ri.random.gamma(ri.random.key(11), al).sum())(a), slope)
    ours = ri.grad(lambda al: ri.random.loggamma(ri.random.key(11), al).sum())(a)
    _close(ours, slope / samples)


@pytest.mark.slow
def test_grad_under_vmap_over_keys():
    a = np.array([0.5, 2.0, 9.0], np.float32)

    def per_key(module, key):
        return module.grad(lambda al: module.random.gamma(key, al).sum())(a)

    expected = jax.vmap(lambda k: per_key(jax, k))(jax.random.split(jax.random.key(3), 4))
    ours = ri.vmap(lambda k: per_key(ri, k))(ri.random.split(ri.random.key(3), 4))
    _close(ours, expected)


def test_samples_unchanged_by_the_rule():
    """The custom derivative leaves the samples as they were: equal to the
    primal of the jvp, and bit-equal to JAX's on pjrt (the reference
    backend's transcendental functions may differ from XLA's by an ulp)."""
    a = np.array([0.3, 1.0, 4.0], np.float32)
    expected = jax.random.gamma(jax.random.key(5), a, (2, 3))
    samples = ri.random.gamma(ri.random.key(5), a, (2, 3))
    value, _ = ri.jvp(lambda al: ri.random.gamma(ri.random.key(5), al, (2, 3)), (a,), (a,))
    np.testing.assert_array_equal(np.asarray(value), np.asarray(samples))
    _close(samples, expected, 1e-6)
    skip_without_pjrt()
    on_pjrt = ri.jit(lambda al: ri.random.gamma(ri.random.key(5), al, (2, 3)), backend="pjrt")
    np.testing.assert_array_equal(np.asarray(on_pjrt(a)), expected)
