"""Per-call dispatch time: refimpl's C++ fast path vs jax.jit vs the raw PJRT loop.

Every case is one small jitted function (``x * 2 + 1`` per array), run

* by ``ri.jit(f, backend="pjrt")`` (the fast path: C++ signature, cache, execute),
* by ``jax.jit(f)``, the same function on the same machine,
* by ``benchmarks/raw_pjrt_loop`` (C++, no Python): the PJRT C API calls alone,
  on the very StableHLO that refimpl compiled for the case -- the floor.

With donation, each call's outputs feed the next call (the buffers are
reused); without, the same inputs are passed every time (and the previous
call's outputs die after the next call, as with ``out = f(x)``; the raw loop
does the same). Each measurement is the time of ``calls`` calls divided by
``calls``, ending with a ``block_until_ready`` so asynchronous dispatch hides
nothing. The three contenders run in ONE run (the raw loop as a server
process per case), in rounds of blocks whose order rotates (see
``run_case``), so they share the load of the machine; the table shows
medians over all timings and the ratios of those medians.

Rows "input from device_put" / "input from an eager op" start the same loop
from an array made by ``ri.device_put(x, device)`` / by ``x * 1`` on such an
array (``jax.device_put`` and a jnp op for JAX): the fast path must hit on
every array type. Rows "eager" time one operation outside ``jit``
(``x + 1``, ``rnp.sin(x)`` against ``jnp.sin``) on 1024 float32.

    python benchmarks/dispatch.py            # table
    python benchmarks/dispatch.py --json     # machine-readable
    python benchmarks/dispatch.py --quick    # fewer calls and rounds

The raw loop is built on demand with CMake (``-DREFIMPL_BUILD_BENCH=ON``,
target ``raw_pjrt_loop``) into ``build/bench``, or pass ``--raw-bin``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# numpy's idle OpenBLAS threads spin and take a core from every contender
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

# Goals of issue 7 (ratios, same run).
GOAL_SMALL_VS_JAX = 0.75
GOAL_SMALL_VS_RAW = 1.3
GOAL_PYTREE_VS_JAX = 0.8
# Goal of issue 12: an eager op against JAX's eager op.
GOAL_EAGER_VS_JAX = 0.75


@dataclass
class Case:
    """One benchmark: a function of ``num_args`` arrays of ``shape`` (or one dict)."""

    name: str
    shape: tuple[int, ...]
    num_args: int = 1
    donate: bool = False
    pytree: bool = False  # one dict argument holding the arrays
    goal: str = ""  # "small", "pytree" or "eager": checked against the goals above
    origin: str = "jit"  # what made the first input: "jit", "device_put" or "eager"
    eager: str = ""  # an eager case: "add" (x + 1) or "sin"
    results: dict[str, list[float]] = field(default_factory=dict)

    def function(self) -> Callable[..., Any]:
        if self.pytree:
            return lambda tree: {key: value * 2 + 1 for key, value in tree.items()}
        if self.num_args == 1:
            return lambda x: x * 2 + 1
        return lambda *xs: tuple(x * 2 + 1 for x in xs)

    def host_inputs(self) -> list[np.ndarray]:
        return [np.full(self.shape, 0.5, np.float32) for _ in range(self.num_args)]

    def pack(self, leaves: list[Any]) -> tuple[Any, ...]:
        """The positional arguments holding ``leaves``."""
        if self.pytree:
            return ({f"w{i}": leaf for i, leaf in enumerate(leaves)},)
        return tuple(leaves)


def cases() -> list[Case]:
    found = []
    for donate in (True, False):
        tag = "donated" if donate else "not donated"
        found += [
            Case(f"scalar f32[], {tag}", (), donate=donate, goal="small"),
            Case(f"1024 f32, {tag}", (1024,), donate=donate, goal="small"),
            Case(
                f"1024 f32, {tag}, input from device_put",
                (1024,),
                donate=donate,
                goal="small",
                origin="device_put",
            ),
            Case(
                f"1024 f32, {tag}, input from an eager op",
                (1024,),
                donate=donate,
                goal="small",
                origin="eager",
            ),
            Case(f"1M f32, {tag}", (1 << 20,), donate=donate),
            Case(f"8 args x 1024 f32, {tag}", (1024,), num_args=8, donate=donate),
            Case(
                f"pytree: dict of 8 x 1024 f32, {tag}",
                (1024,),
                num_args=8,
                donate=donate,
                pytree=True,
                goal="pytree",
            ),
        ]
    found += [
        Case("eager x + 1, 1024 f32", (1024,), goal="eager", eager="add"),
        Case("eager sin(x), 1024 f32", (1024,), goal="eager", eager="sin"),
    ]
    return found


# --- timing ------------------------------------------------------------------------------


def time_calls(fn: Callable[..., Any], args: tuple[Any, ...], case: Case, calls: int) -> tuple:
    """Microseconds per call of ``calls`` calls, and the arguments to continue with.

    The loops are what a user writes (``x = f(x)``), so the harness adds as
    little as possible to the call itself.
    """
    loop = _loop(case)
    gc.disable()
    try:
        start = time.perf_counter()
        args, last = loop(fn, args, calls)
        _block(last)
        elapsed = time.perf_counter() - start
    finally:
        gc.enable()
    return elapsed / calls * 1e6, args


def _loop(case: Case) -> Callable[..., tuple[tuple[Any, ...], Any]]:
    if case.donate and (case.num_args == 1 or case.pytree):

        def chain(fn: Any, args: tuple[Any, ...], calls: int) -> tuple:
            (x,) = args
            for _ in range(calls):
                x = fn(x)
            return (x,), x

        return chain
    if case.donate:

        def chain_many(fn: Any, args: tuple[Any, ...], calls: int) -> tuple:
            for _ in range(calls):
                args = fn(*args)
            return args, args

        return chain_many
    if case.num_args == 1 or case.pytree:

        def repeat(fn: Any, args: tuple[Any, ...], calls: int) -> tuple:
            (x,) = args
            for _ in range(calls):
                out = fn(x)
            return args, out

        return repeat

    def repeat_many(fn: Any, args: tuple[Any, ...], calls: int) -> tuple:
        for _ in range(calls):
            out = fn(*args)
        return args, out

    return repeat_many


def _block(tree: Any) -> None:
    import jax

    for leaf in jax.tree_util.tree_leaves(tree):
        leaf.block_until_ready()


def refimpl_contender(case: Case) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    import refimpl as ri
    import refimpl.numpy as rnp

    device = ri.devices("pjrt")[0]
    if case.origin == "device_put" or case.eager:
        leaves = [ri.device_put(x, device) for x in case.host_inputs()]
    elif case.origin == "eager":
        leaves = [ri.device_put(x, device) * 1 for x in case.host_inputs()]
    else:
        to_device = ri.jit(lambda x: x + 0, backend="pjrt")  # uncommitted arrays on device 0
        leaves = [to_device(x) for x in case.host_inputs()]
    if case.eager:
        return (lambda x: x + 1) if case.eager == "add" else rnp.sin, case.pack(leaves)
    donate = (0,) if case.pytree else tuple(range(case.num_args))
    fn = ri.jit(case.function(), backend="pjrt", donate_argnums=donate if case.donate else ())
    return fn, case.pack(leaves)


def jax_contender(case: Case) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    import jax
    import jax.numpy as jnp

    if case.origin == "device_put" or case.eager:
        leaves = [jax.device_put(x, jax.devices()[0]) for x in case.host_inputs()]
    elif case.origin == "eager":
        leaves = [jax.device_put(x, jax.devices()[0]) * 1 for x in case.host_inputs()]
    else:
        leaves = [jnp.array(x, copy=True) for x in case.host_inputs()]
    if case.eager:
        return (lambda x: x + 1) if case.eager == "add" else jnp.sin, case.pack(leaves)
    donate = (0,) if case.pytree else tuple(range(case.num_args))
    fn = jax.jit(case.function(), donate_argnums=donate if case.donate else ())
    return fn, case.pack(leaves)


# --- the raw loop -------------------------------------------------------------------------


def build_raw_loop() -> Path:
    """``raw_pjrt_loop``, configured and built with CMake into ``build/bench``."""
    build = ROOT / "build" / "bench"
    binary = build / "raw_pjrt_loop"
    pybind11_dir = subprocess.run(
        [sys.executable, "-m", "pybind11", "--cmakedir"], capture_output=True, text=True, check=True
    ).stdout.strip()
    if not (build / "CMakeCache.txt").exists():
        subprocess.run(
            [
                "cmake", "-S", str(ROOT), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                "-DREFIMPL_BUILD_BENCH=ON", f"-Dpybind11_DIR={pybind11_dir}",
                f"-DPython_EXECUTABLE={sys.executable}",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
    subprocess.run(
        ["cmake", "--build", str(build), "--target", "raw_pjrt_loop", "-j2"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return binary


class RawLoop:
    """The raw loop binary, one server process per case (``--serve``), so that it
    alternates with the Python contenders repeat by repeat."""

    def __init__(self, binary: Path, workdir: Path) -> None:
        from refimpl.backends.pjrt import runtime as pjrt_runtime

        self.binary = binary
        self.workdir = workdir
        self.plugin = pjrt_runtime.find_plugin_path()
        self.options = workdir / "compile_options.pb"
        self.options.write_bytes(pjrt_runtime.compile_options_bytes())
        self.process: subprocess.Popen | None = None

    def start(self, case: Case, fn: Any, args: tuple[Any, ...]) -> None:
        """Compile the StableHLO refimpl made for ``case`` in a new server process."""
        from refimpl.backends.pjrt import runtime as pjrt_runtime

        program = self.workdir / "program.mlirbc"
        program.write_bytes(pjrt_runtime.serialize_stablehlo(fn.lower(*args).as_text()))
        command = [
            str(self.binary), "--plugin", self.plugin, "--program", str(program),
            "--options", str(self.options), "--shape", ",".join(str(d) for d in case.shape),
            "--args", str(case.num_args), "--json", "--serve",
        ]  # fmt: skip
        if case.donate:
            command.append("--donate")
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None
        if self.process.stdout.readline().strip() != "ready":
            raise RuntimeError(f"raw_pjrt_loop did not start for {case.name}")

    def run(self, calls: int, repeats: int) -> list[float]:
        assert self.process is not None and self.process.stdin and self.process.stdout
        self.process.stdin.write(f"run {calls} {repeats}\n")
        self.process.stdin.flush()
        return list(json.loads(self.process.stdout.readline())["repeats"])

    def stop(self) -> None:
        if self.process is not None:
            assert self.process.stdin is not None
            self.process.stdin.write("quit\n")
            self.process.stdin.close()
            self.process.wait(timeout=60)
            self.process = None


# --- the run -----------------------------------------------------------------------------------


def calls_for(case: Case, quick: bool) -> int:
    base = 200 if case.shape == (1 << 20,) else 4000
    return base // 4 if quick else base


def run_case(case: Case, raw: RawLoop | None, rounds: int, per_block: int, quick: bool) -> None:
    """``rounds`` rounds; in each, every contender times a block of ``per_block``
    measurements (after one discarded warm-up measurement), in an order that
    rotates from round to round.

    Blocks, not single measurements, alternate: switching between the Python
    process and the raw loop's process costs both of them (cold caches,
    parked thread pools), so a block's first timing is thrown away.
    """
    calls = calls_for(case, quick)
    ours, our_args = refimpl_contender(case)
    theirs, their_args = jax_contender(case)
    if case.eager or case.origin != "jit":
        raw = None  # the raw loop's floor is the same as the plain row's
    if raw is not None:
        raw.start(case, ours, our_args)
    state = {"refimpl": (ours, our_args), "jax": (theirs, their_args)}
    case.results = {"refimpl": [], "jax": [], "raw": []}

    def python_block(name: str) -> None:
        fn, args = state[name]
        for i in range(per_block + 1):
            t, args = time_calls(fn, args, case, calls)
            if i > 0:
                case.results[name].append(t)
        state[name] = (fn, args)

    def raw_block() -> None:
        if raw is not None:  # the server warms up by itself before each block
            case.results["raw"] += raw.run(calls, per_block)

    blocks = [lambda: python_block("refimpl"), lambda: python_block("jax"), raw_block]
    try:
        for r in range(rounds):
            for k in range(len(blocks)):
                blocks[(r + k) % len(blocks)]()
    finally:
        if raw is not None:
            raw.stop()


def summary(case: Case) -> dict[str, Any]:
    med = {k: statistics.median(v) for k, v in case.results.items() if v}
    row: dict[str, Any] = {"case": case.name, "us": med, "samples": case.results}
    if "jax" in med:
        row["refimpl/jax"] = med["refimpl"] / med["jax"]
    if "raw" in med:
        row["refimpl/raw"] = med["refimpl"] / med["raw"]
    return row


def goals(rows: list[dict[str, Any]], all_cases: list[Case]) -> list[dict[str, Any]]:
    checks = []
    for row, case in zip(rows, all_cases, strict=True):
        if case.goal == "small":
            checks.append(_goal(row, "refimpl/jax", GOAL_SMALL_VS_JAX))
            if "refimpl/raw" in row:
                checks.append(_goal(row, "refimpl/raw", GOAL_SMALL_VS_RAW))
        elif case.goal == "pytree":
            checks.append(_goal(row, "refimpl/jax", GOAL_PYTREE_VS_JAX))
        elif case.goal == "eager":
            checks.append(_goal(row, "refimpl/jax", GOAL_EAGER_VS_JAX))
    return checks


def _goal(row: dict[str, Any], ratio: str, limit: float) -> dict[str, Any]:
    value = row[ratio]
    return {
        "case": row["case"],
        "ratio": ratio,
        "value": value,
        "goal": limit,
        "met": value <= limit,
    }


def print_table(rows: list[dict[str, Any]], checks: list[dict[str, Any]]) -> None:
    header = (
        f"{'case':48} {'refimpl us':>10} {'jax us':>9} {'raw us':>9} {'ref/jax':>8} {'ref/raw':>8}"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        us = row["us"]
        raw = f"{us['raw']:9.2f}" if "raw" in us else f"{'-':>9}"
        to_raw = f"{row['refimpl/raw']:8.2f}" if "refimpl/raw" in row else f"{'-':>8}"
        print(
            f"{row['case']:48} {us['refimpl']:10.2f} {us['jax']:9.2f} {raw} "
            f"{row['refimpl/jax']:8.2f} {to_raw}"
        )
    print()
    for check in checks:
        verdict = "met" if check["met"] else "MISSED"
        print(
            f"goal {check['ratio']} <= {check['goal']:.2f} for {check['case']}: "
            f"{check['value']:.2f} {verdict}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--quick", action="store_true", help="fewer calls and rounds")
    parser.add_argument("--raw-bin", type=Path, help="a built raw_pjrt_loop binary")
    parser.add_argument("--no-raw", action="store_true", help="skip the raw PJRT loop")
    parser.add_argument("--rounds", type=int, default=5, help="alternations of the contenders")
    parser.add_argument("--per-block", type=int, default=5, help="timings per contender per round")
    parser.add_argument("--only", help="run only the cases whose name contains this")
    args = parser.parse_args(argv)

    rounds = 3 if args.quick else args.rounds
    per_block = 3 if args.quick else args.per_block
    raw = None
    with tempfile.TemporaryDirectory(prefix="refimpl-bench-") as workdir:
        if not args.no_raw:
            binary = args.raw_bin or build_raw_loop()
            raw = RawLoop(binary, Path(workdir))
        all_cases = [c for c in cases() if not args.only or args.only in c.name]
        for case in all_cases:
            run_case(case, raw, rounds, per_block, args.quick)
            if not args.json:
                print(f"  done: {case.name}", file=sys.stderr)
    rows = [summary(case) for case in all_cases]
    checks = goals(rows, all_cases)
    if args.json:
        machine = {"cpus": os.cpu_count(), "loadavg": os.getloadavg()}
        print(json.dumps({"machine": machine, "rows": rows, "goals": checks}, indent=1))
    else:
        print_table(rows, checks)
        print(f"\nload average during the run: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
