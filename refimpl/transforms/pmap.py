"""pmap: one program run on N devices at once (``jax.pmap``'s conventions).

``pmap(f, axis_name)(x)`` runs ``f`` once per device ``m`` in ``range(N)`` on
the slice ``x[m]`` of every mapped argument (``in_axes``; ``None`` entries
are replicated: every device gets the whole value) and stacks the per-device
results along ``out_axes`` (``None``: the value every device agrees on, which
must really be unmapped). Collectives over ``axis_name`` combine the devices'
values (``refimpl.primitives.collectives``).

Two ways of running, with one meaning:

* **lock step** (the reference backend, and every pmap met while another
  transformation traces: inside ``jit``, ``grad``, ``scan``, ``vmap`` or an
  outer pmap): the N instances run together as the members of a batch, each
  equation applied to all of them before the next (a ``BatchTrace`` on the
  axis, marked as a device axis so ``axis_index_groups`` are allowed). The
  mapped/unmapped status of every input is the batch status of its value,
  so it survives control flow and AD unchanged (an ``in_axes=None`` input
  stays unbatched; its cotangent is summed over the devices by the batch
  rule of the transpose).
* **replicas** (backend ``"pjrt"``, concrete arguments): ``f`` is traced ONCE
  on the per-device shapes with the axis bound, the Program (with its
  collectives as equations) is lowered to one StableHLO module compiled for
  N replicas (``num_replicas = N``; collectives become ``all_reduce``,
  ``all_gather``, ``collective_permute``, ``reduce_scatter`` with
  ``replica_groups``) and executed on the N devices in ONE ``Execute``.
  Mapped outputs are PJRT arrays sharded over the devices (the one C++
  array type, ``refimpl._pjrt.PjrtArray``, holding one buffer per device);
  a sharded array fed back to a pmap over the same devices passes its
  shards' buffers as they are (no transfer, see :func:`transfer_count`).
  A pjrt pmap is a C++ ``FastJitted`` in pmap mode: a call whose signature
  is cached runs in C++ from argument inspection to the one execute
  (:func:`on_miss` describes a new signature's entry once).

On the reference backend mapped outputs are :class:`ShardedArray`\\ s (a
Python class: the ``(1, ...)`` blocks ``device_put`` on the virtual
devices). On both, a mapped output's ``.sharding`` is JAX 0.10.2's
``NamedSharding`` over a 1-D mesh of the pmap's devices named after its
``axis_name`` (:func:`output_sharding`), its shards the blocks ``[m:m+1]``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from refimpl import _wraps, backends, dtypes, pytree, tracing
from refimpl.array import Array
from refimpl.config import config, numpy_promotion
from refimpl.core import Program, ShapedArray, subprograms
from refimpl.errors import NonHashableStaticArgumentError, ShapeIndexError
from refimpl.primitives import collectives, indexing, ref_context
from refimpl.sharding import Mesh, NamedSharding, PartitionSpec, Shard, SingleDeviceSharding
from refimpl.traceback_util import api_boundary
from refimpl.transforms import batching, sharded
from refimpl.transforms.block_arrays import BlockArray
from refimpl.transforms.jit import (
    MappedAxes,
    ShapeDtypeStruct,
    Signature,
    _check_compiler_options,
    _Static,
    as_abstract,
    check_args,
    check_call,
    hashable_axes,
    leaf_avals,
)

__all__ = ["ShardedArray", "pmap", "transfer_count"]


# --- sharded results ----------------------------------------------------------------------


#: The mesh axis name of the outputs of a pmap without ``axis_name`` (JAX 0.10.2's).
UNNAMED_AXIS = "_internal_pmap_axis_name"


def output_sharding(devices: Sequence[Any], axis: int | None, axis_name: Any) -> NamedSharding:
    """The sharding of a pmap output stacked along ``axis`` over ``devices``,
    as JAX 0.10.2 (which runs pmap as a shard_map under jit): a 1-d mesh of
    the devices, in pmap's order, whose one axis is the pmap's ``axis_name``
    (or :data:`UNNAMED_AXIS`), split at ``axis``. Its blocks keep the mapped
    axis with size 1: device ``m`` holds ``[m:m+1]`` along it. An
    ``out_axes=None`` output (``axis`` None or -1) is replicated: ``P()``,
    every device holds the whole value."""
    name = UNNAMED_AXIS if axis_name is None else axis_name
    mesh = Mesh(np.array(list(devices), dtype=object), (name,))
    if axis is None or axis < 0:
        return NamedSharding(mesh, PartitionSpec())
    return NamedSharding(mesh, PartitionSpec(*[None] * axis, name))


def _pjrt_sharding(array: Any) -> Any:
    """``PjrtArray.sharding``: a pmap output's NamedSharding for a sharded array,
    else the one device."""
    axis = array._shard_axis
    if axis is None:
        return SingleDeviceSharding(array.device)
    devices = [shard.device for shard in array._shard_arrays()]
    return output_sharding(devices, axis, array._shard_axis_name)


def _pjrt_addressable_shards(array: Any) -> list[Shard]:
    """``PjrtArray.addressable_shards``: per device, a 1-device PjrtArray over
    the shard's buffer typed as its block (the mapped axis kept, size 1, as
    JAX's), its device and its index in the global array."""
    axis = array._shard_axis
    if axis is None:
        return [Shard(array, array.device, (slice(None),) * array.ndim)]
    index_map = array.sharding.devices_indices_map(array.shape)
    replicated = axis < 0  # (an out_axes=None output: copy m of the whole value)
    return [
        Shard(block, block.device, index_map[block.device], m if replicated else 0)
        for m, block in enumerate(array._shard_blocks())
    ]


def install_sharding_protocol(array_type: type[Any]) -> None:
    """Give the C++ PJRT array ``.sharding``, ``.addressable_shards`` and
    ``is_fully_replicated``/``is_fully_addressable`` (called once by
    ``refimpl.backends.pjrt.arrays``)."""
    array_type.sharding = property(_pjrt_sharding)
    array_type.addressable_shards = property(_pjrt_addressable_shards)
    array_type.is_fully_replicated = property(lambda a: bool(a.sharding.is_fully_replicated))
    array_type.is_fully_addressable = property(lambda a: bool(a.sharding.is_fully_addressable))


class ShardedArray(BlockArray):
    """A pmap output on the reference backend: N arrays (one per virtual
    device), the blocks ``[m:m+1]`` along the mapped axis ``_axis`` (JAX
    0.10.2's shard shape: the axis kept with size 1), standing for their
    concatenation, or (``_axis`` None, an ``out_axes=None`` output) N copies
    of the whole value; ``sharding`` is the pmap output's NamedSharding
    (:func:`output_sharding`). Reading the value gathers the shards; passing
    it to a reference pmap uses its value."""

    __slots__ = ("_axis", "_axis_name")

    def __init__(
        self,
        shards: Sequence[Any],
        devices: Sequence[Any],
        axis: int | None,
        aval: ShapedArray | None = None,
        axis_name: Any = None,
    ) -> None:
        self._shards = list(shards)
        self._devices = tuple(devices)
        self._axis = axis
        self._axis_name = axis_name
        if aval is None:  # (pmap passes the one it computed once per signature)
            block = self._shards[0].aval
            shape = list(block.shape)
            if axis is not None:
                shape[axis] = len(self._shards)
            aval = ShapedArray(tuple(shape), block.dtype, block.weak_type)
        self._aval = aval

    @property
    def sharding(self) -> NamedSharding:
        return output_sharding(self._devices, self._axis, self._axis_name)

    @property
    def addressable_shards(self) -> list[Shard]:
        """Per device, its block (the array it holds) and its place; copy
        ``m`` of a replicated output has ``replica_id`` m."""
        index_map = self.sharding.devices_indices_map(self._aval.shape)
        replicated = self._axis is None
        return [
            Shard(shard, device, index_map[device], m if replicated else 0)
            for m, (shard, device) in enumerate(zip(self._shards, self._devices, strict=True))
        ]

    def _value(self) -> np.ndarray:
        self._check_live()
        if self._axis is None:  # replicated: every shard is the whole value
            value = np.array(self._shards[0]._value())
        else:
            value = np.concatenate([np.asarray(s._value()) for s in self._shards], axis=self._axis)
        value.flags.writeable = False
        return value


