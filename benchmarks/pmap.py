"""pmap benchmark (issue 18): a cached pmap call over 4 CPU devices, refimpl
(pjrt) vs ``jax.pmap`` of the same function, and the transfer count of a
sharded output fed back.

The function is a data-parallel step on small inputs:
``x -> psum(sin(x) * 2, 'i') * 1e-3 + x`` with ``x`` of shape (4, n); for
information, the same call without the psum is measured too (on this
machine the 4-thread rendezvous of XLA's CPU all-reduce, not dispatch,
dominates the call with the psum, for both libraries: see the CPU time). Both libraries
feed their previous output back (already on the devices), calls alternate
in blocks within one run (machine load affects both alike); medians and
the best block are reported; every call waits for its result (see
``_per_call_us``). Goal: refimpl <= 0.75 x JAX.

A third row is a data-parallel SGD step of a small MLP written as JAX users
write pmap training (parameters replicated along the device axis, the
batch mapped, ``pmean`` of the 4 gradients and of the loss, the state fed
back): refimpl all-reduces the gradients and the loss as one buffer (one
rendezvous; see docs/semantics.md 12), JAX one all_reduce per leaf.

Also reported: how long each call takes to return (both libraries return
before the computation completes: the rest of the time is the wait), and,
for refimpl only, the time per call with calls in flight (no wait; pmap
serializes launches with collectives itself; jax.pmap aborts this way).

refimpl's cached call is the C++ fast path (``pmap`` on pjrt is a
``FastJitted`` in pmap mode: signature, cache hit, one multi-device
Execute, one sharded output; no Python). The transfer count is the
runtime's own (``refimpl._pjrt.transfer_count``: every host->device
transfer and device->host read) over ALL timed fed-back refimpl calls.

    python benchmarks/pmap.py [--blocks 15] [--calls 200] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"  # before jax

import numpy as np

GOAL = 0.75
# (label, n, with the psum): the goal's function at two sizes, and, for
# information, the same call without a collective (what dispatch costs when
# XLA's 4-thread rendezvous does not dominate)
CONFIGS = [
    ("psum", 8, "psum"),
    ("psum", 1024, "psum"),
    ("train step", 8, "train"),
    ("no collective", 8, None),
]


def _train_step(lib, np_):
    """A data-parallel SGD step of a 2-layer MLP, written as JAX users write
    pmap training: parameters replicated along the device axis, each device's
    batch mapped, gradients and loss averaged with ``pmean``; the state
    ``(w1, b1, w2, b2, x, y)`` is fed back (x, y unchanged)."""

    def loss(params, x, y):
        w1, b1, w2, b2 = params
        h = np_.tanh(x @ w1 + b1)
        return np_.mean((h @ w2 + b2 - y) ** 2)

    def step(w1, b1, w2, b2, x, y):
        value, grads = lib.value_and_grad(loss)((w1, b1, w2, b2), x, y)
        grads = lib.lax.pmean(grads, "i")
        value = lib.lax.pmean(value, "i")
        new = [p - 0.1 * g for p, g in zip((w1, b1, w2, b2), grads, strict=True)]
        return (*new[:3], new[3] + 0 * value, x, y)

    return step


def _train_state(n: int) -> tuple:
    rng = np.random.default_rng(0)
    hidden = 32
    params = (
        rng.normal(size=(n, hidden)) * 0.3,
        np.zeros(hidden),
        rng.normal(size=(hidden, 1)) * 0.3,
        np.zeros(1),
    )
    x, y = rng.normal(size=(4, 16, n)), rng.normal(size=(4, 16, 1))
    replicated = [np.broadcast_to(p, (4, *p.shape)) for p in params]
    return tuple(np.ascontiguousarray(a, dtype=np.float32) for a in (*replicated, x, y))


_CPU_US: list[float] = []  # process CPU time per call of each block (all threads)
_RETURN_US: list[float] = []  # per call of each block: time until the call returned


def _per_call_us(f, x: tuple, calls: int) -> tuple[float, tuple]:
    """Per call of ``x = f(*x)`` (``x`` the state tuple, fed back)."""
    start, cpu = time.perf_counter(), time.process_time()
    returned = 0.0
    for _ in range(calls):
        # each call waits for its result: with calls in flight, jax.pmap on a
        # 2-core machine deadlocks (XLA's CPU collectives wait for 4 threads
        # of a pool busy with the next call); refimpl is held to the same
        before = time.perf_counter()
        x = f(*x)
        returned += time.perf_counter() - before
        _ready(x)
    _CPU_US.append((time.process_time() - cpu) / calls * 1e6)
    _RETURN_US.append(returned / calls * 1e6)
    return (time.perf_counter() - start) / calls * 1e6, x


def _unwaited_us(f, x: tuple, calls: int) -> tuple[float, tuple]:
    """Per call, calls in flight (refimpl only: jax.pmap aborts this way, see above)."""
    start = time.perf_counter()
    for _ in range(calls):
        x = f(*x)
    _ready(x)
    return (time.perf_counter() - start) / calls * 1e6, x


def _ready(state: tuple) -> None:
    for leaf in state:
        leaf.block_until_ready()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--blocks", type=int, default=15)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    import jax
    import jax.numpy as jnp

    import refimpl as ri
    import refimpl.numpy as rnp
    from refimpl.transforms import pmap as pmap_module

    results = {}
    for label, n, collective in CONFIGS:
        host = (np.linspace(-1, 1, 4 * n, dtype=np.float32).reshape(4, n),)
        if collective == "psum":
            rf = ri.pmap(
                lambda x: (ri.lax.psum(rnp.sin(x) * 2, "i") * 1e-3 + x,), "i", backend="pjrt"
            )
            jf = jax.pmap(lambda x: (jax.lax.psum(jnp.sin(x) * 2, "i") * 1e-3 + x,), "i")
        elif collective == "train":
            host = _train_state(n)
            rf = ri.pmap(_train_step(ri, rnp), "i", backend="pjrt")
            jf = jax.pmap(_train_step(jax, jnp), "i")
        else:
            rf = ri.pmap(lambda x: (rnp.sin(x) * 1e-3 + x,), "i", backend="pjrt")
            jf = jax.pmap(lambda x: (jnp.sin(x) * 1e-3 + x,), "i")
        rx, jx = rf(*host), jf(*host)  # compile; outputs now live on the devices
        rx, jx = rf(*rx), jf(*jx)  # the fed-back signature
        stats = rf._fast_stats()
        ratios, r_times, j_times, r_cpu, j_cpu = [], [], [], [], []
        r_return, j_return, r_unwaited = [], [], []
        fed_back_transfers = 0
        for _ in range(args.blocks):
            before = pmap_module.transfer_count()
            r_us, rx = _per_call_us(rf, rx, args.calls)
            r_cpu.append(_CPU_US[-1])
            r_return.append(_RETURN_US[-1])
            fed_back_transfers += pmap_module.transfer_count() - before
            j_us, jx = _per_call_us(jf, jx, args.calls)
            j_cpu.append(_CPU_US[-1])
            j_return.append(_RETURN_US[-1])
            before = pmap_module.transfer_count()
            u_us, rx = _unwaited_us(rf, rx, args.calls)
            fed_back_transfers += pmap_module.transfer_count() - before
            r_unwaited.append(u_us)
            r_times.append(r_us)
            j_times.append(j_us)
            ratios.append(r_us / j_us)
        after = rf._fast_stats()
        fast_hits = after["hits"] - stats["hits"]
        assert after["slow"] == stats["slow"] and after["misses"] == stats["misses"]
        for got, want in zip(rf(*host), jf(*host), strict=True):
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-5, atol=1e-6)
        results[f"{label} (4, {n})"] = {
            "refimpl_us": statistics.median(r_times),
            "jax_us": statistics.median(j_times),
            "ratio_median": statistics.median(ratios),
            "ratio_best_block": min(ratios),
            "refimpl_best_block_us": min(r_times),
            "jax_best_block_us": min(j_times),
            "ratio_of_best_blocks": min(r_times) / min(j_times),
            "refimpl_cpu_us": statistics.median(r_cpu),
            "jax_cpu_us": statistics.median(j_cpu),
            "refimpl_returns_after_us": statistics.median(r_return),
            "jax_returns_after_us": statistics.median(j_return),
            "refimpl_unwaited_us": statistics.median(r_unwaited),
            "fed_back_calls": 2 * args.blocks * args.calls,  # waited and in flight
            "fed_back_transfers": fed_back_transfers,
            "fast_path_hits": fast_hits,
        }
    if args.json:
        json.dump(results, sys.stdout, indent=2)
        print()
        return
    print(f"cached pmap call over 4 CPU devices (goal <= {GOAL} x jax.pmap)")
    for key, r in results.items():
        verdict = "meets the goal" if r["ratio_median"] <= GOAL else "misses the goal"
        if key.startswith("no collective"):
            verdict = "(information only)"
        print(
            f"  {key:24s} f32  refimpl {r['refimpl_us']:8.1f} us  jax {r['jax_us']:8.1f} us  "
            f"ratio {r['ratio_median']:.2f} (best block {r['ratio_best_block']:.2f}; "
            f"best/best {r['ratio_of_best_blocks']:.2f}) {verdict}\n"
            f"      process CPU time per call (all threads, median): refimpl "
            f"{r['refimpl_cpu_us']:.1f} us, jax {r['jax_cpu_us']:.1f} us\n"
            f"      the call returns after (median): refimpl "
            f"{r['refimpl_returns_after_us']:.1f} us, jax {r['jax_returns_after_us']:.1f} us; "
            f"refimpl with calls in flight "
            f"{r['refimpl_unwaited_us']:.1f} us per call\n"
            f"      fed back: {r['fed_back_calls']} calls, {r['fast_path_hits']} C++ fast-path "
            f"hits, {r['fed_back_transfers']} transfers "
            f"({r['fed_back_transfers'] / r['fed_back_calls']:.0f} per call)"
        )


if __name__ == "__main__":
    main()
