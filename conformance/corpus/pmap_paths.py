"""pmap's paths the other families leave untaken (found with
``tools/conformance_coverage.py``), on 4 devices as the ``pmap`` family:

* collectives over the pmap's axis inside an unnamed ``vmap`` (the batch
  rule meets vmap's axis first and must hand the collective on), against
  JAX (recorded);
* pjrt's Python route (what the C++ fast path declines): arguments sharded
  along another axis than their ``in_axes`` next to ones already in place,
  a Python number replicated, one device, host callbacks in the body;
* a pmap nested in a pmap (2 x 2 replicas on pjrt, lock step on the
  reference backend), ``in_axes=-1``/``out_axes=-1`` (refimpl only: JAX
  0.10.2's pmap rejects the first two and gets ``out_axes=-1`` wrong;
  SPEC "pmap and collectives" takes a 2-D shard_map / NumPy as the oracle);
* the sharded outputs' protocol (``addressable_shards``, ``sharding``,
  ``devices()``, ``delete``, ``block_until_ready``, ``__array__(dtype)``)
  and donation of a sharded array; their sharding (AGREE: JAX 0.10.2's
  NamedSharding over the pmap's devices, shards of the ``(1, ...)`` blocks);
* pmap's argument checks (AGREE: the built-in class JAX raises).

Values come from NumPy; the error cases from JAX's recordings.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, Oracle, script_case
from conformance.corpus.pmap import TOL, _api, _four_devices
from conformance.namespace import Unsupported
from conformance.observe import Raises

N = 4
_R = np.random.default_rng(3636)
X = _R.standard_normal((N, 2, 3)).astype(np.float32)
Q = _R.standard_normal((N, N, 3)).astype(np.float32)  # mappable along axis 0 and 1
Y = _R.standard_normal((N, 3, N)).astype(np.float32)  # member (3, 4) under vmap
NX = _R.standard_normal((2, 2, 3)).astype(np.float32)  # 2 x 2 nested
XH = np.round(X * 8).astype(np.float16) / 8  # exact in float16 after * 3 + 2.5


def _case(name: str, script: Callable[[Any], Any], expect: Any) -> Case:
    return script_case(f"pmap.paths/{name}", script, expect=expect, tolerance=TOL,
                       tags=("pmap",))  # fmt: skip


def _leaves(api: Any, out: Any) -> list[np.ndarray]:
    return [np.asarray(leaf) for leaf in api.tree_util.tree_leaves(out)]


def _refimpl_only(api: Any, why: str) -> None:
    if api.__name__ != "refimpl":
        raise Unsupported(f"{api.__name__}: {why}")


# --- collectives over the pmap axis inside an unnamed vmap (AGREE) --------------------------

UNDER_VMAP: list[tuple[str, Callable[[Any], Any], dict[str, Any]]] = [
    ("all_gather", lambda L: lambda v: L.all_gather(v, "i"), {"in_axes": 1, "out_axes": 1}),
    ("all_gather_tiled", lambda L: lambda v: L.all_gather(v, "i", axis=0, tiled=True),
     {"in_axes": 1}),
    ("psum_scatter_tiled", lambda L: lambda v: L.psum_scatter(v, "i", tiled=True), {}),
    ("psum_scatter", lambda L: lambda v: L.psum_scatter(v, "i"), {}),
    ("ppermute", lambda L: lambda v: L.ppermute(v, "i", [(0, 1), (1, 2), (2, 3)]),
     {"in_axes": 1, "out_axes": 1}),
    ("all_to_all", lambda L: lambda v: L.all_to_all(v, "i", 0, 0, tiled=True), {}),
    ("psum_unbatched_operand", lambda L: lambda v: v + L.psum(1.0, "i"), {}),
]  # fmt: skip


def _under_vmap(name: str, fun: Callable[[Any], Any], vmap_kw: dict[str, Any]) -> Case:
    def script(ns: Any) -> Any:
        api = _api(ns)
        with _four_devices(api):
            return _leaves(api, api.pmap(api.vmap(fun(ns.lax_), **vmap_kw), "i")(Y))

    return _case(f"under_vmap/{name}", script, AGREE)


# --- pjrt's Python route, and the reference backend's lock step -----------------------------


def _mixed_shards(ns: Any) -> Any:
    """One argument sharded along axis 1 where in_axes says 0 (gathered and
    split again), one already in place, one a Python number; called twice."""
    api = _api(ns)
    with _four_devices(api):
        a = api.pmap(lambda x: x * 2, "i", out_axes=1)(Q)
        b = api.pmap(lambda x: x + 1, "i")(Q)
        if api.__name__ != "refimpl":  # JAX 0.10.2 refuses the mismatched sharding of ``a``
            a = np.asarray(a)
        f = api.pmap(lambda u, v, w: u * v + w, "i", in_axes=(0, 0, None))
        # (a float64 NumPy scalar is float32 on the devices: x64 is off)
        return _leaves(api, [f(a, b, 2.0), f(a, b, 3.0), f(b, a, np.float64(0.25))])


def _mixed_shards_oracle() -> Any:
    a, b = np.moveaxis(2 * Q, 0, 1), Q + 1
    return [a * b + 2, a * b + 3, b * a + np.float32(0.25)]


def _one_device(ns: Any) -> Any:
    """A 1-device pmap: an argument sharded along another axis than its
    in_axes, and a replicated array already on the device."""
    api = _api(ns)
    with _four_devices(api):
        s = api.pmap(lambda x: x - 1, "i", out_axes=1)(Q[:1, :1])  # (1, 1, 3), axis 1
        w = ns.asarray(np.float32(3.0))
        f = api.pmap(lambda u, w: u * w, "i", in_axes=(0, None))
        return _leaves(api, [f(s, w), f(s, w)])


def _host_callback(ns: Any) -> Any:
    api = _api(ns)
    with _four_devices(api):

        def body(x: Any) -> Any:
            shape = api.ShapeDtypeStruct(x.shape, x.dtype)
            y = api.pure_callback(lambda a: np.cos(np.asarray(a)) * 2, shape, x)
            return ns.lax_.psum(y, "i"), y + ns.lax_.axis_index("i")

        f = api.pmap(body, "i")
        return _leaves(api, [f(X), f(X + 1)])


def _host_callback_oracle() -> Any:
    out = []
    for x in (X, X + 1):
        y = (np.cos(x) * 2).astype(np.float32)
        out += [
            np.broadcast_to(y.sum(0), y.shape),
            y + np.arange(N, dtype=np.float32)[:, None, None],
        ]
    return out


def _python_scalars(ns: Any) -> Any:
    """Python numbers replicated to every device are weakly typed (float16
    operands stay float16; the psum of one is strong int32); a static one is
    a constant of the body."""
    api = _api(ns)
    with _four_devices(api):
        f = api.pmap(lambda x, k, s: (x * k + s, ns.lax_.psum(k, "i")), "i",
                     in_axes=(0, None, None))  # fmt: skip
        g = api.pmap(lambda x, k, s: x * k + s, "i", in_axes=(0, None, None),
                     static_broadcasted_argnums=1)  # fmt: skip
        return _leaves(api, [f(XH, 2, 0.5), g(XH, 3, 1.5), g(XH, 3, 2.5)])


def _python_scalars_oracle() -> Any:
    return [XH * 2 + np.float16(0.5), np.full(N, 8, np.int32), XH * 3 + np.float16(1.5),
            XH * 3 + np.float16(2.5)]  # fmt: skip


def _statics_with_full_in_axes(ns: Any) -> Any:
    """in_axes naming every positional argument, a static one included (its
    entry is dropped with it); devices given."""
    api = _api(ns)
    with _four_devices(api):
        f = api.pmap(lambda x, s, y: x * s + y, "i", in_axes=(0, None, 0),
                     static_broadcasted_argnums=1)  # fmt: skip
        g = api.pmap(lambda x, w: x - w, "i", in_axes=(0, None), devices=api.devices()[:N])
        return _leaves(api, [f(X, 2.0, X), g(X, X[0])])


def _donate_sharded(ns: Any) -> Any:
    api = _api(ns)
    with _four_devices(api):
        y = api.pmap(lambda x: x * 2, "i")(X)
        z = api.pmap(lambda x: x + 1, "i", donate_argnums=0)(y)
        return [np.asarray(z), y.is_deleted()]


def _donate_unsharded(ns: Any) -> Any:
    """A donated argument the call must first split over the devices (a
    single-device array): SPEC, a donated input is deleted (JAX 0.10.2 donates
    its resharded copy and leaves the argument alive; docs/semantics.md)."""
    api = _api(ns)
    _refimpl_only(api, "JAX 0.10.2's pmap donates the resharded copy of an unsharded argument")
    with _four_devices(api):
        x = api.numpy.asarray(X)
        z = api.pmap(lambda v: v + 1, "i", donate_argnums=0)(x)
        return [np.asarray(z), x.is_deleted()]


def _shards_protocol(ns: Any) -> Any:
    """Per output (out_axes 0 and 1): the value rebuilt from its shards, the
    devices, the sharding's device count, delete() and __array__(dtype)."""
    api = _api(ns)
    with _four_devices(api):
        out = []
        for axis in (0, 1):
            y = api.pmap(lambda x: x * 2 - 1, "i", out_axes=axis)(X)
            shards = y.addressable_shards
            piece = X.shape[1:]
            rebuilt = np.stack([np.asarray(s.data).reshape(piece) for s in shards], axis=axis)
            as64 = np.asarray(y.block_until_ready(), dtype=np.float64)
            out += [
                rebuilt, len({s.device for s in shards}), len(y.devices()),
                len(y.sharding.device_set), as64, y.is_deleted(),
            ]  # fmt: skip
            y.delete()
            out.append(y.is_deleted())
        one = ns.asarray(X[0])
        out.append(len(one.sharding.device_set))
        return out


