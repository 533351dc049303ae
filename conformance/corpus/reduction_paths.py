"""Branches of the reductions' rules no other case reaches (refimpl/primitives/reductions.py;
issue 36).

``reduction.paths/*``: complex ``reduce_max``/``reduce_min`` and ``sort``
under ``jit`` (the lowering's lexicographic comparisons); ``vjp`` of
``sort`` on an empty array; cumulative
reductions over an empty axis under ``jit``; a general ``lax.reduce`` (a
log-add-exp computation: not a monoid JAX recognizes) over an empty axis,
and under ``jvp`` with an odd and an empty reduced size (the pairwise
reduction pads the odd half with the init); and the calls every
implementation refuses with JAX's class: ``vmap`` of ``lax.reduce`` with a
batched init and its ``jvp`` with a tangent on the init (under ``jit``:
``NotImplementedError``), ``argmax`` over an empty axis, ``lax.reduce``
with an init of another dtype, and ``reduce``/``reduce_window`` with a
non-scalar init. Every case is ``AGREE``: judged by JAX (live
or recorded); each case's recorded source includes its row and the helpers
it calls.
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

_X = np.array([[0.5, -1.0, 2.0, 0.25, 1.5], [3.0, 0.0, -2.0, 1.0, -0.5]], np.float32)
_C = np.array([1 + 2j, 1 - 1j, -2 + 0j, 1 + 2.5j, 0.5 + 0.5j], np.complex64)
_NEG_INF = np.float32(-np.inf)


def _api(ns: Any) -> Any:
    module = importlib.import_module(ns.lax_.__name__.split(".")[0])
    if not hasattr(module, "jvp"):
        raise Unsupported(f"{ns.name} has no jvp/vmap")
    return module


def _logaddexp(L: Any) -> Any:
    def combine(a: Any, b: Any) -> Any:
        top = L.max(a, b)
        safe = L.select(L.eq(top, _NEG_INF), L.full_like(top, 0.0), top)
        return safe + L.log(L.exp(a - safe) + L.exp(b - safe))

    return combine


def _lse(L: Any, x: Any, dims: Any = (1,), init: Any = _NEG_INF) -> Any:
    return L.reduce(x, init, _logaddexp(L), dims)


ROWS: list[tuple[str, Any]] = [
    ("reduce_max_complex_jit", lambda ns, L: ns.jit(lambda z: L.reduce_max(z, (0,)))(_C)),
    # jnp.sum/mean of bfloat16 accumulate in float32 and round once (exactly as JAX;
    # lax.reduce_sum's own bf16 accumulation order is XLA's: docs/semantics.md 6.2)
    ("sum_bf16_wide_accumulation",
     lambda ns, L: [float(ns.to_numpy(f(ns.np_.asarray(x, ns.np_.bfloat16))))
                    for f in (ns.np_.sum, ns.jit(ns.np_.sum), ns.np_.mean)
                    for x in (np.ones(100000), np.random.RandomState(0).rand(4096))]),
    ("reduce_min_complex_jit", lambda ns, L: ns.jit(lambda z: L.reduce_min(z, (0,)))(_C)),
    ("sort_complex_jit", lambda ns, L: ns.jit(lambda z: L.sort(z))(_C)),
    # reverse mode of sorting an empty array: a gather along a size-0 axis, no indices
    ("sort_empty_vjp",
     lambda ns, L: _api(ns).vjp(L.sort, np.zeros((3, 0), np.float32))[1](
         np.zeros((3, 0), np.float32))),
    ("sort_complex_two_keys_jit",
     lambda ns, L: ns.jit(lambda z, x: L.sort((z, x), num_keys=2))(_C, _X[0])),
    ("cumsum_empty_jit", lambda ns, L: ns.jit(lambda x: L.cumsum(x, axis=1))(_X[:, :0])),
    ("cummax_empty_reverse_jit",
     lambda ns, L: ns.jit(lambda x: L.cummax(x, axis=1, reverse=True))(_X[:, :0])),
    ("reduce_general_empty", lambda ns, L: _lse(L, ns.asarray(_X[:, :0]))),
    ("reduce_general_empty_jit", lambda ns, L: ns.jit(lambda x: _lse(L, x))(_X[:, :0])),
    ("reduce_general_jvp_odd",
     lambda ns, L: _api(ns).jvp(lambda x: _lse(L, x), (_X,), (_X * 0.5,))),
    ("reduce_general_jvp_odd_axis0",
     lambda ns, L: _api(ns).jvp(lambda x: _lse(L, x, (0,)), (_X[:, :3].T,), (_X[:, :3].T,))),
    ("reduce_general_jvp_empty",
     lambda ns, L: _api(ns).jvp(lambda x: _lse(L, x), (_X[:, :0],), (_X[:, :0],))),
]  # fmt: skip

ERRORS: list[tuple[str, Any]] = [
    ("argmax_empty_axis", lambda ns, L: L.argmax(ns.asarray(_X[:, :0]), 1, np.int32)),
    ("reduce_init_dtype",
     lambda ns, L: L.reduce(ns.asarray(_X), np.int32(0), lambda a, b: a + b, (1,))),
    # a non-scalar init: reduce's ValueError, reduce_window's TypeError
    ("reduce_init_not_scalar",
     lambda ns, L: L.reduce(ns.asarray(_X), np.zeros(1, _X.dtype), L.max, (1,))),
    ("reduce_window_init_not_scalar",
     lambda ns, L: L.reduce_window(ns.asarray(_X), np.zeros(1, _X.dtype), L.max, (1, 2), (1, 1),
                                   "VALID")),
]  # fmt: skip

REFUSED: list[tuple[str, Any, Any]] = [
    ("reduce_vmap_batched_init",
     lambda ns, L: _api(ns).vmap(lambda x, i: _lse(L, x, (0,), i))(_X, _X[:, 0]),
     {"jax": "", "*": "batched init"}),  # JAX 0.10.2's NotImplementedError has no message
    ("reduce_jvp_init_tangent_jit",
     lambda ns, L: ns.jit(lambda x, i: _api(ns).jvp(
         lambda x, i: _lse(L, x, (1,), i), (x, i), (x, i)))(_X, _NEG_INF),
     "initial values"),
]  # fmt: skip


def cases() -> Iterator[Case]:
    helpers = "".join(inspect.getsource(h) for h in (_api, _logaddexp, _lse))
    for group in (ROWS, ERRORS):
        for name, fn in group:
            case = script_case(f"reduction.paths/{name}", on_lax(fn), expect=AGREE)
            yield replace(case, source=f"{case.source}\n{inspect.getsource(fn).strip()}\n{helpers}")
    for name, fn, key in REFUSED:
        case = script_case(f"reduction.paths/{name}", on_lax(fn),
                           expect=Raises(NotImplementedError, key))  # fmt: skip
        yield replace(case, source=f"{case.source}\n{inspect.getsource(fn).strip()}\n{helpers}")
