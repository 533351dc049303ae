"""vmap benchmarks (issue 14), refimpl vs JAX side by side, ratios printed.

1. Tracing: ``jit(vmap(f)).trace(x)`` of a function chaining 1,000 adds
   (``x = x + 1.0``), a fresh function object each time (no cache hit in
   either library). Goal: refimpl <= 0.5 x JAX.
2. Per-example gradients: a cached call of ``jit(vmap(grad(loss), in_axes=
   (None, 0, 0)))`` of a two-layer MLP on pjrt vs ``jax.jit`` of the same,
   for small sizes (dispatch-bound; goal <= 0.75 x JAX) and a larger one
   (compute-bound; goal <= 1.1 x JAX).

Each measurement is repeated; medians are reported, the contenders
alternating within one run (so machine load affects both alike).

    python benchmarks/vmap.py [--ops 1000] [--repeats 7] [--json]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

GOAL_TRACE = 0.5
GOAL_SMALL = 0.75
GOAL_LARGE = 1.1
# (batch, features, hidden): the first two dispatch-bound, the last compute-bound
SIZES = [(8, 16, 32), (32, 64, 64), (128, 256, 512)]


def chain(ops: int) -> Callable[[Any], Any]:
    def vmap_add_chain(x: Any) -> Any:
        for _ in range(ops):
            x = x + 1.0
        return x

    return vmap_add_chain


def _ms(action: Callable[[], Any]) -> float:
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        out = action()
        for leaf in out if isinstance(out, (list, tuple)) else [out]:
            ready = getattr(leaf, "block_until_ready", None)
            if callable(ready):
                ready()
        return (time.perf_counter() - start) * 1e3
    finally:
        gc.enable()


def measure_trace(ops: int, repeats: int) -> dict[str, list[float]]:
    import jax
    import jax.numpy as jnp

    import refimpl as ri

    x = np.ones((8, 16), np.float32)
    xj = jnp.asarray(x)
    ri.jit(ri.vmap(chain(3))).trace(x)
    jax.jit(jax.vmap(chain(3))).trace(xj)
    times: dict[str, list[float]] = {"refimpl": [], "jax": []}
    for _ in range(repeats):
        times["refimpl"].append(_ms(lambda: ri.jit(ri.vmap(chain(ops))).trace(x)))
        times["jax"].append(_ms(lambda: jax.jit(jax.vmap(chain(ops))).trace(xj)))
    return times


def _loss(np_: Any) -> Callable[..., Any]:
    def loss(params: Any, x: Any, y: Any) -> Any:
        (w1, b1), (w2, b2) = params
        h = np_.tanh(x @ w1 + b1)
        return np_.sum((h @ w2 + b2 - y) ** 2)

    return loss


def measure_grads(size: tuple[int, int, int], repeats: int, calls: int) -> dict[str, list[float]]:
    """Per call, microseconds: the median over ``repeats`` blocks of ``calls`` calls."""
    import jax
    import jax.numpy as jnp

    import refimpl as ri
    import refimpl.numpy as rnp

    batch, features, hidden = size
    rng = np.random.default_rng(0)
    params = [
        (
            rng.normal(size=(features, hidden)).astype(np.float32) * 0.1,
            np.zeros(hidden, np.float32),
        ),
        (rng.normal(size=(hidden, 1)).astype(np.float32) * 0.1, np.zeros(1, np.float32)),
    ]
    x = rng.normal(size=(batch, features)).astype(np.float32)
    y = rng.normal(size=(batch, 1)).astype(np.float32)
    ours = ri.jit(ri.vmap(ri.grad(_loss(rnp)), in_axes=(None, 0, 0)), backend="pjrt")
    theirs = jax.jit(jax.vmap(jax.grad(_loss(jnp)), in_axes=(None, 0, 0)))
    # arguments already on the device, as JAX's are (pjrt arrays from a jitted copy)
    our_args = ri.jit(lambda t: ri.tree_map(lambda a: a * 1.0, t), backend="pjrt")((params, x, y))
    their_args = jax.tree_util.tree_map(jnp.asarray, (params, x, y))
    for f, args in ((ours, our_args), (theirs, their_args)):  # compile, check, warm up
        for _ in range(3):
            out = f(*args)
    np.testing.assert_allclose(
        np.asarray(ours(*our_args)[0][0]),
        np.asarray(theirs(*their_args)[0][0]),
        rtol=1e-3,
        atol=1e-4,
    )

    def block(f: Any, args: Any) -> Callable[[], Any]:
        def run() -> Any:
            out = None
            for _ in range(calls):
                out = f(*args)
            return jax.tree_util.tree_leaves(out)

        return run

    times: dict[str, list[float]] = {"refimpl": [], "jax": []}
    for _ in range(repeats):
        times["refimpl"].append(_ms(block(ours, our_args)) * 1e3 / calls)
        times["jax"].append(_ms(block(theirs, their_args)) * 1e3 / calls)
    del out
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    trace = measure_trace(args.ops, args.repeats)
    rows = []
    med = {k: statistics.median(v) for k, v in trace.items()}
    rows.append(("trace jit(vmap(chain))", "ms", med["refimpl"], med["jax"], GOAL_TRACE))
    for size in SIZES:
        calls = 200 if size[0] * size[2] < 50_000 else 20
        grads = measure_grads(size, args.repeats, calls)
        med = {k: statistics.median(v) for k, v in grads.items()}
        goal = GOAL_LARGE if size is SIZES[-1] else GOAL_SMALL
        name = "cached jit(vmap(grad)) B={} F={} H={}".format(*size)
        rows.append((name, "us", med["refimpl"], med["jax"], goal))
    results = [
        {"what": w, "unit": u, "refimpl": r, "jax": j, "ratio": r / j, "goal": g, "met": r / j <= g}
        for w, u, r, j, g in rows
    ]
    if args.json:
        print(json.dumps({"results": results, "loadavg": os.getloadavg()}, indent=1))
        return 0
    print(f"vmap benchmarks, median of {args.repeats}")
    print(f"{'':44} {'refimpl':>10} {'jax':>10} {'ratio':>6} {'goal':>6}")
    for r in results:
        verdict = "met" if r["met"] else "MISSED"
        print(
            f"{r['what']:40} {r['unit']:>3} {r['refimpl']:10.3f} {r['jax']:10.3f} "
            f"{r['ratio']:6.2f} {r['goal']:6.2f} {verdict}"
        )
    print(f"load average during the run: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
