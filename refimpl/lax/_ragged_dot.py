"""``ragged_dot`` and ``ragged_dot_general``: products over groups of rows.

``group_sizes[i]`` consecutive entries of the lhs *ragged dimension* form
group ``i``. As JAX 0.10.2 (and its CPU lowering), the product is a
``dot_general`` of the lhs expanded densely over the groups: ``x[g, ...]`` is
``x`` where the ragged index falls in group ``g`` and zero elsewhere. The
three modes, by the kind of the lhs ragged dimension:

1. non-contracting (``m``): rhs has a group dimension; each row of group
   ``g`` is multiplied by ``rhs[g]`` (rows past the last group give zeros);
2. contracting (``k``): each group's slice of ``k`` gives one product, the
   result gains a leading group dimension;
3. batch: a plain ``dot_general`` (the groups only partition the batch).

``group_sizes`` is ``[g]``, or ``[b..., x..., g]`` per batch and outer
dimension (``lax.ragged_dot_general``'s docstring); the shape errors are
JAX's ``TypeError``s. Being made of other primitives, they differentiate
and batch as those do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from refimpl import tracing
from refimpl.lax._shapes import broadcast, full_like
from refimpl.primitives.elementwise import bitwise_and, le, lt, select, sub
from refimpl.primitives.linalg import dot_general
from refimpl.primitives.reductions import cumsum
from refimpl.primitives.structural import broadcast_in_dim, broadcasted_iota, transpose


@dataclass(frozen=True, init=False)
class RaggedDotDimensionNumbers:
    """``dot_dimension_numbers`` ``((lhs_contracting, rhs_contracting),
    (lhs_batch, rhs_batch))``, the lhs ragged dimension and the rhs group
    dimension (none when the ragged dimension is contracting or batch)."""

    dot_dimension_numbers: tuple
    lhs_ragged_dimensions: tuple[int, ...]
    rhs_group_dimensions: tuple[int, ...]

    def __init__(
        self, dot_dimension_numbers: Any, lhs_ragged_dimensions: Any, rhs_group_dimensions: Any
    ) -> None:
        numbers = tuple(tuple(tuple(d) for d in pair) for pair in dot_dimension_numbers)
        object.__setattr__(self, "dot_dimension_numbers", numbers)
        object.__setattr__(self, "lhs_ragged_dimensions", tuple(lhs_ragged_dimensions))
        object.__setattr__(self, "rhs_group_dimensions", tuple(rhs_group_dimensions))


_BASIC = RaggedDotDimensionNumbers((([1], [1]), ([], [])), [0], [0])


def ragged_dot(
    lhs: Any,
    rhs: Any,
    group_sizes: Any,
    precision: Any = None,
    preferred_element_type: Any = None,
    group_offset: Any = None,
) -> Any:
    """``lhs[m, k]`` by ``rhs[g, k, n]``: row ``i`` of group ``j`` times ``rhs[j]``."""
    return ragged_dot_general(
        lhs, rhs, group_sizes, _BASIC, precision, preferred_element_type, group_offset
    )


def _remaining(rank: int, *used: Sequence[int]) -> list[int]:
    taken = {d for dims in used for d in dims}
    return [d for d in range(rank) if d not in taken]


def _check_in_range(dim: int, rank: int, what: str, arg: str) -> None:
    if not 0 <= dim < rank:
        raise TypeError(
            f"ragged_dot_general requires {what} numbers to be nonnegative and less than the "
            f"number of axes of the {arg} value, got {dim} for {arg} of rank {rank}."
        )


def _mode(lhs_rank: int, ragged: int, contracting: Sequence[int], batch: Sequence[int]) -> str:
    if ragged in batch:
        return "batch"
    return "contracting" if ragged in contracting else "noncontracting"


def _prefix(mode: str, rank: int, ragged: int, contracting: Sequence[int], batch: Sequence[int]):
    """The dimensions whose sizes lead ``group_sizes`` (``[b..., x..., g]``)."""
    batch, contracting = list(batch), list(contracting)
    if mode == "batch":
        return batch[: batch.index(ragged)]
    if mode == "contracting":
        return batch + contracting[: contracting.index(ragged)]
    free = _remaining(rank, contracting, batch)
    return batch + free[: free.index(ragged)]


def _check(lhs: Any, rhs: Any, group_sizes: Any, numbers: RaggedDotDimensionNumbers) -> str:
    """JAX's shape and dtype rule for the operands; the mode."""
    if len(numbers.lhs_ragged_dimensions) != 1:
        raise TypeError("ragged_dot_general expects exactly one lhs ragged dimension.")
    (ragged,) = numbers.lhs_ragged_dimensions
    _check_in_range(ragged, lhs.ndim, "lhs ragged dimension", "lhs")
    (l_contract, r_contract), (l_batch, r_batch) = numbers.dot_dimension_numbers
    mode = _mode(lhs.ndim, ragged, l_contract, l_batch)
    if group_sizes.ndim == 0:
        raise TypeError("expected rank of group_sizes to be >=1.")
    if group_sizes.ndim != 1:
        prefix = _prefix(mode, lhs.ndim, ragged, l_contract, l_batch)
        expected = tuple(lhs.shape[i] for i in prefix) + (group_sizes.shape[-1],)
        if tuple(group_sizes.shape) != expected:
            raise TypeError(
                f"expected group_sizes to have shape {expected}, got {tuple(group_sizes.shape)}."
            )
    groups = numbers.rhs_group_dimensions
    if mode != "noncontracting":
        if groups:
            raise TypeError(
                "ragged_dot_general requires zero group dimensions in the rhs when lhs "
                "ragged dimension is contracting or batch."
            )
    else:
        if len(groups) != 1:
            raise TypeError(
                "ragged_dot_general requires exactly one rhs group dimension when lhs "
                "ragged dimension is noncontracting."
            )
        _check_in_range(groups[0], rhs.ndim, "rhs group dimension", "rhs")
        if groups[0] in r_batch or groups[0] in r_contract:
            raise TypeError(
                "ragged_dot_general requires rhs group dimension numbers to be distinct "
                "from contracting and batch dimensions."
            )
        if rhs.shape[groups[0]] != group_sizes.shape[-1]:
            raise TypeError(
                f"expected rhs group dimension size to be {group_sizes.shape[-1]}, "
                f"got {rhs.shape[groups[0]]}."
            )
    if not np.issubdtype(group_sizes.dtype, np.integer):
        raise TypeError(
            "ragged_dot_general requires that group_sizes.dtype is subtype of np.integer."
        )
    return mode


