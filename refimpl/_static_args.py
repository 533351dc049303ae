"""JAX 0.10.2's check of a jitted function's static arguments, for the public
functions that are such a jit in JAX (``jnp.cumsum``, ``jnp.linalg.norm``,
``lax.fft``, ``nn.log_softmax``, ...): a static argument must be hashable,
since JAX keys its compilation cache by it, so a 0-d NumPy array or a list
given for one is JAX's ``ValueError`` there, while the functions that are no
jit (``jnp.sum``, ``jnp.take``, ``lax.cumsum``) read them as values. The
names come from ``<function>._jit_info.static_argnames`` of JAX 0.10.2."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any


def hashable_statics(label: str, static: tuple[str, ...]) -> Callable[[Callable], Callable]:
    """Decorator: the function (``label``, e.g. ``numpy.cumsum``) refuses an
    unhashable value of a parameter in ``static``, with JAX's ValueError."""

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        params = list(inspect.signature(function).parameters.values())
        names = set(static)
        positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        positions = [
            (i, p.name) for i, p in enumerate(params) if p.name in names and p.kind in positional
        ]

        def check(what: str, value: Any) -> None:
            try:
                hash(value)
            except TypeError as error:
                raise ValueError(
                    "Non-hashable static arguments are not supported. An error occurred while "
                    f"trying to hash an object of type {type(value)}, {value}. The error was:\n"
                    f"TypeError: {error}\n({label}'s {what!r}, static in JAX 0.10.2's jit of "
                    "the function)"
                ) from None

        @functools.wraps(function)
        def checked(*args: Any, **kwargs: Any) -> Any:
            for index, what in positions:
                if index < len(args):
                    check(what, args[index])
            if kwargs:
                for what in names.intersection(kwargs):
                    check(what, kwargs[what])
            return function(*args, **kwargs)

        return checked

    return decorate
