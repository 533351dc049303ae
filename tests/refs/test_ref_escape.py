"""No Ref escapes a trace: bodies that read or write a ref made outside them,
in the constructs that neither thread refs like a loop body nor run inline
(pmap, linear_transpose, invertible, mask, scatter_apply, saved_residuals,
eval_shape, make_program, jit(...).lower().compile(), vmap collectives,
while_loop's cond_fun), against jax.new_ref (JAX 0.10.2) where JAX has the
construct, else against NumPy formulas.

Each construct either works as in JAX or raises a clear error naming it;
either way the ref keeps its value and stays usable (a jitted write and a
read afterwards). See docs/semantics.md section 5, "Constructs that cannot
thread refs".
"""

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src.ad_checkpoint import saved_residuals as jax_saved_residuals

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import lax
from refimpl.ad_checkpoint import saved_residuals as ri_saved_residuals

RI = SimpleNamespace(
    new_ref=ri.new_ref, jit=ri.jit, vmap=ri.vmap, grad=ri.grad, lax=lax, np=rnp,
    pmap=ri.pmap, linear_transpose=ri.linear_transpose, eval_shape=ri.eval_shape,
    remat=ri.remat, saved_residuals=ri_saved_residuals, vjp=ri.vjp, linearize=ri.linearize,
    jacfwd=ri.jacfwd, jacrev=ri.jacrev, hessian=ri.hessian,
)  # fmt: skip
JAX = SimpleNamespace(
    new_ref=jax.new_ref, jit=jax.jit, vmap=jax.vmap, grad=jax.grad, lax=jax.lax, np=jnp,
    pmap=jax.pmap, linear_transpose=jax.linear_transpose, eval_shape=jax.eval_shape,
    remat=jax.remat, saved_residuals=jax_saved_residuals, vjp=jax.vjp, linearize=jax.linearize,
    jacfwd=jax.jacfwd, jacrev=jax.jacrev, hessian=jax.hessian,
)  # fmt: skip

X = np.array([0.5, 1.0, 2.0], np.float32)
TWOS = np.full(3, 2.0, np.float32)


def _run(program, ns):
    """``program(ns, r)`` on a fresh ref ``r`` holding TWOS: ("ok", value) or
    ("error", exception), and the ref's value afterwards."""
    r = ns.new_ref(TWOS)
    try:
        result = "ok", jax.tree.map(np.asarray, program(ns, r))
    except Exception as error:  # noqa: BLE001 - the error is what is compared
        result = "error", error
    return result, np.asarray(r[...]), r


def _usable(ns, r, before):
    """The ref still works: a jitted write, then a read."""

    def bump(x):
        r[...] = r[...] + x
        return x

    ns.jit(bump)(np.float32(1.0))
    np.testing.assert_array_equal(np.asarray(r[...]), before + 1)


def _both(program, error=None, jax_error=None):
    """refimpl and JAX: the same values and final ref value, or (``error``,
    ``jax_error``: the exception types each raises) errors leaving the ref
    unchanged and usable. Returns refimpl's result."""
    (kind, ours), after, r = _run(program, RI)
    (jkind, theirs), jafter, jr = _run(program, JAX)
    if error is None:
        assert kind == jkind == "ok", (ours, theirs)
        for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(theirs), strict=True):
            assert a.shape == b.shape and a.dtype == b.dtype, (a, b)
            np.testing.assert_allclose(a, b, rtol=1e-6)
        np.testing.assert_array_equal(after, jafter)
    else:
        assert kind == "error" and isinstance(ours, error), ours
        assert jkind == "error" and isinstance(theirs, jax_error or error), theirs
        np.testing.assert_array_equal(after, TWOS)
        np.testing.assert_array_equal(jafter, TWOS)
    _usable(RI, r, after)
    _usable(JAX, jr, jafter)
    return ours


# --- pmap: JAX 0.10.2 fails (AttributeError) on any closed-over ref --------------------------
# (also with 4 host devices: checked by hand with
# XLA_FLAGS=--xla_force_host_platform_device_count=4; here JAX has one device)


