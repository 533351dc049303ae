"""An Elman RNN unrolled with lax.scan, fitted to predict the next value of a sine."""

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import lax, random

hidden = 8
k1, k2, k3 = random.split(random.PRNGKey(2), 3)
params = {
    "wx": 0.5 * random.normal(k1, (1, hidden)),
    "wh": 0.5 * random.normal(k2, (hidden, hidden)) / rnp.sqrt(hidden),
    "wo": 0.5 * random.normal(k3, (hidden, 1)),
    "b": rnp.zeros(hidden),
}
t = rnp.linspace(0.0, 4 * rnp.pi, 41)
series = rnp.sin(t)[:, None]
inputs, targets = series[:-1], series[1:]


def run_rnn(params, xs):
    def cell(h, x):
        h = rnp.tanh(x @ params["wx"] + h @ params["wh"] + params["b"])
        return h, h @ params["wo"]

    h_last, ys = lax.scan(cell, rnp.zeros(hidden), xs)
    return ys, h_last


def loss(params):
    ys, _ = run_rnn(params, inputs)
    return rnp.mean((ys - targets) ** 2)


@ri.jit
def train_step(params):
    value, grads = ri.value_and_grad(loss)(params)
    return ri.tree.map(lambda p, g: p - 0.1 * g, params, grads), value


history = []
for _ in range(40):
    params, value = train_step(params)
    history.append(value)

results = {
    "loss_start": history[0],
    "loss_end": history[-1],
    "params": params,
    "last_state": run_rnn(params, inputs)[1],
}
print("loss", float(history[0]), "->", float(history[-1]))
