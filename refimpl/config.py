"""Global configuration flags, set with ``ri.config.update(name, value)``.

The flags that change what tracing produces (``enable_x64``) are part of
every jit signature; the others only change behaviour around it.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

_GPU_ALLOCATORS = ("default", "platform", "bfc", "cuda_async")
# JAX 0.10.2's values of jax_default_matmul_precision: the precision names, then
# the lax.DotAlgorithmPreset names
MATMUL_PRECISIONS = (
    "default", "high", "highest", "bfloat16", "tensorfloat32", "float32",
    "ANY_F8_ANY_F8_F32", "ANY_F8_ANY_F8_F32_FAST_ACCUM", "ANY_F8_ANY_F8_ANY",
    "ANY_F8_ANY_F8_ANY_FAST_ACCUM", "F16_F16_F16", "F16_F16_F32", "BF16_BF16_BF16",
    "BF16_BF16_F32", "BF16_BF16_F32_X3", "BF16_BF16_F32_X6", "BF16_BF16_F32_X9",
    "TF32_TF32_F32", "TF32_TF32_F32_X3", "F32_F32_F32", "F64_F64_F64",
)  # fmt: skip


def check_matmul_precision(value: Any) -> None:
    """JAX's ValueError for a value ``jax_default_matmul_precision`` does not take."""
    if value is not None and value not in MATMUL_PRECISIONS:
        raise ValueError(
            f"new enum value must be None or in {list(MATMUL_PRECISIONS)}, "
            f"got {value} of type {type(value)}."
        )


# jax_numpy_rank_promotion's and jax_numpy_dtype_promotion's values
RANK_PROMOTIONS = ("allow", "warn", "raise")
DTYPE_PROMOTIONS = ("standard", "strict")


def check_promotion_mode(name: str, value: Any) -> None:
    """JAX 0.10.2's ValueError for a mode the numpy promotion flags do not take
    (the rank flag is a string enum, the dtype flag a Python enum: two wordings)."""
    if name == "numpy_rank_promotion" and value not in RANK_PROMOTIONS:
        raise ValueError(
            f"new enum value must be in {list(RANK_PROMOTIONS)}, got {value} of type {type(value)}."
        )
    if name == "numpy_dtype_promotion" and value not in DTYPE_PROMOTIONS:
        raise ValueError(f"{value!r} is not a valid NumpyDtypePromotion")


# JAX 0.10.2's PRNG implementations (refimpl.random._keys._IMPLS)
_PRNG_IMPLS = ("threefry2x32", "rbg", "unsafe_rbg", "threefry4x32", "philox2x32", "philox4x32")


def _check_gpu_option(name: str, value: Any) -> Any:
    if value is None:
        return None
    if name == "pjrt_gpu_preallocate":
        if not isinstance(value, bool):
            raise TypeError(f"config.update: {name!r} takes a bool or None, got {value!r}")
        return value
    if name == "pjrt_gpu_memory_fraction":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
            raise ValueError(f"config.update: {name!r} takes a fraction in (0, 1], got {value!r}")
        return float(value)
    if value not in _GPU_ALLOCATORS:
        raise ValueError(
            f"config.update: {name!r} takes one of {', '.join(_GPU_ALLOCATORS)}, got {value!r}"
        )
    return value


