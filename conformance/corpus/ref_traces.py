"""Trace counts while refs are alive (SPEC "Ref"; JAX 0.10.2's counts).

A jitted function, scan body, cond branch or while function that touches a
ref made outside it is traced once, as in JAX (and one touching no ref is
traced exactly as without refs). Each case counts the calls of its user
functions and returns them with the refs' final values; the expectations
are the counts JAX gives and NumPy arithmetic for the values.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from conformance.case import Case, script_case
from conformance.corpus.ref import _api
from conformance.observe import Weak

TAGS = ["ref", "trace_count"]


def _jit_closure(ns: Any) -> Any:
    api = _api(ns)
    r = api.new_ref(np.zeros(3, np.float32))
    n = {"f": 0, "g": 0}

    def f(x):
        n["f"] += 1
        r[...] += x
        return x * 2

    def g(x):
        n["g"] += 1
        return x + 1

    jf, jg = ns.jit(f), ns.jit(g)
    x = np.ones(3, np.float32)
    jf(x), jf(x), jg(x), jg(x)
    return {"traces": (n["f"], n["g"]), "r": api.freeze(r)}


def _scan_in_jit(ns: Any) -> Any:
    api = _api(ns)
    r = api.new_ref(np.zeros(3, np.float32))
    n = {"body": 0, "plain": 0}

    def body(c, x):
        n["body"] += 1
        r[...] += x
        return c + 1, None

    def plain(c, x):
        n["plain"] += 1
        return c + x, None

    xs = np.ones((2, 3), np.float32)
    carry = ns.jit(lambda xs: ns.lax_.scan(body, 0, xs)[0])(xs)
    total = ns.jit(lambda xs: ns.lax_.scan(plain, np.zeros(3, np.float32), xs)[0])(xs)
    return {"traces": (n["body"], n["plain"]), "carry": carry, "total": total, "r": api.freeze(r)}


def _cond_in_jit(ns: Any) -> Any:
    api = _api(ns)
    r = api.new_ref(np.zeros(3, np.float32))
    n = {"writes": 0, "untouched": 0}

    def writes(x):
        n["writes"] += 1
        r[...] += x
        return x

    def untouched(x):
        n["untouched"] += 1
        return x * 2

    f = ns.jit(lambda x: ns.lax_.cond(x.sum() > 0, writes, untouched, x))
    outs = [f(np.ones(3, np.float32)), f(-np.ones(3, np.float32))]
    return {"traces": (n["writes"], n["untouched"]), "outs": outs, "r": api.freeze(r)}


def _while_in_jit(ns: Any) -> Any:
    api = _api(ns)
    r, limit = api.new_ref(np.float32(0)), api.new_ref(np.float32(4))
    n = {"cond": 0, "body": 0}

    def cond(i):
        n["cond"] += 1
        return i < limit[...]

    def body(i):
        n["body"] += 1
        r[...] += i
        return i + 1

    out = ns.jit(lambda: ns.lax_.while_loop(cond, body, np.float32(0)))()
    return {"traces": (n["cond"], n["body"]), "out": out, "r": api.freeze(r)}


def cases() -> Iterator[Case]:
    f32 = np.float32
    yield script_case("ref.traces/jit-closure", _jit_closure, tags=TAGS,
                      expect={"traces": (1, 1), "r": np.full(3, 2, f32)})  # fmt: skip
    yield script_case("ref.traces/scan-in-jit", _scan_in_jit, tags=TAGS,
                      expect={"traces": (1, 1), "carry": Weak(np.int32(2)),
                              "total": np.full(3, 2, f32), "r": np.full(3, 2, f32)})  # fmt: skip
    yield script_case("ref.traces/cond-in-jit", _cond_in_jit, tags=TAGS,
                      expect={"traces": (1, 1), "r": np.ones(3, f32),
                              "outs": [np.ones(3, f32), np.full(3, -2, f32)]})  # fmt: skip
    yield script_case("ref.traces/while-in-jit", _while_in_jit, tags=TAGS,
                      expect={"traces": (1, 1), "out": f32(4), "r": f32(6)})  # fmt: skip
