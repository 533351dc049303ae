"""``vmap``: batching a function over a new leading (or any) axis.

How it works: ``vmap`` is a transformation on the trace stack (docs section
11). ``vmap(f)(*args)`` pushes a :class:`BatchTrace` and calls ``f`` with a
:class:`BatchTracer` for each mapped argument (holding all members, stacked
along the mapped axis; its ``aval`` is one member's). A primitive applied to
batch tracers goes to ``BatchTrace.process_primitive``, which applies the
primitive's ``batch_rule`` to the stacked values; the rule computes with
``bind`` one level down (eagerly, or into the enclosing jit/transformation).
Unmapped arguments and whatever does not depend on a mapped argument never
become batch tracers, so they stay concrete (Python may branch on them).
Because rules only ``bind`` other primitives, the result composes with every
other transformation (``jit(vmap(f))``, ``vmap(vmap(f))``, ``grad(vmap(f))``,
``vmap(grad(f))``) and shows up in ``ri.make_program`` as an ordinary Program.

Primitives holding sub-Programs (scan, while, cond, jit, custom rules)
batch them into new Programs with :func:`batch_subprogram`, an interpreter
(:func:`batch_program`) applying the same rules equation by equation.

Batch rule convention
    ``batch_rule(args, dims, **params) -> (out, out_dim)``; for
    ``multiple_results`` primitives lists of outs and out dims. Each dim is
    the position of the batch axis in that value, or ``None`` (not batched:
    the same value for every member). Rules move a batch axis only when the
    primitive needs it somewhere specific, as JAX's do, and return ``None``
    for an output that does not depend on the member.

Named axes
    ``vmap(..., axis_name="i")`` binds ``"i"`` (to this BatchTrace) while
    ``f`` runs. A collective over ``"i"`` (``refimpl.primitives.collectives``)
    then acts across the batch: its rule reads the :class:`AxisFrame` of the
    trace applying it (:func:`current_frame`).
"""

from __future__ import annotations

import contextlib
import inspect
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from refimpl import _wraps, dtypes, pytree, tracing
from refimpl.config import config
from refimpl.core import Literal, Program
from refimpl.primitives import batch_rules, collectives, elementwise, ref_context, rule_context
from refimpl.traceback_util import api_boundary

# what the rules and this driver share (refimpl.primitives.batch_rules), under
# the names the transformations use
axis_size_of = batch_rules.axis_size_of
bdim_to = batch_rules.bdim_to
broadcast_batch = batch_rules.broadcast_batch
elementwise_batch_rule = batch_rules.elementwise_batch_rule
loop_batch_rule = batch_rules.loop_batch_rule
moveaxis = batch_rules.moveaxis
ndim_of = batch_rules.ndim_of
shape_of = batch_rules.shape_of
shift_dims = batch_rules.shift_dims

# --- the axis being batched --------------------------------------------------------------


@dataclass(frozen=True)
class AxisFrame:
    """One vmapped axis: its name (``None`` when unnamed) and size;
    ``device``: a pmap's devices run in lock step on the reference backend
    (told apart by this, not by name: an unnamed vmap and an unnamed pmap
    share the name ``None``)."""

    name: Any
    size: int
    device: bool = False


class _Frames(threading.local):
    def __init__(self) -> None:
        self.stack: list[AxisFrame] = []


_frames = _Frames()


def current_frame() -> AxisFrame:
    """The axis whose rule is running right now (the rules of collectives use it)."""
    if not _frames.stack:  # pragma: no cover - rules run only under a BatchTrace's frame
        raise RuntimeError("internal error: a batch rule ran outside vmap's batching")
    return _frames.stack[-1]


def _uses_axis(eqn: Any, name: Any) -> bool:
    """Whether ``eqn`` (or a sub-program of it) has a collective over axis ``name``:
    then its rule must run even with no batched operand."""
    return name is not None and _uses_axis_params(eqn.primitive, eqn.params, name)


def _uses_axis_params(primitive: Any, params: dict[str, Any], name: Any) -> bool:
    if name is None:
        return False
    if getattr(primitive, "axis_dependent", False) and primitive.uses_axis(name, params):
        return True
    for value in params.values():
        subs = value if isinstance(value, tuple) else (value,)
        for sub in subs:
            if isinstance(sub, Program) and any(_uses_axis(e, name) for e in sub.eqns):
                return True
    return False


