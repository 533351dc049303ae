"""pmap and collectives across devices against jax.pmap on 4 host devices.

JAX runs in a subprocess (``tests/helpers/pmap_cases.py``) with
``XLA_FLAGS=--xla_force_host_platform_device_count=4`` set before it imports
jax; refimpl runs the same case code on the reference backend (4 virtual
devices) and on pjrt (the CPU plugin's 4 devices).
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import refimpl as ri
from refimpl import lax
from refimpl.transforms.jit import Signature
from tests.helpers import pmap_cases
from tests.helpers.jax_oracle import results_on_four_devices

BACKENDS = ["ref", "pjrt"]


@pytest.fixture(scope="module")
def oracle(tmp_path_factory):
    return results_on_four_devices("pmap_cases.py", tmp_path_factory.mktemp("pmap") / "jax.pkl")


pytestmark = pytest.mark.usefixtures("four_ref_devices")  # tests/conftest.py


def _on(backend: str, build):
    """``build(ri)`` with pmap's backend fixed (the cases call ``lib.pmap``)."""

    class Lib:
        def __getattr__(self, name):
            return getattr(ri, name)

        @staticmethod
        def pmap(fun, *args, **kwargs):
            return ri.pmap(fun, *args, backend=backend, **kwargs)

    return build(Lib())


