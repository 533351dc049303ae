"""Donation on both backends: the SPEC rules must hold the same way on ref and pjrt.

The tests of tests/transforms/test_donation.py that are about the rules (not about the
reference interpreter's internals) run here parametrized over the backends.
On PJRT, an aliased output must live in the donated input's device buffer
(``unsafe_buffer_pointer`` equality): XLA writes it there because the
lowered ``@main`` carries ``tf.aliasing_output``. Also here: PJRT-specific
cases (host values and reference Arrays in donated positions) and the
live-buffer leak test.
"""

from __future__ import annotations

import contextlib
import gc
import importlib.util
import pathlib
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import refimpl as ri
from refimpl import lax

_spec = importlib.util.spec_from_file_location(
    "pjrt_helpers", pathlib.Path(__file__).parents[1] / "helpers" / "pjrt_helpers.py"
)
helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(helpers)
helpers.skip_without_pjrt()

pytestmark = pytest.mark.pjrt


def arr(values, dtype=np.float32):
    """A device array of the current default backend, uncommitted."""
    return ri.device_put(np.asarray(values, dtype=dtype))


def ptr(a) -> int:
    return a.unsafe_buffer_pointer()


@contextlib.contextmanager
def no_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def assert_donated_error(excinfo, fun_name: str) -> None:
    message = str(excinfo.value)
    assert "has been deleted" in message and "donated" in message and fun_name in message


def test_arrays_are_of_the_backend(backend):
    x = arr([1.0])
    assert (type(x).__name__ == "PjrtArray") == (backend == "pjrt")
    assert type(ri.jit(lambda a: a + 1)(x)) is type(x)


# --- the deleted-array error ------------------------------------------------------------


def donated_array(fun_name: str = "consume"):
    def consume(x):
        return x + 1

    consume.__name__ = fun_name
    x = arr([1.0, 2.0, 3.0])
    ri.jit(consume, donate_argnums=0)(x)
    assert x.is_deleted()
    return x


OPERATIONS = {
    "add": lambda x: x + 1,
    "radd": lambda x: 1 + x,
    "neg": lambda x: -x,
    "lax.add": lambda x: lax.add(x, x),
    "np.asarray": lambda x: np.asarray(x),
    "indexing": lambda x: x[0],
    "sum": lambda x: x.sum(),
    "jit argument": lambda x: ri.jit(lambda a: a * 2)(x),
    "jit closure": lambda x: ri.jit(lambda: x * 2)(),
    "device_put": lambda x: ri.device_put(x),
    "device_put donate": lambda x: ri.device_put(x, donate=True),
    "device_put fresh": lambda x: ri.device_put(x, may_alias=False),
    "repr": repr,
    "tolist": lambda x: x.tolist(),
    "float": lambda x: float(x[0]),
    "unsafe_buffer_pointer": lambda x: x.unsafe_buffer_pointer(),
    "block_until_ready": lambda x: x.block_until_ready(),
}


@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_every_operation_on_a_donated_array_raises(name, backend):
    x = donated_array("consume_it")
    with pytest.raises(RuntimeError) as excinfo:
        OPERATIONS[name](x)
    assert_donated_error(excinfo, "consume_it")


def test_deleted_without_donation_says_deleted_but_not_donated(backend):
    x = arr([1.0, 2.0])
    x.delete()
    with pytest.raises(RuntimeError) as excinfo:
        x + 1
    assert "has been deleted" in str(excinfo.value) and "donated" not in str(excinfo.value)


def test_metadata_of_a_deleted_array_stays_readable(backend):
    x = donated_array()
    assert (x.shape, x.dtype, x.weak_type, x.ndim, x.size) == ((3,), np.float32, False, 1, 3)
    x.delete()  # deleting twice is allowed
    assert x.is_deleted()


def test_device_put_donate_names_device_put_in_the_error(backend):
    x = arr([1.0])
    ri.device_put(x, donate=True)
    with pytest.raises(RuntimeError) as excinfo:
        x * 2
    assert_donated_error(excinfo, "device_put")


# --- aliasing ---------------------------------------------------------------------------


def add(a, b):
    return a + b


@pytest.mark.parametrize(
    "jit_kwargs, call",
    [
        (dict(donate_argnums=1), "positional"),
        (dict(donate_argnames="b"), "keyword"),
        (dict(donate_argnums=-1), "positional"),
    ],
)
def test_which_argument_is_donated(jit_kwargs, call, backend):
    a, b = arr([1.0, 2.0]), arr([10.0, 20.0])
    b_ptr = ptr(b)
    f = ri.jit(add, **jit_kwargs)
    out = f(a, b) if call == "positional" else f(a, b=b)
    np.testing.assert_array_equal(np.asarray(out), [11.0, 22.0])
    assert not a.is_deleted() and b.is_deleted()
    assert ptr(out) == b_ptr


