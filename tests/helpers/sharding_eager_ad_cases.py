"""Eager differentiation of sharded arrays, run by JAX (4 CPU devices) and
by refimpl (both backends): ``grad``, ``value_and_grad``, ``vjp``, ``jvp``,
``linearize``, ``jacfwd`` and ``jacrev`` called outside ``jit`` on arrays
laid out over a mesh (docs/semantics.md "Sharding": AD's residuals stay
sharded arrays, a cotangent of a sharded argument is laid out as JAX types
it).

Each case is ``build(lib, mesh_of)`` returning a function of no arguments
whose result is compared; ``mesh_of(shape, names)`` makes a mesh of the
first devices. Every case is recorded twice: over Explicit axes (name as
is; the call runs under ``set_mesh``, as JAX 0.10.2 needs for an eager
backward pass over Explicit axes) and over Auto axes (name + ``_auto``).
Compared per output leaf: the value, the spec as written (JAX's Explicit
types spell one entry per axis: ``P(None, None)``), every shard's (device
id, index, shape); an exception becomes its class name.

Run as a script (``python tests/helpers/sharding_eager_ad_cases.py OUT``)
it records JAX's observations in OUT (a pickle); XLA_FLAGS is set before
jax is imported.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import sys

import numpy as np

if __name__ == "__main__":  # run as JAX's oracle script: CI sets PYTHONSAFEPATH, so the
    # repository root must be put on sys.path before the tests package is imported
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from tests.helpers.sharding_cases import typed_mesh  # noqa: E402

X8 = np.arange(8.0, dtype=np.float32) / 4
X48 = np.arange(32.0, dtype=np.float32).reshape(4, 8) / 8


def _put(lib, value, mesh, *spec):
    sharding = lib.sharding.NamedSharding(mesh, lib.sharding.PartitionSpec(*spec))
    return lib.device_put(value, sharding)


def _sum_squares(x):
    return (x**2).sum()


# --- one sharded argument ----------------------------------------------------------------


def grad_sum_squares_1d(lib, mesh_of):
    x = _put(lib, X8, mesh_of((4,), ("x",)), "x")
    return lambda: lib.grad(_sum_squares)(x)


def grad_sum_squares_2d(lib, mesh_of):
    x = _put(lib, X48, mesh_of((2, 2), ("a", "b")), "a", "b")
    return lambda: lib.grad(_sum_squares)(x)


def grad_one_axis_of_2d_mesh(lib, mesh_of):
    x = _put(lib, X48, mesh_of((2, 2), ("a", "b")), None, "b")
    return lambda: lib.grad(lambda v: (lib.numpy.sin(v) * v).sum())(x)


def grad_constant_factor(lib, mesh_of):
    """The backward pass reads no residual: only the seed is on the mesh."""
    x = _put(lib, X8, mesh_of((4,), ("x",)), "x")
    return lambda: lib.grad(lambda v: (v * 3.0).sum())(x)


def value_and_grad_sum_squares(lib, mesh_of):
    x = _put(lib, X8, mesh_of((4,), ("x",)), "x")
    return lambda: lib.value_and_grad(_sum_squares)(x)


def value_and_grad_2d_reduce_axis(lib, mesh_of):
    x = _put(lib, X48, mesh_of((2, 2), ("a", "b")), "a", "b")
    return lambda: lib.value_and_grad(lambda v: (lib.numpy.tanh(v).sum(1) ** 2).sum())(x)


def vjp_sum_squares(lib, mesh_of):
    x = _put(lib, X8, mesh_of((4,), ("x",)), "x")

    def run():
        out, pullback = lib.vjp(_sum_squares, x)
        return out, pullback(np.float32(1.0))

    return run


def vjp_elementwise(lib, mesh_of):
    x = _put(lib, X48, mesh_of((2, 2), ("a", "b")), "a", None)

    def run():
        out, pullback = lib.vjp(lambda v: lib.numpy.sin(v) * v, x)
        return out, pullback(out)

    return run


def jvp_elementwise(lib, mesh_of):
    x = _put(lib, X8, mesh_of((4,), ("x",)), "x")
    return lambda: lib.jvp(lambda v: lib.numpy.sin(v) * v, (x,), (x,))


def jvp_sum_squares_2d(lib, mesh_of):
    x = _put(lib, X48, mesh_of((2, 2), ("a", "b")), "a", "b")
    return lambda: lib.jvp(_sum_squares, (x,), (x,))


def linearize_elementwise(lib, mesh_of):
    x = _put(lib, X8, mesh_of((4,), ("x",)), "x")

    def run():
        out, f_jvp = lib.linearize(lambda v: lib.numpy.sin(v) * v, x)
        return out, f_jvp(x)

    return run


def jacfwd_elementwise(lib, mesh_of):
    x = _put(lib, X8, mesh_of((4,), ("x",)), "x")
    return lambda: lib.jacfwd(lib.numpy.sin)(x)


def jacrev_elementwise(lib, mesh_of):
    x = _put(lib, X8, mesh_of((4,), ("x",)), "x")
    return lambda: lib.jacrev(lib.numpy.sin)(x)


def jacrev_sum_squares(lib, mesh_of):
    x = _put(lib, X8, mesh_of((4,), ("x",)), "x")
    return lambda: lib.jacrev(_sum_squares)(x)


def grad_scan(lib, mesh_of):
    """A loop carry split over 'x' meets the seed's cotangent (typed with no
    mesh, as jit(grad)'s literal seed) in the transposed scan."""
    x = _put(lib, X8, mesh_of((4,), ("x",)), "x")

    def loss(v):
        body = lambda c, _: (c * lib.numpy.sin(c), None)  # noqa: E731
        return lib.lax.scan(body, v, None, length=3)[0].sum()

    return lambda: lib.grad(loss)(x)


