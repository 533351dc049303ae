"""Branches of the elementwise rules no other case reaches (refimpl/primitives/elementwise.py;
issue 36).

``elementwise.paths/*``: ``lax.mul`` with ``out_dtype`` (eagerly, under
``jit``, ``grad``: its transpose keeps the linear operand's dtype),
``lax.clamp`` differentiated in the bounds only or in the operand only, and
at ties (``x == lo``, ``x == hi``, ``lo == hi``, ``lo > hi``: JAX's rule
gives no side the tangent at a tie; distinct tangents per argument, so a
rule comparing with ``ge``/``le`` or giving a tie to another side differs),
``lax.pow`` with an integer exponent under ``grad``/``jvp`` (0 and negative
exponents), complex ``lax.min``/``max``, ``lax.pow`` of float16, ``lax.erf``
and ``lax.logistic`` of float64 (x64), ``grad`` through an explicit copy;
and the calls every implementation refuses with JAX's class: ``round`` with
an unknown rounding method, ``select_n`` with a bool predicate and three
cases or a predicate of another shape, ``pow`` of float32 by a float16
exponent, ``convert_element_type`` without a dtype, ``split`` with a
negative size; ``mul``'s ``out_dtype`` with broadcasting operands under
``jit``, and a Python int converted out of range (it wraps). Every case is
``AGREE``: judged by JAX (live or recorded); each
case's recorded source includes its row and the helpers it calls.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, script_case
from conformance.corpus._tables import on_lax
from conformance.namespace import Unsupported

_X = np.array([-1.5, -0.25, 0.5, 2.0, 3.5], np.float32)
_H = np.array([0.5, -1.25, 2.0, 3.0], np.float16)
_C = np.array([1 + 2j, 1 - 1j, -2 + 0j, 0.5 + 0.5j], np.complex64)
_D = np.array([2 - 1j, 1 + 1j, -2 + 1j, 0.5 + 0.5j], np.complex64)


def _api(ns: Any) -> Any:
    module = importlib.import_module(ns.lax_.__name__.split(".")[0])
    if not hasattr(module, "grad"):
        raise Unsupported(f"{ns.name} has no grad")
    return module


def _jvp(ns: Any, f: Any, *args: Any) -> Any:
    """``jvp`` of ``f`` with each argument's tangent a ramp of its shape."""
    tangents = tuple(np.linspace(0.5, 1.5, np.size(a)).astype(np.float32).reshape(np.shape(a))
                     for a in args)  # fmt: skip
    return _api(ns).jvp(f, args, tangents)


# x < lo, x == lo, inside, x == hi, x > hi, lo == x == hi, x < lo == hi, x > lo == hi, lo > hi
_LO = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 2.0], np.float32)
_XT = np.array([-1.0, 0.0, 0.5, 1.0, 2.0, 1.0, 0.0, 2.0, 1.5], np.float32)
_HI = np.ones(9, np.float32)
_T = np.arange(1, 10, dtype=np.float32)


