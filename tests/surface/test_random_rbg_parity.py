"""The ``rbg`` and ``unsafe_rbg`` PRNG implementations (JAX 0.10.2 names;
refimpl had only threefry2x32): typed keys over ``uint32[..., 4]`` key data,
seeding, ``split``, ``fold_in``, ``bits`` (``lax.rng_bit_generator``, XLA's
CPU Philox) and the samplers on top of them, bit for bit against JAX on both
backends, eagerly, under jit and vmap, and through the structural array
functions."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
import refimpl.random as rr

IMPLS = ["rbg", "unsafe_rbg"]


def _same(got, want):
    """Bits and integers exactly; floats within a few ulps (the samplers' float
    math is XLA's on pjrt, NumPy's on ref)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    if np.issubdtype(got.dtype, np.floating):
        np.testing.assert_allclose(got, want, rtol=4 * np.finfo(got.dtype).eps)
    else:
        np.testing.assert_array_equal(got, want)


def _data(keys, module):
    return module.key_data(keys)


@pytest.mark.parametrize("impl", IMPLS)
def test_keys_split_and_fold_in_match_jax(backend, impl):
    for seed in (0, 42, -7, 2**40):
        got_key, want_key = rr.key(seed, impl=impl), jax.random.key(seed, impl=impl)
        assert str(got_key.dtype) == str(want_key.dtype)
        assert rr.key_impl(got_key) == jax.random.key_impl(want_key) == impl
        _same(_data(got_key, rr), _data(want_key, jax.random))
        _same(rr.PRNGKey(seed, impl=impl), jax.random.PRNGKey(seed, impl=impl))
        for num in (2, 3, (2, 3)):
            _same(
                _data(rr.split(got_key, num), rr),
                _data(jax.random.split(want_key, num), jax.random),
            )
        for data in (0, 7, 2**31 + 5):
            _same(
                _data(rr.fold_in(got_key, data), rr),
                _data(jax.random.fold_in(want_key, data), jax.random),
            )


_SAMPLERS = {
    "bits32": lambda R, k: R.bits(k, (5,)),
    "bits8": lambda R, k: R.bits(k, (2, 3), np.uint8),
    "uniform": lambda R, k: R.uniform(k, (3, 2)),
    "normal": lambda R, k: R.normal(k, (4,)),
    "randint": lambda R, k: R.randint(k, (5,), 0, 100),
    "bernoulli": lambda R, k: R.bernoulli(k, 0.3, (6,)),
    "gamma": lambda R, k: R.gamma(k, 2.5, (3,)),
    "permutation": lambda R, k: R.permutation(k, 7),
    "choice": lambda R, k: R.choice(k, 10, (3,), replace=False),
    "categorical": lambda R, k: R.categorical(k, np.log(np.array([0.2, 0.3, 0.5], np.float32))),
    "truncated_normal": lambda R, k: R.truncated_normal(k, -1.0, 1.0, (3,)),
}


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("name", list(_SAMPLERS))
def test_samplers_match_jax(backend, impl, name):
    sampler = _SAMPLERS[name]
    got = sampler(rr, rr.key(3, impl=impl))
    want = sampler(jax.random, jax.random.key(3, impl=impl))
    _same(got, want)


@pytest.mark.parametrize("impl", IMPLS)
def test_jit_and_vmap_match_jax(backend, impl):
    got_keys, want_keys = (
        rr.split(rr.key(5, impl=impl), 3),
        jax.random.split(jax.random.key(5, impl=impl), 3),
    )
    _same(
        ri.jit(lambda k: rr.uniform(k, (2,)))(got_keys[0]),
        jax.jit(lambda k: jax.random.uniform(k, (2,)))(want_keys[0]),
    )
    # vmap of rng_bit_generator draws every row from the first key (JAX's rule)
    _same(
        ri.vmap(lambda k: rr.bits(k, (2,)))(got_keys),
        jax.vmap(lambda k: jax.random.bits(k, (2,)))(want_keys),
    )
    _same(
        _data(ri.vmap(lambda k: rr.split(k))(got_keys), rr),
        _data(jax.vmap(lambda k: jax.random.split(k))(want_keys), jax.random),
    )


