"""``jax.lax``'s enums and typing aliases: ``Precision``, ``RoundingMethod``,
``DotDimensionNumbers``, ``ConvGeneralDilatedDimensionNumbers``,
``PrecisionLike`` (annotations only, as JAX's).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

from refimpl.primitives import linalg


class Precision(enum.Enum):
    """Dot/conv precision names (the reference computes every one exactly)."""

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2


class RoundingMethod(enum.IntEnum):
    """``lax.round``'s methods."""

    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


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
    "ConvGeneralDilatedDimensionNumbers",
    "DotDimensionNumbers",
    "PrecisionLike",
]
