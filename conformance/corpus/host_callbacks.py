"""Host callbacks inside jitted programs (docs/semantics.md 15.6, 15.7):
``pure_callback`` at the top level and in scan, while, fori_loop, cond and
vmap; ``debug.callback`` values and their order in and around loops and
branches; ``io_callback``'s effects (kept unused, in order, per vmap element).
On pjrt these are host callbacks inside the compiled program.
Expectations are NumPy oracles, constants and JAX's refusals that JAX meets as well, so
nothing is recorded.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from conformance.case import Case, fn_case, script_case
from conformance.observe import Raises

TAGS = ["host_callbacks"]

X = np.array([0.5, -1.25, 2.0], np.float32)


def _api(ns: Any) -> Any:
    return importlib.import_module(ns.lax_.__name__.split(".")[0])


def _pc(ns: Any, x: Any, **kwargs: Any) -> Any:
    api = _api(ns)
    spec = api.ShapeDtypeStruct(x.shape, x.dtype)
    return api.pure_callback(lambda a: np.cumsum(np.asarray(a)), spec, x, **kwargs)


def _top(ns: Any, x: Any) -> Any:
    return _pc(ns, x) * 2


def _in_scan(ns: Any, x: Any) -> Any:
    return ns.lax_.scan(lambda c, t: (_pc(ns, c) + t, c.sum()), x, np.arange(3.0, dtype=np.float32))


def _in_while(ns: Any, x: Any) -> Any:
    return ns.lax_.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, _pc(ns, c[1])), (0, x))[1]


def _in_fori(ns: Any, x: Any) -> Any:
    return ns.lax_.fori_loop(0, 2, lambda i, v: _pc(ns, v) - i, x)


def _in_cond(ns: Any, x: Any) -> Any:
    return ns.lax_.cond(x[0] > 0, lambda v: _pc(ns, v), lambda v: -v, x)


def _vmapped(ns: Any, x: Any) -> Any:
    return _api(ns).vmap(lambda v: _pc(ns, v, vmap_method="sequential"))(x)


def _cumsums(x: np.ndarray, n: int) -> np.ndarray:
    for _ in range(n):
        x = np.cumsum(x)
    return x


def _scan_oracle(x: np.ndarray) -> Any:
    carry, sums = x, []
    for t in range(3):
        sums.append(carry.sum())
        carry = np.cumsum(carry) + np.float32(t)
    return carry, np.array(sums, np.float32)


def _debug_order(ns: Any) -> Any:
    """Every value a debug.callback sees, in order, around and inside loops
    (``ordered=True``: JAX may reorder unordered callbacks; refimpl never does)."""
    api = _api(ns)
    seen = []

    def cb(fn, v):
        api.debug.callback(fn, v, ordered=True)

    def record(tag):
        return lambda v: seen.append((tag, float(np.asarray(v))))

    def f(x):
        cb(record("before"), x)
        x = ns.lax_.while_loop(lambda v: v < 4, lambda v: (cb(record("while"), v), v * 2)[1], x)
        x = ns.lax_.cond(x > 3, lambda v: (cb(record("cond"), v), v)[1], lambda v: v, x)
        cb(record("after"), x)
        return x

    ns.jit(f)(np.float32(1))
    return seen


def _io_callback(ns: Any) -> Any:
    return importlib.import_module(_api(ns).__name__ + ".experimental").io_callback


def _io_effects(ns: Any) -> Any:
    """The values io_callback sees and returns, in order: a call whose result
    nothing uses (kept: it is an effect), ordered calls around a nested jit
    and in a scan, and a vmap (once per element)."""
    api, io_callback = _api(ns), _io_callback(ns)
    seen = []
    spec = api.ShapeDtypeStruct((), np.float32)

    def record(v):
        seen.append(float(np.asarray(v)))
        return np.asarray(v) * 2

    def f(x):
        io_callback(record, spec, x)  # unused
        y = ns.jit(lambda v: io_callback(record, spec, v + 1, ordered=True))(x)
        ys = ns.lax_.scan(lambda c, t: (c, io_callback(record, spec, c + t, ordered=True)), y,
                          np.arange(2, dtype=np.float32))[1]  # fmt: skip
        return y, ys

    out = ns.jit(f)(np.float32(1))
    batched = api.vmap(lambda v: io_callback(record, spec, v))(np.float32([5, 6]))
    api.effects_barrier()
    return seen, [np.asarray(o).tolist() for o in (*out, batched)]


def _io_vmap_of_cond(ns: Any) -> Any:
    """vmap of a cond whose branch holds an io_callback: JAX 0.10.2 refuses it."""
    api, io_callback = _api(ns), _io_callback(ns)
    spec = api.ShapeDtypeStruct((), np.float32)

    def f(p, x):
        return ns.lax_.cond(p, lambda v: io_callback(np.negative, spec, v), lambda v: v, x)

    return api.vmap(f)(np.array([True, False]), np.float32([1, 2]))


def _io_transpose(ns: Any) -> Any:
    api, io_callback = _api(ns), _io_callback(ns)
    spec = api.ShapeDtypeStruct((), np.float32)
    x = np.float32(1)
    return api.linear_transpose(lambda v: io_callback(np.negative, spec, v), x)(x)


def cases() -> Iterator[Case]:
    yield fn_case("host_callbacks/pure_callback-jit", _top, [X], oracle=lambda x: np.cumsum(x) * 2,
                  tags=TAGS)  # fmt: skip
    yield fn_case("host_callbacks/pure_callback-scan", _in_scan, [X], oracle=_scan_oracle,
                  tags=TAGS)  # fmt: skip
    yield fn_case(
        "host_callbacks/pure_callback-while",
        _in_while,
        [X],
        oracle=lambda x: _cumsums(x, 3),
        tags=TAGS,
    )
    yield fn_case(
        "host_callbacks/pure_callback-fori_loop",
        _in_fori,
        [X],
        oracle=lambda x: np.cumsum(np.cumsum(x)) - 1,
        tags=TAGS,
    )
    yield fn_case(
        "host_callbacks/pure_callback-cond",
        _in_cond,
        [X],
        oracle=lambda x: np.cumsum(x) if x[0] > 0 else -x,
        tags=TAGS,
    )
    yield fn_case(
        "host_callbacks/pure_callback-vmap-sequential",
        _vmapped,
        [np.stack([X, -X])],
        oracle=lambda x: np.cumsum(x, axis=1),
        tags=TAGS,
    )
    yield script_case(
        "host_callbacks/debug-callback-order",
        _debug_order,
        expect=[("before", 1.0), ("while", 1.0), ("while", 2.0), ("cond", 4.0), ("after", 4.0)],
        tags=TAGS,
    )
    yield script_case(
        "host_callbacks/io-callback-vmap-of-cond",
        _io_vmap_of_cond,
        expect=Raises(NotImplementedError, "IO effect not supported in vmap-of-cond"),
        tags=TAGS,
    )
    yield script_case(
        "host_callbacks/io-callback-transpose",
        _io_transpose,
        expect=Raises(ValueError, "IO callbacks do not support transpose"),
        tags=TAGS,
    )
    yield script_case(
        "host_callbacks/io-callback-effects",
        _io_effects,
        expect=([1.0, 2.0, 4.0, 5.0, 5.0, 6.0], [4.0, [8.0, 10.0], [10.0, 12.0]]),
        tags=TAGS,
    )
