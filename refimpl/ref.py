"""Mutable array references (``ri.new_ref``, ``ri.Ref``, ``ri.freeze``), as ``jax.new_ref``.

A :class:`Ref` is a box holding one array. ``ref[idx]`` reads (``get``),
``ref[idx] = v`` writes (``swap``, which returns the old value through
:func:`swap`), ``ref[idx] += v`` is a read then a write, :func:`addupdate`
adds in place. Writes take effect in program order.

Semantics by where the ref lives:

* **Eager** (outside every trace): the box holds a concrete array. On the
  reference backend a write copies the new value into the array's own NumPy
  buffer, so the buffer never moves.
* **Inside a transformation** (a ref created while tracing jit, grad, vmap,
  a scan body, ...): the box holds the current *value* (a tracer) and each
  write replaces it with ``value.at[idx].set(v)``: the state is threaded
  through the computation at trace time ("discharged" as it is traced), so a
  function that uses refs only internally is an ordinary pure function and
  every transformation applies to it.
* **Crossing a loop or branch body**: a scan body, a while loop's cond or
  body, a cond branch or a jitted function that reads or writes a ref
  created outside it is traced once, as in JAX: at its first touch the ref
  gets a *late input* of the body's trace (:func:`late_inputs`), so reads
  and writes inside are ordinary traced values; when the trace ends the
  construct threads the touched refs (read ones as extra consts or
  operands, written ones as extra carries, or operands and results) and
  the refs take the final values (``refimpl.primitives.control_flow`` has
  JAX's rules for a while cond that writes).
* **Argument of a vmap**: a Ref mapped over an axis holds its value batched
  along that axis inside the function and the stacked final values after
  (:func:`vmap_arguments`); unmapped refs may be read, not written.
* **Argument of a top-level jit**: each ``Ref`` leaf is its own signature
  type ``Ref{f32[3]}``; the traced program takes the held value and returns
  the final one as an extra output aliased to it (donation), so the
  reference backend writes into the ref's NumPy buffer and on pjrt the
  output *is* the input buffer: ``ref.unsafe_buffer_pointer()`` never
  changes across calls.
* **Closed over by a jit**: refs made outside that the function touches
  (late inputs of its one trace) become implicit Ref arguments after the
  explicit ones, updated in place the same way.

Errors, with JAX's words: returning a ref from ``jit``, ``scan``, ``cond``
or ``while_loop``; one ref passed twice to a jit or a vmap, or passed and
closed over; any write into a ref created outside an active ``vmap``; a
differentiated value written into a ref created outside the ``jvp``; a
value whose dtype or shape differs from the ref's slot.

Bodies that cannot thread refs refuse them (:func:`refuse_outer`), raising
before anything changes: ``pmap`` any access to a ref made outside its
function (and Ref arguments); ``linear_transpose``, ``invertible``,
``mask`` and ``scatter_apply`` a write (docs/semantics.md section 5).
"""

from __future__ import annotations

import builtins
import itertools
import threading
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from typing import Any, cast

import numpy as np

import refimpl.numpy as rnp
from refimpl import backends, pytree, traceback_util, tracing
from refimpl.core import AbstractRef, ShapedArray
from refimpl.lax import convert_element_type
from refimpl.primitives import ref_context
from refimpl.primitives.ref_ops import addupdate_p, encode_indexer, get_p, swap_p
from refimpl.random import PRNGKeyArray, key_data, wrap_key_data
from refimpl.transforms.ad import JVPTrace
from refimpl.transforms.batching import BatchTrace, BatchTracer, bdim_to
from refimpl.transforms.jit import ShapeDtypeStruct, eval_shape

__all__ = ["Ref", "addupdate", "empty_ref", "freeze", "get", "new_ref", "set", "swap"]


class _Scopes(threading.local):
    def __init__(self) -> None:
        self.stack: list[_Scope] = []


_scopes = _Scopes()
_serials = itertools.count()


class _Scope:
    """A body being traced whose accesses to refs made outside it are recorded.

    ``depth`` is the level its builder takes; a ref made at a depth
    ``<= depth`` was made outside. Each access to one is recorded in
    ``touched`` (by :func:`_cross`).
    """

    def __init__(self, kind: str, depth: int, name: str) -> None:
        self.kind = kind
        self.depth = depth
        self.name = name
        self.touched: dict[int, Ref] = {}

    def record(self, ref: Ref, write: bool = False) -> None:
        del write
        self.touched.setdefault(id(ref), ref)


