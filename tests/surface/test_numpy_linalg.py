"""``rnp.dot``, ``rnp.matmul`` and ``rnp.einsum`` against NumPy (values, shapes)
and ``jax.numpy`` (result dtype and weak type; values where integer wrap-around
or bool logic matter). Each runs eagerly and under ``ri.jit``."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import refimpl as ri
import refimpl.numpy as rnp

jax.config.update("jax_platforms", "cpu")

BF16 = np.dtype(ml_dtypes.bfloat16)


def random(shape, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype) == bool:
        return rng.random(shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-5, 6, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def both(fn, *args):
    """``fn`` eagerly and under jit (the array arguments traced)."""
    return fn(*args), ri.jit(fn)(*args)


def assert_values(ours, expected, rtol=1e-5):
    assert isinstance(ours, ri.Array)
    expected = np.asarray(expected)
    assert ours.shape == expected.shape, (ours.shape, expected.shape)
    np.testing.assert_allclose(
        np.asarray(ours).astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=rtol
    )


def assert_values_like_jax(ours, wanted):
    """Exact for integer and bool dtypes (int8 wraps around exactly like XLA); for
    floats within 4 ulps of the dtype, relative to the largest result (a product
    of a few terms, summed in a wider type and rounded once on either side)."""
    ours, wanted = np.asarray(ours), np.asarray(wanted)
    assert ours.dtype == wanted.dtype and ours.shape == wanted.shape
    if wanted.dtype.kind in "biu":
        np.testing.assert_array_equal(ours, wanted)
        return
    eps = float(ml_dtypes.finfo(wanted.dtype).eps)
    scale = max(1.0, float(np.max(np.abs(wanted.astype(np.float64))))) if wanted.size else 1.0
    np.testing.assert_allclose(
        ours.astype(np.float64), wanted.astype(np.float64), rtol=4 * eps, atol=4 * eps * scale
    )


def assert_type_like_jax(ours, jnp_fn, *args):
    expected = jax.eval_shape(jnp_fn, *args)
    assert ours.dtype == expected.dtype, (ours.dtype, expected.dtype)
    assert ours.shape == expected.shape
    if expected.dtype != bool:
        assert ours.weak_type == expected.weak_type


# --- dot and matmul -----------------------------------------------------------------------

DOT_SHAPES = [
    ((), ()), ((), (3,)), ((2, 3), ()), ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)),
    ((2, 3), (3, 4)), ((2, 3, 4), (4,)), ((2, 3, 4), (5, 4, 6)), ((0, 3), (3, 2)),
    ((2, 0), (0, 3)), ((4,), (2, 4, 3)),
]  # fmt: skip
MATMUL_SHAPES = [
    ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((5, 2, 3), (3, 4)),
    ((2, 1, 3, 4), (5, 4, 2)), ((4,), (5, 4, 2)), ((5, 2, 4), (4,)), ((1, 2, 3), (7, 3, 2)),
    ((0, 2, 3), (3, 2)), ((2, 3), (3, 0)),
]  # fmt: skip


@pytest.mark.parametrize("name, shapes", [("dot", DOT_SHAPES), ("matmul", MATMUL_SHAPES)])
def test_products_match_numpy(name, shapes):
    for a_shape, b_shape in shapes:
        a, b = random(a_shape, seed=1), random(b_shape, seed=2)
        expected = getattr(np, name)(a.astype(np.float64), b.astype(np.float64))
        for ours in both(getattr(rnp, name), a, b):
            assert_values(ours, expected)
            assert_type_like_jax(ours, getattr(jnp, name), a, b)


def test_operator_matmul():
    a, b = random((2, 3)), random((3, 4))
    assert_values(rnp.asarray(a) @ b, a.astype(np.float64) @ b)
    assert_values(a @ rnp.asarray(b), a.astype(np.float64) @ b)
    assert_values(rnp.asarray(a).dot(b), a.astype(np.float64) @ b)


DTYPE_PAIRS = [
    (np.int8, np.int8), (bool, bool), (np.int8, np.float16), (np.uint8, np.int8),
    (BF16, np.float32), (np.float16, np.float16), (np.int32, np.float32), (np.int8, bool),
]  # fmt: skip


@pytest.mark.parametrize("name", ["dot", "matmul"])
def test_product_dtypes_like_jax(name):
    cases = [(random((3, 4), d1, 1), random((4, 2), d2, 2)) for d1, d2 in DTYPE_PAIRS]
    cases += [(random((3, 4), np.int8, 3) * np.int8(20), random((4,), np.int8, 4) * np.int8(20))]
    jnp_fn, rnp_fn = getattr(jnp, name), getattr(rnp, name)
    expected = jax.jit(lambda: [jnp_fn(a, b) for a, b in cases])()
    for (a, b), wanted in zip(cases, expected, strict=True):
        for ours in both(rnp_fn, a, b):
            assert ours.dtype == wanted.dtype and ours.weak_type == wanted.weak_type
            assert_values_like_jax(ours, wanted)
    # weak operands: Python scalars and weakly typed arrays
    weak = rnp.full((3,), 2.0)
    assert_type_like_jax(rnp_fn(weak, weak), jnp_fn, jnp.full((3,), 2.0), jnp.full((3,), 2.0))
    assert_type_like_jax(rnp_fn(weak, np.ones(3, np.int8)), jnp_fn, jnp.full((3,), 2.0),
                         np.ones(3, np.int8))  # fmt: skip
    assert_type_like_jax(rnp.dot(2.0, np.ones(3, np.int8)), jnp.dot, 2.0, np.ones(3, np.int8))


def test_preferred_element_type():
    a, b = random((3, 4), np.int8, 1), random((4, 2), np.int8, 2)
    for name in ("dot", "matmul"):
        ours = getattr(rnp, name)(a, b, preferred_element_type=np.int32)
        wanted = getattr(jnp, name)(a, b, preferred_element_type=jnp.int32)
        assert ours.dtype == wanted.dtype
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(wanted))
    ours = rnp.einsum("ij,jk", a, b, preferred_element_type=np.float32)
    assert ours.dtype == np.float32
    assert_values(ours, a.astype(np.float64) @ b)


@pytest.mark.parametrize(
    "fn, a_shape, b_shape, error",
    [
        (rnp.matmul, (3,), (), ValueError),
        (rnp.matmul, (2, 3), (2, 3), TypeError),
        (rnp.matmul, (2, 2, 3), (3, 3, 2), ValueError),
        (rnp.dot, (2, 3), (2, 3), TypeError),
        (rnp.dot, (3,), (4,), TypeError),
    ],
)
def test_product_errors(fn, a_shape, b_shape, error):
    with pytest.raises(error, match=fn.__name__):
        fn(np.ones(a_shape), np.ones(b_shape) if b_shape else 2.0)


# --- einsum ---------------------------------------------------------------------------------

EINSUMS = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]), ("ij,kj->ki", [(2, 3), (4, 3)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]), ("ij,jk,kl", [(2, 3), (3, 4), (4, 5)]),
    ("i,j", [(2,), (3,)]), ("i,i", [(3,), (3,)]), ("i,i->i", [(3,), (3,)]), ("ij->", [(2, 3)]),
    ("ij->ji", [(2, 3)]), ("ij", [(2, 3)]), ("ba", [(2, 3)]), ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]), ("iij,jk->ik", [(3, 3, 2), (2, 4)]), ("bij,bjk->bik", [(5, 2, 3), (5, 3, 4)]),
    ("bij,bjk->kb", [(5, 2, 3), (5, 3, 4)]), ("...ij,...jk->...ik", [(5, 2, 3), (3, 4)]),
    ("...ij,...jk", [(1, 2, 3), (7, 3, 4)]), ("i...,i...->...", [(3, 2), (3, 2)]),
    ("...,...", [(2,), ()]), ("ij,kl->ijkl", [(2, 3), (4, 5)]), ("ij,ij->", [(2, 3), (2, 3)]),
    ("ab,bc,cd,de->ae", [(2, 3), (3, 2), (2, 4), (4, 2)]), ("i,->i", [(3,), ()]),
    ("ij,jk->ik", [(2, 0), (0, 3)]), ("i j , j k -> i k", [(2, 3), (3, 4)]),
]  # fmt: skip


@pytest.mark.parametrize("subscripts, shapes", EINSUMS, ids=[e[0] for e in EINSUMS])
def test_einsum_matches_numpy(subscripts, shapes):
    operands = [random(s, seed=i) for i, s in enumerate(shapes)]
    expected = np.einsum(subscripts, *[x.astype(np.float64) for x in operands])
    for ours in both(lambda *xs: rnp.einsum(subscripts, *xs), *operands):
        assert_values(ours, expected)
        assert_type_like_jax(ours, lambda *xs: jnp.einsum(subscripts, *xs), *operands)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_einsum_property(data):
    """Random specs: 1-3 operands over labels a-d (repeats allowed), explicit or
    implicit output."""
    sizes = dict(zip("abcd", data.draw(st.lists(st.integers(0, 3), min_size=4, max_size=4))))
    n_operands = data.draw(st.integers(1, 3))
    terms = [
        "".join(data.draw(st.lists(st.sampled_from("abcd"), min_size=0, max_size=3)))
        for _ in range(n_operands)
    ]
    used = sorted(set("".join(terms)))
    explicit = data.draw(st.booleans())
    if explicit:
        output = "".join(data.draw(st.permutations(used))[: data.draw(st.integers(0, len(used)))])
        subscripts = ",".join(terms) + "->" + output
    else:
        subscripts = ",".join(terms)
    operands = [random(tuple(sizes[c] for c in t), seed=i) for i, t in enumerate(terms)]
    expected = np.einsum(subscripts, *[x.astype(np.float64) for x in operands])
    assert_values(rnp.einsum(subscripts, *operands), expected)


def test_einsum_dtypes_like_jax():
    cases = [
        ("ij,jk", random((2, 3), np.int8), random((3, 2), np.int8)),
        ("ij,ij->ij", random((2, 3), bool), random((2, 3), bool, 1)),
        ("i,i", random((4,), bool), random((4,), bool, 1)),
        ("i->", random((4,), np.int8)),
        ("ij,jk", random((2, 3), np.int8), random((3, 2), np.float16)),
        ("ij,jk,kl->il", random((2, 3), np.int8), random((3, 2), np.float16),
         random((2, 5), np.float32)),
    ]  # fmt: skip
    expected = jax.jit(lambda: [jnp.einsum(s, *xs) for s, *xs in cases])()
    for (subscripts, *operands), wanted in zip(cases, expected, strict=True):
        ours = rnp.einsum(subscripts, *operands)
        assert ours.dtype == wanted.dtype and not ours.weak_type
        assert_values_like_jax(ours, wanted)
    weak = rnp.full((3,), 2.0)
    assert rnp.einsum("i,i", weak, weak).weak_type
    assert rnp.einsum("i->", weak).weak_type


@pytest.mark.parametrize(
    "subscripts, shapes, match",
    [
        ("ij,jk", [(2, 3), (4, 2)], "size of label"),
        ("ij,jk->ik", [(2, 3)], "subscript terms"),
        ("ij", [(2, 3, 4)], "3 dims"),
        ("ij->k", [(2, 3)], "does not occur"),
        ("ij->ii", [(2, 3)], "repeated"),
        ("i1", [(2, 3)], "invalid subscripts"),
        ("ii", [(2, 3)], "different sizes"),
        ("i->->i", [(2,)], "more than one"),
    ],
)
def test_einsum_errors(subscripts, shapes, match):
    with pytest.raises(ValueError, match=match):
        rnp.einsum(subscripts, *[np.ones(s) for s in shapes])


def test_einsum_bad_arguments():
    with pytest.raises(TypeError, match="subscripts"):
        rnp.einsum([0, 1], np.ones(2))
    with pytest.raises(TypeError, match="position 2"):
        rnp.einsum("i,i", np.ones(2), [1, 2])
