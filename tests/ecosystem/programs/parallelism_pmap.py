"""Data parallelism with jax.pmap and collectives, over 4 CPU devices."""

import jax

jax.config.update("jax_num_cpu_devices", 4)

import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

n = 4
print(jax.device_count() >= n)

x = jnp.arange(5.0)
w = jnp.array([2.0, 3.0, 4.0])


def convolve(x, w):
    output = []
    for i in range(1, len(x) - 1):
        output.append(jnp.dot(x[i - 1 : i + 2], w))
    return jnp.array(output)


xs = jnp.arange(5.0 * n).reshape(-1, 5)
ws = jnp.stack([w] * n)
print(jax.pmap(convolve, devices=jax.devices()[:n])(xs, ws))
print(jax.pmap(convolve, in_axes=(0, None), devices=jax.devices()[:n])(xs, w))


def normalized_convolution(x, w):
    output = convolve(x, w)
    return output / lax.psum(output, axis_name="p")


print(
    jax.pmap(normalized_convolution, axis_name="p", in_axes=(0, None), devices=jax.devices()[:n])(
        xs, w
    )
)


def loss(params, x, y):
    return jnp.mean((x * params["w"] + params["b"] - y) ** 2)


def update(params, x, y):
    grads = jax.grad(loss)(params, x, y)
    grads = lax.pmean(grads, axis_name="batch")
    return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)


params = {"w": jnp.float32(0.0), "b": jnp.float32(0.0)}
replicated = jax.tree.map(lambda p: jnp.stack([p] * n), params)
data_x = jnp.linspace(-1.0, 1.0, 4 * n).reshape(n, 4)
data_y = 3.0 * data_x - 1.0
p_update = jax.pmap(update, axis_name="batch", devices=jax.devices()[:n])
for _ in range(20):
    replicated = p_update(replicated, data_x, data_y)
print(jax.tree.map(lambda p: p[0], replicated))
print(
    jax.pmap(
        lambda v: (lax.axis_index("i"), lax.pmax(v, "i"), lax.all_gather(v, "i")),
        axis_name="i",
        devices=jax.devices()[:n],
    )(jnp.arange(float(n)))
)
