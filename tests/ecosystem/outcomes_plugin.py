"""A pytest plugin (``-p outcomes_plugin``) that writes each test's outcome to
the JSON file named by ``$REFIMPL_OUTCOMES``: ``{nodeid: "passed" | "failed" |
"skipped"}``. A test failed if any of its reports failed (setup, call,
teardown, or one of its subtests), so the counts of two runs of the same
files compare test by test."""

from __future__ import annotations

import json
import os
from typing import Any

_outcomes: dict[str, str] = {}


def pytest_runtest_logreport(report: Any) -> None:
    previous = _outcomes.get(report.nodeid)
    if report.failed:
        _outcomes[report.nodeid] = "failed"
    elif previous is None and report.skipped:
        _outcomes[report.nodeid] = "skipped"
    elif previous is None and report.when == "call" and report.passed:
        _outcomes[report.nodeid] = "passed"


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    path = os.environ.get("REFIMPL_OUTCOMES")
    if path:
        with open(path, "w") as f:
            json.dump(_outcomes, f, indent=0, sort_keys=True)
