"""Sharded ``jit`` benchmark (issue 33): a cached call of ``jit`` with
``in_shardings``/``out_shardings`` over 4 CPU devices, refimpl (pjrt: one
SPMD-partitioned executable, refimpl/backends/pjrt/spmd.py) vs ``jax.jit``
with the same shardings, and the transfer count of sharded outputs fed back.

Rows: an elementwise step ``x -> sin(x) * 2 + x`` on ``P('x')`` over a 1-D
mesh of 4, and a matmul ``(a @ b)`` on a 2x2 mesh (``P('a', 'b')`` times
``P('b', None)``, result ``P('a', 'b')``), small inputs. The "plain jit, own
shardings" rows are the users' path: the same programs under ``jit(f)``
with no shardings, called with the arrays as laid out (each argument's own
sharding is its in_sharding; the output is laid out as the sharding rule
types it in refimpl, as XLA's propagation chooses in JAX on these Auto
axes) and fed their own output back. Both libraries feed
their previous output back (already laid out on the devices); calls
alternate in blocks within one run; every call waits for its result;
medians and the best block are reported. Goal (issue 33): refimpl <= 0.75 x
JAX. refimpl's cached call runs in C++ (bindings/fast_sharded.h: the
arguments' layout keys are the signature, the blocks' buffers go to ONE
multi-device execute, pmap's launch in native/launch.h, and the outputs are
built as MeshArrays in C++); the row reports how many of its calls took
that path ("C++ hits") and how many buffers were transferred.

    python benchmarks/sharding.py [--blocks 9] [--calls 100] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"  # before jax

import numpy as np

GOAL = 0.75


ROWS = ("elementwise 1-D", "matmul 2x2", "plain jit elementwise 1-D", "plain jit matmul 2x2")


def _setup(lib, mesh_of, row: str):
    ns, p = lib.sharding.NamedSharding, lib.sharding.PartitionSpec
    plain = row.startswith("plain jit")  # jit(f): no shardings, the arguments' own
    if row.endswith("elementwise 1-D"):
        m = mesh_of((4,), ("x",))
        s = ns(m, p("x"))
        kw = {} if plain else {"in_shardings": s, "out_shardings": s}
        f = lib.jit(lambda x: lib.numpy.sin(x) * 2 + x, **kw)
        x = lib.device_put(np.linspace(0, 1, 64, dtype=np.float32), s)
        return (lambda v: f(v)), x, f
    m = mesh_of((2, 2), ("a", "b"))
    sa, sb = ns(m, p("a", "b")), ns(m, p("b", None))
    kw = {} if plain else {"in_shardings": (sa, sb), "out_shardings": sa}
    f = lib.jit(lambda a, b: (a @ b) * 0.5, **kw)
    a = lib.device_put(np.eye(8, dtype=np.float32), sa)
    b = lib.device_put(np.eye(8, dtype=np.float32), sb)
    return (lambda v: f(v, b)), a, f


def _per_call_us(step, x, calls: int):
    start = time.perf_counter()
    for _ in range(calls):
        x = step(x)
        x.block_until_ready()
    return (time.perf_counter() - start) / calls * 1e6, x


def _cpp_hits(f) -> int:
    """Calls of refimpl's jitted ``f`` that ran in C++ so far (0 without the fast path).
    A plain ``jit(f)`` called with sharded arguments runs them through its jit over
    the arguments' mesh (``Jitted._over_mesh``, made on the first sharded call), whose
    C++ path counts them (the plain jit's own C++ path serves unsharded calls)."""
    over_mesh = getattr(f, "_sharded", None)  # (pjrt: f is the C++ FastJitted)
    stats = getattr(over_mesh if over_mesh is not None else f, "_fast_stats", None)
    return stats()["hits"] if stats is not None else 0


def _spec(x) -> str:
    """The output's layout as its PartitionSpec, trailing Nones dropped."""
    spec = list(x.sharding.spec)
    while spec and spec[-1] is None:
        spec.pop()
    return "P(" + ", ".join(repr(e) for e in spec) + ")"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--blocks", type=int, default=9)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    import jax

    import refimpl as ri
    from refimpl import sharding as rs
    from refimpl.transforms.pmap import transfer_count

    ri.config.update("backend", "pjrt")

    def jax_mesh(shape, names):
        devices = np.array(jax.devices()[: int(np.prod(shape))]).reshape(shape)
        auto = (jax.sharding.AxisType.Auto,) * len(names)
        return jax.sharding.Mesh(devices, names, axis_types=auto)

    def ri_mesh(shape, names):
        devices = np.empty(int(np.prod(shape)), dtype=object)
        devices[:] = ri.devices()[: devices.size]
        return rs.Mesh(devices.reshape(shape), names, axis_types=rs.AxisType.Auto)

    results = []
    for row in ROWS:
        ri_step, ri_x, ri_f = _setup(ri, ri_mesh, row)
        jax_step, jax_x, _ = _setup(jax, jax_mesh, row)
        for _ in range(20):  # compile and warm both
            ri_x, jax_x = ri_step(ri_x), jax_step(jax_x)
        np.testing.assert_allclose(np.asarray(ri_x), np.asarray(jax_x), rtol=1e-4, atol=1e-5)
        ri_times, jax_times, transfers, hits = [], [], 0, 0
        for _ in range(args.blocks):
            before, hits_before = transfer_count(), _cpp_hits(ri_f)
            t, ri_x = _per_call_us(ri_step, ri_x, args.calls)
            transfers += transfer_count() - before
            hits += _cpp_hits(ri_f) - hits_before
            ri_times.append(t)
            t, jax_x = _per_call_us(jax_step, jax_x, args.calls)
            jax_times.append(t)
        ri_med, jax_med = statistics.median(ri_times), statistics.median(jax_times)
        results.append({
            "row": row,
            "refimpl_us": round(ri_med, 1),
            "jax_us": round(jax_med, 1),
            "ratio": round(ri_med / jax_med, 3),
            "best_ratio": round(min(ri_times) / min(jax_times), 3),
            "fed_back_transfers": transfers,
            "cpp_hits": hits,
            "calls": args.blocks * args.calls,
            "refimpl_out_spec": _spec(ri_x),
            "jax_out_spec": _spec(jax_x),
        })  # fmt: skip
    if args.json:
        print(json.dumps(results, indent=1))
        return
    for r in results:
        verdict = "meets" if r["ratio"] <= GOAL else "misses"
        print(
            f"{r['row']:>26}: refimpl {r['refimpl_us']:8.1f} us  jax {r['jax_us']:8.1f} us  "
            f"ratio {r['ratio']:.3f} (best blocks {r['best_ratio']:.3f}; {verdict} the "
            f"{GOAL} goal)  over {r['calls']} fed-back calls: {r['fed_back_transfers']} "
            f"transfers, {r['cpp_hits']} C++ hits; output {r['refimpl_out_spec']} "
            f"(jax {r['jax_out_spec']})"
        )


if __name__ == "__main__":
    main()
