"""What the transformations and the primitives' rules need of mutable
references (``refimpl.ref``): the ``Ref`` type and the checks and helpers that
thread references through ``jit``, ``vmap``, ``grad``, the control-flow
primitives and the custom-rule wrappers.

``refimpl.ref`` is user surface, above the transformations (it builds on
``jit``, ``vmap`` and the ad driver), so they cannot import it; it fills these
slots when imported, which happens before any program exists (importing any
refimpl module imports the package, which imports ``refimpl.ref``). A slot
still empty when used is an internal error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = [
    "Ref",
    "bound_refs",
    "check_jit_refs",
    "check_no_refs",
    "check_not_closed_over",
    "closes_over_any",
    "current_body_threads_refs",
    "jit_arguments",
    "late_inputs",
    "outer_values",
    "refuse_earlier",
    "refuse_outer",
    "vmap_arguments",
    "vmap_write_error",
    "write_back",
]


class _Unfilled:
    """Stands in for the Ref class until ``refimpl.ref`` is imported: no value
    is an instance of it."""


def _unfilled(name: str) -> Callable[..., Any]:
    def missing(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"internal error: ref_context.{name} was never filled")

    return missing


# all filled by refimpl.ref
Ref: Any = _Unfilled  # the Ref class
check_jit_refs: Callable[..., Any] = _unfilled("check_jit_refs")
check_no_refs: Callable[..., Any] = _unfilled("check_no_refs")
check_not_closed_over: Callable[..., Any] = _unfilled("check_not_closed_over")
closes_over_any: Callable[..., Any] = _unfilled("closes_over_any")
current_body_threads_refs: Callable[..., Any] = _unfilled("current_body_threads_refs")
jit_arguments: Callable[..., Any] = _unfilled("jit_arguments")
late_inputs: Callable[..., Any] = _unfilled("late_inputs")
outer_values: Callable[..., Any] = _unfilled("outer_values")
refuse_earlier: Callable[..., Any] = _unfilled("refuse_earlier")
refuse_outer: Callable[..., Any] = _unfilled("refuse_outer")
vmap_arguments: Callable[..., Any] = _unfilled("vmap_arguments")
vmap_write_error: Callable[..., Any] = _unfilled("vmap_write_error")
write_back: Callable[..., Any] = _unfilled("write_back")

# How many custom_vjp calls took Ref arguments inside a staging trace: such a
# call keeps the Ref objects themselves (its fwd and bwd get them, not values),
# so a jit trace during which this grew is valid for those very refs only and
# is not cached for the signature (refimpl.transforms.jit).
bound_refs: list[int] = [0]
