"""``cov`` and ``corrcoef``."""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import dtypes, lax
from refimpl.numpy._creation import canonical_dtype
from refimpl.numpy._linalg import einsum
from refimpl.numpy._promote import as_array, aval_of, checked_array, promote_dtypes_inexact
from refimpl.numpy._reductions import sum
from refimpl.numpy._shape import concatenate, reshape
from refimpl.numpy._ufuncs import clip, conj, imag, real, sqrt

Array = Any
ArrayLike = Any


def _aval(x: Any, name: str = "rnp", position: Any = 0) -> Any:
    return aval_of(x, name, position)


def cov(
    m: ArrayLike,
    y: ArrayLike = None,
    rowvar: bool = True,
    bias: bool = False,
    ddof: int | None = None,
    fweights: Any = None,
    aweights: Any = None,
    dtype: Any = None,
):
    """The covariance matrix of the variables of ``m`` (and ``y``).

    The covariance matrix of the variables (rows with ``rowvar``) of ``m``
    (and ``y``). ``fweights`` (integer repeat counts) and ``aweights``
    (importance weights) weight the observations as NumPy's and JAX's: the
    mean is the weighted average and the divisor ``sum(w) - ddof`` (with
    ``aweights``, ``sum(w) - ddof * sum(w * aweights) / sum(w)``); weights
    are taken by absolute value, as JAX. ``dtype`` (inexact) converts the
    data first.

    Args:
        m: The data: a 1-d array (one variable) or a 2-d array of variables.
        y: More variables, of ``m``'s layout, or None.
        rowvar: Whether each row is a variable (else each column).
        bias: Whether to divide by ``N`` (else ``N - 1``) when ``ddof`` is None.
        ddof: The "delta degrees of freedom", or None for ``bias``'s.
        fweights: Integer repeat counts of the observations, or None.
        aweights: Importance weights of the observations, or None.
        dtype: The inexact dtype to compute in, or None.

    Returns:
        The ``(k, k)`` covariance matrix of the ``k`` variables (a scalar
        for one variable), in the inexact dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.cov(rnp.array([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]))
        Array([[ 1., -1.],
               [-1.,  1.]], dtype=float32)
        >>> rnp.cov(rnp.array([1.0, 2.0, 3.0]))
        Array(1., dtype=float32)
    """
    m = checked_array("cov", m)
    (m,) = promote_dtypes_inexact("cov", m)
    if dtype is not None:
        dtype = canonical_dtype("cov", dtype)
        if not dtypes.is_inexact(dtype):
            raise ValueError(f"cov: dtype must be a subclass of float or complex; got {dtype}")
    if _aval(m).ndim > 2:
        raise ValueError("cov: m has more than 2 dimensions")
    # a 2-d m with rowvar=False is transposed even with one row (NumPy 2.2's
    # rule, and JAX's): (1, n) is n variables of one observation each
    if not rowvar and _aval(m).ndim == 2:
        m = m.T
    m = reshape(m, (1, -1)) if _aval(m).ndim < 2 else m
    if _aval(m).shape[0] == 0:
        # no variables: JAX's empty (0, 0) matrix has the default float dtype
        # (float32, float64 with x64) whatever m's dtype
        zero = lax.convert_element_type(0.0, dtypes.weak_default_dtype(float))
        return lax.broadcast_in_dim(zero, (0, 0), ())
    if y is not None:
        y = checked_array("cov", y, 1)
        (y,) = promote_dtypes_inexact("cov", y)
        y = reshape(y, (1, -1)) if _aval(y).ndim < 2 else y
        if not rowvar and _aval(y).shape[0] != 1:
            y = y.T
        m = concatenate([m, lax.convert_element_type(y, _aval(m).dtype)], axis=0)
    n = _aval(m).shape[1]
    if n == 0:
        # no observations: every covariance is NaN (JAX's; the formula below
        # would give 0 / -ddof)
        k = _aval(m).shape[0]
        shape = () if k == 1 else (k, k)
        return lax.broadcast_in_dim(lax.convert_element_type(np.nan, _aval(m).dtype), shape, ())
    ddof = (0 if bias else 1) if ddof is None else ddof
    w = _observation_weights(fweights, aweights, n)
    if dtype is not None:
        m = m.astype(dtype)
        w = None if w is None else w.astype(dtype)
    if w is None:
        centered = m - sum(m, axis=1, keepdims=True) / n
        c = einsum("ij,kj->ik", centered, conj(centered)) / (n - ddof)
    else:
        w_sum = sum(w)
        # one weight per column, broadcast explicitly (as JAX's: no rank promotion)
        w_row = w[None, :]
        centered = m - sum(m * w_row, axis=1, keepdims=True) / w_sum
        if ddof == 0:
            divisor = w_sum
        elif aweights is None:
            divisor = w_sum - ddof
        else:
            divisor = w_sum - ddof * sum(w * abs(as_array(aweights))) / w_sum
        c = einsum("ij,kj->ik", centered * w_row, conj(centered)) / divisor
    return reshape(c, ()) if _aval(c).shape == (1, 1) else c


