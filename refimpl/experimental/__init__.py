"""``jax.experimental``: the parts refimpl provides (``checkify``, for chex;
``io_callback``)."""

from refimpl.callbacks import io_callback
from refimpl.experimental import checkify

__all__ = ["checkify", "io_callback"]
