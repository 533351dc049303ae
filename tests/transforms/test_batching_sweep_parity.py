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


# --- programs of batching_test.py (agreeing with JAX when swept; kept so)


def _collective_programs(jx):
    lax_, jnp_ = jx.lax, jx.numpy
    x = np.float32([[1.0, 2.0], [3.0, 4.0]])
    t = np.float32([[1.0, 0.0], [0.0, 1.0]])
    collectives = {
        "psum": lambda v: lax_.psum(v, "i"),
        "pmean": lambda v: lax_.pmean(v, "i"),
        "all_gather": lambda v: lax_.all_gather(v, "i"),
        "all_gather_tiled": lambda v: lax_.all_gather(v, "i", tiled=True),
        "ppermute": lambda v: lax_.ppermute(v, "i", [(0, 1), (1, 0)]),
        "psum_scatter": lambda v: lax_.psum_scatter(v, "i", tiled=True),
        "axis_index": lambda v: v * lax_.axis_index("i"),
        "all_to_all": lambda v: lax_.all_to_all(v, "i", 0, 0),
    }
    out = {}
    for name, c in collectives.items():
        f = lambda v, c=c: jnp_.sin(c(v) * 2.0)  # noqa: E731
        mapped = jx.vmap(f, axis_name="i")
        out[f"{name} grad of vmap"] = jx.grad(lambda v, m=mapped: m(v).sum())(x)
        out[f"{name} vmap of grad"] = jx.vmap(jx.grad(lambda v, f=f: f(v).sum()), axis_name="i")(x)
        out[f"{name} jvp of vmap"] = jx.jvp(mapped, (x,), (t,))
        out[f"{name} weak operand"] = jx.vmap(
            lambda a, b, c=c: c(a * b), in_axes=(None, 0), axis_name="i"
        )(2.0, x)
    return out


def test_collectives_under_named_vmap_and_autodiff_as_jax(backend):
    want = _collective_programs(jax)
    got = _collective_programs(ri)
    assert_modes_same_as_jax(got, want, rtol=1e-5)


def _batching_test_programs(jx):
    lax_, jnp_ = jx.lax, jx.numpy
    g = lax_.GatherDimensionNumbers(
        offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0, 1)
    )
    gather = lambda v, i: lax_.gather(v, i, dimension_numbers=g, slice_sizes=(1, 3))  # noqa: E731
    grad_gather = jx.grad(lambda v, i: jnp_.sum(jnp_.sin(gather(v, i))))
    operand = np.arange(100, dtype=np.float32).reshape(10, 5, 2)
    idxs = np.array([[[0, 2], [1, 0]], [[1, 0], [2, 0]]])
    reduce_scatter = jx.vmap(lambda v: lax_.psum_scatter(v, axis_name="i"), axis_name="i")
    s = np.arange(36, dtype=np.float32).reshape(3, 3, 4) / 10
    return {
        "gather batched both": jx.vmap(gather, (2, 0))(operand, idxs),
        "gather grad batched both": jx.vmap(grad_gather, (2, 0))(operand, idxs),
        "grad of psum, out_axes None": jx.vmap(
            jx.grad(lambda v: -lax_.psum(v, "i")), out_axes=None, axis_name="i"
        )(jnp_.ones(5)),
        "ppermute grad": jx.vmap(
            jx.grad(lambda v: lax_.ppermute(v, "i", perm=[[0, 1], [1, 0]])), axis_name="i"
        )(jnp_.array([1.0, 2.0])),
        "reduce_scatter jvp": jx.jvp(reduce_scatter, (s,), (s,)),
        "reduce_scatter vjp": jx.vjp(reduce_scatter, s)[1](reduce_scatter(s)),
        "all_gather of a constant": jx.vmap(
            lambda v: (lax_.all_gather(jnp_.ones_like(v), "i"), lax_.all_gather(1, "i")),
            axis_name="i",
            in_axes=1,
            out_axes=None,
        )(jnp_.arange(15).reshape(3, 5)),
        "weak type kept": jx.vmap(lambda v: (v, v * 2, v + 1.0))(jnp_.ravel(1)),
        "index add, batched indices": jx.vmap(
            lambda v, i, y: jnp_.asarray(v).at[i].add(y), (None, 0, None)
        )(np.zeros(10), np.arange(10), 1.0),
    }


def test_batching_test_programs_as_jax(backend):
    want = _batching_test_programs(jax)
    got = _batching_test_programs(ri)
    assert_modes_same_as_jax(got, want, rtol=1e-5)
