"""A while loop whose body calls a custom_vjp function, as JAX 0.10.2:
linearize succeeds (the tangent loop is recorded, not run), applying the
linear function is the custom_vjp's forward-mode TypeError, and reverse mode
is the while's own ValueError (mutable_array_test's
remat_while_loop_residuals program; refimpl raised the TypeError at
linearize, so grad and vjp of such a loop were TypeErrors too). Each program
runs on JAX and on refimpl, on both backends."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp


def _loops(lib, jnp_):
    @lib.custom_vjp
    def sin(x):
        return jnp_.sin(x)

    sin.defvjp(lambda x: (jnp_.sin(x), x), lambda x, g: (g * jnp_.cos(x),))

    def one(x):
        return lib.lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, sin(c[1])), (0, x))[1]

    def three(x):  # an int carry, the custom_vjp carry and a carry with a forward mode
        body = lambda c: (c[0] + 1, sin(c[1]), c[2] * 2.0)  # noqa: E731
        return lib.lax.while_loop(lambda c: c[0] < 5, body, (0, x, x))

    return one, three


PROGRAMS = {
    "linearize": lambda lib, one, three: lib.linearize(one, 5.0)[0],
    "linearize_vector": lambda lib, one, three: lib.linearize(one, np.ones(3, np.float32))[0],
    "linearize_three_carries": lambda lib, one, three: lib.linearize(three, 5.0)[0],
    "linearize_jit_remat": lambda lib, one, three: lib.linearize(lib.jit(lib.remat(one)), 5.0)[0],
    "apply": lambda lib, one, three: lib.linearize(one, 5.0)[1](1.0),
    "apply_three_carries": lambda lib, one, three: lib.linearize(three, 5.0)[1](1.0),
    "apply_under_jit": lambda lib, one, three: lib.jit(lib.linearize(one, 5.0)[1])(1.0),
    "apply_under_vmap": lambda lib, one, three: lib.vmap(lib.linearize(one, 5.0)[1])(
        np.ones(2, np.float32)
    ),
    "apply_remat": lambda lib, one, three: lib.linearize(lib.remat(one), 5.0)[1](1.0),
    "transpose": lambda lib, one, three: lib.linear_transpose(lib.linearize(one, 5.0)[1], 1.0)(1.0),
    "grad": lambda lib, one, three: lib.grad(one)(5.0),
    "grad_of_jit": lambda lib, one, three: lib.grad(lib.jit(one))(5.0),
    "vjp_primal": lambda lib, one, three: lib.vjp(one, 5.0)[0],
    "jacrev": lambda lib, one, three: lib.jacrev(one)(5.0),
    "jacfwd": lambda lib, one, three: lib.jacfwd(one)(5.0),
    "jvp": lambda lib, one, three: lib.jvp(one, (5.0,), (1.0,)),
}


def _outcome(lib, jnp_, name):
    one, three = _loops(lib, jnp_)
    try:
        out = PROGRAMS[name](lib, one, three)
    except Exception as e:  # noqa: BLE001 - the outcome is what is compared
        return "raise", type(e)
    return "ok", [np.asarray(leaf) for leaf in lib.tree_util.tree_leaves(out)]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_while_calling_a_custom_vjp_linearizes_as_jax(backend, name):
    want = _outcome(jax, jjnp, name)
    got = _outcome(ri, rnp, name)
    assert got[0] == want[0], (got, want)
    if want[0] == "raise":
        assert got[1] is want[1]
        return
    for g, w in zip(got[1], want[1], strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_the_ref_program_of_mutable_array_test(backend):
    # remat_while_loop_residuals: a custom_vjp freezing a new ref, in a while,
    # under jit(remat): linearize does not crash
    def run(lib):
        @lib.custom_vjp
        def ra2a(x):
            return lib.freeze(lib.new_ref(x))

        ra2a.defvjp(lambda x: (ra2a(x), ()), lambda res, g: (ra2a(g),))

        @lib.jit
        @lib.remat
        def f(x):
            body = lambda c: (c[0] + 1, ra2a(c[1]))  # noqa: E731
            return lib.lax.while_loop(lambda c: c[0] < 5, body, (0, x))[1]

        return np.asarray(lib.linearize(f, 5.0)[0])

    assert run(ri) == run(jax)
