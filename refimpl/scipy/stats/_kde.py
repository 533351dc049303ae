"""``gaussian_kde``: a Gaussian kernel density estimate (as ``scipy.stats.gaussian_kde``).

For a ``(d, n)`` dataset with weights ``w`` (uniform by default) the density is
``sum_j w_j N(x; x_j, H)`` with bandwidth matrix ``H = factor^2 Cov`` (``Cov``
the weighted sample covariance). ``factor`` is Scott's rule ``neff^(-1/(d+4))``
(the default), Silverman's ``(neff (d+2)/4)^(-1/(d+4))``, a scalar, or a
callable of the estimate; ``neff = 1 / sum w^2``. A pytree (its arrays are the
leaves), so it can be passed through ``jit``/``vmap``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from refimpl import dtypes, random
from refimpl import numpy as rnp
from refimpl.numpy._promote import checked_array, promote_dtypes_inexact
from refimpl.numpy._shape import reshape as _reshape  # arrays, also of NumPy data
from refimpl.scipy import linalg
from refimpl.scipy.special import logsumexp, ndtr
from refimpl.transforms.batching import vmap
from refimpl.tree_util import register_pytree_node_class


def _inexact(*args: Any) -> list[Any]:
    return [rnp.asarray(v) for v in promote_dtypes_inexact("gaussian_kde", *args)]


@register_pytree_node_class
@dataclass(frozen=True, init=False)
class gaussian_kde:  # noqa: N801 (JAX's name)
    neff: Any
    dataset: Any
    weights: Any
    covariance: Any
    inv_cov: Any

    def __init__(self, dataset: Any, bw_method: Any = None, weights: Any = None) -> None:
        dataset = rnp.atleast_2d(checked_array("gaussian_kde", dataset))
        if dtypes.is_complex(dataset.dtype):
            raise NotImplementedError("gaussian_kde does not support complex data")
        if not dataset.size > 1:
            raise ValueError("`dataset` input should have multiple elements.")
        d, n = dataset.shape
        if weights is not None:
            dataset, weights = _inexact(dataset, checked_array("gaussian_kde", weights))
            weights = rnp.atleast_1d(weights)
            weights = weights / rnp.sum(weights)
            if weights.ndim != 1:
                raise ValueError("`weights` input should be one-dimensional.")
            if len(weights) != n:
                raise ValueError("`weights` input should be of length n")
        else:
            (dataset,) = _inexact(dataset)
            weights = rnp.full(n, 1.0 / n, dtype=dataset.dtype)
        self._set("dataset", dataset)
        self._set("weights", weights)
        neff = self._set("neff", 1 / rnp.sum(weights**2))
        bw_method = "scott" if bw_method is None else bw_method
        if isinstance(bw_method, str) and bw_method == "scott":
            factor = rnp.power(neff, -1.0 / (d + 4))
        elif isinstance(bw_method, str) and bw_method == "silverman":
            factor = rnp.power(neff * (d + 2) / 4.0, -1.0 / (d + 4))
        elif rnp.isscalar(bw_method) and not isinstance(bw_method, str):
            factor = bw_method
        elif callable(bw_method):
            factor = bw_method(self)
        else:
            raise ValueError("`bw_method` should be 'scott', 'silverman', a scalar, or a callable.")
        covariance = _weighted_cov(dataset, weights)
        inv_cov = rnp.linalg.inv(covariance)
        self._set("covariance", covariance * factor**2)
        self._set("inv_cov", inv_cov / factor**2)

    def _set(self, name: str, value: Any) -> Any:
        object.__setattr__(self, name, value)
        return value

    def tree_flatten(self) -> tuple[tuple[Any, ...], None]:
        return (self.neff, self.dataset, self.weights, self.covariance, self.inv_cov), None

    @classmethod
    def tree_unflatten(cls, aux_data: Any, children: Any) -> gaussian_kde:
        del aux_data
        kde = cls.__new__(cls)
        for name, value in zip(("neff", "dataset", "weights", "covariance", "inv_cov"), children):
            kde._set(name, value)
        return kde

    @property
    def d(self) -> int:
        return self.dataset.shape[0]

    @property
    def n(self) -> int:
        return self.dataset.shape[1]

    def evaluate(self, points: Any) -> Any:
        points = self._reshape_points(checked_array("evaluate", points))
        return _kernel_eval(False, self.dataset.T, self.weights[:, None], points.T, self.inv_cov)[
            :, 0
        ]

    def __call__(self, points: Any) -> Any:
        return self.evaluate(points)

    def pdf(self, x: Any) -> Any:
        return self.evaluate(x)

    def logpdf(self, x: Any) -> Any:
        x = self._reshape_points(checked_array("logpdf", x))
        return _kernel_eval(True, self.dataset.T, self.weights[:, None], x.T, self.inv_cov)[:, 0]

    def integrate_gaussian(self, mean: Any, cov: Any) -> Any:
        mean = rnp.atleast_1d(rnp.squeeze(mean))
        cov = rnp.atleast_2d(cov)
        if mean.shape != (self.d,):
            raise ValueError(f"mean does not have dimension {self.d}")
        if cov.shape != (self.d, self.d):
            raise ValueError(f"covariance does not have dimension {self.d}")
        chol = linalg.cho_factor(self.covariance + cov)
        norm = 1.0 / (rnp.sqrt(2 * np.pi) ** self.d * rnp.prod(rnp.diag(chol[0])))
        return _kernel_convolve(chol, norm, self.dataset, self.weights, mean)

    def integrate_box_1d(self, low: Any, high: Any) -> Any:
        if self.d != 1:
            raise ValueError("integrate_box_1d() only handles 1D pdfs")
        if np.ndim(low) != 0 or np.ndim(high) != 0:
            raise ValueError("the limits of integration in integrate_box_1d must be scalars")
        sigma = rnp.squeeze(rnp.sqrt(self.covariance))
        low = rnp.squeeze((low - self.dataset) / sigma)
        high = rnp.squeeze((high - self.dataset) / sigma)
        return rnp.sum(self.weights * (ndtr(high) - ndtr(low)))

    def integrate_kde(self, other: gaussian_kde) -> Any:
        if other.d != self.d:
            raise ValueError("KDEs are not the same dimensionality")
        chol = linalg.cho_factor(self.covariance + other.covariance)
        norm = 1.0 / (rnp.sqrt(2 * np.pi) ** self.d * rnp.prod(rnp.diag(chol[0])))
        small, large = (self, other) if self.n < other.n else (other, self)
        convolve = partial(_kernel_convolve, chol, norm, large.dataset, large.weights)
        return rnp.sum(vmap(convolve, in_axes=1)(small.dataset) * small.weights)

    def resample(self, key: Any, shape: tuple[int, ...] = ()) -> Any:
        index_key, eps_key = random.split(key)
        index = random.choice(index_key, self.n, shape=shape, p=self.weights)
        mean = rnp.zeros(self.d, self.covariance.dtype)
        eps = random.multivariate_normal(
            eps_key, mean, self.covariance, shape=shape, dtype=self.dataset.dtype
        ).T
        return self.dataset[:, index] + eps

    def integrate_box(self, low_bounds: Any, high_bounds: Any, maxpts: Any = None) -> Any:
        raise NotImplementedError("only 1D box integrations are supported; use `integrate_box_1d`")

    def set_bandwidth(self, bw_method: Any = None) -> None:
        raise NotImplementedError("dynamically changing the bandwidth method is not supported")

    def _reshape_points(self, points: Any) -> Any:
        if dtypes.is_complex(points.dtype):
            raise NotImplementedError("gaussian_kde does not support complex coordinates")
        points = rnp.atleast_2d(points)
        d, m = points.shape
        if d != self.d:
            if d == 1 and m == self.d:
                points = _reshape(points, (self.d, 1))
            else:
                raise ValueError(f"points have dimension {d}, dataset has dimension {self.d}")
        return points


def _weighted_cov(dataset: Any, weights: Any) -> Any:
    """``cov(dataset, aweights=weights)`` (rows are variables; ``ddof=1``):
    ``sum_j w_j (x_j - m)(x_j - m)^T / (W - sum w^2 / W)`` with ``m`` the
    weighted mean and ``W = sum w``."""
    total = rnp.sum(weights)
    mean = rnp.sum(dataset * weights, axis=1) / total
    centered = dataset - mean[:, None]
    factor = total - rnp.sum(weights * weights) / total
    return rnp.atleast_2d(rnp.dot(centered, (centered * weights).T) / factor)


def _kernel_convolve(chol: Any, norm: Any, target: Any, weights: Any, mean: Any) -> Any:
    diff = target - mean[:, None]
    alpha = linalg.cho_solve(chol, diff)
    return norm * rnp.sum(rnp.exp(-0.5 * rnp.sum(diff * alpha, axis=0)) * weights)


def _kernel_eval(in_log: bool, points: Any, values: Any, xi: Any, precision: Any) -> Any:
    points, values, xi, precision = _inexact(points, values, xi, precision)
    d = points.shape[1]
    if xi.shape[1] != d:
        raise ValueError("points and xi must have same trailing dim")
    if precision.shape != (d, d):
        raise ValueError("precision matrix must match data dims")
    whitening = linalg.cholesky(precision, lower=True)
    points = rnp.dot(points, whitening)
    xi = rnp.dot(xi, whitening)
    log_norm = rnp.sum(rnp.log(rnp.diag(whitening))) - 0.5 * d * rnp.log(2 * np.pi)

    def kernel(x_test: Any, x_train: Any, y_train: Any) -> Any:
        arg = log_norm - 0.5 * rnp.sum(rnp.square(x_train - x_test))
        return rnp.log(y_train) + arg if in_log else y_train * rnp.exp(arg)

    reduce = logsumexp if in_log else rnp.sum

    def reduced(x: Any) -> Any:
        return reduce(vmap(kernel, in_axes=(None, 0, 0))(x, points, values), axis=0)

    return vmap(reduced)(xi)
