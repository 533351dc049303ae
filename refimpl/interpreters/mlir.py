"""``jax.interpreters.mlir``: a primitive's StableHLO lowering, JAX 0.10.2's way.

``register_lowering(p, rule, platform=None)`` sets ``p.lowering``, the slot
refimpl's pjrt backend reads for every primitive (refimpl/backends/pjrt/lowering.py).
The rule JAX's users write for their own primitives, ``mlir.lower_fun(fn,
multiple_results=...)``, lowers a JAX function: refimpl traces ``fn`` on the
equation's operand types (and params) and emits the traced program in place,
so it runs on the pjrt backend as on JAX. A hand-written rule is called with
a context holding only ``avals_in`` and ``avals_out``; using anything else of
JAX's ``LoweringRuleContext`` (its module context, tokens, ...) raises a
``NotImplementedError`` naming the primitive (refimpl's emitter is not
JAX's). The reference backend never lowers: it runs the primitive's impl.

Not provided: JAX's MLIR emission helpers (``ir``, ``ir_constant``,
``aval_to_ir_type``, ``LoweringRuleContext``, ``lower_jaxpr_to_module`` ...).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from refimpl import tracing
from refimpl.errors import LoweringError
from refimpl.primitives.base import Primitive

__all__ = ["lower_fun", "register_lowering"]

# JAX's platform names a rule may be registered for ("gpu" is both GPU platforms)
_PLATFORM_ALIASES = {"gpu": ("cuda", "rocm")}


class LoweredFun:
    """The rule ``lower_fun(fun, multiple_results)`` gives: ``fun`` traced on
    the operands' types (params as keyword arguments) and emitted in place."""

    def __init__(self, fun: Callable[..., Any], multiple_results: bool) -> None:
        self.fun = fun
        self.multiple_results = multiple_results

    def __call__(self, ctx: Any, *operands: Any, **params: Any) -> list[Any]:
        ctx = getattr(ctx, "_refimpl_ctx", ctx)  # (called from a hand-written rule)

        def flat(*args: Any) -> list[Any]:
            out = self.fun(*args, **params)
            return list(out) if self.multiple_results else [out]

        name = getattr(self.fun, "__name__", "lower_fun")
        program, _, _ = tracing.trace_to_program(
            flat, ctx.avals_in, f"lower_fun({name})", [name] * len(ctx.avals_in)
        )
        return ctx.lower_program(program, operands)


def lower_fun(fun: Callable[..., Any], multiple_results: bool = True) -> LoweredFun:
    """A lowering rule made from a JAX function of the primitive's operands
    (and params): ``register_lowering(p, lower_fun(f, multiple_results=False))``."""
    return LoweredFun(fun, multiple_results)


class _JaxRuleContext:
    """What a hand-written rule sees: the equation's types. Any other of JAX's
    ``LoweringRuleContext`` attributes is refimpl's NotImplementedError."""

    def __init__(self, ctx: Any, primitive: str) -> None:
        self._refimpl_ctx = ctx
        self._primitive = primitive
        self.avals_in = list(ctx.avals_in)
        self.avals_out = list(ctx.avals_out)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise LoweringError(
            f"the MLIR lowering rule of the primitive '{self._primitive}' reads "
            f"ctx.{name}: refimpl's pjrt backend emits StableHLO with its own emitter, "
            "not JAX's LoweringRuleContext; register mlir.lower_fun(f, multiple_results=...) "
            "(a JAX function refimpl traces), or run on backend='ref' (which uses the impl)"
        )


class UserLowering:
    """``p.lowering`` once ``register_lowering`` gave ``p`` a rule: the rule
    registered for the platform being lowered for (or for all platforms),
    else the primitive's own lowering (a built-in primitive's)."""

    def __init__(self, primitive: Primitive, builtin: Callable[..., Any] | None) -> None:
        self.primitive = primitive
        self.builtin = builtin
        self.rules: dict[str | None, Callable[..., Any]] = {}

    def __call__(self, ctx: Any, *operands: Any, **params: Any) -> Any:
        rule = self._rule_for(tuple(ctx.module.lowering_platforms()))
        if rule is self.builtin:
            return rule(ctx, *operands, **params)
        if isinstance(rule, LoweredFun):
            return rule(ctx, *operands, **params)
        return rule(_JaxRuleContext(ctx, self.primitive.name), *operands, **params)

    def _rule_for(self, platforms: Sequence[str]) -> Callable[..., Any]:
        chosen = {id(r): r for r in (self.rules.get(p, self.rules.get(None)) for p in platforms)}
        if len(chosen) > 1:
            raise LoweringError(
                f"the primitive '{self.primitive.name}' has different lowering rules for the "
                f"platforms {list(platforms)}: one module for several of them is not modelled"
            )
        rule = next(iter(chosen.values()), None) or self.builtin
        if rule is None:  # JAX's error for a primitive with no rule for this platform
            raise LoweringError(
                f"MLIR translation rule for primitive '{self.primitive.name}' not found "
                f"for platform {platforms[0]}"
            )
        return rule


def register_lowering(
    prim: Primitive,
    rule: Callable[..., Any],
    platform: str | None = None,
    inline: bool = True,
    cacheable: bool = True,
) -> None:
    """Give ``prim`` the lowering ``rule`` (for ``platform``, or every one).
    ``inline`` and ``cacheable`` (how JAX emits the rule's function) change
    nothing here: refimpl emits every rule in place."""
    lowering = prim.lowering
    if not isinstance(lowering, UserLowering):
        lowering = UserLowering(prim, lowering)
        prim.lowering = lowering
    for name in _PLATFORM_ALIASES.get(platform, (platform,)) if platform else (None,):
        lowering.rules[name] = rule
