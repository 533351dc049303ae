"""``jax.sharding``'s names: where the pieces of an array live.

refimpl places every array on one device, except pmap outputs, which are
stacked along one axis over the pmap devices. So the shardings here describe
those two layouts, with JAX's names and methods:

* :class:`Sharding`, the base type (``isinstance(x.sharding, Sharding)``, and
  the type annotations of libraries such as optax);
* :class:`SingleDeviceSharding`, the whole array on one device (every
  ``Array.sharding`` outside pmap);
* :class:`PmapSharding`, slice ``m`` of the sharded axis on ``devices[m]``;
* :class:`PartitionSpec`, :class:`Mesh` and :class:`NamedSharding` as values
  (what an annotation or a ``device_put`` names). Laying an array out over a
  mesh of more than one device is not provided (``jit``'s ``in_shardings``/
  ``out_shardings`` and ``device_put`` accept a ``NamedSharding`` only when its
  mesh has one device).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "AxisType",
    "Mesh",
    "NamedSharding",
    "PartitionSpec",
    "PmapSharding",
    "Sharding",
    "SingleDeviceSharding",
]


class Sharding:
    """Where each piece of an array lives: ``devices_indices_map(shape)`` maps
    each device to the index (a tuple of slices) of the piece it holds."""

    @property
    def device_set(self) -> set[Any]:
        raise NotImplementedError

    def devices_indices_map(self, shape: tuple[int, ...]) -> dict[Any, tuple]:
        raise NotImplementedError

    @property
    def is_fully_addressable(self) -> bool:
        return True

    @property
    def is_fully_replicated(self) -> bool:
        return len(self.device_set) == 1

    @property
    def num_devices(self) -> int:
        return len(self.device_set)

    def addressable_devices_indices_map(self, shape: tuple[int, ...]) -> dict[Any, tuple]:
        return self.devices_indices_map(shape)

    def shard_shape(self, global_shape: tuple[int, ...]) -> tuple[int, ...]:
        """The shape of one device's piece (every piece has the same shape here)."""
        index = next(iter(self.devices_indices_map(global_shape).values()))
        return tuple(
            len(range(*i.indices(n))) if isinstance(i, slice) else 1
            for i, n in zip(index, global_shape)
        )


class SingleDeviceSharding(Sharding):
    """The whole array on one device."""

    def __init__(self, device: Any, *, memory_kind: str | None = None) -> None:
        self._device = device
        self.memory_kind = memory_kind

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
        return f"SingleDeviceSharding(device={self._device!r})"


class PmapSharding(Sharding):
    """Where each slice of a pmap output lives: slice ``m`` along
    ``sharded_dim`` on ``devices[m]``."""

    def __init__(self, devices: Sequence[Any], axis: int, shape: tuple[int, ...]) -> None:
        self.devices = tuple(devices)
        self.sharded_dim = axis
        self.shape = shape

    @property
    def device_set(self) -> set[Any]:
        return set(self.devices)

    @property
    def is_fully_replicated(self) -> bool:
        return False

    def devices_indices_map(self, shape: tuple[int, ...]) -> dict[Any, tuple]:
        out = {}
        for m, device in enumerate(self.devices):
            index: list[Any] = [slice(None)] * len(shape)
            index[self.sharded_dim] = m
            out[device] = tuple(index)
        return out

    def shard_shape(self, global_shape: tuple[int, ...]) -> tuple[int, ...]:
        shape = list(global_shape)
        del shape[self.sharded_dim]
        return tuple(shape)

    def __repr__(self) -> str:
        return f"PmapSharding(devices={list(self.devices)}, sharded_dim={self.sharded_dim})"


class PartitionSpec(tuple):
    """For each array axis, the mesh axis name(s) it is split over, or None
    (``PartitionSpec('data', None)``)."""

    def __new__(cls, *partitions: Any) -> PartitionSpec:
        return super().__new__(cls, partitions)

    def __repr__(self) -> str:
        return f"PartitionSpec{tuple.__repr__(self)}"

    def __reduce__(self) -> Any:
        return (PartitionSpec, tuple(self))


