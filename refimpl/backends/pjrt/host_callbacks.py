"""Host callbacks inside compiled programs: ``pure_callback`` and
``debug.print``/``debug.callback`` under ``jit(backend="pjrt")``.

A callback lowers to ``stablehlo.custom_call @refimpl_host_callback`` with
the typed-FFI attribute dictionary ``mhlo.backend_config = {callback_id = N
: i64}`` (JAX's encoding of an API-version-4 call: ``api_version`` 1 plus
the dictionary), operands and results in row-major layout, and
``has_side_effect`` for debug callbacks (XLA must neither remove nor
duplicate them). The C++ handler (bindings/host_callback.cc), registered
with the plugin through the PJRT FFI extension the first time a callback is
lowered, runs at execute time on an XLA thread: it takes the GIL, finds
callable ``N`` in the native registry, calls it with copies of the operands
as NumPy arrays, checks the results' count, shapes and dtypes against the
custom call's result buffers and copies them in. A Python exception or a
mismatch becomes an XLA error naming ``pure_callback``/``debug.callback``,
which the call raises as ``refimpl._pjrt.PjrtError`` (a RuntimeError).

Lifetime: ids are never reused in a process. The native registry holds
weak references; the strong ones are in the :class:`CallbackSet` of the
module that registered them, which the owner of the executables compiled
from that module keeps (``executables._Executables``, the pmap entry:
:func:`adopt`). So a callable lives exactly as long as the executables that
can call it and a dropped jitted function frees its callables (no leak per
compile). A module no owner adopts (a bare ``lowering.lower_program``
call) keeps its callables for its own lifetime. A callback that refers
back to its own jitted function (say a method of the object holding it)
keeps that function alive: the jit cache is keyed weakly by the function,
and its entry reaches the function again through the callback.

Programs with host callbacks bypass the persistent compilation cache
(``compilation_cache.compile_cached``): their executables name callables
by process-local ids, and callables cannot be serialized.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Iterator
from typing import Any

from refimpl.backends.pjrt import runtime as pjrt_runtime

__all__ = [
    "TARGET_NAME",
    "CallbackSet",
    "adopt",
    "attach",
    "collecting",
    "deferring_errors",
    "ensure_handler",
    "register",
    "registered_count",
    "take_errors",
]

TARGET_NAME = "refimpl_host_callback"

_handler_lock = threading.Lock()
_handler_plugins: set[str] = set()

# the CallbackSet of the lowering running on this thread (.callbacks)
_pending = threading.local()


def ensure_handler() -> None:
    """Register the FFI handler with the client's plugin (once per plugin).

    Raises:
        NotImplementedError: the client's platform is not the CPU. The handler
            is registered for XLA's ``Host`` platform only; on a GPU the custom
            call would need a handler registered for the CUDA platform, which
            receives device buffers (and a stream) instead of host memory.
            Raised at lowering time, before anything is compiled.
        refimpl._pjrt.PjrtError: the plugin has no FFI extension or rejects
            the handler.
    """
    platform = pjrt_runtime.local_platform()
    if platform != "cpu":
        raise NotImplementedError(
            "host callbacks (pure_callback, io_callback, debug.print, debug.callback) under "
            f"backend='pjrt' are not supported on the {platform!r} platform: refimpl's FFI "
            "handler is registered for XLA's Host (CPU) platform only. Run the function with "
            "backend='ref', or move the callback out of the jitted function."
        )
    plugin = pjrt_runtime.client().plugin
    if plugin.path in _handler_plugins:
        return
    with _handler_lock:
        if plugin.path not in _handler_plugins:
            pjrt_runtime.native_module().register_host_callback_handler(plugin)
            _handler_plugins.add(plugin.path)


class CallbackSet:
    """The callables of one lowered module's host callbacks and their ids.

    It holds the only strong references to the callables (the native
    registry's are weak, so the garbage collector sees every reference to
    them), and must live as long as the executables compiled from the
    module: their owner keeps it (:func:`adopt`). When it dies its ids are
    unregistered.
    """

    def __init__(self) -> None:
        self.callables: list[Any] = []
        self.ids: list[int] = []
        weakref.finalize(self, _release, self.ids)

    def add(self, callable_: Any, name: str, defer_errors: bool = False) -> int:
        native = pjrt_runtime.native_module()
        callback_id = native.host_callback_add(callable_, name, defer_errors)
        self.ids.append(callback_id)
        self.callables.append(callable_)
        return callback_id


# id(module) -> (its CallbackSet, the finalizer dropping it with the module),
# for modules no owner adopted (yet).
_unclaimed: dict[int, tuple[CallbackSet, Any]] = {}
_unclaimed_lock = threading.Lock()


def register(callable_: Any, name: str) -> int:
    """A new callback id for ``callable_`` (``name`` is used in error messages).

    Called by lowering rules: the callable joins the innermost
    :func:`collecting` block of this thread (outside any, it is kept for the
    process).
    """
    ensure_handler()
    found = getattr(_pending, "callbacks", None)
    defer = getattr(_pending, "defer_errors", False)
    return (found if found is not None else _UNOWNED).add(callable_, name, defer)


@contextlib.contextmanager
def deferring_errors() -> Iterator[None]:
    """Callbacks lowered inside the block report failures after the run
    (:func:`take_errors`) instead of failing the computation: for programs
    whose replicas meet at collectives (pmap), where one replica stopping
    early leaves the others waiting until XLA aborts the process. A failed
    call's results are zeros, which the caller never returns."""
    outer = getattr(_pending, "defer_errors", False)
    _pending.defer_errors = True
    try:
        yield
    finally:
        _pending.defer_errors = outer


