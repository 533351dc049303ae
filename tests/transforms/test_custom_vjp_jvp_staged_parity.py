"""``jvp`` of a ``custom_vjp`` function stages its tangent as ``custom_lin``,
as JAX 0.10.2 (issue 29: JAX's custom_api_test.py test_custom_lin_pretty_print;
lane CUSTOM), compared with JAX live on both backends.

JAX's JVP of a custom_vjp runs ``fwd`` and passes the tangents through one
``custom_lin`` equation, which raises "can't apply forward-mode autodiff (jvp)
to a custom_vjp function." only when it is evaluated: eagerly, or by a jit
returning the tangent. Under ``make_jaxpr``/``eval_shape`` it is only traced,
and a jit that drops the tangent never runs it (JAX removes dead code when it
lowers a jit). Differentiating the tangent itself (grad of the jvp's tangent)
is the generic NotImplementedError of custom_lin's missing JVP rule. refimpl
raised the TypeError while tracing, in all of these.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp


def _f(ns, np_):
    @ns.custom_vjp
    def f(x):
        return np_.sin(x)

    def f_fwd(x):
        return f(x), np_.cos(x)

    def f_bwd(c, g):
        return (c * g,)

    f.defvjp(f_fwd, f_bwd)
    return f


def _cases(ns, np_):
    f = _f(ns, np_)
    x = np_.array([4.2, 0.5], dtype=np_.float32)
    jvp = lambda x: ns.jvp(f, (x,), (x,))  # noqa: E731
    tangent = lambda t: ns.jvp(f, (x,), (t,))[1].sum()  # noqa: E731
    return {
        "eager_jvp": lambda: jvp(x),
        "jit_jvp": lambda: ns.jit(jvp)(x),
        "jit_jvp_primal_only": lambda: ns.jit(lambda x: jvp(x)[0])(x),
        "nested_jit_primal_only": lambda: ns.jit(lambda x: ns.jit(jvp)(x)[0] * 2)(x),
        "make_jaxpr_jvp": lambda: str(ns.make_jaxpr(jvp)(x)),
        "eval_shape_jvp": lambda: ns.eval_shape(jvp, x),
        "linearize_primal": lambda: ns.linearize(f, x)[0],
        "linearize_apply": lambda: ns.linearize(f, x)[1](x),
        "grad_of_jvp_tangent": lambda: ns.grad(tangent)(x),
        "jit_grad_of_jvp_tangent": lambda: ns.jit(ns.grad(tangent))(x),
        "vmap_jvp": lambda: ns.vmap(jvp)(x),
        "jacfwd": lambda: ns.jacfwd(f)(x),
        "grad": lambda: ns.grad(lambda x: f(x).sum())(x),
    }


def _outcome(thunk):
    try:
        out = thunk()
    except Exception as e:  # the error's class and words are compared
        return ("error", type(e).__name__, str(e))
    if isinstance(out, str):
        return ("text", out)
    leaves = jax.tree_util.tree_leaves(out) if not isinstance(out, ri.Array) else [out]
    data = lambda v: None if type(v).__name__ == "ShapeDtypeStruct" else np.asarray(v).tolist()  # noqa: E731
    return ("value", [(tuple(v.shape), str(v.dtype), data(v)) for v in leaves])


JAX_CASES = _cases(jax, jnp)


@pytest.mark.parametrize("name", sorted(JAX_CASES))
def test_jvp_of_custom_vjp_as_jax(backend, name):
    want = _outcome(JAX_CASES[name])
    got = _outcome(_cases(ri, rnp)[name])
    if want[0] == "value" and got[0] == "value":
        for (ws, wd, wv), (gs, gd, gv) in zip(want[1], got[1], strict=True):
            assert (gs, gd) == (ws, wd)
            if wv is not None or gv is not None:
                np.testing.assert_allclose(gv, wv, rtol=1e-6)
    else:
        assert got == want


def test_custom_lin_shown_as_jax():
    """JAX's test_custom_lin_pretty_print, less its pe.dce_jaxpr (JAX-internal):
    the tangent output's equation as JAX prints it."""

    def program(ns, np_):
        @ns.custom_vjp
        def f(x):
            return x + 1

        def f_fwd(x):
            return f(x), ()

        def f_bwd(_, g):
            return g

        f.defvjp(f_fwd, f_bwd)
        x = np_.array([4.2], dtype=np_.float32)
        return str(ns.make_jaxpr(lambda x: ns.jvp(f, (x,), (x,)))(x))

    want = program(jax, jnp)
    assert "custom_lin[\n      bwd=f_bwd\n      in_zeros=[False]\n      num_res=0" in want
    assert program(ri, rnp) == want


def test_dce_of_make_jaxprs_result_prints_as_jaxs_dce_jaxpr():
    """The whole of JAX's test_custom_lin_pretty_print: tools/run_jax_tests.py
    gives ``pe.dce_jaxpr`` as refimpl's ``dce_program`` (same signature and
    result), which keeps make_jaxpr's ClosedJaxpr class, so the pruned program
    prints as JAX's jaxpr text (it printed refimpl's listing)."""
    import importlib
    import pathlib

    from jax._src.interpreters import partial_eval as pe

    root = pathlib.Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("run_jax_tests", root / "tools/run_jax_tests.py")
    assert spec is not None and spec.loader is not None
    runner = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runner)
    module, attr = runner.INTERNAL_NAMES["jax._src.interpreters.partial_eval.dce_jaxpr"].split(":")
    dce = getattr(importlib.import_module(module), attr)

    def pruned(ns, np_, dce_jaxpr):
        @ns.custom_vjp
        def f(x):
            return x + 1

        f.defvjp(lambda x: (f(x), ()), lambda _, g: g)
        x = np_.array([4.2], dtype=np_.float32)
        jaxpr = ns.make_jaxpr(lambda x: ns.jvp(f, (x,), (x,)))(x)
        out, used_inputs = dce_jaxpr(jaxpr.jaxpr, [False, True])
        return out.pretty_print(use_color=False), list(used_inputs)

    want = pruned(jax, jnp, pe.dce_jaxpr)
    assert want[0].startswith("{ lambda ; a:f32[1]. let\n    b:f32[1] = custom_lin[")
    assert pruned(ri, rnp, dce) == want
