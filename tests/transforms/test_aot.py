"""Ahead-of-time lowering for other platforms, lax.platform_dependent, and the
Lowered/Compiled API (SPEC section 3 "Ahead-of-time ...").

Oracles: JAX (jax.lax.platform_dependent, jax's Lowered.args_info and
multi-platform lowering) and NumPy; module verification by MLIR's own
verifier on a re-parse of the printed text.
"""

from __future__ import annotations

import difflib

import jax
import numpy as np
import pytest

from tests.helpers.pjrt_helpers import skip_without_pjrt

skip_without_pjrt()

import refimpl as ri  # noqa: E402
from refimpl import lax  # noqa: E402
from refimpl.backends.pjrt import lowering  # noqa: E402

X = np.linspace(-1.5, 2.0, 6, dtype=np.float32)
Y = np.linspace(0.5, 1.0, 6, dtype=np.float32)


def _pd(lib):
    def f(x, y):
        z = lib.lax.platform_dependent(
            x, cpu=lambda v: v * 2.0, tpu=lambda v: v * 3.0, default=lambda v: v - 1.0
        )
        return lib.numpy.sin(z) * y

    return f


F_RI = _pd(ri)
F_JAX = _pd(jax)


def _verifies(text: str) -> None:
    """The printed module parses and verifies in a fresh context and serializes."""
    with lowering.mlir_context():
        module = lowering.ir.Module.parse(text)
        module.operation.verify()
        assert lowering.to_portable_artifact(module, "1.0.0")


def _plain(x, y):
    return ri.numpy.tanh(x @ y.T) + 1.0