def batch_program(
    program: Program,
    values: Sequence[Any],
    dims: Sequence[int | None],
    frame: AxisFrame,
) -> tuple[list[Any], list[int | None]]:
    """Emit ``program`` batched into the current trace (or run it eagerly).

    ``values[i]`` is input ``i`` with its batch axis at ``dims[i]`` (``None``:
    unbatched). Returns the outputs and their batch dims.
    """
    env: dict[int, tuple[Any, int | None]] = {}
    for var, const in zip(program.const_vars, program.consts, strict=True):
        # with its variable's weak type (a NumPy constant is strong)
        env[var.id] = (tracing._const_operand(const, var.aval), None)
    for var, value, dim in zip(program.in_vars, values, dims, strict=True):
        env[var.id] = (value, dim)

    def read(atom: Any) -> tuple[Any, int | None]:
        if isinstance(atom, Literal):
            return tracing.TypedScalar(atom.value, atom.aval.dtype, atom.aval.weak_type), None
        return env[atom.id]

    _frames.stack.append(frame)
    try:
        for eqn in program.eqns:
            read_in = [read(a) for a in eqn.inputs]
            args = [v for v, _ in read_in]
            in_dims = [d for _, d in read_in]
            prim = eqn.primitive
            if all(d is None for d in in_dims) and not _uses_axis(eqn, frame.name):
                outs = prim.bind(*args, **eqn.params)
                outs = list(outs) if prim.multiple_results else [outs]
                # a rule's out_dims is one int | None for a single result
                out_dims: list[Any] = [None] * len(outs)
            else:
                if prim.batch_rule is None:
                    raise NotImplementedError(
                        f"vmap: batching rule for primitive '{prim.name}' not implemented"
                    )
                outs, out_dims = prim.batch_rule(args, in_dims, **eqn.params)
                if not prim.multiple_results:
                    outs, out_dims = [outs], [out_dims]
            for var, out, dim in zip(eqn.outputs, outs, out_dims, strict=True):
                env[var.id] = (out, dim)
        results = [read(a) for a in program.out_vars]
    finally:
        _frames.stack.pop()
    return [v for v, _ in results], [d for _, d in results]


def batch_subprogram(
    program: Program,
    in_batched: Sequence[bool],
    frame: AxisFrame,
    force_out: Sequence[bool] | None = None,
    name: str = "vmap",
) -> tuple[Program, list[bool]]:
    """``program`` batched as a Program of its own (for scan/while/cond/jit bodies).

    Batched inputs (``in_batched``) gain a leading axis of ``frame.size``;
    outputs that are batched (or forced by ``force_out``) carry it at axis 0.
    Returns the new Program and which outputs are batched.

    Memoized per Program (as the derived programs of ``ad``): a nested jit
    called again under the same vmap gets the same batched Program, so its
    backend's cache (a pjrt executable) is found again instead of the
    program being traced and compiled anew on every call (JAX caches its
    batched jaxprs likewise).
    """
    key = (
        "batch",
        tuple(in_batched),
        frame,
        None if force_out is None else tuple(force_out),
        name,
        config.enable_x64,
    )
    try:
        hash(key)
    except TypeError:  # an unhashable axis name: not memoized
        return _batch_subprogram(program, in_batched, frame, force_out, name)
    cache = program.__dict__.setdefault("_batch_cache", {})
    found = cache.get(key)
    if found is None:
        found = cache[key] = _batch_subprogram(program, in_batched, frame, force_out, name)
    new_program, out_batched = found
    return new_program, list(out_batched)


def _batch_subprogram(
    program: Program,
    in_batched: Sequence[bool],
    frame: AxisFrame,
    force_out: Sequence[bool] | None,
    name: str,
) -> tuple[Program, list[bool]]:
    avals = [
        a.update(shape=(frame.size, *a.shape)) if b else a
        for a, b in zip(program.in_avals, in_batched, strict=True)
    ]
    out_batched: list[bool] = []

    def fun(*tracers: Any) -> list[Any]:
        dims = [0 if b else None for b in in_batched]
        outs, out_dims = batch_program(program, tracers, dims, frame)
        forced = force_out or [False] * len(outs)
        results = []
        for out, dim, force in zip(outs, out_dims, forced, strict=True):
            if dim is None and not force:
                results.append(out)
                out_batched.append(False)
            else:
                results.append(bdim_to(out, dim, frame.size, 0))
                out_batched.append(True)
        return results

    origins = [f"input {i} of a batched {name}" for i in range(len(avals))]
    new_program, captured, _ = tracing.trace_to_program(fun, avals, name, origins)
    assert not captured, "internal error: a batched sub-program captured an outer value"
    return new_program, out_batched


# --- the batching trace -------------------------------------------------------------------


