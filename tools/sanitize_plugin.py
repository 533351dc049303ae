"""pytest plugin for tools/sanitize.sh: import the sanitized ``refimpl._pjrt``.

The editable install maps ``refimpl._pjrt`` to the regular build; this
loads the module named by ``REFIMPL_SANITIZED_PJRT`` under that name before
any test imports refimpl, so every test runs against the instrumented code.
"""

from __future__ import annotations

import importlib.util
import os
import sys

_path = os.environ["REFIMPL_SANITIZED_PJRT"]
_spec = importlib.util.spec_from_file_location("refimpl._pjrt", _path)
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
sys.modules["refimpl._pjrt"] = _module

import refimpl  # noqa: E402  (after the module is in place)

refimpl._pjrt = _module  # what a regular import would have set


def pytest_report_header(config):
    return f"sanitized refimpl._pjrt: {_path}"


def pytest_sessionstart(session):
    from refimpl.backends.pjrt import runtime

    assert runtime.native_module() is _module, runtime.native_module()
