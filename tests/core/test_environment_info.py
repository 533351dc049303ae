"""print_environment_info (JAX 0.10.2's jax.print_environment_info): the
same lines as JAX's report, printed or returned, on both backends."""

from __future__ import annotations

import sys

import jax
import numpy as np
import pytest

import refimpl as ri


def _keys(text):
    return [line.split(":")[0] for line in text.splitlines() if line]


def test_returned_report_has_jax_lines(backend, capsys):
    got = ri.print_environment_info(return_string=True)
    want = jax.print_environment_info(return_string=True)
    assert capsys.readouterr().out == ""
    assert _keys(got) == _keys(want)
    assert f"jax:    {jax.__version__}\n" in got
    assert f"numpy:  {np.__version__}\n" in got
    assert f"python: {sys.version}".replace("\n", " ") in got
    assert f"{len(ri.devices())} local devices" in got


def test_printed_report(backend, capsys):
    assert ri.print_environment_info() is None
    assert capsys.readouterr().out.startswith("jax:    0.10.2\n")


def test_return_string_must_be_a_bool():
    with pytest.raises(TypeError, match="print_environment_info: return_string"):
        ri.print_environment_info(return_string="yes")
