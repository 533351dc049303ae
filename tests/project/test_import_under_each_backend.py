"""refimpl imports in a fresh process whichever backend the environment
selects (REFIMPL_BACKEND): nothing made at import time may load a backend
while refimpl's own modules are half-imported (a module-level jit made with
pjrt selected did, a circular import every pjrt example hit)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


@pytest.mark.parametrize("backend", ["ref", "pjrt"])
def test_import_with_backend_selected_by_environment(backend):
    code = "import refimpl as ri, refimpl.numpy as rnp; print(ri.config.backend, rnp.ones(2).sum())"
    env = dict(os.environ, REFIMPL_BACKEND=backend)
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == [backend, "2.0"]
