"""The PJRT backend behind the backend protocol (see ``refimpl.backends``).

``refimpl.transforms.jit`` traces and caches a Program per call signature,
exactly as for the reference backend; ``jit(f, backend="pjrt")`` is the C++
fast path (``fast_path``), which runs a cached executable without Python and
asks Python only on a miss. This module is the rest:

1. **compile** (``executables``): the Program is lowered to StableHLO
   (``lowering``), with ``tf.aliasing_output`` on the donated inputs that
   the donation plan aliases to an output, serialized as a portable artifact
   and compiled once per device it runs on;
2. **execute** (:func:`execute`, the calls the fast path hands to the Python
   ``Jitted``, and ``Compiled``): PJRT arrays are passed as they are;
   NumPy arrays, Python scalars and reference arrays are copied over;
3. **donation** (SPEC "Donation"): PJRT deletes each aliased input itself;
   every other donated array is deleted after a successful call, and all
   of them remember the function they were donated to;
4. ``device_put`` onto a PJRT device (:func:`put_leaf`) and **eager
   operations** on PJRT arrays (:func:`eager_dispatch`: each primitive, per
   params, is one fast-path ``jit``, so a repeated ``x + 1`` is a C++ hit).

Placement is :func:`refimpl.array.placement_rule` over PJRT arrays:
committed ones fix the device (two different ones are a ``ValueError``),
otherwise the call runs on the default device, uncommitted. Every array
made here is the C++ ``PjrtArray`` (``arrays``).
"""

from __future__ import annotations

import collections
import threading
import types
from collections.abc import Sequence
from typing import Any

import numpy as np

import refimpl.numpy as rnp
from refimpl import caches, dtypes, pytree, stages, test_events, tracing
from refimpl.array import Array, placement_rule
from refimpl.backends.pjrt import compilation_cache, fast_path, host_callbacks
from refimpl.backends.pjrt import executables as executables_module
from refimpl.backends.pjrt import runtime as pjrt_runtime
from refimpl.backends.pjrt.arrays import PjrtArray, wrap_buffer
from refimpl.backends.pjrt.executables import (
    client,
    default_device,
    devices,
    executables,
    index_of,
    is_pjrt_device,
)
from refimpl.backends.ref import eager
from refimpl.backends.ref.arrays import RefArray
from refimpl.core import ShapedArray
from refimpl.primitives.base import (
    EAGER_BODIES,
    check_impl_outputs,
    impl_function,
    library_impl,
)
from refimpl.primitives.elementwise import copy_p
from refimpl.transforms import block_arrays, donation
from refimpl.transforms.dce import kept_inputs, placed_leaves
from refimpl.transforms.jit import (
    _check_compiler_options,
    _differences,
    _weak_stripped,
    check_call,
)

__all__ = [
    "Compiled",
    "Lowered",
    "PjrtArray",
    "array_types",
    "default_device",
    "devices",
    "eager_dispatch",
    "execute",
    "is_device",
    "live_arrays",
    "lower",
    "make_fast_jitted",
    "placement",
    "put_leaf",
    "to_device",
    "wrap_buffer",
]

name = "pjrt"
array_types = (PjrtArray,)
is_device = is_pjrt_device


def live_arrays() -> list[Any]:
    """The arrays of this backend alive (``jax.live_arrays``): the C++ list
    of every PjrtArray alive (bindings/pjrt_array.h) and the arrays over
    several devices made of them."""
    arrays = pjrt_runtime.native_module().live_pjrt_arrays()
    return block_arrays.live_arrays(arrays, is_device)


# --- what jit's and pmap's stages (Lowered, Compiled) read of a module and an executable ---


def module_ir(lowered: Any, dialect: str | None = None) -> Any:
    """The module ``lowered()`` gives: the StableHLO ``ir.Module`` (``dialect``
    None or ``"stablehlo"``), or XLA's HLO computation (``"hlo"``), as JAX's
    ``Lowered.compiler_ir``; another dialect is JAX's ValueError (checked
    before anything is lowered)."""
    if dialect in (None, "stablehlo"):
        return lowered()
    if dialect == "hlo":
        return executables_module._lowering().module_hlo(lowered())
    raise ValueError(f"unknown dialect: {dialect}")


def module_text(lowered: Any, dialect: str | None = None) -> str:
    """The module ``lowered()`` gives, as text (``dialect="hlo"``: XLA's HLO
    text), as JAX's ``Lowered.as_text``."""
    if dialect == "hlo":
        return module_ir(lowered, "hlo").as_hlo_text()
    return executables_module._lowering().module_text(module_ir(lowered, dialect))


