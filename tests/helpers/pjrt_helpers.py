"""Shared helpers of the PJRT tests: skipping, and comparing pjrt with ref.

The reference interpreter is the definition of every primitive; the PJRT
backend must agree with it: exactly for integers and bools (and wherever both
compute a correctly rounded IEEE result), within a few ulps where the two
use different implementations of a transcendental function, and within a
rounding bound for sums whose order differs.
"""

from __future__ import annotations

import os
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import refimpl as ri
from refimpl.backends.pjrt import runtime as pjrt_runtime

BF16 = np.dtype(ml_dtypes.bfloat16)


def skip_without_pjrt() -> None:
    """Skip the calling test module when the native module or plugin is missing
    (a failure instead under ``REFIMPL_REQUIRE_NATIVE=1``, as in CI)."""
    try:
        pjrt_runtime.native_module()
    except ImportError as err:
        if os.environ.get("REFIMPL_REQUIRE_NATIVE") == "1":
            raise
        pytest.skip(f"native module unavailable: {err}", allow_module_level=True)
    if not pjrt_runtime.plugin_available():
        if os.environ.get("REFIMPL_REQUIRE_NATIVE") == "1":
            raise RuntimeError("REFIMPL_REQUIRE_NATIVE=1 but no PJRT plugin is installed")
        pytest.skip("no PJRT plugin installed", allow_module_level=True)


def run_both(fn: Any, *args: Any, **jit_kwargs: Any) -> tuple[Any, Any]:
    """``fn(*args)`` under ``jit`` on the reference backend and on PJRT."""
    ref = ri.jit(fn, backend="ref", **jit_kwargs)(*args)
    got = ri.jit(fn, backend="pjrt", **jit_kwargs)(*args)
    return ref, got


def assert_agree(ref: Any, got: Any, ulps: float = 0, atol: float = 0.0, where: str = "") -> None:
    """Same pytree, and per leaf: a PJRT array of the same shape, dtype and weak
    type whose value agrees with the reference (see :func:`assert_values_agree`)."""
    ref_leaves, ref_tree = ri.tree_flatten(ref)
    got_leaves, got_tree = ri.tree_flatten(got)
    assert ref_tree == got_tree, f"{where}: tree {got_tree} != {ref_tree}"
    paths = [p for p, _ in ri.tree_util.flatten_with_path_strings(ref)[0]]
    for path, r, g in zip(paths, ref_leaves, got_leaves, strict=True):
        label = f"{where}{path}"
        assert type(g).__name__ == "PjrtArray", f"{label}: got a {type(g).__name__}"
        assert (g.shape, g.dtype, g.weak_type) == (r.shape, r.dtype, r.weak_type), (
            f"{label}: pjrt {g.aval} != ref {r.aval}"
        )
        assert_values_agree(np.asarray(r), np.asarray(g), ulps=ulps, atol=atol, where=label)


def assert_values_agree(
    expected: np.ndarray, actual: np.ndarray, ulps: float = 0, atol: float = 0.0, where: str = ""
) -> None:
    """Exact for integers and bools. For floats: NaN where the reference has NaN,
    infinities equal, and finite values within ``ulps`` units in the last place
    of the larger magnitude plus ``atol``. Complex: real and imaginary parts
    separately, with ``atol`` growing with the magnitude."""
    assert expected.dtype == actual.dtype and expected.shape == actual.shape, where
    if expected.dtype.kind in "biu":
        mismatch = expected != actual
        assert not mismatch.any(), (
            f"{where}: {int(mismatch.sum())} elements differ, e.g. "
            f"ref {expected[mismatch][:5]} pjrt {actual[mismatch][:5]}"
        )
        return
    if expected.dtype.kind == "c":
        scale = np.abs(expected).astype(np.float64)
        for part in (np.real, np.imag):
            _assert_floats_agree(
                part(expected),
                part(actual),
                ulps,
                atol + ulps * _eps(part(expected).dtype) * scale,
                where,
            )
        return
    _assert_floats_agree(expected, actual, ulps, atol, where)


def _eps(dtype: np.dtype) -> float:
    return float(ml_dtypes.finfo(dtype).eps)


def _assert_floats_agree(
    expected: np.ndarray, actual: np.ndarray, ulps: float, atol: Any, where: str
) -> None:
    e = expected.astype(np.float64)
    a = actual.astype(np.float64)
    nan_e, nan_a = np.isnan(e), np.isnan(a)
    assert np.array_equal(nan_e, nan_a), (
        f"{where}: NaN at different places: ref {expected[nan_e != nan_a][:5]} "
        f"pjrt {actual[nan_e != nan_a][:5]}"
    )
    both_inf = np.isinf(e) & np.isinf(a)
    assert np.array_equal(e[both_inf], a[both_inf]), f"{where}: infinities of other signs"
    one_inf = np.isinf(e) != np.isinf(a)
    if one_inf.any():  # near the top of the range, one side may round to inf
        finite_side = np.where(np.isinf(e), a, e)[one_inf]
        assert ulps > 0 and np.all(np.abs(finite_side) >= _max(expected.dtype) / 2), (
            f"{where}: inf on one side only: ref {expected[one_inf][:5]} pjrt {actual[one_inf][:5]}"
        )
        assert np.array_equal(np.sign(e[one_inf]), np.sign(a[one_inf])), where
    finite = np.isfinite(e) & np.isfinite(a)
    spacing = np.spacing(np.maximum(np.abs(expected), np.abs(actual)).astype(expected.dtype))
    bound = ulps * np.abs(spacing.astype(np.float64)) + atol
    if np.ndim(bound):
        bound = np.broadcast_to(bound, e.shape)[finite]
    error = np.abs(e[finite] - a[finite])
    bad = error > bound
    assert not bad.any(), (
        f"{where}: {int(bad.sum())} values differ by more than {ulps} ulps + {atol}: "
        f"ref {expected[finite][bad][:5]} pjrt {actual[finite][bad][:5]}"
    )


def _max(dtype: np.dtype) -> float:
    return float(ml_dtypes.finfo(dtype).max)
