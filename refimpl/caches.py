"""``clear_caches``: every ``jit`` signature cache and the C++ fast path's
caches (which the PJRT backend registers here).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from refimpl.config import config
from refimpl.transforms import jit as jit_module

# --- caches ------------------------------------------------------------------------------

# Every C++ FastJitted made so far (weakly), so that clear_caches and
# disable_jit can reach their native caches.
_fast_jitted: weakref.WeakSet = weakref.WeakSet()


def register_fast_jitted(fast: Any) -> None:
    """Called by the PJRT backend for each FastJitted it makes."""
    _fast_jitted.add(fast)


# Other caches of compiled programs a backend keeps (pjrt's eager (primitive,
# params) jits), emptied by clear_caches as JAX's empties its primitive callables.
_clearers: list[Callable[[], None]] = []


def register_clearer(clear: Callable[[], None]) -> None:
    """Called by a backend for each cache of compiled programs it keeps
    outside ``jit``'s: ``clear_caches`` calls ``clear()``."""
    _clearers.append(clear)


def _clear_fast_caches(users_only: bool = False) -> None:
    for fast in list(_fast_jitted):
        if not users_only or fast._jitted.honours_disable_jit:
            fast.clear_cache()


# the C++ fast path cannot see disable_jit on a cache hit: empty its caches
# whenever the flag changes (the functions that honour it). (The default
# matmul precision it sees: its signatures carry it, refimpl.backends.pjrt.fast_path.)
config.observe("disable_jit", lambda _value: _clear_fast_caches(users_only=True))


def clear_caches() -> None:
    """Forget every traced and compiled ``jit`` signature, as ``jax.clear_caches``.

    Clears the signature caches every ``jit(f)`` shares (and with them the
    compiled executables they hold), the C++ fast path's caches and the
    programs the backends compiled for eager operations; the next
    call of each function traces and compiles again. The persistent
    compilation cache on disk (``config.compilation_cache_dir``) is kept, and
    so are ``pmap``'s per-function caches (not reachable from here yet).
    JAX's ``jax.clear_caches`` also clears ``pmap``'s caches and its other
    internal memo tables.

    Values and results are not affected: only the time of the next call
    (and ``Jitted.trace_count``, which counts the traces).

    Args: none.

    Returns:
        None.

    Raises: nothing (clearing empty caches is fine).

    Example:
        >>> import refimpl as ri
        >>> f = ri.jit(lambda x: x + 1)
        >>> _ = f(1.0); _ = f(2.0); f.trace_count
        1
        >>> ri.clear_caches()
        >>> _ = f(3.0); f.trace_count
        2
    """

    with jit_module._shared_caches_lock:
        per_function = list(jit_module._shared_caches.values())
    for options in per_function:
        for cache in options.values():
            cache.clear()
    jit_module.forget_private_caches()
    _clear_fast_caches()
    for clear in list(_clearers):
        clear()


__all__ = [
    "clear_caches",
]
