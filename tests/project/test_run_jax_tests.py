"""tools/run_jax_tests.py runs a JAX-style test file on refimpl and on JAX and
reports each method's outcome.

The file it runs here is ours (tests/project/jax_style_sample_file.py), written
as JAX's test files are; each method's expected outcome is in its name. The
runs are child processes (the runner swaps ``jax`` in ``sys.modules`` and JAX
reads ``XLA_FLAGS`` once), about 3 s each, so they are marked slow; the
selection and comparison logic is checked without JAX.
"""

from __future__ import annotations

import importlib.util
import json
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "tests" / "project" / "jax_style_sample_file.py"
_spec = importlib.util.spec_from_file_location("run_jax_tests", ROOT / "tools" / "run_jax_tests.py")
assert _spec is not None and _spec.loader is not None
run_jax_tests = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run_jax_tests)


def _run(backend: str, tmp_path: pathlib.Path) -> dict:
    out = tmp_path / f"{backend}.json"
    subprocess.run(
        [sys.executable, str(ROOT / "tools" / "run_jax_tests.py"), str(SAMPLE),
         "--backend", backend, "--json", str(out)],
        check=True, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    return {k: v["outcome"] for k, v in json.loads(out.read_text())["tests"].items()}


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["ref", "pjrt"])
def test_runner_reports_pass_planted_failure_and_missing_name(backend, tmp_path):
    if backend == "pjrt":
        from tests.helpers.pjrt_helpers import skip_without_pjrt

        skip_without_pjrt()
    got = _run(backend, tmp_path)
    assert got == {
        "SampleTest.test_vmap_sum_passes0": "pass",
        "SampleTest.test_vmap_sum_passes1": "pass",
        "SampleTest.test_planted_failure_fails": "fail",
        "SampleTest.test_raises_passes": "pass",
        "SampleTest.test_array_module_is_refimpl": "pass",  # refimpl really ran
        "SampleTest.test_internal_name_is_missing": "missing",
        "SampleTest.test_public_module_is_missing": "missing",
        "SampleTest.test_check_grads_passes": "pass",  # jtu.check_grads -> refimpl's
        "SampleTest.test_test_helper_is_refimpls": "pass",  # lax_test_util's lax
        "SampleTest.test_harness_helper_is_missing": "missing",
        "SampleTest.test_moved_internal_name_passes": "pass",
        "SampleTest.test_internal_error_class_passes": "pass",
        "SampleTest.test_promote_like_jnp_passes": "pass",  # refimpl's promotion
        "SampleTest.test_dtype_tables_and_weak_conversion_pass": "pass",
        "SampleTest.test_dot_precision_helper_passes": "pass",  # refimpl's jaxpr
        "X64Test.test_x64_mirrored_passes": "pass",  # jtu.with_config mirrored
        "CacheClearTest.test_after_cache_clear_passes": "pass",
    }


@pytest.mark.slow
def test_runner_on_jax_runs_jax_itself(tmp_path):
    got = _run("jax", tmp_path)
    assert got["SampleTest.test_array_module_is_refimpl"] == "fail"
    assert got["SampleTest.test_planted_failure_fails"] == "fail"
    assert got["SampleTest.test_vmap_sum_passes0"] == "pass"
    assert got["X64Test.test_x64_mirrored_passes"] == "pass"
    assert got["SampleTest.test_public_module_is_missing"] == "missing"
    assert got["CacheClearTest.test_after_cache_clear_passes"] == "pass"
    assert got["SampleTest.test_test_helper_is_refimpls"] == "fail"  # JAX's lax
    assert got["SampleTest.test_harness_helper_is_missing"] == "missing"
    assert got["SampleTest.test_moved_internal_name_passes"] == "pass"
    assert got["SampleTest.test_promote_like_jnp_passes"] == "pass"
    assert got["SampleTest.test_dtype_tables_and_weak_conversion_pass"] == "pass"
    assert got["SampleTest.test_dot_precision_helper_passes"] == "pass"


@pytest.mark.parametrize(
    ("expr", "selected"),
    [
        (None, True),
        ("vmap", True),
        ("VMAP and passes0", True),
        ("vmap and not passes0", False),
        ("(grads or vmap) and Sample", True),
        ("x64", False),
    ],
)
def test_k_selects_as_pytest_does(expr, selected):
    assert run_jax_tests._matches(expr, "SampleTest.test_vmap_sum_passes0") is selected


def test_compare_lists_what_jax_passes_and_refimpl_does_not():
    jax_report = {"file": "f.py", "backend": "jax", "tests": {
        "A.t_both": {"outcome": "pass"},
        "A.t_ref_fails": {"outcome": "pass"},
        "A.t_jax_fails": {"outcome": "fail"},
        "B.t_missing": {"outcome": "pass"},
    }}  # fmt: skip
    ref_report = {"file": "f.py", "backend": "ref", "tests": {
        "A.t_both": {"outcome": "pass"},
        "A.t_ref_fails": {"outcome": "fail", "exc": "AssertionError", "msg": "x | y"},
        "A.t_jax_fails": {"outcome": "fail"},
        "B.t_missing": {"outcome": "missing", "exc": "MissingName"},
    }}  # fmt: skip
    rows = run_jax_tests.compare(jax_report, ref_report)
    assert {cls: [m for m, _ in r] for cls, r in rows.items()} == {
        "A": ["t_ref_fails"],
        "B": ["t_missing"],
    }
    table = run_jax_tests.markdown(jax_report, ref_report)
    assert "| A | t_ref_fails | fail | AssertionError | x \\| y |" in table
