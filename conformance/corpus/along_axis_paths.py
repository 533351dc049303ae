"""refimpl's ``lax.gather_along_axis``/``scatter_along_axis``/``scatter_add_along_axis``
(the ``np.take``-layout indexing primitives of refimpl/primitives/indexing.py; issue 36).

``along_axis.paths/*``: these are refimpl's own functions (JAX has none: the
cases skip there), so they are judged by NumPy oracles: unsigned indices
past the end, ``fill`` mode on int32, uint8 and bool operands (the dtype's
fill: its lowest value for signed ints, highest for unsigned, ``True`` for
bools), eagerly and under ``jit``; and the checks of their arguments
(``TypeError``/``ValueError`` naming the function): float indices, an axis
of size 0, ``fill_value`` outside ``fill`` mode, updates of another dtype
or shape, ``scatter_add`` of bools.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from conformance.case import Case, script_case
from conformance.observe import Raises

_V = np.array([3, -1, 4, 1, 5], np.int32)
_REQ = ("lax_.gather_along_axis",)


def _take_fill(x: np.ndarray, idx: np.ndarray, fill: Any) -> np.ndarray:
    """np.take along axis 0 with out-of-range indices reading ``fill``."""
    idx = np.asarray(idx).astype(np.int64)
    ok = (idx >= 0) & (idx < len(x))
    return np.where(ok, x[np.clip(idx, 0, len(x) - 1)], np.asarray(fill, x.dtype))


_IDX = np.array([1, 300, 0, 7], np.uint32)

ROWS: list[tuple[str, Any, Any]] = [
    ("gather_uint32_indices_fill",
     lambda ns: ns.lax_.gather_along_axis(ns.asarray(_V), _IDX, mode="fill"),
     lambda: _take_fill(_V, _IDX, np.iinfo(np.int32).min)),
    ("gather_uint32_indices_fill_jit",
     lambda ns: ns.jit(lambda x, i: ns.lax_.gather_along_axis(x, i, mode="fill"))(_V, _IDX),
     lambda: _take_fill(_V, _IDX, np.iinfo(np.int32).min)),
    ("gather_uint8_operand_fill",
     lambda ns: ns.lax_.gather_along_axis(ns.asarray(_V.astype(np.uint8)), _IDX, mode="fill"),
     lambda: _take_fill(_V.astype(np.uint8), _IDX, 255)),
    ("gather_bool_operand_fill_jit",
     lambda ns: ns.jit(lambda x, i: ns.lax_.gather_along_axis(x, i, mode="fill"))(_V > 2, _IDX),
     lambda: _take_fill(_V > 2, _IDX, True)),
    ("gather_uint32_indices_clip",
     lambda ns: ns.lax_.gather_along_axis(ns.asarray(_V), _IDX, mode="clip"),
     lambda: _V[np.minimum(_IDX, 4)]),
]  # fmt: skip

ERRORS: list[tuple[str, Any, Any]] = [
    ("gather_float_indices",
     lambda ns: ns.lax_.gather_along_axis(ns.asarray(_V), np.array([1.0, 2.0], np.float32)),
     Raises(TypeError, "gather: indices must be integers")),
    ("gather_empty_axis",
     lambda ns: ns.lax_.gather_along_axis(ns.asarray(_V[:0]), np.array([0], np.int32)),
     Raises(TypeError, "cannot index axis 0 of size 0")),
    ("gather_fill_value_with_clip",
     lambda ns: ns.lax_.gather_along_axis(ns.asarray(_V), np.array([0], np.int32), mode="clip",
                                          fill_value=7),
     Raises(ValueError, "fill_value is only used with mode='fill'")),
    ("scatter_updates_dtype",
     lambda ns: ns.lax_.scatter_along_axis(ns.asarray(_V), np.array([0, 2], np.int32),
                                           np.array([1.0, 2.0], np.float32)),
     Raises(TypeError, "operand and updates must have the same dtype")),
    ("scatter_updates_shape",
     lambda ns: ns.lax_.scatter_along_axis(ns.asarray(_V), np.array([0, 2], np.int32),
                                           np.array([1, 2, 3], np.int32)),
     Raises(TypeError, "updates of shape")),
    ("scatter_add_bool",
     lambda ns: ns.lax_.scatter_add_along_axis(ns.asarray(_V > 0), np.array([0], np.int32),
                                               np.array([True])),
     Raises(TypeError, "scatter_add: does not accept dtype bool")),
]  # fmt: skip


def cases() -> Iterator[Case]:
    for name, fn, oracle in ROWS:
        yield script_case(f"along_axis.paths/{name}", fn, expect=oracle, requires=_REQ)
    for name, fn, expect in ERRORS:
        yield script_case(f"along_axis.paths/{name}", fn, expect=expect, requires=_REQ)
