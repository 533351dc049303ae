"""``refimpl.nn.initializers``: ``jax.nn.initializers`` over ``refimpl.random``.

An initializer is ``init(key, shape, dtype=<its default>) -> array``. Given
the same key, each returns JAX's values (the random parts are
``refimpl.random`` samples, then scaled in the weights' dtype as JAX does).

Variance scaling: with ``fan_in``/``fan_out`` the products of the input/output
axes' sizes times the receptive field (the size of every other non-batch
axis) and ``n`` chosen by ``mode`` (``fan_in``, ``fan_out``, their mean
``fan_avg`` or geometric mean ``fan_geo_avg``), the variance is
``scale / n``; samples are ``truncated_normal(-2, 2) * sqrt(var) / 0.8796...``
(the standard deviation of a standard normal truncated to (-2, 2)),
``normal * sqrt(var)`` or ``uniform(-1, 1) * sqrt(3 var)``.
``orthogonal`` equals JAX's up to rounding (a QR factorization; see
``refimpl.random.orthogonal``). Not provided: ``delta_orthogonal``, complex dtypes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from refimpl import dtypes, random
from refimpl import numpy as rnp
from refimpl.numpy._shape import reshape as _reshape  # arrays, also of NumPy data

__all__ = [
    "constant",
    "glorot_normal",
    "glorot_uniform",
    "he_normal",
    "he_uniform",
    "kaiming_normal",
    "kaiming_uniform",
    "lecun_normal",
    "lecun_uniform",
    "normal",
    "ones",
    "orthogonal",
    "truncated_normal",
    "uniform",
    "variance_scaling",
    "xavier_normal",
    "xavier_uniform",
    "zeros",
]


def _dtype(name: str, dtype: Any) -> np.dtype:
    dtype = dtypes.canonicalize_dtype(float if dtype is None else dtype)
    if dtypes.is_complex(dtype):
        raise NotImplementedError(f"nn.initializers.{name}: complex dtypes are not supported")
    return dtype


def zeros(key: Any, shape: Sequence[int], dtype: Any = None) -> Any:
    """An array of zeros (the key is unused)."""
    return rnp.zeros(shape, dtypes.canonicalize_dtype(float if dtype is None else dtype))


def ones(key: Any, shape: Sequence[int], dtype: Any = None) -> Any:
    """An array of ones (the key is unused)."""
    return rnp.ones(shape, dtypes.canonicalize_dtype(float if dtype is None else dtype))


def constant(value: Any, dtype: Any = None):
    """An initializer filling the array with ``value``."""

    def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Any:
        return rnp.full(shape, value, dtypes.canonicalize_dtype(float if dtype is None else dtype))

    return init


def uniform(scale: float = 1e-2, dtype: Any = None):
    """``uniform(key, shape) * scale``: values in ``[0, scale)``."""

    def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Any:
        dtype = _dtype("uniform", dtype)
        return rnp.multiply(random.uniform(key, shape, dtype), np.asarray(scale, dtype))

    return init


def normal(stddev: float = 1e-2, dtype: Any = None):
    """``normal(key, shape) * stddev``."""

    def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Any:
        dtype = _dtype("normal", dtype)
        return rnp.multiply(random.normal(key, shape, dtype), np.asarray(stddev, dtype))

    return init


def truncated_normal(
    stddev: float = 1e-2, dtype: Any = None, lower: float = -2.0, upper: float = 2.0
):
    """``truncated_normal(key, lower, upper, shape) * stddev`` (no variance correction)."""

    def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Any:
        dtype = _dtype("truncated_normal", dtype)
        samples = random.truncated_normal(key, lower, upper, shape, dtype)
        return rnp.multiply(samples, np.asarray(stddev, dtype))

    return init


def _axes_size(shape: tuple[int, ...], axes: int | Sequence[int]) -> int:
    if isinstance(axes, int):
        return shape[axes]
    return math.prod(shape[i] for i in axes)


def _compute_fans(shape: tuple[int, ...], in_axis, out_axis, batch_axis) -> tuple[float, float]:
    if isinstance(in_axis, int) and in_axis == -2 and len(shape) <= 1:
        raise ValueError(
            f"Can't compute input and output sizes of a {len(shape)}-dimensional weights "
            "tensor with default in_axis. Must be at least 2D or specify in_axis explicitly."
        )
    in_size = _axes_size(shape, in_axis)
    out_size = _axes_size(shape, out_axis)
    batch_size = _axes_size(shape, batch_axis)
    receptive_field = math.prod(shape) / in_size / out_size / batch_size
    return in_size * receptive_field, out_size * receptive_field


# the standard deviation of a standard normal truncated to (-2, 2)
_TRUNCATED_STDDEV = 0.87962566103423978


def variance_scaling(
    scale: float,
    mode: str,
    distribution: str,
    in_axis: int | Sequence[int] = -2,
    out_axis: int | Sequence[int] = -1,
    batch_axis: int | Sequence[int] = (),
    dtype: Any = None,
):
    """Samples with variance ``scale / n`` (see the module docstring)."""
    if mode not in ("fan_in", "fan_out", "fan_avg", "fan_geo_avg"):
        raise ValueError(f"invalid mode for variance scaling initializer: {mode}")
    if distribution not in ("truncated_normal", "normal", "uniform"):
        raise ValueError(f"invalid distribution for variance scaling initializer: {distribution}")

    def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Any:
        shape = tuple(int(d) for d in shape)
        dtype = _dtype("variance_scaling", dtype)
        fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
        denominator = {
            "fan_in": fan_in,
            "fan_out": fan_out,
            "fan_avg": (fan_in + fan_out) / 2,
            "fan_geo_avg": (fan_in * fan_out) ** 0.5,
        }[mode]
        variance = np.asarray(scale / denominator, dtype)
        if distribution == "truncated_normal":
            stddev = rnp.divide(rnp.sqrt(variance), np.asarray(_TRUNCATED_STDDEV, dtype))
            return rnp.multiply(random.truncated_normal(key, -2, 2, shape, dtype), stddev)
        if distribution == "normal":
            return rnp.multiply(random.normal(key, shape, dtype), rnp.sqrt(variance))
        three_var = rnp.multiply(np.asarray(3, dtype), variance)
        return rnp.multiply(random.uniform(key, shape, dtype, -1, 1), rnp.sqrt(three_var))

    return init


def _preset(scale: float, mode: str, distribution: str):
    def make(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
        return variance_scaling(
            scale, mode, distribution, in_axis=in_axis, out_axis=out_axis,
            batch_axis=batch_axis, dtype=dtype,
        )  # fmt: skip

    return make


glorot_uniform = xavier_uniform = _preset(1.0, "fan_avg", "uniform")
glorot_normal = xavier_normal = _preset(1.0, "fan_avg", "truncated_normal")
lecun_uniform = _preset(1.0, "fan_in", "uniform")
lecun_normal = _preset(1.0, "fan_in", "truncated_normal")
he_uniform = kaiming_uniform = _preset(2.0, "fan_in", "uniform")
he_normal = kaiming_normal = _preset(2.0, "fan_in", "truncated_normal")
for _name in ("glorot_uniform", "glorot_normal", "lecun_uniform", "lecun_normal", "he_uniform",
              "he_normal"):  # fmt: skip
    globals()[_name].__name__ = _name


def orthogonal(scale: float = 1.0, column_axis: int = -1, dtype: Any = None):
    """``scale`` times a random matrix with orthonormal columns (or rows), the
    other axes flattened into rows (``jax.nn.initializers.orthogonal``)."""

    def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Any:
        shape = tuple(int(d) for d in shape)
        dtype = _dtype("orthogonal", dtype)
        if len(shape) < 2:
            raise ValueError("orthogonal initializer requires at least a 2D shape")
        if any(d == 0 for d in shape):
            return rnp.zeros(shape, dtype)
        n_cols = shape[column_axis]
        n_rows = math.prod(shape) // n_cols
        q = random.orthogonal(key, n_rows, (), dtype, n_cols)
        rest = tuple(d for i, d in enumerate(shape) if i != column_axis % len(shape))
        q = _reshape(q, (*rest, n_cols))
        q = rnp.moveaxis(q, -1, column_axis)
        return rnp.multiply(np.asarray(scale, dtype), q)

    return init
