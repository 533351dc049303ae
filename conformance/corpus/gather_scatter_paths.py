"""Branches of ``lax.gather``/``lax.scatter*``'s rules no other case reaches (issue 36).

``gather_scatter.paths/*`` (refimpl/primitives/gather_scatter.py):

* ``lax.scatter_apply`` (a scalar function applied once per covering
  window): eagerly and under ``jit`` (its lowering), with windows, repeated
  indices, every mode, an integer operand;
* ``lax.scatter`` with ``unique_indices=True`` under ``jvp`` and ``grad`` (the
  unique-indices jvp and the transpose), ``lax.scatter_mul`` differentiated
  in the operand; ``lax.scatter_min``/``scatter_max`` of bools under ``jit``
  (the and/or combiner); a scatter whose index vector is empty (the lowering's
  explicit zero start), eagerly and under ``jit``; a bool gather in
  ``fill`` mode (filled with ``True``); uint64 indices under x64; ``vmap``
  of ``dynamic_slice`` and of indexing over a batch of size 0 under ``jit``;
* refused by every implementation with JAX's class: ``lax.scatter`` not
  transposable without ``unique_indices`` (``grad``), ``lax.scatter_mul``
  differentiated in its updates without ``unique_indices``.

Every case is ``AGREE``: judged by JAX (live or recorded). Each case's
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
from conformance.corpus._tables import on_lax
from conformance.namespace import Unsupported
from conformance.observe import Raises

_V = np.array([1.0, -2.0, 0.5, 3.0, 4.0], np.float32)
_M = np.arange(12, dtype=np.float32).reshape(3, 4)
_IDX = np.array([[1], [3], [1]], np.int32)
_U = np.array([10.0, 20.0, 30.0], np.float32)


def _api(ns: Any) -> Any:
    module = importlib.import_module(ns.lax_.__name__.split(".")[0])
    if not hasattr(module, "grad"):
        raise Unsupported(f"{ns.name} has no grad")
    return module


def _points(L: Any) -> Any:
    """Scalar updates into a vector at the given positions."""
    return L.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                     scatter_dims_to_operand_dims=(0,))  # fmt: skip


def _rows(L: Any) -> Any:
    """Row windows (size 4) into a (3, 4) matrix at the given row starts."""
    return L.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                     scatter_dims_to_operand_dims=(0,))  # fmt: skip


def _apply(L: Any, x: Any, idx: Any, fn: Any, mode: Any = None, **kw: Any) -> Any:
    return L.scatter_apply(x, idx, fn, _points(L), update_shape=(len(idx),), mode=mode, **kw)


ROWS: list[tuple[str, Any]] = [
    ("scatter_apply_eager",
     lambda ns, L: _apply(L, ns.asarray(_V), _IDX, lambda v: v * 2.0 + 1.0)),
    ("scatter_apply_jit",
     lambda ns, L: ns.jit(lambda x: _apply(L, x, _IDX, lambda v: v * 2.0 + 1.0))(_V)),
    ("scatter_apply_int_jit",
     lambda ns, L: ns.jit(lambda x: _apply(L, x, _IDX, lambda v: v * 3 - 1))(
         np.arange(5, dtype=np.int32))),
    ("scatter_apply_rows_jit",
     lambda ns, L: ns.jit(lambda x: L.scatter_apply(
         x, np.array([[2], [0]], np.int32), L.exp, _rows(L), update_shape=(2, 4)))(_M / 10)),
    ("scatter_apply_fill_or_drop",
     lambda ns, L: _apply(L, ns.asarray(_V), np.array([[1], [7], [-1]], np.int32), L.neg,
                          mode="drop")),
    ("scatter_apply_fill_or_drop_jit",
     lambda ns, L: ns.jit(lambda x: _apply(L, x, np.array([[1], [7], [-1]], np.int32), L.neg,
                                           mode="drop"))(_V)),
    ("scatter_apply_clip_jit",
     lambda ns, L: ns.jit(lambda x: _apply(L, x, np.array([[1], [7], [-1]], np.int32), L.neg,
                                           mode="clip"))(_V)),
    ("scatter_unique_jvp",
     lambda ns, L: _api(ns).jvp(
         lambda x, u: L.scatter(x, np.array([[0], [3]], np.int32), u, _points(L),
                                unique_indices=True), (_V, _U[:2]), (_V * 0.5, _U[:2]))),
    ("scatter_unique_grad",
     lambda ns, L: _api(ns).grad(
         lambda x, u: (L.scatter(x, np.array([[4], [2]], np.int32), u, _points(L),
                                 unique_indices=True) * _V).sum(), argnums=(0, 1))(_V, _U[:2])),
    ("scatter_unique_rows_grad",
     lambda ns, L: _api(ns).grad(
         lambda x, u: (L.scatter(x, np.array([[2], [0]], np.int32), u, _rows(L),
                                 unique_indices=True) ** 2).sum(), argnums=(0, 1))(
         _M, _M[:2] * 2)),
    ("scatter_mul_grad_operand",
     lambda ns, L: _api(ns).grad(
         lambda x: (L.scatter_mul(x, _IDX, _U, _points(L)) * _V).sum())(_V)),
    ("scatter_mul_unique_jvp_updates",
     lambda ns, L: _api(ns).jvp(
         lambda x, u: L.scatter_mul(x, np.array([[0], [3]], np.int32), u, _points(L),
                                    unique_indices=True), (_V, _U[:2]), (_V, _U[:2]))),
    ("scatter_min_bool_jit",
     lambda ns, L: ns.jit(lambda x: L.scatter_min(x, _IDX, np.array([False, True, True]),
                                                  _points(L)))(_V > 0)),
    ("scatter_max_bool_jit",
     lambda ns, L: ns.jit(lambda x: L.scatter_max(x, _IDX, np.array([True, False, False]),
                                                  _points(L)))(_V > 0)),
    ("scatter_empty_index_vector",
     lambda ns, L: L.scatter_add(ns.asarray(_V), np.zeros((3, 0), np.int32),
                                 np.arange(15, dtype=np.float32).reshape(3, 5),
                                 L.ScatterDimensionNumbers(update_window_dims=(1,),
                                                           inserted_window_dims=(),
                                                           scatter_dims_to_operand_dims=()))),
    ("scatter_empty_index_vector_jit",
     lambda ns, L: ns.jit(lambda x: L.scatter_add(
         x, np.zeros((3, 0), np.int32), np.arange(15, dtype=np.float32).reshape(3, 5),
         L.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(),
                                   scatter_dims_to_operand_dims=())))(_V)),
    ("gather_bool_fill",
     lambda ns, L: L.gather(ns.asarray(_V > 0), np.array([[1], [9], [-2]], np.int32),
                            L.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,),
                                                     start_index_map=(0,)),
                            (1,), mode="fill")),
    ("gather_bool_fill_jit",
     lambda ns, L: ns.jit(lambda b: L.gather(
         b, np.array([[1], [9], [-2]], np.int32),
         L.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,)),
         (1,), mode="fill"))(_V > 0)),
    # vmap over a batch of size 0 under jit: the batch rules flatten the
    # (empty) batch into the gathered axis, which StableHLO's gather cannot
    # slice (lax_vmap_test's batch sizes)
    ("vmap_empty_batch_dynamic_slice_jit",
     lambda ns, L: ns.jit(_api(ns).vmap(lambda x, i: L.dynamic_slice(x, (i,), (2,)),
                                        in_axes=(None, 0)))(_V, np.zeros((0,), np.int32))),
    ("vmap_empty_batch_index_jit",
     lambda ns, L: ns.jit(_api(ns).vmap(lambda x, i: x[i], in_axes=(0, -1)))(
         np.zeros((0, 5), np.float32), np.zeros((2, 0), np.int32))),
]  # fmt: skip

X64_ROWS: list[tuple[str, Any]] = [
    ("gather_uint64_indices_x64",
     lambda ns, L: L.gather(ns.asarray(_V.astype(np.float64)),
                            np.array([[1], [2**63 + 5], [4]], np.uint64),
                            L.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,),
                                                     start_index_map=(0,)),
                            (1,), mode="fill")),
    ("gather_uint64_indices_clip_x64",
     lambda ns, L: L.gather(ns.asarray(_V.astype(np.float64)),
                            np.array([[1], [2**64 - 1], [4]], np.uint64),
                            L.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,),
                                                     start_index_map=(0,)),
                            (1,), mode="clip")),
]  # fmt: skip

ERRORS: list[tuple[str, Any]] = [
    ("scatter_grad_not_unique",
     lambda ns, L: _api(ns).grad(
         lambda u: (L.scatter(_V, _IDX, u, _points(L)) * _V).sum())(_U)),
]  # fmt: skip

# NotImplementedError, which the runner reads as "unsupported" unless the case expects it:
# judged by the class and JAX's words in the message
REFUSED: list[tuple[str, Any]] = [
    ("scatter_mul_jvp_updates_not_unique",
     lambda ns, L: _api(ns).jvp(
         lambda u: L.scatter_mul(_V, _IDX, u, _points(L)), (_U,), (_U,))),
]  # fmt: skip


def cases() -> Iterator[Case]:
    helpers = "".join(inspect.getsource(h) for h in (_api, _points, _rows, _apply))
    for group, x64 in ((ROWS, False), (X64_ROWS, True), (ERRORS, False)):
        for name, fn in group:
            case = script_case(f"gather_scatter.paths/{name}", on_lax(fn), expect=AGREE, x64=x64)
            yield replace(case, source=f"{case.source}\n{inspect.getsource(fn).strip()}\n{helpers}")
    for name, fn in REFUSED:
        case = script_case(f"gather_scatter.paths/{name}", on_lax(fn),
                           expect=Raises(NotImplementedError, "unique_indices=True"))  # fmt: skip
        yield replace(case, source=f"{case.source}\n{inspect.getsource(fn).strip()}\n{helpers}")