def _unless_unimplemented(query: Any) -> Any:
    """``query()``, or None where the plugin answers UNIMPLEMENTED (JAX's
    contract for the analyses: "None if unavailable")."""
    try:
        return query()
    except pjrt_runtime.native_module().PjrtError as err:
        if "UNIMPLEMENTED" in str(err):
            return None
        raise


def executable_cost_analysis(executable: Any) -> dict[str, float] | None:
    """The plugin's cost properties (``PJRT_Executable_GetCostAnalysis``), or
    None where it has none (the CPU plugin)."""
    return _unless_unimplemented(executable.cost_analysis)


def executable_memory_analysis(executable: Any) -> Any:
    """``PJRT_Executable_GetCompiledMemoryStats`` as an object with JAX's
    ``CompiledMemoryStats`` field names (``argument_size_in_bytes``, ...), or
    None where the plugin has none."""
    stats = _unless_unimplemented(executable.memory_stats)
    return None if stats is None else types.SimpleNamespace(**stats)


# What `transforms.pmap` uses for its PJRT paths (C++ fast path, sharded
# execution): pmap sits below the backends and reaches these through
# `backends.get("pjrt").pmap_support` instead of importing PJRT modules.
pmap_support = types.SimpleNamespace(
    PjrtArray=PjrtArray,
    compilation_cache=compilation_cache,
    executables=executables_module,
    fast_path=fast_path,
    host_callbacks=host_callbacks,
    native_module=pjrt_runtime.native_module,
    runtime=pjrt_runtime,
    module_ir=module_ir,
    module_text=module_text,
    executable_cost_analysis=executable_cost_analysis,
    executable_memory_analysis=executable_memory_analysis,
)


def to_device(value: np.ndarray, device: Any) -> Any:
    """A new device buffer holding a copy of the host array ``value``."""
    return client().buffer_from_numpy(np.asarray(value, order="C"), index_of(device))


def placement(args: Sequence[Any], labels: Sequence[str], where: str) -> tuple[Any, bool]:
    """Where a computation on ``args`` runs on PJRT: (device, committed)."""
    return placement_rule(args, labels, where, PjrtArray, default_device)


def _input_buffer(leaf: Any, aval: ShapedArray, device: Any) -> Any:
    """The device buffer to pass for one argument leaf (copied there if needed)."""
    if isinstance(leaf, PjrtArray) and leaf._shard_axis is None:  # (sharded: gathered below)
        buffer = leaf.buffer()
        if leaf.device == device:
            return buffer
        # TODO(fast path): an on-device copy; for now through the host
        return to_device(leaf._value(), device)
    return to_device(tracing.concrete_value(leaf, aval), device)


# --- device_put ------------------------------------------------------------------------------


def put_leaf(x: Any, device: Any, donate: bool, alias: bool) -> PjrtArray:
    """``device_put`` of one leaf onto a PJRT device (the SPEC table, on buffers).

    ``device=None`` keeps a PJRT array's device and commitment and puts
    anything else on the default device, uncommitted. For a PJRT array:
    donation on the same device moves the buffer itself into the result;
    ``alias`` returns ``x`` when nothing changes; otherwise the result gets a
    fresh buffer (an on-device copy, or a transfer to another device).
    Reference Arrays, NumPy arrays and scalars are copied to the device; a
    donated reference Array is deleted.
    """
    if device is not None and not is_pjrt_device(device):
        raise ValueError(f"device_put: {device} is not a PJRT device; use one of {devices()}")
    if isinstance(x, PjrtArray) and x._shard_axis is None:  # (a sharded one is gathered below)
        target, committed = (device, True) if device is not None else (x.device, x.committed)
        if donate and target == x.device:
            return wrap_buffer(x.take_buffer("device_put"), x.weak_type, target, committed)
        if not donate and alias and (target, committed) == (x.device, x.committed):
            return x
        buffer = _copy_on_device(x) if target == x.device else to_device(x._value(), target)
        if donate:
            x.mark_donated("device_put")
        return wrap_buffer(buffer, x.weak_type, target, committed)
    aval = tracing.get_aval(x, "device_put", "x")
    weak = dtypes.weak_type_of_value(x) if dtypes.is_python_scalar(x) else aval.weak_type
    target, committed = (device, True) if device is not None else (default_device(), False)
    value = np.asarray(tracing.concrete_value(x, aval), order="C")
    out = target.put(value, weak, committed)  # transfer and array: one C++ call
    if donate and donation.is_device_array(x) and hasattr(x, "mark_donated"):
        x.mark_donated("device_put")
    return out


