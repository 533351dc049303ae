"""Comparing an observation with what was expected.

Per leaf:

* arrays: shape, dtype and weak type must be equal; values exactly for
  bool and integer dtypes, within a tolerance counted in units in the last
  place (ulps) of the dtype for floating and complex dtypes (real and
  imaginary parts separately). NaN equals NaN; infinities must match
  exactly. The sign of zero is not compared (``Tolerance(signed_zeros=True)``:
  it is where both are zeros).
* errors: the built-in class (TypeError, ValueError, ...) must agree; an
  expected ``Raises`` also needs its message key to match.
* Python values: ``==``.

The tree structure must be equal before any leaf is looked at.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import numpy as np

from conformance.observe import (
    ANY,
    ArrayObs,
    AvalObs,
    DeletedObs,
    ErrorObs,
    Observation,
    Raises,
)

# Default float tolerance in ulps. f32/f64 allow for the few-ulp error of
# XLA's vectorized transcendental approximations; f16/bf16 results are
# computed in f32 and rounded, so a double rounding can move them one ulp.
DEFAULT_ULPS: dict[str, float] = {
    "float16": 2,
    "bfloat16": 2,
    "float32": 4,
    "float64": 4,
    "complex64": 4,
    "complex128": 4,
}


@dataclass(frozen=True)
class Tolerance:
    """How close floats must be: ``|a - b| <= ulps * ulp(max(|a|,|b|)) + atol``.

    ``ulps`` overrides the per-dtype default when given (a number for all
    dtypes or a dict by dtype name); ``atol`` is an absolute slack in units
    of the dtype's epsilon (useful where a result near 0 comes from
    cancellation, e.g. ``sin`` near pi).
    """

    ulps: float | dict[str, float] | None = None
    atol_eps: float = 0.0
    flush_denormals: bool = True
    # where both values are zeros, their signs must match (the complex_special fuzz kind)
    signed_zeros: bool = False

    def ulps_for(self, dtype: np.dtype) -> float:
        default = DEFAULT_ULPS.get(dtype.name, 4)
        if self.ulps is None:
            return default
        if isinstance(self.ulps, dict):
            return self.ulps.get(dtype.name, default)
        return self.ulps


EXACT = Tolerance(ulps=0)


def _float_info(dtype: np.dtype) -> Any:
    return ml_dtypes.finfo(dtype)


def ulp(magnitude: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The spacing of ``dtype`` numbers at ``magnitude`` (float64 array)."""
    info = _float_info(dtype)
    eps = float(info.eps)
    tiny = float(info.smallest_normal)
    subnormal = tiny * eps
    with np.errstate(divide="ignore"):
        exponent = np.floor(np.log2(np.maximum(magnitude, tiny)))
    return np.maximum(np.exp2(exponent) * eps, subnormal)


