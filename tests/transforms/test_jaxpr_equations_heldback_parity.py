"""The equations of linearized and transposed jaxprs as JAX 0.10.2's, where
JAX's own tests count them: api_test.py's RematTest reads
``str(make_jaxpr(linearize(f, x)[1])(1.))`` and counts `` sin ``/`` cos ``/
`` dot_`` in it, to check which values a ``checkpoint`` policy saves and which
the backward pass recomputes, inside a scan, a cond or a jit call too;
lax_numpy_test's testPrecision/testPreferredElementType read ``dot_general``'s
``precision`` and ``preferred_element_type``; JaxprTest's
test_eqn_repr_with_no_lhs reads ``jax.debug.print``'s ``debug_print``
equation; and ``linearize(cos)``'s jaxpr negates last, as JAX's.

Each program runs on JAX live and on refimpl (ref and pjrt); the counts are
compared, not fixed numbers. The held-back run's tally is in
docs/parity_audit.md ("Lane JXEQ").
"""

from __future__ import annotations

import types
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax as jlax

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import lax as rlax

JAX = types.SimpleNamespace(api=jax, np=jnp, lax=jlax)
REF = types.SimpleNamespace(api=ri, np=rnp, lax=rlax)

save_cos = lambda prim, *_, **__: str(prim) == "cos"  # noqa: E731
save_sin = lambda prim, *_, **__: str(prim) == "sin"  # noqa: E731


def _counts(text: str, *subs: str) -> tuple[int, ...]:
    return tuple(text.count(s) for s in subs)


def _lin_counts(ns, f, x=4.0, subs=(" sin ", " cos ")):
    _, f_lin = ns.api.linearize(f, x)
    return _counts(str(ns.api.make_jaxpr(f_lin)(x)), *subs)


def _vjp_counts(ns, f, x, subs=(" sin ", " cos ", " dot_")):
    y, f_vjp = ns.api.vjp(f, x)
    return _counts(str(ns.api.make_jaxpr(f_vjp)(y)), *subs)


def _scan_apply(ns, f, x):
    return ns.lax.scan(lambda c, _: (f(c), None), x, None, length=1)[0]


def _cond_apply(ns, f, x):
    return ns.lax.cond(x.sum() > -np.inf, f, lambda c: c, x)


def _cond_apply_true(ns, f, x):
    return ns.lax.cond(True, f, lambda c: c, x)


def _funky_sin(ns, kind):
    """A custom_jvp sine whose rule computes (sin, cos) in a jit call, a scan
    or a cond (test_remat_of_{scan,cond}_funky_custom_jvp[2])."""

    @ns.api.custom_jvp
    def sin(x):
        return ns.np.sin(x)

    def sin_jvp(primals, tangents):
        (x,), (xdot,) = primals, tangents
        both = lambda xs: (ns.np.sin(xs[0]), ns.np.cos(xs[1]))  # noqa: E731
        if kind == "jit":
            y, c = ns.api.jit(lambda: (ns.np.sin(x), ns.np.cos(x)))()
        elif kind == "scan":
            y, c = _scan_apply(ns, both, (x, x))
        else:
            y, c = _cond_apply_true(ns, both, (x, x))
        return y, c * xdot

    sin.defjvp(sin_jvp)
    return sin


def _scan_of_sin(ns, policy):
    to_scan = lambda c, _: (ns.np.sin(c), ns.np.sin(c))  # noqa: E731
    f = lambda x: ns.lax.scan(to_scan, x, None, length=3)  # noqa: E731
    return _lin_counts(ns, ns.api.checkpoint(f, policy=policy))


def _funky(ns, apply, kind, policy):
    sin = _funky_sin(ns, kind)
    return _lin_counts(ns, ns.api.checkpoint(partial(apply, ns, sin), policy=policy))


def _cond_policy(ns):
    f = lambda x: ns.lax.cond(x > 0, ns.np.sin, lambda c: c, x)  # noqa: E731
    return _lin_counts(ns, ns.api.checkpoint(f, policy=save_cos))


def _dots(W, ns):
    def f(x):
        for _ in range(3):
            x = ns.np.sin(ns.np.dot(x, W, precision=ns.lax.Precision.HIGHEST))
        return x

    return f


