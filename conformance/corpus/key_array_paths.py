"""Typed key arrays as arrays of keys (issue 29, JAX's random tests): the
structural functions of numpy and lax on key arrays (refimpl's physical rules,
refimpl/extended_arrays.py), eagerly and under ``jit``/``vmap``; the key-dtype
``issubdtype``; ``jax_legacy_prng_key``; the argument checks random_lax_test
asserts (permutation's axis, a concrete array as axis, the traced range).

Every row is ``AGREE``: judged by JAX's recording; each one's recorded source
includes the helpers it calls. Results are key data (``random.key_data``),
since a key array itself is not an observable value.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, script_case

TAGS = ["random"]


def _api(ns: Any) -> Any:
    return importlib.import_module(ns.lax_.__name__.split(".")[0])


def _keys(api: Any, n: int, shape: Any = None, seed: int = 123) -> Any:
    keys = api.random.split(api.random.key(seed), n)
    return keys if shape is None else keys.reshape(shape)


def _numpy_structural(ns: Any) -> Any:
    api = _api(ns)
    np_, data = api.numpy, api.random.key_data
    k4, k6 = _keys(api, 4), _keys(api, 6, (2, 3))
    return [
        data(np_.reshape(k4, (2, 2))),
        data(np_.concatenate([k4, _keys(api, 2, seed=5)])),
        data(np_.stack([k4, k4], axis=-1)),
        data(np_.tile(api.random.key(1), (2, 2))),
        data(np_.broadcast_to(api.random.key(1), (3,))),
        data(np_.expand_dims(k6, -1)),
        data(np_.append(k4, api.random.key(9))),
        data(np_.transpose(k6)),
        data(np_.flip(k6, 0)),
        data(np_.full_like(k4, api.random.key(2))),
        data(np_.zeros_like(k4)),
        data(k6.T),
        data(k4.at[np.array([0, 2])].set(api.random.key(3))),
    ]


def _lax_structural_jit(ns: Any) -> Any:
    api = _api(ns)
    lax = api.lax

    def program(keys: Any, i: Any) -> Any:
        parts = [
            lax.slice_in_dim(keys, 1, 3),
            lax.dynamic_slice_in_dim(keys, i, 2),
            lax.dynamic_update_slice_in_dim(keys, keys[:1], i, 0),
            lax.select(np.array([[True, False, True, False]] * 3), keys, keys[::-1]),
            lax.transpose(keys, (1, 0)),
            lax.broadcast_in_dim(keys[0], (2, 4), (1,)),
        ]
        return [api.random.key_data(p) for p in parts]

    return ns.jit(program)(_keys(api, 12, (3, 4)), np.int16(1))


def _vmap_scan_of_keys(ns: Any) -> Any:
    api = _api(ns)

    def body(keys: Any) -> Any:
        out = api.lax.scan(lambda c, k: (c, k.T), None, keys)[1]
        return api.random.key_data(api.numpy.concatenate([out, out], axis=0))

    return api.vmap(body)(_keys(api, 24, (2, 3, 4)))


def _key_dtype_issubdtype(ns: Any) -> Any:
    api = _api(ns)
    dtype = api.random.key(0).dtype
    name = "jax.dtypes" if api.__name__ == "jax" else "refimpl.dtypes_api"
    dts = importlib.import_module(name)
    kinds = [dts.prng_key, dts.extended, np.generic, np.integer, np.number, np.unsignedinteger]
    return [bool(api.numpy.issubdtype(dtype, k)) for k in kinds]


def _legacy_key_error(ns: Any) -> Any:
    api = _api(ns)
    with api.legacy_prng_key("error"):
        return api.random.uniform(api.random.PRNGKey(0))


def _convert_keys(ns: Any) -> Any:
    api = _api(ns)
    return api.lax.convert_element_type(api.random.key(0), np.int32)


def _traced_numeric_methods(ns: Any) -> Any:
    """jax.Array's numeric methods of a traced key array refuse it (TypeError)."""
    api = _api(ns)
    keys = _keys(api, 2)
    return [ns.capture(ns.jit(lambda k, m=m: getattr(k, m)()), keys)
            for m in ("sum", "mean", "round", "cumsum", "prod", "max", "std")]  # fmt: skip


