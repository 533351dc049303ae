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
    package = Path(__file__).resolve().parents[2]  # refimpl/backends/pjrt/ -> refimpl/
    for candidate in (package / "_pjrt_abi.h", package.parent / "native" / "pjrt_abi.h"):
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


# --- the doctor: a plugin inspected through cffi alone ------------------------------


class _Api:
    """Calls into a plugin's function table with freshly sized argument structs."""

    def __init__(self, ffi: Any, api: Any) -> None:
        self.ffi = ffi
        self.api = api

    def args(self, struct: str, **fields: Any) -> Any:
        value = self.ffi.new(f"{struct}*")
        value.struct_size = pjrt_struct_size(struct, self.ffi)
        for name, field in fields.items():
            setattr(value, name, field)
        return value

    def call(self, function: str, struct: str, **fields: Any) -> Any:
        args = self.args(struct, **fields)
        error = getattr(self.api, function)(args)
        if error != self.ffi.NULL:
            raise RuntimeError(f"{function}: {self._message(error)}")
        return args

    def _message(self, error: Any) -> str:
        message = self.args("PJRT_Error_Message_Args", error=error)
        self.api.PJRT_Error_Message(message)
        text = self.ffi.string(message.message, message.message_size).decode()
        self.api.PJRT_Error_Destroy(self.args("PJRT_Error_Destroy_Args", error=error))
        return text

    def text(self, pointer: Any, size: int) -> str:
        return self.ffi.string(pointer, size).decode(errors="replace")


def _attribute_value(ffi: Any, value: Any) -> Any:
    kind = int(value.type)
    readers = {
        0: lambda: ffi.string(value.string_value, value.value_size).decode(),
        1: lambda: int(value.int64_value),
        2: lambda: [int(value.int64_array_value[i]) for i in range(value.value_size)],
        3: lambda: float(value.float_value),
        4: lambda: bool(value.bool_value),
    }
    return readers.get(kind, lambda: f"<type {kind}>")()


def _named_values(api: _Api, options: dict[str, Any]) -> tuple[Any, list[Any]]:
    """A ``PJRT_NamedValue[]`` for ``options`` and the cffi objects it points into."""
    ffi = api.ffi
    values = ffi.new("PJRT_NamedValue[]", max(len(options), 1))
    keep: list[Any] = []
    size = pjrt_struct_size("PJRT_NamedValue", ffi)
    for slot, (name, value) in zip(values, options.items(), strict=False):
        encoded = ffi.new("char[]", name.encode())
        keep.append(encoded)
        slot.struct_size = size
        slot.name = encoded
        slot.name_size = len(name)
        slot.value_size = 1
        if isinstance(value, bool):
            slot.type, slot.bool_value = 4, value
        elif isinstance(value, int):
            slot.type, slot.int64_value = 1, value
        elif isinstance(value, float):
            slot.type, slot.float_value = 3, value
        elif isinstance(value, str):
            text = ffi.new("char[]", value.encode())
            keep.append(text)
            slot.type, slot.string_value, slot.value_size = 0, text, len(value)
        else:
            ints = ffi.new("int64_t[]", list(value))
            keep.append(ints)
            slot.type, slot.int64_array_value, slot.value_size = 2, ints, len(value)
    return values, keep


_MEMORY_STATS = (
    "peak_bytes_in_use",
    "num_allocs",
    "largest_alloc_size",
    "bytes_limit",
    "bytes_reserved",
    "peak_bytes_reserved",
    "bytes_reservable_limit",
    "largest_free_block_bytes",
    "pool_bytes",
    "peak_pool_bytes",
)


def _memory_stats(api: _Api, device: Any) -> dict[str, int] | str:
    """PJRT_Device_MemoryStats of ``device``: the set statistics, or why there are none."""
    if api.api.PJRT_Device_MemoryStats == api.ffi.NULL:
        return "not offered by the plugin"
    try:
        stats = api.call("PJRT_Device_MemoryStats", "PJRT_Device_MemoryStats_Args", device=device)
    except RuntimeError as err:
        return f"unavailable ({' '.join(str(err).split())[:160]})"
    found = {"bytes_in_use": int(stats.bytes_in_use)}
    for name in _MEMORY_STATS:
        if getattr(stats, f"{name}_is_set"):
            found[name] = int(getattr(stats, name))
    return found


