"""The persistent compilation cache: compiled executables reused across processes.

Turned on with ``ri.config.update("compilation_cache_dir", path)`` or the
environment variable ``REFIMPL_COMPILATION_CACHE_DIR``. Every compile of the
PJRT backend (the Python path, the C++ fast path's misses, ``Lowered.compile``,
pmap's executables over N replicas) goes through :func:`compile_cached`,
which looks for an entry before compiling and writes one after.

* **Key**: SHA-256 over the StableHLO module text, the serialized compile
  options (which hold the device assignment), the plugin's identity (its
  package directory and file name, size and modification time, PJRT API
  version, attributes, platform name and version, and the kinds of its
  devices, e.g. the GPU model), ``XLA_FLAGS`` and refimpl's version. Anything
  that could make a stored executable wrong for this process changes the key.
* **Entry**: one file ``<key>.rexe``: a header line with the format and the
  key, the payload's length and SHA-256, then the payload (the bytes of
  ``PJRT_Executable_Serialize``, loaded with
  ``PJRT_Executable_DeserializeAndLoad``). A file whose header, key, length
  or checksum is wrong, or that the plugin refuses to load, is ignored with
  a :class:`CompilationCacheWarning`, and the program is compiled again (and
  the entry rewritten).
* **Atomic writes**: the entry (and a pointer, below) is written to a temporary file in the same
  directory and renamed over the final name (``os.replace``), so a reader
  sees either no entry or a whole one, whatever other processes do.
* **Size limit** (``compilation_cache_max_size`` bytes, default 1 GiB):
  after a write, the least recently used entries (a hit refreshes the
  file's modification time) are deleted until the total fits.

**Two levels.** Computing the StableHLO key needs the module, i.e. lowering
the traced Program (150 ms for a 1,000-op chain: most of a warm first call).
So a second, first-level key is computed from the traced Program itself
(:func:`program_key`): a canonical serialization of its equations, types,
literals, constants (by content hash) and params, plus the function name,
donation, lowering platforms, device, the plugin's identity, ``XLA_FLAGS``,
jaxlib's and refimpl's versions and a fingerprint of refimpl's source files (the lowering
rules are Python code: an edited rule must not find the executables of the
old one). It names a small pointer file ``<program key>.rkey`` holding the
StableHLO key of the executable it maps to. A warm first call traces, hashes
the Program, follows the pointer and loads the executable: it never lowers.
A Program that cannot be keyed this way (a param that is a Python callable
or an object of an unknown type, a primitive whose lowering rule lives
outside refimpl) only uses the StableHLO level; params a lowering rule never
reads (``LOWERING_READS``: a custom_jvp's jvp rule, say) are left out. The
pointer is written whenever the StableHLO level hits or compiles, and is only
a shortcut: a missing or damaged pointer, or one naming an entry that was
evicted, falls back to lowering (a damaged pointer with a warning). Pointers
count towards the size limit and are evicted like entries. A module with a
host callback (``@refimpl_host_callback``, refimpl.backends.pjrt.host_callbacks)
is never cached: its executable names Python callables by process-local ids.

:func:`stats` counts hits, misses, writes and rejected entries in this
process, and ``program_hits``: the hits found through a program key, i.e.
without lowering (tests and the benchmark read it).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import os
import secrets
import struct
import sys
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from refimpl.config import config

__all__ = [
    "CompilationCacheWarning",
    "cache_dir",
    "compile_cached",
    "entry_key",
    "plugin_identity",
    "program_key",
    "reset_stats",
    "stats",
]

_MAGIC = b"refimpl-executable-v1"
_SUFFIX = ".rexe"
_POINTER_MAGIC = b"refimpl-program-key-v1"
_POINTER_SUFFIX = ".rkey"
# the custom call of host callbacks (refimpl.backends.pjrt.host_callbacks)
_HOST_CALLBACK_TARGET = "refimpl_host_callback"


class CompilationCacheWarning(UserWarning):
    """A cache entry could not be used (corrupt, truncated, foreign) or written."""


_stats = {"hits": 0, "misses": 0, "writes": 0, "rejected": 0, "program_hits": 0}
_stats_lock = threading.Lock()


def stats() -> dict[str, int]:
    """Counts in this process: ``hits``, ``misses`` (compiled), ``writes``, ``rejected``,
    ``program_hits`` (hits through a program key: nothing was lowered)."""
    with _stats_lock:
        return dict(_stats)


def reset_stats() -> None:
    with _stats_lock:
        for name in _stats:
            _stats[name] = 0


def _count(name: str) -> None:
    with _stats_lock:
        _stats[name] += 1


def cache_dir() -> Path | None:
    """The configured cache directory, or None when the cache is off."""
    value = config.compilation_cache_dir
    return None if not value else Path(value)


def is_persistent_cache_enabled() -> bool:
    """Whether compiled executables are kept on disk between processes (JAX's
    name for the question): a cache directory is configured."""
    return cache_dir() is not None


def _refimpl_version() -> str:
    return _dist_version("refimpl")


@functools.cache
def _dist_version(distribution: str) -> str:
    """An installed distribution's version, from its ``.dist-info`` directory name.

    ``importlib.metadata`` would take 60-80 ms to import in a fresh process,
    a fifth of a warm first call; a directory scan of ``sys.path`` takes ~1 ms.
    """
    for entry in sys.path:
        try:
            found = sorted(Path(entry or ".").glob(f"{distribution}-*.dist-info"))
        except OSError:
            continue
        if found:
            return found[0].name[len(distribution) + 1 : -len(".dist-info")]
    return "unknown"  # a source tree that is not installed


@functools.cache
def _source_identity() -> str:
    """A fingerprint of refimpl's code: every ``.py`` file of the package and the
    native extension, by path, size and modification time (~1 ms for ~100 files).

    Part of the program key only: the StableHLO key does not need it (a change
    of a lowering rule shows in the text), but a program key maps a traced
    Program to an executable through the lowering rules of the process that
    wrote it, so any edit of refimpl (an editable install keeps its version)
    must miss. A touched but unchanged file misses too, which is only slower.
    """
    root = Path(__file__).parent.parent.parent  # the refimpl package
    digest = hashlib.sha256()
    files = [*root.rglob("*.py")]
    native = sys.modules.get("refimpl._pjrt")
    native_file: str | None = getattr(native, "__file__", None)
    if native is not None and native_file:
        files.append(Path(native_file))
    for path in sorted(files):
        try:
            status = path.stat()
        except OSError:
            continue
        digest.update(f"{path}:{status.st_size}:{status.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def plugin_identity(client: Any) -> str:
    """What identifies the plugin build and the hardware behind ``client``
    (part of every key).

    The plugin reports no build id, so its package directory and file name
    (``xla_cuda12/xla_cuda_plugin.so`` and ``xla_cuda13/...`` share the file
    name), the file's size and modification time stand for it next to the API
    version and the attributes it reports. The kinds of the client's devices
    (``cpu``, ``NVIDIA H100 80GB HBM3``, ...) are added: a GPU executable is
    compiled for one GPU generation and must not be loaded on another.
    """
    return f"{_plugin_identity(client.plugin)};devices={_device_kinds(client)}"


@functools.cache
def _device_kinds(client: Any) -> str:
    return ",".join(sorted({str(device.kind) for device in client.devices()}))


@functools.cache
def _plugin_identity(plugin: Any) -> str:
    path = Path(plugin.path)
    try:
        status = path.stat()
        file_id = f"{path.parent.name}/{path.name}:{status.st_size}:{status.st_mtime_ns}"
    except OSError:
        file_id = f"{path.parent.name}/{path.name}:?"
    attributes = sorted((str(k), str(v)) for k, v in plugin.attributes.items())
    return f"{file_id};api={plugin.api_version};attributes={attributes}"


@functools.cache
def _xla_flags() -> str:
    """``XLA_FLAGS`` as the plugin read it (at its start, before any compile):
    the flags change what it compiles, so they are part of every key."""
    return os.environ.get("XLA_FLAGS", "")


def entry_key(module_text: str, compile_options: bytes, client: Any) -> str:
    """The hex SHA-256 key of one executable (see the module docstring)."""
    digest = hashlib.sha256()
    for part in (
        _MAGIC,
        _refimpl_version().encode(),
        plugin_identity(client).encode(),
        _xla_flags().encode(),
        f"{client.platform_name}:{client.platform_version}".encode(),
        compile_options,
        module_text.encode(),
    ):
        digest.update(len(part).to_bytes(8, "little"))
        digest.update(part)
    return digest.hexdigest()


def program_key(
    program: Any,
    *,
    name: str,
    aliases: dict[int, int] | None,
    donated: Any,
    platforms: tuple[str, ...] | None,
    target: str,
    client: Any,
    kept: tuple[bool, ...] | None = None,
) -> str | None:
    """The first-level key: hex SHA-256 of a traced Program and everything its
    lowering and compilation depend on, or None when the Program holds
    something without a stable content (see :func:`program_fingerprint`).

    ``name``, ``aliases``, ``donated``, ``platforms`` and ``kept`` are the arguments of
    ``lowering.lower_program``; ``target`` describes the compile options (the
    device assignment), which are then derived from it by refimpl's code.
    """
    try:
        text = program_fingerprint(program)
    except Unkeyable:
        return None
    digest = hashlib.sha256()
    for part in (
        _POINTER_MAGIC,
        _refimpl_version(),
        _source_identity(),
        _dist_version("jaxlib"),
        plugin_identity(client),
        _xla_flags(),
        f"{client.platform_name}:{client.platform_version}",
        f"x64={config.enable_x64}",
        target,
        repr(name),
        repr(sorted((aliases or {}).items())),
        repr(None if donated is None else [bool(d) for d in donated]),
        repr(platforms),
        repr(kept),
        text,
    ):
        encoded = part if isinstance(part, bytes) else part.encode()
        digest.update(len(encoded).to_bytes(8, "little"))
        digest.update(encoded)
    return digest.hexdigest()


class Unkeyable(Exception):
    """A Program holds a value whose content cannot be serialized stably."""


def program_fingerprint(program: Any) -> str:
    """A canonical text of ``program``: equal for Programs that lower to the same
    module, whatever their variables' ids, different whenever an equation, a
    type, a literal, a constant or a param differs.

    Variables are numbered in order of appearance; constants and array params
    stand as the SHA-256 of their bytes. Params may be None, bools, numbers,
    strings, bytes, NumPy dtypes, scalars and arrays, ShapedArrays, slices,
    Programs, enums, and tuples, lists, dicts, named tuples and dataclasses of
    those. Anything else (a callable above all: its behaviour is not in its
    name) raises :class:`Unkeyable`, as does a primitive whose lowering rule is
    not refimpl's own code (the source fingerprint would not cover it). Only
    the params a rule reads are serialized when it is listed in
    ``LOWERING_READS``.
    """
    return _Fingerprint().program(program)


def _type_name(kind: type) -> str:
    return f"{kind.__module__}.{kind.__qualname__}"


def _is_refimpl_code(function: Any) -> bool:
    module = getattr(function, "__module__", None)
    return isinstance(module, str) and (module == "refimpl" or module.startswith("refimpl."))


# Lowering rules that read only some of their equation's params (by the rule's
# module and qualified name): the params they ignore (a custom_jvp's jvp rule, a
# custom_vjp's fwd/bwd, a custom_vmap's batching rule: Python callables) are
# left out of the fingerprint, so such Programs still get a program key. Each
# rule's keyword-only parameters must be exactly these names (a test checks).
LOWERING_READS: dict[str, tuple[str, ...]] = {
    "refimpl.custom_derivatives._call_lowering": ("call",),
    "refimpl.custom_derivatives._custom_jvp_call_lowering": ("call", "jvp"),
    "refimpl.custom_batching._lowering": ("call", "name", "ref_written"),
    # not the policy; the barrier before a recomputation depends on the other two
    "refimpl.ad_checkpoint._remat_lowering": ("program", "differentiated", "prevent_cse"),
    "refimpl.ad_checkpoint._remat_opt_lowering": ("fwd", "num_call_consts"),
}


@functools.cache
def _primitive_reads(primitive: Any) -> tuple[str, ...] | None:
    """The params ``primitive``'s lowering reads, or None for all of them."""
    rule = primitive.lowering
    return LOWERING_READS.get(f"{rule.__module__}.{rule.__qualname__}")


