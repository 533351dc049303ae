"""``jax.extend.backend``: the backend a program runs on, as JAX's client.

``get_backend()`` answers what libraries ask JAX's client (``platform``,
``devices()``, ``device_count()``...): the platform is JAX's name of the
host platform, ``"cpu"``, on both refimpl backends (as ``jax.default_backend()``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from refimpl import config, device_queries
from refimpl.backends.placement import devices as _devices

__all__ = ["Backend", "backends", "get_backend", "get_default_device"]


@dataclass(frozen=True)
class Backend:
    """The parts of JAX's ``Client`` libraries read."""

    platform: str
    #: the refimpl backend ("ref" or "pjrt") whose devices it lists
    name: str

    @property
    def platform_version(self) -> str:
        return f"refimpl {device_queries.JAX_VERSION}"

    def devices(self) -> list[Any]:
        return _devices(self.name)

    def local_devices(self) -> list[Any]:
        return device_queries.local_devices(backend=self.name)

    def device_count(self) -> int:
        return device_queries.device_count(backend=self.name)

    def local_device_count(self) -> int:
        return len(device_queries.local_devices(backend=self.name))

    def process_index(self) -> int:
        return 0


def get_backend(platform: Any = None) -> Backend:
    """JAX's ``jax.extend.backend.get_backend``: the default backend, or the
    one named (``"cpu"``, JAX's name for both, or ``"ref"``/``"pjrt"``);
    another name is a RuntimeError, as JAX's unknown backend."""
    name = config.backend if platform in (None, "cpu") else str(platform)
    if name not in ("ref", "pjrt"):
        raise RuntimeError(f"Unknown backend {platform}")
    return Backend("cpu", name)


def get_default_device() -> Any:
    """The first device of the default backend."""
    return get_backend().devices()[0]


def backends() -> dict[str, Backend]:
    """The initialized backends by platform: one, ``"cpu"``."""
    return {"cpu": get_backend()}
