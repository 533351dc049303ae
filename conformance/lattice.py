"""JAX's type promotion lattice, written down independently of refimpl.

The promotion cases (``conformance/corpus/promotion.py``) take their
expected dtype and weak type from here, so that a promotion rule refimpl
gets wrong fails even in a run without jax. The lattice is the one JAX
documents ("Type promotion semantics"): the nodes are the dtypes plus the
three *weak* kinds ``i*``, ``f*``, ``c*`` (Python ``int``, ``float`` and
``complex`` scalars, and weakly typed arrays), and the result of promoting
operands is their least upper bound::

    b1 -> i* -> {u8, i8}
    u8 -> {u16, i16}    u16 -> {u32, i32}    u32 -> {u64, i64}    u64 -> f*
    i8 -> i16 -> i32 -> i64 -> f*
    f* -> {bf16, f16, c*}    bf16 -> f32    f16 -> f32    f32 -> {f64, c64}
    f64 -> c128    c* -> c64 -> c128

Then:

* when every operand is weak, the bound is taken of their strong dtypes
  and the result is weak;
* otherwise the result is weak exactly when the bound is a weak node;
* a weak node becomes the default dtype of its kind (``int32``/``float32``/
  ``complex64``, or the 64-bit ones with ``enable_x64``), and without x64
  every 64-bit dtype becomes its 32-bit counterpart.

``tests/conformance/test_conformance_tools.py`` checks every pair against
``jax.numpy.result_type`` when jax is installed.
"""

from __future__ import annotations

from functools import cache

import ml_dtypes
import numpy as np

_NAMES = {
    "b1": np.dtype(bool),
    "u8": np.dtype(np.uint8), "u16": np.dtype(np.uint16),
    "u32": np.dtype(np.uint32), "u64": np.dtype(np.uint64),
    "i8": np.dtype(np.int8), "i16": np.dtype(np.int16),
    "i32": np.dtype(np.int32), "i64": np.dtype(np.int64),
    "bf16": np.dtype(ml_dtypes.bfloat16), "f16": np.dtype(np.float16),
    "f32": np.dtype(np.float32), "f64": np.dtype(np.float64),
    "c64": np.dtype(np.complex64), "c128": np.dtype(np.complex128),
}  # fmt: skip
_NODE_OF = {dtype: name for name, dtype in _NAMES.items()}

# node -> the nodes directly above it
_UP: dict[str, tuple[str, ...]] = {
    "b1": ("i*",),
    "i*": ("u8", "i8"),
    "u8": ("u16", "i16"),
    "u16": ("u32", "i32"),
    "u32": ("u64", "i64"),
    "u64": ("f*",),
    "i8": ("i16",),
    "i16": ("i32",),
    "i32": ("i64",),
    "i64": ("f*",),
    "f*": ("bf16", "f16", "c*"),
    "bf16": ("f32",),
    "f16": ("f32",),
    "f32": ("f64", "c64"),
    "f64": ("c128",),
    "c*": ("c64",),
    "c64": ("c128",),
    "c128": (),
}
WEAK_NODES = ("i*", "f*", "c*")
_WEAK_OF_KIND = {"i": "i*", "u": "i*", "f": "f*", "V": "f*", "c": "c*"}


@cache
def _above(node: str) -> frozenset[str]:
    """Every node at or above ``node``."""
    out = {node}
    for parent in _UP[node]:
        out |= _above(parent)
    return frozenset(out)


def least_upper_bound(nodes: list[str]) -> str:
    common = frozenset.intersection(*(_above(n) for n in nodes))
    # the least of the common upper bounds is the one every other one is above
    (least,) = [n for n in common if all(m in _above(n) for m in common)]
    return least


def node(dtype: np.dtype, weak: bool) -> str:
    """The lattice node of an operand of ``dtype`` (weakly typed or not)."""
    dtype = np.dtype(dtype)
    if weak and dtype != np.dtype(bool):
        kind = "f" if dtype == np.dtype(ml_dtypes.bfloat16) else dtype.kind
        return _WEAK_OF_KIND[kind]
    return _NODE_OF[dtype]


def _materialize(name: str, x64: bool) -> np.dtype:
    if name in WEAK_NODES:
        name = {"i*": "i64", "f*": "f64", "c*": "c128"}[name]
    dtype = _NAMES[name]
    if not x64:
        dtype = {
            np.dtype(np.int64): np.dtype(np.int32),
            np.dtype(np.uint64): np.dtype(np.uint32),
            np.dtype(np.float64): np.dtype(np.float32),
            np.dtype(np.complex128): np.dtype(np.complex64),
        }.get(dtype, dtype)
    return dtype


def result_type(*operands: tuple[np.dtype, bool], x64: bool = False) -> tuple[np.dtype, bool]:
    """(dtype, weak) of promoting operands given as ``(dtype, weak)`` pairs."""
    if all(weak for _, weak in operands):
        bound = least_upper_bound([node(d, False) for d, _ in operands])
        return _materialize(bound, x64), True
    bound = least_upper_bound([node(d, w) for d, w in operands])
    return _materialize(bound, x64), bound in WEAK_NODES


def python_scalar_operand(value: object, x64: bool = False) -> tuple[np.dtype, bool]:
    """The ``(dtype, weak)`` of a Python scalar operand (bool is strong)."""
    if isinstance(value, bool):
        return np.dtype(bool), False
    kind = {int: "i*", float: "f*", complex: "c*"}[type(value)]
    return _materialize(kind, x64), True
