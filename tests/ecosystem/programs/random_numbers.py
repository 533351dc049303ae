"""Pseudorandom numbers: explicit keys, splitting, and the distributions."""

import jax
import jax.numpy as jnp
from jax import random

key = random.key(42)
print(random.normal(key))
print(random.normal(key))  # the same key gives the same number

for i in range(3):
    key, subkey = random.split(key)
    print(f"draw {i}: {random.normal(subkey):.6f}")

key = random.PRNGKey(0)
key, *subkeys = random.split(key, 4)
print(jnp.stack([random.uniform(k, (2,)) for k in subkeys]))
print(random.key_data(random.fold_in(random.key(1), 7)))

k = random.key(2024)
k1, k2, k3, k4, k5, k6 = random.split(k, 6)
print(random.randint(k1, (5,), 0, 10))
print(random.bernoulli(k2, 0.3, (6,)))
print(random.categorical(k3, jnp.log(jnp.array([0.2, 0.5, 0.3])), shape=(8,)))
print(random.permutation(k4, 6))
print(random.choice(k5, 10, (3,), replace=False))
print(random.gamma(k6, 2.0, (3,)), random.beta(k6, 2.0, 3.0, (2,)))
print(random.truncated_normal(k1, -1.0, 1.0, (3,)), random.exponential(k2, (2,)))
print(random.multivariate_normal(k3, jnp.zeros(2), jnp.array([[1.0, 0.5], [0.5, 2.0]]), (2,)))


@jax.jit
def monte_carlo_pi(key):
    xy = random.uniform(key, (100_000, 2))
    return 4.0 * jnp.mean(jnp.sum(xy**2, axis=1) <= 1.0)


print("pi ~", monte_carlo_pi(random.key(3)))
print(jax.vmap(lambda k: random.normal(k, (2,)))(random.split(random.key(5), 3)))
