"""The unroll pass: every ``scan`` becomes the loop structure its ``unroll`` asks for.

A scan of ``length`` steps with ``unroll=k`` is rewritten into:

* when ``k >= length`` (``unroll=True`` and ``unroll=0`` normalize to that):
  every step inlined in order, with no loop. Step ``i`` reads ``xs[i]`` with
  a static ``slice`` + ``squeeze``, and the ``ys`` are the steps' ``y``s
  given a leading axis (``broadcast_in_dim``) and ``concatenate``d -- no
  ``dynamic_slice`` / ``dynamic_update_slice`` anywhere;
* otherwise: a ``while`` loop over ``length // k`` blocks whose body holds k
  inlined copies of the scan body, copy ``j`` of block ``b`` doing step
  ``b*k + j`` (it reads ``xs`` with ``dynamic_slice`` and writes ``y`` into
  a ``(length, ...)`` buffer with ``dynamic_update_slice``); then the
  ``length % k`` remaining steps, inlined after the loop at static indices.

``reverse`` maps step ``s`` to index ``length - 1 - s``. Index arithmetic uses
weakly typed int32 values, so ``dynamic_update_slice`` keeps the ``ys``'
weak type and every loop carry keeps its type.

The pass works by re-tracing: the program is replayed on tracers of a new
trace, binding each equation's primitive again (which re-checks its types),
except that a ``scan`` equation is replaced by the computation above, written
as ordinary Python over tracers. Sub-programs (while/cond bodies, nested jit)
are rewritten the same way. The result evaluates bit-identically to the
original on the reference interpreter: the same primitives run on the same
values in the same order, and slicing and stacking are exact.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from refimpl import tracing
from refimpl.core import Eqn, Literal, Program, ShapedArray, Var
from refimpl.primitives import rule_context
from refimpl.primitives.control_flow import _weak_only_mismatch, scan_p, while_loop
from refimpl.primitives.elementwise import add, convert_element_type_p, lt, mul, sub
from refimpl.primitives.indexing import dynamic_slice_p, dynamic_update_slice_p
from refimpl.primitives.structural import broadcast_in_dim_p, concatenate_p, slice_p, squeeze_p

__all__ = ["inline_program", "unroll_scans"]


def unroll_scans(program: Program) -> Program:
    """``program`` with every scan (at any depth) rewritten as described above.

    The result has the same input and output types and passes ``check_program``.
    """
    return _Unroller().retrace(program)


def inline_program(program: Program, args: Sequence[Any]) -> list[Any]:
    """Apply ``program``'s equations to ``args`` (tracers) in the current trace,
    unrolling its scans; returns its outputs."""
    return _Unroller().inline(program, args)


class _ConstValue:
    """A constant of a program being replayed: a NumPy value with its exact
    type (a closed-over weakly typed array keeps its weak type)."""

    __slots__ = ("aval", "value")

    def __init__(self, value: np.ndarray, aval: ShapedArray) -> None:
        self.value = value
        self.aval = aval


tracing.register_array_type(_ConstValue, lambda c: c.aval, lambda c: c.value)


def _index(i: int) -> tracing.TypedScalar:
    """A static index: a weakly typed int32 literal."""
    return tracing.TypedScalar(i, np.dtype(np.int32), weak_type=True)


class _Unroller:
    def __init__(self) -> None:
        # one wrapper per (array, type), so every inlined copy shares one const
        self._consts: dict[tuple[int, ShapedArray], _ConstValue] = {}

    # -- replaying programs --

    def retrace(self, program: Program) -> Program:
        """A new Program computing what ``program`` does, its scans unrolled."""
        origins = [f"input {i} of the program being unrolled" for i in range(len(program.in_vars))]
        new, captured, _ = tracing.trace_to_program(
            lambda *args: self.inline(program, args), program.in_avals, "unroll_scans", origins
        )
        assert not captured, "a closed program captured an outer tracer"
        return new

    def inline(self, program: Program, args: Sequence[Any]) -> list[Any]:
        env: dict[int, Any] = {}
        for var, value in zip(program.const_vars, program.consts):
            env[var.id] = self._const(value, var.aval)
        for var, arg in zip(program.in_vars, args, strict=True):
            env[var.id] = arg
        for eqn in program.eqns:
            outs = self._apply(eqn, [_read(env, atom) for atom in eqn.inputs])
            for var, out in zip(eqn.outputs, outs, strict=True):
                env[var.id] = out
        return [_read(env, atom) for atom in program.out_vars]

    def _const(self, value: np.ndarray, aval: ShapedArray) -> _ConstValue:
        key = (id(value), aval)
        if key not in self._consts:
            self._consts[key] = _ConstValue(value, aval)
        return self._consts[key]

    def _apply(self, eqn: Eqn, args: list[Any]) -> list[Any]:
        if eqn.primitive is scan_p:
            return self._unrolled_scan(args, **eqn.params)
        params = {name: self._rewrite_param(value) for name, value in eqn.params.items()}
        out = eqn.primitive.bind(*args, **params)
        return list(out) if eqn.primitive.multiple_results else [out]

    def _rewrite_param(self, value: Any) -> Any:
        if isinstance(value, Program):
            return self.retrace(value)
        if isinstance(value, tuple) and any(isinstance(v, Program) for v in value):
            return tuple(self._rewrite_param(v) for v in value)
        return value

    # -- scans --

    def _unrolled_scan(
        self,
        args: list[Any],
        *,
        body: Program,
        num_consts: int,
        num_carry: int,
        length: int,
        reverse: bool,
        unroll: int,
    ) -> list[Any]:
        consts = args[:num_consts]
        # an initial carry may differ from the body's in weak type only (a
        # weak init the body returns strong): the inlined steps take the
        # body's types, as the loop's later iterations do
        # (and a batched body may return strong a carry it takes weak: the
        # loop then carries the body's output types)
        carry_avals = [
            out if _weak_only_mismatch(out, taken) else taken
            for out, taken in zip(
                body.out_avals, body.in_avals[num_consts : num_consts + num_carry]
            )
        ]
        carry = _as_types(args[num_consts : num_consts + num_carry], carry_avals)
        xs = args[num_consts + num_carry :]
        y_avals = body.out_avals[num_carry:]

        def position(step: Any) -> Any:
            """Where step ``step`` reads xs and writes ys (an int or a traced int32)."""
            if not reverse:
                return step
            return length - 1 - step if isinstance(step, int) else sub(_index(length - 1), step)

        def run_step(carry: list[Any], rows: list[Any]) -> tuple[list[Any], list[Any]]:
            outs = self.inline(body, [*consts, *carry, *rows])
            # the step's carry keeps the loop's types: replayed on operands
            # of other weak types than the body was traced with, a carry the
            # body returns unchanged (or computes from a weak constant) can
            # come out of another weak type, which the while loop refuses
            return _as_types(outs[:num_carry], carry_avals), outs[num_carry:]

        if unroll >= length:  # fully unrolled: static indices only
            ys_by_index: list[list[Any]] = [[] for _ in range(length)]
            for step in range(length):
                i = position(step)
                carry, ys_by_index[i] = run_step(carry, [_static_row(x, i) for x in xs])
            stacked = [
                _stack([ys[leaf] for ys in ys_by_index], aval, length)
                for leaf, aval in enumerate(y_avals)
            ]
            return [*carry, *stacked]

        blocks = length // unroll

        def loop_body(state: tuple[Any, list[Any], list[Any]]) -> tuple[Any, list, list]:
            block, carry, buffers = state
            first = mul(block, _index(unroll))
            for j in range(unroll):
                i = position(first if j == 0 else add(first, _index(j)))
                carry, ys = run_step(carry, [_dynamic_row(x, i) for x in xs])
                buffers = [_write_row(b, y, i) for b, y in zip(buffers, ys)]
            return add(block, _index(1)), carry, buffers

        buffers = [_zeros(aval, length) for aval in y_avals]
        _, carry, buffers = while_loop(
            lambda state: lt(state[0], _index(blocks)), loop_body, (_index(0), list(carry), buffers)
        )
        for step in range(blocks * unroll, length):  # the remainder, inlined
            i = position(step)
            carry, ys = run_step(carry, [_static_row(x, i) for x in xs])
            buffers = [_write_row(b, y, _index(i)) for b, y in zip(buffers, ys)]
        return [*carry, *buffers]


def _read(env: dict[int, Any], atom: Var | Literal) -> Any:
    if isinstance(atom, Literal):
        return tracing.TypedScalar(atom.value, atom.aval.dtype, atom.aval.weak_type)
    return env[atom.id]


def _aval(x: Any) -> ShapedArray:
    return tracing.get_aval(x, "unroll_scans", "operand")


def _as_types(values: Sequence[Any], avals: Sequence[ShapedArray]) -> list[Any]:
    """``values`` converted where their type (dtype or weak type) is not ``avals``'."""
    return [
        v
        if _aval(v) == a
        else convert_element_type_p.bind(v, new_dtype=a.dtype, weak_type=a.weak_type)
        for v, a in zip(values, avals, strict=True)
    ]


