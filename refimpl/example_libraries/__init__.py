"""``jax.example_libraries``: ``stax`` (neural network layers) and ``optimizers``."""

from refimpl.example_libraries import optimizers, stax

__all__ = ["optimizers", "stax"]
