"""Host callbacks inside compiled pjrt programs (pure_callback, debug.print,
debug.callback) against JAX: values, dtypes, call counts, printed lines;
errors, lifetime of the callables, the compilation cache, threads."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import threading
import weakref

import jax
import numpy as np
import pytest

import refimpl as ri
from refimpl.backends.pjrt import compilation_cache as cc
from refimpl.backends.pjrt import host_callbacks


def _host(log):
    def host(a):
        log.append(np.asarray(a).copy())
        return (np.sin(a) * 2).astype(np.asarray(a).dtype)

    return host


def _cases(api):
    """name -> function of (x, host): each calls pure_callback(host, ...)."""
    lax = api.lax

    def pc(host, x, **kw):
        return api.pure_callback(host, api.ShapeDtypeStruct(x.shape, x.dtype), x, **kw)

    def scan(x, host):
        def body(c, t):
            y = pc(host, c + t)
            return y, y * 2

        return lax.scan(body, x[0], x)

    def while_(x, host):
        def body(c):
            i, v = c
            return i + 1, pc(host, v) + 1

        return lax.while_loop(lambda c: c[0] < 3, body, (0, x))

    def fori(x, host):
        return lax.fori_loop(0, 4, lambda i, v: pc(host, v * i), x)

    def cond(x, host):
        return lax.cond(x.sum() > 0, lambda v: pc(host, v), lambda v: -v, x)

    def nested(x, host):
        inner = api.jit(lambda v: pc(host, v) + 1)
        return inner(x) * inner(x + 1)

    def vmap_seq(x, host):
        return api.vmap(lambda v: pc(host, v, vmap_method="sequential"))(x)

    def vmap_expand(x, host):
        return api.vmap(lambda v: pc(host, v, vmap_method="expand_dims"))(x)

    return {
        "jit": lambda x, host: pc(host, x) * 3,
        "scan": scan,
        "while": while_,
        "fori_loop": fori,
        "cond": cond,
        "nested_jit": nested,
        "vmap_sequential": vmap_seq,
        "vmap_expand_dims": vmap_expand,
    }


X = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], np.float32)


@pytest.mark.parametrize("case", sorted(_cases(ri)))
def test_pure_callback_matches_jax(case):
    log, jlog = [], []
    got = ri.jit(lambda x: _cases(ri)[case](x, _host(log)), backend="pjrt")(X)
    want = jax.jit(lambda x: _cases(jax)[case](x, _host(jlog)))(X)
    got_leaves, want_leaves = ri.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves, strict=True):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)
    # every call's result is used, so JAX calls once per execution of its site
    assert len(log) == len(jlog)
    assert [a.shape for a in log] == [a.shape for a in jlog]


def test_results_dtypes_and_several_outputs_match_jax():
    def make(api):
        def host(a, b):
            return np.asarray(a, np.float64) * 2, np.asarray(b) > 1, np.int32(np.size(a))

        def f(a, b):
            specs = (
                api.ShapeDtypeStruct(a.shape, np.float32),
                api.ShapeDtypeStruct(b.shape, np.bool_),
                api.ShapeDtypeStruct((), np.int32),
            )
            return api.pure_callback(host, specs, a, b)

        return f

    a, b = X, np.arange(4, dtype=np.int32)
    got = ri.jit(make(ri), backend="pjrt")(a, b)
    want = jax.jit(make(jax))(a, b)
    for g, w in zip(got, want, strict=True):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def _printed(capsys, fn, barrier):
    capsys.readouterr()
    out = fn()
    barrier(out)
    return capsys.readouterr().out


def _jax_barrier(out):
    jax.block_until_ready(out)
    jax.effects_barrier()


def test_debug_print_in_while_and_around_it_matches_jax(capsys):
    def make(api):
        def body(c):
            i, v = c
            api.debug.print("i={} v={}", i, v)
            api.debug.callback(lambda t: print("callback", t), v.sum())
            return i + 1, v * 2

        def f(x):
            api.debug.print("before {}", x)
            out = api.lax.while_loop(lambda c: c[0] < 3, body, (0, x))
            api.debug.print("after {}", out[1])
            return out

        return f

    x = np.array([1.0, 2.0], np.float32)
    want = _printed(capsys, lambda: jax.jit(make(jax))(x), _jax_barrier)
    got = _printed(capsys, lambda: ri.jit(make(ri), backend="pjrt")(x), ri.block_until_ready)
    assert got == want
    assert len(want.splitlines()) == 8


_PMAP_ORACLE = r"""
import json, sys
import numpy as np
import jax
def run(api, barrier, **pmap_kwargs):
    calls = []
    def host(a):
        calls.append(float(a))
        return (a * 10).astype(a.dtype)
    def f(x):
        api.debug.print("replica {}", x)
        y = api.pure_callback(host, api.ShapeDtypeStruct(x.shape, x.dtype), x)
        return y + api.lax.psum(x, "i")
    out = api.pmap(f, axis_name="i", **pmap_kwargs)(np.arange(4, dtype=np.float32))
    barrier(out)
    return np.asarray(out).tolist(), str(np.asarray(out).dtype), sorted(calls)
