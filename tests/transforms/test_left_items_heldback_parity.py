"""Behaviours earlier held-back lanes (issue 29) found and left, probed again
against JAX 0.10.2 live on both backends (lane LEFT, docs/parity_audit.md).

- ``jax.extend``: the core data structures (``ClosedJaxpr``, ``JaxprEqn``,
  ``Var``, ``Literal``, ``jaxpr_as_fun``, ``primitives``), a user-defined
  ``Primitive`` and ``backend.get_backend().platform``, under ``as_jax``.
"""

from __future__ import annotations

import importlib

import jax
import numpy as np
import pytest

from refimpl import as_jax


def _jaxpr_summary(jx, core):
    """What a program walking a jaxpr reads: the classes of its parts, the
    primitive names, the literal values and what jaxpr_as_fun gives."""
    closed = jx.make_jaxpr(lambda x: jx.numpy.sin(x) * 2.0 + x)(1.0)
    eqns = closed.jaxpr.eqns
    return {
        "closed": isinstance(closed, core.ClosedJaxpr),
        "jaxpr": isinstance(closed.jaxpr, core.Jaxpr),
        "eqns": [isinstance(e, core.JaxprEqn) for e in eqns],
        "names": [e.primitive.name for e in eqns],
        "is_lax_p": [e.primitive is getattr(core.primitives, f"{e.primitive}_p") for e in eqns],
        "atoms": [[type(a).__name__ for a in e.invars] for e in eqns],
        "literals": [float(a.val) for e in eqns for a in e.invars if isinstance(a, core.Literal)],
        "vars": all(isinstance(v, core.Var) for v in closed.jaxpr.invars),
        "as_fun": [round(float(v), 5) for v in core.jaxpr_as_fun(closed)(3.0)],
        "as_fun_jit": [round(float(v), 5) for v in jx.jit(core.jaxpr_as_fun(closed))(3.0)],
    }


def test_extend_core_walks_a_jaxpr_as_jax(backend):
    want = _jaxpr_summary(jax, importlib.import_module("jax.extend.core"))
    with as_jax.aliased_jax(backend):
        jx = importlib.import_module("jax")
        got = _jaxpr_summary(jx, importlib.import_module("jax.extend.core"))
    assert got == want


def test_extend_backend_platform_as_jax(backend):
    from jax.extend import backend as theirs

    with as_jax.aliased_jax(backend):
        jex = importlib.import_module("jax.extend")
        ours = jex.backend.get_backend()
        assert ours.platform == theirs.get_backend().platform == "cpu"
        assert ours.device_count() == len(ours.devices()) >= 1
        assert jex.backend.get_default_device() == ours.devices()[0]
        assert list(jex.backend.backends()) == ["cpu"]
        with pytest.raises(RuntimeError):
            jex.backend.get_backend("tpu")


def _define_twice(core, shaped):
    p = core.Primitive("twice")
    p.def_impl(lambda x: x * 2)
    p.def_abstract_eval(lambda a: shaped(a.shape, a.dtype))
    return p


def test_extend_user_primitive_without_rules_raises_as_jax():
    from jax.extend import core as theirs

    with as_jax.aliased_jax("ref"):
        core = importlib.import_module("jax.extend.core")
        jx = importlib.import_module("jax")
        for Prim, j in ((theirs.Primitive, jax), (core.Primitive, jx)):
            p = Prim("foo")
            with pytest.raises(NotImplementedError, match="Abstract evaluation for 'foo'"):
                j.jit(lambda x, p=p: p.bind(x))(1.0)
            p.def_abstract_eval(lambda a: a)
            with pytest.raises(NotImplementedError, match="Evaluation rule for 'foo'"):
                p.bind(1.0)


def test_extend_user_primitive_runs_on_ref_as_jax():
    x = np.arange(3.0, dtype=np.float32)
    from jax.extend import core as theirs

    p = _define_twice(theirs, jax.core.ShapedArray)
    want = np.asarray(p.bind(x))  # (JAX's jit needs an MLIR rule; ref's interpreter runs it)
    with as_jax.aliased_jax("ref"):
        jx = importlib.import_module("jax")
        core = importlib.import_module("jax.extend.core")
        q = _define_twice(core, jx.core.ShapedArray)
        got = (q.bind(x), jx.jit(q.bind)(x), jx.make_jaxpr(q.bind)(x))
        assert [e.primitive for e in got[2].jaxpr.eqns] == [q]
    for g in got[:2]:
        np.testing.assert_array_equal(np.asarray(g), want)
        assert g.dtype == want.dtype


