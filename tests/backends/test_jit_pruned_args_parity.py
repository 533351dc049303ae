"""A pjrt jit's executable takes only the arguments its program reads.

JAX 0.10.2 prunes unread arguments before lowering (``keep_unused=False``,
the default): its ``@main`` has no parameter for them and they are never
copied to the device (api_test's ``test_jit_with_pruned_args`` and
``test_jit_lower_no_pruning``). refimpl's pjrt backend does the same on the
Python path, the C++ fast path and AOT ``Compiled`` calls
(``refimpl.transforms.dce.kept_inputs``), except that a donated argument is
always kept: refimpl deletes every donated array (SPEC "Donation"), which
JAX does not do for an unread one. Compared with JAX live: the parameters of
the lowered ``@main`` and the host-to-device copies of a call.
"""

from __future__ import annotations

import contextlib
import importlib.util
import pathlib
import re

import jax
import numpy as np
import pytest

import refimpl as ri
from refimpl import test_util as tu

_spec = importlib.util.spec_from_file_location(
    "pjrt_helpers", pathlib.Path(__file__).parents[1] / "helpers" / "pjrt_helpers.py"
)
_helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_helpers)
_helpers.skip_without_pjrt()

pytestmark = pytest.mark.pjrt


@contextlib.contextmanager
def _jax_device_puts():
    """JAX's count of the arrays it puts on a device (what its test harness's
    ``count_device_put`` counts: outermost ``batched_device_put`` events), read
    through JAX's test-event hook. Not the harness itself: importing it
    defines JAX's test-only config flags in this process, which another test
    compares with refimpl's flags."""
    from jax._src import util

    state = {"puts": 0, "depth": 0}
    previous = util.test_event_listener

    def listener(name, *args):
        if name == "batched_device_put_start":
            state["puts"] += state["depth"] == 0
            state["depth"] += 1
        elif name == "batched_device_put_end":
            state["depth"] -= 1
        if previous is not None:
            previous(name, *args)

    util.test_event_listener = listener
    try:
        yield lambda: state["puts"]
    finally:
        util.test_event_listener = previous


def _host(k: int) -> np.ndarray:
    return np.arange(3, dtype=np.float32) + k


# (name, a maker of the function (a new one per jit: JAX's C++ cache is
# keyed on the function and would serve a second jit of it), number of
# array arguments)
FUNCTIONS = [
    ("middle_read", lambda: lambda x, y, z: y * 2, 3),
    ("first_read", lambda: lambda x, y: x, 2),
    ("all_read", lambda: lambda x, y: x + y, 2),
    ("none_read", lambda: lambda x, y: np.float32(1.0), 2),
    ("last_read", lambda: lambda x, y, z: z - 1, 3),
    ("dict_one_read", lambda: lambda d: d["b"] * d["b"], 1),
    ("dead_code_only", lambda: lambda x, y: (x * 3, y)[1], 2),
]


def _args(name: str, n: int) -> tuple:
    if name == "dict_one_read":
        return ({"a": _host(0), "b": _host(1), "c": _host(2)},)
    return tuple(_host(k) for k in range(n))


def _main_params(text: str) -> int:
    signature = text.split("func.func public @main(")[1].split(") ->")[0]
    return len(re.findall(r"%arg\d+:", signature))


@pytest.mark.parametrize("keep_unused", [False, True])
@pytest.mark.parametrize("name,make,n", FUNCTIONS, ids=[f[0] for f in FUNCTIONS])
def test_lowered_main_takes_the_parameters_jax_takes(name, make, n, keep_unused):
    args = _args(name, n)
    ours = ri.jit(make(), backend="pjrt", keep_unused=keep_unused).lower(*args).as_text()
    theirs = jax.jit(make(), keep_unused=keep_unused).lower(*args).as_text()
    assert _main_params(ours) == _main_params(theirs)


