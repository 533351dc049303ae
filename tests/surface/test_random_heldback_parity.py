# ruff: noqa: B023  (the lambdas are called within their loop iteration)
"""JAX 0.10.2's tests/random_test.py, held back (issue 29): its PrngTest,
KeyArrayTest and JnpWithKeyArrayTest programs (typed and raw keys, the three
implementations by ``default_prng_impl`` and ``impl=``, seeds, key data
round trips, key arrays through ``jit``/``vmap``/``scan``/``lax`` structural
operations and the ``jnp`` functions that take them, the known values of the
default ``threefry_partitionable=True`` bits), call conventions adapted, run
on JAX (the oracle, live) and on refimpl on both backends.

Compared: a key array by its dtype's name, shape and key data; an array by
dtype, weak type, shape and values (floats to a tolerance); an exception by
its class's name. And the one class the sweep found: ``jax.config.update``
of a flag refimpl follows at one value only (``jax_threefry_partitionable``,
``jax_numpy_rank_promotion``, ``jax_numpy_dtype_promotion``) to another value
was recorded and ignored, so JAX's programs silently drew other bits.
"""

from __future__ import annotations

import math
import zlib
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp

LIBS = {"jax": (jax, jnp), "ri": (ri, rnp)}


def _form(v):
    if isinstance(v, (list, tuple)):
        return [_form(x) for x in v]
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    lib = ri if not isinstance(v, jax.Array) else jax
    if lib.numpy.issubdtype(v.dtype, lib.dtypes.prng_key):
        return ("key", str(v.dtype), tuple(v.shape), np.asarray(lib.random.key_data(v)))
    return ("array", np.asarray(v), bool(getattr(v, "weak_type", False)))


def _outcome(fn):
    try:
        return "ok", _form(fn())
    except Exception as e:  # noqa: BLE001 - the class is what is compared
        return "raise", type(e).__name__


def _assert_same(got, want, path="out"):
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), (path, got, want)
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            _assert_same(g, w, f"{path}[{i}]")
    elif isinstance(want, tuple) and want[0] == "key":
        assert got[:3] == want[:3], (path, got, want)
        np.testing.assert_array_equal(got[3], want[3], err_msg=path)
    elif isinstance(want, tuple):
        assert got[0] == want[0], (path, got, want)
        g, w = got[1], want[1]
        assert (g.dtype, g.shape, got[2]) == (w.dtype, w.shape, want[2]), (path, got, want)
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=2e-6, atol=1e-6, err_msg=path)
        else:
            np.testing.assert_array_equal(g, w, err_msg=path)
    else:
        assert got == want, (path, got, want)


def _check(program):
    want = _outcome(lambda: program(*LIBS["jax"]))
    got = _outcome(lambda: program(*LIBS["ri"]))
    assert got[0] == want[0], (got, want)
    _assert_same(got[1], want[1])


def _make_keys(lib, np_, *shape, seed=28):
    seeds = seed + np_.arange(math.prod(shape), dtype=np_.uint32)
    return lib.vmap(lib.random.key)(seeds).reshape(shape)


IMPLS = ["threefry2x32", "rbg", "unsafe_rbg"]


