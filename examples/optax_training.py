"""A small regression network trained with optax: a JAX program, unchanged.

It is written against JAX and optax, as their users write it. Run it on
refimpl with

    python -m refimpl.as_jax examples/optax_training.py
    python -m refimpl.as_jax --backend pjrt examples/optax_training.py

(``import jax`` then resolves to refimpl, inside optax too); ``python
examples/optax_training.py`` runs it on JAX itself. tools/run_examples.py
runs it both ways and compares its ``results``.
"""

import jax
import jax.numpy as jnp
import optax

key = jax.random.key(0)
k_x, k_noise, k1, k2 = jax.random.split(key, 4)
x = jax.random.uniform(k_x, (128, 1), minval=-2.0, maxval=2.0)
y = jnp.sin(2.0 * x) + 0.05 * jax.random.normal(k_noise, x.shape)


def init_params(hidden=32):
    return {
        "w1": jax.random.normal(k1, (1, hidden)) * jnp.sqrt(2.0),
        "b1": jnp.zeros(hidden),
        "w2": jax.random.normal(k2, (hidden, 1)) / jnp.sqrt(hidden),
        "b2": jnp.zeros(1),
    }


def predict(params, x):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return h @ params["w2"] + params["b2"]


def loss_fn(params, x, y):
    return optax.losses.squared_error(predict(params, x), y).mean()


schedule = optax.warmup_cosine_decay_schedule(
    init_value=0.0, peak_value=0.03, warmup_steps=20, decay_steps=300
)
optimizer = optax.chain(
    optax.clip_by_global_norm(1.0),
    optax.adamw(learning_rate=schedule, weight_decay=1e-4),
)


@jax.jit
def train_step(params, opt_state, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss


params = init_params()
opt_state = optimizer.init(params)
losses = []
for step in range(300):
    params, opt_state, loss = train_step(params, opt_state, x, y)
    losses.append(loss)
    if step % 50 == 0:
        print(f"step {step:3d}  loss {float(loss):.5f}")
print(f"final loss {float(loss_fn(params, x, y)):.5f}")

results = {"losses": jnp.stack(losses), "params": params}
