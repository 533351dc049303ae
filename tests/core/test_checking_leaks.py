"""``jax.checking_leaks()`` and ``jax.check_tracer_leaks(v)`` are accepted
(JAX 0.10.2 names; refimpl lacked them): a program that leaks no tracer runs
the same inside them as in JAX, on both backends. refimpl does not look for
leaks when a trace ends; a leaked tracer is the UnexpectedTracerError where it
is used, as in JAX without the flag (docs/semantics.md 15.5)."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp


def _programs(api, x):
    return (
        api.jit(lambda v: v * 2)(x),
        api.vmap(lambda v: v + 1)(x),
        api.grad(lambda v: v * v)(3.0),
    )


def test_checking_leaks_runs_leak_free_programs_as_jax(backend):
    x = np.arange(3, dtype=np.float32)
    with ri.checking_leaks():
        got = _programs(ri, rnp.asarray(x))
    with jax.checking_leaks():
        want = _programs(jax, x)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


@pytest.mark.parametrize("value", [True, False])
def test_check_tracer_leaks_context_and_decorator(backend, value):
    @ri.check_tracer_leaks(value)
    def run():
        return ri.jit(lambda v: v + 1)(2)

    assert int(run()) == 3


def test_a_leaked_tracer_is_an_error_where_used(backend):
    leaked = []
    with ri.checking_leaks():
        ri.jit(lambda v: leaked.append(v) or v)(1.0)
    with pytest.raises(ri.errors.UnexpectedTracerError):
        rnp.sin(leaked[0]) + 1
