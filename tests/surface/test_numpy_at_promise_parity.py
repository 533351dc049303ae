"""``x.at[idx]`` updates with ``mode="promise_in_bounds"`` and updates that
select nothing, against JAX 0.10.2 (issue 29, lax_numpy_indexing_test): an
out-of-range update drops (XLA's scatter; refimpl clamped it), its gradient as
JAX's transpose gives it, and an empty selection returns ``x`` unchecked;
JAX's FutureWarning for updates it cannot cast safely, and ``get``'s
``mode="drop"`` (JAX's fill-or-drop: it reads ``fill_value``)."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp

_X = np.arange(1.0, 6.0, dtype=np.float32)
_PIB = {"mode": "promise_in_bounds"}


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("index", [7, -9, np.array([1, 7, -9]), (np.array([[0], [6]]),)])
@pytest.mark.parametrize("method", ["set", "add", "subtract", "multiply", "min", "max"])
@pytest.mark.parametrize("jit", [False, True])
def test_out_of_range_update_drops_as_jax(backend, index, method, jit):
    def program(lib, n):
        def f(x):
            return getattr(x.at[index], method)(2.5, **_PIB)

        return (lib.jit(f) if jit else f)(n.asarray(_X))

    _same(program(ri, rnp), program(jax, jnp))


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint32])
@pytest.mark.parametrize("method", ["set", "add", "max"])
def test_out_of_range_update_of_other_dtypes_drops_as_jax(backend, dtype, method):
    if method == "add" and dtype == np.bool_:
        pytest.skip("add of bool is a TypeError on both")
    x, v = (_X > 2).astype(dtype), np.ones((), dtype)
    _same(
        getattr(rnp.asarray(x).at[np.array([1, 7])], method)(v, **_PIB),
        getattr(jnp.asarray(x).at[np.array([1, 7])], method)(v, **_PIB),
    )
    _same(
        getattr(rnp.asarray(x).at[-9], method)(v, **_PIB),
        getattr(jnp.asarray(x).at[-9], method)(v, **_PIB),
    )


@pytest.mark.parametrize("index", [7, np.array([0, 0, 9])])
def test_out_of_range_apply_drops_as_jax(backend, index):
    _same(
        rnp.asarray(_X).at[index].apply(lambda v: v * 3, **_PIB),
        jnp.asarray(_X).at[index].apply(lambda v: v * 3, **_PIB),
    )


GRADS = {
    "add_int": lambda j, n: j.grad(lambda y: (n.asarray(_X).at[7].add(y, **_PIB) * _X).sum())(1.0),
    "add_array": lambda j, n: j.grad(
        lambda y: (n.asarray(_X).at[np.array([1, 7])].add(y, **_PIB) * _X).sum()
    )(np.ones(2, np.float32)),
    "subtract_int": lambda j, n: j.grad(
        lambda y: (n.asarray(_X).at[-8].subtract(y, **_PIB) * _X).sum()
    )(1.0),
    "set_int": lambda j, n: j.grad(lambda y: (n.asarray(_X).at[7].set(y, **_PIB) * _X).sum())(1.0),
    "set_array": lambda j, n: j.jit(
        j.grad(lambda y: (n.asarray(_X).at[np.array([1, 7])].set(y, **_PIB) * _X).sum())
    )(np.ones(2, np.float32)),
    "set_array_unique": lambda j, n: j.grad(
        lambda y: n.asarray(_X).at[np.array([1, 7])].set(y, unique_indices=True, **_PIB).sum()
    )(np.ones(2, np.float32)),
    "multiply_int": lambda j, n: j.grad(lambda y: n.asarray(_X).at[7].multiply(y, **_PIB).sum())(
        2.0
    ),
    "set_operand": lambda j, n: j.grad(
        lambda x: (x.at[np.array([1, 7])].set(2.0, **_PIB) ** 2).sum()
    )(n.asarray(_X)),
}


@pytest.mark.parametrize("name", sorted(GRADS))
def test_out_of_range_update_gradient_as_jax(backend, name):
    _same(GRADS[name](ri, rnp), GRADS[name](jax, jnp))


EMPTY = {
    "bool_add": lambda n: n.zeros(3, bool).at[np.array([], np.int32)].add(True),
    "bool_multiply": lambda n: n.zeros(0, bool).at[np.array([], np.int32)].multiply(True),
    "values_not_broadcastable": lambda n: n.zeros(3).at[1:1].set(n.ones(5)),
    "empty_axis": lambda n: n.zeros((3, 0)).at[1].add(n.ones(4)),
    "bool_add_slice": lambda n: n.zeros((2, 3), bool).at[:, 3:].add(n.ones(2, bool)),
}


@pytest.mark.parametrize("name", sorted(EMPTY))
def test_empty_selection_returns_x_as_jax(backend, name):
    _same(EMPTY[name](rnp), EMPTY[name](jnp))
    _same(ri.jit(lambda: EMPTY[name](rnp))(), jax.jit(lambda: EMPTY[name](jnp))())


def _warnings(program):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        program()
    return [w.category for w in caught if "scatter inputs" in str(w.message)]


CASTS = {
    "python_float_into_int": lambda j, n: n.arange(4).at[0].add(2.7),
    "python_int_into_int": lambda j, n: n.arange(4).at[0].set(2),
    "python_int_into_int8": lambda j, n: n.arange(4, dtype=n.int8).at[0].set(300),
    "bool_into_float": lambda j, n: n.arange(4.0).at[0].set(True),
    "float32_into_int_jit": lambda j, n: j.jit(lambda x: x.at[0].set(np.float32(2.5)))(n.arange(4)),
    "float32_into_float16": lambda j, n: n.zeros(4, n.float16).at[1].max(np.float32(2.5)),
    "bfloat16_into_float32": lambda j, n: n.arange(4.0).at[0].set(n.ones((), n.bfloat16)),
    "python_complex_into_float": lambda j, n: n.arange(4.0).at[0].min(1j),
}


@pytest.mark.parametrize("name", sorted(CASTS))
def test_unsafe_cast_future_warning_as_jax(backend, name):
    assert _warnings(lambda: CASTS[name](ri, rnp)) == _warnings(lambda: CASTS[name](jax, jnp))


@pytest.mark.parametrize("index", [1, 7, np.array([0, 9, -1])])
def test_get_mode_drop_reads_fill_value_as_jax(backend, index):
    _same(
        rnp.asarray(_X).at[index].get(mode="drop", fill_value=-3.0),
        jnp.asarray(_X).at[index].get(mode="drop", fill_value=-3.0),
    )
    _same(rnp.asarray(_X).at[index].get(mode="drop"), jnp.asarray(_X).at[index].get(mode="drop"))


@pytest.mark.parametrize("method", ["add", "subtract", "multiply", "min", "max", "set"])
@pytest.mark.parametrize("weak_x", [False, True])
def test_update_gradient_weak_types_as_jax(backend, method, weak_x):
    def program(lib, n):
        x = n.asarray(2.0)[None] if weak_x else n.ones(3)
        y = np.float32(3.0) if weak_x else 3.0
        return lib.grad(lambda a, b: getattr(a.at[0], method)(b).sum(), (0, 1))(x, y)

    for got, want in zip(program(ri, rnp), program(jax, jnp), strict=True):
        assert got.weak_type == want.weak_type
        _same(got, want)


# (left out: a traced int8 scalar, which JAX wraps in int8 arithmetic: a[-1] of 300 is a[43])
NARROW = {
    "getitem_int8_axis_300": lambda j, n: n.arange(300.0)[np.array([1, -1], np.int8)],
    "getitem_int8_axis_128": lambda j, n: n.arange(128.0)[np.array([1], np.int8)],
    "getitem_int8_axis_127": lambda j, n: n.arange(127.0)[np.array([1, -1], np.int8)],
    "getitem_int16_second_axis": lambda j, n: n.zeros((2, 40000))[:, np.array([1], np.int16)],
    "getitem_uint8_axis_300": lambda j, n: n.arange(300.0)[np.array([255], np.uint8)],
    "at_add_traced_int8_jit": lambda j, n: j.jit(lambda a, i: a.at[i].add(1.0))(
        n.arange(300.0), np.array([1], np.int8)
    ),
    "at_set_int8_clip": lambda j, n: (
        n.arange(300.0).at[np.array([1], np.int8)].set(1.0, mode="clip")
    ),
    "at_get_int8_no_wrap": lambda j, n: (
        n.arange(300.0).at[np.array([1], np.int8)].get(wrap_negative_indices=False)
    ),
    "take_int8_axis_300": lambda j, n: n.take(n.arange(300.0), np.array([1], np.int8)),
}


def _outcome(program):
    try:
        return np.asarray(program())
    except OverflowError:
        return OverflowError


@pytest.mark.parametrize("name", sorted(NARROW))
def test_index_array_too_narrow_for_axis_as_jax(backend, name):
    got, want = _outcome(lambda: NARROW[name](ri, rnp)), _outcome(lambda: NARROW[name](jax, jnp))
    if want is OverflowError:
        assert got is OverflowError
    else:
        _same(got, want)
