"""Eager refimpl.numpy / refimpl.lax calls and Primitive.bind on PJRT arrays
take cached fast-path jits (docs/semantics.md 16.1).

Oracles: JAX's jnp/lax on the same data (values, dtypes, weak types), the
reference backend (the slow path, unchanged) for the same, and the error the
reference backend raises for a bad argument.
"""

from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest

import refimpl as ri
import refimpl.lax as rlax
import refimpl.numpy as rnp

_spec = importlib.util.spec_from_file_location(
    "pjrt_helpers", pathlib.Path(__file__).parents[1] / "helpers" / "pjrt_helpers.py"
)
_helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_helpers)
_helpers.skip_without_pjrt()

jax = pytest.importorskip("jax")
jnp = jax.numpy

_DATA = np.linspace(-2.0, 3.0, 12, dtype=np.float32).reshape(3, 4)
_INTS = np.arange(12, dtype=np.int32).reshape(3, 4)

# (name, refimpl function, jax function, arguments: "x"/"i" are the arrays)
CASES = [
    ("sin", rnp.sin, jnp.sin, ("x",), {}),
    ("exp", rnp.exp, jnp.exp, ("x",), {}),
    ("negative int", rnp.negative, jnp.negative, ("i",), {}),
    ("add int", rnp.add, jnp.add, ("x", 1), {}),
    ("multiply float", rnp.multiply, jnp.multiply, (2.5, "x"), {}),
    ("add int array + float", rnp.add, jnp.add, ("i", 0.5), {}),
    ("maximum", rnp.maximum, jnp.maximum, ("x", "x"), {}),
    ("sum axis", rnp.sum, jnp.sum, ("x",), {"axis": 1}),
    ("mean axes keepdims", rnp.mean, jnp.mean, ("x",), {"axis": (0, 1), "keepdims": True}),
    ("max int", rnp.max, jnp.max, ("i",), {"axis": 0}),
    ("argmax", rnp.argmax, jnp.argmax, ("x",), {"axis": -1}),
    ("reshape", rnp.reshape, jnp.reshape, ("x", (4, 3)), {}),
    ("transpose list", rnp.transpose, jnp.transpose, ("x", [1, 0]), {}),
    ("astype", rnp.astype, jnp.astype, ("x", np.int16), {}),
    ("clip", rnp.clip, jnp.clip, ("x", -1.0, 1.0), {}),
    ("where", rnp.where, jnp.where, ("x", "x", 0.0), {}),
    ("cumsum", rnp.cumsum, jnp.cumsum, ("i",), {"axis": 1}),
    ("lax.sin", rlax.sin, jax.lax.sin, ("x",), {}),
    ("lax.add", rlax.add, jax.lax.add, ("x", "x"), {}),
    ("lax.reduce_max", rlax.reduce_max, jax.lax.reduce_max, ("x", (1,)), {}),
    ("lax.convert", rlax.convert_element_type, jax.lax.convert_element_type, ("i", np.float32), {}),
]


def _args(args, make):
    arrays = {"x": _DATA, "i": _INTS}
    return [make(arrays[a]) if isinstance(a, str) else a for a in args]


def _weak(value):
    return bool(getattr(value, "weak_type", False) or getattr(value.aval, "weak_type", False))


@pytest.mark.parametrize("name,fun,jfun,args,kwargs", CASES, ids=[c[0] for c in CASES])
def test_equal_to_slow_path_and_jax(name, fun, jfun, args, kwargs):
    pjrt = ri.devices("pjrt")[0]
    ref = ri.devices("ref")[0]
    with jax.default_device(jax.devices("cpu")[0]):
        expected = jfun(*_args(args, jnp.asarray), **kwargs)
    slow = fun(*_args(args, lambda a: ri.device_put(a, ref)), **kwargs)
    for _ in range(2):  # a miss (trace) then a C++ hit
        fast = fun(*_args(args, lambda a: ri.device_put(a, pjrt)), **kwargs)
        assert type(fast) is type(ri.device_put(_DATA, pjrt))
        for got in (fast, slow):
            assert got.dtype == expected.dtype and got.shape == expected.shape
            assert got.aval.weak_type == expected.aval.weak_type
            np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=1e-6)


def test_second_call_is_a_cpp_hit():
    x = ri.device_put(np.arange(8, dtype=np.float32), ri.devices("pjrt")[0])
    known = set(rnp.sum._fast_cache)
    rnp.sum(x, axis=0)
    (new,) = set(rnp.sum._fast_cache) - known  # one jit for (array, axis=0)
    jitted = rnp.sum._fast_cache[new][0]
    before = jitted._fast_stats()
    np.testing.assert_allclose(np.asarray(rnp.sum(x, axis=0)), 28.0)
    after = jitted._fast_stats()
    assert after["hits"] - before["hits"] == 1
    assert (after["misses"], after["slow"]) == (before["misses"], before["slow"])
    rnp.sum(x, axis=-1)  # another static argument: another jit
    assert len(set(rnp.sum._fast_cache) - known) == 2


