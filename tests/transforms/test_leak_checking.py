"""The tracer leak checker (``checking_leaks`` / ``check_tracer_leaks``),
compared with JAX 0.10.2 on both backends: each program runs under the
check in refimpl and in JAX, and must raise JAX's ``Exception("Leaked
trace ...")`` exactly where JAX does. JAX checks its staging traces (jit,
make_jaxpr, eval_shape, control-flow bodies, checkpoint) and vmap, not
grad/vjp/jvp/linearize outside jit; programs that keep no tracer must run
(no false positive from the transformations' own bookkeeping)."""

from __future__ import annotations

import functools
import types

import jax
import numpy as np
import pytest

import refimpl as ri
import refimpl.lax as rlax
import refimpl.numpy as rnp
from refimpl.config import config

JAX = types.SimpleNamespace(api=jax, lax=jax.lax, np=jax.numpy)
REF = types.SimpleNamespace(api=ri, lax=rlax, np=rnp)


def _outcome(ns: types.SimpleNamespace, program) -> str:
    store: list = []
    try:
        with ns.api.checking_leaks():
            program(ns, store)
    except Exception as e:  # the leak error is a plain Exception in JAX
        if type(e) is Exception and str(e).startswith("Leaked trace"):
            return "leak"
        return f"{type(e).__name__}: {e}"
    finally:
        store.clear()
    return "ok"


def _keep(store, x):
    store.append(x)
    return x + 1


def _keep_mid(store, x, np_):
    y = np_.sin(x)
    store.append(y)
    return y * 2


# name -> program(ns, store); `store` is a list outside the transformation
LEAKY = {
    "jit": lambda n, s: n.api.jit(lambda x: _keep(s, x))(1.0),
    "jit_intermediate": lambda n, s: n.api.jit(lambda x: _keep_mid(s, x, n.np))(1.0),
    "jit_object_attribute": lambda n, s: n.api.jit(
        lambda x: s.append(types.SimpleNamespace(v=x * 2)) or x
    )(1.0),
    "jit_returned_and_kept": lambda n, s: n.api.jit(lambda x: (s.append(x), x)[1])(1.0),
    "jit_inner_of_jit": lambda n, s: n.api.jit(lambda x: n.api.jit(lambda y: _keep(s, y))(x) * 2)(
        1.0
    ),
    "make_jaxpr": lambda n, s: n.api.make_jaxpr(lambda x: _keep(s, x))(1.0),
    "eval_shape": lambda n, s: n.api.eval_shape(lambda x: _keep(s, x), 1.0),
    "vmap": lambda n, s: n.api.vmap(lambda x: _keep(s, x))(np.ones(3, np.float32)),
    "vmap_intermediate": lambda n, s: n.api.vmap(lambda x: _keep_mid(s, x, n.np))(
        np.ones(3, np.float32)
    ),
    "jacfwd": lambda n, s: n.api.jacfwd(lambda x: _keep(s, x))(1.0),
    "scan_body": lambda n, s: n.lax.scan(
        lambda c, x: (_keep(s, c), x), 0.0, np.ones(3, np.float32)
    ),
    "cond_branch": lambda n, s: n.lax.cond(True, lambda x: _keep(s, x), lambda x: x, 1.0),
    "while_body": lambda n, s: n.lax.while_loop(lambda c: c < 3, lambda c: _keep(s, c), 0.0),
    "fori_body": lambda n, s: n.lax.fori_loop(0, 3, lambda i, c: _keep(s, c), 0.0),
    "grad_of_checkpoint": lambda n, s: n.api.grad(n.api.checkpoint(lambda x: _keep(s, x)))(1.0),
    "jit_of_grad": lambda n, s: n.api.jit(n.api.grad(lambda x: _keep(s, x)))(1.0),
    "grad_of_jit": lambda n, s: n.api.grad(n.api.jit(lambda x: _keep(s, x)))(1.0),
    "pmap": lambda n, s: n.api.pmap(lambda x: _keep(s, x))(np.ones(1, np.float32)),
}


def _nondiff_rule(n):
    @functools.partial(n.api.custom_jvp, nondiff_argnums=(0,))
    def f(x, y):
        return x * y

    f.defjvp(lambda x, p, t: (f(x, p[0]), 5.0 * x * t[0]))
    return f


# a traced nondiff argument stays in the staged custom_jvp rule: JAX reports it
LEAKY["custom_jvp_traced_nondiff_under_jit"] = lambda n, s: n.api.jit(
    lambda x, y: n.api.grad(lambda y: _nondiff_rule(n)(x, y))(y)
)(2.0, 3.0)
LEAKY["custom_jvp_batched_nondiff_under_jit_vmap"] = lambda n, s: n.api.jit(
    n.api.vmap(n.api.grad(lambda x, y: _nondiff_rule(n)(x, y), 1))
)(np.array([2.0, 4.0], np.float32), np.array([3.0, 1.0], np.float32))


