"""Backends: where Programs run and where arrays live, behind one small protocol.

A backend is an object (here: a module) with

* ``devices()``, ``default_device()``, ``is_device(d)``;
* ``array_types``: the concrete array types it makes (all ``refimpl.Array``);
* ``placement(leaves, labels, where) -> (device, committed)``: the one
  placement rule (SPEC "Placement") over that backend's arrays;
* ``put_leaf(x, device, donate, alias)``: ``device_put`` of one leaf;
* ``execute(jitted, entry, call)``: run one jit cache entry;
* ``lower(traced)`` and ``make_fast_jitted(fun, kwargs)`` (optional).

``ref`` (``backends/ref/``, NumPy) is registered when this package is
imported; ``pjrt`` (``backends/pjrt/``, the native extension) is registered
by name and loaded by ``import refimpl`` when the extension is there (modules
only: its client starts at first use), because loading it puts its native
entries in place of the exported functions and a function a program took
must stay the same object; without the extension the reference backend works
alone. ``placement`` holds
``devices`` and ``device_put``, which ask this registry which backend owns a
device or an array; it installs them here (:func:`install_placement`) for
the modules below it, which call :func:`device_put` and :func:`devices` of
this registry instead of importing a backend module.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from typing import Any

__all__ = [
    "backend_of_array",
    "backend_of_device",
    "device_put",
    "devices",
    "get",
    "install_placement",
    "loaded",
    "name_of_device",
    "names",
    "register",
]

# name -> module path of the backend object (a module satisfying the protocol)
_modules: dict[str, str] = {}
# name -> modules imported right after the backend's own, before first use:
# they build on it (register hooks with it) and it does not import them
_then: dict[str, tuple[str, ...]] = {}
_loaded: dict[str, Any] = {}
_array_types: dict[type, str] = {}
_lock = threading.RLock()


def register(name: str, module: str, *, then: tuple[str, ...] = ()) -> None:
    """Make backend ``name`` available; ``module`` is imported on first use,
    followed by the modules of ``then``."""
    _modules[name] = module
    _then[name] = then


def names() -> tuple[str, ...]:
    return tuple(_modules)


def get(name: str) -> Any:
    """The backend ``name``, loaded now if it was not yet.

    A backend whose module cannot be imported (the PJRT backend without its
    native extension) raises the ImportError its module gives, which says
    what to install or build.
    """
    backend = _loaded.get(name)
    if backend is not None:
        return backend
    if name not in _modules:
        known = ", ".join(repr(n) for n in _modules)
        raise ValueError(f"unknown backend {name!r}; use one of {known}")
    with _lock:
        backend = _loaded.get(name)
        if backend is None:
            backend = importlib.import_module(_modules[name])
            for extra in _then.get(name, ()):
                importlib.import_module(extra)
            for array_type in backend.array_types:
                _array_types[array_type] = name
            _loaded[name] = backend
    return backend


def loaded() -> list[Any]:
    """The backends loaded so far (an array or device of another cannot exist)."""
    return list(_loaded.values())


def backend_of_array(x: Any) -> Any | None:
    """The backend whose concrete array ``x`` is, or None (not a backend array)."""
    name = _array_types.get(type(x))
    return _loaded[name] if name is not None else None


def backend_of_device(device: Any) -> Any | None:
    """The loaded backend that ``device`` belongs to, or None."""
    for backend in list(_loaded.values()):
        if backend.is_device(device):
            return backend
    return None


def name_of_device(device: Any) -> str | None:
    """The name of the loaded backend that ``device`` belongs to, or None."""
    for name, backend in list(_loaded.items()):
        if backend.is_device(device):
            return name
    return None


# ``device_put`` and ``devices`` of ``backends.placement``, which defines them
# above the transformations (a sharded placement needs ``transforms.sharded``)
# and fills this when imported: ``refimpl/__init__.py`` imports it before
# anything runs. For the modules that place values but sit below it: ad's
# cotangent seed, pmap's shards, ``ref``, ``callbacks``, ``dlpack``.
_placement: dict[str, Callable[..., Any]] = {}


def host_backend(backend_in_effect: str) -> str:
    """The backend JAX's platform name ``"cpu"`` stands for: the one in
    effect (``backend_in_effect``) when it runs on the host CPU (``ref``
    always; ``pjrt`` on its CPU plugin), else ``ref``."""
    if backend_in_effect == "pjrt" and get("pjrt").devices()[0].platform == "cpu":
        return "pjrt"
    return "ref"


def install_placement(device_put: Callable[..., Any], devices: Callable[..., Any]) -> None:
    """Fill the slots behind :func:`device_put` and :func:`devices` (see above)."""
    _placement["device_put"] = device_put
    _placement["devices"] = devices


def _placement_function(name: str) -> Callable[..., Any]:
    function = _placement.get(name)
    if function is None:
        raise RuntimeError(
            f"internal error: backends.{name} used before refimpl.backends.placement "
            "installed it (import refimpl first)"
        )
    return function


def device_put(
    x: Any, device: Any = None, *, donate: bool = False, may_alias: bool | None = None
) -> Any:
    """``refimpl.device_put`` (``backends.placement.device_put``), for the
    modules below it."""
    return _placement_function("device_put")(x, device, donate=donate, may_alias=may_alias)


def devices(backend: str | None = None) -> list[Any]:
    """``refimpl.devices`` (``backends.placement.devices``), for the modules below it."""
    return _placement_function("devices")(backend)


register("ref", "refimpl.backends.ref.backend")
# fast_eager registers PJRT's eager fast paths (it imports the backend module);
# spmd its route for jit with shardings (transforms.sharded.register_spmd_runner)
register(
    "pjrt",
    "refimpl.backends.pjrt.backend",
    then=("refimpl.backends.pjrt.fast_eager", "refimpl.backends.pjrt.spmd"),
)
