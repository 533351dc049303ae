"""custom_jvp / custom_vjp functions called eagerly on NumPy data, compared
with JAX 0.10.2 on both backends: a non-canonical dtype (float64, int64) is
converted to the canonical one before the function runs, as JAX binds it;
nondiff_argnums arguments and Python scalars are passed as given."""

from __future__ import annotations

import functools

import jax
import numpy as np

import refimpl as ri


def _identity(lib, kind):
    if kind == "jvp":
        f = lib.custom_jvp(lambda x: x * 1)
        f.defjvp(lambda p, t: (p[0], t[0]))
    else:
        f = lib.custom_vjp(lambda x: x * 1)
        f.defvjp(lambda x: (x, None), lambda r, g: (g,))
    return f


def test_numpy_arguments_are_canonicalized(backend):
    args = [np.arange(2.0), np.float64(2.0), np.arange(2), np.int64(3), np.float16(1.0)]
    for kind in ("jvp", "vjp"):
        for a in args:
            got, want = _identity(ri, kind)(a), _identity(jax, kind)(a)
            assert np.asarray(got).dtype == np.asarray(want).dtype, (kind, a)
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_nondiff_arguments_are_passed_as_given(backend):
    def make(lib):
        @functools.partial(lib.custom_jvp, nondiff_argnums=(0,))
        def f(n, x):
            return n, x * 1

        f.defjvp(lambda n, p, t: (f(n, *p), t[0]))
        return f

    got = make(ri)(np.arange(2.0), np.arange(2.0))
    want = make(jax)(np.arange(2.0), np.arange(2.0))
    assert [np.asarray(v).dtype for v in got] == [np.asarray(v).dtype for v in want]
