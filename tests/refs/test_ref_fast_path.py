"""Ref arguments on the C++ fast path: a call whose arguments
include Refs holding PJRT arrays is a C++ hit that runs no Python code, each
ref's buffer is aliased input-to-output and written back in place (its
``unsafe_buffer_pointer()`` never changes), and a failed call leaves every
Ref holding its old, live buffer. Values against ``jax.new_ref``."""

from __future__ import annotations

import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp

pytest.importorskip("refimpl._pjrt")


@pytest.fixture(autouse=True)
def _pjrt():
    ri.config.update("backend", "pjrt")  # conftest restores the config


def _counts(fast) -> tuple[int, int, int]:
    stats = fast._fast_stats()
    return stats["hits"], stats["misses"], stats["slow"]


def _delta(fast, before) -> tuple[int, int, int]:
    return tuple(a - b for a, b in zip(_counts(fast), before, strict=True))


def _step(r_w, r_b, x):
    r_w[...] = r_w[...] * 0.5 + x
    r_b[...] += x.sum()
    return x * 2, {"n": r_b[...]}


def test_ref_calls_are_cpp_hits_with_values_of_jax():
    init_w, init_b = np.arange(4, dtype=np.float32), np.float32(1)
    x = np.linspace(0, 1, 4, dtype=np.float32)
    ours = ri.jit(_step, backend="pjrt")
    theirs = jax.jit(_step)
    w, b, xd = ri.new_ref(init_w), ri.new_ref(init_b), ri.device_put(x)
    jw, jb = jax.new_ref(init_w), jax.new_ref(init_b)
    ours(w, b, xd)  # compiles
    theirs(jw, jb, x)
    before = _counts(ours)
    for _ in range(5):
        out, aux = ours(w, b, xd)
        jout, jaux = theirs(jw, jb, x)
        np.testing.assert_allclose(np.asarray(out), np.asarray(jout))
        np.testing.assert_allclose(np.asarray(aux["n"]), np.asarray(jaux["n"]), rtol=1e-6)
        np.testing.assert_allclose(np.asarray(w[...]), np.asarray(jw[...]), rtol=1e-6)
        np.testing.assert_allclose(np.asarray(b[...]), np.asarray(jb[...]), rtol=1e-6)
    assert _delta(ours, before) == (5, 0, 0)
    assert ours.trace_count == 1


def test_a_hit_runs_no_python_code():
    step = ri.jit(_step, backend="pjrt")
    w, b = ri.new_ref(np.zeros(4, np.float32)), ri.new_ref(np.float32(0))
    x = ri.device_put(np.ones(4, np.float32))
    step(w, b, x)
    calls = []

    def profile(frame, event, arg):
        if event in ("call", "c_call") and frame.f_code.co_name != "test_a_hit_runs_no_python_code":
            calls.append((frame.f_code.co_filename, frame.f_code.co_name, event))

    before = _counts(step)
    sys.setprofile(profile)
    try:
        step(w, b, x)
    finally:
        sys.setprofile(None)
    assert _delta(step, before) == (1, 0, 0)
    assert calls == []


def test_keyword_and_pytree_refs_hit():
    def f(state, *, scale):
        state["a"][...] = state["a"][...] * scale
        state["b"][0] += scale.sum()

    ours = ri.jit(f, backend="pjrt")
    a, b = ri.new_ref(np.ones(3, np.float32)), ri.new_ref(np.zeros(2, np.float32))
    ja, jb = jax.new_ref(np.ones(3, np.float32)), jax.new_ref(np.zeros(2, np.float32))
    scale = np.full(3, 2.0, np.float32)
    ours({"a": a, "b": b}, scale=scale)
    jax.jit(f)({"a": ja, "b": jb}, scale=scale)
    before = _counts(ours)
    for _ in range(3):
        assert ours({"a": a, "b": b}, scale=scale) is None
        jax.jit(f)({"a": ja, "b": jb}, scale=scale)
    assert _delta(ours, before) == (3, 0, 0)
    np.testing.assert_array_equal(np.asarray(a[...]), np.asarray(ja[...]))
    np.testing.assert_array_equal(np.asarray(b[...]), np.asarray(jb[...]))