def _dots_inside_scan(ns):
    def f(W):
        g = ns.api.remat(_dots(W, ns), policy=ns.api.checkpoint_policies.checkpoint_dots)
        return ns.lax.scan(lambda x, _: (g(x), None), ns.np.ones((5,)), None, length=2)[0]

    return _vjp_counts(ns, f, np.ones((5, 5), np.float32))


def _dots_outside(kind):
    """test_remat_checkpoint_dots_outside_{scan,cond}: the policy sees the
    loop's (the branch's) dots, saves them and recomputes the sines."""

    def run(ns):
        def f(W):
            x = ns.np.ones((5,))
            g = _dots(W, ns)
            if kind == "scan":
                return ns.lax.scan(lambda c, _: (g(c), None), x, None, length=2)[0]
            return ns.lax.cond(x.sum() > 0, g, lambda c: c, x)

        f = ns.api.checkpoint(f, policy=ns.api.checkpoint_policies.checkpoint_dots)
        return _vjp_counts(ns, f, np.ones((5, 5), np.float32))

    return run


def _dots_in_jit(ns):
    # a checkpointed jit: the policy saves the jit's dots (JAX's pjit partial eval)
    def f(x, w):
        return ns.np.sum(ns.np.sin(x @ w) * ns.np.exp(x @ w))

    g = ns.api.checkpoint(ns.api.jit(f), policy=ns.api.checkpoint_policies.dots_saveable)
    x, w = np.ones((3, 4), np.float32), np.ones((4, 5), np.float32)
    _, f_lin = ns.api.linearize(g, x, w)
    return _counts(str(ns.api.make_jaxpr(f_lin)(x, w)), " sin ", " cos ", " exp ", " dot_")


def _dots_inside_cond(ns):
    def f(W):
        x = ns.np.ones((5,))
        g = ns.api.remat(_dots(W, ns), policy=ns.api.checkpoint_policies.checkpoint_dots)
        return ns.lax.cond(x.sum() > 0, g, lambda c: c, x)

    return _vjp_counts(ns, f, np.ones((5, 5), np.float32))


# (JAX's test, what it counts): the programs whose counts differed before
# this lane's fix carry "# was" with refimpl's old counts
CASES = {
    # test_remat_of_scan_policy: was (1, 2)
    "scan_policy_save_cos": lambda ns: _scan_of_sin(ns, save_cos),
    "scan_nothing_saveable": lambda ns: _scan_of_sin(
        ns, ns.api.checkpoint_policies.nothing_saveable
    ),
    # test_remat_of_scan_funky_custom_jvp: was (1, 1)
    "scan_funky_jit_save_cos": lambda ns: _funky(ns, _scan_apply, "jit", save_cos),
    "scan_funky_jit_everything": lambda ns: _funky(
        ns, _scan_apply, "jit", ns.api.checkpoint_policies.everything_saveable
    ),
    "scan_funky_jit_nothing": lambda ns: _funky(
        ns, _scan_apply, "jit", ns.api.checkpoint_policies.nothing_saveable
    ),
    # save_sin was (1, 1)
    "scan_funky_jit_save_sin": lambda ns: _funky(ns, _scan_apply, "jit", save_sin),
    # test_remat_of_scan_funky_custom_jvp2: save_cos was (1, 1) (JAX's 1 sin: the
    # rule's loop recomputes its carry), save_sin was (1, 1)
    "scan_funky_scan_save_cos": lambda ns: _funky(ns, _scan_apply, "scan", save_cos),
    "scan_funky_scan_save_sin": lambda ns: _funky(ns, _scan_apply, "scan", save_sin),
    "scan_funky_scan_nothing": lambda ns: _funky(
        ns, _scan_apply, "scan", ns.api.checkpoint_policies.nothing_saveable
    ),
    # test_remat_of_cond_funky_custom_jvp: save_cos was (0, 1)
    "cond_funky_jit_save_cos": lambda ns: _funky(ns, _cond_apply, "jit", save_cos),
    "cond_funky_jit_save_sin": lambda ns: _funky(ns, _cond_apply, "jit", save_sin),
    "cond_funky_jit_nothing": lambda ns: _funky(
        ns, _cond_apply, "jit", ns.api.checkpoint_policies.nothing_saveable
    ),
    # test_remat_of_cond_funky_custom_jvp2 (the rule's cond gives an operand
    # back in its other branch): save_cos was (0, 1)
    "cond_funky_cond_save_cos": lambda ns: _funky(ns, _cond_apply_true, "cond", save_cos),
    "cond_funky_cond_save_sin": lambda ns: _funky(ns, _cond_apply_true, "cond", save_sin),
    # test_remat_of_cond_policy: was (0, 1)
    "cond_policy_save_cos": _cond_policy,
    # test_remat_checkpoint_dots_inside_{scan,cond}
    "dots_inside_scan": _dots_inside_scan,
    "dots_inside_cond": _dots_inside_cond,
    # test_remat_checkpoint_dots_outside_{scan,cond}: was (3, 3, 9), (2, 3, 8)
    "dots_outside_scan": _dots_outside("scan"),
    "dots_outside_cond": _dots_outside("cond"),
    # was (1, 1, 1, 4): the jit's sin, cos, exp recomputed from its saved dots
    "dots_saveable_in_a_jit": _dots_in_jit,
}
DEFAULT = {
    "scan_policy_save_cos",
    "scan_funky_jit_save_cos",
    "cond_funky_jit_save_cos",
    "cond_funky_cond_save_cos",
    "cond_policy_save_cos",
    "scan_nothing_saveable",
    "scan_funky_scan_save_sin",
    "dots_outside_scan",
    "dots_outside_cond",
    "dots_saveable_in_a_jit",
}


