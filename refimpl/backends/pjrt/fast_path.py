"""The PJRT fast path, Python half: the C++ array's protocol and the miss callback.

``jit(f, backend="pjrt")`` returns a ``refimpl._pjrt.FastJitted`` (see
``bindings/fast_jit.h``). Its ``__call__`` flattens the arguments, computes
the call signature and looks it up in a C++ cache; a hit runs the compiled
executable without any Python code. Everything else comes here:

* :func:`on_miss` runs once per new C++ signature. It asks refimpl's own
  :class:`~refimpl.transforms.jit.Jitted` for the cache entry (so tracing,
  the signature, explain_cache_misses and the trace count are exactly the
  reference ``jit``'s), lowers and compiles it for the call's device through
  ``refimpl.backends.pjrt.backend``, and describes the entry to C++ (:func:`entry_spec`).
* Calls the C++ side does not handle (a trace in progress, argument types it
  does not know, deleted arrays, errors to report) go to that same Jitted,
  which gives the reference behaviour and messages.

The C++ signature is never coarser than the Python one, and may be finer
(NumPy vs PJRT inputs, devices): a finer miss costs one :func:`on_miss`,
where the Python cache hits without tracing. So trace counts (``trace_count``,
``_cache_size()``, forwarded to the Jitted) equal the reference backend's.

This module also completes the C++ array type ``refimpl._pjrt.PjrtArray``:
the operators and methods of :class:`refimpl.array_ops.ArrayOps` (each first
checking that the array is not deleted), Python conversions, and the
registrations with ``tracing`` and ``eager``.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from refimpl import dtypes, tracing, tree_util
from refimpl.array_ops import ArrayOps
from refimpl.backends.pjrt.runtime import native_module
from refimpl.backends.ref import eager
from refimpl.backends.ref.arrays import Array
from refimpl.config import config
from refimpl.core import ShapedArray
from refimpl.transforms import donation

__all__ = ["PjrtArray", "install", "make_fast_jitted", "on_miss"]

_pjrt = native_module()
PjrtArray = _pjrt.PjrtArray


# --- the array type ----------------------------------------------------------------------


def _checks_deletion(method: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap an operator so a deleted array raises its own error first."""

    @functools.wraps(method)
    def checked(self: Any, *args: Any, **kwargs: Any) -> Any:
        self._check_live()
        return method(self, *args, **kwargs)

    return checked


def _bool(self: Any) -> bool:
    return bool(self._value())


def _int(self: Any) -> int:
    return int(self._value())


def _float(self: Any) -> float:
    return float(self._value())


def _complex(self: Any) -> complex:
    return complex(self._value())


def _index(self: Any) -> int:
    if not dtypes.is_integer(self.dtype) or self.ndim != 0:
        raise TypeError("only integer scalar arrays can be converted to a scalar index")
    return int(self._value())


def _item(self: Any) -> Any:
    return self._value().item()


def _tolist(self: Any) -> Any:
    return self._value().tolist()


def _len(self: Any) -> int:
    if self.ndim == 0:
        raise TypeError("len() of unsized object")
    return self.shape[0]


def _iter(self: Any) -> Any:
    self._check_live()
    if self.ndim == 0:
        raise TypeError("iteration over a 0-d array")
    return (self[i] for i in range(self.shape[0]))


def _str(self: Any) -> str:
    return str(self._value())


def _format(self: Any, spec: str) -> str:
    if self.ndim == 0:
        return format(self._value().item(), spec)
    return format(str(self), spec)


_CONVERSIONS: dict[str, Callable[..., Any]] = {
    "__bool__": _bool,
    "__int__": _int,
    "__float__": _float,
    "__complex__": _complex,
    "__index__": _index,
    "item": _item,
    "tolist": _tolist,
    "__len__": _len,
    "__iter__": _iter,
    "__str__": _str,
    "__format__": _format,
}


def _complete_array_type() -> None:
    """Give the C++ array the rest of the SPEC protocol (defined once, in Python)."""
    own = vars(PjrtArray)
    for name, member in vars(ArrayOps).items():
        if name in own and name not in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"):
            continue
        if isinstance(member, property):
            setattr(PjrtArray, name, property(_checks_deletion(member.fget)))
        elif callable(member):
            setattr(PjrtArray, name, _checks_deletion(member))
    for name, function in _CONVERSIONS.items():
        setattr(PjrtArray, name, function)
    PjrtArray.__hash__ = None  # arrays are unhashable, like NumPy's and JAX's


def _aval_of_array(array: Any) -> ShapedArray:
    array._check_live()  # the deleted-array error
    return array.aval


def _eager_dispatch(*args: Any) -> list[Any]:
    from refimpl.backends.pjrt import backend as pjrt

    return pjrt.eager_dispatch(*args)


_installed = False
_install_lock = threading.Lock()


def install() -> None:
    """Hand the C++ side the Python state it reads, and complete the array type (once)."""
    global _installed
    if _installed:
        return
    with _install_lock:
        if _installed:
            return
        _pjrt._install_fast_path(
            registry=tree_util._registry,
            builders=tracing._builders,
            config_values=config._values,
            ref_array_type=Array,
            aval_factory=ShapedArray,
        )
        _complete_array_type()
        tracing.register_array_type(PjrtArray, _aval_of_array, PjrtArray._value)
        eager.register_eager_dispatcher(PjrtArray, _eager_dispatch)
        _installed = True


install()


# --- the fast callable -----------------------------------------------------------------


