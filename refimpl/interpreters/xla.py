"""``jax.interpreters.xla``: ``apply_primitive``, the impl users give a
primitive that is defined by its lowering
(``p.def_impl(functools.partial(xla.apply_primitive, p))``), as JAX 0.10.2.

``canonicalize_dtype_handlers`` and ``Backend`` (XLA's client class) are not
provided.
"""

from __future__ import annotations

from typing import Any

from refimpl.errors import LoweringError
from refimpl.interpreters import mlir
from refimpl.primitives.base import Primitive

__all__ = ["apply_primitive"]


def apply_primitive(prim: Primitive, *args: Any, **params: Any) -> Any:
    """``prim`` applied to concrete ``args`` through its lowering, as JAX
    compiles and runs it: a ``mlir.lower_fun`` rule's function evaluated on
    them (a rule registered for every platform, else the CPU one). A
    primitive of refimpl's own is simply bound. Without a lowering to run,
    JAX's ``NotImplementedError`` (a hand-written MLIR rule cannot be run by
    the reference interpreter: a ``LoweringError`` naming the primitive)."""
    lowering = prim.lowering
    if lowering is not None and not isinstance(lowering, mlir.UserLowering):
        return prim.bind(*args, **params)  # refimpl's own primitive: its own impl
    rules = lowering.rules if lowering is not None else {}
    rule = rules.get(None, rules.get("cpu"))
    if rule is None:  # (JAX's class exactly: the user's eager call sees it)
        raise NotImplementedError(
            f"MLIR translation rule for primitive '{prim.name}' not found for platform cpu"
        )
    if not isinstance(rule, mlir.LoweredFun):
        raise LoweringError(
            f"xla.apply_primitive: the lowering of '{prim.name}' is a hand-written MLIR rule, "
            "which refimpl cannot run outside the pjrt backend's jit; register "
            "mlir.lower_fun(f, multiple_results=...) or give the primitive an impl"
        )
    out = rule.fun(*args, **params)
    return list(out) if rule.multiple_results else out
