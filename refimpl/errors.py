"""``jax.errors``: the exceptions refimpl raises that JAX programs catch by name.

refimpl raises one :class:`ConcretizationTypeError` where JAX raises its
subclasses ``TracerBoolConversionError`` (``bool`` of a tracer),
``TracerIntegerConversionError`` (``int``/``index``) and
``TracerArrayConversionError`` (``np.asarray`` of a tracer), so those names
are aliases of it: an ``except`` clause written for any of them catches
refimpl's error (and also the other two cases, which JAX would tell apart).
"""

from __future__ import annotations

__all__ = [
    "ConcretizationTypeError",
    "NonConcreteBooleanIndexError",
    "TracerArrayConversionError",
    "TracerBoolConversionError",
    "TracerIntegerConversionError",
    "UnexpectedTracerError",
]


class ConcretizationTypeError(TypeError):
    """A traced (abstract) value was used where Python needs a concrete one."""


class UnexpectedTracerError(TypeError):
    """A tracer escaped the trace that made it and was used afterwards, or a
    custom rule is asked to differentiate a value it closes over. A
    ``TypeError``, as JAX's (an ``except TypeError`` written for JAX catches it)."""


class NonConcreteBooleanIndexError(IndexError):
    """A boolean mask index is traced: the result's shape would depend on its
    values. An ``IndexError``, as JAX's."""


TracerBoolConversionError = ConcretizationTypeError
TracerIntegerConversionError = ConcretizationTypeError
TracerArrayConversionError = ConcretizationTypeError


class ShapeIndexError(IndexError, ValueError):  # noqa: N818  (an IndexError, as JAX's)
    """An operand lacks an axis the operation needs (``scan`` over a scalar,
    ``conv_general_dilated`` of vectors): JAX 0.10.2 fails there with an
    ``IndexError``; a ``ValueError`` too, refimpl's class for it before (issue 29)."""


class NonHashableStaticArgumentError(ValueError, TypeError):  # noqa: N818  (as JAX's)
    """A static argument of ``jit`` or ``pmap`` cannot be hashed: JAX 0.10.2
    raises a ``ValueError`` ("Non-hashable static arguments are not
    supported"); it is a ``TypeError`` too, as the SPEC asks (and refimpl's
    class for it before, issue 29)."""


# Not jax.errors' (not in __all__): here, below the primitives, so that a
# lowering rule in refimpl/primitives can raise it without importing the
# PJRT backend; refimpl.backends.pjrt.lowering exports it.
class LoweringError(NotImplementedError):
    """A Program cannot be lowered (a primitive without a lowering rule)."""
