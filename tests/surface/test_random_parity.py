"""random behaviours of JAX 0.10.2 found by JAX's own random tests (issue 29,
class 6), each compared with JAX itself."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from refimpl.random import _keys


def _same(got, want):
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert np.asarray(got).dtype == np.asarray(want).dtype


@pytest.mark.parametrize(
    "seed", [2**31, 2**32 - 1, 2**32, 2**40, -1, -(2**31) - 1, 2**63 - 1, -(2**63), 12345]
)
def test_any_int64_seed_folds_as_jax(backend, seed):
    _same(ri.random.PRNGKey(seed), jax.random.PRNGKey(seed))
    _same(ri.random.key_data(ri.random.key(seed)), jax.random.key_data(jax.random.key(seed)))


def test_any_int64_seed_folds_as_jax_x64(x64):
    for seed in [2**40, -1, 2**63 - 1, -(2**63)]:
        _same(ri.random.PRNGKey(seed), jax.random.PRNGKey(seed))


@pytest.mark.parametrize("seed", [2**63, 2**64 - 1, -(2**63) - 1])
def test_seed_outside_int64_overflows(seed):
    with pytest.raises(OverflowError):
        jax.random.PRNGKey(seed)
    with pytest.raises(OverflowError):
        ri.random.PRNGKey(seed)


def test_typed_key_is_an_array():
    assert isinstance(jax.random.key(0), jax.Array)
    assert isinstance(ri.random.key(0), ri.Array)
    assert isinstance(ri.random.split(ri.random.key(0)), ri.Array)
    # still a pytree node whose leaf is its data
    assert len(ri.tree_util.tree_leaves(ri.random.key(0))) == 1


def test_jit_static_argnames_none(backend):
    assert float(ri.jit(lambda x: x + 1, static_argnames=None)(1.0)) == 2.0
    f = ri.jit(lambda x, n: x * n, static_argnums=1, static_argnames=None)
    assert float(f(2.0, 3)) == float(jax.jit(lambda x, n: x * n, static_argnums=1,
                                             static_argnames=None)(2.0, 3))  # fmt: skip


@pytest.mark.parametrize("dtype", [np.complex64, np.float32])
def test_orthogonal_complex(backend, dtype):
    for n, m in [(3, 3), (2, 4), (4, 2)]:
        want = jax.random.orthogonal(jax.random.PRNGKey(0), n, (2,), dtype=dtype, m=m)
        got = ri.random.orthogonal(ri.random.PRNGKey(0), n, (2,), dtype=dtype, m=m)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), atol=2e-5)


@pytest.mark.parametrize("mode", ["low", "high", "highest"])
def test_gumbel_and_categorical_modes(backend, mode):
    logits = np.log(np.array([0.1, 0.2, 0.3, 0.4], np.float32))
    _same(
        ri.random.gumbel(ri.random.PRNGKey(3), (64,), mode=mode),
        jax.random.gumbel(jax.random.PRNGKey(3), (64,), mode=mode),
    )
    _same(
        ri.random.categorical(ri.random.PRNGKey(1), logits, shape=(20,), mode=mode),
        jax.random.categorical(jax.random.PRNGKey(1), jnp.asarray(logits), shape=(20,), mode=mode),
    )
    _same(
        ri.random.categorical(ri.random.PRNGKey(2), logits, shape=(3,), replace=False, mode=mode),
        jax.random.categorical(
            jax.random.PRNGKey(2), jnp.asarray(logits), shape=(3,), replace=False, mode=mode
        ),
    )
    with pytest.raises(ValueError, match="valid mode"):
        ri.random.gumbel(ri.random.PRNGKey(3), (4,), mode="medium")


def test_gumbel_highest_float64(x64):
    # float64 "highest" is "high" (as JAX); the logs agree to the last bits
    np.testing.assert_allclose(
        np.asarray(ri.random.gumbel(ri.random.PRNGKey(3), (16,), np.float64, mode="highest")),
        np.asarray(jax.random.gumbel(jax.random.PRNGKey(3), (16,), np.float64, mode="highest")),
        rtol=1e-14,
    )


def test_eval_shape_more_than_2_32_elements():
    shape = (2**17, 2**16)
    want = jax.eval_shape(lambda k: jax.random.normal(k, shape), jax.random.PRNGKey(0))
    got = ri.eval_shape(lambda k: ri.random.normal(k, shape), ri.random.PRNGKey(0))
    assert got.shape == want.shape and got.dtype == want.dtype
    got = ri.eval_shape(lambda k: ri.random.bits(k, (3, 2**31)), ri.random.PRNGKey(0))
    assert got.shape == (3, 2**31)


def test_wide_counters_are_the_64_bit_row_major_index():
    # the >2**32-element path, checked on small shapes against the plain index
    for shape in [(3, 5), (7, 1, 4), (2, 3, 4, 5)]:
        high, low = _keys._iota_2x32_wide(shape)
        index = np.arange(np.prod(shape), dtype=np.uint64).reshape(shape)
        _same(high, (index >> np.uint64(32)).astype(np.uint32))
        _same(low, (index & np.uint64(0xFFFFFFFF)).astype(np.uint32))
    rng = np.random.default_rng(0)
    a = rng.integers(0, 2**32, 1000, dtype=np.uint64)
    for c in [0, 1, 0xFFFF, 0x10000, 2**31 + 12345, 2**32 - 1]:
        high, low = _keys._mul_u32(rnp.asarray(a.astype(np.uint32)), c)
        product = [int(v) * c for v in a]
        _same(high, np.array([p >> 32 for p in product], np.uint32))
        _same(low, np.array([p & 0xFFFFFFFF for p in product], np.uint32))


@pytest.mark.parametrize("impl", ["threefry2x32", "rbg"])
def test_rademacher_coin_is_a_default_float_uniform(backend, x64_mode, impl):
    # JAX's rademacher is bernoulli(key, 0.5): a uniform of the default float
    # dtype (float64 with x64), so the signs under x64 come from 64-bit draws
    # (refimpl drew float32 ones: other signs in rademacher, and through it in
    # double_sided_maxwell and generalized_normal)
    def draws(lib):
        key = lib.random.key(7, impl=impl)
        return [
            lib.random.rademacher(key, (64,)),
            lib.jit(lambda k: lib.random.rademacher(k, (64,), np.int32))(key),
            np.sign(lib.random.double_sided_maxwell(key, 0.0, 1.0, (64,))),
            np.sign(lib.random.generalized_normal(key, 1.5, (64,))),
        ]

    for got, want in zip(draws(ri), draws(jax), strict=True):
        _same(got, want)
