"""The reference backend behind the backend protocol (see ``refimpl.backends``).

Arrays are :class:`~refimpl.backends.ref.arrays.RefArray` (NumPy buffers on
``config.ref_num_devices`` virtual devices); a jit cache entry runs in the
NumPy interpreter (``refimpl.backends.ref.execute.execute_ref``).
"""

from __future__ import annotations

import gc
from typing import Any

import numpy as np

from refimpl import dtypes, tracing
from refimpl.backends.ref import eager
from refimpl.backends.ref.arrays import Device, RefArray, default_device, placement, ref_devices
from refimpl.backends.ref.execute import execute_ref
from refimpl.config import config
from refimpl.transforms import block_arrays
from refimpl.transforms.jit import eager_over_mesh
from refimpl.transforms.pmap import ShardedArray
from refimpl.transforms.sharded import MeshArray

__all__ = [
    "RefArray",
    "array_types",
    "default_device",
    "devices",
    "eager",
    "execute",
    "is_device",
    "live_arrays",
    "make_fast_jitted",
    "placement",
    "put_leaf",
]

name = "ref"
# RefArray is also how the layers below the backends make a host array or
# recognise one (``refimpl.array.as_array``, ``ref``, ``dlpack``): they reach
# it as ``backends.get("ref").RefArray``, since they cannot import this package
array_types = (RefArray,)
# how a primitive bound outside any trace runs (Primitive.bind finds it here,
# through the registry); a device array type may add its cached dispatch
# to eager.binders
# (a sharded array's and a pmap output's: a jit over its mesh, its result laid
# out by the sharding rule)
eager.register_eager_binder(MeshArray, eager_over_mesh)
eager.register_eager_binder(ShardedArray, eager_over_mesh)


def devices() -> list[Device]:
    return ref_devices()


def live_arrays() -> list[Any]:
    """The arrays of this backend alive (``jax.live_arrays``): its RefArrays
    are Python objects, found by the garbage collector's list."""
    arrays = (o for o in gc.get_objects() if type(o) is RefArray)
    return block_arrays.live_arrays(arrays, is_device)


def is_device(device: Any) -> bool:
    return isinstance(device, Device)


def check_device(device: Device) -> None:
    devices = ref_devices()
    if device not in devices:
        raise ValueError(
            f"device_put: {device} is not one of devices('ref') = {devices}; "
            'set ri.config.update("ref_num_devices", n) for more virtual devices'
        )
    index = devices[devices.index(device)].process_index
    if index != 0:
        raise ValueError(
            f"device_put: {device} belongs to process {index} (simulated: ref_num_processes="
            f"{config.ref_num_processes}); this process (0) can place data only on its own "
            "devices, ri.local_devices()"
        )


def execute(jitted: Any, entry: Any, call: Any) -> Any:
    """Run one jit cache entry in the NumPy interpreter; the output pytree."""
    return execute_ref(entry, call, jitted.__name__, jitted.keep_unused)


def make_fast_jitted(fun: Any, kwargs: dict[str, Any]) -> None:
    """The reference backend has no separate fast path: ``Jitted`` is it."""


def put_leaf(x: Any, device: Device | None, donate: bool, alias: bool) -> RefArray:
    """``device_put`` of one leaf onto a reference device (the SPEC table).

    ``device=None`` keeps a reference array's device and commitment and puts
    anything else on the default device, uncommitted. An array of another
    backend is copied to the host; donated, it is deleted.
    """
    if isinstance(x, RefArray):
        return _put_array(x, device, donate, alias)
    aval = tracing.get_aval(x, "device_put", "x")
    value = tracing.concrete_value(x, aval)
    weak = dtypes.weak_type_of_value(x) if dtypes.is_python_scalar(x) else aval.weak_type
    target, committed = (device, True) if device is not None else (default_device(), False)
    out = RefArray(np.array(value, order="C", copy=True), weak, target, committed)
    if donate and hasattr(x, "mark_donated"):
        x.mark_donated("device_put")
    return out


def _put_array(x: RefArray, device: Device | None, donate: bool, alias: bool) -> RefArray:
    target, committed = (device, True) if device is not None else (x.device, x.committed)
    if donate:
        if target == x.device:  # same memory space: the buffer itself moves over
            buffer = x.take_buffer("device_put")
        else:  # another device: a transfer is a copy, then x is gone
            buffer = np.array(x._value(), copy=True)
            x.mark_donated("device_put")
        return RefArray(buffer, x.weak_type, target, committed)
    if alias and (target, committed) == (x.device, x.committed):
        return x
    # Arrays never share a buffer (so donating one cannot change another).
    return RefArray(np.array(x._value(), copy=True), x.weak_type, target, committed)
