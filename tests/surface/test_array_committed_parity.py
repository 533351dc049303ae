"""``x._committed``: JAX's name for whether an array is committed to its
device, on refimpl's single-device arrays (lax_numpy_test's
test_full_like_committed reads it). Compared with JAX live on both backends.
(pmap's and a mesh's arrays have no ``committed``: refimpl's placement rule
is for single-device arrays; JAX calls them committed.)"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import lax as rlax

CASES = {
    "array": lambda api, np_, lax, x: np_.array((1, 2, 3), dtype=np.int32),
    "full_like": lambda api, np_, lax, x: lax.full_like(np_.array((1, 2, 3)), 1.1),
    "device_put": lambda api, np_, lax, x: x,
    "full_like_of_put": lambda api, np_, lax, x: lax.full_like(x, 1.1),
    "zeros_like_of_put": lambda api, np_, lax, x: np_.zeros_like(x),
    "jit_of_put": lambda api, np_, lax, x: api.jit(lambda v: v * 2)(x),
    "jit_of_host": lambda api, np_, lax, x: api.jit(lambda v: v * 2)(np.ones(3)),
    "eager_of_put": lambda api, np_, lax, x: x + 1,
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_committed_as_jax(backend, case):
    ours_x = ri.device_put(rnp.array((1, 2, 3), dtype=np.int32), ri.devices()[-1])
    theirs_x = jax.device_put(jnp.array((1, 2, 3), dtype=np.int32), jax.devices()[-1])
    ours = CASES[case](ri, rnp, rlax, ours_x)
    theirs = CASES[case](jax, jnp, jax.lax, theirs_x)
    assert ours._committed is theirs._committed
    assert ours._committed is ours.committed  # the same attribute under both names