def _shards_oracle() -> Any:
    out = []
    for axis in (0, 1):
        v = np.moveaxis(X * 2 - 1, 0, axis)
        out += [v, N, N, N, v.astype(np.float64), False, True]
    return out + [1]


# --- nested pmaps and negative axes (refimpl only) -----------------------------------------

_JAX_NESTED = "JAX 0.10.2's pmap rejects a pmap nested in a pmap (a shard_map mesh mismatch)"
_JAX_NEGATIVE = "JAX 0.10.2's pmap splits axis 0 for in_axes=-1 and misplaces out_axes=-1"


def _nested(ns: Any) -> Any:
    api = _api(ns)
    _refimpl_only(api, _JAX_NESTED)
    L = ns.lax_
    with _four_devices(api):
        inner = api.pmap(lambda x: (L.psum(x, "j"), L.psum(x, ("i", "j")),
                                    x * L.axis_index("i") + L.axis_index("j")), "j")  # fmt: skip
        f = api.pmap(inner, "i")
        return _leaves(api, [f(NX), f(NX * 2)])


def _nested_oracle() -> Any:
    out = []
    for v in (NX, NX * 2):
        i = np.arange(2, dtype=np.float32)[:, None, None]
        j = np.arange(2, dtype=np.float32)[None, :, None]
        out += [np.broadcast_to(v.sum(1, keepdims=True), v.shape),
                np.broadcast_to(v.sum((0, 1)), v.shape), v * i + j]  # fmt: skip
    return out


