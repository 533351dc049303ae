"""Continuous samplers over ``gamma``, ``normal`` and ``uniform``, key for key
JAX 0.10.2's algorithms:

* ``chisquare(df) = 2 exp(loggamma(df / 2))``; ``t(df) = N sqrt((df/2) / G)``;
  ``f = (chi2(dfnum) / dfnum) / (chi2(dfden) / dfden)``.
* ``wald(mean)``: Michael, Schucany and Haas's root selection.
* ``maxwell = |N3|``; ``double_sided_maxwell = sign * maxwell * scale + loc``.
* ``generalized_normal(p) = sign * G(1/p) ** (1/p)``;
  ``ball(d, p) = g / (sum |g|^p + E) ** (1/p)`` with ``g`` generalized normal.
* ``triangular(left, mode, right)`` by the inverse CDF.

docs/semantics.md (section 12.1.1) lists where the
reference backend differs from JAX in the last bits and why.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from refimpl import lax
from refimpl import numpy as rnp
from refimpl.random._argument_checks import (
    _broadcast_shape,
    _check_arraylike,
    _check_safe_to_cast,
    _const,
    _float_out,
)
from refimpl.random._basic import _exponential, _float_dtype, _normal, _uniform
from refimpl.random._gamma import _gamma
from refimpl.random._keys import _as_shape, _key_data_of, _run, _split_data
from refimpl.random._transformed import _rademacher

# --- chisquare, t, f -------------------------------------------------------------------


def chisquare(key: Any, df: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Chi-square(df) samples: ``2 exp(loggamma(df / 2))``."""
    data, _ = _key_data_of("chisquare", key)
    _check_arraylike("chisquare", df=df)
    dtype = _float_out("chisquare", dtype)
    shape = _broadcast_shape("chisquare", shape, df)
    _check_safe_to_cast("chisquare", dtype, df)
    return _run("chisquare", _chisquare, (shape, dtype), data, df)


def _chisquare(data: Any, shape: tuple, dtype: np.dtype, df: Any) -> Any:
    df = lax.convert_element_type(df, dtype)
    two = _const(2, dtype)
    log_g = _gamma(data, lax.div(df, two), shape, dtype, True)
    return lax.mul(lax.exp(log_g), two)


