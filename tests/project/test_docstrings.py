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


def _public_functions() -> list[str]:
    """The public top-level functions: ``refimpl.__all__`` less classes and modules."""
    import inspect

    names = []
    for name in ri.__all__:
        obj = getattr(ri, name)
        if inspect.isclass(obj) or inspect.ismodule(obj) or not callable(obj):
            continue
        names.append(name)
    return names


@pytest.mark.parametrize("name", _public_functions())
def test_every_public_function_is_documented(name):
    obj = getattr(ri, name)
    doc = obj.__doc__ or ""
    for section in ("Args:", "Returns:", "Raises:", "Example"):
        assert section in doc, f"ri.{name}'s docstring has no {section} section"
    assert ">>>" in doc, f"ri.{name}'s docstring has no example"
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(obj, name, globs={}):
        runner.run(test)
    assert runner.failures == 0 and runner.tries > 0
