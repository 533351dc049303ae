"""Donation on the reference backend: deletion, aliasing plans, real buffer reuse.

Values are checked against NumPy; which inputs are deleted and which outputs
alias is checked against the SPEC rules here, and against real JAX in
tests/transforms/test_jit_donation_vs_jax.py.
"""

from __future__ import annotations

import contextlib
import gc
import importlib.util
import pathlib
import tracemalloc
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import refimpl as ri
from refimpl import lax
from refimpl.primitives.base import Primitive

ROOT = pathlib.Path(__file__).resolve().parents[2]


def arr(values, dtype=np.float32) -> ri.Array:
    return ri.device_put(np.asarray(values, dtype=dtype))


def ptr(a: ri.Array) -> int:
    return a.unsafe_buffer_pointer()


@contextlib.contextmanager
def no_warnings():
    """A context that turns any warning into a test failure."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def assert_donated_error(excinfo, fun_name: str) -> None:
    message = str(excinfo.value)
    assert "has been deleted" in message
    assert "donated" in message
    assert fun_name in message


# --- the deleted-array error on every operation ------------------------------------


def donated_array(fun_name: str = "consume") -> ri.Array:
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
    "mul": lambda x: x * x,
    "neg": lambda x: -x,
    "compare": lambda x: x < 2,
    "lax.add": lambda x: lax.add(x, x),
    "np.asarray": lambda x: np.asarray(x),
    "np.add": lambda x: np.add(x, 1),
    "indexing": lambda x: x[0],
    "T": lambda x: x.T,
    "astype": lambda x: x.astype(np.int32),
    "sum": lambda x: x.sum(),
    "jit argument": lambda x: ri.jit(lambda a: a * 2)(x),
    "jit closure": lambda x: ri.jit(lambda: x * 2)(),
    "device_put": lambda x: ri.device_put(x),
    "device_put may_alias": lambda x: ri.device_put(x, may_alias=True),
    "device_put donate": lambda x: ri.device_put(x, donate=True),
    "device_put fresh": lambda x: ri.device_put(x, may_alias=False),
    "device_put device": lambda x: ri.device_put(x, ri.devices()[0]),
    "repr": repr,
    "str": str,
    "format": lambda x: f"{x}",
    "iter": lambda x: list(x),
    "tolist": lambda x: x.tolist(),
    "unsafe_buffer_pointer": lambda x: x.unsafe_buffer_pointer(),
    "block_until_ready": lambda x: x.block_until_ready(),
    "eval_shape": lambda x: ri.eval_shape(lambda a: a, x),
}


@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_every_operation_on_a_donated_array_raises(name):
    x = donated_array("consume_it")
    with pytest.raises(RuntimeError) as excinfo:
        OPERATIONS[name](x)
    assert_donated_error(excinfo, "consume_it")


def test_scalar_conversions_of_a_donated_array_raise():
    x = arr(3.0)
    ri.jit(lambda a: a * 2, donate_argnums=0)(x)
    for convert in (float, int, bool, complex):
        with pytest.raises(RuntimeError, match="has been deleted"):
            convert(x)


def test_deleted_without_donation_says_deleted_but_not_donated():
    x = arr([1.0, 2.0])
    x.delete()
    with pytest.raises(RuntimeError) as excinfo:
        x + 1
    assert "has been deleted" in str(excinfo.value)
    assert "donated" not in str(excinfo.value)


def test_metadata_of_a_deleted_array_stays_readable():
    x = donated_array()
    assert (x.shape, x.dtype, x.weak_type, x.ndim, x.size) == ((3,), np.float32, False, 1, 3)
    assert x.is_deleted()
    x.delete()  # deleting twice is allowed, as in JAX
    assert x.is_deleted()


def test_device_put_donate_names_device_put_in_the_error():
    x = arr([1.0])
    ri.device_put(x, donate=True)
    with pytest.raises(RuntimeError) as excinfo:
        x * 2
    assert_donated_error(excinfo, "device_put")


# --- donate_argnums / donate_argnames conventions ------------------------------------


def add(a, b):
    return a + b


@pytest.mark.parametrize(
    "jit_kwargs, call",
    [
        (dict(donate_argnums=1), "positional"),
        (dict(donate_argnums=1), "keyword"),
        (dict(donate_argnames="b"), "positional"),
        (dict(donate_argnames="b"), "keyword"),
        (dict(donate_argnums=-1), "positional"),
    ],
)
def test_which_argument_is_donated(jit_kwargs, call):
    a, b = arr([1.0, 2.0]), arr([10.0, 20.0])
    b_ptr = ptr(b)
    f = ri.jit(add, **jit_kwargs)
    out = f(a, b) if call == "positional" else f(a, b=b)
    np.testing.assert_array_equal(np.asarray(out), [11.0, 22.0])
    assert not a.is_deleted()
    assert b.is_deleted()
    assert ptr(out) == b_ptr


def test_negative_donate_argnums_resolve_per_call():
    def f(*args):
        return sum(args[1:], args[0])

    g = ri.jit(f, donate_argnums=-1)
    xs = [arr([1.0]) for _ in range(3)]
    g(*xs)
    assert [x.is_deleted() for x in xs] == [False, False, True]
    ys = [arr([1.0]) for _ in range(2)]
    g(*ys)
    assert [y.is_deleted() for y in ys] == [False, True]


@pytest.mark.parametrize(
    "jit_kwargs",
    [
        dict(static_argnums=0, donate_argnums=0),
        dict(static_argnames="a", donate_argnames="a"),
        dict(static_argnums=0, donate_argnames="a"),
        dict(static_argnames="b", donate_argnums=-1),
    ],
)
def test_static_and_donated_is_a_value_error(jit_kwargs):
    with pytest.raises(ValueError, match="both static and donated"):
        ri.jit(add, **jit_kwargs)


def test_donation_is_part_of_the_signature():
    f = ri.jit(add, donate_argnames="b")
    a, b = arr([1.0]), arr([2.0])
    assert f.trace(a, b).call.signature.donated == (False, True)
    assert ri.jit(add).trace(a, b).call.signature.donated == (False, False)


def test_trace_shows_the_plan_and_deletes_nothing():
    f = ri.jit(lambda x, y: (y * 1.0, x * 2), donate_argnums=(0, 1))
    x, y = arr([1.0, 2.0, 3.0]), arr([1.0, 2.0])
    traced = f.trace(x, y)
    assert traced.aliases == {0: 1, 1: 0}
    assert traced.donation.donated == (True, True)
    assert not x.is_deleted() and not y.is_deleted()


# --- aliasing: the plan and real buffer reuse -----------------------------------------


def test_aliased_output_is_written_into_the_donated_buffer():
    x = arr([1.0, 2.0, 3.0])
    before = ptr(x)
    out = ri.jit(lambda a: a * 2 + 1, donate_argnums=0)(x)
    np.testing.assert_array_equal(np.asarray(out), [3.0, 5.0, 7.0])
    assert x.is_deleted()
    assert ptr(out) == before
    assert not np.asarray(out).flags.writeable  # writable only during the write


def test_pytree_donation_aliases_every_leaf():
    state = {"w": arr(np.ones((2, 3))), "b": arr([0.5, 0.5, 0.5])}
    before = {k: ptr(v) for k, v in state.items()}
    f = ri.jit(lambda s: {"w": s["w"] * 2, "b": s["b"] - 1}, donate_argnums=0)
    with no_warnings():
        new = f(state)
    assert all(v.is_deleted() for v in state.values())
    assert {k: ptr(v) for k, v in new.items()} == before
    np.testing.assert_array_equal(np.asarray(new["w"]), np.full((2, 3), 2.0))
    np.testing.assert_array_equal(np.asarray(new["b"]), [-0.5, -0.5, -0.5])


def test_partial_aliasing_two_donated_one_matching_output():
    a, b = arr([1.0, 2.0]), arr([3.0, 4.0])
    a_ptr = ptr(a)
    f = ri.jit(lambda a, b: a + b, donate_argnums=(0, 1))
    assert f.trace(a, b).aliases == {0: 0}
    with pytest.warns(UserWarning, match="not usable") as record:
        out = f(a, b)
    message = str(record[0].message)
    assert "b (f32[2])" in message and "a " not in message.split("usable:")[1]
    assert a.is_deleted() and b.is_deleted()  # the unusable one too (SPEC)
    assert ptr(out) == a_ptr
    np.testing.assert_array_equal(np.asarray(out), [4.0, 6.0])


def test_unusable_warning_lists_pytree_paths():
    d = {"w": arr([1.0, 2.0]), "b": arr([1.0, 2.0, 3.0])}
    f = ri.jit(lambda x: x["w"] * 2, donate_argnums=0)
    with pytest.warns(UserWarning, match=r"not usable: x\['b'\] \(f32\[3\]\)"):
        f(d)
    assert d["w"].is_deleted() and d["b"].is_deleted()


def test_unusable_warning_is_given_once_per_cache_entry():
    f = ri.jit(lambda x: x.astype(np.int32), donate_argnums=0)
    with pytest.warns(UserWarning, match="not usable"):
        f(arr([1.0]))
    with no_warnings():
        f(arr([2.0]))
    with pytest.warns(UserWarning, match="not usable"):
        f(arr([1.0, 2.0]))  # a new signature, a new entry


@pytest.mark.parametrize("backend", ["ref", "pjrt"])
def test_unusable_warning_with_a_ref_argument_too(backend):
    # The checks of every run are the call plan's, whatever the entry's kind:
    # a Ref argument does not silence the warning a plain call gives.
    def step(r, x):
        r[...] = r[...] + 1.0
        return x.sum()

    device = ri.devices(backend)[0]
    r = ri.new_ref(ri.device_put(np.zeros(2, np.float32), device))
    x = ri.device_put(np.ones(3, np.float32), device)
    f = ri.jit(step, donate_argnums=1, backend=backend)
    with pytest.warns(UserWarning, match=r"not usable: x \(f32\[3\]\)") as record:
        out = f(r, x)
    assert record[0].filename == __file__  # pointing at the call
    assert x.is_deleted()
    assert float(out) == 3.0
    np.testing.assert_array_equal(np.asarray(r[...]), [1.0, 1.0])
    with no_warnings():  # once per entry
        f(r, ri.device_put(np.ones(3, np.float32), device))


@pytest.mark.parametrize(
    "fun, x",
    [
        (lambda x: lax.convert_element_type(x, np.int32), [1.0, 2.0, 3.0]),  # same bytes
        (lambda x: lax.convert_element_type(x, np.float16), [1.0, 2.0, 3.0]),
        (lambda x: lax.reshape(x, (1, 3)), [1.0, 2.0, 3.0]),  # same bytes, other shape
        (lambda x: lax.slice(x, (0,), (2,)) * 2, [1.0, 2.0, 3.0]),
    ],
    ids=["f32->i32", "f32->f16", "reshape", "smaller"],
)
def test_no_aliasing_without_equal_shape_and_dtype(fun, x):
    x = arr(x)
    f = ri.jit(fun, donate_argnums=0)
    assert f.trace(x).aliases == {}
    with pytest.warns(UserWarning, match="not usable"):
        out = f(x)
    assert x.is_deleted()
    expected = fun(arr([1.0, 2.0, 3.0]))  # eager: the same function without jit
    np.testing.assert_array_equal(np.asarray(out), np.asarray(expected))


def test_matching_takes_the_first_free_output_of_equal_type_in_order():
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


def test_weak_type_does_not_prevent_aliasing():
    x = ri.device_put(2.0)  # weakly typed f32[]
    assert x.weak_type
    before = ptr(x)
    f = ri.jit(
        lambda x: lax.convert_element_type(x, np.float32, weak_type=False) * 3, donate_argnums=0
    )
    out = f(x)
    assert not out.weak_type and ptr(out) == before and float(out) == 6.0


def test_donated_pass_through_keeps_the_buffer():
    x = arr([1.0, 2.0])
    before = ptr(x)
    out = ri.jit(lambda x: x, donate_argnums=0)(x)
    assert x.is_deleted() and ptr(out) == before
    np.testing.assert_array_equal(np.asarray(out), [1.0, 2.0])


def test_outputs_never_share_memory_with_inputs_or_constants():
    x, y = arr([1.0, 2.0]), arr([3.0, 4.0])
    const = arr([5.0, 6.0])
    f = ri.jit(lambda x, y: (x, y, x, const, 2.0))
    outs = f(x, y)
    buffers = [np.asarray(o) for o in outs] + [np.asarray(x), np.asarray(y), np.asarray(const)]
    for i, first in enumerate(buffers):
        for second in buffers[i + 1 :]:
            assert not np.shares_memory(first, second)
    assert not x.is_deleted() and not y.is_deleted()


def test_the_same_output_twice_gets_two_buffers():
    x = arr([1.0, 2.0])
    before = ptr(x)
    first, second = ri.jit(lambda x: (lambda y: (y, y))(x * 2), donate_argnums=0)(x)
    assert ptr(first) == before and ptr(second) != before
    assert not np.shares_memory(np.asarray(first), np.asarray(second))
    np.testing.assert_array_equal(np.asarray(second), [2.0, 4.0])


def test_swapping_two_donated_buffers():
    a, b = arr([1.0, 2.0]), arr([3.0, 4.0])
    pa, pb = ptr(a), ptr(b)
    x, y = ri.jit(lambda a, b: (b, a), donate_argnums=(0, 1))(a, b)
    np.testing.assert_array_equal(np.asarray(x), [3.0, 4.0])
    np.testing.assert_array_equal(np.asarray(y), [1.0, 2.0])
    assert (ptr(x), ptr(y)) == (pa, pb)


def test_donated_input_also_returned_unchanged():
    x = arr([1.0, 2.0])
    before = ptr(x)
    doubled, same = ri.jit(lambda x: (x * 2, x), donate_argnums=0)(x)
    assert ptr(doubled) == before
    np.testing.assert_array_equal(np.asarray(doubled), [2.0, 4.0])
    np.testing.assert_array_equal(np.asarray(same), [1.0, 2.0])


def test_donated_input_read_after_its_aliased_output_is_made():
    # The output aliasing x is computed first, but x is read again later: the
    # write into x's buffer must wait until x is dead.
    def f(x):
        y = x * 2
        z = x + 100
        return y, z

    x = arr([1.0, 2.0])
    before = ptr(x)
    y, z = ri.jit(f, donate_argnums=0)(x)
    assert ptr(y) == before
    np.testing.assert_array_equal(np.asarray(y), [2.0, 4.0])
    np.testing.assert_array_equal(np.asarray(z), [101.0, 102.0])


def test_view_of_a_donated_input_stays_valid():
    # reshape may make a NumPy view of x; writing into x while the view is
    # still to be read would corrupt it.
    def f(x):
        flat = lax.reshape(x, (4,))
        doubled = x * 2
        return doubled, flat + 1

    x = arr(np.arange(4.0).reshape(2, 2))
    doubled, flat = ri.jit(f, donate_argnums=0)(x)
    np.testing.assert_array_equal(np.asarray(doubled), np.arange(4.0).reshape(2, 2) * 2)
    np.testing.assert_array_equal(np.asarray(flat), np.arange(4.0) + 1)


def test_numpy_arrays_and_scalars_in_donated_positions_are_untouched():
    n = np.array([1.0, 2.0], np.float32)
    f = ri.jit(lambda x, s: (x * 2, s + 1), donate_argnums=(0, 1))
    out, s = f(n, 3.0)
    np.testing.assert_array_equal(n, [1.0, 2.0])
    assert n.flags.writeable
    assert not np.shares_memory(np.asarray(out), n)
    assert float(s) == 4.0
    passed = ri.jit(lambda x: x, donate_argnums=0)(n)  # pass-through: still a copy
    assert not np.shares_memory(np.asarray(passed), n)
    n[0] = 7.0
    assert np.asarray(passed)[0] == 1.0


def test_donated_array_that_is_also_a_closed_over_constant():
    c = arr([1.0, 2.0])
    f = ri.jit(lambda x: x + c, donate_argnums=0)
    out = f(c)  # c is the argument and a constant of the program
    assert c.is_deleted()
    np.testing.assert_array_equal(np.asarray(out), [2.0, 4.0])
    again = f(arr([0.0, 0.0]))  # the program's constant was not overwritten
    np.testing.assert_array_equal(np.asarray(again), [1.0, 2.0])


# --- errors delete nothing ----------------------------------------------------------


def test_same_array_twice_with_a_donated_position_is_a_value_error():
    x = arr([1.0, 2.0])
    for donate in (0, 1, (0, 1)):
        f = ri.jit(add, donate_argnums=donate)
        with pytest.raises(ValueError, match="same array"):
            f(x, x)
        assert f.trace_count == 0  # raised before tracing
    with pytest.raises(ValueError, match="same array"):
        ri.jit(lambda t: t[0] + t[1], donate_argnums=0)((x, x))
    assert not x.is_deleted()
    np.testing.assert_array_equal(np.asarray(ri.jit(add)(x, x)), [2.0, 4.0])  # not donated: fine


def test_error_while_tracing_deletes_nothing():
    def broken(x, y):
        raise ZeroDivisionError("injected failure")

    x, y = arr([1.0]), arr([2.0])
    with pytest.raises(ZeroDivisionError):
        ri.jit(broken, donate_argnums=(0, 1))(x, y)
    assert not x.is_deleted() and not y.is_deleted()


def test_shape_error_deletes_nothing():
    x, y = arr([1.0, 2.0, 3.0]), arr([1.0, 2.0, 3.0, 4.0])
    with pytest.raises(TypeError):
        ri.jit(lambda a, b: a + b, donate_argnums=(0, 1))(x, y)
    assert not x.is_deleted() and not y.is_deleted()
    np.testing.assert_array_equal(np.asarray(x), [1.0, 2.0, 3.0])


def test_incompatible_devices_delete_nothing():
    ri.config.update("ref_num_devices", 2)
    d0, d1 = ri.devices()
    x, y = ri.device_put(arr([1.0]), d0), ri.device_put(arr([2.0]), d1)
    with pytest.raises(ValueError, match="incompatible devices"):
        ri.jit(lambda a, b: (a + b, a - b), donate_argnums=(0, 1))(x, y)
    assert not x.is_deleted() and not y.is_deleted()


def failing_primitive() -> Primitive:
    """An identity primitive whose impl fails: a stand-in for a runtime error."""
    prim = Primitive("fails_at_runtime")
    prim.def_abstract_eval(lambda x: x)

    def impl(x):
        raise FloatingPointError("injected runtime failure")

    prim.def_impl(impl)
    return prim


def test_runtime_error_before_any_buffer_is_reused_deletes_nothing():
    fails = failing_primitive()
    x = arr([1.0, 2.0])
    f = ri.jit(lambda x: fails.bind(x * 2), donate_argnums=0)
    with pytest.raises(FloatingPointError):
        f(x)
    assert not x.is_deleted()
    np.testing.assert_array_equal(np.asarray(x), [1.0, 2.0])


def test_runtime_error_after_a_buffer_was_reused_deletes_only_that_input():
    # Reference-interpreter specific: x's buffer already holds x * 2 when the
    # second equation fails, so x is deleted (its value is gone); y is intact.
    fails = failing_primitive()
    x, y = arr([1.0, 2.0]), arr([3.0])
    f = ri.jit(lambda x, y: (x * 2, fails.bind(y)), donate_argnums=(0, 1))
    with pytest.raises(FloatingPointError):
        f(x, y)
    assert x.is_deleted()
    with pytest.raises(RuntimeError, match="donated"):
        np.asarray(x)
    assert not y.is_deleted()
    np.testing.assert_array_equal(np.asarray(y), [3.0])


# --- nested jit ---------------------------------------------------------------------


def test_donation_of_an_inner_jit_is_ignored_under_an_outer_trace():
    inner = ri.jit(lambda y: y * 2, donate_argnums=0)
    outer = ri.jit(lambda x: inner(x) + 1)
    x = arr([1.0, 2.0])
    with no_warnings():
        out = outer(x)
    assert not x.is_deleted()
    np.testing.assert_array_equal(np.asarray(out), [3.0, 5.0])
    z = arr([1.0])
    inner(z)  # called at top level, the same function donates
    assert z.is_deleted()


def test_outer_donation_with_an_inner_jit():
    inner = ri.jit(lambda y: y * 2)
    outer = ri.jit(lambda x: inner(x) + 1, donate_argnums=0)
    x = arr([1.0, 2.0])
    before = ptr(x)
    out = outer(x)
    assert x.is_deleted() and ptr(out) == before
    np.testing.assert_array_equal(np.asarray(out), [3.0, 5.0])


def test_inner_pass_through_of_its_constant_is_copied():
    c = arr([1.0, 2.0])
    inner = ri.jit(lambda: c)
    outer = ri.jit(lambda x: (inner(), x * 1.0), donate_argnums=0)
    got, _ = outer(arr([0.0, 0.0]))
    assert not np.shares_memory(np.asarray(got), np.asarray(c))


# --- a random donation pattern against an independent model ---------------------------

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


@settings(max_examples=40, deadline=None)
@given(
    in_kinds=st.lists(st.integers(0, len(TYPES) - 1), min_size=1, max_size=4),
    out_picks=st.lists(st.tuples(st.integers(0, 3), st.booleans()), min_size=1, max_size=5),
    donate_mask=st.lists(st.booleans(), min_size=4, max_size=4),
)
def test_random_donation_patterns(in_kinds, out_picks, donate_mask):
    in_types = [TYPES[k] for k in in_kinds]
    n = len(in_types)
    picks = [(p % n, transform) for p, transform in out_picks]
    donate = tuple(i for i in range(n) if donate_mask[i])
    values = [
        np.arange(np.prod(s, dtype=int) or 1).reshape(s).astype(d) + i
        for i, (s, d) in enumerate(in_types)
    ]

    def f(*xs):  # outputs: an input as is, or the input plus one
        return [xs[p] + 1 if transform else xs[p] for p, transform in picks]

    expected = [values[p] + 1 if transform else values[p] for p, transform in picks]
    out_types = [in_types[p] for p, _ in picks]
    args = [ri.device_put(v) for v in values]
    pointers = [ptr(a) for a in args]
    jitted = ri.jit(f, donate_argnums=donate)
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
    live = [np.asarray(o) for o in outs] + [np.asarray(a) for a in args if not a.is_deleted()]
    for k, first in enumerate(live):
        assert not any(np.shares_memory(first, other) for other in live[k + 1 :])


# --- memory: one copy of the state ---------------------------------------------------------


def sgd_step(state):
    return {k: v - lax.sin(v) * 0.01 for k, v in state.items()}


def peak_over_steps(jitted, steps=3):
    gc.collect()
    tracemalloc.start()
    try:
        state = {f"p{i}": arr(np.ones((128, 256))) for i in range(8)}  # 8 x 128 KB
        state = jitted(state)
        tracemalloc.reset_peak()
        for _ in range(steps):
            state = jitted(state)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak / sum(v.size * 4 for v in state.values())


def test_donated_training_loop_holds_about_one_copy_of_the_state():
    donating = peak_over_steps(ri.jit(sgd_step, donate_argnums=0))
    plain = peak_over_steps(ri.jit(sgd_step))
    assert donating < 1.5  # the state plus a few leaf-sized temporaries
    assert plain > 1.9  # old and new state at once


# --- the single-use PRNG key example ------------------------------------------------------


def load_example():
    spec = importlib.util.spec_from_file_location(
        "single_use_keys", ROOT / "examples" / "single_use_keys.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def lowbias32(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.uint64)
    mask = np.uint64(0xFFFFFFFF)
    x ^= x >> np.uint64(16)
    x = (x * np.uint64(0x7FEB352D)) & mask
    x ^= x >> np.uint64(15)
    x = (x * np.uint64(0x846CA68B)) & mask
    x ^= x >> np.uint64(16)
    return x.astype(np.uint32)


def test_single_use_key_example():
    example = load_example()
    key = example.make_key(7)
    words = np.asarray(key).copy()
    key_ptr = ptr(key)
    new_key, bits = example.next_bits(key)
    np.testing.assert_array_equal(np.asarray(bits), lowbias32(words))
    np.testing.assert_array_equal(np.asarray(new_key), lowbias32(words ^ np.uint32(0x9E3779B9)))
    assert ptr(new_key) == key_ptr  # the new key lives in the old key's buffer
    with pytest.raises(RuntimeError) as excinfo:
        example.next_bits(key)  # a second use of the same key
    assert_donated_error(excinfo, "next_bits")


def test_single_use_key_example_runs(capsys):
    load_example().main()
    assert "reusing a key: Array has been deleted" in capsys.readouterr().out
