"""The linear program a linearized function evaluates (``f_lin.func.args[0]``,
where JAX 0.10.2's holds its linear jaxpr): what a remat policy leaves to be
recomputed in the linear part, against JAX live (api_test's RematTest
test_remat_custom_policy*, test_remat_checkpoint_dots*), on ref and pjrt."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp

_POLICIES = {
    "save_anything": lambda *_, **__: True,
    "save_nothing": lambda *_, **__: False,
    "save_sin": lambda p, *_, **__: str(p) == "sin",
    "save_cos": lambda p, *_, **__: str(p) == "cos",
}


def _counts(api, np_, policy, jitted_square):
    square = (lambda x: x * x) if not jitted_square else api.jit(lambda x: x * x)
    f = api.checkpoint(lambda x: np_.sin(square(np_.sin(x))), policy=_POLICIES[policy])
    y, f_lin = api.linearize(f, 1.0)
    text = str(f_lin.func.args[0])
    return float(y), float(f_lin(2.0)), text.count(" sin "), text.count(" cos ")


@pytest.mark.parametrize("jitted_square", [False, True])
@pytest.mark.parametrize("policy", sorted(_POLICIES))
def test_what_the_linear_part_recomputes_as_jax(backend, policy, jitted_square):
    ours = _counts(ri, rnp, policy, jitted_square)
    theirs = _counts(jax, jnp, policy, jitted_square)
    np.testing.assert_allclose(ours[:2], theirs[:2], rtol=1e-6)
    assert ours[2:] == theirs[2:]


def test_checkpoint_dots_leaves_the_sines_to_the_linear_part_as_jax(backend):
    def run(api, np_, lax):
        def f(x):
            for _ in range(3):
                x = np_.sin(np_.dot(x, x, precision=lax.Precision.HIGHEST))
            return x

        g = api.checkpoint(f, policy=api.checkpoint_policies.checkpoint_dots)
        _, f_lin = api.linearize(g, np_.ones((2, 2)))
        text = str(f_lin.func.args[0])
        return text.count(" sin "), text.count(" dot_")

    assert run(ri, rnp, ri.lax) == run(jax, jnp, jax.lax)
