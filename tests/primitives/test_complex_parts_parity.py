"""The complex parts (``real``, ``imag``, ``conj``, ``complex``) and the
functions built on them, on complex values with infinite, NaN and signed-zero
parts, against JAX 0.10.2 on both backends: a part never leaks into the other
(``imag(nan + inf j)`` is ``inf``), and the linear rules (jvp, vjp with JAX's
weak types, vmap) match JAX's."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.lax as rlax
import refimpl.numpy as rnp
from conformance.corpus._tables import complex_pairs
from tests.helpers.parity import assert_same_as_jax

_PARTS = [0.0, -0.0, 1.5, np.inf, -np.inf, np.nan]


def _grid(dtype) -> np.ndarray:
    return complex_pairs(_PARTS, dtype)


def _assert_exact(got, want) -> None:
    """Same dtype, weak type and values: NaN where JAX has NaN, and the sign of
    every zero and infinity."""
    got_leaves, want_leaves = jax.tree.leaves(got), jax.tree.leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves, strict=True):
        assert (g.shape, g.dtype, g.aval.weak_type) == (w.shape, w.dtype, w.aval.weak_type)
        g, w = np.asarray(g), np.asarray(w)
        parts = [(g.real, w.real), (g.imag, w.imag)] if g.dtype.kind == "c" else [(g, w)]
        for gp, wp in parts:
            np.testing.assert_array_equal(gp, wp)
            if gp.dtype.kind == "f":
                np.testing.assert_array_equal(np.signbit(gp), np.signbit(wp))


# (refimpl function, JAX function) of the complex grid
_EXACT = {
    "lax.real": (rlax.real, jax.lax.real),
    "lax.imag": (rlax.imag, jax.lax.imag),
    "lax.conj": (rlax.conj, jax.lax.conj),
    "lax.complex": (
        lambda z: rlax.complex(rlax.real(z), rlax.imag(z)),
        lambda z: jax.lax.complex(jax.lax.real(z), jax.lax.imag(z)),
    ),
    "jnp.real": (rnp.real, jnp.real),
    "jnp.imag": (rnp.imag, jnp.imag),
    "jnp.conjugate": (rnp.conjugate, jnp.conjugate),
    "Array.real": (lambda z: z.real, lambda z: z.real),
    "Array.imag": (lambda z: z.imag, lambda z: z.imag),
    "Array.conj": (lambda z: rnp.asarray(z).conj(), lambda z: jnp.asarray(z).conj()),
    "jnp.nan_to_num": (rnp.nan_to_num, jnp.nan_to_num),
    "jnp.isinf": (rnp.isinf, jnp.isinf),
    "jnp.isnan": (rnp.isnan, jnp.isnan),
    "jnp.isfinite": (rnp.isfinite, jnp.isfinite),
    "jnp.isreal": (rnp.isreal, jnp.isreal),
    "jnp.iscomplex": (rnp.iscomplex, jnp.iscomplex),
    "jnp.round": (rnp.round, jnp.round),
    "jnp.abs": (rnp.abs, jnp.abs),
    "jnp.sign": (rnp.sign, jnp.sign),
}


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("name", sorted(_EXACT))
def test_nonfinite_parts_match_jax(backend, name, jit):
    ours, theirs = _EXACT[name]
    z = _grid(np.complex64)
    fn = ri.jit(ours) if jit else ours
    _assert_exact(fn(rnp.asarray(z)), theirs(jnp.asarray(z)))


@pytest.mark.parametrize("name", ["lax.imag", "lax.conj", "lax.complex", "jnp.nan_to_num"])
def test_nonfinite_parts_match_jax_complex128(backend, x64, name):
    ours, theirs = _EXACT[name]
    z = _grid(np.complex128)
    _assert_exact(ri.jit(ours)(rnp.asarray(z)), theirs(jnp.asarray(z)))


@pytest.mark.parametrize(
    "dtype", ["float16", "bfloat16", "float32", "float64", "int32", "uint8", "bool", "complex64"]
)
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_conj_accepts_the_dtypes_jax_does(backend, dtype, jit):
    # JAX 0.10.2's lax.conj takes float32, float64 (each becomes complex) and complex
    # types; float16 and bfloat16 have no complex type: a TypeError, as integers
    x = np.ones(3, jnp.dtype(dtype))
    try:
        want = jax.lax.conj(jnp.asarray(x))
    except TypeError:
        with pytest.raises(TypeError, match=f"conj does not accept dtype {dtype}"):
            (ri.jit(rlax.conj) if jit else rlax.conj)(rnp.asarray(x))
        return
    _assert_exact((ri.jit(rlax.conj) if jit else rlax.conj)(rnp.asarray(x)), want)


def test_angle_matches_jax(backend):
    # atan2 of the parts: the values agree to rounding, NaN and the signs exactly
    z = _grid(np.complex64)
    got, want = np.asarray(rnp.angle(rnp.asarray(z))), np.asarray(jnp.angle(jnp.asarray(z)))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_weak_parts_keep_weak_type(backend):
    _assert_exact(rlax.real(1.5 + 2j), jax.lax.real(1.5 + 2j))
    _assert_exact(rlax.imag(1.5 + 2j), jax.lax.imag(1.5 + 2j))
    _assert_exact(rlax.conj(1.5 + 2j), jax.lax.conj(1.5 + 2j))
    _assert_exact(rlax.complex(1.5, -0.0), jax.lax.complex(1.5, -0.0))
    _assert_exact(rlax.complex(np.float32(1.5), 2.0), jax.lax.complex(np.float32(1.5), 2.0))


_LINEAR = {
    "real": (rlax.real, jax.lax.real),
    "imag": (rlax.imag, jax.lax.imag),
    "conj": (rlax.conj, jax.lax.conj),
}


@pytest.mark.parametrize("weak", [False, True], ids=["strong", "weak"])
@pytest.mark.parametrize("name", sorted(_LINEAR))
def test_unary_jvp_vjp_match_jax(backend, name, weak):
    ours, theirs = _LINEAR[name]
    x = (1.5 - 2j) if weak else np.complex64(1.5 - 2j)
    t = (0.25 + 3j) if weak else np.complex64(0.25 + 3j)
    assert_same_as_jax(ri.jvp(ours, (x,), (t,)), jax.jvp(theirs, (x,), (t,)))
    out, pullback = ri.vjp(ours, x)
    want_out, want_pullback = jax.vjp(theirs, x)
    assert_same_as_jax(out, want_out)
    scale = (2 - 1j) if name == "conj" else 2.0  # (a Python scalar: a weak ct stays weak)
    # (the cotangent of a weak input is strong for real and imag, as JAX's)
    assert_same_as_jax(pullback(out * scale), want_pullback(want_out * scale))


@pytest.mark.parametrize("weak", [False, True], ids=["strong", "weak"])
def test_complex_jvp_vjp_match_jax(backend, weak):
    x, y = (1.5, -2.0) if weak else (np.float32(1.5), np.float32(-2.0))
    tx, ty = (0.5, 3.0) if weak else (np.float32(0.5), np.float32(3.0))
    assert_same_as_jax(
        ri.jvp(rlax.complex, (x, y), (tx, ty)), jax.jvp(jax.lax.complex, (x, y), (tx, ty))
    )
    out, pullback = ri.vjp(rlax.complex, x, y)
    want_out, want_pullback = jax.vjp(jax.lax.complex, x, y)
    assert_same_as_jax(pullback(out * (0.5 - 4j)), want_pullback(want_out * (0.5 - 4j)))


def test_grad_through_parts_of_nonfinite(backend):
    """The cotangent of ``imag`` is ``complex(0, -ct)``: built part by part, so
    it has no NaN even where the primal has infinite parts."""

    def ours(z):
        return rnp.sum(rlax.imag(z) * 2.0 + rlax.real(rlax.conj(z)))

    def theirs(z):
        return jnp.sum(jax.lax.imag(z) * 2.0 + jax.lax.real(jax.lax.conj(z)))

    z = _grid(np.complex64)
    got = ri.grad(lambda z: ours(z), holomorphic=False)(rnp.asarray(z))
    _assert_exact(got, jax.grad(theirs)(jnp.asarray(z)))


def test_vmap_matches_jax(backend):
    z = _grid(np.complex64).reshape(6, 6)
    re = np.ascontiguousarray(z.real)

    def ours(a, b):
        return rlax.conj(rlax.complex(rlax.imag(a), b))

    def theirs(a, b):
        return jax.lax.conj(jax.lax.complex(jax.lax.imag(a), b))

    got = ri.vmap(ours, in_axes=(0, 1))(rnp.asarray(z), rnp.asarray(re))
    _assert_exact(got, jax.vmap(theirs, in_axes=(0, 1))(jnp.asarray(z), jnp.asarray(re)))


def test_complex_broadcasts_rank0(backend):
    x = np.array([0.0, np.inf, np.nan], np.float32)
    _assert_exact(rlax.complex(x, np.float32(-0.0)), jax.lax.complex(x, np.float32(-0.0)))
    _assert_exact(
        ri.jit(rlax.complex)(np.float32(np.inf), x), jax.lax.complex(np.float32(np.inf), x)
    )


def test_bad_operands_are_named(x64):
    with pytest.raises(TypeError, match="imag does not accept dtype float32"):
        rlax.imag(np.float32(1))
    with pytest.raises(TypeError, match="complex: x must be float32 or float64, got int32"):
        rlax.complex(np.int32(1), np.int32(2))
    with pytest.raises(TypeError, match="complex requires arguments to have the same dtypes"):
        rlax.complex(np.float32(1), np.float64(2))


# --- functions JAX writes over the parts ----------------------------------------------------


@pytest.mark.parametrize("name", ["log2", "log10"])
def test_log_in_base_divides_each_part(backend, name):
    """JAX divides log(z)'s two parts by the real log(base): log2(0) is
    -inf + 0j (a complex division would make the imaginary part NaN). Values
    with a NaN and an infinite part are left out: they test log itself."""
    z = _grid(np.complex64)
    keep = ~(np.isnan(z.real) & np.isinf(z.imag)) & ~(np.isinf(z.real) & np.isnan(z.imag))
    z = z[keep]
    ours, theirs = getattr(rnp, name), getattr(jnp, name)
    got, want = ours(rnp.asarray(z)), theirs(jnp.asarray(z))
    assert (got.dtype, got.aval.weak_type) == (want.dtype, want.aval.weak_type)
    for g, w in [(got.real, want.real), (got.imag, want.imag)]:
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)
    # a Python scalar gives a strong result: log(base) is a strong constant in JAX
    assert_same_as_jax(ours(2.0), theirs(2.0))
    assert_same_as_jax(ours(1 + 1j), theirs(1 + 1j))


@pytest.mark.parametrize("name", ["fmax", "fmin"])
def test_fmax_fmin_match_jax(backend, name):
    """JAX's ``where((x1 > x2) | isnan(x2), x1, x2)``: complex ordered by real
    part then imaginary part, NaN in either part counting as NaN; for floats
    the tie of 0 and -0 gives x2."""
    z = _grid(np.complex64)
    ours, theirs = getattr(rnp, name), getattr(jnp, name)
    _assert_exact(ours(z, z[::-1]), theirs(z, z[::-1]))
    _assert_exact(ri.jit(ours)(z[::-1], z), theirs(z[::-1], z))
    x = np.array([0.0, -0.0, np.nan, 1.0, np.nan], np.float32)
    y = np.array([-0.0, 0.0, 1.0, np.nan, np.nan], np.float32)
    _assert_exact(ours(x, y), theirs(x, y))


# --- complex functions at infinities and NaN ------------------------------------------------

_FUNCTIONS = ["exp", "expm1", "log", "log1p", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh",
              "arcsin", "arccos", "arcsinh"]  # fmt: skip


def _assert_close_nonfinite(got, want, rtol):
    """NaN, infinities and their signs exactly; finite parts within ``rtol``."""
    assert (got.dtype, got.aval.weak_type) == (want.dtype, want.aval.weak_type)
    for g, w in [(np.asarray(got).real, np.asarray(want).real),
                 (np.asarray(got).imag, np.asarray(want).imag)]:  # fmt: skip
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        np.testing.assert_array_equal(np.isinf(g) * np.sign(g), np.isinf(w) * np.sign(w))
        finite = np.isfinite(w)
        np.testing.assert_allclose(g[finite], w[finite], rtol=rtol, atol=1e-30)


@pytest.mark.parametrize("name", _FUNCTIONS)
def test_complex_functions_at_nonfinite_parts(backend, name):
    """XLA's complex formulas, not C99's special values: sin(inf + 0j) is
    nan + nan j (NumPy: nan + 0j), exp(-inf + inf j) is nan + nan j (NumPy:
    0), sqrt(-1.5 - 0j) is +1.22j (NumPy: -1.22j); on the imaginary axis
    sin(0 + inf j) is 0 + inf j (XLA's own complex sine: nan + inf j)."""
    parts = [0.0, -0.0, 1.5, -1.5, np.inf, -np.inf, np.nan]
    z = complex_pairs(parts, np.complex64)
    ours, theirs = getattr(rnp, name), getattr(jnp, name)
    want = theirs(jnp.asarray(z))
    _assert_close_nonfinite(ours(rnp.asarray(z)), want, rtol=2e-6)
    _assert_close_nonfinite(ri.jit(ours)(z), want, rtol=2e-6)


def test_complex_division_and_powers_at_nonfinite_parts(backend):
    """XLA's complex division (Smith's algorithm, then C99 Annex G's recovery
    where both parts are NaN: 0 / (inf + inf j) is 0, 1 / (-0 + 0j) is
    -inf + nan j; NumPy gives NaN) and integer powers as repeated products
    (square(0 + inf j) is -inf + nan j, not a product with 1)."""
    parts = [0.0, -0.0, 1.5, -1.5, 3e38, np.inf, -np.inf, np.nan]
    z = complex_pairs(parts, np.complex64)
    x, y = np.repeat(z, len(z)), np.tile(z, len(z))
    _assert_close_nonfinite(rnp.divide(x, y), jnp.divide(x, y), rtol=1e-6)
    for ours, theirs in [
        (rnp.reciprocal, jnp.reciprocal),
        (rnp.square, jnp.square),
        (lambda v: rlax.integer_pow(v, 3), lambda v: jax.lax.integer_pow(v, 3)),
        (lambda v: rlax.integer_pow(v, -2), lambda v: jax.lax.integer_pow(v, -2)),
    ]:
        _assert_close_nonfinite(ours(z), theirs(z), rtol=1e-6)
        _assert_close_nonfinite(ri.jit(ours)(z), theirs(z), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.uint8, np.bool_])
