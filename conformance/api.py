"""The Python API: select cases and run them.

import conformance
suite = conformance.run(impls=["ref", "jax"], patterns=["lax.add"], quick=True)
assert suite.ok(), conformance.summary_text(suite)
"""

from __future__ import annotations

import fnmatch
import importlib.util
from collections.abc import Sequence

from conformance.case import Case
from conformance.runner import ProgressFn, SuiteResult, run_cases


def _matches(name: str, pattern: str) -> bool:
    if any(ch in pattern for ch in "*?["):
        return fnmatch.fnmatchcase(name, pattern)
    return pattern in name


def select_cases(
    patterns: Sequence[str] = (),
    *,
    quick: bool = False,
    case_files: Sequence[str] = (),
    cases: Sequence[Case] | None = None,
) -> list[Case]:
    """The corpus (or ``cases``) filtered by ``-k`` patterns and ``--quick``."""
    if cases is None:
        from conformance.corpus import all_cases

        cases = all_cases()
    cases = list(cases) + [c for path in case_files for c in load_case_file(path)]
    include = [p for p in patterns if not p.startswith("!")]
    exclude = [p[1:] for p in patterns if p.startswith("!")]
    selected = []
    for case in cases:
        if include and not any(_matches(case.name, p) for p in include):
            continue
        if any(_matches(case.name, p) for p in exclude):
            continue
        if quick and "quick" not in case.tags:
            continue
        selected.append(case)
    return selected


def load_case_file(path: str) -> list[Case]:
    """The cases a Python file defines as ``CASES`` (a list) or ``CASE``."""
    spec = importlib.util.spec_from_file_location("conformance_case_file", path)
    if spec is None or spec.loader is None:
        raise ValueError(f"cannot load case file {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    found = list(getattr(module, "CASES", []))
    if hasattr(module, "CASE"):
        found.append(module.CASE)
    if not found:
        raise ValueError(f"{path} defines neither CASES nor CASE")
    return found


def run(
    impls: Sequence[str] | None = None,
    patterns: Sequence[str] = (),
    *,
    quick: bool = False,
    cases: Sequence[Case] | None = None,
    progress: ProgressFn | None = None,
    timeout: float | None = 120.0,
) -> SuiteResult:
    """Run the selected cases on ``impls`` (default: every available one)."""
    selected = select_cases(patterns, quick=quick, cases=cases)
    return run_cases(selected, impls, progress=progress, timeout=timeout)
