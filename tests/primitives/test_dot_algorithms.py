"""``precision=`` as JAX 0.10.2 canonicalizes it, and dot algorithms
(``lax.DotAlgorithm``, ``lax.DotAlgorithmPreset`` or a preset's name) as JAX
runs them on CPU: the presets XLA's CPU backend would ignore are a ValueError
when the dot runs (tracing accepts them), the others convert the operands to
the preset's types, contract in its accumulation type and convert the result.
Values against JAX on both backends, eagerly, under jit, grad and vmap."""

from __future__ import annotations

from functools import partial

import jax
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import lax

_X = (np.random.RandomState(0).randn(4, 5) * 100).astype(np.float32)
_Y = (np.random.RandomState(1).randn(5, 3) * 100).astype(np.float32)


def _outcome(fn):
    try:
        return "ok", np.asarray(fn())
    except Exception as e:  # noqa: BLE001 - the outcome is what is compared
        return "raise", type(e)


def _same(got_fn, want_fn):
    got, want = _outcome(got_fn), _outcome(want_fn)
    assert got[0] == want[0], (got, want)
    if want[0] == "raise":
        assert got[1] is want[1], (got, want)
        return
    assert got[1].dtype == want[1].dtype, (got, want)
    np.testing.assert_array_equal(got[1], want[1])


def test_preset_members_match_jax():
    assert [p.name for p in lax.DotAlgorithmPreset] == [p.name for p in jax.lax.DotAlgorithmPreset]
    assert lax.DotAlgorithm._fields == jax.lax.DotAlgorithm._fields


_CASES = [
    (np.float32, None),
    (np.float16, None),
    (np.int32, None),
    (np.int8, np.int8),  # an algorithm lifts the width check of preferred_element_type
    (np.int32, np.int8),
]


@pytest.mark.parametrize("preset", [p.name for p in jax.lax.DotAlgorithmPreset])
def test_each_preset_as_jax_on_cpu(backend, preset):
    for dtype, preferred in _CASES:
        x, y = _X.astype(dtype), _Y.astype(dtype)
        kw = {"preferred_element_type": preferred}
        _same(
            lambda x=x, y=y, kw=kw: lax.dot(rnp.asarray(x), rnp.asarray(y), precision=preset, **kw),
            lambda x=x, y=y, kw=kw: jax.lax.dot(x, y, precision=preset, **kw),
        )
    # the enum member and jit
    member = getattr(lax.DotAlgorithmPreset, preset)
    _same(
        lambda: ri.jit(lambda a, b: lax.dot(a, b, precision=member))(_X, _Y),
        lambda: jax.jit(lambda a, b: jax.lax.dot(a, b, precision=preset))(_X, _Y),
    )


def test_explicit_algorithm_is_refused_on_cpu_when_run(backend):
    algorithm = lax.DotAlgorithm(np.float32, np.float32, np.float32)
    with pytest.raises(ValueError, match="not supported by dot_general on CPU"):
        lax.dot(rnp.asarray(_X), rnp.asarray(_Y), precision=algorithm)
    with pytest.raises(ValueError, match="not supported by dot_general on CPU"):
        ri.jit(lambda a, b: lax.dot(a, b, precision=algorithm))(_X, _Y)
    # tracing alone accepts it, as JAX's make_jaxpr
    ri.make_jaxpr(lambda a, b: lax.dot(a, b, precision=algorithm))(_X, _Y)


def test_grad_and_vmap_keep_the_preset(backend):
    def f(lax_mod, a):
        return lax_mod.dot(a, _Y, precision="F16_F16_F16").sum()

    _same(lambda: ri.grad(lambda a: f(lax, a))(_X), lambda: jax.grad(lambda a: f(jax.lax, a))(_X))
    _same(
        lambda: ri.vmap(lambda a: lax.dot(a, _Y, precision="F16_F16_F16"))(_X),
        lambda: jax.vmap(lambda a: jax.lax.dot(a, _Y, precision="F16_F16_F16"))(_X),
    )


_PRECISIONS = [
    "highest", "float32", "high", "bfloat16_3x", "tensorfloat32", "default", "bfloat16",
    "fastest", "HIGHEST", "f16_f16_f16", "bogus", ("high", "fastest"), ("HIGH", "x"),
    (jax.lax.Precision.HIGH, jax.lax.Precision.DEFAULT), (jax.lax.Precision.HIGH, "fastest"),
    jax.lax.Precision.HIGHEST, (None, None),
]  # fmt: skip


@pytest.mark.parametrize("precision", _PRECISIONS, ids=str)
def test_precision_forms_as_jax(backend, precision):
    _same(
        lambda: lax.dot(rnp.asarray(_X), rnp.asarray(_Y), precision=precision),
        lambda: jax.lax.dot(_X, _Y, precision=precision),
    )


def test_jnp_matmul_and_dot_take_a_preset(backend):
    _same(
        lambda: rnp.matmul(_X, _Y, precision="F16_F16_F16"),
        lambda: jax.numpy.matmul(_X, _Y, precision="F16_F16_F16"),
    )
    _same(
        lambda: rnp.dot(_X, _Y, precision=lax.DotAlgorithmPreset.TF32_TF32_F32),
        lambda: jax.numpy.dot(_X, _Y, precision=jax.lax.DotAlgorithmPreset.TF32_TF32_F32),
    )


def _lowered_dots(text):
    """Each dot_general's algorithm attribute and types, and the converts
    around it (the lowering's decisions, without value names)."""
    out = []
    for line in text.splitlines():
        if "stablehlo.dot_general" in line:
            algorithm = (
                line[line.find("algorithm = <") :].split(">", 1)[0] if "algorithm" in line else ""
            )
            out.append(("dot_general", algorithm, line.rsplit(" : ", 1)[1]))
        elif "stablehlo.convert" in line:
            out.append(("convert", line.rsplit(" : ", 1)[1]))
    return out


_CPU_PRESETS = [
    "DEFAULT", "F16_F16_F16", "F32_F32_F32", "BF16_BF16_F32", "BF16_BF16_F32_X3",
    "BF16_BF16_F32_X6",
]  # fmt: skip


@pytest.mark.parametrize("preset", _CPU_PRESETS)
def test_lowered_dot_carries_jaxs_algorithm(backend, preset):
    """jit(dot).lower(...).as_text(): a CPU preset's dot_general carries JAX's
    ``algorithm = <lhs_precision_type = ..., ...>`` with JAX's converts around
    it (lax_test's testDotAlgorithmConfig, by default_matmul_precision too);
    DEFAULT names none. Each compiled result is JAX's."""
    for dtype in (np.float32, np.float16, jax.numpy.bfloat16, np.int32):
        for x, y in [(_X, _Y), (_X[:, :1], _Y[:1]), (_X[None], _Y[None])]:
            x, y = x.astype(dtype), y.astype(dtype)
            fn = "dot" if x.ndim == 2 else "batch_matmul"
            ours = ri.jit(partial(getattr(lax, fn), precision=preset))
            theirs = jax.jit(partial(getattr(jax.lax, fn), precision=preset))
            want = _lowered_dots(theirs.lower(x, y).as_text())
            if preset != "DEFAULT":
                assert _lowered_dots(ours.lower(x, y).as_text()) == want
            _same(partial(ours, x, y), partial(theirs, x, y))
    if preset == "DEFAULT":
        return
    with jax.default_matmul_precision(preset), ri.default_matmul_precision(preset):
        x, y = _X, _Y
        want = _lowered_dots(jax.jit(jax.lax.dot).lower(x, y).as_text())
        assert _lowered_dots(ri.jit(lax.dot).lower(x, y).as_text()) == want
