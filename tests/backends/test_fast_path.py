"""The C++ fast path of ``jit(backend="pjrt")`` (backends/pjrt/fast_path.py, bindings/fast_jit.cc).

What it must preserve, checked here: values equal to NumPy and to the
reference backend, trace counts equal to the reference ``jit`` (and to JAX
where it has the behaviour) for any call sequence, SPEC donation (deletion,
aliasing, errors, warnings), errors as Python exceptions, thread safety and
no leaked buffers. ``_fast_stats()`` tells which calls the C++ cache served.
"""

from __future__ import annotations

import collections
import gc
import importlib.util
import pathlib
import threading
import warnings

import jax
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import refimpl as ri
import refimpl.numpy as rnp

_spec = importlib.util.spec_from_file_location(
    "pjrt_helpers", pathlib.Path(__file__).parents[1] / "helpers" / "pjrt_helpers.py"
)
_helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_helpers)
_helpers.skip_without_pjrt()

from refimpl import _pjrt  # noqa: E402  (after the skip: needs the native module)

pytestmark = pytest.mark.pjrt


def pjrt_jit(fun, **kwargs):
    return ri.jit(fun, backend="pjrt", **kwargs)


def on_device(value, dtype=np.float32):
    """An uncommitted PJRT array on the default device."""
    return pjrt_jit(lambda x: x)(np.asarray(value, dtype))


def stats(f):
    return f._fast_stats()


# --- the callable --------------------------------------------------------------------------


def test_jit_on_pjrt_returns_the_fast_callable():
    fun = lambda x: x + 1  # noqa: E731
    f = pjrt_jit(fun)
    # JAX 0.10.2's repr of a jitted function
    assert type(f).__name__ == "FastJitted" and repr(f) == f"<PjitFunction of {fun!r}>"
    out = f(np.arange(3, dtype=np.float32))
    assert type(out).__name__ == "PjrtArray"
    np.testing.assert_array_equal(np.asarray(out), [1, 2, 3])


def test_function_attributes_are_kept():
    def scale(x, factor=2.0):
        """Scale x."""
        return x * factor

    f = pjrt_jit(scale)
    assert f.__name__ == "scale" and f.__doc__ == "Scale x." and f.__wrapped__ is scale


def test_hits_run_in_cpp():
    f = pjrt_jit(lambda x, y: x * y)
    x = on_device(np.ones(4))
    f(x, x)
    before = stats(f)
    for _ in range(20):
        f(x, x)
    after = stats(f)
    assert after["hits"] - before["hits"] == 20
    assert after["misses"] == before["misses"] and after["slow"] == before["slow"]


# --- values -------------------------------------------------------------------------------


Point = collections.namedtuple("Point", ["x", "y"])


class Box:
    """A registered pytree node with aux data."""

    def __init__(self, value, label):
        self.value = value
        self.label = label


ri.register_pytree_node(Box, lambda b: ((b.value,), b.label), lambda label, c: Box(c[0], label))


def _leaves(tree):
    return [np.asarray(leaf) for leaf in ri.tree_leaves(tree)]


