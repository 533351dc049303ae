"""``cov`` and ``corrcoef``."""

from __future__ import annotations

from typing import Any

from refimpl import dtypes, lax
from refimpl.numpy._linalg import einsum
from refimpl.numpy._promote import aval_of, checked_array, promote_dtypes_inexact
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
):
    """The covariance matrix of the variables (rows with ``rowvar``) of ``m``
    (and ``y``); ``fweights``/``aweights`` are not supported."""
    if fweights is not None or aweights is not None:
        raise NotImplementedError("cov: fweights and aweights are not supported")
    m = checked_array("cov", m)
    (m,) = promote_dtypes_inexact("cov", m)
    if _aval(m).ndim > 2:
        raise ValueError("cov: m has more than 2 dimensions")
    m = reshape(m, (1, -1)) if _aval(m).ndim < 2 else m
    if not rowvar and _aval(m).shape[0] != 1:
        m = m.T
    if y is not None:
        y = checked_array("cov", y, 1)
        (y,) = promote_dtypes_inexact("cov", y)
        y = reshape(y, (1, -1)) if _aval(y).ndim < 2 else y
        if not rowvar and _aval(y).shape[0] != 1:
            y = y.T
        m = concatenate([m, lax.convert_element_type(y, _aval(m).dtype)], axis=0)
    n = _aval(m).shape[1]
    ddof = (0 if bias else 1) if ddof is None else ddof
    centered = m - sum(m, axis=1, keepdims=True) / n
    c = einsum("ij,kj->ik", centered, conj(centered)) / (n - ddof)
    return reshape(c, ()) if _aval(c).shape == (1, 1) else c


def corrcoef(x: ArrayLike, y: ArrayLike = None, rowvar: bool = True) -> Array:
    """The correlation coefficients ``cov[i, j] / sqrt(cov[i, i] cov[j, j])``,
    clipped to [-1, 1]."""

    c = cov(checked_array("corrcoef", x), y, rowvar)
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
