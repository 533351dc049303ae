"""``python -m refimpl.backends.pjrt doctor [PLUGIN]``: inspect a plugin.

Reports the plugin's path and kind, its C API version, the client create
options refimpl would pass, the platform, the devices and (where the plugin
offers ``PJRT_Device_MemoryStats``: GPU plugins) each device's memory, and
the plugin's attributes.

It reads the plugin through cffi alone and imports neither the native
extension nor the executor, so it works when the extension is missing or
broken. Without cffi it falls back to the native extension.
"""

from __future__ import annotations

import sys

from refimpl.backends.pjrt import _native_probe
from refimpl.backends.pjrt import runtime as pjrt_runtime


def _native_doctor(path: str, options: dict) -> None:
    """The same report through refimpl._pjrt (when cffi is not installed)."""
    native = pjrt_runtime.native_module()
    pjrt_runtime.quiet_plugin_logs()
    plugin = native.Plugin.load(path)
    client = native.Client(plugin, options=options or None)
    devices = client.devices()
    print(f"plugin:      {path}")
    print(f"C API:       {plugin.api_version} (through refimpl._pjrt: cffi is not installed)")
    print(f"options:     {options or '(none)'}")
    print(f"platform:    {client.platform_name} {client.platform_version}".rstrip())
    print(f"devices:     {len(devices)}: {', '.join(f'{d.kind}:{d.id}' for d in devices)}")
    for device in devices:
        stats = device.memory_stats()
        text = "not offered by the plugin" if stats is None else _native_probe.format_memory(stats)
        print(f"memory:      {device.kind}:{device.id}: {text}")
    for key, value in sorted(plugin.attributes.items()):
        print(f"attribute:   {key} = {value}")


USAGE = "usage: python -m refimpl.backends.pjrt doctor [path/to/pjrt_plugin.so]"
HELP = f"""{USAGE}

doctor  report a PJRT plugin: its path and kind, C API version, the client
        create options refimpl passes, platform, devices (and their memory
        where the plugin reports it) and attributes. Without a path: the
        plugin refimpl would load (REFIMPL_PJRT_PLUGIN, else the installed
        XLA CPU plugin)."""


def main(argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help", "help"):
        print(HELP)
        return 0
    if not argv or argv[0] != "doctor" or len(argv) > 2:
        print(f"{USAGE}\n(python -m refimpl.backends.pjrt --help for more)", file=sys.stderr)
        return 2
    path = argv[1] if len(argv) == 2 else pjrt_runtime.find_plugin_path()
    kind = pjrt_runtime.plugin_kind(path)
    options = pjrt_runtime.client_create_options(kind)
    print(f"kind:        {kind}")
    try:
        import cffi  # noqa: F401
    except ImportError:
        _native_doctor(path, options)
        return 0
    _native_probe.print_doctor(path, options)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