def _shape(x: Any) -> tuple[int, ...]:
    return tracing.get_aval(x, "unroll_scans", "operand").shape


def _static_row(x: Any, i: int) -> Any:
    """``x[i]`` for a static ``i``: slice + squeeze."""
    shape = _shape(x)
    row = slice_p.bind(
        x, start_indices=(i,) + (0,) * (len(shape) - 1), limit_indices=(i + 1, *shape[1:]),
        strides=None,
    )  # fmt: skip
    return squeeze_p.bind(row, dimensions=(0,))


def _dynamic_row(x: Any, i: Any) -> Any:
    """``x[i]`` for a traced ``i``: dynamic_slice + squeeze."""
    shape = _shape(x)
    zeros = [_index(0)] * (len(shape) - 1)
    row = dynamic_slice_p.bind(x, i, *zeros, slice_sizes=(1, *shape[1:]))
    return squeeze_p.bind(row, dimensions=(0,))


def _with_leading_axis(y: Any) -> Any:
    shape = _shape(y)
    return broadcast_in_dim_p.bind(
        y, shape=(1, *shape), broadcast_dimensions=tuple(range(1, len(shape) + 1))
    )


def _write_row(buffer: Any, y: Any, i: Any) -> Any:
    """``buffer`` with row ``i`` replaced by ``y``: dynamic_update_slice."""
    zeros = [_index(0)] * len(_shape(y))
    return dynamic_update_slice_p.bind(buffer, _with_leading_axis(y), i, *zeros)


def _zeros(aval: ShapedArray, length: int) -> Any:
    """A ``(length, *aval.shape)`` array of zeros with ``aval``'s dtype and weak type."""
    zero = tracing.TypedScalar(0, aval.dtype, aval.weak_type)
    return broadcast_in_dim_p.bind(zero, shape=(length, *aval.shape), broadcast_dimensions=())


def _stack(rows: list[Any], aval: ShapedArray, length: int) -> Any:
    """The rows (each of type ``aval``) stacked on a new leading axis, statically."""
    if length == 0:
        return _zeros(aval, 0)
    pieces = [_with_leading_axis(row) for row in rows]
    return pieces[0] if len(pieces) == 1 else concatenate_p.bind(*pieces, dimension=0)


# scan's lowering rule (primitives.control_flow) unrolls through this (primitives.rule_context)
rule_context.unroll_scans = unroll_scans
