"""Shape specs for masking: dimension sizes as polynomials over named sizes.

A shape spec is a string describing one array's shape in terms of named
logical sizes, as in the old ``jax.mask``::

    "(n, 3)"        rank 2: n rows of 3
    "(2*n + 1, m)"  polynomials with integer coefficients
    "(n*m,)"        products of sizes (and ``n**2``)
    "((n - 1)//2,)" floor division by a positive integer constant
    "(_, n)"        ``_``: a dim that is not masked; any size is accepted
    "n", "n, m"     the parentheses may be left out
    "()"            a scalar

Grammar (whitespace is ignored)::

    spec   := "(" [dims] ")" | dims
    dims   := dim ("," dim)* [","]
    dim    := "_" | expr
    expr   := term (("+" | "-") term)*
    term   := factor (("*" factor) | ("//" factor))*
    factor := "-" factor | power
    power  := atom ["**" INT]
    atom   := INT | NAME | "(" expr ")"

A dim is a :class:`Dim`: a sum of integer multiples of monomials, products of
*atoms*. An atom is a size name (``n``) or the floor division of a
polynomial by a positive integer (``(n + 1)//2``), kept symbolic because it
is not a polynomial. Dims are kept in a canonical form, so two dims are equal
(``==``, ``hash``) exactly when they are the same polynomial: ``n + n`` is
``2*n``, and ``(2*n + 1)//2`` simplifies to ``n``.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Union

# --- dims -------------------------------------------------------------------------

Atom = Union[str, "FloorDiv"]
Monomial = tuple[tuple[Atom, int], ...]  # ((atom, power), ...), sorted by str(atom)


@dataclass(frozen=True)
class FloorDiv:
    """The atom ``numerator // divisor`` (``divisor >= 2``, rounding toward -inf)."""

    numerator: Dim
    divisor: int

    def __str__(self) -> str:
        inner = str(self.numerator)
        if len(self.numerator.terms) > 1 or inner.startswith("-"):
            inner = f"({inner})"
        return f"{inner}//{self.divisor}"


