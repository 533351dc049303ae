"""The dtypes and weak types of tangents and cotangents against JAX 0.10.2:
a jit call's tangents and cotangents keep the types its differentiated
program computes (not the primal's weak type); a custom_vjp bwd's
cotangent keeps its own weak type; jacfwd/jacrev blocks take the output's
(jacfwd) or the input's (jacrev) dtype and weak type."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax as jlax

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import lax as rlax


def _cvjp(api, np_):
    @api.custom_vjp
    def f(y):
        return y * 3.0

    f.defvjp(lambda y: (f(y), np_.float32(2.0)), lambda x, g: (g * x,))
    return f


def _programs(api, np_, lax):
    pw = lambda x, n: x**n  # noqa: E731
    f = _cvjp(api, np_)
    f0 = np.zeros((), jax.dtypes.float0)
    return {
        "pow_int_grad_jit": lambda: api.grad(api.jit(pw))(0.0, 0),
        "pow_int_jvp_jit": lambda: api.jvp(api.jit(pw), (2.0, 2), (1.0, f0)),
        "pow_closed_jvp_jit": lambda: api.jvp(api.jit(lambda x: lax.pow(x, 2)), (2.0,), (1.0,)),
        "lax_pow_grad_jit": lambda: api.grad(api.jit(lambda x: lax.pow(x, np_.int32(2))))(2.0),
        "lax_pow_vjp_jit": lambda: api.vjp(api.jit(lambda x: lax.pow(x, np_.int32(2))), 2.0)[1](
            1.0
        ),
        "lax_pow_linearize_jit": lambda: api.linearize(
            api.jit(lambda x: lax.pow(x, np_.int32(2))), 2.0
        )[1](1.0),
        "pow_int_jit_grad": lambda: api.jit(api.grad(pw))(0.0, 0),
        "weak_mul_grad_jit": lambda: api.grad(api.jit(lambda x: x * 2.0))(2.0),
        "custom_vjp_grad": lambda: api.grad(f)(2.0),
        "custom_vjp_grad_jit": lambda: api.grad(api.jit(f))(2.0),
        "custom_vjp_jit_grad": lambda: api.jit(api.grad(f))(2.0),
        "jacfwd_pow": lambda: api.jacfwd(lax.pow, (0, 1))(4.0, 0.0),
        "jacrev_pow": lambda: api.jacrev(lax.pow, (0, 1))(4.0, 0.0),
        "jacfwd2_pow": lambda: api.jacfwd(api.jacfwd(lax.pow, (0, 1)), (0, 1))(4.0, 0.0),
        "jacrev2_pow": lambda: api.jacrev(api.jacrev(lax.pow, (0, 1)), (0, 1))(4.0, 0.0),
        "jacfwd_mixed": lambda: api.jacfwd(lambda x, y: x * y, (0, 1))(2.0, np_.float32(3.0)),
        "jacrev_mixed": lambda: api.jacrev(lambda x, y: x * y, (0, 1))(2.0, np_.float32(3.0)),
        "jacrev_weak_out": lambda: api.jacrev(lambda x: x * 2.0)(np_.ones(2)),
        "hessian_pow": lambda: api.hessian(lambda x: lax.pow(x, 3.0))(2.0),
    }


@pytest.mark.parametrize("case", list(_programs(jax, jnp, jlax)))
def test_tangent_types_match_jax(backend, case):
    ours = _programs(ri, rnp, rlax)[case]()
    theirs = _programs(jax, jnp, jlax)[case]()
    leaves, jleaves = jax.tree.leaves(ours), jax.tree.leaves(theirs)
    assert len(leaves) == len(jleaves)
    for a, b in zip(leaves, jleaves, strict=True):
        assert (a.dtype, a.shape, a.weak_type) == (b.dtype, b.shape, b.weak_type), (a, b)
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)


def test_jacfwd_function_sees_arrays_for_numpy_inputs(backend):
    # JAX's jacfwd calls the function on its tracers: a NumPy input is an
    # array inside (x.at works, x[idx] out of range is JAX's clamped read)
    x = np.array([1.0, 2.0], np.float32)
    idx = np.array([0, 5])

    def f(x):
        return x.at[0].set(1.0) * x[idx]

    ours = ri.jacfwd(f)(x)
    theirs = jax.jacfwd(f)(x)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs))