@pytest.mark.parametrize("impl", IMPLS)
def test_structural_functions_keep_the_implementation(backend, impl):
    got, want = rr.split(rr.key(1, impl=impl), 4), jax.random.split(jax.random.key(1, impl=impl), 4)
    programs = [
        lambda np_, k: np_.stack([k[0], k[1]]),
        lambda np_, k: np_.concatenate([k, k]),
        lambda np_, k: k.reshape(2, 2)[1],
        lambda np_, k: np_.broadcast_to(k[0], (3,)),
        lambda np_, k: k[::-1],
    ]
    for program in programs:
        g, w = program(rnp, got), program(jax.numpy, want)
        assert str(g.dtype) == str(w.dtype) and g.shape == w.shape
        _same(_data(g, rr), _data(w, jax.random))
        _same(rr.uniform(g.ravel()[-1]), jax.random.uniform(w.ravel()[-1]))


@pytest.mark.parametrize("impl", IMPLS)
def test_wrap_key_data_and_key_dtype(backend, impl):
    words = np.arange(8, dtype=np.uint32).reshape(2, 4)
    got, want = rr.wrap_key_data(words, impl=impl), jax.random.wrap_key_data(words, impl=impl)
    assert str(got.dtype) == str(want.dtype) == str(rr.key_dtype(impl))
    _same(rr.bits(got[1], (3,)), jax.random.bits(want[1], (3,)))
    with pytest.raises(TypeError):
        rr.wrap_key_data(np.zeros(2, np.uint32), impl=impl)


def test_a_raw_four_word_key_is_not_a_default_key(backend):
    with pytest.raises(TypeError):
        jax.random.bits(np.zeros(4, np.uint32), (2,))
    with pytest.raises(TypeError):
        rr.bits(rnp.zeros(4, np.uint32), (2,))


@pytest.mark.parametrize("impl", IMPLS)
def test_default_prng_impl_as_jax(backend, impl):
    def program(api):
        raw = api.random.PRNGKey(9)
        return (
            str(api.random.key(9).dtype),
            api.random.key_impl(raw),
            np.asarray(raw),
            np.asarray(api.random.bits(raw, (3,))),
            np.asarray(api.random.split(raw)),
            np.asarray(api.random.fold_in(raw, 4)),
        )

    with ri.default_prng_impl(impl):
        got = program(ri)
    with jax.default_prng_impl(impl):
        want = program(jax)
    assert got[:2] == want[:2]
    for g, w in zip(got[2:], want[2:], strict=True):
        _same(g, w)
    assert ri.config.default_prng_impl == "threefry2x32"  # restored
    with ri.default_prng_impl("philox4x32"):  # JAX 0.10.2's other impls are refimpl's too
        assert str(ri.random.key(0).dtype) == "key<phx4>"
    with pytest.raises(ValueError):
        ri.default_prng_impl("bogus").__enter__()


_GAMMA_UNDER_VMAP = {
    "gamma_batched_alpha": lambda L, k: L.vmap(lambda a: L.random.gamma(k, a, (3,)))(
        L.numpy.array([0.5, 1.0, 2.0])
    ),
    "loggamma_jit": lambda L, k: L.jit(L.vmap(lambda a: L.random.loggamma(k, a, (2,))))(
        L.numpy.array([0.5, 2.0])
    ),
    "gamma_same_alpha": lambda L, k: L.vmap(lambda a: L.random.gamma(k, a))(L.numpy.ones(2)),
    "beta": lambda L, k: L.vmap(lambda a: L.random.beta(k, a, 2.0))(L.numpy.array([0.5, 1.0])),
    "dirichlet": lambda L, k: L.vmap(lambda a: L.random.dirichlet(k, a))(
        L.numpy.array([[0.5, 1.0], [2.0, 3.0]])
    ),
    "keys_and_alphas": lambda L, k: L.vmap(lambda kk, a: L.random.gamma(kk, a))(
        L.random.split(k, 3), L.numpy.array([0.5, 1.0, 3.0])
    ),
}


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("program", list(_GAMMA_UNDER_VMAP), ids=list(_GAMMA_UNDER_VMAP))
def test_gamma_under_vmap_draws_as_jax(backend, impl, program):
    # JAX's random_gamma_p batching rule runs its loop over the batch's samples
    # (and splits the batch's keys under vmap first), so a batch element with
    # an unbatched key draws what it would alone (unsafe_rbg: the keys its
    # batched split gives); refimpl batched the loop, whose rng_bit_generator
    # drew every row from the first key (random_lax_test's testIssue1789 on
    # the RBG classes)
    def run(lib):
        with lib.default_prng_impl(impl):
            return _GAMMA_UNDER_VMAP[program](lib, lib.random.PRNGKey(0))

    _same(run(ri), run(jax))
