"""Sharded arrays through plain ``jit`` and eager operations against JAX on 4
CPU devices (issue 33): with no ``in_shardings``/``out_shardings`` a call
runs over its arguments' mesh with each argument's own sharding, and every
output is laid out as the sharding rule types it (docs/semantics.md
"Sharding", docs/sharding_rules.md); eager operations on a sharded array
likewise. Compared per output leaf on both backends, over 1-D and 2-D meshes
with Explicit and Auto axes: the value, the spec, every shard's (device id,
index, shape); errors by class. On pjrt a fed-back call moves no data and is
served by the C++ fast path for sharded calls.
"""

from __future__ import annotations

import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import sharding as rs
from refimpl.transforms.sharded import MeshArray
from tests.helpers import sharding_inferred_cases as cases
from tests.helpers.sharding_cases import observe_leaves
from tests.helpers.sharding_fixtures import (  # noqa: F401 (a fixture)
    BACKENDS,
    fed_back_as_cpp_hits,
    four_device_backend,
    jax_oracle,
    mesh_of,
)

oracle = jax_oracle("sharding_inferred_cases.py")


def _observe(name):
    try:
        return observe_leaves(ri.tree_util.tree_leaves(cases.CASES[name](ri, mesh_of)()))
    except Exception as error:
        return type(error).__name__


@pytest.mark.parametrize("on_backend", BACKENDS, indirect=True)
@pytest.mark.parametrize("name", list(cases.CASES))
def test_case_against_jax(oracle, name, on_backend):
    expected, got = oracle[name], _observe(name)
    if isinstance(expected, str) or isinstance(got, str):
        assert got == expected
        return
    assert len(got) == len(expected)
    for (g_value, g_spec, g_shards), (e_value, e_spec, e_shards) in zip(got, expected):
        assert g_value.dtype == e_value.dtype and g_value.shape == e_value.shape
        np.testing.assert_allclose(g_value, e_value, rtol=2e-5, atol=2e-6)
        if name in cases.VALUES_ONLY:
            continue
        assert g_spec == e_spec
        assert g_shards == e_shards