class BatchTracer(tracing.Tracer):
    """A batched value inside ``vmap``: ``val`` holds every member, stacked
    along axis ``bdim``; ``aval`` is one member's type."""

    __slots__ = ("_trace", "val", "bdim", "aval", "__weakref__")
    _trace: BatchTrace

    def __init__(self, trace: BatchTrace, val: Any, bdim: int) -> None:
        self._trace = trace
        if trace._tracer_refs is not None:
            trace._watch(self)
        self.val = val
        self.bdim = bdim
        aval = tracing.get_aval(val, trace.name, 0)
        self.aval = aval.update(shape=aval.shape[:bdim] + aval.shape[bdim + 1 :])

    @property
    def origin(self) -> str:
        return f"a value batched by {self._trace.name}"

    def _without_host_data(self, passes_through: bool = False) -> BatchTracer:
        # vmap's NumPy argument, untouched, made a refimpl array (its dtype
        # canonical: float64 -> float32 without x64), as JAX's jitted
        # jax.numpy functions return (numpy/_jit_boundary.py); a function
        # that is no jit in JAX hands it back under vmap, levels below too
        val = self.val
        if passes_through:
            return self
        if isinstance(val, tracing.Tracer):
            new = val._without_host_data()
        elif isinstance(val, np.ndarray):
            new = as_array(val)
        else:
            return self
        return self if new is val else BatchTracer(self._trace, new, self.bdim)


class BatchTrace(tracing.Trace):
    """The trace of one ``vmap``: a primitive applied to its tracers goes
    through the primitive's ``batch_rule`` (on the underlying stacked
    values, which the rule binds one level down). Values of lower levels are
    unbatched; a primitive none of whose operands is batched is bound on
    them unchanged -- except collectives over this trace's axis name."""

    jax_trace_name = "BatchTrace"
    jax_tracer_name = "BatchTracer"

    def __init__(self, frame: AxisFrame, name: str = "vmap") -> None:
        self.frame = frame
        self.name = name
        self._watch_tracers()

    def unpack(self, x: Any) -> tuple[Any, int | None]:
        if isinstance(x, BatchTracer) and x._trace is self:
            return x.val, x.bdim
        return x, None

    def process_primitive(self, primitive: Any, args: Any, params: dict[str, Any]) -> list[Any]:
        vals: list[Any] = []
        dims: list[int | None] = []
        for x in args:
            if isinstance(x, BatchTracer) and x._trace is self:
                vals.append(x.val)
                dims.append(x.bdim)
            else:
                vals.append(x)
                dims.append(None)
        frame = self.frame
        if all(d is None for d in dims) and not _uses_axis_params(primitive, params, frame.name):
            outs = primitive.bind(*vals, **params)
            return list(outs) if primitive.multiple_results else [outs]
        if primitive.batch_rule is None:
            raise NotImplementedError(
                f"vmap: batching rule for primitive '{primitive.name}' not implemented"
            )
        _frames.stack.append(frame)
        try:
            outs, out_dims = primitive.batch_rule(vals, dims, **params)
        finally:
            _frames.stack.pop()
        if not primitive.multiple_results:
            outs, out_dims = [outs], [out_dims]
        return [
            out if dim is None else BatchTracer(self, out, dim)
            for out, dim in zip(outs, out_dims, strict=True)
        ]


# --- vmap ---------------------------------------------------------------------------------


def _check_axes_types(in_axes: Any, out_axes: Any) -> Any:
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)  # lists and tuples are interchangeable here, as in JAX
    if not (in_axes is None or type(in_axes) in (int, tuple) or _is_spec(in_axes)):
        raise TypeError(
            "vmap in_axes must be an int, None, or a tuple of entries corresponding to the "
            f"positional arguments passed to the function, but got {in_axes}."
        )
    for label, tree in (("in_axes", in_axes), ("out_axes", out_axes)):
        leaves = pytree.tree_leaves(tree, is_leaf=lambda x: x is None)
        if not all(leaf is None or type(leaf) is int or _is_spec(leaf) for leaf in leaves):
            raise TypeError(
                f"vmap {label} must be an int, None, or (nested) container with those types "
                f"as leaves, but got {tree}."
            )
    return in_axes


def _flatten_axes(label: str, axes: Any, tree: Any, what: str) -> list[int | None]:
    """``axes`` (a tree prefix of ``tree``, None leaves allowed) -> one entry per leaf."""
    axes_leaves, axes_def = pytree.tree_flatten(axes, is_leaf=lambda x: x is None)
    try:
        subtrees = axes_def.flatten_up_to(tree)
    except ValueError as e:
        value_def = pytree.tree_structure(tree)
        raise ValueError(
            f"vmap {label} specification must be a tree prefix of the corresponding value; "
            f"got specification {axes} (structure {axes_def}) for {what} (structure "
            f"{value_def}): {e}"
        ) from None
    flat: list[int | None] = []
    for axis, sub in zip(axes_leaves, subtrees, strict=True):
        flat.extend([axis] * pytree.tree_structure(sub).num_leaves)
    return flat


