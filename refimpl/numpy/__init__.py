"""``refimpl.numpy``: a jax.numpy-like layer over the primitives."""

from refimpl.numpy._promote import is_operand
from refimpl.numpy._ufuncs import *  # noqa: F403
from refimpl.numpy._ufuncs import add, multiply, negative, sin, subtract

__all__ = ["is_operand", "add", "multiply", "negative", "sin", "subtract"]
