"""Array creation: array/asarray, zeros/ones/full (and ``_like``), arange,
linspace, eye, and astype.

Dtypes follow ``jax.numpy``: 64-bit requests are canonicalized (float64 ->
float32 without x64); Python scalars give weakly typed arrays
(``rnp.asarray(1.0)`` is a weak float32) while NumPy data and nested lists give
strongly typed ones; an explicit ``dtype`` always gives a strong result.
Shapes, sizes and ``arange``/``linspace`` counts must be concrete.
"""

from __future__ import annotations

import array as _pyarray  # the buffer type, not this module's array()
import functools
import inspect
import math
import operator
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Any, ParamSpec, TypeVar

import numpy as np

from refimpl import backends, dtypes, lax, pytree, tracing
from refimpl.config import config
from refimpl.core import ShapeError, not_a_shape
from refimpl.lax._shapes import like_sharding
from refimpl.numpy._promote import (
    as_array,
    aval_of,
    broadcast_shapes,
    broadcast_to_shape,
    is_refimpl_array,
    is_traced,
    to_inexact_dtype,
)
from refimpl.primitives.elementwise import convert_keeping_real_part

Array = Any
ArrayLike = Any
DTypeLike = Any
Shape = Any


# --- dtype and shape arguments -------------------------------------------------------


def canonical_dtype(fn_name: str, dtype: DTypeLike) -> np.dtype:
    """A user's ``dtype=`` argument as the dtype refimpl computes in; a 64-bit
    request without x64 warns, as JAX does, since the result is not what was
    asked for."""
    try:
        canonical = dtypes.canonicalize_dtype(dtype)
    except TypeError as error:
        raise _dtype_error(fn_name, dtype, error) from None
    if dtype is not None:
        requested = _requested_dtype(dtype)
        if requested is not None and requested != canonical:
            warnings.warn(
                f"Explicitly requested dtype {requested.name} requested in {fn_name} is not "
                f"available, and will be truncated to dtype {canonical.name}. To enable more "
                "dtypes, set refimpl's enable_x64 configuration option "
                "(ri.config.update('enable_x64', True)) or the REFIMPL_ENABLE_X64 shell "
                "environment variable.",
                UserWarning,
                stacklevel=_user_stacklevel(),
            )
    return canonical


def _dtype_error(fn_name: str, dtype: Any, error: TypeError) -> TypeError:
    """JAX's words for a dtype it refuses: NumPy's for a name NumPy does not
    know; 'JAX only supports ...' for one NumPy knows that is not a number,
    bool or string type (structured, object, datetime, str). A number type
    refimpl lacks (ml_dtypes' float8 types) keeps refimpl's own words."""
    try:
        known = np.dtype(dtype)
    except Exception as numpy_error:  # noqa: BLE001 - NumPy's TypeError or ValueError
        return TypeError(str(numpy_error))
    if known.type.__module__ == "ml_dtypes":
        return TypeError(f"{fn_name}: {error}")
    return TypeError(
        f"JAX only supports number, bool, and string dtypes, got dtype {dtype} in {fn_name}"
    )


def _requested_dtype(dtype: DTypeLike) -> np.dtype | None:
    """The dtype the user named (Python's ``float``/``int``/``complex`` name the
    default types, which is no explicit 64-bit request, as in JAX)."""
    if any(dtype is t for t in (float, int, complex, bool)):
        return None
    try:
        return np.dtype(dtype)
    except TypeError:
        return None


def _user_stacklevel() -> int:
    """The ``stacklevel`` that points a warning at the first frame outside refimpl."""
    frame: FrameType | None
    frame, level = sys._getframe(1), 1
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def canonical_shape(fn_name: str, shape: Shape) -> tuple[int, ...]:
    """An int or a sequence of ints (concrete, non-negative) as a shape tuple."""
    # a 0-d NumPy array is one dimension (as in JAX), not a sequence of them
    sequence = isinstance(shape, Sequence) or (isinstance(shape, np.ndarray) and shape.ndim > 0)
    items = shape if sequence else (shape,)
    if isinstance(items, str):  # one dimension, as JAX's (shown as one)
        raise TypeError(f"{fn_name}: {not_a_shape((items,))}")
    dims = []
    for item in items:
        if isinstance(item, (bool, np.bool_)):
            raise TypeError(f"{fn_name}: shape must contain ints, got {shape!r}")
        if is_traced(item):  # JAX's words (a TypeError there too)
            raise tracing.ConcretizationTypeError(
                f"{fn_name}: {not_a_shape(tuple(items), traced=True)}"
            )
        try:
            dim = operator.index(item)
        except TypeError:
            raise TypeError(f"{fn_name}: {not_a_shape(tuple(items))}") from None
        if dim < 0:
            raise TypeError(f"{fn_name}: negative dimension in shape {tuple(items)}")
        dims.append(dim)
    return tuple(dims)


def scalar_as(value: Any, dtype: np.dtype, weak: bool = False) -> Any:
    """A Python scalar as a rank-0 value of ``dtype``.

    Conversions that cannot lose the kind (bool -> any, int -> int/float, float ->
    float ...) happen now; float -> int goes through convert_element_type, which
    saturates and maps NaN to 0 like XLA.
    """
    kind_order = {bool: 0, int: 1, float: 2, complex: 3}
    if kind_order[type(value)] <= kind_order[dtypes.dtype_to_weak_python_kind(dtype)]:
        return tracing.TypedScalar(value, dtype, weak)
    return lax.convert_element_type(value, dtype, weak_type=weak)


# --- asarray and array --------------------------------------------------------------


def _leaves(seq: Any) -> list[Any]:
    """The non-sequence elements of a nested list/tuple, in order."""
    if isinstance(seq, (list, tuple)):
        return [leaf for item in seq for leaf in _leaves(item)]
    return [seq]


