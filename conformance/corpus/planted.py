"""Cases added for the planted bugs that the rest of the corpus missed (issue 36).

``tools/plant_bugs.py`` plants plausible bugs in a copy of refimpl and runs
the main job on it; a bug no case noticed gets a case here that sees its
class, not only the one planted text:

* ``planted.transpose/*``: ``linear_transpose`` of functions built from one
  linear primitive each. Reverse mode reaches a primitive's transpose rule
  only where the primitive appears in the *linear* part of a program, which
  for ``sub`` never happens under ``grad`` (its JVP is ``tx + neg(ty)``):
  transposing the user's own linear function is the one way in. Each
  function transposes on every operand, with operands of different sizes
  where a rule could mix them up (pad's ``lo``/``hi``, the two slices of a
  ``sub``).

``AGREE`` cases: judged by JAX (live or recorded).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, fn_case, rng_for
from conformance.corpus.ad_primitives import AD_TOLERANCE
from conformance.namespace import Unsupported


def _api(ns: Any) -> Any:
    module = importlib.import_module(ns.lax_.__name__.split(".")[0])
    if not hasattr(module, "linear_transpose"):
        raise Unsupported(f"{ns.name} has no linear_transpose")
    return module


def _vec(name: str, *shape: int) -> np.ndarray:
    return rng_for(f"planted/{name}").uniform(-2.0, 2.0, shape).astype(np.float32)


def _transposed(f: Callable[..., Any], n_primals: int) -> Callable[..., Any]:
    """``fn(ns, *primals, ct)``: the cotangents of every primal of ``f(ns, ...)``."""

    def fn(ns: Any, *args: Any) -> Any:
        primals, ct = args[:n_primals], args[n_primals]
        return _api(ns).linear_transpose(lambda *xs: f(ns, *xs), *primals)(ct)

    return fn


# name, f(ns, *linear operands), primal shapes, output shape
_ROWS: list[tuple[str, Callable[..., Any], list[tuple[int, ...]], tuple[int, ...]]] = [
    ("sub", lambda ns, a, b: a - b, [(5,), (5,)], (5,)),
    ("sub_slices", lambda ns, a: a[:3] - a[2:], [(5,)], (3,)),
    ("sub_broadcast", lambda ns, a, b: ns.lax_.sub(a, ns.lax_.broadcast(b, (5,))), [(5,), ()],
     (5,)),
    ("add_broadcast", lambda ns, a, b: a + b, [(2, 3), (3,)], (2, 3)),
    ("neg", lambda ns, a: -a, [(4,)], (4,)),
    ("mul_const", lambda ns, a: a * np.float32(-1.5), [(4,)], (4,)),
    ("div_const", lambda ns, a: a / np.float32(4.0), [(4,)], (4,)),
    ("pad_lo_hi", lambda ns, a: ns.lax_.pad(a, np.float32(0), [(2, 0, 1)]), [(3,)], (7,)),
    ("pad_negative", lambda ns, a: ns.lax_.pad(a, np.float32(0), [(-1, 2, 0)]), [(4,)], (5,)),
    ("pad_value", lambda ns, a, v: ns.lax_.pad(a, v, [(1, 2, 0)]), [(3,), ()], (6,)),
    ("rev", lambda ns, a: ns.lax_.rev(a, (0,)), [(4,)], (4,)),
    ("cumsum", lambda ns, a: ns.lax_.cumsum(a, axis=0), [(4,)], (4,)),
    ("cumsum_reverse", lambda ns, a: ns.lax_.cumsum(a, axis=0, reverse=True), [(4,)], (4,)),
    ("reduce_sum", lambda ns, a: ns.lax_.reduce_sum(a, (1,)), [(2, 3)], (2,)),
    ("transpose", lambda ns, a: ns.lax_.transpose(a, (1, 0)), [(2, 3)], (3, 2)),
    ("concatenate", lambda ns, a, b: ns.lax_.concatenate([a, b], 0), [(2,), (3,)], (5,)),
    ("dynamic_slice", lambda ns, a: ns.lax_.dynamic_slice(a, (np.int32(1),), (2,)), [(4,)],
     (2,)),
    ("slice_strided", lambda ns, a: ns.lax_.slice(a, (1,), (6,), (2,)), [(6,)], (3,)),
    ("dot_const", lambda ns, a: ns.lax_.dot(a, np.arange(6, dtype=np.float32).reshape(3, 2)),
     [(2, 3)], (2, 2)),
    ("broadcast_in_dim", lambda ns, a: ns.lax_.broadcast_in_dim(a, (2, 3), (1,)), [(3,)],
     (2, 3)),
    ("reshape", lambda ns, a: ns.lax_.reshape(a, (3, 2)), [(2, 3)], (3, 2)),
    ("select_n", lambda ns, a, b: ns.lax_.select_n(np.array([True, False, True]), a, b),
     [(3,), (3,)], (3,)),
    ("gather_fill",
     lambda ns, a: a.at[np.array([0, 3, 7, -9], np.int32)].get(mode="fill", fill_value=0.0),
     [(4,)], (4,)),
    ("convert_element_type", lambda ns, a: ns.lax_.convert_element_type(a, np.float16),
     [(3,)], (3,)),
    ("reduce_window_sum",
     lambda ns, a: ns.lax_.reduce_window(a, np.float32(0), ns.lax_.add, (2,), (1,), "VALID"),
     [(4,)], (3,)),
]  # fmt: skip


def cases() -> Iterator[Case]:
    for name, f, shapes, out_shape in _ROWS:
        primals = [_vec(f"{name}/x{k}", *s) for k, s in enumerate(shapes)]
        ct = _vec(f"{name}/ct", *out_shape)
        if name == "convert_element_type":
            ct = ct.astype(np.float16)
        yield fn_case(
            f"planted.transpose/{name}",
            _transposed(f, len(shapes)),
            [*primals, ct],
            expect=AGREE,
            mode="eager",
            tolerance=AD_TOLERANCE,
        )
