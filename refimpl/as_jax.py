"""Run an existing JAX program on refimpl: ``import jax`` resolves to refimpl.

    python -m refimpl.as_jax [--backend ref|pjrt] script.py [args...]

For the duration of the run, ``jax`` and its submodules are aliases of
refimpl's (``jax.numpy`` -> ``refimpl.numpy``, ``jax.lax`` -> ``refimpl.lax``,
``jax.random``, ``jax.nn``, ``jax.nn.initializers``, ``jax.scipy.special``,
``jax.scipy.linalg``, ``jax.tree``, ``jax.tree_util``, ``jax.dlpack``,
``jax.debug``, ``jax.errors``, ``jax.typing``, ``jax.ref``), put
in ``sys.modules`` in front of any real JAX and taken out again afterwards,
with a meta-path finder for ``jax.*`` modules not imported yet. A few JAX
names are spelled differently in refimpl and are translated
(``jax.config.update("jax_...")`` -> ``ri.config.update("...")``; JAX's
config States such as ``jax.log_compiles(True)``; one process's
``jax.process_indices()``).

A name refimpl does not provide is an ``AttributeError`` naming it, e.g.
``jax.numpy.int2 is not provided by refimpl (running under refimpl.as_jax);
see docs/numpy.md for what refimpl covers``; an unknown ``jax.*`` module is
a ``ModuleNotFoundError`` with the same pointer.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import runpy
import sys
import types
from collections.abc import Iterator
from typing import Any

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import config, contexts, device_queries

__all__ = ["aliased_jax", "main", "run", "run_module"]

DOCS = "docs/numpy.md"

# jax module name -> refimpl module name
MODULES = {
    "jax": "refimpl",
    "jax.numpy": "refimpl.numpy",
    "jax.numpy.linalg": "refimpl.numpy.linalg",
    "jax.numpy.fft": "refimpl.numpy.fft",
    "jax.lax": "refimpl.lax",
    "jax.random": "refimpl.random",
    "jax.nn": "refimpl.nn",
    "jax.nn.initializers": "refimpl.nn.initializers",
    "jax.scipy": "refimpl.scipy",
    "jax.scipy.special": "refimpl.scipy.special",
    "jax.scipy.linalg": "refimpl.scipy.linalg",
    "jax.tree": "refimpl.tree",
    "jax.tree_util": "refimpl.tree_util",
    "jax.dlpack": "refimpl.dlpack",
    "jax.dtypes": "refimpl.dtypes_api",
    "jax.debug": "refimpl.debug",
    "jax.errors": "refimpl.errors",
    "jax.typing": "refimpl.typing",
    "jax.ref": "refimpl.ref",
    # jax.scipy.stats and its distribution modules (``import jax.scipy.stats.norm``)
    "jax.scipy.stats": "refimpl.scipy.stats",
    **{
        f"jax.scipy.stats.{name}": f"refimpl.scipy.stats.{name}"
        for name in (
            "bernoulli beta betabinom binom cauchy chi2 dirichlet expon gamma gennorm geom "
            "gumbel_l gumbel_r laplace logistic multinomial multivariate_normal nbinom norm "
            "pareto poisson t truncnorm uniform vonmises wrapcauchy"
        ).split()
    },
    "jax.core": "refimpl.core_api",
    "jax.sharding": "refimpl.sharding",
    "jax.stages": "refimpl.stages",
    "jax.distributed": "refimpl.distributed",
    "jax.flatten_util": "refimpl.flatten_util",
    "jax.ops": "refimpl.ops",
    "jax.test_util": "refimpl.test_util",
    "jax.example_libraries": "refimpl.example_libraries",
    "jax.ad_checkpoint": "refimpl.ad_checkpoint",
    "jax.custom_derivatives": "refimpl.custom_derivatives",
    "jax.custom_batching": "refimpl.custom_batching",
    "jax.experimental": "refimpl.experimental",
    "jax.monitoring": "refimpl.monitoring",
    "jax.extend": "refimpl.extend",
    "jax.interpreters": "refimpl.interpreters",
}

#: The version of JAX whose semantics refimpl follows (``jax.__version__``).
JAX_VERSION = device_queries.JAX_VERSION


def _missing(module: str, name: str) -> AttributeError:
    return AttributeError(
        f"{module}.{name} is not provided by refimpl (running under refimpl.as_jax); "
        f"see {DOCS} for what refimpl covers"
    )


class _Config:
    """``jax.config``: ``update("jax_enable_x64", v)`` -> refimpl's ``enable_x64``.

    ``jax_num_cpu_devices`` sets the number of the reference backend's virtual
    devices (``ref_num_devices``); the PJRT CPU client keeps its own count
    (4 devices). Device selection flags (``jax_platforms`` and the like) are
    refimpl's ``--backend``; JAX flags that change only diagnostics or
    performance (:data:`_ACCEPTED`) are recorded and have no effect.
    """

    _ACCEPTED = frozenset({
        "debug_nans", "debug_infs", "log_compiles",
        "compilation_cache_dir",
        "persistent_cache_min_compile_time_secs", "persistent_cache_min_entry_size_bytes",
        "traceback_filtering",
        "enable_checks", "transfer_guard", "cpu_collectives_implementation",
        "transfer_guard_host_to_device", "transfer_guard_device_to_host",
        "transfer_guard_device_to_device",
    })  # fmt: skip

    def __init__(self) -> None:
        self.__dict__["_recorded"] = {}

    def update(self, name: str, value: Any) -> None:
        short = name[4:] if name.startswith("jax_") else name
        if short in ("platform_name", "platforms", "default_device"):
            return  # device selection is refimpl's --backend
        if short == "num_cpu_devices":
            config.update("ref_num_devices", int(value))
            return
        if short in _MODELLED_VALUES:  # flags refimpl follows at one value only
            with getattr(contexts, short)(value):  # NotImplementedError for the others
                pass
            self.__dict__["_recorded"][short] = value
            return
        if short == "check_tracer_leaks":  # any value, by its truth (as JAX's)
            config.update(short, bool(value))
        elif short in config.snapshot():
            config.update(short, value)
        elif short in self._ACCEPTED or short in _NO_EFFECT:
            self.__dict__["_recorded"][short] = value
        elif short in _AT_DEFAULT:  # read as JAX's default, the behaviour refimpl has
            if value != _AT_DEFAULT[short]:
                raise NotImplementedError(
                    f"jax.config.update({name!r}, {value!r}): refimpl behaves as JAX 0.10.2's "
                    f"default {_AT_DEFAULT[short]!r} only (docs/api.md, configuration flags)"
                )
            self.__dict__["_recorded"][short] = value
        else:
            config.update(short, value)  # the unknown-flag error

    def __getattr__(self, name: str) -> Any:
        short = name[4:] if name.startswith("jax_") else name
        if short == "num_cpu_devices":
            return config.ref_num_devices
        if short == "x64_enabled":  # jax.config.x64_enabled: jax_enable_x64's value
            return config.enable_x64
        if short in self.__dict__["_recorded"]:
            return self.__dict__["_recorded"][short]
        try:
            return getattr(config, short)
        except AttributeError:
            pass
        for defaults in (_READ_DEFAULTS, _AT_DEFAULT, _NO_EFFECT):
            if short in defaults:
                return defaults[short]
        raise _missing("jax.config", name)

    def read(self, name: str) -> Any:
        return self.__getattr__(name)


# JAX flags refimpl behaves as at one value (refimpl.contexts checks it):
# setting another is NotImplementedError, never recorded and ignored (the
# others change results: threefry_partitionable=False draws other bits)
_MODELLED_VALUES = (
    "enable_custom_prng",
    "debug_key_reuse",
    "threefry_partitionable",
)

# what reading a flag refimpl has no setting for gives: JAX 0.10.2's default,
# the one value refimpl behaves as (random_test reads these in skipIf)
_READ_DEFAULTS: dict[str, Any] = {
    "debug_key_reuse": False,
    "enable_custom_prng": False,
    "threefry_partitionable": True,
    "enable_checks": False,
    "transfer_guard": None,
    "debug_nans": False,
    "debug_infs": False,
    "log_compiles": False,
    "transfer_guard_host_to_device": None,
    "transfer_guard_device_to_host": None,
    "transfer_guard_device_to_device": None,
    # read-only facts of a one-process host run: JAX 0.10.2's defaults
    "platforms": None,
    "default_device": None,
    "random_seed_offset": 0,
    "softmax_custom_jvp": False,
    "use_simplified_jaxpr_constants": False,
    "raise_persistent_cache_errors": False,
    "persistent_cache_min_compile_time_secs": 1.0,
    "include_full_tracebacks_in_locations": True,
    "remove_size_one_mesh_axis_from_type": False,
    "use_shardy_partitioner": True,
    # the JAX 0.10.2 behaviour refimpl follows (api_test and random_test branch on them)
    "use_direct_linearize": True,
    "high_dynamic_range_gumbel": False,
}

# JAX 0.10.2 flags whose default describes refimpl (it has no other mode):
# read as that default, updated to it, any other value NotImplementedError
_AT_DEFAULT: dict[str, Any] = {
    "check_vma": False,  # shard_map's varying types are not modelled
    "auto_pcast": True,
    "disable_vmap_shmap_error": False,
    "disallow_mesh_context_manager": False,
    "eager_constant_folding": False,
    "allow_f16_reductions": True,
    "check_static_indices": False,
    "custom_vjp3": False,  # JAX's experimental rewrites of custom_vjp, remat, scan
    "remat3": False,
    "scan3": False,
    "refs_to_pins": False,
    "disable_bwd_checks": False,  # refimpl checks a custom_vjp bwd's output types
    "error_checking_behavior_divide": "ignore",  # refimpl never raises on these values
    "error_checking_behavior_nan": "ignore",
    "error_checking_behavior_oob": "ignore",
    "log_checkpoint_residuals": False,
    "no_execution": False,
    "thread_guard": False,
    "sort_devices_by_process_index": True,
    "array_garbage_collection_guard": None,
    "experimental_unsafe_xla_runtime_errors": False,
    "enable_compilation_cache": True,  # (the cache is on once compilation_cache_dir is set)
}

# JAX 0.10.2 flags of diagnostics, performance, dumps, other platforms (GPU,
# TPU, Pallas), other hosts and jax2tf/export: read as JAX's default, any
# value recorded, without effect (refimpl computes the same values whatever
# they say; it has none of those platforms, dumps or multi-host transports)
_NO_EFFECT: dict[str, Any] = {
    "backend_target": "",
    "xla_backend": "",
    "platform_name": "",
    "pjrt_client_create_options": None,
    "cpu_enable_async_dispatch": True,
    "cpu_collectives_implementation": "gloo",
    "cpu_get_global_topology_timeout_minutes": 5,
    "cpu_get_local_topology_timeout_minutes": 2,
    "cuda_visible_devices": "all",
    "rocm_visible_devices": "all",
    "oneapi_visible_devices": "all",
    "mock_gpu_topology": "",
    "mock_num_gpu_processes": 0,
    "use_magma": "auto",
    "bcoo_cusparse_lowering": False,
    "threefry_gpu_kernel_lowering": False,
    "ragged_dot_use_gpu_pallas_triton_lowering": False,
    "ragged_dot_use_ragged_dot_instruction": True,
    "pallas_enable_debug_checks": False,
    "pallas_poison_buffers": False,
    "pallas_use_mosaic_gpu": True,
    "pallas_verbose_errors": False,
    "mosaic_allow_hlo": False,
    "use_emit_pipeline_primitive": False,
    "enable_pgle": False,
    "pgle_aggregation_percentile": 90,
    "pgle_profiling_runs": 3,
    "compilation_cache_check_contents": False,
    "compilation_cache_expect_pgle": False,
    "compilation_cache_include_metadata_in_key": False,
    "persistent_cache_enable_xla_caches": "xla_gpu_per_fusion_autotune_cache_dir",
    "persistent_cache_min_entry_size_bytes": 0,
    "remove_custom_partitioning_ptr_from_cache_key": False,
    "compiler_detailed_logging_min_ops": 10,
    "compiler_enable_remat_pass": True,
    "disable_most_optimizations": False,
    "exec_time_optimization_effort": 0.0,
    "memory_fitting_effort": 0.0,
    "memory_fitting_level": "O2",
    "optimization_level": "UNKNOWN",
    "xla_profile_version": 0,
    "embedded_constants_max_bytes": 32,
    "captured_constants_report_frames": 0,
    "captured_constants_warn_bytes": 2000000000,
    "dump_ir_to": "",
    "dump_ir_modes": "stablehlo",
    "include_debug_info_in_dumps": True,
    "hlo_source_file_canonicalization_regex": None,
    "traceback_in_locations_limit": 100,
    "tracer_error_num_traceback_frames": 5,
    "source_url_schema": None,
    "pprint_use_color": True,
    "logging_level": "NOTSET",
    "debug_log_modules": "",
    "check_proxy_envs": True,
    "debug_leaked_clients_on_clear_backends": False,
    "distributed_debug": False,
    "enable_preemption_service": True,
    "enable_recoverability": False,
    "share_binary_between_hosts": False,
    "share_binary_between_hosts_timeout_ms": 1200000,
    "force_dcn_cross_host_transfers": False,
    "cross_host_transfer_socket_address": "",
    "cross_host_transfer_timeout_seconds": None,
    "cross_host_transfer_transfer_size": None,
    "cross_host_transport_addresses": "",
    "export_calling_convention_version": 10,
    "export_ignore_forward_compatibility": False,
    "serialization_version": 0,
    "jax2tf_associative_scan_reductions": False,
    "jax2tf_default_native_serialization": True,
}

_CONFIG = _Config()

_GUARD_LEVELS = ("allow", "log", "disallow", "log_explicit", "disallow_explicit")


class _FlagState:
    """``jax.<flag>``, JAX's config State object: ``jax.<flag>(value)`` is a
    context manager (and decorator) setting the flag for a block, through
    ``jax.config`` (so the flags refimpl only records stay without effect);
    ``.value`` reads it."""

    def __init__(self, name: str) -> None:
        self._name = name

    @property
    def value(self) -> Any:
        return _CONFIG.read(self._name)

    def __call__(self, new_value: Any = True) -> Any:
        if self._name.startswith("transfer_guard") and new_value not in (None, *_GUARD_LEVELS):
            raise ValueError(
                f"new enum value must be None or in {list(_GUARD_LEVELS)}, got {new_value} "
                f"of type {type(new_value)}."
            )
        return _flag_block(self._name, new_value)


@contextlib.contextmanager
def _flag_block(name: str, value: Any) -> Iterator[None]:
    saved = _CONFIG.read(name)
    _CONFIG.update(name, value)
    try:
        yield
    finally:
        _CONFIG.update(name, saved)


# JAX's State objects for flags refimpl follows (explain_cache_misses) or
# records without effect (the diagnostics and transfer guards)
_FLAG_STATES = (
    "debug_nans", "debug_infs", "log_compiles", "explain_cache_misses",
    "transfer_guard_host_to_device", "transfer_guard_device_to_host",
    "transfer_guard_device_to_device",
)  # fmt: skip


def _copy_to_host_async(tree: Any) -> Any:
    """``jax.copy_to_host_async``: each leaf's ``copy_to_host_async()`` (where it
    has one); the tree itself."""
    for leaf in ri.tree_util.tree_leaves(tree):
        copy = getattr(leaf, "copy_to_host_async", None)
        if copy is not None:
            copy()
    return tree


def _private(name: str) -> types.ModuleType:
    """The few ``jax._src`` modules libraries import at their top level (chex:
    ``compiler``, ``xla_bridge``): empty stand-ins, since refimpl has no XLA
    compiler or backend registry to patch; ``core`` holds only
    ``ShardingTypeError``, the one class JAX 0.10.2 defines nowhere public."""
    module = types.ModuleType(f"jax._src.{name}")
    if name == "core":
        module.ShardingTypeError = ri.errors.ShardingTypeError  # type: ignore[attr-defined]
    if name == "xla_bridge":
        module._backends = {}  # type: ignore[attr-defined]
    if name == "compiler":

        def backend_compile_and_load(*args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError("jax._src.compiler is not provided by refimpl")

        module.backend_compile_and_load = backend_compile_and_load  # type: ignore[attr-defined]
        module.backend_compile = backend_compile_and_load  # type: ignore[attr-defined]
    return module


_GPU_PLATFORMS = ("gpu", "cuda", "rocm")


def _local_pjrt_platform() -> str | None:
    try:
        from refimpl.backends.pjrt import executables

        return executables.local_platform()
    except Exception:  # no native module or plugin: no pjrt platform
        return None


def backend_of_platform(platform: str | None) -> str | None:
    """The refimpl backend standing for a JAX platform name: ``"cpu"`` is the
    backend in effect (refimpl runs on the host; pjrt on its CPU plugin);
    ``"gpu"``/``"cuda"``/``"rocm"``/``"tpu"`` is pjrt when its plugin is of that
    platform, else JAX's "Unknown backend" ``RuntimeError``. refimpl's own names
    (``"ref"``, ``"pjrt"``) and None pass through."""
    if platform is None or platform in ("ref", "pjrt"):
        return platform
    name = str(platform).lower()
    local = _local_pjrt_platform() if config.backend == "pjrt" or name != "cpu" else None
    if name == "cpu":
        return "pjrt" if config.backend == "pjrt" and local == "cpu" else "ref"
    if local is not None and (
        name == local or (name in _GPU_PLATFORMS and local in _GPU_PLATFORMS)
    ):
        return "pjrt"
    raise RuntimeError(
        f"Unknown backend: '{platform}' requested, but no platforms that are instances of "
        f"{platform} are present. Platforms present are: cpu"
    )


def _platform_keyword(fn: Any, keyword: str = "backend", position: int | None = 0) -> Any:
    """``fn`` with its backend argument (by ``keyword`` or at ``position``)
    given as a JAX platform name and translated to refimpl's."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if keyword in kwargs:
            kwargs[keyword] = backend_of_platform(kwargs[keyword])
        elif position is not None and len(args) > position:
            args = (*args[:position], backend_of_platform(args[position]), *args[position + 1 :])
        return fn(*args, **kwargs)

    return wrapper