class Dim:
    """An immutable polynomial with integer coefficients over :data:`Atom` s.

    Build dims with :meth:`constant`, :meth:`variable`, the arithmetic
    operators (``+ - *`` with dims or ints, ``//`` by a positive int) or
    :func:`parse_spec`. A constant dim compares equal to its int.
    """

    __slots__ = ("terms", "_hash")

    def __init__(self, terms: Mapping[Monomial, int]) -> None:
        self.terms: dict[Monomial, int] = {m: c for m, c in terms.items() if c != 0}
        self._hash = hash(frozenset(self.terms.items()))

    # -- construction --

    @staticmethod
    def constant(value: int) -> Dim:
        return Dim({(): int(value)})

    @staticmethod
    def variable(name: str) -> Dim:
        return Dim({((name, 1),): 1})

    @staticmethod
    def of(value: Dim | int) -> Dim:
        """``value`` as a Dim (an int becomes a constant)."""
        if isinstance(value, Dim):
            return value
        # (excluded from coverage: the rules hand over Dims and ints; a guard)
        if isinstance(value, bool) or not isinstance(value, int):  # pragma: no cover
            raise TypeError(f"a dim must be a Dim or an int, got {value!r}")
        return Dim.constant(value)

    # -- inspection --

    @property
    def is_constant(self) -> bool:
        return all(m == () for m in self.terms)

    @property
    def value(self) -> int:
        """The value of a constant dim (a TypeError for a symbolic one)."""
        if not self.is_constant:  # pragma: no cover - every caller checks is_constant first
            raise TypeError(f"the dim {self} is not a constant")
        return self.terms.get((), 0)

    def variables(self) -> set[str]:
        """Every size name the dim mentions (also inside floor divisions)."""
        names: set[str] = set()
        for monomial in self.terms:
            for atom, _ in monomial:
                names |= {atom} if isinstance(atom, str) else atom.numerator.variables()
        return names

    def evaluate(self, sizes: Mapping[str, int]) -> int:
        """The value for concrete ``sizes`` (name -> int)."""
        return self.evaluate_with(
            lambda name: int(sizes[name]), operator.add, operator.mul, operator.floordiv
        )

    def evaluate_with(
        self,
        size_of: Callable[[str], Any],
        add: Callable[[Any, Any], Any],
        mul: Callable[[Any, Any], Any],
        floordiv: Callable[[Any, int], Any],
    ) -> Any:
        """The value computed with the given operations on whatever
        ``size_of(name)`` returns (ints, or traced scalars): how masking turns
        a dim into a run-time value. Ints are only ever combined with ``add``/
        ``mul``/``floordiv`` when a traced value is involved."""

        def atom_value(atom: Atom) -> Any:
            if isinstance(atom, str):
                return size_of(atom)
            numerator = atom.numerator.evaluate_with(size_of, add, mul, floordiv)
            return floordiv(numerator, atom.divisor)

        total: Any = None
        for monomial, coefficient in self._ordered_terms():
            term: Any = None
            for atom, power in monomial:
                value = atom_value(atom)
                for _ in range(power):
                    term = value if term is None else mul(term, value)
            if term is None:
                term = coefficient
            elif coefficient != 1:
                term = mul(term, coefficient)
            total = term if total is None else add(total, term)
        return 0 if total is None else total

    # -- arithmetic --

    def __add__(self, other: Dim | int) -> Dim:
        other = _coerce(other)
        if other is NotImplemented:  # pragma: no cover - Dims meet only Dims and ints
            return NotImplemented
        terms = dict(self.terms)
        for monomial, coefficient in other.terms.items():
            terms[monomial] = terms.get(monomial, 0) + coefficient
        return Dim(terms)

    __radd__ = __add__

    def __neg__(self) -> Dim:
        return Dim({m: -c for m, c in self.terms.items()})

    def __sub__(self, other: Dim | int) -> Dim:
        other = _coerce(other)
        return NotImplemented if other is NotImplemented else self + (-other)

    def __rsub__(self, other: int) -> Dim:
        return (-self) + other

    def __mul__(self, other: Dim | int) -> Dim:
        other = _coerce(other)
        if other is NotImplemented:  # pragma: no cover - Dims meet only Dims and ints
            return NotImplemented
        terms: dict[Monomial, int] = {}
        for m1, c1 in self.terms.items():
            for m2, c2 in other.terms.items():
                product = _multiply_monomials(m1, m2)
                terms[product] = terms.get(product, 0) + c1 * c2
        return Dim(terms)

    __rmul__ = __mul__

    def __floordiv__(self, divisor: int) -> Dim:
        """Floor division by a positive int, simplified as far as it is exact:
        ``(k*a + b)//k == a + b//k`` for integer-valued ``a``."""
        if isinstance(divisor, bool) or not isinstance(divisor, int) or divisor < 1:
            raise TypeError(f"a dim can only be floor-divided by a positive int, got {divisor!r}")
        if divisor == 1:
            return self
        quotient: dict[Monomial, int] = {}
        remainder: dict[Monomial, int] = {}
        for monomial, coefficient in self.terms.items():
            quotient[monomial], remainder[monomial] = divmod(coefficient, divisor)
        rest = Dim(remainder)
        if rest.is_constant:
            return Dim(quotient) + rest.value // divisor
        common = math.gcd(divisor, *rest.terms.values())  # (2*n + 2)//4 is (n + 1)//2
        atom = FloorDiv(Dim({m: c // common for m, c in rest.terms.items()}), divisor // common)
        # the remainder has a coefficient r with 0 < r < divisor, so common <= r
        if atom.divisor == 1:  # pragma: no cover - unreachable: divisor // common >= 2
            return Dim(quotient) + atom.numerator
        return Dim(quotient) + Dim({((atom, 1),): 1})

    def exact_div(self, divisor: int) -> Dim | None:
        """``self / divisor`` when every coefficient is divisible, else None."""
        if divisor == 0 or any(c % divisor for c in self.terms.values()):
            return None
        return Dim({m: c // divisor for m, c in self.terms.items()})

    # -- comparison and printing --

    def __eq__(self, other: object) -> bool:
        if isinstance(other, int) and not isinstance(other, bool):
            other = Dim.constant(other)
        return isinstance(other, Dim) and self.terms == other.terms

    def __hash__(self) -> int:
        return self._hash

    def _ordered_terms(self) -> list[tuple[Monomial, int]]:
        """Highest degree first, then by name; the constant last."""
        return sorted(
            self.terms.items(),
            key=lambda item: (-sum(p for _, p in item[0]), _monomial_key(item[0])),
        )

    def __str__(self) -> str:
        if not self.terms:
            return "0"
        text = ""
        for monomial, coefficient in self._ordered_terms():
            sign = "-" if coefficient < 0 else "+"
            magnitude = abs(coefficient)
            wrap = len(monomial) > 1 or magnitude != 1
            factors = [_format_factor(atom, power, wrap) for atom, power in monomial]
            if magnitude != 1 or not factors:
                factors.insert(0, str(magnitude))
            body = "*".join(factors)
            if not text:
                # unary minus binds tighter than '//': -(n//2) needs the parentheses
                if (
                    sign == "-"
                    and magnitude == 1
                    and monomial
                    and isinstance(monomial[0][0], FloorDiv)
                ):
                    body = f"({body})"
                text = body if sign == "+" else f"-{body}"
            else:
                text += f" {sign} {body}"
        return text

    def __repr__(self) -> str:  # pragma: no cover - a debugging aid: no public API shows a Dim
        return f"Dim({str(self)!r})"


def _coerce(value: Any) -> Dim:
    # NotImplemented for other types (typeshed lets it stand for any type, as
    # the binary operators that return it do)
    if isinstance(value, Dim):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return Dim.constant(value)
    return NotImplemented  # pragma: no cover - Dims meet only Dims and ints


def _monomial_key(monomial: Monomial) -> tuple[tuple[str, int], ...]:
    return tuple((str(atom), power) for atom, power in monomial)


def _multiply_monomials(a: Monomial, b: Monomial) -> Monomial:
    powers: dict[Atom, int] = {}
    for atom, power in a + b:
        powers[atom] = powers.get(atom, 0) + power
    return tuple(sorted(powers.items(), key=lambda item: str(item[0])))


def _format_factor(atom: Atom, power: int, in_product: bool) -> str:
    text = str(atom)
    if isinstance(atom, FloorDiv) and (in_product or power > 1):
        text = f"({text})"
    return text if power == 1 else f"{text}**{power}"


# --- shape specs ------------------------------------------------------------------


class ShapeSpecError(ValueError):
    """A shape spec string that does not parse; the message shows where."""


@dataclass(frozen=True)
class ShapeSpec:
    """A parsed spec: one :class:`Dim` per dimension, ``None`` for ``_``."""

    dims: tuple[Dim | None, ...]
    text: str

    def __len__(self) -> int:
        return len(self.dims)

    def __iter__(self) -> Iterator[Dim | None]:
        return iter(self.dims)

    def variables(self) -> set[str]:
        names: set[str] = set()
        for dim in self.dims:
            if dim is not None:
                names |= dim.variables()
        return names

    def __str__(self) -> str:
        shown = ", ".join("_" if d is None else str(d) for d in self.dims)
        return f"({shown},)" if len(self.dims) == 1 else f"({shown})"


_TOKEN = re.compile(
    r"\s*(?:(?P<int>\d+)|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<op>\*\*|//|[-+*(),]))"
)


@dataclass(frozen=True)
class _Token:
    kind: str  # "int", "name", "op" or "end"
    text: str
    position: int


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    position = 0
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position == len(text):
            tokens.append(_Token("end", "", position))
            return tokens
        match = _TOKEN.match(text, position)
        if match is None:
            raise _error(text, position, f"unexpected character {text[position]!r}")
        kind = match.lastgroup or "op"
        tokens.append(_Token(kind, match.group(kind), match.start(kind)))
        position = match.end()


def _error(text: str, position: int, message: str) -> ShapeSpecError:
    where = "the end of the spec" if position >= len(text) else f"position {position}"
    return ShapeSpecError(
        f"cannot parse shape spec {text!r}: {message} at {where}\n    {text}\n    {' ' * position}^"
    )


_MAX_NESTING = 64  # parentheses or unary minus signs; far beyond any real spec


class _Parser:
    """Recursive descent over the tokens, one method per grammar rule."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.index = 0
        self._check_nesting()

    def _check_nesting(self) -> None:
        """Each '(' and each unary '-' is one level of recursion below; refuse
        deep nesting up front with a positioned error, not a RecursionError."""
        depth = run = 0
        for token in self.tokens:
            is_op = token.kind == "op"
            depth += (is_op and token.text == "(") - (is_op and token.text == ")")
            run = run + 1 if is_op and token.text == "-" else 0
            if max(depth, run) > _MAX_NESTING:
                raise self.fail(f"the spec nests more than {_MAX_NESTING} levels deep", token)

    @property
    def token(self) -> _Token:
        return self.tokens[self.index]

    def fail(self, message: str, token: _Token | None = None) -> ShapeSpecError:
        return _error(self.text, (token or self.token).position, message)

    def accept(self, op: str) -> bool:
        if self.token.kind == "op" and self.token.text == op:
            self.index += 1
            return True
        return False

    def expect(self, op: str, wanted: str) -> None:
        if not self.accept(op):
            raise self.fail(f"expected {wanted}, found {self._shown(self.token)}")

    @staticmethod
    def _shown(token: _Token) -> str:
        return "nothing" if token.kind == "end" else repr(token.text)

    def spec(self) -> ShapeSpec:
        if self.token.kind == "end":
            raise self.fail("the spec is empty (write '()' for a scalar)")
        if self._parenthesized_whole():
            self.index += 1
            dims = [] if self.accept(")") else self.dims(closing=")")
            if dims:
                self.expect(")", "',' or ')'")
        else:
            dims = self.dims(closing=None)
        if self.token.kind != "end":
            raise self.fail(f"expected ',' or the end of the spec, found {self._shown(self.token)}")
        return ShapeSpec(tuple(dims), self.text)

    def _parenthesized_whole(self) -> bool:
        """Whether the first token is '(' and its matching ')' is the last token."""
        if not (self.token.kind == "op" and self.token.text == "("):
            return False
        depth = 0
        for index, token in enumerate(self.tokens):
            if token.kind == "op" and token.text in "()":
                depth += 1 if token.text == "(" else -1
                if depth == 0:
                    return self.tokens[index + 1].kind == "end"
        return True  # unbalanced: parse as a tuple so the error says ')' is missing

    def dims(self, closing: str | None) -> list[Dim | None]:
        dims = [self.dim()]
        while self.accept(","):
            at_end = self.token.kind == "end" and closing is None
            if at_end or (closing and self.token.kind == "op" and self.token.text == closing):
                break
            dims.append(self.dim())
        return dims

    def dim(self) -> Dim | None:
        if self.token.kind == "name" and self.token.text == "_":
            following = self.tokens[self.index + 1]
            if following.kind == "end" or following.text in (",", ")"):
                self.index += 1
                return None
            raise self.fail("'_' stands for a whole unconstrained dim, not part of an expression")
        return self.expr()

    def expr(self) -> Dim:
        value = self.term()
        while True:
            if self.accept("+"):
                value = value + self.term()
            elif self.accept("-"):
                value = value - self.term()
            else:
                return value

    def term(self) -> Dim:
        value = self.factor()
        while True:
            if self.accept("*"):
                value = value * self.factor()
            elif self.token.kind == "op" and self.token.text == "//":
                operator_token = self.token
                self.index += 1
                divisor_token = self.token
                divisor = self.factor()
                if not divisor.is_constant or divisor.value < 1:
                    raise self.fail(
                        f"the divisor of '//' must be a positive integer, got {divisor}",
                        divisor_token if divisor_token.kind != "end" else operator_token,
                    )
                value = value // divisor.value
            else:
                return value

    def factor(self) -> Dim:
        if self.accept("-"):
            return -self.factor()
        return self.power()

    def power(self) -> Dim:
        base = self.atom()
        if self.accept("**"):
            if self.token.kind != "int":
                raise self.fail(f"expected an integer exponent, found {self._shown(self.token)}")
            power = int(self.token.text)
            self.index += 1
            result = Dim.constant(1)
            for _ in range(power):
                result = result * base
            return result
        return base

    def atom(self) -> Dim:
        token = self.token
        if token.kind == "int":
            self.index += 1
            return Dim.constant(int(token.text))
        if token.kind == "name":
            if token.text == "_":
                raise self.fail(
                    "'_' stands for a whole unconstrained dim, not part of an expression"
                )
            self.index += 1
            return Dim.variable(token.text)
        if self.accept("("):
            value = self.expr()
            self.expect(")", "')'")
            return value
        raise self.fail(f"expected a dim (a name, an integer or '('), found {self._shown(token)}")


def parse_spec(text: str) -> ShapeSpec:
    """Parse a shape spec string (see the module docstring); a ShapeSpecError
    names the position and shows the text when it does not parse."""
    if not isinstance(text, str):  # pragma: no cover - mask checks its specs are strings first
        raise TypeError(f"a shape spec must be a string, got {type(text).__name__} {text!r}")
    return _Parser(text).spec()


def parse_dim(text: str) -> Dim:  # pragma: no cover - not used by mask (tests, debugging)
    """Parse one dim expression such as ``"2*n + 1"``."""
    spec = parse_spec(f"({text},)")
    if len(spec) != 1 or spec.dims[0] is None:
        raise ShapeSpecError(f"cannot parse dim {text!r}: expected one expression")
    return spec.dims[0]


__all__ = ["Dim", "FloorDiv", "ShapeSpec", "ShapeSpecError", "parse_dim", "parse_spec"]