def test_bind_outside_a_trace_hits_the_primitive_cache():
    from refimpl.backends.pjrt import backend
    from refimpl.primitives import elementwise

    x = ri.device_put(np.arange(4, dtype=np.float32), ri.devices("pjrt")[0])
    elementwise.cos_p.bind(x)  # the first call checks and makes the jit
    (cos,) = [j for (p, _), j in backend._eager_jitted.items() if p is elementwise.cos_p]
    before = cos._fast_stats()
    out = elementwise.cos_p.bind(x)
    after = cos._fast_stats()
    assert after["hits"] - before["hits"] == 1 and after["misses"] == before["misses"]
    np.testing.assert_allclose(np.asarray(out), np.cos(np.arange(4, dtype=np.float32)))


def _error(fun, *args, **kwargs):
    with pytest.raises(Exception) as info:
        fun(*args, **kwargs)
    return type(info.value), str(info.value)


@pytest.mark.parametrize(
    "fun,args,kwargs",
    [
        (rnp.reshape, ((5,),), {}),
        (rnp.sum, (), {"axis": 3}),
        (rnp.transpose, ([0, 0],), {}),
        (rlax.add, (np.float32(1.0),), {}),  # a mixed-dtype lax add
        (rnp.nonzero, (), {}),  # works eagerly: needs concrete values, not a jit
    ],
)
def test_errors_and_concrete_functions_as_the_slow_path(fun, args, kwargs):
    pjrt = ri.devices("pjrt")[0]
    ref = ri.devices("ref")[0]
    data = np.arange(6, dtype=np.int32).reshape(2, 3)
    for _ in range(2):  # before and after the key is known not to jit
        x_ref, x = ri.device_put(data, ref), ri.device_put(data, pjrt)
        try:
            slow = fun(x_ref, *args, **kwargs)
        except Exception:
            assert _error(fun, x, *args, **kwargs) == _error(fun, x_ref, *args, **kwargs)
        else:
            fast = fun(x, *args, **kwargs)
            for a, b in zip(fast, slow, strict=True):
                np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_non_array_results_and_identity_are_kept():
    x = ri.device_put(np.ones((2, 3), np.float32), ri.devices("pjrt")[0])
    for _ in range(2):
        assert rnp.ndim(x) == 2 and type(rnp.ndim(x)) is int
        assert rnp.shape(x) == (2, 3)
        assert rnp.asarray(x) is x


def test_deleted_input_then_live_input():
    pjrt = ri.devices("pjrt")[0]
    x = ri.device_put(np.ones(3, np.float32), pjrt)
    rnp.exp(x)
    dead = ri.device_put(np.ones(3, np.float32), pjrt)
    dead.delete()
    with pytest.raises(RuntimeError, match="deleted"):
        rnp.exp(dead)
    entries = list(rnp.exp._fast_cache.values())
    assert all(type(e) is tuple for e in entries)  # the key still takes the fast path


def test_static_keys_are_bounded(monkeypatch):
    from refimpl.backends import fast_functions

    monkeypatch.setattr(fast_functions, "_MAX_KEYS", 3)
    x = ri.device_put(np.arange(3, dtype=np.float32), ri.devices("pjrt")[0])
    for i in range(6):  # each scalar is a static key; past 3, the normal path
        np.testing.assert_array_equal(np.asarray(rnp.fmax(x, float(i))), np.fmax(np.arange(3), i))
    assert len(rnp.fmax._fast_cache) == 3


# --- the C++ entry (bindings/fast_eager.h) ------------------------------------------------


def test_exported_functions_are_cpp_entries_that_look_like_the_function():
    import inspect

    from refimpl.primitives import elementwise

    ri.devices("pjrt")  # the backend is loaded: the exports were replaced
    assert type(rnp.sin).__name__ == "EagerFunction"
    assert type(rlax.add).__name__ == "EagerFunction"
    assert rnp.sin.__name__ == "sin" and rnp.sum.__name__ == "sum"
    assert inspect.isfunction(rnp.sum.__wrapped__)
    assert rlax.add.__wrapped__ is elementwise.add  # what reduce_window recognizes
    assert inspect.signature(rnp.sum) == inspect.signature(rnp.sum.__wrapped__)
    assert "axis" in inspect.signature(rnp.sum).parameters
    assert rnp.sin.__doc__ == rnp.sin.__wrapped__.__doc__


def test_cpp_hit_runs_no_python_and_equals_jax():
    import sys

    x_np = np.linspace(-3.0, 3.0, 16, dtype=np.float32)
    x = ri.device_put(x_np, ri.devices("pjrt")[0])
    cases = [
        (rnp.sin, jnp.sin, (), {}),
        (rnp.multiply, jnp.multiply, (2.5,), {}),  # a float static: keyed by its bits
        (rnp.sum, jnp.sum, (), {"axis": 0}),  # a keyword static
        (rnp.where, jnp.where, (x_np, 0.0), {}),  # NumPy data: the Python wrapper
    ]
    for fun, jfun, rest, kwargs in cases:
        fun(x, *rest, **kwargs)  # miss: the wrapper traces and caches the key
        before = fun._eager_stats()
        calls: list = []
        sys.setprofile(lambda frame, event, arg, seen=calls: seen.append((event, frame)))
        try:
            got = fun(x, *rest, **kwargs)
        finally:
            sys.setprofile(None)
        after = fun._eager_stats()
        if fun is rnp.where:
            assert after["fallbacks"] == before["fallbacks"] + 1
            continue
        python_calls = [c for c in calls if c[0] == "call"]
        assert python_calls == [], python_calls
        assert after["hits"] == before["hits"] + 1
        want = jfun(jnp.asarray(x_np), *rest, **kwargs)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


