"""``jax.sharding``'s names: where the pieces of an array live.

A sharded array is its global value plus a :class:`Sharding` that says which
device holds which index block of it (docs/semantics.md, "Sharding"):

* :class:`Sharding`, the base type (``isinstance(x.sharding, Sharding)``, and
  the type annotations of libraries such as optax);
* :class:`SingleDeviceSharding`, the whole array on one device;
* :class:`Mesh` (devices in an n-d grid with named axes), :func:`make_mesh`,
  :func:`set_mesh`/:func:`use_mesh` (the mesh a bare ``PartitionSpec`` means),
  :class:`PartitionSpec` and :class:`NamedSharding` (array axis ``i`` cut
  into as many blocks as the mesh axes ``spec[i]`` have devices; the mesh
  axes the spec does not name replicate each block). A pmap output's is a
  NamedSharding too (over a 1-d mesh named after the pmap's axis, as JAX
  0.10.2, which has no ``PmapSharding`` any more:
  ``refimpl.transforms.pmap.output_sharding``).

The arrays laid out this way are ``refimpl.transforms.sharded.MeshArray``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import functools
import inspect
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from refimpl import backends
from refimpl.config import config

__all__ = [
    "AbstractDevice",
    "AbstractMesh",
    "AxisType",
    "Mesh",
    "NamedSharding",
    "PartitionSpec",
    "P",
    "Sharding",
    "SingleDeviceSharding",
    "get_abstract_mesh",
    "get_mesh",
    "make_mesh",
    "make_single_device_sharding",
    "reshard",
    "set_mesh",
    "use_mesh",
]

#: the memory kind of a sharding given none, as JAX 0.10.2 resolves it on CPU
#: devices (every refimpl device, ref and pjrt, has only this one)
DEFAULT_MEMORY_KIND = "device"


def is_addressable(device: Any) -> bool:
    """Whether this process holds ``device``'s memory (JAX: its
    ``process_index`` is this process's). Every pjrt device is: the client
    lists only its addressable devices. A reference device is unless
    ``ref_num_processes`` gave it to another (simulated) process."""
    return bool(getattr(device, "addressable", True))


class Sharding:
    """Where each piece of an array lives: ``devices_indices_map(shape)`` maps
    each device to the index (a tuple of slices) of the piece it holds."""

    memory_kind: str | None = None

    @property
    def device_set(self) -> set[Any]:
        raise NotImplementedError

    def devices_indices_map(self, shape: tuple[int, ...]) -> dict[Any, tuple]:
        raise NotImplementedError

    @property
    def is_fully_addressable(self) -> bool:
        return all(is_addressable(d) for d in self.device_set)

    @property
    def addressable_devices(self) -> set[Any]:
        return {d for d in self.device_set if is_addressable(d)}

    @property
    def has_addressable_devices(self) -> bool:
        return any(is_addressable(d) for d in self.device_set)

    @property
    def is_fully_replicated(self) -> bool:
        return len(self.device_set) == 1

    @property
    def num_devices(self) -> int:
        return len(self.device_set)

    def addressable_devices_indices_map(self, shape: tuple[int, ...]) -> dict[Any, tuple]:
        index_map = self.devices_indices_map(shape)
        if all(is_addressable(d) for d in index_map):
            return index_map
        return {d: index for d, index in index_map.items() if is_addressable(d)}

    def _device_list(self) -> tuple[Any, ...]:
        """The devices in the order the sharding numbers them (JAX's device assignment)."""
        return tuple(sorted(self.device_set, key=lambda d: d.id))

    def is_equivalent_to(self, other: Sharding, ndim: int) -> bool:
        """JAX's ``Sharding.is_equivalent_to``: whether an array of rank ``ndim``
        is laid out alike by both (their classes and spellings aside, e.g. a
        spec with trailing ``None`` s): the same devices in the same order, each
        holding the same piece, in the same memory kind."""
        devices = self._device_list()
        if devices != other._device_list() or self.memory_kind != other.memory_kind:
            return False
        # every split of a dimension is into a divisor of the device count
        shape = (len(devices),) * ndim

        def pieces(sharding: Sharding) -> dict[Any, tuple]:
            return {
                d: tuple(i.indices(n) if isinstance(i, slice) else i for i, n in zip(idx, shape))
                for d, idx in sharding.devices_indices_map(shape).items()
            }

        return pieces(self) == pieces(other)

    def shard_shape(self, global_shape: tuple[int, ...]) -> tuple[int, ...]:
        """The shape of one device's piece (every piece has the same shape here)."""
        index = next(iter(self.devices_indices_map(global_shape).values()))
        return tuple(
            len(range(*i.indices(n))) if isinstance(i, slice) else 1
            for i, n in zip(index, global_shape)
        )


class Shard:
    """One device's block of a sharded array (``jax.Shard``'s fields):
    ``data`` (an array on ``device``), ``device``, and ``index`` (its place
    in the global array, a tuple of slices), ``replica_id``."""

    __slots__ = ("data", "device", "index", "replica_id")

    def __init__(self, data: Any, device: Any, index: tuple, replica_id: int = 0) -> None:
        self.data, self.device, self.index = data, device, index
        # which copy of a replicated block this is (0 for the first device holding it)
        self.replica_id = replica_id

    def __repr__(self) -> str:
        return f"Shard(device={self.device!r}, index={self.index!r})"


class SingleDeviceSharding(Sharding):
    """The whole array on one device."""

    def __init__(self, device: Any, *, memory_kind: str | None = None) -> None:
        self._device = device
        # JAX resolves "no memory kind" to the device's default one ('device')
        self.memory_kind = DEFAULT_MEMORY_KIND if memory_kind is None else memory_kind

    @property
    def device(self) -> Any:
        return self._device

    @property
    def device_set(self) -> set[Any]:
        return {self._device}

    def devices_indices_map(self, shape: tuple[int, ...]) -> dict[Any, tuple]:
        return {self._device: (slice(None),) * len(shape)}

    def shard_shape(self, global_shape: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(global_shape)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, SingleDeviceSharding) and other._device == self._device

    def __hash__(self) -> int:
        return hash(("SingleDeviceSharding", id(self._device)))

    def __repr__(self) -> str:
        return f"SingleDeviceSharding(device={self._device!r}, memory_kind={self.memory_kind})"


class PartitionSpec(tuple):
    """For each array axis, the mesh axis name(s) it is split over, or None
    (``PartitionSpec('data', None)``)."""

    def __new__(cls, *partitions: Any) -> PartitionSpec:
        return super().__new__(cls, partitions)

    def __repr__(self) -> str:
        # JAX 0.10.2 prints its short name: P('x', None)
        return f"P{tuple.__repr__(self)}"

    def __reduce__(self) -> Any:
        return (PartitionSpec, tuple(self))


#: JAX's short name (``from jax.sharding import PartitionSpec as P``; ``jax.P``).
P = PartitionSpec


class AxisType(enum.Enum):
    """How a mesh axis is partitioned (JAX's names)."""

    Auto = enum.auto()
    Explicit = enum.auto()
    Manual = enum.auto()


class Mesh:
    """Devices laid out in an n-d grid whose axes have names (``jax.sharding.Mesh``).

    ``with mesh:`` (and :func:`set_mesh`) makes it the mesh a bare
    ``PartitionSpec`` refers to (``jit``'s shardings, ``shard_map``)."""

    def __init__(
        self,
        devices: Any,
        axis_names: str | Sequence[str],
        axis_types: Any = None,
    ) -> None:
        self.devices = np.asarray(devices, dtype=object)
        self.axis_names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
        if self.devices.ndim != len(self.axis_names):
            raise ValueError(  # JAX 0.10.2's words, then the names
                "Mesh requires the ndim of its first argument (`devices`) to equal the length "
                "of its second argument (`axis_names`), but got devices.ndim == "
                f"{self.devices.ndim} and len(axis_names) == {len(self.axis_names)} "
                f"(axis_names {self.axis_names})."
            )
        if len(set(self.axis_names)) != len(self.axis_names):
            raise ValueError(f"Mesh: axis names must be distinct, got {self.axis_names}")
        ids = [_device_key(d) for d in self.devices.flat]
        if len(set(ids)) != len(ids):
            raise ValueError(f"Mesh: a device appears twice in devices {list(self.devices.flat)}")
        if axis_types is None:
            axis_types = (AxisType.Auto,) * len(self.axis_names)
        elif isinstance(axis_types, AxisType):
            axis_types = (axis_types,) * len(self.axis_names)
        self.axis_types = tuple(axis_types)
        if len(self.axis_types) != len(self.axis_names) or not all(
            isinstance(t, AxisType) for t in self.axis_types
        ):
            raise ValueError(
                f"Mesh: axis_types must be one AxisType per axis name {self.axis_names}, "
                f"got {axis_types!r}"
            )
        self._entered: list[Any] = []

    @property
    def shape(self) -> dict[str, int]:
        return dict(zip(self.axis_names, self.devices.shape))

    @property
    def axis_sizes(self) -> tuple[int, ...]:
        return tuple(self.devices.shape)

    @property
    def shape_tuple(self) -> tuple[tuple[str, int], ...]:
        return tuple(zip(self.axis_names, self.devices.shape))

    @property
    def size(self) -> int:
        return int(self.devices.size)

    @property
    def empty(self) -> bool:
        return self.devices.size == 0

    @property
    def device_ids(self) -> np.ndarray:
        return np.vectorize(lambda d: getattr(d, "id", 0), otypes=[int])(self.devices)

    @property
    def local_devices(self) -> list[Any]:
        return list(self.devices.flat)

    @property
    def abstract_mesh(self) -> AbstractMesh:
        device = _abstract_device(self.devices.flat[0])
        return AbstractMesh(
            self.axis_sizes, self.axis_names, self.axis_types, abstract_device=device
        )

    def _key(self) -> tuple:
        key = self.__dict__.get("_cached_key")
        if key is None:  # a mesh does not change: computed once (jit's cache keys hash it)
            key = (
                tuple(_device_key(d) for d in self.devices.flat),
                self.devices.shape,
                self.axis_names,
                self.axis_types,
            )
            self.__dict__["_cached_key"] = key
        return key

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Mesh) and (other is self or other._key() == self._key())

    def __hash__(self) -> int:
        return hash(self._key())

    def __enter__(self) -> Mesh:
        self._entered.append(_set_current(self))
        return self

    def __exit__(self, *exc: Any) -> None:
        _set_current(self._entered.pop())

    def __repr__(self) -> str:
        return (
            f"Mesh(axis_sizes={self.axis_sizes}, axis_names={self.axis_names}, "
            f"axis_types={_types_text(self.axis_types)})"
        )

    def __str__(self) -> str:
        # the short form, as JAX prints a mesh inside a NamedSharding
        shape = ", ".join(f"'{n}': {s}" for n, s in self.shape.items())
        return f"Mesh({shape}, axis_types={_types_text(self.axis_types)})"


