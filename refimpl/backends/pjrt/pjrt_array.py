"""The PJRT array: a device buffer of the PJRT backend plus ownership and placement.

It follows the same protocol as the reference ``Array`` (SPEC "Arrays"):
``shape``, ``dtype``, ``weak_type``, ``device``, ``is_deleted``/``delete``,
``block_until_ready``, ``unsafe_buffer_pointer``, ``__array__``, operators
and indexing. The differences are where the data lives:

* the buffer is a ``refimpl._pjrt.Buffer`` in the plugin's memory;
  ``np.asarray(a)`` copies it to the host once and keeps that read-only copy
  (a PJRT buffer never changes, it can only be deleted);
* operators and ``lax`` functions on PJRT arrays run on the device: each
  primitive applied eagerly is compiled once (per primitive, params and
  operand types) into a one-equation program and executed there (see
  ``refimpl.backends.pjrt.backend.eager_dispatch``).

A later C++ type replaces this class (the fast path); everything else makes
PJRT arrays through ``refimpl.backends.pjrt.backend.wrap_buffer`` only, so that switch is one
function.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from refimpl import dtypes, tracing
from refimpl.array_ops import ArrayOps
from refimpl.core import ShapedArray


class PjrtArray(ArrayOps):
    """A concrete array of the PJRT backend."""

    __slots__ = ("_buffer", "aval", "device", "committed", "_donated_to", "_host")
    __array_priority__ = 100

    def __init__(self, buffer: Any, weak_type: bool, device: Any, committed: bool) -> None:
        self._buffer = buffer
        self.aval = ShapedArray(tuple(buffer.shape), np.dtype(buffer.dtype), bool(weak_type))
        self.device = device
        self.committed = committed
        self._donated_to: str | None = None
        self._host: np.ndarray | None = None  # the host copy, made on first read

    # -- protocol --

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    weak_type = property(lambda self: self.aval.weak_type)
    ndim = property(lambda self: self.aval.ndim)
    size = property(lambda self: self.aval.size)

    def devices(self) -> set[Any]:
        return {self.device}

    def is_deleted(self) -> bool:
        # PJRT deletes a donated buffer itself when a call aliases it
        return self._buffer is None or self._buffer.is_deleted()

    def delete(self) -> None:
        if self._buffer is not None:
            if not self._buffer.is_deleted():
                self._buffer.delete()
            self._buffer = None  # drop the handle: the live-buffer count goes down
        self._host = None

    def mark_donated(self, function_name: str) -> None:
        """Delete this array because its buffer was donated to ``function_name``."""
        self.delete()
        self._donated_to = function_name

    def take_buffer(self, function_name: str) -> Any:
        """Hand this array's buffer over to ``function_name``; this array is deleted.

        The caller becomes the only owner of the buffer (e.g. a new array on
        the same device), so a buffer is never shared by two arrays.
        """
        buffer = self.buffer()
        self._buffer = None
        self._host = None
        self._donated_to = function_name
        return buffer

    def buffer(self) -> Any:
        """The live ``refimpl._pjrt.Buffer``; the deleted-array error if there is none."""
        if self._buffer is None or self._buffer.is_deleted():
            raise RuntimeError(self._deleted_message())
        return self._buffer

    def block_until_ready(self) -> PjrtArray:
        self.buffer().block_until_ready()
        return self

    def unsafe_buffer_pointer(self) -> int:
        return int(self.buffer().unsafe_buffer_pointer())

    def on_device_size_in_bytes(self) -> int:
        return int(self.buffer().on_device_size())

    def _value(self) -> np.ndarray:
        """The value on the host (copied from the device once, then kept)."""
        buffer = self.buffer()
        if self._host is None:
            host = buffer.to_numpy()
            host.flags.writeable = False
            self._host = host
        return self._host

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
        self.buffer()
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __repr__(self) -> str:
        body = np.array2string(self._value(), separator=", ", prefix="Array(")
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
    """Wrap an operator so a deleted array raises its own error first."""

    @functools.wraps(method)
    def checked(self: PjrtArray, *args: Any, **kwargs: Any) -> Any:
        self.buffer()
        return method(self, *args, **kwargs)

    return checked


for _name, _member in vars(ArrayOps).items():
    if _name in vars(PjrtArray):
        continue
    if isinstance(_member, property):
        setattr(PjrtArray, _name, property(_checks_deletion(_member.fget)))
    elif callable(_member):
        setattr(PjrtArray, _name, _checks_deletion(_member))


def _aval_of_array(array: PjrtArray) -> ShapedArray:
    array.buffer()  # the deleted-array error
    return array.aval


tracing.register_array_type(PjrtArray, _aval_of_array, PjrtArray._value)
