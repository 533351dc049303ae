"""Pickling arrays, as JAX 0.10.2: an array pickles as its value and weak
type, and unpickles onto the default device, uncommitted; a deleted array is
the deleted-array ``RuntimeError``, a traced one a ``ConcretizationTypeError``
(refimpl: a PJRT array did not pickle; a reference array came back committed,
and a deleted one or a tracer pickled)."""

from __future__ import annotations

import pickle

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp

_MADE = {
    "eager": lambda api, np_: np_.arange(6, dtype=np.float32).reshape(2, 3) * 2,
    "jit": lambda api, np_: api.jit(lambda x: x * 2)(np.ones((2, 2), np.int8)),
    "weak": lambda api, np_: np_.asarray(2.0) * 1.0,
    "committed": lambda api, np_: api.device_put(np.ones(3, ml_dtypes.bfloat16), api.devices()[0]),
    "empty": lambda api, np_: np_.zeros((0, 2), np.float32),
}


def _seen(x):
    return (
        type(x).__name__ != "ndarray",
        np.asarray(x).tolist(),
        np.asarray(x).shape,
        str(x.dtype),
        x.aval.weak_type,
        x.committed,
    )


@pytest.mark.parametrize("how", sorted(_MADE))
@pytest.mark.parametrize("protocol", [0, pickle.HIGHEST_PROTOCOL])
def test_an_array_pickles_as_jax(backend, how, protocol):
    want = pickle.loads(pickle.dumps(_MADE[how](jax, jnp), protocol=protocol))
    got = pickle.loads(pickle.dumps(_MADE[how](ri, rnp), protocol=protocol))
    assert _seen(got) == _seen(want)
    assert type(got) is type(ri.device_put(np.float32(0)))  # the backend in effect


def _deleted(api, np_):
    x = np_.arange(3.0)
    x.delete()
    return pickle.dumps(x)


def _traced(api, np_):
    return api.jit(lambda x: pickle.dumps(x) and x)(1.0)


@pytest.mark.parametrize("program", [_deleted, _traced], ids=["deleted", "traced"])
def test_what_cannot_pickle_is_jaxs_error(backend, program):
    with pytest.raises(Exception) as want:
        program(jax, jnp)
    with pytest.raises(Exception) as got:
        program(ri, rnp)
    assert type(got.value).__name__ == type(want.value).__name__