def _real_parts(x: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """[(name, part)]: the real and imaginary parts of complex arrays."""
    if np.iscomplexobj(x):
        return [("real", np.real(x)), ("imag", np.imag(x))]
    return [("", x)]


def _float_component_dtype(dtype: np.dtype) -> np.dtype:
    if dtype == np.complex64:
        return np.dtype(np.float32)
    if dtype == np.complex128:
        return np.dtype(np.float64)
    return dtype


def float_mismatch(
    expected: np.ndarray, actual: np.ndarray, tol: Tolerance
) -> tuple[np.ndarray, str] | None:
    """(mask of bad elements, description) or None if within tolerance.

    Complex values are compared part by part, with the ulp taken at the
    complex magnitude (a norm-wise error: ``(a+bi)(c+di)`` may lose the
    small part to cancellation).
    """
    dtype = expected.dtype
    part_dtype = _float_component_dtype(dtype)
    tiny = float(_float_info(part_dtype).smallest_normal)
    magnitude = np.maximum(_magnitude(expected), _magnitude(actual))
    bad_total = np.zeros(expected.shape, bool)
    notes = []
    complex_values = np.iscomplexobj(expected)
    for (part, e), (_, a) in zip(_real_parts(expected), _real_parts(actual), strict=True):
        e64, a64 = e.astype(np.float64), a.astype(np.float64)
        zero_bad = np.zeros(e64.shape, bool)
        if tol.signed_zeros:  # before flushing: a flushed subnormal is a zero of either sign
            zero_bad = (e64 == 0) & (a64 == 0) & (np.signbit(e64) != np.signbit(a64))
        if tol.flush_denormals:
            e64 = np.where(np.abs(e64) < tiny, 0.0, e64)
            a64 = np.where(np.abs(a64) < tiny, 0.0, a64)
        nan_e, nan_a = np.isnan(e64), np.isnan(a64)
        inf_e, inf_a = np.isinf(e64), np.isinf(a64)
        both_finite = ~(nan_e | nan_a | inf_e | inf_a)
        nan_bad = nan_e != nan_a
        inf_bad = (inf_e | inf_a) & ~(nan_e | nan_a) & (e64 != a64)
        with np.errstate(invalid="ignore", over="ignore"):
            diff = np.where(both_finite, np.abs(e64 - a64), 0.0)
            # (a complex value with a non-finite part has no finite magnitude: its
            # finite part is then taken at its own)
            own = np.maximum(np.abs(e64), np.abs(a64))
            scale = np.where(both_finite, np.maximum(magnitude, own) if complex_values else
                             own, 0.0)  # fmt: skip
            spacing = ulp(scale, part_dtype)
            allowed = tol.ulps_for(dtype) * spacing + tol.atol_eps * float(
                _float_info(part_dtype).eps
            )
            value_bad = both_finite & (diff > allowed)
        bad = nan_bad | inf_bad | value_bad | zero_bad
        label = f"{part} part " if complex_values else ""
        if value_bad.any():
            worst = float(np.max(np.where(value_bad, diff / spacing, 0)))
            notes.append(f"{label}off by up to {worst:.3g} ulps")
        if nan_bad.any():
            notes.append(f"{label}NaN in one and not the other")
        if inf_bad.any():
            notes.append(f"{label}infinities differ")
        if zero_bad.any():
            notes.append(f"{label}signs of zero differ")
        bad_total |= bad
    if not bad_total.any():
        return None
    return bad_total, "; ".join(notes)


def _magnitude(x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        m = np.abs(x.astype(np.complex128) if np.iscomplexobj(x) else x.astype(np.float64))
    return np.where(np.isfinite(m), m, 0.0)


def value_mismatch(expected: np.ndarray, actual: np.ndarray, tol: Tolerance) -> str | None:
    """A description of how the values differ, or None if they agree."""
    if expected.size == 0:
        return None
    if _is_float_like(expected.dtype):
        result = float_mismatch(expected, actual, tol)
        if result is None:
            return None
        bad, note = result
    else:  # bool and integers: exact
        bad = expected != actual
        note = "values differ"
    bad = np.asarray(bad)
    if not bad.any():
        return None
    index = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.ndim else ()
    count = int(bad.sum())
    return (
        f"{note}: {count} of {expected.size} elements; first at {list(index)}: "
        f"expected {_scalar(expected[index])}, got {_scalar(actual[index])}"
    )


def _is_float_like(dtype: np.dtype) -> bool:
    return dtype.kind in "fc" or dtype == ml_dtypes.bfloat16


def _scalar(x: Any) -> str:
    value = np.asarray(x)
    if value.dtype == ml_dtypes.bfloat16:
        return repr(float(value))
    return repr(value.item())


# --- leaves and trees ---------------------------------------------------------------------


@dataclass
class Comparison:
    """The differences found (empty: they agree)."""

    differences: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return not self.differences

    def add(self, path: str, text: str) -> None:
        self.differences.append(f"{path}: {text}")


def compare(
    expected: Observation, actual: Observation, impl_name: str, tol: Tolerance | None = None
) -> Comparison:
    """Compare ``actual`` (observed on ``impl_name``) against ``expected``."""
    tol = tol or Tolerance()
    result = Comparison()
    if expected.structure != actual.structure:
        got = actual.structure
        if actual.structure == "*" and isinstance(actual.leaves[0][1], ErrorObs):
            got = f"an error: {actual.leaves[0][1].describe()}"
        result.add("tree", f"structure differs: expected {expected.structure}, got {got}")
        return result
    for (path, want), (_, got) in zip(expected.leaves, actual.leaves, strict=True):
        text = leaf_mismatch(want, got, impl_name, tol)
        if text:
            result.add(path, text)
    return result


def leaf_mismatch(want: Any, got: Any, impl_name: str, tol: Tolerance) -> str | None:
    if want is ANY:
        return None
    if isinstance(want, Raises):
        return _raises_mismatch(want, got, impl_name)
    if isinstance(want, ErrorObs):
        if not isinstance(got, ErrorObs):
            return f"expected an error {want.describe()}, got {_describe(got)}"
        if want.kind != got.kind:
            return f"error class differs: expected {want.describe()}, got {got.describe()}"
        return None
    if isinstance(got, ErrorObs):
        return f"raised {got.describe()}; expected {_describe(want)}"
    if isinstance(want, ArrayObs):
        return _array_mismatch(want, got, tol)
    if isinstance(want, AvalObs):
        if not isinstance(got, AvalObs):
            return f"expected {want.describe()}, got {_describe(got)}"
        return _aval_mismatch(want, got)
    if isinstance(want, DeletedObs):
        return (
            None
            if isinstance(got, DeletedObs)
            else f"expected a deleted array, got {_describe(got)}"
        )
    if isinstance(got, (ArrayObs, AvalObs, DeletedObs)):
        return f"expected {want!r}, got {got.describe()}"
    try:
        equal = bool(want == got) and type(want) is type(got)
    except Exception:
        equal = False
    if not equal:
        return f"expected {want!r}, got {got!r}"
    return None


def _describe(x: Any) -> str:
    return x.describe() if hasattr(x, "describe") else repr(x)


def _raises_mismatch(want: Raises, got: Any, impl_name: str) -> str | None:
    if not isinstance(got, ErrorObs):
        return f"expected {want.describe()} to be raised, got {_describe(got)}"
    if want.exc_type.__name__ not in got.mro:
        return f"expected {want.describe()}, got {got.describe()}"
    key = want.key_for(impl_name)
    if key and not re.search(key, got.message, re.IGNORECASE | re.DOTALL):
        return f"error message does not match {key!r}: {got.describe()}"
    return None


def _aval_mismatch(want: Any, got: Any) -> str | None:
    problems = []
    if tuple(want.shape) != tuple(got.shape):
        problems.append(f"shape {tuple(got.shape)} != expected {tuple(want.shape)}")
    if np.dtype(want.dtype) != np.dtype(got.dtype):
        problems.append(f"dtype {np.dtype(got.dtype).name} != expected {np.dtype(want.dtype).name}")
    if want.weak_type is not None and got.weak_type is not None and want.weak_type != got.weak_type:
        problems.append(f"weak_type {got.weak_type} != expected {want.weak_type}")
    return "; ".join(problems) or None


def _array_mismatch(want: ArrayObs, got: Any, tol: Tolerance) -> str | None:
    if isinstance(got, DeletedObs):
        return f"got a deleted array; expected {want.describe()}"
    if not isinstance(got, ArrayObs):
        return f"expected an array {want.describe()}, got {_describe(got)}"
    problem = _aval_mismatch(want, got)
    if problem:
        return problem
    return value_mismatch(want.value, got.value, tol)


# --- per-platform tolerances ----------------------------------------------------------------
#
# The expectations were set on CPUs (the reference interpreter, XLA's CPU
# plugin). Accelerators compute some operations differently, by design, and
# those differences are allowed here, per platform, in the open: the runner
# first compares with the case's own tolerance and only then with the wider
# one below, and a result that passes only thanks to a rule says so (its
# detail names the rule; ``python -m conformance`` prints how many results
# used each rule). Bit-exact results (integers, bools, random bits) are never
# widened: ulps and atol_eps apply to floating dtypes only.


@dataclass(frozen=True)
class PlatformRule:
    """A wider tolerance for cases whose name matches ``pattern`` (a regex) on a platform."""

    name: str
    pattern: str
    tolerance: Tolerance
    reason: str


# TF32: XLA's GPU backend runs float32 (and complex64) dot/convolution at the
# default precision on tensor cores with 10-bit mantissa inputs (as
# jax.jit does on Ampere and later): each product is off by up to 2**-11
# relative, i.e. ~2**12 float32 ulps, and a sum of products with cancellation
# loses more relative to the result; atol_eps (units of float32 eps) covers
# results near 0.
_TF32 = Tolerance(ulps={"float32": 2**13, "complex64": 2**13}, atol_eps=2**14)
# Transcendentals: XLA's GPU backend calls libdevice or its own fused
# approximations (exp, log, tanh, erf, pow, ...), accurate to a few ulps in
# float32 and double-rounded for float16/bfloat16, not the CPU's values.
_TRANSCENDENTAL = Tolerance(
    ulps={"float16": 4, "bfloat16": 4, "float32": 16, "float64": 8, "complex64": 16,
          "complex128": 8},
    atol_eps=4,
)  # fmt: skip
# Reductions and scans: the GPU reduces in a different order (tree, atomics,
# warp shuffles): rounding differs by up to about log2(n) ulps of the sum of
# magnitudes, relative to the result much more where terms cancel.
_REORDERED = Tolerance(
    ulps={"float16": 8, "bfloat16": 8, "float32": 64, "float64": 64, "complex64": 64,
          "complex128": 64},
    atol_eps=64,
)  # fmt: skip

_GPU_RULES = (
    PlatformRule(
        "tf32-matmul",
        r"dot|matmul|einsum|tensordot|conv_general|conv_transpose|lax\.conv\b|conv/|linalg",
        _TF32,
        "float32 dot/convolution on tensor cores in TF32 (XLA GPU default precision)",
    ),
    PlatformRule(
        "transcendental",
        r"\b(exp|exp2|expm1|log|log1p|sin|cos|tan|tanh|sinh|cosh|asin|acos|atan|atan2|"
        r"arcsin|arccos|arctan|arctan2|logistic|erf|erfc|erf_inv|lgamma|digamma|igamma|"
        r"igammac|betainc|zeta|bessel\w*|pow|power|cbrt|rsqrt|sqrt|logsumexp|"
        r"cumlogsumexp|softmax|special_more|random|random_more)\b",
        _TRANSCENDENTAL,
        "libdevice / fused GPU approximations of transcendental functions",
    ),
    PlatformRule(
        "reordered-reduction",
        r"reduce_sum|reduce_prod|\bsum\b|\bmean\b|\bprod\b|cumsum|cumprod|scan|"
        r"associative_scan|reduce_window|\bvar\b|\bstd\b|norm|scatter_add|scatter_mul",
        _REORDERED,
        "reductions and scans in another order (tree/atomics) on the GPU",
    ),
)

PLATFORM_RULES: dict[str, tuple[PlatformRule, ...]] = {
    "cpu": (),
    "cuda": _GPU_RULES,
    "rocm": _GPU_RULES,
    # TPU: float32 matmuls default to bfloat16 passes (much wider than TF32);
    # not yet exercised, so no rule: a TPU run reports its differences.
    "tpu": (),
}


def platform_rules(platform: str, case_name: str) -> list[PlatformRule]:
    """The rules of ``platform`` whose pattern matches ``case_name`` (regex search)."""
    return [rule for rule in PLATFORM_RULES.get(platform, ()) if re.search(rule.pattern, case_name)]


def widen(base: Tolerance | None, rules: list[PlatformRule]) -> Tolerance:
    """``base`` (None: the defaults) widened to the loosest of ``rules`` per dtype."""
    base = base or Tolerance()
    if not rules:
        return base
    names = set(DEFAULT_ULPS)
    for rule in rules:
        if isinstance(rule.tolerance.ulps, dict):
            names |= set(rule.tolerance.ulps)
    ulps = {
        name: max(
            [base.ulps_for(np.dtype(_dtype_named(name)))]
            + [rule.tolerance.ulps_for(np.dtype(_dtype_named(name))) for rule in rules]
        )
        for name in names
    }
    atol = max([base.atol_eps] + [rule.tolerance.atol_eps for rule in rules])
    return Tolerance(ulps=ulps, atol_eps=atol, flush_denormals=base.flush_denormals)


def _dtype_named(name: str) -> Any:
    return ml_dtypes.bfloat16 if name == "bfloat16" else name
