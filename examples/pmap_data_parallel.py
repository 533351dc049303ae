"""A data-parallel training step with pmap: each device takes a shard of the
batch, gradients are averaged with lax.pmean, parameters stay replicated.
The global batch is fixed, so the result does not depend on the device count."""

import jax
import jax.numpy as jnp
from jax import lax, random

n_dev = jax.local_device_count()
global_batch = 8 * 3 * 4  # divisible by 1, 2, 3, 4, 6, 8 devices
kx, kw = random.split(random.PRNGKey(8))
x = random.normal(kx, (global_batch, 3))
y = x @ jnp.array([1.0, -2.0, 0.5]) + 1.0


def loss(params, x, y):
    w, b = params
    return jnp.mean((x @ w + b - y) ** 2)


def step(params, x, y):
    grads = lax.pmean(jax.grad(loss)(params, x, y), axis_name="devices")
    return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)


p_step = jax.pmap(step, axis_name="devices")
params = (jnp.zeros(3), jnp.float32(0.0))
replicated = jax.tree.map(lambda a: jnp.stack([a] * n_dev), params)
shards = (x.reshape(n_dev, -1, 3), y.reshape(n_dev, -1))
for _ in range(20):
    replicated = p_step(replicated, *shards)

final = jax.tree.map(lambda a: a[0], replicated)
results = {"params": final, "loss": loss(final, x, y)}
print(n_dev, "devices; params", final, "loss", float(results["loss"]))
