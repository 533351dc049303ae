"""Sharding cases run by JAX (4 CPU devices) and by refimpl (both backends).

Each case is ``build(lib, mesh_of)`` returning ``(function, args)``;
``lib`` is ``jax`` or ``refimpl``, ``mesh_of(shape, names)`` makes a mesh of
the first devices with Auto axes. :func:`observe` turns a result into what
is compared: per leaf the value, the sharding's spec and each shard's
(device id, index, shape); an exception becomes its class name.
Cases in ``VALUES_ONLY`` leave the layout of their outputs to JAX's own
propagation (no out_shardings; traced shard_map outputs): only their values
are compared.

Run as a script (``python tests/helpers/sharding_cases.py OUT``) it records JAX's
observations in OUT (a pickle); XLA_FLAGS is set before jax is imported.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import sys

import numpy as np

X44 = np.arange(16.0, dtype=np.float32).reshape(4, 4)
X8 = np.arange(8.0, dtype=np.float32)


def typed_mesh(sharding_module, devices, shape, names, auto=False):
    """A mesh of the first devices of ``devices`` in row-major order, every axis
    Auto or every axis Explicit; ``sharding_module`` is ``jax.sharding`` or
    ``refimpl.sharding`` (the same names in both)."""
    count = int(np.prod(shape))
    grid = np.array(list(devices)[:count], dtype=object).reshape(shape)
    kind = sharding_module.AxisType.Auto if auto else sharding_module.AxisType.Explicit
    return sharding_module.Mesh(grid, names, axis_types=(kind,) * len(names))


@contextlib.contextmanager
def four_devices_on(backend):
    """refimpl's default backend set to ``backend`` with 4 reference devices,
    both restored after (the tests' ``on_backend`` fixtures)."""
    import refimpl as ri  # (this module also runs as JAX's oracle script)

    old = ri.config.ref_num_devices, ri.config.backend
    ri.config.update("ref_num_devices", 4)
    ri.config.update("backend", backend)
    try:
        yield backend
    finally:
        ri.config.update("ref_num_devices", old[0])
        ri.config.update("backend", old[1])


def _ns(lib, mesh, *spec):
    return lib.sharding.NamedSharding(mesh, lib.sharding.PartitionSpec(*spec))


def _p(lib, *spec):
    return lib.sharding.PartitionSpec(*spec)


# --- jit with shardings --------------------------------------------------------------------


def jit_1d(lib, mesh_of):
    m = mesh_of((4,), ("x",))
    f = lib.jit(lambda v: v * 2 + 1, in_shardings=_ns(lib, m, "x"), out_shardings=_ns(lib, m))
    return f, (X8,)


def jit_1d_rows(lib, mesh_of):
    m = mesh_of((4,), ("x",))
    f = lib.jit(
        lambda v: (v @ v.T, v.sum(0)),
        in_shardings=_ns(lib, m, "x", None),
        out_shardings=(_ns(lib, m, None, "x"), _ns(lib, m, "x")),
    )
    return f, (X44,)


def jit_2d(lib, mesh_of):
    m = mesh_of((2, 2), ("a", "b"))
    f = lib.jit(
        lambda v, w: v @ w,
        in_shardings=(_ns(lib, m, "a", "b"), _ns(lib, m, "b", None)),
        out_shardings=_ns(lib, m, None, "a"),
    )
    return f, (X44, X44.T.copy())


def jit_2d_combined_axes(lib, mesh_of):
    m = mesh_of((2, 2), ("a", "b"))
    f = lib.jit(lambda v: v - 1, out_shardings=_ns(lib, m, ("b", "a")))
    return f, (X8,)


def _shard_local_step(lib):
    """Elementwise only (pjrt launches it per device: spmd._is_shard_local)."""
    jnp = lib.numpy
    return lambda v, w: (jnp.where(v > 3, jnp.sin(v) * 2.0 + w, w - 1), jnp.maximum(v, w) * v)


def jit_shard_local_1d(lib, mesh_of):
    s = _ns(lib, mesh_of((4,), ("x",)), "x")
    f = lib.jit(_shard_local_step(lib), in_shardings=(s, s), out_shardings=(s, s))
    return f, (X8, X8[::-1].copy())


def jit_shard_local_2d(lib, mesh_of):
    s = _ns(lib, mesh_of((2, 2), ("a", "b")), "a", "b")
    f = lib.jit(_shard_local_step(lib), in_shardings=(s, s), out_shardings=(s, s))
    return f, (X44, X44.T.copy())


def jit_shard_local_partly_replicated(lib, mesh_of):
    s = _ns(lib, mesh_of((2, 2), ("a", "b")), None, "b")
    f = lib.jit(_shard_local_step(lib), in_shardings=(s, s), out_shardings=(s, s))
    return f, (X44, X44.T.copy())


def jit_shard_local_sgd_tree(lib, mesh_of):
    """An SGD step over parameters of two layouts with a replicated scalar
    rate: elementwise per layout (pjrt: per-device launch too)."""
    m = mesh_of((2, 2), ("a", "b"))
    tree = {"w": _ns(lib, m, "a", "b"), "b": _ns(lib, m, "b")}
    f = lib.jit(
        lambda p, g, lr: lib.tree.map(lambda u, v: u - lr * v, p, g),
        in_shardings=(tree, tree, _ns(lib, m)),
        out_shardings=tree,
    )
    params = {"w": X44, "b": X44[0].copy()}
    grads = {"w": X44.T * 0.5, "b": X44[1] - 3}
    return f, (params, grads, np.float32(0.25))


def jit_indivisible(lib, mesh_of):
    m = mesh_of((2, 2), ("a", "b"))
    return lib.jit(lambda v: v, in_shardings=_ns(lib, m, "a", "b")), (np.ones((3, 4)),)


def jit_rank_too_small(lib, mesh_of):
    m = mesh_of((2, 2), ("a", "b"))
    return lib.jit(lambda v: v, in_shardings=_ns(lib, m, "a", "b")), (np.ones(4),)


def jit_committed_mismatch(lib, mesh_of):
    m = mesh_of((2, 2), ("a", "b"))
    x = lib.device_put(X44, _ns(lib, m, "b"))
    return lib.jit(lambda v: v, in_shardings=_ns(lib, m, "a", "b")), (x,)


def jit_committed_single_device(lib, mesh_of):
    m = mesh_of((4,), ("x",))
    x = lib.device_put(X8, lib.devices()[1])
    return lib.jit(lambda v: v + 1, in_shardings=_ns(lib, m, "x"), out_shardings=_ns(lib, m)), (x,)


def jit_committed_single_device_replicated(lib, mesh_of):
    m = mesh_of((4,), ("x",))
    x = lib.device_put(X8, lib.devices()[1])
    return lib.jit(lambda v: v + 1, in_shardings=_ns(lib, m), out_shardings=_ns(lib, m, "x")), (x,)


def jit_uncommitted(lib, mesh_of):
    m = mesh_of((4,), ("x",))
    x = lib.numpy.asarray(X8)
    return lib.jit(lambda v: v + 1, in_shardings=_ns(lib, m, "x"), out_shardings=_ns(lib, m)), (x,)


def device_put_2d(lib, mesh_of):
    m = mesh_of((2, 2), ("a", "b"))
    return (lambda v: lib.device_put(v, _ns(lib, m, "a", "b"))), (X44,)


def device_put_replicated_axis(lib, mesh_of):
    m = mesh_of((2, 2), ("a", "b"))
    return (lambda v: lib.device_put(v, _ns(lib, m, None, "b"))), (X44,)


def reshard_between(lib, mesh_of):
    m = mesh_of((2, 2), ("a", "b"))

    def f(v):
        x = lib.device_put(v, _ns(lib, m, "a", "b"))
        return lib.device_put(x, _ns(lib, m, "b"))

    return f, (X44,)


def wsc_eager(lib, mesh_of):
    m = mesh_of((4,), ("x",))
    return (lambda v: lib.lax.with_sharding_constraint(v, _ns(lib, m, None, "x"))), (X44,)


def wsc_in_jit(lib, mesh_of):
    m = mesh_of((2, 2), ("a", "b"))

    def f(v):
        y = lib.lax.with_sharding_constraint(v * 3, _ns(lib, m, "a", "b"))
        return y.sum(1)

    return lib.jit(f, out_shardings=_ns(lib, m, "a")), (X44,)


def make_array_from_callback(lib, mesh_of):
    m = mesh_of((2, 2), ("a", "b"))
    sharding = _ns(lib, m, "b", "a")
    return (lambda v: lib.make_array_from_callback(v.shape, sharding, lambda i: v[i])), (X44,)


# --- shard_map with each collective -----------------------------------------------------


def _sm(lib, f, mesh, in_specs, out_specs):
    return lib.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs)


