"""``rnp.linalg`` and ``refimpl.scipy.linalg`` against ``jax.numpy.linalg`` and
``jax.scipy.linalg``, on the ref backend (NumPy/LAPACK impls) and on pjrt
(where each decomposition is lowered as a program of primitives).

Unique results are compared directly (factors of Cholesky, LU, QR with
LAPACK's sign convention; eigenvalues; singular values; solves,
determinants, inverses, norms). Eigen- and singular vectors are compared
through what is unique: reconstructions ``V diag(w) V^T``, orthonormality,
and the vectors up to sign when the values are distinct.
"""

from __future__ import annotations

import contextlib
import warnings

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
import refimpl.scipy.linalg as rsl
from refimpl.primitives import decompositions
from tests.helpers.pjrt_helpers import skip_without_pjrt

jax.config.update("jax_platforms", "cpu")

RNG = np.random.default_rng(42)
TOL = 2e-4


def general(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def spd(*shape):
    a = general(*shape)
    n = shape[-1]
    return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n, dtype=np.float32)).astype(np.float32)


def close(ours, expected, tol=TOL, what=""):
    ours, expected = np.asarray(ours), np.asarray(expected)
    assert ours.shape == expected.shape, (what, ours.shape, expected.shape)
    assert ours.dtype == expected.dtype, (what, ours.dtype, expected.dtype)
    scale = max(1.0, float(np.max(np.abs(expected), initial=0.0)))
    np.testing.assert_allclose(ours, expected, rtol=tol, atol=tol * scale, err_msg=what)


def both(fn, *args):
    """(ref result, pjrt result)."""
    skip_without_pjrt()
    return fn(*args), ri.jit(fn, backend="pjrt")(*args)


def compare(fn_ours, fn_jax, *args, tol=TOL):
    expected = fn_jax(*[jnp.asarray(a) for a in args])
    for backend, out in zip(("ref", "pjrt"), both(fn_ours, *args), strict=True):
        outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)  # lu: a list, as JAX
        exps = tuple(expected) if isinstance(expected, (tuple, list)) else (expected,)
        assert len(outs) == len(exps)
        for o, e in zip(outs, exps, strict=True):
            close(o, e, tol, backend)


SHAPES = [(3, 3), (1, 1), (2, 4, 4), (0, 3, 3)]


@pytest.mark.parametrize("shape", SHAPES)
def test_cholesky(shape):
    a = spd(*shape)
    compare(rnp.linalg.cholesky, jnp.linalg.cholesky, a)
    compare(
        lambda x: rnp.linalg.cholesky(x, upper=True),
        lambda x: jnp.linalg.cholesky(x, upper=True),
        a,
    )
    compare(rsl.cholesky, jsl.cholesky, a)
    compare(lambda x: rsl.cholesky(x, lower=True), lambda x: jsl.cholesky(x, lower=True), a)


def test_cholesky_not_positive_definite_is_nan():
    a = -spd(3, 3)
    expected = np.asarray(jnp.linalg.cholesky(a))
    assert np.isnan(expected[np.tril_indices(3)]).all()
    for out in both(rnp.linalg.cholesky, a):
        np.testing.assert_array_equal(np.asarray(out), expected)


def test_cholesky_nan_propagates_and_only_a_nonpositive_pivot_fails():
    # LAPACK's potrf (JAX on CPU) fails only on a pivot <= 0: NaN off the
    # diagonal leaves the columns before it, NaN in an ignored upper triangle
    # changes nothing, and a pivot <= 0 after a NaN still fails the matrix.
    a = np.array(
        [
            [[4, np.nan, 1], [np.nan, 9, 2], [1, 2, 16]],
            [[4, 1, 1], [1, 9, 2], [1, np.nan, 16]],
            [[4, np.nan, 1], [1, 9, 2], [1, 2, 16]],
            [[4, 1, 1], [1, 0.25, 2], [np.nan, 2, 16]],
        ],
        np.float32,
    )
    for kw in ({}, {"symmetrize_input": False}):
        expected = np.asarray(jax.lax.linalg.cholesky(a, **kw))
        for backend, out in zip(
            ("ref", "pjrt"), both(lambda x, kw=kw: ri.lax.linalg.cholesky(x, **kw), a), strict=True
        ):
            np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-6, err_msg=backend)
    assert np.isfinite(expected[0, 0, 0]) and np.isnan(expected[3]).sum() == 6


