"""refimpl's PRNG implementations as JAX 0.10.2's implementation objects:
``jax.extend.random.threefry_prng_impl``, ``rbg_prng_impl`` and
``unsafe_rbg_prng_impl`` (key shape, name, tag; ``impl=`` takes them; their
functions on key data), a typed key's ``_impl`` (JAX's random_test compares
it with its registry's objects and reads its ``key_shape``), while
``random.key_impl`` gives the name, as JAX's public function. Compared with
JAX live on the ref and pjrt backends.
"""

from __future__ import annotations

import jax
import jax.extend.random as jer
import numpy as np
import pytest

import refimpl as ri
import refimpl.extend.random as rer

NAMES = ["threefry_prng_impl", "rbg_prng_impl", "unsafe_rbg_prng_impl"]


@pytest.mark.parametrize("name", NAMES)
def test_impl_object_describes_the_implementation(backend, name):
    ours, theirs = getattr(rer, name), getattr(jer, name)
    assert (ours.key_shape, ours.name, ours.tag) == (theirs.key_shape, theirs.name, theirs.tag)
    key, jkey = ri.random.key(7, impl=ours), jax.random.key(7, impl=theirs)
    assert str(key.dtype) == str(jkey.dtype)
    np.testing.assert_array_equal(ri.random.key_data(key), jax.random.key_data(jkey))
    # a key's implementation object is the registry's; key_impl is its name
    assert key._impl is ours and jkey._impl is theirs
    assert ri.random.key_impl(key) == jax.random.key_impl(jkey) == theirs.name
    # a raw (legacy) key's data has the object's key_shape
    raw = ri.random.PRNGKey(7, impl=theirs.name)
    assert raw.shape == ours.key_shape == jax.random.PRNGKey(7, impl=theirs.name).shape


@pytest.mark.parametrize("name", NAMES)
def test_impl_object_functions_on_key_data(backend, name):
    ours, theirs = getattr(rer, name), getattr(jer, name)
    data, jdata = ours.seed(np.int32(3)), theirs.seed(np.int32(3))
    np.testing.assert_array_equal(data, jdata)
    np.testing.assert_array_equal(ours.split(data, (2, 3)), theirs.split(jdata, (2, 3)))
    np.testing.assert_array_equal(
        ours.fold_in(data, np.uint32(5)), theirs.fold_in(jdata, np.uint32(5))
    )
    for width in (8, 32):
        np.testing.assert_array_equal(
            ours.random_bits(data, width, (4,)), theirs.random_bits(jdata, width, (4,))
        )


@pytest.mark.parametrize("op", ["eq", "ne"])
def test_scalar_key_compares_with_keys_under_rank_promotion_raise(backend, op):
    # random_test's JnpWithKeyArrayTest.test_equality under JaxTestCase's
    # jax_numpy_rank_promotion='raise': a scalar key against keys of shape (5,)
    # is allowed (the key shapes are () and (5,)), though the key data's are
    # (2,) and (5, 2)
    if not hasattr(ri, "numpy_rank_promotion"):
        pytest.skip("refimpl has no jax_numpy_rank_promotion flag here")

    def compare(random, rank_promotion):
        key = random.key(123)
        keys = random.split(key, 5)
        with rank_promotion("raise"):
            out = (key == keys, keys == key) if op == "eq" else (key != keys, keys != key)
        return [np.asarray(o) for o in out]

    got = compare(ri.random, ri.numpy_rank_promotion)
    want = compare(jax.random, jax.numpy_rank_promotion)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
