"""``lax.create_token``/``lax.after_all`` as JAX 0.10.2 uses them: a token
passes through ``jit`` (a new token object comes out), a ``while_loop``
carry (where JAX 0.10.2 fails inside its rule) and ``grad``'s auxiliary output next to
arrays that keep their values;
``after_all`` of a non-token is JAX's TypeError. Both backends, against JAX."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import lax


def test_jit_passes_a_token_through(backend):
    def noop(arr, token):
        return arr, token

    token = lax.create_token()
    arr, out = ri.jit(noop)(rnp.ones(3), token)
    want_arr, want_out = jax.jit(noop)(jax.numpy.ones(3), jax.lax.create_token())
    assert isinstance(out, lax.Token) and out is not token
    assert type(want_out).__name__ == "Token"
    np.testing.assert_array_equal(np.asarray(arr), np.asarray(want_arr))


def test_token_made_inside_jit_and_ordered(backend):
    def f(x):
        token = lax.after_all(lax.create_token(x), lax.create_token())
        return x * 2, token

    y, token = ri.jit(f)(3.0)
    assert isinstance(token, lax.Token)
    want, _ = jax.jit(lambda x: (x * 2, jax.lax.after_all(jax.lax.create_token(x))))(3.0)
    assert float(y) == float(want) == 6.0


def test_while_loop_carries_a_token(backend):
    def run(lax_mod):
        def body(carry):
            i, token = carry
            return i + 1, lax_mod.after_all(token)

        return lax_mod.while_loop(lambda c: c[0] < 5, body, (0, lax_mod.create_token()))

    # JAX 0.10.2 itself fails here (an AttributeError inside its while_loop rule);
    # the count is what the loop means
    got_i, got_token = ri.jit(lambda: run(lax))()
    assert isinstance(got_token, lax.Token)
    assert int(got_i) == 5


def test_grad_with_a_token_in_the_aux_output(backend):
    def f(lax_mod, x):
        return x * x, lax_mod.create_token()

    got, aux = ri.grad(lambda x: f(lax, x), has_aux=True)(3.0)
    want, _ = jax.grad(lambda x: f(jax.lax, x), has_aux=True)(3.0)
    assert isinstance(aux, lax.Token)
    assert float(got) == float(want) == 6.0


def test_after_all_of_an_array_is_a_type_error(backend):
    with pytest.raises(TypeError, match="tokens"):
        jax.lax.after_all(jax.lax.create_token(), jax.numpy.ones(3))
    with pytest.raises(TypeError, match="tokens"):
        lax.after_all(lax.create_token(), rnp.ones(3))
    with pytest.raises(TypeError, match="tokens"):
        ri.jit(lambda x: lax.after_all(x))(1.0)