def make_fast_jitted(fun: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """``jit(fun, **kwargs)`` on PJRT: a C++ FastJitted in front of a refimpl Jitted.

    With ``backend=None`` the callable follows ``config.backend``: it runs here
    while that is ``"pjrt"`` and hands every call to the Jitted otherwise.
    """
    from refimpl.transforms.jit import Jitted

    jitted = Jitted(fun, **kwargs)  # checks the arguments; misses and slow calls go here
    spec = jitted.spec
    fast = _pjrt.FastJitted(
        jitted,
        on_miss,
        tuple(spec.static_nums),
        tuple(spec.static_names),
        tuple(spec.donate_nums),
        tuple(spec.donate_names),
        kwargs.get("backend") is None,
    )
    for attribute in ("__name__", "__qualname__", "__module__", "__doc__"):
        value = getattr(fun, attribute, None)
        if value is not None:
            setattr(fast, attribute, value)
    fast.__name__ = jitted.__name__
    fast.__wrapped__ = fun
    return fast


# Tracing uses one process-wide trace stack, so two threads must not trace at
# once; misses are rare, so one lock for every fast function is enough.
_miss_lock = threading.RLock()


def on_miss(fast: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...] | None:
    """A call whose C++ signature is new: the entry for C++ to cache, or None.

    None sends this signature's calls to the Python Jitted (arguments the C++
    path cannot pass as they are, e.g. an uncommitted array on another
    device). Errors (tracing, compiling, a repeated donated array) propagate
    before anything runs.
    """
    from refimpl.backends.pjrt import backend as pjrt

    jitted = fast._jitted
    name = jitted.__name__
    with _miss_lock:
        call = jitted._split_args(args, kwargs)
        signature = call.signature
        if signature.backend != "pjrt":
            return None
        if any(signature.donated):
            donation.check_no_repeated_donation(call.leaves, signature.donated, call.paths, name)
        entry = jitted._lookup(call)  # traces only if the Python cache misses too
        if entry.donation.unusable and not entry.donation_warned:
            entry.donation_warned = True  # once per entry, as the reference
            donation.warn_unusable(entry.donation, name)
        device, committed = placement(call.leaves, call.paths, f"jit({name})")
        if any(isinstance(leaf, PjrtArray) and leaf.device != device for leaf in call.leaves):
            return None  # the Python path copies it over
        executable = pjrt._executables(entry, name).for_device(device)
        return entry_spec(entry, signature, executable, device, committed)


def placement(leaves: list[Any], paths: list[str], where: str) -> tuple[Any, bool]:
    """(device, committed) of a call on PJRT: the rule of ``refimpl.backends.ref.arrays.placement``.

    Committed PJRT arrays fix the device (two different ones are a
    ``ValueError``); otherwise the default device, uncommitted.
    """
    from refimpl.backends.pjrt import backend as pjrt

    first: tuple[str, Any] | None = None
    for path, leaf in zip(paths, leaves, strict=True):
        if not (isinstance(leaf, PjrtArray) and leaf.committed):
            continue
        if first is None:
            first = (path, leaf)
        elif leaf.device != first[1].device:
            raise ValueError(
                f"Received incompatible devices for {where}: argument {first[0]} "
                f"{first[1].aval.str_short()} is committed to {first[1].device} and argument "
                f"{path} {leaf.aval.str_short()} is committed to {leaf.device}. Move one of "
                "them with device_put(x, device)."
            )
    if first is not None:
        return first[1].device, True
    return pjrt.default_device(), False


def entry_spec(
    entry: Any, signature: Any, executable: Any, device: Any, committed: bool
) -> tuple[Any, ...]:
    """What C++ keeps for one signature (read by ``FillEntry`` in bindings/fast_jit.cc):

    ``(executable, device index, committed, in_avals, donated, aliases,
    out_avals, out_tree)`` with ``in_avals`` a ``(dtype, shape)`` per input
    leaf, ``aliases`` per input leaf the output it is aliased to (or -1),
    ``out_avals`` a ``(dtype, shape, weak_type)`` per output and ``out_tree``
    the output structure as a preorder list of nodes.
    """
    aliases = entry.donation.aliases
    n = len(signature.avals)
    return (
        executable,
        device.index,
        committed,
        tuple((aval.dtype, aval.shape) for aval in signature.avals),
        tuple(entry.donation.donated),
        tuple(aliases.get(i, -1) for i in range(n)),
        tuple((aval.dtype, aval.shape, aval.weak_type) for aval in entry.program.out_avals),
        tuple(_out_tree_nodes(entry.out_tree)),
    )


# Output node kinds, as bindings/fast_jit.cc numbers them (OutKind).
_LEAF, _TUPLE, _LIST, _DICT, _NONE, _NODE = range(6)


def _out_tree_nodes(treedef: tree_util.PyTreeDef, nodes: list | None = None) -> list:
    """The structure as (kind, arity, data, unflatten) nodes in preorder.

    Tuples, lists, dicts and None are rebuilt in C++; other nodes
    (namedtuples, registered types) by their ``unflatten(data, children)``.
    """
    nodes = [] if nodes is None else nodes
    node = treedef.node_data()
    if node is None:
        nodes.append((_LEAF, 0, None, None))
        return nodes
    node_type, data = node
    children = treedef.children()
    if node_type is tuple:
        nodes.append((_TUPLE, len(children), None, None))
    elif node_type is list:
        nodes.append((_LIST, len(children), None, None))
    elif node_type is dict:
        nodes.append((_DICT, len(children), tuple(data), None))
    elif node_type is type(None):
        nodes.append((_NONE, 0, None, None))
    else:
        kind = tree_util._kind_of(node_type)
        nodes.append((_NODE, len(children), data, kind.unflatten))
    for child in children:
        _out_tree_nodes(child, nodes)
    return nodes
