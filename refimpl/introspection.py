"""Looking at programs and types: ``make_jaxpr`` (the traced program, as
refimpl prints it), ``typeof`` and ``float0``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from refimpl import dtypes, tracing
from refimpl.core import ShapedArray

float0 = dtypes.float0


# --- programs ----------------------------------------------------------------------------


def make_jaxpr(
    fun: Callable[..., Any],
    static_argnums: int | Sequence[int] = (),
    axis_env: Sequence[tuple[Any, int]] | None = None,
    return_shape: bool = False,
) -> Callable[..., Any]:
    """``jax.make_jaxpr``: a function returning ``fun``'s traced program.

    The result is refimpl's closed :class:`~refimpl.core.Program` (its
    constants included), printed as refimpl's listing, not JAX's jaxpr text
    (the equations are refimpl's primitives). With ``return_shape=True`` it
    returns ``(program, shapes)``, ``shapes`` the output pytree of
    ``ShapeDtypeStruct``. ``axis_env`` (named axes for collectives outside
    ``pmap``) is not supported: a ``NotImplementedError``.
    """
    from refimpl.transforms.jit import Jitted

    if not callable(fun):
        raise TypeError(f"make_jaxpr: expected a callable, got {type(fun).__name__}")
    if axis_env is not None:
        raise NotImplementedError("make_jaxpr: axis_env is not supported by refimpl")
    if not isinstance(return_shape, bool):
        raise TypeError(f"make_jaxpr: return_shape must be a bool, got {return_shape!r}")
    jitted = Jitted(fun, static_argnums=static_argnums)

    def traced(*args: Any, **kwargs: Any) -> Any:
        result = jitted.trace(*args, **kwargs)
        if return_shape:
            return result.program, result.out_info
        return result.program

    traced.__name__ = f"make_jaxpr({jitted.__name__})"
    return traced


def typeof(x: Any) -> ShapedArray:
    """The abstract value of ``x`` (shape, dtype, weak type), as ``jax.typeof``:
    a Python scalar is weakly typed (``~f32[]``); a tracer gives its aval."""
    from refimpl.ref import Ref

    if isinstance(x, Ref):
        return x.aval
    return tracing.get_aval(x, "typeof", 0)


__all__ = [
    "float0",
    "make_jaxpr",
    "typeof",
]
