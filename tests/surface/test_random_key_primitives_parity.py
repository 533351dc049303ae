"""JAX 0.10.2's key primitives as functions (``jax._src.prng.random_wrap``,
``random_unwrap``, ``random_bits``; random_test's KeyArrayTest calls them),
against JAX's own, live, on ref and pjrt: the key data, the bits, the types,
under jit and vmap, and the TypeError for raw key data."""

from __future__ import annotations

import jax
import jax.extend.random
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src.random import prng as jax_prng

import refimpl as ri
from refimpl.extend import random as ri_extend_random
from refimpl.random import _basic, _keys


def test_random_wrap_under_vmap_makes_keys_as_jax(backend):
    base = np.arange(6, dtype=np.uint32).reshape(3, 2)
    for in_axes, data in ((0, base), (1, base.T)):
        ours = ri.vmap(
            lambda b: _keys.random_wrap(b, impl=ri_extend_random.threefry_prng_impl),
            in_axes=in_axes,
        )(data)
        theirs = jax.vmap(
            lambda b: jax_prng.random_wrap(b, impl=jax.extend.random.threefry_prng_impl),
            in_axes=in_axes,
        )(data)
        assert isinstance(ours, ri.random.PRNGKeyArray)
        assert ours.shape == theirs.shape == (3,)
        np.testing.assert_array_equal(ri.random.key_data(ours), jax.random.key_data(theirs))


@pytest.mark.parametrize("how", ["eager", "jit", "vmap", "vmap_jit"])
def test_random_unwrap_is_the_key_data_as_jax(backend, how):
    def wrap(api, f):
        return {
            "eager": f,
            "jit": api.jit(f),
            "vmap": api.vmap(f),
            "vmap_jit": api.vmap(api.jit(f)),
        }[how]

    ours = wrap(ri, _keys.random_unwrap)(ri.random.split(ri.random.key(0), 3))
    theirs = wrap(jax, jax_prng.random_unwrap)(jax.random.split(jax.random.key(0), 3))
    np.testing.assert_array_equal(ours, theirs)
    assert np.asarray(ours).dtype == np.uint32


@pytest.mark.parametrize("how", ["eager", "jit", "vmap"])
def test_random_unwrap_of_raw_key_data_is_jaxs_type_error(backend, how):
    x = np.arange(12, dtype=np.uint32).reshape(3, 4)
    api_of = {"eager": lambda api, f: f, "jit": lambda api, f: api.jit(f)}
    api_of["vmap"] = lambda api, f: api.vmap(f)
    with pytest.raises(TypeError, match="random_unwrap takes key array operand, got") as ours:
        api_of[how](ri, _keys.random_unwrap)(ri.numpy.asarray(x))
    with pytest.raises(TypeError) as theirs:
        api_of[how](jax, jax_prng.random_unwrap)(jnp.asarray(x))
    assert str(ours.value).split(",")[0] == str(theirs.value).split(",")[0]


@pytest.mark.parametrize("bit_width", [8, 16, 32])
def test_random_bits_as_jax(backend, bit_width):
    ours = _basic.random_bits(ri.random.key(7), bit_width=bit_width, shape=(5,))
    theirs = jax_prng.random_bits(jax.random.key(7), bit_width=bit_width, shape=(5,))
    np.testing.assert_array_equal(ours, theirs)
    assert np.asarray(ours).dtype == np.asarray(theirs).dtype
    shape = ri.eval_shape(
        lambda k: _basic.random_bits(k, bit_width=bit_width, shape=(5,)), ri.random.key(7)
    )
    assert (shape.shape, shape.dtype) == ((5,), np.asarray(theirs).dtype)


def test_base_array_is_the_held_key_data_as_jax(backend):
    ours, theirs = ri.random.split(ri.random.key(3), 10), jax.random.split(jax.random.key(3), 10)
    np.testing.assert_array_equal(ours._base_array, theirs._base_array)
    assert ours._base_array.shape == theirs._base_array.shape
    assert len(ours.addressable_shards) == len(ours._base_array.addressable_shards)
    for keys in (ours, theirs):  # random_test's test_delete
        assert not keys.is_deleted()
        keys.delete()
        assert keys.is_deleted() and keys._base_array.is_deleted()
