"""Eager differentiation of sharded arrays against JAX on 4 CPU devices
(issue 33): ``grad``, ``value_and_grad``, ``vjp``, ``jvp``, ``linearize``,
``jacfwd`` and ``jacrev`` outside ``jit`` keep the mesh, as JAX 0.10.2 --
a gradient laid out as its primal's sharding on Explicit axes, the value
as the sharding rule lays it out, a tangent out like its primal out
(docs/semantics.md "Sharding", AD's residuals). Compared per output leaf
on both backends, over 1-D and 2-D meshes with Explicit and Auto axes:
value, spec as written, every shard's (device id, index, shape). On pjrt
an eager gradient moves no data.
"""

from __future__ import annotations

import numpy as np
import pytest

import refimpl as ri
from refimpl import sharding as rs
from tests.helpers import sharding_eager_ad_cases as cases
from tests.helpers.sharding_fixtures import (  # noqa: F401 (a fixture)
    BACKENDS,
    four_device_backend,
    jax_oracle,
    mesh_of,
)

oracle = jax_oracle("sharding_eager_ad_cases.py")


def _written(spec, auto):
    """Under Auto axes the spec without trailing Nones: how JAX spells an
    Auto layout (XLA's choice) is the sharding rule's business
    (test_sharding_rules_parity), the layout is compared by the shards."""
    while auto and spec and spec[-1] is None:
        spec = spec[:-1]
    return spec


def _assert_same(got, expected, auto=False):
    if isinstance(expected, str) or isinstance(got, str):
        assert got == expected
        return
    assert len(got) == len(expected)
    for (g_value, g_spec, g_shards), (e_value, e_spec, e_shards) in zip(got, expected):
        assert g_value.dtype == e_value.dtype and g_value.shape == e_value.shape
        np.testing.assert_allclose(g_value, e_value, rtol=2e-5, atol=2e-6)
        assert (_written(g_spec, auto), g_shards) == (_written(e_spec, auto), e_shards)


@pytest.mark.parametrize("on_backend", BACKENDS, indirect=True)
@pytest.mark.parametrize("name", list(cases.CASES))
def test_case_against_jax(oracle, name, on_backend):
    _assert_same(cases.run_case(ri, name, mesh_of), oracle[name], auto=cases.CASES[name][1])


@pytest.mark.parametrize("on_backend", BACKENDS, indirect=True)
def test_explicit_axes_need_no_set_mesh(oracle, on_backend):
    """Where JAX 0.10.2 refuses an eager backward pass over Explicit axes
    outside ``set_mesh`` (its ValueError 'Please enter your `jit` into a
    mesh context'), refimpl gives what JAX gives under ``set_mesh``
    (docs/semantics.md "Sharding")."""
    x = ri.device_put(cases.X8, rs.NamedSharding(mesh_of((4,), ("x",)), rs.P("x")))
    _assert_same(cases.observe([ri.grad(cases._sum_squares)(x)]), oracle["grad_sum_squares_1d"])


@pytest.mark.parametrize("on_backend", ["pjrt"], indirect=True)
@pytest.mark.parametrize("auto", [False, True])
def test_pjrt_eager_pullbacks_move_no_data(on_backend, auto):
    """The residuals stay on the devices (no gathered NumPy constant): a
    repeated eager vjp, jvp or linearize of a sharded array with sharded
    (co)tangents adds no host<->device transfer. (grad's seed, a literal as
    in jit(grad), is placed on the mesh by its first sharded operation.)"""
    from refimpl.transforms.pmap import transfer_count

    x = ri.device_put(cases.X8, rs.NamedSharding(mesh_of((4,), ("x",), auto), rs.P("x")))
    f = lambda v: ri.numpy.sin(v) * v  # noqa: E731
    calls = [
        lambda: ri.vjp(f, x)[1](x),
        lambda: ri.jvp(f, (x,), (x,)),
        lambda: ri.linearize(f, x)[1](x),
    ]
    for call in calls:
        call()  # compiles, places constants
        before = transfer_count()
        out = call()
        assert transfer_count() == before
        for leaf in ri.tree_util.tree_leaves(out):
            assert leaf.sharding.spec == rs.P("x")


@pytest.mark.parametrize("on_backend", BACKENDS, indirect=True)
def test_eager_gradient_of_a_pmap_output_keeps_its_sharding(on_backend):
    """A pmap output is a sharded argument too (``sharded.is_split``): its
    gradient, pullback and tangent come back laid out as it, as JAX 0.10.2's
    (NamedSharding over the pmap axis; probed on 4 CPU devices)."""
    y = ri.pmap(lambda v: v * 2)(np.arange(8.0, dtype=np.float32).reshape(4, 2))
    grad = ri.grad(lambda v: (v**2).sum())(y)
    (pulled,) = ri.vjp(ri.numpy.sin, y)[1](y)
    _, tangent = ri.jvp(ri.numpy.sin, (y,), (y,))
    for out, want in [(grad, 2 * np.asarray(y)), (pulled, np.cos(y) * y), (tangent, np.cos(y) * y)]:
        assert out.sharding == y.sharding
        np.testing.assert_allclose(np.asarray(out), want, rtol=1e-6)


@pytest.mark.parametrize("on_backend", BACKENDS, indirect=True)
@pytest.mark.parametrize("auto", [False, True])
def test_eager_data_parallel_steps_equal_single_device_steps(on_backend, auto):
    """Three eager steps (value_and_grad, then ``w - 0.1 * g``), params P(),
    batch split over 'x': the parameters stay replicated over the mesh (on
    Explicit axes spelled one entry per axis, as JAX types them) and equal
    the single-device steps'."""
    m = mesh_of((4,), ("x",), auto)
    params, (x, y) = cases._mlp_data()
    single = dict(params)
    p = {k: ri.device_put(v, rs.NamedSharding(m, rs.P())) for k, v in params.items()}
    xs, ys = (ri.device_put(v, rs.NamedSharding(m, rs.P("x"))) for v in (x, y))
    step = lambda w, g: w - 0.1 * g  # noqa: E731
    with ri.set_mesh(m):
        for _ in range(3):
            _, g = ri.value_and_grad(lambda q: cases._mlp_loss(ri, q, xs, ys))(p)
            p = ri.tree_util.tree_map(step, p, g)
            _, g = ri.value_and_grad(lambda q: cases._mlp_loss(ri, q, x, y))(single)
            single = ri.tree_util.tree_map(step, single, g)
    for k, value in p.items():
        want = rs.P() if auto else rs.P(*(None,) * value.ndim)
        assert value.sharding.mesh == m and tuple(value.sharding.spec) == tuple(want)
        np.testing.assert_allclose(np.asarray(value), np.asarray(single[k]), rtol=1e-5, atol=1e-6)