def _types_text(axis_types: tuple[AxisType, ...]) -> str:
    """``(Auto, Explicit)``: a tuple of axis types as JAX prints it."""
    names = ", ".join(t.name for t in axis_types)
    return f"({names}{',' if len(axis_types) == 1 else ''})"


def _device_key(device: Any) -> tuple:
    return (getattr(device, "platform", None), getattr(device, "id", id(device)))


# The mesh a bare PartitionSpec refers to (set_mesh, ``with mesh:``), per thread.
class _CurrentMesh(threading.local):
    mesh: Any = None


_current = _CurrentMesh()


def _set_current(mesh: Any) -> Any:
    previous = _current.mesh
    _current.mesh = mesh
    return previous


def get_mesh() -> Any:
    """The mesh set by :func:`set_mesh` (or ``with mesh:``), else None."""
    return _current.mesh


def get_abstract_mesh() -> AbstractMesh:
    """The abstract mesh of :func:`get_mesh` (the empty one when none is set)."""
    mesh = _current.mesh
    return EMPTY_MESH if mesh is None else mesh.abstract_mesh


class _MeshSetting:
    """What :func:`set_mesh` returns: the mesh is set already; used as a
    context manager, the previous one comes back at the end of the block."""

    def __init__(self, previous: Any) -> None:
        self._previous = previous

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        _set_current(self._previous)