@pytest.mark.parametrize(
    "fun, args",
    [
        (lambda x: x * 2 + 1, (np.arange(5, dtype=np.float32),)),
        (lambda x, y: (x + y, x * y), (np.arange(3.0), 2.0)),
        (lambda t: [t[0] - t[1], None, {"b": t[1], "a": t[0]}], ((np.ones(2), np.arange(2.0)),)),
        (lambda p: Point(p.y, p.x), (Point(np.float32(1), np.arange(3, dtype=np.int32)),)),
        (lambda b: Box(b.value * 3, b.label + "!"), (Box(np.arange(4, dtype=np.int8), "k"),)),
        (lambda d: d["u"] + d["v"], ({"v": np.int32(3), "u": np.arange(3, dtype=np.int32)},)),
        (lambda x: x.astype(np.bool_), (np.array([0.0, 1.5, -2.0]),)),
        (lambda x: x * 2, (np.arange(4).astype(ml_dtypes.bfloat16),)),
        (lambda x, k: x + k, (np.arange(3, dtype=np.int32), 7)),
        (lambda x, c: x * c, (np.ones(2, np.complex64), 1 + 2j)),
        (lambda b, x: rnp.where(b, x, -x), (True, np.arange(3, dtype=np.float32))),
    ],
    ids=["affine", "two-outputs", "mixed-tree", "namedtuple", "custom-node", "dict", "bool",
         "bf16", "py-int", "complex", "py-bool"],
)  # fmt: skip
def test_results_equal_the_reference_backend(fun, args):
    ref = ri.jit(fun, backend="ref")(*args)
    f = pjrt_jit(fun)
    for _ in range(2):  # the miss, then a C++ hit
        got = f(*args)
        assert ri.tree_structure(got) == ri.tree_structure(ref)
        for r, g in zip(ri.tree_leaves(ref), ri.tree_leaves(got), strict=True):
            assert type(g).__name__ == "PjrtArray"
            assert (g.shape, g.dtype, g.weak_type) == (r.shape, r.dtype, r.weak_type)
            np.testing.assert_array_equal(np.asarray(g), np.asarray(r))
    assert stats(f)["hits"] >= 1
    if isinstance(got, Box):
        assert got.label == ref.label


def test_values_against_numpy_for_every_argument_kind():
    f = pjrt_jit(lambda a, b, c, d, e: a * b + c - d * e)
    host = np.arange(6, dtype=np.float32).reshape(2, 3)
    ref_array = ri.device_put(np.full((2, 3), 2.0, np.float32))  # a reference-backend Array
    args = (on_device(host), host, ref_array, np.float32(0.5), 3.0)
    for _ in range(3):
        got = f(*args)
    expected = host * host + 2.0 - np.float32(0.5) * np.float32(3.0)
    np.testing.assert_array_equal(np.asarray(got), expected)
    assert stats(f)["hits"] == 3 and stats(f)["slow"] == 0


def test_keyword_and_static_arguments():
    def f(x, n, *, scale):
        return x * n * scale

    g = pjrt_jit(f, static_argnums=(1,))
    x = np.arange(3, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(g(x, 2, scale=1.5)), x * 3)
    np.testing.assert_array_equal(np.asarray(g(x, 3, scale=1.5)), x * 4.5)
    np.testing.assert_array_equal(np.asarray(g(x, n=3, scale=1.5)), x * 4.5)
    assert g._cache_size() == 3
    # jit(f) again with the same options shares the cache (as jax.jit does)
    assert pjrt_jit(f, static_argnums=(1,))._cache_size() == 3


def test_float64_inputs_are_canonicalized():
    f = pjrt_jit(lambda x: x + 1)
    out = f(np.arange(3.0))  # float64 -> float32 with x64 off
    assert out.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(out), [1, 2, 3])


def test_x64_changes_the_signature():
    ri.config.update("enable_x64", True)
    f = pjrt_jit(lambda x: x + 1)
    assert f(np.arange(3.0)).dtype == np.float64
    assert f(2**40).dtype == np.int64  # a Python int beyond int32 is fine with x64
    ri.config.update("enable_x64", False)
    assert f(np.arange(3.0)).dtype == np.float32
    assert f._cache_size() == 3


def test_backend_none_follows_the_config():
    ri.config.update("backend", "pjrt")
    f = ri.jit(lambda x: x + 1)
    assert type(f(np.ones(2))).__name__ == "PjrtArray"
    ri.config.update("backend", "ref")
    assert isinstance(f(np.ones(2)), ri.Array)
    ri.config.update("backend", "pjrt")
    assert type(f(np.ones(2))).__name__ == "PjrtArray"


def test_nested_in_another_trace_becomes_a_call():
    inner = pjrt_jit(lambda x: x * 3)
    outer = pjrt_jit(lambda x: inner(x) + inner(x + 1))
    np.testing.assert_array_equal(np.asarray(outer(np.ones(2, np.float32))), [9, 9])
    assert inner.trace_count == 1
    program = ri.make_program(lambda x: inner(x))(np.ones(2, np.float32))
    assert "jit" in str(program)


