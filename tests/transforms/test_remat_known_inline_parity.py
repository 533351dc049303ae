"""The known (forward) part of a linearized checkpoint is computed in place,
as JAX 0.10.2's remat partial evaluation hoists it out of the remat
primitive: ``make_jaxpr`` of ``linearize``/``vjp`` of a remat shows its
primal equations inline, and only the backward pass is a ``remat2``. JAX's
api_test ``DCETest.test_dce_jaxpr_scan_overpruning`` reads it through a scan
body (its dead-code elimination keeps the inline ``mul`` and ``tanh``, two
equations; refimpl had kept one ``remat2`` call). Compared with JAX live on
the ref and pjrt backends.
"""

from __future__ import annotations

import types

import jax
import jax.numpy as jnp
import pytest
from jax import lax as jlax
from jax._src.interpreters import partial_eval as pe

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import lax as rlax
from refimpl.transforms.dce import dce_program

JAX = types.SimpleNamespace(api=jax, np=jnp, lax=jlax, dce=pe.dce_jaxpr)
REF = types.SimpleNamespace(api=ri, np=rnp, lax=rlax, dce=dce_program)


def _remat_sin_cos(ns, how):
    f = ns.api.remat(lambda x: ns.np.sin(ns.np.cos(x)))
    if how == "linearize":
        return ns.api.make_jaxpr(lambda x: ns.api.linearize(f, x))(1.0)
    return ns.api.make_jaxpr(lambda x: ns.api.vjp(f, x))(1.0)


@pytest.mark.parametrize("how", ["linearize", "vjp"])
def test_linearized_remat_forward_is_inline(backend, how):
    assert str(_remat_sin_cos(REF, how)) == str(_remat_sin_cos(JAX, how))


def _scan_body_after_dce(ns):
    # api_test's test_dce_jaxpr_scan_overpruning
    @ns.api.remat
    def scanned_f(c, x):
        out = ns.np.tanh(c * x)
        return out, out

    def f(xs):
        return ns.lax.scan(scanned_f, ns.np.array(1.0, "float32"), xs)

    xs = ns.np.arange(10.0, dtype="float32")
    jaxpr = ns.api.make_jaxpr(lambda xs: ns.api.linearize(f, xs)[1])(xs).jaxpr
    jaxpr, _ = ns.dce(jaxpr, [True] * len(jaxpr.outvars))
    body = jaxpr.eqns[-1].params["jaxpr"].jaxpr
    return len(jaxpr.eqns), [str(e.primitive) for e in body.eqns]


def test_scan_of_remat_dce_keeps_the_inline_body(backend):
    assert _scan_body_after_dce(REF) == _scan_body_after_dce(JAX)
