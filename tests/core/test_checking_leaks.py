"""``jax.checking_leaks()`` and ``jax.check_tracer_leaks(v)`` (JAX 0.10.2
names): a program that leaks no tracer runs the same inside them as in JAX,
on both backends; a leak is JAX's "Leaked trace" Exception when the trace
ends (tests/transforms/test_leak_checking.py compares which programs raise),
and without the check the UnexpectedTracerError where it is used."""

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


def test_a_leaked_tracer_is_an_error_where_used_without_the_check(backend):
    leaked = []
    ri.jit(lambda v: leaked.append(v) or v)(1.0)
    with pytest.raises(ri.errors.UnexpectedTracerError):
        rnp.sin(leaked[0]) + 1


def test_a_leaked_tracer_is_an_error_when_the_trace_ends_with_the_check(backend):
    leaked = []
    with ri.checking_leaks(), pytest.raises(Exception, match="Leaked trace"):
        ri.jit(lambda v: leaked.append(v) or v)(1.0)