@pytest.mark.parametrize("keep_unused", [False, True])
@pytest.mark.parametrize("name,make,n", FUNCTIONS, ids=[f[0] for f in FUNCTIONS])
def test_a_call_copies_what_jax_copies(name, make, n, keep_unused):
    args = _args(name, n)
    with _jax_device_puts() as jax_count:
        expected = jax.jit(make(), keep_unused=keep_unused)(*args)
    f = ri.jit(make(), backend="pjrt", keep_unused=keep_unused)
    for call in range(3):  # the miss, then hits served by C++
        with tu.count_device_put() as count:
            out = f(*args)
        np.testing.assert_array_equal(np.asarray(out), np.asarray(expected))
        assert count() == jax_count(), call
    assert f._fast_stats()["hits"] >= 2 and f._fast_stats()["slow"] == 0
    compiled = f.lower(*args).compile()
    with tu.count_device_put() as count:
        out = compiled(*args)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(expected))
    assert count() == jax_count()


def test_the_python_path_copies_what_the_fast_path_copies():
    # the Python Jitted behind the fast callable (what serves the calls C++
    # declines: Ref arguments, float0 leaves, host callbacks) prunes the same
    f = ri.jit(lambda x, y, z: y * 2, backend="pjrt")
    args = tuple(_host(k) for k in range(3))
    from refimpl.backends.pjrt import backend

    entry_calls = []
    original = backend._launch

    def spy(entry, call, name, compiled, device, committed):
        entry_calls.append(compiled.kept)
        return original(entry, call, name, compiled, device, committed)

    backend._launch = spy
    try:
        with tu.count_device_put() as count:
            out = f._jitted(*args)  # the Python Jitted behind the fast callable
    finally:
        backend._launch = original
    np.testing.assert_array_equal(np.asarray(out), _host(1) * 2)
    assert entry_calls == [(False, True, False)]
    assert count() == 1


def test_donation_into_an_argument_after_an_unread_one_aliases():
    f = ri.jit(lambda u, v: v + 1, backend="pjrt", donate_argnums=(1,))
    x = ri.jit(lambda v: v, backend="pjrt")(np.ones(3, np.float32))
    for step in range(3):  # the miss, then C++ hits
        pointer = x.unsafe_buffer_pointer()
        y = f(_host(0), x)
        assert x.is_deleted() and y.unsafe_buffer_pointer() == pointer, step
        np.testing.assert_array_equal(np.asarray(y), np.full(3, step + 2, np.float32))
        x = y
    # JAX deletes it too (whether its CPU client reuses the buffer varies
    # from run to run, so its pointer is not compared)
    jx = jax.device_put(np.ones(3, np.float32))
    jy = jax.jit(lambda u, v: v + 1, donate_argnums=(1,))(_host(0), jx)
    assert jx.is_deleted()
    np.testing.assert_array_equal(np.asarray(jy), np.full(3, 2, np.float32))


def test_an_unread_donated_argument_is_still_deleted_where_jax_keeps_it():
    """refimpl's deliberate difference (docs/semantics.md, "Which arguments
    a jit's executable takes"): SPEC "Donation" deletes every donated array."""
    f = ri.jit(lambda u, v: u + 1, backend="pjrt", donate_argnums=(1,))
    for step in range(2):
        w = ri.jit(lambda v: v, backend="pjrt")(np.ones(3, np.float32))
        np.testing.assert_array_equal(np.asarray(f(_host(0), w)), _host(1))
        assert w.is_deleted(), step
    jw = jax.device_put(np.ones(3, np.float32))
    jax.jit(lambda u, v: u + 1, donate_argnums=(1,))(_host(0), jw)
    assert not jw.is_deleted()


def test_an_unread_deleted_argument_is_still_the_deleted_error():
    """refimpl's deliberate difference: JAX never looks at a pruned argument,
    refimpl refuses a deleted array wherever it is passed, on both paths."""
    f = ri.jit(lambda u, v: u + 1, backend="pjrt")
    for _round in range(2):  # the first deleted call goes to the Python path, the C++ one after
        w = ri.jit(lambda v: v, backend="pjrt")(np.ones(3, np.float32))
        f(_host(0), w)
        w.delete()
        with pytest.raises(RuntimeError, match="deleted"):
            f(_host(0), w)
        with pytest.raises(RuntimeError, match="deleted"):
            f._jitted(_host(0), w)
    jw = jax.device_put(np.ones(3, np.float32))
    jw.delete()
    np.testing.assert_array_equal(np.asarray(jax.jit(lambda u, v: u + 1)(_host(0), jw)), _host(1))
