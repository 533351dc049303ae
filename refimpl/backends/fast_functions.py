"""Eager ``refimpl.numpy`` / ``refimpl.lax`` calls on device arrays, as cached jits.

:func:`fast_eager` wraps a public function. Called outside any trace with at
least one argument of a registered device-array type (the PJRT array; the
reference backend registers none, so it is unchanged), the call becomes one
``jit`` of the function per *static key*:

* the device arrays (top-level positional or keyword arguments) are the
  dynamic arguments of the jit;
* every other argument is static and part of the key: ``None``, ``bool``,
  ``int``, ``str``, dtypes, NumPy scalars, Python floats and complexes (keyed
  by ``repr``, so ``0.0``/``-0.0`` and NaNs key correctly), and tuples/lists
  of these. Any other argument (NumPy or reference arrays, tracers, callables,
  arrays nested in lists, ...) means the normal path.

A repeated call is then a hit of the backend's C++ signature cache: no
promotion, no ``Primitive.bind``, no abstract evaluation in Python. The
results are those of the normal path because the jit traces the same
function; where tracing cannot give them, the call takes the normal path,
and that static key always does afterwards:

* the function fails while tracing (a bad argument, or a value it needs
  concretely): the normal path raises its own error (or succeeds eagerly);
* an output is not an array computed in the trace (a Python ``int`` from
  ``ndim``, a shape tuple, or an input returned as it is, as ``asarray(x)``
  returns ``x`` itself).
* the function warns while tracing (``astype`` of complex to real): the
  jit's hits would not run its Python body again, so would not warn where
  the eager call warns every time, as JAX's does.

A backend without jits (the reference backend) registers an *eager memo*
instead (:func:`register_eager_memo`): for the functions of
``_MEMO_MODULES``, called outside any trace with positional arguments that
are its arrays and Python numbers (at least one array), the first call per
key runs the normal path while the backend records what it applied; when
that was one primitive on the arguments (and constants), later calls with the
same key replay it (see ``refimpl/backends/ref/eager.py``). The key holds the
arrays' shapes, dtypes and weak types, which of them are the same object,
the numbers by type and bits, and the config flags the result depends on
(``enable_x64``, ``backend``).
"""

from __future__ import annotations

import copy
import functools
import struct
import warnings
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from refimpl import pytree, tracing
from refimpl.config import config
from refimpl.traceback_util import api_boundary

_stack = tracing._stack  # the per-thread trace stack: read directly, once per call

__all__ = ["fast_eager", "register", "register_eager_memo", "wrap_module"]

# device-array type -> jit factory: make_jit(fun) -> a callable jit of fun
_factories: dict[type, Callable[[Callable[..., Any]], Any]] = {}
_ARRAY = object()  # marks a dynamic argument's place in a key
_SLOW = object()  # cache value: this static key takes the normal path
# Per function. Static values can vary without bound (``multiply(x, i)`` in a
# loop over ``i``): past this many keys a new key takes the normal path rather
# than compiling again, so a loop costs at most this many compiles.
_MAX_KEYS = 64
_SCALARS = (type(None), bool, int, str, np.dtype)
# Numbers are keyed by their bits: repr merges the NaNs (``x * -nan`` after
# ``x * nan`` would replay the positive NaN). bindings/fast_eager.cc builds the
# same key for exact floats and complexes.
_BITS_KEYED = (float, complex, np.generic)


def _bits(value: float | complex | np.generic) -> bytes:
    if isinstance(value, np.generic):
        return value.tobytes()
    if isinstance(value, complex):
        return struct.pack("dd", value.real, value.imag)
    return struct.pack("d", value)


# The eager memo (see the module docstring): the backend's array type and its
# record(function, args) -> (result, entry | _SLOW | None) and
# replay(entry, args) -> result | _SLOW; None until a backend registers one.
_memo_type: type | None = None
_memo_record: Callable[..., Any] = None  # type: ignore[assignment]
_memo_replay: Callable[..., Any] = None  # type: ignore[assignment]
# Whose functions the memo serves: they promote their operands and apply
# primitives, and never read an operand's values on the host (a function that
# did could apply one primitive to a constant made from them, which a replay
# would reuse). Any other function always takes the normal path.
_MEMO_MODULES = frozenset({"refimpl.numpy._ufuncs", "refimpl.primitives.elementwise"})
# Per function. Numbers are keyed by value, so a loop over ``x * i`` makes a
# key per ``i``: at this many keys the memo starts over (a record costs little
# more than the normal path, and the keys in use come back at once).
_MEMO_MAX_KEYS = 256
_config_values = config._values
_float_bits = struct.Struct("<d").pack
_complex_bits = struct.Struct("<dd").pack


class _NotFast(Exception):
    """Raised inside the trace when the outputs cannot come from a jit."""


# (namespace, name, Python wrapper) of every function wrap_module wrapped
_wrapped: list[tuple[dict[str, Any], str, Callable[..., Any]]] = []
# A backend's native entry: make_native(wrapper) -> a C-level callable with the
# wrapper's hit path (see install_native_entry); None until one is installed.
_make_native: Callable[[Callable[..., Any]], Any] | None = None