@pytest.mark.parametrize("shape", SHAPES)
def test_solve_inv_det_slogdet(shape):
    a = general(*shape) + 2 * np.eye(shape[-1], dtype=np.float32)
    b = general(*shape[:-1], 2)
    compare(rnp.linalg.solve, jnp.linalg.solve, a, b, tol=1e-3)
    compare(rnp.linalg.inv, jnp.linalg.inv, a, tol=1e-3)
    compare(rnp.linalg.det, jnp.linalg.det, a, tol=1e-3)
    compare(
        lambda x: tuple(rnp.linalg.slogdet(x)), lambda x: tuple(jnp.linalg.slogdet(x)), a, tol=1e-3
    )


def test_solve_vector_and_broadcast():
    a = general(2, 3, 3) + 3 * np.eye(3, dtype=np.float32)
    compare(rnp.linalg.solve, jnp.linalg.solve, a[0], general(3))
    compare(rnp.linalg.solve, jnp.linalg.solve, a, general(3, 2))


def test_singular_matrix():
    a = np.array([[1.0, 2.0], [2.0, 4.0]], np.float32)
    compare(rnp.linalg.det, jnp.linalg.det, a)
    compare(lambda x: tuple(rnp.linalg.slogdet(x)), lambda x: tuple(jnp.linalg.slogdet(x)), a)


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3), (2, 5, 2)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr(shape, mode):
    a = general(*shape)
    compare(lambda x: rnp.linalg.qr(x, mode), lambda x: jnp.linalg.qr(x, mode), a)


def test_lu_and_friends():
    a = general(4, 4)
    compare(lambda x: decompositions.lu(x), jax.lax.linalg.lu, a)
    compare(lambda x: decompositions.lu(x), jax.lax.linalg.lu, general(3, 5))
    compare(lambda x: decompositions.lu(x), jax.lax.linalg.lu, general(2, 5, 3))
    compare(rsl.lu, jsl.lu, a)
    compare(lambda x: rsl.lu(x, permute_l=True), lambda x: jsl.lu(x, permute_l=True), a)
    compare(rsl.lu_factor, jsl.lu_factor, a)
    b = general(4, 2)
    compare(
        lambda x, y: rsl.lu_solve(rsl.lu_factor(x), y),
        lambda x, y: jsl.lu_solve(jsl.lu_factor(x), y),
        a,
        b,
    )


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("trans", [0, 1, 2, "T"])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular(lower, trans, unit):
    a = general(4, 4) + 4 * np.eye(4, dtype=np.float32)
    b = general(4, 3)

    def ours(x, y):
        return rsl.solve_triangular(x, y, trans=trans, lower=lower, unit_diagonal=unit)

    def theirs(x, y):
        return jsl.solve_triangular(x, y, trans=trans, lower=lower, unit_diagonal=unit)

    compare(ours, theirs, a, b, tol=1e-3)
    compare(ours, theirs, a, b[:, 0], tol=1e-3)


def test_triangular_solve_right_side():
    a = general(3, 3) + 3 * np.eye(3, dtype=np.float32)
    b = general(2, 3)
    for kwargs in ({"lower": True}, {"lower": False, "transpose_a": True}):
        compare(
            lambda x, y, kw=kwargs: decompositions.triangular_solve(x, y, left_side=False, **kw),
            lambda x, y, kw=kwargs: jax.lax.linalg.triangular_solve(x, y, left_side=False, **kw),
            a,
            b,
            tol=1e-3,
        )


