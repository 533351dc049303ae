"""What the sharding parity test files share: JAX's observations of a case
script on 4 CPU devices (a module-scoped fixture), refimpl's default backend
set to 4 devices (the fixture ``on_backend``, parametrized indirectly by ``BACKENDS``),
and refimpl meshes of those devices (``mesh_of``)."""

from __future__ import annotations

import pytest

import refimpl as ri
from refimpl import sharding as rs
from tests.helpers.jax_oracle import results_on_four_devices
from tests.helpers.sharding_cases import four_devices_on, typed_mesh

BACKENDS = ["ref", "pjrt"]


def jax_oracle(script: str):
    """A module-scoped fixture holding what ``tests/helpers/<script>`` records
    when JAX runs it on 4 CPU devices (in its own process: JAX reads XLA_FLAGS
    once, when it starts). Assign it to ``oracle`` in the test module."""

    @pytest.fixture(scope="module")
    def oracle(tmp_path_factory):
        folder = tmp_path_factory.mktemp(script.removesuffix(".py"))
        return results_on_four_devices(script, folder / "jax.pkl")

    return oracle


@pytest.fixture(name="on_backend")
def four_device_backend(request):
    """refimpl's default backend ``request.param`` (4 devices) for the test
    (imported under this name, used as ``on_backend``)."""
    with four_devices_on(request.param) as backend:
        yield backend


def mesh_of(shape, names, auto=False):
    """A refimpl mesh of the default backend's first devices, every axis
    Explicit (or, with ``auto``, Auto)."""
    return typed_mesh(rs, ri.devices(), shape, names, auto)


def fed_back_as_cpp_hits(f, y, calls=3):
    """``y`` fed back to the plain ``jit`` ``f`` ``calls`` times: every call a
    hit of the C++ FastSharded of its jit over the mesh, and no data moved.
    Returns the last output and that jit over the mesh."""
    from refimpl.transforms.pmap import transfer_count

    over_mesh = f._jitted._sharded  # the plain jit's jit over the mesh (C++ FastSharded)
    hits, before = over_mesh._fast_stats()["hits"], transfer_count()
    for _ in range(calls):
        y = f(y)
    assert over_mesh._fast_stats()["hits"] == hits + calls and transfer_count() == before
    return y, over_mesh
