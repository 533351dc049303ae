"""Adversarial tests of the jit boundary: random pytrees, hostile
static arguments, deletions from callbacks and threads, on both backends.

Every Python hook the call boundary runs (a static argument's ``__hash__``
and ``__eq__``, a pytree node's ``flatten``/``unflatten``, another thread)
may misbehave: raise, answer nonsense, or delete an input array. Whatever it
does, a call must end in exactly one of two ways:

* the right values (checked against NumPy), or
* an exception that says what happened (the hook's own error, the
  deleted-array ``RuntimeError``, a ``TypeError``/``ValueError`` naming the
  problem), after which every input the hook did not delete is alive and
  unchanged.

Never a crash, a wrong value or a lost input. The default suite runs a small
example budget per test; ``-m slow`` runs 2,000 examples each.
"""

from __future__ import annotations

import collections
import threading
import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import refimpl as ri
from refimpl import tree_util
from tests.helpers.pjrt_helpers import skip_without_pjrt

BACKENDS = ["ref", "pjrt"]
FAST, SLOW = 12, 2000


def budget(examples: int):
    return settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )


# The small strategies above have fewer distinct examples than the budget, and
# Hypothesis stops when it has tried them all; this extra draw (unused) makes
# it repeat them, which is the point for races and callbacks.
ATTEMPTS = st.integers(0, 10**9)

BUDGETS = [pytest.param(FAST, id="fast"), pytest.param(SLOW, id="slow", marks=pytest.mark.slow)]


def device_of(backend: str) -> Any:
    if backend == "pjrt":
        skip_without_pjrt()
        return ri.devices("pjrt")[0]
    return ri.devices("ref")[0]


class HostileError(Exception):
    """What a hostile hook raises."""


# --- random pytrees --------------------------------------------------------------------------

Point = collections.namedtuple("Point", ["x", "y"])


class Box:
    """A registered node with auxiliary data (a label that must survive)."""

    def __init__(self, label: str, children: tuple) -> None:
        self.label = label
        self.children = children

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Box) and (self.label, self.children) == (
            other.label,
            other.children,
        )


tree_util.register_pytree_node(
    Box, lambda b: (b.children, b.label), lambda label, kids: Box(label, tuple(kids))
)

DTYPES = [np.float32, np.int32, np.bool_]


@st.composite
def leaf_specs(draw):
    """(kind, numpy value): kind in numpy / device / scalar."""
    dtype = draw(st.sampled_from(DTYPES))
    shape = tuple(draw(st.lists(st.integers(0, 3), max_size=3)))
    size = int(np.prod(shape, dtype=np.int64))
    values = draw(st.lists(st.integers(-50, 50), min_size=size, max_size=size))
    value = np.asarray(values, dtype=np.int64).reshape(shape).astype(dtype)
    kind = draw(st.sampled_from(["numpy", "device", "device", "scalar"]))
    if kind == "scalar":
        value = np.asarray(draw(st.integers(-50, 50)), np.int32)
    return kind, value


def trees(leaves):
    return st.recursive(
        leaves,
        lambda kids: st.one_of(
            st.tuples(kids, kids),
            st.lists(kids, max_size=3),
            st.dictionaries(st.sampled_from("abcd"), kids, max_size=3),
            st.builds(Point, kids, kids),
            st.builds(Box, st.sampled_from(["p", "q"]), st.tuples(kids, kids)),
            st.just(None),
        ),
        max_leaves=8,
    )


def materialize(spec_tree: Any, device: Any) -> Any:
    """Spec leaves -> the call's arguments (device arrays are fresh each time)."""

    def make(spec):
        kind, value = spec
        if kind == "numpy":
            return value.copy()
        if kind == "scalar":
            return int(value)
        return ri.device_put(value, device)

    return tree_util.tree_map(make, spec_tree, is_leaf=_is_spec)


def _is_spec(x: Any) -> bool:
    return isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], str)


def step(x: Any) -> Any:
    """The jitted function's leafwise operation."""
    return ri.numpy.logical_not(x) if x.dtype == np.bool_ else x * 3 - 1