def _arg_names(fun: Callable[..., Any], n_args: int) -> list[str] | None:
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        return None
    names = []
    for p in params:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
    return names


def _describe_leaf(x: Any) -> str:
    """``float32[3,2]``: JAX spells the dtype out in this message."""
    try:
        aval = tracing.get_aval(x, "vmap", 0)
    except (TypeError, OverflowError):
        return "unknown"
    text = f"{aval.dtype.name}[{','.join(str(d) for d in aval.shape)}]"
    return f"Ref{{{text}}}" if type(aval).__name__ == "AbstractRef" else text


def _leaf_labels(fun: Callable[..., Any], args: tuple, kwargs: dict) -> list[str]:
    """``argument x[0]['w'] of type f32[3]`` for every leaf, as JAX's error lists them."""
    names = _arg_names(fun, len(args))
    labels = []
    for i, arg in enumerate(args):
        for path, leaf in pytree.flatten_with_path_strings(arg)[0]:
            if names is not None and i < len(names):
                where = f"argument {names[i]}{path}"
            else:
                where = f"args[{i}]{path}"
            labels.append(f"{where} of type {_describe_leaf(leaf)}")
    for key in sorted(kwargs):
        for path, leaf in pytree.flatten_with_path_strings(kwargs[key])[0]:
            labels.append(f"kwargs[{key!r}]{path} of type {_describe_leaf(leaf)}")
    return labels


def _inconsistent_sizes(
    sizes: list[int | None], axes: list[int | None], labels: list[str], axis_size: int | None
) -> ValueError:
    counts = Counter(s for s in sizes if s is not None).most_common()
    lines = ["vmap got inconsistent sizes for array axes to be mapped:\n"]
    if axis_size is not None:
        lines.append(f"  * the `axis_size` argument was {axis_size};\n")
    for rank, (size, count) in enumerate(counts):
        first = sizes.index(size)
        where = f"axis {axes[first]} of {labels[first]}"
        if count == 1:
            lines.append(f"  * one axis had size {size}: {where};\n")
        elif rank == 0:
            lines.append(f"  * most axes ({count} of them) had size {size}, e.g. {where};\n")
        else:
            lines.append(f"  * some axes ({count} of them) had size {size}, e.g. {where};\n")
    return ValueError("".join(lines).rstrip(";\n"))