def test_aliased_output_is_written_into_the_donated_buffer(backend):
    x = arr(np.arange(1024.0))
    before = ptr(x)
    out = ri.jit(lambda a: a * 2 + 1, donate_argnums=0)(x)
    np.testing.assert_array_equal(np.asarray(out), np.arange(1024.0) * 2 + 1)
    assert x.is_deleted() and ptr(out) == before


def test_a_donation_chain_reuses_one_buffer(backend):
    step = ri.jit(lambda a: a * 0.5 + 1, donate_argnums=0)
    x = arr(np.zeros(256))
    first = ptr(x)
    for _ in range(5):
        x = step(x)
    assert ptr(x) == first
    np.testing.assert_allclose(np.asarray(x), np.full(256, 1.9375))


def test_pytree_donation_aliases_every_leaf(backend):
    state = {"w": arr(np.ones((2, 3))), "b": arr([0.5, 0.5, 0.5])}
    before = {k: ptr(v) for k, v in state.items()}
    f = ri.jit(lambda s: {"w": s["w"] * 2, "b": s["b"] - 1}, donate_argnums=0)
    with no_warnings():
        new = f(state)
    assert all(v.is_deleted() for v in state.values())
    assert {k: ptr(v) for k, v in new.items()} == before
    np.testing.assert_array_equal(np.asarray(new["w"]), np.full((2, 3), 2.0))


def test_partial_aliasing_warns_and_deletes_the_unusable_too(backend):
    a, b = arr([1.0, 2.0]), arr([3.0, 4.0])
    a_ptr = ptr(a)
    f = ri.jit(lambda a, b: a + b, donate_argnums=(0, 1))
    assert f.trace(a, b).aliases == {0: 0}
    with pytest.warns(UserWarning, match=r"not usable: b \(f32\[2\]\)"):
        out = f(a, b)
    assert a.is_deleted() and b.is_deleted()
    assert ptr(out) == a_ptr
    with pytest.raises(RuntimeError, match="donated"):
        np.asarray(b)


@pytest.mark.parametrize(
    "fun",
    [
        lambda x: lax.convert_element_type(x, np.int32),
        lambda x: lax.reshape(x, (1, 3)),
    ],
    ids=["f32->i32", "reshape"],
)
def test_no_aliasing_without_equal_shape_and_dtype(fun, backend):
    x = arr([1.0, 2.0, 3.0])
    f = ri.jit(fun, donate_argnums=0)
    assert f.trace(x).aliases == {}
    with pytest.warns(UserWarning, match="not usable"):
        out = f(x)
    assert x.is_deleted()
    np.testing.assert_array_equal(
        np.asarray(out), np.asarray(fun(np.array([1.0, 2.0, 3.0], np.float32)))
    )


def test_matching_takes_the_first_free_output_of_equal_type_in_order(backend):
    def f(a, b, c):
        return lax.slice(a, (0,), (2,)), a + b, c, a - b, lax.convert_element_type(c, np.float32)

    a, b, c = arr([1.0, 2.0, 3.0]), arr([4.0, 5.0, 6.0]), arr([1, 2], np.int32)
    pointers = [ptr(a), ptr(b), ptr(c)]
    g = ri.jit(f, donate_argnums=(0, 1, 2))
    assert g.trace(a, b, c).aliases == {0: 1, 1: 3, 2: 2}
    with no_warnings():
        outs = g(a, b, c)
    assert [ptr(outs[1]), ptr(outs[3]), ptr(outs[2])] == pointers
    np.testing.assert_array_equal(np.asarray(outs[3]), [-3.0, -3.0, -3.0])
    np.testing.assert_array_equal(np.asarray(outs[2]), [1, 2])


def test_weak_type_does_not_prevent_aliasing(backend):
    x = ri.device_put(2.0)
    assert x.weak_type
    before = ptr(x)
    f = ri.jit(
        lambda x: lax.convert_element_type(x, np.float32, weak_type=False) * 3, donate_argnums=0
    )
    out = f(x)
    assert not out.weak_type and ptr(out) == before and float(out) == 6.0


def test_donated_pass_through_keeps_the_buffer(backend):
    x = arr([1.0, 2.0])
    before = ptr(x)
    out = ri.jit(lambda x: x, donate_argnums=0)(x)
    assert x.is_deleted() and ptr(out) == before
    np.testing.assert_array_equal(np.asarray(out), [1.0, 2.0])


