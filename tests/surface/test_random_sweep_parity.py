"""JAX 0.10.2's own random_test.py programs (key arrays, seeds, impl names,
key cotangents, distributions), run on JAX (the oracle) and on refimpl, on
both backends: values bit for bit, dtypes, shapes and error classes."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from refimpl.custom_derivatives import SymbolicZero as RiSymbolicZero

LIBS = {"jax": (jax, jnp), "ri": (ri, rnp)}


def _plain(v):
    """A comparable form: key arrays as (dtype name, key data), arrays as NumPy."""
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, (bool, int, str)) or v is None:
        return v
    dtype = getattr(v, "dtype", None)
    if dtype is not None and "key<" in str(dtype):
        mod = jax.random if isinstance(v, jax.Array) else ri.random
        return (str(dtype), np.asarray(mod.key_data(v)))
    return np.asarray(v)


def _outcome(fn):
    try:
        return "ok", _plain(fn())
    except Exception as e:  # noqa: BLE001 - the outcome is what is compared
        return "raise", type(e)


def _assert_same(got, want, path="out"):
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), (path, got, want)
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            _assert_same(g, w, f"{path}[{i}]")
    elif isinstance(want, tuple):  # a key array
        assert got[0] == want[0], (path, got, want)
        np.testing.assert_array_equal(got[1], want[1], err_msg=path)
    elif isinstance(want, np.ndarray):
        assert got.dtype == want.dtype and got.shape == want.shape, (path, got, want)
        np.testing.assert_allclose(got, want, rtol=1e-5, err_msg=path)
    else:
        assert got == want, (path, got, want)


def _same(lib_fn):
    want = _outcome(lambda: lib_fn(*LIBS["jax"]))
    got = _outcome(lambda: lib_fn(*LIBS["ri"]))
    assert got[0] == want[0], (got, want)
    if want[0] == "raise":
        # the builtin class itself; jax.errors' classes have refimpl.errors' namesakes
        assert got[1].__name__ == want[1].__name__, (got, want)
    else:
        _assert_same(got[1], want[1])


# --- a key output's cotangent in a custom_vjp bwd rule -------------------------------------


def _key_cotangent_seen(lib, np_, keys, symbolic_zeros, jit):
    """JAX's test_keyarray_custom_vjp(_symbolic_zeros): what bwd receives for
    the cotangent of a key output, and the gradient."""
    seen = []

    @lib.custom_vjp
    def f(_, state):
        return state

    def fwd(_, state):
        if symbolic_zeros:
            state = lib.tree.map(lambda x: x.value, state)
        return state, None

    def bwd(_, state_bar):
        ct = state_bar[1]
        seen.append((type(ct).__name__, str(ct.dtype), tuple(ct.shape)))
        return state_bar[0], state_bar

    f.defvjp(fwd, bwd, symbolic_zeros=symbolic_zeros)
    key = lib.random.key(123)
    state = (8.0, key if keys == 0 else lib.random.split(key, keys))
    grad = lib.grad(lambda t: f(t, state)[0])
    g = (lib.jit(grad) if jit else grad)(3.0)
    return [g, seen]


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("symbolic_zeros", [False, True])
@pytest.mark.parametrize("keys", [0, 3])
def test_custom_vjp_bwd_sees_float0_cotangent_of_a_key(backend, keys, symbolic_zeros, jit):
    want = _key_cotangent_seen(jax, jnp, keys, symbolic_zeros, jit)
    got = _key_cotangent_seen(ri, rnp, keys, symbolic_zeros, jit)
    assert float(got[0]) == float(want[0]) == 1.0
    (w_type, w_dtype, w_shape), (g_type, g_dtype, g_shape) = want[1][0], got[1][0]
    # float0 zeros of the key array's shape (a SymbolicZero under symbolic_zeros)
    assert (g_dtype, g_shape) == (w_dtype, w_shape)
    assert (g_type == "SymbolicZero") == (w_type == "SymbolicZero")
    if symbolic_zeros:
        assert g_type == RiSymbolicZero.__name__


# --- float0[key.shape] as the tangent or cotangent of a key, given by the user ------------


def _f0(np_, shape):
    return np.zeros(shape, jax.dtypes.float0)


KEY_TANGENTS = {
    "jvp_split": lambda lib, np_: lib.jvp(
        lambda k: lib.random.split(k), (lib.random.key(0),), (_f0(np_, ()),)
    ),
    "jvp_jit_split": lambda lib, np_: lib.jvp(
        lib.jit(lambda k: lib.random.split(k)), (lib.random.key(0),), (_f0(np_, ()),)
    ),
    "jvp_uniform": lambda lib, np_: lib.jvp(
        lambda x, k: x * lib.random.uniform(k), (1.0, lib.random.key(0)), (1.0, _f0(np_, ()))
    ),
    "jvp_key_data_of_3": lambda lib, np_: lib.jvp(
        lib.random.key_data, (lib.random.split(lib.random.key(0), 3),), (_f0(np_, (3,)),)
    ),
    "jvp_wrong_shape": lambda lib, np_: lib.jvp(
        lambda k: lib.random.split(k), (lib.random.key(0),), (_f0(np_, (2,)),)
    ),
    "linearize_split": lambda lib, np_: lib.linearize(
        lambda k: lib.random.split(k), lib.random.key(0)
    )[1](_f0(np_, ())),
    "vjp_key_output": lambda lib, np_: lib.vjp(lambda t, k: (t, k), 3.0, lib.random.key(1))[1](
        (np_.float32(1.0), _f0(np_, ()))
    ),
    "vjp_keys_output": lambda lib, np_: lib.vjp(
        lambda k: lib.random.split(k, 3), lib.random.key(1)
    )[1](_f0(np_, (3,))),
}


def _tangent_form(v):
    """float0 arrays by shape (their bytes are nothing), the rest as _plain."""
    if isinstance(v, (list, tuple)) and not (
        isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], str)
    ):
        return [_tangent_form(x) for x in v]
    if isinstance(v, np.ndarray) and v.dtype == jax.dtypes.float0:
        return ("float0", np.asarray(v.shape))
    return v


@pytest.mark.parametrize("name", sorted(KEY_TANGENTS))
def test_float0_tangent_of_a_key(backend, name):
    want = _outcome(lambda: KEY_TANGENTS[name](*LIBS["jax"]))
    got = _outcome(lambda: KEY_TANGENTS[name](*LIBS["ri"]))
    assert got[0] == want[0], (got, want)
    if want[0] == "raise":
        assert got[1].__name__ == want[1].__name__, (got, want)
    else:
        _assert_same(_tangent_form(got[1]), _tangent_form(want[1]))


# --- key arrays and seeds, as random_test.py's KeyArrayTest / LaxRandomTest ---------------


def _make_keys(lib, np_, *shape, seed=28, impl="threefry2x32"):
    seeds = seed + np_.arange(int(np.prod(shape)), dtype=np_.uint32)
    return lib.vmap(lambda s: lib.random.key(s, impl=impl))(seeds).reshape(shape)


PROGRAMS = {
    "prng_values": lambda lib, np_: [
        lib.random.randint(lib.random.key(0), (3, 3), 0, 8),
        lib.random.key_data(lib.random.split(lib.random.key(0), 4)),
        lib.random.key_data(lib.random.fold_in(lib.random.PRNGKey(0), 4)),
    ],
    "bits_view": lambda lib, np_: [
        lib.random.bits(lib.random.key(1701), (640 // n,), np_.dtype(f"uint{n}"))
        for n in (8, 16, 32)
    ],
    "bits_int_dtype_error": lambda lib, np_: lib.random.bits(
        lib.random.key(0), (3,), np.dtype("int8")
    ),
    "loggamma_corner": lambda lib, np_: lib.random.loggamma(
        lib.random.wrap_key_data(np_.array([3200590325, 713258242], dtype="uint32")),
        0.0,
        dtype="float32",
    ),
    "seed_int64_negative": lambda lib, np_: lib.random.key_data(lib.random.key(np.int64(-3))),
    "seed_big_int_jit": lambda lib, np_: lib.random.key_data(lib.jit(lib.random.key)(2**31 + 99)),
    "rbg_keys": lambda lib, np_: [
        lib.random.split(lib.random.key(3, impl="rbg")),
        lib.random.fold_in(lib.random.key(3, impl="unsafe_rbg"), 4),
        lib.random.uniform(lib.random.key(3, impl="rbg"), (3,)),
    ],
    "impl_name_error": lambda lib, np_: lib.random.key(42, impl="unlikely name"),
    "key_as_seed": lambda lib, np_: lib.random.key(_make_keys(lib, np_)),
    "gather_fill_rbg": lambda lib, np_: lib.jit(lambda x: x.at[100].get(mode="fill"))(
        _make_keys(lib, np_, 4, impl="rbg")
    ),
    "indexing_nd": lambda lib, np_: [
        _make_keys(lib, np_, 2, 3)[None, 0, ..., 1, None],
        _make_keys(lib, np_, 2, 3)[..., 1:, None],
    ],
    "too_many_indices": lambda lib, np_: _make_keys(lib, np_, 2, 3)[0, 1, None, 2],
    "add_key_error": lambda lib, np_: np_.add(lib.random.key(1), 1),
    "full_like_key": lambda lib, np_: np_.full_like(
        lib.random.split(lib.random.key(789543)), lib.random.key(42)
    ),
    "categorical_replace_false": lambda lib, np_: lib.random.categorical(
        lib.random.key(11), np_.zeros((3, 5)), shape=(2, 3), replace=False
    ),
    # random_test's test_numpy_construction: NumPy key data is put on the device
    "wrap_numpy_key_data": lambda lib, np_: [
        (lambda k: [k.device == lib.devices()[0], k.devices() == {lib.devices()[0]}, k])(
            lib.random.wrap_key_data(np.array([42, 173], np.uint32), impl="threefry2x32")
        ),
        isinstance(
            lib.random.wrap_key_data(np.array([42, 173], np.uint32)).sharding,
            lib.sharding.SingleDeviceSharding,
        ),
    ],
    # test_array_impl_attributes: a key array's buffer is its key data's
    "key_unsafe_buffer_pointer": lambda lib, np_: (
        lambda k: k.unsafe_buffer_pointer() == lib.random.key_data(k).unsafe_buffer_pointer()
    )(_make_keys(lib, np_, 10)),
    "permutation_jit_error": lambda lib, np_: lib.jit(lib.random.permutation)(
        lib.random.key(0), 10
    ),
}


# random_lax_test.py: the derivative of truncated_normal's bounds (JAX stops
# the gradient at its nextafter clip), split's num as a concrete 0-d array
KEY = 7
LAX_PROGRAMS = {
    "truncated_normal_grad_lower": lambda lib, np_: lib.grad(
        lambda lo: lib.random.truncated_normal(lib.random.key(KEY), lo, 1.0).sum()
    )(-0.5),
    "truncated_normal_grad_both": lambda lib, np_: lib.grad(
        lambda lo, hi: lib.random.truncated_normal(lib.random.key(KEY), lo, hi, (3,)).sum(),
        (0, 1),
    )(-0.5, 0.7),
    "truncated_normal_jit_grad": lambda lib, np_: lib.jit(
        lib.grad(lambda lo: lib.random.truncated_normal(lib.random.key(KEY), lo, 1.0, (4,)).sum())
    )(-2.5),
    "truncated_normal_jvp": lambda lib, np_: lib.jvp(
        lambda lo: lib.random.truncated_normal(lib.random.key(KEY), lo, 1.0, (2,)), (0.2,), (1.0,)
    ),
    "split_num_0d_array": lambda lib, np_: lib.random.split(lib.random.key(KEY), np_.array(3)),
    "split_num_int32_scalar": lambda lib, np_: lib.random.split(
        lib.random.PRNGKey(KEY), np_.int32(2)
    ),
    "split_num_tuple_of_arrays": lambda lib, np_: lib.random.split(
        lib.random.key(KEY), (np_.array(2), 3)
    ),
    "split_num_1d_array_error": lambda lib, np_: lib.random.split(
        lib.random.key(KEY), np_.array([3])
    ),
    "split_num_float_error": lambda lib, np_: lib.random.split(lib.random.key(KEY), 3.0),
    # uniform's minval/maxval of a shape that does not broadcast: JAX's TypeError
    # (a ValueError for a 0-d shape); the other samplers' ValueError
    "uniform_minval_shape_error": lambda lib, np_: lib.random.uniform(
        lib.random.key(KEY), (3,), minval=np_.zeros(2)
    ),
    "uniform_maxval_rank_error": lambda lib, np_: lib.random.uniform(
        lib.random.key(KEY), (3,), maxval=np_.ones((2, 3))
    ),
    "uniform_minval_rank_error": lambda lib, np_: lib.random.uniform(
        lib.random.key(KEY), (3,), minval=np_.zeros((2, 3))
    ),
    "uniform_0d_shape_error": lambda lib, np_: lib.random.uniform(
        lib.random.key(KEY), (), minval=np_.zeros(3)
    ),
    "randint_shape_error": lambda lib, np_: lib.random.randint(
        lib.random.key(KEY), (3,), np_.zeros(2, "int32"), 5
    ),
}


@pytest.mark.parametrize("name", sorted(LAX_PROGRAMS))
def test_random_lax_test_program_agrees(backend, name):
    _same(LAX_PROGRAMS[name])


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_random_test_program_agrees(backend, name):
    _same(PROGRAMS[name])
