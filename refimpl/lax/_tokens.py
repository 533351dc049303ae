"""``lax.create_token`` and ``lax.after_all``: ordering tokens.

JAX threads a token value through effectful operations (infeed, outfeed,
collectives with explicit ordering) so that XLA keeps their order. refimpl
has none of those operations and runs a program's effects in program order
anyway, so a token carries nothing: :class:`Token` is a pytree with no
leaves. It passes through ``jit`` (arguments and results: a new token object
comes out, as in JAX), loop carries, ``grad``'s auxiliary outputs and ``vmap``
without being traced, and a function that only builds one still runs.
"""

from __future__ import annotations

from typing import Any

from refimpl import pytree

__all__ = ["Token", "after_all", "create_token"]


class Token:
    """An ordering token (``jax.core.Token``): no value, no shape, no dtype."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "Token()"


# no children: flattening drops a token, unflattening makes a fresh one
pytree.register_pytree_node(Token, lambda token: ((), None), lambda aux, children: Token())


def create_token(*_: Any) -> Token:
    """A new token; its arguments are ignored (JAX's old data-dependence form)."""
    return Token()


def after_all(*operands: Any) -> Token:
    """A token ordered after every token in ``operands`` (which must all be tokens)."""
    if not all(isinstance(operand, Token) for operand in operands):
        raise TypeError("Arguments to after_all must be tokens")
    return Token()
