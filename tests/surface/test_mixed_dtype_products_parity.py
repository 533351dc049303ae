"""Products of two operands of different dtypes, as JAX 0.10.2 (issue 29,
lane DOT; lax_numpy_test.py's testMixedPrecisionDot).

``jnp.dot``/``matmul``/``einsum``/``tensordot``/``inner``/``vdot`` of an
``int8`` and a ``float32`` array is ONE ``dot_general`` taking both dtypes,
with ``preferred_element_type`` the promoted type -- not a
``convert_element_type`` of one operand and then the product. Compared with
JAX live: the jaxpr's text; values (dtype, weak type, bits) on both backends,
eager and under jit; the cotangents' dtypes and values; and the pjrt
lowering of a product whose result type differs from its operands' one.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp

LIBS = {"jax": (jax, jnp), "ri": (ri, rnp)}
BF16 = np.dtype(ml_dtypes.bfloat16)

# (lhs dtype, rhs dtype): each pair of distinct dtypes JAX's test sweeps a few of
PAIRS = [
    ("int8", "float32"),
    ("float16", "float32"),
    (BF16, "float32"),
    ("uint8", "int8"),
    ("int8", "int32"),
    ("int32", "float16"),
    ("float32", "complex64"),
    ("bool", "float32"),
]

# name -> (program(np_, a, b), lhs shape, rhs shape)
PRODUCTS = {
    "dot_vv": (lambda np_, a, b: np_.dot(a, b), (5,), (5,)),
    "dot_mv": (lambda np_, a, b: np_.dot(a, b), (2, 5), (5,)),
    "matmul_mm": (lambda np_, a, b: np_.matmul(a, b), (2, 5), (5, 3)),
    "einsum_mm": (lambda np_, a, b: np_.einsum("ij,jk->ik", a, b), (2, 5), (5, 3)),
    "einsum_summed": (lambda np_, a, b: np_.einsum("ij,jk->k", a, b), (2, 5), (5, 3)),
    "tensordot": (lambda np_, a, b: np_.tensordot(a, b, 1), (2, 5), (5, 3)),
    "inner": (lambda np_, a, b: np_.inner(a, b), (2, 5), (3, 5)),
    "vdot": (lambda np_, a, b: np_.vdot(a, b), (2, 5), (2, 5)),
}


def _name(dtype) -> str:
    return np.dtype(dtype).name


CASES = [
    pytest.param(product, lhs, rhs, id=f"{product}-{_name(lhs)}-{_name(rhs)}")
    for product in PRODUCTS
    for lhs, rhs in PAIRS
]


def _jaxpr_text(lib, np_, product, lhs, rhs) -> str:
    program, lhs_shape, rhs_shape = PRODUCTS[product]
    specs = (lib.ShapeDtypeStruct(lhs_shape, lhs), lib.ShapeDtypeStruct(rhs_shape, rhs))
    return str(lib.make_jaxpr(lambda a, b: program(np_, a, b))(*specs))


@pytest.mark.parametrize(("product", "lhs", "rhs"), CASES)
def test_one_dot_general_taking_both_dtypes(product, lhs, rhs):
    want = _jaxpr_text(*LIBS["jax"], product, lhs, rhs)
    assert "dot_general" in want
    assert _jaxpr_text(*LIBS["ri"], product, lhs, rhs) == want


def test_dot_with_a_python_scalar_is_a_dot_general_then_weak():
    # jnp.dot(int8[5], 2.0): dot_general contracting nothing into float32,
    # then a convert to the weakly typed result (JAX 0.10.2)
    def text(lib, np_):
        spec = lib.ShapeDtypeStruct((5,), np.int8)
        return str(lib.make_jaxpr(lambda a: np_.dot(a, 2.0))(spec))

    assert text(*LIBS["ri"]) == text(*LIBS["jax"])


def _operand(dtype, shape, rng):
    """Small integers (every product and sum exact in each dtype here)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(dtype)
    low = 0 if dtype.kind in "ub" else -4
    values = rng.integers(low, 5, shape)
    if dtype.kind == "c":
        return (values + 1j * rng.integers(-4, 5, shape)).astype(dtype)
    return values.astype(dtype)


def _bits_equal(got, want) -> None:
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.aval.weak_type == want.aval.weak_type
    assert got.shape == want.shape
    assert np.asarray(got).tobytes() == np.asarray(want).tobytes(), (got, want)


@pytest.mark.parametrize(("product", "lhs", "rhs"), CASES)
def test_values_bit_equal(backend, product, lhs, rhs):
    program, lhs_shape, rhs_shape = PRODUCTS[product]
    rng = np.random.default_rng(0)
    a, b = _operand(lhs, lhs_shape, rng), _operand(rhs, rhs_shape, rng)
    want = program(jnp, a, b)
    _bits_equal(program(rnp, a, b), want)
    _bits_equal(ri.jit(lambda a, b: program(rnp, a, b))(a, b), want)


def test_int8_einsum_operand_summed_in_the_result_type(backend):
    # einsum("ij,jk->k", int8, float32) sums the int8 operand's i axis as
    # float32 (JAX converts it first); summed in int8 it would wrap
    a = np.full((4, 2), 100, np.int8)
    b = np.ones((2, 3), np.float32)
    want = jnp.einsum("ij,jk->k", a, b)
    _bits_equal(rnp.einsum("ij,jk->k", a, b), want)