def test_pointers_stable_over_1000_steps_and_values_of_jax():
    def sgd(w_ref, x):
        g = w_ref[...] - x
        w_ref[...] = w_ref[...] - 0.01 * g

    init = np.linspace(-1, 1, 64, dtype=np.float32).reshape(8, 8)
    x = np.full((8, 8), 0.5, np.float32)
    ours, theirs = ri.jit(sgd, backend="pjrt"), jax.jit(sgd)
    w, jw, xd = ri.new_ref(init), jax.new_ref(init), ri.device_put(x)
    pointer = w.unsafe_buffer_pointer()
    before = _counts(ours)
    for _ in range(1000):
        ours(w, xd)
        theirs(jw, x)
        assert w.unsafe_buffer_pointer() == pointer
    assert _delta(ours, before) == (1000, 1, 0)  # one compile (its run counts as a hit too)
    np.testing.assert_allclose(np.asarray(w[...]), np.asarray(jw[...]), rtol=1e-5, atol=1e-6)


def _holds(ref, value, pointer):
    assert not ref._value.is_deleted()
    assert ref.unsafe_buffer_pointer() == pointer
    np.testing.assert_array_equal(np.asarray(ref[...]), value)


def test_wrong_shape_written_leaves_refs_intact():
    def bad(r, s, n, np_mod=rnp):
        r[...] = r[...] + 1
        s[...] = np_mod.zeros(n, np.float32)

    r, s = ri.new_ref(np.zeros(3, np.float32)), ri.new_ref(np.zeros(3, np.float32))
    pointers = r.unsafe_buffer_pointer(), s.unsafe_buffer_pointer()
    f = ri.jit(bad, backend="pjrt", static_argnums=2)
    with pytest.raises(ValueError, match="Invalid shape for `swap`"):
        f(r, s, 4)
    with pytest.raises(ValueError, match="Invalid shape for `swap`"):
        jax.jit(bad, static_argnums=(2, 3))(
            jax.new_ref(np.zeros(3, np.float32)), jax.new_ref(np.zeros(3, np.float32)), 4, jnp
        )
    _holds(r, np.zeros(3), pointers[0])
    _holds(s, np.zeros(3), pointers[1])
    f(r, s, 3)  # the same refs still work, in place
    _holds(r, np.ones(3), pointers[0])


def test_deleted_argument_on_a_compiled_signature_leaves_refs_intact():
    f = ri.jit(lambda r, x: r.__setitem__(..., r[...] + x), backend="pjrt")
    r = ri.new_ref(np.zeros(3, np.float32))
    pointer = r.unsafe_buffer_pointer()
    x = ri.device_put(np.ones(3, np.float32))
    f(r, x)
    x.delete()
    with pytest.raises(RuntimeError, match="deleted"):
        f(r, x)
    _holds(r, np.ones(3), pointer)


class _Deleter:
    """A static argument whose __hash__ (run by the C++ signature, after the
    Refs were flattened) deletes an argument or swaps a ref's value."""

    def __init__(self, action):
        self.action = action

    def __hash__(self):
        self.action()
        return 0

    def __eq__(self, other):
        return isinstance(other, _Deleter)


def test_argument_deleted_while_the_signature_is_built_leaves_refs_intact():
    f = ri.jit(lambda r, x, d: r.__setitem__(..., r[...] + x), backend="pjrt", static_argnums=2)
    r = ri.new_ref(np.zeros(3, np.float32))
    pointer = r.unsafe_buffer_pointer()
    x = ri.device_put(np.ones(3, np.float32))
    f(r, x, _Deleter(lambda: None))
    with pytest.raises(RuntimeError, match="deleted"):
        f(r, x, _Deleter(x.delete))
    _holds(r, np.ones(3), pointer)


