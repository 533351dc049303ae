"""Issue 16's JAX behaviours: trace reuse, methods, duck-typed eval_shape,
option errors, huge exponents (the crash and data-loss findings are tested in
tests/backends/test_reliability.py and tests/backends/test_adversarial.py)."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import numpy as np

from conformance.case import Case, fn_case, script_case
from conformance.observe import Raises


class Counted:
    """A function that counts how often it is traced (called in Python)."""

    def __init__(self, body: Any) -> None:
        self.body = body
        self.calls = 0

    def __call__(self, *args: Any) -> Any:
        self.calls += 1
        return self.body(*args)


def _jit_twice(ns: Any) -> Any:
    fn = Counted(lambda x: x * 2)
    a = ns.jit(fn)(np.float32(1.0))
    b = ns.jit(fn)(np.float32(2.0))
    return {"outs": [a, b], "traces": fn.calls}


def _while_eagerly(ns: Any) -> Any:
    cond = Counted(lambda x: x < 10)
    body = Counted(lambda x: x + 1)
    outs = [ns.lax_.while_loop(cond, body, np.int32(k)) for k in range(3)]
    return {"outs": outs, "cond_traces": cond.calls, "body_traces": body.calls}


def _cond_eagerly(ns: Any) -> Any:
    yes = Counted(lambda x: x + 1.0)
    no = Counted(lambda x: x - 1.0)
    outs = [ns.lax_.cond(p, yes, no, np.float32(1.0)) for p in (True, False, True)]
    return {"outs": outs, "traces": [yes.calls, no.calls]}


def _method(ns: Any) -> Any:
    class Scale:
        def __init__(self, k: float) -> None:
            self.k = k

        def __hash__(self) -> int:
            return hash(self.k)

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Scale) and other.k == self.k

        @functools.partial(ns.jit, static_argnums=0)
        def apply(self, x: Any) -> Any:
            return x * self.k

    return Scale(3.0).apply(np.arange(3, dtype=np.float32))


class _Duck:
    shape = (3, 2)
    dtype = np.dtype(np.int16)


def _duck_eval_shape(ns: Any) -> Any:
    out = ns.eval_shape(lambda x: x.astype(np.float32).sum(axis=0), _Duck())
    return {"shape": tuple(out.shape), "dtype": np.dtype(out.dtype).name}


def cases() -> Iterator[Case]:
    yield script_case("reliability.trace-reuse/jit-twice", _jit_twice, tags=["jit"])
    yield script_case("reliability.trace-reuse/while-eager", _while_eagerly, tags=["control"])
    yield script_case("reliability.trace-reuse/cond-eager", _cond_eagerly, tags=["control"])
    yield script_case("reliability.jit/method-static-self", _method, tags=["jit"])
    yield script_case("reliability.eval_shape/duck-typed", _duck_eval_shape, tags=["jit"])
    yield script_case(
        "reliability.errors/static-argnums-out-of-range",
        lambda ns: ns.jit(lambda x: x, static_argnums=2**40),
        expect=Raises(ValueError, "only accepts 1 positional arguments"),
        tags=["errors"],
    )
    yield script_case(
        "reliability.errors/donate-argnames-without-signature",
        lambda ns: ns.jit(max, donate_argnames="x"),
        expect=Raises(ValueError, "signature"),
        tags=["errors"],
    )
    yield fn_case(
        "reliability.integer_pow/huge-exponent",
        lambda ns, x: ns.lax_.integer_pow(x, 10**20),
        [np.array([1.0, -1.0, 0.5, 0.0], np.float32)],
        tags=["elementwise"],
    )
