"""jit, static arguments, structured control flow and the classic sharp bits."""

from functools import partial

import jax
import jax.numpy as jnp
from jax import lax


def selu(x, alpha=1.67, lmbda=1.05):
    return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)


x = jnp.arange(5.0)
print(selu(x), jax.jit(selu)(x))


@partial(jax.jit, static_argnums=(1,))
def f(x, neg):
    return -x if neg else x


print(f(1, True), f(1, False))


@partial(jax.jit, static_argnames=["n"])
def g(x, n):
    i = 0
    while i < n:
        i += 1
    return x + i


print(g(10, n=3))
print(lax.cond(True, lambda x: x + 1, lambda x: x - 1, 5))
print(lax.switch(2, [lambda x: x, lambda x: x * 2, lambda x: x * 3], 4.0))
print(jnp.arange(10)[11], jnp.arange(10.0).at[11].get(mode="fill", fill_value=jnp.nan))
print(jnp.arange(10).at[jnp.array([0, 12])].add(5))
print(
    jnp.float32(3) / 2, jnp.int32(7) // 2, jnp.array([1, 2]).dtype, jnp.uint8(250) + jnp.uint8(10)
)
print(jnp.add(1, 1.0), jnp.array(1.5).astype(jnp.int32), jnp.bfloat16(1.5) * 2)
print(jax.make_jaxpr(lambda x: x * 2)(1.0) is not None, jax.eval_shape(jnp.sum, x).shape)
print(jnp.linalg.norm(jnp.ones(4)), jnp.linalg.inv(jnp.eye(2) * 2.0))
print(jax.vmap(jnp.dot)(jnp.ones((3, 2)), jnp.ones((3, 2))))
print(jax.hessian(lambda x: jnp.sum(x**3))(jnp.array([1.0, 2.0])))
print(jax.jacfwd(jnp.sin)(jnp.array([0.0, 1.0])), jax.jacrev(jnp.cos)(jnp.array([0.5])))
