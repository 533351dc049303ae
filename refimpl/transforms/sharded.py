"""Arrays laid out over a mesh, and ``jit``'s ``in_shardings``/``out_shardings``.

A sharded array is its global value plus a sharding (docs/semantics.md,
"Sharding"): :class:`MeshArray` holds, for each device of the sharding, that
device's index block of the value as an array of the device's own backend
(a reference ``RefArray`` or a PJRT array), so ``addressable_shards`` are
real per-device arrays and deleting (donating) the array deletes every
block. Reading the value assembles the blocks.

Computations see only the global value: ``jit`` with shardings means the
same program as without them on that value, each output then laid out as
``out_shardings`` asks, or, where it asks nothing, as the sharding rule
types it (``sharding_rules.output_shardings``, JAX 0.10.2's types). A
plain ``jit`` called with sharded arrays among its arguments is the same
call with each argument's own sharding as its ``in_shardings`` (NumPy
data, Python scalars and uncommitted arrays replicated over the mesh), and
an eager operation on a sharded array is a jit of that one operation
(``jit.eager_over_mesh``). The reference backend runs it so (on one device);
pjrt registers an SPMD route (``register_spmd_runner``: one executable
partitioned over the mesh, refimpl/backends/pjrt/spmd.py) and other calls
fall back to the global-value route.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from refimpl import _wraps, backends, dtypes, pytree, tracing
from refimpl import sharding as _sharding_module
from refimpl.array import Array, as_array
from refimpl.config import config
from refimpl.core import ShapedArray
from refimpl.primitives.sharding_constraint import sharding_constraint_p
from refimpl.sharding import (
    AxisType,
    Mesh,
    NamedSharding,
    PartitionSpec,
    Shard,
    Sharding,
    SingleDeviceSharding,
    get_mesh,
)
from refimpl.transforms import dce, donation
from refimpl.transforms.block_arrays import BlockArray
from refimpl.transforms.sharding_rules import first_output_on_mesh, output_shardings

__all__ = [
    "MeshArray",
    "ShardedJit",
    "as_sharding",
    "make_array_from_callback",
    "make_array_from_single_device_arrays",
    "put_sharded",
    "reshard",
    "sharding_of",
    "with_sharding_constraint",
]


class MeshArray(BlockArray):
    """An array laid out over several devices as ``sharding`` says: one
    block per device (its own backend's array), standing for the global
    value they tile (blocks of replicated axes hold the same values)."""

    # _key: the layout key (:meth:`layout_key`), None until asked for
    __slots__ = ("_sharding", "_indices", "_key")

    def __init__(self, shards: Sequence[Any], sharding: Sharding, aval: ShapedArray) -> None:
        index_map = sharding.addressable_devices_indices_map(aval.shape)  # this process's
        self._devices = tuple(index_map)
        self._indices = tuple(index_map.values())
        self._shards = list(shards)
        self._sharding = sharding
        self._aval = aval
        self._key: object = None

    @classmethod
    def layout_of(cls, sharding: Sharding, aval: ShapedArray) -> tuple[Any, Any]:
        """The devices and index blocks of an array of ``aval`` laid out as
        ``sharding`` (what :meth:`assembled` takes): the addressable ones."""
        index_map = sharding.addressable_devices_indices_map(aval.shape)
        return tuple(index_map), tuple(index_map.values())

    @classmethod
    def assembled(
        cls,
        shards: list[Any],
        sharding: Sharding,
        aval: ShapedArray,
        layout: tuple[Any, Any],
        key: object = None,
    ) -> MeshArray:
        """A MeshArray whose layout (:meth:`layout_of`) and layout key
        (:meth:`layout_key`, or None) are already known: a cached sharded
        call builds its outputs without recomputing them."""
        self = cls.__new__(cls)
        self._devices, self._indices = layout
        self._shards = shards
        self._sharding = sharding
        self._aval = aval
        self._key = key
        return self

    def layout_key(self) -> object:
        """An object standing for this array's (sharding, aval) pair: two
        MeshArrays have the same key object exactly when their shardings and
        avals are equal (so the same layout), which a cached sharded call
        (Python plan or C++ fast path) compares by identity instead of
        comparing shardings. Computed once per array (a dict lookup)."""
        key = self._key
        if key is None:
            key = self._key = layout_key_of(self._sharding, self._aval)
        return key

    @property
    def committed(self) -> bool:
        return True

    @property
    def sharding(self) -> Sharding:
        return self._sharding

    @property
    def is_fully_replicated(self) -> bool:
        return self._sharding.is_fully_replicated

    @property
    def is_fully_addressable(self) -> bool:
        return self._sharding.is_fully_addressable

    @property
    def addressable_shards(self) -> list[Shard]:
        seen: dict[str, int] = {}
        out = []
        for shard, device, index in zip(self._shards, self._devices, self._indices, strict=True):
            key = repr(index)
            out.append(Shard(shard, device, index, seen.get(key, 0)))
            seen[key] = seen.get(key, 0) + 1
        return out

    @property
    def global_shards(self) -> list[Shard]:
        """Every device's shard; ``data`` is None on another process's devices (JAX)."""
        if self.is_fully_addressable:
            return self.addressable_shards
        local = dict(zip(self._devices, self._shards, strict=True))
        seen: dict[str, int] = {}
        out = []
        for device, index in self._sharding.devices_indices_map(self._aval.shape).items():
            key = repr(index)
            out.append(Shard(local.get(device), device, index, seen.get(key, 0)))
            seen[key] = seen.get(key, 0) + 1
        return out

    def _has_full_value(self) -> bool:
        # this process's blocks cover the value (e.g. replicated over its devices)
        if self.is_fully_addressable:
            return True
        every = self._sharding.devices_indices_map(self._aval.shape).values()
        return {repr(i) for i in self._indices} == {repr(i) for i in every}

    def __repr__(self) -> str:
        if self._has_full_value():
            return super().__repr__()
        weak = ", weak_type=True" if self._aval.weak_type else ""
        return f"Array(shape={self._aval.shape}, dtype={self._aval.dtype.name}{weak})"

    def _check_live(self) -> None:
        for shard in self._shards:
            try:
                shard._check_live()
            except RuntimeError as error:  # the message names the array's shape, not a block's
                shape = self._aval.shape
                text = str(error).replace(
                    f"shape={shard.dtype.name}{list(shard.shape)}",
                    f"shape={self._aval.dtype.name}{list(shape)}",
                    1,
                )
                raise RuntimeError(text) from None

    def _value(self) -> np.ndarray:
        self._check_live()
        if not self._has_full_value():
            raise RuntimeError(_NON_ADDRESSABLE)
        value = np.empty(self._aval.shape, dtype=self._aval.dtype)
        for shard, index in zip(self._shards, self._indices, strict=True):
            value[index] = np.asarray(shard)
        value.flags.writeable = False
        return value


_NON_ADDRESSABLE = (  # JAX 0.10.2's words
    "Fetching value for `jax.Array` that spans non-addressable (non process local) devices is "
    "not possible. You can use `jax.experimental.multihost_utils.process_allgather` to print "
    "the global array or use `.addressable_shards` method of jax.Array to inspect the "
    "addressable (process local) shards."
)

# (sharding, aval) -> its layout key: one plain object per distinct pair
_LAYOUT_KEYS: dict[tuple[Sharding, ShapedArray], object] = {}


def layout_key_of(sharding: Sharding, aval: ShapedArray) -> object:
    """The layout key (:meth:`MeshArray.layout_key`) of ``sharding`` and ``aval``."""
    pair = (sharding, aval)
    key = _LAYOUT_KEYS.get(pair)
    if key is None:
        key = _LAYOUT_KEYS.setdefault(pair, object())
    return key


tracing.register_array_type(MeshArray, lambda a: (a._check_live(), a.aval)[1], MeshArray._value)
# a closed-over MeshArray keeps its sharding in the program's types (const_shardings)
tracing.CONST_SHARDINGS[MeshArray] = lambda a: a.sharding


def const_shardings(program: Any) -> list[Any]:
    """Per constant of ``program``, the ``NamedSharding`` of the sharded array
    it closes over where JAX 0.10.2 types the constant by it: a mesh of two
    or more devices whose axes are all Explicit (there the sharding is part
    of the array's type, so the program is typed, and runs, over that
    mesh); None for every other constant (over Auto axes the type names no
    mesh: JAX runs the program where its arguments say and the constant
    goes along, replicated). Empty when no constant is so typed."""
    held = getattr(program, "const_shardings", None)
    if not held:
        return []
    typed = [
        s
        if isinstance(s, NamedSharding)
        and isinstance(s.mesh, Mesh)
        and s.mesh.size > 1
        and all(t == AxisType.Explicit for t in s.mesh.axis_types)
        else None
        for s in held
    ]
    return typed if any(s is not None for s in typed) else []


# --- shardings named by the user -------------------------------------------------------------


def as_sharding(value: Any, where: str, what: str) -> Sharding:
    """A ``Sharding`` from what JAX accepts in its place: a ``Sharding``, or a
    ``PartitionSpec`` over the current mesh (``set_mesh``/``with mesh:``)."""
    if isinstance(value, Sharding):
        if isinstance(value, NamedSharding) and not isinstance(value.mesh, Mesh):
            raise ValueError(
                f"{where}: {what} {value!r} is over an AbstractMesh, which has no devices"
            )
        return value
    if isinstance(value, PartitionSpec):
        mesh = get_mesh()
        if mesh is None:
            raise RuntimeError(
                f"{where}: {what} is the PartitionSpec {value!r}, which needs a mesh: pass a "
                "NamedSharding, or set one with jax.set_mesh(mesh) (or `with mesh:`)"
            )
        return NamedSharding(mesh, value)
    raise TypeError(
        f"{where}: {what} must be a Sharding or a PartitionSpec, got {type(value).__name__} "
        f"({value!r})"
    )


def check_against(sharding: Sharding, shape: tuple[int, ...], where: str) -> None:
    """JAX's rank and divisibility checks of ``sharding`` for an array of ``shape``."""
    if isinstance(sharding, NamedSharding):
        sharding.check_shape(tuple(shape), where)


def sharding_of(x: Any) -> Sharding | None:
    """The sharding of a concrete array (None for NumPy data and scalars)."""
    if isinstance(x, tracing.Tracer) or not isinstance(x, Array):
        return None
    return x.sharding


def _one_device(sharding: Sharding) -> Any | None:
    """The device of a sharding that puts the whole array on one device, else None."""
    if isinstance(sharding, SingleDeviceSharding):
        return sharding.device
    devices = sharding.device_set
    return next(iter(devices)) if len(devices) == 1 else None


def put_sharded(x: Any, sharding: Sharding, *, donate: bool = False, alias: bool = True) -> Any:
    """``device_put(x, sharding)`` of one leaf (SPEC's donate/may_alias table:
    ``alias`` lets an ``x`` already laid out this way come back as itself;
    ``donate`` deletes ``x`` once its blocks are copied out). A tracer comes
    back unchanged (placement is a property of concrete buffers)."""
    aval = tracing.get_aval(x, "device_put", "x")
    check_against(sharding, aval.shape, "device_put")
    if isinstance(x, tracing.Tracer):
        return x
    device = _one_device(sharding)
    if device is not None:
        return _backend_of(device).put_leaf(x, device, donate, alias)
    if isinstance(x, MeshArray) and x.sharding == sharding:
        if alias and not donate:
            return x
        if donate:  # the blocks move over as they are; x is gone
            out = MeshArray(list(x._shards), sharding, x.aval)
            x._shards = [_deleted_copy(s) for s in x._shards]
            return out
    if isinstance(x, MeshArray):
        moved = _reshard_on_devices(x, sharding)
        if moved is not None:
            if donate:
                x.mark_donated("device_put")
            return moved
    if isinstance(x, Array):
        x._check_live()
    value = np.asarray(tracing.concrete_value(x, aval))
    weak = aval.weak_type
    shards = []
    for device, index in sharding.addressable_devices_indices_map(aval.shape).items():
        block = np.array(value[index], copy=True)
        backend = _backend_of(device)
        piece = backend.put_leaf(block, device, False, False)
        if weak:  # keep the Python scalar's weak type on every block
            piece = _weak(piece, backend, device)
        shards.append(piece)
    if donate and isinstance(x, Array) and hasattr(x, "mark_donated"):
        x.mark_donated("device_put")
    elif donate and isinstance(x, Array):
        x.delete()  # type: ignore[attr-defined]  # every concrete array has delete()
    return MeshArray(shards, sharding, ShapedArray(aval.shape, aval.dtype, weak))


# target sharding -> the cache of the identity program's SPMD executables into it
_RESHARD_CACHES: dict[Any, dict[Any, Any]] = {}


def _identity(x: Any) -> Any:
    return x


def _reshard_on_devices(x: MeshArray, sharding: Sharding) -> Any:
    """``x`` laid out as ``sharding`` by its backend's SPMD route (an identity
    program from ``x``'s layout to the new one: the partitioner moves the
    blocks between the devices, no host round trip), or None when the
    backend has none or the two layouts are not over one mesh."""
    if not (
        isinstance(sharding, NamedSharding)
        and isinstance(x.sharding, NamedSharding)
        and x.sharding.mesh == sharding.mesh
    ):
        return None
    owner = backends.backend_of_array(x._shards[0])
    for name, runner in list(_SPMD_RUNNERS.items()):
        if owner is not None and backends.get(name) is owner:
            cache = _RESHARD_CACHES.setdefault(sharding, {})
            _, in_tree = pytree.tree_flatten((x,))
            out = runner(_identity, "reshard", [x], in_tree, [x.sharding], sharding, cache)
            return None if out is NotImplemented else out
    return None


def _backend_of(device: Any) -> Any:
    backend = backends.backend_of_device(device)
    if backend is None:
        raise TypeError(f"a sharding's device must be a Device, got {type(device).__name__}")
    return backend


def _weak(piece: Any, backend: Any, device: Any) -> Any:
    if piece.weak_type:
        return piece
    value = np.asarray(piece)
    scalar = value.item() if value.ndim == 0 else None
    if scalar is not None:
        return backend.put_leaf(scalar, device, False, False)
    return piece


def _deleted_copy(shard: Any) -> Any:
    """A stand-in for a block that moved to another array: deleted, so the
    donor reads as deleted while the new array keeps the live block."""
    backend = backends.backend_of_array(shard) or _backend_of(shard.device)
    placeholder = backend.put_leaf(np.zeros((), shard.dtype), shard.device, False, False)
    if hasattr(placeholder, "mark_donated"):
        placeholder.mark_donated("device_put")
    else:
        placeholder.delete()
    return placeholder


def with_sharding_constraint(x: Any, shardings: Any) -> Any:
    """``lax.with_sharding_constraint``: the value of ``x`` (a pytree), laid
    out as ``shardings`` (a prefix tree of shardings) when concrete; under a
    trace, the checks only (the value is what matters inside a program)."""
    if any(s is None for s in pytree.tree_leaves(shardings, is_leaf=lambda v: v is None)):
        raise ValueError(
            "with_sharding_constraint: one of the arguments got sharding None, which is not "
            "allowed; pass jax.sharding.Sharding instances"
        )
    leaves, tree = pytree.tree_flatten(x)
    per_leaf = _broadcast_prefix(shardings, x, "with_sharding_constraint", "shardings")
    out = []
    for leaf, sharding in zip(leaves, per_leaf, strict=True):
        if _foreign_single_device(sharding):
            # another library's one-device sharding (JAX's own, in tests that
            # pass one to both): every refimpl array is whole on one device
            aval = tracing.get_aval(leaf, "with_sharding_constraint", "x")
            out.append(leaf if isinstance(leaf, tracing.Tracer) else _as_array(leaf, aval))
            continue
        sharding = as_sharding(sharding, "with_sharding_constraint", "shardings")
        if isinstance(sharding, NamedSharding):
            explicit = [
                n
                for e in sharding.spec
                for n in (e if isinstance(e, tuple) else (e,))
                if n is not None
                and sharding.mesh.axis_types[sharding.mesh.axis_names.index(n)] != AxisType.Auto
            ]
            if explicit:
                raise ValueError(
                    "with_sharding_constraint: the spec of a NamedSharding can only refer to "
                    f"Auto axes of the mesh; got spec={sharding.spec!r} and mesh="
                    f"{sharding.mesh!r} ({explicit[0]!r} is not Auto). Use reshard for "
                    "Explicit axes"
                )
        aval = tracing.get_aval(leaf, "with_sharding_constraint", "x")
        check_against(sharding, aval.shape, "with_sharding_constraint")
        if not isinstance(leaf, tracing.Tracer):
            out.append(put_sharded(leaf, sharding))
        elif isinstance(sharding, NamedSharding) and sharding.mesh.size > 1:
            # inside a program: an equation the SPMD lowering makes a @Sharding call
            out.append(sharding_constraint_p.bind(leaf, sharding=sharding))
        else:
            out.append(leaf)
    return tree.unflatten(out)


def _foreign_single_device(sharding: Any) -> bool:
    if isinstance(sharding, (Sharding, PartitionSpec)):
        return False
    try:
        return len(sharding.device_set) == 1
    except (AttributeError, TypeError):
        return False


def _as_array(leaf: Any, aval: ShapedArray) -> Any:
    if isinstance(leaf, Array):
        return leaf
    del aval  # put_leaf keeps a Python scalar's weak type
    return backends.get(config.backend).put_leaf(leaf, None, False, False)


def _broadcast_prefix(prefix: Any, full: Any, where: str, what: str) -> list[Any]:
    """One entry of the prefix tree ``prefix`` per leaf of ``full`` (a
    sharding, a PartitionSpec or None is a leaf of the prefix)."""

    def is_leaf(v: Any) -> bool:
        return v is None or isinstance(v, (Sharding, PartitionSpec)) or hasattr(v, "device_set")

    prefix_leaves, prefix_tree = pytree.tree_flatten(prefix, is_leaf=is_leaf)
    if prefix_tree.num_leaves == 1 and is_leaf(prefix):
        return [prefix] * len(pytree.tree_leaves(full))
    out: list[Any] = []
    try:
        subtrees = prefix_tree.flatten_up_to(full)
    except (ValueError, TypeError) as error:
        raise ValueError(
            f"{where}: {what} must be a tree prefix of the values it annotates: {error}"
        ) from None
    for spec, sub in zip(prefix_leaves, subtrees, strict=True):
        out += [spec] * len(pytree.tree_leaves(sub))
    return out


# --- jit with shardings ------------------------------------------------------------------------

# backend name -> its SPMD route for jit with shardings (run(fun, name, leaves,
# in_tree, in_shardings, out_shardings, cache) -> outputs or NotImplemented);
# pjrt registers refimpl.backends.pjrt.spmd.run when it loads
_SPMD_RUNNERS: dict[str, Callable[..., Any]] = {}


def register_spmd_runner(backend: str, runner: Callable[..., Any]) -> None:
    """Let ``backend`` run ``jit`` calls with shardings as one partitioned program."""
    _SPMD_RUNNERS[backend] = runner


# backend name -> what puts a ShardedJit behind the backend's fast path
# (pjrt: refimpl.backends.pjrt.spmd.make_fast_sharded, a C++ FastSharded)
_FAST_WRAPPERS: dict[str, Callable[[ShardedJit], Any]] = {}


def register_fast_wrapper(backend: str, wrap: Callable[[ShardedJit], Any]) -> None:
    """Let ``backend`` run cached sharded calls in front of a ShardedJit."""
    _FAST_WRAPPERS[backend] = wrap


def with_fast_path(jitted: ShardedJit) -> Any:
    """``jitted`` behind its backend's fast path for sharded calls (the
    backend it names, else ``config.backend`` now), or ``jitted`` itself."""
    wrap = _FAST_WRAPPERS.get(jitted._backend or config.backend)
    return jitted if wrap is None else wrap(jitted)


def spmd_backend_of(mesh: Mesh) -> str | None:
    """The name of the backend whose devices ``mesh`` holds, when that backend
    runs sharded programs partitioned (its SPMD route is registered), else None."""
    owner = backends.backend_of_device(next(iter(mesh.devices.flat)))
    for name in list(_SPMD_RUNNERS):
        if owner is not None and backends.get(name) is owner:
            return name
    return None


class ShardedJit:
    """``jit(f, in_shardings=..., out_shardings=...)``: the jitted ``f`` run on
    the arguments' global values, each output then laid out as
    ``out_shardings`` says, an unspecified one as the sharding rule types it
    (the arguments as ``in_shardings`` says are checked, and NumPy/uncommitted
    inputs take it; unspecified ones keep their own sharding or are
    replicated: :func:`inferred_shardings`). With neither (``in_shardings``
    and ``out_shardings`` None) it is a plain jit's route for calls with
    sharded arguments (``Jitted._over_mesh``)."""

    def __init__(
        self,
        inner: Any,
        fun: Callable[..., Any],
        in_shardings: Any,
        out_shardings: Any,
        static_argnums: Sequence[int],
        donate_argnums: Sequence[int],
        backend: str | None = None,
    ) -> None:
        self._inner = inner
        self._backend = backend
        self._spmd_cache: dict[Any, Any] = {}
        # (argument tree, backend, enable_x64) -> the SPMD route's
        # per-signature plan of a cached call (calls without static or keyword
        # arguments); with (argument count, backend, enable_x64) -> the plan of
        # calls whose arguments are all MeshArrays, found without flattening
        # them. x64 is part of the key as of every jit signature: the function
        # traced in the other mode may make other dtypes.
        self._plans: dict[Any, Any] = {}
        self._flat_plans: dict[Any, Any] = {}
        # called with each new plan (the backend's C++ fast path installs it)
        self._plan_listeners: list[Callable[[Any], None]] = []
        # id(program) -> (program, which of its inputs it reads): _reads_split
        self._used_inputs: dict[int, tuple[Any, list[bool]]] = {}
        self._in = in_shardings
        self._out = out_shardings
        self._static = tuple(static_argnums)
        self._donate = tuple(donate_argnums)
        self._name = _wraps.fun_name(fun)  # JAX's name of a partial, a nameless callable
        self.__wrapped__ = fun
        self.__name__ = self._name
        self.__qualname__ = getattr(fun, "__qualname__", self._name)
        self.__doc__ = getattr(fun, "__doc__", None) or ""
        self.__module__ = getattr(fun, "__module__", "<unknown module>")
        self.__annotations__ = getattr(fun, "__annotations__", {})

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["_inner"], name)

    @property
    def _jitted(self) -> Any:
        """The plain ``Jitted`` behind this one (its cache, its spec)."""
        inner = self.__dict__["_inner"]
        return getattr(inner, "_jitted", inner)

    def eval_shape(self, *args: Any, **kwargs: Any) -> Any:
        """The plain jit's output structs, each carrying its ``out_shardings``
        entry (one given None carries none), as JAX 0.10.2's."""
        out = self.__dict__["_inner"].eval_shape(*args, **kwargs)
        if self._out is None:
            return out
        where = f"jit({self._name})"
        leaves, tree = pytree.tree_flatten(out)
        per_leaf = _broadcast_prefix(self._out, out, where, "out_shardings")
        return tree.unflatten(
            [
                leaf if spec is None else leaf.update(sharding=as_sharding(spec, where, "sharding"))
                for leaf, spec in zip(leaves, per_leaf, strict=True)
            ]
        )

    def __repr__(self) -> str:
        return _wraps.pjit_repr(self)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if config._values["disable_jit"] and getattr(self._inner, "honours_disable_jit", True):
            # as JAX: the function runs op by op; the shardings are neither
            # checked nor applied. Not for an eager operation's own jit (pjrt's
            # one-primitive dispatch): run op by op, its one op would dispatch
            # to this jit again, without end.
            return self.__wrapped__(*args, **kwargs)
        if self._plans and not kwargs:
            backend = self._backend or config.backend
            x64 = config._values["enable_x64"]
            for arg in args:
                if type(arg) is not MeshArray:
                    leaves, in_tree = pytree.tree_flatten(args)
                    plan = self._plans.get((in_tree, backend, x64))
                    break
            else:  # each argument is a leaf: no tree to flatten
                leaves = args  # type: ignore[assignment]
                plan = self._flat_plans.get((len(args), backend, x64))
            if plan is not None:
                out = plan(leaves)
                if out is not NotImplemented:
                    return out
        where = f"jit({self._name})"
        n = len(args)
        static = {i % n for i in self._static if -n <= i < n}
        dynamic = [i for i in range(n) if i not in static]
        arg_list = list(args)
        traced = any(
            isinstance(leaf, tracing.Tracer) for leaf in pytree.tree_leaves((arg_list, kwargs))
        )
        donated_arrays: list[Any] = []
        leaf_shardings: list[Any] = []
        if self._donate and not traced:  # jit's check, before anything runs or is deleted
            leaves, paths, flags = [], [], []
            for i in dynamic:
                flag = i in self._donate or (i - n) in self._donate
                for path, leaf in pytree.flatten_with_path_strings(arg_list[i])[0]:
                    leaves.append(leaf)
                    paths.append(f"args[{i}]{path}")
                    flags.append(flag)
            donation.check_no_repeated_donation(leaves, flags, paths, self._name)
        if self._in is not None:
            if kwargs:
                raise ValueError(
                    f"{where}: keyword arguments are not supported together with in_shardings "
                    "(as JAX's jit); pass them positionally"
                )
            dyn_args = tuple(arg_list[i] for i in dynamic)
            prefix = self._in
            if isinstance(prefix, list):
                prefix = tuple(prefix)
            if isinstance(prefix, tuple) and len(prefix) != len(dyn_args):
                raise ValueError(
                    f"{where}: in_shardings has {len(prefix)} entries but the function got "
                    f"{len(dyn_args)} dynamic positional arguments"
                )
            per_arg = prefix if isinstance(prefix, tuple) else (prefix,) * len(dyn_args)
            for i, spec in zip(dynamic, per_arg, strict=True):
                arg_list[i], placed_with = self._place_argument(
                    arg_list[i], spec, where, f"args[{i}]", traced
                )
                leaf_shardings += placed_with
        mesh_shardings = typed = None
        consts: list[Any] = []  # the closed-over arrays' shardings (const_shardings)
        program_of_call: Any = None  # (the plain jit's trace of this call: once)
        if not traced:
            # unspecified leaves take their own sharding (a MeshArray's) or
            # are replicated over the arguments' mesh, as JAX 0.10.2
            dyn_leaves = pytree.tree_leaves([arg_list[i] for i in dynamic])
            if kwargs:  # the program's inputs: the positional leaves, then the keywords'
                statics = self._jitted.spec.static_names
                dyn_leaves += pytree.tree_leaves(
                    {k: v for k, v in kwargs.items() if k not in statics}
                )
            given_shardings = leaf_shardings if self._in is not None else [None] * len(dyn_leaves)
            program_of_call = self._jitted.trace(*arg_list, **kwargs)
            program = program_of_call.program
            consts = [s for s in const_shardings(program) if s is not None]
            inferred = inferred_shardings(dyn_leaves, given_shardings, where, consts)
            plain = self._in is None and self._out is None
            if inferred is None and consts and self._out is None:
                _check_one_device(program, consts[0].mesh, where)
            if (
                inferred is not None
                and plain
                and not consts
                and not self._reads_split(program, dyn_leaves)
            ):
                # JAX 0.10.2 prunes the arguments the program does not read
                # (keep_unused=False): with no sharded one left, it is the
                # plain jit, on one device
                inferred = None
            if inferred is not None:
                mesh_shardings, typed = inferred
        spmd = self._spmd_runner() if mesh_shardings and not (static or kwargs) else None
        if spmd is not None:
            leaves, in_tree = pytree.tree_flatten(tuple(arg_list))
            donated: list[bool] = []
            for i, arg in enumerate(arg_list):
                flag = i in self._donate or (i - n) in self._donate
                donated += [flag] * len(pytree.tree_leaves(arg))
            sink = None
            given = pytree.tree_leaves(args)
            if all(a is b for a, b in zip(leaves, given, strict=True)):
                # the arguments were already laid out: later calls like
                # this one may skip the work that does not depend on values
                sink = self._plan_sink(in_tree, args)
            out = spmd(
                self.__wrapped__, self._name, leaves, in_tree, mesh_shardings, self._out,
                self._spmd_cache, donated=donated, plan_sink=sink, typed_shardings=typed,
            )  # fmt: skip
            if out is not NotImplemented:
                return out
        ruled = None
        if (
            mesh_shardings is not None
            and typed is not None
            and (self._out is None or _has_none(self._out))
        ):
            # the outputs the rule lays out: from the program's types
            mesh = (mesh_shardings or consts)[0].mesh
            ruled = self._ruled_outputs(program_of_call, typed, mesh, where)
        if not traced:
            for i in dynamic:
                donate = i in self._donate or (i - n) in self._donate
                leaves, tree = pytree.tree_flatten(arg_list[i])
                if any(map(is_split, leaves)):
                    if donate:
                        donated_arrays += [v for v in leaves if is_split(v)]  # pmap's too
                    arg_list[i] = tree.unflatten([_global(v) for v in leaves])
        if consts:  # (the plain jit's own call would send it over the mesh again)
            out = self._jitted._call_on_one_device(tuple(arg_list), kwargs)
        else:
            out = self._inner(*arg_list, **kwargs)
        for array in donated_arrays:
            array.mark_donated(where)
        if self._out is None and ruled is None:
            return out
        leaves, tree = pytree.tree_flatten(out)
        if self._out is None:
            per_leaf: list[Any] = [None] * len(leaves)
        else:
            per_leaf = _broadcast_prefix(self._out, out, where, "out_shardings")
        results = []
        for k, (leaf, spec) in enumerate(zip(leaves, per_leaf, strict=True)):
            if spec is None and ruled is not None and not traced:
                results.append(put_sharded(leaf, ruled[k], alias=True))
                continue
            if spec is None:
                results.append(leaf)
                continue
            sharding = as_sharding(spec, where, "out_shardings")
            aval = tracing.get_aval(leaf, where, f"output {k}")
            check_against(sharding, aval.shape, f"{where} (output {k})")
            results.append(leaf if traced else put_sharded(leaf, sharding, alias=True))
        return tree.unflatten(results)

    def clear_cache(self) -> None:
        """Forget every compiled signature: the SPMD executables and plans,
        and the global-value route's cache."""
        self._plans.clear()
        self._flat_plans.clear()
        self._spmd_cache.clear()
        self._used_inputs.clear()
        self._inner.clear_cache()

    def _ruled_outputs(
        self, traced: Any, in_shardings: list[Any], mesh: Mesh, where: str
    ) -> list[Any] | None:
        """The sharding the rule (:func:`rule_out_shardings`) gives each output
        of the program of a call (``traced``: the plain jit's trace of it), or
        None when the program's inputs are not its leaves one for one."""
        program = traced.program
        if len(program.in_vars) != len(in_shardings) or traced.entry.float0 is not None:
            return None
        return rule_out_shardings(program, in_shardings, mesh, where)

    def _reads_split(self, program: Any, leaves: list[Any]) -> bool:
        """Whether ``program`` (a call's) reads one of the split arrays
        (:func:`is_split`) among its input ``leaves`` (dead code aside:
        ``dce.dce_program``'s used inputs, found once per program)."""
        if len(program.in_vars) != len(leaves):
            return True
        held = self._used_inputs.get(id(program))
        if held is None or held[0] is not program:
            held = self._used_inputs[id(program)] = (program, dce.dce_program(program)[1])
        return any(used and is_split(leaf) for used, leaf in zip(held[1], leaves, strict=True))

    def _plan_sink(self, in_tree: Any, args: tuple[Any, ...]) -> Callable[[Any], None]:
        """Where the SPMD route hands the plan of a call like this one."""
        backend = self._backend or config.backend
        x64 = config._values["enable_x64"]
        flat = all(type(arg) is MeshArray for arg in args)

        def sink(plan: Any) -> None:
            self._plans[in_tree, backend, x64] = plan
            if flat:
                self._flat_plans[len(args), backend, x64] = plan
            for listener in self._plan_listeners:
                listener(plan)

        return sink

    def _spmd_runner(self) -> Callable[..., Any] | None:
        name = self._backend or config.backend
        if name not in _SPMD_RUNNERS:
            try:
                backends.get(name)  # loading a backend registers its runner
            except ImportError:
                return None
        return _SPMD_RUNNERS.get(name)

    def _place_argument(
        self, arg: Any, spec: Any, where: str, label: str, traced: bool
    ) -> tuple[Any, list[Any]]:
        """``arg`` checked against (and, when concrete, laid out as) ``spec``,
        a prefix of its tree; and the sharding of each leaf (None: unspecified)."""
        leaves, tree = pytree.tree_flatten(arg)
        per_leaf = _broadcast_prefix(spec, arg, where, "in_shardings")
        placed = []
        shardings: list[Any] = []
        for leaf, one in zip(leaves, per_leaf, strict=True):
            if one is None:
                placed.append(leaf)
                shardings.append(None)
                continue
            sharding = as_sharding(one, where, "in_shardings")
            shardings.append(sharding)
            aval = tracing.get_aval(leaf, where, label)
            check_against(sharding, aval.shape, f"{where}: argument {label}")
            if isinstance(leaf, tracing.Tracer) or traced:
                placed.append(leaf)
                continue
            current = sharding_of(leaf)
            # JAX 0.10.2: a committed array must already be laid out as the
            # annotation says, except a single-device one for a fully
            # replicated annotation (uncommitted arrays are moved)
            if (
                current is not None
                and getattr(leaf, "committed", False)
                and current != sharding
                and not (_one_device(current) is not None and sharding.is_fully_replicated)
            ):
                raise ValueError(
                    f"{where}: the sharding passed to jit does not match the sharding of "
                    f"argument {label}. Got jit sharding: {sharding!r}, argument sharding: "
                    f"{current!r} for an argument of type {aval.str_short()}"
                )
            placed.append(put_sharded(leaf, sharding))
        return tree.unflatten(placed), shardings


