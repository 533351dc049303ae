"""Gradient checkpointing: jax.checkpoint, its policies and the saved residuals."""

import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name, print_saved_residuals


def g(W, x):
    y = jnp.dot(W, x)
    return jnp.sin(y)


def f(W1, W2, W3, x):
    x = g(W1, x)
    x = g(W2, x)
    return g(W3, x)


W1 = jnp.linspace(0.0, 1.0, 25).reshape(5, 5)
W2 = jnp.linspace(1.0, -1.0, 25).reshape(5, 5) / 2
W3 = jnp.eye(5)
x = jnp.linspace(0.5, 1.5, 5)

print_saved_residuals(f, W1, W2, W3, x)


def f2(W1, W2, W3, x):
    return jax.checkpoint(g)(W3, jax.checkpoint(g)(W2, jax.checkpoint(g)(W1, x)))


print_saved_residuals(f2, W1, W2, W3, x)
print(
    jnp.allclose(
        jax.grad(lambda *a: f(*a).sum())(W1, W2, W3, x),
        jax.grad(lambda *a: f2(*a).sum())(W1, W2, W3, x),
    )
)

f3 = jax.checkpoint(f, policy=jax.checkpoint_policies.dots_with_no_batch_dims_saveable)
print_saved_residuals(f3, W1, W2, W3, x)


def predict(params, x):
    for i, (W, b) in enumerate(params):
        x = jnp.dot(W, x) + b
        x = checkpoint_name(jnp.tanh(x), f"layer{i}")
    return x


params = [(W1, jnp.ones(5)), (W2, jnp.zeros(5))]
policy = jax.checkpoint_policies.save_only_these_names("layer1")
predict_ckpt = jax.checkpoint(predict, policy=policy)
print_saved_residuals(lambda p, x: predict_ckpt(p, x).sum(), params, x)
grads = jax.grad(lambda p: predict_ckpt(p, x).sum())(params)
print(jax.tree.map(lambda a: round(float(a.sum()), 5), grads))


@jax.remat
def body(c, _):
    return jnp.sin(c) * 1.5, None


print(jax.grad(lambda c: jax.lax.scan(body, c, None, length=4)[0])(0.3))
