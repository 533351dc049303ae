"""Programs whose output shardings JAX 0.10.2 types from sharded inputs (issue 33).

Each case is ``(mesh_shape, mesh_names, in_specs, build, args)``: ``build(lib)``
returns the function (written once for ``jax`` and ``refimpl``), ``in_specs``
one spec tuple per argument (``None``: a plain, unsharded array; ``()``:
replicated over the mesh). Every case
runs on a mesh of Explicit axes and on one of Auto axes.

Run as a script (``python tests/helpers/sharding_rules_cases.py OUT``) it
records in OUT (a pickle) what ``jax.jit(f)(*sharded_args)`` gives on 4 CPU
devices: per case and axis type, the outputs' specs as written
(``("specs", [spec, ...])``) or the exception (``("error", class name,
message)``). XLA_FLAGS is set before jax is imported.
"""

from __future__ import annotations

import os
import pickle
import sys

import numpy as np

X8 = np.arange(8.0, dtype=np.float32)
X84 = np.arange(32.0, dtype=np.float32).reshape(8, 4)
X44 = np.arange(16.0, dtype=np.float32).reshape(4, 4)
X48 = np.arange(32.0, dtype=np.float32).reshape(4, 8)
X248 = np.arange(64.0, dtype=np.float32).reshape(2, 4, 8)
W43 = np.ones((4, 3), np.float32)
X444 = np.ones((4, 4, 4), np.float32)
I2 = np.array([0, 2], np.int32)
X41 = np.arange(4.0, dtype=np.float32).reshape(4, 1)
X143 = np.arange(12.0, dtype=np.float32).reshape(1, 4, 3)

ONE = ((4,), ("x",))
TWO = ((2, 2), ("x", "y"))


def _case(mesh, specs, build, *args):
    return (mesh[0], mesh[1], specs, build, args)


def _scan(lib):
    return lambda x: lib.lax.scan(lambda c, r: (c + r, r * 2), lib.numpy.zeros(4, x.dtype), x)


def _while(lib):
    return lambda x: lib.lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2), (0, x))


def _custom_vjp(lib):
    @lib.custom_vjp
    def double(x):
        return x * 2

    double.defvjp(lambda x: (x * 2, None), lambda _, g: (g * 2,))
    return lambda x: double(x) + 1


def _gather(lib):
    dn = lib.lax.GatherDimensionNumbers(
        offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,)
    )
    return lambda x: lib.lax.gather(x, I2[:, None], dn, (1, 8))


def _gather_window(size):
    """A gather of one window of ``size`` rows of f32[4@x,1] (no index)."""

    def build(lib):
        dn = lib.lax.GatherDimensionNumbers((0,), (1,), ())
        return lambda x: lib.lax.gather(x, np.zeros((0,), np.int32), dn, (size, 1))

    return build


def _scatter_batched(*dims_and_index_shape):
    """A scatter_add with batching axes: dimension numbers, then the indices' shape."""
    *dims, index_shape = dims_and_index_shape

    def build(lib):
        dn = lib.lax.ScatterDimensionNumbers(*dims)
        indices = np.zeros(index_shape, np.int32)
        return lambda x: lib.lax.scatter_add(x, indices, np.ones(index_shape[0], np.float32), dn)

    return build


def _scatter_add(lib):
    dn = lib.lax.ScatterDimensionNumbers(
        update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
    )
    return lambda x, u: lib.lax.scatter_add(x, I2[:, None], u, dn)