def test_swapping_two_donated_buffers(backend):
    a, b = arr([1.0, 2.0]), arr([3.0, 4.0])
    pa, pb = ptr(a), ptr(b)
    x, y = ri.jit(lambda a, b: (b, a), donate_argnums=(0, 1))(a, b)
    np.testing.assert_array_equal(np.asarray(x), [3.0, 4.0])
    np.testing.assert_array_equal(np.asarray(y), [1.0, 2.0])
    assert (ptr(x), ptr(y)) == (pa, pb)


def test_donated_input_also_returned_unchanged(backend):
    x = arr([1.0, 2.0])
    before = ptr(x)
    doubled, same = ri.jit(lambda x: (x * 2, x), donate_argnums=0)(x)
    assert ptr(doubled) == before and ptr(same) != before
    np.testing.assert_array_equal(np.asarray(doubled), [2.0, 4.0])
    np.testing.assert_array_equal(np.asarray(same), [1.0, 2.0])


def test_outputs_have_buffers_of_their_own(backend):
    x, y = arr([1.0, 2.0]), arr([3.0, 4.0])
    outs = ri.jit(lambda x, y: (x, y, x, 2.0))(x, y)
    pointers = [ptr(o) for o in outs] + [ptr(x), ptr(y)]
    assert len(set(pointers)) == len(pointers)
    assert not x.is_deleted() and not y.is_deleted()


def test_host_values_in_donated_positions_are_untouched(backend):
    n = np.array([1.0, 2.0], np.float32)
    f = ri.jit(lambda x, s: (x * 2, s + 1), donate_argnums=(0, 1))
    out, s = f(n, 3.0)
    np.testing.assert_array_equal(n, [1.0, 2.0])
    assert n.flags.writeable and float(s) == 4.0
    np.testing.assert_array_equal(np.asarray(out), [2.0, 4.0])


def test_donated_reference_array_passed_to_pjrt_is_deleted():
    x = ri.device_put(np.ones(3, np.float32))  # a reference Array
    out = ri.jit(lambda a: a + 1, backend="pjrt", donate_argnums=0)(x)
    assert type(out).__name__ == "PjrtArray" and x.is_deleted()
    with pytest.raises(RuntimeError) as excinfo:
        np.asarray(x)
    assert_donated_error(excinfo, "<lambda>")


# --- errors delete nothing ------------------------------------------------------------------


def test_same_array_twice_with_a_donated_position_is_a_value_error(backend):
    x = arr([1.0, 2.0])
    for donate in (0, 1, (0, 1)):
        f = ri.jit(add, donate_argnums=donate)
        with pytest.raises(ValueError, match="same array"):
            f(x, x)
        assert f.trace_count == 0  # raised before tracing
    with pytest.raises(ValueError, match="same array"):
        ri.jit(lambda t: t[0] + t[1], donate_argnums=0)((x, x))
    assert not x.is_deleted()
    np.testing.assert_array_equal(np.asarray(ri.jit(add)(x, x)), [2.0, 4.0])


def test_error_while_tracing_deletes_nothing(backend):
    def broken(x, y):
        raise ZeroDivisionError("injected failure")

    x, y = arr([1.0]), arr([2.0])
    with pytest.raises(ZeroDivisionError):
        ri.jit(broken, donate_argnums=(0, 1))(x, y)
    assert not x.is_deleted() and not y.is_deleted()


def test_shape_error_deletes_nothing(backend):
    x, y = arr([1.0, 2.0, 3.0]), arr([1.0, 2.0, 3.0, 4.0])
    with pytest.raises(TypeError):
        ri.jit(lambda a, b: a + b, donate_argnums=(0, 1))(x, y)
    assert not x.is_deleted() and not y.is_deleted()


def test_incompatible_devices_delete_nothing(backend):
    ri.config.update("ref_num_devices", 2)
    d0, d1 = ri.devices()[:2]
    x, y = ri.device_put(arr([1.0]), d0), ri.device_put(arr([2.0]), d1)
    with pytest.raises(ValueError, match="incompatible devices"):
        ri.jit(lambda a, b: (a + b, a - b), donate_argnums=(0, 1))(x, y)
    assert not x.is_deleted() and not y.is_deleted()


def test_deleted_argument_is_the_deleted_array_error_and_deletes_nothing_else(backend):
    x, y = arr([1.0]), arr([2.0])
    x.delete()
    with pytest.raises(RuntimeError, match="has been deleted"):
        ri.jit(add, donate_argnums=1)(x, y)
    assert not y.is_deleted()


