"""Masking shape specs (transforms/masking/shape_spec.py): parser, errors, Dim arithmetic.

Oracles: Python integer arithmetic (a Dim evaluated at sizes must equal the
same expression computed on ints) and hand-written expected parses.
"""

from __future__ import annotations

import operator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from refimpl.transforms.masking.shape_spec import Dim, ShapeSpecError, parse_dim, parse_spec

n, m = Dim.variable("n"), Dim.variable("m")


@pytest.mark.parametrize(
    "text, dims",
    [
        ("(n, 3)", (n, 3)),
        ("(2*n+1, m)", (2 * n + 1, m)),
        ("(_, n)", (None, n)),
        ("n", (n,)),
        ("n, m", (n, m)),
        ("(n,)", (n,)),
        ("(n)", (n,)),
        ("()", ()),
        ("_", (None,)),
        ("(n*m, n**2)", (n * m, n * n)),
        ("(-n + 5, 3 - 2*m)", (5 - n, 3 - 2 * m)),
        ("((n - 1)//2, 3)", ((n - 1) // 2, 3)),
        ("(n - 1)//2", ((n - 1) // 2,)),
        ("  ( n ,  m , )  ", (n, m)),
        ("(2*(n + m) - m,)", (2 * n + m,)),
    ],
)
def test_parse(text, dims):
    assert parse_spec(text).dims == tuple(None if d is None else Dim.of(d) for d in dims)


def test_canonical_forms_compare_equal():
    assert parse_dim("n + n") == parse_dim("2*n")
    assert parse_dim("n - n") == 0
    assert parse_dim("(2*n + 1)//2") == n
    assert parse_dim("(2*n + 2)//4") == parse_dim("(n + 1)//2")
    assert parse_dim("(n - 3)//2 + 1") == parse_dim("(n - 1)//2")
    assert parse_dim("m*n") == parse_dim("n*m")
    assert hash(parse_dim("n + n")) == hash(parse_dim("2*n"))
    assert parse_dim("n") != parse_dim("m") and parse_dim("n") != 3


@pytest.mark.parametrize(
    "text, position, fragment",
    [
        ("(n,", 3, "expected a dim"),
        ("(n", 2, "expected ',' or ')'"),
        ("", 0, "empty"),
        ("n +", 3, "expected a dim"),
        ("(n, _ + 1)", 4, "'_' stands for a whole"),
        ("n // m", 5, "positive integer"),
        ("n // 0", 5, "positive integer"),
        ("(n))", 3, "expected ',' or the end"),
        ("n $ 2", 2, "unexpected character '$'"),
        ("3n", 1, "expected ',' or the end"),
        ("n ** m", 5, "integer exponent"),
        ("(,)", 1, "expected a dim"),
        ("(n, 2.5)", 5, "unexpected character '.'"),
    ],
)
def test_parse_errors_name_position_and_text(text, position, fragment):
    with pytest.raises(ShapeSpecError) as info:
        parse_spec(text)
    message = str(info.value)
    assert fragment in message
    assert repr(text) in message
    where = "the end of the spec" if position >= len(text) else f"position {position}"
    assert where in message
    caret_line = message.splitlines()[-1]
    assert caret_line.index("^") - 4 == position  # the caret sits under the position


def test_parse_spec_rejects_non_strings():
    with pytest.raises(TypeError, match="must be a string"):
        parse_spec(3)


def test_spec_str_and_variables():
    spec = parse_spec("(2*n + 1, _, m*n)")
    assert str(spec) == "(2*n + 1, _, m*n)"
    assert spec.variables() == {"n", "m"}
    assert len(spec) == 3
    assert str(parse_spec("n")) == "(n,)"


def test_constant_value_and_errors():
    assert Dim.constant(4).value == 4 and Dim.constant(4).is_constant
    with pytest.raises(TypeError, match="not a constant"):
        _ = (n + 1).value
    with pytest.raises(TypeError, match="positive int"):
        _ = n // 0
    assert (4 * n + 2).exact_div(2) == 2 * n + 1
    assert (4 * n + 1).exact_div(2) is None


# --- Dim arithmetic agrees with integer arithmetic ---------------------------------

_NAMES = ["n", "m", "k"]


@st.composite
def _expressions(draw, depth=0):
    """(Dim, function of a size dict computing the same value on ints)."""
    choice = draw(st.integers(0, 5 if depth < 3 else 1))
    if choice == 0:
        value = draw(st.integers(-5, 5))
        return Dim.constant(value), lambda s, v=value: v
    if choice == 1:
        name = draw(st.sampled_from(_NAMES))
        return Dim.variable(name), lambda s, name=name: s[name]
    a, fa = draw(_expressions(depth + 1))
    if choice == 5:
        k = draw(st.integers(1, 4))
        return a // k, lambda s: fa(s) // k
    b, fb = draw(_expressions(depth + 1))
    op = {2: operator.add, 3: operator.sub, 4: operator.mul}[choice]
    return op(a, b), lambda s: op(fa(s), fb(s))


@settings(max_examples=150, deadline=None)
@given(_expressions(), st.fixed_dictionaries({k: st.integers(0, 30) for k in _NAMES}))
def test_dim_arithmetic_matches_ints(expression, sizes):
    dim, compute = expression
    assert dim.evaluate(sizes) == compute(sizes)


@settings(max_examples=150, deadline=None)
@given(_expressions(), st.fixed_dictionaries({k: st.integers(0, 30) for k in _NAMES}))
def test_str_parses_back_to_the_same_dim(expression, sizes):
    dim, _ = expression
    again = parse_dim(str(dim))
    assert again == dim
    assert again.evaluate(sizes) == dim.evaluate(sizes)
