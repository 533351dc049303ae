"""JAX's custom_api_test.py run against refimpl (issue 29's held-back run,
lane CUSTOM): the programs of its tests where refimpl differed, compared with
JAX 0.10.2 live on both backends.

* custom_vjp residuals that are Python numbers reach bwd as themselves,
  also under jit, vmap, checkpoint and cond, so bwd can read them in Python
  (``range(n)``, ``(g,) * n``, ``if flag:``), as JAX's (its
  TypedInt/TypedFloat/TypedComplex; bool as it is);
* the arguments of a custom_jvp/custom_vjp call are always bound to the
  function's signature (defaults applied), a missing or extra one is JAX's
  wrapped TypeError before anything runs;
* ``make_jaxpr(f)(x).pretty_print(use_color=False)`` and ``.literals``
  (custom_api_test's test_pretty_print): the listing ``str`` gives and the
  constants, as JAX's ClosedJaxpr.
"""

from __future__ import annotations

import types
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from tests.helpers.parity import assert_same_as_jax

JAX = types.SimpleNamespace(lib=jax, np=jnp)
RI = types.SimpleNamespace(lib=ri, np=rnp)

# JAX's internal literal classes are its Python number / ndarray subclasses
_JAX_LITERALS = {"TypedInt": "int", "TypedFloat": "float", "TypedComplex": "complex"}


def _kind(value: Any) -> str:
    """What bwd saw: the Python kind of a number, else "data" (an array, a
    tracer, NumPy data: JAX's TypedNdArray where refimpl has an array)."""
    name = _JAX_LITERALS.get(type(value).__name__, type(value).__name__)
    return name if name in ("int", "float", "complex", "bool") else "data"


# --- constant residuals -------------------------------------------------------------------------

RESIDUALS = {
    # bwd repeats ct n times in Python and multiplies by the flag's branch
    "int_and_flag": lambda n, x: (3, True),
    "float": lambda n, x: (2.5, False),
    "complex": lambda n, x: (2, 1j),
    "with_data": lambda n, x: (2, (np.float32(2.0), n.np.sin(x), 0.5)),
}


def _with_residuals(n: Any, res_fn: Any, seen: list) -> Any:
    @n.lib.custom_vjp
    def f(x):
        return 2.0 * x

    def bwd(res, ct):
        seen.append(n.lib.tree_util.tree_map(_kind, res))
        count, other = res
        out = ct * 0.0
        for _ in range(int(count)):  # a traced count would not convert
            out = out + ct
        if isinstance(other, bool) and other:
            out = out * 3.0
        return (out,)

    f.defvjp(lambda x: (f(x), res_fn(n, x)), bwd)
    return f


MODES = {
    "grad": lambda n, f: n.lib.grad(f)(1.5),
    "jit_grad": lambda n, f: n.lib.jit(n.lib.grad(f))(1.5),
    "grad_jit": lambda n, f: n.lib.grad(n.lib.jit(f))(1.5),
    "vmap_grad": lambda n, f: n.lib.vmap(n.lib.grad(f))(np.arange(3.0, dtype=np.float32)),
    "grad_vmap": lambda n, f: n.lib.grad(lambda x: n.lib.vmap(f)(x).sum())(
        np.arange(3.0, dtype=np.float32)
    ),
    "jit_grad_vmap": lambda n, f: n.lib.jit(n.lib.grad(lambda x: n.lib.vmap(f)(x).sum()))(
        np.arange(3.0, dtype=np.float32)
    ),
    "grad_checkpoint": lambda n, f: n.lib.grad(n.lib.checkpoint(f))(1.5),
    "grad_cond": lambda n, f: n.lib.grad(lambda x: n.lib.lax.cond(x > 0, f, lambda y: y, x))(1.5),
}
# the default run: each residual kind once eagerly and under jit, the
# vmap/remat/cond modes on one
DEFAULT = {(r, m) for r in RESIDUALS for m in ("grad", "jit_grad")} | {
    ("int_and_flag", m) for m in MODES
}


