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
* A ``Ref`` argument holding a PJRT array is a leaf of its held array's
  type (the Python signature's ``Ref{aval}``). Its entry's program returns
  ``(result, [final ref values])``; on a hit C++ passes each ref's buffer
  aliased to its final value, makes the result from the first outputs and
  writes each final value back into its ref, with no Python code
  (:class:`EntrySpec` ``ref_outputs``; docs/semantics.md "Ref arguments on
  the fast path").

The C++ signature is never coarser than the Python one, and may be finer
(NumPy vs PJRT inputs, devices): a finer miss costs one :func:`on_miss`,
where the Python cache hits without tracing. So trace counts (``trace_count``,
``_cache_size()``, forwarded to the Jitted) equal the reference backend's.
"""

from __future__ import annotations

import functools
import threading
import types
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from refimpl import caches, pytree, test_events
from refimpl.array import placement_rule
from refimpl.backends.pjrt.arrays import PjrtArray
from refimpl.backends.pjrt.executables import default_device, has_host_callbacks
from refimpl.backends.pjrt.runtime import native_module
from refimpl.config import (
    UNSET,
    config,
    in_local_block,
    local_promotion,
    thread_matmul_precision,
)
from refimpl.ref import Ref
from refimpl.traceback_util import api_boundary
from refimpl.transforms import sharded
from refimpl.transforms.dce import placed_leaves
from refimpl.transforms.jit import (
    Jitted,
    check_call,
    copy_wrapped_attributes,
    jit_state,
    warn_unusable_once,
)

__all__ = ["make_fast_jitted", "on_miss"]

_pjrt = native_module()
_pjrt._install_ref_type(Ref)  # Ref arguments take the C++ path (read, alias, write back)


# --- the default matmul precision and the numpy promotion modes ------------------------

# The settings in effect are part of every jit signature (the products traced
# under a precision record it, as JAX's; jnp functions traced under a promotion
# mode may warn, raise or promote otherwise), so the C++ signatures carry them
# too, as a small key per combination (bindings/matmul_precision.h: the
# precision's "key" covers the promotion modes as well): a combination seen
# before finds its compiled entry again, as in JAX, instead of tracing anew.
# A thread in a block of any of the three has a key of its blocks' values only
# (a setting no block sets is "the flag's"); C++ pairs it with the flags' key,
# so a flag another thread changes is seen at once by a thread in a block.
_precision_keys: dict[Any, int] = {(None, "allow", "standard"): 0}


def _precision_key(settings: tuple[Any, str, str]) -> int:
    return _precision_keys.setdefault(settings, len(_precision_keys))


def _block_settings() -> tuple[Any, ...]:
    """This thread's blocks' settings (``"flag"`` where no block sets one)."""
    in_block, precision = thread_matmul_precision()
    promotion = [
        local_promotion(name) for name in ("numpy_rank_promotion", "numpy_dtype_promotion")
    ]
    shown = [v if v is not UNSET else "flag" for v in promotion]
    return ("block", precision if in_block else "flag", *shown)


def _sync_precision_keys(_value: Any = None) -> None:
    """Tell C++ the flags' key and this thread's blocks' (-1: none); called on
    every change of a flag or a block (config.observe), in the changing thread."""
    values = config._values
    flag = _precision_key(
        (
            values["default_matmul_precision"],
            values["numpy_rank_promotion"],
            values["numpy_dtype_promotion"],
        )
    )
    thread = _precision_key(_block_settings()) if in_local_block() else -1
    _pjrt.set_matmul_precision_keys(flag, thread)


for _flag in ("default_matmul_precision", "numpy_rank_promotion", "numpy_dtype_promotion"):
    config.observe(_flag, _sync_precision_keys)
_sync_precision_keys()


# --- the fast callable -----------------------------------------------------------------


def _bind_method(fast: Any, instance: Any, owner: type | None = None) -> Any:
    """As a class attribute, bind ``self`` like a function (``Jitted.__get__``),
    so ``@partial(jit, static_argnums=0, backend="pjrt")`` works on methods."""
    return fast if instance is None else types.MethodType(fast, instance)


def _repr(fast: Any) -> str:
    """The refimpl Jitted's repr (JAX 0.10.2's ``<PjitFunction of ...>``), so
    both backends print a jitted function alike (it replaces the C++ type's
    own ``<Jitted name>``)."""
    jitted = fast._jitted
    return repr(jitted) if jitted is not None else f"<PjitFunction of {fast.__name__}>"


_pjrt.FastJitted.__get__ = _bind_method
_pjrt.FastJitted.__repr__ = _repr
# the Jitted's state (JAX's jitted functions' function_name, fun, static arguments)
_pjrt.FastJitted.__getstate__ = lambda fast: jit_state(fast._jitted)


def make_fast_jitted(
    fun: Callable[..., Any],
    kwargs: dict[str, Any],
    compile_executable: Callable[[Any, str, Any, bool], Any],
) -> Any:
    """``jit(fun, **kwargs)`` on PJRT: a C++ FastJitted in front of a refimpl Jitted.

    ``compile_executable(entry, name, device, keep_unused)`` gives the
    executable of a Python cache entry on a device (the backend's compiler)
    and the input leaves it takes (None: all). With
    ``backend=None`` the callable follows ``config.backend``: it runs here
    while that is ``"pjrt"`` and hands every call to the Jitted otherwise.
    """
    jitted = Jitted(fun, **kwargs)  # checks the arguments; misses and slow calls go here
    spec = jitted.spec
    fast = _pjrt.FastJitted(
        jitted,
        # errors of a miss (tracing the user's function) reach the user filtered
        functools.partial(api_boundary(on_miss), compile_executable),
        tuple(spec.static_nums),
        tuple(spec.static_names),
        tuple(spec.donate_nums),
        tuple(spec.donate_names),
        kwargs.get("backend") is None,
    )
    copy_wrapped_attributes(fast, fun)
    fast.__name__ = jitted.__name__
    fast.__wrapped__ = fun
    caches.register_fast_jitted(fast)  # clear_caches and disable_jit reach its native cache
    return fast


# Tracing uses one process-wide trace stack, so two threads must not trace at
# once; misses are rare, so one lock for every fast function is enough.
_miss_lock = threading.RLock()


def on_miss(
    compile_executable: Callable[[Any, str, Any, bool], Any],
    fast: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> EntrySpec | None:
    """A call whose C++ signature is new: the entry for C++ to cache, or None.

    None sends this signature's calls to the Python Jitted (arguments the C++
    path cannot pass as they are, e.g. an uncommitted array on another
    device). Errors (tracing, compiling, a repeated donated array) propagate
    before anything runs.
    """
    test_events.record(test_events.PJRT_FAST_PATH_MISS)
    jitted = fast._jitted
    name = jitted.__name__
    if config.disable_jit and jitted.honours_disable_jit:  # the Jitted runs the function
        return None
    with _miss_lock:
        call = jitted._split_args(args, kwargs)  # Ref errors (passed twice, ...) raise here
        signature = call.signature
        if signature.backend != "pjrt":
            return None
        if signature.axes:  # bound named axes: the C++ signature does not hold them
            return None
        check_call(call, name)  # the checks of every jit call (a repeated donated array)
        entry = jitted._lookup(call)  # traces only if the Python cache misses too
        if not entry.plan.runs_natively(entry):
            return None  # float0 leaves, closed-over refs: the Python Jitted's plan runs them
        if entry.program.const_shardings and sharded.const_shardings(entry.program):
            return None  # closes over an array split on Explicit axes: a call over its mesh
        if has_host_callbacks(entry.program):
            return None  # backend._run waits for the callbacks, which run on XLA threads
        warn_unusable_once(entry, name, 4)  # (4: the user's call, past on_miss and api_boundary)
        # A Ref argument runs on (and is written back into) the array it holds.
        leaves = [leaf._value if type(leaf) is Ref else leaf for leaf in call.leaves]
        device, committed = placement_rule(
            placed_leaves(entry.program, leaves, jitted.keep_unused),
            call.paths,
            f"jit({name})",
            PjrtArray,
            default_device,
        )
        if any(isinstance(leaf, PjrtArray) and leaf.device != device for leaf in leaves):
            return None  # the Python path copies it over
        executable, kept = compile_executable(entry, name, device, jitted.keep_unused)
        return entry_spec(entry, signature, executable, device, committed, jitted.fun, kept)


class LeafType(NamedTuple):
    """An input leaf's parameter type (``ReadLeafType`` in bindings/fast_jit.cc
    reads it by field)."""

    dtype: np.dtype
    shape: tuple[int, ...]


class OutType(NamedTuple):
    """An output's type (``ReadOutType`` reads it by field)."""

    dtype: np.dtype
    shape: tuple[int, ...]
    weak_type: bool


