"""Complex ``arctan`` and ``arctanh`` against JAX 0.10.2 on both backends, eager
and jit, complex64 and complex128: NaN, infinite, huge and signed-zero parts
give XLA's results exactly (``arctan(nan + 0j)`` is ``nan + 0j``,
``arctanh(0 + inf j)`` is ``0 + pi/2 j``), finite values agree to a few ulps,
and the derivatives are JAX's."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.lax as rlax
import refimpl.numpy as rnp
from conformance.corpus._tables import complex_pairs

_PARTS = [0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 3e38, -3e38, np.inf, -np.inf, np.nan]

_FNS = {
    "arctan": (rnp.arctan, jnp.arctan),
    "arctanh": (rnp.arctanh, jnp.arctanh),
    "lax.atan": (rlax.atan, jax.lax.atan),
    "lax.atanh": (rlax.atanh, jax.lax.atanh),
}


def _grid(dtype) -> np.ndarray:
    return complex_pairs(_PARTS, dtype)


def _assert_close_parts(got, want, ulps: int = 4) -> None:
    """Same dtype; NaN where ``want`` has NaN; zeros and infinities exactly, with
    their signs; finite values within ``ulps`` ulps and of the same sign."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype
    for g, w in [(got.real, want.real), (got.imag, want.imag)]:
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        exact = ~np.isfinite(w) | (w == 0) | ~np.isfinite(g) | (g == 0)
        np.testing.assert_array_equal(g[exact], w[exact])
        np.testing.assert_array_equal(np.signbit(g[~np.isnan(w)]), np.signbit(w[~np.isnan(w)]))
        rest = ~exact & ~np.isnan(w)
        tol = ulps * np.spacing(np.abs(w[rest]))
        assert np.all(np.abs(g[rest] - w[rest]) <= tol), (g[rest], w[rest])


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("name", sorted(_FNS))
def test_nonfinite_parts_match_jax(backend, name, jit):
    ours, theirs = _FNS[name]
    z = _grid(np.complex64)
    fn = ri.jit(ours) if jit else ours
    _assert_close_parts(fn(rnp.asarray(z)), theirs(jnp.asarray(z)))


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("name", ["arctan", "arctanh"])
def test_nonfinite_parts_match_jax_complex128(backend, x64, name, jit):
    ours, theirs = _FNS[name]
    z = _grid(np.complex128)
    fn = ri.jit(ours) if jit else ours
    _assert_close_parts(fn(rnp.asarray(z)), theirs(jnp.asarray(z)))


@pytest.mark.parametrize("name", ["arctan", "arctanh"])
def test_finite_values_match_jax(backend, name):
    ours, theirs = _FNS[name]
    rng = np.random.default_rng(0)
    scale = np.exp(rng.uniform(-20, 20, (2, 500)))
    z = (rng.standard_normal(500) * scale[0] + 1j * rng.standard_normal(500) * scale[1]).astype(
        np.complex64
    )
    _assert_close_parts(ours(rnp.asarray(z)), theirs(jnp.asarray(z)))


@pytest.mark.parametrize("name", ["arctan", "arctanh"])
def test_jvp_matches_jax(backend, name):
    ours, theirs = _FNS[name]
    t = np.complex64(1.0 + 0.5j)
    for z in [np.complex64(0.3 - 0.7j), np.complex64(0), np.complex64(2 - 0j)]:
        got = ri.jvp(ours, (z,), (t,))
        want = jax.jvp(theirs, (z,), (t,))
        np.testing.assert_allclose(np.asarray(got[0]), np.asarray(want[0]), rtol=1e-6)
        np.testing.assert_allclose(np.asarray(got[1]), np.asarray(want[1]), rtol=1e-6)
