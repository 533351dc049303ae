"""Dtypes, canonicalization and JAX's type promotion lattice with weak types.

refimpl supports exactly the 17 dtypes in :data:`ALL_DTYPES`. Values carry a
``(dtype, weak_type)`` pair; Python ``int``/``float``/``complex`` scalars are
*weakly typed*: they adopt the dtype of the strongly typed operand they meet
instead of widening it (``int8_array + 1`` is ``int8``).

Promotion follows JAX 0.10 with ``jax_numpy_dtype_promotion="standard"``: the
result of combining operands is the least upper bound (join) of their nodes in
the lattice below, where a weak operand sits at the weak node of its kind
(``i*``, ``f*``, ``c*``)::

    bool -> i*
    i*   -> u8, i8          f*  -> bf16, f16, c*      c*  -> c64
    u8   -> u16, i16        bf16 -> f32               c64 -> c128
    u16  -> u32, i32        f16  -> f32
    u32  -> u64, i64        f32  -> f64, c64
    u64  -> f*              f64  -> c128
    i8 -> i16 -> i32 -> i64 -> f*

With x64 disabled, ``u32 -> i64`` is replaced by ``u32 -> i32`` (so no 64-bit
type is formed from 32-bit inputs). Operand dtypes are canonicalized *before*
the join and the result after it. A join that lands on a weak node gives a
weakly typed result of that kind's default dtype (``int32``/``float32``/
``complex64``, or the 64-bit ones with x64).

The 4-bit integers ``int4`` and ``uint4`` (ml_dtypes') hang below ``i*``
with nothing above them (``i* -> u4, i4``), as in JAX 0.10.2: they combine
only with themselves, ``bool`` and weakly typed ints (``int4_array + 1`` is
``int4``); a mix with no join is a :class:`TypePromotionError`.

With ``jax_numpy_dtype_promotion="strict"`` (``config.numpy_dtype_promotion``)
the lattice is JAX's strict one: no two strongly typed dtypes join, and the
weak nodes are below every type of their kind and the higher kinds (``i* ->
f* -> c*``, ``i*`` below every integer type, ``f*`` below every float, ``c*``
below every complex; ``bool`` below nothing). So ``float32_array + 1`` is
still ``float32``, but ``int32_array + float32_array`` and ``bool_array + 1``
are :class:`TypePromotionError`; a mix of weak values joins at the higher weak
node (``1 + 2.0`` is a weak float).
"""

from __future__ import annotations

import functools
from typing import Any

import ml_dtypes
import numpy as np

from refimpl.config import config, numpy_promotion

__all__ = [
    "ALL_DTYPES",
    "INT4_DTYPES",
    "TypePromotionError",
    "X64_SENSITIVE",
    "FLOAT8_DTYPES",
    "bfloat16",
    "float0",
    "int4",
    "uint4",
    "ExtendedDtype",
    "extended",
    "issubdtype_extended",
    "prng_key",
    "canonicalize_dtype",
    "dtype_to_weak_python_kind",
    "finfo",
    "float8_e3m4",
    "float8_e4m3",
    "float8_e4m3b11fnuz",
    "float8_e4m3fn",
    "float8_e4m3fnuz",
    "float8_e5m2",
    "float8_e5m2fnuz",
    "iinfo",
    "is_bool",
    "is_complex",
    "is_floating",
    "is_inexact",
    "is_integer",
    "is_python_scalar",
    "is_signed_int",
    "is_unsigned_int",
    "jnp_result_type",
    "max_value",
    "min_value",
    "one",
    "promote_types",
    "python_scalar_dtype",
    "result_type",
    "short_name",
    "weak_default_dtype",
    "weak_type_of_value",
    "wrap_int4",
    "x64_enabled",
    "zero",
]

