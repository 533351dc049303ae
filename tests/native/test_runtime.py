"""The native PJRT runtime (refimpl._pjrt) against the CPU plugin.

Skipped when no plugin can be found. When the native module itself cannot be
imported the tests are skipped too, unless REFIMPL_REQUIRE_NATIVE=1 (set by
.ci/run), which turns that into a failure.
"""

from __future__ import annotations

import gc
import os
import threading

import ml_dtypes
import numpy as np
import pytest

from refimpl.backends.pjrt import runtime as pjrt_runtime

pytestmark = pytest.mark.pjrt

try:
    _pjrt = pjrt_runtime.native_module()
except ImportError as err:
    if os.environ.get("REFIMPL_REQUIRE_NATIVE") == "1":
        raise
    pytest.skip(f"native module unavailable: {err}", allow_module_level=True)

if not pjrt_runtime.plugin_available():
    pytest.skip("no PJRT plugin installed", allow_module_level=True)

# Version-specific facts hold for the pinned CPU plugin, not for an override.
DEFAULT_CPU_PLUGIN = not os.environ.get(pjrt_runtime.PLUGIN_ENV_VAR)

ALL_DTYPES = [
    np.dtype(np.bool_),
    np.dtype(np.int8),
    np.dtype(np.int16),
    np.dtype(np.int32),
    np.dtype(np.int64),
    np.dtype(np.uint8),
    np.dtype(np.uint16),
    np.dtype(np.uint32),
    np.dtype(np.uint64),
    np.dtype(np.float16),
    np.dtype(ml_dtypes.bfloat16),
    np.dtype(np.float32),
    np.dtype(np.float64),
    np.dtype(np.complex64),
    np.dtype(np.complex128),
]

AFFINE_F32 = """
module @affine {
  func.func public @main(%x: tensor<1024xf32>%ATTR%) -> (tensor<1024xf32>) {
    %two = stablehlo.constant dense<2.0> : tensor<1024xf32>
    %one = stablehlo.constant dense<1.0> : tensor<1024xf32>
    %0 = stablehlo.multiply %x, %two : tensor<1024xf32>
    %1 = stablehlo.add %0, %one : tensor<1024xf32>
    return %1 : tensor<1024xf32>
  }
}
"""

SUM_AND_PRODUCT_I32 = """
module @two_outputs {
  func.func public @main(%a: tensor<2x3xi32>, %b: tensor<2x3xi32>)
      -> (tensor<2x3xi32>, tensor<2x3xi32>) {
    %0 = stablehlo.add %a, %b : tensor<2x3xi32>
    %1 = stablehlo.multiply %a, %b : tensor<2x3xi32>
    return %0, %1 : tensor<2x3xi32>, tensor<2x3xi32>
  }
}
"""


def affine_module(donate: bool) -> str:
    attr = " {tf.aliasing_output = 0 : i32}" if donate else ""
    return AFFINE_F32.replace("%ATTR%", attr)


@pytest.fixture(scope="module")
def client():
    return pjrt_runtime.get_client()


@pytest.fixture(scope="module")
def affine(client):
    """x * 2 + 1 on f32[1024], compiled from a portable artifact."""
    code = pjrt_runtime.serialize_stablehlo(affine_module(donate=False))
    return client.compile(code, pjrt_runtime.compile_options_bytes())


@pytest.fixture(scope="module")
def affine_donating(client):
    """Same program, with its input aliased to its output."""
    code = pjrt_runtime.serialize_stablehlo(affine_module(donate=True))
    return client.compile(code, pjrt_runtime.compile_options_bytes())


