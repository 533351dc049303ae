"""The linear part of a linearized custom_vjp function, evaluated: JAX
0.10.2's forward-mode TypeError eagerly, under jit (also on pjrt, where
refimpl had no lowering rule: LoweringError) and under vmap (refimpl: no
batching rule, NotImplementedError). Compared with JAX on both backends."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp

WAYS = {
    "eager": lambda lib, lin: lin(1.0),
    "jit": lambda lib, lin: lib.jit(lin)(1.0),
    "vmap": lambda lib, lin: lib.vmap(lin)(np.ones(2, np.float32)),
    "jit_of_vmap": lambda lib, lin: lib.jit(lib.vmap(lin))(np.ones(2, np.float32)),
}


def _error(lib, jnp_, way):
    @lib.custom_vjp
    def f(x):
        return jnp_.sin(x)

    f.defvjp(lambda x: (jnp_.sin(x), x), lambda x, g: (g * jnp_.cos(x),))
    lin = lib.linearize(f, 5.0)[1]
    with pytest.raises(Exception) as info:
        WAYS[way](lib, lin)
    return info.value


@pytest.mark.parametrize("way", sorted(WAYS))
def test_evaluating_a_custom_vjp_linear_part_is_jaxs_type_error(backend, way):
    want = _error(jax, jjnp, way)
    got = _error(ri, rnp, way)
    assert type(got) is type(want) is TypeError
    assert "forward-mode autodiff" in str(got)


def test_its_transpose_still_runs_bwd(backend):
    @ri.custom_vjp
    def f(x):
        return rnp.sin(x)

    f.defvjp(lambda x: (rnp.sin(x), x), lambda x, g: (g * rnp.cos(x),))
    lin = ri.linearize(f, 5.0)[1]
    (ct,) = ri.linear_transpose(lin, 1.0)(1.0)
    np.testing.assert_allclose(np.asarray(ct), np.cos(5.0), rtol=1e-6)
