"""A small classifier with jax.example_libraries.stax and optimizers."""

import jax
import jax.numpy as jnp
from jax import random
from jax.example_libraries import optimizers, stax

init_random_params, predict = stax.serial(
    stax.Dense(16), stax.Relu, stax.Dense(16), stax.Tanh, stax.Dense(3), stax.LogSoftmax
)
rng = random.PRNGKey(0)
_, init_params = init_random_params(rng, (-1, 4))
print(jax.tree.map(jnp.shape, init_params))

inputs = random.normal(random.PRNGKey(1), (24, 4))
labels = jax.nn.one_hot(jnp.argmax(inputs[:, :3], axis=1), 3)


def loss(params, batch):
    x, y = batch
    return -jnp.mean(jnp.sum(predict(params, x) * y, axis=1))


def accuracy(params, batch):
    x, y = batch
    return jnp.mean(jnp.argmax(predict(params, x), axis=1) == jnp.argmax(y, axis=1))


opt_init, opt_update, get_params = optimizers.momentum(0.1, mass=0.9)


@jax.jit
def update(i, opt_state, batch):
    params = get_params(opt_state)
    return opt_update(i, jax.grad(loss)(params, batch), opt_state)


opt_state = opt_init(init_params)
for i in range(30):
    opt_state = update(i, opt_state, (inputs, labels))
params = get_params(opt_state)
print(
    f"loss {loss(params, (inputs, labels)):.5f} accuracy {accuracy(params, (inputs, labels)):.3f}"
)

opt_init, opt_update, get_params = optimizers.adam(optimizers.exponential_decay(0.01, 10, 0.5))
state = opt_init(init_params)
for i in range(5):
    state = opt_update(i, jax.grad(loss)(get_params(state), (inputs, labels)), state)
print(f"adam loss {loss(get_params(state), (inputs, labels)):.5f}")
