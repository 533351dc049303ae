"""Every primitive's batch rule against ``jax.vmap`` on random inputs and random in_axes.

Each case is an unbatched example (a function of refimpl, the same function
of JAX, and a maker of example arguments). A seed picks, per argument, None
or a random axis (negative ones too) and builds the batched argument by
stacking ``B`` random examples along it; refimpl's ``vmap`` (eager, under
``jit`` on ref, and under ``jit(backend="pjrt")``) must equal ``jax.vmap``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
from refimpl import lax
from refimpl.transforms.batching import vmap

B = 3


@dataclass
class Case:
    name: str
    ri_fn: Callable[..., Any]
    jax_fn: Callable[..., Any]
    make: Callable[[np.random.Generator], list[np.ndarray]]
    batchable: tuple[bool, ...] | None = None  # which args may be batched (default: all)
    tol: float = 1e-5


def f32(rng, *shape):
    return rng.normal(size=shape).astype(np.float32)


def i32(rng, lo, hi, *shape):
    return rng.integers(lo, hi, size=shape).astype(np.int32)


def _unary(name, ri_fn, jax_fn, make=None):
    return Case(name, ri_fn, jax_fn, make or (lambda r: [f32(r, 2, 3)]))


def _pos(r):
    return [np.abs(f32(r, 2, 3)) + 0.5]


CASES = [
    _unary("neg", lax.neg, jax.lax.neg),
    _unary("exp", lax.exp, jax.lax.exp),
    _unary("log", lax.log, jax.lax.log, _pos),
    _unary("tanh", lax.tanh, jax.lax.tanh),
    _unary("sin", lax.sin, jax.lax.sin),
    _unary("sqrt", lax.sqrt, jax.lax.sqrt, _pos),
    _unary("logistic", lax.logistic, jax.lax.logistic),
    _unary("abs", lax.abs, jax.lax.abs),
    _unary("floor", lax.floor, jax.lax.floor),
    _unary("round", lambda x: lax.round(x, 1), lambda x: jax.lax.round(x, 1)),
    _unary("integer_pow", lambda x: lax.integer_pow(x, 3), lambda x: jax.lax.integer_pow(x, 3)),
    _unary("is_finite", lax.is_finite, jax.lax.is_finite),
    _unary(
        "convert",
        lambda x: lax.convert_element_type(x, np.int32),
        lambda x: jax.lax.convert_element_type(x, np.int32),
    ),
    Case("add", lax.add, jax.lax.add, lambda r: [f32(r, 2, 3), f32(r, 2, 3)]),
    Case("add_scalar", lax.add, jax.lax.add, lambda r: [f32(r, 2, 3), f32(r)]),
    Case("mul_scalar_first", lax.mul, jax.lax.mul, lambda r: [f32(r), f32(r, 4)]),
    Case("sub", lax.sub, jax.lax.sub, lambda r: [f32(r, 3), f32(r, 3)]),
    Case("max", lax.max, jax.lax.max, lambda r: [f32(r, 2, 2), f32(r, 2, 2)]),
    Case("atan2", lax.atan2, jax.lax.atan2, lambda r: [f32(r, 3), f32(r, 3)]),
    Case("div_int", lax.div, jax.lax.div, lambda r: [i32(r, -9, 9, 4), i32(r, 1, 5, 4)]),
    Case("lt", lax.lt, jax.lax.lt, lambda r: [f32(r, 2, 3), f32(r, 2, 3)]),
    Case("and", lax.bitwise_and, jax.lax.bitwise_and, lambda r: [i32(r, 0, 16, 5)] * 2),
    Case(
        "select_n",
        lambda p, a, b: lax.select_n(p, a, b),
        lambda p, a, b: jax.lax.select_n(p, a, b),
        lambda r: [f32(r, 2, 3) > 0, f32(r, 2, 3), f32(r, 2, 3)],
    ),
    Case(
        "select_scalar_pred",
        lambda p, a, b: lax.select_n(p, a, b),
        lambda p, a, b: jax.lax.select_n(p, a, b),
        lambda r: [np.bool_(r.random() > 0.5), f32(r, 3), f32(r, 3)],
    ),
    Case(
        "clamp",
        lax.clamp,
        jax.lax.clamp,
        lambda r: [np.float32(-0.5), f32(r, 4), np.float32(0.5)],
    ),
    Case(
        "clamp_scalar_operand",
        lax.clamp,
        jax.lax.clamp,
        lambda r: [np.float32(-0.5), np.float32(r.normal()), np.float32(0.5)],
        batchable=(False, True, False),  # JAX's own rule fails on batched bounds here
    ),
    Case(
        "broadcast_in_dim",
        lambda x: lax.broadcast_in_dim(x, (4, 2, 3), (1, 2)),
        lambda x: jax.lax.broadcast_in_dim(x, (4, 2, 3), (1, 2)),
        lambda r: [f32(r, 2, 3)],
    ),
    Case(
        "reshape",
        lambda x: lax.reshape(x, (3, 4)),
        lambda x: jax.lax.reshape(x, (3, 4)),
        lambda r: [f32(r, 2, 6)],
    ),
    Case(
        "squeeze",
        lambda x: lax.squeeze(x, (1,)),
        lambda x: jax.lax.squeeze(x, (1,)),
        lambda r: [f32(r, 2, 1, 3)],
    ),
    Case(
        "expand_dims",
        lambda x: lax.expand_dims(x, (0, 2)),
        lambda x: jax.lax.expand_dims(x, (0, 2)),
        lambda r: [f32(r, 2, 3)],
    ),
    Case(
        "transpose",
        lambda x: lax.transpose(x, (2, 0, 1)),
        lambda x: jax.lax.transpose(x, (2, 0, 1)),
        lambda r: [f32(r, 2, 3, 4)],
    ),
    Case(
        "rev",
        lambda x: lax.rev(x, (0, 2)),
        lambda x: jax.lax.rev(x, (0, 2)),
        lambda r: [f32(r, 2, 3, 4)],
    ),
    Case(
        "slice",
        lambda x: lax.slice(x, (1, 0), (3, 5), (1, 2)),
        lambda x: jax.lax.slice(x, (1, 0), (3, 5), (1, 2)),
        lambda r: [f32(r, 4, 5)],
    ),
    Case(
        "pad",
        lambda x, v: lax.pad(x, v, ((1, 2, 1), (-1, 0, 0))),
        lambda x, v: jax.lax.pad(x, v, ((1, 2, 1), (-1, 0, 0))),
        lambda r: [f32(r, 3, 4), f32(r)],
    ),
    Case(
        "concatenate",
        lambda x, y: lax.concatenate([x, y], 1),
        lambda x, y: jax.lax.concatenate([x, y], 1),
        lambda r: [f32(r, 2, 3), f32(r, 2, 2)],
    ),
    Case(
        "iota_plus",
        lambda x: lax.add(x, lax.convert_element_type(lax.iota(np.int32, 4), np.float32)),
        lambda x: x + jax.lax.iota(np.int32, 4).astype(np.float32),
        lambda r: [f32(r, 4)],
    ),
    Case(
        "reduce_sum",
        lambda x: lax.reduce_sum(x, (0, 2)),
        lambda x: jnp.sum(x, (0, 2)),
        lambda r: [f32(r, 2, 3, 4)],
    ),  # fmt: skip
    Case(
        "reduce_max",
        lambda x: lax.reduce_max(x, (1,)),
        lambda x: jnp.max(x, 1),
        lambda r: [f32(r, 2, 3)],
    ),  # fmt: skip
    Case(
        "reduce_prod",
        lambda x: lax.reduce_prod(x, (0,)),
        lambda x: jnp.prod(x, 0),
        lambda r: [f32(r, 2, 3)],
    ),  # fmt: skip
    Case(
        "reduce_or",
        lambda x: lax.reduce_or(x, (1,)),
        lambda x: jnp.any(x, 1),
        lambda r: [f32(r, 2, 3) > 0.5],
    ),  # fmt: skip
    Case(
        "argmax",
        lambda x: lax.argmax(x, 1, np.int32),
        lambda x: jax.lax.argmax(x, 1, np.int32),
        lambda r: [f32(r, 2, 5)],
    ),  # fmt: skip
    Case(
        "argmin",
        lambda x: lax.argmin(x, 0, np.int32),
        lambda x: jax.lax.argmin(x, 0, np.int32),
        lambda r: [f32(r, 4, 2)],
    ),  # fmt: skip
    Case(
        "cumsum",
        lambda x: lax.cumsum(x, 1, reverse=True),
        lambda x: jax.lax.cumsum(x, 1, reverse=True),
        lambda r: [f32(r, 2, 4)],
    ),  # fmt: skip
    Case(
        "cummax",
        lambda x: lax.cummax(x, 0),
        lambda x: jax.lax.cummax(x, 0),
        lambda r: [f32(r, 4, 2)],
    ),  # fmt: skip
    Case(
        "sort_two",
        lambda k, v: lax.sort((k, v), dimension=0, num_keys=1),
        lambda k, v: jax.lax.sort((k, v), dimension=0, num_keys=1),
        lambda r: [f32(r, 5, 2), f32(r, 5, 2)],
    ),
    Case(
        "dot_matmul",
        lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ()))),
        lambda a, b: jax.lax.dot_general(a, b, (((1,), (0,)), ((), ()))),
        lambda r: [f32(r, 2, 3), f32(r, 3, 4)],
        tol=1e-4,
    ),
    Case(
        "dot_batched",
        lambda a, b: lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))),
        lambda a, b: jax.lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))),
        lambda r: [f32(r, 2, 3, 4), f32(r, 2, 4, 5)],
        tol=1e-4,
    ),
    Case(
        "dot_vector",
        lambda a, b: lax.dot_general(a, b, (((0,), (0,)), ((), ()))),
        lambda a, b: jax.lax.dot_general(a, b, (((0,), (0,)), ((), ()))),
        lambda r: [f32(r, 4), f32(r, 4)],
        tol=1e-4,
    ),
    Case(
        "conv",
        lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME"),
        lambda x, w: jax.lax.conv_general_dilated(x, w, (1, 1), "SAME"),
        lambda r: [f32(r, 2, 3, 5, 5), f32(r, 4, 3, 3, 3)],
        tol=1e-4,
    ),
    Case(
        "conv_nhwc_groups",
        lambda x, w: lax.conv_general_dilated(
            x,
            w,
            (2, 1),
            ((1, 0), (0, 1)),
            rhs_dilation=(1, 2),
            dimension_numbers=("NHWC", "HWIO", "NHWC"),
            feature_group_count=2,
        ),
        lambda x, w: jax.lax.conv_general_dilated(
            x,
            w,
            (2, 1),
            ((1, 0), (0, 1)),
            rhs_dilation=(1, 2),
            dimension_numbers=("NHWC", "HWIO", "NHWC"),
            feature_group_count=2,
        ),
        lambda r: [f32(r, 2, 5, 6, 4), f32(r, 2, 2, 2, 6)],
        tol=1e-4,
    ),  # fmt: skip
    Case(
        "conv_batch_groups",
        lambda x, w: lax.conv_general_dilated(x, w, (1,), "VALID", batch_group_count=2),
        lambda x, w: jax.lax.conv_general_dilated(x, w, (1,), "VALID", batch_group_count=2),
        lambda r: [f32(r, 4, 2, 5), f32(r, 4, 2, 2)],
        tol=1e-4,
    ),
    Case(
        "dynamic_slice",
        lambda x, i, j: lax.dynamic_slice(x, (i, j), (2, 2)),
        lambda x, i, j: jax.lax.dynamic_slice(x, (i, j), (2, 2)),
        lambda r: [f32(r, 4, 5), np.int32(r.integers(-6, 6)), np.int32(r.integers(-6, 6))],
    ),
    Case(
        "dynamic_update_slice",
        lambda x, u, i, j: lax.dynamic_update_slice(x, u, (i, j)),
        lambda x, u, i, j: jax.lax.dynamic_update_slice(x, u, (i, j)),
        lambda r: [
            f32(r, 4, 5),
            f32(r, 2, 3),
            np.int32(r.integers(-6, 6)),
            np.int32(r.integers(-6, 6)),
        ],
    ),
    Case(
        "gather_clip",
        lambda x, i: lax.gather_along_axis(x, i, 1),
        lambda x, i: jnp.take(x, i, axis=1, mode="clip"),
        lambda r: [f32(r, 2, 5), i32(r, 0, 8, 3, 2)],
    ),
    Case(
        "gather_fill",
        lambda x, i: lax.gather_along_axis(x, i, 0, mode="fill"),
        lambda x, i: jnp.take(x, i, axis=0, mode="fill"),
        lambda r: [f32(r, 4, 2), i32(r, 0, 6, 3)],
    ),
    Case(
        "scatter_add",
        lambda x, i, u: lax.scatter_add_along_axis(x, i, u, 1),
        lambda x, i, u: jnp.asarray(x).at[:, i].add(u, mode="drop"),
        lambda r: [f32(r, 2, 4), i32(r, 0, 6, 3), f32(r, 2, 3)],
    ),
    Case(
        "scatter_set",
        lambda x, i, u: lax.scatter_along_axis(x, i, u, 0),
        lambda x, i, u: jnp.asarray(x).at[i].set(u, mode="drop"),
        lambda r: [f32(r, 5, 2), np.array(r.permutation(6)[:3], np.int32), f32(r, 3, 2)],
    ),
]


def batch_args(rng: np.random.Generator, case: Case) -> tuple[list[Any], tuple[Any, ...]]:
    """Random in_axes (None or an axis, negative ones too; at least one mapped)
    and the batched arguments, each stacking B fresh examples along its axis."""
    examples = [case.make(rng) for _ in range(B)]
    n = len(examples[0])
    allowed = case.batchable or (True,) * n
    axes: list[int | None] = []
    for i in range(n):
        rank = np.ndim(examples[0][i])
        choice = rng.integers(-1, rank + 1) if allowed[i] else -1
        if choice < 0:
            axes.append(None)
        else:
            axes.append(int(choice) - (rank + 1) * int(rng.integers(0, 2)))
    if all(a is None for a in axes):
        axes[int(np.flatnonzero(allowed)[0])] = 0
    args = []
    for i, axis in enumerate(axes):
        if axis is None:
            args.append(examples[0][i])
        else:
            args.append(np.stack([np.asarray(e[i]) for e in examples], axis=axis))
    return args, tuple(axes)


def _leaves(x: Any) -> list[np.ndarray]:
    return [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(x)]


def _check(got: Any, want: Any, tol: float) -> None:
    got_leaves, want_leaves = _leaves(got), _leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_batch_rule_matches_jax_vmap(case: Case, seed: int) -> None:
    rng = np.random.default_rng(seed + 1000 * CASES.index(case))
    args, in_axes = batch_args(rng, case)
    want = jax.vmap(case.jax_fn, in_axes=in_axes)(*args)
    _check(vmap(case.ri_fn, in_axes=in_axes)(*args), want, case.tol)
    _check(ri.jit(vmap(case.ri_fn, in_axes=in_axes))(*args), want, case.tol)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_batch_rule_matches_a_loop(case: Case) -> None:
    """Independent of JAX: member b of the vmapped result is the function on member b."""
    rng = np.random.default_rng(7 + CASES.index(case))
    args, in_axes = batch_args(rng, case)
    got = _leaves(vmap(case.ri_fn, in_axes=in_axes)(*args))
    for b in range(B):
        member = [x if a is None else np.take(x, b, axis=a) for x, a in zip(args, in_axes)]
        for g, w in zip(got, _leaves(case.ri_fn(*member)), strict=True):
            np.testing.assert_allclose(g[b], w, rtol=case.tol, atol=case.tol)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_batch_rule_on_pjrt(case: Case) -> None:
    from tests.helpers.pjrt_helpers import skip_without_pjrt

    skip_without_pjrt()
    rng = np.random.default_rng(11 + CASES.index(case))
    args, in_axes = batch_args(rng, case)
    want = jax.vmap(case.jax_fn, in_axes=in_axes)(*args)
    got = ri.jit(vmap(case.ri_fn, in_axes=in_axes), backend="pjrt")(*args)
    _check(got, want, max(case.tol, 1e-4))