def _copy_on_device(x: PjrtArray) -> Any:
    """A new buffer on ``x``'s device with ``x``'s value: a program returning its
    (not donated) input, for which XLA allocates a fresh output buffer."""
    (out,) = eager_dispatch(copy_p, (x,), [x.aval], [x.aval], {})
    return out.take_buffer("device_put")


# --- running ------------------------------------------------------------------------------


def execute(jitted: Any, entry: Any, call: Any) -> Any:
    """Run one jit cache entry on PJRT for one call; the output pytree."""
    outs = _run(entry, call, jitted.__name__, keep_unused=jitted.keep_unused)
    return pytree.tree_unflatten(entry.out_tree, outs)


# Devices running a program with host callbacks (index -> how many): the
# plugin runs the programs of one device in order, so a program launched on
# such a device from inside one of its callbacks would wait for the callback
# that waits for it. Guarded by _callback_devices_lock (held briefly, never
# across a launch or a callback).
_callback_devices: dict[int, int] = {}
_callback_devices_lock = threading.Lock()


def _away_from_callers(device: Any, committed: bool, name: str) -> Any:
    """The device of a call made inside a host callback: ``device``, unless a
    program with host callbacks runs there (maybe the caller's, which waits
    for this call); then another device for uncommitted inputs, or an error."""
    with _callback_devices_lock:
        busy = {i for i, n in _callback_devices.items() if n > 0}
    if index_of(device) not in busy or not pjrt_runtime.native_module()._in_host_callback():
        return device
    if not committed:
        for other in devices():
            if index_of(other) not in busy:
                return other
    raise RuntimeError(
        f"jit({name}): called from inside a host callback (pure_callback, debug.callback) "
        f"while {'its inputs are committed to' if committed else 'every'} device running a "
        "program with host callbacks; the plugin runs one device's programs in order, so "
        "this call would wait forever for the callback that waits for it. Pass uncommitted "
        "inputs (a free device is chosen) or compute the value with NumPy in the callback."
    )


def _run(
    entry: Any, call: Any, name: str, compiled: Any = None, keep_unused: bool = False
) -> list[PjrtArray]:
    leaves = placed_leaves(entry.program, call.leaves, keep_unused)
    device, committed = placement(leaves, call.paths, f"jit({name})")
    if _callback_devices:
        device = _away_from_callers(device, committed, name)
    compiled = compiled if compiled is not None else executables(entry, name, keep_unused)
    if compiled.has_host_callbacks:
        index = index_of(device)
        with _callback_devices_lock:
            _callback_devices[index] = _callback_devices.get(index, 0) + 1
        try:
            return _launch(entry, call, name, compiled, device, committed)
        finally:
            with _callback_devices_lock:
                _callback_devices[index] -= 1
    return _launch(entry, call, name, compiled, device, committed)


def _launch(
    entry: Any, call: Any, name: str, compiled: Any, device: Any, committed: bool
) -> list[PjrtArray]:
    executable = compiled.for_device(device)
    kept = compiled.kept or (True,) * len(call.leaves)
    buffers = []
    for leaf, aval, keep in zip(call.leaves, call.signature.avals, kept, strict=True):
        if keep:
            buffers.append(_input_buffer(leaf, aval, device))
        elif isinstance(leaf, Array):  # unread: not copied, but a deleted one is still an error
            leaf._check_live()
    if compiled.platform_index is not None:  # lowered for several platforms
        index = np.asarray(compiled.platform_index, np.int32)
        buffers.insert(0, to_device(index, device))
    outs = executable.execute(buffers)
    del buffers  # the temporary copies of host arguments are freed now
    _delete_donated(entry.donation.donated, call.leaves, name)
    if compiled.has_host_callbacks:
        # the callbacks have run (and their errors are raised here) when the call returns
        for buffer in outs:
            buffer.block_until_ready()
    return [
        wrap_buffer(buffer, aval.weak_type, device, committed)
        for buffer, aval in zip(outs, entry.program.out_avals, strict=True)
    ]


def _delete_donated(donated: Sequence[bool], leaves: Sequence[Any], name: str) -> None:
    """After a successful call, every donated device array is gone (SPEC "Donation").

    Aliased PJRT inputs were already deleted by PJRT; this drops their
    handles and records the function's name for the error message. Donated
    reference Arrays (copied in) are deleted as well; NumPy arrays and
    scalars are never touched.
    """
    for is_donated, leaf in zip(donated, leaves, strict=True):
        if is_donated and donation.is_device_array(leaf) and hasattr(leaf, "mark_donated"):
            leaf.mark_donated(name)


