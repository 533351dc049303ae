"""The persistent compilation cache (refimpl.backends.pjrt.compilation_cache).

Results are checked against NumPy; hits and misses against the cache's own
counters and the files on disk, across real processes where it matters.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

from tests.pjrt_helpers import skip_without_pjrt

skip_without_pjrt()

import refimpl as ri  # noqa: E402
from refimpl.backends.pjrt import compilation_cache as cc  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

# A child process: computes the functions named on its command line with the
# cache of $REFIMPL_COMPILATION_CACHE_DIR, prints its results and counters.
CHILD = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import refimpl as ri
    from refimpl.backends.pjrt import compilation_cache as cc

    def poly(x):
        return x * x * 3.0 + x - 2.0

    def chain(x):
        for i in range(int(sys.argv[2])):
            x = x + float(i)
        return x

    fun = {"poly": poly, "chain": chain}[sys.argv[1]]
    x = np.linspace(-2.0, 2.0, 16, dtype=np.float32)
    out = np.asarray(ri.jit(fun, backend="pjrt")(x)).tolist()
    print(json.dumps({"out": out, "stats": cc.stats()}))
    """
)


def _child(cache: Path, *args: str) -> subprocess.Popen:
    env = dict(os.environ, REFIMPL_COMPILATION_CACHE_DIR=str(cache))
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _result(process: subprocess.Popen) -> dict:
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


X = np.linspace(-2.0, 2.0, 16, dtype=np.float32)


def _poly_expected(x: np.ndarray) -> np.ndarray:
    return x * x * np.float32(3.0) + x - np.float32(2.0)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """The cache on in ``tmp_path`` for this test, counters reset."""
    monkeypatch.setitem(ri.config._values, "compilation_cache_dir", str(tmp_path))
    cc.reset_stats()
    return tmp_path


def _fresh_poly():
    """A new jit (its own in-memory cache) of the same program each time."""

    def poly(x):
        return x * x * 3.0 + x - 2.0

    return ri.jit(poly, backend="pjrt")