def _ref_vjp(n, write):
    # a custom_vjp function taking a Ref argument; its fwd may write the Ref
    @n.api.custom_vjp
    def f(x_ref, y):
        return x_ref[...] * 3.0 * y

    def fwd(x_ref, y):
        v = x_ref[...]
        if write:
            x_ref[...] = v * 2.0
        return v * 3.0 * y, (v, y)

    f.defvjp(fwd, lambda res, g: (g * 100.0 * res[1], g * res[0] * 7.0))
    return f


def _ref_made_in_jit(n, s, keep=None, write=False):
    f = _ref_vjp(n, write)

    def g(x, y):
        r = n.api.new_ref(x)
        out = f(r, y) + r[...]
        if keep is not None:
            s.append(keep(r))
        return out

    x, y = np.float32(1.5), np.float32(2.0)
    n.api.jit(g)(x, y)
    n.api.grad(n.api.jit(g), (0, 1))(x, y)
    n.api.jit(n.api.grad(g, (0, 1)))(x, y)


def _closing_over_ref_made_in_jit(n, s):
    def g(x, y):
        r = n.api.new_ref(x)

        @n.api.custom_vjp
        def f(y):
            return r[...] * y

        f.defvjp(lambda y: (f(y), y), lambda y, ct: (ct * 2.0,))
        return f(y)

    n.api.jit(g)(np.float32(1.5), np.float32(2.0))


# a Ref made inside jit and passed to a custom_vjp function is a tracer of the
# jit in JAX: kept by the program, it is reported; so is one the rule closes over
LEAKY["custom_vjp_ref_argument_kept"] = lambda n, s: _ref_made_in_jit(n, s, keep=lambda r: r)
LEAKY["custom_vjp_ref_argument_value_kept"] = lambda n, s: _ref_made_in_jit(
    n, s, keep=lambda r: r[...]
)
LEAKY["custom_vjp_closing_over_ref_made_in_jit"] = _closing_over_ref_made_in_jit


# JAX 0.10.2 does not check these traces (or nothing leaks): no error
NOT_REPORTED = {
    "grad": lambda n, s: n.api.grad(lambda x: _keep(s, x))(1.0),
    "value_and_grad": lambda n, s: n.api.value_and_grad(lambda x: _keep(s, x))(1.0),
    "vjp": lambda n, s: n.api.vjp(lambda x: _keep(s, x), 1.0),
    "jvp": lambda n, s: n.api.jvp(lambda x: _keep(s, x), (1.0,), (1.0,)),
    "linearize": lambda n, s: n.api.linearize(lambda x: _keep(s, x), 1.0),
    "jacrev": lambda n, s: n.api.jacrev(lambda x: _keep(s, x))(1.0),
    "stored_then_dropped": lambda n, s: n.api.jit(lambda x: (s.append(x), s.clear(), x)[2])(1.0),
    "only_a_cycle": lambda n, s: n.api.jit(
        lambda x: (lambda a: (a.append(a), a.append(x)))([]) or x
    )(1.0),
}


def _sigmoid(n):
    @n.api.custom_jvp
    def sigmoid(x):
        return 1 / (1 + n.np.exp(-x))

    sigmoid.defjvps(lambda g, ans, x: g * ans * (1 - ans))
    return sigmoid


def _scan_of_custom_jvp_under_grad(n, s):
    sig = _sigmoid(n)
    body = lambda h, x: (sig(h + x), None)  # noqa: E731
    n.api.grad(lambda x: n.lax.scan(lambda h, _: body(h, x), x, None, length=2)[0])(1.0)
    n.api.jit(lambda: n.lax.scan(lambda h, _: body(h, 1.0), n.np.zeros(()), None, length=2))()


def _custom_vjp_under_jit_grad(n, s):
    @n.api.custom_vjp
    def f(x):
        return n.np.sin(x)

    f.defvjp(lambda x: (n.np.sin(x), x), lambda r, ct: (ct * n.np.cos(r),))
    n.api.jit(n.api.grad(f))(1.0)
    n.api.grad(n.api.jit(lambda x: f(x) * 2))(1.0)


def _caught_concretization(n, s):
    def f(x):
        try:
            int(x)
        except Exception as e:  # noqa: F841 (the traceback holds x's frame)
            pass
        return x

    n.api.jit(f)(1.0)