def make_fast_jitted(fun: Any, kwargs: dict[str, Any]) -> Any:
    """``jit(fun, backend="pjrt")``: the C++ fast-path callable (``fast_path``)."""
    return fast_path.make_fast_jitted(fun, kwargs, _on_miss_compile)


def _on_miss_compile(
    entry: Any, name: str, device: Any, keep_unused: bool
) -> tuple[Any, tuple[bool, ...] | None]:
    compiled = executables(entry, name, keep_unused)
    return compiled.for_device(device), compiled.kept


# --- Traced.lower() and Lowered.compile() -------------------------------------------------

_PLATFORMS = ("cpu", "cuda", "rocm", "tpu")


def _check_platforms(name: str, lowering_platforms: Any) -> tuple[str, ...] | None:
    """``lowering_platforms`` as a tuple of JAX platform names, or None."""
    if lowering_platforms is None:
        return None
    if isinstance(lowering_platforms, str) or not isinstance(lowering_platforms, (tuple, list)):
        raise TypeError(
            f"{name}.lower: lowering_platforms must be None or a tuple of platform names, "
            f"got {lowering_platforms!r}"
        )
    # unchecked user values until the loop below: each is then one of _PLATFORMS
    platforms: tuple[Any, ...] = tuple({"gpu": "cuda"}.get(p, p) for p in lowering_platforms)
    if not platforms:
        raise ValueError(f"{name}.lower: lowering_platforms is empty")
    for platform in platforms:
        if platform not in _PLATFORMS:
            raise ValueError(
                f"{name}.lower: unknown platform {platform!r} in lowering_platforms "
                f"(known: {', '.join(_PLATFORMS)})"
            )
    if len(set(platforms)) != len(platforms):
        raise ValueError(f"{name}.lower: lowering_platforms repeats a platform: {platforms}")
    return platforms


class ArgInfo:
    """One argument leaf of a ``Lowered`` (as JAX's ``ArgInfo``): its type and
    whether it is donated."""

    def __init__(self, aval: ShapedArray, donated: bool) -> None:
        self._aval = aval
        self.donated = donated

    @property
    def shape(self) -> tuple[int, ...]:
        return self._aval.shape

    @property
    def dtype(self) -> np.dtype:
        return self._aval.dtype

    def __repr__(self) -> str:
        return f"ArgInfo(_aval={self._aval.str_short()}, donated={self.donated})"


