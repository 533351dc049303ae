"""Creation functions and array conversions as JAX's tests/lax_numpy_test.py
(second half) uses them: ``geomspace`` with ``start``/``stop`` of different
shapes on every axis and its complex path (NumPy 2's, as JAX), and
``Array.tobytes`` (concrete arrays; a ConcretizationTypeError under jit);
``arange`` with a zero step (ZeroDivisionError, as JAX and NumPy);
``meshgrid(copy=False)`` (ValueError, as JAX).
Compared with JAX 0.10.2 on both backends."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from refimpl.errors import ConcretizationTypeError

_RNG = np.random.RandomState(3)


def _same(got, want, rtol=2e-6):
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.aval.weak_type == want.aval.weak_type
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol, atol=1e-6)


_SHAPES = [((2, 2), (2,)), ((), (2, 2)), ((2,), (2, 2)), ((3, 1), (2,))]


@pytest.mark.parametrize("shapes", _SHAPES, ids=str)
@pytest.mark.parametrize("axis", [0, 1, -1, -2])
@pytest.mark.parametrize("dtype", [None, np.complex64, np.int32])
def test_geomspace_broadcasts_start_and_stop(backend, shapes, axis, dtype):
    start = (np.abs(_RNG.randn(*shapes[0])) + 0.5).astype(np.float32)
    stop = (_RNG.rand(*shapes[1]) * 4 + 2).astype(np.float32)
    kwargs = dict(num=5, endpoint=axis % 2 == 0, dtype=dtype, axis=axis)
    _same(rnp.geomspace(start, stop, **kwargs), jnp.geomspace(start, stop, **kwargs))


@pytest.mark.parametrize(
    "start, stop", [(1 + 1j, -100 + 2j), (1j, 100j), (-1.0, -100.0), (2, 2000)], ids=str
)
def test_geomspace_path(backend, start, stop):
    _same(rnp.geomspace(start, stop, 4), jnp.geomspace(start, stop, 4), rtol=1e-5)


def test_geomspace_under_jit_and_grad(backend):
    a, b = np.ones(2, np.float32), np.full((3, 2), 5.0, np.float32)
    fn = lambda m: lambda x, y: m.geomspace(x, y, 4, axis=-1)  # noqa: E731
    _same(ri.jit(fn(rnp))(a, b), jax.jit(fn(jnp))(a, b))
    g = lambda m, grad: grad(lambda x: m.geomspace(x, 10.0, 4).sum())  # noqa: E731
    np.testing.assert_allclose(g(rnp, ri.grad)(2.0), g(jnp, jax.grad)(2.0), rtol=1e-5)


@pytest.mark.parametrize("order", ["C", "F", "A"])
def test_tobytes(backend, order):
    v = np.arange(12, dtype=np.int32).reshape(3, 4)
    assert rnp.asarray(v).tobytes(order) == jnp.asarray(v).tobytes(order) == v.tobytes(order)
    assert rnp.asarray(v.astype(np.float16)).tobytes() == v.astype(np.float16).tobytes()


def test_tobytes_of_a_tracer(backend):
    v = np.arange(4, dtype=np.int32)
    with pytest.raises(ConcretizationTypeError, match="tobytes"):
        ri.jit(lambda a: a.tobytes())(v)


@pytest.mark.parametrize("args", [(0, 5, 0), (1.0, 2.0, 0.0), (3, 0, 0)], ids=str)
def test_arange_zero_step(backend, args):
    with pytest.raises(ZeroDivisionError):
        jnp.arange(*args)
    with pytest.raises(ZeroDivisionError):
        rnp.arange(*args)


def test_meshgrid_copy_false(backend):
    with pytest.raises(ValueError, match="copy=True"):
        jnp.meshgrid(np.arange(3), copy=False)
    with pytest.raises(ValueError, match="copy=True"):
        rnp.meshgrid(np.arange(3), copy=False)
    _same(rnp.meshgrid(np.arange(3), copy=True)[0], jnp.meshgrid(np.arange(3), copy=True)[0])
