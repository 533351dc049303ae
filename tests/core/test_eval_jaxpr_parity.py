"""jax.core.eval_jaxpr on make_jaxpr's program, and its equations' literal
values (Literal.val), compared with JAX 0.10.2 on both backends: run eagerly,
under jit, grad and vmap; constants replaced by the ones given."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import core_api


def _close(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert (g.dtype, g.shape) == (w.dtype, w.shape)
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_eval_jaxpr_runs_and_transforms(backend):
    def f(np_):
        return lambda x, y: (np_.sin(x) * 2.0, (y * x).sum())

    y = np.arange(3.0, dtype=np.float32)
    p = ri.make_jaxpr(f(rnp))(1.0, y)
    j = jax.make_jaxpr(f(jnp))(1.0, y)
    _close(
        core_api.eval_jaxpr(p.jaxpr, p.consts, 0.5, y),
        jax.core.eval_jaxpr(j.jaxpr, j.consts, 0.5, y),
    )

    def first(ev, q):
        return lambda x: ev(q.jaxpr, q.consts, x, y)[0]

    for rt, jt in ((ri.grad, jax.grad), (ri.jit, jax.jit)):
        _close([rt(first(core_api.eval_jaxpr, p))(0.5)], [jt(first(jax.core.eval_jaxpr, j))(0.5)])
    xs = np.arange(2.0, dtype=np.float32)
    _close(
        [ri.vmap(first(core_api.eval_jaxpr, p))(xs)],
        [jax.vmap(first(jax.core.eval_jaxpr, j))(xs)],
    )


def test_eval_jaxpr_takes_the_constants_given(backend):
    c = np.arange(3.0, dtype=np.float32)
    other = [np.ones(3, np.float32)]
    x = np.ones(3, np.float32)
    p = ri.make_jaxpr(lambda v: v + c)(x)
    j = jax.make_jaxpr(lambda v: v + c)(x)
    _close(core_api.eval_jaxpr(p.jaxpr, other, x), jax.core.eval_jaxpr(j.jaxpr, other, x))
    with pytest.raises(ValueError, match="eval_jaxpr: the program has 1 inputs"):
        core_api.eval_jaxpr(p.jaxpr, p.consts)
    with pytest.raises(ValueError):  # JAX's class too
        jax.core.eval_jaxpr(j.jaxpr, j.consts)


def test_literal_values_of_static_arguments(backend):
    def f(a, b, c):
        return (a + c) - (b * c)

    for static in ((1, 0), (0, 1)):
        p = ri.make_jaxpr(f, static_argnums=static)(1, 2, 3)
        j = jax.make_jaxpr(f, static_argnums=static)(1, 2, 3)
        got = [p.eqns[0].invars[0].val, p.eqns[1].invars[0].val]
        want = [j.eqns[0].invars[0].val, j.eqns[1].invars[0].val]
        assert [int(v) for v in got] == [int(v) for v in want] == [1, 2]
