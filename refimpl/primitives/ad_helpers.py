"""Small building blocks of the primitives' jvp and transpose rules.

The rules themselves live next to their primitives; they follow the
conventions of :mod:`refimpl.transforms.ad_util` (``Zero`` symbolic zeros,
``float0`` tangents of integer values, ``UndefinedPrimal`` linear operands).
Everything here applies primitives through their ``lax`` functions, so it
works eagerly on concrete arrays and inside any trace alike. The primitive
modules import this module, so it reaches the primitives it applies through
:mod:`refimpl.primitives.rule_context`, whose slots they fill.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from refimpl import dtypes, tracing
from refimpl.core import ShapedArray
from refimpl.primitives import rule_context
from refimpl.transforms.ad_util import UndefinedPrimal, Zero, tangent_aval


def aval_of(value: Any) -> ShapedArray:
    """The abstract value of an operand, a ``Zero`` or an ``UndefinedPrimal``."""
    if isinstance(value, (Zero, UndefinedPrimal)):
        return value.aval
    if isinstance(value, np.ndarray) and value.dtype == dtypes.float0:
        return ShapedArray(value.shape, dtypes.float0)
    return tracing.get_aval(value, "jvp rule", 0)


def is_zero(tangent: Any) -> bool:
    """A tangent that is certainly zero: symbolic, or of the data-less ``float0``."""
    if isinstance(tangent, Zero):
        return True
    dtype = getattr(tangent, "dtype", None)
    return bool(dtype is not None and np.dtype(dtype) == dtypes.float0)


def zero_tangent(primal_aval: ShapedArray) -> Zero:
    """The symbolic zero tangent of a value of type ``primal_aval``."""
    return Zero(tangent_aval(primal_aval))


def scalar(value: Any, like: ShapedArray | Any) -> tracing.TypedScalar:
    """``value`` as a rank-0 constant of ``like``'s dtype and weak type (so that
    multiplying by it keeps a weak tangent weak, as in JAX)."""
    aval = like if isinstance(like, ShapedArray) else aval_of(like)
    return tracing.TypedScalar(value, aval.dtype, aval.weak_type)


def lax_const(value: Any, like: ShapedArray | Any) -> tracing.TypedScalar:
    """``value`` as a rank-0 constant of ``like``'s dtype, weakly typed only
    when ``like`` is a weakly typed rank-0 value: JAX's ``lax._const`` (so a
    constant next to a weak array is strong, where :func:`scalar` would copy
    the array's weak flag)."""
    aval = like if isinstance(like, ShapedArray) else aval_of(like)
    return tracing.TypedScalar(value, aval.dtype, aval.weak_type and not aval.shape)


def zeros(aval: ShapedArray) -> Any:
    """Zeros of type ``aval``, as an operand for other primitives: a rank-0
    one is a typed scalar (a literal inside a trace), ``float0`` zeros a
    data-less NumPy array. Rules return ``Zero`` rather than this."""
    if aval.dtype == dtypes.float0:
        return np.zeros(aval.shape, dtypes.float0)
    if aval.shape == ():
        return scalar(0, aval)  # a literal inside a trace: no equation
    return rule_context.broadcast_in_dim(scalar(0, aval), aval.shape, ())


def instantiate(tangent: Any, aval: ShapedArray | None = None) -> Any:
    """An array for ``tangent``: a ``Zero`` becomes zeros of its type."""
    if isinstance(tangent, Zero):
        return zeros(tangent.aval if aval is None else aval)
    return tangent


def broadcast_to(x: Any, shape: tuple[int, ...]) -> Any:
    """``x`` broadcast to ``shape`` as the elementwise primitives broadcast
    their operands: from rank 0, or from size-1 dims of the same rank."""
    aval = aval_of(x)
    if aval.shape == tuple(shape):
        return x
    if aval.shape == ():
        return rule_context.broadcast_in_dim(x, tuple(shape), ())
    if len(aval.shape) != len(shape) or any(
        d not in (1, s) for d, s in zip(aval.shape, shape, strict=True)
    ):
        raise AssertionError(f"internal error: cannot broadcast {aval.str_short()} to {shape}")
    return rule_context.broadcast_in_dim(x, tuple(shape), tuple(range(len(shape))))


def unbroadcast(ct: Any, aval: ShapedArray) -> Any:
    """The cotangent of an operand of type ``aval`` from the cotangent of an
    elementwise result: a rank-0 operand that was broadcast collects the sum,
    and so does each size-1 dim of an operand that was broadcast along it."""
    if isinstance(ct, Zero):
        return Zero(aval)
    ct_aval = aval_of(ct)
    if ct_aval.shape != aval.shape:
        if aval.shape == ():
            ct = rule_context.reduce_sum(ct, tuple(range(ct_aval.ndim)))
        else:
            axes = tuple(
                i for i, (c, d) in enumerate(zip(ct_aval.shape, aval.shape, strict=True)) if c != d
            )
            ct = rule_context.reshape(rule_context.reduce_sum(ct, axes), aval.shape)
    return convert(ct, aval.dtype)


def convert(x: Any, dtype: np.dtype) -> Any:
    """``x`` as ``dtype`` (nothing applied when it already is)."""
    if aval_of(x).dtype == dtype:
        return x
    return rule_context.convert_element_type_p.bind(
        x, new_dtype=np.dtype(dtype), weak_type=aval_of(x).weak_type
    )


def add_tangents(a: Any, b: Any) -> Any:
    """``a + b`` where either may be a symbolic ``Zero``."""
    if isinstance(a, Zero):
        return b
    if isinstance(b, Zero):  # pragma: no cover - its one caller, sum_tangents, passes a value
        return a
    return rule_context.add(a, b)


def sum_tangents(terms: Sequence[Any], out_aval: ShapedArray) -> Any:
    """The sum of ``terms`` (``Zero``s skipped), broadcast to ``out_aval``'s
    shape; ``Zero`` when every term is."""
    total: Any = Zero(tangent_aval(out_aval))
    for term in terms:
        # (no branch: every rule passes only the terms of its nonzero tangents)
        if not isinstance(term, Zero):  # pragma: no branch
            total = add_tangents(total, broadcast_to(term, out_aval.shape))
    return total


def zero_jvp(prim: Any) -> Callable[..., Any]:
    """A jvp rule for a primitive whose outputs do not depend differentiably
    on its inputs (integer or bool results, piecewise-constant functions):
    the primal result with a symbolic zero tangent."""

    def rule(primals: Sequence[Any], tangents: Sequence[Any], **params: Any) -> Any:
        out = prim.bind(*primals, **params)
        if prim.multiple_results:  # pragma: no cover - no such primitive uses zero_jvp
            return out, [zero_tangent(aval_of(o)) for o in out]
        return out, zero_tangent(aval_of(out))

    rule.__doc__ = f"``{prim.name}`` is piecewise constant: its tangent is zero."
    return rule


def linear_jvp(prim: Any) -> Callable[..., Any]:
    """The jvp rule of a primitive linear in all its operands: ``f(t)``, with
    ``Zero`` when every tangent is (and zeros filled in otherwise)."""

    def rule(primals: Sequence[Any], tangents: Sequence[Any], **params: Any) -> Any:
        out = prim.bind(*primals, **params)
        if all(is_zero(t) for t in tangents):
            return out, zero_tangent(aval_of(out))
        filled = [
            instantiate(t, tangent_aval(aval_of(p))) for p, t in zip(primals, tangents, strict=True)
        ]
        return out, prim.bind(*filled, **params)

    rule.__doc__ = f"``{prim.name}`` is linear: its tangent is ``{prim.name}`` of the tangents."
    return rule