class Ref:
    """A mutable reference to an array (``jax.Ref``): see the module docstring."""

    __slots__ = (
        "_value",
        "_depth",
        "_serial",
        "_memory_space",
        "_kind",
        "_freed_at",
        "_keys",
        "_site",
        "__weakref__",
    )

    def __init__(self, value: Any, depth: int, memory_space: Any = None, kind: Any = None) -> None:
        self._value = value
        self._depth = depth
        self._memory_space, self._kind = memory_space, kind
        # creation order: tells a ref made before a body from one made in it when
        # both are values of the same trace (a pmap run inline in a pjrt pmap's body)
        self._serial = next(_serials)
        # the trace depth at which free_ref freed it inside the jit that made it
        self._freed_at: int | None = None
        # holds the uint32 data of typed PRNG keys: reads wrap it, writes take keys
        self._keys = False
        # where a ref made inside a trace was made (named if it is returned)
        self._site: str | None = None

    # -- the held array's type --

    @property
    def aval(self) -> AbstractRef:
        return AbstractRef(_aval_of_value(self._value), self._memory_space, self._kind)

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: self.aval.ndim)
    size = property(lambda self: self.aval.size)

    @property
    def sharding(self) -> Any:
        """The held array's sharding (JAX's ``Ref.sharding``; a concrete ref's)."""
        return self._value.sharding

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def unsafe_buffer_pointer(self) -> int:
        """The address of the held array's buffer (concrete refs only)."""
        return self._value.unsafe_buffer_pointer()

    def __repr__(self) -> str:
        if isinstance(self._value, tracing.Tracer):
            return f"Ref<{self.aval.str_short()}>"
        text = repr(self._value)
        return "Ref" + text[text.index("(") :] if text.startswith("Array(") else f"Ref({text})"

    # -- access --

    def __getitem__(self, idx: Any) -> Any:
        return get(self, idx)

    def __setitem__(self, idx: Any, value: Any) -> None:
        _update(self, idx, value, want_old=False)

    def addupdate(self, x: Any, idx: Any = ()) -> None:
        """``ref[idx] += x`` as one update (JAX's method; ``idx=()``: the whole ref)."""
        addupdate(self, idx, x)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = np.asarray(get(self, ...))
        return out if dtype is None else out.astype(dtype)


def _aval_of_value(value: Any) -> ShapedArray:
    return tracing.get_aval(value, "Ref", "value")


def _depth_now() -> int:
    return len(tracing._stack.traces)


def _is_concrete(value: Any) -> bool:
    return not isinstance(value, tracing.Tracer)


# --- creation --------------------------------------------------------------------------------


def new_ref(init_val: Any, *, memory_space: Any = None, kind: Any = None) -> Ref:
    """A new ``Ref`` holding a copy of ``init_val`` (``jax.new_ref``).

    ``memory_space`` and ``kind`` (JAX's mutation semantics under
    rematerialization) are recorded in the ref's type and otherwise unused.

    The held array is strongly typed (``new_ref(1.0)`` is ``Ref{f32[]}``;
    JAX keeps a weak type there, see docs/semantics.md section 5). Writes
    to the ref never change ``init_val``.

    A ``Ref`` is a mutable box: ``ref[idx]`` reads, ``ref[idx] = v`` and
    ``ref[idx] += v`` write, in program order. Eagerly it holds a concrete
    array; made inside ``jit``, ``grad``, ``vmap`` or a loop body it holds
    a traced value, and the writes are threaded through the trace, so a
    function using refs only internally is a pure program that every
    transformation applies to. A function that writes a ref made outside it
    is supported by ``jit``, ``scan``, ``cond`` and the loops (the ref takes
    its final value after the call).

    Args:
        init_val: An array, NumPy array, Python scalar or tracer (not a
            ``Ref``).

    Returns:
        A new ``Ref`` of ``init_val``'s shape and (strong) dtype.

    Raises:
        TypeError: ``init_val`` is a ``Ref`` or not array-like.

    Example:
        >>> import refimpl as ri, refimpl.numpy as rnp
        >>> def f(x):
        ...     acc = ri.new_ref(rnp.zeros(()))
        ...     for i in range(3):
        ...         acc[...] += x * i
        ...     return ri.freeze(acc)
        >>> ri.jit(f)(2.0)
        Array(6., dtype=float32)
    """

    if isinstance(init_val, Ref):
        raise TypeError("new_ref: init_val is already a Ref; pass freeze(ref) or ref[...]")
    if isinstance(init_val, PRNGKeyArray):
        ref = new_ref(key_data(init_val), memory_space=memory_space, kind=kind)
        ref._keys = True
        return ref
    if isinstance(init_val, tracing.Tracer):
        value = rnp.asarray(init_val)
    else:  # a fresh buffer on the current backend's default device (or init_val's)
        value = backends.device_put(init_val, may_alias=False)
    aval = _aval_of_value(value)
    if aval.weak_type:
        value = rnp.asarray(value, dtype=aval.dtype)
        if _aval_of_value(value).weak_type:
            value = convert_element_type(value, aval.dtype)
    ref = Ref(value, _depth_now(), memory_space, kind)
    if isinstance(value, tracing.Tracer):
        ref._site = traceback_util.user_site()
    return ref


def free_ref(ref: Ref) -> tuple:
    """``jax.free_ref``: declares ``ref`` dead.

    As JAX 0.10.2: inside the ``jit`` (or other staged trace) that made the
    ref, any later ``get``/``swap``/``addupdate``/``freeze``/``free_ref`` of
    it in that trace is a ``ValueError`` (JAX's "`get` must be called on
    `Ref` types: ~float32[]"; its double free is an internal ``KeyError``).
    Anywhere else (eagerly, under ``grad``, a ref made outside the jit or
    loop body that frees it) the call only checks its argument, and a later
    read still sees the last value written, as JAX's. Nothing is released
    early: the ref's array is freed when the last reference to it goes
    away, as for any Python object.

    Args:
        ref: A ``Ref``.

    Returns:
        ``()``, as JAX's.

    Raises:
        TypeError: ``ref`` is not a ``Ref``.

    Example:
        >>> import numpy as np, refimpl as ri
        >>> r = ri.new_ref(np.zeros(2, np.float32))
        >>> ri.free_ref(r)
        ()
    """
    _check_ref(ref, "free_ref")
    depth = _depth_now()
    if ref._depth == depth and tracing.current_builder() is not None:
        ref._freed_at = depth
    return ()