@pytest.mark.parametrize("platform", ["cuda", "tpu", "rocm"])
def test_lowering_for_absent_platforms_verifies(platform):
    traced = ri.jit(F_RI, backend="pjrt").trace(X, Y)
    text = traced.lower(lowering_platforms=(platform,)).as_text()
    _verifies(text)
    cpu = traced.lower(lowering_platforms=("cpu",)).as_text()
    assert cpu == traced.lower().as_text()
    changed = [
        line
        for line in difflib.unified_diff(cpu.splitlines(), text.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    # only platform_dependent differs: its branch index (cpu: 0, tpu: 1,
    # default: 2) and the one branch emitted for it (as JAX, no stablehlo.case)
    want = {"cuda": "2", "rocm": "2", "tpu": "1"}[platform]
    assert "stablehlo.case" not in cpu and "stablehlo.case" not in text
    assert "-    %c = stablehlo.constant dense<0> : tensor<i32>" in changed
    assert f"+    %c = stablehlo.constant dense<{want}> : tensor<i32>" in changed
    branch = {  # the scalar of each branch: v * 2.0 (cpu), v * 3.0 (tpu), v - 1.0
        "tpu": ["dense<3.000000e+00>"],
        "cuda": ["dense<1.000000e+00>", "stablehlo.subtract"],
        "rocm": ["dense<1.000000e+00>", "stablehlo.subtract"],
    }[platform]
    assert all(any(op in line for line in changed if line[0] == "+") for op in branch)
    assert len(changed) == {"tpu": 4, "cuda": 6, "rocm": 6}[platform]


def test_no_platform_dependence_same_text():
    traced = ri.jit(_plain, backend="pjrt").trace(X[None], Y[None])
    texts = {p: traced.lower(lowering_platforms=(p,)).as_text() for p in ("cpu", "cuda", "tpu")}
    assert texts["cpu"] == texts["cuda"] == texts["tpu"]
    _verifies(texts["tpu"])


@pytest.mark.parametrize("platforms", [("cpu", "tpu"), ("tpu", "cuda", "cpu"), ("cuda", "cpu")])
def test_multi_platform_module_runs_cpu_branch(platforms):
    lowered = ri.jit(F_RI, backend="pjrt").trace(X, Y).lower(lowering_platforms=platforms)
    text = lowered.as_text()
    _verifies(text)
    assert '%arg0: tensor<i32> {jax.global_constant = "_platform_index"}' in text
    assert "stablehlo.case" in text
    out = lowered.compile()(X, Y)
    np.testing.assert_allclose(np.asarray(out), np.sin(X * 2.0) * Y, rtol=1e-6, atol=1e-6)


def test_multi_platform_signature_matches_jax():
    ours = ri.jit(F_RI, backend="pjrt").trace(X, Y).lower(lowering_platforms=("cuda", "cpu"))
    theirs = jax.jit(F_JAX).trace(X, Y).lower(lowering_platforms=("cuda", "cpu"))
    main = [line.strip() for line in ours.as_text().splitlines() if "func.func public" in line]
    jmain = [line.strip() for line in theirs.as_text().splitlines() if "func.func public" in line]
    # the same leading argument as JAX's
    assert main[0].split(", ")[0] == jmain[0].split(", ")[0]


def test_nested_jit_multi_platform():
    inner = ri.jit(lambda v: lax.platform_dependent(v, cpu=jnp_free_cos, cuda=lambda u: u))

    def outer(x):
        return inner(x) + 1.0

    lowered = ri.jit(outer, backend="pjrt").trace(X).lower(lowering_platforms=("cuda", "cpu"))
    _verifies(lowered.as_text())
    np.testing.assert_allclose(
        np.asarray(lowered.compile()(X)), np.cos(X) + 1.0, rtol=1e-6, atol=1e-6
    )


def jnp_free_cos(v):
    return ri.numpy.cos(v)


def test_compile_for_other_platform_says_why():
    lowered = ri.jit(F_RI, backend="pjrt").trace(X, Y).lower(lowering_platforms=("tpu",))
    with pytest.raises(ValueError, match=r"lowered for \('tpu',\).*compiles for 'cpu' only"):
        lowered.compile()


def test_bad_lowering_platforms():
    traced = ri.jit(F_RI, backend="pjrt").trace(X, Y)
    with pytest.raises(ValueError, match="unknown platform 'metal'"):
        traced.lower(lowering_platforms=("metal",))
    with pytest.raises(TypeError, match="lowering_platforms must be None or a tuple"):
        traced.lower(lowering_platforms="cpu")
    with pytest.raises(ValueError, match="repeats"):
        traced.lower(lowering_platforms=("cpu", "cpu"))


@pytest.mark.parametrize("backend", ["ref", "pjrt"])
def test_platform_dependent_takes_cpu_branch(backend):
    got = ri.jit(F_RI, backend=backend)(X, Y)
    want = jax.jit(F_JAX)(X, Y)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(F_RI(X, Y)), np.asarray(want), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("backend", ["ref", "pjrt"])
def test_platform_dependent_grad_and_vmap(backend):
    def loss(lib):
        f = _pd(lib)
        return lambda x: f(x, Y).sum()

    g = ri.jit(ri.grad(loss(ri)), backend=backend)(X)
    np.testing.assert_allclose(
        np.asarray(g), np.asarray(jax.grad(loss(jax))(X)), rtol=1e-5, atol=1e-6
    )
    xs = np.stack([X, X + 1.0])
    v = ri.jit(ri.vmap(F_RI, in_axes=(0, None)), backend=backend)(xs, Y)
    jv = jax.vmap(F_JAX, in_axes=(0, None))(xs, Y)
    np.testing.assert_allclose(np.asarray(v), np.asarray(jv), rtol=1e-6, atol=1e-6)


def test_platform_dependent_without_cpu_branch():
    with pytest.raises(NotImplementedError, match="no branch for the platform 'cpu'"):
        lax.platform_dependent(X, tpu=lambda v: v)
    with pytest.raises(NotImplementedError):  # JAX's class for it
        jax.lax.platform_dependent(X, tpu=lambda v: v)
    # default covers cpu
    out = lax.platform_dependent(X, cuda=lambda v: v, default=lambda v: v + 1.0)
    np.testing.assert_array_equal(np.asarray(out), X + 1.0)
    # 'gpu' is refused, as by JAX
    with pytest.raises(ValueError, match="use 'cuda' or 'rocm'"):
        lax.platform_dependent(X, gpu=lambda v: v, default=lambda v: v)
    with pytest.raises(ValueError, match="'cuda' or 'rocm'"):
        jax.lax.platform_dependent(X, gpu=lambda v: v, default=lambda v: v)
    # any other name is a platform no program runs on, as in JAX 0.10.2: a
    # branch for it alone leaves cpu without one (JAX's NotImplementedError)
    with pytest.raises(NotImplementedError, match="no branch for the platform 'cpu'"):
        lax.platform_dependent(X, quantum=lambda v: v)
    with pytest.raises(NotImplementedError):
        jax.lax.platform_dependent(X, quantum=lambda v: v)


def test_lowered_info_matches_jax():
    def f(a, b, *, c):
        return a * b + c

    args = (X, Y)
    ours = ri.jit(f, backend="pjrt", donate_argnums=0).trace(*args, c=X).lower()
    theirs = jax.jit(f, donate_argnums=0).trace(*args, c=X).lower()
    flat = jax.tree_util.tree_leaves(ours.args_info, is_leaf=lambda x: hasattr(x, "donated"))
    jflat = jax.tree_util.tree_leaves(theirs.args_info, is_leaf=lambda x: hasattr(x, "donated"))
    assert [(i.shape, np.dtype(i.dtype), i.donated) for i in flat] == [
        (i.shape, np.dtype(i.dtype), i.donated) for i in jflat
    ]
    avals = ri.tree_util.tree_leaves(ours.in_avals)
    assert [(a.shape, a.dtype) for a in avals] == [
        (a.shape, a.dtype) for a in jax.tree_util.tree_leaves(theirs.in_avals)
    ]
    assert ours.out_info.shape == theirs.out_info.shape
    assert np.dtype(ours.out_info.dtype) == np.dtype(theirs.out_info.dtype)


def test_out_info_weak_types_as_jax():
    """Traced.out_info keeps a weak output's weak type; Lowered.out_info drops it."""

    def f(a, b):
        return a * 2.0, b

    def described(tree, leaves):
        return [(s.shape, np.dtype(s.dtype), bool(s.weak_type)) for s in leaves(tree)]

    ours = ri.jit(f, backend="pjrt").trace(X, 1.5)
    theirs = jax.jit(f).trace(X, 1.5)
    assert described(ours.out_info, ri.tree_util.tree_leaves) == described(
        theirs.out_info, jax.tree_util.tree_leaves
    )
    lowered = described(ours.lower().out_info, ri.tree_util.tree_leaves)
    assert lowered == described(theirs.lower().out_info, jax.tree_util.tree_leaves)
    assert [weak for _, _, weak in lowered] == [False, False]


@pytest.mark.parametrize("backend", ["ref", "pjrt"])
def test_compiled_call_ignores_weak_types_as_jax(backend):
    """A Compiled called with arguments differing from its compiled types only
    in weak type runs, with the compiled output types (JAX 0.10.2 compares the
    avals with weak types stripped); another dtype or shape is a TypeError."""

    def f(x, n):
        return x * 2, n + 1

    def run(m, np_, **options):
        compiled = m.jit(f, **options).lower(1.5, np_.int32(3)).compile()
        outs = []
        for args in [(1.5, np_.int32(3)), (np_.float32(2.0), 4), (np.float32(3.0), np.int32(5))]:
            got = compiled(*args)
            outs.append([(np.dtype(o.dtype), bool(o.weak_type), float(o)) for o in got])
        errors = []
        for args in [(1, 3), (np_.ones(2), 3), (np_.float16(1.0), 3)]:
            try:
                compiled(*args)
                errors.append(None)
            except Exception as error:  # noqa: BLE001 - the class is compared
                errors.append(type(error))
        return outs, errors

    ours = run(ri, ri.numpy, backend=backend)
    theirs = run(jax, jax.numpy)
    assert ours == theirs
    assert ours[1] == [TypeError] * 3


@pytest.mark.parametrize("backend", ["ref", "pjrt"])
def test_compiled_takes_the_dynamic_arguments_alone_as_jax(backend):
    """JAX's Compiled of a function with static arguments is called with the
    dynamic ones alone (the static ones were fixed by lower); refimpl also
    takes the whole call. Its args_info, out_info and in_tree are JAX's."""

    def f(n, x, *, scale):
        return x * n * scale

    def run(m, np_, **options):
        compiled = (
            m.jit(f, static_argnums=0, static_argnames="scale", **options)
            .lower(3, np_.float32(2.0), scale=2)
            .compile()
        )
        out = compiled(np_.float32(5.0))
        info = m.tree_util.tree_leaves(compiled.args_info)
        return (
            float(out),
            [(a.shape, np.dtype(a.dtype), a.donated) for a in info],
            compiled.in_tree.num_leaves,
            (compiled.out_info.shape, np.dtype(compiled.out_info.dtype)),
        )

    assert run(ri, ri.numpy, backend=backend) == run(jax, jax.numpy)
    compiled = ri.jit(f, static_argnums=0, static_argnames="scale", backend=backend)
    compiled = compiled.lower(3, np.float32(2.0), scale=2).compile()
    assert float(compiled(3, np.float32(5.0), scale=2)) == 30.0
    with pytest.raises(TypeError, match="Compiled"):
        compiled(np.ones(2, np.float32))


@pytest.mark.parametrize("backend", ["ref", "pjrt"])
def test_compiler_options_are_accepted_as_jax(backend):
    """jit(compiler_options=...) and Lowered.compile(compiler_options=...)
    take JAX 0.10.2's dict of XLA options (refimpl's jit raised TypeError on
    the keyword); they change no value. A non-dict is refimpl's TypeError."""
    options = {"xla_embed_ir_in_executable": True}

    def run(m, **kw):
        f = lambda x: m.numpy.sqrt(x**2) + 1.0  # noqa: E731
        return [
            float(m.jit(f, compiler_options=options, **kw)(2.0)),
            float(m.jit(f, **kw).lower(2.0).compile(compiler_options=options)(2.0)),
            float(m.jit(f, **kw).lower(2.0).compile(options)(2.0)),
        ]

    assert run(ri, backend=backend) == run(jax) == [3.0] * 3
    with pytest.raises(TypeError, match="compiler_options"):
        ri.jit(lambda x: x, compiler_options=["xla_embed_ir_in_executable"])


def test_compiled_analyses():
    compiled = ri.jit(lambda a, b: a * b + 1.0, backend="pjrt").trace(X, Y).lower().compile()
    # the CPU plugin does not implement PJRT_Executable_GetCostAnalysis
    assert compiled.cost_analysis() is None
    memory = compiled.memory_analysis()
    assert memory.argument_size_in_bytes == X.nbytes + Y.nbytes
    assert memory.output_size_in_bytes == X.nbytes
    np.testing.assert_allclose(np.asarray(compiled(X, Y)), X * Y + 1.0, rtol=1e-6)