def take_errors(callbacks: CallbackSet | None) -> list[str]:
    """The deferred failure messages of ``callbacks`` since the last call
    (removed); call after the computation finished, while no other
    computation using these callbacks runs."""
    if callbacks is None or not callbacks.ids:
        return []
    return pjrt_runtime.native_module().host_callback_take_errors(list(callbacks.ids))


@contextlib.contextmanager
def collecting() -> Iterator[CallbackSet]:
    """Collect the callables registered on this thread inside the block (a
    failed lowering drops them with the set)."""
    outer = getattr(_pending, "callbacks", None)
    callbacks = CallbackSet()
    _pending.callbacks = callbacks
    try:
        yield callbacks
    finally:
        _pending.callbacks = outer


def attach(module: Any, callbacks: CallbackSet) -> None:
    """Keep ``callbacks`` as long as ``module`` (an ``ir.Module``), until an
    owner :func:`adopt` s them."""
    if not callbacks.ids:
        return
    key = id(module)
    finalizer = weakref.finalize(module, _drop_unclaimed, key)
    with _unclaimed_lock:
        _unclaimed[key] = (callbacks, finalizer)


def adopt(module: Any) -> CallbackSet | None:
    """The :class:`CallbackSet` of ``module``, now the caller's to keep (as long
    as the executables compiled from the module); None without callbacks."""
    with _unclaimed_lock:
        found = _unclaimed.pop(id(module), None)
    if found is None:
        return None
    callbacks, finalizer = found
    finalizer.detach()
    return callbacks


def _drop_unclaimed(key: int) -> None:
    with _unclaimed_lock:
        _unclaimed.pop(key, None)


def _release(ids: list[int]) -> None:
    try:
        native = pjrt_runtime.native_module()
    except Exception:  # noqa: BLE001 - interpreter shutdown: nothing left to release
        return
    for callback_id in ids:
        native.host_callback_remove(callback_id)


# Callables registered outside any lowering (kept for the process).
_UNOWNED = CallbackSet()


def registered_count() -> int:
    """How many callables the native registry holds (tests check for leaks)."""
    return pjrt_runtime.native_module().host_callback_count()