def test_cho_factor_and_solve():
    a = spd(4, 4)
    b = general(4, 2)
    for lower in (False, True):
        compare(
            lambda x, y, lo=lower: rsl.cho_solve(rsl.cho_factor(x, lower=lo), y),
            lambda x, y, lo=lower: jsl.cho_solve(jsl.cho_factor(x, lower=lo), y),
            a,
            b,
            tol=1e-3,
        )
    compare(
        lambda x, y: rsl.solve(x, y, assume_a="pos"),
        lambda x, y: jsl.solve(x, y, assume_a="pos"),
        a,
        b,
    )


@pytest.mark.parametrize("shape", [(4, 4), (1, 1), (3, 5, 5)])
def test_eigh(shape):
    a = general(*shape)
    expected_w = np.asarray(jnp.linalg.eigvalsh(a))
    for backend, (w, v) in zip(
        ("ref", "pjrt"), both(lambda x: tuple(rnp.linalg.eigh(x)), a), strict=True
    ):
        close(w, expected_w, 1e-4, backend)
        w, v = np.asarray(w), np.asarray(v)
        sym = (a + np.swapaxes(a, -1, -2)) / 2
        close(v @ (w[..., None] * np.swapaxes(v, -1, -2)), sym, 1e-4, backend)
        close(
            np.swapaxes(v, -1, -2) @ v,
            np.broadcast_to(np.eye(shape[-1], dtype=np.float32), shape),
            1e-4,
        )
        expected_v = np.asarray(jnp.linalg.eigh(a).eigenvectors)
        signs = np.sign(np.sum(v * expected_v, axis=-2, keepdims=True))
        close(v * signs, expected_v, 1e-3, backend)
    compare(rnp.linalg.eigvalsh, jnp.linalg.eigvalsh, a, tol=1e-4)


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3), (2, 5, 2)])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_svd(shape, full_matrices):
    a = general(*shape)
    m, n = shape[-2:]
    k = min(m, n)
    expected = jnp.linalg.svd(a, full_matrices=full_matrices)
    for backend, (u, s, vh) in zip(
        ("ref", "pjrt"), both(lambda x: tuple(rnp.linalg.svd(x, full_matrices)), a), strict=True
    ):
        close(s, expected.S, 1e-4, backend)
        assert u.shape == expected.U.shape and vh.shape == expected.Vh.shape
        u, s, vh = np.asarray(u), np.asarray(s), np.asarray(vh)
        close((u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :], a, 1e-4, backend)
        close(
            np.swapaxes(u, -1, -2) @ u,
            np.broadcast_to(
                np.eye(u.shape[-1], dtype=np.float32), u.shape[:-2] + (u.shape[-1],) * 2
            ),
            1e-4,
        )
        close(
            vh @ np.swapaxes(vh, -1, -2),
            np.broadcast_to(
                np.eye(vh.shape[-2], dtype=np.float32), vh.shape[:-2] + (vh.shape[-2],) * 2
            ),
            1e-4,
        )
        signs = np.sign(
            np.sum(u[..., :, :k] * np.asarray(expected.U)[..., :, :k], axis=-2, keepdims=True)
        )
        close(u[..., :, :k] * signs, np.asarray(expected.U)[..., :, :k], 1e-3, backend)
    compare(rnp.linalg.svdvals, jnp.linalg.svdvals, a, tol=1e-4)


def test_pinv_rank_power_lstsq_cond():
    a = general(4, 3)
    compare(rnp.linalg.pinv, jnp.linalg.pinv, a, tol=1e-3)
    compare(rnp.linalg.matrix_rank, jnp.linalg.matrix_rank, a)
    low_rank = general(4, 1) @ general(1, 4)
    compare(rnp.linalg.matrix_rank, jnp.linalg.matrix_rank, low_rank)
    square = general(3, 3) / 2
    for n in (0, 1, 2, 5, -1, -3):
        compare(
            lambda x, n=n: rnp.linalg.matrix_power(x, n),
            lambda x, n=n: jnp.linalg.matrix_power(x, n),
            square,
            tol=1e-3,
        )
    b = general(4)
    compare(
        lambda x, y: rnp.linalg.lstsq(x, y), lambda x, y: jnp.linalg.lstsq(x, y), a, b, tol=1e-3
    )
    compare(rnp.linalg.cond, jnp.linalg.cond, square, tol=1e-3)
    compare(
        lambda x: rnp.linalg.multi_dot([x, x.T, x]), lambda x: jnp.linalg.multi_dot([x, x.T, x]), a
    )