def set_mesh(mesh: Any) -> _MeshSetting:
    """Make ``mesh`` the current mesh (``jax.set_mesh``), the one a bare
    ``PartitionSpec`` refers to: for good, or for a block as
    ``with set_mesh(mesh):``.

    Args:
        mesh: A ``Mesh``, or None to clear the current one.

    Returns:
        A context manager; leaving its block restores the previous mesh.

    Raises:
        ValueError: ``mesh`` is not a ``Mesh`` or None; called while a
            transformation traces (inside ``jit``, ``grad``, ``vmap``...),
            where JAX 0.10.2 refuses it too (``with mesh:`` is allowed).

    Example:
        >>> import numpy as np, refimpl as ri
        >>> ri.config.update("ref_num_devices", 4)
        >>> mesh = ri.make_mesh((4,), ("x",), devices=ri.devices("ref"))
        >>> with ri.set_mesh(mesh):
        ...     x = ri.device_put(np.arange(8.0), ri.P("x"))
        >>> x.sharding.spec
        P('x',)
    """
    if mesh is not None and not isinstance(mesh, Mesh):  # JAX 0.10.2's class and words
        raise ValueError(f"Expected mesh of type `jax.sharding.Mesh`. Got {type(mesh)}")
    _check_outside_traces("set_mesh")
    return _MeshSetting(_set_current(mesh))