@pytest.mark.parametrize("access", ["read", "write", "read_then_write"])
def test_pmap_closed_over_ref_is_an_error(backend, access):
    def program(ns, r):
        def body(x):
            if access == "read":
                return x * r[...]
            if access == "read_then_write":
                r[...] = r[...] + x
            else:
                r[...] = x
            return x

        return ns.pmap(body)(X[None])

    ours = _both(program, NotImplementedError, AttributeError)
    assert "pmap(body)" in str(ours) and "Ref{f32[3]}" in str(ours)


def test_pmap_closed_over_ref_error_does_not_poison_the_cache(backend):
    # The first call fails before compiling anything; the same pmap with a
    # function that no longer touches the ref then runs.
    r = ri.new_ref(TWOS)
    use_ref = [True]

    def body(x):
        return x * r[...] if use_ref[0] else x * 3

    p = ri.pmap(body)
    with pytest.raises(NotImplementedError, match=r"pmap\(body\).*Ref\{f32\[3\]\}"):
        p(X[None])
    use_ref[0] = False
    np.testing.assert_allclose(p(X[None]), (X * 3)[None])
    np.testing.assert_array_equal(r[...], TWOS)


def test_pmap_ref_argument_is_an_error(backend):
    def program(ns, r):
        q = ns.new_ref(ns.np.ones((1, 3), np.float32))

        def body(q, x):
            q[...] = q[...] + x
            return x

        try:
            return ns.pmap(body)(q, X[None])
        finally:
            np.testing.assert_array_equal(q[...], np.ones((1, 3), np.float32))

    ours = _both(program, ValueError)
    assert "pmap(body): the argument args[0]" in str(ours), ours


def test_pmap_inside_jit_reading_a_ref_of_the_jit(backend):
    def program(ns, r):
        def f(x):
            q = ns.new_ref(x[0])

            return ns.pmap(lambda y: y + q[...])(x)

        return ns.jit(f)(X[None])

    _both(program, NotImplementedError, AttributeError)


def test_pmap_ref_made_inside_each_instance(backend):
    old = ri.config.ref_num_devices
    ri.config.update("ref_num_devices", 4)
    try:

        def body(x):
            q = ri.new_ref(rnp.zeros(3, np.float32))
            q[...] += x
            q[1] += x[0]
            return ri.freeze(q)

        xs = np.arange(12.0, dtype=np.float32).reshape(4, 3)
        expected = xs.copy()
        expected[:, 1] += xs[:, 0]
        np.testing.assert_allclose(ri.pmap(body)(xs), expected)
    finally:
        ri.config.update("ref_num_devices", old)


# --- linear_transpose --------------------------------------------------------------------------


def test_linear_transpose_reads_outer_ref(backend):
    # The read is the ref's value when the transpose is made (as JAX).
    def program(ns, r):
        t = ns.linear_transpose(lambda x: x * r[...], X)
        r[...] = ns.np.full(3, 5.0, np.float32)
        return t(X)

    _both(program)


def test_linear_transpose_writing_outer_ref_is_an_error(backend):
    def program(ns, r):
        def f(x):
            r[...] = x * 3.0
            return x * 2.0

        return ns.linear_transpose(f, X)(X)

    ours = _both(program, NotImplementedError, AttributeError)
    assert "linear_transpose of 'f'" in str(ours)


# --- invertible (no JAX counterpart in 0.10.2: NumPy formulas) ---------------------------------


def test_invertible_writes_outer_ref(backend):
    r = ri.new_ref(TWOS)

    def f(x):
        r[...] = x
        return x * 2.0

    np.testing.assert_allclose(ri.invertible(f)(X), X * 2)  # eagerly f simply runs
    np.testing.assert_array_equal(r[...], X)
    r[...] = TWOS
    for g in (ri.jit(ri.invertible(f)), ri.grad(lambda x: ri.invertible(f)(x).sum())):
        with pytest.raises(NotImplementedError, match="invertible: the function 'f' writes"):
            g(X)
        np.testing.assert_array_equal(r[...], TWOS)
    _usable(RI, r, TWOS)


def test_invertible_reads_outer_ref(backend):
    r = ri.new_ref(TWOS)
    g = ri.jit(ri.grad(lambda x: (ri.invertible(lambda x: x * r[...])(x) ** 2).sum()))
    np.testing.assert_allclose(g(X), 2 * X * 4, rtol=1e-6)
    r[...] = np.full(3, 5.0, np.float32)  # jit passes the ref's current value
    np.testing.assert_allclose(g(X), 2 * X * 25, rtol=1e-6)


