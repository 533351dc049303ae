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
import jax.extend.core
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
    result, the constants kept), which keeps make_jaxpr's ClosedJaxpr class,
    so the pruned program prints as JAX's jaxpr text (it printed refimpl's
    listing)."""
    import importlib
    import pathlib

    from jax._src.interpreters import partial_eval as pe

    root = pathlib.Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("run_jax_tests", root / "tools/run_jax_tests.py")
    assert spec is not None and spec.loader is not None
    runner = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runner)
    dce = runner._refimpl_equivalent("jax._src.interpreters.partial_eval", "dce_jaxpr")

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


def _two_output_rules(ns, np_):
    """JAX's test_dce functions: a custom_jvp and a custom_vjp with two outputs."""

    @ns.custom_jvp
    def fj(x, y):
        return np_.sin(x), x + np_.cos(y)

    @fj.defjvp
    def _(primals, tangents):
        x, y = primals
        dx, dy = tangents
        return fj(x, y), (2.0 * np_.cos(x) * dx, 1.5 * dx - 0.5 * np_.sin(y) * dy)

    @ns.custom_vjp
    def fv(x, y):
        return np_.sin(x), x + np_.cos(y)

    def fwd(x, y):
        return fv(x, y), (np_.cos(x), np_.sin(y))

    def bwd(res, cts):
        cos_x, sin_y = res
        ct_a, ct_b = cts
        return 2.0 * cos_x * ct_a + 1.5 * ct_b, -0.5 * sin_y * ct_b

    fv.defvjp(fwd, bwd)
    return {"custom_jvp": fj, "custom_vjp": fv}


@pytest.mark.parametrize("kind", ["custom_jvp", "custom_vjp"])
def test_dce_prunes_a_custom_call_and_its_rules_as_jaxs(kind):
    """JAX's test_dce (CustomJVPTest, CustomVJPTest): DCE of a custom call
    whose outputs are partly used prunes its primal program to them (no
    ``cos`` left for the first output alone), and the pruned call still
    differentiates by the user's rules (bwd gets a zero cotangent for the
    dropped output), compared with JAX's pe.dce_jaxpr live."""
    from jax._src.interpreters import partial_eval as pe

    from refimpl.extend.core import jaxpr_as_fun
    from refimpl.transforms.dce import dce_program

    x, y = 0.1, -1.3
    jf = _two_output_rules(jax, jnp)[kind]
    rf = _two_output_rules(ri, rnp)[kind]
    jaxpr_j = jax.make_jaxpr(jf)(x, y).jaxpr
    jaxpr_r = ri.make_jaxpr(rf)(x, y).jaxpr
    for used in ([True, True], [True, False], [False, True], [False, False]):
        dj, uj = pe.dce_jaxpr(jaxpr_j, used)
        dr, ur = dce_program(jaxpr_r, used)
        assert list(ur) == list(uj)
        assert len(dr.eqns) == len(dj.eqns)
        if dj.eqns:
            want = sorted(str(e.primitive) for e in dj.eqns[0].params["call_jaxpr"].eqns)
            got = sorted(str(e.primitive) for e in dr.eqns[0].params["call"].eqns)
            assert got == want
        if any(used):  # the first kept output, differentiated (as JAX's test)
            fj_ = jax.extend.core.jaxpr_as_fun(pe.close_jaxpr(dj))
            fr_ = jaxpr_as_fun(dr)
            want_g = jax.grad(lambda a, b, f=fj_: f(a, b)[0], argnums=(0, 1))(x, y)
            got_g = ri.grad(lambda a, b, f=fr_: f(a, b)[0], argnums=(0, 1))(x, y)
            np.testing.assert_allclose(np.array(got_g), np.array(want_g), rtol=1e-6)
            want_v = fj_(x, y)[0]
            np.testing.assert_allclose(np.asarray(fr_(x, y)[0]), np.asarray(want_v), rtol=1e-6)
