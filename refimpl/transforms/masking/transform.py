"""Masking: run a function once on padded arrays, for any logical sizes.

``ri.mask(fun, in_shapes, out_shape)`` follows the old ``jax.mask``::

    masked = ri.mask(lambda x: rnp.cumsum(rnp.sin(x)), ["(n,)"], "(n,)")
    out = masked([x_padded_to_8], dict(n=5))   # out[:5] == cumsum(sin(x[:5]))

How it works:

1. **Specs.** Each input and output gets a shape spec (``refimpl.transforms.masking.shape_spec``):
   dims are polynomials over named sizes, ``_`` is a dim that is not masked.
2. **One trace per padded signature.** The masked function is an internal
   ``jit`` of ``(padded args, sizes)``: the named sizes are *run-time* int32
   scalars, so calls with the same padded shapes reuse one trace and one
   compiled program for every ``n``. That also holds under an outer
   ``ri.jit``, where the internal jit becomes a nested call.
3. **Masking interpreter.** ``fun`` is traced on the padded shapes into a
   Program, which is then re-emitted equation by equation. Every value is a
   :class:`MaskedValue`: its padded value plus its *logical shape*, a tuple
   of Dims. An equation whose operands are all unmasked (every logical dim a
   constant) is emitted unchanged. Otherwise its primitive's mask rule
   (``@prim.def_mask``, written beside the primitive's other rules) gets a
   :class:`MaskContext` and the padded operands and returns the padded
   result and its logical shape. A primitive without a rule is a
   ``NotImplementedError`` naming it.

Semantics (see the report in docs/semantics.md "Masking"):

* The valid region of a value is the first ``d`` entries of each dim, ``d``
  its logical size; everything else (the padding) is unspecified -- inputs'
  padding may hold anything, including NaN and inf.
* A dim whose logical size is a constant is unmasked: it is valid over its
  whole padded extent. Such a dim is compatible with any masked dim of the
  same padded size (``x + iota(x.shape[0])``, ``x + b[None, :]``): the
  unmasked operand's first ``n`` entries are what the unpadded program
  would have used. This is right for values built from the padded size
  that do not depend on it beyond their length (broadcasts, iota, zeros).
  It is NOT right for values that do depend on it, e.g. ``x.mean()`` (which
  divides by the padded ``x.shape[0]``) or ``rev(iota(n))``: use
  :func:`logical_size` for the size as a run-time value there.
* ``fun`` sees padded shapes. Shape parameters of primitives are read
  against them: see each rule (e.g. ``slice``: a limit below the padded size
  counts from the logical end, so ``x[:-1]`` has ``n - 1`` entries; a start
  counts from the front). Indices that the numpy layer resolves against
  ``x.shape`` before any primitive sees them are resolved against the
  padded size: ``x[-1]`` is the last *padded* entry. Use
  ``lax.dynamic_index_in_dim(x, logical_size("n") - 1, 0)`` there.
* The output is padded to whatever shape the traced program produces at the
  padded input shapes; its logical shape must match ``out_shape``.
* Logical sizes are assumed to make every logical dim of every intermediate
  value non-negative (``x[1:]`` needs ``n >= 1``), as the unpadded program
  would require; outside that domain results are unspecified.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, cast

import numpy as np

from refimpl import pytree, tracing
from refimpl.core import Literal, Program, ShapedArray
from refimpl.primitives import elementwise as ew
from refimpl.primitives import ref_context, structural
from refimpl.primitives.base import Primitive
from refimpl.primitives.call import jit_call_p
from refimpl.transforms.jit import Jitted
from refimpl.transforms.masking.shape_spec import Dim, ShapeSpec, parse_spec

Shape = tuple[Dim, ...]
_INDEX = np.dtype(np.int32)  # the dtype of run-time sizes


class MaskedValue(NamedTuple):
    """A padded value (tracer, array or scalar) and its logical shape."""

    value: Any
    logical: Shape


def constant_shape(shape: Sequence[int]) -> Shape:
    """The logical shape of an unmasked value: its padded shape."""
    return tuple(Dim.constant(int(d)) for d in shape)


def is_unmasked(logical: Shape) -> bool:
    return all(d.is_constant for d in logical)


def shape_str(logical: Shape) -> str:
    shown = ", ".join(str(d) for d in logical)
    return f"({shown},)" if len(logical) == 1 else f"({shown})"


def _aval(value: Any) -> ShapedArray:
    return tracing.get_aval(value, "mask", "operand")


# --- run-time sizes -------------------------------------------------------------------


class _Sizes:
    """The named sizes of one masked call, as int32 scalars of the trace.

    Evaluating a Dim emits a few integer equations; results are cached per
    builder so a dim used by many rules is computed once per (sub)program.
    """

    def __init__(self, values: dict[str, Any]) -> None:
        self.values = values
        self._cache: dict[tuple[Any, Dim], Any] = {}

    def value_of(self, dim: Dim) -> Any:
        """``dim`` as a Python int (constant) or a traced int32 scalar."""
        if dim.is_constant:
            return dim.value
        key = (tracing.current_builder(), dim)
        if key not in self._cache:
            self._cache[key] = dim.evaluate_with(self.values.__getitem__, _add, _mul, _floordiv)
        return self._cache[key]


def _int_operand(x: Any) -> Any:
    return np.int32(x) if isinstance(x, int) else x


def _add(a: Any, b: Any) -> Any:
    return ew.add(_int_operand(a), _int_operand(b))


def _mul(a: Any, b: Any) -> Any:
    return ew.mul(_int_operand(a), _int_operand(b))


def _floordiv(a: Any, k: int) -> Any:
    """``floor(a / k)`` for k > 0 (lax.div truncates toward zero)."""
    quotient = ew.div(a, np.int32(k))
    inexact_negative = ew.bitwise_and(
        ew.ne(ew.rem(a, np.int32(k)), np.int32(0)), ew.lt(a, np.int32(0))
    )
    return ew.sub(quotient, ew.convert_element_type(inexact_negative, _INDEX))


# --- the context a mask rule receives --------------------------------------------------


class MaskContext:
    """What a primitive's mask rule gets besides its padded operands.

    A rule ``rule(ctx, *operands, **params)`` returns ``(out, logical)`` (or
    ``(outs, logicals)`` for a multiple-results primitive): padded results
    with exactly the types the primitive gives on the padded operands, and
    their logical shapes.
    """

    def __init__(
        self, primitive: Primitive, operands: Sequence[MaskedValue], sizes: _Sizes
    ) -> None:
        self.primitive = primitive
        self.name = primitive.name
        self.avals_in = [_aval(m.value) for m in operands]
        self.logical_in = [m.logical for m in operands]
        self.sizes = sizes

    # -- dims and run-time values --

    def size(self, dim: Dim) -> Any:
        """``dim`` as an int (constant) or a traced int32 scalar."""
        return self.sizes.value_of(dim)

    def index(self, dim: Dim) -> Any:
        """``dim`` as an int32 scalar operand (a start index, say)."""
        return _int_operand(self.size(dim))

    def valid(self, shape: Sequence[int], axis: int, dim: Dim) -> Any:
        """A bool array of ``shape``: True where the index along ``axis`` is
        below ``dim``; None when that is everywhere (an unmasked dim)."""
        if dim.is_constant and dim.value >= shape[axis]:
            return None
        positions = structural.broadcasted_iota(_INDEX, tuple(shape), axis)
        return ew.lt(positions, _int_operand(self.size(dim)))

    def valid_region(self, shape: Sequence[int], logical: Shape, axes: Sequence[int]) -> Any:
        """True inside the logical extent of every one of ``axes`` (None: all)."""
        keep = None
        for axis in axes:
            along = self.valid(shape, axis, logical[axis])
            if along is not None:
                keep = along if keep is None else ew.bitwise_and(keep, along)
        return keep

    def fill_padding(self, x: Any, logical: Shape, axes: Sequence[int], value: Any) -> Any:
        """``x`` with its padding along ``axes`` replaced by ``value`` (a
        scalar, e.g. a reduction's identity); the weak type is kept."""
        aval = _aval(x)
        keep = self.valid_region(aval.shape, logical, axes)
        if keep is None:
            return x
        fill = tracing.TypedScalar(value, aval.dtype, aval.weak_type)
        return ew.select_n(keep, fill, x)

    def where(self, keep: Any, x: Any, other: Any) -> Any:
        """``x`` where ``keep`` is True, else ``other`` (``keep`` None: ``x``)."""
        return x if keep is None else ew.select_n(keep, other, x)

    def masked(self, dim: Dim) -> bool:
        return not dim.is_constant

    @staticmethod
    def show(logical: Shape) -> str:
        """A logical shape for error messages: ``(n, 3)``."""
        return shape_str(logical)

    # -- combining logical shapes --

    def unify(self, dims: Sequence[Dim], what: str) -> Dim:
        """The common logical size of dims that share one padded size.

        Masked dims must be the same polynomial. An unmasked (constant) dim
        is valid over the whole padded extent, so it agrees with any masked
        one: the masked one wins.
        """
        masked = list(dict.fromkeys(d for d in dims if not d.is_constant))
        if len(masked) > 1:
            shown = " and ".join(str(d) for d in masked)
            raise TypeError(f"mask: {self.name}: {what} have different logical sizes {shown}")
        return masked[0] if masked else dims[0]

    def elementwise_logical(self, operands: Sequence[int] | None = None) -> Shape:
        """The logical shape of an elementwise result: rank-0 operands
        broadcast, the others are unified dim by dim."""
        indices = range(len(self.logical_in)) if operands is None else operands
        shaped = [self.logical_in[i] for i in indices if self.avals_in[i].ndim > 0]
        if not shaped:
            return ()
        return tuple(
            self.unify(
                [logical[axis] for logical in shaped],
                f"the operands' dim {axis} (logical shapes "
                + ", ".join(shape_str(s) for s in shaped)
                + ")",
            )
            for axis in range(len(shaped[0]))
        )

    # -- sub-programs and errors --

    def mask_subprogram(
        self, program: Program, values: Sequence[Any], logicals: Sequence[Shape]
    ) -> tuple[list[Any], list[Shape]]:
        """Emit ``program`` (a scan body, a nested jit) masked into the current
        trace: its inputs' padded values and logical shapes -> its outputs'."""
        operands = [MaskedValue(v, s) for v, s in zip(values, logicals, strict=True)]
        outs = mask_program(program, operands, self.sizes)
        return [o.value for o in outs], [o.logical for o in outs]

    def unsupported(self, message: str) -> NotImplementedError:
        return NotImplementedError(f"mask: {self.name}: {message}")


# --- the masking interpreter ------------------------------------------------------------


def mask_program(
    program: Program, operands: Sequence[MaskedValue], sizes: _Sizes
) -> list[MaskedValue]:
    """Emit ``program``'s equations, masked, into the current trace."""
    env: dict[int, MaskedValue] = {}
    for var, const in zip(program.const_vars, program.consts, strict=True):
        env[var.id] = MaskedValue(const, constant_shape(var.aval.shape))
    for var, operand in zip(program.in_vars, operands, strict=True):
        env[var.id] = operand

    def read(atom: Any) -> MaskedValue:
        if isinstance(atom, Literal):
            scalar = tracing.TypedScalar(atom.value, atom.aval.dtype, atom.aval.weak_type)
            return MaskedValue(scalar, ())
        return env[atom.id]

    for eqn in program.eqns:
        outs = _mask_equation(
            eqn.primitive,
            [read(a) for a in eqn.inputs],
            eqn.params,
            [v.aval for v in eqn.outputs],
            sizes,
        )
        for var, out in zip(eqn.outputs, outs, strict=True):
            env[var.id] = out
    return [read(atom) for atom in program.out_vars]


def _mask_equation(
    primitive: Primitive,
    operands: list[MaskedValue],
    params: dict[str, Any],
    out_avals: list[ShapedArray],
    sizes: _Sizes,
) -> list[MaskedValue]:
    values = [m.value for m in operands]
    if all(is_unmasked(m.logical) for m in operands):
        outs = primitive.bind(*values, **params)
        outs = list(outs) if primitive.multiple_results else [outs]
        return [MaskedValue(o, constant_shape(a.shape)) for o, a in zip(outs, out_avals)]
    if primitive.mask_rule is None:
        masked = next(i for i, m in enumerate(operands) if not is_unmasked(m.logical))
        raise NotImplementedError(
            f"mask: the primitive '{primitive.name}' has no masking rule, and its operand "
            f"{masked} is masked (logical shape {shape_str(operands[masked].logical)}, padded "
            f"{_aval(values[masked]).str_short()})"
        )
    ctx = MaskContext(primitive, operands, sizes)
    result, logical = primitive.mask_rule(ctx, *values, **params)
    if not primitive.multiple_results:
        result, logical = [result], [logical]
    return [
        _checked_result(primitive, out, shape, aval)
        for out, shape, aval in zip(result, logical, out_avals, strict=True)
    ]


def _checked_result(primitive: Primitive, out: Any, logical: Shape, aval: ShapedArray):
    """The rule's result, with the original equation's weak type (a rule may
    use ops whose weak-type rule differs, e.g. dynamic_update_slice)."""
    got = _aval(out)
    consistent = got.shape == aval.shape and got.dtype == aval.dtype
    if not consistent or len(logical) != len(aval.shape):  # pragma: no cover - a rule's bug
        raise AssertionError(
            f"internal error: the mask rule of {primitive.name} gave {got.str_short()} with "
            f"logical shape {shape_str(tuple(logical))}; the equation has {aval.str_short()}"
        )
    if got.weak_type != aval.weak_type:
        out = ew.convert_element_type(out, aval.dtype, weak_type=aval.weak_type)
    return MaskedValue(out, tuple(Dim.of(d) for d in logical))


def _mask_jit_call(ctx: MaskContext, *operands: Any, program: Program, name: str):
    """A nested ``jit`` is inlined: its program is masked like the caller's."""
    return ctx.mask_subprogram(program, operands, ctx.logical_in)


# Registered here rather than in primitives/call.py, which this layer does not own.
jit_call_p.def_mask(_mask_jit_call)


# --- sizes visible to the masked function ---------------------------------------------------

_active_sizes: list[dict[str, Any]] = []


def logical_size(name: str) -> Any:
    """Inside a function being masked: the logical size ``name`` as a traced
    int32 scalar (``rnp.sum(x) / logical_size("n")`` is the masked mean)."""
    if not _active_sizes:
        raise RuntimeError("logical_size: only available while a masked function is traced")
    sizes = _active_sizes[-1]
    if name not in sizes:
        raise KeyError(f"logical_size: no size named {name!r}; the specs use {sorted(sizes)}")
    return sizes[name]


# --- ri.mask -------------------------------------------------------------------------------


def mask(fun: Callable[..., Any], in_shapes: Any, out_shape: Any) -> MaskedFunction:
    """Mask ``fun``: run it once on padded arrays, for any logical sizes (old ``jax.mask``).

    ``masked = mask(fun, in_shapes, out_shape)``; ``masked(args,
    logical_sizes)`` calls ``fun`` on the padded ``args``. The valid region
    of each value is the first ``d`` entries of each dim, ``d`` its logical
    size (the padding of inputs may hold anything, NaN included); the valid
    region of the result equals ``fun`` on the unpadded inputs. Calls with the
    same padded shapes share one trace and one compiled program for every
    logical size. The semantics in full: the module docstring and
    docs/semantics.md, "Masking". (JAX removed ``jax.mask`` in 2021.)

    Args:
        fun: The function to mask; it sees padded shapes.
        in_shapes: One shape spec per argument of ``fun`` (a list; a pytree
            matching the argument, with spec strings as leaves). A spec is a
            tuple of dims: polynomials over named sizes (``"(n, 2*m+1)"``),
            integers, or ``_`` for a dim that is not masked.
        out_shape: The spec of ``fun``'s output, or a pytree of specs
            matching it; it may only use sizes the input specs name.

    Returns:
        A ``MaskedFunction``: ``masked(args, logical_sizes)`` with ``args`` a
        list matching ``in_shapes`` and ``logical_sizes`` a dict of the named
        sizes (ints or int32 scalars); it returns ``fun``'s padded output.

    Raises:
        TypeError: ``fun`` is not callable; at call time, ``args`` does not
            match ``in_shapes``, or the output's logical shape does not
            match ``out_shape``.
        ValueError: a spec does not parse (``ShapeSpecError``), or
            ``out_shape`` names a size no input spec does; at call time, a
            size is missing, negative, or larger than its padded dim.
        NotImplementedError: ``fun`` uses a primitive without a mask rule.

    Example:
        >>> import numpy as np, refimpl as ri, refimpl.numpy as rnp
        >>> masked = ri.mask(lambda x: rnp.cumsum(x), ["(n,)"], "(n,)")
        >>> out = masked([np.array([1, 2, 3, 99, 99], np.float32)], dict(n=3))
        >>> np.asarray(out)[:3]
        array([1., 3., 6.], dtype=float32)
    """
    return MaskedFunction(fun, in_shapes, out_shape)


class MaskedFunction:
    """The result of :func:`mask`. ``jitted`` is the internal per-signature
    cache (its ``trace_count`` counts traces of ``fun``)."""

    def __init__(self, fun: Callable[..., Any], in_shapes: Any, out_shape: Any) -> None:
        if not callable(fun):
            raise TypeError(f"mask: fun must be callable, got {type(fun).__name__}")
        self.fun = fun
        self.__name__ = getattr(fun, "__name__", type(fun).__name__)
        self.in_specs, self.in_tree = _parse_specs(in_shapes, "in_shapes", self.__name__)
        self.out_specs, self.out_tree = _parse_specs(out_shape, "out_shape", self.__name__)
        self.size_names = sorted(set().union(*(s.variables() for s in self.in_specs)))
        unknown = set().union(*(s.variables() for s in self.out_specs)) - set(self.size_names)
        if unknown:
            raise ValueError(
                f"mask({self.__name__}): out_shape uses the sizes {sorted(unknown)} that no "
                f"input spec mentions (inputs use {self.size_names})"
            )
        self.jitted = Jitted(self._padded_call)
        self.jitted.__name__ = f"mask({self.__name__})"

    def __repr__(self) -> str:
        return f"<masked {self.__name__}>"

    def __call__(self, args: Sequence[Any], logical_sizes: dict[str, Any]) -> Any:
        leaves = self._check_args(args)
        sizes = self._check_sizes(logical_sizes)
        self._check_padded_shapes(leaves, sizes)
        return self.jitted(leaves, {k: _as_int32(v) for k, v in sizes.items()})

    # -- checks made before tracing --

    def _check_args(self, args: Any) -> list[Any]:
        if not isinstance(args, (list, tuple)):
            raise TypeError(
                f"mask({self.__name__}): args must be a list of arguments (matching "
                f"in_shapes), got {type(args).__name__}"
            )
        leaves, tree = pytree.tree_flatten(list(args))
        if tree != self.in_tree:
            raise TypeError(
                f"mask({self.__name__}): args do not match in_shapes: args are {tree}, "
                f"in_shapes are {self.in_tree} ({pytree.treedef_difference(tree, self.in_tree)})"
            )
        return leaves

    def _check_sizes(self, logical_sizes: Any) -> dict[str, Any]:
        if not isinstance(logical_sizes, dict):
            raise TypeError(
                f"mask({self.__name__}): logical_sizes must be a dict of name -> int, got "
                f"{type(logical_sizes).__name__}"
            )
        missing = sorted(set(self.size_names) - set(logical_sizes))
        extra = sorted(set(logical_sizes) - set(self.size_names))
        if missing or extra:
            raise ValueError(
                f"mask({self.__name__}): logical_sizes must give exactly the sizes the specs "
                f"use, {self.size_names}; missing {missing}, unknown {extra}"
            )
        for name, value in logical_sizes.items():
            concrete = _concrete_int(value)
            if concrete is None and not _is_traced_int(value):
                raise TypeError(
                    f"mask({self.__name__}): logical size {name!r} must be an integer scalar, "
                    f"got {value!r}"
                )
            if concrete is not None and concrete < 0:
                raise ValueError(
                    f"mask({self.__name__}): logical size {name!r} must be >= 0, got {concrete}"
                )
        return {name: logical_sizes[name] for name in self.size_names}

    def _check_padded_shapes(self, leaves: list[Any], sizes: dict[str, Any]) -> None:
        """Ranks and constant dims always; ``padded >= logical`` when the
        sizes are concrete (under an outer jit they are run-time values)."""
        concrete = {name: _concrete_int(v) for name, v in sizes.items()}
        # with no None among the values, every size is an int
        known = None if None in concrete.values() else cast(dict[str, int], concrete)
        shown_sizes = ", ".join(
            f"{k}={v}" for k, v in sizes.items() if _concrete_int(v) is not None
        )
        for index, (leaf, spec) in enumerate(zip(leaves, self.in_specs, strict=True)):
            shape = tracing.get_aval(leaf, f"mask({self.__name__})", index).shape
            where = f"mask({self.__name__}): argument {index} (padded shape {shape})"
            if len(shape) != len(spec):
                raise TypeError(f"{where} has rank {len(shape)} but its spec {spec.text!r} has "
                                f"rank {len(spec)}")  # fmt: skip
            for axis, (padded, dim) in enumerate(zip(shape, spec, strict=True)):
                if dim is None:
                    continue
                if dim.is_constant and dim.value != padded:
                    raise TypeError(
                        f"{where}: dim {axis} must be {dim.value} as its spec {spec.text!r} "
                        f"says, got {padded}"
                    )
                if known is not None and not dim.is_constant:
                    logical = dim.evaluate(known)
                    if not 0 <= logical <= padded:
                        raise ValueError(
                            f"{where}: dim {axis} is {dim} = {logical} for sizes {shown_sizes} "
                            f"(spec {spec.text!r}), which does not fit in its padded size "
                            f"{padded}"
                        )

    # -- the traced function: padded args and run-time sizes -> padded outputs --

    def _padded_call(self, leaves: list[Any], sizes: dict[str, Any]) -> Any:
        avals = [_aval(leaf) for leaf in leaves]
        logical = [
            tuple(Dim.constant(p) if d is None else d for d, p in zip(spec, aval.shape))
            for spec, aval in zip(self.in_specs, avals, strict=True)
        ]
        out_trees: list[Any] = []

        def flat_fun(*tracers: Any) -> list[Any]:
            args = pytree.tree_unflatten(self.in_tree, tracers)
            # A read is a value the masked program captures (the internal jit
            # passes the ref's current value at each call); a written value
            # would have a logical shape the ref cannot hold.
            message = (
                f"mask({self.__name__}): the function writes a mutable array reference made "
                "outside it, which is not supported"
            )
            with ref_context.refuse_outer(message):
                out = self.fun(*args)
            out_leaves, out_tree = pytree.tree_flatten(out)
            out_trees.append(out_tree)
            return out_leaves

        origins = [f"argument {i} of mask({self.__name__})" for i in range(len(leaves))]
        _active_sizes.append(sizes)
        try:
            program, captured, _ = tracing.trace_to_program(flat_fun, avals, self.__name__, origins)
        finally:
            _active_sizes.pop()
        operands = [MaskedValue(c, constant_shape(c.aval.shape)) for c in captured]
        operands += [MaskedValue(v, s) for v, s in zip(leaves, logical, strict=True)]
        outs = mask_program(program, operands, _Sizes(sizes))
        self._check_outputs(out_trees[0], outs)
        return pytree.tree_unflatten(out_trees[0], [o.value for o in outs])

    def _check_outputs(self, out_tree: Any, outs: list[MaskedValue]) -> None:
        name = f"mask({self.__name__})"
        if out_tree != self.out_tree:
            raise TypeError(
                f"{name}: the output structure {out_tree} does not match out_shape "
                f"{self.out_tree} ({pytree.treedef_difference(out_tree, self.out_tree)})"
            )
        for index, (out, spec) in enumerate(zip(outs, self.out_specs, strict=True)):
            if not _fits_spec(out.logical, spec):
                padded = _aval(out.value).shape
                raise TypeError(
                    f"{name}: output {index} has logical shape {shape_str(out.logical)} "
                    f"(padded {padded}), but out_shape says {spec.text!r}"
                )


def _fits_spec(logical: Shape, spec: ShapeSpec) -> bool:
    """Every dim equals the spec's (``_`` accepts anything).

    A constant dim does not satisfy a masked spec dim: ``x[0]`` of an
    ``(n, 3)`` argument has logical shape ``(3,)``, and reading its first
    ``n`` entries as an ``(n,)`` result would be a silently wrong value.
    """
    if len(logical) != len(spec):
        return False
    return all(want is None or got == want for got, want in zip(logical, spec, strict=True))


def _parse_specs(tree: Any, what: str, fun_name: str) -> tuple[list[ShapeSpec], Any]:
    if what == "in_shapes" and not isinstance(tree, (list, tuple)):
        raise TypeError(
            f"mask({fun_name}): in_shapes must be a list of shape specs, one per argument, "
            f"got {tree!r}"
        )
    if what == "in_shapes":
        tree = list(tree)
    leaves, treedef = pytree.tree_flatten(tree)
    specs = []
    for leaf in leaves:
        if not isinstance(leaf, str):
            raise TypeError(f"mask({fun_name}): {what} must hold shape spec strings, got {leaf!r}")
        try:
            specs.append(parse_spec(leaf))
        except ValueError as e:
            raise type(e)(f"mask({fun_name}): {what}: {e}") from None
    return specs, treedef


def _concrete_int(value: Any) -> int | None:
    """``value`` as an int if it is a concrete integer scalar, else None."""
    if isinstance(value, tracing.Tracer):
        return None
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    array = np.asarray(value)  # a deleted array raises its own error here
    if array.shape != () or array.dtype.kind not in "iu":
        return None
    return int(array)


def _is_traced_int(value: Any) -> bool:
    return (
        isinstance(value, tracing.Tracer)
        and value.aval.shape == ()
        and value.aval.dtype.kind in "iu"
    )


def _as_int32(value: Any) -> Any:
    """A size as a strong int32 scalar, so every call has one signature."""
    if isinstance(value, tracing.Tracer):
        return ew.convert_element_type(value, _INDEX)
    concrete = _concrete_int(value)
    assert concrete is not None  # _check_sizes took only concrete ints and traced ints
    return np.int32(concrete)


__all__ = ["MaskContext", "MaskedFunction", "MaskedValue", "logical_size", "mask"]