def register(array_type: type, make_jit: Callable[[Callable[..., Any]], Any]) -> None:
    """Route eager calls with ``array_type`` arguments through ``make_jit``."""
    _factories[array_type] = make_jit


def install_native_entry(make_native: Callable[[Callable[..., Any]], Any]) -> None:
    """Replace every exported wrapper by ``make_native(wrapper)``: a callable
    (the PJRT backend's C++ ``EagerFunction``) that serves the wrapper's cache
    hits itself and hands every other call to the wrapper.

    Done once the backend is loaded, because the ref backend must import
    without the native extension. A name rebound since (``namespace[name]`` no
    longer the wrapper) is left alone; a reference taken before keeps working
    through the Python wrapper. The native callable carries the wrapper's
    ``__name__``, ``__doc__``, ``__wrapped__`` (the plain function) and
    ``_fast_cache``.
    """
    global _make_native
    _make_native = make_native
    for namespace, name, wrapper in _wrapped:
        if namespace.get(name) is wrapper:
            namespace[name] = _native(wrapper)


def register_eager_memo(
    array_type: type, record: Callable[..., Any], replay: Callable[..., Any]
) -> None:
    """Serve eager calls on ``array_type`` arrays from a memo of recorded
    applications (the reference backend; see the module docstring)."""
    global _memo_type, _memo_record, _memo_replay
    _memo_record, _memo_replay = record, replay
    _memo_type = array_type


def _memo_key(args: tuple, array_type: type) -> list | None:
    """The memo key of positional ``args`` (see the module docstring), or None
    when they are not all arrays of ``array_type`` and Python numbers."""
    key = [_config_values["enable_x64"], _config_values["backend"]]
    arrays = 0
    for value in args:
        kind = type(value)
        if kind is array_type:
            aval = value.aval
            key.append(aval.shape)
            key.append(aval.dtype)
            key.append(aval.weak_type)
            arrays += 1
        elif kind is int or kind is bool:
            key.append((kind, value))
        elif kind is float:
            # by bits: -0.0 and 0.0, and NaNs of either sign, key apart and each
            # equal to itself (repr would merge the NaNs)
            key.append((kind, _float_bits(value)))
        elif kind is complex:
            key.append((kind, _complex_bits(value.real, value.imag)))
        else:
            return None
    if arrays == 0:
        return None
    if arrays > 1:  # which arguments are the same array (``x * x``): a replay reads by position
        ids = [id(value) for value in args]
        key.append(tuple(ids.index(i) for i in ids))
    return key


def _native(wrapper: Callable[..., Any]) -> Any:
    assert _make_native is not None
    native = _make_native(wrapper)
    for attribute in ("__module__", "__name__", "__qualname__", "__doc__"):
        setattr(native, attribute, getattr(wrapper, attribute, None))
    for attribute, value in vars(wrapper).items():  # __wrapped__ (the plain function), _fast_cache
        setattr(native, attribute, value)
    return native


def _static_key(value: Any) -> Any:
    """A hashable key for a static argument, or ``_SLOW`` when it cannot be one."""
    kind = type(value)
    if kind in _SCALARS or isinstance(value, type):
        return (kind, value)
    if isinstance(value, _BITS_KEYED):
        return (kind, _bits(value))
    if kind is tuple or kind is list:
        parts = tuple(_static_key(v) for v in value)
        return _SLOW if _SLOW in parts else (kind, parts)
    return _SLOW


