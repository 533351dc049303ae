"""Branch coverage of refimpl's rules by the conformance corpus alone.

    python tools/conformance_coverage.py                       # run the main job, print the table
    python tools/conformance_coverage.py -- -k 'vmap*'         # other conformance arguments
    python tools/conformance_coverage.py --data .cov --fail-under 90
    python tools/conformance_coverage.py --from-data .cov      # the table of an earlier run

Runs ``python -m conformance`` (by default ``--impl ref,pjrt --no-progress``,
the main job) in this process under coverage.py in branch mode, measuring
only ``refimpl/primitives/`` and ``refimpl/transforms/`` of the refimpl that
is imported (the installed one in CI), and prints one line per file --
branches, branches taken, statements run, and coverage.py's combined figure
-- then the total per directory and for both. The headline figure is the
*branch* coverage of both directories: branches taken / branches.

A branch that no program written against the public API can take is marked
where it is, with ``# pragma: no cover`` and the reason, or with a comment
``# unreachable from the public API: <why>``; coverage.py excludes the
former (the default exclusion pattern).

Exit status: the conformance run's status when it is not 0; else 1 when the
total branch coverage is below ``--fail-under``; else 0.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from typing import Any

DIRECTORIES = ("primitives", "transforms")
# files of those directories that hold no rule, left out of the figure
OMIT = {
    "primitives/status.py": "the generator of docs/primitives.md (python -m "
    "refimpl.primitives.status), not a rule: no program runs it",
}
DEFAULT_ARGS = ["--impl", "ref,pjrt", "--no-progress"]


def source_dirs() -> list[str]:
    """The measured directories of the refimpl that ``import refimpl`` finds
    (without importing it: what it runs at import time is measured too)."""
    spec = importlib.util.find_spec("refimpl")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("conformance_coverage: refimpl is not importable")
    # an editable install lists the build's directory (the extension) and the source tree
    places = list(spec.submodule_search_locations)
    roots = [r for r in places if os.path.isdir(os.path.join(r, "primitives"))]
    if not roots:
        raise SystemExit(f"conformance_coverage: no refimpl/primitives in {places}")
    return [os.path.join(roots[0], d) for d in DIRECTORIES]


def run_under_coverage(conformance_args: Sequence[str], data_file: str) -> int:
    import coverage

    cov = coverage.Coverage(branch=True, source=source_dirs(), data_file=data_file)
    cov.start()
    try:
        from conformance import cli

        status = cli.main(list(conformance_args))
    finally:
        cov.stop()
        cov.save()
    return int(status)


def figures(data_file: str) -> dict[str, dict[str, Any]]:
    """Per file (``primitives/x.py``): branches, taken, statements, run, combined percent."""
    import coverage

    cov = coverage.Coverage(branch=True, source=source_dirs(), data_file=data_file)
    cov.load()
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "coverage.json")
        cov.json_report(outfile=out)
        with open(out, encoding="utf-8") as f:
            data = json.load(f)
    rows: dict[str, dict[str, Any]] = {}
    for path, entry in data["files"].items():
        parts = os.path.normpath(path).split(os.sep)
        where = next((i for i, p in enumerate(parts) if p in DIRECTORIES), None)
        if where is None or "refimpl" not in parts[:where]:
            continue
        s = entry["summary"]
        name = "/".join(parts[where:])
        if name in OMIT:
            continue
        rows[name] = {
            "branches": s["num_branches"],
            "taken": s["covered_branches"],
            "statements": s["num_statements"],
            "run": s["covered_lines"],
            "combined": s["percent_covered"],
        }
    return dict(sorted(rows.items()))


def _pct(part: int, whole: int) -> float:
    return 100.0 * part / whole if whole else 100.0


def totals(rows: dict[str, dict[str, Any]], prefix: str = "") -> dict[str, Any]:
    picked = [r for name, r in rows.items() if name.startswith(prefix)]
    out = {k: sum(r[k] for r in picked) for k in ("branches", "taken", "statements", "run")}
    out["branch_pct"] = _pct(out["taken"], out["branches"])
    both = out["taken"] + out["run"]
    out["combined"] = _pct(both, out["branches"] + out["statements"])
    return out


def table(rows: dict[str, dict[str, Any]]) -> str:
    head = f"{'file':<40} {'branches':>8} {'taken':>6} {'branch%':>8} {'stmts':>6} {'run':>6} " \
           f"{'comb%':>6}"  # fmt: skip
    lines = [head, "-" * len(head)]
    for name, r in rows.items():
        lines.append(
            f"{name:<40} {r['branches']:>8} {r['taken']:>6} "
            f"{_pct(r['taken'], r['branches']):>7.1f}% {r['statements']:>6} {r['run']:>6} "
            f"{r['combined']:>5.1f}%"
        )
    lines.append("-" * len(head))
    for label, prefix in [(f"{d}/ (total)", f"{d}/") for d in DIRECTORIES] + [
        ("primitives/ + transforms/", "")
    ]:
        t = totals(rows, prefix)
        lines.append(
            f"{label:<40} {t['branches']:>8} {t['taken']:>6} {t['branch_pct']:>7.1f}% "
            f"{t['statements']:>6} {t['run']:>6} {t['combined']:>5.1f}%"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    rest: list[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, rest = argv[:at], argv[at + 1 :]
    parser = argparse.ArgumentParser(
        prog="python tools/conformance_coverage.py",
        description="Branch coverage of refimpl/primitives and refimpl/transforms by the "
        "conformance corpus (arguments after -- go to python -m conformance).",
    )
    parser.add_argument("--data", help="coverage data file to write (default: a temporary one)")
    parser.add_argument("--from-data", metavar="FILE", help="only print the table of FILE")
    parser.add_argument("--json", metavar="PATH", help="also write the per-file figures as JSON")
    parser.add_argument("--fail-under", type=float, default=0.0, metavar="PCT",
                        help="exit 1 when the total branch coverage is below PCT")  # fmt: skip
    args = parser.parse_args(argv)
    status = 0
    with tempfile.TemporaryDirectory() as tmp:
        data_file = args.from_data or args.data or os.path.join(tmp, ".coverage")
        if not args.from_data:
            status = run_under_coverage(rest or DEFAULT_ARGS, data_file)
        rows = figures(data_file)
    total = totals(rows)
    print()
    print("branch coverage of refimpl/primitives and refimpl/transforms by the conformance run:")
    print(table(rows))
    for name, why in OMIT.items():
        print(f"(not counted: {name}, {why})")
    print(
        f"conformance branch coverage: {total['branch_pct']:.1f}% "
        f"({total['taken']}/{total['branches']} branches; combined with statements "
        f"{total['combined']:.1f}%)"
    )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"files": rows, "total": total}, f, indent=1)
    if status:
        return status
    if total["branch_pct"] < args.fail_under:
        print(f"conformance_coverage: {total['branch_pct']:.1f}% < {args.fail_under}%")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