def empty_ref(ty: Any) -> Ref:
    """A new ``Ref`` of ``ty``'s shape and dtype (``jax.empty_ref``).

    Its contents are unspecified: a program must write before it reads.
    refimpl fills it with zeros (JAX leaves the memory uninitialized under
    ``jit``), so a read before a write is not detected.

    Args:
        ty: Anything with ``.shape`` and ``.dtype``: a ``ShapeDtypeStruct``,
            an array, a ``ShapedArray``.

    Returns:
        A new ``Ref`` of that shape and dtype.

    Raises:
        TypeError: ``ty`` has no ``.shape`` or ``.dtype``.

    Example:
        >>> import numpy as np, refimpl as ri
        >>> r = ri.empty_ref(ri.ShapeDtypeStruct((2,), np.float32))
        >>> r[...] = np.array([1.0, 2.0], np.float32)
        >>> ri.freeze(r)
        Array([1., 2.], dtype=float32)
    """

    shape, dtype = getattr(ty, "shape", None), getattr(ty, "dtype", None)
    if shape is None or dtype is None:
        raise TypeError(f"empty_ref: ty must have .shape and .dtype, got {ty!r}")
    return new_ref(rnp.zeros(shape, dtype))


def _fresh_copy(value: Any) -> Any:
    """A concrete array equal to ``value`` whose buffer nobody else holds."""
    RefArray = backends.get("ref").RefArray
    if isinstance(value, RefArray):
        buffer = np.array(value._value(), order="C", copy=True)
        return RefArray(buffer, False, value.device, value.committed)
    return backends.device_put(value, may_alias=False)


def freeze(ref: Ref) -> Any:
    """The array ``ref`` holds, as an immutable value (``jax.freeze``).

    Eagerly the result is a copy, so later writes to ``ref`` do not change
    it; under a transformation it is the ref's current traced value. JAX
    documents ``freeze`` as invalidating the ref, but 0.10.2 enforces
    nothing; neither does refimpl: later reads and writes of ``ref`` work,
    so do not rely on them.

    Args:
        ref: A ``Ref``.

    Returns:
        An array of the ref's shape and dtype: its value now.

    Raises:
        TypeError: ``ref`` is not a ``Ref``.

    Example:
        >>> import numpy as np, refimpl as ri
        >>> r = ri.new_ref(np.zeros(2, np.float32))
        >>> v = ri.freeze(r)
        >>> r[0] = 1.0
        >>> v, ri.freeze(r)
        (Array([0., 0.], dtype=float32), Array([1., 0.], dtype=float32))
    """
    _check_ref(ref, "freeze")
    _cross(ref)

    value = ref._value
    # A concrete held array is written in place (reference backend) or donated
    # by the next jit taking the ref (pjrt): the caller gets its own copy.
    out = value if isinstance(value, tracing.Tracer) else _fresh_copy(value)
    return wrap_key_data(out) if ref._keys else out


def _check_ref(ref: Any, name: str) -> None:
    if not isinstance(ref, Ref):
        raise TypeError(f"{name}: expected a Ref, got {type(ref).__name__}")
    if ref._freed_at is not None and _depth_now() >= ref._freed_at:
        raise ValueError(
            f"`{name}` must be called on `Ref` types: ~{ref.aval.inner_aval.str_short()} "
            "(the Ref was freed by free_ref earlier in this jit)"
        )


# --- get / swap / addupdate ------------------------------------------------------------------


def _is_whole(idx: Any) -> bool:
    # (compared by structure: an index array must not be compared elementwise)
    return idx is Ellipsis or (
        isinstance(idx, tuple) and (len(idx) == 0 or (len(idx) == 1 and idx[0] is Ellipsis))
    )


class OutOfBoundsIndexError(IndexError, ValueError):
    """A static index outside a ref's shape: an ``IndexError`` (as a jitted
    access) that is also the ``ValueError`` JAX raises ("Out of bound indexer")."""


def _bounded_index(ref: Ref, idx: Any) -> Any:
    """``idx`` with its static integer entries checked or clamped, as JAX 0.10.2.

    Eagerly (no staging trace), concrete integer indices (ints, integer
    arrays) must lie in the ref's shape: an out-of-bounds write would otherwise
    be dropped silently. Under a staging trace (``jit``, a loop body) JAX's
    bounds check sees no concrete index, and a static int is clamped into its
    axis (after adding the size to a negative one), as ``dynamic_slice``; an
    integer array is gathered (clamped) or scattered (out-of-bounds entries
    dropped) by the update below.
    """
    entries = idx if isinstance(idx, tuple) else (idx,)
    shape = _aval_of_value(ref._value).shape
    used = sum(e is not None and e is not Ellipsis for e in entries)
    if used > len(shape):
        # ValueError as JAX 0.10.2's ref indexing (NumPy's getitem: IndexError)
        raise ValueError(
            f"Ref indexing: index {idx!r} has {used} entries, more than the ref's "
            f"{len(shape)} dimensions (shape {shape})"
        )
    if any(isinstance(e, tracing.Tracer) for e in entries):
        return idx
    staged = tracing.current_builder() is not None
    clamped = list(entries)
    for position, axis in _entry_axes(entries, len(shape)):
        entry, size = entries[position], shape[axis]
        if staged:
            if isinstance(entry, (int, np.integer)) and not isinstance(entry, (bool, np.bool_)):
                index = int(entry) + size if entry < 0 else int(entry)
                clamped[position] = min(max(index, 0), size - 1) if size else 0
            continue
        if isinstance(entry, (bool, np.bool_, slice)):
            continue
        integer = np.issubdtype(getattr(entry, "dtype", object), np.integer)
        if isinstance(entry, (int, np.integer)) or (
            integer and (isinstance(entry, np.ndarray) or np.ndim(entry) == 0)
        ):  # a concrete refimpl array: only a scalar one, the index JAX 0.10.2 checks
            values = np.asarray(entry)
            if values.size and (values.max() >= size or values.min() < -size):
                raise OutOfBoundsIndexError(
                    f"Out of bound indexer: index {entry!r} is out of bounds for axis "
                    f"{axis} of size {size} of the ref {ref.aval.str_short()}"
                )
    return tuple(clamped) if isinstance(idx, tuple) else clamped[0]


