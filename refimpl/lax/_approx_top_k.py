"""``approx_max_k`` / ``approx_min_k``: exact top-k here, with JAX's output
size rule (``recall_target``, ``reduction_dimension``,
``aggregate_to_topk``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from refimpl import dtypes, tracing
from refimpl.primitives import reductions, sorting, structural
from refimpl.primitives.base import normalize_axis

# --- approx_max_k / approx_min_k --------------------------------------------------------------


def _approx_k(
    api: str, operand: Any, k: Any, reduction_dimension: Any, recall_target: Any,
    reduction_input_size_override: Any, aggregate_to_topk: Any, largest: bool,
) -> list[Any]:  # fmt: skip
    aval = tracing.get_aval(operand, api, "operand")
    if aval.ndim == 0:
        raise TypeError(f"{api}: operand must have >= 1 dimension, got shape {aval.shape}")
    if not dtypes.is_floating(aval.dtype):
        raise ValueError(f"{api}: operand must be a floating type, got {aval.dtype}")
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool):
        raise TypeError(f"{api}: k must be an int, got {k!r}")
    dim = normalize_axis(api, reduction_dimension, aval.ndim, "reduction_dimension")
    size = aval.shape[dim]
    if k <= 0:
        raise ValueError(f"{api}: k must be positive, got {k}")
    if size < k:
        raise ValueError(f"{api}: k must be smaller than the size of reduction_dim {size}, got {k}")
    if not 0 < float(recall_target) <= 1:
        raise ValueError(f"{api}: recall_target must be in (0, 1], got {recall_target}")
    count = int(k)
    if not aggregate_to_topk:
        count = _approx_output_size(
            api, size, aval.ndim, count, float(recall_target), int(reduction_input_size_override)
        )
    moved = (
        structural.transpose(operand, _to_last(aval.ndim, dim)) if dim != aval.ndim - 1 else operand
    )
    last = aval.ndim - 1
    if largest and count < size:
        # XLA CPU turns the fallback's sort-and-slice into its TopK, so the
        # order is top_k's (totalOrder: 0.0 above -0.0, +NaN first)
        values, indices = sorting.top_k(moved, count)
    elif largest:
        iota = structural.broadcasted_iota(np.int32, moved_shape(aval.shape, dim), last)
        # nothing sliced off: XLA keeps the sort, whose GT comparator holds
        # -0.0 == 0.0; descending and stable (ties: lower index first) is
        # the ascending stable sort of the reversed axis, reversed
        values, indices = reductions.sort(
            (structural.rev(moved, (last,)), structural.rev(iota, (last,))),
            dimension=-1, num_keys=1,
        )  # fmt: skip
        values, indices = structural.rev(values, (last,)), structural.rev(indices, (last,))
    else:  # ascending, NaN last; ties: lower index first (a stable sort)
        iota = structural.broadcasted_iota(np.int32, moved_shape(aval.shape, dim), last)
        values, indices = reductions.sort((moved, iota), dimension=-1, num_keys=1)
        values = structural.slice_in_dim(values, 0, count, axis=aval.ndim - 1)
        indices = structural.slice_in_dim(indices, 0, count, axis=aval.ndim - 1)
    if dim != aval.ndim - 1:
        back = np.argsort(_to_last(aval.ndim, dim)).tolist()
        values, indices = structural.transpose(values, back), structural.transpose(indices, back)
    return [values, indices]  # a list, as JAX's (the primitive's multiple results)


def _to_last(ndim: int, dim: int) -> list[int]:
    return [d for d in range(ndim) if d != dim] + [dim]


def moved_shape(shape: tuple[int, ...], dim: int) -> tuple[int, ...]:
    return tuple(shape[d] for d in _to_last(len(shape), dim))


def _approx_output_size(
    api: str, size: int, rank: int, k: int, recall_target: float, override: int
) -> int:
    """How many candidates ``aggregate_to_topk=False`` returns (XLA's
    ApproxTopK reduction output size, which the CPU fallback keeps: the
    first that many of the sorted operand). The TPU algorithm reduces windows
    of ``2**r`` elements, ``r`` the largest that keeps the expected recall;
    sizes are padded to the TPU tiling (1024 for rank 1, else 128)."""
    tiling = 1024 if rank == 1 else 128
    if size <= tiling:
        return size

    def reduced(log2_reduction: int) -> int:  # padded to whole tiles after the reduction
        step = tiling << log2_reduction
        return (-(-size // step) * step) >> log2_reduction

    if k == 1:  # the maximum survives any reduction: down to one tile
        return reduced((-(-size // tiling) - 1).bit_length())
    if 0 <= override < size:
        raise ValueError(
            f"{api}: reduction_input_size_override {override} is smaller than the reduction "
            f"dimension {size}"
        )
    logical = override if override >= 0 else size
    if recall_target == 1.0:
        return size
    # windows needed for the recall: m >= (k - 1) / -log(recall)
    m = min(max(int((1.0 - k) / math.log(recall_target)), tiling), logical)
    log2_reduction = (logical // m).bit_length() - 1
    if log2_reduction <= 0:
        return size
    # no more than the whole tiles of the operand allow
    return reduced(min(log2_reduction, (size // tiling - 1).bit_length()))


def approx_max_k(
    operand: Any,
    k: int,
    reduction_dimension: int = -1,
    recall_target: float = 0.95,
    reduction_input_size_override: int = -1,
    aggregate_to_topk: bool = True,
) -> list[Any]:
    """``[values, int32 indices]`` (a list, as JAX) of the ``k`` largest entries of a float
    ``operand`` along ``reduction_dimension``, largest first (NaN first; ties:
    lower index first). As JAX on CPU and GPU, the result is exact (the
    approximate TPU algorithm is not modelled); ``recall_target`` is only
    checked, and ``aggregate_to_topk=False`` returns the first
    XLA-reduction-output-size entries of that order instead of ``k``."""
    return _approx_k(
        "approx_max_k", operand, k, reduction_dimension, recall_target,
        reduction_input_size_override, aggregate_to_topk, largest=True,
    )  # fmt: skip


def approx_min_k(
    operand: Any,
    k: int,
    reduction_dimension: int = -1,
    recall_target: float = 0.95,
    reduction_input_size_override: int = -1,
    aggregate_to_topk: bool = True,
) -> list[Any]:
    """As :func:`approx_max_k` for the ``k`` smallest entries, smallest first
    (ties: lower index first; NaN last: XLA's CPU sort with a plain ``LT``
    comparator places NaNs unpredictably, refimpl as the largest)."""
    return _approx_k(
        "approx_min_k", operand, k, reduction_dimension, recall_target,
        reduction_input_size_override, aggregate_to_topk, largest=False,
    )  # fmt: skip


__all__ = [
    "approx_max_k",
    "approx_min_k",
]
