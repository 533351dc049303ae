"""``x.round(out=None)`` and ``x.trace(out=None)``: jax.Array's methods take
NumPy's ``out`` protocol argument (None only; another value is JAX 0.10.2's
NotImplementedError), as the reductions' methods already did (issue 29
class 5); ``x.dot(b, precision=, preferred_element_type=)`` takes jax.Array's
keywords. Against JAX on both backends, eager and under jit."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from tests.helpers.parity import assert_same_as_jax

_X = np.arange(6, dtype=np.float32).reshape(2, 3) / 3

_CALLS = {
    "round": lambda x: x.round(out=None),
    "round_decimals": lambda x: x.round(1, out=None),
    "trace": lambda x: x.trace(out=None),
    "trace_positional": lambda x: x.trace(1, 0, 1, None, None),
    "dot_precision": lambda x: x.dot(x.T, precision=jax.lax.Precision.HIGHEST),
    "dot_preferred": lambda x: x.astype(np.int8).dot(
        x.T.astype(np.int8), preferred_element_type=np.int32
    ),
}


@pytest.mark.parametrize("name", sorted(_CALLS))
def test_out_none_is_accepted(backend, name):
    call = _CALLS[name]
    want = call(jnp.asarray(_X))
    assert_same_as_jax(call(rnp.asarray(_X)), want)
    assert_same_as_jax(ri.jit(call)(_X), jax.jit(call)(_X))


@pytest.mark.parametrize("method", ["round", "trace"])
def test_another_out_is_not_implemented(backend, method):
    out = np.zeros((2, 3) if method == "round" else (), np.float32)
    with pytest.raises(NotImplementedError, match="out"):
        getattr(jnp.asarray(_X), method)(out=out)
    with pytest.raises(NotImplementedError, match="out"):
        getattr(rnp.asarray(_X), method)(out=out)