def _check_one_device(program: Any, mesh: Mesh, where: str) -> None:
    """A call over one device (no sharded argument, no current mesh) of a
    program closing over an array split on Explicit axes: JAX 0.10.2's
    ``ValueError`` when an output's type names that mesh (its device
    assignment, the arguments' one device, is not the mesh's size)."""
    n = len(program.in_vars)
    text = first_output_on_mesh(program, [None] * n, where, const_shardings(program))
    if text is not None:
        raise ValueError(
            f"Length of device assignment 1 is not equal to the size of the mesh {mesh.size} "
            f"of aval {text}. Please enter your `jit` into a mesh context via `jax.set_mesh`."
        )


def _has_none(prefix: Any) -> bool:
    """Whether a prefix tree of shardings leaves some outputs unspecified."""
    return any(v is None for v in pytree.tree_leaves(prefix, is_leaf=lambda v: v is None))


# array type -> None (every array of it is split over a mesh: MeshArray) or
# a test of one array (a pmap output: pjrt's PjrtArray over its shards);
# registered by the modules that make such arrays (pmap, the pjrt backend)
SPLIT_TYPES: dict[type, Callable[[Any], bool] | None] = {MeshArray: None}


def register_split_type(cls: type, test: Callable[[Any], bool] | None = None) -> None:
    """Let a plain ``jit`` call or an eager operation with an array of type
    ``cls`` (for which ``test`` holds) among its operands run over the
    array's mesh, its ``sharding`` being a NamedSharding (a pmap output's)."""
    SPLIT_TYPES[cls] = test


