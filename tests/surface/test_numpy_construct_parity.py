"""jax.numpy's constructors and shape functions as JAX's tests/lax_numpy_test.py
(from testCumSumProd to testIsComplexObj) exercises them: ``eye`` and ``tri``
with a traced diagonal offset, ``tri``'s int32 offset; ``array`` of a masked
array, a Python buffer or a tracer. Compared with JAX 0.10.2
on both backends."""

from __future__ import annotations

import array as pyarray

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import jit as ri_jit
from tests.helpers.parity import assert_same_as_jax as _same

# --- eye and tri: the diagonal offset -------------------------------------------------------


@pytest.mark.parametrize("name", ["eye", "tri"])
@pytest.mark.parametrize("n, m", [(4, None), (4, 3), (0, 2), (3, 0)])
@pytest.mark.parametrize("k", [-4, -1, 0, 2, 5])
def test_traced_diagonal_offset(backend, name, n, m, k):
    def build(np_mod):
        return lambda k: getattr(np_mod, name)(n, M=m, k=k, dtype=np.int32)

    _same(ri_jit(build(rnp))(k), jax.jit(build(jnp))(k))
    _same(ri_jit(build(rnp))(np.int8(k)), jax.jit(build(jnp))(np.int8(k)))


@pytest.mark.parametrize("name", ["eye", "tri"])
def test_traced_offset_must_be_an_integer_scalar(name):
    for k in [np.float32(1.0), np.array([1, 2], np.int32)]:
        with pytest.raises(TypeError if name == "tri" else ValueError):
            jax.jit(lambda k: getattr(jnp, name)(3, k=k))(k)  # noqa: B023
        with pytest.raises(TypeError if name == "tri" else ValueError):
            ri_jit(lambda k: getattr(rnp, name)(3, k=k))(k)  # noqa: B023


@pytest.mark.parametrize("k", [2**33, -(2**33), 2**100])
def test_offset_out_of_int32(backend, k):
    # eye clips a Python int offset; tri makes it an int32 array and overflows
    _same(rnp.eye(3, k=k), jnp.eye(3, k=k))
    with pytest.raises(OverflowError):
        jnp.tri(3, k=k)
    with pytest.raises(OverflowError):
        rnp.tri(3, k=k)


def test_concrete_offset_errors():
    for k in [1.0, np.array([1])]:
        with pytest.raises(ValueError):
            jnp.eye(3, k=k)
        with pytest.raises(ValueError):
            rnp.eye(3, k=k)
    for k in [1.0, True, np.array([1])]:
        with pytest.raises(TypeError):
            jnp.tri(3, k=k)
        with pytest.raises(TypeError):
            rnp.tri(3, k=k)


# --- array/asarray inputs: masked arrays, buffers, tracers copied -----------------------------


def test_array_drops_the_mask_asarray_refuses(backend):
    masked = np.ma.array([1, 2], mask=[True, False])
    _same(rnp.array(masked), jnp.array(masked))
    for fn in [jnp.asarray, jax.jit(jnp.array), rnp.asarray, ri_jit(rnp.array)]:
        with pytest.raises(ValueError, match="masked arrays are not supported"):
            fn(masked)


@pytest.mark.parametrize("copy", [None, True, False])
def test_asarray_of_a_python_buffer(backend, copy):
    buffer = pyarray.array("l", [0, 1, 2, 3])
    _same(rnp.asarray(buffer, copy=copy), jnp.asarray(buffer, copy=copy))
    _same(rnp.array(buffer), jnp.array(buffer))


def test_array_copies_tracers():
    def outputs(lib, np_mod):
        f = lambda x: np_mod.array(x, copy=True)  # noqa: E731
        x, xdot = np_mod.ones(10), np_mod.ones(10)
        y, ydot = lib.jvp(f, (x,), (xdot,))
        z = lib.vmap(f)(x)
        return y is x, ydot is xdot, z is x

    assert outputs(ri, rnp) == outputs(jax, jnp) == (False, False, False)


def test_linspace_retstep_on_a_device(backend):
    for lib, np_mod in [(jax, jnp), (ri, rnp)]:
        device = lib.devices()[-1]
        samples, step = np_mod.linspace(5, 6, 7, retstep=True, dtype=np.float32, device=device)
        assert samples.devices() == {device}
        assert samples.shape == (7,) and samples.dtype == np.float32
        np.testing.assert_allclose(float(step), 1 / 6, rtol=1e-6)
