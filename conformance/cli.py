"""``python -m conformance``: run the corpus (and optionally fuzz) and report.

    python -m conformance [--impl ref,pjrt,jax] [-k PATTERN] [--quick]
                          [--fuzz N] [--report report.md|report.json]

Exit status: 0 when nothing unexpected (``differ``/``error``) was found, 1
otherwise, 2 for bad usage.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from conformance import implementations, report
from conformance.api import select_cases
from conformance.runner import available_names, run_cases


class Progress:
    """A one-line progress bar on stderr (a line per 10% when not a terminal)."""

    def __init__(self, stream=sys.stderr, enabled: bool = True) -> None:
        self.stream = stream
        self.enabled = enabled
        self.tty = stream.isatty()
        self.last_decile = -1
        self.started = time.perf_counter()

    def __call__(self, index: int, total: int, name: str) -> None:
        if not self.enabled or total == 0:
            return
        fraction = index / total
        if self.tty:
            filled = int(30 * fraction)
            bar = "#" * filled + "." * (30 - filled)
            text = f"\r[{bar}] {index}/{total} {name[:50]:<50}"
            self.stream.write(text if index < total else text + "\n")
            self.stream.flush()
            return
        decile = int(fraction * 10)
        if decile != self.last_decile:
            self.last_decile = decile
            elapsed = time.perf_counter() - self.started
            self.stream.write(f"conformance: {index}/{total} cases ({elapsed:.0f}s)\n")
            self.stream.flush()


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m conformance",
        description="Run the conformance corpus on refimpl (ref, pjrt) and jax; report every "
        "difference.",
    )
    parser.add_argument(
        "--impl",
        default="",
        help="comma-separated implementations (default: all available; registered: "
        + ", ".join(implementations.registered_names())
        + ")",
    )
    parser.add_argument(
        "-k",
        dest="patterns",
        action="append",
        default=[],
        help="select cases whose name contains PATTERN (or matches it as a glob); repeat to "
        "add more; a leading '!' excludes",
    )
    parser.add_argument("--quick", action="store_true", help="only the quick subset")
    parser.add_argument("--fuzz", type=int, default=0, metavar="N",
                        help="also run N random differential programs")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0, help="fuzzing seed")
    parser.add_argument("--fuzz-only", action="store_true", help="skip the corpus; only fuzz")
    parser.add_argument("--report", help="write a full report (.md or .json)")
    parser.add_argument(
        "--case-file",
        action="append",
        default=[],
        help="also run the cases (CASES or CASE) defined in a Python file",
    )
    parser.add_argument("--list", action="store_true", help="list the selected cases and exit")
    parser.add_argument("-v", "--verbose", action="store_true", help="print the full case table")
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per case run")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    names = [n.strip() for n in args.impl.split(",") if n.strip()] or available_names()
    unknown = [n for n in names if n not in implementations.registered_names()]
    if unknown:
        print(f"unknown implementation(s): {', '.join(unknown)}", file=sys.stderr)
        return 2
    cases = select_cases(patterns=args.patterns, quick=args.quick, case_files=args.case_file)
    if args.list:
        for case in cases:
            print(case.name)
        print(f"{len(cases)} cases", file=sys.stderr)
        return 0
    status = 0
    suite = None
    if not args.fuzz_only:
        progress = Progress(enabled=not args.no_progress)
        suite = run_cases(cases, names, progress=progress, timeout=args.timeout)
        print(report.summary_text(suite, verbose=args.verbose))
        status = 0 if suite.ok() else 1
    if args.fuzz:
        from conformance import fuzz

        results = [
            fuzz.run_fuzz(args.fuzz, names, seed=args.seed, stream=sys.stdout),
            fuzz.run_mask_fuzz(max(10, args.fuzz // 5), names, seed=args.seed, stream=sys.stdout),
        ]
        if not all(r.ok for r in results):
            status = 1
    if args.report and suite is not None:
        report.write_report(suite, args.report)
        print(f"report written to {args.report}", file=sys.stderr)
    return status
