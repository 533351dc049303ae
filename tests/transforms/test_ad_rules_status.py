"""Every primitive has its derivative rules, or a documented reason not to
(``refimpl/primitives/status.py``, which also generates docs/primitives.md)."""

from __future__ import annotations

import numpy as np
import pytest

import refimpl as ri
from refimpl import lax
from refimpl.primitives import status


def test_primitives_are_found():
    names = {entry.primitive.name for entry in status.all_primitives()}
    # one of each family, so a broken scan cannot pass the checks below vacuously
    assert {"add", "reshape", "reduce_sum", "general_gather", "dot_general", "scan", "jit"} <= names
    assert len(names) > 90


@pytest.mark.parametrize("rule", ["jvp", "transpose", "abstract_eval", "impl"])
def test_every_primitive_has_its_rule_or_a_reason(rule):
    missing = [
        f"{entry.primitive.name} ({entry.module})"
        for entry in status.all_primitives()
        if status.rule_status(entry.primitive, rule) == "missing"
    ]
    assert not missing, f"primitives without a {rule} rule and no documented reason: {missing}"


def test_documented_reasons_name_real_primitives():
    names = {entry.primitive.name for entry in status.all_primitives()}
    assert set(status.NO_JVP) <= names
    assert names >= status.LINEAR


def test_a_missing_rule_is_a_not_implemented_error_naming_the_primitive():
    if not hasattr(ri, "jvp"):
        pytest.skip("refimpl.jvp not available")
    x = np.array([1.0, 2.0], np.float32)
    with pytest.raises(NotImplementedError, match="nextafter"):
        ri.jvp(lambda v: lax.nextafter(v, np.float32(3.0)), (x,), (x,))


def test_markdown_lists_every_primitive():
    text = status.markdown()
    for entry in status.all_primitives():
        assert f"| `{entry.primitive.name}` |" in text
    # documented reasons appear below the table
    for name, reason in status.NO_JVP.items():
        assert f"* `{name}`: {reason}" in text
