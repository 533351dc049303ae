"""``refimpl.dlpack``: exchanging arrays with other libraries through DLPack.

Export: every refimpl array has ``__dlpack__`` and ``__dlpack_device__``
(``(1, 0)``, the CPU): the capsule describes the array's own memory -- the
reference array's NumPy buffer, the PJRT array's host buffer on the CPU
plugin -- so ``np.from_dlpack(x)`` and ``jax.dlpack.from_dlpack(x)`` see the
same bytes without a copy (``copy=True`` asks for a copy). The consumer must
not write through it: refimpl arrays are immutable. DLPack >= 1.0 consumers
get the read-only flag; older ones (``max_version=None``, which JAX 0.10.2
still sends) cannot be told, and get the memory as it is.

Import: ``from_dlpack(x)`` takes any object with ``__dlpack__`` (a NumPy
array, a JAX array, a torch tensor on the CPU) and returns a reference
array over the same memory (zero-copy); with ``copy=True`` a copy, and with
``backend="pjrt"`` (or ``device=`` a PJRT device) the data is put on that
device (a copy).
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from refimpl import backends
from refimpl.core import ShapedArray

__all__ = ["from_dlpack", "host_memory"]

_CPU = 1  # DLDeviceType kDLCPU


def host_memory(x: Any, writable: bool = False) -> np.ndarray:
    """A NumPy array over ``x``'s own host memory (no copy).

    Read-only unless ``writable`` (for DLPack consumers that cannot be told
    about read-only memory); the returned array keeps ``x`` alive.
    """
    RefArray = backends.get("ref").RefArray
    x._check_live()
    if isinstance(x, RefArray) and not writable:
        return x._value().view()
    nbytes = x.size * x.dtype.itemsize
    if nbytes == 0:
        return np.empty(x.shape, x.dtype)
    if isinstance(x, RefArray):
        pointer = x._value().ctypes.data
    else:
        # Only a CPU device's buffer is host memory; a GPU pointer read here
        # would be a device address (never dereference it on the host).
        platform = getattr(getattr(x, "device", None), "platform", "cpu")
        if platform not in ("cpu", "ref"):
            raise BufferError(
                f"host_memory: the array lives in {platform} device memory, not host memory; "
                "copy it to the host with np.asarray(x)"
            )
        pointer = x.unsafe_buffer_pointer()
    raw = (ctypes.c_char * nbytes).from_address(pointer)
    raw.owner = x  # the memory belongs to x: keep it alive as long as the view
    view = np.frombuffer(raw, dtype=x.dtype).reshape(x.shape)
    view.flags.writeable = writable
    return view


def dlpack_device(x: Any) -> tuple[int, int]:
    x._check_live()
    device = getattr(x, "device", None)
    platform = getattr(device, "platform", "cpu")
    if platform not in ("cpu", "ref"):
        raise BufferError(
            f"__dlpack_device__: arrays on {platform} devices are not exported (refimpl exports "
            "host memory only); copy to the host with np.asarray(x) first"
        )
    return (_CPU, 0)


def to_dlpack(
    x: Any,
    *,
    stream: Any = None,
    max_version: tuple[int, int] | None = None,
    dl_device: Any = None,
    copy: bool | None = None,
) -> Any:
    """The DLPack capsule of ``x`` (``x.__dlpack__``)."""
    dlpack_device(x)
    if dl_device is not None and tuple(dl_device) != (_CPU, 0):
        raise BufferError(f"__dlpack__: cannot export to device {dl_device}, only to the CPU")
    if stream is not None and stream != -1:
        raise BufferError("__dlpack__: the CPU has no streams; pass stream=None")
    if copy:
        view = np.array(host_memory(x), copy=True)
    else:
        legacy = max_version is None or tuple(max_version) < (1, 0)
        view = host_memory(x, writable=legacy)
    if max_version is None:
        return view.__dlpack__()
    return view.__dlpack__(max_version=max_version, copy=False if not copy else None)


def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None, backend: Any = None):
    """A refimpl array over the memory of ``x`` (any ``__dlpack__`` exporter)."""
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"from_dlpack: expected an object with __dlpack__, got {type(x).__name__}")
    host = np.from_dlpack(x, copy=copy)
    if device is not None or backend not in (None, "ref"):
        return backends.device_put(
            np.array(host), device if device is not None else _first(backend)
        )
    if copy or not host.flags.c_contiguous:
        return backends.get("ref").RefArray(np.array(host, order="C", copy=True))
    return _ref_array_over(host)


def _first(backend: str) -> Any:
    return backends.devices(backend)[0]


def _ref_array_over(buffer: np.ndarray) -> Any:
    """A reference array sharing ``buffer`` (the constructor would copy a
    buffer it does not own); read-only, as every reference array."""
    ref_backend = backends.get("ref")
    RefArray = ref_backend.RefArray
    view = buffer.view()
    view.flags.writeable = False
    array = RefArray.__new__(RefArray)
    array._buffer = view
    array.aval = ShapedArray(view.shape, view.dtype, False)
    array.device = ref_backend.default_device()
    array.committed = False
    array._deleted = False
    array._donated_to = None
    return array
