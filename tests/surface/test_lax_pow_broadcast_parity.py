"""lax.pow with an integer exponent and lax.broadcast_in_dim with out-of-order
broadcast_dimensions, as JAX 0.10.2 (issue 29), on both backends."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
from refimpl import lax

# --- pow(inexact, integer) ---------------------------------------------------------------

_BASE = np.array([0.0, 1.5, -2.0, 3.0, 0.5], np.float32)
_EXPONENT = np.array([0, 2, -1, 3, -2], np.int32)


@pytest.mark.parametrize("y_dtype", [np.int8, np.int32, np.uint8, np.int64])
@pytest.mark.parametrize("x_dtype", [np.float16, np.float32, np.float64, np.complex64])
def test_pow_integer_exponent_values(backend, x_dtype, y_dtype):
    x, y = _BASE.astype(x_dtype), np.abs(_EXPONENT).astype(y_dtype)
    want = jax.lax.pow(x, y)
    for got in (lax.pow(x, y), ri.jit(lax.pow)(x, y)):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


def test_pow_integer_exponent_negative_and_broadcast(backend):
    x = _BASE.reshape(5, 1)
    y = _EXPONENT.reshape(1, 5)
    want = jax.lax.pow(x, y)
    got = ri.jit(lax.pow)(x, y)
    assert got.shape == want.shape == (5, 5)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


def test_pow_python_int_exponent_is_weak(backend):
    want = jax.lax.pow(_BASE, 2)
    got = lax.pow(_BASE, 2)
    assert got.dtype == want.dtype and got.aval.weak_type == want.aval.weak_type
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    assert lax.pow(np.float32(2.0), 3).aval.weak_type == jax.lax.pow(np.float32(2.0), 3).weak_type


def test_pow_integer_exponent_derivatives(backend):
    def loss(mod, L):
        return lambda x: (
            mod.numpy.sum(L.pow(x, _EXPONENT)) if mod is ri else jnp.sum(L.pow(x, _EXPONENT))
        )

    want = jax.grad(loss(jax, jax.lax))(_BASE)
    got = ri.grad(loss(ri, lax))(_BASE)
    got_jit = ri.jit(ri.grad(loss(ri, lax)))(_BASE)
    # the exponent-0 entry at x = 0 is 0, not 0 * 0^-1 = nan
    assert np.asarray(want)[0] == 0.0
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(got_jit), np.asarray(want), rtol=1e-6)
    fwd = ri.jacfwd(lambda x: lax.pow(x, 3))(np.float32(2.0))
    np.testing.assert_allclose(float(fwd), float(jax.jacfwd(lambda x: jax.lax.pow(x, 3))(2.0)))
    vm = ri.vmap(lax.pow)(_BASE, _EXPONENT)
    np.testing.assert_allclose(np.asarray(vm), np.asarray(jax.vmap(jax.lax.pow)(_BASE, _EXPONENT)))


@pytest.mark.parametrize(
    "x, y",
    [
        (np.ones(2, np.int32), np.ones(2, np.int32)),  # an integer base
        (np.ones(2, np.float32), np.ones(2, np.float16)),  # two inexact dtypes that differ
        (np.ones(2, np.float32), np.ones(2, bool)),  # a bool exponent
    ],
)
def test_pow_rejects_as_jax(x, y):
    with pytest.raises(TypeError):
        jax.lax.pow(x, y)
    with pytest.raises(TypeError, match="pow"):
        lax.pow(x, y)


# --- broadcast_in_dim with broadcast_dimensions out of order ----------------------------

_TRANSPOSING = [
    ((2, 3), (3, 2), (1, 0)),
    ((2, 3), (3, 4, 2), (2, 0)),
    ((2, 1), (3, 4, 2), (2, 0)),
    ((2, 3, 1), (5, 3, 2, 4), (2, 1, 3)),
]


@pytest.mark.parametrize("in_shape, out_shape, dims", _TRANSPOSING)
def test_broadcast_in_dim_out_of_order_transposes(backend, rng, in_shape, out_shape, dims):
    x = rng.standard_normal(in_shape).astype(np.float32)
    want = np.asarray(jax.lax.broadcast_in_dim(x, out_shape, dims))
    for got in (
        lax.broadcast_in_dim(x, out_shape, dims),
        ri.jit(lambda a: lax.broadcast_in_dim(a, out_shape, dims))(x),
    ):
        np.testing.assert_array_equal(np.asarray(got), want)
    batch = rng.standard_normal((4, *in_shape)).astype(np.float32)
    got_v = ri.vmap(lambda a: lax.broadcast_in_dim(a, out_shape, dims), 1)(np.moveaxis(batch, 0, 1))
    want_v = jax.vmap(lambda a: jax.lax.broadcast_in_dim(a, out_shape, dims))(batch)
    np.testing.assert_array_equal(np.asarray(got_v), np.asarray(want_v))


@pytest.mark.parametrize("in_shape, out_shape, dims", _TRANSPOSING)
def test_broadcast_in_dim_out_of_order_gradient(backend, rng, in_shape, out_shape, dims):
    # JAX 0.10.2's own transpose rule fails here (a cotangent of the sorted
    # shape), so the expected value is the gradient of the same map spelled as
    # a transpose and then a broadcast with sorted dims
    x = rng.standard_normal(in_shape).astype(np.float32)
    weights = rng.standard_normal(out_shape).astype(np.float32)
    order = sorted(range(len(dims)), key=lambda i: dims[i])
    want = jax.grad(
        lambda a: jnp.sum(
            jax.lax.broadcast_in_dim(a.transpose(order), out_shape, sorted(dims)) * weights
        )
    )(x)
    f = lambda a: ri.numpy.sum(lax.broadcast_in_dim(a, out_shape, dims) * weights)  # noqa: E731
    for got in (ri.grad(f)(x), ri.jit(ri.grad(f))(x)):
        assert got.shape == x.shape
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5)


@pytest.mark.parametrize(
    "in_shape, out_shape, dims, message",
    [
        ((2,), (2, 2), (0, 1), "broadcast_dimensions must have length equal to operand ndim"),
        ((2, 2), (2,), (0, 1), "target broadcast shape must have equal or higher rank"),
        ((2,), (2, 3), (2,), "broadcast_dimensions must be a subset of output dimensions"),
        ((2,), (3,), (0,), "operand dimension sizes must either be 1, or be equal"),
        ((2, 2), (2, 2), (1, 1), "broadcast_dimensions must not contain duplicates"),
    ],
)
def test_broadcast_in_dim_shape_errors_as_jax(in_shape, out_shape, dims, message):
    x = np.ones(in_shape, np.float32)
    with pytest.raises(TypeError, match=message):
        jax.lax.broadcast_in_dim(x, out_shape, dims)
    with pytest.raises(TypeError, match=message):
        lax.broadcast_in_dim(x, out_shape, dims)