def sample(dtype: np.dtype, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return (rng.standard_normal(shape) * 100).astype(dtype)


# ------------------------------------------------------------------ plugin --


def test_plugin_version_and_attributes():
    plugin = pjrt_runtime.get_plugin()
    major, minor = plugin.api_version
    assert major == _pjrt.PJRT_API_VERSION[0] == 0
    assert minor <= _pjrt.PJRT_API_VERSION[1]
    attrs = plugin.attributes
    assert isinstance(attrs, dict)
    if DEFAULT_CPU_PLUGIN:
        assert plugin.api_version == (0, 106)
        assert attrs["xla_version"] == 2
        assert list(attrs["stablehlo_current_version"]) == [1, 16, 1]
        assert list(attrs["stablehlo_minimum_version"]) == [0, 9, 0]


def test_plugin_load_is_idempotent():
    path = pjrt_runtime.find_plugin_path()
    first = _pjrt.Plugin.load(path)
    second = _pjrt.Plugin.load(path)
    assert first.path == second.path
    assert first.api_version == second.api_version


def test_missing_plugin_file_is_a_clear_error(tmp_path):
    missing = tmp_path / "no_such_plugin.so"
    with pytest.raises(_pjrt.PluginLoadError, match="not found"):
        _pjrt.Plugin.load(str(missing))
    assert issubclass(_pjrt.PluginLoadError, RuntimeError)


def test_non_plugin_files_are_rejected(tmp_path):
    text_file = tmp_path / "not_a_library.so"
    text_file.write_text("hello")
    with pytest.raises(_pjrt.PluginLoadError, match="cannot load PJRT plugin"):
        _pjrt.Plugin.load(str(text_file))
    # A real shared library that is not a PJRT plugin.
    with pytest.raises(_pjrt.PluginLoadError, match="GetPjrtApi"):
        _pjrt.Plugin.load(_pjrt.__file__)
    with pytest.raises(_pjrt.PluginLoadError):
        _pjrt.Plugin.load(str(tmp_path))


def test_env_var_overrides_discovery(monkeypatch, tmp_path):
    real = pjrt_runtime.find_plugin_path()
    monkeypatch.setenv(pjrt_runtime.PLUGIN_ENV_VAR, real)
    assert pjrt_runtime.find_plugin_path() == real
    monkeypatch.setenv(pjrt_runtime.PLUGIN_ENV_VAR, str(tmp_path / "missing.so"))
    with pytest.raises(pjrt_runtime.PluginNotFoundError, match=pjrt_runtime.PLUGIN_ENV_VAR):
        pjrt_runtime.find_plugin_path()


def test_missing_cpu_package_names_the_package(monkeypatch):
    monkeypatch.delenv(pjrt_runtime.PLUGIN_ENV_VAR, raising=False)
    monkeypatch.setattr(pjrt_runtime, "_cpu_plugin_path", lambda: None)
    with pytest.raises(pjrt_runtime.PluginNotFoundError) as info:
        pjrt_runtime.find_plugin_path()
    assert "pip install fastatomstruct-xla-cpu==2026.6.23" in str(info.value)
    assert "refimpl[cpu]" in str(info.value)


def test_stablehlo_target_version():
    from jaxlib.mlir.dialects import stablehlo

    target = pjrt_runtime.stablehlo_target_version()
    assert tuple(map(int, target.split("."))) <= tuple(
        map(int, stablehlo.get_current_version().split("."))
    )
    if DEFAULT_CPU_PLUGIN:
        assert target == "1.16.1"


def test_cffi_reads_the_same_declarations():
    from refimpl.backends.pjrt import _native_probe

    ffi = _native_probe.make_ffi()
    info = _pjrt.abi_info()
    assert info["api_version"] == _pjrt.PJRT_API_VERSION
    assert ffi.sizeof("PJRT_Api") == info["api_table_size"]
    for name, size in info["struct_sizes"].items():
        assert _native_probe.pjrt_struct_size(name, ffi) == size, name
    probed = _native_probe.probe_plugin(pjrt_runtime.find_plugin_path(), ffi)
    assert (probed["major"], probed["minor"]) == pjrt_runtime.get_plugin().api_version
    # The plugin's table reaches at least as far as our declarations use.
    assert probed["api_struct_size"] >= ffi.offsetof("PJRT_Api", "PJRT_Buffer_UnsafePointer")
    if DEFAULT_CPU_PLUGIN:
        assert probed["api_struct_size"] == info["api_table_size"] == 1128
        assert info["struct_sizes"]["PJRT_Client_Create_Args"] == 88


# ------------------------------------------------------------------ client --


def test_default_client_has_four_cpu_devices(client):
    devices = client.devices()
    assert client.platform_name == "cpu"
    if DEFAULT_CPU_PLUGIN:
        assert len(devices) == 4
    assert [d.index for d in devices] == list(range(len(devices)))
    assert len({d.id for d in devices}) == len(devices)
    for device in devices:
        assert device.platform == "cpu"
        assert device.kind == "cpu"
        assert isinstance(repr(device), str)
    assert devices[0] == client.devices()[0]
    assert hash(devices[0]) == hash(client.devices()[0])
    assert pjrt_runtime.get_client() is client


@pytest.mark.parametrize("count", [1, 8])
def test_cpu_device_count_option(count):
    client = pjrt_runtime.get_client(count)
    assert len(client.devices()) == count
    assert pjrt_runtime.get_client(count) is client


def test_bad_device_counts():
    with pytest.raises(ValueError):
        pjrt_runtime.get_client(0)
    with pytest.raises(TypeError):
        pjrt_runtime.get_client(True)


# ----------------------------------------------------------------- buffers --


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(), (0,), (7,), (2, 3, 4)], ids=str)
def test_roundtrip_every_dtype(client, dtype, shape):
    host = sample(dtype, shape)
    buffer = client.buffer_from_numpy(host)
    assert buffer.shape == shape
    assert buffer.dtype == dtype
    assert buffer.ndim == len(shape)
    assert buffer.size == host.size
    assert buffer.nbytes == host.nbytes
    assert buffer.device_index == 0
    assert buffer.on_device_size() >= host.nbytes
    back = buffer.to_numpy()
    assert back.dtype == dtype
    assert back.shape == shape
    assert np.array_equal(back, host)
    assert np.array_equal(np.asarray(buffer), host)
    with pytest.raises(ValueError):
        np.asarray(buffer, copy=False)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_roundtrip_non_contiguous(client, dtype):
    base = sample(dtype, (4, 5, 6), seed=1)
    views = [
        base.transpose(2, 0, 1),  # positive byte strides, passed to PJRT
        base[:, ::2, 1:],  # sliced
        base[::-1, :, ::-2],  # negative strides: copied first
        np.asfortranarray(base),
        np.broadcast_to(base[:1], (3, 5, 6)),  # zero stride: copied first
    ]
    for view in views:
        back = client.buffer_from_numpy(view).to_numpy()
        assert back.shape == view.shape
        assert back.flags.c_contiguous
        assert np.array_equal(back, view)