def is_split(leaf: Any) -> bool:
    """Whether ``leaf`` is a concrete array laid out over several devices
    (:data:`SPLIT_TYPES`)."""
    kind = type(leaf)
    if kind not in SPLIT_TYPES:
        return False
    test = SPLIT_TYPES[kind]
    return test is None or test(leaf)


#: id -> a Python scalar an eager operation replicated over a mesh and keeps
#: (``jit._scalars_on_mesh``): laid out P() there, but typed as the Python
#: scalar it stands for, with no mesh (JAX 0.10.2's type of ``2`` in ``x * 2``)
SCALARS_ON_MESH: dict[int, Any] = {}


def inferred_shardings(
    leaves: Sequence[Any], given: Sequence[Any], where: str, consts: Sequence[Any] = ()
) -> tuple[list[Any], list[Any]] | None:
    """The sharding of each argument leaf of a call over a mesh: ``given``'s
    entry where it is not None, else the leaf's own (a ``MeshArray``'s or a
    pmap output's ``NamedSharding``: :func:`is_split`), else replicated
    (``P()``) over the mesh, as JAX 0.10.2 lays out a NumPy array, a Python
    scalar or an uncommitted array next to sharded ones; and what the
    sharding rule is told of each (the same, but None for those replicated
    ones: their JAX type names no mesh, so they take part in no agreement
    check, ``jnp.where(p, x, np_array)``). None when no leaf or given
    sharding is over a mesh of two or more devices (the call is not a
    sharded one). ``consts`` are the shardings the program's closed-over
    arrays are typed by (:func:`const_shardings`, Nones left out): they
    must be over the arguments' mesh, and without sharded arguments the
    call runs over theirs only inside ``set_mesh`` of it, as JAX 0.10.2,
    which takes its devices from the arguments and the current mesh, never
    from a constant.

    Raises ValueError as JAX does for leaves (or constants) over two
    meshes, for a committed array on other devices than the mesh's, and
    for a current mesh other than the constants' one."""
    own = [
        leaf.sharding
        if is_split(leaf)
        and isinstance(leaf.sharding, NamedSharding)
        and SCALARS_ON_MESH.get(id(leaf)) is not leaf
        else None
        for leaf in leaves
    ]
    named = [
        s
        for s in (*given, *own)
        if isinstance(s, NamedSharding) and isinstance(s.mesh, Mesh) and s.mesh.size > 1
    ]
    if consts:
        current = get_mesh()
        if current is not None and current != consts[0].mesh:
            # (JAX 0.10.2 checks each primitive's operands against the current mesh)
            raise ValueError(
                f"{where}: context mesh {current!r} should match the aval mesh "
                f"{consts[0].mesh!r} of a closed-over array"
            )
        if not named and current is None:
            return None  # one device: the caller checks the outputs' types
        named += consts
    if not named:
        return None
    mesh = named[0].mesh
    for s in named[1:]:
        if s.mesh != mesh:
            raise ValueError(
                f"{where}: Mesh for all inputs should be equal. Got one mesh: {mesh!r} and "
                f"another mesh: {s.mesh!r}"
            )
    replicated = NamedSharding(mesh, PartitionSpec())
    devices = set(mesh.devices.flat)
    out, typed = [], []
    for k, (leaf, one, mine) in enumerate(zip(leaves, given, own, strict=True)):
        if one is None and mine is None and getattr(leaf, "committed", False):
            current = sharding_of(leaf)
            if current is not None and set(current.device_set) != devices:
                raise ValueError(
                    f"{where}: Received incompatible devices for jitted computation. Got "
                    f"argument {k} with device ids {sorted(d.id for d in current.device_set)} "
                    f"and a sharded argument with device ids {sorted(d.id for d in devices)}"
                )
        named_one = one if one is not None else mine
        out.append(named_one if named_one is not None else replicated)
        typed.append(named_one)
    return out, typed


