"""refimpl.numpy's ufunc objects (rnp.add.reduce, .accumulate, .outer, .at,
.reduceat and their attributes) against jax.numpy's, which JAX 0.10.2 gives
these 14 functions (issue 29), on both backends."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp

UFUNCS = [
    "add", "bitwise_and", "bitwise_or", "bitwise_xor", "logaddexp", "logaddexp2", "logical_and",
    "logical_or", "logical_xor", "maximum", "minimum", "multiply", "subtract",
]  # fmt: skip

_X = np.arange(12).reshape(3, 4)
OPERANDS = {
    "float32": (_X / 3).astype(np.float32),
    "int8": _X.astype(np.int8),
    "int32": _X.astype(np.int32),
    "bool": _X % 3 == 0,
}

CALLS = {
    "reduce": lambda u, x: u.reduce(x),
    "reduce_all_keepdims": lambda u, x: u.reduce(x, axis=None, keepdims=True),
    "reduce_axes": lambda u, x: u.reduce(x, axis=(0, 1)),
    "reduce_where": lambda u, x: u.reduce(x, axis=1, where=np.array([True, False, True, True])),
    "reduce_empty": lambda u, x: u.reduce(x[:0], axis=0),
    "accumulate": lambda u, x: u.accumulate(x, axis=1),
    "accumulate_dtype": lambda u, x: u.accumulate(x, axis=0, dtype=np.float32),
    "outer": lambda u, x: u.outer(x[0], x[:, 1]),
    "at": lambda u, x: u.at(x, (np.array([0, 0, 2]),), x[0], inplace=False),
    "at_scalar_index": lambda u, x: u.at(x[0], 1, x[0, 0], inplace=False),
    "reduceat": lambda u, x: u.reduceat(x, np.array([0, 2, 3]), axis=1),
    "call": lambda u, x: u(x, x[0]),
}


def _outcome(fn):
    try:
        return fn()
    except Exception as e:  # noqa: BLE001  (the class is what is compared)
        return e


def _assert_same(got, want):
    if isinstance(want, Exception):
        assert isinstance(got, type(want)), f"JAX raises {want!r}, refimpl gave {got!r}"
        return
    assert not isinstance(got, Exception), f"refimpl raised {got!r}; JAX gives {want}"
    assert got.shape == want.shape
    assert got.dtype == want.dtype
    assert got.aval.weak_type == want.aval.weak_type
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-6, atol=1e-6)


def test_module_ufuncs_are_ufunc_objects():
    for name in [*UFUNCS, "negative"]:
        got, want = getattr(rnp, name), getattr(jnp, name)
        assert isinstance(got, rnp.ufunc)
        assert (got.nin, got.nout, got.nargs) == (want.nin, want.nout, want.nargs)
        assert got.identity == want.identity or (
            np.isneginf(got.identity) and np.isneginf(want.identity)
        )
        assert got.__name__ == name


@pytest.mark.parametrize("call", list(CALLS))
@pytest.mark.parametrize("dtype", list(OPERANDS))
@pytest.mark.parametrize("name", UFUNCS)
def test_ufunc_methods_as_jax(backend, name, dtype, call):
    x = OPERANDS[dtype]
    want = _outcome(lambda: CALLS[call](getattr(jnp, name), x))
    got = _outcome(lambda: CALLS[call](getattr(rnp, name), x))
    _assert_same(got, want)


def test_ufunc_methods_under_jit(backend):
    x = OPERANDS["float32"]
    got = ri.jit(lambda a: (rnp.add.reduce(a), rnp.maximum.accumulate(a, axis=1)))(x)
    np.testing.assert_allclose(np.asarray(got[0]), np.asarray(jnp.add.reduce(x)), rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(got[1]), np.asarray(jnp.maximum.accumulate(x, 1)))


def test_add_reduce_is_sum_with_its_integer_promotion(backend):
    x = OPERANDS["int8"]
    got, want = rnp.add.reduce(x, axis=None), jnp.add.reduce(x, axis=None)
    assert got.dtype == want.dtype == np.int32
    assert int(got) == int(want)
    got_b = rnp.multiply.accumulate(OPERANDS["bool"], axis=1)
    assert got_b.dtype == jnp.multiply.accumulate(OPERANDS["bool"], axis=1).dtype


def test_negative_ufunc(backend):
    x = OPERANDS["float32"]
    np.testing.assert_array_equal(np.asarray(rnp.negative(x)), np.asarray(jnp.negative(x)))
    got = rnp.negative.at(x[0], np.array([1, 1]), inplace=False)
    np.testing.assert_array_equal(
        np.asarray(got), np.asarray(jnp.negative.at(x[0], np.array([1, 1]), inplace=False))
    )


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda m: m.bitwise_and.reduce(OPERANDS["float32"]), ValueError),  # integers only
        (lambda m: m.maximum.reduce(OPERANDS["float32"], where=np.ones(4, bool)), ValueError),
        (lambda m: m.add.reduce(OPERANDS["float32"], where=np.ones(4, int)), ValueError),
        (lambda m: m.add.at(OPERANDS["float32"], 0, 1.0), NotImplementedError),  # inplace
        (lambda m: m.maximum.reduce(OPERANDS["float32"][:0], axis=0), ValueError),
    ],
)
def test_ufunc_errors_as_jax(call, error):
    with pytest.raises(error):
        call(jnp)
    with pytest.raises(error):
        call(rnp)


def test_frompyfunc_keeps_the_generic_methods():
    import operator

    mine = rnp.frompyfunc(operator.add, nin=2, nout=1, identity=0)
    theirs = jnp.frompyfunc(operator.add, nin=2, nout=1, identity=0)
    x = OPERANDS["int32"]
    for method in ("reduce", "accumulate"):
        np.testing.assert_array_equal(
            np.asarray(getattr(mine, method)(x)), np.asarray(getattr(theirs, method)(x))
        )
    assert mine == rnp.frompyfunc(operator.add, nin=2, nout=1, identity=0)
    assert hash(mine) == hash(rnp.frompyfunc(operator.add, nin=2, nout=1, identity=0))
