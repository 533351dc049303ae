"""``shard_map``: one function run on every block of a mesh, in lock step.

``shard_map(f, mesh=mesh, in_specs=..., out_specs=...)(*args)`` cuts each
argument into the blocks its ``PartitionSpec`` names (as a
``NamedSharding(mesh, spec)`` lays it out), runs ``f`` once per mesh
position on that position's blocks, and tiles the per-position results
back together as ``out_specs`` say (docs/semantics.md, "Sharding").

The per-position instances are pmap's lock-step members (the mechanism of
``refimpl.transforms.pmap``), one nested level per mesh axis in mesh
order: mesh axis ``a`` of size ``n`` is a device axis named ``a`` of ``n``
members, so ``psum``, ``all_gather``, ``ppermute``, ``psum_scatter``,
``axis_index`` (and every other collective) over mesh axes mean what they
mean under pmap. An argument whose spec does not name a mesh axis is the
same for every member along it (unmapped at that level); an output whose
spec does not name a mesh axis must be the same along it, which the level's
``out_axes=None`` checks (``check_vma=True``; with ``check_vma=False`` the
first member's value is taken unchecked).

Concrete results are laid out over the mesh as ``NamedSharding(mesh,
out_spec)``. On a backend that partitions sharded programs (pjrt), a
concrete call runs that lock-step program under ``jit`` with the specs as
in/out shardings, so XLA's SPMD partitioner spreads it over the mesh's
devices; elsewhere (and under a trace) it runs as one batched program.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from refimpl import _wraps, pytree, tracing
from refimpl.primitives import structural
from refimpl.sharding import Mesh, NamedSharding, PartitionSpec, get_mesh
from refimpl.transforms import pmap as _pmap
from refimpl.transforms import sharded
from refimpl.transforms.jit import jit

__all__ = ["shard_map"]


class _ReplicationError(ValueError):
    """An output whose spec says it is replicated over a mesh axis varies along it."""


def _names(entry: Any) -> tuple[str, ...]:
    if entry is None:
        return ()
    if isinstance(entry, (tuple, list)):
        return tuple(n for n in entry if n is not None)
    return (entry,)


def _is_spec(v: Any) -> bool:
    return isinstance(v, PartitionSpec) or v is None


def shard_map(
    f: Callable[..., Any] | None = None,
    /,
    *,
    out_specs: Any,
    in_specs: Any = None,
    mesh: Any = None,
    axis_names: Any = frozenset(),
    check_vma: bool = True,
) -> Any:
    """Map ``f`` over the blocks of a mesh (``jax.shard_map``).

    Args:
        f: The per-block function (None: a decorator is returned).
        out_specs: A ``PartitionSpec`` per output (a tree prefix of them):
            how the per-position results tile the global result; a mesh
            axis it does not name means the result is replicated along it.
        in_specs: A ``PartitionSpec`` per positional argument (a tree prefix
            of the argument tuple): how each argument is cut into blocks.
        mesh: The ``Mesh`` (default: the one ``set_mesh`` set).
        axis_names: The manual axes; only all of the mesh's (the default)
            are provided.
        check_vma: Check that outputs are replicated where ``out_specs``
            says (see the module docstring).

    Returns:
        The mapped function; its concrete outputs are arrays laid out as
        ``NamedSharding(mesh, out_spec)``.

    Raises:
        ValueError: a spec names an axis the mesh lacks, is longer than its
            value's rank, splits an axis its mesh axes do not divide, or an
            output varies along a mesh axis its spec does not name.

    Example:
        >>> import numpy as np, refimpl as ri
        >>> ri.config.update("ref_num_devices", 4)
        >>> mesh = ri.make_mesh((4,), ("x",), devices=ri.devices("ref"))
        >>> f = ri.shard_map(lambda b: ri.lax.psum(b.sum(), "x"), mesh=mesh,
        ...                  in_specs=ri.P("x"), out_specs=ri.P())
        >>> f(np.arange(8.0))
        Array(28., dtype=float32)
    """
    if f is None:
        return lambda g: shard_map(
            g,
            out_specs=out_specs,
            in_specs=in_specs,
            mesh=mesh,
            axis_names=axis_names,
            check_vma=check_vma,
        )
    if not callable(f):
        raise TypeError(f"shard_map: f must be callable, got {type(f).__name__}")
    name = getattr(f, "__name__", type(f).__name__)

    def mapped(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            raise TypeError(
                f"shard_map({name}): keyword arguments are not supported; pass every argument "
                "positionally (in_specs matches the positional arguments)"
            )
        the_mesh = mesh if mesh is not None else get_mesh()
        if not isinstance(the_mesh, Mesh):
            raise ValueError(
                f"shard_map({name}): no mesh: pass mesh=, or set one with jax.set_mesh(mesh)"
            )
        if axis_names and set(axis_names) != set(the_mesh.axis_names):
            raise NotImplementedError(
                f"shard_map({name}): axis_names={set(axis_names)} makes only some mesh axes "
                "manual; refimpl provides shard_map over all of the mesh's axes"
            )
        if in_specs is None:
            raise NotImplementedError(
                f"shard_map({name}): in_specs must be given (inferring them from the "
                "arguments' shardings is not provided)"
            )
        leaves = pytree.tree_leaves(args)
        backend = sharded.spmd_backend_of(the_mesh) if the_mesh.size > 1 else None
        if backend is not None and not any(isinstance(v, tracing.Tracer) for v in leaves):
            return _partitioned(the_mesh, backend)(*args)
        return _call(f, name, the_mesh, in_specs, out_specs, check_vma, args)

    partitioned: dict[Any, Any] = {}

    def _partitioned(the_mesh: Mesh, backend: str) -> Any:
        """The lock-step program under jit with the specs as shardings, on a
        backend that partitions it (pjrt's SPMD route: each device computes
        its blocks, the collectives between them)."""
        jitted = partitioned.get((the_mesh, backend))
        if jitted is None:

            def named(specs: Any) -> Any:
                return pytree.tree_map(
                    lambda p: NamedSharding(the_mesh, p), specs, is_leaf=_is_spec
                )

            def program(*call_args: Any) -> Any:
                return _call(f, name, the_mesh, in_specs, out_specs, check_vma, call_args)

            program.__name__ = f"shard_map_{name}"
            jitted = jit(
                program,
                in_shardings=named(in_specs),
                out_shardings=named(out_specs),
                backend=backend,
            )
            partitioned[(the_mesh, backend)] = jitted
        return jitted

    _wraps.wraps(f)(mapped)  # dressed as f, as JAX's; refimpl's messages say shard_map({name})
    mapped._partitioned = partitioned  # type: ignore[attr-defined]  # (mesh, backend) -> jit
    return mapped


def _check_specs(name: str, mesh: Mesh, specs: list[Any], what: str) -> None:
    for spec in specs:
        if not isinstance(spec, PartitionSpec):
            raise TypeError(
                f"shard_map({name}): {what} entries must be PartitionSpecs, got {spec!r}"
            )
        seen: set[str] = set()
        for entry in spec:
            for axis in _names(entry):
                if axis not in mesh.axis_names:
                    raise ValueError(
                        f"shard_map({name}): {what} refers to {axis!r}, which is not an axis "
                        f"of the mesh {tuple(mesh.axis_names)}"
                    )
                if axis in seen:
                    raise ValueError(
                        f"shard_map({name}): {what} {spec!r} names mesh axis {axis!r} twice"
                    )
                seen.add(axis)


def _call(
    f: Callable[..., Any],
    name: str,
    mesh: Mesh,
    in_specs: Any,
    out_specs: Any,
    check_vma: bool,
    args: tuple,
) -> Any:
    leaves, in_tree = pytree.tree_flatten((args, {}))
    specs = sharded._broadcast_prefix(in_specs, args, f"shard_map({name})", "in_specs")
    _check_specs(name, mesh, specs, "in_specs")
    out_spec_leaves = pytree.tree_leaves(out_specs, is_leaf=_is_spec)
    _check_specs(name, mesh, out_spec_leaves, "out_specs")
    blocks = []
    for k, (leaf, spec) in enumerate(zip(leaves, specs, strict=True)):
        aval = tracing.get_aval(leaf, f"shard_map({name})", f"args[{k}]")
        if len(spec) > aval.ndim:
            raise ValueError(
                f"shard_map({name}): in_specs {spec!r} for args[{k}] of type "
                f"{aval.str_short()} has {len(spec)} entries but the argument has rank "
                f"{aval.ndim}"
            )
        for d, entry in enumerate(spec):
            pieces = _pieces(mesh, entry)
            if aval.shape[d] % pieces:
                raise ValueError(
                    f"shard_map({name}): args[{k}] of shape {aval.str_short()} corresponds to "
                    f"in_specs {spec!r}, which maps array axis {d} (of size {aval.shape[d]}) "
                    f"to mesh axes {_names(entry)} (of total size {pieces}), but {pieces} does "
                    f"not evenly divide {aval.shape[d]}"
                )
        blocks.append(_split(leaf, spec, mesh))
    axes_order = list(mesh.axis_names)

    def level(j: int) -> Callable[..., Any]:
        if j == len(axes_order):
            return f
        inner = level(j + 1)
        axis = axes_order[j]
        size = mesh.shape[axis]
        in_axes = [0 if axis in _spec_axes(spec) else None for spec in specs]
        out_axes = pytree.tree_map(
            lambda p: 0 if (not check_vma or axis in _spec_axes(p)) else None,
            out_specs,
            is_leaf=_is_spec,
        )

        def run(*level_args: Any) -> Any:
            level_leaves, level_tree = pytree.tree_flatten((level_args, {}))
            try:
                return _pmap._lock_step(
                    inner, name, level_leaves, level_tree, in_axes, size, out_axes, axis
                )
            except _ReplicationError:
                raise
            except ValueError as error:
                if "output was batched" not in str(error):
                    raise
                raise _ReplicationError(
                    f"shard_map applied to the function {name!r} was given out_specs which "
                    f"require replication which can't be statically inferred given the mesh "
                    f"{mesh!r}: out_specs {out_specs!r} imply that an output is replicated "
                    f"across mesh axis {axis!r}, but it may differ along it. Check whether "
                    "the output is meant to be replicated over that axis (a psum or pmax over "
                    "it makes it so); if not, name the axis in out_specs"
                ) from None

        return run

    in_args, _ = pytree.tree_unflatten(in_tree, blocks)
    out = level(0)(*in_args)
    out_leaves, out_tree = pytree.tree_flatten(out)
    per_out = sharded._broadcast_prefix(out_specs, out, f"shard_map({name})", "out_specs")
    traced = any(isinstance(v, tracing.Tracer) for v in leaves) or any(
        isinstance(v, tracing.Tracer) for v in out_leaves
    )
    results = []
    for leaf, spec in zip(out_leaves, per_out, strict=True):
        value = _merge(leaf, spec, mesh, check_vma)
        if not traced:
            value = sharded.put_sharded(value, NamedSharding(mesh, spec))
        results.append(value)
    return out_tree.unflatten(results)


def _pieces(mesh: Mesh, entry: Any) -> int:
    count = 1
    for axis in _names(entry):
        count *= mesh.shape[axis]
    return count


def _spec_axes(spec: Any) -> set[str]:
    return {axis for entry in spec for axis in _names(entry)}


def _split(x: Any, spec: PartitionSpec, mesh: Mesh) -> Any:
    """``x`` with one leading axis per mesh axis ``spec`` names (in mesh
    order), each block ``[i, j, ...]`` the piece that mesh position holds."""
    if not _spec_axes(spec):
        return x
    shape = tracing.get_aval(x, "shard_map", "x").shape
    new_shape: list[int] = []
    where: dict[str, int] = {}  # mesh axis -> its dimension in the reshaped value
    rest: list[int] = []
    for d, size in enumerate(shape):
        names = _names(spec[d]) if d < len(spec) else ()
        for axis in names:
            where[axis] = len(new_shape)
            new_shape.append(mesh.shape[axis])
        rest.append(len(new_shape))
        new_shape.append(size // _pieces(mesh, spec[d]) if names else size)
    lead = [where[axis] for axis in mesh.axis_names if axis in where]
    reshaped = structural.reshape(x, tuple(new_shape))
    return structural.transpose(reshaped, tuple(lead + rest))


def _merge(y: Any, spec: PartitionSpec, mesh: Mesh, check_vma: bool) -> Any:
    """The inverse of :func:`_split` for one output: its leading axes (one per
    mesh axis ``spec`` names, in mesh order; with ``check_vma=False`` one per
    mesh axis) tiled into the global value."""
    present = (
        list(mesh.axis_names)
        if not check_vma
        else [a for a in mesh.axis_names if a in _spec_axes(spec)]
    )
    if not check_vma:  # the first member along each axis the spec leaves replicated
        keep = [a for a in present if a in _spec_axes(spec)]
        for position in reversed(range(len(present))):
            if present[position] not in keep:
                y = structural.index_in_dim(y, 0, position, False)
        present = keep
    if not present:
        return y
    shape = tracing.get_aval(y, "shard_map", "y").shape
    k = len(present)
    block = shape[k:]
    if len(spec) > len(block):
        raise ValueError(
            f"shard_map: out_specs {spec!r} has {len(spec)} entries but the output has rank "
            f"{len(block)}"
        )
    order: list[int] = []
    out_shape: list[int] = []
    for d, size in enumerate(block):
        names = _names(spec[d]) if d < len(spec) else ()
        order += [present.index(axis) for axis in names]
        order.append(k + d)
        out_shape.append(size * _pieces(mesh, spec[d]) if names else size)
    moved = structural.transpose(y, tuple(order))
    return structural.reshape(moved, tuple(out_shape))
