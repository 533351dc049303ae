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
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = [
    "add_tangents",
    "axis_frame",
    "backward_pass",
    "batch_program",
    "batch_subprogram",
    "batch_trace",
    "closed_program",
    "current_frame",
    "eval_program",
    "fill_zeros",
    "instantiate",
    "jvp_flat",
    "jvp_program",
    "linearize_program",
    "match_aval",
    "memo",
    "permute_program",
    "transpose_program",
    "unroll_scans",
    "vmap",
    "zeros_like_aval",
]


def _unfilled(name: str) -> Callable[..., Any]:
    def missing(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"internal error: rule_context.{name} was never filled")

    return missing


# refimpl.interpreter
eval_program: Callable[..., Any] = _unfilled("eval_program")
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
