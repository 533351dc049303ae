"""Reducers as JAX's tests/lax_numpy_reducers_test.py pins them down (issue
29): var/std's ddof, correction and mean arguments, the where argument's
dtype, nanmax/nanmin with initial, sum/prod into bool, cumulative_sum's
integer promotion. Compared with JAX 0.10.2 on both backends."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp

_X = np.arange(10.0, dtype=np.float32).reshape(2, 5) - 3.5


def _same(got, want, rtol=1e-6):
    assert got.shape == want.shape
    assert got.dtype == want.dtype
    assert got.aval.weak_type == want.aval.weak_type
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol, equal_nan=True)


# --- var and std ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["var", "std"])
@pytest.mark.parametrize("ddof, correction", [(1, 0), (2, 1), (1, 1)])
def test_ddof_and_correction_together_is_an_error(name, ddof, correction):
    with pytest.raises(ValueError, match="ddof and correction"):
        getattr(jnp, name)(_X, ddof=ddof, correction=correction)
    with pytest.raises(ValueError, match="ddof and correction"):
        getattr(rnp, name)(_X, ddof=ddof, correction=correction)


@pytest.mark.parametrize("name", ["var", "std"])
@pytest.mark.parametrize("kwargs", [{"correction": 1}, {"correction": 2}, {"ddof": 1}, {}])
def test_correction_alone(backend, name, kwargs):
    _same(getattr(rnp, name)(_X, axis=1, **kwargs), getattr(jnp, name)(_X, axis=1, **kwargs))


@pytest.mark.parametrize("name", ["var", "std", "nanvar", "nanstd"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_complex_input_with_a_real_dtype_is_an_error(name, dtype):
    z = _X.astype(np.complex64)
    with pytest.raises(ValueError):
        getattr(jnp, name)(z, dtype=dtype)
    with pytest.raises(ValueError, match="complex"):
        getattr(rnp, name)(z, dtype=dtype)


@pytest.mark.parametrize("name", ["var", "std"])
@pytest.mark.parametrize("axis, keepdims", [(1, False), (0, True), (None, False)])
def test_given_mean(backend, name, axis, keepdims):
    mean = np.float32(0.25) + np.zeros(np.mean(_X, axis=axis, keepdims=True).shape, np.float32)
    kwargs = dict(axis=axis, keepdims=keepdims, ddof=1, mean=mean)
    want = getattr(jnp, name)(_X, **kwargs)
    _same(getattr(rnp, name)(_X, **kwargs), want)
    _same(
        ri.jit(lambda x, m: getattr(rnp, name)(x, axis=axis, keepdims=keepdims, ddof=1, mean=m))(
            _X, mean
        ),
        want,
    )


@pytest.mark.parametrize("name", ["var", "std"])
@pytest.mark.parametrize("size", [0, 1, 2])
def test_no_degrees_of_freedom_is_nan(backend, name, size):
    # JAX's tests: jnp.var(arange(size), ddof=size + k) is NaN (NumPy gives inf/-0)
    for extra in (0, 1, 2):
        got = getattr(rnp, name)(rnp.arange(size), ddof=size + extra)
        assert np.isnan(np.asarray(got))
        assert np.isnan(np.asarray(getattr(jnp, name)(jnp.arange(size), ddof=size + extra)))


# --- where must be boolean ----------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["sum", "prod", "max", "min", "nansum", "nanprod", "nanmax", "nanmin", "all", "any", "mean",
     "var", "std", "nanmean", "nanvar", "nanstd"],
)  # fmt: skip
def test_non_boolean_where_is_a_value_error(name):
    kwargs = {"initial": 0.0} if name in ("max", "min", "nanmax", "nanmin") else {}
    with pytest.raises(ValueError, match="where must be None or a boolean array"):
        getattr(jnp, name)(jnp.zeros(10), where=jnp.ones(10, int), **kwargs)
    with pytest.raises(ValueError, match="where must be None or a boolean array"):
        getattr(rnp, name)(rnp.zeros(10), where=rnp.ones(10, int), **kwargs)


# --- nanmax/nanmin with initial ------------------------------------------------------------


@pytest.mark.parametrize("name", ["nanmax", "nanmin"])
@pytest.mark.parametrize(
    "x, axis",
    [
        (np.zeros((0, 4), np.float32), 0),
        (np.zeros((3, 0), np.float16), None),
        (np.full((2, 3), np.nan, np.float32), 1),
        (np.array([[np.nan, 2.0], [np.nan, np.nan]], np.float32), 1),
    ],
)
def test_nan_extremes_with_initial(backend, name, x, axis):
    # initial stands in for an empty or all-NaN slice: no NaN there
    for initial in (0.0, 1.0):
        _same(
            getattr(rnp, name)(x, axis=axis, initial=initial),
            getattr(jnp, name)(x, axis=axis, initial=initial),
        )
    if x.size:  # without initial an all-NaN slice is NaN
        _same(getattr(rnp, name)(x, axis=axis), getattr(jnp, name)(x, axis=axis))


# --- sum and prod into bool ---------------------------------------------------------------


@pytest.mark.parametrize("name", ["sum", "prod", "nansum", "nanprod"])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32, np.complex64, np.bool_])
def test_sum_and_prod_into_bool(backend, name, dtype):
    x = np.array([[3, 0, 1], [1, 2, 5], [0, 0, 0]]).astype(dtype)
    for axis, keepdims in [(1, False), (0, True), (None, False)]:
        _same(
            getattr(rnp, name)(x, axis=axis, dtype=bool, keepdims=keepdims),
            getattr(jnp, name)(x, axis=axis, dtype=bool, keepdims=keepdims),
        )


# --- cumulative_sum promotes narrow integers ----------------------------------------------


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.uint8, np.uint16, np.int32, np.bool_])
@pytest.mark.parametrize("include_initial", [False, True])
def test_cumulative_sum_integer_promotion(backend, dtype, include_initial):
    x = (np.array([[100, 27, 7, 120], [1, 2, 3, 4]]) % (2 if dtype == np.bool_ else 128)).astype(
        dtype
    )
    for axis in (0, 1):
        kwargs = dict(axis=axis, include_initial=include_initial)
        _same(rnp.cumulative_sum(x, **kwargs), jnp.cumulative_sum(x, **kwargs))
        _same(rnp.cumulative_prod(x, **kwargs), jnp.cumulative_prod(x, **kwargs))
    # an explicit dtype is kept
    _same(rnp.cumulative_sum(x[0], dtype=dtype), jnp.cumulative_sum(x[0], dtype=dtype))


# --- quantile's result dtype ---------------------------------------------------------------


@pytest.mark.parametrize("name", ["quantile", "nanquantile", "percentile", "nanpercentile"])
@pytest.mark.parametrize("a_dtype", [np.float16, ml_dtypes.bfloat16, np.int8, np.float32])
@pytest.mark.parametrize("q", [np.float32(0.3), 0.3, np.array([0.1, 0.5], np.float32)])
def test_quantile_result_has_the_inputs_inexact_dtype(backend, name, a_dtype, q):
    # a's dtype made inexact, whatever q's (float16 a with float32 q is float16)
    a = np.array([[1.5, 2.0, 3.0, 0.75], [4.0, 0.5, 2.5, 1.0]]).astype(a_dtype)
    if "percentile" in name:
        q = q * 100
    for method in ("linear", "nearest", "midpoint"):
        want = getattr(jnp, name)(a, q, axis=1, method=method)
        got = getattr(rnp, name)(a, q, axis=1, method=method)
        assert got.dtype == want.dtype and got.aval.weak_type == want.aval.weak_type
        np.testing.assert_allclose(
            np.asarray(got, np.float32), np.asarray(want, np.float32), rtol=1e-2
        )


# --- 16-bit floats: upcast only without an explicit dtype (testReducerF16Casts) -----------


@pytest.mark.parametrize("name", ["sum", "prod", "mean"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_f16_reductions_upcast_only_without_dtype(name, dtype):
    x = (np.arange(1, 11) / 7).astype(dtype)

    def primitives(program):
        return [e.primitive.name for e in program.eqns]

    def jax_primitives(fn):
        return [e.primitive.name for e in jax.make_jaxpr(fn)(x).jaxpr.eqns]

    for kwargs in ({}, {"dtype": dtype}):
        got = primitives(ri.make_jaxpr(lambda a, kw=kwargs: getattr(rnp, name)(a, **kw))(x))
        assert got == jax_primitives(lambda a, kw=kwargs: getattr(jnp, name)(a, **kw))
    # without dtype: converted up, reduced, converted back; with it: no conversion
    assert primitives(ri.make_jaxpr(lambda a: getattr(rnp, name)(a, dtype=dtype))(x))[0] != (
        "convert_element_type"
    )


# --- count_nonzero --------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [None, 0])
def test_count_nonzero_counts_in_the_default_int(backend, x64, axis):
    """int64 with x64 on (JAX's default int), not a fixed int32."""
    x = np.array([[0.0, 1.5, -0.0], [np.nan, 0.0, 2.0]], np.float32)
    _same(rnp.count_nonzero(x, axis=axis), jnp.count_nonzero(x, axis=axis))
    _same(ri.jit(lambda a: rnp.count_nonzero(a, axis=axis))(x), jnp.count_nonzero(x, axis=axis))


@pytest.mark.parametrize("name", ["sum", "prod", "max", "mean", "var", "std", "nanmean", "nanvar"])
@pytest.mark.parametrize("a, w", [((3,), (4,)), ((2, 1, 3), (4, 1)), ((), (3,)), ((0, 4), (3, 4))])
def test_where_of_another_shape(backend, name, a, w):
    # a where that broadcasts the array to a larger shape reduces that shape
    # (sum, max); one that does not broadcast with it, or (mean, var) not to
    # its shape, is JAX's ValueError and a TypeError naming the function here
    # (shape errors are TypeErrors: conformance/known.py)
    x, where = np.ones(a, np.float32), np.ones(w, bool)
    kwargs = {"initial": 0.0} if name == "max" else {}
    try:
        want = getattr(jnp, name)(x, where=where, **kwargs)
    except ValueError:
        with pytest.raises(TypeError, match=f"({name}|mean|sum)\\b.*shape"):
            getattr(rnp, name)(x, where=where, **kwargs)
        return
    _same(getattr(rnp, name)(x, where=where, **kwargs), want)


_Z = np.array([[1j, 0j, 2 + 0j], [1 + 1j, 3j, -1 + 0j]], np.complex64)


@pytest.mark.parametrize("name", ["all", "any"])
@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("where", [None, np.array([True, True, False])])
def test_logical_reductions_of_complex_read_the_real_part(backend, name, axis, where):
    # JAX's all/any cast complex to bool by the real part (NumPy: x != 0)
    want = getattr(jnp, name)(_Z, axis=axis, where=where)
    got = getattr(rnp, name)(_Z, axis=axis, where=where)
    _same(got, want)


@pytest.mark.parametrize("name", ["sum", "prod"])
def test_complex_sum_prod_into_bool_read_the_real_part(backend, name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        want = getattr(jnp, name)(_Z, axis=1, dtype=bool)
    _same(getattr(rnp, name)(_Z, axis=1, dtype=bool), want)


@pytest.mark.parametrize(
    "name, args",
    [("median", ()), ("nanmedian", ()), ("quantile", (0.3,)),
     ("nanpercentile", (np.array([3.0, 50.0], np.float32),))],
)  # fmt: skip
@pytest.mark.parametrize(
    "x", [np.float32(2.5), 2.5, np.ones((), np.int8), np.ones((2, 3), np.float16)]
)
@pytest.mark.parametrize("axis", [None, ()])
def test_quantiles_keepdims_of_a_scalar(backend, name, args, x, axis):
    # JAX reduces a rank-0 array as a one-element vector: keepdims leaves a unit dim
    want = getattr(jnp, name)(x, *args, axis=axis, keepdims=True)
    got = getattr(rnp, name)(x, *args, axis=axis, keepdims=True)
    _same(got, want)
