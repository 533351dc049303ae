"""Closed-over sharded arrays, set_mesh under a trace, broadcasting and basic
indexing of sharded arrays, run by JAX (4 CPU devices) and by refimpl (both
backends): issue 33's parity leftovers (docs/semantics.md "Sharding").

Each case is ``build(lib, mesh_of)`` returning a function of no arguments
whose result is compared; ``mesh_of(shape, names, auto=False)`` makes a mesh
of the first devices, its axes Explicit (``make_mesh``'s default) or Auto.
Cases whose name ends in ``_auto`` run over Auto axes. Compared per output
leaf as in ``sharding_cases.observe_leaves``: the value, the spec, every
shard's (device id, index, shape); an exception becomes ``(class name,
first line of its message)``, the words compared for the cases in
:data:`SAME_WORDS`.

Run as a script (``python tests/helpers/sharding_closure_cases.py OUT``) it
records JAX's observations in OUT (a pickle); XLA_FLAGS is set before jax
is imported.
"""

from __future__ import annotations

import os
import pickle
import sys

import numpy as np

if __name__ == "__main__":  # run as JAX's oracle script: CI sets PYTHONSAFEPATH, so the
    # repository root must be put on sys.path before the tests package is imported
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from tests.helpers.sharding_cases import observe_leaves, typed_mesh  # noqa: E402

X8 = np.arange(8.0, dtype=np.float32)
X48 = np.arange(32.0, dtype=np.float32).reshape(4, 8) / 8
ONES8 = np.ones(8, np.float32)


def _put(lib, value, mesh, *spec):
    sharding = lib.sharding.NamedSharding(mesh, lib.sharding.PartitionSpec(*spec))
    return lib.device_put(value, sharding)


def _ns(lib, mesh, *spec):
    return lib.sharding.NamedSharding(mesh, lib.sharding.PartitionSpec(*spec))


# --- jit of a function closing over a sharded array ------------------------------------------


def closure_only(lib, mesh_of, auto=False):
    # Explicit: the constant's type names its mesh, the argument's one device
    # does not match it (JAX's ValueError); Auto: a replicated constant
    c = _put(lib, X8, mesh_of((4,), ("x",), auto), "x")
    return lambda: lib.jit(lambda a: a + c)(ONES8)


def closure_no_arguments(lib, mesh_of, auto=False):
    c = _put(lib, X8, mesh_of((4,), ("x",), auto), "x")
    return lambda: lib.jit(lambda: c * 2)()


def closure_sum(lib, mesh_of, auto=False):
    c = _put(lib, X8, mesh_of((4,), ("x",), auto), "x")
    return lambda: lib.jit(lambda a: (c * a).sum())(ONES8)


def closure_unread_outputs(lib, mesh_of, auto=False):
    # no output's type names the mesh: one device, no error
    c = _put(lib, X8, mesh_of((4,), ("x",), auto), "x")
    return lambda: lib.jit(lambda a: (a * 2, c.shape[0] * a))(ONES8)


def closure_sharded_argument(lib, mesh_of, auto=False):
    m = mesh_of((4,), ("x",), auto)
    c, s = _put(lib, X8, m, "x"), _put(lib, X8 + 1, m, "x")
    return lambda: lib.jit(lambda a: a + c)(s)


def closure_replicated_argument(lib, mesh_of, auto=False):
    # Explicit: P() * P('x') is P('x') (the constant's sharding in the type)
    m = mesh_of((4,), ("x",), auto)
    c, r = _put(lib, X8, m, "x"), _put(lib, X8 + 1, m)
    return lambda: lib.jit(lambda a: (a * c, a * 2, c * 3, (a * c).sum()))(r)


def closure_2d(lib, mesh_of, auto=False):
    m = mesh_of((2, 2), ("a", "b"), auto)
    c = _put(lib, X48, m, "a", "b")
    return lambda: lib.jit(lambda a: (a * c, c.sum(0), c.T))(X48 + 1)


def closure_2d_sharded_argument(lib, mesh_of, auto=False):
    m = mesh_of((2, 2), ("a", "b"), auto)
    c, a = _put(lib, X48, m, "a", "b"), _put(lib, X48 + 1, m, "a")
    return lambda: lib.jit(lambda v: (v + c, c.sum(0), c.T * v.sum()))(a)


def closure_2d_product(lib, mesh_of, auto=False):
    # Explicit: 'a' named twice by the product's type (ShardingTypeError)
    m = mesh_of((2, 2), ("a", "b"), auto)
    c, a = _put(lib, X48, m, "a", "b"), _put(lib, X48 + 1, m, "a", None)
    return lambda: lib.jit(lambda v: v @ c.T)(a)


