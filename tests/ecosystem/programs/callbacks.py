"""Host callbacks: jax.pure_callback and jax.debug.callback/print, as in the tutorial."""

import jax
import jax.numpy as jnp
import numpy as np


@jax.jit
def f(x):
    y = x + 1
    jax.debug.print("intermediate value: {}", y)
    return y * 2


print(f(2.0))


def log_value(x):
    print("log_value:", np.round(np.asarray(x), 4))


@jax.jit
def g(x):
    jax.debug.callback(log_value, x)
    return x


g(jnp.arange(3.0))


def f_host(x):
    return np.sin(x)  # a NumPy function: runs on the host


@jax.jit
def h(x):
    result_shape = jax.ShapeDtypeStruct(x.shape, x.dtype)
    return jax.pure_callback(f_host, result_shape, x, vmap_method="sequential")


x = jnp.arange(5.0)
print(h(x))
print(jax.vmap(h)(jnp.arange(6.0).reshape(2, 3)))


@jax.custom_jvp
def np_sin(x):
    return jax.pure_callback(
        np.sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x, vmap_method="expand_dims"
    )


@np_sin.defjvp
def np_sin_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    cos = jax.pure_callback(
        np.cos, jax.ShapeDtypeStruct(x.shape, x.dtype), x, vmap_method="expand_dims"
    )
    return np_sin(x), cos * x_dot


print(jax.grad(lambda x: np_sin(x).sum())(x))
print(jax.eval_shape(h, jax.ShapeDtypeStruct((7,), jnp.float32)))