def _host_value(fn_name: str, value: Any) -> Any:
    """``value`` with the array-likes JAX converts on the host replaced: an
    object's ``__jax_array__()`` result, a buffer (bytearray, memoryview,
    ``array.array``) or an object with ``__array__`` as the NumPy array it
    gives. ``None`` is JAX's ValueError (a NumPy object array otherwise)."""
    if value is None:
        raise ValueError(f"{fn_name}: None is not a valid value for jnp.array")
    if tracing.is_array_like(value) or isinstance(value, (list, tuple)):
        return value
    if hasattr(value, "__jax_array__"):
        # strong, as JAX: the weak type is read from the object, not its array
        converted = value.__jax_array__()
        aval = aval_of(converted, fn_name, 0)
        if aval.weak_type:
            return lax.convert_element_type(converted, aval.dtype, weak_type=False)
        return converted
    if isinstance(value, (bytearray, memoryview, _pyarray.array)) or hasattr(
        type(value), "__array__"
    ):
        return np.asarray(value)
    return value


def _from_sequence(fn_name: str, seq: list | tuple, dtype: np.dtype | None) -> Array:
    """A strong array from a nested list/tuple; the dtype joins the leaves' types."""
    leaves = [_host_value(fn_name, leaf) for leaf in _leaves(seq)]
    seq = _rebuild(seq, iter(leaves))
    if dtype is not None and dtypes.is_integer(dtype):
        for leaf in leaves:
            if type(leaf) is float:
                _check_float_into_int(fn_name, leaf, dtype)
    if dtype is not None and any(type(leaf) is int for leaf in leaves):
        # Python ints are range-checked against the requested dtype, not the
        # default int (array([3200590325], dtype=uint32), as JAX)
        _check_int_leaves(leaves, dtype)
        leaves = [leaf if type(leaf) is not int else _as_target(leaf, dtype) for leaf in leaves]
        seq = _rebuild(seq, iter(leaves))
    # a Python int joins as the weak default int whatever its size: only the
    # joined dtype bounds it ([1.5, 2**40] is float32, as JAX's)
    avals = [
        tracing.scalar_aval(dtypes.python_scalar_dtype(0), True)
        if type(leaf) is int
        else aval_of(leaf, fn_name, 0)
        for leaf in leaves
    ]
    if dtype is None:
        if avals:
            dtype = dtypes.result_type(*[(av.dtype, av.weak_type) for av in avals])[0]
        else:
            dtype = dtypes.weak_default_dtype("f")
        _check_int_leaves(leaves, dtype)
    if any(is_traced(leaf) for leaf in leaves):
        return _stack_nested(seq, dtype)
    values = [
        leaf if type(leaf) is int else tracing.concrete_value(leaf, av)
        for leaf, av in zip(leaves, avals, strict=True)
    ]
    try:
        nested = np.array(_rebuild(seq, iter(values)), dtype=dtype)
    except ValueError as error:
        raise ValueError(f"{fn_name}: {error}") from None
    return as_array(nested, weak_type=False)


def _check_int_leaves(leaves: list, dtype: np.dtype) -> None:
    """The Python ints of a sequence stored into an integer ``dtype``: one out
    of its range is NumPy's OverflowError, in NumPy's words, as JAX's (which
    lets NumPy convert the list)."""
    if not dtypes.is_integer(dtype) or dtype in dtypes.INT4_DTYPES:
        return
    info = np.iinfo(dtype)
    for leaf in leaves:
        if type(leaf) is int and not info.min <= leaf <= info.max:
            if not -(2**63) <= leaf < 2**63:
                raise OverflowError("Python int too large to convert to C long")
            raise OverflowError(f"Python integer {leaf} out of bounds for {dtype.name}")


def _check_float_into_int(fn_name: str, value: float, dtype: np.dtype) -> None:
    """A Python float stored into an integer dtype is checked as NumPy (so JAX
    0.10.2) checks it: NaN is a ValueError; a value whose truncation is out of
    range an OverflowError (for int4/uint4, ml_dtypes', the value itself)."""
    if math.isnan(value):
        raise ValueError(f"{fn_name}: cannot convert float NaN to integer")
    info = dtypes.iinfo(dtype)
    if dtype in dtypes.INT4_DTYPES:
        if not info.min <= value <= info.max:
            raise OverflowError(
                f"{fn_name}: out of range value {value!r} cannot be converted to {dtype.name}"
            )
        return
    if math.isinf(value):
        raise OverflowError(f"{fn_name}: cannot convert float infinity to integer")
    if not info.min <= int(value) <= info.max:
        raise OverflowError(
            f"{fn_name}: Python integer {int(value)} out of bounds for {dtype.name}"
        )


def _as_target(value: int, dtype: np.dtype) -> Any:
    """A Python int leaf as a NumPy scalar of the requested dtype (in range;
    4-bit targets wrap, as JAX 0.10.2 does: ``array(20, int4)`` is 4)."""
    if dtype in dtypes.INT4_DTYPES:
        value = dtypes.wrap_int4(value, dtype)
    with np.errstate(all="ignore"):
        return np.array(value if dtypes.is_integer(dtype) else float(value), dtype)[()]


def _rebuild(seq: Any, values: Any) -> Any:
    """``seq``'s nesting with its leaves replaced, in order, by ``values``."""
    if isinstance(seq, (list, tuple)):
        return [_rebuild(item, values) for item in seq]
    return next(values)


def _stack_nested(seq: Any, dtype: np.dtype) -> Array:
    if isinstance(seq, (list, tuple)):
        return _stack([_stack_nested(item, dtype) for item in seq])
    return asarray(seq, dtype=dtype)