#: tests of whether a transformation traces in this thread (refimpl.tracing,
#: a layer above, installs its own: ``tracing.is_tracing``)
TRACING_TESTS: list[Callable[[], bool]] = []


def _check_outside_traces(name: str) -> None:
    """JAX 0.10.2 refuses to change the current mesh while any transformation
    traces (its ``core.trace_state_clean()``): the mesh is part of the types
    a trace has already given its values."""
    if any(test() for test in TRACING_TESTS):
        raise ValueError(f"`{name}` can only be used outside of `jax.jit`.")


@contextlib.contextmanager
def use_mesh(mesh: Any) -> Iterator[Any]:
    """``with use_mesh(mesh):``: ``mesh`` is the current mesh inside the block
    (the spelling of older JAX releases; :func:`set_mesh` is 0.10.2's)."""
    if not isinstance(mesh, Mesh):
        raise TypeError(f"use_mesh: mesh must be a Mesh, got {type(mesh).__name__}")
    _check_outside_traces("use_mesh")
    previous = _set_current(mesh)
    try:
        yield mesh
    finally:
        _set_current(previous)


def make_mesh(
    axis_shapes: Sequence[int],
    axis_names: Sequence[str],
    axis_types: Any = None,
    *,
    devices: Sequence[Any] | None = None,
) -> Mesh:
    """A mesh of the first ``prod(axis_shapes)`` devices, like ``jax.make_mesh``.

    Args:
        axis_shapes: The size of each mesh axis.
        axis_names: One name per axis.
        axis_types: One ``AxisType`` per axis (or one for all); default
            ``AxisType.Explicit`` for every axis, as JAX 0.10.2.
        devices: The devices to lay out (default: the default backend's).

    Returns:
        A ``Mesh`` of those devices in row-major order.

    Raises:
        ValueError: ``axis_shapes`` and ``axis_names`` differ in length, or
            the mesh needs more devices than there are.

    Example:
        >>> import refimpl as ri
        >>> ri.config.update("ref_num_devices", 4)
        >>> ri.make_mesh((2, 2), ("a", "b"), devices=ri.devices("ref"))
        Mesh(axis_sizes=(2, 2), axis_names=('a', 'b'), axis_types=(Explicit, Explicit))
    """
    shape = tuple(int(n) for n in axis_shapes)
    names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
    if len(shape) != len(names):
        raise ValueError(
            f"make_mesh: axis_shapes {shape} and axis_names {names} must have the same length"
        )
    pool = list(devices) if devices is not None else backends.get(config.backend).devices()
    size = int(np.prod(shape, dtype=np.int64))
    if size > len(pool):
        raise ValueError(
            f"make_mesh: a mesh of shape {shape} needs {size} devices but only {len(pool)} "
            "are available"
            + ('; set ri.config.update("ref_num_devices", n) for more' if devices is None else "")
        )
    grid = np.empty(size, dtype=object)
    grid[:] = pool[:size]
    if axis_types is None:
        axis_types = (AxisType.Explicit,) * len(names)
    return Mesh(grid.reshape(shape), names, axis_types)


@dataclasses.dataclass(frozen=True)
class AbstractDevice:
    """The kind of device an :class:`AbstractMesh` stands for, as JAX 0.10.2's
    ``jax.sharding.AbstractDevice`` (a value: equal when its fields are)."""

    device_kind: str
    num_cores: int | None
    platform: str

    def __repr__(self) -> str:
        return (
            f"AbstractDevice(device_kind={self.device_kind}, num_cores={self.num_cores}, "
            f"platform={self.platform})"
        )


