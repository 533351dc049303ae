"""Typed key arrays as arrays of keys, against JAX 0.10.2: the structural
functions of ``numpy`` and ``lax`` take them (refimpl/extended_arrays.py),
their array methods, ``issubdtype``, ``jax_legacy_prng_key`` and the errors
JAX raises (JAX's KeyArrayTest / JnpWithKeyArrayTest programs)."""

from __future__ import annotations

import copy
import warnings
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.lax as rlax
import refimpl.numpy as rnp
from refimpl import dtypes_api
from refimpl import random as rr


def _keys(lib, n, shape=None, seed=123):
    keys = lib.random.split(lib.random.key(seed), n)
    return keys if shape is None else keys.reshape(shape)


def _same_keys(got, want):
    assert isinstance(got, rr.PRNGKeyArray), type(got)
    assert got.shape == want.shape
    np.testing.assert_array_equal(
        np.asarray(rr.key_data(got)), np.asarray(jax.random.key_data(want))
    )


# (id, program over a library namespace with .numpy/.lax/.random, its key arguments)
_NUMPY_CASES = [
    ("reshape", lambda L: L.numpy.reshape(_keys(L, 4), (2, 2))),
    ("ravel", lambda L: L.numpy.ravel(_keys(L, 4, (2, 2)))),
    ("tile", lambda L: L.numpy.tile(L.random.key(123), 3)),
    ("tile_2d", lambda L: L.numpy.tile(_keys(L, 2), (2, 2))),
    ("concatenate", lambda L: L.numpy.concatenate([_keys(L, 2), _keys(L, 3, seed=5)], axis=0)),
    ("concatenate_none", lambda L: L.numpy.concatenate([_keys(L, 4, (2, 2)), _keys(L, 2)], None)),
    ("stack", lambda L: L.numpy.stack(_keys(L, 2), axis=0)),
    ("stack_neg", lambda L: L.numpy.stack([_keys(L, 3), _keys(L, 3, seed=4)], axis=-1)),
    ("broadcast_to", lambda L: L.numpy.broadcast_to(L.random.key(123), (3,))),
    ("expand_dims", lambda L: L.numpy.expand_dims(_keys(L, 6, (2, 3)), axis=1)),
    ("expand_dims_neg", lambda L: L.numpy.expand_dims(_keys(L, 6, (2, 3)), axis=-1)),
    ("broadcast_arrays", lambda L: L.numpy.broadcast_arrays(L.random.key(1), _keys(L, 3))[0]),
    ("append", lambda L: L.numpy.append(_keys(L, 4), L.random.key(123))),
    ("array", lambda L: L.numpy.array(L.random.key(123))),
    ("asarray", lambda L: L.numpy.asarray(_keys(L, 2))),
    ("zeros_like", lambda L: L.numpy.zeros_like(_keys(L, 2))),
    ("ones_like", lambda L: L.numpy.ones_like(_keys(L, 2))),
    ("full_like", lambda L: L.numpy.full_like(_keys(L, 2), 100)),
    ("full_like_key", lambda L: L.numpy.full_like(_keys(L, 2), L.random.key(42))),
    ("zeros", lambda L: L.numpy.zeros((2,), dtype=L.random.key(0).dtype)),
    ("full_key", lambda L: L.numpy.full((2,), L.random.key(42), dtype=L.random.key(0).dtype)),
    ("transpose", lambda L: L.numpy.transpose(_keys(L, 6, (2, 3)))),
    ("squeeze", lambda L: L.numpy.squeeze(_keys(L, 3, (1, 3)))),
    ("swapaxes", lambda L: L.numpy.swapaxes(_keys(L, 6, (2, 3)), 0, 1)),
    ("flip", lambda L: L.numpy.flip(_keys(L, 6, (2, 3)), -1)),
    ("getitem_mask", lambda L: _keys(L, 3)[np.array([False, True, True])]),
    ("at_get", lambda L: _keys(L, 3).at[np.array([0, 2])].get()),
    ("at_set", lambda L: _keys(L, 3).at[1:].set(L.random.key(7))),
    ("T", lambda L: _keys(L, 6, (2, 3)).T),
    ("copy", lambda L: _keys(L, 2).copy()),
    (
        "where",
        lambda L: L.numpy.where(L.numpy.array([True, False, True]), _keys(L, 3), L.random.key(5)),
    ),
]
_LAX_CASES = [
    ("slice_in_dim", lambda L: L.lax.slice_in_dim(_keys(L, 12, (3, 4)), 1, 3)),
    (
        "dynamic_slice_in_dim_int16",
        lambda L: L.lax.dynamic_slice_in_dim(_keys(L, 12, (3, 4)), np.int16(1), 2),
    ),
    (
        "dynamic_update_slice_in_dim",
        lambda L: L.lax.dynamic_update_slice_in_dim(
            _keys(L, 12, (3, 4)), _keys(L, 4, (1, 4), seed=9), np.int16(1), axis=0
        ),
    ),
    (
        "select",
        lambda L: L.lax.select(
            L.numpy.array([[True, False], [False, True], [False, True]]),
            _keys(L, 6, (3, 2)),
            _keys(L, 6, (3, 2), seed=8),
        ),
    ),
    ("select_scalar", lambda L: L.lax.select(True, _keys(L, 3), _keys(L, 3, seed=8))),
    ("slice", lambda L: L.lax.slice(_keys(L, 12, (3, 4)), (1, 0), (3, 4), (1, 2))),
    ("transpose", lambda L: L.lax.transpose(_keys(L, 6, (2, 3)), (1, 0))),
    ("concatenate", lambda L: L.lax.concatenate([_keys(L, 2), _keys(L, 3)], 0)),
    ("broadcast_in_dim", lambda L: L.lax.broadcast_in_dim(_keys(L, 3), (2, 3), (1,))),
    ("rev", lambda L: L.lax.rev(_keys(L, 3), (0,))),
]


