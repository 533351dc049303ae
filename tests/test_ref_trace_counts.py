"""Trace counts with refs alive, against jax.new_ref (JAX 0.10.2).

A body that touches a ref made outside it is traced once, as in JAX: the
ref gets a late input of the body's trace at its first touch and the
construct threads it afterwards (refimpl/ref.py, ``late_inputs``). Each
test runs one program with refimpl and with JAX, counting the calls of
each user function, and compares the counts and the values.
"""

from types import SimpleNamespace

import jax
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import lax

RI = SimpleNamespace(name="refimpl", new_ref=ri.new_ref, jit=ri.jit, vmap=ri.vmap, lax=lax, np=rnp)
JAX = SimpleNamespace(
    name="jax", new_ref=jax.new_ref, jit=jax.jit, vmap=jax.vmap, lax=jax.lax, np=jax.numpy
)


@pytest.fixture(params=["ref", "pjrt"])
def backend(request):
    old = ri.config.backend
    ri.config.update("backend", request.param)
    yield request.param
    ri.config.update("backend", old)


def _both(program):
    """``program(ns, count)`` for refimpl and JAX: equal counts and values."""
    results = []
    for ns in (RI, JAX):
        counts: dict[str, int] = {}

        def count(name: str, counts=counts) -> None:
            counts[name] = counts.get(name, 0) + 1

        out = jax.tree.map(np.asarray, program(ns, count))
        results.append((counts, out))
    (ours, ours_out), (theirs, theirs_out) = results
    assert ours == theirs, (ours, theirs)
    leaves, jleaves = jax.tree.leaves(ours_out), jax.tree.leaves(theirs_out)
    assert len(leaves) == len(jleaves)
    for a, b in zip(leaves, jleaves, strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype, (a, b)
        np.testing.assert_allclose(a, b, rtol=1e-6)
    return ours


X = np.arange(3, dtype=np.float32)


def test_jit_closing_over_ref(backend):
    def program(ns, count):
        r = ns.new_ref(np.zeros(3, np.float32))
        s = ns.new_ref(np.ones(3, np.float32))

        def f(x):
            count("f")
            r[...] += x * s[...]
            return x * 2

        def g(x):  # touches no ref while refs are alive
            count("g")
            return x + 1

        jf, jg = ns.jit(f), ns.jit(g)
        outs = [jf(X), jf(X + 1), jg(X), jg(X)]
        return outs, r[...], s[...]

    assert _both(program) == {"f": 1, "g": 1}
