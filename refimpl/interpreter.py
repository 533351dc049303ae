"""The reference interpreter: evaluates a Program with NumPy.

This is the definition of what a Program means. Each equation's primitive
``impl`` is applied to the NumPy values of its inputs, and its results are
checked against the types the IR promised, so an impl bug is caught at the
equation that has it, not three ops later.

Each value is dropped right after its last use, so the interpreter's memory
at any moment is that of the live values, as in a compiled program. That is
what makes donation measurable: :func:`run_program` writes an output into a
donated input's buffer as soon as nothing can read the old contents any
more, instead of holding a second copy until the end.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.lib.array_utils import byte_bounds

from refimpl.core import Atom, Eqn, Literal, Program, Var, subprograms
from refimpl.primitives import base, rule_context
from refimpl.primitives.base import check_impl_outputs

Env = dict[int, np.ndarray]  # Var.id -> value


def eval_program(
    program: Program, args: Sequence[np.ndarray], *, keep_plan: bool = True
) -> list[np.ndarray]:
    """Evaluate ``program`` on NumPy ``args`` (one per ``in_vars``).

    An output may be one of the ``args`` or a constant of the program itself
    (``lambda x: x`` returns its input). Callers that hand outputs to a user
    use :func:`run_program`, which guarantees buffers the caller owns.
    ``keep_plan=False`` for a program evaluated once: its plan (about a
    kilobyte per equation) is not kept with it.
    """
    plan = _plan_of(program, keep=keep_plan, compiled=_compiled_run.active)
    env = _bind_inputs(program, plan, args)
    _run_equations(plan, env, after_equation=None)
    return [_read(env, atom) for atom in program.out_vars]


def eval_compiled(program: Program, args: Sequence[np.ndarray]) -> list[np.ndarray]:
    """:func:`eval_program` as a compiled program runs (a jit's impl): by
    refimpl's own rules, nested programs too (:class:`_CompiledRun`)."""
    outer = _compiled_run.active
    _compiled_run.active = True
    try:
        return eval_program(program, args)
    finally:
        _compiled_run.active = outer


def run_program(
    program: Program,
    args: Sequence[np.ndarray],
    *,
    reuse: Mapping[int, int] | None = None,
    on_overwrite: Callable[[int], None] | None = None,
) -> list[np.ndarray]:
    """Evaluate ``program`` for a top-level call; the caller owns every output.

    Output ``j`` is a buffer shared with nothing else: not with an argument, a
    constant or literal of the program, or another output. The exception is
    donation: ``reuse`` maps input ``i`` -> output ``j``, and then output ``j``
    *is* ``args[i]`` (the same NumPy array, so the same memory) with the
    result written into it. ``args[i]`` must be an owned, C-contiguous buffer
    of output ``j``'s shape and dtype; inputs whose buffer is also a constant
    of the program are skipped (overwriting it would change the program).

    ``on_overwrite(i)`` is called just before ``args[i]``'s contents are
    replaced, so the caller can delete the donated array at the moment its
    value stops existing. If an equation fails after that, the inputs already
    overwritten are gone; all others are untouched.
    """
    plan = _plan_of(program, compiled=True)
    env = _bind_inputs(program, plan, args)
    usable = {
        i: j
        for i, j in (reuse or {}).items()
        if _reusable(args[i]) and not plan.arrays.shared_with(args[i])
    }
    writer = _DonatedWriter(program, args, usable, on_overwrite or (lambda i: None))
    # the writer has nothing to do after any equation when nothing is donated
    after = writer.after_equation if writer.pending else None
    outer = _compiled_run.active
    _compiled_run.active = True
    try:
        _run_equations(plan, env, after_equation=after)
    finally:
        _compiled_run.active = outer
    return writer.finish(env, plan.arrays)


class _CompiledRun(threading.local):
    """Whether this thread is running a compiled program (:func:`run_program`,
    the reference backend's jit): its equations, and those of the programs
    their impls evaluate (a checkpoint's, a custom rule's), run by refimpl's
    own rules, as JAX's compiled code never calls ``Primitive.impl``; outside
    one (a linearized function, a primitive's impl applied eagerly), by the
    impls, which JAX's eval_jaxpr binds."""

    active = False


_compiled_run = _CompiledRun()


# --- evaluation -------------------------------------------------------------------


def _bind_inputs(program: Program, plan: _Plan, args: Sequence[Any]) -> Env:
    if len(args) != len(program.in_vars):
        raise TypeError(
            f"eval_program: program takes {len(program.in_vars)} inputs, got {len(args)}"
        )
    env: Env = dict(plan.literals)
    for var, value in zip(program.const_vars, program.consts, strict=True):
        env[var.id] = np.asarray(value)
    for var, value in zip(program.in_vars, args, strict=True):
        env[var.id] = _checked_input(var, value)
    return env


def _run_equations(
    plan: _Plan, env: Env, after_equation: Callable[[Eqn, Env], None] | None
) -> None:
    for unread in plan.unread:
        env.pop(unread, None)  # inputs and constants no equation or output reads
    # IEEE results (nan from sqrt(-1), inf from an overflowing cast, ...) are the
    # defined semantics, as in XLA: NumPy's warnings about them are noise.
    with np.errstate(all="ignore"):
        for eqn, impl, unary, operands, params, out, shape, dtype, dead in plan.steps:
            raw = impl(operands(env), **params) if unary else impl(*operands(env), **params)
            if type(raw) is np.ndarray and raw.shape == shape and raw.dtype == dtype:
                env[out] = raw  # the common case: one result, already of its type
            else:  # (shape is None for several results)
                _store_checked(eqn, raw, env)
            for key in dead:
                del env[key]
            if after_equation is not None:
                after_equation(eqn, env)


def _store_checked(eqn: Eqn, raw: Any, env: Env) -> None:
    """Normalize and check an equation's results (any kind), then bind them."""
    outs = check_impl_outputs(eqn.primitive, raw, [v.aval for v in eqn.outputs])
    for var, value in zip(eqn.outputs, outs, strict=True):
        env[var.id] = value


# --- the plan: a Program resolved once for the loop above ----------------------------
#
# Nothing in the loop above depends on anything but the values: which impl an
# equation calls, where its operands are, what type its result must have and
# which values die after it are facts of the Program. They are worked out once
# per Program and kept on it (like ``transforms.ad``'s per-Program cache):
# Programs are not changed once traced (hand edits of an equation's params
# dict in tests are seen, as the plan holds that very dict).


class _Plan:
    """What evaluating a Program needs besides its inputs' values."""

    def __init__(self, program: Program, compiled: bool) -> None:
        self.program_id = id(program)
        self.compiled = compiled
        self.impl_generation = base.impl_generation()
        # Literals are read like variables, under negative keys of their own.
        self.literals: Env = {}
        last_use = _last_uses(program)
        self.steps = [self._step(eqn, i, last_use) for i, eqn in enumerate(program.eqns)]
        bound = [v.id for v in (*program.const_vars, *program.in_vars)]
        self.unread = [key for key in bound if key not in last_use]
        self.arrays = _ProgramArrays(program_arrays(program))

    def _step(self, eqn: Eqn, index: int, last_use: dict[int, int]) -> tuple:
        """(eqn, impl, unary, operands, params, out, shape, dtype, dead): ``operands(env)``
        is the operand (``unary``) or the tuple of operands; ``out``, ``shape`` and
        ``dtype`` are the result's key and type (None for several results); ``dead``
        the keys of the values no later equation or output reads."""
        keys = [self._key(atom) for atom in eqn.inputs]
        unary = len(keys) == 1
        operands = operator.itemgetter(*keys) if keys else _no_operands
        dying = {a.id for a in eqn.inputs if isinstance(a, Var) and last_use.get(a.id) == index}
        dying |= {v.id for v in eqn.outputs if v.id not in last_use}  # results nobody reads
        one = eqn.outputs[0] if len(eqn.outputs) == 1 else None
        if eqn.primitive.multiple_results or one is None:
            out = shape = dtype = None
        else:
            out, shape, dtype = one.id, one.aval.shape, one.aval.dtype
        if self.compiled:
            impl = base.program_function(eqn.primitive)
        else:
            impl = base.impl_function(eqn.primitive)
        return (eqn, impl, unary, operands, eqn.params, out, shape, dtype, tuple(dying))

    def _key(self, atom: Atom) -> int:
        if isinstance(atom, Var):
            return atom.id
        key = -1 - len(self.literals)
        self.literals[key] = atom.value
        return key


def _no_operands(env: Env) -> tuple:
    return ()


def _plan_of(program: Program, keep: bool = True, compiled: bool = False) -> _Plan:
    # one plan per way of running (compiled: refimpl's rules; else the impls)
    slot = "_interpreter_plan_compiled" if compiled else "_interpreter_plan"
    plan = program.__dict__.get(slot)
    if (
        plan is None
        or plan.program_id != id(program)  # a copy of the Program holds other arrays
        or plan.impl_generation != base.impl_generation()
    ):
        plan = _Plan(program, compiled)
        if keep:
            program.__dict__[slot] = plan
    return plan


def _last_uses(program: Program) -> dict[int, int]:
    """Var.id -> index of the last equation reading it (outputs: never dropped)."""
    last: dict[int, int] = {}
    for index, eqn in enumerate(program.eqns):
        for atom in eqn.inputs:
            if isinstance(atom, Var):
                last[atom.id] = index
    for atom in program.out_vars:
        if isinstance(atom, Var):
            last[atom.id] = len(program.eqns)
    return last


def _read(env: Env, atom: Atom) -> np.ndarray:
    if isinstance(atom, Literal):
        return atom.value
    return env[atom.id]


def _checked_input(var: Var, value: Any) -> np.ndarray:
    array = np.asarray(value)
    aval = var.aval
    if array.shape != aval.shape or array.dtype != aval.dtype:
        raise TypeError(
            f"eval_program: input is {array.dtype}{list(array.shape)}, "
            f"program expects {aval.str_short()}"
        )
    return array


# --- owned outputs and donated buffers ----------------------------------------------


def program_arrays(program: Program) -> list[np.ndarray]:
    """Every array a program holds itself: constants and literals, at any depth."""
    found = [np.asarray(c) for c in program.consts]
    for eqn in program.eqns:
        found += [atom.value for atom in eqn.inputs if isinstance(atom, Literal)]
        for sub in subprograms(eqn):
            found += program_arrays(sub)
    found += [atom.value for atom in program.out_vars if isinstance(atom, Literal)]
    return found


def _reusable(buffer: np.ndarray) -> bool:
    return bool(buffer.flags.owndata and buffer.flags.c_contiguous)


def _shares_any(value: np.ndarray, others: Sequence[np.ndarray]) -> bool:
    return any(np.may_share_memory(value, other) for other in others)


class _ProgramArrays:
    """:func:`program_arrays`, with their memory bounds for a quick overlap test.

    A program can hold hundreds of literals; testing an output against each of
    them with ``np.may_share_memory`` (a bounds check) cost more than running
    the program. The bounds of all of them are compared at once, and
    ``np.may_share_memory`` decides only for those whose bounds touch.
    """

    def __init__(self, arrays: list[np.ndarray]) -> None:
        self.arrays = arrays
        bounds = np.array([byte_bounds(a) for a in arrays], dtype=np.uint64).reshape(-1, 2)
        self.lows, self.highs = bounds[:, 0], bounds[:, 1]
        self.owners = {id(_owner(a)) for a in arrays}  # (kept alive by the arrays)

    def shared_with(self, value: np.ndarray) -> bool:
        """``_shares_any(value, self.arrays)``."""
        if value.base is None and id(value) not in self.owners:
            # an array owning its memory shares it only with itself and its
            # views, and no program array is either (most results, at once)
            return False
        low, high = byte_bounds(value)
        near = np.flatnonzero((self.lows <= high) & (self.highs >= low))
        return any(np.may_share_memory(value, self.arrays[k]) for k in near)


def _owner(array: np.ndarray) -> Any:
    """The object at the end of ``array``'s chain of bases (``array`` if it has none)."""
    while isinstance(array, np.ndarray) and array.base is not None:
        array = array.base  # (a base may be another kind of buffer: bytes, mmap, ...)
    return array


def write_into(buffer: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Overwrite a read-only owned ``buffer`` with ``value``; return ``buffer``.

    The buffer is writable only for the duration of this copy, so no other
    code path can mutate an array's memory.
    """
    buffer.flags.writeable = True
    try:
        np.copyto(buffer, value, casting="no")
    finally:
        buffer.flags.writeable = False
    return buffer


class _DonatedWriter:
    """Puts each aliased output into its donated input's buffer, as early as is safe.

    After the equation producing an aliased output, the result is written
    into the donated buffer at once if no live value can still see the old
    contents (the donated input is dead and nothing live is a view of it).
    Otherwise the write waits for the end of the program.
    """

    def __init__(
        self,
        program: Program,
        args: Sequence[np.ndarray],
        reuse: Mapping[int, int],
        on_overwrite: Callable[[int], None],
    ) -> None:
        self.program = program
        self.args = args
        self.on_overwrite = on_overwrite
        self.pending: dict[int, int] = {j: i for i, j in reuse.items()}  # output -> input
        self.written: set[int] = set()  # outputs already in their donated buffer
        self.outputs_of_var: dict[int, list[int]] = {}  # Var.id -> aliased outputs, in order
        for j in sorted(self.pending):
            atom = program.out_vars[j]
            if isinstance(atom, Var):
                self.outputs_of_var.setdefault(atom.id, []).append(j)

    def after_equation(self, eqn: Eqn, env: Env) -> None:
        if not self.pending:
            return
        for var in eqn.outputs:
            j = self._first_pending_output_of(var)
            if j is not None and var.id in env and self._safe_to_overwrite(j, var, env):
                env[var.id] = self._write(j, env[var.id])

    def _first_pending_output_of(self, var: Var) -> int | None:
        return next((j for j in self.outputs_of_var.get(var.id, ()) if j in self.pending), None)

    def _safe_to_overwrite(self, j: int, var: Var, env: Env) -> bool:
        buffer = self.args[self.pending[j]]
        return not any(
            np.may_share_memory(buffer, value) for key, value in env.items() if key != var.id
        )

    def _write(self, j: int, value: np.ndarray) -> np.ndarray:
        i = self.pending.pop(j)
        self.on_overwrite(i)
        self.written.add(j)
        return write_into(self.args[i], value)

    def finish(self, env: Env, owned_by_program: _ProgramArrays) -> list[np.ndarray]:
        values = [_read(env, atom) for atom in self.program.out_vars]
        results: list[np.ndarray | None] = [None] * len(values)
        claimed: list[np.ndarray] = [*self.args]  # and owned_by_program
        # 1. Plain outputs get a buffer of their own (a copy if they are an
        #    input, a constant, or another output), before any donated buffer
        #    is overwritten below.
        for j, value in enumerate(values):
            if j in self.pending:
                continue
            if j not in self.written and (
                _shares_any(value, claimed) or owned_by_program.shared_with(value)
            ):
                value = value.copy()
            results[j] = value
            claimed.append(value)
        # 2. A pending result that reads some input's memory is copied first,
        #    so writing one donated buffer cannot change another's result.
        for j in self.pending:
            if values[j] is not self.args[self.pending[j]] and _shares_any(values[j], self.args):
                values[j] = values[j].copy()
        # 3. Write the remaining aliased outputs into their donated buffers.
        for j in list(self.pending):
            results[j] = self._write(j, values[j])
        return results  # type: ignore[return-value]


# the rules of sub-program primitives evaluate through this (primitives.rule_context)
rule_context.eval_program = eval_program
rule_context.eval_compiled = eval_compiled