def rule_out_shardings(
    program: Any, in_shardings: Sequence[Any], mesh: Mesh, where: str
) -> list[NamedSharding]:
    """The ``NamedSharding`` of each output of ``program`` run on inputs typed
    as ``in_shardings`` (None: a value whose type names no mesh; see
    docs/sharding_rules.md: ``sharding_rules.output_shardings``), replicated
    over ``mesh`` where the rule knows none."""
    found = output_shardings(program, list(in_shardings), where, const_shardings(program))
    replicated = NamedSharding(mesh, PartitionSpec())
    return [s if s is not None else replicated for s in found]


def _global(leaf: Any) -> Any:
    """A split array's (:func:`is_split`) global value as an uncommitted array
    of the default backend (the program runs on one device); anything else
    as it is."""
    if not is_split(leaf):
        return leaf
    value = leaf._value() if isinstance(leaf, MeshArray) else np.asarray(leaf)
    weak = tracing.get_aval(leaf, "jit", "argument").weak_type  # kept, at any rank
    whole = as_array(np.array(value), weak)
    return backends.get(config.backend).put_leaf(whole, None, False, False)


# --- building and moving sharded arrays --------------------------------------------------------


def reshard(xs: Any, out_shardings: Any) -> Any:
    """Each leaf of ``xs`` laid out as ``out_shardings`` says (``jax.reshard``).

    Args:
        xs: A pytree of arrays.
        out_shardings: A ``Sharding`` or ``PartitionSpec`` (over the current
            mesh), or a tree prefix of them; as in JAX the specs may name
            only ``Explicit`` mesh axes.

    Returns:
        The pytree with each concrete leaf laid out so; a traced leaf is the
        ``sharding_constraint`` equation's output (the identity on values).

    Raises:
        ValueError: a spec names an ``Auto`` axis, or does not fit a leaf
            (rank, divisibility).

    Example:
        >>> import numpy as np, refimpl as ri
        >>> ri.config.update("ref_num_devices", 4)
        >>> mesh = ri.make_mesh((4,), ("x",), devices=ri.devices("ref"))
        >>> y = ri.reshard(np.arange(8.0), ri.NamedSharding(mesh, ri.P("x")))
        >>> [s.data.shape for s in y.addressable_shards]
        [(2,), (2,), (2,), (2,)]
    """
    leaves, tree = pytree.tree_flatten(xs)
    per_leaf = _broadcast_prefix(out_shardings, xs, "reshard", "out_shardings")
    out = []
    for leaf, spec in zip(leaves, per_leaf, strict=True):
        sharding = as_sharding(spec, "reshard", "out_shardings")
        if isinstance(sharding, NamedSharding):
            for entry in sharding.spec:
                for n in entry if isinstance(entry, tuple) else (entry,):
                    if n is None:
                        continue
                    kind = sharding.mesh.axis_types[sharding.mesh.axis_names.index(n)]
                    if kind != AxisType.Explicit:
                        raise ValueError(
                            "reshard: the PartitionSpec cannot contain axis names of type Auto "
                            f"or Manual; got {sharding.spec!r} with axis {n!r} of type {kind}"
                        )
        aval = tracing.get_aval(leaf, "reshard", "xs")
        check_against(sharding, aval.shape, "reshard")
        if isinstance(leaf, tracing.Tracer):  # the constraint's equation, as JAX's reshard
            out.append(sharding_constraint_p.bind(leaf, sharding=sharding))
        else:
            out.append(put_sharded(leaf, sharding))
    return tree.unflatten(out)