class Config:
    """A small typed flag store. Unknown names are an error, not a no-op."""

    _defaults: dict[str, Any] = {
        "enable_x64": False,
        "backend": "ref",
        "explain_cache_misses": False,
        # jit runs its Python function op by op (refimpl.contexts.disable_jit).
        "disable_jit": False,
        "ref_num_devices": 1,
        # Simulated processes the reference devices are split among; this
        # process is process 0, the others' devices are not addressable
        # (refimpl.backends.ref.arrays.Device; docs/semantics.md "Beyond one process").
        "ref_num_processes": 1,
        # x[i] with a static int i outside the axis: False clamps it (JAX's
        # rule), True raises IndexError (NumPy's) (refimpl.numpy._indexing).
        "checked_indexing": False,
        # Persistent compilation cache (refimpl.backends.pjrt.compilation_cache):
        # a directory (None: off) and its size limit in bytes.
        "compilation_cache_dir": None,
        "compilation_cache_max_size": 1 << 30,
        # Client create options of a GPU PJRT plugin (None: JAX's
        # XLA_PYTHON_CLIENT_MEM_FRACTION / _PREALLOCATE / _ALLOCATOR, else the
        # plugin's default); read when the client is made (runtime.get_client).
        "pjrt_gpu_memory_fraction": None,
        "pjrt_gpu_preallocate": None,
        "pjrt_gpu_allocator": None,
        # refimpl's frames in tracebacks of errors leaving the public API:
        # "auto"/"remove_frames" filter them out, "off" keeps them (traceback_util)
        "traceback_filtering": "auto",
        # A raw uint32 key given to a refimpl.random function: "allow" (JAX's
        # default), "warn" (a UserWarning) or "error" (a ValueError).
        "legacy_prng_key": "allow",
        # JAX's jax_mutable_array_checks (its default True): refimpl always makes
        # the checks (a ref passed twice, returned, closed over and passed), so
        # only True is accepted.
        "mutable_array_checks": True,
        # The PRNG implementation of keys made without impl= and of raw keys
        # (jax_default_prng_impl): one of _PRNG_IMPLS.
        "default_prng_impl": "threefry2x32",
        # jax_check_tracer_leaks: when a staging trace (jit, a control-flow
        # body) or a vmap ends, raise if one of its tracers is still reachable
        # (refimpl.tracing.check_no_leaks). Off: no cost at all.
        "check_tracer_leaks": False,
        # jax_no_tracing (refimpl.contexts.no_tracing): a user's jit that would
        # trace (a cache miss) raises RuntimeError instead; eager operations'
        # own jits are exempt.
        "no_tracing": False,
        # jax_default_matmul_precision: the precision dot_general and the
        # convolutions record when given none (None, or one of
        # MATMUL_PRECISIONS); part of every jit signature. Read it with
        # matmul_precision(): jax.default_matmul_precision overrides it in a thread.
        "default_matmul_precision": None,
        # jax_numpy_rank_promotion: what jnp's element-wise functions do with
        # operands of different ranks (not scalars): "allow" broadcasts them,
        # "warn" also warns, "raise" is a ValueError (refimpl.numpy._promote).
        # jax_numpy_dtype_promotion: "standard" promotes by JAX's lattice,
        # "strict" allows only weak values to take another's type (refimpl.dtypes).
        # Both change what tracing produces: part of every jit signature.
        "numpy_rank_promotion": "allow",
        "numpy_dtype_promotion": "standard",
    }

    def __init__(self) -> None:
        self._values: dict[str, Any] = dict(self._defaults)
        # name -> callbacks run after each update of that flag (see observe)
        self._observers: dict[str, list[Callable[[Any], None]]] = {}
        env_backend = os.environ.get("REFIMPL_BACKEND")
        if env_backend:
            self._values["backend"] = env_backend
        if os.environ.get("REFIMPL_ENABLE_X64", "").lower() in ("1", "true"):
            self._values["enable_x64"] = True
        env_devices = os.environ.get("REFIMPL_REF_NUM_DEVICES")
        if env_devices:
            if not env_devices.isdigit() or int(env_devices) < 1:
                raise ValueError(
                    f"REFIMPL_REF_NUM_DEVICES must be a positive integer, got {env_devices!r}"
                )
            self._values["ref_num_devices"] = int(env_devices)
        env_filtering = os.environ.get("REFIMPL_TRACEBACK_FILTERING")
        if env_filtering:
            self._values["traceback_filtering"] = env_filtering
        if os.environ.get("REFIMPL_CHECK_TRACER_LEAKS", "").lower() in ("1", "true"):
            self._values["check_tracer_leaks"] = True
        env_cache = os.environ.get("REFIMPL_COMPILATION_CACHE_DIR")
        if env_cache:
            self._values["compilation_cache_dir"] = env_cache

    def update(self, name: str, value: Any) -> None:
        if name not in self._values:
            known = ", ".join(sorted(self._values))
            raise ValueError(f"config.update: unknown flag {name!r} (known: {known})")
        if name == "compilation_cache_dir":
            if value is not None and not isinstance(value, (str, os.PathLike)):
                raise TypeError(
                    f"config.update: 'compilation_cache_dir' takes a path or None, got {value!r}"
                )
            path = None if value is None else os.fspath(value)
            if isinstance(path, bytes):
                path = os.fsdecode(path)
            if path is not None and ("\x00" in path or not path):
                # checked here: every later compile would fail on it otherwise
                raise ValueError(
                    "config.update: 'compilation_cache_dir' must be a non-empty path without "
                    f"NUL bytes, got {value!r}"
                )
            self._values[name] = path
            return
        if name.startswith("pjrt_gpu_"):
            self._values[name] = _check_gpu_option(name, value)
            return
        expected = type(self._defaults[name])
        if expected is bool and not isinstance(value, bool):
            raise TypeError(f"config.update: {name!r} takes a bool, got {value!r}")
        if expected is int and (isinstance(value, bool) or not isinstance(value, int)):
            raise TypeError(f"config.update: {name!r} takes an int, got {value!r}")
        if name == "backend" and value not in ("ref", "pjrt"):
            raise ValueError(f"config.update: backend must be 'ref' or 'pjrt', got {value!r}")
        if name == "traceback_filtering" and value not in ("auto", "remove_frames", "off"):
            raise ValueError(
                "config.update: traceback_filtering must be 'auto', 'remove_frames' or 'off', "
                f"got {value!r}"
            )
        if name == "legacy_prng_key" and value not in ("allow", "warn", "error"):
            raise ValueError(
                f"config.update: legacy_prng_key must be 'allow', 'warn' or 'error', got {value!r}"
            )
        if name == "default_prng_impl" and value not in _PRNG_IMPLS:
            raise ValueError(
                f"config.update: default_prng_impl must be one of {', '.join(_PRNG_IMPLS)}, "
                f"got {value!r}"
            )
        if name == "mutable_array_checks" and value is not True:
            raise ValueError(
                "config.update: refimpl always checks mutable array references "
                "(mutable_array_checks=False is not supported)"
            )
        if name == "default_matmul_precision":
            check_matmul_precision(value)
        check_promotion_mode(name, value)
        if name in ("ref_num_devices", "ref_num_processes") and value < 1:
            raise ValueError(f"config.update: {name} must be >= 1, got {value!r}")
        if name == "compilation_cache_max_size" and value < 0:
            raise ValueError(
                f"config.update: compilation_cache_max_size must be >= 0, got {value!r}"
            )
        self._values[name] = value
        for callback in self._observers.get(name, ()):
            callback(value)

    def observe(self, name: str, callback: Callable[[Any], None]) -> None:
        """Call ``callback(value)`` after each ``update(name, value)``.

        The layers above config react to a flag this way (the caches module
        empties the C++ fast path's caches when ``disable_jit`` changes), so
        that config imports none of them."""
        if name not in self._values:
            raise AttributeError(f"config has no flag {name!r}")
        self._observers.setdefault(name, []).append(callback)

    def __getattr__(self, name: str) -> Any:
        if name == "default_matmul_precision":  # this thread's block over the flag, as JAX's
            return matmul_precision()
        if name in _PROMOTION_FLAGS:  # the same
            return _local.__dict__.get(name, self.__dict__["_values"][name])
        try:
            return self.__dict__["_values"][name]
        except KeyError:
            raise AttributeError(f"config has no flag {name!r}") from None

    def snapshot(self) -> dict[str, Any]:
        return dict(self._values)


