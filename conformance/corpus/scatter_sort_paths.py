"""Branches of the combining scatters and ``top_k`` no other case reaches (issue 36).

* ``scatter_sort.paths/top_k_*``, ``approx_max_k_*``, ``*partition_*``:
  ``top_k``'s float order (IEEE totalOrder: ``0.0`` above ``-0.0``, ``-NaN``
  last) and the functions that inherit it, judged by JAX.

* ``scatter_sort.paths/*``: ``x.at[i].min/max`` of booleans (the lowering's
  ``and``/``or`` combiner: pjrt compiles it, ref runs ``np.minimum``),
  eagerly and under ``jit``; ``x.at[i].multiply`` differentiated or
  transposed in the updates (JAX and refimpl both refuse with
  ``NotImplementedError``, judged by its class and message). The others are
  ``AGREE``: judged by JAX (live or recorded).
* ``mask.paths/top_k-*``: ``lax.top_k`` over a masked last axis (the mask
  rule fills the padding with the dtype's lowest value); NumPy oracle on the
  unpadded values, refimpl only (JAX has no ``mask``).

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
from conformance.corpus.masking import Masked, _mask_case
from conformance.namespace import Unsupported
from conformance.observe import Raises

_B = np.array([True, True, False, True])
_UB = np.array([False, True, True])
_I = np.array([1, 3, 1], np.int32)
_V = np.arange(1.0, 5.0, dtype=np.float32)
_U = np.array([2.0, -1.0, 3.0], np.float32)
# top_k's order is IEEE totalOrder (0.0 above -0.0, -NaN below -inf), not sort's
_Z = np.array([-0.0, 0.0, -0.0, 0.0], np.float32)
_N = np.array([-np.nan, -np.inf, np.nan, 1.0, -0.0], np.float32)


def _api(ns: Any) -> Any:
    module = importlib.import_module(ns.lax_.__name__.split(".")[0])
    if not hasattr(module, "grad"):
        raise Unsupported(f"{ns.name} has no grad")
    return module


ROWS: list[tuple[str, Any]] = [
    ("bool_min", lambda ns: ns.np_.asarray(_B).at[_I].min(_UB)),
    ("bool_max", lambda ns: ns.np_.asarray(_B).at[_I].max(_UB)),
    ("bool_min_jit", lambda ns: ns.jit(lambda x: x.at[_I].min(_UB))(ns.np_.asarray(_B))),
    ("bool_max_jit", lambda ns: ns.jit(lambda x: x.at[_I].max(_UB))(ns.np_.asarray(_B))),
    ("top_k_signed_zero", lambda ns: ns.lax_.top_k(ns.np_.asarray(_Z), 2)),
    ("top_k_nan_sign_jit", lambda ns: ns.jit(lambda x: ns.lax_.top_k(x, 5))(ns.np_.asarray(_N))),
    ("approx_max_k_signed_zero", lambda ns: ns.lax_.approx_max_k(ns.np_.asarray(_Z[None]), 2)),
    ("partition_signed_zero",
     lambda ns: ns.np_.signbit(ns.np_.partition(ns.np_.asarray(_Z), 1))),
    ("argpartition_nan_sign", lambda ns: ns.np_.argpartition(ns.np_.asarray(_N), 2)),
]  # fmt: skip

# refused by both with NotImplementedError, which the runner reads as "unsupported" unless the
# case expects it: judged by the class and the primitive's name in the message (JAX's too)
ERRORS: list[tuple[str, Any]] = [
    ("mul_jvp_in_updates",
     lambda ns: _api(ns).jvp(lambda x, u: x.at[_I].multiply(u), (_V, _U), (_V, _U))),
    ("mul_linear_transpose_in_updates",
     lambda ns: _api(ns).linear_transpose(
         lambda u: ns.np_.asarray(_V).at[_I].multiply(u), _U)(_V)),
]  # fmt: skip


def _top_k_desc(x: np.ndarray) -> np.ndarray:
    return -np.sort(-x, axis=-1, kind="stable")[..., :2]


MASKED: list[Masked] = [
    Masked("top_k-masked-last-axis", lambda ns, x: ns.lax_.top_k(x, 2)[0], _top_k_desc,
           ["(n,)"], "(2,)", lambda s: [(s["n"],)], [(6,)], lambda s: (),
           ({"n": 3}, {"n": 5})),
    # only a leading dim masked: the last axis keeps its padding-free values, no fill
    Masked("top_k-masked-leading-axis", lambda ns, x: ns.lax_.top_k(x, 2)[0], _top_k_desc,
           ["(n, 4)"], "(n, 2)", lambda s: [(s["n"], 4)], [(5, 4)], lambda s: np.s_[: s["n"]],
           ({"n": 3},)),
]  # fmt: skip

_HELPERS = inspect.getsource(_api)


def cases() -> Iterator[Case]:
    for name, fn in ROWS:
        case = script_case(f"scatter_sort.paths/{name}", fn, expect=AGREE)
        yield replace(case, source=f"{case.source}\n{inspect.getsource(fn).strip()}\n{_HELPERS}")
    for name, fn in ERRORS:
        case = script_case(f"scatter_sort.paths/{name}", fn,
                           expect=Raises(NotImplementedError, "scatter_mul"))  # fmt: skip
        yield replace(case, source=f"{case.source}\n{inspect.getsource(fn).strip()}\n{_HELPERS}")
    for m in MASKED:
        for sizes in m.sizes:
            case = _mask_case(m, sizes)
            extra = inspect.getsource(m.fun).strip() + "\n" + inspect.getsource(_top_k_desc)
            yield replace(case, name=case.name.replace("mask/", "mask.paths/", 1),
                          source=f"{case.source}\n{extra}")  # fmt: skip