def grad_cond(lib, mesh_of):
    """The transposed branches broadcast the seed (one of them only)."""
    x = _put(lib, X8, mesh_of((4,), ("x",)), "x")
    loss = lambda v: lib.lax.cond(True, lambda u: (u * u).sum(), lambda u: u.sum(), v)  # noqa: E731
    return lambda: lib.grad(loss)(x)


# --- an MLP loss: params P(), batch split ------------------------------------------------


def _mlp_data():
    rng = np.random.default_rng(0)
    params = {
        "w1": rng.normal(size=(4, 8)).astype(np.float32) / 2,
        "b1": np.zeros(8, np.float32),
        "w2": rng.normal(size=(8, 2)).astype(np.float32) / 3,
    }
    x = rng.normal(size=(16, 4)).astype(np.float32)
    y = rng.normal(size=(16, 2)).astype(np.float32)
    return params, (x, y)


def _mlp_loss(lib, p, x, y):
    h = lib.numpy.tanh(x @ p["w1"] + p["b1"])
    return ((h @ p["w2"] - y) ** 2).mean()


def mlp_grad_data_parallel(lib, mesh_of):
    m = mesh_of((4,), ("x",))
    params, (x, y) = _mlp_data()
    params = {k: _put(lib, v, m) for k, v in params.items()}
    x, y = _put(lib, x, m, "x", None), _put(lib, y, m, "x", None)
    return lambda: lib.value_and_grad(lambda p: _mlp_loss(lib, p, x, y))(params)


def mlp_grad_params_and_batch_2d(lib, mesh_of):
    """A 2 x 2 mesh, params P(), the batch on 'data': gradients of the
    params and of the batch (argnums=(0, 1))."""
    m = mesh_of((2, 2), ("data", "model"))
    params, (x, y) = _mlp_data()
    params = {k: _put(lib, v, m) for k, v in params.items()}
    x, y = _put(lib, x, m, "data", None), _put(lib, y, m, "data", None)
    return lambda: lib.grad(lambda p, x: _mlp_loss(lib, p, x, y), argnums=(0, 1))(params, x)


def mlp_vjp_data_parallel(lib, mesh_of):
    m = mesh_of((4,), ("x",))
    params, (x, y) = _mlp_data()
    params = {k: _put(lib, v, m) for k, v in params.items()}
    x, y = _put(lib, x, m, "x", None), _put(lib, y, m, "x", None)

    def run():
        out, pullback = lib.vjp(lambda p: _mlp_loss(lib, p, x, y), params)
        return out, pullback(np.float32(1.0))

    return run


_KINDS = ("grad", "value", "vjp", "jvp", "linearize", "jacfwd", "jacrev", "mlp")
_BUILDERS = {
    name: fn
    for name, fn in list(globals().items())
    if callable(fn)
    and not name.startswith("_")
    and name.split("_")[0]
    in ("grad", "value", "vjp", "jvp", "linearize", "jacfwd", "jacrev", "mlp")
}


def _with_axes(lib, build, auto):
    """``build`` over meshes of Explicit axes (its call under ``set_mesh``)
    or of Auto axes."""

    def bound(mesh_of_types):
        made = []

        def mesh_of(shape, names):
            made.append(mesh_of_types(shape, names, auto))
            return made[-1]

        run = build(lib, mesh_of)

        def call():
            context = contextlib.nullcontext() if auto else lib.set_mesh(made[0])
            with context:
                return run()

        return call

    return bound


#: case name -> (build, auto)
CASES = {
    **{name: (fn, False) for name, fn in _BUILDERS.items()},
    **{f"{name}_auto": (fn, True) for name, fn in _BUILDERS.items()},
}


def observe(leaves) -> list:
    """Per leaf: (value, spec as written or None, sorted shards)."""
    out = []
    for leaf in leaves:
        value = np.asarray(leaf)
        spec = getattr(getattr(leaf, "sharding", None), "spec", None)
        shards = None
        if spec is not None:
            spec = tuple(tuple(e) if isinstance(e, (tuple, list)) else e for e in spec)
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


def run_case(lib, name, mesh_of_types):
    """The observations of case ``name`` under ``lib`` (or its error's class name)."""
    build, auto = CASES[name]
    try:
        return observe(lib.tree_util.tree_leaves(_with_axes(lib, build, auto)(mesh_of_types)()))
    except Exception as error:  # the class is compared
        return type(error).__name__


def main(path: str) -> None:
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
    import jax

    def mesh_of(shape, names, auto=False):
        return typed_mesh(jax.sharding, jax.devices(), shape, names, auto)

    out = {name: run_case(jax, name, mesh_of) for name in CASES}
    with open(path, "wb") as f:
        pickle.dump(out, f)


if __name__ == "__main__":
    main(sys.argv[1])