def test_sort_complex_dtype_follows_input_width(backend, x64, dtype):
    """JAX's to_complex_dtype: complex64 for 32-bit and narrower input, even
    with x64 on; complex128 for 64-bit input."""
    a = np.array([3, 1, 2], dtype)
    _assert_exact(rnp.sort_complex(a), jnp.sort_complex(a))


@pytest.mark.parametrize("value", [2.0, np.inf, complex(np.nan, np.inf), 1 + 2j, 3])
def test_isinf_of_python_scalars_is_strong(backend, value):
    """JAX compares with a strongly typed infinity (and or-s the parts of a
    complex), so isinf of a Python float or complex is a strong bool."""
    _assert_exact(rnp.isinf(value), jnp.isinf(value))
    _assert_exact(ri.jit(rnp.isinf)(value), jnp.isinf(value))


@pytest.mark.parametrize("name", ["isreal", "iscomplex", "signbit", "isposinf", "isneginf"])
@pytest.mark.parametrize("value", [2.0, -3, -np.inf, np.float32(2), np.int32(-3)])
def test_predicates_of_python_scalars_weak_as_jax(backend, name, value):
    """isreal/iscomplex of a weak real input are weak (JAX's imag(x) == 0 keeps
    it); signbit of an int and isposinf/isneginf compare with strong constants."""
    ours, theirs = getattr(rnp, name), getattr(jnp, name)
    _assert_exact(ours(value), theirs(value))
    _assert_exact(ri.jit(ours)(value), theirs(value))
