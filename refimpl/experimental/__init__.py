"""``jax.experimental``: the parts refimpl provides (``checkify``, for chex)."""

from refimpl.experimental import checkify

__all__ = ["checkify"]
