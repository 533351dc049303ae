"""``put``, ``place``, ``trapezoid``, ``rot90``'s rank check and ``size``/
``ndim``/``shape`` as JAX's tests/lax_numpy_test.py (second half) uses them:
``put``'s index rule per mode (an index out of range is clipped by default,
as ``unravel_index``), empty ``ind``/``v``, ``mode='raise'`` unsupported;
``place`` rejecting empty values and a mask of another size; ``trapezoid``
with an array ``dx`` lined up with ``y``'s trailing axes and ``y``/``x``
promoted together; ``size`` along a tuple of axes; the DeprecationWarning
for a list argument. Compared with JAX 0.10.2 on both backends."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp

_RNG = np.random.RandomState(5)


def _same(got, want, rtol=1e-6):
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.aval.weak_type == want.aval.weak_type
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol, atol=1e-6)


def _both(fn, *args):
    """fn(module, *args) on refimpl and JAX; the same result or the same error class."""
    try:
        want = fn(jnp, *args)
    except Exception as error:  # noqa: BLE001
        with pytest.raises(type(error)):
            fn(rnp, *args)
        return
    _same(fn(rnp, *args), want)


@pytest.mark.parametrize("mode", [None, "clip", "wrap"])
@pytest.mark.parametrize("index", [-7, -5, -1, 4, 5, 7])
def test_put_index_rule(backend, mode, index):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    _both(lambda m: m.put(a, np.array([index, 1]), np.array([9.0, 8.0]), mode=mode, inplace=False))


@pytest.mark.parametrize(
    "ind, v",
    [(np.array([1]), np.zeros(0, np.float32)), (np.zeros(0, np.int32), np.ones(2, np.float32))],
)
def test_put_empty_is_a_copy(backend, ind, v):
    a = np.arange(5, dtype=np.float32)
    _both(lambda m: m.put(a, ind, v, inplace=False))


@pytest.mark.parametrize("mode", ["raise", "bogus"])
def test_put_bad_modes(backend, mode):
    _both(lambda m: m.put(np.arange(5.0), np.array([1]), np.array([9.0]), mode=mode, inplace=False))


def test_put_under_jit(backend):
    a, i, v = np.arange(6.0, dtype=np.float32), np.array([7, -1]), np.array([1.0, 2.0], np.float32)
    got = ri.jit(lambda a, i, v: rnp.put(a, i, v, inplace=False))(a, i, v)
    _same(got, jax.jit(lambda a, i, v: jnp.put(a, i, v, inplace=False))(a, i, v))


@pytest.mark.parametrize(
    "mask, vals",
    [
        (np.arange(5) > 1, np.zeros(0, np.float32)),
        (np.zeros(5, bool), np.zeros(0, np.float32)),
        (np.ones(4, bool), np.ones(2, np.float32)),
        (np.arange(5) % 2 == 0, np.array([7.0, 8.0], np.float32)),
    ],
)
def test_place_checks(backend, mask, vals):
    _both(lambda m: m.place(np.arange(5, dtype=np.float32), mask, vals, inplace=False))


_DX = [
    ((2, 3), (3,), 0),
    ((3, 4, 5), (4, 5), 0),
    ((3, 4, 5), (3, 5), 1),
    ((2, 3, 4, 5), (2, 1, 3, 5), 2),
    ((3, 4, 5), (2, 4, 5), 0),
    ((3, 10), (3, 1), -1),
]


@pytest.mark.parametrize("yshape, dxshape, axis", _DX, ids=str)
def test_trapezoid_array_dx(backend, yshape, dxshape, axis):
    y = _RNG.randn(*yshape).astype(np.float32)
    dx = _RNG.rand(*dxshape).astype(np.float32)
    _both(lambda m: m.trapezoid(y, dx=dx, axis=axis))
    _both(
        lambda m: (ri if m is rnp else jax).jit(lambda a, b: m.trapezoid(a, dx=b, axis=axis))(y, dx)
    )


@pytest.mark.parametrize("ydtype, xdtype", [(np.int32, np.float16), (np.float16, np.float32)])
def test_trapezoid_promotes_y_with_x(backend, ydtype, xdtype):
    y = np.arange(6).reshape(2, 3).astype(ydtype)
    x = np.array([0.0, 0.5, 2.0]).astype(xdtype)
    _both(lambda m: m.trapezoid(y, x))


def test_rot90_needs_two_dims(backend):
    with pytest.raises(
        ValueError, match="rot90 requires its first argument to have ndim at least two"
    ):
        rnp.rot90(rnp.ones(2))


@pytest.mark.parametrize("axis", [(0,), (0, 2), (), (2, 0), (0, 0), (1, -2), 3])
def test_size_along_axes(backend, axis):
    x = np.zeros((2, 3, 4))
    try:
        want = jnp.size(x, axis)
    except ValueError:
        with pytest.raises(ValueError):
            rnp.size(rnp.asarray(x), axis)
        return
    assert rnp.size(rnp.asarray(x), axis) == want
    assert ri.jit(lambda a: rnp.size(a, axis))(x) == want


@pytest.mark.parametrize("name", ["ndim", "shape", "size"])
def test_sequence_argument_is_deprecated(backend, name):
    with pytest.warns(DeprecationWarning, match=f"{name} requires ndarray or scalar arguments"):
        got = getattr(rnp, name)([1, 2, 3])
    assert got == getattr(np, name)([1, 2, 3])


@pytest.mark.parametrize("mode", [None, "clip", "fill", "drop", "promise_in_bounds", "wrap"])
@pytest.mark.parametrize("index", [7, -1, -7, 2])
def test_put_along_axis_modes(backend, mode, index):
    idx = np.array([index, 0])
    a = np.arange(5, dtype=np.float32)
    if mode == "promise_in_bounds" and not -5 <= index < 5:
        pytest.skip("out of bounds is the caller's error under promise_in_bounds")
    _both(lambda m: m.put_along_axis(a, idx, 9.0, axis=0, inplace=False, mode=mode))


@pytest.mark.parametrize("mode", ["clip", "promise_in_bounds"])
@pytest.mark.parametrize("axis", [0, 1, None])
def test_put_along_axis_modes_2d(backend, mode, axis):
    a = _RNG.randn(3, 4).astype(np.float32)
    idx = np.array([[2, 0, 1, 1]]) if axis == 0 else np.array([[3], [0], [2]])
    idx = np.array([5, 0, 11]) if axis is None else idx
    vals = np.float32(7.0)
    _both(lambda m: m.put_along_axis(a, idx, vals, axis=axis, inplace=False, mode=mode))

    def fn(m, jit):
        return jit(lambda x, i: m.put_along_axis(x, i, vals, axis=axis, inplace=False, mode=mode))

    _same(fn(rnp, ri.jit)(a, idx), fn(jnp, jax.jit)(a, idx))
