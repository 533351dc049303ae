"""The conformance corpus collected by pytest (see ``conformance.pytest_plugin``).

python -m pytest --pyargs conformance.test_corpus --conformance-impl ref,pjrt -k lax.add
"""

from __future__ import annotations

import functools

import pytest

from conformance import implementations
from conformance.case import AGREE, Case
from conformance.pytest_plugin import selected_impls
from conformance.recorded import load as load_recordings
from conformance.runner import REFERENCE, execute, judge


@functools.cache
def _corpus() -> dict[str, Case]:
    from conformance.corpus import all_cases

    return {c.name: c for c in all_cases()}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "impl_case" not in metafunc.fixturenames:
        return
    impls = selected_impls(metafunc.config)
    params = [(impl, name) for impl in impls for name in _corpus()]
    metafunc.parametrize(
        "impl_case", params, ids=[f"{impl}:{name}" for impl, name in params], scope="function"
    )
    metafunc.config._conformance_impls = impls  # type: ignore[attr-defined]


@functools.cache
def _reference(case_name: str):
    return execute(_corpus()[case_name], implementations.get(REFERENCE))


def test_case(impl_case: tuple[str, str], request: pytest.FixtureRequest) -> None:
    impl_name, case_name = impl_case
    case = _corpus()[case_name]
    impls = getattr(request.config, "_conformance_impls", [impl_name])
    outcome = execute(case, implementations.get(impl_name))
    reference = None
    recorded, label = None, ""
    if case.expect is AGREE:
        reference = outcome if impl_name == REFERENCE else _reference(case_name)
        if impl_name == REFERENCE and "jax" not in impls:
            recordings = load_recordings()
            recorded, _ = recordings.lookup(case)
            label = recordings.label
    result = judge(case, impl_name, outcome, reference, recorded=recorded, recorded_label=label)
    if result.status == "skip":
        pytest.skip(result.detail.splitlines()[0] if result.detail else "skipped")
    if result.status == "known":
        pytest.xfail(f"known: {result.known_reason}")
    if result.status in ("differ", "error"):
        pytest.fail(f"{result.status}: {case_name} on {impl_name}\n{result.detail}", pytrace=False)