ROWS: list[tuple[str, Any]] = [
    ("mul_out_dtype",
     lambda ns, L: L.mul(ns.asarray(_H), ns.asarray(_H[::-1]), out_dtype=np.float32)),
    ("mul_out_dtype_jit",
     lambda ns, L: ns.jit(lambda a, b: L.mul(a, b, out_dtype=np.float32))(_H, _H[::-1])),
    ("mul_out_dtype_grad",
     lambda ns, L: _api(ns).grad(
         lambda a: L.mul(a, _H[::-1], out_dtype=np.float32).sum())(_H)),
    ("mul_out_dtype_grad_rhs",
     lambda ns, L: _api(ns).grad(
         lambda b: (L.mul(_H, b, out_dtype=np.float32) * _X[:4]).sum())(_H[::-1])),
    # bounds of the operand's shape: JAX 0.10.2's jvp fails for a scalar bound with a tangent
    ("clamp_jvp_bounds_only",
     lambda ns, L: _jvp(ns, lambda lo, hi: L.clamp(lo, _X, hi), np.full(5, -1.0, np.float32),
                        np.full(5, 1.0, np.float32))),
    ("clamp_jvp_low_only",
     lambda ns, L: _jvp(ns, lambda lo: L.clamp(lo, _X, np.float32(3.0)),
                        np.full(5, 0.25, np.float32))),
    ("clamp_jvp_high_only",
     lambda ns, L: _jvp(ns, lambda hi: L.clamp(np.float32(-1.0), _X, hi),
                        np.full(5, 0.75, np.float32))),
    ("clamp_jvp_operand_only",
     lambda ns, L: _jvp(ns, lambda x: L.clamp(np.float32(-1.0), x, np.float32(1.0)), _X)),
    ("clamp_jvp_ties_jit",
     lambda ns, L: ns.jit(lambda lo, x, hi: _api(ns).jvp(
         L.clamp, (lo, x, hi), (_T, _T * 10, _T * 100)))(_LO, _XT, _HI)),
    ("clamp_vjp_ties",
     lambda ns, L: _api(ns).vjp(L.clamp, ns.asarray(_LO), ns.asarray(_XT), ns.asarray(_HI))[1](
         ns.asarray(_T))),
    ("pow_int_exponent_grad",
     lambda ns, L: _api(ns).grad(lambda x: L.pow(x, np.int32(3)).sum())(_X)),
    ("pow_int_exponents_jvp",
     lambda ns, L: _jvp(ns, lambda x: L.pow(x, np.array([0, 1, -2, 3, 0], np.int32)), _X)),
    ("pow_int_exponent_grad_jit",
     lambda ns, L: ns.jit(_api(ns).grad(lambda x: L.pow(x, np.int32(-1)).sum()))(_X)),
    ("min_complex", lambda ns, L: L.min(ns.asarray(_C), ns.asarray(_D))),
    ("max_complex_jit", lambda ns, L: ns.jit(L.max)(_C, _D)),
    ("pow_float16", lambda ns, L: L.pow(ns.asarray(_H), ns.asarray(_H[::-1]))),
    ("pow_float32", lambda ns, L: L.pow(ns.asarray(np.abs(_X)), ns.asarray(_X))),
    ("copy_grad",
     lambda ns, L: _api(ns).grad(lambda x: (ns.np_.array(x, copy=True) * _X).sum())(_X)),
    # operands that broadcast (size-1 dim), converted to a wider type under jit
    ("mul_out_dtype_broadcast_jit",
     lambda ns, L: ns.jit(lambda a, b: L.mul(a, b, out_dtype=np.int32))(
         np.arange(-6, 6, dtype=np.int8).reshape(3, 4), np.array([[100, -3, 0, 7]], np.int8))),
    # a Python int is converted on the host: out of range it wraps
    ("convert_python_int_wraps",
     lambda ns, L: (L.convert_element_type(2**32 + 5, np.int32),
                    L.convert_element_type(-(2**40) - 3, np.uint8))),
]  # fmt: skip

X64_ROWS: list[tuple[str, Any]] = [
    ("erf_float64_x64", lambda ns, L: L.erf(ns.asarray(_X.astype(np.float64)))),
    ("logistic_float64_x64", lambda ns, L: L.logistic(ns.asarray(_X.astype(np.float64) * 20))),
]  # fmt: skip

ERRORS: list[tuple[str, Any]] = [
    ("round_unknown_method", lambda ns, L: L.round(ns.asarray(_X), 2)),
    ("select_n_bool_three_cases",
     lambda ns, L: L.select_n(ns.asarray(_X > 0), ns.asarray(_X), ns.asarray(_X), ns.asarray(_X))),
    ("select_n_predicate_shape",
     lambda ns, L: L.select_n(ns.asarray(_X[:2] > 0), ns.asarray(_X), ns.asarray(_X))),
    ("pow_float32_by_float16",
     lambda ns, L: L.pow(ns.asarray(_X), ns.asarray(np.float16(2.0)))),
    ("convert_without_dtype", lambda ns, L: L.convert_element_type(ns.asarray(_X), None)),
    ("split_negative_size", lambda ns, L: L.split(ns.asarray(_X), [7, -2])),
]  # fmt: skip


def cases() -> Iterator[Case]:
    helpers = "".join(inspect.getsource(h) for h in (_api, _jvp))
    for group, x64 in ((ROWS, False), (X64_ROWS, True), (ERRORS, False)):
        for name, fn in group:
            case = script_case(f"elementwise.paths/{name}", on_lax(fn), expect=AGREE, x64=x64)
            yield replace(case, source=f"{case.source}\n{inspect.getsource(fn).strip()}\n{helpers}")