def barrier(out):
    jax.block_until_ready(out)
    jax.effects_barrier()
print(json.dumps(run(jax, barrier)))
"""


def test_pmap_callbacks_match_jax(capfd):
    """Each replica calls back (as jax.pmap on 4 host devices, run in a subprocess)."""
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4")
    done = subprocess.run(
        [sys.executable, "-c", _PMAP_ORACLE], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    jax_lines = done.stdout.splitlines()
    want = json.loads(jax_lines[-1])
    namespace: dict = {}
    exec(_PMAP_ORACLE.split("def barrier")[0], namespace)  # noqa: S102 - the same code
    capfd.readouterr()
    got = namespace["run"](ri, ri.block_until_ready, backend="pjrt")
    printed = capfd.readouterr().out.splitlines()
    assert json.loads(json.dumps(got)) == want
    assert sorted(printed) == sorted(jax_lines[:-1])
    assert len(printed) == 4


def test_exception_in_callback_is_a_clear_error_and_the_process_lives_on():
    def boom(a):
        raise ValueError("boom from the host")

    spec = ri.ShapeDtypeStruct((3,), np.float32)
    f = ri.jit(lambda x: ri.pure_callback(boom, spec, x) + 1, backend="pjrt")
    with pytest.raises(RuntimeError, match="pure_callback: the callback raised ValueError: boom"):
        f(np.ones(3, np.float32))

    def loud(v):
        raise KeyError("debug failure")

    g = ri.jit(
        lambda x: ri.lax.while_loop(
            lambda v: v < 3, lambda v: (ri.debug.callback(loud, v), v + 1)[1], x
        ),
        backend="pjrt",
    )
    with pytest.raises(RuntimeError, match="debug.callback: the callback raised KeyError"):
        g(np.float32(0))
    ok = ri.jit(lambda x: ri.pure_callback(np.cos, spec, x), backend="pjrt")
    np.testing.assert_allclose(ok(np.zeros(3, np.float32)), np.ones(3))


def test_one_failing_replica_before_a_collective_is_an_error_not_a_hang():
    """Replica 0's callback raises before a psum the others wait at: the call
    raises at once and the process goes on (XLA would abort after 40 s)."""

    def host(a):
        if float(a) == 0.0:
            raise ValueError("replica zero fails")
        return a

    def f(x):
        y = ri.pure_callback(host, ri.ShapeDtypeStruct((), np.float32), x)
        ri.debug.callback(lambda v: None, y)
        return ri.lax.psum(y, "i")

    g = ri.pmap(f, axis_name="i", backend="pjrt")
    with pytest.raises(RuntimeError, match="pure_callback: the callback raised ValueError"):
        g(np.arange(4, dtype=np.float32))
    np.testing.assert_array_equal(g(np.arange(1, 5, dtype=np.float32)), [10.0] * 4)


def test_wrong_results_are_clear_errors():
    spec = ri.ShapeDtypeStruct((3,), np.float32)
    x = np.ones(3, np.float32)
    short = ri.jit(lambda v: ri.pure_callback(lambda a: a[:2], spec, v), backend="pjrt")
    with pytest.raises(RuntimeError, match=r"pure_callback: .*result 0 .* shape \(2,\)"):
        short(x)
    two = ri.jit(lambda v: ri.pure_callback(lambda a: (a, a), spec, v), backend="pjrt")
    with pytest.raises(RuntimeError, match="pure_callback: .*returned structure"):
        two(x)


def test_repeated_calls_and_compiles_do_not_crash_or_leak():
    gc.collect()
    base = host_callbacks.registered_count()
    spec = ri.ShapeDtypeStruct((), np.float32)
    body = lambda i, v: ri.pure_callback(lambda a: a + 1, spec, v)  # noqa: E731
    f = ri.jit(lambda x: ri.lax.fori_loop(0, 3, body, x), backend="pjrt")
    for _ in range(200):
        out = f(np.float32(1))
    assert float(out) == 4.0
    for k in range(20):  # a fresh jit (and executable) each time
        g = ri.jit(lambda x, k=k: ri.pure_callback(lambda a: a * k, spec, x), backend="pjrt")
        assert float(g(np.float32(2))) == 2.0 * k
    del f, g
    gc.collect()
    assert host_callbacks.registered_count() == base


def test_callables_are_released_with_their_executables():
    class Host:
        def __call__(self, a):
            return a * 2

    host = Host()
    alive = weakref.ref(host)
    spec = ri.ShapeDtypeStruct((2,), np.float32)

    def make(h):
        return lambda x: ri.pure_callback(h, spec, x)

    f = ri.jit(make(host), backend="pjrt")
    np.testing.assert_array_equal(f(np.ones(2, np.float32)), [2.0, 2.0])
    del host
    gc.collect()
    assert alive() is not None  # the executable can still call it
    del f
    gc.collect()
    assert alive() is None


def test_callback_programs_bypass_the_persistent_cache(tmp_path, monkeypatch):
    monkeypatch.setitem(ri.config._values, "compilation_cache_dir", str(tmp_path))
    cc.reset_stats()
    spec = ri.ShapeDtypeStruct((), np.float32)
    results = []
    for scale in (2.0, 3.0):  # the same program text but for its callback
        f = ri.jit(
            lambda x, s=scale: ri.pure_callback(lambda a: a * np.float32(s), spec, x),
            backend="pjrt",
        )
        results.append(float(f(np.float32(1))))
    assert results == [2.0, 3.0]
    assert cc.stats()["writes"] == 0 and cc.stats()["hits"] == 0
    assert not list(tmp_path.iterdir())


def test_threads_calling_back_do_not_deadlock():
    """Callback programs on two threads next to a fast-path program (which may
    hold the GIL while it executes) on a third."""
    spec = ri.ShapeDtypeStruct((4,), np.float32)
    cb = ri.jit(lambda x: ri.pure_callback(lambda a: a + 1, spec, x), backend="pjrt")
    plain = ri.jit(lambda x: x * 2 + 1, backend="pjrt")
    errors = []

    def work(fn):
        try:
            for _ in range(50):
                fn(np.ones(4, np.float32)).block_until_ready()
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(fn,)) for fn in (cb, cb, plain)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "deadlock"
    assert not errors


def test_lowered_text_has_the_custom_call():
    spec = ri.ShapeDtypeStruct((), np.float32)

    def f(x):
        ri.debug.print("x={}", x)
        return ri.pure_callback(lambda a: a, spec, x)

    text = ri.jit(f, backend="pjrt").lower(np.float32(1)).as_text()
    assert text.count("@refimpl_host_callback(") == 2
    assert "has_side_effect = true" in text and "callback_id =" in text
