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

from tests.helpers.pjrt_helpers import skip_without_pjrt

skip_without_pjrt()

import refimpl as ri  # noqa: E402
from refimpl.backends.pjrt import compilation_cache as cc  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

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

    # whether anything needed the lowering module (imported on first use)
    from refimpl.backends.pjrt import executables
    lowered = []
    real_lowering = executables._lowering
    def counting_lowering():
        lowered.append(1)
        return real_lowering()
    executables._lowering = counting_lowering

    fun = {"poly": poly, "chain": chain}[sys.argv[1]]
    x = np.linspace(-2.0, 2.0, 16, dtype=np.float32)
    jitted = ri.jit(fun, backend="pjrt")
    out = np.asarray(jitted(x)).tolist()
    again = np.asarray(jitted(x)).tolist()
    print(json.dumps({
        "out": out,
        "again": again,
        "stats": cc.stats(),
        "lowered": bool(lowered),
        "source": cc._source_identity(),
        "type": type(jitted).__name__,
        "fast": jitted._fast_stats(),
        "mlir": any(m.startswith("jaxlib.mlir") for m in sys.modules),
    }))
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


def _counts(hits=0, misses=0, writes=0, rejected=0, program_hits=0) -> dict[str, int]:
    return {
        "hits": hits,
        "misses": misses,
        "writes": writes,
        "rejected": rejected,
        "program_hits": program_hits,
    }


def test_second_process_hits(tmp_path):
    """A new process finds the entry: through the C++ fast path's miss, without
    compiling, and (the program key) without lowering."""
    first = _result(_child(tmp_path, "poly"))
    assert first["stats"] == _counts(misses=1, writes=1)
    assert len(_entries(tmp_path)) == 1
    second = _result(_child(tmp_path, "poly"))
    # found through the program key (nothing lowered), unless another session
    # edited refimpl between the two processes (then the StableHLO key finds it)
    through_program = int(first["source"] == second["source"])
    assert second["stats"] == _counts(hits=1, program_hits=through_program)
    assert second["lowered"] == (not through_program)
    # nothing lowered: jaxlib's MLIR (~150 ms to import) was never loaded
    assert second["mlir"] == (not through_program)
    assert first["mlir"]
    # the C++ fast path's miss went to the cache (no compile), its next call was a C++ hit
    assert second["type"] == "FastJitted"
    assert second["fast"]["misses"] == 1 and second["fast"]["slow"] == 0
    assert second["fast"]["hits"] >= 1
    assert second["again"] == second["out"]
    np.testing.assert_allclose(second["out"], _poly_expected(X), rtol=1e-6, atol=1e-5)
    assert second["out"] == first["out"]


def test_in_process_hit_and_config(cache):
    first, second = _fresh_poly(), _fresh_poly()
    # the C++ fast path: its miss goes through the cache before compiling
    assert type(first).__name__ == "FastJitted"
    y1 = first(X)
    y2 = second(X)
    assert second(X) is not None  # a C++ hit now: no new lookup in the cache
    assert cc.stats() == _counts(hits=1, misses=1, writes=1, program_hits=1)
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
    assert cc.stats() == _counts(misses=1, writes=1, rejected=1)
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
    assert cc.stats() == _counts(misses=1, writes=1)
    assert len(_entries(cache)) == 2
    np.testing.assert_allclose(np.asarray(y), _poly_expected(X), rtol=1e-6, atol=1e-5)


def test_key_covers_text_options_and_plugin(monkeypatch):
    from refimpl.backends.pjrt.executables import client as get_client

    c = get_client()
    base = cc.entry_key("module @a {}", b"opts", c)
    assert base == cc.entry_key("module @a {}", b"opts", c)
    assert base != cc.entry_key("module @b {}", b"opts", c)
    assert base != cc.entry_key("module @a {}", b"opts2", c)
    # XLA_FLAGS change what the plugin compiles
    monkeypatch.setattr(cc, "_xla_flags", lambda: "--xla_cpu_enable_fast_math=true")
    assert base != cc.entry_key("module @a {}", b"opts", c)


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
    # room for two of the three: the least recently used one (b) goes (the
    # program-key pointers, written just now, are the most recently used)
    pointers = sum(p.stat().st_size for p in cache.glob("*.rkey"))
    limit = a.stat().st_size + c.stat().st_size + pointers
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
    assert {k: third["stats"][k] for k in ("hits", "misses", "writes", "rejected")} == {
        "hits": 1,
        "misses": 0,
        "writes": 0,
        "rejected": 0,
    }
    np.testing.assert_allclose(third["out"], expected, rtol=1e-6, atol=1e-5)


