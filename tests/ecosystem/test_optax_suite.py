"""optax's own tests, run unchanged on refimpl through the ``as_jax`` redirect.

optax ships its test files in its wheel (``optax/_src/*_test.py``). Each run
here is a subprocess: ``python -m pytest FILES`` for JAX itself, and
``python -m refimpl.as_jax --backend B -m pytest FILES`` for refimpl on
backend ``B`` (``import jax`` inside optax, chex and the tests resolves to
refimpl). ``outcomes_plugin`` records every test's outcome, so the runs
compare test by test: the slow test requires at least 95% of the tests that
pass under JAX to pass on each backend (today all of them do).

``python tests/ecosystem/test_optax_suite.py [FILES...]`` prints the table
(JAX, ref, pjrt) for the given optax test files (default: :data:`FILES`).

The fast test trains a small model with ``optax.adam`` and checks chex's
assertions under ``as_jax`` on both backends, against the same script under JAX.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent

#: The optax test files of the issue's count (optax 0.2.8: 206 tests under JAX).
FILES = [
    "_src/transform_test.py",
    "_src/combine_test.py",
    "_src/update_test.py",
    "_src/numerics_test.py",
    "_src/base_test.py",
    "_src/utils_test.py",
    "_src/lookahead_test.py",
    "_src/factorized_test.py",
]

IMPLS = ("jax", "ref", "pjrt")


def optax_dir() -> Path:
    spec = importlib.util.find_spec("optax")
    if spec is None or spec.origin is None:
        pytest.skip("optax is not installed (pip install .[test])")
    return Path(spec.origin).parent


def _skip_without_pjrt() -> None:
    from tests.helpers.pjrt_helpers import skip_without_pjrt

    skip_without_pjrt()


def _command(impl: str, args: list[str]) -> list[str]:
    if impl == "jax":
        return [sys.executable, *args]
    return [sys.executable, "-m", "refimpl.as_jax", "--backend", impl, *args]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.setdefault("JAX_PLATFORMS", "cpu")
    return env


def run_suite(impl: str, files: list[str], workdir: Path, timeout: float = 1800) -> dict[str, str]:
    """``{test id: outcome}`` of optax's ``files`` run under ``impl`` ("jax",
    "ref" or "pjrt"); test ids are relative to optax's package directory."""
    root = optax_dir()
    outcomes = workdir / f"outcomes-{impl}.json"
    ini = workdir / "pytest.ini"
    ini.write_text("[pytest]\n")  # none of the repository's options or markers
    args = [
        "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "outcomes_plugin",
        "-c", str(ini), "--rootdir", str(root),
        *[str(root / f) for f in files],
    ]  # fmt: skip
    env = _env()
    env["REFIMPL_OUTCOMES"] = str(outcomes)
    done = subprocess.run(
        _command(impl, args), cwd=workdir, env=env, capture_output=True, text=True,
        timeout=timeout,
    )  # fmt: skip
    if not outcomes.exists():
        raise AssertionError(f"{impl}: pytest wrote no outcomes\n{done.stdout[-3000:]}\n"
                             f"{done.stderr[-3000:]}")  # fmt: skip
    return json.loads(outcomes.read_text())


def compare(jax_outcomes: dict[str, str], ours: dict[str, str]) -> tuple[int, int, list[str]]:
    """(tests passing under JAX, of those passing here, the ones that do not)."""
    passing = sorted(t for t, o in jax_outcomes.items() if o == "passed")
    missing = [t for t in passing if ours.get(t) != "passed"]
    return len(passing), len(passing) - len(missing), missing


@pytest.fixture(scope="module")
def jax_outcomes(tmp_path_factory) -> dict[str, str]:
    optax_dir()
    return run_suite("jax", FILES, tmp_path_factory.mktemp("optax-jax"))


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["ref", "pjrt"])
def test_optax_own_tests_pass_on_refimpl(backend, jax_outcomes, tmp_path):
    if backend == "pjrt":
        _skip_without_pjrt()
    ours = run_suite(backend, FILES, tmp_path)
    total, passed, missing = compare(jax_outcomes, ours)
    print(f"optax {len(FILES)} files on {backend}: {passed}/{total} of JAX's passing tests pass")
    assert total >= 200, f"JAX itself passed only {total} of optax's tests"
    assert passed >= 0.95 * total, f"{backend}: {passed}/{total}; not passing: {missing[:20]}"


# --- the fast smoke test -------------------------------------------------------------------

TRAINING = """
import jax, jax.numpy as jnp, numpy as np, optax, chex

x = jnp.asarray(np.linspace(-1.0, 1.0, 16, dtype=np.float32).reshape(8, 2))
y = x @ jnp.asarray([2.0, -3.0]) + 0.5
params = {"w": jnp.zeros(2), "b": jnp.zeros(())}

def loss(p):
    return jnp.mean((x @ p["w"] + p["b"] - y) ** 2)

opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(0.1))
state = opt.init(params)

@jax.jit
def step(p, s):
    value, grads = jax.value_and_grad(loss)(p)
    updates, s = opt.update(grads, s, p)
    return optax.apply_updates(p, updates), s, value

values = []
for _ in range(5):
    params, state, value = step(params, state)
    values.append(float(value))
chex.assert_shape(params["w"], (2,))
chex.assert_trees_all_close(params, jax.tree.map(lambda v: v + 0.0, params))
chex.assert_tree_all_finite(params)
chex.assert_type(params["w"], jnp.float32)
print(repr(values + [float(v) for v in params["w"]] + [float(params["b"])]))
"""


def _run_script(impl: str, text: str, tmp_path: Path) -> list[float]:
    script = tmp_path / f"script_{impl}.py"
    script.write_text(textwrap.dedent(text))
    done = subprocess.run(
        _command(impl, [str(script)]), cwd=tmp_path, env=_env(), capture_output=True,
        text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, f"{impl}:\n{done.stdout}\n{done.stderr[-4000:]}"
    return eval(done.stdout.strip().splitlines()[-1])  # a list of floats


@pytest.mark.parametrize("backend", ["ref", "pjrt"])
def test_optax_training_and_chex_asserts_match_jax(backend, tmp_path):
    optax_dir()
    if backend == "pjrt":
        _skip_without_pjrt()
    want = _run_script("jax", TRAINING, tmp_path)
    got = _run_script(backend, TRAINING, tmp_path)
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-7)


def main(argv: list[str]) -> int:
    files = argv or FILES
    with tempfile.TemporaryDirectory() as tmp:
        results = {impl: run_suite(impl, files, Path(tmp)) for impl in IMPLS}
    for impl in IMPLS:
        counts = {o: list(results[impl].values()).count(o) for o in ("passed", "failed", "skipped")}
        line = f"{impl:5s} " + ", ".join(f"{n} {o}" for o, n in counts.items())
        if impl != "jax":
            total, passed, missing = compare(results["jax"], results[impl])
            line += f"; {passed}/{total} of JAX's passing tests pass"
            for test in missing:
                line += f"\n      not passing: {test}"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