def _run(n: Any, res_name: str, mode: str) -> tuple:
    seen: list = []
    out = MODES[mode](n, _with_residuals(n, RESIDUALS[res_name], seen))
    return out, seen


@pytest.mark.parametrize(
    "res_name,mode",
    [
        pytest.param(r, m, marks=() if (r, m) in DEFAULT else pytest.mark.slow)
        for r in RESIDUALS
        for m in MODES
    ],
)
def test_custom_vjp_constant_residuals_reach_bwd_as_constants(backend, res_name, mode):
    want, want_seen = _run(JAX, res_name, mode)
    got, got_seen = _run(RI, res_name, mode)
    # (JAX may run bwd more than once, e.g. under cond: what it saw counts)
    assert sorted(set(got_seen)) == sorted(set(want_seen))
    assert_same_as_jax(got, want)


# NumPy scalars and 0-d arrays: JAX 0.10.2 keeps them constant in every
# context (its TypedNdArray: a 0-d ndarray of the canonical dtype), so bwd
# can branch on them; refimpl traced them inside a jit (TracerBoolConversionError)
NUMPY_RESIDUALS = {
    "np_bool": lambda: np.bool_(True),
    "np_float32": lambda: np.float32(4.0),
    "np_float64": lambda: np.float64(4.0),
    "np_int64": lambda: np.int64(3),
    "np_0d_array": lambda: np.array(3.0),
}


def _with_numpy_residual(n: Any, make: Any, seen: list) -> Any:
    @n.lib.custom_vjp
    def f(x):
        return 2.0 * x

    def bwd(r, ct):
        seen.append((isinstance(r, np.ndarray), str(r.dtype), r.shape))
        return (ct * 3.0 if r else ct,)  # Python reads the residual

    f.defvjp(lambda x: (f(x), make()), bwd)
    return f


@pytest.mark.parametrize("mode", ["grad", "jit_grad", "grad_jit", "grad_checkpoint", "grad_cond"])
@pytest.mark.parametrize("res_name", list(NUMPY_RESIDUALS))
def test_numpy_scalar_residuals_reach_bwd_as_constants(backend, res_name, mode):
    runs = {}
    for n in (JAX, RI):
        seen: list = []
        out = MODES[mode](n, _with_numpy_residual(n, NUMPY_RESIDUALS[res_name], seen))
        runs[n.lib.__name__] = (out, sorted(set(seen)))
    (got, got_seen), (want, want_seen) = runs["refimpl"], runs["jax"]
    assert want_seen and all(is_np for is_np, _, _ in want_seen)  # the oracle's premise
    assert got_seen == want_seen
    assert_same_as_jax(got, want)


@pytest.mark.parametrize("mode", ["grad", "vmap_grad", "grad_vmap"])
def test_optimize_remat_keeps_python_number_residuals(backend, mode):
    # optimize_remat traces fwd into a program: a Python-number residual is
    # no output of it, bwd gets it as it is (as JAX where the call is
    # linearized directly; JAX traces it under jit(grad), refimpl does not)
    def prog(n: Any) -> Any:
        seen: list = []

        @n.lib.custom_vjp
        def f(x):
            return n.np.sin(x)

        def bwd(res, ct):
            count, cos, half = res
            seen.append((_kind(count), _kind(half)))
            return (sum((ct,) * count) * cos * half,)

        f.defvjp(lambda x: (n.np.sin(x), (2, n.np.cos(x), 0.5)), bwd, optimize_remat=True)
        return MODES[mode](n, f), sorted(set(seen))

    (got, got_seen), (want, want_seen) = prog(RI), prog(JAX)
    assert got_seen == want_seen
    assert_same_as_jax(got, want)


# --- argument binding ---------------------------------------------------------------------------


