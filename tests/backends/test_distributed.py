"""refimpl.distributed (jax.distributed) and its key-value store (issue 33).

The store is tested with real processes (subprocess): two exchange keys, a
get that times out names its key, a coordinator that dies is an error, not
a hang. ``initialize`` must come before any PJRT client exists, so its
checks run in fresh interpreters; its argument errors are JAX 0.10.2's
words (jax/_src/distributed.py).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import textwrap
import time

import pytest

from refimpl import kv_store
from tests.helpers.pjrt_helpers import skip_without_pjrt

TIMEOUT_S = 60  # every subprocess; nothing here should take more than a few seconds


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )


# --- the store -----------------------------------------------------------------------------------


@pytest.fixture
def store():
    server = kv_store.KeyValueServer("127.0.0.1", 0)
    yield kv_store.KeyValueClient(f"127.0.0.1:{server.port}")
    server.shutdown()


def test_set_get_try_get_and_overwrite(store):
    store.key_value_set("a", "1")
    store.key_value_set_bytes(b"b", b"\x00\xff")
    assert store.blocking_key_value_get("a", 100) == "1"
    assert store.blocking_key_value_get_bytes("b", 100) == b"\x00\xff"
    assert store.key_value_try_get("a") == "1"
    assert store.key_value_try_get("missing") is None
    with pytest.raises(KeyError, match="ALREADY_EXISTS: key a already exists."):
        store.key_value_set("a", "2")
    store.key_value_set("a", "2", allow_overwrite=True)
    assert store.blocking_key_value_get("a", 100) == "2"


def test_get_timeout_names_the_key(store):
    start = time.monotonic()
    with pytest.raises(TimeoutError, match=r"timed out with key: never/set and duration: 200ms"):
        store.blocking_key_value_get("never/set", 200)
    assert time.monotonic() - start < 5


def test_blocking_get_waits_for_a_later_set(store):
    import threading

    timer = threading.Timer(0.2, store.key_value_set, ("late", "v"))
    timer.start()
    assert store.blocking_key_value_get("late", 5000) == "v"
    timer.join()


def test_no_coordinator_is_a_connection_error_not_a_hang():
    client = kv_store.KeyValueClient(f"127.0.0.1:{_free_port()}")
    with pytest.raises(ConnectionError, match="cannot reach the coordinator"):
        client.key_value_set("k", "v")
    start = time.monotonic()
    with pytest.raises(ConnectionError, match="within 0.3 s"):
        client.wait_until_reachable(0.3)
    assert time.monotonic() - start < 5


_SERVE = """
import sys, time
from refimpl import kv_store
server = kv_store.KeyValueServer("127.0.0.1", 0)
client = kv_store.KeyValueClient(f"127.0.0.1:{server.port}")
print(server.port, flush=True)
client.key_value_set("from/0", "hello from 0")
if sys.argv[1] == "exchange":
    print(client.blocking_key_value_get("from/1", 20000), flush=True)
    client.blocking_key_value_get("done", 20000)
else:
    time.sleep(60)  # killed by the test
"""

_JOIN = """
import sys
from refimpl import kv_store
client = kv_store.KeyValueClient(sys.argv[1])
client.wait_until_reachable(20)
print(client.blocking_key_value_get("from/0", 20000), flush=True)
client.key_value_set("from/1", "hello from 1")
client.key_value_set("done", "")
"""


def test_two_processes_exchange_keys():
    server = subprocess.Popen(
        [sys.executable, "-c", _SERVE, "exchange"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        port = server.stdout.readline().strip()
        joined = _run(_JOIN, f"127.0.0.1:{port}")
        assert joined.returncode == 0, joined.stderr
        assert joined.stdout.strip() == "hello from 0"
        out, _ = server.communicate(timeout=TIMEOUT_S)
        assert out.strip() == "hello from 1"
        assert server.returncode == 0
    finally:
        server.kill()
        server.wait()


def test_process_0_gone_is_a_clear_error():
    server = subprocess.Popen(
        [sys.executable, "-c", _SERVE, "sleep"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        client = kv_store.KeyValueClient(f"127.0.0.1:{server.stdout.readline().strip()}")
        assert client.blocking_key_value_get("from/0", 5000) == "hello from 0"
        import threading

        threading.Timer(0.3, server.kill).start()
        start = time.monotonic()
        # a get blocked on the server when process 0 dies ends at once
        with pytest.raises(ConnectionError, match="process 0 has exited"):
            client.blocking_key_value_get("never", 30000)
        assert time.monotonic() - start < 10
        with pytest.raises(ConnectionError, match="cannot reach the coordinator"):
            client.key_value_set("k", "v")
    finally:
        server.kill()
        server.wait()


# --- initialize ----------------------------------------------------------------------------------

_INITIALIZE = """
import json, os, sys, warnings
import refimpl as ri
from refimpl import distributed

backend, port = sys.argv[1], int(sys.argv[2])
ri.config.update("backend", backend)
address = f"127.0.0.1:{port}"
results = {}

def attempt(name, *args, **kwargs):
    try:
        distributed.initialize(*args, **kwargs)
        results[name] = ["ok", distributed.is_initialized()]
    except Exception as e:
        results[name] = [type(e).__name__, str(e), distributed.is_initialized()]