def test_committed_inputs_choose_the_device():
    devices = ri.devices("pjrt")
    x = ri.device_put(np.arange(3, dtype=np.float32), devices[2])
    f = pjrt_jit(lambda a, b: a + b)
    out = f(x, np.ones(3, np.float32))
    assert out.device == devices[2] and out.committed
    out2 = f(out, out)
    assert out2.device == devices[2] and out2.committed
    uncommitted = f(np.ones(3, np.float32), np.ones(3, np.float32))
    assert uncommitted.device == devices[0] and not uncommitted.committed
    y = ri.device_put(np.arange(3, dtype=np.float32), devices[1])
    with pytest.raises(ValueError, match="incompatible devices"):
        f(x, y)


# --- trace counts ----------------------------------------------------------------------------


def _run(fun, calls, **kwargs):
    """Cache sizes of refimpl ref, refimpl pjrt and JAX after the same calls."""
    counts = []
    for jit in (
        lambda f: ri.jit(f, backend="ref", **kwargs),
        lambda f: ri.jit(f, backend="pjrt", **kwargs),
        lambda f: jax.jit(f, **kwargs),
    ):
        jitted = jit(fun)
        for args, kw in calls:
            jitted(*args, **kw)
        counts.append(jitted._cache_size())
    return counts


@pytest.mark.parametrize(
    "calls",
    [
        [((np.ones(3, np.float32),), {})] * 3,
        [((1.0,), {}), ((np.float32(1.0),), {}), ((np.ones((), np.float32),), {}), ((2.0,), {})],
        [((1,), {}), ((True,), {}), ((1.0,), {}), ((1j,), {})],
        [((np.ones(3),), {}), ((np.ones(3, np.float32),), {})],
        [((np.ones(3, np.float32),), {}), ((np.ones(4, np.float32),), {})],
        [(((np.ones(2), np.ones(2)),), {}), (([np.ones(2), np.ones(2)],), {})],
        [(({"a": np.ones(2), "b": 1.0},), {}), (({"b": 1.0, "a": np.ones(2)},), {})],
    ],
    ids=["same", "weak-vs-strong", "scalar-kinds", "f64-canonical", "shape", "tuple-vs-list",
         "dict-order"],
)  # fmt: skip
def test_trace_counts_equal_ref_and_jax(calls):
    def fun(x):
        return ri.tree_leaves(x)[0] * 2 if not isinstance(x, jax.Array) else x * 2

    ref, fast, theirs = _run(fun, calls)
    assert fast == ref == theirs


def test_numpy_and_pjrt_inputs_share_the_python_entry():
    f = pjrt_jit(lambda x: x + 1)
    host = np.ones(3, np.float32)
    f(host)
    f(on_device(host))
    f(on_device(host))
    assert f.trace_count == 1 and f._cache_size() == 1  # one Python signature...
    assert f._fast_cache_size() == 2  # ...two C++ ones (the C++ key is finer)


def test_static_arguments_by_value():
    def f(x, n):
        return x * n

    calls = [
        ((np.ones(2), 2), {}),
        ((np.ones(2), 2), {}),
        ((np.ones(2), 3), {}),
        ((np.ones(2), 2.0), {}),  # equal to 2 but another type: another entry (as JAX)
        ((np.ones(2),), {"n": 2}),  # by keyword: another entry (as JAX)
    ]
    ref, fast, theirs = _run(f, calls, static_argnums=(1,))
    assert fast == ref == theirs == 4


def test_unhashable_static_argument_is_a_type_error():
    f = pjrt_jit(lambda x, n: x, static_argnums=1)
    with pytest.raises(TypeError, match="unhashable"):
        f(np.ones(2), [1, 2])


def test_custom_node_aux_data_is_compared_by_equality():
    f = pjrt_jit(lambda b: b.value + 1)
    for label in ("a", "a", "b", "a"):
        f(Box(np.ones(2, np.float32), label))
    assert f._cache_size() == 2 and f.trace_count == 2