def _nested_options(ns: Any) -> Any:
    """Inner pmaps: unnamed with a replicated argument and an out_axes=None
    output; out_axes=1; one with a donated argument (run in lock step inside
    the outer body); one of another size; the outer argument donated."""
    api = _api(ns)
    _refimpl_only(api, _JAX_NESTED)
    L = ns.lax_
    with _four_devices(api):

        def body(x: Any, w: Any) -> Any:
            a, c = api.pmap(lambda u, w: (u * w, w + 1), in_axes=(0, None),
                            out_axes=(0, None))(x, w)  # fmt: skip
            b = api.pmap(lambda u: u - L.pmean(u, "j"), "j", out_axes=1)(x)
            d = api.pmap(lambda u: u * 3, "j", donate_argnums=0)(x)
            e = api.pmap(lambda u: L.psum(u, "i"), "k")(x[:1])
            return a, b, c, d, e

        f = api.pmap(body, "i", in_axes=(0, None), donate_argnums=0)
        x = ns.asarray(NX)
        out = f(x, np.float32(2.0))
        return _leaves(api, out) + [x.is_deleted()]


def _nested_options_oracle() -> Any:
    return [
        NX * 2, np.moveaxis(NX - NX.mean(1, keepdims=True), 1, 2),
        np.full((2,), 3.0, np.float32), NX * 3,
        np.broadcast_to(NX[:, :1].sum(0), (2, 1, 3)), True,
    ]  # fmt: skip


