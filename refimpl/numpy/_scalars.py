"""Dtype names, scalar types, constants and dtype queries, as ``jax.numpy`` has them.

``rnp.float32`` is both a dtype specification (``dtype=rnp.float32``,
``np.dtype(rnp.float32)``) and a constructor: ``rnp.float32(3)`` is a strongly
typed rank-0 float32 array, ``rnp.int32(x)`` converts an array (XLA's
conversion: float -> int truncates toward zero). 64-bit names give 32-bit
arrays unless x64 is enabled, as in JAX. The abstract types (``rnp.floating``,
``rnp.integer``, ...) are NumPy's, so ``rnp.issubdtype(d, rnp.floating)``
works as in ``jnp``.
"""

from __future__ import annotations

import builtins
import math
import warnings
from collections.abc import Sequence
from typing import Any, Literal

import ml_dtypes
import numpy as np

from refimpl import dtypes
from refimpl.numpy._creation import asarray
from refimpl.numpy._promote import aval_of, is_refimpl_array
from refimpl.numpy._shape import normalize_axes

# --- constants (Python floats, as in jax.numpy) ------------------------------------------

pi = math.pi
e = math.e
inf = math.inf
nan = math.nan
euler_gamma = 0.5772156649015329
newaxis = None


# --- scalar types -----------------------------------------------------------------------


class _ScalarMeta(type):
    """The metaclass of ``rnp.float32`` and friends: the class carries ``dtype``
    (so NumPy and ``canonicalize_dtype`` accept it), and calling it converts."""

    dtype: np.dtype

    def __call__(cls, x: Any = 0, /) -> Any:
        return asarray(x, dtype=cls.dtype)

    def __repr__(cls) -> str:
        return f"<class 'refimpl.numpy.{cls.__name__}'>"

    def __eq__(cls, other: Any) -> bool:
        return (
            cls is other
            or (isinstance(other, _ScalarMeta) and cls.dtype == other.dtype)
            or (not isinstance(other, _ScalarMeta) and _same_type(cls.dtype, other))
        )

    def __ne__(cls, other: Any) -> bool:
        # the metaclass's __eq__: ``cls.__eq__`` would find the class's own (object's)
        return not type(cls).__eq__(cls, other)

    def __hash__(cls) -> int:
        return hash(cls.dtype.type)


def _same_type(dtype: np.dtype, other: Any) -> bool:
    try:
        return np.dtype(other) == dtype
    except TypeError:
        return False


def _scalar_type(name: str, dtype: Any) -> type:
    doc = f"The ``{np.dtype(dtype).name}`` scalar type: ``rnp.{name}(x)`` converts ``x``."
    return _ScalarMeta(name, (), {"dtype": np.dtype(dtype), "__doc__": doc})


bool_ = _scalar_type("bool_", np.bool_)
globals()["bool"] = bool_  # jnp.bool (a module attribute: this module calls builtins.bool)
int4 = _scalar_type("int4", ml_dtypes.int4)
int8 = _scalar_type("int8", np.int8)
int16 = _scalar_type("int16", np.int16)
int32 = _scalar_type("int32", np.int32)
int64 = _scalar_type("int64", np.int64)
uint4 = _scalar_type("uint4", ml_dtypes.uint4)
uint8 = _scalar_type("uint8", np.uint8)
uint16 = _scalar_type("uint16", np.uint16)
uint32 = _scalar_type("uint32", np.uint32)
uint64 = _scalar_type("uint64", np.uint64)
float16 = _scalar_type("float16", np.float16)
bfloat16 = _scalar_type("bfloat16", ml_dtypes.bfloat16)
float8_e4m3fn = _scalar_type("float8_e4m3fn", ml_dtypes.float8_e4m3fn)
float8_e5m2 = _scalar_type("float8_e5m2", ml_dtypes.float8_e5m2)
float8_e4m3fnuz = _scalar_type("float8_e4m3fnuz", ml_dtypes.float8_e4m3fnuz)
float8_e5m2fnuz = _scalar_type("float8_e5m2fnuz", ml_dtypes.float8_e5m2fnuz)
float8_e4m3b11fnuz = _scalar_type("float8_e4m3b11fnuz", ml_dtypes.float8_e4m3b11fnuz)
float8_e3m4 = _scalar_type("float8_e3m4", ml_dtypes.float8_e3m4)
float8_e4m3 = _scalar_type("float8_e4m3", ml_dtypes.float8_e4m3)
float32 = _scalar_type("float32", np.float32)
float64 = _scalar_type("float64", np.float64)
complex64 = _scalar_type("complex64", np.complex64)
complex128 = _scalar_type("complex128", np.complex128)
# jnp's aliases: the C names and the default-width names
single, double = float32, float64
csingle, cdouble = complex64, complex128
int_, uint, float_, complex_ = int64, uint64, float64, complex128

