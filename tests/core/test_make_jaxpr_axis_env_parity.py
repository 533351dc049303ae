"""make_jaxpr(..., axis_env=[(name, size), ...]) compared with JAX 0.10.2 on
both backends: the names are bound while the function is traced, so
collectives over them are equations whose output types (shape, dtype, weak
type) are JAX's; a name outside the env stays unbound afterwards too."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.lax as rlax
import refimpl.numpy as rnp

X3 = np.ones(3, np.float32)
X23 = np.ones((2, 3), np.float32)

# name -> (program over (lax, numpy, jit, vmap), axis_env, argument)
PROGRAMS = {
    "psum_of_weak_int": (lambda L, N, J, V: lambda x: x - L.psum(x, "i"), [("i", 4)], 2),
    "pmean": (lambda L, N, J, V: lambda x: L.pmean(x, "i"), [("i", 4)], X3),
    "pmax_pmin": (lambda L, N, J, V: lambda x: (L.pmax(x, "i"), L.pmin(x, "i")), [("i", 4)], X3),
    "axis_index": (lambda L, N, J, V: lambda x: L.axis_index("i") + x, [("i", 4)], 2),
    "psum_of_constant": (lambda L, N, J, V: lambda x: L.psum(1, "i") + x, [("i", 4)], 2.0),
    "all_gather": (lambda L, N, J, V: lambda x: L.all_gather(x, "i"), [("i", 4)], X23),
    "all_gather_tiled": (
        lambda L, N, J, V: lambda x: L.all_gather(x, "i", axis=1, tiled=True),
        [("i", 4)],
        X23,
    ),
    "ppermute": (lambda L, N, J, V: lambda x: L.ppermute(x, "i", [(0, 1), (1, 0)]), [("i", 2)], X3),
    "two_axes": (lambda L, N, J, V: lambda x: L.psum(x, ("i", "j")), [("i", 4), ("j", 2)], X3),
    "under_jit": (lambda L, N, J, V: lambda x: J(lambda y: L.psum(y, "i"))(x), (("i", 4),), X3),
    "with_vmap_axis": (
        lambda L, N, J, V: lambda x: V(lambda y: L.psum(y, "i") + L.psum(y, "b"), axis_name="b")(x),
        [("i", 4)],
        X3,
    ),
}


def _out_types(program_or_jaxpr):
    return [(tuple(a.shape), np.dtype(a.dtype), a.weak_type) for a in program_or_jaxpr.out_avals]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_collectives_under_axis_env_trace_as_jax(backend, name):
    make, env, arg = PROGRAMS[name]
    got = ri.make_jaxpr(make(rlax, rnp, ri.jit, ri.vmap), axis_env=env)(arg)
    want = jax.make_jaxpr(make(jax.lax, jnp, jax.jit, jax.vmap), axis_env=env)(arg)
    assert _out_types(got) == _out_types(want)
    assert ("psum" in str(got)) == ("psum" in str(want))


def test_names_outside_the_env_are_unbound(backend):
    with pytest.raises(NameError, match="unbound axis name: k"):
        ri.make_jaxpr(lambda x: rlax.psum(x, "k"), axis_env=[("i", 4)])(2.0)
    ri.make_jaxpr(lambda x: rlax.psum(x, "i"), axis_env=[("i", 4)])(2.0)
    with pytest.raises(NameError, match="unbound axis name: i"):  # not left bound
        ri.make_jaxpr(lambda x: rlax.psum(x, "i"))(2.0)


def test_axis_env_that_is_not_pairs_is_a_value_error():
    with pytest.raises(ValueError, match="make_jaxpr: axis_env"):
        ri.make_jaxpr(lambda x: x, axis_env=[("i",)])(2.0)
    with pytest.raises(ValueError):  # JAX's class for the same input
        jax.make_jaxpr(lambda x: x, axis_env=[("i",)])(2.0)