def _prng_programs():
    progs = {}
    for kn in ("key", "PRNGKey"):

        def mk(lib, kn=kn):
            return getattr(lib.random, kn)

        progs[f"bits_error_int8_{kn}"] = lambda lib, np_, mk=mk: lib.random.bits(
            mk(lib)(0), (3, 4), np.dtype("int8")
        )
        for impl in IMPLS:

            def selection(lib, np_, mk=mk, impl=impl):
                with lib.default_prng_impl(impl):
                    k = mk(lib)(1701)
                    k1, k2 = lib.random.split(k, 2)
                    bits = [lib.random.bits(k, (3,), np.dtype(f"uint{w}")) for w in (8, 16, 32)]
                    return [k, k1, k2, mk(lib)(42, impl=impl), *bits]

            progs[f"default_impl_{impl}_{kn}"] = selection

        def symmetry(lib, np_, mk=mk):
            key = mk(lib)(72)
            folds = [lib.random.fold_in(key, i) for i in range(3)]
            vfolds = lib.vmap(
                lambda k, _: lib.random.fold_in(k, lib.lax.axis_index("b")),
                in_axes=(None, 0),
                axis_name="b",
            )(key, np_.ones(3))
            return [*folds, vfolds, lib.random.split(key, 3)]

        progs[f"split_fold_in_symmetry_{kn}"] = symmetry
        for seed, typ in [(-1, int), (-3, np.int64), (2**31 + 99, int), (-(2**31) - 100, int)]:
            for jit in (False, True):

                def seeds(lib, np_, mk=mk, seed=seed, typ=typ, jit=jit):
                    f = lib.jit(mk(lib)) if jit else mk(lib)
                    return lib.random.key_data(f(typ(seed)))

                progs[f"seed_{seed}_{typ.__name__}_jit{jit}_{kn}"] = seeds
    progs["key_impl_round_trip"] = lambda lib, np_: [
        [
            lib.random.key(42, impl=lib.random.key_impl(lib.random.key(42, impl=impl))),
            lib.random.wrap_key_data(
                lib.random.key_data(lib.random.key(42, impl=impl)),
                impl=lib.random.key_impl(lib.random.key(42, impl=impl)),
            ),
            str(lib.random.key_impl(lib.random.key(42, impl=impl))),
        ]
        for impl in IMPLS
    ]
    progs["seed_errors"] = lambda lib, np_: [
        _outcome(lambda: lib.random.key(_make_keys(lib, np_)))[0],
        _outcome(lambda: lib.random.PRNGKey(np.arange(4)))[0],
        _outcome(lambda: lib.random.key(np.pi))[0],
        _outcome(lambda: lib.random.key(42, impl="unlikely name"))[0],
    ]
    return progs


def _key_array_programs():
    def k(lib, np_, *shape):
        return _make_keys(lib, np_, *shape)

    return {
        "structural_under_jit": lambda lib, np_: [
            lib.jit(lambda x: lib.lax.slice_in_dim(x, 1, 3))(k(lib, np_, 3, 4)),
            lib.jit(partial(lib.lax.dynamic_slice_in_dim, slice_size=2))(
                k(lib, np_, 3, 4), np.int16(1)
            ),
            lib.jit(partial(lib.lax.dynamic_update_slice_in_dim, axis=0))(
                k(lib, np_, 3, 4), k(lib, np_, 1, 4), np.int16(1)
            ),
            lib.jit(lambda x: x.T)(k(lib, np_, 3, 4)),
            lib.jit(lambda x: x[1, 2:4, 3])(k(lib, np_, 3, 4, 5)),
            lib.jit(lambda x: x[:, 2:4, 3:4])(k(lib, np_, 3, 4, 5)),
            lib.vmap(lib.jit(lambda x: x.T))(k(lib, np_, 3, 4, 5)),
            lib.jit(lambda ks: lib.lax.scan(lambda _, x: (None, x.T), None, ks))(k(lib, np_, 3, 4))[
                1
            ],
            lib.lax.select(True, k(lib, np_, 3), k(lib, np_, 3)),
            lib.jit(lib.lax.select)(
                np_.array([True, False, False, True, False, True]).reshape(3, 2),
                k(lib, np_, 3, 2),
                k(lib, np_, 3, 2),
            ),
        ],
        "indexing_shapes": lambda lib, np_: (
            [
                fn(k(lib, np_, 2, 3)).shape
                for fn in (
                    lambda x: x[None, None, None, 0, None, None, None, 1],
                    lambda x: x[..., 1:, None],
                    lambda x: x[None, 0, ..., 1, None],
                    lambda x: x[:, 1],
                )
            ]
            + [_outcome(lambda: k(lib, np_)[0])[0], _outcome(lambda: k(lib, np_, 2, 3)[0, 1, 2])[0]]
        ),
        "key_data_under_transforms": lambda lib, np_: [
            f(k(lib, np_, 3, 4)).shape
            for f in (
                lib.random.key_data,
                lib.jit(lib.random.key_data),
                lib.vmap(lib.random.key_data),
                lib.vmap(lib.jit(lib.random.key_data)),
            )
        ],
        "eval_shape_and_attributes": lambda lib, np_: [
            lib.eval_shape(lambda x: lib.random.bits(x, (5,), np_.uint16), k(lib, np_)).shape,
            str(lib.eval_shape(lambda x: lib.random.bits(x, (5,), np_.uint16), k(lib, np_)).dtype),
            k(lib, np_).dtype.name,
            k(lib, np_, 10).itemsize,
            k(lib, np_, 2, 3).size,
            k(lib, np_, 2, 3).ndim,
            _outcome(lambda: hash(k(lib, np_)))[0],
            np_.result_type(k(lib, np_)) == k(lib, np_).dtype,
        ],
        "custom_jvp_key_tangent": lambda lib, np_: _custom_jvp_key(lib, k(lib, np_)),
    }


