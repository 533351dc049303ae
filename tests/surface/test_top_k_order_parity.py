"""``lax.top_k``'s float order (IEEE totalOrder: ``0.0`` above ``-0.0``, NaNs
beyond the infinities by sign and payload) and the functions built on it
(``approx_max_k``, ``jnp.partition``/``argpartition``), compared with JAX
0.10.2 bit for bit on both backends, eagerly and under jit."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import lax

_SPECIALS = np.array([0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 1.0, -1.0])


def _same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes(), (got, want)


def _draw(rng, dtype, shape):
    return rng.choice(_SPECIALS, shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, jnp.bfloat16])
@pytest.mark.parametrize("use_jit", [False, True])
def test_top_k_total_order(backend, dtype, use_jit):
    rng = np.random.default_rng(0)

    def run(x, k):
        fn = lambda x: lax.top_k(x, k)  # noqa: E731
        return (ri.jit(fn) if use_jit else fn)(x)

    cases = [np.array([[-0.0, 0.0, -0.0, 0.0]], dtype)]
    cases.append(np.array([[-np.nan, -np.inf, np.nan]], dtype))
    cases += [_draw(rng, dtype, (2, int(rng.integers(1, 8)))) for _ in range(12)]
    for x in cases:
        for k in sorted({0, 1, x.shape[-1] // 2, x.shape[-1]}):
            want = jax.lax.top_k(x, k)
            got = run(x, k)
            _same_bits(got[0], want[0])
            _same_bits(got[1], want[1])


def test_top_k_nan_payloads_and_complex(backend):
    bits = np.array([0x7FC00000, 0x7FC00001, 0x7FC00002, 0xFFC00001, 0xFFC00000], np.uint32)
    x = bits.view(np.float32)
    for fn in (lambda x: lax.top_k(x, 5), ri.jit(lambda x: lax.top_k(x, 5))):
        _same_bits(fn(x)[1], jax.lax.top_k(x, 5)[1])
    with pytest.raises(ValueError, match="top_k"):  # as JAX: no order on complex numbers
        lax.top_k(np.array([1 + 1j, 2], np.complex64), 1)
    with pytest.raises(ValueError):
        jax.lax.top_k(np.array([1 + 1j, 2], np.complex64), 1)


@pytest.mark.parametrize("use_jit", [False, True])
def test_approx_max_k_order_without_nan(backend, use_jit):
    """k below the dimension: top_k's totalOrder; k equal to it: a sort with -0.0 == 0.0."""
    rng = np.random.default_rng(1)
    specials = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf], np.float32)
    for _ in range(30):
        n = int(rng.integers(2, 7))
        x = rng.choice(specials, (2, n)).astype(np.float32)
        for k in (2, n):
            fn = lambda x, k=k: lax.approx_max_k(x, k)  # noqa: E731
            got = (ri.jit(fn) if use_jit else fn)(x)
            want = jax.lax.approx_max_k(x, k)
            _same_bits(got[0], want[0])
            _same_bits(got[1], want[1])


@pytest.mark.parametrize("name", ["partition", "argpartition"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_partition_float_order(backend, name, dtype):
    rng = np.random.default_rng(2)
    cases = [(np.array([0.0, -0.0, 1.0, -0.0, 0.0], dtype), 2, -1)]
    for t in range(16):
        n = int(rng.integers(1, 7))
        shape, axis = ((2, n), -1) if t % 2 else ((n, 3), 0)
        cases.append((_draw(rng, dtype, shape), int(rng.integers(0, n)), axis))
    for x, kth, axis in cases:
        want = getattr(jnp, name)(x, kth, axis=axis)
        _same_bits(getattr(rnp, name)(x, kth, axis=axis), want)
        _same_bits(ri.jit(lambda x, k=kth, a=axis: getattr(rnp, name)(x, k, axis=a))(x), want)


def _top_k_lines(text):
    return [line.split(" = ", 1)[1] for line in text.splitlines() if "chlo.top_k" in line]


@pytest.mark.parametrize(
    "dtype", [np.float32, np.float16, jnp.bfloat16, np.int8, np.int32, np.uint32, np.bool_]
)
def test_top_k_lowers_to_chlo_top_k(backend, dtype):
    """As JAX's, top_k lowers to ``chlo.top_k(%x, k = k)`` (lax_test's
    CompositeTest.test_composite_with_attributes looks for it), and the
    compiled values (ties, signed zeros, NaNs) are JAX's bit for bit."""
    rng = np.random.default_rng(1)
    if np.dtype(dtype).kind in "iu":
        x = rng.integers(0, 4, (3, 9)).astype(dtype) * (np.iinfo(dtype).max // 4)
    elif np.dtype(dtype).kind == "b":
        x = rng.random((3, 9)) < 0.5
    else:
        x = _draw(rng, dtype, (3, 9))
    for k in (0, 1, 4, 9):
        want = jax.jit(lambda v, k=k: jax.lax.top_k(v, k))
        got = ri.jit(lambda v, k=k: lax.top_k(v, k))
        assert _top_k_lines(got.lower(x).as_text()) == _top_k_lines(want.lower(x).as_text())
        for g, w in zip(got(x), want(x), strict=True):
            _same_bits(g, w)
