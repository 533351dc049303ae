"""JAX's results on 4 host devices, computed in a subprocess.

The multi-device tests compare refimpl with JAX on 4 CPU devices; JAX reads
``XLA_FLAGS`` once, when it starts, and the test process has already
imported it with one device, so a helper script (``pmap_cases.py``,
``sharding_cases.py``) runs each case under JAX in a fresh interpreter and
pickles the results.
"""

from __future__ import annotations

import json
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


def in_fresh_jax(body: str) -> Any:
    """Run ``body`` (Python source that imports jax and assigns ``result``) in
    a fresh interpreter and return ``result`` (JSON-able).

    For the few oracles that read JAX's process-wide state -- its C++ jit
    cache (``_cache_size()``) and its deleted-buffer checks: in the test
    process, after some orders of earlier tests (both libraries' PJRT clients
    in one process), JAX answered 0 cache entries and let a donated buffer
    reach ``Execute``, so those comparisons ask a JAX nothing else has run in.
    """
    code = body + "\nimport json, sys\njson.dump(result, sys.stdout)\n"
    done = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=300
    )
    return json.loads(done.stdout)


def clear_jax_jit_cache() -> None:
    """Empty JAX's jit caches before a test that observes them (``_cache_size()``).

    JAX 0.10.2's C++ jit cache holds the entries of at most 8192 live jitted
    functions; in a process that has made more (a pytest worker thousands of
    tests in), a new function's entries are dropped as soon as they are made
    and its ``_cache_size()`` reads 0 or 1 where a fresh process reads 2
    (measured: 8,500 live ``jax.jit`` functions, then ``f(f(2.0))`` leaves
    ``_cache_size() == 0``; after ``jax.clear_caches()``, 2). What such a test
    claims is JAX's behaviour in a process of ordinary size."""
    import jax

    jax.clear_caches()