@pytest.mark.parametrize("on_backend", BACKENDS, indirect=True)
def test_data_parallel_step_equals_single_device_step(on_backend):
    sharded = ri.tree_util.tree_leaves(cases.mlp_data_parallel_plain_jit_auto(ri, mesh_of)())
    single = ri.tree_util.tree_leaves(cases.mlp_single_device_reference(ri, mesh_of)())
    for s, one in zip(sharded, single, strict=True):
        assert type(s) is MeshArray and s.sharding.spec == rs.P()
        np.testing.assert_allclose(np.asarray(s), np.asarray(one), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("on_backend", BACKENDS, indirect=True)
@pytest.mark.parametrize("auto", [False, True])
def test_model_parallel_step_equals_single_device_step(on_backend, auto):
    run = cases.mlp_model_parallel_2x2(ri, mesh_of, auto=auto)
    (params, loss), (single, single_loss) = run(), cases.mlp_single_device_reference(ri, mesh_of)()
    specs = {"w1": rs.P(None, "model"), "b1": rs.P("model"), "w2": rs.P("model", None)}
    for name, value in params.items():
        # (Auto axes drop trailing Nones, as JAX writes them)
        assert type(value) is MeshArray and value.sharding.spec in (specs[name], rs.P("model"))
        np.testing.assert_allclose(
            np.asarray(value), np.asarray(single[name]), rtol=1e-5, atol=1e-6
        )
    np.testing.assert_allclose(np.asarray(loss), np.asarray(single_loss), rtol=1e-5)


@pytest.mark.parametrize("on_backend", ["pjrt"], indirect=True)
def test_pjrt_fed_back_step_moves_no_data(on_backend):
    from refimpl.transforms.pmap import transfer_count

    m = mesh_of((4,), ("x",))
    params, (x, y) = cases._mlp_data()
    params = ri.device_put(params, rs.NamedSharding(m, rs.P()))
    x, y = (ri.device_put(v, rs.NamedSharding(m, rs.P("x"))) for v in (x, y))
    step = ri.jit(lambda p, x, y: cases._mlp_step(ri, p, x, y))
    params, _ = step(params, x, y)
    before = transfer_count()
    for _ in range(3):
        params, loss = step(params, x, y)
    loss.block_until_ready()
    assert transfer_count() == before
    # (replicated; Explicit axes write one None per axis, as JAX)
    assert all(p.sharding.mesh == m and not any(p.sharding.spec) for p in params.values())


@pytest.mark.parametrize("on_backend", ["pjrt"], indirect=True)
def test_pjrt_fed_back_call_is_a_cpp_hit(on_backend):

    x = ri.device_put(cases.X8, rs.NamedSharding(mesh_of((4,), ("x",)), rs.P("x")))
    f = ri.jit(lambda a: a * 2 + 1)
    y = f(x)
    y, over_mesh = fed_back_as_cpp_hits(f, y)
    assert len(over_mesh._fallback._spmd_cache) == 1  # one compiled signature
    np.testing.assert_array_equal(np.asarray(y), ((cases.X8 * 2 + 1) * 2 + 1) * 2 * 2 + 1 + 2)


@pytest.mark.parametrize("on_backend", ["pjrt"], indirect=True)
def test_pjrt_plain_call_keeps_its_cpp_path(on_backend):
    f = ri.jit(lambda a: a * 2)
    x = ri.device_put(cases.X8)
    f(x)
    before = f._fast_stats()
    for _ in range(3):
        f(x)
    after = f._fast_stats()
    assert after["hits"] == before["hits"] + 3 and after["slow"] == before["slow"]
    assert f._jitted._sharded is None


@pytest.mark.parametrize("on_backend", BACKENDS, indirect=True)
def test_under_a_trace_nothing_changes(on_backend):
    x = ri.device_put(cases.X8, rs.NamedSharding(mesh_of((4,), ("x",)), rs.P("x")))
    inner = ri.jit(lambda a: a * 3)
    outer = ri.jit(lambda a: inner(a) + 1)
    out = outer(x)
    assert out.sharding.spec == rs.P("x")
    np.testing.assert_array_equal(np.asarray(out), cases.X8 * 3 + 1)
    g = ri.grad(lambda a: inner(a).sum())(x)
    np.testing.assert_array_equal(np.asarray(g), np.full(8, 3.0, np.float32))
    v = ri.vmap(inner)(x)
    np.testing.assert_array_equal(np.asarray(v), cases.X8 * 3)
    with ri.disable_jit():
        np.testing.assert_array_equal(np.asarray(inner(x)), cases.X8 * 3)
        # an eager operation keeps its operand's sharding under disable_jit too,
        # as JAX's (a jit over the mesh that the flag does not reach)
        s = rnp.sin(x)
        assert s.sharding.spec == rs.P("x")
        np.testing.assert_allclose(np.asarray(s), np.sin(cases.X8), rtol=1e-6)


@pytest.mark.parametrize("on_backend", BACKENDS, indirect=True)
def test_jit_of_a_pmap_output_keeps_its_sharding(on_backend):
    # JAX 0.10.2: the jit runs over the pmap output's NamedSharding (1-D mesh
    # of the pmap's axis), which its output keeps
    y = ri.pmap(lambda v: v * 2, "i")(np.ones((4, 2), np.float32))
    z = ri.jit(lambda a: a + 1)(y)
    assert z.sharding == y.sharding and len(z.addressable_shards) == 4
    np.testing.assert_array_equal(np.asarray(z), np.full((4, 2), 3.0, np.float32))
    w = rnp.sin(y)  # eager too
    assert w.sharding == y.sharding


@pytest.mark.parametrize("on_backend", BACKENDS, indirect=True)
@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.uint8])
def test_dtypes_and_weak_types_as_on_one_device(on_backend, dtype):
    # the layout changes, nothing else: the same dtype and weak type as the
    # operation on an unsharded array (int32 * 2.5 is a weak float32, as JAX)
    m = mesh_of((4,), ("x",))
    value = np.arange(8).astype(dtype)
    split, whole = ri.device_put(value, rs.NamedSharding(m, rs.P("x"))), ri.device_put(value)
    ops = [
        lambda v: v * 2,
        lambda v: v * 2.5,
        lambda v: 1 - v,
        lambda v: v * float("nan"),
        lambda v: rnp.maximum(v, 3),
    ]
    for op in ops:
        for got, want in [(op(split), op(whole)), (ri.jit(op)(split), ri.jit(op)(whole))]:
            assert (got.dtype, got.weak_type) == (want.dtype, want.weak_type)
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
            assert got.sharding.spec == rs.P("x")
    twice = op(op(split))  # the promoted scalar is kept on the mesh: used again
    np.testing.assert_array_equal(np.asarray(twice), np.asarray(op(op(whole))))


