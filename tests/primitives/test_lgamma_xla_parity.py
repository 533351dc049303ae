"""float32 ``lax.lgamma`` as JAX 0.10.2's: XLA's expansion of ``chlo.lgamma``
(Lanczos, g = 7), not the correctly rounded value, so that the reference
backend, pjrt's eager path on host data (the reference's impl) and pjrt's
jit (XLA) agree with JAX (lax_test testOp's lgamma case compares the jit
with the eager call: on pjrt those differed by 1.6e-6 near lgamma's zeros).
Bits against JAX live; in the reflection (x < 1/2) the host's ``sinf`` may
differ from XLA's by an ulp (98.9 % bit-equal on (-20, 1/2))."""

from __future__ import annotations

import jax
import ml_dtypes
import numpy as np

import refimpl as ri
from refimpl import lax


def _ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    def ordered(x: np.ndarray) -> np.ndarray:
        bits = x.astype(np.float32).view(np.int32).astype(np.int64)
        return np.where(bits < 0, -(bits & 0x7FFFFFFF), bits)

    same = (a == b) | (np.isnan(a) & np.isnan(b))
    return np.where(same, 0, np.abs(ordered(a) - ordered(b)))


def test_float32_lgamma_is_xlas(backend):
    rng = np.random.default_rng(0)
    upper = np.concatenate(
        [rng.uniform(0.5, 3, 20000), rng.uniform(3, 1e6, 5000), [0.5, 1, 2, 3e38, np.inf]]
    ).astype(np.float32)
    lower = np.concatenate(
        [rng.uniform(-20, 0.5, 20000), rng.uniform(1e-6, 1e-2, 2000), [0, -0.0, -1, -2.5]]
    ).astype(np.float32)
    for x in (upper, lower):
        want = np.asarray(jax.lax.lgamma(x))
        for got in (lax.lgamma(x), ri.jit(lax.lgamma)(x), ri.scipy.special.gammaln(x)):
            ulps = _ulps(np.asarray(got), want)
            if x is upper:
                assert ulps.max() == 0  # bit for bit
            else:
                # an ulp of log|sin| is more ulps of the result near its zeros
                assert np.mean(ulps == 0) > 0.98, np.mean(ulps == 0)
                np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-6)
    for dtype in (np.float16, ml_dtypes.bfloat16):  # computed in float32, rounded once
        x = rng.uniform(0.5, 8, 4000).astype(dtype)
        np.testing.assert_array_equal(np.asarray(lax.lgamma(x)), np.asarray(jax.lax.lgamma(x)))


def test_eager_on_host_data_matches_the_jit():
    """lax_test testOp(lgamma, float32) on pjrt: ``jit(op)(numpy)`` against
    ``op(numpy)`` (the latter runs on the reference backend) within 1e-6."""
    ri.config.update("backend", "pjrt")
    x = np.random.default_rng(1).uniform(0.01, 5, (2, 3, 4)).astype(np.float32)
    np.testing.assert_allclose(
        np.asarray(ri.jit(lax.lgamma)(x)), np.asarray(lax.lgamma(x)), rtol=1e-6, atol=1e-6
    )
