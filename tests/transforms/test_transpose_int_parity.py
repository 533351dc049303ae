"""Transposing a sub-program (jit, checkpoint, cond) whose linear inputs
include integer ones: their cotangent is a float0 zero that the transposed
program does not return (it cannot), as in JAX 0.10.2 (custom_api_test's
symbolic-zero custom_vjp under jit and jacrev(allow_int=True)). Each case runs
on both backends and asks JAX for the expected values."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from jax import lax as jlax

import refimpl as ri
from refimpl import lax


def _f(m):
    @m.custom_vjp
    def f(x, n, k):
        return x, x

    def fwd(x, n, k):
        return (x.value, x.value), None

    def bwd(_, g):
        return g[0], g[0], g[1]

    f.defvjp(fwd, bwd, symbolic_zeros=True)
    return f


def _wrappers(m, lx):
    return {
        "jit": lambda f: m.jit(f),
        "checkpoint": lambda f: m.checkpoint(f),
        "cond": lambda f: lambda *a: lx.cond(True, f, lambda *b: f(*b), *a),
    }


@pytest.mark.parametrize("wrap", ["jit", "checkpoint", "cond"])
def test_jacrev_allow_int_through_subprogram(backend, wrap):
    i = np.array(7, np.int32)

    def run(m, lx):
        h = _wrappers(m, lx)[wrap](_f(m))
        return m.jacrev(h, argnums=(0, 1, 2), allow_int=True)(4.0, i, i)

    want = run(jax, jlax)
    got = run(ri, lax)
    for g, w in zip(ri.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want), strict=True):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
        assert np.asarray(g).dtype == np.asarray(w).dtype


def test_vjp_of_jit_int_input_cotangent_is_float0(backend):
    def run(m):
        h = m.jit(lambda x, n: (x * 2.0, n))
        _, pull = m.vjp(h, 3.0, np.int32(2))
        return pull((1.0, np.zeros((), m.dtypes.float0)))

    want = run(jax)
    got = run(ri)
    np.testing.assert_allclose(np.asarray(got[0]), np.asarray(want[0]))
    assert np.asarray(got[1]).dtype == ri.dtypes.float0
    assert np.asarray(want[1]).dtype == jax.dtypes.float0
