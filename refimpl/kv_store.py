"""The key-value store of a multi-process run (``refimpl.distributed``).

Process 0 serves it at the coordinator address; every process (process 0
included) talks to it through a :class:`KeyValueClient`. It is what JAX's
coordination service offers PJRT clients: the ``kv_get``/``kv_put``
callbacks of ``PJRT_Client_Create`` through which the clients of a
multi-process plugin exchange their topologies, plus the
``key_value_set``/``blocking_key_value_get`` calls of JAX's
``DistributedRuntimeClient`` (its method names).

Plain TCP and the standard library only. One request per connection: a line
of JSON (``{"op": ..., "key": ..., "value": <base64>, "timeout_ms": ...}``)
answered by one line of JSON (``{"ok": true, "value": ...}`` or
``{"ok": false, "error": kind, "message": ...}``). Every wait is bounded:
a blocking get waits at most its timeout on the server, and the client's
socket at most that plus :data:`NETWORK_MARGIN_S`, so a coordinator that is
gone is an error, never a hang.
"""

from __future__ import annotations

import base64
import json
import socket
import socketserver
import threading
import time
from typing import Any

NETWORK_MARGIN_S = 10.0
"""How long beyond a request's own timeout the client waits for an answer."""


def split_address(address: str) -> tuple[str, int]:
    """``"host:port"`` (or ``"[v6]:port"``) as (host, port)."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"coordinator address {address!r} is not of the form host:port")
    return host.strip("[]"), int(port)


def _key_text(key: str | bytes) -> str:
    return key.decode("utf-8", "surrogateescape") if isinstance(key, bytes) else key


# --- server (process 0) -------------------------------------------------------------------------


class _Handler(socketserver.StreamRequestHandler):
    server: _TCPServer

    def handle(self) -> None:
        line = self.rfile.readline()
        if not line:
            return
        try:
            reply = self.server.store.answer(json.loads(line))
        except Exception as e:  # a malformed request: tell the client, keep serving
            reply = {"ok": False, "error": "invalid", "message": f"{type(e).__name__}: {e}"}
        try:
            self.wfile.write(json.dumps(reply).encode() + b"\n")
        except OSError:
            pass  # the client gave up (its own timeout); nothing to tell


class _TCPServer(socketserver.ThreadingTCPServer):
    daemon_threads = True  # a blocked get never keeps the process alive
    allow_reuse_address = True
    store: KeyValueServer


class KeyValueServer:
    """The store itself, served on ``(host, port)`` by a daemon thread.

    ``host`` ``""``, ``"::"`` or ``"0.0.0.0"`` means every IPv4 interface
    (JAX binds ``[::]``; refimpl keeps to IPv4 so that ``localhost`` works
    wherever IPv6 is off). ``port`` 0 picks a free port (:attr:`port`).
    """

    def __init__(self, host: str, port: int) -> None:
        self._data: dict[str, bytes] = {}
        self._changed = threading.Condition()
        self._closed = False
        bind_host = "" if host in ("", "::", "0.0.0.0") else host
        self._server = _TCPServer((bind_host, port), _Handler)
        self._server.store = self
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="refimpl-kv-store", daemon=True
        )
        self._thread.start()

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        """The reply to one request (run on the connection's thread)."""
        op, key = request["op"], request.get("key", "")
        if op == "ping":
            return {"ok": True}
        if op == "set":
            value = base64.b64decode(request["value"])
            with self._changed:
                if key in self._data and not request.get("allow_overwrite", False):
                    message = f"ALREADY_EXISTS: key {key} already exists."  # JAX's words
                    return {"ok": False, "error": "exists", "message": message}
                self._data[key] = value
                self._changed.notify_all()
            return {"ok": True}
        if op in ("get", "try_get"):
            timeout_s = request.get("timeout_ms", 0) / 1000.0 if op == "get" else 0.0
            with self._changed:
                found = self._changed.wait_for(
                    lambda: key in self._data or self._closed, timeout=timeout_s
                )
                if self._closed:
                    return {"ok": False, "error": "closed", "message": "the store shut down"}
                if not found:
                    kind = "timeout" if op == "get" else "missing"
                    return {"ok": False, "error": kind, "message": key}
                return {"ok": True, "value": base64.b64encode(self._data[key]).decode()}
        raise ValueError(f"unknown operation {op!r}")

    def shutdown(self) -> None:
        """Stops serving; blocked gets answer "closed" at once."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


# --- client (every process) ---------------------------------------------------------------------


class KeyValueClient:
    """Talks to the store at ``address`` (``"host:port"``).

    Errors (JAX raises ``JaxRuntimeError`` for all; the messages of the first
    two are its words): a key not set in time is :class:`TimeoutError`
    ("DEADLINE_EXCEEDED: GetKeyValue() timed out with key: ..."); setting a
    key that is set is :class:`KeyError` ("ALREADY_EXISTS: key ... already
    exists.", ``allow_overwrite=False``, JAX's default); a coordinator that
    cannot be reached, or that goes away mid-request, is
    :class:`ConnectionError` naming the address. The PJRT callbacks pass them
    on as DEADLINE_EXCEEDED and UNAVAILABLE (bindings/kv_store.cc).
    """

    def __init__(self, address: str) -> None:
        self.address = address
        self._host, self._port = split_address(address)
        self._closed = False

    def _request(self, request: dict[str, Any], wait_s: float = 0.0) -> dict[str, Any]:
        if self._closed:
            raise RuntimeError("refimpl.distributed: the key-value client was shut down")
        budget = wait_s + NETWORK_MARGIN_S
        try:
            with socket.create_connection((self._host, self._port), timeout=budget) as sock:
                sock.sendall(json.dumps(request).encode() + b"\n")
                line = sock.makefile("rb").readline()
        except TimeoutError:
            raise ConnectionError(
                f"refimpl.distributed: the coordinator at {self.address} did not answer "
                f"{request['op']!r} within {budget:g} s"
            ) from None
        except OSError as e:
            raise ConnectionError(
                f"refimpl.distributed: cannot reach the coordinator at {self.address} ({e}); "
                "is process 0 running?"
            ) from None
        if not line:
            raise ConnectionError(
                f"refimpl.distributed: the coordinator at {self.address} closed the "
                f"connection during {request['op']!r}; process 0 has exited or shut down"
            )
        reply: dict[str, Any] = json.loads(line)
        if reply["ok"]:
            return reply
        error, message = reply["error"], reply["message"]
        if error == "missing":  # try_get's "not set": an answer, not a failure
            return reply
        if error == "timeout":  # JAX's words, then where
            raise TimeoutError(
                f"DEADLINE_EXCEEDED: GetKeyValue() timed out with key: {message} and duration: "
                f"{request['timeout_ms']}ms (refimpl.distributed, coordinator {self.address})"
            )
        if error == "exists":
            raise KeyError(message)
        if error == "closed":
            raise ConnectionError(
                f"refimpl.distributed: the coordinator at {self.address} shut down"
            )
        raise RuntimeError(f"refimpl.distributed: {error}: {message}")

    def wait_until_reachable(self, timeout_s: float) -> None:
        """Retries ``ping`` until the coordinator answers (process 0 may start later)."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                self._request({"op": "ping"})
                return
            except ConnectionError:
                if time.monotonic() >= deadline:
                    raise ConnectionError(
                        f"refimpl.distributed: no coordinator answered at {self.address} "
                        f"within {timeout_s:g} s (initialization_timeout)"
                    ) from None
                time.sleep(0.05)

    # JAX's DistributedRuntimeClient names: str values are UTF-8.
    def key_value_set_bytes(
        self, key: str | bytes, value: bytes, allow_overwrite: bool = False
    ) -> None:
        self._request(
            {
                "op": "set",
                "key": _key_text(key),
                "value": base64.b64encode(bytes(value)).decode(),
                "allow_overwrite": allow_overwrite,
            }
        )

    def key_value_set(self, key: str, value: str, allow_overwrite: bool = False) -> None:
        self.key_value_set_bytes(key, value.encode(), allow_overwrite)

    def blocking_key_value_get_bytes(self, key: str | bytes, timeout_in_ms: int) -> bytes:
        if timeout_in_ms < 0:
            raise ValueError(f"timeout_in_ms must be >= 0, got {timeout_in_ms}")
        request = {"op": "get", "key": _key_text(key), "timeout_ms": int(timeout_in_ms)}
        reply = self._request(request, wait_s=timeout_in_ms / 1000.0)
        return base64.b64decode(reply["value"])

    def blocking_key_value_get(self, key: str, timeout_in_ms: int) -> str:
        return self.blocking_key_value_get_bytes(key, timeout_in_ms).decode()

    def key_value_try_get_bytes(self, key: str | bytes) -> bytes | None:
        reply = self._request({"op": "try_get", "key": _key_text(key)})
        return base64.b64decode(reply["value"]) if reply["ok"] else None

    def key_value_try_get(self, key: str) -> str | None:
        value = self.key_value_try_get_bytes(key)
        return None if value is None else value.decode()

    def shutdown(self) -> None:
        self._closed = True


class PjrtKeyValueStore:
    """The store as the PJRT callbacks see it (bindings/kv_store.cc).

    ``get(key, timeout_ms)`` and ``put(key, value)`` on bytes, under the
    ``"pjrt:"`` prefix: the C API leaves avoiding collisions between the
    store's other users to the caller.
    """

    PREFIX = b"pjrt:"

    def __init__(self, client: KeyValueClient) -> None:
        self.client = client
        self.calls = 0  # how often the plugin called back (0 for the CPU plugin)

    def get(self, key: bytes, timeout_ms: int) -> bytes:
        self.calls += 1
        return self.client.blocking_key_value_get_bytes(self.PREFIX + key, timeout_ms)

    def put(self, key: bytes, value: bytes) -> None:
        self.calls += 1
        # a plugin may publish a key again when it retries: last write wins
        self.client.key_value_set_bytes(self.PREFIX + key, value, allow_overwrite=True)
