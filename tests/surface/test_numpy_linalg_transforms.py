"""Derivatives and batching of the decomposition primitives and of top_k,
against ``jax.grad``/``jax.vmap`` of the same ``jax.numpy`` programs."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
import refimpl.scipy.linalg as rsl
from refimpl import lax
from tests.helpers.pjrt_helpers import skip_without_pjrt

jax.config.update("jax_platforms", "cpu")

RNG = np.random.default_rng(3)
A = RNG.standard_normal((4, 4)).astype(np.float32)
SPD = (A @ A.T + 4 * np.eye(4)).astype(np.float32)
B = RNG.standard_normal((4,)).astype(np.float32)
W = np.arange(16.0, dtype=np.float32).reshape(4, 4) / 10


def close(ours, expected, tol=2e-4):
    ours, expected = np.asarray(ours), np.asarray(expected)
    scale = max(1.0, float(np.max(np.abs(expected))))
    np.testing.assert_allclose(ours, expected, rtol=tol, atol=tol * scale)


GRAD_CASES = {
    "svdvals": (
        lambda m, x: m.sum(m.linalg.svd(x, compute_uv=False) * m.arange(1.0, 4.0)),
        A[:, :3],
    ),
    "svd-vectors": (
        lambda m, x: (
            m.sum(m.abs(m.linalg.svd(x, full_matrices=False)[0]))
            + 2 * m.sum(m.abs(m.linalg.svd(x, full_matrices=False)[2]))
        ),
        A[:3, :],
    ),
    "pinv-nuc": (lambda m, x: m.linalg.norm(x, "nuc") + m.sum(m.linalg.pinv(x)), A[:, :3]),
    "det": (lambda m, x: m.linalg.det(x), A),
    "slogdet": (lambda m, x: m.linalg.slogdet(x)[1], A),
    "solve": (lambda m, x: m.sum(m.linalg.solve(x, B) ** 2), A),
    "inv": (lambda m, x: m.sum(m.linalg.inv(x) * W), A),
    "cholesky": (lambda m, x: m.sum(m.linalg.cholesky(x) * W), SPD),
    "eigh": (lambda m, x: m.sum(m.linalg.eigh(x)[0] ** 3) + m.sum(m.abs(m.linalg.eigh(x)[1])), SPD),
    "eigvalsh": (lambda m, x: m.sum(m.linalg.eigvalsh(x) * m.arange(4.0)), SPD),
    "qr": (lambda m, x: m.sum(m.linalg.qr(x)[0] * 2) + m.sum(m.linalg.qr(x)[1] ** 2), A[:, :3]),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_grad_matches_jax(name):
    fn, x = GRAD_CASES[name]
    expected = jax.grad(lambda v: fn(jnp, v))(x)
    close(ri.grad(lambda v: fn(rnp, v))(x), expected, 1e-3)


def test_grad_scipy_linalg():
    def ours(x):
        return rnp.sum(rsl.cho_solve(rsl.cho_factor(x, lower=True), B)) + rnp.sum(
            rsl.solve_triangular(x, B, lower=False) ** 2
        )

    def theirs(x):
        return jnp.sum(jsl.cho_solve(jsl.cho_factor(x, lower=True), B)) + jnp.sum(
            jsl.solve_triangular(x, B, lower=False) ** 2
        )

    close(ri.grad(ours)(SPD), jax.grad(theirs)(SPD), 1e-3)
    close(
        ri.grad(lambda b: rnp.sum(rsl.solve_triangular(SPD, b, trans=1) ** 2))(B),
        jax.grad(lambda b: jnp.sum(jsl.solve_triangular(SPD, b, trans=1) ** 2))(B),
    )


def test_grad_on_pjrt():
    skip_without_pjrt()
    ours = ri.jit(
        ri.grad(
            lambda x: rnp.linalg.det(x) + rnp.sum(rnp.linalg.cholesky(x @ x.T + 4 * rnp.eye(4)))
        ),
        backend="pjrt",
    )
    theirs = jax.grad(
        lambda x: jnp.linalg.det(x) + jnp.sum(jnp.linalg.cholesky(x @ x.T + 4 * jnp.eye(4)))
    )
    close(ours(A), theirs(A), 1e-3)


def test_vmap_matches_jax():
    batch = RNG.standard_normal((3, 4, 4)).astype(np.float32)
    spd = batch @ np.swapaxes(batch, 1, 2) + 4 * np.eye(4, dtype=np.float32)
    close(ri.vmap(rnp.linalg.cholesky)(spd), jax.vmap(jnp.linalg.cholesky)(spd))
    close(
        ri.vmap(rnp.linalg.solve, in_axes=(0, None))(spd, B),
        jax.vmap(jnp.linalg.solve, in_axes=(0, None))(spd, B),
    )
    close(
        ri.vmap(rnp.linalg.det, in_axes=2)(np.moveaxis(batch, 0, 2)),
        jax.vmap(jnp.linalg.det, in_axes=2)(np.moveaxis(batch, 0, 2)),
        1e-3,
    )
    close(ri.vmap(rnp.linalg.eigvalsh)(spd), jax.vmap(jnp.linalg.eigvalsh)(spd))
    close(
        ri.vmap(lambda x: rnp.linalg.svd(x, compute_uv=False))(batch),
        jax.vmap(lambda x: jnp.linalg.svd(x, compute_uv=False))(batch),
    )
    close(
        ri.vmap(lambda x: rnp.linalg.qr(x)[1])(batch),
        jax.vmap(lambda x: jnp.linalg.qr(x)[1])(batch),
    )


def test_top_k():
    x = np.array(
        [[1.0, np.nan, 3.0, 3.0, -np.inf, np.nan, 0.0], [5, 4, 3, 2, 1, 0, -1]], np.float32
    )
    for k in (0, 1, 4, 7):
        expected = jax.lax.top_k(x, k)
        for out in (lax.top_k(x, k), ri.jit(lambda v, k=k: lax.top_k(v, k), backend="pjrt")(x)):
            np.testing.assert_array_equal(np.asarray(out[0]), np.asarray(expected[0]))
            np.testing.assert_array_equal(np.asarray(out[1]), np.asarray(expected[1]))
    ints = RNG.integers(0, 3, (3, 6)).astype(np.int32)
    np.testing.assert_array_equal(
        np.asarray(lax.top_k(ints, 3)[1]), np.asarray(jax.lax.top_k(ints, 3)[1])
    )
    batched = ri.vmap(lambda v: lax.top_k(v, 2), in_axes=1)(ints)
    expected = jax.vmap(lambda v: jax.lax.top_k(v, 2), in_axes=1)(ints)
    np.testing.assert_array_equal(np.asarray(batched[1]), np.asarray(expected[1]))
    grad = ri.grad(lambda v: rnp.sum(lax.top_k(v, 2)[0] * rnp.array([3.0, 1.0])))(x[1])
    close(grad, jax.grad(lambda v: jnp.sum(jax.lax.top_k(v, 2)[0] * jnp.array([3.0, 1.0])))(x[1]))
    with pytest.raises(ValueError, match="top_k: k must be between 0 and"):
        lax.top_k(x, 8)


def test_scatter_combine_rules():
    """vmap and jvp of the scatter_mul/min/max behind x.at[].mul/min/max."""
    x = RNG.standard_normal((3, 5)).astype(np.float32)
    idx = np.array([0, 2, 2, 4], np.int32)
    upd = RNG.standard_normal((3, 4)).astype(np.float32)
    for method in ("multiply", "min", "max"):

        def ours(a, u, m=method):
            return getattr(rnp.asarray(a).at[idx], m)(u)

        def theirs(a, u, m=method):
            return getattr(jnp.asarray(a).at[idx], m)(u)

        close(ri.vmap(ours)(x, upd), jax.vmap(theirs)(x, upd))
        close(
            ri.grad(lambda a: rnp.sum(ours(a, upd[0]) * rnp.arange(5.0)))(x[0]),
            jax.grad(lambda a: jnp.sum(theirs(a, upd[0]) * jnp.arange(5.0)))(x[0]),
        )
        if method != "multiply":
            close(
                ri.grad(lambda u: rnp.sum(ours(x[0], u) * rnp.arange(5.0)))(upd[0]),
                jax.grad(lambda u: jnp.sum(theirs(x[0], u) * jnp.arange(5.0)))(upd[0]),
            )