def _marked(names):
    return [n if n in DEFAULT else pytest.param(n, marks=pytest.mark.slow) for n in names]


@pytest.mark.parametrize("name", _marked(CASES))
def test_checkpoint_policy_counts_as_jax(backend, name):
    assert CASES[name](REF) == CASES[name](JAX)


def _loop_rev(ns, f, x):
    carry, ys = ns.lax.scan(lambda c, y: (f(c) * y, f(c) + y), x, ns.np.arange(3.0), reverse=True)
    return carry + ns.np.sum(ys)


APPLY = {"scan": _scan_apply, "scan_reverse": _loop_rev, "cond": _cond_apply}
POLICIES = ("save_cos", "save_sin", "checkpoint_dots")


def _policy(ns, name):
    return {"save_cos": save_cos, "save_sin": save_sin}.get(name) or getattr(
        ns.api.checkpoint_policies, name
    )


VALUE_CASES = [
    (apply, kind)
    if (apply, kind) in {("scan", "jit"), ("scan_reverse", "scan"), ("cond", "cond")}
    else pytest.param(apply, kind, marks=pytest.mark.slow)
    for apply in APPLY
    for kind in ("jit", "scan", "cond")
]


@pytest.mark.parametrize(("apply", "kind"), VALUE_CASES)
def test_policy_inside_control_flow_keeps_values(backend, apply, kind):
    # what the policy saves changes the equations, never the derivatives:
    # grad, grad of grad, jit(grad), jvp, vmap(grad) under each policy
    def run(ns):
        out = []
        for name in POLICIES:
            sin = _funky_sin(ns, kind)
            g = ns.api.checkpoint(partial(APPLY[apply], ns, sin), policy=_policy(ns, name))
            xs = np.array([0.3, -0.6], np.float32)
            vals = [
                ns.api.grad(g)(0.7),
                ns.api.grad(ns.api.grad(g))(0.7),
                ns.api.jit(ns.api.grad(g))(0.7),
                *ns.api.jvp(g, (0.7,), (1.0,)),
                *ns.api.vmap(ns.api.grad(g))(xs),
            ]
            out.append([float(np.asarray(v)) for v in vals])
        return np.array(out)

    np.testing.assert_allclose(run(REF), run(JAX), rtol=1e-5, atol=1e-6)