class Lowered:
    """A traced function lowered to StableHLO (``Jitted.trace(...).lower()``).

    ``lowering_platforms=None`` lowers for this process's PJRT platform (the
    module the jit call itself runs); a tuple lowers for those platforms
    without their devices. Only ``lax.platform_dependent`` lowers differently
    per platform; with several platforms ``@main`` takes a leading
    ``_platform_index`` argument (the position of the running platform).
    """

    def __init__(self, traced: Any, lowering_platforms: Any = None) -> None:
        self._traced = traced
        name = f"Traced({traced.jitted.__name__})"
        self._platforms = _check_platforms(name, lowering_platforms)
        local = (executables_module.local_platform(),) if self._platforms is not None else None
        if self._platforms is None or self._platforms == local:
            self._executables = executables(
                traced.entry, traced.jitted.__name__, traced.jitted.keep_unused
            )
        else:
            entry = traced.entry
            assert local is not None  # set whenever self._platforms is
            index = self._platforms.index(local[0]) if local[0] in self._platforms else None
            self._executables = executables_module._Executables(
                entry.program,
                name=traced.jitted.__name__,
                aliases=entry.aliases,
                donated=entry.donation.donated,
                platforms=self._platforms,
                platform_index=index,
                kept=kept_inputs(entry.program, entry.donation.donated, traced.jitted.keep_unused),
            )
        _ = self._executables.module  # lower now: lowering errors belong to lower()

    @property
    def lowering_platforms(self) -> tuple[str, ...]:
        if self._platforms is None:
            return (executables_module.local_platform(),)
        return self._platforms

    def as_text(self, dialect: str | None = None) -> str:
        """The StableHLO module, as text (``dialect="hlo"``: XLA's HLO text)."""
        return module_text(self._module, dialect)

    def compiler_ir(self, dialect: str | None = None) -> Any:
        """The lowered module: the StableHLO ``ir.Module`` (``dialect`` None or
        ``"stablehlo"``), or XLA's HLO computation (``"hlo"``), as JAX's."""
        return module_ir(self._module, dialect)

    def _module(self) -> Any:
        return self._executables.module

    @property
    def in_tree(self) -> Any:
        """The ``(args, kwargs)`` treedef of the call (its dynamic arguments)."""
        return self._traced.call.signature.in_tree

    @property
    def in_avals(self) -> Any:
        """The argument types, as the ``(args, kwargs)`` pytree of the call."""
        signature = self._traced.call.signature
        return pytree.tree_unflatten(signature.in_tree, list(signature.avals))

    @property
    def args_info(self) -> Any:
        """An :class:`ArgInfo` per argument leaf (type, donated), as ``(args, kwargs)``."""
        signature = self._traced.call.signature
        infos = [
            ArgInfo(aval, donated)
            for aval, donated in zip(signature.avals, signature.donated, strict=True)
        ]
        return pytree.tree_unflatten(signature.in_tree, infos)

    @property
    def donate_argnums(self) -> tuple[int, ...]:
        """The flat indices of the donated argument leaves (JAX's spelling: the
        positions in ``tree_leaves(args_info)``, static arguments not counted)."""
        leaves = pytree.tree_leaves(self.args_info)
        return tuple(i for i, info in enumerate(leaves) if info.donated)

    @property
    def out_info(self) -> Any:
        """The output types (``ShapeDtypeStruct``s) in the output pytree.

        Strongly typed, as JAX's ``Lowered.out_info``: a lowered module's
        results have no weak types (``Traced.out_info`` keeps them).
        """
        return pytree.tree_map(
            lambda s: type(s)(s.shape, s.dtype) if s.weak_type else s, self._traced.out_info
        )

    def compile(self, compiler_options: dict[str, Any] | None = None) -> Compiled:
        """Compile for this process's PJRT platform (now, not at the first call).

        ``compiler_options`` (XLA option names to values) is accepted for
        JAX's signature and changes nothing: the plugin compiles with its
        defaults.

        A module lowered only for other platforms cannot be compiled here: the
        local plugin compiles for its own platform alone.
        """
        _check_compiler_options("Lowered.compile", compiler_options)
        local = executables_module.local_platform()
        if local not in self.lowering_platforms:
            plugin = executables_module.client().plugin.path
            raise ValueError(
                f"Lowered({self._traced.jitted.__name__}).compile(): the module was lowered for "
                f"{self.lowering_platforms}, but this process's PJRT plugin ({plugin}) compiles "
                f"for {local!r} only; compile it where a plugin for "
                f"{' or '.join(self.lowering_platforms)} is loaded (as_text() gives the "
                f"StableHLO), or lower with {local!r} among lowering_platforms"
            )
        compiled = Compiled(self._traced, self._executables)
        self._executables.for_device(default_device())  # compile now, not on first call
        return compiled

    def cost_analysis(self) -> dict[str, float] | None:
        """The compiled module's cost properties (``Compiled.cost_analysis``), or
        None where the plugin does not provide them (JAX 0.10.2's contract:
        "None if unavailable"). JAX analyses the unoptimised HLO in-process;
        refimpl has no HLO cost model, so it asks the plugin, which needs the
        executable; a module lowered for other platforms only has none here."""
        if executables_module.local_platform() not in self.lowering_platforms:
            return None
        return self.compile().cost_analysis()

    def __repr__(self) -> str:
        return f"Lowered({self._traced.jitted.__name__})"


