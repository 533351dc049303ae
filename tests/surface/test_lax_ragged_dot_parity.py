"""``lax.ragged_dot`` / ``lax.ragged_dot_general`` as JAX 0.10.2's (lax_test's
RaggedTest, issue 29): the three modes, per-batch group sizes, empty groups
and rows past the last group (zeros, as JAX's CPU lowering), precision and
preferred_element_type, jit, grad and vmap, and the shape-rule TypeErrors. On
both backends."""

from __future__ import annotations

from functools import partial

import jax
import numpy as np
import pytest

import refimpl as ri
from refimpl import lax
from tests.helpers.parity import assert_same_as_jax

_R = np.random.RandomState(0)
_LHS = _R.randn(10, 4).astype(np.float32)
_RHS = _R.randn(3, 4, 5).astype(np.float32)
_GS = np.array([3, 0, 5], np.int32)  # an empty group; rows 8, 9 in none
_CLOSE = {"rtol": 1e-5, "atol": 1e-5}  # (XLA and NumPy sum the products in different orders)


def test_ragged_dot(backend):
    want = jax.lax.ragged_dot(_LHS, _RHS, _GS)
    assert_same_as_jax(lax.ragged_dot(_LHS, _RHS, _GS), want, **_CLOSE)
    assert_same_as_jax(ri.jit(lax.ragged_dot)(_LHS, _RHS, _GS), want, **_CLOSE)
    assert not np.asarray(lax.ragged_dot(_LHS, _RHS, _GS))[8:].any()


def test_precision_and_preferred_element_type(backend):
    f = lambda L: partial(  # noqa: E731
        L.ragged_dot, precision=L.Precision.HIGHEST, preferred_element_type=np.float32
    )
    assert_same_as_jax(f(lax)(_LHS, _RHS, _GS), f(jax.lax)(_LHS, _RHS, _GS), **_CLOSE)
    ints = np.arange(20, dtype=np.int8).reshape(10, 2)
    ones = np.ones((3, 2, 2), np.int8)
    for pet in (None, np.int32):
        want = jax.lax.ragged_dot(ints, ones, _GS, preferred_element_type=pet)
        assert_same_as_jax(lax.ragged_dot(ints, ones, _GS, preferred_element_type=pet), want)


def test_grad_and_vmap(backend):
    loss = lambda L: lambda a, b: (L.ragged_dot(a, b, _GS) ** 2).sum()  # noqa: E731
    want = jax.grad(loss(jax.lax), (0, 1))(_LHS, _RHS)
    assert_same_as_jax(ri.grad(loss(lax), (0, 1))(_LHS, _RHS), want, rtol=1e-4, atol=1e-4)
    lhs, rhs = np.stack([_LHS, -_LHS]), np.stack([_RHS, 2 * _RHS])
    sizes = np.array([[3, 0, 5], [1, 6, 3]], np.int32)
    want = jax.vmap(jax.lax.ragged_dot)(lhs, rhs, sizes)
    assert_same_as_jax(ri.vmap(lax.ragged_dot)(lhs, rhs, sizes), want, **_CLOSE)


_MODES = {  # lhs shape, rhs shape, group sizes, dimension numbers
    "contracting": ((11, 5), (5, 7), [2, 0, 3], ((([1], [0]), ([], [])), [1], [])),
    "contracting_batched": (
        (2, 11, 5), (2, 5, 7), [[2, 0, 3], [1, 1, 1]], ((([2], [1]), ([0], [0])), [2], []),
    ),
    "batch": ((4, 3, 5), (4, 5, 2), [1, 3], ((([2], [1]), ([0], [0])), [0], [])),
    "noncontracting_batched": (
        (2, 6, 5), (3, 2, 5, 7), [[2, 2, 2], [1, 4, 1]], ((([2], [2]), ([0], [1])), [1], [0]),
    ),
}  # fmt: skip


