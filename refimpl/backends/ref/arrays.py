"""The reference array: a NumPy buffer plus ownership and placement state.

A ``RefArray`` owns its buffer (always C-contiguous, never a view of another
array's memory, never shared with another array) so that deletion and
donation mean something: a deleted array has dropped its buffer, and any use
of it raises ``RuntimeError`` ("has been deleted", plus "donated to 'f'" when
a call took it). The buffer is kept read-only so that ``np.asarray(a)``
cannot mutate an immutable array; only the interpreter, writing a donated
call's result into it, makes it writable for the duration of that copy.

Placement: every array lives on one virtual device and is *committed* to it
(placed there explicitly by ``device_put(x, device)``, or computed from
committed inputs) or not (it may move to wherever a computation runs).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from refimpl import tracing
from refimpl.array import Array, PositionLabels, placement_rule
from refimpl.config import config
from refimpl.core import ShapedArray


class Device:
    """A virtual device of the reference backend (``ref_num_devices`` of them).

    ``process_index``: the process of a (simulated) multi-process run that
    holds the device. With ``ref_num_processes`` P > 1 the devices are split
    into P contiguous groups (device i belongs to process ``i * P // N``, as
    JAX numbers the devices of a multi-host run); this process is process 0,
    and the other groups stand for devices of processes that do not exist:
    nothing can be placed on them or read from them (:attr:`addressable`).
    """

    __slots__ = ("id", "platform", "process_index")

    def __init__(self, id: int, platform: str = "ref", process_index: int = 0) -> None:
        self.id = id
        self.platform = platform
        self.process_index = process_index

    @property
    def addressable(self) -> bool:
        """Whether this process holds the device's memory (it is process 0)."""
        return self.process_index == 0

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self.id}, platform={self.platform!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Device) and other.id == self.id and other.platform == self.platform

    def __hash__(self) -> int:
        return hash((self.id, self.platform))


def ref_devices() -> list[Device]:
    count, processes = config.ref_num_devices, config.ref_num_processes
    if processes > count:
        raise ValueError(
            f"ref_num_processes={processes} needs at least as many devices, "
            f"but ref_num_devices={count}"
        )
    return [Device(i, "ref", i * processes // count) for i in range(count)]


def default_device() -> Device:
    return Device(0)


class RefArray(Array):
    """A concrete array of the reference backend (its protocol: :class:`refimpl.Array`)."""

    __slots__ = ("_buffer", "aval", "device", "committed", "_deleted", "_donated_to")

    def __init__(
        self,
        buffer: np.ndarray,
        weak_type: bool = False,
        device: Device | None = None,
        committed: bool = False,
        *,
        aval: ShapedArray | None = None,
    ) -> None:
        flags = buffer.flags
        if not (flags.owndata and flags.c_contiguous):
            buffer = np.array(buffer, order="C", copy=True)
        buffer.setflags(write=False)
        self._buffer: np.ndarray | None = buffer
        # ``aval``: the buffer's type, when the caller has it already (an eager
        # result checked against its abstract value), to spare building it again
        if aval is None or not _is_type_of(aval, buffer, weak_type):
            aval = ShapedArray(buffer.shape, buffer.dtype, weak_type)
        self.aval = aval
        self.device = device if device is not None else default_device()
        self.committed = committed
        self._deleted = False
        self._donated_to: str | None = None

    def is_deleted(self) -> bool:
        return self._deleted

    def delete(self) -> None:
        self._buffer = None
        self._deleted = True

    def mark_donated(self, function_name: str) -> None:
        """Delete this array because its buffer was donated to ``function_name``."""
        self.delete()
        self._donated_to = function_name

    def take_buffer(self, function_name: str) -> np.ndarray:
        """Hand this array's buffer over to ``function_name``; this array is deleted.

        The caller becomes the only owner of the memory (e.g. a new array on
        the same device), so the buffer is still never shared by two arrays.
        """
        buffer = self._value()
        self.mark_donated(function_name)
        return buffer

    def block_until_ready(self) -> RefArray:
        self._value()
        return self

    def unsafe_buffer_pointer(self) -> int:
        return int(self._value().ctypes.data)

    def _value(self) -> np.ndarray:
        """The live buffer; the deleted-array error if there is none."""
        if self._buffer is None:
            raise RuntimeError(self._deleted_message())
        return self._buffer

    def _check_live(self) -> None:
        if self._buffer is None:
            raise RuntimeError(self._deleted_message())

    def _deleted_message(self) -> str:
        message = f"Array has been deleted with shape={self.dtype.name}{list(self.shape)}."
        if self._donated_to is not None:
            message += f" It was donated to {self._donated_to!r} and may not be used again."
        return message

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        value = self._value()
        if dtype is not None and np.dtype(dtype) != value.dtype:
            return value.astype(dtype)
        if copy:
            return value.copy()
        # A view, not the buffer itself: NumPy refuses to make a view of a
        # read-only buffer writable, while the owner could be flipped back
        # with setflags(write=True). The view also keeps the buffer's
        # reference count up, which tells donation not to overwrite it.
        return value.view()


def _is_type_of(aval: ShapedArray, buffer: np.ndarray, weak_type: bool) -> bool:
    return aval.shape == buffer.shape and aval.dtype == buffer.dtype and aval.weak_type == weak_type


def _aval_of_array(array: RefArray) -> ShapedArray:
    if array._buffer is None:
        raise RuntimeError(array._deleted_message())
    return array.aval


tracing.register_array_type(RefArray, _aval_of_array, RefArray._value)


def placement(
    args: Sequence[Any], labels: PositionLabels | None = None, where: str = "a computation"
) -> tuple[Device, bool]:
    """Where a computation on ``args`` runs on the reference backend: (device,
    committed), by :func:`refimpl.array.placement_rule` over reference arrays."""
    return placement_rule(args, labels, where, RefArray, default_device)