def _stack(items: list[Any]) -> Array:
    """``numpy.stack(items)`` (axis 0, the errors its own) for arrays of one
    dtype: _shape.stack, which imports this module, less its promotion."""
    if not items:
        raise ValueError("stack: need at least one array to concatenate")
    shapes = {aval_of(x, "stack", i).shape for i, x in enumerate(items)}
    if len(shapes) > 1:
        listed = ", ".join(str(aval_of(x, "stack", 0).shape) for x in items)
        raise ValueError(f"stack: all input arrays must have the same shape, got {listed}")
    expanded = [lax.expand_dims(x, (0,)) for x in items]
    return as_array(expanded[0]) if len(expanded) == 1 else lax.concatenate(expanded, 0)


def asarray(a: ArrayLike, dtype: DTypeLike = None, order: str | None = None, *, copy=None) -> Array:
    """``a`` as a refimpl array (no copy of a refimpl array when nothing changes).

    Accepts refimpl arrays, tracers, NumPy arrays and scalars, Python scalars and nested
    lists/tuples of those. Python scalars stay weakly typed unless a ``dtype`` is given.
    ``rnp.asarray`` also takes JAX's keyword-only ``device=`` (where to put the result) and
    ``out_sharding=`` (checked: the result is whole on one device).

    Args:
        a: The data.
        dtype: The dtype to convert to, or None to keep (or infer) it.
        order: None, ``"C"``, ``"K"`` or ``"A"`` (all row-major); others are
            NotImplementedError.
        copy: Accepted and ignored (keyword-only; arrays are immutable).

    Returns:
        A refimpl array (a tracer under a trace).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.asarray([1, 2, 3])
        Array([1, 2, 3], dtype=int32)
        >>> rnp.asarray(2.5)
        Array(2.5, dtype=float32, weak_type=True)
    """
    if order not in (None, "C", "K", "A"):
        raise NotImplementedError(f"asarray: order={order!r} is not supported")
    target = None if dtype is None else canonical_dtype("asarray", dtype)
    a = _host_value("asarray", a)
    if isinstance(a, (list, tuple)):
        return _from_sequence("asarray", a, target)
    if target is not None and type(a) is float and dtypes.is_integer(target):
        _check_float_into_int("asarray", a, target)
    if target is not None and type(a) is int:  # range-checked against the target, as JAX
        if target in dtypes.INT4_DTYPES:
            a = dtypes.wrap_int4(a, target)  # JAX 0.10.2 wraps into 4 bits, unchecked
        elif dtypes.is_integer(target) and not np.iinfo(target).min <= a <= np.iinfo(target).max:
            raise OverflowError(f"asarray: Python int {a} too large to convert to {target.name}")
        with np.errstate(all="ignore"):
            return as_array(np.array(a if dtypes.is_integer(target) else float(a), target), False)
    aval = aval_of(a, "asarray", 0)
    if target is None:
        return as_array(a)
    if is_refimpl_array(a):
        if aval.dtype == target and not aval.weak_type:
            return a
        return lax.convert_element_type(a, target)
    # NumPy data and Python scalars convert on the host, as NumPy would
    with np.errstate(all="ignore"):
        return as_array(np.asarray(tracing.concrete_value(a, aval)).astype(target), False)


def array(
    object: ArrayLike,  # noqa: A002
    dtype: DTypeLike = None,
    copy: bool = True,
    order: str | None = "K",
    ndmin: int = 0,
) -> Array:
    """A new array from ``object``: :func:`asarray`, but copying and with ``ndmin``.

    Like :func:`asarray`, but a refimpl array or tracer is copied (a new buffer; the ``copy``
    primitive) unless ``copy=False``, and ``ndmin`` leading 1s are added as needed. A NumPy
    masked array gives its data (the mask dropped). ``rnp.array`` also takes JAX's keyword-only
    ``device=`` (where to put the result) and ``out_sharding=`` (checked: the result is whole on
    one device).

    Args:
        object: The data (arrays, scalars, nested lists/tuples of them).
        dtype: The dtype to convert to, or None to keep (or infer) it.
        copy: Whether to copy a refimpl array or tracer.
        order: The memory order (only row-major orders are supported).
        ndmin: The least number of dimensions of the result.

    Returns:
        A refimpl array (a tracer under a trace).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.array([[1, 2], [3, 4]])
        Array([[1, 2],
               [3, 4]], dtype=int32)
        >>> rnp.array([1.0, 2], ndmin=2)
        Array([[1., 2.]], dtype=float32)
    """
    if isinstance(object, np.ma.MaskedArray):
        # as np.array and JAX's eager jnp.array: the data, the mask dropped
        # (asarray and every other function refuse a masked array, as JAX's)
        object = np.asarray(object)  # noqa: A001
    object = _host_value("array", object)  # noqa: A001
    # a tracer is copied too (JAX binds copy_p): jvp/vjp/vmap of array(x)
    # give new arrays, not their inputs
    was_array = is_refimpl_array(object) or is_traced(object)
    dtype = None if dtype is None else canonical_dtype("array", dtype)
    result = asarray(object, dtype=dtype, order=order)
    if copy and was_array and result is object:
        result = lax.copy(result)
    ndim = aval_of(result, "array", 0).ndim
    if ndmin > ndim:
        result = lax.expand_dims(result, tuple(range(ndmin - ndim)))
    return result


