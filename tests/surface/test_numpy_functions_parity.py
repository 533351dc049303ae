"""jax.numpy functions as JAX's tests/lax_numpy_test.py (testCumSumProd ...
testIsComplexObj) exercises them: ldexp's frexp split (extreme exponents stay
finite), polymul's trim_leading_zeros. Compared with JAX 0.10.2 on both
backends."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import jit as ri_jit


def _same(got, want, rtol=1e-6):
    got_leaves, want_leaves = jax.tree.leaves(got), jax.tree.leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves, strict=True):
        assert g.shape == w.shape, (g.shape, w.shape)
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        assert g.aval.weak_type == w.aval.weak_type
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64), rtol=rtol)


# --- ldexp -----------------------------------------------------------------------------------

_FLOATS = [np.float16, ml_dtypes.bfloat16, np.float32]


@pytest.mark.parametrize("dtype", _FLOATS)
def test_ldexp_extreme_exponents_stay_finite(backend, dtype):
    info = ml_dtypes.finfo(dtype)
    span = int(np.log2(float(info.max)) - np.log2(float(info.tiny))) - 1
    cases = [
        (np.array(0.5, dtype), 1 << (int(info.nexp) - 1)),
        (np.array([info.tiny, info.max], dtype), np.array([span, -span], np.int32)),
    ]
    for x1, x2 in cases:
        _same(rnp.ldexp(x1, x2), jnp.ldexp(x1, x2))
        _same(ri_jit(rnp.ldexp)(x1, x2), jax.jit(jnp.ldexp)(x1, x2))


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int8, np.bool_])
def test_ldexp_values_dtypes_and_specials(backend, dtype):
    x1 = np.array([1, 0, 3, -2, 1, 0], dtype)
    if dtype == np.float32:
        x1 = np.array([1.5, -0.0, np.inf, -np.inf, np.nan, 3.0], dtype)
    x2 = np.array([-1075, 1023, 5, -3, 2, -140], np.int32)
    _same(rnp.ldexp(x1, x2), jnp.ldexp(x1, x2))
    _same(ri_jit(rnp.ldexp)(x1, x2), jax.jit(jnp.ldexp)(x1, x2))
    _same(rnp.ldexp(3.0, 2), jnp.ldexp(3.0, 2))


def test_ldexp_rejects_complex_and_inexact_exponents():
    for x1, x2 in [(1j, 2), (1.0, 2.0)]:
        with pytest.raises(ValueError):
            jnp.ldexp(x1, x2)
        with pytest.raises(ValueError):
            rnp.ldexp(x1, x2)


# --- polymul ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "a1, a2",
    [
        ([0.0, 0.0, 1.0, 2.0], [0.0, 3.0]),
        ([0, 1, 1, 0], [1]),
        ([False, True], [True, False, True]),
        ([0.0, 0.0], [0.0, 2.0]),
        ([0.0], [0.0, 0.0, 1.0]),
        ([0.0], [0.0]),
    ],
)
def test_polymul_trim_leading_zeros(backend, a1, a2):
    a1, a2 = np.asarray(a1), np.asarray(a2)
    if a1.dtype == np.float64:
        a1, a2 = a1.astype(np.float32), a2.astype(np.float32)
    for trim in (True, False):
        _same(
            rnp.polymul(a1, a2, trim_leading_zeros=trim),
            jnp.polymul(a1, a2, trim_leading_zeros=trim),
        )


# --- searchsorted ----------------------------------------------------------------------------


def test_searchsorted_method_is_checked():
    with pytest.raises(ValueError):
        jnp.searchsorted(np.arange(3.0), 1.0, method="bisect")
    with pytest.raises(ValueError):
        rnp.searchsorted(np.arange(3.0), 1.0, method="bisect")


def test_searchsorted_length_past_int32(backend):
    long_a = (2**31,)
    for lib, np_mod in [(jax, jnp), (ri, rnp)]:
        a = lib.ShapeDtypeStruct((2**31 - 1,), np.float32)
        v = lib.ShapeDtypeStruct((), np.float32)
        assert lib.eval_shape(np_mod.searchsorted, a, v).dtype == np.int32
        with (
            pytest.warns(UserWarning, match="Explicitly requested dtype.*int64"),
            pytest.raises(OverflowError),
        ):
            lib.eval_shape(np_mod.searchsorted, lib.ShapeDtypeStruct(long_a, np.float32), v)


# --- diff ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "x, kwargs",
    [
        (np.arange(5, dtype=np.float32), dict(prepend=1, append=np.zeros(5, np.float32))),
        (np.ones((3, 4), np.int8), dict(axis=0, append=np.zeros((3, 4), np.int8))),
        (np.float32(2.0), {}),
        (np.ones(3, np.float32), dict(axis=3)),
    ],
)
def test_diff_of_order_zero_is_the_input(backend, x, kwargs):
    _same(rnp.diff(x, n=0, **kwargs), jnp.diff(x, n=0, **kwargs))
    _same(
        ri_jit(lambda x: rnp.diff(x, n=0, **kwargs))(x),
        jax.jit(lambda x: jnp.diff(x, n=0, **kwargs))(x),
    )


# --- histograms: edges in the inexact dtype, counts in the dtype a and weights join to --------


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.float16, np.float32])
@pytest.mark.parametrize("bins", [np.array([-5, 0, 3]), np.arange(-5.0, 6.0), 4])
@pytest.mark.parametrize("weighted", [False, True])
def test_histogram_dtypes(backend, dtype, bins, weighted):
    a = np.array([[-4, 0, 1, 2, 2], [3, -1, 5, 0, 1]]).astype(dtype)
    w = np.abs(a[::-1]).astype(dtype) if weighted else None
    _same(rnp.histogram_bin_edges(a, bins), jnp.histogram_bin_edges(a, bins), rtol=1e-3)
    for density in (False, True):
        got = rnp.histogram(a, bins, weights=w, density=density)
        _same(got, jnp.histogram(a, bins, weights=w, density=density), rtol=1e-3)


def test_histogramdd_and_2d_integer_edges(backend):
    sample = np.array([[0, 1, 2], [1, 1, 0], [2, 0, 1], [-1, 3, 2]], np.int32)
    edges = [np.array([-1, 0, 2]), np.array([0, 1, 3]), np.array([0, 2, 4])]
    for density in (False, True):
        _same(
            rnp.histogramdd(sample, edges, density=density),
            jnp.histogramdd(sample, edges, density=density),
        )
        args = (sample[:, 0], sample[:, 1], edges[:2])
        _same(rnp.histogram2d(*args, density=density), jnp.histogram2d(*args, density=density))


# --- split: the number of sections read with int() -------------------------------------------


@pytest.mark.parametrize("name", ["split", "array_split"])
def test_split_sections_known_under_jvp(backend, name):
    def run(lib, np_mod):
        def f(idx):
            return getattr(np_mod, name)(np_mod.zeros((12, 2)), idx)

        def g(idx):
            return getattr(np_mod, name)(np_mod.zeros((12, 2)), (1, idx.astype(np.int32)))

        return lib.jvp(f, (3.0,), (1.0,)), lib.jvp(g, (2.0,), (1.0,))

    _same(run(ri, rnp), run(jax, jnp))
    _same(getattr(rnp, name)(np.arange(12.0), 3.0), getattr(jnp, name)(np.arange(12.0), 3.0))


@pytest.mark.parametrize("name", ["split", "array_split"])
def test_split_traced_sections_are_concretization_errors(name):
    for lib, np_mod in [(jax, jnp), (ri, rnp)]:
        for make in [lambda i: i, lambda i: [2, i]]:
            with pytest.raises(TypeError, match="Abstract tracer value encountered where concrete"):
                lib.jit(lambda i: getattr(np_mod, name)(np_mod.zeros((12, 2)), make(i)))(2.0)  # noqa: B023


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("method", ["sort", "scan", "compare_all"])
def test_searchsorted_and_digitize_complex(backend, side, method):
    # lexicographic: real part first, then imaginary (ties in the real part)
    a = np.array([-2 + 1j, -1 - 1j, -1 + 0j, -1 + 2j, 0j, 1 - 3j, 1 + 1j, 3 + 0j], np.complex64)
    v = np.array([[-1 + 0j, -1 + 1j, 1 + 1j], [5 - 1j, -3 + 0j, 1 - 3j]], np.complex64)
    sorter = np.array([3, 0, 7, 2, 5, 1, 6, 4])
    shuffled = a[np.argsort(sorter)]
    _same(
        rnp.searchsorted(a, v, side=side, method=method),
        jnp.searchsorted(a, v, side=side, method=method),
    )
    _same(
        ri_jit(lambda a, v: rnp.searchsorted(a, v, side=side, sorter=np.argsort(shuffled)))(
            shuffled, v
        ),
        jax.jit(lambda a, v: jnp.searchsorted(a, v, side=side, sorter=np.argsort(shuffled)))(
            shuffled, v
        ),
    )
    right = side == "right"
    _same(rnp.digitize(v, a[::-1], right=right), jnp.digitize(v, a[::-1], right=right))