def _default_backend() -> str:
    """``jax.default_backend()``: the platform name (``"cpu"``, as JAX says on a
    host; pjrt's plugin platform when pjrt runs a GPU plugin)."""
    if config.backend == "pjrt":
        local = _local_pjrt_platform()
        return "gpu" if local in _GPU_PLATFORMS else (local or "cpu")
    return "cpu"


def _backend_of_first_device(device: Any) -> str:
    for name in ["ref"] + (["pjrt"] if _local_pjrt_platform() else []):
        if device == ri.devices(name)[0]:
            return name
    raise NotImplementedError(
        f"jax.jit(device={device!r}): refimpl runs a jit on the first device of a backend; "
        "commit the arguments to the device with jax.device_put instead"
    )


def _jit(fun: Any = None, *, backend: str | None = None, device: Any = None, **kwargs: Any) -> Any:
    """``jax.jit``: ``backend`` is a platform name; ``device`` (JAX's older
    argument) is a backend's first device (where refimpl runs a jit of that
    backend); another device is a ``NotImplementedError``, as for
    ``ri.default_device``."""
    backend = backend_of_platform(backend)
    if device is not None:
        backend = _backend_of_first_device(device)
    return ri.jit(fun, backend=backend, **kwargs)


def _extras(jax_name: str) -> dict[str, Any]:
    """Names JAX spells differently from refimpl, per aliased module."""
    if jax_name == "jax":
        return {
            "config": _CONFIG,
            "__version__": JAX_VERSION,
            "default_backend": _default_backend,
            "jit": _jit,
            "devices": _platform_keyword(ri.devices),
            "local_devices": _platform_keyword(ri.local_devices, position=1),
            "device_count": _platform_keyword(ri.device_count),
            "local_device_count": _platform_keyword(ri.local_device_count),
            "process_index": _platform_keyword(ri.process_index),
            "process_count": _platform_keyword(ri.process_count),
            "pmap": _platform_keyword(ri.pmap, position=None),
            # one process: JAX's process queries (host_* are their old names)
            "process_indices": lambda backend=None: [
                ri.process_index(backend_of_platform(backend))
            ],
            "host_count": _platform_keyword(ri.process_count),
            "host_id": _platform_keyword(ri.process_index),
            "host_ids": lambda backend=None: [ri.process_index(backend_of_platform(backend))],
            "copy_to_host_async": _copy_to_host_async,
            **{name: _FlagState(name) for name in _FLAG_STATES},
        }
    if jax_name == "jax.numpy":
        return {"ndarray": ri.Array} if not hasattr(rnp, "ndarray") else {}
    if jax_name == "jax.custom_derivatives":
        # JAX exports these here too; refimpl defines them above custom_derivatives
        # (gradient_utils builds them from custom_vjp)
        return {"closure_convert": ri.closure_convert, "custom_gradient": ri.custom_gradient}
    return {}