def test_percentile_float16_q_position_is_folded_only_by_xla(backend):
    """jnp.percentile's q / 100 * (n - 1) with a float16 q: JAX's XLA folds it
    into q * 3.28125 rounded once (94.0); refimpl rounds per operation
    (93.9375) except where XLA compiles it too, pjrt inside a jit (known.py
    reductions.percentile/f16-q-position-xla-folds-constants)."""
    import refimpl as ri

    a = np.arange(329, dtype=np.float16)
    q = np.float16(28.640625)
    assert float(jax.numpy.percentile(a, q, method="lower")) == 94.0
    eager = ri.numpy.percentile(a, q, method="lower")
    jitted = ri.jit(lambda a, q: ri.numpy.percentile(a, q, method="lower"))(a, q)
    assert float(eager) == 93.0
    assert float(jitted) == (94.0 if backend == "pjrt" else 93.0)
    # a float32 q's position is not near an integer here: all agree
    for got in (ri.numpy.percentile(a, np.float32(q)), jax.numpy.percentile(a, np.float32(q))):
        np.testing.assert_allclose(np.float32(got), 93.9375, rtol=1e-3)


def _leaf_kind(v):
    """What a program sees of a result leaf: host object or array, dtype,
    weak type, value."""
    array = hasattr(v, "weak_type") and not isinstance(v, np.ndarray)
    kind = "array" if array else type(v).__name__
    return kind, str(np.asarray(v).dtype), getattr(v, "weak_type", None), np.asarray(v).tolist()


def _untouched_carries(jx):
    L = jx.lax
    a64 = np.arange(3.0)
    out = {}
    for name, init in (("int", 0), ("float", 1.5), ("np64", a64), ("npint", np.int64(4))):
        out[f"fori/{name}"] = L.fori_loop(0, 3, lambda i, c: (c[0], c[1] + 1), (init, 0))
        out[f"fori_unrolled/{name}"] = L.fori_loop(0, 3, lambda i, c: c, init, unroll=True)
        out[f"while/{name}"] = L.while_loop(
            lambda c: c[1] < 3, lambda c: (c[0], c[1] + 1), (init, 0)
        )
        out[f"scan/{name}"] = L.scan(lambda c, x: (c, x), init, np.arange(3))
        out[f"jit_fori/{name}"] = jx.jit(lambda c: L.fori_loop(0, 3, lambda i, c: c, c))(init)
        out[f"jvp_scan/{name}"] = jx.jvp(
            lambda x, init=init: L.scan(
                lambda c, _: ((c[0], c[1] * x), None), (init, 1.0), None, length=2
            )[0],
            (2.0,),
            (1.0,),
        )[0]
        out[f"cond/{name}"] = L.cond(True, lambda x: x, lambda x: x, init)
    out["while_cond_reads"] = L.while_loop(
        lambda c: c[1] < c[0], lambda c: (c[0], c[1] + 1), (3, 0)
    )
    out["vmap_out_axes_none"] = jx.vmap(
        lambda x: L.fori_loop(0, 3, lambda i, c: (c[0], c[1] + x), (a64, x))[0], out_axes=None
    )(np.arange(2.0, dtype=np.float32))
    return jax.tree_util.tree_map(_leaf_kind, out)


def test_loops_hand_back_untouched_host_carries_as_jax(backend):
    """A carry the loop body returns unchanged is the init object itself in
    JAX 0.10.2 (eagerly: a float64 NumPy array, a Python int), an array from
    a jit; a cond operand and a scan's x become arrays."""
    want = _untouched_carries(jax)
    with as_jax.aliased_jax(backend):
        got = _untouched_carries(importlib.import_module("jax"))
    assert got == want


def _jit_derivatives(jx, args):
    f = jx.jit(lambda x, y: jx.numpy.sin(x) * y)
    return {
        "grad": jx.grad(f)(*args),
        "value_and_grad": jx.value_and_grad(f, (0, 1))(*args),
        "jvp": jx.jvp(f, args, (1.0, 0.5)),
        "vjp": jx.vjp(f, *args)[1](1.0),
        "linearize": jx.linearize(lambda x: f(x, args[1]), args[0])[1](1.0),
        "vmap": jx.vmap(f, (0, None))(np.arange(3.0, dtype=np.float32), args[1]),
        "hessian": jx.hessian(f)(*args),
    }