def _entry_axes(entries: tuple, ndim: int) -> list[tuple[int, int]]:
    """``(position in entries, axis of the ref)`` of every entry that indexes an axis."""
    if any(e is Ellipsis for e in entries):
        k = next(i for i, e in enumerate(entries) if e is Ellipsis)
        rest = sum(e is not None for e in entries[k + 1 :])
        axes = [*range(k), *range(ndim - rest, ndim)]
    else:
        axes = list(range(ndim))
    positions = [i for i, e in enumerate(entries) if e is not None and e is not Ellipsis]
    return list(zip(positions, axes, strict=False))


def get(ref: Ref, idx: Any = ...) -> Any:
    """``ref[idx]``: the value at ``idx`` now."""
    out = _get(ref, idx)
    return wrap_key_data(out) if ref._keys else out


def _get(ref: Ref, idx: Any) -> Any:
    _check_ref(ref, "get")
    _cross(ref)
    idx = _bounded_index(ref, idx)
    value = ref._value
    indexer = _traced_indexer(value, idx)
    if indexer is not None:
        if _is_concrete(value):
            # A body that captures the value (linear_transpose, invertible)
            # keeps it as a constant: not the buffer a later write updates in
            # place (a host copy on pjrt: a device copy would be traced here).
            is_host = isinstance(value, backends.get("ref").RefArray)
            value = _fresh_copy(value) if is_host else np.array(value)
        return get_p.bind(value, indexer=indexer)
    out = value if _is_whole(idx) else value[idx]
    # The held array is written in place (reference backend) or donated by the
    # next jit taking the ref (pjrt): hand out a copy.
    return _fresh_copy(out) if out is value and _is_concrete(out) else out


def swap(ref: Ref, idx: Any, value: Any) -> Any:
    """``ref[idx] = value``, returning the value at ``idx`` before the write.

    ``value`` must have exactly the shape of ``ref[idx]`` and the ref's dtype
    (a weakly typed value is converted to it), as JAX's ``swap``.
    """
    return _update(ref, idx, value, want_old=True)


def _update(ref: Ref, idx: Any, value: Any, want_old: bool) -> Any:
    _check_ref(ref, "swap")
    _cross(ref, write=True)
    idx = _bounded_index(ref, idx)
    old = get(ref, idx) if want_old else None
    new = _checked_value(ref, idx, value, "swap")
    _check_write(ref, new)
    indexer = _traced_indexer(ref._value, idx)
    if indexer is not None:
        ref._value = swap_p.bind(ref._value, new, indexer=indexer)
    elif _is_whole(idx):
        # The caller's own array is copied (the reference backend copies it
        # into the ref's buffer): on pjrt the next jit taking the ref updates
        # its held array in place, which must be the ref's alone.
        private = new is not value or isinstance(ref._value, backends.get("ref").RefArray)
        _write(ref, new if private else _fresh_copy(new))
    else:
        _write(ref, ref._value.at[idx].set(new))
    return old


def set(ref: Ref, idx: Any, value: Any) -> None:  # noqa: A001 (JAX's name)
    """``ref[idx] = value``."""
    _update(ref, idx, value, want_old=False)


def addupdate(ref: Ref, idx: Any, value: Any) -> None:
    """``ref[idx] += value`` as one update (no read of the old value by the caller)."""
    _check_ref(ref, "addupdate")
    _cross(ref, write=True)
    idx = _bounded_index(ref, idx)
    new = _checked_value(ref, idx, value, "addupdate")
    _check_write(ref, new)
    indexer = _traced_indexer(ref._value, idx)
    if indexer is not None:
        ref._value = addupdate_p.bind(ref._value, new, indexer=indexer)
    else:
        _write(ref, ref._value + new if _is_whole(idx) else ref._value.at[idx].add(new))


def _traced_indexer(value: Any, idx: Any) -> tuple | None:
    """The static indexer of the state primitives for an access to a traced
    ref value (None: eager, or an index they do not take, e.g. an array)."""
    if _is_concrete(value) and tracing.current_builder() is None:
        return None
    return encode_indexer(idx)


