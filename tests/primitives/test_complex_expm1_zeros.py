"""Complex expm1 and arcsinh special values as XLA's (found by the conformance fuzzer's
complex_special kind): the imaginary part is +0 whatever the sign of the argument's
zero (expm1(1.5 - 0j) is 3.48 + 0j; NumPy 3.48 - 0j), and the real part is never
-0 (expm1(-0 - 0j) is 0 + 0j), against JAX 0.10.2 on both backends."""

from __future__ import annotations

import itertools

import jax.numpy as jnp
import numpy as np

import refimpl as ri
import refimpl.numpy as rnp

_PARTS = [0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 3e38, -3e38, np.inf, -np.inf, np.nan]


def _assert_parts_equal(got, want) -> None:
    """NaN where JAX has NaN; other parts equal within float32 rounding, zeros and
    infinities with their signs."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype
    for g, w in [(got.real, want.real), (got.imag, want.imag)]:
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        numbers = ~np.isnan(w)
        np.testing.assert_array_equal(np.signbit(g[numbers]), np.signbit(w[numbers]))
        np.testing.assert_allclose(g[numbers], w[numbers], rtol=2e-6)


def test_complex_expm1_signs_of_zero_match_jax(backend):
    pairs = list(itertools.product(_PARTS, _PARTS))
    z = np.empty(len(pairs), np.complex64)
    z.real, z.imag = [a for a, _ in pairs], [b for _, b in pairs]
    want = jnp.expm1(z)
    _assert_parts_equal(rnp.expm1(rnp.asarray(z)), want)
    _assert_parts_equal(ri.jit(rnp.expm1)(z), want)


def test_complex_arcsinh_of_nan_and_infinite_parts_matches_jax(backend):
    """XLA's asinh of nan +- inf j is +inf + nan j whatever the NaN's sign bit (found by
    the fuzzer: arcsinh(-(nan + inf j)) was -inf + nan j, through asin's -i asin(i z))."""
    parts = [0.0, -0.0, 1.5, -1.5, np.inf, -np.inf, np.nan, -np.nan]
    pairs = list(itertools.product(parts, parts))
    z = np.empty(len(pairs), np.complex64)
    z.real, z.imag = [a for a, _ in pairs], [b for _, b in pairs]
    want = np.asarray(jnp.arcsinh(z))
    for got in (rnp.arcsinh(rnp.asarray(z)), ri.jit(rnp.arcsinh)(z)):
        got = np.asarray(got)
        for g, w in [(got.real, want.real), (got.imag, want.imag)]:
            np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
            numbers = ~np.isnan(w)
            np.testing.assert_allclose(g[numbers], w[numbers], rtol=2e-6)
