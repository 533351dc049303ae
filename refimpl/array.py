"""``refimpl.Array``: the one array type users see, whatever the backend.

Every concrete array (the reference backend's :class:`RefArray`, the PJRT
backend's C++ ``PjrtArray``) is an instance of :class:`Array`, as every JAX
array is a ``jax.Array``; tracers can be registered too (``Array.register``),
so ``isinstance(x, ri.Array)`` holds inside ``jit`` as outside.

The array protocol is written here once (SPEC "Arrays"): operators and
numpy-like methods (from :class:`~refimpl.array_ops.ArrayOps`), Python
conversions, ``repr``/``str``/``format``, and the deletion check that makes a
deleted array raise its own error before anything else. A concrete array
type provides only the storage hooks:

* ``aval`` (a ``ShapedArray``), ``device``, ``committed``;
* ``_value()``: the value as a read-only NumPy array (the host copy or view),
  or the deleted-array ``RuntimeError``;
* ``_check_live()``: None, or the deleted-array ``RuntimeError``;
* ``is_deleted()``, ``delete()``, ``block_until_ready()``,
  ``unsafe_buffer_pointer()``, ``__array__``.

A Python subclass (``RefArray``) inherits the protocol; a C++ type that
cannot subclass a Python class gets it with :func:`install_protocol`.
"""

from __future__ import annotations

import abc
import functools
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

import numpy as np

from refimpl import backends, dtypes, tracing
from refimpl.array_ops import ArrayOps
from refimpl.config import config
from refimpl.sharding import Shard, SingleDeviceSharding

__all__ = ["Array", "as_array", "install_protocol", "is_refimpl_array", "placement_rule"]