def _checked_value(ref: Ref, idx: Any, value: Any, name: str) -> Any:
    if ref._keys or isinstance(value, PRNGKeyArray):
        if not (ref._keys and isinstance(value, PRNGKeyArray)) or name != "swap":
            got = value.dtype if isinstance(value, PRNGKeyArray) else np.result_type(value)
            held = "key<fry>" if ref._keys else ref.dtype
            raise ValueError(f"Invalid dtype for `{name}`. Ref dtype: {held}. Value dtype: {got}.")
        value = key_data(value)
    aval = _aval_of_value(ref._value)
    value_aval = tracing.get_aval(value, name, "value")
    expected = aval.shape if _is_whole(idx) else _indexed_shape(ref, idx)
    if expected is not None and tuple(value_aval.shape) != tuple(expected):
        raise ValueError(
            f"Invalid shape for `{name}`. Ref shape: {aval.shape}. Expected shape: "
            f"{tuple(expected)}. Value shape: {tuple(value_aval.shape)}."
        )
    if value_aval.dtype != aval.dtype:
        if not (name == "swap" and _implicitly_cast(value_aval, aval.dtype)):
            raise ValueError(
                f"Invalid dtype for `{name}`. Ref dtype: {aval.dtype.name}. "
                f"Value dtype: {value_aval.dtype.name}."
            )
        value = convert_element_type(value, aval.dtype)
    elif value_aval.weak_type and isinstance(value, tracing.Tracer):
        value = convert_element_type(value, aval.dtype)  # a Ref's type is strong
    if not isinstance(value, tracing.Tracer):
        value = rnp.asarray(value, dtype=aval.dtype)
    return value


def _implicitly_cast(value_aval: ShapedArray, dtype: Any) -> bool:
    """Whether a write converts a value of another dtype to the ref's, as JAX
    0.10.2's ``ref_swap``: a weakly typed float into a float ref, and any
    integer (weak or not) into an integer ref; anything else (a weak int into
    a float ref, a float into an int ref, a strong float32 into a bfloat16
    ref) is the dtype error. ``addupdate`` converts nothing."""
    kinds = {_number_kind(np.dtype(dtype)), _number_kind(value_aval.dtype)}
    return kinds == {"int"} or (value_aval.weak_type and kinds == {"float"})


def _number_kind(dtype: np.dtype) -> str:
    # by name as well: ml_dtypes' float8/int4 types are not NumPy subtypes of floating/integer
    if dtype.kind == "f" or (dtype.kind == "V" and "float" in dtype.name):
        return "float"
    if dtype.kind in "iu" or (dtype.kind == "V" and dtype.name.startswith(("int", "uint"))):
        return "int"
    return dtype.name


def _indexed_shape(ref: Ref, idx: Any) -> tuple[int, ...] | None:
    """The shape of ``ref[idx]`` (None when it depends on traced indices)."""
    try:
        return tuple(_jit_eval_shape(ref, idx))
    except Exception:  # noqa: BLE001 - the write itself reports a bad index
        return None


def _jit_eval_shape(ref: Ref, idx: Any) -> tuple[int, ...]:
    aval = _aval_of_value(ref._value)
    leaves, tree = pytree.tree_flatten(idx)
    traced = [leaf for leaf in leaves if _is_tracer(leaf)]
    struct = ShapeDtypeStruct(aval.shape, aval.dtype)
    if not traced:
        return eval_shape(lambda x: x[idx], struct).shape

    # a traced index (a scan's step over a scanned ref) by its type: the
    # window's shape does not depend on its value
    def window(x: Any, *values: Any) -> Any:
        it = iter(values)
        return x[tree.unflatten([next(it) if _is_tracer(leaf) else leaf for leaf in leaves])]

    index_types = [ShapeDtypeStruct(t.aval.shape, t.aval.dtype) for t in traced]
    return eval_shape(window, struct, *index_types).shape


def _is_tracer(x: Any) -> bool:
    return isinstance(x, tracing.Tracer)


def _write(ref: Ref, new: Any) -> None:
    old = ref._value
    if isinstance(old, backends.get("ref").RefArray) and not isinstance(new, tracing.Tracer):
        # Eager on the reference backend: the ref's buffer is written in place.
        buffer = old._value()
        buffer.flags.writeable = True
        try:
            np.copyto(buffer, np.asarray(new))
        finally:
            buffer.flags.writeable = False
        return
    ref._value = new


def vmap_write_error(ref: Ref) -> Exception:
    """JAX's error for a write into a ref made outside an active vmap."""
    return Exception(  # JAX raises a bare Exception here
        "performing a set/swap operation with vmapped value on an unbatched array reference "
        f"of type {ref.aval.str_short()}. Move the array reference to be an argument to the "
        "vmapped function?"
    )


def _check_write(ref: Ref, value: Any, depth: int | None = None, upto: int | None = None) -> None:
    """JAX's errors for a write into a ref made outside a vmap or a jvp.

    Any write (batched value or not) into a ref made outside an active
    ``vmap`` is refused, as JAX 0.10.2 (the ref has no batch axis to hold a
    per-member value, and JAX does not tell the two apart); a value carrying
    a tangent of a jvp/grad the ref was made outside of is refused too (a
    write of a value that does not depend on the differentiated inputs is
    fine). ``depth`` is the ref's own depth when it is threaded through a
    loop or branch (whose write-back is checked here); ``upto`` the level
    of the vmap whose ref argument is written back (it does not count).
    """

    depth = ref._depth if depth is None else depth
    if any(isinstance(t, BatchTrace) for t in tracing._stack.traces[depth:upto]):
        raise vmap_write_error(ref)
    top = tracing.find_top_trace([value])
    if isinstance(top, JVPTrace) and top.level >= depth:
        raise Exception(  # noqa: TRY002 - JAX raises a bare Exception here
            "performing a set/swap operation with a differentiated value on a non-differentiated "
            f"array reference of type {ref.aval.str_short()}. Move the array reference to be an "
            "argument of the differentiated function?"
        )