bfloat16 = np.dtype(ml_dtypes.bfloat16)
int4 = np.dtype(ml_dtypes.int4)
uint4 = np.dtype(ml_dtypes.uint4)
float8_e4m3fn = np.dtype(ml_dtypes.float8_e4m3fn)
float8_e5m2 = np.dtype(ml_dtypes.float8_e5m2)
float8_e4m3fnuz = np.dtype(ml_dtypes.float8_e4m3fnuz)
float8_e5m2fnuz = np.dtype(ml_dtypes.float8_e5m2fnuz)
float8_e4m3b11fnuz = np.dtype(ml_dtypes.float8_e4m3b11fnuz)
float8_e3m4 = np.dtype(ml_dtypes.float8_e3m4)
float8_e4m3 = np.dtype(ml_dtypes.float8_e4m3)

#: The 8-bit float dtypes (ml_dtypes'; NumPy files them under kind ``"V"``).
#: As JAX 0.10.2's lattice has them, each promotes only with itself, bool,
#: integers and weakly typed values: ``float8_e4m3fn + float32`` is a
#: TypePromotionError (``x.astype`` converts explicitly).
FLOAT8_DTYPES: tuple[np.dtype, ...] = (
    float8_e4m3fn,
    float8_e5m2,
    float8_e4m3fnuz,
    float8_e5m2fnuz,
    float8_e4m3b11fnuz,
    float8_e3m4,
    float8_e4m3,
)

#: The 4-bit integer dtypes; NumPy files them under kind ``"V"``, not ``"i"``/``"u"``.
INT4_DTYPES: frozenset[np.dtype] = frozenset((int4, uint4))


class TypePromotionError(ValueError):
    """A mix of dtypes the promotion lattice does not allow (``jax.dtypes.TypePromotionError``)."""


#: The tangent dtype of integer and bool values: a structured dtype of size 0,
#: so a float0 array carries no data (as ``jax.dtypes.float0``).
float0 = np.dtype([("float0", np.void, 0)])


class extended(np.generic):  # noqa: N801 -- spelled as JAX's
    """The scalar type of dtypes that are not NumPy dtypes (typed PRNG keys)."""


class prng_key(extended):  # noqa: N801 -- spelled as JAX's
    """The scalar type of typed PRNG key dtypes (``jax.random.key(0).dtype``)."""


class ExtendedDtype:
    """Base of the dtypes that are not NumPy dtypes (``refimpl.random``'s key
    dtype): ``issubdtype`` places them under ``type`` (``prng_key``) and
    ``extended``, and under no NumPy type but ``np.generic``."""

    type: type = extended

    def physical(self, shape: tuple[int, ...]) -> tuple[tuple[int, ...], np.dtype]:
        """The shape and dtype of the data under arrays of ``shape`` of this dtype."""
        raise NotImplementedError

    def wrap(self, data: Any) -> Any:
        """An array of this dtype over ``data`` (of the physical shape and dtype)."""
        raise NotImplementedError


def issubdtype_extended(a: Any, b: Any) -> bool:
    """``issubdtype(a, b)`` where ``a`` or ``b`` is an extended dtype or scalar type.
    An array is no dtype here, as in JAX: a NumPy array is a TypeError, a key
    array (which NumPy cannot convert) a ValueError; other arrays give False."""
    for arg in (a, b):
        if isinstance(arg, np.ndarray):
            raise TypeError("issubdtype: cannot construct a dtype from an array")
        found = getattr(arg, "dtype", None)
        if not isinstance(arg, ExtendedDtype) and isinstance(found, ExtendedDtype):
            raise ValueError(
                f"issubdtype: could not convert an array of dtype {found} to a NumPy dtype "
                "(pass its .dtype)"
            )
    if isinstance(b, type) and issubclass(b, extended):
        if isinstance(a, ExtendedDtype):
            return issubclass(a.type, b)
        return isinstance(a, type) and issubclass(a, b)
    if isinstance(a, ExtendedDtype):
        return a == b or b is np.generic
    return False


finfo = ml_dtypes.finfo
iinfo: type[Any] = ml_dtypes.iinfo  # unannotated in ml_dtypes: its calls are untyped

