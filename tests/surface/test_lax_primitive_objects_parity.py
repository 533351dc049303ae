"""``lax.<name>_p``: JAX 0.10.2's primitive objects are refimpl's own (issue 29:
lax_test compares ``make_jaxpr(f).eqns[0].primitive`` with
``lax.dynamic_slice_p`` and reduction primitives, and ``jax.lax.scan_p``),
and binding one computes what JAX's does, on both backends."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import refimpl as ri
from refimpl import lax
from refimpl.lax._primitive_objects import JAX_PRIMITIVE_NAMES
from tests.helpers.parity import assert_same_as_jax

_X = np.arange(6, dtype=np.float32).reshape(2, 3)

# program -> the JAX name of the primitive of its (first) equation
_PROGRAMS = {
    "dynamic_slice": lambda L, x: L.dynamic_slice(x, (0, 1), (1, 2)),
    "reduce_sum": lambda L, x: L.reduce(x, np.float32(0), L.add, (0,)),
    "reduce_max": lambda L, x: L.reduce(x, np.float32(-np.inf), L.max, (1,)),
    "sin": lambda L, x: L.sin(x),
    "dot_general": lambda L, x: L.dot_general(x, x, (((1,), (1,)), ((), ()))),
    "scan": lambda L, x: L.scan(lambda c, a: (c + a, a), x[0], x),
    "while": lambda L, x: L.while_loop(lambda c: c[0, 0] < 3, lambda c: c + 1, x),
    "cond": lambda L, x: L.cond(x[0, 0] > 0, lambda v: v, lambda v: -v, x),
    "gather": lambda L, x: L.gather(
        x,
        np.array([[1]]),
        L.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,)),
        (1, 3),
    ),
}


def _primitives(make_jaxpr, program):
    return [e.primitive for e in make_jaxpr(program)(_X).eqns]


@pytest.mark.parametrize("name", sorted(_PROGRAMS))
def test_program_equations_hold_the_lax_primitive_object(backend, name):
    want = _primitives(jax.make_jaxpr, lambda x: _PROGRAMS[name](jax.lax, x))
    assert getattr(jax.lax, f"{name}_p") in want  # the fact the JAX tests rely on
    got = _primitives(ri.make_jaxpr, lambda x: _PROGRAMS[name](lax, x))
    assert getattr(lax, f"{name}_p") in got


def test_dynamic_slice_is_the_only_equation(backend):
    # lax_test testDynamicSliceUnsignedNoNormalization: an unsigned index is not normalized
    f = lambda L: lambda x, i: L.dynamic_slice(x, [i], [1])  # noqa: E731
    x, i = np.arange(200), np.uint32(128)
    want = jax.make_jaxpr(f(jax.lax))(x, i)
    got = ri.make_jaxpr(f(lax))(x, i)
    assert len(got.eqns) == len(want.eqns) == 1
    assert got.eqns[0].primitive is lax.dynamic_slice_p


# (JAX's transcendental primitives also take an ``accuracy`` parameter, which
# refimpl's do not: ``lax.sin_p.bind(x, accuracy=None)`` is a TypeError here)
_BINDS = {
    "neg": ((_X,), {}),
    "add": ((_X, _X), {}),
    "integer_pow": ((_X,), {"y": 3}),
    "reduce_sum": ((_X,), {"axes": (1,)}),
    "transpose": ((_X,), {"permutation": (1, 0)}),
}


@pytest.mark.parametrize("name", sorted(_BINDS))
def test_bind_computes_what_jax_binding_computes(backend, name):
    args, params = _BINDS[name]
    want = getattr(jax.lax, f"{name}_p").bind(*args, **params)
    primitive = getattr(lax, f"{name}_p")
    assert_same_as_jax(primitive.bind(*args, **params), want)
    assert_same_as_jax(ri.jit(lambda *a: primitive.bind(*a, **params))(*args), want)


def test_every_jax_primitive_name_is_known():
    # the table follows JAX 0.10.2's exports exactly
    assert {n[:-2] for n in dir(jax.lax) if n.endswith("_p")} == JAX_PRIMITIVE_NAMES


def test_names_jax_lacks_or_refimpl_composes_are_attribute_errors():
    with pytest.raises(AttributeError, match="no attribute 'nonexistent_p'"):
        lax.nonexistent_p  # noqa: B018
    with pytest.raises(AttributeError, match="builds acosh from other primitives"):
        lax.acosh_p  # noqa: B018
    assert not hasattr(jax.lax, "mul_add_p") and not hasattr(lax, "mul_add_p")
