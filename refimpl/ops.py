"""``jax.ops``: the segment reductions ``segment_sum``, ``segment_prod``,
``segment_min`` and ``segment_max``, as JAX 0.10.2's.

``out[i]`` combines every ``data[k]`` whose ``segment_ids[k] == i`` (along
``data``'s first axis); a segment no id names holds the reduction's identity
(0, 1, the dtype's largest or smallest value, +-inf). Ids are not counted from
the end: a negative id, or one not below ``num_segments``, is dropped (``mode``
None, ``"drop"`` or ``"fill"``) or clamped into range (``"clip"``,
``"promise_in_bounds"``). ``num_segments`` defaults to ``max(segment_ids) + 1``,
which needs concrete ids. ``bucket_size`` (JAX reduces per bucket, for
precision) and the sortedness/uniqueness hints change no values here.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from refimpl import dtypes
from refimpl import numpy as rnp

__all__ = ["segment_max", "segment_min", "segment_prod", "segment_sum"]

_DROP_MODES = (None, "drop", "fill")
_CLIP_MODES = ("clip", "promise_in_bounds")


def _identity(kind: str, dtype: np.dtype) -> Any:
    if kind == "add":
        return 0
    if kind == "multiply":
        return 1
    if dtypes.is_bool(dtype):
        return kind == "min"
    if dtypes.is_integer(dtype):
        info = np.iinfo(dtype)
        return info.max if kind == "min" else info.min
    return np.inf if kind == "min" else -np.inf


def _segment(
    name: str,
    kind: str,
    data: Any,
    segment_ids: Any,
    num_segments: int | None,
    indices_are_sorted: bool,
    unique_indices: bool,
    mode: str | None,
) -> Any:
    for position, arg in enumerate((data, segment_ids)):
        if isinstance(arg, (list, tuple)):  # JAX's check_arraylike
            raise TypeError(
                f"{name}: requires array or scalar arguments, got {type(arg).__name__} "
                f"at position {position}"
            )
    data = rnp.asarray(data)
    ids = rnp.asarray(segment_ids)
    if not dtypes.is_integer(ids.dtype):
        raise TypeError(f"{name}: segment_ids must be integers, got dtype {ids.dtype.name}")
    if num_segments is None:
        # needs concrete ids (int() of a traced value is a ConcretizationTypeError)
        num_segments = int(rnp.max(ids)) + 1
    num_segments = operator.index(num_segments)
    if num_segments < 0:
        raise ValueError(f"{name}: num_segments must be non-negative, got {num_segments}")
    if mode not in _DROP_MODES + _CLIP_MODES:
        raise ValueError(
            f"{name}: mode must be one of {_DROP_MODES[1:] + _CLIP_MODES}, got {mode!r}"
        )
    out = rnp.full((num_segments, *data.shape[1:]), _identity(kind, data.dtype), data.dtype)
    ids = ids.astype(np.int64 if ids.dtype.itemsize == 8 else np.int32)
    if mode in _CLIP_MODES:
        ids = rnp.clip(ids, 0, max(num_segments - 1, 0))
        at_mode = "clip"
    else:  # a negative id is out of range, not counted from the end
        ids = rnp.where(ids < 0, num_segments, ids)
        at_mode = "drop"
    update = getattr(out.at[ids], kind)
    return update(
        data, indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=at_mode
    )


def segment_sum(
    data: Any,
    segment_ids: Any,
    num_segments: int | None = None,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
    bucket_size: int | None = None,
    mode: str | None = None,
) -> Any:
    """The sum of ``data``'s rows per segment (see the module docstring)."""
    return _segment(
        "segment_sum", "add", data, segment_ids, num_segments, indices_are_sorted,
        unique_indices, mode,
    )  # fmt: skip


def segment_prod(
    data: Any,
    segment_ids: Any,
    num_segments: int | None = None,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
    bucket_size: int | None = None,
    mode: str | None = None,
) -> Any:
    """The product of ``data``'s rows per segment (see the module docstring)."""
    return _segment(
        "segment_prod", "multiply", data, segment_ids, num_segments, indices_are_sorted,
        unique_indices, mode,
    )  # fmt: skip


def segment_max(
    data: Any,
    segment_ids: Any,
    num_segments: int | None = None,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
    bucket_size: int | None = None,
    mode: str | None = None,
) -> Any:
    """The maximum of ``data``'s rows per segment (see the module docstring)."""
    return _segment(
        "segment_max", "max", data, segment_ids, num_segments, indices_are_sorted,
        unique_indices, mode,
    )  # fmt: skip


def segment_min(
    data: Any,
    segment_ids: Any,
    num_segments: int | None = None,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
    bucket_size: int | None = None,
    mode: str | None = None,
) -> Any:
    """The minimum of ``data``'s rows per segment (see the module docstring)."""
    return _segment(
        "segment_min", "min", data, segment_ids, num_segments, indices_are_sorted,
        unique_indices, mode,
    )  # fmt: skip
