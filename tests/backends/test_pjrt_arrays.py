"""The PJRT backend's arrays, devices, placement and errors.

The array protocol (SPEC "Arrays") on PJRT arrays, eager operations running
on the device, ``device_put`` onto PJRT devices (the SPEC table with device
buffers), committed placement across the CPU plugin's 4 devices, which
inputs ``jit(backend="pjrt")`` accepts, error cases, and many threads
calling one jitted function.
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import refimpl as ri
from refimpl import lax

_spec = importlib.util.spec_from_file_location(
    "pjrt_helpers", pathlib.Path(__file__).parents[1] / "helpers" / "pjrt_helpers.py"
)
helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(helpers)
helpers.skip_without_pjrt()

pytestmark = pytest.mark.pjrt


@pytest.fixture
def devices():
    return ri.devices("pjrt")


def put(values, device=None, dtype=np.float32):
    device = device if device is not None else ri.devices("pjrt")[0]
    return ri.device_put(np.asarray(values, dtype=dtype), device)


def is_pjrt(x) -> bool:
    return type(x).__name__ == "PjrtArray"


# --- devices ---------------------------------------------------------------------------


def test_the_cpu_plugin_has_four_devices(devices):
    assert len(devices) == 4
    assert [d.id for d in devices] == [0, 1, 2, 3]
    assert all(d.platform == "cpu" for d in devices)
    assert repr(devices[2]) == "CpuDevice(id=2)"
    assert ri.devices("pjrt") == devices  # the same devices every time


def test_default_backend_follows_the_config():
    assert ri.default_backend() == "ref"
    ri.config.update("backend", "pjrt")
    assert ri.default_backend() == "pjrt"
    assert ri.devices() == ri.devices("pjrt")
    out = ri.jit(lambda x: x + 1)(np.float32(1))
    assert is_pjrt(out) and float(out) == 2.0


# --- the array protocol ---------------------------------------------------------------------


def test_protocol_attributes(devices):
    x = put(np.arange(6).reshape(2, 3), devices[1])
    assert (x.shape, x.dtype, x.weak_type, x.ndim, x.size) == ((2, 3), np.float32, False, 2, 6)
    assert x.device == devices[1] and x.committed and x.devices() == {devices[1]}
    assert x.block_until_ready() is x
    assert isinstance(x.unsafe_buffer_pointer(), int) and x.unsafe_buffer_pointer() != 0
    assert not x.is_deleted()
    np.testing.assert_array_equal(np.asarray(x), np.arange(6).reshape(2, 3))
    assert np.asarray(x, dtype=np.int32).dtype == np.int32
    assert repr(x) == "Array([[0., 1., 2.],\n       [3., 4., 5.]], dtype=float32)"
    assert len(x) == 2 and [r.tolist() for r in x] == [[0, 1, 2], [3, 4, 5]]


def test_scalar_conversions_and_weak_repr():
    s = ri.device_put(2.5, ri.devices("pjrt")[0])
    assert s.weak_type and repr(s) == "Array(2.5, dtype=float32, weak_type=True)"
    assert float(s) == 2.5 and int(s) == 2 and bool(s) and complex(s) == 2.5
    i = put(7, dtype=np.int32)
    assert [10, 20, 30, 40, 50, 60, 70, 80][i] == 80 and i.item() == 7 and f"{i:03d}" == "007"
    with pytest.raises(TypeError):
        len(i)


def test_host_view_is_read_only():
    x = put([1.0, 2.0])
    first = np.asarray(x)
    assert not first.flags.writeable and np.array_equal(np.asarray(x), [1.0, 2.0])
    with pytest.raises(ValueError):
        first[0] = 5.0


def test_delete_frees_the_buffer():
    from refimpl.backends.pjrt import runtime as pjrt_runtime

    native = pjrt_runtime.native_module()
    x = put(np.ones(8))
    before = native.live_buffer_count()
    x.delete()
    assert x.is_deleted() and native.live_buffer_count() == before - 1
    with pytest.raises(RuntimeError, match="has been deleted"):
        np.asarray(x)


# --- eager operations run on the device -------------------------------------------------


def test_operators_on_pjrt_arrays_give_pjrt_arrays(rng):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    x = put(a)
    results = {
        "add": (x + 1, a + 1),
        "rsub": (2 - x, 2 - a),
        "mul": (x * x, a * a),
        "div": (x / 2, a / 2),
        "neg": (-x, -a),
        "compare": (x > 0, a > 0),
        "index": (x[1], a[1]),
        "slice": (x[:, 1:3], a[:, 1:3]),
        "T": (x.T, a.T),
        "astype": (x.astype(np.int32), a.astype(np.int32)),
        "sum": (x.sum(axis=0), a.sum(axis=0)),
        "matmul": (x @ x.T, a @ a.T),
        "lax.exp": (lax.exp(x), np.exp(a)),
    }
    for name, (got, want) in results.items():
        assert is_pjrt(got), name
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6, err_msg=name)


def test_eager_results_follow_placement(devices):
    committed = put([1.0, 2.0], devices[2])
    uncommitted = ri.device_put(np.float32([1.0, 2.0]), None)  # ref backend: a host array
    out = committed + 1
    assert out.device == devices[2] and out.committed
    mixed = committed * uncommitted
    assert is_pjrt(mixed) and mixed.device == devices[2]
    with pytest.raises(ValueError, match="incompatible devices"):
        committed + put([1.0, 2.0], devices[3])


def test_eager_primitive_is_compiled_once_per_signature():
    from refimpl.backends.pjrt import backend as pjrt

    x = put([1.0, 2.0])
    x + 1.0
    before = len(pjrt._eager_jitted)
    for _ in range(3):
        x = x + 1.0
    assert len(pjrt._eager_jitted) == before
    np.testing.assert_array_equal(np.asarray(x), [4.0, 5.0])


# --- jit inputs and placement --------------------------------------------------------------


def test_jit_accepts_numpy_scalars_reference_and_pjrt_arrays(devices):
    f = ri.jit(lambda a, b, c, d: a + b + c + d, backend="pjrt")
    ref_array = ri.device_put(np.ones(3, np.float32))
    uncommitted = ri.jit(lambda: np.ones(3, np.float32), backend="pjrt")()
    out = f(np.ones(3, np.float32), 2.0, ref_array, uncommitted)
    assert is_pjrt(out) and out.device == devices[0] and not out.committed
    np.testing.assert_array_equal(np.asarray(out), [5.0, 5.0, 5.0])


def test_committed_arguments_choose_the_device(devices):
    f = ri.jit(lambda a, b: a * b, backend="pjrt")
    x = put([1.0, 2.0], devices[3])
    out = f(x, np.float32(3))
    assert out.device == devices[3] and out.committed
    with pytest.raises(ValueError, match="incompatible devices"):
        f(put([1.0, 1.0], devices[1]), x)


def test_uncommitted_pjrt_arrays_follow_committed_ones(devices):
    f = ri.jit(lambda a, b: a - b, backend="pjrt")
    free = ri.device_put(np.float32([5.0, 6.0]), None, may_alias=None)
    free = ri.jit(lambda a: a, backend="pjrt")(free)  # a PJRT array on the default device
    assert free.device == devices[0] and not free.committed
    out = f(free, put([1.0, 1.0], devices[2]))
    assert out.device == devices[2] and out.committed
    np.testing.assert_array_equal(np.asarray(out), [4.0, 5.0])


# --- device_put with PJRT buffers ------------------------------------------------------------


def test_device_put_table_on_pjrt(devices):
    x = put([1.0, 2.0])
    with pytest.raises(ValueError, match="may_alias and donate cannot be True at the same time"):
        ri.device_put(x, donate=True, may_alias=True)
    assert ri.device_put(x, may_alias=True) is x and ri.device_put(x) is x
    fresh = ri.device_put(x, may_alias=False)
    assert fresh is not x and not x.is_deleted()
    assert fresh.unsafe_buffer_pointer() != x.unsafe_buffer_pointer()
    assert fresh.device == x.device and fresh.committed == x.committed
    pointer = x.unsafe_buffer_pointer()
    moved = ri.device_put(x, donate=True)
    assert x.is_deleted() and moved.unsafe_buffer_pointer() == pointer
    other = ri.device_put(moved, devices[1], donate=True)
    assert moved.is_deleted() and other.device == devices[1] and other.committed
    np.testing.assert_array_equal(np.asarray(other), [1.0, 2.0])


def test_device_put_of_host_values_and_pytrees(devices):
    tree = {"a": np.arange(3, dtype=np.int32), "b": 1.5, "c": ri.device_put(np.ones(2))}
    out = ri.device_put(tree, devices[2])
    assert all(is_pjrt(v) and v.device == devices[2] and v.committed for v in out.values())
    assert out["b"].weak_type and not out["a"].weak_type
    assert not tree["c"].is_deleted()
    np.testing.assert_array_equal(np.asarray(out["a"]), [0, 1, 2])


def test_device_put_same_array_twice_with_donation_is_an_error():
    x = put([1.0])
    with pytest.raises(ValueError, match="appears twice"):
        ri.device_put((x, x), donate=True)
    assert not x.is_deleted()


# --- errors ------------------------------------------------------------------------------


def test_deleted_array_passed_to_jit():
    x = put([1.0])
    x.delete()
    with pytest.raises(RuntimeError, match="has been deleted"):
        ri.jit(lambda a: a + 1, backend="pjrt")(x)


@pytest.mark.parametrize(
    "setting, message",
    [
        ("/nonexistent/libpjrt.so", "does not name an existing PJRT plugin file"),
        (__file__, "PJRT"),  # a file that is not a plugin
    ],
    ids=["missing", "not-a-plugin"],
)
def test_a_bad_plugin_path_is_a_clear_error(setting, message):
    """In a fresh process, since the client is made once per process."""
    code = textwrap.dedent(
        """
        import numpy as np
        import refimpl as ri
        try:
            ri.jit(lambda x: x + 1, backend="pjrt")(np.ones(2))
        except Exception as err:
            print(type(err).__name__ + ": " + str(err))
        """
    )
    env = dict(os.environ, REFIMPL_PJRT_PLUGIN=setting)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert message in result.stdout, result.stdout + result.stderr


def test_arguments_of_no_array_type_or_dtype_are_type_errors():
    import ml_dtypes

    f = ri.jit(lambda x: x * 2, backend="pjrt")
    with pytest.raises(TypeError, match="not a valid array value"):
        f("abc")
    with pytest.raises(TypeError, match="unsupported dtype float4_e2m1fn"):
        f(np.zeros(3, ml_dtypes.float4_e2m1fn))


# --- threads ------------------------------------------------------------------------------


def test_eight_threads_call_one_jitted_function():
    f = ri.jit(lambda x, k: x * k + 1.0, backend="pjrt")
    errors: list[BaseException] = []
    wrong: list[int] = []

    def worker(k: int) -> None:
        try:
            x = np.full(16, k, np.float32)
            for _ in range(1000):
                out = np.asarray(f(x, np.float32(k)))
                if not np.array_equal(out, x * k + 1.0):
                    wrong.append(k)
                    return
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and not wrong
    assert f._cache_size() == 1
