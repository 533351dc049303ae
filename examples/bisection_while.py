"""Root finding by bisection inside lax.while_loop, vectorized over several
cubics at once and compiled with jit."""

import jax
import jax.numpy as jnp
from jax import lax


def bisect(f, lo, hi, tol=1e-6):
    def cond(state):
        lo, hi, _ = state
        return jnp.max(hi - lo) > tol

    def body(state):
        lo, hi, n = state
        mid = 0.5 * (lo + hi)
        same_sign = jnp.sign(f(mid)) == jnp.sign(f(lo))
        return jnp.where(same_sign, mid, lo), jnp.where(same_sign, hi, mid), n + 1

    lo, hi, n = lax.while_loop(cond, body, (lo, hi, 0))
    return 0.5 * (lo + hi), n


coefficients = jnp.array([1.0, 2.0, 3.0, 5.0])


def cubic(x):
    return x**3 - coefficients  # roots: cube roots of the coefficients


root, iterations = jax.jit(lambda: bisect(cubic, jnp.zeros(4), jnp.full(4, 2.0)))()
results = {"roots": root, "iterations": iterations, "residual": cubic(root)}
print("roots", root, "after", int(iterations), "iterations")
