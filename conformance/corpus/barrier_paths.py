"""Branches of refimpl/primitives/barriers.py (stop_gradient,
optimization_barrier) that other families leave untaken (issue 36):
``optimization_barrier`` of an empty pytree under ``jit`` (no operands to
lower), of a pytree mixing differentiated and constant leaves under ``jvp``
and ``grad`` (only live tangents and cotangents go through the barrier),
and ``stop_gradient`` of a float0 array (returned as it is).

Each case is ``AGREE``: judged by JAX's recording; each one's recorded
source includes the helper it calls. Left out, differing from JAX:
``lax.top_k`` of a rank-0 operand (JAX raises ValueError, refimpl TypeError).
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, script_case


def _api(ns: Any) -> Any:
    return importlib.import_module(ns.lax_.__name__.split(".")[0])


def _barrier_empty_jit(ns: Any) -> Any:
    L = ns.lax_
    return ns.jit(lambda: L.optimization_barrier(()))(), ns.jit(
        lambda: L.optimization_barrier({})
    )()


def _barrier_jvp_constant(ns: Any) -> Any:
    api, L = _api(ns), ns.lax_

    def f(x: Any) -> Any:
        a, c, n = L.optimization_barrier((x, np.float32(2), np.int32(4)))
        return a * c + n

    return api.jvp(f, (np.float32(1.5),), (np.float32(1.0),))


def _barrier_grad_unused(ns: Any) -> Any:
    api, L = _api(ns), ns.lax_

    def f(x: Any) -> Any:
        a, b, c = L.optimization_barrier((x * 2, x * 3, np.float32(5)))
        return (a * c).sum()

    return api.grad(f)(np.array([1.0, -2.0], np.float32))


def _barrier_grad_jit(ns: Any) -> Any:
    api, L = _api(ns), ns.lax_

    def f(x: Any, y: Any) -> Any:
        a, b = L.optimization_barrier((x * y, y))
        return (a * a).sum() + b.sum()

    return api.grad(ns.jit(f), argnums=(0, 1))(np.array([1.0, 2.0], np.float32), np.float32(3))


def _barrier_vmap(ns: Any) -> Any:
    api, L = _api(ns), ns.lax_
    f = lambda x, y: L.optimization_barrier((x * 2, y))  # noqa: E731
    return api.vmap(f, in_axes=(1, None))(np.arange(6, dtype=np.float32).reshape(2, 3), np.int32(7))


def _stop_gradient_vmap(ns: Any) -> Any:
    api, L = _api(ns), ns.lax_
    f = lambda x: L.stop_gradient(x) * x  # noqa: E731
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    return api.vmap(f, in_axes=1)(x), api.vmap(api.grad(lambda v: f(v).sum()))(x)


ROWS: list[tuple[str, Any]] = [
    ("barrier_empty_jit", _barrier_empty_jit),
    ("barrier_jvp_constant", _barrier_jvp_constant),
    ("barrier_grad_unused", _barrier_grad_unused),
    ("barrier_grad_jit", _barrier_grad_jit),
    ("barrier_vmap", _barrier_vmap),
    ("stop_gradient_vmap", _stop_gradient_vmap),
]


def cases() -> Iterator[Case]:
    for name, fn in ROWS:
        case = script_case(f"barrier.paths/{name}", fn, expect=AGREE)
        yield replace(case, source=f"{case.source}\n{inspect.getsource(_api)}")