@pytest.mark.parametrize("ord_", [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf])
def test_matrix_norms(ord_):
    a = general(2, 3, 4)
    compare(
        lambda x: rnp.linalg.norm(x, ord_, axis=(1, 2)),
        lambda x: jnp.linalg.norm(x, ord_, axis=(1, 2)),
        a,
    )
    compare(
        lambda x: rnp.linalg.norm(x, ord_, axis=(2, 0), keepdims=True),
        lambda x: jnp.linalg.norm(x, ord_, axis=(2, 0), keepdims=True),
        a,
    )
    compare(lambda x: rnp.linalg.norm(x, ord_), lambda x: jnp.linalg.norm(x, ord_), a[0])


@pytest.mark.parametrize("ord_", [None, 1, 2, 3, 0.5, 0, np.inf, -np.inf, -1])
def test_vector_norms(ord_):
    v = general(3, 5)
    compare(
        lambda x: rnp.linalg.norm(x, ord_, axis=1), lambda x: jnp.linalg.norm(x, ord_, axis=1), v
    )
    compare(lambda x: rnp.linalg.norm(x[0], ord_), lambda x: jnp.linalg.norm(x[0], ord_), v)
    order = 2 if ord_ is None else ord_
    compare(
        lambda x: rnp.linalg.vector_norm(x, ord=order),
        lambda x: jnp.linalg.vector_norm(x, ord=order),
        v,
    )
    compare(lambda x: rnp.linalg.norm(x), lambda x: jnp.linalg.norm(x), v.astype(np.int32))


def test_integer_input_promotes():
    a = np.array([[2, 1], [1, 3]], np.int32)
    compare(rnp.linalg.det, jnp.linalg.det, a)
    compare(rnp.linalg.inv, jnp.linalg.inv, a)


def test_errors_name_the_function():
    with pytest.raises(ValueError, match="inv: the last two dimensions must be square"):
        rnp.linalg.inv(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="cholesky: the input must have at least 2 dimensions"):
        rnp.linalg.cholesky(np.ones(3, np.float32))
    with pytest.raises(ValueError, match="qr: unsupported mode"):
        rnp.linalg.qr(np.ones((2, 2), np.float32), mode="raw")
    with pytest.raises(ValueError, match="norm: invalid norm order"):
        rnp.linalg.norm(np.ones((2, 2), np.float32), 3)
    with pytest.raises(ValueError, match="triangular_solve"):  # as JAX 0.10.2
        decompositions.triangular_solve(
            np.ones((2, 2), np.float32), np.ones((3, 1), np.float32), left_side=True
        )
    with pytest.raises(TypeError, match="solve_triangular.*position 1"):
        rsl.solve_triangular(np.eye(2, dtype=np.float32), [1.0, 2.0])


_LU_SOLVE_SHAPES = {
    "batch of vectors": ((3, 2, 2), (3, 2)),
    "empty batch of vectors": ((0, 2, 2), (0, 2)),
    "empty batch of matrices": ((0, 2, 2), (0, 2, 1)),
    "b broadcast over lu's batch": ((3, 2, 2), (2, 4)),
    "lu broadcast over b's batch": ((2, 2), (3, 2, 4)),
    "two batch dims of vectors": ((4, 3, 2, 2), (4, 3, 2)),
}


