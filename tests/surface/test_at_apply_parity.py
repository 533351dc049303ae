"""``x.at[idx].apply(f)`` against JAX 0.10.2: ``f`` applied once per
occurrence of an index (repeated indices apply it repeatedly), out-of-range
indices dropped or clipped, and not differentiable (NotImplementedError)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp

X = np.array([1.0, 2.0, 3.0, 4.0], np.float32)


def _programs(api, np_):
    idx = np.array([0, 0, 2])
    double = lambda v: v * 2  # noqa: E731
    return {
        "repeated": lambda: np_.asarray(X).at[idx].apply(double),
        "repeated_jit": lambda: api.jit(lambda x: x.at[idx].apply(double))(X),
        "repeated_sin": lambda: np_.asarray(X).at[idx].apply(np_.sin),
        "thrice": lambda: np_.asarray(X).at[np.array([1, 1, 1])].apply(lambda v: v + 1),
        "out_of_range_drop": lambda: np_.asarray(X).at[np.array([5, -1])].apply(double),
        "out_of_range_clip": lambda: (
            np_.asarray(X).at[np.array([5, -1])].apply(double, mode="clip")
        ),
        "int": lambda: np_.arange(4).at[np.array([1, 1])].apply(lambda v: v * 3),
        "2d": lambda: (
            np_.ones((2, 3)).at[np.array([0, 0]), np.array([1, 1])].apply(lambda v: v * 5)
        ),
        "bool_mask": lambda: np_.asarray(X).at[np.array([True, False, True, True])].apply(double),
        "vmap": lambda: api.vmap(lambda x: x.at[idx].apply(double))(np.stack([X, X + 1])),
        "weak": lambda: api.jit(lambda x: x.at[()].apply(lambda v: v + 1))(2.0),
    }


@pytest.mark.parametrize("case", list(_programs(jax, jnp)))
def test_at_apply_matches_jax(backend, case):
    ours = _programs(ri, rnp)[case]()
    theirs = _programs(jax, jnp)[case]()
    assert (ours.dtype, ours.shape, ours.weak_type) == (
        theirs.dtype,
        theirs.shape,
        theirs.weak_type,
    )
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-6)


@pytest.mark.parametrize("how", ["grad", "jvp"])
def test_at_apply_is_not_differentiable(backend, how):
    def program(api, np_):
        f = lambda x: x.at[1].apply(np_.sin).sum()  # noqa: E731
        if how == "grad":
            return api.grad(f)(X)
        return api.jvp(f, (X,), (X,))

    with pytest.raises(NotImplementedError):
        program(jax, jnp)
    with pytest.raises(NotImplementedError):
        program(ri, rnp)
