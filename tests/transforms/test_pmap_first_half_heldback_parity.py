"""The held-back run of JAX's tests/pmap_test.py, first half (PythonPmapTest
up to testGradOfAllToAllReplicaGroups; lane PMAPA of issue 29): the programs
that differed on refimpl, run on JAX 0.10.2 and on refimpl (ref and pjrt) and
compared.

Each case is the source of a function ``case(jax, jnp, np, P)`` returning
JSON-able facts (``summary`` turns arrays into dtype, weak type, shape and
values; an exception into its class name). JAX answers every case once, in a
fresh interpreter with 4 host devices (JAX reads ``XLA_FLAGS`` when it
starts); refimpl runs the same source with ``import jax`` aliased to it, over
4 devices on both backends.
"""

from __future__ import annotations

import pytest

from tests.helpers.case_summary import jax_facts, refimpl_facts

# name -> source of ``case(jax, jnp, np, P)``
CASES = {
    # testVmapOfPmap, testVmapOfPmapNonLeadingAxis, testVmapOfPmapTuple: a
    # pmap that passes its argument through, under vmap, still computes a new
    # array (float32 from a float64 NumPy argument), as any pmap output
    "vmap_of_pmap_identity_numpy": """
def case(jax, jnp, np, P):
    x = np.arange(2 * 4 * 3, dtype=np.float64).reshape(2, 4, 3) / 4
    out = jax.vmap(jax.pmap(lambda v: v, axis_name="i"))(x)
    return [isinstance(out, np.ndarray), out]
""",
    "vmap_of_pmap_non_leading_axis_numpy": """
def case(jax, jnp, np, P):
    x = np.arange(4 * 2 * 3, dtype=np.float64).reshape(4, 2, 3)
    return jax.vmap(jax.pmap(lambda v: v, axis_name="i"), in_axes=2, out_axes=2)(x)
""",
    "vmap_of_pmap_tuple_numpy": """
def case(jax, jnp, np, P):
    ax = np.arange(4 * 2 * 3, dtype=np.float64).reshape(4, 2, 3)
    ay = np.arange(4 * 3 * 2, dtype=np.int64).reshape(4, 3, 2)
    az1 = np.arange(4 * 2, dtype=np.float64).reshape(4, 2)
    az2 = np.arange(2 * 4 * 2, dtype=np.float64).reshape(2, 4, 2)
    f1 = jax.pmap(lambda *x: x, axis_name="i")
    return jax.vmap(f1, in_axes=(1, 2, (None, 0)), out_axes=(1, 2, 0))(ax, ay, (az1, az2))
""",
    "vmap_of_pmap_out_axes_none_numpy": """
def case(jax, jnp, np, P):
    f = jax.pmap(lambda x, y: y, in_axes=(0, None), out_axes=None)
    out = jax.vmap(f, in_axes=(None, 0))(np.ones(4), np.arange(2, dtype=np.float64))
    return [isinstance(out, np.ndarray), out]
""",
    # the same under jvp: the primal and the tangent come out new arrays
    "jvp_of_pmap_identity_numpy": """
def case(jax, jnp, np, P):
    x = np.arange(4 * 3, dtype=np.float64).reshape(4, 3)
    p, t = jax.jvp(jax.pmap(lambda v: v), (x,), (np.ones((4, 3)),))
    return [isinstance(p, np.ndarray), isinstance(t, np.ndarray), p, t]
""",
    "vmap_of_jvp_of_pmap_identity_numpy": """
def case(jax, jnp, np, P):
    x = np.arange(2 * 4, dtype=np.float64).reshape(2, 4)
    return jax.vmap(lambda a: jax.jvp(jax.pmap(lambda v: v), (a,), (a,)))(x)
""",
    # testLowerAsText, testLowerCompilerIR, testLowerCompileCompilerIR,
    # testLowerCompileAsText, testLowerCostAnalysis and its compiled and
    # memory forms, test_jit_lower_compile_with_compiler_options(_multiple):
    # a lowered pmap has jit's Lowered/Compiled methods (the module text, its
    # IR, the analyses; compiler_options taken); "mhlo" is no dialect
    "lowered_pmap_module_text_and_analyses": """
def case(jax, jnp, np, P):
    f = jax.pmap(lambda v: v - jax.lax.pmean(v, "i"), axis_name="i")
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    low = f.lower(x)
    texts = [type(low.as_text(*d)).__name__ for d in ((), ("hlo",), ("stablehlo",))]
    irs = [low.compiler_ir(*d) is not None for d in ((), ("hlo",), ("stablehlo",))]
    low.cost_analysis()  # doesn't raise (None where the plugin has no cost model)
    c1 = low.compile()
    c2 = low.compile(compiler_options={"xla_embed_ir_in_executable": True})
    c2.cost_analysis()
    c2.memory_analysis()
    out = [texts, irs, c1 is not c2, c2.runtime_executable() is not None,
           isinstance(c2.as_text(), str), c2(x)]
    for thunk in (lambda: low.as_text(dialect="mhlo"), lambda: low.compiler_ir("mhlo")):
        try:
            thunk()
            out.append("ran")
        except ValueError as e:
            out.append([type(e).__name__, str(e)])
    return out
""",
    # Lowered.out_info / out_tree of a pmap: the stacked outputs' types and
    # shardings (NamedSharding over the pmap's devices), out_axes honoured
    "lowered_pmap_out_info": """
def case(jax, jnp, np, P):
    f = jax.pmap(lambda v, w: (v * 2, {"s": jax.lax.psum(w, "i")}), axis_name="i",
                 out_axes=(1, None))
    x = np.ones((4, 3), np.float32)
    low = f.lower(x, np.arange(4))
    c = low.compile()
    # (JAX's Compiled.out_info adds a device layout, which refimpl does not model)
    compiled_info = [[s.shape, str(s.dtype)] for s in jax.tree_util.tree_leaves(c.out_info)]
    return [str(low.out_info), str(low.out_tree), compiled_info, str(c.out_tree)]
""",
    # testLowerShapedArray: lower (and jit's trace) take a ShapedArray, or any
    # object with shape and dtype, for an argument of that type; a call does not
    "lower_with_abstract_arguments": """
def case(jax, jnp, np, P):
    class Duck:
        shape = (4, 4)
        dtype = np.dtype(np.float32)

    sa = jax.core.ShapedArray((4, 4), np.float32)
    weak = jax.core.ShapedArray((4, 4), np.float32, weak_type=True)
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    f = jax.jit(lambda v: v * 2)
    p = jax.pmap(lambda v: v - jax.lax.pmean(v, "i"), axis_name="i")
    ps = jax.pmap(lambda v, n: v * n, static_broadcasted_argnums=1)
    out = [str(sa), sa.dtype.name, f.lower(sa).compile()(x), str(f.lower(weak).in_avals),
           str(f.trace(sa).out_info), f.lower(Duck()).compile()(x),
           p.lower(sa).compile()(x), str(p.lower(sa).in_avals), p.lower(Duck()).compile()(x),
           ps.lower(sa, 3).compile()(x)]
    for thunk in (lambda: f(sa), lambda: p(sa), lambda: f.lower(np.int32)):
        try:
            thunk()
            out.append("ran")
        except TypeError as e:
            out.append(type(e).__name__)
    return out
""",
    # a compiled pmap's input_shardings/output_shardings (JAX's Compiled has
    # them): NamedShardings over the pmap's devices, split at in_axes/out_axes
    "compiled_pmap_shardings": """
def case(jax, jnp, np, P):
    p = jax.pmap(lambda v, w: (v * 2, w), axis_name="i", in_axes=(0, None), out_axes=(1, None))
    c1 = p.lower(np.ones((4, 3), np.float32), np.float32(2)).compile()
    q = jax.pmap(lambda v, w: v * w, in_axes=(1,))
    c2 = q.lower(np.ones((3, 4), np.float32), w=np.ones(4, np.float32)).compile()
    return [str(c.input_shardings) + str(c.output_shardings) for c in (c1, c2)]
""",
    # jax.stages (as pmap_test's Lowered/Compiled are): the stage objects'
    # types; a pmap function has no trace, so it is no Wrapped (JAX's protocol)
    "stages_types": """
def case(jax, jnp, np, P):
    import jax.stages as s

    f = jax.jit(lambda v: v * 2)
    p = jax.pmap(lambda v: v * 2)
    x = np.ones((4, 4), np.float32)
    lf, lp = f.lower(x), p.lower(x)
    return [isinstance(f, s.Wrapped), isinstance(p, s.Wrapped), isinstance(len, s.Wrapped),
            isinstance(f.trace(x), s.Traced), isinstance(lf, s.Lowered),
            isinstance(lf.compile(), s.Compiled), isinstance(lp, s.Lowered),
            isinstance(lp.compile(), s.Compiled), isinstance(lf, s.Compiled),
            isinstance(lf.args_info[0][0], s.ArgInfo), isinstance(lp.args_info[0][0], s.ArgInfo),
            s.CompilerOptions == dict[str, str | bool]]
""",
}


def _jax_results() -> dict:
    return jax_facts(CASES)


@pytest.fixture(scope="module")
def jax_results() -> dict:
    return _jax_results()


def _refimpl_result(name: str) -> object:
    return refimpl_facts(CASES[name])


@pytest.mark.usefixtures("four_ref_devices")
@pytest.mark.parametrize("name", list(CASES))
def test_pmap_first_half_as_jax(jax_results, backend, name):
    assert _refimpl_result(name) == jax_results[name]
