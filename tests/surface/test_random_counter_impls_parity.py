"""JAX 0.10.2's threefry4x32, philox2x32 and philox4x32 PRNG implementations
(``key(seed, impl=...)``, ``PRNGKey(seed, impl=...)``, ``default_prng_impl``),
bit for bit with JAX on both backends: the key data, split, fold_in, bits of
every width and the samplers built on them (refimpl/random/_keys.py)."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import refimpl as ri

IMPLS = ["threefry4x32", "philox2x32", "philox4x32"]


def _program(lib, impl, seed):
    r = lib.random
    k = r.key(seed, impl=impl)
    return {
        "dtype": str(k.dtype),
        "key": r.key_data(k),
        "raw": r.PRNGKey(seed, impl=impl),
        "split": r.key_data(r.split(k, 3)),
        "split_shape": r.key_data(r.split(k, (2, 2))),
        "fold_in": r.key_data(r.fold_in(k, 5)),
        "bits": r.bits(k, (2, 3)),
        "bits_scalar": r.bits(k),
        "bits8": r.bits(k, (5,), np.uint8),
        "bits16": r.bits(k, (5,), np.uint16),
        "uniform": r.uniform(k, (3,)),
        "normal": r.normal(k, (4,)),
        "randint": r.randint(k, (4,), 0, 100),
        "permutation": r.permutation(k, 6),
        "gamma": r.gamma(k, 2.0, (3,)),
    }


def _same(got, want):
    assert got.keys() == want.keys()
    for name in want:
        if name == "dtype":
            assert got[name] == want[name]
            continue
        g, w = np.asarray(got[name]), np.asarray(want[name])
        assert (g.shape, g.dtype) == (w.shape, w.dtype), name
        np.testing.assert_array_equal(g, w, err_msg=name)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("seed", [0, -3, 2**31 - 1])
def test_bits_and_samplers_as_jax(backend, impl, seed):
    _same(_program(ri, impl, seed), _program(jax, impl, seed))


@pytest.mark.parametrize("impl", IMPLS)
def test_64_bit_seeds_and_bits_as_jax(backend, x64, impl):
    for seed in (2**40 + 5, -(2**62)):
        got, want = [], []
        for lib, out in ((ri, got), (jax, want)):
            k = lib.random.key(seed, impl=impl)
            out += [
                lib.random.key_data(k),
                lib.random.bits(k, (3,), np.uint64),
                lib.random.key_data(lib.random.fold_in(k, 2**32 - 1)),
            ]
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
            assert np.asarray(g).dtype == np.asarray(w).dtype


@pytest.mark.parametrize("impl", IMPLS)
def test_default_impl_jit_and_vmap_over_keys_as_jax(backend, impl):
    def program(lib):
        keys = lib.random.split(lib.random.key(1), 4)
        return lib.jit(lib.vmap(lambda k: lib.random.uniform(k, (2,))))(keys)

    with ri.default_prng_impl(impl):
        got = program(ri)
    with jax.default_prng_impl(impl):
        want = program(jax)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert ri.config.default_prng_impl == "threefry2x32"


def test_key_dtypes_and_widths_as_jax():
    for impl in IMPLS:
        assert str(ri.random.key_dtype(impl)) == str(jax.random.key_dtype(impl))
        assert ri.random.key_impl(ri.random.key(0, impl=impl)) == impl
        width = np.shape(jax.random.key_data(jax.random.key(0, impl=impl)))
        assert np.shape(ri.random.key_data(ri.random.key(0, impl=impl))) == width
    with pytest.raises(ValueError):
        ri.random.key(0, impl="philox")  # JAX's names are philox2x32 / philox4x32
