"""A jaxpr equation's parameters read by JAX 0.10.2's names, compared with
JAX live on both backends (issue 29: lax_control_flow_test.py's
testForiLoopBatchedIssue1190 reads a while's ``params['cond_jaxpr']``,
test_scan_input_to_output_forwarding a scan's ``params['jaxpr']``; api_test.py
a jit's and a remat's ``params['jaxpr']``).

refimpl names some parameters otherwise (a scan's ``body``, a while's
``cond``/``body``/``cond_num_consts``, a jit's and a checkpoint's
``program``); ``eqn.params`` answers to JAX's names too.
"""

from __future__ import annotations

import jax
import numpy as np

import refimpl as ri


def _cases(ns):
    """name -> (function, arguments, the equation's primitive, JAX's parameter names)."""
    lax, jnp = ns.lax, ns.numpy

    def fori_batched(x):  # testForiLoopBatchedIssue1190
        return lax.while_loop(lambda c: c[0] < 4, lambda c: (c[0] + 1, c[1] + 1), (0, x))

    def loop_with_consts(x):
        y = x * 2
        return lax.while_loop(lambda c: c < y.sum(), lambda c: c + y[0], 0.0)

    def scan(x):
        return lax.scan(lambda c, x: (c + 1, x * 2), 0, x)

    one = (np.float32(1),)
    return {
        "while_vmapped": (ns.vmap(fori_batched), (jnp.arange(3),), "while", ("cond_jaxpr",)),
        "while_body": (fori_batched, (np.int32(1),), "while", ("body_jaxpr",)),
        "while_consts": (loop_with_consts, (jnp.ones(3),), "while", ("cond_nconsts",)),
        "while_nconsts": (loop_with_consts, (jnp.ones(3),), "while", ("body_nconsts",)),
        "scan": (scan, (jnp.arange(3.0),), "scan", ("jaxpr",)),
        "jit": (ns.jit(lambda x: jnp.sin(x) * 2), one, "jit", ("jaxpr",)),
        "checkpoint": (ns.checkpoint(lambda x: jnp.sin(jnp.sin(x))), one, "checkpoint", ("jaxpr",)),
    }  # fmt: skip


_PRIMITIVE = {"checkpoint": ("checkpoint", "remat2", "remat"), "jit": ("jit", "pjit")}


def _read(ns, name):
    fun, args, prim, keys = _cases(ns)[name]
    eqns = ns.make_jaxpr(fun)(*args).jaxpr.eqns
    (eqn,) = [e for e in eqns if str(e.primitive) in _PRIMITIVE.get(prim, (prim,))]
    out = {}
    for key in keys:
        value = eqn.params[key]
        assert key in eqn.params and eqn.params.get(key) is value
        if hasattr(value, "eqns"):  # a jaxpr (closed or not): its types and equations
            inner = getattr(value, "jaxpr", value)
            value = (
                [str(v.aval) for v in inner.invars],
                [str(v.aval) for v in inner.outvars],
                [str(e.primitive) for e in inner.eqns],
            )
        out[key] = value
    return out


def test_eqn_params_answer_to_jax_names(backend):
    for name in _cases(jax):
        assert _read(ri, name) == _read(jax, name), name


def test_refimpl_names_stay(backend):
    # iteration and copies show refimpl's names (its rules read them)
    eqn = ri.make_jaxpr(lambda x: ri.lax.scan(lambda c, x: (c, x), 0, x))(np.ones(2)).eqns[0]
    assert "body" in dict(eqn.params) and "jaxpr" not in dict(eqn.params)
    assert eqn.params.get("nothing", 7) == 7