def test_ref_changed_while_the_signature_is_built_runs_on_its_new_value():
    """Python code that runs after the Ref was read (here a static's __hash__)
    may give it a new array: the call then uses that one (the Python path)."""
    f = ri.jit(lambda r, d: r.__setitem__(..., r[...] * 2), backend="pjrt", static_argnums=1)
    r = ri.new_ref(np.ones(3, np.float32))
    f(r, _Deleter(lambda: None))  # r holds 2
    replacement = ri.new_ref(np.full(3, 5.0, np.float32))

    def swap():
        r._value = replacement._value  # the ref now holds another array of the same type

    before = _counts(f)
    f(r, _Deleter(swap))
    assert _delta(f, before)[2] == 1  # went to the Python path
    np.testing.assert_array_equal(np.asarray(r[...]), np.full(3, 10.0))
    assert not r._value.is_deleted()


def test_one_ref_twice_or_passed_and_closed_over_raise_on_a_compiled_signature():
    a, b = ri.new_ref(np.zeros(3, np.float32)), ri.new_ref(np.zeros(3, np.float32))
    pa, pb = a.unsafe_buffer_pointer(), b.unsafe_buffer_pointer()
    g = ri.jit(lambda r, s: r.__setitem__(..., s[...] + 1), backend="pjrt")
    g(a, b)
    with pytest.raises(ValueError, match="only one reference to a mutable array"):
        g(a, a)
    holder = [b]

    def h(r):
        _ = holder  # closes over b (unused)
        r[...] += 1

    fast = ri.jit(h, backend="pjrt")
    fast(a)  # traced with a: fine
    before = _counts(fast)
    fast(a)
    assert _delta(fast, before) == (1, 0, 0)  # the closure check does not cost a slow call
    with pytest.raises(ValueError, match="both closed over and passed"):
        fast(b)  # the same C++ signature: the closure check sends it to Python
    _holds(a, np.full(3, 3.0), pa)
    _holds(b, np.zeros(3), pb)


def test_a_ref_whose_array_is_also_an_argument_takes_the_python_path():
    """Donating the ref's buffer while also reading it is refused as for any
    donated array passed twice; nothing changes."""
    g = ri.jit(lambda r, v: r.__setitem__(..., r[...] + v), backend="pjrt")
    a = ri.new_ref(np.ones(3, np.float32))
    pointer = a.unsafe_buffer_pointer()
    g(a, ri.device_put(np.ones(3, np.float32)))
    with pytest.raises(ValueError, match="same array is passed"):
        g(a, a._value)
    _holds(a, np.full(3, 2.0), pointer)


def test_failing_unflatten_after_execute_leaves_refs_live():
    """A user node's unflatten runs after execute: the refs already hold
    their new values (on their own buffers), never a deleted array."""
    from refimpl import tree_util

    class Box:
        fail = False

        def __init__(self, v):
            self.v = v

    def unflatten(_, children):
        if Box.fail:
            raise RuntimeError("unflatten failed")
        return Box(children[0])

    tree_util.register_pytree_node(Box, lambda b: ((b.v,), None), unflatten)
    f = ri.jit(lambda r: (r.__setitem__(..., r[...] + 1), Box(r[...]))[1], backend="pjrt")
    r = ri.new_ref(np.zeros(2, np.float32))
    pointer = r.unsafe_buffer_pointer()
    f(r)
    Box.fail = True
    with pytest.raises(RuntimeError, match="unflatten failed"):
        f(r)
    _holds(r, np.full(2, 2.0), pointer)
    Box.fail = False
    np.testing.assert_array_equal(np.asarray(f(r).v), np.full(2, 3.0))


def test_threads_stepping_one_large_ref_run_one_after_another():
    """Refs above the GIL-release size: calls from three threads on one ref
    each run on the previous one's result (none donates a buffer another
    call already took), in place, as the same number of JAX steps."""
    import threading

    n = 384  # 384*384*4 bytes > the 256 KiB from which other calls release the GIL
    init = np.zeros((n, n), np.float32)

    def step(r):
        r[...] = r[...] + 1

    ours = ri.new_ref(init)
    f = ri.jit(step, backend="pjrt")
    f(ours)
    pointer = ours.unsafe_buffer_pointer()
    errors = []

    def run():
        try:
            for _ in range(20):
                f(ours)
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    jr = jax.new_ref(jnp.asarray(init))
    for _ in range(61):
        jax.jit(step)(jr)
    assert ours.unsafe_buffer_pointer() == pointer
    np.testing.assert_array_equal(np.asarray(ours[...]), np.asarray(jr[...]))


