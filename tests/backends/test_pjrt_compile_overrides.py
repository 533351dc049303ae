"""XLA debug options refimpl sets per program (runtime.compile_overrides).

Programs whose every reduction and contraction is small are compiled for CPU
with XLA's tree_reduction_rewriter pass off (fewer thunks, see
docs/semantics.md section 16). Oracles: the rule as documented (which modules
get the override), the compiled executable's own record of its options, and
JAX/NumPy for the values (the results must stay within float32 tolerance).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tests.helpers.pjrt_helpers import skip_without_pjrt

skip_without_pjrt()

import refimpl as ri  # noqa: E402
import refimpl.numpy as rnp  # noqa: E402
from refimpl.backends.pjrt import lowering, runtime  # noqa: E402

LIMIT = runtime.SINGLE_PASS_REDUCTION_LIMIT
EXACT = (runtime.EXACT_16BIT_OVERRIDE,)  # every program, every platform
OVERRIDE = (*EXACT, ("xla_disable_hlo_passes", "tree_reduction_rewriter"))


def _module(f, *args):
    from jaxlib.mlir import ir

    text = ri.jit(f, backend="pjrt").lower(*args).as_text()
    with lowering.mlir_context():
        return ir.Module.parse(text)


def _mlp_loss(np_):
    def loss(params, x, y):
        h = np_.tanh(x @ params["w1"] + params["b1"])
        return np_.mean((h @ params["w2"] + params["b2"] - y) ** 2)

    return loss


def _mlp_data(batch):
    rng = np.random.default_rng(0)
    params = {
        "w1": rng.normal(size=(8, 32)).astype(np.float32) * 0.3,
        "b1": rng.normal(size=32).astype(np.float32),
        "w2": rng.normal(size=(32, 1)).astype(np.float32) * 0.3,
        "b2": np.zeros(1, np.float32),
    }
    x = rng.normal(size=(batch, 8)).astype(np.float32)
    y = rng.normal(size=(batch, 1)).astype(np.float32)
    return params, x, y


@pytest.mark.parametrize(
    ("f", "shape", "small"),
    [
        (lambda a: rnp.sum(a), (LIMIT,), True),
        (lambda a: rnp.sum(a), (LIMIT + 1,), False),
        (lambda a: rnp.sum(a, axis=0), (LIMIT, 1000), True),  # 128 terms per output
        (lambda a: rnp.max(a, axis=1), (3, LIMIT + 1), False),
        (lambda a: a @ a.T, (4, LIMIT), True),
        (lambda a: a @ a.T, (4, LIMIT + 1), False),
        (lambda a: a * 2.0 + 1.0, (16,), False),  # nothing combined: defaults
    ],
)
def test_which_programs_get_the_override(f, shape, small):
    module = _module(f, np.ones(shape, np.float32))
    assert runtime.compile_overrides(module, "cpu") == (OVERRIDE if small else EXACT)


def test_a_large_reduction_in_a_sub_region_keeps_the_default():
    def f(a):
        return ri.lax.cond(a[0] > 0, lambda v: rnp.sum(v), lambda v: v[0], a)

    assert runtime.compile_overrides(_module(f, np.ones(500, np.float32)), "cpu") == EXACT
    assert runtime.compile_overrides(_module(f, np.ones(50, np.float32)), "cpu") == OVERRIDE


def test_other_platforms_get_only_the_16bit_override():
    module = _module(lambda a: rnp.sum(a), np.ones(8, np.float32))
    assert runtime.compile_overrides(module, "cuda") == EXACT
    assert runtime.compile_overrides(module, "tpu") == EXACT


def test_16bit_rounding_reaches_every_compiled_executable():
    # per-operation rounding of 16-bit floats whatever XLA_FLAGS says: the
    # executable records the option it was compiled with
    for n in (64, 4096):
        compiled = ri.jit(lambda a: a * a + a, backend="pjrt").lower(np.ones(n, np.float16))
        assert b"xla_allow_excess_precision" in compiled.compile()._executable().serialize()
    from refimpl.transforms import pmap as pmap_module

    module = _module(lambda a: rnp.sum(a), np.ones(4096, np.float32))
    assert b"xla_allow_excess_precision" in pmap_module._compile_options([0, 1], module)


def test_the_override_reaches_the_compiled_executable():
    # The CPU plugin serializes an executable with the compile options it was built with.
    small = ri.jit(lambda a: rnp.sum(a), backend="pjrt").lower(np.ones(64, np.float32)).compile()
    large = ri.jit(lambda a: rnp.sum(a), backend="pjrt").lower(np.ones(4096, np.float32)).compile()
    assert b"tree_reduction_rewriter" in small._executable().serialize()
    assert b"tree_reduction_rewriter" not in large._executable().serialize()


@pytest.mark.parametrize("n", [33, 64, 100, LIMIT])
def test_single_pass_sums_match_jax_and_numpy(n):
    rng = np.random.default_rng(n)
    x = rng.normal(size=(n, 3)).astype(np.float32)
    got = np.asarray(ri.jit(lambda a: rnp.sum(a, axis=0), backend="pjrt")(x))
    want = np.asarray(jax.jit(lambda a: jnp.sum(a, axis=0))(x))
    exact = x.astype(np.float64).sum(axis=0)
    scale = np.abs(x).astype(np.float64).sum(axis=0)
    np.testing.assert_allclose(got, want, rtol=0, atol=float(scale.max()) * 2e-6)
    assert np.all(np.abs(got - exact) <= scale * n * 2.0**-24)


@pytest.mark.parametrize("batch", [64, 100])
def test_grad_of_an_mlp_matches_jax(batch):
    params, x, y = _mlp_data(batch)
    got = ri.jit(ri.grad(_mlp_loss(rnp)), backend="pjrt")(params, x, y)
    want = jax.jit(jax.grad(_mlp_loss(jnp)))(params, x, y)
    for key in params:
        np.testing.assert_allclose(
            np.asarray(got[key]), np.asarray(want[key]), rtol=2e-5, atol=2e-6
        )


def test_pmap_executables_get_the_same_override():
    from refimpl.transforms import pmap as pmap_module

    small = _module(lambda a: rnp.sum(a), np.ones(64, np.float32))
    large = _module(lambda a: rnp.sum(a), np.ones(4096, np.float32))
    assert b"tree_reduction_rewriter" in pmap_module._compile_options([0, 1], small)
    assert b"tree_reduction_rewriter" not in pmap_module._compile_options([0, 1], large)
    # and the values stay within float32 rounding of JAX's split reduction
    x = np.random.default_rng(1).normal(size=(2, 100)).astype(np.float32)
    got = np.asarray(
        ri.pmap(lambda a: rnp.sum(a), backend="pjrt", devices=ri.devices("pjrt")[:2])(x)
    )
    exact = x.astype(np.float64).sum(axis=1)
    scale = np.abs(x).astype(np.float64).sum(axis=1)
    assert np.all(np.abs(got - exact) <= scale * 100 * 2.0**-24)
