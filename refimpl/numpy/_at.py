"""``x.at[index]``: functional indexed updates, as ``jax.numpy`` arrays have them.

``x.at[idx].set(v)`` is ``x`` with ``x[idx]`` replaced by ``v`` (broadcast to
``x[idx]``'s shape and converted to ``x``'s dtype); ``add``, ``subtract``,
``multiply``/``mul``, ``divide``, ``power``, ``min``, ``max`` combine instead,
``apply(f)`` applies a unary function there, and ``get`` reads ``x[idx]``.
Every index form of ``x[idx]`` works (ints, slices, ``None``, ``...``, integer
and boolean arrays).

How: the flat positions of the selected elements are found by indexing an
array of positions, ``iota(x.size).reshape(x.shape)[idx]``, which has the
shape of ``x[idx]`` and is exactly as NumPy's indexing rules place things.
Then one scatter (or gather) along the flattened ``x`` does the work.

Out-of-range indices, as in JAX: updates drop them (``mode="drop"``, the
default, and ``"promise_in_bounds"``, as XLA's scatter and JAX's docs) or clamp
them (``"clip"``); ``get`` clamps
them (default) or reads ``fill_value`` (``mode="fill"``; NaN or the integer
extreme by default). To see them, every axis indexed by an integer or an
array gets one extra position holding -1 (out of range of every scatter),
and out-of-range index values are sent there.

Repeated indices: ``set`` keeps the last update (JAX leaves it unspecified),
``add``/``multiply``/``min``/``max`` combine them all, ``apply`` applies the
function once per occurrence (``lax.scatter_apply``, as JAX). ``divide`` and ``power``
are ``x / ones.at[idx].multiply(v)`` and ``x ** ones.at[idx].multiply(v)``, as
in JAX.
"""

from __future__ import annotations

import builtins
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from refimpl import dtypes, lax, tracing
from refimpl.numpy import _indexing
from refimpl.numpy._creation import asarray, ones_like
from refimpl.numpy._promote import aval_of, is_traced
from refimpl.numpy._shape import broadcast_to, reshape
from refimpl.numpy._ufuncs import multiply, negative, power, true_divide
from refimpl.primitives import scatter as _scatter

Array = Any
_INT = np.dtype(np.int32)
# "fill" is accepted for updates as JAX's FILL_OR_DROP: out-of-range updates drop
_UPDATE_MODES = ("drop", "clip", "promise_in_bounds", "fill", None)
# "drop" is accepted for a read as JAX's FILL_OR_DROP too: it reads fill_value
_GET_MODES = ("fill", "clip", "promise_in_bounds", "drop", None)


class IndexUpdateHelper:
    """``x.at``: indexing it gives an :class:`IndexUpdateRef`."""

    __slots__ = ("array",)

    def __init__(self, array: Any) -> None:
        self.array = array

    def __getitem__(self, index: Any) -> IndexUpdateRef:
        return IndexUpdateRef(self.array, index)

    def __repr__(self) -> str:
        return f"_IndexUpdateHelper({self.array!r})"