_SHORT_NAMES: dict[np.dtype, str] = {
    np.dtype(np.bool_): "bool",
    int4: "i4",
    np.dtype(np.int8): "i8",
    np.dtype(np.int16): "i16",
    np.dtype(np.int32): "i32",
    np.dtype(np.int64): "i64",
    uint4: "u4",
    np.dtype(np.uint8): "u8",
    np.dtype(np.uint16): "u16",
    np.dtype(np.uint32): "u32",
    np.dtype(np.uint64): "u64",
    np.dtype(np.float16): "f16",
    bfloat16: "bf16",
    # (JAX's jaxpr names: the dtype's name with "float" shortened to "f")
    float8_e4m3fn: "f8_e4m3fn",
    float8_e5m2: "f8_e5m2",
    float8_e4m3fnuz: "f8_e4m3fnuz",
    float8_e5m2fnuz: "f8_e5m2fnuz",
    float8_e4m3b11fnuz: "f8_e4m3b11fnuz",
    float8_e3m4: "f8_e3m4",
    float8_e4m3: "f8_e4m3",
    np.dtype(np.float32): "f32",
    np.dtype(np.float64): "f64",
    np.dtype(np.complex64): "c64",
    np.dtype(np.complex128): "c128",
}

#: Every dtype refimpl supports, in a fixed order.
ALL_DTYPES: list[np.dtype] = list(_SHORT_NAMES)

_BY_SHORT_NAME: dict[str, np.dtype] = {name: dt for dt, name in _SHORT_NAMES.items()}

_TO_32BIT: dict[np.dtype, np.dtype] = {
    np.dtype(np.int64): np.dtype(np.int32),
    np.dtype(np.uint64): np.dtype(np.uint32),
    np.dtype(np.float64): np.dtype(np.float32),
    np.dtype(np.complex128): np.dtype(np.complex64),
}

#: Config flags whose value changes dtype canonicalization (and so tracing).
X64_SENSITIVE: tuple[str, ...] = ("enable_x64",)

_PYTHON_SCALAR_TYPES = (bool, int, float, complex)


def x64_enabled() -> bool:
    """Whether 64-bit dtypes are enabled (``config.enable_x64``)."""
    enabled: bool = config.enable_x64  # config's flags are read dynamically (Any)
    return enabled


# --------------------------------------------------------------------------
# Names and predicates


def short_name(dtype: Any) -> str:
    """The short IR name of a supported dtype: ``"f32"``, ``"bf16"``, ``"u8"``, ``"bool"``..."""
    try:
        return _SHORT_NAMES[np.dtype(dtype)]
    except (KeyError, TypeError):
        raise TypeError(f"dtype {dtype!r} is not supported by refimpl") from None


def is_bool(dtype: np.dtype) -> bool:
    """True for ``bool``."""
    return dtype.kind == "b"


def is_signed_int(dtype: np.dtype) -> bool:
    """True for ``int4``, ``int8`` .. ``int64``."""
    return dtype.kind == "i" or dtype == int4


def is_unsigned_int(dtype: np.dtype) -> bool:
    """True for ``uint4``, ``uint8`` .. ``uint64``."""
    return dtype.kind == "u" or dtype == uint4


def is_integer(dtype: np.dtype) -> bool:
    """True for signed and unsigned integers (not ``bool``)."""
    return dtype.kind in "iu" or dtype in INT4_DTYPES


def is_floating(dtype: np.dtype) -> bool:
    """True for real floating dtypes, including ``float16``, ``bfloat16`` and the float8s."""
    return dtype.kind == "f" or dtype == bfloat16 or dtype in FLOAT8_DTYPES


def is_complex(dtype: np.dtype) -> bool:
    """True for ``complex64`` and ``complex128``."""
    return dtype.kind == "c"


def is_inexact(dtype: np.dtype) -> bool:
    """True for floating or complex dtypes."""
    return is_floating(dtype) or is_complex(dtype)


# --------------------------------------------------------------------------
# Canonicalization


