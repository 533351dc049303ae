"""What the leak checker (``jax.checking_leaks``) says about a leaked tracer,
in JAX 0.10.2's form: where the tracer was created, and the chain of objects
that keeps it alive (``<BatchTracer 1> is referred to by <function 2> (foo)
closed-over variable x``, ... up to a module's global).

The creation site is recorded only while the checker is on (a walk of the
stack per tracer; :func:`creation_site`), so the common case pays nothing.
This module knows objects and frames only, not traces (no import of
``refimpl.tracing``).
"""

from __future__ import annotations

import gc
import os
import sys
import types
from typing import Any

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))

# the longest chain of referrers followed
_MAX_LINKS = 12


def creation_site() -> str:
    """The first frame of the caller's stack outside refimpl, as JAX writes it
    (``file.py:49:4 (fn)``); ``"unknown"`` if there is none."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:
        return "unknown"
    code = frame.f_code
    column = ""
    positions = list(code.co_positions())
    if 0 <= frame.f_lasti // 2 < len(positions):
        start = positions[frame.f_lasti // 2][2]
        column = f":{start}" if start is not None else ""
    return f"{code.co_filename}:{frame.f_lineno}{column} ({code.co_qualname})"


def describe(tracer: Any, tracer_name: str, site: str | None, ignore: list[Any]) -> str:
    """The lines JAX gives for one leaked tracer: its creation site and the
    referrers keeping it alive. ``ignore``: objects of the checker's own that
    hold it (not part of the chain)."""
    lines = [f"This {tracer_name} with object id {id(tracer)} was created on line:"]
    lines.append(f"  {site or 'unknown'}")
    label = f"<{tracer_name} {id(tracer)}>"
    skip = {id(x) for x in ignore}
    current: Any = tracer
    for _ in range(_MAX_LINKS):
        skip.add(id(current))
        link = _holder(current, skip)
        if link is None:
            break
        text, nxt = link
        lines.append(f"{label} is referred to by {text}")
        if nxt is None:
            break
        current, label = nxt, f"<{type(nxt).__name__} {id(nxt)}>"
    return "\n".join(lines)


def _holder(obj: Any, skip: set[int]) -> tuple[str, Any] | None:
    """One object holding ``obj`` (not a frame nor one in ``skip``): how it
    holds it, and the object to follow next (None at a module's global)."""
    referrers = [r for r in gc.get_referrers(obj) if not _is_internal(r, skip)]
    skip.add(id(referrers))
    # the holders a user makes first (a closure, a dict or object, a list),
    # tuples (often the library's own bookkeeping) last
    for holder in referrers:
        if isinstance(holder, types.CellType):
            found = _closure_of(holder, skip)
            if found is not None:
                return found
    for kind in (dict, list, tuple):
        for holder in referrers:
            if type(holder) is not kind:
                continue
            if isinstance(holder, dict):
                return _in_dict(holder, obj, skip)
            index = next((i for i, x in enumerate(holder) if x is obj), "?")
            return f"<{kind.__name__} {id(holder)}>[{index}]", holder
    if referrers:
        holder = referrers[0]
        return f"<{type(holder).__name__} {id(holder)}>", holder
    return None


def _is_internal(referrer: Any, skip: set[int]) -> bool:
    return isinstance(referrer, types.FrameType) or id(referrer) in skip


def _closure_of(cell: Any, skip: set[int]) -> tuple[str, Any] | None:
    """The function whose closure holds ``cell``: ``<function N> (foo)
    closed-over variable x``."""
    for tup in gc.get_referrers(cell):
        if not isinstance(tup, tuple) or id(tup) in skip:
            continue
        for fn in gc.get_referrers(tup):
            if isinstance(fn, types.FunctionType) and fn.__closure__ is tup:
                name = fn.__code__.co_freevars[tup.index(cell)]
                return f"<function {id(fn)}> ({fn.__name__}) closed-over variable {name}", fn
    return None


def _in_dict(d: dict, obj: Any, skip: set[int]) -> tuple[str, Any]:
    """A dict holding ``obj``: a module's globals (the chain ends), an
    object's attributes, or a plain dict's entry."""
    key = next((k for k, v in d.items() if v is obj), "?")
    for owner in gc.get_referrers(d):
        if id(owner) in skip or isinstance(owner, types.FrameType):
            continue
        if isinstance(owner, types.ModuleType) and owner.__dict__ is d:
            return f"{owner.__name__}.{key}", None
        if getattr(owner, "__dict__", None) is d:
            return f"<{type(owner).__name__} {id(owner)}>.{key}", owner
    if d.get("__name__") and "__builtins__" in d:  # a module's globals, the module unseen
        return f"{d['__name__']}.{key}", None
    return f"<dict {id(d)}>[{key!r}]", d