def astype(x: ArrayLike, dtype: DTypeLike, /, *, copy: bool = False) -> Array:
    """``x`` converted to ``dtype`` (strongly typed).

    XLA's conversion rules apply: float -> int truncates toward zero and saturates, NaN -> 0
    (NumPy leaves those undefined); anything -> bool is ``!= 0``; complex -> real keeps the real
    part, with JAX 0.10.2's DeprecationWarning. ``rnp.astype`` also takes JAX's keyword-only
    ``device=`` (where to put the result).

    Args:
        x: The array to convert.
        dtype: The target dtype.
        copy: Whether an array already of ``dtype`` is copied (keyword-only).

    Returns:
        An array of ``x``'s shape, in ``dtype``.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.astype(rnp.array([1.7, -1.7, 3.0]), rnp.int32)
        Array([ 1, -1,  3], dtype=int32)
    """
    aval = aval_of(x, "astype", 0)
    target = canonical_dtype("astype", dtype)
    if dtypes.is_complex(aval.dtype) and not (dtypes.is_complex(target) or dtypes.is_bool(target)):
        # JAX 0.10.2's deprecation (a ValueError in later JAX)
        warnings.warn(
            "Casting from complex to real dtypes will soon raise a ValueError. "
            "Please first use jnp.real or jnp.imag to take the real/imaginary component "
            "of your input.",
            DeprecationWarning,
            stacklevel=_user_stacklevel(),
        )
    if aval.dtype == target and not aval.weak_type and is_refimpl_array(x):
        return lax.copy(x) if copy and not is_traced(x) else x
    if dtypes.is_complex(aval.dtype) and not dtypes.is_complex(target):
        # no ComplexWarning besides the deprecation above, as JAX 0.10.2's astype
        return convert_keeping_real_part(x, target)
    return lax.convert_element_type(x, target)


# --- filled arrays -------------------------------------------------------------------


def _filled(
    fn_name: str, shape: tuple[int, ...], fill_value: ArrayLike, dtype: Any, weak: bool = False
) -> Array:
    """``fill_value`` broadcast to ``shape``; converted to ``dtype`` (weak if ``weak``)
    unless ``dtype`` is None."""
    if dtype is not None and dtypes.is_python_scalar(fill_value):
        # converted straight to dtype, never through its own weak type first
        # (JAX's: full(n, 0x85a308d3, uint32) fills, beyond int32's range)
        fill_value = scalar_as(fill_value, dtype, weak)
    fill_aval = aval_of(fill_value, fn_name, "fill_value")
    if dtype is not None and (fill_aval.dtype, fill_aval.weak_type) != (dtype, weak):
        fill_value = lax.convert_element_type(fill_value, dtype, weak_type=weak)
    if fill_aval.shape == shape:
        return as_array(fill_value)
    return broadcast_to(fill_value, shape)


# numpy.broadcast_to (exported by _shape): here because _filled needs it and
# _shape imports this module
def broadcast_to(array: ArrayLike, shape: Any) -> Array:
    """``array`` broadcast to ``shape`` by NumPy's rules (no rank reduction).

    Sizes of 1 stretch and leading dimensions are added; anything else is a
    ValueError. ``rnp.broadcast_to`` also takes JAX's keyword-only
    ``out_sharding=`` (checked: the result is whole on one device).

    Args:
        array: The array to broadcast.
        shape: The target shape.

    Returns:
        An array of ``shape`` and ``array``'s dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.broadcast_to(rnp.array([1, 2]), (2, 2))
        Array([[1, 2],
               [1, 2]], dtype=int32)
    """
    aval = aval_of(array, "broadcast_to", 0)
    shape = canonical_shape("broadcast_to", shape)
    lead = len(shape) - aval.ndim
    fits = lead >= 0 and all(d in (1, s) for d, s in zip(aval.shape, shape[lead:], strict=True))
    if not fits:
        if lead < 0:  # JAX's words for both
            raise ValueError(
                "Cannot broadcast to shape with fewer dimensions: "
                f"arr_shape={aval.shape} shape={shape}"
            )
        dims = (",".join(map(str, s)) for s in (aval.shape, shape))
        raise ValueError(
            f"Incompatible types for broadcasting: input type={aval.dtype.name}[{next(dims)}] "
            f"and requested type={aval.dtype.name}[{next(dims)}]"
        )
    return as_array(array) if aval.shape == shape else broadcast_to_shape(array, aval.shape, shape)


def full(shape: Shape, fill_value: ArrayLike, dtype: DTypeLike = None) -> Array:
    """An array of ``shape`` filled with ``fill_value``.

    ``fill_value`` may be an array that
    broadcasts to ``shape``. Without ``dtype`` the result has ``fill_value``'s
    type, weak for Python scalars: ``full(3, 2.0)`` is a weak float32.
    ``rnp.full`` also takes JAX's keyword-only ``device=`` (where to put the result)
    and ``out_sharding=`` (checked: the result is whole on one device).

    Args:
        shape: The shape (an int or a sequence of ints).
        fill_value: The value (a scalar or an array broadcasting to ``shape``).
        dtype: The dtype, or None for ``fill_value``'s.

    Returns:
        An array of ``shape``.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.full((2, 2), 7)
        Array([[7, 7],
               [7, 7]], dtype=int32, weak_type=True)
        >>> rnp.full((2, 3), rnp.array([1, 2, 3]))
        Array([[1, 2, 3],
               [1, 2, 3]], dtype=int32)
    """
    shape = canonical_shape("full", shape)
    if dtype is None and type(fill_value) is int:
        fill_value = _weak_int_fill(fill_value)
    dtype = None if dtype is None else canonical_dtype("full", dtype)
    return _filled("full", shape, fill_value, dtype)


def _weak_int_fill(value: int) -> Any:
    """A Python int fill without a dtype, as JAX's ``full`` takes it: the weak
    default int, wrapped modulo 2**64 (``full(2, 2**40)`` is ``[0, 0]``
    without x64), not range-checked as ``asarray`` is; 2**64 and beyond
    overflow JAX's conversion to a C long."""
    if not -(2**63) <= value < 2**64:
        raise OverflowError("full: Python int too large to convert to C long")
    return scalar_as(value, dtypes.weak_default_dtype("i"), weak=True)


def _float0_filled(shape: Shape, dtype: DTypeLike) -> np.ndarray | None:
    """float0 (the tangent type of integers) has no values, so no device
    arrays: as JAX, ``zeros``/``ones`` of it are host NumPy arrays."""
    if dtype is None or not isinstance(dtype, (np.dtype, type, str)):
        return None
    try:
        is_float0 = np.dtype(dtype) == dtypes.float0
    except TypeError:
        return None
    return np.zeros(canonical_shape("zeros", shape), dtypes.float0) if is_float0 else None


