"""``jax.extend.core.primitives``: the ``<name>_p`` primitive objects, the very
ones refimpl's programs hold (``eqn.primitive is primitives.sin_p``), as
``jax.lax.<name>_p`` (refimpl.lax._primitive_objects)."""

from __future__ import annotations

from typing import Any

from refimpl.lax._primitive_objects import primitive_object


def __getattr__(name: str) -> Any:
    try:
        return primitive_object(name)
    except AttributeError as e:
        raise AttributeError(
            f"module 'jax.extend.core.primitives' has no attribute {name!r} ({e})"
        ) from None
