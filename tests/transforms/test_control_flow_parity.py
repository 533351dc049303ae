"""Loops behave as in JAX 0.10.2 where JAX's own control-flow tests found them
different (issue 29): a scan carry whose weak type the body changes along a
tuple, a scan carry retyped under a nested loop that closes over it, and
reverse mode through a while loop whose differentiated carry the body returns
unchanged. Each case runs on both backends and is compared with JAX."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from jax import lax as jlax

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import lax
from tests.helpers.parity import assert_same_as_jax


def _same(got, want):
    got_leaves, want_leaves = ri.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves, strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)
        assert np.asarray(g).dtype == np.asarray(w).dtype
        assert getattr(g, "weak_type", False) == getattr(w, "weak_type", False)


def _shifted_carry(lax_, jnp_, v):
    # the carry shifts left each step: the strong last component reaches a
    # component that started weak, and a weak constant enters at the end
    def f(carry_init):
        def body(c, _):
            return (c[1], c[2], c[3], 0.0), None

        return lax_.scan(body, (0.0, 1.0, 2.0, carry_init), jnp_.zeros(2))

    return f(v)


def test_scan_carry_whose_weak_type_moves_along_a_tuple(backend):
    init = np.array([3.0, 4.0, 5.0], np.float32)
    want = jax.vmap(lambda v: _shifted_carry(jlax, jjnp, v))(init)
    got = ri.vmap(lambda v: _shifted_carry(lax, rnp, v))(init)
    _same(got, want)
    jitted = ri.jit(lambda v: _shifted_carry(lax, rnp, v))(init[0])
    _same(jitted, jax.jit(lambda v: _shifted_carry(jlax, jjnp, v))(init[0]))


def _scan_of_fori(lax_, x):
    # the scan carry (weak 1.0) comes back strong from the fori_loop, whose
    # body closes over it: the scan body is retyped with a loop inside
    def body(c, xi):
        return lax_.fori_loop(xi, xi + 2.0, lambda i, c1: c1 * c, xi), None

    return lax_.scan(body, x, np.ones(2, np.float32))[0]


def test_scan_carry_retyped_around_a_loop_closing_over_it(backend):
    _same(_scan_of_fori(lax, 1.0), _scan_of_fori(jlax, 1.0))
    _, lin = ri.linearize(lambda x: _scan_of_fori(lax, x), 1.0)
    _, jlin = jax.linearize(lambda x: _scan_of_fori(jlax, x), 1.0)
    _same(lin(1.0), jlin(1.0))
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
        ri.grad(lambda x: _scan_of_fori(lax, x))(1.0)


def _fori_with_traced_bounds(lax_, x):
    return lax_.fori_loop(x, x + 2.0, lambda i, c: c, x)


@pytest.mark.parametrize("where", ["plain", "jit", "cond"])
def test_reverse_mode_through_a_carry_the_while_body_returns_unchanged(backend, where):
    def wrap(lax_, api, x):
        if where == "jit":
            return api.jit(lambda v: _fori_with_traced_bounds(lax_, v))(x)
        if where == "cond":
            return lax_.cond(True, lambda v: _fori_with_traced_bounds(lax_, v), lambda v: v, x)
        return _fori_with_traced_bounds(lax_, x)

    want = jax.grad(lambda x: wrap(jlax, jax, x))(1.0)
    _same(ri.grad(lambda x: wrap(lax, ri, x))(1.0), want)
    _, vjp = ri.vjp(lambda x: wrap(lax, ri, x), 1.0)
    _, jvjp = jax.vjp(lambda x: wrap(jlax, jax, x), 1.0)
    np.testing.assert_allclose(np.asarray(vjp(1.0)[0]), np.asarray(jvjp(1.0)[0]))


def test_reverse_mode_through_a_carry_the_while_body_changes_still_fails(backend):
    def f(lax_, x):
        return lax_.while_loop(lambda i: i < 5.0, lambda i: i + 1.0, x)

    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
        jax.grad(lambda x: f(jlax, x))(1.0)
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
        ri.grad(lambda x: f(lax, x))(1.0)


@pytest.mark.parametrize("n", [2, 3, 43])
def test_associative_scan_of_a_batched_fn_that_refuses_an_empty_batch(backend, n):
    # vmap(solve) of a zero-size batch fails in refimpl; JAX's scan of two
    # elements calls fn on empty slices, refimpl does not call it there
    import jax.scipy.linalg as jsl

    import refimpl.scipy.linalg as rsl

    ms = np.repeat(np.eye(2, dtype=np.float32)[None], n, axis=0)
    vs = np.ones((n, 2), np.float32)

    def combine(api, sl):
        def fn(a, b):
            (m1, v1), (m2, v2) = a, b
            return m1 + m2, sl.solve(m1, v2) + sl.solve(m2, v1)

        return api.vmap(fn)

    want = jlax.associative_scan(combine(jax, jsl), (ms, vs))
    _same(lax.associative_scan(combine(ri, rsl), (ms, vs)), want)


@pytest.mark.parametrize(
    "values",
    [[-np.inf, 0.0, 1.0], [0.0, -np.inf, 1.0], [-np.inf, -np.inf, 2.0], [np.inf, 0.0], [1.0, 2.0]],
)
def test_cumlogsumexp_derivative_of_a_minus_infinity_input_is_zero_weighted(backend, values):
    x = np.array(values, np.float32)

    def loss(lax_, v):
        return lax_.cumlogsumexp(v, axis=0).sum()

    _same(ri.grad(lambda v: loss(lax, v))(x), jax.grad(lambda v: loss(jlax, v))(x))
    t = np.ones_like(x)
    got = ri.jvp(lambda v: lax.cumlogsumexp(v, reverse=True), (x,), (t,))
    want = jax.jvp(lambda v: jlax.cumlogsumexp(v, reverse=True), (x,), (t,))
    _same(got, want)


def _describe(value):
    """Type and value of each leaf: a Python scalar stays one (JAX's disable_jit loops)."""
    out = []
    for leaf in jax.tree_util.tree_leaves(value):
        if isinstance(leaf, (bool, int, float)):
            out.append((type(leaf).__name__, leaf))
        else:
            a = np.asarray(leaf)
            out.append((str(a.dtype), a.shape, a.tolist(), bool(getattr(leaf, "weak_type", False))))
    return out


_DISABLED_PROGRAMS = {
    "fori": lambda lax_, np_: lax_.fori_loop(0, 3, lambda i, c: c + i, 1.0),
    "fori_empty": lambda lax_, np_: lax_.fori_loop(0, 0, lambda i, c: c + i, 1.0),
    "cond_mismatched_branches": lambda lax_, np_: lax_.cond(
        np_.array(True), lambda x: (x, 1), lambda x: (x, 2.0), 3.0
    ),
    "switch_clamped": lambda lax_, np_: lax_.switch(5, [lambda x: x + 1, lambda x: x * 1.0], 1),
    "scan": lambda lax_, np_: lax_.scan(
        lambda c, x: (c + x, (c, 2.0)), 0.0, np_.arange(3.0), reverse=True
    ),
    "while": lambda lax_, np_: lax_.while_loop(
        lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2.0), (0, 1)
    ),
    "vmap_cond": lambda lax_, np_: (jax if lax_ is jlax else ri).vmap(
        lambda t: lax_.cond(t > 0, lambda x: 0, lambda x: 1, 0)
    )(np_.array([1, -1])),
    "vmap_while": lambda lax_, np_: (jax if lax_ is jlax else ri).vmap(
        lambda y: lax_.while_loop(lambda x: x < 10.0, lambda x: x + 1.0, y)
    )(np_.array([3.0, 4.0])),
}


