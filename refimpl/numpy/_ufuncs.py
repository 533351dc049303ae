"""Elementwise functions with NumPy broadcasting and JAX promotion."""

from __future__ import annotations

from typing import Any

from refimpl import lax
from refimpl.numpy._promote import promote_and_broadcast


def _binary(lax_fn: Any, name: str) -> Any:
    def fn(x: Any, y: Any, /) -> Any:
        return lax_fn(*promote_and_broadcast(name, x, y))

    fn.__name__ = name
    return fn


def _unary(lax_fn: Any, name: str) -> Any:
    def fn(x: Any, /) -> Any:
        (x,) = promote_and_broadcast(name, x)
        return lax_fn(x)

    fn.__name__ = name
    return fn


add = _binary(lax.add, "add")
subtract = _binary(lax.sub, "subtract")
multiply = _binary(lax.mul, "multiply")
sin = _unary(lax.sin, "sin")
negative = _unary(lax.neg, "negative")
