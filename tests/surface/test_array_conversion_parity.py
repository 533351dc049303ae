"""What jnp.asarray/jnp.array accept and how astype and iscomplexobj treat
their input, as JAX 0.10.2: objects with ``__array__``, buffers (bytearray,
memoryview), ``__jax_array__`` objects (converted by asarray and the operators,
a ValueError elsewhere), None (a ValueError), astype's ``copy`` and its
complex-to-real deprecation, iscomplexobj of any object. Compared with JAX on
both backends."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp


def _same(got, want):
    assert got.shape == want.shape and got.dtype == want.dtype
    assert got.aval.weak_type == want.aval.weak_type
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


class _HostArray:
    """Not an array type: converts only through ``__array__``."""

    def __init__(self, value):
        self.value = value

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.value, dtype=dtype)


@pytest.mark.parametrize(
    "make",
    [
        lambda: _HostArray([1.0, 2.0]),
        lambda: _HostArray(3.0),
        lambda: bytearray(b"\x2a\xf3"),
        lambda: memoryview(b"\x01\x02\x03"),
        lambda: [bytearray(b"\x01\x02")],
    ],
    ids=["array_protocol", "array_protocol_scalar", "bytearray", "memoryview", "nested"],
)
@pytest.mark.parametrize("fn", ["asarray", "array"])
def test_array_protocol_and_buffers_convert(backend, make, fn):
    _same(getattr(rnp, fn)(make()), getattr(jnp, fn)(make()))


def test_array_ndmin_of_a_buffer(backend):
    _same(rnp.array(bytearray(b"\x2a\xf3"), ndmin=2), jnp.array(bytearray(b"\x2a\xf3"), ndmin=2))


@pytest.mark.parametrize("value", [None, [0.0, None], [[1], [None]]])
@pytest.mark.parametrize("fn", ["asarray", "array"])
def test_none_is_a_value_error(backend, value, fn):
    with pytest.raises(ValueError):
        getattr(jnp, fn)(value)
    with pytest.raises(ValueError, match="None"):
        getattr(rnp, fn)(value)


def _wrapper(np_module):
    class Wrapped:
        def __jax_array__(self):
            return np_module.array(3.0)

    return Wrapped()


def test_jax_array_protocol_in_asarray_and_operators(backend):
    for fn in ("asarray", "array"):
        _same(getattr(rnp, fn)(_wrapper(rnp)), getattr(jnp, fn)(_wrapper(jnp)))
    _same(_wrapper(rnp) * rnp.arange(4.0), _wrapper(jnp) * jnp.arange(4.0))
    _same(rnp.arange(4.0) - _wrapper(rnp), jnp.arange(4.0) - _wrapper(jnp))


@pytest.mark.parametrize("op", ["sin", "jit"])
def test_jax_array_protocol_elsewhere_is_a_value_error(backend, op):
    calls = {
        "sin": lambda m, np_module: np_module.sin(_wrapper(np_module)),
        "jit": lambda m, np_module: m.jit(lambda x: x)(_wrapper(np_module)),
    }
    with pytest.raises(ValueError):
        calls[op](jax, jnp)
    with pytest.raises(ValueError, match="__jax_array__"):
        calls[op](ri, rnp)


@pytest.mark.parametrize(
    "value",
    [None, True, 1, 1.5, 1 + 1j, "a", [1 + 1j], [1, 2], (np.arange(5),), np.complex64(1)],
    ids=repr,
)
def test_iscomplexobj_of_any_object(backend, value):
    assert rnp.iscomplexobj(value) == jnp.iscomplexobj(value)
    assert rnp.isrealobj(value) == jnp.isrealobj(value)


@pytest.mark.parametrize("change_dtype", [True, False])
@pytest.mark.parametrize("copy", [True, False])
def test_astype_copy(backend, change_dtype, copy):
    def deleted_after(np_module):
        x = np_module.arange(5, dtype="int32")
        y = x.astype("float32" if change_dtype else "int32", copy=copy)
        y.delete()
        return x.is_deleted()

    assert deleted_after(rnp) == deleted_after(jnp)


@pytest.mark.parametrize("target", ["float32", "int32", "bool", "complex64"])
@pytest.mark.parametrize("method", [True, False])
def test_astype_complex_to_real_deprecation(backend, target, method):
    def run(np_module):
        x = np_module.array(2.0 + 1.5j, dtype="complex64")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = x.astype(target) if method else np_module.astype(x, target)
        return out, [w.category for w in caught if w.category is DeprecationWarning]

    (got, got_warned), (want, want_warned) = run(rnp), run(jnp)
    _same(got, want)
    assert got_warned == want_warned


@pytest.mark.parametrize("order", ["C", "F"])
def test_ravel_and_flatten_methods_take_order(backend, order):
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    for method in ("ravel", "flatten"):
        _same(getattr(rnp.asarray(x), method)(order=order), getattr(jnp.asarray(x), method)(order))
