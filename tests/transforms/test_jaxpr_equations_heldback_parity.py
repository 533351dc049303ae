"""The equations of linearized and transposed jaxprs as JAX 0.10.2's, where
JAX's own tests count them: api_test.py's RematTest reads
``str(make_jaxpr(linearize(f, x)[1])(1.))`` and counts `` sin ``/`` cos ``/
`` dot_`` in it, to check which values a ``checkpoint`` policy saves and which
the backward pass recomputes, inside a scan, a cond or a jit call too.

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
    """A custom_jvp sine whose rule computes (sin, cos) in a jit call or a
    cond (test_remat_of_{scan,cond}_funky_custom_jvp[2])."""

    @ns.api.custom_jvp
    def sin(x):
        return ns.np.sin(x)

    def sin_jvp(primals, tangents):
        (x,), (xdot,) = primals, tangents
        both = lambda xs: (ns.np.sin(xs[0]), ns.np.cos(xs[1]))  # noqa: E731
        if kind == "jit":
            y, c = ns.api.jit(lambda: (ns.np.sin(x), ns.np.cos(x)))()
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
}
DEFAULT = {
    "scan_policy_save_cos",
    "scan_funky_jit_save_cos",
    "cond_funky_jit_save_cos",
    "cond_funky_cond_save_cos",
    "cond_policy_save_cos",
    "scan_nothing_saveable",
}


def _marked(names):
    return [n if n in DEFAULT else pytest.param(n, marks=pytest.mark.slow) for n in names]


@pytest.mark.parametrize("name", _marked(CASES))
def test_checkpoint_policy_counts_as_jax(backend, name):
    assert CASES[name](REF) == CASES[name](JAX)


def test_policy_inside_control_flow_keeps_values(backend):
    # what the policy saves changes the equations, never the derivatives
    def run(ns):
        sin = _funky_sin(ns, "jit")
        f = ns.api.checkpoint(partial(_scan_apply, ns, sin), policy=save_cos)
        g = ns.api.checkpoint(
            lambda x: ns.lax.cond(x > 0, ns.np.sin, lambda c: c, x), policy=save_cos
        )
        return [
            float(np.round(ns.api.grad(f)(3.0), 5)),
            float(np.round(ns.api.grad(g)(3.0), 5)),
            float(np.round(ns.api.linearize(f, 4.0)[1](1.0), 5)),
        ]

    assert run(REF) == run(JAX)