@pytest.mark.parametrize("name", sorted(_DISABLED_PROGRAMS))
def test_control_flow_under_disable_jit_runs_in_python_as_jax(backend, name):
    program = _DISABLED_PROGRAMS[name]
    with jax.disable_jit():
        want = program(jlax, jjnp)
    with ri.disable_jit():
        got = program(lax, rnp)
    assert _describe(got) == _describe(want)


def test_zero_length_scan_under_disable_jit_is_jaxs_value_error(backend):
    def body(c, x):
        return c + x, x

    with jax.disable_jit(), pytest.raises(ValueError, match="zero-length scan"):
        jlax.scan(body, 0.0, np.zeros(0, np.float32))
    with ri.disable_jit(), pytest.raises(ValueError, match="zero-length scan"):
        lax.scan(body, 0.0, np.zeros(0, np.float32))
    # with jit enabled both run it
    _same(
        lax.scan(body, 0.0, np.zeros(0, np.float32)), jlax.scan(body, 0.0, np.zeros(0, np.float32))
    )


def test_scan_returns_the_container_its_body_returns(backend):
    def body(c, x):
        return [c + x, x * 2]

    xs = np.arange(3, dtype=np.int32)
    want = jlax.scan(body, 0, xs)
    for got in (lax.scan(body, 0, xs), ri.jit(lambda v: lax.scan(body, 0, v))(xs)):
        assert type(got) is type(want) is list
        _same(got, want)
    assert type(lax.scan(lambda c, x: (c + x, x), 0, xs)) is tuple


