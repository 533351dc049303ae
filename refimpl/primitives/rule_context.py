"""What the rules of a primitive holding a sub-program (``jit``'s call) need
from the layer above: evaluating, differentiating and batching that
sub-program.

The primitives sit below the interpreter and the transformations, so they
cannot import them; those modules fill these slots when they are imported
(``refimpl.interpreter``, ``refimpl.transforms.ad``,
``refimpl.transforms.batching``; ``refimpl.transforms.scan`` by the PJRT
lowering, which alone needs it), which happens before any program exists
(importing any refimpl module imports the package). A slot still empty when
a rule runs is an internal error.

It also holds the few primitives that a primitive module's rules apply from
a sibling module above it (the "sibling primitives" below): the modules
``ad_helpers``, ``structural``, ``batch_rules``, ``elementwise``, ``indexing``
and ``reductions`` import one another only in that order, and each fills its
slots here when imported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = [
    "add",
    "add_tangents",
    "axis_frame",
    "backward_pass",
    "batch_program",
    "batch_subprogram",
    "batch_trace",
    "broadcast_in_dim",
    "closed_program",
    "convert_element_type_p",
    "current_frame",
    "dynamic_slice_p",
    "dynamic_update_slice_p",
    "eval_compiled",
    "eval_program",
    "fill_zeros",
    "instantiate",
    "jvp_flat",
    "jvp_program",
    "linearize_program",
    "match_aval",
    "memo",
    "permute_program",
    "reduce_sum",
    "reshape",
    "select",
    "sub",
    "transpose_program",
    "unroll_scans",
    "vmap",
    "zeros_like_aval",
]


def _unfilled(name: str) -> Callable[..., Any]:
    def missing(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"internal error: rule_context.{name} was never filled")

    return missing


class _UnfilledPrimitive:
    """A primitive slot not filled yet: binding it is an internal error."""

    def __init__(self, name: str) -> None:
        self.bind = _unfilled(name)


# refimpl.interpreter
eval_program: Callable[..., Any] = _unfilled("eval_program")
eval_compiled: Callable[..., Any] = _unfilled("eval_compiled")
# refimpl.transforms.ad
jvp_program: Callable[..., Any] = _unfilled("jvp_program")
linearize_program: Callable[..., Any] = _unfilled("linearize_program")
transpose_program: Callable[..., Any] = _unfilled("transpose_program")
permute_program: Callable[..., Any] = _unfilled("permute_program")
instantiate: Callable[..., Any] = _unfilled("instantiate")
jvp_flat: Callable[..., Any] = _unfilled("jvp_flat")
match_aval: Callable[..., Any] = _unfilled("match_aval")
zeros_like_aval: Callable[..., Any] = _unfilled("zeros_like_aval")
add_tangents: Callable[..., Any] = _unfilled("add_tangents")
backward_pass: Callable[..., Any] = _unfilled("backward_pass")
closed_program: Callable[..., Any] = _unfilled("closed_program")
fill_zeros: Callable[..., Any] = _unfilled("fill_zeros")
memo: Callable[..., Any] = _unfilled("memo")
# refimpl.transforms.batching
batch_subprogram: Callable[..., Any] = _unfilled("batch_subprogram")
current_frame: Callable[..., Any] = _unfilled("current_frame")
axis_frame: Callable[..., Any] = _unfilled("axis_frame")  # the AxisFrame class
vmap: Callable[..., Any] = _unfilled("vmap")
batch_program: Callable[..., Any] = _unfilled("batch_program")
batch_trace: Any = _unfilled("batch_trace")  # the BatchTrace class
# refimpl.transforms.scan (imported by the PJRT lowering, the one user)
unroll_scans: Callable[..., Any] = _unfilled("unroll_scans")

# --- sibling primitives ----------------------------------------------------------------
# A lower primitive module's rules that apply a higher one's primitive:
# ad_helpers' tangent arithmetic (zeros and broadcasting, unbroadcast, convert,
# add_tangents), broadcast_in_dim's and pad's transposes (a sum; pad's also a
# difference), pad's batch rule (a select) and the mask rules of rev and
# concatenate (a dynamic slice, a dynamic update). Binders where the rule
# calls the public function, primitives where it binds one directly.
# refimpl.primitives.structural
broadcast_in_dim: Callable[..., Any] = _unfilled("broadcast_in_dim")
reshape: Callable[..., Any] = _unfilled("reshape")
# refimpl.primitives.elementwise
add: Callable[..., Any] = _unfilled("add")
sub: Callable[..., Any] = _unfilled("sub")
select: Callable[..., Any] = _unfilled("select")
convert_element_type_p: Any = _UnfilledPrimitive("convert_element_type_p")
# refimpl.primitives.indexing
dynamic_slice_p: Any = _UnfilledPrimitive("dynamic_slice_p")
dynamic_update_slice_p: Any = _UnfilledPrimitive("dynamic_update_slice_p")
# refimpl.primitives.reductions
reduce_sum: Callable[..., Any] = _unfilled("reduce_sum")