def _to_supported_dtype(dtype: Any) -> np.dtype:
    """``np.dtype(dtype)`` restricted to :data:`ALL_DTYPES`; TypeError otherwise."""
    try:
        dt: np.dtype[Any] = np.dtype(dtype)
    except Exception as e:  # numpy raises TypeError, sometimes ValueError
        raise TypeError(f"dtype {dtype!r} not understood") from e
    if not dt.isnative:
        dt = dt.newbyteorder("=")
    if dt not in _SHORT_NAMES:
        raise TypeError(
            f"dtype {dt!s} (from {dtype!r}) is not supported by refimpl; "
            f"supported dtypes: {', '.join(str(d) for d in ALL_DTYPES)}"
        )
    if dt in INT4_DTYPES and not _int4_seen:
        _saw_int4()
    return dt


# Run once, when a 4-bit integer dtype first enters refimpl: the primitives
# layer then switches its impls to ones that widen 4-bit operands, a cost
# every other program need not pay.
_first_int4_hooks: list[Any] = []
_int4_seen = False


def _saw_int4() -> None:
    global _int4_seen
    _int4_seen = True
    while _first_int4_hooks:
        _first_int4_hooks.pop(0)()


def on_first_int4(hook: Any) -> None:
    """Call ``hook()`` when an int4/uint4 dtype is first canonicalized (at
    once, if one already was)."""
    if _int4_seen:
        hook()
    else:
        _first_int4_hooks.append(hook)


@functools.lru_cache(maxsize=512)
def _canonicalize_cached(dtype: Any, x64: bool) -> np.dtype:
    dt = _to_supported_dtype(dtype)
    return dt if x64 else _TO_32BIT.get(dt, dt)


def canonicalize_dtype(dtype: Any) -> np.dtype:
    """The dtype refimpl computes in for a dtype specification.

    Accepts whatever ``np.dtype`` accepts (names, scalar types, dtypes, the
    ml_dtypes types). Without x64, 64-bit types map to their 32-bit
    counterparts (int64->int32, uint64->uint32, float64->float32,
    complex128->complex64). A dtype outside :data:`ALL_DTYPES` (strings,
    object, datetime, the float8 types other than :data:`FLOAT8_DTYPES`, ...) is a
    ``TypeError`` naming it.
    """
    x64 = config.enable_x64
    try:
        return _canonicalize_cached(dtype, x64)
    except TypeError:
        # Unhashable specifications skip the cache; real errors re-raise here.
        dt = _to_supported_dtype(dtype)
        return dt if x64 else _TO_32BIT.get(dt, dt)


# --------------------------------------------------------------------------
# Python scalars and weak types


def python_scalar_type(x: Any) -> type | None:
    """``bool``, ``int``, ``float`` or ``complex`` for a Python scalar, else None.

    A subclass of ``int``/``float``/``complex`` (an ``IntEnum`` member, ...)
    counts as its base type, as in JAX 0.10.2 (``jit(f)(Color.RED)`` traces a
    weak int32); NumPy scalars (``np.float64`` subclasses ``float``) do not."""
    t = type(x)
    if t in _PYTHON_SCALAR_TYPES:
        return t
    if isinstance(x, (int, float, complex)) and not isinstance(x, np.generic):
        return int if isinstance(x, int) else float if isinstance(x, float) else complex
    return None


def is_python_scalar(x: Any) -> bool:
    """True for Python ``bool``/``int``/``float``/``complex`` and their subclasses
    (not NumPy scalars)."""
    return type(x) in _PYTHON_SCALAR_TYPES or python_scalar_type(x) is not None


def python_scalar_dtype(x: Any) -> np.dtype:
    """The canonical dtype of a Python scalar: bool, int64/int32, float64/float32,
    complex128/complex64 (64-bit only with x64)."""
    t = python_scalar_type(x)
    if t is bool:
        return np.dtype(np.bool_)
    if t is not None:
        return weak_default_dtype(t)
    raise TypeError(f"python_scalar_dtype: {x!r} of type {type(x).__name__} is not a Python scalar")


