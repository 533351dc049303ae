"""lax.linalg.tridiagonal_solve against JAX 0.10.2 on both backends: values
(real, complex, batched, under jit), vmap over any operand's axis
(batching_test's testLaxLinalgTridiagonalSolve), derivatives in every
operand, and JAX's TypeError for operands of mismatched shapes or dtypes."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import refimpl as ri
from refimpl import lax

R = np.random.RandomState(29)


def _system(batch=(), m=5, n=2, dtype=np.float32):
    def draw(*shape):
        x = R.randn(*shape)
        if np.dtype(dtype).kind == "c":
            x = x + 1j * R.randn(*shape)
        return x.astype(dtype)

    return draw(*batch, m), draw(*batch, m) + 4, draw(*batch, m), draw(*batch, m, n)


def _close(got, want, tol=1e-5):
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=tol, atol=tol)


CASES = {
    "vector": _system(),
    "batched": _system(batch=(3, 2)),
    "complex": _system(dtype=np.complex64),
    "one_row": _system(m=1, n=3),
    "no_columns": _system(n=0),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_values_match_jax(backend, case):
    args = CASES[case]
    want = jax.lax.linalg.tridiagonal_solve(*args)
    _close(lax.linalg.tridiagonal_solve(*args), want)
    _close(ri.jit(lax.linalg.tridiagonal_solve)(*args), want)


@pytest.mark.parametrize("in_axes", [(1, 1, 1, 2), (None, None, None, 2), (1, 1, 1, None)])
def test_vmap_matches_jax(backend, in_axes):
    # a batch of 6 systems of 4 rows and 5 columns, mapped on the last axis
    dl, d, du = (R.randn(4, 6).astype(np.float32) for _ in range(3))
    d = d + 4
    b = R.randn(4, 5, 6).astype(np.float32)
    args = [v if ax is not None else v[..., 0] for v, ax in zip((dl, d, du, b), in_axes)]
    want = jax.vmap(jax.lax.linalg.tridiagonal_solve, in_axes=in_axes)(*args)
    _close(ri.vmap(lax.linalg.tridiagonal_solve, in_axes=in_axes)(*args), want)
    _close(ri.jit(ri.vmap(lax.linalg.tridiagonal_solve, in_axes=in_axes))(*args), want)


def test_derivatives_match_jax(backend):
    args = _system(m=4, n=2)

    def loss(api):
        return lambda *a: (api.linalg.tridiagonal_solve(*a) ** 2).sum()

    want = jax.grad(loss(jax.lax), argnums=(0, 1, 2, 3))(*args)
    got = ri.grad(loss(lax), argnums=(0, 1, 2, 3))(*args)
    for g, w in zip(got, want, strict=True):
        _close(g, w, 1e-3)
    want_t = jax.jvp(jax.lax.linalg.tridiagonal_solve, args, args)[1]
    _close(ri.jvp(lax.linalg.tridiagonal_solve, args, args)[1], want_t, 1e-3)


BAD = {
    "diagonals_differ": lambda dl, d, du, b: (dl[1:], d, du, b),
    "b_rows_differ": lambda dl, d, du, b: (dl, d, du, b[1:]),
    "b_a_vector": lambda dl, d, du, b: (dl, d, du, b[:, 0]),
    "integers": lambda dl, d, du, b: tuple(v.astype(np.int32) for v in (dl, d, du, b)),
    "dtypes_differ": lambda dl, d, du, b: (dl, d, du, b.astype(np.float16)),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_operands_are_jaxs_type_error(case):
    args = BAD[case](*_system())
    with pytest.raises(TypeError):
        jax.lax.linalg.tridiagonal_solve(*args)
    with pytest.raises(TypeError, match="tridiagonal_solve"):
        lax.linalg.tridiagonal_solve(*args)