@functools.cache
def _primitive_text(primitive: Any) -> str:
    rule = primitive.lowering
    if rule is None or not _is_refimpl_code(rule):
        raise Unkeyable(f"the lowering rule of {primitive.name!r} is not refimpl's")
    for cell in getattr(rule, "__closure__", None) or ():
        try:
            captured = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if callable(captured) and not _is_refimpl_code(captured):
            raise Unkeyable(f"the lowering rule of {primitive.name!r} captures {captured!r}")
    return f"{_type_name(type(primitive))}:{primitive.name}"


def _only(params: dict[str, Any], names: tuple[str, ...]) -> list[tuple[str, Any]]:
    return [(name, params[name]) for name in names if name in params]


def _dtype_text(dtype: np.dtype) -> str:
    return f"{dtype.name}/{dtype.str}"


def _array_text(array: np.ndarray) -> str:
    array = np.ascontiguousarray(array)
    if array.dtype.hasobject:
        raise Unkeyable("an object array")
    # an ndarray is a Buffer, which numpy's stubs declare only for Python 3.12+
    content = hashlib.sha256(array.view(np.uint8).reshape(-1) if array.size else b"")  # type: ignore[arg-type]
    return f"array({_dtype_text(array.dtype)},{array.shape},{content.hexdigest()})"


