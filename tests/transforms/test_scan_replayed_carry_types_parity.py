"""A scan traced with weakly typed carries (Python floats), evaluated on
strongly typed ones: ``core.eval_jaxpr`` of ``make_jaxpr``'s program binds
the scan with the new operands, as JAX's does. The pjrt backend lowers a
scan by replaying its body in a while loop, and a carry the body returns
unchanged came out of another weak type than the loop carried, which the
while loop refused (TypeError); the replayed steps now keep the loop's carry
types. api_test's DCETest.test_dce_jaxpr_scan_nontrivial_fixedpoint_carry
evaluates (and differentiates) such programs. Compared with JAX 0.10.2 live
on both backends.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
from jax._src import core as jax_core

import refimpl as ri
from refimpl import core_api


def _fixedpoint_carry(lax):
    def f(lst):
        def body(c, _):
            return [c[0]] + [c1 + c2 for c1, c2 in zip(c[:-1], c[1:])], None

        out, _ = lax.scan(body, lst, None, length=len(lst))
        return out

    return f


def _run(lib, eval_jaxpr, how):
    closed = lib.make_jaxpr(_fixedpoint_carry(lib.lax))([1.0, 2.0, 3.0, 4.0])
    args = [np.float32(0.5), np.float32(1.5), np.float32(-1.0), np.float32(2.0)]

    def run(*a):
        return eval_jaxpr(closed.jaxpr, closed.consts, *a)

    if how == "eval":
        outs = run(*args)
    elif how == "jit":
        outs = lib.jit(run)(*args)
    else:  # the cotangents of the inputs for the third output
        outs = lib.vjp(lambda *a: run(*a)[2], *args)[1](np.float32(1.0))
    return [np.asarray(o).tolist() for o in outs], [str(np.asarray(o).dtype) for o in outs]


@pytest.mark.parametrize("how", ["eval", "jit", "vjp"])
def test_scan_replayed_on_strong_carries_as_jax(backend, how):
    assert _run(ri, core_api.eval_jaxpr, how) == _run(jax, jax_core.eval_jaxpr, how)
