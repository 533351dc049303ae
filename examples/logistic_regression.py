"""Logistic regression by gradient descent on a synthetic linearly separable set."""

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import random

key = random.key(1)
kx, kw, kn = random.split(key, 3)
true_w = rnp.array([1.5, -2.0, 0.5])
x = random.normal(kx, (200, 3))
logits = x @ true_w + 0.3
y = (logits + 0.5 * random.logistic(kn, (200,)) > 0).astype(rnp.float32)


def nll(params):
    w, b = params
    z = x @ w + b
    # log(1 + e^z) - y z, written with the stable log_sigmoid
    return -rnp.mean(y * ri.nn.log_sigmoid(z) + (1 - y) * ri.nn.log_sigmoid(-z))


params = (rnp.zeros(3), rnp.float32(0.0))
step = ri.jit(lambda p: ri.tree.map(lambda a, g: a - 0.5 * g, p, ri.grad(nll)(p)))
for _ in range(200):
    params = step(params)

w, b = params
pred = ri.nn.sigmoid(x @ w + b) > 0.5
results = {"w": w, "b": b, "loss": nll(params), "accuracy": rnp.mean(pred == (y > 0))}
print("w", w, "b", b, "loss", results["loss"], "accuracy", results["accuracy"])
