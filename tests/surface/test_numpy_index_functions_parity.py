"""jnp.ravel_multi_index, unravel_index, choose and isclose as JAX 0.10.2:
ravel_multi_index's dtype argument, 'ignore' mode and result dtype; mode='raise'
under jit is a ConcretizationTypeError (not a silent clip) and a bad entry's
ValueError starts as NumPy's; unravel_index's clipping and float indices;
isclose's treatment of infinite tolerances and of typed keys. Compared with JAX
on both backends."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp


def _same(got, want):
    got_leaves, want_leaves = jax.tree.leaves(got), jax.tree.leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype, (g, w)
        assert g.aval.weak_type == w.aval.weak_type
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


@pytest.mark.parametrize("index_dtype", ["int8", "int16", "int32", "uint8", "uint16"])
@pytest.mark.parametrize("dtype", [None, "int32", "int16"])
@pytest.mark.parametrize("use_jit", [False, True])
def test_ravel_multi_index_dtype(backend, index_dtype, dtype, use_jit):
    index = np.array([0, 1], index_dtype)

    def run(m, np_module):
        fn = lambda i: np_module.ravel_multi_index(i, (2, 3), mode="ignore", dtype=dtype)  # noqa: E731
        return (m.jit(fn) if use_jit else fn)((index, index))

    _same(run(ri, rnp), run(jax, jnp))


@pytest.mark.parametrize("mode", ["wrap", "clip", "ignore"])
@pytest.mark.parametrize("order", ["C", "F"])
def test_ravel_multi_index_modes(backend, mode, order):
    index = (np.array([0, 2, 4], np.int32), np.array([[-1], [3]], np.int32))
    _same(
        rnp.ravel_multi_index(index, (3, 4), mode=mode, order=order),
        jnp.ravel_multi_index(index, (3, 4), mode=mode, order=order),
    )


def test_ravel_multi_index_errors(backend):
    index = (np.array([0, 3]), np.array([1, 1]))
    for np_module in (jnp, rnp):
        with pytest.raises(ValueError, match="^invalid entry"):
            np_module.ravel_multi_index(index, (3, 4))
        with pytest.raises(ValueError):
            np_module.ravel_multi_index((np.float32(1), np.float32(2)), (3, 4))
        with pytest.raises(ValueError):  # int8 cannot hold the flat index 299
            np_module.ravel_multi_index(index, (10, 30), mode="clip", dtype="int8")
    with pytest.raises(jax.errors.ConcretizationTypeError):
        jax.jit(lambda i: jnp.ravel_multi_index(i, (3, 4)))(index)
    with pytest.raises(ri.errors.ConcretizationTypeError):
        ri.jit(lambda i: rnp.ravel_multi_index(i, (3, 4)))(index)


def test_choose_raise_mode(backend):
    a, choices = np.array([0, 2], np.int32), [np.ones(2, np.float32), np.zeros(2, np.float32)]
    for np_module in (jnp, rnp):
        with pytest.raises(ValueError, match="^invalid entry"):
            np_module.choose(a, choices)
    with pytest.raises(jax.errors.ConcretizationTypeError):
        jax.jit(lambda a, c: jnp.choose(a, c))(a, choices)
    with pytest.raises(ri.errors.ConcretizationTypeError):
        ri.jit(lambda a, c: rnp.choose(a, c))(a, choices)


@pytest.mark.parametrize("shape", [(4,), (3, 4), (0, 3), (2, 0)])
@pytest.mark.parametrize("dtype", ["int32", "int8", "uint8", "float32"])
def test_unravel_index(backend, shape, dtype):
    index = np.array([-30, -12, -5, -1, 0, 3, 11, 12, 40], np.int64)
    if dtype == "uint8":
        index = np.abs(index)
    index = index.astype(dtype)
    _same(rnp.unravel_index(index, shape), jnp.unravel_index(index, shape))
    _same(
        ri.jit(lambda i: rnp.unravel_index(i, shape))(index),
        jax.jit(lambda i: jnp.unravel_index(i, shape))(index),
    )


_VALS = np.array([-np.inf, -1.00001, -1.0, -0.0, 0.0, 1e-5, 1.0, np.inf, np.nan], np.float32)


@pytest.mark.parametrize("atol", [0.0, 1e-4, np.inf])
@pytest.mark.parametrize("rtol", [0.0, 1e-4, np.inf])
@pytest.mark.parametrize("equal_nan", [False, True])
def test_isclose_tolerances(backend, atol, rtol, equal_nan):
    x, y = np.meshgrid(_VALS, _VALS)
    kwargs = dict(atol=atol, rtol=rtol, equal_nan=equal_nan)
    _same(rnp.isclose(x, y, **kwargs), jnp.isclose(x, y, **kwargs))
    _same(
        ri.jit(lambda a, b: rnp.isclose(a, b, **kwargs))(x, y),
        jax.jit(lambda a, b: jnp.isclose(a, b, **kwargs))(x, y),
    )


def test_isclose_of_typed_keys(backend):
    got = rnp.isclose(ri.random.split(ri.random.key(0), 3), ri.random.key(0))
    want = jnp.isclose(jax.random.split(jax.random.key(0), 3), jax.random.key(0))
    _same(got, want)
    assert bool(ri.jit(rnp.isclose)(ri.random.key(1), ri.random.key(1)))


# --- sorting, rolling and item (lax_numpy_test's testArgsortDtype ... testRoll, testItem) ---


@pytest.mark.parametrize("dtype", ["int16", "uint32", "int8", "float32"])
def test_argsort_index_dtype(backend, dtype):
    x = np.random.RandomState(1).randn(10).astype(np.float32)
    _same(rnp.argsort(x, dtype=dtype), jnp.argsort(x, dtype=dtype))
    _same(ri.jit(lambda x: rnp.argsort(x, dtype=dtype))(x), jnp.argsort(x, dtype=dtype))


@pytest.mark.parametrize("keys", [np.array([2.0, 1.0, 3.0], np.float32), (1, 2), [np.int32(3)]])
def test_lexsort_of_rank_zero_keys(backend, keys):
    _same(rnp.lexsort(keys), jnp.lexsort(keys))


def test_lexsort_of_a_scalar_is_a_type_error(backend):
    for np_module in (jnp, rnp):
        with pytest.raises(TypeError):
            np_module.lexsort(np.float32(1.0))


@pytest.mark.parametrize("fn", ["partition", "argpartition"])
def test_partition_of_bool_is_a_type_error(backend, fn):
    x = np.array([True, False, True])
    for np_module in (jnp, rnp):
        with pytest.raises(TypeError):
            getattr(np_module, fn)(x, 1)


@pytest.mark.parametrize("shift, axis", [((1, 2), (1,)), ((1, 2), 0), ((2,), (0, 1)), (3, (0, 1))])
def test_roll_broadcasts_shift_and_axis(backend, shift, axis):
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    _same(rnp.roll(x, shift, axis=axis), jnp.roll(x, shift, axis=axis))


@pytest.mark.parametrize("dtype", ["float32", "int8", "bool", "bfloat16", "complex64"])
@pytest.mark.parametrize("args", [(), (5,), (1, 2), ((1, 2),), (-1,)], ids=repr)
def test_item_with_an_index(backend, dtype, args):
    x = np.arange(6).reshape(2, 3).astype(dtype) if args else np.ones((), dtype)
    got, want = rnp.asarray(x).item(*args), jnp.asarray(x).item(*args)
    assert type(got) is type(want) and got == want


def test_item_index_out_of_range(backend):
    for np_module in (jnp, rnp):
        with pytest.raises(IndexError):
            np_module.arange(6).item(6)


# --- take, where, select, block, bincount (testTake ... testBincountNegative) ---


def test_take_index_dtypes(backend):
    x = np.arange(5.0, dtype=np.float32)
    _same(rnp.take(x, np.array([True, False])), jnp.take(x, np.array([True, False])))
    for np_module in (jnp, rnp):
        with pytest.raises(ValueError):
            np_module.take(x, np.array([0.0, 1.0], np.float32))


def test_where_with_one_of_x_and_y_is_a_type_error(backend):
    for np_module in (jnp, rnp):
        with pytest.raises(TypeError):
            np_module.where(np.array([True]), 1)


@pytest.mark.parametrize("cond", [[1, 0, 2], [0.5, 0.0, -1.0], [True, False, True]])
def test_select_reads_conditions_as_truth_values(backend, cond):
    cond = np.array(cond)
    choices = [np.arange(3, dtype=np.int32)]
    _same(rnp.select([cond], choices, -1), jnp.select([cond], choices, -1))


@pytest.mark.parametrize("arrays", [[], [[1, 2], 3], [[np.ones(2)], []]], ids=repr)
def test_block_value_errors(backend, arrays):
    for np_module in (jnp, rnp):
        with pytest.raises(ValueError):
            np_module.block(arrays)


@pytest.mark.parametrize("x_dtype", ["int32", "int8", "bool"])
@pytest.mark.parametrize("weights_dtype", [None, "float32", "int8"])
@pytest.mark.parametrize("length", [None, 8])
def test_bincount_clips_negative_entries_to_bin_zero(backend, x_dtype, weights_dtype, length):
    rng = np.random.RandomState(3)
    x = rng.randint(-4 if x_dtype != "bool" else 0, 7 if x_dtype != "bool" else 2, 12)
    x = x.astype(x_dtype)
    weights = None if weights_dtype is None else rng.randint(1, 5, 12).astype(weights_dtype)
    _same(
        rnp.bincount(x, weights, minlength=3, length=length),
        jnp.bincount(x, weights, minlength=3, length=length),
    )
    if length is not None:
        _same(
            ri.jit(lambda x, w: rnp.bincount(x, w, length=length))(x, weights),
            jax.jit(lambda x, w: jnp.bincount(x, w, length=length))(x, weights),
        )


def test_bincount_weights_of_another_shape(backend):
    for np_module in (jnp, rnp):
        with pytest.raises(ValueError):
            np_module.bincount(np.arange(3), np.ones(2, np.float32))


def test_ediff1d_of_bool_is_a_type_error(backend):
    x = np.array([True, False, True])
    for np_module in (jnp, rnp):
        with pytest.raises(TypeError):
            np_module.ediff1d(x)
    _same(
        rnp.ediff1d(x.astype(np.int8), to_begin=np.int8(5)),
        jnp.ediff1d(x.astype(np.int8), to_begin=np.int8(5)),
    )