# The abstract scalar hierarchy is NumPy's, as in jax.numpy.
generic = np.generic
number = np.number
inexact = np.inexact
floating = np.floating
complexfloating = np.complexfloating
integer = np.integer
signedinteger = np.signedinteger
unsignedinteger = np.unsignedinteger
dtype = np.dtype


# --- dtype queries ----------------------------------------------------------------------


def finfo(dtype: Any) -> Any:
    """The machine limits of a floating dtype (``ml_dtypes.finfo``: handles bfloat16).

    Args:
        dtype: A floating dtype (or scalar type, or an array whose dtype to
            take).

    Returns:
        An ``ml_dtypes.finfo`` object: ``eps``, ``max``, ``min``, ``tiny``,
        ``bits``...

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.finfo(rnp.float32).eps
        np.float32(1.1920929e-07)
        >>> rnp.finfo(rnp.bfloat16).bits
        16
    """
    return ml_dtypes.finfo(_plain_dtype("finfo", dtype))


def iinfo(int_type: Any) -> Any:
    """The machine limits of an integer dtype (``ml_dtypes.iinfo``: handles int4/uint4).

    Args:
        int_type: An integer dtype (or scalar type, or an array whose dtype to
            take).

    Returns:
        An ``iinfo`` object: ``min``, ``max``, ``bits``, ``dtype``.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.iinfo(rnp.int8).min
        -128
        >>> rnp.iinfo(rnp.uint8).max
        255
    """
    return dtypes.iinfo(_plain_dtype("iinfo", int_type))


def _plain_dtype(fn_name: str, value: Any) -> np.dtype:
    """A dtype from a dtype specification or from an array's dtype (not canonicalized)."""
    found = getattr(value, "dtype", None)
    if isinstance(found, np.dtype):
        return found
    try:
        return np.dtype(value)
    except TypeError:
        raise TypeError(f"{fn_name}: {value!r} is not a dtype or an array") from None


def issubdtype(arg1: Any, arg2: Any) -> bool:
    """Whether ``arg1`` is a subtype of ``arg2`` in the scalar type hierarchy.

    ``np.issubdtype`` that knows bfloat16 and the float8s are floating types,
    int4/uint4 integers, and that a typed key dtype is ``prng_key`` and
    ``extended`` (and nothing numeric).

    Args:
        arg1: A dtype, scalar type or array.
        arg2: A dtype or an abstract type (``rnp.floating``, ``rnp.integer``...).

    Returns:
        A Python bool.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.issubdtype(rnp.float32, rnp.floating)
        True
        >>> rnp.issubdtype(rnp.bfloat16, rnp.floating)
        True
    """
    if (
        isinstance(arg1, dtypes.ExtendedDtype)
        or isinstance(arg2, dtypes.ExtendedDtype)
        or (isinstance(arg2, type) and issubclass(arg2, dtypes.extended))
    ):
        return dtypes.issubdtype_extended(arg1, arg2)
    first = (
        _plain_dtype("issubdtype", arg1)
        if not isinstance(arg1, type) or isinstance(arg1, _ScalarMeta)
        else arg1
    )
    if isinstance(first, np.dtype) and (first == dtypes.bfloat16 or first in dtypes.FLOAT8_DTYPES):
        if isinstance(arg2, (_ScalarMeta, np.dtype)):
            return np.dtype(arg2) == first
        return arg2 in (np.floating, np.inexact, np.number, np.generic)
    if isinstance(first, type) and first in (ml_dtypes.int4, ml_dtypes.uint4):
        first = np.dtype(first)
    if isinstance(first, np.dtype) and first in dtypes.INT4_DTYPES:
        # ml_dtypes' 4-bit types are not NumPy subtypes of integer; JAX places them there
        if arg2 in _ABSTRACT_TYPES:
            kind = np.signedinteger if first == dtypes.int4 else np.unsignedinteger
            return arg2 in (kind, np.integer, np.number, np.generic)
        return _same_type(first, arg2.dtype if isinstance(arg2, _ScalarMeta) else arg2)
    if isinstance(arg2, _ScalarMeta):
        arg2 = arg2.dtype
    return builtins.bool(np.issubdtype(first, arg2))


