"""Diagonals under ``checkpoint`` save no constant, as JAX 0.10.2's
(api_test.py's RematTest.test_constants_not_hoisted): JAX computes a
diagonal's positions from an iota, equations on no input that the backward
pass recomputes; refimpl's NumPy index array was a constant, saved as a
residual ``from a constant``. Compared with JAX live
(``jax._src.ad_checkpoint.saved_residuals``) on both backends."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src.ad_checkpoint import saved_residuals

import refimpl as ri
import refimpl.numpy as rnp
from refimpl.ad_checkpoint import residual_sources

_X = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4) / 8

# name -> (program(np module), argument)
PROGRAMS = {
    "einsum_ii_i": (lambda np_: lambda x: np_.einsum("ii->i", x), _X[0, :3, :3]),
    "einsum_trace": (lambda np_: lambda x: np_.einsum("ii", x), _X[0, :3, :3]),
    "einsum_iij": (lambda np_: lambda x: np_.einsum("iij->ij", x), _X[:, :2, :]),
    "einsum_with_product": (lambda np_: lambda x: np_.einsum("ij,ii->j", x, x), _X[0, :3, :3]),
    "diagonal": (lambda np_: np_.diagonal, _X[0]),
    "diagonal_offset": (lambda np_: lambda x: np_.diagonal(x, 1), _X[0]),
    "diagonal_negative_offset": (lambda np_: lambda x: np_.diagonal(x, -1, 1, 2), _X),
    "trace": (lambda np_: np_.trace, _X[0]),
}


def _nothing(*_, **__):
    return False


def _kinds(residuals):
    """(type, where from) of each residual; the source's words (JAX adds the
    file and line of an equation) up to 'from'."""
    return [(str(aval), source.split(" from ")[0]) for aval, source in residuals]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_checkpointed_diagonal_saves_what_jax_saves(backend, name):
    program, x = PROGRAMS[name]
    want = saved_residuals(jax.checkpoint(program(jnp), policy=_nothing), jnp.asarray(x))
    got = residual_sources(ri.checkpoint(program(rnp), policy=_nothing), rnp.asarray(x))
    assert _kinds(got) == _kinds(want)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_values_and_gradients(backend, name):
    program, x = PROGRAMS[name]

    def grad(lib, np_):
        f = lib.checkpoint(program(np_), policy=_nothing)
        return lib.grad(lambda y: (f(y) * 1.5).sum())(np_.asarray(x))

    np.testing.assert_allclose(np.asarray(program(rnp)(x)), np.asarray(program(jnp)(x)))
    np.testing.assert_allclose(np.asarray(grad(ri, rnp)), np.asarray(grad(jax, jnp)))
