"""Branches of ``dot_general``'s and ``conv_general_dilated``'s rules no other case
reaches (refimpl/primitives/linalg.py; issue 36).

``linalg.paths/*``: ``dot_general`` with a precision pair and a precision
name as a string, a bool ``feature_group_count`` (an int, as JAX), ``grad``
of a ``dot_general`` whose batch dims are not leading (the transposes' permutation back), a
convolution with an empty output, eagerly and under ``jit``, ``vmap`` of a
convolution over an empty batch (also with ``batch_group_count`` 2, batched
by a loop over the members); and the argument checks every
implementation rejects with JAX's class: ``preferred_element_type`` that
narrows or changes the kind, a precision pair holding ``None``, an unknown
precision name, repeated contracting dims, a convolution layout that
repeats a letter, operands of different ranks, a padding that is not
``(low, high)`` int pairs (``ValueError``), an unknown padding name
(``RuntimeError``). Left out, JAX 0.10.2 failing with another class:
malformed ``dimension_numbers`` (JAX: ``ValueError`` unpacking them), a spec
that is not a permutation (MLIR's verifier). Every case is ``AGREE``: judged by JAX (live or
recorded); each case's recorded source includes its row and the helpers it
calls.
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

_A = np.arange(6, dtype=np.float32).reshape(2, 3) / 4
_B = np.arange(12, dtype=np.float32).reshape(3, 4) / 8 - 0.5
_T = np.arange(24, dtype=np.float32).reshape(3, 2, 4) / 10
_S = np.arange(30, dtype=np.float32).reshape(2, 3, 5) / 7
_LHS = np.arange(10, dtype=np.float32).reshape(1, 2, 5) / 3
_RHS = np.ones((3, 2, 2), np.float32)


def _api(ns: Any) -> Any:
    module = importlib.import_module(ns.lax_.__name__.split(".")[0])
    if not hasattr(module, "grad"):
        raise Unsupported(f"{ns.name} has no grad")
    return module


def _dot(L: Any, a: Any, b: Any, **kw: Any) -> Any:
    return L.dot_general(a, b, (((1,), (0,)), ((), ())), **kw)


ROWS: list[tuple[str, Any]] = [
    ("dot_precision_pair",
     lambda ns, L: _dot(L, ns.asarray(_A), ns.asarray(_B), precision=("default", "highest"))),
    ("conv_bool_group_count",
     lambda ns, L: L.conv_general_dilated(ns.asarray(_LHS), ns.asarray(_RHS), (1,), "VALID",
                                          feature_group_count=True)),
    ("dot_precision_string",
     lambda ns, L: _dot(L, ns.asarray(_A), ns.asarray(_B), precision="high")),
    # batch dim 1 of the lhs (2) and 0 of the rhs: the product is (batch, lhs free, rhs free)
    ("dot_general_grad_batch_not_leading",
     lambda ns, L: _api(ns).grad(
         lambda t, s: (L.dot_general(t, s, (((2,), (2,)), ((1,), (0,)))) ** 2).sum(),
         argnums=(0, 1))(_T[:, :, :4], np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4))),
    ("conv_empty_output",
     lambda ns, L: L.conv_general_dilated(ns.asarray(_LHS[:, :, :1]), ns.asarray(_RHS), (1,),
                                          "VALID")),
    ("conv_empty_output_jit",
     lambda ns, L: ns.jit(lambda x, w: L.conv_general_dilated(x, w, (1,), "VALID"))(
         _LHS[:, :, :1], _RHS)),
    ("conv_vmap_empty_batch",
     lambda ns, L: _api(ns).vmap(lambda w: L.conv_general_dilated(_LHS, w, (1,), "VALID"))(
         np.zeros((0, 3, 2, 2), np.float32))),
    # batch_group_count > 1: a loop over the members, of which there are none
    ("conv_batch_groups_vmap_empty_batch",
     lambda ns, L: ns.jit(_api(ns).vmap(lambda x: L.conv_general_dilated(
         x, np.ones((4, 3, 2), np.float32), (1,), "VALID", batch_group_count=2)))(
             np.zeros((0, 2, 3, 5), np.float32))),
    ("conv_batch_groups_vmap",
     lambda ns, L: _api(ns).vmap(lambda x: L.conv_general_dilated(
         x, np.ones((4, 3, 2), np.float32), (1,), "VALID", batch_group_count=2), in_axes=1)(
             np.arange(2 * 3 * 3 * 5, dtype=np.float32).reshape(2, 3, 3, 5))),
]  # fmt: skip

ERRORS: list[tuple[str, Any]] = [
    ("dot_preferred_narrower", lambda ns, L: _dot(L, ns.asarray(_A), ns.asarray(_B),
                                                  preferred_element_type=np.float16)),
    ("dot_preferred_int_for_float", lambda ns, L: _dot(L, ns.asarray(_A), ns.asarray(_B),
                                                       preferred_element_type=np.int32)),
    ("dot_preferred_unsigned_for_signed",
     lambda ns, L: _dot(L, ns.asarray(_A.astype(np.int32)), ns.asarray(_B.astype(np.int32)),
                        preferred_element_type=np.uint32)),
    ("dot_precision_pair_with_none",
     lambda ns, L: _dot(L, ns.asarray(_A), ns.asarray(_B), precision=(None, "highest"))),
    ("dot_precision_unknown",
     lambda ns, L: _dot(L, ns.asarray(_A), ns.asarray(_B), precision="best")),
    ("dot_general_repeated_contracting",
     lambda ns, L: L.dot_general(ns.asarray(_S), ns.asarray(_S), (((1, 1), (1, 1)), ((), ())))),
    ("conv_layout_repeated_letter",
     lambda ns, L: L.conv_general_dilated(ns.asarray(_LHS), ns.asarray(_RHS), (1,), "VALID",
                                          dimension_numbers=("NCC", "OIH", "NCH"))),
    ("conv_ranks_differ",
     lambda ns, L: L.conv_general_dilated(ns.asarray(_LHS), ns.asarray(_RHS[0]), (1,), "VALID")),
    # not a sequence of (low, high) int pairs: JAX's ValueError; an unknown name: RuntimeError
    ("conv_padding_not_pairs",
     lambda ns, L: L.conv_general_dilated(ns.asarray(_LHS), ns.asarray(_RHS), (1,), (1, 1))),
    ("conv_padding_float_pair",
     lambda ns, L: L.conv_general_dilated(ns.asarray(_LHS), ns.asarray(_RHS), (1,),
                                          [(0.5, 1)])),
    ("conv_padding_unknown_name",
     lambda ns, L: L.conv_general_dilated(ns.asarray(_LHS), ns.asarray(_RHS), (1,), "FULL")),
    ("padtype_to_pads_unknown_name",
     lambda ns, L: L.padtype_to_pads((5,), (2,), (1,), "FULL")),
    # explicit ConvDimensionNumbers: the ranks are checked by the shape rule (ValueError)
    ("conv_ranks_differ_dimension_numbers",
     lambda ns, L: L.conv_general_dilated(
         ns.asarray(_LHS), ns.asarray(_RHS[..., None]), (1,), "VALID",
         dimension_numbers=L.ConvDimensionNumbers((0, 1, 2), (0, 1, 2), (0, 1, 2)))),
]  # fmt: skip


_LU_A = np.arange(12, dtype=np.float32).reshape(3, 2, 2) % 5 + 4 * np.eye(2, dtype=np.float32)
_LU_B = np.arange(6, dtype=np.float32).reshape(3, 2) - 2

# jax.scipy.linalg.lu_solve: a batch of vectors (b with one dimension less
# than lu; JAX's FutureWarning), an empty batch, broadcast batch dimensions
# and the transposed solve
LU_ROWS: list[tuple[str, Any]] = [
    ("lu_solve_batch_of_vectors",
     lambda ns, L: importlib.import_module(_api(ns).__name__ + ".scipy.linalg").lu_solve(
         importlib.import_module(_api(ns).__name__ + ".scipy.linalg").lu_factor(_LU_A), _LU_B)),
    ("lu_solve_empty_batch",
     lambda ns, L: importlib.import_module(_api(ns).__name__ + ".scipy.linalg").lu_solve(
         importlib.import_module(_api(ns).__name__ + ".scipy.linalg").lu_factor(_LU_A[:0]),
         _LU_B[:0])),
    ("lu_solve_broadcast_lu",
     lambda ns, L: importlib.import_module(_api(ns).__name__ + ".scipy.linalg").lu_solve(
         importlib.import_module(_api(ns).__name__ + ".scipy.linalg").lu_factor(_LU_A[0]),
         np.ones((3, 2, 4), np.float32))),
    ("lu_solve_trans_1",
     lambda ns, L: importlib.import_module(_api(ns).__name__ + ".scipy.linalg").lu_solve(
         importlib.import_module(_api(ns).__name__ + ".scipy.linalg").lu_factor(_LU_A),
         _LU_B[..., None], trans=1)),
    # jax.scipy.linalg.expm: a batch needing squarings (L1 norms 7 to 11), an
    # infinite entry (all NaN: more squarings than max_squarings), expm_frechet
    ("expm_batch_squarings",
     lambda ns, L: importlib.import_module(_api(ns).__name__ + ".scipy.linalg").expm(_LU_A)),
    ("expm_infinite_entry",
     lambda ns, L: importlib.import_module(_api(ns).__name__ + ".scipy.linalg").expm(
         np.where(np.eye(2, dtype=bool), _LU_A[0], np.float32(np.inf)))),
    ("expm_frechet",
     lambda ns, L: importlib.import_module(_api(ns).__name__ + ".scipy.linalg").expm_frechet(
         _LU_A / 4, _LU_A[::-1] / 8)),
]  # fmt: skip


def _dot_one_term_sign_of_zero(ns: Any) -> Any:
    """Dots contracting one element (or none): XLA multiplies, so the
    product's sign of zero survives (-1 * 0 is -0.0; a sum from +0.0 loses it)."""
    jnp, lax = ns.np_, ns.lax_
    neg, zero = np.float32([[-1.0], [2.0]]), np.float32([[0.0, 1.0]])
    return (
        jnp.matmul(neg, zero),
        jnp.dot(np.float32([-1.0]), np.float32([0.0])),
        lax.dot_general(neg[None], zero[None], (((2,), (1,)), ((0,), (0,)))),
        jnp.tensordot(np.float32(-1.0), np.float32(0.0), 0),
    )


