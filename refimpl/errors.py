"""``jax.errors``: the exceptions refimpl raises that JAX programs catch by name.

refimpl raises one :class:`ConcretizationTypeError` where JAX raises its
subclasses ``TracerBoolConversionError`` (``bool`` of a tracer),
``TracerIntegerConversionError`` (``int``/``index``) and
``TracerArrayConversionError`` (``np.asarray`` of a tracer), so those names
are aliases of it: an ``except`` clause written for any of them catches
refimpl's error (and also the other two cases, which JAX would tell apart).
"""

from __future__ import annotations

from refimpl.tracing import ConcretizationTypeError, UnexpectedTracerError

__all__ = [
    "ConcretizationTypeError",
    "TracerArrayConversionError",
    "TracerBoolConversionError",
    "TracerIntegerConversionError",
    "UnexpectedTracerError",
]

TracerBoolConversionError = ConcretizationTypeError
TracerIntegerConversionError = ConcretizationTypeError
TracerArrayConversionError = ConcretizationTypeError
