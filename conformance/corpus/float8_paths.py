"""The 8-bit floats ``float8_e4m3fn``, ``float8_e5m2``, ``float8_e4m3fnuz``,
``float8_e5m2fnuz``, ``float8_e4m3b11fnuz``, ``float8_e3m4`` and
``float8_e4m3`` (ml_dtypes'), as JAX 0.10.2 has them on CPU.

``float8.paths/*``: creation and casts both ways (round to nearest even; a
value past the range is NaN for the types without infinities), arithmetic
and transcendental functions (XLA computes them as float16, then rounds to
float8: ``float8_e5m2`` ``exp(-0.375)`` is 0.75, not 0.625), reductions
(``max``'s identity is the lowest finite value where there is no ``-inf``),
products (one type or two, into float32), promotion with bool, integers and
weakly typed values (the float8 type wins), ``jit``/``vmap``/``grad``,
bitcasts, and what JAX refuses: a mix with any other float or another
float8 type (TypePromotionError). Values are observed as float32 with the
dtype's name and the weak type. Every case is ``AGREE``: judged by JAX
(live or recorded).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, script_case
from conformance.corpus._tables import on_lax, seen_leaves

_NAMES = [
    "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
    "float8_e4m3b11fnuz", "float8_e3m4", "float8_e4m3",
]  # fmt: skip
_VALUES = [1.3, -2.7, 0.375, -0.375, 3.0, 0.0]
F32 = np.dtype(np.float32)


def _widened(values: np.ndarray) -> np.ndarray:
    return values if values.dtype.kind in "biu" else values.astype(np.float32)


def _seen(ns: Any, out: Any) -> Any:
    """Each leaf as (float32 values, dtype name, weak type)."""
    return seen_leaves(ns, out, _widened)


def _f8(ns: Any, name: str, values: Any = _VALUES) -> Any:
    return ns.np_.array(values, getattr(ns.np_, name))


def _each(ns: Any, fn: Any) -> Any:
    """``fn(x)`` for an array of each float8 type."""
    return _seen(ns, [leaf for name in _NAMES for leaf in fn(_f8(ns, name))])


ROWS: list[tuple[str, Any]] = [
    ("casts", lambda ns, L: _each(ns, lambda x: (
        x, x.astype(ns.np_.float32),
        ns.np_.array([1.0625, 1.1875, 300.0, 1e6, -1e6, np.inf], np.float32).astype(x.dtype),
        L.convert_element_type(x, ns.np_.int32)))),
    ("arithmetic", lambda ns, L: _each(ns, lambda x: (
        x + 1, x * x, x / 3, -x, ns.np_.abs(x), x - x[0], ns.np_.maximum(x, 0.5)))),
    ("transcendental", lambda ns, L: _each(ns, lambda x: (
        ns.np_.exp(x), ns.np_.tanh(x), ns.np_.sin(x), ns.np_.sqrt(ns.np_.abs(x)),
        ns.np_.log1p(ns.np_.abs(x))))),
    ("reductions_and_sort", lambda ns, L: _each(ns, lambda x: (
        x.max(), x.min(), L.reduce_max(x, (0,)), L.reduce_min(x[:0], (0,)),
        ns.np_.sum(x), ns.np_.argmax(x), ns.np_.sort(x), ns.np_.cumsum(x)))),
    ("products", lambda ns, L: _each(ns, lambda x: (
        L.dot(x, x, preferred_element_type=ns.np_.float32), L.dot(x, x),
        ns.np_.dot(x, ns.np_.ones(6, ns.np_.int8))))),
    ("mixed_float8_product", lambda ns, L: _seen(ns, (
        L.dot(_f8(ns, "float8_e4m3fn"), _f8(ns, "float8_e5m2"), preferred_element_type=F32),
        L.dot(_f8(ns, "float8_e5m2"), _f8(ns, "float8_e4m3fn"), preferred_element_type=F32)))),
    ("promotion_with_bool_int_weak", lambda ns, L: _each(ns, lambda x: (
        x + ns.np_.ones(6, bool), x + ns.np_.ones(6, ns.np_.int32), x + 1.5, x * 2))),
    ("jit_vmap_grad", lambda ns, L: _each(ns, lambda x: (
        ns.jit(lambda a: a * 2 + 1)(x), ns.api.vmap(lambda a: a * a)(x),
        ns.api.grad(lambda a: (a * a).sum())(x)))),
    ("bitcasts", lambda ns, L: _each(ns, lambda x: (
        L.bitcast_convert_type(x, ns.np_.uint8),
        L.bitcast_convert_type(ns.np_.array([0x38, 0x7F, 0x80], ns.np_.uint8), x.dtype)))),
    ("refused_float32", lambda ns, L: ns.capture(
        lambda: _f8(ns, "float8_e4m3fn") + ns.np_.ones(6, ns.np_.float32))),
    ("refused_bfloat16", lambda ns, L: ns.capture(
        lambda: _f8(ns, "float8_e5m2") + ns.np_.ones(6, ns.np_.bfloat16))),
    ("refused_other_float8", lambda ns, L: ns.capture(
        lambda: _f8(ns, "float8_e4m3fn") + _f8(ns, "float8_e5m2"))),
]  # fmt: skip


def cases() -> Iterator[Case]:
    # (the types and values the rows run over are part of each case's source)
    helpers = f"_NAMES = {_NAMES!r}\n_VALUES = {_VALUES!r}\n"
    helpers += "".join(inspect.getsource(h) for h in (_seen, _f8, _each))
    for name, fn in ROWS:
        case = script_case(f"float8.paths/{name}", on_lax(fn), expect=AGREE)
        yield replace(case, source=f"{case.source}\n{inspect.getsource(fn).strip()}\n{helpers}")