def test_aot_compile_uses_the_cache(cache):
    def f(x):
        return ri.lax.platform_dependent(x, cpu=lambda v: v + 1.0, tpu=lambda v: v - 1.0)

    for expected_stats in ({"hits": 0, "misses": 1}, {"hits": 1, "misses": 1}):
        lowered = ri.jit(f, backend="pjrt").trace(X).lower(lowering_platforms=("tpu", "cpu"))
        compiled = lowered.compile()
        assert {k: cc.stats()[k] for k in expected_stats} == expected_stats
        np.testing.assert_allclose(np.asarray(compiled(X)), X + 1.0)


# --- the program key (first level: a warm hit without lowering) -------------------------------


def _no_lowering(monkeypatch):
    from refimpl.backends.pjrt import lowering

    def refuse(*args, **kwargs):
        raise AssertionError("lowered although the program key should have hit")

    monkeypatch.setattr(lowering, "lower_program", refuse)


def test_program_key_hit_does_not_lower(cache, monkeypatch):
    y1 = _fresh_poly()(X)
    assert len(list(cache.glob("*.rkey"))) == 1
    _no_lowering(monkeypatch)
    y2 = _fresh_poly()(X)
    assert cc.stats() == _counts(hits=1, misses=1, writes=1, program_hits=1)
    np.testing.assert_array_equal(np.asarray(y1), np.asarray(y2))
    np.testing.assert_allclose(np.asarray(y2), _poly_expected(X), rtol=1e-6, atol=1e-5)


def _fingerprint(fun, *args):
    return cc.program_fingerprint(ri.make_program(fun)(*args))


def test_program_fingerprint_is_canonical_and_distinguishes():
    m = np.arange(12, dtype=np.float32).reshape(3, 4)

    def base(x):
        return ri.numpy.sum(x * 2.0, axis=0)

    # the same program traced twice (new variables, new ids): the same text
    assert _fingerprint(base, m) == _fingerprint(lambda x: ri.numpy.sum(x * 2.0, axis=0), m)
    others = [
        lambda x: ri.numpy.sum(x * 3.0, axis=0),  # a literal
        lambda x: ri.numpy.sum(x + 2.0, axis=0),  # a primitive
        lambda x: ri.numpy.sum(x * 2.0, axis=1),  # a param
        lambda x: ri.numpy.max(x * 2.0, axis=0),
        lambda x: ri.numpy.sum(x * 2.0, axis=0) + np.ones(4, np.float32),  # a constant
        lambda x: ri.numpy.sum(x * 2.0, axis=0) + np.full(4, 2.0, np.float32),  # its content
        lambda x: ri.numpy.sum(x * 2.0, axis=0, keepdims=True),
        lambda x: ri.numpy.sum(x * 2.0, axis=0).astype(np.int32),  # a dtype param
    ]
    texts = {_fingerprint(base, m)}
    for fun in others:
        texts.add(_fingerprint(fun, m))
    texts.add(_fingerprint(base, m.reshape(4, 3)))  # a shape
    texts.add(_fingerprint(base, m.astype(np.int32)))  # a dtype
    assert len(texts) == len(others) + 3
    # a weakly typed input (a Python float) against a strong one
    weak = _fingerprint(lambda x: x * 2.0, 1.0)
    assert weak != _fingerprint(lambda x: x * 2.0, np.float32(1.0))
    assert "~float32" in weak


def test_program_key_covers_donation_platforms_and_target():
    from refimpl.backends.pjrt.executables import client as get_client

    program = ri.make_program(lambda x: x * 2.0)(X)
    c = get_client()

    def key(**changes):
        arguments = dict(
            name="f", aliases=None, donated=[False], platforms=None, target="device=0", client=c
        )
        arguments.update(changes)
        return cc.program_key(program, **arguments)

    keys = [
        key(),
        key(name="g"),
        key(donated=[True]),
        key(aliases={0: 0}),
        key(platforms=("cpu", "tpu")),
        key(target="device=1"),
        key(kept=(False,)),  # the inputs the executable takes (an unread one pruned)
    ]
    assert key() == keys[0]
    assert len(set(keys)) == len(keys)


def _custom_sin(jvp_factor):
    @ri.custom_jvp
    def f(x):
        return ri.numpy.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        return f(primals[0]), jvp_factor * tangents[0]

    return lambda x: f(x) * 2.0


def test_custom_jvp_program_key_ignores_the_jvp_rule(cache, monkeypatch):
    # the jvp rule (a Python callable) is not lowered: Programs differing only
    # there have one fingerprint, and get program keys at all
    one, other = _custom_sin(2.0), _custom_sin(3.0)
    assert _fingerprint(one, X) == _fingerprint(other, X)
    assert _fingerprint(one, X) != _fingerprint(lambda x: ri.numpy.sin(x) * 2.0, X)
    ri.jit(one, backend="pjrt")(X)
    _no_lowering(monkeypatch)
    y = ri.jit(other, backend="pjrt")(X)
    assert cc.stats() == _counts(hits=1, misses=1, writes=1, program_hits=1)
    np.testing.assert_allclose(np.asarray(y), np.sin(X) * 2.0, rtol=1e-6, atol=1e-6)