def cases() -> Iterator[Case]:
    yield script_case(
        "linalg.paths/dot_one_term_sign_of_zero",
        _dot_one_term_sign_of_zero,
        expect=AGREE,
        tolerance=Tolerance(signed_zeros=True),
    )
    yield from _lu_cases()
    helpers = "".join(inspect.getsource(h) for h in (_api, _dot))
    for group in (ROWS, ERRORS):
        for name, fn in group:
            case = script_case(f"linalg.paths/{name}", on_lax(fn), expect=AGREE)
            yield replace(case, source=f"{case.source}\n{inspect.getsource(fn).strip()}\n{helpers}")


def _lu_cases() -> Iterator[Case]:
    data = "_LU_A = ... (see linalg_paths.py)\n" + repr((_LU_A.tolist(), _LU_B.tolist()))
    for name, fn in LU_ROWS:
        # expm's squarings multiply the Pade step's rounding (JAX's CPU dots and
        # solve differ from ours by up to ~50 float32 ulps after 2 squarings)
        tol = Tolerance(ulps=128) if name.startswith("expm") else None
        case = script_case(f"linalg.paths/{name}", on_lax(fn), expect=AGREE, tolerance=tol)
        src = inspect.getsource(fn).strip()
        yield replace(case, source=f"{case.source}\n{src}\n{inspect.getsource(_api)}{data}")