# Random call sequences: the fast path never traces more or less than the reference.
_ARG = st.sampled_from(
    [
        ("f32[3]", lambda: np.ones(3, np.float32)),
        ("f32[3] on device", lambda: on_device(np.ones(3))),
        ("f64[3]", lambda: np.ones(3)),
        ("i32[3]", lambda: np.ones(3, np.int32)),
        ("f32[4]", lambda: np.ones(4, np.float32)),
        ("float", lambda: 1.5),
        ("int", lambda: 2),
        ("np.float32", lambda: np.float32(1.5)),
        ("tuple", lambda: (np.ones(3, np.float32), 1.0)),
        ("dict", lambda: {"k": np.ones(3, np.float32)}),
        ("point", lambda: Point(1.0, np.ones(3, np.float32))),
    ]
)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(_ARG, st.sampled_from([1, 2, "a"])), min_size=1, max_size=6))
def test_random_call_sequences_trace_as_the_reference(sequence):
    def fun(x, n):
        return ri.tree_leaves(x)[-1] * 2

    ref = ri.jit(fun, backend="ref", static_argnums=1)
    fast = pjrt_jit(fun, static_argnums=1)
    for (_, make), n in sequence:
        ref(make(), n)
        fast(make(), n)
    assert fast._cache_size() == ref._cache_size()
    assert fast.trace_count == ref.trace_count


# --- donation ----------------------------------------------------------------------------------


def test_donated_input_is_deleted_and_its_buffer_reused():
    f = pjrt_jit(lambda x: x * 2, donate_argnums=0)
    x = on_device(np.arange(4))
    f(x)  # miss (x is now donated)
    x = on_device(np.arange(4))
    pointer = x.unsafe_buffer_pointer()
    y = f(x)  # a C++ hit
    assert x.is_deleted() and y.unsafe_buffer_pointer() == pointer
    np.testing.assert_array_equal(np.asarray(y), np.arange(4) * 2)
    with pytest.raises(RuntimeError, match="has been deleted.*donated to '<lambda>'"):
        np.asarray(x)
    with pytest.raises(RuntimeError, match="has been deleted"):
        x + 1
    with pytest.raises(RuntimeError, match="has been deleted"):
        f(x)


def test_donation_chain_keeps_one_buffer():
    f = pjrt_jit(lambda x: x + 1, donate_argnums=0)
    x = on_device(np.zeros(8))
    pointer = x.unsafe_buffer_pointer()
    for _ in range(50):
        x = f(x)
    assert x.unsafe_buffer_pointer() == pointer
    np.testing.assert_array_equal(np.asarray(x), np.full(8, 50.0))


def test_donated_pytree_argument():
    f = pjrt_jit(lambda t: {k: v + 1 for k, v in t.items()}, donate_argnums=0)
    tree = {"a": on_device(np.ones(2)), "b": on_device(np.zeros(3))}
    pointers = {k: v.unsafe_buffer_pointer() for k, v in tree.items()}
    out = f(tree)
    assert all(v.is_deleted() for v in tree.values())
    assert {k: v.unsafe_buffer_pointer() for k, v in out.items()} == pointers


def test_unusable_donation_warns_once_per_entry_and_still_deletes():
    f = pjrt_jit(lambda x: x.sum(), donate_argnums=0)
    x = on_device(np.ones(3))
    with pytest.warns(UserWarning, match="not usable"):
        f(x)
    assert x.is_deleted()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = on_device(np.ones(3))
        f(y)  # same entry: no second warning
        f(np.ones(3, np.float32))  # another C++ signature, same Python entry: no warning
    assert y.is_deleted()


def test_numpy_and_scalars_in_donated_positions_are_untouched():
    f = pjrt_jit(lambda x, s: x + s, donate_argnums=(0, 1))
    host = np.arange(3, dtype=np.float32)
    with pytest.warns(UserWarning, match=r"not usable: s \(~f32\[\]\)"):
        out = f(host, 2.0)
    for _ in range(2):
        out = f(host, 2.0)
    np.testing.assert_array_equal(host, [0, 1, 2])
    np.testing.assert_array_equal(np.asarray(out), [2, 3, 4])