class _Lib:
    def __init__(self, numpy, lax, random):
        self.numpy, self.lax, self.random = numpy, lax, random


_PROGRAMS = [c[1] for c in _NUMPY_CASES + _LAX_CASES]
_IDS = [f"np.{c[0]}" for c in _NUMPY_CASES] + [f"lax.{c[0]}" for c in _LAX_CASES]
_JAX = _Lib(jnp, jax.lax, jax.random)
_RI = _Lib(rnp, rlax, rr)


@pytest.mark.parametrize("program", _PROGRAMS, ids=_IDS)
def test_structural_functions_take_key_arrays(backend, program):
    want = program(_JAX)
    _same_keys(program(_RI), want)


@pytest.mark.parametrize("program", _PROGRAMS, ids=_IDS)
def test_structural_functions_take_key_arrays_under_jit(backend, program):
    # the keys come in as an argument, so the function sees traced key data
    want = jax.jit(lambda k: program(_JAX))(jax.random.key(0))
    _same_keys(ri.jit(lambda k: program(_RI))(rr.key(0)), want)


def test_key_array_program_under_vmap_and_scan(backend):
    def body(lib, keys):
        return lib.lax.scan(lambda c, k: (c, k.T), None, keys)[1]

    want = jax.vmap(lambda k: body(_JAX, k))(_keys(_JAX, 24, (2, 3, 4)))
    _same_keys(ri.vmap(lambda k: body(_RI, k))(_keys(_RI, 24, (2, 3, 4))), want)


def test_key_array_methods():
    keys = _keys(_RI, 10)
    for dup in (
        copy.copy(keys),
        copy.deepcopy(keys),
        keys.copy(),
        ri.jit(lambda k: k.copy())(keys),
    ):
        np.testing.assert_array_equal(np.asarray(rr.key_data(dup)), np.asarray(rr.key_data(keys)))
    assert keys.itemsize == jax.random.key(0).itemsize == 8
    assert keys.flatten().shape == (10,)
    assert keys.block_until_ready() is keys
    assert keys.copy_to_host_async() is None
    assert keys.is_deleted() is False
    keys.delete()
    assert keys.is_deleted() is True


