"""Branches of refimpl/primitives/prng.py (threefry2x32, bitcast_convert_type,
mul_add) that the ``random*`` families leave untaken (issue 36).

* ``prng.paths/wald_grad*``: ``grad`` of ``random.wald`` in its mean, whose
  sampler uses the fused multiply-add (``mul_add``'s jvp), in float32 and in
  float64 (x64: the float64 rounding of ``mul_add``);
* ``prng.paths/vmap_key_data_*``: ``vmap`` over raw key data on axis 1 and
  with a key batched next to unbatched counters (threefry's batch rule moving
  the batch axis and broadcasting rank-0 operands);
* ``prng.paths/bitcast_*``: ``jvp`` through ``lax.bitcast_convert_type``
  (zero tangent, as JAX) and the bool casts every implementation rejects.

Each case is ``AGREE``: judged by JAX's recording. Each case's recorded source
includes the helpers it calls.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, script_case

TAGS = ["random"]

_RAW = np.array([[0, 1, 2], [5, 6, 7]], np.uint32)


def _api(ns: Any) -> Any:
    return importlib.import_module(ns.lax_.__name__.split(".")[0])


def _wald_grad(ns: Any) -> Any:
    api = _api(ns)
    key = api.random.key(3)
    means = np.array([0.5, 1.5, 4.0], np.float32)
    return api.vmap(api.grad(lambda m: api.random.wald(key, m, (4,)).sum()))(means)


def _wald_grad_f64(ns: Any) -> Any:
    api = _api(ns)
    key = api.random.key(11)
    means = np.array([0.75, 2.0], np.float64)
    grad = api.grad(lambda m: api.random.wald(key, m, (3,), dtype=np.float64).sum())
    return [grad(m) for m in means]


def _wald_jvp_stopped(ns: Any) -> Any:
    """Only the mean carries a tangent into the sampler; the rest are constants."""
    api = _api(ns)
    key = api.random.key(5)
    return api.jvp(
        lambda m: api.random.wald(key, ns.lax_.stop_gradient(m) + m * 0, (2,)),
        (np.float32(2.0),),
        (np.float32(1.0),),
    )


def _vmap_key_data_axis1(ns: Any) -> Any:
    api = _api(ns)
    sample = lambda k: api.random.normal(api.random.wrap_key_data(k), (2,))  # noqa: E731
    return api.vmap(sample, in_axes=1)(_RAW)


def _vmap_key_data_fold_in(ns: Any) -> Any:
    """One key, a batch of counters (unbatched key operands broadcast)."""
    api = _api(ns)
    key = api.random.key(7)
    data = np.array([1, 2, 3, 4], np.uint32)
    folded = api.vmap(lambda d: api.random.key_data(api.random.fold_in(key, d)))(data)
    bits = api.vmap(lambda d: api.random.bits(api.random.fold_in(key, d), (3,)))(data)
    return folded, bits


def _vmap_split_axis1(ns: Any) -> Any:
    api = _api(ns)
    split = lambda k: api.random.key_data(api.random.split(api.random.wrap_key_data(k), 3))  # noqa: E731
    return api.vmap(split, in_axes=1, out_axes=2)(_RAW)


def _bitcast_jvp(ns: Any) -> Any:
    api = _api(ns)
    x = np.array([1.0, -2.5, 3.0], np.float32)
    f = lambda v: ns.lax_.bitcast_convert_type(v, np.float32) * 2 + v  # noqa: E731
    return api.jvp(f, (x,), (np.ones(3, np.float32),))


def _bitcast_from_bool(ns: Any) -> Any:
    return ns.lax_.bitcast_convert_type(np.ones(3, np.bool_), np.int8)


def _bitcast_to_bool(ns: Any) -> Any:
    return ns.lax_.bitcast_convert_type(np.ones(3, np.int8), np.bool_)


ROWS: list[tuple[str, Any, bool]] = [
    ("wald_grad", _wald_grad, False),
    ("wald_grad_f64", _wald_grad_f64, True),
    ("wald_jvp_stopped", _wald_jvp_stopped, False),
    ("vmap_key_data_axis1", _vmap_key_data_axis1, False),
    ("vmap_key_data_fold_in", _vmap_key_data_fold_in, False),
    ("vmap_split_axis1", _vmap_split_axis1, False),
    ("bitcast_jvp", _bitcast_jvp, False),
    ("bitcast_from_bool", _bitcast_from_bool, False),
    ("bitcast_to_bool", _bitcast_to_bool, False),
]


def cases() -> Iterator[Case]:
    for name, fn, x64 in ROWS:
        case = script_case(f"prng.paths/{name}", fn, expect=AGREE, tags=TAGS, x64=x64)
        yield replace(case, source=f"{case.source}\n{inspect.getsource(_api)}")