def _negative_axes(ns: Any) -> Any:
    api = _api(ns)
    _refimpl_only(api, _JAX_NEGATIVE)
    with _four_devices(api):
        f = api.pmap(lambda x: x + ns.lax_.axis_index("i"), "i", in_axes=-1)
        g = api.pmap(lambda x: x * 2, "i", out_axes=-1)
        t = np.moveaxis(X, 0, -1)
        return _leaves(api, [f(t), f(t + 1), g(X), g(X)])


def _negative_axes_oracle() -> Any:
    idx = np.arange(N, dtype=np.float32)[:, None, None]
    return [X + idx, X + 1 + idx, np.moveaxis(X * 2, 0, -1), np.moveaxis(X * 2, 0, -1)]


# --- errors ---------------------------------------------------------------------------------


def _err(build: Callable[[Any, Any], Any]) -> Callable[[Any], Any]:
    def script(ns: Any) -> Any:
        api = _api(ns)
        with _four_devices(api):
            return build(api, ns)

    return script


ERRORS: list[tuple[str, Callable[[Any, Any], Any]]] = [
    ("not_callable", lambda api, ns: api.pmap(3)),
    ("static_argnums_not_ints", lambda api, ns: api.pmap(lambda x: x,
                                                         static_broadcasted_argnums="a")),
    ("static_argnums_float", lambda api, ns: api.pmap(lambda x: x,
                                                      static_broadcasted_argnums=1.5)),
    ("devices_empty", lambda api, ns: api.pmap(lambda x: x, devices=[])(X)),
    ("devices_repeated", lambda api, ns: api.pmap(lambda x: x, devices=[api.devices()[0]] * N)(X)),
    ("devices_count", lambda api, ns: api.pmap(lambda x: x, devices=api.devices()[:2])(X)),
    ("static_out_of_range", lambda api, ns: api.pmap(lambda x, s: x,
                                                     static_broadcasted_argnums=3)(X, 2)),
    ("static_unhashable", lambda api, ns: api.pmap(lambda x, s: x,
                                                   static_broadcasted_argnums=1)(X, [2])),
    ("in_axes_length", lambda api, ns: api.pmap(lambda x, y: x, in_axes=(0,))(X, X)),
    ("size_zero", lambda api, ns: api.pmap(lambda x: x)(np.zeros((0, 3), np.float32))),
    ("out_axes_out_of_bounds", lambda api, ns: api.pmap(lambda x: x, out_axes=5)(X)),
    ("ref_argument", lambda api, ns: api.pmap(lambda r: r[...])(api.new_ref(ns.asarray(X)))),
    ("axis_size_mismatch", lambda api, ns: api.pmap(lambda x: x, axis_size=3)(X)),
    ("axis_size_nothing_mapped", lambda api, ns: api.pmap(lambda x: x, in_axes=None,
                                                          axis_size=N)(X)),
    ("psum_scatter_wrong_size", lambda api, ns: api.pmap(lambda x: ns.lax_.psum_scatter(x, "i"),
                                                         "i")(X)),
    ("in_axes_beyond_rank", lambda api, ns: api.pmap(lambda x: x, in_axes=3)(X)),
    ("in_axes_negative_beyond_rank", lambda api, ns: api.pmap(lambda x: x, in_axes=-4)(X)),
    ("psum_of_typed_keys", lambda api, ns: api.pmap(lambda k: ns.lax_.psum(k, "i"), "i")(
        api.random.split(api.random.key(0), N))),
    ("pmax_of_typed_keys", lambda api, ns: api.pmap(lambda k: ns.lax_.pmax(k, "i"), "i")(
        api.random.split(api.random.key(0), N))),
    # an inner pmap naming its own devices (pmap_test.testNestedPmapsError; lane PMAPB)
    ("nested_explicit_devices", lambda api, ns: api.pmap(
        lambda x: api.pmap(lambda y: y * 2, devices=api.devices()[:3])(x))(X)),
]  # fmt: skip


