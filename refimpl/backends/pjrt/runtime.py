"""Where the PJRT plugin comes from, and one client per process.

This is the thin Python layer over the native module ``refimpl._pjrt``:

* plugin discovery: ``$REFIMPL_PJRT_PLUGIN`` if set, else the CPU plugin
  shipped by the ``fastatomstruct-xla-cpu`` package (``libpjrt_cpu.so`` next
  to its ``__init__.py``, found with ``importlib.util.find_spec``);
* ``get_client(num_devices=None)``: a client cached per process (per plugin
  and device count);
* helpers to feed the compiler: serialized ``CompileOptions`` (with the XLA
  debug options refimpl sets per program, ``compile_overrides``) and StableHLO
  portable artifacts targeted at the plugin's StableHLO version.

Discovery order (first found wins): ``$REFIMPL_PJRT_PLUGIN``; the CUDA plugin
of ``jax-cuda13-pjrt`` then ``jax-cuda12-pjrt`` (modules
``jax_plugins.xla_cuda13`` / ``jax_plugins.xla_cuda12``, file
``xla_cuda_plugin.so``) when an NVIDIA GPU is visible; ``libtpu``
(``libtpu.so``) when a TPU device node is present; the CPU plugin. All speak
the same C API.

Client create options depend on the plugin's kind (:func:`plugin_kind`, from
its file name): the CPU plugin gets ``cpu_device_count`` (``num_devices``);
a GPU plugin gets ``memory_fraction``, ``preallocate`` and ``allocator``
from ``ri.config`` (``pjrt_gpu_memory_fraction``, ``pjrt_gpu_preallocate``,
``pjrt_gpu_allocator``), else from JAX's environment variables
``XLA_PYTHON_CLIENT_MEM_FRACTION`` / ``XLA_PYTHON_CLIENT_PREALLOCATE`` /
``XLA_PYTHON_CLIENT_ALLOCATOR`` (so refimpl and JAX sharing one GPU in one
process follow the same settings), else the plugin's defaults. Each kind
gets only the options it knows: XLA's plugins reject an unknown option name.
"""

from __future__ import annotations

import functools
import importlib.util
import math
import os
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from refimpl.config import config

if TYPE_CHECKING:
    # the compiled extension exists only in an installed refimpl (no stub)
    from refimpl import _pjrt  # type: ignore[attr-defined]

__all__ = [
    "CPU_PLUGIN_REQUIREMENT",
    "LOG_ENV_VAR",
    "PLUGIN_ENV_VAR",
    "PluginNotFoundError",
    "SINGLE_PASS_REDUCTION_LIMIT",
    "client_create_options",
    "compile_options_bytes",
    "compile_overrides",
    "find_plugin_path",
    "get_client",
    "get_plugin",
    "native_module",
    "plugin_available",
    "plugin_kind",
    "quiet_plugin_logs",
    "serialize_stablehlo",
    "stablehlo_target_version",
]

PLUGIN_ENV_VAR = "REFIMPL_PJRT_PLUGIN"
CPU_PLUGIN_MODULE = "fastatomstruct_xla_cpu"
CPU_PLUGIN_LIBRARY = "libpjrt_cpu.so"
CPU_PLUGIN_REQUIREMENT = "fastatomstruct-xla-cpu==2026.6.23"
# Newest CUDA first: with both installed, the CUDA 13 plugin wins.
CUDA_PLUGIN_MODULES = ("jax_plugins.xla_cuda13", "jax_plugins.xla_cuda12")
CUDA_PLUGIN_LIBRARY = "xla_cuda_plugin.so"
TPU_PLUGIN_MODULE = "libtpu"
TPU_PLUGIN_LIBRARY = "libtpu.so"
PLUGIN_KIND_ENV_VAR = "REFIMPL_PJRT_PLUGIN_KIND"
PLUGIN_KINDS = ("cpu", "cuda", "rocm", "tpu", "unknown")


class PluginNotFoundError(RuntimeError):
    """No PJRT plugin could be located."""


def native_module() -> ModuleType:
    """The compiled ``refimpl._pjrt`` module, with a clear error if it is missing."""
    try:
        from refimpl import _pjrt  # type: ignore[attr-defined]  # built by the install
    except ImportError as err:
        raise ImportError(
            "refimpl._pjrt (the native PJRT runtime, needed by backend='pjrt') is not built; "
            "build it with `pip install .` (or, in a development checkout, `pip install "
            "--no-build-isolation -e . -Ceditable.rebuild=false -Cbuild-dir=build/{wheel_tag}`), "
            f"or use backend='ref'. Import error: {err}"
        ) from err
    return _pjrt


