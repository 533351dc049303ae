"""primitives.composite_ops (the NumPy-style functions the decompositions' and
top_k's rules are written with) against NumPy and jax.numpy (the oracles).

Each function runs eagerly and under ``ri.jit`` on both backends; values are
compared with NumPy's (exactly where the operation is exact), dtypes and weak
types with jax.numpy's for the operands the rules pass (Python scalars mixed
with arrays, int32 index arrays, bool masks).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
from refimpl.primitives import composite_ops as ops

jax.config.update("jax_platforms", "cpu")

RUNS = ["eager", "ref", "pjrt"]


def run(fn, *args, how):
    if how == "eager":
        return fn(*args)
    return ri.jit(fn, backend=how)(*args)


def check(got, expected, *, exact=True):
    got_np = np.asarray(got)
    assert got_np.shape == np.shape(expected)
    if exact:
        np.testing.assert_array_equal(got_np, expected)
    else:
        np.testing.assert_allclose(got_np, expected, rtol=2e-6, atol=1e-6)


def weak(x) -> bool:
    return ri.typeof(x).weak_type


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.mark.parametrize("how", RUNS)
def test_where_promotes_scalars_and_broadcasts(how):
    cond = np.array([[True], [False]])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = run(lambda c, a: ops.where(c, a, 0), cond, x, how=how)
    check(out, np.where(cond, x, 0))
    expected = jnp.where(cond, jnp.asarray(x), 0)
    assert out.dtype == expected.dtype and weak(out) == expected.weak_type
    # two Python scalars: a weak default float, as jnp.where(c, 1.0, -1.0)
    both = run(lambda c: ops.where(c, 1.0, -1.0), cond, how=how)
    check(both, np.where(cond, 1.0, -1.0).astype(np.float32))
    assert both.dtype == np.float32 and weak(both) == jnp.where(cond, 1.0, -1.0).weak_type


@pytest.mark.parametrize("how", RUNS)
def test_matmul_batches_and_vectors(how, rng):
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    b = rng.standard_normal((2, 4, 5)).astype(np.float32)
    v = rng.standard_normal(4).astype(np.float32)
    row = rng.standard_normal((2, 1, 3)).astype(np.float32)
    check(run(ops.matmul, a, b, how=how), np.matmul(a, b), exact=False)
    check(run(ops.matmul, a, v, how=how), np.matmul(a, v), exact=False)
    check(run(ops.matmul, row, a, how=how), np.matmul(row, a), exact=False)
    check(run(ops.matmul, a[0], b, how=how), np.matmul(a[0], b), exact=False)  # batch broadcast


@pytest.mark.parametrize("how", RUNS)
def test_triangles_eye_diagonal_swapaxes(how, rng):
    m = rng.standard_normal((2, 3, 4)).astype(np.float32)
    for k in (-1, 0, 1):
        check(run(lambda x, k=k: ops.tril(x, k), m, how=how), np.tril(m, k))
        check(run(lambda x, k=k: ops.triu(x, k), m, how=how), np.triu(m, k))
    check(run(lambda: ops.eye(3, np.float32), how=how), np.eye(3, dtype=np.float32))
    check(run(lambda: ops.eye(3, bool), how=how), np.eye(3, dtype=bool))
    check(run(ops.diagonal, m, how=how), np.diagonal(m, axis1=-2, axis2=-1))
    check(run(lambda x: ops.swapaxes(x, -1, -2), m, how=how), np.swapaxes(m, -1, -2))
    check(run(lambda x: ops.expand_dims(x, -2), m, how=how), np.expand_dims(m, -2))
    check(
        run(lambda x: ops.concatenate([x, x[..., :1]], axis=-1), m, how=how),
        np.concatenate([m, m[..., :1]], axis=-1),
    )


@pytest.mark.parametrize("how", RUNS)
def test_reductions(how, rng):
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    check(run(lambda a: ops.sum(a, -1), x, how=how), np.sum(x, -1), exact=False)
    check(
        run(lambda a: ops.sum(a, axis=(-2, -1), keepdims=True), x, how=how),
        np.sum(x, axis=(-2, -1), keepdims=True),
        exact=False,
    )
    check(run(ops.sum, x, how=how), np.sum(x), exact=False)
    half = x.astype(np.float16)
    got = run(lambda a: ops.sum(a, -1), half, how=how)
    expected = jnp.sum(jnp.asarray(half), -1)  # float16 sums in float32, as jnp.sum
    assert got.dtype == np.float16
    check(got, np.asarray(expected))
    mask = x > 1
    check(run(lambda a: ops.any(a, axis=-1, keepdims=True), mask, how=how),
          np.any(mask, axis=-1, keepdims=True))  # fmt: skip
    check(run(ops.any, mask, how=how), np.any(mask))
    with_nan = np.array([[1.0, np.nan, 3.0], [2.0, 5.0, 5.0]], np.float32)
    # ties: the first; NaN wins (JAX's argmax)
    check(run(ops.argmax, with_nan, how=how), np.asarray(jnp.argmax(with_nan, axis=-1)))


@pytest.mark.parametrize("how", RUNS)
def test_argsort_and_take_along_axis(how):
    x = np.array([[3.0, np.nan, 1.0, 3.0, -0.0, 0.0], [2.0, 2.0, 2.0, 1.0, 5.0, 4.0]], np.float32)
    for descending in (False, True):
        got = run(lambda a, d=descending: ops.argsort(a, axis=-1, descending=d), x, how=how)
        check(got, np.asarray(jnp.argsort(x, axis=-1, descending=descending)))
        assert got.dtype == np.int32
    order = np.argsort(x, axis=-1, kind="stable").astype(np.int32)
    check(run(ops.take_along_axis, x, order, how=how), np.take_along_axis(x, order, -1))
    # the other dims broadcast, as NumPy's (the lu program's row exchange)
    m = np.arange(12, dtype=np.float32).reshape(3, 4)
    rows = np.array([[2], [0], [1]], np.int32)
    check(
        run(lambda a, i: ops.take_along_axis(a, i, axis=-2), m, rows, how=how),
        np.take_along_axis(m, np.broadcast_to(rows, (3, 4)), -2),
    )


@pytest.mark.parametrize("how", RUNS)
def test_elementwise_helpers(how):
    x = np.array([3.0, 0.0, -np.inf, np.nan, 1e30], np.float32)
    y = np.array([4.0, 0.0, 1.0, 2.0, 1e30], np.float32)
    check(run(ops.hypot, x, y, how=how), np.hypot(x, y), exact=False)
    check(run(ops.isnan, x, how=how), np.isnan(x))
    check(run(ops.abs, x, how=how), np.abs(x))
    ints = np.array([1, 4, 9], np.int32)
    root = run(ops.sqrt, ints, how=how)
    assert root.dtype == jnp.sqrt(ints).dtype
    check(root, np.sqrt(ints).astype(np.float32))
    z = np.array([1 + 2j, -3j], np.complex64)
    if how != "pjrt":  # the composite lowerings refuse complex operands on pjrt
        check(run(ops.conj, z, how=how), np.conj(z))
        check(run(ops.real, z, how=how), np.real(z))
    check(run(ops.conj, y, how=how), y)
    e = np.array([0.0, 1.0, 0.0], np.float32)
    f = np.array([0.0, 0.0, 1.0], np.float32)
    check(run(ops.outer, e, f, how=how), np.outer(e, f))
    mat = np.arange(18, dtype=np.float32).reshape(2, 3, 3)
    check(run(ops.quadratic_form, mat, e, f, how=how), np.einsum("...ij,i,j->...", mat, e, f))