class IndexUpdateRef:
    """``x.at[index]``: the methods return updated copies of ``x``."""

    __slots__ = ("array", "index")

    def __init__(self, array: Any, index: Any) -> None:
        self.array = array
        self.index = index

    def __repr__(self) -> str:
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

    def get(
        self,
        *,
        indices_are_sorted: bool = False,
        unique_indices: bool = False,
        mode: str | None = None,
        fill_value: Any = None,
        out_sharding: None = None,
        wrap_negative_indices: bool = True,
    ) -> Array:
        """``x[index]``; out-of-range indices clamp (by default their cotangents drop,
        as JAX's promise_in_bounds; ``mode="clip"``: they go to the clamped place),
        or read ``fill_value`` with ``mode="fill"``."""
        if mode not in _GET_MODES:
            raise ValueError(f"at[].get: mode must be one of {_GET_MODES[:-1]}, got {mode!r}")
        mode = "fill" if mode == "drop" else mode
        if mode != "fill" and fill_value is not None:
            raise ValueError("at[].get: fill_value is only used with mode='fill'")
        fill_shape = getattr(fill_value, "shape", None) if fill_value is not None else ()
        if fill_shape is None:
            fill_shape = np.shape(fill_value)
        if fill_shape != ():  # JAX's class for it: ValueError
            raise ValueError(f"at[].get: fill_value must be a scalar, got shape {fill_shape}")
        _check_out_sharding("get", out_sharding)
        wrap = wrap_negative_indices
        flat = reshape(self.array, (-1,))
        size = aval_of(flat, "at[].get", 0).shape[0]
        if size == 0:
            return _indexing.getitem(self.array, self.index)
        index = self.index
        if mode is None or mode == "promise_in_bounds":
            _indexing.check_python_ints(index, "at[].get")
        if mode == "clip":
            index = _static_ints_clamped(index)
        # JAX reads with a dynamic slice unless mode="fill" or an index is an array
        sliced = mode != "fill"
        positions = _positions(self.array, index, clip=sliced, wrap=wrap, sliced=sliced)
        if mode == "clip":
            return lax.gather_along_axis(flat, positions, 0, mode="clip")
        if mode != "fill":
            # JAX's promise_in_bounds (the default): the clamped read, but the
            # cotangent of an out-of-range index dropped (XLA's scatter skips it)
            taken = lax.gather_along_axis(flat, positions, 0, mode="clip")
            marked = _positions(self.array, index, clip=False, wrap=wrap, sliced=True)
            if not is_traced(marked) and bool(np.all(np.asarray(marked) >= 0)):
                return taken
            inside = lax.ge(marked, tracing.TypedScalar(0, _INT, False))
            return lax.select(inside, taken, lax.stop_gradient(taken))
        outside = lax.lt(positions, tracing.TypedScalar(0, _INT, False))
        positions = lax.select(outside, _full_like(positions, size), positions)
        return lax.gather_along_axis(flat, positions, 0, mode="fill", fill_value=fill_value)

    def set(self, values: Any, **kwargs: Any) -> Array:
        """``x`` with ``x[index] = values`` (the last of repeated indices wins)."""
        return _update("set", self.array, self.index, values, lax.scatter_along_axis, **kwargs)

    def add(self, values: Any, **kwargs: Any) -> Array:
        """``x`` with ``x[index] += values`` (repeated indices accumulate)."""
        return _update("add", self.array, self.index, values, lax.scatter_add_along_axis, **kwargs)

    def subtract(self, values: Any, **kwargs: Any) -> Array:
        """``x`` with ``x[index] -= values``."""

        values = negative(asarray(values))
        return _update(
            "subtract", self.array, self.index, values, lax.scatter_add_along_axis, **kwargs
        )

    def multiply(self, values: Any, **kwargs: Any) -> Array:
        """``x`` with ``x[index] *= values``."""
        if _unique_float_factors(self.array, self.index, values, kwargs):
            return multiply(self.array, ones_like(self.array).at[self.index].set(values, **kwargs))
        return _update(
            "multiply", self.array, self.index, values, _scatter.scatter_mul_along_axis, **kwargs
        )

    mul = multiply

    def divide(self, values: Any, **kwargs: Any) -> Array:
        """``x / ones.at[index].multiply(values)``."""

        return true_divide(self.array, self._factors(values, **kwargs))

    def power(self, values: Any, **kwargs: Any) -> Array:
        """``x ** ones.at[index].multiply(values)``."""

        return power(self.array, self._factors(values, **kwargs))

    def _factors(self, values: Any, **kwargs: Any) -> Array:
        ones = ones_like(self.array)
        if _unique_float_factors(self.array, self.index, values, kwargs):
            return ones.at[self.index].set(values, **kwargs)
        return _update(
            "multiply", ones, self.index, values, _scatter.scatter_mul_along_axis, **kwargs
        )

    def min(self, values: Any, **kwargs: Any) -> Array:  # noqa: A003
        """``x`` with ``x[index] = minimum(x[index], values)``."""
        return _update(
            "min", self.array, self.index, values, _scatter.scatter_min_along_axis, **kwargs
        )

    def max(self, values: Any, **kwargs: Any) -> Array:  # noqa: A003
        """``x`` with ``x[index] = maximum(x[index], values)``."""
        return _update(
            "max", self.array, self.index, values, _scatter.scatter_max_along_axis, **kwargs
        )

    def apply(
        self,
        func: Callable[[Any], Any],
        *,
        indices_are_sorted: bool = False,
        unique_indices: bool = False,
        mode: str | None = None,
        wrap_negative_indices: bool = True,
    ) -> Array:
        """``x`` with ``func`` (a unary scalar function) applied at
        ``x[index]``, once per time an index selects an element (a repeated
        index applies it repeatedly), as JAX's ``lax.scatter_apply``; not
        differentiable, as in JAX."""
        if mode not in _UPDATE_MODES:
            raise ValueError(f"at[].apply: mode must be one of {_UPDATE_MODES[:-1]}, got {mode!r}")
        array = self.array if is_traced(self.array) else asarray(self.array)
        aval = aval_of(array, "at[].apply", 0)
        if aval.size == 0:
            return array
        # promise_in_bounds drops an out-of-range index, as XLA's scatter (JAX's docs)
        positions = _positions(array, self.index, clip=mode == "clip", wrap=wrap_negative_indices)
        flat_positions = reshape(positions, (-1, 1))
        dnums = lax.ScatterDimensionNumbers(
            update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
        )
        out = lax.scatter_apply(
            reshape(array, (-1,)),
            flat_positions,
            func,
            dnums,
            update_shape=(aval_of(flat_positions, "at[].apply", 0).shape[0],),
            indices_are_sorted=indices_are_sorted,
            unique_indices=unique_indices,
            mode="drop",  # the positions of dropped indices are out of range
        )
        return reshape(out, aval.shape)


