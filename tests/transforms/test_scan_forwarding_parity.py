"""A scan whose body returns an x as a y, compared with JAX 0.10.2 live on
both backends (issue 29: JAX's lax_control_flow_test.py
test_scan_input_to_output_forwarding).

JAX's scan prunes such a y from its body and gives the xs themselves for it
(no stacked copy): ``make_jaxpr`` shows a body without that output and the
xs as the function's output; the values are the xs (as an array of the
stacked y's type for NumPy xs). A carry the body returns unchanged is a
constant of the scan, its final value the init.
"""

from __future__ import annotations

import jax
import numpy as np

import refimpl as ri


def _cases(ns):
    """name -> (function, its arguments)."""
    lax, jnp = ns.lax, ns.numpy

    def count_and_pass(c, x):
        return c + 1, x

    def several_ys(c, x):
        return c + x, (x, x * 2, x)

    one, two = np.float32(1), np.float32(2)

    return {
        "as_test": (lambda x: lax.scan(count_and_pass, 0, x), (jnp.arange(3.0),)),
        "numpy_xs": (lambda x: lax.scan(count_and_pass, 0, x), (np.arange(3.0),)),
        "reverse": (lambda x: lax.scan(count_and_pass, 0, x, reverse=True), (jnp.arange(3.0),)),
        "several_ys": (lambda x: lax.scan(several_ys, np.float32(0), x), (jnp.arange(4.0),)),
        "tree_xs": (
            lambda x: lax.scan(lambda c, x: (c + x[0], x[1]), np.float32(0), x),
            ((jnp.arange(3.0), jnp.ones((3, 2), jnp.int32)),),
        ),
        "inside_jit": (ns.jit(lambda x: lax.scan(count_and_pass, 0, x)), (jnp.arange(3.0),)),
        # a carry returned unchanged: a constant of the scan, the init returned
        "fixed_carry": (
            lambda x: lax.scan(lambda c, x: ((c[0], c[1] + x), x * c[0]), (two, one), x),
            (jnp.arange(3.0),),
        ),
        "fori_fixed": (
            lambda x: lax.fori_loop(0, 3, lambda i, c: (c[0], c[1] * c[0]), (x, x)),
            (two,),
        ),
        "fixed_carry_vmapped": (
            ns.vmap(
                lambda a, xs: lax.scan(lambda c, x: ((c[0], c[1] + x * c[0]), x * 2), (a, one), xs),
                in_axes=(0, None),
            ),
            (jnp.arange(2.0), jnp.arange(3.0)),
        ),
        "under_vmap": (ns.vmap(lambda x: lax.scan(count_and_pass, 0, x)), (jnp.ones((2, 3)),)),
    }


def _shown(ns, name):
    fun, args = _cases(ns)[name]
    closed = ns.make_jaxpr(fun)(*args)
    scans = [e for e in closed.jaxpr.eqns if str(e.primitive) == "scan"]
    # the scan's ys: its outputs after the carries
    ys = [len(e.outvars) - e.params["num_carry"] for e in scans]
    values = [np.asarray(v) for v in ns.tree_util.tree_leaves(fun(*args))]
    dtypes = [str(v.dtype) for v in ns.tree_util.tree_leaves(fun(*args))]
    return str(closed), ys, dtypes, values


def test_scan_forwards_xs_returned_as_ys_as_jax(backend):
    for name in _cases(jax):
        got, want = _shown(ri, name), _shown(jax, name)
        # (under vmap JAX prints the unbatched ys' broadcast as
        # broadcast_dimensions=(np.int64(1),): the text is compared without it)
        if name != "fixed_carry_vmapped":
            assert got[0] == want[0], name
        assert got[1:3] == want[1:3], name
        for g, w in zip(got[3], want[3], strict=True):
            np.testing.assert_array_equal(g, w, err_msg=name)


def _while_cases(ns):
    """name -> (function, its arguments): while loops with carries the body returns unchanged."""
    lax = ns.lax
    one, two = np.float32(1), np.float32(2)

    def fixed(x):  # c[0] and c[2] fixed, cond_fun reads c[1] only
        return lax.while_loop(lambda c: c[1] < 3, lambda c: (c[0], c[1] + c[0], c[2]), (x, x, x))

    def cond_reads(x):  # c[0] fixed but read by cond_fun: stays a carry
        return lax.while_loop(lambda c: c[1] < c[0], lambda c: (c[0], c[1] + 1.0), (x, one))

    def key(k):  # a typed key carried unchanged
        return lax.while_loop(lambda c: c[1] < 3, lambda c: (c[0], c[1] + 1), (k, 0))

    return {
        "fixed": (fixed, (one,)),
        "cond_reads": (cond_reads, (two * 3,)),
        "fori": (lambda x: lax.fori_loop(0, 3, lambda i, c: (c[0], c[1] * c[0]), (x, x)), (two,)),
        "key": (key, (ns.random.key(0),)),
    }


def _while_shown(ns, name):
    fun, args = _while_cases(ns)[name]
    leaves = ns.tree_util.tree_leaves(fun(*args))
    data = [ns.random.key_data(v) if "key" in str(v.dtype) else v for v in leaves]
    return str(ns.make_jaxpr(fun)(*args)), [np.asarray(v) for v in data]


def test_while_loop_makes_a_fixed_carry_a_body_constant_as_jax(backend):
    # JAX's while_loop: a carry the body returns unchanged and cond_fun does
    # not read is a constant of the body (body_nconsts), the init returned
    for name in _while_cases(jax):
        (got, got_values), (want, want_values) = _while_shown(ri, name), _while_shown(jax, name)
        assert got == want, name
        for g, w in zip(got_values, want_values, strict=True):
            np.testing.assert_array_equal(g, w, err_msg=name)
