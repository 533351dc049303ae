"""Traceback filtering: a user's error inside a transformed function shows the
user's frames, not refimpl's machinery (JAX's ``jax_traceback_filtering``).

Public entry points (a jitted function's call, the functions ``grad``,
``vmap``, ``jvp``, ... return, ``lax.scan``/``cond``/``while_loop``, ...) are
wrapped in :func:`api_boundary`. When an exception leaves the outermost
boundary, the frames of files inside the ``refimpl`` package are taken out of
its traceback (the user's frames stay, in order) and a note says so. The
complete traceback stays on the exception as ``__refimpl_unfiltered_tb__``.

The mode is the ``traceback_filtering`` config flag (``REFIMPL_TRACEBACK_FILTERING``
in the environment):

* ``"auto"`` (default) and ``"remove_frames"``: filter as above;
* ``"off"``: leave every traceback as it is (for debugging refimpl itself).
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
import types
from collections.abc import Callable
from typing import Any, TypeVar

from refimpl.config import config

MODES = ("auto", "remove_frames", "off")

NOTE = (
    "--------------------\n"
    "For simplicity, refimpl has removed its internal frames from the traceback of this "
    "exception. Set REFIMPL_TRACEBACK_FILTERING=off in the environment (or "
    "ri.config.update('traceback_filtering', 'off')) to include these."
)

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_CONTEXTLIB = os.path.abspath(contextlib.__file__)
_state = threading.local()

F = TypeVar("F", bound=Callable[..., Any])


def _is_refimpl(frame: types.FrameType) -> bool:
    return is_refimpl_file(frame.f_code.co_filename)


def is_refimpl_file(filename: str) -> bool:
    """``filename`` is one of refimpl's own source files."""
    return os.path.abspath(filename).startswith(_PACKAGE_DIR)


def user_site() -> str | None:
    """``file:line (function)`` of the innermost caller outside refimpl (and
    outside the contextlib frames of refimpl's context managers)."""
    frame = sys._getframe(1)
    while frame is not None and (
        _is_refimpl(frame) or os.path.abspath(frame.f_code.co_filename) == _CONTEXTLIB
    ):
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:
        return None
    return f"{frame.f_code.co_filename}:{frame.f_lineno} ({frame.f_code.co_name})"


def _keep(entry: types.TracebackType) -> bool:
    frame = entry.tb_frame
    if _is_refimpl(frame):
        return False
    # a refimpl context manager's generator sits below contextlib's __exit__:
    # that frame is refimpl machinery too
    following = entry.tb_next
    return not (
        os.path.abspath(frame.f_code.co_filename) == _CONTEXTLIB
        and following is not None
        and _is_refimpl(following.tb_frame)
    )


def filter_traceback(tb: types.TracebackType | None) -> types.TracebackType | None:
    """``tb`` without refimpl's frames (a new chain; ``tb`` is not changed)."""
    kept = []
    while tb is not None:
        if _keep(tb):
            kept.append(tb)
        tb = tb.tb_next
    out = None
    for entry in reversed(kept):
        out = types.TracebackType(out, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return out


def mode() -> str:
    return config.traceback_filtering


def _filter_exception(error: BaseException) -> None:
    unfiltered = error.__traceback__
    try:
        if getattr(error, "__refimpl_unfiltered_tb__", None) is None:
            error.__refimpl_unfiltered_tb__ = unfiltered  # type: ignore[attr-defined]
            error.add_note(NOTE)
    except (AttributeError, TypeError):  # an exception type without __dict__/notes
        pass
    error.with_traceback(filter_traceback(unfiltered))


def api_boundary(fun: F) -> F:
    """Wrap a public entry point: exceptions leaving the outermost one lose
    refimpl's frames (unless ``traceback_filtering`` is ``"off"``)."""

    @functools.wraps(fun)
    def reraise_with_filtered_traceback(*args: Any, **kwargs: Any) -> Any:
        depth = getattr(_state, "depth", 0)
        _state.depth = depth + 1
        try:
            return fun(*args, **kwargs)
        except Exception as error:
            # only the outermost boundary: inner ones may be inside refimpl
            # code that catches and handles the exception
            if depth == 0 and mode() != "off":
                _filter_exception(error)
            raise  # a bare raise keeps the (filtered) traceback without this frame
        finally:
            _state.depth = depth

    reraise_with_filtered_traceback._refimpl_api_boundary = True  # type: ignore[attr-defined]
    return reraise_with_filtered_traceback  # type: ignore[return-value]