class _AliasModule(types.ModuleType):
    """``jax.X`` standing for ``refimpl.Y``: attribute reads go to the target
    (and to the aliased submodules); missing names raise the pointer to the docs."""

    def __init__(self, jax_name: str, target: types.ModuleType) -> None:
        super().__init__(jax_name, getattr(target, "__doc__", None))
        self.__dict__["_target"] = target
        self.__dict__["_extras"] = _extras(jax_name)
        self.__dict__["__path__"] = []  # a package: jax.numpy.linalg etc. can be imported

    def __getattr__(self, name: str) -> Any:
        extras = self.__dict__["_extras"]
        if name in extras:
            return extras[name]
        target = self.__dict__["_target"]
        sub = f"{self.__name__}.{name}"
        if sub == "jax._src":  # chex reads jax._src.xla_bridge through the attribute
            return importlib.import_module(sub)
        if target_of(sub) is not None:  # the alias, so that its missing names get the pointer too
            try:
                return importlib.import_module(sub)
            except ModuleNotFoundError:
                pass
        try:
            return getattr(target, name)
        except AttributeError:
            pass
        if name.startswith("__"):
            raise AttributeError(name)
        raise _missing(self.__name__, name)

    def __dir__(self) -> list[str]:
        return sorted(set(dir(self.__dict__["_target"])) | set(self.__dict__["_extras"]))