def t(key: Any, df: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Student's t(df) samples: ``N sqrt((df/2) / G)``, ``N`` normal and ``G``
    Gamma(df/2) from the two halves of ``split(key)``."""
    data, _ = _key_data_of("t", key)
    _check_arraylike("t", df=df)
    dtype = _float_out("t", dtype)
    shape = _broadcast_shape("t", shape, df)
    _check_safe_to_cast("t", dtype, df)
    return _run("t", _t, (shape, dtype), data, df)


def _t(data: Any, shape: tuple, dtype: np.dtype, df: Any) -> Any:
    df = lax.convert_element_type(df, dtype)
    keys = _split_data(data, (2,))
    n = _normal(keys[0], shape, dtype)
    half_df = lax.div(df, _const(2, dtype))
    g = _gamma(keys[1], half_df, shape, dtype, False)
    return rnp.multiply(n, rnp.sqrt(rnp.divide(half_df, g)))


def f(
    key: Any, dfnum: Any, dfden: Any, shape: Sequence[int] | None = None, dtype: Any = None
) -> Any:
    """F(dfnum, dfden) samples: ``(chi2(dfnum) / dfnum) / (chi2(dfden) / dfden)``,
    the denominator's from the first half of ``split(key)``."""
    data, _ = _key_data_of("f", key)
    _check_arraylike("f", dfnum=dfnum, dfden=dfden)
    dtype = _float_out("f", dtype)
    shape = _broadcast_shape("f", shape, dfnum, dfden)
    _check_safe_to_cast("f", dtype, dfnum, dfden)
    return _run("f", _f, (shape, dtype), data, dfnum, dfden)


def _f(data: Any, shape: tuple, dtype: np.dtype, dfnum: Any, dfden: Any) -> Any:
    dfden = lax.convert_element_type(dfden, dtype)
    dfnum = lax.convert_element_type(dfnum, dtype)
    keys = _split_data(data, (2,))
    chi2_num = _chisquare(keys[1], shape, dtype, dfnum)
    chi2_den = _chisquare(keys[0], shape, dtype, dfden)
    # JAX divides (chi2_num / dfnum) / (chi2_den / dfden) with lax.div (so a
    # parameter of lower rank than the output is an error there too), and XLA
    # rewrites that quotient of quotients into this one, which it computes
    lax.div(chi2_num, dfnum)  # the rank check of JAX's lax.div
    lax.div(chi2_den, dfden)
    return lax.div(lax.mul(chi2_num, dfden), lax.mul(dfnum, chi2_den))


def wald(key: Any, mean: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Wald (inverse Gaussian, scale 1) samples: with ``y = N^2``,
    ``x = mean + mean^2 y / 2 - (mean / 2) sqrt(4 mean y + mean^2 y^2)``, the
    sample is ``x`` if ``u <= mean / (mean + x)``, else ``mean^2 / x``."""
    data, _ = _key_data_of("wald", key)
    _check_arraylike("wald", mean=mean)
    dtype = _float_out("wald", dtype)
    shape = _broadcast_shape("wald", shape, mean)
    _check_safe_to_cast("wald", dtype, mean)
    return _run("wald", _wald, (shape, dtype), data, mean)


def _wald(data: Any, shape: tuple, dtype: np.dtype, mean: Any) -> Any:
    keys = _split_data(data, (2,))
    mean = rnp.broadcast_to(lax.convert_element_type(mean, dtype), shape)
    v = _normal(keys[0], shape, dtype)
    z = _uniform(keys[1], shape, dtype, 0.0, 1.0)
    y = lax.integer_pow(v, 2)
    y_sq = lax.integer_pow(y, 2)
    mean_sq = lax.integer_pow(mean, 2)
    half = _const(0.5, dtype)  # XLA rewrites JAX's "/ 2" so
    sqrt_term = lax.sqrt(lax.mul_add(lax.mul(_const(4, dtype), mean), y, lax.mul(mean_sq, y_sq)))
    x = lax.mul_add(lax.mul(mean_sq, y), half, mean)
    x = lax.mul_add(lax.neg(lax.mul(mean, half)), sqrt_term, x)
    accept = lax.le(z, lax.div(mean, lax.add(mean, x)))
    return lax.select(accept, x, lax.div(mean_sq, x))


def triangular(
    key: Any,
    left: Any,
    mode: Any,
    right: Any,
    shape: Sequence[int] | None = None,
    dtype: Any = None,
) -> Any:
    """Triangular(left, mode, right) samples by the inverse CDF: with
    ``fc = (mode - left) / (right - left)``, ``left + sqrt(u (right - left)
    (mode - left))`` if ``u < fc``, else ``right - sqrt((1 - u) (right - left)
    (right - mode))``."""
    data, _ = _key_data_of("triangular", key)
    _check_arraylike("triangular", left=left, mode=mode, right=right)
    dtype = _float_out("triangular", dtype)
    shape = _broadcast_shape("triangular", shape, left, mode, right)
    _check_safe_to_cast("triangular", dtype, left, mode, right)
    return _run("triangular", _triangular, (shape, dtype), data, left, mode, right)


def _triangular(data: Any, shape: tuple, dtype: np.dtype, left: Any, mode: Any, right: Any):
    left = rnp.broadcast_to(lax.convert_element_type(left, dtype), shape)
    right = rnp.broadcast_to(lax.convert_element_type(right, dtype), shape)
    mode = rnp.broadcast_to(lax.convert_element_type(mode, dtype), shape)
    width = lax.sub(right, left)
    fc = lax.div(lax.sub(mode, left), width)
    u = _uniform(data, shape, dtype, 0.0, 1.0)
    out1 = lax.add(left, lax.sqrt(lax.mul(lax.mul(u, width), lax.sub(mode, left))))
    one_minus = lax.sub(_const(1, dtype), u)
    out2 = lax.sub(right, lax.sqrt(lax.mul(lax.mul(one_minus, width), lax.sub(right, mode))))
    return lax.select(lax.lt(u, fc), out1, out2)


# --- maxwell, generalized normal, ball -------------------------------------------------


def maxwell(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Maxwell samples: the Euclidean norm of 3 standard normals (drawn as
    ``normal(key, (*shape, 3))``)."""
    data, _ = _key_data_of("maxwell", key)
    dtype = _float_out("maxwell", dtype)
    return _run("maxwell", _maxwell, (_as_shape("maxwell", shape), dtype), data)


def _maxwell(data: Any, shape: tuple, dtype: np.dtype) -> Any:
    x = _normal(data, (*shape, 3), dtype)
    # JAX's norm: XLA CPU adds the 3 squares in an order that depends on the
    # fusion and the shape (not modelled: the sum here is sequential)
    return lax.sqrt(rnp.sum(lax.mul(x, x), axis=-1))


def double_sided_maxwell(
    key: Any, loc: Any, scale: Any, shape: Sequence[int] = (), dtype: Any = None
) -> Any:
    """``rademacher * maxwell * scale + loc``, of shape ``shape + broadcast(loc,
    scale).shape`` (``shape = ()`` means the parameters' shape; JAX's rule)."""
    data, _ = _key_data_of("double_sided_maxwell", key)
    _check_arraylike("double_sided_maxwell", loc=loc, scale=scale)
    dtype = _float_out("double_sided_maxwell", dtype)
    shape = _as_shape("double_sided_maxwell", shape)
    try:
        params = tuple(np.broadcast_shapes(np.shape(loc), np.shape(scale)))
    except ValueError:
        raise ValueError(
            "double_sided_maxwell: loc and scale must broadcast together, got shapes "
            f"{tuple(np.shape(loc))} and {tuple(np.shape(scale))}"
        ) from None
    shape = (shape or params) + params
    static = (shape, dtype)
    return _run("double_sided_maxwell", _double_sided_maxwell, static, data, loc, scale)


def _double_sided_maxwell(data: Any, shape: tuple, dtype: np.dtype, loc: Any, scale: Any):
    keys = _split_data(data, (2,))
    magnitude = _maxwell(keys[0], shape, dtype)
    sign = _rademacher(keys[1], shape, dtype)
    return rnp.add(rnp.multiply(rnp.multiply(sign, magnitude), scale), loc)


def generalized_normal(key: Any, p: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Generalized normal samples (density proportional to ``exp(-|x|^p)``):
    ``sign * G ** (1/p)`` with ``G`` Gamma(1/p)."""
    data, _ = _key_data_of("generalized_normal", key)
    _check_arraylike("generalized_normal", p=p)
    shape = _as_shape("generalized_normal", shape)
    dtype = _float_dtype("gamma", dtype)  # JAX's check is gamma's
    return _run("generalized_normal", _generalized_normal, (shape, dtype), data, p)


def _generalized_normal(data: Any, shape: tuple, dtype: np.dtype, p: Any) -> Any:
    keys = _split_data(data, (2,))
    inv_p = rnp.divide(1, p)
    g = _gamma(keys[0], inv_p, shape, dtype, False)
    sign = _rademacher(keys[1], shape, dtype)
    return rnp.multiply(sign, rnp.power(g, inv_p))


def ball(key: Any, d: int, p: Any = 2, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Points uniform in the ``d``-dimensional unit ``p``-ball, shape
    ``(*shape, d)``: ``g / (sum |g|^p + E) ** (1/p)`` with ``g`` generalized
    normal (``p``) and ``E`` exponential."""
    data, _ = _key_data_of("ball", key)
    _check_arraylike("ball", p=p)
    shape = _as_shape("ball", shape)
    dtype = _float_dtype("gamma", dtype)
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
        raise TypeError(f"ball: d must be a concrete int (the dimension), got {d!r}")
    if d < 0:
        raise ValueError(f"ball: d must be non-negative, got {d}")
    return _run("ball", _ball, (int(d), shape, dtype), data, p)


def _ball(data: Any, d: int, shape: tuple, dtype: np.dtype, p: Any) -> Any:
    keys = _split_data(data, (2,))
    g = _generalized_normal(keys[0], (*shape, d), dtype, p)
    e = _exponential(keys[1], shape, dtype)
    total = rnp.add(rnp.sum(rnp.power(rnp.abs(g), p), axis=-1), e)
    # JAX's g / total ** (1/p), as XLA rewrites it (A / pow(B, C) -> A * pow(B, -C))
    inv_norm = rnp.power(total, rnp.negative(rnp.divide(1, p)))
    return rnp.multiply(g, rnp.expand_dims(inv_norm, -1))


__all__ = [
    "ball",
    "chisquare",
    "double_sided_maxwell",
    "f",
    "generalized_normal",
    "maxwell",
    "t",
    "triangular",
    "wald",
]