def test_cpp_entry_under_a_trace_and_for_other_arguments_is_the_function():
    x_np = np.arange(4, dtype=np.float32)
    x = ri.device_put(x_np, ri.devices("pjrt")[0])
    f = ri.jit(lambda v: rnp.sin(v) * 2, backend="ref")  # a trace: the plain function
    np.testing.assert_allclose(np.asarray(f(x_np)), np.sin(x_np) * 2, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(ri.grad(lambda v: rnp.sin(v))(1.0)), np.cos(1.0))
    np.testing.assert_allclose(np.asarray(rnp.sin(x_np)), np.sin(x_np), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(rnp.add(x, x)), x_np + x_np)
    with pytest.raises(TypeError):  # the function's own argument error
        rnp.sin(x, x, x)


def test_cpp_entry_failed_call_and_deleted_input_as_the_wrapper():
    pjrt = ri.devices("pjrt")[0]
    x = ri.device_put(np.ones(3, np.float32), pjrt)
    rnp.cos(x)
    rnp.cos(x)  # a cached key
    dead = ri.device_put(np.ones(3, np.float32), pjrt)
    dead.delete()
    with pytest.raises(RuntimeError, match="deleted"):
        rnp.cos(dead)
    np.testing.assert_allclose(np.asarray(rnp.cos(x)), np.cos(np.ones(3)), rtol=1e-6)


def test_cpp_entry_binds_as_a_method_like_a_function():
    class Holder:
        sin = rnp.sin

    x = ri.device_put(np.zeros(2, np.float32), ri.devices("pjrt")[0])
    with pytest.raises(TypeError):
        Holder().sin(x)  # self is passed first, as for the plain function
    assert Holder.sin is rnp.sin


def test_cpp_entry_is_copied_as_a_function_is():
    import copy

    ri.devices("pjrt")
    config = {"activation": rnp.tanh, "sizes": [1, 2]}
    copied = copy.deepcopy(config)
    assert copied["activation"] is rnp.tanh and copied["sizes"] is not config["sizes"]
    assert copy.copy(rnp.tanh) is rnp.tanh
    assert copy.deepcopy(rnp.tanh.__wrapped__) is rnp.tanh.__wrapped__  # as for functions


def test_cpp_entry_while_another_thread_traces():
    import threading

    x_np = np.linspace(0.0, 1.0, 5, dtype=np.float32)
    x = ri.device_put(x_np, ri.devices("pjrt")[0])
    rnp.tan(x)  # the key is cached
    seen = {}

    def traced(v):
        # This thread traces (the process-wide list is not empty); another
        # thread's eager call still runs eagerly, as a C++ hit.
        before = rnp.tan._eager_stats()["hits"]
        worker = threading.Thread(target=lambda: seen.setdefault("y", rnp.tan(x)))
        worker.start()
        worker.join()
        seen["hits"] = rnp.tan._eager_stats()["hits"] - before
        return v * 2

    np.testing.assert_allclose(np.asarray(ri.jit(traced, backend="ref")(1.0)), 2.0)
    assert seen["hits"] == 1
    assert type(seen["y"]) is type(x)
    np.testing.assert_allclose(np.asarray(seen["y"]), np.tan(x_np), rtol=1e-6)


@pytest.mark.parametrize(
    "first, second", [(float("nan"), -float("nan")), (1j * float("nan"), complex(0, -float("nan")))]
)
def test_cpp_key_tells_nans_of_either_sign_apart(first, second):
    # repr merges NaNs: a key made from it replayed ``x * nan``'s jit for ``x * -nan``
    x = ri.device_put(np.ones(4, np.float32), ri.devices("pjrt")[0])
    rnp.multiply(x, first)  # miss: cached
    rnp.multiply(x, first)
    before = rnp.multiply._eager_stats()
    got = np.asarray(rnp.multiply(x, second))  # a new key: a miss, not the first's hit
    after = rnp.multiply._eager_stats()
    assert after["hits"] == before["hits"]
    want = np.asarray(jnp.multiply(jnp.ones(4, np.float32), second))
    np.testing.assert_array_equal(np.signbit(got.real), np.signbit(want.real))
    np.testing.assert_array_equal(np.signbit(got.imag), np.signbit(want.imag))
    again = np.asarray(rnp.multiply(x, second))  # now the C++ hit for -nan
    assert rnp.multiply._eager_stats()["hits"] == after["hits"] + 1
    np.testing.assert_array_equal(np.signbit(again.real), np.signbit(want.real))
