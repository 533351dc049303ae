"""``vmap`` of lax ops as JAX 0.10.2's tests/lax_vmap_test.py sweeps them
(issue 29): each op under ``vmap`` with every batch axis of every operand
(``None``, ``0`` .. ``ndim``, ``-1``) and batch sizes 0, 1 and 3, compared
with JAX's ``vmap`` of the same op (values, shape, dtype, weak type), on both
backends, eagerly and under ``jit``. Operands are JAX arrays on the JAX side
and refimpl arrays on refimpl's (JAX hands a NumPy operand that an op leaves
unchanged back as it is)."""

from __future__ import annotations

import functools
import itertools

import jax
import numpy as np
import pytest

import refimpl as ri
from tests.helpers.parity import assert_same_as_jax


def _operand(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return np.asarray(rng.standard_normal(shape) * 2).astype(dtype)
    if dtype.kind == "c":
        return np.asarray(rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(
            dtype
        )
    if dtype.kind == "b":
        return np.asarray(rng.random(shape) < 0.5)
    return np.asarray(rng.integers(-5, 6, shape)).astype(dtype)


def _batched_shape(size, axis, shape):
    shape = list(shape)
    if axis is not None:
        shape.insert(axis if axis >= 0 else len(shape) + 1 + axis, size)
    return tuple(shape)


def _all_axes(*shapes):
    """Every combination of in_axes (None, 0..ndim, -1) but all-None."""
    options = [[None, *range(len(s) + 1), -1] for s in shapes]
    return [t for t in itertools.product(*options) if any(a is not None for a in t)]


f32, i32, c64 = np.float32, np.int32, np.complex64

# name -> (op taking a namespace (jax or refimpl), operand shapes, operand dtypes)
OPS = {
    "add": (lambda ns: ns.lax.add, [(3, 4), (3, 1)], [f32, f32]),
    "atan2": (lambda ns: ns.lax.atan2, [(), (3,)], [f32, f32]),
    "exp_c64": (lambda ns: ns.lax.exp, [(2, 3)], [c64]),
    "clamp": (lambda ns: ns.lax.clamp, [(), (2, 3), ()], [f32, f32, f32]),
    "select_n": (lambda ns: ns.lax.select_n, [(2, 3), (2, 3), (2, 3)], [np.bool_, f32, f32]),
    "dot_general": (
        lambda ns: functools.partial(
            ns.lax.dot_general, dimension_numbers=(((2,), (1,)), ((0,), (0,)))
        ),
        [(3, 3, 2), (3, 2, 4)],
        [f32, f32],
    ),
    "broadcast_in_dim": (
        lambda ns: lambda x: ns.lax.broadcast_in_dim(x, (2, 3), (0,)),
        [(2,)],
        [f32],
    ),
    "squeeze": (lambda ns: lambda x: ns.lax.squeeze(x, (1, -1)), [(2, 1, 3, 1)], [f32]),
    "reshape": (lambda ns: lambda x: ns.lax.reshape(x, (6, 4), (1, 0, 2)), [(2, 3, 4)], [f32]),
    "pad": (
        lambda ns: lambda x, v: ns.lax.pad(x, v, [(-1, 0, 0), (-1, -1, 1)]),
        [(2, 3), ()],
        [f32, f32],
    ),
    "slice": (lambda ns: lambda x: ns.lax.slice(x, (1, 0), (3, 3), (1, 2)), [(4, 4)], [f32]),
    "reduce_max": (lambda ns: lambda x: ns.lax.reduce_max(x, (0, 2)), [(3, 4, 5)], [f32]),
    "argmax": (lambda ns: lambda x: ns.lax.argmax(x, 1, np.int32), [(3, 4)], [f32]),
    "cumlogsumexp": (lambda ns: lambda x: ns.lax.cumlogsumexp(x, 1, True), [(3, 4)], [f32]),
    "reduce_window": (
        lambda ns: (
            lambda x: ns.lax.reduce_window(x, 0.0, ns.lax.add, (2, 1), (1, 2), [(1, 0), (0, 1)])
        ),
        [(4, 5)],
        [f32],
    ),
    "select_and_scatter_add": (
        lambda ns: ns.grad(
            lambda x: ns.lax.reduce_window(x, -np.inf, ns.lax.max, (2, 2), (1, 1), "SAME").sum()
        ),
        [(4, 5)],
        [f32],
    ),
    "sort_two_keys": (
        lambda ns: lambda *xs: ns.lax.sort(xs, dimension=1, num_keys=2),
        [(3, 4), (3, 4), (3, 4)],
        [f32, f32, i32],
    ),
    "top_k": (lambda ns: lambda x: ns.lax.top_k(x, 2), [(3, 5)], [f32]),
    "fft": (lambda ns: lambda x: ns.lax.fft(x, ns.lax.FftType.IRFFT, (4,)), [(3, 3)], [c64]),
    "dynamic_slice": (
        lambda ns: lambda x, i: ns.lax.dynamic_slice(x, (i,), (2,)),
        [(5,), ()],
        [f32, i32],
    ),
    "dynamic_update_slice": (
        lambda ns: lambda x, u, i: ns.lax.dynamic_update_slice(x, u, (i, 1)),
        [(4, 5), (2, 2), ()],
        [f32, f32, i32],
    ),
    "gather": (lambda ns: lambda x, i: x[i], [(5, 3), (2,)], [f32, i32]),
    "scatter_add": (lambda ns: lambda x, i, u: x.at[i].add(u), [(5,), (2,), (2,)], [f32, i32, f32]),
    "conv_general_dilated": (
        lambda ns: (
            lambda lhs, rhs: ns.lax.conv_general_dilated(
                lhs,
                rhs,
                (1, 2),
                [(1, 0), (0, 1)],
                (2, 1),
                (1, 1),
                ("NHWC", "OIHW", "NCHW"),
                precision="highest",
            )
        ),
        [(2, 5, 6, 2), (3, 2, 1, 2)],
        [f32, f32],
    ),  # fmt: skip
}


def _cases(name, shapes):
    """At most 8 in_axes combinations, evenly spread, at batch size 3; the
    first and last also at sizes 0 and 1."""
    axes = _all_axes(*shapes)
    keep = sorted({round(i * (len(axes) - 1) / 7) for i in range(8)})
    picked = [axes[i] for i in keep]
    return [(name, a, 3) for a in picked] + [
        (name, a, size) for a in (picked[0], picked[-1]) for size in (0, 1)
    ]


CASES = [case for name, (_, shapes, _) in OPS.items() for case in _cases(name, shapes)]


def _run(ns, name, axes, args, jit):
    op, _, _ = OPS[name]
    f = ns.vmap(op(ns), in_axes=axes)
    return (ns.jit(f) if jit else f)(*args)


@pytest.mark.parametrize("name,axes,size", CASES, ids=str)
def test_vmap_of_lax_op_as_jax(backend, name, axes, size):
    _, shapes, dtypes = OPS[name]
    rng = np.random.default_rng(0)
    args = [
        _operand(rng, _batched_shape(size, a, s), d)
        for a, s, d in zip(axes, shapes, dtypes, strict=True)
    ]
    want = _run(jax, name, axes, [jax.numpy.asarray(a) for a in args], jit=False)
    for jit in (False, True):
        got = _run(ri, name, axes, [ri.numpy.asarray(a) for a in args], jit)
        assert_same_as_jax(got, want, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("name", ["dynamic_slice", "gather"])
def test_vmap_over_empty_batch_under_jit(backend, name):
    """A batch of size 0 of an unbatched operand and batched indices: the
    batch rule flattens the batch into the gathered axis, which is then
    empty; StableHLO's gather rejects its slice of size 1 (pjrt raised an
    internal error, JAX returns the empty result)."""
    _, shapes, dtypes = OPS[name]
    rng = np.random.default_rng(0)
    axes = (None, 0) if name == "dynamic_slice" else (0, -1)
    args = [_operand(rng, _batched_shape(0, a, s), d) for a, s, d in zip(axes, shapes, dtypes)]
    want = _run(jax, name, axes, [jax.numpy.asarray(a) for a in args], jit=True)
    got = _run(ri, name, axes, [ri.numpy.asarray(a) for a in args], jit=True)
    assert_same_as_jax(got, want)