def _kw_functions(n: Any) -> dict[str, Any]:
    @n.lib.custom_jvp
    def jvp_f(x, y, *, z=None):
        return n.np.sin(x), x + n.np.cos(y)

    jvp_f.defjvp(lambda p, t: 1 / 0)  # never runs: the binding fails first

    @n.lib.custom_vjp
    def vjp_f(x, y, *, z=None):
        return n.np.sin(x), x + n.np.cos(y)

    vjp_f.defvjp(lambda x, y: 1 / 0, lambda r, c: 1 / 0)
    return {"custom_jvp": jvp_f, "custom_vjp": vjp_f}


@pytest.mark.parametrize("kind", ["custom_jvp", "custom_vjp"])
@pytest.mark.parametrize(
    "call,words",
    [
        (lambda f: f(0.5), "missing a required argument: 'y'"),
        (lambda f: f(0.5, 0.1, 0.2), "too many positional arguments"),
        (lambda f: f(0.5, 0.1, z=1.0), "could not be resolved to positions: z"),
    ],
    ids=["missing", "extra", "keyword_only"],
)
def test_arguments_are_bound_before_anything_runs(kind, call, words):
    # custom_api_test's test_resolve_kwargs_error_message
    for n in (JAX, RI):
        with pytest.raises(TypeError, match=f"decorated function {kind[7:]}_f could not be") as e:
            call(_kw_functions(n)[kind])
        assert words in str(e.value)


def test_defaults_are_arguments_of_the_rules(backend):
    # a parameter left to its default is bound (JAX's apply_defaults): the
    # custom_jvp rule gets it among the primals, custom_vjp's fwd among its
    # arguments and bwd owes it a cotangent
    def prog(n: Any) -> Any:
        @n.lib.custom_jvp
        def f(x, y, c=1.0):
            return c * (x + y)

        f.defjvp(lambda p, t: (f(*p), len(p) * t[0]))

        @n.lib.custom_vjp
        def g(x, y, c=1.0):
            return c * (x + y)

        g.defvjp(lambda *a: (g(*a), len(a)), lambda k, ct: (ct * k,) * k)
        jit = n.lib.jit
        return (
            jit(lambda x, t: n.lib.jvp(f, (x, 2.0), (t, 1.0)))(1.0, 1.0),
            jit(n.lib.grad(f))(1.0, 2.0),
            n.lib.grad(g, (0, 1))(1.0, 2.0),
            jit(n.lib.grad(g))(1.0, 2.0),
        )

    assert_same_as_jax(prog(RI), prog(JAX))


# --- the ClosedJaxpr methods ---------------------------------------------------------------------


def _programs(n: Any) -> list:
    @n.lib.custom_jvp
    def f(x):
        return x + 1

    f.defjvp(lambda p, t: (f(*p), t[0]))

    @n.lib.custom_vjp
    def g(x):
        return x + 1

    g.defvjp(lambda x: (g(x), ()), lambda _, ct: (ct,))
    x = np.array([4.2], np.float32)
    c = np.arange(3.0, dtype=np.float32)
    return [
        n.lib.make_jaxpr(f)(x),
        n.lib.make_jaxpr(g)(x),
        n.lib.make_jaxpr(lambda y: y * n.np.asarray(c))(x),
    ]


def test_pretty_print_is_the_listing_and_literals_the_constants():
    # custom_api_test's test_pretty_print (the listing itself is refimpl's)
    for n in (JAX, RI):
        for program in _programs(n):
            assert program.pretty_print(use_color=False) == str(program)
            assert program.pretty_print(print_shapes=True, name_stack=False) == str(program)
            assert program.literals is program.consts
            with pytest.raises(TypeError):
                program.pretty_print(False)
    got = [np.asarray(c) for c in _programs(RI)[2].literals]
    want = [np.asarray(c) for c in _programs(JAX)[2].literals]
    assert [(c.dtype, c.tolist()) for c in got] == [(c.dtype, c.tolist()) for c in want]
