"""The second sweep of JAX's lax_control_flow_test.py programs (issue 29):
the classes where refimpl differed from JAX 0.10.2, each run on both
backends and compared with JAX leaf by leaf (shape, dtype, weak type,
values) or by exception class."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from jax import lax as jlax

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import lax
from tests.helpers.parity import assert_modes_same_as_jax

# --- custom_linear_solve keeps b's weak types


def _linear_solve_modes(jx, jnp_, lax_):
    """custom_linear_solve of a weak b in every mode; "strong_solve" is a
    solver that returns a strong value (eagerly the solver's own type, under
    jit b's)."""

    def solve(b, strong=False):
        div = jnp_.float32(2) if strong else 2
        return lax_.custom_linear_solve(lambda x: 2 * x, b, lambda mv, y: y / div)

    def symmetric(b):
        return lax_.custom_linear_solve(lambda x: 2 * x, b, lambda mv, y: y / 2, symmetric=True)

    return {
        "eager": solve(3.0),
        "symmetric": symmetric(3.0),
        "transpose_solve": lax_.custom_linear_solve(
            lambda x: 2 * x, 3.0, lambda mv, y: y / 2, lambda vm, y: y / 2
        ),
        "int": lax_.custom_linear_solve(lambda x: 2 * x, 3, lambda mv, y: y // 2),
        "pytree": lax_.custom_linear_solve(
            lambda x: (2 * x[0], x[1]), (3.0, jnp_.float32(1)), lambda mv, y: (y[0] / 2, y[1])
        ),
        "strong_solve": solve(3.0, strong=True),
        "strong_solve_jit": jx.jit(lambda b: solve(b, strong=True))(3.0),
        "jit": jx.jit(solve)(3.0),
        "jvp": jx.jvp(solve, (3.0,), (1.0,)),
        "grad": jx.grad(symmetric)(3.0),
        "vmap": jx.vmap(solve)(jnp_.arange(3.0) * 1.0),
        "strong_b": solve(jnp_.float32(3.0)),
        # an aux leaf the solver returns as a constant is an array eagerly
        "aux_constant": lax_.custom_linear_solve(
            lambda x: 2 * x, 3.0, lambda mv, y: (y / 2, jnp_.int32(3)), has_aux=True
        ),
        # tangents and cotangents are bound as they are (a strong one stays strong)
        "jvp_strong_tangent": jx.jvp(solve, (3.0,), (jnp_.float32(1.0),)),
        "vjp_strong_cotangent": jx.vjp(symmetric, 3.0)[1](jnp_.float32(1.0)),
        "linearize_strong_tangent": jx.linearize(solve, 3.0)[1](jnp_.float32(1.0)),
        # eagerly under vmap the batched solver runs on the operands given
        "vmap_batched_matvec": jx.vmap(
            lambda s: lax_.custom_linear_solve(
                lambda x: s * x, 3.0, lambda mv, y: y / s, symmetric=True
            )
        )(jnp_.array([1.0, 2.0])),
    }


def test_custom_linear_solve_of_a_weak_b_is_weak_as_jax(backend):
    want = _linear_solve_modes(jax, jjnp, jlax)
    got = _linear_solve_modes(ri, rnp, lax)
    assert_modes_same_as_jax(got, want)


# --- a Python int index or predicate out of int32's range


def _big_int_modes(jx, lax_, v):
    branches = [lambda: 1.0, lambda: 2.0, lambda: 3.0]
    with jx.disable_jit():
        python_switch = lax_.switch(v, branches)
    return python_switch, {
        "switch": lax_.switch(v, branches),
        "switch_jit": jx.jit(lambda: lax_.switch(v, branches))(),
        "cond": lax_.cond(v, lambda: 1.0, lambda: 2.0),
        "cond_jit": jx.jit(lambda: lax_.cond(v, lambda: 1.0, lambda: 2.0))(),
    }


@pytest.mark.parametrize("v", [2**40 + 1, -(2**40), 2**31, 2**32 + 2, 2**63 - 1, -(2**63)])
def test_switch_and_cond_of_a_big_python_int_as_jax(backend, v):
    # JAX converts a switch index to int32 as NumPy does (2**40 + 1 wraps to
    # 1, then the clamp) and takes a cond predicate as pred != 0 on the int
    want_python, want = _big_int_modes(jax, jlax, v)
    got_python, got = _big_int_modes(ri, lax, v)
    assert_modes_same_as_jax(got, want)
    # under disable_jit the chosen branch runs in Python: its own float
    assert type(got_python) is type(want_python) and got_python == want_python


# --- cumlogsumexp of complex numbers


def _complex_cumlogsumexp_modes(jx, lax_, x):
    f = lax_.cumlogsumexp
    return {
        "eager": f(x),
        "reverse": f(x, reverse=True),
        "axis1": f(x.reshape(2, -1), axis=1),
        "jit": jx.jit(lambda v: f(v, reverse=True))(x),
        "vmap": jx.vmap(f)(x.reshape(2, -1)),
        "jvp": jx.jvp(f, (x,), (x,)),
        "jacfwd": jx.jacfwd(f, holomorphic=True)(x[:4]),
        "infinities": f(np.array([-np.inf, 1 + 5j, np.inf, 2j], np.complex64)),
    }


def test_cumlogsumexp_of_complex_numbers_as_jax(backend):
    # JAX 0.10.2 takes any number: complex folds its logaddexp from
    # reduce_window's init -inf (the imaginary part wrapped into [-pi, pi))
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(8) + 4j * rng.standard_normal(8)).astype(np.complex64)
    want = _complex_cumlogsumexp_modes(jax, jlax, x)
    got = _complex_cumlogsumexp_modes(ri, lax, x)
    assert_modes_same_as_jax(got, want, rtol=2e-6, atol=2e-6)


# --- vmap of a loop whose body's cond selects a strong and a weak value


def _loop_of_cond_modes(jx, lax_):
    xs = np.arange(1.0, 4.0, dtype=np.float32)
    preds = np.array([0.0, 3.0], np.float32)

    def step(p, c, x):
        # batched p: a select of a strong (c + x) and a weak (c * 2.0) value
        return lax_.cond(p > x, lambda c: c + x, lambda c: c * 2.0, c)

    def scan(p, init=1.0):
        return lax_.scan(lambda c, x: (step(p, c, x), c), init, xs)

    def while_(p):
        body = lambda c: (c[0] + 1, step(p, c[1], xs[0]))  # noqa: E731
        return lax_.while_loop(lambda c: c[0] < 3, body, (0, 1.0))

    def fori(p, n=3):
        return lax_.fori_loop(0, n, lambda i, c: step(p, c, xs[0] * i), 1.0)

    return {
        "scan": jx.vmap(scan)(preds),
        "scan_jit": jx.jit(jx.vmap(scan))(preds),
        "scan_vmap_of_jvp": jx.vmap(lambda p: jx.jvp(lambda s: scan(p, s), (1.0,), (1.0,)))(preds),
        "scan_jvp_of_vmap": jx.jvp(lambda s: jx.vmap(lambda p: scan(p, s))(preds), (1.0,), (1.0,)),
        "while": jx.vmap(while_)(preds),
        "while_jit": jx.jit(jx.vmap(while_))(preds),
        "fori": jx.vmap(fori)(preds),
        "fori_traced_bounds": jx.vmap(fori)(preds, np.array([2, 3])),
    }


def test_vmap_of_a_loop_whose_carry_a_batched_cond_makes_strong_as_jax(backend):
    # JAX's scan and while run a batched body that returns strong a carry it
    # takes weak, the results typed as the body returns them (refimpl: C6)
    want = _loop_of_cond_modes(jax, jlax)
    got = _loop_of_cond_modes(ri, lax)
    assert_modes_same_as_jax(got, want)
