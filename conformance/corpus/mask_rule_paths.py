"""Masking rules of primitives no other masked program reaches, and
``stop_gradient`` of a ``float0`` leaf (issue 36).

* ``mask.paths/*``: ``stop_gradient`` and ``optimization_barrier`` (one and
  several operands) in masked programs, whose logical shapes pass through
  (barriers.py); NumPy oracles on the unpadded values, refimpl only (JAX has
  no ``mask``).
* ``barrier.more_paths/*``: ``lax.stop_gradient`` of a ``float0`` gradient
  (of an integer input under ``grad(allow_int=True)``), alone and in a tuple
  with a float and an int leaf: returned unchanged, as JAX. ``AGREE``:
  judged by JAX (live or recorded).

Each case's recorded source includes its row and the helpers it calls.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, script_case
from conformance.corpus.masking import Masked, _mask_case, _rows
from conformance.namespace import Unsupported


def _api(ns: Any) -> Any:
    module = importlib.import_module(ns.lax_.__name__.split(".")[0])
    if not hasattr(module, "grad"):
        raise Unsupported(f"{ns.name} has no grad")
    return module


def _int_grad(ns: Any) -> Any:
    """The float0 gradient of an int32 input."""
    return _api(ns).grad(lambda x, i: x * i.astype(np.float32), argnums=1, allow_int=True)(
        np.float32(2), np.int32(3)
    )


def _describe(x: Any) -> Any:
    return (tuple(x.shape), str(x.dtype))


ROWS: list[tuple[str, Any]] = [
    ("stop_gradient_float0", lambda ns: _describe(ns.lax_.stop_gradient(_int_grad(ns)))),
    ("stop_gradient_float0_in_tuple",
     lambda ns: [_describe(leaf) for leaf in ns.lax_.stop_gradient(
         (_int_grad(ns), np.ones(2, np.float32), np.arange(3, dtype=np.int32)))]),
]  # fmt: skip


def _stop(ns: Any, x: Any) -> Any:
    return ns.lax_.stop_gradient(x) * 2.0


def _barrier_one(ns: Any, x: Any) -> Any:
    return ns.lax_.optimization_barrier(x) + 1.0


def _barrier_two(ns: Any, x: Any, y: Any) -> Any:
    a, b = ns.lax_.optimization_barrier((x, y))
    return a * b


MASKED: list[Masked] = [
    Masked("stop_gradient-masked", _stop, lambda x: x * 2.0, ["(n,)"], "(n,)",
           lambda s: [(s["n"],)], [(6,)], _rows, ({"n": 4}, {"n": 1})),
    Masked("optimization_barrier-masked", _barrier_one, lambda x: x + 1.0, ["(n, 2)"], "(n, 2)",
           lambda s: [(s["n"], 2)], [(5, 2)], _rows, ({"n": 3},)),
    Masked("optimization_barrier-two-masked", _barrier_two, np.multiply, ["(n,)", "(n,)"],
           "(n,)", lambda s: [(s["n"],), (s["n"],)], [(6,), (6,)], _rows,
           ({"n": 5}, {"n": 2})),
]  # fmt: skip


def cases() -> Iterator[Case]:
    helpers = "".join(inspect.getsource(h) for h in (_api, _int_grad, _describe))
    for name, fn in ROWS:
        case = script_case(f"barrier.more_paths/{name}", fn, expect=AGREE)
        yield replace(case, source=f"{case.source}\n{inspect.getsource(fn).strip()}\n{helpers}")
    for m in MASKED:
        for sizes in m.sizes:
            case = _mask_case(m, sizes)
            yield replace(case, name=case.name.replace("mask/", "mask.paths/", 1),
                          source=f"{case.source}\n{inspect.getsource(m.fun).strip()}")  # fmt: skip