def vmap(
    fun: Callable[..., Any],
    in_axes: Any = 0,
    out_axes: Any = 0,
    axis_name: Any = None,
    axis_size: int | None = None,
    spmd_axis_name: Any = None,
) -> Callable[..., Any]:
    """Vectorize ``fun`` over an axis of its arguments (``jax.vmap``'s conventions).

    ``in_axes``: an int, None, or a tuple (lists count as tuples) that is a
    tree prefix of the positional arguments; keyword arguments are mapped
    over axis 0. Negative axes count from the end. ``None`` arguments are
    passed through untouched (they need not be arrays). ``out_axes``: an int,
    None, or a tree prefix of the output; an unbatched output with an int
    out axis is broadcast, a batched one with ``None`` is a ValueError.
    ``axis_name`` names the axis for collectives; ``axis_size`` gives the
    size when no argument is mapped (and must agree with them otherwise).

    Meaning: member ``b`` of each result is ``fun`` applied to member ``b``
    of every mapped argument (``np.take(arg, b, axis)``) and to the
    unmapped ones as they are. It is computed in one pass, not a Python
    loop: ``fun`` is traced once with batch tracers, and each primitive's
    batch rule computes on the stacked values (a nested ``jit``, ``scan``
    or ``cond`` stays one equation with a batched sub-program). Values that
    do not depend on a mapped argument stay concrete, so Python may branch
    on them; ``bool()`` of a batched value is a ``ConcretizationTypeError``.
    Collectives over ``axis_name`` (``lax.psum``, ``pmean``,
    ``all_gather``, ``ppermute``, ``axis_index``) act across the members.
    Differences from JAX: ``ppermute`` accepts a partial permutation
    (members nobody sends to get zeros), and outputs are always arrays (an
    unmapped input returned as it is comes back as an array).

    Args:
        fun: The function to vectorize.
        in_axes: Which axis of each positional argument to map (int, None,
            or a tree prefix of the arguments).
        out_axes: Where the mapped axis goes in each output (int, None, or a
            tree prefix of the output).
        axis_name: A hashable name of the mapped axis, for collectives.
        axis_size: The axis size; needed when no argument is mapped.
        spmd_axis_name: Mesh axis names the mapped axis is sharded over (a
            name or a tuple of names). Taken as JAX takes it; refimpl places
            no sharding constraints inside ``fun``, and values do not depend
            on it.

    Returns:
        A function with ``fun``'s signature whose results have the mapped
        axis at ``out_axes``.

    Raises:
        TypeError: ``fun`` is not callable; ``in_axes``/``out_axes`` are not
            ints, None or trees of them; ``axis_size`` is not an int.
        ValueError: At call time: ``in_axes`` does not match the arguments
            (a tuple of another length, not a tree prefix); a mapped
            argument has no such axis; the mapped axes disagree in size
            (``vmap got inconsistent sizes for array axes to be mapped``);
            nothing is mapped and there is no ``axis_size``; an output
            batched with an ``out_axes`` of None.

    Example:
        >>> import numpy as np, refimpl as ri, refimpl.numpy as rnp
        >>> from refimpl import lax
        >>> xs = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)
        >>> ri.vmap(rnp.dot, in_axes=(0, None))(xs, np.array([1.0, 1.0], np.float32))
        Array([ 3.,  7., 11.], dtype=float32)
        >>> ri.vmap(lambda x: x - lax.pmean(x, "i"), axis_name="i")(xs[:, 0])
        Array([-2.,  0.,  2.], dtype=float32)
    """
    if not callable(fun):
        raise TypeError(f"vmap: fun must be callable, got {type(fun).__name__}")
    tracing.check_transform_fun(fun, "vmap")
    in_axes = _check_axes_types(in_axes, out_axes)
    if axis_size is not None and (
        isinstance(axis_size, bool) or not isinstance(axis_size, (int, np.integer))
    ):
        raise TypeError(f"vmap: axis_size must be an int or None, got {axis_size!r}")
    try:
        hash(spmd_axis_name)
    except TypeError:  # TypeError as JAX 0.10.2 (it hashes the names)
        raise TypeError(
            f"vmap: spmd_axis_name must be a hashable name or a tuple of names, got "
            f"{spmd_axis_name!r}"
        ) from None
    name = getattr(fun, "__name__", type(fun).__name__)

    @api_boundary
    def vmap_f(*args: Any, **kwargs: Any) -> Any:
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError(
                "vmap in_axes must be an int, None, or a tuple of entries corresponding to "
                "the positional arguments passed to the function, but got "
                f"len(in_axes)={len(in_axes)}, len(args)={len(args)}"
            )
        if _vmappables and _has_vmappable((args, kwargs)):
            return _vmap_vmappables(
                fun, name, args, kwargs, in_axes, out_axes, axis_size, axis_name
            )
        leaves, in_tree = pytree.tree_flatten((args, kwargs))
        axes = _flatten_axes("in_axes", in_axes, args, "the positional arguments")
        axes += [0] * (len(leaves) - len(axes))
        _check_mapped_types(leaves, axes)
        size = _mapped_size(fun, args, kwargs, leaves, axes, axis_size)
        return _vmap_call(fun, name, leaves, in_tree, axes, size, out_axes, axis_name)

    # dressed as fun (vmap(f).__name__ == "f"), with JAX's docstring of a
    # vmapped function (the original one after it)
    return _wraps.wraps(fun, doc=_wraps.vmap_doc(fun))(vmap_f)


# --- custom vmappable types (jax.interpreters.batching.register_vmappable) ---------------

# data type -> (spec type, axis-size type, to_elt, from_elt)
_vmappables: dict[type, tuple[type, type, Callable[..., Any], Callable[..., Any]]] = {}


def register_vmappable(
    data_type: type,
    spec_type: type,
    axis_size_type: type,
    to_elt: Callable[..., Any],
    from_elt: Callable[..., Any],
    make_iota: Callable[..., Any] | None,
) -> None:
    """Make ``data_type`` a vmappable type, as JAX's: ``vmap`` takes such a
    value whole (not its pytree leaves), with an instance of ``spec_type`` as
    its ``in_axes``/``out_axes`` entry. On the way in, ``to_elt(cont, size,
    value, spec)`` gives the per-member value, where ``cont(array, axis)`` maps
    ``array`` along ``axis`` (None: unmapped); on the way out, ``from_elt(cont,
    size, elt, spec)`` gives the batched value, where ``cont(size, elt, axis)``
    puts ``elt``'s batch axis at ``axis``. ``make_iota`` (sizes of
    ``axis_size_type``) is accepted and not used: refimpl's sizes are ints."""
    _vmappables[data_type] = (spec_type, axis_size_type, to_elt, from_elt)


def unregister_vmappable(data_type: type) -> None:
    """Undo :func:`register_vmappable` (``KeyError`` for a type not registered)."""
    del _vmappables[data_type]


def _is_spec(x: Any) -> bool:
    return any(type(x) is spec for spec, *_ in _vmappables.values())


def _is_vmappable(x: Any) -> bool:
    return type(x) in _vmappables