def test_donated_reference_array_is_deleted():
    f = pjrt_jit(lambda x: x + 1, donate_argnums=0)
    for _ in range(2):
        x = ri.device_put(np.ones(3, np.float32))  # a reference-backend Array
        out = f(x)
        assert x.is_deleted()
    np.testing.assert_array_equal(np.asarray(out), [2, 2, 2])
    with pytest.raises(RuntimeError, match="donated"):
        np.asarray(x)


def test_same_array_twice_with_donation_is_an_error_and_deletes_nothing():
    f = pjrt_jit(lambda a, b: a + b, donate_argnums=0)
    x = on_device(np.ones(2))
    f(on_device(np.ones(2)), on_device(np.ones(2)))  # the entry exists
    with pytest.raises(ValueError, match="same array"):
        f(x, x)
    assert not x.is_deleted()
    g = pjrt_jit(lambda t: t[0] + t[1], donate_argnums=0)
    with pytest.raises(ValueError, match="same array"):
        g((x, x))
    assert not x.is_deleted()
    out = pjrt_jit(lambda a, b: a + b, donate_argnums=1)(x, on_device(np.ones(2)))
    np.testing.assert_array_equal(np.asarray(out), [2, 2])


def test_a_failed_call_deletes_nothing():
    def bad(x, y):
        return x + y  # shapes (2,) and (3,) do not broadcast

    f = pjrt_jit(bad, donate_argnums=(0, 1))
    x, y = on_device(np.ones(2)), on_device(np.ones(3))
    with pytest.raises(TypeError):
        f(x, y)
    assert not x.is_deleted() and not y.is_deleted()


def test_numpy_view_keeps_memory_through_donation():
    f = pjrt_jit(lambda x: x * 2, donate_argnums=0)
    x = on_device(np.arange(4))
    view = np.asarray(x)  # zero-copy on CPU
    assert not view.flags.writeable and view.ctypes.data == x.unsafe_buffer_pointer()
    y = f(x)
    assert x.is_deleted()  # donated all the same (SPEC), but the view held the memory:
    assert y.unsafe_buffer_pointer() != view.ctypes.data  # XLA wrote y elsewhere
    np.testing.assert_array_equal(view, np.arange(4))
    np.testing.assert_array_equal(np.asarray(y), np.arange(4) * 2)
    del view
    z = on_device(np.arange(4))
    pointer = z.unsafe_buffer_pointer()
    assert f(z).unsafe_buffer_pointer() == pointer  # no view: aliased again


# --- errors ------------------------------------------------------------------------------------


def test_deleted_input_raises_the_deleted_error():
    f = pjrt_jit(lambda x: x + 1)
    x = on_device(np.ones(2))
    f(x)
    x.delete()
    with pytest.raises(RuntimeError, match="has been deleted"):
        f(x)


@pytest.mark.parametrize(
    "args, error, match",
    [
        (("abc",), TypeError, "not a valid array value"),
        ((object(),), TypeError, "not a valid array value"),
        ((2**40,), OverflowError, "overflow was encountered.*outside the range of int32"),
        ((np.array(["a"]),), TypeError, "unsupported dtype"),
        ((np.ones(2), np.ones(2)), TypeError, "argument"),
        ((ri.ShapeDtypeStruct((2,), np.float32),), TypeError, "ShapeDtypeStruct"),
    ],
    ids=["str", "object", "int-overflow", "str-dtype", "too-many-args", "abstract"],
)
def test_bad_arguments_raise_python_errors(args, error, match):
    f = pjrt_jit(lambda x: x + 1)
    f(np.ones(2, np.float32))
    with pytest.raises(error, match=match):
        f(*args)
    np.testing.assert_array_equal(np.asarray(f(np.ones(2, np.float32))), [2, 2])


def test_errors_in_the_traced_function_propagate():
    def fails(x):
        raise ValueError("inside the function")

    f = pjrt_jit(fails)
    with pytest.raises(ValueError, match="inside the function"):
        f(np.ones(2))
    assert f._fast_cache_size() == 0


