"""Helpers shared by the distribution modules of ``refimpl.scipy.stats``."""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import lax, tracing
from refimpl import numpy as rnp
from refimpl.numpy._promote import promote_args_inexact


def promote(name: str, *args: Any) -> list[Any]:
    """The arguments as arrays of one inexact dtype, broadcast together, as
    jax's ``promote_args_inexact``: ints and bools become the default float,
    and the result is weakly typed only when every argument is (Python scalars)."""
    out = []
    for value in promote_args_inexact(name, *args):
        if isinstance(value, tracing.TypedScalar):
            weak = value.aval.weak_type
            value = lax.convert_element_type(
                rnp.asarray(value.value), value.aval.dtype, weak_type=weak
            )
        else:
            value = rnp.asarray(value)
        out.append(value)
    return out


def lax_const(like: Any, value: float) -> Any:
    """``value`` in ``like``'s dtype as JAX's ``lax._const``: weakly typed only
    when ``like`` is a weakly typed scalar. A distribution written with it is
    strong, like JAX's, when an int array and a Python float promote to a weak
    float (``bernoulli.pmf(int32_k, 0.3)`` is a strong float32)."""
    aval = tracing.get_aval(like, "lax_const", 0)
    weak = aval.weak_type and not aval.shape
    return lax.convert_element_type(np.asarray(value, aval.dtype), aval.dtype, weak_type=weak)


def const(like: Any, value: float) -> Any:
    """``value`` as a (strong) scalar of ``like``'s dtype."""
    return rnp.asarray(value, dtype=like.dtype)