@pytest.mark.parametrize("kind", ["python", "numpy"])
def test_derivatives_of_a_jit_on_host_data_compile_on_pjrt(backend, kind):
    """grad/jvp/vjp/linearize/vmap of a jit given Python numbers or NumPy
    data: JAX 0.10.2's values, dtypes and weak types; on pjrt the jit's
    derived calls (known, linear, transposed, batched) are compiled, as the
    jit called on that data is, not interpreted (results are PJRT arrays, the
    reference's sin impl never runs)."""
    import refimpl as ri

    args = (2.0, 3.0) if kind == "python" else (np.float32(2.0), np.float32(3.0))
    want = _jit_derivatives(jax, args)
    sin_p = ri.lax.sin_p
    impl, calls = sin_p.impl, []
    sin_p.def_impl(lambda *a, **k: calls.append(1) or impl(*a, **k))
    try:
        with as_jax.aliased_jax(backend):
            out = _jit_derivatives(importlib.import_module("jax"), args)
    finally:
        sin_p.def_impl(impl)
    assert jax.tree_util.tree_structure(out) == jax.tree_util.tree_structure(want)
    for w, g in zip(jax.tree_util.tree_leaves(want), jax.tree_util.tree_leaves(out), strict=True):
        w, g = _leaf_kind(w), _leaf_kind(g)
        assert g[:3] == w[:3]  # host object or array, dtype, weak type
        np.testing.assert_allclose(g[3], w[3], rtol=1e-6)
    if backend == "pjrt":
        assert not calls
        # (linearize's linear function evaluates its own program, not a jit
        # call: on host tangents it runs on the reference backend, row 116)
        del out["linearize"]
        kinds = {type(leaf).__name__ for leaf in jax.tree_util.tree_leaves(out)}
        assert kinds == {type(ri.jit(lambda: ri.numpy.zeros(()))()).__name__}


_RESHARD_PROGRAM = """
import numpy as np
from jax.sharding import AxisType, PartitionSpec as P
mesh = jax.make_mesh((4,), ("x",), axis_types=(AxisType.Explicit,))
with jax.set_mesh(mesh):
    xs = jax.sharding.reshard(np.arange(8.0, dtype=np.float32), P("x"))
    f = jax.jit(lambda v: jax.sharding.reshard(v * 2, P(None)))
    params = jax.make_jaxpr(f)(xs).eqns[0].params  # (refimpl's jit: "program")
    eqns = [str(e.primitive) for e in params.get("jaxpr", params.get("program")).eqns]
    out = f(xs)
    g = jax.grad(lambda v: jax.sharding.reshard(v * 2, P(None)).sum())(xs)
    result = [eqns[-1], str(out.sharding.spec), np.asarray(out).tolist(), str(g.sharding.spec)]
"""


def test_reshard_under_jit_is_the_constraint_equation(backend):
    """``reshard`` of a traced value inside ``jit`` under ``set_mesh`` is an
    equation (refimpl's ``sharding_constraint``, JAX's ``reshard``) that lays
    out the jit's output (replicated here, where the argument is split); it
    came back unchanged, so the output kept the argument's P('x')."""
    from refimpl import config
    from tests.helpers.jax_oracle import in_fresh_jax

    want = in_fresh_jax(
        "import os\nos.environ['XLA_FLAGS'] = '--xla_force_host_platform_device_count=4'\n"
        "import jax\n" + _RESHARD_PROGRAM
    )
    config.update("ref_num_devices", 4)
    with as_jax.aliased_jax(backend):
        scope = {"jax": importlib.import_module("jax")}
        exec(_RESHARD_PROGRAM, scope)
    got = scope["result"]
    assert want[0] == "reshard" and got[0] == "sharding_constraint"
    assert got[1:] == want[1:]


def _remat_facts(jx):
    return jx.remat.__name__, jx.remat is jx.checkpoint, float(jx.grad(jx.remat(_sq))(3.0))


def _sq(x):
    return x * x


def test_remat_is_a_function_named_remat_as_jax(backend):
    """JAX 0.10.2's ``jax.remat`` is its own function, named ``remat``."""
    with as_jax.aliased_jax(backend):
        got = _remat_facts(importlib.import_module("jax"))
    assert got == _remat_facts(jax) == ("remat", False, 6.0)


def _residual_counts(jx, jnp_scalar, saved_residuals):
    n = np.float32(3.0)
    functions = {
        "closed-over jnp scalar": lambda x: jx.numpy.sin(x) * jnp_scalar,
        "closed-over NumPy scalar": lambda x: jx.numpy.sin(x) * n,
        "Python float": lambda x: jx.numpy.sin(x) * 3.0,
        "jnp scalar made inside": lambda x: jx.numpy.sin(x) * jx.numpy.float32(2.0),
        "jit over a NumPy scalar": jx.jit(lambda x: jx.numpy.sin(x) * n),
    }
    return {name: len(saved_residuals(f, 1.0)) for name, f in functions.items()}


def test_saved_residuals_count_a_concrete_jnp_scalar_as_jax(backend):
    """A concrete jnp scalar the linear part reads is a saved constant in JAX
    0.10.2 ('from a constant' / 'from a literal'); a NumPy or Python scalar
    is inlined. (A jit closing over a jnp scalar stays one short here: its
    linearization makes the scalar a literal, docs/semantics.md.)"""
    import jax._src.ad_checkpoint as jax_ad_checkpoint

    from refimpl import ad_checkpoint

    want = _residual_counts(jax, jax.numpy.float32(3.0), jax_ad_checkpoint.saved_residuals)
    with as_jax.aliased_jax(backend):
        jx = importlib.import_module("jax")
        got = _residual_counts(jx, jx.numpy.float32(3.0), ad_checkpoint.saved_residuals)
    assert got == want