def _unique_float_factors(array: Any, index: Any, values: Any, kwargs: dict) -> bool:
    """Whether ``x.at[index].multiply(values)`` is ``x * ones.at[index].set(values)``:
    no index repeats (a basic index, or ``unique_indices=True``, as JAX's
    scatter_mul, which is differentiable in the updates only then) and the
    product keeps ``x``'s inexact dtype."""
    aval = aval_of(array, "at[].multiply", 0)
    if not dtypes.is_inexact(aval.dtype):
        return False
    if dtypes.result_type(aval, asarray(values))[0] != aval.dtype:
        return False
    return bool(kwargs.get("unique_indices")) or _scalar_indices(index)


def _scalar_indices(index: Any) -> bool:
    """Whether ``index`` selects each element at most once by construction (ints,
    0-d integer arrays, slices, ``None``, ``...``): JAX's ``unique_indices``."""
    for item in index if isinstance(index, tuple) else (index,):
        if item is None or item is Ellipsis or isinstance(item, (builtins.slice, int, np.integer)):
            continue
        item_aval = tracing.get_aval(item, "at", "index") if tracing.is_array_like(item) else None
        if item_aval is None or item_aval.ndim != 0 or not dtypes.is_integer(item_aval.dtype):
            return False
    return True


def _full_like(x: Any, value: int) -> Any:
    return lax.broadcast_in_dim(
        tracing.TypedScalar(value, _INT, False), aval_of(x, "at", 0).shape, ()
    )


def _as_dtype_of(array: Any, values: Any, method: str) -> Any:
    """``values`` converted to ``array``'s dtype (JAX converts the updates)."""
    aval = aval_of(array, f"at[].{method}", 0)
    values = asarray(values)
    v_aval = aval_of(values, f"at[].{method}", 1)
    if v_aval.dtype == aval.dtype and v_aval.weak_type == aval.weak_type:
        return values
    return lax.convert_element_type(values, aval.dtype, weak_type=aval.weak_type)


