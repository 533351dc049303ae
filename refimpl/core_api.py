"""``jax.core``: the public names of JAX's core that libraries use.

``Tracer`` is the base of every refimpl tracer (jit/staging, ``jvp``/``grad``,
``vmap``), so ``isinstance(x, jax.core.Tracer)`` tells a traced value from a
concrete one as in JAX; ``ShapedArray`` is the abstract value of an array
(``AbstractValue`` names the same type); ``Trace`` is the base of the
transformations' traces. Jaxpr evaluation (``eval_jaxpr``) is left out:
refimpl's programs are :class:`refimpl.core.Program`, run with
``refimpl.make_jaxpr``'s result.
"""

from __future__ import annotations

from refimpl.contexts import ensure_compile_time_eval
from refimpl.core import ShapedArray
from refimpl.tracing import Trace, Tracer

__all__ = ["AbstractValue", "ShapedArray", "Trace", "Tracer", "ensure_compile_time_eval"]

AbstractValue = ShapedArray
