"""The persistent compilation cache: compiled executables reused across processes.

Turned on with ``ri.config.update("compilation_cache_dir", path)`` or the
environment variable ``REFIMPL_COMPILATION_CACHE_DIR``. Every compile of the
PJRT backend (the Python path, the C++ fast path's misses, ``Lowered.compile``)
goes through :func:`compile_cached`, which looks for an entry before
compiling and writes one after.

* **Key**: SHA-256 over the StableHLO module text, the serialized compile
  options (which hold the device assignment), the plugin's identity (its
  file name, size and modification time, PJRT API version, attributes,
  platform name and version) and refimpl's version. Anything that could make
  a stored executable wrong for this process changes the key.
* **Entry**: one file ``<key>.rexe``: a header line with the format and the
  key, the payload's length and SHA-256, then the payload (the bytes of
  ``PJRT_Executable_Serialize``, loaded with
  ``PJRT_Executable_DeserializeAndLoad``). A file whose header, key, length
  or checksum is wrong, or that the plugin refuses to load, is ignored with
  a :class:`CompilationCacheWarning`, and the program is compiled again (and
  the entry rewritten).
* **Atomic writes**: the entry is written to a temporary file in the same
  directory and renamed over the final name (``os.replace``), so a reader
  sees either no entry or a whole one, whatever other processes do.
* **Size limit** (``compilation_cache_max_size`` bytes, default 1 GiB):
  after a write, the least recently used entries (a hit refreshes the
  file's modification time) are deleted until the total fits.

:func:`stats` counts hits, misses, writes and rejected entries in this
process (tests and the benchmark read it).
"""

from __future__ import annotations

import functools
import hashlib
import os
import secrets
import sys
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from refimpl.config import config

__all__ = [
    "CompilationCacheWarning",
    "cache_dir",
    "compile_cached",
    "entry_key",
    "plugin_identity",
    "reset_stats",
    "stats",
]

_MAGIC = b"refimpl-executable-v1"
_SUFFIX = ".rexe"


class CompilationCacheWarning(UserWarning):
    """A cache entry could not be used (corrupt, truncated, foreign) or written."""


_stats = {"hits": 0, "misses": 0, "writes": 0, "rejected": 0}
_stats_lock = threading.Lock()


def stats() -> dict[str, int]:
    """Counts in this process: ``hits``, ``misses`` (compiled), ``writes``, ``rejected``."""
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


@functools.cache
def _refimpl_version() -> str:
    """refimpl's installed version, from its ``.dist-info`` directory name.

    ``importlib.metadata`` would take 60-80 ms to import in a fresh process,
    a fifth of a warm first call; a directory scan of ``sys.path`` takes ~1 ms.
    """
    for entry in sys.path:
        try:
            found = sorted(Path(entry or ".").glob("refimpl-*.dist-info"))
        except OSError:
            continue
        if found:
            return found[0].name[len("refimpl-") : -len(".dist-info")]
    return "unknown"  # a source tree that is not installed


def plugin_identity(client: Any) -> str:
    """What identifies the plugin build behind ``client`` (part of every key).

    The plugin reports no build id, so its file's size and modification time
    stand for it next to the API version and the attributes it reports.
    """
    return _plugin_identity(client.plugin)


@functools.cache
def _plugin_identity(plugin: Any) -> str:
    path = Path(plugin.path)
    try:
        status = path.stat()
        file_id = f"{path.name}:{status.st_size}:{status.st_mtime_ns}"
    except OSError:
        file_id = f"{path.name}:?"
    attributes = sorted((str(k), str(v)) for k, v in plugin.attributes.items())
    return f"{file_id};api={plugin.api_version};attributes={attributes}"


def entry_key(module_text: str, compile_options: bytes, client: Any) -> str:
    """The hex SHA-256 key of one executable (see the module docstring)."""
    digest = hashlib.sha256()
    for part in (
        _MAGIC,
        _refimpl_version().encode(),
        plugin_identity(client).encode(),
        f"{client.platform_name}:{client.platform_version}".encode(),
        compile_options,
        module_text.encode(),
    ):
        digest.update(len(part).to_bytes(8, "little"))
        digest.update(part)
    return digest.hexdigest()


def compile_cached(
    client: Any, module_text: Callable[[], str], artifact: Callable[[], bytes], options: bytes
) -> Any:
    """``client.compile(artifact(), options)``, through the cache when it is on.

    ``module_text`` and ``artifact`` are called only when needed (the text for
    the key, the artifact on a miss).
    """
    directory = cache_dir()
    if directory is None:
        return client.compile(artifact(), options)
    key = entry_key(module_text(), options, client)
    path = directory / f"{key}{_SUFFIX}"
    executable = _load(client, path, key)
    if executable is not None:
        _count("hits")
        return executable
    _count("misses")
    executable = client.compile(artifact(), options)
    _store(directory, path, key, executable)
    return executable


def _reject(path: Path, why: str) -> None:
    _count("rejected")
    warnings.warn(
        f"compilation cache: ignoring the entry {path.name} ({why}); compiling again",
        CompilationCacheWarning,
        stacklevel=4,
    )


def _load(client: Any, path: Path, key: str) -> Any:
    """The executable stored at ``path`` for ``key``, or None (missing or unusable)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as err:
        _reject(path, f"unreadable: {err}")
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
    try:
        os.utime(path)  # least recently used = oldest modification time
    except OSError:
        pass
    return executable


def _store(directory: Path, path: Path, key: str, executable: Any) -> None:
    try:
        payload = executable.serialize()
    except Exception as err:  # a plugin without serialization: no cache, still correct
        warnings.warn(
            f"compilation cache: the plugin cannot serialize executables ({err}); not cached",
            CompilationCacheWarning,
            stacklevel=3,
        )
        return
    checksum = hashlib.sha256(payload).hexdigest().encode()
    header = b" ".join([_MAGIC, key.encode(), str(len(payload)).encode(), checksum])
    temporary = directory / f".{key}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with open(temporary, "wb") as file:
            file.write(header + b"\n" + payload)
        os.replace(temporary, path)  # atomic: readers see no entry or a whole one
    except OSError as err:
        warnings.warn(
            f"compilation cache: could not write {path}: {err}",
            CompilationCacheWarning,
            stacklevel=3,
        )
        try:
            temporary.unlink()
        except OSError:
            pass
        return
    _count("writes")
    _evict(directory, keep=path)


def _evict(directory: Path, keep: Path) -> None:
    """Delete least recently used entries until the directory fits the size limit."""
    limit = config.compilation_cache_max_size
    entries = []
    for entry in directory.glob(f"*{_SUFFIX}"):
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