class _Fingerprint:
    """One serialization: its variable numbering and the Programs seen so far."""

    def __init__(self) -> None:
        self.vars: dict[int, int] = {}
        self.programs: dict[int, int] = {}
        self.keep: list[Any] = []  # holds what the id() keys point to
        self.avals: dict[Any, str] = {}  # id(aval) or (shape, dtype, weak) -> text

    def aval(self, aval: Any) -> str:
        # by identity first (tracing shares aval objects), then by value: the
        # dataclass __eq__ a dict lookup would call is slow (~1,000 per Program)
        found = self.avals.get(id(aval))
        if found is not None:
            return found
        kind = type(aval).__name__
        if kind == "ShapedArray":
            value = (aval.shape, aval.dtype, aval.weak_type)
            found = self.avals.get(value)
            if found is None:
                weak = "~" if aval.weak_type else ""
                found = self.avals[value] = f"{weak}{_dtype_text(aval.dtype)}{list(aval.shape)}"
        elif kind == "AbstractRef":
            found = f"Ref{{{self.aval(aval.inner)}}}"
        else:
            raise Unkeyable(f"an abstract value of type {_type_name(type(aval))}")
        self.avals[id(aval)] = found
        self.keep.append(aval)
        return found

    def bind(self, var: Any) -> str:
        number = self.vars.setdefault(id(var), len(self.vars))
        self.keep.append(var)
        return f"v{number}:{self.aval(var.aval)}"

    def atom(self, atom: Any) -> str:
        number = self.vars.get(id(atom))
        if number is not None:
            return f"v{number}"
        if hasattr(atom, "value"):  # a Literal
            return f"lit({self.aval(atom.aval)},{atom.value.tobytes().hex()})"
        raise Unkeyable(f"an unbound variable {atom!r}")  # not expected in a valid Program

    def program(self, program: Any) -> str:
        number = self.programs.get(id(program))
        if number is not None:  # the same object again: lowered once, as one function
            return f"P#{number}"
        self.programs[id(program)] = len(self.programs)
        self.keep.append(program)
        lines = [
            "{ consts "
            + " ".join(self.bind(v) for v in program.const_vars)
            + " = "
            + " ".join(_array_text(np.asarray(c)) for c in program.consts)
            + " ; "
            + " ".join(self.bind(v) for v in program.in_vars)
        ]
        for eqn in program.eqns:
            primitive = _primitive_text(eqn.primitive)  # checks its lowering rule first
            inputs = " ".join(self.atom(a) for a in eqn.inputs)
            reads = _primitive_reads(eqn.primitive) if eqn.params else None
            items = sorted(eqn.params.items() if reads is None else _only(eqn.params, reads))
            params = ",".join(f"{key}={self.value(value)}" for key, value in items)
            outputs = " ".join(self.bind(v) for v in eqn.outputs)
            lines.append(f"{outputs} = {primitive}[{params}] {inputs}")
        lines.append("in " + " ".join(self.atom(a) for a in program.out_vars) + " }")
        return "\n".join(lines)

    def value(self, value: Any) -> str:
        kind = type(value)
        if value is None or kind in (bool, int, str, bytes):
            return f"{kind.__name__}:{value!r}"
        if kind is float:
            return f"float:{struct.pack('<d', value).hex()}"  # exact, NaN payloads too
        if kind is complex:
            return f"complex:{struct.pack('<dd', value.real, value.imag).hex()}"
        if isinstance(value, np.dtype):
            return f"dtype:{_dtype_text(value)}"
        if isinstance(value, np.ndarray):
            return _array_text(value)
        if isinstance(value, np.generic):
            return f"scalar:{_array_text(np.asarray(value))}"
        if isinstance(value, type) and issubclass(value, np.generic):
            return f"scalar_type:{_dtype_text(np.dtype(value))}"
        if isinstance(value, enum.Enum):
            return f"enum:{_type_name(kind)}.{value.name}"
        if kind.__name__ in ("ShapedArray", "AbstractRef"):
            return f"aval:{self.aval(value)}"
        if kind.__name__ == "Program" and hasattr(value, "eqns"):
            return self.program(value)
        if kind is slice:
            parts = (value.start, value.stop, value.step)
            return "slice(" + ",".join(self.value(v) for v in parts) + ")"
        if isinstance(value, tuple) and hasattr(value, "_fields"):  # a named tuple
            items = ",".join(f"{f}={self.value(getattr(value, f))}" for f in value._fields)
            return f"{_type_name(kind)}({items})"
        if kind in (tuple, list):
            return f"{kind.__name__}(" + ",".join(self.value(v) for v in value) + ")"
        if kind is dict:
            pairs = sorted((self.value(k), self.value(v)) for k, v in value.items())
            return "dict(" + ",".join(f"{k}:{v}" for k, v in pairs) + ")"
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            items = ",".join(
                f"{f.name}={self.value(getattr(value, f.name))}" for f in dataclasses.fields(value)
            )
            return f"{_type_name(kind)}({items})"
        # an object that is not data itself (a custom_jvp's rule) names the
        # part of it a lowering rule reads
        part = getattr(value, "lowering_key", None)
        if part is not None:
            return f"{_type_name(kind)}({self.value(part)})"
        raise Unkeyable(f"a param of type {_type_name(kind)}")


