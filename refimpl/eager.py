"""Eager application of a primitive outside any trace (the op-by-op mode).

The reference backend runs the primitive's NumPy ``impl`` directly. Other
array types (the PJRT array) register their own dispatcher, used when any
operand is of that type.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from refimpl import tracing
from refimpl.arrays import Array, placement
from refimpl.core import ShapedArray
from refimpl.primitives.base import check_impl_outputs

# type -> dispatcher(primitive, args, in_avals, out_avals, params) -> list of arrays
_dispatchers: dict[type, Callable[..., list[Any]]] = {}


def register_eager_dispatcher(cls: type, dispatcher: Callable[..., list[Any]]) -> None:
    _dispatchers[cls] = dispatcher


def apply(
    primitive: Any,
    args: tuple[Any, ...],
    in_avals: list[ShapedArray],
    out_avals: list[ShapedArray],
    params: dict[str, Any],
) -> list[Any]:
    for arg in args:
        if isinstance(arg, tracing.Tracer):
            raise tracing.UnexpectedTracerError(
                f"{primitive.name}: got a tracer of the finished trace of "
                f"{arg.builder.name!r}; a traced value escaped its jit/scan"
            )
        dispatcher = _dispatchers.get(type(arg))
        if dispatcher is not None:
            return dispatcher(primitive, args, in_avals, out_avals, params)
    device, committed = placement(list(args))
    values = [tracing.concrete_value(a, av) for a, av in zip(args, in_avals, strict=True)]
    outs = check_impl_outputs(primitive, primitive.impl(*values, **params), out_avals)
    return [
        Array(out, aval.weak_type, device, committed)
        for out, aval in zip(outs, out_avals, strict=True)
    ]