def test_issubdtype_of_key_dtype():
    # the same answers as JAX, as Python bools
    pairs = [
        (jnp.issubdtype, jax.random.key(0).dtype, jax.dtypes),
        (rnp.issubdtype, rr.key(0).dtype, dtypes_api),
    ]
    answers = []
    for issubdtype, dtype, dts in pairs:
        tests = [dtype, dts.prng_key, dts.extended, np.generic, np.integer, np.number]
        answers.append(
            [issubdtype(dtype, t) for t in tests] + [issubdtype(np.float32, dts.extended)]
        )
    assert answers[0] == answers[1]
    assert all(type(a) is bool for a in answers[1])
    assert type(rnp.issubdtype(np.float32, np.floating)) is bool


@pytest.mark.parametrize("mode", ["warn", "error"])
def test_legacy_prng_key_flag(backend, mode):
    def outcome(lib, context, key):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with context(mode):
                try:
                    lib.random.uniform(key)
                    error = None
                except (TypeError, ValueError) as e:
                    error = type(e)
        return error, [w.category for w in caught if "Legacy uint32" in str(w.message)]

    assert outcome(_RI, ri.legacy_prng_key, rr.PRNGKey(0)) == outcome(
        _JAX, jax.legacy_prng_key, jax.random.PRNGKey(0)
    )
    # typed keys and invalid key data are unaffected by the flag (TypeError first)
    assert outcome(_RI, ri.legacy_prng_key, rr.key(0)) == (None, [])
    bad = (rnp.zeros(1, "float32"), jnp.zeros(1, "float32"))
    assert outcome(_RI, ri.legacy_prng_key, bad[0]) == outcome(_JAX, jax.legacy_prng_key, bad[1])


def test_legacy_prng_key_config_names():
    assert ri.config.legacy_prng_key == jax.config.jax_legacy_prng_key == "allow"
    with pytest.raises(ValueError):
        ri.config.update("legacy_prng_key", "sometimes")


def _exception(f):
    try:
        f()
    except Exception as e:  # noqa: BLE001 (the type is the comparison)
        return type(e)
    return None


@pytest.mark.parametrize(
    "program",
    [
        lambda L: L.lax.convert_element_type(L.random.key(0), np.int32),
        lambda L: L.random.key(0, impl=object()),
        lambda L: L.numpy.add(L.random.key(0), 1),
        lambda L: -L.random.key(0),
    ],
    ids=["convert_element_type", "impl_object", "add", "neg"],
)
def test_key_array_errors_are_jax_types(program):
    want = _exception(partial(program, _JAX))
    assert want is not None
    assert _exception(partial(program, _RI)) is want


def test_array_of_large_python_ints_in_requested_dtype(backend):
    data = [3200590325, 713258242]
    _same = np.testing.assert_array_equal
    _same(np.asarray(rnp.array(data, dtype="uint32")), np.asarray(jnp.array(data, dtype="uint32")))
    assert rnp.array(data, dtype="uint32").dtype == np.uint32
    with pytest.raises(OverflowError):
        rnp.array([2**40], dtype="uint32")
    key = rr.wrap_key_data(rnp.array(data, dtype="uint32"))
    want = jax.random.loggamma(jax.random.wrap_key_data(jnp.array(data, "uint32")), 0.0)
    np.testing.assert_array_equal(np.asarray(rr.loggamma(key, 0.0)), np.asarray(want))