@pytest.mark.parametrize("name", sorted(_LU_SOLVE_SHAPES))
def test_lu_solve_batches_and_broadcasts_as_jax(backend, name):
    # JAX 0.10.2: b with one dimension less than lu is a batch of vectors
    # (with a FutureWarning), and the batch dimensions broadcast
    a_shape, b_shape = _LU_SOLVE_SHAPES[name]
    rng = np.random.RandomState(1)
    a = (rng.randn(*a_shape) + 3 * np.eye(a_shape[-1])).astype(np.float32)
    b = rng.randn(*b_shape).astype(np.float32)
    vectors = len(a_shape) == len(b_shape) + 1 and a_shape[-1] == b_shape[-1]
    with pytest.warns(FutureWarning) if vectors else _no_warning():
        got = rsl.lu_solve(rsl.lu_factor(a), b)
    with warnings.catch_warnings():
        # (JAX warns when it traces its jitted lu_solve, so once per shape)
        warnings.simplefilter("ignore", FutureWarning)
        want = jsl.lu_solve(jsl.lu_factor(a), b)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("trans", [1, 2])
def test_lu_solve_transposed_as_jax(backend, trans):
    rng = np.random.RandomState(2)
    a = (rng.randn(3, 4, 4) + 4 * np.eye(4) + 1j * rng.randn(3, 4, 4)).astype(np.complex64)
    b = rng.randn(3, 4, 2).astype(np.float32)
    got = rsl.lu_solve(rsl.lu_factor(a), b, trans=trans)
    want = jsl.lu_solve(jsl.lu_factor(a), b, trans=trans)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError):
        rsl.lu_solve(rsl.lu_factor(a), b, trans=3)


def _no_warning():
    stack = contextlib.ExitStack()
    stack.enter_context(warnings.catch_warnings())
    warnings.simplefilter("error", FutureWarning)
    return stack


# --- complex operands: pjrt's lowerings against JAX (and the reference) ------------------------
# complex64 and, with x64, complex128; tolerances from the dtype's epsilon.

COMPLEX = {"c64": (np.complex64, 2e-4), "c128": (np.complex128, 1e-10)}


@pytest.fixture(params=sorted(COMPLEX))
def cdtype(request):
    dtype, tol = COMPLEX[request.param]
    if dtype == np.complex128:
        request.getfixturevalue("x64")
    return np.dtype(dtype), tol


def cgeneral(dtype, *shape):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


def chermitian(dtype, *shape):
    a = cgeneral(dtype, *shape)
    n = shape[-1]
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)


def test_complex_lu_solve_inv_det(cdtype):
    dtype, tol = cdtype
    a, b = cgeneral(dtype, 4, 4), cgeneral(dtype, 4, 2)
    compare(decompositions.lu, jax.lax.linalg.lu, a, tol=tol)
    compare(decompositions.lu, jax.lax.linalg.lu, cgeneral(dtype, 2, 3, 5), tol=tol)
    compare(decompositions.lu, jax.lax.linalg.lu, cgeneral(dtype, 5, 3), tol=tol)
    compare(rsl.lu, jsl.lu, a, tol=tol)  # p is real, as JAX's
    compare(rsl.lu_factor, jsl.lu_factor, a, tol=tol)
    compare(
        lambda x, y: rsl.lu_solve(rsl.lu_factor(x), y, trans=2),
        lambda x, y: jsl.lu_solve(jsl.lu_factor(x), y, trans=2),
        a, b, tol=tol,
    )  # fmt: skip
    compare(rnp.linalg.solve, jnp.linalg.solve, a, b, tol=tol)
    compare(rnp.linalg.inv, jnp.linalg.inv, cgeneral(dtype, 2, 3, 3), tol=tol)
    compare(rnp.linalg.det, jnp.linalg.det, a, tol=tol)
    compare(lambda x: tuple(rnp.linalg.slogdet(x)), lambda x: tuple(jnp.linalg.slogdet(x)), a,
            tol=tol)  # fmt: skip