def compile_cached(
    client: Any,
    module_text: Callable[[], str],
    artifact: Callable[[], bytes],
    options: bytes | Callable[[], bytes],
    program_key: Callable[[], str | None] | None = None,
) -> Any:
    """``client.compile(artifact(), options)``, through the cache when it is on.

    ``module_text``, ``artifact`` and ``options`` (bytes, or a function giving
    them) are called only when needed: the text for the StableHLO key, the
    artifact on a miss. ``program_key`` gives the first-level key (see the
    module docstring; None: that Program cannot be keyed); when its pointer
    leads to a usable entry nothing else is called, so nothing is lowered.
    """
    directory = cache_dir()
    if directory is None:
        return client.compile(artifact(), options() if callable(options) else options)
    first = program_key() if program_key is not None else None
    tried = None
    if first is not None:
        pointer = directory / f"{first}{_POINTER_SUFFIX}"
        tried = _read_pointer(pointer, first)
        if tried is not None:
            executable = _load(client, directory / f"{tried}{_SUFFIX}", tried)
            if executable is not None:
                _touch(pointer)
                _count("hits")
                _count("program_hits")
                return executable
    options = options() if callable(options) else options
    text = module_text()
    if f"@{_HOST_CALLBACK_TARGET}(" in text:
        # never cached: the executable names its Python callables by process-local ids
        return client.compile(artifact(), options)
    key = entry_key(text, options, client)
    path = directory / f"{key}{_SUFFIX}"
    # the entry the pointer named was just found missing or unusable: not again
    executable = _load(client, path, key) if key != tried else None
    if executable is not None:
        _count("hits")
    else:
        _count("misses")
        executable = client.compile(artifact(), options)
        if not _store(directory, path, key, executable):
            return executable
    if first is not None:
        _write_atomically(
            directory, pointer, b" ".join([_POINTER_MAGIC, first.encode(), key.encode()])
        )
    return executable


