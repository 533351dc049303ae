"""The examples in the public API's docstrings run and print what they say."""

from __future__ import annotations

import doctest

import pytest

import refimpl as ri
from refimpl import lax


@pytest.mark.parametrize(
    "obj",
    [ri.jit, ri.Jitted, ri.device_put, ri.mask, lax.scan, ri.make_program, ri.eval_shape],
    ids=lambda o: o.__name__,
)
def test_docstring_example(obj):
    doc = obj.__doc__ or ""
    assert "Example" in doc and ">>>" in doc, f"{obj.__name__} has no example"
    for section in ("Args:", "Returns:", "Raises:") if obj is not ri.Jitted else ():
        assert section in doc, f"{obj.__name__}'s docstring has no {section} section"
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(obj, obj.__name__, globs={}):
        runner.run(test)
    assert runner.failures == 0 and runner.tries > 0
