"""A small variational autoencoder: Gaussian encoder, the reparametrisation
trick (z = mu + sigma * eps with eps ~ N(0, 1) from jax.random), Bernoulli
decoder, trained on the ELBO by gradient descent."""

import jax
import jax.numpy as jnp
from jax import nn, random

data_dim, hidden, latent = 8, 16, 2
k_data, k_init, k_train = random.split(random.PRNGKey(5), 3)
data = (random.uniform(k_data, (64, data_dim)) < 0.3).astype(jnp.float32)


def dense(key, m, n):
    return {"w": nn.initializers.glorot_uniform()(key, (m, n)), "b": jnp.zeros(n)}


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
    z = mu + jnp.exp(0.5 * logvar) * eps
    logits = apply(params["dec"], z)
    log_lik = jnp.sum(x * nn.log_sigmoid(logits) + (1 - x) * nn.log_sigmoid(-logits), -1)
    kl = 0.5 * jnp.sum(jnp.exp(logvar) + mu**2 - 1.0 - logvar, -1)
    return jnp.mean(kl - log_lik)


@jax.jit
def step(params, key):
    value, grads = jax.value_and_grad(neg_elbo)(params, data, key)
    return jax.tree.map(lambda p, g: p - 0.05 * g, params, grads), value


values = []
for key in random.split(k_train, 30):
    params, value = step(params, key)
    values.append(value)

results = {"elbo_start": -values[0], "elbo_end": -values[-1], "params": params}
print("negative ELBO", float(values[0]), "->", float(values[-1]))