@pytest.mark.parametrize("on_backend", ["pjrt"], indirect=True)
def test_pjrt_eager_operations_move_no_data(on_backend):
    from refimpl.transforms.pmap import transfer_count

    x = ri.device_put(cases.X8, rs.NamedSharding(mesh_of((4,), ("x",)), rs.P("x")))
    y = x * 2 + 1  # the first use of each scalar moves it to the mesh's devices
    before = transfer_count()
    for _ in range(3):
        y = rnp.sin(y * 2 + 1) + x  # partitioned, the scalars kept on the mesh
    assert transfer_count() == before
    expected = cases.X8 * 2 + 1
    for _ in range(3):
        expected = np.sin(expected * 2 + 1) + cases.X8
    np.testing.assert_allclose(np.asarray(y), expected, rtol=1e-6)


@pytest.mark.parametrize("on_backend", BACKENDS, indirect=True)
def test_sharded_call_with_no_outputs(on_backend):
    # (pjrt: no C++ entry for an executable with no outputs; the plan is
    # left out rather than refused)
    s = rs.NamedSharding(mesh_of((4,), ("x",)), rs.P("x"))
    x = ri.device_put(cases.X8, s)
    for f in (ri.jit(lambda a: None), ri.jit(lambda a: None, in_shardings=s)):
        assert f(x) is None and f(x) is None


@pytest.mark.parametrize("on_backend", BACKENDS, indirect=True)
def test_dot_general_out_sharding_parameter(on_backend):
    """JAX 0.10.2's ``out_sharding`` of dot_general: a PartitionSpec needs a
    current mesh (JAX's ValueError), Auto axes are refused (ValueError), an
    equation carries it only when given, and AD's transposed product carries
    the AS_PRIMAL marker (docs/sharding_rules.md, "Gradients")."""
    from refimpl.primitives.linalg import AS_PRIMAL

    a = np.ones((8, 4), np.float32)
    with pytest.raises(ValueError, match="not under a mesh context"):
        ri.lax.dot_general(a, a.T, (((1,), (0,)), ((), ())), out_sharding=rs.P("x"))
    auto = mesh_of((4,), ("x",), auto=True)
    with pytest.raises(ValueError, match="type Auto or Manual"):
        ri.jit(lambda v: rnp.matmul(v, v.T, out_sharding=rs.NamedSharding(auto, rs.P("x"))))(a)
    plain = ri.make_jaxpr(lambda v: v @ v.T)(a).jaxpr.eqns[0]
    assert "out_sharding" not in plain.params
    grad = ri.make_jaxpr(ri.grad(lambda w: (a @ w).sum()))(np.ones((4, 3), np.float32))
    dots = [e for e in grad.jaxpr.eqns if e.primitive.name == "dot_general"]
    assert [e.params.get("out_sharding") for e in dots] == [None, AS_PRIMAL]
