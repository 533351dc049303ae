"""``lax.rng_bit_generator`` against JAX 0.10.2 on CPU: the same bits and new
key for each algorithm, dtype and shape (XLA's Threefry and Philox expansions,
computed in NumPy on the reference backend), JAX's batching rule, and its
argument errors. Both backends, eagerly and under jit."""

from __future__ import annotations

import warnings

import jax
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import lax

_SHAPES = [(), (1,), (5,), (4,), (2, 3), (3, 3), (3, 5, 7), (7, 1), (0,), (6, 5)]
_DTYPES = [np.uint8, np.uint16, np.uint32]


def _keys():
    rng = np.random.RandomState(3)
    plain = rng.randint(0, 2**32, size=4, dtype=np.uint64).astype(np.uint32)
    carry = plain.copy()
    carry[2:] = 0xFFFFFFFF  # the counter wraps: Philox carries into its high half
    return [plain, carry]


@pytest.mark.parametrize("algorithm", [0, 1, 2])
@pytest.mark.parametrize("dtype", _DTYPES)
def test_bits_and_new_key_match_jax(backend, algorithm, dtype):
    for key in _keys():
        for shape in _SHAPES:
            want_key, want = jax.lax.rng_bit_generator(
                jax.numpy.asarray(key), shape, dtype, jax.lax.RandomAlgorithm(algorithm)
            )
            fns = [lax.rng_bit_generator]
            if shape in ((), (3, 5, 7)):  # each shape is a compilation on pjrt: a few suffice
                fns.append(ri.jit(lax.rng_bit_generator, static_argnums=(1, 2, 3)))
            for fn in fns:
                got_key, got = fn(rnp.asarray(key), shape, dtype, lax.RandomAlgorithm(algorithm))
                assert got.dtype == want.dtype and got.shape == want.shape, (shape, got, want)
                np.testing.assert_array_equal(np.asarray(got), np.asarray(want), err_msg=str(shape))
                np.testing.assert_array_equal(np.asarray(got_key), np.asarray(want_key))


@pytest.mark.parametrize("algorithm", [1, 2])
def test_uint64_bits_match_jax_with_x64(backend, algorithm):
    key = _keys()[1]
    with jax.enable_x64(True), ri.enable_x64(True):
        for shape in [(), (5,), (2, 3)]:
            want_key, want = jax.lax.rng_bit_generator(
                jax.numpy.asarray(key), shape, np.uint64, jax.lax.RandomAlgorithm(algorithm)
            )
            got_key, got = lax.rng_bit_generator(
                rnp.asarray(key), shape, np.uint64, lax.RandomAlgorithm(algorithm)
            )
            assert got.dtype == np.uint64
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
            np.testing.assert_array_equal(np.asarray(got_key), np.asarray(want_key))


def test_uint64_without_x64_is_uint32_with_a_warning(backend):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _, bits = lax.rng_bit_generator(rnp.zeros(4, np.uint32), (3,), np.uint64)
    assert bits.dtype == np.uint32
    assert any("uint64" in str(w.message) for w in caught)


def test_enum_values_match_jax():
    assert {a.name: int(a) for a in lax.RandomAlgorithm} == {
        a.name: int(a) for a in jax.lax.RandomAlgorithm
    }


@pytest.mark.parametrize("in_axes", [0, 1])
def test_vmap_draws_from_the_first_key_as_jax(backend, in_axes):
    keys = np.arange(12, dtype=np.uint32).reshape(3, 4)
    keys = keys if in_axes == 0 else keys.T
    want = jax.vmap(lambda k: jax.lax.rng_bit_generator(k, (2, 3)), in_axes=in_axes)(keys)
    got = ri.vmap(lambda k: lax.rng_bit_generator(k, (2, 3)), in_axes=in_axes)(rnp.asarray(keys))
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def test_bad_dtype_is_a_type_error(backend):
    for dtype in (np.int32, np.float32):
        with pytest.raises(TypeError, match="rng_bit_generator"):
            jax.lax.rng_bit_generator(jax.numpy.zeros(4, np.uint32), (3,), dtype)
        with pytest.raises(TypeError, match="rng_bit_generator"):
            lax.rng_bit_generator(rnp.zeros(4, np.uint32), (3,), dtype)


def test_gradient_through_the_bits_is_zero(backend):
    def f(x):
        return x * lax.rng_bit_generator(rnp.zeros(4, np.uint32), (3,))[1].astype(np.float32)

    def g(x):
        bits = jax.lax.rng_bit_generator(jax.numpy.zeros(4, np.uint32), (3,))[1]
        return x * bits.astype(np.float32)

    got = ri.grad(lambda x: f(x).sum())(1.0)
    want = jax.grad(lambda x: g(x).sum())(1.0)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