_sharding_module._implementations["reshard"] = reshard


def make_array_from_callback(
    shape: Sequence[int], sharding: Sharding, data_callback: Callable[[Any], Any], dtype: Any = None
) -> Any:
    """An array laid out as ``sharding``, its blocks asked from a callback.

    Args:
        shape: The global shape.
        sharding: A ``Sharding`` (or ``PartitionSpec`` over the current mesh).
        data_callback: ``data_callback(index)`` gives the block at ``index``
            (a tuple of slices into the global array), once per device.
        dtype: The dtype to convert each block to (default: as returned).

    Returns:
        The array (one block per device).

    Raises:
        ValueError: the sharding does not fit ``shape``, or a block has
            the wrong shape.

    Example:
        >>> import numpy as np, refimpl as ri
        >>> ri.config.update("ref_num_devices", 4)
        >>> mesh = ri.make_mesh((4,), ("x",), devices=ri.devices("ref"))
        >>> value = np.arange(8.0)
        >>> x = ri.make_array_from_callback((8,), ri.NamedSharding(mesh, ri.P("x")),
        ...                                 lambda index: value[index])
        >>> x
        Array([0., 1., 2., 3., 4., 5., 6., 7.], dtype=float32)
    """
    shape = tuple(int(n) for n in shape)
    sharding = as_sharding(sharding, "make_array_from_callback", "sharding")
    check_against(sharding, shape, "make_array_from_callback")
    expected = sharding.shard_shape(shape)
    blocks = []
    extended = None
    for device, index in sharding.addressable_devices_indices_map(shape).items():
        value = data_callback(index)
        block_shape = tuple(np.shape(value))
        if isinstance(getattr(value, "dtype", None), dtypes.ExtendedDtype):
            extended, block_shape = value.dtype, tuple(value.shape)
            value = _extended_data(value)
        block = np.asarray(value, dtype=dtype)
        if block_shape != tuple(expected):
            raise ValueError(
                f"make_array_from_callback: data_callback returned a block of shape "
                f"{block_shape} for index {index}, expected {tuple(expected)}"
            )
        blocks.append((device, block))
    return _from_extended_blocks(extended, shape, sharding, blocks, "make_array_from_callback")


