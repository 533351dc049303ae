"""jax.Array's dispatch and placement queries refimpl arrays lacked (issue 29:
names of JAX 0.10.2's test files): ``is_ready``, ``copy_to_host_async``,
``on_device_size_in_bytes``, ``addressable_data``, ``global_shards`` and
``clone``, compared with JAX on both backends, eager and jit results."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from tests.helpers.parity import assert_same_as_jax

_X = np.arange(6, dtype=np.float32).reshape(2, 3)


def _made(api, np_, how):
    if how == "jit":
        return api.jit(lambda a: a * 2)(_X)
    return np_.asarray(_X) * 2


@pytest.mark.parametrize("how", ["eager", "jit"])
def test_ready_and_async_copy(backend, how):
    want, got = _made(jax, jnp, how), _made(ri, rnp, how)
    assert got.is_ready() is want.is_ready() is True
    assert got.copy_to_host_async() is want.copy_to_host_async() is None


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "bool", "int8", "complex64"])
def test_on_device_size_in_bytes(backend, dtype):
    want = jnp.ones((2, 3), dtype).on_device_size_in_bytes()
    assert rnp.ones((2, 3), dtype).on_device_size_in_bytes() == want
    assert ri.jit(lambda: rnp.ones((2, 3), dtype))().on_device_size_in_bytes() == want


def test_shards_and_their_data(backend):
    want, got = jnp.asarray(_X), rnp.asarray(_X)
    assert len(got.global_shards) == len(want.global_shards) == 1
    assert_same_as_jax(got.global_shards[0].data, want.global_shards[0].data)
    assert_same_as_jax(got.addressable_data(0), want.addressable_data(0))


def test_clone_is_a_new_array_of_the_same_value(backend):
    want, got = jnp.asarray(_X), rnp.asarray(_X)
    assert_same_as_jax(got.clone(), want.clone())
    assert got.clone() is not got
    clone = got.clone()
    got.delete()
    assert_same_as_jax(clone, want)  # the clone outlives the original


def test_to_device(backend):
    want = jnp.asarray(_X).to_device(jax.devices()[0])
    x = rnp.asarray(_X)
    got = x.to_device(x.device)
    assert_same_as_jax(got, want)
    assert got.device == x.device
    for device in ri.devices("ref")[:1] + ri.devices("pjrt")[:1]:  # across backends too
        moved = x.to_device(device)
        assert moved.device == device
        assert_same_as_jax(moved, want)
    sharding = ri.sharding.SingleDeviceSharding(x.device)
    assert_same_as_jax(x.to_device(sharding), want)
    with pytest.raises(NotImplementedError, match="stream"):
        jnp.asarray(_X).to_device(jax.devices()[0], stream=1)
    with pytest.raises(NotImplementedError, match="stream"):
        x.to_device(x.device, stream=1)


def test_deleted_array(backend):
    got = rnp.asarray(_X)
    got.delete()
    want = jnp.asarray(_X)
    want.delete()
    # (JAX 0.10.2 crashes the process for is_ready of a deleted array)
    for query in (want.copy_to_host_async, lambda: want.addressable_data(0)):
        with pytest.raises(RuntimeError, match="deleted"):
            query()
    with pytest.raises(RuntimeError, match="deleted"):
        got.addressable_data(0)
    for query in (got.copy_to_host_async, got.is_ready, got.on_device_size_in_bytes):
        with pytest.raises(RuntimeError, match="deleted"):
            query()
    with pytest.raises(RuntimeError, match="deleted"):
        got.addressable_data(0)
