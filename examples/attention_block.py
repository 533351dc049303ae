"""A transformer block: multi-head self-attention and an MLP, each with a
residual connection and layer normalization; forward pass and its gradient."""

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import nn, random

seq, d_model, heads = 6, 16, 4
d_head = d_model // heads
keys = random.split(random.key(3), 6)
init = nn.initializers.lecun_normal()
params = {
    "wq": init(keys[0], (d_model, d_model)),
    "wk": init(keys[1], (d_model, d_model)),
    "wv": init(keys[2], (d_model, d_model)),
    "wo": init(keys[3], (d_model, d_model)),
    "w1": nn.initializers.he_uniform()(keys[4], (d_model, 4 * d_model)),
    "w2": init(keys[5], (4 * d_model, d_model)),
}
x = random.normal(random.key(4), (seq, d_model))


def layer_norm(x):
    return nn.standardize(x, axis=-1, epsilon=1e-6)


def attention(params, x):
    def split_heads(m):
        return m.reshape(seq, heads, d_head).transpose(1, 0, 2)

    q, k, v = (split_heads(x @ params[n]) for n in ("wq", "wk", "wv"))
    scores = rnp.einsum("hqd,hkd->hqk", q, k) / rnp.sqrt(d_head)
    mask = rnp.tril(rnp.ones((seq, seq), dtype=bool))
    scores = rnp.where(mask, scores, -1e9)
    weights = nn.softmax(scores, axis=-1)
    out = rnp.einsum("hqk,hkd->hqd", weights, v).transpose(1, 0, 2).reshape(seq, d_model)
    return out @ params["wo"], weights


def block(params, x):
    attended, weights = attention(params, layer_norm(x))
    x = x + attended
    x = x + nn.gelu(layer_norm(x) @ params["w1"]) @ params["w2"]
    return x, weights


out, weights = ri.jit(block)(params, x)
grads = ri.grad(lambda p: rnp.sum(block(p, x)[0] ** 2))(params)
results = {
    "out": out,
    "weights": weights,
    "grad_norms": {k: rnp.sqrt(rnp.sum(g**2)) for k, g in grads.items()},
}
print("output mean", float(out.mean()), "attention row sums", weights.sum(-1)[0])
