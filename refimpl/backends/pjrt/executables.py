"""The PJRT client, its devices, and compiled executables (one per device).

Shared by the executor (``backend``) and the fast path (``fast_path``): a
jit cache entry's Program is lowered once (``lowering``) and compiled once
per device it runs on.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

from refimpl import monitoring
from refimpl.backends.pjrt import compilation_cache, host_callbacks
from refimpl.backends.pjrt import runtime as pjrt_runtime

# client, local_platform: defined in runtime (host_callbacks and lowering use
# them too), exported here
from refimpl.backends.pjrt.runtime import client, local_platform
from refimpl.primitives.callback import io_callback_p, pure_callback_p
from refimpl.primitives.debug import debug_callback_p, debug_print_p
from refimpl.transforms.dce import kept_inputs

__all__ = [
    "client",
    "default_device",
    "devices",
    "executables",
    "has_host_callbacks",
    "index_of",
    "is_pjrt_device",
    "local_platform",
]


# --- client and devices ---------------------------------------------------------------


@functools.cache
def _devices_of(the_client: Any) -> tuple[Any, ...]:
    return tuple(the_client.devices())


def devices() -> list[Any]:
    """The PJRT devices (``ri.devices("pjrt")``): 4 CPU devices with the CPU plugin."""
    return list(_devices_of(client()))


def default_device() -> Any:
    return _devices_of(client())[0]


def is_pjrt_device(device: Any) -> bool:
    native = pjrt_runtime.native_module()
    return isinstance(device, native.Device)


def index_of(device: Any) -> int:
    return _devices_of(client()).index(device)


# --- compiling ------------------------------------------------------------------------------


def _lowering() -> Any:
    """The lowering module, imported on first use: it loads jaxlib's MLIR
    (~150 ms), which a process whose executables all come from the persistent
    compilation cache never needs."""
    from refimpl.backends.pjrt import lowering

    return lowering


def _compile_options(device_id: int, module: Any) -> bytes:
    """Serialized CompileOptions: one replica, one partition, on ``device_id``,
    with the debug options refimpl sets for ``module`` (``compile_overrides``)."""
    overrides = pjrt_runtime.compile_overrides(module, local_platform())
    return pjrt_runtime.compile_options_bytes(device_id, overrides)


class _Executables:
    """What the PJRT backend keeps in a jit cache entry (``entry.executable``):
    the lowered module, its portable artifact, and one executable per device.

    The module is lowered on first use (``module``): an executable found in the
    persistent compilation cache through its program key needs no lowering.
    """

    def __init__(
        self,
        program: Any,
        *,
        name: str,
        aliases: dict[int, int] | None = None,
        donated: Any = None,
        platforms: tuple[str, ...] | None = None,
        platform_index: int | None = None,
        fun_name: str | None = None,
        kept: tuple[bool, ...] | None = None,
    ) -> None:
        self._program = program
        # the name monitoring's lowering and compile events carry (JAX's "jit(f)")
        self._fun_name = f"jit({name})" if fun_name is None else fun_name
        self._lowering = {"name": name, "aliases": aliases, "donated": donated, "kept": kept}
        # The inputs the executables take, one flag per program input (None:
        # all): a call passes only these (refimpl.transforms.dce.kept_inputs).
        self.kept = kept
        self._platforms = platforms
        self._module: Any = None
        self._host_callbacks: Any = None
        # Lowered for several platforms: the value of the leading _platform_index
        # argument that selects this process's platform (None: no such argument).
        self.platform_index = platform_index
        self._artifact: bytes | None = None
        self._by_device: dict[int, Any] = {}
        self._lock = threading.RLock()
        # host callbacks run inside the program (host_callbacks): callers wait
        # for its outputs, so the callbacks have run when a call returns
        self.has_host_callbacks = has_host_callbacks(program)

    @property
    def module(self) -> Any:
        """The StableHLO module (lowered now if it was not yet)."""
        if self._module is None:
            # (the listeners of the lowering's events run after the lock is let go)
            with monitoring.listeners_after(), self._lock:
                if self._module is None:
                    with monitoring.timed(monitoring.JAXPR_TO_MLIR_MODULE_EVENT, self._fun_name):
                        module = _lowering().lower_program(
                            self._program, platforms=self._platforms, **self._lowering
                        )
                    # the callables of its host callbacks live as long as these executables
                    self._host_callbacks = host_callbacks.adopt(module)
                    self._module = module
        return self._module

    def _program_key(self, device_id: int) -> str | None:
        return compilation_cache.program_key(
            self._program,
            platforms=self._platforms,
            target=f"replicas=1 partitions=1 device={device_id}",
            client=client(),
            **self._lowering,
        )

    def artifact(self) -> bytes:
        if self._artifact is None:
            target = pjrt_runtime.stablehlo_target_version()
            self._artifact = _lowering().to_portable_artifact(self.module, target)
        return self._artifact

    def for_device(self, device: Any) -> Any:
        index = index_of(device)
        executable = self._by_device.get(index)
        if executable is None:
            # two threads missing at once compile once; the compile's event
            # listeners run after the lock is let go
            with monitoring.listeners_after(), self._lock:
                executable = self._by_device.get(index)
                if executable is None:
                    if compilation_cache.cache_dir() is None:
                        # lowered before the compile's event (JAX's order); with the
                        # persistent cache on, only a miss lowers (inside that event)
                        _ = self.module
                    with monitoring.timed(monitoring.BACKEND_COMPILE_EVENT, self._fun_name):
                        executable = compilation_cache.compile_cached(
                            client(),
                            lambda: _lowering().module_text(self.module),
                            self.artifact,
                            lambda: _compile_options(device.id, self.module),
                            lambda: self._program_key(device.id),
                        )
                    self._by_device[index] = executable
        return executable


def has_host_callbacks(program: Any) -> bool:
    """Whether ``program`` or a sub-program calls back to Python
    (``pure_callback``, ``io_callback``, ``debug.print``/``debug.callback``)."""
    callbacks = (debug_callback_p, debug_print_p, pure_callback_p, io_callback_p)
    return any(eqn.primitive in callbacks for eqn in program.walk_eqns())


_entry_lock = threading.Lock()


def executables(entry: Any, name: str, keep_unused: bool = False) -> _Executables:
    """The executables of a jit cache entry, made on first use: they take the
    inputs the program reads (and the donated ones), or every input for a
    ``jit(keep_unused=True)`` (kept apart: entries are shared between jits of
    one function with the same options otherwise)."""
    found = entry.executable_all if keep_unused else entry.executable
    if found is None:
        with _entry_lock:
            found = _made(entry, name, keep_unused)
    return found


def _made(entry: Any, name: str, keep_unused: bool) -> _Executables:
    """(Under ``_entry_lock``.) A ``keep_unused`` jit shares the entry's
    executables when the program reads every input, else has its own."""
    pruned = kept_inputs(entry.program, entry.donation.donated, keep_unused=False)
    own = keep_unused and pruned is not None
    slot = "executable_all" if own else "executable"
    found = getattr(entry, slot)
    if found is None:
        found = _Executables(
            entry.program,
            name=name,
            aliases=entry.aliases,
            donated=entry.donation.donated,
            kept=None if own else pruned,
        )
        setattr(entry, slot, found)
    if keep_unused:
        entry.executable_all = found
    return found
