"""``jax.typing``: the annotation types ``ArrayLike`` and ``DTypeLike``.

``ArrayLike`` is what refimpl's functions accept as an array operand (a
refimpl ``Array``, a NumPy array or scalar, a Python scalar); ``DTypeLike``
what they accept as a dtype (a name, a NumPy dtype or scalar type). For
annotations only, as in JAX.
"""

from __future__ import annotations

from typing import Any, Union

import numpy as np

from refimpl.array import Array

__all__ = ["ArrayLike", "DTypeLike"]

ArrayLike = Union[Array, np.ndarray, np.bool_, np.number, bool, int, float, complex]  # noqa: UP007
DTypeLike = Union[str, type[Any], np.dtype]  # noqa: UP007
