"""jax.numpy signatures as JAX's tests/lax_numpy_test.py (NumpySignaturesTest)
compares them with NumPy's: the parameter names, in order, of the functions
where refimpl's differed from JAX 0.10.2 (``device=`` of the creation
functions and ``astype``, ``mean=`` of ``nanvar``/``nanstd`` where refimpl
had ``correction=``, ``out=`` of ``stack``/``isposinf``/``isneginf``,
``dtype=`` of ``corrcoef``), and what those parameters do: a result placed
with ``device=`` is committed (and strongly typed for ``full`` and the
``*_like`` functions, as JAX), ``mean=`` replaces the NaN-skipping mean, an
``out`` array is NotImplementedError. Compared with JAX 0.10.2 on both
backends."""

from __future__ import annotations

import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp

_NAMES = [
    "arange", "astype", "corrcoef", "empty", "empty_like", "eye", "full", "full_like",
    "isneginf", "isposinf", "linspace", "nanstd", "nanvar", "ones", "ones_like", "stack",
    "zeros", "zeros_like", "asarray",
]  # fmt: skip


@pytest.mark.parametrize("name", _NAMES)
def test_parameter_names(name):
    want = list(inspect.signature(getattr(jnp, name)).parameters)
    assert list(inspect.signature(getattr(rnp, name)).parameters) == want


def test_array_method_astype_takes_device(backend):
    device = ri.devices()[0]
    out = rnp.ones(2).astype(np.int32, device=device)
    assert out.dtype == np.int32 and out.committed


_PLACED = [
    ("zeros", (3,)),
    ("arange", (4,)),
    ("eye", (2,)),
    ("linspace", (0.0, 1.0, 3)),
    ("full", (2, 7)),
    ("full_like", (3.0, 2)),
    ("zeros_like", (3.0,)),
    ("ones_like", (3.0,)),
    ("astype", (3.0, np.float32)),
    ("asarray", (3.0,)),
    ("array", ([1, 2],)),
]


@pytest.mark.parametrize("name, args", _PLACED, ids=[p[0] for p in _PLACED])
def test_device_keyword(backend, name, args):
    got = getattr(rnp, name)(*args, device=ri.devices()[0])
    want = getattr(jnp, name)(*args, device=jax.devices()[0])
    assert got.committed
    assert got.dtype == want.dtype and got.aval.weak_type == want.aval.weak_type
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    traced = ri.jit(lambda: getattr(rnp, name)(*args, device=ri.devices()[0]))()
    want = jax.jit(lambda: getattr(jnp, name)(*args, device=jax.devices()[0]))()
    assert traced.aval.weak_type == want.aval.weak_type


_A = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]], np.float32)


@pytest.mark.parametrize("name", ["nanvar", "nanstd"])
@pytest.mark.parametrize(
    "kwargs",
    [
        dict(axis=1, mean=np.array([[2.0], [5.0]], np.float32)),
        dict(axis=1, keepdims=True, mean=np.array([[2.0], [5.0]], np.float32)),
        dict(mean=3.0, ddof=1),
    ],
)
def test_nanvar_mean(backend, name, kwargs):
    got, want = getattr(rnp, name)(_A, **kwargs), getattr(jnp, name)(_A, **kwargs)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


@pytest.mark.parametrize("dtype", [None, np.complex64, "bfloat16"])
def test_corrcoef_dtype(backend, dtype):
    x = np.random.RandomState(0).randn(3, 5).astype(np.float32)
    got, want = rnp.corrcoef(x, dtype=dtype), jnp.corrcoef(x, dtype=dtype)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(
        np.asarray(got, np.complex64), np.asarray(want, np.complex64), atol=1e-2
    )
    with pytest.raises(ValueError):
        rnp.corrcoef(x, dtype=np.int32)


def test_out_arguments_are_not_supported(backend):
    x = np.array([np.inf, -np.inf], np.float32)
    for fn, args in [("stack", ([x, x], 0, np.zeros((2, 2)))), ("isposinf", (x, np.zeros(2)))]:
        with pytest.raises(NotImplementedError):
            getattr(jnp, fn)(*args)
        with pytest.raises(NotImplementedError):
            getattr(rnp, fn)(*args)
    np.testing.assert_array_equal(rnp.isneginf(x, out=None), [False, True])
