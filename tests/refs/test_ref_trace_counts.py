"""Trace counts with refs alive, against jax.new_ref (JAX 0.10.2).

A body that touches a ref made outside it is traced once, as in JAX: the
ref gets a late input of the body's trace at its first touch and the
construct threads it afterwards (refimpl/ref.py, ``late_inputs``). Each
test runs one program with refimpl and with JAX, counting the calls of
each user function, and compares the counts and the values.
"""

from types import SimpleNamespace

import jax
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import lax

RI = SimpleNamespace(
    name="refimpl", new_ref=ri.new_ref, jit=ri.jit, vmap=ri.vmap, grad=ri.grad, lax=lax, np=rnp
)
JAX = SimpleNamespace(
    name="jax", new_ref=jax.new_ref, jit=jax.jit, vmap=jax.vmap, grad=jax.grad, lax=jax.lax,
    np=jax.numpy,
)  # fmt: skip


def _both(program):
    """``program(ns, count)`` for refimpl and JAX: equal counts and values."""
    results = []
    for ns in (RI, JAX):
        counts: dict[str, int] = {}

        def count(name: str, counts=counts) -> None:
            counts[name] = counts.get(name, 0) + 1

        out = jax.tree.map(np.asarray, program(ns, count))
        results.append((counts, out))
    (ours, ours_out), (theirs, theirs_out) = results
    assert ours == theirs, (ours, theirs)
    leaves, jleaves = jax.tree.leaves(ours_out), jax.tree.leaves(theirs_out)
    assert len(leaves) == len(jleaves)
    for a, b in zip(leaves, jleaves, strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype, (a, b)
        np.testing.assert_allclose(a, b, rtol=1e-6)
    return ours


X = np.arange(3, dtype=np.float32)


def test_jit_closing_over_ref(backend):
    def program(ns, count):
        r = ns.new_ref(np.zeros(3, np.float32))
        s = ns.new_ref(np.ones(3, np.float32))

        def f(x):
            count("f")
            r[...] += x * s[...]
            return x * 2

        def g(x):  # touches no ref while refs are alive
            count("g")
            return x + 1

        jf, jg = ns.jit(f), ns.jit(g)
        outs = [jf(X), jf(X + 1), jg(X), jg(X)]
        return outs, r[...], s[...]

    assert _both(program) == {"f": 1, "g": 1}


def test_scan_touching_refs(backend):
    def program(ns, count):
        acc = ns.new_ref(np.zeros(3, np.float32))
        scale = ns.new_ref(np.float32(2))

        def body(c, x):  # reads one outer ref, writes another
            count("body")
            acc[...] += x * scale[...]
            return c + 1, x.sum()

        def untouched(c, x):
            count("untouched")
            return c + x, None

        xs = np.arange(6, dtype=np.float32).reshape(2, 3)
        eager = ns.lax.scan(body, 0, xs)
        jitted = ns.jit(lambda xs: ns.lax.scan(body, 0, xs))(xs)  # the same trace
        plain = ns.lax.scan(untouched, np.zeros(3, np.float32), xs)
        return eager, jitted, plain, acc[...], scale[...]

    assert _both(program) == {"body": 1, "untouched": 1}


def test_nested_scans_and_fori_touching_a_ref(backend):
    def program(ns, count):
        r = ns.new_ref(np.zeros(3, np.float32))

        def inner(c, x):
            count("inner")
            r[...] += x
            return c, None

        def outer(c, xs):
            count("outer")
            ns.lax.scan(inner, 0, xs)
            return c + r[...].sum(), None

        def fori_body(i, c):
            count("fori")
            r[i] = r[i] * 2
            return c + i

        xs = np.ones((2, 2, 3), np.float32)
        out = ns.jit(lambda xs: ns.lax.scan(outer, np.float32(0), xs))(xs)
        total = ns.jit(lambda: ns.lax.fori_loop(0, 3, fori_body, 0))()
        return out, total, r[...]

    assert _both(program) == {"inner": 1, "outer": 1, "fori": 1}


def test_cond_branches_touching_different_refs(backend):
    def program(ns, count):
        r, s = ns.new_ref(np.zeros(3, np.float32)), ns.new_ref(np.ones(3, np.float32))

        def add_to_r(x):
            count("r")
            r[...] += x * s[...]
            return x.sum()

        def set_s(x):
            count("s")
            s[...] = x
            return x.sum() * 2

        def untouched(x):
            count("untouched")
            return x - 1

        f = ns.jit(lambda p, x: ns.lax.cond(p, add_to_r, set_s, x))
        outs = [f(True, X), f(False, X + 1), f(True, X)]
        eager = ns.lax.cond(False, add_to_r, set_s, X)
        plain = ns.jit(lambda x: ns.lax.cond(x.sum() > 0, untouched, lambda v: v + 1, x))(X)
        i = ns.lax.switch(2, [add_to_r, set_s, add_to_r], X)
        return outs, eager, plain, i, r[...], s[...]

    # the eager cond reuses the jitted cond's traces; the switch traces
    # add_to_r once for its two branches
    assert _both(program) == {"r": 2, "s": 2, "untouched": 1}


def test_while_touching_refs(backend):
    def program(ns, count):
        r, limit = ns.new_ref(np.float32(0)), ns.new_ref(np.float32(4))

        def cond(i):
            count("cond")
            return i < limit[...]

        def body(i):
            count("body")
            r[...] += i
            return i + 1

        def counting_cond(i):  # its writes: JAX's rule (kept once per iteration)
            count("counting_cond")
            limit[...] += 1
            return i < 3

        eager = ns.lax.while_loop(cond, body, np.float32(0))
        jitted = ns.jit(lambda: ns.lax.while_loop(cond, body, np.float32(0)))()
        n = ns.jit(lambda: ns.lax.while_loop(counting_cond, lambda i: i + 1, 0))()
        dynamic = ns.jit(lambda n: ns.lax.fori_loop(0, n, lambda i, c: body(c), 0.0))(3)
        return eager, jitted, n, dynamic, r[...], limit[...]

    assert _both(program) == {"cond": 1, "body": 2, "counting_cond": 1}


def test_failed_body_changes_no_ref():
    """A body raising after writing an outer ref: the ref keeps its value
    (no tracer left in it), for each construct."""
    r = ri.new_ref(np.ones(3, np.float32))

    def writes_then_fails(*args):
        r[...] = r[...] * 5
        raise RuntimeError("boom")

    calls = [
        lambda: lax.scan(lambda c, x: writes_then_fails(), 0, X),
        lambda: lax.cond(True, writes_then_fails, lambda x: x, X),
        lambda: lax.while_loop(lambda i: i < 3, writes_then_fails, 0),
        lambda: ri.jit(writes_then_fails)(X),
        lambda: ri.jit(lambda x: lax.scan(lambda c, x: writes_then_fails(), 0, x))(X),
    ]
    for call in calls:
        with pytest.raises(RuntimeError, match="boom"):
            call()
        np.testing.assert_array_equal(np.asarray(r[...]), np.ones(3, np.float32))
    r[...] += 1  # still a working eager ref
    np.testing.assert_array_equal(np.asarray(r[...]), np.full(3, 2, np.float32))


def test_vmap_and_grad_around_bodies_touching_refs():
    def program(ns, count):
        r = ns.new_ref(np.float32(3))

        def body(c, x):
            count("body")
            return c + x * r[...], None

        def loss(w):
            return ns.lax.scan(body, np.float32(0), w)[0]

        g = ns.grad(loss)(np.arange(4, dtype=np.float32))
        batched = ns.vmap(lambda w: ns.lax.scan(body, np.float32(0), w)[0])(np.ones((2, 3)))
        return g, batched

    assert _both(program) == {"body": 1}  # vmap reuses grad's trace of the body


@pytest.mark.parametrize("ns", [RI, JAX], ids=["refimpl", "jax"])
def test_writes_refused_in_vmap_keep_jax_errors(ns):
    r = ns.new_ref(np.zeros(3, np.float32))

    def body(c, x):
        r[...] += x
        return c, None

    with pytest.raises(Exception, match="vmapped value on an unbatched array reference"):
        ns.vmap(lambda xs: ns.lax.scan(body, 0, xs))(np.ones((2, 4, 3), np.float32))

    def branch(x):
        r[...] = x
        return x

    with pytest.raises(NotImplementedError, match="State effect not supported in vmap-of-cond"):
        ns.vmap(lambda p, x: ns.lax.cond(p, branch, lambda x: x, x))(
            np.array([True, False]), np.ones((2, 3), np.float32)
        )
    np.testing.assert_array_equal(np.asarray(r[...]), np.zeros(3, np.float32))


def test_nested_jit_touching_refs(backend):
    def program(ns, count):
        r = ns.new_ref(np.zeros(3, np.float32))

        def inner(x):
            count("inner")
            r[...] += x
            return x * 2

        def takes(q, x):
            count("takes")
            q[...] = q[...] * x
            return x.sum()

        ji, jt = ns.jit(inner), ns.jit(takes)
        a = ns.jit(lambda x: ji(x) + 1)(X)
        b = ns.jit(lambda x: ji(x) - 1)(X)  # another outer trace: inner's trace reused
        q = ns.new_ref(np.ones((2, 3), np.float32))
        c = ns.vmap(jt)(q, np.full((2, 3), 2, np.float32))

        def bump(y):  # writes a value that does not depend on y: allowed under grad
            count("bump")
            r[...] = r[...] + 1
            return y * r[...]

        jb = ns.jit(bump)
        d = ns.grad(lambda x: jb(x).sum() + jb(x * 2).sum())(X)
        return a, b, c, d, r[...], q[...]

    assert _both(program) == {"inner": 1, "takes": 1, "bump": 1}


def test_eager_loops_write_back_into_the_refs_buffer():
    """Reference backend: an eager scan, cond or while writing an outer ref
    copies the final value into the ref's own NumPy buffer, as an eager write
    (values against JAX)."""
    old = ri.config.backend
    ri.config.update("backend", "ref")
    try:
        values = []
        for ns in (RI, JAX):
            r = ns.new_ref(np.zeros(3, np.float32))
            pointer = r.unsafe_buffer_pointer() if ns is RI else None

            def body(c, x, r=r):
                r[...] += x
                return c, None

            def triple(r=r):
                r[...] = r[...] * 3

            def bump(i, r=r):
                r[...] += 1
                return i + 1

            ns.lax.scan(body, 0, np.ones((2, 3), np.float32))
            ns.lax.cond(True, triple, lambda: None)
            ns.lax.while_loop(lambda i: i < 2, bump, 0)
            if ns is RI:
                assert r.unsafe_buffer_pointer() == pointer
            values.append(np.asarray(r[...]))
        np.testing.assert_array_equal(values[0], values[1])
    finally:
        ri.config.update("backend", old)


def test_clear_caches_retraces_a_pjrt_call_with_ref_arguments():
    # A Jitted made while config.backend is "ref" stays the Python object;
    # its calls on pjrt with Ref arguments keep a quick-signature memo, which
    # clear_caches must forget as it forgets the signature caches
    old = ri.config.backend

    def program(ns, count):
        def f(r, x):
            count("f")
            r[...] = r[...] + x
            return x * 2

        g = ns.jit(f)
        if ns is RI:
            ri.config.update("backend", "pjrt")
        r = ns.new_ref(np.zeros(3, np.float32))
        outs = [g(r, X), g(r, X)]
        (ri.clear_caches if ns is RI else jax.clear_caches)()
        outs.append(g(r, X))
        ri.config.update("backend", old)
        return outs, r[...]

    try:
        assert _both(program) == {"f": 2}
    finally:
        ri.config.update("backend", old)
