"""Gaussian-process regression: an RBF kernel whose log length scale, log
amplitude and log noise are fitted by gradient descent on the negative log
marginal likelihood (Cholesky factorization and triangular solves)."""

import jax
import jax.numpy as jnp
from jax import random
from jax.scipy.linalg import cho_solve

kx, kn = random.split(random.PRNGKey(6))
x = jnp.sort(random.uniform(kx, (20,), minval=-3.0, maxval=3.0))
y = jnp.sin(x) + 0.1 * random.normal(kn, (20,))


def kernel(params, a, b):
    sq = (a[:, None] - b[None, :]) ** 2
    return jnp.exp(2 * params["log_amp"]) * jnp.exp(-0.5 * sq / jnp.exp(2 * params["log_len"]))


def nlml(params):
    k = kernel(params, x, x) + (jnp.exp(2 * params["log_noise"]) + 1e-6) * jnp.eye(x.shape[0])
    chol = jnp.linalg.cholesky(k)
    alpha = cho_solve((chol, True), y)
    return (
        0.5 * y @ alpha + jnp.sum(jnp.log(jnp.diag(chol))) + 0.5 * x.shape[0] * jnp.log(2 * jnp.pi)
    )


params = {"log_len": jnp.float32(0.0), "log_amp": jnp.float32(0.0), "log_noise": jnp.float32(-1.0)}
step = jax.jit(lambda p: jax.tree.map(lambda v, g: v - 0.02 * g, p, jax.grad(nlml)(p)))
start = nlml(params)
for _ in range(50):
    params = step(params)

x_test = jnp.linspace(-3.0, 3.0, 7)
k = kernel(params, x, x) + (jnp.exp(2 * params["log_noise"]) + 1e-6) * jnp.eye(x.shape[0])
mean = kernel(params, x_test, x) @ cho_solve((jnp.linalg.cholesky(k), True), y)
results = {"nlml_start": start, "nlml_end": nlml(params), "params": params, "mean": mean}
print("NLML", float(start), "->", float(results["nlml_end"]), "posterior mean", mean)
