"""``jax.live_arrays`` (public JAX API, lax_control_flow_test's
test_cond_memory_leak counts with it): how many arrays each program leaves
alive, compared with JAX 0.10.2 live on both backends."""

from __future__ import annotations

import gc

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp


def _made(lib, np_):
    x = np_.ones(3)
    y = x + 1
    return [x, y]


def _deleted(lib, np_):
    x = np_.ones(3)
    y = x * 2
    x.delete()
    return [x, y]  # x is held, but deleted: not listed


def _jit_results(lib, np_):
    f = lib.jit(lambda a: (a + 1, a * 2, a))
    return list(f(np_.arange(3.0)))


def _dropped(lib, np_):
    f = lib.jit(lambda a: a.sum())
    f(np_.arange(4.0)).block_until_ready()
    return []  # the argument and the result are garbage again


def _cond_closure(lib, np_):
    # lax_control_flow_test's test_cond_memory_leak: nothing kept once dropped
    data = lib.device_put(np.zeros(1024, dtype=np.float32) + 1)

    def g():
        return lib.lax.cond(True, lambda: data[0], lambda: data[1])

    jg = lib.jit(g)
    jg().block_until_ready()
    return []


def _pytree(lib, np_):
    return [{"a": np_.zeros(2), "b": (np_.ones(()), 3.0)}]


PROGRAMS = {
    "made": _made,
    "deleted": _deleted,
    "jit_results": _jit_results,
    "dropped": _dropped,
    "cond_closure": _cond_closure,
    "pytree": _pytree,
}


def _added(lib, np_, program):
    gc.collect()
    before = len(lib.live_arrays())
    held = program(lib, np_)
    gc.collect()
    added = len(lib.live_arrays()) - before
    del held
    gc.collect()
    return added, len(lib.live_arrays()) - before


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_live_arrays_counts_as_jax(backend, program):
    want = _added(jax, jnp, PROGRAMS[program])
    assert _added(ri, rnp, PROGRAMS[program]) == want


def test_live_arrays_are_arrays_of_the_backend(backend):
    x = rnp.arange(3.0)
    live = ri.live_arrays()
    assert any(a is x for a in live)
    assert all(isinstance(a, ri.Array) for a in live)
    assert ri.live_arrays("cpu") is not None
    with pytest.raises(ValueError, match="unknown backend"):
        ri.live_arrays("tpu")
