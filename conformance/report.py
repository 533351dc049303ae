"""Reports: the summary table on the terminal, Markdown and JSON files."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from typing import Any

from conformance.runner import STATUSES, UNEXPECTED, SuiteResult

_MARK = {"pass": "pass", "differ": "DIFFER", "error": "ERROR", "skip": "skip", "known": "known"}


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    line = lambda r: "  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True))  # noqa: E731
    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])


def _group_counts(suite: SuiteResult) -> dict[str, dict[str, Counter]]:
    groups: dict[str, dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
    for case in suite.cases:
        for impl in suite.impls:
            groups[case.group][impl][suite.result(case.name, impl).status] += 1
    return groups


def _cell(counter: Counter) -> str:
    parts = [f"{counter[s]} {s}" for s in STATUSES if counter[s]]
    return ", ".join(parts) or "-"


def summary_text(suite: SuiteResult, *, verbose: bool = False, max_details: int = 60) -> str:
    """The terminal summary: totals, per-group table, unexpected results, skip reasons."""
    out = [f"conformance: {len(suite.cases)} cases x {len(suite.impls)} implementations "
           f"({', '.join(suite.impls)}) in {suite.seconds:.1f}s"]  # fmt: skip
    for name, reason in suite.unavailable.items():
        out.append(f"  {name}: unavailable ({reason})")
    out.append("")
    totals = [[s] + [str(suite.counts(i)[s]) for i in suite.impls] for s in STATUSES]
    out.append(_table(["status"] + suite.impls, totals))
    out.append("")
    groups = _group_counts(suite)
    rows = [[g] + [_cell(groups[g][i]) for i in suite.impls] for g in sorted(groups)]
    out.append(_table(["group"] + suite.impls, rows))
    if verbose:
        out.append("")
        matrix = [
            [c.name] + [_MARK[suite.result(c.name, i).status] for i in suite.impls]
            for c in suite.cases
        ]
        out.append(_table(["case"] + suite.impls, matrix))
    details = [r for r in suite.results.values() if r.status in UNEXPECTED + ("known",)]
    if details:
        out.append("")
        out.append("Differences (unexpected: differ/error; known: listed in conformance/known.py):")
        for r in sorted(details, key=lambda r: (r.status == "known", r.case, r.impl))[:max_details]:
            first, *rest = r.detail.splitlines() or [""]
            out.append(f"  [{r.status}] {r.case} on {r.impl}: {first}")
            for line in rest[: 4 if r.status != "error" else 12]:
                out.append(f"      {line}")
            if r.known_reason:
                out.append(f"      reason: {r.known_reason}")
        if len(details) > max_details:
            out.append(f"  ... and {len(details) - max_details} more (see --report)")
    skips = Counter(
        (r.impl, _skip_key(r.detail)) for r in suite.results.values() if r.status == "skip"
    )
    if skips:
        out.append("")
        out.append("Skip reasons:")
        for (impl, reason), n in sorted(skips.items(), key=lambda kv: (kv[0][0], -kv[1])):
            out.append(f"  {impl}: {n:4d} x {reason}")
    stale = suite.stale_known()
    if stale:
        out.append("")
        out.append("Stale known differences (matched cases now pass; remove them?):")
        for entry in stale:
            out.append(f"  {entry.pattern} on {entry.impl}")
    out.append("")
    unexpected = suite.unexpected()
    verdict = "OK" if not unexpected else f"FAILED: {len(unexpected)} unexpected result(s)"
    out.append(verdict)
    return "\n".join(out)


def _skip_key(detail: str) -> str:
    """Skip reasons grouped: the first line, shortened."""
    first = detail.splitlines()[0] if detail else ""
    return first[:140]


def to_json(suite: SuiteResult) -> dict[str, Any]:
    return {
        "implementations": suite.impls,
        "unavailable": suite.unavailable,
        "seconds": round(suite.seconds, 3),
        "totals": {i: dict(suite.counts(i)) for i in suite.impls},
        "ok": suite.ok(),
        "cases": [
            {
                "name": c.name,
                "tags": sorted(c.tags),
                "results": {
                    i: {
                        "status": suite.result(c.name, i).status,
                        "detail": suite.result(c.name, i).detail,
                        "known_reason": suite.result(c.name, i).known_reason,
                        "seconds": round(suite.result(c.name, i).seconds, 4),
                    }
                    for i in suite.impls
                },
            }
            for c in suite.cases
        ],
        "stale_known": [
            {"pattern": k.pattern, "impl": k.impl, "reason": k.reason} for k in suite.stale_known()
        ],
    }


def to_markdown(suite: SuiteResult) -> str:
    lines = [
        "# Conformance report",
        "",
        f"{len(suite.cases)} cases on {', '.join(suite.impls)} ({suite.seconds:.1f}s).",
        "",
    ]
    for name, reason in suite.unavailable.items():
        lines.append(f"- `{name}` unavailable: {reason}")
    lines += ["", "## Totals", "", "| status | " + " | ".join(suite.impls) + " |",
              "|---|" + "---|" * len(suite.impls)]  # fmt: skip
    for s in STATUSES:
        lines.append(f"| {s} | " + " | ".join(str(suite.counts(i)[s]) for i in suite.impls) + " |")
    groups = _group_counts(suite)
    lines += ["", "## By group", "", "| group | " + " | ".join(suite.impls) + " |",
              "|---|" + "---|" * len(suite.impls)]  # fmt: skip
    for g in sorted(groups):
        lines.append(f"| {g} | " + " | ".join(_cell(groups[g][i]) for i in suite.impls) + " |")
    details = [r for r in suite.results.values() if r.status != "pass" and r.status != "skip"]
    if details:
        lines += ["", "## Differences", ""]
        for r in sorted(details, key=lambda r: (r.status == "known", r.case, r.impl)):
            lines.append(f"### `{r.case}` on {r.impl}: {r.status}")
            lines.append("")
            if r.known_reason:
                lines.append(f"Known: {r.known_reason}")
                lines.append("")
            lines += ["```", r.detail, "```", ""]
    lines += ["", "## All cases", "", "| case | " + " | ".join(suite.impls) + " |",
              "|---|" + "---|" * len(suite.impls)]  # fmt: skip
    for c in suite.cases:
        cells = []
        for i in suite.impls:
            r = suite.result(c.name, i)
            cells.append(r.status if r.status != "skip" else f"skip ({_skip_key(r.detail)[:60]})")
        lines.append(f"| `{c.name}` | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_report(suite: SuiteResult, path: str) -> None:
    if path.endswith(".json"):
        text = json.dumps(to_json(suite), indent=1)
    else:
        text = to_markdown(suite)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
