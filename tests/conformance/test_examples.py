"""The examples in examples/ run refimpl when run as the README says
(``python examples/X.py``, ``REFIMPL_BACKEND=pjrt`` for the PJRT backend) and
compute what their JAX twin computes.

Each run is a child process (``tools/run_examples.py``, which CI also runs
on its own): the test asserts that the child never imported ``jax``, that
the backend in effect was the one asked for, that it printed something, and
that its ``results`` leaves match the same file run by real JAX (``refimpl``
names aliased to ``jax``'s): integers and bools equal, floats within 2e-4 of
the leaf's largest magnitude.
"""

from __future__ import annotations

import importlib.util
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("run_examples", ROOT / "tools" / "run_examples.py")
run_examples = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run_examples)

_twins: dict[str, object] = {}


def _jax_twin(name: str):
    if name not in _twins:
        twin = run_examples.run(name, "jax")
        assert twin.ok, f"{name} under JAX: {twin.problem}"
        _twins[name] = twin
    return _twins[name]


@pytest.mark.parametrize("backend", ["ref", "pjrt"])
@pytest.mark.parametrize("name", run_examples.example_names())
def test_example_runs_refimpl_and_matches_jax(name, backend):
    if backend == "pjrt":
        from tests.helpers.pjrt_helpers import skip_without_pjrt

        skip_without_pjrt()
    got = run_examples.run(name, "refimpl", backend)
    assert got.ok, f"{name} on {backend}: {got.problem}"
    assert got.info["jax_imported"] == []  # refimpl is what ran
    assert got.info["backend"] == backend
    if name in run_examples.NO_JAX_TWIN:
        pytest.skip(f"no JAX twin: {run_examples.NO_JAX_TWIN[name]}")
    problem = run_examples.compare(got.leaves, _jax_twin(name).leaves)
    assert not problem, f"{name} on {backend}: {problem}"


def test_examples_are_written_against_refimpl():
    """The convention of README and docs/index.md: ``import refimpl``; a JAX
    program among the examples is run through ``refimpl.as_jax`` instead."""
    for name in run_examples.example_names():
        text = (run_examples.EXAMPLES / f"{name}.py").read_text()
        assert "import refimpl" in text or run_examples.is_jax_program(name), name


def test_the_check_catches_jax(tmp_path, monkeypatch):
    """The child's report would show a script that imports real JAX."""
    script = tmp_path / "uses_jax.py"
    script.write_text("import jax.numpy as jnp\nresults = {'x': jnp.ones(2)}\nprint(results)\n")
    monkeypatch.setattr(run_examples, "EXAMPLES", tmp_path)
    monkeypatch.setattr(run_examples, "is_jax_program", lambda name: False)
    got = run_examples.run("uses_jax", "refimpl", "ref")
    assert not got.ok and "jax was imported" in got.problem


def test_pmap_example_uses_four_devices_everywhere():
    outputs = [run_examples.run("pmap_data_parallel", "refimpl", "ref").stdout]
    outputs.append(_jax_twin("pmap_data_parallel").stdout)
    for out in outputs:
        assert out.startswith("4 devices"), out