def _expand(x: Any, dim: int, group_sizes: Any, axes: Sequence[int]) -> Any:
    """``[g, *x.shape]``: ``x`` where index ``dim`` lies in group ``g`` (the
    groups of the row given by ``x``'s ``axes``), zero elsewhere."""
    shape = tuple(x.shape)
    groups = group_sizes.shape[-1]
    full = (groups, *shape)
    ends = cumsum(group_sizes, axis=group_sizes.ndim - 1)
    starts = sub(ends, group_sizes)
    # the group axis first, the prefix axes onto x's axes
    order = [group_sizes.ndim - 1, *range(group_sizes.ndim - 1)]
    spread = (0, *(1 + a for a in axes))
    ends = broadcast_in_dim(transpose(ends, order), full, spread)
    starts = broadcast_in_dim(transpose(starts, order), full, spread)
    index = broadcasted_iota(group_sizes.dtype, full, dim + 1)
    inside = bitwise_and(le(starts, index), lt(index, ends))
    dense = broadcast_in_dim(x, full, tuple(range(1, len(full))))
    return select(inside, dense, full_like(dense, 0))


def ragged_dot_general(
    lhs: Any,
    rhs: Any,
    group_sizes: Any,
    ragged_dot_dimension_numbers: RaggedDotDimensionNumbers,
    precision: Any = None,
    preferred_element_type: Any = None,
    group_offset: Any = None,
) -> Any:
    """``dot_general`` with one lhs dimension split into ``group_sizes`` groups
    (the module docstring gives the three modes)."""
    if group_offset is not None:
        raise NotImplementedError("Unimplemented group_offset support.")
    numbers = ragged_dot_dimension_numbers
    operands = (lhs, rhs, group_sizes)
    avals = [tracing.get_aval(v, "ragged_dot_general", i) for i, v in enumerate(operands)]
    mode = _check(avals[0], avals[1], avals[2], numbers)
    (ragged,) = numbers.lhs_ragged_dimensions
    (l_contract, r_contract), (l_batch, r_batch) = numbers.dot_dimension_numbers
    l_prefix = _prefix(mode, avals[0].ndim, ragged, l_contract, l_batch)
    if avals[2].ndim == 1:
        group_sizes = broadcast(group_sizes, [avals[0].shape[i] for i in l_prefix])

    def dot(x: Any, y: Any, dims: Any) -> Any:
        return dot_general(
            x, y, dims, precision=precision, preferred_element_type=preferred_element_type
        )

    def shifted(dims: Sequence[int]) -> list[int]:
        return [d + 1 for d in dims]

    if mode == "batch":
        return dot(lhs, rhs, numbers.dot_dimension_numbers)
    dense_lhs = _expand(lhs, ragged, group_sizes, l_prefix)
    if mode == "noncontracting":
        (group,) = numbers.rhs_group_dimensions
        return dot(
            dense_lhs,
            rhs,
            ((shifted(l_contract) + [0], [*r_contract, group]), (shifted(l_batch), list(r_batch))),
        )
    r_ragged = r_contract[list(l_contract).index(ragged)]
    r_prefix = _prefix(mode, avals[1].ndim, r_ragged, r_contract, r_batch)
    dense_rhs = _expand(rhs, r_ragged, group_sizes, r_prefix)
    return dot(
        dense_lhs,
        dense_rhs,
        (
            (shifted(l_contract), shifted(r_contract)),
            ([0, *shifted(l_batch)], [0, *shifted(r_batch)]),
        ),
    )


__all__ = ["RaggedDotDimensionNumbers", "ragged_dot", "ragged_dot_general"]
