"""The reference interpreter: evaluates a Program with NumPy.

This is the definition of what a Program means. Each equation's primitive
``impl`` is applied to the NumPy values of its inputs, and its results are
checked against the types the IR promised, so an impl bug is caught at the
equation that has it, not three ops later.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from refimpl.core import Atom, Literal, Program, Var
from refimpl.primitives.base import check_impl_outputs


def eval_program(program: Program, args: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Evaluate ``program`` on NumPy ``args`` (one per ``in_vars``)."""
    if len(args) != len(program.in_vars):
        raise TypeError(
            f"eval_program: program takes {len(program.in_vars)} inputs, got {len(args)}"
        )
    env: dict[int, np.ndarray] = {}
    for var, value in zip(program.const_vars, program.consts, strict=True):
        env[var.id] = np.asarray(value)
    for var, value in zip(program.in_vars, args, strict=True):
        env[var.id] = _checked_input(var, value)
    for eqn in program.eqns:
        inputs = [_read(env, atom) for atom in eqn.inputs]
        raw = eqn.primitive.impl(*inputs, **eqn.params)
        outs = check_impl_outputs(eqn.primitive, raw, [v.aval for v in eqn.outputs])
        for var, value in zip(eqn.outputs, outs, strict=True):
            env[var.id] = value
    return [_read(env, atom) for atom in program.out_vars]


def _read(env: dict[int, np.ndarray], atom: Atom) -> np.ndarray:
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
