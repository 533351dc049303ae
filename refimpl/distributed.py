"""``jax.distributed`` for refimpl: ``initialize``, ``shutdown``, ``is_initialized``.

JAX 0.10.2's arguments, environment defaults and errors
(``jax/_src/distributed.py``). What ``initialize`` does here:

1. checks its arguments as JAX does (``JAX_COORDINATOR_ADDRESS`` and
   ``JAX_LOCAL_DEVICE_IDS`` fill unset ones; refimpl knows no cluster
   environment to auto-detect, so the rest must be given);
2. process 0 serves the key-value store (:mod:`refimpl.kv_store`) at
   ``coordinator_address``; every process connects to it (retrying for
   ``initialization_timeout`` seconds) and registers its ``process_id``;
3. when the default backend is ``"pjrt"``, creates the PJRT client now with
   the create options of a multi-process node (``node_id``, ``num_nodes``,
   ``visible_devices`` from ``local_device_ids``) and the store as its
   ``kv_get``/``kv_put`` callbacks (``runtime.MultiProcessNode``), and checks
   that the client really spans ``num_processes`` processes. The CPU plugin
   ignores all of that (docs/semantics.md "Beyond one process"): with
   ``num_processes > 1`` this ends in a ``RuntimeError`` naming the plugin,
   and ``initialize`` is undone. The reference backend runs in one process:
   ``num_processes > 1`` is refused the same way.

``num_processes=1`` works everywhere: a one-process run with the store
served, ``process_index()`` 0 and ``process_count()`` 1.
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Sequence
from typing import Any

from . import kv_store
from .backends.pjrt import runtime
from .config import config

logger = logging.getLogger(__name__)

_BACKEND_STARTED = (
    "jax.distributed.initialize() must be called before any JAX calls that might initialise "
    "the XLA backend. This includes any computation, but also calls to jax.devices, "
    "jax.device_put, and others."
)
_TWICE = "distributed.initialize should only be called once."


class State:
    """The distributed system of this process (JAX's ``global_state``)."""

    process_id: int = 0
    num_processes: int = 1
    coordinator_address: str | None = None
    local_device_ids: list[int] | None = None
    partition_index: int | None = None
    service: kv_store.KeyValueServer | None = None
    client: kv_store.KeyValueClient | None = None

    def shutdown(self) -> None:
        runtime.multi_process_node = None
        if self.client is not None:
            self.client.shutdown()
            self.client = None
        if self.service is not None:
            self.service.shutdown()
            self.service = None
        self.process_id, self.num_processes = 0, 1
        self.coordinator_address = self.local_device_ids = self.partition_index = None


global_state = State()


def _backend_started() -> bool:
    # A PJRT client exists once anything ran on (or asked about) pjrt's devices.
    return bool(runtime._clients)


def _check_arguments(
    coordinator_address: str | None, num_processes: Any, process_id: Any
) -> tuple[str, int, int]:
    # JAX's checks and words, in its order.
    if coordinator_address is None:
        raise ValueError("coordinator_address should be defined.")
    if num_processes is None:
        raise ValueError("Number of processes must be defined.")
    if process_id is None:
        raise ValueError("The process id of the current process must be defined.")
    if not isinstance(process_id, int):
        raise TypeError(
            "process_id must be a nonnegative int. "
            f"Got process_id={process_id} of type {type(process_id)}."
        )
    if not isinstance(num_processes, int):
        raise TypeError(
            "num_processes must be a positive int. "
            f"Got num_processes={num_processes} of type {type(num_processes)}."
        )
    if not (0 <= process_id < num_processes):
        raise ValueError(
            "process_id and num_processes must be nonnegative, with process_id < num_processes. "
            f"Got process_id={process_id}, num_processes={num_processes}."
        )
    return coordinator_address, num_processes, process_id


def initialize(
    coordinator_address: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    local_device_ids: int | Sequence[int] | None = None,
    cluster_detection_method: str | None = None,
    initialization_timeout: int = 300,
    heartbeat_timeout_seconds: int = 100,
    shutdown_timeout_seconds: int = 300,
    coordinator_bind_address: str | None = None,
    slice_index: int | None = None,
    partition_index: int | None = None,
) -> None:
    """Joins this process to a multi-process run (``jax.distributed.initialize``).

    Must come before anything creates the PJRT client (``RuntimeError``, JAX's
    words). ``heartbeat_timeout_seconds`` and ``shutdown_timeout_seconds`` are
    accepted and unused: refimpl's store has no heartbeats; a process that is
    gone shows as a ``ConnectionError`` on the next request instead.

    Raises:
        RuntimeError: called twice, or after the backend started; or the
            backend cannot run ``num_processes`` processes (the installed CPU
            plugin, the reference backend: the message says what it lacks).
        ValueError, TypeError: JAX's argument errors.
        ConnectionError: no coordinator answered within
            ``initialization_timeout`` seconds.
    """
    del heartbeat_timeout_seconds, shutdown_timeout_seconds
    if _backend_started():
        raise RuntimeError(_BACKEND_STARTED)
    if partition_index is None:
        if slice_index is not None:
            warnings.warn(
                "`slice_index` has been deprecated. Please use `partition_index` instead.",
                DeprecationWarning,
                stacklevel=2,
            )
        partition_index = slice_index
    state = global_state
    coordinator_address = coordinator_address or os.environ.get("JAX_COORDINATOR_ADDRESS")
    if isinstance(local_device_ids, int):
        local_device_ids = [local_device_ids]
    if local_device_ids is None and (env_ids := os.environ.get("JAX_LOCAL_DEVICE_IDS")):
        local_device_ids = [int(x) for x in env_ids.split(",")]
    if cluster_detection_method not in (None, "deactivate"):
        logger.error(
            "Automatic Distributed initialization can not proceed: %s is not supported.",
            cluster_detection_method,
        )
    address, count, index = _check_arguments(coordinator_address, num_processes, process_id)
    bind = coordinator_bind_address or os.environ.get(
        "JAX_COORDINATOR_BIND_ADDRESS", "[::]:" + address.rsplit(":", 1)[1]
    )
    if state.client is not None or (index == 0 and state.service is not None):
        raise RuntimeError(_TWICE)
    try:
        if index == 0:
            state.service = kv_store.KeyValueServer(*kv_store.split_address(bind))
        client = kv_store.KeyValueClient(address)
        client.wait_until_reachable(initialization_timeout)
        # a second process claiming the same id fails here (the key is set)
        client.key_value_set(f"refimpl/process/{index}", str(os.getpid()))
        state.client = client
        state.process_id, state.num_processes = index, count
        state.coordinator_address = address
        state.local_device_ids = None if local_device_ids is None else list(local_device_ids)
        if partition_index is None and (env := os.environ.get("JAX_PARTITION_INDEX")):
            partition_index = int(env)
        state.partition_index = partition_index
        runtime.multi_process_node = runtime.MultiProcessNode(
            index, count, state.local_device_ids, kv_store.PjrtKeyValueStore(client)
        )
        _start_backend(count)
    except BaseException:
        state.shutdown()
        raise


def _start_backend(num_processes: int) -> None:
    """Creates the default backend's client now, so that what it lacks shows here."""
    if config.backend == "pjrt":
        runtime.get_client()  # checks the process count (MultiProcessNode.check_client)
    elif num_processes > 1:
        raise RuntimeError(
            f"refimpl.distributed.initialize(num_processes={num_processes}): the reference "
            "backend ('ref') runs all its devices in this one process; it cannot join a run "
            "of several processes. Use backend 'pjrt' with a plugin that supports multi-process "
            "clients."
        )


def is_initialized() -> bool:
    """Whether :func:`initialize` has run (and :func:`shutdown` has not)."""
    return global_state.client is not None


def shutdown() -> None:
    """Leaves the run: stops the store (process 0) and the client. Idempotent.

    PJRT clients made while initialized stay alive (as JAX's backends do).
    """
    global_state.shutdown()