def _astype_keys(ns: Any) -> Any:
    """A key array converts only to its own key dtype; the others are ValueErrors."""
    api = _api(ns)
    keys, data = _keys(api, 2), api.random.key_data
    return [
        ns.capture(ns.jit(lambda k: k.astype(np.float32)), keys),
        data(ns.jit(lambda k: k.astype(k.dtype))(keys)),
        ns.capture(api.numpy.astype, keys, np.uint32),
        data(api.numpy.astype(keys, keys.dtype)),
        data(api.lax.convert_element_type(keys, keys.dtype)),
        ns.capture(lambda: api.numpy.asarray(keys, dtype=np.float32)),
        ns.capture(api.numpy.astype, np.zeros(2, np.uint32), keys.dtype),
    ]


def _permutation_range_axis(ns: Any) -> Any:
    api = _api(ns)
    return api.random.permutation(api.random.PRNGKey(0), 10, axis=3)


def _categorical_array_axis(ns: Any) -> Any:
    api = _api(ns)
    key = api.random.key(0)
    logits = api.random.normal(key, (8, 9))
    axis = api.random.randint(key, (), -2, 2)
    return api.random.categorical(key, logits, axis=axis, shape=(2, 8), replace=False)


def _array_uint32_python_ints(ns: Any) -> Any:
    api = _api(ns)
    data = api.numpy.array([3200590325, 713258242], dtype="uint32")
    return data, api.random.loggamma(api.random.wrap_key_data(data), 0.0)


def _key_cotangents(ns: Any) -> Any:
    """grad/vjp with allow_int: a key array's cotangent is float0 of its shape
    (each cotangent as its shape followed by whether its dtype is float0)."""
    api = _api(ns)
    keys = _keys(api, 3)
    g = api.grad(lambda k, x: x * 1.0, allow_int=True, argnums=(0, 1))(keys, 2.0)
    v = api.vjp(lambda d: d["x"] * 2.0, {"k": keys, "x": 2.0})[1](1.0)[0]
    j = api.jit(api.grad(lambda k: 1.0, allow_int=True))(_keys(api, 4, (2, 2)))
    return [
        np.array([*np.shape(c), np.asarray(c).dtype == api.dtypes.float0])
        for c in (g[0], v["k"], j)
    ]


def _where_equal_of_keys(ns: Any) -> Any:
    api = _api(ns)
    keys, key = _keys(api, 3), api.random.key(5)
    picked = api.numpy.where(api.numpy.array([True, False, True]), keys, key)
    return [
        api.random.key_data(picked),
        api.random.key_data(api.jit(api.numpy.where)(np.array([False, True, False]), keys, key)),
        api.numpy.equal(keys, picked),
        api.numpy.not_equal(keys, key),
    ]


def _key_equals_number(ns: Any) -> Any:
    api = _api(ns)
    return api.random.key(0) == 1


def _fold_in_python_int_outside_uint32(ns: Any) -> Any:
    api = _api(ns)
    return api.random.fold_in(api.random.key(0), -1)


def _custom_jvp_key_tangent(ns: Any) -> Any:
    """The tangent a custom_jvp rule sees for a key argument: float0 of the
    key array's shape (its shape, then whether its dtype is float0)."""
    api = _api(ns)
    seen = []

    @api.custom_jvp
    def f(x, keys):
        return x * api.random.normal(keys[0])

    @f.defjvp
    def f_jvp(primals, tangents):
        (x, keys), (x_dot, keys_dot) = primals, tangents
        seen.append(np.array([*keys_dot.shape, np.dtype(keys_dot.dtype) == api.dtypes.float0]))
        return f(x, keys), x_dot * api.random.normal(keys[0])

    grad = api.grad(f)(1.5, _keys(api, 3))
    return grad, seen[0]


def _custom_vjp_key_cotangent(ns: Any) -> Any:
    """The cotangent a custom_vjp bwd rule sees for a key output (random_test's
    test_keyarray_custom_vjp): float0 of the key array's shape, a SymbolicZero
    of that type under symbolic_zeros (its shape, then whether its dtype is
    float0 and whether it is a SymbolicZero), eagerly and under jit."""
    api = _api(ns)
    seen = []
    for symbolic_zeros in (False, True):

        @api.custom_vjp
        def f(_, state):
            return state

        def fwd(_, state, symbolic_zeros=symbolic_zeros):
            if symbolic_zeros:
                state = api.tree.map(lambda x: x.value, state)
            return state, None

        def bwd(_, state_bar):
            ct = state_bar[1]
            is_zero = type(ct).__name__ == "SymbolicZero"
            seen.append(np.array([*ct.shape, np.dtype(ct.dtype) == api.dtypes.float0, is_zero]))
            return state_bar[0], state_bar

        f.defvjp(fwd, bwd, symbolic_zeros=symbolic_zeros)
        for state in [(8.0, api.random.key(123)), (8.0, _keys(api, 3))]:
            grad = api.grad(lambda t, state=state: f(t, state)[0])
            seen.append(grad(3.0))
            seen.append(api.jit(grad)(3.0))
    return seen


