"""``device.client.live_executables()``: the executables of a PJRT client
still alive, as JAX's (api_test's test_jit_cache_clear). Each live CPU
executable holds memory mappings of the process (docs/semantics.md 16.1), so
``jit(f).clear_cache()`` and ``clear_caches()`` must let them go; compared
with JAX live."""

from __future__ import annotations

import gc
import importlib.util
import pathlib

import jax
import numpy as np
import pytest

import refimpl as ri

_spec = importlib.util.spec_from_file_location(
    "pjrt_helpers", pathlib.Path(__file__).parents[1] / "helpers" / "pjrt_helpers.py"
)
_helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_helpers)
_helpers.skip_without_pjrt()

pytestmark = pytest.mark.pjrt


def _live(client) -> int:
    gc.collect()
    return len(client.live_executables())


@pytest.mark.parametrize("api", ["refimpl", "jax"])
def test_clear_cache_lets_the_executable_go(api):
    if api == "refimpl":
        jit, client = (lambda f: ri.jit(f, backend="pjrt")), ri.devices("pjrt")[0].client
    else:
        jit, client = jax.jit, jax.devices()[0].client

    def add(x, y):
        return x + y

    f = jit(add)
    before = _live(client)
    f(1, 2).block_until_ready()
    assert _live(client) == before + 1
    f(np.ones(3), np.ones(3)).block_until_ready()  # another signature: another executable
    assert _live(client) == before + 2
    f.clear_cache()
    assert _live(client) == before


def test_clear_caches_lets_every_jit_executable_go():
    client = ri.devices("pjrt")[0].client
    fs = [ri.jit(lambda x, k=k: x * k, backend="pjrt") for k in range(3)]
    before = _live(client)
    for f in fs:
        f(np.ones(2, np.float32)).block_until_ready()
    assert _live(client) == before + 3
    ri.clear_caches()
    assert _live(client) <= before


def test_live_executables_are_the_clients_executables():
    client = ri.devices("pjrt")[0].client
    f = ri.jit(lambda x: x - 1, backend="pjrt")
    f(np.ones(2, np.float32))
    live = client.live_executables()
    assert all(type(e).__name__ == "Executable" for e in live)
    assert all(d.client.platform_name == client.platform_name for d in ri.devices("pjrt"))
