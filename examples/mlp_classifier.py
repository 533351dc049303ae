"""A two-layer MLP classifier trained with plain SGD on synthetic blobs.

Written against refimpl, as every example here: ``python examples/mlp_classifier.py``
(``REFIMPL_BACKEND=pjrt`` for the PJRT backend).
"""

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import nn, random


def make_data(key, n_per_class=32):
    centers = rnp.array([[2.0, 0.0], [-1.0, 1.7], [-1.0, -1.7]])
    keys = random.split(key, 3)
    xs = [c + 0.6 * random.normal(k, (n_per_class, 2)) for c, k in zip(centers, keys)]
    ys = [rnp.full((n_per_class,), i) for i in range(3)]
    return rnp.concatenate(xs), rnp.concatenate(ys)


def init_params(key, sizes=(2, 16, 3)):
    params = []
    for k, (m, n) in zip(random.split(key, len(sizes) - 1), zip(sizes[:-1], sizes[1:])):
        w = nn.initializers.glorot_normal()(k, (m, n))
        params.append({"w": w, "b": rnp.zeros(n)})
    return params


def predict(params, x):
    for layer in params[:-1]:
        x = nn.relu(x @ layer["w"] + layer["b"])
    return x @ params[-1]["w"] + params[-1]["b"]


def loss_fn(params, x, y):
    logp = nn.log_softmax(predict(params, x))
    return -rnp.mean(rnp.sum(logp * nn.one_hot(y, 3), axis=-1))


@ri.jit
def sgd_step(params, x, y):
    loss, grads = ri.value_and_grad(loss_fn)(params, x, y)
    params = ri.tree_util.tree_map(lambda p, g: p - 0.2 * g, params, grads)
    return params, loss


data_key, init_key = random.split(random.PRNGKey(0))
x, y = make_data(data_key)
params = init_params(init_key)
losses = []
for _ in range(60):
    params, loss = sgd_step(params, x, y)
    losses.append(loss)
accuracy = rnp.mean(rnp.argmax(predict(params, x), axis=-1) == y)

results = {
    "first_loss": losses[0],
    "final_loss": losses[-1],
    "accuracy": accuracy,
    "params": params,
}
print(f"loss {float(losses[0]):.4f} -> {float(losses[-1]):.4f}, accuracy {float(accuracy):.3f}")
