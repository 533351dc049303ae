"""Shared test fixtures: a fresh config per test, and a JAX oracle that matches it."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from conformance.implementations import exact_16bit_oracle
from refimpl.config import config

# JAX, the tests' oracle, rounds 16-bit floats after every operation (as
# refimpl does) whatever the host CPU or XLA_FLAGS: set before jax starts.
exact_16bit_oracle()


@pytest.fixture(autouse=True)
def _restore_config():
    saved = config.snapshot()
    yield
    for name, value in saved.items():
        config.update(name, value)


def pytest_runtest_teardown(item, nextitem):
    """After each test file, empty refimpl's and JAX's caches of compiled
    programs. Each live XLA CPU executable (the plugin's and jaxlib's alike)
    holds 3 memory mappings, and Linux allows a process 65,530
    (``vm.max_map_count``); a worker that runs a third of the suite keeps every
    executable its files' module-level and parametrized functions compiled,
    and past about 21,800 of them XLA's next compile segfaults (CI, round 19:
    a worker died in JAX's compile; docs/semantics.md 16.1)."""
    if nextitem is not None and nextitem.path == item.path:
        return
    import refimpl

    refimpl.clear_caches()
    jax = sys.modules.get("jax")
    if jax is not None:
        jax.clear_caches()


@pytest.fixture
def four_ref_devices() -> None:
    """The reference backend simulates 4 devices (pmap programs, as the pjrt
    backend's CPU plugin has); ``_restore_config`` puts the count back."""
    config.update("ref_num_devices", 4)


@pytest.fixture(params=["ref", "pjrt"])
def backend(request) -> str:
    """Runs the test once per backend, each the default backend of jit and
    device_put (``_restore_config`` puts the previous one back)."""
    config.update("backend", request.param)
    return request.param


def _x64_both(enabled: bool):
    """enable_x64 set in refimpl and in jax (the oracle) alike; both restored after."""
    import jax

    old_ri, old_jax = config.enable_x64, jax.config.jax_enable_x64
    config.update("enable_x64", enabled)
    jax.config.update("jax_enable_x64", enabled)
    try:
        yield enabled
    finally:
        config.update("enable_x64", old_ri)
        jax.config.update("jax_enable_x64", old_jax)


@pytest.fixture
def x64():
    """enable_x64 on in refimpl and in jax alike."""
    yield from _x64_both(True)


@pytest.fixture(params=[False, True], ids=["x64_off", "x64_on"])
def x64_mode(request):
    """The test once with enable_x64 off and once on, in refimpl and in jax
    alike; the value is the flag."""
    yield from _x64_both(request.param)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


@pytest.fixture(autouse=True)
def _no_leaked_trace(request):
    """A test must leave no active trace behind: a leaked trace makes later
    eager code run as if traced (staged, off the fast path)."""
    from refimpl import tracing

    yield
    leaked = list(tracing._builders)
    if leaked:
        tracing._builders.clear()
        tracing._stack.__dict__.clear()
        tracing._stack.__init__()
        pytest.fail(f"{request.node.nodeid} left active traces behind: {leaked}")


# --- the default run's sample of long parametrizations ------------------------------
#
# Some tests are parametrized over every dtype pair, op and argument form JAX
# distinguishes (up to 1,500 cases for one test function). The default run
# (`python -m pytest`) keeps EXHAUSTIVE_KEEP of them per test function, spread
# evenly over the parametrization order so that every axis of the grid is
# still exercised, and marks the rest `exhaustive`; CI runs them all
# (`-m "not slow"`), and so does `-m exhaustive` or `-m "slow or not slow"`.
EXHAUSTIVE_KEEP = 12


def _spread(count: int, keep: int) -> set[int]:
    """``keep`` indices out of ``range(count)``, evenly spaced, first and last included."""
    return {round(i * (count - 1) / (keep - 1)) for i in range(keep)}


@pytest.hookimpl(tryfirst=True)  # before the -m option deselects by marker
def pytest_collection_modifyitems(config, items):
    groups: dict[tuple, list] = {}
    for item in items:
        if getattr(item, "callspec", None) is not None:
            key = (str(item.path), item.cls, getattr(item, "originalname", item.name))
            groups.setdefault(key, []).append(item)
    for group in groups.values():
        if len(group) <= EXHAUSTIVE_KEEP:
            continue
        kept = _spread(len(group), EXHAUSTIVE_KEEP)
        for index, item in enumerate(group):
            if index not in kept:
                item.add_marker(pytest.mark.exhaustive)