def _float0_outputs(ns: Any) -> Any:
    """The gradient of an integer input (``allow_int``) out of pmap: a NumPy
    float0 array at the output's out_axes (pjrt refused its dtype)."""
    api = _api(ns)
    ints = np.arange(N * 2, dtype=np.int32).reshape(N, 2)
    g = api.grad(lambda x, i: (x * i).sum(), argnums=(0, 1), allow_int=True)
    with _four_devices(api):
        x = X[:, 0, :2]
        return [api.pmap(g)(x, ints), api.pmap(g, out_axes=1)(x, ints)]


def _more_devices_than_slices(ns: Any) -> Any:
    """devices= longer than the mapped axis: JAX 0.10.2 runs on the first
    axis-size devices of the list (eager and under jit)."""
    api, L = _api(ns), ns.lax_
    with _four_devices(api):
        f = api.pmap(lambda x: L.psum(x, "i") + L.axis_index("i"), "i", devices=api.devices()[::-1])
        return _leaves(api, f(X[:2])) + _leaves(api, api.jit(f)(X[:3]))


def _describe_sharding(y: Any) -> list[Any]:
    """What an array says of its layout: sharding type, spec and mesh (empty
    for a sharding without them), shards (shape, device, index, values),
    shard_shape, is_fully_replicated, device count."""
    s, shards = y.sharding, y.addressable_shards
    mesh = getattr(s, "mesh", None)
    index = [
        [(i.start, i.stop) if isinstance(i, slice) else ("int", i) for i in x.index] for x in shards
    ]
    return [
        type(s).__name__,
        [str(e) for e in getattr(s, "spec", ())],
        [str(n) for n in getattr(mesh, "axis_names", ())],
        [d.id for d in (mesh.devices.flat if mesh is not None else ())],
        [tuple(x.data.shape) for x in shards],
        [x.device.id for x in shards],
        str(index),
        tuple(s.shard_shape(y.shape)),
        [bool(y.is_fully_replicated), s.num_devices],
        [np.asarray(x.data) for x in shards],
    ]


def _output_sharding(out_axes: int, axis_name: Any, reverse: bool = False, size: int = N):
    """A pmap output's sharding as JAX 0.10.2 answers it (pmap runs as a
    shard_map under jit): a NamedSharding over a 1-D mesh of the pmap's
    devices named after ``axis_name`` (or ``'_internal_pmap_axis_name'``),
    the spec naming it at ``out_axes``; shards keep the mapped axis, size 1."""

    def script(ns: Any) -> Any:
        api = _api(ns)
        with _four_devices(api):
            devices = api.devices()[:size]
            devices = devices[::-1] if reverse else devices
            f = api.pmap(lambda v: v * 2, axis_name, out_axes=out_axes, devices=devices)
            return _describe_sharding(f(X[:size]))

    return script


def _unmapped_output_sharding(ns: Any) -> Any:
    """An ``out_axes=None`` output: replicated over the pmap's mesh (``P()``,
    one copy per device, ``replica_id`` m), as JAX 0.10.2."""
    api, L = _api(ns), ns.lax_
    with _four_devices(api):
        return _describe_sharding(api.pmap(lambda v: L.psum(v, "i"), "i", out_axes=None)(X))