config = Config()


# jax.default_matmul_precision's value in this thread (refimpl.contexts), over
# the flag: as JAX's, a config.update inside the block changes the flag, seen
# once the block is left.
_local = threading.local()
UNSET = _UNSET = object()


def matmul_precision() -> Any:
    """The default matmul precision in effect: the innermost
    ``default_matmul_precision`` block's value in this thread, else the flag."""
    value = getattr(_local, "matmul_precision", _UNSET)
    return config._values["default_matmul_precision"] if value is _UNSET else value


# jax.numpy_rank_promotion / jax.numpy_dtype_promotion blocks: this thread's
# mode over the flag, as JAX's (its contexts are thread-local, config.update
# sets the flag every thread sees; JaxTestCase sets its defaults in a block).
_PROMOTION_FLAGS = ("numpy_rank_promotion", "numpy_dtype_promotion")


def numpy_promotion() -> tuple[str, str]:
    """``(numpy_rank_promotion, numpy_dtype_promotion)`` in effect in this
    thread (its innermost blocks', else the flags): part of every jit
    signature (a function traced under one mode may raise, warn or promote
    differently under another)."""
    local = _local.__dict__
    values = config._values
    return (
        local.get("numpy_rank_promotion", values["numpy_rank_promotion"]),
        local.get("numpy_dtype_promotion", values["numpy_dtype_promotion"]),
    )


