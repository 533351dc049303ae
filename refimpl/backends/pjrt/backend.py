"""The PJRT backend, Python half: ``jit(backend="pjrt")`` on the native runtime.

``refimpl.transforms.jit`` traces and caches a Program per call signature,
exactly as for the reference backend; this module runs such a cache entry on
a PJRT device:

1. **lower** the Program to a StableHLO module (``refimpl.backends.pjrt.lowering``), with
   ``tf.aliasing_output`` on the donated inputs that the donation plan
   aliases to an output;
2. **serialize** it as a portable artifact for the plugin's StableHLO
   version and **compile** it for the device the call runs on (the compiled
   executables are kept in the cache entry, one per device);
3. **execute** it on the arguments' buffers: PJRT arrays are passed as they
   are, NumPy arrays, Python scalars and reference Arrays are copied to the
   device first;
4. carry out **donation** (SPEC "Donation", the same rules as the reference
   backend): PJRT deletes each aliased input itself; every other donated
   array is deleted here, after a successful call, and all of them remember
   the function they were donated to.

Placement follows ``refimpl.backends.ref.arrays.placement``: committed PJRT arrays fix the
device (two different ones are a ``ValueError``), otherwise the call runs on
the default device (device 0) and its results are uncommitted.

Outputs become arrays through :func:`wrap_buffer` only, so that a C++ array
type can replace ``refimpl.backends.pjrt.pjrt_array.PjrtArray`` by changing one function.
The C++ fast path (a signature cache in C++) is not here yet:
:func:`make_fast_jitted` returns None and every call goes through ``Jitted``.

Eager operations on PJRT arrays (``x + 1`` outside ``jit``) run on the device
too: :func:`eager_dispatch` jits each primitive once per params and runs it.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from refimpl import dtypes, tracing, tree_util
from refimpl.backends.pjrt import lowering
from refimpl.backends.pjrt import runtime as pjrt_runtime
from refimpl.backends.pjrt.pjrt_array import PjrtArray
from refimpl.backends.ref import eager
from refimpl.core import ShapedArray
from refimpl.transforms import donation

__all__ = [
    "Compiled",
    "Lowered",
    "PjrtArray",
    "default_device",
    "devices",
    "eager_dispatch",
    "execute",
    "lower",
    "make_fast_jitted",
    "put_leaf",
    "to_device",
    "wrap_buffer",
]


# --- client and devices ---------------------------------------------------------------


_client: Any = None
_client_lock = threading.Lock()


def client() -> Any:
    """The process-wide PJRT client (the plugin's default device count).

    Found once: plugin discovery searches the file system, too slow for
    every call. A missing plugin raises here, with the package to install.
    """
    global _client
    if _client is None:
        with _client_lock:
            if _client is None:
                _client = pjrt_runtime.get_client()
    return _client


@functools.cache
def _devices_of(the_client: Any) -> tuple[Any, ...]:
    return tuple(the_client.devices())


def devices() -> list[Any]:
    """The PJRT devices (``ri.devices("pjrt")``): 4 CPU devices with the CPU plugin."""
    return list(_devices_of(client()))


def default_device() -> Any:
    return _devices_of(client())[0]


def is_pjrt_device(device: Any) -> bool:
    native = pjrt_runtime.native_module()
    return isinstance(device, native.Device)


# --- arrays -----------------------------------------------------------------------------


def wrap_buffer(buffer: Any, weak_type: bool, device: Any, committed: bool) -> PjrtArray:
    """The one place a PJRT buffer becomes a user-visible array."""
    return PjrtArray(buffer, weak_type, device, committed)


def to_device(value: np.ndarray, device: Any) -> Any:
    """A new device buffer holding a copy of the host array ``value``."""
    return client().buffer_from_numpy(np.asarray(value, order="C"), _index_of(device))


def _index_of(device: Any) -> int:
    return _devices_of(client()).index(device)


def placement(args: Sequence[Any], labels: Sequence[str], where: str) -> tuple[Any, bool]:
    """Where a computation on ``args`` runs on PJRT: (device, committed).

    The rule of ``refimpl.backends.ref.arrays.placement``: committed PJRT arrays fix the
    device and the results are committed to it; two committed arrays on
    different devices are a ``ValueError`` naming both. Everything else
    (uncommitted PJRT arrays, NumPy arrays, scalars, reference Arrays, which
    live on another backend) follows.
    """
    first: tuple[str, PjrtArray] | None = None
    for label, arg in zip(labels, args, strict=True):
        if not (isinstance(arg, PjrtArray) and arg.committed):
            continue
        if first is None:
            first = (label, arg)
        elif arg.device != first[1].device:
            raise ValueError(
                f"Received incompatible devices for {where}: argument {first[0]} "
                f"{first[1].aval.str_short()} is committed to {first[1].device} and argument "
                f"{label} {arg.aval.str_short()} is committed to {arg.device}. Move one of them "
                "with device_put(x, device)."
            )
    if first is not None:
        return first[1].device, True
    return default_device(), False


def _input_buffer(leaf: Any, aval: ShapedArray, device: Any) -> Any:
    """The device buffer to pass for one argument leaf (copied there if needed)."""
    if isinstance(leaf, PjrtArray):
        buffer = leaf.buffer()
        if leaf.device == device:
            return buffer
        # TODO(fast path): an on-device copy; for now through the host
        return to_device(leaf._value(), device)
    return to_device(tracing.concrete_value(leaf, aval), device)


# --- device_put ------------------------------------------------------------------------------


def is_pjrt_array(x: Any) -> bool:
    return isinstance(x, PjrtArray)


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
    if isinstance(x, PjrtArray):
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
    buffer = to_device(tracing.concrete_value(x, aval), target)
    if donate and donation.is_device_array(x) and hasattr(x, "mark_donated"):
        x.mark_donated("device_put")
    return wrap_buffer(buffer, weak, target, committed)


def _copy_on_device(x: PjrtArray) -> Any:
    """A new buffer on ``x``'s device with ``x``'s value: a program returning its
    (not donated) input, for which XLA allocates a fresh output buffer."""
    from refimpl.primitives.elementwise import copy_p

    (out,) = eager_dispatch(copy_p, (x,), [x.aval], [x.aval], {})
    return out.take_buffer("device_put")


# --- compiling ------------------------------------------------------------------------------


@functools.cache
def _compile_options(device_id: int) -> bytes:
    """Serialized CompileOptions: one replica, one partition, on ``device_id``."""
    from jaxlib import xla_client

    options = xla_client.CompileOptions()
    options.device_assignment = xla_client.DeviceAssignment.create(
        np.array([[device_id]], dtype=np.int32)
    )
    return options.SerializeAsString()


class _Executables:
    """What the PJRT backend keeps in a jit cache entry (``entry.executable``):
    the lowered module, its portable artifact, and one executable per device."""

    def __init__(self, module: Any) -> None:
        self.module = module
        self._artifact: bytes | None = None
        self._by_device: dict[int, Any] = {}
        self._lock = threading.Lock()

    def artifact(self) -> bytes:
        if self._artifact is None:
            target = pjrt_runtime.stablehlo_target_version()
            self._artifact = lowering.to_portable_artifact(self.module, target)
        return self._artifact

    def for_device(self, device: Any) -> Any:
        index = _index_of(device)
        executable = self._by_device.get(index)
        if executable is None:
            with self._lock:  # two threads missing at once compile once
                executable = self._by_device.get(index)
                if executable is None:
                    executable = client().compile(self.artifact(), _compile_options(device.id))
                    self._by_device[index] = executable
        return executable


_entry_lock = threading.Lock()


def _executables(entry: Any, name: str) -> _Executables:
    found = entry.executable
    if found is None:
        with _entry_lock:
            found = entry.executable
            if found is None:
                module = lowering.lower_program(
                    entry.program,
                    name=name,
                    aliases=entry.aliases,
                    donated=entry.donation.donated,
                )
                found = entry.executable = _Executables(module)
    return found


# --- running ------------------------------------------------------------------------------


def execute(jitted: Any, entry: Any, call: Any) -> list[PjrtArray]:
    """Run one cache entry on PJRT for one call (``Jitted._execute``'s pjrt branch)."""
    name = jitted.__name__
    return _run(entry, call, name)


def _run(entry: Any, call: Any, name: str) -> list[PjrtArray]:
    device, committed = placement(call.leaves, call.paths, f"jit({name})")
    executable = _executables(entry, name).for_device(device)
    buffers = [
        _input_buffer(leaf, aval, device)
        for leaf, aval in zip(call.leaves, call.signature.avals, strict=True)
    ]
    outs = executable.execute(buffers)
    del buffers  # the temporary copies of host arguments are freed now
    _delete_donated(entry.donation.donated, call.leaves, name)
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
    """The C++ fast-path callable for ``jit(fun, backend="pjrt")`` (``fast_path``);
    None without the native module (the Jitted then reports that when called)."""
    try:
        from refimpl.backends.pjrt import fast_path
    except ImportError:
        return None
    return fast_path.make_fast_jitted(fun, kwargs)


# --- Traced.lower() and Lowered.compile() -------------------------------------------------


class Lowered:
    """A traced function lowered to StableHLO (``Jitted.trace(...).lower()``)."""

    def __init__(self, traced: Any) -> None:
        self._traced = traced
        self._executables = _executables(traced.entry, traced.jitted.__name__)

    def as_text(self) -> str:
        """The StableHLO module, as text."""
        return lowering.module_text(self._executables.module)

    def compile(self) -> Compiled:
        compiled = Compiled(self._traced)
        self._executables.for_device(default_device())  # compile now, not on first call
        return compiled

    def __repr__(self) -> str:
        return f"Lowered({self._traced.jitted.__name__})"


class Compiled:
    """A lowered function compiled for PJRT; call it with arguments of the traced signature."""

    def __init__(self, traced: Any) -> None:
        self._traced = traced

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        traced = self._traced
        name = traced.jitted.__name__
        call = traced.jitted._split_args(args, kwargs)
        expected = traced.call.signature._replace(backend="pjrt")
        if call.signature._replace(backend="pjrt") != expected:
            raise TypeError(
                f"Compiled({name}): called with arguments of another signature than it was "
                f"compiled for: {_describe(call.signature)} instead of "
                f"{_describe(traced.call.signature)}"
            )
        if any(call.signature.donated):
            donation.check_no_repeated_donation(
                call.leaves, call.signature.donated, call.paths, name
            )
        outs = _run(traced.entry, call, name)
        return tree_util.tree_unflatten(traced.entry.out_tree, outs)

    def __repr__(self) -> str:
        return f"Compiled({self._traced.jitted.__name__})"


def _describe(signature: Any) -> str:
    return "(" + ", ".join(a.str_short() for a in signature.avals) + ")"


def lower(traced: Any) -> Lowered:
    """``Traced.lower()``: the StableHLO of the traced Program (whatever its backend)."""
    return Lowered(traced)


# --- eager operations on PJRT arrays ----------------------------------------------------------

_eager_jitted: dict[Any, Any] = {}
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
    key = (primitive, _freeze(params))
    jitted = _eager_jitted.get(key)
    if jitted is None:
        with _eager_lock:
            jitted = _eager_jitted.get(key)
            if jitted is None:
                jitted = _eager_jitted[key] = _jit_primitive(primitive, params)
    outs = jitted(*args)
    return list(outs) if primitive.multiple_results else [outs]


def _jit_primitive(primitive: Any, params: dict[str, Any]) -> Any:
    from refimpl.transforms.jit import Jitted

    def apply(*operands: Any) -> Any:
        return primitive.bind(*operands, **params)

    apply.__name__ = primitive.name
    return Jitted(apply, backend="pjrt")


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


eager.register_eager_dispatcher(PjrtArray, eager_dispatch)
