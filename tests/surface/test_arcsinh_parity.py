"""jnp.arcsinh (lax.asinh) as JAX 0.10.2: its derivative at 0 is 1 (it was
NaN: the unused log branch's 0 * inf, and abs's derivative 0 at 0), values
and derivatives over the float types from 0 to overflow, and a weak
argument gives a weak result. Both backends."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp

POINTS = [0.0, -0.0, 1e-30, -1e-20, 0.5, -0.5, 3.0, -3.0, 1e10, -1e19, 3e38, -3e38]


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
def test_values_and_derivatives_are_jaxs(backend, dtype):
    with np.errstate(over="ignore"):
        x = np.array(POINTS + [np.inf, -np.inf, np.nan], np.float32).astype(dtype)
    rtol = 2e-7 if dtype == np.float32 else 4e-3
    got, want = np.asarray(rnp.arcsinh(x)), np.asarray(jnp.arcsinh(x))
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol)
    dgot = np.asarray(ri.vmap(ri.grad(rnp.arcsinh))(x))
    dwant = np.asarray(jax.vmap(jax.grad(jnp.arcsinh))(x))
    np.testing.assert_allclose(  # (near overflow: refimpl 1/x, a subnormal; JAX 0)
        dgot.astype(np.float64), dwant.astype(np.float64), rtol=1e-2, atol=1e-37
    )


def test_derivative_at_zero_is_one_under_jit_and_weak_types_are_kept(backend):
    assert float(ri.jit(ri.grad(rnp.arcsinh))(np.float32(0))) == 1.0
    assert float(ri.grad(rnp.arcsinh)(0.0)) == float(jax.grad(jnp.arcsinh)(0.0)) == 1.0
    assert rnp.arcsinh(3.0).aval.weak_type == jnp.arcsinh(3.0).aval.weak_type