def test_complex_lu_pivots_on_abs_re_plus_abs_im():
    # LAPACK's getrf pivots on i?amax's |re| + |im|: 2+2j (4) beats 3 (3), though |2+2j| < 3
    a = np.array([[3, 0], [2 + 2j, 1]], np.complex64)
    compare(decompositions.lu, jax.lax.linalg.lu, a)
    for out in both(decompositions.lu, a):
        np.testing.assert_array_equal(np.asarray(out[1]), [1, 1])


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("trans", [0, 1, 2])
def test_complex_solve_triangular(cdtype, lower, trans):
    dtype, tol = cdtype
    a = cgeneral(dtype, 4, 4) + 4 * np.eye(4, dtype=dtype)
    b = cgeneral(dtype, 4, 3)
    compare(
        lambda x, y: rsl.solve_triangular(x, y, trans=trans, lower=lower),
        lambda x, y: jsl.solve_triangular(x, y, trans=trans, lower=lower),
        a, b, tol=tol,
    )  # fmt: skip
    compare(
        lambda x, y: decompositions.triangular_solve(x, y, lower=lower, conjugate_a=True),
        lambda x, y: jax.lax.linalg.triangular_solve(x, y, lower=lower, conjugate_a=True),
        a, b.T, tol=tol,
    )  # fmt: skip


def test_complex_cholesky_and_qr(cdtype):
    dtype, tol = cdtype
    h, b = chermitian(dtype, 2, 4, 4), cgeneral(dtype, 2, 4, 2)
    compare(rnp.linalg.cholesky, jnp.linalg.cholesky, h, tol=tol)
    compare(
        lambda x, y: rsl.cho_solve(rsl.cho_factor(x), y),
        lambda x, y: jsl.cho_solve(jsl.cho_factor(x), y),
        h, b, tol=tol,
    )  # fmt: skip
    # R's diagonal is real with LAPACK's signs, so Q and R are JAX's
    for shape in ((5, 3), (3, 5), (2, 4, 4)):
        for mode in ("reduced", "complete"):
            compare(lambda x, m=mode: rnp.linalg.qr(x, m), lambda x, m=mode: jnp.linalg.qr(x, m),
                    cgeneral(dtype, *shape), tol=tol)  # fmt: skip


def _align_phases(v, expected):
    """``v``'s columns times the unit phases that best match ``expected``'s."""
    inner = np.sum(np.conj(v) * expected, axis=-2, keepdims=True)
    return v * inner / np.abs(inner)


def test_complex_eigh(cdtype):
    dtype, tol = cdtype
    h = chermitian(dtype, 2, 4, 4)
    expected_w, expected_v = (np.asarray(o) for o in jnp.linalg.eigh(h))
    for backend, (w, v) in zip(("ref", "pjrt"), both(lambda x: tuple(rnp.linalg.eigh(x)), h),
                               strict=True):  # fmt: skip
        close(w, expected_w, tol, backend)
        v = np.asarray(v)
        close(_align_phases(v, expected_v), expected_v, 10 * tol, backend)
        close((v * np.asarray(w)[..., None, :]) @ np.conj(np.swapaxes(v, -1, -2)), h, tol, backend)
    # only the lower triangle is read: the upper one is its conjugate mirror
    lower = np.tril(h) + np.triu(cgeneral(dtype, 4, 4), 1)
    compare(
        lambda x: decompositions.eigh(x, symmetrize_input=False)[1],
        lambda x: jax.lax.linalg.eigh(x, symmetrize_input=False)[1],
        lower, tol=tol,
    )  # fmt: skip


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3)])
def test_complex_svd(cdtype, shape):
    dtype, tol = cdtype
    a = cgeneral(dtype, *shape)
    expected = jnp.linalg.svd(a, full_matrices=False)
    for backend, (u, s, vh) in zip(
        ("ref", "pjrt"), both(lambda x: tuple(rnp.linalg.svd(x, False)), a), strict=True
    ):
        close(s, expected.S, tol, backend)
        u, vh = np.asarray(u), np.asarray(vh)
        close((u * np.asarray(s)[..., None, :]) @ vh, a, tol, backend)
        close(_align_phases(u, np.asarray(expected.U)), expected.U, 10 * tol, backend)
    for backend, (u, _, vh) in zip(
        ("ref", "pjrt"), both(lambda x: tuple(rnp.linalg.svd(x, True)), a), strict=True
    ):
        for q in (np.asarray(u), np.conj(np.swapaxes(np.asarray(vh), -1, -2))):
            eye = np.broadcast_to(np.eye(q.shape[-1]), q.shape).astype(dtype)
            close(np.conj(np.swapaxes(q, -1, -2)) @ q, eye, tol, backend)
    compare(rnp.linalg.pinv, jnp.linalg.pinv, a, tol=10 * tol)