tracing.register_array_type(
    ShardedArray, lambda a: (a._check_live(), a.aval)[1], ShardedArray._value
)


# jit of a pmap output runs over its NamedSharding (as JAX 0.10.2), not its gathered value
sharded.register_split_type(ShardedArray)


# --- pmap ---------------------------------------------------------------------------------


def _pjrt() -> Any:
    """What pmap's PJRT paths use of the PJRT backend (its ``pmap_support``),
    loaded on first use; an ImportError says the runtime is missing. The
    backends sit above the transformations, so pmap reaches them through the
    registry rather than importing a PJRT module."""
    return backends.get("pjrt").pmap_support


def transfer_count() -> int:
    """Host<->device copies made by the PJRT runtime in this process so far
    (counted in C++: every transfer to a device and every read back to the
    host; all threads). A sharded array passed back to a pmap over the same
    devices adds none; a host argument adds one per device. Loads the PJRT
    runtime."""
    return _pjrt().native_module().transfer_count()


def _int_tuple(value: Any, what: str) -> tuple[int, ...]:
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return (int(value),)
    try:
        items = tuple(value)
    except TypeError:
        raise TypeError(
            f"pmap: {what} must be an int or a sequence of ints, got {value!r}"
        ) from None
    if not all(isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in items):
        raise TypeError(f"pmap: {what} must be an int or a sequence of ints, got {value!r}")
    return tuple(int(i) for i in items)


def pmap(
    fun: Callable[..., Any],
    axis_name: Any = None,
    *,
    in_axes: Any = 0,
    out_axes: Any = 0,
    static_broadcasted_argnums: int | Sequence[int] = (),
    devices: Sequence[Any] | None = None,
    backend: str | None = None,
    axis_size: int | None = None,
    donate_argnums: int | Sequence[int] = (),
) -> Callable[..., Any]:
    """Run ``fun`` on N devices at once, one slice of the mapped arguments each.

    Args:
        fun: The per-device function; it returns a pytree of arrays.
        axis_name: The name collectives (``lax.psum(x, axis_name)``, ...) use.
        in_axes: Per positional argument (a tuple of tree prefixes, not a list; or
            one int/None for all): the axis to split over the devices, or
            None to give every device the whole value. Keyword arguments are
            split along axis 0.
        out_axes: Per output (a tree prefix): the axis along which the
            per-device results are stacked, or None for an output that is
            the same on every device (checked: a value that may differ
            between devices is a ``ValueError``).
        static_broadcasted_argnums: Positions of hashable Python arguments
            passed to every device as they are (not traced).
        devices: The devices to run on: the first N of them (N the mapped
            axis size, as JAX 0.10.2; fewer than N is a ``ValueError``);
            default: the first N of the backend's devices.
        backend: ``"ref"`` or ``"pjrt"``; default the devices' backend or
            ``ri.config.backend``.
        axis_size: If given, the mapped axes' size it must equal
            (``ValueError`` otherwise, as JAX 0.10.2; at least one argument
            must still be mapped).
        donate_argnums: Positions of arguments whose buffers the call may
            reuse (per shard, on pjrt); donated arrays are deleted.

    Returns:
        The mapped function. Its outputs have the mapped axis (size N) at
        ``out_axes`` and JAX 0.10.2's ``NamedSharding`` (a 1-D mesh of the
        devices named ``axis_name``): on pjrt each is one PJRT array sharded over the
        devices (``refimpl._pjrt.PjrtArray``, the type ``device_put``
        returns), on the reference backend a :class:`ShardedArray`; an
        ``out_axes=None`` output is the same array type replicated over the
        devices (``P()``: every device holds the whole value, as JAX
        0.10.2). On pjrt the function
        is a C++ ``FastJitted`` in pmap mode (a cached call runs no Python
        code); its ``_fast_stats()`` counts hits, misses and slow calls.

    Raises:
        ValueError: inconsistent mapped sizes, more devices needed than
            there are, fewer ``devices`` than the axis size, or an
            ``out_axes=None`` output that differs between devices.
        TypeError: ``fun`` not callable, or malformed argnums.

    Example:
        >>> import numpy as np, refimpl as ri
        >>> ri.config.update("ref_num_devices", 4)
        >>> ri.pmap(lambda x: ri.lax.psum(x, "i"), "i", backend="ref")(np.arange(4.0))
        Array([6., 6., 6., 6.], dtype=float32)
    """
    if not callable(fun):
        raise TypeError(f"pmap: fun must be callable, got {type(fun).__name__}")
    tracing.check_transform_fun(fun, "pmap")
    for label, tree in (("in_axes", in_axes), ("out_axes", out_axes)):
        # when pmap is made, as JAX 0.10.2 (a bool is no axis: False is not 0)
        leaves = pytree.tree_leaves(tree, is_leaf=lambda x: x is None)
        if not all(leaf is None or type(leaf) is int for leaf in leaves):
            raise TypeError(
                f"pmap {label} must be an int, None, or (nested) container with those types "
                f"as leaves, but got {tree}."
            )
    static = _int_tuple(static_broadcasted_argnums, "static_broadcasted_argnums")
    donate = _int_tuple(donate_argnums, "donate_argnums")
    if set(static) & set(donate):
        raise ValueError(
            f"pmap: arguments {sorted(set(static) & set(donate))} are both static and donated"
        )
    if devices is not None:
        devices = list(devices)
        if not devices:
            raise ValueError("pmap: devices must not be empty")
        keys = [(getattr(d, "platform", None), getattr(d, "id", id(d))) for d in devices]
        if len(set(keys)) != len(keys):
            raise ValueError(
                f"pmap: devices must be distinct (one replica per device), got {devices!r}"
            )
    name = getattr(fun, "__name__", type(fun).__name__)
    cache: dict[Signature, _Entry] = {}
    out_axes_key = hashable_axes(out_axes)  # (a prefix may hold lists and dicts)

    def prepare(args: tuple, kwargs: dict) -> _Call:
        """The call's leaves, axes, devices and flags (errors as JAX's)."""
        n_args = len(args)
        if static and max(static) >= n_args:  # JAX 0.10.2's words
            raise ValueError(
                f"pmap({name}): pmapped function has static_broadcasted_argnums={static} but "
                f"was called with only {n_args} positional argument{'s' if n_args > 1 else ''}. "
                "All static broadcasted arguments must be passed positionally."
            )
        for i in static:  # JAX: out of range is an error, never taken modulo the count
            if not -n_args <= i < n_args:
                raise ValueError(
                    f"pmap({name}): static_broadcasted_argnums {static} out of range for "
                    f"{n_args} positional arguments"
                )
        statics = {i % n_args: None for i in static}
        for i in list(statics):
            try:
                hash(args[i])
            except TypeError:  # JAX 0.10.2's pmap words it so (jit's wording differs)
                raise NonHashableStaticArgumentError(
                    f"pmap({name}): Non-hashable static arguments are not supported, as this can "
                    f"lead to unexpected cache-misses. Static argument (index {i}) of type "
                    f"{type(args[i])} for function {name} is non-hashable."
                ) from None
            statics[i] = args[i]
        dyn_pos = [i for i in range(n_args) if i not in statics]
        dyn_args = tuple(args[i] for i in dyn_pos)
        axes_spec = in_axes
        if isinstance(in_axes, tuple) and len(in_axes) == n_args and statics:
            axes_spec = tuple(in_axes[i] for i in dyn_pos)

        def call_fun(*dyn: Any, **kw: Any) -> Any:
            it = iter(dyn)
            full = [statics[i] if i in statics else next(it) for i in range(n_args)]
            return fun(*full, **kw)

        call_fun.__name__ = name
        leaves, in_tree = pytree.tree_flatten((dyn_args, kwargs))
        _check_no_ref_arguments(name, leaves, (dyn_args, kwargs))
        axes = _flat_in_axes(axes_spec, dyn_args, kwargs)
        _check_axes_within_rank(leaves, axes)
        try:
            size = batching._mapped_size(call_fun, dyn_args, kwargs, leaves, axes, None)
        except ValueError as error:
            raise ValueError(str(error).replace("vmap", "pmap")) from None
        # JAX 0.10.2 checks axis_size against the mapped size only: with no
        # mapped argument pmap is still the error above, axis_size or not
        if axis_size is not None and axis_size != size:
            raise ValueError(
                f"pmap({name}): Specified axis_size {axis_size} doesn't match received "
                f"axis_size {size}."
            )
        if size == 0:
            raise ValueError(
                f"pmap({name}): the mapped axis has size 0; pmap needs one slice per device "
                "(at least one)"
            )
        backend_name = _backend_name(backend, devices, leaves)
        run_devices = _choose_devices(name, backend_name, devices, size)
        donated = [False] * len(leaves)
        if donate:
            donated = _donated_leaves(dyn_args, kwargs, dyn_pos, donate, n_args)
        traced = tracing.is_tracing() or any(isinstance(x, tracing.Tracer) for x in leaves)
        call = _Call(
            call_fun, leaves, in_tree, axes, size, backend_name, run_devices, donated, statics,
            traced, (dyn_args, kwargs),
        )  # fmt: skip
        check_call(call, name, transform="pmap")  # jit's: before anything runs or is deleted
        return call

    def entry_of(call: _Call) -> _Entry:
        """The compiled pjrt entry of a call's signature (built on first use)."""
        signature = _signature(call, name, axis_name, out_axes_key)
        entry = cache.get(signature)
        if entry is None:
            entry = cache[signature] = _Entry.build(
                call.fun, name, axis_name, call.leaves, call.in_tree, call.axes, call.size,
                out_axes, call.devices, call.donated,
            )  # fmt: skip
        return entry

    @api_boundary
    def pmap_f(*args: Any, **kwargs: Any) -> Any:
        call = prepare(args, kwargs)
        leaves, axes, size, donated = call.leaves, call.axes, call.size, call.donated
        if not call.traced:  # every backend's call about to run: one set of checks
            check_args(call, name, transform="pmap")
        if call.backend == "pjrt" and not call.traced:
            return entry_of(call).run(leaves, axes, call.devices, donated)
        nest = _flatten_into_replicas(size, donated) if call.backend == "pjrt" else None
        if nest is not None:
            return _inner_replicas(
                nest, call.fun, leaves, call.in_tree, axes, size, out_axes, axis_name
            )
        out = _lock_step(call.fun, name, leaves, call.in_tree, axes, size, out_axes, axis_name)
        if not call.traced:  # concrete results: one shard per (virtual) device
            out = _shard_outputs(out, out_axes, call.devices, axis_name)
        else:
            out = pytree.tree_map(_host_data_made_array, out)
        for leaf, is_donated in zip(leaves, donated, strict=True):
            if is_donated and isinstance(leaf, Array) and hasattr(leaf, "mark_donated"):
                leaf.mark_donated(f"pmap({name})")
        return out

    def lower(*args: Any, **kwargs: Any) -> PmapLowered:
        # abstract arrays (ShapedArray, ShapeDtypeStruct, any object with shape
        # and dtype) stand for arguments of their types, as jit's trace
        n_args = len(args)
        statics = {i % n_args for i in static if -n_args <= i < n_args}
        args = tuple(
            a if i in statics else pytree.tree_map(as_abstract, a) for i, a in enumerate(args)
        )
        kwargs = pytree.tree_map(as_abstract, kwargs)
        call = prepare(args, kwargs)
        if call.backend == "pjrt" and not call.traced:
            entry_of(call)  # trace and compile now: their errors belong to lower()

        def pjrt_entry() -> _Entry:
            # the module of this signature (as_text, cost_analysis, ...): the
            # pjrt call's own entry, else one built over the first PJRT devices
            if call.backend == "pjrt" and not call.traced:
                return entry_of(call)
            return _Entry.build(
                call.fun, name, axis_name, call.leaves, call.in_tree, call.axes, call.size,
                out_axes, _pjrt_devices(name, call.size), call.donated,
            )  # fmt: skip

        return PmapLowered(mapped, name, call, len(args), axis_name, pjrt_entry)

    # dressed as fun (pmap(f).__name__ == "f"); refimpl's messages say pmap({name})
    _wraps.wraps(fun)(pmap_f)
    pmap_f._prepare = prepare  # type: ignore[attr-defined]
    pmap_f._entry_of = entry_of  # type: ignore[attr-defined]
    pmap_f._signature = lambda call: _signature(call, name, axis_name, out_axes_key)  # type: ignore[attr-defined]
    pmap_f._entries = lambda: list(cache.values())  # type: ignore[attr-defined]
    mapped: Any = pmap_f
    if _runs_on_pjrt(backend, devices):
        mapped = _fast_pmap(pmap_f, static, donate, follow_config=backend is None and not devices)
    mapped.lower = lower
    return mapped