def sm_psum(lib, mesh_of):
    m = mesh_of((2, 2), ("a", "b"))
    f = _sm(lib, lambda v: lib.lax.psum(v, "a"), m, _p(lib, "a", "b"), _p(lib, None, "b"))
    return f, (X44,)


def sm_psum_both(lib, mesh_of):
    m = mesh_of((2, 2), ("a", "b"))
    f = _sm(lib, lambda v: lib.lax.psum(v, ("a", "b")), m, _p(lib, ("a", "b")), _p(lib))
    return f, (X8,)


def sm_psum_1d_in_jit(lib, mesh_of):
    m = mesh_of((4,), ("x",))
    f = _sm(lib, lambda v: lib.lax.psum(v.sum(0), "x"), m, _p(lib, "x"), _p(lib))
    return lib.jit(f), (X44,)


def sm_all_gather(lib, mesh_of):
    m = mesh_of((2, 2), ("a", "b"))
    f = _sm(
        lib,
        lambda v: lib.lax.all_gather(v, "b", tiled=True),
        m,
        _p(lib, "a", "b"),
        _p(lib, "a", "b"),
    )
    return f, (X44,)


def sm_ppermute(lib, mesh_of):
    m = mesh_of((2, 2), ("a", "b"))
    f = _sm(
        lib, lambda v: lib.lax.ppermute(v, "a", [(0, 1), (1, 0)]), m, _p(lib, "a", "b"),
        _p(lib, "a", "b"),
    )  # fmt: skip
    return f, (X44,)


