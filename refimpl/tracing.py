"""Tracing: turning a Python function into a Program.

While a function is traced, its array arguments are ``Tracer`` objects. Every
primitive applied to a tracer is recorded as an equation by the innermost
active ``Builder`` instead of being computed. Builders nest (a scan body is
traced inside the function that calls scan): a tracer of an outer builder
used inside an inner one is *captured* -- it becomes a constant input of the
inner program, and the outer value is passed in explicitly by whoever binds
the sub-program.

Outside any trace, primitives run eagerly on concrete arrays (see
``refimpl.backends.ref.eager``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from refimpl import dtypes
from refimpl.array_ops import ArrayOps
from refimpl.core import Atom, Eqn, Literal, Program, ShapedArray, Var


class ConcretizationTypeError(TypeError):
    """A traced (abstract) value was used where Python needs a concrete one."""


class UnexpectedTracerError(Exception):
    """A tracer escaped the trace that made it and was used afterwards."""


class Tracer(ArrayOps):
    """An abstract array inside a trace. Operators record equations."""

    __slots__ = ("aval", "builder", "var", "origin")
    __array_priority__ = 100

    def __init__(self, aval: ShapedArray, builder: Builder, var: Var, origin: str) -> None:
        self.aval = aval
        self.builder = builder
        self.var = var
        self.origin = origin  # where it came from, for concretization errors

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    weak_type = property(lambda self: self.aval.weak_type)
    ndim = property(lambda self: self.aval.ndim)
    size = property(lambda self: self.aval.size)

    def _concretization_error(self, what: str) -> ConcretizationTypeError:
        return ConcretizationTypeError(
            f"Abstract tracer value encountered where a concrete value is expected: {what} "
            f"of a traced array {self.aval.str_short()}. The value depends on {self.origin}. "
            "Mark that argument static (static_argnums/static_argnames) or use lax.cond / "
            "lax.select / rnp.where instead of Python control flow."
        )

    def __bool__(self) -> bool:
        raise self._concretization_error("bool()")

    def __int__(self) -> int:
        raise self._concretization_error("int()")

    def __float__(self) -> float:
        raise self._concretization_error("float()")

    def __complex__(self) -> complex:
        raise self._concretization_error("complex()")

    def __index__(self) -> int:
        raise self._concretization_error("use as an index (__index__)")

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise self._concretization_error("conversion to a NumPy array (np.asarray)")

    def tolist(self) -> Any:
        raise self._concretization_error("tolist()")

    def item(self) -> Any:
        raise self._concretization_error("item()")

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __repr__(self) -> str:
        return f"Tracer<{self.aval.str_short()}>"


class Builder:
    """Records the equations of one trace and turns them into a Program."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.in_vars: list[Var] = []
        self.eqns: list[Eqn] = []
        self.const_vars: list[Var] = []
        self.consts: list[np.ndarray] = []
        self.captured: list[Tracer] = []  # outer tracers, in capture order
        self._capture_vars: dict[int, Var] = {}  # id(outer tracer) -> inner var
        self._const_vars_by_id: dict[int, Var] = {}
        self._keepalive: list[Any] = []  # keeps ids in the maps above unique

    # -- inputs and atoms --

    def new_input(self, aval: ShapedArray, origin: str) -> Tracer:
        var = Var(aval)
        self.in_vars.append(var)
        return Tracer(aval, self, var, origin)

    def to_atom(self, value: Any, aval: ShapedArray) -> Atom:
        """The atom standing for ``value`` (whose aval is ``aval``) in this trace."""
        if isinstance(value, Tracer):
            if value.builder is self:
                return value.var
            return self._capture(value)
        if isinstance(value, TypedScalar):
            return Literal(value.value, aval)
        if aval.shape == () and (dtypes.is_python_scalar(value) or isinstance(value, np.generic)):
            return Literal(value, aval)
        return self._add_const(value, aval)

    def _capture(self, outer: Tracer) -> Var:
        if not _is_active(outer.builder):
            raise UnexpectedTracerError(
                f"A tracer from the finished trace of {outer.builder.name!r} was used in "
                f"{self.name!r}: a traced value escaped (e.g. stored in a global or a closure "
                "that outlived its jit/scan). Pass it as an argument instead."
            )
        key = id(outer)
        if key not in self._capture_vars:
            self._capture_vars[key] = Var(outer.aval)
            self.captured.append(outer)
        return self._capture_vars[key]

    def _add_const(self, value: Any, aval: ShapedArray) -> Var:
        key = id(value)
        if key not in self._const_vars_by_id:
            var = Var(aval)
            self._const_vars_by_id[key] = var
            self._keepalive.append(value)
            self.const_vars.append(var)
            self.consts.append(concrete_value(value, aval))
        return self._const_vars_by_id[key]

    # -- equations --

    def add_eqn(
        self,
        primitive: Any,
        args: Sequence[Any],
        in_avals: Sequence[ShapedArray],
        out_avals: Sequence[ShapedArray],
        params: dict[str, Any],
    ) -> list[Tracer]:
        inputs = [self.to_atom(a, av) for a, av in zip(args, in_avals, strict=True)]
        outputs = [Var(av) for av in out_avals]
        self.eqns.append(Eqn(primitive, inputs, outputs, params))
        origin = _first_origin(args)
        return [Tracer(v.aval, self, v, origin) for v in outputs]

    def build(self, outs: Sequence[Any]) -> Program:
        """The Program of this trace; captured outer tracers become leading inputs.

        The inputs of the result are ``captured vars + explicit inputs``; the
        caller passes ``builder.captured`` (outer tracers) for the first ones.
        """
        out_atoms = [self.to_atom(x, get_aval(x, self.name, i)) for i, x in enumerate(outs)]
        captured_vars = [self._capture_vars[id(t)] for t in self.captured]
        return Program(
            in_vars=captured_vars + self.in_vars,
            eqns=self.eqns,
            out_vars=out_atoms,
            const_vars=self.const_vars,
            consts=self.consts,
        )


