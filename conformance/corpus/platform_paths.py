"""``lax.platform_dependent``'s rules and checks no other case reaches
(refimpl/primitives/platform.py; issue 36).

``platform.paths/*``: ``platform_dependent`` under ``vmap`` (the platform
index is not batched), and the calls every implementation rejects with
JAX's class: a branch or default that is not callable; a platform name no
program runs on (``other=``, taken and never chosen, as JAX's
test_issue_29329) and a branch for another platform returning another tree
(eagerly only the chosen branch runs, as JAX). Every case is ``AGREE``:
judged by JAX (live or recorded); each case's recorded source
includes its row and the helpers it calls.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, script_case
from conformance.namespace import Unsupported

_X = np.array([0.5, -1.0, 2.0], np.float32)


def _api(ns: Any) -> Any:
    module = importlib.import_module(ns.lax_.__name__.split(".")[0])
    if not hasattr(module, "vmap") or not hasattr(ns.lax_, "platform_dependent"):
        raise Unsupported(f"{ns.name} has no vmap/platform_dependent")
    return module


ROWS: list[tuple[str, Any]] = [
    ("vmap",
     lambda ns, L: _api(ns).vmap(
         lambda x: L.platform_dependent(x, cpu=lambda v: v * 2.0, default=lambda v: -v))(_X)),
    ("vmap_jit",
     lambda ns, L: ns.jit(_api(ns).vmap(
         lambda x: L.platform_dependent(x, cpu=lambda v: v + 1.0, tpu=lambda v: v)))(_X)),
    ("branch_not_callable", lambda ns, L: L.platform_dependent(_X, cpu=3.0)),
    ("default_not_callable",
     lambda ns, L: L.platform_dependent(_X, cpu=lambda v: v, default=1.0)),
    ("other_platform_name",
     lambda ns, L: L.platform_dependent(_X, default=lambda v: v * 2.0, other=lambda v: -v)),
    ("other_platform_name_jit",
     lambda ns, L: ns.jit(lambda x: L.platform_dependent(
         x, default=lambda v: v * 2.0, other=lambda v: -v))(_X)),
    ("eager_other_branch_returns_another_tree",
     lambda ns, L: L.platform_dependent(_X, cpu=lambda v: v + 1.0, tpu=lambda v: (v, v))),
]  # fmt: skip


def _on_lax(fn: Any) -> Any:
    def script(ns: Any) -> Any:
        _api(ns)
        return fn(ns, ns.lax_)

    return script


def cases() -> Iterator[Case]:
    helpers = inspect.getsource(_api)
    for name, fn in ROWS:
        case = script_case(f"platform.paths/{name}", _on_lax(fn), expect=AGREE)
        yield replace(case, source=f"{case.source}\n{inspect.getsource(fn).strip()}\n{helpers}")