def _has_vmappable(tree: Any) -> bool:
    return any(_is_vmappable(x) for x in pytree.tree_leaves(tree, is_leaf=_is_vmappable))


def _spec_axes(label: str, axes: Any, tree: Any) -> list[Any]:
    """``axes`` (a tree prefix of ``tree``, whose vmappable values are leaves;
    spec instances and None are leaves of ``axes``) -> one entry per leaf."""
    is_axis_leaf = lambda x: x is None or _is_spec(x)  # noqa: E731
    axes_leaves, axes_def = pytree.tree_flatten(axes, is_leaf=is_axis_leaf)
    try:
        subtrees = axes_def.flatten_up_to(tree)
    except ValueError as e:
        raise ValueError(
            f"vmap {label} specification must be a tree prefix of the corresponding value; "
            f"got specification {axes}: {e}"
        ) from None
    flat: list[Any] = []
    for axis, sub in zip(axes_leaves, subtrees, strict=True):
        flat.extend([axis] * len(pytree.tree_leaves(sub, is_leaf=_is_vmappable)))
    return flat


def _vmap_vmappables(
    fun: Callable[..., Any],
    name: str,
    args: tuple,
    kwargs: dict,
    in_axes: Any,
    out_axes: Any,
    axis_size: int | None,
    axis_name: Any,
) -> Any:
    """vmap of a call with vmappable values among its arguments: each is
    taken apart by its ``to_elt`` and the results put back by ``from_elt``
    (JAX's protocol), the arrays through the ordinary batch trace."""
    leaves, in_tree = pytree.tree_flatten((args, kwargs), is_leaf=_is_vmappable)
    axes = _spec_axes("in_axes", in_axes, args)
    axes += [0] * (len(leaves) - len(axes))
    plain = [(x, a) for x, a in zip(leaves, axes, strict=True) if not _is_vmappable(x)]
    if axis_size is None:
        raise ValueError(
            f"vmap({name}): a vmappable argument of a registered type needs axis_size "
            "(its size is not read from the value)"
        )
    size = _mapped_size(fun, args, kwargs, [x for x, _ in plain], [a for _, a in plain], axis_size)
    trace = BatchTrace(AxisFrame(axis_name, size, False), f"vmap({name})")

    def to_elt(x: Any, axis: Any) -> Any:
        if axis is None:
            return x
        if _is_vmappable(x):
            return _vmappables[type(x)][2](to_elt, size, x, axis)
        ndim = len(np.shape(x))
        return BatchTracer(trace, x, axis % ndim if ndim else axis)

    def from_elt(n: int, x: Any, axis: Any) -> Any:
        if _is_vmappable(x):
            return _vmappables[type(x)][3](from_elt, n, x, axis)
        value, dim = trace.unpack(x)
        if axis is None:
            if dim is not None:
                raise ValueError(f"vmap({name}): an output batched on axis {dim} has out_axes None")
            return as_array(value)
        rank = tracing.get_aval(value, "vmap", 0).ndim + (1 if dim is None else 0)
        return as_array(bdim_to(value, dim, n, axis % rank))

    with contextlib.ExitStack() as stack:
        stack.enter_context(collectives.bound_axis(axis_name, size, trace))
        stack.enter_context(tracing.new_main(trace))
        call_args, call_kwargs = pytree.tree_unflatten(
            in_tree, [to_elt(x, a) for x, a in zip(leaves, axes, strict=True)]
        )
        out = fun(*call_args, **call_kwargs)
        out_leaves, out_tree = pytree.tree_flatten(out, is_leaf=_is_vmappable)
        flat_out_axes = _spec_axes("out_axes", out_axes, out)
        results = [from_elt(size, x, a) for x, a in zip(out_leaves, flat_out_axes, strict=True)]
    return out_tree.unflatten(results)


def _check_mapped_types(leaves: list[Any], axes: list[int | None]) -> None:
    """vmap checks a mapped leaf's type before its rank, as JAX: a mapped
    string is no array (pmap, as JAX's, reads it as unmapped instead)."""
    for leaf, axis in zip(leaves, axes, strict=True):
        if axis is not None and not (
            hasattr(leaf, "shape")
            or hasattr(leaf, "__jax_array__")
            or isinstance(leaf, (bool, int, float, complex))
        ):
            raise TypeError(f"Argument {leaf!r} of type {type(leaf)} is not a valid JAX type")


