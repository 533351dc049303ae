"""Issue 33's sharding parity leftovers against JAX on 4 CPU devices, both
backends, Explicit and Auto axes (tests/helpers/sharding_closure_cases.py):
``jit`` of a function closing over a sharded array (on Explicit axes the
constant's sharding is part of its type: the outputs are typed by it, and
without a sharded argument or ``set_mesh`` JAX's device-assignment error),
``set_mesh`` while a transformation traces (JAX's ValueError), eager
broadcasting over a mesh, and eager basic indexing of a sharded array
(JAX's gather for partial slices). Compared per output leaf: the value,
the spec, every shard's (device id, index, shape); errors by class, and
by their words where refimpl gives JAX's. On pjrt a cached call closing
over a sharded array is served by the C++ path and moves no data.
"""

from __future__ import annotations

import numpy as np
import pytest

import refimpl as ri
from refimpl import sharding as rs
from tests.helpers import sharding_closure_cases as cases
from tests.helpers.sharding_fixtures import (  # noqa: F401 (a fixture)
    BACKENDS,
    fed_back_as_cpp_hits,
    four_device_backend,
    jax_oracle,
    mesh_of,
)

oracle = jax_oracle("sharding_closure_cases.py")


@pytest.mark.parametrize("on_backend", BACKENDS, indirect=True)
@pytest.mark.parametrize("name", list(cases.CASES))
def test_case_against_jax(oracle, name, on_backend):
    expected, got = oracle[name], cases.observe(cases.CASES[name](ri, mesh_of))
    if isinstance(expected, tuple) or isinstance(got, tuple):
        assert isinstance(got, tuple), got
        if name in cases.SAME_WORDS:
            assert got == expected
        else:
            assert got[0] == expected[0], got
        return
    assert len(got) == len(expected)
    for (g_value, g_spec, g_shards), (e_value, e_spec, e_shards) in zip(got, expected):
        assert g_value.dtype == e_value.dtype and g_value.shape == e_value.shape
        np.testing.assert_allclose(g_value, e_value, rtol=2e-5, atol=2e-6)
        assert g_spec == e_spec
        assert g_shards == e_shards


@pytest.mark.parametrize("on_backend", ["pjrt"], indirect=True)
@pytest.mark.parametrize("auto", [False, True])
def test_pjrt_call_closing_over_a_sharded_array_is_a_cpp_hit(on_backend, auto):

    m = mesh_of((4,), ("x",), auto)
    c = ri.device_put(cases.X8, rs.NamedSharding(m, rs.P("x")))
    x = ri.device_put(cases.X8 + 1, rs.NamedSharding(m, rs.P("x")))
    f = ri.jit(lambda a: a * c + 1)
    y = f(x)
    y, over_mesh = fed_back_as_cpp_hits(f, y)
    assert y.sharding.spec == rs.P("x")
    expected = cases.X8 + 1
    for _ in range(4):
        expected = expected * cases.X8 + 1
    np.testing.assert_allclose(np.asarray(y), expected, rtol=1e-6)


@pytest.mark.parametrize("on_backend", BACKENDS, indirect=True)
def test_error_repeats_on_a_cached_call(on_backend):
    # the signature's cache entry (and pjrt's C++ path) never serves the
    # closure's call on one device: every call refuses it
    c = ri.device_put(cases.X8, rs.NamedSharding(mesh_of((4,), ("x",)), rs.P("x")))
    f = ri.jit(lambda a: a + c)
    for _ in range(3):
        with pytest.raises(ValueError, match="Length of device assignment 1"):
            f(cases.ONES8)
