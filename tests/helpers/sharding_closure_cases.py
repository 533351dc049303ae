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


def _auto(build):
    return lambda lib, mesh_of: build(lib, mesh_of, auto=True)


_EXPLICIT_ONLY: set[str] = set()

_BUILDERS = {
    name: fn
    for name, fn in list(globals().items())
    if callable(fn)
    and not name.startswith("_")
    and name.split("_")[0] in ("closure", "set", "with", "broadcast")
}

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
    if name.split("_")[0] in ("closure", "set")
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