def sm_ppermute_ring_1d(lib, mesh_of):
    m = mesh_of((4,), ("x",))
    perm = [(i, (i + 1) % 4) for i in range(4)]
    f = _sm(lib, lambda v: lib.lax.ppermute(v, "x", perm), m, _p(lib, "x"), _p(lib, "x"))
    return f, (X8,)


def sm_psum_scatter(lib, mesh_of):
    m = mesh_of((2, 2), ("a", "b"))
    f = _sm(
        lib,
        lambda v: lib.lax.psum_scatter(v, "b", scatter_dimension=1, tiled=True),
        m,
        _p(lib, "a", None),
        _p(lib, "a", "b"),
    )
    return f, (X44,)


def sm_axis_index(lib, mesh_of):
    m = mesh_of((2, 2), ("a", "b"))

    def f(v):
        return v + (lib.lax.axis_index("a") * 10 + lib.lax.axis_index("b")).astype(v.dtype)

    return _sm(lib, f, m, _p(lib, "a", "b"), _p(lib, "a", "b")), (X44,)


def sm_combined_axes(lib, mesh_of):
    m = mesh_of((2, 2), ("a", "b"))

    def f(v):
        return v + (lib.lax.axis_index("a") * 10 + lib.lax.axis_index("b")).astype(v.dtype)

    return _sm(lib, f, m, _p(lib, ("b", "a")), _p(lib, ("a", "b"))), (X8,)


