"""The lax functions JAX 0.10.2 keeps out of ``jax.lax`` that its own test files
call (pmap_test/batching_test's ``parallel.pargmax``/``pargmin``, lax_vmap_test's
``windowed_reductions._select_and_gather_add``/``_select_and_scatter_add``,
lax_test's ``lax._delta``/``lax.asarray``), against JAX's own, live, on ref and
pjrt."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from jax import lax as jlax
from jax._src.lax import lax as jax_lax_internal
from jax._src.lax import parallel as jax_parallel
from jax._src.lax import windowed_reductions as jax_windowed

import refimpl as ri
from refimpl.lax import _parallel, _shapes, _windowed


@pytest.mark.parametrize("which", ["pargmax", "pargmin"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize("shape_axis", [((7,), 0), ((5, 8), 0), ((5, 8), 1)])
def test_pargmax_pargmin_under_vmap_as_jax(backend, which, dtype, shape_axis):
    shape, axis = shape_axis
    rng = np.random.RandomState(0)
    x = (rng.randn(*shape) * 10).astype(dtype)
    ours = ri.vmap(
        lambda v: getattr(_parallel, which)(v, "i"), in_axes=axis, out_axes=None, axis_name="i"
    )(x)
    theirs = jax.vmap(
        lambda v: getattr(jax_parallel, which)(v, "i"), in_axes=axis, out_axes=None, axis_name="i"
    )(x)
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    assert np.asarray(ours).dtype == np.asarray(theirs).dtype


@pytest.mark.parametrize("which", ["pargmax", "pargmin"])
def test_pargmax_under_pmap_and_ties_take_the_first_member(backend, which, four_ref_devices):
    # (this process's JAX has one device: NumPy's argmax/argmin, first on ties, is
    # the oracle, as in JAX's own testArgAllReduce)
    x = np.array([3, 0, 3, 0], np.int32)  # ties: members 0 and 2, 1 and 3
    ours = ri.pmap(lambda v: getattr(_parallel, which)(v, "i"), axis_name="i")(x)
    expected = getattr(np, which[1:])(x)
    np.testing.assert_array_equal(np.asarray(ours), np.full(4, expected, np.int32))


def test_pargmax_of_several_axes_is_jaxs_type_error():
    x = np.ones((2, 2), np.float32)
    with pytest.raises(TypeError, match="only accepts a single axis") as ours:
        ri.vmap(ri.vmap(lambda v: _parallel.pargmax(v, ("i", "j")), axis_name="j"), axis_name="i")(
            x
        )
    with pytest.raises(TypeError) as theirs:
        jax.vmap(
            jax.vmap(lambda v: jax_parallel.pargmax(v, ("i", "j")), axis_name="j"), axis_name="i"
        )(x)
    assert str(ours.value) == str(theirs.value)


_WINDOWS = [
    ((4, 6), (2, 1), (1, 2), "SAME"),
    ((4, 6), (1, 2), (2, 1), "VALID"),
    ((3, 2, 4, 6), (1, 1, 2, 1), (1, 2, 2, 1), "VALID"),
    ((3, 2, 4, 6), (2, 1, 2, 1), (1, 1, 1, 1), "SAME"),
]


@pytest.mark.parametrize("select", ["ge", "le"])
@pytest.mark.parametrize("window", _WINDOWS, ids=str)
def test_select_and_gather_add_and_its_scatter_as_jax(backend, select, window):
    shape, dims, strides, padding = window
    rng = np.random.RandomState(1)
    x, t = (rng.randn(*shape).astype(np.float32) for _ in range(2))
    pads = jlax.padtype_to_pads(shape, dims, strides, padding)
    ones = (1,) * len(shape)
    ours_prim, jax_prim = getattr(ri.lax, f"{select}_p"), getattr(jlax, f"{select}_p")
    ours = _windowed.select_and_gather_add(t, x, ours_prim, dims, strides, pads, ones, ones)
    theirs = jax_windowed._select_and_gather_add(t, x, jax_prim, dims, strides, pads, ones, ones)
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    s = rng.randn(*np.shape(theirs)).astype(np.float32)
    ours_s = _windowed.select_and_scatter_add(s, x, ours_prim, dims, strides, pads)
    theirs_s = jax_windowed._select_and_scatter_add(s, x, jax_prim, dims, strides, pads)
    np.testing.assert_allclose(np.asarray(ours_s), np.asarray(theirs_s), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("in_axes", [(0, 0), (1, None), (None, 2)])
def test_select_and_gather_add_batches_as_jax(backend, in_axes):
    rng = np.random.RandomState(2)
    shapes = [(4, 6) if a is None else (4, 6)[:a] + (3,) + (4, 6)[a:] for a in in_axes]
    t, x = (rng.randn(*s).astype(np.float32) for s in shapes)
    pads = ((0, 0), (0, 1))

    def run(module, prim):
        return lambda tv, xv: module(tv, xv, prim, (2, 2), (1, 2), pads, (1, 1), (1, 1))

    ours = ri.vmap(run(_windowed.select_and_gather_add, ri.lax.ge_p), in_axes)(t, x)
    theirs = jax.vmap(run(jax_windowed._select_and_gather_add, jlax.ge_p), in_axes)(t, x)
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


def test_select_and_gather_add_refuses_another_select_primitive():
    x = np.ones((4,), np.float32)
    with pytest.raises(TypeError, match="select_and_gather_add: select_prim"):
        _windowed.select_and_gather_add(x, x, ri.lax.add_p, (2,), (2,), ((0, 0),), (1,), (1,))


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
@pytest.mark.parametrize(
    "shape_axes", [((2, 3), (0, 1)), ((2, 3, 4), (0, 2)), ((2, 3, 4, 2), (0, 2, 3))], ids=str
)
def test_delta_as_jax(backend, dtype, shape_axes):
    shape, axes = shape_axes
    ours = _shapes.delta(dtype, shape, axes)
    theirs = jax_lax_internal._delta(dtype, shape, axes)
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    assert np.asarray(ours).dtype == np.asarray(theirs).dtype
    jitted = ri.jit(lambda z: z + _shapes.delta(dtype, shape, axes))(np.zeros(shape, dtype))
    np.testing.assert_array_equal(np.asarray(jitted), np.asarray(theirs))


@pytest.mark.parametrize("kind", ["float", "np.array", "np.float32", "bool"])
def test_asarray_binds_nothing_and_types_as_jax(backend, kind):
    make = {
        "float": lambda: 1.0,
        "np.array": lambda: np.array(1.0),
        "np.float32": lambda: np.float32(1.0),
        "bool": lambda: True,
    }[kind]
    ours, theirs = _shapes.asarray(make()), jax_lax_internal.asarray(make())
    assert isinstance(ours, ri.Array)
    assert (ours.dtype, ours.weak_type) == (theirs.dtype, theirs.aval.weak_type)
    assert len(ri.make_jaxpr(_shapes.asarray)(make()).eqns) == 0
    assert len(ri.make_jaxpr(lambda: _shapes.asarray(make()))().eqns) == 0
    with pytest.raises(TypeError, match="asarray: expected ArrayLike"):
        _shapes.asarray("a string")