def test_dynamic_slice_in_dim_zeros_take_the_index_dtype(backend):
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    for f in (
        lambda L, i: L.lax.dynamic_slice_in_dim(x, i, 2),
        lambda L, i: L.lax.dynamic_index_in_dim(x, i, 1, keepdims=False),
        lambda L, i: L.lax.dynamic_update_slice_in_dim(x, np.ones((1, 4), np.float32), i, 0),
    ):
        for index in (np.int16(1), np.uint8(2), 1):
            np.testing.assert_array_equal(np.asarray(f(_RI, index)), np.asarray(f(_JAX, index)))
        got = ri.jit(lambda i, f=f: f(_RI, i))(np.int16(1))
        np.testing.assert_array_equal(
            np.asarray(got), np.asarray(jax.jit(lambda i, f=f: f(_JAX, i))(np.int16(1)))
        )
    # as JAX, dynamic_slice itself does not mix an int16 start with Python ints
    with pytest.raises(TypeError):
        jax.lax.dynamic_slice(x, (np.int16(1), 0), (2, 2))
    with pytest.raises(TypeError):
        rlax.dynamic_slice(x, (np.int16(1), 0), (2, 2))


def test_dynamic_slice_of_keys_with_int16_starts(backend):
    def program(L, i):
        keys = _keys(L, 12, (3, 4))
        return L.lax.dynamic_update_slice(
            L.lax.dynamic_slice(keys, (i, i), (2, 2)), _keys(L, 1, (1, 1), seed=3), (i, i)
        )

    want = jax.jit(lambda i: program(_JAX, i))(np.int16(1))
    _same_keys(ri.jit(lambda i: program(_RI, i))(np.int16(1)), want)
    _same_keys(program(_RI, np.int16(1)), program(_JAX, np.int16(1)))


def test_eval_shape_of_key_dtype_structs():
    programs = [
        lambda lib, k: k,
        lambda lib, k: lib.random.split(k, 3),
        lambda lib, k: lib.random.normal(k, (4,)),
    ]
    for program in programs:
        want = jax.eval_shape(
            partial(program, jax), jax.ShapeDtypeStruct((), jax.random.key(0).dtype)
        )
        got = ri.eval_shape(partial(program, ri), ri.ShapeDtypeStruct((), rr.key(0).dtype))
        assert isinstance(got, ri.ShapeDtypeStruct)
        assert (got.shape, str(got.dtype)) == (want.shape, str(want.dtype))
    struct = ri.ShapeDtypeStruct((2,), rr.key(0).dtype)
    assert ri.eval_shape(lambda k: k, struct) == struct
    out = ri.eval_shape(lambda k: rr.split(k), rr.key(1))  # concrete keys in, a struct out
    assert (out.shape, out.dtype) == ((2,), rr.key(0).dtype)


def _key_cotangents(lib):
    keys = lib.random.split(lib.random.key(0), 3)

    @lib.custom_jvp
    def f(kk, x):
        return x * 2.0

    f.defjvp(lambda p, t: (f(*p), t[1] * 2.0))
    both = dict(allow_int=True, argnums=(0, 1))
    return (
        lib.grad(lambda kk, x: x * 1.0, **both)(keys, 2.0),
        lib.jit(lib.grad(lambda kk, x: x * 1.0, **both))(keys, 2.0),
        lib.grad(f, **both)(keys, 2.0),
        lib.vjp(lambda d: d["x"] * 2.0, {"k": keys, "x": 2.0})[1](1.0),
        lib.value_and_grad(lambda kk: 1.0, allow_int=True)(lib.random.key(1))[1],
    )


def test_the_cotangent_of_a_key_array_is_float0_of_its_shape(backend):
    # JAX: float0[key.shape], a leaf; refimpl's key arrays are pytree nodes
    # over their key data, whose float0 cotangent must not come back as a key
    got = ri.tree_util.tree_leaves(_key_cotangents(ri))
    want = jax.tree_util.tree_leaves(_key_cotangents(jax))
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert type(g) is not type(rr.key(0))
        g, w = np.asarray(g), np.asarray(w)
        assert (g.shape, g.dtype) == (w.shape, w.dtype)


