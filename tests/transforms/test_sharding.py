"""Sharding against JAX on 4 CPU devices: meshes, NamedSharding, device_put,
jit with in/out shardings, with_sharding_constraint, shard_map with each
collective, and MLP training steps (data parallel, 2x2 model parallel).

JAX runs in a subprocess (``tests/helpers/sharding_cases.py``) with
``XLA_FLAGS=--xla_force_host_platform_device_count=4``; refimpl runs the same
case code on the reference backend (4 virtual devices) and on pjrt (the CPU
plugin's 4 devices). Compared per output leaf: the value, the sharding's
spec and every shard's (device id, index, shape).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import refimpl as ri
from refimpl import sharding as rs
from refimpl.transforms.sharded import MeshArray
from tests.helpers import sharding_cases
from tests.helpers.jax_oracle import results_on_four_devices
from tests.helpers.sharding_cases import four_devices_on, typed_mesh

BACKENDS = ["ref", "pjrt"]


@pytest.fixture(scope="module")
def oracle(tmp_path_factory):
    return results_on_four_devices(
        "sharding_cases.py", tmp_path_factory.mktemp("sharding") / "jax.pkl"
    )


@pytest.fixture
def on_backend(request):
    with four_devices_on(request.param) as backend:
        yield backend


def mesh_of(shape, names):
    return typed_mesh(rs, ri.devices(), shape, names, auto=True)


def _ids(observed):
    return [(value.shape, spec, shards) for value, spec, shards in observed]


@pytest.mark.parametrize("on_backend", BACKENDS, indirect=True)
@pytest.mark.parametrize("name", list(sharding_cases.CASES))
def test_case_against_jax(oracle, name, on_backend):
    expected = oracle[name]
    build = sharding_cases.CASES[name]
    if name in sharding_cases.KNOWN_DIFFERENT:  # documented; fails once it agrees
        fn, args = build(ri, mesh_of)
        got = [np.asarray(v) for v in ri.tree_util.tree_leaves(fn(*args))]
        assert not all(np.allclose(g, e[0]) for g, e in zip(got, expected)), "agrees now"
        return
    if isinstance(expected, str):  # JAX raised: refimpl raises the same kind
        with pytest.raises(ValueError):
            fn, args = build(ri, mesh_of)
            fn(*args)
        return
    fn, args = build(ri, mesh_of)
    got = sharding_cases.observe_leaves(ri.tree_util.tree_leaves(fn(*args)))
    assert len(got) == len(expected)
    for (g_value, g_spec, g_shards), (e_value, e_spec, e_shards) in zip(got, expected):
        assert g_value.dtype == e_value.dtype and g_value.shape == e_value.shape
        np.testing.assert_allclose(g_value, e_value, rtol=2e-5, atol=2e-6)
        if name in sharding_cases.VALUES_ONLY:
            continue
        assert g_spec == e_spec
        assert g_shards == e_shards


@pytest.mark.parametrize("on_backend", BACKENDS, indirect=True)
@pytest.mark.parametrize("kind", ["data_parallel", "model_parallel_2x2", "shard_map_data_parallel"])
def test_sharded_training_step_equals_single_device_step(on_backend, kind):
    single, args = sharding_cases.mlp_single_device(ri, mesh_of)
    fn, _ = getattr(sharding_cases, f"mlp_{kind}")(ri, mesh_of)
    expected = [np.asarray(v) for v in ri.tree_util.tree_leaves(single(*args))]
    got = [np.asarray(v) for v in ri.tree_util.tree_leaves(fn(*args))]
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("on_backend", BACKENDS, indirect=True)
def test_shards_are_arrays_on_their_devices(on_backend):
    m = mesh_of((2, 2), ("a", "b"))
    x = ri.device_put(sharding_cases.X44, rs.NamedSharding(m, rs.P("a")))
    assert isinstance(x, MeshArray) and x.devices() == set(m.devices.flat)
    assert not x.is_fully_replicated
    replicas = sorted((s.index[0].start, s.replica_id) for s in x.addressable_shards)
    assert replicas == [(0, 0), (0, 1), (2, 0), (2, 1)]
    for shard in x.addressable_shards:
        assert shard.data.device == shard.device
        np.testing.assert_array_equal(np.asarray(shard.data), sharding_cases.X44[shard.index])


def test_named_sharding_equality_and_hash_as_jax():
    ri.config.update("ref_num_devices", 4)
    try:
        m = mesh_of((2, 2), ("a", "b"))
        m2 = mesh_of((2, 2), ("a", "b"))
        s = rs.NamedSharding(m, rs.P("a", "b"))
        assert m == m2 and hash(m) == hash(m2)
        assert s == rs.NamedSharding(m2, rs.P("a", "b"))
        assert hash(s) == hash(rs.NamedSharding(m2, rs.P("a", "b")))
        assert s == rs.NamedSharding(m, rs.P(("a",), "b"))  # JAX: a 1-name tuple is the name
        assert s != rs.NamedSharding(m, rs.P("a", "b", None))  # JAX: not equal either
        assert rs.NamedSharding(m, rs.P()).is_fully_replicated
        assert not rs.NamedSharding(m, rs.P("a")).is_fully_replicated
        assert rs.NamedSharding(m, rs.P(None, "a")).shard_shape((4, 6)) == (4, 3)
        with pytest.raises(ValueError, match="partitioned 2 times"):
            rs.NamedSharding(m, rs.P("a")).shard_shape((3,))
        with pytest.raises(ValueError, match="duplicate entries"):
            rs.NamedSharding(m, rs.P("a", "a"))
        with pytest.raises(ValueError, match="not found in mesh"):
            rs.NamedSharding(m, rs.P("c"))
    finally:
        ri.config.update("ref_num_devices", 1)


def test_make_mesh_set_mesh_and_partition_spec_shardings():
    ri.config.update("ref_num_devices", 4)
    try:
        m = ri.make_mesh((2, 2), ("a", "b"))
        assert m.axis_types == (rs.AxisType.Explicit,) * 2  # JAX 0.10.2's default
        assert [d.id for d in m.devices.flat] == [0, 1, 2, 3]
        with pytest.raises(ValueError, match="needs 8 devices"):
            ri.make_mesh((4, 2), ("a", "b"))
        with pytest.raises(RuntimeError, match="needs a mesh"):
            ri.device_put(np.ones(4), rs.P("a"))
        with ri.set_mesh(m):
            assert rs.get_mesh() is m
            x = ri.device_put(np.ones(4), rs.P("a"))
            assert x.sharding == rs.NamedSharding(m, rs.P("a"))
        assert rs.get_mesh() is None
        # JAX: with_sharding_constraint takes only Auto axes; reshard only Explicit ones
        with pytest.raises(ValueError, match="Auto axes"):
            ri.lax.with_sharding_constraint(np.ones(4), rs.NamedSharding(m, rs.P("a")))
        y = ri.reshard(np.ones(4), rs.NamedSharding(m, rs.P("a")))
        assert y.sharding.spec == rs.P("a")
        y = rs.reshard(np.ones(4), rs.NamedSharding(m, rs.P("b")))  # jax.sharding.reshard
        assert y.sharding.spec == rs.P("b")
    finally:
        ri.config.update("ref_num_devices", 1)


@pytest.mark.parametrize("on_backend", BACKENDS, indirect=True)
def test_device_put_donate_and_may_alias_rows_for_sharded_arrays(on_backend):
    m = mesh_of((2, 2), ("a", "b"))
    s, other = rs.NamedSharding(m, rs.P("a", "b")), rs.NamedSharding(m, rs.P("b"))

    def fresh():
        return ri.device_put(sharding_cases.X44, s)

    x = fresh()
    with pytest.raises(ValueError, match="cannot be True at the same time"):
        ri.device_put(x, s, donate=True, may_alias=True)
    # (may_alias True or None, donate False): x itself when already laid out so
    assert ri.device_put(x, s, may_alias=True) is x and ri.device_put(x, s) is x
    y = ri.device_put(x, other, may_alias=True)
    assert y is not x and y.sharding == other and not x.is_deleted()
    # (False, False): always a fresh array, x alive
    y = ri.device_put(x, s, may_alias=False)
    assert y is not x and not x.is_deleted()
    assert not set(y._storage_keys()) & set(x._storage_keys())
    # (False or None, True): x's blocks move (same sharding) or are copied; x deleted
    for target in (s, other):
        x = fresh()
        y = ri.device_put(x, target, donate=True)
        assert x.is_deleted() and not y.is_deleted() and y.sharding == target
        np.testing.assert_array_equal(np.asarray(y), sharding_cases.X44)
        with pytest.raises(RuntimeError):
            np.asarray(x)


@pytest.mark.parametrize("on_backend", BACKENDS, indirect=True)
def test_jit_donates_a_sharded_argument(on_backend):
    m = mesh_of((4,), ("x",))
    s = rs.NamedSharding(m, rs.P("x"))
    x = ri.device_put(sharding_cases.X8, s)
    w = ri.device_put(sharding_cases.X8, s)
    f = ri.jit(lambda v, u: (v + u, u * 2), in_shardings=s, out_shardings=s, donate_argnums=0)
    y, _ = f(x, w)
    assert x.is_deleted() and not w.is_deleted() and y.sharding == s
    np.testing.assert_array_equal(np.asarray(y), sharding_cases.X8 * 2)
    if on_backend == "pjrt":  # donated per shard in the partitioned executable
        assert all(e is not NotImplemented for e in f._spmd_cache.values()) and f._spmd_cache
    with pytest.raises(RuntimeError, match=r"deleted with shape=float32\[8\]"):
        f(x, w)
    # one array in two places, one donated: jit's ValueError before anything is deleted
    with pytest.raises(ValueError, match="the same array is passed"):
        f(w, w)
    assert not w.is_deleted()


def _hlo_meaning(text: str):
    """(tile dims, device order, replicate flag) of XLA sharding text, the
    iota form (``<=[2,2]T(1,0)``, JAX's) read as the explicit list it means."""
    match = re.fullmatch(r"\{devices=\[([\d,]+)\](\S+)( last_tile_dim_replicate)?\}", text)
    if match is None:
        return text  # {replicated}
    dims = tuple(int(n) for n in match.group(1).split(","))
    devices = match.group(2)
    iota = re.fullmatch(r"<=\[([\d,]+)\](?:T\(([\d,]+)\))?", devices)
    if iota:
        shape = [int(n) for n in iota.group(1).split(",")]
        order = np.arange(int(np.prod(shape))).reshape(shape)
        if iota.group(2):
            order = order.transpose([int(n) for n in iota.group(2).split(",")])
        ids = tuple(int(i) for i in order.flat)
    else:
        ids = tuple(int(n) for n in devices.split(","))
    return dims, ids, bool(match.group(3))


def test_pjrt_sharding_text_is_jaxs(oracle):
    spmd = pytest.importorskip("refimpl.backends.pjrt.spmd")
    for (shape, names, spec, ndim), expected in oracle["__hlo__"].items():
        mesh = rs.Mesh(np.arange(int(np.prod(shape))).reshape(shape), names)
        got = spmd.hlo_sharding(rs.NamedSharding(mesh, rs.P(*spec)), ndim)
        assert _hlo_meaning(got) == _hlo_meaning(expected), (spec, got, expected)


@pytest.mark.parametrize("on_backend", ["pjrt"], indirect=True)
def test_pjrt_jit_with_shardings_is_one_partitioned_executable(on_backend):
    from refimpl.transforms.pmap import transfer_count

    m = mesh_of((2, 2), ("a", "b"))
    s = rs.NamedSharding(m, rs.P("a", "b"))
    f = ri.jit(lambda v: v * 2, in_shardings=s, out_shardings=s)
    x = ri.device_put(sharding_cases.X44, s)
    y = f(x)
    (entry,) = f._spmd_cache.values()
    assert entry is not NotImplemented  # the SPMD route, not the global-value one
    before = transfer_count()
    for _ in range(3):  # a sharded output fed back moves no data
        y = f(y)
    assert transfer_count() == before
    np.testing.assert_array_equal(np.asarray(y), sharding_cases.X44 * 16)
    assert all(s_.data.device == s_.device for s_ in y.addressable_shards)


@pytest.mark.parametrize("on_backend", ["pjrt"], indirect=True)
@pytest.mark.parametrize(
    "name", ["jit_shard_local_1d", "jit_shard_local_2d", "jit_shard_local_partly_replicated"]
)
def test_pjrt_shard_local_program_runs_one_executable_per_device(name, on_backend, oracle):
    """An elementwise program with one sharding is launched as the block
    program on each device (native ExecuteLocal), on the first call and on
    the C++ fast path of fed-back calls alike, with JAX's values and layout."""
    from refimpl.transforms.pmap import transfer_count

    f, args = sharding_cases.CASES[name](ri, mesh_of)
    out = f(*[ri.device_put(a, s) for a, s in zip(args, f._fallback._in, strict=True)])
    (entry,) = f._fallback._spmd_cache.values()
    assert entry.local is not None and len(entry.local) == 4  # the local route was taken
    assert [e.device_indices for e in entry.local] == [[i] for i in entry.executable.device_indices]
    assert _ids(sharding_cases.observe_leaves(out)) == _ids(oracle[name])
    for got, want in zip(out, oracle[name], strict=True):
        np.testing.assert_array_equal(np.asarray(got), want[0])
    hits, before = f._fast_stats()["hits"], transfer_count()
    again = f(*out)  # fed back: the C++ path, no data moves
    assert f._fast_stats()["hits"] == hits + 1 and transfer_count() == before
    v, w = (np.asarray(o) for o in out)
    expected = (np.where(v > 3, np.sin(v) * 2 + w, w - 1), np.maximum(v, w) * v)
    for got, want in zip(again, expected, strict=True):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
        assert got.sharding == out[0].sharding


@pytest.mark.parametrize("on_backend", ["pjrt"], indirect=True)
def test_pjrt_shard_local_over_several_layouts_and_a_replicated_scalar(on_backend, oracle):
    f, (params, grads, lr) = sharding_cases.jit_shard_local_sgd_tree(ri, mesh_of)
    p_in, _, lr_in = f._fallback._in
    put = lambda tree: {k: ri.device_put(v, p_in[k]) for k, v in tree.items()}  # noqa: E731
    out = f(put(params), put(grads), ri.device_put(lr, lr_in))
    (entry,) = f._fallback._spmd_cache.values()
    assert entry.local is not None  # the per-device launch
    leaves = sharding_cases.observe_leaves(ri.tree_util.tree_leaves(out))
    assert _ids(leaves) == _ids(oracle["jit_shard_local_sgd_tree"])
    for (got, _, _), (want, _, _) in zip(leaves, oracle["jit_shard_local_sgd_tree"], strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("on_backend", ["pjrt"], indirect=True)
@pytest.mark.parametrize("name", ["jit_1d", "jit_1d_rows", "jit_2d"])
def test_pjrt_programs_with_communication_keep_one_partitioned_executable(name, on_backend):
    f, args = sharding_cases.CASES[name](ri, mesh_of)
    f(*args)
    (entry,) = f._fallback._spmd_cache.values()
    assert entry is not NotImplemented and entry.local is None


@pytest.mark.parametrize("on_backend", ["pjrt"], indirect=True)
def test_pjrt_local_launch_refuses_executables_of_other_devices(on_backend):
    from refimpl.backends.pjrt import runtime

    s = rs.NamedSharding(mesh_of((4,), ("x",)), rs.P("x"))
    f = ri.jit(lambda v: v + 1, in_shardings=s, out_shardings=s)
    x = ri.device_put(sharding_cases.X8, s)
    f(x)
    (entry,) = f._fallback._spmd_cache.values()
    blocks = [[shard.buffer()] for shard in x._shards]
    with pytest.raises(ValueError, match="single-device executable of the program's device"):
        runtime.native_module()._pmap_launch(
            entry.executable, blocks, True, [False], list(entry.local[::-1])
        )


@pytest.mark.parametrize("on_backend", ["pjrt"], indirect=True)
def test_pjrt_device_put_to_another_layout_moves_no_data_through_the_host(on_backend):
    from refimpl.transforms.pmap import transfer_count

    m = mesh_of((2, 2), ("a", "b"))
    x = ri.device_put(sharding_cases.X44, rs.NamedSharding(m, rs.P("a", "b")))
    for spec in (rs.P("b"), rs.P(None, ("a", "b")), rs.P()):
        before = transfer_count()
        y = ri.device_put(x, rs.NamedSharding(m, spec)).block_until_ready()
        assert transfer_count() == before, spec
        assert y.sharding.spec == spec
        for shard in y.addressable_shards:
            assert shard.data.device == shard.device
            np.testing.assert_array_equal(np.asarray(shard.data), sharding_cases.X44[shard.index])


def test_shard_map_check_vma_false_takes_the_first_member():
    ri.config.update("ref_num_devices", 4)
    try:
        m = mesh_of((4,), ("x",))
        f = ri.shard_map(
            lambda v: v * 1, mesh=m, in_specs=rs.P("x"), out_specs=rs.P(), check_vma=False
        )
        np.testing.assert_array_equal(np.asarray(f(sharding_cases.X8)), sharding_cases.X8[:2])
    finally:
        ri.config.update("ref_num_devices", 1)


@pytest.mark.parametrize("on_backend", BACKENDS, indirect=True)
def test_a_sharded_array_works_where_any_array_does(on_backend):
    m = mesh_of((4,), ("x",))
    x = ri.device_put(sharding_cases.X8, rs.NamedSharding(m, rs.P("x")))
    v = sharding_cases.X8
    checks = {
        "jit": (ri.jit(lambda a: a * 2)(x), v * 2),
        "eager": (x + 1, v + 1),
        "numpy": (ri.numpy.sum(x), v.sum()),
        "device_get": (ri.device_get(x), v),
        "grad": (ri.grad(lambda a: (a**2).sum())(x), 2 * v),
        "vmap": (ri.vmap(lambda a: a * 3)(x), v * 3),
        "one device": (ri.device_put(x, ri.devices()[2]), v),
        "pmap": (ri.pmap(lambda a: a - 1)(ri.device_put(v.reshape(4, 2), x.sharding)), v - 1),
    }
    for name, (got, expected) in checks.items():
        np.testing.assert_allclose(np.asarray(got).ravel(), expected.ravel(), err_msg=name)
    assert ri.device_put(x, ri.devices()[2]).device == ri.devices()[2]


@pytest.mark.parametrize("on_backend", BACKENDS, indirect=True)
def test_with_sharding_constraint_inside_a_program(on_backend):
    m = mesh_of((2, 2), ("a", "b"))
    s = rs.NamedSharding(m, rs.P("a", "b"))
    inner = rs.NamedSharding(m, rs.P(None, "b"))
    x = sharding_cases.X44 / 10

    def f(v):
        return ri.numpy.tanh(ri.lax.with_sharding_constraint(v * 2, inner)) @ v

    def expected_grad(v):  # d/dv sum(tanh(2v) @ v), by hand
        t = np.tanh(2 * v)
        ones = np.ones_like(v)
        return 2 * (1 - t**2) * (ones @ v.T) + t.T @ ones

    g = ri.jit(f, in_shardings=s, out_shardings=s)
    np.testing.assert_allclose(np.asarray(g(x)), np.tanh(2 * x) @ x, rtol=1e-5, atol=1e-6)
    grad = ri.jit(ri.grad(lambda v: f(v).sum()), in_shardings=s, out_shardings=s)(x)
    np.testing.assert_allclose(np.asarray(grad), expected_grad(x), rtol=1e-4, atol=1e-5)
    assert "sharding_constraint" in str(ri.make_jaxpr(f)(x))
    np.testing.assert_allclose(np.asarray(ri.vmap(f)(np.stack([x, x]))[1]), np.tanh(2 * x) @ x,
                               rtol=1e-5, atol=1e-6)  # fmt: skip
    if on_backend == "pjrt":  # the partitioned module carries it as XLA's @Sharding call
        (entry,) = g._spmd_cache.values()
        calls = [ln for ln in entry.module_text.splitlines() if "@Sharding" in ln]
        assert len(calls) == 1 and "{devices=[1,2,2]0,2,1,3 last_tile_dim_replicate}" in calls[0]


@pytest.mark.parametrize("on_backend", ["pjrt"], indirect=True)
def test_pjrt_shard_map_runs_partitioned_over_the_mesh(on_backend):
    from refimpl.transforms.pmap import transfer_count

    m = mesh_of((2, 2), ("a", "b"))
    f = ri.shard_map(
        lambda v: ri.lax.psum(v, "a"), mesh=m, in_specs=rs.P("a", "b"), out_specs=rs.P(None, "b")
    )
    x = ri.device_put(sharding_cases.X44, rs.NamedSharding(m, rs.P("a", "b")))
    f(x)
    before = transfer_count()  # blocks already in place: no data moves
    y = f(x).block_until_ready()
    assert transfer_count() == before
    np.testing.assert_array_equal(np.asarray(y), sharding_cases.X44[:2] + sharding_cases.X44[2:])
    (jitted,) = f._partitioned.values()
    (entry,) = jitted._spmd_cache.values()
    assert entry is not NotImplemented  # one SPMD executable over the 4 devices


@pytest.mark.parametrize("on_backend", ["pjrt"], indirect=True)
def test_pjrt_cached_sharded_call_skips_the_per_call_checks_and_keeps_their_errors(
    on_backend, monkeypatch
):
    from refimpl.transforms.sharded import ShardedJit

    m = mesh_of((4,), ("x",))
    s = rs.NamedSharding(m, rs.P("x"))
    f = ri.jit(lambda v, u: (v * 2 + u, v - u), in_shardings=s, out_shardings=s)
    x = ri.device_put(sharding_cases.X8, s)
    w = ri.device_put(sharding_cases.X8 + 1, s)
    y, _ = f(x, w)  # the first call leaves the signature's plan
    assert f._plans

    def no_general_route(*args, **kwargs):
        raise AssertionError("a cached call took the general route")

    with monkeypatch.context() as patch:
        patch.setattr(ShardedJit, "_place_argument", no_general_route)
        y, z = f(y, w)
    expected = (sharding_cases.X8 * 2 + sharding_cases.X8 + 1) * 2 + sharding_cases.X8 + 1
    np.testing.assert_array_equal(np.asarray(y), expected)
    np.testing.assert_array_equal(np.asarray(z), sharding_cases.X8 * 2)
    assert type(y) is MeshArray and y.sharding == s and z.sharding == s
    assert [(sh.device, sh.index) for sh in y.addressable_shards] == [
        (d, i) for d, i in s.devices_indices_map((8,)).items()
    ]
    assert all(sh.data.device == sh.device for sh in y.addressable_shards)

    # the checks of the general route, with its errors
    gone = ri.device_put(sharding_cases.X8, s)
    gone.delete()
    with pytest.raises(RuntimeError, match=r"deleted with shape=float32\[8\]"):
        f(gone, w)
    donated = ri.device_put(sharding_cases.X8, s)
    ri.device_put(donated, s, donate=True)
    with pytest.raises(RuntimeError, match=r"deleted"):
        f(donated, w)
    replicated = ri.device_put(sharding_cases.X8, rs.NamedSharding(m, rs.P()))
    with pytest.raises(ValueError, match="does not match the sharding of argument args"):
        f(replicated, w)
    with pytest.raises(ValueError, match="divisible|evenly"):
        f(ri.device_put(np.arange(6.0, dtype=np.float32), rs.NamedSharding(m, rs.P())), w)
    # another shape: compiled anew, its own plan
    x16 = np.arange(16.0, dtype=np.float32)
    y16, _ = f(ri.device_put(x16, s), ri.device_put(x16, s))
    np.testing.assert_array_equal(np.asarray(y16), x16 * 3)
    # host data is laid out by the general route, as before
    np.testing.assert_array_equal(np.asarray(f(sharding_cases.X8, w)[1]), -np.ones(8))


@pytest.mark.parametrize("on_backend", ["pjrt"], indirect=True)
def test_pjrt_cached_sharded_calls_from_several_threads(on_backend):
    from concurrent.futures import ThreadPoolExecutor

    m = mesh_of((4,), ("x",))
    s = rs.NamedSharding(m, rs.P("x"))
    f = ri.jit(lambda v: v + 1, in_shardings=s, out_shardings=s)
    f(ri.device_put(sharding_cases.X8, s))

    def chain(k):
        y = ri.device_put(sharding_cases.X8 * k, s)
        for _ in range(20):
            y = f(y)
        return np.asarray(y)

    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(chain, range(8)))
    for k, value in enumerate(got):
        np.testing.assert_array_equal(value, sharding_cases.X8 * k + 20)


@pytest.mark.parametrize("on_backend", ["pjrt"], indirect=True)
def test_pjrt_cached_sharded_call_with_donation(on_backend, monkeypatch):
    from refimpl.transforms.sharded import ShardedJit

    m = mesh_of((4,), ("x",))
    s = rs.NamedSharding(m, rs.P("x"))
    f = ri.jit(lambda v, u: v + u, in_shardings=s, out_shardings=s, donate_argnums=0)
    w = ri.device_put(sharding_cases.X8, s)
    y = f(ri.device_put(sharding_cases.X8, s), w)
    assert f._plans
    hits = f._fast_stats()["hits"]
    with monkeypatch.context() as patch:
        patch.setattr(ShardedJit, "__call__", None)  # a hit runs in C++
        for _ in range(3):
            previous, y = y, f(y, w)
            assert previous.is_deleted() and not w.is_deleted()
            assert all(sh.data.is_deleted() for sh in previous.addressable_shards)
    assert f._fast_stats()["hits"] == hits + 3
    np.testing.assert_array_equal(np.asarray(y), sharding_cases.X8 * 5)
    with pytest.raises(RuntimeError, match=r"deleted with shape=float32\[8\]"):
        f(previous, w)
    with pytest.raises(RuntimeError, match=r"donated to 'jit\(<lambda>\)'"):
        np.asarray(previous.addressable_shards[0].data)
    with pytest.raises(ValueError, match="the same array is passed"):
        f(w, w)
    assert not w.is_deleted()


@pytest.mark.parametrize("on_backend", ["pjrt"], indirect=True)
def test_pjrt_cached_sharded_calls_run_in_cpp(on_backend, monkeypatch):
    # bindings/fast_sharded.h: once a call has left its plan, calls whose
    # arguments are MeshArrays of the plan's layouts run in C++, with no
    # Python code (ShardedJit.__call__ is never entered), and give the same
    # arrays the Python route gives.
    from refimpl.transforms.pmap import transfer_count
    from refimpl.transforms.sharded import ShardedJit

    m = mesh_of((2, 2), ("a", "b"))
    sa, sb = rs.NamedSharding(m, rs.P("a", "b")), rs.NamedSharding(m, rs.P("b", None))
    f = ri.jit(
        lambda a, b: ((a @ b) * 0.5, a + 1.0), in_shardings=(sa, sb), out_shardings=(sa, None)
    )
    a0 = np.arange(64.0, dtype=np.float32).reshape(8, 8) / 64
    b0 = np.eye(8, dtype=np.float32) * 2 + 1 / 8
    a, b = ri.device_put(a0, sa), ri.device_put(b0, sb)
    y, z = f(a, b)  # the first call leaves the plan: from then on, C++
    assert f._fast_stats()["hits"] == 0 and f._fast_stats()["entries"] == 1

    def no_python(*args, **kwargs):
        raise AssertionError("a cached sharded call ran ShardedJit.__call__")

    expected = a0
    with monkeypatch.context() as patch:
        patch.setattr(ShardedJit, "__call__", no_python)
        before = transfer_count()
        for _ in range(5):
            y, z = f(y, b)
        y.block_until_ready()
        assert transfer_count() == before  # the blocks stay where they are
    for _ in range(6):
        expected, last = (expected @ b0) * np.float32(0.5), expected
    assert f._fast_stats()["hits"] == 5
    np.testing.assert_allclose(np.asarray(y), expected, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(z), last + 1, rtol=1e-6)
    assert type(y) is MeshArray and y.sharding == sa and y.aval == a.aval
    assert [(sh.device, sh.index) for sh in y.addressable_shards] == [
        (d, i) for d, i in sa.devices_indices_map((8, 8)).items()
    ]
    assert all(sh.data.device == sh.device for sh in y.addressable_shards)
    assert type(z) is MeshArray and z.sharding == sa  # unspecified: the rule (a's layout)
    # a deleted block: the Python route's error; another layout: the Python route
    gone = ri.device_put(a0, sa)
    gone.delete()
    with pytest.raises(RuntimeError, match=r"deleted with shape=float32\[8, 8\]"):
        f(gone, b)
    with pytest.raises(ValueError, match="does not match the sharding of argument"):
        f(ri.device_put(a0, sb), b)
    slow = f._fast_stats()["slow"]
    np.testing.assert_allclose(np.asarray(f(a0, b)[1]), a0 + 1)  # host data: Python
    assert f._fast_stats()["slow"] == slow + 1
    (plan,) = f._plans.values()
    f._add_entry(plan.spec)  # a plan of the same signature replaces its entry
    assert f._fast_stats()["entries"] == 1
    hits = f._fast_stats()["hits"]
    with ri.disable_jit():  # C++ cannot run the function eagerly: the Python route
        np.testing.assert_allclose(np.asarray(f(y, b)[1]), expected + 1)
    assert f._fast_stats()["hits"] == hits
    f(f(y, b)[0], b)  # (disable_jit emptied the caches) compiled anew, then C++ again
    assert f._fast_stats()["hits"] == hits + 1
    ri.clear_caches()  # forgets the C++ entries and the plans: compiled anew
    assert f._fast_stats()["entries"] == 0
    np.testing.assert_allclose(np.asarray(f(y, b)[1]), expected + 1)
    assert f._fast_stats()["entries"] == 1
    f.clear_cache()
    assert f._fast_stats()["entries"] == 0


@pytest.mark.parametrize("on_backend", ["pjrt"], indirect=True)
def test_pjrt_cached_sharded_calls_with_tuple_and_list_arguments_run_in_cpp(
    on_backend, monkeypatch
):
    from refimpl.transforms.sharded import ShardedJit

    m = mesh_of((4,), ("x",))
    s = rs.NamedSharding(m, rs.P("x"))
    f = ri.jit(
        lambda pair, rest: (pair[0] + pair[1] * rest[0], [pair[1]]),
        in_shardings=s,
        out_shardings=s,
    )
    x0 = sharding_cases.X8
    x, y, z = (ri.device_put(v, s) for v in (x0, x0 + 1, x0 * 2))
    out, [same] = f((x, y), [z])  # the first call leaves the plan
    expected = x0 + (x0 + 1) * (x0 * 2)
    with monkeypatch.context() as patch:
        patch.setattr(ShardedJit, "__call__", None)  # a hit runs in C++
        for _ in range(3):
            out, [same] = f((out, same), [z])
            expected = expected + (x0 + 1) * (x0 * 2)
    assert f._fast_stats()["hits"] == 3
    np.testing.assert_array_equal(np.asarray(out), expected)
    assert type(out) is MeshArray and type(same) is MeshArray and same.sharding == s
    np.testing.assert_array_equal(np.asarray(same), x0 + 1)
    # another structure (a tuple where the entry has a list): the Python route
    out2, _ = f((x, y), (z,))
    np.testing.assert_array_equal(np.asarray(out2), x0 + (x0 + 1) * (x0 * 2))
    assert f._fast_stats()["hits"] == 3
    # a dict argument: the Python route always (no C++ entry)
    g = ri.jit(lambda d: d["a"] * 2, in_shardings=s, out_shardings=s)
    for _ in range(3):
        np.testing.assert_array_equal(np.asarray(g({"a": x})), x0 * 2)
    assert g._fast_stats()["hits"] == 0 and g._fast_stats()["entries"] == 0


@pytest.mark.parametrize("on_backend", ["pjrt"], indirect=True)
def test_pjrt_launch_refuses_a_buffer_donated_and_read_by_one_launch(on_backend):
    # The public routes refuse f(x, x) with x donated, naming the arguments;
    # the launch under them must refuse it too (XLA would free the buffer
    # under its own reader: the process crashed), and change nothing.
    from refimpl.backends.pjrt.runtime import native_module

    m = mesh_of((4,), ("x",))
    s = rs.NamedSharding(m, rs.P("x"))
    f = ri.jit(lambda a, b: a + b, in_shardings=(s, s), out_shardings=s)
    x = ri.device_put(np.arange(8, dtype=np.float32), s)
    f(x, x)
    (entry,) = f._spmd_cache.values()
    per_device = [[shard.data.buffer(), shard.data.buffer()] for shard in x.addressable_shards]
    with pytest.raises(ValueError, match="donated buffer is also passed"):
        native_module()._pmap_launch(entry.executable, per_device, True, [True, False])
    np.testing.assert_array_equal(np.asarray(f(x, x)), np.arange(8, dtype=np.float32) * 2)


@pytest.mark.parametrize("backend", ["ref", "pjrt"])
def test_a_one_device_array_has_one_addressable_shard_as_jax(backend):
    import jax

    value = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    x = ri.device_put(value, ri.devices(backend)[0])
    (shard,) = x.addressable_shards
    (want,) = jax.device_put(value).addressable_shards
    assert shard.index == want.index and shard.replica_id == want.replica_id == 0
    assert shard.device == x.device
    np.testing.assert_array_equal(np.asarray(shard.data), value)


@pytest.mark.parametrize("on_backend", BACKENDS, indirect=True)
def test_jit_with_shardings_retraces_when_enable_x64_changes(on_backend):
    # x64 changes what the function makes (arange(4.0) is float64 under it):
    # the plans and executables of one mode must not serve the other
    import jax
    import jax.numpy as jnp

    import refimpl.numpy as rnp

    def f(x):
        return x + rnp.arange(4.0)

    def want(x64):
        with jax.enable_x64(x64):
            return (jnp.ones(4, np.float32) + jnp.arange(4.0)).dtype

    m = mesh_of((2,), ("x",))
    s = rs.NamedSharding(m, rs.P("x"))
    g = ri.jit(f, in_shardings=s, out_shardings=s)
    x = ri.device_put(np.ones(4, np.float32), s)
    for _ in range(2):  # the second call of each mode is the cached one
        assert g(x).dtype == want(False)
    try:
        ri.config.update("enable_x64", True)
        for _ in range(2):
            out = g(x)
            assert out.dtype == want(True)
        np.testing.assert_array_equal(np.asarray(out), np.arange(4.0) + 1)
    finally:
        ri.config.update("enable_x64", False)
    assert g(x).dtype == want(False)


@pytest.mark.parametrize("on_backend", BACKENDS, indirect=True)
def test_jit_with_shardings_under_disable_jit_runs_the_function_eagerly(on_backend):
    # JAX 0.10.2: the function is called on the arguments as given (a NumPy
    # array stays one, no tracer), and the shardings are neither applied nor
    # checked (in_shardings of another arity is no error)
    seen = []

    def f(x):
        seen.append(type(x))
        return x * 2

    m = mesh_of((2,), ("x",))
    s = rs.NamedSharding(m, rs.P("x"))
    with ri.disable_jit():
        out = ri.jit(f, in_shardings=s, out_shardings=s)(np.ones(4, np.float32))
        assert seen == [np.ndarray] and type(out) is np.ndarray
        out = ri.jit(f, in_shardings=(s, s))(np.ones(3, np.float32))
        np.testing.assert_array_equal(out, np.full(3, 2, np.float32))