def sm_not_replicated(lib, mesh_of):
    m = mesh_of((2, 2), ("a", "b"))
    return _sm(lib, lambda v: v, m, _p(lib, "a", "b"), _p(lib, None, "b")), (X44,)


def sm_indivisible(lib, mesh_of):
    m = mesh_of((2, 2), ("a", "b"))
    return _sm(lib, lambda v: v, m, _p(lib, "a", "b"), _p(lib, "a", "b")), (np.ones((3, 4)),)


def sm_unknown_axis(lib, mesh_of):
    m = mesh_of((2, 2), ("a", "b"))
    return _sm(lib, lambda v: v, m, _p(lib, "c"), _p(lib, "a")), (X44,)


def sm_grad(lib, mesh_of):
    m = mesh_of((4,), ("x",))

    def loss(v):
        return _sm(lib, lambda b: lib.lax.psum((b**2).sum(), "x"), m, _p(lib, "x"), _p(lib))(v)

    return lib.grad(loss), (X44,)


# --- MLP training steps ------------------------------------------------------------------------

RNG = np.random.default_rng(0)
W1 = RNG.normal(size=(8, 16)).astype(np.float32) * 0.3
W2 = RNG.normal(size=(16, 4)).astype(np.float32) * 0.3
XB = RNG.normal(size=(8, 8)).astype(np.float32)
YB = RNG.normal(size=(8, 4)).astype(np.float32)


def _train_step(lib):
    def loss(params, x, y):
        w1, w2 = params
        h = lib.numpy.tanh(x @ w1)
        return ((h @ w2 - y) ** 2).mean()

    def step(params, x, y):
        grads = lib.grad(loss)(params, x, y)
        return tuple(p - 0.1 * g for p, g in zip(params, grads)), loss(params, x, y)

    return step


def mlp_single_device(lib, mesh_of):
    return lib.jit(_train_step(lib)), ((W1, W2), XB, YB)


def mlp_data_parallel(lib, mesh_of):
    m = mesh_of((4,), ("data",))
    rep, batch = _ns(lib, m), _ns(lib, m, "data")
    f = lib.jit(
        _train_step(lib), in_shardings=((rep, rep), batch, batch), out_shardings=((rep, rep), rep)
    )
    return f, ((W1, W2), XB, YB)


def mlp_model_parallel_2x2(lib, mesh_of):
    m = mesh_of((2, 2), ("data", "model"))
    w1s, w2s = _ns(lib, m, None, "model"), _ns(lib, m, "model", None)
    batch = _ns(lib, m, "data")
    f = lib.jit(
        _train_step(lib),
        in_shardings=((w1s, w2s), batch, batch),
        out_shardings=((w1s, w2s), _ns(lib, m)),
    )
    return f, ((W1, W2), XB, YB)


def mlp_shard_map_data_parallel(lib, mesh_of):
    m = mesh_of((4,), ("data",))

    def local(params, x, y):
        grads = lib.grad(lambda p: _train_loss(lib, p, x, y))(params)
        grads = lib.tree_util.tree_map(lambda g: lib.lax.pmean(g, "data"), grads)
        loss = lib.lax.pmean(_train_loss(lib, params, x, y), "data")
        return tuple(p - 0.1 * g for p, g in zip(params, grads)), loss

    f = lib.shard_map(
        local,
        mesh=m,
        in_specs=((_p(lib), _p(lib)), _p(lib, "data"), _p(lib, "data")),
        out_specs=((_p(lib), _p(lib)), _p(lib)),
        check_vma=False,  # JAX with check_vma sums grads of replicated values over the axis
    )
    return lib.jit(f), ((W1, W2), XB, YB)