def _mapped_size(
    fun: Callable[..., Any],
    args: tuple,
    kwargs: dict,
    leaves: list[Any],
    axes: list[int | None],
    axis_size: int | None,
) -> int:
    """The common size of the mapped axes (the argument checks happen here,
    before anything is traced). Normalizes ``axes`` in place."""
    sizes: list[int | None] = []
    for i, (leaf, axis) in enumerate(zip(leaves, axes, strict=True)):
        if axis is None:
            sizes.append(None)
            continue
        shape = np.shape(leaf) if not hasattr(leaf, "shape") else tuple(leaf.shape)
        if not -len(shape) <= axis < len(shape):
            min_rank = axis + 1 if axis >= 0 else -axis
            raise ValueError(
                f"vmap was requested to map its argument along axis {axis}, which implies "
                f"that its rank should be at least {min_rank}, but is only {len(shape)} "
                f"(its shape is {shape})"
            )
        axis = axes[i] = axis % len(shape)
        sizes.append(shape[axis])
    found = {s for s in sizes if s is not None}
    if axis_size is not None:
        found.add(int(axis_size))
    if len(found) == 1:
        return found.pop()
    if not found:
        if not leaves:
            raise ValueError(
                "vmap wrapped function must be passed at least one argument containing an "
                f"array or axis_size must be specified, got empty *args={args} and "
                f"**kwargs={kwargs}"
            )
        raise ValueError(
            "vmap must have at least one non-None value in in_axes or axis_size must be specified"
        )
    labels = _leaf_labels(fun, args, kwargs)
    raise _inconsistent_sizes(sizes, axes, labels, axis_size)


def _vmap_call(
    fun: Callable[..., Any],
    name: str,
    leaves: list[Any],
    in_tree: pytree.PyTreeDef,
    axes: list[int | None],
    size: int,
    out_axes: Any,
    axis_name: Any,
    device: bool = False,
) -> Any:
    """Run ``fun`` under a new :class:`BatchTrace` on the mapped leaves
    (``device``: the members are a pmap's devices, see :class:`AxisFrame`)."""

    trace = BatchTrace(AxisFrame(axis_name, size, device), f"vmap({name})")
    outs, out_dims, ref_outs, out_tree = _run_batched(
        trace, fun, name, leaves, in_tree, axes, size, axis_name
    )
    if config._values["check_tracer_leaks"]:
        # after _run_batched returned: the tracers its frame held are gone
        tracing.check_no_leaks(trace)
    given = None if device else leaves  # (pmap's members hand nothing back)
    return _vmap_outputs(name, outs, out_dims, ref_outs, out_tree, out_axes, size, given)


def _run_batched(
    trace: BatchTrace,
    fun: Callable[..., Any],
    name: str,
    leaves: list[Any],
    in_tree: pytree.PyTreeDef,
    axes: list[int | None],
    size: int,
    axis_name: Any,
) -> tuple[list[Any], list[int | None], dict[int, Any], pytree.PyTreeDef]:
    """Call ``fun`` on the mapped leaves under ``trace``: its flat outputs
    unpacked (values of the level below, with their batch axes), the mapped
    Ref arguments it returned (by output index), and its output tree."""
    with contextlib.ExitStack() as stack:
        stack.enter_context(collectives.bound_axis(axis_name, size, trace))
        stack.enter_context(tracing.new_main(trace))
        ref_axes: dict[int, int] = {}  # id of a mapped Ref argument -> its axis
        if any(type(leaf).__name__ == "Ref" for leaf in leaves):
            args, kwargs = pytree.tree_unflatten(in_tree, leaves)
            paths = [label.split(" of type ")[0].removeprefix("argument ")
                     for label in _leaf_labels(fun, args, kwargs)]  # fmt: skip
            mapped = stack.enter_context(
                ref_context.vmap_arguments(trace, leaves, axes, paths, name)
            )
            ref_axes = {id(r): axis for r, axis in mapped}
        call_leaves = [
            leaf if axis is None or id(leaf) in ref_axes else BatchTracer(trace, leaf, axis)
            for leaf, axis in zip(leaves, axes, strict=True)
        ]
        call_args, call_kwargs = pytree.tree_unflatten(in_tree, call_leaves)
        out = fun(*call_args, **call_kwargs)
        out_path_leaves, out_tree = pytree.flatten_with_path_strings(out)
        outs: list[Any] = []
        out_dims: list[int | None] = []
        ref_outs: dict[int, Any] = {}  # output index -> a mapped Ref argument returned
        for path, leaf in out_path_leaves:
            if type(leaf).__name__ == "Ref":
                if id(leaf) not in ref_axes:
                    ref_context.check_no_refs(leaf, f"vmap({name})")
                ref_outs[len(outs)] = leaf
                outs.append(leaf)
                out_dims.append(ref_axes[id(leaf)])
                continue
            if not tracing.is_array_like(leaf):
                # JAX's words first ("Output from batched function ... is not a valid
                # JAX type"), then which output it was
                raise TypeError(
                    f"Output from batched function {leaf!r} with type {type(leaf)} is not a "
                    f"valid JAX type: vmap({name}) output{path} must be an array (or a pytree "
                    "of them)"
                )
            value, dim = trace.unpack(leaf)
            outs.append(value)
            out_dims.append(dim)
    return outs, out_dims, ref_outs, out_tree


