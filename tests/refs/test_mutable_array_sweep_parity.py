"""JAX 0.10.2's own mutable_array_test.py programs (refs in jit, scan, cond,
vmap, grad, remat, custom_vjp; vjp ``with_refs``; empty/free refs; the
alias and escape errors), run on JAX (the oracle) and on refimpl, on both
backends: values, dtypes, shapes and error classes. Weak types are not
compared: a ref is strongly typed in refimpl (docs/semantics.md, section 5).
``None`` in a ref's index is judged by NumPy (JAX 0.10.2 does not implement it)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp

LIBS = {"jax": (jax, jnp), "ri": (ri, rnp)}


def _outcome(fn):
    try:
        return "ok", [np.asarray(v) for v in ri.tree.leaves(fn())]
    except Exception as e:  # noqa: BLE001 - the outcome is what is compared
        return "raise", type(e).__name__


def _same(program):
    want = _outcome(lambda: program(*LIBS["jax"]))
    got = _outcome(lambda: program(*LIBS["ri"]))
    assert got[0] == want[0], (got, want)
    if want[0] == "raise":
        assert got[1] == want[1], (got, want)
        return
    assert len(got[1]) == len(want[1]), (got, want)
    for g, w in zip(got[1], want[1], strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape, (g, w)
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=1e-6)


def _stash(lib):
    @lib.custom_vjp
    def stash(grads_ref, x):
        return x

    def bwd(grads_ref, g):
        grads_ref[...] = g
        return None, g

    stash.defvjp(lambda grads_ref, x: (x, grads_ref), bwd)
    return stash


def _closed_over_nested(lib, np_):
    x = lib.new_ref(np_.zeros(3))

    @lib.jit
    def f(y_ref, z):
        x[...] += 1.0
        x[1] += 5
        y_ref[2] += 7
        return z + 9

    y = lib.new_ref(np.zeros(3))
    return [lib.jit(f)(y, 1), x[...], y[...]]


def _scan_scanned_ref(lib, np_):
    def body(_, index_x):
        index, x = index_x
        x[...] += index
        return (), x[...]

    x = lib.new_ref(np.arange(5))
    return [lib.jit(lambda: lib.lax.scan(body, (), (np.arange(5), x)))()[1], x[...]]


def _stats_plumbing_scan_remat(lib, np_):
    stash = _stash(lib)

    def primal(grads_ref, x):
        def body(x, _):
            return np_.sin(stash(grads_ref, np_.sin(x))), ()

        x, () = lib.lax.scan(lib.remat(body), x, None, length=1)
        return x

    grads_ref = lib.new_ref(np_.float32(0.0))
    g = lib.grad(lib.jit(primal), argnums=1)(grads_ref, np_.float32(1.0))
    return [g, grads_ref[...]]


def _vjp_with_refs(lib, np_):
    def f(xs):
        (), z = lib.lax.scan(lambda _, xy: ((), xy[0] * xy[1]), (), (xs, np_.arange(5.0)))
        return z.sum()

    acc = lib.new_ref(np_.zeros(5))
    _, f_vjp = lib.vjp(f, np_.ones(5))
    f_vjp.with_refs(acc)(1.0)
    return acc[...]


def _vmap_with_vjp_refs(lib, np_):
    def grads(x):
        acc = lib.new_ref(np_.zeros_like(x))
        out, f_vjp = lib.vjp(lambda x: x + 1, x)
        f_vjp.with_refs(acc)(np_.ones_like(out))
        return lib.freeze(acc)

    r = lib.new_ref(np_.zeros((4,)))
    lib.vmap(lambda x: x.addupdate(1.0))(r)
    return [lib.vmap(grads)(np_.ones((4,))), r[...]]


def _free_ref_grad(lib, np_):
    @lib.jit
    def f(x):
        ref = lib.empty_ref(lib.ShapeDtypeStruct((), "float32"))
        ref[...] = 2.0 * x
        result = ref[...]
        lib.free_ref(ref)
        return result

    return [f(3.0), lib.jvp(f, (3.0,), (1.0,)), lib.grad(f)(3.0)]


def _custom_vjp_fwd_new_ref(lib, np_):
    @lib.custom_vjp
    def g(x, ref):
        return x

    g.defvjp(lambda x, _: (x, lib.new_ref(0)), lambda ref, g: g)
    return lib.vjp(lib.jit(g), 3.0, lib.new_ref(0.0))[0]


def _closure_and_argument_alias_cond(lib, np_):
    x = lib.new_ref(0.0)
    return lib.lax.cond(True, lambda y: x[...] + y[...], lambda y: x[...] + y[...], x)


def _vmap_closed_over_write(lib, np_):
    x = lib.new_ref(np_.zeros((), "int32"))

    def f(v):
        x[...] += v

    return lib.vmap(f)(np_.arange(3, dtype="int32"))


def _jvp_closed_over_write(lib, np_):
    ref = lib.new_ref(0.0)

    def f(x):
        ref[...] = x
        return x

    return lib.jvp(f, [1.0], [1.0])


PROGRAMS = {
    "closed_over_nested": _closed_over_nested,
    "scan_scanned_ref": _scan_scanned_ref,
    "stats_plumbing_scan_remat": _stats_plumbing_scan_remat,
    "vjp_with_refs": _vjp_with_refs,
    "vmap_with_vjp_refs": _vmap_with_vjp_refs,
    "free_ref_grad": _free_ref_grad,
    "custom_vjp_fwd_new_ref": _custom_vjp_fwd_new_ref,
    "closure_and_argument_alias_cond": _closure_and_argument_alias_cond,
    "vmap_closed_over_write": _vmap_closed_over_write,
    "jvp_closed_over_write": _jvp_closed_over_write,
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_mutable_array_test_program_agrees(backend, name):
    before = jax.config.jax_mutable_array_checks  # (True in JAX 0.10.2) restored for later tests
    jax.config.update("jax_mutable_array_checks", True)
    try:
        _same(PROGRAMS[name])
    finally:
        jax.config.update("jax_mutable_array_checks", before)


# --- None in a ref's index: NumPy's unit axis (JAX 0.10.2 does not implement it) ----------

INDEXES = [(None,), (None, 1), (1, None), (Ellipsis, None), (slice(None), None, 0)]


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("index", INDEXES, ids=str)
def test_none_in_a_ref_index_is_numpys_unit_axis(backend, index, jit):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)

    def read(r):
        return r[index]

    def write(r):
        r[index] = np.full(x[index].shape, -1.0, np.float32)
        return ri.freeze(r)

    for access in (read, write):
        ref = ri.new_ref(x)
        got = np.asarray((ri.jit(access) if jit else access)(ref))
        want = x.copy()
        if access is write:
            want[index] = -1.0
        else:
            want = want[index]
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)