def _entries(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.rexe"))


def test_second_process_hits(tmp_path):
    first = _result(_child(tmp_path, "poly"))
    assert first["stats"] == {"hits": 0, "misses": 1, "writes": 1, "rejected": 0}
    assert len(_entries(tmp_path)) == 1
    second = _result(_child(tmp_path, "poly"))
    assert second["stats"] == {"hits": 1, "misses": 0, "writes": 0, "rejected": 0}
    np.testing.assert_allclose(second["out"], _poly_expected(X), rtol=1e-6, atol=1e-5)
    assert second["out"] == first["out"]


def test_in_process_hit_and_config(cache):
    first, second = _fresh_poly(), _fresh_poly()
    # the C++ fast path: its miss goes through the cache before compiling
    assert type(first).__name__ == "FastJitted"
    y1 = first(X)
    y2 = second(X)
    assert second(X) is not None  # a C++ hit now: no new lookup in the cache
    assert cc.stats() == {"hits": 1, "misses": 1, "writes": 1, "rejected": 0}
    np.testing.assert_allclose(np.asarray(y2), _poly_expected(X), rtol=1e-6, atol=1e-5)
    np.testing.assert_array_equal(np.asarray(y1), np.asarray(y2))


@pytest.mark.parametrize("damage", ["flip", "truncate", "foreign", "empty", "other_key"])
def test_damaged_entry_warns_and_recompiles(cache, damage):
    _fresh_poly()(X)
    (entry,) = _entries(cache)
    data = entry.read_bytes()
    if damage == "flip":
        data = data[:-10] + bytes(b ^ 0xFF for b in data[-10:])
    elif damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "foreign":
        data = b"\x7fELF not an entry at all" * 10
    elif damage == "empty":
        data = b""
    else:  # a whole, valid entry of another program, copied under this name
        other = ri.jit(lambda x: x - 1.0, backend="pjrt")
        other(X)
        (other_entry,) = [e for e in _entries(cache) if e != entry]
        data = other_entry.read_bytes()
    entry.write_bytes(data)
    cc.reset_stats()
    with pytest.warns(cc.CompilationCacheWarning, match="ignoring the entry"):
        y = _fresh_poly()(X)
    np.testing.assert_allclose(np.asarray(y), _poly_expected(X), rtol=1e-6, atol=1e-5)
    assert cc.stats() == {"hits": 0, "misses": 1, "writes": 1, "rejected": 1}
    # rewritten: the next lookup hits without a warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", cc.CompilationCacheWarning)
        _fresh_poly()(X)
    assert cc.stats()["hits"] == 1


def test_other_plugin_version_misses(cache, monkeypatch):
    _fresh_poly()(X)
    real = cc.plugin_identity

    def other_build(client):
        return real(client).replace("api=", "api=(0, 999) was ")

    monkeypatch.setattr(cc, "plugin_identity", other_build)
    cc.reset_stats()
    y = _fresh_poly()(X)
    assert cc.stats() == {"hits": 0, "misses": 1, "writes": 1, "rejected": 0}
    assert len(_entries(cache)) == 2
    np.testing.assert_allclose(np.asarray(y), _poly_expected(X), rtol=1e-6, atol=1e-5)


def test_key_covers_text_options_and_plugin():
    from refimpl.backends.pjrt.executables import client as get_client

    c = get_client()
    base = cc.entry_key("module @a {}", b"opts", c)
    assert base == cc.entry_key("module @a {}", b"opts", c)
    assert base != cc.entry_key("module @b {}", b"opts", c)
    assert base != cc.entry_key("module @a {}", b"opts2", c)


def test_lru_eviction(cache, monkeypatch):
    funs = [lambda x: x + 1.0, lambda x: x * 5.0, lambda x: x - 7.0]
    paths = []
    for fun in funs:
        before = set(_entries(cache))
        ri.jit(fun, backend="pjrt")(X)
        (new,) = set(_entries(cache)) - before
        paths.append(new)
    a, b, c = paths
    os.utime(a, ns=(1_000_000_000, 3_000_000_000))
    os.utime(b, ns=(1_000_000_000, 1_000_000_000))  # least recently used
    os.utime(c, ns=(1_000_000_000, 2_000_000_000))
    # room for two of the three: the least recently used one (b) goes
    limit = a.stat().st_size + c.stat().st_size
    monkeypatch.setitem(ri.config._values, "compilation_cache_max_size", limit)
    cc._evict(cache, keep=c)
    assert set(_entries(cache)) == {a, c}
    # a write past the limit evicts as well, never the entry just written
    monkeypatch.setitem(ri.config._values, "compilation_cache_max_size", 1)
    before = set(_entries(cache))
    ri.jit(lambda x: x / 3.0, backend="pjrt")(X)
    (d,) = set(_entries(cache)) - before
    assert _entries(cache) == [d]


def test_hit_refreshes_recency(cache):
    _fresh_poly()(X)
    (entry,) = _entries(cache)
    os.utime(entry, ns=(1_000_000_000, 1_000_000_000))
    _fresh_poly()(X)
    assert cc.stats()["hits"] == 1
    assert entry.stat().st_mtime_ns > 1_000_000_000


def test_config_validation():
    with pytest.raises(TypeError, match="compilation_cache_dir"):
        ri.config.update("compilation_cache_dir", 3)
    with pytest.raises(ValueError, match="compilation_cache_max_size"):
        ri.config.update("compilation_cache_max_size", -1)


@pytest.mark.slow
def test_two_processes_writing_at_once(tmp_path):
    processes = [_child(tmp_path, "chain", "300") for _ in range(2)]
    results = [_result(p) for p in processes]
    expected = X.copy()
    for i in range(300):
        expected = expected + np.float32(i)
    for result in results:
        np.testing.assert_allclose(result["out"], expected, rtol=1e-6, atol=1e-5)
        assert result["stats"]["rejected"] == 0
    assert not list(tmp_path.glob("*.tmp")), "a temporary file was left behind"
    assert len(_entries(tmp_path)) == 1
    third = _result(_child(tmp_path, "chain", "300"))
    assert third["stats"] == {"hits": 1, "misses": 0, "writes": 0, "rejected": 0}
    np.testing.assert_allclose(third["out"], expected, rtol=1e-6, atol=1e-5)


def test_aot_compile_uses_the_cache(cache):
    def f(x):
        return ri.lax.platform_dependent(x, cpu=lambda v: v + 1.0, tpu=lambda v: v - 1.0)

    for expected_stats in ({"hits": 0, "misses": 1}, {"hits": 1, "misses": 1}):
        lowered = ri.jit(f, backend="pjrt").trace(X).lower(lowering_platforms=("tpu", "cpu"))
        compiled = lowered.compile()
        assert {k: cc.stats()[k] for k in expected_stats} == expected_stats
        np.testing.assert_allclose(np.asarray(compiled(X)), X + 1.0)
