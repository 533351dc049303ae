"""``python -m refimpl.backends.pjrt doctor``: the cffi view of a plugin agrees with the C++ one."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.pjrt

_pjrt = pytest.importorskip("refimpl._pjrt")
pjrt_runtime = pytest.importorskip("refimpl.backends.pjrt.runtime")
pytest.importorskip("cffi")


@pytest.fixture(scope="module")
def plugin_path() -> str:
    if not pjrt_runtime.plugin_available():
        pytest.skip("no PJRT plugin installed")
    return pjrt_runtime.find_plugin_path()


def test_doctor_report_matches_the_native_runtime(plugin_path):
    from refimpl.backends.pjrt import _native_probe

    report = _native_probe.doctor(plugin_path)
    plugin = _pjrt.Plugin.load(plugin_path)
    assert (report["major"], report["minor"]) == tuple(plugin.api_version)
    client = pjrt_runtime.get_client()
    assert report["platform"] == client.platform_name
    assert len(report["devices"]) == len(client.devices())
    assert _normalized(report["attributes"]) == _normalized(plugin.attributes)


def _normalized(attributes: dict) -> dict:
    return {k: list(v) if isinstance(v, (list, tuple)) else v for k, v in attributes.items()}


def test_doctor_command_line(plugin_path):
    result = subprocess.run(
        [sys.executable, "-m", "refimpl.backends.pjrt", "doctor", plugin_path],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "C API:       0." in result.stdout
    assert "devices:     4" in result.stdout


def test_doctor_usage_error():
    result = subprocess.run(
        [sys.executable, "-m", "refimpl.backends.pjrt", "bogus"], capture_output=True, text=True
    )
    # bad usage: the usage text on stderr, exit status 2 (as argparse)
    assert result.returncode == 2 and "usage" in result.stderr, result.stderr
