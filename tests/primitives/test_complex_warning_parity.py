"""Converting complex values to a real or integer type warns as JAX 0.10.2
does: ``lax.convert_element_type`` (and what goes through it: ``jnp.asarray``
and ``jnp.array`` with a dtype, reductions with a ``dtype=``, scalar types)
gives NumPy's ``ComplexWarning``, while tracing too; ``astype`` gives only
its deprecation warning; the tangent of such a conversion does not warn
again. Compared with JAX live: the warnings the first call of each
operation gives, in order."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import lax as rlax

# name -> operation(api, numpy module, lax module, x) on a complex64 array x
OPERATIONS = {
    "convert_to_float32": lambda api, np_, lax, x: lax.convert_element_type(x, np.float32),
    "convert_to_int32": lambda api, np_, lax, x: lax.convert_element_type(x, np.int32),
    "convert_to_bool": lambda api, np_, lax, x: lax.convert_element_type(x, np.bool_),
    "convert_to_complex128": lambda api, np_, lax, x: lax.convert_element_type(x, np.complex64),
    "astype_float32": lambda api, np_, lax, x: x.astype(np.float32),
    "astype_int32": lambda api, np_, lax, x: x.astype(np.int32),
    "astype_bool": lambda api, np_, lax, x: x.astype(bool),
    "asarray_dtype": lambda api, np_, lax, x: np_.asarray(x, dtype=np.float32),
    "array_dtype": lambda api, np_, lax, x: np_.array(x, dtype=np.float32),
    "asarray_numpy_scalar": lambda api, np_, lax, x: np_.asarray(
        np.complex64(1 + 2j), dtype=np.float32
    ),
    "sum_dtype": lambda api, np_, lax, x: np_.sum(x, dtype=np.float32),
    "scalar_type": lambda api, np_, lax, x: np_.float32(x),
    "real": lambda api, np_, lax, x: np_.real(x),
    "abs": lambda api, np_, lax, x: np_.abs(x),
    "jit": lambda api, np_, lax, x: api.jit(lambda z: lax.convert_element_type(z, np.float32))(x),
    "vmap": lambda api, np_, lax, x: api.vmap(lambda z: lax.convert_element_type(z, np.float32))(x),
    "jvp": lambda api, np_, lax, x: api.jvp(
        lambda z: lax.convert_element_type(z, np.float32), (x,), (x,)
    ),
    "make_jaxpr": lambda api, np_, lax, x: api.make_jaxpr(
        lambda z: lax.convert_element_type(z, np.float32)
    )(x),
}


def _warnings_of(operation, *args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        operation(*args)
    kinds = (np.exceptions.ComplexWarning, DeprecationWarning)
    return [
        (type(w.message).__name__, str(w.message).split(".")[0])
        for w in caught
        if isinstance(w.message, kinds) and "complex" in str(w.message).lower()
    ]


@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_complex_to_real_warnings_as_jax(backend, name):
    operation = OPERATIONS[name]
    # a first call of each (JAX's jitted jnp functions warn when they trace)
    jax.clear_caches()
    ri.clear_caches()
    ours = _warnings_of(operation, ri, rnp, rlax, rnp.array([1 + 2j, 3 - 1j], np.complex64))
    theirs = _warnings_of(operation, jax, jnp, jax.lax, jnp.array([1 + 2j, 3 - 1j], np.complex64))
    assert ours == theirs
