"""What the special functions share: argument promotion (``_inexact``,
``_strong_inexact``), the one-argument wrapper over a ``lax`` function,
broadcasting, and the building blocks of the series and rational fits
(``_horner``, ``_select_last``, ``_masked_loop``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import dtypes, lax, tracing
from refimpl import numpy as rnp
from refimpl.numpy._promote import to_inexact_dtype


def _inexact(name: str, *args: Any, strong: bool = False, real: bool = False) -> list[Any]:
    """The arguments promoted together to an inexact dtype (bool and ints of up to
    32 bits -> float32, 64-bit ints -> the default float: jnp's promotion);
    ``strong``: the result is strongly typed even from Python scalars; ``real``: a
    complex dtype is a ValueError naming ``name``."""
    avals = [tracing.get_aval(a, name, i) for i, a in enumerate(args)]
    dtype, weak = dtypes.result_type(*[(a.dtype, a.weak_type) for a in avals])
    weak = weak and not strong
    dtype = to_inexact_dtype(dtype)
    if real and dtypes.is_complex(dtype):
        raise ValueError(f"{name} does not support complex-valued inputs (got {dtype})")
    out = []
    for a, aval in zip(args, avals, strict=True):
        a = rnp.asarray(a)
        if aval.dtype != dtype or aval.weak_type != weak:
            a = lax.convert_element_type(a, dtype, weak_type=weak)
        out.append(a)
    return out


def _unary(name: str, fn):
    def apply(x: Any) -> Any:
        (x,) = _inexact(name, x)
        return fn(x)

    apply.__name__ = name
    apply.__qualname__ = name
    return apply


# --- functions composed of primitives ---------------------------------------------------------


def _broadcast(*args: Any) -> list[Any]:
    """Binary primitives take equal shapes (or rank 0): broadcast first."""
    shape = np.broadcast_shapes(*[np.shape(a) for a in args])
    return [a if np.shape(a) in (shape, ()) else rnp.broadcast_to(a, shape) for a in args]


def _float32_or_64(name: str, x: Any) -> Any:
    x = rnp.asarray(x)
    if x.dtype not in (np.float32, np.float64):
        raise TypeError(
            f"{name}: x.dtype={x.dtype} is not supported (float32 or float64 only, as JAX)"
        )
    return x


def _strong_inexact(name: str, *args: Any) -> list[Any]:
    """The arguments promoted together to one strongly typed, real inexact dtype."""

    return _inexact(name, *args, strong=True, real=True)


def _const(x: Any, v: complex) -> np.ndarray:
    return np.asarray(v, x.dtype)


def _horner(coefficients: tuple[float, ...], x: Any) -> Any:
    # from 0 * x, as jnp.polyval: an infinite x gives nan, not inf
    y = rnp.zeros_like(x)
    for c in coefficients:
        y = rnp.add(rnp.multiply(y, x), _const(x, c))
    return y


def _select_last(default: Any, *pairs: tuple[Any, Any]) -> Any:
    """``jnp.piecewise``'s choice: the value of the last true condition."""
    out = default
    for cond, value in pairs:
        out = rnp.where(cond, value, out)
    return out


def _masked_loop(active_fn, body_fn, state: dict) -> dict:
    """Run ``body_fn`` on every element while ``active_fn(state)`` holds for it."""

    def cond(s):
        return rnp.any(active_fn(s))

    def body(s):
        active = active_fn(s)
        new = body_fn(dict(s))
        return {k: rnp.where(active, new[k], s[k]) for k in s}

    return lax.while_loop(cond, body, state)