# lax_numpy_test's testPrecision (jtu.assert_dot_precision: every dot_general's
# ``precision`` pair equals the lax.Precision given) and testPreferredElementType
# (the equation's ``preferred_element_type`` is the result type)
PRODUCTS = {
    "dot": lambda ns: ns.np.dot,
    "matmul": lambda ns: ns.np.matmul,
    "vdot": lambda ns: ns.np.vdot,
    "vecdot": lambda ns: ns.np.vecdot,
    "inner": lambda ns: ns.np.inner,
    "tensordot": lambda ns: partial(ns.np.tensordot, axes=1),
    "einsum": lambda ns: partial(ns.np.einsum, "ij,jk"),
}


def _dot_params(ns, f, *args):
    jaxpr = ns.api.make_jaxpr(f)(*args)
    return [
        (e.params["precision"], np.dtype(e.params["preferred_element_type"]))
        for e in jaxpr.eqns
        if str(e.primitive) == "dot_general"
    ]


@pytest.mark.parametrize("name", list(PRODUCTS))
def test_products_name_precision_and_result_type_as_jax(backend, name):
    ones = np.ones((2, 2), np.float32)
    for args in ((ones, ones), (ones.astype(np.int32), ones.astype(np.int32))):
        got = _dot_params(
            REF, partial(PRODUCTS[name](REF), precision=rlax.Precision.HIGHEST), *args
        )
        want = _dot_params(
            JAX, partial(PRODUCTS[name](JAX), precision=jlax.Precision.HIGHEST), *args
        )
        assert [(tuple(map(repr, p)), t) for p, t in got] == [
            (tuple(map(repr, p)), t) for p, t in want
        ]
        assert got and all(p == (rlax.Precision.HIGHEST,) * 2 for p, _ in got)
        plain = _dot_params(REF, PRODUCTS[name](REF), *args)
        assert [t for _, t in plain] == [t for _, t in _dot_params(JAX, PRODUCTS[name](JAX), *args)]


def _debug_print_jaxpr(ns):
    def f(x):
        ns.api.debug.print("{}", x)
        ns.api.debug.print("x={x} n={n} {s}", x=x, n=3, s="text", ordered=True)
        return x

    return ns.api.make_jaxpr(f)(np.int32(0))


def test_debug_print_is_its_own_equation_as_jax(backend):
    # JaxprTest.test_eqn_repr_with_no_lhs: str(eqn) starts "debug_print[";
    # the whole listing (fmt, in_tree, static_args, np_printoptions, a Python
    # number as a literal operand) is JAX's
    got, want = _debug_print_jaxpr(REF), _debug_print_jaxpr(JAX)
    assert str(got.eqns[0]).startswith("debug_print[")
    assert str(got.eqns[0].primitive) == str(want.eqns[0].primitive) == "debug_print"
    assert str(got) == str(want)


def test_debug_print_runs_as_before(backend, capfd):
    # the equation prints what debug.print printed: under jit, vmap, grad, scan
    def f(x):
        ri.debug.print("x={x} n={}", 3, x=x)
        return x * 2

    ri.jit(f)(1.0)
    ri.vmap(f)(np.arange(2.0, dtype=np.float32))
    ri.grad(f)(1.5)
    rlax.scan(lambda c, _: (f(c), None), 1.0, None, length=2)
    lines = capfd.readouterr().out.split("\n")
    assert lines[:6] == [
        "x=1.0 n=3",
        "x=0.0 n=3",
        "x=1.0 n=3",
        "x=1.5 n=3",
        "x=1.0 n=3",
        "x=2.0 n=3",
    ]


def _cos_linear_jaxprs(ns):
    _, f_lin = ns.api.linearize(ns.np.cos, 3.0)
    pullback = lambda x: ns.api.vjp(ns.np.cos, x)[1](1.0)  # noqa: E731
    return str(ns.api.make_jaxpr(f_lin)(1.0)), str(ns.api.make_jaxpr(pullback)(3.0))


def test_cos_derivative_negates_last_as_jax(backend):
    # JAX's cos jvp is -(t * sin x): the linear jaxpr multiplies by the residual
    # sin x, then negates ('mul b a; neg c')
    assert _cos_linear_jaxprs(REF) == _cos_linear_jaxprs(JAX)
    assert float(ri.grad(rnp.cos)(3.0)) == float(jax.grad(jnp.cos)(3.0))