attempt("no_address", None, 1, 0)
attempt("no_count", address, None, 0)
attempt("no_id", address, 1, None)
attempt("id_type", address, 1, 0.0)
attempt("count_type", address, "1", 0)
attempt("id_range", address, 2, 2)
attempt("two", address, 2, 0)
attempt("one", address, 1, 0)
attempt("twice", address, 1, 0)
results["index"] = [ri.process_index(), ri.process_count()]
client = distributed.global_state.client
client.key_value_set("k", "v")
results["store"] = client.blocking_key_value_get("k", 1000)
results["computes"] = (ri.numpy.arange(3) + 1).tolist()
distributed.shutdown()
distributed.shutdown()  # idempotent
results["after_shutdown"] = distributed.is_initialized()
attempt("after_backend", address, 1, 0)
print(json.dumps(results))
"""


def _initialize_results(backend: str) -> dict:
    done = _run(_INITIALIZE, backend, str(_free_port()))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _check_argument_errors(results: dict) -> None:
    # JAX 0.10.2's classes and words
    assert results["no_address"][:2] == ["ValueError", "coordinator_address should be defined."]
    assert results["no_count"][:2] == ["ValueError", "Number of processes must be defined."]
    assert results["no_id"][:2] == [
        "ValueError",
        "The process id of the current process must be defined.",
    ]
    assert results["id_type"][:2] == [
        "TypeError",
        "process_id must be a nonnegative int. Got process_id=0.0 of type <class 'float'>.",
    ]
    assert results["count_type"][:2] == [
        "TypeError",
        "num_processes must be a positive int. Got num_processes=1 of type <class 'str'>.",
    ]
    assert results["id_range"][0] == "ValueError"
    assert "Got process_id=2, num_processes=2." in results["id_range"][1]
    for name in ("no_address", "id_range", "two"):
        assert results[name][2] is False  # nothing left initialized


def test_initialize_on_pjrt_cpu_plugin():
    skip_without_pjrt()
    results = _initialize_results("pjrt")
    _check_argument_errors(results)
    kind, message, _ = results["two"]
    assert kind == "RuntimeError"
    assert "libpjrt_cpu.so" in message and "lacks multi-process support" in message
    assert "reports 1 process" in message and "store 0 times" in message
    assert results["one"] == ["ok", True]
    # the PJRT client exists now: a second initialize is JAX's "backend" error
    assert results["twice"][:2] == [
        "RuntimeError",
        "jax.distributed.initialize() must be called before any JAX calls that might "
        "initialise the XLA backend. This includes any computation, but also calls to "
        "jax.devices, jax.device_put, and others.",
    ]
    assert results["index"] == [0, 1]
    assert results["store"] == "v"
    assert results["computes"] == [1, 2, 3]
    assert results["after_shutdown"] is False
    assert results["after_backend"][0] == "RuntimeError"


def test_initialize_on_ref_backend():
    results = _initialize_results("ref")
    _check_argument_errors(results)
    kind, message, _ = results["two"]
    assert kind == "RuntimeError" and "reference backend" in message
    assert results["one"] == ["ok", True]
    # no PJRT client was made: the second call is refused as JAX's "called once"
    assert results["twice"][:2] == [
        "RuntimeError",
        "distributed.initialize should only be called once.",
    ]
    assert results["index"] == [0, 1]
    assert results["store"] == "v"
    assert results["computes"] == [1, 2, 3]
    assert results["after_shutdown"] is False
    assert results["after_backend"] == ["ok", True]  # the ref backend never "starts"


# --- the PJRT callbacks, called as a plugin calls them -------------------------------------------


def test_kv_callbacks_through_the_c_abi(store):
    skip_without_pjrt()
    from refimpl.backends.pjrt.runtime import native_module

    probe = native_module()._kv_callbacks_probe
    pjrt_store = kv_store.PjrtKeyValueStore(store)
    assert probe(pjrt_store, "put", b"topology/0", b"\x01\x00\x02") == (0, None)
    assert store.blocking_key_value_get_bytes("pjrt:topology/0", 100) == b"\x01\x00\x02"
    assert probe(pjrt_store, "get", b"topology/0", timeout_ms=100) == (0, b"\x01\x00\x02")
    store.key_value_set_bytes("pjrt:empty", b"")
    assert probe(pjrt_store, "get", b"empty") == (0, b"")
    code, message = probe(pjrt_store, "get", b"topology/1", timeout_ms=150)
    assert code == 4  # PJRT_Error_Code_DEADLINE_EXCEEDED
    assert "timed out with key: pjrt:topology/1" in message
    assert pjrt_store.calls == 4


def test_kv_callbacks_report_a_lost_coordinator():
    skip_without_pjrt()
    from refimpl.backends.pjrt.runtime import native_module

    gone = kv_store.PjrtKeyValueStore(kv_store.KeyValueClient(f"127.0.0.1:{_free_port()}"))
    code, message = native_module()._kv_callbacks_probe(gone, "put", b"k", b"v")
    assert code == 14  # PJRT_Error_Code_UNAVAILABLE
    assert "cannot reach the coordinator" in message

    class Broken:
        def get(self, key, timeout_ms):
            raise ZeroDivisionError("boom")

    code, message = native_module()._kv_callbacks_probe(Broken(), "get", b"k")
    assert code == 13 and "boom" in message  # PJRT_Error_Code_INTERNAL


def test_signatures_are_jaxs():
    jax_distributed = pytest.importorskip("jax.distributed")
    import inspect

    from refimpl import distributed

    for name in ("initialize", "shutdown", "is_initialized"):
        ours = inspect.signature(getattr(distributed, name))
        theirs = inspect.signature(getattr(jax_distributed, name))
        assert [(p.name, p.default) for p in ours.parameters.values()] == [
            (p.name, p.default) for p in theirs.parameters.values()
        ], name