def weak_type_of_value(x: Any) -> bool:
    """Whether a value is weakly typed.

    Python ``int``/``float``/``complex`` are weak; Python ``bool`` is not (as in
    JAX). NumPy arrays and scalars are strong. Other objects (refimpl arrays,
    tracers) report their own ``weak_type`` attribute.
    """
    t = type(x)
    if t is int or t is float or t is complex:
        return True
    if t is bool or isinstance(x, (np.ndarray, np.generic)):
        return False
    if python_scalar_type(x) in (int, float, complex):  # an IntEnum member, ...
        return True
    return bool(getattr(x, "weak_type", False))


_DEFAULTS_X32: dict[Any, np.dtype] = {
    "b": np.dtype(np.bool_),
    "i": np.dtype(np.int32),
    "u": np.dtype(np.uint32),
    "f": np.dtype(np.float32),
    "c": np.dtype(np.complex64),
}
_DEFAULTS_X64: dict[Any, np.dtype] = {
    "b": np.dtype(np.bool_),
    "i": np.dtype(np.int64),
    "u": np.dtype(np.uint64),
    "f": np.dtype(np.float64),
    "c": np.dtype(np.complex128),
}
_KIND_ALIASES: dict[Any, str] = {bool: "b", int: "i", float: "f", complex: "c"}
_KIND_ALIASES.update({k: k for k in "biufc"})


def weak_default_dtype(kind: Any) -> np.dtype:
    """Default (canonical) dtype of a kind, given as a Python type (``bool``, ``int``,
    ``float``, ``complex``) or a NumPy kind letter (``"b"``, ``"i"``, ``"u"``,
    ``"f"``, ``"c"``): int32/uint32/float32/complex64, or the 64-bit ones with x64.
    """
    try:
        letter = _KIND_ALIASES[kind]
    except (KeyError, TypeError):
        raise ValueError(f"weak_default_dtype: unknown kind {kind!r}") from None
    return (_DEFAULTS_X64 if config.enable_x64 else _DEFAULTS_X32)[letter]


def dtype_to_weak_python_kind(dtype: np.dtype) -> type:
    """The Python scalar type whose weak node a weakly typed value of ``dtype``
    occupies: ``bool`` for bool, ``int`` for (unsigned) integers, ``float`` for
    floats including bfloat16, ``complex`` for complex."""
    if is_bool(dtype):
        return bool
    if is_integer(dtype):
        return int
    if is_floating(dtype):
        return float
    if is_complex(dtype):
        return complex
    raise TypeError(f"dtype {dtype!r} is not supported by refimpl")


# --------------------------------------------------------------------------
# The promotion lattice. Nodes are short names; "i*", "f*", "c*" are weak.

_WEAK_NODES = {int: "i*", float: "f*", complex: "c*"}

_EDGES_X64: dict[str, tuple[str, ...]] = {
    "bool": ("i*",),
    "i*": ("u8", "i8", "u4", "i4"),
    "u4": (),  # the 4-bit integers are maximal: no implicit widening
    "i4": (),
    "u8": ("u16", "i16"),
    "u16": ("u32", "i32"),
    "u32": ("u64", "i64"),
    "u64": ("f*",),
    "i8": ("i16",),
    "i16": ("i32",),
    "i32": ("i64",),
    "i64": ("f*",),
    "f*": ("bf16", "f16", "c*", *(_SHORT_NAMES[d] for d in FLOAT8_DTYPES)),
    # the float8s are maximal: no implicit widening (JAX 0.10.2)
    **{_SHORT_NAMES[d]: () for d in FLOAT8_DTYPES},
    "bf16": ("f32",),
    "f16": ("f32",),
    "f32": ("f64", "c64"),
    "f64": ("c128",),
    "c*": ("c64",),
    "c64": ("c128",),
    "c128": (),
}
# Without x64 no 64-bit type may be formed from 32-bit inputs: u32 x i32 -> i32.
_EDGES_X32 = {**_EDGES_X64, "u32": ("u64", "i32")}


def _upper_bounds(edges: dict[str, tuple[str, ...]]) -> dict[str, frozenset[str]]:
    """Reflexive-transitive closure: node -> every node at or above it."""
    out: dict[str, frozenset[str]] = {}

    def visit(node: str) -> frozenset[str]:
        if node not in out:
            above = {node}
            for parent in edges[node]:
                above |= visit(parent)
            out[node] = frozenset(above)
        return out[node]

    for node in edges:
        visit(node)
    return out


