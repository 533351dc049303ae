"""The transpose of ``copy`` (``jnp.array(x, copy=True)``) gives a new array,
as JAX 0.10.2's: the input's cotangent is not the object handed to the
pullback (JAX's testArrayCopyAutodiff). Both backends."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import refimpl as ri
import refimpl.numpy as rnp


def _pulled_back(api, np_mod):
    _, pullback = api.vjp(lambda x: np_mod.array(x, copy=True), np_mod.ones(3))
    ct = np_mod.arange(3.0)
    (g,) = pullback(ct)
    return g, ct


def test_copy_pullback_returns_a_new_array(backend):
    g, ct = _pulled_back(ri, rnp)
    jg, jct = _pulled_back(jax, jnp)
    assert (g is ct) == (jg is jct) is False
    np.testing.assert_array_equal(np.asarray(g), np.asarray(jg))
    assert g.dtype == jg.dtype and g.aval.weak_type == jg.aval.weak_type
