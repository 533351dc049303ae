"""``dot`` and ``batch_matmul``: ``jax.lax``'s shorthands for ``dot_general``."""

from __future__ import annotations

from typing import Any

from refimpl.lax._elementwise import _aval
from refimpl.primitives import linalg


def dot(
    lhs: Any,
    rhs: Any,
    *,
    dimension_numbers: Any = None,
    precision: Any = None,
    preferred_element_type: Any = None,
    out_sharding: Any = None,
) -> Any:
    """Vector/matrix products (ranks 1 or 2, contracting lhs's last dim with
    rhs's first), or ``dot_general`` with ``dimension_numbers``."""
    if dimension_numbers is None:
        ls, rs = _aval(lhs, "dot", 0).shape, _aval(rhs, "dot", 1).shape
        if not (1 <= len(ls) <= 2 and 1 <= len(rs) <= 2 and ls[-1] == rs[0]):
            raise ValueError(
                "dot: dimension_numbers must be specified when not performing simple "
                "un-batched matrix-matrix, matrix-vector, or vector-vector products; "
                f"got lhs_shape={ls} rhs_shape={rs}"
            )
        dimension_numbers = (((len(ls) - 1,), (0,)), ((), ()))
    return linalg.dot_general(
        lhs, rhs, dimension_numbers, precision, preferred_element_type, out_sharding=out_sharding
    )


def batch_matmul(lhs: Any, rhs: Any, precision: Any = None) -> Any:
    """Batched matrix product: all but the last two dims are batch dims."""
    ls, rs = _aval(lhs, "batch_matmul", 0).shape, _aval(rhs, "batch_matmul", 1).shape
    if len(ls) != len(rs) or len(ls) < 2:
        raise ValueError(
            "batch_matmul: lhs and rhs must have the same rank of at least 2, "
            f"got shapes {ls} and {rs}"
        )
    if ls[:-2] != rs[:-2]:
        raise ValueError(
            f"batch_matmul: lhs and rhs must agree on batch dimensions, got {ls} and {rs}"
        )
    batch = tuple(range(len(ls) - 2))
    return linalg.dot_general(
        lhs, rhs, (((len(ls) - 1,), (len(rs) - 2,)), (batch, batch)), precision
    )


__all__ = [
    "dot",
    "batch_matmul",
]
