"""``lax.DotAlgorithm`` and ``lax.DotAlgorithmPreset``: a dot's ``precision``
naming the types its operands are rounded to and it accumulates in.

What JAX 0.10.2 does with one on CPU (refimpl's platform), on both backends:

* XLA's CPU backend ignores algorithms, so JAX refuses every one but the
  presets ``DEFAULT``, ``F16_F16_F16``, ``F32_F32_F32``, ``F64_F64_F64``,
  ``BF16_BF16_F32``, ``BF16_BF16_F32_X3`` and ``BF16_BF16_F32_X6`` when the dot
  runs (eagerly or compiled; tracing alone accepts any): a ``ValueError``.
* For an accepted preset it converts each operand to the preset's storage
  type unless the operand already has one of them (``BF16_BF16_F32`` keeps
  float32 and bfloat16, ``F16_F16_F16`` takes float16, ``F64_F64_F64``
  float64, the others float32; ``DEFAULT`` keeps both), contracts in the
  preset's accumulation type (unless the result type is one it supports) and
  converts the result to the dot's usual result type, which the algorithm
  does not change.
"""

from __future__ import annotations

import enum
from typing import Any, NamedTuple

import ml_dtypes
import numpy as np

__all__ = ["DotAlgorithm", "DotAlgorithmPreset"]

_F16, _F32, _F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
_BF16 = np.dtype(ml_dtypes.bfloat16)


class DotAlgorithm(NamedTuple):
    """An explicit dot algorithm (JAX's fields). XLA's CPU backend runs none."""

    lhs_precision_type: Any
    rhs_precision_type: Any
    accumulation_type: Any
    lhs_component_count: int = 1
    rhs_component_count: int = 1
    num_primitive_operations: int = 1
    allow_imprecise_accumulation: bool = False


class DotAlgorithmPreset(enum.Enum):
    """The named algorithms (JAX's members, in JAX's order)."""

    DEFAULT = enum.auto()
    ANY_F8_ANY_F8_F32 = enum.auto()
    ANY_F8_ANY_F8_F32_FAST_ACCUM = enum.auto()
    ANY_F8_ANY_F8_ANY = enum.auto()
    ANY_F8_ANY_F8_ANY_FAST_ACCUM = enum.auto()
    F16_F16_F16 = enum.auto()
    F16_F16_F32 = enum.auto()
    BF16_BF16_BF16 = enum.auto()
    BF16_BF16_F32 = enum.auto()
    BF16_BF16_F32_X3 = enum.auto()
    BF16_BF16_F32_X6 = enum.auto()
    BF16_BF16_F32_X9 = enum.auto()
    TF32_TF32_F32 = enum.auto()
    TF32_TF32_F32_X3 = enum.auto()
    F32_F32_F32 = enum.auto()
    F64_F64_F64 = enum.auto()

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self.name}"

    def __str__(self) -> str:
        return self.name


_P = DotAlgorithmPreset
_ON_CPU = frozenset(
    {_P.DEFAULT, _P.F16_F16_F16, _P.F32_F32_F32, _P.F64_F64_F64, _P.BF16_BF16_F32,
     _P.BF16_BF16_F32_X3, _P.BF16_BF16_F32_X6}
)  # fmt: skip


def is_algorithm(precision: Any) -> bool:
    return isinstance(precision, (DotAlgorithm, DotAlgorithmPreset))


def check_runs_on_cpu(precision: Any) -> None:
    """JAX's refusal, when the dot runs, of an algorithm XLA's CPU backend would ignore."""
    if is_algorithm(precision) and precision not in _ON_CPU:
        raise ValueError(f"The precision '{precision}' is not supported by dot_general on CPU")


def _storage_types(preset: DotAlgorithmPreset) -> tuple[np.dtype, ...] | None:
    if preset is _P.DEFAULT:
        return None
    if preset is _P.F16_F16_F16:
        return (_F16,)
    if preset is _P.BF16_BF16_F32:
        return (_BF16, _F32)  # float32 storage is kept, anything else becomes bfloat16
    if preset is _P.F64_F64_F64:
        return (_F64,)
    return (_F32,)


def _output_types(preset: DotAlgorithmPreset, lhs: np.dtype, rhs: np.dtype):
    if preset is _P.DEFAULT:
        return None
    if preset is _P.BF16_BF16_F32:
        return (_F32, _BF16) if lhs == rhs == _BF16 else (_F32,)
    return {_P.F16_F16_F16: (_F16,), _P.F64_F64_F64: (_F64,)}.get(preset, (_F32,))


def compute_types(
    preset: DotAlgorithmPreset, lhs: np.dtype, rhs: np.dtype, out: np.dtype
) -> tuple[np.dtype, np.dtype, np.dtype]:
    """(lhs type, rhs type, accumulation type) a CPU preset computes in."""

    def pick(dtype: np.dtype, allowed: tuple[np.dtype, ...] | None) -> np.dtype:
        return dtype if allowed is None or dtype in allowed else allowed[0]

    storage = _storage_types(preset)
    lhs, rhs = pick(lhs, storage), pick(rhs, storage)
    return lhs, rhs, pick(out, _output_types(preset, lhs, rhs))


# The algorithm each preset names in the lowered dot_general (JAX's
# ``algorithm = <lhs_precision_type, rhs_precision_type, accumulation_type,
# lhs/rhs_component_count, num_primitive_operations,
# allow_imprecise_accumulation>``): the CPU presets but DEFAULT, which names none.
_HLO_FIELDS: dict[DotAlgorithmPreset, tuple[np.dtype, np.dtype, np.dtype, int, int, int, bool]] = {
    _P.F16_F16_F16: (_F16, _F16, _F16, 1, 1, 1, False),
    _P.BF16_BF16_F32: (_BF16, _BF16, _F32, 1, 1, 1, False),
    _P.BF16_BF16_F32_X3: (_BF16, _BF16, _F32, 1, 1, 3, False),
    _P.BF16_BF16_F32_X6: (_BF16, _BF16, _F32, 1, 1, 6, False),
    _P.F32_F32_F32: (_F32, _F32, _F32, 1, 1, 1, False),
    _P.F64_F64_F64: (_F64, _F64, _F64, 1, 1, 1, False),
}


def hlo_fields(preset: DotAlgorithmPreset) -> tuple | None:
    """The fields of the ``algorithm`` attribute a CPU preset lowers with, as
    JAX's (None for DEFAULT: no attribute)."""
    return _HLO_FIELDS.get(preset)


def from_name(name: str) -> DotAlgorithmPreset | None:
    """The preset a ``precision`` string names, if it names one."""
    return DotAlgorithmPreset.__members__.get(name)
