"""Branches of the special functions' lowerings and ``pure_callback``'s rules no
other case reaches (refimpl/primitives/special.py, callback.py; issue 36).

* ``special.more_paths/*``: ``polygamma`` of order 0 (digamma), eagerly and
  under ``jit``; ``igamma``, ``igammac``, ``betainc``, ``bessel_i0e`` and
  ``random_gamma_grad`` of float16 under ``jit`` (the lowerings compute in
  float32 and round); ``betainc`` differentiated in ``a`` (refused with JAX's
  ``ValueError``; refimpl raised ``NotImplementedError`` before);
  ``betainc``, ``igamma`` and ``random_gamma_grad`` under ``jit(vmap)``
  with an unmapped operand of lower rank (the lowering's program broadcasts
  its operands first; it failed in ``select_n`` before).
  Within 8 ulps (float16 rounding of float32 results that differ by ulps).
* ``callback.paths/*``: ``pure_callback`` under ``vmap`` with
  ``vmap_method`` ``"expand_dims"`` and ``"broadcast_all"`` and an unmapped
  operand (the callback sees the batch), and under ``jvp`` (refused with
  JAX's ``ValueError``).

Every case is ``AGREE``: judged by JAX (live or recorded); each case's
recorded source includes its row and the helpers it calls.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, script_case
from conformance.compare import Tolerance
from conformance.corpus._tables import on_lax
from conformance.namespace import Unsupported

_A = np.array([0.5, 1.5, 3.0, 4.5], np.float32)
_X = np.array([0.25, 2.0, 0.75, 3.5], np.float32)
_P = np.array([0.1, 0.4, 0.6, 0.9], np.float32)
_M = np.arange(6, dtype=np.float32).reshape(2, 3)


def _api(ns: Any) -> Any:
    module = importlib.import_module(ns.lax_.__name__.split(".")[0])
    if not hasattr(module, "pure_callback") or not hasattr(module, "vmap"):
        raise Unsupported(f"{ns.name} has no pure_callback/vmap")
    return module


def _h(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float16)


SPECIAL: list[tuple[str, Any]] = [
    ("polygamma_order0",
     lambda ns, L: L.polygamma(ns.asarray(np.zeros(4, np.float32)), ns.asarray(_A))),
    ("polygamma_order0_jit",
     lambda ns, L: ns.jit(lambda x: L.polygamma(np.zeros(4, np.float32), x))(_A)),
    ("igamma_float16_jit", lambda ns, L: ns.jit(L.igamma)(_h(_A), _h(_X))),
    ("igammac_float16_jit", lambda ns, L: ns.jit(L.igammac)(_h(_A), _h(_X))),
    ("betainc_float16_jit", lambda ns, L: ns.jit(L.betainc)(_h(_A), _h(_X), _h(_P))),
    ("bessel_i0e_float16_jit", lambda ns, L: ns.jit(L.bessel_i0e)(_h(_X))),
    ("random_gamma_grad_float16_jit", lambda ns, L: ns.jit(L.random_gamma_grad)(_h(_A), _h(_X))),
    ("betainc_jvp_in_a",
     lambda ns, L: _api(ns).jvp(lambda a: L.betainc(a, _X, _P), (_A,), (_A,))),
    ("betainc_vmap_unmapped_scalars_jit",
     lambda ns, L: ns.jit(_api(ns).vmap(
         lambda p: L.betainc(np.float32(2), np.float32(3), p)))(_M / 6.0)),
    ("igamma_vmap_unmapped_jit",
     lambda ns, L: ns.jit(_api(ns).vmap(lambda x: L.igamma(_A, x)))(np.stack([_X, _X * 2]))),
    ("random_gamma_grad_vmap_unmapped_jit",
     lambda ns, L: ns.jit(_api(ns).vmap(
         lambda x: L.random_gamma_grad(np.float32(2), x)))(np.stack([_X, _X * 2]))),
]  # fmt: skip


def _square_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """A host function of a (possibly batched) x and y: x * y + 1."""
    return (np.asarray(x) * np.asarray(y) + 1.0).astype(np.float32)


def _callback(ns: Any, method: str) -> Any:
    api = _api(ns)

    def f(x: Any, y: Any) -> Any:
        shape = api.ShapeDtypeStruct(np.shape(x), np.float32)
        return api.pure_callback(_square_rows, shape, x, y, vmap_method=method)

    return f


CALLBACKS: list[tuple[str, Any]] = [
    ("vmap_expand_dims_unmapped",
     lambda ns, L: _api(ns).vmap(_callback(ns, "expand_dims"), in_axes=(0, None))(_M, _M[0])),
    ("vmap_broadcast_all_unmapped",
     lambda ns, L: _api(ns).vmap(_callback(ns, "broadcast_all"), in_axes=(None, 0))(_M[1], _M)),
    ("vmap_expand_dims_jit",
     lambda ns, L: ns.jit(_api(ns).vmap(_callback(ns, "expand_dims")))(_M, _M * 2.0)),
    ("jvp_refused",
     lambda ns, L: _api(ns).jvp(lambda x: _callback(ns, "sequential")(x, x), (_M,), (_M,))),
]  # fmt: skip


def cases() -> Iterator[Case]:
    helpers = "".join(inspect.getsource(h) for h in (_api, _h, _square_rows, _callback))
    for name, fn in SPECIAL:
        case = script_case(f"special.more_paths/{name}", on_lax(fn), expect=AGREE,
                           tolerance=Tolerance(ulps=8, atol_eps=8))  # fmt: skip
        yield replace(case, source=f"{case.source}\n{inspect.getsource(fn).strip()}\n{helpers}")
    for name, fn in CALLBACKS:
        case = script_case(f"callback.paths/{name}", on_lax(fn), expect=AGREE)
        yield replace(case, source=f"{case.source}\n{inspect.getsource(fn).strip()}\n{helpers}")