def _touch(path: Path) -> None:
    try:
        os.utime(path)  # least recently used = oldest modification time
    except OSError:
        pass


def _read_pointer(path: Path, first: str) -> str | None:
    """The StableHLO key the pointer file ``path`` (program key ``first``) names,
    or None (no pointer; a damaged one is also warned about)."""
    data = _read_bytes(path)
    if data is None:
        return None
    fields = data.split(b" ")
    if (
        len(fields) != 3
        or fields[0] != _POINTER_MAGIC
        or fields[1] != first.encode()
        or len(fields[2]) != 64
        or fields[2].strip(b"0123456789abcdef")
    ):
        _reject(path, "not a refimpl program-key pointer for this key, or it is damaged")
        return None
    return fields[2].decode("ascii")


def _read_bytes(path: Path) -> bytes | None:
    """The file's bytes, or None: missing, or unreadable (warned about)."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as err:
        _reject(path, f"unreadable: {err}", stacklevel=5)
        return None


def _reject(path: Path, why: str, stacklevel: int = 4) -> None:
    _count("rejected")
    warnings.warn(
        f"compilation cache: ignoring the entry {path.name} ({why}); compiling again",
        CompilationCacheWarning,
        stacklevel=stacklevel,
    )


def _load(client: Any, path: Path, key: str) -> Any:
    """The executable stored at ``path`` for ``key``, or None (missing or unusable)."""
    data = _read_bytes(path)
    if data is None:
        return None
    header, newline, rest = data.partition(b"\n")
    fields = header.split(b" ")
    if not newline or len(fields) != 4 or fields[0] != _MAGIC:
        _reject(path, "not a refimpl cache entry, or its header is damaged")
        return None
    if fields[1].decode("ascii", "replace") != key:
        _reject(path, "it was written for another key")
        return None
    try:
        length = int(fields[2])
    except ValueError:
        _reject(path, "its header is damaged")
        return None
    if len(rest) != length:
        _reject(path, f"truncated or padded: {len(rest)} payload bytes, expected {length}")
        return None
    if hashlib.sha256(rest).hexdigest().encode() != fields[3]:
        _reject(path, "its checksum does not match: the file is corrupt")
        return None
    try:
        executable = client.deserialize_executable(rest)
    except Exception as err:  # the plugin refuses it (another build, damaged proto)
        _reject(path, f"the plugin could not load it: {err}")
        return None
    _touch(path)
    return executable


def _store(directory: Path, path: Path, key: str, executable: Any) -> bool:
    """Serialize ``executable`` into the entry ``path``; whether it was written."""
    try:
        payload = executable.serialize()
    except Exception as err:  # a plugin without serialization: no cache, still correct
        warnings.warn(
            f"compilation cache: the plugin cannot serialize executables ({err}); not cached",
            CompilationCacheWarning,
            stacklevel=3,
        )
        return False
    checksum = hashlib.sha256(payload).hexdigest().encode()
    header = b" ".join([_MAGIC, key.encode(), str(len(payload)).encode(), checksum])
    if not _write_atomically(directory, path, header + b"\n" + payload):
        return False
    _count("writes")
    _evict(directory, keep=path)
    return True


def _write_atomically(directory: Path, path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` through a temporary file and a rename, so a
    reader sees no file or a whole one, whatever other processes do. False
    (with a warning) when it could not be written."""
    temporary = directory / f".{path.stem}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with open(temporary, "wb") as file:
            file.write(data)
        os.replace(temporary, path)
    except OSError as err:
        warnings.warn(
            f"compilation cache: could not write {path}: {err}",
            CompilationCacheWarning,
            stacklevel=4,
        )
        try:
            temporary.unlink()
        except OSError:
            pass
        return False
    return True


def _evict(directory: Path, keep: Path) -> None:
    """Delete least recently used entries (and pointers) until the directory fits
    the size limit."""
    limit = config.compilation_cache_max_size
    entries = []
    for entry in [*directory.glob(f"*{_SUFFIX}"), *directory.glob(f"*{_POINTER_SUFFIX}")]:
        try:
            status = entry.stat()
        except OSError:  # deleted meanwhile by another process
            continue
        entries.append((status.st_mtime_ns, status.st_size, entry))
    total = sum(size for _, size, _ in entries)
    for _, size, entry in sorted(entries, key=lambda e: e[0]):
        if total <= limit:
            break
        if entry == keep:
            continue
        try:
            entry.unlink()
        except OSError:
            continue
        total -= size
