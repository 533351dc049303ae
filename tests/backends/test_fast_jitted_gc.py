"""FastJitted (bindings/fast_jit.cc) owns its Python references through
py::object fields: reference cycles through it are collected, and making
and dropping many of them leaks no reference."""

from __future__ import annotations

import gc
import sys
import weakref

import numpy as np
import pytest

import refimpl as ri

_pjrt = pytest.importorskip("refimpl._pjrt")


def _collected(make) -> bool:
    """Whether every object ``make()`` returns weak references to is gone after a collection."""
    refs = make()
    gc.collect()
    return all(r() is None for r in refs)


def test_cycle_through_the_function_and_the_instance_dict_is_collected():
    def make():
        def f(x):
            return x + 1

        g = ri.jit(f, backend="pjrt")
        assert type(g) is _pjrt.FastJitted
        f.jitted = g  # g -> Jitted -> f -> f.__dict__ -> g
        g.note = g  # g -> g.__dict__ -> g
        g(np.ones(3, np.float32))
        return weakref.ref(g), weakref.ref(f)

    assert _collected(make)


def test_cycle_through_a_closure_is_collected():
    def make():
        def f(x):
            return x * 2 if g is not None else x  # g -> Jitted -> f -> its closure cell -> g

        g = ri.jit(f, backend="pjrt")
        g(np.ones(2, np.float32))
        return (weakref.ref(g),)

    assert _collected(make)


def test_cycle_through_a_cached_static_argument_is_collected():
    class Static:
        def __init__(self):
            self.owner = None

        def __hash__(self):
            return 1

        def __eq__(self, other):
            return isinstance(other, Static)

    class Step:  # a callable object with slots: hashable and weakly referenceable,
        # as jit requires (JAX 0.10.2's TypeError when called otherwise)
        __slots__ = ("__weakref__",)

        def __call__(self, x, s):
            return x + 1

    def make():
        static = Static()
        g = ri.jit(Step(), backend="pjrt", static_argnums=1)
        static.owner = g  # g's C++ cache entry holds static, static holds g
        g(np.ones(2, np.float32), static)
        assert g._fast_cache_size() == 1
        return weakref.ref(g), weakref.ref(static)

    assert _collected(make)


def test_making_and_dropping_fast_jitted_leaks_no_reference():
    name = "".join(["donated", "_name_for_refcounts"])  # a fresh string object
    name = sys.intern(name)

    def f(x, donated_name_for_refcounts=None):
        return x

    def make_some():
        for _ in range(50):
            g = ri.jit(f, backend="pjrt", donate_argnames=name)
            assert g._jitted.fun is f
            del g
        gc.collect()

    make_some()  # warm caches
    before = sys.getrefcount(name), sys.getrefcount(f)
    make_some()
    assert (sys.getrefcount(name), sys.getrefcount(f)) == before


def test_repr_and_jitted_attribute():
    def step(x):
        return x

    g = ri.jit(step, backend="pjrt")
    assert repr(g) == f"<PjitFunction of {step!r}>"  # JAX 0.10.2's words
    assert g._jitted.fun is step
    with pytest.raises(AttributeError):
        g._jitted = None
