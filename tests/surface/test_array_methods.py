"""The numpy-like methods of arrays and tracers against jax.Array's: the same
values, dtypes and shapes, on a reference array, a PJRT array and a tracer
under jit (both backends)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri

X = np.array([[3.0, 1.0, 2.5], [0.5, 4.0, -1.0]], np.float32)

METHODS = {
    "std": lambda a: a.std(),
    "std_axis_ddof": lambda a: a.std(axis=0, ddof=1),
    "var_keepdims": lambda a: a.var(axis=1, keepdims=True),
    "ptp": lambda a: a.ptp(axis=1),
    "round": lambda a: a.round(),
    "round_decimals": lambda a: (a * 1.2345).round(2),
    "sort": lambda a: a.sort(),
    "sort_axis0_descending": lambda a: a.sort(axis=0, descending=True),
    "argsort": lambda a: a.argsort(axis=0),
    "searchsorted": lambda a: a[0].sort().searchsorted(np.float32(2.0)),
    "cumprod": lambda a: a.cumprod(axis=1),
    "diagonal": lambda a: a.diagonal(),
    "trace": lambda a: a.trace(offset=1),
    "take": lambda a: a.take(np.array([0, 4, 5])),
    "repeat": lambda a: a.repeat(2, axis=0),
    "compress": lambda a: a.compress(np.array([True, False, True]), axis=1, size=2),
    "nonzero_size": lambda a: (a > 1).nonzero(size=4),
    "conjugate": lambda a: a.conjugate(),
    "mT": lambda a: a.mT,
}


def _leaves(out):
    return [np.asarray(v) for v in (out if isinstance(out, tuple) else (out,))]


@pytest.mark.parametrize("where", ["ref", "pjrt", "jit_ref", "jit_pjrt"])
@pytest.mark.parametrize("name", list(METHODS))
def test_method_against_jax(name, where):
    method = METHODS[name]
    want = _leaves(method(jnp.asarray(X)))
    backend = where.removeprefix("jit_")
    x = ri.device_put(X, ri.devices(backend)[0])
    got = _leaves(ri.jit(method, backend=backend)(x) if where.startswith("jit") else method(x))
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        np.testing.assert_allclose(g, w, rtol=1e-6)


@pytest.mark.parametrize("backend", ["ref", "pjrt"])
def test_static_properties_eager_and_traced(backend):
    want = jnp.asarray(X)
    x = ri.device_put(X, ri.devices(backend)[0])
    seen = []

    def f(a):
        seen.append((a.nbytes, a.itemsize, a.mT.shape))
        return a

    f(x)
    ri.jit(f, backend=backend)(x)
    assert seen == [(want.nbytes, want.itemsize, want.mT.shape)] * 2