def _abstract_device(device: Any) -> AbstractDevice:
    # refimpl's devices have no device_kind: their platform stands for it ("cpu" on pjrt, as JAX's)
    platform = device.platform
    kind = getattr(device, "device_kind", None) or platform
    return AbstractDevice(kind, getattr(device, "num_cores", None), platform)


class AbstractMesh:
    """A mesh's axis names, sizes and types without devices (the mesh of a
    type's sharding, ``jax.typeof(x).sharding.mesh``); refimpl's arrays have
    the empty one. ``abstract_device`` (None unless given; a concrete mesh's
    gives its devices' kind) takes part in equality, as JAX's."""

    def __init__(
        self,
        axis_sizes: tuple[int, ...] = (),
        axis_names: tuple[str, ...] = (),
        axis_types=None,
        *,
        abstract_device: AbstractDevice | None = None,
    ) -> None:
        self.axis_sizes = tuple(axis_sizes)
        self.axis_names = tuple(axis_names)
        self.axis_types = tuple(axis_types or (AxisType.Auto,) * len(self.axis_names))
        self.abstract_device = abstract_device

    @property
    def shape(self) -> dict[str, int]:
        return dict(zip(self.axis_names, self.axis_sizes))

    @property
    def size(self) -> int:
        return int(np.prod(self.axis_sizes, dtype=np.int64))

    @property
    def empty(self) -> bool:
        return not self.axis_names

    @property
    def are_all_axes_explicit(self) -> bool:
        return not self.empty and all(t == AxisType.Explicit for t in self.axis_types)

    @property
    def are_all_axes_auto(self) -> bool:
        return all(t == AxisType.Auto for t in self.axis_types)

    @property
    def abstract_mesh(self) -> AbstractMesh:
        return self

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, AbstractMesh) and self._key() == other._key()

    def _key(self) -> tuple:
        return (self.axis_sizes, self.axis_names, self.axis_types, self.abstract_device)

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"AbstractMesh({self.axis_sizes}, axis_types={self.axis_types})"


EMPTY_MESH = AbstractMesh()