def local_promotion(name: str) -> Any:
    """This thread's block value of a promotion flag, ``UNSET`` outside blocks."""
    return _local.__dict__.get(name, UNSET)


def set_local_promotion(name: str, value: Any) -> Any:
    """Set this thread's block value of a promotion flag (``UNSET`` to clear
    it; the value is checked); return the previous one."""
    previous = _local.__dict__.get(name, UNSET)
    if value is UNSET:
        _local.__dict__.pop(name, None)
    else:
        check_promotion_mode(name, value)
        _local.__dict__[name] = value
    for callback in config._observers.get(name, ()):
        callback(value)
    return previous


@contextlib.contextmanager
def promotion_block(name: str, value: str) -> Iterator[None]:
    """This thread's mode of a promotion flag within the block (JAX's contexts
    are thread-local; a ``config.update`` inside changes the flag, seen after).
    ``jax.numpy_*_promotion`` are these; jnp functions that promote as JAX's
    under a fixed mode (``mgrid``: "standard") use them too."""
    previous = set_local_promotion(name, value)
    try:
        yield
    finally:
        set_local_promotion(name, previous)


@contextlib.contextmanager
def library_promotion() -> Iterator[None]:
    """The promotion modes of JAX's defaults ("allow", "standard") in this
    thread for the block: for programs refimpl builds from its own code (a
    decomposition's lowering), whose meaning must not change with the
    user's modes, as JAX's internal programs broadcast and cast explicitly."""
    rank = promotion_block("numpy_rank_promotion", "allow")
    with rank, promotion_block("numpy_dtype_promotion", "standard"):
        yield


def in_local_block() -> bool:
    """Whether this thread is in a block of the default matmul precision or
    of a promotion flag (the PJRT fast path then keys on this thread's values)."""
    local = _local.__dict__
    in_precision_block = local.get("matmul_precision", _UNSET) is not _UNSET
    return in_precision_block or any(name in local for name in _PROMOTION_FLAGS)


def thread_matmul_precision() -> tuple[bool, Any]:
    """Whether this thread is in a ``default_matmul_precision`` block, and
    the innermost block's value (the PJRT fast path keys on both)."""
    value = getattr(_local, "matmul_precision", _UNSET)
    return (False, None) if value is _UNSET else (True, value)


def set_local_matmul_precision(value: Any) -> Any:
    """Set this thread's value (``_UNSET`` to clear it); return the previous one."""
    previous = getattr(_local, "matmul_precision", _UNSET)
    _local.matmul_precision = value
    for callback in config._observers.get("default_matmul_precision", ()):
        callback(matmul_precision())
    return previous