_GLOBAL_REF = None  # set by the test below: a module global the function names


def _names_a_global(r):
    _ = _GLOBAL_REF  # loads the global without touching it as a ref
    r[...] += 1


def test_ref_argument_that_is_also_a_named_global_is_sent_to_python():
    global _GLOBAL_REF
    a, b = ri.new_ref(np.zeros(3, np.float32)), ri.new_ref(np.zeros(3, np.float32))
    _GLOBAL_REF = b
    try:
        fast = ri.jit(_names_a_global, backend="pjrt")
        fast(a)
        before = _counts(fast)
        fast(a)
        assert _delta(fast, before) == (1, 0, 0)
        before = _counts(fast)
        try:  # the Python Jitted decides (JAX's "both closed over and passed")
            fast(b)
        except ValueError as error:
            assert "closed over" in str(error)
        assert _delta(fast, before)[2] == 1  # not run by C++
    finally:
        _GLOBAL_REF = None


def test_ref_inside_a_namedtuple_or_registered_node_in_the_closure_is_sent_to_python():
    import collections

    from refimpl import tree_util

    Pair = collections.namedtuple("Pair", "first second")

    class Holder:
        def __init__(self, ref):
            self.ref = ref

    tree_util.register_pytree_node(Holder, lambda h: ((h.ref,), None), lambda _, c: Holder(*c))
    a, b = ri.new_ref(np.zeros(3, np.float32)), ri.new_ref(np.zeros(3, np.float32))

    def make(held):
        def f(r):
            _ = held  # a closure cell holding b (unused)
            r[...] += 1

        return f

    for held in (Pair(1, b), [Holder(b)]):
        fast = ri.jit(make(held), backend="pjrt")
        fast(a)
        before = _counts(fast)
        with pytest.raises(ValueError, match="both closed over and passed"):
            fast(b)
        assert _delta(fast, before)[2] == 1
        np.testing.assert_array_equal(np.asarray(b[...]), np.zeros(3))
    # A registered node right in the cell: C++ cannot look inside, the Python
    # Jitted decides (every call).
    fast = ri.jit(make(Holder(b)), backend="pjrt")
    fast(a)
    before = _counts(fast)
    fast(a)
    assert _delta(fast, before) == (0, 0, 1)


def test_a_hit_updates_the_refs_held_array_in_place():
    """A C++ hit writes each ref's final value into the array object the ref
    holds (the same object, the same buffer): nothing is allocated for it and
    no array is marked donated."""
    f = ri.jit(lambda r, x: r.__setitem__(..., r[...] * 2 + x), backend="pjrt")
    r = ri.new_ref(np.ones(3, np.float32))
    x = ri.device_put(np.ones(3, np.float32))
    f(r, x)
    held, pointer = r._value, r.unsafe_buffer_pointer()
    before = _counts(f)
    for _ in range(3):
        f(r, x)
    assert _delta(f, before) == (3, 0, 0)
    assert r._value is held and not held.is_deleted()
    _holds(r, np.full(3, 31.0), pointer)


def test_an_array_written_into_a_ref_stays_the_callers():
    """``r[...] = x`` copies x, as in JAX: a jit updating the ref in place
    never changes or deletes the caller's x."""

    def run(new_ref, put, jit):
        r = new_ref(np.zeros(3, np.float32))
        x = put(np.ones(3, np.float32))
        r[...] = x
        f = jit(lambda r: r.__setitem__(..., r[...] + 1))
        f(r)
        f(r)
        return np.asarray(r[...]), np.asarray(x)

    ours = run(ri.new_ref, ri.device_put, lambda f: ri.jit(f, backend="pjrt"))
    theirs = run(jax.new_ref, jnp.asarray, jax.jit)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(a, b)
