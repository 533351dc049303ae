"""Stateful computations: state passed in and out explicitly, as in the JAX tutorial."""

from typing import NamedTuple

import jax
import jax.numpy as jnp


class Counter:
    """A counter that is *not* safe under jit (its state is hidden)."""

    def __init__(self):
        self.n = 0

    def count(self) -> int:
        self.n += 1
        return self.n

    def reset(self):
        self.n = 0


counter = Counter()
print([counter.count() for _ in range(3)])
counter.reset()
fast_count = jax.jit(counter.count)
print([int(fast_count()) for _ in range(3)])  # traced once: always 1


CounterState = int


class CounterV2:
    def count(self, n: CounterState) -> tuple[int, CounterState]:
        return n + 1, n + 1

    def reset(self) -> CounterState:
        return 0


counter = CounterV2()
state = counter.reset()
fast_count = jax.jit(counter.count)
for _ in range(3):
    value, state = fast_count(state)
    print(int(value))


class Params(NamedTuple):
    weight: jnp.ndarray
    bias: jnp.ndarray


def init(rng) -> Params:
    weights_key, bias_key = jax.random.split(rng)
    weight = jax.random.normal(weights_key, ())
    bias = jax.random.normal(bias_key, ())
    return Params(weight, bias)


def loss(params: Params, x: jnp.ndarray, y: jnp.ndarray) -> jnp.ndarray:
    pred = params.weight * x + params.bias
    return jnp.mean((pred - y) ** 2)


LEARNING_RATE = 0.005


@jax.jit
def update(params: Params, x: jnp.ndarray, y: jnp.ndarray) -> Params:
    grad = jax.grad(loss)(params, x, y)
    return jax.tree.map(lambda param, g: param - g * LEARNING_RATE, params, grad)


rng = jax.random.key(42)
x_rng, noise_rng = jax.random.split(rng)
xs = jax.random.normal(x_rng, (128, 1))
noise = jax.random.normal(noise_rng, (128, 1)) * 0.5
ys = xs * 3 - 1 + noise
params = init(rng)
for _ in range(500):
    params = update(params, xs, ys)
print(f"w: {params.weight:.4f}, b: {params.bias:.4f}")


def step(carry, x):
    total, count = carry
    return (total + x, count + 1), total / jnp.maximum(count, 1)


(total, count), running = jax.lax.scan(step, (0.0, 0), jnp.arange(1.0, 6.0))
print(total, count, running)
print(jax.lax.fori_loop(0, 10, lambda i, acc: acc + i * i, 0))
print(jax.lax.while_loop(lambda c: c[0] < 100, lambda c: (c[0] * 2, c[1] + 1), (1, 0)))
