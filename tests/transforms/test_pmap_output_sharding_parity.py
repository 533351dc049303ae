"""The sharding of pmap outputs, as JAX 0.10.2 (4 host devices, in a fresh
process) and refimpl's ref and pjrt backends answer it.

JAX 0.10.2 runs pmap as a shard_map under jit: a mapped output's
``.sharding`` is a ``NamedSharding`` over a 1-d mesh of the pmap's devices
(in its order) whose one axis is the pmap's ``axis_name`` (or
``'_internal_pmap_axis_name'``), split at ``out_axes``; its shards keep the
mapped axis with size 1 (index ``slice(m, m + 1)``). Each program is an
expression over ``pmap, jit, lax, np, devices``; ``describe`` reads the same
fields on both sides (device ids, not device objects).
"""

from __future__ import annotations

import numpy as np
import pytest

import refimpl as ri
from tests.helpers.jax_oracle import in_fresh_jax

SHARED = """
def _index(index):
    return [[i.start, i.stop, i.step] if isinstance(i, slice) else ["int", i] for i in index]

def describe(y):
    s = y.sharding
    shards = y.addressable_shards
    return {
        "sharding": type(s).__name__,
        "spec": [list(e) if isinstance(e, tuple) else e for e in s.spec],
        "mesh_axes": list(s.mesh.axis_names),
        "mesh_devices": [d.id for d in s.mesh.devices.flat],
        "shard_shapes": [list(x.data.shape) for x in shards],
        "shard_indices": [_index(x.index) for x in shards],
        "shard_devices": [x.device.id for x in shards],
        "replica_ids": [x.replica_id for x in shards],
        "shard_values": [np.asarray(x.data).tolist() for x in shards],
        "shard_shape": list(s.shard_shape(y.shape)),
        "replicated": [bool(y.is_fully_replicated), bool(s.is_fully_replicated)],
        "indices_map": [[d.id, _index(i)] for d, i in s.devices_indices_map(y.shape).items()],
        "num_devices": s.num_devices,
        "value": np.asarray(y).tolist(),
        "shape": list(y.shape),
    }

def leaves(v):
    return [x for e in v for x in leaves(e)] if isinstance(v, (list, tuple)) else [v]

def outcome(thunk):
    return [describe(v) for v in leaves(thunk())]
"""

X = "np.arange(8, dtype=np.float32).reshape(4, 2)"

PROGRAMS = {
    "named": f"pmap(lambda v: v * 2, 'i')({X})",
    "unnamed": f"pmap(lambda v: v * 2)({X})",
    "scalar_per_device": f"pmap(lambda v: v.sum(), 'i')({X})",
    "int_output": "pmap(lambda v: v + 1, 'i')(np.arange(4, dtype=np.int32))",
    "out_axes_1": f"pmap(lambda v: v * 2, 'i', out_axes=1)({X})",
    "out_axes_2_rank4": (
        "pmap(lambda v: v[None] * np.ones((3, 1, 1), np.float32), 'i', out_axes=2)"
        "(np.ones((4, 2, 5), np.float32))"
    ),
    "fewer_devices": f"pmap(lambda v: v * 2, 'i')({X}[:2])",
    "reversed_devices": f"pmap(lambda v: v * 2, 'i', devices=devices()[::-1])({X})",
    "pytree_outputs": f"pmap(lambda v: (v, v.sum(), [v + 1]), 'j')({X})",
    "fed_back_to_pmap": f"pmap(lambda v: v + 1, 'k')(pmap(lambda v: v * 2, 'i')({X}))",
    "with_psum": f"pmap(lambda v: lax.psum(v, 'i') + v, 'i')({X})",
    "out_axes_none": f"pmap(lambda v: lax.psum(v, 'i'), 'i', out_axes=None)({X})",
    "out_axes_none_unnamed": (
        f"pmap(lambda v, w: w * 2, in_axes=(0, None), out_axes=None)({X}, np.ones(3))"
    ),
    "out_axes_none_in_a_tree": (
        f"pmap(lambda v: (lax.pmax(v, 'i'), v), 'i', out_axes=(None, 1))({X})"
    ),
    "out_axes_none_fed_back": (
        f"pmap(lambda v, w: v + w, 'i', in_axes=(0, None))"
        f"({X}, pmap(lambda v: lax.psum(v, 'i'), 'i', out_axes=None)({X}))"
    ),
}


@pytest.fixture(scope="module")
def jax_outcomes():
    body = (
        'import os\nos.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"\n'
        "import numpy as np\nfrom jax import pmap, jit, lax, devices\n" + SHARED + "result = {\n"
    )
    body += "".join(f"    {k!r}: outcome(lambda: {v}),\n" for k, v in PROGRAMS.items())
    return in_fresh_jax(body + "}\n")