def make_array_from_single_device_arrays(
    shape: Sequence[int], sharding: Sharding, arrays: Sequence[Any], *, dtype: Any = None
) -> Any:
    """An array laid out as ``sharding`` from one array per device.

    Args:
        shape: The global shape.
        sharding: A ``Sharding`` (or ``PartitionSpec`` over the current mesh).
        arrays: One array per device of the sharding, each on its device
            and of the sharding's shard shape, in any order.
        dtype: The dtype to convert the blocks to (default: theirs).

    Returns:
        The array whose blocks they are.

    Raises:
        ValueError: the wrong number of arrays, an array on a device outside
            the sharding, or of the wrong shape.

    Example:
        >>> import numpy as np, refimpl as ri
        >>> ri.config.update("ref_num_devices", 4)
        >>> mesh = ri.make_mesh((4,), ("x",), devices=ri.devices("ref"))
        >>> parts = [ri.device_put(np.full(2, i, np.float32), d)
        ...          for i, d in enumerate(ri.devices("ref"))]
        >>> ri.make_array_from_single_device_arrays(
        ...     (8,), ri.NamedSharding(mesh, ri.P("x")), parts)
        Array([0., 0., 1., 1., 2., 2., 3., 3.], dtype=float32)
    """
    shape = tuple(int(n) for n in shape)
    sharding = as_sharding(sharding, "make_array_from_single_device_arrays", "sharding")
    check_against(sharding, shape, "make_array_from_single_device_arrays")
    index_map = sharding.addressable_devices_indices_map(shape)  # one array per local device
    arrays = list(arrays)
    if len(arrays) != len(index_map):
        raise ValueError(
            f"make_array_from_single_device_arrays: the sharding has {len(index_map)} devices "
            f"but {len(arrays)} arrays were given"
        )
    by_device = {}
    for k, array in enumerate(arrays):
        device = getattr(array, "device", None)
        if device not in index_map:
            raise ValueError(
                f"make_array_from_single_device_arrays: arrays[{k}] is on {device!r}, which "
                "is not a device of the sharding"
            )
        if tuple(array.shape) != tuple(sharding.shard_shape(shape)):
            raise ValueError(
                f"make_array_from_single_device_arrays: arrays[{k}] has shape {array.shape}, "
                f"expected the shard shape {sharding.shard_shape(shape)}"
            )
        by_device[device] = array
    extended = None
    for d, array in by_device.items():
        if isinstance(getattr(array, "dtype", None), dtypes.ExtendedDtype):
            extended, by_device[d] = array.dtype, _extended_data(array)
    blocks = [(d, np.asarray(by_device[d], dtype=dtype)) for d in index_map]
    return _from_extended_blocks(
        extended, shape, sharding, blocks, "make_array_from_single_device_arrays"
    )


