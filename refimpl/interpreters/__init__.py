"""``jax.interpreters``: the rule tables through which a user's primitive
(``jax.extend.core.Primitive``) gets its differentiation (``ad``), batching
(``batching``) and StableHLO lowering (``mlir``) rules, as JAX 0.10.2.

They are refimpl's own rule tables seen through JAX's names: registering a
rule sets the same attribute of the primitive (``jvp_rule``,
``transpose_rule``, ``batch_rule``, ``lowering``) that refimpl's built-in
primitives fill next to their definitions, so the transformations treat a
user's rule like any other (docs/semantics.md 15.4); ``xla.apply_primitive``
is the impl of a primitive defined by its lowering. ``partial_eval`` and
``pxla`` (JAX's tracing and sharded-execution internals) are not provided.
"""

from __future__ import annotations

from refimpl.interpreters import ad, batching, mlir, xla

__all__ = ["ad", "batching", "mlir", "xla"]