class PmapArgInfo(NamedTuple):
    """One argument leaf of a lowered pmap: its (whole, unsplit) type and
    whether it is donated, as JAX's ``ArgInfo``."""

    aval: ShapedArray
    donated: bool

    @property
    def shape(self) -> tuple[int, ...]:
        return self.aval.shape

    @property
    def dtype(self) -> np.dtype:
        return self.aval.dtype


class PmapLowered:
    """``pmap(f).lower(*args)``, as JAX 0.10.2's ``Lowered`` of a pmap: the
    call's signature (argument tree, leaf types, static arguments) fixed;
    ``compile()`` gives a :class:`PmapCompiled` that runs only calls of that
    signature. ``as_text``, ``compiler_ir`` and the analyses read the pjrt
    backend's module of the signature (built over the first PJRT devices for
    a pmap on the reference backend)."""

    def __init__(
        self,
        mapped: Any,
        name: str,
        call: _Call,
        n_args: int,
        axis_name: Any,
        pjrt_entry: Callable[[], _Entry],
    ) -> None:
        self._mapped = mapped
        self._name = name
        self._statics = dict(call.statics)
        self._n_args = n_args
        self.in_tree = pytree.tree_structure(call.arguments)
        self._avals = [
            tracing.get_aval(leaf, f"pmap({name})", i) for i, leaf in enumerate(call.leaves)
        ]
        self._donated = list(call.donated)
        self._size = call.size
        self._devices = call.devices
        self._axis_name = axis_name
        self._in_axes = list(call.axes)
        self._pjrt_entry = pjrt_entry
        self._entry: _Entry | None = None

    def _module_entry(self) -> _Entry:
        """The PJRT entry whose StableHLO module and executable ``as_text``,
        ``compiler_ir`` and the analyses read (made on first use)."""
        if self._entry is None:
            self._entry = self._pjrt_entry()
        return self._entry

    @property
    def in_avals(self) -> Any:
        return pytree.tree_unflatten(self.in_tree, [a.strip_weak() for a in self._avals])

    @property
    def args_info(self) -> Any:
        infos = [
            PmapArgInfo(a.strip_weak(), d) for a, d in zip(self._avals, self._donated, strict=True)
        ]
        return pytree.tree_unflatten(self.in_tree, infos)

    @property
    def out_tree(self) -> Any:
        return self._module_entry().out_tree

    @property
    def out_info(self) -> Any:
        """The outputs' types (``ShapeDtypeStruct``, strongly typed, the mapped
        axis included), in the output pytree, as JAX's ``Lowered.out_info``."""
        entry = self._module_entry()
        infos = []
        for aval, axis in zip(entry.out_avals, entry.out_axes, strict=True):
            shape = list(aval.shape)
            if axis is not None:
                shape.insert(axis, self._size)
            sharding = output_sharding(self._devices, axis, self._axis_name)
            infos.append(ShapeDtypeStruct(tuple(shape), aval.dtype, sharding=sharding))
        return pytree.tree_unflatten(entry.out_tree, infos)

    def as_text(self, dialect: str | None = None) -> str:
        """The StableHLO module, as text (``dialect="hlo"``: XLA's HLO text), as
        jit's ``Lowered.as_text``; the module is the one the pjrt backend runs
        (one replica per device, ``mhlo.num_replicas`` set)."""
        return _pjrt().module_text(self._module, dialect)

    def compiler_ir(self, dialect: str | None = None) -> Any:
        """The StableHLO ``ir.Module`` (``dialect`` None or ``"stablehlo"``) or
        XLA's HLO computation (``"hlo"``); another dialect is JAX's ``ValueError``."""
        return _pjrt().module_ir(self._module, dialect)

    def _module(self) -> Any:
        return self._module_entry().module

    def cost_analysis(self) -> dict[str, float] | None:
        """The compiled module's cost properties, or None where the plugin has
        none (as jit's ``Lowered.cost_analysis``)."""
        return self.compile().cost_analysis()

    def compile(self, compiler_options: dict[str, Any] | None = None) -> PmapCompiled:
        """``compiler_options`` is taken for JAX's signature, as jit's
        ``Lowered.compile``: the plugin compiles with its defaults."""
        _check_compiler_options("Lowered.compile", compiler_options)
        return PmapCompiled(self)

    def __repr__(self) -> str:
        return f"Lowered(pmap({self._name}))"