def check_forgot_shape_tuple(fn_name: str, shape: Any, dtype: Any) -> None:
    """``zeros(2, 3)`` meant ``zeros((2, 3))``: JAX's TypeError, with its hint."""
    if isinstance(dtype, int) and isinstance(shape, int):
        raise TypeError(
            f"Cannot interpret '{dtype}' as a data type.\n\nDid you accidentally write "
            f"`jax.numpy.{fn_name}({shape}, {dtype})` when you meant "
            f"`jax.numpy.{fn_name}(({shape}, {dtype}))`, i.e. with a single tuple "
            "argument for the shape?"
        )


def zeros(shape: Shape, dtype: DTypeLike = None) -> Array:
    """An array of ``shape`` filled with zeros.

    A float0 ``dtype`` (the tangent type of integers) gives a NumPy array, as JAX's.
    ``rnp.zeros`` also takes JAX's keyword-only ``device=`` (where to put the result) and
    ``out_sharding=`` (checked: the result is whole on one device).

    Args:
        shape: The shape (an int or a sequence of ints).
        dtype: The dtype, or None for the default float.

    Returns:
        An array of ``shape``.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.zeros((2, 3))
        Array([[0., 0., 0.],
               [0., 0., 0.]], dtype=float32)
        >>> rnp.zeros(2, dtype=int)
        Array([0, 0], dtype=int32)
    """
    check_forgot_shape_tuple("zeros", shape, dtype)
    if (float0 := _float0_filled(shape, dtype)) is not None:
        return float0
    dtype = dtypes.weak_default_dtype("f") if dtype is None else canonical_dtype("zeros", dtype)
    return _filled("zeros", canonical_shape("zeros", shape), 0, dtype)


def ones(shape: Shape, dtype: DTypeLike = None) -> Array:
    """An array of ``shape`` filled with ones.

    A float0 ``dtype`` gives a NumPy array, as JAX's.
    ``rnp.ones`` also takes JAX's keyword-only ``device=`` (where to put the result)
    and ``out_sharding=`` (checked: the result is whole on one device).

    Args:
        shape: The shape (an int or a sequence of ints).
        dtype: The dtype, or None for the default float.

    Returns:
        An array of ``shape``.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.ones((2, 2))
        Array([[1., 1.],
               [1., 1.]], dtype=float32)
        >>> rnp.ones(3, dtype=rnp.int8)
        Array([1, 1, 1], dtype=int8)
    """
    check_forgot_shape_tuple("ones", shape, dtype)
    if (float0 := _float0_filled(shape, dtype)) is not None:
        return float0
    dtype = dtypes.weak_default_dtype("f") if dtype is None else canonical_dtype("ones", dtype)
    return _filled("ones", canonical_shape("ones", shape), 1, dtype)


def full_like(
    a: ArrayLike, fill_value: ArrayLike, dtype: DTypeLike = None, shape: Shape = None
) -> Array:
    """An array like ``a`` (its shape and dtype unless given) filled with ``fill_value``.

    Without ``dtype`` the result keeps ``a``'s weak type. ``rnp.full_like`` also takes JAX's
    keyword-only ``device=`` (where to put the result) (by default where a committed ``a`` is)
    and ``out_sharding=`` (checked: the result is whole on one device).

    Args:
        a: The array whose shape and dtype to take.
        fill_value: The value (a scalar or an array broadcasting to the shape).
        dtype: The dtype, or None for ``a``'s (its weak type too).
        shape: The shape, or None for ``a``'s.

    Returns:
        An array of the shape and dtype described.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.full_like(rnp.array([1, 2, 3]), 7)
        Array([7, 7, 7], dtype=int32)
        >>> rnp.full_like(rnp.array([1, 2, 3]), 0.5, dtype=float)
        Array([0.5, 0.5, 0.5], dtype=float32)
    """
    aval = aval_of(a, "full_like", 0)
    shape = aval.shape if shape is None else canonical_shape("full_like", shape)
    if dtype is not None:
        return _filled("full_like", shape, fill_value, canonical_dtype("full_like", dtype))
    return _filled("full_like", shape, fill_value, aval.dtype, aval.weak_type)


def zeros_like(a: ArrayLike, dtype: DTypeLike = None, shape: Shape = None) -> Array:
    """An array of zeros of ``a``'s shape and dtype (and weak type) unless given.

    ``rnp.zeros_like`` also takes JAX's keyword-only ``device=`` (where to put the result) (by
    default where a committed ``a`` is) and ``out_sharding=`` (checked: the result is whole on
    one device).

    Args:
        a: The array whose shape and dtype to take.
        dtype: The dtype, or None for ``a``'s (its weak type too).
        shape: The shape, or None for ``a``'s.

    Returns:
        An array of the shape and dtype described.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.zeros_like(rnp.array([[1, 2], [3, 4]]))
        Array([[0, 0],
               [0, 0]], dtype=int32)
    """
    aval_of(a, "zeros_like", 0)
    dtype = None if dtype is None else canonical_dtype("zeros_like", dtype)
    return full_like(a, 0, dtype=dtype, shape=shape)


def ones_like(a: ArrayLike, dtype: DTypeLike = None, shape: Shape = None) -> Array:
    """An array of ones of ``a``'s shape and dtype (and weak type) unless given.

    ``rnp.ones_like`` also takes JAX's keyword-only ``device=`` (where to put the result) (by
    default where a committed ``a`` is) and ``out_sharding=`` (checked: the result is whole on
    one device).

    Args:
        a: The array whose shape and dtype to take.
        dtype: The dtype, or None for ``a``'s (its weak type too).
        shape: The shape, or None for ``a``'s.

    Returns:
        An array of the shape and dtype described.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.ones_like(rnp.array([1.5, 2.5]))
        Array([1., 1.], dtype=float32)
    """
    aval_of(a, "ones_like", 0)
    dtype = None if dtype is None else canonical_dtype("ones_like", dtype)
    return full_like(a, 1, dtype=dtype, shape=shape)


