"""``python -m refimpl.backends.pjrt doctor [PLUGIN]``: inspect a plugin with cffi alone.

Imports neither the native extension nor the executor: the doctor must work
when the extension is missing or broken.
"""

from __future__ import annotations

import sys

from refimpl.backends.pjrt import _native_probe
from refimpl.backends.pjrt import runtime as pjrt_runtime


def main(argv: list[str]) -> int:
    if not argv or argv[0] != "doctor" or len(argv) > 2:
        print("usage: python -m refimpl.backends.pjrt doctor [path/to/pjrt_plugin.so]")
        return 2
    path = argv[1] if len(argv) == 2 else pjrt_runtime.find_plugin_path()
    _native_probe.print_doctor(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