class Compiled:
    """A lowered function compiled for PJRT; call it with arguments of the traced signature."""

    def __init__(self, traced: Any, compiled: Any = None) -> None:
        self._traced = traced
        self._executables = compiled or executables(
            traced.entry, traced.jitted.__name__, traced.jitted.keep_unused
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        traced = self._traced
        name = traced.jitted.__name__
        for leaf in pytree.tree_leaves((args, kwargs)):
            if isinstance(leaf, tracing.Tracer):
                # compiled for one signature: vmap/grad/jit cannot trace into it
                # (JAX 0.10.2's words)
                raise TypeError(
                    "Cannot apply JAX transformations to a function lowered and compiled "
                    "for a particular signature. Detected argument of Tracer type "
                    f"{type(leaf)}."
                )
        args, kwargs, call = traced.call_with_statics(args, kwargs)
        # weak types aside, as JAX's check_arg_avals_for_call: a weak type
        # changes no buffer, and the results keep the compiled types
        if _weak_stripped(call.signature)._replace(backend="pjrt") != _weak_stripped(
            traced.call.signature
        )._replace(backend="pjrt"):
            raise TypeError(
                f"Compiled({name}): {_mismatch_words(call, traced.call)}Called with arguments "
                f"of another signature than it was compiled for: {_describe(call.signature)} "
                f"instead of {_describe(traced.call.signature)}; {_difference(call, traced.call)}"
            )
        check_call(call, name)
        # As the jit call, by the entry's plan (Ref arguments: their current
        # values in, final values written back, as jax's Compiled; float0
        # leaves held out), on these executables.
        return traced.entry.plan.run(traced.jitted, traced.entry, call, args, kwargs, self._execute)

    # JAX's Compiled spellings, as the Lowered's
    @property
    def args_info(self) -> Any:
        return Lowered.args_info.fget(self)  # type: ignore[attr-defined]

    @property
    def out_info(self) -> Any:
        return Lowered.out_info.fget(self)  # type: ignore[attr-defined]

    @property
    def in_tree(self) -> Any:
        return self._traced.call.signature.in_tree

    @property
    def in_avals(self) -> Any:
        return Lowered.in_avals.fget(self)  # type: ignore[attr-defined]

    @property
    def donate_argnums(self) -> tuple[int, ...]:
        return Lowered.donate_argnums.fget(self)  # type: ignore[attr-defined]

    def runtime_executable(self) -> Any:
        """The plugin's loaded executable for the default device (JAX's
        ``Compiled.runtime_executable()``: the XLA one)."""
        return self._executable()

    def _execute(self, jitted: Any, entry: Any, call: Any) -> Any:
        outs = _run(entry, call, jitted.__name__, self._executables, jitted.keep_unused)
        return pytree.tree_unflatten(entry.out_tree, outs)

    def _executable(self) -> Any:
        return self._executables.for_device(default_device())

    def cost_analysis(self) -> dict[str, float] | None:
        """The plugin's cost properties, or None where it has none."""
        return executable_cost_analysis(self._executable())

    def memory_analysis(self) -> Any:
        """The executable's memory statistics under JAX's field names, or None."""
        return executable_memory_analysis(self._executable())

    def as_text(self) -> str:
        """The StableHLO module this executable was compiled from."""
        return module_text(lambda: self._executables.module)

    def __repr__(self) -> str:
        return f"Compiled({self._traced.jitted.__name__})"


class _Shown:
    """A leaf shown by its type (``f32[4,4]``) in a rendered argument tree."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _describe(signature: Any) -> str:
    """The arguments' types in their pytree structure: ``((f32[4,4], f32[4,4]),)``
    for ``c((x, y))``, so a structural difference shows (not only the leaves)."""
    shown = [_Shown(a.str_short()) for a in signature.avals]
    try:
        args, kwargs = pytree.tree_unflatten(signature.in_tree, shown)
    except Exception:  # noqa: BLE001 -- a user node's unflatten may refuse stand-ins
        return "(" + ", ".join(a.text for a in shown) + ")"
    text = ", ".join([repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()])
    return f"({text},)" if len(args) == 1 and not kwargs else f"({text})"


def _mismatch_words(call: Any, compiled: Any) -> str:
    """JAX 0.10.2's sentence for a compiled function called with other
    arguments (its tests match it): another pytree, or the arguments whose
    types differ."""
    new, old = call.signature, compiled.signature
    if new.in_tree != old.in_tree:
        return (
            "Function compiled with input pytree does not match the input pytree it was "
            "called with. "
        )
    lines = [
        f"Argument '{path}' compiled with {_jax_type(b)} and called with {_jax_type(a)}"
        for path, a, b in zip(call.paths, new.avals, old.avals, strict=True)
        if (a.shape, a.dtype) != (b.shape, b.dtype)
    ]
    return (
        "Argument types differ from the types for which this computation was compiled. "
        "Perhaps you are calling the compiled executable with a different enable_x64 mode "
        "than when it was AOT compiled? The mismatches are:\n" + "\n".join(lines) + "\n"
    )


def _jax_type(aval: Any) -> str:
    return f"{aval.dtype.name}[{','.join(str(d) for d in aval.shape)}]"


def _difference(call: Any, compiled: Any) -> str:
    """What differs, as the cache-miss explanation words it (the leaf types
    alone can agree: ``c((x, y))`` for ``c(x, y)``)."""
    new = call.signature._replace(backend="pjrt")
    old = compiled.signature._replace(backend="pjrt")
    return "; ".join(_differences(new, old, call.paths)) or "the signatures differ"


def lower(traced: Any, lowering_platforms: Any = None) -> Lowered:
    """``Traced.lower()``: the StableHLO of the traced Program (whatever its backend)."""
    return Lowered(traced, lowering_platforms)


# --- eager operations on PJRT arrays ----------------------------------------------------------

# At most this many (primitive, params) jits are kept, the oldest made first
# out (JAX's cache of primitive callables is bounded alike):
# params holding a program (an eager scan, cond or while of a fresh function
# each call) are new keys each time, and each holds an executable.
EAGER_JITS_KEPT = 4096
_eager_jitted: collections.OrderedDict[Any, Any] = collections.OrderedDict()
_eager_lock = threading.Lock()


def eager_dispatch(
    primitive: Any,
    args: tuple[Any, ...],
    in_avals: list[ShapedArray],
    out_avals: list[ShapedArray],
    params: dict[str, Any],
) -> list[Any]:
    """Apply ``primitive`` to operands, one of them a PJRT array, on the device.

    Each (primitive, params) pair gets one ``jit(backend="pjrt")`` of a
    function binding just that primitive; its own cache then holds one
    executable per operand signature.
    """
    if primitive.lowering is None or not library_impl(primitive):
        # (JAX's eager bind calls a user's impl: a counting wrapper, a user's primitive)
        return _impl_on_host(primitive, args, in_avals, out_avals, params)
    body = EAGER_BODIES.get(primitive)
    if body is not None:  # (see EAGER_BODIES: as JAX's eager bind, no compiled call)
        return _eager_body(primitive, params[body], args, out_avals)
    key = (primitive, _freeze(params))
    jitted = _eager_jitted.get(key)
    if jitted is None:
        with _eager_lock:
            jitted = _eager_jitted.get(key)
            if jitted is None:
                test_events.record(test_events.PJRT_EAGER_PRIMITIVE)
                jitted = _eager_jitted[key] = _jit_primitive(primitive, params)
                while len(_eager_jitted) > EAGER_JITS_KEPT:
                    _eager_jitted.popitem(last=False)
    outs = jitted(*[_fast_operand(arg) for arg in args])
    return list(outs) if primitive.multiple_results else [outs]


def _eager_body(
    primitive: Any, body: Any, args: tuple[Any, ...], out_avals: list[ShapedArray]
) -> list[Any]:
    """``body`` evaluated by binding its equations on ``args``; an output no
    equation made (a constant, a literal, an input of host data) is put where
    the operands place the call, as the outputs of a compiled call."""
    outs = tracing.eval_program_bind(body, list(args))
    if all(_on_device(out) for out in outs):
        return outs
    labels = [f"{i} of {primitive.name}" for i in range(len(args))]
    device, committed = placement(args, labels, primitive.name)
    return [
        out
        if _on_device(out)
        else wrap_buffer(
            to_device(tracing.concrete_value(out, aval), device), aval.weak_type, device, committed
        )
        for out, aval in zip(outs, out_avals, strict=True)
    ]


def _on_device(value: Any) -> bool:
    """An array of this backend (one device's, or over a mesh): not host data,
    not a reference-backend constant."""
    return isinstance(value, Array) and not isinstance(value, RefArray)


def clear_eager_primitives() -> None:
    """Forget the (primitive, params) jits of eager operations: the next use
    of each makes and compiles one again (``refimpl.test_util.count_primitive_compiles``
    empties them first, as JAX's empties its cache of primitive callables)."""
    with _eager_lock:
        _eager_jitted.clear()


caches.register_clearer(clear_eager_primitives)


def _impl_on_host(
    primitive: Any,
    args: tuple[Any, ...],
    in_avals: list[ShapedArray],
    out_avals: list[ShapedArray],
    params: dict[str, Any],
) -> list[Any]:
    """A primitive with no StableHLO lowering (a user's ``Primitive`` given
    no ``mlir.register_lowering``) applied eagerly: its impl on the host, as
    JAX's eager ``bind`` calls the impl, the results put on the operands'
    device (under ``jit`` such a primitive is a ``LoweringError``)."""
    device, committed = placement(
        args, [f"{i} of {primitive.name}" for i in range(len(args))], primitive.name
    )
    values = [tracing.concrete_value(a, aval) for a, aval in zip(args, in_avals, strict=True)]
    outs = check_impl_outputs(primitive, impl_function(primitive)(*values, **params), out_avals)
    return [
        wrap_buffer(to_device(out, device), aval.weak_type, device, committed)
        for out, aval in zip(outs, out_avals, strict=True)
    ]


def _fast_operand(arg: Any) -> Any:
    """A promoted scalar (``1`` in ``x + 1``) as a value the C++ signature takes
    with the same type: a Python scalar when it is weakly typed as one (its
    device buffer is cached there), a NumPy scalar when it is strongly typed;
    anything else as it is."""
    if type(arg) is not tracing.TypedScalar:
        return arg
    if not arg.aval.weak_type:
        return arg.value[()]
    value = arg.value.item()
    return value if dtypes.python_scalar_dtype(value) == arg.aval.dtype else arg


def _jit_primitive(primitive: Any, params: dict[str, Any]) -> Any:
    """A fast-path ``jit`` of one application of ``primitive`` with ``params``:
    one C++ cache entry (one executable) per operand signature."""

    def apply(*operands: Any) -> Any:
        return primitive.bind(*operands, **params)

    apply.__name__ = primitive.name
    fast = make_fast_jitted(apply, {"backend": "pjrt"})
    fast._jitted.honours_disable_jit = False  # an eager operation, not a user's jit
    return fast


class _Identity:
    """A hashable stand-in for an unhashable param value (a Program), by identity.

    The cache key holds the value itself, so its ``id`` cannot be reused.
    """

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __hash__(self) -> int:
        return id(self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Identity) and other.value is self.value


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(_freeze(v) for v in value))
    try:
        hash(value)
    except TypeError:
        return _Identity(value)
    return (type(value), value)


def eager_on_host_data(
    primitive: Any,
    args: tuple[Any, ...],
    in_avals: list[ShapedArray],
    out_avals: list[ShapedArray],
    params: dict[str, Any],
) -> list[Any]:
    """A primitive applied eagerly to host data alone while pjrt is the
    default backend: on the default device, as JAX's (its arrays, XLA's
    values). Scalars go as the fast jit's scalar arguments; arrays are put
    on the default device (uncommitted) first."""
    operands = tuple(
        arg if type(arg) in _SCALAR_OPERANDS else put_leaf(arg, None, False, False) for arg in args
    )
    return eager_dispatch(primitive, operands, in_avals, out_avals, params)


_SCALAR_OPERANDS = (int, float, bool, complex, tracing.TypedScalar)
eager.register_eager_dispatcher(PjrtArray, eager_dispatch)
eager.register_host_dispatcher("pjrt", eager_on_host_data)


# --- operators on PJRT arrays -----------------------------------------------------------------

# Operator -> (refimpl.numpy function, reflected). An operator on PJRT arrays
# (and Python scalars) outside any trace is one fast-path jit of the numpy
# function: the promotion and the primitive run once per signature, at trace
# time, and ``x + 1`` is then a C++ cache hit. Anything else (a tracer, NumPy
# data, other operand types) takes the protocol's own method.
_OPERATORS = {
    "__add__": ("add", False),
    "__radd__": ("add", True),
    "__sub__": ("subtract", False),
    "__rsub__": ("subtract", True),
    "__mul__": ("multiply", False),
    "__rmul__": ("multiply", True),
    "__truediv__": ("true_divide", False),
    "__rtruediv__": ("true_divide", True),
    "__pow__": ("power", False),
    "__rpow__": ("power", True),
    "__lt__": ("less", False),
    "__le__": ("less_equal", False),
    "__gt__": ("greater", False),
    "__ge__": ("greater_equal", False),
}
_FAST_OPERANDS = (int, float, bool, complex, PjrtArray)
_operator_jitted: dict[str, Any] = {}  # method name -> its FastJitted (tests read the counters)


def _fast_operator(method_name: str, function_name: str, reflected: bool) -> Any:
    function = getattr(rnp, function_name)
    slow = getattr(PjrtArray, method_name)  # the protocol's method (refimpl.Array)

    def apply(a: Any, b: Any) -> Any:
        return function(b, a) if reflected else function(a, b)

    apply.__name__ = function_name
    fast = _operator_jitted[method_name] = make_fast_jitted(apply, {"backend": "pjrt"})

    # a 4-bit base's Python int exponent must stay static (integer_pow): the
    # fast path would trace it, and a traced exponent of int4 is refused
    static_exponent = function_name == "power"

    def method(self: Any, other: Any) -> Any:
        if type(other) not in _FAST_OPERANDS or tracing.is_tracing():
            return slow(self, other)
        if static_exponent and self.dtype in dtypes.INT4_DTYPES:
            return slow(self, other)
        self._check_live()
        return fast(self, other)

    method.__name__ = method_name
    method.__doc__ = slow.__doc__
    return method


for _method, (_function, _reflected) in _OPERATORS.items():
    setattr(PjrtArray, _method, _fast_operator(_method, _function, _reflected))

# jit's stages are jax.stages' types (refimpl.stages)
stages.Lowered.register(Lowered)
stages.Compiled.register(Compiled)
stages.ArgInfo.register(ArgInfo)
