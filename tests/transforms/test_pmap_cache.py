"""pjrt pmap executables in the persistent compilation cache.

A pmap's one executable over N replicas is stored and found like jit's: a
second process loads it instead of compiling (and, through the program key,
without lowering); the key covers the replica count and the device
assignment. Results are checked against NumPy.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tests.helpers.pjrt_helpers import skip_without_pjrt

skip_without_pjrt()

import refimpl as ri  # noqa: E402
from refimpl import lax  # noqa: E402
from refimpl.backends.pjrt import compilation_cache as cc  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import refimpl as ri
    from refimpl import lax
    from refimpl.backends.pjrt import compilation_cache as cc, executables

    lowered = []
    real_lowering = executables._lowering
    def counting_lowering():
        lowered.append(1)
        return real_lowering()
    executables._lowering = counting_lowering

    def step(x, w):
        return lax.psum(x * w, "i") + lax.axis_index("i").astype(np.float32)

    f = ri.pmap(step, "i", in_axes=(0, None), backend="pjrt")
    x = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    w = np.float32(0.5)
    out = f(x, w)
    again = f(out, w)  # a new C++ signature (sharded input): its executable is cached
    again = f(again, w)  # a C++ hit
    print(json.dumps({
        "out": np.asarray(out).tolist(),
        "again": np.asarray(again).tolist(),
        "stats": cc.stats(),
        "lowered": bool(lowered),
        "source": cc._source_identity(),
        "type": type(f).__name__,
        "fast": f._fast_stats(),
        "mlir": any(m.startswith("jaxlib.mlir") for m in sys.modules),
    }))
    """
)


def _run_child(cache: Path) -> dict:
    env = dict(os.environ, REFIMPL_COMPILATION_CACHE_DIR=str(cache))
    done = subprocess.run(
        [sys.executable, "-c", CHILD],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _expected_step(x: np.ndarray, w: np.float32) -> np.ndarray:
    total = (x * w).sum(axis=0)  # psum over the 4 devices
    return np.stack([total + np.float32(m) for m in range(4)])


def _counts(hits=0, misses=0, writes=0, rejected=0, program_hits=0) -> dict[str, int]:
    return {
        "hits": hits,
        "misses": misses,
        "writes": writes,
        "rejected": rejected,
        "program_hits": program_hits,
    }


def test_second_process_loads_the_pmap_executable(tmp_path):
    first = _run_child(tmp_path)
    assert first["stats"] == _counts(misses=1, writes=1)
    assert len(list(tmp_path.glob("*.rexe"))) == 1
    second = _run_child(tmp_path)
    # through the program key (nothing lowered) unless another session edited
    # refimpl between the two processes (then the StableHLO key finds it)
    through_program = int(first["source"] == second["source"])
    assert second["stats"] == _counts(hits=1, program_hits=through_program)
    assert second["lowered"] == (not through_program)
    assert second["mlir"] == (not through_program)
    # the C++ fast path's misses (host, then sharded input) went to the cache
    # once (one compiled signature); all three calls ran their execute in C++
    # (``hits`` counts the run that follows a miss too)
    assert second["type"] == "FastJitted"
    assert second["fast"]["misses"] == 2 and second["fast"]["hits"] == 3
    assert second["fast"]["slow"] == 0
    x = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    expected = _expected_step(x, np.float32(0.5))
    np.testing.assert_allclose(second["out"], expected, rtol=1e-6)
    twice = _expected_step(_expected_step(expected, np.float32(0.5)), np.float32(0.5))
    np.testing.assert_allclose(second["again"], twice, rtol=1e-6)
    assert second["out"] == first["out"] and second["again"] == first["again"]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setitem(ri.config._values, "compilation_cache_dir", str(tmp_path))
    cc.reset_stats()
    return tmp_path


def _step(x, w):
    return lax.psum(x * w, "i") + lax.axis_index("i").astype(np.float32)


def test_key_covers_device_assignment_and_replica_count(cache):
    devices = ri.devices("pjrt")
    x = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    w = np.float32(2.0)
    expected = _expected_step(x, w)
    # a new pmap object has its own in-memory cache: its miss reads the disk
    out = ri.pmap(_step, "i", in_axes=(0, None), backend="pjrt")(x, w)
    assert cc.stats() == _counts(misses=1, writes=1)
    again = ri.pmap(_step, "i", in_axes=(0, None), backend="pjrt")(x, w)
    assert cc.stats() == _counts(misses=1, writes=1, hits=1, program_hits=1)
    # the same program on the devices in another order: another executable
    flipped = ri.pmap(_step, "i", in_axes=(0, None), devices=devices[::-1], backend="pjrt")
    out_flipped = flipped(x, w)
    assert cc.stats() == _counts(misses=2, writes=2, hits=1, program_hits=1)
    assert [s.device for s in out_flipped.addressable_shards] == devices[::-1]
    # the same per-device program over 2 replicas: another executable
    two = ri.pmap(_step, "i", in_axes=(0, None), devices=devices[:2], backend="pjrt")
    out_two = two(x[:2], w)
    assert cc.stats() == _counts(misses=3, writes=3, hits=1, program_hits=1)
    assert len(list(cache.glob("*.rexe"))) == 3
    for result in (out, again, out_flipped):
        np.testing.assert_allclose(np.asarray(result), expected, rtol=1e-6)
    two_expected = np.stack([(x[:2] * w).sum(axis=0) + np.float32(m) for m in range(2)])
    np.testing.assert_allclose(np.asarray(out_two), two_expected, rtol=1e-6)


def test_cache_off_still_compiles(monkeypatch):
    monkeypatch.setitem(ri.config._values, "compilation_cache_dir", None)
    cc.reset_stats()
    x = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    out = ri.pmap(_step, "i", in_axes=(0, None), backend="pjrt")(x, np.float32(1.0))
    np.testing.assert_allclose(np.asarray(out), _expected_step(x, np.float32(1.0)), rtol=1e-6)
    assert cc.stats() == _counts()