@pytest.mark.parametrize("mode", sorted(_MODES))
def test_ragged_dot_general_modes(backend, mode):
    ls, rs, gs, numbers = _MODES[mode]
    lhs, rhs = _R.randn(*ls).astype(np.float32), _R.randn(*rs).astype(np.float32)
    gs = np.array(gs, np.int32)
    want = jax.lax.ragged_dot_general(lhs, rhs, gs, jax.lax.RaggedDotDimensionNumbers(*numbers))
    got = lax.ragged_dot_general(lhs, rhs, gs, lax.RaggedDotDimensionNumbers(*numbers))
    assert_same_as_jax(got, want, **_CLOSE)
    jitted = ri.jit(lax.ragged_dot_general, static_argnums=3)
    assert_same_as_jax(
        jitted(lhs, rhs, gs, lax.RaggedDotDimensionNumbers(*numbers)), want, **_CLOSE
    )


_BAD = [  # lhs, rhs, group sizes shapes, dimension numbers
    ((11, 5), (3, 5, 7), (3,), ((([1], [1]), ([], [])), [0, 1], [0])),
    ((11, 5), (3, 5, 7), (3,), ((([1], [1]), ([], [])), [2], [0])),
    ((11, 5), (3, 5, 7), (2, 3), ((([1], [1]), ([], [])), [0], [0])),
    ((19, 17, 11, 5), (3, 19, 5, 7), (19, 11, 3), ((([3], [2]), ([0], [1])), [2], [0])),
    ((19, 11, 17, 5), (19, 17, 5, 7), (19, 11, 3), ((([2, 3], [1, 2]), ([0], [0])), [3], [])),
    ((17, 19, 11, 5), (17, 19, 5, 7), (19, 3), ((([3], [2]), ([0, 1], [0, 1])), [1], [])),
    ((19, 11, 5), (19, 5, 7), (19, 3), ((([2], [1]), ([0], [0])), [1], [0])),
    ((11, 3), (3, 3, 7), (3,), ((([1], [1]), ([], [])), [0], [1])),
    ((11, 5), (3, 5, 7), (2,), ((([1], [1]), ([], [])), [0], [0])),
    ((2, 11, 5), (3, 2, 5, 7), (3,), ((([2], [2]), ([0], [1])), [0], [0])),
    ((11, 5), (3, 5, 7), (3,), ((([1], [1]), ([], [])), [1], [0])),
    ((11, 5), (5, 7), (3,), ((([1], [0]), ([], [])), [0], [])),
]


@pytest.mark.parametrize("case", range(len(_BAD)))
def test_shape_errors(backend, case):
    ls, rs, gs, numbers = _BAD[case]
    with pytest.raises(TypeError) as want:
        jax.lax.ragged_dot_general(
            np.ones(ls, np.float32), np.ones(rs, np.float32), np.ones(gs, np.int32),
            jax.lax.RaggedDotDimensionNumbers(*numbers),
        )  # fmt: skip
    with pytest.raises(TypeError) as got:
        lax.ragged_dot_general(
            np.ones(ls, np.float32), np.ones(rs, np.float32), np.ones(gs, np.int32),
            lax.RaggedDotDimensionNumbers(*numbers),
        )  # fmt: skip
    assert str(got.value) == str(want.value)


def test_group_sizes_must_be_integers(backend):
    with pytest.raises(TypeError, match="group_sizes.dtype is subtype of np.integer"):
        jax.lax.ragged_dot(_LHS, _RHS, _GS.astype(np.float32))
    with pytest.raises(TypeError, match="group_sizes.dtype is subtype of np.integer"):
        lax.ragged_dot(_LHS, _RHS, _GS.astype(np.float32))


def test_dimension_numbers_are_normalized_and_hashable():
    numbers = lax.RaggedDotDimensionNumbers([[[1], [1]], [[], []]], [0], [0])
    want = jax.lax.RaggedDotDimensionNumbers([[[1], [1]], [[], []]], [0], [0])
    assert numbers.dot_dimension_numbers == want.dot_dimension_numbers == (((1,), (1,)), ((), ()))
    assert numbers.lhs_ragged_dimensions == (0,) and numbers.rhs_group_dimensions == (0,)
    same = lax.RaggedDotDimensionNumbers((((1,), (1,)), ((), ())), (0,), (0,))
    assert numbers == same and hash(numbers) == hash(same)
