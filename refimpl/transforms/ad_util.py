"""Shared vocabulary of the differentiation rules (``refimpl.transforms.ad``).

Every differentiable primitive carries a ``jvp_rule`` and every linear one a
``transpose_rule``, written next to its other rules in its module. They use
only what is defined here and ``bind`` of other primitives, so a rule can be
applied to concrete NumPy values (eagerly) as well as inside any trace.

JVP rule
    ``jvp_rule(primals, tangents, **params) -> (primal_out, tangent_out)``

    ``primals`` and ``tangents`` are lists, one entry per operand. A tangent
    is either an array-like of the tangent type of its primal
    (``tangent_aval``) or ``Zero(aval)``, a *symbolic* zero that costs
    nothing. A rule returns ``Zero`` when its output tangent is zero for
    structural reasons (an integer output, all input tangents zero), so that
    zeros stay symbolic through a program. For ``multiple_results``
    primitives both outputs are lists.

Transpose rule (linear primitives only)
    ``transpose_rule(cts, *args, **params) -> list`` (one entry per operand)

    ``args`` are the primitive's operands; the *linear* ones are
    ``UndefinedPrimal(aval)`` (their value is what the transpose computes a
    cotangent for), the others are ordinary values (constants of the linear
    map). ``cts`` is the output cotangent (a list for ``multiple_results``),
    possibly ``Zero``. The rule returns the cotangent of each operand: a value
    or ``Zero`` for the ``UndefinedPrimal`` ones, ``None`` for the others.
    Formally, for ``y = f(x)`` linear in ``x``, it computes ``f^T(ct)`` with
    ``<f(x), ct> == <x, f^T(ct)>``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from refimpl import dtypes, tracing
from refimpl.core import ShapedArray


def tangent_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype of a tangent for a primal of ``dtype``: itself for inexact
    types, ``float0`` (a zero-size type carrying no data) for integers and
    bools, as in JAX."""
    if dtypes.is_inexact(dtype):
        return dtype
    return dtypes.float0


def tangent_aval(aval: ShapedArray) -> ShapedArray:
    """The type of a tangent of ``aval`` (weak type kept for inexact types)."""
    dtype = tangent_dtype(aval.dtype)
    return ShapedArray(aval.shape, dtype, aval.weak_type and dtype == aval.dtype)


def transposed_outputs(linear: Sequence[bool], avals: Sequence[ShapedArray]) -> list[bool]:
    """Which inputs of a sub-program get an output in its transpose: the
    linear ones, except integer and bool ones, whose cotangent is a float0
    zero that a program cannot return (the caller passes it on as a zero)."""
    return [
        lin and tangent_dtype(a.dtype) != dtypes.float0
        for lin, a in zip(linear, avals, strict=True)
    ]


def spread_cotangents(
    cts: Sequence[Any], linear: Sequence[bool], avals: Sequence[ShapedArray]
) -> list[Any]:
    """The cotangents of a sub-program's inputs from its transpose's outputs
    ``cts`` (one per ``transposed_outputs`` entry that is True): a float0
    ``Zero`` for a linear input the transpose does not return, None for a
    non-linear one."""
    it = iter(cts)
    emitted = transposed_outputs(linear, avals)
    return [
        next(it) if out else Zero(tangent_aval(a)) if lin else None
        for out, lin, a in zip(emitted, linear, avals, strict=True)
    ]


class Zero:
    """A symbolic zero tangent or cotangent of type ``aval``.

    Rules receive and may return it; it is instantiated into an array only
    where a real value is needed (at the API boundary, or when a non-zero
    must be added to it).
    """

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray) -> None:
        self.aval = aval

    @staticmethod
    def from_primal_value(value: Any) -> Zero:
        return Zero(tangent_aval(tracing.get_aval(value, "Zero", 0)))

    def __repr__(self) -> str:
        return f"Zero({self.aval.str_short()})"


class UndefinedPrimal:
    """A linear operand in a transpose rule: only its type is known."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray) -> None:
        self.aval = aval

    def __repr__(self) -> str:
        return f"UndefinedPrimal({self.aval.str_short()})"


def is_undefined_primal(x: Any) -> bool:
    return isinstance(x, UndefinedPrimal)


def no_forward_mode_error(message: str) -> TypeError:
    """The TypeError of forward mode of a function that defines only reverse
    mode (a ``custom_vjp``'s JVP), marked so that a construct whose
    linearization traces its body's forward mode (``while_loop``) can defer
    it, as JAX's ``custom_lin`` does, to the evaluation of the linear part."""
    error = TypeError(message)
    error.refimpl_no_forward_mode = True  # type: ignore[attr-defined]
    return error


def is_no_forward_mode_error(error: BaseException) -> bool:
    return getattr(error, "refimpl_no_forward_mode", False) is True


def constant_residual(r: Any) -> Any:
    """A custom_vjp residual leaf as bwd sees it when it is a constant, else None: a
    Python number (bool, int, float, complex) as it is, as JAX 0.10.2 (its
    TypedInt/TypedFloat/TypedComplex, also under jit, scan and checkpoint).
    An int out of its canonical dtype's range stays an operand (and its
    conversion error). A NumPy scalar or 0-d array is a constant too, a 0-d
    NumPy array of its canonical dtype (JAX's TypedNdArray: ``np.float64(4.)``
    reaches bwd as float32 without x64), in every context. Larger NumPy
    data stays an operand: JAX keeps it constant only where the call is
    linearized directly; inside a differentiated jit, checkpoint or scan it
    is traced."""
    if isinstance(r, (np.generic, np.ndarray)):  # first: np.float64 is a float
        if r.ndim != 0 or r.dtype.kind == "O" or r.dtype == dtypes.float0:
            return None
        return np.asarray(r, dtypes.canonicalize_dtype(r.dtype))
    if isinstance(r, (bool, float, complex)):
        return r
    if isinstance(r, int):
        info = np.iinfo(dtypes.canonicalize_dtype(np.int64))
        return r if info.min <= r <= info.max else None
    return None
