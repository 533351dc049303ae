"""Run every example in examples/ on refimpl's backends and compare with JAX.

    python tools/run_examples.py                  # every example: ref, pjrt, and JAX
    python tools/run_examples.py --backends ref   # only the ref backend
    python tools/run_examples.py rnn_scan vae     # some examples

The convention (README, docs/index.md): an example is written against refimpl
(``import refimpl as ri``, ``import refimpl.numpy as rnp``, ``from refimpl
import lax, random, ...``) and ``python examples/X.py`` runs it on the
default backend; ``REFIMPL_BACKEND=pjrt`` selects the PJRT one. Each example
leaves what it computed in a global ``results`` pytree.

Each run is a child process that runs the file as ``python examples/X.py``
does (``runpy.run_path`` as ``__main__``, the file's directory first on
``sys.path``) and reports:

* on refimpl: that ``jax`` was never imported (so refimpl is what ran) and
  that the backend in effect is the one asked for;
* its ``results`` leaves, which are compared with the example's JAX twin:
  the same file run by real JAX, with ``refimpl``, ``refimpl.numpy``, ... as
  aliases of ``jax``, ``jax.numpy``, ... (an example uses only names the
  two share). Integers and bools must be equal; floats within 2e-4 of the
  leaf's largest magnitude.

A file that imports ``jax`` itself (a JAX program) runs on refimpl through
``refimpl.as_jax`` and its twin is the file as it is. Examples in
``NO_JAX_TWIN`` use refimpl-only behaviour and are run, not compared.

Exit status: 0 when every run passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import pathlib
import runpy
import subprocess
import sys
import tempfile
import time
from typing import Any

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

# example -> why it has no JAX twin
NO_JAX_TWIN: dict[str, str] = {}

# refimpl module -> the jax module the JAX twin gets in its place
TWIN_MODULES = {
    "refimpl": "jax",
    "refimpl.numpy": "jax.numpy",
    "refimpl.numpy.linalg": "jax.numpy.linalg",
    "refimpl.lax": "jax.lax",
    "refimpl.random": "jax.random",
    "refimpl.nn": "jax.nn",
    "refimpl.nn.initializers": "jax.nn.initializers",
    "refimpl.scipy": "jax.scipy",
    "refimpl.scipy.linalg": "jax.scipy.linalg",
    "refimpl.scipy.special": "jax.scipy.special",
    "refimpl.tree": "jax.tree",
    "refimpl.tree_util": "jax.tree_util",
}

RTOL = 2e-4


def example_names() -> list[str]:
    return sorted(p.stem for p in EXAMPLES.glob("*.py") if not p.stem.startswith("_"))


def is_jax_program(name: str) -> bool:
    """Whether the example imports jax itself (a JAX program, run through as_jax)."""
    text = (EXAMPLES / f"{name}.py").read_text()
    return any(line.startswith(("import jax", "from jax")) for line in text.splitlines())


# --- the child: one run of one example ------------------------------------------------------


def _run_file(path: pathlib.Path) -> dict[str, Any]:
    sys.argv = [str(path)]
    sys.path.insert(0, str(path.parent))
    return runpy.run_path(str(path), run_name="__main__")


def _child(mode: str, backend: str, file: str, out: str) -> None:
    path = pathlib.Path(file)
    info: dict[str, Any] = {"mode": mode}
    if mode == "jax":
        import importlib

        for alias, target in TWIN_MODULES.items():
            sys.modules[alias] = importlib.import_module(target)
        namespace = _run_file(path)
        from jax import tree_util
    else:
        if mode == "as_jax":
            from refimpl import as_jax

            namespace = as_jax.run(str(path), backend=backend)
        else:
            namespace = _run_file(path)
        import refimpl
        from refimpl import tree_util

        info["backend"] = refimpl.config.backend
        info["refimpl_file"] = refimpl.__file__
        info["jax_imported"] = sorted(
            m for m in sys.modules if (m == "jax" or m.startswith("jax.")) and sys.modules[m]
        )[:5]
    leaves = tree_util.tree_leaves(namespace["results"])
    arrays = {f"leaf{i}": np.asarray(leaf) for i, leaf in enumerate(leaves)}
    np.savez(out, **arrays)
    info["leaves"] = len(leaves)
    with open(out + ".json", "w") as f:
        json.dump(info, f)


# --- the parent -----------------------------------------------------------------------------


class Run:
    def __init__(self, name: str, mode: str, backend: str) -> None:
        self.name, self.mode, self.backend = name, mode, backend
        self.ok = False
        self.problem = ""
        self.stdout = ""
        self.leaves: list[np.ndarray] = []
        self.info: dict[str, Any] = {}
        self.seconds = 0.0


def run(name: str, mode: str, backend: str = "ref", timeout: float = 600) -> Run:
    """One child run of example ``name``: ``mode`` "refimpl" (on ``backend``) or "jax"."""
    import refimpl  # the child uses the refimpl this process would import

    result = Run(name, mode, backend)
    child_mode = "as_jax" if mode == "refimpl" and is_jax_program(name) else mode
    env = dict(os.environ, REFIMPL_BACKEND=backend)
    where = str(pathlib.Path(refimpl.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (where, env.get("PYTHONPATH", "")) if p)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "results.npz")
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, str(pathlib.Path(__file__).resolve()), "--child", child_mode,
             backend, str(EXAMPLES / f"{name}.py"), out],
            env=env, capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip
        result.seconds = time.perf_counter() - started
        result.stdout = done.stdout
        if done.returncode != 0:
            result.problem = f"exit {done.returncode}: {done.stderr.strip()[-2000:]}"
            return result
        with open(out + ".json") as f:
            result.info = json.load(f)
        with np.load(out) as data:
            result.leaves = [data[f"leaf{i}"] for i in range(result.info["leaves"])]
    if mode == "refimpl":
        if result.info["jax_imported"]:
            result.problem = f"jax was imported: {result.info['jax_imported']}"
            return result
        if result.info["backend"] != backend:
            result.problem = f"ran on backend {result.info['backend']!r}, not {backend!r}"
            return result
    if not done.stdout.strip():
        result.problem = "printed nothing"
        return result
    result.ok = True
    return result


def compare(got: list[np.ndarray], want: list[np.ndarray]) -> str:
    """'' when the leaves agree, else what differs."""
    if len(got) != len(want):
        return f"{len(got)} result leaves, JAX has {len(want)}"
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        if g.shape != w.shape:
            return f"leaf {i}: shape {g.shape}, JAX {w.shape}"
        if w.dtype.kind in "biu" or g.dtype.kind in "biu":
            if not np.array_equal(g, w):
                return f"leaf {i}: {g} != JAX {w}"
            continue
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        scale = float(np.max(np.abs(w64))) if w64.size else 0.0
        if not np.allclose(g64, w64, rtol=RTOL, atol=RTOL * scale + 1e-6):
            worst = float(np.max(np.abs(g64 - w64)))
            return f"leaf {i}: differs from JAX by up to {worst:.3g} (scale {scale:.3g})"
    return ""


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        _child(*argv[1:5])
        return 0
    parser = argparse.ArgumentParser(
        prog="python tools/run_examples.py",
        description="Run the examples on refimpl's backends and compare with JAX.",
    )
    parser.add_argument("names", nargs="*", help="examples to run (default: all)")
    parser.add_argument("--backends", default="ref,pjrt", help="default: ref,pjrt")
    parser.add_argument("--no-jax", action="store_true", help="do not compare with JAX")
    args = parser.parse_args(argv)
    names = args.names or example_names()
    unknown = sorted(set(names) - set(example_names()))
    if unknown:
        parser.error(f"no such example: {', '.join(unknown)} (have: {', '.join(example_names())})")
    backends = [b for b in args.backends.split(",") if b]
    with_jax = not args.no_jax and importlib.util.find_spec("jax") is not None
    failures = 0
    for name in names:
        twin = None
        if with_jax and name not in NO_JAX_TWIN:
            twin = run(name, "jax")
            if not twin.ok:
                print(f"{name:24s} jax   FAIL {twin.problem}")
                failures += 1
                twin = None
        for backend in backends:
            got = run(name, "refimpl", backend)
            problem = got.problem or (compare(got.leaves, twin.leaves) if twin else "")
            if problem:
                failures += 1
            verdict = "FAIL " + problem if problem else "ok"
            against = "vs jax" if twin else f"(not compared: {NO_JAX_TWIN.get(name, 'no jax')})"
            print(f"{name:24s} {backend:5s} {verdict} {against if not problem else ''}"
                  f" {got.seconds:.1f}s")  # fmt: skip
    print(f"run_examples: {len(names)} examples, {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