class PmapCompiled:
    """A compiled pmap signature (:meth:`PmapLowered.compile`): called with
    arguments of another tree or other leaf types it is JAX's ``TypeError``;
    the static arguments may be left out or passed again."""

    def __init__(self, lowered: PmapLowered) -> None:
        self._lowered = lowered
        self.in_tree = lowered.in_tree
        self.in_avals = lowered.in_avals
        self.args_info = lowered.args_info

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        low = self._lowered
        statics = low._statics
        if statics and len(args) == low._n_args - len(statics):
            it = iter(args)
            args = tuple(statics[i] if i in statics else next(it) for i in range(low._n_args))
        dyn = tuple(a for i, a in enumerate(args) if i not in statics)
        leaves, tree = pytree.tree_flatten((dyn, kwargs))
        if tree != low.in_tree:
            raise TypeError(
                f"Compiled(pmap({low._name})): Function compiled with input pytree does not match "
                f"the input pytree it was called with: compiled for {low.in_tree}, called with "
                f"{tree}"
            )
        avals = [tracing.get_aval(leaf, f"pmap({low._name})", i) for i, leaf in enumerate(leaves)]
        for i, (got, want) in enumerate(zip(avals, low._avals, strict=True)):
            if got.shape != want.shape or got.dtype != want.dtype:
                raise TypeError(
                    f"Compiled(pmap({low._name})): Argument types differ from the types for "
                    f"which this computation was compiled: leaf {i} compiled with "
                    f"{want.str_short()} and called with {got.str_short()}"
                )
        return low._mapped(*args, **kwargs)

    @property
    def out_tree(self) -> Any:
        return self._lowered.out_tree

    @property
    def out_info(self) -> Any:
        return self._lowered.out_info

    @property
    def input_shardings(self) -> Any:
        """Each argument leaf's sharding over the pmap's devices (split at its
        in_axes entry, replicated for None), as the ``(args, kwargs)`` tree."""
        low = self._lowered
        shardings = [output_sharding(low._devices, axis, low._axis_name) for axis in low._in_axes]
        return pytree.tree_unflatten(low.in_tree, shardings)

    @property
    def output_shardings(self) -> Any:
        """Each output's sharding (split at its out_axes entry), in the output tree."""
        low = self._lowered
        entry = low._module_entry()
        shardings = [output_sharding(low._devices, axis, low._axis_name) for axis in entry.out_axes]
        return pytree.tree_unflatten(entry.out_tree, shardings)

    def as_text(self) -> str:
        """The StableHLO module this executable was compiled from."""
        return self._lowered.as_text()

    def runtime_executable(self) -> Any:
        """The plugin's loaded executable (one replica per device)."""
        return self._lowered._module_entry().executable

    def cost_analysis(self) -> dict[str, float] | None:
        """The plugin's cost properties, or None where it has none (the CPU
        plugin answers UNIMPLEMENTED), as jit's ``Compiled.cost_analysis``."""
        return _pjrt().executable_cost_analysis(self.runtime_executable())

    def memory_analysis(self) -> Any:
        """The executable's memory statistics under JAX's ``CompiledMemoryStats``
        field names, or None where the plugin has none (as jit's)."""
        return _pjrt().executable_memory_analysis(self.runtime_executable())

    def __repr__(self) -> str:
        return f"Compiled(pmap({self._lowered._name}))"


def _pjrt_devices(name: str, size: int) -> list[Any]:
    """The first ``size`` PJRT devices, for the module of a pmap lowered on the
    reference backend (its text and analyses are those of the pjrt program)."""
    devices = _pjrt().executables.devices()
    if len(devices) < size:
        raise ValueError(
            f"pmap({name}): its module needs {size} PJRT devices (one replica each), but "
            f"the PJRT client has {len(devices)}"
        )
    return list(devices[:size])


class _Call(NamedTuple):
    """One pmap call, flattened (``prepare`` in :func:`pmap`); what jit's
    call checks read of a call (``leaves``, ``donated``, ``paths``,
    ``traced``) under jit's ``CallArgs`` names."""

    fun: Callable[..., Any]  # the function of the dynamic arguments
    leaves: list[Any]
    in_tree: Any
    axes: list[int | None]
    size: int
    backend: str
    devices: list[Any]
    donated: list[bool]
    statics: dict[int, Any]
    traced: bool
    arguments: tuple[tuple[Any, ...], dict[str, Any]]  # (dynamic positional, keyword)

    @property
    def paths(self) -> list[str]:
        """The leaves' paths (``args[0]['w']``, ``kwargs['b']``): made only for a
        signature or an error, as a flatten with paths costs a few microseconds."""
        return _leaf_paths(self.arguments)


def _runs_on_pjrt(backend: str | None, devices: Any) -> bool:
    """Whether a pmap gets the C++ fast path: explicitly on pjrt (by name or
    by its devices), or following ``config.backend`` while that is pjrt.
    The runtime must load; without it the Python pmap reports the error."""
    if backend == "ref":
        return False
    if devices:
        if backends.get("ref").is_device(devices[0]):
            return False
    elif backend is None and config.backend != "pjrt":
        return False
    try:
        _pjrt()
    except ImportError:
        return False
    return True


def _fast_pmap(
    pmap_f: Callable[..., Any],
    static: tuple[int, ...],
    donate: tuple[int, ...],
    follow_config: bool,
) -> Any:
    """``pmap_f`` behind a C++ FastJitted in pmap mode: a cached signature runs
    in C++ (host pieces transferred, shards passed where they are, one
    execute over the devices, sharded outputs); everything else (misses,
    traces, the reference backend, errors) goes through ``pmap_f``."""
    import functools

    fast = (
        _pjrt()
        .native_module()
        .FastJitted(
            pmap_f,
            functools.partial(on_miss, pmap_f),
            static,
            (),
            donate,
            (),
            follow_config,
            pmap=True,
        )
    )
    # pmap_f's dress (_wraps.wraps: fun's name, module, docstring, signature);
    # fun's own attributes came with pmap_f's __dict__
    for attribute in ("__name__", "__qualname__", "__module__", "__doc__", "__annotations__"):
        setattr(fast, attribute, getattr(pmap_f, attribute))
    fast.__wrapped__ = pmap_f.__wrapped__  # type: ignore[attr-defined]
    return fast


class PmapEntrySpec(NamedTuple):
    """What C++ keeps for one pmap signature (``FillPmapEntry`` in
    bindings/fast_jit.cc reads it by field)."""

    executable: Any  # refimpl._pjrt.Executable compiled for len(device_indices) replicas
    device_indices: tuple[int, ...]  # client device index per replica
    in_avals: tuple[Any, ...]  # per leaf: one device's fast_path.LeafType
    in_axes: tuple[int, ...]  # per leaf: the axis split over the devices, -1 replicated
    donated: tuple[bool, ...]
    aliases: tuple[int, ...]  # per leaf: the output written into its buffer, or -1
    out_avals: tuple[Any, ...]  # per output: one device's fast_path.OutType
    out_axes: tuple[int, ...]  # per output: the stacking axis, -1 for out_axes=None
    out_tree: tuple[Any, ...]  # preorder fast_path.OutNode
    has_collectives: bool
    axis_name: Any  # the pmap's axis name, given to its sharded outputs


