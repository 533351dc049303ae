"""Derivatives of the matrix decompositions (refimpl/primitives/decompositions.py)
against JAX's: ``ri.jvp`` / ``ri.vjp`` of ``cholesky``, ``triangular_solve``,
``lu``, ``qr``, ``eigh`` and ``svd`` vs ``jax.jvp`` / ``jax.vjp`` of
``jax.lax.linalg``, on random well-conditioned float64 matrices, on the
reference backend. Quantities that are not unique (signs of eigen- and
singular vectors) enter through sign-invariant functions of them."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax as jlax

import refimpl as ri
import refimpl.numpy as rnp
from refimpl.primitives import decompositions as dec

if not all(hasattr(ri, name) for name in ("jvp", "vjp")):  # pragma: no cover
    pytest.skip("refimpl.jvp / refimpl.vjp not available", allow_module_level=True)

F64 = np.dtype(np.float64)


pytestmark = pytest.mark.usefixtures("x64")  # every test in 64-bit (conftest)


def _spd(rng, n, batch=()):
    a = rng.normal(size=(*batch, n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _sym(rng, n):
    a = rng.normal(size=(n, n))
    return a + a.T


def _sign_fixed(m, lib):
    """Columns scaled so the largest-magnitude entry is positive (unique)."""
    idx = lib.argmax(lib.abs(m), axis=-2)
    pick = lib.take_along_axis(m, idx[..., None, :], axis=-2)
    return m * lib.sign(pick)


# name, fn(linalg, x), input maker
CASES = [
    ("cholesky", lambda L, x: L.cholesky(x), lambda rng: _spd(rng, 4, (2,))),
    ("triangular_solve_left",
     lambda L, a: L.triangular_solve(a, a[..., :, :2] * 1.5 + 1.0, left_side=True, lower=True),
     lambda rng: np.tril(rng.normal(size=(4, 4))) + 4 * np.eye(4)),
    ("triangular_solve_right_transposed",
     lambda L, a: L.triangular_solve(a, a[..., :3, :] - 2.0, left_side=False, lower=False,
                                     transpose_a=True),
     lambda rng: np.triu(rng.normal(size=(4, 4))) + 4 * np.eye(4)),
    ("triangular_solve_unit",
     lambda L, a: L.triangular_solve(a, a * 0.5 + 1.0, left_side=True, lower=True,
                                     unit_diagonal=True),
     lambda rng: np.tril(rng.normal(size=(3, 3)))),
    ("lu", lambda L, x: L.lu(x)[0], lambda rng: rng.normal(size=(2, 4, 4))),
    ("qr_square", lambda L, x: L.qr(x, full_matrices=True), lambda rng: rng.normal(size=(4, 4))),
    ("qr_tall", lambda L, x: L.qr(x, full_matrices=False), lambda rng: rng.normal(size=(5, 3))),
    ("eigh_values", lambda L, x: L.eigh(x)[1], lambda rng: _sym(rng, 4)),
    ("eigh_vectors", lambda L, x: _sign_fixed(L.eigh(x)[0], L.np), lambda rng: _sym(rng, 4)),
    ("svd_values", lambda L, x: L.svd(x, full_matrices=False, compute_uv=False),
     lambda rng: rng.normal(size=(4, 3))),
    ("svd_tall", lambda L, x: [_sign_fixed(m, L.np) if i == 0 else m for i, m in enumerate(
        L.svd(x, full_matrices=False))][:2], lambda rng: rng.normal(size=(5, 3))),
    ("svd_wide_v", lambda L, x: _sign_fixed(_T(L.svd(x, full_matrices=False)[2]), L.np),
     lambda rng: rng.normal(size=(3, 5))),
]  # fmt: skip


def _T(m):
    return m.swapaxes(-1, -2) if hasattr(m, "swapaxes") else np.swapaxes(m, -1, -2)


class _RiLinalg:
    np = rnp
    cholesky = staticmethod(lambda x: dec.cholesky(x, symmetrize_input=False))
    triangular_solve = staticmethod(dec.triangular_solve)
    lu = staticmethod(dec.lu)
    qr = staticmethod(dec.qr)
    eigh = staticmethod(dec.eigh)  # symmetrized input (the triangle read is a convention)
    svd = staticmethod(dec.svd)


class _JaxLinalg:
    np = jnp
    cholesky = staticmethod(lambda x: jlax.linalg.cholesky(x, symmetrize_input=False))
    triangular_solve = staticmethod(jlax.linalg.triangular_solve)
    lu = staticmethod(jlax.linalg.lu)
    qr = staticmethod(jlax.linalg.qr)
    eigh = staticmethod(jlax.linalg.eigh)

    svd = staticmethod(jlax.linalg.svd)


def _close(actual, expected, what):
    for a, e in zip(jax.tree_util.tree_leaves(actual), jax.tree_util.tree_leaves(expected),
                    strict=True):  # fmt: skip
        np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=1e-8, atol=1e-9,
                                   err_msg=what)  # fmt: skip


@pytest.mark.parametrize("name,fn,make", CASES, ids=[c[0] for c in CASES])
def test_decomposition_derivatives_match_jax(name, fn, make, rng):
    x = np.asarray(make(rng), F64)
    t = rng.normal(size=x.shape)
    if name.startswith("eigh") or name == "cholesky":
        t = t + np.swapaxes(t, -1, -2)  # symmetric perturbations of a symmetric input
    ours = functools.partial(fn, _RiLinalg)
    theirs = functools.partial(fn, _JaxLinalg)
    _close(ri.jvp(ours, (x,), (t,)), jax.jvp(theirs, (x,), (t,)), f"{name} jvp")
    out, jax_pullback = jax.vjp(theirs, x)
    ct = jax.tree_util.tree_map(lambda o: rng.normal(size=np.shape(o)), out)
    _close(ri.vjp(ours, x)[1](ct), jax_pullback(ct), f"{name} vjp")


def test_complex_svd_jvp_as_jax():
    # JAX's formula with conjugate transposes: ds = re(diag(U^H dA V))
    rng = np.random.default_rng(5)
    z, dz = (rng.normal(size=(2, 4, 3)) + 1j * rng.normal(size=(2, 4, 3)) for _ in range(2))
    got = ri.jvp(lambda m: dec.svd(m, full_matrices=False, compute_uv=False), (z,), (dz,))
    want = jax.jvp(lambda m: jlax.linalg.svd(m, full_matrices=False, compute_uv=False),
                   (z,), (dz,))  # fmt: skip
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-10, atol=1e-10)
