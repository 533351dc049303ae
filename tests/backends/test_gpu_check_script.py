"""tools/gpu_check.sh --quick runs end to end on the CPU plugin (issue 32).

Slow (about 1-3 minutes): deselected by default, run with ``-m slow``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from refimpl.backends.pjrt import runtime

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not runtime.plugin_available(), reason="no PJRT plugin"),
]


def test_gpu_check_quick_on_the_cpu_plugin(tmp_path):
    out = tmp_path / "out"
    env = dict(os.environ, OUT=str(out), PYTHON=sys.executable)
    done = subprocess.run(
        ["bash", str(ROOT / "tools" / "gpu_check.sh"), "--quick", "--no-build"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    files = {p.name for p in out.iterdir()}
    assert "summary.md" in files and len(files) <= 8, files
    summary = (out / "summary.md").read_text()
    conformance = ("conformance-other", "conformance-lax", "conformance-np")
    for name in ("env", "build", "smoke", "doctor", "transfers", "tests", "bench", *conformance):
        assert f"| {name} |" in summary, name
    for name in ("smoke", "doctor", "transfers", "tests", "bench", *conformance):
        assert f"| {name} | ok |" in summary, (name, summary[:1500])
    assert "goals met:" in summary
    assert "[" in done.stdout and "step conformance" in done.stdout  # timestamped progress
