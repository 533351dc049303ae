"""IEEE results are values, not warnings: the reference evaluates nan/inf
producing operations quietly, as XLA (and so JAX) does. Oracle: JAX's values;
the check is that no RuntimeWarning escapes (turned into an error here)."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp

CASES = [
    ("sqrt", lambda m, x: m.sqrt(x), np.array([-1.0, 4.0], np.float32)),
    ("log", lambda m, x: m.log(x), np.array([0.0, -1.0, 2.0], np.float32)),
    ("arcsin", lambda m, x: m.arcsin(x), np.array([2.0, 0.5], np.float32)),
    ("divide", lambda m, x: x / m.zeros_like(x), np.array([1.0, 0.0, -1.0], np.float32)),
    ("exp_f16", lambda m, x: m.exp(x), np.array([20.0, 1.0], np.float16)),
    ("cast_f16", lambda m, x: x.astype(m.float16), np.array([1e6, -1e6, 3.0], np.float32)),
]


@pytest.mark.parametrize("backend", ["eager", "ref", "pjrt"])
@pytest.mark.parametrize(("name", "f", "x"), CASES, ids=[c[0] for c in CASES])
def test_no_warning_and_jax_values(backend, name, f, x):
    want = np.asarray(jax.jit(lambda a: f(jnp, a))(x))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        if backend == "eager":
            got = f(rnp, rnp.asarray(x))
        else:
            got = ri.jit(lambda a: f(rnp, a), backend=backend)(x)
        got = np.asarray(got)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
