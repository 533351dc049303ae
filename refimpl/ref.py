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
* **Crossing a loop or branch body**: a scan body or a cond branch that reads
  or writes a ref created outside it is traced once to find those refs, then
  again with their values threaded through as extra carries (scan) or
  operands and results (cond); afterwards the refs hold the final values.
* **Argument of a top-level jit**: each ``Ref`` leaf is its own signature
  type ``Ref{f32[3]}``; the traced program takes the held value and returns
  the final one as an extra output aliased to it (donation), so the
  reference backend writes into the ref's NumPy buffer and on pjrt the
  output *is* the input buffer: ``ref.unsafe_buffer_pointer()`` never
  changes across calls.

Errors, with JAX's words: returning a ref from ``jit``, ``scan`` or
``cond``; one ref passed twice to a jit, or passed and closed over; writing
a value batched by ``vmap`` into a ref created outside that ``vmap``; a
value whose dtype or shape differs from the ref's slot.
"""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from refimpl import tracing, tree_util
from refimpl.core import AbstractRef, ShapedArray
from refimpl.primitives.ref_ops import addupdate_p, encode_indexer, get_p, swap_p

__all__ = ["Ref", "addupdate", "empty_ref", "freeze", "get", "new_ref", "set", "swap"]


class _Scopes(threading.local):
    def __init__(self) -> None:
        self.stack: list[_Scope] = []


_scopes = _Scopes()
# Every Ref alive now. scan/cond/switch probe their bodies for ref accesses
# (an extra trace) only while some Ref is alive, so programs that never use
# refs, or run after their refs are gone, trace exactly as often as in JAX.
_live_refs: weakref.WeakSet = weakref.WeakSet()
# Refs made so far, and that count when the garbage was last collected for
# any_ref_made: a dead Ref caught in a reference cycle (an exception's
# traceback holding the frame that made it, a closure) stays in _live_refs
# until the cyclic collector runs, and would keep the probes on.
_made = [0, -1]


class _Scope:
    """A body being traced that refs from outside may not silently cross.

    ``depth`` is the level its builder takes; a ref made at a depth
    ``<= depth`` was made outside. ``kind`` is ``"jit"`` (crossing is an
    error) or ``"thread"`` (crossing is recorded in ``touched``).
    """

    def __init__(self, kind: str, depth: int, name: str) -> None:
        self.kind = kind
        self.depth = depth
        self.name = name
        self.touched: dict[int, Ref] = {}

    def record(self, ref: Ref) -> None:
        self.touched.setdefault(id(ref), ref)


class Ref:
    """A mutable reference to an array (``jax.Ref``): see the module docstring."""

    __slots__ = ("_value", "_depth", "__weakref__")

    def __init__(self, value: Any, depth: int) -> None:
        self._value = value
        self._depth = depth
        _live_refs.add(self)
        _made[0] += 1

    # -- the held array's type --

    @property
    def aval(self) -> AbstractRef:
        return AbstractRef(_aval_of_value(self._value))

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: self.aval.ndim)
    size = property(lambda self: self.aval.size)

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


def new_ref(init_val: Any) -> Ref:
    """A new ``Ref`` holding a copy of ``init_val`` (``jax.new_ref``).

    The held array is strongly typed (``new_ref(1.0)`` is ``Ref{f32[]}``,
    as JAX's). Writes to the ref never change ``init_val``.
    """
    import refimpl.numpy as rnp

    if isinstance(init_val, Ref):
        raise TypeError("new_ref: init_val is already a Ref; pass freeze(ref) or ref[...]")
    if isinstance(init_val, tracing.Tracer):
        value = rnp.asarray(init_val)
    else:  # a fresh buffer on the current backend's default device (or init_val's)
        from refimpl.backends.placement import device_put

        value = device_put(init_val, may_alias=False)
    aval = _aval_of_value(value)
    if aval.weak_type:
        value = rnp.asarray(value, dtype=aval.dtype)
        if _aval_of_value(value).weak_type:
            from refimpl.lax import convert_element_type

            value = convert_element_type(value, aval.dtype)
    return Ref(value, _depth_now())


def empty_ref(ty: Any) -> Ref:
    """A new ``Ref`` of ``ty``'s shape and dtype (``jax.empty_ref``); its
    contents are unspecified (here: zeros)."""
    import refimpl.numpy as rnp

    shape, dtype = getattr(ty, "shape", None), getattr(ty, "dtype", None)
    if shape is None or dtype is None:
        raise TypeError(f"empty_ref: ty must have .shape and .dtype, got {ty!r}")
    return new_ref(rnp.zeros(shape, dtype))


def _fresh_copy(value: Any) -> Any:
    """A concrete array equal to ``value`` whose buffer nobody else holds."""
    from refimpl.backends.ref.arrays import RefArray

    if isinstance(value, RefArray):
        buffer = np.array(value._value(), order="C", copy=True)
        return RefArray(buffer, False, value.device, value.committed)
    from refimpl.backends.placement import device_put

    return device_put(value, may_alias=False)


def freeze(ref: Ref) -> Any:
    """The array ``ref`` holds, as an immutable value (``jax.freeze``)."""
    _check_ref(ref, "freeze")
    _cross(ref)
    from refimpl.backends.ref.arrays import RefArray

    value = ref._value
    return _fresh_copy(value) if isinstance(value, RefArray) else value


def _check_ref(ref: Any, name: str) -> None:
    if not isinstance(ref, Ref):
        raise TypeError(f"{name}: expected a Ref, got {type(ref).__name__}")


# --- get / swap / addupdate ------------------------------------------------------------------


def _is_whole(idx: Any) -> bool:
    return idx is Ellipsis or idx == () or (isinstance(idx, tuple) and idx == (Ellipsis,))


def get(ref: Ref, idx: Any = ...) -> Any:
    """``ref[idx]``: the value at ``idx`` now."""
    from refimpl.backends.ref.arrays import RefArray

    _check_ref(ref, "get")
    _cross(ref)
    value = ref._value
    indexer = _traced_indexer(value, idx)
    if indexer is not None:
        return get_p.bind(value, indexer=indexer)
    out = value if _is_whole(idx) else value[idx]
    # Only the reference backend writes a ref's buffer in place: hand out a copy.
    return _fresh_copy(out) if out is value and isinstance(out, RefArray) else out


def swap(ref: Ref, idx: Any, value: Any) -> Any:
    """``ref[idx] = value``, returning the value at ``idx`` before the write.

    ``value`` must have exactly the shape of ``ref[idx]`` and the ref's dtype
    (a weakly typed value is converted to it), as JAX's ``swap``.
    """
    return _update(ref, idx, value, want_old=True)


def _update(ref: Ref, idx: Any, value: Any, want_old: bool) -> Any:
    _check_ref(ref, "swap")
    _cross(ref)
    old = get(ref, idx) if want_old else None
    new = _checked_value(ref, idx, value, "swap")
    _check_batched_write(ref, new)
    indexer = _traced_indexer(ref._value, idx)
    if indexer is not None:
        ref._value = swap_p.bind(ref._value, new, indexer=indexer)
    else:
        _write(ref, new if _is_whole(idx) else ref._value.at[idx].set(new))
    return old


def set(ref: Ref, idx: Any, value: Any) -> None:  # noqa: A001 (JAX's name)
    """``ref[idx] = value``."""
    _update(ref, idx, value, want_old=False)


def addupdate(ref: Ref, idx: Any, value: Any) -> None:
    """``ref[idx] += value`` as one update (no read of the old value by the caller)."""
    _check_ref(ref, "addupdate")
    _cross(ref)
    new = _checked_value(ref, idx, value, "addupdate")
    _check_batched_write(ref, new)
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
    import refimpl.numpy as rnp
    from refimpl.lax import convert_element_type

    aval = _aval_of_value(ref._value)
    value_aval = tracing.get_aval(value, name, "value")
    if value_aval.dtype != aval.dtype:
        if not value_aval.weak_type:
            raise ValueError(
                f"Invalid dtype for `{name}`. Ref dtype: {aval.dtype.name}. "
                f"Value dtype: {value_aval.dtype.name}."
            )
        value = convert_element_type(value, aval.dtype)
    expected = aval.shape if _is_whole(idx) else _indexed_shape(ref, idx)
    if expected is not None and tuple(value_aval.shape) != tuple(expected):
        raise ValueError(
            f"Invalid shape for `{name}`. Ref shape: {aval.shape}. Expected shape: "
            f"{tuple(expected)}. Value shape: {tuple(value_aval.shape)}."
        )
    if not isinstance(value, tracing.Tracer):
        value = rnp.asarray(value, dtype=aval.dtype)
    return value


def _indexed_shape(ref: Ref, idx: Any) -> tuple[int, ...] | None:
    """The shape of ``ref[idx]`` (None when it depends on traced indices)."""
    from refimpl import jit as _jit

    try:
        return tuple(_jit_eval_shape(_jit, ref, idx))
    except Exception:  # noqa: BLE001 - the write itself reports a bad index
        return None


def _jit_eval_shape(_jit: Any, ref: Ref, idx: Any) -> tuple[int, ...]:
    from refimpl.transforms.jit import ShapeDtypeStruct, eval_shape

    aval = _aval_of_value(ref._value)
    leaves, tree = tree_util.tree_flatten(idx)
    if any(isinstance(leaf, tracing.Tracer) for leaf in leaves):
        raise TypeError("traced index")
    struct = ShapeDtypeStruct(aval.shape, aval.dtype)
    return eval_shape(lambda x: x[idx], struct).shape


def _write(ref: Ref, new: Any) -> None:
    from refimpl.backends.ref.arrays import RefArray

    old = ref._value
    if isinstance(old, RefArray) and not isinstance(new, tracing.Tracer):
        # Eager on the reference backend: the ref's buffer is written in place.
        buffer = old._value()
        buffer.flags.writeable = True
        try:
            np.copyto(buffer, np.asarray(new))
        finally:
            buffer.flags.writeable = False
        return
    ref._value = new


def _check_batched_write(ref: Ref, value: Any) -> None:
    from refimpl.transforms.batching import BatchTrace

    top = tracing.find_top_trace([value])
    if isinstance(top, BatchTrace) and top.level >= ref._depth:
        raise Exception(  # noqa: TRY002 - JAX raises a bare Exception here
            "performing a set/swap operation with vmapped value on an unbatched array "
            f"reference of type {ref.aval.str_short()}. Move the array reference to be an "
            "argument to the vmapped function?"
        )


def _cross(ref: Ref) -> None:
    """Record (or refuse) an access to ``ref`` from inside bodies it was made outside."""
    for scope in _scopes.stack:
        if scope.depth >= ref._depth:
            if scope.kind == "jit":
                raise NotImplementedError(
                    f"jit({scope.name}): the function closes over the mutable array reference "
                    f"{ref.aval.str_short()} made outside it; pass the ref as an argument"
                )
            scope.record(ref)


# --- returning refs is an error ---------------------------------------------------------------


def check_no_refs(out: Any, what: str) -> None:
    """JAX's error for a ref among a traced function's outputs."""
    paths = tree_util.tree_flatten_with_path(out)[0]
    for path, leaf in paths:
        if isinstance(leaf, Ref):
            raise ValueError(
                f"function traced for {what} returned a mutable array reference of type "
                f"{leaf.aval.str_short()} at output tree path result{path}, but mutable "
                "array references cannot be returned."
            )


# --- jit with ref arguments -------------------------------------------------------------------


def check_jit_refs(leaves: Sequence[Any], paths: Sequence[str], fun: Any, name: str) -> None:
    """JAX's errors for one ref passed twice, or passed and closed over."""
    seen: dict[int, str] = {}
    for leaf, path in zip(leaves, paths, strict=True):
        if isinstance(leaf, Ref):
            if id(leaf) in seen:
                raise ValueError(
                    "only one reference to a mutable array may be passed as an argument to a "
                    f"function, but when tracing {name} for jit the mutable array reference of "
                    f"type {leaf.aval.str_short()} appeared at both {seen[id(leaf)]} and {path}."
                )
            seen[id(leaf)] = path
    for cell_value in _closed_over(fun):
        if isinstance(cell_value, Ref) and id(cell_value) in seen:
            raise ValueError(
                f"when tracing {name} for jit, a mutable array reference of type "
                f"{cell_value.aval.str_short()} was both closed over and passed as the "
                f"argument {seen[id(cell_value)]}"
            )


def closes_over_any(fun: Any, ids: set[int]) -> bool:
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
        elif isinstance(value, (list, tuple, dict)):
            if any(id(leaf) in ids for leaf in tree_util.tree_leaves(value)):
                return True
    return False


def _closed_over(fun: Any) -> list[Any]:
    fun = getattr(fun, "__wrapped__", fun)
    cells = getattr(fun, "__closure__", None) or ()
    found = []
    for cell in cells:
        try:
            found.extend(tree_util.tree_leaves(cell.cell_contents))
        except (ValueError, TypeError):
            continue
    return found


@contextmanager
def jit_arguments(refs: Sequence[Ref], tracers: Sequence[Any], name: str):
    """Inside a jit trace: ``refs`` (the caller's Ref arguments) hold ``tracers``.

    The caller's values are restored afterwards; the body may not touch refs
    made outside the jit (the "jit" scope).
    """
    depth = _depth_now() - 1  # the jit's builder is already pushed
    saved = [(r._value, r._depth) for r in refs]
    for r, t in zip(refs, tracers, strict=True):
        r._value, r._depth = t, depth + 1
    _scopes.stack.append(_Scope("jit", depth, name))
    try:
        yield
    finally:
        _scopes.stack.pop()
        for r, (value, d) in zip(refs, saved, strict=True):
            r._value, r._depth = value, d


# --- scan and cond bodies touching outer refs ------------------------------------------------


@contextmanager
def _threaded(refs: Sequence[Ref], depth: int):
    saved = [(r._value, r._depth) for r in refs]
    for r in refs:
        r._depth = depth + 1
    try:
        yield
    finally:
        for r, (_, d) in zip(refs, saved, strict=True):
            r._depth = d


def scan_with_refs(run_scan: Callable[[Callable, Any], Any], f: Callable, init: Any) -> Any:
    """``run_scan(f, init)`` when ``f`` may touch refs made outside the scan.

    The body is traced once to find those refs; if there are any, their
    values (restored) are carried through a second scan as extra carries and
    the refs take the final ones.
    """
    check_no_refs(init, "scan")

    snapshot = _Snapshot()

    def checked(carry: Any, x: Any) -> Any:
        out = f(carry, x)
        check_no_refs(out, "scan")
        return out

    def probing(carry: Any, x: Any) -> Any:
        snapshot.restore()  # a second trace of the body must not see the first's writes
        return checked(carry, x)

    touched = _probe_with(snapshot, lambda: run_scan(probing, init))
    if not touched:
        return run_scan(checked, init)
    depth = _depth_now()

    def threaded(carry: Any, x: Any) -> Any:
        inner, values = carry
        for r, v in zip(touched, values, strict=True):
            r._value = v
        new_carry, y = checked(inner, x)
        return (new_carry, [r._value for r in touched]), y

    with _threaded(touched, depth):
        (carry, values), ys = run_scan(threaded, (init, [r._value for r in touched]))
    snapshot.restore()
    for r, v in zip(touched, values, strict=True):
        r._value = v
    return carry, ys


def switch_with_refs(
    run_switch: Callable[[Sequence[Callable], tuple], Any], branches: Sequence[Callable], ops: tuple
) -> Any:
    """``run_switch(branches, operands)`` when a branch may touch refs made outside."""

    snapshot = _Snapshot()

    def checking(branch: Callable) -> Callable:
        def checked(*args: Any) -> Any:
            snapshot.restore()  # each branch starts from the values before the cond
            out = branch(*args)
            check_no_refs(out, "cond")
            return out

        return checked

    for op in tree_util.tree_leaves(ops):
        if isinstance(op, Ref):
            raise ValueError(
                "cond: a mutable array reference cannot be passed as an operand; close over it"
            )
    touched = _probe_with(snapshot, lambda: run_switch([checking(b) for b in branches], ops))
    if not touched:
        return run_switch([checking(b) for b in branches], ops)
    depth = _depth_now()

    def threading(branch: Callable) -> Callable:
        def threaded(*args: Any) -> Any:
            *inner, values = args
            for r, v in zip(touched, values, strict=True):
                r._value = v
            out = checking(branch)(*inner)
            return out, [r._value for r in touched]

        return threaded

    with _threaded(touched, depth):
        out, values = run_switch(
            [threading(b) for b in branches], (*ops, [r._value for r in touched])
        )
    snapshot.restore()
    for r, v in zip(touched, values, strict=True):
        r._value = v
    return out


class _Snapshot:
    """The values of refs at their first touch, to undo a probing trace's writes."""

    def __init__(self) -> None:
        self.values: dict[int, tuple[Ref, Any]] = {}

    def restore(self) -> None:
        for ref, value in self.values.values():
            ref._value = value


def _probe_with(snapshot: _Snapshot, run: Callable[[], Any]) -> list[Ref]:
    """The refs made outside that the bodies of ``run()`` touch.

    ``run()`` is only traced, inside a throwaway staging trace: the loop is
    not executed (unthreaded, a while loop reading a ref could never end),
    and the refs' values are restored afterwards.
    """
    scope = _SnapshotScope(snapshot, _depth_now())
    _scopes.stack.append(scope)
    try:
        with tracing.new_trace("ref probe"):
            run()
    finally:
        _scopes.stack.remove(scope)
        snapshot.restore()
    return list(scope.touched.values())


class _SnapshotScope(_Scope):
    def __init__(self, snapshot: _Snapshot, depth: int) -> None:
        super().__init__("thread", depth, "body")
        self.snapshot = snapshot

    def record(self, ref: Ref) -> None:
        self.touched.setdefault(id(ref), ref)
        self.snapshot.values.setdefault(id(ref), (ref, ref._value))


def any_ref_made() -> bool:
    """Is some Ref alive (so a control-flow body may touch one)?

    Collects cyclic garbage once per batch of new refs, so that only refs
    really alive count (see ``_made``)."""
    if not _live_refs:
        return False
    if _made[1] != _made[0]:
        _made[1] = _made[0]
        gc.collect()
    return len(_live_refs) > 0


def _aval_handler(ref: Ref) -> AbstractRef:
    return ref.aval


def _no_numpy(ref: Ref) -> np.ndarray:
    raise TypeError(
        f"a mutable array reference {ref.aval.str_short()} is not an array value; "
        "read it with ref[...] or freeze(ref)"
    )


tracing.register_array_type(Ref, _aval_handler, _no_numpy)