def _cross(ref: Ref, write: bool = False) -> None:
    """Record an access to ``ref`` from inside bodies it was made outside."""
    for scope in _scopes.stack:
        if scope.depth >= ref._depth:
            scope.record(ref, write)


# --- returning refs is an error ---------------------------------------------------------------


def check_no_refs(
    out: Any, what: str, fun_name: str | None = None, arg_paths: dict[int, str] | None = None
) -> None:
    """JAX's error for a ref among a traced function's outputs; ``arg_paths``
    names the Ref arguments (by id) for JAX's note on where the ref came from."""
    paths = pytree.flatten_with_path_strings(out)[0]
    for path, leaf in paths:
        if isinstance(leaf, Ref):
            if arg_paths and id(leaf) in arg_paths:
                origin = f"passed in as the argument {arg_paths[id(leaf)]}"
            elif leaf._site is not None:
                origin = f"created on line {leaf._site}"
            else:
                origin = None
            raise ValueError(
                f"function {fun_name + ' ' if fun_name else ''}traced for {what} returned a "
                f"mutable array reference of type {leaf.aval.str_short()} at output tree path "
                f"result{path}, but mutable array references cannot be returned."
                + (f"\n\nThe returned mutable array was {origin}." if origin else "")
            )


# --- jit with ref arguments -------------------------------------------------------------------


def check_jit_refs(
    leaves: Sequence[Any], paths: Sequence[str], fun: Any, name: str, kind: str = "jit"
) -> None:
    """JAX's errors for one ref passed twice, or passed and closed over
    (``kind``: the construct tracing ``fun``, jit or cond)."""
    seen: dict[int, str] = {}
    for leaf, path in zip(leaves, paths, strict=True):
        if isinstance(leaf, Ref):
            if id(leaf) in seen:
                raise ValueError(
                    "only one reference to a mutable array may be passed as an argument to a "
                    f"function, but when tracing {name} for {kind} the mutable array reference of "
                    f"type {leaf.aval.str_short()} appeared at both {seen[id(leaf)]} and {path}."
                )
            seen[id(leaf)] = path
    for cell_value in _closed_over(fun):
        if isinstance(cell_value, Ref) and id(cell_value) in seen:
            raise ValueError(
                f"when tracing {name} for {kind}, a mutable array reference of type "
                f"{cell_value.aval.str_short()} was both closed over and passed as the "
                f"argument {seen[id(cell_value)]}"
            )