def _vmap_outputs(
    name: str,
    outs: list[Any],
    out_dims: list[int | None],
    ref_outs: dict[int, Any],
    out_tree: pytree.PyTreeDef,
    out_axes: Any,
    size: int,
    given: list[Any] | None = None,
) -> Any:
    """The vmapped function's result: each flat output with its batch axis
    moved to the one ``out_axes`` asks for.

    With ``given`` (vmap's argument leaves; None for pmap's members), host
    data no operation touched comes back as it is, as JAX 0.10.2's (its tracers hold the
    user's values): a NumPy argument the function returns at its own batch
    axis (``vmap(lambda x: x)(a)`` is ``a``), an ``out_axes=None`` output the
    function returned as a NumPy array or Python number; a NumPy argument
    whose axis moves is moved by NumPy (an ``ndarray``, as JAX's)."""
    flat_out_axes = _flatten_axes("out_axes", out_axes, out_tree.unflatten(outs), "the output")
    paths = [path for path, _ in pytree.flatten_with_path_strings(out_tree.unflatten(outs))[0]]
    results = []
    for index, (out, dim, want) in enumerate(zip(outs, out_dims, flat_out_axes, strict=True)):
        if index in ref_outs:  # a mapped Ref argument returned: the ref itself (as JAX)
            if want != dim:
                raise ValueError(
                    f"vmap({name}): output{paths[index]} is the mapped Ref argument (axis "
                    f"{dim}), which can only be returned with out_axes {dim}, got {want}"
                )
            results.append(out)
            continue
        if want is None:
            if dim is not None:
                raise ValueError(
                    f"at vmap out_axes{paths[index]}, got axis spec None but output was "
                    f"batched on axis {dim}"
                )
            results.append(out if given is not None and _is_host(out) else as_array(out))
            continue
        if _is_float0(out):
            results.append(as_array(_float0_batched(out, dim, size, want, index)))
            continue
        rank = tracing.get_aval(out, "vmap", index).ndim + (1 if dim is None else 0)
        if not -rank <= want < rank:
            raise ValueError(
                f"axis {want} is out of bounds for array of dimension {rank} (vmap out_axes "
                f"of output leaf {index}; its rank includes the mapped axis)"
            )
        if (
            given is not None
            and dim is not None
            and isinstance(out, np.ndarray)
            and any(out is g for g in given)
        ):
            # the user's own NumPy argument (not a NumPy value a rule made,
            # e.g. an empty batch's result: a new array in JAX)
            results.append(out if dim == want % rank else np.moveaxis(out, dim, want % rank))
            continue
        results.append(as_array(bdim_to(out, dim, size, want % rank)))
    return out_tree.unflatten(results)


def _is_host(value: Any) -> bool:
    return dtypes.is_python_scalar(value) or isinstance(value, (np.ndarray, np.generic))


def _is_float0(x: Any) -> bool:
    return isinstance(x, np.ndarray) and x.dtype == dtypes.float0


def _float0_batched(out: np.ndarray, dim: int | None, size: int, want: int, index: int) -> Any:
    """A float0 output (a tangent that carries no data, e.g. of an integer
    input) with the batch axis at ``want``: float0 values are never traced,
    so this is a NumPy array of the batched shape, as JAX returns."""
    rank = out.ndim + (1 if dim is None else 0)
    if not -rank <= want < rank:
        raise ValueError(
            f"axis {want} is out of bounds for array of dimension {rank} (vmap out_axes "
            f"of output leaf {index}; its rank includes the mapped axis)"
        )
    if dim is not None:
        return np.moveaxis(out, dim, want % rank)
    shape = list(out.shape)
    shape.insert(want % rank, size)
    return np.zeros(shape, dtypes.float0)


def as_array(x: Any) -> Any:
    """An array for a value a user receives: program literals and constants,
    and unmapped inputs returned as they are, become arrays (weak type kept)."""
    if isinstance(x, tracing.Tracer) or not tracing.is_array_like(x) or _is_float0(x):
        return x
    if isinstance(x, (np.ndarray, np.generic, tracing.TypedScalar, bool, int, float, complex)):
        return elementwise.copy(x)
    return x


# the rules of sub-program primitives batch through these (primitives.rule_context)
rule_context.batch_subprogram = batch_subprogram
rule_context.current_frame = current_frame
rule_context.axis_frame = AxisFrame
rule_context.vmap = vmap
rule_context.batch_program = batch_program
rule_context.batch_trace = BatchTrace
