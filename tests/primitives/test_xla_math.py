"""The reference's float32 transcendental functions against XLA CPU, bit for bit.

``refimpl.primitives.xla_math`` reproduces XLA CPU's approximations; the
reference interpreter's ``exp``, ``log``, ``log1p``, ``expm1``, ``tanh``,
``logistic``, ``erf``, ``erf_inv``, ``tan`` and ``pow`` (glibc's ``tanf`` and
``powf``, which XLA calls) use them for float32 (float16 and bfloat16 through
float32).
Oracles: real JAX (jaxlib's XLA CPU client) and the PJRT plugin the pjrt
backend loads; the exact fused multiply-add is checked against exact
rational arithmetic.
"""

from __future__ import annotations

from fractions import Fraction

import jax
import jax.lax as jlax
import ml_dtypes
import numpy as np
import pytest

import refimpl as ri
from refimpl import lax
from refimpl.primitives import special, xla_math
from tests.helpers.pjrt_helpers import skip_without_pjrt

F32 = np.float32
NAMES = ["exp", "log", "log1p", "expm1", "tanh", "logistic", "erf", "erf_inv", "tan"]


def ours(name):
    return special.erf_inv if name == "erf_inv" else getattr(lax, name)


def theirs(name):
    return getattr(jlax, name)


def float32_inputs(n: int, seed: int = 0) -> np.ndarray:
    """Random bit patterns (every exponent, subnormals, NaNs, both signs), the
    ranges the samplers use, and the special values."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32).view(F32)
    specials = np.array(
        [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 1e-45, -1e-45, 1e-39,
         -1e-39, 1.1754944e-38, 88.72, 88.8, -87.3, -88.0, -104.0, 7.9988117, 20.0, -20.0,
         0.0004, 3.832507, 0.41421357, -0.41421357, 0.99999994, -0.99999994],
        F32,
    )  # fmt: skip
    return np.concatenate(
        [
            bits,
            rng.uniform(-100, 100, n).astype(F32),
            rng.uniform(-1, 1, n).astype(F32),
            rng.uniform(-1e-3, 1e-3, n // 4).astype(F32),
            rng.uniform(0, 1, n // 4).astype(F32),
            rng.uniform(-1e4, 1e4, n // 4).astype(F32),
            specials,
        ]
    )


def assert_bits_equal(got, want, x) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    view = {2: np.uint16, 4: np.uint32}[got.dtype.itemsize]
    both_nan = np.isnan(got.astype(F32)) & np.isnan(want.astype(F32))
    bad = (got.view(view) != want.view(view)) & ~both_nan
    assert not bad.any(), (
        f"{int(bad.sum())} of {got.size} differ: x={x[bad][:4]} got={got[bad][:4]} "
        f"want={want[bad][:4]}"
    )


@pytest.mark.parametrize("name", NAMES)
def test_float32_equals_jax(name):
    x = float32_inputs(40000)
    assert_bits_equal(ours(name)(x), jax.jit(theirs(name))(x), x)


@pytest.mark.parametrize("name", NAMES)
def test_float32_equals_pjrt(name):
    skip_without_pjrt()
    x = float32_inputs(20000, seed=1)
    assert_bits_equal(ours(name)(x), ri.jit(ours(name), backend="pjrt")(x), x)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_float32_millions_equal_jax(name):
    x = float32_inputs(1 << 20, seed=2)
    assert_bits_equal(ours(name)(x), jax.jit(theirs(name))(x), x)


# JAX gives XLA float16 (and bfloat16 for logistic) HLO, which XLA rounds to
# the 16-bit type after each step of these expansions; refimpl computes the
# whole function in float32 and rounds once (on both backends).
_JAX_ROUNDS_EACH_STEP = {("expm1", "float16"), ("logistic", "float16"), ("logistic", "bfloat16")}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", NAMES)
def test_16_bit_floats_exhaustively(name, dtype):
    """Every float16/bfloat16 value: float32 and one rounding, as the pjrt
    backend's lowering, and as JAX except where JAX rounds each step."""
    skip_without_pjrt()
    dt = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(np.float16)
    x = np.arange(1 << 16, dtype=np.uint16).view(dt)
    got = ours(name)(x)
    assert_bits_equal(got, ri.jit(ours(name), backend="pjrt")(x), x)
    if (name, dtype) not in _JAX_ROUNDS_EACH_STEP:
        assert_bits_equal(got, jax.jit(theirs(name))(x), x)


def test_flushes_subnormals_like_xla():
    """XLA's kernels run with DAZ/FTZ: subnormal operands read as zero, subnormal
    results become zero; selects pass them through (tanh of a tiny x is x)."""
    tiny = np.array([1e-40, -1e-40], F32)
    np.testing.assert_array_equal(np.asarray(lax.log(tiny)), [-np.inf, -np.inf])  # log(+-0)
    np.testing.assert_array_equal(np.asarray(lax.exp(np.array([-87.5], F32))), [0.0])
    assert np.asarray(lax.tanh(tiny)).view(np.uint32).tolist() == tiny.view(np.uint32).tolist()
    assert_bits_equal(lax.log(tiny), jax.jit(jlax.log)(tiny), tiny)