def _cpu_plugin_path() -> Path | None:
    return _package_file(CPU_PLUGIN_MODULE, CPU_PLUGIN_LIBRARY)


def _package_file(module: str, filename: str) -> Path | None:
    """``filename`` inside the installed package ``module``, if both exist."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    locations = list(spec.submodule_search_locations or [])
    if not locations and spec.origin:
        locations = [str(Path(spec.origin).parent)]
    for location in locations:
        candidate = Path(location) / filename
        if candidate.is_file():
            return candidate
    return None


def _gpu_visible() -> bool:
    return Path("/proc/driver/nvidia/version").exists() or Path("/dev/nvidia0").exists()


def _tpu_visible() -> bool:
    return any(Path("/dev").glob("accel*")) or Path("/dev/vfio/0").exists()


def _accelerator_plugin_path() -> Path | None:
    """An installed accelerator plugin whose hardware is visible, CUDA first
    (CUDA 13 before CUDA 12)."""
    if _gpu_visible():
        for module in CUDA_PLUGIN_MODULES:
            found = _package_file(module, CUDA_PLUGIN_LIBRARY)
            if found is not None:
                return found
    if _tpu_visible():
        return _package_file(TPU_PLUGIN_MODULE, TPU_PLUGIN_LIBRARY)
    return None


def plugin_kind(path: str | os.PathLike[str]) -> str:
    """What kind of plugin the file at ``path`` is: ``cpu``, ``cuda``, ``rocm``,
    ``tpu`` or ``unknown``, from its name (and its package directory's).

    It decides which client create options the plugin is given (before a
    client exists, the plugin cannot be asked). ``$REFIMPL_PJRT_PLUGIN_KIND``
    overrides it, for a plugin file named otherwise.
    """
    forced = os.environ.get(PLUGIN_KIND_ENV_VAR, "").strip().lower()
    if forced:
        if forced not in PLUGIN_KINDS:
            raise ValueError(
                f"{PLUGIN_KIND_ENV_VAR}={forced!r}: expected one of {', '.join(PLUGIN_KINDS)}"
            )
        return forced
    where = Path(path)
    names = f"{where.parent.name}/{where.name}".lower()
    if "cuda" in names:
        return "cuda"
    if "rocm" in names:
        return "rocm"
    if "tpu" in where.name.lower():
        return "tpu"
    if "cpu" in names:
        return "cpu"
    return "unknown"


_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def _gpu_setting(name: str, env_var: str) -> Any:
    """``ri.config``'s ``name`` if set, else JAX's environment variable ``env_var``."""
    value = getattr(config, name)
    if value is not None:
        return value
    text = os.environ.get(env_var, "").strip()
    if not text:
        return None
    if name == "pjrt_gpu_preallocate":
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise ValueError(f"{env_var}={text!r}: expected true or false")
    if name == "pjrt_gpu_memory_fraction":
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"{env_var}={text!r}: expected a fraction in (0, 1]") from None
    return text


def client_create_options(kind: str, num_devices: int | None = None) -> dict[str, Any]:
    """The named create options refimpl passes to a ``kind`` plugin's client.

    ``cpu``: ``cpu_device_count`` when ``num_devices`` is given. ``cuda`` and
    ``rocm``: ``memory_fraction`` (float), ``preallocate`` (bool) and
    ``allocator`` (``"default"``, ``"platform"``, ``"bfc"``, ``"cuda_async"``),
    each only when set (see the module docstring); ``num_devices`` is
    ignored. ``tpu``/``unknown``: none.
    """
    if kind == "cpu":
        return {} if num_devices is None else {"cpu_device_count": num_devices}
    if kind not in ("cuda", "rocm"):
        return {}
    options: dict[str, Any] = {}
    fraction = _gpu_setting("pjrt_gpu_memory_fraction", "XLA_PYTHON_CLIENT_MEM_FRACTION")
    if fraction is not None:
        options["memory_fraction"] = float(fraction)
    preallocate = _gpu_setting("pjrt_gpu_preallocate", "XLA_PYTHON_CLIENT_PREALLOCATE")
    if preallocate is not None:
        options["preallocate"] = bool(preallocate)
    allocator = _gpu_setting("pjrt_gpu_allocator", "XLA_PYTHON_CLIENT_ALLOCATOR")
    if allocator is not None:
        options["allocator"] = str(allocator)
    return options


def find_plugin_path() -> str:
    """Path of the PJRT plugin to use.

    ``$REFIMPL_PJRT_PLUGIN`` wins when set (it must name an existing file);
    then an installed CUDA plugin when a GPU is visible, then libtpu when a
    TPU is present; otherwise the CPU plugin of ``fastatomstruct-xla-cpu``.
    """
    override = os.environ.get(PLUGIN_ENV_VAR)
    if override:
        if not Path(override).is_file():
            raise PluginNotFoundError(
                f"{PLUGIN_ENV_VAR}={override!r} does not name an existing PJRT plugin file"
            )
        return override
    found = _accelerator_plugin_path() or _cpu_plugin_path()
    if found is None:
        raise PluginNotFoundError(
            "no PJRT plugin found: install the CPU plugin with "
            f"`pip install {CPU_PLUGIN_REQUIREMENT}` (or `pip install 'refimpl[cpu]'`), "
            f"or set {PLUGIN_ENV_VAR}=/path/to/pjrt_plugin.so"
        )
    return str(found)


def plugin_available() -> bool:
    """True when a plugin can be located and the native module is importable."""
    try:
        find_plugin_path()
        native_module()
    except (PluginNotFoundError, ImportError):
        return False
    return True


LOG_ENV_VAR = "REFIMPL_PJRT_LOG"


def quiet_plugin_logs() -> None:
    """Silence the plugin's own log lines (XLA's ``I1124 ...``/``E1124 ...`` on stderr).

    XLA reads ``TF_CPP_MIN_LOG_LEVEL`` once, when it first logs, so this must
    run before the plugin is loaded. It sets the level to 3 (fatal only: every
    error the plugin logs also comes back to refimpl as a status and is
    raised) unless the user set ``TF_CPP_MIN_LOG_LEVEL`` already, or set
    ``REFIMPL_PJRT_LOG=1`` to see the plugin's output.
    """
    if os.environ.get(LOG_ENV_VAR, "0") not in ("", "0"):
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def get_plugin(path: str | None = None) -> _pjrt.Plugin:
    """The loaded plugin at ``path`` (default: ``find_plugin_path()``).

    Loading is idempotent: the native layer keeps one plugin per file. The
    plugin's log output is silenced first (``quiet_plugin_logs``).
    """
    quiet_plugin_logs()
    return native_module().Plugin.load(path if path is not None else find_plugin_path())


_clients: dict[tuple[str, tuple[tuple[str, Any], ...]], _pjrt.Client] = {}
_clients_lock = threading.Lock()


def get_client(num_devices: int | None = None) -> _pjrt.Client:
    """The process-wide client for the discovered plugin.

    ``num_devices=None`` keeps the plugin's default (4 CPU devices for the CPU
    plugin); an int sets the CPU plugin's ``cpu_device_count`` create option
    (other plugins ignore it). The other create options come from
    :func:`client_create_options`. Clients are cached per (plugin path,
    options): changing the GPU settings after the first client was made
    affects only clients made later.
    """
    if num_devices is not None:
        if isinstance(num_devices, bool) or not isinstance(num_devices, int):
            raise TypeError(f"num_devices must be an int or None, got {num_devices!r}")
        if num_devices < 1:
            raise ValueError(f"num_devices must be >= 1, got {num_devices}")
    plugin = get_plugin()
    options = client_create_options(plugin_kind(plugin.path), num_devices)
    node = multi_process_node  # set by ri.distributed.initialize
    if node is not None:
        options = {**options, **node.create_options()}
    key = (plugin.path, tuple(sorted((k, repr(v)) for k, v in options.items())))
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            store = None if node is None else node.store
            client = native_module().Client(plugin, options=options or None, kv_store=store)
            if node is not None:
                node.check_client(client, plugin.path)  # before it is cached
            _clients[key] = client
        return client


class MultiProcessNode:
    """This process as a node of a multi-process run (``ri.distributed.initialize``).

    What the PJRT client gets from it: the create options XLA's GPU plugin
    reads for a node (``node_id``, ``num_nodes``, ``visible_devices``) and
    ``store`` (``get(key, timeout_ms)``/``put(key, value)`` on bytes) as the
    ``kv_get``/``kv_put`` callbacks of ``PJRT_Client_Create``, through which
    the nodes' clients exchange their topologies.
    """

    def __init__(
        self, node_id: int, num_nodes: int, visible_devices: list[int] | None, store: Any
    ) -> None:
        self.node_id, self.num_nodes = node_id, num_nodes
        self.visible_devices, self.store = visible_devices, store

    def create_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"node_id": self.node_id, "num_nodes": self.num_nodes}
        if self.visible_devices is not None:
            options["visible_devices"] = list(self.visible_devices)
        return options

    def check_client(self, client: _pjrt.Client, plugin_path: str) -> None:
        """Raises RuntimeError when ``client`` does not span ``num_nodes`` processes.

        A plugin that ignores the multi-process create options (the CPU
        plugin) still makes a client: one that reports one process, all its
        devices addressable. That is detected here, after creation.
        """
        if client.process_count == self.num_nodes:
            return
        calls = getattr(self.store, "calls", "?")
        raise RuntimeError(
            f"refimpl.distributed.initialize(num_processes={self.num_nodes}, "
            f"process_id={self.node_id}): the PJRT plugin {plugin_path} "
            f"(platform {client.platform_name!r}) cannot run several processes. Its client, "
            "created with create options node_id/num_nodes and the kv_get/kv_put key-value "
            f"callbacks, reports {client.process_count} process ({client.global_device_count} "
            f"devices, all addressable, process_index {client.process_index}): the plugin "
            "lacks multi-process support (it ignores num_nodes; it called the key-value store "
            f"{calls} times to exchange topologies). JAX's multi-process CPU runs build their "
            "client inside jaxlib, not through the PJRT plugin C API."
        )


multi_process_node: MultiProcessNode | None = None
"""Set while ``ri.distributed`` is initialized; read when a client is created."""


@functools.cache
def compile_options_bytes(
    device_id: int | None = None, overrides: tuple[tuple[str, str], ...] = ()
) -> bytes:
    """Serialized ``xla::CompileOptionsProto``: 1 replica, 1 partition.

    ``device_id`` (None: the plugin's default) is the device assignment;
    ``overrides`` are XLA debug options by name (``env_option_overrides``,
    what ``jax.jit(..., compiler_options=...)`` sets), e.g. from
    :func:`compile_overrides`.
    """
    import numpy as np
    from jaxlib import xla_client

    options = xla_client.CompileOptions()
    if device_id is not None:
        options.device_assignment = xla_client.DeviceAssignment.create(
            np.array([[device_id]], dtype=np.int32)
        )
    if overrides:
        options.env_option_overrides = list(overrides)
    return options.SerializeAsString()


# XLA CPU's tree_reduction_rewriter splits every reduction over more than 32
# elements into a reduce-window of 32 and a second reduce: two kernels (thunks)
# instead of one. That is for the accuracy and parallelism of large reductions;
# for small ones each extra thunk costs more than the reduction itself (a thunk
# is ~0.5-1 us of executor overhead, and the thunk executor runs a program of
# more than 8 thunks concurrently on the intra-op pool: task hand-offs).
# Cached jit(grad(mlp)) of benchmarks/ad.py (batch 64): 13 thunks -> 10.
# Measured with the real fast path, old and new options side by side in one
# process with jax.jit, interleaved blocks of 100 calls (shared 2-core VM):
# 3 runs of 30 blocks at load ~2, median 27.4/28.8/28.7 -> 24.4/27.6/27.3 us
# (jax.jit 34.8/35.6/35.8: ratio 0.79/0.81/0.80 -> 0.70/0.78/0.76); 3 runs of
# 20 blocks at load 4-6, best block 25.0/26.5/25.7 -> 23.6/25.3/24.4 us.
SINGLE_PASS_REDUCTION_LIMIT = 128
"""Programs whose every reduction and contraction combines at most this many
elements are compiled for CPU with XLA's ``tree_reduction_rewriter`` pass off
(:func:`compile_overrides`): each such reduction is one loop over <= 128 terms
(float32 rounding error bound 128 * 2**-24 ~ 7.6e-6 of the sum of magnitudes,
typically ~1e-6; the split version differs from it by a few ulps)."""


def _operations(op: Any) -> Iterator[Any]:
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                yield inner
                yield from _operations(inner.operation)


def _combined_elements(op: Any) -> int | None:
    """How many elements a reduce or dot_general combines into each output (else None)."""
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import stablehlo

    name = op.operation.name
    if name == "stablehlo.reduce":
        dims = list(ir.DenseI64ArrayAttr(op.attributes["dimensions"]))
    elif name == "stablehlo.dot_general":
        numbers = stablehlo.DotDimensionNumbers(op.attributes["dot_dimension_numbers"])
        dims = list(numbers.lhs_contracting_dimensions)
    else:
        return None
    shape = ir.RankedTensorType(op.operands[0].type).shape
    return math.prod(shape[d] for d in dims)


EXACT_16BIT_OVERRIDE: tuple[str, Any] = ("xla_allow_excess_precision", False)
"""Per-operation rounding of 16-bit floats, whatever ``XLA_FLAGS`` or the host say."""


def compile_overrides(module: Any, platform: str) -> tuple[tuple[str, str], ...]:
    """The XLA debug options refimpl sets for compiling ``module`` on ``platform``.

    Always ``xla_allow_excess_precision=false``: refimpl's semantics of 16-bit
    floats is StableHLO's (every operation's result is a value of its type, so
    it is rounded after each operation; docs/semantics.md, "16-bit floats").
    XLA otherwise may compute a chain of float16/bfloat16 operations in float32
    and round once, depending on fusion and on the host CPU, so the same
    program would give other bits on another machine.

    On CPU also ``xla_disable_hlo_passes=tree_reduction_rewriter`` when
    every ``stablehlo.reduce`` and ``stablehlo.dot_general`` in the module
    (sub-functions and regions included) combines at most
    ``SINGLE_PASS_REDUCTION_LIMIT`` elements per output (XLA may rewrite a
    small dot as a multiply and a reduce, hence the contractions), and there
    is at least one. Such programs run with fewer thunks; results stay within
    float32 rounding of the split reduction. Other programs (none reduced,
    or one reduction too large) and other platforms: XLA's defaults.
    """
    exact = (EXACT_16BIT_OVERRIDE,)
    if platform != "cpu":
        return exact
    with module.context:
        counted = [_combined_elements(op) for op in _operations(module.operation)]
    sizes = [size for size in counted if size is not None]
    if not sizes or max(sizes) > SINGLE_PASS_REDUCTION_LIMIT:
        return exact
    return (*exact, ("xla_disable_hlo_passes", "tree_reduction_rewriter"))


def _version_tuple(value: str | Iterable[Any]) -> tuple[int, ...]:
    if isinstance(value, str):
        return tuple(int(part) for part in value.split("."))
    return tuple(int(part) for part in value)


def stablehlo_target_version(plugin: _pjrt.Plugin | None = None) -> str:
    """StableHLO version to serialize for: min(plugin's current, jaxlib's current).

    Falls back to jaxlib's minimum supported version when the plugin does not
    report ``stablehlo_current_version``.
    """
    from jaxlib.mlir.dialects import stablehlo

    if plugin is None:
        plugin = get_plugin()
    ours = _version_tuple(stablehlo.get_current_version())
    reported = plugin.attributes.get("stablehlo_current_version")
    if reported is None:
        target = _version_tuple(stablehlo.get_minimum_version())
    else:
        target = min(ours, _version_tuple(reported))
    return ".".join(str(part) for part in target)


def serialize_stablehlo(module_text: str, plugin: _pjrt.Plugin | None = None) -> bytes:
    """StableHLO text -> portable artifact bytes the plugin can compile."""
    from jaxlib.mlir.dialects import stablehlo

    target = stablehlo_target_version(plugin)
    return stablehlo.serialize_portable_artifact_str(module_text, target)


# The process-wide client of executables, host callbacks and lowering; here,
# below all three (refimpl.backends.pjrt.executables exports them).
_client: Any = None
_client_lock = threading.Lock()


def client() -> Any:
    """The process-wide PJRT client (the plugin's default device count).

    Found once: plugin discovery searches the file system, too slow for
    every call. A missing plugin raises here, with the package to install.
    """
    global _client
    if _client is None:
        with _client_lock:
            if _client is None:
                _client = get_client()
    return _client


def local_platform() -> str:
    """This process's PJRT platform, as JAX names it (``cpu``, ``cuda``, ``rocm``, ``tpu``)."""
    name = str(client().platform_name).lower()
    return {"gpu": "cuda"}.get(name, name)