CASES = {
    # elementwise and broadcasting
    "mul_scalar": _case(ONE, [("x",)], lambda lib: lambda x: x * 2, X8),
    "add_unsharded": _case(ONE, [("x",), None], lambda lib: lambda x, y: x + y, X8, X8),
    "add_numpy_constant": _case(ONE, [("x",)], lambda lib: lambda x: x + np.ones(8), X8),
    "outer_product": _case(ONE, [("x",)], lambda lib: lambda x: x[:, None] * x[None, :], X8),
    "sin_2d": _case(TWO, [("x", "y")], lambda lib: lambda x: lib.numpy.sin(x), X44),
    "add_2d_conflict": _case(
        TWO, [("x", None), ("y", None)], lambda lib: lambda a, b: a + b, X44, X44
    ),
    "add_2d_complement": _case(
        TWO, [("x", None), (None, "y")], lambda lib: lambda a, b: a * b, X44, X44
    ),
    "row_broadcast": _case(TWO, [("x", "y"), None], lambda lib: lambda a, b: a + b, X44, X44[0]),
    "compare_where": _case(ONE, [("x",)], lambda lib: lambda x: lib.numpy.where(x > 2, x, 0.0), X8),
    "astype": _case(ONE, [("x",)], lambda lib: lambda x: x.astype(lib.numpy.int32), X8),
    "clip": _case(ONE, [("x",)], lambda lib: lambda x: lib.numpy.clip(x, 1.0, 5.0), X8),
    "multi_axis_spec": _case(TWO, [(("x", "y"),)], lambda lib: lambda x: lib.numpy.exp(x) + 1, X8),
    # reductions
    "sum_all": _case(ONE, [("x",)], lambda lib: lambda x: x.sum(), X8),
    "sum_sharded_axis": _case(ONE, [("x", None)], lambda lib: lambda x: x.sum(0), X84),
    "max_free_axis": _case(ONE, [("x", None)], lambda lib: lambda x: x.max(1), X84),
    "argmax_2d": _case(TWO, [("x", "y")], lambda lib: lambda x: lib.numpy.argmax(x, axis=1), X44),
    "mean_2d": _case(TWO, [("x", "y")], lambda lib: lambda x: x.mean(0), X44),
    "prod_keepdims": _case(ONE, [(None, "x")], lambda lib: lambda x: x.prod(0, keepdims=True), X48),
    # reshape, transpose, squeeze, expand_dims
    "reshape_split": _case(ONE, [("x",)], lambda lib: lambda x: x.reshape(4, 2), X8),
    "reshape_split_minor": _case(ONE, [("x",)], lambda lib: lambda x: x.reshape(2, 4), X8),
    "reshape_merge": _case(ONE, [("x", None)], lambda lib: lambda x: x.reshape(32), X84),
    "reshape_merge_minor": _case(ONE, [(None, "x")], lambda lib: lambda x: x.reshape(32), X84),
    "reshape_2d_split": _case(TWO, [(("x", "y"),)], lambda lib: lambda x: x.reshape(4, 2), X8),
    "reshape_3d_merge": _case(TWO, [("x", "y", None)], lambda lib: lambda x: x.reshape(8, 8), X248),
    "reshape_unsupported": _case(ONE, [(None, "x")], lambda lib: lambda x: x.reshape(8, 4), X48),
    "transpose": _case(TWO, [("x", None)], lambda lib: lambda x: x.T, X44),
    "expand_squeeze": _case(
        ONE, [("x",)], lambda lib: lambda x: lib.numpy.squeeze(x[None, :, None], (0, 2)) * 3, X8
    ),
    # dot_general
    "matmul_free": _case(ONE, [("x", None), None], lambda lib: lambda a, w: a @ w, X84, W43),
    "matmul_contracting": _case(ONE, [(None, "x"), None], lambda lib: lambda a, w: a @ w, X84, W43),
    "matmul_both_contracting": _case(
        ONE, [(None, "x"), ("x", None)], lambda lib: lambda a, b: a @ b, X44, X44
    ),
    "matmul_2d": _case(TWO, [("x", None), (None, "y")], lambda lib: lambda a, b: a @ b, X44, X44),
    "batched_matmul": _case(
        TWO,
        [("x", None, None), ("x", None, "y")],
        lambda lib: lambda a, b: lib.numpy.einsum("bij,bjk->bik", a, b),
        X248.reshape(2, 8, 4),
        X248,
    ),
    # slicing, indexing, concatenation
    "slice_even": _case(ONE, [("x",)], lambda lib: lambda x: x[:4], X8),
    "slice_free_axis": _case(ONE, [("x", None)], lambda lib: lambda x: x[:, 1:3], X84),
    "slice_uneven": _case(ONE, [("x",)], lambda lib: lambda x: x[1:4], X8),
    "dynamic_slice": _case(
        ONE, [(None, "x")], lambda lib: lambda x: lib.lax.dynamic_slice_in_dim(x, 1, 2, 0), X48
    ),
    "gather_free_axis": _case(TWO, [(None, "y")], _gather, X48),
    "gather_sharded_axis": _case(TWO, [("x", "y")], _gather, X48),
    "scatter_add_window": _case(
        ONE, [(None, "x"), (None, "x")], _scatter_add, X48, np.ones((2, 8), np.float32)
    ),
    "scatter_add_sharded_rows": _case(
        ONE, [("x", None), None], _scatter_add, X48, np.ones((2, 8), np.float32)
    ),
    "at_set_row": _case(ONE, [(None, "x")], lambda lib: lambda x: x.at[1].set(5.0), X48),
    "update_slice": _case(
        ONE,
        [(None, "x"), (None, "x")],
        lambda lib: lambda x, u: lib.lax.dynamic_update_slice(x, u, (1, 0)),
        X48,
        X48[:2],
    ),
    "update_slice_constant": _case(
        ONE,
        [(None, "x")],
        lambda lib: lambda x: lib.lax.dynamic_update_slice(x, lib.numpy.ones((1, 8)), (0, 0)),
        X48,
    ),
    "broadcast_to": _case(
        TWO, [("y",)], lambda lib: lambda x: lib.numpy.broadcast_to(x, (4, 8)), X8
    ),
    "top_k": _case(ONE, [("x", None)], lambda lib: lambda x: lib.lax.top_k(x, 2), X84),
    "select_mixed_typed": _case(
        ONE,
        [("x",), ()],
        lambda lib: lambda x, y: lib.numpy.where(x > 2, x, y),
        X8,
        X8,
    ),
    "take_free_axis": _case(ONE, [("x", None)], lambda lib: lambda x: x[:, I2], X84),
    "take_sharded_axis": _case(ONE, [("x", None)], lambda lib: lambda x: x[I2], X84),
    "concatenate": _case(
        ONE,
        [("x", None), ("x", None)],
        lambda lib: lambda a, b: lib.numpy.concatenate([a, b], 1),
        X84,
        X84,
    ),
    "concatenate_mixed": _case(
        ONE, [("x",), None], lambda lib: lambda a, b: lib.numpy.concatenate([a, b]), X8, X8
    ),
    "pad_free_axis": _case(
        ONE, [("x", None)], lambda lib: lambda x: lib.numpy.pad(x, ((0, 0), (1, 1))), X84
    ),
    "flip": _case(ONE, [("x",)], lambda lib: lambda x: lib.numpy.flip(x), X8),
    "cumsum_free_axis": _case(
        ONE, [("x", None)], lambda lib: lambda x: lib.numpy.cumsum(x, axis=1), X84
    ),
    "cumsum_sharded_axis": _case(ONE, [("x",)], lambda lib: lambda x: lib.numpy.cumsum(x), X8),
    "sort_free_axis": _case(
        ONE, [("x", None)], lambda lib: lambda x: lib.numpy.sort(x, axis=1), X84
    ),
    "sort_sharded_axis": _case(ONE, [("x",)], lambda lib: lambda x: lib.numpy.sort(x), X8),
    # constants and several outputs
    "iota_and_input": _case(
        ONE, [("x",)], lambda lib: lambda x: (lib.numpy.arange(8.0), x, 3.0), X8
    ),
    # control flow and calls
    "stop_gradient": _case(
        TWO, [(None, "y")], lambda lib: lambda x: lib.lax.stop_gradient(x) * 2, X44
    ),
    "nested_jit": _case(
        TWO, [("x", "y")], lambda lib: lambda x: lib.jit(lambda v: v.sum(0))(x) + 1, X44
    ),
    "checkpoint": _case(
        ONE, [("x", None)], lambda lib: lambda x: lib.checkpoint(lambda v: v @ W43)(x), X84
    ),
    "custom_vjp": _case(ONE, [("x",)], _custom_vjp, X8),
    "cond_branches_differ": _case(
        ONE,
        [("x", None)],
        lambda lib: lambda x: lib.lax.cond(True, lambda v: v, lambda v: v.T, x),
        X44,
    ),
    "cond": _case(
        ONE,
        [("x",)],
        lambda lib: lambda x: lib.lax.cond(x[0] > 0, lambda v: v + 1, lambda v: v * 2, x),
        X8,
    ),
    "scan": _case(ONE, [(None, "x")], _scan, X44),
    "while": _case(ONE, [("x",)], _while, X8),
    "relu_custom_jvp": _case(
        TWO, [("x", "y")], lambda lib: lambda x: lib.numpy.logaddexp(x, 1.0), X44
    ),
    # transformations, jnp compositions, linear algebra, FFT, convolution, windows
    "grad_sumsq": _case(ONE, [("x",)], lambda lib: lib.grad(lambda x: (x**2).sum()), X8),
    "vmap_dot": _case(ONE, [("x", None)], lambda lib: lib.vmap(lambda r: r @ r), X84),
    "softmax": _case(ONE, [("x", None)], lambda lib: lambda x: lib.nn.softmax(x, axis=-1), X84),
    "softmax_sharded": _case(ONE, [("x",)], lambda lib: lambda x: lib.nn.softmax(x), X8),
    "norm": _case(ONE, [("x", None)], lambda lib: lambda x: lib.numpy.linalg.norm(x, axis=1), X84),
    "tile": _case(ONE, [("x", None)], lambda lib: lambda x: lib.numpy.tile(x, (1, 2)), X84),
    "repeat": _case(ONE, [("x",)], lambda lib: lambda x: lib.numpy.repeat(x, 2), X8),
    "stack": _case(
        ONE, [("x",), ("x",)], lambda lib: lambda a, b: lib.numpy.stack([a, b], 1), X8, X8
    ),
    "split": _case(ONE, [("x", None)], lambda lib: lambda x: lib.numpy.split(x, 2, axis=1), X84),
    "split_sharded": _case(ONE, [("x",)], lambda lib: lambda x: lib.numpy.split(x, 2), X8),
    "expand_dims": _case(ONE, [("x",)], lambda lib: lambda x: lib.numpy.expand_dims(x, 1), X8),
    "ravel_2d": _case(TWO, [("x", "y")], lambda lib: lambda x: x.ravel(), X44),
    "reshape_3d": _case(TWO, [("x", None, "y")], lambda lib: lambda x: x.reshape(2, 32), X248),
    "swapaxes_3d": _case(
        TWO, [("x", None, "y")], lambda lib: lambda x: lib.numpy.swapaxes(x, 0, 2), X248
    ),
    "mean_int": _case(
        ONE, [("x",)], lambda lib: lambda x: lib.numpy.mean(x.astype(lib.numpy.int32)), X8
    ),
    "var": _case(ONE, [("x", None)], lambda lib: lambda x: lib.numpy.var(x, axis=0), X84),
    "argsort": _case(ONE, [("x", None)], lambda lib: lambda x: lib.numpy.argsort(x, axis=1), X84),
    "cholesky": _case(
        ONE,
        [("x", None, None)],
        lambda lib: (
            lambda x: lib.numpy.linalg.cholesky(x @ x.transpose(0, 2, 1) + 8 * lib.numpy.eye(4))
        ),
        X444,
    ),
    "fft": _case(ONE, [("x", None)], lambda lib: lambda x: lib.numpy.fft.fft(x).real, X84),
    "conv": _case(
        ONE,
        [("x", None, None), None],
        lambda lib: lambda x, w: lib.lax.conv(x, w, (1,), "SAME"),
        np.ones((4, 2, 8), np.float32),
        np.ones((3, 2, 3), np.float32),
    ),
    "integer_pow": _case(ONE, [("x",)], lambda lib: lambda x: x**3, X8),
    "outer_jnp": _case(ONE, [("x",), None], lambda lib: lambda a, b: lib.numpy.outer(a, b), X8, X8),
    "dot_vec": _case(ONE, [("x",), ("x",)], lambda lib: lambda a, b: a @ b, X8, X8),
    "matvec_contract": _case(
        ONE, [("x",), None], lambda lib: lambda a, w: a @ w, X8, np.ones((8, 3), np.float32)
    ),
    "random_normal_plus": _case(
        ONE, [("x",)], lambda lib: lambda x: x + lib.random.normal(lib.random.key(0), (8,)), X8
    ),
    "roll": _case(ONE, [("x",)], lambda lib: lambda x: lib.numpy.roll(x, 1), X8),
    "diff": _case(ONE, [("x", None)], lambda lib: lambda x: lib.numpy.diff(x, axis=1), X84),
    "triu": _case(ONE, [("x", None)], lambda lib: lambda x: lib.numpy.triu(x), X44),
    "max_pool": _case(
        ONE,
        [("x", None)],
        lambda lib: (
            lambda x: lib.lax.reduce_window(x, -np.inf, lib.lax.max, (1, 2), (1, 2), "VALID")
        ),
        X84,
    ),
    "reduce_window_sharded": _case(
        ONE,
        [("x", None)],
        lambda lib: lambda x: lib.lax.reduce_window(x, 0.0, lib.lax.add, (2, 1), (2, 1), "VALID"),
        X84,
    ),
    "argmax_sharded": _case(ONE, [("x",)], lambda lib: lambda x: lib.numpy.argmax(x), X8),
    "any": _case(ONE, [("x",)], lambda lib: lambda x: lib.numpy.any(x > 3), X8),
    "scan_xs": _case(
        ONE,
        [("x", None)],
        lambda lib: lambda x: lib.lax.scan(lambda c, r: (c + r.sum(), r * 2), 0.0, x),
        X84,
    ),
    "fori": _case(
        ONE, [("x",)], lambda lib: lambda x: lib.lax.fori_loop(0, 3, lambda i, v: v * 2, x), X8
    ),
    "map": _case(ONE, [(None, "x")], lambda lib: lambda x: lib.lax.map(lambda r: r * 2, x), X44),
    "remat_grad": _case(
        ONE,
        [("x",)],
        lambda lib: lib.grad(lambda x: lib.checkpoint(lambda v: lib.numpy.sin(v))(x).sum()),
        X8,
    ),
    # indexing, mixed specs, 2-D meshes, AD
    "int_index_sharded": _case(ONE, [("x", None)], lambda lib: lambda x: x[2], X84),
    "int_index_free": _case(ONE, [("x", None)], lambda lib: lambda x: x[:, 2], X84),
    "dyn_index_sharded": _case(
        ONE, [("x", None), None], lambda lib: lambda x, i: x[i], X84, np.int32(1)
    ),
    "tuple_vs_single": _case(TWO, [(("x", "y"),), ("x",)], lambda lib: lambda a, b: a + b, X8, X8),
    "dot_dup": _case(ONE, [("x", None), (None, "x")], lambda lib: lambda a, b: a @ b, X84, X44),
    "dot_batch_mismatch": _case(
        TWO,
        [("x", None, None), ("y", None, None)],
        lambda lib: lambda a, b: lib.numpy.einsum("bij,bjk->bik", a, b),
        X248.reshape(2, 8, 4),
        X248,
    ),
    "partial_2d": _case(TWO, [("x",)], lambda lib: lambda x: (x * 2).sum(), X8),
    "y_only": _case(TWO, [(None, "y")], lambda lib: lambda x: x.T @ x, X44),
    "max_tuple": _case(TWO, [(("x", "y"), None)], lambda lib: lambda x: x.max(1), X84),
    "take_along": _case(
        ONE,
        [("x", None)],
        lambda lib: (
            lambda x: lib.numpy.take_along_axis(x, lib.numpy.zeros((8, 2), lib.numpy.int32), axis=1)
        ),
        X84,
    ),
    "einsum_t": _case(
        ONE, [("x", None)], lambda lib: lambda x: lib.numpy.einsum("ij,kj->ik", x, x), X84
    ),
    "while_consts": _case(
        ONE,
        [("x",), None],
        lambda lib: lambda x, y: lib.lax.while_loop(lambda c: c.sum() < 100, lambda c: c + y, x),
        X8,
        X8,
    ),
    "logsumexp": _case(
        ONE, [("x", None)], lambda lib: lambda x: lib.scipy.special.logsumexp(x, axis=1), X84
    ),
    "mean_keepdims_sub": _case(
        ONE, [("x", None)], lambda lib: lambda x: x - x.mean(1, keepdims=True), X84
    ),
    "std_sharded": _case(ONE, [("x", None)], lambda lib: lambda x: x.std(0), X84),
    "where_mask": _case(
        ONE, [("x",), ("x",)], lambda lib: lambda x, m: lib.numpy.where(m > 3, x, -x), X8, X8
    ),
    "astype_bf16": _case(ONE, [("x",)], lambda lib: lambda x: x.astype(lib.numpy.bfloat16) * 2, X8),
    "minimum": _case(ONE, [("x",), None], lambda lib: lambda a, b: lib.numpy.minimum(a, b), X8, X8),
    "arange_plus": _case(ONE, [("x",)], lambda lib: lambda x: x + lib.numpy.arange(8.0), X8),
    "full_like_add": _case(
        ONE, [("x",)], lambda lib: lambda x: lib.numpy.full_like(x, 2.0) + x, X8
    ),
    "flatten_3d": _case(TWO, [("x", "y", None)], lambda lib: lambda x: x.reshape(-1), X248),
    "split_3d": _case(TWO, [(("x", "y"), None)], lambda lib: lambda x: x.reshape(2, 2, 2, 4), X84),
    "grad_relu": _case(ONE, [("x",)], lambda lib: lib.grad(lambda x: lib.nn.relu(x).sum()), X8),
    "jvp": _case(
        ONE, [("x",)], lambda lib: lambda x: lib.jvp(lambda v: lib.numpy.sin(v) * v, (x,), (x,)), X8
    ),
    "value_and_grad_2d": _case(
        TWO, [("x", "y")], lambda lib: lib.value_and_grad(lambda x: (x * x).sum()), X44
    ),
    "vmap_matmul": _case(ONE, [("x", None, None)], lambda lib: lib.vmap(lambda m: m @ m.T), X444),
    "cumsum_reverse": _case(
        ONE, [(None, "x")], lambda lib: lambda x: lib.lax.cumsum(x, axis=0, reverse=True), X44
    ),
    "clamp_lax": _case(ONE, [("x",)], lambda lib: lambda x: lib.lax.clamp(0.0, x, 3.0), X8),
    "select_n_lax": _case(
        ONE, [("x",), ("x",)], lambda lib: lambda x, y: lib.lax.select(x > y, x, y), X8, X8
    ),
    "pad_sharded_even": _case(ONE, [("x",)], lambda lib: lambda x: lib.numpy.pad(x, (4, 4)), X8),
    "concat_sharded_axis": _case(
        ONE, [("x",), ("x",)], lambda lib: lambda a, b: lib.numpy.concatenate([a, b]), X8, X8
    ),
    "rev_2d": _case(TWO, [("x", "y")], lambda lib: lambda x: x[::-1, ::-1], X44),
    "strided_slice": _case(ONE, [("x",)], lambda lib: lambda x: x[::2], X8),
    # issue 33's fuzzer (sharding_plain): a window narrower than a split axis
    "gather_narrow_window": _case(ONE, [("x", None)], _gather_window(1), X41),
    "gather_narrow_window_2": _case(ONE, [("x", None)], _gather_window(2), X41),
    "scatter_add_batching": _case(
        ONE, [()], _scatter_batched((), (1,), (1,), (0,), (0,), (2, 1)), X48[:2, :3]
    ),
    "scatter_add_batching_split": _case(
        ONE, [(None, "x")], _scatter_batched((), (0,), (0,), (1,), (0,), (8, 1)), X8[None]
    ),
    "reshape_add_leading_one": _case(
        ONE, [("x", None)], lambda lib: lambda x: x.reshape(1, 32), X48
    ),
    "reshape_drop_one_merge": _case(
        TWO, [(None, ("x", "y"), None)], lambda lib: lambda x: x.reshape(12), X143
    ),
    "concat_one_split": _case(
        TWO,
        [(), ("x",)],
        lambda lib: lambda a, b: lib.numpy.concatenate([a, b]),
        X48[:2, :3],
        X48[:2, :3],
    ),
    "concat_split_unlike": _case(
        TWO,
        [(None, "y"), ("x", None)],
        lambda lib: lambda a, b: lib.numpy.concatenate([a, b], axis=1),
        X48[:2, :4],
        X48[:2, :4],
    ),
    "add_broadcast_unlike": _case(
        TWO, [(None, "y"), ("x",)], lambda lib: lambda a, b: a + b, X48[:3, :2], X8[:2]
    ),
    "add_unlike_broadcast": _case(
        TWO, [("x",), (None, "y")], lambda lib: lambda a, b: a + b, X8[:2], X48[:3, :2]
    ),
}

