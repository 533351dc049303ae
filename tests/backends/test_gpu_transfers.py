"""Donation, pointer stability and host<->device transfers, as a GPU plugin needs them.

Issue 32. Every check runs on whatever plugin discovery picks (the CPU plugin
here, the CUDA plugin on a GPU machine), so the same file is the CPU test and
the GPU check. It needs neither pytest nor hypothesis to run:
``python tests/backends/test_gpu_transfers.py`` runs every check and prints one line
each (tools/gpu_check.sh does that on a machine without pytest).

* donation: a donated input's device buffer becomes the output's
  (``unsafe_buffer_pointer`` equality; the training-state pattern, chained);
* host-to-device: changing the NumPy array right after ``device_put`` or a
  jitted call that took it must not change the device value (the plugin
  copied it before refimpl released the host memory: done_with_host_buffer);
* device-to-host: the value read back is right, and off the CPU it is a copy
  (no NumPy view of device memory);
* off the CPU: dlpack export and host callbacks refuse with clear errors.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable

import numpy as np

import refimpl as ri

N = 1 << 20  # large enough that a GPU DMA is still running when the call returns


def _device():
    return ri.devices("pjrt")[0]


def _platform() -> str:
    return str(_device().platform)


def _put(values):
    return ri.device_put(np.asarray(values), _device())


def check_donated_output_keeps_the_input_buffer():
    step = ri.jit(lambda x: x * 2 + 1, backend="pjrt", donate_argnums=0)
    x = _put(np.ones(N, np.float32))
    pointer = x.unsafe_buffer_pointer()
    y = step(x)
    assert x.is_deleted(), "the donated input is not deleted"
    assert y.unsafe_buffer_pointer() == pointer, "the output is not in the donated buffer"
    np.testing.assert_array_equal(np.asarray(y)[:4], np.full(4, 3, np.float32))


def check_training_state_chain_keeps_its_buffers():
    def update(state, grad):
        return {"w": state["w"] - 0.1 * grad, "b": state["b"] - 0.1 * grad[:8]}

    step = ri.jit(update, backend="pjrt", donate_argnums=0)
    state = {"w": _put(np.ones(1024, np.float32)), "b": _put(np.ones(8, np.float32))}
    grad = _put(np.full(1024, 1.0, np.float32))
    state = step(state, grad)  # first call compiles
    pointers = {k: v.unsafe_buffer_pointer() for k, v in state.items()}
    for _ in range(20):
        state = step(state, grad)
        assert {k: v.unsafe_buffer_pointer() for k, v in state.items()} == pointers
    np.testing.assert_allclose(np.asarray(state["w"])[0], 1 - 2.1, rtol=1e-5)


def check_eight_donated_arguments_each_keep_their_buffer():
    step = ri.jit(lambda *xs: tuple(x + 1 for x in xs), backend="pjrt", donate_argnums=range(8))
    xs = tuple(_put(np.full(1024, i, np.float32)) for i in range(8))
    pointers = [x.unsafe_buffer_pointer() for x in xs]
    ys = step(*xs)
    assert [y.unsafe_buffer_pointer() for y in ys] == pointers
    assert all(x.is_deleted() for x in xs)


def check_not_donated_leaves_the_input_alone():
    step = ri.jit(lambda x: x * 2, backend="pjrt")
    x = _put(np.ones(1024, np.float32))
    y = step(x)
    assert not x.is_deleted()
    assert y.unsafe_buffer_pointer() != x.unsafe_buffer_pointer()


def check_device_put_copies_before_the_host_array_changes():
    host = np.arange(N, dtype=np.float32)
    expected = host.copy()
    x = ri.device_put(host, _device())
    host[:] = -1  # at once: a transfer still reading `host` would see this
    np.testing.assert_array_equal(np.asarray(x), expected)


def check_jit_argument_copies_before_the_host_array_changes():
    f = ri.jit(lambda x: x + 0, backend="pjrt")
    f(np.zeros(N, np.float32))  # compile (and warm the fast path) first
    host = np.arange(N, dtype=np.float32)
    expected = host.copy()
    y = f(host)
    host[:] = -1
    np.testing.assert_array_equal(np.asarray(y), expected)


def check_device_to_host_reads_the_value():
    f = ri.jit(lambda x: x * 3, backend="pjrt")
    y = f(_put(np.arange(N, dtype=np.float32)))
    host = np.asarray(y)
    np.testing.assert_array_equal(host[:5], np.arange(5, dtype=np.float32) * 3)
    assert host[-1] == np.float32((N - 1) * 3)
    if _platform() != "cpu":
        # off the CPU the buffer is device memory: the NumPy array must be a copy
        assert host.ctypes.data != y.unsafe_buffer_pointer()


def check_dlpack_off_cpu_is_refused_clearly():
    x = _put(np.ones(4, np.float32))
    if _platform() == "cpu":
        np.testing.assert_array_equal(np.from_dlpack(x), np.ones(4, np.float32))
        return
    try:
        x.__dlpack_device__()
    except BufferError as err:
        assert _platform() in str(err)
    else:
        raise AssertionError("__dlpack_device__ of device memory did not raise")


def check_host_callback_off_cpu_is_not_implemented():
    def f(x):
        return ri.pure_callback(
            lambda v: np.asarray(v) + 1, ri.ShapeDtypeStruct(x.shape, x.dtype), x
        )

    jitted = ri.jit(f, backend="pjrt")
    x = _put(np.ones(4, np.float32))
    if _platform() == "cpu":
        np.testing.assert_array_equal(np.asarray(jitted(x)), np.full(4, 2, np.float32))
        return
    try:
        jitted(x)
    except NotImplementedError as err:
        assert _platform() in str(err), err
    else:
        raise AssertionError("a host callback on a GPU did not raise NotImplementedError")


def check_memory_stats_are_reported_or_absent():
    stats = _device().memory_stats()
    if stats is not None:
        assert stats["bytes_in_use"] >= 0


CHECKS: list[Callable[[], None]] = [
    value for name, value in sorted(globals().items()) if name.startswith("check_")
]


# --- pytest ---------------------------------------------------------------------------------

try:
    import pytest
except ImportError:  # standalone run
    pytest = None

if pytest is not None:
    from refimpl.backends.pjrt import runtime as _runtime

    pytestmark = [
        pytest.mark.pjrt,
        pytest.mark.skipif(not _runtime.plugin_available(), reason="no PJRT plugin"),
    ]

    @pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__[len("check_") :])
    def test_gpu_transfer_check(check):
        check()


def main() -> int:
    print(f"platform: {_platform()}, device: {_device()!r}")
    failed = 0
    for check in CHECKS:
        name = check.__name__[len("check_") :]
        try:
            check()
        except Exception:
            failed += 1
            print(f"FAIL {name}\n{traceback.format_exc(limit=4)}", flush=True)
        else:
            print(f"ok   {name}", flush=True)
    print(f"{len(CHECKS) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
