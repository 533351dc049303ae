"""``jax.lax``'s enums and typing aliases: ``Precision``, ``RoundingMethod``,
``AccuracyMode``, ``Tolerance``, ``DotDimensionNumbers``, ``ConvGeneralDilatedDimensionNumbers``,
``PrecisionLike`` (annotations only, as JAX's).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

from refimpl.primitives import linalg

# Precision lives with the dot/conv rules, which keep its members in their
# equations' ``precision`` parameter (as JAX's); lax re-exports it.
Precision = linalg.Precision


class RoundingMethod(enum.IntEnum):
    """``lax.round``'s methods."""

    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


class AccuracyMode(enum.Enum):
    """The ``accuracy=`` of the transcendental functions. Accepted and not
    used: refimpl computes one implementation (docs/semantics.md)."""

    HIGHEST = 1
    DEFAULT = 2


class Tolerance:
    """An ``accuracy=`` as tolerances (``atol`` with ``rtol`` or ``ulps``),
    checked as JAX 0.10.2 checks them; accepted and not used, as
    ``AccuracyMode``."""

    def __init__(self, atol: float = 0.0, rtol: float = 0.0, ulps: int = 0):
        if atol < 0.0 or rtol < 0.0 or ulps < 0:
            raise ValueError(
                f"Tolerance: atol, rtol and ulps must be non-negative, got {atol}, {rtol}, {ulps}"
            )
        if atol == 0.0 and rtol == 0.0 and ulps == 0:
            raise ValueError("Tolerance: at least one of atol, rtol or ulps must be set")
        self.atol = atol
        self.rtol = rtol
        self.ulps = ulps


# --- typing aliases (annotations only, as JAX's) -------------------------------------------

DotDimensionNumbers = tuple[
    tuple[Sequence[int], Sequence[int]], tuple[Sequence[int], Sequence[int]]
]
"""``((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))`` of ``dot_general``."""
ConvGeneralDilatedDimensionNumbers = tuple[str, str, str] | linalg.ConvDimensionNumbers | None
"""Three layout strings, a ``ConvDimensionNumbers`` or ``None`` (``conv_general_dilated``)."""
PrecisionLike = str | tuple[Any, Any] | Any | None
"""A ``precision`` argument: ``None``, a name, a ``Precision`` or a pair of them."""


__all__ = [
    "Precision",
    "RoundingMethod",
    "AccuracyMode",
    "Tolerance",
    "ConvGeneralDilatedDimensionNumbers",
    "DotDimensionNumbers",
    "PrecisionLike",
]
