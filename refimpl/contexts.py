"""Configuration contexts and scopes: ``enable_x64``, ``disable_jit``,
``ensure_compile_time_eval``, ``named_scope`` and ``named_call``.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any

from refimpl import tracing
from refimpl.config import config

# --- configuration contexts ------------------------------------------------------------


@contextlib.contextmanager
def _flag(name: str, value: bool, caller: str) -> Iterator[None]:
    if not isinstance(value, bool):
        raise TypeError(f"{caller}: expected a bool, got {value!r}")
    saved = getattr(config, name)
    config.update(name, value)
    try:
        yield
    finally:
        config.update(name, saved)


def enable_x64(new_val: bool = True) -> contextlib.AbstractContextManager:
    """Context manager: ``config.enable_x64`` is ``new_val`` within the block
    (``with jax.enable_x64(True): ...``)."""
    return _flag("enable_x64", new_val, "enable_x64")


@contextlib.contextmanager
def disable_jit(disable: bool = True) -> Iterator[None]:
    """Context manager: within the block ``jit``-ed functions run their
    Python function directly, op by op (each operation eager, or recorded by
    the enclosing transformation), as ``jax.disable_jit``.

    It sets ``config.disable_jit`` (also settable with ``config.update``),
    which clears the C++ fast path's caches each time it changes, so calls
    within the block cannot hit a compiled entry and calls after it compile
    again. ``pmap`` is not affected.
    """
    if not isinstance(disable, bool):
        raise TypeError(f"disable_jit: expected a bool, got {disable!r}")
    with _flag("disable_jit", disable, "disable_jit"):  # config.update clears the caches
        yield


@contextlib.contextmanager
def ensure_compile_time_eval() -> Iterator[None]:
    """Context manager: operations on concrete values run at once, even inside
    a ``jit`` trace (the staging trace is hidden for the block), as JAX.

    Operations with a traced operand are still recorded by its trace.
    """
    stack = tracing._stack
    saved = stack.dynamic
    stack.dynamic = None
    try:
        yield
    finally:
        stack.dynamic = saved


@contextlib.contextmanager
def named_scope(name: str) -> Iterator[None]:
    """Context manager naming the operations of its block, as ``jax.named_scope``.

    refimpl's programs carry no name stacks, so this is a documented no-op
    apart from checking ``name``: listings and lowered modules do not show it.
    """
    if not isinstance(name, str):
        raise TypeError(f"named_scope: name must be a str, got {type(name).__name__}")
    yield


def named_call(fun: Callable[..., Any], *, name: str | None = None) -> Callable[..., Any]:
    """``fun`` under a name (``jax.named_call``). As :func:`named_scope`,
    refimpl records no names, so the result calls ``fun`` unchanged."""
    if not callable(fun):
        raise TypeError(f"named_call: expected a callable, got {type(fun).__name__}")
    if name is not None and not isinstance(name, str):
        raise TypeError(f"named_call: name must be a str or None, got {type(name).__name__}")

    @functools.wraps(fun)
    def named(*args: Any, **kwargs: Any) -> Any:
        with named_scope(name or getattr(fun, "__name__", "named_call")):
            return fun(*args, **kwargs)

    return named


__all__ = [
    "disable_jit",
    "enable_x64",
    "ensure_compile_time_eval",
    "named_call",
    "named_scope",
]