def _update(
    method: str,
    array: Any,
    index: Any,
    values: Any,
    scatter: Callable[..., Any],
    *,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
    mode: str | None = None,
    out_sharding: None = None,
    wrap_negative_indices: bool = True,
) -> Array:
    _check_out_sharding(method, out_sharding)
    if mode not in _UPDATE_MODES:
        raise ValueError(f"at[].{method}: mode must be one of {_UPDATE_MODES[:-1]}, got {mode!r}")
    aval = aval_of(array, f"at[].{method}", 0)
    _warn_unsafe_cast(aval, values)
    positions = _positions(array, index, clip=mode == "clip", wrap=wrap_negative_indices)
    target_shape = aval_of(positions, f"at[].{method}", 0).shape
    if 0 in target_shape:
        # nothing selected: x as it is, whatever the values (JAX skips the scatter
        # before it looks at them: a bool x may be added to, any shape of values)
        return array if is_traced(array) else asarray(array)
    if method in ("add", "multiply") and dtypes.is_bool(aval.dtype):
        raise TypeError(f"at[].{method}: does not accept dtype bool")
    combine_dtype, combine_weak = (
        dtypes.result_type(aval, asarray(values)) if method != "set" else (None, False)
    )
    # JAX promotes x and the values to one type (a weak one made strong too, so a
    # gradient in a weak Python scalar is weak again), combines, converts back
    promoted = (combine_dtype, combine_weak) != (aval.dtype, aval.weak_type)
    values = asarray(values) if method != "set" else _as_dtype_of(array, values, method)
    try:
        values = broadcast_to(values, target_shape)
    except ValueError:
        shape = aval_of(values, f"at[].{method}", 1).shape
        raise ValueError(
            f"at[].{method}: values of shape {shape} cannot be broadcast to the indexed "
            f"shape {target_shape}"
        ) from None
    flat = reshape(array, (-1,))
    if aval.size == 0:
        return array if is_traced(array) else asarray(array)
    if method != "set" and promoted:
        flat = lax.convert_element_type(flat, combine_dtype, weak_type=combine_weak)
    v_aval = aval_of(values, f"at[].{method}", 1)
    if method != "set" and (v_aval.dtype, v_aval.weak_type) != (combine_dtype, combine_weak):
        # also a weak Python scalar joining a narrower x (int8 x, int 1000: wraps, as JAX)
        values = lax.convert_element_type(values, combine_dtype, weak_type=combine_weak)
    flat_positions, flat_values = reshape(positions, (-1,)), reshape(values, (-1,))
    out = scatter(flat, flat_positions, flat_values, 0, mode="drop")
    # set's tangent follows the update that won, except where indices are unique
    unique = unique_indices or _scalar_indices(index)
    differentiable = dtypes.is_inexact(aval_of(flat_values, f"at[].{method}", 1).dtype)
    if (
        mode == "promise_in_bounds"
        and differentiable
        and (method in ("add", "subtract") or method == "set" and unique)
    ):
        out = _promised_tangent(
            out, array, index, flat_positions, flat_values, wrap_negative_indices
        )
    if method != "set" and promoted:
        out = lax.convert_element_type(out, aval.dtype, weak_type=aval.weak_type)
    return reshape(out, aval.shape)


def _promised_tangent(
    out: Any, array: Any, index: Any, flat_positions: Any, flat_values: Any, wrap: bool
) -> Any:
    """``out`` plus a zero whose derivative in the values of out-of-range
    updates lands at their clamped places: under ``promise_in_bounds`` JAX's
    scatter drops them (XLA) but its transpose gathers with clamped indices, so
    ``grad`` of ``x.at[7].add(y, mode="promise_in_bounds")`` in ``y`` is 1."""
    if not is_traced(flat_positions) and bool(np.all(np.asarray(flat_positions) >= 0)):
        return out
    dropped = lax.lt(flat_positions, tracing.TypedScalar(0, _INT, False))
    clamped = reshape(_positions(array, index, clip=True, wrap=wrap), (-1,))
    zero = lax.sub(flat_values, lax.stop_gradient(flat_values))
    zero = lax.select(dropped, zero, lax.stop_gradient(zero))
    base = lax.stop_gradient(lax.sub(out, out))
    return lax.add(out, lax.scatter_add_along_axis(base, clamped, zero, 0, mode="drop"))


def _warn_unsafe_cast(aval: Any, values: Any) -> None:
    """JAX's FutureWarning for updates its dtype promotion cannot cast safely to
    ``x``'s dtype (a float into an int array, float32 into float16, a complex
    Python scalar into a float array): ``x`` counts as strong, ``values`` as they are."""
    v_aval = aval_of(asarray(values), "at[]", 1)
    if v_aval.dtype == aval.dtype:
        return
    if dtypes.result_type((v_aval.dtype, v_aval.weak_type), (aval.dtype, False))[0] == aval.dtype:
        return
    warnings.warn(
        "scatter inputs have incompatible types: cannot safely cast value from "
        f"dtype={v_aval.dtype.name} to dtype={aval.dtype.name} with "
        "jax_numpy_dtype_promotion='standard'. In future JAX releases this will "
        "result in an error.",
        FutureWarning,
        stacklevel=4,
    )


def _static_ints_clamped(index: Any) -> Any:
    """``index`` with its static ints (Python or NumPy) beyond int32 brought
    to int32's bounds: ``get(mode="clip")`` clamps a static int exactly, as
    JAX's static slice does (2**31 reads the last element; without ``clip``
    such an int is read as an int64 array and wraps, see
    ``_indexing.index_as_int32``). An axis is shorter than 2**31, so the
    bound clamps the same way. Not among index arrays (a gather: they wrap,
    and with x64 off a Python int beyond int32 is JAX's OverflowError)."""
    items = index if isinstance(index, tuple) else (index,)
    if any(isinstance(item, list) or getattr(item, "ndim", 0) > 0 for item in items):
        _indexing.check_python_ints(index, "at[].get")
        return index
    fixed = tuple(
        builtins.min(builtins.max(int(item), -(2**31)), 2**31 - 1)
        if isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_))
        else item
        for item in items
    )
    return fixed if isinstance(index, tuple) else fixed[0]