_BATCHED_PREDICATE = {
    # (branches returning (strong, weak), operands' in_axes)
    "strong_operand_or_weak_constant": (lambda x: x, lambda x: 2.0, 0),
    "weak_constant_or_strong_operand": (lambda x: 2.0, lambda x: x, 0),
    "both_weak": (lambda x: x, lambda x: 2.0, None),
    "strong_constant_or_weak_constant": (lambda x: np.float32(1.0), lambda x: 2.0, 0),
}


@pytest.mark.parametrize("name", sorted(_BATCHED_PREDICATE))
def test_vmap_of_cond_with_a_batched_predicate_is_weak_only_if_every_branch_is(backend, name):
    true_fun, false_fun, x_axis = _BATCHED_PREDICATE[name]
    preds = np.array([True, False])
    x = np.array([3.0, 4.0], np.float32) if x_axis == 0 else 1.0

    def run(api, lax_):
        return api.vmap(lambda p, v: lax_.cond(p, true_fun, false_fun, v), (0, x_axis))(preds, x)

    want = run(jax, jlax)
    _same(run(ri, lax), want)
    _same(ri.jit(lambda p: run(ri, lax))(preds), want)


def test_associative_scan_of_a_scalar_is_jaxs_value_error(backend):
    with pytest.raises(ValueError, match="out of bounds for array of dimension 0"):
        jlax.associative_scan(jjnp.add, np.float32(3.0))
    with pytest.raises(ValueError, match="out of bounds for array of dimension 0"):
        lax.associative_scan(rnp.add, np.float32(3.0))


def _guarded_sqrt_grads(lax_, jnp_, jax_, x):
    eps = 1e-3

    def closed(v):  # the guarded value reaches the branch as a closed-over constant
        return lax_.cond(v < eps, lambda _: eps, lambda _: jnp_.sqrt(v), ())

    def operand(v):
        return lax_.cond(v > 0.0, jnp_.sqrt, lambda y: y * 0.0, v)

    def switched(v):
        i = jnp_.clip(v, 0, 2).astype(jnp_.int32)
        return lax_.switch(i, [lambda y: y * 0.0, jnp_.sqrt, jnp_.log], v)

    def batched_grad(f):
        return jax_.grad(lambda v: jax_.vmap(f)(v).sum())(x)

    return (
        batched_grad(closed),
        batched_grad(operand),
        batched_grad(switched),
        jax_.jit(lambda v: batched_grad(operand))(x),
    )


