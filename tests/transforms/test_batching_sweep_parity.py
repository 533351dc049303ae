"""vmap programs from JAX's tests/batching_test.py and its neighbours, each
compared with JAX 0.10.2 on both backends (values, dtypes, weak types,
shapes; the error class where JAX raises)."""

from __future__ import annotations

import jax
import jax.lax as jlax
import numpy as np

import refimpl as ri
from refimpl import lax
from tests.helpers.parity import assert_modes_same_as_jax

# --- forward mode of a vmapped while loop whose carry a batched cond makes strong


def _while_of_cond_modes(jx, lax_):
    preds = np.array([0.0, 3.0], np.float32)

    def step(p, c):
        # batched p: a select of a strong (c + 1.0f) and a weak (c * 2.0) value
        return lax_.cond(p > 1.0, lambda c: c + np.float32(1.0), lambda c: c * 2.0, c)

    def while_(p, init):
        body = lambda c: (c[0] + 1, step(p, c[1]))  # noqa: E731
        return lax_.while_loop(lambda c: c[0] < 3, body, (0, init))[1]

    def fori(p, init, n):
        return lax_.fori_loop(0, n, lambda i, c: step(p, c), init)

    mapped = lambda s: jx.vmap(lambda p: while_(p, s))(preds)  # noqa: E731
    mapped_fori = lambda s: jx.vmap(lambda p, n: fori(p, s, n))(preds, np.array([2, 3]))  # noqa: E731
    return {
        "jvp_of_vmap": jx.jvp(mapped, (1.0,), (1.0,)),
        "jvp_of_vmap_jit": jx.jit(lambda s: jx.jvp(mapped, (s,), (1.0,)))(1.0),
        "linearize_of_vmap": jx.linearize(mapped, 1.0)[1](1.0),
        "jvp_of_vmap_fori_traced_bounds": jx.jvp(mapped_fori, (1.0,), (1.0,)),
        "vmap_of_jvp": jx.vmap(lambda p: jx.jvp(lambda s: while_(p, s), (1.0,), (1.0,)))(preds),
    }


def test_jvp_of_a_vmapped_while_whose_carry_a_batched_cond_makes_strong_as_jax(backend):
    # the jvp's tangent carry is typed as the body takes the carry (weak),
    # not as it returns it (strong): refimpl raised while's TypeError
    want = _while_of_cond_modes(jax, jlax)
    got = _while_of_cond_modes(ri, lax)
    assert_modes_same_as_jax(got, want)