class OutNode(NamedTuple):
    """A node of the output tree, in preorder (``ReadOutTree`` reads it by
    field): its kind (``OUT_KINDS``), number of children, the dict keys or
    node data, and a registered node's ``unflatten(data, children)``."""

    kind: int
    arity: int
    data: Any = None
    unflatten: Any = None


def leaf_types(avals: Any) -> tuple[LeafType, ...]:
    """The :class:`LeafType` of each aval (anything with ``dtype`` and ``shape``)."""
    return tuple(LeafType(aval.dtype, aval.shape) for aval in avals)


def out_types(avals: Any) -> tuple[OutType, ...]:
    """The :class:`OutType` of each output aval."""
    return tuple(OutType(aval.dtype, aval.shape, aval.weak_type) for aval in avals)


class EntrySpec(NamedTuple):
    """What C++ keeps for one signature (``FillEntry`` in bindings/fast_jit.cc
    reads it by field)."""

    executable: Any  # refimpl._pjrt.Executable, compiled for `device_index`
    device_index: int
    committed: bool  # whether the outputs are committed to that device
    in_avals: tuple[LeafType, ...]  # per input leaf
    donated: tuple[bool, ...]  # per input leaf
    aliases: tuple[int, ...]  # per input leaf: the output written into its buffer, or -1
    out_avals: tuple[OutType, ...]
    out_tree: tuple[OutNode, ...]  # preorder
    # Ref arguments: per input leaf, the output written back into that Ref
    # (its alias; the program's last outputs), or -1; () without Refs.
    ref_outputs: tuple[int, ...] = ()
    # With Refs: the function's closure cells (or None), the global names its
    # code uses and its module dict, which C++ checks for a Ref argument that
    # the function also closes over (an error of the Python path).
    ref_closure: tuple[Any, ...] | None = None
    ref_global_names: tuple[str, ...] = ()
    ref_globals: dict[str, Any] = {}  # noqa: RUF012 - read only, never mutated here
    # Per input leaf, whether the executable takes it (() : every leaf); an
    # unread one is neither copied nor passed (refimpl.transforms.dce.kept_inputs).
    kept: tuple[bool, ...] = ()


