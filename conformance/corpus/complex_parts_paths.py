"""Complex parts with infinite and NaN parts (refimpl/primitives/complex_parts.py).

``complex_parts.paths/*``: ``lax.real``/``imag``/``conj``/``complex`` and the
functions built on them (``jnp.nan_to_num``, ``isinf``, ``isnan``,
``isfinite``, ``isreal``, ``angle``, ``abs``, ``sign``, ``round`` of complex
input, the ``.real``/``.imag`` properties) and the complex ``exp``, ``expm1``,
``log``, ``log1p``, ``sqrt``, ``sin``, ``cos``, ``tan``, ``sinh``, ``cosh``,
``tanh`` (XLA's formulas, not C99's special values) over every pair of parts from
{0, -0, 1.5, inf, -inf, nan}, eagerly and under ``jit``, complex64 and
(x64) complex128; the derivatives (``grad`` through ``imag``/``real``/``conj``
of non-finite values, ``vjp`` of ``real`` of a weak input, whose cotangent
is strong in JAX, ``jvp`` of ``complex``) and ``vmap``. A complex result is
observed as its float view (each part compared on its own: a NaN in one part
cannot hide behind the magnitude's tolerance), with its dtype and weak type.
Every case is ``AGREE``: judged by JAX (live or recorded).
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import ml_dtypes
import numpy as np

from conformance.case import AGREE, Case, script_case
from conformance.corpus._tables import complex_pairs, on_lax, seen_leaves
from conformance.namespace import Unsupported

_PARTS = [0.0, -0.0, 1.5, np.inf, -np.inf, np.nan]


def _grid(dtype: Any) -> np.ndarray:
    return complex_pairs(_PARTS, dtype)


_Z = _grid(np.complex64)
_Z128 = _grid(np.complex128)


def _api(ns: Any) -> Any:
    module = importlib.import_module(ns.lax_.__name__.split(".")[0])
    if not hasattr(module, "grad"):
        raise Unsupported(f"{ns.name} has no grad")
    return module


def _float_view(values: np.ndarray) -> np.ndarray:
    if values.dtype.kind != "c":
        return values
    return values.view(np.float32 if values.dtype == np.complex64 else np.float64)


def _seen(ns: Any, out: Any) -> Any:
    """Each leaf as (values, dtype name, weak type); complex values as their float view."""
    return seen_leaves(ns, out, _float_view)


ROWS: list[tuple[str, Any]] = [
    ("real", lambda ns, L: _seen(ns, L.real(ns.asarray(_Z)))),
    ("imag", lambda ns, L: _seen(ns, L.imag(ns.asarray(_Z)))),
    ("conj_jit", lambda ns, L: _seen(ns, ns.jit(L.conj)(_Z))),
    # float32 becomes complex64; float16, bfloat16 (no complex type) and int8 are TypeErrors
    ("conj_real_dtypes",
     lambda ns, L: [ns.capture(f, x.astype(dt)) for f in (L.conj, ns.jit(L.conj))
                    for dt in (np.float32, np.float16, ml_dtypes.bfloat16, np.int8)
                    for x in (np.array([1.5, -0.0, np.inf], np.float32),)]),
    ("complex_of_parts",
     lambda ns, L: _seen(ns, L.complex(ns.np_.real(ns.asarray(_Z)), ns.np_.imag(ns.asarray(_Z))))),
    ("complex_jit_rank0",
     lambda ns, L: _seen(ns, ns.jit(L.complex)(np.float32(np.inf), _Z.imag.copy()))),
    ("properties_jit", lambda ns, L: _seen(ns, ns.jit(lambda z: (z.real, z.imag))(_Z))),
    ("nan_to_num", lambda ns, L: _seen(ns, ns.np_.nan_to_num(ns.asarray(_Z)))),
    ("nan_to_num_jit_values",
     lambda ns, L: _seen(ns, ns.jit(lambda z: ns.np_.nan_to_num(z, nan=1.0, posinf=2.0))(_Z))),
    ("is_predicates",
     lambda ns, L: _seen(ns, [f(ns.asarray(_Z)) for f in (
         ns.np_.isinf, ns.np_.isnan, ns.np_.isfinite, ns.np_.isreal)])),
    ("angle_abs_sign", lambda ns, L: _seen(ns, ns.jit(lambda z: (
        ns.np_.angle(z), ns.np_.abs(z), ns.np_.sign(z)))(_Z))),
    ("round", lambda ns, L: _seen(ns, ns.np_.round(ns.asarray(_Z)))),
    ("weak_parts", lambda ns, L: _seen(ns, (L.real(1.5 - 2j), L.imag(1.5 - 2j), L.conj(1.5 - 2j),
                                            L.complex(1.5, -0.0)))),
    ("grad_parts",
     lambda ns, L: _seen(ns, _api(ns).grad(
         lambda z: (L.imag(z) * 2.0 + L.real(L.conj(z))).sum())(ns.asarray(_Z)))),
    ("vjp_real_weak", lambda ns, L: _seen(ns, _api(ns).vjp(L.real, 1.5 - 2j)[1](3.0))),
    ("vjp_imag_conj",
     lambda ns, L: _seen(ns, _api(ns).vjp(lambda z: L.imag(L.conj(z)), ns.asarray(_Z))[1](
         ns.asarray(np.linspace(-1, 1, 36).astype(np.float32))))),
    ("jvp_complex",
     lambda ns, L: _seen(ns, _api(ns).jvp(
         L.complex, (_Z.real.copy(), _Z.imag.copy()),
         (np.ones(36, np.float32), np.full(36, 2.0, np.float32))))),
    ("vmap_parts",
     lambda ns, L: _seen(ns, _api(ns).vmap(lambda a, b: L.conj(L.complex(L.imag(a), b)),
                                           in_axes=(0, 1))(_Z.reshape(6, 6),
                                                           _Z.real.reshape(6, 6).copy()))),
]  # fmt: skip

# XLA's complex formulas at infinite and NaN parts (not C99's special values)
_FUNCTIONS = ("exp", "expm1", "log", "log1p", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh",
              "arcsin", "arccos", "arcsinh")  # fmt: skip
ROWS += [
    (f"{name}_nonfinite", lambda ns, L, name=name: _seen(ns, getattr(ns.np_, name)(ns.asarray(_Z))))
    for name in _FUNCTIONS
] + [
    (f"{name}_nonfinite_jit",
     lambda ns, L, name=name: _seen(ns, ns.jit(getattr(ns.np_, name))(_Z)))
    for name in ("sin", "cos")
]  # fmt: skip

X64_ROWS: list[tuple[str, Any]] = [
    ("imag_conj_complex128_x64",
     lambda ns, L: _seen(ns, ns.jit(lambda z: (L.imag(z), L.conj(z), ns.np_.nan_to_num(z)))(
         _Z128))),
]  # fmt: skip


def cases() -> Iterator[Case]:
    helpers = "".join(inspect.getsource(h) for h in (_grid, _api, _seen))
    for group, x64 in ((ROWS, False), (X64_ROWS, True)):
        for name, fn in group:
            case = script_case(f"complex_parts.paths/{name}", on_lax(fn), expect=AGREE, x64=x64)
            yield replace(case, source=f"{case.source}\n{inspect.getsource(fn).strip()}\n{helpers}")
