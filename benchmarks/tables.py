"""Run the benchmarks once and write their tables into README.md and benchmarks/README.md.

    python benchmarks/tables.py                    # run dispatch, trace, donation memory
                                                   # (~10 minutes), save, write the tables
    python benchmarks/tables.py --from FILE.json   # only rewrite the tables from a saved run

The results of the run are saved to ``benchmarks/results.json`` (with the
date, the machine's load average and the versions), and every table is made
from that one file, every row included, so the two READMEs can never show
different runs. A table lives between ``<!-- NAME:begin -->`` and
``<!-- NAME:end -->`` markers; the script fails if a marker is missing.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results.json"

XLA_NOTE = (
    "JAX runs on jaxlib's own CPU runtime, refimpl on the PJRT CPU plugin of "
    "`fastatomstruct-xla-cpu`: two builds of XLA, so the rows dominated by the "
    "computation (1M elements) compare the two XLA builds more than the dispatch paths."
)


def _run_json(args: list[str]) -> Any:
    done = subprocess.run(
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout)


def _memory(mb: float = 4.0, steps: int = 5) -> dict[str, Any]:
    code = (
        "import json, sys; sys.path.insert(0, 'benchmarks'); import donation_memory as m; "
        "import refimpl as ri; "
        f"plain, size = m.peak_bytes(ri.jit(m.step), {mb}, {steps}); "
        f"donating, _ = m.peak_bytes(ri.jit(m.step, donate_argnums=0), {mb}, {steps}); "
        f"print(json.dumps(dict(state_bytes=size, leaves=len(m.make_state({mb})), "
        f"steps={steps}, peak_plain=plain, peak_donating=donating)))"
    )
    return _run_json(["-c", code])


def run_all() -> dict[str, Any]:
    import importlib.metadata as md

    started = datetime.datetime.now(datetime.UTC)
    print("dispatch.py --json (about 5 minutes) ...", file=sys.stderr)
    dispatch = _run_json(["benchmarks/dispatch.py", "--json"])
    print("trace.py --json ...", file=sys.stderr)
    trace = _run_json(["benchmarks/trace.py", "--json", "--repeats", "5"])
    print("donation_memory ...", file=sys.stderr)
    memory = _memory()
    versions = {}
    for dist in ("jax", "jaxlib", "fastatomstruct-xla-cpu", "numpy"):
        try:
            versions[dist] = md.version(dist)
        except md.PackageNotFoundError:
            versions[dist] = None
    return {
        "date": started.strftime("%Y-%m-%d %H:%M UTC"),
        "cpus": os.cpu_count(),
        "loadavg_end": os.getloadavg(),
        "versions": versions,
        "dispatch": dispatch,
        "trace": trace,
        "memory": memory,
    }


def _fmt(x: float) -> str:
    return f"{x:.2f}" if x < 1000 else f"{x:.0f}"


def dispatch_table(results: dict[str, Any]) -> str:
    lines = [
        "| case | refimpl | jax | raw PJRT C loop | refimpl/jax | refimpl/raw |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for row in results["dispatch"]["rows"]:
        us = row["us"]
        raw = _fmt(us["raw"]) if "raw" in us else ""
        to_raw = f"{row['refimpl/raw']:.2f}" if "refimpl/raw" in row else ""
        lines.append(
            f"| {row['case']} | {_fmt(us['refimpl'])} | {_fmt(us['jax'])} | {raw} | "
            f"{row['refimpl/jax']:.2f} | {to_raw} |"
        )
    return "\n".join(lines)


def trace_table(results: dict[str, Any]) -> str:
    trace = results["trace"]
    lines = ["| | refimpl | jax | refimpl/jax |", "|---|---:|---:|---:|"]
    for what in ("trace", "first call", "cached call"):
        ms = trace["ms"]
        lines.append(
            f"| {what} | {ms[f'refimpl {what}']:.2f} | {ms[f'jax {what}']:.2f} | "
            f"{trace['refimpl/jax'][what]:.2f} |"
        )
    return "\n".join(lines)


def memory_table(results: dict[str, Any]) -> str:
    m = results["memory"]
    size = m["state_bytes"]
    return "\n".join(
        [
            "| | peak MB | x state |",
            "|---|---:|---:|",
            f"| no donation | {m['peak_plain'] / 2**20:.2f} | {m['peak_plain'] / size:.2f} |",
            f"| donation | {m['peak_donating'] / 2**20:.2f} | {m['peak_donating'] / size:.2f} |",
        ]
    )


def run_line(results: dict[str, Any]) -> str:
    load = ", ".join(f"{x:.1f}" for x in results["loadavg_end"])
    v = results["versions"]
    return (
        f"One run, {results['date']}, {results['cpus']} CPUs, load average {load} at the end "
        f"(a machine shared with other jobs); jax {v.get('jax')}, "
        f"fastatomstruct-xla-cpu {v.get('fastatomstruct-xla-cpu')}. "
        "Written by `python benchmarks/tables.py` from `benchmarks/results.json`."
    )


def readme_block(results: dict[str, Any]) -> str:
    m = results["memory"]
    trace = results["trace"]
    ratio = m["peak_donating"] / m["peak_plain"]
    return "\n".join(
        [
            run_line(results),
            "",
            '`dispatch.py`: median microseconds per call of `jit(backend="pjrt")`, '
            "`jax.jit` and the raw PJRT C API loop (every row):",
            "",
            dispatch_table(results),
            "",
            XLA_NOTE,
            "",
            f"`trace.py`: milliseconds for a function of {trace['adds']:,} chained adds:",
            "",
            trace_table(results),
            "",
            f"`donation_memory.py`: peak memory (tracemalloc, ref backend) of a "
            f"{m['steps']}-step loop on a {m['state_bytes'] / 2**20:.0f} MB state of "
            f"{m['leaves']} leaves: donated {m['peak_donating'] / m['state_bytes']:.2f} x the "
            f"state, not donated {m['peak_plain'] / m['state_bytes']:.2f} x (ratio {ratio:.2f}).",
        ]
    )


def replace_block(text: str, name: str, content: str, path: Path) -> str:
    pattern = re.compile(
        rf"(<!-- {re.escape(name)}:begin -->\n).*?(\n<!-- {re.escape(name)}:end -->)", re.DOTALL
    )
    if not pattern.search(text):
        raise SystemExit(f"{path}: no <!-- {name}:begin --> ... <!-- {name}:end --> markers")
    return pattern.sub(lambda m: m.group(1) + content + m.group(2), text)


def write_tables(results: dict[str, Any]) -> None:
    readme = ROOT / "README.md"
    text = replace_block(readme.read_text(), "benchmarks", readme_block(results), readme)
    readme.write_text(text)
    bench = HERE / "README.md"
    text = bench.read_text()
    text = replace_block(
        text, "dispatch-table", run_line(results) + "\n\n" + dispatch_table(results), bench
    )
    text = replace_block(text, "trace-table", trace_table(results), bench)
    text = replace_block(text, "memory-table", memory_table(results), bench)
    bench.write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from", dest="source", type=Path, help="a saved results.json")
    args = parser.parse_args(argv)
    if args.source:
        results = json.loads(args.source.read_text())
    else:
        results = run_all()
        for row in results["dispatch"]["rows"]:
            row.pop("samples", None)  # keep the file small: medians and ratios only
        RESULTS.write_text(json.dumps(results, indent=1) + "\n")
    write_tables(results)
    print(f"tables written to README.md and benchmarks/README.md ({results['date']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