def test_vmap_of_cond_sends_no_nan_cotangent_through_a_branch_not_taken(backend):
    # with a batched index every branch runs; a member that does not take
    # sqrt's branch at 0 must not get 0 * inf = NaN from it (JAX's
    # testCondGradVmapNan: JAX stops the gradient of the other members' operands)
    x = np.array([0.0, 0.0, 1.0, 4.0, 2.5], np.float32)
    got = _guarded_sqrt_grads(lax, rnp, ri, x)
    want = _guarded_sqrt_grads(jlax, jjnp, jax, x)
    _same(got, want)
    assert not np.isnan(np.asarray(got[0])).any()


# A Python-float scan init the body returns strong: JAX's scan takes it weak
# and returns it strong (no promotion: the types differ in weak type only),
# and the init's cotangent is what its transposed body makes of it -- strong
# when the body uses the carry only promoted (c * x), weak when a weak value
# made from it reaches the cotangent (sin(c) * x, or c itself as a y).
_WEAK_INIT_BODIES = {
    "c*x": lambda np_, lax_: lambda c, x: (c * x, None),
    "x*c": lambda np_, lax_: lambda c, x: (x * c, None),
    "c+x": lambda np_, lax_: lambda c, x: (c + x, None),
    "c*x*c": lambda np_, lax_: lambda c, x: (c * x * c, None),
    "sin(c)*x": lambda np_, lax_: lambda c, x: (np_.sin(c) * x, None),
    "c*2+x": lambda np_, lax_: lambda c, x: (c * 2.0 + x, None),
    "c*c*x": lambda np_, lax_: lambda c, x: (c * c * x, None),
    "c as y": lambda np_, lax_: lambda c, x: (c * x, c),
    "c*x as y": lambda np_, lax_: lambda c, x: (c * x, c * x),
    "tuple": lambda np_, lax_: lambda c, x: ((c[0] * x, c[1] * 2.0), None),
    "inner scan": lambda np_, lax_: (
        lambda c, x: (
            lax_.scan(lambda d, y: (d * y, None), c, x * np_.ones(2, np_.float32))[0] * x,
            None,
        )
    ),
    "inner scan of sin": lambda np_, lax_: (
        lambda c, x: (
            lax_.scan(lambda d, y: (np_.sin(d) * y, None), c, x * np_.ones(2, np_.float32))[0] * x,
            None,
        )
    ),
    "fori": lambda np_, lax_: lambda c, x: (lax_.fori_loop(0, 2, lambda i, d: d * x, c), None),
    "cond": lambda np_, lax_: (
        lambda c, x: (
            lax_.cond(x > 1, lambda d: d * x, lambda d: d * 2.0, c),
            None,
        )
    ),
}


def _weak_init_derivatives(api, np_, lax_, name):
    body = _WEAK_INIT_BODIES[name](np_, lax_)
    xs = np_.arange(1.0, 4.0, dtype=np_.float32)
    init = (1.0, 1.0) if name == "tuple" else 1.0

    def carry(c):
        return lax_.scan(body, c, xs)[0]

    def total(c):
        out, ys = lax_.scan(body, c, xs)
        return sum(api.tree_util.tree_leaves(out)) + (0.0 if ys is None else ys.sum())

    strong_one = api.tree_util.tree_map(lambda _: np_.float32(1.0), init)
    return {
        "primal": carry(init),
        "grad": api.grad(total)(init),
        "jit grad": api.jit(api.grad(total))(init),
        "vjp of a strong cotangent": api.vjp(carry, init)[1](strong_one),
        "jvp": api.jvp(carry, (init,), (init,)),
        "linearize": api.linearize(carry, init)[1](init),
        # checkpoint's transpose keeps the cotangent the scan's gives
        "checkpoint grad": api.grad(
            api.checkpoint(lambda c: sum(api.tree_util.tree_leaves(carry(c))))
        )(init),
        "checkpoint vjp": api.vjp(api.checkpoint(carry), init)[1](strong_one),
    }


