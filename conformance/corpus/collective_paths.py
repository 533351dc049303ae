"""Branches of the collectives' rules under a named ``vmap`` no other case
reaches (refimpl/primitives/collectives.py; issue 36).

``collective.paths/*``: ``all_to_all`` with the concat axis before the
split axis (untiled) and its two refusals (a split size the axis size does
not divide, tiled; one that differs from it, untiled: ``ValueError`` in
both), bool ``psum``/``pmax``/``pmin`` (under ``jit`` too), ``all_gather``
(tiled or not), ``psum_scatter`` and ``ppermute`` of an operand the ``vmap``
does not map, and ``grad`` through ``all_gather``, ``psum_scatter``,
``all_to_all`` and ``ppermute`` (their transposes), and ``all_to_all`` over a
tuple of names (members numbered row-major over the names; tiled, untiled,
names inner-first, ``grad``, ``jit``) and ``axis_index`` of a tuple of names.
Every case is ``AGREE``: judged by JAX (live or recorded); each case's recorded source includes its
row and the helpers it calls.

Left out, differing from JAX 0.10.2: ``all_to_all`` of an unmapped operand
(JAX's vmap returns the operand; refimpl exchanges the blocks, as ``pmap``
would), ``grad`` of ``pmax``/``pmin`` (JAX: ``NotImplementedError``; refimpl
differentiates), an untiled ``psum_scatter`` whose dimension differs from
the axis size (JAX's vmap computes something; refimpl: ``ValueError``), and
the ``ppermute``/``psum_scatter``/tuple-axis ``all_gather`` checks where JAX
fails an internal ``assert`` (``AssertionError``).
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

_X = np.arange(24, dtype=np.float32).reshape(4, 6)
_S = np.arange(16, dtype=np.float32).reshape(4, 4)
_B = np.array([[True, False], [False, False], [True, True], [False, True]])
_RING = [(0, 1), (1, 2), (2, 3), (3, 0)]
_T = np.arange(2 * 3 * 12 * 2, dtype=np.float32).reshape(2, 3, 12, 2)


def _api(ns: Any) -> Any:
    module = importlib.import_module(ns.lax_.__name__.split(".")[0])
    if not hasattr(module, "vmap") or not hasattr(module, "grad"):
        raise Unsupported(f"{ns.name} has no vmap/grad")
    return module


def _named(ns: Any, f: Any, **kw: Any) -> Any:
    """``f`` under a vmap whose axis is named ``i`` (4 members in every row)."""
    return _api(ns).vmap(f, axis_name="i", **kw)


def _two_names(ns: Any, f: Any) -> Any:
    """``f`` under vmaps named ``i`` (outer, 2 members) and ``j`` (inner, 3)."""
    return _api(ns).vmap(_api(ns).vmap(f, axis_name="j"), axis_name="i")


def _unmapped(ns: Any, f: Any, y: Any) -> Any:
    """``f(y)`` on every member, ``y`` not mapped (the mapped ``_X`` sets the size)."""
    return _named(ns, lambda x, v: f(v), in_axes=(0, None))(_X, y)


ROWS: list[tuple[str, Any]] = [
    ("all_to_all_concat_before_split",
     lambda ns, L: _named(ns, lambda x: L.all_to_all(x, "i", 1, 0))(
         np.arange(32, dtype=np.float32).reshape(4, 2, 4))),
    ("all_to_all_split_not_divisible_tiled",
     lambda ns, L: _named(ns, lambda x: L.all_to_all(x, "i", 0, 0, tiled=True))(_X)),
    ("all_to_all_split_not_axis_size",
     lambda ns, L: _named(ns, lambda x: L.all_to_all(x, "i", 0, 0))(_X)),
    ("psum_bool", lambda ns, L: _named(ns, lambda b: L.psum(b, "i"))(_B)),
    ("pmax_bool", lambda ns, L: _named(ns, lambda b: L.pmax(b, "i"))(_B)),
    ("pmin_bool", lambda ns, L: _named(ns, lambda b: L.pmin(b, "i"))(_B)),
    ("pmax_pmin_bool_jit",
     lambda ns, L: ns.jit(_named(ns, lambda b: (L.pmax(b, "i"), L.pmin(b, "i"))))(_B)),
    ("all_gather_unmapped", lambda ns, L: _unmapped(ns, lambda v: L.all_gather(v, "i"), _X[0])),
    ("all_gather_unmapped_tiled",
     lambda ns, L: _unmapped(ns, lambda v: L.all_gather(v, "i", tiled=True), _X[0])),
    ("all_gather_unmapped_axis1",
     lambda ns, L: _unmapped(ns, lambda v: L.all_gather(v, "i", axis=1), _X[:2])),
    ("psum_scatter_unmapped_tiled",
     lambda ns, L: _unmapped(ns, lambda v: L.psum_scatter(v, "i", tiled=True), _S[:2].ravel())),
    ("psum_scatter_unmapped",
     lambda ns, L: _unmapped(ns, lambda v: L.psum_scatter(v, "i"), _S[:, :3])),
    ("ppermute_unmapped", lambda ns, L: _unmapped(ns, lambda v: L.ppermute(v, "i", _RING), _X[0])),
    ("all_gather_grad",
     lambda ns, L: _api(ns).grad(
         lambda x: (_named(ns, lambda r: L.all_gather(r, "i"))(x) ** 2).sum())(_X)),
    ("psum_scatter_grad",
     lambda ns, L: _api(ns).grad(
         lambda x: (_named(ns, lambda r: L.psum_scatter(r, "i", scatter_dimension=0))(x) ** 2)
         .sum())(_S)),
    ("all_to_all_grad",
     lambda ns, L: _api(ns).grad(
         lambda x: (_named(ns, lambda r: L.all_to_all(r, "i", 0, 0, tiled=True))(x) * _S)
         .sum())(_S)),
    ("ppermute_grad",
     lambda ns, L: _api(ns).grad(
         lambda x: (_named(ns, lambda r: L.ppermute(r, "i", _RING))(x) * _X).sum())(_X)),
    ("all_to_all_two_names_tiled",
     lambda ns, L: _two_names(ns, lambda r: L.all_to_all(r, ("i", "j"), 0, 1, tiled=True))(_T)),
    ("all_to_all_names_inner_first",
     lambda ns, L: _two_names(ns, lambda r: L.all_to_all(r, ("j", "i"), 1, 0, tiled=True))(_T)),
    ("all_to_all_two_names_untiled",
     lambda ns, L: _two_names(ns, lambda r: L.all_to_all(r, ("j", "i"), 0, 0))(_T[:, :, :6])),
    ("all_to_all_two_names_grad",
     lambda ns, L: _api(ns).grad(lambda x: (_two_names(
         ns, lambda r: L.all_to_all(r, ("i", "j"), 0, 0, tiled=True))(x) * _T).sum())(_T)),
    ("axis_index_two_names",
     lambda ns, L: _two_names(ns, lambda r: r + L.axis_index(("i", "j")))(_T[:, :, 0, 0])),
    ("axis_index_names_inner_first_jit",
     lambda ns, L: ns.jit(_two_names(ns, lambda r: r * L.axis_index(("j", "i"))))(_T[:, :, 0])),
    ("all_to_all_two_names_jit",
     lambda ns, L: ns.jit(_two_names(
         ns, lambda r: L.all_to_all(r, ("j", "i"), 0, 1, tiled=True)))(_T)),
]  # fmt: skip


def _pmax_pmin_grads(ns: Any) -> Any:
    """grad through pmax/pmin under a named vmap: refimpl differentiates the
    max/min over the members (the cotangent reaches the member holding it);
    jax 0.10.2 has no derivative rule (NotImplementedError: a jax run skips it
    as unsupported; docs/semantics.md, Collectives)."""
    api = _api(ns)
    x = np.array([1.0, 4.0, 2.0, 3.0], np.float32)

    def grad_of(op: Any) -> Any:
        return api.grad(lambda v: api.vmap(lambda e: op(e, "i"), axis_name="i")(v).sum())(x)

    return [grad_of(api.lax.pmax), grad_of(api.lax.pmin)]


def cases() -> Iterator[Case]:
    helpers = "".join(inspect.getsource(h) for h in (_api, _named, _two_names, _unmapped))
    for name, fn in ROWS:
        case = script_case(f"collective.paths/{name}", on_lax(fn), expect=AGREE)
        yield replace(case, source=f"{case.source}\n{inspect.getsource(fn).strip()}\n{helpers}")
    # judged by NumPy: 4 members each get the max (min), so its holder's
    # cotangent is 4 and the others' 0
    yield script_case(
        "collective.paths/pmax_pmin_grad_under_vmap",
        _pmax_pmin_grads,
        expect=lambda: [
            np.array([0.0, 4.0, 0.0, 0.0], np.float32),
            np.array([4.0, 0.0, 0.0, 0.0], np.float32),
        ],
    )
