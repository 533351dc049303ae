"""jnp.piecewise as JAX 0.10.2 runs it: one jit per tuple of functions, so a
repeated call with the same functions traces none of them again; constants
(Python, NumPy or jax arrays), extra arguments, dtypes and weak types as
JAX gives them. Both backends."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp


def _counted():
    def g(x):
        g.traces += 1
        return x * 2

    g.traces = 0
    return g


def test_repeated_piecewise_traces_its_functions_once(backend):
    counts = []
    for np_mod in (jnp, rnp):
        g = _counted()
        x = np_mod.arange(-3.0, 3.0)
        for _ in range(5):
            np_mod.piecewise(x, [x < 0], [g, 0.0])
        counts.append(g.traces)
    assert counts[1] == counts[0] == 1


@pytest.mark.parametrize(
    "case",
    [
        lambda m, x: m.piecewise(x, [x < 0], [lambda v: v * 2, m.array(1.0)]),
        lambda m, x: m.piecewise(x, [x < 0], [lambda v: v * 2, np.array(1.0)]),
        lambda m, x: m.piecewise(x.astype("int32"), [x < 0], [lambda v: v * 2.5, 7]),
        lambda m, x: m.piecewise(x, [x < 0], [lambda v, a: v * a, 7.0], 3.0),
        lambda m, x: m.piecewise(x, [x < -1, x > 1], [lambda v: -v, lambda v: v**2, 0.5]),
        lambda m, x: m.piecewise(3.0, [True], [lambda v: v + 1]),
    ],
)
def test_piecewise_values_and_types_are_jaxs(backend, case):
    x = np.arange(-3.0, 3.0, dtype=np.float32)
    got, want = case(rnp, x), case(jnp, x)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.aval.weak_type == want.aval.weak_type
    np.testing.assert_allclose(np.asarray(got), np.asarray(want))


def test_piecewise_gradient_is_jaxs(backend):
    x = np.arange(-3.0, 3.0, dtype=np.float32)

    def f(m):
        return lambda v: m.piecewise(v, [v < 0], [lambda u: u**2, lambda u: 3 * u]).sum()

    np.testing.assert_allclose(np.asarray(ri.grad(f(rnp))(x)), np.asarray(jax.grad(f(jnp))(x)))