_ABSTRACT_TYPES = (
    np.generic, np.number, np.inexact, np.floating, np.complexfloating, np.integer,
    np.signedinteger, np.unsignedinteger, np.flexible, np.character,
)  # fmt: skip


def result_type(*args: Any) -> np.dtype:
    """The dtype ``jnp`` operations on ``args`` compute in.

    JAX's lattice: Python scalars and the types ``int``/``float``/``complex``
    are weak, so they do not widen an array's dtype (NumPy's
    ``result_type(int32, 1.0)`` is float64, JAX's float32); the result is
    canonicalized (no 64-bit types without x64).

    Args:
        *args: Arrays, scalars, dtypes or scalar types.

    Returns:
        A NumPy dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.result_type(rnp.int8, rnp.float32)
        dtype('float32')
        >>> rnp.result_type(rnp.array([1], dtype=rnp.int8), 2)
        dtype('int8')
        >>> rnp.result_type(rnp.int32, 1.0)
        dtype('float32')
    """
    operands = [a.dtype if isinstance(a, _ScalarMeta) else _operand(a) for a in args]
    return dtypes.jnp_result_type(*operands)[0]


def _operand(value: Any) -> Any:
    if is_refimpl_array(value):
        aval = aval_of(value, "result_type", 0)
        return (aval.dtype, aval.weak_type)
    return value


def promote_types(a: Any, b: Any) -> np.dtype:
    """The dtype two dtypes promote to on JAX's lattice, not canonicalized.

    As ``jnp.promote_types`` in JAX 0.10.2: without x64 too ``int32, float64 ->
    float64``; the Python types are weak, and a weak result is its kind's
    64-bit dtype (``int, int -> int64``).

    Args:
        a: A dtype or scalar type.
        b: A dtype or scalar type.

    Returns:
        A NumPy dtype.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.promote_types(rnp.int8, rnp.uint8)
        dtype('int16')
        >>> rnp.promote_types("int32", "float64")
        dtype('float64')
    """
    return dtypes.promote_types_uncanonical(
        *(x.dtype if isinstance(x, _ScalarMeta) else x for x in (a, b))
    )


def can_cast(
    from_: Any,
    to: Any,
    casting: Literal["no", "equiv", "safe", "same_kind", "unsafe"] = "safe",
) -> bool:
    """Whether a cast from ``from_`` to ``to`` is allowed under the ``casting`` rule.

    ``np.can_cast`` on dtypes (bfloat16 included via ml_dtypes); an array's
    dtype is used for an array.

    Args:
        from_: A dtype, scalar type or array.
        to: A dtype or scalar type.
        casting: ``"no"``, ``"equiv"``, ``"safe"``, ``"same_kind"`` or
            ``"unsafe"``.

    Returns:
        A Python bool.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.can_cast(rnp.int8, rnp.int32)
        True
        >>> rnp.can_cast(rnp.float32, rnp.int32)
        False
    """
    return builtins.bool(
        np.can_cast(_plain_dtype("can_cast", from_), _plain_dtype("can_cast", to), casting)
    )