class NamedSharding(Sharding):
    """An array split over ``mesh`` as ``spec`` names: axis ``i`` of the array
    is cut into as many blocks as the mesh axes ``spec[i]`` have devices
    (the first named axis the major one); each block is held by every device
    whose coordinates along those axes select it, so the mesh axes the spec
    does not name replicate it."""

    def __init__(
        self, mesh: Any, spec: PartitionSpec | None = None, *, memory_kind: str | None = None
    ) -> None:
        if not isinstance(mesh, (Mesh, AbstractMesh)):
            raise TypeError(
                f"NamedSharding: mesh must be a Mesh or AbstractMesh, got {type(mesh).__name__}"
            )
        if spec is not None and not isinstance(spec, (PartitionSpec, tuple, list)):
            raise TypeError(
                f"NamedSharding: spec must be a PartitionSpec, got {type(spec).__name__}"
            )
        self.mesh: Any = mesh  # a Mesh, or an AbstractMesh (a type's sharding)
        self.spec = PartitionSpec() if spec is None else PartitionSpec(*spec)
        # JAX resolves "no memory kind" to the devices' default one ('device');
        # a sharding over an AbstractMesh has no devices and keeps None
        if memory_kind is None and isinstance(mesh, Mesh):
            memory_kind = DEFAULT_MEMORY_KIND
        self.memory_kind = memory_kind
        seen: set[str] = set()
        for entry in self.spec:
            for name in _names(entry):
                if name not in mesh.axis_names:
                    raise ValueError(
                        f"Resource axis: {name} of {self.spec!r} is not found in mesh: "
                        f"{tuple(mesh.axis_names)}."
                    )
                if name in seen:
                    raise ValueError(
                        "A single NamedSharding spec specification can map every mesh axis to "
                        f"at most one positional dimension, but {self.spec!r} has duplicate "
                        f"entries for `{name}`"
                    )
                seen.add(name)

    @property
    def device_set(self) -> set[Any]:
        if isinstance(self.mesh, AbstractMesh):
            raise ValueError("a NamedSharding of an AbstractMesh has no devices")
        return set(self.mesh.devices.flat)

    @property
    def num_devices(self) -> int:
        return self.mesh.size

    def _device_list(self) -> tuple[Any, ...]:
        return tuple(self.mesh.devices.flat)

    @property
    def is_fully_replicated(self) -> bool:
        return self.mesh.size == 1 or all(
            self.mesh.shape[n] == 1 for e in self.spec for n in _names(e)
        )

    def _pieces(self, entry: Any) -> int:
        return int(np.prod([self.mesh.shape[n] for n in _names(entry)], dtype=np.int64))

    def check_shape(self, shape: tuple[int, ...], where: str) -> None:
        """JAX's checks of this sharding against an array of ``shape``: the
        spec is no longer than the rank and each split axis divides evenly."""
        if len(self.spec) > len(shape):
            raise ValueError(
                f"{where}: sharding {self!r} is only valid for values of rank at least "
                f"{len(self.spec)}, but was applied to a value of rank {len(shape)}"
            )
        for axis, entry in enumerate(self.spec):
            pieces = self._pieces(entry)
            if shape[axis] % pieces:
                raise ValueError(
                    f"{where}: sharding {self!r} implies that array axis {axis} is partitioned "
                    f"{pieces} times, but the dimension size is {shape[axis]} (full shape: "
                    f"{tuple(shape)}, per-dimension tiling factors: "
                    f"{[self._pieces(e) for e in self.spec]} should evenly divide the shape)"
                )

    def devices_indices_map(self, shape: tuple[int, ...]) -> dict[Any, tuple]:
        shape = tuple(shape)
        cache = self.__dict__.setdefault("_indices_cache", {})
        cached = cache.get(shape)
        if cached is not None:  # (every sharded call asks again for the same shapes)
            return dict(cached)
        self.check_shape(shape, "devices_indices_map")
        out = {}
        for position in np.ndindex(*self.mesh.devices.shape):
            coords = dict(zip(self.mesh.axis_names, position))
            index: list[Any] = []
            for axis, size in enumerate(shape):
                names = _names(self.spec[axis]) if axis < len(self.spec) else ()
                if not names:
                    index.append(slice(None))
                    continue
                piece, count = 0, 1
                for n in reversed(names):
                    piece += coords[n] * count
                    count *= self.mesh.shape[n]
                step = size // count
                index.append(slice(piece * step, (piece + 1) * step))
            out[self.mesh.devices[position]] = tuple(index)
        if len(cache) < 64:
            cache[shape] = out
        return dict(out)

    def shard_shape(self, global_shape: tuple[int, ...]) -> tuple[int, ...]:
        self.check_shape(tuple(global_shape), "shard_shape")
        return tuple(
            n // self._pieces(self.spec[i]) if i < len(self.spec) else n
            for i, n in enumerate(global_shape)
        )

    def _normal_spec(self) -> tuple:
        # JAX compares P(('a',), 'b') equal to P('a', 'b'): one-name tuples are the name
        return tuple(_names(e) or None for e in self.spec)

    def __eq__(self, other: Any) -> bool:
        return (
            isinstance(other, NamedSharding)
            and other.mesh == self.mesh
            and other._normal_spec() == self._normal_spec()
        )

    def __hash__(self) -> int:
        return hash(("NamedSharding", self.mesh, self._normal_spec()))

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_indices_cache", None)
        return state

    def __repr__(self) -> str:
        # JAX 0.10.2: the mesh in its short form, the memory kind when there is one
        kind = "" if self.memory_kind is None else f", memory_kind={self.memory_kind}"
        return f"NamedSharding(mesh={self.mesh!s}, spec={self.spec!r}{kind})"


def _names(entry: Any) -> tuple[str, ...]:
    """The mesh axis names of one spec entry (None, a name, or a tuple of names)."""
    if entry is None:
        return ()
    if isinstance(entry, (tuple, list)):
        return tuple(n for n in entry if n is not None)
    return (entry,)


