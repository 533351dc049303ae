"""``jit`` with shardings on pjrt: one executable partitioned by XLA's SPMD
partitioner over the mesh's devices (docs/semantics.md, "Sharding").

The traced Program is lowered as for ``jit``; its ``@main`` gets an
``mhlo.sharding`` attribute per parameter and result (HLO sharding text:
the tile assignment over the partitions, ``last_tile_dim_replicate`` for
mesh axes a spec does not name) and the module ``mhlo.num_partitions`` =
mesh size. It is compiled with ``num_replicas = 1``, ``num_partitions`` =
mesh size, ``use_spmd_partitioning`` and the mesh's devices (row-major) as
the device assignment, and run with ONE execute over those devices: each
device is given its own block of every argument (a sharded argument laid
out the same way passes its blocks' buffers as they are: no transfer), and
returns its block of every result, which become the result's shards.

Used by ``transforms.sharded.ShardedJit`` (registered below) when every
argument leaf has a ``NamedSharding`` over one mesh of PJRT devices (the
one ``in_shardings`` gives, else its own, else replicated:
``sharded.inferred_shardings``; a plain ``jit`` called with sharded arrays
comes here too) and the call has no static or keyword arguments; each
output is laid out as ``out_shardings`` says, else as the sharding rule
types it (``sharded.rule_out_shardings``). Other calls take the
global-value route (the program on one device, outputs laid out after). A cached call
whose arguments are already laid out runs its signature's plan
(:func:`_plan`): the same launch without the per-call checks. Each plan is
also installed (its :class:`PlanSpec`) in the C++ ``FastSharded`` that
``jit`` returns on pjrt (:func:`make_fast_sharded`,
bindings/fast_sharded.h): calls whose positional arguments are MeshArrays
with the plan's layout keys run there with no Python code, through the
same launch (native/launch.h ``ExecuteReplicated``, pmap's).

A program whose devices need nothing from each other (only elementwise
equations, each over operands of one layout or rank 0:
:func:`_block_shapes`) is launched as one single-device executable of the
block program per device instead (``ExecuteLocal``), one after another on
the caller's thread: for small inputs several times less per call than one
execute over the devices, which XLA's CPU client hands to a thread per
device. The values are the same: each device computes its block either way.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from refimpl import caches, pytree, tracing
from refimpl.backends.pjrt import compilation_cache, executables
from refimpl.backends.pjrt import runtime as pjrt_runtime
from refimpl.backends.pjrt.arrays import PjrtArray
from refimpl.config import config
from refimpl.core import Var
from refimpl.primitives.elementwise import ELEMENTWISE_PRIMITIVES
from refimpl.primitives.sharding_constraint import lowering_for_partitions
from refimpl.sharding import Mesh, NamedSharding, is_addressable, xla_sharding_text
from refimpl.transforms import sharded
from refimpl.transforms.jit import Jitted

__all__ = ["PlanSpec", "hlo_sharding", "make_fast_sharded", "run"]


def hlo_sharding(sharding: NamedSharding, ndim: int) -> str:
    """XLA's sharding text for ``sharding`` on an array of rank ``ndim``
    (``refimpl.sharding.xla_sharding_text``)."""
    return xla_sharding_text(sharding, ndim)


class _Entry:
    """One compiled signature: the executable and what its outputs are."""

    def __init__(self, executable: Any, out_tree: Any, out_avals: list[Any]) -> None:
        self.executable = executable
        self.out_tree = out_tree
        self.out_avals = out_avals
        # shard-local programs: the per-device executables launched instead
        self.local: tuple[Any, ...] | None = None


def _mesh_of(shardings: Sequence[Any]) -> Mesh | None:
    """The one mesh of PJRT devices every sharding is over, else None."""
    mesh = None
    for s in shardings:
        if s is None:
            continue
        if not isinstance(s, NamedSharding) or not isinstance(s.mesh, Mesh):
            return None
        if mesh is None:
            mesh = s.mesh
        elif s.mesh != mesh:
            return None
    if mesh is None or mesh.size < 2:
        return None
    pjrt_devices = executables.devices()
    if not all(any(d is p for p in pjrt_devices) for d in mesh.devices.flat):
        return None
    return mesh


def run(
    fun: Any,
    name: str,
    leaves: list[Any],
    in_tree: Any,
    in_shardings: list[Any],
    out_shardings: Any,
    cache: dict[Any, Any],
    donated: Sequence[bool] | None = None,
    plan_sink: Any = None,
    typed_shardings: Sequence[Any] | None = None,
) -> Any:
    """``fun`` on the flattened positional arguments ``leaves`` (tree
    ``in_tree`` of the argument tuple), each laid out as ``in_shardings``
    says, as one SPMD executable; NotImplemented when the call does not fit
    (the caller takes the global-value route). ``plan_sink``, when given, is
    handed the signature's plan (:func:`_plan`) after a call whose leaves
    are all ``MeshArray``s already laid out as ``in_shardings`` says.
    ``typed_shardings`` is what the sharding rule is told of each leaf
    (``sharded.inferred_shardings``; default ``in_shardings``)."""
    out_leaves_spec = out_shardings
    mesh = _mesh_of(in_shardings)
    if mesh is None or any(s is None for s in in_shardings):
        return NotImplemented
    flags = tuple(donated) if donated is not None else (False,) * len(leaves)
    if any(flags) and not _donatable(leaves, flags):
        return NotImplemented
    avals = [tracing.get_aval(leaf, f"jit({name})", i) for i, leaf in enumerate(leaves)]
    # (``cache`` belongs to one jit object, whose out_shardings are fixed;
    # enable_x64 changes what tracing the function makes)
    typed = tuple(in_shardings if typed_shardings is None else typed_shardings)
    key = (
        in_tree,
        tuple((a.shape, a.dtype, a.weak_type) for a in avals),
        tuple(in_shardings),
        typed,
        flags,
        config.enable_x64,
    )
    entry = cache.get(key)
    if entry is None:
        entry = _build(
            fun, name, leaves, in_tree, in_shardings, out_leaves_spec, mesh, flags, typed
        )
        cache[key] = entry
    if entry is NotImplemented:
        return NotImplemented
    result = _execute(entry, leaves, avals, in_shardings, mesh, flags)
    if plan_sink is not None:
        plan = _plan(entry, name, leaves, in_shardings, mesh, flags, in_tree)
        if plan is not None:
            plan_sink(plan)
    for leaf, flag in zip(leaves, flags, strict=True):
        if flag and isinstance(leaf, sharded.MeshArray):
            leaf.mark_donated(f"jit({name})")  # its blocks' buffers went to the call
    return result


def _donatable(leaves: Sequence[Any], flags: Sequence[bool]) -> bool:
    """Every donated leaf a distinct live array (repeated donation and the rest
    of jit's checks stay with the global-value route, which reports them)."""
    seen: set[int] = set()
    for leaf, flag in zip(leaves, flags, strict=True):
        if not flag:
            continue
        keys = set(leaf._storage_keys()) if isinstance(leaf, sharded.MeshArray) else {id(leaf)}
        if keys & seen or (isinstance(leaf, sharded.MeshArray) and leaf.is_deleted()):
            return False
        seen |= keys
    return True


def _build(
    fun: Any,
    name: str,
    leaves: list[Any],
    in_tree: Any,
    in_shardings: list[Any],
    out_shardings: Any,
    mesh: Mesh,
    donated: tuple[bool, ...],
    typed: Sequence[Any],
) -> Any:
    args = pytree.tree_unflatten(in_tree, leaves)
    traced = Jitted(fun).trace(*args)
    program = traced.program
    if traced.entry.ref_leaves or traced.entry.float0 is not None:
        return NotImplemented
    if len(program.in_avals) != len(leaves):
        return NotImplemented
    out_avals = list(program.out_avals)
    outs_struct = traced.out_tree.unflatten(out_avals)
    if out_shardings is None:
        per_out: list[Any] = [None] * len(out_avals)
    else:
        per_out = sharded._broadcast_prefix(out_shardings, outs_struct, f"jit({name})", "out")
    # unspecified outputs: laid out as the rule types them (sharding_rules)
    ruled = (
        sharded.rule_out_shardings(program, typed, mesh, f"jit({name})")
        if any(spec is None for spec in per_out)
        else None
    )
    out_hlo = []
    out_specs = []
    for k, (aval, spec) in enumerate(zip(out_avals, per_out, strict=True)):
        sharding = (
            ruled[k]
            if ruled is not None and spec is None
            else sharded.as_sharding(spec, f"jit({name})", "out_shardings")
        )
        if not isinstance(sharding, NamedSharding) or sharding.mesh != mesh:
            return NotImplemented
        sharded.check_against(sharding, aval.shape, f"jit({name}) (output {k})")
        out_hlo.append(hlo_sharding(sharding, aval.ndim))
        out_specs.append(sharding)
    in_hlo = [hlo_sharding(s, a.ndim) for s, a in zip(in_shardings, program.in_avals, strict=True)]

    # (the lowering module loads jaxlib's MLIR: only when a sharded call compiles)
    lowering = executables._lowering()
    aliases = _alias_plan(program, donated, in_shardings, out_specs)
    with lowering_for_partitions():  # with_sharding_constraint: @Sharding custom calls
        module = lowering.lower_program(
            program, name=f"jit_{name}", aliases=aliases, donated=list(donated)
        )
    with lowering.mlir_context():
        from jaxlib.mlir import ir

        i32 = ir.IntegerType.get_signless(32)
        module.operation.attributes["mhlo.num_replicas"] = ir.IntegerAttr.get(i32, 1)
        module.operation.attributes["mhlo.num_partitions"] = ir.IntegerAttr.get(i32, mesh.size)
        main = next(
            op
            for op in module.body.operations
            if op.operation.name == "func.func"
            and ir.StringAttr(op.attributes["sym_name"]).value == "main"
        )
        main.attributes["arg_attrs"] = _with_shardings(main, "arg_attrs", in_hlo)
        main.attributes["res_attrs"] = _with_shardings(main, "res_attrs", out_hlo)

    device_ids = [d.id for d in mesh.devices.flat]

    def options() -> bytes:
        from jaxlib import xla_client

        opts = xla_client.CompileOptions()
        overrides = pjrt_runtime.compile_overrides(module, executables.local_platform())
        if overrides:
            opts.env_option_overrides = list(overrides)
        build = opts.executable_build_options
        build.num_replicas = 1
        build.num_partitions = mesh.size
        build.use_spmd_partitioning = True
        opts.device_assignment = xla_client.DeviceAssignment.create(
            np.array([device_ids], dtype=np.int32)
        )
        return opts.SerializeAsString()

    def artifact() -> bytes:
        return lowering.to_portable_artifact(module, pjrt_runtime.stablehlo_target_version())

    executable = compilation_cache.compile_cached(
        executables.client(), lambda: lowering.module_text(module), artifact, options, None
    )
    entry = _Entry(executable, traced.out_tree, out_avals)
    entry.local = _local_executables(program, name, in_shardings, out_specs, donated, mesh)
    entry.module_text = lowering.module_text(module)  # type: ignore[attr-defined]
    entry.out_specs = out_specs  # type: ignore[attr-defined]
    return entry


def _block_shapes(
    program: Any,
    in_shardings: Sequence[Any],
    out_specs: Sequence[Any],
    donated: Sequence[bool],
) -> list[tuple[int, ...]] | None:
    """Per input, the shape of one device's block, when each device's block
    of every output is ``program`` applied to that device's blocks of the
    inputs; else None. It is so when every equation is elementwise and the
    operands of each that are not rank 0 (a rank-0 value is whole on every
    device) have one layout, (shape, sharding), which its results take,
    starting from the inputs' and ending at the outputs' as ``out_specs``
    says: no device then needs another's data. Donating calls keep the
    one-executable route (its aliasing plan)."""
    if any(donated):
        return None
    if any(v.aval.shape != () for v in program.const_vars):
        return None
    layouts: dict[int, Any] = {}  # var id -> (shape, sharding); absent: rank 0

    def layout_of(atom: Any) -> Any:
        return layouts.get(atom.id) if isinstance(atom, Var) else None

    for var, sharding in zip(program.in_vars, in_shardings, strict=True):
        if var.aval.shape != ():
            layouts[var.id] = (var.aval.shape, sharding)
    for eqn in program.eqns:
        if eqn.primitive not in ELEMENTWISE_PRIMITIVES:
            return None
        found = {layout_of(a) for a in eqn.inputs} - {None}
        if len(found) > 1:
            return None
        layout = found.pop() if found else None
        for out in eqn.outputs:
            if out.aval.shape != (layout[0] if layout else ()):
                return None
            if layout is not None:
                layouts[out.id] = layout
    for atom, sharding in zip(program.out_vars, out_specs, strict=True):
        if layout_of(atom) != (atom.aval.shape, sharding):
            return None
    return [s.shard_shape(v.aval.shape) for v, s in zip(program.in_vars, in_shardings, strict=True)]


def _local_executables(
    program: Any,
    name: str,
    in_shardings: Sequence[Any],
    out_specs: Sequence[Any],
    donated: Sequence[bool],
    mesh: Mesh,
) -> tuple[Any, ...] | None:
    """For a shard-local program (:func:`_block_shapes`), the program on
    one device's blocks, compiled once per device of the mesh (row-major),
    which the launch runs instead of the partitioned executable
    (native/launch.h ``ExecuteLocal``: a single-device execute per device on
    the caller's thread instead of one execute handed to a thread per
    device: several times less per call for small inputs). None otherwise."""
    shapes = _block_shapes(program, in_shardings, out_specs, donated)
    if shapes is None:
        return None
    block_avals = [a.update(shape=shape) for a, shape in zip(program.in_avals, shapes, strict=True)]
    block, _, _ = tracing.trace_to_program(
        lambda *xs: tracing.eval_program_bind(program, xs),
        block_avals,
        f"jit({name})",
        [f"argument {i}" for i in range(len(block_avals))],
    )
    expected = [
        a.update(shape=s.shard_shape(a.shape))
        for a, s in zip(program.out_avals, out_specs, strict=True)
    ]
    if list(block.out_avals) != expected or block.const_vars:
        return None
    per_block = executables._Executables(block, name=f"jit_{name}", fun_name=f"jit({name})")
    return tuple(per_block.for_device(d) for d in mesh.devices.flat)


def _alias_plan(
    program: Any, donated: Sequence[bool], in_shardings: Sequence[Any], out_shardings: Sequence[Any]
) -> dict[int, int]:
    """Donated input ``i`` -> the first unclaimed output of the same type and
    sharding (so that each device's block of one fits the other's buffer)."""
    taken: set[int] = set()
    plan: dict[int, int] = {}
    outs = [a.strip_weak() for a in program.out_avals]
    for i, (flag, aval) in enumerate(zip(donated, program.in_avals, strict=True)):
        if not flag:
            continue
        for j, out in enumerate(outs):
            if j not in taken and out == aval.strip_weak() and out_shardings[j] == in_shardings[i]:
                plan[i] = j
                taken.add(j)
                break
    return plan


def _with_shardings(main: Any, which: str, texts: list[str]) -> Any:
    """``main``'s ``arg_attrs``/``res_attrs`` with ``mhlo.sharding`` set in each."""
    from jaxlib.mlir import ir

    old = main.attributes[which] if which in main.attributes else None  # noqa: SIM401
    dicts = []
    for i, text in enumerate(texts):
        entries: dict[str, Any] = {}
        if old is not None:
            existing: Any = ir.DictAttr(ir.ArrayAttr(old)[i])
            for k in range(len(existing)):
                entries[existing[k].name] = existing[k].attr
        entries["mhlo.sharding"] = ir.StringAttr.get(text)
        dicts.append(ir.DictAttr.get(entries))
    return ir.ArrayAttr.get(dicts)


class PlanSpec(NamedTuple):
    """What a plan knows, for the C++ fast path (``FastSharded`` in
    bindings/fast_sharded.h reads it by field)."""

    executable: Any  # refimpl._pjrt.Executable over the mesh's devices
    device_indices: tuple[int, ...]  # per mesh position m: the client's device index
    # the positional arguments' structure, preorder per argument: 0 a leaf,
    # 1 n a tuple of n, 2 n a list of n; None: another structure (no C++ entry)
    in_structure: tuple[int, ...] | None
    in_keys: tuple[object, ...]  # per argument leaf: its layout key (MeshArray.layout_key)
    in_orders: tuple[tuple[int, ...], ...]  # per leaf: the shard index device m reads
    donated: tuple[bool, ...]  # per leaf
    # per output: (dtype, shard shape, weak_type, sharding, aval, devices,
    # indices, layout key); C++ also reads a sharding None as device 0's block
    # alone, which no plan makes since unspecified outputs follow the rule
    outputs: tuple[tuple[Any, ...], ...]
    out_tree: Any  # the outputs' PyTreeDef
    where: str  # "jit(name)": what a donated argument's error names
    # a shard-local program: one single-device executable per mesh position,
    # launched instead of ``executable`` (``_local_executables``); else None
    local_executables: tuple[Any, ...] | None = None


def _plan(
    entry: Any,
    name: str,
    leaves: list[Any],
    in_shardings: list[Any],
    mesh: Mesh,
    donated: tuple[bool, ...],
    in_tree: Any = None,
) -> Any:
    """The work of a call with this signature that does not depend on the
    values, done once: a function of the next call's leaves that launches
    ``entry`` when each is a live ``MeshArray`` of the same layout key
    (sharding and aval) as ``leaves`` (its blocks' buffers passed as they
    are) and returns the outputs, else NotImplemented before anything runs
    (the caller's full route then checks and reports). A call with donated
    arguments takes the plan only when no two leaves share a block's
    storage (jit's repeated-donation check stays with that route). None
    when ``leaves`` are not all such arrays. The function's ``spec`` is its
    :class:`PlanSpec`."""
    if not entry.out_avals:  # nothing to launch for (the C++ path takes no such entry)
        return None
    devices = [d for d in mesh.devices.flat if is_addressable(d)]  # this process's
    expected = []
    for leaf, sharding in zip(leaves, in_shardings, strict=True):
        if type(leaf) is not sharded.MeshArray or leaf.sharding != sharding:
            return None
        if not all(isinstance(s, PjrtArray) for s in leaf._shards):
            return None
        try:  # device m's block of the argument
            order = tuple(leaf._devices.index(d) for d in devices)
        except ValueError:
            return None
        expected.append((leaf.layout_key(), order))
    outputs: list[tuple[Any, Any, Any, Any]] = []
    for aval, sharding in zip(entry.out_avals, entry.out_specs, strict=True):
        layout = sharded.MeshArray.layout_of(sharding, aval)
        outputs.append((aval, sharding, layout, sharded.layout_key_of(sharding, aval)))
    executable = entry.executable
    local = list(entry.local or ())
    out_tree = entry.out_tree
    launch = pjrt_runtime.native_module()._pmap_launch
    mesh_array = sharded.MeshArray
    assembled = mesh_array.assembled
    ndev = len(devices)
    device_range = range(ndev)
    flags = list(donated)
    donating = any(flags)
    where = f"jit({name})"
    single = out_tree.is_leaf

    def call(args: Sequence[Any]) -> Any:
        if len(args) != len(expected):
            return NotImplemented
        per_device: list[list[Any]] = [[] for _ in device_range]
        try:
            for leaf, (key, order) in zip(args, expected, strict=True):
                if type(leaf) is not mesh_array:
                    return NotImplemented
                if leaf._key is not key and leaf.layout_key() is not key:
                    return NotImplemented
                shards = leaf._shards
                for m, k in enumerate(order):
                    per_device[m].append(shards[k].buffer())
        except (RuntimeError, AttributeError):  # a deleted block: the full route's error
            return NotImplemented
        if donating:
            keys = [k for leaf in args for k in leaf._storage_keys()]
            if len(set(keys)) != len(keys):
                return NotImplemented
        outs = launch(executable, per_device, True, flags, local)
        if donating:
            for leaf, flag in zip(args, flags, strict=True):
                if flag:
                    leaf.mark_donated(where)  # its blocks' buffers went to the call
        results = []
        for j, (aval, sharding, layout, key) in enumerate(outputs):
            weak = aval.weak_type
            shards = [PjrtArray(outs[m][j], weak, devices[m], True) for m in device_range]
            results.append(assembled(shards, sharding, aval, layout, key))
        return results[0] if single else out_tree.unflatten(results)

    call.spec = PlanSpec(  # type: ignore[attr-defined]
        executable=executable,
        device_indices=tuple(executables.index_of(d) for d in devices),
        in_structure=_structure_words(in_tree),
        in_keys=tuple(key for key, _ in expected),
        in_orders=tuple(order for _, order in expected),
        donated=tuple(donated),
        outputs=tuple(
            (
                aval.dtype,
                tuple(aval.shape if sharding is None else sharding.shard_shape(aval.shape)),
                aval.weak_type,
                sharding,
                aval,
                None if layout is None else layout[0],
                None if layout is None else layout[1],
                key,
            )
            for aval, sharding, layout, key in outputs
        ),
        out_tree=out_tree,
        where=where,
        local_executables=entry.local,
    )
    return call


def _structure_words(in_tree: Any) -> tuple[int, ...] | None:
    """:class:`PlanSpec`'s ``in_structure`` of the argument tuple ``in_tree``."""
    if in_tree is None or in_tree.node_data() is None or in_tree.node_data()[0] is not tuple:
        return None
    words: list[int] = []

    def walk(tree: Any) -> bool:
        node = tree.node_data()
        if node is None:
            words.append(0)
            return True
        kind = {tuple: 1, list: 2}.get(node[0])
        children = tree.children()
        if kind is None:
            return False
        words.extend((kind, len(children)))
        return all(walk(child) for child in children)

    return tuple(words) if all(walk(arg) for arg in in_tree.children()) else None


def _execute(
    entry: Any,
    leaves: list[Any],
    avals: list[Any],
    in_shardings: list[Any],
    mesh: Mesh,
    donated: tuple[bool, ...],
) -> Any:
    client = executables.client()
    devices = [d for d in mesh.devices.flat if is_addressable(d)]  # this process's
    per_device: list[list[Any]] = [[] for _ in devices]
    for leaf, aval, sharding in zip(leaves, avals, in_shardings, strict=True):
        if isinstance(leaf, sharded.MeshArray) and leaf.sharding == sharding:
            blocks = dict(zip(leaf._devices, leaf._shards, strict=True))
            if all(isinstance(blocks.get(d), PjrtArray) for d in devices):
                for m, device in enumerate(devices):  # already there: no data moves
                    per_device[m].append(blocks[device].buffer())
                continue
        value = np.asarray(tracing.concrete_value(leaf, aval))
        if value.dtype != aval.dtype:
            value = value.astype(aval.dtype)
        index_map = sharding.devices_indices_map(aval.shape)
        for m, device in enumerate(devices):
            block = np.ascontiguousarray(value[index_map[device]])
            per_device[m].append(client.buffer_from_numpy(block, executables.index_of(device)))
    launch = pjrt_runtime.native_module()._pmap_launch
    outs = launch(entry.executable, per_device, True, list(donated), list(entry.local or ()))
    results = []
    for j, (aval, sharding) in enumerate(zip(entry.out_avals, entry.out_specs, strict=True)):
        shards = [
            PjrtArray(outs[m][j], aval.weak_type, devices[m], True) for m in range(len(devices))
        ]
        layout = sharded.MeshArray.layout_of(sharding, aval)
        key = sharded.layout_key_of(sharding, aval)  # fed back, it takes the fast path
        results.append(sharded.MeshArray.assembled(shards, sharding, aval, layout, key))
    return entry.out_tree.unflatten(results)


def make_fast_sharded(jitted: sharded.ShardedJit) -> Any:
    """``jitted`` behind a C++ ``FastSharded`` (bindings/fast_sharded.h): each
    new plan of ``jitted`` becomes a C++ entry, so later calls with the
    plan's layouts run with no Python code."""
    fast = _native.FastSharded(jitted, jitted._backend is None)
    ref = weakref.ref(fast)  # (the ShardedJit must not keep its wrapper alive)

    def install(plan: Any) -> None:
        target = ref()
        spec = getattr(plan, "spec", None)
        if target is not None and spec is not None:
            target._add_entry(spec)

    jitted._plan_listeners.append(install)
    caches.register_fast_jitted(fast)  # clear_caches and disable_jit empty its entries
    for attribute in ("__name__", "__qualname__", "__module__", "__doc__", "__wrapped__"):
        value = getattr(jitted, attribute, None)
        if value is not None:
            setattr(fast, attribute, value)
    return fast


def _fast_sharded_repr(fast: Any) -> str:
    """The ShardedJit's repr (JAX 0.10.2's ``<PjitFunction of ...>``), over the
    C++ type's own ``<Jitted name>``."""
    fallback = fast._fallback
    return repr(fallback) if fallback is not None else f"<PjitFunction of {fast.__name__}>"


_native = pjrt_runtime.native_module()
sharded.register_spmd_runner("pjrt", run)
# a pmap output (a PjrtArray over its shards) passed to jit: the call runs over its mesh
sharded.register_split_type(PjrtArray, lambda array: array._shard_axis is not None)
if hasattr(_native, "FastSharded"):  # (an extension built before it: the Python plan only)
    _native.FastSharded.__repr__ = _fast_sharded_repr
    _native._install_fast_sharded(sharded.MeshArray, tracing._builders, config._values)
    sharded.register_fast_wrapper("pjrt", make_fast_sharded)