def target_of(jax_name: str) -> str | None:
    """The refimpl module standing for ``jax_name``: from MODULES, or, for a
    submodule of an aliased package not listed there, the same submodule of the
    package's target (``jax.scipy.stats.norm`` -> ``refimpl.scipy.stats.norm``)."""
    if jax_name in MODULES:
        return MODULES[jax_name]
    parent, _, child = jax_name.rpartition(".")
    if not parent or parent == "jax":  # top-level jax.* modules are listed by name
        return None
    parent_target = target_of(parent)
    if parent_target is None:
        return None
    name = f"{parent_target}.{child}"
    try:
        found = importlib.util.find_spec(name)
    except ModuleNotFoundError:
        return None
    return name if found is not None else None


class _Loader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        if spec.name == "jax._src":
            package = types.ModuleType("jax._src", "JAX's internals: only the stand-ins below.")
            package.__path__ = []
            for child in ("compiler", "xla_bridge", "core"):
                module = _private(child)
                setattr(package, child, module)
                sys.modules[module.__name__] = module
            return package
        if spec.name in ("jax._src.compiler", "jax._src.xla_bridge", "jax._src.core"):
            return _private(spec.name.rpartition(".")[2])
        target_name = target_of(spec.name)
        if target_name is None:
            raise ModuleNotFoundError(
                f"No module named {spec.name!r}: refimpl.as_jax has no equivalent "
                f"(see {DOCS} for what refimpl covers)",
                name=spec.name,
            )
        try:
            target = importlib.import_module(target_name)
        except ModuleNotFoundError:
            raise ModuleNotFoundError(
                f"No module named {spec.name!r}: refimpl does not provide {target_name} yet "
                f"(see {DOCS} for what refimpl covers)",
                name=spec.name,
            ) from None
        return _AliasModule(spec.name, target)

    def exec_module(self, module: types.ModuleType) -> None:
        parent, _, child = module.__name__.rpartition(".")
        if parent and parent in sys.modules:
            sys.modules[parent].__dict__[child] = module


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any = None, target: Any = None):
        if fullname == "jax" or fullname.startswith("jax."):
            return importlib.machinery.ModuleSpec(fullname, _Loader(), is_package=True)
        return None


