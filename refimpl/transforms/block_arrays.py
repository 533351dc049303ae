"""Arrays made of one block per device: what pmap and sharded jit return.

A pmap output on the reference backend (``pmap.ShardedArray``: blocks
stacked along the mapped axis) and a sharded array (``sharded.MeshArray``:
blocks tiling the global value as a sharding says) differ only in how the
blocks make the global value. Everything about the blocks' lifetime is
shared here, so both follow one set of rules: the array is deleted when any
block is, deleting or donating it deletes every block, it reads the storage
of its blocks (the repeated-donation check counts an array and one of its
``addressable_shards`` as the same storage), and waiting for it waits for
every block.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from refimpl.array import Array
from refimpl.core import ShapedArray
from refimpl.transforms import donation


class BlockArray(Array):
    """One block per device (``_shards``, on ``_devices``) standing for one
    global value of type ``_aval``; a subclass says how the blocks make it
    (``_value``) and how they are laid out (``sharding``)."""

    __slots__ = ("_shards", "_devices", "_aval")

    _shards: list[Any]
    _devices: tuple[Any, ...]
    _aval: ShapedArray

    @property
    def aval(self) -> ShapedArray:
        return self._aval

    @property
    def device(self) -> Any:
        return self._devices[0]

    def devices(self) -> set[Any]:
        return set(self._devices)

    def addressable_data(self, index: int) -> Any:
        return self._shards[index]

    def _check_live(self) -> None:
        for shard in self._shards:
            shard._check_live()

    def _value(self) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover (every subclass assembles its blocks)

    def is_deleted(self) -> bool:
        return any(s.is_deleted() for s in self._shards)

    def mark_donated(self, function_name: str) -> None:
        """Delete every block because the array was donated to ``function_name``
        (as a sharded PJRT array: SPEC "Donation")."""
        for shard in self._shards:
            if hasattr(shard, "mark_donated"):
                shard.mark_donated(function_name)
            else:
                shard.delete()

    def _storage_keys(self) -> tuple[int, ...]:
        """The storage it reads: its blocks' (which ``addressable_shards``
        hands out), for the repeated-donation check."""
        return tuple(k for shard in self._shards for k in donation.storage_keys(shard))

    def delete(self) -> None:
        for shard in self._shards:
            shard.delete()

    def block_until_ready(self) -> Any:
        for shard in self._shards:
            shard.block_until_ready()
        return self

    def copy_to_host_async(self) -> None:
        return None

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        value = self._value()
        return value if dtype is None else value.astype(dtype)


def live_arrays(single_device: Iterable[Any], is_device: Callable[[Any], bool]) -> list[Any]:
    """``jax.live_arrays`` of one backend: its arrays alive and not deleted,
    from ``single_device`` (its one-device arrays alive) and the arrays over
    several devices (found by the garbage collector's list: they are Python
    objects) whose first device is the backend's. An array over several
    devices counts once, as in JAX, and its blocks not at all."""
    found = [*single_device, *(o for o in gc.get_objects() if isinstance(o, BlockArray))]
    blocks = {id(b) for a in found if isinstance(a, BlockArray) for b in a._shards}
    return [a for a in found if id(a) not in blocks and not a.is_deleted() and is_device(a.device)]
