"""The example programs in examples/ (ordinary JAX programs) run under
``refimpl.as_jax`` on both backends and give JAX's results, leaf by leaf.

Each example leaves its results in a global ``results`` pytree. The test runs
the file with real JAX and under ``refimpl.as_jax`` (ref, and pjrt), in this
process, and compares: same number of leaves, same shapes; integers and bools
equal; floats within 2e-4 relative to the leaf's largest magnitude.

An example that needs a refimpl feature another issue is still building is
skipped at collection time, naming the missing feature; it runs as soon as
the feature lands.
"""

from __future__ import annotations

import importlib.util
import pathlib

import jax
import numpy as np
import pytest

import refimpl as ri
from refimpl import as_jax

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def _has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def _works(probe) -> bool:
    """Whether a tiny program using the feature runs (a feature may exist
    before its derivative rules do)."""
    try:
        probe()
    except Exception:  # noqa: BLE001 -- any failure means "not there yet"
        return False
    return True


def _linalg_probe() -> None:
    rnp = ri.numpy
    a = np.array([[4.0, 1.0], [1.0, 3.0]], np.float32)
    ri.grad(lambda m: rnp.sum(rnp.linalg.solve(m, rnp.ones(2))))(a)
    ri.grad(lambda m: rnp.sum(rnp.linalg.cholesky(m)))(a)


def _scipy_linalg_probe() -> None:
    from refimpl.scipy import linalg

    a = np.array([[2.0, 0.0], [1.0, 3.0]], np.float32)
    ri.grad(lambda m: ri.numpy.sum(linalg.cho_solve((m, True), ri.numpy.ones(2))))(a)


FEATURES = {
    "grad": lambda: hasattr(ri, "grad") and hasattr(ri, "value_and_grad"),
    "vmap": lambda: hasattr(ri, "vmap"),
    "hessian": lambda: hasattr(ri, "hessian"),
    "pmap": lambda: hasattr(ri, "pmap") and hasattr(ri.lax, "pmean"),
    "new_ref": lambda: hasattr(ri, "new_ref"),
    "numpy.linalg (with derivatives)": lambda: _works(_linalg_probe),
    "scipy.linalg (with derivatives)": lambda: (
        _has_module("refimpl.scipy.linalg") and _works(_scipy_linalg_probe)
    ),
    "numpy.tril/einsum": lambda: hasattr(ri.numpy, "tril") and hasattr(ri.numpy, "einsum"),
}

NEEDS = {
    "mlp_classifier": ["grad"],
    "logistic_regression": ["grad"],
    "rnn_scan": ["grad"],
    "attention_block": ["grad", "numpy.tril/einsum"],
    "vae": ["grad"],
    "gp_regression": ["grad", "numpy.linalg (with derivatives)", "scipy.linalg (with derivatives)"],
    "newton_hessian": ["grad", "hessian", "numpy.linalg (with derivatives)"],
    "bisection_while": [],
    "per_example_grads": ["grad", "vmap"],
    "pmap_data_parallel": ["grad", "pmap"],
    "ref_accumulator": ["new_ref"],
    "random_sampling": [],
}


def _params():
    out = []
    for name, needs in NEEDS.items():
        missing = [f for f in needs if not FEATURES[f]()]
        marks = [pytest.mark.skip(reason=f"refimpl lacks {', '.join(missing)}")] if missing else []
        out.append(pytest.param(name, marks=marks, id=name))
    return out


_jax_results: dict[str, object] = {}


def jax_results(name: str):
    if name not in _jax_results:
        _jax_results[name] = _run_with_jax(name)
    return _jax_results[name]


def _run_with_jax(name: str):
    import runpy

    with jax.default_device(jax.devices("cpu")[0]):
        return runpy.run_path(str(EXAMPLES / f"{name}.py"), run_name="__main__")["results"]


def assert_results_match(got, want, name: str) -> None:
    got_leaves, _ = ri.tree_util.tree_flatten(got)
    want_leaves, _ = jax.tree_util.tree_flatten(want)
    got_paths = [p for p, _ in ri.tree_util.tree_flatten_with_path(got)[0]]
    assert len(got_leaves) == len(want_leaves), (len(got_leaves), len(want_leaves))
    for path, g, w in zip(got_paths, got_leaves, want_leaves, strict=True):
        g, w = np.asarray(g), np.asarray(w)
        where = f"{name}{path}"
        assert g.shape == w.shape, f"{where}: shape {g.shape} != {w.shape}"
        if w.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w, err_msg=where)
            continue
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        scale = float(np.max(np.abs(w64))) if w64.size else 0.0
        # relative to the leaf's scale; the floor lets a float32 zero be ~1e-7
        np.testing.assert_allclose(g64, w64, rtol=2e-4, atol=2e-4 * scale + 1e-6, err_msg=where)


@pytest.mark.parametrize("backend", ["ref", "pjrt"])
@pytest.mark.parametrize("name", _params())
def test_example_matches_jax(name, backend, capsys):
    if backend == "pjrt":
        from tests.pjrt_helpers import skip_without_pjrt

        skip_without_pjrt()
    got = as_jax.run(str(EXAMPLES / f"{name}.py"), backend=backend)["results"]
    assert_results_match(got, jax_results(name), name)
    assert capsys.readouterr().out.strip(), f"{name} printed nothing"


def test_every_example_is_listed():
    files = {p.stem for p in EXAMPLES.glob("*.py")}
    jax_programs = {f for f in files if "import jax" in (EXAMPLES / f"{f}.py").read_text()}
    assert jax_programs == set(NEEDS)