def _custom_jvp_key(lib, key):
    seen = []

    def f_raw(x, key):
        return x * lib.random.normal(key, ())

    f = lib.custom_jvp(f_raw)

    @f.defjvp
    def f_jvp(primals, tangents):
        x, key = primals
        seen.append(tangents[1])
        r = lib.random.normal(key, ())
        return x * r, tangents[0] * r

    out = [lib.grad(f_raw)(0.0, key), lib.grad(f)(0.0, key)]
    return [*out, str(seen[0].dtype), seen[0].shape]


def _jnp_programs():
    progs = {}
    funcs = {
        "reshape": lambda lib, np_, ks: np_.reshape(ks, (2, 2)),
        "tile": lambda lib, np_, ks: np_.tile(ks[0], 3),
        "concatenate": lambda lib, np_, ks: np_.concatenate([ks[:2], ks[2:]], axis=0),
        "broadcast_to": lambda lib, np_, ks: np_.broadcast_to(ks[0], (3,)),
        "expand_dims": lambda lib, np_, ks: np_.expand_dims(ks, 1),
        "broadcast_arrays": lambda lib, np_, ks: np_.broadcast_arrays(ks[0], ks)[0],
        "append": lambda lib, np_, ks: np_.append(ks, ks[0]),
        "ravel": lambda lib, np_, ks: np_.ravel(ks.reshape(2, 2)),
        "stack": lambda lib, np_, ks: np_.stack(ks, axis=0),
        "array": lambda lib, np_, ks: np_.asarray(ks, dtype=ks.dtype),
        "getitem_mask": lambda lib, np_, ks: ks[np.array([False, True, True, False])],
        "at_get": lambda lib, np_, ks: ks.at[np.array([0, 2])].get(),
        "at_set": lambda lib, np_, ks: ks.at[1:3].set(ks[0]),
        "equality": lambda lib, np_, ks: [ks[0] == ks, ks[0] != ks.at[2:].set(ks[0])],
        "zeros_like": lambda lib, np_, ks: np_.zeros_like(ks),
        "full_like": lambda lib, np_, ks: np_.full_like(ks, 100),
        "full_like_key": lambda lib, np_, ks: np_.full_like(ks, ks[1]),
        "ones": lambda lib, np_, ks: np_.ones(ks.shape, dtype=ks.dtype),
        "full_key": lambda lib, np_, ks: np_.full(ks.shape, ks[1], dtype=ks.dtype),
        "add_int_error": lambda lib, np_, ks: np_.add(ks, 1),
        "neg_error": lambda lib, np_, ks: -ks,
        "convert_error": lambda lib, np_, ks: lib.lax.convert_element_type(ks, int),
        "clone": lambda lib, np_, ks: lib.random.clone(ks),
    }
    for name, fn in funcs.items():
        for jit in (False, True):

            def prog(lib, np_, fn=fn, jit=jit):
                ks = lib.random.split(lib.random.key(123), 4)
                return (lib.jit(partial(fn, lib, np_)) if jit else partial(fn, lib, np_))(ks)

            progs[f"{name}_jit{jit}"] = prog
    return progs


