"""Programs of JAX's tests/random_lax_test.py against JAX 0.10.2 (issue 29):
where refimpl.random differed in what runs or which exception is raised."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import refimpl as ri
from refimpl import random as rr


def _exception(f):
    try:
        f()
    except Exception as e:  # noqa: BLE001 (the type is the comparison)
        return type(e)
    return None


@pytest.mark.parametrize("axis", [3, 1, -2])
def test_permutation_of_a_range_checks_axis(backend, axis):
    want = _exception(lambda: jax.random.permutation(jax.random.PRNGKey(0), 10, axis=axis))
    assert want is ValueError
    assert _exception(lambda: rr.permutation(rr.PRNGKey(0), 10, axis=axis)) is ValueError


def test_permutation_of_a_range_with_axis_minus_one(backend):
    want = jax.random.permutation(jax.random.PRNGKey(0), 10, axis=-1)
    got = rr.permutation(rr.PRNGKey(0), 10, axis=-1)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_permutation_of_a_traced_range_is_a_concretization_error(backend):
    with pytest.raises(jax.errors.ConcretizationTypeError):
        jax.jit(jax.random.permutation)(jax.random.PRNGKey(0), 10)
    with pytest.raises(ri.errors.ConcretizationTypeError):
        ri.jit(rr.permutation)(rr.PRNGKey(0), 10)


@pytest.mark.parametrize(
    "name, value",
    [
        ("numpy_rank_promotion", "allow"),
        ("numpy_dtype_promotion", "standard"),
        ("default_matmul_precision", "float32"),
        ("debug_key_reuse", False),
        ("enable_checks", False),
        ("transfer_guard", "log"),
        ("default_prng_impl", "threefry2x32"),
        ("threefry_partitionable", True),
    ],
)
def test_jax_configuration_contexts_random_tests_use(name, value):
    # JAX's random tests decorate functions and classes with these; refimpl
    # accepts the values it behaves as (as contexts and as decorators)
    for lib in (jax, ri):
        context = getattr(lib, name)

        @context(value)
        def sample(lib=lib):
            return lib.random.uniform(lib.random.PRNGKey(0), (3,))

        with context(value):
            inside = sample()
        np.testing.assert_array_equal(np.asarray(inside), np.asarray(sample()))


@pytest.mark.parametrize(
    "name, value",
    [
        ("debug_key_reuse", True),
        ("threefry_partitionable", False),
    ],
)
def test_jax_configuration_values_refimpl_does_not_model_are_errors(name, value):
    with pytest.raises(NotImplementedError, match=name), getattr(ri, name)(value):
        pass


def test_axis_may_be_a_concrete_integer_array(backend):
    # random_lax_test's testCategoricalWithoutReplacement draws its axis with randint
    def program(lib):
        key = lib.random.key(0)
        logits = lib.random.normal(key, (8, 9))
        axis = lib.random.randint(key, (), -2, 2)
        x = lib.numpy.arange(12).reshape(3, 4)
        return [
            lib.random.categorical(key, logits, axis=axis, shape=(2, 8), replace=False),
            lib.random.categorical(key, logits, axis=lib.numpy.int32(0)),
            lib.random.choice(key, x, (2,), axis=lib.numpy.int32(1)),
            lib.random.permutation(key, x, axis=lib.numpy.int32(1)),
        ]

    for got, want in zip(program(ri), program(jax), strict=True):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_as_jax_config_of_the_prng_flags():
    from refimpl import as_jax

    cfg = as_jax._Config()
    cfg.update("jax_default_prng_impl", "threefry2x32")
    cfg.update("jax_enable_custom_prng", False)
    assert cfg.jax_default_prng_impl == jax.config.jax_default_prng_impl == "threefry2x32"
    cfg.update("jax_default_prng_impl", "rbg")
    try:
        assert ri.config.default_prng_impl == cfg.jax_default_prng_impl == "rbg"
    finally:
        cfg.update("jax_default_prng_impl", "threefry2x32")
    with pytest.raises(ValueError, match="default_prng_impl"):
        cfg.update("jax_default_prng_impl", "philox")  # JAX's names are philox2x32/4x32
    cfg.update("jax_legacy_prng_key", "warn")
    try:
        assert ri.config.legacy_prng_key == "warn"
    finally:
        cfg.update("jax_legacy_prng_key", "allow")


@pytest.mark.parametrize(
    "name",
    [
        "jax_debug_key_reuse",
        "jax_enable_custom_prng",
        "jax_threefry_partitionable",
        "jax_numpy_rank_promotion",
        "jax_numpy_dtype_promotion",
        "jax_default_matmul_precision",
        "jax_enable_checks",
        "jax_transfer_guard",
    ],
)
def test_as_jax_config_reads_the_flags_random_tests_skip_on(name):
    # random_test reads config.threefry_partitionable.value (and the others)
    # in skipIf at class definition: refimpl raised AttributeError for a flag
    # it never had set; the value read is JAX's default, the one refimpl follows
    from refimpl import as_jax

    assert getattr(as_jax._Config(), name) == getattr(jax.config, name)