def mlp_shard_map_vma_grad(lib, mesh_of):
    """JAX's check_vma semantics: the grad of a replicated (unvarying) value
    inside shard_map is summed over the axis. refimpl gives each member its
    own grad (pmap's semantics): a known difference (docs/semantics.md)."""
    m = mesh_of((4,), ("data",))

    def local(params, x, y):
        grads = lib.grad(lambda p: _train_loss(lib, p, x, y))(params)
        return lib.tree_util.tree_map(lambda g: lib.lax.pmean(g, "data"), grads)

    f = lib.shard_map(
        local,
        mesh=m,
        in_specs=((_p(lib), _p(lib)), _p(lib, "data"), _p(lib, "data")),
        out_specs=(_p(lib), _p(lib)),
    )
    return f, ((W1, W2), XB, YB)


def _train_loss(lib, params, x, y):
    w1, w2 = params
    h = lib.numpy.tanh(x @ w1)
    return ((h @ w2 - y) ** 2).mean()


#: Cases where refimpl knowingly differs from JAX (see each case's docstring).
KNOWN_DIFFERENT = {"mlp_shard_map_vma_grad"}

VALUES_ONLY = {"sm_psum_1d_in_jit", "sm_grad", "mlp_single_device", "mlp_shard_map_data_parallel"}

CASES = {
    name: fn
    for name, fn in list(globals().items())
    if callable(fn)
    and not name.startswith("_")
    and name.split("_")[0] in ("jit", "device", "reshard", "wsc", "make", "sm", "mlp")
}


#: (mesh shape, axis names, spec, rank): XLA sharding text JAX gives each
HLO_SHARDINGS = [
    ((2, 2), ("a", "b"), ("a", "b"), 2),
    ((2, 2), ("a", "b"), ("a",), 2),
    ((2, 2), ("a", "b"), (None, "b"), 2),
    ((2, 2), ("a", "b"), ("b",), 1),
    ((2, 2), ("a", "b"), (("b", "a"),), 1),
    ((2, 2), ("a", "b"), ("b", "a"), 3),
    ((2, 2), ("a", "b"), (), 2),
    ((4,), ("x",), ("x",), 2),
    ((4,), ("x",), (None, "x"), 2),
]


def observe_leaves(leaves) -> list:
    out = []
    for leaf in leaves:
        value = np.asarray(leaf)
        sharding = getattr(leaf, "sharding", None)
        spec = getattr(sharding, "spec", None)
        spec = (
            None
            if spec is None
            else tuple(tuple(e) if isinstance(e, (tuple, list)) else e for e in spec)
        )
        while spec and spec[-1] is None:  # P('a', None) and P('a') lay out the same
            spec = spec[:-1]
        shards = None
        if spec is not None:
            shards = sorted(
                (
                    s.device.id,
                    tuple((i.start, i.stop) for i in s.index),
                    tuple(np.asarray(s.data).shape),
                )
                for s in leaf.addressable_shards
            )
        out.append((value, spec, shards))
    return out


def main(path: str) -> None:
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
    import jax

    def mesh_of(shape, names):
        return typed_mesh(jax.sharding, jax.devices(), shape, names, auto=True)

    out = {}
    for name, build in CASES.items():
        try:
            fn, args = build(jax, mesh_of)
            out[name] = observe_leaves(jax.tree_util.tree_leaves(fn(*args)))
        except Exception as error:  # the class is compared
            out[name] = type(error).__name__
    hlo = {}
    for shape, names, spec, ndim in HLO_SHARDINGS:
        sharding = _ns(jax, mesh_of(shape, names), *spec)
        hlo[(shape, names, spec, ndim)] = str(sharding._to_xla_hlo_sharding(ndim))
    out["__hlo__"] = hlo
    with open(path, "wb") as f:
        pickle.dump(out, f)


if __name__ == "__main__":
    main(sys.argv[1])