def expected(spec_tree: Any) -> Any:
    def want(spec):
        kind, value = spec
        if value.dtype == np.bool_:
            return np.logical_not(value)
        return value * 3 - 1

    return tree_util.tree_map(want, spec_tree, is_leaf=_is_spec)


def assert_tree_equal(got: Any, want: Any) -> None:
    got_leaves, got_tree = tree_util.tree_flatten(got)
    want_leaves, want_tree = tree_util.tree_flatten(want)
    assert got_tree == want_tree
    for g, w in zip(got_leaves, want_leaves, strict=True):
        np.testing.assert_array_equal(np.asarray(g), w)
        assert np.asarray(g).shape == np.shape(w)


@pytest.mark.parametrize("examples", BUDGETS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_random_pytrees_round_trip(backend, examples):
    device = device_of(backend)
    f = ri.jit(lambda t: tree_util.tree_map(step, t), backend=backend)

    @budget(examples)
    @given(trees(leaf_specs()))
    def check(spec_tree):
        for _ in range(2):  # a miss, then a hit of the same signature
            assert_tree_equal(f(materialize(spec_tree, device)), expected(spec_tree))

    check()


@pytest.mark.parametrize("examples", BUDGETS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_random_pytrees_with_donation_delete_exactly_the_donated_arrays(backend, examples):
    device = device_of(backend)
    f = ri.jit(lambda t, u: tree_util.tree_map(step, t), donate_argnums=0, backend=backend)

    @budget(examples)
    @given(trees(leaf_specs()))
    def check(spec_tree):
        args = materialize(spec_tree, device)
        kept = ri.device_put(np.arange(3, dtype=np.float32), device)
        leaves = tree_util.tree_leaves(args)
        arrays = [leaf for leaf in leaves if isinstance(leaf, ri.Array)]
        if len({id(a) for a in arrays}) != len(arrays):
            return
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "not usable" donations are legitimate here
            out = f(args, kept)
        assert_tree_equal(out, expected(spec_tree))
        assert all(a.is_deleted() for a in arrays)
        assert not kept.is_deleted()
        for leaf in leaves:  # NumPy arrays and scalars in a donated position are untouched
            if isinstance(leaf, np.ndarray):
                assert leaf.flags.writeable

    check()


# --- hostile static arguments ------------------------------------------------------------------

BEHAVIOURS = ["normal", "raise", "delete", "delete-later", "non-bool", "never-equal"]


class Hostile:
    """A static argument whose ``__hash__``/``__eq__`` misbehave as told.

    ``delete`` deletes the victim array the first time it runs;
    ``delete-later`` from the second call on (after the entry is cached).
    """

    def __init__(self, hash_does: str, eq_does: str, victim: Any, value: int) -> None:
        self.hash_does, self.eq_does = hash_does, eq_does
        self.victim = victim
        self.value = value
        self.runs = 0

    def _misbehave(self, does: str) -> None:
        self.runs += 1
        if does == "raise":
            raise HostileError(does)
        if does == "delete" or (does == "delete-later" and self.runs > 1):
            self.victim.delete()

    def __hash__(self) -> int:
        self._misbehave(self.hash_does)
        return hash(self.value)

    def __eq__(self, other: object) -> Any:
        self._misbehave(self.eq_does)
        if self.eq_does == "non-bool":
            return np.array([True, False])
        if self.eq_does == "never-equal":
            return False
        return isinstance(other, Hostile) and other.value == self.value


def allowed(error: BaseException) -> bool:
    message = str(error)
    return (
        isinstance(error, HostileError)
        or (isinstance(error, RuntimeError) and "has been deleted" in message)
        or isinstance(error, (TypeError, ValueError))
    )


@pytest.mark.parametrize("examples", BUDGETS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_hostile_static_arguments(backend, examples):
    device = device_of(backend)
    f = ri.jit(lambda x, y, h: x * h.value + y, static_argnums=2, backend=backend)

    @budget(examples)
    @given(
        st.sampled_from(BEHAVIOURS),
        st.sampled_from(BEHAVIOURS),
        st.sampled_from(["x", "y", "none"]),
        st.integers(1, 3),
        st.integers(1, 3),
        ATTEMPTS,
    )
    def check(hash_does, eq_does, victim_name, value, calls, _attempt):
        x = ri.device_put(np.arange(4, dtype=np.float32), device)
        y = ri.device_put(np.ones(4, np.float32), device)
        bystander = ri.device_put(np.full(4, 7.0, np.float32), device)
        victim = {"x": x, "y": y, "none": bystander}[victim_name]
        for _ in range(calls):
            try:
                out = f(x, y, Hostile(hash_does, eq_does, victim, value))
            except Exception as error:  # noqa: BLE001 - the test is what is allowed
                assert allowed(error), repr(error)
            else:
                assert not x.is_deleted() and not y.is_deleted()
                np.testing.assert_array_equal(np.asarray(out), np.arange(4) * value + 1)
        for array, want in ((x, np.arange(4)), (y, np.ones(4)), (bystander, np.full(4, 7.0))):
            if array is victim and array.is_deleted():
                with pytest.raises(RuntimeError, match="has been deleted"):
                    np.asarray(array)
            else:
                assert not array.is_deleted()
                np.testing.assert_array_equal(np.asarray(array), want)

    check()


# --- deletions from pytree callbacks -------------------------------------------------------------


class Trap:
    """A node whose flatten (or the output's unflatten) runs a hook."""

    hook: Any = None

    def __init__(self, value: Any) -> None:
        self.value = value


def _trap_flatten(node: Trap):
    if Trap.hook is not None:
        Trap.hook("flatten")
    return (node.value,), None


def _trap_unflatten(data: Any, children: tuple) -> Trap:
    if Trap.hook is not None:
        Trap.hook("unflatten")
    return Trap(children[0])


tree_util.register_pytree_node(Trap, _trap_flatten, _trap_unflatten)


@pytest.mark.parametrize("examples", BUDGETS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_callbacks_that_delete_or_raise(backend, examples):
    device = device_of(backend)

    @budget(examples)
    @given(
        st.sampled_from(["flatten", "unflatten"]),
        st.sampled_from(["delete-input", "delete-other", "raise"]),
        st.integers(0, 3),
        st.booleans(),
        ATTEMPTS,
    )
    def check(where, action, on_run, donate, _attempt):
        f = ri.jit(
            lambda t, y: Trap(t.value * 2 + y),
            donate_argnums=(0,) if donate else (),
            backend=backend,
        )
        x = ri.device_put(np.arange(3, dtype=np.float32), device)
        y = ri.device_put(np.ones(3, np.float32), device)
        other = ri.device_put(np.zeros(3, np.float32), device)
        runs = collections.Counter()

        def hook(phase):
            runs[phase] += 1
            if phase != where or runs[phase] != on_run + 1:
                return
            if action == "raise":
                raise HostileError(phase)
            (x if action == "delete-input" else other).delete()

        Trap.hook = hook
        try:
            out = f(Trap(x), y)
        except Exception as error:  # noqa: BLE001
            assert allowed(error), repr(error)
            failed = True
        else:
            failed = False
            np.testing.assert_array_equal(np.asarray(out.value), np.arange(3) * 2 + 1)
        finally:
            Trap.hook = None
        deleted_by_hook = action == "delete-input" and runs[where] > on_run
        if failed and not deleted_by_hook:
            assert not x.is_deleted(), "a failed call deleted its input"
        if not x.is_deleted():
            np.testing.assert_array_equal(np.asarray(x), np.arange(3))
        assert not y.is_deleted()
        np.testing.assert_array_equal(np.asarray(y), np.ones(3))

    check()


# --- threads --------------------------------------------------------------------------------------


@pytest.mark.parametrize("examples", BUDGETS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_thread_deletes_the_input_during_calls(backend, examples):
    device = device_of(backend)

    @budget(max(examples // 10, 3))
    @given(st.integers(0, 30), st.booleans(), st.booleans(), ATTEMPTS)
    def check(delay, donate, first_call, _attempt):
        # first_call: the deletion races the compiling call (a fresh function).
        f = ri.jit(lambda x: x + 1, donate_argnums=0 if donate else (), backend=backend)
        if not first_call:
            f(ri.device_put(np.zeros(256, np.float32), device))
        x = ri.device_put(np.arange(256, dtype=np.float32), device)
        start = threading.Barrier(2)

        def deleter():
            start.wait()
            for _ in range(delay):
                pass
            x.delete()

        thread = threading.Thread(target=deleter)
        thread.start()
        start.wait()
        try:
            out = f(x)
        except RuntimeError as error:
            assert "has been deleted" in str(error), repr(error)
        else:
            np.testing.assert_array_equal(np.asarray(out), np.arange(256) + 1)
        thread.join()
        assert x.is_deleted()

    check()


@pytest.mark.parametrize("examples", BUDGETS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_read_racing_a_donation_sees_the_value_or_the_deleted_error(backend, examples):
    device = device_of(backend)
    g = ri.jit(lambda x: x * 2, donate_argnums=0, backend=backend)
    g(ri.device_put(np.zeros(512, np.float32), device))

    @budget(max(examples // 10, 3))
    @given(st.integers(1, 20), ATTEMPTS)
    def check(reads, _attempt):
        a = ri.device_put(np.arange(512, dtype=np.float32), device)
        start = threading.Barrier(2)
        seen = []

        def reader():
            start.wait()
            for _ in range(reads):
                try:
                    seen.append(np.asarray(a).copy())
                except RuntimeError as error:
                    assert "has been deleted" in str(error), repr(error)
                    return
                except Exception as error:  # noqa: BLE001
                    seen.append(error)
                    return

        thread = threading.Thread(target=reader)
        thread.start()
        start.wait()
        out = g(a)
        thread.join()
        np.testing.assert_array_equal(np.asarray(out), np.arange(512) * 2)
        for value in seen:
            assert isinstance(value, np.ndarray), repr(value)
            np.testing.assert_array_equal(value, np.arange(512))

    check()


# --- pmap: sharded inputs, donation, deletion from threads and callbacks --------------------


@pytest.fixture
def four_ref_devices():
    old = ri.config.ref_num_devices
    ri.config.update("ref_num_devices", 4)
    yield
    ri.config.update("ref_num_devices", old)


def sharded_input(backend: str, width: int) -> Any:
    """A pmap output over 4 devices: [[0..width), [width..2 width), ...]."""
    if backend == "pjrt":
        skip_without_pjrt()
    make = ri.pmap(lambda x: x * 1.0, backend=backend)
    return make(np.arange(4 * width, dtype=np.float32).reshape(4, width))


@pytest.mark.parametrize("examples", BUDGETS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_pmap_of_sharded_inputs_with_donation_and_repeats(backend, examples, four_ref_devices):
    @budget(examples)
    @given(st.integers(1, 5), st.booleans(), st.sampled_from(["two", "repeat", "shard"]), ATTEMPTS)
    def check(width, donate, how, _attempt):
        a = sharded_input(backend, width)
        want = np.arange(4 * width, dtype=np.float32).reshape(4, width)
        f = ri.pmap(lambda x, y: x + y, donate_argnums=0 if donate else (), backend=backend)
        if how == "two":
            other = sharded_input(backend, width)
        elif how == "repeat":
            other = a
        else:  # a shard of a is the same storage as a
            other = a.addressable_shards[0].data
            if donate:
                with pytest.raises(ValueError):
                    ri.device_put((a, other), donate=True)
                assert not a.is_deleted() and not other.is_deleted()
            other = sharded_input(backend, width)
        try:
            out = f(a, other)
        except ValueError as error:
            assert donate and how == "repeat", repr(error)
            assert "the same array" in str(error)
            assert not a.is_deleted()
            np.testing.assert_array_equal(np.asarray(a), want)
            return
        np.testing.assert_array_equal(np.asarray(out), 2 * want)
        assert a.is_deleted() == donate
        if not donate:
            np.testing.assert_array_equal(np.asarray(a), want)

    check()


@pytest.mark.parametrize("examples", BUDGETS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_thread_deletes_a_sharded_input_during_pmap_calls(backend, examples, four_ref_devices):
    @budget(max(examples // 10, 3))
    @given(st.integers(0, 30), st.booleans(), ATTEMPTS)
    def check(delay, donate, _attempt):
        f = ri.pmap(lambda x: x + 1, donate_argnums=0 if donate else (), backend=backend)
        a = sharded_input(backend, 256)
        start = threading.Barrier(2)

        def deleter():
            start.wait()
            for _ in range(delay):
                pass
            a.delete()

        thread = threading.Thread(target=deleter)
        thread.start()
        start.wait()
        try:
            out = f(a)
        except RuntimeError as error:
            assert "has been deleted" in str(error), repr(error)
        else:
            want = np.arange(1024, dtype=np.float32).reshape(4, 256) + 1
            np.testing.assert_array_equal(np.asarray(out), want)
        thread.join()
        assert a.is_deleted()

    check()


@pytest.mark.parametrize("examples", BUDGETS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_host_callbacks_that_delete_or_raise_under_jit_and_pmap(
    backend, examples, four_ref_devices
):
    device = device_of(backend)

    @budget(examples)
    @given(st.sampled_from(["return", "raise", "delete-other", "wrong-shape"]), st.booleans())
    def check(does, use_pmap):
        victim = ri.device_put(np.arange(3, dtype=np.float32), device)
        kept = ri.device_put(np.ones(3, np.float32), device)

        def callback(x):
            if does == "raise":
                raise HostileError("callback")
            if does == "delete-other":
                victim.delete()
            if does == "wrong-shape":
                return np.zeros(7, np.float32)
            return np.asarray(x) * 2

        spec = ri.ShapeDtypeStruct((3,), np.float32)
        body = lambda x: ri.pure_callback(callback, spec, x) + 1  # noqa: E731
        if use_pmap:
            f = ri.pmap(body, backend=backend)
            arg = np.ones((4, 3), np.float32)
        else:
            f = ri.jit(body, backend=backend)
            arg = kept
        try:
            out = f(arg)
        except Exception as error:  # noqa: BLE001 -- checked below
            assert does in ("raise", "wrong-shape"), repr(error)
            assert isinstance(error, (HostileError, RuntimeError, TypeError, ValueError))
        else:
            assert does in ("return", "delete-other")
            np.testing.assert_array_equal(np.asarray(out), np.asarray(arg) * 2 + 1)
        assert victim.is_deleted() == (does == "delete-other")
        np.testing.assert_array_equal(np.asarray(kept), np.ones(3))

    check()


# --- refs: updates from threads, jit calls with refs ----------------------------------------


@pytest.mark.parametrize("examples", BUDGETS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_ref_updates_from_threads_are_never_lost(backend, examples):
    if backend == "pjrt":
        skip_without_pjrt()

    @budget(max(examples // 20, 3))
    @given(st.integers(1, 4), st.integers(1, 30), st.booleans(), ATTEMPTS)
    def check(threads, calls, closed, _attempt):
        r = ri.new_ref(np.zeros(2, np.float32))
        if closed:
            inc = ri.jit(lambda: r.__setitem__(Ellipsis, r[...] + 1.0), backend=backend)
            step = inc
        else:
            inc = ri.jit(lambda r: r.__setitem__(Ellipsis, r[...] + 1.0), backend=backend)
            step = lambda: inc(r)  # noqa: E731
        errors: list[BaseException] = []

        def work():
            for _ in range(calls):
                try:
                    step()
                except BaseException as error:  # noqa: BLE001
                    errors.append(error)

        workers = [threading.Thread(target=work) for _ in range(threads)]
        for t in workers:
            t.start()
        for t in workers:
            t.join()
        assert errors == []
        np.testing.assert_array_equal(np.asarray(r[...]), [threads * calls] * 2)

    check()