# --- the PJRT array ------------------------------------------------------------------------------


def test_array_protocol():
    x = on_device(np.arange(6).reshape(2, 3))
    assert (x.shape, x.dtype, x.weak_type, x.ndim, x.size) == ((2, 3), np.float32, False, 2, 6)
    assert x.device == ri.devices("pjrt")[0] and not x.committed
    assert x.block_until_ready() is x and not x.is_deleted()
    assert x.aval == ri.ShapedArray((2, 3), np.dtype(np.float32))
    assert repr(x) == "Array([[0., 1., 2.],\n       [3., 4., 5.]], dtype=float32)"
    assert np.asarray(x, dtype=np.int32).dtype == np.int32
    copy = np.array(x, copy=True)
    assert copy.flags.writeable and copy.ctypes.data != x.unsafe_buffer_pointer()
    with pytest.raises(TypeError, match="unhashable"):
        hash(x)
    assert len(x) == 2 and [row.tolist() for row in x] == [[0, 1, 2], [3, 4, 5]]
    np.testing.assert_array_equal(np.asarray((x + 1) * 2), (np.arange(6).reshape(2, 3) + 1) * 2)
    np.testing.assert_array_equal(np.asarray(x[1]), [3, 4, 5])
    np.testing.assert_array_equal(np.asarray(x.T), np.arange(6).reshape(2, 3).T)
    weak = pjrt_jit(lambda: 2.5)()
    assert weak.weak_type and repr(weak) == "Array(2.5, dtype=float32, weak_type=True)"
    assert float(weak) == 2.5 and f"{weak:.1f}" == "2.5"


def test_deleted_array_errors():
    x = on_device(np.ones(3))
    x.delete()
    assert x.is_deleted()
    for use in (np.asarray, repr, lambda a: a + 1, lambda a: a.unsafe_buffer_pointer()):
        with pytest.raises((RuntimeError, TypeError), match="has been deleted"):
            use(x)
    x.delete()  # deleting twice is fine
    # float() checks the rank first, as JAX 0.10.2 ("Only scalar arrays ..."):
    # a deleted scalar says it is deleted
    scalar = on_device(np.float32(1.0))
    scalar.delete()
    with pytest.raises((RuntimeError, TypeError), match="has been deleted"):
        float(scalar)


# --- threads, the GIL, leaks ---------------------------------------------------------------------


def test_eight_threads_share_one_jitted_function():
    f = pjrt_jit(lambda x, k: x * k + 1.0)
    f(np.ones(16, np.float32), np.float32(1))  # traced once before the threads start
    errors: list[BaseException] = []
    wrong: list[int] = []

    def worker(k: int) -> None:
        try:
            x = on_device(np.full(16, k))
            for i in range(1000):
                out = f(x, np.float32(k))
                if i % 100 == 0 and not np.array_equal(np.asarray(out), np.full(16, k * k + 1)):
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
    assert f._cache_size() == 1 and f.trace_count == 1


def test_threads_with_donation_and_a_released_gil():
    previous = _pjrt._set_release_gil_bytes(0)  # every new entry releases the GIL
    try:
        f = pjrt_jit(lambda x: x + 1, donate_argnums=0)
        f(on_device(np.zeros(64)))
        results: dict[int, float] = {}

        def worker(k: int) -> None:
            x = on_device(np.full(64, k))
            for _ in range(500):
                x = f(x)
            results[k] = float(np.asarray(x)[0])

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert results == {k: k + 500.0 for k in range(8)}
    finally:
        _pjrt._set_release_gil_bytes(previous)


def test_no_buffers_leak():
    f = pjrt_jit(lambda x, s: (x * s, x + s))
    g = pjrt_jit(lambda x: x + 1, donate_argnums=0)
    x = on_device(np.ones(32))
    for _ in range(3):
        f(x, 2.0)
        f(np.ones(32, np.float32), 2.0)
    _pjrt._clear_constant_cache()
    gc.collect()
    baseline = _pjrt.live_buffer_count()
    y = on_device(np.ones(32))
    for _ in range(2000):
        f(x, 3.0)
        f(np.ones(32, np.float32), np.float32(1))
        y = g(y)
    del y
    _pjrt._clear_constant_cache()
    gc.collect()
    assert _pjrt.live_buffer_count() == baseline