_UB = {False: _upper_bounds(_EDGES_X32), True: _upper_bounds(_EDGES_X64)}


# jax_numpy_dtype_promotion="strict": no two strong types join; a weak value
# takes any type of its kind or a higher one (i* -> f* -> c*), bool none.
_STRICT_EDGES: dict[str, tuple[str, ...]] = {name: () for name in _SHORT_NAMES.values()}
_STRICT_EDGES.update(
    {
        "i*": ("f*", *(n for d, n in _SHORT_NAMES.items() if d.kind in "iu" or d in INT4_DTYPES)),
        "f*": ("c*", *(n for d, n in _SHORT_NAMES.items() if is_floating(d))),
        "c*": tuple(n for d, n in _SHORT_NAMES.items() if d.kind == "c"),
    }
)
_UB_STRICT = _upper_bounds(_STRICT_EDGES)


def strict_promotion() -> bool:
    """Whether ``jax_numpy_dtype_promotion`` is "strict" now (in this thread)."""
    return numpy_promotion()[1] == "strict"


@functools.lru_cache(maxsize=1024)
def _join(nodes: tuple[str, ...], x64: bool, strict: bool = False) -> str:
    """Least upper bound of lattice nodes (distinct, in the operands' order)."""
    ub = _UB_STRICT if strict else _UB[x64]
    common = frozenset.intersection(*(ub[n] for n in nodes))
    least = [c for c in common if common <= ub[c]]
    if len(least) != 1:
        raise TypePromotionError(_no_join_message(nodes, strict))
    return least[0]


def _no_join_message(nodes: tuple[str, ...], strict: bool) -> str:
    if strict:  # JAX 0.10.2's words, weak nodes named by their Python type
        names = tuple(
            str(_WEAK_TYPES[n]) if n in _WEAK_TYPES else _BY_SHORT_NAME[n].name for n in nodes
        )
        return (
            f"Input dtypes {names} have no available implicit dtype promotion path when "
            "jax_numpy_dtype_promotion=strict. Try explicitly casting inputs to the desired "
            "output type, or set jax_numpy_dtype_promotion=standard."
        )
    if any(_BY_SHORT_NAME.get(n) in FLOAT8_DTYPES for n in nodes):  # JAX 0.10.2's words
        names = tuple(
            _BY_SHORT_NAME[n].name if n in _BY_SHORT_NAME else _NODE_NAMES[n] for n in nodes
        )
        return (
            f"Input dtypes {names} have no available implicit dtype promotion path. To avoid "
            "unintended promotion, 8-bit floats do not support implicit promotion. If you'd "
            "like your inputs to be promoted to another type, you can do so explicitly using "
            "e.g. x.astype('float32')"
        )
    # standard: only the 4-bit integers and the float8s, which sit outside the rest, lack a join
    listed = ", ".join(sorted(repr(_NODE_NAMES.get(n) or _BY_SHORT_NAME[n].name) for n in nodes))
    return (
        f"Input dtypes ({listed}) have no available implicit dtype promotion path: "
        "4-bit integers (int4, uint4) promote only with themselves, bool and weakly "
        "typed ints; convert explicitly (e.g. x.astype('int32')) to mix them"
    )


_WEAK_TYPES: dict[str, type] = {node: kind for kind, node in _WEAK_NODES.items()}
_NODE_NAMES = {"i*": "int", "f*": "float", "c*": "complex"}


def _node(dtype: np.dtype, weak: bool) -> str:
    """Lattice node of a (canonical) dtype; weak non-bool values sit at the weak node."""
    if weak and not is_bool(dtype):
        return _WEAK_NODES[dtype_to_weak_python_kind(dtype)]
    return _SHORT_NAMES[dtype]


def _node_dtype(node: str) -> np.dtype:
    """The canonical dtype of a node; weak nodes give their kind's default dtype."""
    if node.endswith("*"):
        return weak_default_dtype(node[0])
    return canonicalize_dtype(_BY_SHORT_NAME[node])


