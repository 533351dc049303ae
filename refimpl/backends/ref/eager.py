"""Eager application of a primitive outside any trace (the op-by-op mode).

The reference backend runs the primitive's NumPy ``impl`` directly. Other
array types (the PJRT array) register their own dispatcher, used when any
operand is of that type.
"""

from __future__ import annotations

from collections.abc import Callable
from threading import get_ident
from typing import Any

import numpy as np

from refimpl import tracing
from refimpl.backends import fast_functions
from refimpl.backends.ref.arrays import RefArray, placement
from refimpl.config import config
from refimpl.core import ShapedArray
from refimpl.primitives import base
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


# backend name -> dispatcher (as above) of a primitive on host data alone
# (NumPy arrays, Python and NumPy scalars, no operand at all) while that
# backend is ``config.backend``: JAX runs such an operation on its default
# device, so ``lax.iota`` or ``lax.betainc`` of NumPy arrays are that backend's
# arrays and values (XLA's, on pjrt). The reference backend registers none.
_host_dispatchers: dict[str, Callable[..., list[Any]]] = {}


def register_host_dispatcher(backend: str, dispatcher: Callable[..., list[Any]]) -> None:
    _host_dispatchers[backend] = dispatcher


def apply(
    primitive: Any,
    args: tuple[Any, ...],
    in_avals: list[ShapedArray],
    out_avals: list[ShapedArray],
    params: dict[str, Any],
) -> list[Any]:
    values = []
    host_data = True  # no RefArray operand
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
        if type(arg) is RefArray:
            host_data = False
            values.append(arg._value())
        else:
            values.append(tracing.concrete_value(arg, aval))
    if host_data and _host_dispatchers and base.library_impl(primitive):
        host_dispatcher = _host_dispatchers.get(config._values["backend"])
        if host_dispatcher is not None:
            return host_dispatcher(primitive, args, in_avals, out_avals, params)
    device, committed = placement(args, _Labels(primitive.name), primitive.name)
    raw = _run_impl(impl_function(primitive), values, params)
    outs = check_impl_outputs(primitive, raw, out_avals)
    if len(outs) == 1:  # (the common case, without the loop below)
        aval = out_avals[0]
        out = RefArray(_own(outs[0], values), aval.weak_type, device, committed, aval=aval)
        if _recording is not None:
            _recording.append((get_ident(), primitive, args, in_avals, params, out))
        return [out]
    if _recording is not None:
        _recording.append((get_ident(), None))  # several results: nothing a replay serves
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


# --- the eager memo (refimpl.backends.fast_functions) ------------------------------
#
# A public elementwise function called on reference arrays and Python numbers
# promotes, checks and applies one primitive; the first call per key (the
# arrays' types, the numbers' values, the config flags: fast_functions) runs
# all of it, recording the application, and later calls replay only what
# ``apply`` did with the recorded impl, params, constants and result type.
# Errors are never recorded: a call that raises leaves no entry.

# The applications of the call being recorded, each with its thread's id;
# None when none is. One record at a time in the process: meanwhile other
# threads and nested calls take the normal path unrecorded.
_recording: list[Any] | None = None


class MemoEntry:
    """One recorded application: the impl and params, each operand's source
    (an argument's position, or the constant's NumPy value), the result's
    type, and how many calls it served (``hits``, for the tests)."""

    __slots__ = ("primitive", "impl", "params", "operands", "aval", "hits")

    def __init__(self, primitive: Any, params: dict[str, Any], operands: list[Any], aval: Any):
        self.primitive = primitive
        self.impl = impl_function(primitive)
        self.params = params
        self.operands = tuple(operands)
        self.aval = aval
        self.hits = 0


def record(function: Any, args: tuple[Any, ...]) -> tuple[Any, Any]:
    """``function(*args)`` and its memo entry: a :class:`MemoEntry`,
    ``fast_functions._SLOW`` (never served from the memo), or None (could not
    record now)."""
    global _recording
    if _recording is not None or base._axis_owner is not None:
        return function(*args), None
    log: list[Any] = []
    _recording = log
    try:
        out = function(*args)
    finally:
        _recording = None
    return out, _entry(log, args, out)


def _entry(log: list[Any], args: tuple[Any, ...], out: Any) -> Any:
    thread = get_ident()
    log = [applied[1:] for applied in log if applied[0] == thread]
    if len(log) != 1 or len(log[0]) == 1:
        return fast_functions._SLOW  # none, several, or several results
    primitive, operands, in_avals, params, result = log[0]
    if result is not out or getattr(primitive, "axis_dependent", False):
        return fast_functions._SLOW
    sources: list[Any] = []
    for operand, aval in zip(operands, in_avals, strict=True):
        if type(operand) is RefArray:
            position = next((i for i, a in enumerate(args) if a is operand), None)
            if position is None:  # an array made inside the function
                return fast_functions._SLOW
            sources.append(position)
        elif type(operand) is tracing.TypedScalar or type(operand) in (bool, int, float, complex):
            # made from the numbers of the key (or the function's own constants)
            sources.append(tracing.concrete_value(operand, aval))
        else:
            return fast_functions._SLOW
    return MemoEntry(primitive, params, sources, result.aval)


def replay(entry: MemoEntry, args: tuple[Any, ...]) -> Any:
    """What ``apply`` returns for the recorded application on ``args``;
    ``fast_functions._SLOW`` where the normal path must run (a deleted or
    committed array: its error or its placement rule; a call inside one being
    recorded, whose application the record must see)."""
    if _recording is not None or base._axis_owner is not None:
        return fast_functions._SLOW
    values = []
    for source in entry.operands:
        if type(source) is int:
            array = args[source]
            buffer = array._buffer
            if buffer is None or array.committed:
                return fast_functions._SLOW
            values.append(buffer)
        else:
            values.append(source)
    raw = _run_impl(entry.impl, values, entry.params)
    aval = entry.aval
    if not (type(raw) is np.ndarray and raw.shape == aval.shape and raw.dtype == aval.dtype):
        raw = check_impl_outputs(entry.primitive, raw, [aval])[0]
    entry.hits += 1
    if raw.base is not None or not _distinct_owners(raw, values):
        raw = _own(raw, values)
    return RefArray(raw, aval.weak_type, None, False, aval=aval)


fast_functions.register_eager_memo(RefArray, record, replay)
