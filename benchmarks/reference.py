"""The reference backend's per-operation cost, side by side with JAX and NumPy (issue 34).

Two paths of the reference (NumPy) backend are measured:

* **eager**: an operation on reference arrays outside ``jit`` (``x + 1``,
  ``rnp.sin(x)``, and a chain of 200 x (``sin``, ``*``, ``+``), per op),
  against the same expression on JAX arrays (JAX's eager ops, jaxlib's CPU
  runtime) and on NumPy arrays (the bare NumPy call);
* **interpreter**: a call of ``ri.jit(chain)`` on the reference backend,
  which interprets the traced 600-equation Program, per equation, against
  the bare NumPy calls the chain makes (the same Python function on NumPy
  arrays).

Each for float32 arrays of 16 (small: the Python overhead) and 65,536
elements (medium: NumPy's own work); the eager single ops also for 1,024.

Everything runs in one process. The contenders of a case alternate in
blocks: rounds (``--rounds`` x 20 for the single ops, x 4 for the chains),
each timing one block of calls of every contender (the order rotates from
round to round), so a change of the machine's load hits all of them alike.
Blocks are short (~0.2 ms; one call for the chains): on the shared 2-core
machine, loaded 5-8x, a process is descheduled every few milliseconds, and
the median over many short blocks is what an undisturbed call costs.
Reported: each contender's median time per op (or per equation) over the
rounds, and the median over rounds of the per-round ratio ``ref / other``
(the two blocks of a round ran back to back). On the shared 2-core machine
the ratios are what counts, not the absolute times; the load average is
printed with them.

Run: ``python benchmarks/reference.py [--rounds 10] [--quick] [--json]`` (~20 s).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np

CHAIN_REPEATS = 200  # (sin, *, +) per chain: 600 operations, 600 equations when jitted
SMALL, ONE_K, MEDIUM = 16, 1024, 65536


def chain(np_mod, y):
    """200 x (sin, *, +): values stay in [-0.25, 0.75]."""
    for _ in range(CHAIN_REPEATS):
        y = np_mod.sin(y)
        y = y * 0.5
        y = y + 0.25
    return y


def _calls_per_block(fn: Callable[[], object], target_s: float) -> int:
    """Calls of ``fn`` per block so that a block takes about ``target_s``."""
    fn()  # warm up (first-call caches, JAX's compile of the eager op)
    if target_s == 0:
        return 1
    calls, elapsed = 1, 0.0
    while elapsed < target_s / 4:
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        elapsed = time.perf_counter() - start
        calls *= 2
    return max(1, int(target_s / (elapsed / (calls // 2))))


def interleaved(fns: list[Callable[[], object]], rounds: int, target_s: float):
    """Seconds per call of each of ``fns`` in each round (one list per contender)."""
    calls = [_calls_per_block(fn, target_s) for fn in fns]
    times: list[list[float]] = [[] for _ in fns]
    for r in range(rounds):
        for k in range(len(fns)):
            index = (k + r) % len(fns)  # rotate the order
            fn, n = fns[index], calls[index]
            start = time.perf_counter()
            for _ in range(n):
                fn()
            times[index].append((time.perf_counter() - start) / n)
    return times


def paired_ratio(a: list[float], b: list[float]) -> float:
    return statistics.median(x / y for x, y in zip(a, b, strict=True))


def _wait_jax(out):
    out.block_until_ready()
    return out


def cases(quick: bool):
    """(name, ops per call, {contender: fn}) of every measured case."""
    import jax
    import jax.numpy as jnp

    import refimpl as ri
    import refimpl.numpy as rnp

    jax.config.update("jax_platforms", "cpu")
    out = []
    for n in (SMALL, ONE_K, MEDIUM):
        base = np.linspace(-1, 1, n, dtype=np.float32)
        xr, xj, xn = rnp.asarray(base), jnp.asarray(base), base.copy()
        out.append(
            (
                f"eager x + 1, {n} f32",
                1,
                {
                    "ref": lambda x=xr: x + 1,
                    "jax": lambda x=xj: _wait_jax(x + 1),
                    "numpy": lambda x=xn: x + 1,
                },
            )
        )
        out.append(
            (
                f"eager sin(x), {n} f32",
                1,
                {
                    "ref": lambda x=xr: rnp.sin(x),
                    "jax": lambda x=xj: _wait_jax(jnp.sin(x)),
                    "numpy": lambda x=xn: np.sin(x),
                },
            )
        )
    ops = 3 * CHAIN_REPEATS
    for n in (SMALL, MEDIUM):
        base = np.linspace(-1, 1, n, dtype=np.float32)
        xr, xj, xn = rnp.asarray(base), jnp.asarray(base), base.copy()
        out.append(
            (
                f"eager chain 200 x (sin, *, +), {n} f32, per op",
                ops,
                {
                    "ref": lambda x=xr: chain(rnp, x),
                    "jax": lambda x=xj: _wait_jax(chain(jnp, x)),
                    "numpy": lambda x=xn: chain(np, x),
                },
            )
        )
    for n in (SMALL, MEDIUM):
        base = np.linspace(-1, 1, n, dtype=np.float32)
        xr, xn = rnp.asarray(base), base.copy()
        jitted = ri.jit(lambda y: chain(rnp, y))
        equations = len(jitted.trace(xr).program.eqns)
        assert equations == ops, equations
        np.testing.assert_array_equal(np.asarray(jitted(xr)), chain(np, xn))
        out.append(
            (
                f"interpreter: jit(chain) on ref, {n} f32, per equation",
                equations,
                {"ref": lambda f=jitted, x=xr: f(x), "numpy": lambda x=xn: chain(np, x)},
            )
        )
    if quick:
        out = [c for c in out if "65536" not in c[0] or "interpreter" in c[0]]
    return out


def run(rounds: int, quick: bool) -> list[dict]:
    rows = []
    for name, ops, fns in cases(quick):
        names = list(fns)
        # Short blocks, many rounds: on a loaded machine a block is often
        # descheduled part of the way; the median over many short blocks is
        # the cost of the undisturbed ones (a chain call is a block of one).
        chain_case = "chain" in name
        target = 0.0002 if not chain_case else 0.0
        case_rounds = rounds * (4 if chain_case else 20)
        times = interleaved([fns[k] for k in names], case_rounds, target)
        row = {"case": name, "us": {}, "ratio": {}}
        for k, series in zip(names, times, strict=True):
            row["us"][k] = statistics.median(series) / ops * 1e6
        ref = times[names.index("ref")]
        for k, series in zip(names, times, strict=True):
            if k != "ref":
                row["ratio"][k] = paired_ratio(ref, series)
        rows.append(row)
        print(_format(row), file=sys.stderr, flush=True)
    return rows


def _format(row: dict) -> str:
    us = row["us"]
    cells = [f"{us.get(k, float('nan')):8.2f}" for k in ("ref", "jax", "numpy")]
    ratios = [f"{row['ratio'].get(k, float('nan')):6.2f}" for k in ("jax", "numpy")]
    return f"{row['case']:<58} {' '.join(cells)}   {' '.join(ratios)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="3 rounds, no 65,536-element eager")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rounds = 3 if args.quick else args.rounds
    load_start = os.getloadavg()
    print(
        f"{'case':<58} {'ref us':>8} {'jax us':>8} {'numpy us':>8}   {'/jax':>6} {'/numpy':>6}",
        file=sys.stderr,
    )
    rows = run(rounds, args.quick)
    load_end = os.getloadavg()
    load = ", ".join(f"{v:.1f}" for v in load_end)
    print(
        f"load average {', '.join(f'{v:.1f}' for v in load_start)} at the start, "
        f"{load} at the end; {os.cpu_count()} CPUs; {rounds} rounds; medians; "
        "ratios: median over rounds of ref / other",
        file=sys.stderr,
    )
    if args.json:
        print(json.dumps({"loadavg": [load_start, load_end], "rounds": rounds, "rows": rows}))


if __name__ == "__main__":
    main()