def on_miss(pmap_f: Any, fast: Any, args: tuple, kwargs: dict) -> PmapEntrySpec | None:
    """A pmap call whose C++ signature is new: the entry for C++ to cache, or
    None (this signature's calls go to the Python pmap: the reference
    backend, a nested pmap, shards over other devices or along another
    axis, Refs). Compiles on the first call of a Python signature; errors
    propagate before anything runs."""
    pjrt = _pjrt()
    fast_path, PjrtArray, index_of = pjrt.fast_path, pjrt.PjrtArray, pjrt.executables.index_of

    with fast_path._miss_lock:
        call = pmap_f._prepare(args, kwargs)
        if call.backend != "pjrt" or call.traced:
            return None
        entry = pmap_f._entry_of(call)
        if entry.inner > 1 or entry.has_host_callbacks or entry.float0_outs:
            # host callbacks: the Python path waits for them (_launch); float0
            # outputs: it makes them (_outputs)
            return None
        device_indices = tuple(index_of(d) for d in call.devices)
        if tuple(entry.executable.device_indices) != device_indices:
            return None
        for leaf, axis in zip(call.leaves, call.axes, strict=True):
            if not (isinstance(leaf, PjrtArray) and leaf._shard_axis is not None):
                continue
            if leaf._shard_axis != _shard_axis_of(axis) or [
                s.device for s in leaf._shard_arrays()
            ] != list(call.devices):
                return None
        program = entry.program
        return PmapEntrySpec(
            executable=entry.executable,
            device_indices=device_indices,
            in_avals=fast_path.leaf_types(program.in_avals),
            in_axes=tuple(-1 if a is None else a for a in call.axes),
            donated=tuple(call.donated),
            aliases=tuple(entry.aliases.get(i, -1) for i in range(len(call.leaves))),
            out_avals=fast_path.out_types(program.out_avals),
            out_axes=tuple(-1 if a is None else a for a in entry.out_axes),
            out_tree=tuple(fast_path._out_tree_nodes(entry.out_tree)),
            has_collectives=entry.has_collectives,
            axis_name=entry.axis_name,
        )


def _is_float0(value: Any) -> bool:
    aval = getattr(value, "aval", None)
    dtype = aval.dtype if aval is not None else getattr(value, "dtype", None)
    return dtype == dtypes.float0


def _flat_in_axes(in_axes: Any, dyn_args: tuple, kwargs: dict) -> list[int | None]:
    """One axis per leaf of ``(dyn_args, kwargs)``: ``in_axes`` is a tree
    prefix of the tuple of positional arguments (not a list), and each keyword
    argument is mapped over its leading axis. Where it is not a prefix, JAX
    0.10.2's error in its words (``pmap in_axes[0][0]``: the path in the tree
    of ``(positional arguments, keyword arguments)``)."""
    try:
        return batching._flatten_axes("in_axes", (in_axes, 0), (dyn_args, kwargs), "the arguments")
    except ValueError as error:
        # as JAX's, without is_leaf: a None entry is a node there (its own error)
        found = pytree.prefix_errors((in_axes, 0), (dyn_args, kwargs))
        if not found:
            raise error from None
    message = str(found[0]("pmap in_axes")) + (
        "\n\nThe 'full pytree' here is the tuple of arguments passed positionally to the "
        "pmapped function, and the value of `in_axes` must be a tree prefix of that tuple. But "
        "it was not a prefix."
    )
    if kwargs:
        message += (
            "\n\nWhen some arguments are passed by keyword to the pmapped function, they are "
            "not included in the comparison to `in_axes`. Instead, each argument passed by "
            "keyword is mapped over its leading axis. See the description of `in_axes` in the "
            "`pmap` docstring."
        )
    raise ValueError(
        message + "\n\nCheck that the value of the `in_axes` argument to `pmap` is a tree "
        "prefix of the tuple of arguments passed positionally to the pmapped function."
    )


def _check_axes_within_rank(leaves: list[Any], axes: list[int | None]) -> None:
    """An ``in_axes`` entry beyond the rank of an array argument: JAX 0.10.2's
    pmap reads the mapped size as ``shape[axis]``, an ``IndexError``;
    ``ShapeIndexError`` is a ``ValueError`` too (vmap's class, and refimpl's
    pmap's before). A value without ``shape`` (a Python number, a string) is
    left to the mapped-size checks (JAX: no argument with a mapped axis)."""
    for leaf, axis in zip(leaves, axes, strict=True):
        if axis is None or not hasattr(leaf, "shape"):
            continue
        shape = tuple(leaf.shape)
        if not -len(shape) <= axis < len(shape):
            raise ShapeIndexError(
                f"pmap was requested to map its argument along axis {axis}, which implies "
                f"that its rank should be at least {axis + 1 if axis >= 0 else -axis}, but "
                f"is only {len(shape)} (its shape is {shape})"
            )


def _donated_leaves(
    dyn_args: tuple, kwargs: dict, dyn_pos: list[int], donate: tuple[int, ...], n_args: int
) -> list[bool]:
    wanted = {i % n_args for i in donate if -n_args <= i < n_args}
    flags: list[bool] = []
    for pos, arg in zip(dyn_pos, dyn_args, strict=True):
        flags += [pos in wanted] * len(pytree.tree_leaves(arg))
    flags += [False] * len(pytree.tree_leaves(kwargs))
    return flags


def _backend_name(backend: str | None, devices: Any, leaves: list[Any]) -> str:
    if backend is not None:
        if backend not in ("ref", "pjrt"):
            raise ValueError(f"pmap: unknown backend {backend!r}; use 'ref' or 'pjrt'")
        return backend
    if devices:
        return "ref" if backends.get("ref").is_device(devices[0]) else "pjrt"
    return config.backend


def _outer_device_product() -> int:
    return int(np.prod(collectives._env.device_sizes, dtype=np.int64))


def _choose_devices(name: str, backend_name: str, devices: Any, size: int) -> list[Any]:
    available = backends.get(backend_name).devices()
    if devices is not None and collectives._env.device_sizes:
        # an inner pmap runs on its outer pmap's devices: it cannot pick its
        # own (JAX's pmap_test words it so; JAX 0.10.2 raises a ValueError for
        # every nested pmap)
        raise ValueError(
            f"pmap({name}): Nested pmap with explicit devices argument: only the "
            "outermost pmap may name its devices"
        )
    if devices is not None:
        # JAX 0.10.2 maps over devices[:size]: more devices than slices is
        # fine (the rest stay idle), fewer is an error (a ValueError there too)
        if len(devices) < size:
            raise ValueError(
                f"pmap({name}): the mapped axis has size {size}, but only {len(devices)} "
                "devices were passed to pmap (it runs on the first axis-size of them)"
            )
        return devices[:size]
    outer = _outer_device_product()
    if size * outer > len(available):
        raise ValueError(
            f"pmap({name}): compiling computation that requires {size * outer} logical devices, "
            f"but only {len(available)} {backend_name} devices are available "
            f"(num_replicas={size * outer})"
            + (
                '; set ri.config.update("ref_num_devices", n) for more'
                if backend_name == "ref"
                else ""
            )
        )
    return list(available[:size])


def _shard_outputs(out: Any, out_axes: Any, devices: Sequence[Any], axis_name: Any) -> Any:
    """Each mapped output as a ShardedArray: block ``m`` (slice ``m`` with the
    mapped axis kept, size 1, as JAX 0.10.2's shards) put on ``devices[m]``;
    an ``out_axes=None`` output as one copy of it per device (replicated)."""
    leaves, tree = pytree.tree_flatten(out)
    flat_axes = batching._flatten_axes("out_axes", out_axes, out, "the output")
    results = []
    for leaf, axis in zip(leaves, flat_axes, strict=True):
        if not isinstance(leaf, Array):
            results.append(leaf)
            continue
        value = np.asarray(leaf)
        aval = tracing.get_aval(leaf, "pmap", 0)
        if axis is None:
            copies = [backends.device_put(value, d) for d in devices]
            results.append(ShardedArray(copies, devices, None, aval, axis_name))
            continue
        axis %= leaf.ndim
        shards = [
            backends.device_put(np.take(value, [m], axis=axis), d) for m, d in enumerate(devices)
        ]
        # (aval: the weak type the batched value had)
        results.append(ShardedArray(shards, devices, axis, aval, axis_name))
    return tree.unflatten(results)


def _leaf_paths(args: Any) -> list[str]:
    """Readable paths (``args[0]['w']``, ``kwargs['b']``) of the leaves of
    ``(positional, keyword)`` arguments, in flatten order."""
    paths = []
    for path, _ in pytree.flatten_with_path_strings(args)[0]:
        paths.append(("args" if path.startswith("[0]") else "kwargs") + path[3:])
    return paths