def _observation_weights(fweights: Any, aweights: Any, n: int) -> Any:
    """The product of ``|fweights|`` and ``|aweights|`` (None without either),
    each checked to be one weight per observation (NumPy's RuntimeErrors)."""
    w = None
    for weights, what in [(fweights, "fweights"), (aweights, "aweights")]:
        if weights is None:
            continue
        weights = checked_array("cov", weights, what)
        aval = _aval(weights, "cov", what)
        if aval.ndim > 1:
            raise RuntimeError(f"cov: cannot handle multidimensional {what}")
        if aval.ndim == 0 or aval.shape[0] != n:
            raise RuntimeError(
                f"cov: incompatible numbers of samples ({n}) and {what} ({aval.shape})"
            )
        if what == "fweights" and not dtypes.is_integer(aval.dtype):
            raise TypeError(f"cov: fweights must be integer, got {aval.dtype.name}")
        weights = abs(weights)
        w = weights if w is None else w * weights
    return w


def corrcoef(x: ArrayLike, y: ArrayLike = None, rowvar: bool = True, dtype: Any = None) -> Array:
    """The Pearson correlation coefficients of the variables of ``x`` (and ``y``).

    The correlation coefficients ``cov[i, j] / sqrt(cov[i, i] cov[j, j])``,
    clipped to [-1, 1]; ``dtype`` (inexact) converts the data first, as
    :func:`cov`.

    Args:
        x: The data: a 1-d array (one variable) or a 2-d array of variables.
        y: More variables, of ``x``'s layout, or None.
        rowvar: Whether each row is a variable (else each column).
        dtype: The inexact dtype to compute in, or None.

    Returns:
        The ``(k, k)`` matrix of correlation coefficients (a scalar for one
        variable).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.corrcoef(rnp.array([1.0, 2.0, 3.0]), rnp.array([2.0, 4.0, 6.0]))
        Array([[1., 1.],
               [1., 1.]], dtype=float32)
    """

    if dtype is not None and not dtypes.is_inexact(canonical_dtype("corrcoef", dtype)):
        raise ValueError(f"corrcoef: dtype must be a subclass of float or complex; got {dtype=}")
    c = cov(checked_array("corrcoef", x), y, rowvar, dtype=dtype)
    if _aval(c).ndim == 0:
        return c / c
    # the diagonal is real in exact arithmetic; JAX takes its real part before the
    # square root and clips the two parts of a complex coefficient separately
    d = sqrt(real(einsum("ii->i", c))).astype(_aval(c).dtype)
    c = c / d[:, None] / d[None, :]
    if not dtypes.is_complex(_aval(c).dtype):
        return clip(c, -1, 1)
    return lax.complex(clip(real(c), -1, 1), clip(imag(c), -1, 1))


__all__ = [
    "corrcoef",
    "cov",
]
