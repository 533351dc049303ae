"""``mode``, ``rankdata`` and ``sem``: the sample statistics of ``jax.scipy.stats``.

* ``mode(a, axis=0, keepdims=False)``: the most frequent value along ``axis``
  (the smallest among ties) and its count, as a ``ModeResult``; ``axis=None``
  flattens. Only ``nan_policy="propagate"`` is implemented, as in JAX.
* ``rankdata(a, method="average", *, axis=None)``: ranks from 1 (``average``,
  ``min``, ``max``, ``dense``, ``ordinal`` for ties) in the default float
  dtype; all NaN when ``a`` has a NaN.
* ``sem(a, axis=0, ddof=1)``: the standard error of the mean, ``std / sqrt(n)``;
  ``nan_policy="omit"`` leaves NaNs out.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from refimpl import dtypes, lax
from refimpl import numpy as rnp
from refimpl.numpy._promote import checked_array
from refimpl.numpy._shape import reshape as _reshape  # arrays, also of NumPy data
from refimpl.scipy.stats._common import promote
from refimpl.transforms.batching import vmap


class ModeResult(NamedTuple):
    mode: Any
    count: Any


def _check_nan_policy(name: str, nan_policy: str) -> None:
    if nan_policy not in ("propagate", "omit", "raise"):
        raise ValueError(
            f"Illegal nan_policy value {nan_policy!r}; "
            "expected one of {'propagate', 'omit', 'raise'}"
        )
    if nan_policy == "omit":
        raise NotImplementedError(f"Logic for `nan_policy` of {nan_policy} is not implemented")
    if nan_policy == "raise":
        raise NotImplementedError(
            f"In order to best JIT compile `{name}`, we cannot know whether `x` contains "
            f"nans. Please check if nans exist in `x` outside of the `{name}` function."
        )


def _mode_1d(x: Any) -> tuple[Any, Any]:
    if x.size == 0:
        nan = rnp.array(np.nan, dtype=dtypes.canonicalize_dtype(float))
        return nan, rnp.array(0, dtype=dtypes.canonicalize_dtype(float))
    values, counts = rnp.unique(x, return_counts=True, size=x.size)
    return values[rnp.argmax(counts)], counts.max()


def mode(
    a: Any, axis: int | None = 0, nan_policy: str = "propagate", keepdims: bool = False
) -> ModeResult:
    x = rnp.atleast_1d(checked_array("mode", a))
    _check_nan_policy("mode", nan_policy)
    if axis is not None:
        if not -x.ndim <= axis < x.ndim:
            raise ValueError(f"axis {axis} is out of bounds for array of dimension {x.ndim}")
        axis = axis % x.ndim
    if keepdims:
        out_shape = tuple(1 if axis is None or i == axis else s for i, s in enumerate(x.shape))
    else:
        out_shape = () if axis is None else tuple(s for i, s in enumerate(x.shape) if i != axis)
    if axis is None:
        axis, x = 0, rnp.ravel(x)
    x = rnp.moveaxis(x, axis, 0)
    x = _reshape(x, (x.shape[0], math.prod(x.shape[1:])))
    values, counts = vmap(_mode_1d, in_axes=1)(x)
    return ModeResult(_reshape(values, out_shape), _reshape(counts, out_shape))


def _rank_1d(a: Any, method: str) -> Any:
    out_dtype = dtypes.canonicalize_dtype(float)
    ordered, sorter = lax.sort_key_val(a, rnp.arange(a.size))
    inverse = rnp.zeros_like(sorter).at[sorter].set(rnp.arange(sorter.size, dtype=sorter.dtype))
    if method == "ordinal":
        return (inverse + 1).astype(out_dtype)
    first = rnp.concatenate([rnp.array([True]), ordered[1:] != ordered[:-1]])
    dense = rnp.cumsum(first)[inverse]
    if method == "dense":
        return dense.astype(out_dtype)
    starts = rnp.nonzero(first, size=ordered.size + 1, fill_value=first.size)[0].astype(out_dtype)
    if method == "max":
        return starts[dense]
    if method == "min":
        return starts[dense - 1] + 1
    return 0.5 * (starts[dense] + starts[dense - 1] + 1)


def rankdata(
    a: Any, method: str = "average", *, axis: int | None = None, nan_policy: str = "propagate"
) -> Any:
    a = checked_array("rankdata", a)
    _check_nan_policy("rankdata", nan_policy)
    if method not in ("average", "min", "max", "dense", "ordinal"):
        raise ValueError(f"unknown method '{method}'")
    if axis is not None:
        return rnp.apply_along_axis(rankdata, axis, a, method)
    a = rnp.ravel(a)
    out_dtype = dtypes.canonicalize_dtype(float)
    return lax.cond(
        rnp.any(rnp.isnan(a)),
        lambda v: rnp.full_like(v, np.nan, out_dtype),
        lambda v: _rank_1d(v, method),
        a,
    )


def sem(
    a: Any,
    axis: int | None = 0,
    ddof: int = 1,
    nan_policy: str = "propagate",
    *,
    keepdims: bool = False,
) -> Any:
    (b,) = promote("sem", a)
    if nan_policy == "propagate":
        size = b.size if axis is None else b.shape[axis]
        return rnp.std(b, axis, ddof=ddof, keepdims=keepdims) / rnp.sqrt(size).astype(b.dtype)
    if nan_policy == "omit":
        count = rnp.sum(~rnp.isnan(b), axis, keepdims=keepdims)
        return rnp.nanstd(b, axis, ddof=ddof, keepdims=keepdims) / rnp.sqrt(count).astype(b.dtype)
    raise ValueError(f"{nan_policy} is not supported")
