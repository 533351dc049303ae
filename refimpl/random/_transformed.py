"""Distributions that are transformations of the basic samplers, as in JAX
(``cauchy``, ``exponential``, ``gumbel``, ``laplace``, ``logistic``,
``lognormal``, ``pareto``, ``rayleigh``, ``weibull_min``,
``multivariate_normal``...).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from refimpl import dtypes, lax
from refimpl import numpy as rnp
from refimpl.numpy import linalg
from refimpl.random._basic import _check_broadcast, _float_dtype, _normal, _strong, _uniform
from refimpl.random._keys import _as_shape, _key_data_of, _run

# --- more distributions (transformations of the samplers above, as in JAX) -----------


def _param_shape(name: str, shape: Any, *params: Any) -> tuple[int, ...]:
    if shape is None:
        return tuple(np.broadcast_shapes(*(np.shape(p) for p in params)))
    shape = _as_shape(name, shape)
    _check_broadcast(name, shape, *params)
    return shape


def rademacher(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """-1 or 1 with equal probability: ``2 * bernoulli(key, 0.5) - 1``."""
    data, _ = _key_data_of("rademacher", key)
    dtype = dtypes.canonicalize_dtype(int if dtype is None else dtype)
    return _run("rademacher", _rademacher, (_as_shape("rademacher", shape), dtype), data)


def _rademacher(data: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    # JAX's coin is bernoulli(key, 0.5): a uniform of the Python float's dtype,
    # the default float (float64 with x64; jit retraces when x64 changes)
    coin_dtype = dtypes.canonicalize_dtype(float)
    coin = rnp.astype(rnp.less(_uniform(data, shape, coin_dtype, 0.0, 1.0), 0.5), dtype)
    return rnp.astype(rnp.subtract(rnp.multiply(2, coin), 1), dtype)


def cauchy(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Standard Cauchy samples: ``tan(pi * (u - 1/2))``, ``u`` uniform in ``[eps, 1)``."""
    data, _ = _key_data_of("cauchy", key)
    dtype = _float_dtype("cauchy", dtype)
    return _run("cauchy", _cauchy, (_as_shape("cauchy", shape), dtype), data)


