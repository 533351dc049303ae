"""``jax.interpreters.ad``: differentiation rules of a primitive, JAX 0.10.2's way.

``primitive_jvps[p] = rule`` sets ``p.jvp_rule`` and ``primitive_transposes[p]
= rule`` sets ``p.transpose_rule``: refimpl's own rule slots, whose calling
conventions are JAX's (refimpl/transforms/ad_util.py):

* ``jvp(primals, tangents, **params) -> (primal_out, tangent_out)``, a tangent
  being an array or a symbolic ``Zero``;
* ``transpose(ct, *args, **params) -> cotangents``, the linear operands being
  ``UndefinedPrimal``\\ s, a cotangent ``None`` for a non-linear operand.

``defjvp``, ``defjvp2``, ``deflinear``, ``deflinear2`` and ``defbilinear``
build those two rules from smaller ones, as JAX's. Not provided: ``jvp`` and
``linearize`` (JAX's internal wrapped-function transformations; use
``jax.jvp``/``jax.linearize``) and ``add_jaxvals_p`` (refimpl sums tangents
with ``add``, it has no separate ``add_any`` primitive).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

from refimpl.primitives import base
from refimpl.primitives.base import Primitive
from refimpl.primitives.elementwise import add_p
from refimpl.transforms.ad import JVPTrace, JVPTracer, add_tangents, instantiate, zeros_like_aval
from refimpl.transforms.ad_util import UndefinedPrimal, Zero, is_undefined_primal, tangent_aval

__all__ = [
    "JVPTrace",
    "JVPTracer",
    "UndefinedPrimal",
    "Zero",
    "add_jaxvals",
    "add_tangents",
    "defbilinear",
    "defjvp",
    "defjvp2",
    "deflinear",
    "deflinear2",
    "get_primitive_transpose",
    "instantiate_zeros",
    "is_undefined_primal",
    "primitive_jvps",
    "primitive_transposes",
    "zeros_like_aval",
]


class TupleArgs:
    """A user's rule called as JAX calls it: its two sequence arguments
    (primals and tangents; batched values and batch dims) as tuples, where
    refimpl's drivers pass lists (a rule may compare ``dims == (0, None)``)."""

    def __init__(self, rule: Callable[..., Any]) -> None:
        self.rule = rule

    def __call__(self, first: Any, second: Any, **params: Any) -> Any:
        return self.rule(tuple(first), tuple(second), **params)


def user_rule(rule: Any) -> Any:
    """The rule a user registered (unwrapped from :class:`TupleArgs`)."""
    return rule.rule if isinstance(rule, TupleArgs) else rule


class RuleTable(MutableMapping):
    """A dict of primitive -> rule that is a view of one rule slot of the
    primitives (``attribute``): setting an entry sets the slot, reading one
    reads it (a primitive without the rule is a missing key). Iteration
    covers the primitives with an evaluation rule (refimpl keeps no list of
    the others)."""

    def __init__(self, attribute: str, table_name: str, tuple_args: bool) -> None:
        self.attribute = attribute
        self.table_name = table_name
        self.tuple_args = tuple_args

    def __getitem__(self, primitive: Any) -> Callable[..., Any]:
        rule = (
            getattr(primitive, self.attribute, None) if isinstance(primitive, Primitive) else None
        )
        if rule is None:
            raise KeyError(primitive)
        return user_rule(rule)

    def __setitem__(self, primitive: Any, rule: Callable[..., Any]) -> None:
        if not isinstance(primitive, Primitive):
            raise TypeError(
                f"{self.table_name}: keys are primitives (jax.extend.core.Primitive), "
                f"got {type(primitive).__name__}"
            )
        setattr(primitive, self.attribute, TupleArgs(rule) if self.tuple_args else rule)

    def __delitem__(self, primitive: Any) -> None:
        self[primitive]  # KeyError when there is no rule
        setattr(primitive, self.attribute, None)

    def __iter__(self) -> Iterator[Primitive]:
        seen = set()
        for primitive in base.all_primitives():
            if getattr(primitive, self.attribute) is not None and id(primitive) not in seen:
                seen.add(id(primitive))
                yield primitive

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __repr__(self) -> str:
        return f"<{self.table_name}: {len(self)} primitives>"


primitive_jvps = RuleTable("jvp_rule", "ad.primitive_jvps", tuple_args=True)
primitive_transposes = RuleTable("transpose_rule", "ad.primitive_transposes", tuple_args=False)


def get_primitive_transpose(primitive: Primitive) -> Callable[..., Any]:
    """The transpose rule of ``primitive``; JAX's NotImplementedError without one."""
    try:
        return primitive_transposes[primitive]
    except KeyError:
        raise NotImplementedError(
            f"Transpose rule (for reverse-mode differentiation) for '{primitive}' not implemented"
        ) from None


