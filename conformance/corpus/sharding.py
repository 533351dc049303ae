"""Sharding and shard_map (docs/semantics.md "Sharding") over 4 devices,
against NumPy oracles: ``device_put`` onto a ``NamedSharding``, ``jit`` with
``in_shardings``/``out_shardings`` over 1-D and 2-D meshes,
``with_sharding_constraint``, and ``shard_map`` with each collective.

Each case observes the values and, per output, the layout: one row per
shard, sorted by device id, ``[device id, start_0, stop_0, start_1, ...]``.
The oracle's layout is written out from the mesh grid (devices in row-major
order, the first mesh axis named in a spec entry the major one).

An implementation with fewer than 4 devices skips these cases (as the pmap
family: JAX needs ``XLA_FLAGS=--xla_force_host_platform_device_count=4``
before import; refimpl's reference backend gets 4 virtual devices).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, Oracle, script_case
from conformance.compare import Tolerance
from conformance.corpus.pmap import _api, _four_devices
from conformance.namespace import Unsupported
from conformance.observe import Raises

TOL = Tolerance(ulps={"float32": 8}, atol_eps=8)
X44 = np.arange(16.0, dtype=np.float32).reshape(4, 4)
X8 = np.arange(8.0, dtype=np.float32)
MESHES = {"1d": ((4,), ("x",)), "2d": ((2, 2), ("a", "b"))}
W44 = ((np.arange(16) % 3 - 1) / 4).astype(np.float32).reshape(4, 4)
W42 = W44[:, :2].copy()


def _mesh(api: Any, kind: str) -> Any:
    if not hasattr(api, "sharding") or not hasattr(api.sharding, "NamedSharding"):
        raise Unsupported("no jax.sharding")
    shape, names = MESHES[kind]
    devices = np.empty(4, dtype=object)
    devices[:] = list(api.devices()[:4])
    auto = (api.sharding.AxisType.Auto,) * len(names)
    return api.sharding.Mesh(devices.reshape(shape), names, axis_types=auto)


def _ns(api: Any, mesh: Any, *spec: Any) -> Any:
    return api.sharding.NamedSharding(mesh, api.sharding.PartitionSpec(*spec))


def _layout(array: Any) -> np.ndarray:
    rows = []
    for shard in array.addressable_shards:
        row = [shard.device.id]
        for index, n in zip(shard.index, array.shape):
            start, stop, _ = index.indices(n)
            row += [start, stop]
        rows.append(row)
    return np.array(sorted(rows), dtype=np.int32)


def _oracle_layout(shape: tuple[int, ...], kind: str, spec: tuple) -> np.ndarray:
    """The layout ``NamedSharding(mesh, P(*spec))`` gives, from the mesh grid."""
    mesh_shape, names = MESHES[kind]
    rows = []
    for device, coords in enumerate(np.ndindex(*mesh_shape)):
        at = dict(zip(names, coords))
        row = [device]
        for d, n in enumerate(shape):
            entry = spec[d] if d < len(spec) else None
            axes = () if entry is None else (entry if isinstance(entry, tuple) else (entry,))
            block, count = 0, 1
            for axis in axes:  # the first axis named is the major one
                size = mesh_shape[names.index(axis)]
                block, count = block * size + at[axis], count * size
            step = n // count
            row += [block * step, (block + 1) * step]
        rows.append(row)
    return np.array(sorted(rows), dtype=np.int32)


def _case(name: str, build: Any, expected: Any) -> Case:
    def script(ns: Any) -> Any:
        api = _api(ns)
        with _four_devices(api):
            out = build(api, ns.lax_)
            leaves = api.tree_util.tree_leaves(out)
            return [np.asarray(v) for v in leaves] + [_layout(v) for v in leaves]

    return script_case(
        f"sharding/{name}", script, expect=Oracle(expected), tolerance=TOL, tags=("sharding",)
    )


def _error_case(name: str, build: Any) -> Case:
    def script(ns: Any) -> Any:
        api = _api(ns)
        with _four_devices(api):
            return build(api, ns.lax_)

    return script_case(
        f"sharding/errors/{name}", script, expect=Raises(ValueError), tags=("sharding",)
    )


def _sm(api: Any, f: Any, mesh: Any, in_specs: Any, out_specs: Any) -> Any:
    return api.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs)


def _p(api: Any, *spec: Any) -> Any:
    return api.sharding.PartitionSpec(*spec)


def cases() -> Iterator[Case]:
    # device_put onto a NamedSharding
    for kind, spec, x in [
        ("2d", ("a", "b"), X44),
        ("2d", (None, "b"), X44),
        ("2d", ("b",), X44),
        ("2d", (("b", "a"),), X8),
        ("2d", (("a", "b"),), X8),
        ("1d", (None, "x"), X44),
        ("2d", (), X44),
    ]:
        label = "_".join("-".join(e) if isinstance(e, tuple) else str(e) for e in spec) or "rep"

        def build(api: Any, L: Any, kind=kind, spec=spec, x=x) -> Any:
            return api.device_put(x, _ns(api, _mesh(api, kind), *spec))

        def expected(kind=kind, spec=spec, x=x) -> Any:
            return [x, _oracle_layout(x.shape, kind, spec)]

        yield _case(f"device_put/{kind}/{label}", build, expected)

    # jit with in/out shardings: the program's value, laid out as out_shardings says
    def jit_1d(api: Any, L: Any) -> Any:
        m = _mesh(api, "1d")
        f = api.jit(lambda v: v * 2 + 1, in_shardings=_ns(api, m, "x"), out_shardings=_ns(api, m))
        return f(X8)

    yield _case("jit/1d", jit_1d, lambda: [X8 * 2 + 1, _oracle_layout((8,), "1d", ())])

    def jit_2d(api: Any, L: Any) -> Any:
        m = _mesh(api, "2d")
        f = api.jit(
            lambda v, w: (v @ w, v.sum(0)),
            in_shardings=(_ns(api, m, "a", "b"), _ns(api, m, "b", None)),
            out_shardings=(_ns(api, m, None, "a"), _ns(api, m, ("a", "b"))),
        )
        return f(X44, X44.T.copy())

    yield _case(
        "jit/2d",
        jit_2d,
        lambda: [
            X44 @ X44.T,
            X44.sum(0),
            _oracle_layout((4, 4), "2d", (None, "a")),
            _oracle_layout((4,), "2d", (("a", "b"),)),
        ],
    )

    # elementwise with one sharding throughout: each device needs only its
    # blocks (pjrt runs one single-device executable per device); called
    # twice, the second time on the first call's sharded outputs
    def local_step(api: Any) -> Any:
        jnp = api.numpy
        return lambda v, w: (jnp.where(v > 3, jnp.sin(v) * 2.0 + w, w - 1), jnp.maximum(v, w) * v)

    def np_step(v: np.ndarray, w: np.ndarray) -> list[np.ndarray]:
        first = np.where(v > 3, np.sin(v) * np.float32(2) + w, w - 1).astype(np.float32)
        return [first, (np.maximum(v, w) * v).astype(np.float32)]

    for kind, spec, x in [("1d", ("x",), X8), ("2d", ("a", "b"), X44), ("2d", (None, "b"), X44)]:
        label = "_".join(str(e) for e in spec)

        def shard_local(api: Any, L: Any, kind=kind, spec=spec, x=x) -> Any:
            s = _ns(api, _mesh(api, kind), *spec)
            f = api.jit(local_step(api), in_shardings=(s, s), out_shardings=(s, s))
            return f(*f(x, x[::-1].copy()))

        def shard_local_expected(kind=kind, spec=spec, x=x) -> Any:
            layout = _oracle_layout(x.shape, kind, spec)
            return [*np_step(*np_step(x, x[::-1].copy())), layout, layout]

        yield _case(f"jit/shard_local/{kind}/{label}", shard_local, shard_local_expected)

    def wsc(api: Any, L: Any) -> Any:
        return L.with_sharding_constraint(X44, _ns(api, _mesh(api, "2d"), "b", "a"))

    yield _case("with_sharding_constraint/eager", wsc,
                lambda: [X44, _oracle_layout((4, 4), "2d", ("b", "a"))])  # fmt: skip

    def wsc_jit(api: Any, L: Any) -> Any:
        m = _mesh(api, "2d")

        def f(v: Any) -> Any:
            return L.with_sharding_constraint(v * 3, _ns(api, m, "a", "b")).sum(1)

        return api.jit(f, out_shardings=_ns(api, m, "b"))(X44)

    yield _case("with_sharding_constraint/jit", wsc_jit,
                lambda: [(X44 * 3).sum(1), _oracle_layout((4,), "2d", ("b",))])  # fmt: skip

    # shard_map with each collective
    blocks = X44.reshape(2, 2, 2, 2).transpose(0, 2, 1, 3)  # [a, b] -> the 2x2 block

    def sm_psum(api: Any, L: Any) -> Any:
        m = _mesh(api, "2d")
        return _sm(api, lambda v: L.psum(v, "a"), m, _p(api, "a", "b"), _p(api, None, "b"))(X44)

    yield _case(
        "shard_map/psum",
        sm_psum,
        lambda: [X44[:2] + X44[2:], _oracle_layout((2, 4), "2d", (None, "b"))],
    )

    def sm_psum_both(api: Any, L: Any) -> Any:
        m = _mesh(api, "2d")
        return _sm(api, lambda v: L.psum(v, ("a", "b")), m, _p(api, ("a", "b")), _p(api))(X8)

    yield _case(
        "shard_map/psum_two_axes",
        sm_psum_both,
        lambda: [X8.reshape(4, 2).sum(0), _oracle_layout((2,), "2d", ())],
    )

    def sm_all_gather(api: Any, L: Any) -> Any:
        m = _mesh(api, "2d")
        f = _sm(api, lambda v: L.all_gather(v, "b", tiled=True), m, _p(api, "a", "b"),
                _p(api, "a", "b"))  # fmt: skip
        return f(X44)

    def all_gather_expected() -> Any:
        rows = [np.concatenate([blocks[a, 0], blocks[a, 1]]) for a in range(2)]
        per_position = [[rows[a]] * 2 for a in range(2)]
        value = np.block([[per_position[a][b] for b in range(2)] for a in range(2)])
        return [value, _oracle_layout((8, 4), "2d", ("a", "b"))]

    yield _case("shard_map/all_gather_tiled", sm_all_gather, all_gather_expected)

    def sm_ppermute(api: Any, L: Any) -> Any:
        m = _mesh(api, "1d")
        perm = [(i, (i + 1) % 4) for i in range(4)]
        return _sm(api, lambda v: L.ppermute(v, "x", perm), m, _p(api, "x"), _p(api, "x"))(X8)

    yield _case(
        "shard_map/ppermute_ring",
        sm_ppermute,
        lambda: [np.roll(X8, 2), _oracle_layout((8,), "1d", ("x",))],
    )

    def sm_psum_scatter(api: Any, L: Any) -> Any:
        m = _mesh(api, "2d")
        f = _sm(api, lambda v: L.psum_scatter(v, "b", scatter_dimension=1, tiled=True), m,
                _p(api, "a", None), _p(api, "a", "b"))  # fmt: skip
        return f(X44)

    yield _case(
        "shard_map/psum_scatter_tiled",
        sm_psum_scatter,
        lambda: [X44 * 2, _oracle_layout((4, 4), "2d", ("a", "b"))],
    )

    def sm_axis_index(api: Any, L: Any) -> Any:
        m = _mesh(api, "2d")

        def f(v: Any) -> Any:
            return v + (L.axis_index("a") * 10 + L.axis_index("b")).astype(v.dtype)

        return _sm(api, f, m, _p(api, ("b", "a")), _p(api, ("a", "b")))(X8)

    def axis_index_expected() -> Any:
        # block k of the input is at mesh position (a, b) = (k % 2, k // 2) (P(('b', 'a')));
        # the output puts position (a, b)'s block at 2a + b (P(('a', 'b')))
        out = np.empty(8, np.float32)
        for k in range(4):
            a, b = k % 2, k // 2
            out[2 * (2 * a + b) : 2 * (2 * a + b) + 2] = X8[2 * k : 2 * k + 2] + 10 * a + b
        return [out, _oracle_layout((8,), "2d", (("a", "b"),))]

    yield _case("shard_map/axis_index_two_axes", sm_axis_index, axis_index_expected)

    def sm_grad_in_jit(api: Any, L: Any) -> Any:
        m = _mesh(api, "1d")

        def loss(v: Any) -> Any:
            return _sm(api, lambda b: L.psum((b**2).sum(), "x"), m, _p(api, "x"), _p(api))(v)

        return api.device_put(api.jit(api.grad(loss))(X44), _ns(api, m, "x"))

    yield _case(
        "shard_map/grad_in_jit",
        sm_grad_in_jit,
        lambda: [2 * X44, _oracle_layout((4, 4), "1d", ("x",))],
    )

    def sm_pmean_under_vmap(api: Any, L: Any) -> Any:
        m = _mesh(api, "1d")
        f = _sm(api, lambda b: L.pmean(b.sum(), "x"), m, _p(api, "x"), _p(api))
        return api.device_put(api.vmap(f)(X44), _ns(api, m))

    yield _case(
        "shard_map/pmean_under_vmap",
        sm_pmean_under_vmap,
        lambda: [X44.sum(1) / 4, _oracle_layout((4,), "1d", ())],
    )

    def jit_tree(api: Any, L: Any) -> Any:
        m = _mesh(api, "2d")
        f = api.jit(
            lambda p, x: {"y": p["w"] @ x, "n": (x * x).sum()},
            in_shardings=({"w": _ns(api, m, "a")}, _ns(api, m)),
            out_shardings={"y": _ns(api, m, "b"), "n": _ns(api, m)},
        )
        return f({"w": X44}, X44[0])

    yield _case(
        "jit/tree_prefixes",
        jit_tree,
        lambda: [
            (X44[0] ** 2).sum(),
            X44 @ X44[0],
            _oracle_layout((), "2d", ()),
            _oracle_layout((4,), "2d", ("b",)),
        ],
    )

    yield from _inferred_cases()

    def from_single_device_arrays(api: Any, L: Any) -> Any:
        m = _mesh(api, "2d")
        sharding = _ns(api, m, None, "b")
        parts = [
            api.device_put(X44[index], device)
            for device, index in sharding.devices_indices_map((4, 4)).items()
        ]
        return api.make_array_from_single_device_arrays((4, 4), sharding, parts)

    yield _case(
        "make_array_from_single_device_arrays",
        from_single_device_arrays,
        lambda: [X44, _oracle_layout((4, 4), "2d", (None, "b"))],
    )

    # JAX's checks
    def indivisible(api: Any, L: Any) -> Any:
        return api.device_put(np.ones((3, 4), np.float32), _ns(api, _mesh(api, "2d"), "a"))

    yield _error_case("device_put_indivisible", indivisible)

    def rank(api: Any, L: Any) -> Any:
        m = _mesh(api, "2d")
        return api.jit(lambda v: v, in_shardings=_ns(api, m, "a", "b"))(np.ones(4, np.float32))

    yield _error_case("jit_spec_longer_than_rank", rank)

    def unknown_axis(api: Any, L: Any) -> Any:
        return _ns(api, _mesh(api, "2d"), "c")

    yield _error_case("named_sharding_unknown_axis", unknown_axis)

    def not_replicated(api: Any, L: Any) -> Any:
        m = _mesh(api, "2d")
        return _sm(api, lambda v: v, m, _p(api, "a", "b"), _p(api, None, "b"))(X44)

    yield _error_case("shard_map_output_not_replicated", not_replicated)

    def sm_indivisible(api: Any, L: Any) -> Any:
        m = _mesh(api, "2d")
        f = _sm(api, lambda v: v, m, _p(api, "a", "b"), _p(api, "a", "b"))
        return f(np.ones((3, 4), np.float32))

    yield _error_case("shard_map_indivisible", sm_indivisible)

    # How JAX 0.10.2 prints shardings and which memory kind it gives a
    # sharding made without one ('device' on CPU; None over an AbstractMesh).
    def reprs(api: Any, L: Any) -> Any:
        m = _mesh(api, "2d")
        named = _ns(api, m, "a")
        put = api.device_put(X8, _ns(api, _mesh(api, "1d"), "x"))
        return [
            repr(_p(api, "a", None)), repr(_p(api)), repr(_p(api, ("a", "b"))),
            repr(m), str(m), repr(named), named.memory_kind,
            put.sharding.memory_kind, api.numpy.ones(3).sharding.memory_kind,
            repr(api.sharding.NamedSharding(m.abstract_mesh, _p(api, "a")).memory_kind),
        ]  # fmt: skip

    yield script_case(
        "sharding/reprs_and_memory_kind",
        lambda ns: _run_plain(ns, reprs),
        expect=[
            "P('a', None)",
            "P()",
            "P(('a', 'b'),)",
            "Mesh(axis_sizes=(2, 2), axis_names=('a', 'b'), axis_types=(Auto, Auto))",
            "Mesh('a': 2, 'b': 2, axis_types=(Auto, Auto))",
            "NamedSharding(mesh=Mesh('a': 2, 'b': 2, axis_types=(Auto, Auto)), spec=P('a',), "
            "memory_kind=device)",
            "device",
            "device",
            "device",
            "None",
        ],  # fmt: skip
        tags=("sharding",),
    )


def _explicit_mesh(api: Any, kind: str) -> Any:
    """The mesh of ``_mesh`` with Explicit axes (``make_mesh``'s default in
    JAX 0.10.2): the layouts of results the sharding rule types as JAX does."""
    auto = _mesh(api, kind)
    explicit = (api.sharding.AxisType.Explicit,) * len(auto.axis_names)
    return api.sharding.Mesh(auto.devices, auto.axis_names, axis_types=explicit)


def _inferred_cases() -> Iterator[Case]:
    """Sharded arrays through a plain ``jit`` (no shardings, or only one of
    the two) and eager operations: each result laid out as the sharding rule
    types it (docs/sharding_rules.md), NumPy data and scalars replicated."""

    def plain_1d(api: Any, L: Any) -> Any:
        x = api.device_put(X8, _ns(api, _explicit_mesh(api, "1d"), "x"))
        f = api.jit(lambda v, w, c: (v * w + c, (v * 2).sum()))
        return f(x, np.ones(8, np.float32), 3.0)

    yield _case("plain_jit/1d", plain_1d, lambda: [X8 + 3, X8.sum() * 2,
                _oracle_layout((8,), "1d", ("x",)), _oracle_layout((), "1d", ())])  # fmt: skip

    def plain_2d(api: Any, L: Any) -> Any:
        a = api.device_put(X44, _ns(api, _explicit_mesh(api, "2d"), "a", "b"))
        return api.jit(lambda v: (v * 2, v.sum(0), v.T))(a)

    yield _case("plain_jit/2d", plain_2d, lambda: [X44 * 2, X44.sum(0), X44.T,
                _oracle_layout((4, 4), "2d", ("a", "b")), _oracle_layout((4,), "2d", ("b",)),
                _oracle_layout((4, 4), "2d", ("b", "a"))])  # fmt: skip

    def plain_fed_back(api: Any, L: Any) -> Any:
        f = api.jit(lambda v: v * 2 + 1)
        return f(f(api.device_put(X8, _ns(api, _explicit_mesh(api, "1d"), "x"))))

    yield _case("plain_jit/fed_back", plain_fed_back,
                lambda: [(X8 * 2 + 1) * 2 + 1, _oracle_layout((8,), "1d", ("x",))])  # fmt: skip

    def in_shardings_only(api: Any, L: Any) -> Any:
        s = _ns(api, _explicit_mesh(api, "1d"), "x")
        return api.jit(lambda v: (v + 1, v.sum()), in_shardings=s)(X8)

    yield _case("plain_jit/in_shardings_only", in_shardings_only, lambda: [X8 + 1, X8.sum(),
                _oracle_layout((8,), "1d", ("x",)), _oracle_layout((), "1d", ())])  # fmt: skip

    def eager_1d(api: Any, L: Any) -> Any:
        x = api.device_put(X8, _ns(api, _explicit_mesh(api, "1d"), "x"))
        return x * 2, api.numpy.sin(x), x.sum(), x + x

    split, whole = _oracle_layout((8,), "1d", ("x",)), _oracle_layout((), "1d", ())
    yield _case("eager/1d", eager_1d, lambda: [X8 * 2, np.sin(X8), X8.sum(), X8 * 2,
                split, split, whole, split])  # fmt: skip

    def eager_2d(api: Any, L: Any) -> Any:
        a = api.device_put(X44, _ns(api, _explicit_mesh(api, "2d"), None, "b"))
        return a - 1, a.sum(1)

    columns = _oracle_layout((4, 4), "2d", (None, "b"))
    yield _case("eager/2d", eager_2d, lambda: [X44 - 1, X44.sum(1),
                columns, _oracle_layout((4,), "2d", ())])  # fmt: skip

    def eager_grad_1d(api: Any, L: Any) -> Any:
        # eager AD keeps the mesh: the gradient typed as its primal (JAX
        # 0.10.2 needs set_mesh for an eager backward pass over Explicit axes)
        mesh = _explicit_mesh(api, "1d")
        x = api.device_put(X8, _ns(api, mesh, "x"))
        with api.set_mesh(mesh):
            value, g = api.value_and_grad(lambda v: (v**2).sum())(x)
            return value, g, api.grad(lambda v: (v * 3.0).sum())(x)

    yield _case("eager_ad/grad_1d", eager_grad_1d, lambda: [(X8**2).sum(), 2 * X8,
                np.full(8, 3.0, np.float32), whole, split, split])  # fmt: skip

    def eager_vjp_jvp_2d(api: Any, L: Any) -> Any:
        mesh = _explicit_mesh(api, "2d")
        a = api.device_put(X44, _ns(api, mesh, None, "b"))
        with api.set_mesh(mesh):
            (ct,) = api.vjp(api.numpy.sin, a)[1](api.numpy.ones_like(a))
            return ct, api.jvp(lambda v: v * v, (a,), (a,))

    yield _case("eager_ad/vjp_jvp_2d", eager_vjp_jvp_2d, lambda: [np.cos(X44), X44 * X44,
                2 * X44 * X44, columns, columns, columns])  # fmt: skip

    def grad_data_parallel(api: Any, L: Any) -> Any:
        # params P(), batch split: AD's transposed x @ w contracts the split
        # batch axis; JAX types it as w (P()), refimpl's rule as the primal
        mesh = _explicit_mesh(api, "1d")
        w = api.device_put(W42, _ns(api, mesh))
        x = api.device_put(X44 / 16, _ns(api, mesh, "x"))
        loss = lambda w, x: ((x @ w) ** 2).mean()  # noqa: E731
        return api.jit(api.value_and_grad(loss))(w, x)

    def grad_data_parallel_expected() -> Any:
        x, w = (X44 / 16).astype(np.float64), W42.astype(np.float64)
        y = x @ w
        f32 = np.float32
        return [f32((y**2).mean()), (x.T @ (2 * y / y.size)).astype(f32),
                _oracle_layout((), "1d", ()), _oracle_layout((4, 2), "1d", ())]  # fmt: skip

    yield _case("plain_jit/grad_data_parallel", grad_data_parallel, grad_data_parallel_expected)

    def grad_model_parallel(api: Any, L: Any) -> Any:
        # 2 x 2: w1 split on 'b' (out), w2 on 'b' (in); h @ w2 contracts 'b'
        # on both sides, so it names its result's sharding (out_sharding)
        mesh = _explicit_mesh(api, "2d")
        x = api.device_put(X44 / 16, _ns(api, mesh, "a", None))
        w1 = api.device_put(W44, _ns(api, mesh, None, "b"))
        w2 = api.device_put(W44.T.copy(), _ns(api, mesh, "b", None))
        out = _ns(api, mesh, "a", None)

        def forward(w1, w2, x):
            return api.numpy.matmul(api.numpy.tanh(x @ w1), w2, out_sharding=out)

        grads = api.grad(lambda w1, w2, x: (forward(w1, w2, x) ** 2).sum(), argnums=(0, 1))
        return api.jit(forward)(w1, w2, x), api.jit(grads)(w1, w2, x)

    def grad_model_parallel_expected() -> Any:
        x, w1, w2 = (X44 / 16).astype(np.float64), W44.astype(np.float64), W44.T.astype(np.float64)
        h = np.tanh(x @ w1)
        y = h @ w2
        dh = (2 * y) @ w2.T * (1 - h**2)
        return [y.astype(np.float32), (x.T @ dh).astype(np.float32),
                (h.T @ (2 * y)).astype(np.float32),
                _oracle_layout((4, 4), "2d", ("a",)), _oracle_layout((4, 4), "2d", (None, "b")),
                _oracle_layout((4, 4), "2d", ("b",))]  # fmt: skip

    yield _case("plain_jit/grad_model_parallel", grad_model_parallel, grad_model_parallel_expected)

    def out_sharding_auto_axes(api: Any, L: Any) -> Any:
        mesh = _mesh(api, "2d")
        x = api.device_put(X44, _ns(api, mesh, "a", "b"))
        out = _ns(api, mesh, "a", None)
        return api.jit(lambda v: api.numpy.matmul(v, v, out_sharding=out))(x)

    yield _error_case("out_sharding_auto_axes", out_sharding_auto_axes)

    def eager_grad_loops(api: Any, L: Any) -> Any:
        # the seed's cotangent meets a split loop carry / cond branch
        mesh = _explicit_mesh(api, "1d")
        x = api.device_put(X8 / 8, _ns(api, mesh, "x"))
        body = lambda c, _: (c * api.numpy.sin(c), None)  # noqa: E731
        scan = lambda v: L.scan(body, v, None, length=3)[0].sum()  # noqa: E731
        cond = lambda v: L.cond(True, lambda u: (u * u).sum(), lambda u: u.sum(), v)  # noqa: E731
        with api.set_mesh(mesh):
            return api.grad(scan)(x), api.grad(cond)(x)

    def loops_oracle() -> list:
        c, d = (X8 / 8).astype(np.float64), np.ones(8)
        for _ in range(3):  # d(c sin c)/dc = sin c + c cos c, chained
            c, d = c * np.sin(c), d * (np.sin(c) + c * np.cos(c))
        return [d.astype(np.float32), X8 / 4, split, split]

    yield _case("eager_ad/grad_scan_cond", eager_grad_loops, loops_oracle)

    def two_meshes(api: Any, L: Any) -> Any:
        x = api.device_put(X8, _ns(api, _explicit_mesh(api, "1d"), "x"))
        y = api.device_put(X8, _ns(api, _explicit_mesh(api, "2d"), "a"))
        return api.jit(lambda v, w: v + w)(x, y)

    yield _error_case("plain_jit_two_meshes", two_meshes)
    yield from _fuzzer_rule_cases()
    yield from _closure_cases()
    yield from _random_out_sharding_cases()


class ShardingTypeError(Exception):
    """Stands for JAX's ``jax._src.core.ShardingTypeError`` (and refimpl's):
    expected exceptions are compared by class name."""


def _fuzzer_rule_cases() -> Iterator[Case]:
    """Rule differences issue 33's ``sharding_plain`` fuzzer found: a gather
    window narrower than its split axis (Auto: replicated, never an uneven
    split), a scatter with batching axes, a reshape moving a split axis next
    to a new size-1 axis (Explicit: refused, as JAX)."""
    x41 = np.arange(4.0, dtype=np.float32).reshape(4, 1)

    def gather_narrow_window(api: Any, L: Any) -> Any:
        x = api.device_put(x41, _ns(api, _mesh(api, "1d"), "x"))
        dn = L.GatherDimensionNumbers((0,), (1,), ())
        gather = lambda v: L.gather(v, np.zeros((0,), np.int32), dn, (2, 1))  # noqa: E731
        return gather(x), api.jit(gather)(x)

    whole = _oracle_layout((2,), "1d", ())
    yield _case("plain_jit/gather_narrow_window", gather_narrow_window,
                lambda: [x41[:2, 0], x41[:2, 0], whole, whole])  # fmt: skip

    def scatter_batching(api: Any, L: Any) -> Any:
        x = api.device_put(X44[:2, :3], _ns(api, _explicit_mesh(api, "1d")))
        dn = L.ScatterDimensionNumbers((), (1,), (1,), (0,), (0,))
        ones = np.ones(2, np.float32)
        add = lambda v: L.scatter_add(v, np.zeros((2, 1), np.int32), ones, dn)  # noqa: E731
        return add(x), api.jit(add)(x)

    added = X44[:2, :3] + np.array([1, 0, 0], np.float32)
    rows = _oracle_layout((2, 3), "1d", ())
    yield _case("plain_jit/scatter_add_batching", scatter_batching,
                lambda: [added, added, rows, rows])  # fmt: skip

    def reshape_leading_one(api: Any, L: Any) -> Any:
        x = api.device_put(X44, _ns(api, _explicit_mesh(api, "1d"), "x"))
        return api.jit(lambda v: v.reshape(1, 16))(x)

    yield script_case(
        "sharding/errors/reshape_leading_one_explicit",
        lambda ns: _run_plain(ns, reshape_leading_one),
        expect=Raises(ShardingTypeError, "This reshape is not supported"),
        tags=("sharding",),
    )


def _run_plain(ns: Any, build: Any) -> Any:
    api = _api(ns)
    with _four_devices(api):
        return build(api, ns.lax_)


def _closure_cases() -> Iterator[Case]:
    """Issue 33's leftovers: ``jit`` of a function closing over an array split
    on Explicit axes (its sharding is part of its type, as JAX 0.10.2:
    outputs typed by it; over one device JAX's device-assignment error),
    eager indexing of a split array (JAX's gather), and ``set_mesh`` while a
    transformation traces."""

    def closure_replicated_argument(api: Any, L: Any) -> Any:
        mesh = _explicit_mesh(api, "1d")
        c = api.device_put(X8, _ns(api, mesh, "x"))
        r = api.device_put(X8 + 1, _ns(api, mesh))
        return api.jit(lambda a: (a * c, a * 2))(r)

    yield _case("plain_jit/closure_replicated_argument", closure_replicated_argument,
                lambda: [X8 * (X8 + 1), (X8 + 1) * 2, _oracle_layout((8,), "1d", ("x",)),
                         _oracle_layout((8,), "1d", ())])  # fmt: skip

    def closure_under_set_mesh(api: Any, L: Any) -> Any:
        mesh = _explicit_mesh(api, "2d")
        c = api.device_put(X44, _ns(api, mesh, "a", "b"))
        with api.set_mesh(mesh):
            return api.jit(lambda a: (a + c, c.sum(0)))(np.ones((4, 4), np.float32))

    yield _case("plain_jit/closure_under_set_mesh", closure_under_set_mesh,
                lambda: [X44 + 1, X44.sum(0), _oracle_layout((4, 4), "2d", ("a", "b")),
                         _oracle_layout((4,), "2d", ("b",))])  # fmt: skip

    def closure_one_device(api: Any, L: Any) -> Any:
        c = api.device_put(X8, _ns(api, _explicit_mesh(api, "1d"), "x"))
        return api.jit(lambda a: a + c)(np.ones(8, np.float32))

    def grad_of_jit_closure(api: Any, L: Any) -> Any:
        # outside jit: JAX makes the closed-over array a residual argument of
        # the backward jit (over Auto axes its gradient comes out P('x'));
        # refimpl's backward pass runs on one device (conformance/known.py)
        c = api.device_put(X8, _ns(api, _mesh(api, "1d"), "x"))
        return api.grad(api.jit(lambda w: (w * c).sum()))(np.ones(8, np.float32))

    yield _case("plain_jit/grad_of_jit_closure_auto", grad_of_jit_closure,
                lambda: [X8, np.array([[0, 0, 8]], np.int32)])  # fmt: skip

    def under_set_mesh_unsharded(api: Any, L: Any) -> Any:
        # no argument or constant names the mesh: refimpl runs the call on
        # one device; JAX lays its output replicated over the current mesh
        # (conformance/known.py)
        with api.set_mesh(_explicit_mesh(api, "1d")):
            return api.jit(lambda a: a * 2)(X8)

    yield _case("plain_jit/under_set_mesh_unsharded", under_set_mesh_unsharded,
                lambda: [X8 * 2, np.array([[0, 0, 8]], np.int32)])  # fmt: skip

    def eager_index(api: Any, L: Any) -> Any:
        # a concrete array over several devices is indexed with a gather
        # when an index picks part of an axis: Auto axes leave a split axis
        # so indexed replicated, keep the others' split
        mesh = _mesh(api, "1d")
        x = api.device_put(X8, _ns(api, mesh, "x"))
        a = api.device_put(X44, _ns(api, mesh, "x", None))
        return x[::2], x[0:2], a[:, 1:3], a[0]

    yield _case("eager/index_partial_slices", eager_index,
                lambda: [X8[::2], X8[0:2], X44[:, 1:3], X44[0], _oracle_layout((4,), "1d", ()),
                         _oracle_layout((2,), "1d", ()), _oracle_layout((4, 2), "1d", ("x",)),
                         _oracle_layout((4,), "1d", ())])  # fmt: skip

    def eager_index_explicit(api: Any, L: Any) -> Any:
        x = api.device_put(X8, _ns(api, _explicit_mesh(api, "1d"), "x"))
        return x[::2]

    yield script_case(
        "sharding/errors/index_split_axis_explicit",
        lambda ns: _run_plain(ns, eager_index_explicit),
        expect=Raises(ShardingTypeError, "for the gather indexing as out sharding could not"),
        tags=("sharding",),
    )
    yield script_case(
        "sharding/errors/closure_over_explicit_axes_one_device",
        lambda ns: _run_plain(ns, closure_one_device),
        expect=Raises(ValueError, "Length of device assignment 1 is not equal"),
        tags=("sharding",),
    )

    def set_mesh_inside_jit(api: Any, L: Any) -> Any:
        mesh = _explicit_mesh(api, "1d")

        def f(v: Any) -> Any:
            with api.set_mesh(mesh):
                return v * 2

        return api.jit(f)(X8)

    yield script_case(
        "sharding/errors/set_mesh_inside_jit",
        lambda ns: _run_plain(ns, set_mesh_inside_jit),
        expect=Raises(ValueError, "can only be used outside of `jax.jit`"),
        tags=("sharding",),
    )


def _random_out_sharding_cases() -> Iterator[Case]:
    """``jax.random``'s ``out_sharding=`` (JAX's RandomOutShardingTest): the
    sample drawn as without it, laid out as asked (a NamedSharding, or a
    PartitionSpec of the mesh ``set_mesh`` sets), and ``is_equivalent_to`` of
    the result's sharding."""

    def script(ns: Any) -> Any:
        api = _api(ns)
        with _four_devices(api):
            mesh = _explicit_mesh(api, "1d")
            s = _ns(api, mesh, "x")
            with api.set_mesh(mesh):
                key = api.random.key(0)
                outs = [
                    api.random.uniform(key, (8,), out_sharding=s),
                    api.random.randint(key, (4, 2), 0, 10, out_sharding=_p(api, "x")),
                    api.random.bernoulli(key, 0.3, (8,), out_sharding=s),
                ]
            same = [o.sharding.is_equivalent_to(s, o.ndim) for o in outs]
            return [np.asarray(o) for o in outs] + [_layout(o) for o in outs] + [np.array(same)]

    yield script_case(
        "sharding/random_out_sharding", script, expect=AGREE, tolerance=TOL, tags=("sharding",)
    )
