"""Training with optax: a chained optimizer, a schedule, and a loss from optax.losses."""

import jax
import jax.numpy as jnp
import optax

key = jax.random.key(0)
k1, k2 = jax.random.split(key)
x = jax.random.normal(k1, (64, 3))
true_w = jnp.array([[1.0], [-2.0], [0.5]])
y = x @ true_w + 0.1 * jax.random.normal(k2, (64, 1))
params = {"w": jnp.zeros((3, 1)), "b": jnp.zeros((1,))}


def loss_fn(params, x, y):
    pred = x @ params["w"] + params["b"]
    return optax.losses.l2_loss(pred, y).mean()


schedule = optax.warmup_cosine_decay_schedule(0.0, 0.1, 5, 50)
optimizer = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(schedule, weight_decay=1e-4))
opt_state = optimizer.init(params)


@jax.jit
def step(params, opt_state, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss


for i in range(50):
    params, opt_state, loss = step(params, opt_state, x, y)
    if i % 10 == 0:
        print(f"step {i}: loss {loss:.6f}")
print(jnp.round(params["w"].ravel(), 4), jnp.round(params["b"], 4))
logits = jnp.array([[2.0, 1.0, 0.1], [0.5, 2.5, 0.2]])
print(optax.softmax_cross_entropy_with_integer_labels(logits, jnp.array([0, 1])))
print(optax.sigmoid_binary_cross_entropy(jnp.array([0.5, -1.0]), jnp.array([1.0, 0.0])))
print(optax.global_norm(params), optax.tree_utils.tree_l2_norm(params))