def _float0_tangent_of_a_key(ns: Any) -> Any:
    """jvp, linearize and vjp take JAX's float0[key.shape] as a key's tangent
    or cotangent and give one back for a key output (each result: its shape,
    then whether its dtype is float0)."""
    api = _api(ns)
    f0 = api.dtypes.float0

    def form(v):
        return np.array([*v.shape, np.dtype(v.dtype) == f0])

    split = lambda k: api.random.split(k)  # noqa: E731
    _, t = api.jvp(split, (api.random.key(0),), (np.zeros((), f0),))
    _, t_jit = api.jvp(api.jit(split), (api.random.key(0),), (np.zeros((), f0),))
    _, t_data = api.jvp(api.random.key_data, (_keys(api, 3),), (np.zeros((3,), f0),))
    t_lin = api.linearize(split, api.random.key(0))[1](np.zeros((), f0))
    (ct,) = api.vjp(lambda k: api.random.split(k, 3), api.random.key(1))[1](np.zeros((3,), f0))
    _, ct_pair = api.vjp(lambda t, k: (t, k), 3.0, api.random.key(1))[1](
        (np.float32(1.0), np.zeros((), f0))
    )
    return [form(v) for v in (t, t_jit, t_data, t_lin, ct, ct_pair)]


def _truncated_normal_grad_of_bounds(ns: Any) -> Any:
    """random_lax_test: the derivative of truncated_normal by its bounds (the
    nextafter clip is not differentiated, as JAX's stop_gradient there)."""
    api = _api(ns)
    key = api.random.key(7)

    def total(lo: Any, hi: Any) -> Any:
        return api.random.truncated_normal(key, lo, hi, (3,)).sum()

    return [api.grad(total, (0, 1))(-0.5, 0.7), api.jit(api.grad(total))(-2.5, 1.0)]


def _split_num_concrete_array(ns: Any) -> Any:
    """split's num as a concrete 0-d integer array, alone or in a tuple."""
    api = _api(ns)
    key = api.random.key(7)
    return [
        api.random.key_data(api.random.split(key, api.numpy.array(3))),
        api.random.key_data(api.random.split(key, (api.numpy.array(2), 3))),
    ]


def _uniform_bounds_shape_errors(ns: Any) -> Any:
    """The error class of uniform's minval/maxval of a shape that does not
    broadcast to ``shape`` (JAX's arithmetic's TypeError, or its lowering's
    ValueError), beside randint's checked ValueError."""
    api = _api(ns)
    key, zeros = api.random.key(7), api.numpy.zeros
    calls = [
        lambda: api.random.uniform(key, (3,), minval=zeros(2)),
        lambda: api.random.uniform(key, (3,), minval=zeros((2, 3))),
        lambda: api.random.uniform(key, (3,), maxval=zeros((2, 3))),
        lambda: api.random.uniform(key, (), minval=zeros(3)),
        lambda: api.random.randint(key, (3,), zeros(2, "int32"), 5),
    ]
    names = []
    for call in calls:
        try:
            call()
            names.append("no error")
        except (TypeError, ValueError) as e:
            names.append(type(e).__name__)
    return names


def _wrap_numpy_key_data(ns: Any) -> Any:
    """random_test's test_numpy_construction: keys wrapped over NumPy key data
    are on the default device (device, devices(), key data)."""
    api = _api(ns)
    keys = api.random.wrap_key_data(np.array([[42, 173], [1, 2]], np.uint32))
    device = api.devices()[0]
    return [keys.device == device, keys.devices() == {device}, api.random.key_data(keys)]


def _make_array_from_callback_of_keys(ns: Any) -> Any:
    api = _api(ns)
    devices = api.devices()[:1]
    mesh = api.sharding.Mesh(np.array(devices), ("x",))
    sharding = api.sharding.NamedSharding(mesh, api.sharding.PartitionSpec("x"))
    seeds = api.numpy.arange(4)
    keys = api.make_array_from_callback(
        (4,), sharding, lambda index: api.vmap(api.random.key)(seeds[index[0]])
    )
    return api.random.key_data(keys)


def _too_many_key_indices(ns: Any) -> Any:
    """random_test's test_key_array_indexing_0d/_nd: the IndexError counts
    the key array's axes (not the key data's word axis)."""
    import re

    api = _api(ns)
    counts = []
    for keys, index in [
        (api.random.key(1), (0,)),
        (_keys(api, 6, (2, 3)), (0, 1, 2)),
        (_keys(api, 6, (2, 3)), (0, 1, None, 2)),
    ]:
        try:
            keys[index]
            counts.append("no error")
        except IndexError as e:
            counts.append(re.search(r"\d+-dimensional, but \d+ were indexed", str(e)).group())
    return counts


