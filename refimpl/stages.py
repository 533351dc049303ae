"""``refimpl.stages``: the types of the ahead-of-time stages, as ``jax.stages``.

A program written for JAX checks or annotates the stages with these names:
``isinstance(jax.jit(f), jax.stages.Wrapped)``,
``isinstance(f.lower(x), jax.stages.Lowered)``. The classes are the
abstract types of refimpl's own stage objects:

* :class:`Wrapped`: a function with ``trace`` and ``lower`` (a ``jit``
  function; a ``pmap`` function has no ``trace`` and is none, as in JAX
  0.10.2), checked by its methods as JAX's runtime-checkable protocol;
* :class:`Traced`: ``jit(f).trace(...)``;
* :class:`Lowered`, :class:`Compiled`: ``lower(...)`` and its ``compile()``,
  of ``jit`` (the PJRT backend's classes, which register themselves) and
  of ``pmap``;
* :class:`ArgInfo`: one argument leaf of ``Lowered.args_info``;
* :data:`CompilerOptions`: the type of ``compile(compiler_options=...)``.
"""

from __future__ import annotations

import abc
from typing import Any, Protocol, runtime_checkable

from refimpl.transforms import jit as _jit
from refimpl.transforms import pmap as _pmap

__all__ = ["ArgInfo", "Compiled", "CompilerOptions", "Lowered", "Traced", "Wrapped"]

#: ``compile(compiler_options=...)``: XLA option names to values (JAX's alias).
CompilerOptions = dict[str, str | bool]


@runtime_checkable
class Wrapped(Protocol):
    """A function staged out by ``jit``: callable, with ``trace`` and ``lower``."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...

    def trace(self, *args: Any, **kwargs: Any) -> Any: ...

    def lower(self, *args: Any, **kwargs: Any) -> Any: ...


class Traced(abc.ABC):  # noqa: B024 -- a type to check against, no methods of its own
    """A traced ``jit`` function (``jit(f).trace(...)``)."""


class Lowered(abc.ABC):  # noqa: B024
    """A lowered function (``lower(...)`` of ``jit`` or ``pmap``)."""


class Compiled(abc.ABC):  # noqa: B024
    """A compiled function (``Lowered.compile()``)."""


class ArgInfo(abc.ABC):  # noqa: B024
    """One argument leaf of a lowered function: its type, and whether donated."""


Traced.register(_jit.Traced)
Lowered.register(_pmap.PmapLowered)
Compiled.register(_pmap.PmapCompiled)
ArgInfo.register(_pmap.PmapArgInfo)
