"""make_jaxpr's result read with JAX's spellings (``.jaxpr.eqns``,
``invars``/``outvars``/``constvars``, an equation's ``invars``/``outvars``):
the equation count and primitives of nested vmaps of a dot are JAX 0.10.2's
(batching_test's nested matmat builds one dot_general)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

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


def _precision_param(text: str) -> str:
    """The ``precision=...`` parameter as printed, whitespace dropped."""
    flat = "".join(text.split())
    start = flat.index("precision=") + len("precision=")
    depth, end = 0, start
    while depth or flat[end] not in ",]":
        depth += {"(": 1, ")": -1}.get(flat[end], 0)
        end += 1
    return flat[start:end]


@pytest.mark.parametrize("precision", ["highest", "fastest", ("high", "default"), "F32_F32_F32"])
def test_printed_precision_as_jax(precision):
    # lax_autodiff_test reads `Precision.HIGHEST` in a dot's printed pullback.
    def printed(api, lax, np_):
        if precision == "F32_F32_F32":
            prec = lax.DotAlgorithmPreset.F32_F32_F32
        else:
            prec = precision
        x = np_.ones((2,), np.float32)
        y = np_.ones((2, 3), np.float32)
        dot = lambda a, b: lax.dot(a, b, precision=prec)  # noqa: E731
        out, pullback = api.vjp(dot, x, y)
        return _precision_param(str(api.make_jaxpr(pullback)(out)))

    want = printed(jax, jax.lax, jnp)
    assert printed(ri, ri.lax, rnp) == want