def closure_grad_in_jit(lib, mesh_of, auto=False):
    c = _put(lib, X8, mesh_of((4,), ("x",), auto), "x")
    return lambda: lib.jit(lib.grad(lambda w: (w * c).sum()))(ONES8)


def closure_in_shardings(lib, mesh_of, auto=False):
    m = mesh_of((4,), ("x",), auto)
    c = _put(lib, X8, m, "x")
    return lambda: (
        lib.jit(lambda a: a + c, in_shardings=_ns(lib, m, "x"))(ONES8),
        lib.jit(lambda a: a * c, in_shardings=_ns(lib, m))(ONES8),
    )


def closure_out_shardings(lib, mesh_of, auto=False):
    m = mesh_of((4,), ("x",), auto)
    c = _put(lib, X8, m, "x")
    return lambda: (
        lib.jit(lambda a: a + c, out_shardings=_ns(lib, m))(ONES8),
        lib.jit(lambda a: a + c, in_shardings=_ns(lib, m), out_shardings=_ns(lib, m, "x"))(ONES8),
    )


def closure_fed_back(lib, mesh_of, auto=False):
    m = mesh_of((4,), ("x",), auto)
    c, r = _put(lib, X8, m, "x"), _put(lib, ONES8, m)
    f = lib.jit(lambda a: a * c + 1)
    return lambda: f(f(f(r)))


def closure_other_mesh_argument(lib, mesh_of, auto=False):
    # Explicit: two meshes in one program's types (JAX's ValueError); Auto:
    # the constant names no mesh, the argument's decides
    c = _put(lib, X8, mesh_of((4,), ("x",), auto), "x")
    y = _put(lib, X8, mesh_of((2, 2), ("a", "b"), auto), "a")
    return lambda: lib.jit(lambda a: a + c)(y)


def closure_committed_single_device(lib, mesh_of, auto=False):
    c = _put(lib, X8, mesh_of((4,), ("x",), auto), "x")
    y = lib.device_put(X8, lib.devices()[0])
    return lambda: lib.jit(lambda a: a + c)(y)


def closure_under_set_mesh(lib, mesh_of):
    # (Explicit only: under set_mesh JAX lays every jit output over the mesh,
    # a difference refimpl keeps for calls closing over nothing sharded)
    m = mesh_of((4,), ("x",))
    c = _put(lib, X8, m, "x")

    def run():
        with lib.set_mesh(m):
            return (
                lib.jit(lambda a: a + c)(ONES8),
                lib.jit(lambda a: (c * a).sum())(ONES8),
                lib.jit(lib.grad(lambda w: (w * c).sum()))(ONES8),
            )

    return run


def closure_under_set_mesh_2d(lib, mesh_of):
    m = mesh_of((2, 2), ("a", "b"))
    c = _put(lib, X48, m, "a", "b")

    def run():
        with lib.set_mesh(m):
            return lib.jit(lambda a: (a * c, c.sum(0), c.T))(X48 + 1)

    return run


def closure_under_other_set_mesh(lib, mesh_of):
    c = _put(lib, X48, mesh_of((2, 2), ("a", "b")), "a", "b")
    m = mesh_of((4,), ("x",))

    def run():
        with lib.set_mesh(m):
            return lib.jit(lambda a: a + c)(X48)

    return run


# --- set_mesh while a transformation traces ----------------------------------------------------


def set_mesh_inside_jit(lib, mesh_of, auto=False):
    m = mesh_of((4,), ("x",), auto)

    def f(v):
        with lib.set_mesh(m):
            return v * 2

    return lambda: lib.jit(f)(X8)


def set_mesh_call_inside_jit(lib, mesh_of, auto=False):
    m = mesh_of((4,), ("x",), auto)

    def f(v):
        lib.set_mesh(m)
        return v * 2

    return lambda: lib.jit(f)(X8)


def set_mesh_inside_grad(lib, mesh_of, auto=False):
    m = mesh_of((4,), ("x",), auto)

    def f(v):
        with lib.set_mesh(m):
            return (v * 2).sum()

    return lambda: lib.grad(f)(X8)


def set_mesh_inside_vmap(lib, mesh_of, auto=False):
    m = mesh_of((4,), ("x",), auto)

    def f(v):
        with lib.set_mesh(m):
            return v * 2

    return lambda: lib.vmap(f)(X48)


def set_mesh_not_a_mesh(lib, mesh_of, auto=False):
    del mesh_of, auto
    return lambda: lib.set_mesh(3)


def with_mesh_inside_jit(lib, mesh_of, auto=False):
    # ``with mesh:`` stays allowed
    m = mesh_of((4,), ("x",), auto)

    def f(v):
        with m:
            return v * 2

    return lambda: lib.jit(f)(X8)