def doctor(plugin_path: str, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Version, attributes, platform, devices and device memory of a plugin,
    without the C++ extension.

    Uses only cffi and the same ``pjrt_abi.h`` the C++ runtime compiles
    against, so it can tell a broken build from a broken plugin. ``options``
    are the client create options (as ``runtime.client_create_options``
    gives them: a GPU plugin should get ``preallocate=False`` here).
    """
    ffi = make_ffi()
    report: dict[str, Any] = {"plugin": plugin_path, **probe_plugin(plugin_path, ffi)}
    report["options"] = dict(options or {})
    lib = ffi.dlopen(plugin_path)
    api = _Api(ffi, lib.GetPjrtApi())
    api.call("PJRT_Plugin_Initialize", "PJRT_Plugin_Initialize_Args")
    attrs = api.call("PJRT_Plugin_Attributes", "PJRT_Plugin_Attributes_Args")
    report["attributes"] = {
        api.text(a.name, a.name_size): _attribute_value(ffi, a)
        for a in (attrs.attributes[i] for i in range(attrs.num_attributes))
    }
    values, keep = _named_values(api, report["options"])
    client = api.call(
        "PJRT_Client_Create",
        "PJRT_Client_Create_Args",
        create_options=values if report["options"] else ffi.NULL,
        num_options=len(report["options"]),
    ).client
    del keep
    try:
        name = api.call("PJRT_Client_PlatformName", "PJRT_Client_PlatformName_Args", client=client)
        report["platform"] = api.text(name.platform_name, name.platform_name_size)
        listed = api.call(
            "PJRT_Client_AddressableDevices", "PJRT_Client_AddressableDevices_Args", client=client
        )
        devices = [listed.addressable_devices[i] for i in range(listed.num_addressable_devices)]
        report["devices"] = [_describe_device(api, device) for device in devices]
        report["memory"] = [_memory_stats(api, device) for device in devices]
    finally:
        api.call("PJRT_Client_Destroy", "PJRT_Client_Destroy_Args", client=client)
    return report


def _describe_device(api: _Api, device: Any) -> str:
    description = api.call(
        "PJRT_Device_GetDescription", "PJRT_Device_GetDescription_Args", device=device
    ).device_description
    kind = api.call(
        "PJRT_DeviceDescription_Kind",
        "PJRT_DeviceDescription_Kind_Args",
        device_description=description,
    )
    ident = api.call(
        "PJRT_DeviceDescription_Id",
        "PJRT_DeviceDescription_Id_Args",
        device_description=description,
    )
    return f"{api.text(kind.device_kind, kind.device_kind_size)}:{ident.id}"


def _bytes(value: int) -> str:
    return f"{value / 2**30:.2f} GiB" if value >= 2**30 else f"{value / 2**20:.1f} MiB"


def format_memory(stats: dict[str, int] | str) -> str:
    """One line of a device's memory statistics."""
    if isinstance(stats, str):
        return stats
    parts = [f"in use {_bytes(stats['bytes_in_use'])}"]
    if "bytes_limit" in stats:
        parts.append(f"limit {_bytes(stats['bytes_limit'])}")
    if "peak_bytes_in_use" in stats:
        parts.append(f"peak {_bytes(stats['peak_bytes_in_use'])}")
    if "bytes_reserved" in stats:
        parts.append(f"reserved {_bytes(stats['bytes_reserved'])}")
    return ", ".join(parts)


def print_doctor(plugin_path: str, options: dict[str, Any] | None = None) -> None:
    report = doctor(plugin_path, options)
    print(f"plugin:      {report['plugin']}")
    print(f"C API:       {report['major']}.{report['minor']} (table {report['api_struct_size']} B)")
    print(f"options:     {report['options'] or '(none)'}")
    print(f"platform:    {report['platform']}")
    print(f"devices:     {len(report['devices'])}: {', '.join(report['devices'])}")
    for device, stats in zip(report["devices"], report["memory"], strict=True):
        print(f"memory:      {device}: {format_memory(stats)}")
    for key, value in sorted(report["attributes"].items()):
        print(f"attribute:   {key} = {value}")
