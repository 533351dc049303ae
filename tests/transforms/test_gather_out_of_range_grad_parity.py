"""Reverse mode of indexing with out-of-range indices against JAX 0.10.2:
``x[idx]`` and ``x.at[idx].get()`` promise in-bounds indices (the read and
its tangent clamp, the cotangent of an index still out of range after
negatives wrap is dropped), ``get(mode="clip")`` sends it to the clamped
place, ``take`` fills and drops; static ints, traced scalars and
dynamic_slice clamp both ways."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax as jlax

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import lax as rlax

X = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
X2 = np.arange(12.0, dtype=np.float32).reshape(3, 4)
IDX = np.array([5, -1, -5, 1, 9, -9])


def _programs(api, np_, lax):
    s = lambda f: lambda x: f(x).sum()  # noqa: E731
    ct = np.arange(6.0, dtype=np.float32)
    return {
        "getitem_grad": lambda: api.grad(s(lambda x: x[IDX]))(X),
        "getitem_grad_jit_traced": lambda: api.grad(api.jit(lambda x, i: x[i].sum()))(X, IDX),
        "getitem_vjp": lambda: api.vjp(lambda x: x[IDX], X)[1](ct),
        "getitem_jacrev": lambda: api.jacrev(lambda x: x[IDX])(X),
        "getitem_jacfwd": lambda: api.jacfwd(lambda x: x[IDX])(np_.asarray(X)),
        "getitem_jvp": lambda: api.jvp(lambda x: x[IDX], (X,), (np.ones(4, np.float32),)),
        "getitem_2d_both": lambda: api.grad(
            s(lambda x: x[np.array([3, -4, 1]), np.array([4, 1, 2])])
        )(X2),
        "getitem_2d_rows": lambda: api.grad(s(lambda x: x[np.array([3, -4, 1])]))(X2),
        "getitem_int_and_array": lambda: api.grad(s(lambda x: x[5, np.array([1, 2])]))(X2),
        "getitem_slice_and_array": lambda: api.grad(s(lambda x: x[:, np.array([1, 7])]))(X2),
        "getitem_unsigned": lambda: api.grad(s(lambda x: x[np.array([1, 7], np.uint8)]))(X),
        "getitem_vmap_grad": lambda: api.vmap(api.grad(lambda x, i: x[i].sum()), (None, 0))(
            X, np.array([[1, 7], [5, 0]])
        ),
        "getitem_grad_vmap": lambda: api.grad(
            lambda x: api.vmap(lambda r, i: r[i].sum())(
                x, np.array([[1, 7], [5, 0], [2, -9]])
            ).sum()
        )(X2),
        "getitem_hessian": lambda: api.hessian(lambda x: (x[np.array([1, 7])] ** 2).sum())(X),
        "at_get_default": lambda: api.grad(s(lambda x: x.at[IDX].get()))(X),
        "at_get_promise": lambda: api.grad(s(lambda x: x.at[IDX].get(mode="promise_in_bounds")))(X),
        "at_get_clip": lambda: api.grad(s(lambda x: x.at[IDX].get(mode="clip")))(X),
        "at_get_fill": lambda: api.grad(s(lambda x: x.at[IDX].get(mode="fill")))(X),
        "at_get_2d": lambda: api.grad(s(lambda x: x.at[np.array([3, 1]), np.array([0, 9])].get()))(
            X2
        ),
        "take_clip": lambda: api.grad(s(lambda x: np_.take(x, IDX, mode="clip")))(X),
        "take_wrap": lambda: api.grad(s(lambda x: np_.take(x, IDX, mode="wrap")))(X),
        "static_int": lambda: api.grad(lambda x: x[5])(X),
        "traced_scalar": lambda: api.grad(api.jit(lambda x, i: x[i]))(X, 5),
        "dynamic_slice": lambda: api.grad(s(lambda x: lax.dynamic_slice(x, (3,), (2,))))(X),
    }


@pytest.mark.parametrize("case", list(_programs(jax, jnp, jlax)))
def test_out_of_range_gather_derivatives_match_jax(backend, case):
    ours = _programs(ri, rnp, rlax)[case]()
    theirs = _programs(jax, jnp, jlax)[case]()
    leaves, jleaves = jax.tree.leaves(ours), jax.tree.leaves(theirs)
    assert len(leaves) == len(jleaves)
    for a, b in zip(leaves, jleaves, strict=True):
        assert (a.dtype, a.shape) == (b.dtype, b.shape), (a, b)
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)
