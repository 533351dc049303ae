"""A small variational autoencoder: Gaussian encoder, the reparametrisation
trick (z = mu + sigma * eps with eps ~ N(0, 1) from refimpl.random), Bernoulli
decoder, trained on the ELBO by gradient descent."""

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import nn, random

data_dim, hidden, latent = 8, 16, 2
k_data, k_init, k_train = random.split(random.PRNGKey(5), 3)
data = (random.uniform(k_data, (64, data_dim)) < 0.3).astype(rnp.float32)


def dense(key, m, n):
    return {"w": nn.initializers.glorot_uniform()(key, (m, n)), "b": rnp.zeros(n)}


ks = random.split(k_init, 4)
params = {
    "enc": dense(ks[0], data_dim, hidden),
    "mu": dense(ks[1], hidden, latent),
    "logvar": dense(ks[2], hidden, latent),
    "dec": dense(ks[3], latent, data_dim),
}


def apply(layer, x):
    return x @ layer["w"] + layer["b"]


def neg_elbo(params, x, key):
    h = nn.relu(apply(params["enc"], x))
    mu, logvar = apply(params["mu"], h), apply(params["logvar"], h)
    eps = random.normal(key, mu.shape)
    z = mu + rnp.exp(0.5 * logvar) * eps
    logits = apply(params["dec"], z)
    log_lik = rnp.sum(x * nn.log_sigmoid(logits) + (1 - x) * nn.log_sigmoid(-logits), -1)
    kl = 0.5 * rnp.sum(rnp.exp(logvar) + mu**2 - 1.0 - logvar, -1)
    return rnp.mean(kl - log_lik)


@ri.jit
def step(params, key):
    value, grads = ri.value_and_grad(neg_elbo)(params, data, key)
    return ri.tree.map(lambda p, g: p - 0.05 * g, params, grads), value


values = []
for key in random.split(k_train, 30):
    params, value = step(params, key)
    values.append(value)

results = {"elbo_start": -values[0], "elbo_end": -values[-1], "params": params}
print("negative ELBO", float(values[0]), "->", float(values[-1]))