class AxisType(enum.Enum):
    """How a mesh axis is partitioned (JAX's names)."""

    Auto = enum.auto()
    Explicit = enum.auto()
    Manual = enum.auto()


class Mesh:
    """Devices laid out in an n-d grid whose axes have names."""

    def __init__(
        self,
        devices: Any,
        axis_names: str | Sequence[str],
        axis_types: Any = None,
    ) -> None:
        self.devices = np.asarray(devices, dtype=object)
        self.axis_names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
        if self.devices.ndim != len(self.axis_names):
            raise ValueError(
                f"Mesh: devices has {self.devices.ndim} dimensions but {len(self.axis_names)} "
                f"axis names were given: {self.axis_names}"
            )
        if axis_types is None:
            axis_types = (AxisType.Auto,) * len(self.axis_names)
        elif isinstance(axis_types, AxisType):
            axis_types = (axis_types,) * len(self.axis_names)
        self.axis_types = tuple(axis_types)

    @property
    def shape(self) -> dict[str, int]:
        return dict(zip(self.axis_names, self.devices.shape))

    @property
    def size(self) -> int:
        return int(self.devices.size)

    @property
    def device_ids(self) -> np.ndarray:
        return np.vectorize(lambda d: getattr(d, "id", 0), otypes=[int])(self.devices)

    def __enter__(self) -> Mesh:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def __repr__(self) -> str:
        shape = ", ".join(f"'{n}': {s}" for n, s in self.shape.items())
        return f"Mesh({shape})"


class NamedSharding(Sharding):
    """An array split over ``mesh`` as ``spec`` names: axis ``i`` of the array
    is cut into as many pieces as the mesh axes ``spec[i]`` have devices."""

    def __init__(self, mesh: Mesh, spec: PartitionSpec | None = None, **_: Any) -> None:
        self.mesh = mesh
        self.spec = PartitionSpec() if spec is None else PartitionSpec(*spec)
        for entry in self.spec:
            for name in entry if isinstance(entry, tuple) else (entry,):
                if name is not None and name not in mesh.axis_names:
                    raise ValueError(
                        f"NamedSharding: {name!r} is not an axis of the mesh {mesh.axis_names}"
                    )

    @property
    def device_set(self) -> set[Any]:
        return set(self.mesh.devices.flat)

    @property
    def is_fully_replicated(self) -> bool:
        return all(e is None for e in self.spec) or self.mesh.size == 1

    def _pieces(self, entry: Any) -> int:
        names = entry if isinstance(entry, tuple) else (entry,)
        return int(np.prod([self.mesh.shape[n] for n in names if n is not None]))

    def devices_indices_map(self, shape: tuple[int, ...]) -> dict[Any, tuple]:
        out = {}
        for position in np.ndindex(*self.mesh.devices.shape):
            coords = dict(zip(self.mesh.axis_names, position))
            index: list[Any] = []
            for axis, size in enumerate(shape):
                entry = self.spec[axis] if axis < len(self.spec) else None
                names = [n for n in (entry if isinstance(entry, tuple) else (entry,)) if n]
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
        return out

    def shard_shape(self, global_shape: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(
            n // self._pieces(self.spec[i]) if i < len(self.spec) else n
            for i, n in enumerate(global_shape)
        )

    def __eq__(self, other: Any) -> bool:
        return (
            isinstance(other, NamedSharding)
            and other.mesh is self.mesh
            and tuple(other.spec) == tuple(self.spec)
        )

    def __hash__(self) -> int:
        return hash(("NamedSharding", id(self.mesh), tuple(self.spec)))

    def __repr__(self) -> str:
        return f"NamedSharding(mesh={self.mesh!r}, spec={self.spec!r})"


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