def _check_no_ref_arguments(name: str, leaves: Sequence[Any], args: Any) -> None:
    """A Ref argument is an error (JAX 0.10.2 refuses one too): the mapped
    instances would each need their own slice of one mutable buffer.
    ``args``: ``(positional, keyword)`` arguments, ``leaves`` their leaves."""
    Ref = ref_context.Ref

    if not any(isinstance(leaf, Ref) for leaf in leaves):
        return
    for path, leaf in pytree.flatten_with_path_strings(args)[0]:
        if isinstance(leaf, Ref):
            where = ("args" if path.startswith("[0]") else "kwargs") + path[3:]
            raise ValueError(
                f"pmap({name}): the argument {where} is a mutable array reference of type "
                f"{leaf.aval.str_short()}; pmap does not take refs: pass its value (ref[...]) "
                "and write the result back after the call"
            )


def _outer_ref_message(name: str) -> str:
    return (
        f"pmap({name}): the function reads or writes a mutable array reference made outside "
        "it, which pmap does not support; pass the ref's value (ref[...]) as an argument "
        "and write the result back after the call"
    )


def _refusing_outer_refs(fun: Callable[..., Any], name: str) -> Callable[..., Any]:
    """``fun`` refusing any read or write of a ref made outside it.

    pmap traces its body once per signature and (on pjrt) caches the
    compiled program, so a read would be a stale constant at later calls and
    a write would leave a tracer of the finished trace in the ref. JAX
    0.10.2 fails on both (an internal ``AttributeError``); here the first
    access raises ``NotImplementedError`` before it changes anything.
    """
    message = _outer_ref_message(name)

    def guarded(*args: Any, **kwargs: Any) -> Any:
        depth = len(tracing._stack.traces) - 1  # the level of the body's trace
        with ref_context.refuse_outer(message, reads=True, depth=depth):
            return fun(*args, **kwargs)

    return guarded


def _lock_step(
    fun: Callable[..., Any],
    name: str,
    leaves: list[Any],
    in_tree: Any,
    axes: list[int | None],
    size: int,
    out_axes: Any,
    axis_name: Any,
) -> Any:
    """The N instances as the members of one batch (see the module docstring)."""
    # An unmapped Python number enters as a weakly typed array, as the
    # argument of a pjrt (or JAX) pmap: never a constant of the body (a psum of
    # it is then over devices, strong; only a literal of the body stays weak).
    leaves = [
        _weak_array(leaf) if axis is None and type(leaf) in (int, float, complex) else leaf
        for leaf, axis in zip(leaves, axes, strict=True)
    ]
    with collectives.device_axis(axis_name, size):
        try:
            return batching._vmap_call(
                _refusing_outer_refs(fun, name), f"pmap({name})", leaves, in_tree, axes, size,
                out_axes, axis_name, device=True,
            )  # fmt: skip
        except ValueError as error:
            text = str(error)
            if "got axis spec None but output was batched" in text:
                raise ValueError(
                    text.replace("vmap", "pmap")
                    + " (an out_axes=None output must be the same on every device)"
                ) from None
            raise


def _weak_array(number: Any) -> Any:
    return backends.device_put(number)


def _host_data_made_array(value: Any) -> Any:
    """A traced pmap's output, with the user's own host data that an outer
    ``vmap`` or ``jvp`` tracer still holds (an argument the body passed
    through untouched) made a new array: JAX 0.10.2's pmap always computes
    new arrays, so ``vmap(pmap(lambda x: x))(a)`` of a float64 NumPy ``a`` is
    a float32 Array (the outer vmap would otherwise hand ``a`` itself back).
    The tracers' own protocol, as a jitted ``jnp`` function's outputs."""
    if isinstance(value, tracing.Tracer):
        return value._without_host_data()
    if isinstance(value, (np.ndarray, np.generic)) and value.dtype != dtypes.float0:
        return batching.as_array(value)
    return value


# --- the pjrt route: one executable over N replicas -----------------------------------------


def _signature(call: _Call, name: str, axis_name: Any, out_axes_key: Any) -> Signature:
    """The call's signature: jit's (its leaves' avals read by the same
    function, so a deleted argument raises as there; statics compared by
    type and value) with pmap's fields named in ``mapped``."""
    label = f"pmap({name})"
    statics = tuple(
        (f"args[{i}]", False, _Static(v, f"args[{i}]", name)) for i, v in call.statics.items()
    )
    mapped = MappedAxes(axis_name, call.size, tuple(call.axes), out_axes_key, tuple(call.devices))
    return Signature(
        call.in_tree,
        leaf_avals(label, call.leaves, lambda: call.paths),  # (paths only for an error)
        statics,
        tuple(call.donated),
        call.backend,
        config.enable_x64,
        mapped,
        collectives.bound_axes(),
        promotion=numpy_promotion(),
    )


# Collectives after which every device (of the whole axis) holds the same value.
# Serializes pjrt launches of pmap programs with host callbacks (_launch).
_CALLBACK_LAUNCH_LOCK = threading.Lock()

_REPLICATING = ("psum", "pmax", "pmin", "all_gather")
_VARYING = ("axis_index", "ppermute", "psum_scatter")


def _varying_outputs(program: Program, mapped: Sequence[bool], axis_name: Any) -> list[bool]:
    """Which outputs may differ between devices: a forward dependence analysis
    (conservative through sub-programs)."""
    varying: dict[int, bool] = {id(v): m for v, m in zip(program.in_vars, mapped, strict=True)}

    def read(atom: Any) -> bool:
        return varying.get(id(atom), False)

    for eqn in program.eqns:
        prim = eqn.primitive.name
        if (
            prim in _REPLICATING
            and eqn.params.get("axis_index_groups") is None
            and axis_name in eqn.params["axes"]
        ):
            out = False
        elif prim in _VARYING:
            out = True
        elif prim == "cond" and read(eqn.inputs[0]) and _has_collective(eqn):
            raise ValueError(
                f"pmap: a cond whose predicate may differ between devices has a collective "
                f"({_has_collective(eqn)}) in a branch; on devices it would wait forever for "
                "the devices that took the other branch. Make the predicate the same on "
                "every device (e.g. from a psum or pmax) or move the collective out of the cond"
            )
        else:
            out = any(read(a) for a in eqn.inputs) or any(
                e.primitive.name in _VARYING or e.params.get("axis_index_groups") is not None
                for sub in _subprograms(eqn)
                for e in sub.walk_eqns()
            )
        for var in eqn.outputs:
            varying[id(var)] = out
    return [read(v) for v in program.out_vars]


def _has_collective(eqn: Any) -> str | None:
    """The name of a collective (other than axis_index) in ``eqn``'s sub-programs."""
    for sub in _subprograms(eqn):
        for inner in sub.walk_eqns():
            if (
                isinstance(inner.primitive, collectives.CollectivePrimitive)
                and inner.primitive.name != "axis_index"
            ):
                return inner.primitive.name
    return None


def _subprograms(eqn: Any) -> list[Program]:
    return subprograms(eqn)


def _compile_options(device_ids: Sequence[int], module: Any) -> bytes:
    """Serialized CompileOptions: one replica per device of ``device_ids``, with
    the debug options refimpl sets for ``module`` (as jit's, ``compile_overrides``)."""
    from jaxlib import xla_client

    executables, pjrt_runtime = _pjrt().executables, _pjrt().runtime

    options = xla_client.CompileOptions()
    overrides = pjrt_runtime.compile_overrides(module, executables.local_platform())
    if overrides:
        options.env_option_overrides = list(overrides)
    build = options.executable_build_options
    build.num_replicas = len(device_ids)
    build.num_partitions = 1
    options.device_assignment = xla_client.DeviceAssignment.create(
        np.array([[i] for i in device_ids], dtype=np.int32)
    )
    return options.SerializeAsString()


