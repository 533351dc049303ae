"""The complex-part primitives ``real``, ``imag``, ``complex`` and ``conj``.

Each reads or writes the two float parts of a complex number directly, as
XLA's ``real``/``imag``/``complex`` ops do, so a NaN or an infinity in one
part never reaches the other (``imag(nan + inf j)`` is ``inf``; a product
with ``-1j`` would give ``nan``)::

    real(z)       = Re z                    complex64 -> float32, complex128 -> float64
    imag(z)       = Im z
    complex(x, y) = the number with Re = x, Im = y   (float32 -> complex64)
    conj(z)       = complex(Re z, -Im z)

Constraints: (C1) ``real``/``imag``/``conj`` take complex64 or complex128;
(C2) ``complex`` takes float32 or float64 operands of one dtype, whose
shapes broadcast as a binary elementwise primitive's (rank 0, or size-1
dims). A result is weakly typed iff every operand is (``real(1 + 2j)`` is a
weak float32, as JAX's ``unop``/``naryop`` rule).
Example: ``complex([0., inf], [nan, -0.])`` is ``[0+nan j, inf-0j]``, and
``imag`` of it is ``[nan, -0.]``.

All four are linear: the JVP applies the primitive to the tangent, and the
transposes are JAX's: ``real``'s cotangent is ``complex(ct, 0)``, ``imag``'s
``complex(0, -ct)`` (the zero a strong constant, so the cotangent of a weak
input is strong, as in JAX 0.10.2), ``complex``'s ``(real ct, imag(-ct))``
and ``conj``'s ``conj ct``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import tracing
from refimpl.core import ShapedArray
from refimpl.primitives import ad_helpers, batch_rules
from refimpl.primitives import elementwise as ew
from refimpl.primitives.base import Primitive, all_weak

__all__ = ["complex", "conj", "imag", "real"]

_COMPLEX_OF: dict[np.dtype, np.dtype] = {
    np.dtype(np.float32): np.dtype(np.complex64),
    np.dtype(np.float64): np.dtype(np.complex128),
}
_REAL_OF: dict[np.dtype, np.dtype] = {c: f for f, c in _COMPLEX_OF.items()}


def _check_complex(name: str, x: ShapedArray) -> None:
    if x.dtype not in _REAL_OF:
        raise TypeError(f"{name}: the operand must be complex64 or complex128, got {x.dtype.name}")


real_p = Primitive("real")
imag_p = Primitive("imag")
complex_p = Primitive("complex")
conj_p = Primitive("conj")


def _part_abstract_eval(name: str):
    def rule(x: ShapedArray) -> ShapedArray:
        _check_complex(name, x)
        return ShapedArray(x.shape, _REAL_OF[x.dtype], x.weak_type)

    return rule


real_p.def_abstract_eval(_part_abstract_eval("real"))
imag_p.def_abstract_eval(_part_abstract_eval("imag"))


@complex_p.def_abstract_eval
def _complex_abstract_eval(x: ShapedArray, y: ShapedArray) -> ShapedArray:
    for aval, arg in ((x, "x"), (y, "y")):
        if aval.dtype not in _COMPLEX_OF:
            raise TypeError(f"complex: {arg} must be float32 or float64, got {aval.dtype.name}")
    if x.dtype != y.dtype:
        raise TypeError(
            f"complex requires arguments to have the same dtypes, got {x.dtype.name}, "
            f"{y.dtype.name}"
        )
    shape = ew.broadcasting_shape("complex", [x, y])
    return ShapedArray(shape, _COMPLEX_OF[x.dtype], all_weak([x, y]))


@conj_p.def_abstract_eval
def _conj_abstract_eval(x: ShapedArray) -> ShapedArray:
    _check_complex("conj", x)
    return x


# --- impl: the formula, part by part (no arithmetic touches the other part) -----------


@real_p.def_impl
def _real_impl(x: np.ndarray) -> np.ndarray:
    return np.array(x.real)


@imag_p.def_impl
def _imag_impl(x: np.ndarray) -> np.ndarray:
    return np.array(x.imag)


@complex_p.def_impl
def _complex_impl(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    out = np.empty(np.broadcast_shapes(x.shape, y.shape), _COMPLEX_OF[x.dtype])
    out.real = x
    out.imag = y
    return out


@conj_p.def_impl
def _conj_impl(x: np.ndarray) -> np.ndarray:
    return np.conjugate(x)


# --- differentiation: linear ------------------------------------------------------------

for _prim in (real_p, imag_p, complex_p, conj_p):
    _prim.def_jvp(ad_helpers.linear_jvp(_prim))


def _strong_zero(ct: Any) -> tracing.TypedScalar:
    return tracing.TypedScalar(0, ad_helpers.aval_of(ct).dtype, False)


@real_p.def_transpose
def _real_transpose(ct, x):
    # unreachable from the public API: the backward pass never passes a symbolic Zero to a
    # single-output rule (ad.backward_pass)
    if isinstance(ct, ad_helpers.Zero):  # pragma: no cover
        return [ad_helpers.Zero(x.aval)]
    return [complex_p.bind(ct, _strong_zero(ct))]


@imag_p.def_transpose
def _imag_transpose(ct, x):
    if isinstance(ct, ad_helpers.Zero):  # pragma: no cover (as real's)
        return [ad_helpers.Zero(x.aval)]
    return [complex_p.bind(_strong_zero(ct), ew.neg(ct))]


@complex_p.def_transpose
def _complex_transpose(ct, x, y):
    if isinstance(ct, ad_helpers.Zero):  # pragma: no cover (as real's)
        return [
            ad_helpers.Zero(v.aval) if isinstance(v, ad_helpers.UndefinedPrimal) else None
            for v in (x, y)
        ]
    outs = []
    for operand, part in ((x, real_p.bind(ct)), (y, imag_p.bind(ew.neg(ct)))):
        if not isinstance(operand, ad_helpers.UndefinedPrimal):
            outs.append(None)
        else:
            outs.append(ad_helpers.unbroadcast(part, operand.aval))
    return outs


@conj_p.def_transpose
def _conj_transpose(ct, x):
    if isinstance(ct, ad_helpers.Zero):  # pragma: no cover (as real's)
        return [ad_helpers.Zero(x.aval)]
    return [conj_p.bind(ct)]


# --- batching and masking: elementwise ---------------------------------------------------

for _prim in (real_p, imag_p, complex_p, conj_p):
    _prim.def_batch(batch_rules.elementwise_batch_rule(_prim))
    _prim.def_mask(ew._elementwise_mask_rule)


# --- lowering to StableHLO: XLA's real, imag and complex ops -----------------------------


@real_p.def_lowering
def _real_lowering(ctx, x):
    return [ctx.hlo.real(x)]


@imag_p.def_lowering
def _imag_lowering(ctx, x):
    return [ctx.hlo.imag(x)]


@complex_p.def_lowering
def _complex_lowering(ctx, x, y):
    return [ctx.hlo.complex(*ctx.broadcast_operands(x, y))]


@conj_p.def_lowering
def _conj_lowering(ctx, x):
    # StableHLO has no conj op; JAX lowers it the same way
    return [ctx.hlo.complex(ctx.hlo.real(x), ctx.hlo.negate(ctx.hlo.imag(x)))]


# --- the functions -----------------------------------------------------------------------


def real(x: Any) -> Any:
    """The real part of complex ``x`` (a float array)."""
    return real_p.bind(x)


def imag(x: Any) -> Any:
    """The imaginary part of complex ``x`` (a float array)."""
    return imag_p.bind(x)


def complex(x: Any, y: Any) -> Any:  # noqa: A001 (lax's name)
    """``x + i y`` from float32 or float64 parts of one dtype."""
    return complex_p.bind(x, y)


def conj(x: Any) -> Any:
    """The complex conjugate of complex ``x``."""
    return conj_p.bind(x)
