"""The multivariate normal distribution.

``logpdf(x; mean, cov) = -(y^T cov^-1 y)/2 - (n/2) log(2 pi) - log|cov|/2``
with ``y = x - mean`` over the last axis (``n`` entries). ``cov`` may be a
scalar (``cov * I``) or an ``(..., n, n)`` positive definite matrix, solved
through its Cholesky factor ``L`` (``log|cov|/2 = sum log diag L``); a scalar
``mean`` makes it the univariate normal with variance ``cov``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import lax
from refimpl import numpy as rnp
from refimpl.numpy._promote import promote_dtypes_inexact


def logpdf(x: Any, mean: Any, cov: Any, allow_singular: None = None) -> Any:
    if allow_singular is not None:
        raise NotImplementedError("allow_singular argument of multivariate_normal.logpdf")
    x, mean, cov = (
        rnp.asarray(v) for v in promote_dtypes_inexact("multivariate_normal.logpdf", x, mean, cov)
    )
    if not mean.shape:
        return -1 / 2 * rnp.square(x - mean) / cov - 1 / 2 * (rnp.log(2 * np.pi) + rnp.log(cov))
    n = mean.shape[-1]
    if not cov.shape:
        y = x - mean
        quadratic = rnp.einsum("...i,...i->...", y, y)
        return -1 / 2 * quadratic / cov - n / 2 * (rnp.log(2 * np.pi) + rnp.log(cov))
    if cov.ndim < 2 or cov.shape[-2:] != (n, n):
        raise ValueError("multivariate_normal.logpdf got incompatible shapes")
    L = lax.linalg.cholesky(cov)

    def solve(L: Any, d: Any) -> Any:
        # y = L^-1 d, as the row vector solving y L^T = d (d as a 1 x n matrix)
        row = lax.linalg.triangular_solve(L, d[None, :], lower=True, transpose_a=True)
        return row[0]

    y = rnp.vectorize(solve, signature="(n,n),(n)->(n)")(L, x - mean)
    return (
        -1 / 2 * rnp.einsum("...i,...i->...", y, y)
        - n / 2 * rnp.log(2 * np.pi)
        - rnp.log(rnp.diagonal(L, axis1=-1, axis2=-2)).sum(-1)
    )


def pdf(x: Any, mean: Any, cov: Any) -> Any:
    return rnp.exp(logpdf(x, mean, cov))
