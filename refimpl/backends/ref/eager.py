"""Eager application of a primitive outside any trace (the op-by-op mode).

The reference backend runs the primitive's NumPy ``impl`` directly. Other
array types (the PJRT array) register their own dispatcher, used when any
operand is of that type.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from refimpl import tracing
from refimpl.backends.ref.arrays import RefArray, placement
from refimpl.core import ShapedArray
from refimpl.primitives.base import check_impl_outputs, impl_function

# type -> dispatcher(primitive, args, in_avals, out_avals, params) -> list of arrays
_dispatchers: dict[type, Callable[..., list[Any]]] = {}


def register_eager_dispatcher(cls: type, dispatcher: Callable[..., list[Any]]) -> None:
    _dispatchers[cls] = dispatcher


# type -> binder(primitive, args, params) -> bind's result, or NotImplemented.
# Tried by Primitive.bind before abstract evaluation, so a cached device
# dispatch pays for no Python type checking.
binders: dict[type, Callable[..., Any]] = {}


def register_eager_binder(cls: type, binder: Callable[..., Any]) -> None:
    binders[cls] = binder


def apply(
    primitive: Any,
    args: tuple[Any, ...],
    in_avals: list[ShapedArray],
    out_avals: list[ShapedArray],
    params: dict[str, Any],
) -> list[Any]:
    values = []
    for arg, aval in zip(args, in_avals, strict=True):
        if isinstance(arg, tracing.Tracer):
            raise tracing.UnexpectedTracerError(
                f"{primitive.name}: got a tracer of the finished trace of "
                f"{arg._trace.name!r}; a traced value escaped its jit/scan"
            )
        dispatcher = _dispatchers.get(type(arg))
        if dispatcher is not None:
            return dispatcher(primitive, args, in_avals, out_avals, params)
        # (a RefArray's buffer has its aval's dtype: no conversion to check)
        values.append(arg._value() if type(arg) is RefArray else tracing.concrete_value(arg, aval))
    device, committed = placement(args, _Labels(primitive.name), primitive.name)
    raw = _run_impl(impl_function(primitive), values, params)
    outs = check_impl_outputs(primitive, raw, out_avals)
    if len(outs) == 1:  # (the common case, without the loop below)
        aval = out_avals[0]
        return [RefArray(_own(outs[0], values), aval.weak_type, device, committed, aval=aval)]
    return [
        RefArray(_own(out, values), aval.weak_type, device, committed, aval=aval)
        for out, aval in zip(outs, out_avals, strict=True)
    ]


@np.errstate(all="ignore")  # nan/inf are results, as in interpreter._run_equations
def _run_impl(impl: Callable[..., Any], values: list[np.ndarray], params: dict[str, Any]) -> Any:
    # (the decorator form of errstate costs half of a ``with`` block's new errstate)
    return impl(*values, **params)


class _Labels:
    """The operands' names for a placement error ("0 of add"), made only if one is raised."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __getitem__(self, index: int) -> str:
        return f"{index} of {self.name}"


def _own(out: np.ndarray, inputs: list[np.ndarray]) -> np.ndarray:
    """``out`` itself, or a copy if it is (a view of) an input's buffer.

    An impl may return its operand unchanged (a no-op conversion); the result
    must still be a new array that owns its memory, never a second owner of
    an input's buffer.
    """
    if out.base is None and _distinct_owners(out, inputs):
        return out  # the common case, without a memory-bounds test per input
    if any(np.may_share_memory(out, value) for value in inputs):
        return out.copy()
    return out


def _distinct_owners(out: np.ndarray, inputs: list[np.ndarray]) -> bool:
    """Whether every input owns its memory (no ``base``) and is not ``out``, which
    owns its own too: two live arrays that own their memory never share it."""
    return all(value is not out and value.base is None for value in inputs)
