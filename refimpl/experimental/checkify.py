"""``jax.experimental.checkify``: user checks on concrete values.

What is provided is the part that runs without staging an error value through
a compiled program:

* ``check(pred, msg, *fmt_args, **fmt_kwargs)`` with a concrete ``pred``
  (eager code, or a ``jvp``/``grad`` of eager code): outside ``checkify`` a
  false predicate raises :class:`JaxRuntimeError`; inside, the first failure
  is recorded in the returned :class:`Error`;
* ``checkify(f, errors=user_checks)``: ``f`` run with its checks collected,
  returning ``(error, out)``; ``error.get()``/``error.throw()``/
  ``check_error(error)`` as in JAX;
* the error categories and their sets (``user_checks``, ``nan_checks``,
  ``index_checks``, ``div_checks``, ``float_checks``, ``automatic_checks``,
  ``all_checks``).

A ``check`` whose predicate is traced (inside ``jit``, ``vmap``, control
flow) needs JAX's functionalization of errors, which refimpl does not
provide: it raises ``NotImplementedError``. The automatic checks (NaN,
division, index) are accepted as categories and not performed.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from refimpl import tracing

__all__ = [
    "DivisionByZeroError",
    "Error",
    "ErrorCategory",
    "FailedCheckError",
    "JaxRuntimeError",
    "NaNError",
    "OOBError",
    "all_checks",
    "automatic_checks",
    "check",
    "check_error",
    "checkify",
    "div_checks",
    "float_checks",
    "index_checks",
    "nan_checks",
    "user_checks",
]


class JaxRuntimeError(ValueError):
    """A failed check, raised when the error is thrown."""


class ErrorCategory(Exception):
    """The base of the checkify error categories."""


class FailedCheckError(ErrorCategory):
    """A user ``check`` whose predicate was false."""


class NaNError(ErrorCategory):
    """A NaN produced by an operation (category only: not checked)."""


class DivisionByZeroError(ErrorCategory):
    """An integer division by zero (category only: not checked)."""


class OOBError(ErrorCategory):
    """An out-of-bounds index (category only: not checked)."""


user_checks = frozenset({FailedCheckError})
nan_checks = frozenset({NaNError})
index_checks = frozenset({OOBError})
div_checks = frozenset({DivisionByZeroError})
float_checks = nan_checks | div_checks
automatic_checks = float_checks | index_checks
all_checks = automatic_checks | user_checks


class Error:
    """The outcome of a checkified function: no error, or the first failed
    check's message."""

    def __init__(self, message: str | None = None) -> None:
        self._message = message

    def get(self) -> str | None:
        """The message of the failure, or None."""
        return self._message

    def get_exception(self) -> JaxRuntimeError | None:
        return None if self._message is None else JaxRuntimeError(self._message)

    def throw(self) -> None:
        """Raise the failure as a :class:`JaxRuntimeError` (nothing when there is none)."""
        if self._message is not None:
            raise JaxRuntimeError(self._message)

    def __repr__(self) -> str:
        return f"Error({self._message!r})"


class _Collecting(threading.local):
    def __init__(self) -> None:
        self.stack: list[list[str]] = []


_collecting = _Collecting()


def _concrete(pred: Any) -> bool:
    if isinstance(pred, tracing.Tracer):
        raise NotImplementedError(
            "checkify.check on a traced predicate (inside jit, vmap or control flow) "
            "is not provided by refimpl: only concrete predicates are checked"
        )
    return bool(np.all(np.asarray(pred)))


def check(pred: Any, msg: str, *fmt_args: Any, **fmt_kwargs: Any) -> None:
    """Check that ``pred`` holds; ``msg.format(*fmt_args, **fmt_kwargs)`` is
    the failure's message. Outside :func:`checkify`, a failure raises."""
    if _concrete(pred):
        return
    args = [np.asarray(a) if hasattr(a, "dtype") else a for a in fmt_args]
    kwargs = {k: np.asarray(v) if hasattr(v, "dtype") else v for k, v in fmt_kwargs.items()}
    message = msg.format(*args, **kwargs)
    if _collecting.stack:
        if not _collecting.stack[-1]:
            _collecting.stack[-1].append(message)
        return
    raise JaxRuntimeError(message)


def check_error(error: Error) -> None:
    """Raise ``error``'s failure, if it has one."""
    error.throw()


def checkify(fun: Callable[..., Any], errors: frozenset = user_checks) -> Callable[..., Any]:
    """``fun`` returning ``(error, out)``: ``error`` holds the first failed
    user check (when ``errors`` includes the user checks)."""

    @functools.wraps(fun)
    def checked(*args: Any, **kwargs: Any) -> tuple[Error, Any]:
        _collecting.stack.append([])
        try:
            out = fun(*args, **kwargs)
        finally:
            failures = _collecting.stack.pop()
        if failures and FailedCheckError in errors:
            return Error(failures[0]), out
        return Error(None), out

    return checked
