"""The held-back run of JAX's tests/lax_test.py (lane LAX of issue 29): the
programs of its test methods that differed on refimpl, run on JAX 0.10.2 and
on refimpl (ref and pjrt) and compared.

Each case is the source of a function ``case(jax, jnp, np, lax)`` returning
facts (``summary`` turns arrays into dtype, weak type, shape and values; an
exception into its class name). JAX runs the source in this process;
refimpl runs the same source with ``import jax`` aliased to it
(``refimpl.as_jax.aliased_jax``), on each backend.
"""

from __future__ import annotations

import math

import jax
import pytest

from refimpl.as_jax import aliased_jax
from tests.helpers.case_summary import SUMMARY_SOURCE

# the facts both sides report (tests/helpers/case_summary.py), and the
# arguments this file's cases take
SUMMARY = (
    SUMMARY_SOURCE
    + """
def run_case(case):
    import jax
    import jax.numpy as jnp
    from jax import lax

    return run(case, jax, jnp, np, lax)
"""
)

# name -> source of ``case(jax, jnp, np, lax)``
CASES = {
    # test_stop_gradient_on_ints: a custom_gradient function with an integer
    # output; its rule is traced for float0 cotangents of that output (JAX's
    # tangent type), and grad runs (refimpl traced it for int32 and raised
    # "unsupported dtype float0" when the float0 cotangent came)
    "custom_gradient_integer_output": """
def case(jax, jnp, np, lax):
    @jax.custom_gradient
    def f(x):
        return (x, jnp.round(x).astype(jnp.int32)), lambda g: jnp.ones_like(x)
    def loss(x):
        y, i = f(x)
        y_ng, i_ng = lax.stop_gradient((y, i))
        return jnp.sum(f(y)[0]) + jnp.sum(y_ng)
    x = jnp.arange(3.0)
    return [jax.grad(loss)(x), jax.jit(jax.grad(loss))(x), f(x)[1]]
""",
    # the rule reads the float cotangent beside an integer output, and the
    # cotangent of a weakly typed float output keeps its weak type
    "custom_gradient_integer_output_rule_reads_float_ct": """
def case(jax, jnp, np, lax):
    @jax.custom_gradient
    def f(x):
        i = (jnp.asarray(x) > 1).astype(jnp.int32)
        return {"i": i, "y": 3.0 * x}, lambda g: (2.0 * g["y"],)
    grad = jax.grad(lambda x: f(x)["y"])
    ct = {"i": np.zeros((), jax.dtypes.float0), "y": 1.0}
    return [grad(2.0), jax.jit(grad)(2.0), jax.vjp(f, 1.5)[1](ct)]
""",
    # test_shape_as_value_handles_static_shapes: a non-empty static shape's
    # vector is a NumPy int32 array (an Array for ``()``); under jit an Array
    "shape_as_value_kinds": """
def case(jax, jnp, np, lax):
    out = []
    for shape in [(), (2,), (2, 3)]:
        v = lax.shape_as_value(shape)
        w = jax.jit(lambda: lax.shape_as_value(shape))()
        kinds = [isinstance(v, np.ndarray), isinstance(v, jax.Array), isinstance(w, jax.Array)]
        out.append([kinds, v, w])
    return out
""",
    # testDynamicSliceUnsignedNoNormalization prints/compares an equation's
    # primitive: its repr and str are its name, as JAX's
    "primitive_repr_is_its_name": """
def case(jax, jnp, np, lax):
    f = lambda x, i: lax.dynamic_slice(x, [i], [1])
    jaxpr = jax.make_jaxpr(f)(np.arange(200), np.uint32(7))
    prims = [e.primitive for e in jaxpr.eqns]
    return [repr(prims[0]), str(prims[0]), f"{lax.add_p}", repr([lax.sin_p]), len(prims)]
""",
    # test_composite_unsupported_attribute_dtypes: a traced attribute (a jnp
    # array made under jit) is an UnexpectedTracerError even where the
    # decomposition ignores it; eager, a jax array attribute runs
    "composite_traced_attribute": """
def case(jax, jnp, np, lax):
    def f(x, attr):
        return lax.composite(lambda x, **_: lax.sin(x), "my.tangent")(x, tensor=attr(x))
    x = jnp.ones(3)
    out = [f(x, lambda x: jnp.zeros((1, 2), jnp.float32))]
    for attr in [lambda x: jnp.zeros((1, 2), jnp.float32), lambda x: x]:
        try:
            out.append(jax.jit(lambda x: f(x, attr))(x))
        except jax.errors.UnexpectedTracerError as e:
            out.append(["UnexpectedTracerError", "as an attribute" in str(e)])
    return out
""",
    # lax_autodiff_test testConvertElementTypeGrad: convert_element_type to a
    # NumPy value's own dtype under jvp/linearize gives arrays (JAX binds it
    # for a concrete primal); vjp hands the cotangent back as given (no
    # equation on the tangent side)
    "convert_to_own_dtype_under_jvp": """
def case(jax, jnp, np, lax):
    x = np.arange(6, dtype=np.float32).reshape(2, 3) / 4
    c = lambda x: lax.convert_element_type(x, x.dtype)
    kinds = lambda tree: [isinstance(v, np.ndarray) for v in jax.tree.leaves(tree)]
    grad = jax.grad(lambda x: c(x).sum())
    out = [jax.jvp(c, (x,), (x,)), jax.linearize(c, x)[0], jax.vjp(c, x)[1](x), grad(x)]
    return [out, [kinds(o) for o in out]]
""",
    # testDot's precision parameters: Precision's str is its name, its repr
    # Precision.NAME, and it is built from an alias ('highest', 'float32', ...)
    "precision_names_and_aliases": """
def case(jax, jnp, np, lax):
    P = lax.Precision
    aliases = ["highest", "float32", "high", "tensorfloat32", "bfloat16_3x", "default", None]
    out = [str(P.DEFAULT), repr(P.HIGHEST), f"{P.HIGH}", str((P.DEFAULT, P.HIGHEST))]
    out += [repr(P(a)) for a in aliases] + [P(2).name]
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    out.append(lax.dot(x, x.T, precision=P("highest")))
    try:
        P("nope")
    except ValueError:
        out.append("ValueError")
    return out
""",
    # lax_autodiff_test testPowSecondDerivative: jacfwd pushes real zero
    # tangents for the other differentiated inputs (JAX's one basis over all
    # of them), so d2 pow / dx2 at y = 0 is +0 (refimpl gave -0)
    "jacfwd_other_inputs_real_zero_tangents": """
def case(jax, jnp, np, lax):
    signs = lambda tree: [np.signbit(np.asarray(v)).tolist() for v in jax.tree.leaves(tree)]
    pow_ = lax.pow
    out = [
        jax.jacfwd(jax.jacfwd(pow_, (0, 1)), (0, 1))(4.0, 0.0),
        jax.jacfwd(jax.jacfwd(pow_, (0, 1)), 0)(4.0, 0.0),
        jax.jacfwd(jax.jacfwd(pow_, 0), (0, 1))(4.0, 0.0),
        jax.jacfwd(lambda x, y: (x * y, y), (0, 1))(np.float32(2.0), np.arange(2.0)),
    ]
    return [out, [signs(o) for o in out]]
""",
    # the same for jacrev (and hessian): the other outputs' cotangents are
    # real zeros, as in JAX's one basis over all of them
    "jacrev_other_outputs_real_zero_cotangents": """
def case(jax, jnp, np, lax):
    signs = lambda tree: [np.signbit(np.asarray(v)).tolist() for v in jax.tree.leaves(tree)]
    out = [
        jax.jacrev(lambda x: (x * 0.0, -x * 0.0))(1.0),
        jax.jacrev(jax.jacrev(lax.pow, (0, 1)), (0, 1))(4.0, 0.0),
        jax.hessian(lax.pow, (0, 1))(4.0, 0.0),
        jax.jacrev(lambda x: {"a": -x * 0.0, "b": x[:1] * 0.0})(np.ones(2, np.float32)),
    ]
    return [out, [signs(o) for o in out]]
""",  # pmap_test's testGradOfJvp (lane PMAPA): a jit's transpose takes only
    # the nonzero output cotangents, as JAX's call transpose prunes symbolic
    # zeros; refimpl instantiated the unused primal output's, and its
    # 0 * cos(0) term turned the -0 gradient into +0
    "jit_transpose_takes_only_nonzero_cotangents": """
def case(jax, jnp, np, lax):
    def f(x):
        return jnp.sum(jax.jvp(jax.jit(jnp.sin), (x,), (1.0,))[1])
    def g(x):
        return jnp.sum(jax.jvp(jax.jit(jnp.sin), (x,), (jnp.ones(3),))[1])
    def two(x):
        y, t = jax.jvp(jax.jit(lambda v: (jnp.sin(v), jnp.cos(v))), (x,), (1.0,))
        return t[0] + 0.0 * y[1]
    out = [jax.grad(f)(0.0), jax.jit(jax.grad(f))(0.0), jax.grad(g)(jnp.zeros(3)),
           jax.grad(two)(0.0), jax.vjp(jax.jit(jnp.sin), 0.0)[1](-1.0)]
    return [out, [np.signbit(np.asarray(o)).tolist() for o in out]]
""",
}


