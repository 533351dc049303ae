"""Plugins the runtime must refuse, simulated by tiny fake GetPjrtApi libraries.

Each fake exports ``GetPjrtApi`` returning a table whose header (struct size,
extension pointer, API version) has the C API's layout and whose function
slots are all NULL. Loading must fail with a clear ``PluginLoadError`` and
never call into the empty table.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

pytestmark = pytest.mark.pjrt

_pjrt = pytest.importorskip("refimpl._pjrt")

FAKE_PLUGIN_SOURCE = r"""
#include <stddef.h>
typedef struct { size_t struct_size; void* extension_start; int major; int minor; } Version;
typedef struct {
  size_t struct_size;
  void* extension_start;
  Version version;
  void* slots[SLOTS];
} Api;
static Api api;
const Api* GetPjrtApi(void) {
  api.struct_size = sizeof(Api);
  api.version.struct_size = sizeof(Version);
  api.version.major = MAJOR;
  api.version.minor = MINOR;
  return &api;
}
"""


def build_fake_plugin(tmp_path, major: int, minor: int, slots: int = 200) -> str:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler to build the fake plugin")
    source = tmp_path / "fake.c"
    source.write_text(FAKE_PLUGIN_SOURCE)
    library = tmp_path / f"fake_{major}_{minor}_{slots}.so"
    subprocess.run(
        [
            compiler,
            "-shared",
            "-fPIC",
            f"-DMAJOR={major}",
            f"-DMINOR={minor}",
            f"-DSLOTS={slots}",
            str(source),
            "-o",
            str(library),
        ],
        check=True,
    )
    return str(library)


def test_newer_minor_version_is_refused(tmp_path):
    ours = _pjrt.PJRT_API_VERSION
    path = build_fake_plugin(tmp_path, ours[0], ours[1] + 1)
    with pytest.raises(_pjrt.PluginLoadError, match=r"newer than refimpl's declarations"):
        _pjrt.Plugin.load(path)


def test_other_major_version_is_refused(tmp_path):
    path = build_fake_plugin(tmp_path, 1, 0)
    with pytest.raises(_pjrt.PluginLoadError, match=r"major version differs"):
        _pjrt.Plugin.load(path)


def test_older_plugin_with_missing_functions_is_refused(tmp_path):
    ours = _pjrt.PJRT_API_VERSION
    path = build_fake_plugin(tmp_path, ours[0], ours[1] - 10)
    with pytest.raises(_pjrt.PluginLoadError):
        _pjrt.Plugin.load(path)


def test_too_short_table_is_refused(tmp_path):
    ours = _pjrt.PJRT_API_VERSION
    path = build_fake_plugin(tmp_path, ours[0], ours[1], slots=3)
    with pytest.raises(_pjrt.PluginLoadError, match=r"PJRT_Api table of \d+ bytes"):
        _pjrt.Plugin.load(path)


def test_env_var_pointing_at_a_bad_plugin_fails_cleanly(tmp_path, monkeypatch):
    from refimpl.backends.pjrt import runtime as pjrt_runtime

    ours = _pjrt.PJRT_API_VERSION
    path = build_fake_plugin(tmp_path, ours[0], ours[1] + 5)
    monkeypatch.setenv(pjrt_runtime.PLUGIN_ENV_VAR, path)
    with pytest.raises(_pjrt.PluginLoadError, match="newer"):
        pjrt_runtime.get_plugin()


def test_discovery_prefers_a_visible_accelerator(tmp_path, monkeypatch):
    """With a GPU visible and the CUDA plugin installed, it is chosen over the CPU one."""
    from refimpl.backends.pjrt import runtime as pjrt_runtime

    fake_cuda = tmp_path / "xla_cuda_plugin.so"
    fake_cuda.write_bytes(b"")
    monkeypatch.delenv(pjrt_runtime.PLUGIN_ENV_VAR, raising=False)
    monkeypatch.setattr(pjrt_runtime, "_gpu_visible", lambda: True)
    monkeypatch.setattr(
        pjrt_runtime,
        "_package_file",
        lambda module, name: fake_cuda if module == "jax_plugins.xla_cuda12" else None,
    )
    assert pjrt_runtime.find_plugin_path() == str(fake_cuda)
    monkeypatch.setattr(pjrt_runtime, "_gpu_visible", lambda: False)
    monkeypatch.setattr(pjrt_runtime, "_tpu_visible", lambda: False)
    with pytest.raises(pjrt_runtime.PluginNotFoundError, match="fastatomstruct-xla-cpu"):
        pjrt_runtime.find_plugin_path()  # nothing else installed in this fake world