# --- native pieces (native/scalar_encoding.h, native/constant_cache.h) ----------------------

# The canonical dtype of each Python scalar type, without and with x64.
_CANONICAL = {
    bool: (np.bool_, np.bool_),
    int: (np.int32, np.int64),
    float: (np.float32, np.float64),
    complex: (np.complex64, np.complex128),
}
_HOST_SCALARS = [True, False, 0, -7, 2**31 - 1, -(2**31), 1.5, -0.0, 1e40, float("nan")]
_HOST_SCALARS += [float("-inf"), 1 + 2j, -0.5j, complex(3e39, -1e-50)]


@pytest.mark.parametrize("x64", [False, True])
def test_host_scalars_reach_the_device_with_numpys_bytes(x64):
    # Cached calls (hits): the scalar's bytes come from the C++ encoding and
    # the constant cache; NumPy's cast of the same value is the expectation.
    identity = pjrt_jit(lambda s: s)
    old = ri.config.enable_x64
    ri.config.update("enable_x64", x64)
    try:
        for s in _HOST_SCALARS:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # 1e40 -> inf in float32
                expected = np.asarray(s, dtype=_CANONICAL[type(s)][x64])
            identity(s)
            hits = stats(identity)["hits"]
            out = np.asarray(identity(s))
            assert stats(identity)["hits"] == hits + 1, s
            assert out.dtype == expected.dtype and out.tobytes() == expected.tobytes(), s
    finally:
        ri.config.update("enable_x64", old)


def test_constant_cache_keeps_one_buffer_per_scalar_and_empties_when_full():
    f = pjrt_jit(lambda x, s: x * s)
    g = pjrt_jit(lambda s: s * 2, donate_argnums=0)
    x = on_device(np.ones(4))
    _pjrt._clear_constant_cache()
    f(x, 2.0)
    f(x, 2.0)
    assert _pjrt._constant_cache_size() == 1
    f(x, 3.0)
    f(x, True)
    assert _pjrt._constant_cache_size() == 3
    g(5.0)  # a donated scalar's buffer is the call's own: never cached
    g(5.0)
    assert _pjrt._constant_cache_size() == 3
    for k in range(1100):
        f(x, k + 0.25)
    assert 0 < _pjrt._constant_cache_size() <= 1024
    np.testing.assert_array_equal(f(x, 7.25), np.full(4, 7.25, np.float32))
    _pjrt._clear_constant_cache()
    assert _pjrt._constant_cache_size() == 0


def test_an_entry_whose_ref_write_back_is_not_the_refs_alias_is_refused(monkeypatch):
    # native/dispatch.h's write-back rule guards C++ against a wrong entry
    # spec: the Ref's final value must come back through its own buffer.
    from refimpl.backends.pjrt import fast_path

    real = fast_path.on_miss
    corrupted = []

    def wrong_write_back(*args):
        spec = real(*args)
        if spec is None or spec.ref_outputs != (1, -1):
            return spec  # not the call with the Ref (output 1 is its final value)
        corrupted.append(spec)
        return spec._replace(ref_outputs=(0, -1))

    def step(r, x):
        r[...] = r[...] + x
        return x * 2

    old = ri.config.backend
    ri.config.update("backend", "pjrt")
    try:
        x = on_device(np.ones(3))
        r = ri.new_ref(np.ones(3, np.float32))
        monkeypatch.setattr(fast_path, "on_miss", wrong_write_back)
        f = pjrt_jit(step)
        with pytest.raises(ValueError, match="aliased"):
            f(r, x)
        assert len(corrupted) == 1
        np.testing.assert_array_equal(np.asarray(r[...]), np.ones(3, np.float32))
    finally:
        ri.config.update("backend", old)