def iscomplexobj(x: Any) -> bool:
    """Whether ``x``'s dtype is complex (whatever its values).

    As JAX, any object is asked: ``None`` and strings are not complex, a
    nested list is read as an array.

    Args:
        x: Any object.

    Returns:
        A Python bool.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.iscomplexobj(rnp.array([1 + 0j]))
        True
        >>> rnp.iscomplexobj(rnp.array([1.0]))
        False
    """
    if isinstance(x, (complex, np.complexfloating)):
        return True
    if x is None or isinstance(x, (bool, int, float, str, np.generic)):
        return False
    dtype = getattr(x, "dtype", None)
    if dtype is None:
        dtype = aval_of(asarray(x), "iscomplexobj", 0).dtype
    return dtypes.is_complex(dtype)


def isrealobj(x: Any) -> bool:
    """Whether ``x``'s dtype is not complex (any object, as :func:`iscomplexobj`).

    Args:
        x: Any object.

    Returns:
        A Python bool.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.isrealobj(rnp.array([1.0]))
        True
        >>> rnp.isrealobj(1j)
        False
    """
    return not iscomplexobj(x)


def _unwrapped(a: Any) -> Any:
    """An object defining ``__jax_array__`` read as the array it gives: JAX
    0.10.2's ``isscalar`` calls it, and its ``shape``/``ndim``/``size`` read
    the object's attributes (NumPy's), where every other function refuses it."""
    if hasattr(type(a), "__jax_array__") and not is_refimpl_array(a):
        return a.__jax_array__()
    return a


def isscalar(element: Any) -> bool:
    """A Python/NumPy scalar, or a rank-0 array (as jnp, where arrays of rank 0 count).

    Whatever ``np.isscalar`` calls a scalar counts first, as JAX 0.10.2: strings,
    bytes and ``numbers.Number`` objects (``Fraction``) too, though no array holds them.
    Unlike NumPy's, a rank-0 array is a scalar.

    Args:
        element: Any object.

    Returns:
        A Python bool.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.isscalar(3.0)
        True
        >>> rnp.isscalar(rnp.array(3.0))
        True
        >>> rnp.isscalar(rnp.array([3.0]))
        False
    """
    if np.isscalar(element):
        return True
    if isinstance(element, (list, tuple)) or element is None:
        return False
    try:
        return aval_of(_unwrapped(element), "isscalar", 0).ndim == 0
    except TypeError:
        return False


def _ml_info(info: Any, dt: np.dtype) -> Any:
    """``ml_dtypes.finfo``/``iinfo`` of ``dt``, or None where it has none."""
    try:
        return info(dt)
    except (TypeError, ValueError):
        return None


def _real_floating(dt: np.dtype) -> bool:
    # every ml_dtypes float (float8_*, float4_e2m1fn, bfloat16) counts, as JAX
    # 0.10.2 (NumPy gives most of them kind "V")
    return dtypes.is_floating(dt) or (dt.kind == "V" and _ml_info(ml_dtypes.finfo, dt) is not None)


def _narrow_int(dt: np.dtype, signed: bool) -> bool:
    # the sub-byte integers ml_dtypes adds (int2/uint2 ...) have kind "V"
    info = _ml_info(ml_dtypes.iinfo, dt) if dt.kind == "V" else None
    return info is not None and (int(info.min) < 0) == signed


_KINDS = {
    "bool": dtypes.is_bool,
    "signed integer": lambda d: dtypes.is_signed_int(d) or _narrow_int(d, True),
    "unsigned integer": lambda d: dtypes.is_unsigned_int(d) or _narrow_int(d, False),
    "integral": lambda d: dtypes.is_integer(d) or _ml_info(ml_dtypes.iinfo, d) is not None,
    "real floating": _real_floating,
    "complex floating": dtypes.is_complex,
    "numeric": lambda d: not dtypes.is_bool(d),
}