# --- ranges ---------------------------------------------------------------------------


def _concrete_scalar(fn_name: str, name: str, value: Any) -> Any:
    """A concrete scalar argument as a NumPy/Python scalar; errors for arrays/tracers."""
    if value is None:
        return None
    aval = aval_of(value, fn_name, name)
    if is_traced(value):
        raise tracing.ConcretizationTypeError(
            "Abstract tracer value encountered where concrete value is expected: traced "
            f"array {aval.str_short()}\nIt arose in the jnp.{fn_name} argument {name!r}: it "
            "fixes the result's shape. Mark it static."
        )
    if aval.shape != ():
        raise ValueError(f"{fn_name}: {name} must be a scalar, got shape {aval.shape}")
    if dtypes.is_complex(aval.dtype):
        # JAX 0.10.2's words (only arange reads its scalars here)
        raise ValueError(
            f"Passing complex start/stop/step to jnp.{fn_name} is no longer supported"
            " starting in JAX v0.10.0."
        )
    return value if dtypes.is_python_scalar(value) else np.asarray(value)[()]


def arange(
    start: ArrayLike, stop: ArrayLike = None, step: ArrayLike = None, dtype: DTypeLike = None
) -> Array:
    """``[start, start + step, ...)`` below ``stop`` (above it for a negative step).

    The dtype joins the arguments' types (``arange(5)`` is int32, ``arange(5.0)`` float32); the
    values are ``start + step * iota`` computed in that dtype (float32 for float16/bfloat16), as
    in JAX, so float results may differ from NumPy's in the last place. The arguments must be
    concrete (they fix the length). ``rnp.arange`` also takes JAX's keyword-only ``device=``
    (where to put the result) and ``out_sharding=`` (checked: the result is whole on one
    device).

    Args:
        start: The first value, or with ``stop`` and ``step`` None the end
            (then the values start at 0).
        stop: The end (excluded), or None.
        step: The spacing (not 0), or None for 1.
        dtype: The dtype, or None for the arguments' joined type.

    Returns:
        A 1-d array of ``ceil((stop - start) / step)`` values (none if that is
        not positive).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.arange(5)
        Array([0, 1, 2, 3, 4], dtype=int32)
        >>> rnp.arange(1, 2, 0.25)
        Array([1.  , 1.25, 1.5 , 1.75], dtype=float32)
    """
    start_name = "stop" if stop is None and step is None else "start"
    if start is None:
        raise TypeError(f"arange: argument {start_name!r} (position 0) must be a number, got None")
    start = _concrete_scalar("arange", start_name, start)
    stop = _concrete_scalar("arange", "stop", stop)
    step = _concrete_scalar("arange", "step", step)
    if dtype is None:
        # joined as JAX's result_type: Python scalars weak (arange(int16(2), 10) is
        # int16; under strict promotion arange(1, 5, 0.5) is still float32)
        avals = [aval_of(v, "arange", 0) for v in (start, stop, step) if v is not None]
        dtype = dtypes.result_type(*[(av.dtype, av.weak_type) for av in avals])[0]
    else:
        dtype = canonical_dtype("arange", dtype)
    if stop is None:
        start, stop = 0, start
    if step is not None:
        if step == 0:
            raise ZeroDivisionError(
                "arange: step must not be zero (division by zero, as JAX and NumPy)"
            )
        working = np.dtype(np.float32) if dtype in (np.float16, dtypes.bfloat16) else dtype
        size = max(0, math.ceil((stop - start) / step))
        iota = _arange_iota(working, size, start, stop, step)
        offsets = lax.mul(_scalar_value(step, working), iota)
        return lax.convert_element_type(lax.add(_scalar_value(start, working), offsets), dtype)
    if start == 0:
        return _arange_iota(dtype, max(0, math.ceil(stop)), start, stop, step)
    size = max(0, math.ceil(stop - start))
    return lax.add(_scalar_value(start, dtype), _arange_iota(dtype, size, start, stop, step))


def _arange_iota(dtype: np.dtype, size: int, start: Any, stop: Any, step: Any) -> Array:
    """``lax.iota``, with an impossible size reported as arange's own error."""
    try:
        return lax.iota(dtype, size)
    except ShapeError as error:
        where = f"arange(start={start!r}, stop={stop!r}, step={step!r})"
        raise ShapeError(error.message, where) from None


def _scalar_value(value: Any, dtype: np.dtype) -> Any:
    """A concrete scalar as a strong rank-0 constant of ``dtype`` (XLA conversion)."""
    if dtypes.is_python_scalar(value):
        return scalar_as(value, dtype)
    return lax.convert_element_type(value, dtype)


