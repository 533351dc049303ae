"""Programs of JAX's tests/lax_numpy_indexing_test.py against JAX 0.10.2
(issue 29): where refimpl's ``x[idx]`` and ``x.at[idx]`` differed in which
exception is raised or in what runs."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp


def _exception(f):
    try:
        f()
    except Exception as e:  # noqa: BLE001 (the type is the comparison)
        return type(e)
    return None


ERRORS = {
    # a traced scalar index into an axis of size 0
    "traced_index_into_empty_axis": (
        lambda j, n: j.jit(lambda i: n.ones((2, 0))[0, i])(0),
        IndexError,
    ),
    # index arrays that do not broadcast together
    "index_arrays_not_broadcastable": (
        lambda j, n: n.arange(36).reshape(2, 3, 6)[
            np.array([[1, 0, 1], [0, 1, 1]], bool), np.array([1, 0, 1, 1, 0, 0], bool)
        ],
        ValueError,
    ),
    "set_index": (lambda j, n: n.zeros(3)[{0}], IndexError),
    "object_index": (lambda j, n: n.zeros(3)[object()], IndexError),
    "float_index": (lambda j, n: n.zeros(3)[0.0], TypeError),
    "python_int_beyond_int32": (lambda j, n: n.arange(5.0)[2**40], OverflowError),
    "negative_python_int_beyond_int32": (lambda j, n: n.arange(5.0)[-(2**40)], OverflowError),
    # x.at[i].get() reads as x[i] does (its updates and get(mode="fill") do not check)
    "at_get_python_int_beyond_int32": (lambda j, n: n.arange(5.0).at[2**40].get(), OverflowError),
    "at_get_negative_python_int_beyond_int32": (
        lambda j, n: n.arange(5.0).at[-(2**31) - 1].get(),
        OverflowError,
    ),
    "array_fill_value": (
        lambda j, n: n.arange(3.0).at[5].get(mode="fill", fill_value=n.array([1.0, 2.0])),
        ValueError,
    ),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_error_class_as_jax(backend, name):
    program, cls = ERRORS[name]
    assert _exception(lambda: program(jax, jnp)) is cls
    assert _exception(lambda: program(ri, rnp)) is cls


@pytest.mark.parametrize(
    "program",
    [
        lambda j, n: j.jit(lambda x, i: x[i])(n.zeros(3), np.array([True, True, False])),
        lambda j, n: j.jit(lambda x, i: x.at[i].set(1.0))(
            n.zeros(3), np.array([True, False, True])
        ),
        lambda j, n: j.jit(lambda x, b: x[b])(n.arange(3), True),
    ],
)
def test_traced_boolean_mask_is_a_non_concrete_boolean_index_error(backend, program):
    with pytest.raises(jax.errors.NonConcreteBooleanIndexError):
        program(jax, jnp)
    with pytest.raises(ri.errors.NonConcreteBooleanIndexError):
        program(ri, rnp)
    assert issubclass(ri.errors.NonConcreteBooleanIndexError, IndexError)


@pytest.mark.parametrize(
    "program",
    [
        # mode="fill" for an update is JAX's fill-or-drop: out-of-range updates drop
        lambda j, n: n.arange(5.0).at[n.array([1, 10, -10])].set(7.0, mode="fill"),
        lambda j, n: n.arange(5.0).at[n.array([1, 1, 9])].add(2.0, mode="fill"),
        lambda j, n: j.jit(lambda x, i: x.at[i].max(3.0, mode="fill"))(
            n.arange(5.0), n.array([0, 7])
        ),
        # an empty list inside a tuple is an empty integer index
        lambda j, n: n.arange(3)[([],)],
        lambda j, n: n.arange(12).reshape(3, 4)[[], 1:],
    ],
)
def test_runs_as_jax(backend, program):
    want = program(jax, jnp)
    got = program(ri, rnp)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


# --- jax.ops segment reductions ------------------------------------------------------

_DATA = np.array([5, 1, 7, 2, 3, 4, 1, 3], np.float32)


@pytest.mark.parametrize("reducer", ["segment_sum", "segment_prod", "segment_min", "segment_max"])
@pytest.mark.parametrize(
    "ids, kwargs",
    [
        # negative ids and ids past num_segments drop (not counted from the end)
        ([0, 4, 8, 1, 2, -6, -1, 3], {"num_segments": 4}),
        ([3, 3, 3, 4, 5, 5, -7, -6], {}),  # num_segments from the largest id
        ([0, 0, 1, 1, 2, 2, 3, 3], {"num_segments": 6, "indices_are_sorted": True}),
        ([0, 5, 1, 2, -1, 1, 0, 9], {"num_segments": 3, "mode": "clip"}),
        ([0, 1, 0, 1, 2, 2, 1, 0], {"num_segments": 3, "bucket_size": 2}),
    ],
)
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int8])
def test_segment_reductions_as_jax(backend, reducer, ids, kwargs, dtype):
    data, segment_ids = _DATA.astype(dtype), np.array(ids, np.int32)
    want = getattr(jax.ops, reducer)(data, segment_ids, **kwargs)
    got = getattr(ri.ops, reducer)(data, segment_ids, **kwargs)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    if "num_segments" in kwargs:
        jitted = ri.jit(lambda d, i: getattr(ri.ops, reducer)(d, i, **kwargs))(data, segment_ids)
        np.testing.assert_array_equal(np.asarray(jitted), np.asarray(want))


@pytest.mark.parametrize("reducer", ["segment_sum", "segment_min", "segment_max"])
def test_segment_reduction_gradients_as_jax(backend, reducer):
    ids = np.array([0, 0, 1, 2, 2], np.int32)
    x = np.array([1.0, 1.0, 2.0, 3.0, 5.0], np.float32)
    want = jax.grad(lambda d: getattr(jax.ops, reducer)(d, ids, 3).sum())(x)
    got = ri.grad(lambda d: getattr(ri.ops, reducer)(d, ids, 3).sum())(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("lib", [jax, ri], ids=["jax", "refimpl"])
def test_segment_reduction_errors_as_jax(backend, lib):
    concretization = jax.errors if lib is jax else ri.errors
    with pytest.raises(concretization.ConcretizationTypeError):
        lib.jit(lambda d, i: lib.ops.segment_sum(d, i))(np.ones(3), np.array([0, 1, 1]))
    with pytest.raises(TypeError):
        lib.ops.segment_sum([1.0, 2.0], [0, 0], 2)
    with pytest.raises(ValueError):
        lib.ops.segment_sum(np.ones(3), np.array([0, 1, 1]), num_segments=-1)


# --- gradients of x.at[idx].multiply/divide/power where no index repeats ---------------


@pytest.mark.parametrize(
    "program",
    [
        lambda j, n: j.grad(lambda x, y: x.at[1:3].multiply(y).sum(), (0, 1))(
            n.arange(4.0), n.array([2.0, 3.0])
        ),
        lambda j, n: j.grad(lambda x, y: (x.at[1].multiply(y) ** 2).sum(), (0, 1))(
            n.arange(4.0), 3.0
        ),
        lambda j, n: j.grad(
            lambda x, y: x.at[n.array([2, 0])].multiply(y, unique_indices=True).sum(), (0, 1)
        )(n.arange(4.0), n.array([2.0, 3.0])),
        lambda j, n: j.grad(lambda x, y: x.at[1:3].divide(y).sum(), (0, 1))(
            n.arange(4.0), n.array([2.0, 3.0])
        ),
        lambda j, n: j.grad(lambda x, y: x.at[::2].power(y).sum(), (0, 1))(
            n.arange(1.0, 5.0), n.array([2.0, 3.0])
        ),
        lambda j, n: j.jvp(
            lambda x, y: x.at[0:2].multiply(y),
            (n.arange(4.0), n.array([2.0, 3.0])),
            (n.ones(4), n.ones(2)),
        ),
    ],
)
def test_multiply_updates_differentiable_without_repeats_as_jax(backend, program):
    want = program(jax, jnp)
    got = program(ri, rnp)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)


# --- x.at[...]'s wrap_negative_indices and out_sharding keywords -----------------------


@pytest.mark.parametrize(
    "program",
    [
        lambda j, n: n.arange(3).at[-1].set(9, wrap_negative_indices=False),
        lambda j, n: n.arange(3.0).at[n.array([-1, 1, -4])].add(9.0, wrap_negative_indices=False),
        lambda j, n: (
            n.arange(3.0).at[n.array([-1, 1])].add(9.0, wrap_negative_indices=False, mode="clip")
        ),
        lambda j, n: (
            n.arange(3.0)
            .at[n.array([-1])]
            .get(wrap_negative_indices=False, mode="fill", fill_value=-5.0)
        ),
        lambda j, n: j.jit(
            lambda x, i: x.at[i].get(wrap_negative_indices=False, mode="fill", fill_value=-5.0)
        )(n.arange(3.0), n.array([-1, 2])),
        lambda j, n: j.jit(lambda x, i: x.at[i].set(7.0, wrap_negative_indices=False))(
            n.arange(3.0), -1
        ),
        lambda j, n: n.arange(3).at[1].get(out_sharding=None),
    ],
)
def test_at_keywords_as_jax(backend, program):
    want = program(jax, jnp)
    got = program(ri, rnp)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


# --- Python scalar updates into narrower dtypes -----------------------------------------


@pytest.mark.parametrize(
    "program",
    [
        lambda j, n: n.zeros(3, n.int8).at[0].add(1),
        lambda j, n: n.zeros(3, n.int8).at[0].add(1000),  # wraps in int8, as JAX
        lambda j, n: n.zeros(3, n.float16).at[0].add(1.5),
        lambda j, n: n.ones(3, n.uint8).at[0:2].multiply(3),
        lambda j, n: n.zeros(3, n.int16).at[0].max(7),
        lambda j, n: n.zeros(3, n.bfloat16).at[1].min(-2.0),
        lambda j, n: n.zeros(3, n.int8).at[1].subtract(2),
        lambda j, n: j.jit(lambda x: x.at[1].add(3))(n.zeros(3, n.int8)),
    ],
)
def test_python_scalar_updates_of_narrow_dtypes_as_jax(backend, program):
    want = program(jax, jnp)
    got = program(ri, rnp)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