# --- mask (no JAX counterpart: NumPy formulas) -------------------------------------------------


def test_mask_reads_outer_ref_at_each_call(backend):
    r = ri.new_ref(TWOS)
    masked = ri.mask(lambda x: rnp.cumsum(x) + r[0], ["(n,)"], "(n,)")
    xs = np.array([1, 2, 3, 99, 99], np.float32)
    np.testing.assert_allclose(np.asarray(masked([xs], dict(n=3)))[:3], np.cumsum(xs[:3]) + 2)
    r[...] = np.full(3, 7.0, np.float32)
    np.testing.assert_allclose(np.asarray(masked([xs], dict(n=2)))[:2], np.cumsum(xs[:2]) + 7)
    assert masked.jitted.trace_count == 1


def test_mask_writing_outer_ref_is_an_error(backend):
    r = ri.new_ref(TWOS)

    def f(x):
        r[...] = x[:3]
        return rnp.cumsum(x)

    with pytest.raises(NotImplementedError, match=r"mask\(f\): the function writes"):
        ri.mask(f, ["(n,)"], "(n,)")([np.arange(5.0, dtype=np.float32)], dict(n=3))
    np.testing.assert_array_equal(r[...], TWOS)
    _usable(RI, r, TWOS)


# --- tracing without running: eval_shape, make_program, saved_residuals --------------------------


def _writes(r):
    def f(x):
        r[...] = r[...] + x
        return x * 2.0

    return f


def test_eval_shape_does_not_run_writes(backend):
    def program(ns, r):
        s = ns.eval_shape(_writes(r), X)
        t = ns.eval_shape(lambda x: x * r[...], X)
        return np.zeros(s.shape, s.dtype), np.zeros(t.shape, t.dtype)

    _both(program)


def test_make_program_does_not_run_writes(backend):
    r = ri.new_ref(TWOS)
    text = str(ri.make_program(_writes(r))(X))
    assert "<-" in text  # the write is in the program
    jr = jax.new_ref(TWOS)
    assert "<-" in str(jax.make_jaxpr(_writes(jr))(X))
    np.testing.assert_array_equal(r[...], TWOS)
    np.testing.assert_array_equal(jr[...], TWOS)
    _usable(RI, r, TWOS)


def test_saved_residuals_does_not_run_writes(backend):
    def program(ns, r):
        def f(x):
            r[...] = ns.np.ones(3, np.float32)
            return (ns.np.sin(x) * r[...]).sum()

        found = ns.saved_residuals(f, X)
        return np.zeros(len(found))

    ours = _both(program)
    assert len(ours) == 2


# --- jit(...).lower(...).compile() -----------------------------------------------------------


def test_compiled_call_threads_closed_over_and_argument_refs(backend):
    def program(ns, r):
        def f(x):
            r[...] = r[...] + x
            return x * 2 + r[...]

        compiled = ns.jit(f).lower(X).compile()
        r[...] = ns.np.full(3, 5.0, np.float32)  # the call reads the current value
        first = compiled(X)
        second = compiled(X)
        q = ns.new_ref(ns.np.ones(3, np.float32))

        def g(q, x):
            q[...] = q[...] * x
            return x + 1

        third = ns.jit(g).lower(q, X).compile()(q, X)
        return first, second, third, q[...]

    _both(program)


# --- checkpoint under its other name; vmap collectives; while cond_fun -------------------------


def test_remat_alias_writes_outer_ref_under_jit(backend):
    _both(lambda ns, r: ns.jit(ns.remat(_writes(r)))(X))


def test_vmap_with_axis_name(backend):
    xs = np.arange(12.0, dtype=np.float32).reshape(4, 3)

    def reads(ns, r):
        return ns.vmap(lambda x: ns.lax.psum(x * r[...], "i"), axis_name="i")(xs)

    def writes(ns, r):
        def f(x):
            s = ns.lax.psum(x, "i")
            r[...] = s
            return s

        return ns.vmap(f, axis_name="i")(xs)

    _both(reads)
    ours = _both(writes, Exception)
    assert "set/swap operation with vmapped value" in str(ours)


