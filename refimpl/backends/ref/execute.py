"""The reference backend's executor: a jit cache entry run by the NumPy interpreter.

:func:`execute_ref` is what ``refimpl.backends.ref.backend.execute`` does
for every jitted call on the reference backend: it runs the entry's
Program with :func:`refimpl.interpreter.run_program` and carries out the
entry's donation plan (``refimpl.transforms.donation``) on NumPy buffers.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import numpy as np

from refimpl import pytree, tracing
from refimpl.backends.ref.arrays import RefArray, placement
from refimpl.interpreter import run_program
from refimpl.transforms.dce import live_program, placed_leaves

if TYPE_CHECKING:
    from refimpl.transforms.jit import CacheEntry, CallArgs

__all__ = ["execute_ref", "has_custom_nodes"]


def execute_ref(entry: CacheEntry, call: CallArgs, name: str, keep_unused: bool = False) -> Any:
    """Run a cached program on the reference interpreter, donation included;
    return the output pytree.

    Each aliased output is written into its donated input's NumPy buffer, and
    the output Array takes that very buffer. The other donated Arrays are
    deleted only once the output pytree exists, so a call that fails (while
    running, or in an output node's ``unflatten``) deletes nothing except an
    input whose buffer already holds a result (its old contents are gone; see
    docs/semantics.md "Donation through jit").

    Two cases are executed without writing into donated buffers (the outputs
    get fresh memory; the donated arrays are still deleted after success):

    * a donated buffer someone else can still read: ``np.asarray(a)`` hands
      out read-only views of ``a``'s buffer, and a live view must keep seeing
      the old values (copy-on-donate, as JAX and the pjrt backend);
    * an output structure with user-defined nodes (registered pytree types):
      their ``unflatten`` is user code that may fail once the results exist,
      and the call must then leave every donated input intact.
    """
    leaves = placed_leaves(entry.program, call.leaves, keep_unused)
    device, committed = placement(leaves, call.paths, f"jit({name})")
    plan = entry.donation
    donated = {
        i: leaf
        for i, leaf in enumerate(call.leaves)
        if plan.donated[i] and isinstance(leaf, RefArray)
    }
    candidates = [] if _custom_out_tree(entry) else [i for i in plan.aliases if i in donated]
    # Detach the candidates' buffers before counting references: from then on
    # a reader in another thread gets the deleted-array error, or it already
    # holds a reference to the buffer (a view, or the buffer itself) and the
    # count below sees it.
    detached: dict[int, np.ndarray] = {}
    try:
        for i in candidates:
            detached[i] = _detach(donated[i], name)
        for i in [i for i in detached if not _only_reference(detached, i)]:
            _reattach(donated[i], detached.pop(i))  # still readable: never overwritten
        reuse = {i: plan.aliases[i] for i in detached}
        values = [
            detached[i] if i in detached else tracing.concrete_value(leaf, aval)
            for i, (leaf, aval) in enumerate(zip(call.leaves, call.signature.avals, strict=True))
        ]
        outs = run_program(
            live_program(entry.program),  # its dead code removed, as JAX's lowering
            values,
            reuse=reuse,
            on_overwrite=lambda i: donated[i].mark_donated(name),
        )
        del values
        arrays = [
            RefArray(out, aval.weak_type, device, committed)
            for out, aval in zip(outs, entry.program.out_avals, strict=True)
        ]
        tree = pytree.tree_unflatten(entry.out_tree, arrays)
    except BaseException:
        for i, buffer in detached.items():  # inputs whose old contents still exist
            if not donated[i].is_deleted():
                _reattach(donated[i], buffer)
        raise
    for array in donated.values():
        if not array.is_deleted():
            array.mark_donated(name)
    for i, leaf in enumerate(call.leaves):  # a pmap's ShardedArray: every shard, as on pjrt
        if plan.donated[i] and i not in donated and hasattr(leaf, "mark_donated"):
            leaf.mark_donated(name)
    return tree


def _detach(array: Any, name: str) -> np.ndarray:
    """Take ``array``'s buffer for a donating call; it reads as donated meanwhile."""
    buffer = array._value()
    array._buffer, array._donated_to = None, name
    return buffer


def _reattach(array: Any, buffer: np.ndarray) -> None:
    array._buffer, array._donated_to = buffer, None


def _only_reference(buffers: dict[int, np.ndarray], i: int) -> bool:
    """Whether ``buffers[i]`` is referenced by the dict alone.

    Every NumPy view of a buffer (``np.asarray(array)``, slices of it, a
    constant captured by a program, a DLPack export) holds a reference to it,
    so the count covers them all: 2 is the dict's plus ``getrefcount``'s
    argument.
    """
    return sys.getrefcount(buffers[i]) <= 2


def _custom_out_tree(entry: CacheEntry) -> bool:
    """Whether rebuilding the outputs runs user code (decided once per entry)."""
    if entry.custom_out_tree is None:
        entry.custom_out_tree = has_custom_nodes(entry.out_tree)
    return entry.custom_out_tree


_BUILTIN_NODES = (tuple, list, dict, type(None))


def has_custom_nodes(treedef: pytree.PyTreeDef) -> bool:
    """Whether ``treedef`` has a node other than tuple, list, dict, None or a
    namedtuple: one whose ``unflatten`` is arbitrary user code."""
    stack = [treedef]
    while stack:
        node = stack.pop()
        data = node.node_data()
        if data is None:
            continue
        kind = data[0]
        if kind not in _BUILTIN_NODES and not (
            issubclass(kind, tuple) and hasattr(kind, "_fields")
        ):
            return True
        stack.extend(node.children())
    return False
