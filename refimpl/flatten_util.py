"""``jax.flatten_util``: a pytree of arrays as one flat vector, and back.

``ravel_pytree(tree) -> (flat, unravel)``: ``flat`` is the leaves, each
raveled, concatenated in flatten order; its dtype is the promotion of the
leaves' dtypes (an empty tree gives a ``float32[0]``). ``unravel(flat)``
splits a vector of that length back into the leaves' shapes and dtypes and
rebuilds the tree. When all leaves share one dtype, ``unravel`` accepts any
dtype and keeps it (no conversion); otherwise it requires ``flat``'s dtype
and converts each piece back to its leaf's dtype. Both work under every
transformation (they are ``lax`` operations).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from refimpl import dtypes_api, lax
from refimpl.tree_util import PyTreeDef, tree_flatten, tree_unflatten

__all__ = ["ravel_pytree"]


def ravel_pytree(pytree: Any) -> tuple[Any, Callable[[Any], Any]]:
    """The leaves of ``pytree`` as one 1-D array, and the function that
    rebuilds the tree from such an array."""
    leaves, treedef = tree_flatten(pytree)
    flat, unravel_list = _ravel_list(leaves)
    return flat, functools.partial(_unravel_pytree, treedef, unravel_list)


def _unravel_pytree(treedef: PyTreeDef, unravel_list: Callable, flat: Any) -> Any:
    return tree_unflatten(treedef, unravel_list(flat))


def _ravel_list(leaves: list[Any]) -> tuple[Any, Callable[[Any], list[Any]]]:
    if not leaves:
        return lax.full([0], 0, "float32"), lambda _: []
    from_dtypes = tuple(dtypes_api.result_type(x) for x in leaves)
    to_dtype = dtypes_api.result_type(*from_dtypes)
    sizes = tuple(int(np.size(x)) for x in leaves)
    shapes = tuple(tuple(np.shape(x)) for x in leaves)
    if all(d == to_dtype for d in from_dtypes):
        raveled = lax.concatenate([lax.reshape(x, (n,)) for x, n in zip(leaves, sizes)], 0)
        return raveled, functools.partial(_unravel_same_dtype, sizes, shapes)
    pieces = [
        lax.reshape(lax.convert_element_type(x, to_dtype), (n,)) for x, n in zip(leaves, sizes)
    ]
    unravel = functools.partial(_unravel_converting, sizes, shapes, from_dtypes, to_dtype)
    return lax.concatenate(pieces, 0), unravel


def _unravel_same_dtype(sizes: tuple[int, ...], shapes: tuple, flat: Any) -> list[Any]:
    chunks = lax.split(flat, sizes)
    return [lax.reshape(c, shape) for c, shape in zip(chunks, shapes)]


def _unravel_converting(
    sizes: tuple[int, ...], shapes: tuple, from_dtypes: tuple, to_dtype: np.dtype, flat: Any
) -> list[Any]:
    got = dtypes_api.result_type(flat)
    if got != to_dtype:
        raise TypeError(
            f"unravel function given array of dtype {got}, but expected dtype {to_dtype}"
        )
    chunks = lax.split(flat, sizes)
    return [
        lax.convert_element_type(lax.reshape(c, shape), d)
        for c, shape, d in zip(chunks, shapes, from_dtypes)
    ]