def _jit_of_output_sharding(ns: Any) -> Any:
    """jit of a pmap output: it runs over the pmap's NamedSharding, which
    its output keeps (JAX 0.10.2)."""
    api = _api(ns)
    with _four_devices(api):
        y = api.pmap(lambda v: v * 2, "i")(X)
        return _describe_sharding(api.jit(lambda a: a + 1)(y))


def _psum_constants(ns: Any) -> Any:
    """psum of values that are no tracers (a Python int, a NumPy scalar) is
    computed by Python/NumPy, as JAX's constant case: ``psum(1, 'i')`` is the
    int 4, so ``range`` of it builds a permutation, under jit too."""
    api, L = _api(ns), ns.lax_

    def rotate(x: Any) -> Any:
        n = L.psum(1, "i")
        turned = L.ppermute(x, "i", [(i, (i + 1) % n) for i in range(n)])
        return turned * L.pmean(np.float32(3), "i") + L.psum(np.int32(2), "i")

    with _four_devices(api):
        return _leaves(api, api.pmap(rotate, "i")(X)) + _leaves(
            api, api.jit(api.pmap(rotate, "i"))(X)
        )


def _uneven_groups(ns: Any) -> Any:
    """The all-reduces over axis_index_groups of different sizes (JAX 0.10.2's
    pmap takes them; pmean divides by the first group's size), with a
    matching axis_size, and under grad."""
    api, L = _api(ns), ns.lax_
    out = []
    with _four_devices(api):
        for groups in ([[0, 1, 2], [3]], [[0, 3], [1], [2]]):
            for op in ("psum", "pmax", "pmin", "pmean"):
                f = api.pmap(lambda v, op=op, g=groups: getattr(L, op)(v, "i", axis_index_groups=g),
                             "i", axis_size=N)  # fmt: skip
                out += _leaves(api, f(X))
        cube_sum = lambda v: L.psum(v**3, "i", axis_index_groups=[[0], [1, 2, 3]]).sum()  # noqa: E731
        g = api.pmap(api.grad(cube_sum), "i")
        out += _leaves(api, g(X))
    return out


def _collective_under_varying_cond(ns: Any) -> Any:
    """A psum in a cond branch whose predicate differs between devices: the
    devices that skip the branch never join the all-reduce (JAX's CPU pmap
    waits, then aborts the process); refimpl refuses the program."""
    api = _api(ns)
    _refimpl_only(api, "JAX 0.10.2 deadlocks on it (XLA aborts the process after 40 s)")
    if api.config.backend != "pjrt":
        raise Unsupported("the reference backend runs the devices in lock step: none waits")
    L = ns.lax_
    with _four_devices(api):
        f = api.pmap(lambda x: L.cond(x.sum() > 0, lambda v: L.psum(v, "i"), lambda v: v, x),
                     "i")  # fmt: skip
        return f(X)


def _out_axes_none_varying(ns: Any) -> Any:
    api = _api(ns)
    _refimpl_only(api, "JAX 0.10.2 does not check that an out_axes=None output is unmapped")
    with _four_devices(api):
        return api.pmap(lambda x: x * 2, "i", out_axes=None)(X)


# --- pmap_test's held-back run, first half (issue 29, lane PMAPA; AGREE) ---------------------


def _passthrough_under_vmap_and_jvp(ns: Any) -> Any:
    """A pmap that returns its argument untouched, under vmap and jvp: a new
    array (float32 from a float64 NumPy argument), as every pmap output."""
    api = _api(ns)
    a = np.arange(2 * N * 3, dtype=np.float64).reshape(2, N, 3) / 4
    with _four_devices(api):
        ident = api.pmap(lambda v: v, "i")
        return [api.vmap(ident)(a), *api.jvp(ident, (a[0],), (np.ones((N, 3)),))]