def _compile(
    entry: _Entry,
    name: str,
    groups: dict[Any, tuple[tuple[int, ...], ...]],
    replicas: int,
    aliases: dict[int, int],
    donated: Sequence[bool],
) -> Any:
    """``entry``'s executable over its replica devices, through the persistent
    compilation cache when it is on (as jit's; see ``compilation_cache``).

    The StableHLO key covers the module text (with ``mhlo.num_replicas`` and
    the collectives' ``replica_groups``) and the compile options (the device
    assignment). The program key (no lowering on a hit) covers what the
    lowering reads besides the Program: the replica count, the devices in
    replica order and the replica groups of every axis name.
    """
    compilation_cache, executables = _pjrt().compilation_cache, _pjrt().executables

    client = executables.client()
    device_ids = [d.id for d in entry.replica_devices]
    lowering_name = f"pmap_{name}"
    target = (
        f"pmap replicas={replicas} partitions=1 devices={device_ids} "
        f"groups={[(repr(k), v) for k, v in groups.items()]}"
    )

    def artifact() -> bytes:
        target_version = _pjrt().runtime.stablehlo_target_version()
        return executables._lowering().to_portable_artifact(entry.module, target_version)

    return compilation_cache.compile_cached(
        client,
        lambda: executables._lowering().module_text(entry.module),
        artifact,
        lambda: _compile_options(device_ids, entry.module),
        lambda: compilation_cache.program_key(
            entry.program,
            name=lowering_name,
            aliases=aliases,
            donated=donated,
            platforms=None,
            target=target,
            client=client,
        ),
    )


