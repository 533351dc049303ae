"""Arrays of an extended dtype (typed PRNG keys) in the public array functions.

JAX's typed key arrays (``jax.random.key(0)``, dtype ``key<fry>``) are arrays
whose elements are whole keys: ``jnp.reshape``, ``jnp.concatenate``,
``lax.slice_in_dim``, ``lax.select``, ``jnp.zeros_like`` and the other
structural operations take them and return key arrays, while arithmetic refuses
them. refimpl's key array (``refimpl.random.PRNGKeyArray``) holds its
``uint32[*shape, 2]`` key data instead of being an array of its own dtype, so
each structural function has a *physical rule* for it: the same operation on
the key data, with the trailing key-word axis kept (a shape gains ``2``, an
axis counted from the end is counted from the logical end).

The package that defines such arrays (``refimpl.random``) registers its array
and dtype types and one handler; ``refimpl.numpy`` and ``refimpl.lax`` wrap the
functions that can see them (:data:`NUMPY_FUNCTIONS`, :data:`LAX_FUNCTIONS`)
with :func:`aware`. A call without such an argument runs the function as it
is; a call with one goes to the handler, which applies the physical rule or
raises the error JAX raises for that function.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

__all__ = ["LAX_FUNCTIONS", "NUMPY_FUNCTIONS", "aware", "register"]

# handler(qualified name, function, args, kwargs) -> the result
Handler = Callable[[str, Callable[..., Any], tuple, dict], Any]

# extended array type and extended dtype type -> handler
_types: dict[type, Handler] = {}

# the public functions that see extended arrays (their physical rules live with
# the array type; a function not listed here refuses them as any non-array)
NUMPY_FUNCTIONS = (
    "reshape", "ravel", "tile", "concatenate", "stack", "broadcast_to", "expand_dims",
    "broadcast_arrays", "append", "array", "asarray", "empty_like", "zeros_like",
    "ones_like", "full_like", "empty", "zeros", "ones", "full", "result_type",
    "transpose", "squeeze", "swapaxes", "moveaxis", "flip", "where", "equal", "not_equal",
    "astype", "shape", "ndim", "size",
)  # fmt: skip
LAX_FUNCTIONS = (
    "slice_in_dim", "dynamic_slice_in_dim", "dynamic_update_slice_in_dim", "index_in_dim",
    "dynamic_index_in_dim", "select", "select_n", "slice", "dynamic_slice",
    "dynamic_update_slice", "transpose", "reshape", "squeeze", "rev", "concatenate",
    "broadcast_in_dim", "broadcast", "expand_dims", "convert_element_type",
)  # fmt: skip


def register(array_type: type, dtype_type: type, handler: Handler) -> None:
    """Route calls of the wrapped functions with an ``array_type`` argument (or
    a ``dtype_type`` dtype argument) to ``handler``."""
    _types[array_type] = handler
    _types[dtype_type] = handler


def _handler_of(args: tuple, kwargs: dict) -> Handler | None:
    types = _types
    for value in args:
        kind = type(value)
        if kind in types:
            return types[kind]
        if kind is list or kind is tuple:  # concatenate's and stack's sequences
            for item in value:
                if type(item) in types:
                    return types[type(item)]
    for value in kwargs.values():
        if type(value) in types:
            return types[type(value)]
    return None


def aware(qualname: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """``function``, with calls that see an extended array or dtype going to
    its handler (``qualname`` is ``"numpy.reshape"``, ``"lax.slice"``, ...)."""
    if getattr(function, "_extended_aware", False):
        return function

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if _types:
            handler = _handler_of(args, kwargs)
            if handler is not None:
                return handler(qualname, function, args, kwargs)
        return function(*args, **kwargs)

    wrapper._extended_aware = True  # type: ignore[attr-defined]
    return wrapper