def _lowered_module_and_analyses(ns: Any) -> Any:
    """A lowered/compiled pmap's module text, IR, analyses and out_info."""
    api = _api(ns)
    with _four_devices(api):
        low = api.pmap(lambda v: v - ns.lax_.pmean(v, "i"), "i", out_axes=1).lower(X)
        compiled = low.compile(compiler_options={"xla_embed_ir_in_executable": True})
        low.cost_analysis()
        compiled.memory_analysis()
        texts = [isinstance(low.as_text(*d), str) for d in ((), ("hlo",), ("stablehlo",))]
        infos = [[list(s.shape), str(s.dtype)] for s in api.tree_util.tree_leaves(low.out_info)]
        return [texts, low.compiler_ir() is not None, isinstance(compiled.as_text(), str),
                compiled.runtime_executable() is not None, infos, compiled(X)]  # fmt: skip


def _lower_abstract_arguments(ns: Any) -> Any:
    """lower takes a ShapedArray (any object with shape and dtype) for an
    argument of that type, pmap's and jit's."""
    api = _api(ns)
    sa = api.core.ShapedArray(X.shape, np.float32)
    with _four_devices(api):
        p = api.pmap(lambda v: v * 2, "i").lower(sa).compile()
        j = api.jit(lambda v: v + 1).lower(sa).compile()
        return [p(X), j(X)]


def _stages_types(ns: Any) -> Any:
    """jax.stages: the types of jit's and pmap's stage objects (a pmap
    function has no trace: no Wrapped)."""
    api = _api(ns)
    stages = importlib.import_module(f"{api.__name__}.stages")
    f = api.jit(lambda v: v * 2)
    with _four_devices(api):
        p = api.pmap(lambda v: v * 2)
        lf, lp = f.lower(X), p.lower(X)
        return [isinstance(f, stages.Wrapped), isinstance(p, stages.Wrapped),
                isinstance(f.trace(X), stages.Traced), isinstance(lf, stages.Lowered),
                isinstance(lp, stages.Lowered), isinstance(lp.compile(), stages.Compiled),
                isinstance(lp.args_info[0][0], stages.ArgInfo)]  # fmt: skip


# --- an unnamed vmap inside or around an unnamed pmap (AGREE) --------------------------------


def _unnamed_callback(outer: str) -> Callable[[Any], Any]:
    """A host callback with ``vmap_method='expand_dims'`` under an unnamed vmap
    inside (``outer='pmap'``) or around an unnamed pmap: one call per device
    with the vmap's members (the reference pmap's lock-step batch is not
    the vmap's, though both are named None). Returns the value and the
    shapes the host saw."""

    def script(ns: Any) -> Any:
        api = _api(ns)
        seen: list[tuple[int, ...]] = []

        def host(a: Any) -> Any:
            seen.append(np.shape(a))
            return np.asarray(a) * 2

        def f(x: Any) -> Any:
            shape = api.ShapeDtypeStruct(x.shape, x.dtype)
            return api.pure_callback(host, shape, x, vmap_method="expand_dims")

        with _four_devices(api):
            if outer == "pmap":
                out = api.pmap(api.vmap(f))(X[:, :, 0])
            else:
                out = api.vmap(api.pmap(f))(X[:, :, 0].T)
        return _leaves(api, out) + [np.array(sorted(seen), np.int32)]

    return script


def _custom_vmap_under(outer: str) -> Callable[[Any], Any]:
    """A custom_vmap function under pmap alone (``outer='none'``: each device
    runs the function, not the rule) or in a pmap inside a vmap (the rule
    sees the vmap's 2 members, not the 4 devices). Returns the value and the
    rule's calls (axis size, argument shape)."""

    def script(ns: Any) -> Any:
        api = _api(ns)
        calls: list[tuple[int, ...]] = []

        @api.custom_batching.custom_vmap
        def f(x: Any) -> Any:
            return api.numpy.sin(x)

        @f.def_vmap
        def rule(size: int, batched: Any, xs: Any) -> Any:
            calls.append((size, *xs.shape))
            return api.numpy.cos(xs), batched[0]

        with _four_devices(api):
            if outer == "none":
                out = api.pmap(f)(X[:, 0, 0])
            else:
                out = api.vmap(api.pmap(f))(X[:, :, 0].T)
        return _leaves(api, out) + [np.array(calls, np.int32).reshape(-1, 2)]

    return script


