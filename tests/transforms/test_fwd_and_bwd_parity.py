"""``fwd_and_bwd`` as JAX 0.10.2's (a public name refimpl lacked, issue 29): the
forward pass returns the value and the residuals (a pytree: the pullback),
the backward pass its cotangents, jitted or not, with ``has_aux``; keyword
arguments of ``fwd`` are ignored, as JAX's; the errors are JAX's classes. On
both backends."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
from tests.helpers.parity import assert_same_as_jax

_X = np.arange(3, dtype=np.float32)
_W = np.full(3, 0.5, np.float32)


def _loss(np_):
    return lambda x, w, scale=1.0: np_.sum(np_.tanh(x * w) * scale)


@pytest.mark.parametrize("jitted", [True, False])
@pytest.mark.parametrize("argnums", [0, 1, (0, 1), (1, 0), -1])
def test_forward_and_backward(backend, argnums, jitted):
    results = {}
    for api, np_ in ((jax, jnp), (ri, ri.numpy)):
        fwd, bwd = api.fwd_and_bwd(_loss(np_), argnums, jitted=jitted)
        y, residuals = fwd(_X, _W)
        # the same backward function, reused with another cotangent
        results[api] = (y, bwd(residuals, np.float32(1.0)), bwd(residuals, np.float32(3.0)))
    assert_same_as_jax(results[ri], results[jax], rtol=1e-6)


def test_has_aux(backend):
    results = {}
    for api, np_ in ((jax, jnp), (ri, ri.numpy)):

        def with_aux(x, np_=np_):
            return np_.sin(x).sum(), {"a": x * 2}

        fwd, bwd = api.fwd_and_bwd(with_aux, 0, has_aux=True)
        out = fwd(_X)
        assert len(out) == 3
        y, residuals, aux = out
        results[api] = (y, aux, bwd(residuals, np.float32(1.0)))
    assert_same_as_jax(results[ri], results[jax], rtol=1e-6)


def test_keyword_arguments_are_ignored(backend):
    # JAX 0.10.2's fwd passes only the positional arguments on
    want = jax.fwd_and_bwd(_loss(jnp), 0)[0](_X, _W, scale=3.0)[0]
    got = ri.fwd_and_bwd(_loss(ri.numpy), 0)[0](_X, _W, scale=3.0)[0]
    assert_same_as_jax(got, want)
    assert_same_as_jax(got, ri.fwd_and_bwd(_loss(ri.numpy), 0)[0](_X, _W)[0])


@pytest.mark.parametrize(
    "bad, error",
    [
        (lambda api, np_: api.fwd_and_bwd(3, 0), TypeError),
        (lambda api, np_: api.fwd_and_bwd(_loss(np_), "a"), TypeError),
        (lambda api, np_: api.fwd_and_bwd(_loss(np_), 5)[0](_X, _W), ValueError),
        (
            lambda api, np_: api.fwd_and_bwd(_loss(np_), 0)[1](
                api.fwd_and_bwd(_loss(np_), 0)[0](_X, _W)[1], np_.ones(2)
            ),
            ValueError,
        ),
    ],
    ids=["not_callable", "argnums_type", "argnums_range", "cotangent_shape"],
)
def test_errors(backend, bad, error):
    with pytest.raises(error):
        bad(jax, jnp)
    with pytest.raises(error):
        bad(ri, ri.numpy)