class _Entry:
    """One compiled pmap signature on pjrt."""

    def __init__(self) -> None:
        self.program: Program | None = None
        self.executable: Any = None
        self.out_tree: Any = None
        self.out_axes: list[int | None] = []
        self.out_avals: list[ShapedArray] = []  # every output's, float0 ones included
        # float0 outputs (tangents of integers): no data, kept out of the
        # program and made on the host (flat output position -> per-device shape)
        self.float0_outs: dict[int, tuple[int, ...]] = {}
        self.inner = 1
        self.replica_devices: list[Any] = []
        self.aliases: dict[int, int] = {}
        self.has_collectives = True
        self.has_host_callbacks = False
        self.axis_name: Any = None  # the pmap's (its outputs' sharding names it)
        self._module: Any = None
        self._host_callbacks: Any = None
        self._lower: Callable[[], Any] | None = None

    @property
    def module(self) -> Any:
        """The StableHLO module (lowered on first use: an executable found in the
        persistent compilation cache through its program key needs none)."""
        if self._module is None:
            host_callbacks = _pjrt().host_callbacks
            assert self._lower is not None  # set when the entry is made, before any use
            module = self._lower()
            # the callables of its host callbacks live as long as this entry's executable
            self._host_callbacks = host_callbacks.adopt(module)
            self._module = module
        return self._module

    @classmethod
    def build(
        cls, fun, name, axis_name, leaves, in_tree, axes, size, out_axes, devices, donated
    ) -> _Entry:
        executables = _pjrt().executables
        entry = cls()
        entry.axis_name = axis_name
        avals = []
        for leaf, axis in zip(leaves, axes, strict=True):
            aval = tracing.get_aval(leaf, f"pmap({name})", 0)
            if axis is not None:
                shape = list(aval.shape)
                del shape[axis]
                aval = aval.update(shape=tuple(shape))
            avals.append(aval)
        out_trees = []
        float0s: list[dict[int, tuple[int, ...]]] = []

        def flat_fun(*tracers: Any) -> list[Any]:
            args, kwargs = pytree.tree_unflatten(in_tree, list(tracers))
            out = _refusing_outer_refs(fun, name)(*args, **kwargs)
            flat, tree = pytree.tree_flatten(out)
            out_trees.append(tree)
            # (as jit's Float0Plan: a float0 leaf is no program output)
            float0s.append({i: tuple(np.shape(v)) for i, v in enumerate(flat) if _is_float0(v)})
            return [v for i, v in enumerate(flat) if i not in float0s[-1]]

        nest = _Nest(len(tracing._stack.traces) + 1)
        saved, _nest.current = _nest.current, nest
        try:
            with (
                collectives.bound_axis(axis_name, size, None),
                collectives.device_axis(axis_name, size),
            ):
                program, captured, _ = tracing.trace_to_program(
                    flat_fun,
                    avals,
                    f"pmap({name})",
                    [f"pmap({name}) arg {i}" for i in range(len(avals))],
                )
        finally:
            _nest.current = saved
        inner = nest.size or 1  # an inner pmap flattened into these replicas
        entry.inner = inner
        all_devices = executables.devices()
        entry.replica_devices = list(devices) if inner == 1 else all_devices[: size * inner]
        entry.program = program
        entry.has_collectives = any(
            isinstance(e.primitive, collectives.CollectivePrimitive)
            and e.primitive.name != "axis_index"
            for e in program.walk_eqns()
        )
        entry.has_host_callbacks = executables.has_host_callbacks(program)
        entry.out_tree = out_trees[0]
        entry.float0_outs = float0s[0]
        all_avals = list(program.out_avals)
        in_program = iter(_varying_outputs(program, [a is not None for a in axes], axis_name))
        for i, per_device in sorted(entry.float0_outs.items()):
            all_avals.insert(i, ShapedArray(per_device, dtypes.float0))
        # a float0 output holds nothing: the same on every device
        varying = [
            False if i in entry.float0_outs else next(in_program) for i in range(len(all_avals))
        ]
        flat_axes = batching._flatten_axes(
            "out_axes", out_axes, entry.out_tree.unflatten(all_avals), "the output"
        )
        for i, (want, var) in enumerate(zip(flat_axes, varying, strict=True)):
            if want is None and var:
                raise ValueError(
                    f"pmap({name}): output {i} has out_axes=None but may differ between "
                    "devices (an out_axes=None output must be the same on every device)"
                )
            if want is not None:
                rank = all_avals[i].ndim + 1
                if not -rank <= want < rank:
                    raise ValueError(
                        f"pmap out_axes specification {want} is out of bounds for output {i} "
                        f"of rank {rank} (including the mapped axis)"
                    )
                flat_axes[i] = want % rank
        entry.out_axes = flat_axes
        entry.out_avals = all_avals
        aliases = entry.aliases = _alias_plan(program, donated)
        # replica r = i * inner + j for outer index i and inner index j
        groups = {}
        if axis_name is not None:
            groups[axis_name] = tuple(
                tuple(i * inner + j for i in range(size)) for j in range(inner)
            )
        for inner_name in nest.names:
            groups[inner_name] = tuple(
                tuple(i * inner + j for j in range(inner)) for i in range(size)
            )
        replicas = size * inner

        def lower() -> Any:
            lowering = executables._lowering()
            host_callbacks = _pjrt().host_callbacks

            # a failing host callback must not stop one replica before a collective
            with collectives.replica_axes(groups), host_callbacks.deferring_errors():
                module = lowering.lower_program(
                    collectives.combine_all_reduces(program),
                    name=f"pmap_{name}",
                    aliases=aliases,
                    donated=donated,
                )
            with lowering.mlir_context():
                from jaxlib.mlir import ir

                i32 = ir.IntegerType.get_signless(32)
                attrs = module.operation.attributes
                attrs["mhlo.num_replicas"] = ir.IntegerAttr.get(i32, replicas)
                attrs["mhlo.num_partitions"] = ir.IntegerAttr.get(i32, 1)
            return module

        entry._lower = lower
        entry.executable = _compile(entry, name, groups, replicas, aliases, donated)
        return entry

    def run(self, leaves, axes, devices, donated) -> Any:
        """The Python path of a pjrt pmap call (misses, and signatures the C++
        fast path leaves to Python): same inputs, execute and outputs."""
        PjrtArray, client = _pjrt().PjrtArray, _pjrt().executables.client()

        n = len(devices)
        if self.inner > 1:
            return self._run_nested(leaves, axes, donated)
        per_device: list[list[Any]] = [[] for _ in range(n)]
        assert self.program is not None  # set when the entry is made, before it runs
        for leaf, axis, aval in zip(leaves, axes, self.program.in_avals, strict=True):
            if _in_place(leaf, axis, devices):
                for m, shard in enumerate(leaf._shard_arrays()):  # already there: no data moves
                    per_device[m].append(shard.buffer())
                continue
            if (
                isinstance(leaf, PjrtArray)
                and axis is None
                and n == 1
                and leaf.device == devices[0]
            ):
                per_device[0].append(leaf.buffer())
                continue
            value = np.asarray(tracing.concrete_value(leaf, tracing.get_aval(leaf, "pmap", 0)))
            if value.dtype != aval.dtype:
                value = value.astype(aval.dtype)
            for m, device in enumerate(devices):
                piece = value if axis is None else np.take(value, m, axis=axis)
                per_device[m].append(client.buffer_from_numpy(
                    np.ascontiguousarray(piece), _index(device)
                ))  # fmt: skip
        outs = self._launch(per_device, donated)
        result = self._outputs(outs, devices)  # before donation: a failed call deletes nothing
        for leaf, is_donated in zip(leaves, donated, strict=True):
            if is_donated and hasattr(leaf, "mark_donated"):
                leaf.mark_donated("pmap")  # (a sharded array: every shard)
        return result

    def _run_nested(self, leaves, axes, donated) -> Any:
        """Replica ``i * inner + j`` gets outer slice ``i``; outputs come from
        the replicas ``j = 0`` (the inner results were gathered over ``j``)."""
        client = _pjrt().executables.client()
        per_device: list[list[Any]] = [[] for _ in self.replica_devices]
        assert self.program is not None  # set when the entry is made, before it runs
        for leaf, axis, aval in zip(leaves, axes, self.program.in_avals, strict=True):
            value = np.asarray(tracing.concrete_value(leaf, tracing.get_aval(leaf, "pmap", 0)))
            value = value.astype(aval.dtype, copy=False)
            for r, device in enumerate(self.replica_devices):
                piece = value if axis is None else np.take(value, r // self.inner, axis=axis)
                per_device[r].append(client.buffer_from_numpy(
                    np.ascontiguousarray(piece), _index(device)
                ))  # fmt: skip
        outs = self._launch(per_device)
        for leaf, is_donated in zip(leaves, donated, strict=True):
            if is_donated and hasattr(leaf, "delete"):
                leaf.delete()
        firsts = list(range(0, len(self.replica_devices), self.inner))
        return self._outputs([outs[r] for r in firsts], [self.replica_devices[r] for r in firsts])

    def _launch(self, per_device: list[list[Any]], donated: Sequence[bool] = ()) -> list[list[Any]]:
        """One ``execute_sharded``; a program with collectives first waits for
        the previous such launch (in C++, shared with the fast path). With
        two of them in flight, XLA's CPU client can start some replicas of
        each and none can finish: their all-reduce waits for 4 threads of a
        pool busy with the other launch, and XLA aborts the process after
        40 s (seen on a 2-core machine, for jax.pmap too). The inputs are
        pinned (checked live, donated ones claimed) as the fast path's."""
        native = _pjrt().native_module()
        donated = list(donated)
        if not self.has_host_callbacks:
            return native._pmap_launch(self.executable, per_device, self.has_collectives, donated)
        host_callbacks = _pjrt().host_callbacks
        # A pmap inside a pmap's callback raises before it could wait for the lock.
        native._check_pmap_allowed()
        # One launch at a time: its callbacks' deferred failures are its own.
        # (The callbacks of this launch run on XLA threads and never take it.)
        with _CALLBACK_LAUNCH_LOCK:
            outs = native._pmap_launch(self.executable, per_device, self.has_collectives, donated)
            for replica in outs:  # as jit: every replica's callbacks have run on return
                for buffer in replica:
                    buffer.block_until_ready()
            errors = host_callbacks.take_errors(self._host_callbacks)
        if errors:
            raise native.PjrtError(f"INTERNAL: {errors[0]}")
        return outs

    def _outputs(self, outs: list[list[Any]], devices: Sequence[Any]) -> Any:
        """Mapped outputs as one sharded PJRT array each; an ``out_axes=None``
        output as a replicated one (each device's copy)."""
        PjrtArray, make_sharded = _pjrt().PjrtArray, _pjrt().native_module()._make_sharded
        n = len(devices)
        results = []
        j = 0  # the program's output
        for i, (axis, aval) in enumerate(zip(self.out_axes, self.out_avals, strict=True)):
            if i in self.float0_outs:  # a NumPy float0 array, as JAX's
                shape = list(aval.shape)
                if axis is not None:
                    shape.insert(axis, n)
                results.append(np.zeros(tuple(shape), dtypes.float0))
                continue
            weak = aval.weak_type
            shards = [PjrtArray(outs[m][j], weak, devices[m], True) for m in range(n)]
            # out_axes=None: replicated (axis -1), every device's copy kept
            results.append(make_sharded(shards, -1 if axis is None else axis, self.axis_name))
            j += 1
        return self.out_tree.unflatten(results)


def _shard_axis_of(in_axis: int | None) -> int:
    """The ``_shard_axis`` of a PJRT array that is in place for ``in_axis``:
    the axis itself, or -1 (replicated, a copy on every device) for None."""
    return -1 if in_axis is None else in_axis


def _in_place(leaf: Any, axis: int | None, devices: Sequence[Any]) -> bool:
    """Whether ``leaf`` is a PJRT array sharded along ``axis`` over ``devices``
    (for ``axis`` None: replicated over them)."""
    shard_axis = getattr(leaf, "_shard_axis", None)
    if shard_axis is None or shard_axis != _shard_axis_of(axis):
        return False
    return [s.device for s in leaf._shard_arrays()] == list(devices)


class _Nest:
    """What a pjrt pmap's trace learns of the pmaps nested directly in it."""

    def __init__(self, depth: int) -> None:
        self.depth = depth  # the trace depth of the outer body
        self.size: int | None = None  # the inner axis size (one for all inner pmaps)
        self.names: list[Any] = []


class _NestState(threading.local):
    def __init__(self) -> None:
        self.current: _Nest | None = None


_nest = _NestState()


class _InnerAxis:
    """The name of an unnamed inner pmap axis (its replicas still need groups)."""

    def __repr__(self) -> str:
        return "<unnamed inner pmap axis>"


def _flatten_into_replicas(size: int, donated: Sequence[bool]) -> _Nest | None:
    """The enclosing pjrt pmap's record when this pmap runs directly in its
    body (no other transformation in between) and can be spread over
    replicas of its own: the outer axis times this one."""
    nest = _nest.current
    if nest is None or any(donated) or len(tracing._stack.traces) != nest.depth:
        return None
    if nest.size not in (None, size):
        return None
    return nest


def _inner_replicas(
    nest: _Nest,
    fun: Callable[..., Any],
    leaves: list[Any],
    in_tree: Any,
    axes: list[int | None],
    size: int,
    out_axes: Any,
    axis_name: Any,
) -> Any:
    """A pmap inside a pjrt pmap's body, as ``size`` replicas per outer
    replica: each takes its slice (``axis_index``), runs ``fun``, and the
    mapped results are all-gathered over the inner axis."""
    name = axis_name if axis_name is not None else _InnerAxis()
    nest.size = size
    nest.names.append(name)
    with collectives.bound_axis(name, size, None), collectives.device_axis(name, size):
        index = collectives.axis_index(name)
        pieces = [
            leaf if axis is None else indexing.dynamic_index_in_dim(leaf, index, axis, False)
            for leaf, axis in zip(leaves, axes, strict=True)
        ]
        args, kwargs = pytree.tree_unflatten(in_tree, pieces)
        # the inner body is traced inline, at the outer body's depth: refs the
        # outer body made before it are told apart by when they were made
        fun_name = getattr(fun, "__name__", type(fun).__name__)
        with ref_context.refuse_earlier(_outer_ref_message(fun_name)):
            out = fun(*args, **kwargs)
        flat, tree = pytree.tree_flatten(out)
        flat_axes = batching._flatten_axes("out_axes", out_axes, out, "the output")
        results = []
        for value, axis in zip(flat, flat_axes, strict=True):
            if axis is None:
                results.append(value)
                continue
            rank = tracing.get_aval(value, "pmap", 0).ndim + 1
            results.append(collectives.all_gather(value, name, axis=axis % rank))
    return tree.unflatten(results)


def _index(device: Any) -> int:
    return _pjrt().executables.index_of(device)


def _alias_plan(program: Program, donated: Sequence[bool]) -> dict[int, int]:
    """Donated input ``i`` -> the first unclaimed output of the same type."""
    taken: set[int] = set()
    plan: dict[int, int] = {}
    outs = [a.strip_weak() for a in program.out_avals]
    for i, (is_donated, aval) in enumerate(zip(donated, program.in_avals, strict=True)):
        if not is_donated:
            continue
        for j, out in enumerate(outs):
            if j not in taken and out == aval.strip_weak():
                plan[i] = j
                taken.add(j)
                break
    return plan
