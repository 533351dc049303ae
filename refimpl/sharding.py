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
import functools
import inspect
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "AbstractMesh",
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


class AbstractMesh:
    """A mesh's axis names, sizes and types without devices (the mesh of a
    type's sharding, ``jax.typeof(x).sharding.mesh``); refimpl's arrays have
    the empty one."""

    def __init__(
        self, axis_sizes: tuple[int, ...] = (), axis_names: tuple[str, ...] = (), axis_types=None
    ) -> None:
        self.axis_sizes = tuple(axis_sizes)
        self.axis_names = tuple(axis_names)
        self.axis_types = tuple(axis_types or (AxisType.Auto,) * len(self.axis_names))

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
        return isinstance(other, AbstractMesh) and (
            (self.axis_sizes, self.axis_names, self.axis_types)
            == (other.axis_sizes, other.axis_names, other.axis_types)
        )

    def __hash__(self) -> int:
        return hash((self.axis_sizes, self.axis_names, self.axis_types))

    def __repr__(self) -> str:
        return f"AbstractMesh({self.axis_sizes}, axis_types={self.axis_types})"


EMPTY_MESH = AbstractMesh()


class NamedSharding(Sharding):
    """An array split over ``mesh`` as ``spec`` names: axis ``i`` of the array
    is cut into as many pieces as the mesh axes ``spec[i]`` have devices."""

    def __init__(self, mesh: Any, spec: PartitionSpec | None = None, **_: Any) -> None:
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
        if isinstance(self.mesh, AbstractMesh):
            raise ValueError("a NamedSharding of an AbstractMesh has no devices")
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
