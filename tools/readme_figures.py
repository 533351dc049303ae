"""Check (or write) the README's conformance figures against the corpus and a run.

    python tools/readme_figures.py                        # the case count vs the corpus
    python tools/readme_figures.py --report run.json      # also the skip reasons of a run
    python tools/readme_figures.py --report run.json --write   # rewrite the README block

The figures live between ``<!-- figures:begin -->`` and ``<!-- figures:end -->``
in README.md: the number of cases, then one line per skip reason,
``- impl: N x reason``. ``run.json`` is the ``--report`` of
``python -m conformance``; only the implementations in it are checked (CI's
run has ref and pjrt, which must show no skips; a run with jax checks jax's
lines too). Exit status 1 names every figure that does not match.
"""

from __future__ import annotations

import argparse
import collections
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
BEGIN, END = "<!-- figures:begin -->", "<!-- figures:end -->"
_CASES = re.compile(r"\*\*([\d,]+) conformance cases\*\*")
_SKIP = re.compile(r"^- (\w+): ([\d,]+) x (.+)$")


def corpus_size() -> int:
    sys.path.insert(0, str(ROOT))
    from conformance.corpus import all_cases

    return len(all_cases())


def read_block(text: str) -> tuple[int | None, dict[tuple[str, str], int]]:
    """(case count, {(impl, reason): count}) from the README's figures block."""
    if BEGIN not in text or END not in text:
        raise SystemExit(f"readme_figures: README.md has no {BEGIN} ... {END} block")
    block = text[text.index(BEGIN) : text.index(END)]
    match = _CASES.search(block)
    cases = int(match.group(1).replace(",", "")) if match else None
    skips = {}
    for line in block.splitlines():
        m = _SKIP.match(line.strip())
        if m:
            skips[(m.group(1), m.group(3).strip().strip("`"))] = int(m.group(2).replace(",", ""))
    return cases, skips


def report_skips(report: dict) -> dict[tuple[str, str], int]:
    counts: collections.Counter = collections.Counter()
    for case in report["cases"]:
        for impl, result in case["results"].items():
            if result["status"] == "skip":
                counts[(impl, result["detail"])] += 1
    return dict(counts)


def render(cases: int, skips: dict[tuple[str, str], int], impls: list[str]) -> str:
    lines = [
        BEGIN,
        f"The corpus has **{cases:,} conformance cases**, each run on every implementation.",
        "Skip reasons of a full run (`python -m conformance`, jax included):",
        "",
    ]
    for (impl, reason), count in sorted(skips.items()):
        lines.append(f"- {impl}: {count:,} x `{reason}`")
    unskipped = [i for i in impls if not any(k[0] == i for k in skips)]
    if unskipped:
        lines += ["", f"({', '.join(unskipped)}: no skips.)"]
    lines.append(END)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python tools/readme_figures.py", description=__doc__)
    parser.add_argument("--report", help="a --report JSON of python -m conformance")
    parser.add_argument("--write", action="store_true", help="rewrite the README block")
    args = parser.parse_args(argv)
    text = README.read_text()
    have_cases, have_skips = read_block(text)
    cases = corpus_size()
    problems = []
    if have_cases != cases:
        problems.append(f"README says {have_cases} conformance cases, the corpus has {cases:,}")
    if args.report:
        report = json.loads(pathlib.Path(args.report).read_text())
        impls = list(report["implementations"])
        if len(report["cases"]) != cases:
            problems.append(f"the report ran {len(report['cases'])} cases, the corpus has {cases}")
        got = report_skips(report)
        for key in sorted(set(got) | {k for k in have_skips if k[0] in impls}):
            if got.get(key) != have_skips.get(key):
                problems.append(
                    f"skip reason {key[0]}: {key[1]!r}: README says {have_skips.get(key, 0)}, "
                    f"the run had {got.get(key, 0)}"
                )
    if args.write:
        got, impls = (
            (report_skips(report), list(report["implementations"])) if args.report else ({}, [])
        )
        kept = {k: v for k, v in have_skips.items() if k[0] not in impls}
        block = render(cases, {**kept, **got}, sorted(set(impls) | {k[0] for k in kept}))
        start, stop = text.index(BEGIN), text.index(END) + len(END)
        indent = text[text.rfind("\n", 0, start) + 1 : start]  # inside a list item
        block = "\n".join((indent + line).rstrip() for line in block.splitlines())
        README.write_text(text[: start - len(indent)] + block + text[stop:])
        print("readme_figures: README.md block rewritten")
        return 0
    for problem in problems:
        print(f"readme_figures: {problem}", file=sys.stderr)
    if problems:
        print(
            "readme_figures: update README.md (python tools/readme_figures.py --report "
            "RUN.json --write)",
            file=sys.stderr,
        )
        return 1
    print(f"readme_figures: README figures match ({cases:,} cases)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
