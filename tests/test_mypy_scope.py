"""tools/mypy_clean.txt, the modules .ci/run type-checks, stays usable.

The CI step itself proves the listed modules clean; this checks the list:
every entry exists, none is listed twice, the list is sorted (so additions
merge), and the modules pyproject holds to mypy's strict flags are in it.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIST = ROOT / "tools" / "mypy_clean.txt"


def _listed() -> list[str]:
    lines = (line.strip() for line in LIST.read_text().splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def test_listed_modules_exist_once_and_sorted():
    listed = _listed()
    assert listed, "tools/mypy_clean.txt lists no module"
    missing = [p for p in listed if not (ROOT / p).is_file()]
    assert not missing, f"listed but not found (renamed? update the list): {missing}"
    assert len(set(listed)) == len(listed), "a module is listed twice"
    assert listed == sorted(listed), "keep tools/mypy_clean.txt sorted"


def test_strict_modules_are_checked():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    strict = [o for o in config["overrides"] if o.get("disallow_untyped_defs")]
    listed = set(_listed())
    for override in strict:
        for module in override["module"]:
            path = module.replace(".", "/") + ".py"
            assert path in listed, f"{module} is strict in pyproject but not type-checked"