@pytest.mark.parametrize("n", [None, 10])
def test_key_array_addressable_shards_as_jax(backend, n):
    def shards(lib):
        keys = lib.random.key(1) if n is None else lib.random.split(lib.random.key(0), n)
        out = []
        for s in keys.addressable_shards:
            data = lib.random.key_data(s.data)
            out.append((s.data.shape, str(s.data.dtype), s.index, np.asarray(data).tolist()))
        return keys.is_fully_addressable, keys.is_fully_replicated, out

    assert shards(ri) == shards(jax)


def test_key_array_size_and_global_shards_as_jax(backend):
    # KeyArrayTest.test_array_impl_attributes reads these on a key array
    def attrs(lib):
        keys = lib.random.split(lib.random.key(0), 10)
        first = keys.addressable_data(0)
        return (
            keys.nbytes,
            keys.on_device_size_in_bytes(),
            len(keys.global_shards),
            str(first.dtype),
            first.shape,
            np.asarray(lib.random.key_data(first)).tolist(),
        )

    assert attrs(ri) == attrs(jax)


@pytest.mark.parametrize("shape", [(), (3,)])
def test_custom_jvp_rule_sees_a_float0_key_tangent(backend, shape):
    # KeyArrayTest.test_key_array_custom_jvp: the rule's tangent of a key
    # argument is float0[key.shape], as JAX's (refimpl passed a key over
    # float0 key data)
    def run(lib):
        seen = []

        def draw(key):
            return lib.random.normal(key.reshape(-1)[0], (3,)).sum()

        def f_raw(x, key):
            return x * draw(key)

        f = lib.custom_jvp(f_raw)

        @f.defjvp
        def f_jvp(primals, tangents):
            (x, key), (x_dot, key_dot) = primals, tangents
            seen.append((type(key_dot).__name__ == "PRNGKeyArray", key_dot.shape, key_dot.dtype))
            return x * draw(key), x_dot * draw(key)

        key = lib.random.key(28)
        if shape:
            key = lib.random.split(key, shape)
        grads = [float(lib.grad(f)(0.5, key)), float(lib.jit(lib.grad(f))(0.5, key))]
        return grads, seen

    got, want = run(ri), run(jax)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    assert got[1] == [(False, shape, ri.dtypes.float0)] * 2
    assert [(k, s, np.dtype(d)) for k, s, d in want[1]] == got[1]


def _issubdtype_outcome(fn, a, b):
    try:
        return fn(a, b)
    except (TypeError, ValueError) as e:
        return type(e)


@pytest.mark.parametrize(
    "case",
    ["key_array", "key_array_extended", "key_array_as_second", "numpy_array", "jnp_array"],
)
def test_issubdtype_of_an_array_against_key_types_as_jax(backend, case):
    # JAX converts a dtype argument with np.dtype: a key array cannot be
    # (ValueError), a NumPy array is no dtype (TypeError); refimpl answered False
    def args(lib, dts):
        return {
            "key_array": (lib.random.key(0), dts.prng_key),
            "key_array_extended": (lib.random.key(0), dts.extended),
            "key_array_as_second": (lib.random.key(0).dtype, lib.random.key(0)),
            "numpy_array": (np.zeros(3), dts.prng_key),
            "jnp_array": (lib.numpy.zeros(3), dts.prng_key),
        }[case]

    want = _issubdtype_outcome(jnp.issubdtype, *args(_JAX, jax.dtypes))
    assert _issubdtype_outcome(rnp.issubdtype, *args(_RI, dtypes_api)) == want
    assert _issubdtype_outcome(dtypes_api.issubdtype, *args(_RI, dtypes_api)) == want


@pytest.mark.parametrize("how", ["callback", "single_device_arrays"])
def test_make_array_of_keys_as_jax(backend, how):
    # KeyArrayTest.test_make_array_from_callback / _single_device_arrays
    # (refimpl: 'unsupported dtype object' / 'not a device of the sharding')
    def make(lib):
        devices = lib.devices()[:1]
        mesh = lib.sharding.Mesh(np.array(devices), ("x",))
        sharding = lib.sharding.NamedSharding(mesh, lib.sharding.PartitionSpec("x"))
        if how == "callback":
            ids = lib.numpy.arange(3)
            return lib.make_array_from_callback(
                (3,), sharding, lambda index: lib.vmap(lib.random.key)(ids[index[0]])
            )
        keys = lib.random.split(lib.random.key(0), 3)
        arrays = [lib.device_put(keys, devices[0])]
        return lib.make_array_from_single_device_arrays((3,), sharding, arrays)

    _same_keys(make(ri), make(jax))


