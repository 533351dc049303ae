"""ri.mask of the general gather and scatters (lax.gather/scatter* with dimension numbers).

Inputs are padded with garbage (NaN operand entries, huge indices) beyond
the logical sizes; the valid region of the masked result must equal
``jax.lax.gather``/``scatter*`` on the unpadded inputs (JAX is the oracle).
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import refimpl as ri
from refimpl import lax

F32, I32 = np.float32, np.int32
GDN = lax.GatherDimensionNumbers
JDN = jax.lax.GatherDimensionNumbers


def _pad(x: np.ndarray, shape: tuple[int, ...], garbage) -> np.ndarray:
    out = np.full(shape, garbage, x.dtype)
    out[tuple(slice(0, n) for n in x.shape)] = x
    return out


def _check(fun, jax_fun, in_shapes, out_shape, logical_args, padded_shapes, sizes, backend):
    padded = [
        _pad(a, s, np.nan if a.dtype == F32 else 2**31 - 1)
        for a, s in zip(logical_args, padded_shapes, strict=True)
    ]
    masked = ri.jit(ri.mask(fun, in_shapes, out_shape), backend=backend)
    got = np.asarray(masked(padded, sizes))
    want = np.asarray(jax_fun(*logical_args))
    np.testing.assert_array_equal(got[tuple(slice(0, n) for n in want.shape)], want)


ROWS = (GDN((1,), (0,), (0,)), JDN((1,), (0,), (0,)))  # x[i, :] for each i


@pytest.mark.parametrize("backend", ["ref", "pjrt"])
@pytest.mark.parametrize("mode", ["clip", "fill", "promise_in_bounds"])
@pytest.mark.parametrize(("n", "k", "extra"), [(1, 1, 2), (3, 4, 1), (5, 2, 3), (4, 4, 0)])
def test_rows_of_a_masked_operand_with_masked_indices(mode, n, k, extra, backend):
    rng = np.random.default_rng(n * 10 + k)
    x = rng.standard_normal((n, 3)).astype(F32)
    idx = rng.integers(-2, n + 3, size=(k, 1)).astype(I32)
    if mode == "promise_in_bounds":  # out-of-bounds starts are the caller's error
        idx = np.clip(idx, 0, n - 1)
    fun = lambda x, i: lax.gather(x, i, ROWS[0], (1, 3), mode=mode)  # noqa: E731
    jax_fun = lambda x, i: jax.lax.gather(x, i, ROWS[1], (1, 3), mode=mode)  # noqa: E731
    _check(fun, jax_fun, ["(n, 3)", "(k, 1)"], "(k, 3)", [x, idx],
           [(n + extra, 3), (k + extra, 1)], {"n": n, "k": k}, backend)  # fmt: skip


@pytest.mark.parametrize("mode", ["clip", "fill"])
@pytest.mark.parametrize(("n", "extra"), [(2, 2), (3, 1), (6, 3), (4, 0)])
def test_window_of_two_along_a_masked_dim(mode, n, extra):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(F32)
    idx = np.arange(-1, n + 2, dtype=I32)[:, None]
    dn, jdn = GDN((1,), (), (0,)), JDN((1,), (), (0,))
    fun = lambda x, i: lax.gather(x, i, dn, (2,), mode=mode, fill_value=-7.0)  # noqa: E731
    jax_fun = lambda x, i: jax.lax.gather(x, i, jdn, (2,), mode=mode, fill_value=-7.0)  # noqa: E731
    _check(fun, jax_fun, ["(n,)", "(k, 1)"], "(k, 2)", [x, idx], [(n + extra,), (n + 3, 1)],
           {"n": n, "k": n + 3}, "ref")  # fmt: skip


@pytest.mark.parametrize(("n", "extra"), [(1, 2), (3, 1), (4, 0)])
def test_masked_dim_sliced_whole_keeps_its_logical_size(n, extra):
    rng = np.random.default_rng(n)
    x = rng.standard_normal((3, n)).astype(F32)
    idx = np.array([[2], [0], [5]], I32)
    dn, jdn = GDN((1,), (0,), (0,)), JDN((1,), (0,), (0,))
    fun = lambda x, i: lax.gather(x, i, dn, (1, x.shape[1]), mode="clip")  # noqa: E731
    jax_fun = lambda x, i: jax.lax.gather(x, i, jdn, (1, n), mode="clip")  # noqa: E731
    _check(fun, jax_fun, ["(3, n)", "(3, 1)"], "(3, n)", [x, idx], [(3, n + extra), (3, 1)],
           {"n": n}, "ref")  # fmt: skip


@pytest.mark.parametrize(("n", "extra"), [(1, 2), (3, 1), (5, 0)])
def test_masked_operand_batching_dim(n, extra):
    """out[b] = x[b, i[b]] with b the batching dim of both."""
    rng = np.random.default_rng(n)
    x = rng.standard_normal((n, 4)).astype(F32)
    idx = rng.integers(-1, 6, size=(n, 1)).astype(I32)
    dn = GDN((), (1,), (1,), operand_batching_dims=(0,), start_indices_batching_dims=(0,))
    jdn = JDN((), (1,), (1,), operand_batching_dims=(0,), start_indices_batching_dims=(0,))
    fun = lambda x, i: lax.gather(x, i, dn, (1, 1), mode="fill")  # noqa: E731
    jax_fun = lambda x, i: jax.lax.gather(x, i, jdn, (1, 1), mode="fill")  # noqa: E731
    _check(fun, jax_fun, ["(n, 4)", "(n, 1)"], "(n,)", [x, idx], [(n + extra, 4), (n + extra, 1)],
           {"n": n}, "ref")  # fmt: skip


def test_masked_index_vector_dim_is_unsupported():
    dn = GDN((), (0,), (0,))
    masked = ri.mask(lambda x, i: lax.gather(x, i, dn, (1,)), ["(4,)", "(2, n)"], "(2,)")
    with pytest.raises(NotImplementedError, match="general_gather: the index vector dim"):
        masked([np.zeros(4, F32), np.zeros((2, 1), I32)], {"n": 1})


# --- general scatters -------------------------------------------------------------------

SDN = lax.ScatterDimensionNumbers
JSDN = jax.lax.ScatterDimensionNumbers
KINDS = ["scatter", "scatter_add", "scatter_sub", "scatter_mul", "scatter_min", "scatter_max"]


@pytest.mark.parametrize("backend", ["ref", "pjrt"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("mode", ["clip", "fill"])
@pytest.mark.parametrize(("n", "k", "extra"), [(1, 1, 2), (3, 4, 1), (5, 2, 3), (4, 4, 0)])
def test_rows_into_a_masked_operand_with_masked_indices(kind, mode, n, k, extra, backend):
    """x[i[j], :] op= u[j, :]; padding rows of i and u must not write."""
    rng = np.random.default_rng(n * 10 + k)
    x = rng.standard_normal((n, 3)).astype(F32)
    idx = rng.integers(-2, n + 3, size=(k, 1)).astype(I32)
    if kind == "scatter":  # repeated indices: which write wins is unspecified in JAX
        idx[:, 0] = rng.permutation(np.arange(-2, n + k + 3))[:k]
    upd = rng.standard_normal((k, 3)).astype(F32)
    dn, jdn = SDN((1,), (0,), (0,)), JSDN((1,), (0,), (0,))
    fun = lambda x, i, u: getattr(lax, kind)(x, i, u, dn, mode=mode)  # noqa: E731
    jax_fun = lambda x, i, u: getattr(jax.lax, kind)(x, i, u, jdn, mode=mode)  # noqa: E731
    _check(fun, jax_fun, ["(n, 3)", "(k, 1)", "(k, 3)"], "(n, 3)", [x, idx, upd],
           [(n + extra, 3), (k + extra, 1), (k + extra, 3)], {"n": n, "k": k}, backend)  # fmt: skip


@pytest.mark.parametrize("mode", ["clip", "fill"])
@pytest.mark.parametrize(("n", "extra"), [(2, 2), (3, 1), (6, 3), (4, 0)])
def test_scatter_add_window_of_two_along_a_masked_dim(mode, n, extra):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(F32)
    idx = np.arange(-1, n + 2, dtype=I32)[:, None]
    upd = rng.standard_normal((n + 3, 2)).astype(F32)
    dn, jdn = SDN((1,), (), (0,)), JSDN((1,), (), (0,))
    fun = lambda x, i, u: lax.scatter_add(x, i, u, dn, mode=mode)  # noqa: E731
    jax_fun = lambda x, i, u: jax.lax.scatter_add(x, i, u, jdn, mode=mode)  # noqa: E731
    _check(fun, jax_fun, ["(n,)", "(k, 1)", "(k, 2)"], "(n,)", [x, idx, upd],
           [(n + extra,), (n + 3, 1), (n + 3, 2)], {"n": n, "k": n + 3}, "ref")  # fmt: skip


@pytest.mark.parametrize(("n", "extra"), [(1, 2), (3, 1), (4, 0)])
def test_scatter_whole_masked_window_and_unmasked_indices(n, extra):
    """x[i[j], :] = u[j, :] with the row dim masked (windows span it whole)."""
    rng = np.random.default_rng(n)
    x = rng.standard_normal((3, n)).astype(F32)
    idx = np.array([[2], [0], [5]], I32)
    upd = rng.standard_normal((3, n)).astype(F32)
    dn, jdn = SDN((1,), (0,), (0,)), JSDN((1,), (0,), (0,))
    fun = lambda x, i, u: lax.scatter_max(x, i, u, dn, mode="fill")  # noqa: E731
    jax_fun = lambda x, i, u: jax.lax.scatter_max(x, i, u, jdn, mode="fill")  # noqa: E731
    _check(fun, jax_fun, ["(3, n)", "(3, 1)", "(3, n)"], "(3, n)", [x, idx, upd],
           [(3, n + extra), (3, 1), (3, n + extra)], {"n": n}, "ref")  # fmt: skip


def test_scatter_partial_masked_update_window_is_unsupported():
    dn = SDN((1,), (0,), (0,))
    masked = ri.mask(
        lambda x, i, u: lax.scatter_add(x, i, u, dn), ["(4, 5)", "(2, 1)", "(2, n)"], "(4, 5)"
    )
    with pytest.raises(NotImplementedError, match="general_scatter_add: the updates' window dim"):
        masked([np.zeros((4, 5), F32), np.zeros((2, 1), I32), np.ones((2, 3), F32)], {"n": 2})


@pytest.mark.parametrize("mode", ["clip", "fill"])
@pytest.mark.parametrize(("n", "k", "extra"), [(1, 1, 2), (3, 4, 1), (4, 4, 0)])
def test_scatter_apply_rows_of_a_masked_operand(mode, n, k, extra):
    rng = np.random.default_rng(n * 10 + k)
    x = rng.standard_normal((n, 3)).astype(F32)
    idx = rng.permutation(np.arange(-2, n + k + 3))[:k, None].astype(I32)
    dn, jdn = SDN((1,), (0,), (0,)), JSDN((1,), (0,), (0,))

    def fun(x, i):
        return lax.scatter_apply(x, i, lambda v: v * 2.0 + 1.0, dn, update_shape=(i.shape[0], 3),
                                 mode=mode)  # fmt: skip

    def jax_fun(x, i):
        return jax.lax.scatter_apply(x, i, lambda v: v * 2.0 + 1.0, jdn, update_shape=(k, 3),
                                     mode=mode)  # fmt: skip

    _check(fun, jax_fun, ["(n, 3)", "(k, 1)"], "(n, 3)", [x, idx],
           [(n + extra, 3), (k + extra, 1)], {"n": n, "k": k}, "ref")  # fmt: skip