def entry_spec(
    entry: Any,
    signature: Any,
    executable: Any,
    device: Any,
    committed: bool,
    fun: Any = None,
    kept: tuple[bool, ...] | None = None,
) -> EntrySpec:
    """The :class:`EntrySpec` of a Python cache entry compiled for ``device``.

    An entry with Ref arguments returns ``(result, [final ref values])``:
    C++ builds ``result`` from the first outputs and writes each final
    value back into its Ref (``ref_outputs``).
    """
    aliases = entry.donation.aliases
    n = len(signature.avals)
    out_tree = entry.out_tree
    ref_outputs: tuple[int, ...] = ()
    closure: Any = None
    global_names: tuple[str, ...] = ()
    module_globals: Any = {}  # a dict; getattr's result is checked below
    if entry.ref_leaves:
        out_tree = entry.out_tree.children()[0]
        ref_outputs = tuple(aliases[i] if i in entry.ref_leaves else -1 for i in range(n))
        inner = getattr(fun, "__wrapped__", fun)  # as refimpl.ref's closure check
        closure = getattr(inner, "__closure__", None)
        global_names = tuple(getattr(getattr(inner, "__code__", None), "co_names", ()))
        module_globals = getattr(inner, "__globals__", None)
        if not isinstance(module_globals, dict):
            global_names, module_globals = (), {}
    return EntrySpec(
        executable=executable,
        device_index=device.index,
        committed=committed,
        in_avals=leaf_types(signature.avals),  # Ref{a}: a's
        donated=tuple(entry.donation.donated),
        aliases=tuple(aliases.get(i, -1) for i in range(n)),
        out_avals=out_types(entry.program.out_avals),
        out_tree=tuple(_out_tree_nodes(out_tree)),
        ref_outputs=ref_outputs,
        ref_closure=closure,
        ref_global_names=global_names,
        ref_globals=module_globals,
        kept=kept or (),
    )


# Output node kinds: defined once, in C++ (OutKind in bindings/fast_jit.cc).
_KIND = _pjrt.OUT_KINDS
_LEAF, _TUPLE, _LIST, _DICT, _NONE, _NODE = (
    _KIND[k] for k in ("leaf", "tuple", "list", "dict", "none", "node")
)


def _out_tree_nodes(treedef: pytree.PyTreeDef, nodes: list | None = None) -> list[OutNode]:
    """The structure as :class:`OutNode` nodes in preorder.

    Tuples, lists, dicts and None are rebuilt in C++; other nodes
    (namedtuples, registered types) by their ``unflatten(data, children)``.
    """
    nodes = [] if nodes is None else nodes
    node = treedef.node_data()
    if node is None:
        nodes.append(OutNode(_LEAF, 0))
        return nodes
    node_type, data = node
    children = treedef.children()
    if node_type is tuple:
        nodes.append(OutNode(_TUPLE, len(children)))
    elif node_type is list:
        nodes.append(OutNode(_LIST, len(children)))
    elif node_type is dict:
        nodes.append(OutNode(_DICT, len(children), tuple(data)))
    elif node_type is type(None):
        nodes.append(OutNode(_NONE, 0))
    else:
        kind = pytree._kind_of(node_type)
        assert kind is not None  # the tree was flattened, so its node types are registered
        nodes.append(OutNode(_NODE, len(children), data, kind.unflatten))
    for child in children:
        _out_tree_nodes(child, nodes)
    return nodes
