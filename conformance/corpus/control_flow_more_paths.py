"""Branches of the control-flow rules no other case reaches
(refimpl/primitives/control_flow.py; issue 36).

``control.more_paths/*``: ``scan`` whose body returns Python scalars as
``ys`` (weakly typed results), ``cond`` whose branches return a weak and a
strong value (the weak one converted); ``while_loop`` under ``vmap`` with a
predicate the ``vmap`` does not batch, under ``jvp`` with a tangent that
reaches a second carry only through the body (the nonzero fixpoint grows)
and with a tangent only in the predicate's constants (a zero tangent out);
a ``vmap`` of a ``cond`` that writes a ref (refused with JAX's
``NotImplementedError``); ``scan`` with a traced ``unroll`` under ``jit``
(refused). Every case is ``AGREE``: judged by JAX (live or recorded); each
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
from conformance.observe import Raises

_XS = np.array([0.5, -1.0, 2.0, 0.25], np.float32)


def _api(ns: Any) -> Any:
    module = importlib.import_module(ns.lax_.__name__.split(".")[0])
    if not hasattr(module, "vmap") or not hasattr(module, "jvp"):
        raise Unsupported(f"{ns.name} has no vmap/jvp")
    return module


def _grow(L: Any, x: Any) -> Any:
    """(a, b, k): b picks up a's tangent only through the body."""
    return L.while_loop(lambda c: c[2] < 3, lambda c: (c[0], c[0] + c[1] * 0.5, c[2] + 1),
                        (x, np.float32(0.0), np.int32(0)))[1]  # fmt: skip


def _counted(L: Any, x: Any) -> Any:
    """A counter the predicate reads (unbatched under vmap) and a batched product."""
    return L.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * x),
                        (np.int32(0), np.float32(1.0)))[1]  # fmt: skip


ROWS: list[tuple[str, Any]] = [
    ("scan_python_scalar_ys",
     lambda ns, L: L.scan(lambda c, x: (c + x, 1.0), np.float32(0), _XS)),
    ("scan_python_scalar_ys_jit",
     lambda ns, L: ns.jit(lambda xs: L.scan(lambda c, x: (c + x, (2, 0.5)), np.float32(0), xs))(
         _XS)),
    ("cond_weak_and_strong_branches",
     lambda ns, L: L.cond(True, lambda: 1.0, lambda: np.float32(2.0))),
    ("cond_weak_and_strong_branches_jit",
     lambda ns, L: ns.jit(lambda p: L.cond(p, lambda: np.float32(2.0), lambda: 3.0))(False)),
    ("while_vmap_unbatched_predicate",
     lambda ns, L: _api(ns).vmap(lambda x: _counted(L, x))(_XS)),
    ("while_jvp_tangent_grows_through_body",
     lambda ns, L: _api(ns).jvp(lambda x: _grow(L, x), (np.float32(2.0),), (np.float32(1.0),))),
    ("while_jvp_only_predicate_consts",
     lambda ns, L: _api(ns).jvp(
         lambda t: L.while_loop(lambda c: c < t, lambda c: c + np.float32(1.0), np.float32(0.0)),
         (np.float32(2.5),), (np.float32(1.0),))),
]  # fmt: skip


def _vmap_cond_writing_ref(ns: Any) -> Any:
    api = _api(ns)
    if not hasattr(api, "new_ref"):
        raise Unsupported(f"{ns.name} has no new_ref")

    def f(x: Any) -> Any:
        r = api.new_ref(np.float32(0.0))

        def write(v: Any) -> Any:
            r[...] = v
            return v

        return ns.lax_.cond(x > 0, write, lambda v: v, x), api.freeze(r)

    return api.vmap(f)(_XS)


REFUSED: list[tuple[str, Any, Any]] = [
    ("vmap_cond_writing_ref", lambda ns, L: _vmap_cond_writing_ref(ns),
     Raises(NotImplementedError, "State effect not supported in vmap-of-cond")),
    ("scan_traced_unroll_jit",
     lambda ns, L: ns.jit(lambda u: L.scan(lambda c, x: (c + x, c), np.float32(0), _XS,
                                           unroll=u))(2),
     AGREE),
]  # fmt: skip


def cases() -> Iterator[Case]:
    helpers = "".join(inspect.getsource(h) for h in (_api, _grow, _counted, _vmap_cond_writing_ref))
    for name, fn in ROWS:
        case = script_case(f"control.more_paths/{name}", on_lax(fn), expect=AGREE)
        yield replace(case, source=f"{case.source}\n{inspect.getsource(fn).strip()}\n{helpers}")
    for name, fn, expect in REFUSED:
        case = script_case(f"control.more_paths/{name}", on_lax(fn), expect=expect)
        yield replace(case, source=f"{case.source}\n{inspect.getsource(fn).strip()}\n{helpers}")