_DEFAULT_VALUES = [  # random_test's known-value cases, at the default bits
    ("beta", "rbg", np.float32, {"a": 0.8, "b": 0.9}),
    ("bits", "threefry2x32", np.uint16, {}),
    ("cauchy", "threefry2x32", np.float32, {}),
    ("dirichlet", "threefry2x32", np.float32, {"alpha": np.array([0.5, 0.6, 0.7], "float32")}),
    ("gamma", "threefry2x32", np.float32, {"a": 0.8}),
    ("gumbel", "rbg", np.float32, {}),
    ("loggamma", "threefry2x32", np.float32, {"a": 0.8}),
    ("maxwell", "rbg", np.float32, {}),
    ("normal", "rbg", np.float32, {}),
    ("pareto", "threefry2x32", np.float32, {"b": 0.5}),
    ("poisson", "threefry2x32", np.int32, {"lam": 5}),
    ("randint", "rbg", np.int32, {"minval": 0, "maxval": 10}),
    ("truncated_normal", "threefry2x32", np.float32, {"lower": 0, "upper": 2}),
    ("weibull_min", "rbg", np.float32, {"scale": 1, "concentration": 1}),
]


def _value_programs():
    progs = {}
    for name, impl, dtype, params in _DEFAULT_VALUES:

        def prog(lib, np_, name=name, impl=impl, dtype=dtype, params=params):
            with lib.default_prng_impl(impl):
                key = lib.random.key(zlib.adler32((name + impl).encode()))
                return getattr(lib.random, name)(key, **params, shape=(2,), dtype=dtype)

        progs[f"{name}_{impl}"] = prog
    return progs