def test_non_native_byte_order(client):
    host = np.arange(10, dtype=">i4")
    back = client.buffer_from_numpy(host).to_numpy()
    assert back.dtype == np.int32
    assert np.array_equal(back, host)


def test_buffers_on_each_device(client):
    host = np.arange(6, dtype=np.float32).reshape(2, 3)
    for device in client.devices():
        buffer = client.buffer_from_numpy(host, device.index)
        assert buffer.device_index == device.index
        assert buffer.device == device
        assert np.array_equal(buffer.to_numpy(), host)
    with pytest.raises(IndexError):
        client.buffer_from_numpy(host, len(client.devices()))
    with pytest.raises(IndexError):
        client.buffer_from_numpy(host, -1)


def test_numpy_scalars_are_accepted(client):
    buffer = client.buffer_from_numpy(np.float32(2.5))
    assert buffer.shape == ()
    assert buffer.to_numpy() == np.float32(2.5)


@pytest.mark.parametrize(
    "value",
    [
        np.array(["a", "b"]),
        np.array([object(), None], dtype=object),
        np.zeros(3, dtype=ml_dtypes.float4_e2m1fn),
        np.zeros(3, dtype=np.float128) if hasattr(np, "float128") else np.zeros(3, dtype="V8"),
        np.zeros(2, dtype="datetime64[s]"),
        [1.0, 2.0],
        3.0,
        None,
    ],
    ids=["str", "object", "float8", "longdouble", "datetime", "list", "float", "none"],
)
def test_unsupported_inputs_raise_type_error(client, value):
    with pytest.raises(TypeError):
        client.buffer_from_numpy(value)