def instantiate_zeros(tangent: Any) -> Any:
    """A symbolic ``Zero`` as an array of zeros; any other tangent as it is."""
    return instantiate(tangent)


def add_jaxvals(x: Any, y: Any) -> Any:
    """The sum of two (co)tangent values (neither a symbolic zero)."""
    return add_p.bind(x, y)


def _zero_of(value: Any) -> Zero:
    return Zero.from_primal_value(value)


# --- rules built from smaller ones ---------------------------------------------------


def defjvp(primitive: Primitive, *jvprules: Callable[..., Any] | None) -> None:
    """One rule per operand, ``rule(g, *primals, **params)``: that operand's
    contribution to the output tangent (``None``: it contributes nothing)."""
    _single_result(primitive, "defjvp")
    primitive.jvp_rule = functools.partial(_standard_jvp, jvprules, primitive, False)


def defjvp2(primitive: Primitive, *jvprules: Callable[..., Any] | None) -> None:
    """As :func:`defjvp`, each rule also given the primal output:
    ``rule(g, ans, *primals, **params)``."""
    _single_result(primitive, "defjvp2")
    primitive.jvp_rule = functools.partial(_standard_jvp, jvprules, primitive, True)


def _single_result(primitive: Primitive, name: str) -> None:
    if primitive.multiple_results:  # (JAX asserts it)
        raise AssertionError(f"ad.{name}: {primitive} has multiple results")


def _standard_jvp(
    jvprules: tuple, primitive: Primitive, with_ans: bool, primals: list, tangents: list, **params
) -> tuple[Any, Any]:
    out = primitive.bind(*primals, **params)
    lead = (out,) if with_ans else ()
    terms = [
        rule(t, *lead, *primals, **params)
        for rule, t in zip(jvprules, tangents)
        if rule is not None and type(t) is not Zero
    ]
    return out, functools.reduce(add_tangents, terms, _zero_of(out))


def deflinear(primitive: Primitive, transpose_rule: Callable[..., Any]) -> None:
    """A primitive linear in all its operands: its JVP applies it to the
    tangents; ``transpose_rule(ct, **params)`` gives the operands' cotangents."""
    primitive.jvp_rule = functools.partial(_linear_jvp, primitive)
    primitive.transpose_rule = functools.partial(_linear_transpose, transpose_rule, False)


def deflinear2(primitive: Primitive, transpose_rule: Callable[..., Any]) -> None:
    """As :func:`deflinear`, the transpose rule also given the operands
    (``UndefinedPrimal``\\ s): ``transpose_rule(ct, *args, **params)``."""
    primitive.jvp_rule = functools.partial(_linear_jvp, primitive)
    primitive.transpose_rule = functools.partial(_linear_transpose, transpose_rule, True)


def _linear_jvp(primitive: Primitive, primals: list, tangents: list, **params: Any):
    out = primitive.bind(*primals, **params)
    if all(type(t) is Zero for t in tangents):
        zeros = [_zero_of(o) for o in out] if primitive.multiple_results else _zero_of(out)
        return out, zeros
    return out, primitive.bind(*[instantiate(t) for t in tangents], **params)


def _linear_transpose(rule: Callable[..., Any], with_args: bool, ct: Any, *args: Any, **params):
    if type(ct) is Zero:
        return [Zero(tangent_aval(x.aval)) if is_undefined_primal(x) else None for x in args]
    return rule(ct, *args, **params) if with_args else rule(ct, **params)


def defbilinear(
    primitive: Primitive, lhs_rule: Callable[..., Any], rhs_rule: Callable[..., Any]
) -> None:
    """A primitive linear in each of its two operands (a product): JVP by
    the product rule; ``lhs_rule(ct, x, y, **params)`` /
    ``rhs_rule(ct, x, y, **params)`` transpose it in ``x`` / ``y``."""
    defjvp(
        primitive,
        lambda g, x, y, **params: primitive.bind(g, y, **params),
        lambda g, x, y, **params: primitive.bind(x, g, **params),
    )
    primitive.transpose_rule = functools.partial(_bilinear_transpose, lhs_rule, rhs_rule)


def _bilinear_transpose(lhs_rule, rhs_rule, ct: Any, x: Any, y: Any, **params: Any) -> tuple:
    if is_undefined_primal(x):
        if type(ct) is Zero:
            return Zero(tangent_aval(x.aval)), None
        return lhs_rule(ct, x, y, **params), None
    if type(ct) is Zero:
        return None, Zero(tangent_aval(y.aval))
    return None, rhs_rule(ct, x, y, **params)
