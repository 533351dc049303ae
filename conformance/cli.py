"""``python -m conformance``: run the corpus (and optionally fuzz) and report.

    python -m conformance [--impl ref,pjrt,jax] [-k PATTERN] [--quick]
                          [--families GLOB,...] [--sample N]
                          [--fuzz N] [--report report.md|report.json]
                          [--maxfail N]

``--sample N`` keeps at most N cases of every family (a case's ``group``,
e.g. ``lax.exp`` or ``vmap.primitive``), spread evenly over the family's
cases: a few of everything (``--sample 1``: ~330 cases). ``--families``
keeps only the families matching one of the comma-separated globs.

Exit status: 0 when nothing unexpected (``differ``/``error``) was found, 1
otherwise, 2 for bad usage or when an implementation asked for (``--impl``,
or ``pjrt`` under ``REFIMPL_REQUIRE_NATIVE=1``) cannot run here -- the
reason on one line. Without ``--impl`` every available implementation runs
and the header names the ones left out, with why.
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from conformance import implementations, report
from conformance.api import select_cases
from conformance.runner import PLATFORM_RULE_USES, available_names, run_cases


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
    parser.add_argument(
        "--sample",
        type=int,
        default=0,
        metavar="N",
        help="at most N cases of every family (case group), spread over the family",
    )
    parser.add_argument(
        "--families",
        default="",
        metavar="GLOB,...",
        help="only the families (case groups) matching one of these globs, e.g. 'lax.*,np.*'",
    )
    parser.add_argument("--fuzz", type=int, default=0, metavar="N",
                        help="also run N random differential programs")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0, help="fuzzing seed")
    parser.add_argument("--fuzz-only", action="store_true", help="skip the corpus; only fuzz")
    parser.add_argument("--report", help="write a full report (.md, .json, or .xml for JUnit)")
    parser.add_argument("--junit", metavar="PATH", help="write a JUnit XML report (for CI)")
    parser.add_argument(
        "--case-file",
        action="append",
        default=[],
        help="also run the cases (CASES or CASE) defined in a Python file",
    )
    parser.add_argument("--list", action="store_true", help="list the selected cases and exit")
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="show every group (not only those with something other than pass) and every case",
    )
    parser.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar on stderr (for logs and CI; the summary is printed either way)",
    )
    parser.add_argument(
        "--native-logs",
        action="store_true",
        help="let XLA (jaxlib, the PJRT plugin) log to stderr (REFIMPL_PJRT_LOG=1); "
        "by default TF_CPP_MIN_LOG_LEVEL=3 unless already set",
    )
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per case run")
    parser.add_argument(
        "--maxfail",
        type=int,
        default=0,
        metavar="N",
        help="stop after N cases with an unexpected result (exit status 1); 0: run them all",
    )
    return parser.parse_args(argv)


def sample_cases(cases: Sequence[Any], per_family: int = 0, families: str = "") -> list[Any]:
    """``cases`` restricted to the ``families`` globs (comma-separated; empty: all)
    and to at most ``per_family`` cases of each family (0: all), taken at evenly
    spaced positions of the family's cases in corpus order (deterministic)."""
    globs = [g.strip() for g in families.split(",") if g.strip()]
    kept = [
        case
        for case in cases
        if not globs or any(fnmatch.fnmatchcase(case.group, glob) for glob in globs)
    ]
    if per_family <= 0:
        return kept
    by_family: dict[str, list[Any]] = {}
    for case in kept:
        by_family.setdefault(case.group, []).append(case)
    chosen: set[int] = set()
    for members in by_family.values():
        count = len(members)
        take = min(per_family, count)
        for i in range(take):
            chosen.add(id(members[(i * count) // take]))
    return [case for case in kept if id(case) in chosen]


def choose_implementations(impl_arg: str) -> tuple[list[str], dict[str, str], str]:
    """(names to run, {left out: why}, error) for ``--impl`` (empty: every available one).

    An implementation named explicitly that cannot run is an error, as is an
    unavailable ``pjrt`` under ``REFIMPL_REQUIRE_NATIVE=1``; one left out of a
    default run is reported with why.
    """
    asked = [n.strip() for n in impl_arg.split(",") if n.strip()]
    registered = implementations.registered_names()
    unknown = [n for n in asked if n not in registered]
    if unknown:
        return (
            [],
            {},
            f"unknown implementation(s): {', '.join(unknown)} (known: "
            + (", ".join(registered) + ")"),
        )
    required = list(asked)
    if not asked and os.environ.get("REFIMPL_REQUIRE_NATIVE") == "1":
        required = ["pjrt"]
    for name in required:
        impl = implementations.get(name)
        if not impl.is_available():
            why = " ".join(impl.unavailable_reason.split()) or "unavailable"
            env = " (REFIMPL_REQUIRE_NATIVE=1)" if name not in asked else ""
            return [], {}, f"implementation {name!r} cannot run here{env}: {why}"
    if asked:
        return asked, {}, ""
    names = available_names()
    left_out = {
        n: " ".join(implementations.get(n).unavailable_reason.split()) or "unavailable"
        for n in registered
        if n not in names
    }
    return names, left_out, ""


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.native_logs:
        os.environ["REFIMPL_PJRT_LOG"] = "1"
    implementations.quiet_native_logs()
    implementations.prepare_jax_flags()  # before any implementation loads XLA
    names, left_out, error = choose_implementations(args.impl)
    if args.maxfail < 0:
        error = f"--maxfail must be >= 0 (0: no limit), got {args.maxfail}"
    if error:
        print(f"conformance: error: {error}", file=sys.stderr)
        return 2
    cases = select_cases(patterns=args.patterns, quick=args.quick, case_files=args.case_file)
    cases = sample_cases(cases, per_family=args.sample, families=args.families)
    if args.list:
        for case in cases:
            print(case.name)
        print(f"{len(cases)} cases", file=sys.stderr)
        return 0
    status = 0
    suite = None
    if not args.fuzz_only:
        progress = Progress(enabled=not args.no_progress)
        suite = run_cases(
            cases, names, progress=progress, timeout=args.timeout, maxfail=args.maxfail
        )
        suite.left_out = left_out
        print(report.summary_text(suite, verbose=args.verbose))
        if suite.stopped_early:
            print(f"conformance: stopped after {args.maxfail} failing case(s) (--maxfail)")
        for (platform, rule), count in sorted(PLATFORM_RULE_USES.items()):
            print(
                f"per-platform tolerance used: {platform} {rule}: {count} result(s) "
                "(conformance/compare.py PLATFORM_RULES)"
            )
        status = 0 if suite.ok() else 1
    if args.fuzz:
        from conformance import fuzz

        results = [
            fuzz.run_fuzz(args.fuzz, names, seed=args.seed, stream=sys.stdout),
            fuzz.run_mask_fuzz(max(10, args.fuzz // 5), names, seed=args.seed, stream=sys.stdout),
        ]
        if not all(r.ok for r in results):
            status = 1
    for path, fmt in ((args.report, None), (args.junit, "junit")):
        if path and suite is not None:
            report.write_report(suite, path, fmt)
            print(f"report written to {path}", file=sys.stderr)
    return status