AXIS_TYPES = ("Explicit", "Auto")


def as_written(spec) -> tuple:
    """A PartitionSpec as a tuple of plain entries (names, tuples of names, None)."""
    return tuple(tuple(e) if isinstance(e, (tuple, list)) else e for e in spec)


def _record_jax() -> dict:
    import jax
    from jax.sharding import AxisType, NamedSharding, PartitionSpec

    results = {}
    for name, (shape, names, specs, build, args) in CASES.items():
        for kind in AXIS_TYPES:
            mesh = jax.make_mesh(shape, names, axis_types=(getattr(AxisType, kind),) * len(names))
            placed = [
                a if s is None else jax.device_put(a, NamedSharding(mesh, PartitionSpec(*s)))
                for a, s in zip(args, specs)
            ]
            try:
                out = jax.jit(build(jax))(*placed)
                leaves = jax.tree_util.tree_leaves(out)
                results[name, kind] = ("specs", [as_written(leaf.sharding.spec) for leaf in leaves])
            except Exception as e:  # noqa: BLE001  (recorded: the test compares it)
                results[name, kind] = ("error", type(e).__name__, str(e))
    return results


if __name__ == "__main__":
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
    with open(sys.argv[1], "wb") as f:
        pickle.dump(_record_jax(), f)