def _is_jax_module(name: str) -> bool:
    # jaxlib stays: refimpl's lowering uses its MLIR bindings, which must not
    # be imported twice
    return name == "jax" or name.startswith("jax.")


@contextlib.contextmanager
def aliased_jax(backend: str | None = None) -> Iterator[None]:
    """Within the block, ``import jax...`` gives refimpl (see the module docstring);
    with ``backend``, refimpl's default backend is set for the block."""
    saved_modules = {n: m for n, m in sys.modules.items() if _is_jax_module(n)}
    for name in saved_modules:
        del sys.modules[name]
    finder = _Finder()
    sys.meta_path.insert(0, finder)
    saved_backend = ri.config.backend
    if backend is not None:
        ri.config.update("backend", backend)
    try:
        yield
    finally:
        ri.config.update("backend", saved_backend)
        sys.meta_path.remove(finder)
        for name in [n for n in sys.modules if _is_jax_module(n)]:
            del sys.modules[name]
        sys.modules.update(saved_modules)


def run(script: str, args: list[str] | None = None, backend: str | None = None) -> dict:
    """Run ``script`` as ``__main__`` with jax aliased to refimpl; its globals."""
    saved_argv = sys.argv
    sys.argv = [script, *(args or [])]
    try:
        with aliased_jax(backend):
            return runpy.run_path(script, run_name="__main__")
    finally:
        sys.argv = saved_argv