@pytest.mark.parametrize("jit", [False, True])
def test_while_cond_writes_closed_over_ref(backend, jit):
    def program(ns, r):
        def cond(c):  # a fresh function per run: JAX caches cond traces by function
            r[...] = r[...] + 1.0
            return c < 3

        loop = lambda: ns.lax.while_loop(cond, lambda c: c + 1, 0)  # noqa: E731
        return ns.jit(loop)() if jit else loop()

    _both(program)


def test_scatter_apply_func_writing_outer_ref_is_an_error(backend):
    s = ri.new_ref(np.float32(1.0))

    def func(x):
        s[...] = x
        return x + 1

    dnums = lax.ScatterDimensionNumbers((), (0,), (0,))
    out = lax.scatter_apply(X, np.array([[1]]), lambda x: x + 1, dnums, update_shape=(1,))
    np.testing.assert_allclose(out, X + [0, 1, 0])
    with pytest.raises(NotImplementedError, match="scatter_apply: func writes"):
        lax.scatter_apply(X, np.array([[1]]), func, dnums, update_shape=(1,))
    np.testing.assert_array_equal(s[...], np.float32(1.0))


# --- the differentiation APIs with a write of a non-differentiated value --------------------


def _bumps(ns, r):
    def f(x):
        r[...] = r[...] + 1.0
        return (ns.np.sin(x) * r[...]).sum()

    return f


@pytest.mark.parametrize("api", ["vjp", "linearize", "jacrev", "jit_vjp", "jit_linearize"])
def test_reverse_and_linearize_write_once(backend, api):
    def program(ns, r):
        f = _bumps(ns, r)
        if api == "vjp":
            return ns.vjp(f, X)[1](np.float32(1.0))
        if api == "jit_vjp":
            return ns.jit(lambda x: ns.vjp(f, x)[1](np.float32(1.0)))(X)
        if api == "linearize":
            return ns.linearize(f, X)[1](X)
        if api == "jit_linearize":
            return ns.jit(lambda x: ns.linearize(f, x)[1](x))(X)
        return ns.jacrev(f)(X)

    _both(program)


@pytest.mark.parametrize("api", ["jacfwd", "hessian"])
def test_jacfwd_write_is_the_vmap_error_before_any_write(backend, api):
    # JAX's jacfwd runs the function once, under vmap; refimpl's first
    # (output-type) run refuses the write with the same error.
    ours = _both(lambda ns, r: getattr(ns, api)(_bumps(ns, r))(X), Exception)
    assert "set/swap operation with vmapped value" in str(ours)


def test_jacfwd_reads_outer_ref(backend):
    _both(lambda ns, r: ns.jacfwd(lambda x: ns.np.sin(x) * r[...])(X))


@pytest.mark.parametrize("pmap_backend", ["ref", "pjrt"])
@pytest.mark.parametrize("access", ["read", "write"])
def test_nested_pmap_touching_a_ref_of_the_outer_body(pmap_backend, access):
    # JAX 0.10.2 has no nested pmap; the oracle is the reference backend's pmap
    # error, which the pjrt pmap (that runs the inner pmap inline as replicas of
    # the outer program, at the outer body's trace depth) must give as well.
    old = ri.config.ref_num_devices
    ri.config.update("ref_num_devices", 4)
    try:

        def outer(x):
            r = ri.new_ref(rnp.zeros((), np.float32))

            def inner(y):
                if access == "read":
                    return y * r[...]
                r[...] = y.sum()
                return y

            return ri.pmap(inner, "j", backend=pmap_backend)(x), ri.freeze(r)

        xs = np.ones((2, 2, 3), np.float32)
        with pytest.raises(NotImplementedError, match=r"pmap\(inner\).*Ref\{f32\[\]\}"):
            ri.pmap(outer, "i", backend=pmap_backend)(xs)

        def inner_own(y):  # a ref the inner body makes itself is its own
            q = ri.new_ref(y)
            q[...] = q[...] * 3 + ri.lax.axis_index("j")
            return ri.freeze(q)

        got = ri.pmap(lambda x: ri.pmap(inner_own, "j", backend=pmap_backend)(x), "i",
                      backend=pmap_backend)(xs)  # fmt: skip
        want = xs * 3 + np.arange(2, dtype=np.float32)[None, :, None]
        np.testing.assert_array_equal(np.asarray(got), want)
    finally:
        ri.config.update("ref_num_devices", old)
