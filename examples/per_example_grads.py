"""Per-example gradients with vmap(grad(...)), and their clipped mean (the
core of DP-SGD), checked against the batch gradient."""

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import random

kx, kw, ky = random.split(random.PRNGKey(7), 3)
x = random.normal(kx, (10, 4))
w_true = random.normal(kw, (4,))
y = x @ w_true + 0.1 * random.normal(ky, (10,))
params = {"w": rnp.zeros(4), "b": rnp.float32(0.0)}


def loss(params, xi, yi):
    return 0.5 * (xi @ params["w"] + params["b"] - yi) ** 2


per_example = ri.jit(ri.vmap(ri.grad(loss), in_axes=(None, 0, 0)))(params, x, y)
norms = rnp.sqrt(per_example["w"] ** 2 @ rnp.ones(4) + per_example["b"] ** 2)
scale = rnp.minimum(1.0, 1.0 / norms)
clipped = ri.tree.map(
    lambda g: rnp.mean(g * scale.reshape((-1,) + (1,) * (g.ndim - 1)), 0), per_example
)
batch = ri.grad(lambda p: rnp.mean(ri.vmap(loss, (None, 0, 0))(p, x, y)))(params)
results = {
    "per_example": per_example,
    "norms": norms,
    "clipped_mean": clipped,
    "batch_grad": batch,
    "mean_matches_batch": rnp.allclose(rnp.mean(per_example["w"], 0), batch["w"], atol=1e-5),
}
print("per-example gradient norms", norms)