def test_delete_and_deleted_buffer_errors(client):
    buffer = client.buffer_from_numpy(np.ones((2, 2), np.float32))
    assert not buffer.is_deleted()
    buffer.delete()
    assert buffer.is_deleted()
    assert buffer.shape == (2, 2)
    assert "deleted" in repr(buffer)
    with pytest.raises(_pjrt.PjrtError, match="deleted") as info:
        buffer.to_numpy()
    assert isinstance(info.value, RuntimeError)
    assert isinstance(info.value.code, int)
    buffer.delete()  # deleting twice is harmless
    empty = client.buffer_from_numpy(np.zeros((0, 3), np.float32))
    empty.delete()
    with pytest.raises(_pjrt.PjrtError, match="deleted"):
        empty.to_numpy()


def test_block_until_ready_and_repr(client):
    buffer = client.buffer_from_numpy(np.arange(3, dtype=np.int64))
    buffer.block_until_ready()
    assert repr(buffer) == "Buffer(s64[3], device=0)"
    assert buffer.element_type == "s64"
    assert buffer.unsafe_buffer_pointer() != 0


# ------------------------------------------------------------- executables --


def test_compile_text_and_execute(client):
    exe = client.compile(affine_module(donate=False), pjrt_runtime.compile_options_bytes())
    assert exe.num_outputs == 1
    x = np.linspace(-3, 3, 1024, dtype=np.float32)
    arg = client.buffer_from_numpy(x)
    (out,) = exe.execute([arg])
    assert not arg.is_deleted()
    assert out.shape == (1024,)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.to_numpy(), x * 2 + 1, rtol=1e-6)


def test_compile_portable_artifact_and_execute(client, affine):
    x = np.arange(1024, dtype=np.float32)
    (out,) = affine.execute((client.buffer_from_numpy(x),))
    np.testing.assert_array_equal(out.to_numpy(), x * 2 + 1)
    assert affine.device_indices == [0]


def test_multiple_inputs_and_outputs(client):
    exe = client.compile(
        pjrt_runtime.serialize_stablehlo(SUM_AND_PRODUCT_I32), pjrt_runtime.compile_options_bytes()
    )
    assert exe.num_outputs == 2
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    b = np.full((2, 3), 3, dtype=np.int32)
    total, product = exe.execute([client.buffer_from_numpy(a), client.buffer_from_numpy(b)])
    np.testing.assert_array_equal(total.to_numpy(), a + b)
    np.testing.assert_array_equal(product.to_numpy(), a * b)


def test_donation_reuses_the_input_buffer(client, affine_donating):
    x = np.arange(1024, dtype=np.float32)
    arg = client.buffer_from_numpy(x)
    pointer = arg.unsafe_buffer_pointer()
    (out,) = affine_donating.execute([arg])
    assert arg.is_deleted()
    assert out.unsafe_buffer_pointer() == pointer
    np.testing.assert_array_equal(out.to_numpy(), x * 2 + 1)


def test_deleted_buffer_passed_to_execute_raises(client, affine, affine_donating):
    arg = client.buffer_from_numpy(np.zeros(1024, np.float32))
    affine_donating.execute([arg])  # donates arg
    with pytest.raises(_pjrt.PjrtError, match="deleted") as info:
        affine.execute([arg])
    assert info.value.code == 3  # INVALID_ARGUMENT
    other = client.buffer_from_numpy(np.zeros(1024, np.float32))
    other.delete()
    with pytest.raises(_pjrt.PjrtError, match="deleted"):
        affine_donating.execute([other])
    # The executable still works afterwards.
    (out,) = affine.execute([client.buffer_from_numpy(np.ones(1024, np.float32))])
    np.testing.assert_array_equal(out.to_numpy(), np.full(1024, 3, np.float32))


