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
    """The terminal summary, ending with what matters: totals, differences, verdict.

    In order: the header (implementations, and which were unavailable or
    left out, with why); the groups that have anything but ``pass`` (every
    group and every case with ``verbose``); skip reasons; stale known
    entries; what judged the ``AGREE`` cases; the totals; every unexpected
    and known difference; the verdict line.
    """
    out = [f"conformance: {len(suite.cases)} cases x {len(suite.impls)} implementations "
           f"({', '.join(suite.impls)}) in {suite.seconds:.1f}s"]  # fmt: skip
    for name, reason in suite.unavailable.items():
        out.append(f"  {name}: unavailable ({reason})")
    for name, reason in suite.left_out.items():
        out.append(f"  {name}: not run ({reason})")
    groups = _group_counts(suite)
    shown = [g for g in sorted(groups) if verbose or _not_all_pass(groups[g])]
    if shown:
        out.append("")
        rows = [[g] + [_cell(groups[g][i]) for i in suite.impls] for g in shown]
        out.append(_table(["group"] + suite.impls, rows))
    hidden = len(groups) - len(shown)
    if hidden:
        out.append(
            f"({hidden} groups where every case passes on every implementation not shown; -v)"
        )
    if verbose:
        out.append("")
        matrix = [
            [c.name] + [_MARK[suite.result(c.name, i).status] for i in suite.impls]
            for c in suite.cases
        ]
        out.append(_table(["case"] + suite.impls, matrix))
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
    out += _judges_text(suite)
    out.append("")
    totals = [[s] + [str(suite.counts(i)[s]) for i in suite.impls] for s in STATUSES]
    out.append(_table(["status"] + suite.impls, totals))
    details = [r for r in suite.results.values() if r.status in UNEXPECTED + ("known",)]
    if details:
        out.append("")
        out.append("Differences (unexpected: differ/error; known: listed in conformance/known.py):")
        ordered = sorted(details, key=lambda r: (r.status != "known", r.case, r.impl))
        if len(ordered) > max_details:  # keep the unexpected ones, which sort last
            out.append(f"  ... {len(ordered) - max_details} more above these (see --report)")
            ordered = ordered[-max_details:]
        for r in ordered:
            first, *rest = r.detail.splitlines() or [""]
            out.append(f"  [{r.status}] {r.case} on {r.impl}: {first}")
            for line in rest[: 4 if r.status != "error" else 12]:
                out.append(f"      {line}")
            if r.known_reason:
                out.append(f"      reason: {r.known_reason}")
    out.append("")
    unexpected = suite.unexpected()
    verdict = "OK" if not unexpected else f"FAILED: {len(unexpected)} unexpected result(s)"
    out.append(verdict)
    return "\n".join(out)


def _not_all_pass(by_impl: dict[str, Counter]) -> bool:
    return any(status != "pass" and n for c in by_impl.values() for status, n in c.items())


def _judges_text(suite: SuiteResult) -> list[str]:
    """What judged the reference in the AGREE cases; the ones ref alone judged, named."""
    if not suite.judges:
        return []
    counts = Counter("ref-only" if j.startswith("ref-only") else j for j in suite.judges.values())
    parts = []
    if counts["jax"]:
        parts.append(f"{counts['jax']} by live jax")
    if counts["recorded"]:
        parts.append(f"{counts['recorded']} by {suite.recorded_label}")
    parts.append(f"{counts['ref-only']} by ref alone (no independent oracle)")
    out = ["", f"AGREE cases ({len(suite.judges)}) judged: " + ", ".join(parts)]
    ref_only = suite.ref_only()
    by_reason = Counter(ref_only.values())
    for reason, n in by_reason.most_common():
        names = sorted(c for c, r in ref_only.items() if r == reason)
        shown = ", ".join(names[:8]) + (f", ... ({n})" if n > 8 else "")
        out.append(f"  ref alone, {reason}: {shown}")
    if ref_only and any("recorded" in r or "JAX" in r for r in by_reason):
        out.append("  (record JAX's results: python -m conformance.recorded, with jax installed)")
    return out


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
        "left_out": suite.left_out,
        "agree_judges": suite.judges,
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


def to_junit(suite: SuiteResult) -> str:
    """JUnit XML: one testsuite per implementation, one testcase per case.

    ``differ`` and ``error`` are failures and errors, ``skip`` is skipped;
    ``known`` passes with its reason in ``system-out``.
    """
    from xml.etree import ElementTree as ET

    root = ET.Element("testsuites", name="conformance")
    for impl in suite.impls:
        results = [suite.result(c.name, impl) for c in suite.cases]
        counts = Counter(r.status for r in results)
        node = ET.SubElement(
            root,
            "testsuite",
            name=f"conformance.{impl}",
            tests=str(len(results)),
            failures=str(counts["differ"]),
            errors=str(counts["error"]),
            skipped=str(counts["skip"]),
            time=f"{sum(r.seconds for r in results):.3f}",
        )
        for case, r in zip(suite.cases, results, strict=True):
            group, _, rest = case.name.partition("/")
            tc = ET.SubElement(
                node, "testcase", classname=f"conformance.{impl}.{group}",
                name=rest or group, time=f"{r.seconds:.4f}",
            )  # fmt: skip
            first = r.detail.splitlines()[0] if r.detail else ""
            if r.status == "differ":
                ET.SubElement(tc, "failure", message=first[:300]).text = r.detail
            elif r.status == "error":
                ET.SubElement(tc, "error", message=first[:300]).text = r.detail
            elif r.status == "skip":
                ET.SubElement(tc, "skipped", message=first[:300])
            elif r.status == "known":
                ET.SubElement(tc, "system-out").text = f"known: {r.known_reason}\n{r.detail}"
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode")


def write_report(suite: SuiteResult, path: str, fmt: str | None = None) -> None:
    """Write ``suite`` to ``path``: JUnit XML (``fmt="junit"`` or ``.xml``), JSON or Markdown."""
    if fmt == "junit" or path.endswith(".xml"):
        text = to_junit(suite)
    elif path.endswith(".json"):
        text = json.dumps(to_json(suite), indent=1)
    else:
        text = to_markdown(suite)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