def test_complex_gradients(cdtype):
    dtype, tol = cdtype
    a, h = cgeneral(dtype, 3, 3), chermitian(dtype, 3, 3)
    w = RNG.standard_normal(3)
    losses = [
        (lambda x: rnp.linalg.det(x).real, lambda x: jnp.linalg.det(x).real, a),
        (lambda x: (rnp.linalg.inv(x) * w).imag.sum(),
         lambda x: (jnp.linalg.inv(x) * w).imag.sum(), a),
        (lambda x: rnp.abs(rnp.linalg.cholesky(x) * w).sum(),
         lambda x: jnp.abs(jnp.linalg.cholesky(x) * w).sum(), h),
        (lambda x: rnp.abs(rnp.linalg.qr(x)[1] * w).sum(),
         lambda x: jnp.abs(jnp.linalg.qr(x)[1] * w).sum(), a),
        # eigenvalues and a phase-free function of the eigenvectors
        (lambda x: (rnp.linalg.eigh(x)[0] * w).sum() + rnp.abs(rnp.linalg.eigh(x)[1][0]).sum(),
         lambda x: (jnp.linalg.eigh(x)[0] * w).sum() + jnp.abs(jnp.linalg.eigh(x)[1][0]).sum(), h),
        # singular values and phase-free functions of the vectors, tall and wide
        (lambda x: _svd_loss(rnp, x, w), lambda x: _svd_loss(jnp, x, w), cgeneral(dtype, 4, 3)),
        (lambda x: _svd_loss(rnp, x, w), lambda x: _svd_loss(jnp, x, w), cgeneral(dtype, 3, 4)),
    ]  # fmt: skip
    for ours, theirs, x in losses:
        compare(ri.grad(ours), jax.grad(theirs), x, tol=10 * tol)


def _svd_loss(np_, x, w):
    u, s, vh = np_.linalg.svd(x, full_matrices=False)
    return (s * w).sum() + np_.abs(u[0]).sum() + np_.abs(vh[:, 0]).sum()


def test_svd_gradient_of_a_square_full_svd():
    # JAX 0.10.2 differentiates full_matrices=True when the matrix is square (thin == full)
    def loss(np_):
        return lambda x: np_.abs(np_.linalg.svd(x, full_matrices=True)[0]).sum()

    compare(ri.grad(loss(rnp)), jax.grad(loss(jnp)), general(3, 3), tol=1e-4)
    with pytest.raises(NotImplementedError, match="svd: .*full_matrices=True of a non-square"):
        ri.grad(loss(rnp))(general(4, 3))


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_qr_nan_stays_where_lapack_puts_it(dtype):
    # a NaN in a later column makes that reflection NaN; LAPACK applies it to
    # the trailing block (and Q's later columns) only, so the first column of
    # Q and R stays finite; the lowering spread it through 0 * NaN before
    a = np.array([[1, 2], [3, np.nan], [5, 6]], dtype)
    if dtype == np.complex64:
        a = a + 1j * np.array([[1, 0], [0, 1], [2, 0]], dtype)
    expected = [np.asarray(o) for o in jnp.linalg.qr(a)]
    for backend, out in zip(("ref", "pjrt"), both(lambda x: tuple(rnp.linalg.qr(x)), a),
                            strict=True):  # fmt: skip
        for o, e in zip(out, expected, strict=True):
            o = np.asarray(o)
            np.testing.assert_array_equal(np.isnan(o), np.isnan(e), err_msg=backend)
            finite = ~np.isnan(e)
            close(o[finite], e[finite], what=backend)
