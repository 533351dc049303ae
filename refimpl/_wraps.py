"""The names and metadata a transformed function carries, as JAX 0.10.2.

``vmap(f)``, ``grad(f)``, ``jit(f)``, ``pmap(f)``, ``checkpoint(f)``,
``shard_map(f)``... are each a new callable that JAX dresses as ``f``
(its ``util.wraps``, a ``functools.wraps`` with two differences): the name
of a ``functools.partial`` is its function's (``fun_name``), a callable with
no name is ``<unnamed function>``, a missing docstring reads ``""``, the
wrapped callable's whole ``__dict__`` is copied, and a transformation may
word its own docstring from ``f``'s name (``Gradient of f with respect to
positional argument(s) 0. ...``). So ``vmap(f).__name__ == "f"``,
``inspect.signature(grad(f)) == inspect.signature(f)`` (``__wrapped__``)
and ``jit(vmap(f))`` is listed as ``jit[name=f]``.

refimpl's own messages keep saying which transformation failed
(``pmap(f): ...``): they are worded from ``fun_name(f)`` by each
transformation, never read back from the wrapper's ``__name__``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

UNNAMED = "<unnamed function>"

# The docstrings JAX 0.10.2 gives its transformed functions ({fun}: the
# wrapped function's name, {argnums}: grad's argnums as written).
GRAD_DOC = (
    "Gradient of {fun} with respect to positional argument(s) {argnums}. Takes the same "
    "arguments as {fun} but returns the gradient, which has the same shape as the arguments "
    "at positions {argnums}."
)
VALUE_AND_GRAD_DOC = (
    "Value and gradient of {fun} with respect to positional argument(s) {argnums}. Takes the "
    "same arguments as {fun} but returns a two-element tuple where the first element is the "
    "value of {fun} and the second element is the gradient, which has the same shape as the "
    "arguments at positions {argnums}."
)
JACOBIAN_DOC = (
    "Jacobian of {fun} with respect to positional argument(s) {argnums}. Takes the same "
    "arguments as {fun} but returns the jacobian of the output with respect to the arguments "
    "at positions {argnums}."
)
VMAP_DOC = (
    "Vectorized version of {fun}. Takes similar arguments as {fun} but with additional array "
    "axes over which {fun} is mapped."
)


def fun_name(fun: Any, default: str = UNNAMED) -> str:
    """``fun``'s ``__name__``; a ``functools.partial``'s is its function's,
    and a callable without one (an instance with ``__call__``) is ``default``."""
    name = getattr(fun, "__name__", None)
    if name is not None:
        return name
    if isinstance(fun, functools.partial):
        return fun_name(fun.func, default)
    return default


def ad_doc(template: str, fun: Any, argnums: Any) -> str:
    """A differentiated function's docstring (``GRAD_DOC``, ...) for ``fun``
    and ``argnums`` (a list reads as a tuple, as JAX's)."""
    argnums = tuple(argnums) if isinstance(argnums, list) else argnums
    return template.format(fun=fun_name(fun), argnums=argnums)


def vmap_doc(fun: Any) -> str:
    """``vmap(fun).__doc__``: JAX's sentence, then ``fun``'s own docstring."""
    doc = getattr(fun, "__doc__", None)
    text = VMAP_DOC.format(fun=fun_name(fun))
    return f"{text}\n\nOriginal documentation:\n\n{doc}" if doc else text


def wraps(wrapped: Any, doc: str | None = None) -> Callable[[F], F]:
    """A decorator dressing a wrapper as ``wrapped`` (JAX's ``util.wraps``).

    It copies ``wrapped``'s ``__dict__`` (the user's attributes: ``f.tag``
    reads the same on ``vmap(f)``) and annotations, and sets the name
    (``fun_name``), module, qualified name (the name where ``wrapped`` has
    none), ``__wrapped__`` (so ``inspect.signature`` shows ``wrapped``'s
    parameters) and the docstring: ``doc`` if given, else ``wrapped``'s or
    ``""``. As JAX's, a wrapper whose attributes cannot be set is returned as
    it is, dressed as far as it got.
    """

    def dress(wrapper: F) -> F:
        try:
            name = fun_name(wrapped)
            wrapper.__dict__.update(getattr(wrapped, "__dict__", {}))
            wrapper.__annotations__ = getattr(wrapped, "__annotations__", {})
            wrapper.__name__ = name
            wrapper.__module__ = getattr(wrapped, "__module__", "<unknown module>")
            wrapper.__doc__ = (getattr(wrapped, "__doc__", "") or "") if doc is None else doc
            wrapper.__qualname__ = getattr(wrapped, "__qualname__", name)
            wrapper.__wrapped__ = wrapped  # type: ignore[attr-defined]
        except Exception:  # noqa: BLE001  (JAX's: metadata never stops the transformation)
            pass
        return wrapper

    return dress


def pjit_repr(jitted: Any) -> str:
    """A jitted function's repr, every kind of jit's: JAX 0.10.2's words (its
    C++ jit wrapper's class) with the wrapped callable's own repr inside,
    ``<PjitFunction of <function f at 0x...>>``; ``<PjitFunction>`` when that
    repr raises or ``__wrapped__`` was deleted, as JAX's (a repr must not fail)."""
    fun = getattr(jitted, "__wrapped__", _NO_FUNCTION)
    if fun is _NO_FUNCTION:
        return "<PjitFunction>"
    try:
        return f"<PjitFunction of {fun!r}>"
    except Exception:  # noqa: BLE001 - the user's __repr__, whatever it raises
        return "<PjitFunction>"


_NO_FUNCTION: Any = object()
