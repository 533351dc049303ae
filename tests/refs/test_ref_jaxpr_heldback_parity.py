"""``make_jaxpr`` of a function using refs, compared with JAX 0.10.2 live on
both backends (issue 29: JAX's mutable_array_test.py test_slicing_with_vjp3
reads ``str(make_jaxpr(...))``; lane REFJAXPR).

JAX's ClosedJaxpr shows the refs themselves: a ref the function closes over
is a ``Ref{...}`` constant (``consts`` holds the Ref), a Ref argument an
input of that type, and a write has no output (``a[...] <- c``). refimpl's
program threads the refs' values (their values in, final values out), and
``make_jaxpr`` presents it as JAX's (``refimpl.ref_jaxpr``); evaluating that
ClosedJaxpr writes through the Ref, eagerly and under transformations.
"""

from __future__ import annotations

import jax
import jax.extend.core
import numpy as np

import refimpl as ri
import refimpl.core_api
import refimpl.extend.core


def _cases(ns):
    """name -> (function, its arguments' maker); the refs are made per call."""
    jnp = ns.numpy
    r = ns.new_ref(jnp.zeros(3))
    r2 = ns.new_ref(jnp.ones(2))

    def write_closed():
        r[...] += 1.0

    def read_closed():
        return r[...] * 2.0

    def write_with_arg(x):
        r[...] = r[...] + x
        return x * 2

    def swap_result_used(x):
        old = r[...]
        r[...] = x
        return old

    def two_refs():
        r2[...] = r[:2] + r2[...]
        return r[...]

    def read_after_write():
        r[...] = r[...] + 1.0
        return r[...]

    c = jnp.arange(3.0)

    def const_then_ref(x):  # the constants in the order of first use, as JAX's
        y = c * x
        r[...] += y

    def ref_then_const(x):
        r[...] += c * x
        return c

    def ref_argument(ref, x):
        ref[...] += x

    def ref_argument_read(ref, x):
        return ref[...] * x

    def nested_jit(x):
        ns.jit(write_with_arg)(x)
        return x

    def vmap_inside(x):
        return ns.vmap(lambda y: y * r[0])(x)

    return {
        "write_closed": (write_closed, lambda: ()),
        "read_closed": (read_closed, lambda: ()),
        "write_with_arg": (write_with_arg, lambda: (1.0,)),
        "swap_result_used": (swap_result_used, lambda: (jnp.ones(3),)),
        "two_refs": (two_refs, lambda: ()),
        "read_after_write": (read_after_write, lambda: ()),
        "const_then_ref": (const_then_ref, lambda: (2.0,)),
        "ref_then_const": (ref_then_const, lambda: (2.0,)),
        "ref_argument": (ref_argument, lambda: (ns.new_ref(jnp.zeros(3)), 1.0)),
        "ref_argument_read": (ref_argument_read, lambda: (ns.new_ref(jnp.zeros(3)), 1.0)),
        "nested_jit": (nested_jit, lambda: (1.0,)),
        "vmap_inside": (vmap_inside, lambda: (jnp.ones(2),)),
    }


def _shape(ns, name):
    fun, args = _cases(ns)[name]
    closed = ns.make_jaxpr(fun)(*args())
    return {
        "text": str(closed),
        "in_avals": [str(a) for a in closed.in_avals],
        "out_avals": [str(a) for a in closed.out_avals],
        # which are Refs (an array constant is a NumPy array in refimpl)
        "consts": [type(c).__name__ == "Ref" for c in closed.consts],
        "constvars": [str(v.aval) for v in closed.jaxpr.constvars],
    }


def test_make_jaxpr_shows_refs_as_jax(backend):
    # every case in one test (a parametrization would be thinned by the
    # conftest's spread): the differing names are reported together
    differ = [n for n in _cases(jax) if _shape(ri, n) != _shape(jax, n)]
    assert differ == []


def _evaluated(ns, core, as_fun):
    """Every way of running a ClosedJaxpr with Ref constants or inputs: the
    outputs and the refs' values after each."""
    jnp = ns.numpy
    r = ns.new_ref(jnp.zeros(3))

    def step(x):
        r[...] += x
        return x * 2

    def reader(x):
        return (r[...] * x).sum()

    def indexed(ref, x):
        ref[1] += x
        return ref[...] * x

    j = ns.make_jaxpr(step)(1.0)
    out = {"eager": (core.eval_jaxpr(j.jaxpr, j.consts, 2.0), r[...])}
    out["as_fun"] = (as_fun(j)(3.0), r[...])
    out["under_jit"] = (ns.jit(lambda x: core.eval_jaxpr(j.jaxpr, j.consts, x))(1.0), r[...])
    nested = ns.make_jaxpr(lambda x: (ns.jit(step)(x), x)[1])(1.0)
    out["nested_jit"] = (core.eval_jaxpr(nested.jaxpr, nested.consts, np.float32(10.0)), r[...])
    q = ns.new_ref(jnp.ones(3))
    ji = ns.make_jaxpr(indexed)(q, 1.0)
    out["ref_input"] = (core.eval_jaxpr(ji.jaxpr, ji.consts, q, 2.0), q[...])
    jr = ns.make_jaxpr(reader)(1.0)
    out["vmap"] = ns.vmap(lambda x: core.eval_jaxpr(jr.jaxpr, jr.consts, x)[0])(jnp.arange(2.0))
    out["grad"] = ns.grad(lambda x: core.eval_jaxpr(jr.jaxpr, jr.consts, x)[0])(2.0)
    return out


def test_evaluating_the_closed_jaxpr_writes_through_the_ref(backend):
    got = _evaluated(ri, ri.core_api, ri.extend.core.jaxpr_as_fun)
    want = _evaluated(jax, jax.core, jax.extend.core.jaxpr_as_fun)
    assert got.keys() == want.keys()
    for mode in want:
        g, w = ri.tree_util.tree_leaves(got[mode]), jax.tree_util.tree_leaves(want[mode])
        assert len(g) == len(w), mode
        for a, b in zip(g, w, strict=True):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), err_msg=mode)


def test_scan_over_a_closed_ref_reads_and_writes_it_whole(backend):
    # the difference kept (docs/_lanes/REFJAXPR.md): JAX's scan takes the Ref
    # into its body; refimpl's scan threads the ref's value as a carry, so the
    # ClosedJaxpr reads the ref whole before the scan and writes it after.
    # The Ref constant, the types and the values are JAX's.
    def run(ns):
        r = ns.new_ref(ns.numpy.zeros(3))

        def f(x):
            def body(c, _):
                r[...] += c
                return c, None

            ns.lax.scan(body, x, None, length=2)

        closed = ns.make_jaxpr(f)(1.0)
        outs = ri.core_api.eval_jaxpr if ns is ri else jax.core.eval_jaxpr
        result = outs(closed.jaxpr, closed.consts, 1.5)
        kinds = [type(c).__name__ for c in closed.consts]
        return kinds, closed.in_avals, closed.out_avals, result, np.asarray(r[...])

    got, want = run(ri), run(jax)
    assert got[0] == want[0] == ["Ref"]
    assert [str(a) for a in got[1]] == [str(a) for a in want[1]]
    assert got[2] == want[2] == []
    assert got[3] == want[3] == []
    np.testing.assert_array_equal(got[4], want[4])
