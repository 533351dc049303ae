"""Permutations and choices: ``permutation``, ``choice``, ``categorical``
and ``orthogonal``.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from refimpl import dtypes, errors, lax, tracing
from refimpl import numpy as rnp
from refimpl.numpy import linalg
from refimpl.numpy._shape import reshape as _reshape  # arrays, also of NumPy data
from refimpl.random._basic import (
    _check_broadcast,
    _gumbel,
    _gumbel_mode,
    _normal_or_complex,
    _randint_of_dtype,
    _random_bits,
    _uniform,
)
from refimpl.random._keys import _as_shape, _key_data_of, _run, _split_data

# --- permutations and choices ----------------------------------------------------------


def _shuffle(data: Any, x: Any, axis: int) -> Any:
    """Sort by fresh random 32-bit keys, repeated ``ceil(3 ln n / ln(2**32 - 1))``
    times so that ties (which a stable sort resolves by position) are unlikely."""
    size = math.prod(np.shape(x))
    rounds = int(np.ceil(3 * np.log(max(1, size)) / np.log(2**32 - 1)))
    for _ in range(rounds):
        keys = _split_data(data, (2,))
        data, sub = keys[0], keys[1]
        sort_keys = _random_bits(sub, 32, tuple(np.shape(x)))
        _, x = lax.sort_key_val(sort_keys, x, axis)
    return x


def permutation(key: Any, x: Any, axis: int = 0, independent: bool = False) -> Any:
    """A random permutation of ``arange(x)`` (int ``x``) or of ``x`` along ``axis``."""
    data, _ = _key_data_of("permutation", key)
    axis = operator.index(axis)
    if not np.ndim(x):
        if not dtypes.is_integer(tracing.get_aval(x, "permutation", 1).dtype):
            raise TypeError("x must be an integer or at least 1-dimensional")
        if isinstance(x, tracing.Tracer):
            raise errors.ConcretizationTypeError(
                "permutation: argument x must be concrete (it is the length of the result)"
            )
        if not -1 <= axis < 1:  # arange(x) has one axis, as JAX checks
            raise ValueError(f"permutation: axis {axis} is out of bounds for rank 1")
        return _run("permutation", _permutation_of_range, (int(x),), data)
    ndim = np.ndim(x)
    if not -ndim <= axis < ndim:
        raise ValueError(f"permutation: axis {axis} is out of bounds for rank {ndim}")
    return _run("permutation", _permute, (axis % ndim, bool(independent)), data, x)


def _permutation_of_range(data: Any, n: int) -> Any:
    return _shuffle(data, rnp.arange(n), 0)


def _permute(data: Any, axis: int, independent: bool, x: Any) -> Any:
    x = rnp.asarray(x)
    if independent or x.ndim == 1:
        return _shuffle(data, x, axis)
    order = _shuffle(data, rnp.arange(np.shape(x)[axis]), 0)
    return rnp.take(x, order, axis=axis)


def _top_k_indices(values: Any, k: int) -> Any:
    """Indices of the ``k`` largest entries of a 1-D array, largest first, the
    lower index first among equals (``lax.top_k``'s order)."""
    n = np.shape(values)[0]
    order = lax.sort(
        (lax.neg(values), lax.iota(np.int32, n)), dimension=0, is_stable=True, num_keys=1
    )[1]
    return lax.slice(order, (0,), (k,))


def choice(
    key: Any,
    a: Any,
    shape: Sequence[int] = (),
    replace: bool = True,
    p: Any = None,
    axis: int = 0,
    mode: str | None = None,
) -> Any:
    """Random samples from ``a`` (or ``arange(a)``) along ``axis``.

    With replacement and no ``p``: ``randint`` indices. Without replacement
    and no ``p``: the first entries of a ``permutation``. With ``p`` and
    replacement: the first index whose cumulative probability reaches
    ``total * (1 - u)``. With ``p`` and without replacement: the top ``n``
    of ``gumbel + log(p)`` (the Gumbel top-k trick).
    """
    data, _ = _key_data_of("choice", key)
    axis = operator.index(axis)
    if not isinstance(shape, Sequence):
        raise TypeError(f"shape argument of choice must be a sequence, got {shape}")
    shape = _as_shape("choice", shape)
    ndim = np.ndim(a)
    if ndim == 0:
        if isinstance(a, tracing.Tracer):
            raise TypeError("choice: an integer a must be concrete")
        n_inputs = int(a)
    else:
        if not -ndim <= axis < ndim:
            raise ValueError(f"choice: axis {axis} is out of bounds for rank {ndim}")
        axis %= ndim
        n_inputs = np.shape(a)[axis]
    n_draws = math.prod(shape)
    if n_draws == 0:
        return rnp.zeros(shape, dtype=rnp.asarray(a).dtype)
    if n_inputs <= 0:
        raise ValueError("a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(
            f"Cannot take a larger sample (size {n_draws}) than population "
            f"(size {n_inputs}) when 'replace=False'"
        )
    if p is not None:
        if np.shape(p) != (n_inputs,):
            raise ValueError(
                "p must be None or a 1D vector with the same size as a.shape[axis]. "
                f"p has shape {np.shape(p)} and a.shape[axis] is {n_inputs}."
            )
        if not replace:
            mode = _gumbel_mode(mode)
    static = (shape, bool(replace), axis if ndim else 0, mode, n_inputs)
    return _run("choice", _choice, static, data, None if ndim == 0 else a, p)


def _choice(
    data: Any,
    shape: tuple[int, ...],
    replace: bool,
    axis: int,
    mode: str | None,
    n_inputs: int,
    a: Any,
    p: Any,
) -> Any:
    """:func:`choice` of ``a`` (None: ``arange(n_inputs)``), arguments checked."""
    n_draws = math.prod(shape)
    int_dtype = dtypes.canonicalize_dtype(int)
    if p is None:
        if replace:
            ind = _randint_of_dtype(data, shape, int_dtype, 0, n_inputs)
            result = ind if a is None else rnp.take(a, ind, axis=axis)
        else:
            if a is None:
                permuted = _permutation_of_range(data, n_inputs)
            else:
                permuted = _permute(data, axis, False, a)
            result = permuted[(slice(None),) * axis + (slice(n_draws),)]
    else:
        p_arr = rnp.asarray(p)
        if not dtypes.is_inexact(p_arr.dtype):
            p_arr = rnp.astype(p_arr, dtypes.canonicalize_dtype(float))
        if replace:
            cumulative = rnp.cumsum(p_arr)
            total = cumulative[-1]
            u = _uniform(data, shape, p_arr.dtype, 0.0, 1.0)
            r = rnp.multiply(total, rnp.subtract(np.asarray(1, p_arr.dtype), u))
            # searchsorted(cumulative, r, side="left"): how many entries are < r
            below = rnp.less(cumulative, rnp.expand_dims(r, -1))
            ind = rnp.astype(rnp.sum(below, axis=-1), int_dtype)
        else:
            g = rnp.add(_gumbel(data, (n_inputs,), p_arr.dtype, mode), rnp.log(p_arr))
            ind = rnp.astype(_top_k_indices(g, n_draws), int_dtype)
        result = ind if a is None else rnp.take(a, ind, axis=axis)
    if a is None:
        return _reshape(result, shape)
    a_shape = np.shape(a)
    return _reshape(result, (*a_shape[:axis], *shape, *a_shape[axis + 1 :]))


def categorical(
    key: Any,
    logits: Any,
    axis: int = -1,
    shape: Sequence[int] | None = None,
    replace: bool = True,
    mode: str | None = None,
) -> Any:
    """Samples of the categorical distributions ``softmax(logits, axis)``: the
    argmax of ``logits + gumbel`` (with replacement) or the top ``k`` of one
    Gumbel perturbation (without)."""
    data, _ = _key_data_of("categorical", key)
    axis = operator.index(axis)  # a concrete integer array too, as JAX's canonicalize_axis
    logits_shape = tuple(np.shape(logits))
    ndim = len(logits_shape)
    if not -ndim <= axis < ndim:
        raise ValueError(f"categorical: axis {axis} is out of bounds for rank {ndim}")
    batch_shape = tuple(np.delete(np.array(logits_shape, dtype=np.int64), axis).tolist())
    if shape is None:
        shape = batch_shape
    else:
        shape = _as_shape("categorical", shape)
        _check_broadcast("categorical", shape, np.empty(batch_shape))
    mode = _gumbel_mode(mode)
    if not replace:
        k = math.prod(shape[: len(shape) - len(batch_shape)])
        n = logits_shape[axis]
        if k > n:
            raise ValueError(
                f"Number of samples without replacement ({k}) cannot exceed number of "
                f"categories ({n})."
            )
    static = (axis % ndim, shape, batch_shape, bool(replace), mode)
    return _run("categorical", _categorical, static, data, logits)


def _categorical(
    data: Any,
    axis: int,
    shape: tuple[int, ...],
    batch_shape: tuple[int, ...],
    replace: bool,
    mode: str,
    logits: Any,
) -> Any:
    """:func:`categorical` along ``axis`` (non-negative), arguments checked."""
    logits = rnp.asarray(logits)
    ndim = logits.ndim
    prefix = shape[: len(shape) - len(batch_shape)]
    if replace:
        neg_axis = axis - ndim
        logits_shape = list(shape[len(shape) - len(batch_shape) :])
        logits_shape.insert(axis, logits.shape[axis])
        noise = _gumbel(data, (*prefix, *logits_shape), logits.dtype, mode)
        expanded = _reshape(logits, (1,) * len(prefix) + logits.shape)
        return rnp.argmax(rnp.add(noise, expanded), axis=neg_axis)
    perturbed = rnp.add(logits, _gumbel(data, logits.shape, logits.dtype, mode))
    k = math.prod(prefix)
    n = logits.shape[axis]
    moved = rnp.moveaxis(perturbed, axis, -1)
    flat = _reshape(moved, (-1, n))
    rows = [_top_k_indices(flat[i], k) for i in range(flat.shape[0])]
    indices = _reshape(rnp.stack(rows), (*batch_shape, k))
    perm = (indices.ndim - 1, *range(indices.ndim - 1))
    return _reshape(rnp.transpose(indices, perm), shape)


def orthogonal(
    key: Any, n: int, shape: Sequence[int] = (), dtype: Any = None, m: int | None = None
) -> Any:
    """Random ``n x m`` matrices with orthonormal columns (or rows, if ``n < m``):
    the ``Q`` of the QR factorization of a normal ``max(n,m) x min(n,m)``
    sample, its columns' signs set so that ``R`` has a positive diagonal
    (Haar-distributed). Equal to JAX's up to rounding: the factorization is
    unique, its floating-point evaluation is LAPACK's on both sides but not
    through the same code path."""
    data, _ = _key_data_of("orthogonal", key)
    dtype = dtypes.canonicalize_dtype(float if dtype is None else dtype)
    if not dtypes.is_inexact(dtype):  # complex too: a unitary sample (as JAX)
        raise ValueError(
            f"dtype argument to `orthogonal` must be a float or complex dtype, got {dtype}"
        )
    m = n if m is None else m
    for name, value in (("n", n), ("m", m)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise TypeError(f"orthogonal: {name} must be a non-negative int, got {value!r}")
    shape = _as_shape("orthogonal", shape)
    return _run("orthogonal", _orthogonal, (int(n), int(m), shape, dtype), data)


def _orthogonal(data: Any, n: int, m: int, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    z = _normal_or_complex(data, (*shape, max(n, m), min(n, m)), dtype)
    q, r = linalg.qr(z)
    d = linalg.diagonal(r)
    x = rnp.multiply(q, rnp.expand_dims(rnp.sign(d), -2))
    return rnp.swapaxes(x, -1, -2) if n < m else x


__all__ = [
    "categorical",
    "choice",
    "orthogonal",
    "permutation",
]