@pytest.mark.parametrize("name", sorted(_WEAK_INIT_BODIES))
def test_scan_of_a_weak_init_differentiates_to_jaxs_weak_types(backend, name):
    got = _weak_init_derivatives(ri, rnp, lax, name)
    want = _weak_init_derivatives(jax, jjnp, jlax, name)
    for mode in want:
        assert_same_as_jax(got[mode], want[mode], atol=1e-6)


# The same weak init returned by the body as a y too: JAX's cotangent for it
# starts from the ys' cotangent (its transposed body adds the other
# contributions to it), so it is weak as the ys' cotangent is, and, with no
# ys' cotangent (the carry alone differentiated), as the other uses make it.
_CARRY_AS_Y_BODIES = {
    "c*x, c": lambda np_, lax_: lambda c, x: (c * x, c),
    "c+x, c": lambda np_, lax_: lambda c, x: (c + x, c),
    "sin(c)*x, c": lambda np_, lax_: lambda c, x: (np_.sin(c) * x, c),
    "c*x+sin(c), c": lambda np_, lax_: lambda c, x: (c * x + np_.sin(c), c),
    "c*x, (c, x)": lambda np_, lax_: lambda c, x: (c * x, (c, x)),
    "inner scan, c": lambda np_, lax_: (
        lambda c, x: (
            lax_.scan(lambda d, y: (d * y, None), c, x * np_.ones(2, np_.float32))[0],
            c,
        )
    ),
    "fori, c": lambda np_, lax_: lambda c, x: (lax_.fori_loop(0, 2, lambda i, d: d * x, c), c),
}


def _carry_as_y_derivatives(api, np_, lax_, name):
    body = _CARRY_AS_Y_BODIES[name](np_, lax_)
    xs = np_.arange(1.0, 4.0, dtype=np_.float32)

    def both(c):
        return lax_.scan(body, c, xs)

    def carry(c):
        return both(c)[0]

    ys = both(1.0)[1]
    makers = {
        "strong": lambda shape: np.ones(shape, np.float32),
        "weak": lambda shape: lax_.broadcast(1.0, shape),
        "zeros": lambda shape: np.zeros(shape, np.float32),
    }
    pullback = api.vjp(both, 1.0)[1]
    out = {}
    for kc, kys in itertools.product(makers, makers):
        ys_ct = api.tree_util.tree_map(lambda y, m=makers[kys]: m(np.shape(y)), ys)
        out[f"vjp: carry ct {kc}, ys ct {kys}"] = pullback((makers[kc](()), ys_ct))
    one = np.float32(1.0)
    out["vjp of the carry"] = api.vjp(carry, 1.0)[1](one)
    out["vjp of the jitted carry"] = api.vjp(api.jit(carry), 1.0)[1](one)
    out["grad"] = api.grad(carry)(1.0)
    out["jit grad"] = api.jit(api.grad(carry))(1.0)
    out["grad jit"] = api.grad(api.jit(carry))(1.0)
    out["jvp"] = api.jvp(both, (1.0,), (one,))
    out["linearize"] = api.linearize(both, 1.0)[1](one)
    out["strong init"] = api.vjp(carry, one)[1](one)
    out["checkpoint grad"] = api.grad(api.checkpoint(carry))(1.0)
    weak_ys = api.tree_util.tree_map(lambda y: makers["weak"](np.shape(y)), ys)
    out["checkpoint vjp"] = api.vjp(api.checkpoint(both), 1.0)[1]((one, weak_ys))
    return out


@pytest.mark.parametrize("name", sorted(_CARRY_AS_Y_BODIES))
def test_scan_of_a_weak_init_returned_as_a_y_differentiates_as_jax(backend, name):
    got = _carry_as_y_derivatives(ri, rnp, lax, name)
    want = _carry_as_y_derivatives(jax, jjnp, jlax, name)
    for mode in want:
        try:
            assert_same_as_jax(got[mode], want[mode], atol=1e-6)
        except AssertionError as err:
            raise AssertionError(f"{name}: {mode}") from err