def fast_eager(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function``, with eager calls on registered device arrays as cached jits."""
    cache: dict[Any, Any] = {}
    memo: dict[Any, Any] | None = {} if function.__module__ in _MEMO_MODULES else None

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        # The hit paths below are the whole per-call cost: keep them lean.
        if _stack.traces:
            return function(*args, **kwargs)
        if memo is not None and _memo_type is not None and not kwargs:
            parts = _memo_key(args, _memo_type)
            if parts is not None:
                memo_key = tuple(parts)
                entry = memo.get(memo_key)
                if entry is not None:
                    if entry is not _SLOW:
                        out = _memo_replay(entry, args)
                        if out is not _SLOW:
                            return out
                    return function(*args, **kwargs)
                out, entry = _memo_record(function, args)
                if entry is not None:  # (None: not known yet, record again next time)
                    if len(memo) >= _MEMO_MAX_KEYS:
                        memo.clear()
                    memo[memo_key] = entry
                return out
        if not _factories:
            return function(*args, **kwargs)
        factories = _factories
        make_jit = None
        dynamic = []
        key: Any = []  # a list while built, then the tuple the cache is keyed by
        for value in args:
            kind = type(value)
            factory = factories.get(kind)
            if factory is not None:
                make_jit = factory
                dynamic.append(value)
                key.append(_ARRAY)
            elif kind in _SCALARS:
                key.append((kind, value))
            else:
                part = _static_key(value)
                if part is _SLOW:
                    return function(*args, **kwargs)
                key.append(part)
        if kwargs:
            for name, value in kwargs.items():
                kind = type(value)
                factory = factories.get(kind)
                if factory is not None:
                    make_jit = factory
                    dynamic.append(value)
                    key.append((name, _ARRAY))
                elif kind in _SCALARS:
                    key.append((name, (kind, value)))
                else:
                    part = _static_key(value)
                    if part is _SLOW:
                        return function(*args, **kwargs)
                    key.append((name, part))
        if make_jit is None:
            return function(*args, **kwargs)
        key.append(make_jit)
        key = tuple(key)
        entry = cache.get(key)
        if entry is _SLOW:
            return function(*args, **kwargs)
        if entry is None:
            if len(cache) >= _MAX_KEYS:
                return function(*args, **kwargs)
            specialized = _specialize(function, args, kwargs)
            entry = cache[key] = (make_jit(specialized), specialized)
        try:
            return entry[0](*dynamic)
        except Exception:
            # The normal path gives the eager result or raises its own error
            # (a deleted input, ...); if tracing failed or gave non-array
            # outputs, this key takes that path from now on.
            if cast(Any, entry[1]).failed:  # a function attribute (set by _specialize)
                cache[key] = _SLOW
            return function(*args, **kwargs)

    # function attributes, which mypy does not model
    cast(Any, wrapper)._fast_cache = cache  # tests read the jits and their counters
    cast(Any, wrapper)._eager_memo = memo  # tests read the recorded entries and their hit counters
    return wrapper


def _specialize(function: Callable[..., Any], args: tuple, kwargs: dict) -> Callable[..., Any]:
    """``function`` of its device-array arguments alone, the rest fixed
    (copied: a list the caller mutates later must not change a retrace)."""
    is_array = [type(v) in _factories for v in args]
    names = [n for n, v in kwargs.items() if type(v) in _factories]
    static_args = [None if a else copy.deepcopy(v) for a, v in zip(is_array, args, strict=True)]
    static_kwargs = {n: copy.deepcopy(v) for n, v in kwargs.items() if n not in names}

    def specialized(*operands: Any) -> Any:
        it = iter(operands)
        call_args = [next(it) if a else v for a, v in zip(is_array, static_args, strict=True)]
        call_kwargs = dict(static_kwargs, **{n: next(it) for n in names})
        try:
            # A warning would fire at this trace only, where the eager call warns
            # every time (as JAX's): such a key takes the normal path, which warns
            # itself, so the trace's warnings are held back, not shown twice.
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                out = function(*call_args, **call_kwargs)
            if caught:
                raise _NotFast(function.__name__)
            for leaf in pytree.tree_leaves(out):
                if not isinstance(leaf, tracing.Tracer) or any(leaf is o for o in operands):
                    raise _NotFast(function.__name__)
        except Exception:
            cast(Any, specialized).failed = True  # a function attribute
            raise
        return out

    cast(Any, specialized).failed = False
    specialized.__name__ = function.__name__
    specialized.__qualname__ = function.__qualname__
    return specialized


def wrap_module(namespace: dict[str, Any], names: list[str]) -> None:
    """Replace each plain function among ``names`` in ``namespace`` by its
    :func:`fast_eager` wrapper (the one place the public functions get it);
    one marked ``_places_by_its_argument`` behind :func:`_unless_committed`."""
    for name in names:
        value = namespace.get(name)
        if type(value) is type(wrap_module) and not hasattr(value, "_fast_cache"):
            wrapper = fast_eager(value)
            if getattr(value, "_refimpl_api_boundary", False):
                # the boundary must sit above this wrapper, or its frame stays in
                # the tracebacks of the user's errors (traceback_util)
                plain = cast(Any, wrapper).__wrapped__  # set by functools.wraps
                wrapper = api_boundary(wrapper)
                cast(Any, wrapper).__wrapped__ = plain
            if getattr(value, "_places_by_its_argument", False):
                # install_native_entry replaces the wrapper in this slot
                slot = {"fast": wrapper if _make_native is None else _native(wrapper)}
                _wrapped.append((slot, "fast", wrapper))
                guarded = _unless_committed(value, slot)
                if getattr(value, "_refimpl_api_boundary", False):
                    guarded = api_boundary(guarded)
                    cast(Any, guarded).__wrapped__ = value
                namespace[name] = guarded
                continue
            _wrapped.append((namespace, name, wrapper))
            namespace[name] = wrapper if _make_native is None else _native(wrapper)


def _unless_committed(function: Callable[..., Any], slot: dict[str, Any]) -> Callable[..., Any]:
    """``function`` (``zeros_like``, ``lax.full_like``: placed where a committed
    argument says, JAX's rule) by its fast path ``slot["fast"]`` unless an
    argument is a committed array: the jit would see a tracer there and place
    the result by its own rule (the default device: the argument is unused)."""

    @functools.wraps(function)
    def unless_committed(*args: Any, **kwargs: Any) -> Any:
        for value in args:
            if getattr(value, "committed", False):
                return function(*args, **kwargs)
        for value in kwargs.values():
            if getattr(value, "committed", False):
                return function(*args, **kwargs)
        return slot["fast"](*args, **kwargs)

    cast(Any, unless_committed)._fast_cache = cast(Any, slot["fast"])._fast_cache
    return unless_committed