def _convert_key_error_message(ns: Any) -> Any:
    """JnpWithKeyArrayTest.test_errors: converting a key names the canonical
    target dtype (int32 for ``int`` without x64)."""
    api = _api(ns)
    messages = []
    for target in (int, float, "int64"):
        try:
            api.lax.convert_element_type(api.random.key(123), target)
            messages.append("no error")
        except ValueError as e:
            messages.append(str(e))
    return messages


def _extend_threefry_2x32(ns: Any) -> Any:
    """random_test's testThreefry2x32: jax.extend.random.threefry_2x32 on the
    Random123 known-answer inputs, and an odd count (padded with a zero word)."""
    api = _api(ns)
    xr = importlib.import_module(f"{api.__name__}.extend.random")
    u = np.iinfo(np.uint32).max
    return [
        xr.threefry_2x32(np.uint32([0, 0]), np.uint32([0, 0])),
        xr.threefry_2x32(np.uint32([u, u]), np.uint32([u, u])),
        xr.threefry_2x32(np.uint32([0x13198A2E, 0x03707344]), np.uint32([0x243F6A88, 0x85A308D3])),
        xr.threefry_2x32(np.uint32([1, 2]), np.arange(7, dtype=np.uint32).reshape(7, 1)),
    ]


def _key_arrays_are_tree_leaves(ns: Any) -> Any:
    # JnpWithKeyArrayTest's reference paths: tree_map hands over whole key arrays
    api = _api(ns)
    tu, k6 = api.tree_util, _keys(api, 6, (2, 3))
    tree = {"a": k6, "b": [k6[0], 1.0]}
    ones = tu.tree_map(lambda k: api.numpy.ones(k.shape), (k6, k6[1]))
    data = tu.tree_map(lambda k: api.random.key_data(k), [k6[:, 1:]])
    jitted = ns.jit(lambda t: tu.tree_map(lambda k: api.numpy.zeros(k.shape), t))([k6])
    return [
        len(tu.tree_leaves(tree)),
        tu.tree_structure(k6).num_leaves,
        api.numpy.shape(k6),
        *ones,
        *data,
        *jitted,
    ]


ROWS: list[tuple[str, Any]] = [
    ("extend_threefry_2x32", _extend_threefry_2x32),
    ("too_many_key_indices", _too_many_key_indices),
    ("convert_key_error_message", _convert_key_error_message),
    ("where_equal_of_keys", _where_equal_of_keys),
    ("key_equals_number", _key_equals_number),
    ("fold_in_python_int_outside_uint32", _fold_in_python_int_outside_uint32),
    ("custom_jvp_key_tangent", _custom_jvp_key_tangent),
    ("custom_vjp_key_cotangent", _custom_vjp_key_cotangent),
    ("float0_tangent_of_a_key", _float0_tangent_of_a_key),
    ("truncated_normal_grad_of_bounds", _truncated_normal_grad_of_bounds),
    ("split_num_concrete_array", _split_num_concrete_array),
    ("uniform_bounds_shape_errors", _uniform_bounds_shape_errors),
    ("wrap_numpy_key_data", _wrap_numpy_key_data),
    ("make_array_from_callback_of_keys", _make_array_from_callback_of_keys),
    ("key_cotangents_float0", _key_cotangents),
    ("numpy_structural", _numpy_structural),
    ("lax_structural_jit", _lax_structural_jit),
    ("vmap_scan_of_keys", _vmap_scan_of_keys),
    ("key_dtype_issubdtype", _key_dtype_issubdtype),
    ("legacy_key_error", _legacy_key_error),
    ("convert_keys", _convert_keys),
    ("astype_keys", _astype_keys),
    ("traced_numeric_methods", _traced_numeric_methods),
    ("permutation_range_axis", _permutation_range_axis),
    ("categorical_array_axis", _categorical_array_axis),
    ("array_uint32_python_ints", _array_uint32_python_ints),
    ("key_arrays_are_tree_leaves", _key_arrays_are_tree_leaves),
]


def cases() -> Iterator[Case]:
    helpers = f"{inspect.getsource(_api)}\n{inspect.getsource(_keys)}"
    for name, fn in ROWS:
        case = script_case(f"key_array.paths/{name}", fn, expect=AGREE, tags=TAGS)
        yield replace(case, source=f"{case.source}\n{helpers}")
