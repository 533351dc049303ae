"""A mutable accumulator with jax.new_ref: a jitted function adds each batch's
sum of squares into a Ref in place; a scan body does the same internally."""

import jax
import jax.numpy as jnp
from jax import lax


@jax.jit
def accumulate(acc_ref, batch):
    acc_ref[...] += jnp.sum(batch**2, axis=0)


acc = jax.new_ref(jnp.zeros(3))
for i in range(4):
    accumulate(acc, jnp.arange(6.0).reshape(2, 3) + i)


@jax.jit
def running_max(xs):
    best = jax.new_ref(jnp.float32(-jnp.inf))

    def body(carry, x):
        best[...] = jnp.maximum(best[...], x)
        return carry + x, best[...]

    total, maxima = lax.scan(body, jnp.float32(0.0), xs)
    return total, maxima, best[...]


total, maxima, best = running_max(jnp.array([0.5, 2.0, -1.0, 3.0, 1.0]))
results = {"accumulated": acc[...], "total": total, "maxima": maxima, "best": best}
print("accumulated", acc[...], "running maxima", maxima)