def closes_over_any(fun: Any, ids: builtins.set[int]) -> bool:
    """Whether ``fun``'s closure holds one of the refs whose ids are ``ids``
    (cells holding a ref, or a list, tuple or dict with one among its leaves)."""
    fun = getattr(fun, "__wrapped__", fun)
    for cell in getattr(fun, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if type(value) is Ref:
            if id(value) in ids:
                return True
        elif isinstance(value, (list, tuple, dict)) and any(
            id(leaf) in ids for leaf in pytree.tree_leaves(value)
        ):
            return True
    return False


def _closed_over(fun: Any) -> list[Any]:
    """The leaves of ``fun``'s closure cells, and the Refs among the globals
    its code names (a module-level ref used inside the function)."""
    fun = getattr(fun, "__wrapped__", fun)
    cells = getattr(fun, "__closure__", None) or ()
    found = []
    for cell in cells:
        try:
            found.extend(pytree.tree_leaves(cell.cell_contents))
        except (ValueError, TypeError):
            continue
    names = getattr(getattr(fun, "__code__", None), "co_names", ())
    module_globals = getattr(fun, "__globals__", None) or {}
    found.extend(v for v in (module_globals.get(n) for n in names) if type(v) is Ref)
    return found


@contextmanager
def jit_arguments(refs: Sequence[Ref], tracers: Sequence[Any], name: str):
    """Inside a jit trace: ``refs`` hold ``tracers``.

    ``refs`` are the caller's Ref arguments (the refs the function closes
    over are late inputs of the trace, :func:`late_inputs`); the caller's
    values are restored afterwards.
    """
    del name
    depth = _depth_now() - 1  # the jit's builder is already pushed
    saved = [(r._value, r._depth) for r in refs]
    for r, t in zip(refs, tracers, strict=True):
        r._value, r._depth = t, depth + 1
    try:
        yield
    finally:
        for r, (value, d) in zip(refs, saved, strict=True):
            r._value, r._depth = value, d


def check_not_closed_over(
    refs: Sequence[Ref], paths: Sequence[str], closed: Sequence[Ref], name: str
) -> None:
    """JAX's error for a Ref argument that the function also closes over
    (found by the trace of an earlier call)."""
    ids = {id(r) for r in closed}
    for r, path in zip(refs, paths, strict=True):
        if id(r) in ids:
            raise ValueError(
                f"when tracing {name} for jit, a mutable array reference of type "
                f"{r.aval.str_short()} was both closed over and passed as the argument {path}"
            )


# --- vmap with ref arguments -----------------------------------------------------------------


@contextmanager
def vmap_arguments(
    trace: Any, leaves: Sequence[Any], axes: Sequence[int | None], paths: Sequence[str], name: str
):
    """Inside ``vmap``: each Ref argument mapped over ``axes[i]`` holds its
    value batched along that axis (one member per slice); afterwards it holds
    the final values stacked back along the same axis.

    A ref argument with axis None stays unbatched (reads are broadcast, a
    write is JAX's error). Yields the mapped refs with their axes. One ref
    passed twice is JAX's ValueError.
    """

    seen: dict[int, str] = {}
    mapped: list[tuple[Ref, int]] = []
    for leaf, axis, path in zip(leaves, axes, paths, strict=True):
        if type(leaf) is not Ref:
            continue
        if id(leaf) in seen:
            raise ValueError(
                "only one reference to a mutable array may be passed as an argument to a "
                f"function, but when tracing {name} for vmap the mutable array reference of "
                f"type {leaf.aval.str_short()} appeared at both {seen[id(leaf)]} and {path}."
            )
        seen[id(leaf)] = path
        _cross(leaf)  # e.g. a ref closed over by an enclosing jit: an implicit argument
        if axis is not None:
            mapped.append((leaf, axis))
    saved = [(r._value, r._depth) for r, _ in mapped]
    inner = [BatchTracer(trace, r._value, axis) for r, axis in mapped]
    for (r, _), tracer in zip(mapped, inner, strict=True):
        r._value, r._depth = tracer, trace.level + 1
    finals: list[Any] = []
    try:
        yield mapped
        size = trace.frame.size
        for (r, axis), tracer in zip(mapped, inner, strict=True):
            if r._value is tracer:  # never written: the value stays as it was
                finals.append(None)
                continue
            value, dim = trace.unpack(r._value)
            finals.append(bdim_to(value, dim, size, axis))
    finally:
        for (r, _), (value, depth) in zip(mapped, saved, strict=True):
            r._value, r._depth = value, depth
    for (r, _), new in zip(mapped, finals, strict=True):
        if new is not None:
            _check_write(r, new, upto=trace.level)
    for (r, _), new in zip(mapped, finals, strict=True):
        if new is not None:
            _cross(r, write=True)
            _write(r, new)


# --- bodies touching refs made outside them: late inputs -------------------------------------


class _LateScope(_Scope):
    """The trace of one body (a jit, a scan body, a cond branch, a while
    function) in which each ref made outside the body gets, at its first
    touch, a fresh *late input* of the body's builder (appended after the
    explicit inputs) holding its value: reads and writes inside are then
    ordinary traced values. :meth:`finish` gives their final values; when
    the scope ends the refs hold their outer values again, and the
    construct threads them (extra operands, carries, outputs)."""

    def __init__(self, builder: tracing.Builder, origin: Callable[[int], str]) -> None:
        super().__init__("late", builder.level, builder.name)
        self.builder = builder
        self.origin = origin
        self.refs: list[Ref] = []  # in order of first touch
        self.saved: list[tuple[Any, int]] = []  # their outer (value, depth)
        self.inputs: list[Any] = []  # their late inputs (tracers of builder)
        self.written_flags: tuple[bool, ...] = ()  # which were written (by finish)

    def record(self, ref: Ref, write: bool = False) -> None:
        if id(ref) not in self.touched:
            aval = _aval_of_value(ref._value).strip_weak()
            tracer = self.builder.new_input(aval, self.origin(len(self.refs)))
            self.refs.append(ref)
            self.saved.append((ref._value, ref._depth))
            self.inputs.append(tracer)
            ref._value, ref._depth = tracer, self.depth + 1
        super().record(ref, write)

    def finish(self) -> list[Any]:
        """The touched refs' values now (call inside the body's trace), typed
        as their late inputs."""
        finals = []
        # Once touched, the ref looks made inside the body (no more records):
        # it was written if it no longer holds its late input.
        self.written_flags = tuple(r._value is not t for r, t in zip(self.refs, self.inputs))
        for ref, tracer in zip(self.refs, self.inputs, strict=True):
            value = ref._value
            if _aval_of_value(value) != tracer.aval:  # only a weak type can differ
                value = convert_element_type(value, tracer.aval.dtype)
            finals.append(value)
        return finals

    def restore(self) -> None:
        for ref, (value, depth) in zip(self.refs, self.saved, strict=True):
            ref._value, ref._depth = value, depth


@contextmanager
def late_inputs(origin: Callable[[int], str]):
    """Inside the trace of a body (its builder the current one): records the
    refs made outside that the body touches as late inputs (see
    :class:`_LateScope`); yields the scope. The refs hold their outer values
    again afterwards, also when the body raised."""
    builder = tracing.current_builder()
    assert builder is not None and builder is tracing._stack.traces[-1], "not in a body's trace"
    scope = _LateScope(builder, origin)
    _scopes.stack.append(scope)
    try:
        yield scope
    finally:
        _scopes.stack.remove(scope)
        scope.restore()


def current_body_threads_refs() -> bool:
    """Whether a write to a ref made outside the current trace can be kept:
    outside any builder (the write happens now), or in a builder whose body
    threads such refs (:func:`late_inputs`). A closed program traced for
    reuse (a transposed program) threads none."""
    builder = tracing.current_builder()
    if builder is None:
        return True
    return any(isinstance(s, _LateScope) and s.depth == builder.level for s in _scopes.stack)


class _RefusingScope(_Scope):
    """A body that may not write (or touch) refs made outside it (see :func:`refuse_outer`)."""

    def __init__(self, depth: int, message: str, reads: bool, error: Any) -> None:
        super().__init__("refuse", depth, "")
        self.message = message
        self.reads = reads
        self.error = error

    def record(self, ref: Ref, write: bool = False) -> None:
        if write or self.reads:
            if self.error is not None:
                raise self.error(ref)
            raise NotImplementedError(f"{self.message} (a Ref of type {ref.aval.str_short()})")


class _RefusingEarlierScope(_RefusingScope):
    """A body run inline in its enclosing trace (see :func:`refuse_earlier`):
    refs of that trace made before it are outside it, refs made since are its own."""

    def __init__(self, depth: int, message: str, serial: int) -> None:
        super().__init__(depth, message, True, None)
        self.serial = serial

    def record(self, ref: Ref, write: bool = False) -> None:
        if ref._serial < self.serial:
            super().record(ref, write)


@contextmanager
def refuse_earlier(message: str):
    """Like :func:`refuse_outer` with ``reads=True``, for a body that runs
    inline as part of the current trace (no trace of its own, so trace depth
    cannot tell its refs from the enclosing body's): any access to a ref made
    before the body started raises ``NotImplementedError(message)`` before it
    changes anything; refs the body makes itself are free."""
    with _pushed(_RefusingEarlierScope(_depth_now(), message, next(_serials))):
        yield


@contextmanager
def _pushed(scope: _Scope):
    """``scope`` on this thread's scope stack for the duration."""
    _scopes.stack.append(scope)
    try:
        yield
    finally:
        _scopes.stack.remove(scope)


@contextmanager
def refuse_outer(
    message: str,
    *,
    reads: bool = False,
    depth: int | None = None,
    error: Callable[[Ref], Exception] | None = None,
):
    """Inside the trace of a body (its builder the current one) that cannot
    thread refs: its first write to a ref made outside it raises
    ``NotImplementedError(message)``, before the write changes anything.
    (Reads need nothing: the body captures the ref's value in the
    enclosing context as any outer value.) ``reads=True`` refuses reads
    too, for a body whose trace is cached and run again later (a captured
    value would go stale). ``depth``: the level of the body's trace when it
    is not a builder's (a vmap-like trace, or the current depth for a
    function about to be run eagerly); default the current builder's.
    ``error(ref)``: the exception to raise instead of NotImplementedError."""
    if depth is None:
        builder = tracing.current_builder()
        assert builder is not None and builder is tracing._stack.traces[-1], "not in a body"
        depth = builder.level
    with _pushed(_RefusingScope(depth, message, reads, error)):
        yield


def outer_values(refs: Sequence[Ref], written: Sequence[bool]) -> list[Any]:
    """The values of ``refs`` for a construct whose body threads them (read
    now, in the enclosing context; ``written``: which the body writes).
    Enclosing bodies record the accesses, as for a direct access (a body
    whose trace was reused records nothing by itself)."""
    for r, w in zip(refs, written, strict=True):
        _check_ref(r, "threading")
        _cross(r, write=w)
    values = [r._value for r in refs]
    if tracing._stack.dynamic is not None or not _differentiating():
        return values
    # A concrete held array under eager differentiation (a ref made outside
    # a grad): a copy, since AD may keep the value as a residual while later
    # writes update the ref's array in place.
    return [v if isinstance(v, tracing.Tracer) else _fresh_copy(v) for v in values]


def _differentiating() -> bool:
    return any(isinstance(t, JVPTrace) for t in tracing._stack.traces)


def write_back(refs: Sequence[Ref], values: Sequence[Any]) -> None:
    """The written refs of a loop or branch take its final values; the
    writes are checked first (all of them), so a refused one changes nothing.
    Eagerly on the reference backend the values are copied into the refs'
    own buffers (which never move), as an eager write."""
    for r, v in zip(refs, values, strict=True):
        _check_write(r, v)
    for r, v in zip(refs, values, strict=True):
        _write(r, v)


def _aval_handler(ref: Ref) -> AbstractRef:
    return ref.aval


def _no_numpy(ref: Ref) -> np.ndarray:
    raise TypeError(
        f"a mutable array reference {ref.aval.str_short()} is not an array value; "
        "read it with ref[...] or freeze(ref)"
    )


# A Ref's aval is its AbstractRef (which has the shape, dtype and weak_type
# get_aval's callers read); tracing types its handlers for arrays' ShapedArrays
tracing.register_array_type(Ref, cast(Callable[[Any], ShapedArray], _aval_handler), _no_numpy)


# the transformations and the control-flow rules reach these through
# primitives.ref_context (this module sits above them)
ref_context.Ref = Ref
ref_context.check_jit_refs = check_jit_refs
ref_context.check_no_refs = check_no_refs
ref_context.check_not_closed_over = check_not_closed_over
ref_context.closes_over_any = closes_over_any
ref_context.current_body_threads_refs = current_body_threads_refs
ref_context.jit_arguments = jit_arguments
ref_context.late_inputs = late_inputs
ref_context.outer_values = outer_values
ref_context.refuse_earlier = refuse_earlier
ref_context.refuse_outer = refuse_outer
ref_context.vmap_arguments = vmap_arguments
ref_context.vmap_write_error = vmap_write_error
ref_context.write_back = write_back