PROGRAMS = {
    **{f"prng/{n}": p for n, p in _prng_programs().items()},
    **{f"keys/{n}": p for n, p in _key_array_programs().items()},
    **{f"jnp/{n}": p for n, p in _jnp_programs().items()},
    **{f"values/{n}": p for n, p in _value_programs().items()},
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_random_test_program_agrees(backend, name):
    _check(PROGRAMS[name])


@pytest.mark.parametrize(
    "flag, value",
    [
        ("jax_threefry_partitionable", False),
    ],
)
def test_as_jax_config_update_refuses_a_flag_value_refimpl_does_not_model(flag, value):
    # JAX 0.10.2 draws other bits with jax_threefry_partitionable=False (its
    # random_test's known values); refimpl follows one value, so setting
    # another is NotImplementedError (was recorded and ignored: silently other
    # results). (The numpy promotion modes are modelled now: tests/numpy/
    # test_promotion_modes_parity.py.)
    from refimpl import as_jax

    cfg = as_jax._Config()
    with pytest.raises(NotImplementedError, match=flag[4:]):
        cfg.update(flag, value)
    assert getattr(cfg, flag) == getattr(jax.config, flag)  # still the default
    cfg.update(flag, getattr(jax.config, flag))  # the modelled value is accepted


@pytest.mark.parametrize(
    "shape, index",
    [((), (0,)), ((2, 3), (0, 1, 2)), ((2, 3), (0, 1, None, 2)), ((3,), (np.array([True] * 3), 0))],
)
def test_too_many_indices_counts_the_key_axes(backend, shape, index):
    # random_test's test_key_array_indexing_0d/_nd: the IndexError names the
    # key array's rank and the indexed count, as JAX's (refimpl counted the
    # key data's extra word axis: "1-dimensional, but 2 were indexed" for a 0-d key)
    import re

    def message(lib, np_):
        with pytest.raises(IndexError) as info:
            _make_keys(lib, np_, *shape)[index]
        return re.search(r"\d+-dimensional, but \d+ were indexed", str(info.value)).group()

    assert message(ri, rnp) == message(jax, jnp)


@pytest.mark.parametrize("target", [int, float, "int64", np.uint8, bool])
def test_conversion_error_names_the_canonical_target(backend, target):
    # JnpWithKeyArrayTest.test_errors: lax.convert_element_type(key, int) is
    # JAX's ValueError naming int32 without x64 (refimpl named int64)
    def message(lib, np_):
        with pytest.raises(ValueError) as info:
            lib.lax.convert_element_type(lib.random.key(123), target)
        return str(info.value)

    assert message(ri, rnp) == message(jax, jnp)


@pytest.mark.parametrize(
    "fill, dtype",
    [(0x85A308D3, np.uint32), (2**32 - 1, np.uint32), (2**40, np.int64), (-1, np.uint32)],
)
def test_full_converts_a_python_scalar_straight_to_the_dtype(backend, fill, dtype):
    # testThreefry2x32Large fills jnp.full((n,), 0x85a308d3, jnp.uint32): a
    # Python int beyond int32 is converted straight to the requested dtype, as
    # JAX's (refimpl read it as a weak int32 first: OverflowError)
    def program(lib, np_):
        return [np_.full((3,), fill, dtype), np_.full_like(np_.zeros(2, dtype), fill)]

    _check(program)


def test_extend_random_threefry_2x32_known_values(backend):
    # PrngTest.testThreefry2x32/Large/Empty: jax.extend.random.threefry_2x32,
    # the Random123 reference values (was a missing module under as_jax)
    import jax.extend.random as jxr

    import refimpl.extend.random as rxr

    u = np.iinfo(np.uint32).max

    def program(xr, lib, np_):
        large = np_.concatenate(
            [np_.full((5,), 0x243F6A88, np_.uint32), np_.full((5,), 0x85A308D3, np_.uint32)]
        )
        with lib.disable_jit():
            empty = xr.threefry_2x32(
                (np.uint32(0x13198A2E), np.uint32(0x03707344)), np_.ones((10, 0), np_.uint32)
            )
        return [
            xr.threefry_2x32(np.uint32([0, 0]), np.uint32([0, 0])),
            xr.threefry_2x32(np.uint32([u, u]), np.uint32([u, u])),
            xr.threefry_2x32(
                np.uint32([0x13198A2E, 0x03707344]), np.uint32([0x243F6A88, 0x85A308D3])
            ),
            xr.threefry_2x32((np.uint32(0x13198A2E), np.uint32(0x03707344)), large),
            lib.jit(xr.threefry_2x32)(np.uint32([1, 2]), np_.arange(7, dtype=np_.uint32)),
            empty,
            _outcome(lambda: xr.threefry_2x32(np.uint32([0, 0]), np_.arange(4)))[0],
        ]

    want = _outcome(lambda: program(jxr, jax, jnp))
    got = _outcome(lambda: program(rxr, ri, rnp))
    assert got[0] == want[0] == "ok", (got, want)
    _assert_same(got[1], want[1])
    assert [hex(int(w)) for w in got[1][2][1]] == ["0xc4923a9c", "0x483df7a0"]


@pytest.mark.parametrize("fill", [2**31, 2**40, -(2**40), 2**63, 2**63 - 1, 2**64])
def test_full_of_a_wide_python_int_without_dtype(backend, fill):
    # JAX's full types a Python int fill as the weak default int, wrapped
    # modulo 2**64 (2**64 and beyond: OverflowError); refimpl range-checked it
    # as asarray does (OverflowError for all)
    _check(lambda lib, np_: [np_.full((2,), fill), lib.jit(lambda: np_.full((2,), fill))()])


def _key_leaf_programs():
    """JnpWithKeyArrayTest's two reference paths (``check_shape`` maps each key
    array to ``jnp.ones(keys.shape)``, ``check_against_reference`` to its key
    data, both with ``tree_map``), and the pytree functions around them."""

    def like(lib, np_):
        keys = _make_keys(lib, np_, 3, 2)
        args = (keys, (keys[0], {"k": keys[1, 0]}))
        out = lib.tree_util.tree_map(lambda k: np_.ones(k.shape), args)
        return [out[0], out[1][0], out[1][1]["k"]]

    def against_reference(lib, np_):
        keys = _make_keys(lib, np_, 4)
        data = lib.tree_util.tree_map(lambda k: lib.random.key_data(k), (keys, [keys[1:]]))
        return [np_.concatenate([data[0], data[1][0]]), lib.random.key_data(keys)]

    def leaves_and_structure(lib, np_):
        keys = _make_keys(lib, np_, 2)
        tu = lib.tree_util
        leaves = tu.tree_leaves({"a": keys, "b": [keys[0], 1.0]})
        return [
            len(leaves),
            [tuple(x.shape) for x in leaves if hasattr(x, "shape")],
            tu.tree_structure(keys) == tu.tree_structure(1.0),
            tu.tree_structure((keys, keys)).num_leaves,
            tu.all_leaves([keys, keys[0]]),
            [tuple(x.shape) for _, x in tu.tree_leaves_with_path([keys])],
            lib.tree.reduce(lambda a, k: a + k.size, [keys, keys[1:]], 0),
        ]

    def leaves_through_jit_and_vmap(lib, np_):
        keys = _make_keys(lib, np_, 3)
        shapes = lib.jit(lambda ks: lib.tree_util.tree_map(lambda k: np_.zeros(k.shape), ks))(
            [keys]
        )
        per_key = lib.vmap(lambda k: lib.tree_util.tree_leaves(k)[0].shape == ())(keys)
        return [shapes, per_key, np_.shape(keys), np_.ndim(keys), np_.size(keys)]

    return {
        "check_shape_like": like,
        "check_against_reference": against_reference,
        "leaves_and_structure": leaves_and_structure,
        "leaves_through_jit_and_vmap": leaves_through_jit_and_vmap,
    }


KEY_LEAF_PROGRAMS = _key_leaf_programs()


@pytest.mark.parametrize("name", sorted(KEY_LEAF_PROGRAMS))
def test_key_arrays_are_pytree_leaves_as_jax(backend, name):
    """A typed key array is a leaf of ``jax.tree_util`` (its key data is not),
    on both backends; the transformations still see the key data inside."""
    assert _outcome(lambda: KEY_LEAF_PROGRAMS[name](jax, jnp))[0] == "ok"  # JAX runs each
    _check(KEY_LEAF_PROGRAMS[name])


@pytest.mark.parametrize("sampler", ["normal", "uniform", "bits", "rademacher"])
def test_sampler_takes_the_unsharded_type_sharding_as_no_layout(backend, sampler):
    """``out_sharding=jax.typeof(x).sharding`` of an unsharded ``x`` (over the
    empty abstract mesh, as optax's ``tree_random_like`` passes it) samples as
    without it; ``reshard`` itself refuses that sharding, in JAX too."""

    def program(lib, np_):
        x = np_.ones((2, 3))
        return getattr(lib.random, sampler)(
            lib.random.key(3), (2, 3), out_sharding=lib.typeof(x).sharding
        )

    assert _outcome(lambda: program(jax, jnp))[0] == "ok"
    _check(program)


# (program, exception class, the regex JAX's random_test.py matches)
_JAX_WORDED_ERRORS = {
    "key_as_seed_PRNGKey": (
        lambda lib, np_: lib.random.PRNGKey(lib.random.key(0)),
        TypeError,
        "PRNGKey accepts a scalar seed",
    ),
    "key_as_seed_key": (
        lambda lib, np_: lib.random.key(lib.random.key(0)),
        TypeError,
        "key accepts a scalar seed",
    ),
    "non_scalar_seed": (
        lambda lib, np_: lib.random.PRNGKey(np.arange(4)),
        TypeError,
        "PRNGKey accepts a scalar seed",
    ),
    "invalid_key_data": (
        lambda lib, np_: lib.random.uniform(np_.zeros(3, np_.uint32)),
        TypeError,
        "JAX encountered invalid PRNG key data",
    ),
    "unrecognized_impl": (
        lambda lib, np_: lib.random.key(42, impl="unlikely name"),
        ValueError,
        "unrecognized PRNG implementation",
    ),
    "too_many_key_indices": (
        lambda lib, np_: _make_keys(lib, np_, 2, 3)[0, 1, None, 2],
        IndexError,
        "Too many indices.*",
    ),
    "too_many_array_indices": (lambda lib, np_: np_.ones(3)[0, 1], IndexError, "Too many indices"),
}


@pytest.mark.parametrize("name", sorted(_JAX_WORDED_ERRORS))
def test_errors_random_test_matches_by_its_words(backend, name):
    """random_test.py matches these errors with ``assertRaisesRegex``: the
    class and JAX's words, on JAX and on both backends."""
    program, cls, regex = _JAX_WORDED_ERRORS[name]
    for lib, np_ in (LIBS["jax"], LIBS["ri"]):
        with pytest.raises(cls, match=regex):
            program(lib, np_)