def test_inner_of_a_scalar_takes_preferred_element_type(backend):
    a, b = np.int8(100), np.array([2, 3], np.int8)
    want = jnp.inner(a, b, preferred_element_type=np.int32)
    _bits_equal(rnp.inner(a, b, preferred_element_type=np.int32), want)


# --- lax.dot_general itself, and its transformations -------------------------------------------

DIMS = (((1,), (0,)), ((), ()))


@pytest.mark.parametrize(
    ("lhs", "rhs", "preferred"),
    [
        ("float16", "float32", None),
        (BF16, "float32", None),
        ("int8", "float32", None),
        ("uint8", "int8", None),
        ("int8", "int8", "float32"),
        ("int8", "int8", "int32"),
        ("float16", "float16", "float32"),
        (BF16, BF16, "float32"),
        ("float32", "float32", BF16),
    ],
    ids=lambda x: "none" if x is None else _name(x),
)
def test_lax_dot_general_pjrt_jit_bit_equal(lhs, rhs, preferred):
    """Random operands (float sums in some order): pjrt's compiled product is
    JAX's to the bit, as XLA's CPU backend sums it the same way for the same
    program. A result type other than the operands' one is one dot_general
    into it, as JAX lowers it (with converts first, bfloat16 x bfloat16 ->
    float32 differed from JAX in the last bits)."""
    ri.config.update("backend", "pjrt")  # (conftest puts the backend back)
    rng = np.random.default_rng(1)

    def sample(dtype, shape):
        dtype = np.dtype(dtype)
        if dtype.kind in "iu":
            return rng.integers(0 if dtype.kind == "u" else -100, 100, shape).astype(dtype)
        return (rng.standard_normal(shape) * 30).astype(dtype)

    a, b = sample(lhs, (16, 64)), sample(rhs, (64, 8))

    def program(lib):
        return lib.jit(
            lambda a, b: lib.lax.dot_general(a, b, DIMS, preferred_element_type=preferred)
        )

    _bits_equal(program(ri)(a, b), program(jax)(a, b))


def _body(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if "stablehlo.dot_general" in line]


@pytest.mark.parametrize(
    ("lhs", "preferred"), [("int8", "float32"), ("float16", "float32"), (BF16, "float32")]
)
def test_widening_product_lowers_to_one_dot_general(lhs, preferred):
    """The operands go to stablehlo.dot_general in their own type, the result
    in the preferred one (JAX's line, but for its ``precision = [DEFAULT,
    DEFAULT]``, which refimpl's lowering does not spell)."""
    ri.config.update("backend", "pjrt")  # (conftest puts the backend back)
    a, b = np.zeros((2, 3), lhs), np.zeros((3, 4), lhs)

    def lowered(lib):
        f = lib.jit(lambda a, b: lib.lax.dot_general(a, b, DIMS, preferred_element_type=preferred))
        return f.lower(a, b).as_text()

    want = [line.replace(", precision = [DEFAULT, DEFAULT]", "") for line in _body(lowered(jax))]
    assert _body(lowered(ri)) == want


GRAD_CASES = [
    ("float16", "float32", None),
    (BF16, "float32", None),
    ("float32", "float32", BF16),
    (BF16, BF16, "float32"),
]


@pytest.mark.parametrize(("lhs", "rhs", "preferred"), GRAD_CASES, ids=str)
def test_cotangents_each_in_its_operands_dtype(backend, lhs, rhs, preferred):
    """The transpose rule forms each cotangent's product with the primal's
    preferred_element_type (as JAX), then converts it to that operand's
    dtype: for float32 x float32 -> bfloat16 the products are bfloat16's."""
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((3, 4)) * 3).astype(lhs)
    w = (rng.standard_normal((4, 2)) * 3).astype(rhs)
    ct = (rng.standard_normal((3, 2)) * 3).astype(preferred or np.result_type(x, w))

    def program(lib):
        def f(x, w):
            return lib.lax.dot_general(x, w, DIMS, preferred_element_type=preferred)

        _, pullback = lib.vjp(f, x, w)
        return pullback(ct)

    for got, want in zip(program(ri), program(jax), strict=True):
        assert got.dtype == want.dtype
        np.testing.assert_allclose(
            np.asarray(got, np.float32), np.asarray(want, np.float32), rtol=1e-2
        )


def test_float32_product_into_bfloat16_cotangent_rounds_like_jax(backend):
    """float32 x float32 -> bfloat16: the cotangent of x is ct @ w formed in
    bfloat16 (w rounded to bfloat16 first), as JAX; formed in float32 it
    keeps w's low bits."""
    x = np.ones((1, 2), np.float32)
    w = np.array([[1.0 + 2.0**-12], [3.0]], np.float32)
    ct = np.ones((1, 1), BF16)

    def program(lib):
        f = lambda x: lib.lax.dot_general(x, w, DIMS, preferred_element_type=BF16)  # noqa: E731
        return lib.vjp(f, x)[1](ct)[0]

    _bits_equal(program(ri), program(jax))


def test_vmap_of_a_mixed_product(backend):
    rng = np.random.default_rng(3)
    a, b = _operand("int8", (4, 5), rng), _operand("float32", (4, 5), rng)
    _bits_equal(ri.vmap(rnp.dot)(a, b), jax.vmap(jnp.dot)(a, b))
