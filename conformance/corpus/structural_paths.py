"""Branches of the structural rules no other case reaches (refimpl/primitives/structural.py;
issue 36).

* ``structural.paths/*``: ``grad`` of a concatenation with a constant
  operand (its transpose skips it), ``lax.pad`` with a Python scalar padding
  value and of a rank-0 operand, ``broadcasted_iota`` with an integral float
  dimension (JAX takes ``int(dimension)``) and a bool one (an int, for
  ``concatenate`` too), ``lax.pad`` of a rank-0 operand under ``jit`` (its
  lowering had failed on the empty padding config), and the argument checks
  every implementation rejects with JAX's class (a fractional
  ``concatenate`` dimension, repeated ``squeeze`` dimensions). ``AGREE``:
  judged by JAX (live or recorded). Left out: ``lax.pad`` of float32 with a
  Python int padding value (JAX 0.10.2: ``TypeError``, refimpl converts it).
* ``mask.paths/*``: ``rev`` over a masked dim (the padding moved back to the
  end) and ``pad`` of an unmasked dim next to a masked one, with NumPy
  oracles; and the layouts the rules refuse (``NotImplementedError`` naming
  the rule): broadcasting a masked size-1 dim, squeezing a masked dim.
  refimpl only (JAX has no ``mask``).

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
from conformance.corpus._tables import on_lax
from conformance.corpus.masking import REQUIRES, Masked, _mask_case, _rows
from conformance.namespace import Unsupported
from conformance.observe import Raises

_X = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5
_K = np.array([[7.0, -1.0, 0.5]], np.float32)


def _api(ns: Any) -> Any:
    module = importlib.import_module(ns.lax_.__name__.split(".")[0])
    if not hasattr(module, "grad"):
        raise Unsupported(f"{ns.name} has no grad")
    return module


ROWS: list[tuple[str, Any]] = [
    ("concatenate_grad_constant_operand",
     lambda ns, L: _api(ns).grad(
         lambda x: (L.concatenate([x, _K, x * 2.0], 0) ** 2).sum())(_X)),
    ("concatenate_grad_first_constant",
     lambda ns, L: _api(ns).grad(lambda x: (L.concatenate([_K, x], 0) * 3.0).sum())(_X)),
    ("pad_python_scalar_value", lambda ns, L: L.pad(ns.asarray(_X), 1.5, [(1, 0, 0), (0, 2, 1)])),
    ("pad_python_float_value_jit",
     lambda ns, L: ns.jit(lambda x: L.pad(x, -1.0, [(0, 1, 0), (1, 1, 0)]))(_X)),
    ("pad_rank0_jit", lambda ns, L: ns.jit(lambda x: L.pad(x, np.float32(0), []))(np.float32(2.5))),
    ("pad_rank0", lambda ns, L: L.pad(ns.asarray(np.float32(2.5)), np.float32(0), [])),
    ("broadcasted_iota_float_dimension",
     lambda ns, L: L.broadcasted_iota(np.int32, (2, 3), 1.0)),
]  # fmt: skip

ERRORS: list[tuple[str, Any]] = [
    # a bool dimension is an int in JAX 0.10.2 (refimpl refused it before)
    ("concatenate_bool_dimension",
     lambda ns, L: L.concatenate([ns.asarray(_X), ns.asarray(_X)], True)),
    ("broadcasted_iota_bool_dimension",
     lambda ns, L: L.broadcasted_iota(np.int32, (2, 3), True)),
    ("concatenate_fraction_dimension",
     lambda ns, L: L.concatenate([ns.asarray(_X), ns.asarray(_X)], 0.5)),
    ("squeeze_repeated_dimensions",
     lambda ns, L: L.squeeze(ns.asarray(_X[:1, :1]), (0, 0))),
    ("broadcast_in_dim_shape_shorter",
     lambda ns, L: L.broadcast_in_dim(ns.asarray(_X), (3,), (0, 1))),
    ("broadcast_in_dim_dims_out_of_range",
     lambda ns, L: L.broadcast_in_dim(ns.asarray(_X), (2, 3), (0, 2))),
    ("broadcast_in_dim_dims_repeated",
     lambda ns, L: L.broadcast_in_dim(ns.asarray(_X[:1]), (3, 3), (1, 1))),
    ("pad_config_not_triples",
     lambda ns, L: L.pad(ns.asarray(_X), np.float32(0), [(1, 0), (0, 1)])),
    ("transpose_permutation_short",
     lambda ns, L: L.transpose(ns.asarray(_X), (0,))),
    ("rev_dimension_out_of_range",
     lambda ns, L: L.rev(ns.asarray(_X), (2,))),
]  # fmt: skip


def _rev(ns: Any, x: Any) -> Any:
    return ns.lax_.rev(x, (0,)) * 2.0


def _pad_columns(ns: Any, x: Any) -> Any:
    return ns.lax_.pad(x, np.float32(-9.0), [(0, 0, 0), (1, 2, 0)])


MASKED: list[Masked] = [
    Masked("rev-masked-dim", _rev, lambda x: x[::-1] * 2.0, ["(n,)"], "(n,)",
           lambda s: [(s["n"],)], [(6,)], _rows, ({"n": 4}, {"n": 1})),
    Masked("rev-masked-rows", _rev, lambda x: x[::-1] * 2.0, ["(n, 2)"], "(n, 2)",
           lambda s: [(s["n"], 2)], [(5, 2)], _rows, ({"n": 3},)),
    Masked("pad-unmasked-dim", _pad_columns,
           lambda x: np.pad(x, [(0, 0), (1, 2)], constant_values=-9.0), ["(n, 2)"], "(n, 5)",
           lambda s: [(s["n"], 2)], [(5, 2)], _rows, ({"n": 3}, {"n": 5})),
]  # fmt: skip


def _refused(label: str, fun: Any, specs: list[str], shapes: list[tuple], key: str) -> Case:
    def script(ns: Any) -> Any:
        masked = ns.mask(lambda *a: fun(ns, *a), specs, "_")
        return masked([ns.asarray(np.zeros(s, np.float32)) for s in shapes], {"n": 1})

    return script_case(f"mask.paths/refused/{label}", script,
                       expect=Raises(NotImplementedError, key), requires=REQUIRES)  # fmt: skip


def cases() -> Iterator[Case]:
    helpers = inspect.getsource(_api)
    for group in (ROWS, ERRORS):
        for name, fn in group:
            case = script_case(f"structural.paths/{name}", on_lax(fn), expect=AGREE)
            yield replace(case, source=f"{case.source}\n{inspect.getsource(fn).strip()}\n{helpers}")
    for m in MASKED:
        for sizes in m.sizes:
            case = _mask_case(m, sizes)
            yield replace(case, name=case.name.replace("mask/", "mask.paths/", 1),
                          source=f"{case.source}\n{inspect.getsource(m.fun).strip()}")  # fmt: skip
    yield _refused("broadcast-masked-size-1",
                   lambda ns, x: ns.lax_.broadcast_in_dim(x, (4, 3), (0, 1)), ["(n, 3)"],
                   [(1, 3)], "cannot broadcast the masked dim")  # fmt: skip
    yield _refused("squeeze-masked-dim", lambda ns, x: ns.lax_.squeeze(x, (0,)), ["(n, 3)"],
                   [(1, 3)], "cannot squeeze the masked dim")  # fmt: skip
