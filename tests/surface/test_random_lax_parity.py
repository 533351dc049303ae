"""Programs of JAX's tests/random_lax_test.py against JAX 0.10.2 (issue 29):
where refimpl.random differed in what runs or which exception is raised."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import refimpl as ri
from refimpl import random as rr


def _exception(f):
    try:
        f()
    except Exception as e:  # noqa: BLE001 (the type is the comparison)
        return type(e)
    return None


@pytest.mark.parametrize("axis", [3, 1, -2])
def test_permutation_of_a_range_checks_axis(backend, axis):
    want = _exception(lambda: jax.random.permutation(jax.random.PRNGKey(0), 10, axis=axis))
    assert want is ValueError
    assert _exception(lambda: rr.permutation(rr.PRNGKey(0), 10, axis=axis)) is ValueError


def test_permutation_of_a_range_with_axis_minus_one(backend):
    want = jax.random.permutation(jax.random.PRNGKey(0), 10, axis=-1)
    got = rr.permutation(rr.PRNGKey(0), 10, axis=-1)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_permutation_of_a_traced_range_is_a_concretization_error(backend):
    with pytest.raises(jax.errors.ConcretizationTypeError):
        jax.jit(jax.random.permutation)(jax.random.PRNGKey(0), 10)
    with pytest.raises(ri.errors.ConcretizationTypeError):
        ri.jit(rr.permutation)(rr.PRNGKey(0), 10)
