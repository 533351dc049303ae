"""The 4-bit integers ``int4``/``uint4`` (ml_dtypes'), as JAX 0.10.2 has them.

``int4.paths/*``: creation (Python ints wrap into 4 bits), casts both ways
(float -> int4 saturates, int -> int4 wraps modulo 16), the arithmetic JAX
allows on them (wrapping), shifts and ``clz`` over 4 bits, promotion with
``bool`` and weak ints, ``jit``/``vmap``/``fori_loop``, bitcasts that split
or pack nibbles (low first), and what JAX refuses: ``abs``, the logical
reductions, ``sum`` without ``dtype=``, and any mix with no promotion path
(TypePromotionError, a ValueError). Values are observed as int64 with the
dtype's name and the weak type. Every case is ``AGREE``: judged by JAX
(live or recorded). Python floats stored into them are checked as NumPy
(ml_dtypes) checks them: a value outside the range is an OverflowError.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, script_case
from conformance.corpus._tables import on_lax, seen_leaves

_I4 = [1, -2, 7, -8]
_U4 = [1, 2, 15, 0]


def _widened(values: np.ndarray) -> np.ndarray:
    return values if values.dtype == np.bool_ else values.astype(np.int64)


def _seen(ns: Any, out: Any) -> Any:
    """Each leaf as (int64 values, dtype name, weak type)."""
    return seen_leaves(ns, out, _widened)


def _i4(ns: Any, values: Any = _I4) -> Any:
    return ns.np_.array(values, ns.np_.int4)


def _u4(ns: Any, values: Any = _U4) -> Any:
    return ns.np_.array(values, ns.np_.uint4)


ROWS: list[tuple[str, Any]] = [
    ("create_wraps", lambda ns, L: _seen(ns, (_i4(ns, [20, -9, 16]), _u4(ns, [-1, 17])))),
    ("casts", lambda ns, L: _seen(ns, (
        _i4(ns).astype(ns.np_.int32), L.convert_element_type(_u4(ns), ns.np_.float32),
        _i4(ns).astype(ns.np_.uint4), _u4(ns).astype(ns.np_.int4)))),
    ("float_saturates",
     lambda ns, L: _seen(ns, ns.np_.array([1.7, -2.5, 9.0, -9.0, np.nan]).astype(ns.np_.int4))),
    ("int_wraps", lambda ns, L: _seen(ns, (
        ns.np_.array([8, 9, -9, 100, 16]).astype(ns.np_.int4),
        ns.np_.array([8, 17, -1, 100]).astype(ns.np_.uint4)))),
    ("arithmetic_wraps", lambda ns, L: _seen(ns, (
        _i4(ns) + _i4(ns), _i4(ns) * _i4(ns), -_i4(ns), _u4(ns) - 3, _i4(ns) + 20,
        _i4(ns) // 3, L.rem(_i4(ns), _i4(ns, 3)), L.div(_i4(ns), _i4(ns, 3))))),
    ("compare_select", lambda ns, L: _seen(ns, (
        _i4(ns) < 1, ns.np_.maximum(_i4(ns), 0), ns.np_.where(_i4(ns) > 0, _i4(ns), 0),
        L.sign(_i4(ns)), L.bitwise_not(_u4(ns))))),
    ("shifts_over_4_bits", lambda ns, L: _seen(ns, (
        L.shift_left(_i4(ns), _i4(ns, [1, 1, 4, 7])),
        L.shift_right_logical(_i4(ns), _i4(ns, [1, 2, 3, -1])),
        L.shift_right_arithmetic(_u4(ns), _u4(ns, [0, 1, 2, 9])),
        ns.np_.right_shift(_u4(ns), 1), L.clz(_u4(ns))))),
    ("reductions_and_sort", lambda ns, L: _seen(ns, (
        _i4(ns).max(), ns.np_.argmax(_i4(ns)), ns.np_.cumsum(_i4(ns)),
        ns.np_.sum(_i4(ns), dtype=ns.np_.int32), ns.np_.sort(_i4(ns)),
        ns.np_.dot(_i4(ns), _i4(ns))))),
    ("promotion_with_bool_and_weak_int",
     lambda ns, L: _seen(ns, (_i4(ns) + ns.np_.ones(4, bool), _u4(ns) + 1))),
    ("jit_vmap_loop", lambda ns, L: _seen(ns, (
        ns.jit(lambda a, s: a * 2 + s)(_i4(ns), 3),
        L.fori_loop(0, 3, lambda i, a: a + 1, _i4(ns))))),
    ("bitcasts", lambda ns, L: _seen(ns, (
        L.bitcast_convert_type(ns.np_.array([0x12, -1], ns.np_.int8), ns.np_.int4),
        L.bitcast_convert_type(_i4(ns, [[1, 2], [3, -4]]), ns.np_.int8),
        L.bitcast_convert_type(ns.np_.array([0x1234], ns.np_.int16), ns.np_.uint4),
        L.bitcast_convert_type(_i4(ns), ns.np_.uint4),
        _i4(ns, [1, 2, 3, 4]).view(ns.np_.int8)))),
    ("float_leaves", lambda ns, L: _seen(ns, _i4(ns, [[2.5, -1.5], [7.0, -8.0]]))),
    ("refused_float_leaf_out_of_range", lambda ns, L: ns.capture(_i4, ns, [1.0, 7.9])),
    ("refused_float_scalar_out_of_range", lambda ns, L: ns.capture(_u4, ns, -0.5)),
    ("refused_abs", lambda ns, L: ns.capture(L.abs, _i4(ns))),
    ("refused_reduce_or", lambda ns, L: ns.capture(L.reduce_or, _u4(ns), (0,))),
    ("refused_sum_without_dtype", lambda ns, L: ns.capture(ns.np_.sum, _i4(ns))),
    ("refused_weak_float", lambda ns, L: ns.capture(lambda: _i4(ns) + 1.5)),
    ("refused_int8", lambda ns, L: ns.capture(lambda: _i4(ns) + ns.np_.ones(4, ns.np_.int8))),
    ("refused_uint4", lambda ns, L: ns.capture(lambda: _i4(ns) + _u4(ns))),
]  # fmt: skip


def cases() -> Iterator[Case]:
    helpers = "".join(inspect.getsource(h) for h in (_seen, _i4, _u4))
    for name, fn in ROWS:
        case = script_case(f"int4.paths/{name}", on_lax(fn), expect=AGREE)
        yield replace(case, source=f"{case.source}\n{inspect.getsource(fn).strip()}\n{helpers}")
