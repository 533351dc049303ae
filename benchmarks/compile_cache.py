"""First call in a fresh process, with the persistent compilation cache cold or warm.

Issue 20. Two functions:

* ``add_chain``: 1,000 adds in a row (``x = x + 1.0``) on f32[1024];
* ``mlp``: an 8-layer MLP (256 wide, tanh, batch 32), weights as arguments.

Each measurement is one new Python process that imports the library, puts
the arguments on the device (so the client exists), then times the first
call: trace, lower, compile or load from the cache, run, wait for the result.
Contenders, per function:

* refimpl cold: ``ri.jit(f, backend="pjrt")`` with ``compilation_cache_dir``
  set to an empty directory (compile, serialize, write);
* refimpl warm: the same, the directory filled by the process just before
  (``not lowered``: how many warm runs hit through the program key);
* jax cold / jax warm: ``jax.jit(f)`` with JAX's persistent compilation cache
  (``jax_compilation_cache_dir``, every entry cached: minimum compile time 0,
  minimum entry size -1), an empty directory vs a filled one.

Repeats alternate the contenders; medians are reported, of the wall-clock
time and, second, of the process's CPU time (``time.process_time``, every
thread: XLA compiles with several), which a loaded machine distorts less.
Goals (wall clock): refimpl warm <= 0.25 x refimpl cold; refimpl warm <= 1.0 x
jax warm.

    python benchmarks/compile_cache.py [--repeats 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOAL_WARM_VS_COLD = 0.25
GOAL_WARM_VS_JAX = 1.0

CHILD = textwrap.dedent(
    """
    import json, sys, time
    import numpy as np
    lib_name, case, cache = sys.argv[1], sys.argv[2], sys.argv[3]
    if lib_name == "refimpl":
        import refimpl as ri
        from refimpl.backends.pjrt import compilation_cache as cc
        ri.config.update("compilation_cache_dir", cache)
        np_ = ri.numpy
        jit = lambda f: ri.jit(f, backend="pjrt")
        put = lambda a: ri.device_put(a, ri.devices("pjrt")[0])
        block = lambda y: np.asarray(y)
    else:
        import jax
        jax.config.update("jax_compilation_cache_dir", cache)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
        import jax.numpy as np_
        jit = jax.jit
        put = lambda a: jax.device_put(a)
        block = lambda y: y.block_until_ready()

    rng = np.random.default_rng(0)
    if case == "add_chain":
        def add_chain(x):
            for _ in range(1000):
                x = x + 1.0
            return x
        fun, args = add_chain, [np.zeros(1024, np.float32)]
    else:
        def mlp(x, *weights):
            for i in range(0, len(weights), 2):
                x = np_.tanh(x @ weights[i] + weights[i + 1])
            return x
        args = [rng.standard_normal((32, 256), dtype=np.float32)]
        for _ in range(8):
            args += [rng.standard_normal((256, 256), dtype=np.float32) / 16.0,
                     np.zeros(256, np.float32)]
        fun = mlp
    args = [put(a) for a in args]
    block(args[0])
    f = jit(fun)
    start, cpu_start = time.perf_counter(), time.process_time()
    out = block(f(*args))
    seconds = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    stats = cc.stats() if lib_name == "refimpl" else {}
    print(json.dumps({"seconds": seconds, "cpu": cpu, "stats": stats,
                      "checksum": float(np.sum(out))}))
    """
)


def run_child(lib: str, case: str, cache: str) -> dict:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", JAX_PLATFORMS="cpu")
    env.pop("REFIMPL_COMPILATION_CACHE_DIR", None)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, lib, case, cache],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{lib} {case} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(case: str, repeats: int) -> dict:
    times: dict[str, list[float]] = {k: [] for k in ("ri_cold", "ri_warm", "jax_cold", "jax_warm")}
    cpu_times: dict[str, list[float]] = {k: [] for k in times}
    checks: dict[str, set] = {"refimpl": set(), "jax": set()}
    program_hits = 0  # refimpl warm runs that hit through the program key (no lowering)
    with tempfile.TemporaryDirectory(prefix="cc_bench_") as root:
        for r in range(repeats):
            order = [("refimpl", "cold"), ("refimpl", "warm"), ("jax", "cold"), ("jax", "warm")]
            order = order[r % 4 :] + order[: r % 4]
            for lib, kind in order:
                cache = os.path.join(root, f"{lib}_{kind}_{r}")
                if kind == "warm":
                    # filled by the process just before: the same library code (on a
                    # shared tree, an edit of refimpl meanwhile would change the key)
                    run_child(lib, case, cache)
                result = run_child(lib, case, cache)
                key = ("ri" if lib == "refimpl" else "jax") + "_" + kind
                times[key].append(result["seconds"])
                cpu_times[key].append(result["cpu"])
                checks[lib].add(round(result["checksum"], 1))
                if lib == "refimpl":
                    program_hits += result["stats"]["program_hits"]
                    want = {"hits": 1, "misses": 0} if kind == "warm" else {"hits": 0, "misses": 1}
                    got = {k: result["stats"][k] for k in want}
                    if got != want:
                        raise RuntimeError(f"refimpl {kind} {case}: cache counters {result}")
    ms = {k: 1e3 * statistics.median(v) for k, v in times.items()}
    cpu_ms = {k: 1e3 * statistics.median(v) for k, v in cpu_times.items()}
    return {
        "case": case,
        "ms": ms,
        "warm/cold": ms["ri_warm"] / ms["ri_cold"],
        "warm/jax_warm": ms["ri_warm"] / ms["jax_warm"],
        "jax warm/cold": ms["jax_warm"] / ms["jax_cold"],
        "cpu_ms": cpu_ms,
        "cpu warm/cold": cpu_ms["ri_warm"] / cpu_ms["ri_cold"],
        "cpu warm/jax_warm": cpu_ms["ri_warm"] / cpu_ms["jax_warm"],
        "checksums": {k: sorted(v) for k, v in checks.items()},
        "warm hits without lowering": f"{program_hits}/{repeats}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    rows = [measure(case, options.repeats) for case in ("add_chain", "mlp")]
    if options.json:
        print(json.dumps({"rows": rows, "loadavg": os.getloadavg()}, indent=1))
        return
    print(f"first call in a fresh process, median of {options.repeats}, ms")
    print(
        f"{'case':<10} {'ri cold':>9} {'ri warm':>9} {'jax cold':>9} {'jax warm':>9} "
        f"{'ri warm/cold':>13} {'ri warm/jax warm':>17} {'not lowered':>12}"
    )
    for row in rows:
        ms = row["ms"]
        print(
            f"{row['case']:<10} {ms['ri_cold']:>9.1f} {ms['ri_warm']:>9.1f} "
            f"{ms['jax_cold']:>9.1f} {ms['jax_warm']:>9.1f} {row['warm/cold']:>13.3f} "
            f"{row['warm/jax_warm']:>17.3f} {row['warm hits without lowering']:>12}"
        )
    print("CPU time of the process (process_time, all threads; less noisy on a busy machine)")
    for row in rows:
        ms = row["cpu_ms"]
        print(
            f"{row['case']:<10} {ms['ri_cold']:>9.1f} {ms['ri_warm']:>9.1f} "
            f"{ms['jax_cold']:>9.1f} {ms['jax_warm']:>9.1f} {row['cpu warm/cold']:>13.3f} "
            f"{row['cpu warm/jax_warm']:>17.3f}"
        )
    print(
        f"goals (wall clock): ri warm/cold <= {GOAL_WARM_VS_COLD}, "
        f"ri warm/jax warm <= {GOAL_WARM_VS_JAX}; "
        f"load average {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
