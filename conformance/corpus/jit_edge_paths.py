"""Branches of ``jit``'s argument handling (``refimpl/transforms/jit.py``)
the other families leave untaken (found with ``tools/conformance_coverage.py``),
against JAX (recorded): what a jitted call makes of arguments that are no
arrays (a ``ShapeDtypeStruct``, a string, an object: ``TypeError``; a string
under ``pmap``: ``ValueError``; a ``ShapeDtypeStruct`` under ``pmap``:
``TypeError``), an unhashable function (``TypeError``), ``donate_argnames``
of a function without a signature (``ValueError``), ``static_argnums=True``
(argument 1, a bool being an int in JAX 0.10.2), ``static_argnames=None``, a
type as a static argument, a static argument of a user type called again
after ``clear_caches``, and the types of the
float0 outputs of a jitted ``grad(..., allow_int=True)`` through
``.trace(...).out_info`` and ``eval_shape``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, script_case

TAGS = ("jit",)
X = np.arange(3, dtype=np.float32)


def _types(structs: Any) -> list[Any]:
    return [(tuple(s.shape), str(np.dtype(s.dtype))) for s in structs]


class _Scale:
    """A static argument of a user type (not a plain value: jit keeps such
    signatures in the function's own cache)."""

    k = 3.0


class _Unhashable:
    __hash__ = None  # type: ignore[assignment]

    def __call__(self, a: Any) -> Any:
        return a * 2


def _after_clear_caches(ns: Any) -> Any:
    f = ns.api.jit(lambda a, s: a * s.k, static_argnums=1)
    first = f(ns.asarray(X), _Scale())
    ns.api.clear_caches()
    return first, f(ns.asarray(X), _Scale())


def _grad_int(api: Any) -> Any:
    return api.jit(api.grad(lambda a, n: (a * n).sum(), argnums=(0, 1), allow_int=True))


SCRIPTS: dict[str, Callable[[Any], Any]] = {
    "abstract_argument": lambda ns: ns.capture(
        ns.api.jit(lambda a: a * 2), ns.api.ShapeDtypeStruct((3,), np.float32)
    ),
    "string_argument": lambda ns: ns.capture(ns.api.jit(lambda a: a), "abc"),
    "object_argument": lambda ns: ns.capture(ns.api.jit(lambda a: a), object()),
    "pmap_string_argument": lambda ns: ns.capture(ns.api.pmap(lambda a: a), "abc"),
    "pmap_abstract_argument": lambda ns: ns.capture(
        ns.api.pmap(lambda a: a * 2), ns.api.ShapeDtypeStruct((1, 3), np.float32)
    ),
    "unhashable_function": lambda ns: ns.capture(ns.api.jit(_Unhashable()), ns.asarray(X)),
    "static_type_argument": lambda ns: ns.api.jit(lambda a, t: a.astype(t), static_argnums=1)(
        ns.asarray(X), np.int32
    ),
    "user_static_after_clear_caches": _after_clear_caches,
    "donate_argnames_without_signature": lambda ns: ns.capture(
        lambda: ns.api.jit(max, donate_argnames="x")
    ),
    "static_argnums_true": lambda ns: ns.api.jit(lambda a, b: a * b, static_argnums=True)(
        ns.asarray(X), 2
    ),
    "static_argnames_none": lambda ns: ns.api.jit(lambda a: a * 2, static_argnames=None)(
        ns.asarray(X)
    ),
    "float0_out_info": lambda ns: _types(
        _grad_int(ns.api).trace(ns.asarray(X), np.int32(2)).out_info
    ),
    "float0_eval_shape": lambda ns: _types(
        ns.api.eval_shape(_grad_int(ns.api), ns.asarray(X), np.int32(2))
    ),
}


def cases() -> Iterator[Case]:
    for name, script in SCRIPTS.items():
        yield script_case(f"jit.edges/{name}", script, expect=AGREE, tags=TAGS)