def isdtype(dtype: Any, kind: Any) -> bool:
    """Whether ``dtype`` is of ``kind``: the array API's ``isdtype``.

    ``kind`` is a dtype, one of the kind names
    ("bool", "signed integer", "unsigned integer", "integral", "real
    floating", "complex floating", "numeric"), or a tuple of those (any of
    them). ml_dtypes' types count in their kinds (bfloat16 and the float8s
    are real floating).

    Args:
        dtype: A dtype or scalar type.
        kind: A dtype, a kind name, or a tuple of those.

    Returns:
        A Python bool.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.isdtype(rnp.float32, "real floating")
        True
        >>> rnp.isdtype(rnp.int8, ("bool", "unsigned integer"))
        False
    """
    dt = _plain_dtype("isdtype", dtype)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    for k in kinds:
        if isinstance(k, str):
            if k not in _KINDS:
                raise ValueError(f"isdtype: unrecognized kind {k!r}; use one of {sorted(_KINDS)}")
            if _KINDS[k](dt):
                return True
        elif dt == _plain_dtype("isdtype", k):
            return True
    return False


def _warn_sequence(fn_name: str, a: Any) -> None:
    # JAX 0.10.2 still answers for a list/tuple but deprecates it
    if isinstance(a, (list, tuple)):
        warnings.warn(
            f"{fn_name} requires ndarray or scalar arguments, got {type(a)} at position 0.",
            DeprecationWarning,
            stacklevel=3,
        )


def ndim(a: Any) -> int:
    """The number of dimensions of ``a``.

    A list/tuple is read as an array, with JAX's DeprecationWarning.

    Args:
        a: An array or scalar.

    Returns:
        A Python int.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.ndim(rnp.ones((2, 3)))
        2
        >>> rnp.ndim(5)
        0
    """
    if isinstance(a, (list, tuple)):
        _warn_sequence("ndim", a)
        return int(np.ndim(a))
    return aval_of(_unwrapped(a), "ndim", 0).ndim


def shape(a: Any) -> tuple[int, ...]:
    """The shape of ``a`` (a list/tuple as :func:`ndim`).

    Args:
        a: An array or scalar.

    Returns:
        A tuple of Python ints.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.shape(rnp.ones((2, 3)))
        (2, 3)
    """
    if isinstance(a, (list, tuple)):
        _warn_sequence("shape", a)
        return tuple(np.shape(a))
    return aval_of(_unwrapped(a), "shape", 0).shape


def size(a: Any, axis: int | Sequence[int] | None = None) -> int:
    """The number of elements of ``a``, or the product of its lengths along ``axis``.

    ``axis`` is an int or a sequence of distinct axes (``()`` gives 1); a
    list/tuple ``a`` is read as in :func:`ndim`.

    Args:
        a: An array or scalar.
        axis: The axis or axes to count along, or None for all.

    Returns:
        A Python int.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.size(rnp.ones((2, 3)))
        6
        >>> rnp.size(rnp.ones((2, 3)), axis=1)
        3
    """
    if isinstance(a, (list, tuple)):
        _warn_sequence("size", a)
        dims = tuple(np.shape(a))
    else:
        dims = aval_of(_unwrapped(a), "size", 0).shape
    axes = range(len(dims)) if axis is None else normalize_axes("size", axis, len(dims))
    return math.prod(dims[k] for k in axes)


__all__ = [
    "bfloat16", "bool", "bool_", "can_cast", "cdouble", "complex128", "complex64", "complex_",
    "complexfloating", "csingle", "double", "dtype", "e", "euler_gamma", "finfo", "float16",
    "float32", "float64", "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn",
    "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float_", "floating",
    "generic", "iinfo", "inexact", "inf",
    "int16", "int32", "int4", "int64", "int8", "int_", "integer", "iscomplexobj", "isrealobj",
    "isdtype", "isscalar", "issubdtype", "nan", "ndim", "newaxis", "number", "pi", "promote_types",
    "result_type", "shape", "signedinteger", "single", "size", "uint", "uint16", "uint32",
    "uint4", "uint64", "uint8", "unsignedinteger",
]  # fmt: skip