def _extended_data(value: Any) -> Any:
    """The data under an array of an extended dtype (a typed key array is a
    pytree node over it)."""
    (data,) = pytree.tree_leaves(value)
    return data


def _from_extended_blocks(
    extended: Any,
    shape: tuple[int, ...],
    sharding: Sharding,
    blocks: list[tuple[Any, np.ndarray]],
    where: str,
) -> Any:
    """:func:`_from_blocks`, for blocks of an extended dtype (typed keys, as
    JAX's) built over their data, whose trailing dims the sharding leaves whole."""
    if extended is None:
        return _from_blocks(shape, sharding, blocks, where)
    physical_shape, _ = extended.physical(shape)
    return extended.wrap(_from_blocks(tuple(physical_shape), sharding, blocks, where))


def _from_blocks(
    shape: tuple[int, ...], sharding: Sharding, blocks: list[tuple[Any, np.ndarray]], where: str
) -> Any:
    dtypes_seen = {b.dtype for _, b in blocks}
    if len(dtypes_seen) != 1:
        raise ValueError(
            f"{where}: the blocks have different dtypes {sorted(map(str, dtypes_seen))}"
        )
    shards = [_backend_of(d).put_leaf(np.array(b, copy=True), d, False, False) for d, b in blocks]
    dtype = shards[0].dtype
    if _one_device(sharding) is not None:
        return shards[0]
    return MeshArray(shards, sharding, ShapedArray(shape, dtype, False))