NO_LEAK = {
    "jit_vmap_grad": lambda n, s: (
        n.api.jit(lambda x: x)(3),
        n.api.vmap(n.api.jit(lambda x: x))(np.arange(3)),
        n.api.grad(n.api.jit(lambda x: x))(3.0),
    ),
    "pmap_and_vmap_of_pmap": lambda n, s: (
        n.api.pmap(lambda x: x)(np.ones(1)),
        n.api.vmap(n.api.pmap(lambda x: x))(np.ones((1, 1))),
    ),
    "scan": lambda n, s: n.lax.scan(lambda c, x: (n.np.sin(c), None), 1.0, np.arange(3.0)),
    "scan_under_jvp": lambda n, s: n.api.jvp(
        lambda x: n.lax.scan(lambda c, _: (c, None), x, None, length=1), (3.0,), (1.0,)
    ),
    "scan_under_vmap": lambda n, s: n.api.vmap(
        lambda x: n.lax.scan(lambda c, _: (c, None), x, None, length=1)
    )(np.arange(5.0)),
    "scan_of_custom_jvp_under_grad": _scan_of_custom_jvp_under_grad,
    "custom_vjp_under_jit_grad": _custom_vjp_under_jit_grad,
    # the staged rule holds its Ref argument (fwd and bwd need it), not the
    # Ref's value: a tracer of the finished jit
    "custom_vjp_ref_argument_made_in_jit": _ref_made_in_jit,
    "custom_vjp_ref_argument_made_in_jit_fwd_writes": functools.partial(
        _ref_made_in_jit, write=True
    ),
    "hessian_under_jit": lambda n, s: n.api.jit(
        n.api.hessian(lambda x: n.np.sum(n.np.sin(x) ** 2))
    )(np.arange(3.0)),
    "grad_of_scan_with_solve": lambda n, s: n.api.grad(
        lambda t: n.lax.scan(
            lambda c, x: (c / 2 + n.np.linalg.solve(n.np.eye(3), x), None),
            n.np.zeros((3, 3)),
            n.np.zeros((4, 3, 3)) + t,
        )[0].sum()
    )(np.eye(3)),
    "caught_concretization_error": _caught_concretization,
    "custom_jvp_batched_nondiff_under_vmap": lambda n, s: n.api.vmap(
        n.api.grad(lambda x, y: _nondiff_rule(n)(x, y), 1)
    )(np.array([2.0, 4.0], np.float32), np.array([3.0, 1.0], np.float32)),
    # inner traces capture the outer tracers (closures): nothing keeps them after
    "closure_captured_by_inner_jit_and_cond": lambda n, s: (
        n.api.jit(lambda x: n.api.jit(lambda: x * 2)())(1.0),
        n.api.jit(lambda x: n.lax.cond(True, lambda: x * 2, lambda: x))(1.0),
        n.api.grad(lambda x: n.lax.fori_loop(0, 3, lambda i, c: c * x, 1.0))(2.0),
    ),
}


@pytest.mark.parametrize("name", sorted(LEAKY))
def test_a_leak_raises_as_in_jax(backend, name):
    assert _outcome(JAX, LEAKY[name]) == "leak"
    assert _outcome(REF, LEAKY[name]) == "leak"


@pytest.mark.parametrize("name", sorted(NOT_REPORTED) + sorted(NO_LEAK))
def test_no_error_where_jax_reports_none(backend, name):
    program = {**NOT_REPORTED, **NO_LEAK}[name]
    assert _outcome(JAX, program) == "ok"
    assert _outcome(REF, program) == "ok"


def test_without_the_check_a_leak_is_found_where_the_tracer_is_used(backend):
    store: list = []
    ri.jit(lambda x: _keep(store, x))(1.0)  # no check: runs
    with pytest.raises(ri.errors.UnexpectedTracerError):
        rnp.sin(store[0])


def test_a_cached_jit_is_not_traced_again_so_not_checked(backend):
    # as JAX: the flag is not part of the jit cache key
    store: list = []
    f = ri.jit(lambda x: _keep(store, x))
    f(1.0)
    store.clear()
    with ri.checking_leaks():
        f(2.0)
        assert len(store) == 0


def test_an_exception_in_the_traced_function_is_not_masked(backend):
    store: list = []

    def bad(x):
        store.append(x)
        raise ValueError("boom")

    with ri.checking_leaks(), pytest.raises(ValueError, match="boom"):
        ri.jit(bad)(1.0)
    with ri.checking_leaks(), pytest.raises(ValueError, match="boom"):
        ri.vmap(bad)(np.ones(2))


def test_the_flag_and_its_contexts():
    assert config.check_tracer_leaks is False
    with ri.check_tracer_leaks(1):  # by its truth, as JAX's
        assert config.check_tracer_leaks is True
        with ri.check_tracer_leaks(None):
            assert config.check_tracer_leaks is False
        assert config.check_tracer_leaks is True
    assert config.check_tracer_leaks is False

    @ri.checking_leaks()
    def checked():
        return config.check_tracer_leaks

    assert checked() is True
    with pytest.raises(TypeError, match="check_tracer_leaks"):
        config.update("check_tracer_leaks", 1)


def test_the_message_names_the_leaked_tracer(backend):
    store: list = []
    with ri.checking_leaks(), pytest.raises(Exception, match=r"Leaked trace") as info:
        ri.jit(lambda x: _keep(store, x))(np.float32(1))
    assert type(info.value) is Exception
    assert "f32[]" in str(info.value)
