"""Gaussian-process regression: an RBF kernel whose log length scale, log
amplitude and log noise are fitted by gradient descent on the negative log
marginal likelihood (Cholesky factorization and triangular solves)."""

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import random
from refimpl.scipy.linalg import cho_solve

kx, kn = random.split(random.PRNGKey(6))
x = rnp.sort(random.uniform(kx, (20,), minval=-3.0, maxval=3.0))
y = rnp.sin(x) + 0.1 * random.normal(kn, (20,))


def kernel(params, a, b):
    sq = (a[:, None] - b[None, :]) ** 2
    return rnp.exp(2 * params["log_amp"]) * rnp.exp(-0.5 * sq / rnp.exp(2 * params["log_len"]))


def nlml(params):
    k = kernel(params, x, x) + (rnp.exp(2 * params["log_noise"]) + 1e-6) * rnp.eye(x.shape[0])
    chol = rnp.linalg.cholesky(k)
    alpha = cho_solve((chol, True), y)
    return (
        0.5 * y @ alpha + rnp.sum(rnp.log(rnp.diag(chol))) + 0.5 * x.shape[0] * rnp.log(2 * rnp.pi)
    )


params = {"log_len": rnp.float32(0.0), "log_amp": rnp.float32(0.0), "log_noise": rnp.float32(-1.0)}
step = ri.jit(lambda p: ri.tree.map(lambda v, g: v - 0.02 * g, p, ri.grad(nlml)(p)))
start = nlml(params)
for _ in range(50):
    params = step(params)

x_test = rnp.linspace(-3.0, 3.0, 7)
k = kernel(params, x, x) + (rnp.exp(2 * params["log_noise"]) + 1e-6) * rnp.eye(x.shape[0])
mean = kernel(params, x_test, x) @ cho_solve((rnp.linalg.cholesky(k), True), y)
results = {"nlml_start": start, "nlml_end": nlml(params), "params": params, "mean": mean}
print("NLML", float(start), "->", float(results["nlml_end"]), "posterior mean", mean)
