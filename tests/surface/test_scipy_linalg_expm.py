"""``refimpl.scipy.linalg.expm``/``expm_frechet`` against ``jax.scipy.linalg``,
``scipy.linalg.expm`` and finite differences, on the ref backend (eager) and
pjrt (jit), float32 and float64 (x64), batched, under jit, vmap and grad."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
import pytest
import scipy.linalg as spl

import refimpl as ri
import refimpl.scipy.linalg as rsl
from tests.helpers.pjrt_helpers import skip_without_pjrt

jax.config.update("jax_platforms", "cpu")

RNG = np.random.default_rng(7)


def matrices() -> dict[str, np.ndarray]:
    return {
        "random": RNG.standard_normal((4, 4)),
        "small": 1e-3 * RNG.standard_normal((3, 3)),  # degree 3
        "nilpotent": np.triu(RNG.standard_normal((4, 4)), 1),
        "diagonal": np.diag([-2.0, 0.5, 1.5]),
        "large": 40.0 * RNG.standard_normal((3, 3)) / 3,  # needs several squarings
        "rotation": np.array([[0.0, -3.0], [3.0, 0.0]]),
    }


CASES = matrices()


def runners():
    skip_without_pjrt()
    return [("ref", lambda f: f), ("pjrt", lambda f: ri.jit(f, backend="pjrt"))]


def close(got, want, rtol):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.dtype, want.dtype)
    scale = max(1.0, float(np.max(np.abs(want))))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale)


@pytest.mark.parametrize("name", sorted(CASES))
def test_float32_against_jax_and_scipy(name):
    a = CASES[name].astype(np.float32)
    want_jax = jsl.expm(jnp.asarray(a))
    for _, run in runners():
        got = run(rsl.expm)(a)
        close(got, want_jax, 2e-5 if name != "large" else 2e-4)
        close(got, spl.expm(a.astype(np.float64)).astype(np.float32), 5e-4)


@pytest.mark.parametrize("name", sorted(CASES))
def test_float64_against_jax_and_scipy(name, x64):
    a = CASES[name]
    want_jax = jsl.expm(jnp.asarray(a))
    for _, run in runners():
        got = run(rsl.expm)(a)
        close(got, want_jax, 1e-12)
        close(got, spl.expm(a), 1e-12 if name != "large" else 1e-10)


def test_upper_triangular_complex_and_batch():
    a = np.triu(RNG.standard_normal((2, 3, 4, 4))).astype(np.float32)
    c = (RNG.standard_normal((3, 3)) + 1j * RNG.standard_normal((3, 3))).astype(np.complex64)
    for _, run in runners():
        close(run(lambda x: rsl.expm(x, upper_triangular=True))(a),
              jsl.expm(jnp.asarray(a), upper_triangular=True), 2e-5)  # fmt: skip
        close(run(rsl.expm)(a), jsl.expm(jnp.asarray(a)), 2e-5)
        close(run(rsl.expm)(c), jsl.expm(jnp.asarray(c)), 2e-5)
    # ints promote to the default float, as in JAX
    close(rsl.expm(np.eye(2, dtype=np.int32)), jsl.expm(jnp.eye(2, dtype=jnp.int32)), 1e-6)


def test_non_finite_and_max_squarings():
    # an infinite entry needs more squarings than allowed: all NaN (JAX's cond);
    # a NaN entry propagates through the Pade solve
    inf = np.array([[1.0, np.inf], [0.0, 1.0]], np.float32)
    nan = np.array([[1.0, np.nan], [0.0, 1.0]], np.float32)
    big = np.full((2, 2), 1e4, np.float32)  # 2**s with s = 12 > max_squarings=8
    for _, run in runners():
        for x in (inf, nan):
            got = np.asarray(run(rsl.expm)(x))
            assert np.isnan(got).all(), got
            assert np.isnan(np.asarray(jsl.expm(jnp.asarray(x)))).all()
        got = np.asarray(run(lambda x: rsl.expm(x, max_squarings=8))(big))
        assert np.isnan(got).all() and np.isnan(jsl.expm(jnp.asarray(big), max_squarings=8)).all()
        # s = floor(log2(20 / 3.93)) = 2: exactly max_squarings=2 squarings
        edge = np.full((2, 2), 10.0, np.float32)
        close(run(lambda x: rsl.expm(x, max_squarings=2))(edge),
              jsl.expm(edge, max_squarings=2), 2e-5)  # fmt: skip
        assert np.isnan(np.asarray(run(lambda x: rsl.expm(x, max_squarings=1))(edge))).all()


def test_bad_input():
    with pytest.raises(ValueError, match="expm: expected a .*square.*shape \\(2, 3\\)"):
        rsl.expm(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="expm: expected"):
        rsl.expm(np.ones(3, np.float32))
    # JAX has Pade tables for 32- and 64-bit floats only (its TypeError)
    with pytest.raises(TypeError, match="expm: A.dtype=float16 is not supported"):
        rsl.expm(np.eye(2, dtype=np.float16))
    with pytest.raises(TypeError):
        jsl.expm(jnp.eye(2, dtype=jnp.float16))
    with pytest.raises(ValueError, match="expm_frechet: expected A and E of the same shape"):
        rsl.expm_frechet(np.eye(2), np.eye(3))


def test_vmap_and_jit():
    a = RNG.standard_normal((5, 3, 3)).astype(np.float32)
    want = jsl.expm(jnp.asarray(a))
    close(ri.vmap(rsl.expm)(a), want, 2e-5)
    close(ri.jit(ri.vmap(rsl.expm))(a), want, 2e-5)


@pytest.mark.parametrize("name", ["random", "large", "nilpotent"])
def test_grad_against_finite_differences_and_jax(name, x64):
    a = CASES[name]
    w = RNG.standard_normal(a.shape)

    def loss_np(x):
        return float(np.sum(w * spl.expm(x)))

    h = 1e-6 * max(1.0, np.abs(a).max())
    fd = np.zeros_like(a)
    for idx in np.ndindex(a.shape):
        d = np.zeros_like(a)
        d[idx] = h
        fd[idx] = (loss_np(a + d) - loss_np(a - d)) / (2 * h)
    want_jax = jax.grad(lambda x: jnp.sum(w * jsl.expm(x)))(jnp.asarray(a))
    for _, run in runners():
        got = run(ri.grad(lambda x: (w * rsl.expm(x)).sum()))(a)
        close(got, want_jax, 1e-9)
        close(got, fd, 1e-5)


def test_expm_frechet_against_jax_and_scipy(x64):
    a, e = RNG.standard_normal((2, 4, 4)), RNG.standard_normal((2, 4, 4))
    want_a, want_f = jsl.expm_frechet(jnp.asarray(a), jnp.asarray(e))
    for _, run in runners():
        got_a, got_f = run(rsl.expm_frechet)(a, e)
        close(got_a, want_a, 1e-12)
        close(got_f, want_f, 1e-11)
        close(got_f[1], spl.expm_frechet(a[1], e[1], compute_expm=False), 1e-11)
        close(run(lambda x, y: rsl.expm_frechet(x, y, compute_expm=False))(a, e), want_f, 1e-11)


@pytest.mark.parametrize("name", ["random", "large", "rotation"])
def test_complex128_against_jax_and_scipy(name, x64):
    # complex lu (pjrt's lowering pivots on |re| + |im| as LAPACK's), eager on
    # pjrt too: expm's jitted inner functions run there
    a = CASES[name] + 1j * CASES[name][::-1]
    want = jsl.expm(jnp.asarray(a))
    ri.config.update("backend", "pjrt")
    try:
        eager_pjrt = rsl.expm(a)
    finally:
        ri.config.update("backend", "ref")
    for got in [eager_pjrt] + [run(rsl.expm)(a) for _, run in runners()]:
        close(got, want, 1e-12 if name != "large" else 1e-11)
        close(got, spl.expm(a), 1e-12 if name != "large" else 1e-10)


def test_complex_grad_against_jax(x64):
    a = CASES["random"] + 1j * CASES["random"].T
    w = RNG.standard_normal(a.shape)
    want = jax.grad(lambda x: jnp.sum(w * jsl.expm(x)).real)(jnp.asarray(a))
    for _, run in runners():
        close(run(ri.grad(lambda x: (w * rsl.expm(x)).sum().real))(a), want, 1e-11)
