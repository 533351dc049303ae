"""The reference array: a NumPy buffer plus ownership and placement state.

An ``Array`` owns its buffer (always C-contiguous, never a view of another
array's memory, never shared with another ``Array``) so that deletion and
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

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from refimpl import dtypes, tracing
from refimpl.array_ops import ArrayOps
from refimpl.config import config
from refimpl.core import ShapedArray


class Device:
    """A virtual device of the reference backend (``ref_num_devices`` of them)."""

    __slots__ = ("id", "platform")

    def __init__(self, id: int, platform: str = "ref") -> None:
        self.id = id
        self.platform = platform

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self.id}, platform={self.platform!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Device) and other.id == self.id and other.platform == self.platform

    def __hash__(self) -> int:
        return hash((self.id, self.platform))


def ref_devices() -> list[Device]:
    return [Device(i) for i in range(config.ref_num_devices)]


def default_device() -> Device:
    return Device(0)


class Array(ArrayOps):
    """A concrete array of the reference backend."""

    __slots__ = ("_buffer", "aval", "device", "committed", "_deleted", "_donated_to")
    __array_priority__ = 100

    def __init__(
        self,
        buffer: np.ndarray,
        weak_type: bool = False,
        device: Device | None = None,
        committed: bool = False,
    ) -> None:
        if not (buffer.flags.owndata and buffer.flags.c_contiguous):
            buffer = np.array(buffer, order="C", copy=True)
        buffer.flags.writeable = False
        self._buffer: np.ndarray | None = buffer
        self.aval = ShapedArray(buffer.shape, buffer.dtype, weak_type)
        self.device = device if device is not None else default_device()
        self.committed = committed
        self._deleted = False
        self._donated_to: str | None = None

    # -- protocol --

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    weak_type = property(lambda self: self.aval.weak_type)
    ndim = property(lambda self: self.aval.ndim)
    size = property(lambda self: self.aval.size)

    def devices(self) -> set[Device]:
        return {self.device}

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

        The caller becomes the only owner of the memory (e.g. a new Array on
        the same device), so the buffer is still never shared by two Arrays.
        """
        buffer = self._value()
        self.mark_donated(function_name)
        return buffer

    def block_until_ready(self) -> Array:
        self._value()
        return self

    def unsafe_buffer_pointer(self) -> int:
        return int(self._value().ctypes.data)

    def _value(self) -> np.ndarray:
        """The live buffer; the deleted-array error if there is none."""
        if self._buffer is None:
            raise RuntimeError(self._deleted_message())
        return self._buffer

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
        return value

    # -- Python conversions of concrete values --

    def __bool__(self) -> bool:
        return bool(self._value())

    def __int__(self) -> int:
        return int(self._value())

    def __float__(self) -> float:
        return float(self._value())

    def __complex__(self) -> complex:
        return complex(self._value())

    def __index__(self) -> int:
        if not dtypes.is_integer(self.dtype) or self.ndim != 0:
            raise TypeError("only integer scalar arrays can be converted to a scalar index")
        return int(self._value())

    def item(self) -> Any:
        return self._value().item()

    def tolist(self) -> Any:
        return self._value().tolist()

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        self._value()
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __repr__(self) -> str:
        if self._buffer is None:
            raise RuntimeError(self._deleted_message())
        body = np.array2string(self._buffer, separator=", ", prefix="Array(")
        weak = ", weak_type=True" if self.weak_type else ""
        return f"Array({body}, dtype={self.dtype.name}{weak})"

    def __str__(self) -> str:
        return str(self._value())

    def __format__(self, spec: str) -> str:
        if self.ndim == 0:
            return format(self._value().item(), spec)
        return format(str(self), spec)

    __hash__ = None  # arrays are unhashable, like NumPy's and JAX's


def _checks_deletion(method: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap an operator so a deleted array raises its own error first.

    Without this, the error would depend on how far the numpy layer gets
    before it reads the value; with it, ``x + 1``, ``x[0]``, ``x.T`` all say
    the same thing.
    """

    @functools.wraps(method)
    def checked(self: Array, *args: Any, **kwargs: Any) -> Any:
        if self._buffer is None:
            raise RuntimeError(self._deleted_message())
        return method(self, *args, **kwargs)

    return checked


for _name, _member in vars(ArrayOps).items():
    if _name in vars(Array):
        continue
    if isinstance(_member, property):
        setattr(Array, _name, property(_checks_deletion(_member.fget)))
    elif callable(_member):
        setattr(Array, _name, _checks_deletion(_member))


def _aval_of_array(array: Array) -> ShapedArray:
    if array._buffer is None:
        raise RuntimeError(array._deleted_message())
    return array.aval


tracing.register_array_type(Array, _aval_of_array, Array._value)


def placement(
    args: Sequence[Any], labels: Sequence[str] | None = None, where: str = "a computation"
) -> tuple[Device, bool]:
    """Where a computation on ``args`` runs: (device, committed).

    Committed inputs fix the device, and the results are committed to it; two
    committed inputs on different devices are a ``ValueError`` naming both.
    Uncommitted inputs follow the committed ones. With no committed input the
    computation runs on the default device and its results are uncommitted.
    """
    first: tuple[str, Array] | None = None
    for index, arg in enumerate(args):
        if not (isinstance(arg, Array) and arg.committed):
            continue
        label = labels[index] if labels is not None else f"at position {index}"
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
