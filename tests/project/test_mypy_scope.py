"""The mypy step of .ci/run keeps its scope: the whole refimpl package, with
pyproject's strict override naming modules that exist.

The CI step itself proves the package clean; this checks what could drift
silently: a strict module renamed away (its override would then match
nothing and strictness would be lost without an error), or the CI step
narrowed to part of the package again.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_ci_type_checks_the_whole_package():
    ci = (ROOT / ".ci" / "run").read_text()
    steps = [line for line in ci.splitlines() if re.match(r'\s*check "mypy"', line)]
    assert len(steps) == 1, f"expected one mypy step in .ci/run, found {steps}"
    assert steps[0].split()[-1] == "refimpl", f"the mypy step must check refimpl: {steps[0]}"


def test_strict_modules_exist():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    strict = [o for o in config["overrides"] if o.get("disallow_untyped_defs")]
    assert strict, "pyproject has no strict override"
    for override in strict:
        for module in override["module"]:
            path = ROOT / (module.replace(".", "/") + ".py")
            assert path.is_file(), f"{module} is strict in pyproject but {path} does not exist"