def _first_origin(args: Sequence[Any]) -> str:
    for a in args:
        if isinstance(a, Tracer):
            return a.origin
    return "a traced value"


# --- the stack of active traces -----------------------------------------------


class _TraceStack(threading.local):
    """The active builders of this thread: tracing in one thread never sees
    another thread's trace."""

    def __init__(self) -> None:
        self.builders: list[Builder] = []


_stack = _TraceStack()
# Every active builder of every thread. Only a cheap "is anything tracing?"
# signal for the native fast path (empty: no trace anywhere, so a call can run
# without consulting the per-thread stack); never used to find a builder.
_builders: list[Builder] = []


def current_builder() -> Builder | None:
    builders = _stack.builders
    return builders[-1] if builders else None


def _is_active(builder: Builder) -> bool:
    return any(b is builder for b in _stack.builders)


class new_trace:
    """Context manager: ``with new_trace(name) as builder: ...``."""

    def __init__(self, name: str) -> None:
        self.builder = Builder(name)

    def __enter__(self) -> Builder:
        _stack.builders.append(self.builder)
        _builders.append(self.builder)
        return self.builder

    def __exit__(self, *exc: Any) -> None:
        popped = _stack.builders.pop()
        _builders.remove(self.builder)
        assert popped is self.builder, "trace stack corrupted"


def trace_to_program(
    fun: Callable[..., Any], in_avals: Sequence[ShapedArray], name: str, origins: Sequence[str]
) -> tuple[Program, list[Tracer], Any]:
    """Trace ``fun(*tracers)`` -> (program, captured outer tracers, raw output).

    ``fun`` takes one tracer per aval and returns a flat list of outputs.
    """
    with new_trace(name) as builder:
        tracers = [builder.new_input(av, o) for av, o in zip(in_avals, origins, strict=True)]
        outs = fun(*tracers)
        program = builder.build(outs)
    return program, builder.captured, outs


# --- abstract values of Python objects -----------------------------------------


class TypedScalar:
    """A Python scalar given an explicit dtype and weak type by promotion.

    ``x + 2`` with ``x: ~f32[]`` must see ``2`` as a *weak* float32; a NumPy
    scalar would be strong. Inside a trace it becomes a Literal.
    """

    __slots__ = ("value", "aval")

    def __init__(self, value: Any, dtype: np.dtype, weak_type: bool) -> None:
        self.value = np.asarray(value).astype(dtype)
        self.aval = ShapedArray((), dtype, weak_type)

    def __repr__(self) -> str:
        return f"TypedScalar({self.value!r}, weak_type={self.aval.weak_type})"


# type -> function(value) -> ShapedArray, for array types defined elsewhere
# (the reference Array, the PJRT array).
_aval_handlers: dict[type, Callable[[Any], ShapedArray]] = {}
# type -> function(value) -> np.ndarray
_concrete_handlers: dict[type, Callable[[Any], np.ndarray]] = {}


def register_array_type(
    cls: type, aval_of: Callable[[Any], ShapedArray], to_numpy: Callable[[Any], np.ndarray]
) -> None:
    _aval_handlers[cls] = aval_of
    _concrete_handlers[cls] = to_numpy


register_array_type(TypedScalar, lambda s: s.aval, lambda s: s.value)


def is_array_like(value: Any) -> bool:
    return (
        isinstance(value, (Tracer, np.ndarray, np.generic))
        or type(value) in _aval_handlers
        or dtypes.is_python_scalar(value)
    )


def get_aval(value: Any, op_name: str, position: int | str) -> ShapedArray:
    """The abstract value of an operand; a clear TypeError for non-arrays."""
    if isinstance(value, Tracer):
        return value.aval
    handler = _aval_handlers.get(type(value))
    if handler is not None:
        return handler(value)
    if isinstance(value, (np.ndarray, np.generic)):
        return ShapedArray(value.shape, _canonical_operand_dtype(value.dtype, op_name, position))
    if dtypes.is_python_scalar(value):
        return _python_scalar_aval(value, op_name, position)
    raise TypeError(
        f"{op_name}: argument at position {position} is not a valid array value: "
        f"got {type(value).__name__} {_short_repr(value)}"
    )


def _short_repr(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _canonical_operand_dtype(dtype: np.dtype, op_name: str, position: int | str) -> np.dtype:
    try:
        return dtypes.canonicalize_dtype(dtype)
    except TypeError:
        raise TypeError(
            f"{op_name}: argument at position {position} has unsupported dtype {dtype}"
        ) from None


def _python_scalar_aval(value: Any, op_name: str, position: int | str) -> ShapedArray:
    dtype = dtypes.python_scalar_dtype(value)
    if isinstance(value, int) and not isinstance(value, bool):
        info = np.iinfo(dtype)
        if not info.min <= value <= info.max:
            raise OverflowError(
                f"{op_name}: Python int {value} at position {position} is too large "
                f"for {dtype.name}"
            )
    return ShapedArray((), dtype, dtypes.weak_type_of_value(value))


def concrete_value(value: Any, aval: ShapedArray) -> np.ndarray:
    """A NumPy array holding ``value`` with exactly ``aval``'s dtype."""
    handler = _concrete_handlers.get(type(value))
    if handler is not None:
        array = handler(value)
    else:
        array = np.asarray(value)
    if array.dtype != aval.dtype:
        array = array.astype(aval.dtype)
    return array
