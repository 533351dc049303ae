"""``jax.monitoring``: named events and the listeners they call, as JAX 0.10.2.

A listener registered with ``register_event_listener`` (and its duration,
time-span and scalar kinds) is called with the event's name and keyword
metadata each time code records that event. refimpl records JAX's compile
events where it does the same work (docs/api.md "jax.monitoring"), each as
JAX records them: the start time as a scalar, then the duration and the
time span:

* ``/jax/core/compile/jaxpr_trace_duration`` (``fun_name``: the function's
  name): ``jit`` traced a function for a new signature (either backend);
* ``/jax/core/compile/jaxpr_to_mlir_module_duration`` (``fun_name``:
  ``jit(f)``): the pjrt backend lowered a jitted program to StableHLO;
* ``/jax/core/compile/backend_compile_duration`` (``fun_name``: ``jit(f)``):
  the pjrt backend compiled it (or found it in the persistent cache).

JAX's compilation-cache counters (``/jax/compilation_cache/...``) are not
recorded: refimpl's persistent cache keeps no such statistics.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

__all__ = [
    "clear_event_listeners",
    "record_event",
    "record_event_duration_secs",
    "record_event_time_span",
    "record_scalar",
    "register_event_duration_secs_listener",
    "register_event_listener",
    "register_event_time_span_listener",
    "register_scalar_listener",
    "unregister_event_duration_listener",
    "unregister_event_listener",
    "unregister_event_time_span_listener",
    "unregister_scalar_listener",
]

JAXPR_TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
JAXPR_TO_MLIR_MODULE_EVENT = "/jax/core/compile/jaxpr_to_mlir_module_duration"
BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"

Listener = Callable[..., None]

# one list per kind; recording iterates over a snapshot (a listener may unregister itself)
_event_listeners: list[Listener] = []
_duration_listeners: list[Listener] = []
_time_span_listeners: list[Listener] = []
_scalar_listeners: list[Listener] = []


def record_event(event: str, **kwargs: str | int) -> None:
    """Call every event listener with ``(event, **kwargs)``.

    Args:
        event: The event's name (JAX's are paths, ``/jax/...``).
        **kwargs: Metadata passed on to the listeners.

    Example:
        >>> from refimpl import monitoring
        >>> seen = []
        >>> listener = lambda event, **kw: seen.append((event, kw))
        >>> monitoring.register_event_listener(listener)
        >>> monitoring.record_event("/my/event", step=3)
        >>> monitoring.unregister_event_listener(listener)
        >>> seen
        [('/my/event', {'step': 3})]
    """
    _deliver(_event_listeners, (event,), kwargs)


def record_event_duration_secs(event: str, duration: float, **kwargs: str | int) -> None:
    """Call every duration listener with ``(event, duration, **kwargs)``.

    Args:
        event: The event's name.
        duration: Seconds (a float).
        **kwargs: Metadata passed on to the listeners.
    """
    _deliver(_duration_listeners, (event, duration), kwargs)


def record_event_time_span(
    event: str, start_time: float, end_time: float, **kwargs: str | int
) -> None:
    """Call every time-span listener with ``(event, start_time, end_time, **kwargs)``.

    Args:
        event: The event's name.
        start_time: The span's start, in seconds.
        end_time: Its end, in seconds.
        **kwargs: Metadata passed on to the listeners.
    """
    _deliver(_time_span_listeners, (event, start_time, end_time), kwargs)


def record_scalar(event: str, value: float | int, **kwargs: str | int) -> None:
    """Call every scalar listener with ``(event, value, **kwargs)``.

    Args:
        event: The event's name.
        value: The scalar recorded.
        **kwargs: Metadata passed on to the listeners.
    """
    _deliver(_scalar_listeners, (event, value), kwargs)


# Records made inside ``listeners_after``, per thread, waiting for its end.
_held = threading.local()


def _deliver(listeners: list[Listener], args: tuple, kwargs: dict) -> None:
    records = getattr(_held, "records", None)
    if records is not None:
        records.append((listeners, args, kwargs))
        return
    for listener in list(listeners):
        listener(*args, **kwargs)


@contextlib.contextmanager
def listeners_after() -> Iterator[None]:
    """The records made inside reach their listeners when the block ends, in
    order: a compile records its events while holding its executables' lock,
    and a listener is user code (it may call the function being compiled),
    so it must run after the lock is let go."""
    if getattr(_held, "records", None) is not None:  # an outer block delivers
        yield
        return
    _held.records = []
    try:
        yield
    finally:
        records, _held.records = _held.records, None
        for listeners, args, kwargs in records:
            for listener in list(listeners):
                listener(*args, **kwargs)


def register_event_listener(callback: Listener) -> None:
    """Call ``callback(event, **kwargs)`` at each ``record_event``."""
    _event_listeners.append(callback)


def register_event_duration_secs_listener(callback: Listener) -> None:
    """Call ``callback(event, duration_secs, **kwargs)`` at each
    ``record_event_duration_secs`` (refimpl's compile events among them)."""
    _duration_listeners.append(callback)


def register_event_time_span_listener(callback: Listener) -> None:
    """Call ``callback(event, start_time, end_time, **kwargs)`` at each
    ``record_event_time_span``."""
    _time_span_listeners.append(callback)


def register_scalar_listener(callback: Listener) -> None:
    """Call ``callback(event, value, **kwargs)`` at each ``record_scalar``."""
    _scalar_listeners.append(callback)


def _unregister(listeners: list[Listener], callback: Listener) -> None:
    # JAX asserts the listener is registered (an AssertionError otherwise)
    assert callback in listeners
    listeners.remove(callback)


def unregister_event_listener(callback: Listener) -> None:
    """Remove an event listener (``AssertionError`` if it is not registered)."""
    _unregister(_event_listeners, callback)


def unregister_event_duration_listener(callback: Listener) -> None:
    """Remove a duration listener (``AssertionError`` if it is not registered)."""
    _unregister(_duration_listeners, callback)


def unregister_event_time_span_listener(callback: Listener) -> None:
    """Remove a time-span listener (``AssertionError`` if it is not registered)."""
    _unregister(_time_span_listeners, callback)


def unregister_scalar_listener(callback: Listener) -> None:
    """Remove a scalar listener (``AssertionError`` if it is not registered)."""
    _unregister(_scalar_listeners, callback)


def clear_event_listeners() -> None:
    """Remove every listener of the four kinds.

    JAX 0.10.2 leaves the scalar listeners registered (its function rebinds a
    local name); refimpl clears them too, as the name says.
    """
    for listeners in (_event_listeners, _duration_listeners, _time_span_listeners):
        listeners.clear()
    _scalar_listeners.clear()


@contextlib.contextmanager
def timed(event: str, fun_name: str) -> Iterator[None]:
    """Around a block, as JAX's ``log_elapsed_time``: the start time as a
    scalar event on entry; on exit (a raise too) the duration and the time
    span, each with ``fun_name``."""
    start = time.time()
    record_scalar(event, start, fun_name=fun_name)
    try:
        yield
    finally:
        end = time.time()
        record_event_duration_secs(event, end - start, fun_name=fun_name)
        record_event_time_span(event, start, end, fun_name=fun_name)