def _run(source: str):
    scope: dict = {}
    exec(SUMMARY + source, scope)  # noqa: S102 -- our own sources
    return scope["run_case"](scope["case"])


def _close(got, want) -> bool:
    """Equal facts, floats within a relative 1e-5 (values of different CPUs'
    kernels may differ in the last bits)."""
    if isinstance(want, list) and isinstance(got, list):
        return len(got) == len(want) and all(_close(g, w) for g, w in zip(got, want))
    if isinstance(want, dict) and isinstance(got, dict):
        return got.keys() == want.keys() and all(_close(got[k], want[k]) for k in want)
    if isinstance(want, float) and isinstance(got, float):
        if math.isnan(want):
            return math.isnan(got)
        return math.isclose(got, want, rel_tol=1e-5, abs_tol=1e-6)
    return type(got) is type(want) and got == want


@pytest.fixture(scope="module")
def jax_results():
    assert jax.__name__ == "jax"
    return {name: _run(source) for name, source in CASES.items()}


@pytest.mark.parametrize("name", sorted(CASES))
def test_lax_heldback_as_jax(jax_results, name):
    # both backends in one test: the cases are cheap, and with fewer than
    # conftest's EXHAUSTIVE_KEEP per function every one runs by default
    for backend in ("ref", "pjrt"):
        with aliased_jax(backend):
            got = _run(CASES[name])
        assert _close(got, jax_results[name]), (backend, got, jax_results[name])
