"""Complex functions' zero parts and special values as XLA's, against JAX 0.10.2 on
both backends (found by the conformance fuzzer's complex_special kind; NumPy's signs
differ): expm1's imaginary part is +0 for a zero imaginary argument of either sign
(expm1(1.5 - 0j) is 3.48 + 0j) and its real part never -0; exp, sqrt, sin, cos, tan,
sinh, cosh, tanh, arcsin, arccos, arcsinh give their zero parts XLA's sign;
arcsinh(nan +- inf j) is +inf + nan j whatever the NaN's sign bit."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from conformance.corpus._tables import complex_pairs

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
    z = complex_pairs(_PARTS, np.complex64)
    want = jnp.expm1(z)
    _assert_parts_equal(rnp.expm1(rnp.asarray(z)), want)
    _assert_parts_equal(ri.jit(rnp.expm1)(z), want)


def test_complex_arcsinh_of_nan_and_infinite_parts_matches_jax(backend):
    """XLA's asinh of nan +- inf j is +inf + nan j whatever the NaN's sign bit (found by
    the fuzzer: arcsinh(-(nan + inf j)) was -inf + nan j, through asin's -i asin(i z))."""
    parts = [0.0, -0.0, 1.5, -1.5, np.inf, -np.inf, np.nan, -np.nan]
    z = complex_pairs(parts, np.complex64)
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
    z = complex_pairs(_GRID, np.complex64)
    want = np.asarray(getattr(jnp, name)(z))
    ours = getattr(rnp, name)
    for got in (np.asarray(ours(rnp.asarray(z))), np.asarray(ri.jit(ours)(z))):
        for g, w in [(got.real, want.real), (got.imag, want.imag)]:
            zeros = (g == 0) & (w == 0)
            np.testing.assert_array_equal(np.signbit(g[zeros]), np.signbit(w[zeros]))


def test_complex_arcsin_arccos_of_large_part_and_nan_match_jax(backend):
    """XLA's large-argument branch (|Re z| >= sqrt(max) / 8, 2.3e18 in float32) holds with
    a NaN imaginary part: arcsin(3e38 + nan j) is nan + 89.29j (NumPy: nan + nan j),
    arccos's imaginary part negated, arcsinh(nan + 3e38j) is 89.29 + nan j; whatever the
    NaN's sign bit (arcsin(inf - nan j) is nan + inf j)."""
    xs = [0.0, 1.5, -1.5, 2.3e18, 2.305843e18, 2.3058431e18, 2.31e18, -3e18, 1e30, 3e38, -3e38,
          np.inf, -np.inf, np.nan, -np.nan]  # fmt: skip
    ys = [np.nan, -np.nan, 0.5, 3e38, np.inf]
    pairs = [p for x in xs for y in ys for p in ((x, y), (y, x))]
    z = np.empty(len(pairs), np.complex64)
    z.real, z.imag = [a for a, _ in pairs], [b for _, b in pairs]
    for name in ("arcsin", "arccos", "arcsinh"):
        want = np.asarray(getattr(jnp, name)(z))
        ours = getattr(rnp, name)
        for got in (np.asarray(ours(rnp.asarray(z))), np.asarray(ri.jit(ours)(z))):
            for g, w in [(got.real, want.real), (got.imag, want.imag)]:
                np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=name)
                numbers = ~np.isnan(w)
                # (atol: XLA's CPU code flushes a subnormal result, arcsin(1.5 + 3e38j)'s
                # real part 5e-39, to zero)
                np.testing.assert_allclose(
                    g[numbers], w[numbers], rtol=2e-6, atol=np.finfo(np.float32).tiny, err_msg=name
                )


def test_complex_log1p_near_the_largest_float_matches_jax(backend):
    """log1p(3e38 + 3e38j) is 88.9 + 0.79j in XLA; NumPy's complex64 log1p overflows
    |1 + z| to inf (found by the fuzzer)."""
    parts = [0.5, -1.5, 1e20, -1e20, 1e38, 2e38, -2e38, 3e38, -3e38, 3.4e38, np.inf, np.nan]
    z = complex_pairs(parts, np.complex64)
    want = np.asarray(jnp.log1p(z))
    for got in (np.asarray(rnp.log1p(rnp.asarray(z))), np.asarray(ri.jit(rnp.log1p)(z))):
        for g, w in [(got.real, want.real), (got.imag, want.imag)]:
            np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
            numbers = ~np.isnan(w)
            # (atol: XLA's CPU code flushes subnormal results, 0.5 / 1e38, to zero)
            np.testing.assert_allclose(
                g[numbers], w[numbers], rtol=2e-6, atol=np.finfo(np.float32).tiny
            )
