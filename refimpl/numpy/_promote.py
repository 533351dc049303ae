"""Argument handling shared by the numpy layer: checking, promotion, broadcasting.

``refimpl.numpy`` functions accept anything array-like (refimpl arrays,
tracers, NumPy arrays and scalars, Python scalars), promote with JAX's lattice
(weak types included) and broadcast NumPy-style; then they call the ``lax``
functions, whose primitives require matched dtypes and shapes.

Three promotion flavours, as in ``jax.numpy``:

* :func:`promote_dtypes` -- the join of the operands' types;
* :func:`promote_dtypes_inexact` -- the join, then bool/int -> the default
  float (``sqrt``, ``true_divide``, ``exp`` ...);
* :func:`promote_dtypes_numeric` -- the join, then bool -> the default int
  (``floor_divide``, ``remainder``, shifts ...).

The weak flag survives each of them: ``rnp.sqrt(2)`` is a weak float32.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from refimpl import dtypes, lax, tracing
from refimpl.array import as_array as as_array  # (moved down: lax uses it too)
from refimpl.array import is_refimpl_array as is_refimpl_array
from refimpl.config import config, numpy_promotion
from refimpl.core import ShapedArray


def is_operand(value: Any) -> bool:
    """Whether ``value`` is something refimpl.numpy computes with: an operand.

    Arrays (refimpl, NumPy), tracers, NumPy scalars and Python scalars are
    operands; lists, strings and other objects are not. The array types'
    operators use it to decide whether to answer ``NotImplemented`` for their
    other side.

    Args:
        value: Any object.

    Returns:
        A Python bool.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.is_operand(rnp.ones(2)), rnp.is_operand(3.0)
        (True, True)
        >>> rnp.is_operand([1, 2]), rnp.is_operand("abc")
        (False, False)
    """
    return tracing.is_array_like(value)


def is_traced(value: Any) -> bool:
    """Whether ``value`` is abstract (a tracer): its contents are unknown now."""
    return isinstance(value, tracing.Tracer)


def require_concrete(name: str, what: str, value: Any, context: str | None = None) -> np.ndarray:
    """``value`` as a NumPy array, or ``ConcretizationTypeError`` under a trace
    (JAX's first words, then ``context``: JAX's own line where it has one)."""
    if is_traced(value):
        context = context or f"{name}: {what} must be concrete"
        raise tracing.ConcretizationTypeError(
            "Abstract tracer value encountered where concrete value is expected: traced "
            f"array {value.aval.str_short()}\n{context} (its value decides the result's "
            "shape); it is traced here (jit, vmap, grad...)"
        )
    return np.asarray(value)


def aval_of(value: Any, fn_name: str, position: int | str) -> ShapedArray:
    """The abstract value of an operand; a TypeError naming ``fn_name`` and the
    position for anything that is not an array or a scalar."""
    if isinstance(value, (list, tuple)):
        raise TypeError(
            f"{fn_name}: argument at position {position} is a {type(value).__name__}; "
            "pass an array (rnp.asarray(...)) instead of a Python sequence"
        )
    return tracing.get_aval(value, fn_name, position)


def _to_dtype(value: Any, aval: ShapedArray, dtype: np.dtype, weak: bool) -> Any:
    """``value`` as ``dtype`` with weak flag ``weak`` (no equation when nothing changes)."""
    if aval.dtype == dtype and aval.weak_type == weak:
        return value
    if dtypes.is_python_scalar(value):
        return tracing.TypedScalar(value, dtype, weak)
    return lax.convert_element_type(value, dtype, weak_type=weak)


def convert_all(fn_name: str, args: tuple[Any, ...], dtype: np.dtype, weak: bool) -> list[Any]:
    """Every argument as ``dtype`` with weak flag ``weak``."""
    avals = [aval_of(a, fn_name, i) for i, a in enumerate(args)]
    return [_to_dtype(a, av, dtype, weak) for a, av in zip(args, avals, strict=True)]


def result_type(fn_name: str, *args: Any) -> tuple[np.dtype, bool]:
    """The joined ``(dtype, weak_type)`` of the operands (checking each one)."""
    avals = [aval_of(a, fn_name, i) for i, a in enumerate(args)]
    return dtypes.result_type(*[(av.dtype, av.weak_type) for av in avals])


def _promote(fn_name: str, args: tuple[Any, ...], adjust=None) -> tuple[list[Any], list[Any]]:
    """(converted args, their shapes): each operand's aval is read once, since
    this runs for every traced numpy-level operation."""
    if len(args) == 1:  # (the common case, without the loops below)
        aval = aval_of(args[0], fn_name, 0)
        dtype, weak = _joined_type([aval], adjust)
        return [_to_dtype(args[0], aval, dtype, weak)], [aval.shape]
    avals = [aval_of(a, fn_name, i) for i, a in enumerate(args)]
    dtype, weak = _joined_type(avals, adjust)
    converted = [
        a if av.dtype == dtype and av.weak_type == weak else _to_dtype(a, av, dtype, weak)
        for a, av in zip(args, avals, strict=True)
    ]
    return converted, [av.shape for av in avals]


# (x64, dtype promotion mode, adjust, (dtype, weak) of each operand) -> the
# promoted (dtype, weak). A
# few dozen keys in practice; bounded for calls with very many operands.
_joined: dict[tuple, tuple[np.dtype, bool]] = {}


def _joined_type(avals: list[ShapedArray], adjust: Any) -> tuple[np.dtype, bool]:
    """The operands' joined ``(dtype, weak)``, then ``adjust``ed: looked up
    per operand types, since every numpy-level operation promotes."""
    pairs = [(av.dtype, av.weak_type) for av in avals]
    key = (config._values["enable_x64"], numpy_promotion()[1], adjust, *pairs)
    joined = _joined.get(key)
    if joined is None:
        dtype, weak = dtypes.result_type(*pairs)
        joined = (dtype if adjust is None else adjust(dtype), weak)
        if len(_joined) >= 4096:
            _joined.clear()
        _joined[key] = joined
    return joined


def promote_dtypes(fn_name: str, *args: Any) -> list[Any]:
    """Convert every argument to the joined dtype (JAX's lattice, weak types)."""
    return _promote(fn_name, args)[0]


def to_inexact_dtype(dtype: np.dtype) -> np.dtype:
    """bool and integers of up to 32 bits compute in float32, 64-bit integers in
    the default float (float64 under x64); inexact types stay. As JAX's table:
    under x64 ``sin(int32)`` is float32, not the default float."""
    if dtypes.is_inexact(dtype):
        return dtype
    if dtype.itemsize < 8:
        return np.dtype(np.float32)
    return dtypes.weak_default_dtype("f")


def to_numeric_dtype(dtype: np.dtype) -> np.dtype:
    """bool computes in int32 (also under x64, as JAX's); numbers stay."""
    return np.dtype(np.int32) if dtypes.is_bool(dtype) else dtype


def promote_dtypes_inexact(fn_name: str, *args: Any) -> list[Any]:
    """The joined dtype, moved to the default float if it is bool or integer."""
    return _promote(fn_name, args, to_inexact_dtype)[0]


def promote_dtypes_numeric(fn_name: str, *args: Any) -> list[Any]:
    """The joined dtype, moved to the default int if it is bool."""
    return _promote(fn_name, args, to_numeric_dtype)[0]


def broadcast_shapes(fn_name: str, *shapes: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy's broadcast of ``shapes``; a TypeError naming ``fn_name`` otherwise."""
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        listed = ", ".join(str(tuple(s)) for s in shapes)
        raise TypeError(f"{fn_name} got incompatible shapes for broadcasting: {listed}.") from None


def broadcast_arrays(fn_name: str, *args: Any) -> list[Any]:
    """NumPy broadcasting; rank-0 operands stay rank 0 (lax broadcasts them)."""
    shapes = [aval_of(a, fn_name, i).shape for i, a in enumerate(args)]
    return _broadcast_known(fn_name, list(args), shapes)


def _broadcast_known(fn_name: str, args: list[Any], shapes: list[Any]) -> list[Any]:
    """:func:`broadcast_arrays` for operands whose shapes are already known."""
    if len(args) < 2:
        return args
    nonscalar = set(shapes)
    nonscalar.discard(())
    if len(nonscalar) <= 1:  # equal shapes or rank 0: nothing to insert
        return args
    shape = broadcast_shapes(fn_name, *shapes)
    return [
        a if s in ((), shape) else broadcast_to_shape(a, s, shape)
        for a, s in zip(args, shapes, strict=True)
    ]


def broadcast_to_shape(x: Any, from_shape: tuple[int, ...], shape: tuple[int, ...]) -> Any:
    """Right-aligned NumPy broadcast of ``x`` (of ``from_shape``) to ``shape``."""
    lead = len(shape) - len(from_shape)
    return lax.broadcast_in_dim(x, shape, tuple(range(lead, len(shape))))


def check_rank_promotion(fn_name: str, shapes: list[Any]) -> None:
    """``jax_numpy_rank_promotion``: operands of different ranks, at least two
    of them not scalars, warn ("warn") or raise ("raise") in JAX 0.10.2's words
    before they are broadcast; "allow" (the default) says nothing."""
    mode = numpy_promotion()[0]
    if mode == "allow" or len({len(s) for s in shapes if s}) < 2:
        return
    listed = " ".join(str(tuple(s)) for s in shapes)
    if mode == "warn":
        warnings.warn(
            f"Following NumPy automatic rank promotion for {fn_name} on shapes {listed}. "
            "Set the jax_numpy_rank_promotion config option to 'allow' to disable this "
            "warning; for more information, see "
            "https://docs.jax.dev/en/latest/rank_promotion_warning.html.",
            stacklevel=3,
        )
    else:
        raise ValueError(
            f"Operands could not be broadcast together for {fn_name} on shapes {listed} "
            "and with the config option jax_numpy_rank_promotion='raise'. For more "
            "information, see https://docs.jax.dev/en/latest/rank_promotion_warning.html."
        )


def _promote_shapes(fn_name: str, args: list[Any], shapes: list[Any]) -> list[Any]:
    """jnp's ``promote_shapes``: the rank promotion check, then NumPy broadcasting."""
    check_rank_promotion(fn_name, shapes)
    return _broadcast_known(fn_name, args, shapes)


def promote_args(fn_name: str, *args: Any) -> list[Any]:
    """jnp's ``promote_args``: join the dtypes, then broadcast the shapes."""
    return _promote_shapes(fn_name, *_promote(fn_name, args))


def promote_args_inexact(fn_name: str, *args: Any) -> list[Any]:
    """:func:`promote_dtypes_inexact`, then broadcast the shapes."""
    return _promote_shapes(fn_name, *_promote(fn_name, args, to_inexact_dtype))


def promote_args_numeric(fn_name: str, *args: Any) -> list[Any]:
    """:func:`promote_dtypes_numeric`, then broadcast the shapes."""
    return _promote_shapes(fn_name, *_promote(fn_name, args, to_numeric_dtype))


def checked_array(fn_name: str, value: Any, position: int | str = 0) -> Any:
    """``value`` as a refimpl array after checking it is an array or a scalar
    (a TypeError naming ``fn_name`` and the position for lists, strings ...),
    as jnp's ``check_arraylike``."""
    aval_of(value, fn_name, position)
    return as_array(value)
