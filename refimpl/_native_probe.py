"""Reads native/pjrt_abi.h with cffi: a second, independent view of the ABI.

The C++ runtime compiles against ``native/pjrt_abi.h``; this module feeds the
same declarations (the region between the ``REFIMPL_CDEF_BEGIN`` /
``REFIMPL_CDEF_END`` markers, which holds no preprocessor lines) to
``cffi.FFI.cdef``. Tests use it to check that cffi and the C++ compiler agree
on struct layouts and to inspect a plugin's version without the extension.
The installed package carries the header as ``refimpl/_pjrt_abi.h``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

BEGIN_MARKER = "/* REFIMPL_CDEF_BEGIN */"
END_MARKER = "/* REFIMPL_CDEF_END */"


def header_path() -> Path:
    """The installed copy of the header, else the source tree's."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "_pjrt_abi.h", here.parent / "native" / "pjrt_abi.h"):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError("pjrt_abi.h not found next to refimpl or in native/")


def cdef_source(path: Path | None = None) -> str:
    """The plain-C declaration region of the header."""
    text = (path or header_path()).read_text()
    start = text.index(BEGIN_MARKER) + len(BEGIN_MARKER)
    end = text.index(END_MARKER, start)
    region = text[start:end]
    if any(line.lstrip().startswith("#") for line in region.splitlines()):
        raise ValueError("pjrt_abi.h: preprocessor line inside the cdef region")
    return region


def make_ffi(path: Path | None = None) -> Any:
    """A ``cffi.FFI`` that knows the declarations and ``GetPjrtApi``."""
    import cffi

    ffi = cffi.FFI()
    ffi.cdef(cdef_source(path))
    ffi.cdef("const PJRT_Api* GetPjrtApi(void);")
    return ffi


def struct_sizes(names: list[str], ffi: Any = None) -> dict[str, int]:
    """``sizeof`` of each named type as cffi lays it out."""
    ffi = ffi or make_ffi()
    return {name: ffi.sizeof(name) for name in names}


def probe_plugin(plugin_path: str, ffi: Any = None) -> dict[str, int]:
    """Reads a plugin's API version and table size without initialising it."""
    ffi = ffi or make_ffi()
    lib = ffi.dlopen(plugin_path)
    api = lib.GetPjrtApi()
    if api == ffi.NULL:
        raise RuntimeError(f"{plugin_path}: GetPjrtApi() returned NULL")
    return {
        "major": api.pjrt_api_version.major_version,
        "minor": api.pjrt_api_version.minor_version,
        "api_struct_size": api.struct_size,
    }


def pjrt_struct_size(name: str, ffi: Any = None) -> int:
    """PJRT's notion of a struct's size: the end of its last field (no tail padding)."""
    ffi = ffi or make_ffi()
    end = 0
    for _, field in ffi.typeof(name).fields:
        end = max(end, field.offset + ffi.sizeof(field.type))
    return end
