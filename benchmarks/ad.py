"""Automatic differentiation: refimpl vs JAX, side by side in one run.

* **trace**: the Program of ``grad`` of a 1,000-op chain
  (``ri.make_program(ri.grad(f))(x)``) vs ``jax.make_jaxpr(jax.grad(f))(x)``;
  a fresh function object per measurement, medians. Goal: <= 0.5 x JAX.
* **cached call**: ``ri.jit(ri.grad(loss), backend="pjrt")(params, x, y)``
  of a small MLP vs ``jax.jit(jax.grad(loss))``, after warm-up; per-call
  time over blocks of calls, contenders alternating block by block, shown as
  the median block and the best block (the machine is shared: the best block
  is the one least disturbed by other load). Goal: <= 0.75 x.
* **equations**: the number of equations in the differentiated program vs
  in JAX's jaxpr for the same functions (sub-programs included on both
  sides). Goal: <= 1.1 x (no forward work done twice).

    python benchmarks/ad.py [--ops 1000] [--repeats 7] [--call-blocks 30] [--calls 100] [--json]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

GOAL_TRACE = 0.5
GOAL_CALL = 0.75
GOAL_EQNS = 1.1


def chain(ops: int, np_: Any) -> Callable[[Any], Any]:
    """A fresh function: ``ops`` elementwise operations alternating sin and a scale."""

    def ad_chain(x: Any) -> Any:
        for i in range(ops):
            x = np_.sin(x) if i % 2 == 0 else x * 1.01
        return x

    return ad_chain


def mlp_loss(np_: Any) -> Callable[..., Any]:
    def loss(params: dict, x: Any, y: Any) -> Any:
        h = np_.tanh(x @ params["w1"] + params["b1"])
        out = h @ params["w2"] + params["b2"]
        return np_.mean((out - y) ** 2)

    return loss


def mlp_data() -> tuple[dict, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    params = {
        "w1": rng.normal(size=(8, 32)).astype(np.float32) * 0.3,
        "b1": np.zeros(32, np.float32),
        "w2": rng.normal(size=(32, 1)).astype(np.float32) * 0.3,
        "b2": np.zeros(1, np.float32),
    }
    x = rng.normal(size=(64, 8)).astype(np.float32)
    y = rng.normal(size=(64, 1)).astype(np.float32)
    return params, x, y


def _ms(action: Callable[[], Any]) -> float:
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        action()
        return (time.perf_counter() - start) * 1e3
    finally:
        gc.enable()


def _count_program(program: Any) -> int:
    return sum(1 for _ in program.walk_eqns())


def _count_jaxpr(jaxpr: Any) -> int:
    import jax
    import jax.extend  # noqa: F401 - jaxprs_in_params

    total = 0
    for eqn in jaxpr.eqns:
        total += 1
        for sub in jax.extend.core.jaxprs_in_params(eqn.params):
            total += _count_jaxpr(sub)
    return total


def measure(ops: int, repeats: int, calls: int, blocks: int) -> dict[str, Any]:
    import jax
    import jax.extend  # noqa: F401 - jaxprs_in_params
    import jax.numpy as jnp

    import refimpl as ri
    import refimpl.numpy as rnp

    x = np.float32(0.5)
    # warm-up of both libraries
    ri.make_program(ri.grad(chain(4, rnp)))(x)
    jax.make_jaxpr(jax.grad(chain(4, jnp)))(x)

    trace_ri, trace_jax = [], []
    for _ in range(repeats):
        trace_ri.append(_ms(lambda: ri.make_program(ri.grad(chain(ops, rnp)))(x)))
        trace_jax.append(_ms(lambda: jax.make_jaxpr(jax.grad(chain(ops, jnp)))(x)))

    chain_program = ri.make_program(ri.grad(chain(ops, rnp)))(x)
    chain_jaxpr = jax.make_jaxpr(jax.grad(chain(ops, jnp)))(x)

    params, xs, ys = mlp_data()
    params_j = jax.tree_util.tree_map(jnp.asarray, params)
    xs_j, ys_j = jnp.asarray(xs), jnp.asarray(ys)
    g_ri = ri.jit(ri.grad(mlp_loss(rnp)), backend="pjrt")
    g_jax = jax.jit(jax.grad(mlp_loss(jnp)))
    params_p = ri.device_put(params, ri.devices("pjrt")[0])
    xs_p = ri.device_put(xs, ri.devices("pjrt")[0])
    ys_p = ri.device_put(ys, ri.devices("pjrt")[0])
    got = g_ri(params_p, xs_p, ys_p)
    want = g_jax(params_j, xs_j, ys_j)
    for k in params:
        np.testing.assert_allclose(np.asarray(got[k]), np.asarray(want[k]), rtol=1e-4, atol=1e-5)

    def block_ri() -> None:
        for _ in range(calls):
            out = g_ri(params_p, xs_p, ys_p)
        np.asarray(out["b2"])

    def block_jax() -> None:
        for _ in range(calls):
            out = g_jax(params_j, xs_j, ys_j)
        out["b2"].block_until_ready()

    block_ri()
    block_jax()
    call_ri, call_jax = [], []
    for _ in range(blocks):
        call_ri.append(_ms(block_ri) * 1e3 / calls)
        call_jax.append(_ms(block_jax) * 1e3 / calls)

    mlp_program = ri.make_program(ri.grad(mlp_loss(rnp)))(params, xs, ys)
    mlp_jaxpr = jax.make_jaxpr(jax.grad(mlp_loss(jnp)))(params_j, xs_j, ys_j)
    return {
        "ops": ops,
        "trace_ms": {"refimpl": statistics.median(trace_ri), "jax": statistics.median(trace_jax)},
        "call_us": {"refimpl": statistics.median(call_ri), "jax": statistics.median(call_jax)},
        "call_us_best": {"refimpl": min(call_ri), "jax": min(call_jax)},
        "eqns_chain": {
            "refimpl": _count_program(chain_program),
            "jax": _count_jaxpr(chain_jaxpr.jaxpr),
        },
        "eqns_mlp": {"refimpl": _count_program(mlp_program), "jax": _count_jaxpr(mlp_jaxpr.jaxpr)},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--call-blocks", type=int, default=30)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = measure(args.ops, args.repeats, args.calls, args.call_blocks)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    rows = [
        ("trace grad chain (ms)", result["trace_ms"], GOAL_TRACE),
        ("jit(grad(mlp)) cached call, pjrt (us)", result["call_us"], GOAL_CALL),
        ("  same, best block (us)", result["call_us_best"], GOAL_CALL),
        ("equations, grad chain", result["eqns_chain"], GOAL_EQNS),
        ("equations, grad mlp", result["eqns_mlp"], GOAL_EQNS),
    ]
    print(f"{'case':42} {'refimpl':>10} {'jax':>10} {'ratio':>7} {'goal':>6}")
    for name, values, goal in rows:
        ratio = values["refimpl"] / values["jax"]
        mark = "ok" if ratio <= goal else "MISSED"
        print(
            f"{name:42} {values['refimpl']:10.2f} {values['jax']:10.2f} {ratio:7.2f} "
            f"{goal:6.2f} {mark}"
        )


if __name__ == "__main__":
    main()