def _operand(op: Any) -> tuple[np.dtype, bool]:
    """Normalize one operand to a canonical ``(dtype, weak_type)`` pair.

    Accepted: ``(dtype, weak)`` pairs; the Python types ``int``/``float``/
    ``complex`` (weak, like in ``jnp.result_type``); Python scalars; objects
    with ``.dtype`` (their ``weak_type`` attribute, if any, is used); anything
    ``np.dtype`` accepts (strong).
    """
    if type(op) is tuple and len(op) == 2:
        return canonicalize_dtype(op[0]), bool(op[1])
    if op is int or op is float or op is complex:
        return weak_default_dtype(op), True
    if is_python_scalar(op):
        return python_scalar_dtype(op), weak_type_of_value(op)
    dt = getattr(op, "dtype", None)
    if isinstance(dt, np.dtype):
        return canonicalize_dtype(dt), weak_type_of_value(op)
    return canonicalize_dtype(op), False


def result_type(*operands: Any) -> tuple[np.dtype, bool]:
    """Dtype and weak type of the result of an n-ary operation, as JAX's
    binary operators promote (``jnp.add(x, y)``'s ``.dtype``/``.weak_type``).

    Operands are ``(dtype, weak_type)`` pairs (see :func:`_operand` for the
    other accepted forms). Rules, in order:

    - one operand: itself; several equal dtypes, not all weak: that dtype, strong;
    - all weak: the join of their dtypes taken as strong nodes, weak
      (weak ``uint8`` + weak ``uint8`` stays weak ``uint8``);
    - otherwise the join of their nodes (weak operands at ``i*``/``f*``/``c*``);
      weak iff it lands on a weak node, whose kind's default dtype it takes.

    ``bool`` results are never weak. The result is canonical.
    """
    if not operands:
        raise ValueError("result_type: at least one operand is required")
    if all(type(op) is tuple for op in operands):
        # the common case on the tracing hot path: memoize the lattice walk
        return _result_type_of_pairs(operands, config.enable_x64, strict_promotion())
    return _result_type(operands)


@functools.lru_cache(maxsize=4096)
def _result_type_of_pairs(
    pairs: tuple[tuple[Any, bool], ...], x64: bool, strict: bool
) -> tuple[np.dtype, bool]:
    del x64, strict  # part of the cache key only: _result_type reads the flags
    return _result_type(pairs)


def _result_type(operands: tuple[Any, ...]) -> tuple[np.dtype, bool]:
    pairs = [_operand(op) for op in operands]
    dtypes = {d for d, _ in pairs}
    all_weak = all(w for _, w in pairs)
    strict = strict_promotion()
    if len(pairs) == 1:
        dtype, weak = pairs[0]
    elif len(dtypes) == 1 and not all_weak:
        dtype, weak = pairs[0][0], False
    elif all_weak and not strict:  # (strict joins weak values at their weak nodes)
        node = _join(_distinct(_SHORT_NAMES[d] for d in dtypes), config.enable_x64)
        dtype, weak = _node_dtype(node), True
    else:
        node = _join(_distinct(_node(d, w) for d, w in pairs), config.enable_x64, strict)
        dtype, weak = _node_dtype(node), node.endswith("*")
    return dtype, weak and not is_bool(dtype)


def _distinct(nodes: Any) -> tuple[str, ...]:
    """The distinct nodes, first occurrences in order (a cache key, and the
    order an error names them in)."""
    return tuple(dict.fromkeys(nodes))


def jnp_result_type(*operands: Any) -> tuple[np.dtype, bool]:
    """Like :func:`result_type`, but as ``jnp.result_type(...,
    return_weak_type_flag=True)`` reports it: a weak result always takes the
    default dtype of its kind (a lone weak ``uint8`` gives weak ``uint32``,
    weak ``bfloat16`` gives weak ``float32``). Identical to :func:`result_type`
    whenever every weak operand has its kind's default dtype."""
    dtype, weak = result_type(*operands)
    if weak:
        kind = "i" if dtype == int4 else "u" if dtype == uint4 else dtype.kind
        dtype = weak_default_dtype("f" if is_floating(dtype) else kind)
    return dtype, weak