def test_checkpoint_policy_is_not_in_the_fingerprint():
    def make(policy):
        inner = ri.checkpoint(lambda v: ri.numpy.sin(v) * v, policy=policy)
        return ri.grad(lambda x: inner(x).sum())

    # the policy (a Python callable) shapes the Program, but is not lowered
    # itself: another callable with the same answers gives the same fingerprint
    policy = ri.checkpoint_policies.nothing_saveable
    nothing = _fingerprint(make(policy), X)
    assert nothing == _fingerprint(make(lambda *a, **k: policy(*a, **k)), X)
    assert nothing != _fingerprint(make(ri.checkpoint_policies.everything_saveable), X)


def test_lowering_reads_table_matches_the_rules():
    """Each rule in LOWERING_READS names exactly the params it reads."""
    import importlib
    import inspect

    for qualified, reads in cc.LOWERING_READS.items():
        module_name, function_name = qualified.rsplit(".", 1)
        rule = getattr(importlib.import_module(module_name), function_name)
        keyword_only = [
            name
            for name, parameter in inspect.signature(rule).parameters.items()
            if parameter.kind is inspect.Parameter.KEYWORD_ONLY
        ]
        assert tuple(keyword_only) == reads, qualified


def _user_primitive():
    """A primitive defined outside refimpl: its lowering rule is not in refimpl's
    source fingerprint, so its Programs get no program key."""
    from refimpl.primitives.base import Primitive

    double_p = Primitive("test_cache_double")
    double_p.def_abstract_eval(lambda aval: aval)
    double_p.def_impl(lambda x: x * 2)
    double_p.def_lowering(lambda ctx, x: [ctx.hlo.add(x, x)])
    return lambda x: double_p.bind(x) + 1.0


def test_unkeyable_program_uses_the_stablehlo_level(cache):
    fun = _user_primitive()
    with pytest.raises(cc.Unkeyable, match="lowering rule of 'test_cache_double'"):
        _fingerprint(fun, X)
    ri.jit(lambda x: fun(x), backend="pjrt")(X)
    y = ri.jit(lambda x: fun(x), backend="pjrt")(X)  # a new function: its own jit cache
    assert cc.stats() == _counts(hits=1, misses=1, writes=1)
    assert not list(cache.glob("*.rkey"))
    np.testing.assert_allclose(np.asarray(y), X * 2.0 + 1.0, rtol=1e-6)
    # a param that is a Python callable, on a rule reading every param
    with pytest.raises(cc.Unkeyable, match="param of type"):
        cc._Fingerprint().value(lambda: None)


def test_damaged_pointer_warns_and_falls_back(cache):
    _fresh_poly()(X)
    (pointer,) = cache.glob("*.rkey")
    good = pointer.read_bytes()
    pointer.write_bytes(good[:-7] + b"zzzzzzz")
    cc.reset_stats()
    with pytest.warns(cc.CompilationCacheWarning, match="program-key pointer"):
        y = _fresh_poly()(X)
    # found by the StableHLO key; the pointer is rewritten
    assert cc.stats() == _counts(hits=1, rejected=1)
    assert pointer.read_bytes() == good
    np.testing.assert_allclose(np.asarray(y), _poly_expected(X), rtol=1e-6, atol=1e-5)


def test_pointer_to_an_evicted_entry_recompiles_quietly(cache):
    _fresh_poly()(X)
    (entry,) = _entries(cache)
    entry.unlink()  # evicted by another process, say
    cc.reset_stats()
    with warnings.catch_warnings():
        warnings.simplefilter("error", cc.CompilationCacheWarning)
        y = _fresh_poly()(X)
    assert cc.stats() == _counts(misses=1, writes=1)
    assert _entries(cache) == [entry]
    np.testing.assert_allclose(np.asarray(y), _poly_expected(X), rtol=1e-6, atol=1e-5)


def test_edited_refimpl_misses_the_program_level(cache, monkeypatch):
    _fresh_poly()(X)
    # another refimpl source (an edited lowering rule, say): the old program key
    # must not be used; the StableHLO key still finds the same module's entry
    monkeypatch.setattr(cc, "_source_identity", lambda: "edited")
    cc.reset_stats()
    _fresh_poly()(X)
    assert cc.stats() == _counts(hits=1)
    assert len(list(cache.glob("*.rkey"))) == 2


def test_is_persistent_cache_enabled_follows_the_directory_as_jax(tmp_path, monkeypatch):
    from jax._src import compilation_cache as jax_cc

    assert cc.is_persistent_cache_enabled() is jax_cc.is_persistent_cache_enabled() is False
    monkeypatch.setitem(ri.config._values, "compilation_cache_dir", str(tmp_path))
    assert cc.is_persistent_cache_enabled() is True
