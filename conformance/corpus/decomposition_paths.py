"""Branches of the matrix decompositions' and the reducers' rules no other case
reaches (refimpl/primitives/decompositions.py, computations.py; issue 36).

* ``decomposition.paths/*``: decompositions of an empty batch of matrices
  (eagerly and under ``vmap``), ``lu`` of
  a singular matrix (a zero pivot), ``eigh``/``svd`` of 1x1 matrices under
  ``jvp`` (``lu``'s result a list, as JAX); and a non-square ``cholesky``,
  which every implementation rejects with JAX's class; ``cholesky`` with
  NaN off the diagonal (LAPACK's potrf, as JAX on CPU, lets NaN propagate and
  keeps the columns before it; only a pivot ``<= 0`` makes the whole factor
  NaN, also after a NaN), eagerly and under ``jit``; ``tridiagonal_solve``
  (eagerly, ``jit`` of ``vmap``, ``grad``, diagonals of different lengths
  refused with JAX's ``TypeError``). Left out:
  ``triangular_solve`` with batch dims that differ (JAX: ``ValueError`` from
  its batching, refimpl: ``TypeError``).
* ``computation.paths/*``: ``lax.reduce`` with computations JAX does not
  read as a monoid -- the arguments swapped (``b + a``), two equations, a
  ``sub``, ``or`` of floats refused -- and an init traced under ``jit``
  (the general primitive, not ``reduce_sum``); and a computation that
  returns another tree than the init (refused as JAX).

Every case is ``AGREE``: judged by JAX (live or recorded; decompositions
within 64 ulps); each case's recorded source includes its row and the
helpers it calls.
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

_SPD = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.25], [0.5, 0.25, 2.0]], np.float32)
_X = np.array([[0.5, -1.0, 2.0, 0.25], [3.0, 0.0, -2.0, 1.0]], np.float32)
# dl, d, du (4 rows; d dominant) and b (4 rows, 2 columns)
_TRIDIAGONAL = (
    np.array([0.0, 1.0, -0.5, 2.0], np.float32),
    np.array([4.0, 5.0, 6.0, 4.5], np.float32),
    np.array([1.0, -1.0, 0.5, 0.0], np.float32),
    np.array([[1.0, 2.0], [0.0, -1.0], [3.0, 0.5], [-2.0, 1.0]], np.float32),
)
_SINGULAR2 = np.array([[0.0, 1.0], [0.0, 2.0]], np.float32)
_SINGULAR3 = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]], np.float32)
# NaN off the diagonal; NaN then a later pivot <= 0; NaN in the upper triangle only
_NAN_BATCH = np.array(
    [
        [[4.0, np.nan, 1.0], [np.nan, 9.0, 2.0], [1.0, 2.0, 16.0]],
        [[4.0, 1.0, 1.0], [1.0, 0.25, 2.0], [np.nan, 2.0, 16.0]],
        [[4.0, np.nan, 1.0], [1.0, 9.0, 2.0], [1.0, 2.0, 16.0]],
    ],
    np.float32,
)


def _api(ns: Any) -> Any:
    module = importlib.import_module(ns.lax_.__name__.split(".")[0])
    if not hasattr(module, "vmap"):
        raise Unsupported(f"{ns.name} has no vmap/jvp")
    return module


DECOMPOSITIONS: list[tuple[str, Any]] = [
    ("cholesky_empty_batch",
     lambda ns, L: L.linalg.cholesky(ns.asarray(np.zeros((0, 3, 3), np.float32)))),
    ("qr_empty_batch", lambda ns, L: L.linalg.qr(ns.asarray(np.zeros((0, 3, 2), np.float32)))),
    ("eigh_vmap_empty_batch",
     lambda ns, L: _api(ns).vmap(L.linalg.eigh)(np.zeros((0, 2, 2), np.float32))),
    ("lu_singular", lambda ns, L: L.linalg.lu(ns.asarray(_SINGULAR2))),
    ("lu_singular_jit",
     lambda ns, L: ns.jit(L.linalg.lu)(_SINGULAR3)),
    ("eigh_1x1_jvp",
     lambda ns, L: _api(ns).jvp(lambda a: L.linalg.eigh(a), (np.array([[2.0]], np.float32),),
                                (np.array([[0.5]], np.float32),))),
    ("svd_1x1_jvp",
     lambda ns, L: _api(ns).jvp(lambda a: L.linalg.svd(a, full_matrices=False),
                                (np.array([[-3.0]], np.float32),),
                                (np.array([[0.5]], np.float32),))),
    ("cholesky_not_square", lambda ns, L: L.linalg.cholesky(ns.asarray(_X))),
    ("cholesky_nan_off_diagonal", lambda ns, L: L.linalg.cholesky(ns.asarray(_NAN_BATCH))),
    ("cholesky_nan_off_diagonal_jit",
     lambda ns, L: ns.jit(lambda a: L.linalg.cholesky(a, symmetrize_input=False))(_NAN_BATCH)),
    ("tridiagonal_solve", lambda ns, L: L.linalg.tridiagonal_solve(*_TRIDIAGONAL)),
    ("tridiagonal_solve_vmap_jit",
     lambda ns, L: ns.jit(_api(ns).vmap(L.linalg.tridiagonal_solve, in_axes=(None, 0, None, 2)))(
         _TRIDIAGONAL[0], np.stack([_TRIDIAGONAL[1], _TRIDIAGONAL[1] * 2]), _TRIDIAGONAL[2],
         np.stack([_TRIDIAGONAL[3], -_TRIDIAGONAL[3]], axis=-1))),
    ("tridiagonal_solve_grad",
     lambda ns, L: _api(ns).grad(lambda d, b: (L.linalg.tridiagonal_solve(
         _TRIDIAGONAL[0], d, _TRIDIAGONAL[2], b) ** 2).sum(), argnums=(0, 1))(
             _TRIDIAGONAL[1], _TRIDIAGONAL[3])),
    ("tridiagonal_solve_shapes_differ",
     lambda ns, L: L.linalg.tridiagonal_solve(_TRIDIAGONAL[0][1:], *_TRIDIAGONAL[1:])),
]  # fmt: skip


def _reduce(L: Any, x: Any, init: Any, fn: Any) -> Any:
    return L.reduce(x, init, fn, (1,))


COMPUTATIONS: list[tuple[str, Any]] = [
    ("swapped_add", lambda ns, L: _reduce(L, ns.asarray(_X), np.float32(0), lambda a, b: b + a)),
    ("two_equations",
     lambda ns, L: _reduce(L, ns.asarray(_X), np.float32(0), lambda a, b: a + b * 1.0)),
    ("sub_jit",
     lambda ns, L: ns.jit(lambda x: _reduce(L, x, np.float32(0), L.sub))(_X)),
    ("or_of_bools", lambda ns, L: _reduce(L, ns.asarray(_X > 0), False, L.bitwise_or)),
    ("add_traced_init_jit",
     lambda ns, L: ns.jit(lambda x, i: _reduce(L, x, i, L.add))(_X, np.float32(0))),
    ("max_traced_init_jit",
     lambda ns, L: ns.jit(lambda x, i: _reduce(L, x, i, L.max))(_X, np.float32(-1))),
    ("add_nonidentity_init", lambda ns, L: _reduce(L, ns.asarray(_X), np.float32(1.5), L.add)),
    ("tree_mismatch",
     lambda ns, L: _reduce(L, ns.asarray(_X), np.float32(0), lambda a, b: (a + b, a))),
]  # fmt: skip


def cases() -> Iterator[Case]:
    helpers = "".join(inspect.getsource(h) for h in (_api, _reduce))
    for name, fn in DECOMPOSITIONS:
        case = script_case(f"decomposition.paths/{name}", on_lax(fn), expect=AGREE,
                           tolerance=Tolerance(ulps=64, atol_eps=16))  # fmt: skip
        yield replace(case, source=f"{case.source}\n{inspect.getsource(fn).strip()}\n{helpers}")
    for name, fn in COMPUTATIONS:
        case = script_case(f"computation.paths/{name}", on_lax(fn), expect=AGREE)
        yield replace(case, source=f"{case.source}\n{inspect.getsource(fn).strip()}\n{helpers}")
