"""Per-example gradients with vmap(grad(...)), and their clipped mean (the
core of DP-SGD), checked against the batch gradient."""

import jax
import jax.numpy as jnp
from jax import random

kx, kw, ky = random.split(random.PRNGKey(7), 3)
x = random.normal(kx, (10, 4))
w_true = random.normal(kw, (4,))
y = x @ w_true + 0.1 * random.normal(ky, (10,))
params = {"w": jnp.zeros(4), "b": jnp.float32(0.0)}


def loss(params, xi, yi):
    return 0.5 * (xi @ params["w"] + params["b"] - yi) ** 2


per_example = jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)))(params, x, y)
norms = jnp.sqrt(per_example["w"] ** 2 @ jnp.ones(4) + per_example["b"] ** 2)
scale = jnp.minimum(1.0, 1.0 / norms)
clipped = jax.tree.map(
    lambda g: jnp.mean(g * scale.reshape((-1,) + (1,) * (g.ndim - 1)), 0), per_example
)
batch = jax.grad(lambda p: jnp.mean(jax.vmap(loss, (None, 0, 0))(p, x, y)))(params)
results = {
    "per_example": per_example,
    "norms": norms,
    "clipped_mean": clipped,
    "batch_grad": batch,
    "mean_matches_batch": jnp.allclose(jnp.mean(per_example["w"], 0), batch["w"], atol=1e-5),
}
print("per-example gradient norms", norms)