def linspace(
    start: ArrayLike,
    stop: ArrayLike,
    num: int = 50,
    endpoint: bool = True,
    retstep: bool = False,
    dtype: DTypeLike = None,
    axis: int = 0,
) -> Array | tuple[Array, Array]:
    """``num`` evenly spaced numbers from ``start`` to ``stop``.

    ``num`` evenly spaced values from ``start`` to ``stop`` (inclusive with
    ``endpoint``), as ``start * (1 - t) + stop * t`` for ``t = i / div`` -- JAX's
    formula, which hits both ends exactly. ``start``/``stop`` may be arrays
    (the new axis is ``axis``). Integer dtypes take the floor.
    ``rnp.linspace`` also takes JAX's keyword-only ``device=`` (where to put the result).

    Args:
        start: The first value (a scalar or an array).
        stop: The last value (included with ``endpoint``), broadcast against
            ``start``.
        num: The number of values (a static non-negative int).
        endpoint: Whether ``stop`` is the last value.
        retstep: Whether to also return the spacing.
        dtype: The dtype, or None for the bounds' inexact dtype.
        axis: The position of the new axis, for array bounds.

    Returns:
        The values (``num`` of them along ``axis``), or with ``retstep`` the
        pair ``(values, step)``.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.linspace(0, 1, 5)
        Array([0.  , 0.25, 0.5 , 0.75, 1.  ], dtype=float32)
        >>> rnp.linspace(0, 10, 3, retstep=True)
        (Array([ 0.,  5., 10.], dtype=float32), Array(5., dtype=float32))
    """
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"linspace: number of samples {num} must be non-negative")
    start_aval = aval_of(start, "linspace", 0)
    stop_aval = aval_of(stop, "linspace", 1)
    if dtype is None:
        joined = dtypes.result_type(start_aval, stop_aval)[0]
        dtype = to_inexact_dtype(joined)
    else:
        dtype = canonical_dtype("linspace", dtype)
    computation = to_inexact_dtype(dtype)
    start = lax.convert_element_type(start, computation)
    stop = lax.convert_element_type(stop, computation)
    bounds = list(broadcast_shapes("linspace", start_aval.shape, stop_aval.shape))
    start = _broadcast(start, start_aval.shape, tuple(bounds))
    stop = _broadcast(stop, stop_aval.shape, tuple(bounds))
    axis = axis + len(bounds) + 1 if axis < 0 else axis
    if not 0 <= axis <= len(bounds):
        raise ValueError(f"linspace: axis {axis} is out of bounds for {len(bounds) + 1} dims")
    with_axis = bounds[:axis] + [1] + bounds[axis:]
    div = num - 1 if endpoint else num
    if num > 1:
        delta = lax.div(lax.sub(stop, start), tracing.TypedScalar(div, computation, False))
        iota_shape = [1] * len(with_axis)
        iota_shape[axis] = div
        steps = lax.div(lax.iota(computation, div), tracing.TypedScalar(div, computation, False))
        steps = lax.reshape(steps, iota_shape)
        out_shape = list(with_axis)
        out_shape[axis] = div
        one_minus = lax.sub(tracing.TypedScalar(1, computation, False), steps)
        out = lax.add(
            lax.mul(_broadcast(lax.reshape(start, with_axis), with_axis, out_shape),
                    _broadcast(one_minus, iota_shape, out_shape)),
            lax.mul(_broadcast(lax.reshape(stop, with_axis), with_axis, out_shape),
                    _broadcast(steps, iota_shape, out_shape)),
        )  # fmt: skip
        if endpoint:
            out = lax.concatenate([out, lax.reshape(stop, with_axis)], axis)
    elif num == 1:
        delta = _nan_or(stop, start, computation, endpoint)
        out = lax.reshape(start, with_axis)
    else:
        delta = lax.broadcast_in_dim(tracing.TypedScalar(np.nan, computation, False), (), ())
        empty = list(with_axis)
        empty[axis] = 0
        out = lax.broadcast_in_dim(tracing.TypedScalar(0, computation, False), empty, ())
    if dtypes.is_integer(dtype) or dtypes.is_bool(dtype):
        out = lax.floor(out)
    result = lax.convert_element_type(out, dtype)
    return (result, delta) if retstep else result


def _nan_or(stop: Array, start: Array, dtype: np.dtype, endpoint: bool) -> Array:
    if endpoint:
        return lax.broadcast_in_dim(tracing.TypedScalar(np.nan, dtype, False), (), ())
    return lax.sub(stop, start)


def _broadcast(x: Array, from_shape: Any, shape: Any) -> Array:
    from_shape, shape = tuple(from_shape), tuple(shape)
    if from_shape == shape:
        return x
    if len(from_shape) == len(shape):
        return lax.broadcast_in_dim(x, shape, tuple(range(len(shape))))
    return broadcast_to_shape(x, from_shape, shape)


def eye(N: int, M: int | None = None, k: int = 0, dtype: DTypeLike = None) -> Array:
    """The ``N x M`` matrix with ones on diagonal ``k``, zeros elsewhere.

    ``k > 0`` is above the main diagonal, ``k < 0`` below; a traced ``k``
    works (as JAX's), and a concrete one outside the matrix gives zeros.
    ``rnp.eye`` also takes JAX's keyword-only ``device=`` (where to put the result).

    Args:
        N: The number of rows.
        M: The number of columns, or None for ``N``.
        k: The diagonal of the ones.
        dtype: The dtype, or None for the default float.

    Returns:
        An array of shape ``(N, M)``.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.eye(2)
        Array([[1., 0.],
               [0., 1.]], dtype=float32)
        >>> rnp.eye(2, 3, k=1, dtype=int)
        Array([[0, 1, 0],
               [0, 0, 1]], dtype=int32)
    """
    n = _concrete_int("eye", "N", N)
    m = n if M is None else _concrete_int("eye", "M", M)
    dtype = dtypes.weak_default_dtype("f") if dtype is None else canonical_dtype("eye", dtype)
    if isinstance(k, (np.integer, np.ndarray)) and np.asarray(k).dtype.kind in "iu":
        # JAX 0.10.2 makes a NumPy integer k an array of the canonical integer
        # type first: with x64 off an int64 wraps to int32 (2**40 -> 0, the
        # identity); a Python int is taken exactly
        k = np.asarray(k).astype(dtypes.canonicalize_dtype(np.int64))[()]
    rows = lax.broadcasted_iota(np.int32, (n, m), 0)
    cols = lax.broadcasted_iota(np.int32, (n, m), 1)
    on_diagonal = lax.eq(lax.add(rows, diagonal_offset("eye", k, n, m)), cols)
    return lax.convert_element_type(on_diagonal, dtype)


