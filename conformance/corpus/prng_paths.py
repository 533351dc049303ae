"""Branches of refimpl/primitives/prng.py (threefry2x32, bitcast_convert_type,
mul_add) that the ``random*`` families leave untaken (issue 36).

* ``prng.paths/wald_grad*``: ``grad`` of ``random.wald`` in its mean, whose
  sampler uses the fused multiply-add (``mul_add``'s jvp), in float32 and in
  float64 (x64: the float64 rounding of ``mul_add``);
* ``prng.paths/vmap_key_data_*``: ``vmap`` over raw key data on axis 1 and
  with a key batched next to unbatched counters (threefry's batch rule moving
  the batch axis and broadcasting rank-0 operands);
* ``prng.paths/bitcast_*``: ``jvp`` through ``lax.bitcast_convert_type``
  (zero tangent, as JAX), casts to a narrower type (a trailing dim added) and
  a wider one (the trailing dim consumed), and the bool, complex and
  trailing-dim mismatches every implementation rejects.

* ``prng.paths/own/*``: refimpl.lax's own ``threefry2x32`` and ``mul_add``
  (JAX's lax has neither; skipped there): threefry under ``vmap`` on axis 1
  and with batched rank-0 counters next to unbatched keys, against the
  Random123 known answers; ``mul_add``'s jvp with tangents in some operands
  only, against its derivative; the dtype checks of both.

The ``prng.paths/*`` rows outside ``own/`` are ``AGREE``: judged by JAX's
recording; each one's recorded source includes the helpers it calls.
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
from conformance.observe import Raises

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


def _bitcast_narrower(ns: Any) -> Any:
    """A trailing dim of 4 (bytes) and of 2 (halves), eagerly and under jit."""
    cast = ns.lax_.bitcast_convert_type
    words = np.array([[0x01020304, 0xA0B0C0D0], [7, 0x3C003C01]], np.uint32)
    return (cast(words, np.uint8), ns.jit(lambda w: cast(w, np.float16))(words),
            cast(np.float32(1.5), np.int8))  # fmt: skip


def _bitcast_wider(ns: Any) -> Any:
    """The trailing dim consumed, eagerly and under jit."""
    cast = ns.lax_.bitcast_convert_type
    pieces = np.arange(16, dtype=np.uint8).reshape(2, 2, 4) * 17
    return cast(pieces, np.int32), ns.jit(lambda p: cast(p, np.float32))(pieces)


def _bitcast_wider_bad_dim(ns: Any) -> Any:
    return ns.lax_.bitcast_convert_type(np.ones((2, 3), np.uint8), np.uint32)


def _bitcast_from_complex(ns: Any) -> Any:
    return ns.lax_.bitcast_convert_type(np.ones(2, np.complex64), np.uint32)


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
    ("bitcast_narrower", _bitcast_narrower, False),
    ("bitcast_wider", _bitcast_wider, False),
    ("bitcast_wider_bad_dim", _bitcast_wider_bad_dim, False),
    ("bitcast_from_complex", _bitcast_from_complex, False),
]


# --- refimpl.lax's own threefry2x32 and mul_add (JAX's lax has neither) ----------------

# Threefry-2x32 (20 rounds) known answers, Salmon et al.'s Random123 test vectors:
# (k1, k2, x1, x2) -> (y1, y2)
_KAT = np.array(
    [
        [0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x6B200159, 0x99BA4EFE],
        [0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0x1CB996FC, 0xBB002BE7],
        [0x13198A2E, 0x03707344, 0x243F6A88, 0x85A308D3, 0xC4923A9C, 0x483DF7A0],
    ],
    np.uint32,
)


def _own(ns: Any, name: str) -> Any:
    if not hasattr(ns.lax_, name):
        raise Unsupported(f"{ns.name}: lax has no {name}")
    return getattr(ns.lax_, name)


def _threefry_vmap_axis1(ns: Any) -> Any:
    """Each operand batched on its last axis (moved to the front by the rule)."""
    threefry = _own(ns, "threefry2x32")
    cols = _KAT[:, :4].T.reshape(4, 1, 3)  # operand i: shape (1, 3), the batch on axis 1
    y1, y2 = ns.api.vmap(threefry, in_axes=1)(*cols)
    return np.asarray(y1).reshape(3), np.asarray(y2).reshape(3)


def _threefry_vmap_scalar_key(ns: Any) -> Any:
    """Batched rank-0 counters next to unbatched rank-1 keys (both broadcast):
    the diagonal are the known answers; the whole table equals the unbatched
    call broadcasting keys along rows and counters along columns (the
    primitive's impl, not the batch rule under test)."""
    threefry = _own(ns, "threefry2x32")
    k1, k2, x1, x2 = (np.ascontiguousarray(c) for c in _KAT[:, :4].T)
    y1, y2 = ns.api.vmap(threefry, in_axes=(None, None, 0, 0))(k1, k2, x1, x2)
    z1, z2 = threefry(*(np.broadcast_to(k[None, :], (3, 3)) for k in (k1, k2)),
                      *(np.broadcast_to(x[:, None], (3, 3)) for x in (x1, x2)))  # fmt: skip
    same = bool(
        (np.asarray(y1) == np.asarray(z1)).all() and (np.asarray(y2) == np.asarray(z2)).all()
    )
    return same, np.diagonal(np.asarray(y1)).copy(), np.diagonal(np.asarray(y2)).copy()


def _threefry_bad_dtype(ns: Any) -> Any:
    threefry = _own(ns, "threefry2x32")
    return threefry(np.int32(0), np.uint32(0), np.uint32(0), np.uint32(0))


def _mul_add_jvp_partial(ns: Any) -> Any:
    """Tangents in y only, then in x and z only (the others are constants)."""
    mul_add = _own(ns, "mul_add")
    x = np.array([1.5, -2.0], np.float32)
    y = np.array([3.0, 0.5], np.float32)
    z = np.array([0.25, 4.0], np.float32)
    one = np.ones(2, np.float32)
    _, ty = ns.api.jvp(lambda b: mul_add(x, b, z), (y,), (one,))
    _, txz = ns.api.jvp(lambda a, c: mul_add(a, y, c), (x, z), (one, 2 * one))
    return np.asarray(ty), np.asarray(txz)


def _mul_add_int(ns: Any) -> Any:
    mul_add = _own(ns, "mul_add")
    return mul_add(np.int32(1), np.int32(2), np.int32(3))


def _mul_add_mixed(ns: Any) -> Any:
    mul_add = _own(ns, "mul_add")
    return mul_add(np.float32(1), np.float16(2), np.float32(3))


OWN_ROWS: list[tuple[str, Any, Any]] = [
    ("threefry_vmap_axis1", _threefry_vmap_axis1, lambda: (_KAT[:, 4], _KAT[:, 5])),
    ("threefry_vmap_scalar_key", _threefry_vmap_scalar_key, lambda: (True, _KAT[:, 4], _KAT[:, 5])),
    ("threefry_bad_dtype", _threefry_bad_dtype, Raises(TypeError, "uint32")),
    # d/dy (x y + z) = x; d(x, z) along (1, 2): y + 2
    ("mul_add_jvp_partial", _mul_add_jvp_partial,
     lambda: (np.array([1.5, -2.0], np.float32), np.array([5.0, 2.5], np.float32))),
    ("mul_add_int", _mul_add_int, Raises(TypeError, "floating")),
    ("mul_add_mixed", _mul_add_mixed, Raises(TypeError, "same dtypes")),
]  # fmt: skip


def cases() -> Iterator[Case]:
    for name, fn, expect in OWN_ROWS:
        yield script_case(f"prng.paths/own/{name}", fn, expect=expect, tags=TAGS)
    for name, fn, x64 in ROWS:
        case = script_case(f"prng.paths/{name}", fn, expect=AGREE, tags=TAGS, x64=x64)
        yield replace(case, source=f"{case.source}\n{inspect.getsource(_api)}")