def _check_out_sharding(method: str, out_sharding: Any) -> None:
    if out_sharding is not None:  # one device: no sharding to ask for
        raise NotImplementedError(f"at[].{method}: out_sharding is not supported by refimpl")


def _positions(
    array: Any, index: Any, *, clip: bool, wrap: bool = True, sliced: bool = False
) -> Any:
    """The flat positions (int32, shaped like ``array[index]``) of the elements
    ``index`` selects; -1 for out-of-range ones (clamped instead with ``clip``).
    Negative indices count from the end unless ``wrap`` is False (JAX's
    ``wrap_negative_indices``): then they are out of range.

    A narrow signed 0-d index array (int8 into an axis of 300) is as in JAX:
    read by a dynamic slice (``sliced``, no index array among the items), it
    is counted from the end in its own dtype into a 1-d array and as int32
    into more dims; otherwise (a gather or scatter) it is NumPy's
    OverflowError, as an index array."""
    shape = aval_of(array, "at", 0).shape
    size = int(np.prod(shape, dtype=np.int64))
    grid = lax.reshape(lax.iota(_INT, size), shape) if shape else lax.reshape(lax.iota(_INT, 1), ())
    grid, items = _indexing._normalize(grid, index)
    grid_shape = aval_of(grid, "at", 0).shape
    padded_axes = [d for d, (kind, _) in enumerate(items) if kind in ("int", "scalar", "array")]
    fixed = []
    narrow = "raise"
    if sliced and not any(kind == "array" for kind, _ in items):
        narrow = "own dtype" if len(grid_shape) == 1 else "int32"
    for d, (kind, value) in enumerate(items):
        if d in padded_axes:
            value = _fixed_index(kind, value, grid_shape[d], clip, wrap, narrow)
            kind = "int" if kind == "int" else ("scalar" if kind == "scalar" else "array")
        fixed.append((kind, value))
    if padded_axes:
        config = [(0, 1 if d in padded_axes else 0, 0) for d in range(len(grid_shape))]
        grid = lax.pad(grid, tracing.TypedScalar(-1, _INT, False), config)
    if any(kind == "array" for kind, _ in fixed):
        return _indexing._advanced(grid, fixed)
    return _indexing._basic(grid, fixed)


def _fixed_index(
    kind: str, value: Any, n: int, clip: bool, wrap: bool = True, narrow: str = "raise"
) -> Any:
    """An index into an axis of size ``n`` (padded to ``n + 1``): negatives
    wrapped, then out-of-range ones clamped into ``[0, n - 1]`` (``clip``) or
    sent to the padding at ``n``. ``narrow``: see ``_positions``; an index
    array is converted to int32 as JAX converts it there (``"raise"``: a
    gather or scatter, ``"int32"``: a dynamic slice of several dims, ``"own
    dtype"``: one of a 1-d array; see ``_indexing.index_as_int32``)."""
    if kind == "int":
        wrapped = value + n if value < 0 and wrap else value
        if 0 <= wrapped < n:
            return wrapped
        return builtins.min(builtins.max(wrapped, 0), n - 1) if clip else n
    index_aval = aval_of(value, "at", "index")
    order = {"raise": "gather", "int32": "int32", "own dtype": "exact"}[narrow]
    # an int4 index is always counted from the end in int4 (the size converts
    # into it unchecked, as JAX 0.10.2's), never the narrow-index error
    if index_aval.dtype == dtypes.int4:
        order = "exact"
    elif wrap and order == "gather":
        _indexing.check_index_holds_size(index_aval, n)
    value = _indexing.index_as_int32(value, n, order, normalize=wrap, as_given=True)
    if not is_traced(value):
        concrete = np.asarray(value).astype(np.int64)
        if clip:
            concrete = np.clip(concrete, 0, builtins.max(n - 1, 0))
        else:
            concrete = np.where((concrete < 0) | (concrete >= n), n, concrete)
        return concrete.astype(_INT)
    zero, size = tracing.TypedScalar(0, _INT, False), tracing.TypedScalar(n, _INT, False)
    if clip:
        return lax.clamp(zero, value, tracing.TypedScalar(builtins.max(n - 1, 0), _INT, False))
    inside = lax.bitwise_and(lax.ge(value, zero), lax.lt(value, size))
    return lax.select(inside, value, lax.broadcast_in_dim(size, index_aval.shape, ()))


__all__: list[str] = []
