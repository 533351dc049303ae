"""Issue 32, checked on the CPU: plugin discovery for CUDA 13/12, the client create
options each plugin kind gets, host callbacks off the CPU, the compilation
cache key's device kinds, the per-platform conformance tolerances and
case sampling."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest

from conformance import cli
from conformance.compare import PLATFORM_RULES, Tolerance, platform_rules, value_mismatch, widen
from refimpl.backends.pjrt import runtime
from refimpl.config import config

# --- discovery ------------------------------------------------------------------------------


def _fake_cuda_plugins(root: Path, versions: tuple[str, ...]) -> dict[str, Path]:
    """``jax_plugins/xla_cudaNN/xla_cuda_plugin.so`` under ``root`` (a namespace package)."""
    made = {}
    for version in versions:
        package = root / "jax_plugins" / f"xla_cuda{version}"
        package.mkdir(parents=True)
        (package / "__init__.py").write_text("")
        library = package / "xla_cuda_plugin.so"
        library.write_bytes(b"not really a plugin")
        made[version] = library
    return made


@pytest.fixture
def plugin_root(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv(runtime.PLUGIN_ENV_VAR, raising=False)
    for name in [m for m in sys.modules if m == "jax_plugins" or m.startswith("jax_plugins.")]:
        monkeypatch.delitem(sys.modules, name)
    importlib.invalidate_caches()
    return tmp_path


def test_cuda13_is_chosen_when_a_gpu_is_visible(plugin_root, monkeypatch):
    made = _fake_cuda_plugins(plugin_root, ("12", "13"))
    monkeypatch.setattr(runtime, "_gpu_visible", lambda: True)
    assert Path(runtime.find_plugin_path()) == made["13"]


def test_cuda12_is_chosen_when_it_is_the_only_one(plugin_root, monkeypatch):
    made = _fake_cuda_plugins(plugin_root, ("12",))
    monkeypatch.setattr(runtime, "_gpu_visible", lambda: True)
    assert Path(runtime.find_plugin_path()) == made["12"]


def test_no_gpu_visible_keeps_the_cpu_plugin(plugin_root, monkeypatch):
    _fake_cuda_plugins(plugin_root, ("13",))
    monkeypatch.setattr(runtime, "_gpu_visible", lambda: False)
    monkeypatch.setattr(runtime, "_tpu_visible", lambda: False)
    cpu = runtime._cpu_plugin_path()
    if cpu is None:
        with pytest.raises(runtime.PluginNotFoundError):
            runtime.find_plugin_path()
    else:
        assert Path(runtime.find_plugin_path()) == cpu


def test_the_environment_override_wins_over_a_visible_gpu(plugin_root, monkeypatch, tmp_path):
    _fake_cuda_plugins(plugin_root, ("13",))
    monkeypatch.setattr(runtime, "_gpu_visible", lambda: True)
    mine = tmp_path / "my_plugin.so"
    mine.write_bytes(b"")
    monkeypatch.setenv(runtime.PLUGIN_ENV_VAR, str(mine))
    assert runtime.find_plugin_path() == str(mine)
    monkeypatch.setenv(runtime.PLUGIN_ENV_VAR, str(tmp_path / "missing.so"))
    with pytest.raises(runtime.PluginNotFoundError, match="missing.so"):
        runtime.find_plugin_path()


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("/x/site-packages/jax_plugins/xla_cuda13/xla_cuda_plugin.so", "cuda"),
        ("/x/site-packages/jax_plugins/xla_cuda12/xla_cuda_plugin.so", "cuda"),
        ("/x/site-packages/fastatomstruct_xla_cpu/libpjrt_cpu.so", "cpu"),
        ("/x/site-packages/libtpu/libtpu.so", "tpu"),
        ("/x/site-packages/jax_plugins/xla_rocm7/xla_rocm_plugin.so", "rocm"),
        ("/opt/plugins/pjrt_plugin.so", "unknown"),
    ],
)
def test_plugin_kind_from_the_file(path, kind, monkeypatch):
    monkeypatch.delenv(runtime.PLUGIN_KIND_ENV_VAR, raising=False)
    assert runtime.plugin_kind(path) == kind


def test_plugin_kind_override(monkeypatch):
    monkeypatch.setenv(runtime.PLUGIN_KIND_ENV_VAR, "cuda")
    assert runtime.plugin_kind("/opt/plugins/pjrt_plugin.so") == "cuda"
    monkeypatch.setenv(runtime.PLUGIN_KIND_ENV_VAR, "quantum")
    with pytest.raises(ValueError, match="quantum"):
        runtime.plugin_kind("/opt/plugins/pjrt_plugin.so")


# --- client create options ------------------------------------------------------------------

_GPU_ENV = (
    "XLA_PYTHON_CLIENT_MEM_FRACTION",
    "XLA_PYTHON_CLIENT_PREALLOCATE",
    "XLA_PYTHON_CLIENT_ALLOCATOR",
)


@pytest.fixture
def clean_gpu_settings(monkeypatch):
    for name in _GPU_ENV:
        monkeypatch.delenv(name, raising=False)
    saved = {name: getattr(config, name) for name in ("pjrt_gpu_memory_fraction",
             "pjrt_gpu_preallocate", "pjrt_gpu_allocator")}  # fmt: skip
    yield
    for name, value in saved.items():
        config.update(name, value)


def test_cpu_gets_only_its_device_count(clean_gpu_settings, monkeypatch):
    monkeypatch.setenv("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    config.update("pjrt_gpu_memory_fraction", 0.5)
    assert runtime.client_create_options("cpu") == {}
    assert runtime.client_create_options("cpu", 8) == {"cpu_device_count": 8}


def test_gpu_gets_no_options_by_default_and_never_the_cpu_count(clean_gpu_settings):
    assert runtime.client_create_options("cuda", 8) == {}
    assert runtime.client_create_options("tpu", 8) == {}
    assert runtime.client_create_options("unknown", 8) == {}


def test_gpu_follows_jax_environment_variables(clean_gpu_settings, monkeypatch):
    monkeypatch.setenv("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    monkeypatch.setenv("XLA_PYTHON_CLIENT_MEM_FRACTION", ".25")
    monkeypatch.setenv("XLA_PYTHON_CLIENT_ALLOCATOR", "platform")
    options = runtime.client_create_options("cuda")
    assert options == {"preallocate": False, "memory_fraction": 0.25, "allocator": "platform"}
    assert isinstance(options["memory_fraction"], float)


def test_config_wins_over_the_environment(clean_gpu_settings, monkeypatch):
    monkeypatch.setenv("XLA_PYTHON_CLIENT_PREALLOCATE", "true")
    config.update("pjrt_gpu_preallocate", False)
    config.update("pjrt_gpu_memory_fraction", 0.3)
    config.update("pjrt_gpu_allocator", "bfc")
    assert runtime.client_create_options("cuda") == {
        "preallocate": False,
        "memory_fraction": 0.3,
        "allocator": "bfc",
    }


def test_config_checks_the_gpu_options(clean_gpu_settings):
    with pytest.raises(ValueError, match="fraction"):
        config.update("pjrt_gpu_memory_fraction", 1.5)
    with pytest.raises(TypeError):
        config.update("pjrt_gpu_preallocate", "no")
    with pytest.raises(ValueError, match="cuda_async"):
        config.update("pjrt_gpu_allocator", "magic")


def test_bad_environment_value_is_named(clean_gpu_settings, monkeypatch):
    monkeypatch.setenv("XLA_PYTHON_CLIENT_PREALLOCATE", "maybe")
    with pytest.raises(ValueError, match="XLA_PYTHON_CLIENT_PREALLOCATE"):
        runtime.client_create_options("cuda")


# --- needs the native module and the CPU plugin ---------------------------------------------

needs_plugin = pytest.mark.skipif(not runtime.plugin_available(), reason="no PJRT plugin")


@needs_plugin
def test_host_callbacks_off_cpu_raise_not_implemented(monkeypatch):
    from refimpl.backends.pjrt import host_callbacks, runtime

    monkeypatch.setattr(runtime, "local_platform", lambda: "cuda")
    with pytest.raises(NotImplementedError, match="'cuda'"):
        host_callbacks.ensure_handler()


@needs_plugin
def test_compilation_cache_key_names_the_device_kinds():
    from refimpl.backends.pjrt import compilation_cache, executables

    client = executables.client()
    identity = compilation_cache.plugin_identity(client)
    kinds = {device.kind for device in client.devices()}
    assert identity.endswith("devices=" + ",".join(sorted(kinds)))
    assert Path(client.plugin.path).parent.name in identity


@needs_plugin
def test_doctor_reports_kind_platform_devices_and_memory(capsys):
    from refimpl.backends.pjrt.__main__ import main

    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    for label in ("kind:", "plugin:", "platform:", "devices:", "memory:", "options:"):
        assert label in out


# --- per-platform tolerances and sampling ---------------------------------------------------


def test_tolerance_rules_by_platform():
    assert [r.name for r in platform_rules("cuda", "lax.dot_general/f32/(2,3)x(3,4)")] == [
        "tf32-matmul"
    ]
    assert [r.name for r in platform_rules("cuda", "np.matmul/f32")] == ["tf32-matmul"]
    assert [r.name for r in platform_rules("cuda", "lax.exp/f32/(3,4)")] == ["transcendental"]
    assert [r.name for r in platform_rules("rocm", "np.sum/f32/axis=0")] == ["reordered-reduction"]
    assert platform_rules("cuda", "lax.convert_element_type/f32->i8") == []
    assert platform_rules("cpu", "lax.dot_general/f32/(2,3)x(3,4)") == []
    assert platform_rules("tpu", "lax.exp/f32") == []
    for platform, rules in PLATFORM_RULES.items():
        for rule in rules:
            assert rule.reason, (platform, rule.name)


def test_widened_tolerance_passes_tf32_error_but_not_garbage():
    rules = platform_rules("cuda", "lax.dot_general/f32")
    wide = widen(None, rules)
    assert wide.ulps_for(np.dtype(np.float32)) == 2**13
    assert wide.ulps_for(np.dtype(np.float64)) == Tolerance().ulps_for(np.dtype(np.float64))
    expected = np.array([10.0, -3.0, 0.0], np.float32)
    tf32_like = (expected * np.float32(1 + 2**-11)).astype(np.float32)
    assert value_mismatch(expected, tf32_like, Tolerance()) is not None
    assert value_mismatch(expected, tf32_like, wide) is None
    assert value_mismatch(expected, expected * np.float32(1.01), wide) is not None
    ints = np.array([1, 2, 3], np.int32)
    assert value_mismatch(ints, ints + 1, wide) is not None  # integers stay exact


def test_sample_keeps_a_few_of_every_family():
    class FakeCase:
        def __init__(self, name, group):
            self.name, self.group = name, group

    cases = [FakeCase(f"a/{i}", "lax.a") for i in range(10)] + [FakeCase("b/0", "np.b")]
    picked = cli.sample_cases(cases, per_family=3)
    assert [c.name for c in picked] == ["a/0", "a/3", "a/6", "b/0"]
    assert [c.name for c in cli.sample_cases(cases, families="np.*")] == ["b/0"]
    assert len(cli.sample_cases(cases)) == len(cases)