def test_execute_argument_errors(client, affine):
    good = client.buffer_from_numpy(np.zeros(1024, np.float32))
    with pytest.raises(_pjrt.PjrtError):
        affine.execute([])
    with pytest.raises(_pjrt.PjrtError):
        affine.execute([good, good])
    with pytest.raises(_pjrt.PjrtError):
        affine.execute([client.buffer_from_numpy(np.zeros(3, np.float32))])
    with pytest.raises(_pjrt.PjrtError):
        affine.execute([client.buffer_from_numpy(np.zeros(1024, np.float32), 1)])
    with pytest.raises(TypeError):
        affine.execute([np.zeros(1024, np.float32)])
    with pytest.raises(TypeError):
        affine.execute([None])
    with pytest.raises(TypeError):
        affine.execute(good)
    foreign = pjrt_runtime.get_client(1).buffer_from_numpy(np.zeros(1024, np.float32))
    with pytest.raises(ValueError, match="different PJRT client"):
        affine.execute([foreign])


def test_compile_errors(client):
    options = pjrt_runtime.compile_options_bytes()
    with pytest.raises(_pjrt.PjrtError):
        client.compile("this is not mlir", options)
    with pytest.raises(_pjrt.PjrtError):
        client.compile(affine_module(False), b"\xff\xff not a proto")
    with pytest.raises(TypeError):
        client.compile(123, options)


@pytest.fixture
def quiet_gc():
    """Collect garbage left by other tests, then keep the collector off so
    buffers owned by unrelated reference cycles cannot move the counter."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def test_live_buffer_count_returns_to_baseline(client, affine, affine_donating, quiet_gc):
    x = np.arange(1024, dtype=np.float32)
    baseline = _pjrt.live_buffer_count()

    value = client.buffer_from_numpy(x)
    assert _pjrt.live_buffer_count() == baseline + 1
    for _ in range(10_000):
        (value,) = affine_donating.execute([value])
    assert _pjrt.live_buffer_count() == baseline + 1
    del value
    assert _pjrt.live_buffer_count() == baseline

    source = client.buffer_from_numpy(x)
    for _ in range(10_000):
        (out,) = affine.execute([source])
    assert _pjrt.live_buffer_count() == baseline + 2
    np.testing.assert_array_equal(out.to_numpy(), x * 2 + 1)
    del out, source
    assert _pjrt.live_buffer_count() == baseline


def test_failed_calls_do_not_leak_buffers(client, affine, quiet_gc):
    baseline = _pjrt.live_buffer_count()
    for _ in range(100):
        with pytest.raises(_pjrt.PjrtError):
            affine.execute([])
        with pytest.raises(TypeError):
            client.buffer_from_numpy(np.array(["x"]))
    assert _pjrt.live_buffer_count() == baseline


def test_objects_outlive_their_python_parents(affine):
    # A buffer keeps its client alive and an executable keeps its client alive.
    client = _pjrt.Client(pjrt_runtime.get_plugin(), cpu_device_count=2)
    buffer = client.buffer_from_numpy(np.arange(4, dtype=np.int32))
    exe = client.compile(
        pjrt_runtime.serialize_stablehlo(SUM_AND_PRODUCT_I32), pjrt_runtime.compile_options_bytes()
    )
    del client
    np.testing.assert_array_equal(buffer.to_numpy(), np.arange(4, dtype=np.int32))
    assert exe.client.platform_name == "cpu"
    assert len(buffer.client.devices()) == 2


def test_calls_from_several_threads(client, affine):
    x = np.arange(1024, dtype=np.float32)
    errors: list[BaseException] = []

    def work():
        try:
            for _ in range(200):
                (out,) = affine.execute([client.buffer_from_numpy(x)])
                np.testing.assert_array_equal(out.to_numpy(), x * 2 + 1)
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
