"""The corpus as pytest tests: one test per (implementation, case).

For third parties that run everything through pytest (``-k``, ``-x``,
``--junitxml``, ``pytest-xdist``'s ``-n``)::

    python -m pytest --pyargs conformance.test_corpus --conformance-impl ref,pjrt \\
        -k 'lax.add' -x --junitxml report.xml

(``--conformance-impl`` comes from this module, loaded by the package's
``pytest11`` entry point; ``CONFORMANCE_IMPL=ref,pjrt`` in the environment
works without it.) Test
ids are ``test_case[<impl>:<case name>]``. A ``known`` difference is an
``xfail`` with its reason, a ``skip`` a skip with its reason, ``differ`` and
``error`` fail with the same details as ``python -m conformance``.
"""

from __future__ import annotations

import os

import pytest

OPTION = "--conformance-impl"
ENV_VAR = "CONFORMANCE_IMPL"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("conformance")
    group.addoption(
        OPTION,
        default=None,
        help="implementations conformance.test_corpus runs (comma-separated; default: "
        f"${ENV_VAR}, else every available one)",
    )


def selected_impls(config: pytest.Config | None) -> list[str]:
    """The implementations named by the option or the environment (default: all available)."""
    from conformance.cli import choose_implementations

    value = None
    if config is not None:
        try:
            value = config.getoption(OPTION)
        except ValueError:  # the plugin was not loaded: only the environment
            value = None
    value = value or os.environ.get(ENV_VAR, "")
    names, _, error = choose_implementations(value)
    if error:
        raise pytest.UsageError(f"conformance: {error}")
    return names