def diagonal_offset(
    fn_name: str, k: Any, n: int, m: int, error: type[Exception] = ValueError
) -> Any:
    """The diagonal offset ``k`` of ``eye``/``tri`` as an int32 scalar operand.

    A concrete integer is clipped to ``[-n, m]`` (a diagonal outside the
    matrix selects nothing or everything whatever its size, so any Python int
    works, as JAX's ``eye``); a traced integer scalar is used as it is, which
    is what lets ``jit(lambda k: jnp.eye(3, k=k))`` run as it does in JAX.
    Anything else raises ``error`` (JAX: ``ValueError`` from ``eye``,
    ``TypeError`` from ``tri``)."""
    if is_traced(k):
        aval = aval_of(k, fn_name, "k")
        if aval.shape != () or not dtypes.is_integer(aval.dtype):
            raise error(f"{fn_name}: k must be a scalar integer; got {aval}")
        return lax.convert_element_type(k, np.int32)
    try:
        offset = operator.index(k)
    except TypeError:
        raise error(f"{fn_name}: k must be a scalar integer; got {k!r}") from None
    return tracing.TypedScalar(max(-n, min(m, offset)), np.dtype(np.int32), False)


def _concrete_int(fn_name: str, name: str, value: Any, allow_negative: bool = False) -> int:
    try:
        result = operator.index(value)
    except TypeError:
        raise TypeError(f"{fn_name}: {name} must be a concrete int, got {value!r}") from None
    if result < 0 and not allow_negative:
        raise ValueError(f"{fn_name}: {name} must be non-negative, got {result}")
    return result


# --- the default backend ------------------------------------------------------------

_P = ParamSpec("_P")
_R = TypeVar("_R")


def on_default_backend(fun: Callable[_P, _R]) -> Callable[_P, _R]:
    """``fun``, a creation function, with a result made from host data alone
    placed on ``config.backend``'s default device (uncommitted), as JAX's
    creation functions land on the default device.

    The value is computed by the reference backend (NumPy) and then moved;
    a result of a refimpl array argument stays where its operands are, and
    inside a trace nothing moves. Applied to the public names only
    (``refimpl.numpy``): refimpl's own modules keep the host-side functions.
    """

    @functools.wraps(fun)
    def creation(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        out = fun(*args, **kwargs)
        name = config._values["backend"]
        if name == "ref" or tracing.current_builder() is not None:
            return out
        return _to_backend(out, name, (args, kwargs))

    return creation


def _sharding_of_like(x: Any, out: Any) -> Any:
    """Where JAX 0.10.2's ``*_like(x)`` without ``device`` puts its result:
    ``lax.full_like``'s rule (:func:`refimpl.lax._shapes.like_sharding`)."""
    return like_sharding(x, out)


def accepts_device(
    fun: Callable[..., Any], *, strong: bool = False, like: bool = False
) -> Callable[..., Any]:
    """``fun`` with JAX's keyword-only ``device=`` (a device or a one-device
    sharding): given, the result is put there, committed, as JAX's creation
    functions and ``astype`` do; ``None`` leaves placement as it was. With
    ``strong``, a placed result is strongly typed (JAX's ``full`` and
    ``*_like`` build it with a sharding, which drops the weak type outside
    a trace: ``full(2, 7, device=d)`` is int32, ``full(2, 7)`` weak int32).
    With ``like`` (the ``*_like`` functions), ``device=None`` places the
    result as its first argument when that is committed (``_sharding_of_like``)."""

    @functools.wraps(fun)
    def placed(*args: Any, device: Any = None, **kwargs: Any) -> Any:
        out = fun(*args, **kwargs)
        if device is None and like and args and tracing.current_builder() is None:
            device = _sharding_of_like(args[0], out)
        if device is None:
            return out

        def place(leaf: Any) -> Any:
            aval = aval_of(leaf, getattr(fun, "__name__", "device"), 0)
            if strong and aval.weak_type and tracing.current_builder() is None:
                leaf = lax.convert_element_type(leaf, aval.dtype, weak_type=False)
            return backends.device_put(leaf, device)

        # linspace(..., retstep=True) returns (samples, step): both placed, as JAX
        return tuple(map(place, out)) if isinstance(out, tuple) else place(out)

    signature = inspect.signature(fun)
    params = list(signature.parameters.values())
    extra = inspect.Parameter("device", inspect.Parameter.KEYWORD_ONLY, default=None)
    at = len(params) - (params[-1].kind == inspect.Parameter.VAR_KEYWORD if params else 0)
    params.insert(at, extra)
    placed.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    if like:  # placed by the concrete argument: not the eager fast path's jit (a tracer there)
        placed._places_by_its_argument = True  # type: ignore[attr-defined]
    return placed


def _to_backend(out: Any, name: str, arguments: Any) -> Any:
    """``out``'s uncommitted arrays of another backend moved to the default
    device of ``name``'s backend, or of the backend of the first array
    argument: a result computed from that array is already there, and a
    constant made from host data alone (``zeros_like`` of a weak scalar, a
    reference array) joins it, as JAX's lands on the default device."""
    target = backends.get(name)
    for leaf in pytree.tree_leaves(arguments):
        if is_refimpl_array(leaf):
            owner = backends.backend_of_array(leaf)
            if owner is None:  # a tracer: nothing moves
                return out
            target = owner
            break

    def move(leaf: Any) -> Any:
        owner = backends.backend_of_array(leaf)
        if owner is None or owner is target or getattr(leaf, "committed", False):
            return leaf
        return target.put_leaf(leaf, None, False, False)

    return pytree.tree_map(move, out)


__all__ = [
    "arange", "array", "asarray", "astype", "eye", "full", "full_like", "linspace", "ones",
    "ones_like", "zeros", "zeros_like",
]  # fmt: skip
