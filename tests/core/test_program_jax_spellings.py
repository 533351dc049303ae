"""make_jaxpr's result read with JAX's spellings (``.jaxpr.eqns``,
``invars``/``outvars``/``constvars``, an equation's ``invars``/``outvars``):
the equation count and primitives of nested vmaps of a dot are JAX 0.10.2's
(batching_test's nested matmat builds one dot_general)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import refimpl as ri
import refimpl.numpy as rnp


def _matmat(vmap, vdot):
    return vmap(vmap(vdot, in_axes=(0, None)), in_axes=(None, 1), out_axes=1)


def test_closed_program_has_jaxs_spellings():
    a, b = np.ones((4, 3), np.float32), np.ones((3, 2), np.float32)
    want = jax.make_jaxpr(_matmat(jax.vmap, jnp.vdot))(a, b)
    got = ri.make_jaxpr(_matmat(ri.vmap, rnp.vdot))(a, b)
    assert [e.primitive.name for e in got.jaxpr.eqns] == [e.primitive.name for e in want.jaxpr.eqns]
    assert len(got.jaxpr.invars) == len(want.jaxpr.invars) == 2
    assert len(got.jaxpr.outvars) == len(want.jaxpr.outvars) == 1
    assert got.jaxpr.constvars == []
    (eqn,) = got.jaxpr.eqns
    assert eqn.invars == got.jaxpr.invars and eqn.outvars == got.jaxpr.outvars