@pytest.mark.parametrize(
    "program",
    [
        lambda L: L.numpy.equal(_keys(L, 3), _keys(L, 3)),
        lambda L: L.numpy.not_equal(_keys(L, 3), L.random.key(123)),
        lambda L: L.numpy.equal(_keys(L, 3).at[1].set(L.random.key(9)), _keys(L, 3)),
    ],
    ids=["equal", "not_equal_broadcast", "equal_after_set"],
)
def test_jnp_equal_of_key_arrays_as_jax(backend, program):
    got, want = program(_RI), program(_JAX)
    assert np.asarray(got).dtype == np.bool_
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def _outcome(program, lib):
    try:
        out = program(lib)
    except (TypeError, ValueError, OverflowError) as e:
        return type(e)
    if isinstance(getattr(out, "dtype", None), (jax.dtypes.prng_key, ri.dtypes.ExtendedDtype)) or (
        "key" in str(getattr(out, "dtype", ""))
    ):
        return np.asarray(lib.random.key_data(out)).tolist()
    return np.asarray(out).tolist() if hasattr(out, "shape") else out


@pytest.mark.parametrize(
    "program",
    [
        lambda L: L.random.key(0) == 1,
        lambda L: L.random.key(0) != L.random.PRNGKey(0),
        lambda L: L.random.key(0) == None,  # noqa: E711 -- Python's default: unequal
        lambda L: L.random.key(0) == "a",
        lambda L: L.numpy.equal(_keys(L, 2), 1),
        lambda L: L.numpy.where(True, L.random.key(0), 1),
        lambda L: L.numpy.where(True, L.random.key(0), L.random.key(0, impl="rbg")),
        lambda L: L.numpy.where(_keys(L, 2)),
        lambda L: np.asarray(L.random.key(0)),
        lambda L: L.random.fold_in(L.random.key(0), -1),
        lambda L: L.random.fold_in(L.random.key(0), 2**32),
        lambda L: L.random.fold_in(L.random.PRNGKey(0), -(2**31)),
        lambda L: L.random.fold_in(L.random.key(0), 2**32 - 1),
        lambda L: L.random.fold_in(L.random.key(0), np.int32(-1)),
        lambda L: L.random.fold_in(L.random.key(0), np.int64(2**40)),
        lambda L: L.jit(L.random.fold_in)(L.random.key(0), -1),
    ],
    ids=[
        "key_eq_int", "key_ne_raw_key", "key_eq_none", "key_eq_str", "jnp_equal_int",
        "where_key_int", "where_two_impls", "where_condition_only", "np_asarray",
        "fold_in_negative_int", "fold_in_int_2_32", "fold_in_raw_key_negative",
        "fold_in_int_max", "fold_in_numpy_negative", "fold_in_numpy_wide", "fold_in_jit_negative",
    ],
)  # fmt: skip
def test_key_comparisons_conversions_and_fold_in_data_as_jax(backend, program):
    # JAX: comparing keys with numbers and converting keys to NumPy are
    # TypeErrors, jnp.where mixing keys with other dtypes a ValueError, a
    # Python int fold_in datum outside uint32 an OverflowError (NumPy and
    # traced integers wrap); refimpl answered False, an object array, or wrapped
    assert _outcome(program, ri) == _outcome(program, jax)


def _conversion(program, lib):
    """The key data of the result, or the exception's type and message."""
    try:
        out = program(lib)
    except Exception as e:  # noqa: BLE001 (the type and words are the comparison)
        return type(e), str(e)
    return np.asarray(lib.random.key_data(out)).tolist()


