"""``x[index]`` (``rnp.getitem``) and ``rnp.take`` against NumPy and ``jax.numpy``.

In-range indices are compared with NumPy (values and shapes, every index form);
JAX's own choices -- out-of-range index arrays and traced scalar indices are
clamped, ``take``'s modes -- are compared with ``jax.numpy``. Every form also
runs under ``ri.jit`` with the indexed array traced.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import refimpl as ri
import refimpl.numpy as rnp


class _Opaque:
    """An arbitrary non-array object whose repr (the test id) is the same in every process."""

    def __repr__(self) -> str:
        return "<opaque object>"


jax.config.update("jax_platforms", "cpu")

X = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)


def assert_same(ours, expected):
    assert isinstance(ours, ri.Array), type(ours)
    expected = np.asarray(expected)
    assert ours.shape == expected.shape, (ours.shape, expected.shape)
    assert ours.dtype == expected.dtype, (ours.dtype, expected.dtype)
    np.testing.assert_array_equal(np.asarray(ours), expected)


def check_against_numpy(x, index):
    """``x[index]`` eagerly, through the operator on a refimpl array, and under jit."""
    expected = x[index]
    assert_same(rnp.getitem(x, index), expected)
    assert_same(rnp.asarray(x)[index], expected)
    assert_same(ri.jit(lambda v: v[index])(x), expected)


# --- basic indexing --------------------------------------------------------------------

BASIC = [
    0, -1, (1, 2), (1, -3, 3), slice(None), slice(1, None), slice(None, None, -1),
    (slice(None), slice(None, None, 2)), (slice(None, None, -2), slice(-1, 0, -1)),
    (Ellipsis, 1), (0, Ellipsis), (Ellipsis,), (), None, (None, 0), (0, None, 1, None),
    (slice(1, -1), Ellipsis, None), (slice(5, 10),), (slice(-10, 10, 3), slice(2, 1)),
    (np.int32(1), np.uint8(2)), (np.array(1), slice(None), np.array(-1)),
    (True,), (False,), (0, True), (slice(None), None, None),
]  # fmt: skip


@pytest.mark.parametrize("index", BASIC, ids=repr)
def test_basic_indices(index):
    check_against_numpy(X, index)


def _basic_index(draw, shape):
    """A random basic index for ``shape``: ints, slices with any step, None, Ellipsis."""
    items, dims = [], list(shape)
    use_ellipsis = draw(st.booleans()) and dims
    kept = draw(st.integers(0, len(dims))) if use_ellipsis else len(dims)
    for size in dims[:kept]:
        if draw(st.booleans()) and size > 0:
            items.append(draw(st.integers(-size, size - 1)))
        else:
            bound = st.one_of(st.none(), st.integers(-size - 2, size + 2))
            step = st.one_of(st.none(), st.integers(-3, 3).filter(bool))
            items.append(slice(draw(bound), draw(bound), draw(step)))
        if draw(st.integers(0, 4)) == 0:
            items.append(None)
    if use_ellipsis:
        items.append(Ellipsis)
    return tuple(items)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=0, max_size=3), st.data())
def test_basic_indices_property(shape, data):
    x = np.arange(int(np.prod(shape)), dtype=np.int16).reshape(shape)
    index = _basic_index(data.draw, shape)
    expected = x[index]
    assert_same(rnp.getitem(x, index), expected)
    assert_same(ri.jit(lambda v: v[index])(x), expected)


# --- advanced indexing ------------------------------------------------------------------

ADVANCED = [
    np.array([0, 1, 1]),
    np.array([[1], [0]]),
    np.array([-1, -2]),
    (slice(None), np.array([2, 0])),
    (np.array([0, 1]), np.array([1, 2])),  # broadcast together, adjacent
    (np.array([[0], [1]]), np.array([0, 2, 1])),
    (slice(None), np.array([0, 2]), np.array([3, 1])),  # adjacent, after a slice
    (np.array([0, 1]), slice(None), np.array([3, 1])),  # not adjacent: broadcast dims first
    (0, slice(None), [1, 2]),  # an int joins the advanced indices (not adjacent)
    (slice(None), 1, [1, 2]),  # ... adjacent
    (slice(None), None, [0, 1], None, [1, 2]),
    (np.array([[1]]), Ellipsis, np.array([2, 3])),
    (slice(1, -1, 2), slice(None, None, -2), np.array([[0], [3]])),
    (Ellipsis, np.array([3, 0, 0])),
    (np.array([1, 0]), None),
    (np.zeros((0,), np.int32),),
    (slice(None), np.zeros((2, 0), np.int8)),
    (np.array([1], np.uint8), np.array([2], np.int64)),
]  # fmt: skip


@pytest.mark.parametrize("index", ADVANCED, ids=repr)
def test_advanced_indices(index):
    check_against_numpy(X, index)


MASKS = [
    X > 10,
    (X[0] > 5),
    (slice(None), X[0, :, 0] > 3),
    (X[:, 0, 0] > -1, 1),
    (Ellipsis, np.array([True, False, True, False])),
    np.zeros((2, 3, 4), bool),
    np.array(True),
]  # fmt: skip


@pytest.mark.parametrize("index", MASKS, ids=[f"mask{i}" for i in range(len(MASKS))])
def test_concrete_boolean_masks(index):
    if isinstance(index, np.ndarray) and index.shape == (3, 4):
        with pytest.raises(IndexError, match="boolean index"):
            rnp.getitem(X, index)
        return
    expected = X[index]
    assert_same(rnp.getitem(X, index), expected)
    assert_same(ri.jit(lambda v: v[index])(X), expected)  # the mask is a constant


def test_index_arrays_traced():
    index = np.array([[1, -1], [0, 2]])
    expected = X[:, index]
    assert_same(ri.jit(lambda v, i: v[:, i])(X, index), expected)
    assert_same(ri.jit(lambda v, i, j: v[i, :, j])(X, np.array([1, 0]), np.array([3, 0])),
                X[np.array([1, 0]), :, np.array([3, 0])])  # fmt: skip


def test_out_of_range_index_arrays_clamp_like_jax():
    index = np.array([7, -1, -7, 2, 100])
    jax_x = jnp.asarray(X)
    for ours_fn, jax_fn in [
        (lambda v, i: v[i], lambda v, i: v[i]),
        (lambda v, i: v[:, i], lambda v, i: v[:, i]),
        (lambda v, i: v[i, 1, i], lambda v, i: v[i, 1, i]),
    ]:
        expected = jax.jit(jax_fn)(jax_x, index)
        assert_same(ours_fn(rnp.asarray(X), index), expected)
        assert_same(ri.jit(ours_fn)(X, index), expected)


def test_traced_scalar_indices_clamp_like_jax():
    jax_first = jax.jit(lambda v, i: v[i])
    jax_middle = jax.jit(lambda v, i: v[:, i, 1:])
    jax_both = jax.jit(lambda v, i, j: v[i, ::-1, j])
    ours_first = ri.jit(lambda v, i: v[i])
    ours_middle = ri.jit(lambda v, i: v[:, i, 1:])
    ours_both = ri.jit(lambda v, i, j: v[i, ::-1, j])
    for i in range(-5, 5):
        assert_same(ours_first(X, np.int32(i)), jax_first(X, np.int32(i)))
        assert_same(ours_middle(X, np.int32(i)), jax_middle(X, np.int32(i)))
        assert_same(ours_both(X, np.int32(i), np.int8(i)), jax_both(X, np.int32(i), np.int8(i)))
    # a weakly typed traced scalar (a Python int argument) works too
    assert_same(ri.jit(lambda v, i: v[i])(X, -1), X[-1])
    program = ri.make_program(lambda v, i: v[i])(X, np.int32(0))
    assert "dynamic_slice" in str(program)


def test_result_types_follow_the_array():
    weak = rnp.full((3,), 2.0)
    assert weak.weak_type
    for index in (0, slice(1, None), np.array([0, 2]), np.array([True, False, True])):
        out = weak[index]
        expected = jnp.full((3,), 2.0)[index]
        assert out.dtype == expected.dtype and out.weak_type == expected.weak_type
    assert rnp.asarray(np.ones(3, np.int8))[1].dtype == np.int8


# --- errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "index, error, match",
    [
        ((0, 0, 0, 0), IndexError, "Too many indices"),
        ((Ellipsis, 0, Ellipsis), IndexError, "single ellipsis"),
        ([0, 1], TypeError, "non-tuple sequence"),
        (1.5, TypeError, "index must be"),
        ("a", TypeError, "string"),
        (np.array([1.0]), TypeError, "integer or boolean"),
        (slice(None, None, 0), ValueError, "step"),
        (slice(0.5, None), TypeError, "slice start"),
        (_Opaque(), IndexError, "index must be"),  # JAX 0.10.2: IndexError
        ((np.array([0, 1]), np.array([0, 1, 2])), ValueError, "broadcast"),  # as JAX
    ],
    ids=repr,
)
def test_index_errors(index, error, match):
    with pytest.raises(error, match=match):
        rnp.getitem(X, index)


def test_static_int_out_of_bounds_clamps_as_jax_or_raises_when_checked(backend):
    x = np.arange(10.0, dtype=np.float32)
    assert float(rnp.getitem(x, 11)) == float(jnp.arange(10.0)[11]) == 9.0
    assert float(rnp.getitem(x, -11)) == float(jnp.arange(10.0)[-11]) == 0.0
    got = ri.jit(lambda v: v[5, -9])(rnp.arange(12.0).reshape(3, 4))
    want = jax.jit(lambda v: v[5, -9])(jnp.arange(12.0).reshape(3, 4))
    assert float(got) == float(want) == 8.0  # row 5 -> 2, column -9 + 4 = -5 -> 0
    ri.config.update("checked_indexing", True)
    for index in (2, (0, -4)):
        with pytest.raises(IndexError, match="out of bounds"):
            rnp.getitem(X, index)


def test_traced_masks_and_slice_bounds_are_errors():
    mask = np.array([True, False])
    with pytest.raises(IndexError, match="concrete"):
        ri.jit(lambda v, m: v[m])(X, mask)
    with pytest.raises(IndexError, match="concrete"):
        ri.jit(lambda v, i: v[i:])(X, np.int32(1))
    with pytest.raises(IndexError, match="size 0"):
        rnp.getitem(np.ones((0, 3)), np.array([0]))


# --- take ----------------------------------------------------------------------------------


def test_take_against_jax():
    cases = [
        (X, np.array([-1, 7, -7, 0]), {}),
        (X, np.array([-1, 7]), {"axis": 1}),
        (X, np.array([[0, 3], [-2, 5]]), {"axis": -1, "mode": "clip"}),
        (X, np.array([-1, 7, 13]), {"axis": 2, "mode": "wrap"}),
        (X, np.array([5, -9]), {"axis": 0, "fill_value": -1.0}),
        (np.arange(5), np.array([9, -1]), {}),
        (np.arange(5, dtype=np.uint8), np.array([9]), {}),
        (np.arange(5) > 2, np.array([9, 1]), {}),
        (X, np.array(2), {"axis": 1}),
        (X, np.array([1], np.int8), {"axis": 2}),
    ]
    jax_results = jax.jit(lambda: [jnp.take(a, i, **kw) for a, i, kw in cases])()
    for (a, indices, kwargs), expected in zip(cases, jax_results, strict=True):
        assert_same(rnp.take(a, indices, **kwargs), expected)
        assert_same(ri.jit(lambda v, i, kw=kwargs: rnp.take(v, i, **kw))(a, indices), expected)
    with pytest.raises(NotImplementedError):
        rnp.take(X, np.array([0]), mode="raise")
    with pytest.raises(TypeError):
        rnp.take(X, [0, 1])
    with pytest.raises(ValueError, match="integers"):  # JAX 0.10.2: ValueError
        rnp.take(X, np.array([0.5]))
    with pytest.raises(ValueError):
        rnp.take(X, np.array([0]), axis=3)