def xla_sharding_text(sharding: NamedSharding, ndim: int) -> str:
    """XLA's sharding text (``mhlo.sharding``) for ``sharding`` on an array of
    rank ``ndim``, the partitions numbered as the mesh's devices in row-major
    order: the tile assignment, ``last_tile_dim_replicate`` for the mesh axes
    the spec does not name, ``{replicated}`` when nothing is split."""
    mesh = sharding.mesh
    names = list(mesh.axis_names)
    used: list[str] = []
    tiles: list[int] = []
    for d in range(ndim):
        axes = _names(sharding.spec[d]) if d < len(sharding.spec) else ()
        used += axes
        tiles.append(int(np.prod([mesh.shape[a] for a in axes], dtype=np.int64)))
    unused = [a for a in names if a not in used]
    replicated = int(np.prod([mesh.shape[a] for a in unused], dtype=np.int64))
    if all(t == 1 for t in tiles):
        return "{replicated}"
    partitions = np.arange(mesh.size).reshape(tuple(mesh.shape.values()))
    order = [names.index(a) for a in used + unused]
    shape = tiles + ([replicated] if replicated > 1 else [])
    assignment = partitions.transpose(order).reshape(shape)
    dims = ",".join(str(n) for n in assignment.shape)
    ids = ",".join(str(int(i)) for i in assignment.flat)
    suffix = " last_tile_dim_replicate" if replicated > 1 else ""
    return f"{{devices=[{dims}]{ids}{suffix}}}"


def make_single_device_sharding(device: Any) -> SingleDeviceSharding:
    """``jax.sharding.make_single_device_sharding``: the whole array on ``device``."""
    return SingleDeviceSharding(device)


# Functions of this namespace implemented above this layer, registered there
# (``refimpl.transforms.sharded`` registers "reshard").
_implementations: dict[str, Any] = {}


def reshard(xs: Any, out_shardings: Any) -> Any:
    """``jax.sharding.reshard``: ``refimpl.reshard`` (see there)."""
    return _implementations["reshard"](xs, out_shardings)


def abstract_sharding(ndim: int) -> NamedSharding:
    """The sharding of the type of a refimpl array of rank ``ndim``
    (``jax.typeof(x).sharding``): unsplit, over the empty abstract mesh."""
    return NamedSharding(EMPTY_MESH, PartitionSpec(*([None] * ndim)))


def check_out_sharding(fn_name: str, out_sharding: Any) -> None:
    """Accept an ``out_sharding`` argument that leaves the result whole on one
    device (None, an empty or all-None ``PartitionSpec``, a sharding over one
    device or over the empty mesh); refimpl lays no array over several."""
    if out_sharding is None:
        return
    if isinstance(out_sharding, PartitionSpec) and all(e is None for e in out_sharding):
        return
    if isinstance(out_sharding, NamedSharding) and isinstance(out_sharding.mesh, AbstractMesh):
        if out_sharding.mesh.size <= 1 or all(e is None for e in out_sharding.spec):
            return
    elif isinstance(out_sharding, Sharding) and len(out_sharding.device_set) == 1:
        return
    raise NotImplementedError(
        f"{fn_name}: out_sharding={out_sharding!r} splits the result over several devices; "
        "refimpl places every array whole on one device"
    )


def accepts_out_sharding(fn: Any) -> Any:
    """``fn`` with JAX's ``out_sharding=`` keyword (checked by
    :func:`check_out_sharding`, then dropped: the result is on one device)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, out_sharding: Any = None, **kwargs: Any) -> Any:
        check_out_sharding(getattr(fn, "__name__", "function"), out_sharding)
        return fn(*args, **kwargs)

    try:
        signature = inspect.signature(fn)
        extra = inspect.Parameter("out_sharding", inspect.Parameter.KEYWORD_ONLY, default=None)
        params = list(signature.parameters.values())
        if params and params[-1].kind == inspect.Parameter.VAR_KEYWORD:
            params.insert(len(params) - 1, extra)
        else:
            params.append(extra)
        wrapper.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    except (TypeError, ValueError):
        pass
    return wrapper


def single_device_of(sharding: Any) -> Any:
    """The one device a sharding places a whole array on; ``NotImplementedError``
    for a sharding over several devices (refimpl lays no array over a mesh)."""
    if isinstance(sharding, SingleDeviceSharding):
        return sharding.device
    devices = getattr(sharding, "device_set", None)
    if devices is not None and len(devices) == 1:
        return next(iter(devices))
    raise NotImplementedError(
        f"refimpl places a whole array on one device; {sharding!r} spreads it over "
        f"{len(devices) if devices is not None else 'several'} devices (not provided)"
    )
