"""JAX's results on 4 host devices, computed in a subprocess.

The multi-device tests compare refimpl with JAX on 4 CPU devices; JAX reads
``XLA_FLAGS`` once, when it starts, and the test process has already
imported it with one device, so a helper script (``pmap_cases.py``,
``sharding_cases.py``) runs each case under JAX in a fresh interpreter and
pickles the results.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def results_on_four_devices(script: str, out: Path) -> dict[str, Any]:
    """Run ``tests/helpers/<script>`` under JAX on 4 host devices; return the
    results it pickled into ``out`` (case name -> leaves or error class name)."""
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4")
    subprocess.run([sys.executable, str(HERE / script), str(out)], check=True, env=env, timeout=300)
    with open(out, "rb") as f:
        return pickle.load(f)
