"""The PJRT array: the C++ type ``refimpl._pjrt.PjrtArray``, the only one.

``device_put`` onto a PJRT device, eager operations on PJRT arrays and every
jitted call on PJRT (fast path or not) return it. It holds one device buffer
plus what the protocol needs (``weak_type``, ``device``, ``committed``,
deletion and donation state); shape and dtype live in an interned C++ type
record, so the fast path makes an output with one allocation.

Its storage hooks (``_value``, ``_check_live``, ``is_deleted``, ``delete``,
``block_until_ready``, ``unsafe_buffer_pointer``, ``__array__``, and the
getters) are C++; the rest of the array protocol (operators, conversions,
``repr``) is :class:`refimpl.Array`'s, installed here once. ``np.asarray(a)``
of a CPU buffer is a read-only view of the device memory, which holds an
external reference: a donation then copies instead of reusing the buffer.
"""

from __future__ import annotations

from typing import Any

from refimpl import pytree, tracing
from refimpl.array import install_protocol
from refimpl.backends.pjrt.runtime import native_module
from refimpl.backends.ref.arrays import RefArray
from refimpl.config import config
from refimpl.core import ShapedArray
from refimpl.transforms.pmap import install_sharding_protocol as _install_sharding_protocol

__all__ = ["PjrtArray", "wrap_buffer"]

_native = native_module()
PjrtArray = _native.PjrtArray


def wrap_buffer(buffer: Any, weak_type: bool, device: Any, committed: bool) -> Any:
    """A PJRT array owning ``buffer`` (a ``refimpl._pjrt.Buffer``) on ``device``."""
    return PjrtArray(buffer, weak_type, device, committed)


def _aval_of_array(array: Any) -> ShapedArray:
    array._check_live()  # the deleted-array error
    return array.aval


# The Python state the C++ side reads (for signatures and ``.aval``), once.
_native._install_fast_path(
    registry=pytree._registry,
    builders=tracing._builders,
    config_values=config._values,
    ref_array_type=RefArray,
    aval_factory=ShapedArray,
)
install_protocol(PjrtArray)
_install_sharding_protocol(PjrtArray)  # .sharding, .addressable_shards (pmap outputs)
tracing.register_array_type(PjrtArray, _aval_of_array, PjrtArray._value)
