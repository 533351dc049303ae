"""``jax.extend.core``: JAX's core data structures, as refimpl's.

A refimpl program (:class:`refimpl.core.Program`, what ``make_jaxpr`` gives)
is closed: it holds its constants, and its ``.jaxpr`` is itself, so it stands
for both ``ClosedJaxpr`` and ``Jaxpr`` (``isinstance`` checks of either hold,
as they do in JAX for ``make_jaxpr(f)(x)`` and its ``.jaxpr``). Its equations
(``JaxprEqn``: ``primitive``, ``invars``, ``outvars``, ``params``) hold
``Var`` and ``Literal`` atoms (a literal's value is ``.val``).

``Primitive(name)`` is refimpl's primitive class: ``def_impl`` and
``def_abstract_eval`` define a new operation that ``bind`` applies eagerly and
under ``jit`` (its abstract evaluation gets and returns ``ShapedArray``\\ s).
Without rules, ``bind`` raises JAX's ``NotImplementedError``\\ s ("Evaluation
rule for 'foo' not implemented", "Abstract evaluation for 'foo' not
implemented"). Its differentiation, batching and lowering rules are registered
through ``jax.interpreters`` (refimpl.interpreters). Differences
(docs/semantics.md, "jax.extend"): the impl is given NumPy arrays (JAX: the
values bound, arrays or Python scalars); on the pjrt backend a program holding
a user primitive needs its lowering (``mlir.register_lowering``), else
``LoweringError``, a ``NotImplementedError``, as JAX's missing MLIR rule.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from refimpl.core import Eqn, Literal, Program, Var, check_program
from refimpl.core_api import eval_jaxpr
from refimpl.effects import Effect, Effects, no_effects
from refimpl.extend.core import primitives
from refimpl.primitives.base import Primitive

__all__ = [
    "ClosedJaxpr",
    "Effect",
    "Effects",
    "Jaxpr",
    "JaxprEqn",
    "Literal",
    "Primitive",
    "Var",
    "check_jaxpr",
    "jaxpr_as_fun",
    "no_effects",
    "primitives",
]

# a Program is closed (it holds its constants) and is its own ``.jaxpr``
ClosedJaxpr = Program
Jaxpr = Program
JaxprEqn = Eqn
check_jaxpr = check_program


def jaxpr_as_fun(closed_jaxpr: Program) -> Callable[..., list[Any]]:
    """``jax.extend.core.jaxpr_as_fun``: a function of the program's inputs
    giving the list of its outputs (its constants are the program's own).

    Example:
        >>> import refimpl as ri
        >>> from refimpl.extend.core import jaxpr_as_fun
        >>> jaxpr_as_fun(ri.make_jaxpr(lambda x: x * 2.0)(1.0))(3.0)
        [Array(6., dtype=float32, weak_type=True)]
    """

    def fun(*args: Any) -> list[Any]:
        return eval_jaxpr(closed_jaxpr, closed_jaxpr.consts, *args)

    return fun
