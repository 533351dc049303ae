"""Branches of refimpl/transforms/sharded.py no other case reaches (issue 36).

Programs over 4 devices (skipped with fewer, as sharding.py) that take the
sharded array's less common paths, each against a NumPy oracle of the value
and, where an array comes back, its layout (``sharding._layout``: one row
per shard, ``[device id, start_0, stop_0, ...]``):

* ``sharded.paths/array/*``: a sharded array's properties, deletion and
  reading a deleted one, ``block_until_ready``;
* ``sharded.paths/device_put/*``: onto the array's own sharding (aliased,
  donated), another layout of the same mesh, a one-device sharding, a
  Python scalar (weak), under ``jit``, donating a one-device array (the
  donor's deletion is not observed: JAX 0.10.2 on CPU keeps it alive);
* ``sharded.paths/wsc/*``: ``with_sharding_constraint`` with a
  ``PartitionSpec`` under ``set_mesh``, over a one-device mesh under
  ``jit``, and its checks (a ``PartitionSpec`` with no mesh set, a value
  that is no sharding);
* ``sharded.paths/jit/*``: ``jit`` with shardings called twice (the cached
  plan), ``in_shardings`` as a list or with ``None`` entries,
  ``out_shardings`` with ``None``, static arguments (the global-value
  route), donation, called under an outer ``jit`` and ``grad``, and its
  checks;
* ``sharded.paths/build/*``: ``reshard`` over ``Explicit`` axes,
  ``make_array_from_callback``, ``make_array_from_single_device_arrays`` and
  their checks.

Checks are judged by the exception class (``Raises``), as in sharding.py.
Each case's recorded source includes its build, its oracle and the helpers.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np

from conformance.case import Case, Oracle, script_case
from conformance.corpus.pmap import _api, _four_devices
from conformance.corpus.sharding import TOL, X8, X44, _layout, _mesh, _ns, _oracle_layout
from conformance.observe import Raises

ROW = _oracle_layout((8,), "1d", ("x",))  # X8 over the 1-d mesh, split
REP = _oracle_layout((8,), "1d", ())  # X8 over the 1-d mesh, replicated


def _split(api: Any) -> Any:
    return _ns(api, _mesh(api, "1d"), "x")


def _rep(api: Any) -> Any:
    return _ns(api, _mesh(api, "1d"))


def _explicit_mesh(api: Any) -> Any:
    devices = np.empty(4, dtype=object)
    devices[:] = list(api.devices()[:4])
    kinds = (api.sharding.AxisType.Explicit,)
    return api.sharding.Mesh(devices, ("x",), axis_types=kinds)


def _one_device_mesh(api: Any) -> Any:
    devices = np.empty(1, dtype=object)
    devices[:] = [api.devices()[0]]
    return api.sharding.Mesh(devices, ("x",), axis_types=(api.sharding.AxisType.Auto,))


_HELPERS = "".join(
    inspect.getsource(h) for h in (_split, _rep, _explicit_mesh, _one_device_mesh, _layout)
)

# --- the sharded array ------------------------------------------------------------------------


def array_properties(api: Any, L: Any) -> Any:
    x = api.device_put(X8, _split(api))
    y = api.device_put(X8, _rep(api))
    return [np.asarray([x.is_fully_replicated, y.is_fully_replicated, x.is_fully_addressable]),
            np.asarray([len(x.devices()), len(x.global_shards)]),
            np.asarray(x.addressable_data(0)), np.asarray(y.addressable_data(3))]  # fmt: skip


def array_properties_expected() -> Any:
    return [np.array([False, True, True]), np.array([4, 4]), X8[:2], X8]


def array_delete(api: Any, L: Any) -> Any:
    x = api.device_put(X8, _split(api))
    before = x.is_deleted()
    x.delete()
    return np.asarray([before, x.is_deleted()])


def array_delete_expected() -> Any:
    return np.array([False, True])


def array_read_deleted(api: Any, L: Any) -> Any:
    x = api.device_put(X8, _split(api))
    x.delete()
    return np.asarray(x)


def array_ready(api: Any, L: Any) -> Any:
    x = api.device_put(X8, _split(api))
    x.copy_to_host_async()
    y = x.block_until_ready()
    return [np.asarray(y), _layout(y), np.asarray(y is x)]


def array_ready_expected() -> Any:
    return [X8, ROW, np.asarray(True)]


# --- device_put --------------------------------------------------------------------------------


def put_same_sharding(api: Any, L: Any) -> Any:
    x = api.device_put(X8, _split(api))
    y = api.device_put(x, x.sharding)
    return [np.asarray(y), _layout(y), np.asarray(y is x)]


def put_same_sharding_expected() -> Any:
    return [X8, ROW, np.asarray(True)]


def put_same_sharding_donated(api: Any, L: Any) -> Any:
    x = api.device_put(X8, _split(api))
    y = api.device_put(x, x.sharding, donate=True)
    return [np.asarray(y), _layout(y)]


def put_same_sharding_donated_expected() -> Any:
    return [X8, ROW]


def put_other_layout(api: Any, L: Any) -> Any:
    x = api.device_put(X8, _split(api))
    y = api.device_put(x, _rep(api))
    return [np.asarray(y), _layout(y), np.asarray(x.is_deleted())]


def put_other_layout_expected() -> Any:
    return [X8, REP, np.asarray(False)]


def put_other_layout_donated(api: Any, L: Any) -> Any:
    x = api.device_put(X8, _rep(api))
    y = api.device_put(x, _split(api), donate=True)
    return [np.asarray(y), _layout(y)]


def put_other_layout_donated_expected() -> Any:
    return [X8, ROW]


def put_one_device_donated(api: Any, L: Any) -> Any:
    a = api.device_put(X8, api.devices()[1])
    y = api.device_put(a, _split(api), donate=True)
    return [np.asarray(y), _layout(y)]


def put_one_device_donated_expected() -> Any:
    return [X8, ROW]


def put_single_device_sharding(api: Any, L: Any) -> Any:
    y = api.device_put(X8, api.sharding.SingleDeviceSharding(api.devices()[2]))
    return [np.asarray(y), np.array([d.id for d in y.devices()])]


def put_single_device_sharding_expected() -> Any:
    return [X8, np.array([2])]


def put_python_scalar(api: Any, L: Any) -> Any:
    y = api.device_put(3.0, _rep(api))
    z = y + np.float16(1)  # a weak scalar takes the other operand's dtype
    return [np.asarray(y), _layout(y), np.asarray(z)]


def put_python_scalar_expected() -> Any:
    return [np.float32(3.0), _oracle_layout((), "1d", ()), np.float16(4.0)]


def put_under_jit(api: Any, L: Any) -> Any:
    return api.jit(lambda v: api.device_put(v, _split(api)) * 2.0)(X8)


def put_under_jit_expected() -> Any:
    return X8 * 2.0


def _device_ids(*arrays: Any) -> np.ndarray:
    return np.array([sorted(d.id for d in y.devices())[0] for y in arrays])


def jit_unused_committed_argument(api: Any, L: Any) -> Any:
    # JAX drops the arguments the program does not read before placing the
    # call (keep_unused=False): an unused committed array moves nothing
    on3 = api.device_put(X8, api.devices()[3])
    on2 = api.device_put(X8, api.devices()[2])
    alone = api.jit(lambda y: api.numpy.zeros(3))(on3)
    other = api.jit(lambda y, z: z * 2.0)(on3, on2)
    kept = api.jit(lambda y: api.numpy.zeros(3), keep_unused=True)(on3)
    return [np.asarray(other), _device_ids(alone, other, kept)]


def jit_unused_committed_argument_expected() -> Any:
    return [X8 * 2.0, np.array([0, 2, 3])]


def like_of_committed_arrays(api: Any, L: Any) -> Any:
    # lax.full_like's rule: on a committed x's device when the result is not
    # weakly typed; a weak result (weak x, no dtype) on the default device
    weak = api.device_put(L.broadcast(3.0, (8,)), api.devices()[3])
    strong = api.device_put(X8, api.devices()[3])
    outs = [api.numpy.zeros_like(weak), api.numpy.zeros_like(strong)]
    outs += [L.full_like(weak, 1), L.full_like(strong, 1), L.full_like(weak, 1, dtype="int32")]
    return [np.asarray(outs[3]), _device_ids(*outs)]


def like_of_committed_arrays_expected() -> Any:
    return [np.ones(8, np.float32), np.array([0, 3, 0, 3, 3])]


def eager_under_disable_jit(api: Any, L: Any) -> Any:
    # an eager operation on a sharded array is a jit over its mesh that
    # disable_jit does not reach: the result keeps the sharding (lane PMAPB)
    y = api.device_put(X8, _split(api))
    with api.disable_jit():
        doubled, total = y * 2.0, y.sum()
    return [np.asarray(doubled), _layout(doubled), np.asarray(total), _layout(total)]


def eager_under_disable_jit_expected() -> Any:
    return [X8 * 2.0, ROW, X8.sum(), _oracle_layout((), "1d", ())]


# --- with_sharding_constraint ------------------------------------------------------------------


def wsc_spec_under_set_mesh(api: Any, L: Any) -> Any:
    with api.set_mesh(_mesh(api, "1d")):
        y = L.with_sharding_constraint(X8, api.sharding.PartitionSpec("x"))
    return [np.asarray(y), _layout(y)]


def wsc_spec_under_set_mesh_expected() -> Any:
    return [X8, ROW]


def wsc_one_device_mesh_jit(api: Any, L: Any) -> Any:
    s = api.sharding.NamedSharding(_one_device_mesh(api), api.sharding.PartitionSpec("x"))
    return api.jit(lambda v: L.with_sharding_constraint(v * 2.0, s))(X8)


def wsc_one_device_mesh_jit_expected() -> Any:
    return X8 * 2.0


def wsc_tree(api: Any, L: Any) -> Any:
    y, z = L.with_sharding_constraint((X8, X44), (_split(api), _rep(api)))
    return [np.asarray(y), _layout(y), np.asarray(z), _layout(z)]


def wsc_tree_expected() -> Any:
    return [X8, ROW, X44, _oracle_layout((4, 4), "1d", ())]


def wsc_none(api: Any, L: Any) -> Any:
    return L.with_sharding_constraint(X8, None)


def wsc_explicit_axis(api: Any, L: Any) -> Any:
    s = api.sharding.NamedSharding(_explicit_mesh(api), api.sharding.PartitionSpec("x"))
    return L.with_sharding_constraint(X8, s)


def wsc_not_a_prefix(api: Any, L: Any) -> Any:
    return L.with_sharding_constraint((X8, X8), (_split(api), _split(api), _split(api)))


# --- jit with shardings ------------------------------------------------------------------------


def jit_called_twice(api: Any, L: Any) -> Any:
    f = api.jit(lambda v: v * 2.0, in_shardings=_split(api), out_shardings=_rep(api))
    x = api.device_put(X8, _split(api))
    first = f(x)
    second = f(x)  # arguments already laid out: the cached plan
    return [np.asarray(first), np.asarray(second), _layout(second)]


def jit_called_twice_expected() -> Any:
    return [X8 * 2.0, X8 * 2.0, REP]


def jit_list_and_none(api: Any, L: Any) -> Any:
    f = api.jit(lambda a, b: (a + b, a - b), in_shardings=[_split(api), None],
                out_shardings=(None, _split(api)))  # fmt: skip
    y, z = f(X8, np.ones(8, np.float32))
    return [np.asarray(y), np.asarray(z), _layout(z)]


def jit_list_and_none_expected() -> Any:
    return [X8 + 1.0, X8 - 1.0, ROW]


def jit_static_argument(api: Any, L: Any) -> Any:
    f = api.jit(lambda a, k: a * k, in_shardings=_rep(api), static_argnums=1,
                out_shardings=_split(api))  # fmt: skip
    x = api.device_put(X8, _rep(api))
    s = api.device_put(2.0, _rep(api))
    y = f(x, 3)
    g = api.jit(lambda a, k: a * k, in_shardings=_rep(api), static_argnums=1)
    return [np.asarray(y), _layout(y), np.asarray(g(s, 3) + np.float16(0))]


def jit_static_argument_expected() -> Any:
    return [X8 * 3.0, ROW, np.float16(6.0)]


def jit_donated(api: Any, L: Any) -> Any:
    f = api.jit(lambda v: v + 1.0, in_shardings=_split(api), out_shardings=_split(api),
                donate_argnums=0)  # fmt: skip
    x = api.device_put(X8, _split(api))
    y = f(x)
    return [np.asarray(y), _layout(y), np.asarray(x.is_deleted())]


def jit_donated_expected() -> Any:
    return [X8 + 1.0, ROW, np.asarray(True)]


def jit_donated_static(api: Any, L: Any) -> Any:
    f = api.jit(lambda v, k: v + k, in_shardings=_split(api), static_argnums=1,
                donate_argnums=0)  # fmt: skip
    x = api.device_put(X8, _split(api))
    y = f(x, 1.0)
    return [np.asarray(y), np.asarray(x.is_deleted())]


def jit_donated_static_expected() -> Any:
    return [X8 + 1.0, np.asarray(True)]


def jit_keyword_argument(api: Any, L: Any) -> Any:
    f = api.jit(lambda a, b=1.0: a + b, in_shardings=_split(api))
    return f(X8, b=2.0)


def jit_wrong_count(api: Any, L: Any) -> Any:
    f = api.jit(lambda a, b: a + b, in_shardings=(_split(api),))
    return f(X8, X8)


def jit_committed_mismatch(api: Any, L: Any) -> Any:
    f = api.jit(lambda a: a, in_shardings=_split(api))
    return f(api.device_put(X8, _rep(api)))


def jit_nested(api: Any, L: Any) -> Any:
    f = api.jit(lambda v: v * 2.0, in_shardings=_split(api), out_shardings=_split(api))
    y = api.jit(lambda v: f(v) + 1.0)(X8)  # the inner call sees tracers: the checks only
    return [np.asarray(y), np.asarray(api.grad(lambda v: f(v).sum())(X8))]


def jit_nested_expected() -> Any:
    return [X8 * 2.0 + 1.0, np.full(8, 2.0, np.float32)]


def wsc_spec_without_mesh(api: Any, L: Any) -> Any:
    return L.with_sharding_constraint(X8, api.sharding.PartitionSpec("x"))


def wsc_not_a_sharding(api: Any, L: Any) -> Any:
    return L.with_sharding_constraint(X8, 3)


# --- building sharded arrays -------------------------------------------------------------------


def reshard_explicit(api: Any, L: Any) -> Any:
    s = api.sharding.NamedSharding(_explicit_mesh(api), api.sharding.PartitionSpec("x"))
    y = api.reshard(X8, s)
    return [np.asarray(y), _layout(y)]


def reshard_explicit_expected() -> Any:
    return [X8, ROW]


def reshard_traced_under_set_mesh(api: Any, L: Any) -> Any:
    # a traced reshard is an equation laying out the jit's output (lane LEFT)
    mesh, P = _explicit_mesh(api), api.sharding.PartitionSpec
    with api.set_mesh(mesh):
        xs = api.reshard(X8, api.sharding.NamedSharding(mesh, P("x")))
        y = api.jit(lambda v: api.reshard(v * 2, P(None)))(xs)
    return [np.asarray(y), _layout(y)]


def reshard_traced_under_set_mesh_expected() -> Any:
    return [X8 * 2, REP]


def reshard_auto_axis(api: Any, L: Any) -> Any:
    return api.reshard(X8, _split(api))


def from_callback(api: Any, L: Any) -> Any:
    y = api.make_array_from_callback((4, 4), _ns(api, _mesh(api, "2d"), "a", "b"),
                                     lambda index: X44[index])  # fmt: skip
    return [np.asarray(y), _layout(y)]


def from_callback_expected() -> Any:
    return [X44, _oracle_layout((4, 4), "2d", ("a", "b"))]


def from_callback_wrong_block(api: Any, L: Any) -> Any:
    return api.make_array_from_callback((8,), _split(api), lambda index: X8)


def _parts(api: Any) -> list[Any]:
    return [api.device_put(X8[2 * i : 2 * i + 2], d) for i, d in enumerate(api.devices()[:4])]


def from_arrays_too_few(api: Any, L: Any) -> Any:
    return api.make_array_from_single_device_arrays((8,), _split(api), _parts(api)[:3])


def from_arrays_wrong_shape(api: Any, L: Any) -> Any:
    parts = [api.device_put(X8[:3], d) for d in api.devices()[:4]]
    return api.make_array_from_single_device_arrays((8,), _split(api), parts)


def from_arrays_one_device(api: Any, L: Any) -> Any:
    s = api.sharding.NamedSharding(_one_device_mesh(api), api.sharding.PartitionSpec("x"))
    y = api.make_array_from_single_device_arrays((8,), s, [api.device_put(X8, api.devices()[0])])
    return [np.asarray(y), np.array([d.id for d in y.devices()])]


def from_arrays_one_device_expected() -> Any:
    return [X8, np.array([0])]


VALUES: list[tuple[str, Any, Any]] = [
    ("array/properties", array_properties, array_properties_expected),
    ("array/delete", array_delete, array_delete_expected),
    ("array/block_until_ready", array_ready, array_ready_expected),
    ("device_put/same_sharding", put_same_sharding, put_same_sharding_expected),
    ("device_put/same_sharding_donated", put_same_sharding_donated,
     put_same_sharding_donated_expected),
    ("device_put/other_layout", put_other_layout, put_other_layout_expected),
    ("device_put/other_layout_donated", put_other_layout_donated,
     put_other_layout_donated_expected),
    ("device_put/one_device_donated", put_one_device_donated, put_one_device_donated_expected),
    ("device_put/single_device_sharding", put_single_device_sharding,
     put_single_device_sharding_expected),
    ("device_put/python_scalar", put_python_scalar, put_python_scalar_expected),
    ("device_put/under_jit", put_under_jit, put_under_jit_expected),
    ("device_put/eager_under_disable_jit", eager_under_disable_jit,
     eager_under_disable_jit_expected),
    ("wsc/spec_under_set_mesh", wsc_spec_under_set_mesh, wsc_spec_under_set_mesh_expected),
    ("wsc/one_device_mesh_jit", wsc_one_device_mesh_jit, wsc_one_device_mesh_jit_expected),
    ("wsc/tree", wsc_tree, wsc_tree_expected),
    ("jit/called_twice", jit_called_twice, jit_called_twice_expected),
    ("jit/list_and_none", jit_list_and_none, jit_list_and_none_expected),
    ("jit/static_argument", jit_static_argument, jit_static_argument_expected),
    ("jit/donated", jit_donated, jit_donated_expected),
    ("jit/donated_static", jit_donated_static, jit_donated_static_expected),
    ("jit/nested", jit_nested, jit_nested_expected),
    ("jit/unused_committed_argument", jit_unused_committed_argument,
     jit_unused_committed_argument_expected),
    ("build/like_of_committed_arrays", like_of_committed_arrays,
     like_of_committed_arrays_expected),
    ("build/reshard_explicit", reshard_explicit, reshard_explicit_expected),
    ("build/reshard_traced_under_set_mesh", reshard_traced_under_set_mesh,
     reshard_traced_under_set_mesh_expected),
    ("build/from_callback", from_callback, from_callback_expected),
    ("build/from_arrays_one_device", from_arrays_one_device, from_arrays_one_device_expected),
]  # fmt: skip

ERRORS: list[tuple[str, Any, type]] = [
    ("array/read_deleted", array_read_deleted, RuntimeError),
    ("wsc/none", wsc_none, ValueError),
    ("wsc/spec_without_mesh", wsc_spec_without_mesh, RuntimeError),
    ("wsc/not_a_sharding", wsc_not_a_sharding, TypeError),
    ("wsc/explicit_axis", wsc_explicit_axis, ValueError),
    ("wsc/not_a_prefix", wsc_not_a_prefix, ValueError),
    ("jit/keyword_argument", jit_keyword_argument, ValueError),
    ("jit/wrong_count", jit_wrong_count, ValueError),
    ("jit/committed_mismatch", jit_committed_mismatch, ValueError),
    ("build/reshard_auto_axis", reshard_auto_axis, ValueError),
    ("build/from_callback_wrong_block", from_callback_wrong_block, ValueError),
    ("build/from_arrays_too_few", from_arrays_too_few, ValueError),
    ("build/from_arrays_wrong_shape", from_arrays_wrong_shape, ValueError),
]


def _script(build: Any) -> Any:
    def script(ns: Any) -> Any:
        api = _api(ns)
        with _four_devices(api):
            return build(api, ns.lax_)

    return script


def cases() -> Iterator[Case]:
    for name, build, expected in VALUES:
        case = script_case(f"sharded.paths/{name}", _script(build), expect=Oracle(expected),
                           tolerance=TOL, tags=("sharding",))  # fmt: skip
        own = inspect.getsource(build) + inspect.getsource(expected)
        yield replace(case, source=f"{case.source}\n{own}{_HELPERS}{inspect.getsource(_parts)}")
    for name, build, error in ERRORS:
        case = script_case(f"sharded.paths/{name}", _script(build), expect=Raises(error),
                           tags=("sharding",))  # fmt: skip
        own = inspect.getsource(build)
        yield replace(case, source=f"{case.source}\n{own}{_HELPERS}{inspect.getsource(_parts)}")
