"""Counters of the work refimpl does, for tests (JAX's ``util.test_event``).

Each event is recorded at the one place the work happens, never by its
callers, so a count is what refimpl really did:

* :data:`JIT_TRACE`: a jitted function traced for a signature its cache did
  not hold (``Jitted._lookup``; ``eval_shape`` and ``make_jaxpr`` trace
  through the same cache), on either backend;
* :data:`PJRT_LOWERING`: a program lowered to StableHLO on the pjrt backend
  (``lowering.lower_program``: a jit cache entry's, a pmap's, a sharded
  jit's, an AOT ``lower()``'s; the reference backend interprets programs: it
  lowers nothing);
* :data:`PJRT_FAST_PATH_MISS`: a call of a pjrt jitted function whose
  signature the C++ fast path did not hold (``fast_path.on_miss``);
* :data:`PJRT_EAGER_PRIMITIVE`: an eager primitive on the pjrt backend whose
  (primitive, params) had no jit yet (``backend.eager_dispatch`` makes one,
  compiled per operand signature).

Counts are per thread, as JAX's: work done on another thread is not seen.
``refimpl.test_util``'s ``count_*`` context managers read them.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

__all__ = [
    "JIT_TRACE",
    "PJRT_EAGER_PRIMITIVE",
    "PJRT_FAST_PATH_MISS",
    "PJRT_LOWERING",
    "count",
    "record",
]

JIT_TRACE = "jit_trace"
PJRT_LOWERING = "pjrt_lowering"
PJRT_FAST_PATH_MISS = "pjrt_fast_path_miss"
PJRT_EAGER_PRIMITIVE = "pjrt_eager_primitive"


class _Counts(threading.local):
    def __init__(self) -> None:
        self.counts: dict[str, int] = {}


_state = _Counts()


def record(event: str) -> None:
    """Count one occurrence of ``event`` in this thread."""
    counts = _state.counts
    counts[event] = counts.get(event, 0) + 1


@contextlib.contextmanager
def count(event: str) -> Iterator[Callable[[], int]]:
    """A function giving the number of ``event`` recorded in this thread
    since the block was entered (also after it is left)."""
    before = _state.counts.get(event, 0)
    yield lambda: _state.counts.get(event, 0) - before