def _check(got_tree, expected, rtol=2e-6, atol=2e-6):
    got = [np.asarray(v) for v in ri.tree_util.tree_leaves(got_tree)]
    assert not isinstance(expected, str), f"jax raised {expected}"
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.shape == e.shape
        assert g.dtype == e.dtype, (g.dtype, e.dtype)
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(pmap_cases.CASES))
def test_case_against_jax_pmap(oracle, name, backend):
    build, args = pmap_cases.CASES[name]
    _check(_on(backend, build)(*args), oracle[name], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_nested_2x2_against_shard_map(oracle, backend):
    body = pmap_cases.nested_body(ri)
    f = ri.pmap(ri.pmap(body, "j", backend=backend), "i", backend=backend)
    _check(f(pmap_cases.NESTED_X), oracle["nested_2x2"], rtol=1e-5, atol=1e-5)
    if backend == "pjrt":  # one executable over 2 x 2 = 4 replicas
        (entry,) = _entries(f)
        assert sorted(entry.executable.device_indices) == [0, 1, 2, 3]
        assert entry.inner == 2


def _entries(pmapped):
    """The compiled pjrt entries in a pmap's signature cache."""
    return pmapped._entries()


def _count(text: str, op: str) -> int:
    return text.count(f'"stablehlo.{op}"') + text.count(f"stablehlo.{op} ")


def test_tree_collectives_reduce_one_buffer_per_dtype():
    # One rendezvous per element type instead of one per leaf (see
    # collectives._all_reduce_lowering); the values are checked against JAX above.
    f = ri.pmap(lambda a, b, i, j: lax.psum((a, {"b": b}, i, j, a * 2), "i"), "i", backend="pjrt")
    f(pmap_cases.X423, pmap_cases.X44, pmap_cases.I4, pmap_cases.I4)
    (entry,) = _entries(f)
    assert _count(str(entry.module), "all_reduce") == 2  # float32, int32
    big = ri.pmap(lambda a, b: lax.psum((a, b), "i"), "i", backend="pjrt")
    big(pmap_cases.XBIG, pmap_cases.XBIG)  # too large to copy: one variadic all_reduce
    (entry,) = _entries(big)
    text = str(entry.module)
    assert _count(text, "all_reduce") == 1 and "stablehlo.concatenate" not in text


def test_independent_all_reduces_are_merged_dependent_ones_are_not():
    # pjrt pmap lowering holds all-reduces back until their results are needed
    # and merges those held together (collectives.combine_all_reduces): the
    # data-parallel step's pmean(grads) and pmean(loss) are one all_reduce.
    build, args = pmap_cases.CASES["train_step"]
    step = _on("pjrt", build)
    step(*args)
    (entry,) = _entries(step)
    assert _count(str(entry.module), "all_reduce") == 1

    def chained(x):
        y = x + 1
        a = lax.psum(x, "i")
        b = lax.psum(a * 2, "i")  # needs a: its own op
        c = lax.pmax(x, "i")  # another reduction: its own op
        d = lax.psum(y, "i")  # y is ready where a is: moved up and merged with a
        return a, b, c, d

    x = pmap_cases.X423
    results = {bk: ri.pmap(chained, "i", backend=bk) for bk in BACKENDS}
    got = {bk: f(x) for bk, f in results.items()}
    (entry,) = _entries(results["pjrt"])
    assert _count(str(entry.module), "all_reduce") == 3  # a with d; b; c
    for g, r in zip(got["pjrt"], got["ref"], strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(r), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(got["ref"][1]), 2 * 4 * x.sum(0) * np.ones_like(x))
    np.testing.assert_allclose(np.asarray(got["ref"][3]), (x + 1).sum(0) * np.ones_like(x))


@pytest.mark.parametrize("backend", BACKENDS)
def test_psum_grad_is_8x(backend):
    x = np.arange(4.0, dtype=np.float32)
    out = ri.pmap(ri.grad(lambda x: lax.psum(x**2, "i")), "i", backend=backend)(x)
    np.testing.assert_array_equal(np.asarray(out), 8 * x)


@pytest.mark.parametrize("backend", BACKENDS)
def test_train_step_equals_single_device_step_on_the_whole_batch(backend):
    build, (params, x, y) = pmap_cases.CASES["train_step"]
    new, value = _on(backend, build)(params, x, y)

    def loss(params, x, y):
        w, b = params
        return ri.numpy.mean((ri.numpy.tanh(x @ w + b) - y) ** 2)

    whole_value, grads = ri.value_and_grad(loss)(params, x.reshape(20, 3), y.reshape(20, 2))
    whole_new = [p - 0.1 * g for p, g in zip(params, grads, strict=True)]
    np.testing.assert_allclose(np.asarray(value), np.asarray(whole_value), rtol=1e-6)
    for a, b in zip(new, whole_new, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "groups",
    [[[0, 1], [2]], [[0, 1], [1, 2, 3]], [[0, 1], [2, 4]], [[0, 0], [2, 3]]],
)
def test_bad_axis_index_groups_are_value_errors(backend, groups):
    f = ri.pmap(lambda x: lax.psum(x, "i", axis_index_groups=groups), "i", backend=backend)
    with pytest.raises(ValueError, match="axis_index_groups must cover range"):
        f(np.ones(4, np.float32))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op", ["all_gather", "psum_scatter"])
def test_uneven_groups_need_equal_sizes_outside_all_reduces(backend, op):
    # psum/pmax/pmin/pmean take groups of different sizes (pmap_cases'
    # *_groups_uneven); these shape their result by the group size
    f = ri.pmap(
        lambda x: getattr(lax, op)(x, "i", axis_index_groups=[[0, 1, 2], [3]]), "i", backend=backend
    )
    with pytest.raises(ValueError, match="groups of equal size"):
        f(np.ones((4, 3), np.float32))


def test_groups_under_vmap_are_not_implemented():
    f = ri.vmap(lambda x: lax.psum(x, "i", axis_index_groups=[[0, 1], [2, 3]]), axis_name="i")
    with pytest.raises(NotImplementedError, match="axis_index_groups"):
        f(np.ones(4, np.float32))


@pytest.mark.parametrize("backend", BACKENDS)
def test_out_axes_none_must_be_unmapped(backend):
    f = ri.pmap(lambda x: x * 2, "i", out_axes=None, backend=backend)
    with pytest.raises(ValueError, match="out_axes"):
        f(np.ones(4, np.float32))
    g = ri.pmap(lambda x: lax.psum(x, "i", axis_index_groups=[[0, 1], [2, 3]]), "i",
                out_axes=None, backend=backend)  # fmt: skip
    with pytest.raises(ValueError, match="out_axes"):
        g(np.ones(4, np.float32))


@pytest.mark.parametrize("backend", BACKENDS)
def test_too_many_devices_and_inconsistent_sizes(backend):
    with pytest.raises(ValueError, match="requires 5 logical devices"):
        ri.pmap(lambda x: x, backend=backend)(np.ones(5, np.float32))
    with pytest.raises(ValueError, match="pmap got inconsistent sizes"):
        ri.pmap(lambda x, y: x + y, backend=backend)(np.ones(4), np.ones(3))
    with pytest.raises(ValueError, match="requires 8 logical devices"):
        ri.pmap(ri.pmap(lambda x: x, backend=backend), backend=backend)(np.ones((2, 4)))


def test_sharded_output_and_feedback_moves_no_data():
    from refimpl.transforms import pmap as pmap_module

    devices = ri.devices("pjrt")[:4]
    f = ri.pmap(lambda x: x * 2 + lax.axis_index("i"), "i", backend="pjrt")
    y = f(np.arange(8.0, dtype=np.float32).reshape(4, 2))
    assert y.devices() == set(devices)
    assert y.shape == (4, 2)
    shards = y.addressable_shards
    assert [s.device for s in shards] == devices
    for m, shard in enumerate(shards):  # JAX 0.10.2's blocks: the mapped axis kept, size 1
        np.testing.assert_array_equal(np.asarray(shard.data), np.asarray(y)[m : m + 1])
        assert shard.index[0] == slice(m, m + 1)
    assert y.sharding.device_set == set(devices)
    before = pmap_module.transfer_count()
    z = f(y)
    assert pmap_module.transfer_count() == before  # the shards were used where they are
    expected = (np.arange(8.0).reshape(4, 2) * 2 + np.arange(4)[:, None]) * 2 + np.arange(4)[
        :, None
    ]
    before = pmap_module.transfer_count()
    np.testing.assert_array_equal(np.asarray(z), expected)
    assert pmap_module.transfer_count() == before + 4  # the gather reads every shard
    before = pmap_module.transfer_count()
    f(np.ones((4, 2), np.float32))
    assert pmap_module.transfer_count() == before + 4  # a host argument: one piece per device


def test_donation_per_shard():
    f = ri.pmap(lambda x: x + 1, "i", backend="pjrt", donate_argnums=0)
    y = ri.pmap(lambda x: x * 1, "i", backend="pjrt")(np.zeros((4, 3), np.float32))
    pointers = [s.data.unsafe_buffer_pointer() for s in y.addressable_shards]
    z = f(y)
    assert y.is_deleted()
    with pytest.raises(RuntimeError):
        np.asarray(y)
    assert [s.data.unsafe_buffer_pointer() for s in z.addressable_shards] == pointers
    np.testing.assert_array_equal(np.asarray(z), np.ones((4, 3)))


def test_one_executable_for_four_replicas():
    from refimpl.backends.pjrt import lowering

    f = ri.pmap(lambda x: lax.psum(x, "i"), "i", backend="pjrt")
    f(np.ones(4, np.float32))
    (entry,) = _entries(f)
    text = lowering.module_text(entry.module)
    assert "mhlo.num_replicas = 4" in text
    assert "stablehlo.all_reduce" in text and "replica_groups" in text
    assert sorted(entry.executable.device_indices) == [0, 1, 2, 3]


def test_pmap_under_jit_and_grad_of_pmap_keep_unmapped_inputs():
    w = np.float32(1.5)
    x = np.arange(4.0, dtype=np.float32)

    def loss(w, x):
        return ri.pmap(lambda w, x: lax.psum(w * x, "i"), "i", in_axes=(None, 0), backend="ref")(
            w, x
        ).sum()

    np.testing.assert_allclose(np.asarray(ri.grad(loss)(w, x)), 4 * x.sum())
    np.testing.assert_allclose(np.asarray(ri.jit(loss)(w, x)), 4 * w * x.sum())


def test_static_devices_kwargs_and_sharded_arrays_in_eager_code():
    f = ri.pmap(lambda x: x * 2, "i", backend="pjrt")
    y = f(np.arange(8.0, dtype=np.float32).reshape(4, 2))
    np.testing.assert_array_equal(np.asarray(y + 1), np.arange(8.0).reshape(4, 2) * 2 + 1)
    np.testing.assert_array_equal(np.asarray(y[1]), [4.0, 6.0])
    assert float(ri.jit(lambda a: a.sum(), backend="pjrt")(y)) == 56.0
    two = ri.devices("pjrt")[2:]
    out = ri.pmap(lambda x: x, "i", backend="pjrt", devices=two)(np.ones((2, 1), np.float32))
    assert out.devices() == set(two)
    with pytest.raises(ValueError, match="only 2 devices were passed to pmap"):
        ri.pmap(lambda x: x, backend="pjrt", devices=two)(np.ones((3, 1)))
    g = ri.pmap(lambda x, y=None: x + y, backend="pjrt")
    np.testing.assert_array_equal(np.asarray(g(np.ones(4), y=np.ones(4))), 2 * np.ones(4))


def test_collective_under_a_device_dependent_cond_is_an_error_on_pjrt():
    # XLA would wait forever (and abort the process after 40 s) for the devices
    # that took the other branch; JAX does not check
    def body(x):
        return lax.cond(x.sum() > 0, lambda v: lax.psum(v, "i"), lambda v: -v, x)

    f = ri.pmap(body, "i", backend="pjrt")
    with pytest.raises(ValueError, match="predicate may differ between devices has a collective"):
        f(np.ones((4, 2), np.float32))


def test_ref_outputs_are_sharded_over_the_virtual_devices():
    f = ri.pmap(lambda x: (x * 2, lax.psum(x, "i")), "i", backend="ref", out_axes=(0, None))
    y, s = f(np.arange(8.0, dtype=np.float32).reshape(4, 2))
    devices = ri.devices("ref")[:4]
    assert [shard.device for shard in y.addressable_shards] == devices
    assert y.devices() == set(devices)
    np.testing.assert_array_equal(np.asarray(y), np.arange(8.0).reshape(4, 2) * 2)
    np.testing.assert_array_equal(np.asarray(s), [12.0, 16.0])
    np.testing.assert_array_equal(np.asarray(f(y)[0]), np.arange(8.0).reshape(4, 2) * 4)


@pytest.mark.slow
def test_many_calls_in_flight_do_not_deadlock_xla_collectives():
    # Before pmap waited for its previous collective launch, 3,000 calls without
    # waiting made XLA's CPU all-reduce wait for threads busy with another
    # launch, and XLA aborted the process after 40 s (jax.pmap does the same).
    script = (
        "import numpy as np, refimpl as ri\n"
        "f = ri.pmap(lambda x: ri.lax.psum(x, 'i') * 1e-3 + x, 'i', backend='pjrt')\n"
        "x = f(np.ones((4, 8), np.float32))\n"
        "for _ in range(3000):\n"
        "    x = f(x)\n"
        "print(float(np.asarray(x)[0, 0]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    expected = 1.0
    for _ in range(3001):
        expected = np.float32(expected) * np.float32(4e-3) + np.float32(expected)
    np.testing.assert_allclose(float(done.stdout.split()[-1]), expected, rtol=1e-3)


def test_one_array_type_for_pmap_outputs_and_device_put():
    from refimpl.transforms.pmap import ShardedArray

    d = ri.devices("pjrt")[0]
    x = np.arange(8.0, dtype=np.float32).reshape(4, 2)
    y = ri.pmap(lambda v: v * 2, "i", backend="pjrt")(x)
    assert type(y) is type(ri.device_put(x, d))
    r = ri.pmap(lambda v: v * 2, "i", backend="ref")(x)
    assert isinstance(r, ShardedArray)
    assert isinstance(y, ri.Array) and isinstance(r, ri.Array)
    # one shard: a 1-device array of that same type sharing the buffer
    (piece,) = [s.data for s in y.addressable_shards[1:2]]
    assert type(piece) is type(y) and piece.devices() == {ri.devices("pjrt")[1]}
    np.testing.assert_array_equal(np.asarray(piece), x[1:2] * 2)
    with pytest.raises(ValueError, match="sharded over 4 devices"):
        y.unsafe_buffer_pointer()
    assert y.block_until_ready() is y
    np.testing.assert_array_equal(np.asarray(ri.device_put(y, d)), x * 2)  # gathered
    y.delete()
    assert y.is_deleted() and piece.is_deleted()
    with pytest.raises(RuntimeError, match="deleted"):
        np.asarray(y)


def test_out_axes_1_gathers_like_numpy_stack():
    x = np.arange(24.0, dtype=np.float32).reshape(4, 3, 2)
    f = ri.pmap(lambda v: (v + 1, v.sum()), "i", backend="pjrt", out_axes=(1, 0))
    y, s = f(x)
    assert y.shape == (3, 4, 2) and y.sharding.spec == ri.sharding.PartitionSpec(None, "i")
    np.testing.assert_array_equal(np.asarray(y), np.stack(list(x + 1), axis=1))
    np.testing.assert_array_equal(np.asarray(s), x.sum(axis=(1, 2)))
    np.testing.assert_array_equal(np.asarray(y.addressable_shards[2].data), (x[2] + 1)[:, None])


def test_cached_pmap_calls_run_in_cpp_and_fed_back_outputs_move_no_data():
    from refimpl.backends.pjrt.runtime import native_module
    from refimpl.transforms import pmap as pmap_module

    f = ri.pmap(lambda x, w: lax.psum(x * w, "i") + x, "i", in_axes=(0, None), backend="pjrt")
    w = ri.device_put(np.float32(0.5), ri.devices("pjrt")[0])  # a 1-device array, replicated
    x = f(np.ones((4, 3), np.float32), w)
    x = f(x, w)  # the fed-back signature: compiled (Python cache hit) and cached in C++
    native_module()._clear_constant_cache()
    before, stats = pmap_module.transfer_count(), f._fast_stats()
    for _ in range(5):
        x = f(x, np.float32(0.5))  # a NumPy scalar: cached constant buffers per device
    after = f._fast_stats()
    assert after["hits"] - stats["hits"] == 5
    assert after["misses"] - stats["misses"] == 1 and after["slow"] == stats["slow"] == 0
    assert pmap_module.transfer_count() - before == 4  # the scalar, once per device
    expected = np.ones((4, 3), np.float32)
    for _ in range(7):
        expected = expected.sum(axis=0, keepdims=True) * np.float32(0.5) + expected
    np.testing.assert_allclose(np.asarray(x), expected, rtol=1e-6)


def test_fast_path_donation_per_shard_and_a_failed_call_changes_nothing():
    f = ri.pmap(lambda x, y: (x + y, y * 2), "i", backend="pjrt", donate_argnums=0)
    make = ri.pmap(lambda v: v * 1, "i", backend="pjrt")
    a, b = make(np.zeros((4, 3), np.float32)), make(np.ones((4, 3), np.float32))
    f(make(np.zeros((4, 3), np.float32)), b)  # compile and cache the signature
    pointers = [s.data.unsafe_buffer_pointer() for s in a.addressable_shards]
    before = f._fast_stats()["hits"]
    out, twice = f(a, b)
    assert f._fast_stats()["hits"] == before + 1
    assert a.is_deleted() and not b.is_deleted()
    assert [s.data.unsafe_buffer_pointer() for s in out.addressable_shards] == pointers
    np.testing.assert_array_equal(np.asarray(out), np.ones((4, 3)))
    np.testing.assert_array_equal(np.asarray(twice), 2 * np.ones((4, 3)))
    c = make(np.zeros((4, 3), np.float32))
    b.delete()
    with pytest.raises(RuntimeError, match="deleted"):
        f(c, b)
    assert not c.is_deleted()  # the failed call donated nothing
    np.testing.assert_array_equal(np.asarray(c), np.zeros((4, 3)))


def test_fast_pmap_pytrees_kwargs_and_statics():
    f = ri.pmap(
        lambda p, k, *, scale: {"a": p[0] * k + scale, "b": p[1].sum()},
        "i",
        backend="pjrt",
        static_broadcasted_argnums=1,
    )
    p = (np.arange(8.0, dtype=np.float32).reshape(4, 2), np.ones((4, 5), np.float32))
    scale = np.full((4,), 3.0, np.float32)
    for _ in range(2):
        out = f(p, 2.0, scale=scale)
        np.testing.assert_array_equal(np.asarray(out["a"]), p[0] * 2 + 3)
        np.testing.assert_array_equal(np.asarray(out["b"]), np.full(4, 5.0))
    out = f(p, 5.0, scale=scale)  # another static: a new signature
    np.testing.assert_array_equal(np.asarray(out["a"]), p[0] * 5 + 3)
    assert f._fast_stats()["slow"] == 0


def test_pmap_signature_is_jits_with_named_mapped_fields():
    # Statics compare by type and value, as jit's (1 and True are equal and
    # hash alike, but are two signatures: jax.pmap 0.10.2 gives [2.] then [1.]).
    f = ri.pmap(
        lambda x, flag: x + (1.0 if flag is True else 2.0),
        "i",
        static_broadcasted_argnums=1,
        backend="pjrt",
    )
    x = np.zeros(4, np.float32)
    np.testing.assert_array_equal(np.asarray(f(x, 1)), np.full(4, 2.0))
    np.testing.assert_array_equal(np.asarray(f(x, True)), np.full(4, 1.0))
    assert len(_entries(f)) == 2
    # the signature: jit's type, pmap's fields by name (an out_axes list is hashable there)
    g = ri.pmap(lambda a, b: [a, b.sum(1)], "i", out_axes=[0, 0], backend="pjrt")
    call = g._prepare((np.ones((4, 2), np.float32), np.ones((4, 3), np.float32)), {})
    signature = g._signature(call)
    assert type(signature) is Signature
    mapped = signature.mapped
    assert mapped.axis_name == "i" and mapped.size == 4 and mapped.in_axes == (0, 0)
    assert mapped.devices == tuple(ri.devices("pjrt")[:4])
    assert hash(signature) == hash(g._signature(call))
    assert [a.shape for a in signature.avals] == [(4, 2), (4, 3)]


def test_shards_elsewhere_are_gathered_and_resplit():
    x = np.arange(8.0, dtype=np.float32).reshape(4, 2)
    y = ri.pmap(lambda v: v + 1, "i", backend="pjrt")(x)  # over devices 0..3
    backwards = ri.devices("pjrt")[::-1]
    g = ri.pmap(lambda v: v * 10, "i", backend="pjrt", devices=backwards)
    out = g(y)  # other device order: the Python path reads y and splits it again
    assert [s.device for s in out.addressable_shards] == backwards
    np.testing.assert_array_equal(np.asarray(out), (x + 1) * 10)
    h = ri.pmap(lambda v, w: v + w.sum(), "i", in_axes=(0, None), backend="pjrt")
    for _ in range(2):  # y replicated: gathered, then transferred whole to every device
        np.testing.assert_array_equal(np.asarray(h(x, y)), x + (x + 1).sum())
    assert h._fast_stats()["slow"] == 2 and h._fast_stats()["hits"] == 0  # (a "slow" entry)


def test_a_shard_deleted_through_its_view_is_the_deleted_array_error():
    f = ri.pmap(lambda v: v + 1, "i", backend="pjrt")
    y = f(np.zeros((4, 2), np.float32))
    f(y)  # the fed-back signature is cached in C++
    y.addressable_shards[2].data.delete()
    assert y.is_deleted()
    with pytest.raises(RuntimeError, match="deleted"):
        f(y)


def test_a_fast_path_hit_runs_no_python_code():
    import sys

    f = ri.pmap(lambda x, w: lax.psum(x * w, "i") * 0.5 + x, "i", in_axes=(0, None), backend="pjrt")
    x = f(np.ones((4, 3), np.float32), 2.0)
    x = f(x, 2.0)  # the fed-back signature, cached in C++
    host = np.ones((4, 3), np.float32)
    f(host, 2.0)
    calls = []

    def profile(frame, event, arg):
        if event == "call":  # a Python function starting
            calls.append(frame.f_code.co_qualname)

    sys.setprofile(profile)
    try:
        y = f(x, 2.0)
        z = f(host, 2.0)
    finally:
        sys.setprofile(None)
    assert calls == []
    np.testing.assert_allclose(np.asarray(z), np.full((4, 3), 5.0))
    np.testing.assert_allclose(np.asarray(y), np.asarray(x) * 5)


def test_two_threads_calling_a_pmap_with_collectives():
    import threading

    f = ri.pmap(lambda x: lax.psum(x, "i") * 0.25, "i", backend="pjrt")
    start = f(np.ones((4, 2), np.float32))
    results, errors = {}, []

    def work(k):
        try:
            x = start
            for _ in range(100):
                x = f(x)  # no waiting: launches with collectives are serialized in C++
            results[k] = np.asarray(x)
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors and len(results) == 2
    for value in results.values():
        np.testing.assert_allclose(value, np.ones((4, 2)))


class _Boxed:
    """A pytree node whose unflatten can be made to fail (after execute)."""

    fail = False

    def __init__(self, value):
        self.value = value


ri.tree_util.register_pytree_node(
    _Boxed,
    lambda b: ((b.value,), None),
    lambda _, children: _Boxed._make(children[0]),
)


def _make_boxed(value):
    if _Boxed.fail:
        raise RuntimeError("unflatten failed")
    return _Boxed(value)


_Boxed._make = staticmethod(_make_boxed)


def test_failed_output_unflatten_after_execute_donates_nothing():
    f = ri.pmap(lambda x: _Boxed(x + 1), "i", backend="pjrt", donate_argnums=0)
    make = ri.pmap(lambda v: v * 1, "i", backend="pjrt")
    f(make(np.zeros((4, 3), np.float32)))  # compile and cache the signature
    a = make(np.zeros((4, 3), np.float32))
    _Boxed.fail = True
    try:
        with pytest.raises(RuntimeError, match="unflatten failed"):
            f(a)
    finally:
        _Boxed.fail = False
    assert not a.is_deleted()
    np.testing.assert_array_equal(np.asarray(a), np.zeros((4, 3)))
    out = f(a)
    assert a.is_deleted()
    np.testing.assert_array_equal(np.asarray(out.value), np.ones((4, 3)))


def test_fed_back_loop_keeps_the_live_buffer_count_flat():
    from refimpl.backends.pjrt.runtime import native_module

    count = native_module().live_buffer_count
    f = ri.pmap(lambda x, w: lax.psum(x * w, "i") * 0.25, "i", in_axes=(0, None), backend="pjrt")
    x = f(np.ones((4, 2), np.float32), 1.0)
    x = f(x, 1.0)
    x.block_until_ready()
    before = count()
    for _ in range(50):
        x = f(x, 1.0)
    x.block_until_ready()
    # the previous outputs die with each step; the collective launch rule may
    # still hold the last launch's first outputs (one per device)
    assert count() - before <= 4
    np.testing.assert_allclose(np.asarray(x), np.ones((4, 2)))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", ["psum", "pmax", "pmin", "pmean"])
def test_a_device_reduction_of_a_weak_value_is_strong(backend, name):
    # JAX 0.10.2 (4 host devices): jax.pmap(lambda a, b: lax.psum(a + a, 'i'),
    # 'i', in_axes=(None, 0))(0.0, zeros(4, bool)).weak_type is False for
    # psum/pmax/pmin/pmean; under vmap the same reduction stays weak.
    import jax

    collective = getattr(lax, name)
    out = ri.pmap(lambda a, b: collective(a + a, "i"), "i", in_axes=(None, 0), backend=backend)(
        0.0, np.zeros(4, bool)
    )
    assert out.weak_type is False and out.dtype == np.float32
    jax_collective = getattr(jax.lax, name)
    got = ri.vmap(lambda a, b: collective(a + a, "i"), axis_name="i", in_axes=(None, 0))(
        0.0, np.zeros(4, bool)
    )
    want = jax.vmap(lambda a, b: jax_collective(a + a, "i"), axis_name="i", in_axes=(None, 0))(
        0.0, np.zeros(4, bool)
    )
    assert got.weak_type == want.weak_type


@pytest.mark.parametrize("backend", BACKENDS)
def test_negative_in_and_out_axes_against_numpy(backend):
    """in_axes=-1/-2 and out_axes=-1, called repeatedly (on pjrt the C++ fast
    path's cached entry must keep the normalized axes: -1 there means
    replicated). JAX 0.10.2's pmap splits axis 0 for a negative in_axes and
    misplaces out_axes=-1, so NumPy is the oracle."""
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    b = np.arange(12, dtype=np.float32).reshape(4, 3)
    f = ri.pmap(lambda x, y: x + y, "i", in_axes=(-1, -2), out_axes=-1, backend=backend)
    for k in range(3):
        want = np.moveaxis(np.moveaxis(a + k, -1, 0) + b[:, None, :], 0, -1)
        np.testing.assert_array_equal(np.asarray(f(a + k, b)), want)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fun", [lambda x: x, lambda x: (x * 2, x)], ids=["identity", "pair"])
def test_a_shape_dtype_struct_argument_is_a_type_error_on_each_backend(backend, fun):
    # JAX 0.10.2 refuses it as an invalid JAX type (TypeError); the reference
    # backend returned the struct itself from an identity
    import jax

    with pytest.raises(TypeError):
        jax.pmap(fun)(jax.ShapeDtypeStruct((1, 3), np.float32))
    f = ri.pmap(fun, backend=backend)
    with pytest.raises(TypeError, match=r"pmap\(<lambda>\): argument args\[0\] is a ShapeDtype"):
        f(ri.ShapeDtypeStruct((1, 3), np.float32))
    with pytest.raises(TypeError, match=r"argument kwargs\['y'\]\['w'\] is a ShapeDtypeStruct"):
        ri.pmap(lambda x, y: x, backend=backend)(
            np.ones((1, 3), np.float32), y={"w": ri.ShapeDtypeStruct((1, 3), np.float32)}
        )