def _correctly_rounded(exact: Fraction, candidate: np.float32) -> bool:
    """Whether ``candidate`` is the float32 nearest to ``exact`` (ties to even)."""
    below = np.nextafter(candidate, F32(-np.inf))
    above = np.nextafter(candidate, F32(np.inf))
    d = abs(Fraction(float(candidate)) - exact)
    for other in (below, above):
        d_other = abs(Fraction(float(other)) - exact)
        if d_other < d:
            return False
        if d_other == d and int(np.asarray(candidate).view(np.uint32)) & 1:
            return False
    return True


def test_fma_rounds_once():
    rng = np.random.default_rng(3)
    a = rng.standard_normal(300).astype(F32)
    b = rng.standard_normal(300).astype(F32)
    # c cancels most of a*b, so the float64 sum is inexact (the hard cases)
    c = (-(a.astype(np.float64) * b) * (1 + rng.standard_normal(300) * 1e-6)).astype(F32)
    # a*b exactly halfway between two float32 values, pushed off by a tiny c:
    # rounding the float64 sum to float32 would round twice and tie to even
    half_way = F32(1 + 2**-12)
    a = np.concatenate([a, [half_way, half_way, -half_way]]).astype(F32)
    b = np.concatenate([b, [half_way, half_way, half_way]]).astype(F32)
    c = np.concatenate([c, [2**-60, -(2**-60), 2**-60]]).astype(F32)
    got = xla_math.fma(a, b, c)
    for ai, bi, ci, gi in zip(a, b, c, got, strict=True):
        exact = Fraction(float(ai)) * Fraction(float(bi)) + Fraction(float(ci))
        assert _correctly_rounded(exact, gi), (ai, bi, ci, gi)
    assert got[-3] == np.nextafter(F32(1 + 2**-11), F32(2))  # up, not to even
    assert got[-2] == F32(1 + 2**-11)


def test_rejects_non_float32():
    with pytest.raises(TypeError, match="xla_math: expected a float32 array, got float64"):
        xla_math.exp(np.ones(2))


def test_float64_stays_numpy():
    from refimpl.primitives import elementwise

    x = np.linspace(-3, 3, 101)
    np.testing.assert_array_equal(elementwise.exp_p.impl(x), np.exp(x))
    np.testing.assert_array_equal(elementwise.tanh_p.impl(x), np.tanh(x))


# --- pow: glibc's powf ------------------------------------------------------------------


def pow_inputs(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (x, y): random bit patterns for both, the samplers' ranges
    (``u ** (1 / c)``), x near 1 with large |y|, negative x with integer y,
    and the special values against each other."""
    rng = np.random.default_rng(seed)

    def bits(size):
        return rng.integers(0, 2**32, size, dtype=np.uint64).astype(np.uint32).view(F32)

    specials = np.array(
        [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -2.0, 2.0, 1e-40, -1e-40, 3.0],
        F32,
    )
    sx, sy = (a.ravel() for a in np.meshgrid(specials, specials))
    xs = [
        bits(n),
        rng.random(n, dtype=F32),
        (1 + rng.standard_normal(n) * 1e-3).astype(F32),
        -rng.uniform(0.1, 10, n).astype(F32),
        rng.integers(0x00800000, 0x7F800000, n, dtype=np.uint32).view(F32),
        sx,
    ]
    ys = [
        bits(n),
        (1 / rng.uniform(0.05, 5, n)).astype(F32),
        rng.uniform(-2000, 2000, n).astype(F32),
        rng.integers(-40, 40, n).astype(F32),
        rng.uniform(-3, 3, n).astype(F32),
        sy,
    ]
    return np.concatenate(xs), np.concatenate(ys)


def test_pow_equals_pjrt_and_jax():
    skip_without_pjrt()
    x, y = pow_inputs(20000, seed=4)
    got = lax.pow(x, y)
    assert_bits_equal(got, ri.jit(lax.pow, backend="pjrt")(x, y), x)
    assert_bits_equal(got, jax.jit(jlax.pow)(x, y), x)


@pytest.mark.slow
def test_pow_millions_equal_pjrt():
    """Measured: 5 million pairs bit-equal (pow_inputs(1 << 20))."""
    skip_without_pjrt()
    x, y = pow_inputs(1 << 20, seed=5)
    assert_bits_equal(lax.pow(x, y), ri.jit(lax.pow, backend="pjrt")(x, y), x)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_pow_16_bit_floats(dtype):
    """float32 powf and one rounding, as XLA."""
    skip_without_pjrt()
    dt = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(np.float16)
    rng = np.random.default_rng(6)
    x = rng.integers(0, 1 << 16, 50000, dtype=np.uint16).view(dt)
    y = rng.uniform(-4, 4, 50000).astype(dt)
    with np.errstate(over="ignore"):
        got = lax.pow(x, y)
    assert_bits_equal(got, ri.jit(lax.pow, backend="pjrt")(x, y), x)
    assert_bits_equal(got, jax.jit(jlax.pow)(x, y), x)


def test_fma64_rounds_once():
    rng = np.random.default_rng(7)
    a = rng.standard_normal(400) * np.exp2(rng.integers(-30, 30, 400))
    b = rng.standard_normal(400)
    c = np.where(np.arange(400) % 2 == 0, -(a * b) * (1 + rng.standard_normal(400) * 1e-9), b)
    got = xla_math.fma64(a, b, c)
    for ai, bi, ci, gi in zip(a, b, c, got, strict=True):
        # float(Fraction) rounds correctly (to nearest, ties to even)
        assert float(Fraction(ai) * Fraction(bi) + Fraction(ci)) == gi, (ai, bi, ci)
