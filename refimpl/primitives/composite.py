"""``lax.composite``: a function named as one operation, computed by its decomposition.

``outs = composite[name=n, version=v, attributes=..., program={...}](args)``
means: evaluate the sub-program (the decomposition traced on the arguments'
types, with the call's keyword arguments as static attributes). As JAX
0.10.2's composite:

* it is evaluated, staged by ``jit`` and ``eval_shape``d like any call;
* it has no differentiation rule: ``jvp``/``grad``/``vjp``/``linearize`` raise
  JAX's ``ValueError`` ("JVP rule for composite not implemented ..."), which
  points to ``custom_jvp``;
* it has no batching rule (``vmap`` raises ``NotImplementedError``);
* its decomposition may not close over a traced value (an argument of an
  enclosing ``jit``, ``vmap``...): JAX's ``UnexpectedTracerError``.

It lowers as JAX's: ``stablehlo.composite "name" %args {composite_attributes
= {...}, decomposition = @name, version = v : i32}`` with the decomposition a
private function ``@name`` (a backend may match the name; XLA's CPU plugin
inlines the decomposition). The attributes become MLIR attributes as JAX
converts them: a Python int an ``i64``, a float an ``f64``, a bool ``i1``, a
NumPy scalar its own type, an array ``dense<...>``, a dtype a type, a string a
string, a list/tuple an array, a dict a dictionary; a ``None`` attribute is
left out; any other value is JAX's ``TypeError`` when lowered.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from refimpl import pytree, tracing
from refimpl.core import Program, ShapedArray, avals_str
from refimpl.errors import UnexpectedTracerError
from refimpl.primitives import rule_context
from refimpl.primitives.base import EAGER_BODIES, Primitive

__all__ = ["composite"]

composite_p = Primitive("composite", multiple_results=True)
EAGER_BODIES[composite_p] = "program"  # evaluated eagerly by binding, as JAX's

_NO_JVP = (
    "JVP rule for composite not implemented. You can use `jax.custom_jvp` to add support. "
    "See https://docs.jax.dev/en/latest/_autosummary/jax.custom_jvp.html"
)


@composite_p.def_abstract_eval
def _abstract_eval(*avals: ShapedArray, program: Program, **_: Any) -> list[ShapedArray]:
    if [a.strip_weak() for a in avals] != [a.strip_weak() for a in program.in_avals]:
        raise TypeError(
            f"composite: called with ({avals_str(avals)}) but its decomposition takes "
            f"({avals_str(program.in_avals)})"
        )
    return program.out_avals


@composite_p.def_impl
def _impl(*args: np.ndarray, program: Program, **_: Any) -> list[Any]:
    return rule_context.eval_program(program, args)


@composite_p.def_lowering
def _lowering(
    ctx: Any,
    *args: Any,
    program: Program,
    name: str,
    version: int,
    attributes: tuple[tuple[str, _Attribute], ...],
) -> list[Any]:
    mlir = {k: _ir_attribute(ctx, a.value) for k, a in attributes if a.value is not None}
    return ctx.composite(program, name, args, mlir, version)


def _ir_attribute(ctx: Any, value: Any) -> Any:
    """``value`` as an MLIR attribute, by JAX's rules (its ``mlir.ir_attribute``)."""
    ir = ctx.ir
    if hasattr(value, "aval") and hasattr(value, "__array__"):
        # a concrete refimpl array (an eager call's attribute: on pjrt the
        # eager composite is lowered, where JAX's eager call runs the impl)
        value = np.asarray(value)
    if isinstance(value, bool | int | float | complex) and not isinstance(value, np.generic):
        # a Python scalar is a NumPy scalar of JAX's type for it (int: int64)
        return _ir_scalar(ctx, np.array(value, _PYTHON_SCALAR_DTYPES[type(value)]))
    if isinstance(value, str | bytes):
        return ir.StringAttr.get(value)
    if isinstance(value, np.ndarray | np.generic):
        if value.size > 0 and 0 in np.asarray(value).strides:
            raise ValueError("NumPy arrays with zero strides are not supported as MLIR attributes")
        if np.isscalar(value):
            return _ir_scalar(ctx, value)
        element = ctx.tensor_type((), value.dtype).element_type
        return ir.DenseElementsAttr.get(
            np.ascontiguousarray(value), type=element, shape=value.shape
        )
    if isinstance(value, np.dtype):
        return ir.TypeAttr.get(ctx.tensor_type((), value).element_type)
    if isinstance(value, dict):
        return ir.DictAttr.get({k: _ir_attribute(ctx, v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return ir.ArrayAttr.get([_ir_attribute(ctx, v) for v in value])
    raise TypeError(f"No attribute handler defined for type: {type(value)}")


# JAX's types for Python scalars, whatever enable_x64 says
_PYTHON_SCALAR_DTYPES = {bool: np.bool_, int: np.int64, float: np.float64, complex: np.complex128}


def _ir_scalar(ctx: Any, value: Any) -> Any:
    """A NumPy scalar (or a rank-0 array made from a Python one) as an integer
    or float attribute of its own type; JAX has none for complex numbers."""
    element = ctx.tensor_type((), value.dtype).element_type
    if isinstance(element, ctx.ir.IntegerType):
        return ctx.ir.IntegerAttr.get(element, int(value))
    if isinstance(element, ctx.ir.FloatType):
        return ctx.ir.FloatAttr.get(element, float(value))
    raise TypeError(f"Unsupported scalar attribute type: {type(value)}")


@composite_p.def_jvp
def _jvp(primals: list, tangents: list, **_: Any) -> Any:
    raise ValueError(_NO_JVP)


def _linearize(primals: list, tangents: list, **_: Any) -> Any:
    raise ValueError(_NO_JVP)


composite_p.linearize_rule = _linearize


class _Attribute:
    """A static attribute as an equation parameter: the value itself (an array
    copied), equal to another by type and content (an array by its dtype,
    shape and values: ``k=1`` and ``k=True`` differ, as their MLIR types do);
    printed as the value."""

    __slots__ = ("_key", "value")

    def __init__(self, value: Any) -> None:
        self.value = np.array(value) if isinstance(value, np.ndarray) else value
        self._key = _content_key(self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Attribute) and self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        return repr(self.value)


def _content_key(value: Any) -> Any:
    """A hashable key of ``value``'s type and content."""
    if isinstance(value, np.ndarray | np.generic):
        return (type(value).__name__, value.dtype.str, np.shape(value), np.asarray(value).tobytes())
    if isinstance(value, list | tuple):
        return (type(value).__name__, tuple(_content_key(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((k, _content_key(v)) for k, v in value.items()))
    try:
        hash(value)
    except TypeError:
        return ("object", id(value))  # the _Attribute keeps the value, so its id stays
    return (type(value), value)


def composite(decomposition: Callable[..., Any], name: str, version: int = 0) -> Callable[..., Any]:
    """``jax.lax.composite``: ``decomposition`` as one operation named ``name``.

    The returned function takes array arguments (a pytree of them) and static
    keyword attributes, passed on to ``decomposition``."""

    @functools.wraps(decomposition)
    def call(*args: Any, **attributes: Any) -> Any:
        flat, in_tree = pytree.tree_flatten(args)
        avals = [tracing.get_aval(x, name, i) for i, x in enumerate(flat)]
        if any(isinstance(v, tracing.Tracer) for v in attributes.values()):
            # an attribute is static: a traced one is refused up front, as in
            # JAX 0.10.2, whether or not the decomposition reads it
            raise UnexpectedTracerError(
                f"Found a JAX Tracer as an attribute in the decomposition for the composite "
                f"op '{name}'. This means that the decomposition function closes over a value "
                "that is involved in a JAX transformation. Any values that aren't explicitly "
                "known at compile time must be explicitly passed as arguments to the composite."
                "\n\nNote: If you are passing jax arrays as attributes, use numpy arrays instead."
            )
        out_tree: list[Any] = []

        def flat_decomposition(*tracers: Any) -> list[Any]:
            out = decomposition(*pytree.tree_unflatten(in_tree, tracers), **attributes)
            leaves, tree = pytree.tree_flatten(out)
            out_tree.append(tree)
            return leaves

        program, captured, _ = tracing.trace_to_program(
            flat_decomposition, avals, name, [f"composite {name!r}"] * len(avals)
        )
        if captured:
            raise UnexpectedTracerError(
                f"Found a JAX Tracer as a constant in the decomposition for the composite op "
                f"'{name}'. This means that the decomposition function closes over a value "
                "that is involved in a JAX transformation. Any values that aren't explicitly "
                "known at compile time must be explicitly passed as arguments to the composite."
                "\n\nNote: If you are passing jax arrays as attributes, use numpy arrays instead."
            )
        outs = composite_p.bind(
            *flat,
            program=program,
            name=name,
            version=version,
            attributes=tuple((k, _Attribute(v)) for k, v in sorted(attributes.items())),
        )
        return pytree.tree_unflatten(out_tree[0], outs)

    return call
