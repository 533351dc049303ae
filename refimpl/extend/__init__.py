"""``jax.extend``: the parts of JAX's extension API that refimpl can honestly
provide (docs/api.md, "jax.extend").

- :mod:`refimpl.extend.core`: ``Primitive`` (refimpl's own primitive class:
  ``def_impl``/``def_abstract_eval``/``bind``), ``Jaxpr``/``ClosedJaxpr``
  (both :class:`refimpl.core.Program`, which is closed), ``JaxprEqn``,
  ``Var``, ``Literal``, ``jaxpr_as_fun``, ``check_jaxpr`` and ``primitives``
  (the ``<name>_p`` objects of ``jax.lax``).
- :mod:`refimpl.extend.backend`: ``get_backend()`` (its ``platform``,
  ``devices()``, ``device_count()``), ``get_default_device()``, ``backends()``.
- :mod:`refimpl.extend.random`: ``threefry_2x32`` (the hash) and
  ``threefry2x32_p``.

``linear_util``, ``source_info_util``, ``random.define_prng_impl``, ``mlir``
and ``ffi`` are JAX internals or XLA lowerings refimpl has no counterpart for:
under ``refimpl.as_jax`` they are ``ModuleNotFoundError``/``AttributeError``.
"""

from __future__ import annotations

from refimpl.extend import backend, core, random

__all__ = ["backend", "core", "random"]
