"""Per-call dispatch time of refimpl's fast path against ``jax.jit`` on ONE device.

Made for issue 32 (the fast path on a GPU), and runs on any plugin: refimpl
uses the device its plugin discovery picks (``ri.devices("pjrt")[0]``), JAX
its default device (``jax.devices()[0]``); on a GPU machine both are the
same card, and refimpl loads the same ``xla_cuda_plugin.so`` as JAX.

Rows, for 1024 and 1M (2**20) float32 elements each:

* ``1 arg`` / ``8 args``, donated and not: ``x * 2 + 1`` per array; donated
  rows chain each call's outputs into the next call (``x = f(x)``);
* ``input from device_put``: the first input made by ``device_put``;
* ``eager x + 1``: one operation outside ``jit``.

Each timing is ``calls`` calls ended by ``block_until_ready``, divided by
``calls``: the per-call time of cached calls (dispatch, plus execution where
it does not overlap: the 1M rows measure mostly the kernel). refimpl and JAX
alternate in rounds of blocks (the order flips every round); the table gives
the medians over all rounds and their ratio refimpl/JAX. The loops are
``benchmarks/dispatch.py``'s.

Goals (issue 32): ratio <= 0.75 for the 1024-element rows, <= 1.05 for the 1M
rows (the same XLA executes them).

    python benchmarks/gpu_dispatch.py [--quick] [--json PATH] [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# Both libraries on one GPU: neither may grab most of its memory up front.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

sys.path.insert(0, str(Path(__file__).resolve().parent))
import dispatch  # noqa: E402  (benchmarks/dispatch.py: Case, loops, contenders)

GOAL_SMALL = 0.75
GOAL_LARGE = 1.05
SIZES = {"1024": (1024,), "1M": (1 << 20,)}


def cases() -> list[dispatch.Case]:
    found = []
    for label, shape in SIZES.items():
        for donate in (False, True):
            tag = "donated" if donate else "not donated"
            found.append(dispatch.Case(f"{label} f32, 1 arg, {tag}", shape, donate=donate))
            found.append(
                dispatch.Case(f"{label} f32, 8 args, {tag}", shape, num_args=8, donate=donate)
            )
            found.append(
                dispatch.Case(
                    f"{label} f32, 1 arg, {tag}, input from device_put",
                    shape,
                    donate=donate,
                    origin="device_put",
                )
            )
        found.append(dispatch.Case(f"{label} f32, eager x + 1", shape, eager="add"))
    for case in found:
        case.goal = "small" if case.shape == (1024,) else "large"
    return found


def calls_for(case: dispatch.Case, quick: bool) -> int:
    base = 100 if case.shape == (1 << 20,) else 1000
    if case.num_args == 8:
        base //= 2
    return max(10, base // 5) if quick else base


def run_case(case: dispatch.Case, rounds: int, quick: bool) -> None:
    calls = calls_for(case, quick)
    contenders = {
        "refimpl": dispatch.refimpl_contender(case),
        "jax": dispatch.jax_contender(case),
    }
    case.results = {"refimpl": [], "jax": []}
    # warm-up: compile, fill the caches, settle the clocks
    for name, (fn, args) in contenders.items():
        _, args = dispatch.time_calls(fn, args, case, max(5, calls // 10))
        contenders[name] = (fn, args)
    order = ["refimpl", "jax"]
    for r in range(rounds):
        for name in order if r % 2 == 0 else order[::-1]:
            fn, args = contenders[name]
            per_call, args = dispatch.time_calls(fn, args, case, calls)
            contenders[name] = (fn, args)
            case.results[name].append(per_call)


def summary(case: dispatch.Case) -> dict[str, Any]:
    ours = statistics.median(case.results["refimpl"])
    theirs = statistics.median(case.results["jax"])
    ratio = ours / theirs
    limit = GOAL_SMALL if case.goal == "small" else GOAL_LARGE
    return {
        "case": case.name,
        "refimpl_us": round(ours, 2),
        "jax_us": round(theirs, 2),
        "ratio": round(ratio, 3),
        "goal": limit,
        "met": ratio <= limit,
        "rounds": len(case.results["refimpl"]),
    }


def environment() -> dict[str, Any]:
    import jax

    import refimpl as ri
    from refimpl.backends.pjrt import runtime

    ours = ri.devices("pjrt")[0]
    theirs = jax.devices()[0]
    return {
        "refimpl_device": f"{ours.platform}: {ours.kind}",
        "refimpl_plugin": runtime.find_plugin_path(),
        "jax_device": f"{theirs.platform}: {theirs.device_kind}",
        "jax": jax.__version__,
        "python": platform.python_version(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls and rounds")
    parser.add_argument("--rounds", type=int, default=0, help="rounds (default 7, quick 3)")
    parser.add_argument("--json", help="also write the rows as JSON to this path")
    parser.add_argument("-k", default="", help="only rows whose name contains this")
    args = parser.parse_args(argv)
    rounds = args.rounds or (3 if args.quick else 7)
    env = environment()
    print(f"refimpl: {env['refimpl_device']} ({env['refimpl_plugin']})")
    print(f"jax {env['jax']}: {env['jax_device']}")
    rows = []
    header = f"{'case':<52} {'refimpl us':>11} {'jax us':>9} {'ratio':>7} {'goal':>6}"
    print(header)
    print("-" * len(header))
    for case in cases():
        if args.k and args.k not in case.name:
            continue
        start = time.perf_counter()
        try:
            run_case(case, rounds, args.quick)
        except Exception as err:  # a failed row must not hide the others
            row = {"case": case.name, "error": f"{type(err).__name__}: {err}"[:300]}
            print(f"{case.name:<52} ERROR {row['error']}", flush=True)
            rows.append(row)
            continue
        row = summary(case)
        row["seconds"] = round(time.perf_counter() - start, 1)
        rows.append(row)
        mark = "ok" if row["met"] else "MISS"
        print(
            f"{case.name:<52} {row['refimpl_us']:>11.2f} {row['jax_us']:>9.2f} "
            f"{row['ratio']:>7.3f} {mark:>6} (<= {row['goal']})",
            flush=True,
        )
    missed = [row["case"] for row in rows if not row.get("met")]
    print(f"goals met: {len(rows) - len(missed)} of {len(rows)} rows")
    if args.json:
        Path(args.json).write_text(json.dumps({"environment": env, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
