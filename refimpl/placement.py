"""Devices and ``device_put`` (see docs/semantics.md, "Donation")."""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl import dtypes, tracing, tree_util
from refimpl.arrays import Array, Device, default_device, ref_devices
from refimpl.config import config


def default_backend() -> str:
    return config.backend


def devices(backend: str | None = None) -> list[Any]:
    backend = backend or config.backend
    if backend == "ref":
        return ref_devices()
    if backend == "pjrt":
        from refimpl import pjrt

        return pjrt.devices()
    raise ValueError(f"devices: unknown backend {backend!r}; use 'ref' or 'pjrt'")


def device_put(
    x: Any, device: Device | None = None, *, donate: bool = False, may_alias: bool | None = None
) -> Any:
    """Place every leaf of ``x`` on ``device`` (committed) or the default device."""
    if may_alias and donate:
        raise ValueError("device_put: may_alias=True and donate=True cannot both be set")
    if device is not None and not isinstance(device, Device):
        raise TypeError(f"device_put: device must be a Device, got {type(device).__name__}")
    if device is not None and device not in ref_devices():
        raise ValueError(f"device_put: {device} is not one of devices('ref')")
    return tree_util.tree_map(lambda leaf: _put_leaf(leaf, device, donate, may_alias), x)


def _put_leaf(x: Any, device: Device | None, donate: bool, may_alias: bool | None) -> Array:
    aval = tracing.get_aval(x, "device_put", 0)  # the deleted-array error comes from here
    target = device if device is not None else default_device()
    committed = device is not None
    if isinstance(x, Array):
        alias = may_alias is None or may_alias
        if alias and not donate and x.device == target and x.committed == committed:
            return x
        out = Array(np.array(x._value(), copy=True), x.weak_type, target, committed)
        if donate:
            x.mark_donated("device_put")
        return out
    value = tracing.concrete_value(x, aval)
    weak = dtypes.weak_type_of_value(x) if dtypes.is_python_scalar(x) else aval.weak_type
    return Array(np.array(value, copy=True), weak, target, committed)