# --- eager broadcasting over a mesh ------------------------------------------------------------


def broadcast_eager_and_jit(lib, mesh_of, auto=False):
    m = mesh_of((4,), ("x",), auto)
    a, b = _put(lib, X48, m, "x"), _put(lib, X48, m, None, "x")
    row, col = ONES8, np.ones((4, 1), np.float32)
    r = _put(lib, X8, m)
    add = lib.jit(lambda u, v: u + v)
    return lambda: (
        a + row,
        a + lib.numpy.ones(8),
        a + col,
        b + row,
        a + r,
        row * b,
        add(a, row),
        add(b, row),
        add(a, r),
    )


# --- eager basic indexing of a sharded array ---------------------------------------------------


def _index_cases(lib, m):
    x = _put(lib, X8, m, "x")
    a = _put(lib, X48, m, "x", None)
    b = _put(lib, X48, m, None, "x")
    return x, a, b


INDEXES = {
    "x[0:2]": lambda x, a, b: x[0:2],
    "x[0]": lambda x, a, b: x[0],
    "x[-1]": lambda x, a, b: x[-1],
    "x[::2]": lambda x, a, b: x[::2],
    "x[:]": lambda x, a, b: x[:],
    "x[None]": lambda x, a, b: x[None],
    "x[...]": lambda x, a, b: x[...],
    "x[::-1]": lambda x, a, b: x[::-1],
    "a[0]": lambda x, a, b: a[0],
    "a[1:3]": lambda x, a, b: a[1:3],
    "a[0, 1]": lambda x, a, b: a[0, 1],
    "a[:, 0]": lambda x, a, b: a[:, 0],
    "a[:, 1:3]": lambda x, a, b: a[:, 1:3],
    "a[:, ::2]": lambda x, a, b: a[:, ::2],
    "a[..., 0]": lambda x, a, b: a[..., 0],
    "a[:, None]": lambda x, a, b: a[:, None],
    "a[::-1]": lambda x, a, b: a[::-1],
    "b[0]": lambda x, a, b: b[0],
    "b[1:3]": lambda x, a, b: b[1:3],
    "b[:, 0]": lambda x, a, b: b[:, 0],
    "b[:, 2:6]": lambda x, a, b: b[:, 2:6],
    "b[-1, ::2]": lambda x, a, b: b[-1, ::2],
}


def _index_case(index):
    def build(lib, mesh_of, auto=False):
        x, a, b = _index_cases(lib, mesh_of((4,), ("x",), auto))
        return lambda: INDEXES[index](x, a, b)

    return build


INDEX_CASES = {f"index {k}": _index_case(k) for k in INDEXES}


def _auto(build):
    return lambda lib, mesh_of: build(lib, mesh_of, auto=True)


_EXPLICIT_ONLY = {
    "closure_under_set_mesh",
    "closure_under_set_mesh_2d",
    "closure_under_other_set_mesh",
}

_BUILDERS = {
    name: fn
    for name, fn in list(globals().items())
    if callable(fn)
    and not name.startswith("_")
    and name.split("_")[0] in ("closure", "set", "with", "broadcast")
}
_BUILDERS.update(INDEX_CASES)

#: case name -> build(lib, mesh_of): each case over Explicit axes, and (name
#: ending "_auto") over Auto axes
CASES = {}
for _name, _build in _BUILDERS.items():
    CASES[_name] = _build
    if _name not in _EXPLICIT_ONLY:
        CASES[_name + "_auto"] = _auto(_build)

#: errors whose words refimpl gives as JAX 0.10.2 (the others: the class)
SAME_WORDS = {
    name
    for name in CASES
    if name.startswith(("closure_", "set_", "index "))
    and not name.startswith(("closure_other_mesh", "closure_under_other"))
}


def observe(thunk):
    """What is compared: the leaves (``observe_leaves``), or an error's
    (class name, first line of its message)."""
    try:
        result = thunk()
    except Exception as error:  # the class (and words) are compared
        return (type(error).__name__, str(error).split("\n")[0])
    leaves = result if isinstance(result, (tuple, list)) else [result]
    flat = []
    for leaf in leaves:
        flat += leaf if isinstance(leaf, (tuple, list)) else [leaf]
    return observe_leaves(flat)


def main(path: str) -> None:
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
    import jax

    def mesh_of(shape, names, auto=False):
        return typed_mesh(jax.sharding, jax.devices(), shape, names, auto)

    out = {name: observe(build(jax, mesh_of)) for name, build in CASES.items()}
    with open(path, "wb") as f:
        pickle.dump(out, f)


if __name__ == "__main__":
    main(sys.argv[1])