def _cauchy(data: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    u = _uniform(data, shape, dtype, float(dtypes.finfo(dtype).eps), 1.0)
    return lax.tan(lax.mul(np.asarray(np.pi, dtype), lax.sub(u, np.asarray(0.5, dtype))))


def lognormal(
    key: Any, sigma: Any = 1.0, shape: Sequence[int] | None = None, dtype: Any = None
) -> Any:
    """``exp(sigma * normal)``."""
    data, _ = _key_data_of("lognormal", key)
    dtype = _float_dtype("lognormal", dtype)
    shape = _param_shape("lognormal", shape, sigma)
    return _run("lognormal", _lognormal, (shape, dtype), data, sigma)


def _lognormal(data: Any, shape: tuple[int, ...], dtype: np.dtype, sigma: Any) -> Any:
    return rnp.exp(rnp.multiply(_normal(data, shape, dtype), _strong(sigma, dtype)))


def pareto(key: Any, b: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Pareto(b) samples: ``exp(exponential / b)``."""
    data, _ = _key_data_of("pareto", key)
    dtype = _float_dtype("pareto", dtype)
    shape = _param_shape("pareto", shape, b)
    return _run("pareto", _pareto, (shape, dtype), data, b)


def _pareto(data: Any, shape: tuple[int, ...], dtype: np.dtype, b: Any) -> Any:
    u = _uniform(data, shape, dtype, 0.0, 1.0)
    e = lax.neg(lax.log1p(lax.neg(u)))
    return rnp.exp(rnp.divide(e, _strong(b, dtype)))


def rayleigh(key: Any, scale: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Rayleigh(scale) samples: ``scale * sqrt(-2 log u)``."""
    data, _ = _key_data_of("rayleigh", key)
    dtype = _float_dtype("rayleigh", dtype)
    shape = _param_shape("rayleigh", shape, scale)
    return _run("rayleigh", _rayleigh, (shape, dtype), data, scale)


def _rayleigh(data: Any, shape: tuple[int, ...], dtype: np.dtype, scale: Any) -> Any:
    u = _uniform(data, shape, dtype, 0.0, 1.0)
    scale = rnp.broadcast_to(_strong(scale, dtype), shape)
    return lax.mul(scale, lax.sqrt(lax.mul(lax.log(u), np.asarray(-2, dtype))))


def weibull_min(
    key: Any, scale: Any, concentration: Any, shape: Sequence[int] = (), dtype: Any = None
) -> Any:
    """Weibull samples by the inverse CDF: ``(-log1p(-u)) ** (1 / c) * scale``."""
    data, _ = _key_data_of("weibull_min", key)
    dtype = _float_dtype("weibull_min", dtype)
    static = (_as_shape("weibull_min", shape), dtype)
    return _run("weibull_min", _weibull_min, static, data, scale, concentration)


def _weibull_min(
    data: Any, shape: tuple[int, ...], dtype: np.dtype, scale: Any, concentration: Any
) -> Any:
    u = _uniform(data, shape, dtype, 0.0, 1.0)
    inverse = rnp.power(rnp.negative(rnp.log1p(rnp.negative(u))), rnp.divide(1.0, concentration))
    return rnp.multiply(inverse, scale)


def multivariate_normal(
    key: Any,
    mean: Any,
    cov: Any,
    shape: Sequence[int] | None = None,
    dtype: Any = None,
    method: str = "cholesky",
) -> Any:
    """``mean + factor @ normal``, ``factor`` the Cholesky factor of ``cov``
    (``method="eigh"``/``"svd"``: ``V sqrt(w)`` / ``U sqrt(s)``). Equal to JAX's
    up to the rounding of the factorization."""
    data, _ = _key_data_of("multivariate_normal", key)
    if method not in ("cholesky", "eigh", "svd"):
        raise ValueError(f"method must be one of {{'svd', 'eigh', 'cholesky'}}, got {method!r}")
    mean, cov = rnp.asarray(mean), rnp.asarray(cov)
    dtype = mean.dtype if dtype is None else _float_dtype("multivariate_normal", dtype)
    if mean.ndim < 1:
        raise ValueError(
            f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == {mean.ndim}"
        )
    if cov.ndim < 2:
        raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got cov.ndim == {cov.ndim}")
    n = mean.shape[-1]
    if cov.shape[-2:] != (n, n):
        raise ValueError(
            f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, "
            f"but got cov.shape == {cov.shape}."
        )
    if shape is None:
        shape = tuple(np.broadcast_shapes(mean.shape[:-1], cov.shape[:-2]))
    else:
        shape = _as_shape("multivariate_normal", shape)
        _check_broadcast("normal", shape, np.empty(mean.shape[:-1]), np.empty(cov.shape[:-2]))
    static = (shape, np.dtype(dtype), method)
    return _run("multivariate_normal", _multivariate_normal, static, data, mean, cov)


def _multivariate_normal(
    data: Any, shape: tuple[int, ...], dtype: np.dtype, method: str, mean: Any, cov: Any
) -> Any:
    n = mean.shape[-1]
    if method == "svd":
        u, s, _ = linalg.svd(cov)
        factor = rnp.multiply(u, rnp.expand_dims(rnp.sqrt(s), -2))
    elif method == "eigh":
        w, v = linalg.eigh(cov)
        factor = rnp.multiply(v, rnp.expand_dims(rnp.sqrt(w), -2))
    else:
        factor = linalg.cholesky(cov)
    samples = _normal(data, (*shape, n), dtype)
    return rnp.add(mean, rnp.einsum("...ij,...j->...i", factor, samples))


__all__ = [
    "cauchy",
    "lognormal",
    "multivariate_normal",
    "pareto",
    "rademacher",
    "rayleigh",
    "weibull_min",
]