def run_module(module: str, args: list[str] | None = None, backend: str | None = None) -> dict:
    """Run ``python -m module args`` with jax aliased to refimpl; its globals.
    (``-m pytest tests/`` runs a JAX test suite on refimpl.)"""
    saved_argv = sys.argv
    sys.argv = [module, *(args or [])]
    try:
        with aliased_jax(backend):
            return runpy.run_module(module, run_name="__main__", alter_sys=True)
    finally:
        sys.argv = saved_argv


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m refimpl.as_jax",
        description="Run a JAX program with `import jax` resolved to refimpl.",
        usage="python -m refimpl.as_jax [--backend ref|pjrt] (script.py | -m module) [args...]",
    )
    parser.add_argument("--backend", choices=["ref", "pjrt"], default=None)
    parser.add_argument("-m", dest="module", default=None, help="run a library module as a script")
    parser.add_argument("script", nargs="?")
    argv = list(sys.argv[1:] if argv is None else argv)
    # as with python itself, what follows the module or the script is the program's own
    ends = [i + 2 for i, a in enumerate(argv) if a == "-m"] or [
        i + 1
        for i, a in enumerate(argv)
        if not a.startswith("-") and argv[i - 1 : i] != ["--backend"]
    ]
    cut = ends[0] if ends else len(argv)
    options = parser.parse_args(argv[:cut])
    rest = argv[cut:]
    if options.module is not None:
        try:
            run_module(options.module, rest, options.backend)
        except SystemExit as e:  # pytest and other tools exit with their status
            return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        return 0
    if options.script is None:
        parser.error("a script or -m module is required")
    run(options.script, rest, options.backend)
    return 0


if __name__ == "__main__":
    sys.exit(main())