def _checks_deletion(method: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap an operator so a deleted array raises its own error first.

    Without this, the error would depend on how far the numpy layer gets
    before it reads the value; with it, ``x + 1``, ``x[0]``, ``x.T`` all say
    the same thing.
    """

    @functools.wraps(method)
    def checked(self: Any, *args: Any, **kwargs: Any) -> Any:
        self._check_live()
        return method(self, *args, **kwargs)

    return checked


class Array(metaclass=abc.ABCMeta):
    """A refimpl array (``isinstance`` holds for every backend's arrays)."""

    __slots__ = ("__weakref__",)
    __array_priority__ = 100
    __hash__ = None  # type: ignore[assignment]  # unhashable, like NumPy's and JAX's

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    weak_type = property(lambda self: self.aval.weak_type)
    ndim = property(lambda self: self.aval.ndim)
    size = property(lambda self: self.aval.size)
    # JAX's name for ``committed`` (its arrays' attribute; JAX's tests read it)
    _committed = property(lambda self: self.committed)

    if TYPE_CHECKING:
        # every backend's array type has a device; indexing and copy are
        # installed from ArrayOps below: mypy sees neither
        device: Any

        def __getitem__(self, index: Any) -> Any: ...

        def copy(self) -> Any: ...

    def devices(self) -> set[Any]:
        return {self.device}

    @property
    def sharding(self) -> Any:
        """Where the array lives: a ``SingleDeviceSharding`` of its device."""
        return SingleDeviceSharding(self.device)

    @property
    def is_fully_replicated(self) -> bool:
        """Whether every device holds the whole value (its sharding's answer)."""
        return bool(self.sharding.is_fully_replicated)

    @property
    def is_fully_addressable(self) -> bool:
        """Whether this process holds every piece (always, in one process)."""
        return bool(self.sharding.is_fully_addressable)

    @property
    def addressable_shards(self) -> list[Shard]:
        """The blocks this process holds: for an array on one device, one
        ``Shard`` whose ``data`` is the array itself (as a JAX array on one
        device), its index the whole array."""
        return [Shard(self, self.device, (slice(None),) * self.ndim, 0)]

    @property
    def global_shards(self) -> list[Shard]:
        """Every block of the array in all processes: the addressable ones (one
        process)."""
        return self.addressable_shards

    def addressable_data(self, index: int) -> Any:
        """The data of the ``index``-th addressable shard (the array itself for
        an array on one device; the deleted-array error for a deleted array)."""
        self._check_live()
        return self.addressable_shards[index].data

    # JAX's asynchronous-dispatch queries: refimpl computes every value before
    # the call that makes it returns, so the value is always ready.

    def is_ready(self) -> bool:
        """Whether the value is computed: always True (the deleted-array error
        for a deleted array)."""
        self._check_live()
        return True

    def copy_to_host_async(self) -> None:
        """Start copying the value to the host: nothing to wait for in refimpl
        (the deleted-array error for a deleted array)."""
        self._check_live()

    def on_device_size_in_bytes(self) -> int:
        """Bytes the value occupies on its device: one element size each (a
        4-bit element takes a byte, as on XLA's CPU)."""
        self._check_live()
        return int(self.size) * int(self.dtype.itemsize)

    def to_device(self, device: Any, *, stream: Any = None) -> Any:
        """A copy of the array on ``device`` (a device or a sharding): the
        array API's spelling of ``device_put``; a ``stream`` is JAX's
        ``NotImplementedError``."""
        if stream is not None:
            raise NotImplementedError("stream argument of array.to_device()")
        return backends.device_put(self, device)

    def clone(self) -> Any:
        """A new array of the same value (``jax.Array.clone``)."""
        return self.copy()

    @abc.abstractmethod
    def _value(self) -> np.ndarray:
        """The value as a read-only NumPy array, or the deleted-array error."""

    @abc.abstractmethod
    def _check_live(self) -> None:
        """None, or the deleted-array ``RuntimeError``."""

    # -- Python conversions of concrete values --

    def __bool__(self) -> bool:
        return bool(self._value())

    def _check_scalar(self) -> None:
        # JAX 0.10.2 refuses any non-0-d array, a (1,) one too (NumPy only
        # deprecates that), in its words -- before a deleted array's error, as JAX
        if self.ndim != 0:
            raise TypeError(
                f"Only scalar arrays can be converted to Python scalars; got arr.ndim={self.ndim}"
            )

    def __int__(self) -> int:
        self._check_scalar()
        return int(self._value())

    def __float__(self) -> float:
        self._check_scalar()
        return float(self._value())

    def __complex__(self) -> complex:
        self._check_scalar()
        return complex(self._value())

    def __index__(self) -> int:
        self._check_live()
        # int4/uint4 are not NumPy integers: JAX 0.10.2 refuses them as indices too
        if not dtypes.is_integer(self.dtype) or self.dtype in dtypes.INT4_DTYPES or self.ndim:
            # JAX 0.10.2's words (its tests match them, case and all)
            raise TypeError("Only integer scalar arrays can be converted to a scalar index.")
        return int(self._value())

    def item(self, *args: Any) -> Any:
        """One element as a Python scalar: ``item()`` of a size-1 array, else
        ``item(flat_index)`` or ``item(i, j, ...)`` / ``item((i, j, ...))``,
        as NumPy (and JAX) read them."""
        return self._value().item(*args)

    def tolist(self) -> Any:
        return self._value().tolist()

    def tobytes(self, order: Literal["C", "F", "A", "K"] = "C") -> bytes:
        return self._value().tobytes(order)

    def __len__(self) -> int:
        self._check_live()
        if self.ndim == 0:
            raise TypeError("len() of unsized object")
        length: int = self.shape[0]  # shape is an untyped property
        return length

    def __repr__(self) -> str:
        if self.size == 0:  # as JAX 0.10.2 (and NumPy): an empty array names its shape
            body = f"[], shape={tuple(self.shape)}"
        else:
            body = np.array2string(self._value(), separator=", ", prefix="Array(")
        weak = ", weak_type=True" if self.weak_type else ""
        return f"Array({body}, dtype={self.dtype.name}{weak})"

    def __str__(self) -> str:
        return str(self._value())

    def __format__(self, spec: str) -> str:
        if self.ndim == 0:
            return format(self._value().item(), spec)
        return format(str(self), spec)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickling, as ``jax.Array``'s: the NumPy value and the weak type;
        unpickled, the array is put on the default device of the backend in
        effect, uncommitted (a deleted array is the deleted-array error)."""
        return (_unpickle_array, (np.array(self._value()), bool(self.weak_type)))


def _unpickle_array(value: np.ndarray, weak_type: bool) -> Any:
    # the default backend's put of a reference array (device None: uncommitted)
    default = backends.get(config.backend)
    return default.put_leaf(as_array(value, weak_type), None, False, False)


# The operators and numpy-like methods, each behind the deletion check.
for _name, _member in vars(ArrayOps).items():
    if _name in ("__slots__", "__module__", "__doc__", "__hash__", "__qualname__"):
        continue
    if isinstance(_member, property):
        assert _member.fget is not None  # every ArrayOps property has a getter
        setattr(Array, _name, property(_checks_deletion(_member.fget)))
    elif callable(_member):
        setattr(Array, _name, _checks_deletion(_member))

# What install_protocol copies onto a type that cannot inherit from Array.
_PROTOCOL = {
    name: member
    for name, member in vars(Array).items()
    if name not in ("__slots__", "__module__", "__doc__", "__weakref__", "__abstractmethods__")
    and not name.startswith("_abc_")
}


# Members that ``object`` gives every type, which the protocol must replace.
_REPLACED: tuple[str, ...] = (
    "__eq__",
    "__ne__",
    "__lt__",
    "__le__",
    "__gt__",
    "__ge__",
    "__hash__",
    "__repr__",
)
_REPLACED += ("__str__", "__format__", "__reduce__")


def install_protocol(cls: type) -> None:
    """Give ``cls`` (a C++ array type, which cannot subclass a Python class) the
    protocol of :class:`Array`, and register it as one. What ``cls`` defines
    itself (its storage hooks, faster C++ getters) is kept."""
    own = vars(cls)
    for name, member in _PROTOCOL.items():
        if name in own and name not in _REPLACED:
            continue
        setattr(cls, name, member)
    Array.register(cls)


# A tracer stands for an array inside a transformation: user code that checks
# isinstance(x, ri.Array) behaves the same traced and not, as with jax.Array.
Array.register(tracing.Tracer)


class PositionLabels(Protocol):
    """The names of a computation's operands by position, for placement
    errors: a sequence of strings, or an object that makes one on demand."""

    def __getitem__(self, index: int, /) -> str: ...


def placement_rule(
    args: Sequence[Any],
    labels: PositionLabels | None,
    where: str,
    array_type: type[Any],
    default_device: Callable[[], Any],
) -> tuple[Any, bool]:
    """Where a computation on ``args`` runs: (device, committed). The one rule
    for every backend (SPEC "Placement"), over the arrays of ``array_type``.

    Committed inputs fix the device, and the results are committed to it; two
    committed inputs on different devices are a ``ValueError`` naming both.
    Uncommitted inputs follow the committed ones. With no committed input the
    computation runs on ``default_device()`` and its results are uncommitted.
    Values of other types (NumPy data, scalars, arrays of another backend)
    are copied to wherever it runs.
    """
    first: tuple[str, Any] | None = None
    for index, arg in enumerate(args):
        if not (isinstance(arg, array_type) and arg.committed):
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


def is_refimpl_array(value: Any) -> bool:
    """A tracer or a concrete refimpl array (not NumPy data, not a Python scalar)."""
    if isinstance(value, (np.ndarray, np.generic, tracing.TypedScalar)):
        return False
    return tracing.is_array_like(value) and not dtypes.is_python_scalar(value)


def as_array(value: Any, weak_type: bool | None = None) -> Any:
    """``value`` as a refimpl array: tracers and refimpl arrays pass through;
    NumPy data, Python scalars and TypedScalars become a concrete ``Array`` of
    the reference backend (its ``RefArray``, reached through the registry:
    the backends sit above this module), then, outside a staging trace, moved
    to ``config.backend``'s default device, uncommitted (JAX's arrays of host
    data are on its default device); inside one it is a program constant.

    Used on results that needed no primitive (``rnp.positive(np_array)``), so
    every public function returns a refimpl array, as jax.numpy does.
    """
    if is_refimpl_array(value):
        return value
    aval = tracing.get_aval(value, "asarray", 0)
    weak = aval.weak_type if weak_type is None else weak_type
    # Inside a staging trace the copy becomes a constant of the program: one
    # copy per NumPy object and trace, as JAX's one constant per object (a
    # closed-over NumPy weight used by every layer is kept once, not per use).
    builder = tracing.current_builder() if isinstance(value, np.ndarray) else None
    if builder is not None:
        memo = _copies.get(builder)
        if memo is None:
            memo = _copies[builder] = {}
        hit = memo.get((id(value), weak))
        if hit is not None and hit[0] is value:
            return hit[1]
    make = backends.get("ref").RefArray
    out = make(np.array(tracing.concrete_value(value, aval), copy=True), weak)
    if builder is not None:
        assert memo is not None  # found or made above for this builder
        memo[(id(value), weak)] = (value, out)
        return out
    name = config._values["backend"]
    if name != "ref" and tracing.current_builder() is None:
        # outside a staging trace, host data lands on the default device of the
        # default backend, as JAX's does (and as primitives on it run there)
        return backends.get(name).put_leaf(out, None, False, False)
    return out


# staging trace -> {(id(NumPy array), weak): (the array, its copy)}
_copies: weakref.WeakKeyDictionary[Any, dict[tuple[int, bool], tuple[Any, Any]]] = (
    weakref.WeakKeyDictionary()
)
