"""Mutable array references (SPEC "Ref"): ``new_ref``, ``freeze``, ``ref[idx] = v``.

Every case calls the implementation's own ``new_ref``/``freeze`` from its
top-level module (``refimpl.new_ref`` / ``jax.new_ref``). Values are
checked against NumPy oracles (the same writes on a NumPy copy); errors
against JAX's words.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from conformance.case import Case, fn_case, script_case
from conformance.namespace import Unsupported
from conformance.observe import Raises

TAGS = ["ref"]


def _api(ns: Any) -> Any:
    module = importlib.import_module(ns.lax_.__name__.split(".")[0])
    if not hasattr(module, "new_ref") or not hasattr(module, "freeze"):
        raise Unsupported(f"{ns.name} has no new_ref/freeze")
    return module


def _writes(ns: Any, x: Any) -> Any:
    api = _api(ns)
    r = api.new_ref(x)
    r[...] = r[...] * 2
    r[1] += 10
    r[0:2] = r[2:4] + 1
    return api.freeze(r)


def _writes_oracle(x: np.ndarray) -> np.ndarray:
    r = np.array(x, copy=True)
    r[...] = r * 2
    r[1] += 10
    r[0:2] = r[2:4] + 1
    return r


def _scan_accumulate(ns: Any, xs: Any) -> Any:
    api = _api(ns)
    acc = api.new_ref(np.zeros(xs.shape[1:], np.float32))

    def body(c, x):
        acc[...] += x * c
        return c + 1, None

    ns.scan(body, np.float32(1), xs)
    return api.freeze(acc)


def _scan_oracle(xs: np.ndarray) -> np.ndarray:
    return sum((i + 1) * x for i, x in enumerate(xs)).astype(np.float32)


def _grad_internal(ns: Any, x: Any) -> Any:
    api = _api(ns)

    def f(x):
        q = api.new_ref(x)
        q[...] = q[...] * x
        q[0] += 3 * x[1]
        return api.freeze(q).sum()

    return api.grad(f)(x)


def _grad_oracle(x: np.ndarray) -> np.ndarray:
    g = 2 * x
    g[1] += 3
    return g


def cases() -> Iterator[Case]:
    x = np.arange(1, 5, dtype=np.float32)
    xs = np.arange(12, dtype=np.float32).reshape(4, 3)
    for mode in ("eager", "jit"):
        yield fn_case(f"ref/writes-{mode}", _writes, [x], oracle=_writes_oracle, mode=mode,
                      tags=TAGS + (["quick"] if mode == "jit" else []))  # fmt: skip
        yield fn_case(f"ref/scan-accumulate-{mode}", _scan_accumulate, [xs],
                      oracle=_scan_oracle, mode=mode, tags=TAGS)  # fmt: skip
    yield fn_case("ref/grad-internal", _grad_internal, [x], oracle=_grad_oracle, tags=TAGS)

    def in_place(ns):
        api = _api(ns)
        r = api.new_ref(np.arange(3, dtype=np.float32))

        def step(r, s):
            r[...] = r[...] * s

        stepped = ns.jit(step)
        for _ in range(3):
            stepped(r, np.float32(2))
        return ns.to_numpy(r[...])

    yield script_case("ref/jit-argument-updated", in_place,
                      expect=np.arange(3, dtype=np.float32) * 8, tags=TAGS)  # fmt: skip

    def returned(ns):
        api = _api(ns)
        return ns.jit(lambda x: api.new_ref(x))(np.float32(1))

    returned_error = Raises(ValueError, "mutable array references cannot be returned")
    yield script_case("ref/error-returned-from-jit", returned, tags=TAGS, expect=returned_error)

    def twice(ns):
        api = _api(ns)
        r = api.new_ref(np.ones(2, np.float32))
        return ns.jit(lambda a, b: a[...] + b[...])(r, r)

    twice_error = Raises(ValueError, "only one reference to a mutable array")
    yield script_case("ref/error-passed-twice", twice, tags=TAGS, expect=twice_error)

    def bad_dtype(ns):
        api = _api(ns)
        r = api.new_ref(np.ones(2, np.float32))
        r[...] = ns.asarray(np.ones(2, np.int32))

    yield script_case("ref/error-dtype", bad_dtype, tags=TAGS,
                      expect=Raises(ValueError, "Invalid dtype for `swap`"))  # fmt: skip