@pytest.mark.parametrize(
    "program",
    [
        lambda L: L.random.key(0).astype(L.numpy.float32),
        lambda L: L.random.key(0).astype(L.random.key(0).dtype),
        lambda L: L.jit(lambda k: k.astype(L.numpy.float32))(L.random.key(0)),
        lambda L: L.jit(lambda k: k.astype(k.dtype))(L.random.key(0)),
        lambda L: L.vmap(lambda k: k.astype(L.numpy.int32))(_keys(L, 2)),
        lambda L: L.numpy.astype(L.random.key(0), L.numpy.uint32),
        lambda L: L.numpy.astype(_keys(L, 2), L.random.key(0).dtype),
        lambda L: L.jit(lambda k: L.numpy.astype(k, np.float32))(L.random.key(0)),
        lambda L: L.lax.convert_element_type(L.random.key(0), L.numpy.float32),
        lambda L: L.lax.convert_element_type(_keys(L, 2), L.random.key(0).dtype),
        lambda L: L.numpy.asarray(L.random.key(0), dtype=L.numpy.float32),
        lambda L: L.numpy.astype(L.numpy.zeros(2, np.uint32), L.random.key(0).dtype),
    ],
    ids=[
        "method_eager", "method_eager_key_dtype", "method_jit", "method_jit_key_dtype",
        "method_vmap", "jnp_astype", "jnp_astype_key_dtype", "jnp_astype_jit", "lax_convert",
        "lax_convert_key_dtype", "jnp_asarray_dtype", "jnp_astype_data_to_key",
    ],
)  # fmt: skip
def test_key_array_astype_and_conversions_as_jax(backend, program):
    # JAX 0.10.2: a key array converts only to its own key dtype (returned as
    # it is); any other dtype is "ValueError: Cannot convert_element_type from
    # key<fry> to float32". A concrete key has no astype method (JAX's eager key
    # array leaves it abstract: NotImplementedError); a traced key's astype is
    # jnp.astype. refimpl: AttributeError, TypeError, the dtype's class in words
    assert _conversion(program, ri) == _conversion(program, jax)


_ABSTRACT_ON_CONCRETE_KEYS = [
    "all", "any", "argmax", "argmin", "argsort", "choose", "clip", "compress", "conj",
    "cumprod", "cumsum", "diagonal", "dot", "item", "max", "mean", "min", "nonzero", "prod",
    "ptp", "repeat", "round", "searchsorted", "sort", "std", "sum", "trace", "var", "view",
]  # fmt: skip


@pytest.mark.parametrize("name", _ABSTRACT_ON_CONCRETE_KEYS + ["real", "imag"])
def test_numeric_members_of_a_concrete_key_array_are_abstract_as_jax(backend, name):
    # JAX 0.10.2's concrete key array leaves jax.Array's numeric members
    # abstract: NotImplementedError "Cannot call abstract method sum" (refimpl:
    # AttributeError)
    for lib in (jax, ri):
        with pytest.raises(NotImplementedError, match=f"Cannot call abstract method {name}$"):
            member = getattr(_keys(lib, 2), name)
            member()


@pytest.mark.parametrize("name", ["sum", "mean", "round", "cumsum", "prod", "max", "std"])
def test_numeric_methods_of_a_traced_key_array_are_type_errors_as_jax(backend, name):
    for lib in (jax, ri):
        with pytest.raises(TypeError):
            lib.jit(lambda k: getattr(k, name)())(_keys(lib, 2))


@pytest.mark.parametrize(
    "program",
    [lambda k: k.reshape(1, 2).squeeze(), lambda k: k.reshape(1, 2).squeeze(0),
     lambda k: k.reshape(2, 1).swapaxes(0, 1)],
    ids=["squeeze", "squeeze_axis", "swapaxes"],
)  # fmt: skip
def test_squeeze_and_swapaxes_methods_of_key_arrays(backend, program):
    _same_keys(program(_keys(ri, 2)), program(_keys(jax, 2)))