def promote_types(a: Any, b: Any) -> np.dtype:
    """The canonical dtype two strongly typed operands promote to.

    ``a`` and ``b`` are dtype specifications; the Python types ``int``,
    ``float``, ``complex`` stand for weak operands, as in ``jnp.promote_types``.
    Unlike ``jnp.promote_types`` the inputs are canonicalized first and the
    result is canonical (so without x64 ``uint64, int64 -> int32``, where
    ``jnp.promote_types`` answers ``float64``).
    """
    return result_type(a, b)[0]


def _is_python_scalar_type(x: Any) -> bool:
    # by identity: np.dtype("float64") == float holds, and it is no weak node
    return x is int or x is float or x is complex


def promote_types_uncanonical(a: Any, b: Any) -> np.dtype:
    """``jnp.promote_types``: the join of two dtypes on the lattice, nothing
    canonicalized (so without x64 ``int64, uint64 -> float64``; ``uint32,
    int32`` still joins at ``int32`` there, the x32 lattice's edge). The
    Python types ``int``, ``float``, ``complex`` sit at their weak nodes; a
    weak join is its kind's 64-bit dtype."""
    nodes = _distinct(
        _WEAK_NODES[x] if _is_python_scalar_type(x) else _SHORT_NAMES[_to_supported_dtype(x)]
        for x in (a, b)
    )
    node = _join(nodes, config.enable_x64, strict_promotion())
    if node.endswith("*"):
        return np.dtype({"i": np.int64, "f": np.float64, "c": np.complex128}[node[0]])
    return np.dtype(_BY_SHORT_NAME[node])


# --------------------------------------------------------------------------
# Special values


def wrap_int4(value: int, dtype: np.dtype) -> int:
    """A Python int reduced modulo 16 into ``int4``'s or ``uint4``'s range."""
    low = -8 if dtype == int4 else 0
    return (value - low) % 16 + low


def _has_inf(dtype: np.dtype) -> bool:
    """JAX 0.10.2's ``supports_inf``: false for the float8s whose largest
    finite value stands in for infinity in the max/min identities
    (e4m3b11fnuz, e4m3fn, e4m3fnuz, e5m2fnuz)."""
    return dtype not in (float8_e4m3b11fnuz, float8_e4m3fn, float8_e4m3fnuz, float8_e5m2fnuz)


def min_value(dtype: Any) -> Any:
    """The identity of ``max`` reductions: ``-inf`` for inexact dtypes (the
    lowest finite value for a float without infinities), the minimum for
    integers, ``False`` for bool. A NumPy scalar of ``dtype``."""
    dt = np.dtype(dtype)
    if is_inexact(dt):
        lowest = -np.inf if _has_inf(dt) else finfo(dt).min  # type: ignore[no-untyped-call]
        return np.array(lowest, dt)[()]
    if is_integer(dt):
        return dt.type(iinfo(dt).min)
    return np.bool_(False)


def max_value(dtype: Any) -> Any:
    """The identity of ``min`` reductions: ``+inf`` for inexact dtypes (the
    largest finite value for a float without infinities), the maximum for
    integers, ``True`` for bool. A NumPy scalar of ``dtype``."""
    dt = np.dtype(dtype)
    if is_inexact(dt):
        highest = np.inf if _has_inf(dt) else finfo(dt).max  # type: ignore[no-untyped-call]
        return np.array(highest, dt)[()]
    if is_integer(dt):
        return dt.type(iinfo(dt).max)
    return np.bool_(True)


def zero(dtype: Any) -> Any:
    """``0`` as a NumPy scalar of ``dtype`` (``False`` for bool)."""
    return np.dtype(dtype).type(0)


def one(dtype: Any) -> Any:
    """``1`` as a NumPy scalar of ``dtype`` (``True`` for bool)."""
    return np.dtype(dtype).type(1)
