"""Complex functions' zero parts and special values as XLA's, against JAX 0.10.2 on
both backends (found by the conformance fuzzer's complex_special kind; NumPy's signs
differ): expm1's imaginary part is +0 for a zero imaginary argument of either sign
(expm1(1.5 - 0j) is 3.48 + 0j) and its real part never -0; exp, sqrt, sin, cos, tan,
sinh, cosh, tanh, arcsin, arccos, arcsinh give their zero parts XLA's sign;
arcsinh(nan +- inf j) is +inf + nan j whatever the NaN's sign bit."""

from __future__ import annotations

import itertools

import jax.numpy as jnp
import numpy as np
import pytest

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


_GRID = [0.0, -0.0, 1e-30, -1e-30, 0.5, -0.5, 1.5, -1.5, 2.0, -2.0, 10.0, -10.0, 100.0, -100.0,
         3e38, -3e38, np.inf, -np.inf, np.nan]  # fmt: skip


@pytest.mark.parametrize("name", ["exp", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh",
                                  "arcsin", "arccos", "arcsinh", "log", "log1p"])  # fmt: skip
def test_complex_zero_parts_have_xla_signs(backend, name):
    """A zero part of a complex result has XLA's sign (exp(0.5 - 0j) is 1.65 + 0j, NumPy's
    1.65 - 0j; sin(-0 + 0.5j) is 0 + 0.52j; arccos(0.5 - 0j) is 1.05 - 0j), eager and
    under jit."""
    pairs = list(itertools.product(_GRID, _GRID))
    z = np.empty(len(pairs), np.complex64)
    z.real, z.imag = [a for a, _ in pairs], [b for _, b in pairs]
    want = np.asarray(getattr(jnp, name)(z))
    ours = getattr(rnp, name)
    for got in (np.asarray(ours(rnp.asarray(z))), np.asarray(ri.jit(ours)(z))):
        for g, w in [(got.real, want.real), (got.imag, want.imag)]:
            zeros = (g == 0) & (w == 0)
            np.testing.assert_array_equal(np.signbit(g[zeros]), np.signbit(w[zeros]))