pytestmark = pytest.mark.usefixtures("four_ref_devices")  # tests/conftest.py


def _scope() -> dict:
    scope = {"np": np, "pmap": ri.pmap, "jit": ri.jit, "lax": ri.lax, "devices": ri.devices}
    exec(SHARED, scope)  # noqa: S102 - our own helper source, shared with the oracle
    return scope


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_pmap_output_sharding_as_jax(jax_outcomes, backend, name):
    got = eval(f"outcome(lambda: {PROGRAMS[name]})", _scope())  # noqa: S307 - our own table
    assert got == jax_outcomes[name]


def test_sharding_equals_a_named_sharding_built_by_hand(backend):
    y = ri.pmap(lambda v: v * 2, "i")(np.ones((4, 2), np.float32))
    devices = ri.devices()[:4]
    mesh = ri.sharding.Mesh(np.array(devices, dtype=object), ("i",))
    assert y.sharding == ri.sharding.NamedSharding(mesh, ri.sharding.PartitionSpec("i"))
    assert isinstance(y.sharding, ri.sharding.Sharding)
    assert not hasattr(ri.sharding, "PmapSharding")  # as jax.sharding in 0.10.2


def test_cpp_fast_path_outputs_carry_the_axis_name():
    # a cached signature's outputs are made in C++: same sharding as the first call's
    f = ri.pmap(lambda v: v + 1, "data", backend="pjrt")
    x = np.zeros((4, 3), np.float32)
    first = f(x)
    before = f._fast_stats()["hits"]
    again = f(x)
    assert f._fast_stats()["hits"] == before + 1
    for y in (first, again):
        assert y.sharding.mesh.axis_names == ("data",)
        assert y.sharding.spec == ri.sharding.PartitionSpec("data")
        assert [s.data.shape for s in y.addressable_shards] == [(1, 3)] * 4


@pytest.mark.parametrize("backend_name", ["ref", "pjrt"])
def test_shard_blocks_share_the_arrays_storage(backend_name):
    # a shard's data is the device's block itself: deleting it deletes the array's
    y = ri.pmap(lambda v: v * 2, "i", backend=backend_name)(np.ones((4, 2), np.float32))
    block = y.addressable_shards[1].data
    assert block.shape == (1, 2)
    np.testing.assert_array_equal(np.asarray(block), [[2.0, 2.0]])
    if backend_name == "pjrt":
        assert block.unsafe_buffer_pointer() == y._shard_arrays()[1].unsafe_buffer_pointer()
    block.delete()
    assert y.is_deleted()


def test_a_block_feeds_jit_and_eager_ops(backend):
    y = ri.pmap(lambda v: v * 2, "i")(np.arange(8, dtype=np.float32).reshape(4, 2))
    block = y.addressable_shards[2].data
    np.testing.assert_array_equal(np.asarray(ri.jit(lambda a: a + 1)(block)), [[9.0, 11.0]])
    np.testing.assert_array_equal(np.asarray(block * 2), [[16.0, 20.0]])
    np.testing.assert_array_equal(np.asarray(block.reshape(2)), [8.0, 10.0])


def test_a_replicated_output_fed_back_moves_no_data():
    # out_axes=None: one copy per device, passed where it is to in_axes=None (C++ and Python)
    from refimpl.transforms.pmap import transfer_count

    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    total = ri.pmap(lambda v: lax_psum(v), "i", out_axes=None, backend="pjrt")(x)
    add = ri.pmap(lambda v, w: v + w, "i", in_axes=(0, None), backend="pjrt")
    add(x, total)  # the miss: compiles, and transfers x
    for _ in range(2):
        before = transfer_count()
        out = add(ri.pmap(lambda v: v, "i", backend="pjrt")(x), total)
        assert transfer_count() - before == 4  # x's four slices only
    np.testing.assert_array_equal(np.asarray(out), x + x.sum(0))
    assert add._fast_stats()["hits"] >= 1


def lax_psum(v):
    return ri.lax.psum(v, "i")


def test_a_replicated_output_in_eager_ops_jit_and_device_put(backend):
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    total = ri.pmap(lambda v: ri.lax.psum(v, "i"), "i", out_axes=None)(x)
    want = x.sum(0)
    np.testing.assert_array_equal(np.asarray(total * 2), want * 2)
    np.testing.assert_array_equal(np.asarray(ri.jit(lambda a: a + 1)(total)), want + 1)
    np.testing.assert_array_equal(np.asarray(ri.device_put(total, ri.devices()[2])), want)
    assert float(total.sum()) == float(want.sum())
    total.delete()
    assert total.is_deleted()