# --- nested jit --------------------------------------------------------------------------


def test_donation_of_an_inner_jit_is_ignored_under_an_outer_trace(backend):
    inner = ri.jit(lambda y: y * 2, donate_argnums=0)
    outer = ri.jit(lambda x: inner(x) + 1)
    x = arr([1.0, 2.0])
    with no_warnings():
        out = outer(x)
    assert not x.is_deleted()
    np.testing.assert_array_equal(np.asarray(out), [3.0, 5.0])


def test_outer_donation_with_an_inner_jit(backend):
    inner = ri.jit(lambda y: y * 2)
    outer = ri.jit(lambda x: inner(x) + 1, donate_argnums=0)
    x = arr([1.0, 2.0])
    before = ptr(x)
    out = outer(x)
    assert x.is_deleted() and ptr(out) == before
    np.testing.assert_array_equal(np.asarray(out), [3.0, 5.0])


# --- random donation patterns against an independent model -------------------------------

TYPES = [((2,), np.float32), ((3,), np.float32), ((2,), np.int32), ((), np.float32)]


def expected_plan(in_types, donated, out_types):
    """SPEC: donated inputs in order take the first free output of equal type."""
    plan, taken = {}, set()
    for i, (t, d) in enumerate(zip(in_types, donated, strict=True)):
        if d:
            for j, u in enumerate(out_types):
                if j not in taken and u == t:
                    plan[i] = j
                    taken.add(j)
                    break
    return plan


@settings(max_examples=12, deadline=None)
@given(
    in_kinds=st.lists(st.integers(0, len(TYPES) - 1), min_size=1, max_size=4),
    out_picks=st.lists(st.tuples(st.integers(0, 3), st.booleans()), min_size=1, max_size=5),
    donate_mask=st.lists(st.booleans(), min_size=4, max_size=4),
)
def test_random_donation_patterns_on_pjrt(in_kinds, out_picks, donate_mask):
    in_types = [TYPES[k] for k in in_kinds]
    n = len(in_types)
    picks = [(p % n, transform) for p, transform in out_picks]
    donate = tuple(i for i in range(n) if donate_mask[i])
    values = [
        np.arange(np.prod(s, dtype=int) or 1).reshape(s).astype(d) + i
        for i, (s, d) in enumerate(in_types)
    ]

    def f(*xs):
        return [xs[p] + 1 if transform else xs[p] for p, transform in picks]

    expected = [values[p] + 1 if transform else values[p] for p, transform in picks]
    out_types = [in_types[p] for p, _ in picks]
    device = ri.devices("pjrt")[0]
    args = [ri.device_put(v, device) for v in values]
    pointers = [ptr(a) for a in args]
    jitted = ri.jit(f, donate_argnums=donate, backend="pjrt")
    plan = expected_plan(in_types, [i in donate for i in range(n)], out_types)
    assert jitted.trace(*args).aliases == plan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outs = jitted(*args)
    assert [a.is_deleted() for a in args] == [i in donate for i in range(n)]
    for i, j in plan.items():
        assert ptr(outs[j]) == pointers[i]
    for out, want in zip(outs, expected, strict=True):
        np.testing.assert_array_equal(np.asarray(out), want)
    live = [ptr(o) for o in outs] + [ptr(a) for a in args if not a.is_deleted()]
    assert len(set(live)) == len(live)


# --- no leaked device buffers ----------------------------------------------------------------


def test_ten_thousand_calls_with_and_without_donation_leak_no_buffer():
    from refimpl.backends.pjrt import runtime as pjrt_runtime

    native = pjrt_runtime.native_module()
    device = ri.devices("pjrt")[0]
    donating = ri.jit(lambda a, b: (a * 0.5 + b, b), backend="pjrt", donate_argnums=0)
    plain = ri.jit(lambda a, b: a * 0.5 + b, backend="pjrt")
    x = ri.device_put(np.ones(64, np.float32), device)
    b = ri.device_put(np.ones(64, np.float32), device)
    x, copy_of_b = donating(x, b)  # compile both before measuring
    plain(x, b)
    gc.collect()  # buffers of earlier tests held by reference cycles go now, not mid-loop
    baseline = native.live_buffer_count()
    for _ in range(10_000):
        x, copy_of_b = donating(x, b)
    for _ in range(10_000):
        plain(x, b)
    assert native.live_buffer_count() == baseline
    np.testing.assert_allclose(np.asarray(x), np.full(64, 2.0), rtol=1e-6)
