"""tools/run_jax_tests.py's stand-ins for the JAX-internal names api_test's
DCETest and the custom_jvp/custom_vjp ``test_dce`` read, compared with
JAX 0.10.2's own functions live:

* ``pe.dce_jaxpr(jaxpr, used_outputs)`` prunes equations and inputs and keeps
  the jaxpr's constants (JAX's works on an open jaxpr whose constvars stay;
  refimpl's ``dce_program`` drops those no equation reads), so the result
  evaluates with the original constants;
* ``core.subjaxprs(jaxpr)``: the jaxprs in the equations' params, one level;
* ``pe.close_jaxpr``: a refimpl Program is closed already.
"""

from __future__ import annotations

import importlib.util
import itertools
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
from jax._src import core as jax_core
from jax._src.interpreters import partial_eval as pe

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import core_api

ROOT = pathlib.Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("run_jax_tests", ROOT / "tools" / "run_jax_tests.py")
assert _spec is not None and _spec.loader is not None
runner = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(runner)


def _name(qualname):
    module, _, attr = qualname.rpartition(".")
    return runner._refimpl_equivalent(module, attr)


def _cumprod_with_const(np_, lax):
    table = np_.arange(1.0, 4.0, dtype="float32")  # a constant of the jaxpr

    def f(xs):
        c, ys = lax.scan(lambda c, x: (c * x, c), np_.float32(1.0), xs)
        return c, ys * table.sum()

    return f


def _dce_summary(lib, np_, lax, dce, subjaxprs, evaluate, used):
    closed = lib.make_jaxpr(_cumprod_with_const(np_, lax))(np_.arange(1.0, 5.0, dtype="float32"))
    jaxpr = closed.jaxpr
    pruned, used_inputs = dce(jaxpr, used)
    eqns = sum(len(j.eqns) for j in itertools.chain([pruned], subjaxprs(pruned)))
    xs = np.arange(1.0, 5.0, dtype="float32")
    outs = evaluate(pruned, closed.consts, *[x for x, u in zip([xs], used_inputs) if u])
    return list(used_inputs), eqns, [np.asarray(o).tolist() for o in outs]


def test_dce_keeps_constants_and_subjaxprs_count_as_jaxs():
    dce, subjaxprs = (
        _name("jax._src.interpreters.partial_eval.dce_jaxpr"),
        _name("jax._src.core.subjaxprs"),
    )
    for used in ([True, False], [False, True], [False, False]):
        got = _dce_summary(ri, rnp, ri.lax, dce, subjaxprs, core_api.eval_jaxpr, used)
        want = _dce_summary(
            jax, jnp, jax.lax, pe.dce_jaxpr, jax_core.subjaxprs, jax_core.eval_jaxpr, used
        )
        assert got == want, used


def test_close_jaxpr_of_a_pruned_program_runs_as_jaxs():
    dce, close = (
        _name("jax._src.interpreters.partial_eval.dce_jaxpr"),
        _name("jax._src.interpreters.partial_eval.close_jaxpr"),
    )

    def run(lib, np_, dce_jaxpr, close_jaxpr, as_fun):
        jaxpr = lib.make_jaxpr(lambda x, y: (np_.sin(x), x + np_.cos(y)))(0.1, -1.3).jaxpr
        pruned, _ = dce_jaxpr(jaxpr, [False, True])
        return [float(v) for v in as_fun(close_jaxpr(pruned))(0.1, -1.3)]

    from refimpl.extend.core import jaxpr_as_fun

    got = run(ri, rnp, dce, close, jaxpr_as_fun)
    want = run(jax, jnp, pe.dce_jaxpr, pe.close_jaxpr, jax_core.jaxpr_as_fun)
    np.testing.assert_allclose(got, want, rtol=1e-6)
