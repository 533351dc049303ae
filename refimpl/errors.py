"""``jax.errors``: the exceptions refimpl raises that JAX programs catch by name.

A traced value Python needs concretely raises JAX 0.10.2's class for the
use: :class:`TracerBoolConversionError` (``bool`` of a tracer: ``if``,
``and``, ``while``; a :class:`ConcretizationTypeError`),
:class:`TracerIntegerConversionError` (``__index__``: ``range``, ``hex``,
indexing a list) and :class:`TracerArrayConversionError` (``np.asarray``, a
NumPy function of a tracer) -- those two subclass :class:`JAXTypeError`, not
``ConcretizationTypeError``, as in JAX -- and :class:`ConcretizationTypeError`
itself for the rest (``int()``, ``float()``, ``item()``, ``tolist()``, ...).

JAX's other error classes are here with JAX's bases so that programs can name
them (``except jax.errors.JaxRuntimeError``), though refimpl raises none of
them: it has no runtime that fails after a program starts
(``JaxRuntimeError``), no symbolic shapes (``InconclusiveDimensionOperation``),
no jaxpr type checker (``JaxprTypeError``) and no key-reuse checking
(``KeyReuseError``); its errors are the plain ``TypeError``/``IndexError``
where JAX 0.10.2 raises ``JAXTypeError``/``JAXIndexError`` (subclasses of those).
"""

from __future__ import annotations

__all__ = [
    "ConcretizationTypeError",
    "InconclusiveDimensionOperation",
    "JAXIndexError",
    "JAXTypeError",
    "JaxRuntimeError",
    "JaxprTypeError",
    "KeyReuseError",
    "NonConcreteBooleanIndexError",
    "TracerArrayConversionError",
    "TracerBoolConversionError",
    "TracerIntegerConversionError",
    "UnexpectedTracerError",
]


class JAXTypeError(TypeError):
    """JAX's ``TypeError`` subclass for some of its type errors (the base of
    the concretization errors; elsewhere refimpl raises plain ``TypeError``,
    which an ``except TypeError`` catches alike)."""


class ConcretizationTypeError(JAXTypeError):
    """A traced (abstract) value was used where Python needs a concrete one."""


class TracerBoolConversionError(ConcretizationTypeError):
    """``bool()`` of a traced value (``if x > 0:`` under ``jit``)."""


class TracerIntegerConversionError(JAXTypeError):
    """A traced value used as an index (``__index__``: ``range(n)``, ``hex``,
    ``[...][i]``); not a ``ConcretizationTypeError``, as in JAX 0.10.2."""


class TracerArrayConversionError(JAXTypeError):
    """A traced value converted to a NumPy array (``np.asarray(x)``, a NumPy
    function of it); not a ``ConcretizationTypeError``, as in JAX 0.10.2."""


class UnexpectedTracerError(TypeError):
    """A tracer escaped the trace that made it and was used afterwards, or a
    custom rule is asked to differentiate a value it closes over. A
    ``TypeError``, as JAX's (an ``except TypeError`` written for JAX catches it)."""


class NonConcreteBooleanIndexError(IndexError):
    """A boolean mask index is traced: the result's shape would depend on its
    values. An ``IndexError``, as JAX's."""


class JAXIndexError(IndexError):
    """JAX's ``IndexError`` subclass (refimpl raises plain ``IndexError``)."""


class KeyReuseError(JAXTypeError):
    """A PRNG key used twice under ``jax_debug_key_reuse`` (refimpl runs with
    key-reuse checking off, its one value)."""


class JaxRuntimeError(RuntimeError):
    """An error of XLA's runtime while a compiled program runs."""


class JaxprTypeError(TypeError):
    """An ill-typed jaxpr found by JAX's checker (``jax_enable_checks``)."""


class InconclusiveDimensionOperation(Exception):  # noqa: N818  (JAX's name)
    """A comparison of symbolic dimensions JAX cannot decide (shape polymorphism)."""


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


# Not jax.errors' (not in __all__): JAX 0.10.2 defines it in jax._src.core
# (as_jax's jax._src.core stand-in names it there).
class ShardingTypeError(Exception):
    """An operation on arrays sharded over Explicit mesh axes whose result's
    sharding JAX cannot type: a mesh axis on two dimensions, sharded
    contracting dimensions, operands sharded differently (issue 33). An
    ``Exception``, as JAX's (not a ``TypeError``)."""
