"""Devices and ``device_put`` (see docs/semantics.md, "Donation").

The reference backend has ``config.ref_num_devices`` virtual CPU devices
(default 1; ``ri.config.update("ref_num_devices", n)``). They all keep their
buffers in host memory; what they model is *placement*: which device an
array is on, whether it is committed there, and where a computation on
several arrays runs (see ``refimpl.backends.ref.arrays.placement``).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from refimpl import dtypes, tracing, tree_util
from refimpl.backends.ref.arrays import Array, Device, default_device, ref_devices
from refimpl.config import config


def default_backend() -> str:
    return config.backend


def devices(backend: str | None = None) -> list[Any]:
    """The devices of ``backend`` (default: ``config.backend``)."""
    backend = backend or config.backend
    if backend == "ref":
        return ref_devices()
    if backend == "pjrt":
        from refimpl.backends.pjrt import backend as pjrt

        return pjrt.devices()
    raise ValueError(f"devices: unknown backend {backend!r}; use 'ref' or 'pjrt'")


def device_put(
    x: Any, device: Device | None = None, *, donate: bool = False, may_alias: bool | None = None
) -> Any:
    """Place every leaf of the pytree ``x`` on ``device``.

    With a ``device``, the results are committed to it. Without one, an
    ``Array`` keeps its device and commitment, and NumPy arrays and Python
    scalars go to the default device, uncommitted (a Python scalar stays
    weakly typed).

    ``donate`` and ``may_alias`` decide about buffers (SPEC table):

    ====================  ===============================================
    may_alias, donate     result for an ``Array`` leaf
    ====================  ===============================================
    True,  True           ``ValueError``
    True,  False          ``x`` itself if already placed there, else a copy
    False, True           ``x``'s buffer moved (or copied to another device);
                          ``x`` deleted
    False, False          always a fresh buffer; ``x`` not deleted
    None,  True           as (False, True)
    None,  False          as (True, False)
    ====================  ===============================================

    NumPy arrays and Python scalars are always copied and never changed.
    A deleted array raises the deleted-array error whatever the flags.
    Inside a trace, ``device_put`` returns tracers unchanged.
    """
    if may_alias is not None and not isinstance(may_alias, bool):
        raise TypeError(f"device_put: may_alias must be True, False or None, got {may_alias!r}")
    if not isinstance(donate, bool):
        raise TypeError(f"device_put: donate must be a bool, got {donate!r}")
    if may_alias and donate:
        raise ValueError("device_put: may_alias=True and donate=True cannot both be set")
    _check_device(device)
    leaves, tree = tree_util.tree_flatten(x)
    for i, leaf in enumerate(leaves):  # check every leaf before changing any
        tracing.get_aval(leaf, "device_put", f"{i} of x")  # the deleted-array error comes here
    if donate:
        _check_donated_once(leaves)
    alias = may_alias is None or may_alias
    return tree_util.tree_unflatten(
        tree, [_put_leaf(leaf, device, donate, alias) for leaf in leaves]
    )


def _check_donated_once(leaves: list[Any]) -> None:
    """Donating one array twice would delete it before its second use."""
    seen: set[int] = set()
    for i, leaf in enumerate(leaves):
        if isinstance(leaf, Array) or _is_pjrt_array(leaf):
            if id(leaf) in seen:
                raise ValueError(
                    f"device_put: the same array appears twice in x (again at leaf {i}) with "
                    "donate=True; an array can be donated only once"
                )
            seen.add(id(leaf))


def _check_device(device: Any) -> None:
    if device is None or _is_pjrt_device(device):
        return
    if not isinstance(device, Device):
        raise TypeError(f"device_put: device must be a Device or None, got {type(device).__name__}")
    if device not in ref_devices():
        raise ValueError(
            f"device_put: {device} is not one of devices('ref') = {ref_devices()}; "
            'set ri.config.update("ref_num_devices", n) for more virtual devices'
        )


def _put_leaf(x: Any, device: Device | None, donate: bool, alias: bool) -> Any:
    if isinstance(x, tracing.Tracer):
        return x  # placement and donation only concern concrete buffers
    if _goes_to_pjrt(x, device):
        from refimpl.backends.pjrt import backend as pjrt

        return pjrt.put_leaf(x, device, donate, alias)
    if isinstance(x, Array):
        return _put_array(x, device, donate, alias)
    aval = tracing.get_aval(x, "device_put", "x")
    value = tracing.concrete_value(x, aval)
    weak = dtypes.weak_type_of_value(x) if dtypes.is_python_scalar(x) else aval.weak_type
    target, committed = (device, True) if device is not None else (default_device(), False)
    return Array(np.array(value, order="C", copy=True), weak, target, committed)


# PJRT devices and arrays are handled by refimpl.backends.pjrt.backend (loaded only when used).


def _is_pjrt_device(device: Any) -> bool:
    pjrt = sys.modules.get("refimpl.backends.pjrt.backend")
    return pjrt is not None and not isinstance(device, Device) and pjrt.is_pjrt_device(device)


def _is_pjrt_array(x: Any) -> bool:
    pjrt = sys.modules.get("refimpl.backends.pjrt.backend")
    return pjrt is not None and pjrt.is_pjrt_array(x)


def _goes_to_pjrt(x: Any, device: Any) -> bool:
    """A PJRT target device, a PJRT array kept where it is, or a host value put on
    the default device while the PJRT backend is the default."""
    if device is not None:
        return _is_pjrt_device(device)
    return _is_pjrt_array(x) or (config.backend == "pjrt" and not isinstance(x, Array))


def _put_array(x: Array, device: Device | None, donate: bool, alias: bool) -> Array:
    target, committed = (device, True) if device is not None else (x.device, x.committed)
    if donate:
        if target == x.device:  # same memory space: the buffer itself moves over
            buffer = x.take_buffer("device_put")
        else:  # another device: a transfer is a copy, then x is gone
            buffer = np.array(x._value(), copy=True)
            x.mark_donated("device_put")
        return Array(buffer, x.weak_type, target, committed)
    if alias and (target, committed) == (x.device, x.committed):
        return x
    # Arrays never share a buffer (so donating one cannot change another).
    return Array(np.array(x._value(), copy=True), x.weak_type, target, committed)