def cases() -> Iterator[Case]:
    yield _case("unnamed/custom_vmap_in_pmap", _custom_vmap_under("none"), AGREE)
    yield _case("unnamed/custom_vmap_in_pmap_in_vmap", _custom_vmap_under("vmap"), AGREE)
    yield _case("unnamed/callback_in_vmap_in_pmap", _unnamed_callback("pmap"), AGREE)
    yield _case("unnamed/callback_in_pmap_in_vmap", _unnamed_callback("vmap"), AGREE)
    for name, fun, kw in UNDER_VMAP:
        yield _under_vmap(name, fun, kw)
    yield _case("python_route/mixed_shards", _mixed_shards, Oracle(_mixed_shards_oracle))
    yield _case("python_route/one_device", _one_device, Oracle(lambda: [(Q[:1, :1] - 1) * 3] * 2))
    yield _case("python_route/host_callback", _host_callback, Oracle(_host_callback_oracle))
    yield _case("python_scalars", _python_scalars, Oracle(_python_scalars_oracle))
    yield _case("statics_with_full_in_axes", _statics_with_full_in_axes,
                Oracle(lambda: [X * 2 + X, X - X[0]]))  # fmt: skip
    yield _case("donate_sharded", _donate_sharded, Oracle(lambda: [X * 2 + 1, True]))
    yield _case("donate_unsharded", _donate_unsharded, Oracle(lambda: [X + 1, True]))
    yield _case("shards_protocol", _shards_protocol, Oracle(_shards_oracle))
    yield _case("output_sharding/named", _output_sharding(0, "i"), AGREE)
    yield _case("output_sharding/unnamed", _output_sharding(0, None), AGREE)
    yield _case("output_sharding/out_axes_1", _output_sharding(1, "i"), AGREE)
    yield _case("output_sharding/out_axes_2", _output_sharding(2, "i"), AGREE)
    yield _case("output_sharding/reversed_devices", _output_sharding(0, "i", True), AGREE)
    yield _case("output_sharding/two_devices", _output_sharding(0, "i", size=2), AGREE)
    yield _case("output_sharding/unmapped_output", _unmapped_output_sharding, AGREE)
    yield _case("output_sharding/jit_of_output", _jit_of_output_sharding, AGREE)
    yield _case("nested/collectives", _nested, Oracle(_nested_oracle))
    yield _case("nested/options", _nested_options, Oracle(_nested_options_oracle))
    yield _case("negative_axes", _negative_axes, Oracle(_negative_axes_oracle))
    yield _case("uneven_groups", _uneven_groups, AGREE)
    yield _case("psum_constants", _psum_constants, AGREE)
    yield _case("more_devices_than_slices", _more_devices_than_slices, AGREE)
    yield _case("float0_outputs", _float0_outputs, AGREE)
    yield _case("heldback/passthrough_under_vmap_and_jvp", _passthrough_under_vmap_and_jvp, AGREE)
    yield _case("heldback/lowered_module_and_analyses", _lowered_module_and_analyses, AGREE)
    yield _case("heldback/lower_abstract_arguments", _lower_abstract_arguments, AGREE)
    yield _case("heldback/stages_types", _stages_types, AGREE)
    for name, build in ERRORS:
        yield _case(f"errors/{name}", _err(build), AGREE)
    yield _case("errors/collective_under_varying_cond", _collective_under_varying_cond,
                Raises(ValueError, "cond whose predicate may differ"))  # fmt: skip
    yield _case("errors/out_axes_none_varying", _out_axes_none_varying,
                Raises(ValueError, "out_axes=None"))  # fmt: skip
