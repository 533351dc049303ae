"""Tracing and first-call time: the "jit_add_chain" case, refimpl vs JAX.

A function that chains 1,000 adds (``x = x + 1.0``, 1,000 times) is

* traced: ``ri.jit(f).trace(x)`` (the Program) vs ``jax.jit(f).trace(x)``
  (the jaxpr) -- the tracer's own cost;
* called the first time: ``ri.jit(f, backend="pjrt")(x)`` (trace, lower to
  StableHLO, compile with the PJRT plugin, run) vs ``jax.jit(f)(x)``;
* called again (the cached call), for scale.

Each measurement uses a fresh function object (so no cache of either
library is hit) and is repeated; medians are reported, contenders
alternating within one run. Goal (issue 7): refimpl's trace time <= 0.5 x
JAX's.

    python benchmarks/trace.py [--adds 1000] [--repeats 7] [--json] [--profile]

``--profile`` prints the top of a cProfile of refimpl's trace.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import os
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

GOAL_TRACE_VS_JAX = 0.5


def add_chain(adds: int) -> Callable[[Any], Any]:
    """A fresh function object: ``adds`` additions in a row."""

    def jit_add_chain(x: Any) -> Any:
        for _ in range(adds):
            x = x + 1.0
        return x

    return jit_add_chain


def _time(action: Callable[[], Any]) -> float:
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        result = action()
        _block(result)
        return (time.perf_counter() - start) * 1e3
    finally:
        gc.enable()


def _block(result: Any) -> None:
    ready = getattr(result, "block_until_ready", None)
    if callable(ready):
        ready()


def measure(adds: int, repeats: int) -> dict[str, list[float]]:
    import jax
    import jax.numpy as jnp

    import refimpl as ri

    x_np = np.ones(16, np.float32)
    x_jax = jnp.asarray(x_np)
    # warm up both libraries (imports, clients, first compilations)
    x_pjrt = ri.jit(add_chain(3), backend="pjrt")(x_np)
    jax.jit(add_chain(3))(x_jax).block_until_ready()
    times: dict[str, list[float]] = {}

    def record(name: str, action: Callable[[], Any]) -> None:
        times.setdefault(name, []).append(_time(action))

    for _ in range(repeats):
        record("refimpl trace", lambda: ri.jit(add_chain(adds)).trace(x_np))
        record("jax trace", lambda: jax.jit(add_chain(adds)).trace(x_jax))
        ours = ri.jit(add_chain(adds), backend="pjrt")
        theirs = jax.jit(add_chain(adds))
        record("refimpl first call", lambda f=ours: f(x_pjrt))
        record("jax first call", lambda f=theirs: f(x_jax))
        record("refimpl cached call", lambda f=ours: f(x_pjrt))
        record("jax cached call", lambda f=theirs: f(x_jax))
        # where refimpl's first call goes: trace, lower to StableHLO, compile
        traced = ri.jit(add_chain(adds), backend="pjrt").trace(x_np)
        lowered: list[Any] = []
        record("refimpl: lower", lambda t=traced, out=lowered: out.append(t.lower()))
        record("refimpl: compile", lambda out=lowered: out[0].compile())
    return times


def profile_trace(adds: int, top: int = 25) -> str:
    import refimpl as ri

    x = np.ones(16, np.float32)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(3):
        ri.jit(add_chain(adds)).trace(x)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(top)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--adds", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--profile", action="store_true", help="cProfile refimpl's trace")
    args = parser.parse_args(argv)

    times = measure(args.adds, args.repeats)
    medians = {name: statistics.median(values) for name, values in times.items()}
    ratios = {
        what: medians[f"refimpl {what}"] / medians[f"jax {what}"]
        for what in ("trace", "first call", "cached call")
    }
    goal = {"ratio": ratios["trace"], "goal": GOAL_TRACE_VS_JAX}
    goal["met"] = goal["ratio"] <= GOAL_TRACE_VS_JAX
    if args.json:
        report = {
            "adds": args.adds,
            "ms": medians,
            "samples_ms": times,
            "refimpl/jax": ratios,
            "goal_trace": goal,
            "loadavg": os.getloadavg(),
        }
        print(json.dumps(report, indent=1))
    else:
        print(f"jit_add_chain ({args.adds} adds), median of {args.repeats}, milliseconds")
        print(f"{'':14} {'refimpl':>10} {'jax':>10} {'ref/jax':>8}")
        for what in ("trace", "first call", "cached call"):
            print(
                f"{what:14} {medians[f'refimpl {what}']:10.3f} {medians[f'jax {what}']:10.3f} "
                f"{ratios[what]:8.2f}"
            )
        print(
            f"refimpl's first call = trace + lower ({medians['refimpl: lower']:.1f}) + "
            f"compile ({medians['refimpl: compile']:.1f}) + run"
        )
        verdict = "met" if goal["met"] else "MISSED"
        print(f"\ngoal: trace refimpl/jax <= {GOAL_TRACE_VS_JAX}: {goal['ratio']:.2f} {verdict}")
        print(f"load average during the run: {os.getloadavg()}")
    if args.profile:
        print(profile_trace(args.adds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
