"""Arrays over devices of other processes, simulated on the reference backend (issue 33).

``ri.config.update("ref_num_processes", P)`` splits the ``ref_num_devices``
reference devices into P contiguous groups by ``process_index``; this
process is process 0. What is simulated: only device ownership. The other
processes do not exist, so their devices hold nothing; a ``MeshArray`` over
them keeps the blocks of this process's devices only, and anything that
needs the global value (reading it, the reference route of ``jit``) raises
JAX 0.10.2's error, as a real multi-process JAX program does. What is not
simulated: the other processes' blocks, collectives, a multi-process PJRT
client (the CPU plugin has none; docs/semantics.md "Beyond one process").
"""

from __future__ import annotations

import numpy as np
import pytest

import refimpl as ri

_FETCH = "Fetching value for `jax.Array` that spans non-addressable"


@pytest.fixture
def two_processes():
    old = ri.config.ref_num_devices, ri.config.ref_num_processes, ri.config.backend
    ri.config.update("ref_num_devices", 4)
    ri.config.update("ref_num_processes", 2)
    ri.config.update("backend", "ref")
    yield ri.make_mesh((4,), ("x",), devices=ri.devices("ref"))
    ri.config.update("ref_num_processes", old[1])
    ri.config.update("ref_num_devices", old[0])
    ri.config.update("backend", old[2])


def test_device_queries_see_both_processes(two_processes):
    devices = ri.devices("ref")
    assert [d.process_index for d in devices] == [0, 0, 1, 1]
    assert ri.device_count("ref") == 4 and ri.local_device_count("ref") == 2
    assert ri.process_count("ref") == 2 and ri.process_index("ref") == 0
    assert ri.local_devices(backend="ref") == devices[:2]
    assert ri.local_devices(process_index=1, backend="ref") == devices[2:]
    with pytest.raises(ValueError, match="process_index 2 does not exist"):
        ri.local_devices(process_index=2, backend="ref")


def test_sharded_array_keeps_only_local_blocks(two_processes):
    value = np.arange(8.0, dtype=np.float32)
    sharding = ri.NamedSharding(two_processes, ri.P("x"))
    assert not sharding.is_fully_addressable
    assert sharding.addressable_devices == set(ri.devices("ref")[:2])
    x = ri.device_put(value, sharding)
    assert not x.is_fully_addressable
    shards = x.addressable_shards
    assert [s.device.id for s in shards] == [0, 1]
    for s in shards:
        np.testing.assert_array_equal(np.asarray(s.data), value[s.index])
    remote = [s for s in x.global_shards if s.data is None]
    assert [s.device.id for s in remote] == [2, 3]
    assert [s.index for s in remote] == [(slice(4, 6),), (slice(6, 8),)]
    assert repr(x) == "Array(shape=(8,), dtype=float32)"  # JAX's repr: no values
    for read in (np.asarray, lambda a: a.tolist(), str):
        with pytest.raises(RuntimeError, match="non-addressable"):
            read(x)
    with pytest.raises(RuntimeError, match="non-addressable"):
        ri.jit(lambda a: a * 2)(x)  # the reference route needs the global value


def test_replicated_array_is_readable(two_processes):
    # this process's blocks cover the whole value: JAX reads it too
    x = ri.device_put(np.arange(4.0), ri.NamedSharding(two_processes, ri.P()))
    assert not x.is_fully_addressable
    np.testing.assert_array_equal(np.asarray(x), np.arange(4.0))


def test_from_callback_and_single_device_arrays_take_local_devices(two_processes):
    value = np.arange(8.0, dtype=np.float32)
    sharding = ri.NamedSharding(two_processes, ri.P("x"))
    asked = []

    def block(index):
        asked.append(index)
        return value[index]

    x = ri.make_array_from_callback((8,), sharding, block)
    assert asked == [(slice(0, 2),), (slice(2, 4),)]  # never the other process's blocks
    parts = [s.data for s in x.addressable_shards]
    y = ri.make_array_from_single_device_arrays((8,), sharding, parts)
    assert [s.device.id for s in y.addressable_shards] == [0, 1]


def test_no_data_on_another_process_device(two_processes):
    with pytest.raises(ValueError, match="belongs to process 1"):
        ri.device_put(1.0, ri.devices("ref")[3])


def test_settings_are_checked():
    old = ri.config.ref_num_devices
    try:
        ri.config.update("ref_num_devices", 2)
        with pytest.raises(ValueError, match="ref_num_processes must be >= 1"):
            ri.config.update("ref_num_processes", 0)
        ri.config.update("ref_num_processes", 3)
        with pytest.raises(ValueError, match="needs at least as many devices"):
            ri.devices("ref")
    finally:
        ri.config.update("ref_num_processes", 1)
        ri.config.update("ref_num_devices", old)
