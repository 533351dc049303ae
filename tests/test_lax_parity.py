"""lax behaviours of JAX 0.10.2 found by JAX's own lax tests (issue 29, class 4),
each compared with JAX itself on both backends."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
from refimpl import lax

# --- binary operators broadcast size-1 dims (JAX's broadcasting_shape_rule) ---------------

_BROADCAST_SHAPES = [((3, 4), (3, 1)), ((3, 1), (3, 4)), ((1, 4), (3, 1)), ((2, 1, 4), (1, 3, 1))]


@pytest.mark.parametrize(
    "name",
    ["add", "sub", "mul", "div", "max", "min", "pow", "atan2", "nextafter", "eq", "lt", "rem"],
)
@pytest.mark.parametrize("shapes", _BROADCAST_SHAPES)
def test_binary_broadcasts_size_one_dims(backend, name, shapes, rng):
    x = rng.uniform(0.5, 2.0, shapes[0]).astype(np.float32)
    y = rng.uniform(0.5, 2.0, shapes[1]).astype(np.float32)
    want = getattr(jax.lax, name)(x, y)
    got = ri.jit(getattr(lax, name))(x, y)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(getattr(lax, name)(x, y)), np.asarray(want), rtol=1e-6)


def test_binary_broadcast_integer_and_shift(backend):
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    y = np.array([[1], [2], [3]], np.int32)
    for name in ["shift_left", "shift_right_logical", "bitwise_and", "bitwise_xor"]:
        np.testing.assert_array_equal(
            np.asarray(ri.jit(getattr(lax, name))(x, y)), np.asarray(getattr(jax.lax, name)(x, y))
        )


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "max", "pow", "atan2"])
def test_binary_broadcast_gradients(backend, name, rng):
    x = rng.uniform(0.5, 2.0, (3, 4)).astype(np.float32)
    y = rng.uniform(0.5, 2.0, (3, 1)).astype(np.float32)

    def f_jax(a, b):
        return jnp.sum(getattr(jax.lax, name)(a, b))

    def f_ri(a, b):
        return ri.numpy.sum(getattr(lax, name)(a, b))

    want = jax.grad(f_jax, (0, 1))(x, y)
    got = ri.jit(ri.grad(f_ri, (0, 1)))(x, y)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5)


def test_binary_broadcast_under_vmap(backend, rng):
    x = rng.normal(size=(2, 3, 1)).astype(np.float32)
    y = rng.normal(size=(3, 4)).astype(np.float32)
    for axes in [(0, None), (None, 0)]:
        a, b = (x, y) if axes == (0, None) else (y, x)
        want = jax.vmap(jax.lax.mul, axes)(a, b)
        got = ri.vmap(lax.mul, axes)(a, b)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


def test_binary_broadcast_errors():
    x = np.ones((3, 4), np.float32)
    with pytest.raises(TypeError, match="same number of dimensions"):
        lax.add(x, np.ones((4,), np.float32))
    with pytest.raises(TypeError, match="incompatible shapes for broadcasting"):
        lax.add(x, np.ones((3, 2), np.float32))
    # select_n and clamp do not broadcast (as JAX)
    with pytest.raises(TypeError):
        lax.select(np.ones((3, 1), bool), x, x)
    with pytest.raises(TypeError):
        lax.clamp(np.float32(0), x, np.ones((3, 1), np.float32))
